"""Tests of the Python package moeh (python/moeh) against a numpy float64 reference of the layer.

The reference below is a port of tests/oracle.h, written from the contract (moe.h, moe_quant.h) with
its own decoders of bf16, fp16, e4m3, e2m1 and e8m0 and its own round-half-to-even, and no call into
libmoe:
  - weights: bf16; fp16 rounded to bf16 (packed as bf16); int8 q * scale[e, row]; fp8 e4m3(q) * scale
    of its (bn x bk) block; int4 (q - zero) * scale per (row, col // group); mxfp4 e2m1(q) * 2^(e8m0 - 127)
    per (row, col // 32); 4-bit codes two per byte along cols, low nibble first.
  - activations into GEMM1: A16 precisions round x to bf16; A8 (int8, int4-w4a8) quantize each token
    row per token in f32: scale = max(amax, 1e-7) / 127, q = RNE(x / scale) in [-127, 127].
  - h = act(x Wg^T + bg, x Wu^T + bu), rounded to bf16 (A16) or re-quantized per slot row (A8).
  - out = rsf * sum_j w_j (h W2^T + b2) + g * shared(x), g = sigmoid(x . shared_gate) or 1.
Errors are ||out - ref|| / ||ref|| over the output (tests/test_layer.c's measure and tolerances: 1e-2
for bf16 output, 1.5e-3 for fp16, 5e-4 for f32); a non-finite output makes the error NaN, which never
passes. Weights are random codes (never quantized floats), so the reference sees exactly what is packed.
"""

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import threading
import zlib

import numpy as np
import pytest

import moeh

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PRECISIONS = ["bf16", "fp16", "int8", "fp8", "int4-w4a8", "int4-w4a16", "mxfp4"]
A8 = {"int8", "int4-w4a8"}
FOUR_BIT = {"int4-w4a8", "int4-w4a16", "mxfp4"}
TOL = {"bf16": 1e-2, "fp16": 1.5e-3, "f32": 5e-4}  # by output dtype, every precision (test_layer.c)
ISAS = [i for i in ("scalar", "avx512") if moeh.isa_available(i)]


# ==== the float64 reference ================================================================================


def bf16_value(bits):
    """bf16 bits (uint16) -> float64, exactly: the upper half of an f32."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def f16_value(bits):
    return np.asarray(bits, np.uint16).view(np.float16).astype(np.float64)


def _e4m3(b):
    e, m = (b >> 3) & 15, b & 7
    v = np.ldexp(float(m), -9) if e == 0 else (np.nan if (e == 15 and m == 7) else np.ldexp(8.0 + m, e - 10))
    return -v if b & 0x80 else v


def _e2m1(c):
    e, m = (c >> 1) & 3, c & 1
    v = 0.5 * m if e == 0 else np.ldexp(2.0 + m, e - 2)
    return -v if c & 8 else v


E4M3 = np.array([_e4m3(b) for b in range(256)])
E2M1 = np.array([_e2m1(c) for c in range(16)])


def e8m0_value(e):
    e = np.asarray(e, np.int64)
    return np.where(e == 255, np.nan, np.ldexp(1.0, (e - 127).astype(np.int32)))


def round_bf16(v):
    """float64 -> nearest bf16 value (ties to even; overflow to Inf; NaN stays)."""
    v = np.array(v, np.float64, copy=True)
    fin = np.isfinite(v) & (v != 0)
    a = v[fin]
    _, ex = np.frexp(np.abs(a))
    q = np.ldexp(1.0, np.maximum(ex - 1, -126) - 7)
    r = np.rint(a / q) * q
    v[fin] = np.where(np.abs(r) >= 2.0**128, np.copysign(np.inf, a), r)
    return v


def bf16_bits(v):
    """float64 -> bf16 bits, rounded by round_bf16 (independent of the library)."""
    r = round_bf16(v).astype(np.float32)  # exact: a bf16 value
    return (r.view(np.uint32) >> 16).astype(np.uint16)


def quant_a8(v):
    """Per-row symmetric int8 in f32, as the library quantizes a token (rows with NaN/Inf -> NaN)."""
    f = np.asarray(v, np.float64).astype(np.float32)
    bad = ~np.isfinite(f).all(axis=-1)
    amax = np.abs(np.where(np.isfinite(f), f, 0)).max(axis=-1)
    scale = (np.maximum(amax, np.float32(1e-7)) / np.float32(127)).astype(np.float32)
    t = (f / scale[..., None]).astype(np.float32)
    q = np.clip(np.rint(t.astype(np.float64)), -127, 127)
    out = q * scale[..., None].astype(np.float64)
    out[bad] = np.nan
    return out


def act_input(prec, v):
    return quant_a8(v) if prec in A8 else round_bf16(v)


def _nibbles(q, cols):
    q = np.asarray(q, np.uint8)
    n = np.empty(q.shape[:-1] + (2 * q.shape[-1],), np.int64)
    n[..., 0::2], n[..., 1::2] = q & 15, q >> 4
    return n[..., :cols]


def _rep(a, g, cols, axis=-1):
    return np.repeat(a, g, axis=axis).take(np.arange(cols), axis=axis)


def dequant(prec, q, cols, scale=None, zero=None, block=None, group=None):
    """One plain matrix set [E, rows, cols] of codes -> float64 values."""
    if prec == "bf16":
        return bf16_value(q)
    if prec == "fp16":
        return round_bf16(f16_value(q))
    if prec == "int8":
        return q.astype(np.float64) * np.asarray(scale, np.float64)[..., None]
    if prec == "fp8":
        bn, bk = block
        rows = q.shape[1]
        s = _rep(_rep(np.asarray(scale, np.float64), bn, rows, axis=1), bk, cols, axis=2)
        return E4M3[q] * s
    if prec in ("int4-w4a8", "int4-w4a16"):
        nib = _nibbles(q, cols)
        return (nib - _rep(zero.astype(np.int64), group, cols)) * _rep(np.asarray(scale, np.float64), group, cols)
    if prec == "mxfp4":
        return E2M1[_nibbles(q, cols)] * _rep(e8m0_value(scale), 32, cols)
    raise ValueError(prec)


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def act_ref(act, g, u, alpha, limit):
    with np.errstate(over="ignore", invalid="ignore"):
        if act == "gelu_tanh":
            return 0.5 * g * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (g + 0.044715 * g**3))) * u
        if act == "swiglu_oai":
            g = np.minimum(g, limit)
            u = np.clip(u, -limit, limit)
            return g * sigmoid(alpha * g) * (u + 1.0)
        return np.where(g == -np.inf, 0.0 * u, g * sigmoid(g) * u)


class Plain:
    """Random plain weights of one precision (random codes and scales, as tests/oracle.h makes them),
    with their float64 values."""

    def __init__(self, prec, E, N, K, rng, bias=False, block=(128, 128), group=128):
        self.prec, self.E, self.N, self.K = prec, E, N, K
        self.block, self.group = block, group
        self.kw = {}
        vals = []
        for name, rows, cols in (("w13", 2 * N, K), ("w2", K, N)):
            q, meta = self._matrix(rng, E, rows, cols)
            self.kw[name] = q
            for k, v in meta.items():
                self.kw[name + "_" + k] = v
            vals.append(dequant(prec, q, cols, meta.get("scale"), meta.get("zero"), block, group))
        self.W13, self.W2 = vals
        self.b13 = self.b2 = None
        if bias:
            self.b13 = (0.5 * rng.standard_normal((E, 2 * N))).astype(np.float32)
            self.b2 = (0.5 * rng.standard_normal((E, K))).astype(np.float32)
            self.kw.update(b13=self.b13, b2=self.b2)
        if prec == "fp8":
            self.kw["block"] = block
        if prec in ("int4-w4a8", "int4-w4a16"):
            self.kw["group"] = group

    def _matrix(self, rng, E, rows, cols):
        inv = 1.0 / np.sqrt(cols)
        p = self.prec
        if p == "bf16":
            return bf16_bits(rng.standard_normal((E, rows, cols)) * inv), {}
        if p == "fp16":
            return (rng.standard_normal((E, rows, cols)) * inv).astype(np.float16).view(np.uint16), {}
        if p == "int8":
            q = rng.integers(-127, 128, (E, rows, cols), dtype=np.int8)
            return q, {"scale": ((0.5 + rng.random((E, rows))) * inv / 73.6).astype(np.float32)}
        if p == "fp8":
            bn, bk = self.block
            q = rng.integers(0, 256, (E, rows, cols), dtype=np.uint8)
            q[(q & 0x7F) == 0x7F] ^= 1  # no NaN codes
            fin = E4M3[np.isfinite(E4M3)]
            s = rng.standard_normal((E, -(-rows // bn), -(-cols // bk))) * inv / np.sqrt(np.mean(fin**2))
            return q, {"scale": s.astype(np.float32)}
        if p in ("int4-w4a8", "int4-w4a16"):
            g = self.group
            ng = -(-cols // g)
            q = rng.integers(0, 256, (E, rows, -(-cols // 2)), dtype=np.uint8)
            return q, {"scale": ((0.5 + rng.random((E, rows, ng))) * inv / 6.5).astype(np.float32),
                       "zero": rng.integers(0, 16, (E, rows, ng), dtype=np.uint8)}
        if p == "mxfp4":
            lo = 120 - int(np.floor(np.log2(np.sqrt(cols)) + 0.5))
            q = rng.integers(0, 256, (E, rows, -(-cols // 2)), dtype=np.uint8)
            return q, {"scale": (lo + rng.integers(0, 8, (E, rows, -(-cols // 32)))).astype(np.uint8)}
        raise ValueError(p)

    def pack(self):
        return moeh.Experts(self.prec, **self.kw)

    def expert(self, e, xa, act, alpha, limit):
        """y = act_input(h) W2[e]^T + b2 for pre-quantized rows xa [n, K]."""
        N = self.N
        pre = xa @ self.W13[e].T
        if self.b13 is not None:
            pre = pre + self.b13[e].astype(np.float64)
        h = act_input(self.prec, act_ref(act, pre[:, :N], pre[:, N:], alpha, limit))
        y = h @ self.W2[e].T
        if self.b2 is not None:
            y = y + self.b2[e].astype(np.float64)
        return y


def x_value(x, dtype):
    if dtype == "f32":
        return np.asarray(x, np.float64)
    if dtype == "fp16":
        return np.asarray(x).astype(np.float64) if x.dtype == np.float16 else f16_value(x)
    return bf16_value(x)


def ref_layer(P, xf, weights, ids, act="silu", alpha=None, limit=None, rsf=None, shared=None, shared_gate=None,
              expert_map=None):
    """The layer in float64 (xf: the activations' values, [M, K])."""
    alpha = 1.702 if not alpha else float(np.float32(alpha))
    limit = 7.0 if not limit else float(np.float32(limit))
    rsf = 1.0 if not rsf else float(np.float32(rsf))
    M, K = xf.shape
    xa = act_input(P.prec, xf)
    out = np.zeros((M, K))
    w64 = np.asarray(weights, np.float32).astype(np.float64)
    local = np.asarray(ids)
    if expert_map is not None:
        local = np.where(local >= 0, np.asarray(expert_map)[np.maximum(local, 0)], -1)
    for e in range(P.E):
        m, j = np.nonzero(local == e)
        if len(m):
            np.add.at(out, m, P.expert(e, xa[m], act, alpha, limit) * w64[m, j][:, None])
    out *= rsf
    if shared is not None:
        g = np.ones(M)
        if shared_gate is not None:
            g = sigmoid(xf @ np.asarray(shared_gate, np.float32).astype(np.float64))
        out += shared.expert(0, act_input(shared.prec, xf), act, alpha, limit) * g[:, None]
    return out


def rel_err(out, ref, dtype):
    """||out - ref|| / max(||ref||, sqrt(n) * tiny); NaN when an output is not finite."""
    v = x_value(out, dtype).reshape(ref.shape)
    if not np.isfinite(v).all():
        return float("nan")
    tiny = 2.0**-14 if dtype == "fp16" else 2.0**-126
    den = max(np.sum(ref * ref), ref.size * tiny * tiny)
    return float(np.sqrt(np.sum((v - ref) ** 2) / den))


def make_x(rng, M, K, dtype):
    """Activations of the dtype (f32 / float16 / bf16 bits), N(0, 1), never zero."""
    v = rng.standard_normal((M, K))
    v[v == 0] = 0.5
    if dtype == "f32":
        return v.astype(np.float32)
    if dtype == "fp16":
        h = v.astype(np.float16)
        h[h == 0] = np.float16(0.25)
        return h
    b = bf16_bits(v)
    b[(b & 0x7FFF) == 0] = bf16_bits(0.25)
    return b


def random_route(rng, M, E, topk):
    ids = np.stack([rng.permutation(E)[:topk] for _ in range(M)]).astype(np.int32)
    w = (0.2 + rng.random((M, topk))).astype(np.float32)
    return w, ids


@pytest.fixture(params=ISAS)
def isa(request):
    """Runs a test on each kernel tier this CPU has (the cap is process-wide: restored after)."""
    got = moeh.set_isa(request.param)
    assert got == request.param
    yield got
    moeh.set_isa(None)


def check(err, tol, what):
    assert err <= tol, "%s: rel_err %.3e > %.1e" % (what, err, tol)  # NaN fails too


# ==== the layer against the reference ========================================================================

# (precision, E, N, K, block, group): tails everywhere (N, K not multiples of 32, 64 or the blocks)
CASES = [
    ("bf16", 6, 72, 100, None, None),
    ("fp16", 6, 72, 100, None, None),
    ("int8", 6, 72, 100, None, None),
    ("fp8", 6, 72, 100, (48, 64), None),  # partial blocks along rows and cols, gate/up sharing one
    ("fp8", 4, 40, 96, (128, 128), None),  # one partial block per matrix
    ("int4-w4a8", 6, 72, 100, None, 32),
    ("int4-w4a8", 5, 64, 99, None, 64),  # odd K: rows of ceil(K/2) bytes
    ("int4-w4a16", 6, 72, 100, None, 32),
    ("int4-w4a16", 6, 72, 100, None, 64),  # groups of 64 with a tail of 36 (K) and 8 (N)
    ("int4-w4a16", 4, 40, 160, None, 128),
    ("mxfp4", 6, 72, 100, None, None),
]


def _case_id(c):
    p, E, N, K, b, g = c
    return "%s-E%d-N%d-K%d%s%s" % (p, E, N, K, "-b%dx%d" % b if b else "", "-g%d" % g if g else "")


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("dtype", ["bf16", "fp16", "f32"])
def test_layer_every_precision(case, dtype, isa):
    prec, E, N, K, block, group = case
    rng = np.random.default_rng(zlib.crc32(repr((prec, N, K, dtype, block, group)).encode()))
    P = Plain(prec, E, N, K, rng, block=block or (128, 128), group=group or 128)
    ex = P.pack()
    assert (ex.E, ex.N, ex.K, ex.precision.label) == (E, N, K, prec)
    M, topk = 9, 3
    x = make_x(rng, M, K, dtype)
    w, ids = random_route(rng, M, E, topk)
    out = ex(x, w, ids, dtype="fp16" if dtype == "fp16" else None)
    assert out.shape == (M, K)
    assert out.dtype == {"bf16": np.uint16, "fp16": np.float16, "f32": np.float32}[dtype]
    ref = ref_layer(P, x_value(x, dtype), w, ids)
    check(rel_err(out, ref, dtype), TOL[dtype], "%s %s %s" % (prec, dtype, isa))


@pytest.mark.parametrize("prec", PRECISIONS)
def test_shared_expert_with_gate(prec, isa):
    rng = np.random.default_rng(100 + PRECISIONS.index(prec))
    E, N, K, M, topk = 5, 48, 96, 7, 2
    g = 32 if prec in ("int4-w4a8", "int4-w4a16") else 128
    P = Plain(prec, E, N, K, rng, group=g, block=(32, 32))
    S = Plain(prec, 1, 80, K, rng, group=g, block=(32, 32))  # the shared expert's own N
    ex, sh = P.pack(), S.pack()
    x = make_x(rng, M, K, "f32")
    w, ids = random_route(rng, M, E, topk)
    gate = (rng.standard_normal(K) / np.sqrt(K)).astype(np.float32)
    out = ex(x, w, ids, shared=sh, shared_gate=gate, routed_scaling_factor=2.5)
    ref = ref_layer(P, x_value(x, "f32"), w, ids, rsf=2.5, shared=S, shared_gate=gate)
    check(rel_err(out, ref, "f32"), TOL["f32"], "%s shared+gate" % prec)
    out2 = ex(x, w, ids, shared=sh)  # ungated
    ref2 = ref_layer(P, x_value(x, "f32"), w, ids, shared=S)
    check(rel_err(out2, ref2, "f32"), TOL["f32"], "%s shared" % prec)
    # the shared expert alone, added to a routed output computed elsewhere
    routed = ex(x, w, ids)
    alone = moeh.shared_expert(sh, x, routed, shared_gate=gate, routed_scaling_factor=2.5)
    check(rel_err(alone, 2.5 * routed.astype(np.float64) + (ref - 2.5 * ref_layer(P, x_value(x, "f32"), w, ids)),
                  "f32"), TOL["f32"], "%s moe_shared_expert" % prec)


@pytest.mark.parametrize("prec", ["bf16", "int8", "mxfp4", "int4-w4a16"])
@pytest.mark.parametrize("act,alpha,limit", [("swiglu_oai", None, None), ("swiglu_oai", 1.25, 0.75),
                                             ("gelu_tanh", None, None), ("silu", None, None)])
def test_bias_and_activations(prec, act, alpha, limit, isa):
    rng = np.random.default_rng(7)
    E, N, K, M, topk = 4, 64, 96, 6, 2
    P = Plain(prec, E, N, K, rng, bias=True, group=32)
    ex = P.pack()
    assert ex.has_bias
    for dtype in ("bf16", "f32"):
        x = make_x(rng, M, K, dtype)
        w, ids = random_route(rng, M, E, topk)
        out = ex(x, w, ids, act=act, alpha=alpha, limit=limit)
        ref = ref_layer(P, x_value(x, dtype), w, ids, act=act, alpha=alpha, limit=limit)
        check(rel_err(out, ref, dtype), TOL[dtype], "%s %s bias %s" % (prec, act, dtype))


def test_skipped_ids_expert_map_and_chunks():
    rng = np.random.default_rng(11)
    E_local, n_global, N, K, M, topk = 4, 8, 64, 64, 40, 3
    P = Plain("int8", E_local, N, K, rng)
    ex = P.pack()
    emap, el = moeh.expert_map_contiguous(n_global, 2, 1)  # this rank owns experts 4..7
    assert el == E_local and list(emap) == [-1] * 4 + [0, 1, 2, 3]
    x = make_x(rng, M, K, "f32")
    w, ids = random_route(rng, M, n_global, topk)
    ids[::5, 0] = -1  # skipped slots
    out = ex(x, w, ids, expert_map=emap, chunk_tokens=7)
    ref = ref_layer(P, x_value(x, "f32"), w, ids, expert_map=emap)
    check(rel_err(out, ref, "f32"), TOL["f32"], "expert map + chunks")
    assert np.array_equal(out, ex(x, w, ids, expert_map=emap)), "the chunk size changed the output"


# ==== routing ====================================================================================================


def ref_route(logits, topk, kind, renormalize=False, n_group=1, topk_group=None, rsf=None, bias=None):
    """Routing in float64: selection scores, groups, top-k (ties to the lower id), weights."""
    x = np.asarray(logits, np.float64)
    M, E = x.shape
    G = n_group or 1
    TG = topk_group or G
    W, I = np.zeros((M, topk)), np.zeros((M, topk), np.int64)
    for m in range(M):
        if kind in ("softmax", "grouped"):
            p = np.exp(x[m] - x[m].max())
            key = val = p / p.sum()
        elif kind == "sigmoid":
            key, val = x[m], sigmoid(x[m])
        else:
            val = sigmoid(x[m])
            key = val + np.asarray(bias, np.float64)
        allowed = np.ones(E, bool)
        if kind in ("grouped", "biased_grouped") and TG < G:
            gk = key.reshape(G, E // G)
            score = np.sort(gk, axis=1)[:, ::-1]
            score = score[:, :2].sum(axis=1) if kind == "biased_grouped" and E // G > 1 else score[:, 0]
            keep = np.lexsort((np.arange(G), -score))[:TG]
            allowed = np.zeros(E, bool)
            for g in keep:
                allowed[g * (E // G):(g + 1) * (E // G)] = True
        order = [e for e in np.lexsort((np.arange(E), -key)) if allowed[e]][:topk]
        I[m] = order
        W[m] = val[order]
        if renormalize and W[m].sum() > 0:
            W[m] /= W[m].sum()
    return W * (1.0 if not rsf else rsf), I


def separated_logits(rng, M, E):
    """Logits whose scores are far from ties: a permutation of a grid plus small noise."""
    return np.stack([rng.permutation(E) * 0.15 + rng.random(E) * 0.05 for _ in range(M)]).astype(np.float32)


@pytest.mark.parametrize("kind,kw", [
    ("softmax", dict()),
    ("softmax", dict(renormalize=True)),
    ("sigmoid", dict(renormalize=True, routed_scaling_factor=1.5)),
    ("grouped", dict(n_group=4, topk_group=2)),
    ("biased_grouped", dict(n_group=4, topk_group=2, renormalize=True, routed_scaling_factor=2.5)),
    ("biased_grouped", dict(n_group=8, topk_group=3)),
])
def test_route(kind, kw):
    rng = np.random.default_rng(5)
    M, E, topk = 12, 32, 4
    logits = separated_logits(rng, M, E)
    bias = (rng.standard_normal(E) * 0.1).astype(np.float32) if kind == "biased_grouped" else None
    w, ids = moeh.route(logits, topk, kind, correction_bias=bias, **kw)
    assert w.dtype == np.float32 and ids.dtype == np.int32 and w.shape == ids.shape == (M, topk)
    rw, rids = ref_route(logits, topk, kind, kw.get("renormalize", False), kw.get("n_group"), kw.get("topk_group"),
                         kw.get("routed_scaling_factor"), bias)
    assert np.array_equal(ids, rids)
    assert np.allclose(w, rw, rtol=2e-6, atol=1e-7)
    # bf16 and fp16 logits: the same routing of the rounded values
    lb = bf16_bits(logits)
    wb, idb = moeh.route(lb, topk, kind, correction_bias=bias, **kw)
    rwb, ridb = ref_route(bf16_value(lb), topk, kind, kw.get("renormalize", False), kw.get("n_group"),
                          kw.get("topk_group"), kw.get("routed_scaling_factor"), bias)
    assert np.array_equal(idb, ridb) and np.allclose(wb, rwb, rtol=2e-6, atol=1e-7)
    wh, idh = moeh.route(logits.astype(np.float16), topk, kind, correction_bias=bias, **kw)
    assert wh.shape == (M, topk)


def test_route_threads():
    """moe_route_parallel: 1, 3 threads and OpenMP's default give moe_route's bits (a call large enough to split)."""
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((700, 128)).astype(np.float32)
    logits[::7, ::5] = np.round(logits[::7, ::5])  # exact ties too
    r = moeh.Router(128, 8, "softmax", renormalize=True)
    w0, ids0 = r.route(logits, threads=1)
    for threads in (3, None):
        w, ids = r.route(logits, threads=threads)
        assert np.array_equal(ids, ids0) and np.array_equal(w.view(np.uint32), w0.view(np.uint32))


@pytest.mark.parametrize("prec", ["bf16", "fp8", "int4-w4a8"])
def test_forward_matches_route_then_experts(prec):
    rng = np.random.default_rng(21)
    E, N, K, M, topk = 8, 64, 128, 10, 2
    P = Plain(prec, E, N, K, rng, block=(64, 64), group=64)
    ex = P.pack()
    router = moeh.Router(E, topk, "biased_grouped", n_group=4, topk_group=2, renormalize=True,
                         routed_scaling_factor=2.0, correction_bias=(rng.random(E) * 0.1).astype(np.float32))
    logits = separated_logits(rng, M, E)
    x = make_x(rng, M, K, "bf16")
    out = moeh.forward(ex, router, logits, x, chunk_tokens=4)
    w, ids = router.route(logits)
    assert np.array_equal(out, ex(x, w, ids)), "moe_forward differs from moe_route + moe_fused_experts"
    ref = ref_layer(P, x_value(x, "bf16"), w, ids)
    check(rel_err(out, ref, "bf16"), TOL["bf16"], "forward " + prec)


# ==== dtypes, shapes, threads ====================================================================================


def test_dtypes_leading_dims_inplace_and_empty():
    rng = np.random.default_rng(3)
    E, N, K = 4, 32, 64
    P = Plain("bf16", E, N, K, rng)
    ex = P.pack()
    x = make_x(rng, 6, K, "f32")
    w, ids = random_route(rng, 6, E, 2)
    ref = ref_layer(P, x.astype(np.float64), w, ids)
    o32 = ex(x, w, ids)
    check(rel_err(o32, ref, "f32"), TOL["f32"], "f32")
    # float32 x with dtype="bf16": converted, bf16 (uint16) out
    ob = ex(x, w, ids, dtype="bf16")
    assert ob.dtype == np.uint16
    check(rel_err(ob, ref_layer(P, bf16_value(bf16_bits(x)), w, ids), "bf16"), TOL["bf16"], "f32 -> bf16")
    # uint16 read as fp16 bits; float16 arrays directly
    xh = x.astype(np.float16)
    oh = ex(xh, w, ids)
    assert oh.dtype == np.float16
    oh2 = ex(xh.view(np.uint16), w, ids, dtype="fp16")
    assert np.array_equal(oh.view(np.uint16), oh2.view(np.uint16))
    # leading dimensions
    o3 = ex(x.reshape(2, 3, K), w.reshape(2, 3, 2), ids.reshape(2, 3, 2))
    assert o3.shape == (2, 3, K) and np.array_equal(o3.reshape(6, K), o32)
    # a single token
    o1 = ex(x[0], w[0], ids[0])
    assert o1.shape == (K,) and np.array_equal(o1, o32[0])
    # in place (out may be x) and into a given array
    xi = x.copy()
    assert ex(xi, w, ids, out=xi) is xi and np.array_equal(xi, o32)
    buf = np.empty_like(x)
    assert ex(x, w, ids, out=buf) is buf and np.array_equal(buf, o32)
    # float64 weights and int64 ids are cast; non-contiguous inputs are copied
    assert np.array_equal(ex(np.asfortranarray(x), w.astype(np.float64), ids.astype(np.int64)), o32)
    # M = 0
    assert ex(x[:0], w[:0], ids[:0]).shape == (0, K)


def test_threads_deterministic():
    rng = np.random.default_rng(9)
    E, N, K, M = 8, 96, 128, 33
    ex = Plain("int4-w4a16", E, N, K, rng, group=32).pack()
    x = make_x(rng, M, K, "bf16")
    w, ids = random_route(rng, M, E, 3)
    outs = [ex(x, w, ids, threads=t) for t in (None, 1, 2, 3)]
    for o in outs[1:]:
        assert np.array_equal(o, outs[0]), "the output depends on the thread count"
    # Python threads on one Experts object: each has its own workspace
    res = [None] * 4

    def run(i):
        res[i] = ex(x, w, ids, threads=1)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(np.array_equal(r, outs[0]) for r in res)
    st = {}
    ex(x, w, ids, stats=st)
    assert set(st) == {"prepare", "sort", "gemm1", "requant", "gemm2", "combine"}
    assert all(v >= 0 for v in st.values()) and sum(st.values()) > 0


# ==== quantizers, conversions, importers ========================================================================


def test_quantizers():
    rng = np.random.default_rng(4)
    E, R, C = 3, 40, 100
    wf = rng.standard_normal((E, R, C)).astype(np.float32)
    q, s = moeh.quantize_weight_int8(wf)
    assert q.dtype == np.int8 and q.shape == (E, R, C) and s.shape == (E, R)
    assert np.all(np.abs(q * s[..., None].astype(np.float64) - wf) <= s[..., None] * 0.5001)
    q, s = moeh.quantize_weight_fp8(wf, block=(16, 48))
    assert q.shape == (E, R, C) and s.shape == (E, 3, 3)
    d = dequant("fp8", q, C, s, block=(16, 48))
    assert np.linalg.norm(d - wf) / np.linalg.norm(wf) < 0.05
    q, s, z = moeh.quantize_weight_int4(wf, group=64)
    assert q.shape == (E, R, 50) and s.shape == z.shape == (E, R, 2) and z.max() <= 15
    d = dequant("int4-w4a16", q, C, s, z, group=64)
    assert np.all(np.abs(d - wf) <= _rep(s.astype(np.float64), 64, C) * 0.5001)
    q, e = moeh.quantize_weight_mxfp4(wf)
    assert q.shape == (E, R, 50) and e.shape == (E, R, 4)
    d = dequant("mxfp4", q, C, e)
    assert np.linalg.norm(d - wf) / np.linalg.norm(wf) < 0.2
    with pytest.raises(ValueError):
        moeh.quantize_weight_int4(wf, group=48)
    # one matrix without the expert axis; an expert set of E = 1 from [rows, cols] arrays
    q, s = moeh.quantize_weight_int8(wf[0])
    assert q.shape == (R, C) and s.shape == (R,)
    q2, s2 = moeh.quantize_weight_int8(rng.standard_normal((C, R // 2)).astype(np.float32))
    one = moeh.Experts("int8", q, q2, w13_scale=s, w2_scale=s2)
    assert (one.E, one.N, one.K) == (1, R // 2, C)
    # per-token activation quantization: exactly the reference's
    xr = rng.standard_normal((5, 77)).astype(np.float32)
    qa, sa = moeh.quantize_row_u8(xr)
    assert qa.dtype == np.uint8 and sa.shape == (5,)
    assert np.array_equal((qa.astype(np.float64) - 128) * sa[:, None].astype(np.float64), quant_a8(xr))
    # Experts.quantize packs what the quantizers make
    for prec in PRECISIONS:
        ex = moeh.Experts.quantize(prec, wf[:, :, :64].reshape(E, 2 * 20, 64), rng.standard_normal((E, 64, 20)),
                                   group=32, block=(32, 32))
        assert (ex.E, ex.N, ex.K) == (E, 20, 64)


def test_bf16_conversions():
    v = np.array([1.0, -2.5, 1 + 2**-8, 1 + 3 * 2**-8, 3.0e38, np.inf, 1e-40], np.float32)
    b = moeh.to_bf16(v)
    assert np.array_equal(b, bf16_bits(v.astype(np.float64)))
    assert np.array_equal(moeh.from_bf16(b), bf16_value(b).astype(np.float32))
    assert np.isnan(moeh.from_bf16(moeh.to_bf16(np.float32(np.nan))))


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def awq_pack(codes):
    """Plain codes [out, in] (0..15) -> AWQ int32 [in, out/8]: nibble p of word w holds out 8w + AWQ_ORDER[p]."""
    out, n_in = codes.shape
    c = codes.T.reshape(n_in, out // 8, 8).astype(np.uint32)
    word = np.zeros((n_in, out // 8), np.uint32)
    for p, k in enumerate(AWQ_ORDER):
        word |= c[:, :, k] << np.uint32(4 * p)
    return word.view(np.int32)


def gptq_qweight(codes):
    """Plain codes [out, in] -> GPTQ int32 [in/8, out]: word (i, o) holds in 8i..8i+7, lowest bits first."""
    out, n_in = codes.shape
    c = codes.T.reshape(n_in // 8, 8, out).astype(np.uint32)
    word = np.zeros((n_in // 8, out), np.uint32)
    for j in range(8):
        word |= c[:, j, :] << np.uint32(4 * j)
    return word.view(np.int32)


def gptq_qzeros(zero):
    """Zero points [out, ngroups] -> GPTQ v1 int32 [ngroups, out/8]: the v2 word minus 0x11111111."""
    out, ng = zero.shape
    z = zero.T.reshape(ng, out // 8, 8).astype(np.uint64)
    word = np.zeros((ng, out // 8), np.uint64)
    for j in range(8):
        word |= z[:, :, j] << np.uint64(4 * j)
    return ((word - 0x11111111) % 2**32).astype(np.uint32).view(np.int32)


def _codes_of(plain_q, cols):
    return _nibbles(plain_q, cols).astype(np.uint8)


@pytest.mark.parametrize("fmt", ["awq", "gptq"])
def test_import_awq_gptq(fmt):
    rng = np.random.default_rng(31)
    E, N, K, g = 3, 64, 128, 32
    P = Plain("int4-w4a16", E, N, K, rng, group=g)
    kw = P.kw
    # the checkpoint tensors of each projection from the plain arrays; scales as f16 (exact: f16 values)
    s13 = kw["w13_scale"].astype(np.float16)
    s2 = kw["w2_scale"].astype(np.float16)
    c13, c2 = _codes_of(kw["w13"], K), _codes_of(kw["w2"], N)
    projs = []
    for codes, sc, z in ((c13[:, :N], s13[:, :N], kw["w13_zero"][:, :N]), (c13[:, N:], s13[:, N:], kw["w13_zero"][:, N:]),
                         (c2, s2, kw["w2_zero"])):
        if fmt == "awq":
            projs.append((np.stack([awq_pack(codes[e]) for e in range(E)]),
                          np.stack([awq_pack(z[e].astype(np.uint8)) for e in range(E)]),
                          np.ascontiguousarray(np.swapaxes(sc, 1, 2))))
        else:
            projs.append((np.stack([gptq_qweight(codes[e]) for e in range(E)]),
                          np.stack([gptq_qzeros(z[e]) for e in range(E)]),
                          np.ascontiguousarray(np.swapaxes(sc, 1, 2))))
    if fmt == "awq":
        got = moeh.import_awq(*projs, group=g)
    else:
        gidx = np.arange(K, dtype=np.int32) // g
        projs[0] = projs[0] + (gidx,)
        got = moeh.import_gptq(*projs, group=g)
    assert got["precision"] == moeh.Precision.INT4_W4A16 and got["group"] == g
    assert np.array_equal(_codes_of(got["w13"], K), c13) and np.array_equal(_codes_of(got["w2"], N), c2)
    assert np.array_equal(got["w13_zero"], kw["w13_zero"]) and np.array_equal(got["w2_zero"], kw["w2_zero"])
    assert np.array_equal(got["w13_scale"], s13.astype(np.float32))
    assert np.array_equal(got["w2_scale"], s2.astype(np.float32))
    # the imported layer runs, and equals the plain one with the same (f16) scales
    ex = moeh.Experts(**got)
    kw2 = dict(kw, w13_scale=s13.astype(np.float32), w2_scale=s2.astype(np.float32))
    ex_plain = moeh.Experts("int4-w4a16", **kw2)
    x = make_x(rng, 5, K, "bf16")
    w, ids = random_route(rng, 5, E, 2)
    assert np.array_equal(ex(x, w, ids), ex_plain(x, w, ids))
    # as int4-w4a8 too
    if fmt == "awq":
        assert moeh.import_awq(*projs, group=g, precision="int4-w4a8")["precision"] == moeh.Precision.INT4_W4A8
    else:
        # act-order (a permuted g_idx) is not representable; 8-bit GPTQ neither
        bad = list(projs)
        bad[0] = projs[0][:3] + (np.random.default_rng(0).permutation(K).astype(np.int32) // g,)
        with pytest.raises(moeh.MoeError) as ei:
            moeh.import_gptq(*bad, group=g)
        assert ei.value.name == "MOE_ERR_UNSUPPORTED"
        with pytest.raises(moeh.MoeError) as ei:
            moeh.import_gptq(*projs, group=g, bits=8)
        assert ei.value.name == "MOE_ERR_UNSUPPORTED"


def test_import_fp8_block():
    rng = np.random.default_rng(32)
    E, N, K, bn, bk = 2, 64, 96, 32, 64
    P = Plain("fp8", E, N, K, rng, block=(bn, bk))
    kw = P.kw
    q13, s13, q2, s2 = kw["w13"], kw["w13_scale"], kw["w2"], kw["w2_scale"]
    nb = N // bn
    got = moeh.import_fp8_block((q13[:, :N], s13[:, :nb]), (q13[:, N:], s13[:, nb:]), (q2, s2), block=(bn, bk))
    assert got["block"] == (bn, bk)
    for k in ("w13", "w13_scale", "w2", "w2_scale"):
        assert np.array_equal(got[k], kw[k]), k
    ex = moeh.Experts(**got)
    x = make_x(rng, 4, K, "f32")
    w, ids = random_route(rng, 4, E, 2)
    check(rel_err(ex(x, w, ids), ref_layer(P, x_value(x, "f32"), w, ids), "f32"), TOL["f32"], "fp8 import")
    # N not a multiple of bn (blocks of 48 rows, N = 64: gate and up each own a partial last block):
    # the scales re-blocked to gcd(48, 64) = 16 rows, each destination block the checkpoint block it
    # lies in, exactly
    sg, su = rng.uniform(0.5, 2, (E, 2, 2)).astype(np.float32), rng.uniform(0.5, 2, (E, 2, 2)).astype(np.float32)
    sd = rng.uniform(0.5, 2, (E, 2, 1)).astype(np.float32)  # down [K = 96, N = 64]: 2 x 1 blocks of 48 x 64
    got = moeh.import_fp8_block((q13[:, :N], sg), (q13[:, N:], su), (q2, sd), block=(48, bk))
    assert got["block"] == (16, bk)
    assert np.array_equal(got["w13"], q13) and np.array_equal(got["w2"], q2)
    for b in range(2 * N // 16):
        mat, r = (sg, 16 * b) if b < N // 16 else (su, 16 * b - N)
        assert np.array_equal(got["w13_scale"][:, b], mat[:, r // 48]), b
    for b in range(K // 16):
        assert np.array_equal(got["w2_scale"][:, b], sd[:, 16 * b // 48]), b
    out = moeh.Experts(**got)(x, w, ids)
    assert np.isfinite(out).all()


def test_import_mxfp4_gpt_oss_layout():
    rng = np.random.default_rng(33)
    E, N, K = 2, 64, 96
    P = Plain("mxfp4", E, N, K, rng, bias=True)
    kw = P.kw

    def interleave(a):  # plain gate-rows-first -> gpt-oss's gate/up interleaved rows
        out = np.empty_like(a)
        out[:, 0::2], out[:, 1::2] = a[:, :N], a[:, N:]
        return out

    blocks = interleave(kw["w13"]).reshape(E, 2 * N, K // 32, 16)
    scales = interleave(kw["w13_scale"])
    b13_bf16 = bf16_bits(interleave(kw["b13"]).astype(np.float64))
    got = moeh.import_mxfp4((blocks, scales), (kw["w2"].reshape(E, K, N // 32, 16), kw["w2_scale"]),
                            gate_up_bias=b13_bf16, down_bias=kw["b2"])
    assert np.array_equal(got["w13"], kw["w13"]) and np.array_equal(got["w13_scale"], kw["w13_scale"])
    assert np.array_equal(got["w2"], kw["w2"]) and np.array_equal(got["w2_scale"], kw["w2_scale"])
    assert np.array_equal(got["b13"], bf16_value(bf16_bits(kw["b13"].astype(np.float64))).astype(np.float32))
    assert np.array_equal(got["b2"], kw["b2"])
    ex = moeh.Experts(**got)
    x = make_x(rng, 5, K, "bf16")
    w, ids = random_route(rng, 5, E, 2)
    P.b13 = got["b13"]
    out = ex(x, w, ids, act="swiglu_oai")
    check(rel_err(out, ref_layer(P, x_value(x, "bf16"), w, ids, act="swiglu_oai"), "bf16"), TOL["bf16"],
          "gpt-oss mxfp4 import")
    # deinterleave_gate_up on any array of [E, 2N, ...]
    assert np.array_equal(moeh.deinterleave_gate_up(interleave(kw["w13_scale"])), kw["w13_scale"])
    assert np.array_equal(moeh.deinterleave_gate_up(interleave(kw["b13"])), kw["b13"])
    # import_bias alone: f16 interleaved
    bh = interleave(kw["b13"]).astype(np.float16)
    assert np.array_equal(moeh.import_bias(bh, gate_up_interleaved=True), kw["b13"].astype(np.float16).astype(np.float32))


# ==== errors =====================================================================================================


def _small(prec="int8", E=4, N=32, K=64, seed=0, **kw):
    return Plain(prec, E, N, K, np.random.default_rng(seed), **kw)


def test_status_names_match_the_header():
    with open(os.path.join(ROOT, "moe_quant.h")) as f:
        text = f.read()
    rows = re.findall(r"X\((MOE_[A-Z_]+), (-?\d+), \"([^\"]*)\"\)", text)
    assert len(rows) == len(moeh.Status) == 10
    for name, value, msg in rows:
        assert moeh.Status(int(value)).name == name
        e = moeh.MoeError(int(value))
        assert (e.status, e.name, e.message) == (int(value), name, msg)
    e = moeh.MoeError(-3, "MOE_ERR_EXPERT_ID", "msg")
    assert e.args == (-3, "MOE_ERR_EXPERT_ID", "msg") and "MOE_ERR_EXPERT_ID" in str(e)
    with open(os.path.join(ROOT, "moe.h")) as f:
        v = re.search(r'#define MOE_VERSION_STRING "([^"]+)"', f.read()).group(1)
    assert moeh.version() == v == moeh.__version__


def _raises(name, fn, *a, **kw):
    with pytest.raises(moeh.MoeError) as ei:
        fn(*a, **kw)
    assert ei.value.name == name, str(ei.value)
    assert ei.value.status == int(moeh.Status[name])
    return ei.value


def test_library_errors_raise_moe_error():
    P = _small()
    ex = P.pack()
    rng = np.random.default_rng(1)
    x = make_x(rng, 3, 64, "f32")
    w, ids = random_route(rng, 3, 4, 2)
    bad = ids.copy()
    bad[1, 1] = 4
    e = _raises("MOE_ERR_EXPERT_ID", ex, x, w, bad)
    assert e.call == "moe_fused_experts"
    bad[1, 1] = -2
    _raises("MOE_ERR_EXPERT_ID", ex, x, w, bad)
    _raises("MOE_ERR_EXPERT_ID", ex, x, w, ids, expert_map=np.array([0, 1, 2, 9], np.int32))
    # topk > E
    _raises("MOE_ERR_SHAPE", ex, x, np.ones((3, 5), np.float32), np.zeros((3, 5), np.int32))
    # a shared expert of another precision, or with E != 1
    _raises("MOE_ERR_UNSUPPORTED", ex, x, w, ids, shared=_small("bf16", E=1).pack())
    _raises("MOE_ERR_SHAPE", ex, x, w, ids, shared=_small("int8", E=2).pack())
    # a NaN routed scaling factor
    _raises("MOE_ERR_ARG", ex, x, w, ids, routed_scaling_factor=float("nan"))
    # packing: an int4 group that is not a multiple of 32
    _raises("MOE_ERR_DESCRIPTOR", moeh.Experts, "int4-w4a16", **_small("int4-w4a16", group=48).kw)
    # routing
    lg = np.zeros((2, 8), np.float32)
    _raises("MOE_ERR_ARG", moeh.route, lg, 2, "biased_grouped", n_group=2)  # no correction bias
    _raises("MOE_ERR_ARG", moeh.route, lg, 2, "grouped", n_group=3)  # 3 does not divide 8
    _raises("MOE_ERR_SHAPE", moeh.route, lg, 9)
    _raises("MOE_ERR_SHAPE", moeh.route, np.zeros((1, 1025), np.float32), 2)
    _raises("MOE_ERR_ARG", moeh.route, lg, 2, routed_scaling_factor=float("inf"))
    # forward: a router of another E
    _raises("MOE_ERR_SHAPE", moeh.forward, ex, moeh.Router(8, 2), lg[:1].repeat(3, 0), x)
    # importers
    _raises("MOE_ERR_UNSUPPORTED", moeh.import_awq, *[(np.zeros((64, 4), np.int32), np.zeros((1, 4), np.int32),
                                                       np.zeros((1, 32), np.float16))] * 2,
            (np.zeros((32, 8), np.int32), np.zeros((1, 8), np.int32), np.zeros((1, 64), np.float16)), group=48)
    _raises("MOE_ERR_SHAPE", moeh.expert_map_contiguous, 4, 5, 0)
    _raises("MOE_ERR_ARG", moeh.expert_map_contiguous, 4, 2, 2)


def test_python_side_validation():
    P = _small()
    ex = P.pack()
    rng = np.random.default_rng(2)
    x = make_x(rng, 3, 64, "f32")
    w, ids = random_route(rng, 3, 4, 2)
    with pytest.raises(ValueError):
        ex(x[:, :63], w, ids)  # K
    with pytest.raises(ValueError):
        ex(x, w[:2], ids[:2])  # M
    with pytest.raises(ValueError):
        ex(x, w, ids[:, :1])  # topk
    with pytest.raises(TypeError):
        ex(x.astype(np.float64), w, ids)  # dtype of x
    with pytest.raises(TypeError):
        ex(x, w, ids.astype(np.float32))
    with pytest.raises(ValueError):
        ex(x, w, ids, out=np.empty((3, 64), np.float16))
    with pytest.raises(ValueError):
        ex(x, w, ids, shared_gate=np.zeros(64, np.float32))  # a gate without a shared expert
    kw = dict(P.kw)
    with pytest.raises(ValueError):
        moeh.Experts("int8", **dict(kw, w13_scale=kw["w13_scale"][:, :-1]))  # scale shape
    with pytest.raises(ValueError):
        moeh.Experts("int8", **dict(kw, w13_scale=None))  # missing scale
    with pytest.raises(TypeError):
        moeh.Experts("int8", **dict(kw, w13=kw["w13"].astype(np.int16)))  # code dtype
    with pytest.raises(ValueError):
        moeh.Experts("int8", **dict(kw, w2=kw["w2"][:, :, :-1]))  # w2 [E, K, N]
    with pytest.raises(TypeError):
        moeh.Experts("bf16", kw["w13"].astype(np.uint16), kw["w2"].astype(np.uint16), w13_scale=kw["w13_scale"])
    with pytest.raises(ValueError):
        moeh.Experts("int5", **kw)
    with pytest.raises(ValueError):
        ex(x, w, ids, act="relu")
    with pytest.raises(ValueError):
        moeh.route(np.zeros((2, 8), np.float32), 2, "topk")
    with pytest.raises(ValueError):
        moeh.Router(8, 2, "biased_grouped", correction_bias=np.zeros(7, np.float32))


def test_nan_never_passes():
    P = _small("bf16")
    ex = P.pack()
    rng = np.random.default_rng(6)
    x = make_x(rng, 4, 64, "f32")
    w, ids = random_route(rng, 4, 4, 2)
    x[2, 5] = np.nan
    out = ex(x, w, ids)
    assert np.isnan(out[2]).any() and np.isfinite(out[[0, 1, 3]]).all()
    ref = ref_layer(P, x_value(x, "f32"), w, ids)
    err = rel_err(out, ref, "f32")
    assert np.isnan(err) and not err <= TOL["f32"]


# ==== the binding itself =========================================================================================


def test_version_kernels_and_isa():
    assert moeh.library_path()
    for p in PRECISIONS:
        assert moeh.Precision.parse(p).label == p and moeh.precision_compiled(p)
        k = moeh.kernel(p)
        assert k and k["isa"] == moeh.get_isa() and k["name"].startswith("moe_")
    assert moeh.Precision.parse("INT4_W4A8") == moeh.Precision.INT4_W4A8 == moeh.Precision.parse(4)
    assert moeh.set_isa("scalar") == "scalar" and moeh.kernel("int8")["isa"] == "scalar"
    moeh.set_isa(None)
    assert moeh.isa_available("scalar")


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler to read the struct layouts")
def test_struct_layouts_match_the_headers():
    from moeh import _lib

    structs = [_lib.moe_weights, _lib.moe_router, _lib.moe_stats, _lib.moe_call, _lib.moe_parallel,
               _lib.moe_gemm_config]
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "moe.h"', "int main(void) {"]
    for s in structs:
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (s.__name__, s.__name__))
        for f, _ in s._fields_:
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (s.__name__, f, s.__name__, f))
    lines.append('printf("moe_experts %zu\\n", sizeof(moe_experts)); return 0; }')
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "layout.c"), os.path.join(d, "layout")
        with open(src, "w") as f:
            f.write("\n".join(lines))
        subprocess.run(["cc", "-I", ROOT, src, "-o", exe], check=True)
        got = dict(line.rsplit(" ", 1) for line in subprocess.run([exe], check=True, capture_output=True,
                                                                  text=True).stdout.split("\n") if line)
    for s in structs:
        assert int(got[s.__name__]) == ctypes.sizeof(s) == _lib.STRUCT_SIZES[s.__name__], s.__name__
        for f, _ in s._fields_:
            assert int(got[s.__name__ + "." + f]) == getattr(s, f).offset, s.__name__ + "." + f
    assert int(got["moe_experts"]) == moeh._L.moe_experts_size()


def test_experts_pack_threads():
    """Experts packs with moe_pack_parallel: 1, 3 and the default threads give the same layer bits."""
    rng = np.random.default_rng(8)
    E, N, K, M = 6, 40, 72, 9
    q13, s13 = moeh.quantize_weight_int8(rng.standard_normal((E, 2 * N, K)).astype(np.float32))
    q2, s2 = moeh.quantize_weight_int8(rng.standard_normal((E, K, N)).astype(np.float32))
    x = rng.standard_normal((M, K)).astype(np.float32)
    w, ids = moeh.route(rng.standard_normal((M, E)).astype(np.float32), topk=2, renormalize=True)
    outs = [moeh.Experts("int8", q13, q2, w13_scale=s13, w2_scale=s2, threads=t)(x, w, ids) for t in (1, 3, None)]
    assert np.all(np.isfinite(outs[0])) and np.abs(outs[0]).sum() > 0
    assert all(np.array_equal(outs[0], o) for o in outs[1:])

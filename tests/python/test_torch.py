"""torch.ops.moeh (torch/moeh_torch.cpp) against plain-PyTorch float64 implementations of the same math.

The oracle dequantizes the weights from their definitions (e4m3, e2m1 and e8m0 decoded here, not by the
library), rounds or quantizes the activations where the library promises to (A16 precisions: x and h to
bf16; A8 precisions: x and h per row to int8 with scale = max(amax, 1e-7) / 127 in f32), and does the
rest in float64, as tests/oracle.h does for the C tests. The error of a case is ||out - ref|| / ||ref||
over the output, with the tolerances of tests/test_layer.c: 1e-2 for bf16 outputs, 1.5e-3 for fp16.

Run: MOEH_TORCH_LIB=build/torch/moeh_torch.so PYTHONPATH=python /usr/bin/python3 -m pytest -q tests/python/test_torch.py
"""

import importlib.util
import io
import math
import os

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

try:
    import moeh.torch as mt  # registers torch.ops.moeh
except Exception as err:  # noqa: BLE001  the moeh package failed to import (libmoe?): load moeh/torch.py alone
    if "moeh_torch.so not found" in str(err):
        raise
    _here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "moeh", "torch.py")
    _spec = importlib.util.spec_from_file_location("moeh_torch_standalone", _here)
    mt = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(mt)

ops = torch.ops.moeh
M_ = mt.CPUQuantMethod
TOL = {torch.bfloat16: 1e-2, torch.float16: 1.5e-3, torch.float32: 5e-4}


pytestmark = pytest.mark.usefixtures("torch_threads")  # conftest.py: two intra-op threads per test


# ---- number formats, from their definitions ------------------------------------------------------------
def _e4m3(b):
    e, m = (b >> 3) & 15, b & 7
    v = math.ldexp(m, -9) if e == 0 else (math.nan if (e == 15 and m == 7) else math.ldexp(8 + m, e - 10))
    return -v if b & 0x80 else v


def _e2m1(c):
    e, m = (c >> 1) & 3, c & 1
    v = 0.5 * m if e == 0 else math.ldexp(2 + m, e - 2)
    return -v if c & 8 else v


E4M3 = torch.tensor([_e4m3(b) for b in range(256)], dtype=torch.float64)
E2M1 = torch.tensor([_e2m1(c) for c in range(16)], dtype=torch.float64)


def unpack4(codes, cols):
    """uint8 [..., ceil(cols/2)] two codes per byte, low nibble first -> int64 [..., cols]."""
    lo, hi = (codes & 15).long(), (codes >> 4).long()
    return torch.stack([lo, hi], dim=-1).flatten(-2)[..., :cols]


def expand(t, dim, n, size):
    """Repeats each entry along dim n times and cuts to size (block / group scales to elements)."""
    return t.repeat_interleave(n, dim=dim).narrow(dim, 0, size)


# ---- weights per precision: the operator's arguments and the float64 values they mean -------------------
def make_weights(method, E, N, K, g, wdtype=torch.bfloat16, block=(128, 128), group=64):
    """Random codes and scales. Returns (kwargs of the comp_method form, W13 f64 [E,2N,K], W2 f64 [E,K,N])."""
    a = {"w1_scale": None, "w2_scale": None, "w1_zero": None, "w2_zero": None, "block_size": None}
    shapes = [(E, 2 * N, K), (E, K, N)]
    if method == M_.UNQUANT:
        w = [(torch.randn(s, generator=g) * 0.08).to(wdtype) for s in shapes]
        deq = [t.float().bfloat16().double() for t in w]  # fp16 weights become bf16 at pack time
    elif method == M_.INT8_W8A8:
        w = [torch.randint(-127, 128, s, generator=g, dtype=torch.int8) for s in shapes]
        sc = [torch.rand(s[:2], generator=g) * 1e-3 + 5e-4 for s in shapes]
        a["w1_scale"], a["w2_scale"] = sc
        deq = [q.double() * s.double()[..., None] for q, s in zip(w, sc)]
    elif method == M_.FP8_W8A16:
        bn, bk = block
        w, deq, sc = [], [], []
        for s in shapes:
            sign = torch.randint(0, 2, s, generator=g) << 7
            ex = torch.randint(4, 9, s, generator=g) << 3
            man = torch.randint(0, 8, s, generator=g)
            q = (sign | ex | man).to(torch.uint8)
            rows, cols = s[1], s[2]
            scale = torch.rand((E, -(-rows // bn), -(-cols // bk)), generator=g) * 0.02 + 0.01
            full = expand(expand(scale.double(), 1, bn, rows), 2, bk, cols)
            w.append(q)
            sc.append(scale)
            deq.append(E4M3[q.long()] * full)
        a["w1_scale"], a["w2_scale"] = sc
        a["block_size"] = [bn, bk]
    elif method in (M_.INT4_W4A8, M_.INT4_W4A16):
        w, deq, sc, zs = [], [], [], []
        for s in shapes:
            rows, cols = s[1], s[2]
            q = torch.randint(0, 256, (E, rows, (cols + 1) // 2), generator=g, dtype=torch.uint8)
            ng = -(-cols // group)
            scale = torch.rand((E, rows, ng), generator=g) * 0.02 + 0.005
            zero = torch.randint(0, 16, (E, rows, ng), generator=g, dtype=torch.uint8)
            val = (unpack4(q, cols) - expand(zero.long(), 2, group, cols)).double() * expand(scale.double(), 2, group, cols)
            w.append(q)
            sc.append(scale)
            zs.append(zero)
            deq.append(val)
        a["w1_scale"], a["w2_scale"] = sc
        a["w1_zero"], a["w2_zero"] = zs
        a["block_size"] = [group]
    elif method == M_.MXFP4:
        w, deq, sc = [], [], []
        for s in shapes:
            rows, cols = s[1], s[2]
            q = torch.randint(0, 256, (E, rows, (cols + 1) // 2), generator=g, dtype=torch.uint8)
            e8 = torch.randint(121, 126, (E, rows, -(-cols // 32)), generator=g, dtype=torch.uint8)
            val = E2M1[unpack4(q, cols)] * expand(torch.pow(2.0, e8.double() - 127), 2, 32, cols)
            w.append(q)
            sc.append(e8)
            deq.append(val)
        a["w1_scale"], a["w2_scale"] = sc
    else:
        raise ValueError(method)
    return a | {"w1": w[0], "w2": w[1]}, deq[0], deq[1]


def is_a8(method):
    return method in (M_.INT8_W8A8, M_.INT4_W4A8)


def quant_rows(v):
    """Per-row symmetric int8 as the library does it (f32 arithmetic), returned as float64 values."""
    v = v.float()
    scale = torch.clamp(v.abs().amax(dim=-1, keepdim=True), min=1e-7) / 127
    return (torch.clamp(torch.round(v / scale), -127, 127) * scale).double()


def act_in(v, a8):
    return quant_rows(v) if a8 else v.float().bfloat16().double()


def activation(gu, N, act, alpha=1.702, limit=7.0):
    g, u = gu[:, :N], gu[:, N:]
    if act == "silu":
        return F.silu(g) * u
    if act == "gelu_tanh":
        return F.gelu(g, approximate="tanh") * u
    g = torch.clamp(g, max=limit)
    u = torch.clamp(u, -limit, limit)
    return g * torch.sigmoid(alpha * g) * (u + 1)


def oracle(x, W13, W2, tw, ti, a8, b13=None, b2=None, act="silu", alpha=1.702, limit=7.0):
    """float64 MoE layer: sum_j w[m,j] * (act(x W13[e]^T + b13) W2[e]^T + b2)."""
    M, K = x.shape
    E, N = W13.shape[0], W13.shape[1] // 2
    xa = act_in(x, a8)
    out = torch.zeros(M, K, dtype=torch.float64)
    for e in range(E):
        m_idx, j_idx = (ti.long() == e).nonzero(as_tuple=True)
        if len(m_idx) == 0:
            continue
        gu = xa[m_idx] @ W13[e].T
        if b13 is not None:
            gu = gu + b13[e].double()
        h = act_in(activation(gu, N, act, alpha, limit), a8)
        y = h @ W2[e].T
        if b2 is not None:
            y = y + b2[e].double()
        out.index_add_(0, m_idx, y * tw[m_idx, j_idx].double()[:, None])
    return out


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def routing(M, E, topk, g):
    logits = torch.randn(M, E, generator=g)
    tw, ti = torch.topk(torch.softmax(logits, -1), topk)
    return tw / tw.sum(-1, keepdim=True), ti.int()


def fused_b_form(x, a, method, tw, ti, inplace=False, is_vnni=False):
    """The 14-argument form, with prepacking for is_vnni (scales passed as SGLang does; not read)."""
    w1, w2 = a["w1"], a["w2"]
    if is_vnni:
        w1, w2 = ops.convert_weight_packed_moe(w1, w2, int(method), a["w1_scale"], a["w2_scale"], None, None,
                                               a["block_size"])
    return ops.fused_experts_cpu(x, w1, w2, tw, ti, inplace, method == M_.INT8_W8A8, method == M_.FP8_W8A16,
                                 a["w1_scale"], a["w2_scale"], a["block_size"], None, None, is_vnni)


def fused_method_form(x, a, method, tw, ti, inplace=False, is_vnni=False, **kw):
    w1, w2 = a["w1"], a["w2"]
    if is_vnni:
        w1, w2 = ops.convert_weight_packed_moe(w1, w2, int(method), a["w1_scale"], a["w2_scale"], a["w1_zero"],
                                               a["w2_zero"], a["block_size"], kw.get("interleaved", False))
    return ops.fused_experts_cpu(x, w1, w2, tw, ti, inplace, int(method), a["w1_scale"], a["w2_scale"], a["w1_zero"],
                                 a["w2_zero"], a["block_size"], kw.get("w1_bias"), kw.get("w2_bias"),
                                 kw.get("alpha"), kw.get("limit"), is_vnni)


# ---- fused_experts_cpu ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("xdtype", [torch.bfloat16, torch.float16, torch.float32])  # float32: an extension
@pytest.mark.parametrize("wdtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("is_vnni", [False, True])
def test_fused_unquantized(xdtype, wdtype, is_vnni):
    g = torch.Generator().manual_seed(1)
    E, N, K, M, topk = 8, 80, 192, 37, 3  # N and M not multiples of 32
    a, W13, W2 = make_weights(M_.UNQUANT, E, N, K, g, wdtype)
    x = torch.randn(M, K, generator=g).to(xdtype)
    tw, ti = routing(M, E, topk, g)
    out = fused_b_form(x, a, M_.UNQUANT, tw, ti, is_vnni=is_vnni)
    assert out.dtype == xdtype and out.shape == x.shape
    assert rel_err(out, oracle(x, W13, W2, tw, ti, False)) < TOL[xdtype]
    # inplace: the result lands in hidden_states, which is returned, bitwise equal
    y = x.clone()
    res = fused_b_form(y, a, M_.UNQUANT, tw, ti, inplace=True, is_vnni=is_vnni)
    assert res.data_ptr() == y.data_ptr() and torch.equal(y, out)


@pytest.mark.parametrize("xdtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("is_vnni", [False, True])
def test_fused_int8_w8a8(xdtype, is_vnni):
    g = torch.Generator().manual_seed(2)
    E, N, K, M, topk = 8, 64, 160, 45, 2
    a, W13, W2 = make_weights(M_.INT8_W8A8, E, N, K, g)
    x = torch.randn(M, K, generator=g).to(xdtype)
    tw, ti = routing(M, E, topk, g)
    out = fused_b_form(x, a, M_.INT8_W8A8, tw, ti, is_vnni=is_vnni)
    assert rel_err(out, oracle(x, W13, W2, tw, ti, True)) < TOL[xdtype]
    # SGLang's loaded scales are [E, 2N, 1]: the same numbers
    a3 = dict(a, w1_scale=a["w1_scale"][..., None], w2_scale=a["w2_scale"][..., None])
    assert torch.equal(fused_b_form(x, a3, M_.INT8_W8A8, tw, ti, is_vnni=is_vnni), out)
    y = x.clone()
    fused_b_form(y, a, M_.INT8_W8A8, tw, ti, inplace=True, is_vnni=is_vnni)
    assert torch.equal(y, out)


@pytest.mark.parametrize("block", [(128, 128), (16, 32)])
@pytest.mark.parametrize("xdtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("is_vnni", [False, True])
def test_fused_fp8_w8a16(block, xdtype, is_vnni):
    g = torch.Generator().manual_seed(3)
    # 2N = 160 and K = 200: partial blocks in both directions; with bn = 128 gate and up share a block
    E, N, K, M, topk = 6, 80, 200, 33, 2
    a, W13, W2 = make_weights(M_.FP8_W8A16, E, N, K, g, block=block)
    x = torch.randn(M, K, generator=g).to(xdtype)
    tw, ti = routing(M, E, topk, g)
    out = fused_b_form(x, a, M_.FP8_W8A16, tw, ti, is_vnni=is_vnni)
    assert rel_err(out, oracle(x, W13, W2, tw, ti, False)) < TOL[xdtype]
    # the comp_method form (moe_comp_method 2) computes the same
    assert torch.equal(fused_method_form(x, a, M_.FP8_W8A16, tw, ti, is_vnni=is_vnni), out)


@pytest.mark.parametrize("method", [M_.INT4_W4A8, M_.INT4_W4A16])
@pytest.mark.parametrize("xdtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("is_vnni", [False, True])
def test_fused_int4(method, xdtype, is_vnni):
    g = torch.Generator().manual_seed(4)
    E, N, K, M, topk = 8, 96, 224, 21, 2  # K = 224: groups of 64 with a tail of 32
    a, W13, W2 = make_weights(method, E, N, K, g, group=64)
    x = torch.randn(M, K, generator=g).to(xdtype)
    tw, ti = routing(M, E, topk, g)
    out = fused_method_form(x, a, method, tw, ti, is_vnni=is_vnni)
    assert rel_err(out, oracle(x, W13, W2, tw, ti, is_a8(method))) < TOL[xdtype]
    # 13-argument form (no biases), and the group inferred from the scales when K divides evenly
    w1, w2 = a["w1"], a["w2"]
    if is_vnni:
        w1, w2 = ops.convert_weight_packed_moe(w1, w2, int(method), a["w1_scale"], a["w2_scale"], a["w1_zero"],
                                               a["w2_zero"], a["block_size"])
    out13 = ops.fused_experts_cpu(x, w1, w2, tw, ti, False, int(method), a["w1_scale"], a["w2_scale"], a["w1_zero"],
                                  a["w2_zero"], a["block_size"], is_vnni)
    assert torch.equal(out13, out)


def test_fused_int4_group_inferred():
    g = torch.Generator().manual_seed(5)
    E, N, K, M = 4, 64, 256, 9
    a, W13, W2 = make_weights(M_.INT4_W4A8, E, N, K, g, group=64)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, 2, g)
    ref = fused_method_form(x, a, M_.INT4_W4A8, tw, ti)
    assert torch.equal(fused_method_form(x, dict(a, block_size=None), M_.INT4_W4A8, tw, ti), ref)
    assert rel_err(ref, oracle(x, W13, W2, tw, ti, True)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("is_vnni", [False, True])
def test_fused_mxfp4(is_vnni):
    g = torch.Generator().manual_seed(6)
    E, N, K, M, topk = 8, 64, 192, 30, 4
    a, W13, W2 = make_weights(M_.MXFP4, E, N, K, g)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, topk, g)
    out = fused_method_form(x, a, M_.MXFP4, tw, ti, is_vnni=is_vnni)
    assert rel_err(out, oracle(x, W13, W2, tw, ti, False)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("method", [M_.UNQUANT, M_.MXFP4])
@pytest.mark.parametrize("is_vnni", [False, True])
def test_fused_gpt_oss(method, is_vnni):
    """alpha/limit: SwiGLU-OAI over the reference's interleaved gate/up rows, with f32 biases."""
    g = torch.Generator().manual_seed(7)
    E, N, K, M, topk = 4, 64, 128, 19, 2
    a, W13, W2 = make_weights(method, E, N, K, g)
    # what the caller holds: rows interleaved (2i gate i, 2i+1 up i), scales too
    inter = lambda t: torch.stack([t[:, :N], t[:, N:]], dim=2).flatten(1, 2)  # noqa: E731
    ai = dict(a, w1=inter(a["w1"]), w1_scale=inter(a["w1_scale"]) if a["w1_scale"] is not None else None)
    b13 = torch.randn(E, 2 * N, generator=g) * 0.5
    b2 = torch.randn(E, K, generator=g) * 0.5
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, topk, g)
    out = fused_method_form(x, ai, method, tw, ti, is_vnni=is_vnni, interleaved=True, w1_bias=inter(b13), w2_bias=b2,
                            alpha=1.702, limit=7.0)
    ref = oracle(x, W13, W2, tw, ti, False, b13=b13, b2=b2, act="swiglu_oai", alpha=1.702, limit=7.0)
    assert rel_err(out, ref) < TOL[torch.bfloat16]


def test_fused_bias_and_activation_string():
    g = torch.Generator().manual_seed(8)
    E, N, K, M = 4, 32, 96, 11
    a, W13, W2 = make_weights(M_.UNQUANT, E, N, K, g)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, 2, g)
    b13, b2 = torch.randn(E, 2 * N, generator=g), torch.randn(E, K, generator=g)
    out = ops.fused_experts_cpu(x, a["w1"], a["w2"], tw, ti, False, 0, None, None, None, None, None, b13, b2, None,
                                None, False, "silu")
    assert rel_err(out, oracle(x, W13, W2, tw, ti, False, b13=b13, b2=b2)) < TOL[torch.bfloat16]
    out = ops.fused_experts_cpu(x, a["w1"], a["w2"], tw, ti, False, 0, None, None, None, None, None, None, None, None,
                                None, False, "gelu_tanh")
    assert rel_err(out, oracle(x, W13, W2, tw, ti, False, act="gelu_tanh")) < TOL[torch.bfloat16]
    with pytest.raises(RuntimeError, match="unsupported activation"):
        ops.fused_experts_cpu(x, a["w1"], a["w2"], tw, ti, False, 0, None, None, None, None, None, None, None, None,
                              None, False, "gelu")


def test_fused_skipped_ids_and_f32_weights():
    g = torch.Generator().manual_seed(9)
    E, N, K, M = 4, 32, 64, 6
    a, W13, W2 = make_weights(M_.UNQUANT, E, N, K, g)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, 2, g)
    ti[0, 1] = -1  # -1 = skip
    out = ops.fused_experts_cpu(x, a["w1"], a["w2"], tw.bfloat16(), ti.long(), False, False, False, None, None, None,
                                None, None, False)
    ref = oracle(x, W13, W2, tw.bfloat16().float(), ti.clamp(min=-1), False)
    assert rel_err(out, ref) < TOL[torch.bfloat16]


# ---- shared_expert_cpu ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", [M_.UNQUANT, M_.INT8_W8A8, M_.FP8_W8A16])
@pytest.mark.parametrize("is_vnni", [False, True])
def test_shared_expert(method, is_vnni):
    g = torch.Generator().manual_seed(10)
    N, K, M = 96, 160, 23
    a, W13, W2 = make_weights(method, 1, N, K, g, block=(64, 128))
    a2 = {k: (v[0] if torch.is_tensor(v) else v) for k, v in a.items()}  # 2-D: [2N, K], [K, N], scales
    w1, w2 = a2["w1"], a2["w2"]
    if is_vnni:
        w1, w2 = ops.convert_weight_packed_moe(w1, w2, int(method), a2["w1_scale"], a2["w2_scale"], None, None,
                                               a2["block_size"])
    x = torch.randn(M, K, generator=g).bfloat16()
    routed = torch.randn(M, K, generator=g).bfloat16()
    i8, f8 = method == M_.INT8_W8A8, method == M_.FP8_W8A16
    ones = torch.ones(M, 1)
    zeros = torch.zeros(M, 1, dtype=torch.int32)
    shared = oracle(x, W13, W2, ones, zeros, is_a8(method))
    out = ops.shared_expert_cpu(x, w1, w2, routed, 2.5, False, i8, f8, a2["w1_scale"], a2["w2_scale"],
                                a2["block_size"], None, None, is_vnni)
    assert rel_err(out, shared + 2.5 * routed.double()) < TOL[torch.bfloat16]
    # the 12-argument form: without the routed output it is the shared expert alone
    out_opt = ops.shared_expert_cpu(x, w1, w2, None, None, False, i8, f8, a2["w1_scale"], a2["w2_scale"],
                                    a2["block_size"], is_vnni)
    assert rel_err(out_opt, shared) < TOL[torch.bfloat16]
    out_opt2 = ops.shared_expert_cpu(x, w1, w2, routed, 2.5, False, i8, f8, a2["w1_scale"], a2["w2_scale"],
                                     a2["block_size"], is_vnni)
    assert torch.equal(out_opt2, out)
    y = x.clone()
    res = ops.shared_expert_cpu(y, w1, w2, routed, 2.5, True, i8, f8, a2["w1_scale"], a2["w2_scale"],
                                a2["block_size"], None, None, is_vnni)
    assert res.data_ptr() == y.data_ptr() and torch.equal(y, out)
    with pytest.raises(RuntimeError, match="expect fused_experts_out"):
        ops.shared_expert_cpu(x, w1, w2, None, 1.0, False, i8, f8, a2["w1_scale"], a2["w2_scale"],
                              a2["block_size"], is_vnni)


# ---- routing ---------------------------------------------------------------------------------------------------
def dense(w, ids, E):
    return torch.zeros(w.shape[0], E, dtype=torch.float64).scatter_(1, ids.long(), w.double())


def topk_(v, k):
    """top-k with ties to the lower index (the library's order; bf16 logits tie often)."""
    vals, idx = torch.sort(v, dim=-1, descending=True, stable=True)
    return vals[..., :k], idx[..., :k]


def ref_softmax(logits, topk, renorm):
    p = torch.softmax(logits.double(), -1)
    w, ids = topk_(p, topk)
    return (w / w.sum(-1, keepdim=True) if renorm else w), ids


def ref_grouped(logits, topk, renorm, G, TG):
    """DeepSeek-V2 (SGLang's native grouped_topk)."""
    scores = torch.softmax(logits.double(), -1)
    M, E = scores.shape
    gs = scores.view(M, G, -1).max(-1).values
    gidx = topk_(gs, TG)[1]
    mask = torch.zeros(M, G, dtype=torch.float64).scatter_(1, gidx, 1).repeat_interleave(E // G, 1)
    w, ids = topk_(scores.masked_fill(mask == 0, 0.0), topk)
    return (w / w.sum(-1, keepdim=True) if renorm else w), ids


def ref_biased(logits, bias, topk, renorm, G, TG, rsf):
    """DeepSeek-V3 (SGLang's native biased_grouped_topk): weights are the unbiased sigmoid scores."""
    scores = torch.sigmoid(logits.double())
    M, E = scores.shape
    choice = scores + bias.double()
    gs = topk_(choice.view(M, G, -1), 2)[0].sum(-1)
    gidx = topk_(gs, TG)[1]
    mask = torch.zeros(M, G, dtype=torch.float64).scatter_(1, gidx, 1).repeat_interleave(E // G, 1)
    ids = topk_(choice.masked_fill(mask == 0, float("-inf")), topk)[1]
    w = scores.gather(1, ids)
    if renorm:
        w = w / w.sum(-1, keepdim=True)
    return w * (1.0 if rsf is None else rsf), ids


@pytest.mark.parametrize("gdtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("renorm", [False, True])
def test_topk_softmax(gdtype, renorm):
    g = torch.Generator().manual_seed(11)
    M, E, topk = 50, 64, 8
    x = torch.randn(M, 16, generator=g).to(gdtype)
    logits = torch.randn(M, E, generator=g).to(gdtype)
    w, ids = ops.topk_softmax_cpu(hidden_states=x, gating_output=logits, topk=topk, renormalize=renorm)
    assert w.dtype == torch.float32 and ids.dtype == torch.int32 and w.shape == (M, topk)
    rw, rids = ref_softmax(logits.float(), topk, renorm)
    assert torch.allclose(dense(w, ids, E), dense(rw, rids, E), atol=1e-6)


def test_topk_sigmoid():
    g = torch.Generator().manual_seed(12)
    M, E = 20, 16
    logits = torch.randn(M, E, generator=g)
    w, ids = ops.topk_sigmoid_cpu(logits, logits, 1, False)
    assert torch.equal(ids[:, 0].long(), logits.argmax(-1))
    assert torch.allclose(w[:, 0], torch.sigmoid(logits.max(-1).values), atol=1e-6)


@pytest.mark.parametrize("renorm", [False, True])
def test_grouped_topk(renorm):
    g = torch.Generator().manual_seed(13)
    M, E, topk, G, TG = 40, 64, 6, 8, 3
    logits = torch.randn(M, E, generator=g)
    w, ids = ops.grouped_topk_cpu(logits, logits, topk, renorm, G, TG, 0, None, None)
    rw, rids = ref_grouped(logits, topk, renorm, G, TG)
    assert torch.allclose(dense(w, ids, E), dense(rw, rids, E), atol=1e-6)
    with pytest.raises(RuntimeError, match="num_fused_shared_experts"):
        ops.grouped_topk_cpu(logits, logits, topk, renorm, G, TG, 1, None, None)
    with pytest.raises(RuntimeError, match="num_token_non_padded"):
        ops.grouped_topk_cpu(logits, logits, topk, renorm, G, TG, 0, None, torch.tensor(3))


@pytest.mark.parametrize("renorm", [False, True])
@pytest.mark.parametrize("rsf", [None, 2.5])
@pytest.mark.parametrize("gdtype", [torch.float32, torch.bfloat16])
def test_biased_grouped_topk(renorm, rsf, gdtype):
    g = torch.Generator().manual_seed(14)
    M, E, topk, G, TG = 33, 256, 8, 8, 4  # DeepSeek-V3's configuration
    logits = torch.randn(M, E, generator=g).to(gdtype)
    bias = (torch.randn(E, generator=g) * 0.1).to(gdtype)
    x = torch.randn(M, 8, generator=g).bfloat16()
    w, ids = ops.biased_grouped_topk_cpu(x, logits, bias, topk, renorm, G, TG, 0, rsf, None)
    rw, rids = ref_biased(logits.float(), bias.float(), topk, renorm, G, TG, rsf)
    assert torch.allclose(dense(w, ids, E), dense(rw, rids, E), atol=1e-5)
    with pytest.raises(RuntimeError, match="Bias shape mismatch"):
        ops.biased_grouped_topk_cpu(x, logits, bias[:-1], topk, renorm, G, TG, 0, rsf, None)


# ---- threads, packing, errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("method", list(M_))
def test_threads_bitwise(method):
    """torch.set_num_threads(1) and (2) give the same bits (prepacking and the layer alike)."""
    g = torch.Generator().manual_seed(15)
    E, N, K, M, topk = 16, 128, 256, 100, 4
    a, _, _ = make_weights(method, E, N, K, g)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, topk, g)
    outs, packs = [], []
    for n in (1, 2, 1):
        torch.set_num_threads(n)
        assert torch.get_num_threads() == n
        outs.append(fused_method_form(x, a, method, tw, ti, is_vnni=False))
        packs.append(ops.convert_weight_packed_moe(a["w1"], a["w2"], int(method), a["w1_scale"], a["w2_scale"],
                                                   a["w1_zero"], a["w2_zero"], a["block_size"]))
        outs.append(ops.fused_experts_cpu(x, *packs[0], tw, ti, False, int(method), None, None, None, None, None, True))
    for o in outs[1:]:
        assert torch.equal(o, outs[0])
    for p in packs[1:]:
        assert torch.equal(p[0], packs[0][0]) and torch.equal(p[1], packs[0][1])


def test_no_second_thread_pool():
    """The operators run on PyTorch's intra-op pool: calling them starts no thread."""
    torch.set_num_threads(2)
    (torch.randn(1 << 22) * 2).sum()  # PyTorch's pool is up
    g = torch.Generator().manual_seed(19)
    E, N, K, M = 8, 128, 256, 64
    a, _, _ = make_weights(M_.INT8_W8A8, E, N, K, g)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, 2, g)
    threads = len(os.listdir("/proc/self/task"))
    for _ in range(3):
        fused_b_form(x, a, M_.INT8_W8A8, tw, ti, is_vnni=True)
        ops.topk_softmax_cpu(x, torch.randn(M, E), 2, True)
    assert len(os.listdir("/proc/self/task")) == threads


def test_python_wrappers():
    g = torch.Generator().manual_seed(20)
    E, N, K, M = 4, 64, 128, 9
    a, W13, W2 = make_weights(M_.INT4_W4A8, E, N, K, g)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, 2, g)
    p1, p2 = mt.prepack(a["w1"], a["w2"], mt.CPUQuantMethod.INT4_W4A8, a["w1_scale"], a["w2_scale"], a["w1_zero"],
                        a["w2_zero"], block_size=(64,))
    out = mt.fused_experts(x, p1, p2, tw, ti, mt.CPUQuantMethod.INT4_W4A8, is_vnni=True)
    assert torch.equal(out, fused_method_form(x, a, M_.INT4_W4A8, tw, ti))
    assert rel_err(out, oracle(x, W13, W2, tw, ti, True)) < TOL[torch.bfloat16]
    b, B13, B2 = make_weights(M_.UNQUANT, 1, N, K, g)
    sh = mt.shared_expert(x, b["w1"][0], b["w2"][0], out, 0.5)
    ref = oracle(x, B13, B2, torch.ones(M, 1), torch.zeros(M, 1, dtype=torch.int32), False) + 0.5 * out.double()
    assert rel_err(sh, ref) < TOL[torch.bfloat16]


def test_packed_tensor_save_load_and_misaligned():
    g = torch.Generator().manual_seed(16)
    E, N, K, M = 4, 64, 128, 10
    a, W13, W2 = make_weights(M_.INT8_W8A8, E, N, K, g)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, 2, g)
    p1, p2 = ops.convert_weight_packed_moe(a["w1"], a["w2"], 1, a["w1_scale"], a["w2_scale"])
    info = ops.packed_weight_info(p1)
    assert info.startswith("W13 int8 E=4 N=64 K=128") and ops.packed_weight_info(p2).startswith("W2 int8")
    ref = ops.fused_experts_cpu(x, p1, p2, tw, ti, False, True, False, None, None, None, None, None, True)
    buf = io.BytesIO()
    torch.save((p1, p2), buf)
    buf.seek(0)
    q1, q2 = torch.load(buf)
    assert torch.equal(ops.fused_experts_cpu(x, q1, q2, tw, ti, False, True, False, None, None, None, None, None, True),
                       ref)
    m1 = torch.cat([torch.zeros(1, dtype=torch.uint8), p1])[1:]  # payload not 64-byte aligned
    assert m1.data_ptr() % 64 != 0
    assert torch.equal(ops.fused_experts_cpu(x, m1, p2, tw, ti, False, True, False, None, None, None, None, None, True),
                       ref)
    with pytest.raises(RuntimeError, match="packed W13 as w1"):
        ops.fused_experts_cpu(x, p2, p1, tw, ti, False, True, False, None, None, None, None, None, True)
    with pytest.raises(RuntimeError, match="the call asks for"):
        ops.fused_experts_cpu(x, p1, p2, tw, ti, False, False, False, None, None, None, None, None, True)
    with pytest.raises(RuntimeError, match="not a packed weight"):
        ops.fused_experts_cpu(x, a["w1"], a["w2"], tw, ti, False, True, False, None, None, None, None, None, True)
    bad = p1.clone()
    bad[0] = 0
    with pytest.raises(RuntimeError, match="bad magic"):
        ops.fused_experts_cpu(x, bad, p2, tw, ti, False, True, False, None, None, None, None, None, True)
    with pytest.raises(RuntimeError, match="payload bytes"):
        ops.fused_experts_cpu(x, p1[:-64], p2, tw, ti, False, True, False, None, None, None, None, None, True)


def test_static_activation_scales_rejected():
    g = torch.Generator().manual_seed(17)
    E, N, K, M = 4, 32, 64, 5
    a, _, _ = make_weights(M_.INT8_W8A8, E, N, K, g)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, 2, g)
    s = torch.tensor([0.1])
    for a1, a2 in ((s, None), (None, s)):
        with pytest.raises(RuntimeError, match="static quantization for activation not supported"):
            ops.fused_experts_cpu(x, a["w1"], a["w2"], tw, ti, False, True, False, a["w1_scale"], a["w2_scale"], None,
                                  a1, a2, False)
        with pytest.raises(RuntimeError, match="static quantization for activation not supported"):
            ops.shared_expert_cpu(x, a["w1"][0], a["w2"][0], x, 1.0, False, True, False, a["w1_scale"][0],
                                  a["w2_scale"][0], None, a1, a2, False)


def test_errors():
    g = torch.Generator().manual_seed(18)
    E, N, K, M = 4, 32, 64, 5
    a, _, _ = make_weights(M_.UNQUANT, E, N, K, g)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, 2, g)

    def call(x=x, w1=a["w1"], w2=a["w2"], tw=tw, ti=ti, int8=False, fp8=False, s1=None, s2=None, bs=None):
        return ops.fused_experts_cpu(x, w1, w2, tw, ti, False, int8, fp8, s1, s2, bs, None, None, False)

    with pytest.raises(RuntimeError, match="expert id outside"):
        call(ti=torch.full_like(ti, E))
    with pytest.raises(RuntimeError, match="missing w1_scale for INT8_W8A8"):
        call(w1=a["w1"].to(torch.int8), w2=a["w2"].to(torch.int8), int8=True)
    with pytest.raises(RuntimeError, match="missing block_size for fp8"):
        call(w1=a["w1"].view(torch.uint8)[..., ::2].contiguous(), w2=a["w2"].view(torch.uint8)[..., ::2].contiguous(),
             fp8=True, s1=torch.ones(E, 1, 1), s2=torch.ones(E, 1, 1))
    with pytest.raises(RuntimeError, match="torch.uint8"):
        call(fp8=True, s1=torch.ones(E, 1, 1), s2=torch.ones(E, 1, 1), bs=[128, 128])
    with pytest.raises(RuntimeError, match="exclusive"):
        call(int8=True, fp8=True)
    with pytest.raises(RuntimeError, match="hidden_states has K"):
        call(x=torch.randn(M, K + 32).bfloat16())
    with pytest.raises(RuntimeError, match="unknown moe_comp_method"):
        ops.fused_experts_cpu(x, a["w1"], a["w2"], tw, ti, False, 9, None, None, None, None, None, False)
    with pytest.raises(RuntimeError, match="rows must be 2N"):
        call(w1=a["w1"][:, :-1])
    with pytest.raises(RuntimeError, match="do not fit W13"):
        call(w1=a["w1"][:, :, :-2])

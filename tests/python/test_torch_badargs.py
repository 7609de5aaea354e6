"""torch.ops.moeh under bad arguments: every tensor argument of every operator, one mutation at a time
(another dtype, one more dimension, the last dimension one short, a view that is not contiguous, no
rows), None for each scale a precision needs, expert ids out of range, and packed tensors of another
precision or layer. Each call must either raise an exception whose message names the argument, or,
where the mutation keeps the call valid (a non-contiguous view of the same values), return exactly the
baseline's output. A crash fails the whole run.

Run: MOEH_TORCH_LIB=build/torch/moeh_torch.so PYTHONPATH=python /usr/bin/python3 -m pytest -q tests/python/test_torch_badargs.py
"""

import pytest

torch = pytest.importorskip("torch")

from test_torch import M_, make_weights, ops, routing  # noqa: E402  (same directory; loads the operators)

pytestmark = pytest.mark.usefixtures("torch_threads")  # conftest.py: two intra-op threads per test

E, N, K, M, TOPK = 4, 32, 64, 5, 2
ERRORS = (RuntimeError, ValueError, TypeError, IndexError)


def _noncontig(t):
    """The same values and shape, every stride doubled: not contiguous."""
    return t.unsqueeze(-1).expand(*t.shape, 2)[..., 0]


def _other_dtype(t):
    return t.to(torch.int32) if t.is_floating_point() else t.to(torch.float64)


MUTATIONS = {
    "dtype": _other_dtype,
    "rank": lambda t: t.unsqueeze(0),
    "shape": lambda t: t.narrow(-1, 0, t.shape[-1] - 1) if t.shape[-1] > 1 else torch.cat([t, t], -1),
    "noncontig": _noncontig,
    "empty": lambda t: t.narrow(0, 0, 0),
}

# Mutations a call may accept: the operator then gives the baseline's output (bitwise).
ACCEPTED = {"noncontig"}
SCALES = ("w1_scale", "w2_scale", "w1_zero", "w2_zero")


def allowed(case, arg, mut):
    """(argument, mutation) pairs an operator accepts by design: the reason, or None."""
    if "packed" in case and arg in SCALES:
        return "packed weights carry their scales: the scale arguments are not read (SGLang passes them)"
    if "INT8" in case and arg in SCALES and mut == "rank":
        return "int8 channel scales are taken by element count ([E, 2N] or SGLang's [E, 2N, 1])"
    if case.startswith("topk") and arg == "hidden_states" and mut in ("dtype", "shape"):
        return "routing reads only the token count of hidden_states"
    if case in ("topk-softmax", "topk-sigmoid") and arg == "gating_output" and mut == "shape":
        return "one expert fewer is another valid router"
    if arg == "correction_bias" and mut == "rank":
        return "the bias is taken by element count"
    return None


def _case(method, packed):
    g = torch.Generator().manual_seed(40 + int(method))
    a, _, _ = make_weights(method, E, N, K, g)
    x = torch.randn(M, K, generator=g).bfloat16()
    tw, ti = routing(M, E, TOPK, g)
    w1, w2 = a["w1"], a["w2"]
    if packed:
        w1, w2 = ops.convert_weight_packed_moe(w1, w2, int(method), a["w1_scale"], a["w2_scale"], a["w1_zero"],
                                               a["w2_zero"], a["block_size"])
    args = {"hidden_states": x, "w1": w1, "w2": w2, "topk_weights": tw, "topk_ids": ti, "w1_scale": a["w1_scale"],
            "w2_scale": a["w2_scale"], "w1_zero": a["w1_zero"], "w2_zero": a["w2_zero"]}
    return args, a["block_size"]


def _fused(method, packed):
    args, bs = _case(method, packed)

    def call(v):
        return ops.fused_experts_cpu(v["hidden_states"], v["w1"], v["w2"], v["topk_weights"], v["topk_ids"], False,
                                     int(method), v["w1_scale"], v["w2_scale"], v["w1_zero"], v["w2_zero"], bs, None,
                                     None, None, None, packed)
    return args, call


def _shared(method, packed):
    args, bs = _case(method, packed)
    for k in ("topk_weights", "topk_ids"):
        del args[k]
    args["fused_experts_out"] = torch.randn(M, K).bfloat16()
    if not packed:  # one expert: the [E, ...] tensors' first slices
        for k in ("w1", "w2", "w1_scale", "w2_scale", "w1_zero", "w2_zero"):
            if args[k] is not None:
                args[k] = args[k][0].contiguous()
    i8, f8 = method == M_.INT8_W8A8, method == M_.FP8_W8A16

    def call(v):
        return ops.shared_expert_cpu(v["hidden_states"], v["w1"], v["w2"], v["fused_experts_out"], 1.5, False, i8, f8,
                                     v["w1_scale"], v["w2_scale"], bs, None, None, packed)
    return args, call


def _topk(kind):
    g = torch.Generator().manual_seed(60)
    args = {"hidden_states": torch.randn(M, K, generator=g).bfloat16(), "gating_output": torch.randn(M, 8, generator=g)}
    if kind == "biased":
        args["correction_bias"] = torch.rand(8, generator=g)

    def call(v):
        if kind == "softmax":
            return ops.topk_softmax_cpu(v["hidden_states"], v["gating_output"], 2, True)
        if kind == "sigmoid":
            return ops.topk_sigmoid_cpu(v["hidden_states"], v["gating_output"], 2, True)
        if kind == "grouped":
            return ops.grouped_topk_cpu(v["hidden_states"], v["gating_output"], 2, True, 4, 2, 0, None, None)
        return ops.biased_grouped_topk_cpu(v["hidden_states"], v["gating_output"], v["correction_bias"], 2, True, 4, 2,
                                           0, None, None)
    return args, call


METHODS = [M_.UNQUANT, M_.INT8_W8A8, M_.FP8_W8A16, M_.INT4_W4A8, M_.INT4_W4A16, M_.MXFP4]
CASES = ([(f"fused-{m.name}-{'packed' if p else 'plain'}", lambda m=m, p=p: _fused(m, p)) for m in METHODS for p in (0, 1)]
         + [(f"shared-{m.name}-plain", lambda m=m: _shared(m, False)) for m in (M_.UNQUANT, M_.INT8_W8A8, M_.FP8_W8A16)]
         + [(f"topk-{k}", lambda k=k: _topk(k)) for k in ("softmax", "sigmoid", "grouped", "biased")])


def _same(a, b):
    if isinstance(a, (tuple, list)):
        return all(_same(x, y) for x, y in zip(a, b))
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_walk(name, make):
    args, call = make()
    base = call(args)
    bad = []
    for arg, value in args.items():
        if not isinstance(value, torch.Tensor):
            continue
        for mut, fn in MUTATIONS.items():
            if allowed(name, arg, mut):
                continue
            try:
                v = dict(args, **{arg: fn(value)})
            except RuntimeError:
                continue  # the mutation does not apply to this tensor
            try:
                out = call(v)
            except ERRORS as err:
                if arg not in str(err):
                    bad.append(f"{arg} {mut}: message does not name it: {str(err).splitlines()[0]!r}")
                continue
            if mut not in ACCEPTED or not _same(out, base):
                bad.append(f"{arg} {mut}: accepted" + ("" if mut in ACCEPTED else " (should fail)"))
    assert not bad, f"{name}:\n  " + "\n  ".join(bad)


NEEDS = {M_.INT8_W8A8: ("w1_scale", "w2_scale"), M_.FP8_W8A16: ("w1_scale", "w2_scale"),
         M_.INT4_W4A8: SCALES, M_.INT4_W4A16: SCALES, M_.MXFP4: ("w1_scale", "w2_scale")}


@pytest.mark.parametrize("method", list(NEEDS), ids=[m.name for m in NEEDS])
def test_missing_scales(method):
    """None for each scale or zero point the precision needs: an error naming it."""
    args, call = _fused(method, False)
    for arg in NEEDS[method]:
        with pytest.raises(ERRORS, match=arg):
            call(dict(args, **{arg: None}))


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "packed"])
def test_expert_ids(packed):
    """Expert ids past the last expert or below -1, as int32 and int64: an error naming topk_ids."""
    args, call = _fused(M_.UNQUANT, packed)
    ti = args["topk_ids"]
    for bad in (torch.full_like(ti, E), torch.full_like(ti, -2), ti.long().masked_fill(ti == ti[0, 0], E + 7)):
        with pytest.raises(ERRORS, match="topk_ids"):
            call(dict(args, topk_ids=bad))


def test_mismatched_packed():
    """Packed w1 and w2 of different precisions or different experts' shapes: an error naming them."""
    a8, call8 = _fused(M_.INT8_W8A8, True)
    a16, _ = _fused(M_.UNQUANT, True)
    with pytest.raises(ERRORS, match="w2"):
        call8(dict(a8, w2=a16["w2"]))
    g = torch.Generator().manual_seed(70)
    other, _, _ = make_weights(M_.INT8_W8A8, E + 2, N, K, g)
    w1o, w2o = ops.convert_weight_packed_moe(other["w1"], other["w2"], int(M_.INT8_W8A8), other["w1_scale"],
                                             other["w2_scale"])
    with pytest.raises(ERRORS, match="w1|w2"):
        call8(dict(a8, w2=w2o))
    with pytest.raises(ERRORS, match="w1|w2"):
        call8(dict(a8, w1=w1o))

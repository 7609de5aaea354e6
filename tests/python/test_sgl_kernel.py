"""SGLang-style engine code on moeh through the one-line switch (``import moeh.sgl_kernel``).

The cases are those of SGLang's CPU MoE tests (test/srt/cpu: test_moe.py, test_shared_expert.py),
written anew here: their shapes, float references and element-wise tolerances, called the way an
engine calls them: ``torch.ops.sgl_kernel.convert_weight_packed`` on each weight, then the operators
with ``is_vnni=True``. Each case also runs through the two-tensor prepack and the plain path
(``is_vnni=False``): all three give the same bits.

Run: MOEH_TORCH_LIB=build/torch/moeh_torch.so MOEH_LIBMOE=build/libmoe.so PYTHONPATH=python \\
     /usr/bin/python3 -m pytest -q tests/python/test_sgl_kernel.py
"""

import math

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import moeh.sgl_kernel  # noqa: E402,F401  the switch: torch.ops.sgl_kernel -> torch.ops.moeh
import sgl_kernel  # noqa: E402  the stand-in module the switch installs

kernel = torch.ops.sgl_kernel
PRECISION = {torch.bfloat16: 1e-2}  # element-wise atol = rtol for bf16 outputs, as the reference's tests


pytestmark = pytest.mark.usefixtures("torch_threads")  # conftest.py: two intra-op threads per test


def silu_and_mul(gu):
    n = gu.shape[-1] // 2
    return F.silu(gu[..., :n]) * gu[..., n:]


def per_token_int8(v):
    """Dynamic per-row int8 (the library's rule: scale = max(amax, 1e-7) / 127, round half to even)."""
    scale = v.abs().amax(dim=-1, keepdim=True).clamp(min=1e-7) / 127
    return torch.round(v / scale).clamp(-127, 127) * scale


def moe_reference(x, w13, w2, topk_weights, topk_ids, a8=False):
    """Float32 MoE: per token, sum over its experts of weight * W2 act(W13 x); A8: x and h per token int8."""
    x = x.float()
    out = torch.zeros(x.shape[0], w2.shape[1])
    for t in range(x.shape[0]):
        for j in range(topk_ids.shape[1]):
            e = int(topk_ids[t, j])
            xi = per_token_int8(x[t : t + 1]) if a8 else x[t : t + 1].bfloat16().float()
            h = silu_and_mul(xi @ w13[e].float().t())
            h = per_token_int8(h) if a8 else h.bfloat16().float()
            out[t] += float(topk_weights[t, j]) * (h @ w2[e].float().t())[0]
    return out


def assert_close(out, ref, tol):
    torch.testing.assert_close(out.float(), ref.float(), atol=tol, rtol=tol)


def three_paths(run_plain, run_two, run_one):
    """The plain, two-tensor prepacked and one-tensor prepacked calls: the same bits; returns one."""
    plain, two, one = run_plain(), run_two(), run_one()
    assert torch.equal(plain, two) and torch.equal(plain, one)
    return one


def route(x, E, topk, renormalize, seed):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(x.shape[0], E, generator=g)
    return kernel.topk_softmax_cpu(x, scores, topk, renormalize)


# ---- fused_experts_cpu ----------------------------------------------------------------------------------
@pytest.mark.parametrize("M", [2, 114])
@pytest.mark.parametrize("renormalize", [False, True])
def test_bf16_moe(M, renormalize):
    E, N, K, topk = 4, 32, 32, 2
    g = torch.Generator().manual_seed(M * 2 + renormalize)
    x = torch.randn(M, K, generator=g).bfloat16()
    w1 = (torch.randn(E, 2 * N, K, generator=g) / 10).bfloat16()
    w2 = (torch.randn(E, K, N, generator=g) / 10).bfloat16()
    tw, ti = route(x, E, topk, renormalize, M)

    def call(a, b, vnni):
        return kernel.fused_experts_cpu(x, a, b, tw, ti, False, False, False, None, None, None, None, None, vnni)

    p1, p2 = moeh.torch.prepack(w1, w2)
    out = three_paths(lambda: call(w1, w2, False), lambda: call(p1, p2, True),
                      lambda: call(kernel.convert_weight_packed(w1), kernel.convert_weight_packed(w2), True))
    assert_close(out, moe_reference(x, w1, w2, tw, ti), PRECISION[torch.bfloat16])


def int8_weights(E, rows, cols, g):
    w = torch.randn(E, rows, cols, generator=g) / math.sqrt(cols)
    scale = w.abs().amax(dim=-1) / 127
    q = torch.round(w / scale[..., None]).clamp(-127, 127).to(torch.int8)
    return q, scale


@pytest.mark.parametrize("M", [1, 39])
def test_int8_w8a8_moe(M):
    E, N, K, topk = 8, 128, 256, 3
    g = torch.Generator().manual_seed(100 + M)
    x = torch.randn(M, K, generator=g).bfloat16()
    w1, s1 = int8_weights(E, 2 * N, K, g)
    w2, s2 = int8_weights(E, K, N, g)
    tw, ti = route(x, E, topk, True, M)

    def call(a, b, vnni):
        return kernel.fused_experts_cpu(x, a, b, tw, ti, False, True, False, s1, s2, None, None, None, vnni)

    p1, p2 = moeh.torch.prepack(w1, w2, moeh.torch.CPUQuantMethod.INT8_W8A8, s1, s2)
    out = three_paths(lambda: call(w1, w2, False), lambda: call(p1, p2, True),
                      lambda: call(kernel.convert_weight_packed(w1), kernel.convert_weight_packed(w2), True))
    ref = moe_reference(x, w1.float() * s1[..., None], w2.float() * s2[..., None], tw, ti, a8=True)
    assert_close(out, ref, 5e-2)  # the reference's int8 cases compare with a looser tolerance than bf16


def e4m3_table():
    def value(b):
        e, m = (b >> 3) & 15, b & 7
        v = math.ldexp(m, -9) if e == 0 else math.ldexp(8 + m, e - 10)
        return -v if b & 0x80 else v
    return torch.tensor([value(b) for b in range(256)], dtype=torch.float32)


def fp8_weights(E, rows, cols, block, g):
    """e4m3 codes (bytes; no NaN) with |value| <= 400 and f32 block scales (~1e-3, the reference's factor)."""
    table = e4m3_table()
    codes = torch.randint(0, 256, (E, rows, cols), generator=g, dtype=torch.int64)
    codes = torch.where(table[codes].abs() > 400, codes & 0xB7, codes).to(torch.uint8)  # clear a high exponent bit
    bn, bk = block
    scale = torch.rand(E, -(-rows // bn), -(-cols // bk), generator=g) * 1e-3 / math.sqrt(cols / 64)
    dense = table[codes.long()] * scale.repeat_interleave(bn, 1)[:, :rows].repeat_interleave(bk, 2)[:, :, :cols]
    return codes, scale, dense


def test_fp8_w8a16_moe_partial_blocks():
    E, N, K, topk, M, block = 8, 352, 320, 3, 17, [64, 128]  # N, K not multiples of the block
    g = torch.Generator().manual_seed(7)
    x = torch.randn(M, K, generator=g).bfloat16()
    w1, s1, d1 = fp8_weights(E, 2 * N, K, block, g)
    w2, s2, d2 = fp8_weights(E, K, N, block, g)
    tw, ti = route(x, E, topk, True, 7)

    def call(a, b, vnni):
        return kernel.fused_experts_cpu(x, a, b, tw, ti, False, False, True, s1, s2, block, None, None, vnni)

    p1, p2 = moeh.torch.prepack(w1, w2, moeh.torch.CPUQuantMethod.FP8_W8A16, s1, s2, block_size=block)
    out = three_paths(lambda: call(w1, w2, False), lambda: call(p1, p2, True),
                      lambda: call(kernel.convert_weight_packed(w1), kernel.convert_weight_packed(w2), True))
    assert_close(out, moe_reference(x, d1, d2, tw, ti), PRECISION[torch.bfloat16])


# ---- shared_expert_cpu ----------------------------------------------------------------------------------
@pytest.mark.parametrize("M", [2, 121])
@pytest.mark.parametrize("int8", [False, True])
def test_shared_expert(M, int8):
    N, K, rsf = 128, 64, 16.0
    g = torch.Generator().manual_seed(200 + M + int8)
    x = torch.randn(M, K, generator=g).bfloat16()
    fused_out = torch.randn(M, K, generator=g).bfloat16()
    if int8:
        w1, s1 = int8_weights(1, 2 * N, K, g)
        w2, s2 = int8_weights(1, K, N, g)
        w1, s1, w2, s2 = w1[0], s1[0], w2[0], s2[0]
        d1, d2 = w1.float() * s1[:, None], w2.float() * s2[:, None]
    else:
        w1 = (torch.randn(2 * N, K, generator=g) / 10).bfloat16()
        w2 = (torch.randn(K, N, generator=g) / 10).bfloat16()
        s1 = s2 = None
        d1, d2 = w1, w2

    def call(a, b, vnni):
        return kernel.shared_expert_cpu(x, a, b, fused_out, rsf, False, int8, False, s1, s2, None, None, None, vnni)

    method = moeh.torch.CPUQuantMethod.INT8_W8A8 if int8 else moeh.torch.CPUQuantMethod.UNQUANT
    p1, p2 = moeh.torch.prepack(w1, w2, method, s1, s2)
    out = three_paths(lambda: call(w1, w2, False), lambda: call(p1, p2, True),
                      lambda: call(kernel.convert_weight_packed(w1), kernel.convert_weight_packed(w2), True))
    ones = torch.ones(M, 1)
    ref = moe_reference(x, d1[None], d2[None], ones, torch.zeros(M, 1, dtype=torch.int32), a8=int8)
    ref = ref + rsf * fused_out.float()
    assert_close(out, ref, 5e-2 if int8 else PRECISION[torch.bfloat16] * rsf)


# ---- the one-tensor prepack itself ----------------------------------------------------------------------
def test_one_tensor_prepack_binds_once():
    E, N, K, M = 4, 48, 96, 9
    g = torch.Generator().manual_seed(3)
    x = torch.randn(M, K, generator=g).bfloat16()
    w1 = (torch.randn(E, 2 * N, K, generator=g) / 10).bfloat16()
    w2 = (torch.randn(E, K, N, generator=g) / 10).bfloat16()
    tw, ti = route(x, E, 2, True, 3)
    p1, p2 = kernel.convert_weight_packed(w1), kernel.convert_weight_packed(w2)
    assert p1.dtype == torch.uint8 and p1.numel() == 256 + w1.numel() * 2  # the header and the bytes: one copy
    assert kernel.packed_weight_info(p1).startswith("unbound BFloat16 [4, 96, 96]")
    first = kernel.fused_experts_cpu(x, p1, p2, tw, ti, False, False, False, None, None, None, None, None, True)
    info = kernel.packed_weight_info(p1)
    assert info.startswith("W13 bf16 E=4 N=48 K=96"), info  # now the two-tensor packed form
    two = moeh.torch.prepack(w1, w2)
    assert p1.numel() == two[0].numel() and p2.numel() == two[1].numel()  # no copy beyond the packed panels
    again = kernel.fused_experts_cpu(x, p1, p2, tw, ti, False, False, False, None, None, None, None, None, True)
    assert torch.equal(first, again)


def test_one_tensor_prepack_errors():
    w = torch.randn(2, 64, 32).bfloat16()
    with pytest.raises(RuntimeError, match="weight must be bfloat16, float16, int8 or uint8"):
        kernel.convert_weight_packed(w.float())
    with pytest.raises(RuntimeError, match="AWQ/GPTQ qweight words .* are not taken"):  # a documented deviation
        kernel.convert_weight_packed(torch.zeros(2, 32, 8, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="weight must be 3-D"):
        kernel.convert_weight_packed(w[0, 0])
    x = torch.randn(3, 32).bfloat16()
    tw, ti = route(x, 2, 1, True, 1)
    p1, p2 = kernel.convert_weight_packed(w), kernel.convert_weight_packed(torch.randn(2, 32, 32).bfloat16())
    with pytest.raises(RuntimeError, match="pass is_vnni=True"):
        kernel.fused_experts_cpu(x, p1, p2, tw, ti, False, False, False, None, None, None, None, None, False)
    with pytest.raises(RuntimeError, match="w1 comes from convert_weight_packed and w2 does not"):
        kernel.fused_experts_cpu(x, p1, torch.randn(2, 32, 32).bfloat16(), tw, ti, False, False, False, None, None,
                                 None, None, None, True)
    with pytest.raises(RuntimeError, match="int8 w8a8 weights must be torch.int8"):  # the call's method binds
        kernel.fused_experts_cpu(x, p1, p2, tw, ti, False, True, False, None, None, None, None, None, True)


def test_switch_names():
    assert sgl_kernel.common_ops.fused_experts_cpu is not None
    assert kernel.convert_weight_packed is torch.ops.moeh.convert_weight_packed
    with pytest.raises(AttributeError, match="moeh does not implement this operator"):
        kernel.weight_packed_linear  # noqa: B018  a non-MoE sgl_kernel operator
    assert not hasattr(sgl_kernel.common_ops, "int8_scaled_mm_cpu")


@pytest.mark.parametrize("method", ["INT4_W4A16", "INT4_W4A8", "MXFP4"])
def test_one_tensor_4bit_codes(method):
    """4-bit codes (moe.h's plain layout: two per byte along K) through the one-tensor prepack: the
    same bits as the plain path, the scales (and zero points) given at the call."""
    E, N, K, M, group = 4, 64, 128, 11, 64
    m = getattr(moeh.torch.CPUQuantMethod, method)
    g = torch.Generator().manual_seed(11)
    x = torch.randn(M, K, generator=g).bfloat16()
    codes = [torch.randint(0, 256, (E, r, c // 2), generator=g, dtype=torch.int64).to(torch.uint8) for r, c in ((2 * N, K), (K, N))]
    if method == "MXFP4":
        scales = [torch.randint(118, 124, (E, r, c // 32), generator=g, dtype=torch.int64).to(torch.uint8) for r, c in ((2 * N, K), (K, N))]
        zeros, block = [None, None], None
    else:
        scales = [torch.rand(E, r, c // group, generator=g) / 50 + 1e-3 for r, c in ((2 * N, K), (K, N))]
        zeros = [torch.randint(0, 16, (E, r, c // group), generator=g, dtype=torch.int64).to(torch.uint8) for r, c in ((2 * N, K), (K, N))]
        block = [group]
    tw, ti = route(x, E, 2, True, 11)

    def call(a, b, vnni):
        return kernel.fused_experts_cpu.comp_method_nobias(x, a, b, tw, ti, False, int(m), scales[0], scales[1],
                                                           zeros[0], zeros[1], block, vnni)

    plain = call(codes[0], codes[1], False)
    one = call(kernel.convert_weight_packed(codes[0]), kernel.convert_weight_packed(codes[1]), True)
    assert torch.isfinite(plain.float()).all() and plain.float().abs().sum() > 0
    assert torch.equal(plain, one)

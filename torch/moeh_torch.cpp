// moeh_torch.cpp: moe.h as PyTorch operators, registered under torch.ops.moeh. They follow the argument
// order, types and semantics of SGLang's CPU MoE operators (sgl-kernel csrc/cpu), built against
// PyTorch 1.13 (Debian's libtorch-dev / python3-torch). Load with `import moeh.torch`, or
// torch.ops.load_library("moeh_torch.so").
//
// OPERATORS (exact schemas: the m.def() strings in TORCH_LIBRARY below)
//   fused_experts_cpu               SGLang's 14-argument form (use_int8_w8a8, use_fp8_w8a16, a1/a2).
//   fused_experts_cpu.comp_method   SGLang's moe_comp_method form with zero points, biases, gpt-oss
//                                   alpha/limit and an optional activation string (17 or 18 arguments).
//   fused_experts_cpu.comp_method_nobias   the same without biases/alpha/limit (13 arguments).
//   shared_expert_cpu               SGLang's 14-argument form; .opt: the 12-argument form with an
//                                   optional routed output and scaling factor.
//   topk_softmax_cpu, topk_sigmoid_cpu, grouped_topk_cpu, biased_grouped_topk_cpu: routing.
//   convert_weight_packed           SGLang's one-tensor prepack (is_vnni=True inputs), packed at first use;
//   convert_weight_packed_moe       the two-tensor prepack; packed_weight_info describes either.
//
// PRECISIONS (moe_comp_method; the booleans of the 14-argument form select 0, 1 or 2)
//   0 UNQUANT    bf16 or fp16 weights (fp16 becomes bf16 at pack time, as the library does)
//   1 INT8_W8A8  int8 weights, f32 scale per output channel: w1_scale [E, 2N] (or [E, 2N, 1]),
//                w2_scale [E, K]; activations quantized per token (dynamic)
//   2 FP8_W8A16  e4m3 weights AS torch.uint8 (PyTorch 1.13 has no float8 dtype: pass the bytes, e.g.
//                t.view(torch.uint8) on a newer PyTorch), f32 block scales
//                [E, ceil(2N/bn), ceil(K/bk)] and [E, ceil(K/bn), ceil(N/bk)], block_size = [bn, bk]
//   3 INT4_W4A8  uint8 codes two per byte (low nibble first) [E, 2N, ceil(K/2)], [E, K, ceil(N/2)];
//                w*_scale f32 and w*_zero uint8 (0..15) per group [E, rows, ceil(cols/group)]; the
//                group is block_size[-1] when given, else K / w1_scale.size(-1) (exact)
//   4 MXFP4      e2m1 codes as for int4; w*_scale uint8 e8m0 [E, rows, ceil(cols/32)]
//   5 INT4_W4A16 (moeh extension, not an SGLang method) as 3 with bf16 activations
//   Hidden states bf16 or fp16 (float32 too, an extension); topk_ids int32 (int64 is converted),
//   topk_weights any float dtype (converted to f32). Ids of -1 are skipped.
//
// PREPACKED WEIGHTS (is_vnni=True)
//   convert_weight_packed_moe(w1, w2, moe_comp_method, scales, zeros, block_size, gate_up_interleaved)
//   returns (packed_w1, packed_w2): two 1-D torch.uint8 tensors, each a 256-byte header followed by
//   one matrix of every expert in moe.h's packed panel layout, with the scales folded in. The header
//   (PackedHeader below) is self-describing: magic "MOEHPK01", format, the matrix (W13 or W2),
//   precision, E/N/K, the library version, sizeof(moe_experts) and an E = 1 moe_experts template
//   from moe_pack() with its pointers cleared. At call time the moe_experts is rebuilt from the
//   template: E, and the w13/w2 pointers set to the two payloads (b13/b2 to the call's biases).
//   Experts follow each other in the packed layout, so packing expert by expert (E = 1 calls of
//   moe_pack, in parallel over experts) gives the layout of one E-expert moe_pack. SGLang's
//   With is_vnni=True and two-tensor packed weights the call's w*_scale / w*_zero / block_size are
//   not read (the packed tensors hold them); biases are read at call time.
//
// ONE-TENSOR PREPACK (SGLang's convert_weight_packed(Tensor weight) -> Tensor)
//   moe.h's W13 layout interleaves gate and up panels and folds the int8/fp8 scales into the
//   panels, so a weight alone cannot be packed: whether it is W13 or W2, its method and its scales
//   are known only at the call. convert_weight_packed(weight) therefore returns a 1-D torch.uint8
//   tensor of a 256-byte header (OneHeader: magic "MOEHPK1T", dtype, sizes) and the weight's bytes,
//   one copy at memory speed. The first is_vnni=True call that receives two such tensors packs the
//   pair with that call's method, scales, zero points and block_size (prepare_plain, pack_plain),
//   and each tensor takes its two-tensor packed form in place (Tensor::set_ swaps its storage; the
//   raw bytes are freed when nothing else holds them). From then on the calls read the panels as
//   any two-tensor prepack, and their w*_scale / w*_zero / block_size are not read again. Memory:
//   the packed tensors only (the first call briefly holds the raw bytes and the panels together);
//   first-call cost: one pack of the pair (moe_pack on the intra-op threads). Binding takes a mutex,
//   so concurrent first calls pack once. is_vnni=False with such tensors is an error.
//   Packed tensors may be saved and loaded (torch.save) and moved; a payload that is not 64-byte
//   aligned (the kernels need it) is copied to an aligned tensor for the call. They are rejected by
//   a library of another version (the packed layout may change between versions: repack).
//   With is_vnni=False the weights are packed on every call (correct but slow, as SGLang's own
//   is_vnni=False path, which also packs per call): prepack once for real use.
//
// GPT-OSS MODE: alpha or limit given selects SwiGLU-OAI (g = min(g, limit), u = clamp(u, +-limit),
//   g * sigmoid(alpha g) * (u + 1)) with the reference's gate/up INTERLEAVED rows (row 2i gate i,
//   2i+1 up i) in w1, its scales/zeros and w1_bias; prepacked weights say whether they were packed
//   interleaved (gate_up_interleaved), and the call's w1_bias follows the same order.
//
// THREADS: every operator runs its parallel work through moe_parallel.parallel_for implemented with
//   at::parallel_for(0, n, 1, ...), n_threads = at::get_num_threads(): PyTorch's intra-op pool
//   (OpenMP in Debian's build), so torch.set_num_threads() governs it and no second pool exists.
//   at::parallel_for may run several tasks one after the other on one thread, or all of them on the
//   caller (inside another parallel region): moe.h's CONTRACT allows both. Results are bitwise
//   identical for any thread count.
//
// DEVIATIONS FROM THE REFERENCE: static activation scales (a1_scale/a2_scale) are rejected for int8
//   as SGLang does ("static quantization for activation not supported.") and ignored otherwise;
//   grouped_topk_cpu accepts any routed_scaling_factor (multiplies the weights) where SGLang's
//   older code insists on None or 1; topk_sigmoid_cpu accepts any topk (SGLang: 1); expert counts
//   are 1..1024 (SGLang: a fixed list); unsupported activations ("gelu" = erf GELU) are rejected.
//   INT4 takes moe.h's plain layout (codes, f32 scales, u8 zero points per group along K), not
//   SGLang's convert_weight_packed_scale_zp output from AWQ/GPTQ tensors (convert those with
//   moe_import_awq / moe_import_gptq first). Gate/up interleaved fp8 with block_n > 1 is rejected
//   (de-interleaving would split the scale blocks).
//
// WORKSPACE: one buffer per calling thread, grown as needed and kept (a call processes at most 1024
//   tokens at a time, so it stays bounded).

#include "moe.h" // the library: libmoe's static build, linked in with its symbols kept local (torch/meson.build)

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace {

using at::Tensor;
using c10::optional;
using IntListOpt = c10::optional<std::vector<int64_t>>; // int[]?

// ---- status and small helpers ----------------------------------------------------------------------
void check_status(moe_status st, const char *what) {
  TORCH_CHECK(st == MOE_OK, "moeh: ", what, ": ", moe_status_str(st));
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// moe_comp_method values (SGLang's CPUQuantMethod) and our extension.
enum Method : int64_t { UNQUANT = 0, INT8_W8A8 = 1, FP8_W8A16 = 2, INT4_W4A8 = 3, MXFP4 = 4, INT4_W4A16 = 5 };

const char *method_name(int64_t m) {
  switch (m) {
  case UNQUANT: return "UNQUANT";
  case INT8_W8A8: return "INT8_W8A8";
  case FP8_W8A16: return "FP8_W8A16";
  case INT4_W4A8: return "INT4_W4A8";
  case MXFP4: return "MXFP4";
  case INT4_W4A16: return "INT4_W4A16";
  default: return "?";
  }
}

bool is_4bit(int64_t m) { return m == INT4_W4A8 || m == MXFP4 || m == INT4_W4A16; }

// ---- threads: PyTorch's intra-op pool ------------------------------------------------------------------
// moe.h calls this with n tasks; at::parallel_for splits [0, n) into one contiguous range per thread
// (or runs it all on the caller), and each thread runs its tasks in order. Tasks may wait for each
// other only on work already claimed by running tasks (moe.h's CONTRACT), so this cannot deadlock.
void torch_parallel_for(void *, void (*fn)(void *, int64_t), void *arg, int64_t n) {
  at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; i++) fn(arg, i);
  });
}

moe_parallel torch_pool() {
  moe_parallel p;
  p.parallel_for = torch_parallel_for;
  p.pool = nullptr;
  p.n_threads = at::get_num_threads();
  return p;
}

// A per-thread workspace that grows and is reused across calls (not zeroed: the library needs no zero).
void *workspace(size_t bytes) {
  thread_local std::unique_ptr<uint8_t[]> buf;
  thread_local size_t cap = 0;
  if (bytes > cap) {
    buf.reset();
    buf.reset(new uint8_t[bytes]);
    cap = bytes;
  }
  return buf.get();
}

moe_dtype dtype_of(const Tensor &t, const char *name) {
  switch (t.scalar_type()) {
  case at::kBFloat16: return MOE_BF16;
  case at::kHalf: return MOE_F16;
  case at::kFloat: return MOE_F32;
  default: TORCH_CHECK(false, "moeh: ", name, " must be bfloat16, float16 or float32, got ", t.scalar_type());
  }
  return MOE_BF16;
}

void check_cpu(const Tensor &t, const char *name) {
  TORCH_CHECK(t.device().is_cpu(), "moeh: ", name, " must be a CPU tensor");
}

// ---- plain weights -------------------------------------------------------------------------------------
// W13 [E, 2N, K] (gate rows first) and W2 [E, K, N] with their scales, normalised to 3-D contiguous
// tensors in the library's plain layouts (moe_quant.h).
struct Plain {
  int64_t method = 0;
  moe_precision prec = MOE_PREC_BF16;
  bool two_d = false, interleaved = false;
  int64_t E = 0, N = 0, K = 0;
  Tensor w1, w2, s1, s2, z1, z2;
  int32_t block_n = 0, block_k = 0, group = 0;
};

// [E, 2N, ...] with rows 2i = gate i, 2i + 1 = up i  ->  gate rows first, then up rows.
Tensor deinterleave(const Tensor &t) {
  auto sizes = t.sizes().vec();
  TORCH_CHECK(sizes.size() >= 2 && sizes[1] % 2 == 0, "moeh: cannot de-interleave gate/up rows of shape ", t.sizes());
  std::vector<int64_t> v = {sizes[0], sizes[1] / 2, 2};
  for (size_t i = 2; i < sizes.size(); i++) v.push_back(sizes[i]);
  return t.reshape(v).transpose(1, 2).reshape(sizes).contiguous();
}

Tensor as3d(const Tensor &t, bool two_d) { return two_d ? t.unsqueeze(0) : t; }

// w1 and w2 of dtype `want`, or a message naming the one that is not.
void check_weight_dtypes(const Tensor &w1, const Tensor &w2, at::ScalarType want, const char *what) {
  TORCH_CHECK(w1.scalar_type() == want, "moeh: ", what, ": w1 is ", w1.scalar_type());
  TORCH_CHECK(w2.scalar_type() == want, "moeh: ", what, ": w2 is ", w2.scalar_type(), " (w1 ", w1.scalar_type(), ")");
}

void check_shape(const Tensor &t, std::vector<int64_t> want, const char *name) {
  TORCH_CHECK(t.sizes().vec() == want, "moeh: ", name, " must have shape ", c10::IntArrayRef(want), ", got ",
              t.sizes());
}

Plain prepare_plain(const Tensor &w1_in, const Tensor &w2_in, int64_t method, const optional<Tensor> &w1_scale,
                    const optional<Tensor> &w2_scale, const optional<Tensor> &w1_zero, const optional<Tensor> &w2_zero,
                    const IntListOpt &block_size, bool interleaved) {
  Plain P;
  P.method = method;
  P.interleaved = interleaved;
  TORCH_CHECK(method >= 0 && method <= 5, "moeh: unknown moe_comp_method ", method,
              " (0 UNQUANT, 1 INT8_W8A8, 2 FP8_W8A16, 3 INT4_W4A8, 4 MXFP4, 5 INT4_W4A16)");
  check_cpu(w1_in, "w1");
  check_cpu(w2_in, "w2");
  TORCH_CHECK((w1_in.dim() == 3 && w2_in.dim() == 3) || (w1_in.dim() == 2 && w2_in.dim() == 2),
              "moeh: expect w1 [E, 2N, K] and w2 [E, K, N] (or 2-D for the shared expert), got ", w1_in.sizes(),
              " and ", w2_in.sizes());
  P.two_d = w1_in.dim() == 2;
  Tensor w1 = as3d(w1_in, P.two_d), w2 = as3d(w2_in, P.two_d);
  P.E = w1.size(0);
  TORCH_CHECK(w2.size(0) == P.E, "moeh: w1 and w2 have different expert counts: ", w1_in.sizes(), " and ",
              w2_in.sizes());
  TORCH_CHECK(w1.size(1) % 2 == 0 && w1.size(1) > 0, "moeh: w1 rows must be 2N (gate then up), got ", w1.size(1));
  P.N = w1.size(1) / 2;
  P.K = w2.size(1);
  TORCH_CHECK(P.E >= 1 && P.K >= 1, "moeh: w1 and w2 must not be empty, got ", w1_in.sizes(), " and ", w2_in.sizes());
  const bool b4 = is_4bit(method);
  const int64_t c1 = b4 ? (P.K + 1) / 2 : P.K, c2 = b4 ? (P.N + 1) / 2 : P.N;
  TORCH_CHECK(w1.size(2) == c1 && w2.size(2) == c2, "moeh: w1 ", w1_in.sizes(), " and w2 ", w2_in.sizes(),
              " do not fit W13 [E, 2N, K] and W2 [E, K, N]", b4 ? " (4-bit codes: two per byte along the last dim)" : "");
  auto opt_contig = [&](const optional<Tensor> &t, const char *name, at::ScalarType type) -> Tensor {
    TORCH_CHECK(t.has_value() && t->defined(), "moeh: missing ", name, " for ", method_name(method), ".");
    check_cpu(*t, name);
    TORCH_CHECK(type == at::kByte ? t->scalar_type() == at::kByte : at::isFloatingType(t->scalar_type()), "moeh: ", name,
                type == at::kByte ? " must be torch.uint8" : " must be floating point", ", got ", t->scalar_type());
    return as3d(t->to(type).contiguous(), P.two_d);
  };
  switch (method) {
  case UNQUANT:
    check_weight_dtypes(w1, w2, w1.scalar_type() == at::kHalf ? at::kHalf : at::kBFloat16,
                        "unquantized weights must both be bfloat16 or both float16");
    P.prec = w1.scalar_type() == at::kBFloat16 ? MOE_PREC_BF16 : MOE_PREC_FP16;
    break;
  case INT8_W8A8: {
    check_weight_dtypes(w1, w2, at::kChar, "int8 w8a8 weights must be torch.int8");
    P.prec = MOE_PREC_INT8;
    P.s1 = opt_contig(w1_scale, "w1_scale", at::kFloat);
    P.s2 = opt_contig(w2_scale, "w2_scale", at::kFloat);
    TORCH_CHECK(P.s1.numel() == P.E * 2 * P.N, "moeh: w1_scale must have E * 2N = ", P.E * 2 * P.N,
                " entries (one per output channel), got ", P.s1.numel());
    TORCH_CHECK(P.s2.numel() == P.E * P.K, "moeh: w2_scale must have E * K = ", P.E * P.K, " entries, got ",
                P.s2.numel());
    P.s1 = P.s1.reshape({P.E, 2 * P.N});
    P.s2 = P.s2.reshape({P.E, P.K});
    break;
  }
  case FP8_W8A16: {
    check_weight_dtypes(w1, w2, at::kByte, "fp8 e4m3 weights must come as torch.uint8 (their bytes: PyTorch 1.13 has no float8 dtype)");
    TORCH_CHECK(block_size.has_value(), "moeh: missing block_size for fp8 w8a16.");
    TORCH_CHECK(block_size->size() == 2, "moeh: expect block_size.size() to be 2.");
    const int64_t bn = (*block_size)[0], bk = (*block_size)[1];
    TORCH_CHECK(bn >= 1 && bk >= 1 && bn <= INT32_MAX && bk <= INT32_MAX, "moeh: bad fp8 block_size [", bn, ", ", bk, "]");
    TORCH_CHECK(!interleaved || bn == 1,
                "moeh: gate/up interleaved rows (gpt-oss alpha/limit) cannot be de-interleaved under fp8 block scales "
                "with block_n > 1");
    P.prec = MOE_PREC_FP8;
    P.block_n = (int32_t)bn;
    P.block_k = (int32_t)bk;
    P.s1 = opt_contig(w1_scale, "w1_scale", at::kFloat);
    P.s2 = opt_contig(w2_scale, "w2_scale", at::kFloat);
    check_shape(P.s1, {P.E, cdiv(2 * P.N, bn), cdiv(P.K, bk)}, "w1_scale (E, ceil(2N/bn), ceil(K/bk))");
    check_shape(P.s2, {P.E, cdiv(P.K, bn), cdiv(P.N, bk)}, "w2_scale (E, ceil(K/bn), ceil(N/bk))");
    break;
  }
  case INT4_W4A8:
  case INT4_W4A16: {
    check_weight_dtypes(w1, w2, at::kByte, "int4 weights must be torch.uint8 codes (two per byte, low nibble first)");
    P.prec = method == INT4_W4A8 ? MOE_PREC_INT4_W4A8 : MOE_PREC_INT4_W4A16;
    P.s1 = opt_contig(w1_scale, "w1_scale", at::kFloat);
    P.s2 = opt_contig(w2_scale, "w2_scale", at::kFloat);
    P.z1 = opt_contig(w1_zero, "w1_zero", at::kByte);
    P.z2 = opt_contig(w2_zero, "w2_zero", at::kByte);
    int64_t g;
    if (block_size.has_value() && block_size->size() > 0) {
      g = block_size->back();
    } else {
      const int64_t ng = P.s1.size(-1);
      TORCH_CHECK(ng >= 1 && P.K % ng == 0,
                  "moeh: cannot infer the int4 group from w1_scale (K = ", P.K, ", ", ng,
                  " groups): pass block_size=[group]");
      g = P.K / ng;
    }
    TORCH_CHECK(g >= 32 && g % 32 == 0 && g <= INT32_MAX, "moeh: the int4 group must be a multiple of 32, got ", g);
    P.group = (int32_t)g;
    check_shape(P.s1, {P.E, 2 * P.N, cdiv(P.K, g)}, "w1_scale (E, 2N, ceil(K/group))");
    check_shape(P.z1, {P.E, 2 * P.N, cdiv(P.K, g)}, "w1_zero (E, 2N, ceil(K/group))");
    check_shape(P.s2, {P.E, P.K, cdiv(P.N, g)}, "w2_scale (E, K, ceil(N/group))");
    check_shape(P.z2, {P.E, P.K, cdiv(P.N, g)}, "w2_zero (E, K, ceil(N/group))");
    TORCH_CHECK(P.z1.max().item<int64_t>() <= 15 && P.z2.max().item<int64_t>() <= 15,
                "moeh: int4 zero points must be in 0..15");
    break;
  }
  case MXFP4: {
    check_weight_dtypes(w1, w2, at::kByte, "mxfp4 weights must be torch.uint8 e2m1 codes (two per byte, low nibble first)");
    P.prec = MOE_PREC_MXFP4;
    TORCH_CHECK(w1_scale.has_value() && w2_scale.has_value(), "moeh: missing w1_scale/w2_scale (e8m0) for MXFP4.");
    TORCH_CHECK(w1_scale->scalar_type() == at::kByte && w2_scale->scalar_type() == at::kByte,
                "moeh: mxfp4 scales (w1_scale, w2_scale) must be torch.uint8 e8m0 exponents, got ",
                w1_scale->scalar_type(), " and ", w2_scale->scalar_type());
    P.s1 = opt_contig(w1_scale, "w1_scale", at::kByte);
    P.s2 = opt_contig(w2_scale, "w2_scale", at::kByte);
    check_shape(P.s1, {P.E, 2 * P.N, cdiv(P.K, 32)}, "w1_scale (E, 2N, ceil(K/32))");
    check_shape(P.s2, {P.E, P.K, cdiv(P.N, 32)}, "w2_scale (E, K, ceil(N/32))");
    break;
  }
  }
  TORCH_CHECK(moe_precision_compiled(P.prec), "moeh: precision ", moe_precision_name(P.prec), " is compiled out");
  P.w1 = w1.contiguous();
  P.w2 = w2.contiguous();
  if (interleaved) {
    P.w1 = deinterleave(P.w1);
    if (P.s1.defined()) P.s1 = deinterleave(P.s1);
    if (P.z1.defined()) P.z1 = deinterleave(P.z1);
  }
  return P;
}

// The plain weights of expert e alone (E = 1).
moe_weights expert_weights(const Plain &P, int64_t e) {
  moe_weights w = MOE_ZERO_INIT;
  auto at_e = [&](const Tensor &t) -> const void * {
    if (!t.defined()) return nullptr;
    return (const uint8_t *)t.data_ptr() + (size_t)e * (size_t)(t.numel() / P.E) * t.element_size();
  };
  w.E = 1;
  w.N = P.N;
  w.K = P.K;
  w.precision = P.prec;
  w.w13 = at_e(P.w1);
  w.w2 = at_e(P.w2);
  if (P.prec == MOE_PREC_MXFP4) {
    w.w13_e8m0 = (const uint8_t *)at_e(P.s1);
    w.w2_e8m0 = (const uint8_t *)at_e(P.s2);
  } else {
    w.w13_scale = (const float *)at_e(P.s1);
    w.w2_scale = (const float *)at_e(P.s2);
  }
  w.w13_zero = (const uint8_t *)at_e(P.z1);
  w.w2_zero = (const uint8_t *)at_e(P.z2);
  w.block_n = P.block_n;
  w.block_k = P.block_k;
  w.group = P.group;
  return w;
}

// ---- the packed format ---------------------------------------------------------------------------------
constexpr int64_t kHeaderBytes = 256;
constexpr char kMagic[8] = {'M', 'O', 'E', 'H', 'P', 'K', '0', '1'};
constexpr int32_t kFormat = 1;
constexpr int32_t kVersion = MOE_VERSION_MAJOR * 10000 + MOE_VERSION_MINOR * 100 + MOE_VERSION_PATCH;

struct PackedHeader {
  char magic[8];          // "MOEHPK01"
  int32_t format;         // kFormat
  int32_t header_bytes;   // kHeaderBytes: the payload starts there
  int32_t role;           // 13: W13 (w1), 2: W2 (w2)
  int32_t precision;      // moe_precision
  int32_t method;         // the moe_comp_method it was packed for
  int32_t two_d;          // packed from 2-D weights (a shared expert)
  int32_t interleaved;    // W13 rows were gate/up interleaved (gpt-oss) and were de-interleaved
  int32_t version;        // moe.h version (major * 10000 + minor * 100 + patch)
  int64_t E, N, K;
  int64_t payload_bytes;  // E * panels * panel_bytes of this matrix
  int64_t experts_size;   // sizeof(moe_experts)
  moe_experts tmpl;       // moe_pack()'s result for one expert, pointers cleared
};
static_assert(sizeof(PackedHeader) <= (size_t)kHeaderBytes, "PackedHeader must fit in the header");

void fill_header(PackedHeader &h, const Plain &P, int role, const moe_experts &tmpl, int64_t payload) {
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, kMagic, 8);
  h.format = kFormat;
  h.header_bytes = (int32_t)kHeaderBytes;
  h.role = role;
  h.precision = (int32_t)P.prec;
  h.method = (int32_t)P.method;
  h.two_d = P.two_d;
  h.interleaved = P.interleaved;
  h.version = kVersion;
  h.E = P.E;
  h.N = P.N;
  h.K = P.K;
  h.payload_bytes = payload;
  h.experts_size = (int64_t)sizeof(moe_experts);
  h.tmpl = tmpl;
  h.tmpl.w13 = h.tmpl.w2 = nullptr;
  h.tmpl.b13 = h.tmpl.b2 = nullptr;
}

// Packs both matrices, expert by expert (in parallel over experts), into two header + payload tensors.
std::tuple<Tensor, Tensor> pack_plain(const Plain &P) {
  moe_weights w0 = expert_weights(P, 0);
  size_t bytes = moe_pack_size(&w0);
  moe_experts tmpl;
  if (!bytes) {
    uint8_t dummy[64];
    check_status(moe_pack(&w0, &tmpl, dummy, 0), "moe_pack");
    TORCH_CHECK(false, "moeh: moe_pack_size failed");
  }
  std::unique_ptr<uint8_t[]> buf0(new uint8_t[bytes]);
  check_status(moe_pack(&w0, &tmpl, buf0.get(), bytes), "moe_pack");
  const size_t b13 = (size_t)tmpl.panels13 * tmpl.panel13_bytes, b2 = (size_t)tmpl.panels2 * tmpl.panel2_bytes;
  TORCH_CHECK(b13 <= (size_t)INT64_MAX / (size_t)P.E && b2 <= (size_t)INT64_MAX / (size_t)P.E, "moeh: packed size overflows");
  Tensor out1 = at::empty({kHeaderBytes + (int64_t)(b13 * (size_t)P.E)}, at::kByte);
  Tensor out2 = at::empty({kHeaderBytes + (int64_t)(b2 * (size_t)P.E)}, at::kByte);
  uint8_t *d1 = out1.data_ptr<uint8_t>(), *d2 = out2.data_ptr<uint8_t>();
  PackedHeader h;
  fill_header(h, P, 13, tmpl, (int64_t)(b13 * (size_t)P.E));
  std::memset(d1, 0, kHeaderBytes);
  std::memcpy(d1, &h, sizeof h);
  fill_header(h, P, 2, tmpl, (int64_t)(b2 * (size_t)P.E));
  std::memset(d2, 0, kHeaderBytes);
  std::memcpy(d2, &h, sizeof h);
  std::memcpy(d1 + kHeaderBytes, tmpl.w13, b13);
  std::memcpy(d2 + kHeaderBytes, tmpl.w2, b2);
  buf0.reset();
  std::atomic<int> failed{0};
  at::parallel_for(1, P.E, 1, [&](int64_t begin, int64_t end) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[bytes]);
    for (int64_t e = begin; e < end; e++) {
      moe_weights w = expert_weights(P, e);
      moe_experts ex;
      moe_status st = moe_pack(&w, &ex, buf.get(), bytes);
      if (st != MOE_OK) {
        failed.store((int)st);
        return;
      }
      std::memcpy(d1 + kHeaderBytes + (size_t)e * b13, ex.w13, b13);
      std::memcpy(d2 + kHeaderBytes + (size_t)e * b2, ex.w2, b2);
    }
  });
  check_status((moe_status)failed.load(), "moe_pack");
  return std::make_tuple(out1, out2);
}

// A packed tensor's header, checked.
PackedHeader read_header(const Tensor &t, const char *name) {
  PackedHeader h;
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == at::kByte && t.dim() == 1 && t.numel() >= kHeaderBytes,
              "moeh: ", name, " is not a packed weight (is_vnni=True expects the outputs of "
              "torch.ops.moeh.convert_weight_packed or convert_weight_packed_moe: 1-D torch.uint8), got ", t.scalar_type(), " ", t.sizes());
  Tensor c = t.is_contiguous() ? t : t.contiguous();
  std::memcpy(&h, c.data_ptr<uint8_t>(), sizeof h);
  TORCH_CHECK(std::memcmp(h.magic, kMagic, 8) == 0,
              "moeh: ", name, " is not a packed weight (bad magic; pack it with torch.ops.moeh.convert_weight_packed_moe)");
  TORCH_CHECK(h.format == kFormat && h.header_bytes == kHeaderBytes && h.experts_size == (int64_t)sizeof(moe_experts),
              "moeh: ", name, " has an unknown packed format");
  TORCH_CHECK(h.version == kVersion, "moeh: ", name, " was packed by moe.h version ", h.version / 10000, ".",
              h.version / 100 % 100, ".", h.version % 100, ", this is ", MOE_VERSION_STRING, ": repack the weights");
  TORCH_CHECK(h.E >= 1 && h.N >= 1 && h.K >= 1 && h.tmpl.E == 1 && h.tmpl.N == h.N && h.tmpl.K == h.K &&
                  (int32_t)h.tmpl.precision == h.precision && (h.role == 13 || h.role == 2),
              "moeh: ", name, " has an inconsistent header");
  const size_t per = h.role == 13 ? (size_t)h.tmpl.panels13 * h.tmpl.panel13_bytes : (size_t)h.tmpl.panels2 * h.tmpl.panel2_bytes;
  TORCH_CHECK(per > 0 && per <= (size_t)INT64_MAX / (size_t)h.E && (int64_t)(per * (size_t)h.E) == h.payload_bytes &&
                  h.payload_bytes == t.numel() - kHeaderBytes,
              "moeh: ", name, " has ", t.numel() - kHeaderBytes, " payload bytes, its header says ", h.payload_bytes);
  return h;
}

// The payload of a packed tensor, 64-byte aligned (copied into *keep when it is not).
const uint8_t *payload(const Tensor &t, Tensor *keep) {
  Tensor c = t.is_contiguous() ? t : t.contiguous();
  if ((reinterpret_cast<uintptr_t>(c.data_ptr<uint8_t>() + kHeaderBytes) & 63) != 0) c = c.clone();
  TORCH_CHECK((reinterpret_cast<uintptr_t>(c.data_ptr<uint8_t>() + kHeaderBytes) & 63) == 0,
              "moeh: cannot align a packed weight");
  *keep = c;
  return c.data_ptr<uint8_t>() + kHeaderBytes;
}

// Experts ready for a call: their packed tensors (kept alive here) and the biases.
struct Experts {
  moe_experts ex;
  Tensor keep1, keep2, bias1, bias2;
  bool interleaved = false;
  int64_t method = 0;
};

// Biases as f32 [E, 2N] (de-interleaved when the weights were) and [E, K].
void attach_bias(Experts &X, const optional<Tensor> &w1_bias, const optional<Tensor> &w2_bias) {
  const moe_experts &ex = X.ex;
  if (w1_bias.has_value() && w1_bias->defined()) {
    check_cpu(*w1_bias, "w1_bias");
    TORCH_CHECK(w1_bias->numel() == ex.E * 2 * ex.N, "moeh: w1_bias must have E * 2N = ", ex.E * 2 * ex.N,
                " entries, got ", w1_bias->sizes());
    X.bias1 = w1_bias->to(at::kFloat).reshape({ex.E, 2 * ex.N}).contiguous();
    if (X.interleaved) X.bias1 = deinterleave(X.bias1);
    X.ex.b13 = X.bias1.data_ptr<float>();
  }
  if (w2_bias.has_value() && w2_bias->defined()) {
    check_cpu(*w2_bias, "w2_bias");
    TORCH_CHECK(w2_bias->numel() == ex.E * ex.K, "moeh: w2_bias must have E * K = ", ex.E * ex.K, " entries, got ",
                w2_bias->sizes());
    X.bias2 = w2_bias->to(at::kFloat).reshape({ex.E, ex.K}).contiguous();
    X.ex.b2 = X.bias2.data_ptr<float>();
  }
}

Experts experts_from_packed(const Tensor &p1, const Tensor &p2) {
  PackedHeader h1 = read_header(p1, "w1"), h2 = read_header(p2, "w2");
  TORCH_CHECK(h1.role == 13 && h2.role == 2, "moeh: expect the packed W13 as w1 and the packed W2 as w2 (got roles ",
              h1.role == 13 ? "W13" : "W2", " and ", h2.role == 13 ? "W13" : "W2", ")");
  TORCH_CHECK(h1.E == h2.E && h1.N == h2.N && h1.K == h2.K && h1.precision == h2.precision &&
                  h1.tmpl.panels2 == h2.tmpl.panels2 && h1.tmpl.panel2_bytes == h2.tmpl.panel2_bytes &&
                  h1.tmpl.k2_pad == h2.tmpl.k2_pad && h1.interleaved == h2.interleaved,
              "moeh: packed w1 and w2 do not belong together");
  Experts X;
  X.ex = h1.tmpl;
  X.ex.E = h1.E;
  X.ex.w13 = payload(p1, &X.keep1);
  X.ex.w2 = payload(p2, &X.keep2);
  X.ex.b13 = X.ex.b2 = nullptr;
  X.interleaved = h1.interleaved != 0;
  X.method = h1.method;
  return X;
}

Experts experts_from_plain(const Plain &P) {
  Tensor p1, p2;
  std::tie(p1, p2) = pack_plain(P);
  return experts_from_packed(p1, p2);
}

// Packed precision vs the method the call asks for.
void check_method(const Experts &X, int64_t method) {
  moe_precision p = X.ex.precision;
  bool ok = method == UNQUANT ? (p == MOE_PREC_BF16 || p == MOE_PREC_FP16)
            : method == INT8_W8A8 ? p == MOE_PREC_INT8
            : method == FP8_W8A16 ? p == MOE_PREC_FP8
            : method == INT4_W4A8 ? p == MOE_PREC_INT4_W4A8
            : method == MXFP4 ? p == MOE_PREC_MXFP4
            : method == INT4_W4A16 ? p == MOE_PREC_INT4_W4A16 : false;
  TORCH_CHECK(ok, "moeh: the packed weights are ", moe_precision_name(p), ", the call asks for ", method_name(method));
}

// ---- the layer calls -------------------------------------------------------------------------------------
struct ActSpec {
  moe_activation act = MOE_ACT_SILU;
  float alpha = 0.0f, limit = 0.0f;
};

ActSpec parse_act(const optional<double> &alpha, const optional<double> &limit, const optional<c10::string_view> &activation) {
  ActSpec a;
  const bool oai = alpha.has_value() || limit.has_value();
  std::string name = activation.has_value() ? std::string(activation->data(), activation->size()) : std::string();
  if (name.empty() || name == "silu") {
    a.act = oai ? MOE_ACT_SWIGLU_OAI : MOE_ACT_SILU;
  } else if (name == "swigluoai" || name == "swiglu_oai" || name == "swiglu") {
    a.act = MOE_ACT_SWIGLU_OAI;
  } else if (name == "gelu_tanh" && !oai) {
    a.act = MOE_ACT_GELU_TANH;
  } else {
    TORCH_CHECK(false, "moeh: unsupported activation \"", name, "\" (silu, swigluoai with alpha/limit, gelu_tanh)");
  }
  if (alpha.has_value()) {
    TORCH_CHECK(*alpha != 0.0, "moeh: alpha must be nonzero");
    a.alpha = (float)*alpha;
  }
  if (limit.has_value()) {
    TORCH_CHECK(*limit > 0.0, "moeh: limit must be positive");
    a.limit = (float)*limit;
  }
  return a;
}

Tensor prepare_x(const Tensor &hidden_states, int64_t K, bool inplace) {
  check_cpu(hidden_states, "hidden_states");
  TORCH_CHECK(hidden_states.dim() == 2, "moeh: hidden_states must be 2-D [M, K], got ", hidden_states.sizes());
  dtype_of(hidden_states, "hidden_states");
  TORCH_CHECK(hidden_states.size(1) == K, "moeh: hidden_states has K = ", hidden_states.size(1), ", the weights K = ", K);
  TORCH_CHECK(!inplace || hidden_states.is_contiguous(), "moeh: inplace needs a contiguous hidden_states");
  return hidden_states.contiguous();
}

Tensor run_fused(const Tensor &hidden_states, const Experts &X, const Tensor &topk_weights, const Tensor &topk_ids,
                 bool inplace, const ActSpec &a) {
  Tensor x = prepare_x(hidden_states, X.ex.K, inplace);
  check_cpu(topk_weights, "topk_weights");
  check_cpu(topk_ids, "topk_ids");
  TORCH_CHECK(topk_weights.dim() == 2 && topk_weights.sizes() == topk_ids.sizes(),
              "moeh: topk_weights and topk_ids must both be [M, topk], got ", topk_weights.sizes(), " and ",
              topk_ids.sizes());
  TORCH_CHECK(topk_ids.scalar_type() == at::kInt || topk_ids.scalar_type() == at::kLong,
              "moeh: topk_ids must be int32 (or int64), got ", topk_ids.scalar_type());
  TORCH_CHECK(at::isFloatingType(topk_weights.scalar_type()), "moeh: topk_weights must be floating point");
  TORCH_CHECK(topk_weights.size(0) == x.size(0), "moeh: topk_weights has ", topk_weights.size(0), " rows, hidden_states ",
              x.size(0));
  Tensor tw = topk_weights.to(at::kFloat).contiguous();
  Tensor ti = topk_ids.to(at::kInt).contiguous();
  Tensor out = inplace ? hidden_states : at::empty_like(x);
  const int64_t M = x.size(0);
  if (M == 0) return out;
  TORCH_CHECK(topk_ids.size(1) >= 1 && topk_ids.size(1) <= X.ex.E, "moeh: topk must be in 1..E = ", X.ex.E, ", got ",
              topk_ids.size(1));
  moe_call c = MOE_ZERO_INIT;
  c.x = x.data_ptr();
  c.out = out.data_ptr();
  c.dtype = dtype_of(x, "hidden_states");
  c.M = M;
  c.topk = (int32_t)topk_ids.size(1);
  c.topk_weights = tw.data_ptr<float>();
  c.topk_ids = ti.data_ptr<int32_t>();
  c.act = a.act;
  c.alpha = a.alpha;
  c.limit = a.limit;
  size_t ws = 0;
  check_status(moe_workspace_size(&X.ex, &c, &ws), "moe_workspace_size");
  moe_parallel par = torch_pool();
  moe_status st = moe_fused_experts(&X.ex, &c, workspace(ws), ws, &par);
  TORCH_CHECK(st != MOE_ERR_EXPERT_ID, "moeh: topk_ids holds an expert id outside [-1, E = ", X.ex.E, ")");
  check_status(st, "moe_fused_experts");
  return out;
}

int64_t method_from_flags(bool use_int8_w8a8, bool use_fp8_w8a16) {
  TORCH_CHECK(!(use_int8_w8a8 && use_fp8_w8a16), "moeh: use_int8_w8a8 and use_fp8_w8a16 are exclusive");
  return use_int8_w8a8 ? INT8_W8A8 : use_fp8_w8a16 ? FP8_W8A16 : UNQUANT;
}

void check_static_scales(int64_t method, const optional<Tensor> &a1_scale, const optional<Tensor> &a2_scale) {
  if (method != INT8_W8A8) return; // as SGLang: ignored when int8 is off
  TORCH_CHECK(!(a1_scale.has_value() && a1_scale->defined()), "static quantization for activation not supported.");
  TORCH_CHECK(!(a2_scale.has_value() && a2_scale->defined()), "static quantization for activation not supported.");
}

// ---- one-tensor prepack (convert_weight_packed) ------------------------------------------------------
constexpr char kMagicOne[8] = {'M', 'O', 'E', 'H', 'P', 'K', '1', 'T'};

struct OneHeader {
  char magic[8];       // "MOEHPK1T"
  int32_t header_bytes; // kHeaderBytes: the weight's bytes start there
  int32_t dtype;       // at::ScalarType of the weight
  int32_t dim;         // 2 or 3
  int32_t version;     // moe.h version that wrote it
  int64_t sizes[3];
  int64_t bytes;       // of the weight
};
static_assert(sizeof(OneHeader) <= (size_t)kHeaderBytes, "OneHeader must fit in the header");

bool is_one_tensor(const Tensor &t) {
  if (!t.defined() || !t.device().is_cpu() || t.scalar_type() != at::kByte || t.dim() != 1 || t.numel() < kHeaderBytes ||
      !t.is_contiguous())
    return false;
  return std::memcmp(t.data_ptr<uint8_t>(), kMagicOne, 8) == 0;
}

OneHeader read_one_header(const Tensor &t, const char *name) {
  OneHeader h;
  std::memcpy(&h, t.data_ptr<uint8_t>(), sizeof h);
  TORCH_CHECK(h.header_bytes == kHeaderBytes && (h.dim == 2 || h.dim == 3) && h.bytes == t.numel() - kHeaderBytes,
              "moeh: ", name, " has a damaged convert_weight_packed header");
  return h;
}

// The weight inside a one-tensor prepack, as a view (no copy) of its dtype and sizes.
Tensor one_tensor_weight(const Tensor &t, const char *name) {
  OneHeader h = read_one_header(t, name);
  return t.narrow(0, kHeaderBytes, h.bytes).view((at::ScalarType)h.dtype).view(c10::IntArrayRef(h.sizes, (size_t)h.dim));
}

Tensor convert_weight_packed(const Tensor &weight) {
  check_cpu(weight, "weight");
  const at::ScalarType type = weight.scalar_type();
  TORCH_CHECK(weight.dim() == 2 || weight.dim() == 3,
              "moeh: convert_weight_packed: weight must be 3-D [E, rows, cols] (experts) or 2-D (a shared expert), got ",
              weight.sizes());
  TORCH_CHECK(type != at::kInt, "moeh: convert_weight_packed: weight is int32: AWQ/GPTQ qweight words (and SGLang's "
              "convert_weight_packed_scale_zp layout) are not taken; convert them to moe.h's plain int4 codes (uint8, two "
              "per byte along K) with moeh.import_awq / moeh.import_gptq (moe_import.h) first");
  TORCH_CHECK(type == at::kBFloat16 || type == at::kHalf || type == at::kChar || type == at::kByte,
              "moeh: convert_weight_packed: weight must be bfloat16, float16, int8 or uint8 (fp8 e4m3 bytes, int4 "
              "and MXFP4 codes), got ", type);
  TORCH_CHECK(weight.numel() > 0, "moeh: convert_weight_packed: weight is empty: ", weight.sizes());
  Tensor w = weight.contiguous();
  const int64_t bytes = w.numel() * (int64_t)w.element_size();
  Tensor out = at::empty({kHeaderBytes + bytes}, at::kByte);
  OneHeader h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, kMagicOne, 8);
  h.header_bytes = (int32_t)kHeaderBytes;
  h.dtype = (int32_t)type;
  h.dim = (int32_t)w.dim();
  h.version = kVersion;
  for (int64_t i = 0; i < w.dim(); i++) h.sizes[i] = w.size(i);
  h.bytes = bytes;
  uint8_t *d = out.data_ptr<uint8_t>();
  std::memset(d, 0, kHeaderBytes);
  std::memcpy(d, &h, sizeof h);
  std::memcpy(d + kHeaderBytes, w.data_ptr(), (size_t)bytes);
  return out;
}

std::mutex g_bind_mutex;

// Packs a pair of one-tensor prepacks with the call's method and scales, each taking its two-tensor
// packed form in place; a no-op for two-tensor packed weights (or a pair another thread bound).
void bind_one_tensors(const Tensor &w1, const Tensor &w2, int64_t method, const optional<Tensor> &w1_scale,
                      const optional<Tensor> &w2_scale, const optional<Tensor> &w1_zero, const optional<Tensor> &w2_zero,
                      const IntListOpt &block_size, bool interleaved) {
  if (!is_one_tensor(w1) && !is_one_tensor(w2)) return;
  std::lock_guard<std::mutex> lock(g_bind_mutex);
  const bool o1 = is_one_tensor(w1), o2 = is_one_tensor(w2);
  if (!o1 && !o2) return;
  TORCH_CHECK(o1 && o2, "moeh: ", o1 ? "w1" : "w2", " comes from convert_weight_packed and ", o1 ? "w2" : "w1",
              " does not: pack both with convert_weight_packed (or both with convert_weight_packed_moe)");
  Tensor packed1, packed2;
  std::tie(packed1, packed2) = pack_plain(prepare_plain(one_tensor_weight(w1, "w1"), one_tensor_weight(w2, "w2"), method,
                                                        w1_scale, w2_scale, w1_zero, w2_zero, block_size, interleaved));
  at::NoGradGuard no_grad;
  const_cast<Tensor &>(w1).set_(packed1);
  const_cast<Tensor &>(w2).set_(packed2);
}

Experts experts_for_call(const Tensor &w1, const Tensor &w2, int64_t method, const optional<Tensor> &w1_scale,
                         const optional<Tensor> &w2_scale, const optional<Tensor> &w1_zero, const optional<Tensor> &w2_zero,
                         const IntListOpt &block_size, bool interleaved, bool is_vnni) {
  Experts X;
  TORCH_CHECK(is_vnni || (!is_one_tensor(w1) && !is_one_tensor(w2)),
              "moeh: w1/w2 come from convert_weight_packed: pass is_vnni=True");
  if (is_vnni) {
    bind_one_tensors(w1, w2, method, w1_scale, w2_scale, w1_zero, w2_zero, block_size, interleaved);
    X = experts_from_packed(w1, w2);
  } else {
    X = experts_from_plain(prepare_plain(w1, w2, method, w1_scale, w2_scale, w1_zero, w2_zero, block_size, interleaved));
  }
  check_method(X, method);
  return X;
}

// ---- operators --------------------------------------------------------------------------------------------
// SGLang 14-argument form.
Tensor fused_experts_cpu(const Tensor &hidden_states, const Tensor &w1, const Tensor &w2, const Tensor &topk_weights,
                         const Tensor &topk_ids, bool inplace, bool use_int8_w8a8, bool use_fp8_w8a16,
                         const optional<Tensor> &w1_scale, const optional<Tensor> &w2_scale,
                         const IntListOpt &block_size, const optional<Tensor> &a1_scale,
                         const optional<Tensor> &a2_scale, bool is_vnni) {
  const int64_t method = method_from_flags(use_int8_w8a8, use_fp8_w8a16);
  check_static_scales(method, a1_scale, a2_scale);
  Experts X = experts_for_call(w1, w2, method, w1_scale, w2_scale, c10::nullopt, c10::nullopt, block_size, false, is_vnni);
  TORCH_CHECK(!X.interleaved, "moeh: these weights were packed gate/up interleaved (gpt-oss): call the comp_method form with alpha/limit");
  return run_fused(hidden_states, X, topk_weights, topk_ids, inplace, ActSpec());
}

// SGLang moe_comp_method form with biases and gpt-oss parameters (17 arguments, + activation).
Tensor fused_experts_cpu_method(const Tensor &hidden_states, const Tensor &w1, const Tensor &w2,
                                const Tensor &topk_weights, const Tensor &topk_ids, bool inplace, int64_t moe_comp_method,
                                const optional<Tensor> &w1_scale, const optional<Tensor> &w2_scale,
                                const optional<Tensor> &w1_zero, const optional<Tensor> &w2_zero,
                                const IntListOpt &block_size, const optional<Tensor> &w1_bias,
                                const optional<Tensor> &w2_bias, optional<double> alpha, optional<double> limit,
                                bool is_vnni, optional<c10::string_view> activation) {
  ActSpec a = parse_act(alpha, limit, activation);
  const bool interleaved = a.act == MOE_ACT_SWIGLU_OAI; // the reference's gpt-oss rows (plain weights)
  Experts X = experts_for_call(w1, w2, moe_comp_method, w1_scale, w2_scale, w1_zero, w2_zero, block_size, interleaved,
                               is_vnni);
  attach_bias(X, w1_bias, w2_bias);
  return run_fused(hidden_states, X, topk_weights, topk_ids, inplace, a);
}

// SGLang moe_comp_method form without biases (13 arguments).
Tensor fused_experts_cpu_method_nobias(const Tensor &hidden_states, const Tensor &w1, const Tensor &w2,
                                       const Tensor &topk_weights, const Tensor &topk_ids, bool inplace,
                                       int64_t moe_comp_method, const optional<Tensor> &w1_scale,
                                       const optional<Tensor> &w2_scale, const optional<Tensor> &w1_zero,
                                       const optional<Tensor> &w2_zero, const IntListOpt &block_size,
                                       bool is_vnni) {
  Experts X = experts_for_call(w1, w2, moe_comp_method, w1_scale, w2_scale, w1_zero, w2_zero, block_size, false, is_vnni);
  TORCH_CHECK(!X.interleaved, "moeh: these weights were packed gate/up interleaved (gpt-oss): pass alpha/limit");
  return run_fused(hidden_states, X, topk_weights, topk_ids, inplace, ActSpec());
}

// out = shared(x) + routed_scaling_factor * fused_experts_out (routed NULL: shared(x) alone).
Tensor run_shared(const Tensor &hidden_states, const Tensor &w1, const Tensor &w2, const optional<Tensor> &fused_out,
                  optional<double> rsf, bool inplace, int64_t method, const optional<Tensor> &w1_scale,
                  const optional<Tensor> &w2_scale, const IntListOpt &block_size, bool is_vnni) {
  if (!is_vnni)
    TORCH_CHECK(w1.dim() == 2 && w2.dim() == 2, "moeh: shared_expert_cpu expects w1 [2N, K] and w2 [K, N], got ",
                w1.sizes(), " and ", w2.sizes());
  Experts X = experts_for_call(w1, w2, method, w1_scale, w2_scale, c10::nullopt, c10::nullopt, block_size, false, is_vnni);
  TORCH_CHECK(X.ex.E == 1, "moeh: shared_expert_cpu expects one expert (2-D weights), got E = ", X.ex.E);
  Tensor x = prepare_x(hidden_states, X.ex.K, inplace);
  Tensor routed;
  const bool add = rsf.has_value() && *rsf != 0.0;
  if (rsf.has_value()) TORCH_CHECK(fused_out.has_value() && fused_out->defined(), "shared_expert_cpu: expect fused_experts_out.");
  if (add) {
    check_cpu(*fused_out, "fused_experts_out");
    TORCH_CHECK(at::isFloatingType(fused_out->scalar_type()), "moeh: fused_experts_out must be floating point, got ",
                fused_out->scalar_type());
    TORCH_CHECK(fused_out->sizes() == x.sizes(), "moeh: fused_experts_out must have the shape of hidden_states ",
                x.sizes(), ", got ", fused_out->sizes());
    routed = fused_out->to(x.scalar_type()).contiguous();
  }
  Tensor out = inplace ? hidden_states : at::empty_like(x);
  if (x.size(0) == 0) return out;
  moe_call c = MOE_ZERO_INIT;
  c.x = x.data_ptr();
  c.out = out.data_ptr();
  c.dtype = dtype_of(x, "hidden_states");
  c.M = x.size(0);
  c.routed_scaling_factor = add ? (float)*rsf : 1.0f;
  size_t ws = 0;
  check_status(moe_shared_expert_workspace_size(&X.ex, &c, &ws), "moe_shared_expert_workspace_size");
  moe_parallel par = torch_pool();
  check_status(moe_shared_expert(&X.ex, &c, add ? routed.data_ptr() : nullptr, workspace(ws), ws, &par),
               "moe_shared_expert");
  return out;
}

// SGLang 14-argument form.
Tensor shared_expert_cpu(const Tensor &hidden_states, const Tensor &w1, const Tensor &w2, const Tensor &fused_experts_out,
                         double routed_scaling_factor, bool inplace, bool use_int8_w8a8, bool use_fp8_w8a16,
                         const optional<Tensor> &w1_scale, const optional<Tensor> &w2_scale,
                         const IntListOpt &block_size, const optional<Tensor> &a1_scale,
                         const optional<Tensor> &a2_scale, bool is_vnni) {
  const int64_t method = method_from_flags(use_int8_w8a8, use_fp8_w8a16);
  check_static_scales(method, a1_scale, a2_scale);
  return run_shared(hidden_states, w1, w2, fused_experts_out, routed_scaling_factor, inplace, method, w1_scale, w2_scale,
                    block_size, is_vnni);
}

// SGLang 12-argument form (optional routed output and scaling factor, no a1/a2).
Tensor shared_expert_cpu_opt(const Tensor &hidden_states, const Tensor &w1, const Tensor &w2,
                             const optional<Tensor> &fused_experts_out, optional<double> routed_scaling_factor,
                             bool inplace, bool use_int8_w8a8, bool use_fp8_w8a16, const optional<Tensor> &w1_scale,
                             const optional<Tensor> &w2_scale, const IntListOpt &block_size, bool is_vnni) {
  const int64_t method = method_from_flags(use_int8_w8a8, use_fp8_w8a16);
  return run_shared(hidden_states, w1, w2, fused_experts_out, routed_scaling_factor, inplace, method, w1_scale, w2_scale,
                    block_size, is_vnni);
}

std::tuple<Tensor, Tensor> convert_weight_packed_moe(const Tensor &w1, const Tensor &w2, int64_t moe_comp_method,
                                                     const optional<Tensor> &w1_scale, const optional<Tensor> &w2_scale,
                                                     const optional<Tensor> &w1_zero, const optional<Tensor> &w2_zero,
                                                     const IntListOpt &block_size, bool gate_up_interleaved) {
  return pack_plain(prepare_plain(w1, w2, moe_comp_method, w1_scale, w2_scale, w1_zero, w2_zero, block_size,
                                  gate_up_interleaved));
}

std::string packed_weight_info(const Tensor &packed) {
  if (is_one_tensor(packed)) {
    Tensor w = one_tensor_weight(packed, "packed");
    std::string s = "unbound ";
    s += c10::toString(w.scalar_type());
    for (int64_t i = 0; i < w.dim(); i++) s += (i ? ", " : " [") + std::to_string(w.size(i));
    return s + "] (convert_weight_packed: packed at its first is_vnni=True call) moe.h " MOE_VERSION_STRING;
  }
  PackedHeader h = read_header(packed, "packed");
  std::string s = std::string(h.role == 13 ? "W13" : "W2") + " " + moe_precision_name((moe_precision)h.precision) +
                  " E=" + std::to_string(h.E) + " N=" + std::to_string(h.N) + " K=" + std::to_string(h.K);
  if (h.precision == MOE_PREC_FP8)
    s += " block=[" + std::to_string(h.tmpl.block_n) + ", " + std::to_string(h.tmpl.block_k) + "]";
  if (h.precision == MOE_PREC_INT4_W4A8 || h.precision == MOE_PREC_INT4_W4A16) s += " group=" + std::to_string(h.tmpl.group);
  if (h.interleaved) s += " gate_up_interleaved";
  if (h.two_d) s += " 2d";
  s += " moe.h " MOE_VERSION_STRING;
  return s;
}

// ---- routing -----------------------------------------------------------------------------------------------
std::tuple<Tensor, Tensor> route(const Tensor &hidden_states, const Tensor &gating_output, moe_router r) {
  check_cpu(gating_output, "gating_output");
  TORCH_CHECK(gating_output.dim() == 2, "moeh: gating_output must be [M, E], got ", gating_output.sizes());
  TORCH_CHECK(hidden_states.dim() >= 1 && hidden_states.size(0) == gating_output.size(0),
              "Number of tokens mismatch: hidden_states ", hidden_states.sizes(), ", gating_output ", gating_output.sizes());
  const int64_t M = gating_output.size(0), E = gating_output.size(1);
  TORCH_CHECK(E >= 1 && E <= 1024, "moeh: num_experts must be in 1..1024, got ", E);
  Tensor g = gating_output.contiguous();
  moe_dtype t = dtype_of(g, "gating_output");
  r.E = (int32_t)E;
  check_status(moe_route(&r, g.data_ptr(), t, 0, nullptr, nullptr),
               "moe_route (the routing configuration for gating_output's experts)");
  Tensor w = at::empty({M, (int64_t)r.topk}, at::kFloat), ids = at::empty({M, (int64_t)r.topk}, at::kInt);
  moe_parallel par = torch_pool();
  check_status(moe_route_parallel(&r, g.data_ptr(), t, M, w.data_ptr<float>(), ids.data_ptr<int32_t>(), &par),
               "moe_route");
  return std::make_tuple(w, ids);
}

moe_router router_of(moe_route_kind kind, int64_t topk, bool renormalize) {
  moe_router r = MOE_ZERO_INIT;
  TORCH_CHECK(topk >= 1 && topk <= 1024, "moeh: bad topk ", topk);
  r.kind = kind;
  r.topk = (int32_t)topk;
  r.renormalize = renormalize ? 1 : 0;
  return r;
}

void grouped_args(moe_router &r, int64_t num_expert_group, int64_t topk_group, int64_t num_fused_shared_experts,
                  optional<double> routed_scaling_factor, const optional<Tensor> &num_token_non_padded) {
  TORCH_CHECK(num_fused_shared_experts == 0, "num_fused_shared_experts must be 0 default value, got: ",
              num_fused_shared_experts);
  TORCH_CHECK(!(num_token_non_padded.has_value() && num_token_non_padded->defined()),
              "num_token_non_padded must be None default value, got: ", *num_token_non_padded);
  TORCH_CHECK(num_expert_group >= 1 && num_expert_group <= 1024, "moeh: bad num_expert_group ", num_expert_group);
  TORCH_CHECK(topk_group >= 1 && topk_group <= num_expert_group, "moeh: topk_group must be in 1..num_expert_group, got ",
              topk_group);
  r.n_group = (int32_t)num_expert_group;
  r.topk_group = (int32_t)topk_group;
  if (routed_scaling_factor.has_value()) {
    TORCH_CHECK(*routed_scaling_factor != 0.0, "moeh: routed_scaling_factor must be nonzero");
    r.routed_scaling_factor = (float)*routed_scaling_factor;
  }
}

std::tuple<Tensor, Tensor> topk_softmax_cpu(const Tensor &hidden_states, const Tensor &gating_output, int64_t topk,
                                            bool renormalize) {
  return route(hidden_states, gating_output, router_of(MOE_ROUTE_SOFTMAX, topk, renormalize));
}

std::tuple<Tensor, Tensor> topk_sigmoid_cpu(const Tensor &hidden_states, const Tensor &gating_output, int64_t topk,
                                            bool renormalize) {
  return route(hidden_states, gating_output, router_of(MOE_ROUTE_SIGMOID, topk, renormalize));
}

std::tuple<Tensor, Tensor> grouped_topk_cpu(const Tensor &hidden_states, const Tensor &gating_output, int64_t topk,
                                            bool renormalize, int64_t num_expert_group, int64_t topk_group,
                                            int64_t num_fused_shared_experts, optional<double> routed_scaling_factor,
                                            const optional<Tensor> &num_token_non_padded) {
  moe_router r = router_of(MOE_ROUTE_GROUPED, topk, renormalize);
  grouped_args(r, num_expert_group, topk_group, num_fused_shared_experts, routed_scaling_factor, num_token_non_padded);
  return route(hidden_states, gating_output, r);
}

std::tuple<Tensor, Tensor> biased_grouped_topk_cpu(const Tensor &hidden_states, const Tensor &gating_output,
                                                   const Tensor &correction_bias, int64_t topk, bool renormalize,
                                                   int64_t num_expert_group, int64_t topk_group,
                                                   int64_t num_fused_shared_experts,
                                                   optional<double> routed_scaling_factor,
                                                   const optional<Tensor> &num_token_non_padded) {
  moe_router r = router_of(MOE_ROUTE_BIASED_GROUPED, topk, renormalize);
  grouped_args(r, num_expert_group, topk_group, num_fused_shared_experts, routed_scaling_factor, num_token_non_padded);
  check_cpu(correction_bias, "correction_bias");
  TORCH_CHECK(gating_output.dim() == 2 && correction_bias.numel() == gating_output.size(1),
              "Bias shape mismatch: correction_bias ", correction_bias.sizes(), " for gating_output ", gating_output.sizes());
  TORCH_CHECK(at::isFloatingType(correction_bias.scalar_type()), "moeh: correction_bias must be floating point, got ",
              correction_bias.scalar_type());
  Tensor bias = correction_bias.to(at::kFloat).contiguous();
  r.correction_bias = bias.data_ptr<float>();
  return route(hidden_states, gating_output, r); // bias stays alive until route returns
}

std::string isa_info() {
  std::string s = std::string("moe.h ") + moe_version() + ", kernels: " + moe_isa_name(moe_get_isa());
  return s;
}

} // namespace

TORCH_LIBRARY(moeh, m) {
  m.def("fused_experts_cpu(Tensor hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, Tensor topk_ids, "
        "bool inplace, bool use_int8_w8a8, bool use_fp8_w8a16, Tensor? w1_scale, Tensor? w2_scale, int[]? block_size, "
        "Tensor? a1_scale, Tensor? a2_scale, bool is_vnni) -> Tensor");
  m.impl("fused_experts_cpu", c10::DispatchKey::CPU, &fused_experts_cpu);
  m.def("fused_experts_cpu.comp_method(Tensor hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, "
        "Tensor topk_ids, bool inplace, int moe_comp_method, Tensor? w1_scale, Tensor? w2_scale, Tensor? w1_zero, "
        "Tensor? w2_zero, int[]? block_size, Tensor? w1_bias, Tensor? w2_bias, float? alpha, float? limit, "
        "bool is_vnni, str? activation=None) -> Tensor");
  m.impl("fused_experts_cpu.comp_method", c10::DispatchKey::CPU, &fused_experts_cpu_method);
  m.def("fused_experts_cpu.comp_method_nobias(Tensor hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, "
        "Tensor topk_ids, bool inplace, int moe_comp_method, Tensor? w1_scale, Tensor? w2_scale, Tensor? w1_zero, "
        "Tensor? w2_zero, int[]? block_size, bool is_vnni) -> Tensor");
  m.impl("fused_experts_cpu.comp_method_nobias", c10::DispatchKey::CPU, &fused_experts_cpu_method_nobias);
  m.def("shared_expert_cpu(Tensor hidden_states, Tensor w1, Tensor w2, Tensor fused_experts_out, "
        "float routed_scaling_factor, bool inplace, bool use_int8_w8a8, bool use_fp8_w8a16, Tensor? w1_scale, "
        "Tensor? w2_scale, int[]? block_size, Tensor? a1_scale, Tensor? a2_scale, bool is_vnni) -> Tensor");
  m.impl("shared_expert_cpu", c10::DispatchKey::CPU, &shared_expert_cpu);
  m.def("shared_expert_cpu.opt(Tensor hidden_states, Tensor w1, Tensor w2, Tensor? fused_experts_out, "
        "float? routed_scaling_factor, bool inplace, bool use_int8_w8a8, bool use_fp8_w8a16, Tensor? w1_scale, "
        "Tensor? w2_scale, int[]? block_size, bool is_vnni) -> Tensor");
  m.impl("shared_expert_cpu.opt", c10::DispatchKey::CPU, &shared_expert_cpu_opt);
  m.def("convert_weight_packed_moe(Tensor w1, Tensor w2, int moe_comp_method=0, Tensor? w1_scale=None, "
        "Tensor? w2_scale=None, Tensor? w1_zero=None, Tensor? w2_zero=None, int[]? block_size=None, "
        "bool gate_up_interleaved=False) -> (Tensor, Tensor)");
  m.impl("convert_weight_packed_moe", c10::DispatchKey::CPU, &convert_weight_packed_moe);
  m.def("convert_weight_packed(Tensor weight) -> Tensor");
  m.impl("convert_weight_packed", c10::DispatchKey::CPU, &convert_weight_packed);
  m.def("packed_weight_info(Tensor packed) -> str");
  m.impl("packed_weight_info", c10::DispatchKey::CPU, &packed_weight_info);
  m.def("topk_softmax_cpu(Tensor hidden_states, Tensor gating_output, int topk, bool renormalize) -> (Tensor, Tensor)");
  m.impl("topk_softmax_cpu", c10::DispatchKey::CPU, &topk_softmax_cpu);
  m.def("topk_sigmoid_cpu(Tensor hidden_states, Tensor gating_output, int topk, bool renormalize) -> (Tensor, Tensor)");
  m.impl("topk_sigmoid_cpu", c10::DispatchKey::CPU, &topk_sigmoid_cpu);
  m.def("grouped_topk_cpu(Tensor hidden_states, Tensor gating_output, int topk, bool renormalize, "
        "int num_expert_group, int topk_group, int num_fused_shared_experts, float? routed_scaling_factor, "
        "Tensor? num_token_non_padded) -> (Tensor, Tensor)");
  m.impl("grouped_topk_cpu", c10::DispatchKey::CPU, &grouped_topk_cpu);
  m.def("biased_grouped_topk_cpu(Tensor hidden_states, Tensor gating_output, Tensor correction_bias, int topk, "
        "bool renormalize, int num_expert_group, int topk_group, int num_fused_shared_experts, "
        "float? routed_scaling_factor, Tensor? num_token_non_padded) -> (Tensor, Tensor)");
  m.impl("biased_grouped_topk_cpu", c10::DispatchKey::CPU, &biased_grouped_topk_cpu);
  m.def("info() -> str", &isa_info);
}

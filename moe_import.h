/* moe_import.h — importers from the common checkpoint layouts to the plain layouts of moe_quant.h.
 * Part of moe.h (which includes it); the same MOE_IMPLEMENTATION / MOE_API rules as every moe header.
 *
 * No file I/O: each call reads tensors already in memory, as a safetensors reader maps them
 * (little-endian, any alignment: multi-byte values are read byte by byte), and fills one matrix of
 * one expert of the plain arrays that a moe_weights then points at.
 *
 *   importer               checkpoint tensors (one expert, one matrix)                     plain precision
 *   moe_import_fp8_block   DeepSeek-V3/R1, Kimi-K2, Qwen3-FP8: weight e4m3 [out, in],      MOE_PREC_FP8
 *                          weight_scale_inv f32 [ceil(out/bn), ceil(in/bk)]
 *   moe_import_awq         AutoAWQ GEMM: qweight i32 [in, out/8], qzeros i32               MOE_PREC_INT4_*
 *                          [in/group, out/8], scales f16 [in/group, out]
 *   moe_import_gptq        AutoGPTQ / GPTQModel v1 ("gptq"): qweight i32 [in/8, out],      MOE_PREC_INT4_*
 *                          qzeros i32 [ceil(in/group), out/8], scales f16 [ceil(in/group),
 *                          out], optional g_idx i32 [in]
 *   moe_import_mxfp4       gpt-oss: *_blocks u8 [out, in/32, 16], *_scales u8 [out, in/32] MOE_PREC_MXFP4
 *                          (gate_up_proj: gate/up rows interleaved)
 *   moe_import_bias        any bias vector (bf16, f16 or f32; gpt-oss gate_up_proj_bias    b13, b2 (f32)
 *                          interleaved) to f32
 *
 * Rows and columns: a checkpoint matrix is [out features, in features] (rows x cols, cols the
 * reduction dimension). gate_proj and up_proj are N x K, down_proj is K x N. The destination is one
 * expert's plain matrix of dst_rows rows (W13: 2N, W2: K); a call fills its rows [row0, row0 + rows)
 * and the scales, zero points or exponents of those rows, and nothing else:
 *
 *   gate_proj -> row0 = 0, up_proj -> row0 = N (dst_rows = 2N);  down_proj -> row0 = 0 (dst_rows = K)
 *
 * Plain destinations (moe_quant.h), for a destination of dst_rows x cols:
 *   fp8    q u8 [dst_rows][cols] e4m3; scale f32 [ceil(dst_rows/block_n)][ceil(cols/block_k)]
 *   int4   q u8 [dst_rows][ceil(cols/2)] (low nibble = even column); scale f32 and zero u8
 *          [dst_rows][ceil(cols/group)]; value = (q - zero) * scale
 *   mxfp4  q u8 [dst_rows][cols/2] e2m1 (low nibble = even column); e8m0 u8 [dst_rows][cols/32]
 * For E experts, point at expert e's slice: q + e * dst_rows * (row bytes), and so on.
 *
 * Every argument, and every checkpoint value that decides whether the import is possible (GPTQ's
 * g_idx), is checked before anything is written; on error the outputs are untouched.
 *   MOE_ERR_NULL         a required pointer is NULL
 *   MOE_ERR_SHAPE        rows, cols < 1; row0 < 0 or row0 + rows > dst_rows; a size the checkpoint
 *                        format requires (AWQ/GPTQ: out a multiple of 8; AWQ: in a multiple of group;
 *                        GPTQ: in a multiple of 8; mxfp4: in a multiple of 32, interleaved rows even)
 *   MOE_ERR_DESCRIPTOR   block_n, block_k or group < 1
 *   MOE_ERR_UNSUPPORTED  the precision is compiled out (MOE_NO_FP8, _INT4, _MXFP4), or the checkpoint
 *                        holds something the plain layout cannot represent exactly (below)
 *   MOE_ERR_ARG          a dtype other than MOE_BF16, MOE_F16, MOE_F32
 *   MOE_ERR_OVERFLOW     a byte count overflows size_t (or int64)
 * Checkpoint values are copied bit for bit (scales converted exactly to f32); they are not judged:
 * a NaN scale stays NaN, an e8m0 byte 255 is the e8m0 NaN (transformers' ldexp would make it 2^128).
 *
 * Not representable, MOE_ERR_UNSUPPORTED:
 *   - fp8: a matrix whose rows share a scale block with another matrix of the destination (row0 not
 *     a multiple of block_n, or rows not a multiple of block_n unless it ends the destination). With
 *     DeepSeek's 128 x 128 blocks, gate and up land in one W13 when N is a multiple of 128; else
 *     moe_import_fp8_block_rows re-blocks the scales to gcd(128, N) rows, exactly.
 *   - AWQ/GPTQ: group not a multiple of 32 (the packed int4 layout's granule); GPTQ bits other than 4.
 *   - GPTQ act-order (desc_act): a g_idx other than g_idx[i] = i / group. The plain layout scales
 *     contiguous runs of columns; a permuted g_idx would need the input features permuted too, and
 *     for W13 the input is the layer's x, shared by every expert (each with its own permutation).
 *
 * GPTQ v1 zero points of 0. v1 stores zero - 1, and the two producers disagree on a zero of 0 (a
 * group whose weights are nearly all non-negative; never with sym = true, where every zero is 8):
 * GPTQModel's v2 -> v1 export subtracts 0x11111111 from the whole int32 word (the -1 borrows from
 * the next nibble) and its loader adds 0x11111111 back; AutoGPTQ's pack ORs (0 - 1) as a uint32,
 * which sets that nibble and every higher one of the word to 15 (its own reader then sees zero 16).
 * moe_import_gptq decodes as GPTQModel does (word + 0x11111111, then nibbles): exact for GPTQModel
 * checkpoints and, whenever no nibble is 15, the same as AutoGPTQ's nibble + 1. A word AutoGPTQ
 * wrote with a zero of 0 has lost its higher zero points; no reader recovers them.
 */
#ifndef MOE_IMPORT_H
#define MOE_IMPORT_H

#include "moe_quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DeepSeek-V3 style block FP8 (also transformers' FP8Linear / "fp8" quant_method checkpoints).
 * weight: e4m3fn bytes [rows][cols] (rows = out features); weight_scale_inv: f32
 * [ceil(rows/block_n)][ceil(cols/block_k)], value = e4m3 * scale (block_n, block_k from
 * quantization_config.weight_block_size, [128, 128] for DeepSeek-V3). The plain fp8 layout is the
 * same, so this copies rows and block-rows of scales into place; set moe_weights.block_n/block_k to
 * the same block. Sources: deepseek-ai/DeepSeek-V3 inference/kernel.py (weight_dequant: scale
 * s[row/128][col/128] of a [cdiv(M,128), cdiv(N,128)] tensor) and inference/model.py (Linear.scale,
 * loaded from weight_scale_inv by inference/convert.py), README_WEIGHTS.md (edge blocks are
 * partial); huggingface/transformers src/transformers/integrations/finegrained_fp8.py (FP8Linear:
 * weight_scale_inv [ceil(out/bn), ceil(in/bk)], bn, bk = weight_block_size). */
MOE_API moe_status moe_import_fp8_block(const void *weight, const void *weight_scale_inv, int64_t rows, int64_t cols,
                                        int32_t block_n, int32_t block_k, uint8_t *q, float *scale, int64_t dst_rows,
                                        int64_t row0);
/* The same with the destination's scale blocks dst_block_n rows tall (a divisor of block_n): each
 * checkpoint scale is repeated over the destination blocks its block holds. For matrices whose
 * rows are not a multiple of block_n that share one destination, as gate and up in W13 when the
 * intermediate size N is not (DeepSeek-style 128 x 128 blocks, N = 192: each owns a partial last
 * block): dst_block_n = gcd(block_n, N) puts each in blocks of its own, exactly. Set
 * moe_weights.block_n to dst_block_n. MOE_ERR_DESCRIPTOR: dst_block_n < 1 or not a divisor of
 * block_n; MOE_ERR_UNSUPPORTED: row0 not a multiple of dst_block_n, or rows not one unless the
 * matrix ends the destination. */
MOE_API moe_status moe_import_fp8_block_rows(const void *weight, const void *weight_scale_inv, int64_t rows, int64_t cols,
                                             int32_t block_n, int32_t block_k, int32_t dst_block_n, uint8_t *q, float *scale,
                                             int64_t dst_rows, int64_t row0);

/* AutoAWQ "GEMM" version (WQLinear_GEMM), 4 bits. qweight: int32 [cols][rows/8] (cols = in
 * features, rows = out features), each word holding 8 consecutive out features in AWQ's nibble
 * order: nibble p (bits 4p..4p+3) holds feature 8w + {0, 2, 4, 6, 1, 3, 5, 7}[p] (AWQ_ORDER;
 * reading back uses AWQ_REVERSE_ORDER {0, 4, 1, 5, 2, 6, 3, 7}); qzeros: int32 [cols/group][rows/8],
 * same order, zero points stored as is; scales: [cols/group][rows] of scale_type (f16 in AutoAWQ);
 * value = (q - zero) * scale. cols must be a multiple of group (AutoAWQ's own requirement; a
 * group_size of -1 means group = cols). Set moe_weights.group = group. Sources:
 * casper-hansen/AutoAWQ awq/modules/linear/gemm.py (WQLinear_GEMM buffers and from_linear's
 * packing) and awq/utils/packing_utils.py (AWQ_ORDER, AWQ_REVERSE_ORDER, unpack_awq,
 * dequantize_gemm). */
MOE_API moe_status moe_import_awq(const void *qweight, const void *qzeros, const void *scales, moe_dtype scale_type,
                                  int64_t rows, int64_t cols, int32_t group, uint8_t *q, float *scale, uint8_t *zero,
                                  int64_t dst_rows, int64_t row0);

/* GPTQ, the classic v1 checkpoint format (AutoGPTQ; GPTQModel checkpoint_format "gptq"), bits = 4.
 * qweight: int32 [cols/8][rows], word (i, o) holding in features 8i..8i+7 of out feature o, lowest
 * bits first; qzeros: int32 [ceil(cols/group)][rows/8], nibble j of word (g, w) the zero point of
 * (group g, out feature 8w + j) minus 1 (the real zero is the nibble + 1; symmetric checkpoints
 * store 7 everywhere; zero points of 0: see the top comment); scales: [ceil(cols/group)][rows] of scale_type (f16 in AutoGPTQ); value =
 * scale[g_idx[i]] * (q - zero[g_idx[i]]). g_idx: int32 [cols] or NULL; accepted only when
 * g_idx[i] == i / group for every i (act-order checkpoints: see the top comment). The last group may
 * be partial. Set moe_weights.group = group (group_size -1 means group = cols). Sources:
 * AutoGPTQ/AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_cuda.py and qlinear_cuda_old.py
 * (QuantLinear buffers, pack(): `zeros -= 1` and the shifts; forward(): `zeros + 1` and the g_idx
 * gather); ModelCloud/GPTQModel gptqmodel/utils/model.py (convert_gptq_v1_to_v2_format_module adds
 * 0x11111111 to each 4-bit qzeros word, convert_gptq_v2_to_v1_format_module subtracts it). */
MOE_API moe_status moe_import_gptq(const void *qweight, const void *qzeros, const void *scales, moe_dtype scale_type,
                                   const void *g_idx, int32_t bits, int64_t rows, int64_t cols, int32_t group,
                                   uint8_t *q, float *scale, uint8_t *zero, int64_t dst_rows, int64_t row0);

/* gpt-oss MXFP4 experts (the released checkpoint, as transformers reads it). blocks: u8
 * [rows][cols/32][16], two e2m1 codes per byte, the low nibble the even column; scales: u8
 * [rows][cols/32] e8m0, value = e2m1 * 2^(scale - 127); e2m1 codes index
 * {+0, .5, 1, 1.5, 2, 3, 4, 6, -0, -.5, -1, -1.5, -2, -3, -4, -6}, i.e. sign in bit 3 as
 * moe_e2m1_to_f32. The byte layout equals the plain one; with gate_up_interleaved (gate_up_proj:
 * row 2i is gate i, row 2i + 1 is up i; rows = 2N, even) source row 2i goes to row0 + i and row
 * 2i + 1 to row0 + rows/2 + i, i.e. gate rows first; down_proj: gate_up_interleaved = 0. For expert
 * e pass blocks + e * rows * cols/2 and scales + e * rows * cols/32. Sources:
 * huggingface/transformers src/transformers/integrations/mxfp4.py (FP4_VALUES,
 * convert_moe_packed_tensors: low nibble to even columns, `scales - 127`, ldexp; Mxfp4GptOssExperts
 * tensor shapes) and src/transformers/models/gpt_oss/modeling_gpt_oss.py (GptOssExperts: gate =
 * gate_up[..., ::2], up = gate_up[..., 1::2], bias added before the split). */
MOE_API moe_status moe_import_mxfp4(const void *blocks, const void *scales, int64_t rows, int64_t cols,
                                    int gate_up_interleaved, uint8_t *q, uint8_t *e8m0, int64_t dst_rows, int64_t row0);

/* A bias vector of n elements of type `type` (bf16, f16, f32) to f32 dst[n]; with
 * gate_up_interleaved (gpt-oss gate_up_proj_bias [2N], n even) element 2i goes to dst[i] and 2i + 1
 * to dst[n/2 + i] (gate then up, as plain b13). Per expert: b13 + e * 2N, b2 + e * K. */
MOE_API moe_status moe_import_bias(const void *bias, moe_dtype type, int64_t n, int gate_up_interleaved, float *dst);

#ifdef __cplusplus
}
#endif

#ifdef MOE_IMPLEMENTATION
#ifndef MOE_IMPORT_IMPLEMENTATION_DONE
#define MOE_IMPORT_IMPLEMENTATION_DONE
/* ==== moe_import.h implementation ==== */
#include <string.h>

/* The largest byte count, as int64: min(INT64_MAX, SIZE_MAX). */
static inline int64_t moe__imp_max(void) {
  return (uint64_t)(size_t)-1 < (uint64_t)INT64_MAX ? (int64_t)(size_t)-1 : INT64_MAX;
}
/* *r = a * b for a, b >= 0; 0 when it exceeds moe__imp_max(). */
static inline int moe__imp_mul(int64_t a, int64_t b, int64_t *r) {
  if (a && b > moe__imp_max() / a) return 0;
  *r = a * b;
  return 1;
}
/* rows x cols of the source inside a destination of dst_rows rows, from row0. */
static inline int moe__imp_rows_ok(int64_t rows, int64_t cols, int64_t dst_rows, int64_t row0) {
  return rows >= 1 && cols >= 1 && dst_rows >= rows && row0 >= 0 && row0 <= dst_rows - rows;
}
/* Little-endian reads at any alignment. */
static inline uint32_t moe__imp_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline int moe__imp_dtype_ok(moe_dtype t) { return t == MOE_BF16 || t == MOE_F16 || t == MOE_F32; }
static inline size_t moe__imp_dtype_size(moe_dtype t) { return t == MOE_F32 ? 4 : 2; }
/* Element i of a bf16, f16 or f32 array, exactly as f32. */
static inline float moe__imp_f32(const uint8_t *p, moe_dtype t, int64_t i) {
  if (t == MOE_F32) return moe__bits_f32(moe__imp_u32(p + 4 * i));
  {
    uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
    return t == MOE_F16 ? moe_f16_to_f32(h) : moe_bf16_to_f32(h);
  }
}
/* The low 32 bits of x as 4 little-endian bytes at d. */
static inline void moe__imp_put4(uint8_t *d, uint64_t x) {
  d[0] = (uint8_t)x, d[1] = (uint8_t)(x >> 8), d[2] = (uint8_t)(x >> 16), d[3] = (uint8_t)(x >> 24);
}
/* Swaps the nibbles of a under mask << sh with those of b under mask. */
static inline void moe__imp_swap(uint64_t *a, uint64_t *b, int sh, uint64_t mask) {
  const uint64_t t = ((*a >> sh) ^ *b) & mask;
  *b ^= t, *a ^= t << sh;
}
/* Transposes two 8 x 8 nibble matrices at once, one in each half of m (row j: m[j], column p:
 * bits 4p..4p+3 of the half): swaps of 4 x 4, 2 x 2 and 1 x 1 blocks across the diagonal (rows j
 * and j + d, d = 4, 2, 1). */
static inline void moe__imp_nibble_transpose2(uint64_t m[8]) {
  for (int j = 0; j < 4; j++) moe__imp_swap(&m[j], &m[j + 4], 16, 0x0000FFFF0000FFFFu);
  moe__imp_swap(&m[0], &m[2], 8, 0x00FF00FF00FF00FFu), moe__imp_swap(&m[1], &m[3], 8, 0x00FF00FF00FF00FFu);
  moe__imp_swap(&m[4], &m[6], 8, 0x00FF00FF00FF00FFu), moe__imp_swap(&m[5], &m[7], 8, 0x00FF00FF00FF00FFu);
  for (int j = 0; j < 8; j += 2) moe__imp_swap(&m[j], &m[j + 1], 4, 0x0F0F0F0F0F0F0F0Fu);
}
#include "moe_tiers/transpose8.h" /* moe__word_transpose8_avx2 (GPTQ), under the same gate as below */
/* AutoAWQ's 8 x 8 nibble blocks with AVX2: 32 in features (rows i..i+31) x 8 words (w..w+7) per
 * call, the same swaps as moe__imp_nibble_transpose2 on four word pairs per vector, and 16-byte
 * stores (in features i..i+31 of one out row; 8-byte ones, half as many rows: 0.28 of memcpy).
 * moe__imp_simd (AWQ and GPTQ): -1 detect, 0 off (the tests compare both), 1 on. */
#if (defined(__x86_64__) || defined(_M_X64) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(MOE_NO_AVX2)
#include <immintrin.h>
#define MOE__IMP_AVX2 1
static int moe__imp_simd = -1;
static inline int moe__imp_avx2_on(void) {
  if (moe__imp_simd < 0) moe__imp_simd = __builtin_cpu_supports("avx2") ? 1 : 0;
  return moe__imp_simd;
}
__attribute__((target("avx2"))) static inline void moe__imp_swap8(__m256i *a, __m256i *b, int sh, uint64_t mask) {
  const __m256i t = _mm256_and_si256(_mm256_xor_si256(_mm256_srli_epi64(*a, sh), *b), _mm256_set1_epi64x((long long)mask));
  *b = _mm256_xor_si256(*b, t), *a = _mm256_xor_si256(*a, _mm256_slli_epi64(t, sh));
}
__attribute__((target("avx2"))) static inline void moe__imp_transpose8(__m256i m[8]) {
  for (int j = 0; j < 4; j++) moe__imp_swap8(&m[j], &m[j + 4], 16, 0x0000FFFF0000FFFFu);
  moe__imp_swap8(&m[0], &m[2], 8, 0x00FF00FF00FF00FFu), moe__imp_swap8(&m[1], &m[3], 8, 0x00FF00FF00FF00FFu);
  moe__imp_swap8(&m[4], &m[6], 8, 0x00FF00FF00FF00FFu), moe__imp_swap8(&m[5], &m[7], 8, 0x00FF00FF00FF00FFu);
  for (int j = 0; j < 8; j += 2) moe__imp_swap8(&m[j], &m[j + 1], 4, 0x0F0F0F0F0F0F0F0Fu);
}
/* Rows i..i+31 of words w..w+7 of qweight (wpr words per row) into out rows 8w.. of q (rb bytes each):
 * 16 bytes (in features i..i+31) of each of the 64 out rows, one store each. */
__attribute__((target("avx2"))) static inline void moe__imp_awq_block32(const uint8_t *qw, int64_t wpr, int64_t i, int64_t w,
                                                                       uint8_t *q, int64_t rb) {
  static const uint8_t row_of[8] = {0, 4, 1, 5, 2, 6, 3, 7}; /* out feature 8w + k: transposed row row_of[k] */
  __m256i m[4][8]; /* in features i + 8t.. of words w..w+7, transposed */
  for (int t = 0; t < 4; t++) {
    for (int j = 0; j < 8; j++) m[t][j] = _mm256_loadu_si256((const __m256i *)(const void *)(qw + 4 * ((i + 8 * t + j) * wpr + w)));
    moe__imp_transpose8(m[t]);
  }
  for (int k = 0; k < 8; k++) {
    /* dword d of m[t][r]: word w + d's out feature 8 (w + d) + k, in features i + 8t..; qword d of
     * p[h] (h: in features i.. or i + 16..) holds word w + d (p[h][0]: words 0-3, p[h][1]: 4-7) */
    __m256i p[2][2];
    for (int h = 0; h < 2; h++) {
      const __m256i a = m[2 * h][row_of[k]], b = m[2 * h + 1][row_of[k]];
      const __m256i lo = _mm256_unpacklo_epi32(a, b), hi = _mm256_unpackhi_epi32(a, b);
      p[h][0] = _mm256_permute2x128_si256(lo, hi, 0x20), p[h][1] = _mm256_permute2x128_si256(lo, hi, 0x31);
    }
    for (int g = 0; g < 2; g++) { /* words 4g..4g+3: [in i.., in i + 16..] of each, two per lane */
      const __m256i even = _mm256_unpacklo_epi64(p[0][g], p[1][g]), odd = _mm256_unpackhi_epi64(p[0][g], p[1][g]);
      uint8_t *d0 = q + (8 * (w + 4 * g) + k) * rb + i / 2;
      _mm_storeu_si128((__m128i *)(void *)d0, _mm256_castsi256_si128(even));                  /* word 4g     */
      _mm_storeu_si128((__m128i *)(void *)(d0 + 8 * rb), _mm256_castsi256_si128(odd));       /* word 4g + 1 */
      _mm_storeu_si128((__m128i *)(void *)(d0 + 16 * rb), _mm256_extracti128_si256(even, 1)); /* word 4g + 2 */
      _mm_storeu_si128((__m128i *)(void *)(d0 + 24 * rb), _mm256_extracti128_si256(odd, 1));  /* word 4g + 3 */
    }
  }
}
#endif

#ifdef MOE__IMP_AVX2
/* GPTQ's words with AVX2: the 8 x 8 block of words (word rows i..i+7, out rows o..o+7) transposed,
 * so each out row gets its 8 words (in features 64 (i / 8) .. + 63: 32 plain bytes) in one store. */
__attribute__((target("avx2"))) static inline void moe__imp_gptq_block8(const uint8_t *qw, int64_t rows, int64_t i, int64_t o,
                                                                       uint8_t *q, int64_t rb) {
  __m256i r[8];
  for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_si256((const __m256i *)(const void *)(qw + 4 * ((i + j) * rows + o)));
  moe__word_transpose8_avx2(r);
  for (int c = 0; c < 8; c++) _mm256_storeu_si256((__m256i *)(void *)(q + (o + c) * rb + 4 * i), r[c]);
}
#endif

/* The byte counts of the int4 checks: codes and metadata of the destination, and the checkpoint's
 * packed words and scales. 0 on overflow. */
static inline int moe__imp_int4_sizes(int64_t rows, int64_t cols, int64_t dst_rows, int64_t ng, moe_dtype scale_type) {
  int64_t t;
  return moe__imp_mul(dst_rows, moe__cdiv(cols, 2), &t) && moe__imp_mul(dst_rows, ng, &t) &&
         moe__imp_mul(t, 4, &t) && moe__imp_mul(rows, cols / 2, &t) && moe__imp_mul(ng, rows, &t) &&
         moe__imp_mul(t, (int64_t)moe__imp_dtype_size(scale_type), &t);
}

/* The group scales and zero points of an int4 checkpoint (AWQ, GPTQ: scales [ng][rows] of
 * scale_type, qzeros [ng][rows / 8] words, out row o's zero point in nibble nib[o % 8] of word + add)
 * into scale and zero [dst_rows][ng] from row row0, eight out rows (one zero word) at a time. */
static inline void moe__imp_int4_meta(const uint8_t *qz, const uint8_t *sc, moe_dtype scale_type, int64_t rows, int64_t ng,
                                      uint32_t add, const uint8_t nib[8], float *scale, uint8_t *zero, int64_t row0) {
  const int64_t wpr = rows / 8; /* qzeros words per group row */
  for (int64_t o = 0; o < rows; o += 8)
    for (int64_t g = 0; g < ng; g++) {
      const uint32_t z = moe__imp_u32(qz + 4 * (g * wpr + o / 8)) + add;
      for (int j = 0; j < 8; j++) {
        scale[(row0 + o + j) * ng + g] = moe__imp_f32(sc, scale_type, g * rows + o + j);
        zero[(row0 + o + j) * ng + g] = (uint8_t)((z >> (4u * nib[j])) & 15u);
      }
    }
}

MOE_API moe_status moe_import_fp8_block(const void *weight, const void *weight_scale_inv, int64_t rows, int64_t cols,
                                        int32_t block_n, int32_t block_k, uint8_t *q, float *scale, int64_t dst_rows,
                                        int64_t row0) {
  int64_t nrb, ncb, t;
  if (!moe_precision_compiled(MOE_PREC_FP8)) return MOE_ERR_UNSUPPORTED;
  if (!weight || !weight_scale_inv || !q || !scale) return MOE_ERR_NULL;
  if (!moe__imp_rows_ok(rows, cols, dst_rows, row0)) return MOE_ERR_SHAPE;
  if (block_n < 1 || block_k < 1) return MOE_ERR_DESCRIPTOR;
  /* each scale block of the destination must come from one matrix */
  if (row0 % block_n != 0 || (rows % block_n != 0 && row0 + rows != dst_rows)) return MOE_ERR_UNSUPPORTED;
  nrb = moe__cdiv(rows, block_n);
  ncb = moe__cdiv(cols, block_k);
  if (!moe__imp_mul(dst_rows, cols, &t) || !moe__imp_mul(moe__cdiv(dst_rows, block_n), ncb, &t) ||
      !moe__imp_mul(t, 4, &t))
    return MOE_ERR_OVERFLOW;
  /* same layout: the rows, and the block rows of scales (f32 bytes, little-endian like the host) */
  memcpy(q + row0 * cols, weight, (size_t)(rows * cols));
  memcpy(scale + (row0 / block_n) * ncb, weight_scale_inv, (size_t)(nrb * ncb) * sizeof(float));
  return MOE_OK;
}

MOE_API moe_status moe_import_fp8_block_rows(const void *weight, const void *weight_scale_inv, int64_t rows, int64_t cols,
                                             int32_t block_n, int32_t block_k, int32_t dst_block_n, uint8_t *q, float *scale,
                                             int64_t dst_rows, int64_t row0) {
  const uint8_t *s = (const uint8_t *)weight_scale_inv;
  int64_t ncb, t;
  if (!moe_precision_compiled(MOE_PREC_FP8)) return MOE_ERR_UNSUPPORTED;
  if (!weight || !weight_scale_inv || !q || !scale) return MOE_ERR_NULL;
  if (!moe__imp_rows_ok(rows, cols, dst_rows, row0)) return MOE_ERR_SHAPE;
  if (block_n < 1 || block_k < 1 || dst_block_n < 1 || block_n % dst_block_n != 0) return MOE_ERR_DESCRIPTOR;
  if (row0 % dst_block_n != 0 || (rows % dst_block_n != 0 && row0 + rows != dst_rows)) return MOE_ERR_UNSUPPORTED;
  ncb = moe__cdiv(cols, block_k);
  if (!moe__imp_mul(dst_rows, cols, &t) || !moe__imp_mul(moe__cdiv(dst_rows, dst_block_n), ncb, &t) ||
      !moe__imp_mul(t, 4, &t) || !moe__imp_mul(moe__cdiv(rows, block_n), ncb, &t) || !moe__imp_mul(t, 4, &t))
    return MOE_ERR_OVERFLOW;
  memcpy(q + row0 * cols, weight, (size_t)(rows * cols));
  /* destination block b (rows b * dst_block_n .. of this matrix) lies in checkpoint block b * dst / block_n */
  for (int64_t b = 0; b < moe__cdiv(rows, dst_block_n); b++)
    memcpy(scale + (row0 / dst_block_n + b) * ncb, s + (size_t)(b * dst_block_n / block_n * ncb) * sizeof(float),
           (size_t)ncb * sizeof(float));
  return MOE_OK;
}

MOE_API moe_status moe_import_awq(const void *qweight, const void *qzeros, const void *scales, moe_dtype scale_type,
                                  int64_t rows, int64_t cols, int32_t group, uint8_t *q, float *scale, uint8_t *zero,
                                  int64_t dst_rows, int64_t row0) {
  /* nibble p of a word holds out feature 8w + col_of[p] (AWQ_ORDER); nib_of is its inverse
   * (AWQ_REVERSE_ORDER): out feature 8w + k sits in nibble nib_of[k] */
  static const uint8_t nib_of[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  const uint8_t *qw = (const uint8_t *)qweight, *qz = (const uint8_t *)qzeros, *sc = (const uint8_t *)scales;
  int64_t wpr, ng, rb, i, w;
  if (!moe_precision_compiled(MOE_PREC_INT4_W4A16)) return MOE_ERR_UNSUPPORTED;
  if (!qweight || !qzeros || !scales || !q || !scale || !zero) return MOE_ERR_NULL;
  if (!moe__imp_rows_ok(rows, cols, dst_rows, row0) || rows % 8 != 0) return MOE_ERR_SHAPE;
  if (group < 1) return MOE_ERR_DESCRIPTOR;
  if (group % 32 != 0) return MOE_ERR_UNSUPPORTED;
  if (cols % group != 0) return MOE_ERR_SHAPE;
  if (!moe__imp_dtype_ok(scale_type)) return MOE_ERR_ARG;
  wpr = rows / 8; /* words per qweight row */
  ng = cols / group;
  rb = cols / 2; /* cols is even: a multiple of group */
  if (!moe__imp_int4_sizes(rows, cols, dst_rows, ng, scale_type)) return MOE_ERR_OVERFLOW;
  q += row0 * rb;
  /* words (8i + j, w) for j < 8 are an 8 x 8 nibble matrix (row j: in feature 8i + j, nibble p:
   * out feature 8w + col_of[p]); transposed, its row p holds out feature 8w + col_of[p]'s plain
   * 4 bytes of in features 8i..8i+7. Words w in blocks of 8 (64 out rows) keep the rows written
   * in cache while i runs. */
  for (int64_t w0 = 0; w0 < wpr; w0 += 16)          /* a 64-byte line of each qweight row */
    for (int64_t i0 = 0; i0 < cols; i0 += 128) {      /* 64 bytes (a line) of each of 128 out rows */
      const int64_t i1 = i0 + 128 < cols ? i0 + 128 : cols, w1 = w0 + 16 < wpr ? w0 + 16 : wpr;
      int64_t wv = w0; /* words below wv are done (AVX2: 8 at a time; i1 - i0 is a multiple of 32) */
#ifdef MOE__IMP_AVX2
      if (moe__imp_avx2_on())
        for (; wv + 8 <= w1; wv += 8)
          for (i = i0; i < i1; i += 32) moe__imp_awq_block32(qw, wpr, i, wv, q, rb);
#endif
      for (i = i0; i < i1; i += 8)
      for (w = wv; w < w1; w += 2) { /* words w and w + 1 side by side */
        const int two = w + 1 < wpr;
        uint64_t m[8];
        for (int j = 0; j < 8; j++) {
          const uint8_t *x = qw + 4 * ((i + j) * wpr + w);
          m[j] = moe__imp_u32(x) | (two ? (uint64_t)moe__imp_u32(x + 4) << 32 : 0);
        }
        moe__imp_nibble_transpose2(m);
        for (int h = 0; h < 1 + two; h++) { /* out feature 8 (w + h) + k: row nib_of[k] */
          uint8_t *d = q + 8 * (w + h) * rb + i / 2;
          const int sh = 32 * h;
          moe__imp_put4(d, m[0] >> sh), moe__imp_put4(d + rb, m[4] >> sh), moe__imp_put4(d + 2 * rb, m[1] >> sh);
          moe__imp_put4(d + 3 * rb, m[5] >> sh), moe__imp_put4(d + 4 * rb, m[2] >> sh), moe__imp_put4(d + 5 * rb, m[6] >> sh);
          moe__imp_put4(d + 6 * rb, m[3] >> sh), moe__imp_put4(d + 7 * rb, m[7] >> sh);
        }
      }
    }
  moe__imp_int4_meta(qz, sc, scale_type, rows, ng, 0, nib_of, scale, zero, row0);
  return MOE_OK;
}

MOE_API moe_status moe_import_gptq(const void *qweight, const void *qzeros, const void *scales, moe_dtype scale_type,
                                   const void *g_idx, int32_t bits, int64_t rows, int64_t cols, int32_t group,
                                   uint8_t *q, float *scale, uint8_t *zero, int64_t dst_rows, int64_t row0) {
  const uint8_t *qw = (const uint8_t *)qweight, *qz = (const uint8_t *)qzeros, *sc = (const uint8_t *)scales;
  const uint8_t *gi = (const uint8_t *)g_idx;
  int64_t ng, rb, i, o;
  if (!moe_precision_compiled(MOE_PREC_INT4_W4A16)) return MOE_ERR_UNSUPPORTED;
  if (!qweight || !qzeros || !scales || !q || !scale || !zero) return MOE_ERR_NULL;
  if (bits != 4) return MOE_ERR_UNSUPPORTED;
  if (!moe__imp_rows_ok(rows, cols, dst_rows, row0) || rows % 8 != 0 || cols % 8 != 0) return MOE_ERR_SHAPE;
  if (group < 1) return MOE_ERR_DESCRIPTOR;
  if (group % 32 != 0) return MOE_ERR_UNSUPPORTED;
  if (!moe__imp_dtype_ok(scale_type)) return MOE_ERR_ARG;
  ng = moe__cdiv(cols, group);
  rb = cols / 2;
  if (!moe__imp_int4_sizes(rows, cols, dst_rows, ng, scale_type)) return MOE_ERR_OVERFLOW;
  /* act-order: only the trivial g_idx (groups contiguous along cols) has a plain equivalent */
  if (gi)
    for (i = 0; i < cols; i++) {
      uint32_t v = moe__imp_u32(gi + 4 * i); /* int32; a negative one reads above INT32_MAX */
      if (v > (uint32_t)INT32_MAX || (int64_t)v != i / group) return MOE_ERR_UNSUPPORTED;
    }
  /* word (r, o) holds in features 8r..8r+7, lowest bits first: its little-endian bytes are exactly
   * the plain bytes 4r..4r+3 of row o (low nibble = even column) */
  q += row0 * rb;
  for (int64_t o0 = 0; o0 < rows; o0 += 16) { /* 16 out rows (one line of words) at a time, in L1 while i runs */
    const int64_t o1 = o0 + 16 < rows ? o0 + 16 : rows; /* rows is a multiple of 8 */
    int64_t iv = 0;                                     /* word rows below iv are done */
#ifdef MOE__IMP_AVX2
    if (moe__imp_avx2_on())
      for (; iv + 8 <= cols / 8; iv += 8)
        for (o = o0; o < o1; o += 8) moe__imp_gptq_block8(qw, rows, iv, o, q, rb);
#endif
    for (i = iv; i < cols / 8; i++)
      for (o = o0; o < o1; o++) memcpy(q + o * rb + 4 * i, qw + 4 * (i * rows + o), 4);
  }
  { /* v1 stores zero - 1; undone on the whole word, as GPTQModel does (top comment) */
    static const uint8_t in_order[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    moe__imp_int4_meta(qz, sc, scale_type, rows, ng, 0x11111111u, in_order, scale, zero, row0);
  }
  return MOE_OK;
}

MOE_API moe_status moe_import_mxfp4(const void *blocks, const void *scales, int64_t rows, int64_t cols,
                                    int gate_up_interleaved, uint8_t *q, uint8_t *e8m0, int64_t dst_rows, int64_t row0) {
  const uint8_t *bl = (const uint8_t *)blocks, *sc = (const uint8_t *)scales;
  int64_t rb, nb, s, t;
  if (!moe_precision_compiled(MOE_PREC_MXFP4)) return MOE_ERR_UNSUPPORTED;
  if (!blocks || !scales || !q || !e8m0) return MOE_ERR_NULL;
  if (!moe__imp_rows_ok(rows, cols, dst_rows, row0) || cols % 32 != 0 || (gate_up_interleaved && rows % 2 != 0))
    return MOE_ERR_SHAPE;
  rb = cols / 2;
  nb = cols / 32;
  if (!moe__imp_mul(dst_rows, rb, &t)) return MOE_ERR_OVERFLOW;
  for (s = 0; s < rows; s++) {
    int64_t d = row0 + (gate_up_interleaved ? (s % 2 ? rows / 2 : 0) + s / 2 : s);
    memcpy(q + d * rb, bl + s * rb, (size_t)rb);
    memcpy(e8m0 + d * nb, sc + s * nb, (size_t)nb);
  }
  return MOE_OK;
}

MOE_API moe_status moe_import_bias(const void *bias, moe_dtype type, int64_t n, int gate_up_interleaved, float *dst) {
  const uint8_t *b = (const uint8_t *)bias;
  int64_t i, t;
  if (!bias || !dst) return MOE_ERR_NULL;
  if (n < 1 || (gate_up_interleaved && n % 2 != 0)) return MOE_ERR_SHAPE;
  if (!moe__imp_dtype_ok(type)) return MOE_ERR_ARG;
  if (!moe__imp_mul(n, 4, &t)) return MOE_ERR_OVERFLOW;
  for (i = 0; i < n; i++) dst[gate_up_interleaved ? (i % 2 ? n / 2 : 0) + i / 2 : i] = moe__imp_f32(b, type, i);
  return MOE_OK;
}

#endif /* MOE_IMPORT_IMPLEMENTATION_DONE */
#endif /* MOE_IMPLEMENTATION */
#endif /* MOE_IMPORT_H */

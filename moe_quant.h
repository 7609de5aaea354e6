/* moe_quant.h — the base vocabulary of moe.h: status codes, dtypes, precisions, conversions,
 * activation quantization, weight quantizers and the plain weight descriptor (the packers that turn
 * it into the kernel layout live in moe_gemm.h, beside the layouts).
 *
 * Part of moe.h (see moe.h's top comment for the configuration macros and the whole contract).
 * Declarations are always visible; definitions only under `#define MOE_IMPLEMENTATION`.
 */
#ifndef MOE_QUANT_H
#define MOE_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* Linkage of every public function. With MOE_IMPLEMENTATION the definitions are `static inline`
 * (header-only use); without it the declarations are `extern` (link against libmoe). Define MOE_API
 * yourself to export the definitions from one object, as moe.c does (`#define MOE_API`). */
#ifndef MOE_API
#if defined(MOE_IMPLEMENTATION)
#define MOE_API static inline
#else
#define MOE_API extern
#endif
#endif

/* Contradictory configurations stop here. */
#if defined(MOE_NO_BF16) && defined(MOE_NO_INT8) && defined(MOE_NO_FP8) && defined(MOE_NO_INT4) && \
    defined(MOE_NO_MXFP4)
#error "all precisions are compiled out (MOE_NO_BF16, _INT8, _FP8, _INT4, _MXFP4): keep at least one"
#endif

/* The zero initialiser of every moe struct (zero means defaults), warning-free in C and in C++,
 * where `= {0}` draws -Wmissing-field-initializers:  moe_call c = MOE_ZERO_INIT; */
#ifdef __cplusplus
#define MOE_ZERO_INIT {}
#else
#define MOE_ZERO_INIT {0}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes: one list drives the enum and moe_status_str() ---------------------------- */
#define MOE_STATUS_LIST(X)                                                                           \
  X(MOE_OK, 0, "success")                                                                            \
  X(MOE_ERR_NULL, -1, "a required pointer is NULL")                                                  \
  X(MOE_ERR_SHAPE, -2, "a size is out of range (E, N, K, topk >= 1, topk <= E, M >= 0)")             \
  X(MOE_ERR_EXPERT_ID, -3, "an expert id is >= E or < -1, or the expert map points out of range")  \
  X(MOE_ERR_WORKSPACE, -4, "workspace is NULL or smaller than the size query returned")              \
  X(MOE_ERR_UNSUPPORTED, -5, "precision or dtype compiled out, or not supported by this call")       \
  X(MOE_ERR_DESCRIPTOR, -6, "inconsistent weight descriptor (missing scales, bad block or group)")   \
  X(MOE_ERR_OVERFLOW, -7, "a byte count overflows size_t")                                           \
  X(MOE_ERR_BUFFER, -8, "destination buffer smaller than the size query returned")                   \
  X(MOE_ERR_ARG, -9, "invalid argument (enum value out of range, bad routing configuration)")

#define MOE__STATUS_ENUM(name, value, text) name = value,
typedef enum moe_status { MOE_STATUS_LIST(MOE__STATUS_ENUM) MOE__STATUS_END = 1 } moe_status;
#undef MOE__STATUS_ENUM

/* A short English sentence for every status; "unknown status" for anything else. Never NULL. */
MOE_API const char *moe_status_str(moe_status s);

/* ---- element types of activations, outputs and router logits -------------------------------- */
typedef enum moe_dtype {
  MOE_BF16 = 0, /* default: bfloat16 stored as uint16_t */
  MOE_F16 = 1,  /* IEEE binary16 stored as uint16_t */
  MOE_F32 = 2
} moe_dtype;

/* ---- precisions: one list drives the enum, the names, what is compiled in and the packed layout --
 * Columns: enum, value, name, the plain code and the packed code (BF16, F16, I8, E4M3, U4, E2M1),
 * KR (k interleave of the packed panels), A8 (activations quantized per token to u8), the scales
 * beside the codes (NONE; CHANNEL: per output channel; BLOCK: bn x bk blocks; GROUP: scale + zero
 * point per group along k; E8M0: an exponent per 32 along k), and whether it is compiled in. */
#define MOE_PRECISION_LIST(X)                                                                         \
  X(MOE_PREC_BF16, 0, "bf16", BF16, BF16, 2, 0, NONE, MOE__ON_BF16)                                   \
  X(MOE_PREC_FP16, 1, "fp16", F16, BF16, 2, 0, NONE, MOE__ON_BF16)                                    \
  X(MOE_PREC_INT8, 2, "int8", I8, I8, 4, 1, CHANNEL, MOE__ON_INT8)                                    \
  X(MOE_PREC_FP8, 3, "fp8", E4M3, E4M3, 2, 0, BLOCK, MOE__ON_FP8)                                     \
  X(MOE_PREC_INT4_W4A8, 4, "int4-w4a8", U4, U4, 4, 1, GROUP, MOE__ON_INT4)                            \
  X(MOE_PREC_INT4_W4A16, 5, "int4-w4a16", U4, U4, 8, 0, GROUP, MOE__ON_INT4)                          \
  X(MOE_PREC_MXFP4, 6, "mxfp4", E2M1, E2M1, 8, 0, E8M0, MOE__ON_MXFP4)

/* What each precision is (weights, activations, compute):
 *   bf16        bf16 weights, bf16 activations, f32 accumulation
 *   fp16        fp16 weights converted to bf16 at pack time, then as bf16
 *   int8        W8A8: int8 per-output-channel weights, per-token int8 activations
 *   fp8         W8A16: e4m3 weights with f32 block scales, bf16 activations
 *   int4-w4a8   uint4 weights, per-group zero + f32 scale, per-token int8 activations
 *   int4-w4a16  the same weights, bf16 activations
 *   mxfp4       e2m1 weights, e8m0 scale per 32 along K, bf16 activations */
#define MOE__PREC_ENUM(e, value, ...) e = value,
typedef enum moe_precision { MOE_PRECISION_LIST(MOE__PREC_ENUM) MOE_PREC_COUNT = 7 } moe_precision;
#undef MOE__PREC_ENUM

/* "bf16", "fp16", "int8", "fp8", "int4-w4a8", "int4-w4a16", "mxfp4"; NULL when out of range. */
MOE_API const char *moe_precision_name(moe_precision p);
/* 1 when the precision is compiled in (not removed by a MOE_NO_* macro), else 0. */
MOE_API int moe_precision_compiled(moe_precision p);

/* ---- scalar conversions ---------------------------------------------------------------------- */
MOE_API uint16_t moe_f32_to_bf16(float f);  /* round to nearest even; NaN stays NaN (quiet)      */
MOE_API float moe_bf16_to_f32(uint16_t h);  /* exact                                              */
MOE_API uint16_t moe_f32_to_f16(float f);   /* round to nearest even; overflow to Inf; NaN stays */
MOE_API float moe_f16_to_f32(uint16_t h);   /* exact, subnormals included                         */
MOE_API uint8_t moe_f32_to_e4m3(float f);   /* OCP e4m3fn: RNE, saturates at ±448, NaN -> 0x7F/FF */
MOE_API float moe_e4m3_to_f32(uint8_t v);   /* exact for all 256 codes; 0x7F and 0xFF are NaN     */
MOE_API uint8_t moe_f32_to_e2m1(float f);   /* 4-bit code (sign in bit 3), RNE, saturates at ±6;  */
                                            /* e2m1 has no NaN: NaN maps to code 0 (+0)           */
MOE_API float moe_e2m1_to_f32(uint8_t code);/* low 4 bits: ±{0, .5, 1, 1.5, 2, 3, 4, 6}          */
MOE_API float moe_e8m0_to_f32(uint8_t e);   /* 2^(e-127); 255 is NaN                              */

/* n elements of type t to/from f32 (bf16/f16 rounding as above). */
MOE_API void moe_convert_to_f32(moe_dtype t, const void *src, float *dst, size_t n);
MOE_API void moe_convert_from_f32(moe_dtype t, const float *src, void *dst, size_t n);

/* ---- activation quantization ------------------------------------------------------------------
 * Per-token symmetric int8: scale = max(amax, 1e-7) / 127, q = round_half_even(x / scale) in
 * [-127, 127], stored as the unsigned byte q + 128 (VNNI's u8 x s8). Returns the scale. A NaN or Inf
 * in the row makes the scale NaN or Inf, so it propagates into every output that uses the row. */
MOE_API float moe_quantize_row_u8(const float *x, int64_t n, uint8_t *q);
/* A quantized row's sums per k group, for INT4 W4A8's zero points (moe_gemm_args.a_group_sum):
 * sums[j] = sum of (q[k] - 128) over k in [j * group, min((j + 1) * group, n)), ceil(n / group) of
 * them. MOE_ERR_NULL (q or sums NULL, n > 0), MOE_ERR_ARG (n < 0, group < 1, n > 2^24: the sums
 * must fit int32), nothing written. */
MOE_API moe_status moe_sum_groups_u8(const uint8_t *q, int64_t n, int32_t group, int32_t *sums);

/* ---- weight quantizers: f32 [E, rows, cols] row-major -> the plain quantized layouts ----------
 * int8 per output channel: scale[e, r] = max(amax, 1e-10) / 127, q = RNE(w / scale).            */
MOE_API void moe_quantize_weight_int8(const float *w, int64_t E, int64_t rows, int64_t cols, int8_t *q,
                                      float *scale);
/* fp8 e4m3 block-wise, blocks of block_rows x block_cols (any >= 1; edge blocks may be partial):
 * scale[e, rb, cb] = amax / 448 (1 for an all-zero block), q = e4m3(w / scale).
 * scale has E * ceil(rows/block_rows) * ceil(cols/block_cols) entries.                         */
MOE_API void moe_quantize_weight_fp8(const float *w, int64_t E, int64_t rows, int64_t cols, int block_rows,
                                     int block_cols, uint8_t *q, float *scale);
/* int4 group-wise asymmetric along cols (group a multiple of 32; the last group may be partial):
 * per (row, group) with lo = min(w, 0), hi = max(w, 0): scale = (hi - lo) / 15 (1 when hi == lo),
 * zero = clamp(RNE(-lo / scale), 0, 15), q = clamp(RNE(w / scale) + zero, 0, 15); W = (q - zero) * scale.
 * q holds two codes per byte along cols, low nibble first, rows padded to ceil(cols/2) bytes;
 * scale and zero have E * rows * ceil(cols/group) entries.                                          */
MOE_API void moe_quantize_weight_int4(const float *w, int64_t E, int64_t rows, int64_t cols, int group,
                                      uint8_t *q, float *scale, uint8_t *zero);
/* MXFP4 (OCP MX): per 32 along cols, e8m0 exponent s = clamp(floor(log2(amax)) - 2 + 127, 0, 254)
 * (127 for an all-zero block), q = e2m1(w / 2^(s-127)); W = e2m1(q) * 2^(s-127). Codes two per byte
 * along cols, low nibble first, rows padded to ceil(cols/2) bytes; scale has E*rows*ceil(cols/32). */
MOE_API void moe_quantize_weight_mxfp4(const float *w, int64_t E, int64_t rows, int64_t cols, uint8_t *q,
                                       uint8_t *scale);
/* In all four, a NaN weight makes the scale of its row, block or group NaN (e8m0 255 for mxfp4, whose
 * Inf blocks get 254), so the damage shows after dequantization; every code stays in range. */

/* ---- weight descriptors ------------------------------------------------------------------------
 * Plain layouts (what checkpoints hold, after an importer): W13 [E, 2N, K] with the gate rows 0..N-1
 * first and the up rows N..2N-1 after them; W2 [E, K, N]; row-major. 4-bit codes two per byte along
 * the reduction dimension (low nibble first), each row padded to a whole byte. "rows x cols" below
 * is 2N x K for W13 and K x N for W2.                                                              */
typedef struct moe_weights {
  int64_t E, N, K;                   /* an integer first: `moe_weights w = {0};` works in C and C++ */
  moe_precision precision;
  const void *w13, *w2;              /* bf16/fp16: uint16_t; int8: int8_t; fp8: e4m3 bytes;
                                        int4, mxfp4: two codes per byte                           */
  const float *w13_scale, *w2_scale; /* int8 [E, rows]; fp8 [E, ceil(rows/bn), ceil(cols/bk)];
                                        int4 [E, rows, ceil(cols/group)]                          */
  const uint8_t *w13_zero, *w2_zero; /* int4 zero points, 0..15, [E, rows, ceil(cols/group)]       */
  const uint8_t *w13_e8m0, *w2_e8m0; /* mxfp4 scales [E, rows, ceil(cols/32)]                      */
  const float *b13, *b2;             /* optional biases [E, 2N] (added before the activation), [E, K] */
  int32_t block_n, block_k;          /* fp8 scale block, rows x cols; 0 means 128                  */
  int32_t group;                     /* int4 group along cols, a multiple of 32; 0 means 128       */
} moe_weights;

/* Gate/up interleaved checkpoints (gpt-oss: row 2i is gate i, row 2i+1 is up i) to the plain
 * layout (gate rows first, then up rows), for E matrices of 2N rows of row_bytes bytes each.
 * Works for weights, scales, zero points and biases alike (pass the byte size of one row).
 * MOE_ERR_NULL, MOE_ERR_SHAPE (E < 1, N < 1, row_bytes 0), MOE_ERR_ARG (src and dst overlap: no
 * in-place), MOE_ERR_OVERFLOW (E * 2N * row_bytes overflows size_t); nothing is written on error. */
MOE_API moe_status moe_deinterleave_gate_up(const void *src, void *dst, int64_t E, int64_t N,
                                            size_t row_bytes);

#ifdef __cplusplus
}
#endif

#ifdef MOE_IMPLEMENTATION
#ifndef MOE_QUANT_IMPLEMENTATION_DONE
#define MOE_QUANT_IMPLEMENTATION_DONE
/* ==== moe_quant.h implementation ==== */
#include <math.h>
#include <string.h>

/* ---- precision traits (one row of MOE_PRECISION_LIST each) ------------------------------------ */
#ifdef MOE_NO_BF16
#define MOE__ON_BF16 0
#else
#define MOE__ON_BF16 1
#endif
#ifdef MOE_NO_INT8
#define MOE__ON_INT8 0
#else
#define MOE__ON_INT8 1
#endif
#ifdef MOE_NO_FP8
#define MOE__ON_FP8 0
#else
#define MOE__ON_FP8 1
#endif
#ifdef MOE_NO_INT4
#define MOE__ON_INT4 0
#else
#define MOE__ON_INT4 1
#endif
#ifdef MOE_NO_MXFP4
#define MOE__ON_MXFP4 0
#else
#define MOE__ON_MXFP4 1
#endif

/* Code formats: bits per code are 16 (BF16, F16), 8 (I8, E4M3) or 4 (U4, E2M1, two per byte). */
typedef enum moe__code { MOE__CODE_BF16, MOE__CODE_F16, MOE__CODE_I8, MOE__CODE_E4M3, MOE__CODE_U4, MOE__CODE_E2M1 } moe__code;
typedef enum moe__meta { MOE__META_NONE, MOE__META_CHANNEL, MOE__META_BLOCK, MOE__META_GROUP, MOE__META_E8M0 } moe__meta;
typedef struct moe__prec_traits {
  const char *name;
  moe__code plain, code; /* the checkpoint's code and the packed one (fp16 is packed as bf16)  */
  int32_t kr;            /* k interleave of the packed panels                                   */
  int a8;                /* activations quantized per token to u8                               */
  moe__meta meta;        /* the scales beside the codes                                         */
  int compiled;
} moe__prec_traits;
static inline int32_t moe__code_bits(moe__code c) {
  return c == MOE__CODE_BF16 || c == MOE__CODE_F16 ? 16 : c == MOE__CODE_U4 || c == MOE__CODE_E2M1 ? 4 : 8;
}

/* ---- private helpers ------------------------------------------------------------------------- */
static inline int64_t moe__cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline uint32_t moe__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static inline float moe__bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
/* m >> s rounded to nearest, ties to even (1 <= s <= 31). */
static inline uint32_t moe__shr_rne(uint32_t m, unsigned s) {
  uint32_t q = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1u);
  return q + (uint32_t)(rem > half || (rem == half && (q & 1u)));
}
/* Round v to the nearest integer, ties to even, after clamping to [lo, hi] (integers). Independent of
 * the FP rounding mode; NaN gives 0, so no float-to-int conversion is ever out of range. */
static inline int moe__rne_clamp(float v, float lo, float hi) {
  float r, d;
  if (v != v) return 0;
  v = v < lo ? lo : (v > hi ? hi : v);
  r = floorf(v);
  d = v - r; /* exact: |v| is small */
  if (d > 0.5f || (d == 0.5f && ((int)r & 1))) r += 1.0f;
  return (int)r;
}
/* max |x[i]| over n elements with stride 1; a NaN anywhere makes the result NaN. */
static inline float moe__amax(const float *x, int64_t n) {
  float m = 0.0f;
  int64_t i;
  for (i = 0; i < n; i++) {
    float a = fabsf(x[i]);
    m = (a > m || a != a) ? a : m; /* once m is NaN, both tests fail and it stays NaN */
  }
  return m;
}

/* ---- names ------------------------------------------------------------------------------------ */
MOE_API const char *moe_status_str(moe_status s) {
  switch (s) {
#define MOE__STATUS_CASE(name, value, text) \
  case name:                                \
    return text;
    MOE_STATUS_LIST(MOE__STATUS_CASE)
#undef MOE__STATUS_CASE
  default:
    break;
  }
  return "unknown status";
}

/* The traits of every precision, from MOE_PRECISION_LIST. */
static inline const moe__prec_traits *moe__traits(moe_precision p) {
#define MOE__TRAITS_ROW(e, value, name, plain, code, kr, a8, meta, on) \
  {name, MOE__CODE_##plain, MOE__CODE_##code, kr, a8, MOE__META_##meta, on},
  static const moe__prec_traits table[MOE_PREC_COUNT] = {MOE_PRECISION_LIST(MOE__TRAITS_ROW)};
#undef MOE__TRAITS_ROW
  return &table[(int)p];
}
static inline int moe__precision_valid(moe_precision p) { return (int)p >= 0 && (int)p < (int)MOE_PREC_COUNT; }

MOE_API const char *moe_precision_name(moe_precision p) { return moe__precision_valid(p) ? moe__traits(p)->name : NULL; }

MOE_API int moe_precision_compiled(moe_precision p) { return moe__precision_valid(p) && moe__traits(p)->compiled; }

/* ---- bf16 and fp16 ---------------------------------------------------------------------------- */
MOE_API uint16_t moe_f32_to_bf16(float f) {
  uint32_t u = moe__f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
  u += 0x7FFFu + ((u >> 16) & 1u); /* RNE: a tie carries only when the kept lsb is odd */
  return (uint16_t)(u >> 16);
}

MOE_API float moe_bf16_to_f32(uint16_t h) { return moe__bits_f32((uint32_t)h << 16); }

MOE_API uint16_t moe_f32_to_f16(float f) {
  uint32_t u = moe__f32_bits(f), a = u & 0x7FFFFFFFu, e = a >> 23;
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu)); /* quiet NaN */
  if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 (the tie above 65504): Inf */
  if (a < 0x38800000u) { /* below 2^-14: f16 subnormal, RNE of |f| * 2^24 (may round up to 0x0400) */
    uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    unsigned s = 126u - e; /* |f| * 2^24 = m * 2^(e - 126) */
    return (uint16_t)(sign | (s > 24u ? 0u : moe__shr_rne(m, s)));
  }
  a -= 112u << 23; /* rebias the exponent 127 -> 15; the mantissa carry rounds up the exponent */
  return (uint16_t)(sign | moe__shr_rne(a, 13));
}

MOE_API float moe_f16_to_f32(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 31u) return moe__bits_f32(sign | 0x7F800000u | (m << 13));
  if (e == 0u) { /* zero and subnormals: m * 2^-24, exact in f32 */
    float v = (float)m * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return moe__bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* ---- fp8 e4m3fn, e2m1, e8m0 ------------------------------------------------------------------- */
MOE_API uint8_t moe_f32_to_e4m3(float f) {
  uint32_t u = moe__f32_bits(f), a = u & 0x7FFFFFFFu, e = a >> 23;
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  if (a > 0x7F800000u) return (uint8_t)(sign | 0x7Fu);
  if (a >= 0x43E00000u) return (uint8_t)(sign | 0x7Eu); /* >= 448, Inf included: saturate */
  if (a < 0x3C800000u) { /* below 2^-6: subnormal, RNE of |f| * 2^9 (may round up to 0x08) */
    uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    unsigned s = 141u - e; /* |f| * 2^9 = m * 2^(e - 141) */
    return (uint8_t)(sign | (s > 24u ? 0u : moe__shr_rne(m, s)));
  }
  a -= 120u << 23; /* rebias 127 -> 7 */
  return (uint8_t)(sign | moe__shr_rne(a, 20));
}

MOE_API float moe_e4m3_to_f32(uint8_t v) {
  uint32_t sign = (v & 0x80u) << 24, e = (v >> 3) & 0xFu, m = v & 7u;
  if (e == 15u && m == 7u) return moe__bits_f32(sign | 0x7FC00000u);
  if (e == 0u) { /* zero and subnormals: m * 2^-9 */
    float x = (float)m * 0.001953125f;
    return sign ? -x : x;
  }
  return moe__bits_f32(sign | ((e + 120u) << 23) | (m << 20));
}

MOE_API uint8_t moe_f32_to_e2m1(float f) {
  float a = fabsf(f);
  uint8_t sign = (uint8_t)((moe__f32_bits(f) >> 28) & 8u);
  /* Count the grid midpoints below |f|; at a tie (0.25, 1.25, 2.5, 5 with '>' and 0.75, 1.75, 3.5
   * with '>=') this picks the code with an even mantissa bit. NaN fails every test: code 0. */
  int c = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  if (a != a) return 0;
  return (uint8_t)(sign | (uint8_t)c);
}

MOE_API float moe_e2m1_to_f32(uint8_t code) {
  static const float grid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  float v = grid[code & 7u];
  return (code & 8u) ? -v : v;
}

MOE_API float moe_e8m0_to_f32(uint8_t e) {
  if (e == 255u) return moe__bits_f32(0x7FC00000u);
  return moe__bits_f32(e ? (uint32_t)e << 23 : 0x00400000u); /* e = 0: 2^-127, an f32 subnormal */
}

/* ---- bulk conversions ------------------------------------------------------------------------- */
MOE_API void moe_convert_to_f32(moe_dtype t, const void *src, float *dst, size_t n) {
  const uint16_t *s = (const uint16_t *)src;
  size_t i;
  if (t == MOE_F32) {
    if (n) memmove(dst, src, n * sizeof(float));
  } else if (t == MOE_BF16) {
    for (i = 0; i < n; i++) dst[i] = moe_bf16_to_f32(s[i]);
  } else if (t == MOE_F16) {
    for (i = 0; i < n; i++) dst[i] = moe_f16_to_f32(s[i]);
  }
}

MOE_API void moe_convert_from_f32(moe_dtype t, const float *src, void *dst, size_t n) {
  uint16_t *d = (uint16_t *)dst;
  size_t i;
  if (t == MOE_F32) {
    if (n) memmove(dst, src, n * sizeof(float));
  } else if (t == MOE_BF16) {
    for (i = 0; i < n; i++) d[i] = moe_f32_to_bf16(src[i]);
  } else if (t == MOE_F16) {
    for (i = 0; i < n; i++) d[i] = moe_f32_to_f16(src[i]);
  }
}

/* ---- activation quantization ------------------------------------------------------------------ */
MOE_API float moe_quantize_row_u8(const float *x, int64_t n, uint8_t *q) {
  float amax = moe__amax(x, n);
  float scale = (amax < 1e-7f ? 1e-7f : amax) / 127.0f; /* not fmaxf: a NaN amax must survive */
  int64_t i;
  for (i = 0; i < n; i++) q[i] = (uint8_t)(moe__rne_clamp(x[i] / scale, -127.0f, 127.0f) + 128);
  return scale;
}
static inline void moe__sum_groups_u8_scalar(const uint8_t *q, int64_t n, int32_t group, int32_t *sums) {
  for (int64_t k0 = 0; k0 < n; k0 += group) {
    const int64_t k1 = k0 + group < n ? k0 + group : n;
    int32_t s = 0;
    for (int64_t k = k0; k < k1; k++) s += (int32_t)q[k] - 128;
    sums[k0 / group] = s;
  }
}
MOE_API moe_status moe_sum_groups_u8(const uint8_t *q, int64_t n, int32_t group, int32_t *sums) {
  if (n < 0 || n > ((int64_t)1 << 24) || group < 1) return MOE_ERR_ARG;
  if (n > 0 && (!q || !sums)) return MOE_ERR_NULL;
  moe__sum_groups_u8_scalar(q, n, group, sums);
  return MOE_OK;
}

/* ---- weight quantizers ------------------------------------------------------------------------ */
MOE_API void moe_quantize_weight_int8(const float *w, int64_t E, int64_t rows, int64_t cols, int8_t *q,
                                      float *scale) {
  int64_t r, c;
  for (r = 0; r < E * rows; r++) {
    const float *wr = w + r * cols;
    float amax = moe__amax(wr, cols);
    float s = (amax < 1e-10f ? 1e-10f : amax) / 127.0f;
    scale[r] = s;
    for (c = 0; c < cols; c++) q[r * cols + c] = (int8_t)moe__rne_clamp(wr[c] / s, -127.0f, 127.0f);
  }
}

MOE_API void moe_quantize_weight_fp8(const float *w, int64_t E, int64_t rows, int64_t cols, int block_rows,
                                     int block_cols, uint8_t *q, float *scale) {
  int64_t nrb, ncb, e, rb, cb, r, c;
  if (block_rows < 1 || block_cols < 1) return;
  nrb = (rows + block_rows - 1) / block_rows;
  ncb = (cols + block_cols - 1) / block_cols;
  for (e = 0; e < E; e++)
    for (rb = 0; rb < nrb; rb++)
      for (cb = 0; cb < ncb; cb++) {
        int64_t r0 = rb * block_rows, r1 = r0 + block_rows < rows ? r0 + block_rows : rows;
        int64_t c0 = cb * block_cols, c1 = c0 + block_cols < cols ? c0 + block_cols : cols;
        const float *we = w + e * rows * cols;
        uint8_t *qe = q + e * rows * cols;
        float amax = 0.0f, s;
        for (r = r0; r < r1; r++) {
          float a = moe__amax(we + r * cols + c0, c1 - c0);
          amax = (a > amax || a != a) ? a : amax;
        }
        s = amax / 448.0f;
        if (s == 0.0f) s = 1.0f; /* all-zero block (or amax so small the scale underflows) */
        scale[(e * nrb + rb) * ncb + cb] = s;
        for (r = r0; r < r1; r++)
          for (c = c0; c < c1; c++) qe[r * cols + c] = moe_f32_to_e4m3(we[r * cols + c] / s);
      }
}

MOE_API void moe_quantize_weight_int4(const float *w, int64_t E, int64_t rows, int64_t cols, int group,
                                      uint8_t *q, float *scale, uint8_t *zero) {
  int64_t ng, stride = (cols + 1) / 2, r, g, c;
  if (group < 1) return;
  ng = (cols + group - 1) / group;
  for (r = 0; r < E * rows; r++) {
    const float *wr = w + r * cols;
    uint8_t *qr = q + r * stride;
    memset(qr, 0, (size_t)stride); /* the pad nibble of an odd row stays 0 */
    for (g = 0; g < ng; g++) {
      int64_t c0 = g * group, c1 = c0 + group < cols ? c0 + group : cols;
      float lo = 0.0f, hi = 0.0f, s;
      int nan = 0, z;
      for (c = c0; c < c1; c++) {
        float v = wr[c];
        nan |= v != v;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      s = (hi - lo) / 15.0f;
      if (!(s > 0.0f)) s = 1.0f; /* hi == lo (or an underflowing range) */
      if (nan) s = moe__bits_f32(0x7FC00000u); /* a NaN weight poisons its group's scale */
      z = moe__rne_clamp(-lo / s, 0.0f, 15.0f);
      scale[r * ng + g] = s;
      zero[r * ng + g] = (uint8_t)z;
      for (c = c0; c < c1; c++) {
        /* |w/s| beyond 32 clamps to 0 or 15 whatever z is, so clamping there first is harmless */
        int v = moe__rne_clamp(wr[c] / s, -32.0f, 32.0f) + z;
        v = v < 0 ? 0 : (v > 15 ? 15 : v);
        qr[c >> 1] = (uint8_t)(qr[c >> 1] | (v << ((c & 1) * 4)));
      }
    }
  }
}

MOE_API void moe_quantize_weight_mxfp4(const float *w, int64_t E, int64_t rows, int64_t cols, uint8_t *q,
                                       uint8_t *scale) {
  int64_t nb = (cols + 31) / 32, stride = (cols + 1) / 2, r, b, c;
  for (r = 0; r < E * rows; r++) {
    const float *wr = w + r * cols;
    uint8_t *qr = q + r * stride;
    memset(qr, 0, (size_t)stride);
    for (b = 0; b < nb; b++) {
      int64_t c0 = b * 32, c1 = c0 + 32 < cols ? c0 + 32 : cols;
      float amax = moe__amax(wr + c0, c1 - c0), inv;
      int s = 127, ex;
      if (amax != amax) s = 255; /* NaN block: the e8m0 NaN scale */
      else if (amax > 3.4028235e38f) s = 254; /* Inf */
      else if (amax > 0.0f) {
        (void)frexpf(amax, &ex); /* amax = m * 2^ex, m in [0.5, 1): floor(log2(amax)) = ex - 1 */
        s = ex - 1 - 2 + 127;
        s = s < 0 ? 0 : (s > 254 ? 254 : s);
      }
      scale[r * nb + b] = (uint8_t)s;
      inv = moe_e8m0_to_f32((uint8_t)s);
      for (c = c0; c < c1; c++)
        qr[c >> 1] = (uint8_t)(qr[c >> 1] | (moe_f32_to_e2m1(wr[c] / inv) << ((c & 1) * 4)));
    }
  }
}

/* ---- layout helpers --------------------------------------------------------------------------- */
MOE_API moe_status moe_deinterleave_gate_up(const void *src, void *dst, int64_t E, int64_t N,
                                            size_t row_bytes) {
  const size_t max = (size_t)-1;
  const unsigned char *s = (const unsigned char *)src;
  unsigned char *d = (unsigned char *)dst;
  size_t e, i, ne, nn, mat, total;
  uintptr_t ps = (uintptr_t)src, pd = (uintptr_t)dst;
  if (!src || !dst) return MOE_ERR_NULL;
  if (E < 1 || N < 1 || row_bytes == 0) return MOE_ERR_SHAPE;
  ne = (size_t)E;
  nn = (size_t)N;
  if ((int64_t)ne != E || (int64_t)nn != N) return MOE_ERR_OVERFLOW; /* does not fit size_t */
  if (nn > max / 2 / row_bytes) return MOE_ERR_OVERFLOW;
  mat = 2 * nn * row_bytes;
  if (ne > max / mat) return MOE_ERR_OVERFLOW;
  total = ne * mat;
  if (ps < pd + total && pd < ps + total) return MOE_ERR_ARG; /* in place or overlapping */
  for (e = 0; e < ne; e++)
    for (i = 0; i < nn; i++) {
      memcpy(d + e * mat + i * row_bytes, s + e * mat + 2 * i * row_bytes, row_bytes);
      memcpy(d + e * mat + (nn + i) * row_bytes, s + e * mat + (2 * i + 1) * row_bytes, row_bytes);
    }
  return MOE_OK;
}

#endif /* MOE_QUANT_IMPLEMENTATION_DONE */
#endif /* MOE_IMPLEMENTATION */
#endif /* MOE_QUANT_H */

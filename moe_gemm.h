/* moe_gemm.h — packed weight layouts, the packer, GEMM microkernels per precision and ISA (each with
 * a scalar twin), their epilogues, the dispatch table and CPU feature detection.
 *
 * Part of moe.h; see moe.h's top comment for the configuration macros and the whole contract.
 *
 * PACKED LAYOUT
 * Every weight matrix (W13 [2N, K] and W2 [K, N] of each expert) is cut into panels of 32 output
 * channels ("columns" below; they are rows of the plain matrix). A panel holds the reduction
 * dimension ("k": K for W13, N for W2) padded to a multiple of KR and interleaved by KR, so that one
 * 32-bit lane holds one column's KR consecutive k (VNNI), and 16 columns fill one 64-byte line (one
 * row of an AMX B tile):
 *
 *   panel = [ header ][ codes: (kpad/KR) lines of 64 bytes per 32 columns ][ meta ]   (64-byte aligned)
 *
 *   precision     KR  one k-group (KR k x 32 columns)   header                          meta per panel
 *   BF16, FP16     2  128 bytes: 2 lines, see (a)       -                               -
 *   INT8           4  128 bytes: 2 lines, see (a)       int32 comp[32], f32 scale[32]   -
 *   FP8            2  64 bytes: 1 line, see (b)         -                               f32 scale[ceil(k/bk)][32]
 *   INT4 W4A16     8  128 bytes: 2 lines, see (c)       -                               f32 scale[ngroup][32],
 *                                                                                       u8 zero[ngroup][32]
 *   MXFP4          8  128 bytes: 2 lines, see (c)       -                               u8 e8m0[ceil(k/32)][32]
 *   INT4 W4A8      4  64 bytes: 1 line, see (d)         -                               as INT4 W4A16
 *
 *   (a) one 32-bit lane per column holds its KR consecutive k (VNNI; one AMX B-tile row per line):
 *       line 0 | col 0: k0..k(KR-1) | col 1 | ... | col 15 |   line 1 | col 16 | ... | col 31 |
 *   (b) 8-bit codes of one k pair, placed so that unpacking the line's bytes with vpunpck{l,h}bw
 *       (which works within 16-byte blocks) yields two lines of (a) (columns 0-15, then 16-31):
 *       16-byte block j | c4j k0 k1 | c4j+1 k0 k1 | ... | c4j+3 k0 k1 | c4j+16 k0 k1 | ... | c4j+19 k0 k1 |
 *   (c) 16-bit words, one per (column, pair element) as the lanes of (a): word 2c + e of line h
 *       holds column 16h + c at k = e, 2 + e, 4 + e, 6 + e in its nibbles 0..3 (low bits first).
 *       (word >> 4j) & 15 for j = 0..3 indexes a 32-entry bf16 table (vpermw): four lines of (a).
 *   (d) the low nibbles hold columns 0-15 in the order of (a) with KR = 4 (col c: k0..k3 in bytes
 *       4c..4c+3), the high nibbles columns 16-31: (v & 15) and (v >> 4 & 15) are two lines of (a).
 * Decoded, every low-bit line is bf16 (a) with KR = 2 or int8 (a) with KR = 4: what the bf16 and
 * int8 tiles (and AMX B tiles) read.
 *
 * comp[n] = 128 * sum_k q[n][k] turns VNNI's u8 x s8 product of the shifted activations (q + 128)
 * back into the signed one. Padded k decode to exactly 0 (int4 pads with the last group's zero point), so
 * a kernel may run its k loop to kpad as long as the activations it reads there are finite.
 * Padded columns (n >= the matrix's rows) hold zeros and are never written out.
 *
 * Per expert, W13 holds 2 * ceil(N/32) panels in the order gate 0, up 0, gate 1, up 1, ...: the
 * h columns 32p..32p+31 need the gate panel p and the up panel p, adjacent in memory.
 * W2 holds ceil(K/32) panels. Experts follow each other; biases are kept as f32 copies.
 *
 * MICROKERNEL CONTRACT (moe_gemm_args)
 *   gemm1: c[m][n] = act(gate[m][n] + b13g[n], up[m][n] + b13u[n])          for m < mr, n < nr
 *   gemm2: c_rows[m][n] = fma(acc[m][n] + b2[n], row_weight[m], c_rows[m][n])  for m < mr, n < nr
 * acc is the dequantized dot product over k < kred; rows come through mr row pointers a[m] (bf16 for
 * A16 precisions, u8 = q + 128 with a_scale[m] for A8 precisions), each readable for kred elements
 * (kernels must not read past kred). gemm1 overwrites exactly mr x nr elements of c (never reads
 * them: c may hold NaN before); gemm2 adds into mr x nr elements of its rows (a token's experts
 * add up there in the order the caller runs them; rows may repeat, they are done in order). Any mr in 1..MOE_BLOCK_M;
 * nr in 1..32 for gemm1; for gemm2 1..64, where columns 32..63 come from the next panel
 * (w + panel_bytes). w_next is a prefetch hint only: it is never dereferenced. lda != 0 promises
 * a[r] = a[0] + r * lda and that rows up to the next multiple of 16 past mr are readable (any
 * values): the AMX kernels then load A tiles in place; the other kernels ignore it.
 */
#ifndef MOE_GEMM_H
#define MOE_GEMM_H

#include "moe_quant.h"

#define MOE_NR 32      /* output columns per panel                                             */
#define MOE_BLOCK_M 32 /* max rows per microkernel call (= sort block)                          */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum moe_activation {
  MOE_ACT_SILU = 0,      /* silu(gate) * up (default)                                          */
  MOE_ACT_GELU_TANH = 1, /* gelu_tanh(gate) * up                                                 */
  MOE_ACT_SWIGLU_OAI = 2 /* gpt-oss: g = min(g, limit), u = clamp(u, -limit, limit),
                            g * sigmoid(alpha * g) * (u + 1)                                     */
} moe_activation;

/* The packed, read-only experts that moe_pack() builds inside a caller buffer: share it between
 * threads and calls. It points into that buffer (keep the buffer alive and unmoved). Treat the
 * fields as opaque (bindings: moe_experts_size()); the layout is drawn above. */
typedef struct moe_experts {
  int64_t E, N, K;                 /* an integer first: `moe_experts ex = {0};` works in C and C++ */
  moe_precision precision;
  int32_t block_n, block_k, group; /* resolved (never 0)                                        */
  int32_t kr;                      /* K interleave of the packed panels                        */
  int64_t k13_pad, k2_pad;         /* reduction lengths padded to kr: K for W13, N for W2      */
  int64_t panels13, panels2;       /* panels per expert: W13 2 * ceil(N/32), W2 ceil(K/32)      */
  size_t panel13_bytes, panel2_bytes;
  const uint8_t *w13, *w2;         /* E * panels * panel_bytes                                  */
  const float *b13, *b2;           /* f32 copies of the biases, or NULL                         */
  uint32_t magic;                  /* set by moe_pack; checked by the compute calls            */
} moe_experts;

/* sizeof(moe_experts), for bindings that hold it as an opaque block (8-byte aligned). */
MOE_API size_t moe_experts_size(void);

/* Bytes of packed storage moe_pack() needs (alignment slack included), or 0 when the descriptor is
 * invalid (moe_pack() then says why). */
MOE_API size_t moe_pack_size(const moe_weights *plain);
/* Packs plain weights into buf (any alignment; size >= moe_pack_size()) and fills *packed.
 * Validates everything before writing: MOE_ERR_NULL, _SHAPE, _DESCRIPTOR, _UNSUPPORTED, _OVERFLOW,
 * _BUFFER, _ARG. FP16 weights become bf16 here (round to nearest even). */
MOE_API moe_status moe_pack(const moe_weights *plain, moe_experts *packed, void *buf, size_t size);

/* ---- microkernels ---------------------------------------------------------------------------- */
typedef struct moe_gemm_args {
  int32_t mr, nr;           /* rows 1..MOE_BLOCK_M, valid columns 1..32                        */
  const void *const *a;     /* mr row pointers: bf16 or u8 (q + 128)                            */
  const float *a_scale;     /* A8: mr row scales                                                */
  const uint8_t *w;         /* the panel (gemm1: the gate panel; the up panel follows it)       */
  size_t panel_bytes;
  const uint8_t *w_next;    /* hint: weights the caller reads next (may be prefetched), or NULL */
  size_t w_next_bytes;
  int64_t kred, kpad;       /* reduction length and its padded length                           */
  int32_t kgroup;           /* k per scale group (fp8 block_k, int4 group, 32 for mxfp4)        */
  const float *bias;        /* gemm1: gate bias [nr] (up bias at bias_up); gemm2: [nr]; or NULL */
  const float *bias_up;
  const float *row_weight;  /* gemm2: [mr] top-k weight per row                                 */
  moe_activation act;
  float alpha, limit;       /* resolved SWIGLU_OAI parameters                                   */
  float *c;                 /* gemm1: mr x nr outputs, f32, row stride ldc                      */
  int64_t ldc;
  float *const *c_rows;     /* gemm2: mr output rows, f32, accumulated into                     */
  int64_t lda;              /* bytes between rows when a[r] = a[0] + r * lda, else 0: then a tile
                               kernel may read rows up to the next multiple of 16 (any values)  */
} moe_gemm_args;
typedef void (*moe_gemm_ukernel)(const moe_gemm_args *args);

/* ---- ISA tiers and dispatch ----------------------------------------------------------------
 * The values are stable (they are ABI): a new tier gets the next free value. The order of
 * preference is separate (MOE_ISA_LIST's rank): scalar < avx2 < avx-vnni < avx512 < amx. */
typedef enum moe_isa {
  MOE_ISA_SCALAR = 0,
  MOE_ISA_AVX512 = 1,   /* AVX-512 F/BW/VL/DQ with VNNI or BF16, per kernel                    */
  MOE_ISA_AMX = 2,      /* AMX-BF16 / AMX-INT8 tiles (MOE_AMX_EMULATE: the C tile model)        */
  MOE_ISA_AVX2 = 3,     /* AVX2 + FMA + F16C: every precision                                   */
  MOE_ISA_AVX_VNNI = 4, /* AVX2 with VEX-encoded vpdpbusd: INT8 and INT4-W4A8 on it             */
  MOE_ISA_COUNT = 5
} moe_isa;

enum {
  MOE_CPU_AVX512F = 1u << 0,
  MOE_CPU_AVX512BW = 1u << 1,
  MOE_CPU_AVX512VL = 1u << 2,
  MOE_CPU_AVX512DQ = 1u << 3,
  MOE_CPU_AVX512VNNI = 1u << 4,
  MOE_CPU_AVX512BF16 = 1u << 5,
  MOE_CPU_AMX_TILE = 1u << 6,
  MOE_CPU_AMX_INT8 = 1u << 7,
  MOE_CPU_AMX_BF16 = 1u << 8,
  MOE_CPU_AVX2 = 1u << 9,
  MOE_CPU_FMA = 1u << 10,
  MOE_CPU_F16C = 1u << 11,
  MOE_CPU_AVX_VNNI = 1u << 12,
  MOE_CPU_AVX512VBMI = 1u << 13 /* byte permutes (vpermb, vpermi2b): the low-bit decoders           */
};

/* CPU features this CPU has and the OS enabled (CPUID and XCR0), detected once and cached. The AMX
 * bits say the CPU and the OS support tiles; a process may use them only after moe_amx_request(). */
MOE_API uint32_t moe_cpu_features(void);
/* Asks Linux for AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM), once per process; 1 when granted.
 * The dispatcher calls it before it first selects an AMX kernel; nothing else does. */
MOE_API int moe_amx_request(void);
/* Why the AMX tier is or is not used here, in words: "emulated (MOE_AMX_EMULATE) ...", "granted",
 * "compiled out", "no AMX-TILE/BF16/INT8 on this CPU, or the OS does not enable tile state", or
 * "Linux refused tile permission ...". Never NULL. */
MOE_API const char *moe_amx_status(void);
/* Caps the tier used by the compute calls (tests and benchmarks run every tier in one binary): the
 * tiers ranked at or below cap are allowed; MOE_ISA_COUNT (or any value past the last tier) lifts
 * the cap. Returns the tier that will be used (moe_get_isa()). Call it before computing; the cap
 * is per translation unit of the implementation. */
MOE_API moe_isa moe_set_isa(moe_isa cap);
/* The best tier allowed by the cap that this build and CPU run ("runs" = some kernel of it does). */
MOE_API moe_isa moe_get_isa(void);
/* 1 when kernels of tier isa are compiled in and this CPU and OS run them (scalar: always). */
MOE_API int moe_isa_available(moe_isa isa);
/* "scalar", "avx512", "amx", "avx2", "avx-vnni"; "unknown" out of range. */
MOE_API const char *moe_isa_name(moe_isa isa);
/* The tier of that name, or MOE_ISA_COUNT when there is none. */
MOE_API moe_isa moe_isa_from_name(const char *name);

/* One row of the kernel list: the GEMM1 and GEMM2 microkernels of one precision on one tier.
 * Names follow <activations>_<weights>_gemm{1,2}_ukernel_<MR>x<NR>c<KR>__<isa>; a GEMM2 that runs
 * two tiles names both (5x64 over two panels, 12x32 over a last odd panel). */
typedef struct moe_gemm_config {
  moe_gemm_ukernel gemm1, gemm2;
  uint32_t cpu_features;   /* MOE_CPU_* bits the kernels need                                  */
  moe_isa isa;
  const char *name;        /* the pair, e.g. "moe_bf16_bf16w_gemm_ukernel_5x32c2__avx512bf16"  */
  moe_precision precision;
  int32_t mr, nr, kr;      /* GEMM1 register tile: rows x columns (gate and up each), k group   */
  int32_t mr2, nr2;        /* GEMM2's main register tile: rows x columns                        */
  const char *gemm1_name, *gemm2_name;
  const char *dot;         /* the dot-product instruction: "vdpbf16ps", "vpdpbusd", "scalar"    */
} moe_gemm_config;

/* Every kernel compiled in, scalar references included, in list order: i in [0, moe_kernel_count()).
 * moe_kernel_at() is NULL out of range. */
MOE_API int moe_kernel_count(void);
MOE_API const moe_gemm_config *moe_kernel_at(int i);
/* 1 when this CPU and OS run kernel k (its features present; AMX: tile permission granted). */
MOE_API int moe_kernel_runnable(const moe_gemm_config *k);
/* The best runnable kernels for precision p under the current cap; NULL when compiled out. */
MOE_API const moe_gemm_config *moe_gemm_select(moe_precision p);
/* The kernels of precision p on exactly tier isa; NULL if not compiled or not runnable here. */
MOE_API const moe_gemm_config *moe_gemm_config_for(moe_precision p, moe_isa isa);

#ifdef __cplusplus
}
#endif

#ifdef MOE_IMPLEMENTATION
#ifndef MOE_GEMM_IMPLEMENTATION_DONE
#define MOE_GEMM_IMPLEMENTATION_DONE

#include <math.h>
#include <string.h>

#define MOE__MAGIC 0x4D4F4531u /* "MOE1" */

/* ---- packed-layout properties, from the precision's traits (MOE_PRECISION_LIST) ------------- */
static inline int moe__is_a8(moe_precision p) { return moe__traits(p)->a8; }
static inline int32_t moe__kr(moe_precision p) { return moe__traits(p)->kr; }
static inline moe__meta moe__meta_of(moe_precision p) { return moe__traits(p)->meta; }
/* bytes of one (k-group, column) cell: KR codes */
static inline size_t moe__cell_bytes(moe_precision p) {
  return (size_t)(moe__kr(p) * moe__code_bits(moe__traits(p)->code) / 8);
}
static inline size_t moe__round_up(size_t a, size_t b) { return (a + b - 1) / b * b; }

/* k per scale group (0: no groups along k) */
static inline int32_t moe__kgroup(moe_precision p, int32_t block_k, int32_t group) {
  switch (moe__meta_of(p)) {
  case MOE__META_BLOCK: return block_k;
  case MOE__META_GROUP: return group;
  case MOE__META_E8M0: return 32;
  default: return 0;
  }
}
/* bytes of the per-panel header: INT8's compensation and channel scales */
static inline size_t moe__codes_offset(moe_precision p) {
  return moe__meta_of(p) == MOE__META_CHANNEL ? MOE_NR * (sizeof(int32_t) + sizeof(float)) : 0;
}
/* bytes of meta per (group, column): f32 scale, + u8 zero point, or an e8m0 byte */
static inline size_t moe__meta_cell_bytes(moe_precision p) {
  switch (moe__meta_of(p)) {
  case MOE__META_BLOCK: return sizeof(float);
  case MOE__META_GROUP: return sizeof(float) + 1;
  case MOE__META_E8M0: return 1;
  default: return 0;
  }
}

/* bytes of one panel: header + codes + meta, rounded to 64; 0 on overflow */
static inline size_t moe__panel_bytes(moe_precision p, int64_t kred, int32_t kgroup) {
  int64_t kpad = moe__cdiv(kred, moe__kr(p)) * moe__kr(p);
  int64_t ng = kgroup ? moe__cdiv(kred, kgroup) : 0;
  if (kred > ((int64_t)1 << 40)) return 0;
  return moe__round_up(moe__codes_offset(p) + (size_t)(kpad / moe__kr(p)) * MOE_NR * moe__cell_bytes(p) +
                           (size_t)ng * MOE_NR * moe__meta_cell_bytes(p),
                       64);
}

/* offset of the meta (group scales) inside a panel */
static inline size_t moe__meta_offset(moe_precision p, int64_t kpad) {
  return moe__codes_offset(p) + (size_t)(kpad / moe__kr(p)) * MOE_NR * moe__cell_bytes(p);
}

/* ---- validation and sizes --------------------------------------------------------------------- */
static inline int moe__mul_ok(size_t a, size_t b, size_t *r) {
  if (a && b > SIZE_MAX / a) return 0;
  *r = a * b;
  return 1;
}
static inline int moe__add_ok(size_t a, size_t b, size_t *r) {
  if (b > SIZE_MAX - a) return 0;
  *r = a + b;
  return 1;
}

typedef struct moe__pack_plan {
  int32_t block_n, block_k, group, kr;
  int64_t k13_pad, k2_pad, panels13, panels2;
  size_t panel13_bytes, panel2_bytes;
  size_t w13_bytes, w2_bytes, b13_bytes, b2_bytes, total;
} moe__pack_plan;

static inline moe_status moe__plan_pack(const moe_weights *w, moe__pack_plan *pl) {
  moe_precision p;
  size_t t;
  if (!w) return MOE_ERR_NULL;
  p = w->precision;
  if (!moe__precision_valid(p)) return MOE_ERR_ARG;
  if (!moe_precision_compiled(p)) return MOE_ERR_UNSUPPORTED;
  if (w->E < 1 || w->N < 1 || w->K < 1) return MOE_ERR_SHAPE;
  if (w->E > INT32_MAX || w->N > ((int64_t)1 << 31) || w->K > ((int64_t)1 << 31)) return MOE_ERR_OVERFLOW;
  if (!w->w13 || !w->w2) return MOE_ERR_NULL;
  if (w->block_n < 0 || w->block_k < 0 || w->group < 0) return MOE_ERR_DESCRIPTOR;
  pl->block_n = w->block_n ? w->block_n : 128;
  pl->block_k = w->block_k ? w->block_k : 128;
  pl->group = w->group ? w->group : 128;
  switch (moe__meta_of(p)) { /* the scales each layout needs */
  case MOE__META_CHANNEL:
  case MOE__META_BLOCK:
    if (!w->w13_scale || !w->w2_scale) return MOE_ERR_DESCRIPTOR;
    break;
  case MOE__META_GROUP:
    if (!w->w13_scale || !w->w2_scale || !w->w13_zero || !w->w2_zero || pl->group % 32 != 0) return MOE_ERR_DESCRIPTOR;
    break;
  case MOE__META_E8M0:
    if (!w->w13_e8m0 || !w->w2_e8m0) return MOE_ERR_DESCRIPTOR;
    break;
  default: break;
  }
  pl->kr = moe__kr(p);
  pl->k13_pad = moe__cdiv(w->K, pl->kr) * pl->kr;
  pl->k2_pad = moe__cdiv(w->N, pl->kr) * pl->kr;
  pl->panels13 = 2 * moe__cdiv(w->N, MOE_NR);
  pl->panels2 = moe__cdiv(w->K, MOE_NR);
  pl->panel13_bytes = moe__panel_bytes(p, w->K, moe__kgroup(p, pl->block_k, pl->group));
  pl->panel2_bytes = moe__panel_bytes(p, w->N, moe__kgroup(p, pl->block_k, pl->group));
  if (!pl->panel13_bytes || !pl->panel2_bytes) return MOE_ERR_OVERFLOW;
  if (!moe__mul_ok((size_t)w->E * (size_t)pl->panels13, pl->panel13_bytes, &pl->w13_bytes) ||
      !moe__mul_ok((size_t)w->E * (size_t)pl->panels2, pl->panel2_bytes, &pl->w2_bytes))
    return MOE_ERR_OVERFLOW;
  pl->b13_bytes = w->b13 ? moe__round_up((size_t)w->E * 2 * (size_t)w->N * sizeof(float), 64) : 0;
  pl->b2_bytes = w->b2 ? moe__round_up((size_t)w->E * (size_t)w->K * sizeof(float), 64) : 0;
  if (!moe__add_ok(pl->w13_bytes, pl->w2_bytes, &t) || !moe__add_ok(t, pl->b13_bytes, &t) ||
      !moe__add_ok(t, pl->b2_bytes, &t) || !moe__add_ok(t, 64, &t))
    return MOE_ERR_OVERFLOW;
  pl->total = t;
  return MOE_OK;
}

MOE_API size_t moe_experts_size(void) { return sizeof(moe_experts); }

MOE_API size_t moe_pack_size(const moe_weights *plain) {
  moe__pack_plan pl;
  return moe__plan_pack(plain, &pl) == MOE_OK ? pl.total : 0;
}

/* ---- packing one panel --------------------------------------------------------------------------- */
/* One plain matrix of one expert: rows x cols, cols = the reduction dimension. */
typedef struct moe__plain_mat {
  moe_precision p;
  int64_t rows, cols;
  const void *codes;        /* this expert's codes                                      */
  const float *scale;       /* int8 [rows]; fp8 [ceil(rows/bn)][ceil(cols/bk)]; int4 [rows][ng] */
  const uint8_t *zero, *e8m0;
  int32_t bn, kgroup;
} moe__plain_mat;

static inline uint8_t moe__nibble(const uint8_t *row, int64_t k) { return (uint8_t)((row[k >> 1] >> ((k & 1) * 4)) & 15); }

/* Where the code of (column n, reduction index k) lies in a panel's code area: the byte, and the
 * shift of its nibble (4-bit codes). Layouts (a)-(d) of the table at the top. */
static inline int32_t moe__pair_pos(int32_t n, int32_t e) { /* (b): byte of column n, pair element e */
  return 16 * ((n & 15) >> 2) + 8 * (n >> 4) + 2 * (n & 3) + e;
}
static inline size_t moe__code_pos(moe_precision p, int32_t n, int64_t k, int32_t *shift) {
  const moe__prec_traits *t = moe__traits(p);
  int32_t kr = t->kr, bits = moe__code_bits(t->code), j = (int32_t)(k % kr);
  size_t line = (size_t)(k / kr) * (size_t)(MOE_NR * kr * bits / 8);
  *shift = 0;
  if (bits == 16 || t->code == MOE__CODE_I8) return line + ((size_t)n * (size_t)kr + (size_t)j) * (size_t)(bits / 8); /* (a) */
  if (bits == 8) return line + (size_t)moe__pair_pos(n, j);                                                  /* (b) */
  if (t->a8) {                                                                                               /* (d) */
    *shift = 4 * (n >> 4);
    return line + 4 * (size_t)(n & 15) + (size_t)j;
  }
  *shift = 4 * ((j >> 1) & 1); /* (c): nibble j / 2 of word 2 (n % 16) + j % 2 of line n / 16 */
  return line + 64 * (size_t)(n >> 4) + 4 * (size_t)(n & 15) + 2 * (size_t)(j & 1) + (size_t)(j >> 2);
}

/* Writes the code of (column n, reduction index k) into a panel's code area (zeroed before). */
static inline void moe__put_code(moe_precision p, uint8_t *codes, int32_t n, int64_t k, uint32_t code) {
  int32_t shift, bits = moe__code_bits(moe__traits(p)->code);
  size_t at = moe__code_pos(p, n, k, &shift);
  if (bits == 16) {
    uint16_t v = (uint16_t)code;
    memcpy(codes + at, &v, 2);
  } else {
    codes[at] |= (uint8_t)(code << shift);
  }
}
/* The code of (column n, k) of a panel's code area. */
static inline uint32_t moe__get_code(moe_precision p, const uint8_t *codes, int32_t n, int64_t k) {
  int32_t shift, bits = moe__code_bits(moe__traits(p)->code);
  size_t at = moe__code_pos(p, n, k, &shift);
  if (bits == 16) {
    uint16_t v;
    memcpy(&v, codes + at, 2);
    return v;
  }
  return bits == 4 ? (uint32_t)(codes[at] >> shift) & 15 : codes[at];
}

/* Plain code of element (row r, col k), converted to its packed form (FP16 -> bf16 bits). */
static inline uint32_t moe__plain_code(const moe__plain_mat *m, int64_t r, int64_t k) {
  moe__code plain = moe__traits(m->p)->plain;
  int32_t bits = moe__code_bits(plain);
  if (bits == 16) {
    uint16_t v;
    memcpy(&v, (const uint8_t *)m->codes + 2 * (size_t)(r * m->cols + k), 2);
    return plain == MOE__CODE_F16 ? moe_f32_to_bf16(moe_f16_to_f32(v)) : v;
  }
  if (bits == 4) return moe__nibble((const uint8_t *)m->codes + (size_t)r * (size_t)((m->cols + 1) / 2), k);
  return ((const uint8_t *)m->codes)[r * m->cols + k];
}

/* Packs rows [r0, r0 + nv) of m (nv <= 32) into one panel (zeroed first). Padded k get the code
 * that decodes to 0: zero, or for GROUP the last group's zero point. */
static inline void moe__pack_panel(const moe__plain_mat *m, int64_t r0, int32_t nv, uint8_t *panel, size_t bytes) {
  moe_precision p = m->p;
  moe__meta meta_kind = moe__meta_of(p);
  int32_t kr = moe__kr(p);
  int64_t kpad = moe__cdiv(m->cols, kr) * kr;
  int64_t ng = m->kgroup ? moe__cdiv(m->cols, m->kgroup) : 0;
  uint8_t *codes = panel + moe__codes_offset(p), *meta = panel + moe__meta_offset(p, kpad);
  memset(panel, 0, bytes);
  for (int32_t n = 0; n < nv; n++) {
    int64_t r = r0 + n;
    int32_t sum = 0;
    for (int64_t k = 0; k < kpad; k++) {
      uint32_t code = 0;
      if (k < m->cols) code = moe__plain_code(m, r, k);
      else if (meta_kind == MOE__META_GROUP) code = m->zero[r * ng + ng - 1];
      moe__put_code(p, codes, n, k, code);
      if (meta_kind == MOE__META_CHANNEL) sum += (int8_t)code;
    }
    if (meta_kind == MOE__META_CHANNEL) {
      int32_t comp = 128 * sum;
      memcpy(panel + 4 * (size_t)n, &comp, 4);
      memcpy(panel + MOE_NR * 4 + 4 * (size_t)n, &m->scale[r], 4);
    }
    for (int64_t g = 0; g < ng; g++) {
      size_t cell = (size_t)g * MOE_NR + (size_t)n;
      if (meta_kind == MOE__META_BLOCK)
        memcpy(meta + 4 * cell, &m->scale[(r / m->bn) * ng + g], 4);
      else if (meta_kind == MOE__META_E8M0)
        meta[cell] = m->e8m0[r * ng + g];
      else {
        memcpy(meta + 4 * cell, &m->scale[r * ng + g], 4);
        meta[(size_t)ng * MOE_NR * 4 + cell] = m->zero[r * ng + g];
      }
    }
  }
}

/* The plain matrix of expert e: which = 13 (W13, 2N x K) or 2 (W2, K x N). */
static inline moe__plain_mat moe__plain_of(const moe_weights *w, const moe__pack_plan *pl, int which, int64_t e) {
  moe__plain_mat m;
  size_t esz = (size_t)moe__code_bits(moe__traits(w->precision)->plain) / 8; /* 0: two codes per byte */
  int64_t ng;
  m.p = w->precision;
  m.rows = which == 13 ? 2 * w->N : w->K;
  m.cols = which == 13 ? w->K : w->N;
  m.bn = pl->block_n;
  m.kgroup = moe__kgroup(m.p, pl->block_k, pl->group);
  ng = m.kgroup ? moe__cdiv(m.cols, m.kgroup) : 0;
  {
    const uint8_t *base = (const uint8_t *)(which == 13 ? w->w13 : w->w2);
    size_t row_bytes = esz ? (size_t)m.cols * esz : (size_t)((m.cols + 1) / 2);
    m.codes = base + (size_t)e * (size_t)m.rows * row_bytes;
  }
  {
    const float *s = which == 13 ? w->w13_scale : w->w2_scale;
    moe__meta kind = moe__meta_of(m.p);
    int64_t per_e = kind == MOE__META_CHANNEL ? m.rows : kind == MOE__META_BLOCK ? moe__cdiv(m.rows, m.bn) * ng : m.rows * ng;
    m.scale = s ? s + e * per_e : NULL;
  }
  m.zero = (which == 13 ? w->w13_zero : w->w2_zero);
  m.e8m0 = (which == 13 ? w->w13_e8m0 : w->w2_e8m0);
  if (m.zero) m.zero += e * m.rows * ng;
  if (m.e8m0) m.e8m0 += e * m.rows * ng;
  return m;
}

MOE_API moe_status moe_pack(const moe_weights *plain, moe_experts *packed, void *buf, size_t size) {
  moe__pack_plan pl;
  moe_status st;
  uint8_t *base;
  if (!plain || !packed || !buf) return MOE_ERR_NULL;
  st = moe__plan_pack(plain, &pl);
  if (st != MOE_OK) return st;
  if (size < pl.total) return MOE_ERR_BUFFER;
  base = (uint8_t *)buf + ((64 - ((uintptr_t)buf & 63)) & 63);
  memset(packed, 0, sizeof *packed);
  packed->precision = plain->precision;
  packed->E = plain->E, packed->N = plain->N, packed->K = plain->K;
  packed->block_n = pl.block_n, packed->block_k = pl.block_k, packed->group = pl.group;
  packed->kr = pl.kr, packed->k13_pad = pl.k13_pad, packed->k2_pad = pl.k2_pad;
  packed->panels13 = pl.panels13, packed->panels2 = pl.panels2;
  packed->panel13_bytes = pl.panel13_bytes, packed->panel2_bytes = pl.panel2_bytes;
  packed->w13 = base;
  packed->w2 = base + pl.w13_bytes;
  for (int64_t e = 0; e < plain->E; e++) {
    moe__plain_mat m13 = moe__plain_of(plain, &pl, 13, e), m2 = moe__plain_of(plain, &pl, 2, e);
    uint8_t *d13 = base + (size_t)e * (size_t)pl.panels13 * pl.panel13_bytes;
    uint8_t *d2 = base + pl.w13_bytes + (size_t)e * (size_t)pl.panels2 * pl.panel2_bytes;
    for (int64_t hp = 0; hp < pl.panels13 / 2; hp++) {
      int32_t nv = (int32_t)(plain->N - hp * MOE_NR < MOE_NR ? plain->N - hp * MOE_NR : MOE_NR);
      moe__pack_panel(&m13, hp * MOE_NR, nv, d13 + (size_t)(2 * hp) * pl.panel13_bytes, pl.panel13_bytes);
      moe__pack_panel(&m13, plain->N + hp * MOE_NR, nv, d13 + (size_t)(2 * hp + 1) * pl.panel13_bytes, pl.panel13_bytes);
    }
    for (int64_t p = 0; p < pl.panels2; p++) {
      int32_t nv = (int32_t)(plain->K - p * MOE_NR < MOE_NR ? plain->K - p * MOE_NR : MOE_NR);
      moe__pack_panel(&m2, p * MOE_NR, nv, d2 + (size_t)p * pl.panel2_bytes, pl.panel2_bytes);
    }
  }
  if (plain->b13) {
    float *b = (float *)(base + pl.w13_bytes + pl.w2_bytes);
    memcpy(b, plain->b13, (size_t)plain->E * 2 * (size_t)plain->N * sizeof(float));
    packed->b13 = b;
  }
  if (plain->b2) {
    float *b = (float *)(base + pl.w13_bytes + pl.w2_bytes + pl.b13_bytes);
    memcpy(b, plain->b2, (size_t)plain->E * (size_t)plain->K * sizeof(float));
    packed->b2 = b;
  }
  packed->magic = MOE__MAGIC;
  return MOE_OK;
}

/* ---- activation functions (scalar; NaN propagates, no fminf which would drop it) ------------- */
static inline float moe__logistic(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float moe__act(moe_activation act, float g, float u, float alpha, float limit) {
  switch (act) {
  case MOE_ACT_GELU_TANH: {
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * g * (1.0f + tanhf(c * (g + 0.044715f * g * g * g))) * u;
  }
  case MOE_ACT_SWIGLU_OAI:
    g = g > limit ? limit : g;
    u = u > limit ? limit : (u < -limit ? -limit : u);
    return g * moe__logistic(alpha * g) * (u + 1.0f);
  default: return g * moe__logistic(g) * u;
  }
}

/* ---- scalar reference kernels ------------------------------------------------------------------ */
/* Codes of column n for k in [k0, k0 + kn) of a panel's code area: decoded values (A16, before
 * the group scale and zero point) or signed integers (A8). */
static inline float moe__value_a16(moe__code code, uint32_t c) {
  switch (code) {
  case MOE__CODE_E4M3: return moe_e4m3_to_f32((uint8_t)c);
  case MOE__CODE_U4: return (float)c;
  case MOE__CODE_E2M1: return moe_e2m1_to_f32((uint8_t)c);
  default: return moe_bf16_to_f32((uint16_t)c);
  }
}
static inline void moe__decode_a16(moe_precision p, const uint8_t *codes, int32_t n, int64_t k0, int64_t kn, float *w) {
  moe__code code = moe__traits(p)->code;
  for (int64_t k = k0; k < k0 + kn; k++) w[k - k0] = moe__value_a16(code, moe__get_code(p, codes, n, k));
}
static inline void moe__decode_a8(moe_precision p, const uint8_t *codes, int32_t n, int64_t k0, int64_t kn, int32_t *w) {
  int i8 = moe__traits(p)->code == MOE__CODE_I8;
  for (int64_t k = k0; k < k0 + kn; k++) {
    uint32_t c = moe__get_code(p, codes, n, k);
    w[k - k0] = i8 ? (int32_t)(int8_t)c : (int32_t)c;
  }
}

/* The group scale of (group g, column n) from a panel's meta, and the GROUP zero point. */
static inline float moe__group_scale(moe_precision p, const uint8_t *meta, int64_t g, int32_t n) {
  size_t cell = (size_t)g * MOE_NR + (size_t)n;
  float s;
  if (moe__meta_of(p) == MOE__META_E8M0) return moe_e8m0_to_f32(meta[cell]);
  memcpy(&s, meta + 4 * cell, 4);
  return s;
}
static inline int32_t moe__group_zero(moe_precision p, const uint8_t *meta, int64_t ng, int64_t g, int32_t n) {
  return moe__meta_of(p) == MOE__META_GROUP ? meta[(size_t)ng * MOE_NR * 4 + (size_t)g * MOE_NR + (size_t)n] : 0;
}

/* k per decode chunk of the scalar kernels */
#define MOE__CHUNK 256

/* acc[m][n] (n < nr) = dequantized dot product of row m with column n of one panel for the A16
 * precisions: per scale group an f32 sum of bf16(a) * value, then times the group scale (BF16 has a
 * single unscaled group, so its sum runs straight through k). int4 values are q - zero. */
static inline void moe__dot_a16_scalar(moe_precision p, const moe_gemm_args *g, const uint8_t *panel,
                                       float acc[][MOE_NR]) {
  const uint8_t *codes = panel + moe__codes_offset(p), *meta = panel + moe__meta_offset(p, g->kpad);
  int64_t kg = g->kgroup ? g->kgroup : g->kred, ng = moe__cdiv(g->kred, kg);
  float w[MOE__CHUNK], sum[MOE_BLOCK_M];
  for (int32_t n = 0; n < g->nr; n++) {
    for (int32_t m = 0; m < g->mr; m++) acc[m][n] = 0.0f;
    for (int64_t gi = 0; gi < ng; gi++) {
      int64_t k1 = (gi + 1) * kg < g->kred ? (gi + 1) * kg : g->kred;
      float scale = g->kgroup ? moe__group_scale(p, meta, gi, n) : 1.0f;
      float zero = (float)moe__group_zero(p, meta, ng, gi, n);
      for (int32_t m = 0; m < g->mr; m++) sum[m] = 0.0f;
      for (int64_t k0 = gi * kg; k0 < k1; k0 += MOE__CHUNK) {
        int64_t kn = k1 - k0 < MOE__CHUNK ? k1 - k0 : MOE__CHUNK;
        moe__decode_a16(p, codes, n, k0, kn, w);
        if (zero != 0.0f)
          for (int64_t k = 0; k < kn; k++) w[k] -= zero;
        for (int32_t m = 0; m < g->mr; m++) {
          const uint16_t *a = (const uint16_t *)g->a[m] + k0;
          float s = sum[m];
          for (int64_t k = 0; k < kn; k++) s += moe_bf16_to_f32(a[k]) * w[k];
          sum[m] = s;
        }
      }
      for (int32_t m = 0; m < g->mr; m++) acc[m][n] = g->kgroup ? fmaf(sum[m], scale, acc[m][n]) : acc[m][n] + sum[m];
    }
  }
}

/* The same for the A8 precisions: per group an exact int32 sum of (u8 - 128) * value; INT8 has one
 * group and a per-column scale in the panel header, INT4 W4A8 per-group scales. Then times the row
 * scale: acc = (fma(isum_g, s_g, acc) over g in order) * a_scale * col_scale, the order and
 * roundings every ISA keeps (W4A8 is bit-exact across ISAs, like INT8). */
static inline void moe__dot_a8_scalar(moe_precision p, const moe_gemm_args *g, const uint8_t *panel,
                                      float acc[][MOE_NR]) {
  const uint8_t *codes = panel + moe__codes_offset(p), *meta = panel + moe__meta_offset(p, g->kpad);
  int64_t kg = g->kgroup ? g->kgroup : g->kred, ng = moe__cdiv(g->kred, kg);
  int32_t w[MOE__CHUNK], isum[MOE_BLOCK_M];
  for (int32_t n = 0; n < g->nr; n++) {
    float col_scale = 1.0f;
    if (moe__meta_of(p) == MOE__META_CHANNEL) memcpy(&col_scale, panel + MOE_NR * 4 + 4 * (size_t)n, 4);
    for (int32_t m = 0; m < g->mr; m++) acc[m][n] = 0.0f;
    for (int64_t gi = 0; gi < ng; gi++) {
      int64_t k1 = (gi + 1) * kg < g->kred ? (gi + 1) * kg : g->kred;
      int32_t zero = moe__group_zero(p, meta, ng, gi, n);
      for (int32_t m = 0; m < g->mr; m++) isum[m] = 0;
      for (int64_t k0 = gi * kg; k0 < k1; k0 += MOE__CHUNK) {
        int64_t kn = k1 - k0 < MOE__CHUNK ? k1 - k0 : MOE__CHUNK;
        moe__decode_a8(p, codes, n, k0, kn, w);
        for (int64_t k = 0; k < kn; k++) w[k] -= zero;
        for (int32_t m = 0; m < g->mr; m++) {
          const uint8_t *a = (const uint8_t *)g->a[m] + k0;
          int32_t s = isum[m];
          for (int64_t k = 0; k < kn; k++) s += ((int32_t)a[k] - 128) * w[k];
          isum[m] = s;
        }
      }
      for (int32_t m = 0; m < g->mr; m++) /* one rounding per group (fmaf), as the vector kernels */
        acc[m][n] = g->kgroup ? fmaf((float)isum[m], moe__group_scale(p, meta, gi, n), acc[m][n]) : acc[m][n] + (float)isum[m];
    }
    for (int32_t m = 0; m < g->mr; m++) acc[m][n] = acc[m][n] * g->a_scale[m] * col_scale;
  }
}

static inline void moe__dot_scalar(moe_precision p, const moe_gemm_args *g, const uint8_t *panel, float acc[][MOE_NR]) {
  if (moe__is_a8(p)) moe__dot_a8_scalar(p, g, panel, acc);
  else moe__dot_a16_scalar(p, g, panel, acc);
}

/* Epilogues shared by the scalar kernels. */
static inline void moe__gemm1_epilogue_scalar(const moe_gemm_args *g, float gate[][MOE_NR], float up[][MOE_NR]) {
  for (int32_t m = 0; m < g->mr; m++)
    for (int32_t n = 0; n < g->nr; n++) {
      float gv = gate[m][n] + (g->bias ? g->bias[n] : 0.0f), uv = up[m][n] + (g->bias_up ? g->bias_up[n] : 0.0f);
      g->c[m * g->ldc + n] = moe__act(g->act, gv, uv, g->alpha, g->limit);
    }
}
/* One fused multiply-add per element (fmaf), the same rounding as the vector kernels'. */
static inline void moe__gemm2_epilogue_scalar(const moe_gemm_args *g, float acc[][MOE_NR], int32_t col0) {
  for (int32_t m = 0; m < g->mr; m++)
    for (int32_t n = 0; n < g->nr; n++) {
      float *c = g->c_rows[m] + col0 + n;
      *c = fmaf(acc[m][n] + (g->bias ? g->bias[n] : 0.0f), g->row_weight[m], *c);
    }
}

static inline void moe__gemm1_scalar(moe_precision p, const moe_gemm_args *g) {
  float gate[MOE_BLOCK_M][MOE_NR], up[MOE_BLOCK_M][MOE_NR];
  moe__dot_scalar(p, g, g->w, gate);
  moe__dot_scalar(p, g, g->w + g->panel_bytes, up);
  moe__gemm1_epilogue_scalar(g, gate, up);
}
/* gemm2 covers one panel, or two neighbouring ones when nr > 32. */
static inline void moe__gemm2_scalar(moe_precision p, const moe_gemm_args *g) {
  float acc[MOE_BLOCK_M][MOE_NR];
  for (int32_t half = 0; half * MOE_NR < g->nr; half++) {
    moe_gemm_args h = *g;
    h.nr = g->nr - half * MOE_NR < MOE_NR ? g->nr - half * MOE_NR : MOE_NR;
    h.bias = g->bias ? g->bias + half * MOE_NR : NULL;
    moe__dot_scalar(p, &h, g->w + (size_t)half * g->panel_bytes, acc);
    moe__gemm2_epilogue_scalar(&h, acc, half * MOE_NR);
  }
}

/* The named scalar microkernels: <activations>_<weights>_gemm{1,2}_ukernel_<MR>x<NR>c<KR>__scalar,
 * any MR up to MOE_BLOCK_M. */
#define MOE__SCALAR_UKERNELS(inw, kr, prec)                                                                        \
  static inline void moe_##inw##_gemm1_ukernel_32x32c##kr##__scalar(const moe_gemm_args *g) { moe__gemm1_scalar(prec, g); } \
  static inline void moe_##inw##_gemm2_ukernel_32x64c##kr##__scalar(const moe_gemm_args *g) { moe__gemm2_scalar(prec, g); }
MOE__SCALAR_UKERNELS(bf16_bf16w, 2, MOE_PREC_BF16)
MOE__SCALAR_UKERNELS(qu8_qc8w, 4, MOE_PREC_INT8)
MOE__SCALAR_UKERNELS(bf16_fp8w, 2, MOE_PREC_FP8)
MOE__SCALAR_UKERNELS(qu8_qc4w, 4, MOE_PREC_INT4_W4A8)
MOE__SCALAR_UKERNELS(bf16_qc4w, 8, MOE_PREC_INT4_W4A16)
MOE__SCALAR_UKERNELS(bf16_mxfp4w, 8, MOE_PREC_MXFP4)
#undef MOE__SCALAR_UKERNELS

/* ---- CPU features ------------------------------------------------------------------------------ */
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#define MOE__X86 1
#if defined(__GNUC__) || defined(__clang__)
#include <cpuid.h>
#endif
#endif

#if defined(MOE__X86) && (defined(__GNUC__) || defined(__clang__))
static inline void moe__cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}
static inline uint64_t moe__xgetbv(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}
#endif

/* CPUID and XCR0, read once (CPUID traps to the hypervisor in VMs). */
static inline uint32_t moe__detect_features(void) {
  uint32_t f = 0;
#if defined(MOE__X86) && (defined(__GNUC__) || defined(__clang__))
  uint32_t r[4], r1[4], l1[4], max_leaf;
  uint64_t xcr0;
  moe__cpuid(0, 0, r);
  max_leaf = r[0];
  moe__cpuid(1, 0, l1);
  if (max_leaf < 7 || !(l1[2] & (1u << 27))) return 0; /* no OSXSAVE: no XGETBV */
  xcr0 = moe__xgetbv();
  moe__cpuid(7, 0, r);
  moe__cpuid(7, 1, r1);
  if ((xcr0 & 0x6) == 0x6) { /* SSE and AVX state enabled by the OS */
    if (r[1] & (1u << 5)) f |= MOE_CPU_AVX2;
    if (l1[2] & (1u << 12)) f |= MOE_CPU_FMA;
    if (l1[2] & (1u << 29)) f |= MOE_CPU_F16C;
    if (r1[0] & (1u << 4)) f |= MOE_CPU_AVX_VNNI;
  }
  if ((xcr0 & 0xE6) == 0xE6) { /* and the opmask and ZMM state */
    if (r[1] & (1u << 16)) f |= MOE_CPU_AVX512F;
    if (r[1] & (1u << 17)) f |= MOE_CPU_AVX512DQ;
    if (r[1] & (1u << 30)) f |= MOE_CPU_AVX512BW;
    if (r[1] & (1u << 31)) f |= MOE_CPU_AVX512VL;
    if (r[2] & (1u << 11)) f |= MOE_CPU_AVX512VNNI;
    if (r[2] & (1u << 1)) f |= MOE_CPU_AVX512VBMI;
    if (r1[0] & (1u << 5)) f |= MOE_CPU_AVX512BF16;
  }
  if ((r[3] & (1u << 24)) && (xcr0 & 0x60000) == 0x60000) { /* tile config and data state */
    f |= MOE_CPU_AMX_TILE;
    if (r[3] & (1u << 25)) f |= MOE_CPU_AMX_INT8;
    if (r[3] & (1u << 22)) f |= MOE_CPU_AMX_BF16;
  }
#endif
  return f;
}

MOE_API uint32_t moe_cpu_features(void) {
  static uint32_t cached = 0; /* bit 31 marks "detected"; racing first calls store the same value */
  uint32_t f = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (!(f & 0x80000000u)) {
    f = moe__detect_features() | 0x80000000u;
    __atomic_store_n(&cached, f, __ATOMIC_RELAXED);
  }
  return f & 0x7FFFFFFFu;
}

/* Linux gives AMX tile state to a process only on request (arch_prctl ARCH_REQ_XCOMP_PERM = 0x1023,
 * XFEATURE_XTILEDATA = 18; syscall 158). */
MOE_API int moe_amx_request(void) {
#if defined(__linux__) && defined(__x86_64__) && !defined(MOE_NO_AMX) && (defined(__GNUC__) || defined(__clang__))
  static int state = 0; /* 0 unknown, 1 granted, -1 refused or no AMX */
  int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (s == 0) {
    long ret = -1;
    if (moe_cpu_features() & MOE_CPU_AMX_TILE)
      __asm__ volatile("syscall" : "=a"(ret) : "a"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
    s = ret == 0 ? 1 : -1;
    __atomic_store_n(&state, s, __ATOMIC_RELEASE);
  }
  return s == 1;
#else
  return 0;
#endif
}

MOE_API const char *moe_amx_status(void) {
#if defined(MOE_NO_AMX) || defined(MOE_NO_AVX512) || !defined(MOE__X86)
  return "compiled out (MOE_NO_AMX, MOE_NO_AVX512, or not x86-64)";
#elif defined(MOE_AMX_EMULATE)
  return "emulated (MOE_AMX_EMULATE): the AMX kernels run on a C model of the tiles, no AMX hardware is used";
#else
  const uint32_t need = MOE_CPU_AMX_TILE | MOE_CPU_AMX_BF16 | MOE_CPU_AMX_INT8;
  if ((moe_cpu_features() & need) != need) return "no AMX-TILE/BF16/INT8 on this CPU, or the OS does not enable tile state (XCR0)";
  return moe_amx_request() ? "granted" : "Linux refused tile permission (arch_prctl ARCH_REQ_XCOMP_PERM)";
#endif
}

/* ---- activations of a k-group, for the vector kernels ---------------------------------------- */
static inline uint32_t moe__load_u32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
/* v limited to [lo, hi] */
static inline int64_t moe__clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The KR elements (elt bytes each) of row a at k-group i as one dword, those outside [k0, k1) read
 * as pad (the byte that makes the element 0: 0 for bf16, 0x80 for u8 = q + 128). Reads only in
 * [k0, k1). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline)) /* inside the tiles, as the loop it replaces: no call in their code */
#endif
static inline uint32_t moe__group_in(const uint8_t *a, int64_t i, int64_t k0, int64_t k1, int kr, size_t elt, int pad) {
  uint8_t b[4];
  if (i * kr >= k0 && (i + 1) * kr <= k1) return moe__load_u32(a + 4 * (size_t)i);
  memset(b, pad, sizeof b);
  for (int j = 0; j < kr; j++) {
    int64_t k = i * kr + j;
    if (k >= k0 && k < k1) memcpy(b + (size_t)j * elt, a + (size_t)k * elt, elt);
  }
  return moe__load_u32(b);
}

/* ---- AVX-512 kernels ----------------------------------------------------------------------------
 * Compiled with target attributes (no -m flags needed) and chosen at run time. Each row's k loop
 * runs in one accumulator per column in the same order whatever the tile height, so a token's
 * result does not depend on which rows share its tile (bitwise determinism across chunkings). */
#if defined(MOE__X86) && !defined(MOE_NO_AVX512) && (defined(__GNUC__) || defined(__clang__))
#define MOE__HAVE_AVX512 1
#include <immintrin.h>
/* GCC 12's own avx512fintrin.h initialises _mm512_undefined_*() with itself, which g++ reports
 * as -Wuninitialized wherever the intrinsics are inlined (GCC PR 105593, fixed in GCC 13). */
#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define MOE__GCC_DIAG_PUSHED 1
#endif

#define MOE__T_BASE "avx512f,avx512bw,avx512vl,avx512dq"
#define MOE__AVX512_BASE __attribute__((target(MOE__T_BASE))) static inline
#define MOE__AVX512_VNNI __attribute__((target(MOE__T_BASE ",avx512vnni"))) static inline
#define MOE__AVX512_BF16 __attribute__((target(MOE__T_BASE ",avx512bf16"))) static inline
#define MOE__AVX512_VBMI __attribute__((target(MOE__T_BASE ",avx512vbmi"))) static inline
#define MOE__AVX512_FP8 __attribute__((target(MOE__T_BASE ",avx512bf16,avx512vbmi"))) static inline
#define MOE__AVX512_FP8_FN __attribute__((target(MOE__T_BASE ",avx512bf16,avx512vbmi"))) static
/* the same targets for functions that must stay out of line */
#define MOE__AVX512_VNNI_FN __attribute__((target(MOE__T_BASE ",avx512vnni"))) static
#define MOE__AVX512_BF16_FN __attribute__((target(MOE__T_BASE ",avx512bf16"))) static
#define MOE__INLINE __attribute__((always_inline))
/* The k loop is not unrolled: with 24 accumulators live, unrolling makes compilers spill them. */
#if defined(__clang__)
#define MOE__NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define MOE__NO_UNROLL _Pragma("GCC unroll 1")
#endif
#define MOE__CPU_AVX512_BASE (MOE_CPU_AVX512F | MOE_CPU_AVX512BW | MOE_CPU_AVX512VL | MOE_CPU_AVX512DQ)

/* e^x: x = n ln2 + r, |r| <= ln2/2, degree-6 Taylor polynomial, then p * 2^n by vscalefps (which
 * overflows to Inf and underflows to 0 on its own). min/max keep x in the second operand so a
 * NaN passes through. */
MOE__AVX512_BASE MOE__INLINE __m512 moe__exp_avx512(__m512 x) {
  __m512 n, r, p;
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

/* act(g, u) for 16 columns (see moe__act). */
MOE__AVX512_BASE MOE__INLINE __m512 moe__act_avx512(moe_activation act, __m512 g, __m512 u, float alpha, float limit) {
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 z;
  if (act == MOE_ACT_GELU_TANH) { /* 0.5 (1 + tanh(z)) = sigmoid(2z) */
    __m512 g3 = _mm512_mul_ps(_mm512_mul_ps(g, g), g);
    z = _mm512_mul_ps(_mm512_set1_ps(2.0f * 0.7978845608028654f), _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), g3, g));
  } else if (act == MOE_ACT_SWIGLU_OAI) {
    g = _mm512_min_ps(_mm512_set1_ps(limit), g);
    u = _mm512_max_ps(_mm512_set1_ps(-limit), _mm512_min_ps(_mm512_set1_ps(limit), u));
    u = _mm512_add_ps(u, one);
    z = _mm512_mul_ps(_mm512_set1_ps(alpha), g);
  } else {
    z = g;
  }
  return _mm512_div_ps(_mm512_mul_ps(g, u), _mm512_add_ps(one, moe__exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), z))));
}

/* Mask of the first min(left, 16) lanes. */
static inline __mmask16 moe__tail_mask(int64_t left) { return (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1); }
/* Mask of the 16-column vector v (0..3) of a tile with nr valid columns. */
static inline __mmask16 moe__col_mask(int32_t nr, int v) {
  int32_t left = nr - 16 * v;
  return (__mmask16)(left >= 16 ? 0xFFFF : left > 0 ? (1u << left) - 1 : 0);
}

/* Epilogues on one row. gemm1: gate lo/hi and up lo/hi -> act -> 32 columns. gemm2: up to 4
 * vectors (64 columns: two neighbouring panels) -> (+ bias) * top-k weight. */
MOE__AVX512_BASE MOE__INLINE void moe__gemm1_store_avx512(const moe_gemm_args *g, int32_t r, __m512 g0, __m512 g1,
                                                         __m512 u0, __m512 u1) {
  for (int h = 0; h < 2; h++) {
    __mmask16 mk = moe__col_mask(g->nr, h);
    __m512 gv = h ? g1 : g0, uv = h ? u1 : u0;
    if (g->bias) gv = _mm512_add_ps(gv, _mm512_maskz_loadu_ps(mk, g->bias + 16 * h));
    if (g->bias_up) uv = _mm512_add_ps(uv, _mm512_maskz_loadu_ps(mk, g->bias_up + 16 * h));
    _mm512_mask_storeu_ps(g->c + r * g->ldc + 16 * h, mk, moe__act_avx512(g->act, gv, uv, g->alpha, g->limit));
  }
}
MOE__AVX512_BASE MOE__INLINE void moe__gemm2_store_avx512(const moe_gemm_args *g, int32_t r, int nv, __m512 v0,
                                                         __m512 v1, __m512 v2, __m512 v3) {
  for (int h = 0; h < nv; h++) {
    __mmask16 mk = moe__col_mask(g->nr, h);
    __m512 v = h == 0 ? v0 : h == 1 ? v1 : h == 2 ? v2 : v3;
    float *c = g->c_rows[r] + 16 * h;
    if (g->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, g->bias + 16 * h));
    _mm512_mask_storeu_ps(c, mk, _mm512_fmadd_ps(v, _mm512_set1_ps(g->row_weight[r]), _mm512_maskz_loadu_ps(mk, c)));
  }
}

/* The tile's output rows (token sums spread over the chunk, often not in cache) are fetched while
 * the k loop runs, not awaited in the epilogue (+4% on int8 gemm2 in a layer-like loop). */
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_c_rows(const moe_gemm_args *g, int32_t r0, int mr) {
  for (int r = 0; r < mr; r++)
    for (int32_t col = 0; col < g->nr; col += 16) _mm_prefetch((const char *)(g->c_rows[r0 + r] + col), _MM_HINT_T1);
}

#define MOE__PF_MIN_ROWS 11 /* blocks with fewer rows leave the weight stream to the hardware prefetcher */

/* ---- the tile kernels ------------------------------------------------------------------------
 * One k step = one k-group (KR k) of every row in the tile against 64-byte lines of the panels.
 * The loop runs over the full groups; a partial last group (kred not a multiple of KR) runs once
 * more with activations padded by zeros, so no row is read past kred.
 * Prefetch: the panels stream in sequentially, which the hardware prefetcher follows at full DRAM
 * bandwidth. Blocks of MOE__PF_MIN_ROWS rows or more compute long enough per panel for DRAM to idle,
 * so each of their tiles also pulls in its share of the panels the caller reads next (w_next).
 * Measured on Zen 4: software prefetch in smaller blocks (decode) cost 5-15% of bandwidth.
 *
 * The tiles themselves are generated (tools/gen_tiles.py): one function per tile height with named
 * accumulators c<vector>_<row>, which every compiler keeps in registers at -O1..-O3. */

/* The KR activations of a row at k-group i, broadcast to 16 lanes; the tail form reads only the
 * elements below kred. */
MOE__AVX512_BASE MOE__INLINE __m512i moe__bcast_group(const uint8_t *a, int64_t i) {
  return _mm512_set1_epi32((int)moe__load_u32(a + 4 * (size_t)i));
}
/* The same for a group cut by [k0, k1) (moe__group_in), broadcast. */
MOE__AVX512_BASE MOE__INLINE __m512i moe__bcast_range(const uint8_t *a, int64_t i, int64_t k0, int64_t k1, int kr,
                                                     size_t elt, int pad) {
  return _mm512_set1_epi32((int)moe__group_in(a, i, k0, k1, kr, elt, pad));
}

MOE__AVX512_BASE MOE__INLINE __m512i moe__bcast_tail(const uint8_t *a, int64_t i, int64_t kred, size_t elt) {
  return moe__bcast_range(a, i, 0, kred, (int)(4 / elt), elt, 0);
}

/* A tile's share of the next panels (w_next), spread evenly over its k steps. */
typedef struct moe__prefetcher {
  const uint8_t *next, *end;
  int lines_per_step;
} moe__prefetcher;
static inline MOE__INLINE moe__prefetcher moe__prefetch_plan(const moe_gemm_args *g, int32_t r0, int tile, int64_t steps) {
  moe__prefetcher pf = {NULL, NULL, 0};
  if (g->w_next && g->mr >= MOE__PF_MIN_ROWS) {
    const int64_t tiles = (g->mr + tile - 1) / tile, t = r0 / tile;
    const int64_t lines = (int64_t)(g->w_next_bytes / 64), share = (lines + tiles - 1) / tiles;
    const int64_t first = t * share, last = first + share < lines ? first + share : lines;
    pf.next = g->w_next + 64 * first, pf.end = g->w_next + 64 * (last > first ? last : first);
    pf.lines_per_step = (int)((share + steps - 1) / steps);
  }
  return pf;
}
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_step(moe__prefetcher *pf) {
  for (int l = 0; l < pf->lines_per_step && pf->next < pf->end; l++, pf->next += 64) _mm_prefetch((const char *)pf->next, _MM_HINT_T1);
}

/* The dot-product instructions through inline asm that ties the accumulator to the destination
 * register: compiler intrinsics for these destructive instructions made gcc and clang copy and
 * spill accumulators at some optimization levels (up to 2x slower). */
MOE__AVX512_VNNI MOE__INLINE __m512i moe__dpbusd(__m512i acc, __m512i a_u8, __m512i w_s8) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a_u8), "v"(w_s8));
  return acc;
}
MOE__AVX512_BF16 MOE__INLINE __m512 moe__dpbf16(__m512 acc, __m512bh a, __m512bh w) {
  __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(w));
  return acc;
}

/* INT8 (c4 panels with a comp/scale header): int32 sums minus the compensation, to f32, times the
 * row scale, times the column scales: the scalar kernel's order, so both give the same bits
 * before the epilogue. */
MOE__AVX512_BASE MOE__INLINE __m512 moe__qc8_dequant(__m512i acc, const uint8_t *panel, int h, float a_scale) {
  __m512i comp = _mm512_loadu_si512(panel + 64 * h);
  __m512 col_scale = _mm512_loadu_ps((const float *)(const void *)(panel + MOE_NR * 4 + 64 * h));
  __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc, comp));
  return _mm512_mul_ps(_mm512_mul_ps(v, _mm512_set1_ps(a_scale)), col_scale);
}

/* ---- the low-bit tiles ---------------------------------------------------------------------------
 * FP8, INT4 and MXFP4 tiles decode their codes in registers at every k step (byte permutes: layouts
 * (b)-(d)) into bf16 pairs or W4A8's unsigned int8 quads, and run the dot products of up to 4 rows
 * on them. A call runs k in blocks of whole scale groups (MOE__LOWBIT_KB), every tile through a
 * block before the next block starts; within a block a tile goes group by group, its sums start at
 * zero and at the group's end are scaled into the totals:
 *   tot[r][c] = fma(sum, scale[c], tot[r][c])
 * so every row's bits are the same whatever rows share its tile. The decode is redone per tile
 * from cache: measured on Zen 5, 4-row tiles keep the dot-product units busier than decoding once
 * into an L1 scratch and reading it back (a store and a load per vector; see README).
 * W4A8 runs vpdpbusd with the codes (0..15) as the unsigned and the activations (a - 128) as the
 * signed operand, so sum = sum_k q (a - 128) exactly, and the zero point comes off once per group:
 * sum - zero[c] * asum[r], asum[r] = sum_k (a - 128) over the group. W4A16 decodes q - zero. */
typedef struct moe__lowbit {
  moe_precision p;
  const uint8_t *w0, *w1;        /* the panels' codes                                           */
  const uint8_t *meta[2];        /* the panels' group scales (f32, or e8m0 bytes)               */
  const uint8_t *zeros[2];       /* INT4: the panels' zero points                               */
  const struct moe__tables *tab; /* the decoder's tables                                        */
  float *tot;                    /* [MOE_BLOCK_M][64]: the dequantized sums of finished groups  */
  int64_t kb0, kb1;              /* the k block the tiles run now (whole scale groups)          */
} moe__lowbit;

#define MOE__LOWBIT_KB 512 /* k per block: every tile runs a block before the next block starts */

#define MOE__LOWBIT_AHEAD 4096 /* bytes the first tile prefetches ahead of its loads, per panel */

/* What tile t prefetches as it steps through k (the address of step i is pf[p] + line bytes * i):
 * the first tile MOE__LOWBIT_AHEAD bytes ahead of its own loads (past a panel's end: the panel after
 * it, which the caller usually reads next); the second the panels the caller reads next (w_next),
 * so DRAM keeps streaming while the later tiles run from cache; the others, lines already cached. */
static inline MOE__INLINE void moe__lowbit_pf(const moe_gemm_args *g, const moe__lowbit *L, int32_t t, const uint8_t *pf[2]) {
  const int next = t == 1 && g->w_next;
  pf[0] = next ? g->w_next : L->w0 + MOE__LOWBIT_AHEAD;
  pf[1] = next ? (g->w_next_bytes > g->panel_bytes ? g->w_next + g->panel_bytes : g->w_next) : L->w1 + MOE__LOWBIT_AHEAD;
}

/* The group scale of the tile's 16-column vector v (panel v / 2, columns 16 (v % 2) ..) for group
 * gi: f32, or e8m0 as 2^(e - 127) (e = 0 the subnormal 2^-127, e = 255 NaN). */
MOE__AVX512_BASE MOE__INLINE __m512 moe__lowbit_scale(const moe__lowbit *L, int64_t gi, int v) {
  const uint8_t *at = L->meta[v >> 1] + (size_t)gi * MOE_NR + 16 * (size_t)(v & 1);
  if (moe__meta_of(L->p) == MOE__META_E8M0) {
    __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)at));
    __m512i bits = _mm512_slli_epi32(e, 23);
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512()), _mm512_set1_epi32(0x00400000));
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(255)), _mm512_set1_epi32(0x7FC00000));
    return _mm512_castsi512_ps(bits);
  }
  return _mm512_loadu_ps((const float *)(const void *)(L->meta[v >> 1] + 4 * ((size_t)gi * MOE_NR + 16 * (size_t)(v & 1))));
}
/* INT4 zero points of vector v for group gi, as int32. */
MOE__AVX512_BASE MOE__INLINE __m512i moe__lowbit_zero(const moe__lowbit *L, int64_t gi, int v) {
  const uint8_t *at = L->zeros[v >> 1] + (size_t)gi * MOE_NR + 16 * (size_t)(v & 1);
  return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)at));
}
/* ... and as the words of layout (c): each column's zero in both of its words. */
MOE__AVX512_BASE MOE__INLINE void moe__lowbit_zero_words(const moe__lowbit *L, int64_t gi, int np, __m512i zw[4]) {
  for (int v = 0; v < 2 * np; v++) {
    __m512i z = moe__lowbit_zero(L, gi, v);
    zw[v] = _mm512_or_si512(z, _mm512_slli_epi32(z, 16));
  }
}
/* The end of a group: tot[r][16v..] = fma(sum, scale, tot[r][16v..]). */
MOE__AVX512_BASE MOE__INLINE void moe__lowbit_finish(const moe__lowbit *L, int32_t r, int v, __m512 sum, __m512 scale) {
  float *t = L->tot + 64 * r + 16 * v;
  _mm512_store_ps(t, _mm512_fmadd_ps(sum, scale, _mm512_load_ps(t)));
}
/* W4A8's group sum without its zero point, exact: sum_k q (a - 128) - zero * sum_k (a - 128). */
MOE__AVX512_BASE MOE__INLINE __m512 moe__lowbit_isum(__m512i sum, __m512i zero, int32_t asum) {
  return _mm512_cvtepi32_ps(_mm512_sub_epi32(sum, _mm512_mullo_epi32(zero, _mm512_set1_epi32(asum))));
}
/* sum_k (a[k] - 128) over n bytes */
MOE__AVX512_BASE MOE__INLINE int32_t moe__sum_s8(const uint8_t *a, int64_t n) {
  __m512i acc = _mm512_setzero_si512();
  for (int64_t i = 0; i < n; i += 64) {
    __mmask64 mk = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
    acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(mk, a + i), _mm512_setzero_si512()));
  }
  return (int32_t)(_mm512_reduce_add_epi64(acc) - 128 * n);
}

/* `lines` cache lines from p into L2. */
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_ahead(const uint8_t *p, int lines) {
  for (int l = 0; l < lines; l++) _mm_prefetch((const char *)p + 64 * l, _MM_HINT_T1);
}

/* The decoders' tables: fp8 the bf16 high and low bytes of its 128 magnitudes; 4-bit codes the
 * bf16 words of e2m1, twice (hi0), or of int4 q - zero (lo0). */
typedef struct moe__tables {
  __m512i hi0, hi1, lo0, lo1;
} moe__tables;

/* 64 bf16 high and low bytes -> the two lines of (a) they form (unpacking works within 16-byte
 * blocks, which layout (b) already accounts for): columns 0-15 and 16-31 of one pair. */
MOE__AVX512_BASE MOE__INLINE void moe__bf16_unpack(__m512i lo, __m512i hi, __m512bh *c0, __m512bh *c1) {
  *c0 = (__m512bh)_mm512_unpacklo_epi8(lo, hi);
  *c1 = (__m512bh)_mm512_unpackhi_epi8(lo, hi);
}
/* One FP8 line (layout (b)) -> bf16 of one pair: magnitude through the tables, sign or'ed back. */
MOE__AVX512_VBMI MOE__INLINE void moe__fp8_line(const uint8_t *line, const moe__tables *t, __m512bh *c0, __m512bh *c1) {
  __m512i v = _mm512_load_si512(line);
  __m512i hi = _mm512_permutex2var_epi8(t->hi0, v, t->hi1), lo = _mm512_permutex2var_epi8(t->lo0, v, t->lo1);
  moe__bf16_unpack(lo, _mm512_ternarylogic_epi32(hi, v, _mm512_set1_epi8((char)0x80), 0xF8), c0, c1); /* hi | (v & 0x80) */
}
/* Pair j (0..3) of a 4-bit line (layout (c)) -> bf16 of 16 columns: nibble j of every word indexes
 * the 32-entry table, which repeats its 16 values, so the bits above the nibble need no mask. */
MOE__AVX512_BASE MOE__INLINE __m512bh moe__b4_pair(__m512i line, int j, __m512i table) {
  return (__m512bh)_mm512_permutexvar_epi16(j ? _mm512_srli_epi16(line, (unsigned)(4 * j)) : line, table);
}
/* The same for int4 minus each word's zero point (-15..15, a 5-bit index into a signed table). */
MOE__AVX512_BASE MOE__INLINE __m512bh moe__b4_pair_zero(__m512i line, int j, __m512i zero, __m512i table) {
  __m512i q = _mm512_and_si512(_mm512_srli_epi16(line, (unsigned)(4 * j)), _mm512_set1_epi16(15));
  return (__m512bh)_mm512_permutexvar_epi16(_mm512_sub_epi16(q, zero), table);
}
/* One W4A8 line (layout (d)) -> the u8 codes of columns 0-15 and 16-31. */
MOE__AVX512_BASE MOE__INLINE void moe__q4_line(const uint8_t *line, __m512i *c0, __m512i *c1) {
  const __m512i m4 = _mm512_set1_epi8(15);
  __m512i v = _mm512_load_si512(line);
  *c0 = _mm512_and_si512(v, m4);
  *c1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
}

/* Each tile height is its own function (a compile-time MR, never inlined back into one). */
#define MOE__NOINLINE __attribute__((noinline))
#define MOE__ALIGN64 __attribute__((aligned(64)))

/* ==== BEGIN GENERATED by tools/gen_tiles.py: do not edit by hand ==== */
/* bf16 gemm1, 1 row: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm1_tile_1(const moe_gemm_args *g, int32_t r0) {
  const uint8_t *w0 = g->w, *w1 = g->w + g->panel_bytes;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
  }
  moe__gemm1_store_avx512(g, r0 + 0, c0_0, c1_0, c2_0, c3_0);
}

/* bf16 gemm1, 2 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm1_tile_2(const moe_gemm_args *g, int32_t r0) {
  const uint8_t *w0 = g->w, *w1 = g->w + g->panel_bytes;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
  }
  moe__gemm1_store_avx512(g, r0 + 0, c0_0, c1_0, c2_0, c3_0);
  moe__gemm1_store_avx512(g, r0 + 1, c0_1, c1_1, c2_1, c3_1);
}

/* bf16 gemm1, 3 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm1_tile_3(const moe_gemm_args *g, int32_t r0) {
  const uint8_t *w0 = g->w, *w1 = g->w + g->panel_bytes;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
  }
  moe__gemm1_store_avx512(g, r0 + 0, c0_0, c1_0, c2_0, c3_0);
  moe__gemm1_store_avx512(g, r0 + 1, c0_1, c1_1, c2_1, c3_1);
  moe__gemm1_store_avx512(g, r0 + 2, c0_2, c1_2, c2_2, c3_2);
}

/* bf16 gemm1, 4 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm1_tile_4(const moe_gemm_args *g, int32_t r0) {
  const uint8_t *w0 = g->w, *w1 = g->w + g->panel_bytes;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps(), c2_3 = _mm512_setzero_ps(), c3_3 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); c2_3 = moe__dpbf16(c2_3, a, v2); c3_3 = moe__dpbf16(c3_3, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); c2_3 = moe__dpbf16(c2_3, a, v2); c3_3 = moe__dpbf16(c3_3, a, v3); }
  }
  moe__gemm1_store_avx512(g, r0 + 0, c0_0, c1_0, c2_0, c3_0);
  moe__gemm1_store_avx512(g, r0 + 1, c0_1, c1_1, c2_1, c3_1);
  moe__gemm1_store_avx512(g, r0 + 2, c0_2, c1_2, c2_2, c3_2);
  moe__gemm1_store_avx512(g, r0 + 3, c0_3, c1_3, c2_3, c3_3);
}

/* bf16 gemm1, 5 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm1_tile_5(const moe_gemm_args *g, int32_t r0) {
  const uint8_t *w0 = g->w, *w1 = g->w + g->panel_bytes;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps(), c2_3 = _mm512_setzero_ps(), c3_3 = _mm512_setzero_ps();
  __m512 c0_4 = _mm512_setzero_ps(), c1_4 = _mm512_setzero_ps(), c2_4 = _mm512_setzero_ps(), c3_4 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); c2_3 = moe__dpbf16(c2_3, a, v2); c3_3 = moe__dpbf16(c3_3, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a4, i); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); c2_4 = moe__dpbf16(c2_4, a, v2); c3_4 = moe__dpbf16(c3_4, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); c2_3 = moe__dpbf16(c2_3, a, v2); c3_3 = moe__dpbf16(c3_3, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a4, full, g->kred, 2); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); c2_4 = moe__dpbf16(c2_4, a, v2); c3_4 = moe__dpbf16(c3_4, a, v3); }
  }
  moe__gemm1_store_avx512(g, r0 + 0, c0_0, c1_0, c2_0, c3_0);
  moe__gemm1_store_avx512(g, r0 + 1, c0_1, c1_1, c2_1, c3_1);
  moe__gemm1_store_avx512(g, r0 + 2, c0_2, c1_2, c2_2, c3_2);
  moe__gemm1_store_avx512(g, r0 + 3, c0_3, c1_3, c2_3, c3_3);
  moe__gemm1_store_avx512(g, r0 + 4, c0_4, c1_4, c2_4, c3_4);
}

/* bf16 gemm1 over any mr: tiles of 5 rows, then the rest */
MOE__AVX512_BF16 void moe__bf16_gemm1_rows(const moe_gemm_args *g) {
  for (int32_t r0 = 0; r0 < g->mr; r0 += 5) {
    switch (g->mr - r0 < 5 ? g->mr - r0 : 5) {
    case 1: moe__bf16_gemm1_tile_1(g, r0); break;
    case 2: moe__bf16_gemm1_tile_2(g, r0); break;
    case 3: moe__bf16_gemm1_tile_3(g, r0); break;
    case 4: moe__bf16_gemm1_tile_4(g, r0); break;
    default: moe__bf16_gemm1_tile_5(g, r0); break;
    }
  }
}

/* bf16 gemm2x2, 1 row: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2x2_tile_1(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 1);
  const uint8_t *w0 = g->w, *w1 = g->w + g->panel_bytes;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 4, c0_0, c1_0, c2_0, c3_0);
}

/* bf16 gemm2x2, 2 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2x2_tile_2(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 2);
  const uint8_t *w0 = g->w, *w1 = g->w + g->panel_bytes;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 4, c0_0, c1_0, c2_0, c3_0);
  moe__gemm2_store_avx512(g, r0 + 1, 4, c0_1, c1_1, c2_1, c3_1);
}

/* bf16 gemm2x2, 3 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2x2_tile_3(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 3);
  const uint8_t *w0 = g->w, *w1 = g->w + g->panel_bytes;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 4, c0_0, c1_0, c2_0, c3_0);
  moe__gemm2_store_avx512(g, r0 + 1, 4, c0_1, c1_1, c2_1, c3_1);
  moe__gemm2_store_avx512(g, r0 + 2, 4, c0_2, c1_2, c2_2, c3_2);
}

/* bf16 gemm2x2, 4 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2x2_tile_4(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 4);
  const uint8_t *w0 = g->w, *w1 = g->w + g->panel_bytes;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps(), c2_3 = _mm512_setzero_ps(), c3_3 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); c2_3 = moe__dpbf16(c2_3, a, v2); c3_3 = moe__dpbf16(c3_3, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); c2_3 = moe__dpbf16(c2_3, a, v2); c3_3 = moe__dpbf16(c3_3, a, v3); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 4, c0_0, c1_0, c2_0, c3_0);
  moe__gemm2_store_avx512(g, r0 + 1, 4, c0_1, c1_1, c2_1, c3_1);
  moe__gemm2_store_avx512(g, r0 + 2, 4, c0_2, c1_2, c2_2, c3_2);
  moe__gemm2_store_avx512(g, r0 + 3, 4, c0_3, c1_3, c2_3, c3_3);
}

/* bf16 gemm2x2, 5 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2x2_tile_5(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 5);
  const uint8_t *w0 = g->w, *w1 = g->w + g->panel_bytes;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps(), c2_3 = _mm512_setzero_ps(), c3_3 = _mm512_setzero_ps();
  __m512 c0_4 = _mm512_setzero_ps(), c1_4 = _mm512_setzero_ps(), c2_4 = _mm512_setzero_ps(), c3_4 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); c2_3 = moe__dpbf16(c2_3, a, v2); c3_3 = moe__dpbf16(c3_3, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a4, i); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); c2_4 = moe__dpbf16(c2_4, a, v2); c3_4 = moe__dpbf16(c3_4, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    const __m512bh v2 = (__m512bh)_mm512_loadu_si512(w1 + off), v3 = (__m512bh)_mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); c2_0 = moe__dpbf16(c2_0, a, v2); c3_0 = moe__dpbf16(c3_0, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); c2_1 = moe__dpbf16(c2_1, a, v2); c3_1 = moe__dpbf16(c3_1, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); c2_2 = moe__dpbf16(c2_2, a, v2); c3_2 = moe__dpbf16(c3_2, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); c2_3 = moe__dpbf16(c2_3, a, v2); c3_3 = moe__dpbf16(c3_3, a, v3); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a4, full, g->kred, 2); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); c2_4 = moe__dpbf16(c2_4, a, v2); c3_4 = moe__dpbf16(c3_4, a, v3); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 4, c0_0, c1_0, c2_0, c3_0);
  moe__gemm2_store_avx512(g, r0 + 1, 4, c0_1, c1_1, c2_1, c3_1);
  moe__gemm2_store_avx512(g, r0 + 2, 4, c0_2, c1_2, c2_2, c3_2);
  moe__gemm2_store_avx512(g, r0 + 3, 4, c0_3, c1_3, c2_3, c3_3);
  moe__gemm2_store_avx512(g, r0 + 4, 4, c0_4, c1_4, c2_4, c3_4);
}

/* bf16 gemm2x2 over any mr: tiles of 5 rows, then the rest */
MOE__AVX512_BF16 void moe__bf16_gemm2x2_rows(const moe_gemm_args *g) {
  for (int32_t r0 = 0; r0 < g->mr; r0 += 5) {
    switch (g->mr - r0 < 5 ? g->mr - r0 : 5) {
    case 1: moe__bf16_gemm2x2_tile_1(g, r0); break;
    case 2: moe__bf16_gemm2x2_tile_2(g, r0); break;
    case 3: moe__bf16_gemm2x2_tile_3(g, r0); break;
    case 4: moe__bf16_gemm2x2_tile_4(g, r0); break;
    default: moe__bf16_gemm2x2_tile_5(g, r0); break;
    }
  }
}

/* bf16 gemm2, 1 row: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_1(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 1);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
}

/* bf16 gemm2, 2 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_2(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 2);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
}

/* bf16 gemm2, 3 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_3(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 3);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
  moe__gemm2_store_avx512(g, r0 + 2, 2, c0_2, c1_2, c0_2, c1_2);
}

/* bf16 gemm2, 4 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_4(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 4);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
  moe__gemm2_store_avx512(g, r0 + 2, 2, c0_2, c1_2, c0_2, c1_2);
  moe__gemm2_store_avx512(g, r0 + 3, 2, c0_3, c1_3, c0_3, c1_3);
}

/* bf16 gemm2, 5 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_5(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 5);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps();
  __m512 c0_4 = _mm512_setzero_ps(), c1_4 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a4, i); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a4, full, g->kred, 2); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
  moe__gemm2_store_avx512(g, r0 + 2, 2, c0_2, c1_2, c0_2, c1_2);
  moe__gemm2_store_avx512(g, r0 + 3, 2, c0_3, c1_3, c0_3, c1_3);
  moe__gemm2_store_avx512(g, r0 + 4, 2, c0_4, c1_4, c0_4, c1_4);
}

/* bf16 gemm2, 6 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_6(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 6);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps();
  __m512 c0_4 = _mm512_setzero_ps(), c1_4 = _mm512_setzero_ps();
  __m512 c0_5 = _mm512_setzero_ps(), c1_5 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a4, i); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a5, i); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a4, full, g->kred, 2); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a5, full, g->kred, 2); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
  moe__gemm2_store_avx512(g, r0 + 2, 2, c0_2, c1_2, c0_2, c1_2);
  moe__gemm2_store_avx512(g, r0 + 3, 2, c0_3, c1_3, c0_3, c1_3);
  moe__gemm2_store_avx512(g, r0 + 4, 2, c0_4, c1_4, c0_4, c1_4);
  moe__gemm2_store_avx512(g, r0 + 5, 2, c0_5, c1_5, c0_5, c1_5);
}

/* bf16 gemm2, 7 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_7(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 7);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps();
  __m512 c0_4 = _mm512_setzero_ps(), c1_4 = _mm512_setzero_ps();
  __m512 c0_5 = _mm512_setzero_ps(), c1_5 = _mm512_setzero_ps();
  __m512 c0_6 = _mm512_setzero_ps(), c1_6 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a4, i); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a5, i); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a6, i); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a4, full, g->kred, 2); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a5, full, g->kred, 2); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a6, full, g->kred, 2); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
  moe__gemm2_store_avx512(g, r0 + 2, 2, c0_2, c1_2, c0_2, c1_2);
  moe__gemm2_store_avx512(g, r0 + 3, 2, c0_3, c1_3, c0_3, c1_3);
  moe__gemm2_store_avx512(g, r0 + 4, 2, c0_4, c1_4, c0_4, c1_4);
  moe__gemm2_store_avx512(g, r0 + 5, 2, c0_5, c1_5, c0_5, c1_5);
  moe__gemm2_store_avx512(g, r0 + 6, 2, c0_6, c1_6, c0_6, c1_6);
}

/* bf16 gemm2, 8 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_8(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 8);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6], *a7 = (const uint8_t *)g->a[r0 + 7];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps();
  __m512 c0_4 = _mm512_setzero_ps(), c1_4 = _mm512_setzero_ps();
  __m512 c0_5 = _mm512_setzero_ps(), c1_5 = _mm512_setzero_ps();
  __m512 c0_6 = _mm512_setzero_ps(), c1_6 = _mm512_setzero_ps();
  __m512 c0_7 = _mm512_setzero_ps(), c1_7 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a4, i); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a5, i); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a6, i); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a7, i); c0_7 = moe__dpbf16(c0_7, a, v0); c1_7 = moe__dpbf16(c1_7, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a4, full, g->kred, 2); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a5, full, g->kred, 2); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a6, full, g->kred, 2); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a7, full, g->kred, 2); c0_7 = moe__dpbf16(c0_7, a, v0); c1_7 = moe__dpbf16(c1_7, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
  moe__gemm2_store_avx512(g, r0 + 2, 2, c0_2, c1_2, c0_2, c1_2);
  moe__gemm2_store_avx512(g, r0 + 3, 2, c0_3, c1_3, c0_3, c1_3);
  moe__gemm2_store_avx512(g, r0 + 4, 2, c0_4, c1_4, c0_4, c1_4);
  moe__gemm2_store_avx512(g, r0 + 5, 2, c0_5, c1_5, c0_5, c1_5);
  moe__gemm2_store_avx512(g, r0 + 6, 2, c0_6, c1_6, c0_6, c1_6);
  moe__gemm2_store_avx512(g, r0 + 7, 2, c0_7, c1_7, c0_7, c1_7);
}

/* bf16 gemm2, 9 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_9(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 9);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6], *a7 = (const uint8_t *)g->a[r0 + 7], *a8 = (const uint8_t *)g->a[r0 + 8];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps();
  __m512 c0_4 = _mm512_setzero_ps(), c1_4 = _mm512_setzero_ps();
  __m512 c0_5 = _mm512_setzero_ps(), c1_5 = _mm512_setzero_ps();
  __m512 c0_6 = _mm512_setzero_ps(), c1_6 = _mm512_setzero_ps();
  __m512 c0_7 = _mm512_setzero_ps(), c1_7 = _mm512_setzero_ps();
  __m512 c0_8 = _mm512_setzero_ps(), c1_8 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a4, i); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a5, i); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a6, i); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a7, i); c0_7 = moe__dpbf16(c0_7, a, v0); c1_7 = moe__dpbf16(c1_7, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a8, i); c0_8 = moe__dpbf16(c0_8, a, v0); c1_8 = moe__dpbf16(c1_8, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a4, full, g->kred, 2); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a5, full, g->kred, 2); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a6, full, g->kred, 2); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a7, full, g->kred, 2); c0_7 = moe__dpbf16(c0_7, a, v0); c1_7 = moe__dpbf16(c1_7, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a8, full, g->kred, 2); c0_8 = moe__dpbf16(c0_8, a, v0); c1_8 = moe__dpbf16(c1_8, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
  moe__gemm2_store_avx512(g, r0 + 2, 2, c0_2, c1_2, c0_2, c1_2);
  moe__gemm2_store_avx512(g, r0 + 3, 2, c0_3, c1_3, c0_3, c1_3);
  moe__gemm2_store_avx512(g, r0 + 4, 2, c0_4, c1_4, c0_4, c1_4);
  moe__gemm2_store_avx512(g, r0 + 5, 2, c0_5, c1_5, c0_5, c1_5);
  moe__gemm2_store_avx512(g, r0 + 6, 2, c0_6, c1_6, c0_6, c1_6);
  moe__gemm2_store_avx512(g, r0 + 7, 2, c0_7, c1_7, c0_7, c1_7);
  moe__gemm2_store_avx512(g, r0 + 8, 2, c0_8, c1_8, c0_8, c1_8);
}

/* bf16 gemm2, 10 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_10(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 10);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6], *a7 = (const uint8_t *)g->a[r0 + 7], *a8 = (const uint8_t *)g->a[r0 + 8], *a9 = (const uint8_t *)g->a[r0 + 9];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps();
  __m512 c0_4 = _mm512_setzero_ps(), c1_4 = _mm512_setzero_ps();
  __m512 c0_5 = _mm512_setzero_ps(), c1_5 = _mm512_setzero_ps();
  __m512 c0_6 = _mm512_setzero_ps(), c1_6 = _mm512_setzero_ps();
  __m512 c0_7 = _mm512_setzero_ps(), c1_7 = _mm512_setzero_ps();
  __m512 c0_8 = _mm512_setzero_ps(), c1_8 = _mm512_setzero_ps();
  __m512 c0_9 = _mm512_setzero_ps(), c1_9 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a4, i); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a5, i); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a6, i); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a7, i); c0_7 = moe__dpbf16(c0_7, a, v0); c1_7 = moe__dpbf16(c1_7, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a8, i); c0_8 = moe__dpbf16(c0_8, a, v0); c1_8 = moe__dpbf16(c1_8, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a9, i); c0_9 = moe__dpbf16(c0_9, a, v0); c1_9 = moe__dpbf16(c1_9, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a4, full, g->kred, 2); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a5, full, g->kred, 2); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a6, full, g->kred, 2); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a7, full, g->kred, 2); c0_7 = moe__dpbf16(c0_7, a, v0); c1_7 = moe__dpbf16(c1_7, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a8, full, g->kred, 2); c0_8 = moe__dpbf16(c0_8, a, v0); c1_8 = moe__dpbf16(c1_8, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a9, full, g->kred, 2); c0_9 = moe__dpbf16(c0_9, a, v0); c1_9 = moe__dpbf16(c1_9, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
  moe__gemm2_store_avx512(g, r0 + 2, 2, c0_2, c1_2, c0_2, c1_2);
  moe__gemm2_store_avx512(g, r0 + 3, 2, c0_3, c1_3, c0_3, c1_3);
  moe__gemm2_store_avx512(g, r0 + 4, 2, c0_4, c1_4, c0_4, c1_4);
  moe__gemm2_store_avx512(g, r0 + 5, 2, c0_5, c1_5, c0_5, c1_5);
  moe__gemm2_store_avx512(g, r0 + 6, 2, c0_6, c1_6, c0_6, c1_6);
  moe__gemm2_store_avx512(g, r0 + 7, 2, c0_7, c1_7, c0_7, c1_7);
  moe__gemm2_store_avx512(g, r0 + 8, 2, c0_8, c1_8, c0_8, c1_8);
  moe__gemm2_store_avx512(g, r0 + 9, 2, c0_9, c1_9, c0_9, c1_9);
}

/* bf16 gemm2, 11 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_11(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 11);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6], *a7 = (const uint8_t *)g->a[r0 + 7], *a8 = (const uint8_t *)g->a[r0 + 8], *a9 = (const uint8_t *)g->a[r0 + 9], *a10 = (const uint8_t *)g->a[r0 + 10];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps();
  __m512 c0_4 = _mm512_setzero_ps(), c1_4 = _mm512_setzero_ps();
  __m512 c0_5 = _mm512_setzero_ps(), c1_5 = _mm512_setzero_ps();
  __m512 c0_6 = _mm512_setzero_ps(), c1_6 = _mm512_setzero_ps();
  __m512 c0_7 = _mm512_setzero_ps(), c1_7 = _mm512_setzero_ps();
  __m512 c0_8 = _mm512_setzero_ps(), c1_8 = _mm512_setzero_ps();
  __m512 c0_9 = _mm512_setzero_ps(), c1_9 = _mm512_setzero_ps();
  __m512 c0_10 = _mm512_setzero_ps(), c1_10 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a4, i); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a5, i); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a6, i); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a7, i); c0_7 = moe__dpbf16(c0_7, a, v0); c1_7 = moe__dpbf16(c1_7, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a8, i); c0_8 = moe__dpbf16(c0_8, a, v0); c1_8 = moe__dpbf16(c1_8, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a9, i); c0_9 = moe__dpbf16(c0_9, a, v0); c1_9 = moe__dpbf16(c1_9, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a10, i); c0_10 = moe__dpbf16(c0_10, a, v0); c1_10 = moe__dpbf16(c1_10, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a4, full, g->kred, 2); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a5, full, g->kred, 2); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a6, full, g->kred, 2); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a7, full, g->kred, 2); c0_7 = moe__dpbf16(c0_7, a, v0); c1_7 = moe__dpbf16(c1_7, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a8, full, g->kred, 2); c0_8 = moe__dpbf16(c0_8, a, v0); c1_8 = moe__dpbf16(c1_8, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a9, full, g->kred, 2); c0_9 = moe__dpbf16(c0_9, a, v0); c1_9 = moe__dpbf16(c1_9, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a10, full, g->kred, 2); c0_10 = moe__dpbf16(c0_10, a, v0); c1_10 = moe__dpbf16(c1_10, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
  moe__gemm2_store_avx512(g, r0 + 2, 2, c0_2, c1_2, c0_2, c1_2);
  moe__gemm2_store_avx512(g, r0 + 3, 2, c0_3, c1_3, c0_3, c1_3);
  moe__gemm2_store_avx512(g, r0 + 4, 2, c0_4, c1_4, c0_4, c1_4);
  moe__gemm2_store_avx512(g, r0 + 5, 2, c0_5, c1_5, c0_5, c1_5);
  moe__gemm2_store_avx512(g, r0 + 6, 2, c0_6, c1_6, c0_6, c1_6);
  moe__gemm2_store_avx512(g, r0 + 7, 2, c0_7, c1_7, c0_7, c1_7);
  moe__gemm2_store_avx512(g, r0 + 8, 2, c0_8, c1_8, c0_8, c1_8);
  moe__gemm2_store_avx512(g, r0 + 9, 2, c0_9, c1_9, c0_9, c1_9);
  moe__gemm2_store_avx512(g, r0 + 10, 2, c0_10, c1_10, c0_10, c1_10);
}

/* bf16 gemm2, 12 rows: one panel (32 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__bf16_gemm2_tile_12(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 12);
  const uint8_t *w0 = g->w;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6], *a7 = (const uint8_t *)g->a[r0 + 7], *a8 = (const uint8_t *)g->a[r0 + 8], *a9 = (const uint8_t *)g->a[r0 + 9], *a10 = (const uint8_t *)g->a[r0 + 10], *a11 = (const uint8_t *)g->a[r0 + 11];
  const int64_t full = g->kred / 2, steps = (g->kred + 1) / 2;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps();
  __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps();
  __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps();
  __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps();
  __m512 c0_4 = _mm512_setzero_ps(), c1_4 = _mm512_setzero_ps();
  __m512 c0_5 = _mm512_setzero_ps(), c1_5 = _mm512_setzero_ps();
  __m512 c0_6 = _mm512_setzero_ps(), c1_6 = _mm512_setzero_ps();
  __m512 c0_7 = _mm512_setzero_ps(), c1_7 = _mm512_setzero_ps();
  __m512 c0_8 = _mm512_setzero_ps(), c1_8 = _mm512_setzero_ps();
  __m512 c0_9 = _mm512_setzero_ps(), c1_9 = _mm512_setzero_ps();
  __m512 c0_10 = _mm512_setzero_ps(), c1_10 = _mm512_setzero_ps();
  __m512 c0_11 = _mm512_setzero_ps(), c1_11 = _mm512_setzero_ps();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_group(a0, i); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a1, i); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a2, i); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a3, i); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a4, i); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a5, i); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a6, i); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a7, i); c0_7 = moe__dpbf16(c0_7, a, v0); c1_7 = moe__dpbf16(c1_7, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a8, i); c0_8 = moe__dpbf16(c0_8, a, v0); c1_8 = moe__dpbf16(c1_8, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a9, i); c0_9 = moe__dpbf16(c0_9, a, v0); c1_9 = moe__dpbf16(c1_9, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a10, i); c0_10 = moe__dpbf16(c0_10, a, v0); c1_10 = moe__dpbf16(c1_10, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_group(a11, i); c0_11 = moe__dpbf16(c0_11, a, v0); c1_11 = moe__dpbf16(c1_11, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512bh v0 = (__m512bh)_mm512_loadu_si512(w0 + off), v1 = (__m512bh)_mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512bh a = (__m512bh)moe__bcast_tail(a0, full, g->kred, 2); c0_0 = moe__dpbf16(c0_0, a, v0); c1_0 = moe__dpbf16(c1_0, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a1, full, g->kred, 2); c0_1 = moe__dpbf16(c0_1, a, v0); c1_1 = moe__dpbf16(c1_1, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a2, full, g->kred, 2); c0_2 = moe__dpbf16(c0_2, a, v0); c1_2 = moe__dpbf16(c1_2, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a3, full, g->kred, 2); c0_3 = moe__dpbf16(c0_3, a, v0); c1_3 = moe__dpbf16(c1_3, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a4, full, g->kred, 2); c0_4 = moe__dpbf16(c0_4, a, v0); c1_4 = moe__dpbf16(c1_4, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a5, full, g->kred, 2); c0_5 = moe__dpbf16(c0_5, a, v0); c1_5 = moe__dpbf16(c1_5, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a6, full, g->kred, 2); c0_6 = moe__dpbf16(c0_6, a, v0); c1_6 = moe__dpbf16(c1_6, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a7, full, g->kred, 2); c0_7 = moe__dpbf16(c0_7, a, v0); c1_7 = moe__dpbf16(c1_7, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a8, full, g->kred, 2); c0_8 = moe__dpbf16(c0_8, a, v0); c1_8 = moe__dpbf16(c1_8, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a9, full, g->kred, 2); c0_9 = moe__dpbf16(c0_9, a, v0); c1_9 = moe__dpbf16(c1_9, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a10, full, g->kred, 2); c0_10 = moe__dpbf16(c0_10, a, v0); c1_10 = moe__dpbf16(c1_10, a, v1); }
    { const __m512bh a = (__m512bh)moe__bcast_tail(a11, full, g->kred, 2); c0_11 = moe__dpbf16(c0_11, a, v0); c1_11 = moe__dpbf16(c1_11, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, c0_0, c1_0, c0_0, c1_0);
  moe__gemm2_store_avx512(g, r0 + 1, 2, c0_1, c1_1, c0_1, c1_1);
  moe__gemm2_store_avx512(g, r0 + 2, 2, c0_2, c1_2, c0_2, c1_2);
  moe__gemm2_store_avx512(g, r0 + 3, 2, c0_3, c1_3, c0_3, c1_3);
  moe__gemm2_store_avx512(g, r0 + 4, 2, c0_4, c1_4, c0_4, c1_4);
  moe__gemm2_store_avx512(g, r0 + 5, 2, c0_5, c1_5, c0_5, c1_5);
  moe__gemm2_store_avx512(g, r0 + 6, 2, c0_6, c1_6, c0_6, c1_6);
  moe__gemm2_store_avx512(g, r0 + 7, 2, c0_7, c1_7, c0_7, c1_7);
  moe__gemm2_store_avx512(g, r0 + 8, 2, c0_8, c1_8, c0_8, c1_8);
  moe__gemm2_store_avx512(g, r0 + 9, 2, c0_9, c1_9, c0_9, c1_9);
  moe__gemm2_store_avx512(g, r0 + 10, 2, c0_10, c1_10, c0_10, c1_10);
  moe__gemm2_store_avx512(g, r0 + 11, 2, c0_11, c1_11, c0_11, c1_11);
}

/* bf16 gemm2 over any mr: tiles of 12 rows, then the rest */
MOE__AVX512_BF16 void moe__bf16_gemm2_rows(const moe_gemm_args *g) {
  for (int32_t r0 = 0; r0 < g->mr; r0 += 12) {
    switch (g->mr - r0 < 12 ? g->mr - r0 : 12) {
    case 1: moe__bf16_gemm2_tile_1(g, r0); break;
    case 2: moe__bf16_gemm2_tile_2(g, r0); break;
    case 3: moe__bf16_gemm2_tile_3(g, r0); break;
    case 4: moe__bf16_gemm2_tile_4(g, r0); break;
    case 5: moe__bf16_gemm2_tile_5(g, r0); break;
    case 6: moe__bf16_gemm2_tile_6(g, r0); break;
    case 7: moe__bf16_gemm2_tile_7(g, r0); break;
    case 8: moe__bf16_gemm2_tile_8(g, r0); break;
    case 9: moe__bf16_gemm2_tile_9(g, r0); break;
    case 10: moe__bf16_gemm2_tile_10(g, r0); break;
    case 11: moe__bf16_gemm2_tile_11(g, r0); break;
    default: moe__bf16_gemm2_tile_12(g, r0); break;
    }
  }
}

/* qc8 gemm1, 1 row: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm1_tile_1(const moe_gemm_args *g, int32_t r0) {
  const uint8_t *p0 = g->w, *p1 = g->w + g->panel_bytes;
  const uint8_t *w0 = p0 + MOE_NR * 8, *w1 = p1 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
  }
  moe__gemm1_store_avx512(g, r0 + 0, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), moe__qc8_dequant(c2_0, p1, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c3_0, p1, 1, g->a_scale[r0 + 0]));
}

/* qc8 gemm1, 2 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm1_tile_2(const moe_gemm_args *g, int32_t r0) {
  const uint8_t *p0 = g->w, *p1 = g->w + g->panel_bytes;
  const uint8_t *w0 = p0 + MOE_NR * 8, *w1 = p1 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
  }
  moe__gemm1_store_avx512(g, r0 + 0, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), moe__qc8_dequant(c2_0, p1, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c3_0, p1, 1, g->a_scale[r0 + 0]));
  moe__gemm1_store_avx512(g, r0 + 1, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), moe__qc8_dequant(c2_1, p1, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c3_1, p1, 1, g->a_scale[r0 + 1]));
}

/* qc8 gemm1, 3 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm1_tile_3(const moe_gemm_args *g, int32_t r0) {
  const uint8_t *p0 = g->w, *p1 = g->w + g->panel_bytes;
  const uint8_t *w0 = p0 + MOE_NR * 8, *w1 = p1 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512(), c2_2 = _mm512_setzero_si512(), c3_2 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
  }
  moe__gemm1_store_avx512(g, r0 + 0, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), moe__qc8_dequant(c2_0, p1, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c3_0, p1, 1, g->a_scale[r0 + 0]));
  moe__gemm1_store_avx512(g, r0 + 1, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), moe__qc8_dequant(c2_1, p1, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c3_1, p1, 1, g->a_scale[r0 + 1]));
  moe__gemm1_store_avx512(g, r0 + 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), moe__qc8_dequant(c2_2, p1, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c3_2, p1, 1, g->a_scale[r0 + 2]));
}

/* qc8 gemm1, 4 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm1_tile_4(const moe_gemm_args *g, int32_t r0) {
  const uint8_t *p0 = g->w, *p1 = g->w + g->panel_bytes;
  const uint8_t *w0 = p0 + MOE_NR * 8, *w1 = p1 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512(), c2_2 = _mm512_setzero_si512(), c3_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512(), c2_3 = _mm512_setzero_si512(), c3_3 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); c2_3 = moe__dpbusd(c2_3, a, v2); c3_3 = moe__dpbusd(c3_3, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); c2_3 = moe__dpbusd(c2_3, a, v2); c3_3 = moe__dpbusd(c3_3, a, v3); }
  }
  moe__gemm1_store_avx512(g, r0 + 0, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), moe__qc8_dequant(c2_0, p1, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c3_0, p1, 1, g->a_scale[r0 + 0]));
  moe__gemm1_store_avx512(g, r0 + 1, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), moe__qc8_dequant(c2_1, p1, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c3_1, p1, 1, g->a_scale[r0 + 1]));
  moe__gemm1_store_avx512(g, r0 + 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), moe__qc8_dequant(c2_2, p1, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c3_2, p1, 1, g->a_scale[r0 + 2]));
  moe__gemm1_store_avx512(g, r0 + 3, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), moe__qc8_dequant(c2_3, p1, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c3_3, p1, 1, g->a_scale[r0 + 3]));
}

/* qc8 gemm1, 5 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm1_tile_5(const moe_gemm_args *g, int32_t r0) {
  const uint8_t *p0 = g->w, *p1 = g->w + g->panel_bytes;
  const uint8_t *w0 = p0 + MOE_NR * 8, *w1 = p1 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512(), c2_2 = _mm512_setzero_si512(), c3_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512(), c2_3 = _mm512_setzero_si512(), c3_3 = _mm512_setzero_si512();
  __m512i c0_4 = _mm512_setzero_si512(), c1_4 = _mm512_setzero_si512(), c2_4 = _mm512_setzero_si512(), c3_4 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); c2_3 = moe__dpbusd(c2_3, a, v2); c3_3 = moe__dpbusd(c3_3, a, v3); }
    { const __m512i a = moe__bcast_group(a4, i); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); c2_4 = moe__dpbusd(c2_4, a, v2); c3_4 = moe__dpbusd(c3_4, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); c2_3 = moe__dpbusd(c2_3, a, v2); c3_3 = moe__dpbusd(c3_3, a, v3); }
    { const __m512i a = moe__bcast_tail(a4, full, g->kred, 1); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); c2_4 = moe__dpbusd(c2_4, a, v2); c3_4 = moe__dpbusd(c3_4, a, v3); }
  }
  moe__gemm1_store_avx512(g, r0 + 0, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), moe__qc8_dequant(c2_0, p1, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c3_0, p1, 1, g->a_scale[r0 + 0]));
  moe__gemm1_store_avx512(g, r0 + 1, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), moe__qc8_dequant(c2_1, p1, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c3_1, p1, 1, g->a_scale[r0 + 1]));
  moe__gemm1_store_avx512(g, r0 + 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), moe__qc8_dequant(c2_2, p1, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c3_2, p1, 1, g->a_scale[r0 + 2]));
  moe__gemm1_store_avx512(g, r0 + 3, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), moe__qc8_dequant(c2_3, p1, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c3_3, p1, 1, g->a_scale[r0 + 3]));
  moe__gemm1_store_avx512(g, r0 + 4, moe__qc8_dequant(c0_4, p0, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c1_4, p0, 1, g->a_scale[r0 + 4]), moe__qc8_dequant(c2_4, p1, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c3_4, p1, 1, g->a_scale[r0 + 4]));
}

/* qc8 gemm1 over any mr: tiles of 5 rows, then the rest */
MOE__AVX512_VNNI void moe__qc8_gemm1_rows(const moe_gemm_args *g) {
  for (int32_t r0 = 0; r0 < g->mr; r0 += 5) {
    switch (g->mr - r0 < 5 ? g->mr - r0 : 5) {
    case 1: moe__qc8_gemm1_tile_1(g, r0); break;
    case 2: moe__qc8_gemm1_tile_2(g, r0); break;
    case 3: moe__qc8_gemm1_tile_3(g, r0); break;
    case 4: moe__qc8_gemm1_tile_4(g, r0); break;
    default: moe__qc8_gemm1_tile_5(g, r0); break;
    }
  }
}

/* qc8 gemm2x2, 1 row: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2x2_tile_1(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 1);
  const uint8_t *p0 = g->w, *p1 = g->w + g->panel_bytes;
  const uint8_t *w0 = p0 + MOE_NR * 8, *w1 = p1 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 4, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), moe__qc8_dequant(c2_0, p1, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c3_0, p1, 1, g->a_scale[r0 + 0]));
}

/* qc8 gemm2x2, 2 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2x2_tile_2(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 2);
  const uint8_t *p0 = g->w, *p1 = g->w + g->panel_bytes;
  const uint8_t *w0 = p0 + MOE_NR * 8, *w1 = p1 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 4, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), moe__qc8_dequant(c2_0, p1, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c3_0, p1, 1, g->a_scale[r0 + 0]));
  moe__gemm2_store_avx512(g, r0 + 1, 4, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), moe__qc8_dequant(c2_1, p1, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c3_1, p1, 1, g->a_scale[r0 + 1]));
}

/* qc8 gemm2x2, 3 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2x2_tile_3(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 3);
  const uint8_t *p0 = g->w, *p1 = g->w + g->panel_bytes;
  const uint8_t *w0 = p0 + MOE_NR * 8, *w1 = p1 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512(), c2_2 = _mm512_setzero_si512(), c3_2 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 4, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), moe__qc8_dequant(c2_0, p1, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c3_0, p1, 1, g->a_scale[r0 + 0]));
  moe__gemm2_store_avx512(g, r0 + 1, 4, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), moe__qc8_dequant(c2_1, p1, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c3_1, p1, 1, g->a_scale[r0 + 1]));
  moe__gemm2_store_avx512(g, r0 + 2, 4, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), moe__qc8_dequant(c2_2, p1, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c3_2, p1, 1, g->a_scale[r0 + 2]));
}

/* qc8 gemm2x2, 4 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2x2_tile_4(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 4);
  const uint8_t *p0 = g->w, *p1 = g->w + g->panel_bytes;
  const uint8_t *w0 = p0 + MOE_NR * 8, *w1 = p1 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512(), c2_2 = _mm512_setzero_si512(), c3_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512(), c2_3 = _mm512_setzero_si512(), c3_3 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); c2_3 = moe__dpbusd(c2_3, a, v2); c3_3 = moe__dpbusd(c3_3, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); c2_3 = moe__dpbusd(c2_3, a, v2); c3_3 = moe__dpbusd(c3_3, a, v3); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 4, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), moe__qc8_dequant(c2_0, p1, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c3_0, p1, 1, g->a_scale[r0 + 0]));
  moe__gemm2_store_avx512(g, r0 + 1, 4, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), moe__qc8_dequant(c2_1, p1, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c3_1, p1, 1, g->a_scale[r0 + 1]));
  moe__gemm2_store_avx512(g, r0 + 2, 4, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), moe__qc8_dequant(c2_2, p1, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c3_2, p1, 1, g->a_scale[r0 + 2]));
  moe__gemm2_store_avx512(g, r0 + 3, 4, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), moe__qc8_dequant(c2_3, p1, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c3_3, p1, 1, g->a_scale[r0 + 3]));
}

/* qc8 gemm2x2, 5 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2x2_tile_5(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 5);
  const uint8_t *p0 = g->w, *p1 = g->w + g->panel_bytes;
  const uint8_t *w0 = p0 + MOE_NR * 8, *w1 = p1 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 5, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512(), c2_2 = _mm512_setzero_si512(), c3_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512(), c2_3 = _mm512_setzero_si512(), c3_3 = _mm512_setzero_si512();
  __m512i c0_4 = _mm512_setzero_si512(), c1_4 = _mm512_setzero_si512(), c2_4 = _mm512_setzero_si512(), c3_4 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); c2_3 = moe__dpbusd(c2_3, a, v2); c3_3 = moe__dpbusd(c3_3, a, v3); }
    { const __m512i a = moe__bcast_group(a4, i); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); c2_4 = moe__dpbusd(c2_4, a, v2); c3_4 = moe__dpbusd(c3_4, a, v3); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    const __m512i v2 = _mm512_loadu_si512(w1 + off), v3 = _mm512_loadu_si512(w1 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); c2_0 = moe__dpbusd(c2_0, a, v2); c3_0 = moe__dpbusd(c3_0, a, v3); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); c2_1 = moe__dpbusd(c2_1, a, v2); c3_1 = moe__dpbusd(c3_1, a, v3); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); c2_2 = moe__dpbusd(c2_2, a, v2); c3_2 = moe__dpbusd(c3_2, a, v3); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); c2_3 = moe__dpbusd(c2_3, a, v2); c3_3 = moe__dpbusd(c3_3, a, v3); }
    { const __m512i a = moe__bcast_tail(a4, full, g->kred, 1); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); c2_4 = moe__dpbusd(c2_4, a, v2); c3_4 = moe__dpbusd(c3_4, a, v3); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 4, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), moe__qc8_dequant(c2_0, p1, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c3_0, p1, 1, g->a_scale[r0 + 0]));
  moe__gemm2_store_avx512(g, r0 + 1, 4, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), moe__qc8_dequant(c2_1, p1, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c3_1, p1, 1, g->a_scale[r0 + 1]));
  moe__gemm2_store_avx512(g, r0 + 2, 4, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), moe__qc8_dequant(c2_2, p1, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c3_2, p1, 1, g->a_scale[r0 + 2]));
  moe__gemm2_store_avx512(g, r0 + 3, 4, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), moe__qc8_dequant(c2_3, p1, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c3_3, p1, 1, g->a_scale[r0 + 3]));
  moe__gemm2_store_avx512(g, r0 + 4, 4, moe__qc8_dequant(c0_4, p0, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c1_4, p0, 1, g->a_scale[r0 + 4]), moe__qc8_dequant(c2_4, p1, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c3_4, p1, 1, g->a_scale[r0 + 4]));
}

/* qc8 gemm2x2 over any mr: tiles of 5 rows, then the rest */
MOE__AVX512_VNNI void moe__qc8_gemm2x2_rows(const moe_gemm_args *g) {
  for (int32_t r0 = 0; r0 < g->mr; r0 += 5) {
    switch (g->mr - r0 < 5 ? g->mr - r0 : 5) {
    case 1: moe__qc8_gemm2x2_tile_1(g, r0); break;
    case 2: moe__qc8_gemm2x2_tile_2(g, r0); break;
    case 3: moe__qc8_gemm2x2_tile_3(g, r0); break;
    case 4: moe__qc8_gemm2x2_tile_4(g, r0); break;
    default: moe__qc8_gemm2x2_tile_5(g, r0); break;
    }
  }
}

/* qc8 gemm2, 1 row: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_1(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 1);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 2 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_2(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 2);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 3 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_3(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 3);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 2, 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 4 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_4(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 4);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 2, 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 3, 2, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 5 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_5(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 5);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512();
  __m512i c0_4 = _mm512_setzero_si512(), c1_4 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_group(a4, i); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_tail(a4, full, g->kred, 1); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 2, 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 3, 2, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 4, 2, moe__qc8_dequant(c0_4, p0, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c1_4, p0, 1, g->a_scale[r0 + 4]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 6 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_6(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 6);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512();
  __m512i c0_4 = _mm512_setzero_si512(), c1_4 = _mm512_setzero_si512();
  __m512i c0_5 = _mm512_setzero_si512(), c1_5 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_group(a4, i); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_group(a5, i); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_tail(a4, full, g->kred, 1); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_tail(a5, full, g->kred, 1); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 2, 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 3, 2, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 4, 2, moe__qc8_dequant(c0_4, p0, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c1_4, p0, 1, g->a_scale[r0 + 4]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 5, 2, moe__qc8_dequant(c0_5, p0, 0, g->a_scale[r0 + 5]), moe__qc8_dequant(c1_5, p0, 1, g->a_scale[r0 + 5]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 7 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_7(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 7);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512();
  __m512i c0_4 = _mm512_setzero_si512(), c1_4 = _mm512_setzero_si512();
  __m512i c0_5 = _mm512_setzero_si512(), c1_5 = _mm512_setzero_si512();
  __m512i c0_6 = _mm512_setzero_si512(), c1_6 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_group(a4, i); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_group(a5, i); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_group(a6, i); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_tail(a4, full, g->kred, 1); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_tail(a5, full, g->kred, 1); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_tail(a6, full, g->kred, 1); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 2, 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 3, 2, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 4, 2, moe__qc8_dequant(c0_4, p0, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c1_4, p0, 1, g->a_scale[r0 + 4]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 5, 2, moe__qc8_dequant(c0_5, p0, 0, g->a_scale[r0 + 5]), moe__qc8_dequant(c1_5, p0, 1, g->a_scale[r0 + 5]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 6, 2, moe__qc8_dequant(c0_6, p0, 0, g->a_scale[r0 + 6]), moe__qc8_dequant(c1_6, p0, 1, g->a_scale[r0 + 6]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 8 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_8(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 8);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6], *a7 = (const uint8_t *)g->a[r0 + 7];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512();
  __m512i c0_4 = _mm512_setzero_si512(), c1_4 = _mm512_setzero_si512();
  __m512i c0_5 = _mm512_setzero_si512(), c1_5 = _mm512_setzero_si512();
  __m512i c0_6 = _mm512_setzero_si512(), c1_6 = _mm512_setzero_si512();
  __m512i c0_7 = _mm512_setzero_si512(), c1_7 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_group(a4, i); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_group(a5, i); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_group(a6, i); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
    { const __m512i a = moe__bcast_group(a7, i); c0_7 = moe__dpbusd(c0_7, a, v0); c1_7 = moe__dpbusd(c1_7, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_tail(a4, full, g->kred, 1); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_tail(a5, full, g->kred, 1); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_tail(a6, full, g->kred, 1); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
    { const __m512i a = moe__bcast_tail(a7, full, g->kred, 1); c0_7 = moe__dpbusd(c0_7, a, v0); c1_7 = moe__dpbusd(c1_7, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 2, 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 3, 2, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 4, 2, moe__qc8_dequant(c0_4, p0, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c1_4, p0, 1, g->a_scale[r0 + 4]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 5, 2, moe__qc8_dequant(c0_5, p0, 0, g->a_scale[r0 + 5]), moe__qc8_dequant(c1_5, p0, 1, g->a_scale[r0 + 5]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 6, 2, moe__qc8_dequant(c0_6, p0, 0, g->a_scale[r0 + 6]), moe__qc8_dequant(c1_6, p0, 1, g->a_scale[r0 + 6]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 7, 2, moe__qc8_dequant(c0_7, p0, 0, g->a_scale[r0 + 7]), moe__qc8_dequant(c1_7, p0, 1, g->a_scale[r0 + 7]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 9 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_9(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 9);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6], *a7 = (const uint8_t *)g->a[r0 + 7], *a8 = (const uint8_t *)g->a[r0 + 8];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512();
  __m512i c0_4 = _mm512_setzero_si512(), c1_4 = _mm512_setzero_si512();
  __m512i c0_5 = _mm512_setzero_si512(), c1_5 = _mm512_setzero_si512();
  __m512i c0_6 = _mm512_setzero_si512(), c1_6 = _mm512_setzero_si512();
  __m512i c0_7 = _mm512_setzero_si512(), c1_7 = _mm512_setzero_si512();
  __m512i c0_8 = _mm512_setzero_si512(), c1_8 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_group(a4, i); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_group(a5, i); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_group(a6, i); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
    { const __m512i a = moe__bcast_group(a7, i); c0_7 = moe__dpbusd(c0_7, a, v0); c1_7 = moe__dpbusd(c1_7, a, v1); }
    { const __m512i a = moe__bcast_group(a8, i); c0_8 = moe__dpbusd(c0_8, a, v0); c1_8 = moe__dpbusd(c1_8, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_tail(a4, full, g->kred, 1); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_tail(a5, full, g->kred, 1); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_tail(a6, full, g->kred, 1); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
    { const __m512i a = moe__bcast_tail(a7, full, g->kred, 1); c0_7 = moe__dpbusd(c0_7, a, v0); c1_7 = moe__dpbusd(c1_7, a, v1); }
    { const __m512i a = moe__bcast_tail(a8, full, g->kred, 1); c0_8 = moe__dpbusd(c0_8, a, v0); c1_8 = moe__dpbusd(c1_8, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 2, 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 3, 2, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 4, 2, moe__qc8_dequant(c0_4, p0, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c1_4, p0, 1, g->a_scale[r0 + 4]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 5, 2, moe__qc8_dequant(c0_5, p0, 0, g->a_scale[r0 + 5]), moe__qc8_dequant(c1_5, p0, 1, g->a_scale[r0 + 5]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 6, 2, moe__qc8_dequant(c0_6, p0, 0, g->a_scale[r0 + 6]), moe__qc8_dequant(c1_6, p0, 1, g->a_scale[r0 + 6]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 7, 2, moe__qc8_dequant(c0_7, p0, 0, g->a_scale[r0 + 7]), moe__qc8_dequant(c1_7, p0, 1, g->a_scale[r0 + 7]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 8, 2, moe__qc8_dequant(c0_8, p0, 0, g->a_scale[r0 + 8]), moe__qc8_dequant(c1_8, p0, 1, g->a_scale[r0 + 8]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 10 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_10(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 10);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6], *a7 = (const uint8_t *)g->a[r0 + 7], *a8 = (const uint8_t *)g->a[r0 + 8], *a9 = (const uint8_t *)g->a[r0 + 9];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512();
  __m512i c0_4 = _mm512_setzero_si512(), c1_4 = _mm512_setzero_si512();
  __m512i c0_5 = _mm512_setzero_si512(), c1_5 = _mm512_setzero_si512();
  __m512i c0_6 = _mm512_setzero_si512(), c1_6 = _mm512_setzero_si512();
  __m512i c0_7 = _mm512_setzero_si512(), c1_7 = _mm512_setzero_si512();
  __m512i c0_8 = _mm512_setzero_si512(), c1_8 = _mm512_setzero_si512();
  __m512i c0_9 = _mm512_setzero_si512(), c1_9 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_group(a4, i); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_group(a5, i); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_group(a6, i); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
    { const __m512i a = moe__bcast_group(a7, i); c0_7 = moe__dpbusd(c0_7, a, v0); c1_7 = moe__dpbusd(c1_7, a, v1); }
    { const __m512i a = moe__bcast_group(a8, i); c0_8 = moe__dpbusd(c0_8, a, v0); c1_8 = moe__dpbusd(c1_8, a, v1); }
    { const __m512i a = moe__bcast_group(a9, i); c0_9 = moe__dpbusd(c0_9, a, v0); c1_9 = moe__dpbusd(c1_9, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_tail(a4, full, g->kred, 1); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_tail(a5, full, g->kred, 1); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_tail(a6, full, g->kred, 1); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
    { const __m512i a = moe__bcast_tail(a7, full, g->kred, 1); c0_7 = moe__dpbusd(c0_7, a, v0); c1_7 = moe__dpbusd(c1_7, a, v1); }
    { const __m512i a = moe__bcast_tail(a8, full, g->kred, 1); c0_8 = moe__dpbusd(c0_8, a, v0); c1_8 = moe__dpbusd(c1_8, a, v1); }
    { const __m512i a = moe__bcast_tail(a9, full, g->kred, 1); c0_9 = moe__dpbusd(c0_9, a, v0); c1_9 = moe__dpbusd(c1_9, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 2, 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 3, 2, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 4, 2, moe__qc8_dequant(c0_4, p0, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c1_4, p0, 1, g->a_scale[r0 + 4]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 5, 2, moe__qc8_dequant(c0_5, p0, 0, g->a_scale[r0 + 5]), moe__qc8_dequant(c1_5, p0, 1, g->a_scale[r0 + 5]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 6, 2, moe__qc8_dequant(c0_6, p0, 0, g->a_scale[r0 + 6]), moe__qc8_dequant(c1_6, p0, 1, g->a_scale[r0 + 6]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 7, 2, moe__qc8_dequant(c0_7, p0, 0, g->a_scale[r0 + 7]), moe__qc8_dequant(c1_7, p0, 1, g->a_scale[r0 + 7]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 8, 2, moe__qc8_dequant(c0_8, p0, 0, g->a_scale[r0 + 8]), moe__qc8_dequant(c1_8, p0, 1, g->a_scale[r0 + 8]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 9, 2, moe__qc8_dequant(c0_9, p0, 0, g->a_scale[r0 + 9]), moe__qc8_dequant(c1_9, p0, 1, g->a_scale[r0 + 9]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 11 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_11(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 11);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6], *a7 = (const uint8_t *)g->a[r0 + 7], *a8 = (const uint8_t *)g->a[r0 + 8], *a9 = (const uint8_t *)g->a[r0 + 9], *a10 = (const uint8_t *)g->a[r0 + 10];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512();
  __m512i c0_4 = _mm512_setzero_si512(), c1_4 = _mm512_setzero_si512();
  __m512i c0_5 = _mm512_setzero_si512(), c1_5 = _mm512_setzero_si512();
  __m512i c0_6 = _mm512_setzero_si512(), c1_6 = _mm512_setzero_si512();
  __m512i c0_7 = _mm512_setzero_si512(), c1_7 = _mm512_setzero_si512();
  __m512i c0_8 = _mm512_setzero_si512(), c1_8 = _mm512_setzero_si512();
  __m512i c0_9 = _mm512_setzero_si512(), c1_9 = _mm512_setzero_si512();
  __m512i c0_10 = _mm512_setzero_si512(), c1_10 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_group(a4, i); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_group(a5, i); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_group(a6, i); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
    { const __m512i a = moe__bcast_group(a7, i); c0_7 = moe__dpbusd(c0_7, a, v0); c1_7 = moe__dpbusd(c1_7, a, v1); }
    { const __m512i a = moe__bcast_group(a8, i); c0_8 = moe__dpbusd(c0_8, a, v0); c1_8 = moe__dpbusd(c1_8, a, v1); }
    { const __m512i a = moe__bcast_group(a9, i); c0_9 = moe__dpbusd(c0_9, a, v0); c1_9 = moe__dpbusd(c1_9, a, v1); }
    { const __m512i a = moe__bcast_group(a10, i); c0_10 = moe__dpbusd(c0_10, a, v0); c1_10 = moe__dpbusd(c1_10, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_tail(a4, full, g->kred, 1); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_tail(a5, full, g->kred, 1); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_tail(a6, full, g->kred, 1); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
    { const __m512i a = moe__bcast_tail(a7, full, g->kred, 1); c0_7 = moe__dpbusd(c0_7, a, v0); c1_7 = moe__dpbusd(c1_7, a, v1); }
    { const __m512i a = moe__bcast_tail(a8, full, g->kred, 1); c0_8 = moe__dpbusd(c0_8, a, v0); c1_8 = moe__dpbusd(c1_8, a, v1); }
    { const __m512i a = moe__bcast_tail(a9, full, g->kred, 1); c0_9 = moe__dpbusd(c0_9, a, v0); c1_9 = moe__dpbusd(c1_9, a, v1); }
    { const __m512i a = moe__bcast_tail(a10, full, g->kred, 1); c0_10 = moe__dpbusd(c0_10, a, v0); c1_10 = moe__dpbusd(c1_10, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 2, 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 3, 2, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 4, 2, moe__qc8_dequant(c0_4, p0, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c1_4, p0, 1, g->a_scale[r0 + 4]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 5, 2, moe__qc8_dequant(c0_5, p0, 0, g->a_scale[r0 + 5]), moe__qc8_dequant(c1_5, p0, 1, g->a_scale[r0 + 5]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 6, 2, moe__qc8_dequant(c0_6, p0, 0, g->a_scale[r0 + 6]), moe__qc8_dequant(c1_6, p0, 1, g->a_scale[r0 + 6]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 7, 2, moe__qc8_dequant(c0_7, p0, 0, g->a_scale[r0 + 7]), moe__qc8_dequant(c1_7, p0, 1, g->a_scale[r0 + 7]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 8, 2, moe__qc8_dequant(c0_8, p0, 0, g->a_scale[r0 + 8]), moe__qc8_dequant(c1_8, p0, 1, g->a_scale[r0 + 8]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 9, 2, moe__qc8_dequant(c0_9, p0, 0, g->a_scale[r0 + 9]), moe__qc8_dequant(c1_9, p0, 1, g->a_scale[r0 + 9]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 10, 2, moe__qc8_dequant(c0_10, p0, 0, g->a_scale[r0 + 10]), moe__qc8_dequant(c1_10, p0, 1, g->a_scale[r0 + 10]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2, 12 rows: one panel (32 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__qc8_gemm2_tile_12(const moe_gemm_args *g, int32_t r0) {
  moe__prefetch_c_rows(g, r0, 12);
  const uint8_t *p0 = g->w;
  const uint8_t *w0 = p0 + MOE_NR * 8;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3], *a4 = (const uint8_t *)g->a[r0 + 4], *a5 = (const uint8_t *)g->a[r0 + 5], *a6 = (const uint8_t *)g->a[r0 + 6], *a7 = (const uint8_t *)g->a[r0 + 7], *a8 = (const uint8_t *)g->a[r0 + 8], *a9 = (const uint8_t *)g->a[r0 + 9], *a10 = (const uint8_t *)g->a[r0 + 10], *a11 = (const uint8_t *)g->a[r0 + 11];
  const int64_t full = g->kred / 4, steps = (g->kred + 3) / 4;
  moe__prefetcher pf = moe__prefetch_plan(g, r0, 12, steps);
  __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512();
  __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512();
  __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512();
  __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512();
  __m512i c0_4 = _mm512_setzero_si512(), c1_4 = _mm512_setzero_si512();
  __m512i c0_5 = _mm512_setzero_si512(), c1_5 = _mm512_setzero_si512();
  __m512i c0_6 = _mm512_setzero_si512(), c1_6 = _mm512_setzero_si512();
  __m512i c0_7 = _mm512_setzero_si512(), c1_7 = _mm512_setzero_si512();
  __m512i c0_8 = _mm512_setzero_si512(), c1_8 = _mm512_setzero_si512();
  __m512i c0_9 = _mm512_setzero_si512(), c1_9 = _mm512_setzero_si512();
  __m512i c0_10 = _mm512_setzero_si512(), c1_10 = _mm512_setzero_si512();
  __m512i c0_11 = _mm512_setzero_si512(), c1_11 = _mm512_setzero_si512();
  MOE__NO_UNROLL for (int64_t i = 0; i < full; i++) {
    const size_t off = (size_t)i * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_group(a0, i); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_group(a1, i); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_group(a2, i); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_group(a3, i); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_group(a4, i); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_group(a5, i); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_group(a6, i); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
    { const __m512i a = moe__bcast_group(a7, i); c0_7 = moe__dpbusd(c0_7, a, v0); c1_7 = moe__dpbusd(c1_7, a, v1); }
    { const __m512i a = moe__bcast_group(a8, i); c0_8 = moe__dpbusd(c0_8, a, v0); c1_8 = moe__dpbusd(c1_8, a, v1); }
    { const __m512i a = moe__bcast_group(a9, i); c0_9 = moe__dpbusd(c0_9, a, v0); c1_9 = moe__dpbusd(c1_9, a, v1); }
    { const __m512i a = moe__bcast_group(a10, i); c0_10 = moe__dpbusd(c0_10, a, v0); c1_10 = moe__dpbusd(c1_10, a, v1); }
    { const __m512i a = moe__bcast_group(a11, i); c0_11 = moe__dpbusd(c0_11, a, v0); c1_11 = moe__dpbusd(c1_11, a, v1); }
  }
  if (full < steps) { /* a partial last k-group: activations padded with zeros */
    const size_t off = (size_t)full * 128;
    const __m512i v0 = _mm512_loadu_si512(w0 + off), v1 = _mm512_loadu_si512(w0 + off + 64);
    moe__prefetch_step(&pf);
    { const __m512i a = moe__bcast_tail(a0, full, g->kred, 1); c0_0 = moe__dpbusd(c0_0, a, v0); c1_0 = moe__dpbusd(c1_0, a, v1); }
    { const __m512i a = moe__bcast_tail(a1, full, g->kred, 1); c0_1 = moe__dpbusd(c0_1, a, v0); c1_1 = moe__dpbusd(c1_1, a, v1); }
    { const __m512i a = moe__bcast_tail(a2, full, g->kred, 1); c0_2 = moe__dpbusd(c0_2, a, v0); c1_2 = moe__dpbusd(c1_2, a, v1); }
    { const __m512i a = moe__bcast_tail(a3, full, g->kred, 1); c0_3 = moe__dpbusd(c0_3, a, v0); c1_3 = moe__dpbusd(c1_3, a, v1); }
    { const __m512i a = moe__bcast_tail(a4, full, g->kred, 1); c0_4 = moe__dpbusd(c0_4, a, v0); c1_4 = moe__dpbusd(c1_4, a, v1); }
    { const __m512i a = moe__bcast_tail(a5, full, g->kred, 1); c0_5 = moe__dpbusd(c0_5, a, v0); c1_5 = moe__dpbusd(c1_5, a, v1); }
    { const __m512i a = moe__bcast_tail(a6, full, g->kred, 1); c0_6 = moe__dpbusd(c0_6, a, v0); c1_6 = moe__dpbusd(c1_6, a, v1); }
    { const __m512i a = moe__bcast_tail(a7, full, g->kred, 1); c0_7 = moe__dpbusd(c0_7, a, v0); c1_7 = moe__dpbusd(c1_7, a, v1); }
    { const __m512i a = moe__bcast_tail(a8, full, g->kred, 1); c0_8 = moe__dpbusd(c0_8, a, v0); c1_8 = moe__dpbusd(c1_8, a, v1); }
    { const __m512i a = moe__bcast_tail(a9, full, g->kred, 1); c0_9 = moe__dpbusd(c0_9, a, v0); c1_9 = moe__dpbusd(c1_9, a, v1); }
    { const __m512i a = moe__bcast_tail(a10, full, g->kred, 1); c0_10 = moe__dpbusd(c0_10, a, v0); c1_10 = moe__dpbusd(c1_10, a, v1); }
    { const __m512i a = moe__bcast_tail(a11, full, g->kred, 1); c0_11 = moe__dpbusd(c0_11, a, v0); c1_11 = moe__dpbusd(c1_11, a, v1); }
  }
  moe__gemm2_store_avx512(g, r0 + 0, 2, moe__qc8_dequant(c0_0, p0, 0, g->a_scale[r0 + 0]), moe__qc8_dequant(c1_0, p0, 1, g->a_scale[r0 + 0]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 1, 2, moe__qc8_dequant(c0_1, p0, 0, g->a_scale[r0 + 1]), moe__qc8_dequant(c1_1, p0, 1, g->a_scale[r0 + 1]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 2, 2, moe__qc8_dequant(c0_2, p0, 0, g->a_scale[r0 + 2]), moe__qc8_dequant(c1_2, p0, 1, g->a_scale[r0 + 2]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 3, 2, moe__qc8_dequant(c0_3, p0, 0, g->a_scale[r0 + 3]), moe__qc8_dequant(c1_3, p0, 1, g->a_scale[r0 + 3]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 4, 2, moe__qc8_dequant(c0_4, p0, 0, g->a_scale[r0 + 4]), moe__qc8_dequant(c1_4, p0, 1, g->a_scale[r0 + 4]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 5, 2, moe__qc8_dequant(c0_5, p0, 0, g->a_scale[r0 + 5]), moe__qc8_dequant(c1_5, p0, 1, g->a_scale[r0 + 5]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 6, 2, moe__qc8_dequant(c0_6, p0, 0, g->a_scale[r0 + 6]), moe__qc8_dequant(c1_6, p0, 1, g->a_scale[r0 + 6]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 7, 2, moe__qc8_dequant(c0_7, p0, 0, g->a_scale[r0 + 7]), moe__qc8_dequant(c1_7, p0, 1, g->a_scale[r0 + 7]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 8, 2, moe__qc8_dequant(c0_8, p0, 0, g->a_scale[r0 + 8]), moe__qc8_dequant(c1_8, p0, 1, g->a_scale[r0 + 8]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 9, 2, moe__qc8_dequant(c0_9, p0, 0, g->a_scale[r0 + 9]), moe__qc8_dequant(c1_9, p0, 1, g->a_scale[r0 + 9]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 10, 2, moe__qc8_dequant(c0_10, p0, 0, g->a_scale[r0 + 10]), moe__qc8_dequant(c1_10, p0, 1, g->a_scale[r0 + 10]), _mm512_setzero_ps(), _mm512_setzero_ps());
  moe__gemm2_store_avx512(g, r0 + 11, 2, moe__qc8_dequant(c0_11, p0, 0, g->a_scale[r0 + 11]), moe__qc8_dequant(c1_11, p0, 1, g->a_scale[r0 + 11]), _mm512_setzero_ps(), _mm512_setzero_ps());
}

/* qc8 gemm2 over any mr: tiles of 12 rows, then the rest */
MOE__AVX512_VNNI void moe__qc8_gemm2_rows(const moe_gemm_args *g) {
  for (int32_t r0 = 0; r0 < g->mr; r0 += 12) {
    switch (g->mr - r0 < 12 ? g->mr - r0 : 12) {
    case 1: moe__qc8_gemm2_tile_1(g, r0); break;
    case 2: moe__qc8_gemm2_tile_2(g, r0); break;
    case 3: moe__qc8_gemm2_tile_3(g, r0); break;
    case 4: moe__qc8_gemm2_tile_4(g, r0); break;
    case 5: moe__qc8_gemm2_tile_5(g, r0); break;
    case 6: moe__qc8_gemm2_tile_6(g, r0); break;
    case 7: moe__qc8_gemm2_tile_7(g, r0); break;
    case 8: moe__qc8_gemm2_tile_8(g, r0); break;
    case 9: moe__qc8_gemm2_tile_9(g, r0); break;
    case 10: moe__qc8_gemm2_tile_10(g, r0); break;
    case 11: moe__qc8_gemm2_tile_11(g, r0); break;
    default: moe__qc8_gemm2_tile_12(g, r0); break;
    }
  }
}

/* fp8 gemm1, 1 row: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_FP8_FN MOE__NOINLINE void moe__fp8_gemm1_tile_1(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                             const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const moe__tables t = *L->tab;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t s0 = k0 / 2, lo = (k0 + 1) / 2, hi = k1 / 2, s1 = (k1 + 1) / 2;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    if (s0 < lo) /* the group starts inside a pair: only its element k0 */
      { const int64_t i_ = s0;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      }
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, i_); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    }
  }
}

/* fp8 gemm1, 2 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_FP8_FN MOE__NOINLINE void moe__fp8_gemm1_tile_2(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                             const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const moe__tables t = *L->tab;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t s0 = k0 / 2, lo = (k0 + 1) / 2, hi = k1 / 2, s1 = (k1 + 1) / 2;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    if (s0 < lo) /* the group starts inside a pair: only its element k0 */
      { const int64_t i_ = s0;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      }
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, i_); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, i_); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    }
  }
}

/* fp8 gemm1, 3 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_FP8_FN MOE__NOINLINE void moe__fp8_gemm1_tile_3(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                             const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const moe__tables t = *L->tab;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t s0 = k0 / 2, lo = (k0 + 1) / 2, hi = k1 / 2, s1 = (k1 + 1) / 2;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    if (s0 < lo) /* the group starts inside a pair: only its element k0 */
      { const int64_t i_ = s0;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, i_, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      }
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, i_); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, i_); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, i_); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, i_, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    }
  }
}

/* fp8 gemm1, 4 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_FP8_FN MOE__NOINLINE void moe__fp8_gemm1_tile_4(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                             const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const moe__tables t = *L->tab;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t s0 = k0 / 2, lo = (k0 + 1) / 2, hi = k1 / 2, s1 = (k1 + 1) / 2;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps(), c2_3 = _mm512_setzero_ps(), c3_3 = _mm512_setzero_ps();
    if (s0 < lo) /* the group starts inside a pair: only its element k0 */
      { const int64_t i_ = s0;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, i_, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, i_, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      }
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, i_); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, i_); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, i_); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, i_); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, i_, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, i_, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    moe__lowbit_finish(L, r0 + 3, 0, c0_3, sc0); moe__lowbit_finish(L, r0 + 3, 1, c1_3, sc1); moe__lowbit_finish(L, r0 + 3, 2, c2_3, sc2); moe__lowbit_finish(L, r0 + 3, 3, c3_3, sc3);
    }
  }
}

/* fp8 gemm1 over any mr: tiles of at most 4 rows, heights balanced */
MOE__AVX512_FP8_FN void moe__fp8_gemm1_rows(const moe_gemm_args *g, const moe__lowbit *L) {
  const int32_t tiles = (g->mr + 3) / 4;
  for (int32_t t = 0, r0 = 0; t < tiles; t++) {
    const int32_t rows = g->mr / tiles + (t < g->mr % tiles);
    const uint8_t *pf[2];
    moe__lowbit_pf(g, L, t, pf);
    switch (rows) {
    case 1: moe__fp8_gemm1_tile_1(g, r0, L, pf); break;
    case 2: moe__fp8_gemm1_tile_2(g, r0, L, pf); break;
    case 3: moe__fp8_gemm1_tile_3(g, r0, L, pf); break;
    default: moe__fp8_gemm1_tile_4(g, r0, L, pf); break;
    }
    r0 += rows;
  }
}

/* fp8 gemm2x2, 1 row: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_FP8_FN MOE__NOINLINE void moe__fp8_gemm2x2_tile_1(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                             const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const moe__tables t = *L->tab;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t s0 = k0 / 2, lo = (k0 + 1) / 2, hi = k1 / 2, s1 = (k1 + 1) / 2;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    if (s0 < lo) /* the group starts inside a pair: only its element k0 */
      { const int64_t i_ = s0;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      }
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, i_); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    }
  }
}

/* fp8 gemm2x2, 2 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_FP8_FN MOE__NOINLINE void moe__fp8_gemm2x2_tile_2(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                             const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const moe__tables t = *L->tab;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t s0 = k0 / 2, lo = (k0 + 1) / 2, hi = k1 / 2, s1 = (k1 + 1) / 2;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    if (s0 < lo) /* the group starts inside a pair: only its element k0 */
      { const int64_t i_ = s0;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      }
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, i_); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, i_); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    }
  }
}

/* fp8 gemm2x2, 3 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_FP8_FN MOE__NOINLINE void moe__fp8_gemm2x2_tile_3(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                             const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const moe__tables t = *L->tab;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t s0 = k0 / 2, lo = (k0 + 1) / 2, hi = k1 / 2, s1 = (k1 + 1) / 2;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    if (s0 < lo) /* the group starts inside a pair: only its element k0 */
      { const int64_t i_ = s0;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, i_, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      }
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, i_); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, i_); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, i_); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, i_, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    }
  }
}

/* fp8 gemm2x2, 4 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_FP8_FN MOE__NOINLINE void moe__fp8_gemm2x2_tile_4(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                             const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const moe__tables t = *L->tab;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t s0 = k0 / 2, lo = (k0 + 1) / 2, hi = k1 / 2, s1 = (k1 + 1) / 2;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps(), c2_3 = _mm512_setzero_ps(), c3_3 = _mm512_setzero_ps();
    if (s0 < lo) /* the group starts inside a pair: only its element k0 */
      { const int64_t i_ = s0;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, i_, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, i_, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      }
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, i_); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, i_); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, i_); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, i_); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512bh v00, v01;
      moe__fp8_line(w0 + 64 * (size_t)i_, &t, &v00, &v01);
      __m512bh v10, v11;
      moe__fp8_line(w1 + 64 * (size_t)i_, &t, &v10, &v11);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, i_, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, i_, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, i_, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, i_, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    moe__lowbit_finish(L, r0 + 3, 0, c0_3, sc0); moe__lowbit_finish(L, r0 + 3, 1, c1_3, sc1); moe__lowbit_finish(L, r0 + 3, 2, c2_3, sc2); moe__lowbit_finish(L, r0 + 3, 3, c3_3, sc3);
    }
  }
}

/* fp8 gemm2x2 over any mr: tiles of at most 4 rows, heights balanced */
MOE__AVX512_FP8_FN void moe__fp8_gemm2x2_rows(const moe_gemm_args *g, const moe__lowbit *L) {
  const int32_t tiles = (g->mr + 3) / 4;
  for (int32_t t = 0, r0 = 0; t < tiles; t++) {
    const int32_t rows = g->mr / tiles + (t < g->mr % tiles);
    const uint8_t *pf[2];
    moe__lowbit_pf(g, L, t, pf);
    switch (rows) {
    case 1: moe__fp8_gemm2x2_tile_1(g, r0, L, pf); break;
    case 2: moe__fp8_gemm2x2_tile_2(g, r0, L, pf); break;
    case 3: moe__fp8_gemm2x2_tile_3(g, r0, L, pf); break;
    default: moe__fp8_gemm2x2_tile_4(g, r0, L, pf); break;
    }
    r0 += rows;
  }
}

/* b4 gemm1, 1 row: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__b4_gemm1_tile_1(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const __m512i t = L->tab->hi0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    }
  }
}

/* b4 gemm1, 2 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__b4_gemm1_tile_2(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const __m512i t = L->tab->hi0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    }
  }
}

/* b4 gemm1, 3 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__b4_gemm1_tile_3(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const __m512i t = L->tab->hi0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 1); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 2); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 3); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    }
  }
}

/* b4 gemm1, 4 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__b4_gemm1_tile_4(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const __m512i t = L->tab->hi0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps(), c2_3 = _mm512_setzero_ps(), c3_3 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 1); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 1); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 2); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 2); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 3); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 3); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    moe__lowbit_finish(L, r0 + 3, 0, c0_3, sc0); moe__lowbit_finish(L, r0 + 3, 1, c1_3, sc1); moe__lowbit_finish(L, r0 + 3, 2, c2_3, sc2); moe__lowbit_finish(L, r0 + 3, 3, c3_3, sc3);
    }
  }
}

/* b4 gemm1 over any mr: tiles of at most 4 rows, heights balanced */
MOE__AVX512_BF16_FN void moe__b4_gemm1_rows(const moe_gemm_args *g, const moe__lowbit *L) {
  const int32_t tiles = (g->mr + 3) / 4;
  for (int32_t t = 0, r0 = 0; t < tiles; t++) {
    const int32_t rows = g->mr / tiles + (t < g->mr % tiles);
    const uint8_t *pf[2];
    moe__lowbit_pf(g, L, t, pf);
    switch (rows) {
    case 1: moe__b4_gemm1_tile_1(g, r0, L, pf); break;
    case 2: moe__b4_gemm1_tile_2(g, r0, L, pf); break;
    case 3: moe__b4_gemm1_tile_3(g, r0, L, pf); break;
    default: moe__b4_gemm1_tile_4(g, r0, L, pf); break;
    }
    r0 += rows;
  }
}

/* b4 gemm2x2, 1 row: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__b4_gemm2x2_tile_1(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const __m512i t = L->tab->hi0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    }
  }
}

/* b4 gemm2x2, 2 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__b4_gemm2x2_tile_2(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const __m512i t = L->tab->hi0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    }
  }
}

/* b4 gemm2x2, 3 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__b4_gemm2x2_tile_3(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const __m512i t = L->tab->hi0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 1); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 2); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 3); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    }
  }
}

/* b4 gemm2x2, 4 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__b4_gemm2x2_tile_4(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const __m512i t = L->tab->hi0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps(), c2_3 = _mm512_setzero_ps(), c3_3 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 1); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 1); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 2); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 2); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 3); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 3); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair(l00, 0, t), v01 = moe__b4_pair(l01, 0, t);
      const __m512bh v10 = moe__b4_pair(l10, 0, t), v11 = moe__b4_pair(l11, 0, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 1, t), v01 = moe__b4_pair(l01, 1, t);
      const __m512bh v10 = moe__b4_pair(l10, 1, t), v11 = moe__b4_pair(l11, 1, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 2, t), v01 = moe__b4_pair(l01, 2, t);
      const __m512bh v10 = moe__b4_pair(l10, 2, t), v11 = moe__b4_pair(l11, 2, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair(l00, 3, t), v01 = moe__b4_pair(l01, 3, t);
      const __m512bh v10 = moe__b4_pair(l10, 3, t), v11 = moe__b4_pair(l11, 3, t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    moe__lowbit_finish(L, r0 + 3, 0, c0_3, sc0); moe__lowbit_finish(L, r0 + 3, 1, c1_3, sc1); moe__lowbit_finish(L, r0 + 3, 2, c2_3, sc2); moe__lowbit_finish(L, r0 + 3, 3, c3_3, sc3);
    }
  }
}

/* b4 gemm2x2 over any mr: tiles of at most 4 rows, heights balanced */
MOE__AVX512_BF16_FN void moe__b4_gemm2x2_rows(const moe_gemm_args *g, const moe__lowbit *L) {
  const int32_t tiles = (g->mr + 3) / 4;
  for (int32_t t = 0, r0 = 0; t < tiles; t++) {
    const int32_t rows = g->mr / tiles + (t < g->mr % tiles);
    const uint8_t *pf[2];
    moe__lowbit_pf(g, L, t, pf);
    switch (rows) {
    case 1: moe__b4_gemm2x2_tile_1(g, r0, L, pf); break;
    case 2: moe__b4_gemm2x2_tile_2(g, r0, L, pf); break;
    case 3: moe__b4_gemm2x2_tile_3(g, r0, L, pf); break;
    default: moe__b4_gemm2x2_tile_4(g, r0, L, pf); break;
    }
    r0 += rows;
  }
}

/* i4 gemm1, 1 row: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__i4_gemm1_tile_1(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const __m512i t = L->tab->lo0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512i zw[4];
    moe__lowbit_zero_words(L, gi, 2, zw);
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    }
  }
}

/* i4 gemm1, 2 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__i4_gemm1_tile_2(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const __m512i t = L->tab->lo0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512i zw[4];
    moe__lowbit_zero_words(L, gi, 2, zw);
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    }
  }
}

/* i4 gemm1, 3 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__i4_gemm1_tile_3(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const __m512i t = L->tab->lo0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512i zw[4];
    moe__lowbit_zero_words(L, gi, 2, zw);
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 1); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 2); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 3); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    }
  }
}

/* i4 gemm1, 4 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__i4_gemm1_tile_4(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const __m512i t = L->tab->lo0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512i zw[4];
    moe__lowbit_zero_words(L, gi, 2, zw);
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps(), c2_3 = _mm512_setzero_ps(), c3_3 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 1); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 1); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 2); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 2); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 3); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 3); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    moe__lowbit_finish(L, r0 + 3, 0, c0_3, sc0); moe__lowbit_finish(L, r0 + 3, 1, c1_3, sc1); moe__lowbit_finish(L, r0 + 3, 2, c2_3, sc2); moe__lowbit_finish(L, r0 + 3, 3, c3_3, sc3);
    }
  }
}

/* i4 gemm1 over any mr: tiles of at most 4 rows, heights balanced */
MOE__AVX512_BF16_FN void moe__i4_gemm1_rows(const moe_gemm_args *g, const moe__lowbit *L) {
  const int32_t tiles = (g->mr + 3) / 4;
  for (int32_t t = 0, r0 = 0; t < tiles; t++) {
    const int32_t rows = g->mr / tiles + (t < g->mr % tiles);
    const uint8_t *pf[2];
    moe__lowbit_pf(g, L, t, pf);
    switch (rows) {
    case 1: moe__i4_gemm1_tile_1(g, r0, L, pf); break;
    case 2: moe__i4_gemm1_tile_2(g, r0, L, pf); break;
    case 3: moe__i4_gemm1_tile_3(g, r0, L, pf); break;
    default: moe__i4_gemm1_tile_4(g, r0, L, pf); break;
    }
    r0 += rows;
  }
}

/* i4 gemm2x2, 1 row: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__i4_gemm2x2_tile_1(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  const __m512i t = L->tab->lo0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512i zw[4];
    moe__lowbit_zero_words(L, gi, 2, zw);
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    }
  }
}

/* i4 gemm2x2, 2 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__i4_gemm2x2_tile_2(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  const __m512i t = L->tab->lo0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512i zw[4];
    moe__lowbit_zero_words(L, gi, 2, zw);
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    }
  }
}

/* i4 gemm2x2, 3 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__i4_gemm2x2_tile_3(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  const __m512i t = L->tab->lo0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512i zw[4];
    moe__lowbit_zero_words(L, gi, 2, zw);
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 1); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 2); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 3); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    }
  }
}

/* i4 gemm2x2, 4 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_BF16_FN MOE__NOINLINE void moe__i4_gemm2x2_tile_4(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  const __m512i t = L->tab->lo0;
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 7) / 8, hi = k1 / 8, s1 = (k1 + 7) / 8;
    __m512i zw[4];
    moe__lowbit_zero_words(L, gi, 2, zw);
    __m512 c0_0 = _mm512_setzero_ps(), c1_0 = _mm512_setzero_ps(), c2_0 = _mm512_setzero_ps(), c3_0 = _mm512_setzero_ps();
    __m512 c0_1 = _mm512_setzero_ps(), c1_1 = _mm512_setzero_ps(), c2_1 = _mm512_setzero_ps(), c3_1 = _mm512_setzero_ps();
    __m512 c0_2 = _mm512_setzero_ps(), c1_2 = _mm512_setzero_ps(), c2_2 = _mm512_setzero_ps(), c3_2 = _mm512_setzero_ps();
    __m512 c0_3 = _mm512_setzero_ps(), c1_3 = _mm512_setzero_ps(), c2_3 = _mm512_setzero_ps(), c3_3 = _mm512_setzero_ps();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 1); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 1); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 1); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 1); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 2); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 2); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 2); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 2); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_group(a0, 4 * i_ + 3); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a1, 4 * i_ + 3); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a2, 4 * i_ + 3); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_group(a3, 4 * i_ + 3); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      moe__prefetch_ahead(pf[0] + 128 * (size_t)i_, 2);
      moe__prefetch_ahead(pf[1] + 128 * (size_t)i_, 2);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      const __m512i l00 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 0), l01 = _mm512_load_si512(w0 + 128 * (size_t)i_ + 64), l10 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 0), l11 = _mm512_load_si512(w1 + 128 * (size_t)i_ + 64);
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 0, zw[0], t), v01 = moe__b4_pair_zero(l01, 0, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 0, zw[2], t), v11 = moe__b4_pair_zero(l11, 0, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 0, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 1, zw[0], t), v01 = moe__b4_pair_zero(l01, 1, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 1, zw[2], t), v11 = moe__b4_pair_zero(l11, 1, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 1, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 2, zw[0], t), v01 = moe__b4_pair_zero(l01, 2, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 2, zw[2], t), v11 = moe__b4_pair_zero(l11, 2, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 2, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      {
      const __m512bh v00 = moe__b4_pair_zero(l00, 3, zw[0], t), v01 = moe__b4_pair_zero(l01, 3, zw[1], t);
      const __m512bh v10 = moe__b4_pair_zero(l10, 3, zw[2], t), v11 = moe__b4_pair_zero(l11, 3, zw[3], t);
      { const __m512bh a = (__m512bh)moe__bcast_range(a0, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_0 = moe__dpbf16(c0_0, a, v00); c1_0 = moe__dpbf16(c1_0, a, v01); c2_0 = moe__dpbf16(c2_0, a, v10); c3_0 = moe__dpbf16(c3_0, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a1, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_1 = moe__dpbf16(c0_1, a, v00); c1_1 = moe__dpbf16(c1_1, a, v01); c2_1 = moe__dpbf16(c2_1, a, v10); c3_1 = moe__dpbf16(c3_1, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a2, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_2 = moe__dpbf16(c0_2, a, v00); c1_2 = moe__dpbf16(c1_2, a, v01); c2_2 = moe__dpbf16(c2_2, a, v10); c3_2 = moe__dpbf16(c3_2, a, v11); }
      { const __m512bh a = (__m512bh)moe__bcast_range(a3, 4 * i_ + 3, k0, k1, 2, 2, 0); c0_3 = moe__dpbf16(c0_3, a, v00); c1_3 = moe__dpbf16(c1_3, a, v01); c2_3 = moe__dpbf16(c2_3, a, v10); c3_3 = moe__dpbf16(c3_3, a, v11); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, c0_0, sc0); moe__lowbit_finish(L, r0 + 0, 1, c1_0, sc1); moe__lowbit_finish(L, r0 + 0, 2, c2_0, sc2); moe__lowbit_finish(L, r0 + 0, 3, c3_0, sc3);
    moe__lowbit_finish(L, r0 + 1, 0, c0_1, sc0); moe__lowbit_finish(L, r0 + 1, 1, c1_1, sc1); moe__lowbit_finish(L, r0 + 1, 2, c2_1, sc2); moe__lowbit_finish(L, r0 + 1, 3, c3_1, sc3);
    moe__lowbit_finish(L, r0 + 2, 0, c0_2, sc0); moe__lowbit_finish(L, r0 + 2, 1, c1_2, sc1); moe__lowbit_finish(L, r0 + 2, 2, c2_2, sc2); moe__lowbit_finish(L, r0 + 2, 3, c3_2, sc3);
    moe__lowbit_finish(L, r0 + 3, 0, c0_3, sc0); moe__lowbit_finish(L, r0 + 3, 1, c1_3, sc1); moe__lowbit_finish(L, r0 + 3, 2, c2_3, sc2); moe__lowbit_finish(L, r0 + 3, 3, c3_3, sc3);
    }
  }
}

/* i4 gemm2x2 over any mr: tiles of at most 4 rows, heights balanced */
MOE__AVX512_BF16_FN void moe__i4_gemm2x2_rows(const moe_gemm_args *g, const moe__lowbit *L) {
  const int32_t tiles = (g->mr + 3) / 4;
  for (int32_t t = 0, r0 = 0; t < tiles; t++) {
    const int32_t rows = g->mr / tiles + (t < g->mr % tiles);
    const uint8_t *pf[2];
    moe__lowbit_pf(g, L, t, pf);
    switch (rows) {
    case 1: moe__i4_gemm2x2_tile_1(g, r0, L, pf); break;
    case 2: moe__i4_gemm2x2_tile_2(g, r0, L, pf); break;
    case 3: moe__i4_gemm2x2_tile_3(g, r0, L, pf); break;
    default: moe__i4_gemm2x2_tile_4(g, r0, L, pf); break;
    }
    r0 += rows;
  }
}

/* q4 gemm1, 1 row: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__q4_gemm1_tile_1(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 3) / 4, hi = k1 / 4, s1 = (k1 + 3) / 4;
    const int32_t asum0 = moe__sum_s8(a0 + k0, k1 - k0);
    __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
    __m512i d0_0 = _mm512_setzero_si512(), d1_0 = _mm512_setzero_si512(), d2_0 = _mm512_setzero_si512(), d3_0 = _mm512_setzero_si512();
    int64_t i = lo;
    MOE__NO_UNROLL for (; i + 1 < hi; i += 2) {
      { const int64_t i_ = i;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
      { const int64_t i_ = i + 1;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); d0_0 = moe__dpbusd(d0_0, v00, a); d1_0 = moe__dpbusd(d1_0, v01, a); d2_0 = moe__dpbusd(d2_0, v10, a); d3_0 = moe__dpbusd(d3_0, v11, a); }
      }
      }
    }
    if (i < hi)
      { const int64_t i_ = i;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      }
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a0, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      }
      }
    c0_0 = _mm512_add_epi32(c0_0, d0_0); c1_0 = _mm512_add_epi32(c1_0, d1_0); c2_0 = _mm512_add_epi32(c2_0, d2_0); c3_0 = _mm512_add_epi32(c3_0, d3_0);
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    const __m512i z0 = moe__lowbit_zero(L, gi, 0), z1 = moe__lowbit_zero(L, gi, 1), z2 = moe__lowbit_zero(L, gi, 2), z3 = moe__lowbit_zero(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, moe__lowbit_isum(c0_0, z0, asum0), sc0); moe__lowbit_finish(L, r0 + 0, 1, moe__lowbit_isum(c1_0, z1, asum0), sc1); moe__lowbit_finish(L, r0 + 0, 2, moe__lowbit_isum(c2_0, z2, asum0), sc2); moe__lowbit_finish(L, r0 + 0, 3, moe__lowbit_isum(c3_0, z3, asum0), sc3);
    }
  }
}

/* q4 gemm1, 2 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__q4_gemm1_tile_2(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 3) / 4, hi = k1 / 4, s1 = (k1 + 3) / 4;
    const int32_t asum0 = moe__sum_s8(a0 + k0, k1 - k0), asum1 = moe__sum_s8(a1 + k0, k1 - k0);
    __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
    __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a1, i_), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a0, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a1, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    const __m512i z0 = moe__lowbit_zero(L, gi, 0), z1 = moe__lowbit_zero(L, gi, 1), z2 = moe__lowbit_zero(L, gi, 2), z3 = moe__lowbit_zero(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, moe__lowbit_isum(c0_0, z0, asum0), sc0); moe__lowbit_finish(L, r0 + 0, 1, moe__lowbit_isum(c1_0, z1, asum0), sc1); moe__lowbit_finish(L, r0 + 0, 2, moe__lowbit_isum(c2_0, z2, asum0), sc2); moe__lowbit_finish(L, r0 + 0, 3, moe__lowbit_isum(c3_0, z3, asum0), sc3);
    moe__lowbit_finish(L, r0 + 1, 0, moe__lowbit_isum(c0_1, z0, asum1), sc0); moe__lowbit_finish(L, r0 + 1, 1, moe__lowbit_isum(c1_1, z1, asum1), sc1); moe__lowbit_finish(L, r0 + 1, 2, moe__lowbit_isum(c2_1, z2, asum1), sc2); moe__lowbit_finish(L, r0 + 1, 3, moe__lowbit_isum(c3_1, z3, asum1), sc3);
    }
  }
}

/* q4 gemm1, 3 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__q4_gemm1_tile_3(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 3) / 4, hi = k1 / 4, s1 = (k1 + 3) / 4;
    const int32_t asum0 = moe__sum_s8(a0 + k0, k1 - k0), asum1 = moe__sum_s8(a1 + k0, k1 - k0), asum2 = moe__sum_s8(a2 + k0, k1 - k0);
    __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
    __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
    __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512(), c2_2 = _mm512_setzero_si512(), c3_2 = _mm512_setzero_si512();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a1, i_), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a2, i_), _mm512_set1_epi8((char)0x80)); c0_2 = moe__dpbusd(c0_2, v00, a); c1_2 = moe__dpbusd(c1_2, v01, a); c2_2 = moe__dpbusd(c2_2, v10, a); c3_2 = moe__dpbusd(c3_2, v11, a); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a0, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a1, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a2, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_2 = moe__dpbusd(c0_2, v00, a); c1_2 = moe__dpbusd(c1_2, v01, a); c2_2 = moe__dpbusd(c2_2, v10, a); c3_2 = moe__dpbusd(c3_2, v11, a); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    const __m512i z0 = moe__lowbit_zero(L, gi, 0), z1 = moe__lowbit_zero(L, gi, 1), z2 = moe__lowbit_zero(L, gi, 2), z3 = moe__lowbit_zero(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, moe__lowbit_isum(c0_0, z0, asum0), sc0); moe__lowbit_finish(L, r0 + 0, 1, moe__lowbit_isum(c1_0, z1, asum0), sc1); moe__lowbit_finish(L, r0 + 0, 2, moe__lowbit_isum(c2_0, z2, asum0), sc2); moe__lowbit_finish(L, r0 + 0, 3, moe__lowbit_isum(c3_0, z3, asum0), sc3);
    moe__lowbit_finish(L, r0 + 1, 0, moe__lowbit_isum(c0_1, z0, asum1), sc0); moe__lowbit_finish(L, r0 + 1, 1, moe__lowbit_isum(c1_1, z1, asum1), sc1); moe__lowbit_finish(L, r0 + 1, 2, moe__lowbit_isum(c2_1, z2, asum1), sc2); moe__lowbit_finish(L, r0 + 1, 3, moe__lowbit_isum(c3_1, z3, asum1), sc3);
    moe__lowbit_finish(L, r0 + 2, 0, moe__lowbit_isum(c0_2, z0, asum2), sc0); moe__lowbit_finish(L, r0 + 2, 1, moe__lowbit_isum(c1_2, z1, asum2), sc1); moe__lowbit_finish(L, r0 + 2, 2, moe__lowbit_isum(c2_2, z2, asum2), sc2); moe__lowbit_finish(L, r0 + 2, 3, moe__lowbit_isum(c3_2, z3, asum2), sc3);
    }
  }
}

/* q4 gemm1, 4 rows: gate and up panels in lockstep, act in the epilogue */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__q4_gemm1_tile_4(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 3) / 4, hi = k1 / 4, s1 = (k1 + 3) / 4;
    const int32_t asum0 = moe__sum_s8(a0 + k0, k1 - k0), asum1 = moe__sum_s8(a1 + k0, k1 - k0), asum2 = moe__sum_s8(a2 + k0, k1 - k0), asum3 = moe__sum_s8(a3 + k0, k1 - k0);
    __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
    __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
    __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512(), c2_2 = _mm512_setzero_si512(), c3_2 = _mm512_setzero_si512();
    __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512(), c2_3 = _mm512_setzero_si512(), c3_3 = _mm512_setzero_si512();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a1, i_), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a2, i_), _mm512_set1_epi8((char)0x80)); c0_2 = moe__dpbusd(c0_2, v00, a); c1_2 = moe__dpbusd(c1_2, v01, a); c2_2 = moe__dpbusd(c2_2, v10, a); c3_2 = moe__dpbusd(c3_2, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a3, i_), _mm512_set1_epi8((char)0x80)); c0_3 = moe__dpbusd(c0_3, v00, a); c1_3 = moe__dpbusd(c1_3, v01, a); c2_3 = moe__dpbusd(c2_3, v10, a); c3_3 = moe__dpbusd(c3_3, v11, a); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a0, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a1, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a2, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_2 = moe__dpbusd(c0_2, v00, a); c1_2 = moe__dpbusd(c1_2, v01, a); c2_2 = moe__dpbusd(c2_2, v10, a); c3_2 = moe__dpbusd(c3_2, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a3, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_3 = moe__dpbusd(c0_3, v00, a); c1_3 = moe__dpbusd(c1_3, v01, a); c2_3 = moe__dpbusd(c2_3, v10, a); c3_3 = moe__dpbusd(c3_3, v11, a); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    const __m512i z0 = moe__lowbit_zero(L, gi, 0), z1 = moe__lowbit_zero(L, gi, 1), z2 = moe__lowbit_zero(L, gi, 2), z3 = moe__lowbit_zero(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, moe__lowbit_isum(c0_0, z0, asum0), sc0); moe__lowbit_finish(L, r0 + 0, 1, moe__lowbit_isum(c1_0, z1, asum0), sc1); moe__lowbit_finish(L, r0 + 0, 2, moe__lowbit_isum(c2_0, z2, asum0), sc2); moe__lowbit_finish(L, r0 + 0, 3, moe__lowbit_isum(c3_0, z3, asum0), sc3);
    moe__lowbit_finish(L, r0 + 1, 0, moe__lowbit_isum(c0_1, z0, asum1), sc0); moe__lowbit_finish(L, r0 + 1, 1, moe__lowbit_isum(c1_1, z1, asum1), sc1); moe__lowbit_finish(L, r0 + 1, 2, moe__lowbit_isum(c2_1, z2, asum1), sc2); moe__lowbit_finish(L, r0 + 1, 3, moe__lowbit_isum(c3_1, z3, asum1), sc3);
    moe__lowbit_finish(L, r0 + 2, 0, moe__lowbit_isum(c0_2, z0, asum2), sc0); moe__lowbit_finish(L, r0 + 2, 1, moe__lowbit_isum(c1_2, z1, asum2), sc1); moe__lowbit_finish(L, r0 + 2, 2, moe__lowbit_isum(c2_2, z2, asum2), sc2); moe__lowbit_finish(L, r0 + 2, 3, moe__lowbit_isum(c3_2, z3, asum2), sc3);
    moe__lowbit_finish(L, r0 + 3, 0, moe__lowbit_isum(c0_3, z0, asum3), sc0); moe__lowbit_finish(L, r0 + 3, 1, moe__lowbit_isum(c1_3, z1, asum3), sc1); moe__lowbit_finish(L, r0 + 3, 2, moe__lowbit_isum(c2_3, z2, asum3), sc2); moe__lowbit_finish(L, r0 + 3, 3, moe__lowbit_isum(c3_3, z3, asum3), sc3);
    }
  }
}

/* q4 gemm1 over any mr: tiles of at most 4 rows, heights balanced */
MOE__AVX512_VNNI_FN void moe__q4_gemm1_rows(const moe_gemm_args *g, const moe__lowbit *L) {
  const int32_t tiles = (g->mr + 3) / 4;
  for (int32_t t = 0, r0 = 0; t < tiles; t++) {
    const int32_t rows = g->mr / tiles + (t < g->mr % tiles);
    const uint8_t *pf[2];
    moe__lowbit_pf(g, L, t, pf);
    switch (rows) {
    case 1: moe__q4_gemm1_tile_1(g, r0, L, pf); break;
    case 2: moe__q4_gemm1_tile_2(g, r0, L, pf); break;
    case 3: moe__q4_gemm1_tile_3(g, r0, L, pf); break;
    default: moe__q4_gemm1_tile_4(g, r0, L, pf); break;
    }
    r0 += rows;
  }
}

/* q4 gemm2x2, 1 row: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__q4_gemm2x2_tile_1(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0];
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 3) / 4, hi = k1 / 4, s1 = (k1 + 3) / 4;
    const int32_t asum0 = moe__sum_s8(a0 + k0, k1 - k0);
    __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
    __m512i d0_0 = _mm512_setzero_si512(), d1_0 = _mm512_setzero_si512(), d2_0 = _mm512_setzero_si512(), d3_0 = _mm512_setzero_si512();
    int64_t i = lo;
    MOE__NO_UNROLL for (; i + 1 < hi; i += 2) {
      { const int64_t i_ = i;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
      { const int64_t i_ = i + 1;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); d0_0 = moe__dpbusd(d0_0, v00, a); d1_0 = moe__dpbusd(d1_0, v01, a); d2_0 = moe__dpbusd(d2_0, v10, a); d3_0 = moe__dpbusd(d3_0, v11, a); }
      }
      }
    }
    if (i < hi)
      { const int64_t i_ = i;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      }
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a0, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      }
      }
    c0_0 = _mm512_add_epi32(c0_0, d0_0); c1_0 = _mm512_add_epi32(c1_0, d1_0); c2_0 = _mm512_add_epi32(c2_0, d2_0); c3_0 = _mm512_add_epi32(c3_0, d3_0);
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    const __m512i z0 = moe__lowbit_zero(L, gi, 0), z1 = moe__lowbit_zero(L, gi, 1), z2 = moe__lowbit_zero(L, gi, 2), z3 = moe__lowbit_zero(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, moe__lowbit_isum(c0_0, z0, asum0), sc0); moe__lowbit_finish(L, r0 + 0, 1, moe__lowbit_isum(c1_0, z1, asum0), sc1); moe__lowbit_finish(L, r0 + 0, 2, moe__lowbit_isum(c2_0, z2, asum0), sc2); moe__lowbit_finish(L, r0 + 0, 3, moe__lowbit_isum(c3_0, z3, asum0), sc3);
    }
  }
}

/* q4 gemm2x2, 2 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__q4_gemm2x2_tile_2(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1];
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 3) / 4, hi = k1 / 4, s1 = (k1 + 3) / 4;
    const int32_t asum0 = moe__sum_s8(a0 + k0, k1 - k0), asum1 = moe__sum_s8(a1 + k0, k1 - k0);
    __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
    __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a1, i_), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a0, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a1, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    const __m512i z0 = moe__lowbit_zero(L, gi, 0), z1 = moe__lowbit_zero(L, gi, 1), z2 = moe__lowbit_zero(L, gi, 2), z3 = moe__lowbit_zero(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, moe__lowbit_isum(c0_0, z0, asum0), sc0); moe__lowbit_finish(L, r0 + 0, 1, moe__lowbit_isum(c1_0, z1, asum0), sc1); moe__lowbit_finish(L, r0 + 0, 2, moe__lowbit_isum(c2_0, z2, asum0), sc2); moe__lowbit_finish(L, r0 + 0, 3, moe__lowbit_isum(c3_0, z3, asum0), sc3);
    moe__lowbit_finish(L, r0 + 1, 0, moe__lowbit_isum(c0_1, z0, asum1), sc0); moe__lowbit_finish(L, r0 + 1, 1, moe__lowbit_isum(c1_1, z1, asum1), sc1); moe__lowbit_finish(L, r0 + 1, 2, moe__lowbit_isum(c2_1, z2, asum1), sc2); moe__lowbit_finish(L, r0 + 1, 3, moe__lowbit_isum(c3_1, z3, asum1), sc3);
    }
  }
}

/* q4 gemm2x2, 3 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__q4_gemm2x2_tile_3(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2];
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 3) / 4, hi = k1 / 4, s1 = (k1 + 3) / 4;
    const int32_t asum0 = moe__sum_s8(a0 + k0, k1 - k0), asum1 = moe__sum_s8(a1 + k0, k1 - k0), asum2 = moe__sum_s8(a2 + k0, k1 - k0);
    __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
    __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
    __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512(), c2_2 = _mm512_setzero_si512(), c3_2 = _mm512_setzero_si512();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a1, i_), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a2, i_), _mm512_set1_epi8((char)0x80)); c0_2 = moe__dpbusd(c0_2, v00, a); c1_2 = moe__dpbusd(c1_2, v01, a); c2_2 = moe__dpbusd(c2_2, v10, a); c3_2 = moe__dpbusd(c3_2, v11, a); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a0, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a1, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a2, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_2 = moe__dpbusd(c0_2, v00, a); c1_2 = moe__dpbusd(c1_2, v01, a); c2_2 = moe__dpbusd(c2_2, v10, a); c3_2 = moe__dpbusd(c3_2, v11, a); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    const __m512i z0 = moe__lowbit_zero(L, gi, 0), z1 = moe__lowbit_zero(L, gi, 1), z2 = moe__lowbit_zero(L, gi, 2), z3 = moe__lowbit_zero(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, moe__lowbit_isum(c0_0, z0, asum0), sc0); moe__lowbit_finish(L, r0 + 0, 1, moe__lowbit_isum(c1_0, z1, asum0), sc1); moe__lowbit_finish(L, r0 + 0, 2, moe__lowbit_isum(c2_0, z2, asum0), sc2); moe__lowbit_finish(L, r0 + 0, 3, moe__lowbit_isum(c3_0, z3, asum0), sc3);
    moe__lowbit_finish(L, r0 + 1, 0, moe__lowbit_isum(c0_1, z0, asum1), sc0); moe__lowbit_finish(L, r0 + 1, 1, moe__lowbit_isum(c1_1, z1, asum1), sc1); moe__lowbit_finish(L, r0 + 1, 2, moe__lowbit_isum(c2_1, z2, asum1), sc2); moe__lowbit_finish(L, r0 + 1, 3, moe__lowbit_isum(c3_1, z3, asum1), sc3);
    moe__lowbit_finish(L, r0 + 2, 0, moe__lowbit_isum(c0_2, z0, asum2), sc0); moe__lowbit_finish(L, r0 + 2, 1, moe__lowbit_isum(c1_2, z1, asum2), sc1); moe__lowbit_finish(L, r0 + 2, 2, moe__lowbit_isum(c2_2, z2, asum2), sc2); moe__lowbit_finish(L, r0 + 2, 3, moe__lowbit_isum(c3_2, z3, asum2), sc3);
    }
  }
}

/* q4 gemm2x2, 4 rows: two neighbouring panels (64 columns), added into the rows */
MOE__AVX512_VNNI_FN MOE__NOINLINE void moe__q4_gemm2x2_tile_4(const moe_gemm_args *g, int32_t r0, const moe__lowbit *L,
                                              const uint8_t *const *pf) {
  const uint8_t *w0 = L->w0, *w1 = L->w1;
  const uint8_t *a0 = (const uint8_t *)g->a[r0 + 0], *a1 = (const uint8_t *)g->a[r0 + 1], *a2 = (const uint8_t *)g->a[r0 + 2], *a3 = (const uint8_t *)g->a[r0 + 3];
  for (int64_t k0 = L->kb0, gi = L->kb0 / g->kgroup; k0 < L->kb1; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    const int64_t lo = (k0 + 3) / 4, hi = k1 / 4, s1 = (k1 + 3) / 4;
    const int32_t asum0 = moe__sum_s8(a0 + k0, k1 - k0), asum1 = moe__sum_s8(a1 + k0, k1 - k0), asum2 = moe__sum_s8(a2 + k0, k1 - k0), asum3 = moe__sum_s8(a3 + k0, k1 - k0);
    __m512i c0_0 = _mm512_setzero_si512(), c1_0 = _mm512_setzero_si512(), c2_0 = _mm512_setzero_si512(), c3_0 = _mm512_setzero_si512();
    __m512i c0_1 = _mm512_setzero_si512(), c1_1 = _mm512_setzero_si512(), c2_1 = _mm512_setzero_si512(), c3_1 = _mm512_setzero_si512();
    __m512i c0_2 = _mm512_setzero_si512(), c1_2 = _mm512_setzero_si512(), c2_2 = _mm512_setzero_si512(), c3_2 = _mm512_setzero_si512();
    __m512i c0_3 = _mm512_setzero_si512(), c1_3 = _mm512_setzero_si512(), c2_3 = _mm512_setzero_si512(), c3_3 = _mm512_setzero_si512();
    MOE__NO_UNROLL for (int64_t i = lo; i < hi; i++)
      { const int64_t i_ = i;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a0, i_), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a1, i_), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a2, i_), _mm512_set1_epi8((char)0x80)); c0_2 = moe__dpbusd(c0_2, v00, a); c1_2 = moe__dpbusd(c1_2, v01, a); c2_2 = moe__dpbusd(c2_2, v10, a); c3_2 = moe__dpbusd(c3_2, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_group(a3, i_), _mm512_set1_epi8((char)0x80)); c0_3 = moe__dpbusd(c0_3, v00, a); c1_3 = moe__dpbusd(c1_3, v01, a); c2_3 = moe__dpbusd(c2_3, v10, a); c3_3 = moe__dpbusd(c3_3, v11, a); }
      }
      moe__prefetch_ahead(pf[0] + 64 * (size_t)i_, 1);
      moe__prefetch_ahead(pf[1] + 64 * (size_t)i_, 1);
      }
    if (hi < s1) /* the group ends inside a step: only its elements below k1 */
      { const int64_t i_ = hi;
      {
      __m512i v00, v01;
      moe__q4_line(w0 + 64 * (size_t)i_, &v00, &v01);
      __m512i v10, v11;
      moe__q4_line(w1 + 64 * (size_t)i_, &v10, &v11);
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a0, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_0 = moe__dpbusd(c0_0, v00, a); c1_0 = moe__dpbusd(c1_0, v01, a); c2_0 = moe__dpbusd(c2_0, v10, a); c3_0 = moe__dpbusd(c3_0, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a1, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_1 = moe__dpbusd(c0_1, v00, a); c1_1 = moe__dpbusd(c1_1, v01, a); c2_1 = moe__dpbusd(c2_1, v10, a); c3_1 = moe__dpbusd(c3_1, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a2, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_2 = moe__dpbusd(c0_2, v00, a); c1_2 = moe__dpbusd(c1_2, v01, a); c2_2 = moe__dpbusd(c2_2, v10, a); c3_2 = moe__dpbusd(c3_2, v11, a); }
      { const __m512i a = _mm512_xor_si512(moe__bcast_range(a3, i_, k0, k1, 4, 1, 0x80), _mm512_set1_epi8((char)0x80)); c0_3 = moe__dpbusd(c0_3, v00, a); c1_3 = moe__dpbusd(c1_3, v01, a); c2_3 = moe__dpbusd(c2_3, v10, a); c3_3 = moe__dpbusd(c3_3, v11, a); }
      }
      }
    {
    const __m512 sc0 = moe__lowbit_scale(L, gi, 0), sc1 = moe__lowbit_scale(L, gi, 1), sc2 = moe__lowbit_scale(L, gi, 2), sc3 = moe__lowbit_scale(L, gi, 3);
    const __m512i z0 = moe__lowbit_zero(L, gi, 0), z1 = moe__lowbit_zero(L, gi, 1), z2 = moe__lowbit_zero(L, gi, 2), z3 = moe__lowbit_zero(L, gi, 3);
    moe__lowbit_finish(L, r0 + 0, 0, moe__lowbit_isum(c0_0, z0, asum0), sc0); moe__lowbit_finish(L, r0 + 0, 1, moe__lowbit_isum(c1_0, z1, asum0), sc1); moe__lowbit_finish(L, r0 + 0, 2, moe__lowbit_isum(c2_0, z2, asum0), sc2); moe__lowbit_finish(L, r0 + 0, 3, moe__lowbit_isum(c3_0, z3, asum0), sc3);
    moe__lowbit_finish(L, r0 + 1, 0, moe__lowbit_isum(c0_1, z0, asum1), sc0); moe__lowbit_finish(L, r0 + 1, 1, moe__lowbit_isum(c1_1, z1, asum1), sc1); moe__lowbit_finish(L, r0 + 1, 2, moe__lowbit_isum(c2_1, z2, asum1), sc2); moe__lowbit_finish(L, r0 + 1, 3, moe__lowbit_isum(c3_1, z3, asum1), sc3);
    moe__lowbit_finish(L, r0 + 2, 0, moe__lowbit_isum(c0_2, z0, asum2), sc0); moe__lowbit_finish(L, r0 + 2, 1, moe__lowbit_isum(c1_2, z1, asum2), sc1); moe__lowbit_finish(L, r0 + 2, 2, moe__lowbit_isum(c2_2, z2, asum2), sc2); moe__lowbit_finish(L, r0 + 2, 3, moe__lowbit_isum(c3_2, z3, asum2), sc3);
    moe__lowbit_finish(L, r0 + 3, 0, moe__lowbit_isum(c0_3, z0, asum3), sc0); moe__lowbit_finish(L, r0 + 3, 1, moe__lowbit_isum(c1_3, z1, asum3), sc1); moe__lowbit_finish(L, r0 + 3, 2, moe__lowbit_isum(c2_3, z2, asum3), sc2); moe__lowbit_finish(L, r0 + 3, 3, moe__lowbit_isum(c3_3, z3, asum3), sc3);
    }
  }
}

/* q4 gemm2x2 over any mr: tiles of at most 4 rows, heights balanced */
MOE__AVX512_VNNI_FN void moe__q4_gemm2x2_rows(const moe_gemm_args *g, const moe__lowbit *L) {
  const int32_t tiles = (g->mr + 3) / 4;
  for (int32_t t = 0, r0 = 0; t < tiles; t++) {
    const int32_t rows = g->mr / tiles + (t < g->mr % tiles);
    const uint8_t *pf[2];
    moe__lowbit_pf(g, L, t, pf);
    switch (rows) {
    case 1: moe__q4_gemm2x2_tile_1(g, r0, L, pf); break;
    case 2: moe__q4_gemm2x2_tile_2(g, r0, L, pf); break;
    case 3: moe__q4_gemm2x2_tile_3(g, r0, L, pf); break;
    default: moe__q4_gemm2x2_tile_4(g, r0, L, pf); break;
    }
    r0 += rows;
  }
}
/* ==== END GENERATED ==== */

/* The kernels of the list. gemm1: tiles of 5 rows x (32 gate + 32 up) columns. gemm2: 5 rows x 64
 * columns (two panels) while nr > 32, else 12 rows x 32 columns. */
MOE__AVX512_BF16 void moe_bf16_bf16w_gemm1_ukernel_5x32c2__avx512bf16(const moe_gemm_args *g) { moe__bf16_gemm1_rows(g); }
MOE__AVX512_BF16 void moe_bf16_bf16w_gemm2_ukernel_5x64c2_12x32c2__avx512bf16(const moe_gemm_args *g) {
  if (g->nr > MOE_NR) moe__bf16_gemm2x2_rows(g);
  else moe__bf16_gemm2_rows(g);
}
MOE__AVX512_VNNI void moe_qu8_qc8w_gemm1_ukernel_5x32c4__avx512vnni(const moe_gemm_args *g) { moe__qc8_gemm1_rows(g); }
MOE__AVX512_VNNI void moe_qu8_qc8w_gemm2_ukernel_5x64c4_12x32c4__avx512vnni(const moe_gemm_args *g) {
  if (g->nr > MOE_NR) moe__qc8_gemm2x2_rows(g);
  else moe__qc8_gemm2_rows(g);
}
/* ---- the low-bit kernels: decode tables, the call (k blocks x row tiles), the list's functions --- */
/* bf16 of every e4m3 magnitude (code & 0x7F), as high and low bytes: exact, subnormals included;
 * 0x7F (NaN) -> 0x7FC0. The sign bit is or'ed in after the lookup. */
static const uint8_t moe__e4m3_bf16_hi[128] = {
    0x00, 0x3B, 0x3B, 0x3B, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C,
    0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D,
    0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E,
    0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F,
    0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
    0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
    0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42,
    0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x7F};
static const uint8_t moe__e4m3_bf16_lo[128] = {
    0x00, 0x00, 0x80, 0xC0, 0x00, 0x20, 0x40, 0x60, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xC0};
/* bf16 of the 4-bit values, 32 entries for vpermw: int4 q - zero as a 5-bit index (-15..15, two's
 * complement), and e2m1 (sign in bit 3) twice, so the bits above a nibble need no mask. */
static const uint16_t moe__int5_bf16[32] = {
    0x0000, 0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0, 0x40E0, 0x4100, 0x4110, 0x4120, 0x4130, 0x4140, 0x4150, 0x4160, 0x4170,
    0xC180, 0xC170, 0xC160, 0xC150, 0xC140, 0xC130, 0xC120, 0xC110, 0xC100, 0xC0E0, 0xC0C0, 0xC0A0, 0xC080, 0xC040, 0xC000, 0xBF80};
static const uint16_t moe__e2m1_bf16[32] = {
    0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0, 0x8000, 0xBF00, 0xBF80, 0xBFC0, 0xC000, 0xC040, 0xC080, 0xC0C0,
    0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0, 0x8000, 0xBF00, 0xBF80, 0xBFC0, 0xC000, 0xC040, 0xC080, 0xC0C0};


#ifndef MOE__LOWBIT_PF_MIN_ROWS
#define MOE__LOWBIT_PF_MIN_ROWS 99
#endif
/* The epilogue from the totals (A8: times the row scale): gemm1 act -> c, gemm2 (+ bias) * weight
 * into the rows. */
MOE__AVX512_BASE MOE__INLINE void moe__lowbit_store(const moe_gemm_args *g, const float *tot, int gemm1, int np, int a8) {
  for (int32_t r = 0; r < g->mr; r++) {
    const float *t = tot + 64 * r;
    const __m512 s = _mm512_set1_ps(a8 ? g->a_scale[r] : 1.0f);
    __m512 v0 = _mm512_load_ps(t), v1 = _mm512_load_ps(t + 16), v2 = _mm512_load_ps(t + 32), v3 = _mm512_load_ps(t + 48);
    if (a8) v0 = _mm512_mul_ps(v0, s), v1 = _mm512_mul_ps(v1, s), v2 = _mm512_mul_ps(v2, s), v3 = _mm512_mul_ps(v3, s);
    if (gemm1) moe__gemm1_store_avx512(g, r, v0, v1, v2, v3);
    else moe__gemm2_store_avx512(g, r, 2 * np, v0, v1, v2, v3);
  }
}

/* The decoder's tables for precision p. */
static inline MOE__INLINE void moe__tables_of(moe_precision p, moe__tables *t) {
  memset(t, 0, sizeof *t);
  if (p == MOE_PREC_FP8) {
    memcpy(&t->hi0, moe__e4m3_bf16_hi, 64), memcpy(&t->hi1, moe__e4m3_bf16_hi + 64, 64);
    memcpy(&t->lo0, moe__e4m3_bf16_lo, 64), memcpy(&t->lo1, moe__e4m3_bf16_lo + 64, 64);
  } else if (p == MOE_PREC_MXFP4) {
    memcpy(&t->hi0, moe__e2m1_bf16, 64);
  } else {
    memcpy(&t->lo0, moe__int5_bf16, 64);
  }
}

/* The row tiles of a call. */
MOE__AVX512_BASE MOE__INLINE void moe__lowbit_rows(moe_precision p, const moe_gemm_args *g, const moe__lowbit *L, int gemm1) {
  if (p == MOE_PREC_FP8) gemm1 ? moe__fp8_gemm1_rows(g, L) : moe__fp8_gemm2x2_rows(g, L);
  else if (moe__is_a8(p)) gemm1 ? moe__q4_gemm1_rows(g, L) : moe__q4_gemm2x2_rows(g, L);
  else if (p == MOE_PREC_INT4_W4A16) gemm1 ? moe__i4_gemm1_rows(g, L) : moe__i4_gemm2x2_rows(g, L);
  else gemm1 ? moe__b4_gemm1_rows(g, L) : moe__b4_gemm2x2_rows(g, L);
}

/* The scales and zero points of the call's panels: they lie apart from the codes, and a scale that
 * comes from DRAM only when its group ends stalls the core. */
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_meta(const moe_gemm_args *g, const moe__lowbit *L, int np) {
  for (int q = 0; q < np; q++)
    for (const uint8_t *at = L->meta[q]; at < g->w + (size_t)(q + 1) * g->panel_bytes; at += 64)
      _mm_prefetch((const char *)at, _MM_HINT_T0);
}

/* One low-bit GEMM call (p a compile-time constant in each kernel): gemm1 over the gate and up
 * panels, gemm2 over one or two panels; tiles of up to 4 rows, each over every scale group. */
/* A call's panels (np: 1 or 2; a single, last, odd gemm2 panel serves as both panels of the two-panel
 * tiles, its second half not stored): codes, group scales and zero points. */
static inline MOE__INLINE void moe__lowbit_init(moe_precision p, const moe_gemm_args *g, int np, const moe__tables *tab, float *tot,
                                                moe__lowbit *L) {
  const size_t meta = moe__meta_offset(p, g->kpad), ng = (size_t)moe__cdiv(g->kred, g->kgroup ? g->kgroup : g->kred);
  memset(L, 0, sizeof *L);
  L->p = p, L->w0 = g->w, L->w1 = g->w + (size_t)(np - 1) * g->panel_bytes, L->tab = tab, L->tot = tot;
  for (int q = 0; q < 2; q++) L->meta[q] = (q ? L->w1 : L->w0) + meta, L->zeros[q] = L->meta[q] + ng * MOE_NR * 4;
}

MOE__AVX512_BASE MOE__INLINE void moe__lowbit_gemm_avx512(moe_precision p, const moe_gemm_args *g, int gemm1, float *tot) {
  const int np = gemm1 || g->nr > MOE_NR ? 2 : 1;
  moe__tables tab;
  moe__lowbit L;
  moe__tables_of(p, &tab);
  moe__lowbit_init(p, g, np, &tab, tot, &L);
  moe__prefetch_meta(g, &L, np);
  if (!gemm1) moe__prefetch_c_rows(g, 0, g->mr);
  memset(tot, 0, (size_t)g->mr * 64 * sizeof(float));
  /* k blocks of whole groups, every tile in each: the later tiles read what the first brought in
   * while DRAM keeps streaming the next block, and a call costs one tile call per block */
  for (L.kb0 = 0; L.kb0 < g->kred; L.kb0 = L.kb1) {
    const int64_t kb = g->kgroup >= MOE__LOWBIT_KB ? g->kgroup : MOE__LOWBIT_KB / g->kgroup * g->kgroup;
    L.kb1 = L.kb0 + kb < g->kred ? L.kb0 + kb : g->kred;
    moe__lowbit_rows(p, g, &L, gemm1);
  }
  moe__lowbit_store(g, tot, gemm1, np, moe__is_a8(p));
}

/* The kernels of the list: gemm1 tiles of 5 rows x (32 gate + 32 up) columns; gemm2 5 x 64 while
 * nr > 32, else 12 x 32 (the names of the list); the low-bit tiles have up to 4 rows. */
#define MOE__LOWBIT_UKERNELS(attr, fam, tile1, tile2, sfx, prec)                                             \
  attr void moe_##fam##_gemm1_ukernel_##tile1##__##sfx(const moe_gemm_args *g) {                             \
    MOE__ALIGN64 float tot[MOE_BLOCK_M * 64];                                                                \
    moe__lowbit_gemm_avx512(prec, g, 1, tot);                                                                \
  }                                                                                                          \
  attr void moe_##fam##_gemm2_ukernel_##tile2##__##sfx(const moe_gemm_args *g) {                             \
    MOE__ALIGN64 float tot[MOE_BLOCK_M * 64];                                                                \
    moe__lowbit_gemm_avx512(prec, g, 0, tot);                                                                \
  }
MOE__LOWBIT_UKERNELS(MOE__AVX512_FP8, bf16_fp8w, 5x32c2, 5x64c2_12x32c2, avx512bf16, MOE_PREC_FP8)
MOE__LOWBIT_UKERNELS(MOE__AVX512_BF16, bf16_qc4w, 5x32c2, 5x64c2_12x32c2, avx512bf16, MOE_PREC_INT4_W4A16)
MOE__LOWBIT_UKERNELS(MOE__AVX512_BF16, bf16_mxfp4w, 5x32c2, 5x64c2_12x32c2, avx512bf16, MOE_PREC_MXFP4)
MOE__LOWBIT_UKERNELS(MOE__AVX512_VNNI, qu8_qc4w, 5x32c4, 5x64c4_12x32c4, avx512vnni, MOE_PREC_INT4_W4A8)
#undef MOE__LOWBIT_UKERNELS

/* ---- row operations around the GEMMs (quantize, convert), vectorized ---------------------------- */

/* moe_quantize_row_u8 with the same bits: amax (NaN sticks), scale, x / scale rounded half to even. */
MOE__AVX512_BASE float moe__quantize_row_u8_avx512(const float *x, int64_t n, uint8_t *q) {
  __m512 vmax = _mm512_setzero_ps(), vscale;
  __mmask16 nan = 0;
  float amax, scale;
  for (int64_t i = 0; i < n; i += 16) {
    __m512 v = _mm512_maskz_loadu_ps(moe__tail_mask(n - i), x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    vmax = _mm512_max_ps(vmax, _mm512_abs_ps(v));
  }
  amax = nan ? NAN : _mm512_reduce_max_ps(vmax);
  scale = (amax < 1e-7f ? 1e-7f : amax) / 127.0f;
  vscale = _mm512_set1_ps(scale);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = moe__tail_mask(n - i);
    __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(mk, x + i), vscale);
    v = _mm512_min_ps(_mm512_set1_ps(127.0f), _mm512_max_ps(_mm512_set1_ps(-127.0f), v));
    __m512i qi = _mm512_add_epi32(_mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), _mm512_set1_epi32(128));
    _mm_mask_storeu_epi8(q + i, mk, _mm512_cvtepi32_epi8(qi)); /* NaN -> INT_MIN + 128 -> byte 128 */
  }
  return scale;
}

/* f32 -> bf16, round to nearest even, NaN quieted: moe_f32_to_bf16 on 16 lanes. */
MOE__AVX512_BASE void moe__f32_to_bf16_avx512(const float *src, uint16_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = moe__tail_mask(n - i);
    __m512i u = _mm512_maskz_loadu_epi32(mk, src + i);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    _mm256_mask_storeu_epi16(dst + i, mk, _mm512_cvtepi32_epi16(r));
  }
}

MOE__AVX512_BASE void moe__bf16_to_f32_avx512(const uint16_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = moe__tail_mask(n - i);
    __m512i v = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, src + i)), 16);
    _mm512_mask_storeu_ps(dst + i, mk, _mm512_castsi512_ps(v));
  }
}

/* acc[k] += y[k] over n floats. */
MOE__AVX512_BASE void moe__add_row_avx512(float *acc, const float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = moe__tail_mask(n - i);
    _mm512_mask_storeu_ps(acc + i, mk, _mm512_add_ps(_mm512_maskz_loadu_ps(mk, acc + i), _mm512_maskz_loadu_ps(mk, y + i)));
  }
}
/* ---- AMX tier: moe_tiers/amx.h ---------------------------------------------------------------- */
#include "moe_tiers/amx.h"

#ifdef MOE__GCC_DIAG_PUSHED
#pragma GCC diagnostic pop
#undef MOE__GCC_DIAG_PUSHED
#endif
#endif /* AVX-512 */

/* ---- AVX2 and AVX-VNNI tiers: moe_tiers/avx2.h ---------------------------------------------- */
#include "moe_tiers/avx2.h"

/* ---- tiers ---------------------------------------------------------------------------------------
 * X(tier, name, rank): rank orders the tiers by preference; moe_set_isa() caps by it. */
#define MOE__ISA_LIST(X)                                                                          \
  X(MOE_ISA_SCALAR, "scalar", 0)                                                                  \
  X(MOE_ISA_AVX2, "avx2", 1)                                                                      \
  X(MOE_ISA_AVX_VNNI, "avx-vnni", 2)                                                              \
  X(MOE_ISA_AVX512, "avx512", 3)                                                                  \
  X(MOE_ISA_AMX, "amx", 4)

static inline int moe__isa_valid(moe_isa isa) { return (int)isa >= 0 && (int)isa < (int)MOE_ISA_COUNT; }
static inline int moe__isa_rank(moe_isa isa) {
  switch (isa) {
#define MOE__ISA_RANK(tier, name, rank) case tier: return rank;
    MOE__ISA_LIST(MOE__ISA_RANK)
#undef MOE__ISA_RANK
  default: return -1;
  }
}

MOE_API const char *moe_isa_name(moe_isa isa) {
  switch (isa) {
#define MOE__ISA_NAME(tier, name, rank) case tier: return name;
    MOE__ISA_LIST(MOE__ISA_NAME)
#undef MOE__ISA_NAME
  default: return "unknown";
  }
}

MOE_API moe_isa moe_isa_from_name(const char *name) {
  for (int i = 0; name && i < (int)MOE_ISA_COUNT; i++)
    if (strcmp(name, moe_isa_name((moe_isa)i)) == 0) return (moe_isa)i;
  return MOE_ISA_COUNT;
}

/* ---- THE KERNEL LIST -----------------------------------------------------------------------------
 * One row per kernel pair. Adding a kernel is one row here plus its two functions: dispatch,
 * moe_gemm_config_for, moe_kernel_at and everything that enumerates kernels (tests/test_kernels.c,
 * bench/bench_kernels.c) read this list.
 *   X(precision, tier, family, gemm1 tile, gemm2 tiles, isa suffix, MR, NR, KR, MR2, NR2, features, dot)
 * names: moe_<family>_gemm1_ukernel_<gemm1 tile>__<suffix>, moe_<family>_gemm2_ukernel_<gemm2 tiles>__<suffix>.
 * Rows of a precision or tier compiled out vanish (MOE__IF_*). */
#define MOE__AVX512_BF16_FEATURES (MOE__CPU_AVX512_BASE | MOE_CPU_AVX512BF16)
#define MOE__AVX512_VNNI_FEATURES (MOE__CPU_AVX512_BASE | MOE_CPU_AVX512VNNI)
#define MOE__AVX512_BF16_VBMI_FEATURES (MOE__AVX512_BF16_FEATURES | MOE_CPU_AVX512VBMI)
#define MOE__KERNEL_LIST(X)                                                                                        \
  MOE__IF_BF16(X(MOE_PREC_BF16, MOE_ISA_SCALAR, bf16_bf16w, 32x32c2, 32x64c2, scalar, 32, 32, 2, 32, 64, 0, "scalar"))  \
  MOE__IF_BF16(X(MOE_PREC_FP16, MOE_ISA_SCALAR, bf16_bf16w, 32x32c2, 32x64c2, scalar, 32, 32, 2, 32, 64, 0, "scalar"))  \
  MOE__IF_INT8(X(MOE_PREC_INT8, MOE_ISA_SCALAR, qu8_qc8w, 32x32c4, 32x64c4, scalar, 32, 32, 4, 32, 64, 0, "scalar"))    \
  MOE__IF_FP8(X(MOE_PREC_FP8, MOE_ISA_SCALAR, bf16_fp8w, 32x32c2, 32x64c2, scalar, 32, 32, 2, 32, 64, 0, "scalar"))     \
  MOE__IF_INT4(X(MOE_PREC_INT4_W4A8, MOE_ISA_SCALAR, qu8_qc4w, 32x32c4, 32x64c4, scalar, 32, 32, 4, 32, 64, 0, "scalar")) \
  MOE__IF_INT4(X(MOE_PREC_INT4_W4A16, MOE_ISA_SCALAR, bf16_qc4w, 32x32c8, 32x64c8, scalar, 32, 32, 8, 32, 64, 0, "scalar")) \
  MOE__IF_MXFP4(X(MOE_PREC_MXFP4, MOE_ISA_SCALAR, bf16_mxfp4w, 32x32c8, 32x64c8, scalar, 32, 32, 8, 32, 64, 0, "scalar")) \
  MOE__IF_AVX512(MOE__IF_BF16(X(MOE_PREC_BF16, MOE_ISA_AVX512, bf16_bf16w, 5x32c2, 5x64c2_12x32c2, avx512bf16,          \
                                5, 32, 2, 5, 64, MOE__AVX512_BF16_FEATURES, "vdpbf16ps")))                            \
  MOE__IF_AVX512(MOE__IF_BF16(X(MOE_PREC_FP16, MOE_ISA_AVX512, bf16_bf16w, 5x32c2, 5x64c2_12x32c2, avx512bf16,          \
                                5, 32, 2, 5, 64, MOE__AVX512_BF16_FEATURES, "vdpbf16ps")))                            \
  MOE__IF_AVX512(MOE__IF_INT8(X(MOE_PREC_INT8, MOE_ISA_AVX512, qu8_qc8w, 5x32c4, 5x64c4_12x32c4, avx512vnni,            \
                                5, 32, 4, 5, 64, MOE__AVX512_VNNI_FEATURES, "vpdpbusd")))                             \
  MOE__IF_AVX512(MOE__IF_FP8(X(MOE_PREC_FP8, MOE_ISA_AVX512, bf16_fp8w, 5x32c2, 5x64c2_12x32c2, avx512bf16,             \
                               5, 32, 2, 5, 64, MOE__AVX512_BF16_VBMI_FEATURES, "vdpbf16ps")))                        \
  MOE__IF_AVX512(MOE__IF_INT4(X(MOE_PREC_INT4_W4A8, MOE_ISA_AVX512, qu8_qc4w, 5x32c4, 5x64c4_12x32c4, avx512vnni,       \
                                5, 32, 4, 5, 64, MOE__AVX512_VNNI_FEATURES, "vpdpbusd")))                             \
  MOE__IF_AVX512(MOE__IF_INT4(X(MOE_PREC_INT4_W4A16, MOE_ISA_AVX512, bf16_qc4w, 5x32c2, 5x64c2_12x32c2, avx512bf16,     \
                                5, 32, 2, 5, 64, MOE__AVX512_BF16_FEATURES, "vdpbf16ps")))                            \
  MOE__IF_AVX512(MOE__IF_MXFP4(X(MOE_PREC_MXFP4, MOE_ISA_AVX512, bf16_mxfp4w, 5x32c2, 5x64c2_12x32c2, avx512bf16,       \
                                 5, 32, 2, 5, 64, MOE__AVX512_BF16_FEATURES, "vdpbf16ps")))                          \
  MOE__IF_AVX2(MOE__IF_BF16(X(MOE_PREC_BF16, MOE_ISA_AVX2, bf16_bf16w, 4x16c2, 4x16c2, avx2, 4, 16, 2, 4, 16,               \
                              MOE__AVX2_FEATURES, "vfmadd231ps-ymm")))                                                      \
  MOE__IF_AVX2(MOE__IF_BF16(X(MOE_PREC_FP16, MOE_ISA_AVX2, bf16_bf16w, 4x16c2, 4x16c2, avx2, 4, 16, 2, 4, 16,               \
                              MOE__AVX2_FEATURES, "vfmadd231ps-ymm")))                                                      \
  MOE__IF_AVX2(MOE__IF_INT8(X(MOE_PREC_INT8, MOE_ISA_AVX2, qu8_qc8w, 4x16c4, 4x16c4, avx2, 4, 16, 4, 4, 16,                 \
                              MOE__AVX2_FEATURES, "vpmaddubsw")))                                                       \
  MOE__IF_AVX2(MOE__IF_INT8(X(MOE_PREC_INT8, MOE_ISA_AVX_VNNI, qu8_qc8w, 6x16c4, 6x16c4, avxvnni, 6, 16, 4, 6, 16,          \
                              MOE__AVXVNNI_FEATURES, "vpdpbusd-ymm")))                                                  \
  MOE__IF_AVX2(MOE__IF_FP8(X(MOE_PREC_FP8, MOE_ISA_AVX2, bf16_fp8w, 4x16c2, 4x16c2, avx2, 4, 16, 2, 4, 16,                 \
                             MOE__AVX2_FEATURES, "vfmadd231ps-ymm")))                                                   \
  MOE__IF_AVX2(MOE__IF_INT4(X(MOE_PREC_INT4_W4A8, MOE_ISA_AVX2, qu8_qc4w, 4x16c4, 4x16c4, avx2, 4, 16, 4, 4, 16,           \
                              MOE__AVX2_FEATURES, "vpmaddubsw")))                                                       \
  MOE__IF_AVX2(MOE__IF_INT4(X(MOE_PREC_INT4_W4A8, MOE_ISA_AVX_VNNI, qu8_qc4w, 4x16c4, 4x16c4, avxvnni, 4, 16, 4, 4, 16,    \
                              MOE__AVXVNNI_FEATURES, "vpdpbusd-ymm")))                                                  \
  MOE__IF_AVX2(MOE__IF_INT4(X(MOE_PREC_INT4_W4A16, MOE_ISA_AVX2, bf16_qc4w, 4x16c2, 4x16c2, avx2, 4, 16, 2, 4, 16,         \
                              MOE__AVX2_FEATURES, "vfmadd231ps-ymm")))                                                  \
  MOE__IF_AVX2(MOE__IF_MXFP4(X(MOE_PREC_MXFP4, MOE_ISA_AVX2, bf16_mxfp4w, 4x16c2, 4x16c2, avx2, 4, 16, 2, 4, 16,           \
                               MOE__AVX2_FEATURES, "vfmadd231ps-ymm")))                                                 \
  MOE__IF_AMX(MOE__IF_BF16(X(MOE_PREC_BF16, MOE_ISA_AMX, bf16_bf16w, 16x32c2, 16x64c2, amx, 16, 32, 2, 16, 64,            \
                             MOE__AMX_FEATURES_ALL, "tdpbf16ps")))                                                     \
  MOE__IF_AMX(MOE__IF_BF16(X(MOE_PREC_FP16, MOE_ISA_AMX, bf16_bf16w, 16x32c2, 16x64c2, amx, 16, 32, 2, 16, 64,            \
                             MOE__AMX_FEATURES_ALL, "tdpbf16ps")))                                                     \
  MOE__IF_AMX(MOE__IF_INT8(X(MOE_PREC_INT8, MOE_ISA_AMX, qu8_qc8w, 16x32c4, 16x64c4, amx, 16, 32, 4, 16, 64,              \
                             MOE__AMX_FEATURES_ALL, "tdpbusd")))                                                       \
  MOE__IF_AMX(MOE__IF_FP8(X(MOE_PREC_FP8, MOE_ISA_AMX, bf16_fp8w, 16x32c2, 16x64c2, amx, 16, 32, 2, 16, 64,               \
                            MOE__AMX_FEATURES_ALL, "tdpbf16ps")))                                                      \
  MOE__IF_AMX(MOE__IF_INT4(X(MOE_PREC_INT4_W4A8, MOE_ISA_AMX, qu8_qc4w, 16x32c4, 16x64c4, amx, 16, 32, 4, 16, 64,         \
                             MOE__AMX_FEATURES_ALL, "tdpbsud")))                                                       \
  MOE__IF_AMX(MOE__IF_INT4(X(MOE_PREC_INT4_W4A16, MOE_ISA_AMX, bf16_qc4w, 16x32c2, 16x64c2, amx, 16, 32, 2, 16, 64,       \
                             MOE__AMX_FEATURES_ALL, "tdpbf16ps")))                                                     \
  MOE__IF_AMX(MOE__IF_MXFP4(X(MOE_PREC_MXFP4, MOE_ISA_AMX, bf16_mxfp4w, 16x32c2, 16x64c2, amx, 16, 32, 2, 16, 64,         \
                              MOE__AMX_FEATURES_ALL, "tdpbf16ps")))

#if MOE__ON_BF16
#define MOE__IF_BF16(x) x
#else
#define MOE__IF_BF16(x)
#endif
#if MOE__ON_INT8
#define MOE__IF_INT8(x) x
#else
#define MOE__IF_INT8(x)
#endif
#if MOE__ON_FP8
#define MOE__IF_FP8(x) x
#else
#define MOE__IF_FP8(x)
#endif
#if MOE__ON_INT4
#define MOE__IF_INT4(x) x
#else
#define MOE__IF_INT4(x)
#endif
#if MOE__ON_MXFP4
#define MOE__IF_MXFP4(x) x
#else
#define MOE__IF_MXFP4(x)
#endif
#ifdef MOE__HAVE_AVX512
#define MOE__IF_AVX512(x) x
#else
#define MOE__IF_AVX512(x)
#endif
#ifdef MOE__HAVE_AVX2
#define MOE__IF_AVX2(x) x
#else
#define MOE__IF_AVX2(x)
#endif
#ifdef MOE__HAVE_AMX
#define MOE__IF_AMX(x) x
#else
#define MOE__IF_AMX(x)
#endif

#define MOE__KERNEL_ROW(prec, tier, fam, tile1, tile2, sfx, mr, nr, kr, mr2, nr2, feat, dot)                   \
  {moe_##fam##_gemm1_ukernel_##tile1##__##sfx, moe_##fam##_gemm2_ukernel_##tile2##__##sfx, feat, tier,            \
   "moe_" #fam "_gemm_ukernel_" #tile1 "__" #sfx, prec, mr, nr, kr, mr2, nr2,                                     \
   "moe_" #fam "_gemm1_ukernel_" #tile1 "__" #sfx, "moe_" #fam "_gemm2_ukernel_" #tile2 "__" #sfx, dot},
static const moe_gemm_config moe__kernels[] = {MOE__KERNEL_LIST(MOE__KERNEL_ROW)};
#undef MOE__KERNEL_ROW

MOE_API int moe_kernel_count(void) { return (int)(sizeof moe__kernels / sizeof moe__kernels[0]); }

MOE_API const moe_gemm_config *moe_kernel_at(int i) {
  return i >= 0 && i < moe_kernel_count() ? &moe__kernels[i] : NULL;
}

MOE_API int moe_kernel_runnable(const moe_gemm_config *k) {
  if (!k || (k->cpu_features & ~moe_cpu_features())) return 0;
#ifdef MOE_AMX_EMULATE
  return 1; /* the AMX tier runs on the tile model: no tiles, no permission */
#else
  return k->isa != MOE_ISA_AMX || moe_amx_request(); /* tiles only with the OS's permission */
#endif
}

MOE_API const moe_gemm_config *moe_gemm_config_for(moe_precision p, moe_isa isa) {
  for (int i = 0; i < moe_kernel_count(); i++)
    if (moe__kernels[i].precision == p && moe__kernels[i].isa == isa && moe_kernel_runnable(&moe__kernels[i]))
      return &moe__kernels[i];
  return NULL;
}

/* ---- the tier cap ------------------------------------------------------------------------------ */
static inline moe_isa *moe__isa_cap(void) {
  static moe_isa cap = MOE_ISA_AMX; /* the highest rank: no cap */
  return &cap;
}
static inline int moe__isa_allowed(moe_isa isa) { return moe__isa_rank(isa) <= moe__isa_rank(*moe__isa_cap()); }

MOE_API const moe_gemm_config *moe_gemm_select(moe_precision p) {
  const moe_gemm_config *best = NULL;
  for (int i = 0; i < moe_kernel_count(); i++) {
    const moe_gemm_config *k = &moe__kernels[i];
    if (k->precision == p && moe__isa_allowed(k->isa) && (!best || moe__isa_rank(k->isa) > moe__isa_rank(best->isa)) &&
        moe_kernel_runnable(k))
      best = k;
  }
  return best;
}

MOE_API int moe_isa_available(moe_isa isa) {
  if (isa == MOE_ISA_SCALAR) return 1;
  for (int i = 0; i < moe_kernel_count(); i++)
    if (moe__kernels[i].isa == isa && moe_kernel_runnable(&moe__kernels[i])) return 1;
  return 0;
}

MOE_API moe_isa moe_get_isa(void) {
  moe_isa best = MOE_ISA_SCALAR;
  for (int i = 0; i < (int)MOE_ISA_COUNT; i++)
    if (moe__isa_rank((moe_isa)i) > moe__isa_rank(best) && moe__isa_allowed((moe_isa)i) && moe_isa_available((moe_isa)i))
      best = (moe_isa)i;
  return best;
}

MOE_API moe_isa moe_set_isa(moe_isa cap) {
  *moe__isa_cap() = (int)cap < 0 ? MOE_ISA_SCALAR : moe__isa_valid(cap) ? cap : MOE_ISA_AMX;
  return moe_get_isa();
}

/* Ends this thread's use of AMX tiles, if it made any (a no-op without the AMX tier). */
static inline void moe__tiles_release(void) {
#ifdef MOE__HAVE_AMX
  if (moe__amx_loaded) moe__amx_release();
#endif
}

/* ---- row operations of the layer (quantize and convert rows, accumulate), per tier ------------ */
typedef struct moe__row_ops {
  float (*quantize_u8)(const float *x, int64_t n, uint8_t *q);
  void (*to_bf16)(const float *src, uint16_t *dst, int64_t n);
  void (*from_bf16)(const uint16_t *src, float *dst, int64_t n);
  void (*add)(float *acc, const float *y, int64_t n);
} moe__row_ops;

static inline void moe__f32_to_bf16_scalar(const float *src, uint16_t *dst, int64_t n) {
  moe_convert_from_f32(MOE_BF16, src, dst, (size_t)n);
}
static inline void moe__bf16_to_f32_scalar(const uint16_t *src, float *dst, int64_t n) {
  moe_convert_to_f32(MOE_BF16, src, dst, (size_t)n);
}
static inline void moe__add_row_scalar(float *acc, const float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) acc[i] += y[i];
}

/* The row operations of tier isa, or NULL when it has none here (not compiled, or not this CPU).
 * Every tier gives the same bits. */
static inline const moe__row_ops *moe__row_ops_for(moe_isa isa) {
  static const moe__row_ops scalar = {moe_quantize_row_u8, moe__f32_to_bf16_scalar, moe__bf16_to_f32_scalar,
                                      moe__add_row_scalar};
#ifdef MOE__HAVE_AVX512
  static const moe__row_ops avx512 = {moe__quantize_row_u8_avx512, moe__f32_to_bf16_avx512, moe__bf16_to_f32_avx512,
                                      moe__add_row_avx512};
  if (isa == MOE_ISA_AVX512 && (moe_cpu_features() & MOE__CPU_AVX512_BASE) == MOE__CPU_AVX512_BASE) return &avx512;
#endif
#ifdef MOE__HAVE_AVX2
  static const moe__row_ops avx2 = {moe__quantize_row_u8_avx2, moe__f32_to_bf16_avx2, moe__bf16_to_f32_avx2, moe__add_row_avx2};
  if ((isa == MOE_ISA_AVX2 || isa == MOE_ISA_AVX_VNNI) && (moe_cpu_features() & MOE__AVX2_FEATURES) == MOE__AVX2_FEATURES) return &avx2;
#endif
  return isa == MOE_ISA_SCALAR ? &scalar : NULL;
}

/* The row operations of the tier in use: the best tier at or below moe_get_isa() that has them. */
static inline const moe__row_ops *moe__row_ops_get(void) {
  const moe__row_ops *best = moe__row_ops_for(MOE_ISA_SCALAR);
  int rank = 0, top = moe__isa_rank(moe_get_isa());
  for (int i = 0; i < (int)MOE_ISA_COUNT; i++) {
    int r = moe__isa_rank((moe_isa)i);
    const moe__row_ops *ops = r > rank && r <= top ? moe__row_ops_for((moe_isa)i) : NULL;
    if (ops) best = ops, rank = r;
  }
  return best;
}

#endif /* MOE_GEMM_IMPLEMENTATION_DONE */
#endif /* MOE_IMPLEMENTATION */
#endif /* MOE_GEMM_H */

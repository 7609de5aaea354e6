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
/* Packs experts [e0, e0 + part->E) of a model into their place in the packed storage of all of them,
 * for loaders that import a few experts at a time and never hold every plain weight. whole: the
 * descriptor moe_pack() would take for all E experts (checked as moe_pack checks it; its arrays are
 * never read: any non-NULL pointers, and b13/b2 only say whether there are biases); part: the plain
 * weights of part->E experts with the same precision, N, K, blocks and biases present or absent.
 * Fills *packed as moe_pack(whole, ...) would (the same values at every call); the packed experts
 * are complete, and equal to moe_pack's bytes, once every expert was packed once. Calls for
 * different experts may run at the same time on their own moe_experts. Statuses as moe_pack's, and
 * MOE_ERR_EXPERT_ID for a range outside [0, whole->E), MOE_ERR_DESCRIPTOR for a part unlike whole. */
MOE_API moe_status moe_pack_part(const moe_weights *whole, const moe_weights *part, int64_t e0, moe_experts *packed,
                                 void *buf, size_t size);

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
  const int32_t *const *a_group_sum; /* W4A8: mr row pointers, row r's sum of (a - 128) over k group
                               j at a_group_sum[r][j] (moe_sum_groups_u8), or NULL: the kernel sums */
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
  MOE_CPU_AVX512VBMI = 1u << 13, /* byte permutes (vpermb, vpermi2b): the low-bit decoders          */
  MOE_CPU_INTEL = 1u << 14       /* not a feature: the vendor, which picks between kernels of a tier */
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

/* Row operations per tier (moe__row_ops_for, below the tiers): every tier gives the same bits. */
enum { MOE__PW_WORD, MOE__PW_F16, MOE__PW_NIB_C, MOE__PW_NIB_D, MOE__PW_FP8 }; /* the packer's words: see pack_words */
typedef struct moe__row_ops {
  float (*quantize_u8)(const float *x, int64_t n, uint8_t *q);
  void (*to_bf16)(const float *src, uint16_t *dst, int64_t n);
  void (*from_bf16)(const uint16_t *src, float *dst, int64_t n);
  void (*add)(float *acc, const float *y, int64_t n);
  void (*sum_groups_u8)(const uint8_t *q, int64_t n, int32_t group, int32_t *sums); /* moe_sum_groups_u8, unchecked */
  /* the packer's k steps from k0, a column's step one word at byte 4n of its line (kind: copied,
   * fp16 pair to bf16, 4-bit layout (c), layout (d); FP8 pairs in layout (b)); adds int8 codes to
   * sum[n] when sum is not NULL; stream: whole lines go around the cache (the panel was not
   * written before); returns the k it stopped at (NULL: none) */
  int64_t (*pack_words)(const uint8_t *const *src, int32_t nv, int64_t k0, int64_t k_end, int32_t kr, int kind,
                        uint8_t *codes, size_t line, int32_t *sum, int stream);
} moe__row_ops;
static inline const moe__row_ops *moe__row_ops_get(void);

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

/* The meta of column n (row r of m) of a panel: int8's compensation and scale, or the group
 * scales, zero points and e8m0 exponents (sum: the column's int8 codes). */
static inline void moe__pack_meta(const moe__plain_mat *m, int64_t r, int32_t n, int32_t sum, uint8_t *panel, uint8_t *meta,
                                  int64_t ng) {
  moe__meta kind = moe__meta_of(m->p);
  if (kind == MOE__META_CHANNEL) {
    int32_t comp = 128 * sum;
    memcpy(panel + 4 * (size_t)n, &comp, 4);
    memcpy(panel + MOE_NR * 4 + 4 * (size_t)n, &m->scale[r], 4);
  }
  for (int64_t g = 0; g < ng; g++) {
    size_t cell = (size_t)g * MOE_NR + (size_t)n;
    if (kind == MOE__META_BLOCK)
      memcpy(meta + 4 * cell, &m->scale[(r / m->bn) * ng + g], 4);
    else if (kind == MOE__META_E8M0)
      meta[cell] = m->e8m0[r * ng + g];
    else if (kind == MOE__META_GROUP) {
      memcpy(meta + 4 * cell, &m->scale[r * ng + g], 4);
      meta[(size_t)ng * MOE_NR * 4 + cell] = m->zero[r * ng + g];
    }
  }
}

/* Packs rows [r0, r0 + nv) of m (nv <= 32) into one panel (zeroed first), element by element
 * through moe__code_pos: the reference twin of moe__pack_panel (tests compare their bytes). Padded k
 * get the code that decodes to 0: zero, or for GROUP the last group's zero point. */
static inline void moe__pack_panel_scalar(const moe__plain_mat *m, int64_t r0, int32_t nv, uint8_t *panel, size_t bytes) {
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
    moe__pack_meta(m, r, n, sum, panel, meta, ng);
  }
}


/* A column's k step of 4-bit codes as one 32-bit word of its panel line, from the step's plain
 * nibbles w (k0 in the lowest). Layout (c), KR 8: bytes n0|n2<<4, n4|n6<<4, n1|n3<<4, n5|n7<<4.
 * Layout (d), KR 4: nibble j in byte j, low nibbles (shifted up by 4 for columns 16-31). */
static inline uint32_t moe__nibbles_c(uint32_t w) {
  uint32_t e = w & 0x0F0F0F0Fu, o = (w >> 4) & 0x0F0F0F0Fu; /* bytes n0 n2 n4 n6, n1 n3 n5 n7 */
  e |= e >> 4, o |= o >> 4;                                  /* byte 0: n0|n2<<4, byte 2: n4|n6<<4 */
  return (e & 0xFFu) | ((e >> 8) & 0xFF00u) | (o & 0xFFu) << 16 | ((o >> 8) & 0xFF00u) << 16;
}
static inline uint32_t moe__nibbles_d(uint32_t w) {
  uint32_t x = ((w & 0xFFu) | (w & 0xFF00u) << 8);     /* bytes n0|n1<<4, 0, n2|n3<<4, 0 */
  return (x | x << 4) & 0x0F0F0F0Fu;
}
/* 1 when the code positions of every column (moe__code_pos) are the ones moe__nibbles_c / _d write:
 * (c) offsets 0 2 0 2 1 3 1 3 and shifts 0 0 4 4 0 0 4 4 from the column's word; (d) offsets
 * 0 1 2 3, shift 0 for columns 0-15 and 4 for column n + 16 in column n's word. */
static inline int moe__nibble_words(moe_precision p, size_t at[][8], int32_t shift[][8], int32_t nv) {
  static const int8_t off_c[8] = {0, 2, 0, 2, 1, 3, 1, 3}, shift_c[8] = {0, 0, 4, 4, 0, 0, 4, 4};
  const int32_t kr = moe__kr(p);
  for (int32_t n = 0; n < nv; n++)
    for (int32_t j = 0; j < kr; j++) {
      const int ok = kr == 8 ? at[n][j] == at[n][0] + (size_t)off_c[j] && shift[n][j] == shift_c[j]
                             : kr == 4 && at[n][j] == at[n & 15][0] + (size_t)j && shift[n][j] == 4 * (n >> 4);
      if (!ok) return 0;
    }
  return 1;
}

/* moe__pack_panel_scalar's bytes, faster: where a code of column n goes inside a k step depends only
 * on (n, k % KR), so a table of those byte offsets and shifts per column (from moe__code_pos)
 * replaces the per-element position arithmetic; k steps run outermost, so each panel line is
 * written whole while the 32 rows are read in order; where a step's codes of a column lie side by
 * side (layouts (a), (b)) and need no conversion, they are copied as one block. */
static inline void moe__pack_panel(const moe__plain_mat *m, int64_t r0, int32_t nv, uint8_t *panel, size_t bytes) {
  const moe_precision p = m->p;
  const moe__prec_traits *t = moe__traits(p);
  const int32_t kr = t->kr, bits = moe__code_bits(t->code), pbits = moe__code_bits(t->plain);
  const size_t line = (size_t)(MOE_NR * kr * bits / 8), row_bytes = pbits >= 8 ? (size_t)m->cols * (size_t)(pbits / 8) : (size_t)((m->cols + 1) / 2);
  const int64_t kpad = moe__cdiv(m->cols, kr) * kr, ng = m->kgroup ? moe__cdiv(m->cols, m->kgroup) : 0;
  const int group = moe__meta_of(p) == MOE__META_GROUP, channel = moe__meta_of(p) == MOE__META_CHANNEL, f16 = t->plain == MOE__CODE_F16;
  uint8_t *codes = panel + moe__codes_offset(p), *meta = panel + moe__meta_offset(p, kpad);
  const uint8_t *src[MOE_NR];
  size_t at[MOE_NR][8];
  int32_t shift[MOE_NR][8], sum[MOE_NR];
  uint32_t pad[MOE_NR];
  int blocks = bits == pbits && bits >= 8; /* fp16: whole steps too, each half converted to bf16 */
  int64_t (*words)(const uint8_t *const *, int32_t, int64_t, int64_t, int32_t, int, uint8_t *, size_t, int32_t *, int) =
      moe__row_ops_get()->pack_words;
  int64_t k0 = 0;
  for (int32_t n = 0; n < nv; n++) {
    src[n] = (const uint8_t *)m->codes + (size_t)(r0 + n) * row_bytes;
    pad[n] = group ? m->zero[(r0 + n) * ng + ng - 1] : 0;
    sum[n] = 0;
    for (int32_t j = 0; j < kr; j++) at[n][j] = moe__code_pos(p, n, j, &shift[n][j]);
    blocks = blocks && at[n][kr - 1] == at[n][0] + (size_t)((kr - 1) * bits / 8);
  }
  /* A full panel of whole-byte codes, or of 4-bit codes written as words, has every byte of its
   * steps stored (not or'ed) but the tail steps': only those, the meta and the padding are zeroed
   * first (below), not the whole panel (its bytes were written twice: bf16 and int8 packing 0.49 of
   * memcpy at 2 threads), and the vector words stream past the cache. */
  const int nibbles = bits == 4 && pbits == 4 && moe__nibble_words(p, at, shift, nv);
  const int whole = nv == MOE_NR && (blocks || nibbles);
  if (!whole) memset(panel, 0, bytes);
  for (int32_t n = 0; n < nv && words; n++) /* the vector words' places: byte 4n (d: 4 (n % 16)), fp8: (b) */
    if (at[n][0] != (bits == 8 && kr == 2 ? (size_t)moe__pair_pos(n, 0) : 4 * (size_t)(bits == 4 && kr == 4 ? n & 15 : n))) words = NULL;
  if (blocks && f16) { /* fp16 pairs: converted to bf16, one 4-byte word per column and step */
    if (words) k0 = words(src, nv, k0, m->cols, kr, MOE__PW_F16, codes, line, NULL, whole);
    for (; k0 + kr <= m->cols; k0 += kr) {
      uint8_t *dst = codes + (size_t)(k0 / kr) * line;
      for (int32_t n = 0; n < nv; n++) {
        uint16_t h[2];
        memcpy(h, src[n] + 2 * (size_t)k0, 4);
        h[0] = moe_f32_to_bf16(moe_f16_to_f32(h[0])), h[1] = moe_f32_to_bf16(moe_f16_to_f32(h[1]));
        memcpy(dst + at[n][0], h, 4);
      }
    }
  } else if (blocks && kr * bits == 32) { /* bf16 pairs, int8 quads: one 4-byte word per column and step */
    int64_t kv; /* the k the vector words summed int8 codes up to */
    if (words) k0 = words(src, nv, k0, m->cols, kr, MOE__PW_WORD, codes, line, channel ? sum : NULL, whole);
    kv = k0;
    for (; k0 + kr <= m->cols; k0 += kr) {
      uint8_t *dst = codes + (size_t)(k0 / kr) * line;
      for (int32_t n = 0; n < nv; n++) memcpy(dst + at[n][0], src[n] + (size_t)k0 * (size_t)(bits / 8), 4);
    }
    if (channel) /* the int8 codes' sum per column past the vector words (a local sum: src may alias sum[]) */
      for (int32_t n = 0; n < nv; n++) {
        const int8_t *row = (const int8_t *)src[n];
        int32_t acc = 0;
        for (int64_t k = kv; k < k0; k++) acc += row[k];
        sum[n] += acc;
      }
  } else if (blocks && kr * bits == 16) { /* fp8 pairs */
    if (words) k0 = words(src, nv, k0, m->cols, kr, MOE__PW_FP8, codes, line, NULL, whole);
    for (; k0 + kr <= m->cols; k0 += kr) {
      uint8_t *dst = codes + (size_t)(k0 / kr) * line;
      for (int32_t n = 0; n < nv; n++) memcpy(dst + at[n][0], src[n] + k0, 2);
    }
  } else if (nibbles) { /* a step's nibbles: one word per column */
    if (words) k0 = words(src, nv, k0, m->cols, kr, kr == 8 ? MOE__PW_NIB_C : MOE__PW_NIB_D, codes, line, NULL, whole);
    for (; k0 + kr <= m->cols; k0 += kr) {
      uint8_t *dst = codes + (size_t)(k0 / kr) * line;
      if (kr == 8) /* (c): the column's own word */
        for (int32_t n = 0; n < nv; n++) {
          uint32_t w, v;
          memcpy(&w, src[n] + k0 / 2, 4);
          v = moe__nibbles_c(w);
          memcpy(dst + at[n][0], &v, 4);
        }
      else /* (d): columns n and n + 16 share a word, low and high nibbles */
        for (int32_t n = 0; n < (nv < 16 ? nv : 16); n++) {
          uint16_t lo, hi = 0;
          uint32_t v;
          memcpy(&lo, src[n] + k0 / 2, 2);
          if (n + 16 < nv) memcpy(&hi, src[n + 16] + k0 / 2, 2);
          v = moe__nibbles_d(lo) | moe__nibbles_d(hi) << 4;
          memcpy(dst + at[n][0], &v, 4);
        }
    }
  }
  if (whole) { /* the tail steps, the meta and the padding */
    const size_t at0 = (size_t)(codes - panel) + (size_t)(k0 / kr) * line;
    memset(panel + at0, 0, bytes - at0);
  }
  for (; k0 < kpad; k0 += kr) {
    uint8_t *dst = codes + (size_t)(k0 / kr) * line;
    for (int32_t n = 0; n < nv; n++)
      for (int32_t j = 0; j < kr; j++) {
        const int64_t k = k0 + j;
        uint32_t code;
        if (k >= m->cols) code = pad[n];
        else if (pbits == 16) {
          uint16_t v;
          memcpy(&v, src[n] + 2 * (size_t)k, 2);
          code = f16 ? moe_f32_to_bf16(moe_f16_to_f32(v)) : v;
        } else if (pbits == 8) code = src[n][k];
        else code = moe__nibble(src[n], k);
        if (bits == 16) {
          const uint16_t v = (uint16_t)code;
          memcpy(dst + at[n][j], &v, 2);
        } else dst[at[n][j]] |= (uint8_t)(code << shift[n][j]);
        if (channel) sum[n] += (int8_t)code;
      }
  }
  for (int32_t n = 0; n < nv; n++) moe__pack_meta(m, r0 + n, n, sum[n], panel, meta, ng);
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

/* A pack's independent units: the panels of every expert, W13's then W2's (u < moe__pack_units). */
static inline int64_t moe__pack_units(const moe_weights *plain, const moe__pack_plan *pl) {
  return plain->E * (pl->panels13 + pl->panels2);
}
/* Packs unit u of plain's experts into W13 panels from w13 on and W2 panels from w2 on. */
static inline void moe__pack_unit_into(const moe_weights *plain, const moe__pack_plan *pl, uint8_t *w13, uint8_t *w2, int64_t u) {
  const int64_t per13 = plain->E * pl->panels13;
  if (u < per13) { /* W13 panel pair hp of expert e: gate rows, then up rows */
    const int64_t e = u / pl->panels13, q = u % pl->panels13, hp = q / 2;
    const moe__plain_mat m = moe__plain_of(plain, pl, 13, e);
    const int32_t nv = (int32_t)(plain->N - hp * MOE_NR < MOE_NR ? plain->N - hp * MOE_NR : MOE_NR);
    moe__pack_panel(&m, (q & 1 ? plain->N : 0) + hp * MOE_NR, nv, w13 + (size_t)u * pl->panel13_bytes, pl->panel13_bytes);
  } else {
    const int64_t v = u - per13, e = v / pl->panels2, q = v % pl->panels2;
    const moe__plain_mat m = moe__plain_of(plain, pl, 2, e);
    const int32_t nv = (int32_t)(plain->K - q * MOE_NR < MOE_NR ? plain->K - q * MOE_NR : MOE_NR);
    moe__pack_panel(&m, q * MOE_NR, nv, w2 + (size_t)v * pl->panel2_bytes, pl->panel2_bytes);
  }
}
/* Packs unit u into the packed storage at base. */
static inline void moe__pack_unit(const moe_weights *plain, const moe__pack_plan *pl, uint8_t *base, int64_t u) {
  moe__pack_unit_into(plain, pl, base, base + pl->w13_bytes, u);
}

/* Validates a pack and lays out *packed in buf (no panel written yet); *base: the aligned storage. */
static inline moe_status moe__pack_begin(const moe_weights *plain, moe_experts *packed, void *buf, size_t size,
                                         moe__pack_plan *pl, uint8_t **base) {
  moe_status st;
  if (!plain || !packed || !buf) return MOE_ERR_NULL;
  st = moe__plan_pack(plain, pl);
  if (st != MOE_OK) return st;
  if (size < pl->total) return MOE_ERR_BUFFER;
  *base = (uint8_t *)buf + ((64 - ((uintptr_t)buf & 63)) & 63);
  memset(packed, 0, sizeof *packed);
  packed->precision = plain->precision;
  packed->E = plain->E, packed->N = plain->N, packed->K = plain->K;
  packed->block_n = pl->block_n, packed->block_k = pl->block_k, packed->group = pl->group;
  packed->kr = pl->kr, packed->k13_pad = pl->k13_pad, packed->k2_pad = pl->k2_pad;
  packed->panels13 = pl->panels13, packed->panels2 = pl->panels2;
  packed->panel13_bytes = pl->panel13_bytes, packed->panel2_bytes = pl->panel2_bytes;
  packed->w13 = *base;
  packed->w2 = *base + pl->w13_bytes;
  return MOE_OK;
}

/* The biases of plain's experts (experts e0.. of the layout pl) after the panels, and the magic. */
static inline void moe__pack_end(const moe_weights *plain, moe_experts *packed, const moe__pack_plan *pl, uint8_t *base,
                                 int64_t e0) {
  if (plain->b13) {
    float *b = (float *)(base + pl->w13_bytes + pl->w2_bytes);
    memcpy(b + (size_t)e0 * 2 * (size_t)plain->N, plain->b13, (size_t)plain->E * 2 * (size_t)plain->N * sizeof(float));
    packed->b13 = b;
  }
  if (plain->b2) {
    float *b = (float *)(base + pl->w13_bytes + pl->w2_bytes + pl->b13_bytes);
    memcpy(b + (size_t)e0 * (size_t)plain->K, plain->b2, (size_t)plain->E * (size_t)plain->K * sizeof(float));
    packed->b2 = b;
  }
  packed->magic = MOE__MAGIC;
}

MOE_API moe_status moe_pack(const moe_weights *plain, moe_experts *packed, void *buf, size_t size) {
  moe__pack_plan pl;
  uint8_t *base = NULL;
  moe_status st = moe__pack_begin(plain, packed, buf, size, &pl, &base);
  if (st != MOE_OK) return st;
  for (int64_t u = 0; u < moe__pack_units(plain, &pl); u++) moe__pack_unit(plain, &pl, base, u);
  moe__pack_end(plain, packed, &pl, base, 0);
  return MOE_OK;
}

MOE_API moe_status moe_pack_part(const moe_weights *whole, const moe_weights *part, int64_t e0, moe_experts *packed,
                                 void *buf, size_t size) {
  moe__pack_plan pl, pp;
  uint8_t *base = NULL, *w13, *w2;
  moe_status st;
  if (!whole || !part || !packed || !buf) return MOE_ERR_NULL;
  if ((st = moe__plan_pack(whole, &pl)) != MOE_OK || (st = moe__plan_pack(part, &pp)) != MOE_OK) return st;
  if (part->precision != whole->precision || part->N != whole->N || part->K != whole->K || pp.block_n != pl.block_n ||
      pp.block_k != pl.block_k || pp.group != pl.group || !part->b13 != !whole->b13 || !part->b2 != !whole->b2)
    return MOE_ERR_DESCRIPTOR;
  if (e0 < 0 || e0 > whole->E - part->E) return MOE_ERR_EXPERT_ID;
  if ((st = moe__pack_begin(whole, packed, buf, size, &pl, &base)) != MOE_OK) return st; /* everything checked: *packed laid out */
  w13 = base + (size_t)e0 * (size_t)pl.panels13 * pl.panel13_bytes;
  w2 = base + pl.w13_bytes + (size_t)e0 * (size_t)pl.panels2 * pl.panel2_bytes;
  for (int64_t u = 0; u < moe__pack_units(part, &pp); u++) moe__pack_unit_into(part, &pp, w13, w2, u);
  moe__pack_end(part, packed, &pl, base, e0); /* part's biases: experts e0.. of the whole layout */
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
  if (r[1] == 0x756E6547u && r[3] == 0x49656E69u && r[2] == 0x6C65746Eu) f |= MOE_CPU_INTEL; /* "GenuineIntel" */
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

/* ---- THE ISA TABLE -------------------------------------------------------------------------------
 * One row per instruction set a kernel is compiled for: its target attribute (GCC/Clang
 * target("..."): no -m flags needed) beside the MOE_CPU_* bits a CPU must report to run it, so the
 * two vocabularies cannot drift. The tiers' function attributes (moe_tiers/), the kernel list's
 * feature column and the row operations' checks name these rows; the tiers themselves are the
 * MOE__ISA_LIST below (rank, name) and their MOE_NO_* gates are the MOE__HAVE_* of each tier header.
 *   row              target string                            CPU bits                           */
#define MOE__T_AVX512 "avx512f,avx512bw,avx512vl,avx512dq"
#define MOE__F_AVX512 (MOE_CPU_AVX512F | MOE_CPU_AVX512BW | MOE_CPU_AVX512VL | MOE_CPU_AVX512DQ)
#define MOE__T_AVX512_VNNI MOE__T_AVX512 ",avx512vnni"
#define MOE__F_AVX512_VNNI (MOE__F_AVX512 | MOE_CPU_AVX512VNNI)
#define MOE__T_AVX512_BF16 MOE__T_AVX512 ",avx512bf16"
#define MOE__F_AVX512_BF16 (MOE__F_AVX512 | MOE_CPU_AVX512BF16)
#define MOE__T_AVX512_VBMI MOE__T_AVX512 ",avx512vbmi"
#define MOE__F_AVX512_VBMI (MOE__F_AVX512 | MOE_CPU_AVX512VBMI)
#define MOE__T_AVX512_BF16_VBMI MOE__T_AVX512 ",avx512bf16,avx512vbmi" /* FP8's decode and dot */
#define MOE__F_AVX512_BF16_VBMI (MOE__F_AVX512_BF16 | MOE_CPU_AVX512VBMI)
#define MOE__T_AMX_HOST MOE__T_AVX512 ",avx512bf16,avx512vnni,avx512vbmi" /* the AMX tier's vector code */
#define MOE__F_AMX_HOST (MOE__F_AVX512_BF16_VBMI | MOE_CPU_AVX512VNNI)
#define MOE__T_AMX MOE__T_AMX_HOST ",amx-tile,amx-bf16,amx-int8"
#define MOE__F_AMX (MOE__F_AMX_HOST | MOE_CPU_AMX_TILE | MOE_CPU_AMX_BF16 | MOE_CPU_AMX_INT8)
#define MOE__T_AVX2 "avx2,fma,f16c"
#define MOE__F_AVX2 (MOE_CPU_AVX2 | MOE_CPU_FMA | MOE_CPU_F16C)
#define MOE__T_AVX_VNNI MOE__T_AVX2 ",avxvnni"
#define MOE__F_AVX_VNNI (MOE__F_AVX2 | MOE_CPU_AVX_VNNI)

/* ---- the tiers' gates and function attributes, from the rows above -------------------------------
 * A SIMD tier compiles on x86 with GCC or Clang (target attributes) unless MOE_NO_<TIER> is defined;
 * its functions carry the target string of their ISA row. The AMX tier's gate (on top of AVX-512's)
 * is in moe_tiers/amx.h. */
#if defined(MOE__X86) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#ifndef MOE_NO_AVX512
#define MOE__HAVE_AVX512 1
#endif
#ifndef MOE_NO_AVX2
#define MOE__HAVE_AVX2 1
#endif
#endif
#define MOE__AVX512_BASE __attribute__((target(MOE__T_AVX512))) static inline
#define MOE__AVX512_VNNI __attribute__((target(MOE__T_AVX512_VNNI))) static inline
#define MOE__AVX512_BF16 __attribute__((target(MOE__T_AVX512_BF16))) static inline
#define MOE__AVX512_VBMI __attribute__((target(MOE__T_AVX512_VBMI))) static inline
#define MOE__AVX512_FP8 __attribute__((target(MOE__T_AVX512_BF16_VBMI))) static inline
/* the same targets for functions that must stay out of line */
#define MOE__AVX512_FP8_FN __attribute__((target(MOE__T_AVX512_BF16_VBMI))) static
#define MOE__AVX512_BASE_FN __attribute__((target(MOE__T_AVX512))) static
#define MOE__AVX512_VNNI_FN __attribute__((target(MOE__T_AVX512_VNNI))) static
#define MOE__AVX512_BF16_FN __attribute__((target(MOE__T_AVX512_BF16))) static
#define MOE__AVX2 __attribute__((target(MOE__T_AVX2))) static inline
#define MOE__AVXVNNI __attribute__((target(MOE__T_AVX_VNNI))) static inline
#define MOE__AVX2_INLINE __attribute__((target(MOE__T_AVX2), always_inline)) static inline
#define MOE__AVXVNNI_INLINE __attribute__((target(MOE__T_AVX_VNNI), always_inline)) static inline
#define MOE__INLINE __attribute__((always_inline))
/* Each tile height is its own function (a compile-time MR, never inlined back into one). */
#define MOE__NOINLINE __attribute__((noinline))
#define MOE__ALIGN64 __attribute__((aligned(64)))

/* A call's mr rows run in ceil(mr / tile) tiles of balanced heights, the first mr % tiles one row
 * taller (7 rows of 4: 4 + 3; 12 of 5: 4 + 4 + 4): tile t's rows (the AVX-512 and AVX2 tiles). */
static inline int32_t moe__tile_rows(int32_t mr, int tile, int32_t t) {
  const int32_t tiles = (mr + tile - 1) / tile;
  return mr / tiles + (t < mr % tiles);
}
/* ... and its inverse: the tile that starts at row r0 (the AVX-512 w_next prefetch shares). */
static inline int32_t moe__tile_at(int32_t mr, int tile, int32_t r0) {
  const int32_t tiles = (mr + tile - 1) / tile, base = mr / tiles, tall = mr % tiles;
  return r0 < tall * (base + 1) ? r0 / (base + 1) : tall + (r0 - tall * (base + 1)) / base;
}

/* ---- the SIMD and tile tiers (moe_tiers/): each compiles to nothing where its ISA is off ---------
 *   decode.h                                 every precision's decoders, the tiers side by side
 *   avx512.h (+ avx512_tiles.h, generated)   AVX-512 F/BW/VL/DQ, VNNI, BF16, VBMI
 *   amx.h                                    AMX-BF16/INT8 (shares the AVX-512 decoders, avx512.h's epilogues)
 *   avx2.h                                   AVX2+FMA+F16C and AVX-VNNI */
/* GCC 12's own avx512fintrin.h initialises _mm512_undefined_*() with itself, which g++ reports
 * as -Wuninitialized wherever the intrinsics are inlined (GCC PR 105593, fixed in GCC 13). */
#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define MOE__GCC_DIAG_PUSHED 1
#endif
#include "moe_tiers/decode.h"
#include "moe_tiers/avx512.h"
#include "moe_tiers/amx.h"
#include "moe_tiers/avx2.h"
#ifdef MOE__GCC_DIAG_PUSHED
#pragma GCC diagnostic pop
#undef MOE__GCC_DIAG_PUSHED
#endif

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
#define MOE__KERNEL_LIST(X)                                                                                        \
  MOE__IF_BF16(X(MOE_PREC_BF16, MOE_ISA_SCALAR, bf16_bf16w, 32x32c2, 32x64c2, scalar, 32, 32, 2, 32, 64, 0, "scalar"))  \
  MOE__IF_BF16(X(MOE_PREC_FP16, MOE_ISA_SCALAR, bf16_bf16w, 32x32c2, 32x64c2, scalar, 32, 32, 2, 32, 64, 0, "scalar"))  \
  MOE__IF_INT8(X(MOE_PREC_INT8, MOE_ISA_SCALAR, qu8_qc8w, 32x32c4, 32x64c4, scalar, 32, 32, 4, 32, 64, 0, "scalar"))    \
  MOE__IF_FP8(X(MOE_PREC_FP8, MOE_ISA_SCALAR, bf16_fp8w, 32x32c2, 32x64c2, scalar, 32, 32, 2, 32, 64, 0, "scalar"))     \
  MOE__IF_INT4(X(MOE_PREC_INT4_W4A8, MOE_ISA_SCALAR, qu8_qc4w, 32x32c4, 32x64c4, scalar, 32, 32, 4, 32, 64, 0, "scalar")) \
  MOE__IF_INT4(X(MOE_PREC_INT4_W4A16, MOE_ISA_SCALAR, bf16_qc4w, 32x32c8, 32x64c8, scalar, 32, 32, 8, 32, 64, 0, "scalar")) \
  MOE__IF_MXFP4(X(MOE_PREC_MXFP4, MOE_ISA_SCALAR, bf16_mxfp4w, 32x32c8, 32x64c8, scalar, 32, 32, 8, 32, 64, 0, "scalar")) \
  MOE__IF_AVX512(MOE__IF_BF16(X(MOE_PREC_BF16, MOE_ISA_AVX512, bf16_bf16w, 5x32c2, 5x64c2_12x32c2, avx512bf16,          \
                                5, 32, 2, 5, 64, MOE__F_AVX512_BF16, "vdpbf16ps")))                            \
  MOE__IF_AVX512(MOE__IF_BF16(X(MOE_PREC_FP16, MOE_ISA_AVX512, bf16_bf16w, 5x32c2, 5x64c2_12x32c2, avx512bf16,          \
                                5, 32, 2, 5, 64, MOE__F_AVX512_BF16, "vdpbf16ps")))                            \
  MOE__IF_AVX512(MOE__IF_INT8(X(MOE_PREC_INT8, MOE_ISA_AVX512, qu8_qc8w, 5x32c4, 5x64c4_12x32c4, avx512vnni,            \
                                5, 32, 4, 5, 64, MOE__F_AVX512_VNNI, "vpdpbusd")))                             \
  MOE__IF_AVX512(MOE__IF_FP8(X(MOE_PREC_FP8, MOE_ISA_AVX512, bf16_fp8w, 5x32c2, 5x64c2, avx512bf16,             \
                               5, 32, 2, 5, 64, MOE__F_AVX512_BF16_VBMI, "vdpbf16ps")))                        \
  MOE__IF_AVX512(MOE__IF_INT4(X(MOE_PREC_INT4_W4A8, MOE_ISA_AVX512, qu8_qc4w, 5x32c4, 5x64c4, avx512vnni,       \
                                5, 32, 4, 5, 64, MOE__F_AVX512_VNNI, "vpdpbusd")))                             \
  MOE__IF_AVX512(MOE__IF_INT4(X(MOE_PREC_INT4_W4A16, MOE_ISA_AVX512, bf16_qc4w, 5x32c2, 5x64c2, avx512bf16,     \
                                5, 32, 2, 5, 64, MOE__F_AVX512_BF16, "vdpbf16ps")))                            \
  MOE__IF_AVX512(MOE__IF_MXFP4(X(MOE_PREC_MXFP4, MOE_ISA_AVX512, bf16_mxfp4w, 5x32c2, 5x64c2, avx512bf16,       \
                                 5, 32, 2, 5, 64, MOE__F_AVX512_BF16, "vdpbf16ps")))                          \
  MOE__IF_AVX512(MOE__IF_INT4(X(MOE_PREC_INT4_W4A16, MOE_ISA_AVX512, bf16_qc4w, 4x32c2, 4x64c2, avx512fma,      \
                                4, 32, 2, 4, 64, MOE__F_AVX512, "vfmadd231ps")))                               \
  MOE__IF_AVX512(MOE__IF_MXFP4(X(MOE_PREC_MXFP4, MOE_ISA_AVX512, bf16_mxfp4w, 4x32c2, 4x64c2, avx512fma,        \
                                 4, 32, 2, 4, 64, MOE__F_AVX512, "vfmadd231ps")))                             \
  MOE__IF_AVX2(MOE__IF_BF16(X(MOE_PREC_BF16, MOE_ISA_AVX2, bf16_bf16w, 4x16c2, 4x16c2, avx2, 4, 16, 2, 4, 16,               \
                              MOE__F_AVX2, "vfmadd231ps-ymm")))                                                      \
  MOE__IF_AVX2(MOE__IF_BF16(X(MOE_PREC_FP16, MOE_ISA_AVX2, bf16_bf16w, 4x16c2, 4x16c2, avx2, 4, 16, 2, 4, 16,               \
                              MOE__F_AVX2, "vfmadd231ps-ymm")))                                                      \
  MOE__IF_AVX2(MOE__IF_INT8(X(MOE_PREC_INT8, MOE_ISA_AVX2, qu8_qc8w, 4x16c4, 4x16c4, avx2, 4, 16, 4, 4, 16,                 \
                              MOE__F_AVX2, "vpmaddubsw")))                                                       \
  MOE__IF_AVX2(MOE__IF_INT8(X(MOE_PREC_INT8, MOE_ISA_AVX_VNNI, qu8_qc8w, 6x16c4, 6x16c4, avxvnni, 6, 16, 4, 6, 16,          \
                              MOE__F_AVX_VNNI, "vpdpbusd-ymm")))                                                  \
  MOE__IF_AVX2(MOE__IF_FP8(X(MOE_PREC_FP8, MOE_ISA_AVX2, bf16_fp8w, 4x16c2, 4x16c2, avx2, 4, 16, 2, 4, 16,                 \
                             MOE__F_AVX2, "vfmadd231ps-ymm")))                                                   \
  MOE__IF_AVX2(MOE__IF_INT4(X(MOE_PREC_INT4_W4A8, MOE_ISA_AVX2, qu8_qc4w, 4x16c4, 4x16c4, avx2, 4, 16, 4, 4, 16,           \
                              MOE__F_AVX2, "vpmaddubsw")))                                                       \
  MOE__IF_AVX2(MOE__IF_INT4(X(MOE_PREC_INT4_W4A8, MOE_ISA_AVX_VNNI, qu8_qc4w, 4x16c4, 4x16c4, avxvnni, 4, 16, 4, 4, 16,    \
                              MOE__F_AVX_VNNI, "vpdpbusd-ymm")))                                                  \
  MOE__IF_AVX2(MOE__IF_INT4(X(MOE_PREC_INT4_W4A16, MOE_ISA_AVX2, bf16_qc4w, 4x16c2, 4x16c2, avx2, 4, 16, 2, 4, 16,         \
                              MOE__F_AVX2, "vfmadd231ps-ymm")))                                                  \
  MOE__IF_AVX2(MOE__IF_MXFP4(X(MOE_PREC_MXFP4, MOE_ISA_AVX2, bf16_mxfp4w, 4x16c2, 4x16c2, avx2, 4, 16, 2, 4, 16,           \
                               MOE__F_AVX2, "vfmadd231ps-ymm")))                                                 \
  MOE__IF_AMX(MOE__IF_BF16(X(MOE_PREC_BF16, MOE_ISA_AMX, bf16_bf16w, 32x32c2, 32x64c2, amx, 32, 32, 2, 32, 64,            \
                             MOE__AMX_FEATURES, "tdpbf16ps")))                                                     \
  MOE__IF_AMX(MOE__IF_BF16(X(MOE_PREC_FP16, MOE_ISA_AMX, bf16_bf16w, 32x32c2, 32x64c2, amx, 32, 32, 2, 32, 64,            \
                             MOE__AMX_FEATURES, "tdpbf16ps")))                                                     \
  MOE__IF_AMX(MOE__IF_INT8(X(MOE_PREC_INT8, MOE_ISA_AMX, qu8_qc8w, 32x32c4, 32x64c4, amx, 32, 32, 4, 32, 64,              \
                             MOE__AMX_FEATURES, "tdpbusd")))                                                       \
  MOE__IF_AMX(MOE__IF_FP8(X(MOE_PREC_FP8, MOE_ISA_AMX, bf16_fp8w, 32x32c2, 32x64c2, amx, 32, 32, 2, 32, 64,               \
                            MOE__AMX_FEATURES, "tdpbf16ps")))                                                      \
  MOE__IF_AMX(MOE__IF_INT4(X(MOE_PREC_INT4_W4A8, MOE_ISA_AMX, qu8_qc4w, 32x32c4, 32x64c4, amx, 32, 32, 4, 32, 64,         \
                             MOE__AMX_FEATURES, "tdpbusd")))                                                       \
  MOE__IF_AMX(MOE__IF_INT4(X(MOE_PREC_INT4_W4A16, MOE_ISA_AMX, bf16_qc4w, 32x32c2, 32x64c2, amx, 32, 32, 2, 32, 64,       \
                             MOE__AMX_FEATURES, "tdpbf16ps")))                                                     \
  MOE__IF_AMX(MOE__IF_MXFP4(X(MOE_PREC_MXFP4, MOE_ISA_AMX, bf16_mxfp4w, 32x32c2, 32x64c2, amx, 32, 32, 2, 32, 64,         \
                              MOE__AMX_FEATURES, "tdpbf16ps")))

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

/* Where a tier has two kernels for a precision (the 4-bit bf16-activation codes on AVX-512: the
 * vdpbf16ps row and the f32 FMA row, the same bits bar subnormals), the list's first runs, except
 * that Intel's cores take the FMA row: they run a 512-bit vdpbf16ps every second cycle and two FMAs
 * per cycle (Emerald Rapids: the FMA rows run 32-row calls 1.2-1.3x faster in cache; design.md), where
 * AMD's Zen 4/5 run vdpbf16ps at twice their FMA rate. */
static inline int moe__kernel_preferred(const moe_gemm_config *k) {
  return (moe_cpu_features() & MOE_CPU_INTEL) && strcmp(k->dot, "vfmadd231ps") == 0;
}

MOE_API const moe_gemm_config *moe_gemm_config_for(moe_precision p, moe_isa isa) {
  const moe_gemm_config *best = NULL;
  for (int i = 0; i < moe_kernel_count(); i++) {
    const moe_gemm_config *k = &moe__kernels[i];
    if (k->precision == p && k->isa == isa && moe_kernel_runnable(k) && (!best || moe__kernel_preferred(k))) best = k;
  }
  return best;
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
    if (k->precision == p && moe__isa_allowed(k->isa) && moe_kernel_runnable(k) &&
        (!best || moe__isa_rank(k->isa) > moe__isa_rank(best->isa) ||
         (k->isa == best->isa && moe__kernel_preferred(k))))
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

/* ---- the tier policy: AMX or AVX-512 per call and per block ------------------------------------
 * On the AMX tier, few rows run the AVX-512 kernel: a tile op computes 16 rows whatever the block
 * holds, so at r rows AMX does r/16 of its work usefully, and a block of few rows is bound by the
 * weight stream, which the AVX-512 kernels (decoding in registers) keep at DRAM speed. int8 and
 * W4A8 give the same bits on both tiers, so they choose per block (below MOE__AMX_MIN_ROWS rows:
 * AVX-512). The bf16-activation precisions round differently on the tiles, so they choose once per
 * call, as the reference does, from the average rows per expert (slots / experts against
 * MOE__AMX_MIN_ROWS): then a token's bits depend neither on the thread count nor on the chunk size.
 * The crossover, measured on Emerald Rapids (bench_kernels --rows R in cache, then bench_layer
 * M = 16..256; docs/amx.md): only W4A8 gained in the layer from another value than 4 (8, where its
 * tiles overtake AVX-512 since they decode q - zero); in cache the bf16-activation precisions cross
 * at 2-3 rows, which made no difference in the layer.
 * MOE_AMX_MIN_ROWS, when defined, sets one value for all. */
#ifdef MOE_AMX_MIN_ROWS
#define MOE__AMX_MIN_ROWS(p) (MOE_AMX_MIN_ROWS)
#else
#define MOE__AMX_MIN_ROWS(p) ((p) == MOE_PREC_INT4_W4A8 ? 8 : 4)
#endif
/* The kernels of a call of `slots` rows over `experts` experts: the result runs blocks of at least
 * MOE__AMX_MIN_ROWS rows, *small the smaller ones (NULL: the result runs every block). NULL when
 * the precision is compiled out. */
static inline const moe_gemm_config *moe__tier_policy(moe_precision p, int64_t slots, int64_t experts,
                                                      const moe_gemm_config **small) {
  const moe_gemm_config *kern = moe_gemm_select(p);
  *small = kern && kern->isa == MOE_ISA_AMX ? moe_gemm_config_for(p, MOE_ISA_AVX512) : NULL;
  if (*small && !moe__is_a8(p)) { /* bf16 activations: one choice per call */
    if (slots < (int64_t)MOE__AMX_MIN_ROWS(p) * experts) kern = *small;
    *small = NULL;
  }
  return kern;
}

/* MXFP4 prefill on the AVX-512 tier, folded: a worker decodes each panel pair of an expert once into
 * its scratch as bf16 panels, every e8m0 scale folded into its weights (exact for scales in
 * [2, 252]; a pair with another scale runs the MXFP4 kernel), and every block of the expert runs the
 * dense bf16 kernel over them: no decoder and no scale group's end in the tiles, one f32 chain per
 * output through all of K. Its bits differ from the grouped kernel's, so the layer chooses once per
 * call, from the average rows per expert (slots / experts against MOE__FOLD_MIN_ROWS), as it
 * chooses AMX; below it the decode of a whole pair costs more than it saves (Zen 5, Qwen3-30B-A3B
 * and gpt-oss-20b: 16 rows 1.03-1.05x the time, 20 rows 1.00x, 24 rows 0.94-0.96x, 32 rows 0.92x,
 * 128 rows 0.89x; bench/RESULTS.md, twenty-eighth sitting; with 5-row tiles, thirty-first: 20 rows
 * 1.02x, 24 rows 0.95x). Only where the MXFP4 kernel is the vdpbf16ps one (Zen 4/5; Intel's cores
 * run the f32 one and AMX decodes in its own way). The dense kernels (the list's bf16 row, also
 * where MOE_NO_BF16 leaves it out of the list), or NULL. */
#ifndef MOE__FOLD_MIN_ROWS
#define MOE__FOLD_MIN_ROWS 24
#endif
static inline const moe_gemm_config *moe__fold_policy(const moe_gemm_config *kern, int64_t slots, int64_t experts) {
#if defined(MOE__HAVE_AVX512) && MOE__ON_MXFP4
  static const moe_gemm_config dense[] = {MOE__KERNEL_ROW(MOE_PREC_BF16, MOE_ISA_AVX512, bf16_bf16w, 5x32c2, 5x64c2_12x32c2,
                                                         avx512bf16, 5, 32, 2, 5, 64, MOE__F_AVX512_BF16, "vdpbf16ps")};
  if (kern && kern->gemm1 == moe_bf16_mxfp4w_gemm1_ukernel_5x32c2__avx512bf16 && slots >= MOE__FOLD_MIN_ROWS * experts)
    return dense;
#else
  (void)kern, (void)slots, (void)experts;
#endif
  return NULL;
}
/* Bytes of a GEMM's decoded panel pair on the folded path (reduction padded to kpad), or 0 when it
 * does not fold: the pair must stay in L2 (Zen 4/5: 1 MB) beside the codes streaming in. Zen 5:
 * DeepSeek-V3's GEMM1 pair of 917 KB ran in 0.90 of the time, Llama-4-Scout's GEMM2 pair of 1 MB in
 * 1.0, Mixtral's of 1.8 MB in 1.0-1.17 (bench/RESULTS.md, twenty-eighth sitting). */
#ifndef MOE__FOLD_MAX_BYTES
#define MOE__FOLD_MAX_BYTES (960 << 10)
#endif
static inline size_t moe__fold_bytes(int64_t kpad) {
  const size_t b = 2 * (size_t)kpad * 64; /* two panels of kpad / 2 lines of 128 bytes */
  return b <= MOE__FOLD_MAX_BYTES ? b : 0;
}
/* np MXFP4 panels to the folded path's bf16 panels (moe__mxfp4_to_bf16_avx512); 0 when not folded. */
static inline int moe__fold_panels(const uint8_t *w, size_t panel_bytes, int np, const int32_t *nv, int64_t kred, int64_t kpad,
                                   uint8_t *dst) {
#if defined(MOE__HAVE_AVX512) && MOE__ON_MXFP4
  return moe__mxfp4_to_bf16_avx512(w, panel_bytes, np, nv, kred, kpad, dst);
#else
  (void)w, (void)panel_bytes, (void)np, (void)nv, (void)kred, (void)kpad, (void)dst;
  return 0;
#endif
}

/* Ends this thread's use of AMX tiles, if it made any (a no-op without the AMX tier). */
static inline void moe__tiles_release(void) {
#ifdef MOE__HAVE_AMX
  if (moe__amx_loaded) moe__amx_release();
#endif
}

/* ---- row operations of the layer (quantize and convert rows, accumulate), per tier ------------ */

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
                                      moe__add_row_scalar, moe__sum_groups_u8_scalar, NULL};
#ifdef MOE__HAVE_AVX512
  static const moe__row_ops avx512 = {moe__quantize_row_u8_avx512, moe__f32_to_bf16_avx512, moe__bf16_to_f32_avx512,
                                      moe__add_row_avx512, moe__sum_groups_u8_avx512, moe__pack_words_avx512};
  if (isa == MOE_ISA_AVX512 && (moe_cpu_features() & MOE__F_AVX512) == MOE__F_AVX512) return &avx512;
#endif
#ifdef MOE__HAVE_AVX2
  static const moe__row_ops avx2 = {moe__quantize_row_u8_avx2, moe__f32_to_bf16_avx2, moe__bf16_to_f32_avx2, moe__add_row_avx2,
                                    moe__sum_groups_u8_avx2, moe__pack_words_avx2};
  if ((isa == MOE_ISA_AVX2 || isa == MOE_ISA_AVX_VNNI) && (moe_cpu_features() & MOE__F_AVX2) == MOE__F_AVX2) return &avx2;
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

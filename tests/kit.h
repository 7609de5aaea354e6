/* kit.h — what the tests, benchmarks and examples share: a seeded RNG with independent streams, the
 * model shapes of REFERENCE.md, random plain weights of every precision (through the library's own
 * quantizers, or random codes drawn directly for big benchmarks), packing, and random activations
 * and routing. Plain static inline C99 that compiles as C and C++ (-Wall -Wextra -Wpedantic),
 * with or without MOE_IMPLEMENTATION; it includes moe.h itself.
 *
 *   kit_weights kw;
 *   kit_weights_random(&kw, MOE_PREC_INT8, E, N, K, seed, KIT_BIAS);   // kw.w: the descriptor
 *   moe_experts ex;
 *   void *buf = kit_pack(&kw.w, &ex);                                   // malloc + moe_pack
 *   ...
 *   free(buf), kit_weights_free(&kw);
 *
 * Every expert (and every matrix of it) draws from its own RNG stream, so the data do not depend on
 * the order or the threads that generate them (OpenMP, when compiled with it, runs the experts in
 * parallel), and the f32 weights of one seed are the same numbers in every precision. */
#ifndef MOE_KIT_H
#define MOE_KIT_H

#include "../moe.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- memory ---------------------------------------------------------------------------------- */
/* malloc that never returns NULL (exits with a message); n = 0 gives a valid 1-byte block */
static inline void *kit_malloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "kit: out of memory (%zu bytes)\n", n);
    exit(2);
  }
  return p;
}
static inline void *kit_calloc(size_t n) {
  void *p = calloc(n ? n : 1, 1);
  if (!p) {
    fprintf(stderr, "kit: out of memory (%zu bytes)\n", n);
    exit(2);
  }
  return p;
}

/* ---- RNG: splitmix64 ------------------------------------------------------------------------- */
typedef struct kit_rng { uint64_t s; } kit_rng;

/* the splitmix64 output function: a bijective 64-bit mix */
static inline uint64_t kit_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline uint64_t kit_next(kit_rng *r) { return kit_mix(r->s += 0x9E3779B97F4A7C15ull); }
/* Stream `stream` of `seed`: a generator whose start is a hash of both, so streams of one seed (one
 * per expert, per matrix, per thread) are independent and each reproducible on its own. */
static inline kit_rng kit_rng_stream(uint64_t seed, uint64_t stream) {
  kit_rng r;
  r.s = kit_mix(seed ^ kit_mix(stream + 0x632BE59BD9B4E019ull));
  return r;
}
/* uniform in [0, 1), 53 bits */
static inline double kit_uniform(kit_rng *r) { return (double)(kit_next(r) >> 11) * (1.0 / 9007199254740992.0); }
/* standard normal (Box-Muller, one value per two draws) */
static inline double kit_normal(kit_rng *r) {
  double u1 = kit_uniform(r), u2 = kit_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
/* about N(0, 1) from one draw: four 16-bit uniforms summed (Irwin-Hall), mean 0, variance 1,
 * support +-3.46. Cheap enough for billions of weights. */
static inline float kit_normal_fast(kit_rng *r) {
  uint64_t v = kit_next(r);
  int64_t sum = (int64_t)(v & 0xFFFF) + (int64_t)((v >> 16) & 0xFFFF) + (int64_t)((v >> 32) & 0xFFFF) +
                (int64_t)(v >> 48);
  return (float)((double)(sum - 131070) * (1.7320508075688772 / 65536.0));
}
/* uniform integer in [0, n), n >= 1 */
static inline int64_t kit_randint(kit_rng *r, int64_t n) { return (int64_t)(kit_next(r) % (uint64_t)n); }
static inline void kit_fill_bytes(kit_rng *r, uint8_t *p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = kit_next(r);
    memcpy(p + i, &v, 8);
  }
  if (i < n) {
    uint64_t v = kit_next(r);
    memcpy(p + i, &v, n - i);
  }
}

/* ---- random activations and routing ---------------------------------------------------------- */
/* n values N(0, sd^2) (kit_normal); in bf16, none is zero. */
static inline void kit_fill_normal(kit_rng *r, float *x, int64_t n, double sd) {
  for (int64_t i = 0; i < n; i++) x[i] = (float)(sd * kit_normal(r));
}
static inline void kit_fill_bf16(kit_rng *r, uint16_t *x, int64_t n, double sd) {
  for (int64_t i = 0; i < n; i++) {
    do x[i] = moe_f32_to_bf16((float)(sd * kit_normal(r)));
    while ((x[i] & 0x7FFF) == 0);
  }
}
/* A new bf16 row of n N(0, 1) values (free() it). */
static inline uint16_t *kit_bf16_row(kit_rng *r, int64_t n) {
  uint16_t *x = (uint16_t *)kit_malloc((size_t)n * sizeof(uint16_t));
  kit_fill_bf16(r, x, n, 1.0);
  return x;
}
/* topk distinct ids per token from [0, n_ids) (a partial random permutation), weights in [0.1, 1). */
static inline void kit_route_random(kit_rng *r, int64_t M, int32_t topk, int32_t n_ids, float *w, int32_t *ids) {
  int32_t *perm = (int32_t *)kit_malloc(sizeof(int32_t) * (size_t)n_ids);
  for (int64_t m = 0; m < M; m++) {
    for (int32_t i = 0; i < n_ids; i++) perm[i] = i;
    for (int32_t j = 0; j < topk; j++) {
      int32_t k = j + (int32_t)kit_randint(r, n_ids - j), t = perm[j];
      perm[j] = perm[k];
      perm[k] = t;
      ids[m * topk + j] = perm[j];
      w[m * topk + j] = (float)(0.1 + 0.9 * kit_uniform(r));
    }
  }
  free(perm);
}

/* ---- model shapes (REFERENCE.md) -------------------------------------------------------------- */
typedef struct kit_model {
  const char *name;
  int64_t K, N, E;          /* hidden size, expert intermediate size, routed experts             */
  int32_t topk;
  int64_t shared_N;         /* intermediate size of the shared expert(s); 0: none                */
  int shared_gate;          /* shared output times sigmoid(x . gate) (Qwen2-MoE)                 */
  moe_route_kind route;
  int32_t n_group, topk_group; /* grouped routing: groups, groups kept                          */
  int renormalize;
  float rsf;                /* routed scaling factor (0: 1)                                      */
  moe_activation act;
  int biases;               /* b13 and b2 (gpt-oss)                                              */
  int interleaved;          /* the checkpoint stores gate/up rows interleaved (gpt-oss)         */
  moe_precision precision;  /* what the released checkpoint's experts are                        */
  int32_t block_n, block_k; /* its fp8 scale blocks (0 when not fp8)                            */
} kit_model;

#define KIT_N_MODELS 6
/* Model i (0 <= i < KIT_N_MODELS), or NULL. Positional initializers: C++ before 20 has no designated. */
static inline const kit_model *kit_model_at(int i) {
  static const kit_model models[KIT_N_MODELS] = {
      /* name, K, N, E, topk, shared_N, shared_gate, route, n_group, topk_group, renormalize, rsf, act,
         biases, interleaved, precision, block_n, block_k */
      {"mixtral-8x7b", 4096, 14336, 8, 2, 0, 0, MOE_ROUTE_SOFTMAX, 0, 0, 1, 0.0f, MOE_ACT_SILU, 0, 0,
       MOE_PREC_BF16, 0, 0},
      {"qwen3-30b-a3b", 2048, 768, 128, 8, 0, 0, MOE_ROUTE_SOFTMAX, 0, 0, 1, 0.0f, MOE_ACT_SILU, 0, 0,
       MOE_PREC_BF16, 0, 0},
      {"deepseek-v3", 7168, 2048, 256, 8, 2048, 0, MOE_ROUTE_BIASED_GROUPED, 8, 4, 1, 2.5f, MOE_ACT_SILU, 0, 0,
       MOE_PREC_FP8, 128, 128},
      {"qwen1.5-moe-a2.7b", 2048, 1408, 60, 4, 5632, 1, MOE_ROUTE_SOFTMAX, 0, 0, 0, 0.0f, MOE_ACT_SILU, 0, 0,
       MOE_PREC_BF16, 0, 0},
      {"gpt-oss-20b", 2880, 2880, 32, 4, 0, 0, MOE_ROUTE_SOFTMAX, 0, 0, 1, 0.0f, MOE_ACT_SWIGLU_OAI, 1, 1,
       MOE_PREC_MXFP4, 0, 0},
      {"llama-4-scout", 5120, 8192, 16, 1, 8192, 0, MOE_ROUTE_SIGMOID, 0, 0, 0, 0.0f, MOE_ACT_SILU, 0, 0,
       MOE_PREC_BF16, 0, 0},
  };
  return i >= 0 && i < KIT_N_MODELS ? &models[i] : NULL;
}
static inline int kit_model_count(void) { return KIT_N_MODELS; }
/* The model called name, or NULL. */
static inline const kit_model *kit_model_find(const char *name) {
  for (int i = 0; name && i < KIT_N_MODELS; i++)
    if (strcmp(kit_model_at(i)->name, name) == 0) return kit_model_at(i);
  return NULL;
}
/* A router for model m (correction_bias left NULL: biased grouped routing needs one of E floats). */
static inline moe_router kit_model_router(const kit_model *m) {
  moe_router r;
  memset(&r, 0, sizeof r);
  r.kind = m->route;
  r.E = (int32_t)m->E;
  r.topk = m->topk;
  r.n_group = m->n_group;
  r.topk_group = m->topk_group;
  r.renormalize = m->renormalize;
  r.routed_scaling_factor = m->rsf;
  return r;
}

/* ---- plain weights of any precision ----------------------------------------------------------- */
enum {
  KIT_BIAS = 1u << 0, /* random biases b13 [E, 2N] and b2 [E, K], N(0, 0.1^2)                        */
  KIT_CODES = 1u << 1 /* random codes and scales drawn directly (no f32 weights, no quantizer): every
                         code valid (no NaN), scales sized so that x . row is about N(0, 1) for x
                         N(0, 1). For big benchmarks; the default quantizes f32 N(0, 1/cols) weights. */
};

/* One matrix kind of the plain layout: W13 (2N x K) or W2 (K x N) of one expert. */
typedef struct kit_mat {
  int64_t rows, cols;
  size_t code_bytes;           /* codes of one expert                                               */
  size_t n_scale, n_zero, n_e8m0; /* f32 scales, u8 zero points, u8 e8m0 of one expert             */
} kit_mat;

/* Plain random weights: w is the descriptor, pointing into the buffers below (owned). */
typedef struct kit_weights {
  moe_weights w;
  kit_mat m13, m2;
  uint8_t *w13, *w2;           /* codes [E, rows, row bytes]                                        */
  float *s13, *s2;             /* int8, fp8, int4 scales                                            */
  uint8_t *z13, *z2;           /* int4 zero points                                                  */
  uint8_t *x13, *x2;           /* mxfp4 e8m0 scales                                                 */
  float *b13, *b2;             /* biases (KIT_BIAS)                                                 */
} kit_weights;

static inline int kit_is_4bit(moe_precision p) {
  return p == MOE_PREC_INT4_W4A8 || p == MOE_PREC_INT4_W4A16 || p == MOE_PREC_MXFP4;
}
static inline int kit_is_int4(moe_precision p) { return p == MOE_PREC_INT4_W4A8 || p == MOE_PREC_INT4_W4A16; }
static inline int64_t kit_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
/* bytes of one plain row of cols codes */
static inline size_t kit_row_bytes(moe_precision p, int64_t cols) {
  if (p == MOE_PREC_BF16 || p == MOE_PREC_FP16) return (size_t)cols * 2;
  return kit_is_4bit(p) ? (size_t)kit_cdiv(cols, 2) : (size_t)cols;
}
static inline kit_mat kit_mat_of(const moe_weights *w, int64_t rows, int64_t cols) {
  moe_precision p = w->precision;
  int64_t bn = w->block_n ? w->block_n : 128, bk = w->block_k ? w->block_k : 128, g = w->group ? w->group : 128;
  kit_mat m;
  memset(&m, 0, sizeof m);
  m.rows = rows, m.cols = cols;
  m.code_bytes = (size_t)rows * kit_row_bytes(p, cols);
  if (p == MOE_PREC_INT8) m.n_scale = (size_t)rows;
  if (p == MOE_PREC_FP8) m.n_scale = (size_t)(kit_cdiv(rows, bn) * kit_cdiv(cols, bk));
  if (kit_is_int4(p)) m.n_scale = m.n_zero = (size_t)(rows * kit_cdiv(cols, g));
  if (p == MOE_PREC_MXFP4) m.n_e8m0 = (size_t)(rows * kit_cdiv(cols, 32));
  return m;
}

/* Allocates zeroed weights of E experts (all-zero codes are valid weights in every precision) and
 * fills the descriptor. block_n, block_k (fp8) and group (int4, a multiple of 32): 0 means 128. */
static inline void kit_weights_alloc(kit_weights *kw, moe_precision p, int64_t E, int64_t N, int64_t K,
                                     int32_t block_n, int32_t block_k, int32_t group, unsigned flags) {
  size_t e = (size_t)E;
  memset(kw, 0, sizeof *kw);
  kw->w.precision = p;
  kw->w.E = E, kw->w.N = N, kw->w.K = K;
  kw->w.block_n = block_n, kw->w.block_k = block_k, kw->w.group = group;
  kw->m13 = kit_mat_of(&kw->w, 2 * N, K);
  kw->m2 = kit_mat_of(&kw->w, K, N);
  kw->w13 = (uint8_t *)kit_calloc(e * kw->m13.code_bytes);
  kw->w2 = (uint8_t *)kit_calloc(e * kw->m2.code_bytes);
  if (kw->m13.n_scale) {
    kw->s13 = (float *)kit_calloc(e * kw->m13.n_scale * sizeof(float));
    kw->s2 = (float *)kit_calloc(e * kw->m2.n_scale * sizeof(float));
  }
  if (kw->m13.n_zero) kw->z13 = (uint8_t *)kit_calloc(e * kw->m13.n_zero), kw->z2 = (uint8_t *)kit_calloc(e * kw->m2.n_zero);
  if (kw->m13.n_e8m0)
    kw->x13 = (uint8_t *)kit_calloc(e * kw->m13.n_e8m0), kw->x2 = (uint8_t *)kit_calloc(e * kw->m2.n_e8m0);
  if (flags & KIT_BIAS) {
    kw->b13 = (float *)kit_calloc(e * 2 * (size_t)N * sizeof(float));
    kw->b2 = (float *)kit_calloc(e * (size_t)K * sizeof(float));
  }
  kw->w.w13 = kw->w13, kw->w.w2 = kw->w2;
  kw->w.w13_scale = kw->s13, kw->w.w2_scale = kw->s2;
  kw->w.w13_zero = kw->z13, kw->w.w2_zero = kw->z2;
  kw->w.w13_e8m0 = kw->x13, kw->w.w2_e8m0 = kw->x2;
  kw->w.b13 = kw->b13, kw->w.b2 = kw->b2;
}

static inline void kit_weights_free(kit_weights *kw) {
  free(kw->w13), free(kw->w2), free(kw->s13), free(kw->s2), free(kw->z13), free(kw->z2);
  free(kw->x13), free(kw->x2), free(kw->b13), free(kw->b2);
  memset(kw, 0, sizeof *kw);
}

/* The f32 weights of expert e of a seed, the numbers the default mode quantizes: W13 [2N, K] with
 * N(0, 1/K) entries and W2 [K, N] with N(0, 1/N) (kit_normal_fast), each from its own stream. */
static inline void kit_expert_f32(uint64_t seed, int64_t e, int64_t N, int64_t K, float *w13, float *w2) {
  kit_rng r13 = kit_rng_stream(seed, 4 * (uint64_t)e), r2 = kit_rng_stream(seed, 4 * (uint64_t)e + 1);
  float s13 = (float)(1.0 / sqrt((double)K)), s2 = (float)(1.0 / sqrt((double)N));
  for (int64_t i = 0; i < 2 * N * K; i++) w13[i] = s13 * kit_normal_fast(&r13);
  for (int64_t i = 0; i < K * N; i++) w2[i] = s2 * kit_normal_fast(&r2);
}
/* Biases of expert e of a seed: b13 [2N], b2 [K], N(0, 0.1^2). */
static inline void kit_expert_bias(uint64_t seed, int64_t e, int64_t N, int64_t K, float *b13, float *b2) {
  kit_rng r = kit_rng_stream(seed, 4 * (uint64_t)e + 2);
  for (int64_t i = 0; i < 2 * N; i++) b13[i] = 0.1f * kit_normal_fast(&r);
  for (int64_t i = 0; i < K; i++) b2[i] = 0.1f * kit_normal_fast(&r);
}

/* One f32 matrix [rows, cols] of one expert into its plain slots with the library's quantizers. */
static inline void kit_quantize_mat(const moe_weights *w, const float *f, int64_t rows, int64_t cols, void *codes,
                                    float *scale, uint8_t *zero, uint8_t *e8m0) {
  int64_t n = rows * cols;
  switch (w->precision) {
  case MOE_PREC_BF16: moe_convert_from_f32(MOE_BF16, f, codes, (size_t)n); break;
  case MOE_PREC_FP16: moe_convert_from_f32(MOE_F16, f, codes, (size_t)n); break;
  case MOE_PREC_INT8: moe_quantize_weight_int8(f, 1, rows, cols, (int8_t *)codes, scale); break;
  case MOE_PREC_FP8:
    moe_quantize_weight_fp8(f, 1, rows, cols, w->block_n ? w->block_n : 128, w->block_k ? w->block_k : 128,
                            (uint8_t *)codes, scale);
    break;
  case MOE_PREC_INT4_W4A8:
  case MOE_PREC_INT4_W4A16:
    moe_quantize_weight_int4(f, 1, rows, cols, w->group ? w->group : 128, (uint8_t *)codes, scale, zero);
    break;
  case MOE_PREC_MXFP4: moe_quantize_weight_mxfp4(f, 1, rows, cols, (uint8_t *)codes, e8m0); break;
  default: break;
  }
}

/* Expert e's plain slots: codes, scales, zero points, e8m0 of W13 (mat 0) or W2 (mat 1). */
static inline void kit_slot(kit_weights *kw, int mat, int64_t e, uint8_t **codes, float **scale, uint8_t **zero,
                            uint8_t **e8m0) {
  const kit_mat *m = mat ? &kw->m2 : &kw->m13;
  size_t i = (size_t)e;
  *codes = (mat ? kw->w2 : kw->w13) + i * m->code_bytes;
  *scale = m->n_scale ? (mat ? kw->s2 : kw->s13) + i * m->n_scale : NULL;
  *zero = m->n_zero ? (mat ? kw->z2 : kw->z13) + i * m->n_zero : NULL;
  *e8m0 = m->n_e8m0 ? (mat ? kw->x2 : kw->x13) + i * m->n_e8m0 : NULL;
}

/* Quantizes one expert's f32 weights (W13 [2N, K] gate rows first, W2 [K, N]) into slot `slot`. */
static inline void kit_weights_set_expert(kit_weights *kw, int64_t slot, const float *w13, const float *w2) {
  uint8_t *codes, *zero, *e8m0;
  float *scale;
  kit_slot(kw, 0, slot, &codes, &scale, &zero, &e8m0);
  kit_quantize_mat(&kw->w, w13, kw->m13.rows, kw->m13.cols, codes, scale, zero, e8m0);
  kit_slot(kw, 1, slot, &codes, &scale, &zero, &e8m0);
  kit_quantize_mat(&kw->w, w2, kw->m2.rows, kw->m2.cols, codes, scale, zero, e8m0);
}

/* Root mean square of the values of every code of a format (its NaN codes left out). */
static inline double kit_rms_e4m3(void) {
  double s = 0;
  for (int c = 0; c < 256; c++)
    if ((c & 0x7F) != 0x7F) s += (double)moe_e4m3_to_f32((uint8_t)c) * moe_e4m3_to_f32((uint8_t)c);
  return sqrt(s / 254.0);
}
static inline double kit_rms_e2m1(void) {
  double s = 0;
  for (int c = 0; c < 16; c++) s += (double)moe_e2m1_to_f32((uint8_t)c) * moe_e2m1_to_f32((uint8_t)c);
  return sqrt(s / 16.0);
}

/* KIT_CODES: random codes and scales of one matrix of one expert, entries of rms about sd. Scales
 * jitter by [0.5, 1.5); int4 zero points are any of 0..15 (rms of q - zero: sqrt(2 * 255/12)). */
static inline void kit_random_codes(const moe_weights *w, kit_rng *r, const kit_mat *m, double sd, uint8_t *codes,
                                    float *scale, uint8_t *zero, uint8_t *e8m0) {
  moe_precision p = w->precision;
  size_t i;
  if (p == MOE_PREC_BF16 || p == MOE_PREC_FP16) { /* 4 codes per draw from a table of 2^16 normal values */
    uint16_t *h = (uint16_t *)(void *)codes, *tab = (uint16_t *)kit_malloc(65536 * sizeof(uint16_t));
    size_t n = (size_t)(m->rows * m->cols);
    for (i = 0; i < 65536; i++) {
      float v = (float)sd * kit_normal_fast(r);
      tab[i] = p == MOE_PREC_BF16 ? moe_f32_to_bf16(v) : moe_f32_to_f16(v);
    }
    for (i = 0; i < n; i += 4) {
      uint64_t v = kit_next(r);
      for (size_t j = 0; j < 4 && i + j < n; j++) h[i + j] = tab[(v >> (16 * j)) & 0xFFFF];
    }
    free(tab);
    return;
  }
  kit_fill_bytes(r, codes, m->code_bytes);
  if (p == MOE_PREC_INT8)
    for (i = 0; i < m->code_bytes; i++) codes[i] = codes[i] == 0x80 ? 0x81 : codes[i];
  if (p == MOE_PREC_FP8)
    for (i = 0; i < m->code_bytes; i++) codes[i] = (codes[i] & 0x7F) == 0x7F ? codes[i] ^ 1 : codes[i];
  if (kit_is_4bit(p) && m->cols % 2) /* the pad nibble of each row stays 0, as the quantizers leave it */
    for (int64_t row = 0; row < m->rows; row++) codes[(size_t)(row + 1) * kit_row_bytes(p, m->cols) - 1] &= 0x0F;
  {
    double unit = p == MOE_PREC_INT8 ? 127.0 / sqrt(3.0) : p == MOE_PREC_FP8 ? kit_rms_e4m3() : sqrt(42.5);
    for (i = 0; i < m->n_scale; i++) scale[i] = (float)(sd / unit * (0.5 + kit_uniform(r)));
  }
  for (i = 0; i < m->n_zero; i++) zero[i] = (uint8_t)kit_randint(r, 16);
  if (m->n_e8m0) {
    int base = 127 + (int)floor(log2(sd / kit_rms_e2m1()) + 0.5);
    for (i = 0; i < m->n_e8m0; i++) e8m0[i] = (uint8_t)(base - 1 + (int)kit_randint(r, 3));
  }
}

/* Expert e of a seed, either mode, into slot `slot` (< kw->w.E): a benchmark can regenerate any
 * expert into a one-expert buffer. Streams: 4e (W13), 4e + 1 (W2), 4e + 2 (biases); f13 and f2 are
 * scratch of 2N*K and K*N floats (default mode; NULL with KIT_CODES). */
static inline void kit_weights_expert(kit_weights *kw, int64_t slot, int64_t e, uint64_t seed, unsigned flags,
                                      float *f13, float *f2) {
  int64_t N = kw->w.N, K = kw->w.K;
  if (flags & KIT_CODES) {
    for (int mat = 0; mat < 2; mat++) {
      kit_rng r = kit_rng_stream(seed, 4 * (uint64_t)e + (uint64_t)mat);
      uint8_t *codes, *zero, *e8m0;
      float *scale;
      kit_slot(kw, mat, slot, &codes, &scale, &zero, &e8m0);
      kit_random_codes(&kw->w, &r, mat ? &kw->m2 : &kw->m13, 1.0 / sqrt((double)(mat ? N : K)), codes, scale, zero,
                       e8m0);
    }
  } else {
    kit_expert_f32(seed, e, N, K, f13, f2);
    kit_weights_set_expert(kw, slot, f13, f2);
  }
  if (kw->b13) kit_expert_bias(seed, e, N, K, kw->b13 + slot * 2 * N, kw->b2 + slot * K);
}

/* Random plain weights of E experts with explicit fp8 blocks and int4 group (0: 128). */
static inline void kit_weights_random_blocks(kit_weights *kw, moe_precision p, int64_t E, int64_t N, int64_t K,
                                             int32_t block_n, int32_t block_k, int32_t group, uint64_t seed,
                                             unsigned flags) {
  int64_t e;
  kit_weights_alloc(kw, p, E, N, K, block_n, block_k, group, flags);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
  for (e = 0; e < E; e++) {
    float *f13 = NULL, *f2 = NULL;
    if (!(flags & KIT_CODES)) {
      f13 = (float *)kit_malloc((size_t)(2 * N * K) * sizeof(float));
      f2 = (float *)kit_malloc((size_t)(K * N) * sizeof(float));
    }
    kit_weights_expert(kw, e, e, seed, flags, f13, f2);
    free(f13), free(f2);
  }
}
/* Random plain weights of E experts, precision p, default blocks and group (128). */
static inline void kit_weights_random(kit_weights *kw, moe_precision p, int64_t E, int64_t N, int64_t K, uint64_t seed,
                                      unsigned flags) {
  kit_weights_random_blocks(kw, p, E, N, K, 0, 0, 0, seed, flags);
}

/* ---- packing ----------------------------------------------------------------------------------- */
/* Packs w into a new buffer (free() it); exits with the status on failure. */
static inline void *kit_pack(const moe_weights *w, moe_experts *ex) {
  size_t n = moe_pack_size(w);
  void *buf = kit_malloc(n);
  moe_status st = n ? moe_pack(w, ex, buf, n) : MOE_ERR_DESCRIPTOR;
  if (st != MOE_OK) {
    fprintf(stderr, "kit_pack: %s precision E %lld N %lld K %lld: %s\n", moe_precision_name(w->precision),
            (long long)w->E, (long long)w->N, (long long)w->K, moe_status_str(st));
    exit(2);
  }
  return buf;
}

#endif /* MOE_KIT_H */

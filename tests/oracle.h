/* A float64 oracle of the MoE layer, written from the contract (moe.h, moe_quant.h, docs/design.md) and
 * independently of the library: plain loops, and its own decoders of bf16, fp16, e4m3, e2m1 and e8m0
 * and its own round-half-to-even. The only library things it touches are the plain descriptor types
 * (moe_weights, moe_dtype, moe_precision, moe_activation) that describe its input.
 *
 * It computes the quantized math the library promises, in double:
 *   - weights: bf16 value; fp16 value rounded to bf16 (FP16 weights are converted at pack time);
 *     int8 q * scale[e, row]; fp8 e4m3(q) * scale[e, row/bn, col/bk]; int4 (q - zero) * scale per
 *     (row, col/group); mxfp4 e2m1(q) * 2^(e8m0 - 127) per (row, col/32). 4-bit codes two per byte
 *     along cols, low nibble first, rows of ceil(cols/2) bytes.
 *   - activations into GEMM1: A16 precisions (BF16, FP16, FP8, INT4_W4A16, MXFP4) round x to bf16;
 *     A8 precisions (INT8, INT4_W4A8) quantize each token row (f32 values) per token, symmetric:
 *     scale = max(amax, 1e-7f) / 127 in f32, q = RNE(x / scale) in [-127, 127], value q * scale.
 *   - h = act(x Wg + bg, x Wu + bu), then rounded to bf16 (A16) or re-quantized per slot row (A8).
 *   - y = (h W2^T + b2) * topk_weight; out = rsf * sum_j y (id -1 skipped) + g * shared(x), with
 *     g = sigmoid(x . shared_gate) (x as f32 values) or 1.
 * Rows that meet a NaN or Inf come out NaN (callers skip them). The result is not rounded.
 * oracle_moe.w13_interleaved reads gpt-oss style checkpoints (gate/up rows interleaved) directly, so
 * the tests also check moe_deinterleave_gate_up.
 *
 * Below the oracle, for the tests (with test_util.h included first): test data makers (random codes
 * and scales per precision, x), orc_rel_err, and with ORC_WANT_POOL a pthread pool for
 * moe_parallel. None of them calls the library.
 */
#ifndef MOE_TEST_ORACLE_H
#define MOE_TEST_ORACLE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- number formats, from their definitions ----------------------------------------------------- */

/* bf16: 1 sign, 8 exponent (bias 127), 7 fraction bits */
static inline double orc_bf16(uint16_t h) {
  int e = (h >> 7) & 0xFF, m = h & 0x7F;
  double v = e == 0 ? ldexp((double)m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128.0 + m, e - 134);
  return (h & 0x8000) ? -v : v;
}
/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits */
static inline double orc_f16(uint16_t h) {
  int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v = e == 0 ? ldexp((double)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024.0 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
/* OCP e4m3fn: 1 sign, 4 exponent (bias 7), 3 fraction bits; no Inf; S.1111.111 is NaN */
static inline double orc_e4m3(uint8_t b) {
  int e = (b >> 3) & 0xF, m = b & 7;
  double v = e == 0 ? ldexp((double)m, -9) : (e == 15 && m == 7) ? NAN : ldexp(8.0 + m, e - 10);
  return (b & 0x80) ? -v : v;
}
/* OCP e2m1 (low 4 bits): 1 sign, 2 exponent (bias 1), 1 fraction bit */
static inline double orc_e2m1(uint8_t c) {
  int e = (c >> 1) & 3, m = c & 1;
  double v = e == 0 ? 0.5 * m : ldexp(2.0 + m, e - 2);
  return (c & 8) ? -v : v;
}
/* OCP e8m0: 2^(e - 127); 255 is NaN */
static inline double orc_e8m0(uint8_t e) { return e == 255 ? NAN : ldexp(1.0, (int)e - 127); }

/* round half to even to an integer, for |v| < 2^52 (and passes NaN/Inf through) */
static inline double orc_rint(double v) {
  if (!(fabs(v) < 4503599627370496.0)) return v;
  double f = floor(v), d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return fmod(f, 2.0) == 0 ? f : f + 1;
}
/* round half to even to a binary format with `mbits` fraction bits and smallest normal exponent
 * emin (subnormals below); no overflow handling (callers check their largest finite value) */
static inline double orc_round_fmt(double v, int mbits, int emin) {
  if (v == 0 || !isfinite(v)) return v;
  int ex;
  frexp(fabs(v), &ex);
  int lead = ex - 1 < emin ? emin : ex - 1;
  double q = ldexp(1.0, lead - mbits);
  return orc_rint(v / q) * q;
}
/* a double to the nearest bf16 value (RNE, overflow to Inf, NaN stays NaN) */
static inline double orc_round_bf16(double v) {
  double r = orc_round_fmt(v, 7, -126);
  return fabs(r) >= ldexp(1.0, 128) ? copysign(INFINITY, v) : r;
}
/* bits of an exactly representable value (+-Inf and NaN included) in a format of ebits/mbits */
static inline uint32_t orc_encode(double v, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t s = (v < 0 || (v == 0 && signbit(v))) ? 1u : 0u, bits;
  double a = fabs(v);
  if (a != a) return ((1u << ebits) - 1u) << mbits | 1u << (mbits - 1); /* quiet NaN */
  if (a == 0) bits = 0;
  else if (isinf(a)) bits = ((1u << ebits) - 1u) << mbits;
  else {
    int ex;
    frexp(a, &ex);
    int lead = ex - 1;
    if (lead < 1 - bias) bits = (uint32_t)(a / ldexp(1.0, 1 - bias - mbits));
    else bits = ((uint32_t)(lead + bias) << mbits) | (uint32_t)(a / ldexp(1.0, lead - mbits) - ldexp(1.0, mbits));
  }
  return (s << (ebits + mbits)) | bits;
}
/* encoders used to make test data: RNE to the format, then its bits */
static inline uint16_t orc_to_bf16_bits(double v) { return (uint16_t)orc_encode(orc_round_bf16(v), 8, 7); }
static inline uint16_t orc_to_f16_bits(double v) {
  double r = orc_round_fmt(v, 10, -14);
  if (fabs(r) > 65504.0) r = copysign(INFINITY, v);
  return (uint16_t)orc_encode(r, 5, 10);
}
static inline uint8_t orc_to_e4m3_bits(double v) { /* saturates at +-448 */
  double r = orc_round_fmt(v, 3, -6);
  if (fabs(r) > 448.0) r = copysign(448.0, v);
  return (uint8_t)orc_encode(r, 4, 3);
}

/* ---- the problem ---------------------------------------------------------------------------- */
typedef struct oracle_moe {
  const moe_weights *w;        /* plain routed experts                                              */
  int w13_interleaved;         /* w13 rows (codes, per-row scales/zeros/e8m0, b13) are gate/up
                                  interleaved: row 2i is gate i, 2i+1 is up i (not for fp8)           */
  const moe_weights *shared;   /* plain shared expert (E = 1) or NULL                                */
  const float *shared_gate;    /* [K] or NULL                                                       */
  moe_dtype dtype;             /* of x                                                              */
  const void *x;
  int64_t M, ldx;              /* ldx 0: K                                                          */
  int32_t topk;
  const float *topk_weights;
  const int32_t *topk_ids;     /* global ids, -1 skip                                               */
  const int32_t *expert_map;   /* [n_global] global -> local or -1; NULL: identity                  */
  moe_activation act;
  float alpha, limit;          /* 0: 1.702, 7                                                       */
  float rsf;                   /* 0: 1                                                              */
} oracle_moe;

static inline int orc_is_a8(moe_precision p) { return p == MOE_PREC_INT8 || p == MOE_PREC_INT4_W4A8; }

static inline double orc_x(moe_dtype t, const void *x, int64_t i) {
  if (t == MOE_F32) return (double)((const float *)x)[i];
  if (t == MOE_F16) return orc_f16(((const uint16_t *)x)[i]);
  return orc_bf16(((const uint16_t *)x)[i]);
}

/* per-row symmetric int8 quantization of f32 values, as the library does it; a row with NaN/Inf
 * comes out all NaN */
static inline void orc_quant_a8(const double *v, int64_t n, double *dst) {
  float amax = 0;
  for (int64_t i = 0; i < n; i++) {
    float f = (float)v[i];
    if (!isfinite(f)) {
      for (int64_t k = 0; k < n; k++) dst[k] = NAN;
      return;
    }
    if (fabsf(f) > amax) amax = fabsf(f);
  }
  float scale = (amax > 1e-7f ? amax : 1e-7f) / 127.0f;
  for (int64_t i = 0; i < n; i++) {
    float t = (float)v[i] / scale;
    double q = orc_rint((double)t);
    if (q > 127) q = 127;
    if (q < -127) q = -127;
    dst[i] = q * (double)scale;
  }
}

/* the activation input of one precision: A16 -> bf16 values, A8 -> per-token int8 values */
static inline void orc_act_input(moe_precision p, const double *v, int64_t n, double *dst) {
  if (orc_is_a8(p)) orc_quant_a8(v, n, dst);
  else
    for (int64_t i = 0; i < n; i++) dst[i] = orc_round_bf16(v[i]);
}

/* decode tables built from the formulas above (the big model shapes decode ~10^9 codes) */
static inline const double *orc_tab_e4m3(void) {
  static double t[256];
  static int done = 0;
  if (!done) {
    for (int i = 0; i < 256; i++) t[i] = orc_e4m3((uint8_t)i);
    done = 1;
  }
  return t;
}
static inline const double *orc_tab_16(int fp16) { /* bf16 values, or fp16 values rounded to bf16 */
  static double *t[2];
  if (!t[fp16]) {
    double *v = (double *)malloc(sizeof(double) * 65536);
    for (int i = 0; i < 65536; i++) v[i] = fp16 ? orc_round_bf16(orc_f16((uint16_t)i)) : orc_bf16((uint16_t)i);
    t[fp16] = v;
  }
  return t[fp16];
}

/* Dequantized row r of W13 (mat 0: 2N x K) or W2 (mat 1: K x N) of expert e into dst[cols]. */
static inline void orc_row(const moe_weights *w, int mat, int interleaved, int64_t e, int64_t r, double *dst) {
  const int64_t N = w->N, K = w->K;
  const int64_t rows = mat ? K : 2 * N, cols = mat ? N : K;
  const int64_t pr = (!mat && interleaved) ? (r < N ? 2 * r : 2 * (r - N) + 1) : r; /* stored row */
  const void *q = mat ? w->w2 : w->w13;
  const int64_t er = e * rows + pr;
  switch (w->precision) {
  case MOE_PREC_BF16:
  case MOE_PREC_FP16: { /* FP16 is converted to bf16 when packed */
    const double *t = orc_tab_16(w->precision == MOE_PREC_FP16);
    for (int64_t c = 0; c < cols; c++) dst[c] = t[((const uint16_t *)q)[er * cols + c]];
  } break;
  case MOE_PREC_INT8: {
    double s = (mat ? w->w2_scale : w->w13_scale)[er];
    for (int64_t c = 0; c < cols; c++) dst[c] = (double)((const int8_t *)q)[er * cols + c] * s;
  } break;
  case MOE_PREC_FP8: {
    int64_t bn = w->block_n ? w->block_n : 128, bk = w->block_k ? w->block_k : 128;
    int64_t RB = (rows + bn - 1) / bn, CB = (cols + bk - 1) / bk;
    const float *sc = (mat ? w->w2_scale : w->w13_scale) + (e * RB + pr / bn) * CB;
    const double *t = orc_tab_e4m3();
    const uint8_t *row = (const uint8_t *)q + er * cols;
    for (int64_t c0 = 0; c0 < cols; c0 += bk) {
      double sv = (double)sc[c0 / bk];
      for (int64_t c = c0; c < cols && c < c0 + bk; c++) dst[c] = t[row[c]] * sv;
    }
  } break;
  case MOE_PREC_INT4_W4A8:
  case MOE_PREC_INT4_W4A16: {
    int64_t g = w->group ? w->group : 128, ng = (cols + g - 1) / g, rs = (cols + 1) / 2;
    const float *sc = (mat ? w->w2_scale : w->w13_scale) + er * ng;
    const uint8_t *zp = (mat ? w->w2_zero : w->w13_zero) + er * ng;
    const uint8_t *row = (const uint8_t *)q + er * rs;
    for (int64_t c = 0; c < cols; c++) {
      int nib = (c & 1) ? row[c / 2] >> 4 : row[c / 2] & 15;
      dst[c] = (double)(nib - (int)zp[c / g]) * (double)sc[c / g];
    }
  } break;
  case MOE_PREC_MXFP4: {
    int64_t ng = (cols + 31) / 32, rs = (cols + 1) / 2;
    const uint8_t *sc = (mat ? w->w2_e8m0 : w->w13_e8m0) + er * ng;
    const uint8_t *row = (const uint8_t *)q + er * rs;
    double e2[16];
    for (int i = 0; i < 16; i++) e2[i] = orc_e2m1((uint8_t)i);
    for (int64_t c = 0; c < cols; c++) {
      int nib = (c & 1) ? row[c / 2] >> 4 : row[c / 2] & 15;
      dst[c] = e2[nib] * orc_e8m0(sc[c / 32]);
    }
  } break;
  default:
    for (int64_t c = 0; c < cols; c++) dst[c] = NAN;
  }
}

static inline double orc_sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

static inline double orc_act(moe_activation a, double g, double u, double alpha, double limit) {
  switch (a) {
  case MOE_ACT_GELU_TANH:
    return 0.5 * g * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (g + 0.044715 * g * g * g))) * u;
  case MOE_ACT_SWIGLU_OAI:
    if (isnan(g) || isnan(u)) return NAN;
    g = g < limit ? g : limit;
    u = u < -limit ? -limit : u > limit ? limit : u;
    return g * orc_sigmoid(alpha * g) * (u + 1.0);
  default:
    if (isnan(g)) return NAN;
    if (g == -INFINITY) return 0.0 * u;
    return g * orc_sigmoid(g) * u;
  }
}

/* acc[m, :] += weight_s * expert_e(xa[m, :]) for the slots (tok[s], wt[s]) of expert e. */
static inline void orc_expert(const moe_weights *w, int interleaved, int64_t e, int64_t ns, const int64_t *tok,
                              const double *wt, const double *xa, const oracle_moe *p, double *acc) {
  const int64_t N = w->N, K = w->K;
  const double alpha = p->alpha != 0 ? p->alpha : 1.702, limit = p->limit != 0 ? p->limit : 7.0;
  double *row = (double *)malloc(sizeof(double) * (size_t)(N > K ? N : K));
  double *pre = (double *)malloc(sizeof(double) * (size_t)(ns * 2 * N));
  double *h = (double *)malloc(sizeof(double) * (size_t)(ns * N));
  double *hq = (double *)malloc(sizeof(double) * (size_t)N);
  for (int64_t r = 0; r < 2 * N; r++) {
    orc_row(w, 0, interleaved, e, r, row);
    double b = 0;
    if (w->b13) {
      int64_t pr = interleaved ? (r < N ? 2 * r : 2 * (r - N) + 1) : r;
      b = w->b13[e * 2 * N + pr];
    }
    for (int64_t s = 0; s < ns; s++) {
      const double *xr = xa + tok[s] * K;
      double d = 0;
      for (int64_t k = 0; k < K; k++) d += xr[k] * row[k];
      pre[s * 2 * N + r] = d + b;
    }
  }
  for (int64_t s = 0; s < ns; s++) {
    for (int64_t i = 0; i < N; i++) hq[i] = orc_act(p->act, pre[s * 2 * N + i], pre[s * 2 * N + N + i], alpha, limit);
    orc_act_input(w->precision, hq, N, h + s * N);
  }
  for (int64_t r = 0; r < K; r++) {
    orc_row(w, 1, 0, e, r, row);
    double b = w->b2 ? w->b2[e * K + r] : 0.0;
    for (int64_t s = 0; s < ns; s++) {
      double d = 0;
      for (int64_t n = 0; n < N; n++) d += h[s * N + n] * row[n];
      acc[tok[s] * K + r] += (d + b) * wt[s];
    }
  }
  free(row);
  free(pre);
  free(h);
  free(hq);
}

/* out [M, K] (row stride K) in double */
static inline void oracle_run(const oracle_moe *p, double *out) {
  const moe_weights *w = p->w;
  const int64_t M = p->M, K = w->K, ldx = p->ldx ? p->ldx : K;
  const double rsf = p->rsf != 0 ? p->rsf : 1.0;
  double *xf = (double *)malloc(sizeof(double) * (size_t)(M * K + 1));
  double *xa = (double *)malloc(sizeof(double) * (size_t)(M * K + 1));
  double *routed = (double *)calloc((size_t)(M * K + 1), sizeof(double));
  int64_t *tok = (int64_t *)malloc(sizeof(int64_t) * (size_t)(M * (p->topk > 0 ? p->topk : 1) + 1));
  double *wt = (double *)malloc(sizeof(double) * (size_t)(M * (p->topk > 0 ? p->topk : 1) + 1));
  for (int64_t m = 0; m < M; m++)
    for (int64_t k = 0; k < K; k++) xf[m * K + k] = orc_x(p->dtype, p->x, m * ldx + k);
  for (int64_t m = 0; m < M; m++) orc_act_input(w->precision, xf + m * K, K, xa + m * K);
  for (int64_t e = 0; e < w->E; e++) {
    int64_t ns = 0;
    for (int64_t m = 0; m < M; m++)
      for (int32_t j = 0; j < p->topk; j++) {
        int32_t id = p->topk_ids[m * p->topk + j];
        if (id >= 0 && p->expert_map) id = p->expert_map[id];
        if (id == e) {
          tok[ns] = m;
          wt[ns] = p->topk_weights[m * p->topk + j];
          ns++;
        }
      }
    if (ns) orc_expert(w, p->w13_interleaved, e, ns, tok, wt, xa, p, routed);
  }
  for (int64_t i = 0; i < M * K; i++) out[i] = rsf * routed[i];
  if (p->shared) {
    const moe_weights *sw = p->shared;
    for (int64_t m = 0; m < M; m++) {
      tok[m] = m;
      wt[m] = 1.0;
      if (p->shared_gate) {
        double d = 0;
        for (int64_t k = 0; k < K; k++) d += xf[m * K + k] * (double)p->shared_gate[k];
        wt[m] = orc_sigmoid(d);
      }
      orc_act_input(sw->precision, xf + m * K, K, xa + m * K);
    }
    double *sh = (double *)calloc((size_t)(M * K + 1), sizeof(double));
    orc_expert(sw, 0, 0, M, tok, wt, xa, p, sh);
    for (int64_t i = 0; i < M * K; i++) out[i] += sh[i];
    free(sh);
  }
  free(xf);
  free(xa);
  free(routed);
  free(tok);
  free(wt);
}

/* an output element of type t as double, by this file's decoders */
static inline double orc_out(moe_dtype t, const void *o, int64_t i) { return orc_x(t, o, i); }

/* ==== test data (needs test_util.h; no library calls) ========================================== */
#ifdef MOE_TEST_UTIL_H

static inline size_t orc_dtype_size(moe_dtype t) { return t == MOE_F32 ? 4 : 2; }

/* one value of type t at element i, rounded by this file's encoders */
static inline void orc_store(moe_dtype t, void *dst, int64_t i, double v) {
  if (t == MOE_F32) ((float *)dst)[i] = (float)v;
  else if (t == MOE_F16) ((uint16_t *)dst)[i] = orc_to_f16_bits(v);
  else ((uint16_t *)dst)[i] = orc_to_bf16_bits(v);
}

/* x [M, ld] of type t: N(0, 1) values (never zero); the gaps between rows hold NaN */
static inline void *orc_make_x(moe_dtype t, int64_t M, int64_t K, int64_t ld, kit_rng *r) {
  size_t es = orc_dtype_size(t);
  void *x = test_malloc(es * (size_t)(M * ld + 1));
  test_poison(x, es * (size_t)(M * ld + 1));
  for (int64_t m = 0; m < M; m++)
    for (int64_t k = 0; k < K; k++) {
      double v;
      do {
        orc_store(t, x, m * ld + k, kit_normal(r));
        v = orc_x(t, x, m * ld + k);
      } while (v == 0);
    }
  return x;
}

/* What a plain test layer is made of. */
typedef struct orc_spec {
  moe_precision prec;
  int64_t E, N, K;
  int bias;                  /* b13 and b2                                                      */
  int32_t block_n, block_k;  /* fp8 (0: 128)                                                    */
  int32_t group;             /* int4 (0: 128)                                                   */
  int fp8_ref;               /* REFERENCE.md's fp8 weights: e4m3(clamp(randn*400, +-400)) with
                                scales randn*1e-3 (else random codes, scales randn/(rms sqrt(cols))) */
  uint64_t seed;
} orc_spec;

/* Plain weights; w is the descriptor over the buffers. */
typedef struct orc_plain {
  moe_weights w;
  void *q[2];      /* w13, w2 */
  float *s[2];     /* scales (int8, fp8, int4) */
  uint8_t *z[2];   /* int4 zero points */
  uint8_t *x8[2];  /* mxfp4 e8m0 */
  float *b13, *b2;
} orc_plain;

/* Random codes of one matrix [E, rows, cols] and its scales, scaled so that x . row is about N(0, 1).
 *   bf16/fp16: N(0,1)/sqrt(cols) values; int8: codes in [-127, 127], positive per-row scales;
 *   fp8: any code but NaN (zeros and subnormals included), signed block scales; int4: random nibbles,
 *   zero points 0..15, positive group scales; mxfp4: random e2m1 nibbles, e8m0 in a window of 8
 *   values (120..127 shifted down by about log2(sqrt(cols))). */
static inline void orc_make_matrix(orc_plain *p, const orc_spec *s, int mat, kit_rng *r) {
  const int64_t E = s->E, rows = mat ? s->K : 2 * s->N, cols = mat ? s->N : s->K;
  const double inv = 1.0 / sqrt((double)cols);
  const size_t nel = (size_t)(E * rows * cols);
  switch (s->prec) {
  case MOE_PREC_BF16:
  case MOE_PREC_FP16: {
    uint16_t *tab = (uint16_t *)test_malloc(sizeof(uint16_t) * 65536), *q;
    for (int i = 0; i < 65536; i++)
      tab[i] = s->prec == MOE_PREC_BF16 ? orc_to_bf16_bits(kit_normal(r) * inv) : orc_to_f16_bits(kit_normal(r) * inv);
    q = (uint16_t *)test_malloc(2 * nel);
    for (size_t i = 0; i < nel; i += 4) {
      uint64_t v = kit_next(r);
      for (size_t j = 0; j < 4 && i + j < nel; j++) q[i + j] = tab[(v >> (16 * j)) & 0xFFFF];
    }
    free(tab);
    p->q[mat] = q;
  } break;
  case MOE_PREC_INT8: {
    int8_t *q = (int8_t *)test_malloc(nel);
    kit_fill_bytes(r, (uint8_t *)q, nel);
    for (size_t i = 0; i < nel; i++)
      if (q[i] == -128) q[i] = -127;
    p->q[mat] = q;
    p->s[mat] = (float *)test_malloc(sizeof(float) * (size_t)(E * rows));
    for (int64_t i = 0; i < E * rows; i++) p->s[mat][i] = (float)((0.5 + kit_uniform(r)) * inv / 73.6);
  } break;
  case MOE_PREC_FP8: {
    int64_t bn = s->block_n ? s->block_n : 128, bk = s->block_k ? s->block_k : 128;
    int64_t ns = E * ((rows + bn - 1) / bn) * ((cols + bk - 1) / bk);
    uint8_t *q = (uint8_t *)test_malloc(nel);
    double ms = 0;
    for (int c = 0; c < 256; c++)
      if ((c & 0x7F) != 0x7F) ms += orc_e4m3((uint8_t)c) * orc_e4m3((uint8_t)c) / 254.0;
    if (s->fp8_ref)
      for (size_t i = 0; i < nel; i++) {
        double v = kit_normal(r) * 400.0;
        q[i] = orc_to_e4m3_bits(v > 400 ? 400 : v < -400 ? -400 : v);
      }
    else {
      kit_fill_bytes(r, q, nel);
      for (size_t i = 0; i < nel; i++)
        if ((q[i] & 0x7F) == 0x7F) q[i] ^= 1; /* no NaN codes */
    }
    p->q[mat] = q;
    p->s[mat] = (float *)test_malloc(sizeof(float) * (size_t)ns);
    for (int64_t i = 0; i < ns; i++)
      p->s[mat][i] = (float)(kit_normal(r) * (s->fp8_ref ? 1e-3 : inv / sqrt(ms)));
  } break;
  case MOE_PREC_INT4_W4A8:
  case MOE_PREC_INT4_W4A16: {
    int64_t g = s->group ? s->group : 128, ng = (cols + g - 1) / g;
    size_t nb = (size_t)(E * rows * ((cols + 1) / 2));
    p->q[mat] = test_malloc(nb);
    kit_fill_bytes(r, (uint8_t *)p->q[mat], nb);
    p->s[mat] = (float *)test_malloc(sizeof(float) * (size_t)(E * rows * ng));
    p->z[mat] = (uint8_t *)test_malloc((size_t)(E * rows * ng));
    for (int64_t i = 0; i < E * rows * ng; i++) {
      p->s[mat][i] = (float)((0.5 + kit_uniform(r)) * inv / 6.5);
      p->z[mat][i] = (uint8_t)kit_randint(r, 16);
    }
  } break;
  case MOE_PREC_MXFP4: {
    int64_t ng = (cols + 31) / 32;
    size_t nb = (size_t)(E * rows * ((cols + 1) / 2));
    int lo = 120 - (int)floor(log2(sqrt((double)cols)) + 0.5);
    p->q[mat] = test_malloc(nb);
    kit_fill_bytes(r, (uint8_t *)p->q[mat], nb);
    p->x8[mat] = (uint8_t *)test_malloc((size_t)(E * rows * ng));
    for (int64_t i = 0; i < E * rows * ng; i++) p->x8[mat][i] = (uint8_t)(lo + kit_randint(r, 8));
  } break;
  default:
    break;
  }
}

static inline void orc_plain_make(orc_plain *p, const orc_spec *s) {
  kit_rng r = {s->seed * 0x9E3779B97F4A7C15ull + 12345u};
  memset(p, 0, sizeof *p);
  orc_make_matrix(p, s, 0, &r);
  orc_make_matrix(p, s, 1, &r);
  if (s->bias) {
    p->b13 = (float *)test_malloc(sizeof(float) * (size_t)(s->E * 2 * s->N));
    p->b2 = (float *)test_malloc(sizeof(float) * (size_t)(s->E * s->K));
    for (int64_t i = 0; i < s->E * 2 * s->N; i++) p->b13[i] = (float)(0.5 * kit_normal(&r));
    for (int64_t i = 0; i < s->E * s->K; i++) p->b2[i] = (float)(0.5 * kit_normal(&r));
  }
  p->w.precision = s->prec;
  p->w.E = s->E;
  p->w.N = s->N;
  p->w.K = s->K;
  p->w.w13 = p->q[0];
  p->w.w2 = p->q[1];
  p->w.w13_scale = p->s[0];
  p->w.w2_scale = p->s[1];
  p->w.w13_zero = p->z[0];
  p->w.w2_zero = p->z[1];
  p->w.w13_e8m0 = p->x8[0];
  p->w.w2_e8m0 = p->x8[1];
  p->w.b13 = p->b13;
  p->w.b2 = p->b2;
  p->w.block_n = s->block_n;
  p->w.block_k = s->block_k;
  p->w.group = s->group;
}

static inline void orc_plain_free(orc_plain *p) {
  for (int i = 0; i < 2; i++) {
    free(p->q[i]);
    free(p->s[i]);
    free(p->z[i]);
    free(p->x8[i]);
  }
  free(p->b13);
  free(p->b2);
  memset(p, 0, sizeof *p);
}

/* ||a - ref|| / max(||ref||, sqrt(count) * tiny) over the rows of [M, K] whose skip[m] is 0 (skip may
 * be NULL); a is read from a dtype buffer with row stride lda; NaN when a compared element is not
 * finite. tiny is the dtype's smallest normal: below it the output format itself cannot hold the
 * relative precision (fp16 subnormals start at 6.1e-5), so tiny outputs are judged absolutely. */
static inline double orc_rel_err(moe_dtype t, const void *a, int64_t lda, const double *ref, int64_t M, int64_t K,
                                 const int *skip) {
  const double tiny = t == MOE_F16 ? ldexp(1.0, -14) : ldexp(1.0, -126);
  double num = 0, den = 0, cnt = 0;
  for (int64_t m = 0; m < M; m++) {
    if (skip && skip[m]) continue;
    for (int64_t k = 0; k < K; k++) {
      double v = orc_out(t, a, m * lda + k), d = v - ref[m * K + k];
      if (!isfinite(v)) return NAN;
      num += d * d;
      den += ref[m * K + k] * ref[m * K + k];
      cnt += 1;
    }
  }
  if (den < cnt * tiny * tiny) den = cnt * tiny * tiny;
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

#if defined(ORC_WANT_POOL)
#include <pthread.h>

/* ---- a pthread pool for moe_parallel whose parallel_for runs the tasks in varying orders (define
 * ORC_WANT_POOL before including this file; link with pthreads) ---------------------------------------
 * n_threads persistent workers; worker t runs ORC_ORDER_STRIDED t, t + N, t + 2N, ...; ORC_ORDER_REVERSED
 * n-1-t, n-1-t-N, ...; ORC_ORDER_DYNAMIC whatever index is next when it is free. */
typedef enum { ORC_ORDER_STRIDED, ORC_ORDER_REVERSED, ORC_ORDER_DYNAMIC } orc_order;
typedef struct orc_pool orc_pool;
typedef struct orc_worker_arg {
  orc_pool *p;
  int t;
} orc_worker_arg;
struct orc_pool {
  int n_threads;
  orc_order order;
  pthread_t th[16];
  pthread_mutex_t mu;
  pthread_cond_t start, done;
  uint64_t gen;
  int pending, quit;
  void (*fn)(void *, int64_t);
  void *arg;
  int64_t n, next;
  orc_worker_arg args[16];
};

static inline void *orc_pool_worker(void *a) {
  orc_pool *p = ((orc_worker_arg *)a)->p;
  int t = ((orc_worker_arg *)a)->t, nt = p->n_threads;
  uint64_t seen = 0;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (p->gen == seen && !p->quit) pthread_cond_wait(&p->start, &p->mu);
    if (p->quit) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    seen = p->gen;
    pthread_mutex_unlock(&p->mu);
    switch (p->order) {
    case ORC_ORDER_STRIDED:
      for (int64_t i = t; i < p->n; i += nt) p->fn(p->arg, i);
      break;
    case ORC_ORDER_REVERSED:
      for (int64_t i = p->n - 1 - t; i >= 0; i -= nt) p->fn(p->arg, i);
      break;
    case ORC_ORDER_DYNAMIC:
      for (;;) {
        int64_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (i >= p->n) break;
        p->fn(p->arg, i);
      }
      break;
    }
    pthread_mutex_lock(&p->mu);
    if (--p->pending == 0) pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
  }
}

static inline void orc_pool_parallel_for(void *pp, void (*fn)(void *arg, int64_t i), void *arg, int64_t n) {
  orc_pool *p = (orc_pool *)pp;
  pthread_mutex_lock(&p->mu);
  p->fn = fn, p->arg = arg, p->n = n, p->next = 0, p->pending = p->n_threads;
  p->gen++;
  pthread_cond_broadcast(&p->start);
  while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

static inline void orc_pool_start(orc_pool *p, int n_threads, orc_order order) {
  memset(p, 0, sizeof *p);
  if (n_threads > 16) n_threads = 16;
  p->n_threads = n_threads, p->order = order;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->start, NULL);
  pthread_cond_init(&p->done, NULL);
  for (int t = 0; t < n_threads; t++) {
    p->args[t].p = p, p->args[t].t = t;
    if (pthread_create(&p->th[t], NULL, orc_pool_worker, &p->args[t]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      exit(2);
    }
  }
}

static inline void orc_pool_stop(orc_pool *p) {
  pthread_mutex_lock(&p->mu);
  p->quit = 1;
  pthread_cond_broadcast(&p->start);
  pthread_mutex_unlock(&p->mu);
  for (int t = 0; t < p->n_threads; t++) pthread_join(p->th[t], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->start);
  pthread_cond_destroy(&p->done);
}

/* a moe_parallel over a started orc_pool */
static inline moe_parallel orc_pool_parallel(orc_pool *p) {
  moe_parallel par;
  memset(&par, 0, sizeof par);
  par.parallel_for = orc_pool_parallel_for;
  par.pool = p;
  par.n_threads = p->n_threads;
  return par;
}
#endif /* ORC_WANT_POOL */

#endif /* MOE_TEST_UTIL_H */

#endif

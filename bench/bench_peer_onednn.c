/* bench_peer_onednn.c — the peer: the same layer on oneDNN, as an engine writes it (compiled only
 * when Meson finds oneDNN).
 *
 * Per expert: gather its rows of x, matmul with W13 -> [rows, 2N] f32, silu(gate) * up, matmul with
 * W2 -> [rows, K] f32, weighted scatter-add into an f32 output; one conversion to bf16 at the end.
 * bf16 (and fp16, whose weights the engine converts to bf16 at load, as moe_pack does): bf16 x bf16
 * -> f32. fp8, int4 (both) and mxfp4: the plain quantized weights are dequantized to f32 at load
 * (e4m3 x block scale, (q - zero) x group scale, e2m1 x 2^e8m0), rounded to bf16 and run on the bf16
 * path, as an engine without low-bit kernels does (int4-w4a8 too: its activations stay bf16).
 * int8: x and h quantized per token to s8 (symmetric, as moe.h), s8 x s8 -> f32 brgemm;
 * oneDNN 2.6 picks its slow gemm:jit for runtime per-channel output scales, so the per-channel and
 * per-token scales are applied in the activation and scatter loops, which read every element anyway.
 * Weights are reordered once into the blocked format the matmul chooses (format_tag_any); the
 * primitives are created once per row count, outside the timed region. */
#define _POSIX_C_SOURCE 200809L
#include "bench_layer.h"

#include <dnnl.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
/* Loops of the peer's element-wise work: parallel when the enclosing function's `work` (elements)
 * is worth a fork-join, as engines do. */
#define PEER_PARALLEL_FOR _Pragma("omp parallel for schedule(static) if(work >= 16384)")
#else
#define PEER_PARALLEL_FOR
#endif

const char *const peer_name = "onednn";

#define DNNL_CHECK(call)                                                                 \
  do {                                                                                   \
    dnnl_status_t s_ = (call);                                                           \
    if (s_ != dnnl_success) die("oneDNN: %s failed (status %d)", #call, (int)s_);        \
  } while (0)

/* The peer's element-wise row work, with AVX-512 variants as an engine has them. */
typedef struct row_ops {
  void (*bf16_to_f32)(const uint16_t *src, float *dst, int64_t n);
  void (*f32_to_bf16)(const float *src, uint16_t *dst, int64_t n);
  float (*quantize_s8)(const float *v, int64_t n, int8_t *q); /* returns the row scale */
  /* h = silu(g * s * sg) * (u * s * su); sg, su per-column scales or NULL */
  void (*silu_mul)(const float *g, const float *u, const float *sg, const float *su, float s, float *h, int64_t n);
  void (*axpy)(float w, const float *sc, const float *y, float *out, int64_t n); /* out += w * sc * y */
} row_ops;

static void bf16_to_f32_scalar(const uint16_t *src, float *dst, int64_t n) { moe_convert_to_f32(MOE_BF16, src, dst, (size_t)n); }
static void f32_to_bf16_scalar(const float *src, uint16_t *dst, int64_t n) { moe_convert_from_f32(MOE_BF16, src, dst, (size_t)n); }

/* Symmetric s8: scale = max(amax, 1e-7) / 127, round half to even (as moe.h quantizes). */
static float quantize_s8_scalar(const float *v, int64_t n, int8_t *q) {
  float amax = 0.0f, scale, inv;
  for (int64_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(v[i]));
  scale = fmaxf(amax, 1e-7f) / 127.0f;
  inv = 1.0f / scale;
  for (int64_t i = 0; i < n; i++) q[i] = (int8_t)lrintf(v[i] * inv);
  return scale;
}

static void silu_mul_scalar(const float *g, const float *u, const float *sg, const float *su, float s, float *h, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float a = g[i] * s * (sg ? sg[i] : 1.0f), b = u[i] * s * (su ? su[i] : 1.0f);
    h[i] = a / (1.0f + expf(-a)) * b;
  }
}

static void axpy_scalar(float w, const float *sc, const float *y, float *out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] += w * (sc ? sc[i] : 1.0f) * y[i];
}

#define PEER_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

static inline __mmask16 tail_mask(int64_t left) { return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1); }

/* exp(x) = 2^n * 2^f, f in [-1/2, 1/2] by a degree-6 polynomial (rel. error ~1e-7), scaled by scalef. */
PEER_AVX512 static __m512 exp_avx512(__m512 x) {
  __m512 t = _mm512_mul_ps(_mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-88.0f)),
                           _mm512_set1_ps(1.44269504f));
  __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.54035304e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.33335581e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.61812911e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.55041087e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.40226507e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.93147181e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

PEER_AVX512 static void bf16_to_f32_avx512(const uint16_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, src + i));
    _mm512_mask_storeu_ps(dst + i, k, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
}

PEER_AVX512 static void f32_to_bf16_avx512(const float *src, uint16_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    _mm256_mask_storeu_epi16(dst + i, k, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, src + i)));
  }
}

PEER_AVX512 static float quantize_s8_avx512(const float *v, int64_t n, int8_t *q) {
  __m512 amax = _mm512_setzero_ps(), inv;
  float scale;
  for (int64_t i = 0; i < n; i += 16) amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_maskz_loadu_ps(tail_mask(n - i), v + i)));
  scale = fmaxf(_mm512_reduce_max_ps(amax), 1e-7f) / 127.0f;
  inv = _mm512_set1_ps(1.0f / scale);
  for (int64_t i = 0; i < n; i += 16) { /* cvtps rounds half to even */
    __mmask16 k = tail_mask(n - i);
    _mm512_mask_cvtsepi32_storeu_epi8(q + i, k, _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, v + i), inv)));
  }
  return scale;
}

PEER_AVX512 static void silu_mul_avx512(const float *g, const float *u, const float *sg, const float *su, float s,
                                        float *h, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f), vs = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    __m512 a = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, g + i), vs), b = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, u + i), vs);
    if (sg) a = _mm512_mul_ps(a, _mm512_maskz_loadu_ps(k, sg + i)), b = _mm512_mul_ps(b, _mm512_maskz_loadu_ps(k, su + i));
    a = _mm512_div_ps(a, _mm512_add_ps(one, exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), a))));
    _mm512_mask_storeu_ps(h + i, k, _mm512_mul_ps(a, b));
  }
}

PEER_AVX512 static void axpy_avx512(float w, const float *sc, const float *y, float *out, int64_t n) {
  const __m512 vw = _mm512_set1_ps(w);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    __m512 t = _mm512_mul_ps(vw, _mm512_maskz_loadu_ps(k, y + i));
    if (sc) t = _mm512_mul_ps(t, _mm512_maskz_loadu_ps(k, sc + i));
    _mm512_mask_storeu_ps(out + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, out + i), t));
  }
}

static row_ops row_ops_select(void) {
  row_ops scalar = {bf16_to_f32_scalar, f32_to_bf16_scalar, quantize_s8_scalar, silu_mul_scalar, axpy_scalar};
  row_ops avx512 = {bf16_to_f32_avx512, f32_to_bf16_avx512, quantize_s8_avx512, silu_mul_avx512, axpy_avx512};
  return have_features(MOE_CPU_AVX512F | MOE_CPU_AVX512BW | MOE_CPU_AVX512VL | MOE_CPU_AVX512BF16) ? avx512 : scalar;
}

typedef struct peer_rows { /* the matmuls and activation memories of one expert row count */
  dnnl_primitive_t mm13, mm2;
  dnnl_memory_t a, g, h, y;
} peer_rows;

struct peer {
  moe_precision p;
  int a8;
  bench_weights w; /* the experts to regenerate */
  int64_t E, N, K, max_rows;
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  dnnl_memory_desc_t w13_md, w2_md;
  dnnl_memory_t *w13, *w2; /* [E] prepacked */
  float *s13, *s2;         /* int8: per-channel scales [E][2N], [E][K] */
  peer_rows *rows;         /* [max_rows + 1], filled by peer_prepare */
  void *a_buf, *h_buf;     /* gathered x rows; activation (bf16 or s8) */
  float *g_buf, *y_buf, *hf_buf, *out_f32;
  int8_t *xq;
  float *x_scale, *h_scale;
  int32_t *count, *start, *slot_token; /* slots grouped by expert */
  float *slot_weight;
  char impl[64];           /* oneDNN's implementation name, e.g. brg:avx512_core_vnni */
  row_ops ops;
};

int peer_supports(moe_precision p) { return p >= 0 && p < MOE_PREC_COUNT && moe_precision_compiled(p); }

double peer_expert_bytes(moe_precision p, int64_t N, int64_t K) {
  double elems = 3.0 * (double)N * (double)K;
  return p == MOE_PREC_INT8 ? elems + 4.0 * (double)(2 * N + K) : 2.0 * elems;
}

const char *peer_weights_kind(moe_precision p) {
  switch (p) {
  case MOE_PREC_BF16: return "bf16";
  case MOE_PREC_FP16: return "bf16-converted";
  case MOE_PREC_INT8: return "int8";
  default: return "bf16-dequantized";
  }
}

static dnnl_data_type_t peer_act_type(const peer *P) { return P->a8 ? dnnl_s8 : dnnl_bf16; }

static dnnl_memory_desc_t md_2d(int64_t d0, int64_t d1, dnnl_data_type_t t, dnnl_format_tag_t tag) {
  dnnl_memory_desc_t md;
  dnnl_dims_t dims = {d0, d1};
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&md, 2, dims, t, tag));
  return md;
}

/* A matmul [rows, kred] x weights [kred, nout] -> f32 [rows, nout]; NULL weights md means "any". */
static dnnl_primitive_t peer_matmul(peer *P, int64_t rows, int64_t kred, int64_t nout, const dnnl_memory_desc_t *wmd,
                                    dnnl_memory_desc_t *chosen) {
  dnnl_memory_desc_t src = md_2d(rows, kred, peer_act_type(P), dnnl_ab), dst = md_2d(rows, nout, dnnl_f32, dnnl_ab);
  dnnl_memory_desc_t any = md_2d(kred, nout, peer_act_type(P), dnnl_format_tag_any);
  dnnl_matmul_desc_t desc;
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t prim;
  const char *impl;
  DNNL_CHECK(dnnl_matmul_desc_init(&desc, &src, wmd ? wmd : &any, NULL, &dst));
  DNNL_CHECK(dnnl_primitive_desc_create(&pd, &desc, NULL, P->eng, NULL));
  if (chosen) *chosen = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  DNNL_CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, (void *)&impl));
  snprintf(P->impl, sizeof P->impl, "%s", impl);
  DNNL_CHECK(dnnl_primitive_create(&prim, pd));
  DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
  return prim;
}

static dnnl_memory_t peer_memory(const peer *P, const dnnl_memory_desc_t *md, void *handle) {
  dnnl_memory_t m;
  DNNL_CHECK(dnnl_memory_create(&m, md, P->eng, handle));
  return m;
}

/* Reorders plain matrices (rows x kred row-major, i.e. weights [kred, rows] "ba") into the prepacked
 * format; one reorder primitive serves every expert. */
typedef struct peer_packer {
  dnnl_memory_desc_t plain_md, packed_md;
  dnnl_primitive_t reorder;
} peer_packer;

static peer_packer packer_create(const peer *P, int64_t rows, int64_t kred, const dnnl_memory_desc_t *packed_md) {
  peer_packer k;
  dnnl_primitive_desc_t pd;
  k.plain_md = md_2d(kred, rows, peer_act_type(P), dnnl_ba);
  k.packed_md = *packed_md;
  DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, &k.plain_md, P->eng, &k.packed_md, P->eng, NULL));
  DNNL_CHECK(dnnl_primitive_create(&k.reorder, pd));
  DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
  return k;
}

static dnnl_memory_t packer_run(const peer *P, const peer_packer *k, void *plain) {
  dnnl_memory_t src = peer_memory(P, &k->plain_md, plain), dst = peer_memory(P, &k->packed_md, DNNL_MEMORY_ALLOCATE);
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  DNNL_CHECK(dnnl_primitive_execute(k->reorder, P->stream, 2, args));
  DNNL_CHECK(dnnl_stream_wait(P->stream));
  DNNL_CHECK(dnnl_memory_destroy(src));
  return dst;
}

/* Decoded values of every code: e4m3 (256), e2m1 (16), e8m0 (256). */
typedef struct peer_luts {
  float e4m3[256], e2m1[16], e8m0[256];
} peer_luts;

static peer_luts peer_luts_make(void) {
  peer_luts t;
  for (int c = 0; c < 256; c++) t.e4m3[c] = moe_e4m3_to_f32((uint8_t)c), t.e8m0[c] = moe_e8m0_to_f32((uint8_t)c);
  for (int c = 0; c < 16; c++) t.e2m1[c] = moe_e2m1_to_f32((uint8_t)c);
  return t;
}

/* The value of plain element (r, c) of one matrix of one expert (moe_quant.h's plain layouts):
 * fp8 e4m3 x scale[r / bn][c / bk]; int4 (q - zero[r][c / g]) x scale[r][c / g]; mxfp4
 * e2m1 x 2^(e8m0[r][c / 32] - 127); 4-bit codes two per byte along the row, low nibble first. */
static float peer_dequantize_one(const peer_luts *t, const moe_weights *w, const kit_mat *m, const uint8_t *codes,
                                 const float *scale, const uint8_t *zero, const uint8_t *e8m0, int64_t r, int64_t c) {
  const size_t row = kit_row_bytes(w->precision, m->cols);
  const uint8_t *q = codes + (size_t)r * row;
  const int64_t g = w->group ? w->group : 128;
  int nib = (q[c >> 1] >> ((c & 1) * 4)) & 15;
  switch (w->precision) {
  case MOE_PREC_FP8: {
    const int64_t bn = w->block_n ? w->block_n : 128, bk = w->block_k ? w->block_k : 128;
    return t->e4m3[q[c]] * scale[(r / bn) * kit_cdiv(m->cols, bk) + c / bk];
  }
  case MOE_PREC_INT4_W4A8:
  case MOE_PREC_INT4_W4A16: {
    const int64_t i = r * kit_cdiv(m->cols, g) + c / g;
    return (float)(nib - (int)zero[i]) * scale[i];
  }
  case MOE_PREC_MXFP4: return t->e2m1[nib] * t->e8m0[e8m0[r * kit_cdiv(m->cols, 32) + c / 32]];
  default: return 0.0f;
  }
}

/* Matrix `mat` (0: W13, 1: W2) of the expert in slot 0 of `one`, as the peer loads it: bf16 and int8
 * codes as they are, fp16 converted to bf16 (as an engine, and moe_pack, converts them at load), the
 * low-bit precisions dequantized to bf16 (into tmp, rows x cols). */
static void *peer_weight_matrix(const peer *P, kit_weights *one, int mat, const peer_luts *t, uint16_t *tmp) {
  const kit_mat *m = mat ? &one->m2 : &one->m13;
  const int64_t work = m->rows * m->cols;
  uint8_t *codes, *zero, *e8m0;
  float *scale;
  kit_slot(one, mat, 0, &codes, &scale, &zero, &e8m0);
  if (P->p == MOE_PREC_BF16 || P->p == MOE_PREC_INT8) return codes;
  if (P->p == MOE_PREC_FP16) {
    for (int64_t i = 0; i < work; i++) tmp[i] = moe_f32_to_bf16(moe_f16_to_f32(((const uint16_t *)(const void *)codes)[i]));
    return tmp;
  }
  PEER_PARALLEL_FOR
  for (int64_t r = 0; r < m->rows; r++)
    for (int64_t c = 0; c < m->cols; c++)
      tmp[r * m->cols + c] = moe_f32_to_bf16(peer_dequantize_one(t, &one->w, m, codes, scale, zero, e8m0, r, c));
  return tmp;
}

/* Regenerates every expert as the driver did, one at a time into a one-expert buffer (no second
 * copy of all E experts), and prepacks it for oneDNN. */
static void peer_load_weights(peer *P) {
  kit_weights one;
  size_t n13 = (size_t)(2 * P->N * P->K), n2 = (size_t)(P->K * P->N);
  int convert = P->p != MOE_PREC_BF16 && P->p != MOE_PREC_INT8;
  uint16_t *tmp = convert ? (uint16_t *)kit_malloc(2 * (n13 > n2 ? n13 : n2)) : NULL;
  peer_packer k13 = packer_create(P, 2 * P->N, P->K, &P->w13_md), k2 = packer_create(P, P->K, P->N, &P->w2_md);
  peer_luts *luts = (peer_luts *)kit_malloc(sizeof *luts);
  *luts = peer_luts_make();
  kit_weights_alloc(&one, P->p, 1, P->N, P->K, P->w.block_n, P->w.block_k, P->w.group, 0);
  P->w13 = (dnnl_memory_t *)kit_malloc((size_t)P->E * sizeof *P->w13);
  P->w2 = (dnnl_memory_t *)kit_malloc((size_t)P->E * sizeof *P->w2);
  for (int64_t e = 0; e < P->E; e++) {
    kit_weights_expert(&one, 0, e, P->w.seed, BENCH_WEIGHT_FLAGS, NULL, NULL);
    P->w13[e] = packer_run(P, &k13, peer_weight_matrix(P, &one, 0, luts, tmp));
    P->w2[e] = packer_run(P, &k2, peer_weight_matrix(P, &one, 1, luts, tmp));
    if (P->a8) {
      memcpy(P->s13 + e * 2 * P->N, one.s13, (size_t)(2 * P->N) * sizeof(float));
      memcpy(P->s2 + e * P->K, one.s2, (size_t)P->K * sizeof(float));
    }
  }
  DNNL_CHECK(dnnl_primitive_destroy(k13.reorder));
  DNNL_CHECK(dnnl_primitive_destroy(k2.reorder));
  free(tmp);
  free(luts);
  kit_weights_free(&one);
}

static void peer_alloc_buffers(peer *P, int64_t max_m, int32_t topk) {
  size_t r = (size_t)P->max_rows, a_elt = P->a8 ? 1 : 2, N = (size_t)P->N, K = (size_t)P->K;
  size_t slots = (size_t)max_m * (size_t)topk;
  P->a_buf = kit_malloc(r * K * a_elt);
  P->h_buf = kit_malloc(r * N * a_elt);
  P->g_buf = (float *)kit_malloc(r * 2 * N * sizeof(float));
  P->hf_buf = (float *)kit_malloc(r * N * sizeof(float));
  P->y_buf = (float *)kit_malloc(r * K * sizeof(float));
  P->out_f32 = (float *)kit_malloc((size_t)max_m * K * sizeof(float));
  P->xq = (int8_t *)kit_malloc((size_t)max_m * K);
  P->x_scale = (float *)kit_malloc((size_t)max_m * sizeof(float));
  P->h_scale = (float *)kit_malloc(r * sizeof(float));
  P->count = (int32_t *)kit_malloc((size_t)P->E * sizeof(int32_t));
  P->start = (int32_t *)kit_malloc((size_t)P->E * sizeof(int32_t));
  P->slot_token = (int32_t *)kit_malloc(slots * sizeof(int32_t));
  P->slot_weight = (float *)kit_malloc(slots * sizeof(float));
  P->rows = (peer_rows *)kit_calloc((r + 1) * sizeof *P->rows);
  P->s13 = (float *)kit_malloc((size_t)P->E * 2 * N * sizeof(float));
  P->s2 = (float *)kit_malloc((size_t)P->E * K * sizeof(float));
}

peer *peer_create(const bench_weights *w, int32_t topk, int64_t max_m) {
  peer *P = (peer *)kit_calloc(sizeof *P);
  dnnl_primitive_t probe13, probe2;
  P->p = w->p;
  P->a8 = w->p == MOE_PREC_INT8; /* int4-w4a8 runs on the bf16 path */
  P->w = *w;
  P->E = w->E, P->N = w->N, P->K = w->K;
  P->max_rows = max_m; /* experts are distinct per token: at most M rows each */
  P->ops = row_ops_select();
  DNNL_CHECK(dnnl_engine_create(&P->eng, dnnl_cpu, 0));
  DNNL_CHECK(dnnl_stream_create(&P->stream, P->eng, dnnl_stream_default_flags));
  /* The weights format the matmul prefers (oneDNN 2.6 picks the same one for every row count). */
  probe13 = peer_matmul(P, 1, P->K, 2 * P->N, NULL, &P->w13_md);
  probe2 = peer_matmul(P, 1, P->N, P->K, NULL, &P->w2_md);
  DNNL_CHECK(dnnl_primitive_destroy(probe13));
  DNNL_CHECK(dnnl_primitive_destroy(probe2));
  peer_alloc_buffers(P, max_m, topk);
  peer_load_weights(P);
  return P;
}

static void peer_create_rows(peer *P, int64_t rows) {
  peer_rows *R = &P->rows[rows];
  dnnl_memory_desc_t a = md_2d(rows, P->K, peer_act_type(P), dnnl_ab), g = md_2d(rows, 2 * P->N, dnnl_f32, dnnl_ab);
  dnnl_memory_desc_t h = md_2d(rows, P->N, peer_act_type(P), dnnl_ab), y = md_2d(rows, P->K, dnnl_f32, dnnl_ab);
  R->mm13 = peer_matmul(P, rows, P->K, 2 * P->N, &P->w13_md, NULL);
  R->mm2 = peer_matmul(P, rows, P->N, P->K, &P->w2_md, NULL);
  R->a = peer_memory(P, &a, P->a_buf);
  R->g = peer_memory(P, &g, P->g_buf);
  R->h = peer_memory(P, &h, P->h_buf);
  R->y = peer_memory(P, &y, P->y_buf);
}

/* Creates the primitives for every row count an expert gets in the case's routings (untimed). */
void peer_prepare(peer *P, const layer_case *c) {
  int32_t *count = (int32_t *)kit_malloc((size_t)P->E * sizeof *count);
  const int64_t slots = c->M * c->topk;
  for (int route = 0; route < c->n_routes; route++) {
    memset(count, 0, (size_t)P->E * sizeof *count);
    for (int64_t i = 0; i < slots; i++) count[c->all_ids[route * slots + i]]++;
    for (int64_t e = 0; e < P->E; e++)
      if (count[e] && !P->rows[count[e]].mm13) peer_create_rows(P, count[e]);
  }
  free(count);
}

void peer_destroy(peer *P) {
  for (int64_t r = 0; r <= P->max_rows; r++) {
    peer_rows *R = &P->rows[r];
    if (!R->mm13) continue;
    dnnl_primitive_destroy(R->mm13), dnnl_primitive_destroy(R->mm2);
    dnnl_memory_destroy(R->a), dnnl_memory_destroy(R->g), dnnl_memory_destroy(R->h), dnnl_memory_destroy(R->y);
  }
  for (int64_t e = 0; e < P->E; e++) dnnl_memory_destroy(P->w13[e]), dnnl_memory_destroy(P->w2[e]);
  dnnl_stream_destroy(P->stream);
  dnnl_engine_destroy(P->eng);
  free(P->w13), free(P->w2), free(P->s13), free(P->s2), free(P->rows), free(P->a_buf), free(P->h_buf);
  free(P->g_buf), free(P->y_buf), free(P->hf_buf), free(P->out_f32), free(P->xq), free(P->x_scale);
  free(P->h_scale), free(P->count), free(P->start), free(P->slot_token), free(P->slot_weight);
  free(P);
}

static void peer_quantize_x(peer *P, const layer_case *c) {
  const int64_t work = c->M * P->K;
  PEER_PARALLEL_FOR
  for (int64_t m = 0; m < c->M; m++) {
    float *row = P->out_f32 + m * P->K; /* free until the layer zeroes it */
    P->ops.bf16_to_f32(c->x + m * P->K, row, P->K);
    P->x_scale[m] = P->ops.quantize_s8(row, P->K, P->xq + m * P->K);
  }
}

/* Counting sort of the slots by expert: the per-forward bookkeeping an engine does. */
static void peer_group_slots(peer *P, const layer_case *c) {
  int32_t at = 0;
  memset(P->count, 0, (size_t)P->E * sizeof *P->count);
  for (int64_t i = 0; i < c->M * c->topk; i++) P->count[c->ids[i]]++;
  for (int64_t e = 0; e < P->E; e++) P->start[e] = at, at += P->count[e];
  for (int64_t i = 0; i < c->M * c->topk; i++) {
    int32_t e = c->ids[i], s = P->start[e]++;
    P->slot_token[s] = (int32_t)(i / c->topk);
    P->slot_weight[s] = c->weights[i];
  }
  for (int64_t e = 0; e < P->E; e++) P->start[e] -= P->count[e];
}

static void peer_gather(peer *P, const layer_case *c, int32_t s0, int64_t rows) {
  size_t row = (size_t)P->K * (P->a8 ? 1 : 2);
  for (int64_t r = 0; r < rows; r++) {
    int32_t m = P->slot_token[s0 + r];
    const void *src = P->a8 ? (const void *)(P->xq + (size_t)m * P->K) : (const void *)(c->x + (size_t)m * P->K);
    memcpy((uint8_t *)P->a_buf + (size_t)r * row, src, row);
  }
}

/* h = silu(gate) * up from the W13 output (int8: dequantized first, then requantized per row). */
static void peer_activation(peer *P, int64_t e, int32_t s0, int64_t rows) {
  const int64_t N = P->N, work = rows * N;
  PEER_PARALLEL_FOR
  for (int64_t r = 0; r < rows; r++) {
    const float *g = P->g_buf + r * 2 * N, *sc = P->s13 + e * 2 * N;
    float *hf = P->hf_buf + r * N;
    if (P->a8) {
      P->ops.silu_mul(g, g + N, sc, sc + N, P->x_scale[P->slot_token[s0 + r]], hf, N);
      P->h_scale[r] = P->ops.quantize_s8(hf, N, (int8_t *)P->h_buf + r * N);
    } else {
      P->ops.silu_mul(g, g + N, NULL, NULL, 1.0f, hf, N);
      P->ops.f32_to_bf16(hf, (uint16_t *)P->h_buf + r * N, N);
    }
  }
}

static void peer_scatter(peer *P, int64_t e, int32_t s0, int64_t rows) {
  const int64_t work = rows * P->K;
  PEER_PARALLEL_FOR
  for (int64_t r = 0; r < rows; r++) { /* an expert's rows are distinct tokens: no two rows collide */
    float w = P->slot_weight[s0 + r] * (P->a8 ? P->h_scale[r] : 1.0f);
    P->ops.axpy(w, P->a8 ? P->s2 + e * P->K : NULL, P->y_buf + r * P->K,
                P->out_f32 + (int64_t)P->slot_token[s0 + r] * P->K, P->K);
  }
}

static void peer_execute(peer *P, dnnl_primitive_t mm, dnnl_memory_t src, dnnl_memory_t w, dnnl_memory_t dst) {
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
  DNNL_CHECK(dnnl_primitive_execute(mm, P->stream, 3, args));
}

static void peer_expert(peer *P, const layer_case *c, int64_t e) {
  int32_t s0 = P->start[e];
  int64_t rows = P->count[e];
  peer_rows *R = &P->rows[rows];
  if (!R->mm13) die("peer: no primitive for %lld rows (peer_prepare was skipped)", (long long)rows);
  peer_gather(P, c, s0, rows);
  peer_execute(P, R->mm13, R->a, P->w13[e], R->g);
  peer_activation(P, e, s0, rows);
  peer_execute(P, R->mm2, R->h, P->w2[e], R->y);
  peer_scatter(P, e, s0, rows);
}

static void peer_layer(peer *P, const layer_case *c) {
  const int64_t work = c->M * P->K;
  if (P->a8) peer_quantize_x(P, c);
  memset(P->out_f32, 0, (size_t)work * sizeof(float));
  peer_group_slots(P, c);
  for (int64_t e = 0; e < P->E; e++)
    if (P->count[e]) peer_expert(P, c, e);
  DNNL_CHECK(dnnl_stream_wait(P->stream));
  PEER_PARALLEL_FOR
  for (int64_t m = 0; m < c->M; m++) P->ops.f32_to_bf16(P->out_f32 + m * P->K, c->out_peer + m * P->K, P->K);
}

/* Wakes the OpenMP team, as pool_warm does for ours. */
static void peer_warm(void) {
#ifdef _OPENMP
  _Pragma("omp parallel")
  {
  }
#endif
}

double peer_timed(peer *P, const layer_case *c) {
  double t0;
  peer_warm();
  t0 = now_s();
  peer_layer(P, c);
  return now_s() - t0;
}

const char *peer_impl(const peer *P) { return P->impl; }

void peer_set_threads(int n) {
#ifdef _OPENMP
  omp_set_num_threads(n);
#else
  (void)n;
#endif
}

/* libgomp reads its wait policy when it loads. By default its threads spin ~3 ms before sleeping,
 * and spinning threads lose CFS's wake-up preference: on a shared machine every oneDNN parallel
 * region then stalls for a scheduler tick (~8 ms). Unless the user chose a policy, give libgomp the
 * spin our pool has (100 us, bench_pool.c: 4000 rounds of ~25 ns on Zen 4) and re-execute. */
void peer_wait_policy(char **argv) {
#ifdef _OPENMP
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
  setenv("GOMP_SPINCOUNT", "4000", 1);
  execv("/proc/self/exe", argv); /* returns only on failure: keep the default policy */
  unsetenv("GOMP_SPINCOUNT");
#else
  (void)argv;
#endif
}

const char *peer_wait_policy_name(void) {
  const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
  return policy ? policy : spin ? spin : "default";
}

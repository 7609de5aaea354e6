/* Every fast microkernel against its scalar twin: fresh random data, an edge sweep over K, N and
 * row counts (equal to, below, above and multiples of the blocks), strided and poisoned output.
 * Rows are separate allocations of exactly kred elements, so AddressSanitizer catches a read past
 * the end. A tier the CPU lacks is skipped (exit 77), never passed. */
#define MOE_IMPLEMENTATION
#include "../moe.h"
#include "test_util.h"

typedef struct kcase { moe_precision p; int64_t N, K; } kcase;

static uint16_t *bf16_rows(test_rng *r, int64_t n) {
  uint16_t *v = (uint16_t *)test_malloc((size_t)n * 2);
  for (int64_t i = 0; i < n; i++) v[i] = moe_f32_to_bf16((float)test_normal(r));
  return v;
}

/* Random plain weights of one expert (E = 1) of precision p, packed. */
static void *pack_random(test_rng *r, moe_precision p, int64_t N, int64_t K, moe_experts *ex, float **bias) {
  moe_weights w;
  int64_t n13 = 2 * N * K, n2 = K * N;
  float *f13 = (float *)test_malloc((size_t)n13 * 4), *f2 = (float *)test_malloc((size_t)n2 * 4);
  void *q13, *q2, *buf;
  size_t size;
  memset(&w, 0, sizeof w);
  for (int64_t i = 0; i < n13; i++) f13[i] = (float)(test_normal(r) / sqrt((double)K));
  for (int64_t i = 0; i < n2; i++) f2[i] = (float)(test_normal(r) / sqrt((double)N));
  w.precision = p, w.E = 1, w.N = N, w.K = K;
  if (p == MOE_PREC_INT8) {
    float *s13 = (float *)test_malloc((size_t)(2 * N) * 4), *s2 = (float *)test_malloc((size_t)K * 4);
    q13 = test_malloc((size_t)n13), q2 = test_malloc((size_t)n2);
    moe_quantize_weight_int8(f13, 1, 2 * N, K, (int8_t *)q13, s13);
    moe_quantize_weight_int8(f2, 1, K, N, (int8_t *)q2, s2);
    w.w13_scale = s13, w.w2_scale = s2;
  } else {
    q13 = test_malloc((size_t)n13 * 2), q2 = test_malloc((size_t)n2 * 2);
    moe_convert_from_f32(MOE_BF16, f13, q13, (size_t)n13);
    moe_convert_from_f32(MOE_BF16, f2, q2, (size_t)n2);
  }
  w.w13 = q13, w.w2 = q2;
  *bias = (float *)test_malloc((size_t)(2 * N + K) * 4);
  for (int64_t i = 0; i < 2 * N + K; i++) (*bias)[i] = (float)test_normal(r) * 0.1f;
  size = moe_pack_size(&w);
  buf = test_malloc(size);
  CHECK(moe_pack(&w, ex, buf, size) == MOE_OK, "pack");
  free(f13), free(f2), free(q13), free(q2);
  free((void *)w.w13_scale), free((void *)w.w2_scale);
  return buf;
}

/* Runs kernel fn over one panel and returns the output block: gemm1 overwrites a poisoned block;
 * gemm2 adds into rows that start from a known pattern. Around the mr x nr part: poison. */
static float *run(moe_gemm_ukernel fn, int which, const moe_gemm_args *proto, int64_t ldc) {
  size_t count = (size_t)(uint32_t)proto->mr * (size_t)(uint32_t)ldc;
  float *c = (float *)test_malloc(count * 4), *rows[MOE_BLOCK_M];
  moe_gemm_args g = *proto;
  test_poison(c, count * 4);
  if (which == 2)
    for (int32_t m = 0; m < proto->mr; m++) {
      rows[m] = c + m * ldc;
      for (int32_t n = 0; n < proto->nr; n++) rows[m][n] = 0.25f * (float)(m - n % 7);
    }
  g.c = c, g.ldc = ldc, g.c_rows = rows;
  fn(&g);
  return c;
}

/* fast vs scalar on one set of arguments: all mr x nr written and close, nothing else touched. */
static double compare(const moe_gemm_config *fast, const moe_gemm_config *ref, int which, const moe_gemm_args *g,
                      double tol, const char *what) {
  int64_t ldc = g->nr + 5;
  float *a = run(which == 1 ? fast->gemm1 : fast->gemm2, which, g, ldc);
  float *b = run(which == 1 ? ref->gemm1 : ref->gemm2, which, g, ldc);
  double maxref = 0, maxdiff = 0;
  int bad = 0;
  for (int32_t m = 0; m < g->mr; m++)
    for (int64_t n = 0; n < ldc; n++) {
      float x = a[m * ldc + n], y = b[m * ldc + n];
      uint32_t ux, uy;
      memcpy(&ux, &x, 4), memcpy(&uy, &y, 4);
      if (n >= g->nr) { bad += ux != 0xFFFFFFFFu; continue; }
      if (!isfinite(x) || !isfinite(y)) { bad++; continue; }
      if (fabs(y) > maxref) maxref = fabs(y);
      if (fabs(x - y) > maxdiff) maxdiff = fabs(x - y);
    }
  CHECK(bad == 0, "%s: %d elements unwritten, NaN or written past nr", what, bad);
  /* relative to the tile's largest output; outputs are O(1), the floor covers a tile that cancels */
  CHECK(maxdiff <= tol * (maxref > 1e-3 ? maxref : 1e-3), "%s: max diff %.3g vs max %.3g", what, maxdiff, maxref);
  free(a), free(b);
  return maxref > 0 ? maxdiff / maxref : maxdiff;
}

static void sweep_case(test_rng *r, const moe_gemm_config *fast, const moe_gemm_config *ref, kcase kc) {
  moe_experts ex;
  float *bias;
  void *buf = pack_random(r, kc.p, kc.N, kc.K, &ex, &bias);
  int a8 = kc.p == MOE_PREC_INT8;
  const int rows[] = {1, 2, 3, 5, 6, 7, 11, 12, 13, 32};
  for (int which = 1; which <= 2; which++) {
    int64_t kred = which == 1 ? kc.K : kc.N, ncols = which == 1 ? kc.N : kc.K;
    int64_t width = which == 1 ? 32 : 64; /* gemm2 takes two neighbouring panels at once */
    int64_t panels = (ncols + width - 1) / width;
    for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
      int32_t mr = rows[ri];
      void *arows[MOE_BLOCK_M];
      float a_scale[MOE_BLOCK_M], row_w[MOE_BLOCK_M];
      for (int32_t m = 0; m < mr; m++) {
        if (a8) {
          float *xf = (float *)test_malloc((size_t)kred * 4);
          arows[m] = test_malloc((size_t)kred);
          for (int64_t k = 0; k < kred; k++) xf[k] = (float)test_normal(r);
          a_scale[m] = moe_quantize_row_u8(xf, kred, (uint8_t *)arows[m]);
          free(xf);
        } else {
          arows[m] = bf16_rows(r, kred);
          a_scale[m] = 1.0f;
        }
        row_w[m] = (float)test_uniform(r);
      }
      for (int64_t p = 0; p < panels; p++) {
        moe_gemm_args g;
        char what[160];
        memset(&g, 0, sizeof g);
        g.mr = mr;
        g.nr = (int32_t)(ncols - width * p < width ? ncols - width * p : width);
        g.a = (const void *const *)arows;
        g.a_scale = a_scale;
        g.kred = kred;
        g.act = (moe_activation)((p + ri) % 3);
        g.alpha = 1.702f, g.limit = 7.0f;
        if (which == 1) {
          g.w = ex.w13 + (size_t)(2 * p) * ex.panel13_bytes;
          g.panel_bytes = ex.panel13_bytes, g.kpad = ex.k13_pad;
          if (p % 2) g.bias = bias + 32 * p, g.bias_up = bias + kc.N + 32 * p;
        } else {
          g.w = ex.w2 + (size_t)(2 * p) * ex.panel2_bytes;
          g.panel_bytes = ex.panel2_bytes, g.kpad = ex.k2_pad;
          g.row_weight = row_w;
          if (p % 2) g.bias = bias + 2 * kc.N + 64 * p;
          if (p + 1 < panels) g.w_next = g.w + 2 * ex.panel2_bytes, g.w_next_bytes = ex.panel2_bytes;
        }
        snprintf(what, sizeof what, "%s gemm%d N=%lld K=%lld mr=%d panel=%lld act=%d", fast->name, which,
                 (long long)kc.N, (long long)kc.K, mr, (long long)p, (int)g.act);
        /* int8 gemm2 has no transcendental epilogue: the exact integer sums give equal bits */
        compare(fast, ref, which, &g, a8 ? (which == 2 ? 0.0 : 1e-5) : 5e-5, what);
      }
      for (int32_t m = 0; m < mr; m++) free(arows[m]);
    }
  }
  free(buf), free(bias);
}

/* The vectorized row operations give the same bits as the scalar ones (tails, NaN, Inf, ties). */
static int test_row_ops(test_rng *r) {
#ifdef MOE__HAVE_AVX512
  const int64_t ns[] = {1, 15, 16, 17, 100, 2048 + 3};
  if ((moe_cpu_features() & MOE__CPU_AVX512_BASE) != MOE__CPU_AVX512_BASE) return 0;
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
    for (int kind = 0; kind < 4; kind++) {
      int64_t n = ns[i];
      float *x = (float *)test_malloc((size_t)n * 4), *f1 = (float *)test_malloc((size_t)n * 4), *f2 = (float *)test_malloc((size_t)n * 4);
      uint8_t *q1 = (uint8_t *)test_malloc((size_t)n), *q2 = (uint8_t *)test_malloc((size_t)n);
      uint16_t *b1 = (uint16_t *)test_malloc((size_t)n * 2), *b2 = (uint16_t *)test_malloc((size_t)n * 2);
      float s1, s2;
      for (int64_t k = 0; k < n; k++) x[k] = (float)test_normal(r) * (kind == 3 ? 1e-39f : 3.0f);
      if (kind == 1) x[n / 2] = NAN;
      if (kind == 2) x[n - 1] = -INFINITY;
      if (n > 4 && kind == 0) x[1] = 127.0f * 2.5f / 127.0f, x[2] = 1.0f + 1.0f / 256; /* a quantization tie, a bf16 tie */
      test_poison(q1, (size_t)(uint32_t)n), test_poison(q2, (size_t)(uint32_t)n);
      s1 = moe_quantize_row_u8(x, n, q1);
      s2 = moe__quantize_row_u8_avx512(x, n, q2);
      CHECK(memcmp(&s1, &s2, 4) == 0 && (kind != 0 || memcmp(q1, q2, (size_t)n) == 0), "quantize row n=%lld kind=%d", (long long)n, kind);
      moe__f32_to_bf16_scalar(x, b1, n);
      moe__f32_to_bf16_avx512(x, b2, n);
      CHECK(memcmp(b1, b2, (size_t)n * 2) == 0, "f32->bf16 n=%lld kind=%d", (long long)n, kind);
      moe__bf16_to_f32_scalar(b1, f1, n);
      moe__bf16_to_f32_avx512(b1, f2, n);
      CHECK(memcmp(f1, f2, (size_t)n * 4) == 0, "bf16->f32 n=%lld kind=%d", (long long)n, kind);
      free(x), free(f1), free(f2), free(q1), free(q2), free(b1), free(b2);
    }
  printf("row operations avx512 vs scalar: %s\n", test_failures ? "FAILED" : "ok");
  return 1;
#else
  (void)r;
  return 0;
#endif
}

int main(void) {
  test_rng r = {2026};
  const moe_precision precs[] = {MOE_PREC_BF16, MOE_PREC_FP16, MOE_PREC_INT8};
  const int64_t Ks[] = {1, 2, 3, 4, 5, 31, 32, 33, 63, 64, 100, 129, 2048 + 7};
  const int64_t Ns[] = {1, 16, 31, 32, 33, 70};
  /* as K is gemm2's column count, Ks covers 1, 2 and partial panel pairs there */
  int tested = 0, skipped = 0;
  for (int isa = MOE_ISA_AVX512; isa < MOE_ISA_COUNT; isa++)
    for (size_t pi = 0; pi < sizeof precs / sizeof precs[0]; pi++) {
      const moe_gemm_config *fast = moe_gemm_config_for(precs[pi], (moe_isa)isa);
      const moe_gemm_config *ref = moe_gemm_config_for(precs[pi], MOE_ISA_SCALAR);
      if (!fast) {
        skipped++;
        printf("skip %s on %s: not compiled or not supported by this CPU\n", moe_precision_name(precs[pi]),
               moe_isa_name((moe_isa)isa));
        continue;
      }
      int before = test_failures;
      for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
        for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++) {
          kcase kc;
          kc.p = precs[pi], kc.K = Ks[ki], kc.N = Ns[ni];
          if (kc.K * kc.N > 40000 && ni % 2) continue; /* keep the big K to a few N */
          sweep_case(&r, fast, ref, kc);
        }
      tested++;
      printf("%s vs scalar: %s\n", fast->name, test_failures > before ? "FAILED" : "ok");
    }
  tested += test_row_ops(&r);
  if (!tested) {
    printf("no fast kernel runs on this CPU (%d skipped)\n", skipped);
    return TEST_SKIP;
  }
  return test_finish("kernels");
}

/* bench_decode.h — the decode roof of the low-bit precisions (FP8, INT4 W4A8, INT4 W4A16, MXFP4): the
 * AMX tier's B staging alone (moe__amx_stage_all: every k step's lines decoded into the call's L1
 * blocks, no tiles), over panels in cache, on all threads. Whatever the bandwidth and the tiles
 * allow, a call of these precisions cannot read its weights faster than it decodes them.
 *
 * Included after the library's implementation (MOE_IMPLEMENTATION) by bench_kernels.c and
 * bench_layer.c: it calls the tier's internals. The decoders are AVX-512 code, so the roof is
 * measured on any CPU with the tier's AVX-512 features, tiles or not. */
#ifndef BENCH_DECODE_H
#define BENCH_DECODE_H

#include "bench_common.h"
#include "bench_pool.h"

#include <stdlib.h>
#include <string.h>

#define DECODE_TRIAL_S 0.002 /* seconds per trial and thread */

/* 1 when precision p decodes its B tiles on the AMX tier and this CPU runs the decoders. */
static inline int decode_roof_available(moe_precision p) {
#ifdef MOE__HAVE_AMX
  for (int i = 0; i < moe_kernel_count(); i++) {
    const moe_gemm_config *k = moe_kernel_at(i);
    const uint32_t tiles = MOE_CPU_AMX_TILE | MOE_CPU_AMX_BF16 | MOE_CPU_AMX_INT8;
    if (k->isa == MOE_ISA_AMX && k->precision == p) return moe__amx_decodes(p) && have_features(k->cpu_features & ~tiles);
  }
#endif
  (void)p;
  return 0;
}

#ifdef MOE__HAVE_AMX
/* Unit u of GEMM `gemm` (1: the gate and up panels of 32 columns; 2: two output panels) of expert 0:
 * the fields the staging reads. Returns the unit's packed bytes (codes and scales). */
static size_t decode_unit(const moe_experts *ex, int gemm, int64_t u, moe_gemm_args *g) {
  memset(g, 0, sizeof *g);
  g->mr = MOE_BLOCK_M;
  g->kgroup = moe__kgroup(ex->precision, ex->block_k, ex->group);
  if (gemm == 1) {
    g->w = ex->w13 + (size_t)(2 * u) * ex->panel13_bytes, g->panel_bytes = ex->panel13_bytes;
    g->nr = MOE_NR, g->kred = ex->K, g->kpad = ex->k13_pad;
    return 2 * ex->panel13_bytes;
  }
  g->w = ex->w2 + (size_t)(2 * u) * ex->panel2_bytes, g->panel_bytes = ex->panel2_bytes;
  g->nr = (int32_t)(ex->K - 2 * MOE_NR * u < 2 * MOE_NR ? ex->K - 2 * MOE_NR * u : 2 * MOE_NR);
  g->kred = ex->N, g->kpad = ex->k2_pad;
  return (g->nr > MOE_NR ? 2 : 1) * ex->panel2_bytes;
}

typedef struct decode_job {
  const moe_experts *ex;
  int gemm;
  int64_t units;   /* expert 0's units 0 .. units - 1, in turn */
  double *gbs;     /* per thread: GB/s of its trial */
} decode_job;

static void decode_task(void *arg, int64_t t) {
  const decode_job *j = (const decode_job *)arg;
  moe__amx_call *C = (moe__amx_call *)aligned_alloc(64, (sizeof(moe__amx_call) + 63) / 64 * 64);
  moe__amx_block_buf *buf = (moe__amx_block_buf *)aligned_alloc(64, sizeof(moe__amx_block_buf));
  double bytes = 0, t0 = now_s(), s;
  if (!C || !buf) die("out of memory");
  do
    for (int64_t u = 0; u < j->units; u++) {
      moe_gemm_args g;
      const size_t b = decode_unit(j->ex, j->gemm, u, &g);
      if (!moe__amx_stage_all(C, j->ex->precision, &g, j->gemm == 1, buf)) die("%s: the AMX tier does not take these panels",
                                                                           prec_name(j->ex->precision));
      bytes += (double)b;
    }
  while ((s = now_s() - t0) < DECODE_TRIAL_S);
  j->gbs[t] = bytes / s / 1e9;
  free(C), free(buf);
}
#endif

/* GB/s of packed weights (codes and scales) that all threads decode together: expert 0's first
 * GEMM `gemm` units up to half of l2_bytes per thread, each thread on its own and summed, the best
 * of `trials` trials (as the peaks are measured). 0 when decode_roof_available(p) is not. */
static inline double decode_roof_gbs(bench_pool *pool, const moe_experts *ex, int gemm, size_t l2_bytes, int trials) {
  double best = 0;
#ifdef MOE__HAVE_AMX
  const int threads = pool_threads(pool);
  decode_job j;
  moe_gemm_args g;
  if (!decode_roof_available(ex->precision)) return 0;
  j.ex = ex, j.gemm = gemm;
  j.units = (int64_t)(l2_bytes / 2 / decode_unit(ex, gemm, 0, &g));
  {
    const int64_t per_expert = gemm == 1 ? (ex->N + MOE_NR - 1) / MOE_NR : (ex->K + 2 * MOE_NR - 1) / (2 * MOE_NR);
    j.units = j.units < 1 ? 1 : j.units > per_expert ? per_expert : j.units;
  }
  j.gbs = (double *)calloc((size_t)threads, sizeof(double));
  if (!j.gbs) die("out of memory");
  for (int i = 0; i <= trials; i++) { /* the first trial brings the panels into cache */
    double sum = 0;
    pool_warm(pool);
    pool_parallel_for(pool, decode_task, &j, threads);
    for (int t = 0; t < threads; t++) sum += j.gbs[t];
    if (i > 0 && sum > best) best = sum;
  }
  free(j.gbs);
#else
  (void)pool, (void)ex, (void)gemm, (void)l2_bytes, (void)trials;
#endif
  return best;
}

#endif /* BENCH_DECODE_H */

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
#ifndef MOE_IMPLEMENTATION /* without it the roof would be compiled out silently (MOE__HAVE_AMX unset) */
#error "bench_decode.h calls the AMX tier's internals: define MOE_IMPLEMENTATION before including it"
#endif

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
typedef struct decode_job {
  const moe_experts *ex;
  int gemm;
  int64_t units;            /* expert 0's units 0 .. units - 1, in turn */
  moe_gemm_args base;       /* every field the staging reads but w and nr */
  moe__amx_call **calls;    /* per thread: its call and block buffer (the decoded tiles stay live) */
  moe__amx_block_buf **bufs;
  double *gbs;              /* per thread: GB/s of its trial */
} decode_job;

static void decode_task(void *arg, int64_t t) {
  const decode_job *j = (const decode_job *)arg;
  double bytes = 0, t0 = now_s(), s;
  do
    for (int64_t u = 0; u < j->units; u++) {
      moe_gemm_args g = j->base;
      bytes += (double)unit_at(j->ex, j->gemm, u, &g);
      if (!moe__amx_stage_all(j->calls[t], j->ex->precision, &g, j->gemm == 1, j->bufs[t]))
        die("%s: the AMX tier does not take these panels", prec_name(j->ex->precision));
    }
  while ((s = now_s() - t0) < DECODE_TRIAL_S);
  j->gbs[t] = bytes / s / 1e9;
}

static void *decode_alloc(size_t n) {
  void *p = aligned_alloc(64, (n + 63) / 64 * 64);
  if (!p) die("out of memory");
  return p;
}
#endif

/* GB/s of packed weights (codes and scales) that all threads decode together: expert 0's first
 * GEMM `gemm` units up to half of l2_bytes per thread (cache_units), each thread on its own and
 * summed, the best of `trials` trials (as the peaks are measured). 0 when decode_roof_available(p)
 * is not. */
static inline double decode_roof_gbs(bench_pool *pool, const moe_experts *ex, int gemm, size_t l2_bytes, int trials) {
  double best = 0;
#ifdef MOE__HAVE_AMX
  const int threads = pool_threads(pool);
  decode_job j;
  if (!decode_roof_available(ex->precision)) return 0;
  memset(&j, 0, sizeof j);
  j.ex = ex, j.gemm = gemm, j.units = cache_units(ex, gemm, l2_bytes);
  j.base.mr = MOE_BLOCK_M, j.base.kgroup = moe__kgroup(ex->precision, ex->block_k, ex->group);
  j.base.panel_bytes = gemm == 1 ? ex->panel13_bytes : ex->panel2_bytes;
  j.base.kred = gemm == 1 ? ex->K : ex->N, j.base.kpad = gemm == 1 ? ex->k13_pad : ex->k2_pad;
  j.calls = (moe__amx_call **)kit_malloc((size_t)threads * sizeof *j.calls);
  j.bufs = (moe__amx_block_buf **)kit_malloc((size_t)threads * sizeof *j.bufs);
  j.gbs = (double *)kit_malloc((size_t)threads * sizeof *j.gbs);
  for (int t = 0; t < threads; t++)
    j.calls[t] = (moe__amx_call *)decode_alloc(sizeof(moe__amx_call)), j.bufs[t] = (moe__amx_block_buf *)decode_alloc(sizeof(moe__amx_block_buf));
  for (int i = 0; i <= trials; i++) { /* the first trial brings the panels into cache */
    double sum = 0;
    pool_warm(pool);
    pool_parallel_for(pool, decode_task, &j, threads);
    for (int t = 0; t < threads; t++) sum += j.gbs[t];
    if (i > 0 && sum > best) best = sum;
  }
  for (int t = 0; t < threads; t++) free(j.calls[t]), free(j.bufs[t]);
  free(j.calls), free(j.bufs), free(j.gbs);
#else
  (void)pool, (void)ex, (void)gemm, (void)l2_bytes, (void)trials;
#endif
  return best;
}

#endif /* BENCH_DECODE_H */

/* bench_pack — moe_pack_parallel per precision, on 1 thread and on all: source bytes (codes, scales,
 * zero points, biases) per second, beside memcpy of the same bytes in the same run.
 *
 *   bench_pack [--model NAME] [--experts E] [--precision LIST|all] [--threads T] [--runs R]
 *
 * One JSON line per (precision, threads) on stdout ("bench":"pack"): src_gbs (source GB/s of the
 * pack), copy_gbs (memcpy of the source bytes into a second buffer on the same threads),
 * frac_of_copy (the copy's time over the pack's), and the packed size; a table on stderr. Medians of
 * --runs packs into the same (warm) buffer. */
#define _POSIX_C_SOURCE 200809L
#define MOE_API /* external linkage, as the other benchmarks */
#define MOE_IMPLEMENTATION
#include "bench_common.h"
#include "bench_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct copy_job {
  const uint8_t *src[8];
  uint8_t *dst[8];
  size_t bytes[8];
  int n, tasks;
} copy_job;

/* Task t copies its share of every source array. */
static void copy_task(void *arg, int64_t t) {
  copy_job *c = (copy_job *)arg;
  for (int i = 0; i < c->n; i++) {
    size_t per = (c->bytes[i] / (size_t)c->tasks + 63) & ~(size_t)63, a = (size_t)t * per;
    if (a < c->bytes[i]) memcpy(c->dst[i] + a, c->src[i] + a, a + per < c->bytes[i] ? per : c->bytes[i] - a);
  }
}

static void add_array(copy_job *c, const void *p, size_t bytes) {
  if (!p || !bytes) return;
  c->src[c->n] = (const uint8_t *)p, c->bytes[c->n] = bytes, c->dst[c->n] = (uint8_t *)kit_malloc(bytes);
  memset(c->dst[c->n], 1, bytes);
  c->n++;
}

static size_t src_bytes(const kit_weights *kw) {
  size_t e = (size_t)kw->w.E, f = sizeof(float);
  size_t b = e * (kw->m13.code_bytes + kw->m2.code_bytes) + e * (kw->m13.n_scale + kw->m2.n_scale) * f +
             e * (kw->m13.n_zero + kw->m2.n_zero + kw->m13.n_e8m0 + kw->m2.n_e8m0);
  return b;
}

static double median_of(double *v, int n) { return stats_of(v, n).median; }

int main(int argc, char **argv) {
  const char *model = "qwen3-30b-a3b";
  int64_t experts = 32;
  int threads = (int)sysconf(_SC_NPROCESSORS_ONLN), runs = 5;
  const char *precs = "all";
  static const moe_precision all[] = {MOE_PREC_BF16, MOE_PREC_FP16, MOE_PREC_INT8, MOE_PREC_FP8,
                                      MOE_PREC_INT4_W4A8, MOE_PREC_INT4_W4A16, MOE_PREC_MXFP4};
  bench_prog = "bench_pack";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--model") && v) model = v, i++;
    else if (!strcmp(a, "--experts") && v) experts = atoll(v), i++;
    else if (!strcmp(a, "--precision") && v) precs = v, i++;
    else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
    else if (!strcmp(a, "--runs") && v) runs = atoi(v), i++;
    else die("usage: bench_pack [--model NAME] [--experts E] [--precision LIST|all] [--threads T] [--runs R]");
  }
  const kit_model *mdl = kit_model_find(model);
  if (!mdl) die("unknown model %s", model);
  if (threads < 1 || runs < 1 || runs > 64 || experts < 1) die("bad --threads, --runs or --experts");
  fprintf(stderr, "%s: %lld experts of N %lld, K %lld; pack on 1 and %d threads, medians of %d\n", model,
          (long long)experts, (long long)mdl->N, (long long)mdl->K, threads, runs);
  for (size_t pi = 0; pi < sizeof all / sizeof all[0]; pi++) {
    moe_precision p = all[pi];
    if (strcmp(precs, "all") && !strstr(precs, prec_name(p))) continue;
    if (!moe_precision_compiled(p)) continue;
    kit_weights kw;
    kit_weights_random_blocks(&kw, p, experts, mdl->N, mdl->K, 0, 0, 0, 1, KIT_CODES);
    size_t n = moe_pack_size(&kw.w), src = src_bytes(&kw);
    uint8_t *buf = (uint8_t *)kit_malloc(n);
    memset(buf, 0, n);
    copy_job cj;
    memset(&cj, 0, sizeof cj);
    add_array(&cj, kw.w13, (size_t)experts * kw.m13.code_bytes), add_array(&cj, kw.w2, (size_t)experts * kw.m2.code_bytes);
    add_array(&cj, kw.s13, (size_t)experts * kw.m13.n_scale * 4), add_array(&cj, kw.s2, (size_t)experts * kw.m2.n_scale * 4);
    add_array(&cj, kw.z13, (size_t)experts * kw.m13.n_zero), add_array(&cj, kw.z2, (size_t)experts * kw.m2.n_zero);
    add_array(&cj, kw.x13, (size_t)experts * kw.m13.n_e8m0), add_array(&cj, kw.x2, (size_t)experts * kw.m2.n_e8m0);
    for (int t = 1; t <= threads; t = t == threads ? threads + 1 : threads) {
      bench_pool *pool = pool_create(t);
      moe_parallel par = {pool_parallel_for, pool, t};
      double tp[64], tc[64];
      moe_experts ex;
      for (int r = 0; r < runs; r++) {
        double t0 = now_s();
        if (moe_pack_parallel(&kw.w, &ex, buf, n, &par) != MOE_OK) die("moe_pack_parallel failed");
        tp[r] = now_s() - t0;
        cj.tasks = t;
        t0 = now_s();
        pool_parallel_for(pool, copy_task, &cj, t);
        tc[r] = now_s() - t0;
      }
      double pack_s = median_of(tp, runs), copy_s = median_of(tc, runs);
      json j;
      json_begin(&j);
      json_str(&j, "bench", "pack"), json_str(&j, "precision", prec_name(p)), json_str(&j, "model", model);
      json_int(&j, "experts", experts), json_int(&j, "threads", t);
      json_num(&j, "src_mb", (double)src / 1e6), json_num(&j, "packed_mb", (double)n / 1e6);
      json_num(&j, "pack_ms", pack_s * 1e3), json_num(&j, "copy_ms", copy_s * 1e3);
      json_num(&j, "src_gbs", (double)src / pack_s / 1e9), json_num(&j, "copy_gbs", (double)src / copy_s / 1e9);
      json_num(&j, "frac_of_copy", copy_s / pack_s);
      json_end(&j);
      fprintf(stderr, "  %-10s %2d thread%s  %8.1f MB in %8.1f ms  %6.2f GB/s   memcpy %6.2f GB/s   %.3f of copy\n",
              prec_name(p), t, t > 1 ? "s" : " ", (double)src / 1e6, pack_s * 1e3, (double)src / pack_s / 1e9,
              (double)src / copy_s / 1e9, copy_s / pack_s);
      pool_destroy(pool);
    }
    for (int i = 0; i < cj.n; i++) free(cj.dst[i]);
    free(buf);
    kit_weights_free(&kw);
  }
  return 0;
}

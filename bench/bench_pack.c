/* bench_pack — moe_pack_parallel per precision, and the importers (moe_import.h: checkpoint layouts
 * to plain moe_weights), on 1 thread and on all: source bytes (codes, scales, zero points) per
 * second, beside memcpy of the same bytes in the same run.
 *
 *   bench_pack [--model NAME] [--experts E] [--precision LIST|all] [--threads T] [--runs R] [--isa TIER]
 *
 * LIST names precisions and importers: import-fp8-block (DeepSeek 128 x 128 blocks), import-awq,
 * import-gptq (group 128, f16 scales), import-mxfp4 (gpt-oss gate_up interleaved); "all" is every
 * one. An importer runs once per matrix (gate, up, down of every expert) as the tasks of the pool.
 * One JSON line per (precision or importer, threads) on stdout ("bench":"pack"): src_gbs (source
 * GB/s), copy_gbs (memcpy of the source bytes into a second buffer on the same threads),
 * frac_of_copy (the copy's time over the pack's or import's), and the output size; a table on
 * stderr. Medians of --runs into the same (warm) buffers. */
#define _POSIX_C_SOURCE 200809L
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

/* Times fn(arg, pool) against memcpy of the copy job's bytes on 1 and `threads` threads; one JSON
 * line and one table row each. */
typedef void (*work_fn)(void *arg, bench_pool *pool, int threads);
static void measure(const char *model, int64_t experts, const char *name, int threads, int runs, work_fn fn, void *arg,
                    size_t src, size_t out_bytes, copy_job *cj) {
  for (int t = 1; t <= threads; t = t == threads ? threads + 1 : threads) {
    bench_pool *pool = pool_create(t);
    double tp[64], tc[64];
    for (int r = 0; r < runs; r++) {
      double t0 = now_s();
      fn(arg, pool, t);
      tp[r] = now_s() - t0;
      cj->tasks = t;
      t0 = now_s();
      pool_parallel_for(pool, copy_task, cj, t);
      tc[r] = now_s() - t0;
    }
    double work_s = median_of(tp, runs), copy_s = median_of(tc, runs);
    json j;
    json_begin(&j);
    json_str(&j, "bench", "pack"), json_str(&j, "precision", name), json_str(&j, "model", model);
    json_str(&j, "isa", moe_isa_name(moe_get_isa())); /* the tier in use (--isa caps it): its packer, or the best below */
    json_int(&j, "experts", experts), json_int(&j, "threads", t);
    json_num(&j, "src_mb", (double)src / 1e6), json_num(&j, "packed_mb", (double)out_bytes / 1e6);
    json_num(&j, "pack_ms", work_s * 1e3), json_num(&j, "copy_ms", copy_s * 1e3);
    json_num(&j, "src_gbs", (double)src / work_s / 1e9), json_num(&j, "copy_gbs", (double)src / copy_s / 1e9);
    json_num(&j, "frac_of_copy", copy_s / work_s);
    json_end(&j);
    fprintf(stderr, "  %-16s %2d thread%s  %8.1f MB in %8.1f ms  %6.2f GB/s   memcpy %6.2f GB/s   %.3f of copy\n", name, t,
            t > 1 ? "s" : " ", (double)src / 1e6, work_s * 1e3, (double)src / work_s / 1e9, (double)src / copy_s / 1e9,
            copy_s / work_s);
    pool_destroy(pool);
  }
}

typedef struct pack_arg {
  const moe_weights *w;
  uint8_t *buf;
  size_t bytes;
} pack_arg;
static void run_pack(void *arg, bench_pool *pool, int threads) {
  pack_arg *a = (pack_arg *)arg;
  moe_parallel par = {pool_parallel_for, pool, threads};
  moe_experts ex;
  if (moe_pack_parallel(a->w, &ex, a->buf, a->bytes, &par) != MOE_OK) die("moe_pack_parallel failed");
}

/* ---- importers ------------------------------------------------------------------------------------
 * Random checkpoint tensors of E experts (gate and up [N][K], down [K][N]) in one source arena, and
 * the plain moe_weights arrays they go to; task t imports matrix t % 3 of expert t / 3. */
typedef enum { IMP_FP8, IMP_AWQ, IMP_GPTQ, IMP_MXFP4, IMP_COUNT } imp_kind;
static const char *const imp_names[IMP_COUNT] = {"import-fp8-block", "import-awq", "import-gptq", "import-mxfp4"};
#define IMP_GROUP 128
#define IMP_BLOCK 128

typedef struct imp_job {
  imp_kind kind;
  int64_t E, N, K;
  uint8_t *arena;
  size_t w_at[3], s_at[3], z_at[3], per_expert; /* offsets of matrix m's tensors in an expert's part */
  uint8_t *q13, *q2, *z13, *z2;                  /* destination: codes, zero points or e8m0 */
  float *s13, *s2;
  int failed;
} imp_job;

/* Bytes of matrix [rows][cols]'s checkpoint tensors: weight (w), scales (s), zero points (z). */
static void imp_sizes(imp_kind k, int64_t rows, int64_t cols, size_t *w, size_t *s, size_t *z) {
  const size_t r = (size_t)rows, c = (size_t)cols, ng = (size_t)((cols + IMP_GROUP - 1) / IMP_GROUP);
  *z = 0;
  switch (k) {
  case IMP_FP8: *w = r * c, *s = (size_t)((rows + IMP_BLOCK - 1) / IMP_BLOCK) * (size_t)((cols + IMP_BLOCK - 1) / IMP_BLOCK) * 4; break;
  case IMP_AWQ: case IMP_GPTQ: *w = r * c / 2, *s = ng * r * 2, *z = ng * r / 2; break;
  default: *w = r * c / 2, *s = r * c / 32; break;
  }
}

static void imp_task(void *arg, int64_t t) {
  imp_job *j = (imp_job *)arg;
  const int64_t e = t / 3, m = t % 3, rows = m < 2 ? j->N : j->K, cols = m < 2 ? j->K : j->N;
  const int64_t dst_rows = m < 2 ? 2 * j->N : j->K, row0 = m == 1 ? j->N : 0;
  const uint8_t *src = j->arena + (size_t)e * j->per_expert, *w = src + j->w_at[m], *s = src + j->s_at[m], *z = src + j->z_at[m];
  uint8_t *q = m < 2 ? j->q13 : j->q2, *zp = m < 2 ? j->z13 : j->z2;
  float *sc = m < 2 ? j->s13 : j->s2;
  const int64_t ng = (cols + IMP_GROUP - 1) / IMP_GROUP;
  moe_status st = MOE_OK;
  switch (j->kind) {
  case IMP_FP8:
    st = moe_import_fp8_block(w, s, rows, cols, IMP_BLOCK, IMP_BLOCK, q + (size_t)(e * dst_rows * cols),
                              sc + (size_t)(e * ((dst_rows + IMP_BLOCK - 1) / IMP_BLOCK) * ((cols + IMP_BLOCK - 1) / IMP_BLOCK)), dst_rows, row0);
    break;
  case IMP_AWQ:
    st = moe_import_awq(w, z, s, MOE_F16, rows, cols, IMP_GROUP, q + (size_t)(e * dst_rows * cols / 2), sc + (size_t)(e * dst_rows * ng),
                        zp + (size_t)(e * dst_rows * ng), dst_rows, row0);
    break;
  case IMP_GPTQ:
    st = moe_import_gptq(w, z, s, MOE_F16, NULL, 4, rows, cols, IMP_GROUP, q + (size_t)(e * dst_rows * cols / 2),
                         sc + (size_t)(e * dst_rows * ng), zp + (size_t)(e * dst_rows * ng), dst_rows, row0);
    break;
  default:
    if (m == 1) return; /* gate_up_proj: one interleaved [2N][K] tensor, imported by task m = 0 */
    st = moe_import_mxfp4(w, s, m == 0 ? 2 * rows : rows, cols, m == 0, q + (size_t)(e * dst_rows * cols / 2),
                          zp + (size_t)(e * dst_rows * cols / 32), dst_rows, 0);
  }
  if (st != MOE_OK) j->failed = 1;
}

static void run_import(void *arg, bench_pool *pool, int threads) {
  imp_job *j = (imp_job *)arg;
  (void)threads;
  pool_parallel_for(pool, imp_task, j, 3 * j->E);
  if (j->failed) die("%s failed", imp_names[j->kind]);
}

/* The importer's source (random bytes; f16 scales finite) and destination; returns the source bytes. */
static size_t imp_make(imp_job *j, imp_kind k, int64_t E, int64_t N, int64_t K, size_t *out_bytes) {
  size_t w, s, z, at = 0, q13, q2, m13, m2;
  const int mx = k == IMP_MXFP4;
  uint64_t x = 0x9E3779B97F4A7C15u;
  memset(j, 0, sizeof *j);
  j->kind = k, j->E = E, j->N = N, j->K = K;
  for (int m = 0; m < 3; m++) {
    imp_sizes(k, m < 2 ? (mx && m == 0 ? 2 * N : mx ? 0 : N) : K, m < 2 ? K : N, &w, &s, &z);
    j->w_at[m] = at, at += w, j->s_at[m] = at, at += s, j->z_at[m] = at, at += z;
  }
  j->per_expert = at;
  j->arena = (uint8_t *)kit_malloc(at * (size_t)E);
  for (size_t i = 0; i < at * (size_t)E; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, j->arena[i] = (uint8_t)x;
  if (k == IMP_AWQ || k == IMP_GPTQ) /* f16 scales: exponent bits kept below Inf/NaN */
    for (int64_t e = 0; e < E; e++)
      for (int m = 0; m < 3; m++)
        for (size_t i = j->s_at[m] + 1; i < j->z_at[m]; i += 2) j->arena[(size_t)e * at + i] &= 0x3B;
  q13 = (size_t)(E * 2 * N * K) / (k == IMP_FP8 ? 1 : 2), q2 = (size_t)(E * K * N) / (k == IMP_FP8 ? 1 : 2);
  m13 = k == IMP_FP8 ? (size_t)(E * ((2 * N + IMP_BLOCK - 1) / IMP_BLOCK) * ((K + IMP_BLOCK - 1) / IMP_BLOCK))
                     : (size_t)(E * 2 * N * ((K + (mx ? 31 : IMP_GROUP - 1)) / (mx ? 32 : IMP_GROUP)));
  m2 = k == IMP_FP8 ? (size_t)(E * ((K + IMP_BLOCK - 1) / IMP_BLOCK) * ((N + IMP_BLOCK - 1) / IMP_BLOCK))
                    : (size_t)(E * K * ((N + (mx ? 31 : IMP_GROUP - 1)) / (mx ? 32 : IMP_GROUP)));
  j->q13 = (uint8_t *)kit_malloc(q13), j->q2 = (uint8_t *)kit_malloc(q2);
  j->s13 = (float *)kit_malloc(m13 * 4), j->s2 = (float *)kit_malloc(m2 * 4);
  j->z13 = (uint8_t *)kit_malloc(m13), j->z2 = (uint8_t *)kit_malloc(m2);
  memset(j->q13, 0, q13), memset(j->q2, 0, q2), memset(j->s13, 0, m13 * 4), memset(j->s2, 0, m2 * 4);
  memset(j->z13, 0, m13), memset(j->z2, 0, m2);
  *out_bytes = q13 + q2 + (k == IMP_FP8 ? 4 : k == IMP_MXFP4 ? 1 : 5) * (m13 + m2);
  return at * (size_t)E;
}

static void imp_free(imp_job *j) {
  free(j->arena), free(j->q13), free(j->q2), free(j->s13), free(j->s2), free(j->z13), free(j->z2);
}

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
    else if (!strcmp(a, "--isa") && v) moe_set_isa(parse_isa(v)), i++;
    else die("usage: bench_pack [--model NAME] [--experts E] [--precision LIST|all] [--threads T] [--runs R] [--isa TIER]");
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
    pack_arg pa = {&kw.w, buf, n};
    measure(model, experts, prec_name(p), threads, runs, run_pack, &pa, src, n, &cj);
    for (int i = 0; i < cj.n; i++) free(cj.dst[i]);
    free(buf);
    kit_weights_free(&kw);
  }
  for (int k = 0; k < IMP_COUNT; k++) {
    imp_job ij;
    copy_job cj;
    size_t out = 0, src;
    if (strcmp(precs, "all") && !strstr(precs, imp_names[k])) continue;
    if (!moe_precision_compiled(k == IMP_FP8 ? MOE_PREC_FP8 : k == IMP_MXFP4 ? MOE_PREC_MXFP4 : MOE_PREC_INT4_W4A16)) continue;
    src = imp_make(&ij, (imp_kind)k, experts, mdl->N, mdl->K, &out);
    memset(&cj, 0, sizeof cj);
    add_array(&cj, ij.arena, src);
    measure(model, experts, imp_names[k], threads, runs, run_import, &ij, src, out, &cj);
    free(cj.dst[0]);
    imp_free(&ij);
  }
  return 0;
}

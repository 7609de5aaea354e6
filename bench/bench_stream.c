/* bench_stream — what the weight stream costs the experts' GEMMs: the same calls with the weights
 * hot and cold. Every expert gets exactly R rows (top-1, one chunk), so both sides run the same
 * blocks; hot: a few experts (E_hot) whose weights stay in the caches from call to call; cold: many
 * (E_cold), each read once per call from DRAM. GEMM1 and GEMM2 rates come from moe_stats; the cold
 * time over the hot one is what streaming the weights adds to the compute (1.0: fully overlapped).
 *
 *   bench_stream [--model NAME] [--precision LIST|all] [--rows R] [--hot E] [--cold E]
 *                [--threads T] [--runs N] [--isa TIER]
 *
 * One JSON line per precision on stdout ("bench":"stream"), a table on stderr (docs/benchmarks.md). */
#define _POSIX_C_SOURCE 200809L
#include "bench_common.h"
#include "bench_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct options {
  const kit_model *model;
  moe_precision prec[MOE_PREC_COUNT];
  int n_prec;
  int64_t rows, e_hot, e_cold;
  int threads, runs;
} options;

/* GEMM1 and GEMM2 seconds of one call, medians over the runs. */
typedef struct side {
  int64_t E;
  double mb, gemm1_s, gemm2_s;
} side;

/* E experts of precision p, each given exactly o->rows token rows, called o->runs times (after one
 * untimed call); the pool's threads are woken before each call, as bench_layer does. */
static side measure(const options *o, moe_precision p, int64_t E, bench_pool *pool) {
  const int64_t K = o->model->K, N = o->model->N, M = E * o->rows;
  kit_weights kw;
  moe_experts ex;
  moe_parallel par = {pool_parallel_for, pool, pool_threads(pool)};
  kit_rng g = kit_rng_stream(5, (uint64_t)E);
  side s = {E, 0, 0, 0};
  double *t1 = (double *)kit_malloc(2 * (size_t)o->runs * sizeof(double)), *t2 = t1 + o->runs;
  kit_weights_random(&kw, p, E, N, K, 1, KIT_CODES);
  size_t n = moe_pack_size(&kw.w);
  void *packed = kit_malloc(n ? n : 1);
  if (!n || moe_pack_parallel(&kw.w, &ex, packed, n, &par) != MOE_OK) die("moe_pack_parallel failed");
  kit_weights_free(&kw);
  uint16_t *x = (uint16_t *)kit_malloc((size_t)(M * K) * 2), *out = (uint16_t *)kit_malloc((size_t)(M * K) * 2);
  float *w = (float *)kit_malloc((size_t)M * sizeof(float));
  int32_t *ids = (int32_t *)kit_malloc((size_t)M * sizeof(int32_t));
  kit_fill_bf16(&g, x, M * K, 1.0);
  for (int64_t m = 0; m < M; m++) w[m] = 0.5f + (float)kit_uniform(&g), ids[m] = (int32_t)(m % E);
  moe_stats st;
  memset(&st, 0, sizeof st);
  st.clock = now_s;
  moe_call c;
  memset(&c, 0, sizeof c);
  c.x = x, c.out = out, c.M = M, c.topk = 1, c.topk_weights = w, c.topk_ids = ids;
  c.chunk_tokens = M, c.stats = &st; /* one chunk: each expert's weights are read once per call */
  size_t ws_size;
  if (moe_workspace_size(&ex, &c, &ws_size) != MOE_OK) die("moe_workspace_size failed");
  void *ws = kit_malloc(ws_size);
  memset(ws, 0, ws_size);
  if (moe_fused_experts(&ex, &c, ws, ws_size, &par) != MOE_OK) die("moe_fused_experts failed");
  for (int r = 0; r < o->runs; r++) {
    memset(st.seconds, 0, sizeof st.seconds);
    pool_warm(pool);
    moe_fused_experts(&ex, &c, ws, ws_size, &par);
    t1[r] = st.seconds[MOE_PHASE_GEMM1], t2[r] = st.seconds[MOE_PHASE_GEMM2];
  }
  s.mb = (double)n / 1e6, s.gemm1_s = stats_of(t1, o->runs).median, s.gemm2_s = stats_of(t2, o->runs).median;
  free(t1), free(packed), free(x), free(out), free(w), free(ids), free(ws);
  return s;
}

static void report(const options *o, moe_precision p, const side *hot, const side *cold) {
  /* flops per expert: GEMM1 over the gate and up columns (2N), GEMM2 over N */
  const double flops1 = 2.0 * (double)o->rows * 2 * (double)o->model->N * (double)o->model->K, flops2 = flops1 / 2;
  const double g1_hot = flops1 * (double)hot->E / hot->gemm1_s / 1e9, g1_cold = flops1 * (double)cold->E / cold->gemm1_s / 1e9;
  const double g2_hot = flops2 * (double)hot->E / hot->gemm2_s / 1e9, g2_cold = flops2 * (double)cold->E / cold->gemm2_s / 1e9;
  const double r1 = g1_hot / g1_cold, r2 = g2_hot / g2_cold; /* cold time over hot, per expert */
  json j;
  json_begin(&j);
  json_str(&j, "bench", "stream"), json_str(&j, "model", o->model->name), json_str(&j, "precision", prec_name(p));
  json_str(&j, "isa", moe_isa_name(moe_get_isa()));
  json_int(&j, "K", o->model->K), json_int(&j, "N", o->model->N), json_int(&j, "rows", o->rows);
  json_int(&j, "threads", o->threads), json_int(&j, "runs", o->runs);
  json_int(&j, "E_hot", hot->E), json_int(&j, "E_cold", cold->E);
  json_num(&j, "weight_mb_hot", hot->mb), json_num(&j, "weight_mb_cold", cold->mb);
  json_num(&j, "gemm1_gflops_hot", g1_hot), json_num(&j, "gemm1_gflops_cold", g1_cold);
  json_num(&j, "gemm2_gflops_hot", g2_hot), json_num(&j, "gemm2_gflops_cold", g2_cold);
  json_num(&j, "gemm1_cold_over_hot", r1), json_num(&j, "gemm2_cold_over_hot", r2);
  json_num(&j, "cold_gbs", cold->mb / 1e3 / (cold->gemm1_s + cold->gemm2_s));
  json_end(&j);
  fprintf(stderr, "%-10s %lld rows/expert: GEMM1 %.0f -> %.0f GFLOPS (cold/hot time %.2f), GEMM2 %.0f -> %.0f (%.2f)\n",
          prec_name(p), (long long)o->rows, g1_hot, g1_cold, r1, g2_hot, g2_cold, r2);
}

static const char usage[] = "usage: bench_stream [--model NAME] [--precision LIST|all] [--rows R] [--hot E] [--cold E]\n"
                            "                    [--threads T] [--runs N] [--isa TIER]";

int main(int argc, char **argv) {
  options o;
  memset(&o, 0, sizeof o);
  bench_prog = "bench_stream";
  o.model = kit_model_find("qwen3-30b-a3b"), o.n_prec = parse_precisions("all", o.prec);
  o.rows = 32, o.e_hot = 2, o.e_cold = 128, o.threads = (int)sysconf(_SC_NPROCESSORS_ONLN), o.runs = 9;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) die("%s", usage);
    if (!strcmp(a, "--model")) o.model = kit_model_find(v);
    else if (!strcmp(a, "--precision")) o.n_prec = parse_precisions(v, o.prec);
    else if (!strcmp(a, "--rows")) o.rows = atoll(v);
    else if (!strcmp(a, "--hot")) o.e_hot = atoll(v);
    else if (!strcmp(a, "--cold")) o.e_cold = atoll(v);
    else if (!strcmp(a, "--threads")) o.threads = atoi(v);
    else if (!strcmp(a, "--runs")) o.runs = atoi(v);
    else if (!strcmp(a, "--isa")) moe_set_isa(parse_isa(v));
    else die("%s", usage);
    i++;
  }
  if (!o.model) die("unknown --model");
  if (o.rows < 1 || o.e_hot < 1 || o.e_cold <= o.e_hot || o.threads < 1 || o.runs < 1 || o.runs > 1000)
    die("bad --rows, --hot, --cold (more than --hot), --threads or --runs");
  bench_pool *pool = pool_create(o.threads);
  fprintf(stderr, "%s K=%lld N=%lld, %lld rows per expert, %d threads, isa %s: hot %lld experts, cold %lld\n",
          o.model->name, (long long)o.model->K, (long long)o.model->N, (long long)o.rows, o.threads,
          moe_isa_name(moe_get_isa()), (long long)o.e_hot, (long long)o.e_cold);
  for (int i = 0; i < o.n_prec; i++) {
    const moe_precision p = o.prec[i];
    if (!moe_precision_compiled(p)) continue;
    side hot = measure(&o, p, o.e_hot, pool), cold = measure(&o, p, o.e_cold, pool);
    report(&o, p, &hot, &cold);
  }
  pool_destroy(pool);
  return 0;
}

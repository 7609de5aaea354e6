/* bench_layer — one whole MoE layer (moe_fused_experts: sort, quantize, both GEMMs, combine) on real
 * model shapes, against the machine's ceilings and a oneDNN engine-style peer, measured in the same run.
 *
 *   bench_layer --model qwen3-30b-a3b --precision int8 --m 1,8,32,128,512 --threads 2
 *
 * One JSON line per (precision, M) on stdout, a human table on stderr (docs/benchmarks.md).
 * The peer of the low-bit precisions (fp8, int4, mxfp4) is the bf16 oneDNN layer on their weights
 * dequantized at load ("peer_weights"), so peer_rel_err compares our quantized kernels with it.
 * weight_gbs counts the packed bytes of the experts hit (panels with their scales and zero points);
 * frac_of_roofline is max(bytes / probe bandwidth, flops / peak of the kernel's dot instruction)
 * over the measured time. The low-bit precisions on the AMX tier also get their decode roof (bytes
 * over the rate at which the tier's B staging alone decodes them in cache: bench_decode.h) beside it.
 * Memory bandwidth on shared machines drifts within minutes, so every round is interleaved
 * (bandwidth probe, our layer, oneDNN layer) and the fractions and speedups are medians of per-round
 * ratios. Every timed layer starts with cold caches: the 1 GiB probe runs between rounds.
 * This file is the driver (options, cases, measurement, output); the pool, the ceilings and the
 * peer have their own sources.
 */
#define _POSIX_C_SOURCE 200809L
#define MOE_API /* external linkage: the other sources of this executable call the library too */
#define MOE_IMPLEMENTATION /* bench_decode.h calls the AMX tier's internals */
#include "bench_ceilings.h"
#include "bench_decode.h"
#include "bench_layer.h"
#include "bench_pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LIST 64
#define SETTLE_S 0.005 /* idle gap before each timed item: both runtimes' threads stop spinning */

/* ==== options ==================================================================================== */
typedef struct model_shape { /* the model's shape (tests/kit.h), or a custom one */
  const char *name;
  int64_t K, N, E;
  int32_t topk;
  int32_t block_n, block_k; /* fp8 scale blocks: the model's (deepseek-v3: 128 x 128), else 128 x 128 */
  int32_t group;            /* int4 group along k: 128 (no model of the table has int4 weights) */
} model_shape;

typedef struct options {
  model_shape shape;
  moe_precision prec[MOE_PREC_COUNT];
  int n_prec;
  int64_t m[MAX_LIST];
  int n_m;
  int threads, runs;
  int isa_given;
  moe_isa isa; /* --isa: the tier to cap at */
  double budget_s, mem_gib;
  uint64_t seed;
} options;

static void usage(void) {
  fputs("usage: bench_layer [--model NAME|custom] [--precision LIST|all] [--m LIST] [--threads T]\n"
        "                   [--runs R] [--quick] [--isa TIER] [--dtype bf16]\n"
        "                   [--K K --N N --E E --topk k] [--seed S] [--budget SECONDS] [--mem-gib G]\n"
        "  models:",
        stderr);
  for (int i = 0; i < kit_model_count(); i++) fprintf(stderr, " %s", kit_model_at(i)->name);
  fputs(",\n          or custom with --K --N --E --topk (which also override a named model's shape)\n"
        "  precisions: bf16 fp16 int8 fp8 int4-w4a8 int4-w4a16 mxfp4 (comma list, or all)\n"
        "  --isa TIER: scalar, avx512, amx, avx2, avx-vnni; an error when this CPU cannot run it\n"
        "  --runs R: rounds per (precision, M), default 21 (--quick: 5); fewer when one case would\n"
        "            take more than --budget seconds (default 60, --quick: 10): at least 3 when 3 fit,\n"
        "            else 1 (slow kernels, e.g. the scalar ones)\n"
        "  --mem-gib G: memory for the experts' copies (default 8); larger models run with fewer\n"
        "            experts (\"E\" in the output, the model's count in \"E_model\")\n",
        stderr);
  exit(2);
}

static model_shape shape_of(const kit_model *m) {
  model_shape s;
  s.name = m->name, s.K = m->K, s.N = m->N, s.E = m->E, s.topk = m->topk;
  s.block_n = m->block_n > 0 ? m->block_n : 128;
  s.block_k = m->block_k > 0 ? m->block_k : 128;
  s.group = 128;
  return s;
}

static options parse_options(int argc, char **argv) {
  options o;
  int quick = 0, runs = 0, budget_given = 0;
  memset(&o, 0, sizeof o);
  o.shape = shape_of(kit_model_find("qwen3-30b-a3b"));
  o.n_prec = parse_precisions("int8", o.prec);
  o.n_m = parse_list("1,8,32,128,512", o.m, MAX_LIST);
  o.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  o.budget_s = 60.0;
  o.mem_gib = 8.0;
  o.seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick")) { quick = 1; continue; }
    if (!strcmp(a, "--help") || !strcmp(a, "-h") || !v) usage();
    i++;
    if (!strcmp(a, "--model")) {
      const kit_model *m = kit_model_find(v);
      if (!m && strcmp(v, "custom")) die("unknown model '%s'", v);
      if (m) o.shape = shape_of(m);
      else o.shape.name = "custom";
    } else if (!strcmp(a, "--precision")) o.n_prec = parse_precisions(v, o.prec);
    else if (!strcmp(a, "--m")) o.n_m = parse_list(v, o.m, MAX_LIST);
    else if (!strcmp(a, "--threads")) o.threads = atoi(v);
    else if (!strcmp(a, "--runs")) runs = atoi(v);
    else if (!strcmp(a, "--isa")) o.isa = parse_isa(v), o.isa_given = 1;
    else if (!strcmp(a, "--dtype")) { if (strcmp(v, "bf16")) die("only --dtype bf16 is supported"); }
    else if (!strcmp(a, "--K")) o.shape.K = atoll(v);
    else if (!strcmp(a, "--N")) o.shape.N = atoll(v);
    else if (!strcmp(a, "--E")) o.shape.E = atoll(v);
    else if (!strcmp(a, "--topk")) o.shape.topk = atoi(v);
    else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--budget")) o.budget_s = atof(v), budget_given = 1;
    else if (!strcmp(a, "--mem-gib")) o.mem_gib = atof(v);
    else usage();
  }
  o.runs = runs > 0 ? runs : (quick ? 5 : 21);
  if (quick && !budget_given) o.budget_s = 10.0;
  if (o.threads < 1) die("--threads must be >= 1");
  if (o.shape.K < 1 || o.shape.N < 1 || o.shape.E < 1 || o.shape.topk < 1 || o.shape.topk > o.shape.E)
    die("bad shape K=%lld N=%lld E=%lld topk=%d", (long long)o.shape.K, (long long)o.shape.N,
        (long long)o.shape.E, o.shape.topk);
  return o;
}

/* The experts of precision p for this run: the model's fp8 blocks and int4 group. */
static bench_weights weights_of(const options *o, moe_precision p, int64_t E) {
  bench_weights w;
  memset(&w, 0, sizeof w);
  w.p = p, w.E = E, w.N = o->shape.N, w.K = o->shape.K;
  w.block_n = o->shape.block_n, w.block_k = o->shape.block_k, w.group = o->shape.group;
  w.seed = o->seed;
  return w;
}

/* A one-expert descriptor of w's precision, blocks and group (pointers only non-NULL: for sizes). */
static moe_weights one_expert_desc(const bench_weights *w) {
  static const uint8_t dummy[64];
  moe_weights d;
  memset(&d, 0, sizeof d);
  d.precision = w->p, d.E = 1, d.N = w->N, d.K = w->K;
  d.block_n = w->block_n, d.block_k = w->block_k, d.group = w->group;
  d.w13 = d.w2 = dummy;
  d.w13_scale = d.w2_scale = (const float *)(const void *)dummy;
  d.w13_zero = d.w2_zero = d.w13_e8m0 = d.w2_e8m0 = dummy;
  return d;
}

/* Bytes of one expert in the kit's plain layout (codes + scales, zero points, e8m0, W13 and W2). */
static double plain_expert_bytes(const bench_weights *w) {
  moe_weights d = one_expert_desc(w);
  kit_mat m[2];
  double bytes = 0;
  m[0] = kit_mat_of(&d, 2 * w->N, w->K), m[1] = kit_mat_of(&d, w->K, w->N);
  for (int i = 0; i < 2; i++) bytes += (double)(m[i].code_bytes + 4 * m[i].n_scale + m[i].n_zero + m[i].n_e8m0);
  return bytes;
}

/* Bytes a layer reads per expert hit: every packed panel of its W13 and W2, headers and meta (scales,
 * zero points, e8m0, int8 compensation) included, whatever the layout of the precision. */
static double packed_expert_bytes(const moe_experts *ex) {
  return (double)ex->panels13 * (double)ex->panel13_bytes + (double)ex->panels2 * (double)ex->panel2_bytes;
}

/* ==== one layer call's inputs ===================================================================== */
/* Routing `route`: topk distinct experts per token, weights normalized to sum 1. */
static void route_uniform(layer_case *c, int route, kit_rng *r) {
  char *hit = (char *)kit_calloc((size_t)c->E);
  size_t slots = (size_t)(c->M * c->topk);
  int32_t *ids = c->all_ids + (size_t)route * slots;
  float *w = c->all_weights + (size_t)route * slots;
  kit_route_random(r, c->M, c->topk, (int32_t)c->E, w, ids);
  for (int64_t m = 0; m < c->M; m++) {
    float sum = 0.0f;
    for (int32_t j = 0; j < c->topk; j++) sum += w[m * c->topk + j];
    for (int32_t j = 0; j < c->topk; j++) w[m * c->topk + j] /= sum;
  }
  c->all_hit[route] = 0;
  for (size_t i = 0; i < slots; i++) c->all_hit[route] += !hit[ids[i]], hit[ids[i]] = 1;
  free(hit);
}

static void case_use_route(layer_case *c, int route) {
  size_t n = (size_t)(c->M * c->topk);
  c->ids = c->all_ids + (size_t)route * n;
  c->weights = c->all_weights + (size_t)route * n;
  c->experts_hit = c->all_hit[route];
}

static layer_case case_create(int64_t M, int64_t K, int64_t E, int32_t topk, int n_routes, uint64_t seed) {
  layer_case c;
  kit_rng r = kit_rng_stream(seed, 0xC0FFEE00u + (uint64_t)M);
  size_t xs = (size_t)M * (size_t)K, slots = (size_t)n_routes * (size_t)M * (size_t)topk;
  c.M = M, c.K = K, c.E = E, c.topk = topk, c.n_routes = n_routes;
  c.x = (uint16_t *)kit_malloc(xs * 2);
  c.out = (uint16_t *)kit_malloc(xs * 2);
  c.out_peer = (uint16_t *)kit_malloc(xs * 2);
  c.all_ids = (int32_t *)kit_malloc(slots * sizeof *c.all_ids);
  c.all_weights = (float *)kit_malloc(slots * sizeof *c.all_weights);
  c.all_hit = (int64_t *)kit_malloc((size_t)n_routes * sizeof *c.all_hit);
  for (size_t i = 0; i < xs; i++) c.x[i] = moe_f32_to_bf16((float)(2.0 * kit_uniform(&r) - 1.0));
  for (int route = 0; route < n_routes; route++) route_uniform(&c, route, &r);
  case_use_route(&c, 0);
  return c;
}

static void case_free(layer_case *c) {
  free(c->x), free(c->out), free(c->out_peer), free(c->all_ids), free(c->all_weights), free(c->all_hit);
}

/* ==== ours: moe.h ================================================================================= */
typedef struct ours {
  moe_experts ex;
  void *packed, *ws;
  size_t ws_size;
  moe_parallel par;
  double gen_s, pack_s; /* setup times, for the log */
} ours;

static moe_call ours_call(const layer_case *c) {
  moe_call call;
  memset(&call, 0, sizeof call);
  call.x = c->x;
  call.out = c->out;
  call.dtype = MOE_BF16;
  call.M = c->M;
  call.topk = c->topk;
  call.topk_weights = c->weights;
  call.topk_ids = c->ids;
  return call;
}

/* Generates, packs (the plain copy is freed at once) and sizes one workspace for the largest M. */
static void ours_setup(ours *o, const bench_weights *bw, int32_t topk, int64_t max_m, bench_pool *pool) {
  kit_weights w;
  moe_call call;
  layer_case shape_only;
  moe_status st;
  double t0 = now_s();
  kit_weights_random_blocks(&w, bw->p, bw->E, bw->N, bw->K, bw->block_n, bw->block_k, bw->group, bw->seed,
                            BENCH_WEIGHT_FLAGS);
  o->gen_s = now_s() - t0;
  {
    moe_parallel par = {pool_parallel_for, pool, pool_threads(pool)}; /* packing on the run's threads */
    size_t n = moe_pack_size(&w.w);
    o->packed = kit_malloc(n ? n : 1);
    if (!n || moe_pack_parallel(&w.w, &o->ex, o->packed, n, &par) != MOE_OK) die("moe_pack_parallel failed");
  }
  o->pack_s = now_s() - t0 - o->gen_s;
  kit_weights_free(&w);
  memset(&shape_only, 0, sizeof shape_only);
  shape_only.M = max_m, shape_only.topk = topk;
  call = ours_call(&shape_only);
  if ((st = moe_workspace_size(&o->ex, &call, &o->ws_size)) != MOE_OK) die("moe_workspace_size: %s", moe_status_str(st));
  o->ws = kit_malloc(o->ws_size);
  memset(o->ws, 0, o->ws_size); /* real pages before the first timed call */
  o->par.parallel_for = pool_parallel_for;
  o->par.pool = pool;
  o->par.n_threads = pool_threads(pool);
}

static void ours_free(ours *o) {
  free(o->packed);
  free(o->ws);
}

static double ours_timed(const ours *o, const layer_case *c, moe_stats *phases) {
  double t0;
  moe_call call = ours_call(c);
  moe_status st;
  call.stats = phases;
  pool_warm((bench_pool *)o->par.pool);
  t0 = now_s();
  st = moe_fused_experts(&o->ex, &call, o->ws, o->ws_size, &o->par);
  if (st != MOE_OK) die("moe_fused_experts: %s", moe_status_str(st));
  return now_s() - t0;
}

/* Routing M tokens from random f32 logits (top-k softmax, renormalized), the step before the layer,
 * on the run's threads as moe_forward routes (moe_route_parallel). */
static double route_timed(const layer_case *c, const moe_parallel *par) {
  moe_router r;
  float *logits = (float *)kit_malloc((size_t)(c->M * c->E) * sizeof(float));
  float *w = (float *)kit_malloc((size_t)(c->M * c->topk) * sizeof(float));
  int32_t *ids = (int32_t *)kit_malloc((size_t)(c->M * c->topk) * sizeof(int32_t));
  kit_rng g = kit_rng_stream(7, (uint64_t)c->M);
  double t0, t;
  memset(&r, 0, sizeof r);
  r.E = (int32_t)c->E, r.topk = c->topk, r.renormalize = 1;
  for (int64_t i = 0; i < c->M * c->E; i++) logits[i] = (float)(4.0 * kit_uniform(&g) - 2.0);
  pool_warm((bench_pool *)par->pool);
  t0 = now_s();
  if (moe_route_parallel(&r, logits, MOE_F32, c->M, w, ids, par) != MOE_OK) die("moe_route_parallel failed");
  t = now_s() - t0;
  free(logits), free(w), free(ids);
  return t;
}

/* ==== measurement ================================================================================= */
/* Relative L2 difference of two bf16 tensors (reference b). */
static double rel_err_bf16(const uint16_t *a, const uint16_t *b, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    double x = moe_bf16_to_f32(a[i]), y = moe_bf16_to_f32(b[i]);
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* The peer_rel_err above which bench_layer warns. Both layers round h and the output to bf16 and sum
 * in other orders; the peer of the low-bit precisions adds the rounding of the dequantized weights to
 * bf16 (2^-9 relative): ~5e-3 in all (int8's peer quantizes x and h as moe.h does). int4-w4a8
 * quantizes x and h to int8 per token and its bf16 peer does not: ~2-3e-2 on qwen3-30b-a3b and
 * gpt-oss-20b, more on wider h, so its limit is higher. */
static double peer_err_limit(moe_precision p) { return p == MOE_PREC_INT4_W4A8 ? 1e-1 : 3e-2; }

typedef struct measurement {
  int runs;
  double round_s;                      /* one round, as the untimed pass took it */
  double *probe_gbs, *ours_s, *peer_s; /* per round */
  moe_stats phases;                    /* our layer's phase times, summed over the rounds */
  double route_s;                      /* moe_route_parallel on [M, E] logits, summed over the rounds */
  double *bytes;                       /* per round: weight bytes of the experts its routing hit */
  double peer_rel_err;
} measurement;

typedef struct bench_ctx {
  const options *opt;
  bench_pool *pool;
  probe_ctx *probe;
  ceilings peaks;
} bench_ctx;

/* Rounds that fit the time budget, at most --runs: at least 3 when 3 fit, else as many as fit but
 * at least 1 (a layer that takes seconds, as the scalar kernels' do at large M). */
static int rounds_for(const bench_ctx *b, double round_s) {
  int n = (int)(b->opt->budget_s / round_s);
  n = n < 1 ? 1 : n;
  return n < b->opt->runs ? n : b->opt->runs;
}

/* An untimed pass of each layer on routing 0 (correctness, warm-up), then rounds of probe, ours and
 * oneDNN (oneDNN first in odd rounds, so neither always follows the probe), round i on routing i + 1. */
static measurement measure(const bench_ctx *b, const ours *o, peer *P, layer_case *c, double expert_b) {
  measurement r;
  double t_round;
  memset(&r, 0, sizeof r);
  case_use_route(c, 0);
  t_round = ours_timed(o, c, NULL) + 3 * SETTLE_S + 0.03;
  r.phases.clock = now_s;
  if (P) {
    t_round += peer_timed(P, c);
    r.peer_rel_err = rel_err_bf16(c->out_peer, c->out, (size_t)(c->M * c->K));
  }
  r.round_s = t_round;
  r.runs = rounds_for(b, t_round);
  r.probe_gbs = (double *)kit_malloc((size_t)r.runs * sizeof(double));
  r.ours_s = (double *)kit_malloc((size_t)r.runs * sizeof(double));
  r.peer_s = (double *)kit_malloc((size_t)r.runs * sizeof(double));
  r.bytes = (double *)kit_malloc((size_t)r.runs * sizeof(double));
  for (int i = 0; i < r.runs; i++) {
    case_use_route(c, 1 + i);
    r.bytes[i] = (double)c->experts_hit * expert_b;
    sleep_s(SETTLE_S);
    r.probe_gbs[i] = probe_bandwidth(b->probe, b->pool);
    if (P && i % 2) sleep_s(SETTLE_S), r.peer_s[i] = peer_timed(P, c);
    sleep_s(SETTLE_S);
    r.ours_s[i] = ours_timed(o, c, &r.phases);
    r.route_s += route_timed(c, &o->par);
    if (P && i % 2 == 0) sleep_s(SETTLE_S), r.peer_s[i] = peer_timed(P, c);
  }
  return r;
}

static void measurement_free(measurement *r) { free(r->probe_gbs), free(r->ours_s), free(r->peer_s), free(r->bytes); }

/* ==== reporting =================================================================================== */
typedef struct case_result {
  const char *model, *kernel, *peer_impl, *peer_weights;
  const char *dot, *roof_name; /* the kernel's dot instruction; the one whose peak is the roof */
  bench_weights w;
  int64_t E_model;
  const layer_case *c;
  const measurement *r;
  double expert_bytes; /* packed bytes per expert hit (codes and meta) */
  double flops, peak_gflops, roof_gflops;
  double decode_gbs[2]; /* the decode roof of GEMM1 and GEMM2 (GB/s of packed weights; 0: none) */
  double decode_s_per_gb; /* seconds to decode 1 GB of an expert's W13 and W2 in their proportion */
  int foldable;           /* a GEMM's decoded panel pair fits the folded path (moe__fold_bytes) */
  int has_peer;
} case_result;

typedef struct summary {
  stats ms, peer_ms, probe, gbs, frac, speedup, roof;
  double bytes, gflops; /* median bytes per round; flops over the median time */
  double roof_ms;       /* median of the rounds' roofline times */
  double decode_ms;     /* median of the rounds' decode roof times (0: none) */
  stats decode;         /* decode roof time over the measured time */
  const char *bound, *roof_bound;
} summary;

/* Memory-bound when the layer's flops per weight byte are below the machine's balance point. */
static const char *bound_name(double flops, double bytes, double peak_gflops, double peak_gbs) {
  return peak_gflops <= 0 || flops / bytes < peak_gflops / peak_gbs ? "memory" : "compute";
}

/* Medians of per-round ratios. A round's fraction of peak is the larger of its bandwidth and compute
 * fractions: time >= max(bytes / bandwidth, flops / peak), so the larger one is the bound that applies.
 * Its roofline time is that max with the peak of the kernel's own instruction, and frac_of_roofline
 * the roofline time over the measured one. */
static summary summarize(const case_result *cr) {
  const measurement *r = cr->r;
  int n = r->runs;
  double *v = (double *)kit_malloc(7 * (size_t)n * sizeof(double)), *gbs = v, *frac = v + n, *speed = v + 2 * n;
  double *roof = v + 3 * n, *roof_s = v + 4 * n, *dec = v + 5 * n, *dec_s = v + 6 * n;
  summary s;
  memset(&s, 0, sizeof s);
  for (int i = 0; i < n; i++) {
    double f_comp = cr->peak_gflops > 0 ? cr->flops / r->ours_s[i] / 1e9 / cr->peak_gflops : 0.0;
    double t_mem = r->bytes[i] / (r->probe_gbs[i] * 1e9), t_comp = cr->roof_gflops > 0 ? cr->flops / (cr->roof_gflops * 1e9) : 0.0;
    gbs[i] = r->bytes[i] / r->ours_s[i] / 1e9;
    frac[i] = gbs[i] / r->probe_gbs[i] > f_comp ? gbs[i] / r->probe_gbs[i] : f_comp;
    roof_s[i] = t_mem > t_comp ? t_mem : t_comp;
    roof[i] = roof_s[i] / r->ours_s[i];
    speed[i] = cr->has_peer ? r->peer_s[i] / r->ours_s[i] : 0.0;
    dec_s[i] = r->bytes[i] / 1e9 * cr->decode_s_per_gb;
    dec[i] = dec_s[i] / r->ours_s[i];
  }
  s.ms = stats_of(r->ours_s, n), s.probe = stats_of(r->probe_gbs, n), s.gbs = stats_of(gbs, n);
  s.frac = stats_of(frac, n), s.speedup = stats_of(speed, n), s.roof = stats_of(roof, n);
  s.roof_ms = 1e3 * stats_of(roof_s, n).median;
  s.decode_ms = 1e3 * stats_of(dec_s, n).median, s.decode = stats_of(dec, n);
  if (cr->has_peer) s.peer_ms = stats_of(r->peer_s, n);
  s.bytes = stats_of(r->bytes, n).median;
  s.gflops = cr->flops / s.ms.median / 1e9;
  s.bound = bound_name(cr->flops, s.bytes, cr->peak_gflops, s.probe.median);
  s.roof_bound = bound_name(cr->flops, s.bytes, cr->roof_gflops, s.probe.median);
  free(v);
  return s;
}

/* Mean time per phase of our layer, routing included, and the share of everything that is not a
 * GEMM (routing, sorting, quantization and conversion, the combine). */
static void print_phases(json *j, const measurement *r) {
  static const char *names[MOE_PHASE_COUNT] = {"prepare", "sort", "gemm1", "requant", "gemm2", "combine"};
  double total = r->route_s, gemm = r->phases.seconds[MOE_PHASE_GEMM1] + r->phases.seconds[MOE_PHASE_GEMM2];
  char key[32];
  for (int i = 0; i < MOE_PHASE_COUNT; i++) {
    snprintf(key, sizeof key, "ms_%s", names[i]);
    json_num(j, key, 1e3 * r->phases.seconds[i] / r->runs);
    total += r->phases.seconds[i];
  }
  json_num(j, "ms_route", 1e3 * r->route_s / r->runs);
  json_num(j, "non_gemm_frac", total > 0 ? (total - gemm) / total : 0);
}

/* The scale layout of the weights: fp8 blocks, int4 groups, mxfp4's fixed 32. */
static void print_scales(json *j, const bench_weights *w) {
  if (w->p == MOE_PREC_FP8) json_int(j, "block_n", w->block_n), json_int(j, "block_k", w->block_k);
  if (w->p == MOE_PREC_INT4_W4A8 || w->p == MOE_PREC_INT4_W4A16) json_int(j, "group", w->group);
  if (w->p == MOE_PREC_MXFP4) json_int(j, "group", 32);
}

static void print_json(const bench_ctx *b, const case_result *cr, const summary *s) {
  const layer_case *c = cr->c;
  json j;
  json_begin(&j);
  json_str(&j, "bench", "layer");
  json_str(&j, "model", cr->model);
  json_str(&j, "precision", prec_name(cr->w.p));
  json_str(&j, "dtype", "bf16");
  json_str(&j, "isa", moe_isa_name(moe_get_isa()));
  json_str(&j, "kernel", cr->kernel);
  json_str(&j, "dot", cr->dot);
  print_scales(&j, &cr->w);
  json_int(&j, "M", c->M), json_int(&j, "E", cr->w.E), json_int(&j, "topk", c->topk);
  /* MXFP4 on the dense bf16 kernel over panels decoded once per expert (moe__fold_policy), in a GEMM at least */
  json_bool(&j, "folded", moe__fold_policy(moe_gemm_select(cr->w.p), c->M * c->topk, cr->w.E) && cr->foldable);
  json_int(&j, "N", b->opt->shape.N), json_int(&j, "K", c->K);
  if (cr->E_model != cr->w.E) json_int(&j, "E_model", cr->E_model);
  json_int(&j, "threads", b->opt->threads);
  json_num(&j, "ms_median", 1e3 * s->ms.median), json_num(&j, "ms_min", 1e3 * s->ms.min);
  json_num(&j, "ms_max", 1e3 * s->ms.max);
  json_int(&j, "runs", cr->r->runs);
  json_num(&j, "gflops", s->gflops);
  json_num(&j, "weight_gbs", s->gbs.median);
  json_num(&j, "experts_hit", s->bytes / cr->expert_bytes);
  json_num(&j, "weight_mb", s->bytes / 1e6);
  json_int(&j, "expert_bytes", (long long)cr->expert_bytes);
  if (cr->peak_gflops > 0) json_num(&j, "peak_gflops", cr->peak_gflops);
  else json_null(&j, "peak_gflops");
  json_num(&j, "peak_gbs", s->probe.median), json_num(&j, "peak_gbs_min", s->probe.min);
  json_num(&j, "peak_gbs_max", s->probe.max);
  json_str(&j, "bound", s->bound);
  print_phases(&j, cr->r);
  json_num(&j, "frac_of_peak", s->frac.median), json_num(&j, "frac_min", s->frac.min);
  json_num(&j, "frac_max", s->frac.max);
  json_str(&j, "roofline_peak", cr->roof_name);
  if (cr->roof_gflops > 0) json_num(&j, "roofline_gflops", cr->roof_gflops);
  else json_null(&j, "roofline_gflops");
  json_str(&j, "roofline_bound", s->roof_bound);
  json_num(&j, "roofline_ms", s->roof_ms);
  json_num(&j, "frac_of_roofline", s->roof.median), json_num(&j, "frac_of_roofline_min", s->roof.min);
  json_num(&j, "frac_of_roofline_max", s->roof.max);
  if (cr->decode_s_per_gb > 0) {
    json_num(&j, "decode_gbs", 1 / cr->decode_s_per_gb);
    json_num(&j, "decode_gbs_gemm1", cr->decode_gbs[0]), json_num(&j, "decode_gbs_gemm2", cr->decode_gbs[1]);
    json_num(&j, "roofline_decode_ms", s->decode_ms);
    json_num(&j, "frac_of_decode_roof", s->decode.median), json_num(&j, "frac_of_decode_roof_min", s->decode.min);
    json_num(&j, "frac_of_decode_roof_max", s->decode.max);
  } else {
    json_null(&j, "decode_gbs"), json_null(&j, "roofline_decode_ms"), json_null(&j, "frac_of_decode_roof");
  }
  if (cr->has_peer) {
    json_str(&j, "vs", "onednn");
    json_str(&j, "peer_weights", cr->peer_weights);
    json_num(&j, "speedup", s->speedup.median), json_num(&j, "speedup_min", s->speedup.min);
    json_num(&j, "speedup_max", s->speedup.max);
    json_num(&j, "onednn_ms_median", 1e3 * s->peer_ms.median), json_num(&j, "onednn_ms_min", 1e3 * s->peer_ms.min);
    json_num(&j, "onednn_ms_max", 1e3 * s->peer_ms.max);
    json_num(&j, "peer_rel_err", cr->r->peer_rel_err);
    json_num(&j, "peer_rel_err_limit", peer_err_limit(cr->w.p));
    json_str(&j, "onednn_impl", cr->peer_impl);
    json_str(&j, "omp_wait", peer_wait_policy_name()); /* OMP_WAIT_POLICY, else GOMP_SPINCOUNT */
  } else {
    json_str(&j, "vs", "none");
    json_null(&j, "speedup"), json_null(&j, "speedup_min"), json_null(&j, "speedup_max");
    json_null(&j, "onednn_ms_median");
  }
  json_end(&j);
}

static void print_human(const case_result *cr, const summary *s) {
  fprintf(stderr, "%-10s M=%-5lld %9.3f ms %7.1f GB/s %8.1f GFLOPS %6.1f%% of peak (%s; probe %.1f GB/s) %6.1f%% of roofline (%s)",
          prec_name(cr->w.p), (long long)cr->c->M, 1e3 * s->ms.median, s->gbs.median, s->gflops,
          100 * s->frac.median, s->bound, s->probe.median, 100 * s->roof.median, cr->roof_name);
  if (cr->decode_s_per_gb > 0) fprintf(stderr, " %5.1f%% of decode roof (%.1f GB/s)", 100 * s->decode.median, 1 / cr->decode_s_per_gb);
  if (cr->has_peer)
    fprintf(stderr, "  onednn %s %9.3f ms, speedup %.2fx, rel err %.1e", cr->peer_weights, 1e3 * s->peer_ms.median,
            s->speedup.median, cr->r->peer_rel_err);
  fputc('\n', stderr);
}

/* ==== driver ====================================================================================== */
static int64_t max_of(const int64_t *v, int n) {
  int64_t m = 0;
  for (int i = 0; i < n; i++) m = v[i] > m ? v[i] : m;
  return m;
}

/* Experts that fit the memory budget: the packed copy, plus the plain one (alive while packing) or
 * the peer's (bf16 for every precision but int8), whichever is larger. */
static int64_t experts_in_budget(const options *o, moe_precision p) {
  bench_weights w = weights_of(o, p, 1);
  moe_weights d = one_expert_desc(&w);
  double plain = plain_expert_bytes(&w), packed = (double)moe_pack_size(&d);
  double theirs = peer_supports(p) ? peer_expert_bytes(p, o->shape.N, o->shape.K) : 0.0;
  double per_expert = (packed > 0 ? packed : plain) + (plain > theirs ? plain : theirs);
  int64_t fit = (int64_t)(o->mem_gib * 1073741824.0 / per_expert);
  return fit < o->shape.E ? fit : o->shape.E;
}

static void run_case(const bench_ctx *b, const ours *us, peer *P, case_result *cr, int64_t M) {
  const options *o = b->opt;
  layer_case c = case_create(M, o->shape.K, cr->w.E, o->shape.topk, o->runs + 1, o->seed);
  measurement r;
  summary s;
  if (P) peer_prepare(P, &c);
  r = measure(b, us, P, &c, cr->expert_bytes);
  cr->c = &c, cr->r = &r;
  cr->flops = 2.0 * (double)M * o->shape.topk * 3.0 * (double)o->shape.N * (double)o->shape.K;
  if (r.runs < o->runs)
    fprintf(stderr, "note: %s M=%lld: %d of %d rounds (one takes %.2f s; --budget %.0f s)\n", prec_name(cr->w.p),
            (long long)M, r.runs, o->runs, r.round_s, o->budget_s);
  if (P && r.peer_rel_err > peer_err_limit(cr->w.p))
    fprintf(stderr, "warning: the oneDNN layer (%s weights) differs from moe.h by %.3g (> %.0e)\n", cr->peer_weights,
            r.peer_rel_err, peer_err_limit(cr->w.p));
  s = summarize(cr);
  print_json(b, cr, &s);
  print_human(cr, &s);
  measurement_free(&r);
  case_free(&c);
}

/* The decode roof of the layer's low-bit weights on the AMX tier: each GEMM's rate, and the seconds
 * per GB of an expert's weights (W13 and W2 in their proportion). Nothing for other precisions. */
static void decode_roof(const bench_ctx *b, const moe_experts *ex, case_result *cr) {
  const double w13 = (double)ex->panels13 * (double)ex->panel13_bytes, all = packed_expert_bytes(ex);
  for (int gemm = 1; gemm <= 2; gemm++) cr->decode_gbs[gemm - 1] = decode_roof_gbs(b->pool, ex, gemm, l2_cache_bytes(), 9);
  if (cr->decode_gbs[0] > 0 && cr->decode_gbs[1] > 0)
    cr->decode_s_per_gb = w13 / all / cr->decode_gbs[0] + (all - w13) / all / cr->decode_gbs[1];
}

static void run_precision(const bench_ctx *b, moe_precision p) {
  const options *o = b->opt;
  int64_t E = experts_in_budget(o, p);
  ours us;
  peer *P = NULL;
  case_result cr;
  const moe_gemm_config *kern = moe_gemm_select(p);
  double t0;
  if (!kern) {
    fprintf(stderr, "%s: not compiled in, skipped\n", prec_name(p));
    return;
  }
  if (E < o->shape.topk) die("%s: only %lld experts fit --mem-gib %.1f", prec_name(p), (long long)E, o->mem_gib);
  if (E < o->shape.E)
    fprintf(stderr, "note: %s uses %lld of the model's %lld experts to stay within --mem-gib %.1f\n",
            prec_name(p), (long long)E, (long long)o->shape.E, o->mem_gib);
  memset(&cr, 0, sizeof cr);
  cr.w = weights_of(o, p, E);
  ours_setup(&us, &cr.w, o->shape.topk, max_of(o->m, o->n_m), b->pool);
  t0 = now_s();
  if (peer_supports(p)) P = peer_create(&cr.w, o->shape.topk, max_of(o->m, o->n_m));
  fprintf(stderr, "%s: %lld experts generated in %.1f s, moe_pack %.1f s", prec_name(p), (long long)E,
          us.gen_s, us.pack_s);
  if (P) fprintf(stderr, ", oneDNN prepack (%s weights) %.1f s", peer_weights_kind(p), now_s() - t0);
  fprintf(stderr, "; kernel %s\n", kern->name);
  cr.model = o->shape.name, cr.kernel = kern->name, cr.E_model = o->shape.E;
  cr.dot = kern->dot ? kern->dot : "scalar";
  cr.expert_bytes = packed_expert_bytes(&us.ex);
  cr.foldable = moe__fold_bytes(us.ex.k13_pad) || moe__fold_bytes(us.ex.k2_pad); /* the packed padding, as the layer reads it */
  /* the AMX tier's compute ceiling is the tiles' (its decode blocks run AVX-512 under that roof) */
  cr.peak_gflops = kern->isa == MOE_ISA_AMX ? peak_for_kernel(&b->peaks, kern) : peak_for_precision(&b->peaks, p);
  cr.roof_gflops = roofline_peak(&b->peaks, kern, &cr.roof_name);
  if (kern->isa == MOE_ISA_AMX) decode_roof(b, &us.ex, &cr);
  cr.has_peer = P != NULL;
  cr.peer_impl = P ? peer_impl(P) : NULL;
  cr.peer_weights = P ? peer_weights_kind(p) : NULL;
  for (int i = 0; i < o->n_m; i++) run_case(b, &us, P, &cr, o->m[i]);
  if (P) peer_destroy(P);
  ours_free(&us);
}

int main(int argc, char **argv) {
  options o;
  bench_ctx b;
  double bw;
  bench_prog = "bench_layer";
  o = parse_options(argc, argv);
  peer_wait_policy(argv);
  if (o.isa_given) moe_set_isa(o.isa);
  memset(&b, 0, sizeof b);
  b.opt = &o;
  b.pool = pool_create(o.threads);
  peer_set_threads(o.threads);
  if (!peer_name) fputs("note: built without oneDNN: no peer (\"vs\":\"none\")\n", stderr);
  b.probe = probe_create();
  b.peaks = measure_peaks(b.pool);
  bw = probe_bandwidth(b.probe, b.pool);
  fprintf(stderr, "%s K=%lld N=%lld E=%lld topk=%d, %d threads, isa %s; peaks: vpdpbusd %.0f GOPS, vdpbf16ps %.0f GFLOPS, "
          "vfmadd231ps %.0f GFLOPS; ymm: vfmadd231ps %.0f GFLOPS, vpmaddubsw %.0f GOPS, vpdpbusd %.0f GOPS; "
          "tiles: tdpbusd %.0f GOPS, tdpbf16ps %.0f GFLOPS; read bandwidth %.1f GB/s (re-measured every round)\n", o.shape.name,
          (long long)o.shape.K, (long long)o.shape.N, (long long)o.shape.E, o.shape.topk, o.threads,
          moe_isa_name(moe_get_isa()), b.peaks.gops_vnni, b.peaks.gflops_bf16, b.peaks.gflops_fma, b.peaks.gflops_fma_ymm,
          b.peaks.gops_maddubs, b.peaks.gops_vnni_ymm, b.peaks.gops_tdpbusd, b.peaks.gflops_tdpbf16, bw);
  for (int i = 0; i < o.n_prec; i++) run_precision(&b, o.prec[i]);
  probe_destroy(b.probe);
  pool_destroy(b.pool);
  return 0;
}

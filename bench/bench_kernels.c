/* bench_kernels — every kernel of the kernel list (moe_kernel_at), GEMM1 and GEMM2 apart, in two modes:
 *
 *   cache   full tile rows (the largest multiple of the kernel's tile rows up to MOE_BLOCK_M) over a
 *           set of panels that fits half of L2, repeated: GFLOPS (GOPS for A8) against the peak of
 *           the kernel's dot-product instruction, measured in the same run;
 *   stream  one row over the panels of many experts (at least --stream-mib per GEMM, more than the
 *           LLC; the 1 GiB bandwidth probe runs before each pass, so every pass starts cold): GB/s of
 *           weights read against the probe's GB/s of the same round;
 *   decode  the AMX kernels of the low-bit precisions: their B staging alone over the cache set
 *           (bench_decode.h), GB/s of weights: the decode roof the cache line is compared with. It
 *           needs only the tier's AVX-512 features, so it also runs where the tiles do not.
 *
 *   bench_kernels [--kernel SUBSTR] [--isa TIER] [--threads T] [--quick]
 *
 * One JSON line per (kernel, GEMM, mode) on stdout ("bench":"kernel"), a table on stderr. Kernels
 * this CPU cannot run get a "skipped" line. Scalar kernels (~100x slower) run a time-bounded slice
 * of the work. Threads run the same loop each on its own rows (cache) or split the panels (stream).
 */
#define _POSIX_C_SOURCE 200809L
#define MOE_API /* external linkage: the other sources of this executable call the library too */
#define MOE_IMPLEMENTATION
#include "bench_ceilings.h"
#include "bench_common.h"
#include "bench_decode.h"
#include "bench_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLICE_S 0.02 /* scalar kernels: seconds of work per stream pass and per cache trial */

/* ==== options ===================================================================================== */
typedef struct options {
  const char *kernel; /* substring of a kernel's names, or NULL */
  int isa_given;
  moe_isa isa;
  int threads, runs;
  int rows;              /* cache mode: rows per call (0: full tiles)                      */
  int pairs;             /* >0: also the AMX dense calls over this many panel pairs        */
  const char *model;
  int64_t K, N;          /* GEMM1 reduces over K, GEMM2 over N */
  double stream_mib;     /* weights per GEMM streamed in one pass */
  double cache_s;        /* seconds per cache trial */
  size_t l2_bytes;
  uint64_t seed;
} options;

static void usage(void) {
  fputs("usage: bench_kernels [--kernel SUBSTR] [--isa TIER] [--threads T] [--quick] [--runs R]\n"
        "                     [--model NAME] [--K K --N N] [--stream-mib S] [--l2-kib L] [--seed S] [--rows R]\n"
        "                     [--pairs P]\n"
        "  --kernel SUBSTR: only kernels whose name contains SUBSTR\n"
        "  --isa TIER: only kernels of that tier; an error when this CPU cannot run it\n"
        "  --model NAME: K and N of a model (default qwen3-30b-a3b: GEMM1 over K 2048, GEMM2 over N 768)\n"
        "  --stream-mib S: packed weights per GEMM in a stream pass (default 256, --quick 64)\n"
        "  --runs R: trials (cache) and rounds (stream), default 7 (--quick: 3)\n"
        "  --l2-kib L: L2 per core (default: sysconf, else 1024); the cache set fills half of it\n"
        "  --rows R: rows per call in cache mode, 1..32 (default: full tiles up to 32); e.g. the AMX/AVX-512 crossover\n"
        "  --pairs P: also mode \"pairs\" for AMX bf16/fp16/int8: the cache set in the layer's calls over P panel\n"
        "             pairs and 8 / P blocks of those rows (moe__amx_gemm_pairs, MOE__AMX_PAIRS=P in the layer)\n",
        stderr);
  exit(2);
}

static options parse_options(int argc, char **argv) {
  options o;
  const kit_model *m;
  int quick = 0, runs = 0;
  double stream_mib = 0, l2_kib = 0;
  memset(&o, 0, sizeof o);
  o.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  o.model = "qwen3-30b-a3b";
  o.seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick")) { quick = 1; continue; }
    if (!strcmp(a, "--help") || !strcmp(a, "-h") || !v) usage();
    i++;
    if (!strcmp(a, "--kernel")) o.kernel = v;
    else if (!strcmp(a, "--isa")) o.isa = parse_isa(v), o.isa_given = 1;
    else if (!strcmp(a, "--threads")) o.threads = atoi(v);
    else if (!strcmp(a, "--runs")) runs = atoi(v);
    else if (!strcmp(a, "--model")) o.model = v;
    else if (!strcmp(a, "--K")) o.K = atoll(v);
    else if (!strcmp(a, "--N")) o.N = atoll(v);
    else if (!strcmp(a, "--stream-mib")) stream_mib = atof(v);
    else if (!strcmp(a, "--l2-kib")) l2_kib = atof(v);
    else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--rows")) o.rows = atoi(v);
    else if (!strcmp(a, "--pairs")) o.pairs = atoi(v);
    else usage();
  }
  if (!(m = kit_model_find(o.model))) die("unknown model '%s'", o.model);
  o.K = o.K ? o.K : m->K;
  o.N = o.N ? o.N : m->N;
  o.runs = runs > 0 ? runs : quick ? 3 : 7;
  o.stream_mib = stream_mib > 0 ? stream_mib : quick ? 64 : 256;
  o.cache_s = quick ? 0.01 : 0.02;
  o.l2_bytes = l2_kib > 0 ? (size_t)(l2_kib * 1024) : l2_cache_bytes();
  if (o.threads < 1) die("--threads must be >= 1");
  if (o.K < 1 || o.N < 1) die("bad K=%lld N=%lld", (long long)o.K, (long long)o.N);
  if (o.rows < 0 || o.rows > MOE_BLOCK_M) die("--rows must be 1..%d (a call's block)", MOE_BLOCK_M);
#ifdef MOE__HAVE_AMX
  if (o.pairs < 0 || o.pairs > MOE__AMX_NB) die("--pairs must be 0..%d", MOE__AMX_NB);
#endif
  return o;
}

/* ==== units: what one kernel call reads (unit_at, bench_common.h) ================================ */
/* Flops (ops for A8) of one call: GEMM1 computes gate and up. */
static double unit_flops(int gemm, int32_t mr, int32_t nr, int64_t kred) {
  return 2.0 * mr * nr * (double)kred * (gemm == 1 ? 2 : 1);
}

/* ==== one thread's operands ======================================================================= */
typedef struct lane {
  moe_gemm_args g; /* every field but w, nr and the prefetch hint */
  void *row[MOE_BLOCK_M];
  float scale[MOE_BLOCK_M], weight[MOE_BLOCK_M];
  uint8_t *rows;                  /* the activation rows, lda bytes apart (as the layer lays them out) */
  float *c, *c_rows[MOE_BLOCK_M]; /* GEMM1: mr x 32 block; GEMM2: mr rows of 64 */
  void *scratch;                  /* pairs mode: MOE__AMX_NB block buffers (moe__amx_block_buf), */
  uint8_t *blocks;                /* and each block's own copy of the rows                       */
  const void *block_row[MOE_BLOCK_M * 8]; /* [block][row], up to MOE__AMX_NB blocks */
  int32_t *gsum;                  /* W4A8: the rows' group sums, as the layer hands them */
  const int32_t *gsum_row[MOE_BLOCK_M];
  double seconds, flops;          /* of the last task */
} lane;

/* mr random rows of kred activations: u8 (q + 128) with a row scale (A8) or bf16; row weights.
 * The rows lie a fixed stride apart (moe_gemm_args.lda), padded to a multiple of 16 rows, as the
 * layer hands them to the kernels. */
static void lane_init(lane *l, const moe_experts *ex, int gemm, int32_t mr, kit_rng *r) {
  int a8 = moe__is_a8(ex->precision);
  int64_t kred = gemm == 1 ? ex->K : ex->N, elt = a8 ? 1 : 2, lda = (kred * elt + 63) / 64 * 64 + 64;
  memset(l, 0, sizeof *l);
  l->rows = (uint8_t *)kit_calloc((size_t)(lda * (mr + 15) / 16 * 16));
  for (int32_t m = 0; m < mr; m++) {
    l->row[m] = l->rows + m * lda;
    if (a8) {
      for (int64_t i = 0; i < kred; i++) ((uint8_t *)l->row[m])[i] = (uint8_t)(1 + kit_randint(r, 255));
    } else {
      uint16_t *src = kit_bf16_row(r, kred);
      memcpy(l->row[m], src, (size_t)kred * 2);
      free(src);
    }
    l->scale[m] = a8 ? 0.01f : 1.0f;
    l->weight[m] = (float)(0.1 + 0.9 * kit_uniform(r));
  }
  l->c = (float *)kit_calloc((size_t)mr * 2 * MOE_NR * sizeof(float));
  for (int32_t m = 0; m < mr; m++) l->c_rows[m] = l->c + m * 2 * MOE_NR;
  l->g.mr = mr;
  l->g.a = (const void *const *)l->row;
  l->g.lda = lda;
  l->g.a_scale = l->scale;
  l->g.panel_bytes = gemm == 1 ? ex->panel13_bytes : ex->panel2_bytes;
  l->g.kred = kred;
  l->g.kpad = gemm == 1 ? ex->k13_pad : ex->k2_pad;
  l->g.kgroup = moe__kgroup(ex->precision, ex->block_k, ex->group);
  l->g.row_weight = l->weight;
  l->g.act = MOE_ACT_SILU;
  l->g.c = l->c;
  l->g.ldc = MOE_NR;
  l->g.c_rows = l->c_rows;
  if (a8 && l->g.kgroup) { /* W4A8 */
    const int64_t ng = (kred + l->g.kgroup - 1) / l->g.kgroup;
    l->gsum = (int32_t *)kit_malloc((size_t)(mr * ng) * sizeof(int32_t));
    for (int32_t m = 0; m < mr; m++) {
      if (moe_sum_groups_u8((const uint8_t *)l->row[m], kred, l->g.kgroup, l->gsum + m * ng) != MOE_OK) die("group sums");
      l->gsum_row[m] = l->gsum + m * ng;
    }
    l->g.a_group_sum = l->gsum_row;
  }
}

static void lane_free(lane *l) {
  free(l->rows);
  free(l->c);
  free(l->scratch);
  free(l->blocks);
  free(l->gsum);
}

/* Pairs mode (calls of `pairs` units): the lane's scratch, and a copy of its rows per block (as
 * the layer's blocks hold other tokens' rows, each block's A comes from L2 once per chunk). */
static void lane_pairs(lane *l, int pairs) {
#ifdef MOE__HAVE_AMX
  const int nb = MOE__AMX_NB / pairs;
  const size_t bytes = (size_t)l->g.lda * (size_t)((l->g.mr + 15) / 16 * 16);
  if (!(l->scratch = aligned_alloc(64, MOE__AMX_NB * sizeof(moe__amx_block_buf)))) die("out of memory");
  l->blocks = (uint8_t *)kit_malloc((size_t)nb * bytes);
  for (int b = 0; b < nb; b++) {
    memcpy(l->blocks + b * bytes, l->rows, bytes);
    for (int32_t m = 0; m < l->g.mr; m++) l->block_row[b * MOE_BLOCK_M + m] = l->blocks + b * bytes + m * l->g.lda;
  }
#else
  (void)l, (void)pairs;
#endif
}

/* ==== a job: one kernel, one GEMM, a range of units, on every thread ============================== */
typedef struct job {
  moe_gemm_ukernel fn;
  int gemm;
  const moe_experts *ex;
  lane *lanes;        /* [threads] */
  int threads;
  int64_t total;      /* units of all experts */
  int64_t first, count; /* units first .. first + count - 1 (mod total) */
  int64_t reps;       /* passes over them */
  int split;          /* 1: the threads split the units (stream); 0: each runs all of them (cache) */
  int pairs;          /* >0: AMX calls over this many units and MOE__AMX_NB / pairs blocks (pairs mode) */
  moe_precision p;
} job;

/* Pairs mode: units lo..hi-1 in AMX calls of j->pairs units x MOE__AMX_NB / j->pairs blocks (the
 * lane's rows in each), as the layer makes them with MOE__AMX_PAIRS (moe__amx_gemm_pairs); each
 * call with the next call's units as prefetch hint. */
static double run_pairs(const job *j, lane *l, int64_t lo, int64_t hi) {
  double flops = 0;
#ifdef MOE__HAVE_AMX
  const int nb = MOE__AMX_NB / j->pairs;
  moe_gemm_args gs[MOE__AMX_NB];
  for (int64_t u = lo; u < hi; u += j->pairs) {
    const int np = (int)(hi - u < j->pairs ? hi - u : j->pairs);
    for (int q = 0; q < np; q++) {
      moe_gemm_args g = l->g;
      unit_at(j->ex, j->gemm, (j->first + u + q) % j->total, &g);
      for (int b = 0; b < nb; b++) gs[q * nb + b] = g, gs[q * nb + b].a = &l->block_row[b * MOE_BLOCK_M];
      flops += nb * unit_flops(j->gemm, g.mr, g.nr, g.kred);
    }
    if (u + np < hi) {
      moe_gemm_args n = l->g;
      gs[0].w_next_bytes = unit_at(j->ex, j->gemm, (j->first + u + np) % j->total, &n) * (size_t)j->pairs;
      gs[0].w_next = n.w;
    }
    moe__amx_gemm_pairs(j->p, gs, nb, np, j->gemm == 1, (moe__amx_block_buf *)l->scratch);
  }
#else
  (void)j, (void)l, (void)lo, (void)hi;
#endif
  return flops;
}

/* Calls the kernel on units lo..hi-1 of the job, each call with the next unit as prefetch hint, as
 * the layer gives it. */
static double run_units(const job *j, lane *l, int64_t lo, int64_t hi) {
  moe_gemm_args next;
  double flops = 0;
  size_t next_bytes;
  if (j->pairs) return run_pairs(j, l, lo, hi);
  next = l->g;
  next_bytes = unit_at(j->ex, j->gemm, (j->first + lo) % j->total, &next);
  for (int64_t u = lo; u < hi; u++) {
    moe_gemm_args cur = next;
    if (u + 1 < hi) {
      next_bytes = unit_at(j->ex, j->gemm, (j->first + u + 1) % j->total, &next);
      cur.w_next = next.w, cur.w_next_bytes = next_bytes;
    }
    j->fn(&cur);
    flops += unit_flops(j->gemm, cur.mr, cur.nr, cur.kred);
  }
  return flops;
}

static void job_task(void *arg, int64_t t) {
  const job *j = (const job *)arg;
  lane *l = &j->lanes[t];
  int64_t lo = j->split ? j->count * t / j->threads : 0, hi = j->split ? j->count * (t + 1) / j->threads : j->count;
  double t0 = now_s();
  l->flops = 0;
  for (int64_t r = 0; r < j->reps; r++) l->flops += run_units(j, l, lo, hi);
  l->seconds = now_s() - t0;
}

/* Wall seconds of the job on all threads. */
static double job_run(bench_pool *pool, job *j) {
  double t0;
  pool_warm(pool);
  t0 = now_s();
  pool_parallel_for(pool, job_task, j, j->threads);
  return now_s() - t0;
}

/* Bytes the units first .. first + count - 1 read. */
static double job_bytes(const job *j) {
  moe_gemm_args g;
  double bytes = 0;
  for (int64_t u = 0; u < j->count; u++) bytes += (double)unit_at(j->ex, j->gemm, (j->first + u) % j->total, &g);
  return bytes;
}

/* ==== the two modes ================================================================================ */
typedef struct ctx {
  const options *o;
  bench_pool *pool;
  probe_ctx *probe;
  ceilings peaks;
} ctx;

typedef struct result {
  const moe_gemm_config *k;
  int gemm;
  const char *mode;
  int32_t mr, nr;
  int64_t kred, units;
  double bytes;          /* per pass (stream) or of the panel set (cache) */
  stats gflops, gbs, probe, frac;
  double peak_gflops;
  double cache_gbs;      /* cache: GB/s of weights in the best trial */
  double decode_gbs;     /* cache and decode: the kernel's decode roof (0: none) */
  int runs;
} result;

static int is_scalar(const moe_gemm_config *k) { return k->isa == MOE_ISA_SCALAR; }

/* Rows at full tiles: the largest multiple of the kernel's tile rows up to MOE_BLOCK_M. */
static int32_t full_tile_rows(const moe_gemm_config *k, int gemm) {
  int32_t tile = gemm == 1 ? k->mr : k->mr2;
  if (tile < 1 || tile > MOE_BLOCK_M) tile = MOE_BLOCK_M;
  return MOE_BLOCK_M / tile * tile;
}

static job job_make(const ctx *c, const moe_gemm_config *k, int gemm, const moe_experts *ex, int32_t mr) {
  job j;
  kit_rng r = kit_rng_stream(c->o->seed, 0xACE0u + (uint64_t)gemm);
  memset(&j, 0, sizeof j);
  j.fn = gemm == 1 ? k->gemm1 : k->gemm2;
  j.gemm = gemm;
  j.ex = ex;
  j.threads = pool_threads(c->pool);
  j.lanes = (lane *)kit_malloc((size_t)j.threads * sizeof *j.lanes);
  for (int t = 0; t < j.threads; t++) lane_init(&j.lanes[t], ex, gemm, mr, &r);
  j.total = units_per_expert(ex, gemm) * ex->E;
  j.reps = 1;
  j.p = ex->precision;
  return j;
}

static void job_free(job *j) {
  for (int t = 0; t < j->threads; t++) lane_free(&j->lanes[t]);
  free(j->lanes);
}

/* Cache: expert 0's first units up to half of L2, passes repeated for ~cache_s per trial; per trial
 * the sum of the threads' own rates (as the peak is measured). pairs > 0: in the pairs mode's
 * calls (run_pairs). */
static result measure_cache(const ctx *c, const moe_gemm_config *k, int gemm, const moe_experts *ex, int pairs) {
  result res;
  job j = job_make(c, k, gemm, ex, c->o->rows > 0 ? c->o->rows : full_tile_rows(k, gemm));
  double *rate = (double *)kit_malloc((size_t)c->o->runs * sizeof *rate), pass_s, target;
  moe_gemm_args g;
  memset(&res, 0, sizeof res);
  j.pairs = pairs;
  for (int t = 0; pairs && t < j.threads; t++) lane_pairs(&j.lanes[t], pairs);
  j.count = cache_units(ex, gemm, c->o->l2_bytes);
  unit_at(ex, gemm, 0, &g); /* the first unit's columns */
  pass_s = job_run(c->pool, &j); /* also brings the set into every core's L2 */
  target = is_scalar(k) ? SLICE_S : c->o->cache_s;
  j.reps = pass_s < target ? (int64_t)(target / pass_s) : 1;
  for (int i = 0; i < c->o->runs; i++) {
    job_run(c->pool, &j);
    rate[i] = 0;
    for (int t = 0; t < j.threads; t++) rate[i] += j.lanes[t].flops / j.lanes[t].seconds / 1e9;
  }
  res.k = k, res.gemm = gemm, res.mode = pairs ? "pairs" : "cache", res.runs = c->o->runs;
  res.mr = j.lanes[0].g.mr, res.nr = g.nr, res.kred = j.lanes[0].g.kred, res.units = j.count;
  res.bytes = job_bytes(&j);
  res.gflops = stats_of(rate, c->o->runs);
  res.cache_gbs = res.gflops.max * res.bytes * (double)j.reps / j.lanes[0].flops; /* GFLOPS x bytes per flop */
  res.peak_gflops = peak_for_kernel(&c->peaks, k);
  free(rate);
  job_free(&j);
  return res;
}

/* Stream: rounds of (probe, one cold pass at one row); a pass covers all units, or for a scalar
 * kernel the units that take ~SLICE_S, each pass starting where the last one ended. */
static result measure_stream(const ctx *c, const moe_gemm_config *k, int gemm, const moe_experts *ex) {
  result res;
  job j = job_make(c, k, gemm, ex, 1);
  int n = c->o->runs;
  double *v = (double *)kit_malloc(4 * (size_t)n * sizeof *v), *gbs = v, *probe = v + n, *frac = v + 2 * n, *gf = v + 3 * n;
  memset(&res, 0, sizeof res);
  j.split = 1;
  j.count = j.total;
  if (is_scalar(k)) { /* time a few units, then size the pass to the slice */
    double t;
    j.count = j.total < 4 * j.threads ? j.total : 4 * j.threads;
    t = job_run(c->pool, &j);
    j.count = (int64_t)((double)j.count * SLICE_S / t);
    j.count = j.count < j.threads ? j.threads : j.count > j.total ? j.total : j.count;
  }
  for (int i = 0; i < n; i++) {
    double s, bytes = job_bytes(&j), flops = 0;
    probe[i] = probe_bandwidth(c->probe, c->pool);
    s = job_run(c->pool, &j);
    for (int t = 0; t < j.threads; t++) flops += j.lanes[t].flops;
    gbs[i] = bytes / s / 1e9;
    gf[i] = flops / s / 1e9;
    frac[i] = gbs[i] / probe[i];
    res.bytes = bytes;
    j.first = (j.first + j.count) % j.total;
  }
  res.k = k, res.gemm = gemm, res.mode = "stream", res.runs = n;
  res.mr = 1, res.nr = gemm == 1 ? MOE_NR : 2 * MOE_NR, res.kred = j.lanes[0].g.kred, res.units = j.count;
  res.gbs = stats_of(gbs, n), res.probe = stats_of(probe, n), res.frac = stats_of(frac, n);
  res.gflops = stats_of(gf, n);
  res.peak_gflops = peak_for_kernel(&c->peaks, k);
  free(v);
  job_free(&j);
  return res;
}

/* Decode: the decode roof of kernel k's GEMM (bench_decode.h) over the cache mode's panel set. */
static int decodes(const moe_gemm_config *k) { return k->isa == MOE_ISA_AMX && decode_roof_available(k->precision); }

static result measure_decode(const ctx *c, const moe_gemm_config *k, int gemm, const moe_experts *ex) {
  result res;
  moe_gemm_args g;
  double best = decode_roof_gbs(c->pool, ex, gemm, c->o->l2_bytes, c->o->runs);
  memset(&res, 0, sizeof res);
  res.k = k, res.gemm = gemm, res.mode = "decode", res.runs = c->o->runs;
  res.mr = 0, res.kred = gemm == 1 ? ex->K : ex->N;
  res.bytes = (double)unit_at(ex, gemm, 0, &g);
  res.nr = g.nr;
  res.decode_gbs = best;
  return res;
}

/* ==== output ====================================================================================== */
static void json_kernel_head(json *j, const moe_gemm_config *k, int gemm, const options *o) {
  json_begin(j);
  json_str(j, "bench", "kernel");
  json_str(j, "kernel", gemm == 1 ? k->gemm1_name : k->gemm2_name);
  json_str(j, "pair", k->name);
  json_str(j, "gemm", gemm == 1 ? "gemm1" : "gemm2");
  json_str(j, "precision", prec_name(k->precision));
  json_str(j, "isa", moe_isa_name(k->isa));
  json_str(j, "dot", k->dot);
  json_str(j, "model", o->model);
  json_int(j, "threads", o->threads);
}

/* A decode line: the roof's GB/s of weights (the best trial). */
static void print_decode(const ctx *c, const result *r) {
  json j;
  json_kernel_head(&j, r->k, r->gemm, c->o);
  json_str(&j, "mode", r->mode);
  json_int(&j, "nr", r->nr), json_int(&j, "kred", r->kred);
  json_int(&j, "runs", r->runs);
  json_num(&j, "weight_gbs", r->decode_gbs);
  json_end(&j);
  fprintf(stderr, "  %s decode   x%-2d k%-5lld %8.2f GB/s of weights decoded (B staging alone, in cache)\n",
          r->gemm == 1 ? "gemm1" : "gemm2", (int)r->nr, (long long)r->kred, r->decode_gbs);
}

static void print_result(const ctx *c, const result *r) {
  json j;
  int cache = strcmp(r->mode, "stream") != 0; /* cache, or pairs: calls in cache */
  if (!strcmp(r->mode, "decode")) {
    print_decode(c, r);
    return;
  }
  json_kernel_head(&j, r->k, r->gemm, c->o);
  json_str(&j, "mode", r->mode);
  json_int(&j, "mr", r->mr), json_int(&j, "nr", r->nr), json_int(&j, "kred", r->kred);
  json_int(&j, "units", r->units);
  json_num(&j, "weight_mb", r->bytes / 1e6);
  json_int(&j, "runs", r->runs);
  if (cache) { /* the best trial against the best peak trial; the median too */
    json_num(&j, "gflops", r->gflops.max), json_num(&j, "gflops_median", r->gflops.median);
    json_num(&j, "gflops_min", r->gflops.min);
    json_num(&j, "weight_gbs", r->cache_gbs);
    if (r->decode_gbs > 0) json_num(&j, "decode_gbs", r->decode_gbs), json_num(&j, "frac_of_decode", r->cache_gbs / r->decode_gbs);
  } else {
    json_num(&j, "gflops", r->gflops.median);
    json_num(&j, "weight_gbs", r->gbs.median), json_num(&j, "weight_gbs_min", r->gbs.min);
    json_num(&j, "weight_gbs_max", r->gbs.max);
    json_num(&j, "peak_gbs", r->probe.median), json_num(&j, "peak_gbs_min", r->probe.min);
    json_num(&j, "peak_gbs_max", r->probe.max);
  }
  if (r->peak_gflops > 0) json_num(&j, "peak_gflops", r->peak_gflops);
  else json_null(&j, "peak_gflops");
  if (cache && r->peak_gflops > 0) json_num(&j, "frac_of_peak", r->gflops.max / r->peak_gflops);
  else if (cache) json_null(&j, "frac_of_peak");
  else {
    json_num(&j, "frac_of_peak", r->frac.median), json_num(&j, "frac_min", r->frac.min);
    json_num(&j, "frac_max", r->frac.max);
  }
  json_end(&j);
  if (cache)
    fprintf(stderr, "  %s %-6s %2dx%-2d k%-5lld %8.1f G%s/s", r->gemm == 1 ? "gemm1" : "gemm2", r->mode, (int)r->mr, (int)r->nr,
            (long long)r->kred, r->gflops.max, moe__is_a8(r->k->precision) ? "OP" : "FLOP");
  else
    fprintf(stderr, "  %s stream  1x%-2d k%-5lld %8.2f GB/s", r->gemm == 1 ? "gemm1" : "gemm2", (int)r->nr,
            (long long)r->kred, r->gbs.median);
  if (cache && r->peak_gflops > 0) fprintf(stderr, "  %5.1f%% of %s peak %.0f", 100 * r->gflops.max / r->peak_gflops, r->k->dot, r->peak_gflops);
  else if (cache) fputs("  (no peak measured for this tier)", stderr);
  if (cache && r->decode_gbs > 0) fprintf(stderr, "; %.2f GB/s, %.1f%% of the decode roof", r->cache_gbs, 100 * r->cache_gbs / r->decode_gbs);
  if (cache) fputc('\n', stderr);
  else fprintf(stderr, "  %5.1f%% of probe %.1f GB/s (%.0f MB per pass)\n", 100 * r->frac.median, r->probe.median, r->bytes / 1e6);
}

static void print_skipped(const ctx *c, const moe_gemm_config *k, const char *reason) {
  for (int gemm = 1; gemm <= 2; gemm++) {
    json j;
    json_kernel_head(&j, k, gemm, c->o);
    json_bool(&j, "skipped", 1);
    json_str(&j, "reason", reason);
    json_end(&j);
  }
  fprintf(stderr, "%s (%s) skipped: %s\n", k->name, prec_name(k->precision), reason);
}

/* ==== the walk over the list ======================================================================= */
static int selected(const options *o, const moe_gemm_config *k) {
  if (o->isa_given && k->isa != o->isa) return 0;
  return !o->kernel || strstr(k->name, o->kernel) || strstr(k->gemm1_name, o->kernel) || strstr(k->gemm2_name, o->kernel);
}

/* An earlier kernel of the list with the same two functions (fp16 runs the bf16 kernels), or NULL. */
static const moe_gemm_config *same_as_earlier(const options *o, int i) {
  const moe_gemm_config *k = moe_kernel_at(i);
  for (int e = 0; e < i; e++) {
    const moe_gemm_config *x = moe_kernel_at(e);
    if (selected(o, x) && moe_kernel_runnable(x) && x->gemm1 == k->gemm1 && x->gemm2 == k->gemm2) return x;
  }
  return NULL;
}

/* Packed random experts of precision p: enough for stream_mib of W2 (the smaller matrix) when a
 * vector kernel will stream them, one expert for scalar kernels alone. */
static void *pack_weights(const ctx *c, moe_precision p, int vector, moe_experts *ex) {
  kit_weights kw;
  void *buf;
  int64_t E = 1;
  double t0 = now_s(), t_gen;
  if (vector) {
    kit_weights_alloc(&kw, p, 1, c->o->N, c->o->K, 0, 0, 0, 0);
    E = (int64_t)(c->o->stream_mib * 1048576.0 / (double)kw.m2.code_bytes) + 1;
    kit_weights_free(&kw);
  }
  kit_weights_random(&kw, p, E, c->o->N, c->o->K, c->o->seed, KIT_CODES);
  t_gen = now_s() - t0;
  buf = kit_pack(&kw.w, ex);
  kit_weights_free(&kw);
  fprintf(stderr, "%s: %lld experts (K %lld, N %lld) generated in %.1f s, packed in %.1f s\n", prec_name(p),
          (long long)E, (long long)c->o->K, (long long)c->o->N, t_gen, now_s() - t0 - t_gen);
  return buf;
}

/* 1 for the kernels with a pairs mode: AMX bf16, fp16, int8 (moe__amx_gemm_pairs). */
static int pairs_mode(const moe_gemm_config *k) {
#ifdef MOE__HAVE_AMX
  return k->isa == MOE_ISA_AMX && !moe__amx_decodes(k->precision);
#else
  (void)k;
  return 0;
#endif
}

/* Every mode of kernel k; only the decode roof where this CPU runs its decoders but not the kernel. */
static void bench_kernel(const ctx *c, const moe_gemm_config *k, const moe_experts *ex) {
  const int runs = moe_kernel_runnable(k);
  fprintf(stderr, "%s (%s, %s)%s\n", k->name, prec_name(k->precision), k->dot, runs ? "" : ": decode roof only");
  for (int gemm = 1; gemm <= 2; gemm++) {
    result d, r;
    d.decode_gbs = 0;
    if (decodes(k)) d = measure_decode(c, k, gemm, ex), print_result(c, &d);
    if (!runs) continue;
    r = measure_cache(c, k, gemm, ex, 0);
    r.decode_gbs = d.decode_gbs;
    print_result(c, &r);
    if (c->o->pairs && pairs_mode(k)) r = measure_cache(c, k, gemm, ex, c->o->pairs), print_result(c, &r);
    r = measure_stream(c, k, gemm, ex);
    print_result(c, &r);
  }
}

/* The selected kernels of precision p: skipped lines, then one packing shared by the rest (and by
 * the decode roofs of AMX kernels this CPU runs only the decoders of). */
static void bench_precision(const ctx *c, moe_precision p) {
  int runnable = 0, vector = 0;
  moe_experts ex;
  void *buf;
  for (int i = 0; i < moe_kernel_count(); i++) {
    const moe_gemm_config *k = moe_kernel_at(i), *twin;
    if (k->precision != p || !selected(c->o, k)) continue;
    if (!moe_kernel_runnable(k)) {
      print_skipped(c, k, "this CPU lacks the kernel's features");
      if (decodes(k)) runnable++, vector = 1;
    }
    else if ((twin = same_as_earlier(c->o, i))) {
      char reason[96];
      snprintf(reason, sizeof reason, "the same functions as the %s row", prec_name(twin->precision));
      print_skipped(c, k, reason);
    } else runnable++, vector |= !is_scalar(k);
  }
  if (!runnable) return;
  buf = pack_weights(c, p, vector, &ex);
  for (int i = 0; i < moe_kernel_count(); i++) {
    const moe_gemm_config *k = moe_kernel_at(i);
    if (k->precision == p && selected(c->o, k) && (moe_kernel_runnable(k) ? !same_as_earlier(c->o, i) : decodes(k)))
      bench_kernel(c, k, &ex);
  }
  free(buf);
}

int main(int argc, char **argv) {
  options o;
  ctx c;
  int any = 0;
  bench_prog = "bench_kernels";
  o = parse_options(argc, argv);
  for (int i = 0; i < moe_kernel_count(); i++) any |= selected(&o, moe_kernel_at(i));
  if (!any) die("no kernel of the list matches --kernel %s%s%s", o.kernel ? o.kernel : "(any)",
                o.isa_given ? " --isa " : "", o.isa_given ? moe_isa_name(o.isa) : "");
  memset(&c, 0, sizeof c);
  c.o = &o;
  c.pool = pool_create(o.threads);
  c.probe = probe_create();
  c.peaks = measure_peaks(c.pool);
  fprintf(stderr, "%d threads, GEMM1 over K=%lld, GEMM2 over N=%lld (%s); peaks: vpdpbusd %.0f GOPS, vdpbf16ps %.0f "
          "GFLOPS, tdpbusd %.0f GOPS, tdpbf16ps %.0f GFLOPS; cache sets of %zu KiB\n", o.threads, (long long)o.K,
          (long long)o.N, o.model, c.peaks.gops_vnni, c.peaks.gflops_bf16, c.peaks.gops_tdpbusd, c.peaks.gflops_tdpbf16,
          o.l2_bytes / 2048);
  for (int p = 0; p < MOE_PREC_COUNT; p++) bench_precision(&c, (moe_precision)p);
  probe_destroy(c.probe);
  pool_destroy(c.pool);
  return 0;
}

/* moe_ep — one MoE layer with expert parallelism over MPI (Open MPI: Debian libopenmpi-dev).
 *
 * Each of the P ranks holds a contiguous slice of the E routed experts (moe_expert_map_contiguous:
 * ceil(E / P) per rank, the last ones possibly fewer), generated from the seed expert by expert with
 * tests/kit.h's per-expert RNG streams (random codes and scales, KIT_CODES), so every rank count sees the
 * same weights and a rank generates only its slice. x is bf16-exact; the layer runs with f32 activations
 * and outputs (moe_call.dtype = MOE_F32) so that partial sums are never rounded to bf16. Router weights
 * carry the model's routed scaling factor. Modes:
 *
 *   allreduce      every rank has all M tokens of the step (as after attention run data-parallel and
 *                  gathered) and routes them; each runs its experts through the expert map into an f32
 *                  partial [M, K]. The partials are reduced deterministically: rank q owns token block q
 *                  (M * q / P ..), MPI_Alltoallv sends each block's partial rows to its owner, the owner
 *                  sums them in rank order 0..P-1, adds the shared expert of its tokens, and
 *                  MPI_Allgatherv gives every rank the whole output.
 *   alltoall       rank r owns token block r only and routes it; each token goes (bf16 x row, topk ids and
 *                  weights) to the ranks that own at least one of its experts, MPI_Alltoallv; each rank
 *                  runs its experts on what it received; MPI_Alltoallv returns the f32 partial rows; the
 *                  owner sums them in rank order 0..P-1 and adds the shared expert. The output stays
 *                  distributed by token block (what the next data-parallel attention wants).
 *   mpi-allreduce  as allreduce, but rank 0 adds the shared expert of all tokens to its partial and
 *                  MPI_Allreduce(MPI_SUM) combines: MPI fixes no summation order, so bitwise
 *                  reproducibility is measured, not promised.
 *
 * In both deterministic modes a token's output is sum_{r = 0..P-1} partial_r + shared (f32, left to
 * right; ranks without the token's experts add nothing), so they agree bitwise with each other and are
 * reproducible run to run for a given P. The shared expert runs once per token, on the token's owner.
 *
 *   mpirun -np P moe_ep [--model NAME] [--experts E] [--n N] [--shared-n N] [--m M] [--precision P]
 *                       [--mode allreduce|alltoall|mpi-allreduce|all] [--threads T]
 *                       [--pool openmp|pthreadpool|serial] [--runs R] [--seed S] [--check]
 *
 * --check: rank 0 also builds all experts and runs the whole layer alone (one process, same weights and
 * tokens), reports each mode's max abs / max rel difference from it, checks the first tokens against the
 * float64 oracle (tests/oracle.h), and requires every timed run of a mode to be bitwise equal to its
 * first (mpi-allreduce: reported only). Timing: per run, wall time of the slowest rank (after a barrier)
 * and each rank's time inside MPI calls (waiting for slower ranks at an exchange included); median of
 * --runs after one warm-up. One JSON line per mode on stdout (rank 0), a readable line on stderr.
 *
 * Exit status: 0 ok, 1 a check failed or a library call failed, 2 bad options.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit.h" /* tests/kit.h: model shapes, RNG, plain weights; includes moe.h (the library: link libmoe) */
#include "oracle.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef MOE_EP_PTHREADPOOL
#include "moe_pthreadpool.h"
#endif

#define ORACLE_TOKENS 4 /* --check: the float64 oracle checks the first min(M, 4) tokens */

typedef enum mode { MODE_ALLREDUCE, MODE_ALLTOALL, MODE_MPI_ALLREDUCE, MODE_COUNT } mode;
static const char *MODE_NAMES[MODE_COUNT] = {"allreduce", "alltoall", "mpi-allreduce"};
typedef enum pool_kind { POOL_OPENMP, POOL_PTHREADPOOL, POOL_SERIAL } pool_kind;
static const char *POOL_NAMES[] = {"openmp", "pthreadpool", "serial"};

typedef struct options {
  const kit_model *model;
  int64_t E, N, shared_N, M, threads, runs;
  uint64_t seed;
  moe_precision prec;
  int modes[MODE_COUNT];
  pool_kind pool;
  int check;
} options;

/* One rank's state. Token block q is [blk(q), blk(q + 1)). */
typedef struct ep {
  int rank, P;
  const options *o;
  const kit_model *spec;
  int64_t M, K, N, E, shN;
  int32_t topk, E_local;
  int32_t *map;               /* [E] global id -> local id or -1                          */
  moe_experts ex, sh;         /* local experts; shared expert (sh.E == 0: none)           */
  void *ex_buf, *sh_buf;
  float *xf, *logits, *corr, *gate; /* x [M, K] (bf16 values); logits [M, E]; bias; gate  */
  uint16_t *xb;               /* x in bf16, what alltoall sends                           */
  moe_router router;
  moe_parallel par;
  const moe_parallel *parp;   /* NULL: OpenMP's default                                   */
  void *ws;
  size_t ws_size;
} ep;

/* Per-run measurements of one rank. */
typedef struct step {
  double total, comm, bytes; /* seconds; seconds in MPI calls; bytes sent to other ranks   */
} step;

/* Messages about options and shapes: every rank parses the same argv, rank 0 says what is wrong. */
static int say_rank;
#define SAY(...) (say_rank == 0 ? fprintf(stderr, __VA_ARGS__) : 0)

static int64_t blk(const ep *e, int q) { return e->M * q / e->P; }
static int owner(const ep *e, int32_t g) { return g / e->E_local; }

static void die(const ep *e, const char *what, moe_status st) {
  fprintf(stderr, "moe_ep: rank %d: %s: %s\n", e->rank, what, moe_status_str(st));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *ws_get(ep *e, size_t n) {
  if (n > e->ws_size) {
    free(e->ws);
    e->ws = kit_malloc(n);
    e->ws_size = n;
  }
  return e->ws;
}

/* ---- options ---------------------------------------------------------------------------------- */
static void usage(FILE *f) {
  fprintf(f,
          "usage: mpirun -np P moe_ep [--model NAME] [--experts E] [--n N] [--shared-n N] [--m M]\n"
          "         [--precision P] [--mode allreduce|alltoall|mpi-allreduce|all] [--threads T]\n"
          "         [--pool openmp|pthreadpool|serial] [--runs R] [--seed S] [--check]\n"
          "  --model      qwen3-30b-a3b (default), deepseek-v3, ... (tests/kit.h's models)\n"
          "  --experts    routed experts (default: the model's; 32 for deepseek-v3)\n"
          "  --n          expert intermediate size (default: the model's)\n"
          "  --shared-n   shared expert intermediate size (default: the model's; 0: leave it out)\n"
          "  --m          tokens of the step (default 32)\n"
          "  --precision  bf16, fp16, int8, fp8, int4-w4a8, int4-w4a16, mxfp4 (default: the model's)\n"
          "  --mode       default all\n"
          "  --threads    threads per rank (default 1)\n"
          "  --pool       thread pool (default openmp when built with OpenMP)\n"
          "  --runs       timed runs, median reported (default 5)\n"
          "  --seed       weights and tokens (default 1)\n"
          "  --check      compare with one rank alone and the float64 oracle; exit 1 on a mismatch\n");
}

static int parse_int(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *v) {
  char *end;
  long long x = s ? strtoll(s, &end, 10) : 0;
  if (!s || *s == '\0' || *end != '\0' || x < lo || x > hi) {
    SAY("moe_ep: %s needs an integer in [%lld, %lld]\n", opt, (long long)lo, (long long)hi);
    return -1;
  }
  *v = x;
  return 0;
}

static int parse_name(const char *opt, const char *s, const char *const *names, int n, int *v) {
  for (int i = 0; s && i < n; i++)
    if (strcmp(s, names[i]) == 0) return *v = i, 0;
  SAY("moe_ep: %s: unknown value '%s'\n", opt, s ? s : "");
  return -1;
}

static int parse_precision(const char *s, moe_precision *p) {
  for (int i = 0; s && i < MOE_PREC_COUNT; i++)
    if (strcmp(s, moe_precision_name((moe_precision)i)) == 0) {
      if (!moe_precision_compiled((moe_precision)i)) break;
      return *p = (moe_precision)i, 0;
    }
  SAY("moe_ep: --precision: unknown or compiled-out precision '%s'\n", s ? s : "");
  return -1;
}

static int parse_option(options *o, const char *a, const char *v) {
  int64_t x = 0;
  int k = 0;
  if (strcmp(a, "--model") == 0) {
    if (!(o->model = kit_model_find(v))) SAY("moe_ep: unknown model '%s'\n", v ? v : "");
    return o->model ? 0 : -1;
  }
  if (strcmp(a, "--experts") == 0) return parse_int(a, v, 1, 1024, &o->E);
  if (strcmp(a, "--n") == 0) return parse_int(a, v, 1, 1 << 20, &o->N);
  if (strcmp(a, "--shared-n") == 0) return parse_int(a, v, 0, 1 << 20, &o->shared_N);
  if (strcmp(a, "--m") == 0) return parse_int(a, v, 1, 1 << 16, &o->M);
  if (strcmp(a, "--threads") == 0) return parse_int(a, v, 1, 1024, &o->threads);
  if (strcmp(a, "--runs") == 0) return parse_int(a, v, 1, 10000, &o->runs);
  if (strcmp(a, "--seed") == 0) {
    if (parse_int(a, v, 0, INT64_MAX, &x)) return -1;
    o->seed = (uint64_t)x;
    return 0;
  }
  if (strcmp(a, "--precision") == 0) return parse_precision(v, &o->prec);
  if (strcmp(a, "--pool") == 0) {
    if (parse_name(a, v, POOL_NAMES, 3, &k)) return -1;
    o->pool = (pool_kind)k;
    return 0;
  }
  if (strcmp(a, "--mode") == 0) {
    if (v && strcmp(v, "all") == 0) {
      for (k = 0; k < MODE_COUNT; k++) o->modes[k] = 1;
      return 0;
    }
    if (parse_name(a, v, MODE_NAMES, MODE_COUNT, &k)) return -1;
    memset(o->modes, 0, sizeof o->modes);
    o->modes[k] = 1;
    return 0;
  }
  SAY("moe_ep: unknown option '%s'\n", a);
  return -1;
}

/* Returns 0, or 2 after a message (rank 0 prints it); exits 0 on --help. */
static int parse_options(int argc, char **argv, options *o) {
  int prec_set = 0;
  memset(o, 0, sizeof *o);
  o->model = kit_model_find("qwen3-30b-a3b"), o->M = 32, o->threads = 1, o->runs = 5, o->seed = 1;
  o->shared_N = -1;
  for (int k = 0; k < MODE_COUNT; k++) o->modes[k] = 1;
#ifdef _OPENMP
  o->pool = POOL_OPENMP;
#elif defined(MOE_EP_PTHREADPOOL)
  o->pool = POOL_PTHREADPOOL;
#else
  o->pool = POOL_SERIAL;
#endif
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (say_rank == 0) usage(stdout);
      MPI_Finalize();
      exit(0);
    }
    if (strcmp(a, "--check") == 0) {
      o->check = 1;
      continue;
    }
    prec_set |= strcmp(a, "--precision") == 0;
    if (parse_option(o, a, v) != 0) {
      if (say_rank == 0) usage(stderr);
      return 2;
    }
    i++;
  }
  if (!prec_set) o->prec = o->model->precision;
#ifndef _OPENMP
  if (o->pool == POOL_OPENMP) return SAY("moe_ep: --pool openmp: built without OpenMP\n"), 2;
#endif
#ifndef MOE_EP_PTHREADPOOL
  if (o->pool == POOL_PTHREADPOOL) return SAY("moe_ep: --pool pthreadpool: built without it\n"), 2;
#endif
  if (o->pool == POOL_SERIAL && o->threads > 1) return SAY("moe_ep: --pool serial runs 1 thread\n"), 2;
  return 0;
}

/* ---- setup ------------------------------------------------------------------------------------ */
static void serial_for(void *pool, void (*fn)(void *arg, int64_t i), void *arg, int64_t n) {
  (void)pool;
  for (int64_t i = 0; i < n; i++) fn(arg, i);
}

static void setup_pool(ep *e) {
  const options *o = e->o;
  memset(&e->par, 0, sizeof e->par);
  e->parp = &e->par;
  if (o->pool == POOL_SERIAL) e->par.parallel_for = serial_for, e->par.n_threads = 1;
#ifdef _OPENMP
  if (o->pool == POOL_OPENMP) omp_set_num_threads((int)o->threads), e->parp = NULL;
#endif
#ifdef MOE_EP_PTHREADPOOL
  if (o->pool == POOL_PTHREADPOOL) {
    pthreadpool_t pool = pthreadpool_create((size_t)o->threads);
    if (!pool) fprintf(stderr, "moe_ep: pthreadpool_create failed\n"), MPI_Abort(MPI_COMM_WORLD, 1);
    e->par = moe_pthreadpool(pool);
  }
#endif
}

static void teardown_pool(ep *e) {
#ifdef MOE_EP_PTHREADPOOL
  if (e->o->pool == POOL_PTHREADPOOL) pthreadpool_destroy((pthreadpool_t)e->par.pool);
#else
  (void)e;
#endif
}

/* Plain weights of global experts [g0, g0 + n) into slots 0.. of E_slots (others left zero). */
static void make_plain(const ep *e, kit_weights *kw, int64_t E_slots, int64_t N, int64_t g0, int64_t n,
                       uint64_t stream0) {
  unsigned flags = KIT_CODES | (e->spec->biases ? KIT_BIAS : 0);
  kit_weights_alloc(kw, e->o->prec, E_slots, N, e->K, 0, 0, 0, flags);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
  for (int64_t i = 0; i < n; i++) kit_weights_expert(kw, i, (int64_t)stream0 + g0 + i, e->o->seed, flags, NULL, NULL);
}

static void *pack_plain(const ep *e, kit_weights *kw, moe_experts *ex) {
  size_t n = moe_pack_size(&kw->w);
  void *buf = kit_malloc(n);
  moe_status st = n ? moe_pack(&kw->w, ex, buf, n) : MOE_ERR_DESCRIPTOR;
  if (st != MOE_OK) die(e, "moe_pack", st);
  return buf;
}

/* The shared expert draws from the stream after the model's last routed expert (as moe_demo does). */
static void make_shared(const ep *e, kit_weights *kw) { make_plain(e, kw, 1, e->shN, 0, 1, (uint64_t)e->spec->E); }

/* x ~ N(0, 1) in bf16 and N(0, 1) logits (uniform routing on average, what the bytes model assumes);
 * the DeepSeek correction bias and the Qwen1.5 shared gate when the model has them. Same on every rank. */
static void make_tokens(ep *e) {
  kit_rng r = kit_rng_stream(e->o->seed, UINT64_MAX);
  size_t MK = (size_t)(e->M * e->K);
  e->xb = (uint16_t *)kit_malloc(MK * sizeof *e->xb);
  e->xf = (float *)kit_malloc(MK * sizeof *e->xf);
  kit_fill_bf16(&r, e->xb, (int64_t)MK, 1.0);
  moe_convert_to_f32(MOE_BF16, e->xb, e->xf, MK);
  e->logits = (float *)kit_malloc((size_t)(e->M * e->E) * sizeof *e->logits);
  kit_fill_normal(&r, e->logits, e->M * e->E, 1.0);
  if (e->spec->route == MOE_ROUTE_BIASED_GROUPED) {
    e->corr = (float *)kit_malloc((size_t)e->E * sizeof *e->corr);
    kit_fill_normal(&r, e->corr, e->E, 0.05);
  }
  if (e->spec->shared_gate) {
    e->gate = (float *)kit_malloc((size_t)e->K * sizeof *e->gate);
    kit_fill_normal(&r, e->gate, e->K, 1.0 / sqrt((double)e->K));
  }
  e->router = kit_model_router(e->spec);
  e->router.E = (int32_t)e->E, e->router.correction_bias = e->corr;
}

/* Shapes, the expert map, the local experts and the shared expert, the tokens. Returns 0 or 2. */
static int ep_init(ep *e, const options *o, int rank, int P) {
  const kit_model *sp = o->model;
  kit_weights kw;
  moe_status st;
  memset(e, 0, sizeof *e);
  e->rank = rank, e->P = P, e->o = o, e->spec = sp;
  e->M = o->M, e->K = sp->K, e->topk = sp->topk;
  e->N = o->N ? o->N : sp->N;
  e->E = o->E ? o->E : strcmp(sp->name, "deepseek-v3") == 0 ? 32 : sp->E;
  e->shN = o->shared_N >= 0 ? o->shared_N : sp->shared_N;
  if (e->E < e->topk || e->E > sp->E || e->N > sp->N || e->shN > (sp->shared_N ? sp->shared_N : 0)) {
    SAY("moe_ep: %s needs topk %d <= --experts <= %lld, --n <= %lld, --shared-n <= %lld\n", sp->name,
            e->topk, (long long)sp->E, (long long)sp->N, (long long)sp->shared_N);
    return 2;
  }
  if (P > e->E) return SAY("moe_ep: %d ranks for %lld experts: at most one rank per expert\n", P, (long long)e->E), 2;
  /* MPI counts are int: the largest message is a rank's whole f32 partial or its x records */
  if ((double)e->M * (double)e->K * 4.0 * (double)e->topk > (double)INT_MAX)
    return SAY("moe_ep: M * K too large for MPI's int counts\n"), 2;
  e->map = (int32_t *)kit_malloc((size_t)e->E * sizeof *e->map);
  if ((st = moe_expert_map_contiguous((int32_t)e->E, P, rank, e->map, &e->E_local)) != MOE_OK) die(e, "expert map", st);
  {
    int64_t g0 = (int64_t)rank * e->E_local, n = e->E - g0 < e->E_local ? e->E - g0 : e->E_local;
    make_plain(e, &kw, e->E_local, e->N, g0, n > 0 ? n : 0, 0);
    e->ex_buf = pack_plain(e, &kw, &e->ex);
    kit_weights_free(&kw);
  }
  if (e->shN) {
    make_shared(e, &kw);
    e->sh_buf = pack_plain(e, &kw, &e->sh);
    kit_weights_free(&kw);
  }
  setup_pool(e);
  make_tokens(e);
  return 0;
}

static void ep_free(ep *e) {
  teardown_pool(e);
  free(e->map), free(e->ex_buf), free(e->sh_buf), free(e->xf), free(e->xb), free(e->logits);
  free(e->corr), free(e->gate), free(e->ws);
}

/* ---- the pieces of a step --------------------------------------------------------------------- */
static void route(ep *e, int64_t m0, int64_t n, float *tw, int32_t *ids) {
  moe_status st = moe_route(&e->router, e->logits + m0 * e->E, MOE_F32, n, tw, ids);
  if (st != MOE_OK) {
    if (e->spec->n_group)
      SAY("moe_ep: %s's grouped routing needs --experts a multiple of %d, at least %d\n", e->spec->name,
              e->spec->n_group, e->topk * e->spec->n_group / e->spec->topk_group);
    die(e, "moe_route", st);
  }
}

/* out [n, K] f32 = the local experts' sum for n tokens (rows x), unrounded. */
static void local_experts(ep *e, const float *x, int64_t n, const float *tw, const int32_t *ids, float *out,
                          int with_shared) {
  moe_call c = MOE_ZERO_INIT;
  size_t wsb = 0;
  moe_status st;
  if (n == 0) return;
  c.x = x, c.out = out, c.dtype = MOE_F32, c.M = n, c.topk = e->topk, c.topk_weights = tw, c.topk_ids = ids;
  c.expert_map = e->map, c.n_global = (int32_t)e->E, c.act = e->spec->act;
  if (with_shared && e->shN) c.shared = &e->sh, c.shared_gate = e->gate;
  if ((st = moe_workspace_size(&e->ex, &c, &wsb)) != MOE_OK) die(e, "moe_workspace_size", st);
  if ((st = moe_fused_experts(&e->ex, &c, ws_get(e, wsb), wsb, e->parp)) != MOE_OK) die(e, "moe_fused_experts", st);
}

/* out [n, K] = routed [n, K] + the shared expert of tokens x (routed itself without one). */
static void add_shared(ep *e, const float *x, int64_t n, const float *routed, float *out) {
  moe_call c = MOE_ZERO_INIT;
  size_t wsb = 0;
  moe_status st;
  if (n == 0) return;
  if (!e->shN) {
    if (out != routed) memcpy(out, routed, (size_t)(n * e->K) * sizeof *out);
    return;
  }
  c.x = x, c.out = out, c.dtype = MOE_F32, c.M = n, c.act = e->spec->act, c.shared_gate = e->gate;
  if ((st = moe_shared_expert_workspace_size(&e->sh, &c, &wsb)) != MOE_OK) die(e, "shared workspace", st);
  st = moe_shared_expert(&e->sh, &c, routed, ws_get(e, wsb), wsb, e->parp);
  if (st != MOE_OK) die(e, "moe_shared_expert", st);
}

/* acc [n, K] += rows [n, K], in f32 */
static void add_rows(float *acc, const float *rows, int64_t n) {
  for (int64_t i = 0; i < n; i++) acc[i] += rows[i];
}

/* MPI call timers: t0 = mpi_begin(), then s->comm += mpi_end(t0). */
static double mpi_begin(void) { return MPI_Wtime(); }
static double mpi_end(double t0) { return MPI_Wtime() - t0; }

/* ---- mode allreduce: partials of all tokens, reduced by token block in rank order ------------- */
/* A step's buffers, allocated once for every mode: routing of my tokens (tw, ids) and of received ones
 * (tw2, ids2); allreduce: my partial [M, K], the partials of my block from every rank; alltoall: records
 * out and in, x and partials of received tokens (xr, yr), partials back (ybk); acc: my block's sum. */
typedef struct bufs {
  float *tw, *tw2, *part, *recv, *acc, *xr, *yr, *ybk;
  int32_t *ids, *ids2;
  uint8_t *sendrec, *recvrec;
  char *need;
  int *sc, *sd, *rc, *rd, *cnt, *cnt_r;
} bufs;

static void step_allreduce(ep *e, bufs *b, float *out, step *s) {
  const int P = e->P, r = e->rank;
  const int64_t K = e->K, lo = blk(e, r), rows = blk(e, r + 1) - lo;
  double t;
  route(e, 0, e->M, b->tw, b->ids);
  local_experts(e, e->xf, e->M, b->tw, b->ids, b->part, 0);
  for (int q = 0; q < P; q++) { /* block q of my partial goes to rank q; I get block r of everyone's */
    b->sc[q] = (int)((blk(e, q + 1) - blk(e, q)) * K), b->sd[q] = (int)(blk(e, q) * K);
    b->rc[q] = (int)(rows * K), b->rd[q] = (int)(q * rows * K);
    if (q != r) s->bytes += 4.0 * b->sc[q];
  }
  t = mpi_begin();
  MPI_Alltoallv(b->part, b->sc, b->sd, MPI_FLOAT, b->recv, b->rc, b->rd, MPI_FLOAT, MPI_COMM_WORLD);
  s->comm += mpi_end(t);
  memcpy(b->acc, b->recv, (size_t)(rows * K) * sizeof(float));
  for (int q = 1; q < P; q++) add_rows(b->acc, b->recv + q * rows * K, rows * K);
  add_shared(e, e->xf + lo * K, rows, b->acc, b->acc);
  for (int q = 0; q < P; q++) b->rc[q] = (int)((blk(e, q + 1) - blk(e, q)) * K), b->rd[q] = (int)(blk(e, q) * K);
  s->bytes += 4.0 * (double)(rows * K) * (P - 1);
  t = mpi_begin();
  MPI_Allgatherv(b->acc, (int)(rows * K), MPI_FLOAT, out, b->rc, b->rd, MPI_FLOAT, MPI_COMM_WORLD);
  s->comm += mpi_end(t);
}

/* ---- mode mpi-allreduce ----------------------------------------------------------------------- */
static void step_mpi_allreduce(ep *e, bufs *b, float *out, step *s) {
  double t;
  route(e, 0, e->M, b->tw, b->ids);
  local_experts(e, e->xf, e->M, b->tw, b->ids, out, e->rank == 0);
  s->bytes += 2.0 * 4.0 * (double)(e->M * e->K) * (e->P - 1) / e->P; /* what a ring allreduce sends */
  t = mpi_begin();
  MPI_Allreduce(MPI_IN_PLACE, out, (int)(e->M * e->K), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  s->comm += mpi_end(t);
}

/* ---- mode alltoall: tokens to the ranks of their experts and back ----------------------------- */
/* A dispatch record: x row (bf16), topk ids, topk weights. */
static size_t rec_bytes(const ep *e) { return (size_t)e->K * 2 + (size_t)e->topk * 8; }

/* Packs my tokens for each rank that owns one of their experts, in rank then token order. */
static void pack_dispatch(ep *e, bufs *b, int64_t lo, int64_t rows) {
  const int P = e->P;
  const size_t rb = rec_bytes(e);
  memset(b->need, 0, (size_t)(rows * P));
  memset(b->cnt, 0, (size_t)P * sizeof *b->cnt);
  for (int64_t m = 0; m < rows; m++)
    for (int32_t j = 0; j < e->topk; j++) {
      int32_t g = b->ids[m * e->topk + j];
      if (g >= 0 && !b->need[m * P + owner(e, g)]) b->need[m * P + owner(e, g)] = 1, b->cnt[owner(e, g)]++;
    }
  for (int q = 0, off = 0; q < P; q++) {
    uint8_t *p = b->sendrec + (size_t)off * rb;
    for (int64_t m = 0; m < rows; m++) {
      if (!b->need[m * P + q]) continue;
      memcpy(p, e->xb + (lo + m) * e->K, (size_t)e->K * 2);
      memcpy(p + e->K * 2, b->ids + m * e->topk, (size_t)e->topk * 4);
      memcpy(p + e->K * 2 + e->topk * 4, b->tw + m * e->topk, (size_t)e->topk * 4);
      p += rb;
    }
    off += b->cnt[q];
  }
}

/* Unpacks n received records into x (f32), ids, weights. */
static void unpack_dispatch(const ep *e, bufs *b, int64_t n) {
  const size_t rb = rec_bytes(e);
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *p = b->recvrec + (size_t)i * rb;
    moe_convert_to_f32(MOE_BF16, p, b->xr + i * e->K, (size_t)e->K);
    memcpy(b->ids2 + i * e->topk, p + e->K * 2, (size_t)e->topk * 4);
    memcpy(b->tw2 + i * e->topk, p + e->K * 2 + e->topk * 4, (size_t)e->topk * 4);
  }
}

static void step_alltoall(ep *e, bufs *b, float *out, step *s) {
  const int P = e->P, r = e->rank;
  const int64_t K = e->K, lo = blk(e, r), rows = blk(e, r + 1) - lo;
  const int rb = (int)rec_bytes(e);
  int64_t n_recv = 0, n_sent = 0;
  double t;
  route(e, lo, rows, b->tw, b->ids);
  pack_dispatch(e, b, lo, rows);
  t = mpi_begin();
  MPI_Alltoall(b->cnt, 1, MPI_INT, b->cnt_r, 1, MPI_INT, MPI_COMM_WORLD);
  s->comm += mpi_end(t);
  for (int q = 0; q < P; q++) {
    b->sc[q] = b->cnt[q] * rb, b->sd[q] = (int)n_sent * rb, n_sent += b->cnt[q];
    b->rc[q] = b->cnt_r[q] * rb, b->rd[q] = (int)n_recv * rb, n_recv += b->cnt_r[q];
    if (q != r) s->bytes += (double)b->sc[q] + 4.0 * (double)b->cnt_r[q] * (double)K;
  }
  s->bytes += (double)(P - 1) * 4; /* the counts */
  t = mpi_begin();
  MPI_Alltoallv(b->sendrec, b->sc, b->sd, MPI_BYTE, b->recvrec, b->rc, b->rd, MPI_BYTE, MPI_COMM_WORLD);
  s->comm += mpi_end(t);
  unpack_dispatch(e, b, n_recv);
  local_experts(e, b->xr, n_recv, b->tw2, b->ids2, b->yr, 0);
  for (int q = 0; q < P; q++) { /* the partial rows go back where their records came from */
    b->sc[q] = b->cnt_r[q] * (int)K, b->sd[q] = b->rd[q] / rb * (int)K;
    b->rc[q] = b->cnt[q] * (int)K, b->rd[q] = 0;
  }
  for (int q = 1; q < P; q++) b->rd[q] = b->rd[q - 1] + b->rc[q - 1];
  t = mpi_begin();
  MPI_Alltoallv(b->yr, b->sc, b->sd, MPI_FLOAT, b->ybk, b->rc, b->rd, MPI_FLOAT, MPI_COMM_WORLD);
  s->comm += mpi_end(t);
  memset(b->acc, 0, (size_t)(rows * K) * sizeof(float));
  for (int q = 0; q < P; q++) { /* rank order: each token's sum is partial_0 + partial_1 + ... */
    const float *y = b->ybk + b->rd[q];
    for (int64_t m = 0; m < rows; m++)
      if (b->need[m * P + q]) add_rows(b->acc + m * K, y, K), y += K;
  }
  add_shared(e, e->xf + lo * K, rows, b->acc, out);
}

static void bufs_alloc(const ep *e, bufs *b) {
  const size_t MK = (size_t)(e->M * e->K), Mt = (size_t)(e->M * e->topk), P = (size_t)e->P;
  const int64_t rows_max = (e->M + e->P - 1) / e->P;
  memset(b, 0, sizeof *b);
  b->tw = (float *)kit_malloc(Mt * 4), b->tw2 = (float *)kit_malloc(Mt * P * 4);
  b->ids = (int32_t *)kit_malloc(Mt * 4), b->ids2 = (int32_t *)kit_malloc(Mt * P * 4);
  b->part = (float *)kit_malloc(MK * 4);
  b->recv = (float *)kit_malloc((size_t)rows_max * (size_t)e->K * P * 4);
  b->acc = (float *)kit_malloc((size_t)rows_max * (size_t)e->K * 4);
  b->xr = (float *)kit_malloc(MK * 4), b->yr = (float *)kit_malloc(MK * 4);
  b->ybk = (float *)kit_malloc((size_t)rows_max * (size_t)e->K * P * 4);
  b->sendrec = (uint8_t *)kit_malloc((size_t)rows_max * P * rec_bytes(e));
  b->recvrec = (uint8_t *)kit_malloc((size_t)e->M * rec_bytes(e));
  b->need = (char *)kit_malloc((size_t)rows_max * P);
  b->sc = (int *)kit_malloc(P * sizeof(int)), b->sd = (int *)kit_malloc(P * sizeof(int));
  b->rc = (int *)kit_malloc(P * sizeof(int)), b->rd = (int *)kit_malloc(P * sizeof(int));
  b->cnt = (int *)kit_malloc(P * sizeof(int)), b->cnt_r = (int *)kit_malloc(P * sizeof(int));
}

static void bufs_free(bufs *b) {
  free(b->tw), free(b->tw2), free(b->ids), free(b->ids2), free(b->part), free(b->recv), free(b->acc);
  free(b->xr), free(b->yr), free(b->ybk), free(b->sendrec), free(b->recvrec), free(b->need);
  free(b->sc), free(b->sd), free(b->rc), free(b->rd), free(b->cnt), free(b->cnt_r);
}

/* One step of a mode; out: [M, K] (allreduce modes) or my token block (alltoall). */
static step run_step(ep *e, bufs *b, mode md, float *out) {
  step s = {0, 0, 0};
  double t0;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  if (md == MODE_ALLREDUCE) step_allreduce(e, b, out, &s);
  else if (md == MODE_ALLTOALL) step_alltoall(e, b, out, &s);
  else step_mpi_allreduce(e, b, out, &s);
  s.total = MPI_Wtime() - t0;
  return s;
}

/* ---- the check: one rank alone, and the float64 oracle ---------------------------------------- */
typedef struct reference {
  float *out;        /* [M, K]: the whole layer in one process                   */
  double *oracle;    /* [Mo, K]                                                  */
  int64_t Mo;
} reference;

/* Rank 0: all experts (same streams), the layer in one call, the oracle of the first tokens. */
static void reference_make(ep *e, reference *ref) {
  kit_weights all, shw;
  moe_experts ex, sh;
  void *buf, *sbuf = NULL;
  float *tw = (float *)kit_malloc((size_t)(e->M * e->topk) * 4);
  int32_t *ids = (int32_t *)kit_malloc((size_t)(e->M * e->topk) * 4);
  moe_call c = MOE_ZERO_INIT;
  oracle_moe o;
  size_t wsb = 0;
  moe_status st;
  make_plain(e, &all, e->E, e->N, 0, e->E, 0);
  buf = pack_plain(e, &all, &ex);
  if (e->shN) make_shared(e, &shw), sbuf = pack_plain(e, &shw, &sh);
  route(e, 0, e->M, tw, ids);
  ref->out = (float *)kit_malloc((size_t)(e->M * e->K) * 4);
  c.x = e->xf, c.out = ref->out, c.dtype = MOE_F32, c.M = e->M, c.topk = e->topk, c.topk_weights = tw;
  c.topk_ids = ids, c.act = e->spec->act, c.shared = e->shN ? &sh : NULL, c.shared_gate = e->gate;
  if ((st = moe_workspace_size(&ex, &c, &wsb)) != MOE_OK) die(e, "reference workspace", st);
  if ((st = moe_fused_experts(&ex, &c, ws_get(e, wsb), wsb, e->parp)) != MOE_OK) die(e, "reference layer", st);
  ref->Mo = e->M < ORACLE_TOKENS ? e->M : ORACLE_TOKENS;
  ref->oracle = (double *)kit_malloc((size_t)(ref->Mo * e->K) * sizeof(double));
  memset(&o, 0, sizeof o);
  o.w = &all.w, o.shared = e->shN ? &shw.w : NULL, o.shared_gate = e->gate, o.dtype = MOE_F32, o.x = e->xf;
  o.M = ref->Mo, o.topk = e->topk, o.topk_weights = tw, o.topk_ids = ids, o.act = e->spec->act;
  oracle_run(&o, ref->oracle);
  kit_weights_free(&all);
  if (e->shN) kit_weights_free(&shw);
  free(buf), free(sbuf), free(tw), free(ids);
}

typedef struct diff {
  double max_abs, max_rel, max_ref, oracle_err; /* max_rel: max |a - b| / |b| over |b| >= max|b| / 1000 */
  int nan;
} diff;

static diff compare(const ep *e, const reference *ref, const float *out) {
  diff d = {0, 0, 0, 0, 0};
  double num = 0, den = 0;
  const int64_t n = e->M * e->K;
  for (int64_t i = 0; i < n; i++) d.max_ref = fmax(d.max_ref, fabs((double)ref->out[i]));
  for (int64_t i = 0; i < n; i++) {
    double a = out[i], b = ref->out[i], ad = fabs(a - b);
    if (!isfinite(a)) d.nan = 1;
    d.max_abs = fmax(d.max_abs, ad);
    if (fabs(b) >= 1e-3 * d.max_ref) d.max_rel = fmax(d.max_rel, ad / fabs(b));
  }
  for (int64_t i = 0; i < ref->Mo * e->K; i++) {
    double v = out[i] - ref->oracle[i];
    num += v * v, den += ref->oracle[i] * ref->oracle[i];
  }
  d.oracle_err = den > 0 ? sqrt(num / den) : sqrt(num);
  if (d.nan) d.oracle_err = NAN;
  return d;
}

/* ---- output ----------------------------------------------------------------------------------- */
/* "model name" of /proc/cpuinfo and its "cpu family", or "unknown". */
static void cpu_name(char *name, size_t n, int *family) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  snprintf(name, n, "unknown");
  *family = -1;
  while (f && fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (!colon) continue;
    if (strncmp(line, "model name", 10) == 0 && strcmp(name, "unknown") == 0) {
      snprintf(name, n, "%s", colon + 2);
      name[strcspn(name, "\n")] = '\0';
    }
    if (strncmp(line, "cpu family", 10) == 0 && *family < 0) *family = atoi(colon + 1);
  }
  if (f) fclose(f);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Rank 0's summary of a mode: runs x ranks of {total, comm, bytes}. */
typedef struct summary {
  double ms_med, ms_min, ms_max, comm_ms, comm_frac, bytes_rank, bytes_token;
} summary;

static summary summarize(const ep *e, const double *all, int runs) {
  summary s;
  const size_t n = (size_t)runs * sizeof(double);
  double *tot = (double *)kit_malloc(n), *cm = (double *)kit_malloc(n), *fr = (double *)kit_malloc(n), bytes = 0;
  for (int i = 0; i < runs; i++) {
    double mx = 0, csum = 0, tsum = 0;
    for (int r = 0; r < e->P; r++) {
      const double *v = all + ((size_t)i * (size_t)e->P + (size_t)r) * 3;
      mx = fmax(mx, v[0]), csum += v[1], tsum += v[0];
      if (i == 0) bytes += v[2];
    }
    tot[i] = mx * 1e3, cm[i] = csum / e->P * 1e3, fr[i] = tsum > 0 ? csum / tsum : 0;
  }
  s.ms_med = median(tot, runs), s.ms_min = tot[0], s.ms_max = tot[runs - 1];
  s.comm_ms = median(cm, runs), s.comm_frac = median(fr, runs);
  s.bytes_rank = bytes / e->P, s.bytes_token = bytes / (double)e->M;
  free(tot), free(cm), free(fr);
  return s;
}

static void print_json(const ep *e, mode md, const summary *s, const diff *d, int repro) {
  char cpu[256], btl[128];
  int fam;
  const char *env_btl = getenv("OMPI_MCA_btl"), *env_pml = getenv("OMPI_MCA_pml");
  cpu_name(cpu, sizeof cpu, &fam);
  snprintf(btl, sizeof btl, "%s", env_btl ? env_btl : "default");
  printf("{\"bench\":\"ep\",\"model\":\"%s\",\"precision\":\"%s\",\"dtype\":\"f32\",\"isa\":\"%s\",\"mode\":\"%s\","
         "\"M\":%lld,\"E\":%lld,\"E_model\":%lld,\"E_local\":%d,\"topk\":%d,\"N\":%lld,\"K\":%lld,\"shared_N\":%lld,"
         "\"ranks\":%d,\"threads\":%lld,\"pool\":\"%s\",\"ms_median\":%.6g,\"ms_min\":%.6g,\"ms_max\":%.6g,"
         "\"runs\":%lld,"
         "\"ms_comm_median\":%.6g,\"comm_frac\":%.4g,\"bytes_sent_per_rank\":%.6g,\"bytes_sent_per_token\":%.6g,"
         "\"mpi_btl\":\"%s\",\"mpi_pml\":\"%s\",\"cpu\":\"%s\",\"cpu_family\":%d",
         e->spec->name, moe_precision_name(e->o->prec), moe_isa_name(moe_get_isa()), MODE_NAMES[md], (long long)e->M,
         (long long)e->E, (long long)e->spec->E, e->E_local, e->topk, (long long)e->N, (long long)e->K,
         (long long)e->shN, e->P, (long long)e->o->threads, POOL_NAMES[e->o->pool], s->ms_med, s->ms_min, s->ms_max,
         (long long)e->o->runs, s->comm_ms, s->comm_frac, s->bytes_rank, s->bytes_token, btl,
         env_pml ? env_pml : "default", cpu, fam);
  if (d)
    printf(",\"max_abs_diff_vs_1rank\":%.6g,\"max_rel_diff_vs_1rank\":%.6g,\"oracle_rel_err\":%.6g,\"reproducible\":%s",
           d->max_abs, d->max_rel, d->oracle_err, repro ? "true" : "false");
  printf("}\n");
  fflush(stdout);
}

/* ---- one mode: warm-up, timed runs, checks ---------------------------------------------------- */
/* Gathers alltoall's token blocks into full [M, K] on rank 0. */
static void gather_blocks(const ep *e, const float *mine, float *full) {
  int *rc = (int *)kit_malloc((size_t)e->P * sizeof(int)), *rd = (int *)kit_malloc((size_t)e->P * sizeof(int));
  for (int q = 0; q < e->P; q++) rc[q] = (int)((blk(e, q + 1) - blk(e, q)) * e->K), rd[q] = (int)(blk(e, q) * e->K);
  MPI_Gatherv(mine, rc[e->rank], MPI_FLOAT, full, rc, rd, MPI_FLOAT, 0, MPI_COMM_WORLD);
  free(rc), free(rd);
}

/* f32 rounding of re-associated sums: a token's output is the same terms summed in another order, so
 * it may differ by a few ulp of the largest partial; the bound is 16 (P + 2) 2^-24 max |out|. */
static double diff_tol(const ep *e, double max_ref) { return 16.0 * (e->P + 2) * ldexp(max_ref, -24); }

/* prev_all (rank 0, --check): the previous deterministic mode's output, *have_prev once it holds one. */
static int run_mode(ep *e, bufs *b, mode md, const reference *ref, float *prev_all, int *have_prev) {
  const int runs = (int)e->o->runs;
  const int64_t MK = e->M * e->K, n_out = md == MODE_ALLTOALL ? (blk(e, e->rank + 1) - blk(e, e->rank)) * e->K : MK;
  float *out = (float *)kit_malloc((size_t)n_out * 4), *first = (float *)kit_malloc((size_t)n_out * 4);
  double *mine = (double *)kit_malloc((size_t)runs * 3 * sizeof(double)), *all = NULL;
  int same = 1, same_all = 1, bad = 0;
  step s;
  if (e->rank == 0) all = (double *)kit_malloc((size_t)runs * (size_t)e->P * 3 * sizeof(double));
  for (int64_t i = 0; i < n_out; i++) out[i] = NAN;
  run_step(e, b, md, out); /* warm-up; its output is the one the runs must reproduce */
  memcpy(first, out, (size_t)n_out * 4);
  for (int i = 0; i < runs; i++) {
    for (int64_t k = 0; k < n_out; k++) out[k] = NAN;
    s = run_step(e, b, md, out);
    mine[3 * i] = s.total, mine[3 * i + 1] = s.comm, mine[3 * i + 2] = s.bytes;
    same &= memcmp(out, first, (size_t)n_out * 4) == 0;
  }
  MPI_Gather(mine, 3 * runs, MPI_DOUBLE, all, 3 * runs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Allreduce(&same, &same_all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (e->o->check) {
    float *full = e->rank == 0 ? (float *)kit_malloc((size_t)MK * 4) : NULL;
    if (md == MODE_ALLTOALL) gather_blocks(e, out, full);
    else if (e->rank == 0) memcpy(full, out, (size_t)MK * 4);
    if (e->rank == 0) {
      diff d = compare(e, ref, full);
      summary sm = summarize(e, all, runs);
      double tol = diff_tol(e, d.max_ref);
      int vs_other = *have_prev && md != MODE_MPI_ALLREDUCE ? memcmp(prev_all, full, (size_t)MK * 4) == 0 : -1;
      bad = d.nan || !(d.max_abs <= tol) || !(d.oracle_err <= 5e-4) || (!same_all && md != MODE_MPI_ALLREDUCE);
      print_json(e, md, &sm, &d, same_all);
      fprintf(stderr,
              "moe_ep %-13s P %d: %.3f ms, comm %.0f%%; vs 1 rank max abs %.3g (tol %.3g) max rel %.3g; oracle "
              "rel_err %.3g (tol 5e-4); %d runs %s%s%s\n",
              MODE_NAMES[md], e->P, sm.ms_med, 100 * sm.comm_frac, d.max_abs, tol, d.max_rel, d.oracle_err, runs + 1,
              same_all ? "bitwise equal" : "DIFFER",
              vs_other < 0 ? "" : vs_other ? "; bitwise equal to the other mode" : "; differs from the other mode",
              bad ? "  FAIL" : "");
      if (md != MODE_MPI_ALLREDUCE) memcpy(prev_all, full, (size_t)MK * 4), *have_prev = 1;
    }
    free(full);
  } else if (e->rank == 0) {
    summary sm = summarize(e, all, runs);
    print_json(e, md, &sm, NULL, same_all);
    fprintf(stderr, "moe_ep %-13s P %d x %lld threads: %.3f ms/layer, comm %.0f%%, %.3g MB sent per rank\n",
            MODE_NAMES[md], e->P, (long long)e->o->threads, sm.ms_med, 100 * sm.comm_frac, sm.bytes_rank * 1e-6);
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(out), free(first), free(mine), free(all);
  return bad;
}

int main(int argc, char **argv) {
  options o;
  ep e;
  bufs b;
  reference ref;
  float *prev = NULL;
  int rank, P, rc = 0, st, have_prev = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  say_rank = rank;
  if ((st = parse_options(argc, argv, &o)) != 0 || (st = ep_init(&e, &o, rank, P)) != 0) {
    MPI_Finalize();
    return st;
  }
  memset(&ref, 0, sizeof ref);
  if (o.check && rank == 0) {
    reference_make(&e, &ref);
    prev = (float *)kit_malloc((size_t)(e.M * e.K) * 4);
  }
  if (rank == 0)
    fprintf(stderr,
            "moe_ep: %s %s, E %lld (%d per rank), N %lld, K %lld, topk %d, shared N %lld, M %lld, %d ranks x %lld "
            "threads (%s)\n",
            e.spec->name, moe_precision_name(o.prec), (long long)e.E, e.E_local, (long long)e.N, (long long)e.K, e.topk,
            (long long)e.shN, (long long)e.M, P, (long long)o.threads, POOL_NAMES[o.pool]);
  bufs_alloc(&e, &b);
  for (int m = 0; m < MODE_COUNT; m++)
    if (o.modes[m]) rc |= run_mode(&e, &b, (mode)m, &ref, prev, &have_prev);
  bufs_free(&b);
  free(ref.out), free(ref.oracle), free(prev);
  ep_free(&e);
  MPI_Finalize();
  return rc;
}

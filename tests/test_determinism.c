/* Determinism: the output is bitwise identical for any thread count, any order in which a pool runs
 * the tasks, OpenMP's default, and any chunking (DESIGN.md rule 6). Every precision, M = 37 at a
 * Qwen-like small shape (E 32, topk 8, N 64, K 128, a gated shared expert of N 80, biases), every ISA tier
 * the machine has; the reference run (serial, one chunk) is also checked against the float64 oracle. */
#define MOE_IMPLEMENTATION
#include "../moe.h"
#include "test_util.h"
#include "oracle.h"

#include <pthread.h>

#define M_ 37
#define E_ 32
#define TOPK 8
#define N_ 64
#define K_ 128
#define NSH 80

/* ---- a pthread pool whose parallel_for runs the tasks in varying orders ------------------------------
 * n_threads persistent workers; worker t runs ORDER_STRIDED t, t + N, t + 2N, ...; ORDER_REVERSED
 * n-1-t, n-1-t-N, ...; ORDER_DYNAMIC whatever index is next when it is free. */
typedef enum { ORDER_STRIDED, ORDER_REVERSED, ORDER_DYNAMIC } order_kind;
typedef struct pool {
  int n_threads;
  order_kind order;
  pthread_t th[16];
  pthread_mutex_t mu;
  pthread_cond_t start, done;
  uint64_t gen;
  int pending, quit;
  void (*fn)(void *, int64_t);
  void *arg;
  int64_t n, next;
} pool;
typedef struct worker_arg {
  pool *p;
  int t;
} worker_arg;
static worker_arg worker_args[16];

static void *worker(void *a) {
  pool *p = ((worker_arg *)a)->p;
  int t = ((worker_arg *)a)->t, nt = p->n_threads;
  uint64_t seen = 0;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (p->gen == seen && !p->quit) pthread_cond_wait(&p->start, &p->mu);
    if (p->quit) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    seen = p->gen;
    pthread_mutex_unlock(&p->mu);
    switch (p->order) {
    case ORDER_STRIDED:
      for (int64_t i = t; i < p->n; i += nt) p->fn(p->arg, i);
      break;
    case ORDER_REVERSED:
      for (int64_t i = p->n - 1 - t; i >= 0; i -= nt) p->fn(p->arg, i);
      break;
    case ORDER_DYNAMIC:
      for (;;) {
        int64_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (i >= p->n) break;
        p->fn(p->arg, i);
      }
      break;
    }
    pthread_mutex_lock(&p->mu);
    if (--p->pending == 0) pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
  }
}

static void pool_parallel_for(void *pp, void (*fn)(void *arg, int64_t i), void *arg, int64_t n) {
  pool *p = (pool *)pp;
  pthread_mutex_lock(&p->mu);
  p->fn = fn, p->arg = arg, p->n = n, p->next = 0, p->pending = p->n_threads;
  p->gen++;
  pthread_cond_broadcast(&p->start);
  while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

static void pool_start(pool *p, int n_threads, order_kind order) {
  memset(p, 0, sizeof *p);
  p->n_threads = n_threads, p->order = order;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->start, NULL);
  pthread_cond_init(&p->done, NULL);
  for (int t = 0; t < n_threads; t++) {
    worker_args[t].p = p, worker_args[t].t = t;
    if (pthread_create(&p->th[t], NULL, worker, &worker_args[t]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      exit(2);
    }
  }
}

static void pool_stop(pool *p) {
  pthread_mutex_lock(&p->mu);
  p->quit = 1;
  pthread_cond_broadcast(&p->start);
  pthread_mutex_unlock(&p->mu);
  for (int t = 0; t < p->n_threads; t++) pthread_join(p->th[t], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->start);
  pthread_cond_destroy(&p->done);
}

/* ---- one precision ----------------------------------------------------------------------------------- */
static const char *order_name[] = {"strided", "reversed", "dynamic"};
static const char *pname(moe_precision p) {
  const char *s = moe_precision_name(p);
  return s ? s : "?";
}

static void run(const moe_experts *ex, const moe_call *base, int64_t chunk, pool *pl, void *out, size_t bytes,
                const char *what) {
  moe_call c = *base;
  moe_parallel par;
  size_t wsb = 0;
  void *ws;
  moe_status st;
  c.out = out;
  c.chunk_tokens = chunk;
  test_poison(out, bytes);
  st = moe_workspace_size(ex, &c, &wsb);
  CHECK(st == MOE_OK, "%s: moe_workspace_size: %s", what, moe_status_str(st));
  ws = test_malloc(wsb);
  test_poison(ws, wsb);
  memset(&par, 0, sizeof par);
  if (pl) {
    par.parallel_for = pool_parallel_for;
    par.pool = pl;
    par.n_threads = pl->n_threads;
  }
  st = moe_fused_experts(ex, &c, ws, wsb, pl ? &par : NULL);
  CHECK(st == MOE_OK, "%s: moe_fused_experts: %s", what, moe_status_str(st));
  free(ws);
}

/* omp 0: the pthread pools; omp 1: OpenMP's default (par NULL). The OpenMP runs come last in the
 * program: idle OpenMP workers spin for a while and would slow the pthread runs on a small machine. */
static void test_precision(moe_precision p, moe_dtype t, uint64_t seed, int omp) {
  orc_plain pl, sp;
  orc_spec s;
  moe_experts ex, sex;
  void *buf, *sbuf, *x, *ref_out, *out;
  float tw[M_ * TOPK], gate[K_];
  int32_t ids[M_ * TOPK];
  double *ref = (double *)test_malloc(sizeof(double) * M_ * K_), err;
  size_t es = orc_dtype_size(t), bytes = es * M_ * K_, n;
  test_rng r = {seed};
  moe_call c;
  oracle_moe o;
  int runs = 0, same = 0;
  static const int threads[] = {1, 2, 3, 7};
  static const int64_t chunks[] = {1, 5, 64, 0};

  memset(&s, 0, sizeof s);
  s.prec = p, s.E = E_, s.N = N_, s.K = K_, s.bias = 1, s.seed = seed;
  orc_plain_make(&pl, &s);
  s.E = 1, s.N = NSH, s.seed = seed + 1;
  orc_plain_make(&sp, &s);
  n = moe_pack_size(&pl.w);
  buf = test_malloc(n ? n : 1);
  CHECK(moe_pack(&pl.w, &ex, buf, n) == MOE_OK, "pack");
  n = moe_pack_size(&sp.w);
  sbuf = test_malloc(n ? n : 1);
  CHECK(moe_pack(&sp.w, &sex, sbuf, n) == MOE_OK, "pack shared");
  x = orc_make_x(t, M_, K_, K_, &r);
  orc_make_routing(M_, TOPK, E_, &r, tw, ids);
  for (int i = 0; i < K_; i++) gate[i] = (float)(test_normal(&r) * 0.1);
  ids[3 * TOPK + 2] = -1; /* a skipped slot */

  memset(&c, 0, sizeof c);
  c.x = x, c.dtype = t, c.M = M_, c.topk = TOPK, c.topk_weights = tw, c.topk_ids = ids;
  c.act = (moe_activation)(seed % 3);
  c.routed_scaling_factor = 2.5f;
  c.shared = &sex, c.shared_gate = gate;

  /* the reference: one thread, one chunk */
  {
    pool one;
    pool_start(&one, 1, ORDER_STRIDED);
    ref_out = test_malloc(bytes);
    run(&ex, &c, 0, &one, ref_out, bytes, "reference");
    pool_stop(&one);
    memset(&o, 0, sizeof o);
    o.w = &pl.w, o.shared = &sp.w, o.shared_gate = gate, o.dtype = t, o.x = x, o.M = M_, o.topk = TOPK;
    o.topk_weights = tw, o.topk_ids = ids, o.act = c.act, o.rsf = 2.5f;
    oracle_run(&o, ref);
    err = orc_rel_err(t, ref_out, K_, ref, M_, K_, NULL);
    CHECK(err <= 1e-2, "%s: reference run vs oracle rel_err %.3e", pname(p), err);
  }
  out = test_malloc(bytes);
  for (int ti = 0; ti < 4 && !omp; ti++)
    for (int oi = 0; oi < 3; oi++) {
      pool pp;
      char what[96];
      if (threads[ti] == 1 && oi == ORDER_DYNAMIC) continue;
      pool_start(&pp, threads[ti], (order_kind)oi);
      snprintf(what, sizeof what, "%s %d threads %s", pname(p), threads[ti], order_name[oi]);
      run(&ex, &c, 0, &pp, out, bytes, what);
      pool_stop(&pp);
      runs++, same += memcmp(out, ref_out, bytes) == 0;
      CHECK(memcmp(out, ref_out, bytes) == 0, "%s: output differs from the 1-thread run", what);
    }
  if (omp) {
    run(&ex, &c, 0, NULL, out, bytes, "OpenMP default");
    runs++, same += memcmp(out, ref_out, bytes) == 0;
    CHECK(memcmp(out, ref_out, bytes) == 0, "%s: OpenMP default (par NULL) differs from the 1-thread run",
          pname(p));
  }
  for (int ci = 0; ci < 4; ci++)
    for (int v = 0; v < 3; v++) { /* every chunking, with 3 threads reversed, 7 dynamic, OpenMP */
      pool pp;
      char what[96];
      if ((v == 2) != (omp != 0)) continue;
      if (v < 2) pool_start(&pp, v == 0 ? 3 : 7, v == 0 ? ORDER_REVERSED : ORDER_DYNAMIC);
      snprintf(what, sizeof what, "%s chunk_tokens %lld, %s", pname(p), (long long)chunks[ci],
               v == 0 ? "3 threads reversed" : v == 1 ? "7 threads dynamic" : "OpenMP");
      run(&ex, &c, chunks[ci], v == 2 ? NULL : &pp, out, bytes, what);
      if (v < 2) pool_stop(&pp);
      runs++, same += memcmp(out, ref_out, bytes) == 0;
      CHECK(memcmp(out, ref_out, bytes) == 0, "%s: output differs from the 1-thread, 1-chunk run", what);
    }
  printf("%-10s %-4s %-7s %s: %d/%d runs bitwise equal; reference vs oracle rel_err %.3e\n", pname(p),
         t == MOE_F32 ? "f32" : t == MOE_F16 ? "fp16" : "bf16", moe_isa_name(moe_get_isa()), omp ? "OpenMP" : "pthreads",
         same, runs, err);
  orc_plain_free(&pl);
  orc_plain_free(&sp);
  free(buf);
  free(sbuf);
  free(x);
  free(ref_out);
  free(out);
  free(ref);
}

int main(void) {
  static const moe_precision precs[] = {MOE_PREC_BF16,      MOE_PREC_FP16,       MOE_PREC_INT8, MOE_PREC_FP8,
                                        MOE_PREC_INT4_W4A8, MOE_PREC_INT4_W4A16, MOE_PREC_MXFP4};
  for (int omp = 0; omp < 2; omp++)
    for (int isa = 0; isa < MOE_ISA_COUNT; isa++) {
      if (moe_set_isa((moe_isa)isa) != (moe_isa)isa) continue;
      for (int pi = 0; pi < 7; pi++) {
        if (!moe_precision_compiled(precs[pi])) continue;
        test_precision(precs[pi], (moe_dtype)(pi % 3), 100 + (uint64_t)pi, omp);
      }
    }
  moe_set_isa((moe_isa)(MOE_ISA_COUNT - 1));
  return test_finish("test_determinism");
}

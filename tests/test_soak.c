/* Concurrent soak: more threads than cores call moe_fused_experts at the same time on one set of
 * packed experts per precision (shared, read-only), each thread with its own workspace, output and
 * parallelism (a serial loop on itself, or its own 2-thread pool), on random cases (M 1..70, random
 * routes, skipped slots, a shared expert in some). Every output must be bitwise the output of the same
 * call made alone before the threads start. Under ThreadSanitizer (the sanitized suite) it also shows
 * that the calls share nothing but the experts.
 *
 *   test_soak [--seconds S] [--threads T]     default 2 s and 6 threads; the long run: --seconds 600 */
#define _POSIX_C_SOURCE 200809L
#define ORC_WANT_POOL /* oracle.h: the pthread pool */
#include "../moe.h"
#include "test_util.h"
#include "oracle.h"

#include <pthread.h>
#include <time.h>

#define E_ 16
#define TOPK 4
#define N_ 64
#define K_ 96
#define NSH 48
#define CASES 4 /* per precision */
#define MAX_M 70

static const moe_precision precs[] = {MOE_PREC_BF16,      MOE_PREC_FP16,       MOE_PREC_INT8, MOE_PREC_FP8,
                                      MOE_PREC_INT4_W4A8, MOE_PREC_INT4_W4A16, MOE_PREC_MXFP4};
enum { NPREC = sizeof precs / sizeof precs[0] };

/* One call and its output made alone. */
typedef struct soak_case {
  moe_call call; /* out: NULL (each thread sets its own) */
  const moe_experts *ex;
  void *x, *ref;
  float tw[MAX_M * TOPK], gate[K_];
  int32_t ids[MAX_M * TOPK];
  size_t out_bytes, ws_bytes;
} soak_case;

typedef struct soak_prec {
  orc_plain plain, shared_plain;
  moe_experts ex, shared;
  void *buf, *shared_buf;
  soak_case cases[CASES];
} soak_prec;

static soak_prec P[NPREC];
static int n_prec;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The calling thread runs every task: a moe_parallel without threads of its own. */
static void serial_for(void *pool, void (*fn)(void *arg, int64_t i), void *arg, int64_t n) {
  (void)pool;
  for (int64_t i = 0; i < n; i++) fn(arg, i);
}

/* Runs case k into out with workspace ws: 0 when the status is MOE_OK. */
static moe_status run_case(const soak_case *k, void *out, void *ws, size_t ws_bytes, const moe_parallel *par) {
  moe_call c = k->call;
  c.out = out;
  return moe_fused_experts(k->ex, &c, ws, ws_bytes, par);
}

static void make_case(soak_prec *sp, soak_case *k, moe_dtype t, uint64_t seed) {
  kit_rng r = {seed};
  const int32_t M = 1 + (int32_t)kit_randint(&r, MAX_M);
  const moe_parallel serial = {serial_for, NULL, 1};
  moe_call *c = &k->call;
  void *ws;
  memset(c, 0, sizeof *c);
  k->ex = &sp->ex;
  k->x = orc_make_x(t, M, K_, K_, &r);
  kit_route_random(&r, M, TOPK, E_, k->tw, k->ids);
  if (M > 2) k->ids[TOPK + 1] = -1; /* a skipped slot */
  for (int i = 0; i < K_; i++) k->gate[i] = (float)(kit_normal(&r) * 0.1);
  c->x = k->x, c->dtype = t, c->M = M, c->topk = TOPK, c->topk_weights = k->tw, c->topk_ids = k->ids;
  c->act = (moe_activation)(seed % 3);
  c->routed_scaling_factor = 1.5f;
  if (seed & 1) c->shared = &sp->shared, c->shared_gate = k->gate;
  c->chunk_tokens = seed % 4 == 2 ? 16 : 0;
  k->out_bytes = orc_dtype_size(t) * (size_t)M * K_;
  CHECK(moe_workspace_size(k->ex, c, &k->ws_bytes) == MOE_OK, "workspace size");
  k->ref = test_malloc(k->out_bytes);
  ws = test_malloc(k->ws_bytes);
  test_poison(k->ref, k->out_bytes);
  CHECK(run_case(k, k->ref, ws, k->ws_bytes, &serial) == MOE_OK, "reference call");
  free(ws);
}

static void make_prec(soak_prec *sp, moe_precision p, uint64_t seed) {
  orc_spec s;
  size_t n;
  memset(&s, 0, sizeof s);
  s.prec = p, s.E = E_, s.N = N_, s.K = K_, s.bias = 1, s.seed = seed;
  orc_plain_make(&sp->plain, &s);
  s.E = 1, s.N = NSH, s.seed = seed + 1;
  orc_plain_make(&sp->shared_plain, &s);
  n = moe_pack_size(&sp->plain.w);
  sp->buf = test_malloc(n ? n : 1);
  CHECK(moe_pack(&sp->plain.w, &sp->ex, sp->buf, n) == MOE_OK, "pack");
  n = moe_pack_size(&sp->shared_plain.w);
  sp->shared_buf = test_malloc(n ? n : 1);
  CHECK(moe_pack(&sp->shared_plain.w, &sp->shared, sp->shared_buf, n) == MOE_OK, "pack shared");
  for (int i = 0; i < CASES; i++) make_case(sp, &sp->cases[i], (moe_dtype)((seed + (uint64_t)i) % 3), seed * 16 + (uint64_t)i);
}

/* ---- the soak threads -------------------------------------------------------------------------------- */
typedef struct soak_thread {
  pthread_t th;
  int id;
  double until;
  long calls, mismatches, errors;
} soak_thread;

static void *soak_main(void *arg) {
  soak_thread *st = (soak_thread *)arg;
  kit_rng r = {0x50A4u + (uint64_t)st->id};
  const size_t out_max = 4 * (size_t)MAX_M * K_;
  size_t ws_max = 0;
  void *out = test_malloc(out_max), *ws;
  orc_pool pool;
  moe_parallel serial = {serial_for, NULL, 1}, pooled;
  for (int p = 0; p < n_prec; p++)
    for (int i = 0; i < CASES; i++) ws_max = P[p].cases[i].ws_bytes > ws_max ? P[p].cases[i].ws_bytes : ws_max;
  ws = test_malloc(ws_max);
  orc_pool_start(&pool, 2, st->id % 2 ? ORC_ORDER_DYNAMIC : ORC_ORDER_REVERSED);
  pooled = orc_pool_parallel(&pool);
  while (now_s() < st->until) {
    const soak_case *k = &P[kit_randint(&r, n_prec)].cases[kit_randint(&r, CASES)];
    test_poison(out, k->out_bytes);
    if (run_case(k, out, ws, k->ws_bytes, kit_randint(&r, 2) ? &pooled : &serial) != MOE_OK) st->errors++;
    else if (memcmp(out, k->ref, k->out_bytes) != 0) st->mismatches++;
    st->calls++;
  }
  orc_pool_stop(&pool);
  free(out), free(ws);
  return NULL;
}

int main(int argc, char **argv) {
  double seconds = 2.0;
  int threads = 6;
  long calls = 0, mismatches = 0, errors = 0;
  soak_thread *T;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
  }
  if (threads < 1 || threads > 64 || !(seconds > 0)) {
    fprintf(stderr, "usage: test_soak [--seconds S] [--threads 1..64]\n");
    return 2;
  }
  for (int p = 0; p < NPREC; p++)
    if (moe_precision_compiled(precs[p])) make_prec(&P[n_prec++], precs[p], 300 + (uint64_t)p);
  T = (soak_thread *)test_malloc((size_t)threads * sizeof *T);
  for (int t = 0; t < threads; t++) {
    memset(&T[t], 0, sizeof T[t]);
    T[t].id = t, T[t].until = now_s() + seconds;
    if (pthread_create(&T[t].th, NULL, soak_main, &T[t]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 2;
    }
  }
  for (int t = 0; t < threads; t++) {
    pthread_join(T[t].th, NULL);
    calls += T[t].calls, mismatches += T[t].mismatches, errors += T[t].errors;
  }
  CHECK(errors == 0, "%ld calls returned an error", errors);
  CHECK(mismatches == 0, "%ld of %ld outputs differ from the same call made alone", mismatches, calls);
  CHECK(calls >= threads, "only %ld calls in %.1f s", calls, seconds);
  printf("soak: %d threads (each also with a 2-thread pool of its own), %d precisions x %d cases, %s tier, %.1f s: "
         "%ld calls, %ld mismatches, %ld errors\n",
         threads, n_prec, CASES, moe_isa_name(moe_get_isa()), seconds, calls, mismatches, errors);
  for (int p = 0; p < n_prec; p++) {
    for (int i = 0; i < CASES; i++) free(P[p].cases[i].x), free(P[p].cases[i].ref);
    orc_plain_free(&P[p].plain), orc_plain_free(&P[p].shared_plain);
    free(P[p].buf), free(P[p].shared_buf);
  }
  free(T);
  return test_finish("test_soak");
}

/* pthreadpool: the layer's output is bitwise the same run serially (a moe_parallel that loops), on
 * OpenMP (par NULL, when compiled with it), and on pthreadpool pools of 1, 2, 3 and 4 threads (and a NULL
 * pool) through moe_pthreadpool.h; the serial run also matches the float64 oracle. bf16, int8, fp8,
 * int4-w4a16 and mxfp4 at M = 1, 7 and 131 (E 16, topk 4, N 96, K 256, biases, a gated shared expert of
 * N 80), through moe_fused_experts (random routing, a skipped slot) and moe_forward (softmax routing of
 * random logits). Tolerances: tests/test_layer.c's table (1e-2 with bf16 output, 5e-4 with f32). */
#include "../moe_pthreadpool.h" /* the library: libmoe (tests/meson.build) */
#include "test_util.h"
#include "oracle.h"

#define E_ 16
#define TOPK 4
#define N_ 96
#define K_ 256
#define NSH 80

/* Runs the tasks one after the other on the calling thread, in index order. */
static void serial_for(void *pool, void (*fn)(void *arg, int64_t i), void *arg, int64_t n) {
  (void)pool;
  for (int64_t i = 0; i < n; i++) fn(arg, i);
}

/* One layer: packed experts, inputs, routing, and the serial reference output. */
typedef struct layer {
  moe_precision p;
  moe_dtype t;
  int64_t M;
  orc_plain pl, sp;
  moe_experts ex, sh;
  void *buf, *sbuf, *x;
  float *tw, *logits, gate[K_];
  int32_t *ids;
  moe_router router;
  size_t bytes;
} layer;

static const char *pname(moe_precision p) {
  const char *s = moe_precision_name(p);
  return s ? s : "?";
}

static void *pack(const moe_weights *w, moe_experts *ex) {
  size_t n = moe_pack_size(w);
  void *buf = test_malloc(n ? n : 1);
  moe_status st = moe_pack(w, ex, buf, n);
  CHECK(st == MOE_OK, "moe_pack %s: %s", pname(w->precision), moe_status_str(st));
  return buf;
}

static void layer_make(layer *L, moe_precision p, moe_dtype t, int64_t M, uint64_t seed) {
  orc_spec s;
  kit_rng r = kit_rng_stream(seed, 0);
  memset(L, 0, sizeof *L);
  L->p = p, L->t = t, L->M = M;
  memset(&s, 0, sizeof s);
  s.prec = p, s.E = E_, s.N = N_, s.K = K_, s.bias = 1, s.seed = seed;
  orc_plain_make(&L->pl, &s);
  s.E = 1, s.N = NSH, s.bias = 0, s.seed = seed + 1000;
  orc_plain_make(&L->sp, &s);
  L->buf = pack(&L->pl.w, &L->ex);
  L->sbuf = pack(&L->sp.w, &L->sh);
  L->x = orc_make_x(t, M, K_, K_, &r);
  L->tw = (float *)test_malloc(sizeof(float) * (size_t)(M * TOPK));
  L->ids = (int32_t *)test_malloc(sizeof(int32_t) * (size_t)(M * TOPK));
  kit_route_random(&r, M, TOPK, E_, L->tw, L->ids);
  if (M > 3) L->ids[3 * TOPK + 1] = -1; /* a skipped slot */
  L->logits = (float *)test_malloc(sizeof(float) * (size_t)(M * E_));
  kit_fill_normal(&r, L->logits, M * E_, 1.0);
  kit_fill_normal(&r, L->gate, K_, 0.1);
  L->router.E = E_, L->router.topk = TOPK, L->router.kind = MOE_ROUTE_SOFTMAX, L->router.renormalize = 1;
  L->bytes = orc_dtype_size(t) * (size_t)(M * K_);
}

static void layer_free(layer *L) {
  orc_plain_free(&L->pl), orc_plain_free(&L->sp);
  free(L->buf), free(L->sbuf), free(L->x), free(L->tw), free(L->ids), free(L->logits);
}

static moe_call call_of(const layer *L) {
  moe_call c = MOE_ZERO_INIT;
  c.x = L->x, c.dtype = L->t, c.M = L->M, c.topk = TOPK, c.topk_weights = L->tw, c.topk_ids = L->ids;
  c.shared = &L->sh, c.shared_gate = L->gate;
  c.routed_scaling_factor = 1.5f;
  return c;
}

/* One call (forward: moe_forward with the router, else moe_fused_experts) into a poisoned out. */
static void run(const layer *L, int forward, const moe_parallel *par, void *out, const char *what) {
  moe_call c = call_of(L);
  size_t wsb = 0;
  void *ws;
  moe_status st;
  c.out = out;
  test_poison(out, L->bytes);
  st = forward ? moe_forward_workspace_size(&L->ex, &L->router, &c, &wsb) : moe_workspace_size(&L->ex, &c, &wsb);
  CHECK(st == MOE_OK, "%s: workspace size: %s", what, moe_status_str(st));
  if (st != MOE_OK || wsb > ((size_t)1 << 40)) return;
  ws = test_malloc(wsb);
  test_poison(ws, wsb);
  st = forward ? moe_forward(&L->ex, &L->router, L->logits, MOE_F32, &c, ws, wsb, par)
               : moe_fused_experts(&L->ex, &c, ws, wsb, par);
  CHECK(st == MOE_OK, "%s: %s", what, moe_status_str(st));
  free(ws);
}

/* The serial output against the oracle (forward: with the ids moe_route gives). */
static double oracle_err(const layer *L, int forward, const void *out) {
  oracle_moe o;
  double *ref = (double *)test_malloc(sizeof(double) * (size_t)(L->M * K_)), err;
  float *tw = L->tw;
  int32_t *ids = L->ids;
  if (forward) {
    tw = (float *)test_malloc(sizeof(float) * (size_t)(L->M * TOPK));
    ids = (int32_t *)test_malloc(sizeof(int32_t) * (size_t)(L->M * TOPK));
    CHECK(moe_route(&L->router, L->logits, MOE_F32, L->M, tw, ids) == MOE_OK, "moe_route");
  }
  memset(&o, 0, sizeof o);
  o.w = &L->pl.w, o.shared = &L->sp.w, o.shared_gate = L->gate, o.dtype = L->t, o.x = L->x, o.M = L->M;
  o.topk = TOPK, o.topk_weights = tw, o.topk_ids = ids, o.rsf = 1.5f;
  oracle_run(&o, ref);
  err = orc_rel_err(L->t, out, K_, ref, L->M, K_, NULL);
  if (forward) free(tw), free(ids);
  free(ref);
  return err;
}

/* Every pool against the serial run, bitwise; returns the serial run's error against the oracle. */
static double check_layer(const layer *L, int forward, pthreadpool_t pools[5], int *runs, int *same) {
  moe_parallel serial = {serial_for, NULL, 1};
  void *ref = test_malloc(L->bytes), *out = test_malloc(L->bytes);
  const char *call = forward ? "moe_forward" : "moe_fused_experts";
  char what[128];
  double err;
  snprintf(what, sizeof what, "%s %s M %lld serial", pname(L->p), call, (long long)L->M);
  run(L, forward, &serial, ref, what);
  err = oracle_err(L, forward, ref);
  CHECK(err <= (L->t == MOE_F32 ? 5e-4 : 1e-2), "%s: rel_err vs oracle %.3e", what, err);
  for (int i = 0; i < 6; i++) {
    moe_parallel par = moe_pthreadpool(i < 5 ? pools[i] : NULL);
    int omp = 0;
#ifdef _OPENMP
    omp = i == 5; /* par NULL: OpenMP's default team */
#endif
    if (i == 5 && !omp) continue;
    snprintf(what, sizeof what, "%s %s M %lld %s%d", pname(L->p), call, (long long)L->M,
             omp ? "OpenMP, threads " : "pthreadpool, threads ", omp ? 0 : par.n_threads);
    if (i == 4) snprintf(what, sizeof what, "%s %s M %lld pthreadpool NULL", pname(L->p), call, (long long)L->M);
    run(L, forward, omp ? NULL : &par, out, what);
    ++*runs;
    *same += memcmp(out, ref, L->bytes) == 0;
    CHECK(memcmp(out, ref, L->bytes) == 0, "%s: output differs from the serial run", what);
  }
  free(ref), free(out);
  return err;
}

int main(void) {
  static const moe_precision precs[] = {MOE_PREC_BF16, MOE_PREC_INT8, MOE_PREC_FP8, MOE_PREC_INT4_W4A16,
                                        MOE_PREC_MXFP4};
  static const int64_t Ms[] = {1, 7, 131};
  pthreadpool_t pools[5] = {NULL, NULL, NULL, NULL, NULL}; /* 1..4 threads; [4] stays NULL */
  for (int i = 0; i < 4; i++) {
    pools[i] = pthreadpool_create((size_t)i + 1);
    CHECK(pools[i] != NULL, "pthreadpool_create(%d)", i + 1);
    if (!pools[i]) return test_finish("test_pthreadpool");
    CHECK(moe_pthreadpool(pools[i]).n_threads == i + 1, "n_threads of a pool of %d", i + 1);
  }
  for (int pi = 0; pi < 5; pi++) {
    int runs = 0, same = 0;
    double worst = 0;
    moe_dtype t = pi % 2 ? MOE_F32 : MOE_BF16;
    if (!moe_precision_compiled(precs[pi])) continue;
    for (int mi = 0; mi < 3; mi++)
      for (int forward = 0; forward < 2; forward++) {
        layer L;
        double err;
        layer_make(&L, precs[pi], t, Ms[mi], 7 + 10 * (uint64_t)pi + (uint64_t)mi);
        err = check_layer(&L, forward, pools, &runs, &same);
        worst = err > worst || err != err ? err : worst;
        layer_free(&L);
      }
    printf("%-10s %-4s %s: %d/%d runs bitwise equal to the serial run; serial vs oracle max rel_err %.3e\n",
           pname(precs[pi]), t == MOE_F32 ? "f32" : "bf16", moe_isa_name(moe_get_isa()), same, runs, worst);
  }
  for (int i = 0; i < 4; i++) pthreadpool_destroy(pools[i]);
  return test_finish("test_pthreadpool");
}

/* Determinism: the output is bitwise identical for any thread count, any order in which a pool runs
 * the tasks, OpenMP's default, and any chunking (moe.h's contract). Every precision, M = 37 at a
 * Qwen-like small shape (E 32, topk 8, N 64, K 128, a gated shared expert of N 80, biases), every ISA tier
 * the machine has; the reference run (serial, one chunk) is also checked against the float64 oracle. */
#define ORC_WANT_POOL /* oracle.h: the pthread pool */
#include "../moe.h"
#include "test_util.h"
#include "oracle.h"

#define M_ 37
#define E_ 32
#define TOPK 8
#define N_ 64
#define K_ 128
#define NSH 80

/* ---- one precision ----------------------------------------------------------------------------------- */
static const char *order_name[] = {"strided", "reversed", "dynamic"};
static const char *pname(moe_precision p) {
  const char *s = moe_precision_name(p);
  return s ? s : "?";
}

static void run(const moe_experts *ex, const moe_call *base, int64_t chunk, orc_pool *pl, void *out, size_t bytes,
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
    par.parallel_for = orc_pool_parallel_for;
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
  kit_rng r = {seed};
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
  kit_route_random(&r, M_, TOPK, E_, tw, ids);
  for (int i = 0; i < K_; i++) gate[i] = (float)(kit_normal(&r) * 0.1);
  ids[3 * TOPK + 2] = -1; /* a skipped slot */

  memset(&c, 0, sizeof c);
  c.x = x, c.dtype = t, c.M = M_, c.topk = TOPK, c.topk_weights = tw, c.topk_ids = ids;
  c.act = (moe_activation)(seed % 3);
  c.routed_scaling_factor = 2.5f;
  c.shared = &sex, c.shared_gate = gate;

  /* the reference: one thread, one chunk */
  {
    orc_pool one;
    orc_pool_start(&one, 1, ORC_ORDER_STRIDED);
    ref_out = test_malloc(bytes);
    run(&ex, &c, 0, &one, ref_out, bytes, "reference");
    orc_pool_stop(&one);
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
      orc_pool pp;
      char what[96];
      if (threads[ti] == 1 && oi == ORC_ORDER_DYNAMIC) continue;
      orc_pool_start(&pp, threads[ti], (orc_order)oi);
      snprintf(what, sizeof what, "%s %d threads %s", pname(p), threads[ti], order_name[oi]);
      run(&ex, &c, 0, &pp, out, bytes, what);
      orc_pool_stop(&pp);
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
      orc_pool pp;
      char what[96];
      if ((v == 2) != (omp != 0)) continue;
      if (v < 2) orc_pool_start(&pp, v == 0 ? 3 : 7, v == 0 ? ORC_ORDER_REVERSED : ORC_ORDER_DYNAMIC);
      snprintf(what, sizeof what, "%s chunk_tokens %lld, %s", pname(p), (long long)chunks[ci],
               v == 0 ? "3 threads reversed" : v == 1 ? "7 threads dynamic" : "OpenMP");
      run(&ex, &c, chunks[ci], v == 2 ? NULL : &pp, out, bytes, what);
      if (v < 2) orc_pool_stop(&pp);
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

/* Many rows per expert: 300 tokens, top-1 over two experts, 280 of them on expert 0 (nine blocks).
 * On the AMX tier a worker with scratch in the workspace runs them in calls of up to MOE__AMX_NB
 * blocks (8: 5 + 4), the others in calls of MOE__AMX_NB_STACK; MXFP4 on the AVX-512 tier takes the
 * folded path: whatever the threads and chunks, the bits are the same. (Its workers past the fold
 * slots: test_kernels.) */
#define MR_M 300
#define MR_K 1000 /* sums long enough to round: MXFP4's folded chain and its grouped sums differ */
static void test_many_rows(moe_precision p, uint64_t seed) {
  static const int threads[] = {2, 7};
  static const int64_t chunks[] = {0, 0, 37};
  orc_plain pl;
  orc_spec s;
  moe_experts ex;
  moe_call c;
  float tw[MR_M];
  int32_t ids[MR_M];
  size_t bytes = 2 * MR_M * MR_K, n;
  kit_rng r = {seed};
  void *buf, *x, *ref_out = test_malloc(bytes), *out = test_malloc(bytes);
  orc_pool one;
  memset(&s, 0, sizeof s);
  s.prec = p, s.E = 2, s.N = N_, s.K = MR_K, s.bias = 1, s.seed = seed;
  orc_plain_make(&pl, &s);
  n = moe_pack_size(&pl.w);
  buf = test_malloc(n ? n : 1);
  CHECK(moe_pack(&pl.w, &ex, buf, n) == MOE_OK, "pack");
  x = orc_make_x(MOE_BF16, MR_M, MR_K, MR_K, &r);
  for (int m = 0; m < MR_M; m++) ids[m] = m % 15 == 0, tw[m] = (float)(0.5 + kit_uniform(&r));
  memset(&c, 0, sizeof c);
  c.x = x, c.dtype = MOE_BF16, c.M = MR_M, c.topk = 1, c.topk_weights = tw, c.topk_ids = ids;
  orc_pool_start(&one, 1, ORC_ORDER_STRIDED);
  run(&ex, &c, 0, &one, ref_out, bytes, "many rows, reference");
  orc_pool_stop(&one);
  for (int i = 0; i < 3; i++) {
    orc_pool pp;
    char what[96];
    orc_pool_start(&pp, threads[i % 2], i % 2 ? ORC_ORDER_DYNAMIC : ORC_ORDER_REVERSED);
    snprintf(what, sizeof what, "%s many rows per expert, %d threads, chunk_tokens %lld", pname(p), threads[i % 2],
             (long long)chunks[i]);
    run(&ex, &c, chunks[i], &pp, out, bytes, what);
    orc_pool_stop(&pp);
    CHECK(memcmp(out, ref_out, bytes) == 0, "%s: output differs from the 1-thread run", what);
  }
  orc_plain_free(&pl);
  free(buf);
  free(x);
  free(ref_out);
  free(out);
}

/* moe_route_parallel: bitwise moe_route for every pool (none, 1 thread, 3 reversed, 7 dynamic) and
 * size (one part, many); statuses before anything is written. Logits with ties and NaN. */
static void test_route_parallel(void) {
  enum { RM = 1000, RE = 256, RK = 8 };
  static const int64_t sizes[] = {RM, 37, 1};
  float *lg = (float *)test_malloc(sizeof(float) * RM * RE), bias[RE];
  float w_ref[RM * RK + 1], w[RM * RK + 1];
  int32_t ids_ref[RM * RK + 1], ids[RM * RK + 1];
  kit_rng r = {77};
  moe_router cfg[2];
  for (int i = 0; i < RM * RE; i++) {
    const double u = kit_uniform(&r);
    lg[i] = u < 0.01 ? NAN : u < 0.3 ? (float)kit_randint(&r, 4) : (float)kit_normal(&r);
  }
  for (int e = 0; e < RE; e++) bias[e] = (float)(0.1 * kit_normal(&r));
  memset(cfg, 0, sizeof cfg);
  cfg[0].E = 128, cfg[0].topk = RK, cfg[0].renormalize = 1; /* softmax, E 128 */
  cfg[1].kind = MOE_ROUTE_BIASED_GROUPED, cfg[1].E = RE, cfg[1].topk = RK, cfg[1].n_group = 8, cfg[1].topk_group = 4;
  cfg[1].correction_bias = bias, cfg[1].routed_scaling_factor = 2.5f, cfg[1].renormalize = 1;
  for (int k = 0; k < 2; k++)
    for (int si = 0; si < 3; si++) {
      const int64_t M = sizes[si], n = M * RK;
      CHECK(moe_route(&cfg[k], lg, MOE_F32, M, w_ref, ids_ref) == MOE_OK, "route kind %d", k);
      for (int v = 0; v < 4; v++) {
        orc_pool pp;
        moe_parallel par;
        moe_status st;
        memset(&par, 0, sizeof par);
        if (v) {
          orc_pool_start(&pp, v == 1 ? 1 : v == 2 ? 3 : 7, v == 2 ? ORC_ORDER_REVERSED : v == 3 ? ORC_ORDER_DYNAMIC : ORC_ORDER_STRIDED);
          par.parallel_for = orc_pool_parallel_for, par.pool = &pp, par.n_threads = pp.n_threads;
        }
        test_poison(w, sizeof w), test_poison(ids, sizeof ids);
        st = moe_route_parallel(&cfg[k], lg, MOE_F32, M, w, ids, v ? &par : NULL);
        if (v) orc_pool_stop(&pp);
        CHECK(st == MOE_OK, "route_parallel kind %d M %lld pool %d: %s", k, (long long)M, v, moe_status_str(st));
        CHECK(!memcmp(w, w_ref, (size_t)n * sizeof *w) && !memcmp(ids, ids_ref, (size_t)n * sizeof *ids),
              "route_parallel kind %d M %lld pool %d: differs from moe_route", k, (long long)M, v);
        CHECK(test_untouched(w + n, sizeof *w) && test_untouched(ids + n, sizeof *ids),
              "route_parallel kind %d M %lld pool %d: wrote past the end", k, (long long)M, v);
      }
    }
  /* bad calls: a status, nothing written */
  test_poison(w, sizeof w), test_poison(ids, sizeof ids);
  CHECK(moe_route_parallel(NULL, lg, MOE_F32, 5, w, ids, NULL) == MOE_ERR_NULL, "route_parallel: NULL router");
  CHECK(moe_route_parallel(&cfg[0], lg, MOE_F32, -1, w, ids, NULL) == MOE_ERR_SHAPE, "route_parallel: M < 0");
  CHECK(moe_route_parallel(&cfg[0], lg, MOE_F32, 5, w, NULL, NULL) == MOE_ERR_NULL, "route_parallel: NULL ids");
  CHECK(moe_route_parallel(NULL, NULL, MOE_F32, 0, NULL, NULL, NULL) == MOE_OK, "route_parallel: M 0");
  cfg[1].topk_group = 9;
  CHECK(moe_route_parallel(&cfg[1], lg, MOE_F32, RM, w, ids, NULL) == MOE_ERR_ARG, "route_parallel: bad groups");
  CHECK(test_untouched(w, sizeof w) && test_untouched(ids, sizeof ids), "route_parallel: a bad call wrote");
  free(lg);
}

/* Option --quick: the best tier only (the sanitized runs: ThreadSanitizer checks the experts'
 * region, which every tier shares). */
int main(int argc, char **argv) {
  static const moe_precision precs[] = {MOE_PREC_BF16,      MOE_PREC_FP16,       MOE_PREC_INT8, MOE_PREC_FP8,
                                        MOE_PREC_INT4_W4A8, MOE_PREC_INT4_W4A16, MOE_PREC_MXFP4};
  const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  const moe_isa best = moe_set_isa(MOE_ISA_COUNT);
  for (int omp = 0; omp < 2; omp++)
    for (int isa = 0; isa < MOE_ISA_COUNT; isa++) {
      if (quick && isa != (int)best) continue;
      if (moe_set_isa((moe_isa)isa) != (moe_isa)isa) continue;
      for (int pi = 0; pi < 7; pi++) {
        if (!moe_precision_compiled(precs[pi])) continue;
        test_precision(precs[pi], (moe_dtype)(pi % 3), 100 + (uint64_t)pi, omp);
        if (!omp) test_many_rows(precs[pi], 200 + (uint64_t)pi);
      }
    }
  moe_set_isa(MOE_ISA_COUNT); /* out of range: no cap */
  test_route_parallel();
  return test_finish("test_determinism");
}

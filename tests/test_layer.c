/* Layer tests: moe_fused_experts (and moe_shared_expert, moe_forward) against the float64 oracle in
 * oracle.h, for every precision, activation, bias, shared-expert and dtype combination at a small
 * shape, REFERENCE.md's test matrix, real model shapes at small M, tails, expert parallelism,
 * in-place calls, strided rows, a misaligned workspace and chunking.
 *
 * Weights are random codes (not quantized floats), so the oracle sees exactly what the library
 * packs. The error of a case is ||out - ref|| / ||ref|| over the whole output (out rounded to the
 * call's dtype by the library, ref the unrounded oracle; outputs below the dtype's smallest normal
 * are judged absolutely, see orc_rel_err). It must stay under the tolerance of its precision and
 * output dtype:
 *
 *   precision    bf16 out  fp16 out  f32 out   max observed (bf16 / fp16 / f32), 7 data seeds x
 *                                              {scalar, avx512} on Zen 4, the model shapes included
 *   bf16         1e-2      1.5e-3    5e-4      2.2e-3 / 3.1e-4 / 1.2e-4
 *   fp16         1e-2      1.5e-3    5e-4      2.0e-3 / 2.9e-4 / 5.2e-5
 *   int8         1e-2      1.5e-3    5e-4      3.4e-3 / 3.6e-4 / 7.1e-7
 *   fp8          1e-2      1.5e-3    5e-4      2.0e-3 / 2.9e-4 / 6.2e-5
 *   int4-w4a8    1e-2      1.5e-3    5e-4      2.7e-3 / 3.7e-4 / 3.1e-7
 *   int4-w4a16   1e-2      1.5e-3    5e-4      2.6e-3 / 3.7e-4 / 7.0e-5
 *   mxfp4        1e-2      1.5e-3    5e-4      2.5e-3 / 2.7e-4 / 1.3e-4
 *
 * About 3x the largest error observed, rounded up. With bf16/fp16 output the error is the output
 * rounding (up to 2^-8 resp. 2^-11 of an element in the smallest cases). With f32 output it is what
 * is left of the library's f32 sums: mostly 1e-7, but where the f32 and f64 pre-activations straddle
 * a bf16 rounding boundary of h, one h element moves by a bf16 step (errors up to ~1e-4). For the A8
 * precisions the same happens with an int8 step of the h re-quantization; it was never observed, but
 * since one such step costs ~1e-4..1e-3 the A8 bound is kept at the A16 one instead of 3x 7e-7.
 *
 * Output: one line per case, `precision act bias shared dtype M E N K topk rel_err tol [what]`,
 * a table of the maxima per ISA tier at the end. Options: --quick (no model shapes), --seed N.
 */
#define ORC_WANT_POOL /* oracle.h: the pthread pool */
#include "../moe.h"
#include "test_util.h"
#include "oracle.h"

#include <time.h>

/* tolerances [precision][output dtype: bf16, fp16, f32] (see the table above) */
static const double tolerance[MOE_PREC_COUNT][3] = {
    {1e-2, 1.5e-3, 5e-4}, /* bf16       */
    {1e-2, 1.5e-3, 5e-4}, /* fp16       */
    {1e-2, 1.5e-3, 5e-4}, /* int8       */
    {1e-2, 1.5e-3, 5e-4}, /* fp8        */
    {1e-2, 1.5e-3, 5e-4}, /* int4-w4a8  */
    {1e-2, 1.5e-3, 5e-4}, /* int4-w4a16 */
    {1e-2, 1.5e-3, 5e-4}, /* mxfp4      */
};
static double tol_of(moe_precision p, moe_dtype t) { return tolerance[p][t]; }

static double max_err[MOE_PREC_COUNT][3];
static uint64_t seed_base = 0; /* --seed: another draw of every case's data */

/* Threads: the many small calls run on a 2-thread pthread pool; the reference matrix and the model
 * shapes on the library's default (OpenMP when compiled with it). Idle OpenMP workers spin, which
 * slows the serial oracle work between many small calls badly on a small, busy machine. */
static orc_pool g_pool;
static moe_parallel g_par;
static int g_use_omp = 0;
static const moe_parallel *call_par(void) { return g_use_omp ? NULL : &g_par; }
static int n_cases = 0;

static int is_4bit(moe_precision p) {
  return p == MOE_PREC_INT4_W4A8 || p == MOE_PREC_INT4_W4A16 || p == MOE_PREC_MXFP4;
}

static const char *pname(moe_precision p) {
  const char *s = moe_precision_name(p);
  return s ? s : "?";
}
static const char *act_name(moe_activation a) {
  return a == MOE_ACT_SILU ? "silu" : a == MOE_ACT_GELU_TANH ? "gelu_tanh" : a == MOE_ACT_SWIGLU_OAI ? "swiglu_oai" : "?";
}
static const char *dtype_name(moe_dtype t) { return t == MOE_BF16 ? "bf16" : t == MOE_F16 ? "fp16" : "f32"; }
static const char *shared_name(int s) { return s == 0 ? "none" : s == 1 ? "shared" : "shared+gate"; }

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- a packed layer ---------------------------------------------------------------------------- */
typedef struct layer {
  orc_spec spec;
  orc_plain p;          /* the weights as generated: what the oracle reads                        */
  int interleaved;      /* p holds gpt-oss style interleaved gate/up rows (w13, e8m0/scales, b13)   */
  moe_weights lw;       /* what the library packs (p, or its deinterleaved copy)                  */
  void *dq, *dx8, *ds, *dz;
  float *db13;
  moe_experts ex;
  void *buf;
  int has_shared;
  orc_plain sp;         /* shared expert, E = 1                                                   */
  moe_experts sex;
  void *sbuf;
  int ok;
} layer;

static int pack_one(const moe_weights *w, moe_experts *ex, void **buf) {
  size_t n = moe_pack_size(w);
  moe_status st;
  CHECK(n > 0, "moe_pack_size returned 0 (precision %d E %lld N %lld K %lld)", (int)w->precision,
        (long long)w->E, (long long)w->N, (long long)w->K);
  if (!n) return 0;
  *buf = test_malloc(n + 1);
  /* odd buffer address: "any alignment" */
  st = moe_pack(w, ex, (char *)*buf + 1, n);
  CHECK(st == MOE_OK, "moe_pack: %s", moe_status_str(st));
  return st == MOE_OK;
}

/* spec: the routed experts; shared_N > 0 adds a shared expert of that N (same precision, bias; its
 * own INT4 group when shared_group > 0). */
static void layer_make(layer *L, const orc_spec *spec, int64_t shared_N, int32_t shared_group, int interleaved) {
  memset(L, 0, sizeof *L);
  L->spec = *spec;
  L->interleaved = interleaved;
  orc_plain_make(&L->p, spec);
  L->lw = L->p.w;
  if (interleaved) { /* the generated w13 rows are read as interleaved gate/up; deinterleave them */
    const moe_weights *w = &L->p.w;
    int64_t E = w->E, N = w->N, K = w->K;
    size_t rb;
    moe_status st;
    int two = w->precision == MOE_PREC_BF16 || w->precision == MOE_PREC_FP16;
    rb = is_4bit(w->precision) ? (size_t)((K + 1) / 2) : (size_t)K * (two ? 2 : 1);
    L->dq = test_malloc(rb * (size_t)(E * 2 * N));
    st = moe_deinterleave_gate_up(w->w13, L->dq, E, N, rb);
    CHECK(st == MOE_OK, "deinterleave w13: %s", moe_status_str(st));
    L->lw.w13 = L->dq;
    if (w->w13_e8m0) {
      rb = (size_t)((K + 31) / 32);
      L->dx8 = test_malloc(rb * (size_t)(E * 2 * N));
      st = moe_deinterleave_gate_up(w->w13_e8m0, L->dx8, E, N, rb);
      CHECK(st == MOE_OK, "deinterleave e8m0: %s", moe_status_str(st));
      L->lw.w13_e8m0 = (const uint8_t *)L->dx8;
    }
    if (w->w13_scale) { /* int8 per row, int4 per (row, group), fp8 per (row, column block) with block_n 1 */
      int64_t g = w->precision == MOE_PREC_FP8 ? (w->block_k ? w->block_k : 128) : (w->group ? w->group : 128);
      int64_t per_row = w->precision == MOE_PREC_INT8 ? 1 : (K + g - 1) / g;
      CHECK(w->precision != MOE_PREC_FP8 || w->block_n == 1, "interleaved fp8 needs block_n 1");
      L->ds = test_malloc(sizeof(float) * (size_t)(per_row * E * 2 * N));
      st = moe_deinterleave_gate_up(w->w13_scale, L->ds, E, N, sizeof(float) * (size_t)per_row);
      CHECK(st == MOE_OK, "deinterleave scales: %s", moe_status_str(st));
      L->lw.w13_scale = (const float *)L->ds;
      if (w->w13_zero) {
        L->dz = test_malloc((size_t)(per_row * E * 2 * N));
        st = moe_deinterleave_gate_up(w->w13_zero, L->dz, E, N, (size_t)per_row);
        CHECK(st == MOE_OK, "deinterleave zeros: %s", moe_status_str(st));
        L->lw.w13_zero = (const uint8_t *)L->dz;
      }
    }
    if (w->b13) {
      L->db13 = (float *)test_malloc(sizeof(float) * (size_t)(E * 2 * N));
      st = moe_deinterleave_gate_up(w->b13, L->db13, E, N, sizeof(float));
      CHECK(st == MOE_OK, "deinterleave b13: %s", moe_status_str(st));
      L->lw.b13 = L->db13;
    }
  }
  L->ok = pack_one(&L->lw, &L->ex, &L->buf);
  if (shared_N > 0) {
    orc_spec s = *spec;
    s.E = 1;
    s.N = shared_N;
    if (shared_group > 0) s.group = shared_group;
    s.seed = spec->seed * 31 + 7;
    orc_plain_make(&L->sp, &s);
    L->has_shared = 1;
    L->ok = L->ok && pack_one(&L->sp.w, &L->sex, &L->sbuf);
  }
}

static void layer_free(layer *L) {
  orc_plain_free(&L->p);
  orc_plain_free(&L->sp);
  free(L->dq);
  free(L->dx8);
  free(L->ds);
  free(L->dz);
  free(L->db13);
  free(L->buf);
  free(L->sbuf);
  memset(L, 0, sizeof *L);
}

/* ---- one call ------------------------------------------------------------------------------------ */
typedef struct call_spec {
  moe_dtype dtype;
  int64_t M;
  int32_t topk;
  moe_activation act;
  float alpha, limit;          /* given to the call as is (0: defaults)                        */
  int shared;                  /* 0 none, 1 shared expert, 2 shared expert with sigmoid gate    */
  float rsf;                   /* 0: 1                                                          */
  const moe_router *router;    /* route random logits with moe_route (else random ids/weights)  */
  moe_dtype logit_type;
  int check_forward;           /* with a router: moe_forward must give the same bits            */
  int neg_ids;                 /* some ids are -1 (one token has only -1)                       */
  const int32_t *map;          /* expert map (global -> local), n_global entries                */
  int32_t n_global;
  int64_t chunk;               /* chunk_tokens                                                  */
  int chunk_check;             /* also run with chunk_tokens 0: bitwise equal                   */
  int64_t ldx, ldo;            /* strides (0: K)                                                */
  int inplace;                 /* out == x                                                      */
  size_t ws_off;               /* workspace address offset (misalignment)                       */
  int shared_api;              /* also check moe_shared_expert (shared expert + rsf * routed)   */
  uint64_t seed;
  const char *what;
} call_spec;

static void run_call(layer *L, const call_spec *cs) {
  const moe_weights *w = &L->p.w;
  const int64_t M = cs->M, K = w->K, E = w->E;
  const int32_t topk = cs->topk;
  const int64_t ldx = cs->ldx ? cs->ldx : K, ldo = cs->inplace ? ldx : cs->ldo ? cs->ldo : K;
  const size_t es = orc_dtype_size(cs->dtype);
  kit_rng r = {cs->seed * 0x2545F4914F6CDD1Dull + 99};
  void *x, *xcopy, *out, *ws;
  float *tw = (float *)test_malloc(sizeof(float) * (size_t)(M * topk + 1)), *gate = NULL;
  int32_t *ids = (int32_t *)test_malloc(sizeof(int32_t) * (size_t)(M * topk + 1));
  double *ref = (double *)test_malloc(sizeof(double) * (size_t)(M * K + 1)), err;
  void *logits = NULL;
  size_t ws_bytes = 0;
  moe_status st;
  moe_call c;
  oracle_moe o;
  int use_shared = cs->shared && L->has_shared;
  if (!L->ok) {
    CHECK(0, "layer not packed (%s)", cs->what ? cs->what : "");
    free(tw), free(ids), free(ref);
    return;
  }
  x = orc_make_x(cs->dtype, M, K, ldx, &r);
  xcopy = test_malloc(es * (size_t)(M * ldx + 1));
  memcpy(xcopy, x, es * (size_t)(M * ldx + 1));
  if (cs->router) {
    int32_t RE = cs->router->E;
    size_t les = orc_dtype_size(cs->logit_type);
    logits = test_malloc(les * (size_t)(M * RE + 1));
    for (int64_t i = 0; i < M * RE; i++) orc_store(cs->logit_type, logits, i, 2.0 * kit_normal(&r));
    st = moe_route(cs->router, logits, cs->logit_type, M, tw, ids);
    CHECK(st == MOE_OK, "moe_route: %s", moe_status_str(st));
  } else {
    kit_route_random(&r, M, topk, cs->map ? cs->n_global : (int32_t)E, tw, ids);
  }
  if (cs->neg_ids)
    for (int64_t m = 0; m < M; m++)
      for (int32_t j = 0; j < topk; j++)
        if (m == 1 || (m + j) % 3 == 0) ids[m * topk + j] = -1;
  if (cs->shared == 2) {
    gate = (float *)test_malloc(sizeof(float) * (size_t)K);
    for (int64_t k = 0; k < K; k++) gate[k] = (float)(kit_normal(&r) * 2.0 / sqrt((double)K));
  }

  memset(&o, 0, sizeof o);
  o.w = w;
  o.w13_interleaved = L->interleaved;
  o.shared = use_shared ? &L->sp.w : NULL;
  o.shared_gate = use_shared ? gate : NULL;
  o.dtype = cs->dtype;
  o.x = xcopy;
  o.M = M;
  o.ldx = ldx;
  o.topk = topk;
  o.topk_weights = tw;
  o.topk_ids = ids;
  o.expert_map = cs->map;
  o.act = cs->act;
  o.alpha = cs->alpha;
  o.limit = cs->limit;
  o.rsf = cs->rsf;
  oracle_run(&o, ref);

  memset(&c, 0, sizeof c);
  c.x = x;
  c.dtype = cs->dtype;
  c.M = M;
  c.ldx = cs->ldx;
  c.ldo = cs->inplace ? cs->ldx : cs->ldo;
  c.topk = topk;
  c.topk_weights = tw;
  c.topk_ids = ids;
  c.expert_map = cs->map;
  c.n_global = cs->map ? cs->n_global : 0;
  c.act = cs->act;
  c.alpha = cs->alpha;
  c.limit = cs->limit;
  c.routed_scaling_factor = cs->rsf;
  c.shared = use_shared ? &L->sex : NULL;
  c.shared_gate = use_shared ? gate : NULL;
  c.chunk_tokens = cs->chunk;
  if (cs->inplace) out = x;
  else {
    out = test_malloc(es * (size_t)(M * ldo + 1));
    test_poison(out, es * (size_t)(M * ldo + 1));
  }
  c.out = out;
  st = moe_workspace_size(&L->ex, &c, &ws_bytes);
  CHECK(st == MOE_OK, "moe_workspace_size: %s", moe_status_str(st));
  ws = test_malloc(ws_bytes + cs->ws_off + 1);
  test_poison(ws, ws_bytes + cs->ws_off + 1); /* the workspace content must not matter */
  st = moe_fused_experts(&L->ex, &c, (char *)ws + cs->ws_off, ws_bytes, call_par());
  CHECK(st == MOE_OK, "moe_fused_experts: %s (%s)", moe_status_str(st), cs->what ? cs->what : "");
  err = orc_rel_err(cs->dtype, out, ldo, ref, M, K, NULL);

  if (!cs->inplace && ldo > K) { /* the gaps between output rows are not written */
    int gaps_ok = 1;
    for (int64_t m = 0; m < M; m++)
      for (size_t b = (size_t)(m * ldo + K) * es; b < (size_t)((m + 1) * ldo) * es; b++)
        if (((unsigned char *)out)[b] != 0xFF) gaps_ok = 0;
    CHECK(gaps_ok, "a gap between output rows (ldo %lld > K %lld) was written", (long long)ldo, (long long)K);
  }
  if (cs->chunk_check && st == MOE_OK) { /* the same call in one chunk gives the same bits */
    void *out2 = test_malloc(es * (size_t)(M * ldo + 1));
    size_t ws2_bytes = 0;
    void *ws2;
    moe_call c2 = c;
    test_poison(out2, es * (size_t)(M * ldo + 1));
    c2.out = out2;
    c2.chunk_tokens = 0;
    st = moe_workspace_size(&L->ex, &c2, &ws2_bytes);
    CHECK(st == MOE_OK, "moe_workspace_size: %s", moe_status_str(st));
    CHECK(ws2_bytes >= ws_bytes, "workspace for one chunk (%zu) < for chunks of %lld (%zu)", ws2_bytes,
          (long long)cs->chunk, ws_bytes);
    ws2 = test_malloc(ws2_bytes);
    st = moe_fused_experts(&L->ex, &c2, ws2, ws2_bytes, call_par());
    CHECK(st == MOE_OK, "moe_fused_experts (one chunk): %s", moe_status_str(st));
    for (int64_t m = 0; m < M; m++)
      CHECK(memcmp((char *)out + (size_t)(m * ldo) * es, (char *)out2 + (size_t)(m * ldo) * es, (size_t)K * es) == 0,
            "token %lld: chunk_tokens %lld and one chunk differ", (long long)m, (long long)cs->chunk);
    free(out2);
    free(ws2);
  }
  if (cs->router && cs->check_forward && !cs->inplace) { /* moe_forward = moe_route + moe_fused_experts */
    void *out3 = test_malloc(es * (size_t)(M * ldo + 1));
    size_t fb = 0;
    void *ws3;
    test_poison(out3, es * (size_t)(M * ldo + 1));
    c.out = out3;
    st = moe_forward_workspace_size(&L->ex, cs->router, &c, &fb);
    CHECK(st == MOE_OK, "moe_forward_workspace_size: %s", moe_status_str(st));
    ws3 = test_malloc(fb + 1);
    st = moe_forward(&L->ex, cs->router, logits, cs->logit_type, &c, ws3, fb, call_par());
    CHECK(st == MOE_OK, "moe_forward: %s", moe_status_str(st));
    for (int64_t m = 0; m < M; m++)
      CHECK(memcmp((char *)out + (size_t)(m * ldo) * es, (char *)out3 + (size_t)(m * ldo) * es, (size_t)K * es) == 0,
            "token %lld: moe_forward and moe_route + moe_fused_experts differ", (long long)m);
    c.out = out;
    free(out3);
    free(ws3);
  }
  if (cs->shared_api && use_shared && !cs->inplace) {
    /* out = shared(x) + rsf * routed, routed = the routed part of a previous call (here random) */
    void *routed = test_malloc(es * (size_t)(M * ldo + 1)), *out4 = test_malloc(es * (size_t)(M * ldo + 1));
    double *ref4 = (double *)test_malloc(sizeof(double) * (size_t)(M * K + 1)), err4;
    const double rsf = cs->rsf != 0 ? cs->rsf : 1.0;
    size_t sb = 0;
    void *ws4;
    oracle_moe o4 = o;
    test_poison(routed, es * (size_t)(M * ldo + 1));
    test_poison(out4, es * (size_t)(M * ldo + 1));
    for (int64_t m = 0; m < M; m++)
      for (int64_t k = 0; k < K; k++) orc_store(cs->dtype, routed, m * ldo + k, kit_normal(&r));
    o4.topk = 0;
    oracle_run(&o4, ref4);
    for (int64_t m = 0; m < M; m++)
      for (int64_t k = 0; k < K; k++) ref4[m * K + k] += rsf * orc_x(cs->dtype, routed, m * ldo + k);
    c.out = out4;
    st = moe_shared_expert_workspace_size(&L->sex, &c, &sb);
    CHECK(st == MOE_OK, "moe_shared_expert_workspace_size: %s", moe_status_str(st));
    ws4 = test_malloc(sb + 1);
    st = moe_shared_expert(&L->sex, &c, routed, ws4, sb, call_par());
    CHECK(st == MOE_OK, "moe_shared_expert: %s", moe_status_str(st));
    err4 = orc_rel_err(cs->dtype, out4, ldo, ref4, M, K, NULL);
    printf("%-10s %-10s %d %-11s %-4s %-3lld 1   %-4lld %-4lld 0  %.3e %.1e moe_shared_expert\n",
           pname(w->precision), act_name(cs->act), w->b13 != NULL, shared_name(cs->shared),
           dtype_name(cs->dtype), (long long)M, (long long)L->sp.w.N, (long long)K, err4,
           tol_of(w->precision, cs->dtype));
    CHECK(err4 <= tol_of(w->precision, cs->dtype), "moe_shared_expert rel_err %.3e", err4);
    c.out = out;
    free(routed);
    free(out4);
    free(ref4);
    free(ws4);
  }

  {
    double tol = tol_of(w->precision, cs->dtype);
    printf("%-10s %-10s %d %-11s %-4s %-3lld %-3lld %-4lld %-4lld %-2d %.3e %.1e %s\n",
           pname(w->precision), act_name(cs->act), w->b13 != NULL, shared_name(use_shared ? cs->shared : 0),
           dtype_name(cs->dtype), (long long)M, (long long)E, (long long)w->N, (long long)K, topk, err, tol,
           cs->what ? cs->what : "");
    CHECK(err <= tol, "%s %s dtype %s M %lld E %lld N %lld K %lld: rel_err %.3e > %.1e (%s)",
          pname(w->precision), act_name(cs->act), dtype_name(cs->dtype), (long long)M, (long long)E,
          (long long)w->N, (long long)K, err, tol, cs->what ? cs->what : "");
    if (!(err <= max_err[w->precision][cs->dtype])) max_err[w->precision][cs->dtype] = err;
    n_cases++;
  }
  free(x);
  free(xcopy);
  if (!cs->inplace) free(out);
  free(ws);
  free(tw);
  free(ids);
  free(ref);
  free(gate);
  free(logits);
}

static orc_spec spec_of(moe_precision p, int64_t E, int64_t N, int64_t K, int bias, uint64_t seed) {
  orc_spec s;
  memset(&s, 0, sizeof s);
  s.prec = p;
  s.E = E;
  s.N = N;
  s.K = K;
  s.bias = bias;
  s.seed = seed + seed_base;
  return s;
}
static call_spec call_of(moe_dtype t, int64_t M, int32_t topk, moe_activation act, uint64_t seed, const char *what) {
  call_spec c;
  memset(&c, 0, sizeof c);
  c.dtype = t;
  c.M = M;
  c.topk = topk;
  c.act = act;
  c.seed = seed + seed_base;
  c.what = what;
  return c;
}

static const moe_precision all_prec[] = {MOE_PREC_BF16,      MOE_PREC_FP16,       MOE_PREC_INT8, MOE_PREC_FP8,
                                         MOE_PREC_INT4_W4A8, MOE_PREC_INT4_W4A16, MOE_PREC_MXFP4};
#define N_PREC 7

/* ---- 1. the full combination matrix at a small shape ------------------------------------------------ */
static void test_matrix(void) {
  uint64_t seed = 1000;
  for (int pi = 0; pi < N_PREC; pi++) {
    moe_precision p = all_prec[pi];
    if (!moe_precision_compiled(p)) continue;
    for (int bias = 0; bias < 2; bias++) {
      layer L;
      orc_spec s = spec_of(p, 6, 64, 96, bias, seed++);
      layer_make(&L, &s, 80, 0, 0);
      for (int act = 0; act < 3; act++)
        for (int sh = 0; sh < 3; sh++)
          for (int t = 0; t < 3; t++) {
            call_spec c = call_of((moe_dtype)t, 5, 3, (moe_activation)act, seed++, "matrix");
            c.shared = sh;
            c.rsf = sh == 2 ? 2.5f : (sh == 0 && t == 1) ? 0.5f : 0.0f; /* rsf also without a shared expert */
            c.shared_api = sh == 2 && act == 0;
            run_call(&L, &c);
          }
      layer_free(&L);
    }
  }
}

/* ---- 2. REFERENCE.md's "Tests of the reference" ------------------------------------------------------ */
static void test_reference(void) {
  uint64_t seed = 2000;
  /* bf16: M in {2, 114}, N = K = 32, E = 4, topk = 2, softmax routing, renormalize on/off */
  if (moe_precision_compiled(MOE_PREC_BF16)) {
    layer L;
    orc_spec s = spec_of(MOE_PREC_BF16, 4, 32, 32, 0, seed++);
    layer_make(&L, &s, 0, 0, 0);
    for (int renorm = 0; renorm < 2; renorm++)
      for (int mi = 0; mi < 2; mi++) {
        moe_router rt;
        call_spec c = call_of(MOE_BF16, mi ? 114 : 2, 2, MOE_ACT_SILU, seed++, renorm ? "ref bf16 renorm" : "ref bf16");
        memset(&rt, 0, sizeof rt);
        rt.kind = MOE_ROUTE_SOFTMAX;
        rt.E = 4;
        rt.topk = 2;
        rt.renormalize = renorm;
        c.router = &rt;
        c.logit_type = MOE_F32;
        c.check_forward = 1;
        run_call(&L, &c);
      }
    layer_free(&L);
    /* with bias: M in {1, 32}, N, K in {64, 128}, swiglu alpha 1.702 limit 7 */
    for (int ni = 0; ni < 2; ni++)
      for (int ki = 0; ki < 2; ki++) {
        orc_spec sb = spec_of(MOE_PREC_BF16, 4, ni ? 128 : 64, ki ? 128 : 64, 1, seed++);
        layer_make(&L, &sb, 0, 0, 0);
        for (int mi = 0; mi < 2; mi++) {
          call_spec c = call_of(MOE_BF16, mi ? 32 : 1, 2, MOE_ACT_SWIGLU_OAI, seed++, "ref bf16 bias swiglu");
          c.alpha = 1.702f;
          c.limit = 7.0f;
          run_call(&L, &c);
        }
        layer_free(&L);
      }
  }
  /* int8: M in {1, 39}, N = 128, K = 256, E = 8, topk = 3; M in {1, 6, 32, 64}, N, K in {256, 512}, topk 4 */
  if (moe_precision_compiled(MOE_PREC_INT8)) {
    layer L;
    orc_spec s = spec_of(MOE_PREC_INT8, 8, 128, 256, 0, seed++);
    layer_make(&L, &s, 0, 0, 0);
    for (int mi = 0; mi < 2; mi++) {
      call_spec c = call_of(MOE_BF16, mi ? 39 : 1, 3, MOE_ACT_SILU, seed++, "ref int8");
      run_call(&L, &c);
    }
    layer_free(&L);
    for (int ni = 0; ni < 2; ni++)
      for (int ki = 0; ki < 2; ki++) {
        static const int64_t Ms[4] = {1, 6, 32, 64};
        orc_spec s2 = spec_of(MOE_PREC_INT8, 8, ni ? 512 : 256, ki ? 512 : 256, 0, seed++);
        layer_make(&L, &s2, 0, 0, 0);
        for (int mi = 0; mi < 4; mi++) {
          call_spec c = call_of(MOE_BF16, Ms[mi], 4, MOE_ACT_SILU, seed++, "ref int8");
          run_call(&L, &c);
        }
        layer_free(&L);
      }
  }
  /* fp8: M in {2, 121}, N in {352, 512}, K in {256, 320}, E = 8, topk = 4, blocks [64, 128],
   * weights e4m3(clamp(randn * 400, +-400)), scales randn * 1e-3 */
  if (moe_precision_compiled(MOE_PREC_FP8))
    for (int ni = 0; ni < 2; ni++)
      for (int ki = 0; ki < 2; ki++) {
        layer L;
        orc_spec s = spec_of(MOE_PREC_FP8, 8, ni ? 512 : 352, ki ? 320 : 256, 0, seed++);
        s.block_n = 64;
        s.block_k = 128;
        s.fp8_ref = 1;
        layer_make(&L, &s, 0, 0, 0);
        for (int mi = 0; mi < 2; mi++) {
          call_spec c = call_of(MOE_BF16, mi ? 121 : 2, 4, MOE_ACT_SILU, seed++, "ref fp8 [64,128]");
          run_call(&L, &c);
        }
        layer_free(&L);
      }
  /* int4: M in {1, 6}, N = 512, K = 256, E = 8, topk = 4, group 128 (both activation kinds) */
  for (int pi = 0; pi < 2; pi++) {
    moe_precision p = pi ? MOE_PREC_INT4_W4A16 : MOE_PREC_INT4_W4A8;
    layer L;
    orc_spec s = spec_of(p, 8, 512, 256, 0, seed++);
    if (!moe_precision_compiled(p)) continue;
    s.group = 128;
    layer_make(&L, &s, 0, 0, 0);
    for (int mi = 0; mi < 2; mi++) {
      call_spec c = call_of(MOE_BF16, mi ? 6 : 1, 4, MOE_ACT_SILU, seed++, "ref int4 g128");
      run_call(&L, &c);
    }
    layer_free(&L);
  }
  /* shared expert: M in {2, 121}, N in {32, 128}, K in {32, 64}, rsf = 16 */
  if (moe_precision_compiled(MOE_PREC_BF16))
    for (int ni = 0; ni < 2; ni++)
      for (int ki = 0; ki < 2; ki++) {
        layer L;
        int64_t N = ni ? 128 : 32;
        orc_spec s = spec_of(MOE_PREC_BF16, 4, N, ki ? 64 : 32, 0, seed++);
        layer_make(&L, &s, N, 0, 0);
        for (int mi = 0; mi < 2; mi++) {
          call_spec c = call_of(MOE_BF16, mi ? 121 : 2, 2, MOE_ACT_SILU, seed++, "ref shared rsf 16");
          c.shared = 1;
          c.rsf = 16.0f;
          c.shared_api = 1;
          run_call(&L, &c);
        }
        layer_free(&L);
      }
}

/* ---- 3. real model shapes at small M ------------------------------------------------------------- */
/* A model of kit.h's table (shape, routing, activation, shared expert, biases, gate/up layout) in one
 * precision, with E, N, the shared expert's N and topk cut where noted to keep the test small. */
typedef struct model_case {
  const char *model;
  moe_precision p;
  int64_t E, N, shared_N;     /* cuts; 0: the model's */
  int32_t topk;               /* 0: the model's */
  moe_dtype logits, dtype_m3; /* logit type; x dtype of the M = 3 call (M = 1 uses bf16) */
  int check_forward;          /* also compare moe_forward with route + fused experts */
} model_case;

static int64_t cut(int64_t v, int64_t full) { return v ? v : full; }

static void run_model(const model_case *mc, uint64_t *seed) {
  const kit_model *m = kit_model_find(mc->model);
  layer L;
  moe_router rt;
  float cb[1024];
  kit_rng r = {seed_base + (*seed)++};
  int64_t E = cut(mc->E, m ? m->E : 0);
  orc_spec s;
  double t0 = now_s();
  CHECK(m != NULL, "model %s is not in kit.h's table", mc->model);
  if (!m || !moe_precision_compiled(mc->p)) return;
  s = spec_of(mc->p, E, cut(mc->N, m->N), m->K, m->biases, (*seed)++);
  if (mc->p == MOE_PREC_FP8) s.block_n = m->block_n, s.block_k = m->block_k;
  layer_make(&L, &s, m->shared_N ? cut(mc->shared_N, m->shared_N) : 0, 0, m->interleaved);
  rt = kit_model_router(m);
  rt.E = (int32_t)E;
  rt.topk = cut(mc->topk, m->topk);
  rt.routed_scaling_factor = 0.0f; /* the call applies rsf */
  if (m->route == MOE_ROUTE_BIASED_GROUPED) {
    for (int64_t i = 0; i < E; i++) cb[i] = (float)(0.1 * kit_normal(&r));
    rt.correction_bias = cb;
  }
  for (int mi = 0; mi < 2; mi++) {
    call_spec c = call_of(mi ? mc->dtype_m3 : MOE_BF16, mi ? 3 : 1, rt.topk, m->act, (*seed)++, m->name);
    c.router = &rt;
    c.logit_type = mc->logits;
    c.check_forward = mc->check_forward;
    c.shared = m->shared_N ? (m->shared_gate ? 2 : 1) : 0;
    c.rsf = m->rsf;
    run_call(&L, &c);
  }
  layer_free(&L);
  fprintf(stderr, " [%s %.1f s]", m->name, now_s() - t0);
}

static void test_models(void) {
  /* Qwen3-30B-A3B int8 with bf16 logits; DeepSeek-V3 (E cut to 16) fp8 128x128 with biased grouped
   * routing, rsf 2.5 and a shared expert; gpt-oss-20b (E cut to 4, topk to 2) MXFP4 with gate/up
   * interleaved in the checkpoint (w13, its e8m0 scales and b13 deinterleaved with
   * moe_deinterleave_gate_up; the oracle reads the interleaved originals), SWIGLU_OAI and biases;
   * Mixtral-8x7B (N cut to 512) bf16; Qwen1.5-MoE-A2.7B (E cut to 16) int4-w4a16 with the sigmoid-gated
   * shared expert and softmax without renormalization; Llama-4-Scout (E 4, N and shared N 1024)
   * int4-w4a8 with sigmoid top-1 routing and a shared expert. */
  static const model_case models[] = {
      {"qwen3-30b-a3b", MOE_PREC_INT8, 0, 0, 0, 0, MOE_BF16, MOE_BF16, 1},
      {"deepseek-v3", MOE_PREC_FP8, 16, 0, 0, 0, MOE_F32, MOE_BF16, 1},
      {"gpt-oss-20b", MOE_PREC_MXFP4, 4, 0, 0, 2, MOE_F32, MOE_BF16, 0},
      {"mixtral-8x7b", MOE_PREC_BF16, 0, 512, 0, 0, MOE_F32, MOE_F32, 0},
      {"qwen1.5-moe-a2.7b", MOE_PREC_INT4_W4A16, 16, 0, 0, 0, MOE_F16, MOE_F16, 1},
      {"llama-4-scout", MOE_PREC_INT4_W4A8, 4, 1024, 1024, 0, MOE_BF16, MOE_F32, 1},
  };
  uint64_t seed = 3000;
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) run_model(&models[i], &seed);
}

/* ---- 4. tails ---------------------------------------------------------------------------------------- */
static void test_tails(void) {
  typedef struct tail {
    int64_t E, N, K;
    int32_t topk, block_n, block_k, group;
    int only4; /* 1: 4-bit formats only; 2: int4 only; 3: fp8 only */
    const char *what;
    int32_t shared_group; /* the shared expert's INT4 group, when not the routed experts' */
  } tail;
  static const tail tails[] = {
      {6, 176, 96, 3, 0, 0, 0, 0, "N 176", 0},
      {6, 64, 2880, 3, 0, 0, 0, 0, "K 2880", 0},
      {6, 64, 100, 3, 0, 0, 0, 0, "K 100", 0},
      {3, 64, 96, 3, 0, 0, 0, 0, "E 3 topk 3", 0},
      {6, 1, 96, 3, 0, 0, 0, 0, "N 1", 0},
      {6, 64, 1, 3, 0, 0, 0, 0, "K 1", 0},
      {6, 33, 33, 3, 0, 0, 0, 1, "odd K, N 33", 0},
      {6, 80, 100, 3, 0, 0, 32, 2, "int4 group 32, K 100, N 80", 0},
      {6, 80, 256, 3, 0, 0, 64, 2, "int4 group 64, the shared expert's 32", 32},
      {6, 80, 256, 3, 0, 0, 32, 2, "int4 group 32, the shared expert's 128", 128},
      {6, 64, 96, 3, 5, 7, 0, 3, "fp8 blocks 5x7", 0},
      {5, 40, 200, 2, 3, 64, 0, 3, "fp8 blocks 3x64", 0},
      {4, 1, 1, 4, 0, 0, 0, 0, "N 1 K 1", 0},
  };
  uint64_t seed = 4000;
  for (size_t ti = 0; ti < sizeof tails / sizeof tails[0]; ti++) {
    const tail *tl = &tails[ti];
    for (int pi = 0; pi < N_PREC; pi++) {
      moe_precision p = all_prec[pi];
      layer L;
      orc_spec s;
      if (!moe_precision_compiled(p)) continue;
      if (tl->only4 == 1 && !is_4bit(p)) continue;
      if (tl->only4 == 2 && p != MOE_PREC_INT4_W4A8 && p != MOE_PREC_INT4_W4A16) continue;
      if (tl->only4 == 3 && p != MOE_PREC_FP8) continue;
      s = spec_of(p, tl->E, tl->N, tl->K, (int)(ti & 1), seed++);
      s.block_n = tl->block_n;
      s.block_k = tl->block_k;
      s.group = tl->group;
      layer_make(&L, &s, tl->N + 3, tl->shared_group, 0);
      for (int v = 0; v < 2; v++) {
        call_spec c = call_of((moe_dtype)((ti + (size_t)v) % 3), v ? 7 : 2, tl->topk,
                              (moe_activation)((ti + (size_t)pi + (size_t)v) % 3), seed++, tl->what);
        c.shared = v ? 2 : 0;
        c.rsf = v ? 1.5f : 0.0f;
        c.ws_off = 1 + (size_t)v * 2; /* "any alignment" */
        run_call(&L, &c);
      }
      layer_free(&L);
    }
  }
  /* gate/up interleaved checkpoints (gpt-oss style), deinterleaved with moe_deinterleave_gate_up:
   * codes, per-row scales/zeros/e8m0 and b13; the oracle reads the interleaved originals */
  for (int pi = 0; pi < N_PREC; pi++) {
    moe_precision p = all_prec[pi];
    layer L;
    orc_spec s = spec_of(p, 4, 40, 72, 1, seed++);
    if (!moe_precision_compiled(p)) continue;
    s.block_n = p == MOE_PREC_FP8 ? 1 : 0;
    s.block_k = p == MOE_PREC_FP8 ? 32 : 0;
    s.group = 32;
    layer_make(&L, &s, 0, 0, 1);
    for (int t = 0; t < 3; t++) {
      call_spec c = call_of((moe_dtype)t, 4, 2, MOE_ACT_SWIGLU_OAI, seed++, "gate/up interleaved");
      run_call(&L, &c);
    }
    layer_free(&L);
  }
  /* SWIGLU_OAI with alpha and limit other than the defaults */
  for (int pi = 0; pi < N_PREC; pi++) {
    moe_precision p = all_prec[pi];
    layer L;
    orc_spec s = spec_of(p, 6, 64, 96, 1, seed++);
    if (!moe_precision_compiled(p)) continue;
    layer_make(&L, &s, 0, 0, 0);
    for (int t = 0; t < 3; t++) {
      call_spec c = call_of((moe_dtype)t, 5, 3, MOE_ACT_SWIGLU_OAI, seed++, "swiglu alpha 1.25 limit 0.75");
      c.alpha = 1.25f;
      c.limit = 0.75f;
      run_call(&L, &c);
    }
    layer_free(&L);
  }
  /* strided rows: ldx > K, ldo > K (the gaps hold NaN in x and must stay untouched in out) */
  for (int pi = 0; pi < N_PREC; pi++) {
    moe_precision p = all_prec[pi];
    layer L;
    orc_spec s = spec_of(p, 6, 64, 96, 1, seed++);
    if (!moe_precision_compiled(p)) continue;
    layer_make(&L, &s, 48, 0, 0);
    for (int t = 0; t < 3; t++) {
      call_spec c = call_of((moe_dtype)t, 9, 3, MOE_ACT_SILU, seed++, "strided ldx 101 ldo 130");
      c.ldx = 101;
      c.ldo = 130;
      c.shared = 2;
      c.rsf = 2.5f;
      run_call(&L, &c);
    }
    layer_free(&L);
  }
}

/* ---- 5. expert parallelism --------------------------------------------------------------------------- */
static void test_ep(void) {
  /* this rank holds global experts 1, 3, 4, 6 of 8 (locals 2, 0, 3, 1) */
  static const int32_t map[8] = {-1, 2, -1, 0, 3, -1, 1, -1};
  uint64_t seed = 5000;
  for (int pi = 0; pi < N_PREC; pi++) {
    moe_precision p = all_prec[pi];
    layer L;
    orc_spec s = spec_of(p, 6, 64, 96, pi & 1, seed++);
    if (!moe_precision_compiled(p)) continue;
    layer_make(&L, &s, 64, 0, 0);
    for (int sh = 0; sh < 2; sh++) { /* ids with -1, no map */
      call_spec c = call_of((moe_dtype)(pi % 3), 7, 3, MOE_ACT_SILU, seed++, "ids -1");
      c.neg_ids = 1;
      c.shared = sh ? 2 : 0;
      run_call(&L, &c);
    }
    layer_free(&L);
    s = spec_of(p, 4, 64, 96, pi & 1, seed++);
    layer_make(&L, &s, 64, 0, 0);
    for (int v = 0; v < 4; v++) { /* a map: global 8 experts, 4 local; topk 3 and 6 (> local E) */
      call_spec c = call_of((moe_dtype)((pi + v) % 3), 11, v & 1 ? 6 : 3, (moe_activation)(v % 3), seed++,
                            v & 2 ? "expert map, ids -1" : "expert map");
      c.map = map;
      c.n_global = 8;
      c.neg_ids = v >> 1;
      c.shared = v == 3 ? 2 : 0;
      c.rsf = v == 3 ? 2.5f : 0.0f;
      run_call(&L, &c);
    }
    layer_free(&L);
  }
}

/* ---- 6. in place (out == x) and 7. chunking ---------------------------------------------------------- */
static void test_inplace_chunks(void) {
  uint64_t seed = 6000;
  for (int pi = 0; pi < N_PREC; pi++) {
    moe_precision p = all_prec[pi];
    layer L;
    orc_spec s = spec_of(p, 6, 64, 96, 1, seed++);
    if (!moe_precision_compiled(p)) continue;
    layer_make(&L, &s, 64, 0, 0);
    for (int t = 0; t < 3; t++) {
      call_spec c = call_of((moe_dtype)t, 5, 3, MOE_ACT_SILU, seed++, "in place");
      c.inplace = 1;
      c.shared = 2;
      c.rsf = 2.5f;
      run_call(&L, &c);
    }
    { /* in place over several chunks, with strides */
      call_spec c = call_of(MOE_BF16, 37, 3, MOE_ACT_GELU_TANH, seed++, "in place, ldx 100, chunks of 8");
      c.inplace = 1;
      c.ldx = 100;
      c.chunk = 8;
      run_call(&L, &c);
    }
    for (int t = 0; t < 3; t++) { /* M = 37 in chunks of 8 == one chunk, bitwise */
      call_spec c = call_of((moe_dtype)t, 37, 3, (moe_activation)t, seed++, "chunks of 8 == one chunk");
      c.chunk = 8;
      c.chunk_check = 1;
      c.shared = t == 2 ? 2 : 0;
      c.rsf = t == 2 ? 2.5f : 0.0f;
      run_call(&L, &c);
    }
    { /* M = 300: five blocks per expert (AMX: one call of four with the workspace's scratch, or of two) */
      call_spec c = call_of(MOE_BF16, 300, 3, MOE_ACT_SILU, seed++, "M 300, default chunks");
      c.shared = 2;
      c.rsf = 2.5f;
      run_call(&L, &c);
    }
    { /* chunks of 1 */
      call_spec c = call_of(MOE_F32, 37, 3, MOE_ACT_SILU, seed++, "chunks of 1 == one chunk");
      c.chunk = 1;
      c.chunk_check = 1;
      c.shared = 1;
      run_call(&L, &c);
    }
    layer_free(&L);
  }
}

/* ---- 8. MXFP4's folded path (moe__fold_policy: many rows per expert on the AVX-512 tier) -------------
 * K and N tails, a shared expert (also alone: moe_shared_expert), and one expert with a scale that
 * does not fold in its first gate panel and in a W2 panel: those pairs run the MXFP4 kernel inside the
 * same call. Every dtype, chunks of 50 tokens bitwise equal to one chunk. On the AVX-512 tier also a K
 * whose GEMM1 pair is too large to fold (moe__fold_bytes) beside a GEMM2 that folds. */
static void test_folded(void) {
  enum { N = 72, K = 70, G13 = (K + 31) / 32, G2 = (N + 31) / 32 }; /* e8m0 groups per row of W13, W2 */
  uint64_t seed = 8000;
  layer L;
  orc_spec s = spec_of(MOE_PREC_MXFP4, 3, N, K, 1, seed++);
  if (!moe_precision_compiled(MOE_PREC_MXFP4)) return;
  layer_make(&L, &s, 40, 0, 0);
  L.p.x8[0][(1 * 2 * N + 3) * G13] = 1;  /* expert 1, W13 row 3 (gate panel 0), group 0 */
  L.p.x8[1][(1 * K + 40) * G2 + 1] = 0;  /* expert 1, W2 row 40 (panel 1 of pair 0), group 1 */
  free(L.buf);
  L.ok = pack_one(&L.lw, &L.ex, &L.buf);
  for (int t = 0; t < 3; t++) {
    call_spec c = call_of((moe_dtype)t, 200, 2, (moe_activation)t, seed++, "folded, scales that do not fold, chunks of 50");
    c.shared = t == 2 ? 2 : 1;
    c.shared_api = t == 0; /* moe_shared_expert: one expert of 200 rows, folded too */
    c.chunk = 50;
    c.chunk_check = 1;
    run_call(&L, &c);
  }
  layer_free(&L);
  if (moe_get_isa() == MOE_ISA_AVX512) { /* K 7690: GEMM1's pair (985 KB) is over MOE__FOLD_MAX_BYTES, GEMM2's folds */
    s = spec_of(MOE_PREC_MXFP4, 2, 40, 7690, 1, seed++);
    layer_make(&L, &s, 0, 0, 0);
    call_spec c = call_of(MOE_F32, 70, 1, MOE_ACT_SILU, seed++, "folded GEMM2 only (GEMM1's pair over the cap)");
    run_call(&L, &c);
    layer_free(&L);
  }
}

static void print_table(const char *title, double err[MOE_PREC_COUNT][3]) {
  printf("# %s: max rel_err per precision (bf16 / fp16 / f32 out), then the tolerances\n", title);
  for (int pi = 0; pi < N_PREC; pi++)
    printf("#   %-10s %.2e  %.2e  %.2e   tol %.1e %.1e %.1e\n", pname(all_prec[pi]),
           err[all_prec[pi]][0], err[all_prec[pi]][1], err[all_prec[pi]][2], tol_of(all_prec[pi], MOE_BF16),
           tol_of(all_prec[pi], MOE_F16), tol_of(all_prec[pi], MOE_F32));
}

/* Runs every section on every ISA tier this machine has (moe_set_isa), the real model shapes on the
 * best tier only. Options: --quick (no model shapes, and only the scalar and the best tier: the
 * sanitized runs, where test_kernels still runs every kernel and row operation of every tier),
 * --seed N (another draw of all the data). */
int main(int argc, char **argv) {
  double t0 = now_s(), t, all[MOE_PREC_COUNT][3];
  int quick = 0;
  moe_isa best = moe_set_isa(MOE_ISA_COUNT); /* out of range: no cap, the best tier */
  memset(all, 0, sizeof all);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed_base = strtoull(argv[++i], NULL, 0) * 100003u;
  }
  orc_pool_start(&g_pool, 2, ORC_ORDER_STRIDED);
  g_par = orc_pool_parallel(&g_pool);
  printf("# precision act bias shared dtype M E N K topk rel_err tol what\n");
  for (int isa = 0; isa < MOE_ISA_COUNT; isa++) {
    if (quick && isa != (int)MOE_ISA_SCALAR && isa != (int)best) continue;
    if (moe_set_isa((moe_isa)isa) != (moe_isa)isa) continue;
    printf("# isa %s\n", moe_isa_name((moe_isa)isa));
    memset(max_err, 0, sizeof max_err);
    t = now_s();
    test_matrix();
    fprintf(stderr, "isa %s: matrix %.1f s", moe_isa_name((moe_isa)isa), now_s() - t), t = now_s();
    g_use_omp = 1;
    test_reference();
    fprintf(stderr, ", reference %.1f s", now_s() - t), t = now_s();
    if (!quick && isa == (int)best) test_models();
    fprintf(stderr, ", models %.1f s", now_s() - t), t = now_s();
    g_use_omp = 0;
    test_tails();
    test_ep();
    test_inplace_chunks();
    test_folded();
    fprintf(stderr, ", tails/ep/in place/chunks/folded %.1f s\n", now_s() - t);
    print_table(moe_isa_name((moe_isa)isa), max_err);
    for (int p = 0; p < MOE_PREC_COUNT; p++)
      for (int d = 0; d < 3; d++)
        if (max_err[p][d] > all[p][d]) all[p][d] = max_err[p][d];
  }
  moe_set_isa(best);
  orc_pool_stop(&g_pool);
  printf("# %d cases in %.1f s\n", n_cases, now_s() - t0);
  print_table("all tiers", all);
  return test_finish("test_layer");
}

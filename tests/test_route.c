/* Routing and slot-sorting tests: every routing variant against a brute-force float64 reference
 * (full sorts with an explicit comparator, groups enumerated one by one), on the reference's grid
 * and beyond; ties, NaN, bad input; the sort against a scan per expert, with and without maps. */
#include "../moe_route.h"
#include "test_util.h"

static int n_near_ties = 0; /* id differences accepted because f32 cannot separate the scores */
static int n_zero_ties = 0; /* the same among scores that underflow f32 (one-hot softmax)      */
static int n_tokens = 0;

/* ---- reference routing in double ------------------------------------------------------------- */
static const double *ref_key;
static int ref_cmp(const void *a, const void *b) {
  int ia = *(const int *)a, ib = *(const int *)b;
  if (ref_key[ia] > ref_key[ib]) return -1;
  if (ref_key[ia] < ref_key[ib]) return 1;
  return (ia > ib) - (ia < ib);
}
/* idx[0..n) best first: larger key first, equal keys by lower index */
static void ref_sort(const double *key, int *idx, int n) {
  ref_key = key;
  qsort(idx, (size_t)n, sizeof *idx, ref_cmp);
}

static int grouped(const moe_router *c) { return c->kind == MOE_ROUTE_GROUPED || c->kind == MOE_ROUTE_BIASED_GROUPED; }

/* One token: key[E] receives the selection score of every expert, val[E] its unscaled weight,
 * ids the reference's choice. */
static void ref_route_token(const moe_router *c, const double *x, double *key, double *val, int *ids) {
  int E = c->E, k = c->topk, G = 1, TG = 1, gsz, g, e, j, nc = 0;
  int idx[1024], gidx[1024], cand[1024];
  double gs[1024], mx = -INFINITY, sum = 0;
  if (grouped(c)) {
    G = c->n_group ? c->n_group : 1;
    TG = c->topk_group ? c->topk_group : G;
  }
  gsz = E / G;
  if (c->kind == MOE_ROUTE_SOFTMAX || c->kind == MOE_ROUTE_GROUPED) {
    for (e = 0; e < E; e++) mx = x[e] > mx ? x[e] : mx;
    for (e = 0; e < E; e++) sum += exp(x[e] - mx);
    for (e = 0; e < E; e++) key[e] = val[e] = exp(x[e] - mx) / sum;
  } else if (c->kind == MOE_ROUTE_SIGMOID) {
    for (e = 0; e < E; e++) key[e] = x[e], val[e] = 1 / (1 + exp(-x[e]));
  } else {
    for (e = 0; e < E; e++) val[e] = 1 / (1 + exp(-x[e])), key[e] = val[e] + (double)c->correction_bias[e];
  }
  for (g = 0; g < G; g++) { /* group score: sort the group's members */
    for (e = 0; e < gsz; e++) idx[e] = g * gsz + e;
    ref_sort(key, idx, gsz);
    gs[g] = key[idx[0]];
    if (c->kind == MOE_ROUTE_BIASED_GROUPED && gsz > 1) gs[g] += key[idx[1]];
    gidx[g] = g;
  }
  ref_sort(gs, gidx, G);
  for (g = 0; g < TG; g++)
    for (e = 0; e < gsz; e++) cand[nc++] = gidx[g] * gsz + e;
  ref_sort(key, cand, nc);
  for (j = 0; j < k; j++) ids[j] = cand[j];
}

/* Ids exact, except where the reference's scores are equal to f32 precision (then the library's
 * lower-id rule may pick another expert of the same score). Weights to 1e-5 relative, against the
 * reference's weights of the chosen ids (plus 1e-7 of the row's largest for f32 underflow). */
static void compare_token(const moe_router *c, const double *key, const double *val, const int *iref,
                          const float *w, const int32_t *ids, const char *what, int64_t m) {
  char seen[1024];
  double wexp[1024], sum = 0, wmax = 0, rsf = c->routed_scaling_factor ? c->routed_scaling_factor : 1;
  int j;
  if (test_failures > 40) return;
  memset(seen, 0, sizeof seen);
  n_tokens++;
  for (j = 0; j < c->topk; j++) {
    int32_t id = ids[j];
    CHECK(id >= 0 && id < c->E && !seen[id], "%s m=%lld j=%d: id %d out of range or repeated", what, (long long)m, j,
          (int)id);
    if (id < 0 || id >= c->E || seen[id]) return;
    seen[id] = 1;
    if (id != iref[j]) {
      double a = key[id], b = key[iref[j]];
      int near = fabs(a - b) <= 1e-6 * fmax(fabs(a), fabs(b)) + 1e-30;
      CHECK(near, "%s m=%lld j=%d: id %d (score %.9g), reference %d (score %.9g)", what, (long long)m, j, (int)id, a,
            iref[j], b);
      if (fmax(fabs(a), fabs(b)) > 1e-30) n_near_ties++;
      else n_zero_ties++;
    }
    sum += wexp[j] = val[id];
  }
  for (j = 0; j < c->topk; j++) {
    wexp[j] = c->renormalize && sum > 0 ? wexp[j] / sum * rsf : wexp[j] * rsf;
    wmax = fmax(wmax, fabs(wexp[j]));
  }
  for (j = 0; j < c->topk; j++)
    CHECK(fabs(w[j] - wexp[j]) <= 1e-5 * fabs(wexp[j]) + 1e-7 * wmax + 1e-30,
          "%s m=%lld j=%d id=%d: weight %.9g, reference %.9g", what, (long long)m, j, (int)ids[j], (double)w[j],
          wexp[j]);
}

/* ---- logits --------------------------------------------------------------------------------- */
static size_t dtype_size(moe_dtype t) { return t == MOE_F32 ? 4 : 2; }
static const char *dtype_name(moe_dtype t) { return t == MOE_F32 ? "f32" : t == MOE_BF16 ? "bf16" : "f16"; }

/* Stores f in buf[i] as type t and returns the stored value, read back exactly. */
static double store(moe_dtype t, void *buf, int64_t i, float f) {
  uint16_t h;
  if (t == MOE_F32) return ((float *)buf)[i] = f;
  h = t == MOE_BF16 ? moe_f32_to_bf16(f) : moe_f32_to_f16(f);
  ((uint16_t *)buf)[i] = h;
  return t == MOE_BF16 ? moe_bf16_to_f32(h) : moe_f16_to_f32(h);
}

enum { LOGITS_NORMAL, LOGITS_INTEGER, LOGITS_EQUAL };

/* Routes M tokens of generated logits and compares every token with the reference. */
static void run_case(const moe_router *c, int64_t M, moe_dtype t, int gen, double scale, kit_rng *r) {
  int64_t n = M * c->E, i, m;
  void *logits = test_malloc((size_t)n * dtype_size(t));
  double *x = (double *)test_malloc((size_t)n * sizeof *x), key[1024], val[1024];
  float *w = (float *)test_malloc((size_t)(M * c->topk + 1) * sizeof *w);
  int32_t *ids = (int32_t *)test_malloc((size_t)(M * c->topk + 1) * sizeof *ids);
  int iref[1024];
  char what[160];
  moe_status st;
  snprintf(what, sizeof what, "kind=%d M=%lld E=%d topk=%d G=%d TG=%d renorm=%d rsf=%g %s gen=%d scale=%g",
           (int)c->kind,
           (long long)M, c->E, c->topk, c->n_group, c->topk_group, c->renormalize, (double)c->routed_scaling_factor,
           dtype_name(t), gen, scale);
  for (i = 0; i < n; i++) {
    double v = gen == LOGITS_NORMAL    ? kit_normal(r) * scale
               : gen == LOGITS_INTEGER ? (double)kit_randint(r, 4)
                                       : 0.25;
    x[i] = store(t, logits, i, (float)v);
  }
  test_poison(w, (size_t)(M * c->topk + 1) * sizeof *w);
  test_poison(ids, (size_t)(M * c->topk + 1) * sizeof *ids);
  st = moe_route(c, logits, t, M, w, ids);
  CHECK(st == MOE_OK, "%s: status %d", what, (int)st);
  CHECK(test_untouched(w + M * c->topk, sizeof *w) && test_untouched(ids + M * c->topk, sizeof *ids), "%s: wrote past the end",
        what);
  for (m = 0; st == MOE_OK && m < M && test_failures < 40; m++) {
    ref_route_token(c, x + m * c->E, key, val, iref);
    compare_token(c, key, val, iref, w + m * c->topk, ids + m * c->topk, what, m);
    if (gen == LOGITS_EQUAL) {
      int j;
      for (j = 0; j < c->topk; j++) CHECK(ids[m * c->topk + j] == j, "%s: tie m=%lld j=%d id=%d", what, (long long)m, j,
                                          (int)ids[m * c->topk + j]);
    }
  }
  free(logits), free(x), free(w), free(ids);
}

static const moe_dtype dtypes[3] = {MOE_F32, MOE_BF16, MOE_F16};

/* Every dtype, renormalize off/on, two rsf, and two logit scales: 2M (the reference's, which pushes
 * softmax to one-hot and sigmoid to 0/1) and 2 (weights of every size). */
static void run_grid(moe_router c, int64_t M, float rsf2, kit_rng *r) {
  int d, rn, s, f;
  for (d = 0; d < 3; d++)
    for (rn = 0; rn < 2; rn++)
      for (f = 0; f < 2; f++)
        for (s = 0; s < 2; s++) {
          c.renormalize = rn;
          c.routed_scaling_factor = f ? rsf2 : 0.0f;
          run_case(&c, M, dtypes[d], LOGITS_NORMAL, s ? 2.0 * (double)M : 2.0, r);
        }
}

static moe_router router(moe_route_kind kind, int E, int topk, int G, int TG, const float *bias) {
  moe_router c;
  memset(&c, 0, sizeof c);
  c.kind = kind, c.E = E, c.topk = topk, c.n_group = G, c.topk_group = TG, c.correction_bias = bias;
  return c;
}

static float *make_bias(int E, double scale, kit_rng *r) {
  float *b = (float *)test_malloc((size_t)E * sizeof *b);
  int e;
  for (e = 0; e < E; e++) b[e] = (float)(kit_normal(r) * scale);
  return b;
}

static void test_dense(kit_rng *r) {
  static const int cases[][3] = {{1, 1, 1},    {5, 1, 1},     {37, 3, 3},   {37, 3, 1},  {123, 8, 2},
                                 {64, 16, 4},  {123, 64, 6},  {50, 128, 8}, {17, 384, 8}, {33, 257, 13},
                                 {9, 1024, 1}, {9, 1024, 16}, {2, 1024, 1024}};
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_grid(router(MOE_ROUTE_SOFTMAX, cases[i][1], cases[i][2], 0, 0, NULL), cases[i][0], 2.5f, r);
    run_grid(router(MOE_ROUTE_SIGMOID, cases[i][1], cases[i][2], 0, 0, NULL), cases[i][0], 2.5f, r);
  }
}

static void test_grouped(kit_rng *r) {
  static const int cases[][5] = {{123, 8, 2, 2, 1},   {123, 16, 4, 3, 2},  {123, 32, 4, 3, 2},  {1123, 32, 4, 3, 2},
                                 {123, 64, 1, 6, 1},  {123, 256, 8, 4, 8}, {123, 160, 8, 6, 2}, {40, 8, 8, 3, 4},
                                 {40, 12, 3, 8, 2},   {40, 64, 0, 6, 0},   {40, 64, 8, 4, 0}};
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run_grid(router(MOE_ROUTE_GROUPED, cases[i][1], cases[i][3], cases[i][2], cases[i][4], NULL), cases[i][0], 16.0f,
             r);
}

static void test_biased(kit_rng *r) {
  static const int cases[][5] = {/* E, G, topk, topk_group */
                                 {128, 8, 8, 2},  {192, 8, 8, 2},  {256, 8, 8, 2},  {384, 8, 8, 2},  {256, 8, 1, 2},
                                 {256, 8, 4, 2},  {256, 8, 16, 2}, {1024, 8, 8, 2}, {1024, 8, 64, 4}, {8, 8, 3, 4},
                                 {64, 1, 6, 1},   {64, 8, 6, 0},   {32, 4, 32, 4}};
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float *bias = make_bias(cases[i][0], 0.1, r);
    run_grid(router(MOE_ROUTE_BIASED_GROUPED, cases[i][0], cases[i][2], cases[i][1], cases[i][3], bias), 34, 1.125f,
             r);
    free(bias);
  }
}

/* All-equal logits: every variant returns 0..topk-1; integer logits: many exact ties everywhere. */
static void test_ties(kit_rng *r) {
  float zero[16];
  moe_router cs[4];
  int i, d;
  memset(zero, 0, sizeof zero);
  cs[0] = router(MOE_ROUTE_SOFTMAX, 8, 3, 0, 0, NULL);
  cs[1] = router(MOE_ROUTE_SIGMOID, 8, 3, 0, 0, NULL);
  cs[2] = router(MOE_ROUTE_GROUPED, 16, 5, 4, 2, NULL);
  cs[3] = router(MOE_ROUTE_BIASED_GROUPED, 16, 5, 4, 2, zero);
  for (i = 0; i < 4; i++)
    for (d = 0; d < 3; d++) {
      cs[i].renormalize = d == 1;
      run_case(&cs[i], 3, dtypes[d], LOGITS_EQUAL, 1.0, r);
      run_case(&cs[i], 200, dtypes[d], LOGITS_INTEGER, 1.0, r);
    }
}

/* -0 and +0 are equal scores: ties to the lower id, whichever sign each has (sigmoid ranks logits). */
static void test_signed_zero(void) {
  enum { E = 16, K = 6 };
  float x[E], w[K];
  int32_t ids[K];
  moe_router c = router(MOE_ROUTE_SIGMOID, E, K, 0, 0, NULL);
  for (int e = 0; e < E; e++) x[e] = e % 3 ? 0.0f : -0.0f;
  x[9] = 1.0f;
  CHECK(moe_route(&c, x, MOE_F32, 1, w, ids) == MOE_OK, "signed zero: status");
  CHECK(ids[0] == 9, "signed zero: the one positive first, got %d", (int)ids[0]);
  for (int j = 1; j < K; j++) CHECK(ids[j] == j - 1, "signed zero: j=%d id %d, want %d", j, (int)ids[j], j - 1);
}

/* NaN and infinite logits (and a NaN bias): no crash, ids distinct and in range; sigmoid ranks
 * every number above NaN, so it picks the best numbers first. */
static void test_nan(kit_rng *r) {
  enum { M = 16, E = 64, K = 8 };
  float bias[E], w[M * K];
  int32_t ids[M * K];
  uint16_t h[M * E];
  float x[M * E];
  moe_router cs[4];
  int i, d, m, j, e;
  for (e = 0; e < E; e++) bias[e] = (float)(kit_normal(r) * 0.1);
  bias[5] = NAN;
  for (i = 0; i < M * E; i++) {
    x[i] = kit_uniform(r) < 0.25 ? NAN : (float)kit_normal(r);
    if (i < E) x[i] = NAN;                          /* row 0: all NaN */
    if (i >= E && i < 2 * E) x[i] = i == E + 7 ? 1.0f : NAN; /* row 1: one number */
  }
  x[2 * E + 3] = INFINITY, x[2 * E + 4] = -INFINITY, x[3 * E] = INFINITY, x[3 * E + 1] = INFINITY;
  cs[0] = router(MOE_ROUTE_SOFTMAX, E, K, 0, 0, NULL);
  cs[1] = router(MOE_ROUTE_SIGMOID, E, K, 0, 0, NULL);
  cs[2] = router(MOE_ROUTE_GROUPED, E, K, 8, 3, NULL);
  cs[3] = router(MOE_ROUTE_BIASED_GROUPED, E, K, 8, 3, bias);
  for (i = 0; i < 4; i++)
    for (d = 0; d < 3; d++) {
      const void *src = dtypes[d] == MOE_F32 ? (const void *)x : (const void *)h;
      moe_status st;
      for (j = 0; j < M * E; j++) h[j] = dtypes[d] == MOE_BF16 ? moe_f32_to_bf16(x[j]) : moe_f32_to_f16(x[j]);
      cs[i].renormalize = d != 1;
      st = moe_route(&cs[i], src, dtypes[d], M, w, ids);
      CHECK(st == MOE_OK, "nan kind=%d %s: status %d", i, dtype_name(dtypes[d]), (int)st);
      for (m = 0; m < M && test_failures < 40; m++) {
        char seen[E];
        int n_num = 0;
        memset(seen, 0, sizeof seen);
        for (e = 0; e < E; e++) n_num += x[m * E + e] == x[m * E + e];
        for (j = 0; j < K; j++) {
          int32_t id = ids[m * K + j];
          CHECK(id >= 0 && id < E && !seen[id], "nan kind=%d %s m=%d j=%d: id %d", i, dtype_name(dtypes[d]), m, j,
                (int)id);
          if (id < 0 || id >= E) continue;
          seen[id] = 1;
          if (i == 1) /* sigmoid: numbers before NaN */
            CHECK((j < n_num) == (x[m * E + id] == x[m * E + id]), "nan sigmoid m=%d j=%d: id %d", m, j, (int)id);
        }
        if (m == 0 || (i == 0 && m > 1))
          for (j = 0; j < K; j++) CHECK(ids[m * K + j] == j, "nan kind=%d m=%d: all-NaN ids in order", i, m);
        if (i == 1 && m == 1) CHECK(ids[m * K] == 7, "nan sigmoid: the only number first");
      }
    }
}

/* Bad configurations: a status and nothing written. */
static void test_route_errors(void) {
  float logits[64], bias[16], w[8];
  int32_t ids[8];
  moe_router c = router(MOE_ROUTE_SOFTMAX, 16, 4, 0, 0, NULL), b;
  memset(logits, 0, sizeof logits), memset(bias, 0, sizeof bias);
  test_poison(w, sizeof w), test_poison(ids, sizeof ids);
#define ROUTE_EXPECT(cfg, lg, t, M, ww, ii, want)                                                        \
  do {                                                                                                  \
    moe_status s_ = moe_route(cfg, lg, t, M, ww, ii);                                                   \
    CHECK(s_ == (want), "route status %d (%s), expected %d", (int)s_, moe_status_str(s_), (int)(want)); \
    CHECK(test_untouched(w, sizeof w) && test_untouched(ids, sizeof ids), "route error wrote outputs");            \
  } while (0)
  ROUTE_EXPECT(NULL, logits, MOE_F32, 2, w, ids, MOE_ERR_NULL);
  ROUTE_EXPECT(&c, NULL, MOE_F32, 2, w, ids, MOE_ERR_NULL);
  ROUTE_EXPECT(&c, logits, MOE_F32, 2, NULL, ids, MOE_ERR_NULL);
  ROUTE_EXPECT(&c, logits, MOE_F32, 2, w, NULL, MOE_ERR_NULL);
  ROUTE_EXPECT(NULL, NULL, MOE_F32, 0, NULL, NULL, MOE_OK);
  ROUTE_EXPECT(&c, logits, MOE_F32, 0, w, ids, MOE_OK);
  ROUTE_EXPECT(&c, logits, MOE_F32, -1, w, ids, MOE_ERR_SHAPE);
  b = c, b.E = 0; ROUTE_EXPECT(&b, logits, MOE_F32, 1, w, ids, MOE_ERR_SHAPE);
  b = c, b.E = 1025; ROUTE_EXPECT(&b, logits, MOE_F32, 1, w, ids, MOE_ERR_SHAPE);
  b = c, b.topk = 0; ROUTE_EXPECT(&b, logits, MOE_F32, 1, w, ids, MOE_ERR_SHAPE);
  b = c, b.topk = 17; ROUTE_EXPECT(&b, logits, MOE_F32, 1, w, ids, MOE_ERR_SHAPE);
  b = c, b.E = 1024; ROUTE_EXPECT(&b, logits, MOE_F32, INT64_MAX / 512, w, ids, MOE_ERR_SHAPE);
  ROUTE_EXPECT(&c, logits, (moe_dtype)3, 2, w, ids, MOE_ERR_ARG);
#ifndef __cplusplus /* out-of-range enum values cannot be formed in C++ */
  ROUTE_EXPECT(&c, logits, (moe_dtype)-1, 2, w, ids, MOE_ERR_ARG);
  b = c, b.kind = (moe_route_kind)4; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG);
  b = c, b.kind = (moe_route_kind)-1; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG);
#endif
  b = c, b.routed_scaling_factor = INFINITY; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG);
  b = c, b.routed_scaling_factor = NAN; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG);
  c = router(MOE_ROUTE_GROUPED, 16, 4, 4, 2, NULL);
  b = c, b.n_group = 3; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG);
  b = c, b.n_group = 32; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG);
  b = c, b.n_group = -4; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG);
  b = c, b.topk_group = 5; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG);
  b = c, b.topk_group = -1; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG);
  b = c, b.topk = 9; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG); /* 2 groups of 4 kept */
  b = c, b.kind = MOE_ROUTE_BIASED_GROUPED; ROUTE_EXPECT(&b, logits, MOE_F32, 2, w, ids, MOE_ERR_ARG);
  b.correction_bias = bias, b.topk = 8; ROUTE_EXPECT(&b, logits, MOE_F32, 0, w, ids, MOE_OK);
  /* softmax and sigmoid ignore the group fields */
  b = c, b.kind = MOE_ROUTE_SIGMOID, b.n_group = 3, b.topk = 9; ROUTE_EXPECT(&b, logits, MOE_F32, 0, w, ids, MOE_OK);
#undef ROUTE_EXPECT
}

/* ---- sorting ---------------------------------------------------------------------------------- */
static int32_t local_of(int32_t id, const int32_t *map) { return id < 0 ? -1 : map ? map[id] : id; }

/* Sorts and checks against a scan per expert; counts each slot's appearances in seen[]. */
static void check_sort(const int32_t *ids, int64_t M, int32_t topk, int32_t E, const int32_t *map, int32_t n_global,
                       int32_t bm, int *seen) {
  size_t cap = moe_sort_capacity(M, topk, E, bm), nbmax = cap / (size_t)bm;
  int32_t *scratch = (int32_t *)test_malloc(((size_t)E + 1) * sizeof(int32_t));
  int32_t *sorted = (int32_t *)test_malloc((cap + 1) * sizeof(int32_t));
  int32_t *be = (int32_t *)test_malloc((nbmax + 1) * sizeof(int32_t));
  int32_t *br = (int32_t *)test_malloc((nbmax + 1) * sizeof(int32_t));
  int64_t nb = -1, b = 0, pos = 0, n = M * topk, i;
  int32_t e;
  moe_status st;
  CHECK(cap >= (size_t)bm && cap % (size_t)bm == 0, "capacity %zu for block %d", cap, (int)bm);
  test_poison(sorted, (cap + 1) * sizeof(int32_t)), test_poison(be, (nbmax + 1) * 4), test_poison(br, (nbmax + 1) * 4);
  st = moe_sort_slots(ids, M, topk, E, map, n_global, bm, scratch, sorted, be, br, &nb);
  CHECK(st == MOE_OK, "sort M=%lld topk=%d E=%d bm=%d: status %d", (long long)M, (int)topk, (int)E, (int)bm, (int)st);
  if (st != MOE_OK) goto done;
  for (e = 0; e < E && test_failures < 40; e++) {
    int64_t cnt = 0, r = 0, blocks, q;
    for (i = 0; i < n; i++) cnt += local_of(ids[i], map) == e;
    if (!cnt) continue;
    blocks = (cnt + bm - 1) / bm;
    for (q = 0; q < blocks; q++, b++) {
      int64_t rows = cnt - q * bm < bm ? cnt - q * bm : bm;
      CHECK(b < nb && be[b] == e && br[b] == rows, "block %lld: expert %d rows %d, expected %d %lld", (long long)b,
            (int)be[b], (int)br[b], (int)e, (long long)rows);
    }
    for (i = 0; i < n; i++) /* the slots of e, ascending */
      if (local_of(ids[i], map) == e) {
        CHECK(sorted[pos + r] == i, "expert %d entry %lld: %d, expected %lld", (int)e, (long long)r,
              (int)sorted[pos + r], (long long)i);
        seen[i]++, r++;
      }
    for (; r < blocks * bm; r++) CHECK(sorted[pos + r] == n, "expert %d entry %lld: padding %d", (int)e, (long long)r,
                                       (int)sorted[pos + r]);
    pos += blocks * bm;
  }
  CHECK(nb == b, "n_blocks %lld, expected %lld", (long long)nb, (long long)b);
  CHECK((size_t)pos <= cap && test_untouched(sorted + cap, 4) && test_untouched(be + nbmax, 4) && test_untouched(br + nbmax, 4),
        "sort wrote past its capacity");
done:
  free(scratch), free(sorted), free(be), free(br);
}

static void test_sort(kit_rng *r) {
  static const int cases[][3] = {{0, 2, 4},    {1, 1, 1},    {5, 2, 3},     {37, 3, 8},  {100, 8, 64},
                                 {1000, 8, 256}, {300, 1, 1}, {50, 6, 160}, {7, 4, 1000}};
  static const int bms[3] = {1, 4, 32};
  size_t ci;
  int bi, ranks, p;
  for (ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
    for (p = 0; p < 3; p++)
      for (bi = 0; bi < 3; bi++)
        for (ranks = 1; ranks <= 3; ranks++) {
          int64_t M = cases[ci][0], n = M * cases[ci][1], i;
          int32_t E = cases[ci][2], topk = cases[ci][1], *ids, *map, El, rank;
          int *seen;
          if (ranks > E) continue;
          ids = (int32_t *)test_malloc((size_t)(n + 1) * sizeof *ids);
          map = (int32_t *)test_malloc((size_t)E * sizeof *map);
          seen = (int *)test_malloc((size_t)(n + 1) * sizeof *seen);
          memset(seen, 0, (size_t)(n + 1) * sizeof *seen);
          for (i = 0; i < n; i++) /* p: no skips, some -1, all -1 */
            ids[i] = p == 2 || (p == 1 && kit_uniform(r) < 0.15) ? -1 : (int32_t)kit_randint(r, E);
          if (ranks == 1) {
            check_sort(ids, M, topk, E, NULL, E, bms[bi], seen);
          } else {
            for (rank = 0; rank < ranks; rank++) {
              moe_status st = moe_expert_map_contiguous(E, ranks, rank, map, &El);
              CHECK(st == MOE_OK && El == (E + ranks - 1) / ranks, "map status %d E_local %d", (int)st, (int)El);
              check_sort(ids, M, topk, El, map, E, bms[bi], seen);
            }
          }
          for (i = 0; i < n && test_failures < 40; i++)
            CHECK(seen[i] == (ids[i] >= 0), "slot %lld (id %d) seen %d times", (long long)i, (int)ids[i], seen[i]);
          free(ids), free(map), free(seen);
        }
}

static void test_sort_errors(void) {
  int32_t ids[12] = {0, 1, 2, 3, 3, -1, 2, 1, 0, 5, 4, 3}, map[6], scratch[8], sorted[64], be[64], br[64], El = 0;
  int64_t nb;
#define SORT_EXPECT(want, ...)                                                                           \
  do {                                                                                                  \
    moe_status s_;                                                                                      \
    test_poison(sorted, sizeof sorted), test_poison(be, sizeof be), test_poison(br, sizeof br);          \
    test_poison(&nb, sizeof nb);                                                                        \
    s_ = moe_sort_slots(__VA_ARGS__);                                                                   \
    CHECK(s_ == (want), "sort status %d (%s), expected %d", (int)s_, moe_status_str(s_), (int)(want));   \
    if ((want) != MOE_OK)                                                                               \
      CHECK(test_untouched(sorted, sizeof sorted) && test_untouched(be, sizeof be) && test_untouched(br, sizeof br) &&   \
                test_untouched(&nb, sizeof nb),                                                              \
            "sort error wrote outputs");                                                                \
  } while (0)
  SORT_EXPECT(MOE_OK, ids, 4, 3, 6, NULL, 6, 4, scratch, sorted, be, br, &nb);
  CHECK(nb == 6, "n_blocks %lld", (long long)nb);
  SORT_EXPECT(MOE_ERR_NULL, NULL, 4, 3, 6, NULL, 6, 4, scratch, sorted, be, br, &nb);
  SORT_EXPECT(MOE_ERR_NULL, ids, 4, 3, 6, NULL, 6, 4, NULL, sorted, be, br, &nb);
  SORT_EXPECT(MOE_ERR_NULL, ids, 4, 3, 6, NULL, 6, 4, scratch, NULL, be, br, &nb);
  SORT_EXPECT(MOE_ERR_NULL, ids, 4, 3, 6, NULL, 6, 4, scratch, sorted, NULL, br, &nb);
  SORT_EXPECT(MOE_ERR_NULL, ids, 4, 3, 6, NULL, 6, 4, scratch, sorted, be, NULL, &nb);
  SORT_EXPECT(MOE_ERR_NULL, ids, 4, 3, 6, NULL, 6, 4, scratch, sorted, be, br, NULL);
  SORT_EXPECT(MOE_OK, NULL, 0, 3, 6, NULL, 6, 4, NULL, NULL, NULL, NULL, &nb);
  CHECK(nb == 0, "M = 0: n_blocks %lld", (long long)nb);
  SORT_EXPECT(MOE_ERR_SHAPE, ids, -1, 3, 6, NULL, 6, 4, scratch, sorted, be, br, &nb);
  SORT_EXPECT(MOE_ERR_SHAPE, ids, 4, 0, 6, NULL, 6, 4, scratch, sorted, be, br, &nb);
  SORT_EXPECT(MOE_ERR_SHAPE, ids, 4, 3, 0, NULL, 6, 4, scratch, sorted, be, br, &nb);
  SORT_EXPECT(MOE_ERR_SHAPE, ids, 4, 3, 6, NULL, 6, 0, scratch, sorted, be, br, &nb);
  SORT_EXPECT(MOE_ERR_SHAPE, ids, 4, 3, 6, NULL, 7, 4, scratch, sorted, be, br, &nb);
  SORT_EXPECT(MOE_ERR_SHAPE, ids, 4, 3, 6, map, 0, 4, scratch, sorted, be, br, &nb);
  SORT_EXPECT(MOE_ERR_SHAPE, ids, (int64_t)1 << 30, 3, 6, NULL, 6, 4, scratch, sorted, be, br, &nb);
  SORT_EXPECT(MOE_ERR_EXPERT_ID, ids, 4, 3, 5, NULL, 5, 4, scratch, sorted, be, br, &nb); /* id 5 >= E */
  ids[5] = -2;
  SORT_EXPECT(MOE_ERR_EXPERT_ID, ids, 4, 3, 6, NULL, 6, 4, scratch, sorted, be, br, &nb);
  ids[5] = -1;
  CHECK(moe_expert_map_contiguous(6, 2, 1, map, &El) == MOE_OK && El == 3, "map 6/2");
  SORT_EXPECT(MOE_OK, ids, 4, 3, El, map, 6, 4, scratch, sorted, be, br, &nb);
  CHECK(nb == 3 && be[0] == 0 && br[0] == 3 && be[1] == 1 && br[1] == 1 && be[2] == 2 && br[2] == 1,
        "rank 1 of 2: blocks");
  SORT_EXPECT(MOE_ERR_EXPERT_ID, ids, 4, 3, El, map, 5, 4, scratch, sorted, be, br, &nb); /* id 5 >= n_global */
  map[0] = 3;
  SORT_EXPECT(MOE_ERR_EXPERT_ID, ids, 4, 3, El, map, 6, 4, scratch, sorted, be, br, &nb); /* entry >= E_local */
  map[0] = -2;
  SORT_EXPECT(MOE_ERR_EXPERT_ID, ids, 4, 3, El, map, 6, 4, scratch, sorted, be, br, &nb);
#undef SORT_EXPECT
}

static void test_capacity_and_map(void) {
  int32_t map[10], El = -5, rank, g, owners[10];
  CHECK(moe_sort_capacity(0, 1, 1, 32) == 32, "M = 0");
  CHECK(moe_sort_capacity(10, 2, 4, 4) == 32, "10x2 over 4 experts");
  CHECK(moe_sort_capacity(3, 2, 100, 32) == 192, "6 slots, 100 experts");
  CHECK(moe_sort_capacity(1000, 8, 256, 32) == 8000 + 256 * 31, "1000x8 over 256");
  CHECK(moe_sort_capacity(-1, 1, 1, 1) == 0 && moe_sort_capacity(1, 0, 1, 1) == 0 &&
            moe_sort_capacity(1, 1, 0, 1) == 0 && moe_sort_capacity(1, 1, 1, 0) == 0,
        "invalid sizes");
  CHECK(moe_sort_capacity(INT64_MAX, 8, 8, 32) == 0 && moe_sort_capacity((int64_t)1 << 29, 4, 1, 1) == 0,
        "too many entries");
  CHECK(moe_sort_capacity(((int64_t)1 << 29) - 1, 4, 1, 1) == (((size_t)1 << 31) - 4), "largest");
  CHECK(moe_expert_map_contiguous(10, 4, 0, NULL, &El) == MOE_ERR_NULL, "map NULL");
  CHECK(moe_expert_map_contiguous(10, 4, 0, map, NULL) == MOE_ERR_NULL, "E_local NULL");
  CHECK(moe_expert_map_contiguous(0, 1, 0, map, &El) == MOE_ERR_SHAPE, "n_global 0");
  CHECK(moe_expert_map_contiguous(10, 0, 0, map, &El) == MOE_ERR_SHAPE, "n_ranks 0");
  CHECK(moe_expert_map_contiguous(3, 4, 0, map, &El) == MOE_ERR_SHAPE, "n_ranks > n_global");
  CHECK(moe_expert_map_contiguous(10, 4, 4, map, &El) == MOE_ERR_ARG, "rank n_ranks");
  CHECK(moe_expert_map_contiguous(10, 4, -1, map, &El) == MOE_ERR_ARG && El == -5, "rank -1");
  memset(owners, 0, sizeof owners);
  for (rank = 0; rank < 4; rank++) { /* 10 over 4: 3, 3, 3 and 1 real experts, E_local 3 everywhere */
    CHECK(moe_expert_map_contiguous(10, 4, rank, map, &El) == MOE_OK && El == 3, "10/4 rank %d", (int)rank);
    for (g = 0; g < 10; g++) {
      CHECK(map[g] == (g / 3 == rank ? g % 3 : -1), "10/4 rank %d map[%d] = %d", (int)rank, (int)g, (int)map[g]);
      owners[g] += map[g] >= 0;
    }
  }
  for (g = 0; g < 10; g++) CHECK(owners[g] == 1, "expert %d owned %d times", (int)g, owners[g]);
  CHECK(moe_expert_map_contiguous(9, 6, 5, map, &El) == MOE_OK && El == 2, "9/6: last rank");
  for (g = 0; g < 9; g++) CHECK(map[g] == -1, "9/6 rank 5 owns nothing, map[%d] = %d", (int)g, (int)map[g]);
  CHECK(moe_expert_map_contiguous(7, 1, 0, map, &El) == MOE_OK && El == 7 && map[6] == 6, "one rank");
}

int main(void) {
  kit_rng r = {20240611u};
  test_dense(&r);
  test_grouped(&r);
  test_biased(&r);
  test_ties(&r);
  test_signed_zero();
  test_nan(&r);
  test_route_errors();
  test_sort(&r);
  test_sort_errors();
  test_capacity_and_map();
  printf("route: %d tokens compared; ids accepted as f32 ties: %d near-equal, %d underflowed\n", n_tokens,
         n_near_ties, n_zero_ties);
  return test_finish("test_route");
}

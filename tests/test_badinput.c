/* Bad input: every invalid argument returns its status and leaves the (poisoned) output bit for bit
 * untouched; bad weight descriptors are refused by moe_pack. Non-finite values (NaN/Inf in x, in a
 * weight, in a top-k weight) are not errors: they propagate to the rows they touch, and every other
 * token stays finite and matches the float64 oracle. */
#include "../moe.h"
#include "test_util.h"
#include "oracle.h"

#define E_ 4
#define N_ 32
#define K_ 64
#define M_ 6
#define TOPK 2

typedef struct fixture {
  orc_plain p, sp;
  moe_experts ex, sex;
  void *buf, *sbuf;
  void *x, *out, *snap, *ws;
  size_t ws_bytes, out_bytes;
  float tw[M_ * TOPK];
  int32_t ids[M_ * TOPK];
  moe_call c;
} fixture;

static void pack_or_die(const moe_weights *w, moe_experts *ex, void **buf) {
  size_t n = moe_pack_size(w);
  moe_status st;
  if (!n) {
    fprintf(stderr, "moe_pack_size returned 0 for a valid descriptor\n");
    exit(1);
  }
  *buf = test_malloc(n);
  st = moe_pack(w, ex, *buf, n);
  if (st != MOE_OK) {
    fprintf(stderr, "moe_pack: %s\n", moe_status_str(st));
    exit(1);
  }
}

static void fixture_make(fixture *f, moe_precision p, moe_dtype t, int shared, uint64_t seed) {
  orc_spec s;
  kit_rng r = {seed};
  memset(f, 0, sizeof *f);
  memset(&s, 0, sizeof s);
  s.prec = p;
  s.E = E_;
  s.N = N_;
  s.K = K_;
  s.bias = 1;
  s.seed = seed;
  orc_plain_make(&f->p, &s);
  pack_or_die(&f->p.w, &f->ex, &f->buf);
  if (shared) {
    s.E = 1;
    s.N = 48;
    s.seed = seed + 1;
    orc_plain_make(&f->sp, &s);
    pack_or_die(&f->sp.w, &f->sex, &f->sbuf);
  }
  f->x = orc_make_x(t, M_, K_, K_, &r);
  kit_route_random(&r, M_, TOPK, E_, f->tw, f->ids);
  f->out_bytes = orc_dtype_size(t) * M_ * K_;
  f->out = test_malloc(f->out_bytes);
  f->snap = test_malloc(f->out_bytes);
  test_poison(f->out, f->out_bytes);
  memcpy(f->snap, f->out, f->out_bytes);
  f->c.x = f->x;
  f->c.out = f->out;
  f->c.dtype = t;
  f->c.M = M_;
  f->c.topk = TOPK;
  f->c.topk_weights = f->tw;
  f->c.topk_ids = f->ids;
  f->c.shared = shared ? &f->sex : NULL;
  if (moe_workspace_size(&f->ex, &f->c, &f->ws_bytes) != MOE_OK) {
    fprintf(stderr, "moe_workspace_size failed on a valid call\n");
    exit(1);
  }
  f->ws = test_malloc(f->ws_bytes);
}

static void fixture_free(fixture *f) {
  orc_plain_free(&f->p);
  orc_plain_free(&f->sp);
  free(f->buf);
  free(f->sbuf);
  free(f->x);
  free(f->out);
  free(f->snap);
  free(f->ws);
}

/* moe_fused_experts(ex, c) must return `want` (or `alt` when alt != MOE_OK) and leave out alone */
static void expect(fixture *f, const moe_experts *ex, const moe_call *c, void *ws, size_t ws_size, moe_status want,
                   moe_status alt, const char *what) {
  moe_status st;
  test_poison(f->out, f->out_bytes);
  st = moe_fused_experts(ex, c, ws, ws_size, NULL);
  CHECK(st == want || (alt != MOE_OK && st == alt), "%s: got %s (%d), want %s (%d)", what, moe_status_str(st), (int)st,
        moe_status_str(want), (int)want);
  CHECK(memcmp(f->out, f->snap, f->out_bytes) == 0, "%s: output written despite status %d", what, (int)st);
}

static void test_call_errors(void) {
  fixture f;
  moe_call c;
  moe_experts zero;
  size_t need = 0;
  moe_status st;
  fixture_make(&f, MOE_PREC_BF16, MOE_BF16, 1, 11);
  memset(&zero, 0, sizeof zero);

  /* the valid call passes (and is then poisoned again by expect) */
  st = moe_fused_experts(&f.ex, &f.c, f.ws, f.ws_bytes, NULL);
  CHECK(st == MOE_OK, "valid call: %s", moe_status_str(st));

  expect(&f, NULL, &f.c, f.ws, f.ws_bytes, MOE_ERR_NULL, MOE_OK, "ex NULL");
  expect(&f, &f.ex, NULL, f.ws, f.ws_bytes, MOE_ERR_NULL, MOE_OK, "call NULL");
  c = f.c, c.x = NULL;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_NULL, MOE_OK, "x NULL");
  c = f.c, c.out = NULL;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_NULL, MOE_OK, "out NULL");
  c = f.c, c.topk_weights = NULL;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_NULL, MOE_OK, "topk_weights NULL");
  c = f.c, c.topk_ids = NULL;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_NULL, MOE_OK, "topk_ids NULL");
  expect(&f, &f.ex, &f.c, NULL, f.ws_bytes, MOE_ERR_WORKSPACE, MOE_OK, "workspace NULL");
  expect(&f, &f.ex, &f.c, f.ws, f.ws_bytes - 1, MOE_ERR_WORKSPACE, MOE_OK, "workspace one byte short");
  expect(&f, &f.ex, &f.c, f.ws, 0, MOE_ERR_WORKSPACE, MOE_OK, "workspace size 0");
  c = f.c, c.M = -1;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_SHAPE, MOE_OK, "M < 0");
  c = f.c, c.topk = 0;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_SHAPE, MOE_OK, "topk 0");
  c = f.c, c.topk = -3;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_SHAPE, MOE_OK, "topk < 0");
  {
    int32_t ids[M_ * (E_ + 1)];
    float tw[M_ * (E_ + 1)];
    for (int i = 0; i < M_ * (E_ + 1); i++) ids[i] = i % E_, tw[i] = 0.5f;
    c = f.c, c.topk = E_ + 1, c.topk_ids = ids, c.topk_weights = tw;
    expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_SHAPE, MOE_OK, "topk > E");
    st = moe_workspace_size(&f.ex, &c, &need);
    CHECK(st == MOE_ERR_SHAPE, "moe_workspace_size with topk > E: %s", moe_status_str(st));
  }
  { /* bad ids, placed in the last token of a call in chunks of 2 tokens: nothing may be written */
    int32_t ids[M_ * TOPK];
    static const int32_t bad[] = {E_, -2, E_ + 100, INT32_MIN};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
      char what[64];
      size_t nb = 0;
      void *ws;
      memcpy(ids, f.ids, sizeof ids);
      ids[M_ * TOPK - 1] = bad[b];
      c = f.c, c.topk_ids = ids, c.chunk_tokens = 2;
      CHECK(moe_workspace_size(&f.ex, &c, &nb) == MOE_OK, "workspace size (chunks of 2)");
      ws = test_malloc(nb);
      snprintf(what, sizeof what, "id %d in the last token", (int)bad[b]);
      expect(&f, &f.ex, &c, ws, nb, MOE_ERR_EXPERT_ID, MOE_OK, what);
      free(ws);
    }
  }
  { /* expert maps: an id >= n_global, a map entry >= E, a map entry < -1 */
    int32_t map[8] = {0, -1, 1, -1, 2, -1, 3, -1}, ids[M_ * TOPK];
    size_t nb = 0;
    void *ws;
    for (int i = 0; i < M_ * TOPK; i++) ids[i] = (i * 3) % 8;
    c = f.c, c.topk_ids = ids, c.expert_map = map, c.n_global = 8;
    CHECK(moe_workspace_size(&f.ex, &c, &nb) == MOE_OK, "workspace size (map)");
    ws = test_malloc(nb);
    st = moe_fused_experts(&f.ex, &c, ws, nb, NULL);
    CHECK(st == MOE_OK, "valid map: %s", moe_status_str(st));
    ids[5] = 8;
    expect(&f, &f.ex, &c, ws, nb, MOE_ERR_EXPERT_ID, MOE_OK, "id >= n_global with a map");
    ids[5] = 0;
    map[1] = E_;
    expect(&f, &f.ex, &c, ws, nb, MOE_ERR_EXPERT_ID, MOE_OK, "map entry >= E");
    map[1] = -2;
    expect(&f, &f.ex, &c, ws, nb, MOE_ERR_EXPERT_ID, MOE_OK, "map entry < -1");
    map[1] = -1;
    free(ws);
  }
  { /* n_global 0 with a map means E (moe.h): a map of E entries, ids < E */
    static const int32_t map4[E_] = {3, -1, 0, 2};
    int32_t ids[M_ * TOPK];
    size_t nb = 0;
    void *ws;
    for (int i = 0; i < M_ * TOPK; i++) ids[i] = (i * 3) % E_;
    c = f.c, c.topk_ids = ids, c.expert_map = map4, c.n_global = 0;
    st = moe_workspace_size(&f.ex, &c, &nb);
    CHECK(st == MOE_OK, "moe_workspace_size, map with n_global 0 (= E): %s", moe_status_str(st));
    ws = test_malloc(nb ? nb : 1);
    st = moe_fused_experts(&f.ex, &c, ws, nb, NULL);
    CHECK(st == MOE_OK, "map with n_global 0 (= E): %s", moe_status_str(st));
    ids[3] = E_;
    expect(&f, &f.ex, &c, ws, nb, MOE_ERR_EXPERT_ID, MOE_ERR_SHAPE, "map with n_global 0 (= E), id = E");
    free(ws);
  }
  expect(&f, &zero, &f.c, f.ws, f.ws_bytes, MOE_ERR_DESCRIPTOR, MOE_ERR_NULL, "experts never packed");
  c = f.c, c.shared = &zero;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_DESCRIPTOR, MOE_ERR_NULL, "shared expert never packed");
  st = moe_workspace_size(&zero, &f.c, &need);
  CHECK(st == MOE_ERR_DESCRIPTOR || st == MOE_ERR_NULL, "moe_workspace_size, never packed: %s", moe_status_str(st));
  st = moe_workspace_size(&f.ex, &f.c, NULL);
  CHECK(st == MOE_ERR_NULL, "moe_workspace_size, bytes NULL: %s", moe_status_str(st));
  { /* a shared expert of another K; a shared expert with E = 2 */
    orc_plain sp;
    orc_spec s;
    moe_experts sx;
    void *sb;
    memset(&s, 0, sizeof s);
    s.prec = MOE_PREC_BF16, s.E = 1, s.N = 32, s.K = K_ + 32, s.seed = 5;
    orc_plain_make(&sp, &s);
    pack_or_die(&sp.w, &sx, &sb);
    c = f.c, c.shared = &sx;
    expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_SHAPE, MOE_OK, "shared expert with another K");
    orc_plain_free(&sp);
    free(sb);
    s.E = 2, s.K = K_;
    orc_plain_make(&sp, &s);
    pack_or_die(&sp.w, &sx, &sb);
    expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_SHAPE, MOE_OK, "shared expert with E = 2");
    orc_plain_free(&sp);
    free(sb);
  }
  c = f.c, c.dtype = (moe_dtype)3;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_ARG, MOE_OK, "dtype 3");
  c = f.c, c.dtype = (moe_dtype)-1;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_ARG, MOE_OK, "dtype -1");
  c = f.c, c.act = (moe_activation)3;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_ARG, MOE_OK, "act 3");
  c = f.c, c.act = (moe_activation)-7;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_ARG, MOE_OK, "act -7");
  c = f.c, c.ldx = K_ - 1;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_SHAPE, MOE_ERR_ARG, "ldx < K");
  c = f.c, c.ldo = K_ - 1;
  expect(&f, &f.ex, &c, f.ws, f.ws_bytes, MOE_ERR_SHAPE, MOE_ERR_ARG, "ldo < K");
  { /* M = 0: MOE_OK and nothing written */
    size_t nb = 0;
    void *ws;
    c = f.c, c.M = 0;
    st = moe_workspace_size(&f.ex, &c, &nb);
    CHECK(st == MOE_OK, "moe_workspace_size M = 0: %s", moe_status_str(st));
    ws = test_malloc(nb);
    expect(&f, &f.ex, &c, ws, nb, MOE_OK, MOE_OK, "M = 0");
    free(ws);
  }
  /* moe_shared_expert: the same checks on its own arguments */
  {
    size_t nb = 0;
    void *ws;
    c = f.c, c.shared = NULL, c.shared_gate = NULL;
    st = moe_shared_expert_workspace_size(&f.sex, &c, &nb);
    CHECK(st == MOE_OK, "moe_shared_expert_workspace_size: %s", moe_status_str(st));
    ws = test_malloc(nb);
    test_poison(f.out, f.out_bytes);
    st = moe_shared_expert(NULL, &c, NULL, ws, nb, NULL);
    CHECK(st == MOE_ERR_NULL, "moe_shared_expert, shared NULL: %s", moe_status_str(st));
    c.x = NULL;
    st = moe_shared_expert(&f.sex, &c, NULL, ws, nb, NULL);
    CHECK(st == MOE_ERR_NULL, "moe_shared_expert, x NULL: %s", moe_status_str(st));
    c.x = f.x;
    st = moe_shared_expert(&f.sex, &c, NULL, ws, nb - 1, NULL);
    CHECK(st == MOE_ERR_WORKSPACE, "moe_shared_expert, workspace short: %s", moe_status_str(st));
    st = moe_shared_expert(&zero, &c, NULL, ws, nb, NULL);
    CHECK(st == MOE_ERR_DESCRIPTOR || st == MOE_ERR_NULL, "moe_shared_expert, never packed: %s", moe_status_str(st));
    CHECK(memcmp(f.out, f.snap, f.out_bytes) == 0, "moe_shared_expert wrote output on error");
    st = moe_shared_expert(&f.sex, &c, NULL, ws, nb, NULL);
    CHECK(st == MOE_OK, "moe_shared_expert, valid: %s", moe_status_str(st));
    free(ws);
  }
  /* moe_forward: router topk != call topk */
  {
    moe_router rt;
    float logits[M_ * E_];
    size_t nb = 0;
    for (int i = 0; i < M_ * E_; i++) logits[i] = (float)(i % 7) - 3.0f;
    memset(&rt, 0, sizeof rt);
    rt.E = E_, rt.topk = TOPK + 1;
    st = moe_forward_workspace_size(&f.ex, &rt, &f.c, &nb);
    CHECK(st == MOE_ERR_SHAPE, "moe_forward_workspace_size, router topk != call topk: %s", moe_status_str(st));
    test_poison(f.out, f.out_bytes);
    st = moe_forward(&f.ex, &rt, logits, MOE_F32, &f.c, f.ws, f.ws_bytes, NULL);
    CHECK(st == MOE_ERR_SHAPE, "moe_forward, router topk != call topk: %s", moe_status_str(st));
    CHECK(memcmp(f.out, f.snap, f.out_bytes) == 0, "moe_forward wrote output on error");
  }
  fixture_free(&f);
}

/* ---- moe_pack ------------------------------------------------------------------------------------ */
static void expect_pack(const moe_weights *w, moe_status want, moe_status alt, int size_zero, const char *what) {
  static unsigned char buf[1 << 16];
  moe_experts ex;
  size_t n = moe_pack_size(w);
  moe_status st = moe_pack(w, &ex, buf, sizeof buf);
  CHECK(st == want || (alt != MOE_OK && st == alt), "%s: moe_pack got %s (%d), want %s (%d)", what, moe_status_str(st),
        (int)st, moe_status_str(want), (int)want);
  if (size_zero) CHECK(n == 0, "%s: moe_pack_size returned %zu, want 0", what, n);
}

static void test_pack_errors(void) {
  orc_plain pl[MOE_PREC_COUNT];
  for (int p = 0; p < MOE_PREC_COUNT; p++) {
    orc_spec s;
    memset(&s, 0, sizeof s);
    s.prec = (moe_precision)p, s.E = 2, s.N = 32, s.K = 64, s.seed = 100 + (uint64_t)p;
    orc_plain_make(&pl[p], &s);
  }
  for (int p = 0; p < MOE_PREC_COUNT; p++) {
    moe_weights w;
    char what[96];
    const char *pn = moe_precision_name((moe_precision)p);
    if (!moe_precision_compiled((moe_precision)p)) {
      expect_pack(&pl[p].w, MOE_ERR_UNSUPPORTED, MOE_OK, 1, "precision compiled out");
      continue;
    }
    expect_pack(&pl[p].w, MOE_OK, MOE_OK, 0, "valid");
    w = pl[p].w, w.E = 0;
    snprintf(what, sizeof what, "%s E = 0", pn);
    expect_pack(&w, MOE_ERR_SHAPE, MOE_OK, 1, what);
    w = pl[p].w, w.N = 0;
    snprintf(what, sizeof what, "%s N = 0", pn);
    expect_pack(&w, MOE_ERR_SHAPE, MOE_OK, 1, what);
    w = pl[p].w, w.K = 0;
    snprintf(what, sizeof what, "%s K = 0", pn);
    expect_pack(&w, MOE_ERR_SHAPE, MOE_OK, 1, what);
    w = pl[p].w, w.K = -64;
    snprintf(what, sizeof what, "%s K < 0", pn);
    expect_pack(&w, MOE_ERR_SHAPE, MOE_OK, 1, what);
    w = pl[p].w, w.w13 = NULL;
    snprintf(what, sizeof what, "%s w13 NULL", pn);
    expect_pack(&w, MOE_ERR_NULL, MOE_ERR_DESCRIPTOR, 1, what);
    w = pl[p].w, w.w2 = NULL;
    snprintf(what, sizeof what, "%s w2 NULL", pn);
    expect_pack(&w, MOE_ERR_NULL, MOE_ERR_DESCRIPTOR, 1, what);
    /* missing scales */
    if (p == MOE_PREC_INT8 || p == MOE_PREC_FP8 || p == MOE_PREC_INT4_W4A8 || p == MOE_PREC_INT4_W4A16) {
      w = pl[p].w, w.w13_scale = NULL;
      snprintf(what, sizeof what, "%s w13_scale NULL", pn);
      expect_pack(&w, MOE_ERR_DESCRIPTOR, MOE_OK, 1, what);
      w = pl[p].w, w.w2_scale = NULL;
      snprintf(what, sizeof what, "%s w2_scale NULL", pn);
      expect_pack(&w, MOE_ERR_DESCRIPTOR, MOE_OK, 1, what);
    }
    if (p == MOE_PREC_INT4_W4A8 || p == MOE_PREC_INT4_W4A16) {
      w = pl[p].w, w.w13_zero = NULL;
      snprintf(what, sizeof what, "%s w13_zero NULL", pn);
      expect_pack(&w, MOE_ERR_DESCRIPTOR, MOE_OK, 1, what);
      w = pl[p].w, w.group = 48;
      snprintf(what, sizeof what, "%s group 48", pn);
      expect_pack(&w, MOE_ERR_DESCRIPTOR, MOE_OK, 1, what);
      w = pl[p].w, w.group = -32;
      snprintf(what, sizeof what, "%s group -32", pn);
      expect_pack(&w, MOE_ERR_DESCRIPTOR, MOE_OK, 1, what);
    }
    if (p == MOE_PREC_MXFP4) {
      w = pl[p].w, w.w13_e8m0 = NULL;
      expect_pack(&w, MOE_ERR_DESCRIPTOR, MOE_OK, 1, "mxfp4 w13_e8m0 NULL");
      w = pl[p].w, w.w2_e8m0 = NULL;
      expect_pack(&w, MOE_ERR_DESCRIPTOR, MOE_OK, 1, "mxfp4 w2_e8m0 NULL");
    }
    if (p == MOE_PREC_FP8) {
      w = pl[p].w, w.block_n = -1;
      expect_pack(&w, MOE_ERR_DESCRIPTOR, MOE_OK, 1, "fp8 block_n -1");
      w = pl[p].w, w.block_k = -128;
      expect_pack(&w, MOE_ERR_DESCRIPTOR, MOE_OK, 1, "fp8 block_k -128");
      w = pl[p].w, w.block_n = 0, w.block_k = 0; /* 0 is the default 128 (scales [E, 1, 1] suffice) */
      expect_pack(&w, MOE_OK, MOE_OK, 0, "fp8 blocks 0 (default 128)");
    }
    { /* huge: E * N * K overflows size_t */
      w = pl[p].w;
      w.E = (int64_t)1 << 30, w.N = (int64_t)1 << 24, w.K = (int64_t)1 << 24;
      snprintf(what, sizeof what, "%s E*N*K overflows", pn);
      expect_pack(&w, MOE_ERR_OVERFLOW, MOE_OK, 1, what);
      w.E = INT64_MAX, w.N = INT64_MAX, w.K = INT64_MAX;
      snprintf(what, sizeof what, "%s E, N, K = INT64_MAX", pn);
      expect_pack(&w, MOE_ERR_OVERFLOW, MOE_ERR_SHAPE, 1, what);
    }
    { /* buffer too small; NULL arguments */
      size_t n = moe_pack_size(&pl[p].w);
      unsigned char *b = (unsigned char *)test_malloc(n);
      moe_experts ex;
      moe_status st = moe_pack(&pl[p].w, &ex, b, n - 1);
      CHECK(st == MOE_ERR_BUFFER, "%s buffer one byte short: %s", pn, moe_status_str(st));
      st = moe_pack(&pl[p].w, &ex, b, 0);
      CHECK(st == MOE_ERR_BUFFER, "%s buffer size 0: %s", pn, moe_status_str(st));
      st = moe_pack(&pl[p].w, &ex, NULL, n);
      CHECK(st == MOE_ERR_NULL, "%s buffer NULL: %s", pn, moe_status_str(st));
      st = moe_pack(&pl[p].w, NULL, b, n);
      CHECK(st == MOE_ERR_NULL, "%s packed NULL: %s", pn, moe_status_str(st));
      st = moe_pack(NULL, &ex, b, n);
      CHECK(st == MOE_ERR_NULL, "%s plain NULL: %s", pn, moe_status_str(st));
      st = moe_pack(&pl[p].w, &ex, b, n);
      CHECK(st == MOE_OK, "%s exact buffer size: %s", pn, moe_status_str(st));
      free(b);
    }
  }
  {
    moe_weights w = pl[0].w;
    w.precision = (moe_precision)MOE_PREC_COUNT;
    expect_pack(&w, MOE_ERR_ARG, MOE_ERR_DESCRIPTOR, 1, "precision out of range");
    w.precision = (moe_precision)-1;
    expect_pack(&w, MOE_ERR_ARG, MOE_ERR_DESCRIPTOR, 1, "precision -1");
    CHECK(moe_pack_size(NULL) == 0, "moe_pack_size(NULL) != 0");
  }
  for (int p = 0; p < MOE_PREC_COUNT; p++) orc_plain_free(&pl[p]);
}

/* ---- non-finite values propagate to the rows they touch ---------------------------------------------- */
typedef enum { NF_X_NAN, NF_X_INF, NF_W_NAN, NF_W_INF, NF_TW_NAN, NF_TW_INF } nf_kind;
static const char *nf_name[] = {"NaN in x", "Inf in x", "NaN in a weight", "Inf/NaN-scale weight",
                                "NaN in topk_weights", "Inf in topk_weights"};

static void test_nonfinite_one(moe_precision p, moe_dtype t, nf_kind kind, int shared) {
  orc_plain pl, sp;
  orc_spec s;
  moe_experts ex, sex;
  void *buf = NULL, *sbuf = NULL, *x, *xc, *out, *ws;
  float tw[M_ * TOPK];
  int32_t ids[M_ * TOPK];
  int affected[M_] = {0};
  double ref[M_ * K_], err;
  size_t wsb = 0, es = orc_dtype_size(t);
  kit_rng r = {777 + (uint64_t)kind * 31 + (uint64_t)p};
  moe_call c;
  oracle_moe o;
  moe_status st;
  int bad_e;
  memset(&s, 0, sizeof s);
  s.prec = p, s.E = E_, s.N = N_, s.K = K_, s.seed = 900 + (uint64_t)p;
  orc_plain_make(&pl, &s);
  memset(&sp, 0, sizeof sp);
  x = orc_make_x(t, M_, K_, K_, &r);
  kit_route_random(&r, M_, TOPK, E_, tw, ids);
  bad_e = ids[0];
  switch (kind) {
  case NF_X_NAN:
  case NF_X_INF:
    orc_store(t, x, 2 * K_ + 17, kind == NF_X_NAN ? NAN : -INFINITY);
    affected[2] = 1;
    break;
  case NF_W_NAN:
  case NF_W_INF: { /* gate row 5 of expert bad_e, column 9 */
    size_t i = (size_t)((bad_e * 2 * N_ + 5) * K_ + 9);
    if (p == MOE_PREC_BF16) ((uint16_t *)pl.q[0])[i] = kind == NF_W_NAN ? 0x7FC1 : 0xFF80;
    else if (p == MOE_PREC_FP16) ((uint16_t *)pl.q[0])[i] = kind == NF_W_NAN ? 0x7E01 : 0x7C00;
    else if (p == MOE_PREC_FP8) ((uint8_t *)pl.q[0])[i] = kind == NF_W_NAN ? 0x7F : 0xFF; /* the NaN codes */
    else if (p == MOE_PREC_INT8) pl.s[0][bad_e * 2 * N_ + 5] = kind == NF_W_NAN ? NAN : INFINITY;
    else if (p == MOE_PREC_MXFP4) pl.x8[0][(bad_e * 2 * N_ + 5) * (K_ / 32)] = 255; /* e8m0 NaN */
    else pl.s[0][(bad_e * 2 * N_ + 5) * ((K_ + 127) / 128)] = kind == NF_W_NAN ? NAN : INFINITY;
    for (int m = 0; m < M_; m++)
      for (int j = 0; j < TOPK; j++)
        if (ids[m * TOPK + j] == bad_e) affected[m] = 1;
  } break;
  case NF_TW_NAN:
  case NF_TW_INF:
    tw[4 * TOPK + 1] = kind == NF_TW_NAN ? NAN : INFINITY;
    affected[4] = 1;
    break;
  }
  if (moe_pack_size(&pl.w) == 0) {
    CHECK(0, "pack size 0");
    return;
  }
  pack_or_die(&pl.w, &ex, &buf);
  if (shared) {
    s.E = 1, s.N = 40, s.seed = 901;
    orc_plain_make(&sp, &s);
    pack_or_die(&sp.w, &sex, &sbuf);
  }
  xc = test_malloc(es * M_ * K_);
  memcpy(xc, x, es * M_ * K_);
  memset(&o, 0, sizeof o);
  o.w = &pl.w, o.shared = shared ? &sp.w : NULL, o.dtype = t, o.x = xc, o.M = M_, o.topk = TOPK;
  o.topk_weights = tw, o.topk_ids = ids;
  oracle_run(&o, ref);

  memset(&c, 0, sizeof c);
  c.x = x, c.dtype = t, c.M = M_, c.topk = TOPK, c.topk_weights = tw, c.topk_ids = ids;
  c.shared = shared ? &sex : NULL;
  out = test_malloc(es * M_ * K_);
  test_poison(out, es * M_ * K_);
  c.out = out;
  CHECK(moe_workspace_size(&ex, &c, &wsb) == MOE_OK, "workspace size");
  ws = test_malloc(wsb);
  st = moe_fused_experts(&ex, &c, ws, wsb, NULL);
  CHECK(st == MOE_OK, "%s %s: status %s", moe_precision_name(p), nf_name[kind], moe_status_str(st));
  {
    int all_bad = 1, any_aff = 0;
    for (int m = 0; m < M_; m++) {
      if (!affected[m]) continue;
      any_aff = 1;
      for (int k = 0; k < K_; k++)
        if (isfinite(orc_out(t, out, m * K_ + k))) all_bad = 0;
    }
    CHECK(any_aff, "no token affected");
    CHECK(all_bad, "%s %s %s: an affected row has finite values", moe_precision_name(p),
          t == MOE_F32 ? "f32" : t == MOE_F16 ? "fp16" : "bf16", nf_name[kind]);
    err = orc_rel_err(t, out, K_, ref, M_, K_, affected);
    CHECK(err <= 1e-2, "%s %s: unaffected rows rel_err %.3e (NaN: a non-finite value leaked)", moe_precision_name(p),
          nf_name[kind], err);
    printf("%-10s %-4s %-22s shared %d: unaffected rows rel_err %.3e\n", moe_precision_name(p),
           t == MOE_F32 ? "f32" : t == MOE_F16 ? "fp16" : "bf16", nf_name[kind], shared, err);
  }
  orc_plain_free(&pl);
  orc_plain_free(&sp);
  free(buf);
  free(sbuf);
  free(x);
  free(xc);
  free(out);
  free(ws);
}

static void test_nonfinite(void) {
  static const moe_precision precs[] = {MOE_PREC_BF16,      MOE_PREC_FP16,       MOE_PREC_INT8, MOE_PREC_FP8,
                                        MOE_PREC_INT4_W4A8, MOE_PREC_INT4_W4A16, MOE_PREC_MXFP4};
  for (int pi = 0; pi < 7; pi++) {
    if (!moe_precision_compiled(precs[pi])) continue;
    for (int k = 0; k < 6; k++)
      for (int sh = 0; sh < 2; sh++) {
        if ((k == NF_W_INF) && precs[pi] == MOE_PREC_MXFP4) continue; /* e8m0 has no Inf; NaN case covers it */
        test_nonfinite_one(precs[pi], (moe_dtype)((pi + k + sh) % 3), (nf_kind)k, sh);
      }
  }
}

int main(void) {
  for (int isa = 0; isa < MOE_ISA_COUNT; isa++) {
    if (moe_set_isa((moe_isa)isa) != (moe_isa)isa) continue;
    printf("# isa %s\n", moe_isa_name((moe_isa)isa));
    test_call_errors();
    test_nonfinite();
  }
  moe_set_isa(MOE_ISA_COUNT); /* out of range: no cap */
  test_pack_errors();
  return test_finish("test_badinput");
}

/* The top-k sum order: a token's routed sum runs over its experts in ascending local expert id
 * (the index into the packed experts), whatever the order the router lists them in, as one f32
 * fused multiply-add per expert:  c = 0; for e ascending: c = fma(y_e + b2_e, w_e, c);
 * then out = rsf * c (+ shared expert), rounded once. Checked bit for bit against that fold, on
 * weights whose magnitudes make the f32 result depend on the order (checked too), on every tier,
 * through an expert map, in chunks and with a shared expert. */
#include "../moe.h"
#include "test_util.h"

enum { E = 12, N = 40, K = 72, M = 7, TOPK = 5 };

typedef struct setup {
  kit_weights kw, ksh;
  moe_experts ex, sh;
  void *buf, *shbuf;
  float x[M * K];
  int32_t ids[M * TOPK];
  float w[M * TOPK];
} setup;

/* Runs the routed layer (f32 in and out) and returns out; ws sized per call. */
static void run(const moe_experts *ex, moe_call c, float *out) {
  size_t bytes = 0;
  void *ws;
  c.out = out;
  CHECK(moe_workspace_size(ex, &c, &bytes) == MOE_OK, "workspace size");
  ws = test_malloc(bytes);
  test_poison(out, sizeof(float) * M * K);
  CHECK(moe_fused_experts(ex, &c, ws, bytes, NULL) == MOE_OK, "fused experts");
  free(ws);
}

static moe_call call_of(const setup *s) {
  moe_call c = MOE_ZERO_INIT;
  c.x = s->x, c.dtype = MOE_F32, c.M = M, c.topk = TOPK;
  c.topk_weights = s->w, c.topk_ids = s->ids;
  return c;
}

/* y_e + b2_e of every local expert for every token: the layer with expert e in all TOPK slots,
 * weights 1, 0, 0, ... (exact: fma(y, 1, 0), then + 0). The call has the routed call's slot count,
 * so the AMX tier makes the same per-call kernel choice (MOE__AMX_MIN_ROWS) for both. */
static void expert_outputs(const setup *s, float *y /* [E][M*K] */) {
  int32_t ids[M * TOPK];
  float w[M * TOPK];
  for (int e = 0; e < E; e++) {
    moe_call c = call_of(s);
    for (int i = 0; i < M * TOPK; i++) ids[i] = e, w[i] = i % TOPK == 0 ? 1.0f : 0.0f;
    c.topk_ids = ids, c.topk_weights = w;
    run(&s->ex, c, y + (size_t)e * M * K);
  }
}

/* The expected fold for token m over its (id, weight) pairs in the order given by `ascending`. */
static float fold(const setup *s, const float *y, int m, int k, int ascending, const int32_t *local_of) {
  float c = 0.0f;
  for (int step = 0; step < E; step++) {
    int e = ascending ? step : E - 1 - step;
    for (int j = 0; j < TOPK; j++) {
      int32_t id = s->ids[m * TOPK + j];
      if (id >= 0 && (local_of ? local_of[id] : id) == e) c = fmaf(y[((size_t)e * M + m) * K + k], s->w[m * TOPK + j], c);
    }
  }
  return c;
}

/* Distinct random ids per token; weights alternating in sign over six orders of magnitude, so the
 * f32 sum depends on its order. */
static void route(setup *s, kit_rng *r) {
  for (int m = 0; m < M; m++) {
    int used[E] = {0};
    for (int j = 0; j < TOPK; j++) {
      int32_t id;
      do id = (int32_t)kit_randint(r, E); while (used[id]);
      used[id] = 1;
      s->ids[m * TOPK + j] = id;
      s->w[m * TOPK + j] = (float)((j % 2 ? -1.0 : 1.0) * pow(10.0, (double)(j % 3) * 3.0 - 3.0) * (1.0 + kit_uniform(r)));
    }
  }
}

/* The same (id, weight) pairs, each token's list reversed. */
static void reverse_lists(const setup *s, int32_t *ids, float *w) {
  for (int m = 0; m < M; m++)
    for (int j = 0; j < TOPK; j++) ids[m * TOPK + j] = s->ids[m * TOPK + TOPK - 1 - j], w[m * TOPK + j] = s->w[m * TOPK + TOPK - 1 - j];
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

static void check_tier(setup *s, const char *tier) {
  static float y[E * M * K], out[M * K], out2[M * K], expect[M * K], descending[M * K];
  int32_t ids2[M * TOPK];
  float w2[M * TOPK];
  moe_call c = call_of(s);
  int differs = 0;
  expert_outputs(s, y);
  for (int m = 0; m < M; m++)
    for (int k = 0; k < K; k++) {
      expect[m * K + k] = fold(s, y, m, k, 1, NULL);
      descending[m * K + k] = fold(s, y, m, k, 0, NULL);
      differs += expect[m * K + k] != descending[m * K + k];
    }
  CHECK(differs > 0, "%s: the data does not make the order matter", tier);
  run(&s->ex, c, out);
  CHECK(same_bits(out, expect, M * K), "%s: routed sum is not the ascending-id fold", tier);

  reverse_lists(s, ids2, w2);
  c.topk_ids = ids2, c.topk_weights = w2;
  run(&s->ex, c, out2);
  CHECK(same_bits(out, out2, M * K), "%s: the router's listing order changed the result", tier);

  c = call_of(s);
  c.chunk_tokens = 2;
  run(&s->ex, c, out2);
  CHECK(same_bits(out, out2, M * K), "%s: chunks of 2 changed the result", tier);

  { /* a reversed expert map: global g is local E-1-g, so ascending local id is descending global id */
    int32_t map[E];
    moe_call cm = call_of(s);
    for (int g = 0; g < E; g++) map[g] = E - 1 - g;
    cm.expert_map = map, cm.n_global = E;
    run(&s->ex, cm, out2);
    for (int m = 0; m < M; m++)
      for (int k = 0; k < K; k++) expect[m * K + k] = fold(s, y, m, k, 1, map);
    CHECK(same_bits(out2, expect, M * K), "%s: with an expert map the sum is not in ascending local id", tier);
  }

  { /* shared expert: out = rsf * routed + shared, rounded once */
    static float shared[M * K];
    size_t bytes = 0;
    void *ws;
    moe_call cs = call_of(s);
    cs.out = shared;
    CHECK(moe_shared_expert_workspace_size(&s->sh, &cs, &bytes) == MOE_OK, "shared workspace");
    ws = test_malloc(bytes);
    CHECK(moe_shared_expert(&s->sh, &cs, NULL, ws, bytes, NULL) == MOE_OK, "shared expert");
    free(ws);
    cs = call_of(s);
    cs.shared = &s->sh, cs.routed_scaling_factor = 2.5f;
    run(&s->ex, cs, out2);
    for (int i = 0; i < M * K; i++) expect[i] = out[i] * 2.5f + shared[i];
    CHECK(same_bits(out2, expect, M * K), "%s: shared expert not added after the scaled routed sum", tier);
  }
  printf("%s: top-k sum in ascending expert id, bit for bit\n", tier);
}

int main(void) {
  static setup s;
  kit_rng r = kit_rng_stream(2026, 7);
  kit_weights_random(&s.kw, MOE_PREC_BF16, E, N, K, 11, KIT_BIAS);
  kit_weights_random(&s.ksh, MOE_PREC_BF16, 1, N, K, 12, 0);
  s.buf = kit_pack(&s.kw.w, &s.ex);
  s.shbuf = kit_pack(&s.ksh.w, &s.sh);
  kit_fill_normal(&r, s.x, M * K, 1.0);
  route(&s, &r);
  for (int isa = 0; isa < MOE_ISA_COUNT; isa++) {
    if (!moe_isa_available((moe_isa)isa)) continue;
    moe_set_isa((moe_isa)isa);
    check_tier(&s, moe_isa_name((moe_isa)isa));
  }
  moe_set_isa(MOE_ISA_COUNT);
  free(s.buf), free(s.shbuf);
  kit_weights_free(&s.kw), kit_weights_free(&s.ksh);
  return test_finish("order");
}

/* libFuzzer target: moe_fused_experts, moe_shared_expert and moe_forward with the call taken from the
 * input, over small random experts packed for it.
 *
 *   byte 0   precision (mod 7)          byte 8   flags: 1 in place, 2 expert map, 4 shared expert,
 *   byte 1   E (1..6)                                   8 shared gate, 16 workspace one byte short,
 *   byte 2   N (1..48)                                  32 parallel (a pool that runs i backwards),
 *   byte 3   K (1..80)                                  64 x and out one element off alignment,
 *   byte 4   M (0..9; 0..79 with the bits below)        128 routed is out (moe_shared_expert)
 *   byte 5   topk (0..E + 1)            byte 9   ldx, ldo: 0, K, K + 3 or K - 1 each (2 bits each)
 *   byte 6   dtype (0..3: one too many) byte 10  chunk_tokens (0..3), entry (bits 2-3: 0 fused,
 *   byte 7   act (0..3: one too many)            1 shared, 2 forward, 3 fused), router kind (bits 4-6),
 *                                               many tokens (bit 7, with byte 11's bit 4: several
 *                                               row blocks per expert)
 *   byte 11  routed_scaling_factor, alpha, limit: 0 or from the bytes after (bits 0-1), renormalize
 *            (bit 2), routed from x (bit 3), many tokens (bit 4)
 *   then     ids (a byte each: -2..E, past n_global with a map), weights, the map, x, the logits
 * (values (b - 128) / 64, zero past the input).
 *
 * Outputs, inputs and the workspace sit between guard regions. Beyond the sanitizers it checks what
 * moe.h promises: on an error status nothing is written (out, routed and the guards unchanged); on
 * MOE_OK nothing outside the out rows' first K elements changes, every output is finite and it
 * matches the scalar tier's result for the same call (within 1/32 of the largest output: the tiers
 * sum in other orders, and int8 requantizes h, whose codes may then differ by one).
 *
 * Build: tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#define FUZZ_NAME "fuzz_layer"
#include "fuzz_common.h" /* first: _POSIX_C_SOURCE, moe.h's implementation */

#include "../kit.h"

#define GUARD 64 /* bytes of poison on each side of a buffer */
#define POISON 0xA7

typedef struct input {
  const uint8_t *p;
  size_t n, at;
} input;
static int next_byte(input *in) { return in->at < in->n ? in->p[in->at++] : 0; }
static float next_value(input *in) { return (float)(next_byte(in) - 128) / 64.0f; }

/* A buffer of n bytes between two guard regions, all poisoned. */
static uint8_t *guarded(size_t n) {
  uint8_t *b = (uint8_t *)malloc(n + 2 * GUARD);
  FUZZ_CHECK(b != NULL, "malloc");
  memset(b, POISON, n + 2 * GUARD);
  return b + GUARD;
}
static void guarded_free(uint8_t *b) { free(b ? b - GUARD : NULL); }
static int guards_intact(const uint8_t *b, size_t n) {
  for (size_t i = 0; i < GUARD; i++)
    if (b[-1 - (ptrdiff_t)i] != POISON || b[n + i] != POISON) return 0;
  return 1;
}

static void store_value(void *base, moe_dtype dt, size_t i, float v) {
  if (dt == MOE_F32) ((float *)base)[i] = v;
  else if (dt == MOE_F16) ((uint16_t *)base)[i] = moe_f32_to_f16(v);
  else ((uint16_t *)base)[i] = moe_f32_to_bf16(v);
}
static float load_value(const void *base, moe_dtype dt, size_t i) {
  if (dt == MOE_F32) return ((const float *)base)[i];
  return dt == MOE_F16 ? moe_f16_to_f32(((const uint16_t *)base)[i]) : moe_bf16_to_f32(((const uint16_t *)base)[i]);
}

/* Small random experts, packed; NULL when moe_pack refuses the shape. */
static void *make_experts(moe_precision p, int64_t E, int64_t N, int64_t K, uint64_t seed, moe_experts *ex) {
  kit_weights kw;
  size_t n;
  void *buf;
  kit_weights_random_blocks(&kw, p, E, N, K, 0, p == MOE_PREC_FP8 ? 32 : 0, p == MOE_PREC_FP8 ? 0 : 32, seed,
                            KIT_BIAS);
  n = moe_pack_size(&kw.w);
  buf = n ? malloc(n) : NULL;
  if (buf && moe_pack(&kw.w, ex, buf, n) != MOE_OK) free(buf), buf = NULL;
  kit_weights_free(&kw);
  return buf;
}

typedef struct layer_call {
  int entry; /* 0 fused, 1 shared, 2 forward */
  const moe_experts *ex, *shared;
  moe_router router;
  const float *logits;
  moe_call c;
  const void *routed_src; /* routed input of moe_shared_expert (a copy of it is made per run) */
  int routed_is_out, in_place;
  size_t ws_size;
  const moe_parallel *par;
} layer_call;

/* Runs the call on a fresh copy of out0 (and of x when in place); returns the status, *out the result
 * buffer (guarded, out_bytes) and *ws_ok whether the workspace's guards held. */
static moe_status run_call(const layer_call *L, const uint8_t *out0, size_t out_bytes, const uint8_t *x0, size_t x_bytes,
                           size_t x_off, uint8_t **out, int *ws_ok) {
  uint8_t *o = guarded(out_bytes), *ws = guarded(L->ws_size), *xin = NULL;
  moe_call c = L->c;
  const void *routed = L->routed_src;
  moe_status st;
  memcpy(o, out0, out_bytes);
  if (L->in_place) {
    c.x = c.out = o + x_off;
  } else {
    xin = guarded(x_bytes);
    memcpy(xin, x0, x_bytes);
    c.x = xin + x_off, c.out = o + x_off;
  }
  if (L->routed_is_out) routed = c.out;
  if (L->entry == 1) st = moe_shared_expert(L->shared, &c, routed, ws, L->ws_size, L->par);
  else if (L->entry == 2) st = moe_forward(L->ex, &L->router, L->logits, MOE_F32, &c, ws, L->ws_size, L->par);
  else st = moe_fused_experts(L->ex, &c, ws, L->ws_size, L->par);
  *ws_ok = guards_intact(ws, L->ws_size);
  FUZZ_CHECK(xin == NULL || (guards_intact(xin, x_bytes) && !memcmp(xin, x0, x_bytes)), "x written (status %d)", (int)st);
  guarded_free(xin), guarded_free(ws);
  *out = o;
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size, 12};
  uint8_t h[12] = {0};
  memcpy(h, data, size < sizeof h ? size : sizeof h);
  const moe_precision p = (moe_precision)(h[0] % MOE_PREC_COUNT);
  const int64_t E = 1 + h[1] % 6, N = 1 + h[2] % 48, K = 1 + h[3] % 80;
  const int64_t M = (h[10] & 128) && (h[11] & 16) ? h[4] % 80 : h[4] % 10; /* many tokens: several row blocks */
  const int32_t topk = (int32_t)(h[5] % (E + 2));
  const moe_dtype dt = (moe_dtype)(h[6] % 4);
  const unsigned flags = h[8];
  const int64_t strides[4] = {0, K, K + 3, K - 1};
  const int64_t ldx = strides[h[9] & 3], ldo = flags & 1 ? ldx : strides[h[9] >> 2 & 3];
  const size_t elt = dt == MOE_F32 ? 4 : 2, off = flags & 64 ? elt : 0;
  const int64_t rx = ldx > 0 ? ldx : K, ro = ldo > 0 ? ldo : K; /* row strides as the library reads them */
  const size_t rows_x = (size_t)(M * (rx > K ? rx : K)), rows_o = (size_t)(M * (ro > K ? ro : K));
  const size_t x_bytes = (rows_x + 1) * elt + off, out_bytes = ((flags & 1 ? rows_x : rows_o) + 1) * elt + off;
  moe_experts ex, sh;
  void *ex_buf, *sh_buf = NULL;
  layer_call L;
  static const moe_parallel pool = {fuzz_backwards, NULL, 2};
  int32_t *ids, *map = NULL;
  float *w, *logits, *gate = NULL;
  uint8_t *x0, *out0, *out, *ref;
  moe_status st, st_ref;
  int ws_ok, ws_ok_ref;
  uint64_t seed = kit_mix((uint64_t)h[0] << 24 ^ (uint64_t)E << 16 ^ (uint64_t)N << 8 ^ (uint64_t)K);

  if (dt > MOE_F32 && (h[6] & 4)) return 0; /* keep the bad dtype to a quarter of its inputs */
  ex_buf = make_experts(p, E, N, K, seed, &ex);
  if (!ex_buf) return 0;
  if (flags & 4) sh_buf = make_experts(p, 1, 1 + (N + 7) % 40, K, seed ^ 1, &sh);

  memset(&L, 0, sizeof L);
  L.entry = (h[10] >> 2 & 3) % 3;
  L.ex = &ex, L.shared = sh_buf ? &sh : NULL;
  L.par = flags & 32 ? &pool : NULL;
  ids = (int32_t *)calloc((size_t)(M * topk) + 1, sizeof *ids);
  w = (float *)calloc((size_t)(M * topk) + 1, sizeof *w);
  FUZZ_CHECK(ids && w, "calloc");
  for (int64_t i = 0; i < M * topk; i++) ids[i] = next_byte(&in) % (int)(E + 3) - 2;
  for (int64_t i = 0; i < M * topk; i++) w[i] = next_value(&in);
  if (flags & 2) { /* a map from 2E global ids, some to no local expert */
    map = (int32_t *)calloc((size_t)(2 * E), sizeof *map);
    FUZZ_CHECK(map != NULL, "calloc");
    for (int64_t g = 0; g < 2 * E; g++) map[g] = next_byte(&in) % (int)(E + 2) - 1;
    for (int64_t i = 0; i < M * topk; i++) ids[i] = next_byte(&in) % (int)(2 * E + 2) - 1;
  }
  if (flags & 8) {
    gate = (float *)calloc((size_t)K, sizeof *gate);
    FUZZ_CHECK(gate != NULL, "calloc");
    for (int64_t k = 0; k < K; k++) gate[k] = next_value(&in) / 8;
  }
  x0 = guarded(x_bytes), out0 = guarded(out_bytes);
  for (size_t i = 0; i < (x_bytes - off) / elt; i++) store_value(x0 + off, dt > MOE_F32 ? MOE_BF16 : dt, i, next_value(&in));
  for (size_t i = 0; i < (out_bytes - off) / elt; i++) store_value(out0 + off, dt > MOE_F32 ? MOE_BF16 : dt, i, next_value(&in));
  if (flags & 1) memcpy(out0, x0, x_bytes < out_bytes ? x_bytes : out_bytes);
  logits = (float *)calloc((size_t)(M * E) + 1, sizeof *logits);
  FUZZ_CHECK(logits != NULL, "calloc");
  for (int64_t i = 0; i < M * E; i++) logits[i] = next_value(&in) * 4;

  L.in_place = flags & 1; /* run_call points x and out at fresh copies */
  L.c.dtype = dt, L.c.M = M, L.c.ldx = ldx, L.c.ldo = ldo, L.c.topk = topk;
  L.c.topk_weights = w, L.c.topk_ids = ids;
  L.c.expert_map = map, L.c.n_global = map ? (int32_t)(2 * E) : 0;
  L.c.act = (moe_activation)(h[7] % 4);
  L.c.chunk_tokens = h[10] & 3;
  if (h[11] & 1) L.c.routed_scaling_factor = next_value(&in);
  if (h[11] & 2) L.c.alpha = next_value(&in) + 2, L.c.limit = next_value(&in) + 3;
  L.c.shared = L.entry == 1 ? NULL : L.shared;
  L.c.shared_gate = gate;
  L.router.E = (int32_t)E, L.router.topk = topk, L.router.kind = (moe_route_kind)(h[10] >> 4 & 7);
  L.router.n_group = 1, L.router.renormalize = h[11] >> 2 & 1;
  L.logits = logits;
  L.routed_src = L.entry == 1 && (h[11] & 8) ? x0 + off : NULL; /* routed: another [M, K] (x's bytes) */
  L.routed_is_out = L.entry == 1 && (flags & 128);
  if (L.routed_src && ldo != ldx) L.routed_src = NULL; /* routed has out's stride */
  {
    size_t need = 0;
    moe_status sz = L.entry == 1   ? moe_shared_expert_workspace_size(L.shared, &L.c, &need)
                    : L.entry == 2 ? moe_forward_workspace_size(&ex, &L.router, &L.c, &need)
                                   : moe_workspace_size(&ex, &L.c, &need);
    L.ws_size = sz != MOE_OK ? 64 : (flags & 16) && need ? need - 1 : need;
  }

  st = run_call(&L, out0, out_bytes, x0, x_bytes, off, &out, &ws_ok);
  FUZZ_CHECK(ws_ok, "written outside the workspace (status %d)", (int)st);
  FUZZ_CHECK(guards_intact(out, out_bytes), "written outside out (status %d)", (int)st);
  if (st != MOE_OK) {
    FUZZ_CHECK(!memcmp(out, out0, out_bytes), "status %d (%s) and out written", (int)st, moe_status_str(st));
  } else {
    /* the same call on the scalar tier */
    const moe_isa top = moe_get_isa();
    double maxref = 0, maxdiff = 0;
    moe_set_isa(MOE_ISA_SCALAR);
    st_ref = run_call(&L, out0, out_bytes, x0, x_bytes, off, &ref, &ws_ok_ref);
    moe_set_isa(MOE_ISA_COUNT);
    FUZZ_CHECK(st_ref == MOE_OK && ws_ok_ref, "the scalar tier answers %d where %s answers MOE_OK", (int)st_ref, moe_isa_name(top));
    for (int64_t m = 0; m < M; m++)
      for (int64_t k = 0; k < (flags & 1 ? rx : ro) && M > 0; k++) {
        const size_t i = (size_t)(m * (flags & 1 ? rx : ro) + k);
        const uint8_t *o = out + off + i * elt, *o0 = out0 + off + i * elt;
        if (k >= K) { /* between rows: untouched */
          FUZZ_CHECK(!memcmp(o, o0, elt), "row %lld element %lld past K written", (long long)m, (long long)k);
          continue;
        }
        {
          const float a = load_value(out + off, dt, i), b = load_value(ref + off, dt, i);
          FUZZ_CHECK(isfinite(a) && isfinite(b), "row %lld col %lld: %g (%s) vs %g (scalar)", (long long)m, (long long)k,
                     (double)a, moe_isa_name(top), (double)b);
          if (fabs(b) > maxref) maxref = fabs(b);
          if (fabs(a - b) > maxdiff) maxdiff = fabs(a - b);
        }
      }
    FUZZ_CHECK(maxdiff <= (maxref > 1e-2 ? maxref : 1e-2) / 32, "%s %s: max diff %g vs the scalar tier, max %g",
               moe_precision_name(p), moe_isa_name(top), maxdiff, maxref);
    guarded_free(ref);
  }
  guarded_free(out), guarded_free(x0), guarded_free(out0);
  free(ids), free(w), free(map), free(gate), free(logits), free(ex_buf), free(sh_buf);
  return 0;
}

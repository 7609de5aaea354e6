/* libFuzzer target: moe_route with a router, a logit dtype and logits all taken from the input.
 *
 *   byte 0-1  E (1..1100: past the 1024 limit too)     byte 7     renormalize (bit 0), bias (bit 1)
 *   byte 2    topk (0..E + 1)                            byte 8-11  routed_scaling_factor (raw f32 bits)
 *   byte 3    kind (0..5: one out of range)              byte 12    logit dtype (0..3: one out of range)
 *   byte 4    n_group (0..8)                             byte 13    M (0..7)
 *   byte 5    topk_group (0..9)                          then       the bias [E] (raw f32 bits) if asked,
 *   byte 6    unused                                                then the logits (raw bits: NaN, Inf,
 *                                                                   subnormals, ties), zero past the input
 * The outputs sit between guard regions. Beyond the sanitizers it checks what moe_route.h promises:
 * nothing outside the outputs is written; on an error status nothing at all is; on MOE_OK every id is
 * in [0, E) and a token's ids are distinct, whatever the logits (NaN ranks below every number). And
 * moe_route_parallel (a pool that runs the parts in reverse) returns the same status and bits.
 *
 * Build: tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#define FUZZ_NAME "fuzz_route"
#include "fuzz_common.h" /* first: _POSIX_C_SOURCE, moe.h's implementation */

#define GUARD 16 /* elements of poison on each side of an output */

static float fuzz_f32(const uint8_t *p) {
  float f;
  memcpy(&f, p, 4);
  return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t head[14] = {0};
  moe_router r;
  moe_dtype dt;
  int64_t M, n_in;
  size_t elt, at;
  float *bias = NULL, *w, *w_ref;
  int32_t *ids, *ids_ref;
  uint8_t *logits;
  moe_status st;
  memcpy(head, data, size < sizeof head ? size : sizeof head);
  memset(&r, 0, sizeof r);
  r.E = 1 + (int32_t)((head[0] | head[1] << 8) % 1100);
  r.topk = (int32_t)(head[2] % (unsigned)(r.E + 2));
  r.kind = (moe_route_kind)(head[3] % 6);
  r.n_group = head[4] % 9, r.topk_group = head[5] % 10;
  r.renormalize = head[7] & 1;
  r.routed_scaling_factor = fuzz_f32(head + 8);
  dt = (moe_dtype)(head[12] % 4);
  M = head[13] % 8;
  at = sizeof head;
  if (head[7] & 2) {
    bias = (float *)calloc((size_t)r.E, sizeof *bias);
    FUZZ_CHECK(bias != NULL, "calloc");
    for (int32_t e = 0; e < r.E && at + 4 <= size; e++, at += 4) bias[e] = fuzz_f32(data + at);
    r.correction_bias = bias;
  }
  elt = dt == MOE_F32 ? 4 : 2;
  n_in = M * r.E;
  logits = (uint8_t *)calloc((size_t)(n_in ? n_in : 1), elt);
  FUZZ_CHECK(logits != NULL, "calloc");
  if (at < size) memcpy(logits, data + at, size - at < (size_t)n_in * elt ? size - at : (size_t)n_in * elt);
  {
    const size_t n_out = (size_t)(M * (r.topk > 0 ? r.topk : 0)) + 2 * GUARD;
    w = (float *)malloc(n_out * sizeof *w), w_ref = (float *)malloc(n_out * sizeof *w);
    ids = (int32_t *)malloc(n_out * sizeof *ids), ids_ref = (int32_t *)malloc(n_out * sizeof *ids);
    FUZZ_CHECK(w && w_ref && ids && ids_ref, "malloc");
    memset(w, 0xA5, n_out * sizeof *w), memset(ids, 0x5A, n_out * sizeof *ids);
    memcpy(w_ref, w, n_out * sizeof *w), memcpy(ids_ref, ids, n_out * sizeof *ids);
    st = moe_route(&r, logits, dt, M, w + GUARD, ids + GUARD);
    if (st != MOE_OK) {
      FUZZ_CHECK(!memcmp(w, w_ref, n_out * sizeof *w) && !memcmp(ids, ids_ref, n_out * sizeof *ids),
                 "status %d (%s) and outputs written", (int)st, moe_status_str(st));
    } else {
      FUZZ_CHECK(!memcmp(w, w_ref, GUARD * sizeof *w) && !memcmp(ids, ids_ref, GUARD * sizeof *ids), "written before the outputs");
      FUZZ_CHECK(!memcmp(w + n_out - GUARD, w_ref + n_out - GUARD, GUARD * sizeof *w) &&
                     !memcmp(ids + n_out - GUARD, ids_ref + n_out - GUARD, GUARD * sizeof *ids),
                 "written past the outputs");
      for (int64_t m = 0; m < M; m++)
        for (int32_t j = 0; j < r.topk; j++) {
          const int32_t id = ids[GUARD + m * r.topk + j];
          FUZZ_CHECK(id >= 0 && id < r.E, "token %lld slot %d: id %d outside [0, %d)", (long long)m, j, id, r.E);
          for (int32_t i = 0; i < j; i++) FUZZ_CHECK(ids[GUARD + m * r.topk + i] != id, "token %lld: id %d twice", (long long)m, id);
        }
    }
    { /* the parallel form: same status, same bits, nothing else written */
      const moe_parallel par = {fuzz_backwards, NULL, 3};
      float *w2 = (float *)malloc(n_out * sizeof *w);
      int32_t *ids2 = (int32_t *)malloc(n_out * sizeof *ids);
      moe_status st2;
      FUZZ_CHECK(w2 && ids2, "malloc");
      memcpy(w2, w_ref, n_out * sizeof *w), memcpy(ids2, ids_ref, n_out * sizeof *ids);
      st2 = moe_route_parallel(&r, logits, dt, M, w2 + GUARD, ids2 + GUARD, &par);
      FUZZ_CHECK(st2 == st, "moe_route_parallel: status %d, moe_route %d", (int)st2, (int)st);
      FUZZ_CHECK(!memcmp(w2, w, n_out * sizeof *w) && !memcmp(ids2, ids, n_out * sizeof *ids),
                 "moe_route_parallel: outputs differ from moe_route's");
      free(w2), free(ids2);
    }
  }
  fuzz_sink ^= (uint8_t)st;
  free(bias), free(logits), free(w), free(w_ref), free(ids), free(ids_ref);
  return 0;
}

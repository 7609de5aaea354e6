/* bench_layer.h — what bench_layer's driver shares with its peer: one layer call's inputs, and the
 * peer's interface. bench_peer_onednn.c implements it when oneDNN is found; bench_peer_none.c (no
 * peer) otherwise. */
#ifndef BENCH_LAYER_H
#define BENCH_LAYER_H

#include "bench_common.h"

#define BENCH_WEIGHT_FLAGS KIT_CODES /* random codes and scales: no f32 copy of the experts */

/* One M: x, and a fresh routing per round, as every decode step routes afresh: a round does not
 * find the experts of the round before in the caches. */
typedef struct layer_case {
  int64_t M, K, E;
  int32_t topk;
  int n_routes;
  uint16_t *x;              /* [M, K] bf16 */
  uint16_t *out, *out_peer; /* [M, K] bf16 */
  int32_t *all_ids;         /* [n_routes][M, topk] distinct experts per token */
  float *all_weights;       /* [n_routes][M, topk] positive, summing to 1 per token */
  int64_t *all_hit;         /* [n_routes] distinct experts in each routing */
  const int32_t *ids;       /* the routing in use (case_use_route) */
  const float *weights;
  int64_t experts_hit;
} layer_case;

/* The experts of one precision: experts 0..E-1 of kit_weights_random_blocks(p, E, N, K, block_n,
 * block_k, group, seed, BENCH_WEIGHT_FLAGS), the plain weights both layers are built from. */
typedef struct bench_weights {
  moe_precision p;
  int64_t E, N, K;
  int32_t block_n, block_k; /* fp8 scale blocks (128 x 128 unless the model says otherwise) */
  int32_t group;            /* int4 group along k (128); mxfp4 has a fixed 32 */
  uint64_t seed;
} bench_weights;

/* The same layer written on another library, as an engine would, on the same weights. bf16 and
 * int8 run natively; fp16 weights are converted to bf16 at load, and the low-bit precisions (fp8,
 * int4-w4a8, int4-w4a16, mxfp4) are dequantized to bf16 at load and run on the bf16 path: what an
 * engine without low-bit kernels does. */
typedef struct peer peer;

extern const char *const peer_name; /* "onednn", or NULL when built without a peer */
int peer_supports(moe_precision p);
/* Bytes the peer keeps per expert (its prepacked weights), for the memory budget; 0 without a peer. */
double peer_expert_bytes(moe_precision p, int64_t N, int64_t K);
/* What the peer's weights are: "bf16", "bf16-converted" (fp16), "int8", "bf16-dequantized". */
const char *peer_weights_kind(moe_precision p);
peer *peer_create(const bench_weights *w, int32_t topk, int64_t max_m);
void peer_prepare(peer *P, const layer_case *c); /* untimed setup for the case's row counts */
double peer_timed(peer *P, const layer_case *c); /* seconds of one layer; output in c->out_peer */
const char *peer_impl(const peer *P);            /* the library's implementation name */
void peer_destroy(peer *P);
void peer_set_threads(int n);
/* Sets the peer runtime's wait policy before it loads (may re-execute the program with argv). */
void peer_wait_policy(char **argv);
const char *peer_wait_policy_name(void);

#endif /* BENCH_LAYER_H */

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

/* The same layer written on another library, as an engine would, on the same weights: experts
 * 0..E-1 of kit_weights_random(p, E, N, K, seed, BENCH_WEIGHT_FLAGS). */
typedef struct peer peer;

extern const char *const peer_name; /* "onednn", or NULL when built without a peer */
int peer_supports(moe_precision p);
peer *peer_create(moe_precision p, int64_t E, int64_t N, int64_t K, int32_t topk, int64_t max_m, uint64_t seed);
void peer_prepare(peer *P, const layer_case *c); /* untimed setup for the case's row counts */
double peer_timed(peer *P, const layer_case *c); /* seconds of one layer; output in c->out_peer */
const char *peer_impl(const peer *P);            /* the library's implementation name */
void peer_destroy(peer *P);
void peer_set_threads(int n);
/* Sets the peer runtime's wait policy before it loads (may re-execute the program with argv). */
void peer_wait_policy(char **argv);
const char *peer_wait_policy_name(void);

#endif /* BENCH_LAYER_H */

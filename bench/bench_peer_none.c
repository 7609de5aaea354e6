/* bench_peer_none.c — no peer (built without oneDNN): bench_layer reports "vs":"none". */
#include "bench_layer.h"

#include <stddef.h>

const char *const peer_name = NULL;
int peer_supports(moe_precision p) { return (void)p, 0; }
double peer_expert_bytes(moe_precision p, int64_t N, int64_t K) { return (void)p, (void)N, (void)K, 0.0; }
const char *peer_weights_kind(moe_precision p) { return (void)p, NULL; }
peer *peer_create(const bench_weights *w, int32_t topk, int64_t max_m) {
  (void)w, (void)topk, (void)max_m;
  return NULL;
}
void peer_prepare(peer *P, const layer_case *c) { (void)P, (void)c; }
double peer_timed(peer *P, const layer_case *c) { return (void)P, (void)c, 0.0; }
const char *peer_impl(const peer *P) { return (void)P, NULL; }
void peer_destroy(peer *P) { (void)P; }
void peer_set_threads(int n) { (void)n; }
void peer_wait_policy(char **argv) { (void)argv; }
const char *peer_wait_policy_name(void) { return NULL; }

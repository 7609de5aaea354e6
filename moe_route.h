/* moe_route.h — gating (top-k softmax, top-k sigmoid, grouped and bias-corrected grouped top-k),
 * sorting of token slots into expert row blocks, and expert maps for expert parallelism.
 *
 * Part of moe.h; see moe.h's top comment for the configuration macros and the whole contract.
 */
#ifndef MOE_ROUTE_H
#define MOE_ROUTE_H

#include "moe_quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum moe_route_kind {
  MOE_ROUTE_SOFTMAX = 0,        /* Mixtral, Qwen: softmax over E in f32, then top-k               */
  MOE_ROUTE_SIGMOID = 1,        /* Llama-4: top-k by logit, weight = sigmoid(logit)               */
  MOE_ROUTE_GROUPED = 2,        /* DeepSeek-V2: softmax; groups ranked by their max; top-k inside */
  MOE_ROUTE_BIASED_GROUPED = 3  /* DeepSeek-V3/R1, Kimi-K2: sigmoid + correction bias, groups by
                                   the sum of their top-2 biased scores; weights are unbiased      */
} moe_route_kind;

/* Zero-initialised means: softmax, no renormalize, routed scaling factor 1, one group. */
typedef struct moe_router {
  int32_t E;                     /* experts, 1..1024 (an integer first: `= {0}` works in C and C++) */
  int32_t topk;                  /* 1..E                                                           */
  moe_route_kind kind;
  int32_t n_group;               /* grouped variants: groups (0 means 1); must divide E            */
  int32_t topk_group;            /* grouped variants: groups kept (0 means all)                    */
  int32_t renormalize;           /* nonzero: divide the chosen weights by their sum                */
  float routed_scaling_factor;   /* multiplies the returned weights; 0 means 1                     */
  const float *correction_bias;  /* biased grouped: [E], required                                  */
} moe_router;

/* Routes M tokens from logits [M, E] (f32, bf16 or fp16; row-major) to topk_weights [M, topk] (f32)
 * and topk_ids [M, topk] (int32), in descending order of the selection score. Ties go to the lower
 * expert id; a NaN score ranks below every number, so the ids are always distinct and in [0, E).
 * M = 0 is a no-op. Invalid configuration returns a status before anything is written:
 *   MOE_ERR_NULL   cfg, logits or an output is NULL (and M > 0)
 *   MOE_ERR_SHAPE  M < 0, E outside 1..1024, topk outside 1..E, M * E overflowing int64
 *   MOE_ERR_ARG    kind or logit_type out of range, routed_scaling_factor not finite; grouped
 *                  variants: n_group not dividing E, topk_group outside 0..n_group, topk more than
 *                  the experts of the kept groups, biased without correction_bias
 * Renormalize divides by the sum of the chosen weights (skipped when that sum is 0); then every
 * weight is multiplied by the routed scaling factor. Nothing is allocated. */
MOE_API moe_status moe_route(const moe_router *cfg, const void *logits, moe_dtype logit_type, int64_t M,
                             float *topk_weights, int32_t *topk_ids);

/* ---- sorting slots into expert row blocks ------------------------------------------------------
 * Slot i = m * topk + j. A stable counting sort groups the slots by local expert (ascending i within
 * an expert); each expert's run is padded to a multiple of block_m with the value M * topk. Block b
 * covers sorted_slots[b*block_m .. b*block_m + block_m) and holds block_expert[b] and
 * block_rows[b] (valid rows, 1..block_m). Ids are global; with expert_map (n_global entries, global
 * id -> local id in [0, E) or -1) they become local; without it n_global must equal E. A (mapped) id
 * of -1 is skipped. An id >= n_global or < -1, or a map entry >= E or < -1, returns
 * MOE_ERR_EXPERT_ID before anything is written.
 *
 *   sorted_slots: moe_sort_capacity(M, topk, E, block_m) entries
 *   block_expert, block_rows: moe_sort_capacity(...) / block_m entries each
 *   scratch: E + 1 int32 entries
 * Statuses: MOE_ERR_NULL (a pointer is NULL; with M = 0 only n_blocks is needed), MOE_ERR_SHAPE
 * (M < 0, topk, E, block_m or n_global < 1, n_global != E without a map, or moe_sort_capacity() would
 * return 0), MOE_ERR_EXPERT_ID (above). Experts without slots get no block; *n_blocks counts blocks.
 *
 * moe_sort_capacity: M*topk + min(E, M*topk)*(block_m - 1) rounded up to a multiple of block_m, at
 * least block_m (so no buffer is empty); 0 for invalid sizes or more than INT32_MAX entries.      */
MOE_API size_t moe_sort_capacity(int64_t M, int32_t topk, int32_t E, int32_t block_m);
MOE_API moe_status moe_sort_slots(const int32_t *topk_ids, int64_t M, int32_t topk, int32_t E,
                                  const int32_t *expert_map, int32_t n_global, int32_t block_m,
                                  int32_t *scratch, int32_t *sorted_slots, int32_t *block_expert,
                                  int32_t *block_rows, int64_t *n_blocks);

/* Builds the expert map of one rank of an expert-parallel group: experts
 * [rank * E_local, (rank + 1) * E_local) are local (E_local = ceil(n_global / n_ranks)); all others
 * map to -1. map has n_global entries. Returns the local expert count through *E_local. E_local is
 * the same on every rank, so packed expert buffers have one size; when n_ranks does not divide
 * n_global the last rank(s) own fewer real experts (possibly none), and their tail of local ids
 * simply never occurs. Statuses: MOE_ERR_NULL (map or E_local NULL), MOE_ERR_SHAPE (n_global < 1,
 * n_ranks outside 1..n_global), MOE_ERR_ARG (rank outside 0..n_ranks-1). */
MOE_API moe_status moe_expert_map_contiguous(int32_t n_global, int32_t n_ranks, int32_t rank, int32_t *map,
                                             int32_t *E_local);

#ifdef __cplusplus
}
#endif

#ifdef MOE_IMPLEMENTATION
#ifndef MOE_ROUTE_IMPLEMENTATION_DONE
#define MOE_ROUTE_IMPLEMENTATION_DONE
/* ==== moe_route.h implementation ==== */
#include <math.h>
#include <string.h>

#define MOE__ROUTE_MAX_E 1024

/* Per-token working set of moe_route: fixed size, on the stack (E <= 1024, nothing allocated). */
typedef struct moe__route_buf {
  float x[MOE__ROUTE_MAX_E];       /* logits in f32; sigmoid scores for the biased variant */
  float key[MOE__ROUTE_MAX_E];     /* selection score of each expert                       */
  float gkey[MOE__ROUTE_MAX_E];    /* score of each group                                  */
  uint64_t top[MOE__ROUTE_MAX_E];  /* chosen experts' ranks (moe__route_rank), best first  */
  uint64_t gtop[MOE__ROUTE_MAX_E]; /* kept groups' ranks, best first                       */
} moe__route_buf;

/* Checked configuration: groups (n_group, kept) and the effective routed scaling factor. */
typedef struct moe__route_cfg {
  int32_t G, TG;
  float rsf;
} moe__route_cfg;

/* The selection order as one integer, the larger first: the larger score, NaN below every number
 * (-0 and +0 equal), ties to the lower id. A strict total order over distinct ids, so a selection
 * never depends on visiting order; one integer compare per candidate.
 *
 *   bits 63..32: the score's bits made monotonic (NaN 0)   bits 31..0: ~id */
static inline uint64_t moe__route_rank(float score, int32_t id) {
  uint32_t u = 0;
  if (score == score) {
    score = score == 0.0f ? 0.0f : score;
    memcpy(&u, &score, sizeof u);
    u = u >> 31 ? ~u : u | 0x80000000u;
  }
  return (uint64_t)u << 32 | (uint32_t)~(uint32_t)id;
}
static inline int32_t moe__rank_id(uint64_t rank) { return (int32_t)~(uint32_t)rank; }

/* Offers a rank to top[0..n), kept sorted best first and capped at k entries; returns the new count. */
static inline int32_t moe__topk_push(uint64_t *top, int32_t n, int32_t k, uint64_t rank) {
  int32_t i;
  if (n == k) {
    if (rank <= top[k - 1]) return n;
    n--; /* the last one drops out */
  }
  for (i = n; i > 0 && top[i - 1] < rank; i--) top[i] = top[i - 1];
  top[i] = rank;
  return n + 1;
}

static inline float moe__sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Softmax in f32; the denominator is accumulated in double and each probability rounded once.
 * A NaN logit makes every probability NaN (as in PyTorch); selection still returns valid ids. */
static inline void moe__softmax(const float *x, int32_t n, float *p) {
  float mx = -INFINITY;
  double sum = 0.0;
  int32_t i;
  for (i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  for (i = 0; i < n; i++) sum += (double)(p[i] = expf(x[i] - mx));
  for (i = 0; i < n; i++) p[i] = (float)((double)p[i] / sum);
}

/* Score of the group key[lo .. lo+n): its best key (DeepSeek-V2) or, with top2, the sum of its best
 * two (DeepSeek-V3; a one-expert group scores its only key). "Best" follows moe__route_rank. */
static inline float moe__group_score(const float *key, int32_t lo, int32_t n, int top2) {
  uint64_t b1 = moe__route_rank(key[lo], lo), b2 = 0, r;
  int32_t e;
  for (e = lo + 1; e < lo + n; e++) {
    r = moe__route_rank(key[e], e);
    if (r > b1) b2 = b1, b1 = r;
    else if (r > b2) b2 = r;
  }
  return top2 && n > 1 ? key[moe__rank_id(b1)] + key[moe__rank_id(b2)] : key[moe__rank_id(b1)];
}

static inline void moe__load_logits(const void *logits, moe_dtype t, int64_t off, int32_t n, float *x) {
  int32_t i;
  if (t == MOE_F32) {
    memcpy(x, (const float *)logits + off, (size_t)n * sizeof *x);
  } else {
    const uint16_t *h = (const uint16_t *)logits + off;
    for (i = 0; i < n; i++) x[i] = t == MOE_BF16 ? moe_bf16_to_f32(h[i]) : moe_f16_to_f32(h[i]);
  }
}

/* Fills b->key with the selection scores from the logits in b->x (biased: b->x becomes sigmoid). */
static inline void moe__route_scores(const moe_router *cfg, moe__route_buf *b) {
  int32_t e;
  switch (cfg->kind) {
  case MOE_ROUTE_SIGMOID: memcpy(b->key, b->x, (size_t)cfg->E * sizeof *b->key); break;
  case MOE_ROUTE_BIASED_GROUPED:
    for (e = 0; e < cfg->E; e++) {
      b->x[e] = moe__sigmoid(b->x[e]);
      b->key[e] = b->x[e] + cfg->correction_bias[e];
    }
    break;
  default: moe__softmax(b->x, cfg->E, b->key); break;
  }
}

/* Chooses b->top[0..topk): the best experts by key among the topk_group best groups. */
static inline void moe__route_select(const moe_router *cfg, const moe__route_cfg *c, moe__route_buf *b) {
  int32_t gsize = cfg->E / c->G, n = 0, ng = 0, g, e;
  if (c->TG == c->G) { /* every group kept: no group scores needed */
    for (e = 0; e < cfg->E; e++) n = moe__topk_push(b->top, n, cfg->topk, moe__route_rank(b->key[e], e));
    return;
  }
  for (g = 0; g < c->G; g++)
    b->gkey[g] = moe__group_score(b->key, g * gsize, gsize, cfg->kind == MOE_ROUTE_BIASED_GROUPED);
  for (g = 0; g < c->G; g++) ng = moe__topk_push(b->gtop, ng, c->TG, moe__route_rank(b->gkey[g], g));
  for (g = 0; g < c->TG; g++)
    for (e = moe__rank_id(b->gtop[g]) * gsize; e < (moe__rank_id(b->gtop[g]) + 1) * gsize; e++)
      n = moe__topk_push(b->top, n, cfg->topk, moe__route_rank(b->key[e], e));
}

/* Writes the chosen ids and weights: softmax probability, sigmoid(logit) or the unbiased sigmoid
 * score; renormalized by their f32 sum (skipped when it is 0), then times the scaling factor. */
static inline void moe__route_output(const moe_router *cfg, const moe__route_cfg *c, const moe__route_buf *b,
                                     float *w, int32_t *ids) {
  float sum = 0.0f, scale;
  int32_t j;
  for (j = 0; j < cfg->topk; j++) {
    int32_t id = moe__rank_id(b->top[j]);
    ids[j] = id;
    w[j] = cfg->kind == MOE_ROUTE_SIGMOID ? moe__sigmoid(b->x[id])
           : cfg->kind == MOE_ROUTE_BIASED_GROUPED ? b->x[id] : b->key[id];
    sum += w[j];
  }
  scale = cfg->renormalize && sum > 0.0f ? c->rsf / sum : c->rsf;
  for (j = 0; j < cfg->topk; j++) w[j] *= scale;
}

static inline moe_status moe__route_check(const moe_router *cfg, moe_dtype t, int64_t M, moe__route_cfg *c) {
  int kind = (int)cfg->kind;
  float r = cfg->routed_scaling_factor;
  if (cfg->E < 1 || cfg->E > MOE__ROUTE_MAX_E || cfg->topk < 1 || cfg->topk > cfg->E || M > INT64_MAX / cfg->E)
    return MOE_ERR_SHAPE;
  if (kind < 0 || kind > MOE_ROUTE_BIASED_GROUPED || (int)t < 0 || (int)t > MOE_F32 || !(r - r == 0.0f))
    return MOE_ERR_ARG; /* r - r is NaN only for NaN and Inf */
  c->rsf = r == 0.0f ? 1.0f : r;
  c->G = c->TG = 1;
  if (kind < MOE_ROUTE_GROUPED) return MOE_OK;
  c->G = cfg->n_group == 0 ? 1 : cfg->n_group;
  c->TG = cfg->topk_group == 0 ? c->G : cfg->topk_group;
  if (c->G < 1 || cfg->E % c->G != 0 || c->TG < 1 || c->TG > c->G || cfg->topk > c->TG * (cfg->E / c->G))
    return MOE_ERR_ARG;
  if (kind == MOE_ROUTE_BIASED_GROUPED && !cfg->correction_bias) return MOE_ERR_ARG;
  return MOE_OK;
}

MOE_API moe_status moe_route(const moe_router *cfg, const void *logits, moe_dtype logit_type, int64_t M,
                             float *topk_weights, int32_t *topk_ids) {
  moe__route_buf b;
  moe__route_cfg c;
  moe_status st;
  int64_t m;
  if (M < 0) return MOE_ERR_SHAPE;
  if (M > 0 && (!cfg || !logits || !topk_weights || !topk_ids)) return MOE_ERR_NULL;
  if (!cfg) return MOE_OK;
  st = moe__route_check(cfg, logit_type, M, &c);
  if (st != MOE_OK) return st;
  for (m = 0; m < M; m++) {
    moe__load_logits(logits, logit_type, m * cfg->E, cfg->E, b.x);
    moe__route_scores(cfg, &b);
    moe__route_select(cfg, &c, &b);
    moe__route_output(cfg, &c, &b, topk_weights + m * cfg->topk, topk_ids + m * cfg->topk);
  }
  return MOE_OK;
}

/* ---- sorting ---------------------------------------------------------------------------------- */

/* Padded entries needed by moe_sort_slots, or -1 for invalid sizes or when the entries (and the
 * padding value M * topk) would not fit int32. At most min(E, M*topk) experts receive slots, and
 * each wastes at most block_m - 1 entries of padding. */
static inline int64_t moe__sort_bound(int64_t M, int32_t topk, int32_t E, int32_t block_m) {
  int64_t slots, hit, n;
  if (M < 0 || topk < 1 || E < 1 || block_m < 1 || M > INT32_MAX / topk) return -1;
  slots = M * topk;
  hit = slots < E ? slots : E;
  n = (slots + hit * (block_m - 1) + block_m - 1) / block_m * block_m;
  if (n < block_m) n = block_m;
  return n <= INT32_MAX ? n : -1;
}

MOE_API size_t moe_sort_capacity(int64_t M, int32_t topk, int32_t E, int32_t block_m) {
  int64_t n = moe__sort_bound(M, topk, E, block_m);
  return n < 0 || (uint64_t)n > SIZE_MAX / sizeof(int32_t) ? 0 : (size_t)n;
}

/* Local expert of a slot: -1 (skip) stays -1; the map, when given, turns a global id local. */
static inline int32_t moe__local_id(int32_t id, const int32_t *expert_map) {
  return id < 0 || !expert_map ? id : expert_map[id];
}

/* Every map entry in [-1, E) and every id in [-1, n_global): checked before anything is written. */
static inline moe_status moe__sort_validate(const int32_t *ids, int64_t n, const int32_t *expert_map,
                                            int32_t n_global, int32_t E) {
  int64_t i;
  if (expert_map)
    for (i = 0; i < n_global; i++)
      if (expert_map[i] < -1 || expert_map[i] >= E) return MOE_ERR_EXPERT_ID;
  for (i = 0; i < n; i++)
    if (ids[i] < -1 || ids[i] >= n_global) return MOE_ERR_EXPERT_ID;
  return MOE_OK;
}

MOE_API moe_status moe_sort_slots(const int32_t *topk_ids, int64_t M, int32_t topk, int32_t E,
                                  const int32_t *expert_map, int32_t n_global, int32_t block_m,
                                  int32_t *scratch, int32_t *sorted_slots, int32_t *block_expert,
                                  int32_t *block_rows, int64_t *n_blocks) {
  int64_t i, n, r, pos = 0, nb = 0;
  int32_t e;
  moe_status st;
  if (!n_blocks || (M > 0 && (!topk_ids || !scratch || !sorted_slots || !block_expert || !block_rows)))
    return MOE_ERR_NULL;
  if (moe__sort_bound(M, topk, E, block_m) < 0 || n_global < 1 || (!expert_map && n_global != E))
    return MOE_ERR_SHAPE;
  n = M * topk;
  st = moe__sort_validate(topk_ids, n, expert_map, n_global, E);
  if (st != MOE_OK || n == 0) {
    if (st == MOE_OK) *n_blocks = 0;
    return st;
  }
  memset(scratch, 0, ((size_t)E + 1) * sizeof *scratch);
  for (i = 0; i < n; i++) {
    int32_t l = moe__local_id(topk_ids[i], expert_map);
    if (l >= 0) scratch[l]++;
  }
  /* Lay out the blocks in expert order; scratch[e] turns from a count into the write position. */
  for (e = 0; e < E; e++) {
    int32_t cnt = scratch[e];
    int64_t end = pos + ((int64_t)cnt + block_m - 1) / block_m * block_m;
    for (r = 0; r < cnt; r += block_m, nb++) {
      block_expert[nb] = e;
      block_rows[nb] = cnt - r < block_m ? (int32_t)(cnt - r) : block_m;
    }
    for (i = pos + cnt; i < end; i++) sorted_slots[i] = (int32_t)n; /* padding */
    scratch[e] = (int32_t)pos;
    pos = end;
  }
  scratch[E] = (int32_t)pos; /* total entries, padding included */
  for (i = 0; i < n; i++) { /* ascending i: the sort is stable */
    int32_t l = moe__local_id(topk_ids[i], expert_map);
    if (l >= 0) sorted_slots[scratch[l]++] = (int32_t)i;
  }
  *n_blocks = nb;
  return MOE_OK;
}

MOE_API moe_status moe_expert_map_contiguous(int32_t n_global, int32_t n_ranks, int32_t rank, int32_t *map,
                                             int32_t *E_local) {
  int64_t lo, g;
  int32_t el;
  if (!map || !E_local) return MOE_ERR_NULL;
  if (n_global < 1 || n_ranks < 1 || n_ranks > n_global) return MOE_ERR_SHAPE;
  if (rank < 0 || rank >= n_ranks) return MOE_ERR_ARG;
  el = n_global / n_ranks + (n_global % n_ranks != 0);
  lo = (int64_t)rank * el;
  for (g = 0; g < n_global; g++) map[g] = g >= lo && g < lo + el ? (int32_t)(g - lo) : -1;
  *E_local = el;
  return MOE_OK;
}

#endif
#endif
#endif /* MOE_ROUTE_H */

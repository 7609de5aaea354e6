/* moe.h — fused Mixture-of-Experts layers for x86 CPUs, header-only.
 *
 * USE
 *   In exactly one C or C++ file:      #define MOE_IMPLEMENTATION
 *                                      #include "moe.h"
 *   Everywhere else include moe.h without the define and link that object (or libmoe, built by
 *   Meson from moe.c). Define MOE_IMPLEMENTATION before the first include of any moe header.
 *
 * CONFIGURATION MACROS (define before including)
 *   | macro               | effect                                                              |
 *   |---------------------|---------------------------------------------------------------------|
 *   | MOE_IMPLEMENTATION  | include the definitions (once per program, or per TU as static)     |
 *   | MOE_API             | linkage of public functions (default: static inline with the        |
 *   |                     | implementation, extern without it); `#define MOE_API` exports them  |
 *   | MOE_NO_BF16         | remove BF16 and FP16 precisions                                     |
 *   | MOE_NO_INT8         | remove INT8 W8A8                                                    |
 *   | MOE_NO_FP8          | remove FP8 W8A16                                                    |
 *   | MOE_NO_INT4         | remove INT4 W4A8 and W4A16                                          |
 *   | MOE_NO_MXFP4        | remove MXFP4                                                        |
 *   | MOE_NO_AVX512       | remove the AVX-512 kernels (and AMX)                                |
 *   | MOE_NO_AMX          | remove the AMX tier (never ask the OS for tile state)               |
 *   | MOE_NO_AVX2         | remove the AVX2 and AVX-VNNI kernels (and AWQ import's AVX2 path)   |
 *   | MOE_DEFAULT_CHUNK   | tokens per chunk when moe_call.chunk_tokens is 0 (default 1024)     |
 *   | MOE_AMX_DEFAULT_CHUNK | the same on the AMX tier (default 2048: weights stream once per  |
 *   |                     | chunk, and the tiles make more rows per expert pay)                 |
 *   | MOE_AMX_EMULATE     | run the AMX tier on a C model of the tiles (tests on any x86)       |
 *   | MOE_AMX_MIN_ROWS    | AMX tier: blocks with fewer rows run AVX-512 (default 4; W4A8 8,    |
 *   |                     | measured)                                                           |
 *   A call for a precision compiled out returns MOE_ERR_UNSUPPORTED.
 *
 * CONTRACT
 *   - Pack weights once (moe_pack_size, moe_pack in moe_gemm.h); the packed moe_experts is
 *     read-only and shared by every thread and call.
 *   - Per forward pass: route (moe_route in moe_route.h), ask moe_workspace_size(), hand a workspace
 *     of at least that many bytes (any alignment) to moe_fused_experts(). Nothing is allocated.
 *     Large M is processed in chunks of chunk_tokens tokens, so the workspace stays bounded.
 *   - Threads: pass a moe_parallel whose parallel_for runs fn(arg, i) for every i in [0, n) and
 *     returns when all are done: any pool of OS threads, in any order. Running the tasks one after
 *     the other on the calling thread, in any order, is also valid (the first task does all the
 *     work). Tasks running at the same time may wait for each other's progress, so a pool of
 *     cooperative fibers sharing one thread is not. With none, OpenMP is used when compiled with
 *     it, else the call runs serially. The output is bitwise identical for any thread count and
 *     chunk.
 *   - Lifetimes: moe_pack() may be followed by freeing the plain weights; the packed moe_experts
 *     points into the pack buffer, which must stay alive and unmoved while it is used. A call
 *     reads its arguments (x, ids, weights, expert map, the shared expert and its pack buffer,
 *     the workspace) only while it runs and keeps nothing; the workspace is reusable.
 *   - Every argument is validated before any output is written; a status names what was wrong.
 *   - Numerics: f32 accumulation. A token's routed sum runs over its experts in ascending local
 *     expert id (the index into the packed experts), whatever order the router lists them in
 *     (equal ids: in listing order), one f32 fused multiply-add each: c = fma(y_e + b2_e, w_e, c).
 *     Then rsf * c, plus the shared expert, rounded once to the output type.
 *   - FFI: moe_experts_size() gives the bytes of a moe_experts for bindings that treat it as an
 *     opaque block; moe_version() names the implementation linked.
 *
 * EXAMPLE
 *   moe_experts ex; void *buf = malloc(moe_pack_size(&w)); moe_pack(&w, &ex, buf, moe_pack_size(&w));
 *   // buf must outlive ex
 *   moe_call c = MOE_ZERO_INIT; c.x = x; c.out = out; c.M = M; c.topk = 8;
 *   c.topk_weights = tw; c.topk_ids = ids;             // from moe_route()
 *   size_t ws_size; moe_workspace_size(&ex, &c, &ws_size); void *ws = malloc(ws_size);
 *   moe_status s = moe_fused_experts(&ex, &c, ws, ws_size, NULL);
 */
#ifndef MOE_H
#define MOE_H

#include "moe_quant.h"
#include "moe_import.h"
#include "moe_route.h"
#include "moe_gemm.h"

#ifndef MOE_DEFAULT_CHUNK
#define MOE_DEFAULT_CHUNK 1024
#endif
#ifndef MOE_AMX_DEFAULT_CHUNK
#define MOE_AMX_DEFAULT_CHUNK 2048
#endif
#define MOE_VERSION_MAJOR 0
#define MOE_VERSION_MINOR 2
#define MOE_VERSION_PATCH 0
#define MOE_VERSION_STRING "0.2.0"

#ifdef __cplusplus
extern "C" {
#endif


/* Phases of a layer call, for moe_stats. */
typedef enum moe_phase {
  MOE_PHASE_PREPARE = 0, /* x converted or quantized per token, shared gate                     */
  MOE_PHASE_SORT = 1,    /* slots sorted into expert row blocks                                 */
  MOE_PHASE_GEMM1 = 2,   /* gate/up GEMM with the activation                                    */
  MOE_PHASE_REQUANT = 3, /* h converted or quantized per slot                                   */
  MOE_PHASE_GEMM2 = 4,   /* down GEMM with bias and top-k weight                                */
  MOE_PHASE_COMBINE = 5, /* top-k sum, shared expert, routed scale, rounding                    */
  MOE_PHASE_COUNT = 6
} moe_phase;

/* Optional per-phase wall time: the library calls clock() (seconds, any epoch) around each phase
 * and adds the differences to seconds[]; the caller zeroes it. GEMM1, REQUANT and GEMM2 overlap in
 * one parallel region: its wall time is split among them in proportion to the threads' time in
 * each (waiting for an expert's h counts as REQUANT). */
typedef struct moe_stats {
  double (*clock)(void);
  double seconds[MOE_PHASE_COUNT];
} moe_stats;

/* One call's tensors. Zero-initialised fields mean defaults. */
typedef struct moe_call {
  const void *x;                /* [M, K] activations of type dtype, row stride ldx              */
  void *out;                    /* [M, K] output of type dtype, row stride ldo; may equal x      */
  moe_dtype dtype;              /* bf16 (default), fp16 or f32                                   */
  int64_t M;                    /* tokens; 0 is a no-op                                          */
  int64_t ldx, ldo;             /* row strides in elements; 0 means K                            */
  int32_t topk;                 /* experts per token, 1..E (or 1..n_global with a map)           */
  const float *topk_weights;    /* [M, topk]                                                     */
  const int32_t *topk_ids;      /* [M, topk] global ids; -1 = skip                               */
  const int32_t *expert_map;    /* optional [n_global]: global id -> local id or -1              */
  int32_t n_global;             /* experts in the whole model when expert_map is set (0: E)     */
  moe_activation act;
  float alpha, limit;           /* SWIGLU_OAI; 0 means 1.702 and 7.0                             */
  float routed_scaling_factor;  /* routed sum multiplied by this before the shared expert; 0: 1  */
  const moe_experts *shared;    /* optional shared expert (E = 1, same precision and K)          */
  const float *shared_gate;     /* optional [K]: shared output *= sigmoid(x . shared_gate)       */
  int64_t chunk_tokens;         /* tokens per chunk (0: MOE_DEFAULT_CHUNK, MOE_AMX_DEFAULT_CHUNK) */
  moe_stats *stats;             /* optional per-phase timing                                     */
} moe_call;

/* A caller's thread pool. parallel_for must call fn(arg, i) once for every i in [0, n) and return
 * after all calls returned. n_threads is a hint (0: unknown). */
typedef struct moe_parallel {
  void (*parallel_for)(void *pool, void (*fn)(void *arg, int64_t i), void *arg, int64_t n);
  void *pool;
  int n_threads;
} moe_parallel;

/* MOE_VERSION_STRING of the implementation (of libmoe, for a program linked against it). */
MOE_API const char *moe_version(void);

/* moe_pack on the caller's threads (par as the compute calls take it; NULL: one thread, as
 * moe_pack): the panels are independent and claimed one by one, so the bytes are the same for any
 * thread count and order. Same statuses as moe_pack, all before anything is written. */
MOE_API moe_status moe_pack_parallel(const moe_weights *plain, moe_experts *packed, void *buf, size_t size,
                                     const moe_parallel *par);

/* Bytes of workspace moe_fused_experts (or moe_shared_expert) needs for this call. Validates the
 * sizes (not the pointers x, out, weights and ids) and returns a status. */
MOE_API moe_status moe_workspace_size(const moe_experts *ex, const moe_call *call, size_t *bytes);

/* out = routed_scaling_factor * sum_j w[m,j] * expert_{ids[m,j]}(x[m]) (+ shared expert).
 * expert(x) = act(x W13^T + b13) W2^T + b2. Statuses: MOE_ERR_NULL, _SHAPE, _EXPERT_ID, _WORKSPACE,
 * _UNSUPPORTED, _DESCRIPTOR, _OVERFLOW, _ARG; nothing is written unless MOE_OK. */
MOE_API moe_status moe_fused_experts(const moe_experts *ex, const moe_call *call, void *workspace,
                                     size_t workspace_size, const moe_parallel *par);

/* The shared expert alone: out = gate(x) * act(x W13^T) W2^T + routed_scaling_factor * routed,
 * where routed [M, K] (type dtype, stride ldo; may equal out; NULL means 0) came from elsewhere.
 * call->shared, topk, topk_weights and topk_ids are ignored. Same statuses as above. */
MOE_API moe_status moe_shared_expert(const moe_experts *shared, const moe_call *call, const void *routed,
                                     void *workspace, size_t workspace_size, const moe_parallel *par);

/* Workspace for moe_shared_expert. */
MOE_API moe_status moe_shared_expert_workspace_size(const moe_experts *shared, const moe_call *call,
                                                    size_t *bytes);

/* moe_route on the caller's threads (par as the compute calls take it; NULL: as moe_route, OpenMP's
 * threads when built with it): the tokens are split into parts, each routed on its own, so the
 * result is bitwise moe_route's for any thread count and order; small calls stay on the calling
 * thread. Same statuses, all before anything is written. */
MOE_API moe_status moe_route_parallel(const moe_router *router, const void *logits, moe_dtype logit_type, int64_t M,
                                      float *topk_weights, int32_t *topk_ids, const moe_parallel *par);

/* Convenience for engines that hand over logits: routes with *router (moe_route_parallel, on par's
 * threads) and runs the experts (and the shared expert in call->shared). call->topk_weights and
 * call->topk_ids are ignored (routed into the workspace); call->topk must equal router->topk. */
MOE_API moe_status moe_forward_workspace_size(const moe_experts *ex, const moe_router *router,
                                              const moe_call *call, size_t *bytes);
MOE_API moe_status moe_forward(const moe_experts *ex, const moe_router *router, const void *logits,
                               moe_dtype logit_type, const moe_call *call, void *workspace,
                               size_t workspace_size, const moe_parallel *par);

#ifdef __cplusplus
}
#endif

#endif /* MOE_H */

#ifdef MOE_IMPLEMENTATION
#ifndef MOE_IMPLEMENTATION_DONE
#define MOE_IMPLEMENTATION_DONE

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- the resolved call ---------------------------------------------------------------------------
 * Routed slot s = m * topk + j of a chunk; with a shared expert, slot mc * topk + m is token m's
 * shared slot and its blocks carry the expert id E ("expert E" is the shared expert). */
typedef struct moe__layer {
  const moe_experts *ex, *sh;
  const moe_gemm_config *kern;
  const moe_gemm_config *kern_small; /* AMX tier: the AVX-512 kernel for blocks of few rows, or NULL */
  const moe_call *call;
  const void *routed_in;       /* moe_shared_expert: routed output to add, or NULL              */
  const moe__row_ops *ops;     /* quantize/convert/accumulate rows on the current tier          */
  moe_precision p;
  int a8;                      /* activations quantized to u8                                    */
  int32_t topk, T;             /* routed slots per token; slots per token incl. the shared one   */
  int64_t K, N_max, ldx, ldo, chunk;
  float alpha, limit, rsf;
  /* the current chunk */
  int64_t m0, mc, n_blocks, n_groups;
  int64_t chunk1, chunk2;      /* weight panels (gemm1) and panel pairs (gemm2) per work item    */
  int64_t token_run;           /* tokens per item of the per-token phases (prepare, combine)     */
  int64_t items1, items2;      /* work items of the experts' region: gemm1, then gemm2           */
  int64_t next_item;           /* the next item to claim (atomic)                                */
  int64_t busy_ns[3];          /* with moe_stats: thread time in gemm1, requant, gemm2 (atomic)   */
  int32_t *pending, *ready;    /* [n_groups]: gemm1 items left per expert group; h requantized   */
  int n_threads;
  int32_t *sorted, *block_expert, *block_rows, *scratch;
  int32_t *group_first;        /* [n_groups + 1]: the blocks of one expert, consecutive        */
  float *xf, *x_scale, *gate;  /* x as f32 [mc][K]; A8 row scales; shared gate per token         */
  void *xa;                    /* x prepared for GEMM1: u8, or bf16 from fp16/f32 (bf16 x: in place) */
  float *h, *h_scale;          /* [cap][N_max] f32 activation outputs; A8 row scales             */
  void *ha;                    /* h prepared for GEMM2: bf16 or u8 [cap][N_max]                  */
  uint8_t *xs;                 /* AMX: GEMM1 rows gathered per block, ldxs bytes apart, or NULL  */
  int64_t ldxs;
  void *amx_scratch;           /* AMX: amx_slots workers' block buffers (moe__amx_scratch_slots) */
  int64_t amx_slots;
  const moe_gemm_config *fold; /* the folded path's dense kernels (moe__fold_policy), or NULL    */
  uint8_t *fold_scratch;       /* then fold_slots workers' decoded panel pairs, fold_bytes each   */
  int64_t fold_slots;
  size_t fold_bytes;
  float *acc, *acc_shared;     /* [mc][K] f32 sums of the routed experts' outputs; the shared one */
  int32_t *x_gsum, *h_gsum;    /* W4A8: the u8 rows' group sums (moe_sum_groups_u8), x_ng and h_ng
                                  a row, x's in the routed experts' groups; else NULL            */
  int64_t x_ng, h_ng;
} moe__layer;

typedef struct moe__ws_plan {
  size_t sorted, blocks, scratch, acc_shared, groups, sync, xf, x_scale, gate, xa, h, h_scale, ha, acc, xs, amx, x_gsum, h_gsum,
      fold, total;
  int64_t cap, amx_slots;
} moe__ws_plan;

static inline size_t moe__elt(moe_dtype t) { return t == MOE_F32 ? 4 : 2; }

/* The AMX tier loads GEMM1's A tiles in place from the block's rows gathered at a fixed stride: the
 * row bytes, plus a line so that a tile's 16 rows do not share one L1 set. 0 when nothing is
 * gathered. */
static inline int64_t moe__xs_stride(const moe__layer *L) {
  if (L->kern->isa != MOE_ISA_AMX) return 0;
  return (int64_t)moe__round_up((size_t)L->K * (L->a8 ? 1 : 2), 64) + 64;
}

/* The AMX tier's workers with a scratch of MOE__AMX_NB block buffers in the workspace (the first
 * amx_slots of the experts' region; the others keep MOE__AMX_NB_STACK blocks per call on their
 * stack): one per MOE__AMX_NB blocks of the chunk's rows, at most MOE__AMX_SLOTS; only for the
 * precisions whose B tiles are decoded (moe__amx_decodes), and the dense ones' pairs calls. */
#ifndef MOE__AMX_SLOTS
#define MOE__AMX_SLOTS 64
#endif
static inline int64_t moe__amx_scratch_slots(const moe__layer *L, int64_t mc) {
#ifdef MOE__HAVE_AMX
  int64_t rows = mc * (L->topk > 0 ? L->topk : 1) + (L->sh ? mc : 0), n = moe__cdiv(rows, MOE__AMX_NB * MOE_BLOCK_M);
  if (L->kern->isa != MOE_ISA_AMX || (!moe__amx_decodes(L->p) && MOE__AMX_PAIRS == 1)) return 0;
  return n < MOE__AMX_SLOTS ? n : MOE__AMX_SLOTS;
#else
  (void)L, (void)mc;
  return 0;
#endif
}
static inline size_t moe__amx_slot_bytes(void) {
#ifdef MOE__HAVE_AMX
  return MOE__AMX_NB * sizeof(moe__amx_block_buf);
#else
  return 0;
#endif
}

/* CPUs this process may run on as the first thread to ask sees them (Linux: sched_getaffinity,
 * syscall 204), counted once, so that a workspace size and its use agree; 0 where unknown. */
static inline int64_t moe__cpus(void) {
#if defined(__linux__) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static int64_t cached = -1;
  int64_t n = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (n < 0) {
    uint64_t mask[128]; /* up to 8192 CPUs; the kernel writes `ret` bytes of it */
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(204L), "D"(0L), "S"((long)sizeof mask), "d"(mask) : "rcx", "r11", "memory");
    n = 0;
    for (long i = 0; i < ret / 8; i++) n += __builtin_popcountll(mask[i]);
    __atomic_store_n(&cached, n, __ATOMIC_RELAXED);
  }
  return n;
#else
  return 0;
#endif
}

/* The folded path (moe__fold_policy) runs the experts' region on the workers that own one of the
 * workspace's fold slots, each an expert's decoded panel pair: the largest of the GEMMs that fold
 * (moe__fold_bytes), routed or shared (Qwen3-30B-A3B: 256 KB). The workers past them take no
 * items, so the bits stay the same for any thread count; only slots in use are touched. There are
 * MOE__FOLD_SLOTS (128), or a slot per CPU where the process may run on more (a thread past the
 * CPUs finds none free to run on anyway), so no CPU idles on a large server; a build may leave the
 * CPUs out (MOE__FOLD_SLOTS_PER_CPU 0: test_kernels' idle workers on any machine). */
#ifndef MOE__FOLD_SLOTS
#define MOE__FOLD_SLOTS 128
#endif
#ifndef MOE__FOLD_SLOTS_PER_CPU
#define MOE__FOLD_SLOTS_PER_CPU 1
#endif
static inline int64_t moe__fold_slots(void) {
  const int64_t cpus = MOE__FOLD_SLOTS_PER_CPU ? moe__cpus() : 0;
  return cpus > MOE__FOLD_SLOTS ? cpus : MOE__FOLD_SLOTS;
}
static inline size_t moe__fold_pair_bytes(const moe__layer *L) {
  const moe_experts *xs[2] = {L->ex, L->sh};
  size_t most = 0;
  for (int i = 0; i < 2 && xs[i]; i++) {
    const size_t b1 = moe__fold_bytes(xs[i]->k13_pad), b2 = moe__fold_bytes(xs[i]->k2_pad);
    most = b1 > most ? b1 : most, most = b2 > most ? b2 : most;
  }
  return most;
}

/* W4A8's zero points need each u8 row's sums per k group: the layer makes them once per row
 * (moe_sum_groups_u8) for every kernel call over the row. Sums a row of x (in the routed experts'
 * groups) and of h (in the smallest group of the routed and shared experts); 0 for other precisions. */
static inline int64_t moe__x_groups(const moe__layer *L) {
  return L->a8 && moe__meta_of(L->p) == MOE__META_GROUP ? moe__cdiv(L->K, L->ex->group) : 0;
}
static inline int64_t moe__h_groups(const moe__layer *L) {
  int32_t g = L->sh && L->sh->group < L->ex->group ? L->sh->group : L->ex->group;
  return moe__x_groups(L) ? moe__cdiv(L->N_max, g) : 0;
}

/* Workspace pieces for a chunk of mc tokens, each rounded to 64 bytes; 0 total on overflow. */
static inline moe__ws_plan moe__plan_ws(const moe__layer *L, int64_t mc) {
  moe__ws_plan w;
  size_t sz[19], t = 0;
  int64_t cap = (int64_t)moe_sort_capacity(mc, L->topk > 0 ? L->topk : 1, (int32_t)L->ex->E, MOE_BLOCK_M);
  size_t a_elt = L->a8 ? 1 : 2;
  memset(&w, 0, sizeof w);
  if (L->sh) cap += moe__cdiv(mc, MOE_BLOCK_M) * MOE_BLOCK_M;
  w.cap = cap;
  sz[0] = (size_t)cap * 4;
  sz[1] = (size_t)(cap / MOE_BLOCK_M) * 8;
  sz[2] = ((size_t)L->ex->E + 1) * 4;
  sz[3] = L->sh ? (size_t)mc * (size_t)L->K * 4 : 0;
  sz[4] = (size_t)mc * (size_t)L->K * 4;
  sz[5] = (size_t)mc * 4;
  sz[6] = (size_t)mc * 4;
  sz[7] = (size_t)mc * (size_t)L->K * a_elt;
  sz[8] = (size_t)cap * (size_t)L->N_max * 4;
  sz[9] = (size_t)cap * 4;
  sz[10] = (size_t)cap * (size_t)L->N_max * a_elt;
  sz[11] = (size_t)mc * (size_t)L->K * 4;
  sz[12] = (size_t)(cap / MOE_BLOCK_M + 1) * 4;
  sz[13] = 2 * sz[12];
  sz[14] = (size_t)cap * (size_t)moe__xs_stride(L);
  w.amx_slots = moe__amx_scratch_slots(L, mc);
  sz[15] = (size_t)w.amx_slots * moe__amx_slot_bytes();
  sz[16] = (size_t)mc * (size_t)moe__x_groups(L) * 4;
  sz[17] = (size_t)cap * (size_t)moe__h_groups(L) * 4;
  sz[18] = 0;
  if (L->fold && !moe__mul_ok((size_t)moe__fold_slots(), moe__fold_pair_bytes(L), &sz[18])) return w;
  for (int i = 0; i < 19; i++) {
    sz[i] = moe__round_up(sz[i], 64);
    if (!moe__add_ok(t, sz[i], &t)) return w;
  }
  w.sorted = sz[0], w.blocks = sz[1], w.scratch = sz[2], w.acc_shared = sz[3], w.xf = sz[4], w.x_scale = sz[5];
  w.gate = sz[6], w.xa = sz[7], w.h = sz[8], w.h_scale = sz[9], w.ha = sz[10], w.acc = sz[11], w.groups = sz[12], w.sync = sz[13];
  w.xs = sz[14], w.amx = sz[15], w.x_gsum = sz[16], w.h_gsum = sz[17], w.fold = sz[18];
  if (!moe__add_ok(t, 64, &w.total)) w.total = 0; /* 64: alignment slack */
  return w;
}

/* Cuts the workspace into the plan's pieces. */
static inline void moe__carve(moe__layer *L, const moe__ws_plan *w, void *ws) {
  uint8_t *b = (uint8_t *)ws + ((64 - ((uintptr_t)ws & 63)) & 63);
  L->sorted = (int32_t *)b, b += w->sorted;
  L->block_expert = (int32_t *)b, L->block_rows = L->block_expert + w->cap / MOE_BLOCK_M, b += w->blocks;
  L->scratch = (int32_t *)b, b += w->scratch;
  L->acc_shared = (float *)b, b += w->acc_shared;
  L->group_first = (int32_t *)b, b += w->groups;
  L->pending = (int32_t *)b, L->ready = L->pending + w->groups / 4, b += w->sync;
  L->xf = (float *)b, b += w->xf;
  L->x_scale = (float *)b, b += w->x_scale;
  L->gate = (float *)b, b += w->gate;
  L->xa = b, b += w->xa;
  L->h = (float *)b, b += w->h;
  L->h_scale = (float *)b, b += w->h_scale;
  L->ha = b, b += w->ha;
  L->acc = (float *)b, b += w->acc;
  L->xs = w->xs ? b : NULL, b += w->xs;
  L->ldxs = moe__xs_stride(L);
  L->amx_scratch = w->amx ? b : NULL, b += w->amx;
  L->amx_slots = w->amx ? w->amx_slots : 0;
  L->x_ng = moe__x_groups(L), L->h_ng = moe__h_groups(L);
  L->x_gsum = L->x_ng ? (int32_t *)b : NULL, b += w->x_gsum;
  L->h_gsum = L->h_ng ? (int32_t *)b : NULL, b += w->h_gsum;
  L->fold_scratch = w->fold ? b : NULL;
  L->fold_slots = w->fold ? moe__fold_slots() : 0;
  L->fold_bytes = L->fold ? moe__fold_pair_bytes(L) : 0;
}

/* Experts in the whole model: n_global with an expert map (0 means E), else the local E. */
static inline int64_t moe__n_global(const moe_call *c, int64_t E) { return c->expert_map && c->n_global ? c->n_global : E; }

/* ---- validation ----------------------------------------------------------------------------------- */
static inline moe_status moe__check_experts(const moe_experts *ex) {
  if (!ex) return MOE_ERR_NULL;
  if (ex->magic != MOE__MAGIC) return MOE_ERR_DESCRIPTOR;
  if (!moe__precision_valid(ex->precision)) return MOE_ERR_DESCRIPTOR;
  if (!moe_precision_compiled(ex->precision)) return MOE_ERR_UNSUPPORTED;
  return MOE_OK;
}

/* Resolves and validates everything but the data pointers, ids and workspace. topk < 0 means
 * "shared expert only" (moe_shared_expert). */
static inline moe_status moe__resolve(moe__layer *L, const moe_experts *ex, const moe_experts *sh,
                                      const moe_call *c, int shared_only) {
  moe_status st;
  memset(L, 0, sizeof *L);
  if (!ex || !c) return MOE_ERR_NULL;
  if ((st = moe__check_experts(ex)) != MOE_OK) return st;
  if (sh && (st = moe__check_experts(sh)) != MOE_OK) return st;
  if ((int)c->dtype < 0 || c->dtype > MOE_F32 || (int)c->act < 0 || c->act > MOE_ACT_SWIGLU_OAI)
    return MOE_ERR_ARG;
  if (sh && (sh->E != 1 || sh->K != ex->K)) return MOE_ERR_SHAPE;
  if (sh && sh->precision != ex->precision) return MOE_ERR_UNSUPPORTED;
  if (c->M < 0 || c->chunk_tokens < 0 || (c->ldx && c->ldx < ex->K) || (c->ldo && c->ldo < ex->K)) return MOE_ERR_SHAPE;
  if (!shared_only) {
    int64_t n_global = moe__n_global(c, ex->E);
    if (n_global < 1) return MOE_ERR_SHAPE;
    if (c->topk < 1 || c->topk > n_global) return MOE_ERR_SHAPE;
  }
  if (!(c->routed_scaling_factor == c->routed_scaling_factor)) return MOE_ERR_ARG;
  L->kern = moe__tier_policy(ex->precision, shared_only ? c->M : c->M * c->topk,
                             shared_only ? 1 : moe__n_global(c, ex->E), &L->kern_small);
  if (!L->kern) return MOE_ERR_UNSUPPORTED;
  L->ex = ex;
  L->sh = sh;
  L->fold = moe__fold_policy(L->kern, shared_only ? c->M : c->M * c->topk, shared_only ? 1 : moe__n_global(c, ex->E));
  if (!moe__fold_pair_bytes(L)) L->fold = NULL;
  L->call = c;
  L->p = ex->precision;
  L->a8 = moe__is_a8(ex->precision);
  L->topk = shared_only ? 0 : c->topk;
  L->T = L->topk + (sh ? 1 : 0);
  L->K = ex->K;
  L->N_max = sh && sh->N > ex->N ? sh->N : ex->N;
  L->ldx = c->ldx ? c->ldx : ex->K;
  L->ldo = c->ldo ? c->ldo : ex->K;
  L->chunk = c->chunk_tokens ? c->chunk_tokens : L->kern->isa == MOE_ISA_AMX ? MOE_AMX_DEFAULT_CHUNK : MOE_DEFAULT_CHUNK;
  L->alpha = c->alpha != 0.0f ? c->alpha : 1.702f;
  L->limit = c->limit != 0.0f ? c->limit : 7.0f;
  L->rsf = c->routed_scaling_factor != 0.0f ? c->routed_scaling_factor : 1.0f;
  L->ops = moe__row_ops_get();
  return MOE_OK;
}

/* Every id of the whole call, before anything is written (a later chunk must not fail). */
static inline moe_status moe__check_ids(const moe__layer *L) {
  const moe_call *c = L->call;
  int64_t n_global = moe__n_global(c, L->ex->E);
  if (c->expert_map)
    for (int64_t g = 0; g < n_global; g++)
      if (c->expert_map[g] < -1 || c->expert_map[g] >= L->ex->E) return MOE_ERR_EXPERT_ID;
  for (int64_t i = 0; i < c->M * (int64_t)L->topk; i++)
    if (c->topk_ids[i] < -1 || c->topk_ids[i] >= n_global) return MOE_ERR_EXPERT_ID;
  return MOE_OK;
}

static inline moe_status moe__check_data(const moe__layer *L, void *ws, size_t ws_size) {
  const moe_call *c = L->call;
  moe__ws_plan w;
  if (!c->x || !c->out) return MOE_ERR_NULL;
  if (L->topk > 0 && (!c->topk_weights || !c->topk_ids)) return MOE_ERR_NULL;
  w = moe__plan_ws(L, c->M < L->chunk ? c->M : L->chunk);
  if (!w.total) return MOE_ERR_OVERFLOW;
  if (!ws || ws_size < w.total) return MOE_ERR_WORKSPACE;
  return L->topk > 0 ? moe__check_ids(L) : MOE_OK;
}

/* ---- threading ------------------------------------------------------------------------------------ */
static inline void moe__parallel(const moe_parallel *par, void (*fn)(void *, int64_t), void *arg, int64_t n) {
  if (n <= 0) return;
  if (par && par->parallel_for) {
    par->parallel_for(par->pool, fn, arg, n);
    return;
  }
#ifdef _OPENMP
  {
    int nt = par && par->n_threads > 0 ? par->n_threads : omp_get_max_threads();
    int64_t i;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (i = 0; i < n; i++) fn(arg, i);
  }
#else
  for (int64_t i = 0; i < n; i++) fn(arg, i);
#endif
}

/* Small phases run on the calling thread: waking a pool costs more than they do. */
#define MOE__SERIAL_WORK 65536 /* elements */
static inline void moe__parallel_if(const moe_parallel *par, void (*fn)(void *, int64_t), void *arg, int64_t n,
                                    int64_t work) {
  if (work < MOE__SERIAL_WORK)
    for (int64_t i = 0; i < n; i++) fn(arg, i);
  else
    moe__parallel(par, fn, arg, n);
}

static inline int moe__threads(const moe_parallel *par) {
  if (par && par->n_threads > 0) return par->n_threads;
#ifdef _OPENMP
  if (!par || !par->parallel_for) return omp_get_max_threads();
#endif
  return par && par->parallel_for ? 8 : 1; /* a pool of unknown size: assume a few threads */
}

/* ---- phases of one chunk ------------------------------------------------------------------------ */
static inline const uint8_t *moe__x_row(const moe__layer *L, int64_t m) {
  return (const uint8_t *)L->call->x + (size_t)((L->m0 + m) * L->ldx) * moe__elt(L->call->dtype);
}

/* Token m: the shared gate and the GEMM1 operand (u8 quantization or a bf16 copy; a bf16 x is
 * read in place). x goes through f32 only where something needs it. */
static inline void moe__prepare_token(void *arg, int64_t m) {
  moe__layer *L = (moe__layer *)arg;
  const moe_call *c = L->call;
  float *xf = L->xf + m * L->K;
  int gated = L->sh && c->shared_gate;
  if (L->a8 || gated || c->dtype != MOE_BF16) {
    if (c->dtype == MOE_BF16) L->ops->from_bf16((const uint16_t *)(const void *)moe__x_row(L, m), xf, L->K);
    else moe_convert_to_f32(c->dtype, moe__x_row(L, m), xf, (size_t)L->K);
  }
  memset(L->acc + m * L->K, 0, (size_t)L->K * sizeof(float));
  if (L->sh) memset(L->acc_shared + m * L->K, 0, (size_t)L->K * sizeof(float));
  L->gate[m] = 1.0f;
  if (gated) {
    float s = 0.0f;
    for (int64_t k = 0; k < L->K; k++) s += xf[k] * c->shared_gate[k];
    L->gate[m] = moe__logistic(s);
  }
  if (L->a8) L->x_scale[m] = L->ops->quantize_u8(xf, L->K, (uint8_t *)L->xa + m * L->K);
  if (L->x_gsum) L->ops->sum_groups_u8((const uint8_t *)L->xa + m * L->K, L->K, L->ex->group, L->x_gsum + m * L->x_ng);
  if (!L->a8 && c->dtype != MOE_BF16) L->ops->to_bf16(xf, (uint16_t *)L->xa + m * L->K, L->K);
}

/* The GEMM1 operand row of token m. */
static inline const void *moe__a_row(const moe__layer *L, int64_t m) {
  if (L->a8) return (const uint8_t *)L->xa + m * L->K;
  if (L->call->dtype == MOE_BF16) return moe__x_row(L, m);
  return (const uint16_t *)L->xa + m * L->K;
}

static inline int64_t moe__slot_token(const moe__layer *L, int64_t s) {
  return s < L->mc * L->topk ? s / L->topk : s - L->mc * L->topk;
}
static inline float moe__slot_weight(const moe__layer *L, int64_t s) {
  if (s < L->mc * L->topk) return L->call->topk_weights[L->m0 * L->topk + s];
  return L->gate[s - L->mc * L->topk];
}

/* Sorts the chunk's slots into blocks (routed experts, then the shared expert E) and groups the
 * blocks of each expert. */
static inline moe_status moe__sort_chunk(moe__layer *L) {
  const moe_call *c = L->call;
  int64_t nb = 0, base;
  int32_t E = (int32_t)L->ex->E;
  if (L->topk > 0) {
    moe_status st = moe_sort_slots(c->topk_ids + L->m0 * L->topk, L->mc, L->topk, E, c->expert_map,
                                   (int32_t)moe__n_global(c, E), MOE_BLOCK_M, L->scratch, L->sorted,
                                   L->block_expert, L->block_rows, &nb);
    if (st != MOE_OK) return st;
  }
  base = nb * MOE_BLOCK_M;
  if (L->sh)
    for (int64_t m = 0; m < L->mc; m++) {
      if (m % MOE_BLOCK_M == 0) {
        L->block_expert[nb] = E;
        L->block_rows[nb] = (int32_t)(L->mc - m < MOE_BLOCK_M ? L->mc - m : MOE_BLOCK_M);
        nb++;
      }
      L->sorted[base + m] = (int32_t)(L->mc * L->topk + m);
    }
  L->n_blocks = nb;
  L->n_groups = 0;
  for (int64_t b = 0; b < nb; b++)
    if (b == 0 || L->block_expert[b] != L->block_expert[b - 1]) L->group_first[L->n_groups++] = (int32_t)b;
  L->group_first[L->n_groups] = (int32_t)nb;
  return MOE_OK;
}

/* The experts struct and local index of block b. */
static inline const moe_experts *moe__block_experts(const moe__layer *L, int64_t b, int64_t *e) {
  int32_t id = L->block_expert[b];
  *e = id == L->ex->E ? 0 : id;
  return id == L->ex->E ? L->sh : L->ex;
}

static inline int64_t moe__h_panels(const moe__layer *L) { return moe__cdiv(L->N_max, MOE_NR); }

/* The kernel of a block of `rows` rows (the tier policy: moe__tier_policy in moe_gemm.h). */
static inline const moe_gemm_config *moe__block_kernel(const moe__layer *L, int32_t rows) {
  return L->kern_small && rows < MOE__AMX_MIN_ROWS(L->p) ? L->kern_small : L->kern;
}

/* 1 when a block of `rows` rows runs GEMM1 on gathered rows (moe__xs_stride). */
static inline int moe__gathered(const moe__layer *L, int32_t rows) {
  return L->xs && moe__block_kernel(L, rows)->isa == MOE_ISA_AMX;
}

/* Block b's GEMM1 rows to xs, when its kernel loads them in place. */
static inline void moe__gather_block(void *arg, int64_t b) {
  const moe__layer *L = (const moe__layer *)arg;
  const size_t bytes = (size_t)L->K * (L->a8 ? 1 : 2);
  if (!moe__gathered(L, L->block_rows[b])) return;
  for (int32_t r = 0; r < L->block_rows[b]; r++) {
    int64_t row = b * MOE_BLOCK_M + r;
    memcpy(L->xs + row * L->ldxs, moe__a_row(L, moe__slot_token(L, L->sorted[row])), bytes);
  }
}

/* The row pointers and scales of a call (the args point at them). */
typedef struct moe__rows {
  const void *a[MOE_BLOCK_M];
  float a_scale[MOE_BLOCK_M], row_weight[MOE_BLOCK_M];
  float *c_rows[MOE_BLOCK_M];
  const int32_t *gsum[MOE_BLOCK_M]; /* W4A8: the rows' group sums (moe_gemm_args.a_group_sum) */
} moe__rows;

/* The arguments of GEMM1 for block b, h panel p: h rows of the block, columns 32p..32p+31; next_p
 * is the panel the task reads next (-1: none), a prefetch hint. 0 when p is past this expert's N. */
static inline int moe__gemm1_args(const moe__layer *L, int64_t b, int64_t p, int64_t next_p, moe_gemm_args *gp, moe__rows *R) {
  int64_t e;
  const moe_experts *X = moe__block_experts(L, b, &e);
  const void **a = R->a;
  float *a_scale = R->a_scale;
  moe_gemm_args g;
  int64_t row0 = b * MOE_BLOCK_M;
  int gathered;
  const int sums = L->x_gsum && X->group == L->ex->group; /* a shared expert's groups may differ */
  if (p * MOE_NR >= X->N) return 0;
  memset(&g, 0, sizeof g);
  g.mr = L->block_rows[b];
  gathered = moe__gathered(L, g.mr);
  g.nr = (int32_t)(X->N - p * MOE_NR < MOE_NR ? X->N - p * MOE_NR : MOE_NR);
  for (int32_t r = 0; r < g.mr; r++) {
    int64_t m = moe__slot_token(L, L->sorted[row0 + r]);
    a[r] = gathered ? (const void *)(L->xs + (row0 + r) * L->ldxs) : moe__a_row(L, m);
    a_scale[r] = L->a8 ? L->x_scale[m] : 1.0f;
    if (sums) R->gsum[r] = L->x_gsum + m * L->x_ng;
  }
  g.a = a;
  g.a_group_sum = sums ? R->gsum : NULL;
  g.lda = gathered ? L->ldxs : 0;
  g.a_scale = a_scale;
  g.w = X->w13 + (size_t)(e * X->panels13 + 2 * p) * X->panel13_bytes;
  g.panel_bytes = X->panel13_bytes;
  if (next_p >= 0 && next_p * MOE_NR < X->N) {
    g.w_next = X->w13 + (size_t)(e * X->panels13 + 2 * next_p) * X->panel13_bytes;
    g.w_next_bytes = 2 * X->panel13_bytes;
  }
  g.kred = X->K;
  g.kpad = X->k13_pad;
  g.kgroup = moe__kgroup(X->precision, X->block_k, X->group);
  g.bias = X->b13 ? X->b13 + e * 2 * X->N + p * MOE_NR : NULL;
  g.bias_up = X->b13 ? X->b13 + e * 2 * X->N + X->N + p * MOE_NR : NULL;
  g.act = L->call->act;
  g.alpha = L->alpha;
  g.limit = L->limit;
  g.c = L->h + row0 * L->N_max + p * MOE_NR;
  g.ldc = L->N_max;
  *gp = g;
  return 1;
}
static inline void moe__gemm1_block(const moe__layer *L, int64_t b, int64_t p, int64_t next_p) {
  moe__rows R;
  moe_gemm_args g;
  if (moe__gemm1_args(L, b, p, next_p, &g, &R)) moe__block_kernel(L, g.mr)->gemm1(&g);
}

/* Block b's h rows to the GEMM2 operand (bf16 or u8 with a row scale). */
static inline void moe__prepare_h(const moe__layer *L, int64_t b) {
  int64_t e;
  const moe_experts *X = moe__block_experts(L, b, &e);
  for (int32_t r = 0; r < L->block_rows[b]; r++) {
    int64_t row = b * MOE_BLOCK_M + r;
    const float *h = L->h + row * L->N_max;
    if (L->a8) L->h_scale[row] = L->ops->quantize_u8(h, X->N, (uint8_t *)L->ha + row * L->N_max);
    if (L->h_gsum) L->ops->sum_groups_u8((const uint8_t *)L->ha + row * L->N_max, X->N, X->group, L->h_gsum + row * L->h_ng);
    if (!L->a8) L->ops->to_bf16(h, (uint16_t *)L->ha + row * L->N_max, X->N);
  }
}

/* GEMM2 of block b, output panel pair q: columns 64q..64q+63 (two panels) of the block's rows,
 * weighted and added to their tokens' sums; next is the panel pair the task reads next (NULL:
 * none), a prefetch hint. */
static inline void moe__gemm2_args(const moe__layer *L, int64_t b, int64_t q, const uint8_t *next, size_t next_bytes,
                                   moe_gemm_args *gp, moe__rows *R) {
  int64_t e;
  const moe_experts *X = moe__block_experts(L, b, &e);
  const void **a = R->a;
  float **c_rows = R->c_rows, *row_weight = R->row_weight;
  moe_gemm_args g;
  int64_t row0 = b * MOE_BLOCK_M;
  memset(&g, 0, sizeof g);
  g.mr = L->block_rows[b];
  g.nr = (int32_t)(L->K - q * 2 * MOE_NR < 2 * MOE_NR ? L->K - q * 2 * MOE_NR : 2 * MOE_NR);
  for (int32_t r = 0; r < g.mr; r++) {
    a[r] = L->a8 ? (const void *)((const uint8_t *)L->ha + (row0 + r) * L->N_max)
                 : (const void *)((const uint16_t *)L->ha + (row0 + r) * L->N_max);
    int64_t s = L->sorted[row0 + r], m = moe__slot_token(L, s);
    row_weight[r] = moe__slot_weight(L, s);
    c_rows[r] = (s < L->mc * L->topk ? L->acc : L->acc_shared) + m * L->K + q * 2 * MOE_NR;
    if (L->h_gsum) R->gsum[r] = L->h_gsum + (row0 + r) * L->h_ng;
  }
  g.a = a;
  g.a_group_sum = L->h_gsum ? R->gsum : NULL;
  g.lda = (int64_t)L->N_max * (L->a8 ? 1 : 2); /* h rows are consecutive */
  g.a_scale = L->h_scale + row0;
  g.w = X->w2 + (size_t)(e * X->panels2 + 2 * q) * X->panel2_bytes;
  g.panel_bytes = X->panel2_bytes;
  g.w_next = next, g.w_next_bytes = next_bytes;
  g.kred = X->N;
  g.kpad = X->k2_pad;
  g.kgroup = moe__kgroup(X->precision, X->block_k, X->group);
  g.bias = X->b2 ? X->b2 + e * X->K + q * 2 * MOE_NR : NULL;
  g.row_weight = row_weight;
  g.c_rows = c_rows;
  *gp = g;
}
static inline void moe__gemm2_block(const moe__layer *L, int64_t b, int64_t q, const uint8_t *next, size_t next_bytes) {
  moe__rows R;
  moe_gemm_args g;
  moe__gemm2_args(L, b, q, next, next_bytes, &g, &R);
  moe__block_kernel(L, g.mr)->gemm2(&g);
}

/* Panel pairs per AMX call: MOE__AMX_PAIRS for a dense precision with the worker's scratch, else 1. */
static inline int64_t moe__amx_pairs(const moe__layer *L, const void *amx) {
#ifdef MOE__HAVE_AMX
  return amx && !moe__amx_decodes(L->p) ? MOE__AMX_PAIRS : 1;
#else
  (void)L, (void)amx;
  return 1;
#endif
}

/* Blocks of one expert from b on (before end) that run AMX together: their count, 0 when block b
 * does not run on the tiles (or there is no AMX tier). A call takes at most MOE__AMX_NB blocks with
 * the worker's scratch `amx`, else MOE__AMX_NB_STACK; an expert's run of AMX blocks is cut into as
 * few calls as that allows, of even sizes (9 blocks with 8 at most: 5 + 4, not 8 + 1), so each
 * call's B tiles, decoded once, serve as many blocks as they can. */
static inline int64_t moe__amx_run(const moe__layer *L, int64_t b, int64_t end, const void *amx) {
  int64_t n = 0;
#ifdef MOE__HAVE_AMX
  const int64_t most = amx ? MOE__AMX_NB / moe__amx_pairs(L, amx) : MOE__AMX_NB_STACK;
  while (b + n < end && moe__block_kernel(L, L->block_rows[b + n])->isa == MOE_ISA_AMX) n++;
  if (n > most) n = moe__cdiv(n, moe__cdiv(n, most));
#else
  (void)L, (void)b, (void)end, (void)amx;
#endif
  return n;
}

/* GEMM1 of blocks [b, b + n) of one expert, h panels [p, p + np), in one AMX call (one panel: the
 * blocks' call, moe__amx_gemm_blocks); the next call's next_np panels from next_p on (-1: none)
 * prefetched. */
static inline void moe__gemm1_pairs(const moe__layer *L, int64_t b, int64_t n, int64_t p, int64_t np, int64_t next_p, int64_t next_np,
                                    void *amx) {
#ifdef MOE__HAVE_AMX
  moe__rows R[MOE__AMX_NB];
  moe_gemm_args g[MOE__AMX_NB];
  int64_t e;
  const moe_experts *X = moe__block_experts(L, b, &e);
  const int64_t panels = moe__cdiv(X->N, MOE_NR), pairs = np < panels - p ? np : panels - p; /* inside the expert's N */
  if (pairs <= 0) return;
  for (int64_t j = 0; j < pairs; j++)
    for (int64_t i = 0; i < n; i++) moe__gemm1_args(L, b + i, p + j, j ? -1 : next_p, &g[j * n + i], &R[j * n + i]);
  if (g[0].w_next) g[0].w_next_bytes *= (size_t)(next_np < panels - next_p ? next_np : panels - next_p);
  moe__amx_gemm_pairs(L->p, g, (int)n, (int)pairs, 1, (moe__amx_block_buf *)amx);
#else
  (void)L, (void)b, (void)n, (void)p, (void)np, (void)next_p, (void)next_np, (void)amx;
#endif
}
/* GEMM2 of blocks [b, b + n) of one expert, output panel pairs [q, q + nq), in one AMX call. */
static inline void moe__gemm2_pairs(const moe__layer *L, int64_t b, int64_t n, int64_t q, int64_t nq, const uint8_t *next,
                                    size_t next_bytes, void *amx) {
#ifdef MOE__HAVE_AMX
  moe__rows R[MOE__AMX_NB];
  moe_gemm_args g[MOE__AMX_NB];
  for (int64_t j = 0; j < nq; j++)
    for (int64_t i = 0; i < n; i++) moe__gemm2_args(L, b + i, q + j, next, next_bytes, &g[j * n + i], &R[j * n + i]);
  moe__amx_gemm_pairs(L->p, g, (int)n, (int)nq, 0, (moe__amx_block_buf *)amx);
#else
  (void)L, (void)b, (void)n, (void)q, (void)nq, (void)next, (void)next_bytes, (void)amx;
#endif
}

/* ---- the experts' region ----------------------------------------------------------------------
 * GEMM1, the requantization of h and GEMM2 run in one parallel region, as work items claimed in
 * order from one counter (no barrier between the GEMMs, where threads would idle and restart
 * their weight streams):
 *
 *   items  [ gemm1: group 0 run 0 | group 0 run 1 | ... | group G-1 run R-1 | gemm2: pairs 0.. | ... ]
 *                    |_______ pending[0] = R ______|                      ^ waits for ready[g] per group
 *
 * The thread finishing a group's last GEMM1 item requantizes the group's h rows and marks it ready.
 * A GEMM2 item waits only on items already claimed (hence running on live threads), so no pool
 * order can deadlock it. */
static inline void moe__pause(void) {
#if defined(MOE__X86) && (defined(__GNUC__) || defined(__clang__))
  __builtin_ia32_pause();
#endif
}
/* One line into L2: a hint (prefetcht1 on x86), nothing without the compiler's builtin. */
static inline void moe__prefetch_l2(const void *p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 2);
#else
  (void)p;
#endif
}

/* Nanoseconds from the moe_stats clock (0 without one). */
static inline int64_t moe__stats_ns(const moe__layer *L) {
  const moe_stats *st = L->call->stats;
  return st && st->clock ? (int64_t)(st->clock() * 1e9) : 0;
}

/* Adds the time since *t to the threads' total in kind (0 gemm1, 1 requant, 2 gemm2). */
static inline void moe__busy(moe__layer *L, int kind, int64_t *t) {
  int64_t now;
  if (!L->call->stats || !L->call->stats->clock) return;
  now = moe__stats_ns(L);
  __atomic_fetch_add(&L->busy_ns[kind], now - *t, __ATOMIC_RELAXED);
  *t = now;
}

/* A block's call pointed at the worker's decoded bf16 panels (kpad * 64 bytes apart, one group). */
static inline void moe__folded_args(moe_gemm_args *g, uint8_t *fold, int64_t kpad) {
  g->w = fold, g->panel_bytes = (size_t)kpad * 64, g->kgroup = 0;
}
/* GEMM1 of group gi's blocks over h panel p on the folded path: the expert's gate and up panels
 * decoded into the worker's scratch once, then every block on the dense kernel. 0 when the pair or
 * its scales do not fold (moe__fold_bytes, moe__e8m0_foldable): the blocks then run the MXFP4 kernel. */
static inline int moe__gemm1_folded(const moe__layer *L, int64_t gi, int64_t p, int64_t next_p, uint8_t *fold) {
  int64_t e;
  const moe_experts *X = moe__block_experts(L, L->group_first[gi], &e);
  const int32_t nv = (int32_t)(X->N - p * MOE_NR < MOE_NR ? X->N - p * MOE_NR : MOE_NR), nvs[2] = {nv, nv};
  if (!moe__fold_bytes(X->k13_pad)) return 0;
  if (nv <= 0) return 1; /* past this expert's N: nothing to do */
  if (!moe__fold_panels(X->w13 + (size_t)(e * X->panels13 + 2 * p) * X->panel13_bytes, X->panel13_bytes, 2, nvs, X->K, X->k13_pad, fold))
    return 0;
  for (int64_t b = L->group_first[gi]; b < L->group_first[gi + 1]; b++) {
    moe__rows R;
    moe_gemm_args g;
    if (!moe__gemm1_args(L, b, p, next_p, &g, &R)) continue;
    moe__folded_args(&g, fold, X->k13_pad);
    L->fold->gemm1(&g);
  }
  return 1;
}
/* The same for GEMM2's output panel pair q (its last pair may hold one panel). */
static inline int moe__gemm2_folded(const moe__layer *L, int64_t gi, int64_t q, const uint8_t *next, size_t next_bytes,
                                    uint8_t *fold) {
  int64_t e;
  const moe_experts *X = moe__block_experts(L, L->group_first[gi], &e);
  const int64_t left = X->K - 2 * q * MOE_NR; /* valid columns from this pair on */
  const int32_t nvs[2] = {(int32_t)(left < MOE_NR ? left : MOE_NR), (int32_t)(left - MOE_NR < MOE_NR ? left - MOE_NR : MOE_NR)};
  if (!moe__fold_bytes(X->k2_pad)) return 0;
  if (!moe__fold_panels(X->w2 + (size_t)(e * X->panels2 + 2 * q) * X->panel2_bytes, X->panel2_bytes, nvs[1] > 0 ? 2 : 1, nvs,
                        X->N, X->k2_pad, fold))
    return 0;
  for (int64_t b = L->group_first[gi]; b < L->group_first[gi + 1]; b++) {
    moe__rows R;
    moe_gemm_args g;
    moe__gemm2_args(L, b, q, next, next_bytes, &g, &R);
    moe__folded_args(&g, fold, X->k2_pad);
    L->fold->gemm2(&g);
  }
  return 1;
}

/* GEMM1 item (expert group, run of panels): every block of one expert against a few consecutive
 * weight panels, so each panel comes from DRAM once and stays in cache while the expert's rows
 * stream through it. Few experts hit (decode) still give experts x panel runs items: N is split
 * within each expert. */
static inline void moe__gemm1_item(moe__layer *L, int64_t t, void *amx, uint8_t *fold) {
  int64_t runs = moe__cdiv(moe__h_panels(L), L->chunk1), gi = t / runs, p0 = t % runs * L->chunk1;
  int64_t p1 = p0 + L->chunk1 < moe__h_panels(L) ? p0 + L->chunk1 : moe__h_panels(L), t0 = moe__stats_ns(L);
  const int64_t P = moe__amx_pairs(L, amx); /* panels per AMX call */
  for (int64_t p = p0; p < p1; p += P) {
    const int64_t np = p + P < p1 ? P : p1 - p, next = p + np < p1 ? p + np : -1;
    const int64_t next_np = next < 0 ? 0 : p1 - next < P ? p1 - next : P;
    if (fold && moe__gemm1_folded(L, gi, p, next, fold)) continue;
    for (int64_t b = L->group_first[gi], n; b < L->group_first[gi + 1]; b += n) {
      n = moe__amx_run(L, b, L->group_first[gi + 1], amx); /* blocks that share one AMX call */
      if (n > 0) moe__gemm1_pairs(L, b, n, p, np, next, next_np, amx);
      else { /* block b runs AVX-512 */
        for (int64_t q = p; q < p + np; q++) moe__gemm1_block(L, b, q, q + 1 < p1 ? q + 1 : -1);
        n = 1;
      }
    }
  }
  moe__busy(L, 0, &t0);
  if (__atomic_sub_fetch(&L->pending[gi], 1, __ATOMIC_ACQ_REL) == 0) {
    for (int64_t b = L->group_first[gi]; b < L->group_first[gi + 1]; b++) moe__prepare_h(L, b);
    __atomic_store_n(&L->ready[gi], 1, __ATOMIC_RELEASE);
    moe__busy(L, 1, &t0);
  }
}

/* GEMM2 item (run of output panel pairs): every expert in ascending order against those columns,
 * so each output element is summed by one item, over its token's experts in a fixed order (the
 * sort's: expert id, then slot), whatever the threads and chunks. The weights of the next
 * (expert, pair) are prefetched. */
static inline int64_t moe__pairs2(const moe__layer *L) { return moe__cdiv(L->K, 2 * MOE_NR); }

/* Group gi's expert's output panel pairs [q, q + n) (cut at its last panel): where, and their bytes. */
static inline const uint8_t *moe__w2_pairs(const moe__layer *L, int64_t gi, int64_t q, int64_t n, size_t *bytes) {
  int64_t e;
  const moe_experts *X = moe__block_experts(L, L->group_first[gi], &e);
  *bytes = (size_t)(2 * n < X->panels2 - 2 * q ? 2 * n : X->panels2 - 2 * q) * X->panel2_bytes;
  return X->w2 + (size_t)(e * X->panels2 + 2 * q) * X->panel2_bytes;
}

/* The next group's h rows, sent to L2 before each of the running group's GEMM2 calls, a slice per
 * block of the call: an item reads every group's rows (the chunk's h: MBs) from beyond L2 once, and
 * the first tiles of a group's first call waited for them (Zen 5, M = 512-2048: bf16, int8 and W4A8
 * GEMM2 3-8 % faster, the others up to 11 %). Nothing until that group's rows are written. */
typedef struct moe__h_ahead {
  uintptr_t at, end; /* the lines still to send */
  int64_t lines;     /* per slice                */
} moe__h_ahead;
static inline moe__h_ahead moe__h_next(const moe__layer *L, int64_t gi, int64_t slices) {
  moe__h_ahead h = {0, 0, 0};
  if (gi >= L->n_groups || !__atomic_load_n(&L->ready[gi], __ATOMIC_ACQUIRE)) return h;
  const size_t row = (size_t)L->N_max * (L->a8 ? 1 : 2);
  const int64_t b0 = L->group_first[gi], b1 = L->group_first[gi + 1] - 1;
  h.at = ((uintptr_t)L->ha + (size_t)b0 * MOE_BLOCK_M * row) & ~(uintptr_t)63;
  h.end = (uintptr_t)L->ha + ((size_t)b1 * MOE_BLOCK_M + (size_t)L->block_rows[b1]) * row;
  h.lines = moe__cdiv((int64_t)(h.end - h.at), 64 * (slices > 0 ? slices : 1));
  return h;
}
/* n slices of the lines. */
static inline void moe__h_prefetch(moe__h_ahead *h, int64_t n) {
  for (int64_t l = 0; l < n * h->lines && h->at < h->end; l++, h->at += 64) moe__prefetch_l2((const void *)h->at);
}

static inline void moe__gemm2_item(moe__layer *L, int64_t t, void *amx, uint8_t *fold) {
  int64_t q0 = t * L->chunk2, q1 = q0 + L->chunk2 < moe__pairs2(L) ? q0 + L->chunk2 : moe__pairs2(L), t0;
  const int64_t P = moe__amx_pairs(L, amx); /* output panel pairs per AMX call */
  for (int64_t gi = 0; gi < L->n_groups; gi++) {
    t0 = moe__stats_ns(L);
    while (!__atomic_load_n(&L->ready[gi], __ATOMIC_ACQUIRE)) moe__pause();
    moe__busy(L, 1, &t0); /* waiting for h counts as requantization */
    const int64_t blocks = L->group_first[gi + 1] - L->group_first[gi];
    moe__h_ahead h = moe__h_next(L, gi + 1, moe__cdiv(q1 - q0, P) * blocks);
    for (int64_t q = q0; q < q1; q += P) {
      const int64_t nq = q + P < q1 ? P : q1 - q;
      size_t next_bytes = 0;
      const uint8_t *next = q + nq < q1 ? moe__w2_pairs(L, gi, q + nq, q1 - q - nq < P ? q1 - q - nq : P, &next_bytes)
                            : gi + 1 < L->n_groups ? moe__w2_pairs(L, gi + 1, q0, q1 - q0 < P ? q1 - q0 : P, &next_bytes) : NULL;
      if (fold) moe__h_prefetch(&h, blocks); /* the folded path runs the pair's blocks in one go */
      if (fold && moe__gemm2_folded(L, gi, q, next, next_bytes, fold)) continue;
      for (int64_t b = L->group_first[gi], n; b < L->group_first[gi + 1]; b += n) {
        n = moe__amx_run(L, b, L->group_first[gi + 1], amx);
        moe__h_prefetch(&h, n > 0 ? n : 1);
        if (n > 0) moe__gemm2_pairs(L, b, n, q, nq, next, next_bytes, amx);
        else { /* block b runs AVX-512 */
          for (int64_t j = q; j < q + nq; j++) moe__gemm2_block(L, b, j, next, next_bytes);
          n = 1;
        }
      }
    }
    moe__busy(L, 2, &t0);
  }
}

/* Worker w of the experts' region (each w runs once: the first amx_slots own a scratch; on the
 * folded path the first fold_slots own one and the others take no items). */
static inline void moe__experts_worker(void *arg, int64_t w) {
  moe__layer *L = (moe__layer *)arg;
  void *amx = w < L->amx_slots ? (uint8_t *)L->amx_scratch + (size_t)w * moe__amx_slot_bytes() : NULL;
  uint8_t *fold = L->fold && w < L->fold_slots ? L->fold_scratch + (size_t)w * L->fold_bytes : NULL;
  int64_t i;
  while ((!L->fold || fold) && (i = __atomic_fetch_add(&L->next_item, 1, __ATOMIC_RELAXED)) < L->items1 + L->items2) {
    if (i < L->items1) moe__gemm1_item(L, i, amx, fold);
    else moe__gemm2_item(L, i - L->items1, amx, fold);
  }
  moe__tiles_release(); /* this thread's part of the region is done: its AMX tile state goes */
}

/* Work units per item: runs of up to `most`, but at least `per_thread` items per thread. */
static inline int64_t moe__run_length(const moe__layer *L, int64_t units, int64_t per_thread, int64_t most) {
  int64_t per = units / (per_thread * (int64_t)L->n_threads);
  return per < 1 ? 1 : per > most ? most : per;
}

/* Both GEMMs of the chunk on all threads. */
static inline void moe__run_experts(moe__layer *L, const moe_parallel *par) {
  int64_t runs;
  L->chunk1 = moe__run_length(L, L->n_groups * moe__h_panels(L), 8, 32);
  L->chunk2 = moe__run_length(L, moe__pairs2(L), 2, 8);
  runs = moe__cdiv(moe__h_panels(L), L->chunk1);
  L->items1 = L->n_groups * runs;
  L->items2 = moe__cdiv(moe__pairs2(L), L->chunk2);
  L->next_item = 0;
  memset(L->busy_ns, 0, sizeof L->busy_ns);
  for (int64_t gi = 0; gi < L->n_groups; gi++) L->pending[gi] = (int32_t)runs, L->ready[gi] = 0;
  moe__parallel(par, moe__experts_worker, L, L->n_threads);
}

/* Token m: out = rsf * (sum of the routed experts + routed_in) + the shared expert, in f32, rounded
 * once. */
static inline void moe__combine_token(void *arg, int64_t m) {
  const moe__layer *L = (const moe__layer *)arg;
  const moe_call *c = L->call;
  float *acc = L->acc + m * L->K;
  size_t esz = moe__elt(c->dtype);
  if (L->routed_in) {
    const uint8_t *src = (const uint8_t *)L->routed_in + (size_t)((L->m0 + m) * L->ldo) * esz;
    float *r = L->xf + m * L->K; /* x as f32 is no longer needed */
    if (c->dtype == MOE_BF16) L->ops->from_bf16((const uint16_t *)(const void *)src, r, L->K);
    else moe_convert_to_f32(c->dtype, src, r, (size_t)L->K);
    L->ops->add(acc, r, L->K);
  }
  if (L->rsf != 1.0f)
    for (int64_t k = 0; k < L->K; k++) acc[k] *= L->rsf;
  if (L->sh) L->ops->add(acc, L->acc_shared + m * L->K, L->K);
  if (c->dtype == MOE_BF16)
    L->ops->to_bf16(acc, (uint16_t *)(void *)((uint8_t *)c->out + (size_t)((L->m0 + m) * L->ldo) * esz), L->K);
  else
    moe_convert_from_f32(c->dtype, acc, (uint8_t *)c->out + (size_t)((L->m0 + m) * L->ldo) * esz, (size_t)L->K);
}

/* Ends a phase for moe_stats: adds the time since *t to its total. */
static inline void moe__lap(const moe__layer *L, moe_phase phase, double *t) {
  moe_stats *st = L->call->stats;
  if (st && st->clock) {
    double now = st->clock();
    st->seconds[phase] += now - *t;
    *t = now;
  }
}

/* Ends the experts' region for moe_stats: its wall time, split over GEMM1, requantization and
 * GEMM2 in proportion to the threads' time in each. */
static inline void moe__lap_experts(const moe__layer *L, double *t) {
  moe_stats *st = L->call->stats;
  const int64_t *b = L->busy_ns;
  if (st && st->clock) {
    double now = st->clock(), busy = (double)(b[0] + b[1] + b[2]);
    static const moe_phase phase[3] = {MOE_PHASE_GEMM1, MOE_PHASE_REQUANT, MOE_PHASE_GEMM2};
    for (int k = 0; k < 3; k++) st->seconds[phase[k]] += busy > 0 ? (now - *t) * (double)b[k] / busy : 0.0;
    *t = now;
  }
}

/* The per-token phases run in items of token_run consecutive tokens, not one token each (a claim
 * per token, and the per-token scales and gates written side by side by the threads): Zen 5, two
 * threads, int8 M = 2048, prepare 1.7-2.8 -> 1.1-1.5 ms, combine 1.3-1.5 -> 1.2-1.4 ms. */
static inline void moe__token_run(void *arg, int64_t i, void (*per_token)(void *, int64_t)) {
  const moe__layer *L = (const moe__layer *)arg;
  for (int64_t m = i * L->token_run; m < (i + 1) * L->token_run && m < L->mc; m++) per_token(arg, m);
}
static inline void moe__prepare_tokens(void *arg, int64_t i) { moe__token_run(arg, i, moe__prepare_token); }
static inline void moe__combine_tokens(void *arg, int64_t i) { moe__token_run(arg, i, moe__combine_token); }

static inline void moe__run_chunk(moe__layer *L, const moe_parallel *par) {
  double t = L->call->stats && L->call->stats->clock ? L->call->stats->clock() : 0.0;
  int64_t runs;
  L->token_run = moe__run_length(L, L->mc, 4, 16);
  runs = moe__cdiv(L->mc, L->token_run);
  moe__parallel_if(par, moe__prepare_tokens, L, runs, L->mc * L->K);
  moe__lap(L, MOE_PHASE_PREPARE, &t);
  moe__sort_chunk(L); /* ids were validated for the whole call */
  if (L->xs) moe__parallel_if(par, moe__gather_block, L, L->n_blocks, L->n_blocks * MOE_BLOCK_M * L->K);
  moe__lap(L, MOE_PHASE_SORT, &t);
  moe__run_experts(L, par);
  moe__lap_experts(L, &t);
  moe__parallel_if(par, moe__combine_tokens, L, runs, L->mc * L->T * L->K);
  moe__lap(L, MOE_PHASE_COMBINE, &t);
}

static inline moe_status moe__run(moe__layer *L, void *ws, size_t ws_size, const moe_parallel *par) {
  moe_status st;
  moe__ws_plan w;
  if (L->call->M == 0) return MOE_OK;
  if ((st = moe__check_data(L, ws, ws_size)) != MOE_OK) return st;
  w = moe__plan_ws(L, L->call->M < L->chunk ? L->call->M : L->chunk);
  moe__carve(L, &w, ws);
  L->n_threads = moe__threads(par);
  for (L->m0 = 0; L->m0 < L->call->M; L->m0 += L->mc) {
    L->mc = L->call->M - L->m0 < L->chunk ? L->call->M - L->m0 : L->chunk;
    moe__run_chunk(L, par);
  }
  return MOE_OK;
}

/* ---- public calls ---------------------------------------------------------------------------------- */
MOE_API const char *moe_version(void) { return MOE_VERSION_STRING; }

/* A parallel pack: each task claims panels until none is left. */
typedef struct moe__pack_job {
  const moe_weights *plain;
  moe__pack_plan pl;
  uint8_t *base;
  int64_t next, units;
} moe__pack_job;

static inline void moe__pack_worker(void *arg, int64_t unused) {
  moe__pack_job *J = (moe__pack_job *)arg;
  int64_t u;
  (void)unused;
  while ((u = __atomic_fetch_add(&J->next, 1, __ATOMIC_RELAXED)) < J->units) moe__pack_unit(J->plain, &J->pl, J->base, u);
}

MOE_API moe_status moe_pack_parallel(const moe_weights *plain, moe_experts *packed, void *buf, size_t size,
                                     const moe_parallel *par) {
  moe__pack_job J;
  moe_status st = moe__pack_begin(plain, packed, buf, size, &J.pl, &J.base);
  if (st != MOE_OK) return st;
  J.plain = plain, J.next = 0, J.units = moe__pack_units(plain, &J.pl);
  if (par) moe__parallel(par, moe__pack_worker, &J, moe__threads(par));
  else moe__pack_worker(&J, 0);
  moe__pack_end(plain, packed, &J.pl, J.base, 0);
  return MOE_OK;
}

MOE_API moe_status moe_workspace_size(const moe_experts *ex, const moe_call *call, size_t *bytes) {
  moe__layer L;
  moe__ws_plan w;
  moe_status st;
  if (!bytes) return MOE_ERR_NULL;
  st = moe__resolve(&L, ex, call ? call->shared : NULL, call, 0);
  if (st != MOE_OK) return st;
  w = moe__plan_ws(&L, call->M < L.chunk ? (call->M > 0 ? call->M : 1) : L.chunk);
  if (!w.total) return MOE_ERR_OVERFLOW;
  *bytes = w.total;
  return MOE_OK;
}

MOE_API moe_status moe_fused_experts(const moe_experts *ex, const moe_call *call, void *workspace,
                                     size_t workspace_size, const moe_parallel *par) {
  moe__layer L;
  moe_status st = moe__resolve(&L, ex, call ? call->shared : NULL, call, 0);
  if (st != MOE_OK) return st;
  return moe__run(&L, workspace, workspace_size, par);
}

MOE_API moe_status moe_shared_expert(const moe_experts *shared, const moe_call *call, const void *routed,
                                     void *workspace, size_t workspace_size, const moe_parallel *par) {
  moe__layer L;
  moe_status st = moe__resolve(&L, shared, shared, call, 1);
  if (st != MOE_OK) return st;
  L.routed_in = routed;
  return moe__run(&L, workspace, workspace_size, par);
}

MOE_API moe_status moe_shared_expert_workspace_size(const moe_experts *shared, const moe_call *call,
                                                    size_t *bytes) {
  moe__layer L;
  moe__ws_plan w;
  moe_status st;
  if (!bytes) return MOE_ERR_NULL;
  if ((st = moe__resolve(&L, shared, shared, call, 1)) != MOE_OK) return st;
  w = moe__plan_ws(&L, call->M < L.chunk ? (call->M > 0 ? call->M : 1) : L.chunk);
  if (!w.total) return MOE_ERR_OVERFLOW;
  *bytes = w.total;
  return MOE_OK;
}

/* A part of moe_route_parallel's tokens: [i * per, (i + 1) * per). */
typedef struct moe__route_task {
  const moe_router *router;
  const uint8_t *logits;
  moe_dtype type;
  int64_t M, per;
  float *w;
  int32_t *ids;
} moe__route_task;
static inline void moe__route_part(void *arg, int64_t i) {
  const moe__route_task *t = (const moe__route_task *)arg;
  const int64_t m0 = i * t->per, n = t->M - m0 < t->per ? t->M - m0 : t->per, E = t->router->E, k = t->router->topk;
  moe_route(t->router, t->logits + (size_t)(m0 * E) * moe__elt(t->type), t->type, n, t->w + m0 * k, t->ids + m0 * k);
}

MOE_API moe_status moe_route_parallel(const moe_router *router, const void *logits, moe_dtype logit_type, int64_t M,
                                      float *topk_weights, int32_t *topk_ids, const moe_parallel *par) {
  moe__route_task t;
  const int64_t min_part = 16; /* tokens: a part is worth waking a thread for (~1 us per token, E = 128) */
  int64_t parts;
  moe_status st;
  /* every check of moe_route first, nothing written: the parts cannot fail */
  if (M < 0) return MOE_ERR_SHAPE;
  if (M > 0 && (!router || !logits || !topk_weights || !topk_ids)) return MOE_ERR_NULL;
  if ((st = moe_route(router, logits, logit_type, 0, topk_weights, topk_ids)) != MOE_OK || M == 0) return st;
  if (M > INT64_MAX / router->E) return MOE_ERR_SHAPE;
  parts = moe__threads(par);
  parts = parts < moe__cdiv(M, min_part) ? parts : moe__cdiv(M, min_part);
  t.router = router, t.logits = (const uint8_t *)logits, t.type = logit_type, t.M = M;
  t.per = moe__cdiv(M, parts), t.w = topk_weights, t.ids = topk_ids;
  moe__parallel_if(par, moe__route_part, &t, moe__cdiv(M, t.per), M * router->E);
  return MOE_OK;
}

/* moe_forward's workspace: per chunk, the routing result, then the fused call's workspace. */
static inline moe_status moe__forward_plan(const moe_experts *ex, const moe_router *router, const moe_call *call,
                                           moe_call *sub, size_t *route_bytes, size_t *fused_bytes) {
  int64_t chunk;
  if (!ex || !router || !call) return MOE_ERR_NULL;
  if (router->topk != call->topk) return MOE_ERR_SHAPE;
  if (router->E != moe__n_global(call, ex->E)) return MOE_ERR_SHAPE;
  chunk = call->chunk_tokens > 0 ? call->chunk_tokens : MOE_DEFAULT_CHUNK;
  *sub = *call;
  sub->M = call->M < chunk ? call->M : chunk;
  if (call->topk < 1 || (size_t)call->topk > SIZE_MAX / 8 / (size_t)(sub->M > 0 ? sub->M : 1)) return MOE_ERR_SHAPE;
  *route_bytes = moe__round_up((size_t)(sub->M > 0 ? sub->M : 1) * (size_t)call->topk * 4, 64);
  return moe_workspace_size(ex, sub, fused_bytes);
}

MOE_API moe_status moe_forward_workspace_size(const moe_experts *ex, const moe_router *router,
                                              const moe_call *call, size_t *bytes) {
  moe_call sub;
  size_t rb = 0, fb = 0;
  moe_status st;
  if (!bytes) return MOE_ERR_NULL;
  if ((st = moe__forward_plan(ex, router, call, &sub, &rb, &fb)) != MOE_OK) return st;
  if (!moe__add_ok(2 * rb, fb, bytes) || !moe__add_ok(*bytes, 64, bytes)) return MOE_ERR_OVERFLOW;
  return MOE_OK;
}

MOE_API moe_status moe_forward(const moe_experts *ex, const moe_router *router, const void *logits,
                               moe_dtype logit_type, const moe_call *call, void *workspace,
                               size_t workspace_size, const moe_parallel *par) {
  moe_call sub;
  size_t rb = 0, fb = 0, need = 0;
  moe_status st;
  uint8_t *ws;
  int64_t chunk;
  if ((st = moe_forward_workspace_size(ex, router, call, &need)) != MOE_OK) return st;
  moe__forward_plan(ex, router, call, &sub, &rb, &fb);
  if (call->M == 0) return MOE_OK;
  if (!logits || !call->x || !call->out) return MOE_ERR_NULL;
  if ((int)logit_type < 0 || logit_type > MOE_F32) return MOE_ERR_ARG;
  if (!workspace || workspace_size < need) return MOE_ERR_WORKSPACE;
  ws = (uint8_t *)workspace + ((64 - ((uintptr_t)workspace & 63)) & 63);
  sub.topk_weights = (const float *)ws;
  sub.topk_ids = (const int32_t *)(ws + rb);
  chunk = sub.M;
  for (int64_t m0 = 0; m0 < call->M; m0 += chunk) {
    int64_t mc = call->M - m0 < chunk ? call->M - m0 : chunk;
    const uint8_t *lg = (const uint8_t *)logits + (size_t)(m0 * router->E) * moe__elt(logit_type);
    st = moe_route_parallel(router, lg, logit_type, mc, (float *)ws, (int32_t *)(ws + rb), par);
    if (st != MOE_OK) return st; /* only the first chunk can fail: nothing was written yet */
    sub.M = mc;
    sub.x = (const uint8_t *)call->x + (size_t)(m0 * (call->ldx ? call->ldx : ex->K)) * moe__elt(call->dtype);
    sub.out = (uint8_t *)call->out + (size_t)(m0 * (call->ldo ? call->ldo : ex->K)) * moe__elt(call->dtype);
    st = moe_fused_experts(ex, &sub, ws + 2 * rb, workspace_size - (size_t)(ws - (uint8_t *)workspace) - 2 * rb, par);
    if (st != MOE_OK) return st;
  }
  return MOE_OK;
}

#endif /* MOE_IMPLEMENTATION_DONE */
#endif /* MOE_IMPLEMENTATION */


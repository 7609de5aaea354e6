/* moe_pthreadpool.h — run moe.h's layers on a pthreadpool (Debian libpthreadpool-dev, the pool of
 * XNNPACK and PyTorch mobile). Header-only, one function; not included by moe.h.
 *
 * USE
 *   #include "moe_pthreadpool.h"          // after moe.h (or alone: it includes moe.h)
 *   pthreadpool_t pool = pthreadpool_create(4);           // 0: one thread per logical CPU
 *   moe_parallel par = moe_pthreadpool(pool);
 *   moe_fused_experts(&ex, &call, ws, ws_size, &par);      // or moe_forward, moe_shared_expert
 *   pthreadpool_destroy(pool);
 *   Link with -lpthreadpool (Debian ships no pkg-config file for it).
 *
 * HOW IT MEETS moe.h'S THREAD CONTRACT
 *   moe_parallel.parallel_for(pool, fn, arg, n) becomes pthreadpool_parallelize_1d(pool, task, &ctx, n,
 *   0), where task(&ctx, i) calls fn(arg, (int64_t)i): pthreadpool's tasks take a size_t index, moe's an
 *   int64_t one, so a trampoline holds fn and arg on the caller's stack for the duration of the call.
 *   pthreadpool runs the n tasks on its threads, the calling thread being one of them, all at the same
 *   time and returns when every task has returned: a pool of OS threads as moe.h asks (tasks may wait
 *   for each other's progress). n_threads is pthreadpool_get_threads_count(pool). No flags are passed:
 *   PTHREADPOOL_FLAG_DISABLE_DENORMALS would flush subnormals and change results. The layer's output is
 *   bitwise the same as with any other pool or thread count (tests/test_pthreadpool.c checks it).
 *   A NULL pool is valid: pthreadpool then runs every task on the calling thread.
 *
 * NOT RE-ENTRANT
 *   pthreadpool serializes the calls made on one pool (a mutex around each parallelize call), so a task
 *   running on the pool must not call moe.h with a moe_parallel of the same pool: that call would wait
 *   for itself. Calls from several outside threads on one pool are safe but run one after the other.
 *   The moe_pthreadpool value holds only the pool pointer: it may be copied freely and stays valid until
 *   pthreadpool_destroy().
 */
#ifndef MOE_PTHREADPOOL_H
#define MOE_PTHREADPOOL_H

#include <stddef.h>
#include <stdint.h>

#include <pthreadpool.h>

#include "moe.h"

/* What the trampoline needs: moe's task and its argument. */
typedef struct moe__pthreadpool_task {
  void (*fn)(void *arg, int64_t i);
  void *arg;
} moe__pthreadpool_task;

static inline void moe__pthreadpool_trampoline(void *context, size_t i) {
  const moe__pthreadpool_task *t = (const moe__pthreadpool_task *)context;
  t->fn(t->arg, (int64_t)i);
}

static inline void moe__pthreadpool_parallel_for(void *pool, void (*fn)(void *arg, int64_t i), void *arg,
                                                 int64_t n) {
  moe__pthreadpool_task t;
  if (n <= 0) return;
  t.fn = fn;
  t.arg = arg;
  pthreadpool_parallelize_1d((pthreadpool_t)pool, moe__pthreadpool_trampoline, &t, (size_t)n, 0);
}

/* A moe_parallel that runs moe.h's tasks on pool (NULL: on the calling thread). */
static inline moe_parallel moe_pthreadpool(pthreadpool_t pool) {
  moe_parallel par;
  size_t n = pool ? pthreadpool_get_threads_count(pool) : 1;
  par.parallel_for = moe__pthreadpool_parallel_for;
  par.pool = (void *)pool;
  par.n_threads = n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
  return par;
}

#endif /* MOE_PTHREADPOOL_H */

/* bench_pool.c — parallel_for publishes a job by bumping a generation; n tasks are shared through an
 * atomic counter by the caller and every worker; each worker checks in when it finds no task left,
 * so the next job's fields are only written once every worker is idle again. Workers spin briefly,
 * then sleep. */
#define _POSIX_C_SOURCE 200809L
#include "bench_pool.h"
#include "bench_common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define POOL_SPIN_S 100e-6 /* workers spin this long for the next job before sleeping */

struct bench_pool {
  int n_workers; /* threads besides the caller */
  pthread_t *threads;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int sleepers; /* under mu */
  atomic_uint gen;
  atomic_int stop;
  atomic_llong next;
  atomic_int checked_in;
  void (*fn)(void *, int64_t);
  void *arg;
  int64_t n;
};

static void pool_run_tasks(bench_pool *p) {
  long long i;
  while ((i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed)) < p->n) p->fn(p->arg, i);
}

static unsigned pool_wait_job(bench_pool *p, unsigned seen) {
  double deadline = now_s() + POOL_SPIN_S;
  unsigned g;
  for (int i = 1;; i++) {
    if ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) != seen) return g;
    cpu_relax();
    if (i % 256 == 0 && now_s() > deadline) break;
  }
  pthread_mutex_lock(&p->mu);
  p->sleepers++;
  while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) pthread_cond_wait(&p->cv, &p->mu);
  p->sleepers--;
  pthread_mutex_unlock(&p->mu);
  return g;
}

static void *pool_worker(void *arg) {
  bench_pool *p = (bench_pool *)arg;
  unsigned seen = 0;
  for (;;) {
    seen = pool_wait_job(p, seen);
    if (atomic_load_explicit(&p->stop, memory_order_acquire)) return NULL;
    pool_run_tasks(p);
    atomic_fetch_add_explicit(&p->checked_in, 1, memory_order_release);
  }
}

static void pool_publish(bench_pool *p) {
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
  if (p->sleepers) pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

void pool_parallel_for(void *pool, void (*fn)(void *, int64_t), void *arg, int64_t n) {
  bench_pool *p = (bench_pool *)pool;
  if (n <= 0) return;
  if (p->n_workers == 0 || n == 1) { /* nothing to share */
    for (int64_t i = 0; i < n; i++) fn(arg, i);
    return;
  }
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  atomic_store_explicit(&p->checked_in, 0, memory_order_relaxed);
  pool_publish(p);
  pool_run_tasks(p);
  while (atomic_load_explicit(&p->checked_in, memory_order_acquire) < p->n_workers) cpu_relax();
}

bench_pool *pool_create(int n_threads) {
  bench_pool *p = (bench_pool *)kit_calloc(sizeof *p);
  p->n_workers = n_threads > 1 ? n_threads - 1 : 0;
  p->threads = (pthread_t *)kit_malloc((size_t)(p->n_workers + 1) * sizeof *p->threads);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  atomic_init(&p->gen, 0);
  atomic_init(&p->stop, 0);
  atomic_init(&p->next, 0);
  atomic_init(&p->checked_in, 0);
  for (int i = 0; i < p->n_workers; i++)
    if (pthread_create(&p->threads[i], NULL, pool_worker, p)) die("pthread_create failed");
  return p;
}

void pool_destroy(bench_pool *p) {
  atomic_store_explicit(&p->stop, 1, memory_order_release);
  pool_publish(p);
  for (int i = 0; i < p->n_workers; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p->threads);
  free(p);
}

int pool_threads(const bench_pool *p) { return p->n_workers + 1; }

static void noop_task(void *arg, int64_t i) { (void)arg, (void)i; }

void pool_warm(bench_pool *p) { pool_parallel_for(p, noop_task, NULL, p->n_workers + 1); }

/* bench_pool.h — the benchmarks' thread pool: the moe_parallel handed to moe_fused_experts, and the
 * workers of the ceilings and kernel loops. */
#ifndef BENCH_POOL_H
#define BENCH_POOL_H

#include <stdint.h>

typedef struct bench_pool bench_pool;

bench_pool *pool_create(int n_threads); /* n_threads - 1 workers besides the caller */
void pool_destroy(bench_pool *p);
int pool_threads(const bench_pool *p);
/* Runs fn(arg, i) for every i < n on the caller and the workers; returns when all are done. */
void pool_parallel_for(void *pool, void (*fn)(void *, int64_t), void *arg, int64_t n);
/* Wakes the workers so that a timed call does not pay for a futex wake-up. */
void pool_warm(bench_pool *p);

#endif /* BENCH_POOL_H */

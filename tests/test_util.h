/* Shared helpers of the tests: a seeded RNG, poisoning, error norms and result reporting.
 * A test program returns 0 (pass), 1 (fail) or 77 (skipped: the machine lacks what it needs). */
#ifndef MOE_TEST_UTIL_H
#define MOE_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_SKIP 77

static int test_failures = 0;

#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      test_failures++;                                                        \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);         \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, "\n");                                                  \
    }                                                                         \
  } while (0)

/* splitmix64: a small, seedable, reproducible generator */
typedef struct test_rng { uint64_t s; } test_rng;
static inline uint64_t test_next(test_rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* uniform in [0, 1) */
static inline double test_uniform(test_rng *r) { return (double)(test_next(r) >> 11) * (1.0 / 9007199254740992.0); }
/* standard normal (Box-Muller) */
static inline double test_normal(test_rng *r) {
  double u1 = test_uniform(r), u2 = test_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static inline int64_t test_randint(test_rng *r, int64_t n) { return (int64_t)(test_next(r) % (uint64_t)n); }

static inline void *test_malloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) { fprintf(stderr, "out of memory (%zu bytes)\n", n); exit(2); }
  return p;
}
/* Fill with a byte pattern that is NaN as f32, bf16 and fp16 (0xFF..): an unwritten element fails. */
static inline void test_poison(void *p, size_t n) { memset(p, 0xFF, n); }

/* ||a - b|| / ||b||, NaN when any element of a is NaN or Inf (NaN never passes) */
static inline double test_rel_err(const double *a, const double *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(a[i])) return NAN;
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static inline int test_finish(const char *name) {
  if (test_failures) fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
  else printf("%s: ok\n", name);
  return test_failures ? 1 : 0;
}

#endif

/* Shared helpers of the tests: checks, poisoning, error norms and result reporting; the RNG, random
 * weights and model shapes come from kit.h (shared with the benchmarks and examples).
 * A test program returns 0 (pass), 1 (fail) or 77 (skipped: the machine lacks what it needs). */
#ifndef MOE_TEST_UTIL_H
#define MOE_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

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

static inline void *test_malloc(size_t n) { return kit_malloc(n); }
/* Fill with a byte pattern that is NaN as f32, bf16 and fp16 (0xFF..): an unwritten element fails. */
static inline void test_poison(void *p, size_t n) { memset(p, 0xFF, n); }
/* 1 when all n bytes still hold the poison (nothing was written there). */
static inline int test_untouched(const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++)
    if (c[i] != 0xFF) return 0;
  return 1;
}

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

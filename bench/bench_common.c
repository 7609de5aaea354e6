/* bench_common.c — errors, clock, statistics, option parsing and JSON lines for the benchmarks. */
#define _POSIX_C_SOURCE 200809L
#include "bench_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *bench_prog = "bench";

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", bench_prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void sleep_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&t, NULL);
}

int have_features(uint32_t f) { return (moe_cpu_features() & f) == f; }

size_t l2_cache_bytes(void) {
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? (size_t)l2 : (size_t)1 << 20;
}

int64_t units_per_expert(const moe_experts *ex, int gemm) {
  return gemm == 1 ? (ex->N + MOE_NR - 1) / MOE_NR : (ex->K + 2 * MOE_NR - 1) / (2 * MOE_NR);
}

size_t unit_at(const moe_experts *ex, int gemm, int64_t u, moe_gemm_args *g) {
  int64_t upe = units_per_expert(ex, gemm), e = u / upe, p = u % upe;
  if (gemm == 1) {
    g->w = ex->w13 + (size_t)(e * ex->panels13 + 2 * p) * ex->panel13_bytes;
    g->nr = (int32_t)(ex->N - MOE_NR * p < MOE_NR ? ex->N - MOE_NR * p : MOE_NR);
    return 2 * ex->panel13_bytes;
  }
  g->w = ex->w2 + (size_t)(e * ex->panels2 + 2 * p) * ex->panel2_bytes;
  g->nr = (int32_t)(ex->K - 2 * MOE_NR * p < 2 * MOE_NR ? ex->K - 2 * MOE_NR * p : 2 * MOE_NR);
  return (g->nr > MOE_NR ? 2 : 1) * ex->panel2_bytes;
}

int64_t cache_units(const moe_experts *ex, int gemm, size_t l2_bytes) {
  moe_gemm_args g;
  const int64_t n = (int64_t)(l2_bytes / 2 / unit_at(ex, gemm, 0, &g)), most = units_per_expert(ex, gemm);
  return n < 1 ? 1 : n > most ? most : n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

stats stats_of(const double *v, int n) {
  double *s = (double *)kit_malloc((size_t)n * sizeof *s);
  stats r;
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  r.min = s[0];
  r.max = s[n - 1];
  r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  free(s);
  return r;
}

int parse_list(const char *s, int64_t *out, int max) {
  int n = 0;
  char *end;
  while (*s) {
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 1 || n == max) die("bad number list '%s'", s);
    out[n++] = (int64_t)v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') die("bad number list near '%s'", end);
  }
  return n;
}

const char *prec_name(moe_precision p) {
  const char *name = moe_precision_name(p);
  return name ? name : "?";
}

int parse_precisions(const char *s, moe_precision *out) {
  int n = 0;
  if (!strcmp(s, "all")) {
    for (int p = 0; p < MOE_PREC_COUNT; p++) out[n++] = (moe_precision)p;
    return n;
  }
  while (*s) {
    size_t len = strcspn(s, ",");
    int found = -1;
    for (int p = 0; p < MOE_PREC_COUNT; p++)
      if (strlen(prec_name((moe_precision)p)) == len && !strncmp(s, prec_name((moe_precision)p), len))
        found = p;
    if (found < 0 || n == MOE_PREC_COUNT) die("unknown precision in '%s'", s);
    out[n++] = (moe_precision)found;
    s += len + (s[len] == ',');
  }
  return n;
}

moe_isa parse_isa(const char *s) {
  moe_isa isa = moe_isa_from_name(s);
  if (isa == MOE_ISA_COUNT) {
    fprintf(stderr, "%s: unknown isa '%s'; tiers:", bench_prog, s);
    for (int i = 0; i < (int)MOE_ISA_COUNT; i++) fprintf(stderr, " %s", moe_isa_name((moe_isa)i));
    fputc('\n', stderr);
    exit(1);
  }
  if (!moe_isa_available(isa)) {
    int compiled = 0;
    for (int i = 0; i < moe_kernel_count(); i++) compiled |= moe_kernel_at(i)->isa == isa;
    die("--isa %s: %s; the best tier here is %s", s,
        compiled ? "this CPU (or OS) lacks the features of its kernels" : "this build has no kernels of that tier",
        moe_isa_name(moe_get_isa()));
  }
  return isa;
}

static void json_add(json *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (j->len < sizeof j->buf) j->len += (size_t)vsnprintf(j->buf + j->len, sizeof j->buf - j->len, fmt, ap);
  va_end(ap);
}

static const char *json_sep(const json *j) { return j->len > 1 ? "," : ""; }

void json_begin(json *j) {
  j->buf[0] = '{', j->buf[1] = '\0';
  j->len = 1;
}
void json_str(json *j, const char *k, const char *v) { json_add(j, "%s\"%s\":\"%s\"", json_sep(j), k, v); }
void json_int(json *j, const char *k, long long v) { json_add(j, "%s\"%s\":%lld", json_sep(j), k, v); }
void json_num(json *j, const char *k, double v) {
  if (isfinite(v)) json_add(j, "%s\"%s\":%.6g", json_sep(j), k, v);
  else json_null(j, k); /* JSON has no NaN or Inf */
}
void json_null(json *j, const char *k) { json_add(j, "%s\"%s\":null", json_sep(j), k); }
void json_bool(json *j, const char *k, int v) { json_add(j, "%s\"%s\":%s", json_sep(j), k, v ? "true" : "false"); }

void json_end(json *j) {
  printf("%s}\n", j->buf);
  fflush(stdout);
}

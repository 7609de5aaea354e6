/* bench_common.h — what every benchmark source shares: errors, the clock, CPU features, statistics,
 * option parsing and JSON lines (docs/benchmarks.md, "JSON fields"). The kit (tests/kit.h)
 * brings moe.h, the RNG, the model shapes and random weights.
 *
 * bench_stream, bench_pack and bench_load link libmoe's static library (one build of moe.c);
 * bench_kernels and bench_layer, which reach into the AMX tier (bench_decode.h), define
 * MOE_IMPLEMENTATION with MOE_API empty instead (external linkage, as moe.c does), so their other
 * sources link against it. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include "kit.h"

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define BENCH_NORETURN __attribute__((noreturn, format(printf, 1, 2)))
#else
#define BENCH_NORETURN
#endif

extern const char *bench_prog; /* prefix of every message: the executable's name */

/* Prints "<bench_prog>: <message>" on stderr and exits with status 1. */
BENCH_NORETURN void die(const char *fmt, ...);
double now_s(void); /* monotonic seconds */
void sleep_s(double s);
int have_features(uint32_t f); /* all MOE_CPU_* bits of f present */
size_t l2_cache_bytes(void);   /* one core's L2 (sysconf), else 1 MiB */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

typedef struct stats {
  double median, min, max;
} stats;
stats stats_of(const double *v, int n); /* n >= 1 */

/* The kernels' units (bench_kernels, bench_decode.h): one call's panels, GEMM1 the gate and up panels
 * of 32 h columns, GEMM2 two neighbouring output panels (64 columns; an expert's last may hold one),
 * numbered across the experts in memory order. */
int64_t units_per_expert(const moe_experts *ex, int gemm);
size_t unit_at(const moe_experts *ex, int gemm, int64_t u, moe_gemm_args *g); /* points g at unit u (w, nr); its bytes */
int64_t cache_units(const moe_experts *ex, int gemm, size_t l2_bytes); /* expert 0's first units filling half of L2 */

/* Options shared by the benchmarks. */
int parse_list(const char *s, int64_t *out, int max); /* "1,8,32": positive integers */
const char *prec_name(moe_precision p);
/* "all" or a comma list of precision names into out[MOE_PREC_COUNT]; their count. Dies on an
 * unknown name. */
int parse_precisions(const char *s, moe_precision *out);
/* The tier called s; dies when there is none, or when this CPU (or build) cannot run it: a benchmark
 * never runs another tier than the one asked for. */
moe_isa parse_isa(const char *s);

/* One JSON object, built field by field and printed as one line on stdout. */
typedef struct json {
  char buf[4096];
  size_t len;
} json;
void json_begin(json *j);
void json_str(json *j, const char *k, const char *v);
void json_int(json *j, const char *k, long long v);
void json_num(json *j, const char *k, double v);
void json_null(json *j, const char *k);
void json_bool(json *j, const char *k, int v);
void json_end(json *j); /* prints the line and flushes */

#endif /* BENCH_COMMON_H */

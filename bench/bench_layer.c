/* bench_layer — one whole MoE layer (moe_fused_experts: sort, quantize, both GEMMs, combine) on real
 * model shapes, against the machine's ceilings and a oneDNN engine-style peer, measured in the same run.
 *
 *   bench_layer --model qwen3-30b-a3b --precision int8 --m 1,8,32,128,512 --threads 2
 *
 * One JSON line per (precision, M) on stdout, a human table on stderr (see bench/README).
 * Memory bandwidth on shared machines drifts within minutes, so every round is interleaved
 * (bandwidth probe, our layer, oneDNN layer) and the fractions and speedups are medians of per-round
 * ratios. Every timed layer starts with cold caches: the 1 GiB probe runs between rounds.
 */
#define _POSIX_C_SOURCE 200809L
#define MOE_IMPLEMENTATION
#include "moe.h"

#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if MOE_BENCH_ONEDNN
#include <dnnl.h>
#ifdef _OPENMP
#include <omp.h>
/* Loops of the peer's element-wise work: parallel when the enclosing function's `work` (elements)
 * is worth a fork-join, as engines do. */
#define PEER_PARALLEL_FOR _Pragma("omp parallel for schedule(static) if(work >= 16384)")
#else
#define PEER_PARALLEL_FOR
#endif
#endif

#define MAX_LIST 64
#define SETTLE_S 0.005         /* idle gap before each timed item: both runtimes' threads stop spinning */
#define POOL_SPIN_S 100e-6     /* our workers spin this long for the next job before sleeping */
#define PROBE_BYTES (1ull << 30)
#define PROBE_PARTS 16 /* 64 MiB each, timed alone: the best part is the rate (robust to preemption) */
#define PROBE_CHUNK (4ull << 20)
#define PEER_MAX_REL_ERR 3e-2

/* ==== small utilities ============================================================================ */
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench_layer: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) die("out of memory (%zu bytes)", bytes);
  return p;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&t, NULL);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct stats {
  double median, min, max;
} stats;

static stats stats_of(const double *v, int n) {
  double *s = (double *)xmalloc((size_t)n * sizeof *s);
  stats r;
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  r.min = s[0];
  r.max = s[n - 1];
  r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  free(s);
  return r;
}

/* splitmix64 seeds, xorshift64* streams: fast enough to fill gigabytes of weights. */
static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

typedef struct rng {
  uint64_t s;
} rng;

static rng rng_seeded(uint64_t seed, uint64_t stream) {
  rng r = {splitmix64(seed ^ splitmix64(stream)) | 1u};
  return r;
}

static inline uint64_t rng_next(rng *r) {
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return r->s * 0x2545F4914F6CDD1Dull;
}

static inline double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

static void rng_fill_bytes(rng *r, uint8_t *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng_next(r);
    memcpy(dst + i, &v, 8);
  }
  for (uint64_t v = rng_next(r); i < n; i++, v >>= 8) dst[i] = (uint8_t)v;
}

/* ==== thread pool: the moe_parallel handed to moe_fused_experts =================================
 * parallel_for publishes a job by bumping a generation; n tasks are shared through an atomic counter
 * by the caller and every worker; each worker checks in when it finds no task left, so the next job's
 * fields are only written once every worker is idle again. Workers spin briefly, then sleep. */
typedef struct bench_pool {
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
} bench_pool;

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

static void pool_parallel_for(void *pool, void (*fn)(void *, int64_t), void *arg, int64_t n) {
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

static bench_pool *pool_create(int n_threads) {
  bench_pool *p = (bench_pool *)xmalloc(sizeof *p);
  memset(p, 0, sizeof *p);
  p->n_workers = n_threads > 1 ? n_threads - 1 : 0;
  p->threads = (pthread_t *)xmalloc((size_t)(p->n_workers + 1) * sizeof *p->threads);
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

static void pool_destroy(bench_pool *p) {
  atomic_store_explicit(&p->stop, 1, memory_order_release);
  pool_publish(p);
  for (int i = 0; i < p->n_workers; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p->threads);
  free(p);
}

static void noop_task(void *arg, int64_t i) { (void)arg, (void)i; }

/* Wakes the workers so that a timed call does not pay for a futex wake-up. */
static void pool_warm(bench_pool *p) { pool_parallel_for(p, noop_task, NULL, p->n_workers + 1); }

/* ==== ceilings: DRAM read bandwidth and dot-product peaks, measured on all threads =============== */
typedef struct probe_ctx {
  const uint8_t *buf;
  uint64_t sink[PROBE_BYTES / PROBE_CHUNK];
} probe_ctx;

/* Sums one chunk with 512-bit loads into 8 independent accumulators (touches every cache line). */
__attribute__((target("avx512f"))) static uint64_t sum_chunk_avx512(const uint8_t *p, size_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  uint64_t lanes[8], sum = 0;
  for (size_t i = 0; i < bytes; i += 512) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *)(p + i)));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512((const void *)(p + i + 64)));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512((const void *)(p + i + 128)));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512((const void *)(p + i + 192)));
    a4 = _mm512_add_epi64(a4, _mm512_load_si512((const void *)(p + i + 256)));
    a5 = _mm512_add_epi64(a5, _mm512_load_si512((const void *)(p + i + 320)));
    a6 = _mm512_add_epi64(a6, _mm512_load_si512((const void *)(p + i + 384)));
    a7 = _mm512_add_epi64(a7, _mm512_load_si512((const void *)(p + i + 448)));
  }
  a0 = _mm512_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)),
                        _mm512_add_epi64(_mm512_add_epi64(a4, a5), _mm512_add_epi64(a6, a7)));
  _mm512_storeu_si512((void *)lanes, a0); /* summed unsigned: the sum may wrap */
  for (int i = 0; i < 8; i++) sum += lanes[i];
  return sum;
}

static uint64_t sum_chunk_portable(const uint8_t *p, size_t bytes) {
  const uint64_t *q = (const uint64_t *)(const void *)p;
  uint64_t s = 0;
  for (size_t i = 0; i < bytes / 8; i++) s += q[i];
  return s;
}

static uint32_t cpu_features; /* moe_cpu_features() once: CPUID traps to the hypervisor in VMs */

static int have_features(uint32_t f) { return (cpu_features & f) == f; }

typedef struct probe_part {
  probe_ctx *c;
  int64_t first; /* chunk index */
} probe_part;

static void probe_task(void *arg, int64_t i) {
  probe_part *part = (probe_part *)arg;
  probe_ctx *c = part->c;
  const uint8_t *p = c->buf + (size_t)(part->first + i) * PROBE_CHUNK;
  i += part->first;
  c->sink[i] = have_features(MOE_CPU_AVX512F) ? sum_chunk_avx512(p, PROBE_CHUNK) : sum_chunk_portable(p, PROBE_CHUNK);
}

static probe_ctx *probe_create(void) {
  probe_ctx *c = (probe_ctx *)xmalloc(sizeof *c);
  void *buf = NULL;
  if (posix_memalign(&buf, 4096, PROBE_BYTES)) die("out of memory for the bandwidth probe");
  memset(buf, 0x5A, PROBE_BYTES); /* real pages, not the shared zero page */
  c->buf = (const uint8_t *)buf;
  return c;
}

static void probe_destroy(probe_ctx *c) {
  free((void *)c->buf);
  free(c);
}

/* GB/s of a 1 GiB read shared by all threads: the best of its PROBE_PARTS parts, each timed alone. */
static double probe_bandwidth(probe_ctx *c, bench_pool *pool) {
  const int64_t chunks = (int64_t)(PROBE_BYTES / PROBE_CHUNK / PROBE_PARTS);
  double best = 0.0;
  for (int i = 0; i < PROBE_PARTS; i++) {
    probe_part part = {c, i * chunks};
    double t0, gbs;
    pool_warm(pool);
    t0 = now_s();
    pool_parallel_for(pool, probe_task, &part, chunks);
    gbs = (double)(chunks * PROBE_CHUNK) / (now_s() - t0) / 1e9;
    best = gbs > best ? gbs : best;
  }
  return best;
}

#define PEAK_ITERS (1 << 18) /* ~1 ms per trial */
#define PEAK_TRIALS 40       /* the best trial: other processes share the machine */
#define PEAK_CHAINS 12 /* independent accumulators: more than latency x throughput of the unit */

typedef struct peak_ctx {
  int bf16;          /* 0: vpdpbusd, 1: vdpbf16ps */
  double *task_s;    /* [n_threads] each task's own time */
  float *sink;       /* [n_threads] */
} peak_ctx;

/* Register-only vpdpbusd loop: 64 u8 x s8 MACs = 128 ops per instruction. */
__attribute__((target("avx512f,avx512vnni"))) static float peak_loop_vnni(void) {
  __m512i acc[PEAK_CHAINS], a = _mm512_set1_epi32(0x01020304), b = _mm512_set1_epi32(0x01FF01FF);
  for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_set1_epi32(c);
  for (int i = 0; i < PEAK_ITERS; i++)
    for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
  for (int c = 1; c < PEAK_CHAINS; c++) acc[0] = _mm512_add_epi32(acc[0], acc[c]);
  return (float)_mm512_reduce_add_epi32(acc[0]);
}

/* Register-only vdpbf16ps loop: 32 bf16 pair MACs = 64 flops per instruction. */
__attribute__((target("avx512f,avx512bf16"))) static float peak_loop_bf16(void) {
  __m512 acc[PEAK_CHAINS];
  __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80), b = (__m512bh)_mm512_set1_epi32(0x3A803A80);
  for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  for (int i = 0; i < PEAK_ITERS; i++)
    for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  for (int c = 1; c < PEAK_CHAINS; c++) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  return _mm512_reduce_add_ps(acc[0]);
}

static void peak_task(void *arg, int64_t i) {
  peak_ctx *c = (peak_ctx *)arg;
  double t0 = now_s();
  c->sink[i] = c->bf16 ? peak_loop_bf16() : peak_loop_vnni();
  c->task_s[i] = now_s() - t0;
}

/* GFLOPS (GOPS) of the dot-product unit with all threads running the loop at once: per trial the sum
 * of each thread's own rate (a thread that other processes preempt only lowers its own part), the
 * best of PEAK_TRIALS trials. */
static double measure_peak(bench_pool *pool, int n_threads, int bf16) {
  peak_ctx c;
  double best = 0.0, ops = (double)PEAK_ITERS * PEAK_CHAINS * (bf16 ? 64.0 : 128.0);
  if (!have_features(bf16 ? MOE_CPU_AVX512F | MOE_CPU_AVX512BF16 : MOE_CPU_AVX512F | MOE_CPU_AVX512VNNI))
    return 0.0;
  c.bf16 = bf16;
  c.task_s = (double *)xmalloc((size_t)n_threads * sizeof *c.task_s);
  c.sink = (float *)xmalloc((size_t)n_threads * sizeof *c.sink);
  for (int trial = 0; trial < PEAK_TRIALS; trial++) {
    double g = 0.0;
    pool_warm(pool);
    pool_parallel_for(pool, peak_task, &c, n_threads);
    for (int i = 0; i < n_threads; i++) g += ops / c.task_s[i] / 1e9;
    best = g > best ? g : best;
  }
  free(c.task_s);
  free(c.sink);
  return best;
}

typedef struct ceilings {
  double gops_vnni, gflops_bf16; /* 0 when the CPU lacks the instruction */
} ceilings;

/* int8 and int4-w4a8 run on vpdpbusd; every other precision computes with bf16 dot products. */
static double peak_for(const ceilings *c, moe_precision p) {
  return p == MOE_PREC_INT8 || p == MOE_PREC_INT4_W4A8 ? c->gops_vnni : c->gflops_bf16;
}

/* ==== options ==================================================================================== */
typedef struct model_shape {
  const char *name;
  int64_t K, N, E;
  int32_t topk;
} model_shape;

/* REFERENCE.md's model-shape table. */
static const model_shape MODELS[] = {
    {"mixtral-8x7b", 4096, 14336, 8, 2},     {"qwen3-30b-a3b", 2048, 768, 128, 8},
    {"deepseek-v3", 7168, 2048, 256, 8},     {"qwen1.5-moe-a2.7b", 2048, 1408, 60, 4},
    {"gpt-oss-20b", 2880, 2880, 32, 4},      {"llama-4-scout", 5120, 8192, 16, 1},
};
#define N_MODELS ((int)(sizeof MODELS / sizeof MODELS[0]))

typedef struct options {
  model_shape shape;
  moe_precision prec[MOE_PREC_COUNT];
  int n_prec;
  int64_t m[MAX_LIST];
  int n_m;
  int threads, runs;
  moe_isa isa;
  double budget_s, mem_gib;
  uint64_t seed;
} options;

static void usage(void) {
  fputs("usage: bench_layer [--model NAME|custom] [--precision LIST|all] [--m LIST] [--threads T]\n"
        "                   [--runs R] [--quick] [--isa scalar|avx512|amx] [--dtype bf16]\n"
        "                   [--K K --N N --E E --topk k] [--seed S] [--budget SECONDS] [--mem-gib G]\n"
        "  models: mixtral-8x7b qwen3-30b-a3b deepseek-v3 qwen1.5-moe-a2.7b gpt-oss-20b llama-4-scout,\n"
        "          or custom with --K --N --E --topk (which also override a named model's shape)\n"
        "  precisions: bf16 fp16 int8 fp8 int4-w4a8 int4-w4a16 mxfp4 (comma list, or all)\n"
        "  --runs R: rounds per (precision, M), default 21 (--quick: 5); fewer when one case would\n"
        "            take more than --budget seconds (default 60), never fewer than 3\n"
        "  --mem-gib G: memory for the experts' copies (default 8); larger models run with fewer\n"
        "            experts (\"E\" in the output, the model's count in \"E_model\")\n",
        stderr);
  exit(2);
}

static int parse_list(const char *s, int64_t *out, int max) {
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

static const char *prec_name(moe_precision p) {
  const char *name = moe_precision_name(p);
  return name ? name : "?";
}

static int parse_precisions(const char *s, moe_precision *out) {
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

static moe_isa parse_isa(const char *s) {
  for (int i = 0; i < MOE_ISA_COUNT; i++)
    if (!strcmp(s, moe_isa_name((moe_isa)i))) return (moe_isa)i;
  die("unknown isa '%s' (scalar, avx512, amx)", s);
  return MOE_ISA_SCALAR;
}

static const model_shape *find_model(const char *name) {
  for (int i = 0; i < N_MODELS; i++)
    if (!strcmp(name, MODELS[i].name)) return &MODELS[i];
  return NULL;
}

static options parse_options(int argc, char **argv) {
  options o;
  int quick = 0, runs = 0;
  memset(&o, 0, sizeof o);
  o.shape = MODELS[1];
  o.n_prec = parse_precisions("int8", o.prec);
  o.n_m = parse_list("1,8,32,128,512", o.m, MAX_LIST);
  o.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  o.isa = MOE_ISA_AMX;
  o.budget_s = 60.0;
  o.mem_gib = 8.0;
  o.seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick")) { quick = 1; continue; }
    if (!strcmp(a, "--help") || !strcmp(a, "-h") || !v) usage();
    i++;
    if (!strcmp(a, "--model")) {
      const model_shape *m = find_model(v);
      if (!m && strcmp(v, "custom")) die("unknown model '%s'", v);
      if (m) o.shape = *m;
      else o.shape.name = "custom";
    } else if (!strcmp(a, "--precision")) o.n_prec = parse_precisions(v, o.prec);
    else if (!strcmp(a, "--m")) o.n_m = parse_list(v, o.m, MAX_LIST);
    else if (!strcmp(a, "--threads")) o.threads = atoi(v);
    else if (!strcmp(a, "--runs")) runs = atoi(v);
    else if (!strcmp(a, "--isa")) o.isa = parse_isa(v);
    else if (!strcmp(a, "--dtype")) { if (strcmp(v, "bf16")) die("only --dtype bf16 is supported"); }
    else if (!strcmp(a, "--K")) o.shape.K = atoll(v);
    else if (!strcmp(a, "--N")) o.shape.N = atoll(v);
    else if (!strcmp(a, "--E")) o.shape.E = atoll(v);
    else if (!strcmp(a, "--topk")) o.shape.topk = atoi(v);
    else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--budget")) o.budget_s = atof(v);
    else if (!strcmp(a, "--mem-gib")) o.mem_gib = atof(v);
    else usage();
  }
  o.runs = runs > 0 ? runs : (quick ? 5 : 21);
  if (o.threads < 1) die("--threads must be >= 1");
  if (o.shape.K < 1 || o.shape.N < 1 || o.shape.E < 1 || o.shape.topk < 1 || o.shape.topk > o.shape.E)
    die("bad shape K=%lld N=%lld E=%lld topk=%d", (long long)o.shape.K, (long long)o.shape.N,
        (long long)o.shape.E, o.shape.topk);
  return o;
}

/* ==== weights: random plain experts, generated per expert from a fixed seed ========================
 * Quantized precisions get random codes and scales directly (what the library's quantizers produce
 * from uniform weights, without an f32 copy of hundreds of millions of weights); bf16 and fp16 round
 * uniform f32. Each expert regenerates identically, so the peer can rebuild it one at a time. */
typedef struct mat_layout {
  size_t code_bytes, n_scale, n_zero, n_e8m0; /* one expert's codes; f32 scales; u8 zeros; u8 e8m0 */
} mat_layout;

#define FP8_BLOCK 128 /* moe_weights block_n/block_k 0 means 128 */
#define INT4_GROUP 128

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int is_4bit(moe_precision p) {
  return p == MOE_PREC_INT4_W4A8 || p == MOE_PREC_INT4_W4A16 || p == MOE_PREC_MXFP4;
}

static size_t row_bytes(moe_precision p, int64_t cols) {
  if (p == MOE_PREC_BF16 || p == MOE_PREC_FP16) return (size_t)cols * 2;
  if (p == MOE_PREC_INT8 || p == MOE_PREC_FP8) return (size_t)cols;
  return (size_t)(cols + 1) / 2;
}

static mat_layout layout_of(moe_precision p, int64_t rows, int64_t cols) {
  mat_layout l;
  size_t r = (size_t)rows;
  memset(&l, 0, sizeof l);
  l.code_bytes = r * row_bytes(p, cols);
  if (p == MOE_PREC_INT8) l.n_scale = r;
  if (p == MOE_PREC_FP8) l.n_scale = (size_t)cdiv(rows, FP8_BLOCK) * (size_t)cdiv(cols, FP8_BLOCK);
  if (p == MOE_PREC_INT4_W4A8 || p == MOE_PREC_INT4_W4A16)
    l.n_scale = l.n_zero = r * (size_t)cdiv(cols, INT4_GROUP);
  if (p == MOE_PREC_MXFP4) l.n_e8m0 = r * (size_t)cdiv(cols, 32);
  return l;
}

static size_t layout_bytes(const mat_layout *l) { return l->code_bytes + 4 * l->n_scale + l->n_zero + l->n_e8m0; }

/* One matrix (of one expert, or the first of E) in the plain layout. */
typedef struct plain_mat {
  uint8_t *codes;
  float *scale;
  uint8_t *zero, *e8m0;
} plain_mat;

typedef struct plain_experts {
  moe_precision p;
  int64_t E, N, K;
  mat_layout l13, l2; /* per expert: W13 [2N, K], W2 [K, N] */
  plain_mat w13, w2;  /* all E experts */
} plain_experts;

static plain_mat mat_alloc(const mat_layout *l, int64_t E) {
  plain_mat m;
  m.codes = (uint8_t *)xmalloc(l->code_bytes * (size_t)E);
  m.scale = (float *)xmalloc(4 * l->n_scale * (size_t)E);
  m.zero = (uint8_t *)xmalloc(l->n_zero * (size_t)E);
  m.e8m0 = (uint8_t *)xmalloc(l->n_e8m0 * (size_t)E);
  return m;
}

static void mat_free(plain_mat *m) {
  free(m->codes), free(m->scale), free(m->zero), free(m->e8m0);
  memset(m, 0, sizeof *m);
}

static plain_mat mat_expert(const plain_mat *m, const mat_layout *l, int64_t e) {
  plain_mat s;
  s.codes = m->codes + l->code_bytes * (size_t)e;
  s.scale = m->scale + l->n_scale * (size_t)e;
  s.zero = m->zero + l->n_zero * (size_t)e;
  s.e8m0 = m->e8m0 + l->n_e8m0 * (size_t)e;
  return s;
}

static plain_experts plain_alloc(moe_precision p, int64_t E, int64_t N, int64_t K) {
  plain_experts w;
  w.p = p, w.E = E, w.N = N, w.K = K;
  w.l13 = layout_of(p, 2 * N, K);
  w.l2 = layout_of(p, K, N);
  w.w13 = mat_alloc(&w.l13, E);
  w.w2 = mat_alloc(&w.l2, E);
  return w;
}

static void plain_free(plain_experts *w) {
  mat_free(&w->w13);
  mat_free(&w->w2);
}

/* Uniform(-amp, amp) rounded to bf16 or fp16. */
static void gen_half(rng *r, moe_precision p, uint16_t *dst, size_t n, double amp) {
  float k = (float)(amp * 0x1.0p-31);
  for (size_t i = 0; i < n; i += 2) {
    uint64_t v = rng_next(r);
    float f0 = (float)(int32_t)(uint32_t)v * k, f1 = (float)(int32_t)(uint32_t)(v >> 32) * k;
    dst[i] = p == MOE_PREC_BF16 ? moe_f32_to_bf16(f0) : moe_f32_to_f16(f0);
    if (i + 1 < n) dst[i + 1] = p == MOE_PREC_BF16 ? moe_f32_to_bf16(f1) : moe_f32_to_f16(f1);
  }
}

/* Random codes of a quantized precision: int8 in [-127, 127], e4m3 without NaN, any nibble pair. */
static void gen_codes(rng *r, moe_precision p, uint8_t *dst, int64_t rows, int64_t cols) {
  size_t n = (size_t)rows * row_bytes(p, cols);
  rng_fill_bytes(r, dst, n);
  if (p == MOE_PREC_INT8)
    for (size_t i = 0; i < n; i++) dst[i] = dst[i] == 0x80 ? 0x81 : dst[i];
  if (p == MOE_PREC_FP8)
    for (size_t i = 0; i < n; i++) dst[i] = (dst[i] & 0x7F) == 0x7F ? dst[i] ^ 1 : dst[i];
  if (is_4bit(p) && cols % 2) /* the pad nibble of each row stays 0 */
    for (int64_t row = 0; row < rows; row++) dst[(size_t)(row + 1) * row_bytes(p, cols) - 1] &= 0x0F;
}

/* One matrix whose weights spread about +-amp: codes, then scales (jittered by +-25%) that give
 * the codes' typical magnitude that spread. */
static void gen_matrix(rng *r, moe_precision p, int64_t rows, int64_t cols, double amp, const mat_layout *l,
                       plain_mat *m) {
  if (p == MOE_PREC_BF16 || p == MOE_PREC_FP16) {
    gen_half(r, p, (uint16_t *)(void *)m->codes, (size_t)rows * (size_t)cols, amp);
    return;
  }
  gen_codes(r, p, m->codes, rows, cols);
  {
    /* typical |code|: int8 uniform 127; random e4m3 ~150 (rms); int4 (q - 8) ~8 */
    double unit = p == MOE_PREC_INT8 ? 127.0 : p == MOE_PREC_FP8 ? 150.0 : 8.0;
    for (size_t i = 0; i < l->n_scale; i++) m->scale[i] = (float)(amp / unit * (0.75 + 0.5 * rng_unit(r)));
  }
  for (size_t i = 0; i < l->n_zero; i++) m->zero[i] = (uint8_t)(7 + (rng_next(r) & 1));
  for (size_t i = 0; i < l->n_e8m0; i++) /* e2m1 codes have rms ~3: scale 2^(s-127) ~ amp/3 */
    m->e8m0[i] = (uint8_t)(127 + (int)floor(log2(amp / 3.0)) + (int)(rng_next(r) % 2));
}

/* Expert e (W13 and W2) into m13 and m2, the same whatever else is generated. */
static void gen_expert(moe_precision p, int64_t N, int64_t K, uint64_t seed, int64_t e, plain_mat *m13,
                       plain_mat *m2) {
  mat_layout l13 = layout_of(p, 2 * N, K), l2 = layout_of(p, K, N);
  uint64_t stream = (uint64_t)p << 40 | (uint64_t)e << 1;
  rng r13 = rng_seeded(seed, stream), r2 = rng_seeded(seed, stream | 1);
  gen_matrix(&r13, p, 2 * N, K, sqrt(3.0 / (double)K), &l13, m13);
  gen_matrix(&r2, p, K, N, sqrt(3.0 / (double)N), &l2, m2);
}

static void plain_generate(plain_experts *w, uint64_t seed) {
  for (int64_t e = 0; e < w->E; e++) {
    plain_mat m13 = mat_expert(&w->w13, &w->l13, e), m2 = mat_expert(&w->w2, &w->l2, e);
    gen_expert(w->p, w->N, w->K, seed, e, &m13, &m2);
  }
}

static moe_weights plain_descriptor(const plain_experts *w) {
  moe_weights d;
  memset(&d, 0, sizeof d);
  d.precision = w->p;
  d.E = w->E, d.N = w->N, d.K = w->K;
  d.w13 = w->w13.codes, d.w2 = w->w2.codes;
  if (w->l13.n_scale) d.w13_scale = w->w13.scale, d.w2_scale = w->w2.scale;
  if (w->l13.n_zero) d.w13_zero = w->w13.zero, d.w2_zero = w->w2.zero;
  if (w->l13.n_e8m0) d.w13_e8m0 = w->w13.e8m0, d.w2_e8m0 = w->w2.e8m0;
  d.block_n = d.block_k = FP8_BLOCK;
  d.group = INT4_GROUP;
  return d;
}

/* Bytes one expert's weights take in storage (codes + scales, zero points, e8m0), W13 and W2. */
static double expert_bytes(moe_precision p, int64_t N, int64_t K) {
  mat_layout l13 = layout_of(p, 2 * N, K), l2 = layout_of(p, K, N);
  return (double)(layout_bytes(&l13) + layout_bytes(&l2));
}

/* ==== one layer call's inputs =====================================================================
 * One M: x, and a fresh routing per round, as every decode step routes afresh: a round does not find
 * the experts of the round before in the caches. */
typedef struct layer_case {
  int64_t M, K, E;
  int32_t topk;
  int n_routes;
  uint16_t *x;                 /* [M, K] bf16 */
  uint16_t *out, *out_peer;    /* [M, K] bf16 */
  int32_t *all_ids;            /* [n_routes][M, topk] distinct experts per token */
  float *all_weights;          /* [n_routes][M, topk] positive, summing to 1 per token */
  int64_t *all_hit;            /* [n_routes] distinct experts in each routing */
  const int32_t *ids;          /* the routing in use (case_use_route) */
  const float *weights;
  int64_t experts_hit;
} layer_case;

static void route_uniform(layer_case *c, int route, rng *r) {
  int32_t *perm = (int32_t *)xmalloc((size_t)c->E * sizeof *perm);
  char *hit = (char *)xmalloc((size_t)c->E);
  int32_t *ids = c->all_ids + (size_t)route * (size_t)(c->M * c->topk);
  float *w = c->all_weights + (size_t)route * (size_t)(c->M * c->topk);
  memset(hit, 0, (size_t)c->E);
  for (int64_t m = 0; m < c->M; m++) {
    float sum = 0.0f;
    for (int64_t e = 0; e < c->E; e++) perm[e] = (int32_t)e;
    for (int32_t j = 0; j < c->topk; j++) { /* partial Fisher-Yates: topk distinct experts */
      int64_t pick = j + (int64_t)(rng_next(r) % (uint64_t)(c->E - j));
      int32_t t = perm[j];
      perm[j] = perm[pick], perm[pick] = t;
      ids[m * c->topk + j] = perm[j];
      w[m * c->topk + j] = (float)(0.1 + rng_unit(r));
      sum += w[m * c->topk + j];
      hit[perm[j]] = 1;
    }
    for (int32_t j = 0; j < c->topk; j++) w[m * c->topk + j] /= sum;
  }
  c->all_hit[route] = 0;
  for (int64_t e = 0; e < c->E; e++) c->all_hit[route] += hit[e];
  free(perm);
  free(hit);
}

static void case_use_route(layer_case *c, int route) {
  size_t n = (size_t)(c->M * c->topk);
  c->ids = c->all_ids + (size_t)route * n;
  c->weights = c->all_weights + (size_t)route * n;
  c->experts_hit = c->all_hit[route];
}

static layer_case case_create(int64_t M, int64_t K, int64_t E, int32_t topk, int n_routes, uint64_t seed) {
  layer_case c;
  rng r = rng_seeded(seed, 0xC0FFEE00u + (uint64_t)M);
  size_t xs = (size_t)M * (size_t)K, slots = (size_t)n_routes * (size_t)M * (size_t)topk;
  c.M = M, c.K = K, c.E = E, c.topk = topk, c.n_routes = n_routes;
  c.x = (uint16_t *)xmalloc(xs * 2);
  c.out = (uint16_t *)xmalloc(xs * 2);
  c.out_peer = (uint16_t *)xmalloc(xs * 2);
  c.all_ids = (int32_t *)xmalloc(slots * sizeof *c.all_ids);
  c.all_weights = (float *)xmalloc(slots * sizeof *c.all_weights);
  c.all_hit = (int64_t *)xmalloc((size_t)n_routes * sizeof *c.all_hit);
  for (size_t i = 0; i < xs; i++) c.x[i] = moe_f32_to_bf16((float)(2.0 * rng_unit(&r) - 1.0));
  for (int route = 0; route < n_routes; route++) route_uniform(&c, route, &r);
  case_use_route(&c, 0);
  return c;
}

static void case_free(layer_case *c) {
  free(c->x), free(c->out), free(c->out_peer), free(c->all_ids), free(c->all_weights), free(c->all_hit);
}

/* ==== ours: moe.h ================================================================================= */
typedef struct ours {
  moe_experts ex;
  void *packed, *ws;
  size_t ws_size;
  moe_parallel par;
  double gen_s, pack_s; /* setup times, for the log */
} ours;

static moe_call ours_call(const layer_case *c) {
  moe_call call;
  memset(&call, 0, sizeof call);
  call.x = c->x;
  call.out = c->out;
  call.dtype = MOE_BF16;
  call.M = c->M;
  call.topk = c->topk;
  call.topk_weights = c->weights;
  call.topk_ids = c->ids;
  return call;
}

/* Generates, packs (the plain copy is freed at once) and sizes one workspace for the largest M. */
static void ours_setup(ours *o, moe_precision p, const model_shape *s, int64_t E, int64_t max_m, uint64_t seed,
                       bench_pool *pool) {
  plain_experts w = plain_alloc(p, E, s->N, s->K);
  moe_weights d;
  moe_call call;
  layer_case shape_only;
  size_t size;
  moe_status st;
  double t0 = now_s();
  plain_generate(&w, seed);
  o->gen_s = now_s() - t0;
  d = plain_descriptor(&w);
  size = moe_pack_size(&d);
  if (!size) die("moe_pack_size rejected the %s weights", prec_name(p));
  o->packed = xmalloc(size);
  if ((st = moe_pack(&d, &o->ex, o->packed, size)) != MOE_OK) die("moe_pack: %s", moe_status_str(st));
  o->pack_s = now_s() - t0 - o->gen_s;
  plain_free(&w);
  memset(&shape_only, 0, sizeof shape_only);
  shape_only.M = max_m, shape_only.topk = s->topk;
  call = ours_call(&shape_only);
  if ((st = moe_workspace_size(&o->ex, &call, &o->ws_size)) != MOE_OK) die("moe_workspace_size: %s", moe_status_str(st));
  o->ws = xmalloc(o->ws_size);
  memset(o->ws, 0, o->ws_size);
  o->par.parallel_for = pool_parallel_for;
  o->par.pool = pool;
  o->par.n_threads = pool->n_workers + 1;
}

static void ours_free(ours *o) {
  free(o->packed);
  free(o->ws);
}

static double ours_timed(const ours *o, const layer_case *c, moe_stats *phases) {
  double t0;
  moe_call call = ours_call(c);
  moe_status st;
  call.stats = phases;
  pool_warm((bench_pool *)o->par.pool);
  t0 = now_s();
  st = moe_fused_experts(&o->ex, &call, o->ws, o->ws_size, &o->par);
  if (st != MOE_OK) die("moe_fused_experts: %s", moe_status_str(st));
  return now_s() - t0;
}

/* Routing M tokens from random f32 logits (top-k softmax, renormalized), the step before the layer. */
static double route_timed(const layer_case *c) {
  moe_router r;
  float *logits = (float *)xmalloc((size_t)(c->M * c->E) * sizeof(float));
  float *w = (float *)xmalloc((size_t)(c->M * c->topk) * sizeof(float));
  int32_t *ids = (int32_t *)xmalloc((size_t)(c->M * c->topk) * sizeof(int32_t));
  rng g = rng_seeded(7, (uint64_t)c->M);
  double t0, t;
  memset(&r, 0, sizeof r);
  r.E = (int32_t)c->E, r.topk = c->topk, r.renormalize = 1;
  for (int64_t i = 0; i < c->M * c->E; i++) logits[i] = (float)(4.0 * rng_unit(&g) - 2.0);
  t0 = now_s();
  if (moe_route(&r, logits, MOE_F32, c->M, w, ids) != MOE_OK) die("moe_route failed");
  t = now_s() - t0;
  free(logits), free(w), free(ids);
  return t;
}

/* ==== the peer: the same layer on oneDNN, as an engine writes it ==================================
 * Per expert: gather its rows of x, matmul with W13 -> [rows, 2N] f32, silu(gate) * up, matmul with
 * W2 -> [rows, K] f32, weighted scatter-add into an f32 output; one conversion to bf16 at the end.
 * bf16 (and fp16, whose weights the engine converts to bf16 at load, as moe_pack does): bf16 x bf16
 * -> f32. int8: x and h quantized per token to s8 (symmetric, as moe.h), s8 x s8 -> f32 brgemm;
 * oneDNN 2.6 picks its slow gemm:jit for runtime per-channel output scales, so the per-channel and
 * per-token scales are applied in the activation and scatter loops, which read every element anyway.
 * Weights are reordered once into the blocked format the matmul chooses (format_tag_any); the
 * primitives are created once per row count, outside the timed region. */
#if MOE_BENCH_ONEDNN
#define DNNL_CHECK(call)                                                                 \
  do {                                                                                   \
    dnnl_status_t s_ = (call);                                                           \
    if (s_ != dnnl_success) die("oneDNN: %s failed (status %d)", #call, (int)s_);        \
  } while (0)

/* The peer's element-wise row work, with AVX-512 variants as an engine has them. */
typedef struct row_ops {
  void (*bf16_to_f32)(const uint16_t *src, float *dst, int64_t n);
  void (*f32_to_bf16)(const float *src, uint16_t *dst, int64_t n);
  float (*quantize_s8)(const float *v, int64_t n, int8_t *q); /* returns the row scale */
  /* h = silu(g * s * sg) * (u * s * su); sg, su per-column scales or NULL */
  void (*silu_mul)(const float *g, const float *u, const float *sg, const float *su, float s, float *h, int64_t n);
  void (*axpy)(float w, const float *sc, const float *y, float *out, int64_t n); /* out += w * sc * y */
} row_ops;

static void bf16_to_f32_scalar(const uint16_t *src, float *dst, int64_t n) { moe_convert_to_f32(MOE_BF16, src, dst, (size_t)n); }
static void f32_to_bf16_scalar(const float *src, uint16_t *dst, int64_t n) { moe_convert_from_f32(MOE_BF16, src, dst, (size_t)n); }

/* Symmetric s8: scale = max(amax, 1e-7) / 127, round half to even (as moe.h quantizes). */
static float quantize_s8_scalar(const float *v, int64_t n, int8_t *q) {
  float amax = 0.0f, scale, inv;
  for (int64_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(v[i]));
  scale = fmaxf(amax, 1e-7f) / 127.0f;
  inv = 1.0f / scale;
  for (int64_t i = 0; i < n; i++) q[i] = (int8_t)lrintf(v[i] * inv);
  return scale;
}

static void silu_mul_scalar(const float *g, const float *u, const float *sg, const float *su, float s, float *h, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float a = g[i] * s * (sg ? sg[i] : 1.0f), b = u[i] * s * (su ? su[i] : 1.0f);
    h[i] = a / (1.0f + expf(-a)) * b;
  }
}

static void axpy_scalar(float w, const float *sc, const float *y, float *out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] += w * (sc ? sc[i] : 1.0f) * y[i];
}

#define PEER_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

static inline __mmask16 tail_mask(int64_t left) { return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1); }

/* exp(x) = 2^n * 2^f, f in [-1/2, 1/2] by a degree-6 polynomial (rel. error ~1e-7), scaled by scalef. */
PEER_AVX512 static __m512 exp_avx512(__m512 x) {
  __m512 t = _mm512_mul_ps(_mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-88.0f)),
                           _mm512_set1_ps(1.44269504f));
  __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.54035304e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.33335581e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.61812911e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.55041087e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.40226507e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.93147181e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

PEER_AVX512 static void bf16_to_f32_avx512(const uint16_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, src + i));
    _mm512_mask_storeu_ps(dst + i, k, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
}

PEER_AVX512 static void f32_to_bf16_avx512(const float *src, uint16_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    _mm256_mask_storeu_epi16(dst + i, k, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, src + i)));
  }
}

PEER_AVX512 static float quantize_s8_avx512(const float *v, int64_t n, int8_t *q) {
  __m512 amax = _mm512_setzero_ps(), inv;
  float scale;
  for (int64_t i = 0; i < n; i += 16) amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_maskz_loadu_ps(tail_mask(n - i), v + i)));
  scale = fmaxf(_mm512_reduce_max_ps(amax), 1e-7f) / 127.0f;
  inv = _mm512_set1_ps(1.0f / scale);
  for (int64_t i = 0; i < n; i += 16) { /* cvtps rounds half to even */
    __mmask16 k = tail_mask(n - i);
    _mm512_mask_cvtsepi32_storeu_epi8(q + i, k, _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, v + i), inv)));
  }
  return scale;
}

PEER_AVX512 static void silu_mul_avx512(const float *g, const float *u, const float *sg, const float *su, float s,
                                        float *h, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f), vs = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    __m512 a = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, g + i), vs), b = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, u + i), vs);
    if (sg) a = _mm512_mul_ps(a, _mm512_maskz_loadu_ps(k, sg + i)), b = _mm512_mul_ps(b, _mm512_maskz_loadu_ps(k, su + i));
    a = _mm512_div_ps(a, _mm512_add_ps(one, exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), a))));
    _mm512_mask_storeu_ps(h + i, k, _mm512_mul_ps(a, b));
  }
}

PEER_AVX512 static void axpy_avx512(float w, const float *sc, const float *y, float *out, int64_t n) {
  const __m512 vw = _mm512_set1_ps(w);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    __m512 t = _mm512_mul_ps(vw, _mm512_maskz_loadu_ps(k, y + i));
    if (sc) t = _mm512_mul_ps(t, _mm512_maskz_loadu_ps(k, sc + i));
    _mm512_mask_storeu_ps(out + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, out + i), t));
  }
}

static row_ops row_ops_select(void) {
  row_ops scalar = {bf16_to_f32_scalar, f32_to_bf16_scalar, quantize_s8_scalar, silu_mul_scalar, axpy_scalar};
  row_ops avx512 = {bf16_to_f32_avx512, f32_to_bf16_avx512, quantize_s8_avx512, silu_mul_avx512, axpy_avx512};
  return have_features(MOE_CPU_AVX512F | MOE_CPU_AVX512BW | MOE_CPU_AVX512VL | MOE_CPU_AVX512BF16) ? avx512 : scalar;
}

typedef struct peer_rows { /* the matmuls and activation memories of one expert row count */
  dnnl_primitive_t mm13, mm2;
  dnnl_memory_t a, g, h, y;
} peer_rows;

typedef struct peer {
  moe_precision p;
  int a8;
  int64_t E, N, K, max_rows;
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  dnnl_memory_desc_t w13_md, w2_md;
  dnnl_memory_t *w13, *w2; /* [E] prepacked */
  float *s13, *s2;         /* int8: per-channel scales [E][2N], [E][K] */
  peer_rows *rows;         /* [max_rows + 1], filled by peer_prepare */
  void *a_buf, *h_buf;     /* gathered x rows; activation (bf16 or s8) */
  float *g_buf, *y_buf, *hf_buf, *out_f32;
  int8_t *xq;
  float *x_scale, *h_scale;
  int32_t *count, *start, *slot_token; /* slots grouped by expert */
  float *slot_weight;
  char impl[64];           /* oneDNN's implementation name, e.g. brg:avx512_core_vnni */
  row_ops ops;
} peer;

static int peer_supports(moe_precision p) {
  return p == MOE_PREC_BF16 || p == MOE_PREC_FP16 || p == MOE_PREC_INT8;
}

static dnnl_data_type_t peer_act_type(const peer *P) { return P->a8 ? dnnl_s8 : dnnl_bf16; }

static dnnl_memory_desc_t md_2d(int64_t d0, int64_t d1, dnnl_data_type_t t, dnnl_format_tag_t tag) {
  dnnl_memory_desc_t md;
  dnnl_dims_t dims = {d0, d1};
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&md, 2, dims, t, tag));
  return md;
}

/* A matmul [rows, kred] x weights [kred, nout] -> f32 [rows, nout]; NULL weights md means "any". */
static dnnl_primitive_t peer_matmul(peer *P, int64_t rows, int64_t kred, int64_t nout, const dnnl_memory_desc_t *wmd,
                                    dnnl_memory_desc_t *chosen) {
  dnnl_memory_desc_t src = md_2d(rows, kred, peer_act_type(P), dnnl_ab), dst = md_2d(rows, nout, dnnl_f32, dnnl_ab);
  dnnl_memory_desc_t any = md_2d(kred, nout, peer_act_type(P), dnnl_format_tag_any);
  dnnl_matmul_desc_t desc;
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t prim;
  const char *impl;
  DNNL_CHECK(dnnl_matmul_desc_init(&desc, &src, wmd ? wmd : &any, NULL, &dst));
  DNNL_CHECK(dnnl_primitive_desc_create(&pd, &desc, NULL, P->eng, NULL));
  if (chosen) *chosen = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  DNNL_CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, (void *)&impl));
  snprintf(P->impl, sizeof P->impl, "%s", impl);
  DNNL_CHECK(dnnl_primitive_create(&prim, pd));
  DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
  return prim;
}

static dnnl_memory_t peer_memory(const peer *P, const dnnl_memory_desc_t *md, void *handle) {
  dnnl_memory_t m;
  DNNL_CHECK(dnnl_memory_create(&m, md, P->eng, handle));
  return m;
}

/* Reorders plain matrices (rows x kred row-major, i.e. weights [kred, rows] "ba") into the prepacked
 * format; one reorder primitive serves every expert. */
typedef struct peer_packer {
  dnnl_memory_desc_t plain_md, packed_md;
  dnnl_primitive_t reorder;
} peer_packer;

static peer_packer packer_create(const peer *P, int64_t rows, int64_t kred, const dnnl_memory_desc_t *packed_md) {
  peer_packer k;
  dnnl_primitive_desc_t pd;
  k.plain_md = md_2d(kred, rows, peer_act_type(P), dnnl_ba);
  k.packed_md = *packed_md;
  DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, &k.plain_md, P->eng, &k.packed_md, P->eng, NULL));
  DNNL_CHECK(dnnl_primitive_create(&k.reorder, pd));
  DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
  return k;
}

static dnnl_memory_t packer_run(const peer *P, const peer_packer *k, void *plain) {
  dnnl_memory_t src = peer_memory(P, &k->plain_md, plain), dst = peer_memory(P, &k->packed_md, DNNL_MEMORY_ALLOCATE);
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  DNNL_CHECK(dnnl_primitive_execute(k->reorder, P->stream, 2, args));
  DNNL_CHECK(dnnl_stream_wait(P->stream));
  DNNL_CHECK(dnnl_memory_destroy(src));
  return dst;
}

/* fp16 weights become bf16, as an engine (and moe_pack) converts them at load. */
static void *peer_weight_codes(const peer *P, const plain_mat *m, size_t n, uint16_t *tmp) {
  if (P->p != MOE_PREC_FP16) return m->codes;
  for (size_t i = 0; i < n; i++) tmp[i] = moe_f32_to_bf16(moe_f16_to_f32(((const uint16_t *)(const void *)m->codes)[i]));
  return tmp;
}

/* Regenerates every expert exactly as ours_setup did and prepacks it for oneDNN. */
static void peer_load_weights(peer *P, uint64_t seed) {
  plain_experts one = plain_alloc(P->p, 1, P->N, P->K);
  size_t n13 = (size_t)(2 * P->N * P->K), n2 = (size_t)(P->K * P->N);
  uint16_t *tmp = P->p == MOE_PREC_FP16 ? (uint16_t *)xmalloc(2 * (n13 > n2 ? n13 : n2)) : NULL;
  peer_packer k13 = packer_create(P, 2 * P->N, P->K, &P->w13_md), k2 = packer_create(P, P->K, P->N, &P->w2_md);
  P->w13 = (dnnl_memory_t *)xmalloc((size_t)P->E * sizeof *P->w13);
  P->w2 = (dnnl_memory_t *)xmalloc((size_t)P->E * sizeof *P->w2);
  for (int64_t e = 0; e < P->E; e++) {
    gen_expert(P->p, P->N, P->K, seed, e, &one.w13, &one.w2);
    P->w13[e] = packer_run(P, &k13, peer_weight_codes(P, &one.w13, n13, tmp));
    P->w2[e] = packer_run(P, &k2, peer_weight_codes(P, &one.w2, n2, tmp));
    if (P->a8) {
      memcpy(P->s13 + e * 2 * P->N, one.w13.scale, (size_t)(2 * P->N) * sizeof(float));
      memcpy(P->s2 + e * P->K, one.w2.scale, (size_t)P->K * sizeof(float));
    }
  }
  DNNL_CHECK(dnnl_primitive_destroy(k13.reorder));
  DNNL_CHECK(dnnl_primitive_destroy(k2.reorder));
  free(tmp);
  plain_free(&one);
}

static void peer_alloc_buffers(peer *P, int64_t max_m, int32_t topk) {
  size_t r = (size_t)P->max_rows, a_elt = P->a8 ? 1 : 2, N = (size_t)P->N, K = (size_t)P->K;
  size_t slots = (size_t)max_m * (size_t)topk;
  P->a_buf = xmalloc(r * K * a_elt);
  P->h_buf = xmalloc(r * N * a_elt);
  P->g_buf = (float *)xmalloc(r * 2 * N * sizeof(float));
  P->hf_buf = (float *)xmalloc(r * N * sizeof(float));
  P->y_buf = (float *)xmalloc(r * K * sizeof(float));
  P->out_f32 = (float *)xmalloc((size_t)max_m * K * sizeof(float));
  P->xq = (int8_t *)xmalloc((size_t)max_m * K);
  P->x_scale = (float *)xmalloc((size_t)max_m * sizeof(float));
  P->h_scale = (float *)xmalloc(r * sizeof(float));
  P->count = (int32_t *)xmalloc((size_t)P->E * sizeof(int32_t));
  P->start = (int32_t *)xmalloc((size_t)P->E * sizeof(int32_t));
  P->slot_token = (int32_t *)xmalloc(slots * sizeof(int32_t));
  P->slot_weight = (float *)xmalloc(slots * sizeof(float));
  P->rows = (peer_rows *)xmalloc((r + 1) * sizeof *P->rows);
  memset(P->rows, 0, (r + 1) * sizeof *P->rows);
  P->s13 = (float *)xmalloc((size_t)P->E * 2 * N * sizeof(float));
  P->s2 = (float *)xmalloc((size_t)P->E * K * sizeof(float));
}

static peer *peer_create(moe_precision p, const model_shape *s, int64_t E, int64_t max_m, uint64_t seed) {
  peer *P = (peer *)xmalloc(sizeof *P);
  dnnl_primitive_t probe13, probe2;
  memset(P, 0, sizeof *P);
  P->p = p;
  P->a8 = p == MOE_PREC_INT8;
  P->E = E, P->N = s->N, P->K = s->K;
  P->max_rows = max_m; /* experts are distinct per token: at most M rows each */
  P->ops = row_ops_select();
  DNNL_CHECK(dnnl_engine_create(&P->eng, dnnl_cpu, 0));
  DNNL_CHECK(dnnl_stream_create(&P->stream, P->eng, dnnl_stream_default_flags));
  /* The weights format the matmul prefers (oneDNN 2.6 picks the same one for every row count). */
  probe13 = peer_matmul(P, 1, P->K, 2 * P->N, NULL, &P->w13_md);
  probe2 = peer_matmul(P, 1, P->N, P->K, NULL, &P->w2_md);
  DNNL_CHECK(dnnl_primitive_destroy(probe13));
  DNNL_CHECK(dnnl_primitive_destroy(probe2));
  peer_alloc_buffers(P, max_m, s->topk);
  peer_load_weights(P, seed);
  return P;
}

static void peer_create_rows(peer *P, int64_t rows) {
  peer_rows *R = &P->rows[rows];
  dnnl_memory_desc_t a = md_2d(rows, P->K, peer_act_type(P), dnnl_ab), g = md_2d(rows, 2 * P->N, dnnl_f32, dnnl_ab);
  dnnl_memory_desc_t h = md_2d(rows, P->N, peer_act_type(P), dnnl_ab), y = md_2d(rows, P->K, dnnl_f32, dnnl_ab);
  R->mm13 = peer_matmul(P, rows, P->K, 2 * P->N, &P->w13_md, NULL);
  R->mm2 = peer_matmul(P, rows, P->N, P->K, &P->w2_md, NULL);
  R->a = peer_memory(P, &a, P->a_buf);
  R->g = peer_memory(P, &g, P->g_buf);
  R->h = peer_memory(P, &h, P->h_buf);
  R->y = peer_memory(P, &y, P->y_buf);
}

/* Creates the primitives for every row count an expert gets in the case's routings (untimed). */
static void peer_prepare(peer *P, const layer_case *c) {
  int32_t *count = (int32_t *)xmalloc((size_t)P->E * sizeof *count);
  const int64_t slots = c->M * c->topk;
  for (int route = 0; route < c->n_routes; route++) {
    memset(count, 0, (size_t)P->E * sizeof *count);
    for (int64_t i = 0; i < slots; i++) count[c->all_ids[route * slots + i]]++;
    for (int64_t e = 0; e < P->E; e++)
      if (count[e] && !P->rows[count[e]].mm13) peer_create_rows(P, count[e]);
  }
  free(count);
}

static void peer_destroy(peer *P) {
  for (int64_t r = 0; r <= P->max_rows; r++) {
    peer_rows *R = &P->rows[r];
    if (!R->mm13) continue;
    dnnl_primitive_destroy(R->mm13), dnnl_primitive_destroy(R->mm2);
    dnnl_memory_destroy(R->a), dnnl_memory_destroy(R->g), dnnl_memory_destroy(R->h), dnnl_memory_destroy(R->y);
  }
  for (int64_t e = 0; e < P->E; e++) dnnl_memory_destroy(P->w13[e]), dnnl_memory_destroy(P->w2[e]);
  dnnl_stream_destroy(P->stream);
  dnnl_engine_destroy(P->eng);
  free(P->w13), free(P->w2), free(P->s13), free(P->s2), free(P->rows), free(P->a_buf), free(P->h_buf);
  free(P->g_buf), free(P->y_buf), free(P->hf_buf), free(P->out_f32), free(P->xq), free(P->x_scale);
  free(P->h_scale), free(P->count), free(P->start), free(P->slot_token), free(P->slot_weight);
  free(P);
}

static void peer_quantize_x(peer *P, const layer_case *c) {
  const int64_t work = c->M * P->K;
  PEER_PARALLEL_FOR
  for (int64_t m = 0; m < c->M; m++) {
    float *row = P->out_f32 + m * P->K; /* free until the layer zeroes it */
    P->ops.bf16_to_f32(c->x + m * P->K, row, P->K);
    P->x_scale[m] = P->ops.quantize_s8(row, P->K, P->xq + m * P->K);
  }
}

/* Counting sort of the slots by expert: the per-forward bookkeeping an engine does. */
static void peer_group_slots(peer *P, const layer_case *c) {
  int32_t at = 0;
  memset(P->count, 0, (size_t)P->E * sizeof *P->count);
  for (int64_t i = 0; i < c->M * c->topk; i++) P->count[c->ids[i]]++;
  for (int64_t e = 0; e < P->E; e++) P->start[e] = at, at += P->count[e];
  for (int64_t i = 0; i < c->M * c->topk; i++) {
    int32_t e = c->ids[i], s = P->start[e]++;
    P->slot_token[s] = (int32_t)(i / c->topk);
    P->slot_weight[s] = c->weights[i];
  }
  for (int64_t e = 0; e < P->E; e++) P->start[e] -= P->count[e];
}

static void peer_gather(peer *P, const layer_case *c, int32_t s0, int64_t rows) {
  size_t row = (size_t)P->K * (P->a8 ? 1 : 2);
  for (int64_t r = 0; r < rows; r++) {
    int32_t m = P->slot_token[s0 + r];
    const void *src = P->a8 ? (const void *)(P->xq + (size_t)m * P->K) : (const void *)(c->x + (size_t)m * P->K);
    memcpy((uint8_t *)P->a_buf + (size_t)r * row, src, row);
  }
}

/* h = silu(gate) * up from the W13 output (int8: dequantized first, then requantized per row). */
static void peer_activation(peer *P, int64_t e, int32_t s0, int64_t rows) {
  const int64_t N = P->N, work = rows * N;
  PEER_PARALLEL_FOR
  for (int64_t r = 0; r < rows; r++) {
    const float *g = P->g_buf + r * 2 * N, *sc = P->s13 + e * 2 * N;
    float *hf = P->hf_buf + r * N;
    if (P->a8) {
      P->ops.silu_mul(g, g + N, sc, sc + N, P->x_scale[P->slot_token[s0 + r]], hf, N);
      P->h_scale[r] = P->ops.quantize_s8(hf, N, (int8_t *)P->h_buf + r * N);
    } else {
      P->ops.silu_mul(g, g + N, NULL, NULL, 1.0f, hf, N);
      P->ops.f32_to_bf16(hf, (uint16_t *)P->h_buf + r * N, N);
    }
  }
}

static void peer_scatter(peer *P, int64_t e, int32_t s0, int64_t rows) {
  const int64_t work = rows * P->K;
  PEER_PARALLEL_FOR
  for (int64_t r = 0; r < rows; r++) { /* an expert's rows are distinct tokens: no two rows collide */
    float w = P->slot_weight[s0 + r] * (P->a8 ? P->h_scale[r] : 1.0f);
    P->ops.axpy(w, P->a8 ? P->s2 + e * P->K : NULL, P->y_buf + r * P->K,
                P->out_f32 + (int64_t)P->slot_token[s0 + r] * P->K, P->K);
  }
}

static void peer_execute(peer *P, dnnl_primitive_t mm, dnnl_memory_t src, dnnl_memory_t w, dnnl_memory_t dst) {
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
  DNNL_CHECK(dnnl_primitive_execute(mm, P->stream, 3, args));
}

static void peer_expert(peer *P, const layer_case *c, int64_t e) {
  int32_t s0 = P->start[e];
  int64_t rows = P->count[e];
  peer_rows *R = &P->rows[rows];
  if (!R->mm13) die("peer: no primitive for %lld rows (peer_prepare was skipped)", (long long)rows);
  peer_gather(P, c, s0, rows);
  peer_execute(P, R->mm13, R->a, P->w13[e], R->g);
  peer_activation(P, e, s0, rows);
  peer_execute(P, R->mm2, R->h, P->w2[e], R->y);
  peer_scatter(P, e, s0, rows);
}

static void peer_layer(peer *P, const layer_case *c) {
  const int64_t work = c->M * P->K;
  if (P->a8) peer_quantize_x(P, c);
  memset(P->out_f32, 0, (size_t)work * sizeof(float));
  peer_group_slots(P, c);
  for (int64_t e = 0; e < P->E; e++)
    if (P->count[e]) peer_expert(P, c, e);
  DNNL_CHECK(dnnl_stream_wait(P->stream));
  PEER_PARALLEL_FOR
  for (int64_t m = 0; m < c->M; m++) P->ops.f32_to_bf16(P->out_f32 + m * P->K, c->out_peer + m * P->K, P->K);
}

/* Wakes the OpenMP team, as pool_warm does for ours. */
static void peer_warm(void) {
#ifdef _OPENMP
  _Pragma("omp parallel")
  {
  }
#endif
}

static double peer_timed(peer *P, const layer_case *c) {
  double t0;
  peer_warm();
  t0 = now_s();
  peer_layer(P, c);
  return now_s() - t0;
}

static void peer_set_threads(int n) {
#ifdef _OPENMP
  omp_set_num_threads(n);
#else
  (void)n;
#endif
}

/* libgomp reads its wait policy when it loads. By default its threads spin ~3 ms before sleeping,
 * and spinning threads lose CFS's wake-up preference: on a shared machine every oneDNN parallel
 * region then stalls for a scheduler tick (~8 ms). Unless the user chose a policy, give libgomp the
 * spin our pool has (POOL_SPIN_S: 4000 rounds of ~25 ns on Zen 4) and re-execute. */
static void peer_wait_policy(char **argv) {
#ifdef _OPENMP
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
  setenv("GOMP_SPINCOUNT", "4000", 1);
  execv("/proc/self/exe", argv); /* returns only on failure: keep the default policy */
  unsetenv("GOMP_SPINCOUNT");
#else
  (void)argv;
#endif
}

static const char *peer_wait_policy_name(void) {
  const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
  return policy ? policy : spin ? spin : "default";
}
#else /* no oneDNN */
typedef struct peer peer;
static int peer_supports(moe_precision p) { return (void)p, 0; }
static peer *peer_create(moe_precision p, const model_shape *s, int64_t E, int64_t max_m, uint64_t seed) {
  (void)p, (void)s, (void)E, (void)max_m, (void)seed;
  return NULL;
}
static void peer_prepare(peer *P, const layer_case *c) { (void)P, (void)c; }
static void peer_destroy(peer *P) { (void)P; }
static double peer_timed(peer *P, const layer_case *c) { return (void)P, (void)c, 0.0; }
static void peer_set_threads(int n) { (void)n; }
static void peer_wait_policy(char **argv) { (void)argv; }
#endif

/* ==== measurement ================================================================================= */
/* Relative L2 difference of two bf16 tensors (reference b). */
static double rel_err_bf16(const uint16_t *a, const uint16_t *b, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    double x = moe_bf16_to_f32(a[i]), y = moe_bf16_to_f32(b[i]);
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

typedef struct measurement {
  int runs;
  double *probe_gbs, *ours_s, *peer_s; /* per round */
  moe_stats phases;                    /* our layer's phase times, summed over the rounds */
  double route_s;                      /* moe_route on [M, E] logits, summed over the rounds */
  double *bytes;                       /* per round: weight bytes of the experts its routing hit */
  double peer_rel_err;
} measurement;

typedef struct bench_ctx {
  const options *opt;
  bench_pool *pool;
  probe_ctx *probe;
  ceilings peaks;
} bench_ctx;

/* Rounds that fit the time budget, between 3 and --runs. */
static int rounds_for(const bench_ctx *b, double round_s) {
  int n = (int)(b->opt->budget_s / round_s);
  n = n < 3 ? 3 : n;
  return n < b->opt->runs ? n : b->opt->runs;
}

/* An untimed pass of each layer on routing 0 (correctness, warm-up), then rounds of probe, ours and
 * oneDNN (oneDNN first in odd rounds, so neither always follows the probe), round i on routing i + 1. */
static measurement measure(const bench_ctx *b, const ours *o, peer *P, layer_case *c, double expert_b) {
  measurement r;
  double t_round;
  memset(&r, 0, sizeof r);
  case_use_route(c, 0);
  t_round = ours_timed(o, c, NULL) + 3 * SETTLE_S + 0.03;
  r.phases.clock = now_s;
  if (P) {
    t_round += peer_timed(P, c);
    r.peer_rel_err = rel_err_bf16(c->out_peer, c->out, (size_t)(c->M * c->K));
  }
  r.runs = rounds_for(b, t_round);
  r.probe_gbs = (double *)xmalloc((size_t)r.runs * sizeof(double));
  r.ours_s = (double *)xmalloc((size_t)r.runs * sizeof(double));
  r.peer_s = (double *)xmalloc((size_t)r.runs * sizeof(double));
  r.bytes = (double *)xmalloc((size_t)r.runs * sizeof(double));
  for (int i = 0; i < r.runs; i++) {
    case_use_route(c, 1 + i);
    r.bytes[i] = (double)c->experts_hit * expert_b;
    sleep_s(SETTLE_S);
    r.probe_gbs[i] = probe_bandwidth(b->probe, b->pool);
    if (P && i % 2) sleep_s(SETTLE_S), r.peer_s[i] = peer_timed(P, c);
    sleep_s(SETTLE_S);
    r.ours_s[i] = ours_timed(o, c, &r.phases);
    r.route_s += route_timed(c);
    if (P && i % 2 == 0) sleep_s(SETTLE_S), r.peer_s[i] = peer_timed(P, c);
  }
  return r;
}

static void measurement_free(measurement *r) { free(r->probe_gbs), free(r->ours_s), free(r->peer_s), free(r->bytes); }

/* ==== reporting =================================================================================== */
typedef struct case_result {
  const char *model, *kernel, *peer_impl;
  moe_precision p;
  int64_t E, E_model;
  const layer_case *c;
  const measurement *r;
  double expert_bytes, flops, peak_gflops;
  int has_peer;
} case_result;

typedef struct summary {
  stats ms, peer_ms, probe, gbs, frac, speedup;
  double bytes, gflops; /* median bytes per round; flops over the median time */
  const char *bound;
} summary;

/* Memory-bound when the layer's flops per weight byte are below the machine's balance point. */
static const char *bound_name(double flops, double bytes, double peak_gflops, double peak_gbs) {
  return peak_gflops <= 0 || flops / bytes < peak_gflops / peak_gbs ? "memory" : "compute";
}

/* Medians of per-round ratios. A round's fraction of peak is the larger of its bandwidth and compute
 * fractions: time >= max(bytes / bandwidth, flops / peak), so the larger one is the bound that applies. */
static summary summarize(const case_result *cr) {
  const measurement *r = cr->r;
  int n = r->runs;
  double *v = (double *)xmalloc(4 * (size_t)n * sizeof(double)), *gbs = v, *frac = v + n, *speed = v + 2 * n;
  summary s;
  memset(&s, 0, sizeof s);
  for (int i = 0; i < n; i++) {
    double f_comp = cr->peak_gflops > 0 ? cr->flops / r->ours_s[i] / 1e9 / cr->peak_gflops : 0.0;
    gbs[i] = r->bytes[i] / r->ours_s[i] / 1e9;
    frac[i] = gbs[i] / r->probe_gbs[i] > f_comp ? gbs[i] / r->probe_gbs[i] : f_comp;
    speed[i] = cr->has_peer ? r->peer_s[i] / r->ours_s[i] : 0.0;
  }
  s.ms = stats_of(r->ours_s, n), s.probe = stats_of(r->probe_gbs, n), s.gbs = stats_of(gbs, n);
  s.frac = stats_of(frac, n), s.speedup = stats_of(speed, n);
  if (cr->has_peer) s.peer_ms = stats_of(r->peer_s, n);
  s.bytes = stats_of(r->bytes, n).median;
  s.gflops = cr->flops / s.ms.median / 1e9;
  s.bound = bound_name(cr->flops, s.bytes, cr->peak_gflops, s.probe.median);
  free(v);
  return s;
}

typedef struct json {
  char buf[4096];
  size_t len;
} json;

static void json_add(json *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (j->len < sizeof j->buf) j->len += (size_t)vsnprintf(j->buf + j->len, sizeof j->buf - j->len, fmt, ap);
  va_end(ap);
}
static const char *json_sep(const json *j) { return j->len > 1 ? "," : ""; }
static void json_str(json *j, const char *k, const char *v) { json_add(j, "%s\"%s\":\"%s\"", json_sep(j), k, v); }
static void json_int(json *j, const char *k, long long v) { json_add(j, "%s\"%s\":%lld", json_sep(j), k, v); }
static void json_num(json *j, const char *k, double v) { json_add(j, "%s\"%s\":%.6g", json_sep(j), k, v); }
static void json_null(json *j, const char *k) { json_add(j, "%s\"%s\":null", json_sep(j), k); }

/* Mean time per phase of our layer, routing included, and the share of everything that is not a
 * GEMM (routing, sorting, quantization and conversion, the combine). */
static void print_phases(json *j, const measurement *r) {
  static const char *names[MOE_PHASE_COUNT] = {"prepare", "sort", "gemm1", "requant", "gemm2", "combine"};
  double total = r->route_s, gemm = r->phases.seconds[MOE_PHASE_GEMM1] + r->phases.seconds[MOE_PHASE_GEMM2];
  char key[32];
  for (int i = 0; i < MOE_PHASE_COUNT; i++) {
    snprintf(key, sizeof key, "ms_%s", names[i]);
    json_num(j, key, 1e3 * r->phases.seconds[i] / r->runs);
    total += r->phases.seconds[i];
  }
  json_num(j, "ms_route", 1e3 * r->route_s / r->runs);
  json_num(j, "non_gemm_frac", total > 0 ? (total - gemm) / total : 0);
}

static void print_json(const bench_ctx *b, const case_result *cr, const summary *s) {
  const layer_case *c = cr->c;
  json j = {"{", 1};
  json_str(&j, "bench", "layer");
  json_str(&j, "model", cr->model);
  json_str(&j, "precision", prec_name(cr->p));
  json_str(&j, "dtype", "bf16");
  json_str(&j, "isa", moe_isa_name(moe_get_isa()));
  json_str(&j, "kernel", cr->kernel);
  json_int(&j, "M", c->M), json_int(&j, "E", cr->E), json_int(&j, "topk", c->topk);
  json_int(&j, "N", b->opt->shape.N), json_int(&j, "K", c->K);
  if (cr->E_model != cr->E) json_int(&j, "E_model", cr->E_model);
  json_int(&j, "threads", b->opt->threads);
  json_num(&j, "ms_median", 1e3 * s->ms.median), json_num(&j, "ms_min", 1e3 * s->ms.min);
  json_num(&j, "ms_max", 1e3 * s->ms.max);
  json_int(&j, "runs", cr->r->runs);
  json_num(&j, "gflops", s->gflops);
  json_num(&j, "weight_gbs", s->gbs.median);
  json_num(&j, "experts_hit", s->bytes / cr->expert_bytes);
  json_num(&j, "weight_mb", s->bytes / 1e6);
  if (cr->peak_gflops > 0) json_num(&j, "peak_gflops", cr->peak_gflops);
  else json_null(&j, "peak_gflops");
  json_num(&j, "peak_gbs", s->probe.median), json_num(&j, "peak_gbs_min", s->probe.min);
  json_num(&j, "peak_gbs_max", s->probe.max);
  json_str(&j, "bound", s->bound);
  print_phases(&j, cr->r);
  json_num(&j, "frac_of_peak", s->frac.median), json_num(&j, "frac_min", s->frac.min);
  json_num(&j, "frac_max", s->frac.max);
  if (cr->has_peer) {
    json_str(&j, "vs", "onednn");
    json_num(&j, "speedup", s->speedup.median), json_num(&j, "speedup_min", s->speedup.min);
    json_num(&j, "speedup_max", s->speedup.max);
    json_num(&j, "onednn_ms_median", 1e3 * s->peer_ms.median), json_num(&j, "onednn_ms_min", 1e3 * s->peer_ms.min);
    json_num(&j, "onednn_ms_max", 1e3 * s->peer_ms.max);
    json_num(&j, "peer_rel_err", cr->r->peer_rel_err);
    json_str(&j, "onednn_impl", cr->peer_impl);
#if MOE_BENCH_ONEDNN
    json_str(&j, "omp_wait", peer_wait_policy_name()); /* OMP_WAIT_POLICY, else GOMP_SPINCOUNT */
#endif
  } else {
    json_str(&j, "vs", "none");
    json_null(&j, "speedup"), json_null(&j, "speedup_min"), json_null(&j, "speedup_max");
    json_null(&j, "onednn_ms_median");
  }
  printf("%s}\n", j.buf);
  fflush(stdout);
}

static void print_human(const case_result *cr, const summary *s) {
  fprintf(stderr, "%-10s M=%-5lld %9.3f ms %7.1f GB/s %8.1f GFLOPS %6.1f%% of peak (%s; probe %.1f GB/s)",
          prec_name(cr->p), (long long)cr->c->M, 1e3 * s->ms.median, s->gbs.median, s->gflops,
          100 * s->frac.median, s->bound, s->probe.median);
  if (cr->has_peer) fprintf(stderr, "  onednn %9.3f ms, speedup %.2fx", 1e3 * s->peer_ms.median, s->speedup.median);
  fputc('\n', stderr);
}

/* ==== driver ====================================================================================== */
static int64_t max_of(const int64_t *v, int n) {
  int64_t m = 0;
  for (int i = 0; i < n; i++) m = v[i] > m ? v[i] : m;
  return m;
}

/* Experts that fit the memory budget: the packed copy plus the plain one (or the peer's). */
static int64_t experts_in_budget(const options *o, moe_precision p) {
  double per_expert = 2.0 * expert_bytes(p, o->shape.N, o->shape.K);
  int64_t fit = (int64_t)(o->mem_gib * 1073741824.0 / per_expert);
  return fit < o->shape.E ? fit : o->shape.E;
}

static void run_case(const bench_ctx *b, const ours *us, peer *P, case_result *cr, int64_t M) {
  const options *o = b->opt;
  layer_case c = case_create(M, o->shape.K, cr->E, o->shape.topk, o->runs + 1, o->seed);
  measurement r;
  summary s;
  if (P) peer_prepare(P, &c);
  r = measure(b, us, P, &c, cr->expert_bytes);
  cr->c = &c, cr->r = &r;
  cr->flops = 2.0 * (double)M * o->shape.topk * 3.0 * (double)o->shape.N * (double)o->shape.K;
  if (P && r.peer_rel_err > PEER_MAX_REL_ERR)
    fprintf(stderr, "warning: the oneDNN layer differs from moe.h by %.3g (> %.0e)\n", r.peer_rel_err, PEER_MAX_REL_ERR);
  s = summarize(cr);
  print_json(b, cr, &s);
  print_human(cr, &s);
  measurement_free(&r);
  case_free(&c);
}

static void run_precision(const bench_ctx *b, moe_precision p) {
  const options *o = b->opt;
  int64_t E = experts_in_budget(o, p);
  ours us;
  peer *P = NULL;
  case_result cr;
  const moe_gemm_config *kern = moe_gemm_select(p);
  double t0;
  if (!kern) {
    fprintf(stderr, "%s: not compiled in, skipped\n", prec_name(p));
    return;
  }
  if (E < o->shape.topk) die("%s: only %lld experts fit --mem-gib %.1f", prec_name(p), (long long)E, o->mem_gib);
  if (E < o->shape.E)
    fprintf(stderr, "note: %s uses %lld of the model's %lld experts to stay within --mem-gib %.1f\n",
            prec_name(p), (long long)E, (long long)o->shape.E, o->mem_gib);
  ours_setup(&us, p, &o->shape, E, max_of(o->m, o->n_m), o->seed, b->pool);
  t0 = now_s();
  if (peer_supports(p)) P = peer_create(p, &o->shape, E, max_of(o->m, o->n_m), o->seed);
  fprintf(stderr, "%s: %lld experts generated in %.1f s, moe_pack %.1f s", prec_name(p), (long long)E,
          us.gen_s, us.pack_s);
  if (P) fprintf(stderr, ", oneDNN prepack %.1f s", now_s() - t0);
  fprintf(stderr, "; kernel %s\n", kern->name);
  memset(&cr, 0, sizeof cr);
  cr.model = o->shape.name, cr.kernel = kern->name, cr.p = p, cr.E = E, cr.E_model = o->shape.E;
  cr.expert_bytes = expert_bytes(p, o->shape.N, o->shape.K);
  cr.peak_gflops = peak_for(&b->peaks, p);
  cr.has_peer = P != NULL;
#if MOE_BENCH_ONEDNN
  cr.peer_impl = P ? P->impl : NULL;
#endif
  for (int i = 0; i < o->n_m; i++) run_case(b, &us, P, &cr, o->m[i]);
  if (P) peer_destroy(P);
  ours_free(&us);
}

int main(int argc, char **argv) {
  options o = parse_options(argc, argv);
  peer_wait_policy(argv);
  bench_ctx b;
  moe_isa isa = moe_set_isa(o.isa);
  double bw;
  cpu_features = moe_cpu_features();
  memset(&b, 0, sizeof b);
  b.opt = &o;
  b.pool = pool_create(o.threads);
  peer_set_threads(o.threads);
#if !MOE_BENCH_ONEDNN
  fputs("note: built without oneDNN: no peer (\"vs\":\"none\")\n", stderr);
#endif
  b.probe = probe_create();
  b.peaks.gops_vnni = measure_peak(b.pool, o.threads, 0);
  b.peaks.gflops_bf16 = measure_peak(b.pool, o.threads, 1);
  bw = probe_bandwidth(b.probe, b.pool);
  fprintf(stderr, "%s K=%lld N=%lld E=%lld topk=%d, %d threads, isa %s; peaks: vpdpbusd %.0f GOPS, vdpbf16ps %.0f GFLOPS, "
          "read bandwidth %.1f GB/s (re-measured every round)\n", o.shape.name, (long long)o.shape.K, (long long)o.shape.N,
          (long long)o.shape.E, o.shape.topk, o.threads, moe_isa_name(isa), b.peaks.gops_vnni, b.peaks.gflops_bf16, bw);
  for (int i = 0; i < o.n_prec; i++) run_precision(&b, o.prec[i]);
  probe_destroy(b.probe);
  pool_destroy(b.pool);
  return 0;
}

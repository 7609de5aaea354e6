/* bench_ceilings.c — the read-bandwidth probe and the dot-product peaks. */
#define _POSIX_C_SOURCE 200809L
#include "bench_ceilings.h"
#include "bench_common.h"

#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_BYTES (1ull << 30)
#define PROBE_PARTS 16 /* 64 MiB each, timed alone: the best part is the rate */
#define PROBE_CHUNK (4ull << 20)

struct probe_ctx {
  const uint8_t *buf;
  uint64_t sink[PROBE_BYTES / PROBE_CHUNK];
};

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

probe_ctx *probe_create(void) {
  probe_ctx *c = (probe_ctx *)kit_malloc(sizeof *c);
  void *buf = NULL;
  if (posix_memalign(&buf, 4096, PROBE_BYTES)) die("out of memory for the bandwidth probe");
  memset(buf, 0x5A, PROBE_BYTES); /* real pages, not the shared zero page */
  c->buf = (const uint8_t *)buf;
  return c;
}

void probe_destroy(probe_ctx *c) {
  free((void *)c->buf);
  free(c);
}

double probe_bandwidth(probe_ctx *c, bench_pool *pool) {
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

#define PEAK_ITERS (1 << 18) /* ~1-2 ms per trial */
#define PEAK_TRIALS 40       /* the best trial: other processes share the machine */
/* Independent accumulators: more than latency x throughput of the unit (Zen 5's vdpbf16ps needs more
 * than 12), each loop unrolled so they stay in registers at -O2 as at -O3, under gcc and clang. */
#define PEAK_CHAINS 16
#define PEAK_UNROLL _Pragma("GCC unroll 16")

enum { PEAK_VNNI, PEAK_BF16, PEAK_FMA, PEAK_FMA_YMM, PEAK_MADDUBS, PEAK_VNNI_YMM, PEAK_TDPBF16, PEAK_TDPBUSD };

typedef struct peak_ctx {
  int kind;       /* PEAK_* */
  double *task_s; /* [n_threads] each task's own time */
  float *sink;    /* [n_threads] */
} peak_ctx;

/* Register-only vpdpbusd loop: 64 u8 x s8 MACs = 128 ops per instruction. */
__attribute__((target("avx512f,avx512vnni"))) static float peak_loop_vnni(void) {
  __m512i acc[PEAK_CHAINS], a = _mm512_set1_epi32(0x01020304), b = _mm512_set1_epi32(0x01FF01FF);
  for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_set1_epi32(c);
  for (int i = 0; i < PEAK_ITERS; i++) {
    PEAK_UNROLL
    for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
  }
  for (int c = 1; c < PEAK_CHAINS; c++) acc[0] = _mm512_add_epi32(acc[0], acc[c]);
  return (float)_mm512_reduce_add_epi32(acc[0]);
}

/* Register-only vdpbf16ps loop: 32 bf16 pair MACs = 64 flops per instruction. */
__attribute__((target("avx512f,avx512bf16"))) static float peak_loop_bf16(void) {
  __m512 acc[PEAK_CHAINS];
  __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80), b = (__m512bh)_mm512_set1_epi32(0x3A803A80);
  for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  for (int i = 0; i < PEAK_ITERS; i++) {
    PEAK_UNROLL
    for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  }
  for (int c = 1; c < PEAK_CHAINS; c++) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  return _mm512_reduce_add_ps(acc[0]);
}

/* Register-only vfmadd231ps loop: 16 f32 FMAs = 32 flops per instruction. */
__attribute__((target("avx512f"))) static float peak_loop_fma(void) {
  __m512 acc[PEAK_CHAINS], a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  for (int i = 0; i < PEAK_ITERS; i++) {
    PEAK_UNROLL
    for (int c = 0; c < PEAK_CHAINS; c++) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  for (int c = 1; c < PEAK_CHAINS; c++) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  return _mm512_reduce_add_ps(acc[0]);
}

/* The AVX2 tier's: vfmadd231ps ymm (16 flops), the int8 triple vpmaddubsw + vpmaddwd + vpaddd (32
 * MACs = 64 ops), and AVX-VNNI's vpdpbusd ymm (64 ops). 12 chains: with the operands they fill the
 * 16 ymm registers without spilling (still more than latency x throughput of the units). */
#define PEAK_CHAINS_YMM 12
#define PEAK_UNROLL_YMM _Pragma("GCC unroll 12")
__attribute__((target("avx2,fma"))) static float peak_loop_fma_ymm(void) {
  __m256 acc[PEAK_CHAINS_YMM], a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  float out[8];
  for (int c = 0; c < PEAK_CHAINS_YMM; c++) acc[c] = _mm256_set1_ps((float)c);
  for (int i = 0; i < PEAK_ITERS; i++) {
    PEAK_UNROLL_YMM
    for (int c = 0; c < PEAK_CHAINS_YMM; c++) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  for (int c = 1; c < PEAK_CHAINS_YMM; c++) acc[0] = _mm256_add_ps(acc[0], acc[c]);
  _mm256_storeu_ps(out, acc[0]);
  return out[0];
}
__attribute__((target("avx2"))) static float peak_loop_maddubs(void) {
  __m256i acc[PEAK_CHAINS_YMM], b = _mm256_set1_epi32(0x01FF01FF), one = _mm256_set1_epi16(1);
  for (int c = 0; c < PEAK_CHAINS_YMM; c++) acc[c] = _mm256_set1_epi32(c);
  for (int i = 0; i < PEAK_ITERS; i++) {
    PEAK_UNROLL_YMM
    for (int c = 0; c < PEAK_CHAINS_YMM; c++) /* each chain feeds its own sum back: nothing is shared or hoisted */
      acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(acc[c], b), one));
  }
  for (int c = 1; c < PEAK_CHAINS_YMM; c++) acc[0] = _mm256_add_epi32(acc[0], acc[c]);
  return (float)_mm256_extract_epi32(acc[0], 0);
}
__attribute__((target("avx2,avxvnni"))) static float peak_loop_vnni_ymm(void) {
  __m256i acc[PEAK_CHAINS_YMM], a = _mm256_set1_epi32(0x01020304), b = _mm256_set1_epi32(0x01FF01FF);
  for (int c = 0; c < PEAK_CHAINS_YMM; c++) acc[c] = _mm256_set1_epi32(c);
  for (int i = 0; i < PEAK_ITERS; i++) {
    PEAK_UNROLL_YMM
    for (int c = 0; c < PEAK_CHAINS_YMM; c++) acc[c] = _mm256_dpbusd_avx_epi32(acc[c], a, b);
  }
  for (int c = 1; c < PEAK_CHAINS_YMM; c++) acc[0] = _mm256_add_epi32(acc[0], acc[c]);
  return (float)_mm256_extract_epi32(acc[0], 0);
}

/* The AMX tiles, tile-only: four independent C tiles (tmm0-3) over A and B tiles loaded once
 * (tmm4-7, 16 rows x 64 bytes), the 2x2 pattern of the kernels without their loads. tdpbf16ps is
 * 16 x 16 x 32 bf16 MACs (16384 flops), tdpbusd 16 x 16 x 64 byte MACs (32768 ops). PEAK_ITERS / 16
 * rounds of 4: a tile product takes 16 cycles where a vector one takes 1. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PEAK_HAVE_TILES 1
#define PEAK_TILE_ITERS (PEAK_ITERS / 16)
typedef struct peak_tilecfg {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} peak_tilecfg;
__attribute__((target("amx-tile"))) static void peak_tiles_begin(void) {
  uint8_t ab[1024]; /* bf16 0x3C3C (~0.011) and bytes 60: finite and non-zero, nothing special-cased */
  peak_tilecfg cfg;
  memset(ab, 0x3C, sizeof ab);
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  __asm__ volatile("" : : "r"(&cfg) : "memory"); /* gcc's ldtilecfg claims to read one byte only */
  _tile_loadconfig(&cfg);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ab, 64);
  _tile_loadd(5, ab, 64);
  _tile_loadd(6, ab, 64);
  _tile_loadd(7, ab, 64);
}
__attribute__((target("amx-tile"))) static float peak_tiles_end(void) {
  float c[16 * 16];
  _tile_stored(0, c, 64);
  _tile_release();
  return c[0];
}
__attribute__((target("amx-tile,amx-bf16"))) static float peak_loop_tdpbf16(void) {
  peak_tiles_begin();
  for (int i = 0; i < PEAK_TILE_ITERS; i++) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  return peak_tiles_end();
}
__attribute__((target("amx-tile,amx-int8"))) static float peak_loop_tdpbusd(void) {
  peak_tiles_begin();
  for (int i = 0; i < PEAK_TILE_ITERS; i++) {
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  return peak_tiles_end();
}
#else
#define PEAK_HAVE_TILES 0
#endif

static void peak_task(void *arg, int64_t i) {
  peak_ctx *c = (peak_ctx *)arg;
  double t0 = now_s();
  switch (c->kind) {
  case PEAK_BF16: c->sink[i] = peak_loop_bf16(); break;
  case PEAK_FMA: c->sink[i] = peak_loop_fma(); break;
  case PEAK_FMA_YMM: c->sink[i] = peak_loop_fma_ymm(); break;
  case PEAK_MADDUBS: c->sink[i] = peak_loop_maddubs(); break;
  case PEAK_VNNI_YMM: c->sink[i] = peak_loop_vnni_ymm(); break;
#if PEAK_HAVE_TILES
  case PEAK_TDPBF16: c->sink[i] = peak_loop_tdpbf16(); break;
  case PEAK_TDPBUSD: c->sink[i] = peak_loop_tdpbusd(); break;
#endif
  default: c->sink[i] = peak_loop_vnni(); break;
  }
  c->task_s[i] = now_s() - t0;
}

/* Per trial the sum of each thread's own rate (a thread that other processes preempt only lowers
 * its own part), the best of PEAK_TRIALS trials. */
static double measure_peak(bench_pool *pool, int kind) {
  static const double ops_per_insn[] = {128.0, 64.0, 32.0, 16.0, 64.0, 64.0, 16384.0, 32768.0};
  static const uint32_t needs[] = {MOE_CPU_AVX512F | MOE_CPU_AVX512VNNI, MOE_CPU_AVX512F | MOE_CPU_AVX512BF16,
                                   MOE_CPU_AVX512F, MOE_CPU_AVX2 | MOE_CPU_FMA, MOE_CPU_AVX2,
                                   MOE_CPU_AVX2 | MOE_CPU_AVX_VNNI, MOE_CPU_AMX_TILE | MOE_CPU_AMX_BF16,
                                   MOE_CPU_AMX_TILE | MOE_CPU_AMX_INT8};
  const int n_threads = pool_threads(pool), tiles = kind >= PEAK_TDPBF16;
  peak_ctx c;
  const int chains = tiles ? 4 : kind >= PEAK_FMA_YMM ? PEAK_CHAINS_YMM : PEAK_CHAINS;
  double best = 0.0, ops = (double)(tiles ? PEAK_ITERS / 16 : PEAK_ITERS) * chains * ops_per_insn[kind];
  if (!have_features(needs[kind])) return 0.0;
  if (tiles && (!PEAK_HAVE_TILES || !moe_amx_request())) return 0.0; /* tiles need the OS's permission */
  c.kind = kind;
  c.task_s = (double *)kit_malloc((size_t)n_threads * sizeof *c.task_s);
  c.sink = (float *)kit_malloc((size_t)n_threads * sizeof *c.sink);
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

ceilings measure_peaks(bench_pool *pool) {
  ceilings c;
  c.gops_vnni = measure_peak(pool, PEAK_VNNI);
  c.gflops_bf16 = measure_peak(pool, PEAK_BF16);
  c.gflops_fma = measure_peak(pool, PEAK_FMA);
  c.gflops_fma_ymm = measure_peak(pool, PEAK_FMA_YMM);
  c.gops_maddubs = measure_peak(pool, PEAK_MADDUBS);
  c.gops_vnni_ymm = measure_peak(pool, PEAK_VNNI_YMM);
  c.gflops_tdpbf16 = measure_peak(pool, PEAK_TDPBF16);
  c.gops_tdpbusd = measure_peak(pool, PEAK_TDPBUSD);
  return c;
}

double peak_for_precision(const ceilings *c, moe_precision p) {
  return p == MOE_PREC_INT8 || p == MOE_PREC_INT4_W4A8 ? c->gops_vnni : c->gflops_bf16;
}

/* The peak of a kernel's dot-product instruction, by the kernel list's name for it; 0 if unknown. */
static double peak_of_dot(const ceilings *c, const char *dot) {
  if (!strcmp(dot, "vpdpbusd")) return c->gops_vnni;
  if (!strcmp(dot, "vdpbf16ps")) return c->gflops_bf16;
  if (!strcmp(dot, "vfmadd231ps-ymm")) return c->gflops_fma_ymm;
  if (!strcmp(dot, "vpmaddubsw")) return c->gops_maddubs;
  if (!strcmp(dot, "vpdpbusd-ymm")) return c->gops_vnni_ymm;
  if (!strcmp(dot, "tdpbf16ps")) return c->gflops_tdpbf16;
  if (!strcmp(dot, "tdpbusd")) return c->gops_tdpbusd;
  return 0.0;
}

double peak_for_kernel(const ceilings *c, const moe_gemm_config *k) {
  if (k->isa == MOE_ISA_SCALAR || !k->dot) return 0.0;
  return peak_of_dot(c, k->dot);
}

double roofline_peak(const ceilings *c, const moe_gemm_config *k, const char **name) {
  const char *dot = k && k->dot ? k->dot : "scalar";
  double peak;
  if (peak_of_dot(c, dot) > 0) peak = peak_of_dot(c, dot), *name = dot;
  else if (!strcmp(dot, "scalar") && c->gflops_fma > 0) peak = c->gflops_fma, *name = "vfmadd231ps";
  else if (!strcmp(dot, "scalar")) peak = c->gflops_bf16, *name = "vdpbf16ps";
  else {
    moe_precision p = k->precision;
    peak = peak_for_precision(c, p);
    *name = p == MOE_PREC_INT8 || p == MOE_PREC_INT4_W4A8 ? "vpdpbusd" : "vdpbf16ps";
  }
  if (peak <= 0) *name = "none";
  return peak > 0 ? peak : 0.0;
}

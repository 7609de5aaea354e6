/* bench_ceilings.h — the machine's own ceilings, measured by the benchmark in the same run: DRAM read
 * bandwidth (a 1 GiB probe with 512-bit loads) and the peak of each dot-product instruction, on all
 * threads of the pool. */
#ifndef BENCH_CEILINGS_H
#define BENCH_CEILINGS_H

#include "bench_pool.h"
#include "moe.h"

typedef struct probe_ctx probe_ctx;

probe_ctx *probe_create(void); /* allocates and touches the 1 GiB */
void probe_destroy(probe_ctx *c);
/* GB/s of a 1 GiB read shared by all threads: the best of its 64 MiB parts, each timed alone
 * (robust to preemption). Between timed runs it also evicts the caches. */
double probe_bandwidth(probe_ctx *c, bench_pool *pool);

typedef struct ceilings {
  double gops_vnni, gflops_bf16; /* vpdpbusd GOPS, vdpbf16ps GFLOPS; 0 when the CPU lacks one */
  double gflops_fma;             /* 512-bit vfmadd231ps (f32 FMA) GFLOPS; 0 without AVX-512F */
  /* the AVX2 / AVX-VNNI tiers' instructions (256-bit); 0 when the CPU lacks them */
  double gflops_fma_ymm;         /* vfmadd231ps ymm: 16 flops each                                  */
  double gops_maddubs;           /* vpmaddubsw + vpmaddwd + vpaddd: 32 u8 x s8 MACs = 64 ops a triple */
  double gops_vnni_ymm;          /* vpdpbusd ymm (AVX-VNNI): 64 ops each                              */
  /* the AMX tiles, tile-only on all threads (after the OS granted tile state); 0 without AMX */
  double gflops_tdpbf16;         /* tdpbf16ps: 16384 flops each                                       */
  double gops_tdpbusd;           /* tdpbusd: 32768 ops each                                           */
} ceilings;

/* The peaks, all threads of the pool at once, each the best of 40 trials of ~1 ms. */
ceilings measure_peaks(bench_pool *pool);
/* The peak a layer of precision p is compared with: int8 and int4-w4a8 run on vpdpbusd, every other
 * precision computes with bf16 dot products. */
double peak_for_precision(const ceilings *c, moe_precision p);
/* The peak of kernel k's dot instruction (moe_gemm_config.dot): the 512-bit and 256-bit vector
 * instructions and the AMX tiles; 0 (no peak) for scalar kernels. */
double peak_for_kernel(const ceilings *c, const moe_gemm_config *k);
/* The compute roof of a layer run by kernel k: the peak of its dot instruction ("vpdpbusd",
 * "vdpbf16ps"); for "scalar" kernels the f32 FMA peak (vfmadd231ps), or the vdpbf16ps peak when
 * that one is not measured; for another instruction the peak of the precision (peak_for_precision).
 * *name is the instruction whose peak is returned, "none" (and 0) when none was measured. */
double roofline_peak(const ceilings *c, const moe_gemm_config *k, const char **name);

#endif /* BENCH_CEILINGS_H */

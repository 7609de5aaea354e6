/* Compile test that calls every public function on small real data. Including the headers is not
 * enough: a compiler instantiates the kernels (and warns inside its own intrinsics headers, as GCC 12
 * does in C++) only once they are called. Valid C99/C11 and C++11/17; built with -DMOE_IMPLEMENTATION
 * (header-only) or without it, linked against moe.c. Exits 0 when every call returned what it should.
 * Structs start from MOE_ZERO_INIT, as a user's would (`= {0}` warns under C++ -Wextra). */
#include "moe.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { E = 4, N = 40, K = 72, M = 5, TOPK = 2, BLK = 32 }; /* N, K: partial panels and groups */
enum { N13 = E * 2 * N * K, N2 = E * K * N };

static int failures;
#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond), failures++; \
  } while (0)
#define EXPECT_OK(call) EXPECT((call) == MOE_OK)

/* The plain weights of every precision: f32 originals and room for any plain layout. */
static float w13f[N13], w2f[N2], b13[E * 2 * N], b2[E * K];
static uint8_t q13[2 * N13], q2[2 * N2], z13[N13], z2[N2];
static float s13[N13], s2[N2];
static unsigned char pack_buf[1 << 20], shared_buf[1 << 18], ws[1 << 20];

/* x, logits and outputs of one layer call */
static uint16_t x[M * K], out[M * K], out2[M * K];
static float logits[M * E], tw[M * TOPK];
static int32_t ids[M * TOPK];

static uint32_t rng_state = 12345u;
static float frand(void) { /* uniform in [-1, 1) */
  rng_state = rng_state * 1664525u + 1013904223u;
  return (float)(rng_state >> 8) / 8388608.0f - 1.0f;
}

static double seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

/* A pool that runs every task on the calling thread, last first: valid for any call. */
static void serial_reverse(void *pool, void (*fn)(void *arg, int64_t i), void *arg, int64_t n) {
  (void)pool;
  for (int64_t i = n - 1; i >= 0; i--) fn(arg, i);
}

static void make_data(void) {
  int i;
  for (i = 0; i < N13; i++) w13f[i] = frand() / 8.0f;
  for (i = 0; i < N2; i++) w2f[i] = frand() / 8.0f;
  for (i = 0; i < E * 2 * N; i++) b13[i] = frand() / 16.0f;
  for (i = 0; i < E * K; i++) b2[i] = frand() / 16.0f;
  for (i = 0; i < M * K; i++) x[i] = moe_f32_to_bf16(frand());
  for (i = 0; i < M * E; i++) logits[i] = frand();
}

/* Quantizes the f32 weights into p's plain layout with the library's quantizers. */
static void make_plain(moe_precision p, moe_weights *w) {
  moe_weights zero = MOE_ZERO_INIT;
  *w = zero;
  w->precision = p, w->E = E, w->N = N, w->K = K;
  w->block_n = w->block_k = BLK, w->group = BLK;
  w->w13 = q13, w->w2 = q2;
  switch (p) {
  case MOE_PREC_BF16:
  case MOE_PREC_FP16:
    moe_convert_from_f32(p == MOE_PREC_BF16 ? MOE_BF16 : MOE_F16, w13f, q13, N13);
    moe_convert_from_f32(p == MOE_PREC_BF16 ? MOE_BF16 : MOE_F16, w2f, q2, N2);
    break;
  case MOE_PREC_INT8:
    moe_quantize_weight_int8(w13f, E, 2 * N, K, (int8_t *)q13, s13);
    moe_quantize_weight_int8(w2f, E, K, N, (int8_t *)q2, s2);
    w->w13_scale = s13, w->w2_scale = s2;
    break;
  case MOE_PREC_FP8:
    moe_quantize_weight_fp8(w13f, E, 2 * N, K, BLK, BLK, q13, s13);
    moe_quantize_weight_fp8(w2f, E, K, N, BLK, BLK, q2, s2);
    w->w13_scale = s13, w->w2_scale = s2;
    break;
  case MOE_PREC_INT4_W4A8:
  case MOE_PREC_INT4_W4A16:
    moe_quantize_weight_int4(w13f, E, 2 * N, K, BLK, q13, s13, z13);
    moe_quantize_weight_int4(w2f, E, K, N, BLK, q2, s2, z2);
    w->w13_scale = s13, w->w2_scale = s2, w->w13_zero = z13, w->w2_zero = z2;
    break;
  default: /* MXFP4 */
    moe_quantize_weight_mxfp4(w13f, E, 2 * N, K, q13, z13);
    moe_quantize_weight_mxfp4(w2f, E, K, N, q2, z2);
    w->w13_e8m0 = z13, w->w2_e8m0 = z2;
    break;
  }
}

/* Every output element finite, some nonzero. */
static int plausible(const uint16_t *y) {
  int nonzero = 0, i;
  for (i = 0; i < M * K; i++) {
    float v = moe_bf16_to_f32(y[i]);
    if (v != v || v - v != 0.0f) return 0;
    nonzero |= v != 0.0f;
  }
  return nonzero;
}

/* The routed layer with a shared expert, its parts one by one, and moe_forward. */
static void run_layer(const moe_experts *ex, const moe_experts *shared) {
  moe_router r = MOE_ZERO_INIT;
  moe_call c = MOE_ZERO_INIT;
  moe_parallel par = MOE_ZERO_INIT;
  moe_stats stats = MOE_ZERO_INIT;
  size_t bytes = 0;
  r.E = E, r.topk = TOPK, r.renormalize = 1;
  EXPECT_OK(moe_route(&r, logits, MOE_F32, M, tw, ids));
  c.x = x, c.out = out, c.M = M, c.topk = TOPK, c.topk_weights = tw, c.topk_ids = ids;
  c.shared = shared, c.stats = &stats;
  stats.clock = seconds;
  par.parallel_for = serial_reverse, par.n_threads = 1;
  EXPECT_OK(moe_route_parallel(&r, logits, MOE_F32, M, tw, ids, &par));
  EXPECT_OK(moe_workspace_size(ex, &c, &bytes));
  EXPECT(bytes <= sizeof ws);
  EXPECT_OK(moe_fused_experts(ex, &c, ws, bytes, NULL));
  EXPECT(plausible(out));
  EXPECT_OK(moe_fused_experts(ex, &c, ws, bytes, &par));
  /* the same sum in two calls: routed experts, then the shared expert added to them */
  c.shared = NULL, c.out = out2;
  EXPECT_OK(moe_fused_experts(ex, &c, ws, sizeof ws, NULL));
  EXPECT_OK(moe_shared_expert_workspace_size(shared, &c, &bytes));
  EXPECT_OK(moe_shared_expert(shared, &c, out2, ws, bytes, NULL));
  EXPECT(plausible(out2));
  c.shared = shared;
  EXPECT_OK(moe_forward_workspace_size(ex, &r, &c, &bytes));
  EXPECT_OK(moe_forward(ex, &r, logits, MOE_F32, &c, ws, bytes, NULL));
  EXPECT(plausible(out2));
  EXPECT(moe_fused_experts(ex, &c, ws, 1, NULL) == MOE_ERR_WORKSPACE);
}

/* Pack p (routed experts and expert 0 as a shared expert) and run the layer on every tier. */
static void run_precision(moe_precision p) {
  moe_weights w;
  moe_experts ex, shared;
  size_t bytes;
  int isa;
  make_plain(p, &w);
  w.b13 = b13, w.b2 = b2;
  bytes = moe_pack_size(&w);
  if (!moe_precision_compiled(p)) {
    EXPECT(bytes == 0 && moe_pack(&w, &ex, pack_buf, sizeof pack_buf) == MOE_ERR_UNSUPPORTED);
    EXPECT(moe_gemm_select(p) == NULL);
    return;
  }
  EXPECT(bytes > 0 && bytes <= sizeof pack_buf);
  EXPECT_OK(moe_pack(&w, &ex, pack_buf, bytes));
  w.E = 1, w.b13 = NULL, w.b2 = NULL;
  EXPECT_OK(moe_pack(&w, &shared, shared_buf, sizeof shared_buf));
  for (isa = 0; isa < MOE_ISA_COUNT; isa++) {
    const moe_gemm_config *cfg = moe_gemm_config_for(p, (moe_isa)isa);
    moe_set_isa((moe_isa)isa);
    EXPECT(moe_gemm_select(p) != NULL && moe_gemm_select(p)->name != NULL);
    if (cfg) EXPECT(cfg->isa == (moe_isa)isa && cfg->precision == p && cfg->gemm1 && cfg->gemm2);
    if (cfg) EXPECT(moe_isa_available((moe_isa)isa) && moe_kernel_runnable(cfg));
    run_layer(&ex, &shared);
  }
  moe_set_isa(MOE_ISA_COUNT); /* no cap */
}

static void check_conversions(void) {
  float f[4] = {1.0f, -2.5f, 0.0f, 3.0f}, back[4];
  uint8_t q[4];
  int t;
  EXPECT(moe_f32_to_bf16(1.0f) == 0x3F80 && moe_bf16_to_f32(0x3F80) == 1.0f);
  EXPECT(moe_f32_to_f16(1.0f) == 0x3C00 && moe_f16_to_f32(0x3C00) == 1.0f);
  EXPECT(moe_e4m3_to_f32(moe_f32_to_e4m3(1.5f)) == 1.5f);
  EXPECT(moe_e2m1_to_f32(moe_f32_to_e2m1(-3.0f)) == -3.0f);
  EXPECT(moe_e8m0_to_f32(128) == 2.0f);
  for (t = MOE_BF16; t <= MOE_F32; t++) {
    uint8_t buf[16];
    moe_convert_from_f32((moe_dtype)t, f, buf, 4);
    moe_convert_to_f32((moe_dtype)t, buf, back, 4);
    EXPECT(memcmp(f, back, sizeof f) == 0);
  }
  EXPECT(moe_quantize_row_u8(f, 4, q) > 0.0f && q[2] == 128);
}

static void check_routing_helpers(void) {
  int32_t map[E], E_local = 0, scratch[E + 1], sorted[256], blk_e[16], blk_r[16];
  int64_t n_blocks = 0;
  uint16_t gu[2 * 2 * 3], dst[2 * 2 * 3];
  int i;
  float bias[E] = {0.0f, 0.1f, -0.1f, 0.2f};
  moe_router r = MOE_ZERO_INIT;
  r.kind = MOE_ROUTE_BIASED_GROUPED, r.E = E, r.topk = TOPK, r.n_group = 2, r.topk_group = 1;
  r.correction_bias = bias, r.routed_scaling_factor = 2.5f;
  EXPECT_OK(moe_route(&r, logits, MOE_F32, M, tw, ids));
  EXPECT(ids[0] / 2 == ids[1] / 2); /* one group kept */
  EXPECT(moe_sort_capacity(M, TOPK, E, 4) <= sizeof sorted / sizeof sorted[0]);
  EXPECT_OK(moe_sort_slots(ids, M, TOPK, E, NULL, E, 4, scratch, sorted, blk_e, blk_r, &n_blocks));
  EXPECT(n_blocks >= 1);
  EXPECT_OK(moe_expert_map_contiguous(E, 2, 1, map, &E_local));
  EXPECT(E_local == 2 && map[0] == -1 && map[3] == 1);
  for (i = 0; i < 12; i++) gu[i] = (uint16_t)i; /* rows gate 0, up 0, gate 1, up 1 of 3 values */
  EXPECT_OK(moe_deinterleave_gate_up(gu, dst, 1, 2, 3 * sizeof(uint16_t)));
  EXPECT(dst[0] == 0 && dst[3] == 6 && dst[6] == 3);
  EXPECT(moe_deinterleave_gate_up(gu, gu, 1, 2, 6) == MOE_ERR_ARG);
}

/* Names, versions, tiers and the kernel list. */
static void check_names(void) {
  int i;
  EXPECT(strcmp(moe_status_str(MOE_OK), "success") == 0 && moe_status_str(MOE_ERR_ARG) != NULL);
  for (i = 0; i < MOE_PREC_COUNT; i++) EXPECT(moe_precision_name((moe_precision)i) != NULL);
  EXPECT(moe_precision_name(MOE_PREC_COUNT) == NULL);
  EXPECT(strcmp(moe_version(), MOE_VERSION_STRING) == 0 && moe_experts_size() == sizeof(moe_experts));
#ifdef CALL_API_VERSION /* the build system's version (Meson's project version) */
  EXPECT(strcmp(moe_version(), CALL_API_VERSION) == 0);
#endif
  for (i = 0; i < MOE_ISA_COUNT; i++) EXPECT(moe_isa_from_name(moe_isa_name((moe_isa)i)) == (moe_isa)i);
  EXPECT(moe_isa_from_name("no-such-tier") == MOE_ISA_COUNT && moe_isa_available(MOE_ISA_SCALAR));
  EXPECT(moe_set_isa(MOE_ISA_SCALAR) == MOE_ISA_SCALAR && moe_get_isa() == MOE_ISA_SCALAR);
  EXPECT(moe_isa_available(moe_set_isa(MOE_ISA_COUNT)));
  EXPECT(moe_kernel_count() >= 1 && moe_kernel_at(-1) == NULL && moe_kernel_at(moe_kernel_count()) == NULL);
  for (i = 0; i < moe_kernel_count(); i++) {
    const moe_gemm_config *k = moe_kernel_at(i);
    EXPECT(k && k->name && k->gemm1 && k->gemm2 && moe_precision_compiled(k->precision));
    if (k && k->isa == MOE_ISA_SCALAR) EXPECT(moe_kernel_runnable(k));
  }
  (void)moe_amx_request(); /* 0 or 1: whether Linux granted AMX tiles */
  EXPECT(moe_amx_status() != NULL && moe_amx_status()[0] != 0);
  printf("call_api: %s, isa %s, cpu features 0x%x, %d kernels\n", moe_version(), moe_isa_name(moe_get_isa()),
         (unsigned)moe_cpu_features(), moe_kernel_count());
}

int main(void) {
  int p;
  make_data();
  check_conversions();
  check_routing_helpers();
  check_names();
  for (p = 0; p < MOE_PREC_COUNT; p++) run_precision((moe_precision)p);
  if (failures) fprintf(stderr, "call_api: %d failed checks\n", failures);
  return failures ? 1 : 0;
}

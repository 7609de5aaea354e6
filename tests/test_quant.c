/* Tests of moe_quant.h: status names, precision names, scalar conversions (bf16, fp16, e4m3, e2m1,
 * e8m0), bulk conversions, per-token u8 activation quantization, the four weight quantizers and the
 * gate/up deinterleave. Every expectation comes from an independent formula in double precision
 * (a decoded grid of each format and a nearest-on-grid search), not from the library code.
 * Valid C99/C11 and C++11/17. */
#include "../moe_quant.h"
#include "test_util.h"

#include <float.h>

/* ---- independent references ---------------------------------------------------------------- */
static float f32_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t bits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* NaN for NaN codes, +-Inf for Inf codes, else the exact value */
static double ref_f16(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1.0 + m / 1024.0, e - 15);
  return (h & 0x8000) ? -v : v;
}
static double ref_bf16(uint16_t h) {
  int e = (h >> 7) & 255, m = h & 127;
  double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(1.0 + m / 128.0, e - 127);
  return (h & 0x8000) ? -v : v;
}
static double ref_e4m3(uint8_t c) {
  int e = (c >> 3) & 15, m = c & 7;
  double v = (e == 15 && m == 7) ? NAN : e == 0 ? ldexp(m, -9) : ldexp(1.0 + m / 8.0, e - 7);
  return (c & 0x80) ? -v : v;
}
static double ref_e2m1(uint8_t c) {
  int e = (c >> 1) & 3, m = c & 1;
  double v = e == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, e - 1);
  return (c & 8) ? -v : v;
}

/* Index of the grid value nearest to x >= 0 (grid ascending, index = code), ties to the even index;
 * beyond the last value, the last index (saturation, or the virtual "Inf" entry). */
static int ref_nearest(const double *g, int n, double x) {
  int lo = 0, hi = n - 1;
  if (x >= g[n - 1]) return n - 1;
  while (hi - lo > 1) { /* invariant g[lo] <= x < g[hi] */
    int mid = (lo + hi) / 2;
    if (g[mid] <= x) lo = mid; else hi = mid;
  }
  if (x - g[lo] < g[hi] - x) return lo;
  if (x - g[lo] > g[hi] - x) return hi;
  return (lo & 1) ? hi : lo;
}

/* grids of the positive codes; fp16 and bf16 end with a virtual 2^16 / 2^128 entry at the Inf code */
static double g_f16[0x7C01], g_bf16[0x7F81], g_e4m3[0x7F], g_e2m1[8];
static void build_grids(void) {
  int i;
  for (i = 0; i < 0x7C00; i++) g_f16[i] = ref_f16((uint16_t)i);
  g_f16[0x7C00] = 65536.0;
  for (i = 0; i < 0x7F80; i++) g_bf16[i] = ref_bf16((uint16_t)i);
  g_bf16[0x7F80] = ldexp(1.0, 128);
  for (i = 0; i < 0x7F; i++) g_e4m3[i] = ref_e4m3((uint8_t)i);
  for (i = 0; i < 8; i++) g_e2m1[i] = ref_e2m1((uint8_t)i);
}
/* reference encoders for non-NaN input */
static unsigned ref_enc(const double *g, int n, float f, unsigned sign_code) {
  double x = f;
  unsigned c = (unsigned)ref_nearest(g, n, fabs(x));
  return signbit(f) ? (c | sign_code) : c;
}
static uint16_t ref_enc_f16(float f) { return (uint16_t)ref_enc(g_f16, 0x7C01, f, 0x8000); }
static uint16_t ref_enc_bf16(float f) { return (uint16_t)ref_enc(g_bf16, 0x7F81, f, 0x8000); }
static uint8_t ref_enc_e4m3(float f) { return (uint8_t)ref_enc(g_e4m3, 0x7F, f, 0x80); }
static uint8_t ref_enc_e2m1(float f) { return (uint8_t)ref_enc(g_e2m1, 8, f, 8); }

/* a float with random sign, mantissa, and binary exponent in [emin, emax] */
static float rand_float(kit_rng *r, int emin, int emax) {
  double m = 1.0 + kit_uniform(r);
  float f = (float)ldexp(m, emin + (int)kit_randint(r, emax - emin + 1));
  return (kit_next(r) & 1) ? -f : f;
}
/* same value and same sign (so -0 differs from +0) */
static int same(double a, double b) { return a == b && signbit(a) == signbit(b); }

/* ---- names ------------------------------------------------------------------------------------ */
#define T_STATUS(name, value, text) name,
static const moe_status all_status[] = {MOE_STATUS_LIST(T_STATUS)};
#undef T_STATUS

/* which precisions this build compiled in, from the macros (independent of the library) */
static int want_compiled(int p) {
  int bf16 = 1, int8 = 1, fp8 = 1, int4 = 1, mxfp4 = 1;
#ifdef MOE_NO_BF16
  bf16 = 0;
#endif
#ifdef MOE_NO_INT8
  int8 = 0;
#endif
#ifdef MOE_NO_FP8
  fp8 = 0;
#endif
#ifdef MOE_NO_INT4
  int4 = 0;
#endif
#ifdef MOE_NO_MXFP4
  mxfp4 = 0;
#endif
  return p <= 1 ? bf16 : p == 2 ? int8 : p == 3 ? fp8 : p <= 5 ? int4 : mxfp4;
}

static void test_names(void) {
  size_t n = sizeof all_status / sizeof all_status[0], i, j;
  static const char *const prec[] = {"bf16", "fp16", "int8", "fp8", "int4-w4a8", "int4-w4a16", "mxfp4"};
  CHECK(n == 10, "%zu statuses", n);
  for (i = 0; i < n; i++) {
    const char *a = moe_status_str(all_status[i]);
    CHECK(a != NULL && a[0] != 0, "status %d", (int)all_status[i]);
    if (!a) continue;
    CHECK(strcmp(a, "unknown status") != 0, "status %d", (int)all_status[i]);
    for (j = 0; j < i; j++) CHECK(strcmp(a, moe_status_str(all_status[j])) != 0, "%d vs %d", (int)i, (int)j);
  }
  CHECK(strcmp(moe_status_str(MOE_OK), "success") == 0, "MOE_OK");
  CHECK(strcmp(moe_status_str((moe_status)7), "unknown status") == 0, "7");
  CHECK(strcmp(moe_status_str((moe_status)-10), "unknown status") == 0, "-10");
  CHECK(strcmp(moe_status_str((moe_status)1), "unknown status") == 0, "1");
  for (i = 0; i < 7; i++) {
    const char *a = moe_precision_name((moe_precision)i);
    CHECK(a != NULL && strcmp(a, prec[i]) == 0, "precision %d: %s", (int)i, a ? a : "NULL");
    CHECK(moe_precision_compiled((moe_precision)i) == want_compiled((int)i), "precision %d compiled", (int)i);
  }
  CHECK(moe_precision_name(MOE_PREC_COUNT) == NULL, "count");
#ifndef __cplusplus /* in C++, -1 lies outside moe_precision's value range (0..7): UB in the caller */
  CHECK(moe_precision_name((moe_precision)-1) == NULL, "-1");
#endif
  CHECK(moe_precision_compiled(MOE_PREC_COUNT) == 0, "count compiled");
}

/* ---- e4m3 ------------------------------------------------------------------------------------- */
static void test_e4m3(void) {
  int c, i;
  kit_rng rng = {4};
  for (c = 0; c < 256; c++) {
    double ref = ref_e4m3((uint8_t)c);
    float got = moe_e4m3_to_f32((uint8_t)c);
    if (ref != ref) {
      CHECK(isnan(got), "code %02x", c);
      CHECK(moe_f32_to_e4m3(got) == (uint8_t)c, "NaN code %02x -> %02x", c, moe_f32_to_e4m3(got));
    } else {
      CHECK(same(got, ref), "code %02x: %.9g vs %.9g", c, got, ref);
      CHECK(moe_f32_to_e4m3(got) == (uint8_t)c, "round trip %02x -> %02x", c, moe_f32_to_e4m3(got));
    }
  }
  CHECK(same(moe_e4m3_to_f32(0x00), 0.0) && same(moe_e4m3_to_f32(0x80), -0.0), "zeros");
  CHECK(moe_e4m3_to_f32(0x01) == ldexp(1, -9) && moe_e4m3_to_f32(0x7E) == 448.0, "0x01, 0x7E");
  CHECK(isnan(moe_e4m3_to_f32(0x7F)) && isnan(moe_e4m3_to_f32(0xFF)), "NaN codes");
  /* midpoints between neighbours go to the even code; one ulp either side to the nearer one */
  for (i = 0; i < 0x7E; i++) {
    float mid = (float)((g_e4m3[i] + g_e4m3[i + 1]) / 2); /* 5 significant bits: exact */
    int even = (i & 1) ? i + 1 : i, s;
    for (s = 0; s < 2; s++) {
      float m = s ? -mid : mid;
      unsigned sg = s ? 0x80u : 0u;
      CHECK(moe_f32_to_e4m3(m) == (sg | (unsigned)even), "mid %g -> %02x", m, moe_f32_to_e4m3(m));
      CHECK(moe_f32_to_e4m3(nextafterf(mid, 0.0f) * (s ? -1.0f : 1.0f)) == (sg | (unsigned)i), "below %g", m);
      CHECK(moe_f32_to_e4m3(nextafterf(mid, 1e9f) * (s ? -1.0f : 1.0f)) == (sg | (unsigned)(i + 1)), "above %g", m);
    }
  }
  {
    static const float sat[] = {448.0f, 449.0f, 464.0f, 479.0f, 480.0f, 1e9f, FLT_MAX, INFINITY};
    for (i = 0; i < (int)(sizeof sat / sizeof sat[0]); i++) {
      CHECK(moe_f32_to_e4m3(sat[i]) == 0x7E, "%g", sat[i]);
      CHECK(moe_f32_to_e4m3(-sat[i]) == 0xFE, "-%g", sat[i]);
    }
  }
  CHECK(moe_f32_to_e4m3(NAN) == 0x7F || moe_f32_to_e4m3(NAN) == 0xFF, "NaN");
  CHECK((moe_f32_to_e4m3(-NAN) & 0x7F) == 0x7F, "-NaN");
  CHECK(moe_f32_to_e4m3(f32_of(0x7F800001u)) == 0x7F, "sNaN");
  CHECK(moe_f32_to_e4m3((float)ldexp(1, -10)) == 0x00, "2^-10 tie to 0");
  CHECK(moe_f32_to_e4m3(nextafterf((float)ldexp(1, -10), 1.0f)) == 0x01, "above 2^-10");
  CHECK(moe_f32_to_e4m3(-(float)ldexp(1, -10)) == 0x80, "-2^-10 -> -0");
  CHECK(moe_f32_to_e4m3(1e-30f) == 0x00 && moe_f32_to_e4m3(f32_of(1)) == 0x00, "tiny");
  CHECK(moe_f32_to_e4m3(-0.0f) == 0x80, "-0");
  for (i = 0; i < 200000; i++) {
    float f = rand_float(&rng, -14, 10);
    CHECK(moe_f32_to_e4m3(f) == ref_enc_e4m3(f), "%.9g -> %02x, want %02x", f, moe_f32_to_e4m3(f), ref_enc_e4m3(f));
  }
}

/* ---- bf16 ------------------------------------------------------------------------------------- */
static void test_bf16(void) {
  int c, i;
  kit_rng rng = {16};
  for (c = 0; c < 65536; c++) {
    double ref = ref_bf16((uint16_t)c);
    float got = moe_bf16_to_f32((uint16_t)c);
    if (ref != ref) {
      CHECK(isnan(got), "code %04x", c);
      CHECK((moe_f32_to_bf16(got) & 0x7F80) == 0x7F80 && (moe_f32_to_bf16(got) & 0x7F) != 0 &&
                (moe_f32_to_bf16(got) & 0x8000) == (c & 0x8000), "NaN %04x", c);
    } else {
      CHECK(same(got, ref), "code %04x", c);
      CHECK(moe_f32_to_bf16(got) == c, "round trip %04x", c);
    }
  }
  CHECK(moe_f32_to_bf16(f32_of(0x3F808000u)) == 0x3F80, "tie down to even");
  CHECK(moe_f32_to_bf16(f32_of(0x3F818000u)) == 0x3F82, "tie up to even");
  CHECK(moe_f32_to_bf16(f32_of(0x3F808001u)) == 0x3F81, "above tie");
  CHECK(moe_f32_to_bf16(f32_of(0xBF818000u)) == 0xBF82, "negative tie");
  CHECK(moe_f32_to_bf16(f32_of(0x7F7FFFFFu)) == 0x7F80, "FLT_MAX rounds to Inf");
  CHECK(moe_f32_to_bf16(INFINITY) == 0x7F80 && moe_f32_to_bf16(-INFINITY) == 0xFF80, "Inf");
  CHECK(isnan(moe_bf16_to_f32(moe_f32_to_bf16(NAN))), "NaN");
  CHECK(moe_f32_to_bf16(f32_of(0x7F800001u)) != 0x7F80 && isnan(moe_bf16_to_f32(moe_f32_to_bf16(f32_of(0x7F800001u)))),
        "sNaN with a low payload stays NaN");
  CHECK(moe_f32_to_bf16(f32_of(0xFF800001u)) & 0x8000, "negative NaN keeps sign");
  CHECK(moe_f32_to_bf16(-0.0f) == 0x8000, "-0");
  for (i = 0; i < 200000; i++) {
    uint32_t u = (uint32_t)kit_next(&rng);
    float f = f32_of(u);
    if (isnan(f)) continue;
    CHECK(moe_f32_to_bf16(f) == ref_enc_bf16(f), "%08x -> %04x want %04x", u, moe_f32_to_bf16(f), ref_enc_bf16(f));
  }
}

/* ---- fp16 ------------------------------------------------------------------------------------- */
static void test_f16(void) {
  int c, i;
  kit_rng rng = {17};
  for (c = 0; c < 65536; c++) {
    double ref = ref_f16((uint16_t)c);
    float got = moe_f16_to_f32((uint16_t)c);
    uint16_t back = moe_f32_to_f16(got);
    if (ref != ref) {
      CHECK(isnan(got), "code %04x", c);
      CHECK((back & 0x7C00) == 0x7C00 && (back & 0x3FF) != 0 && (back & 0x8000) == (c & 0x8000), "NaN %04x", c);
    } else {
      CHECK(same(got, ref), "code %04x", c);
      CHECK(back == c, "round trip %04x -> %04x", c, back);
    }
  }
  CHECK(moe_f32_to_f16(65504.0f) == 0x7BFF, "max");
  CHECK(moe_f32_to_f16(nextafterf(65520.0f, 0.0f)) == 0x7BFF, "below overflow tie");
  CHECK(moe_f32_to_f16(65520.0f) == 0x7C00, "overflow tie");
  CHECK(moe_f32_to_f16(1e10f) == 0x7C00 && moe_f32_to_f16(-1e10f) == 0xFC00, "overflow");
  CHECK(moe_f32_to_f16(INFINITY) == 0x7C00 && moe_f32_to_f16(-INFINITY) == 0xFC00, "Inf");
  CHECK(moe_f32_to_f16((float)ldexp(1, -24)) == 0x0001, "min subnormal");
  CHECK(moe_f32_to_f16((float)ldexp(1, -25)) == 0x0000, "half of it: tie to 0");
  CHECK(moe_f32_to_f16(nextafterf((float)ldexp(1, -25), 1.0f)) == 0x0001, "above the tie");
  CHECK(moe_f32_to_f16((float)ldexp(3, -25)) == 0x0002, "1.5 ulp: tie to 2");
  CHECK(moe_f32_to_f16((float)ldexp(1023.5, -24)) == 0x0400, "rounds up into the normals");
  CHECK(moe_f32_to_f16((float)ldexp(1, -14)) == 0x0400, "min normal");
  CHECK(moe_f32_to_f16(-(float)ldexp(5, -24)) == 0x8005, "negative subnormal");
  CHECK(moe_f32_to_f16(-0.0f) == 0x8000 && moe_f32_to_f16(1e-30f) == 0, "zeros");
  CHECK(moe_f32_to_f16(f32_of(0x3F801000u)) == 0x3C00 && moe_f32_to_f16(f32_of(0x3F803000u)) == 0x3C02, "ties");
  CHECK(isnan(moe_f16_to_f32(moe_f32_to_f16(NAN))), "NaN");
  CHECK(isnan(moe_f16_to_f32(moe_f32_to_f16(f32_of(0x7F800001u)))), "sNaN with a low payload");
  for (i = 0; i < 200000; i++) {
    float f = (i & 1) ? rand_float(&rng, -26, 17) : f32_of((uint32_t)kit_next(&rng));
    if (isnan(f)) continue;
    CHECK(moe_f32_to_f16(f) == ref_enc_f16(f), "%.9g -> %04x want %04x", f, moe_f32_to_f16(f), ref_enc_f16(f));
  }
}

/* ---- e2m1, e8m0 ------------------------------------------------------------------------------- */
static void test_e2m1_e8m0(void) {
  static const double grid[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  int c, i;
  kit_rng rng = {21};
  for (c = 0; c < 16; c++) {
    double want = (c & 8) ? -grid[c & 7] : grid[c & 7];
    CHECK(same(moe_e2m1_to_f32((uint8_t)c), want), "code %x", c);
    CHECK(same(moe_e2m1_to_f32((uint8_t)(c | 0xF0)), want), "high bits ignored %x", c);
    CHECK(moe_f32_to_e2m1((float)want) == c, "round trip %x", c);
  }
  for (i = 0; i < 7; i++) {
    float mid = (float)((grid[i] + grid[i + 1]) / 2);
    int even = (i & 1) ? i + 1 : i;
    CHECK(moe_f32_to_e2m1(mid) == even, "mid %g -> %x", mid, moe_f32_to_e2m1(mid));
    CHECK(moe_f32_to_e2m1(-mid) == (8 | even), "mid -%g", mid);
    CHECK(moe_f32_to_e2m1(nextafterf(mid, 0.0f)) == i, "below %g", mid);
    CHECK(moe_f32_to_e2m1(nextafterf(mid, 100.0f)) == i + 1, "above %g", mid);
  }
  CHECK(moe_f32_to_e2m1(6.5f) == 7 && moe_f32_to_e2m1(1e30f) == 7 && moe_f32_to_e2m1(INFINITY) == 7, "saturate");
  CHECK(moe_f32_to_e2m1(-7.0f) == 15 && moe_f32_to_e2m1(-INFINITY) == 15, "saturate -");
  CHECK(moe_f32_to_e2m1(NAN) == 0 && moe_f32_to_e2m1(-NAN) == 0, "NaN -> 0 (documented)");
  CHECK(moe_f32_to_e2m1(-0.0f) == 8 && moe_f32_to_e2m1(0.1f) == 0 && moe_f32_to_e2m1(-0.1f) == 8, "zeros");
  for (i = 0; i < 100000; i++) {
    float f = rand_float(&rng, -4, 3);
    CHECK(moe_f32_to_e2m1(f) == ref_enc_e2m1(f), "%.9g -> %x want %x", f, moe_f32_to_e2m1(f), ref_enc_e2m1(f));
  }
  for (c = 0; c < 255; c++)
    CHECK((double)moe_e8m0_to_f32((uint8_t)c) == ldexp(1.0, c - 127), "e8m0 %d", c);
  CHECK(isnan(moe_e8m0_to_f32(255)), "e8m0 255");
}

/* ---- bulk conversions ------------------------------------------------------------------------- */
static void test_convert(void) {
  static const float src[6] = {1.0f, -2.5f, 3.14159265f, 65504.0f, 1e-6f, 0.0f};
  float back[6];
  uint16_t h[6];
  int i;
  moe_convert_from_f32(MOE_BF16, src, h, 6);
  for (i = 0; i < 6; i++) CHECK(h[i] == ref_enc_bf16(src[i]), "bf16 %d", i);
  moe_convert_to_f32(MOE_BF16, h, back, 6);
  for (i = 0; i < 6; i++) CHECK(same(back[i], ref_bf16(h[i])), "bf16 back %d", i);
  moe_convert_from_f32(MOE_F16, src, h, 6);
  for (i = 0; i < 6; i++) CHECK(h[i] == ref_enc_f16(src[i]), "f16 %d", i);
  moe_convert_to_f32(MOE_F16, h, back, 6);
  for (i = 0; i < 6; i++) CHECK(same(back[i], ref_f16(h[i])), "f16 back %d", i);
  moe_convert_from_f32(MOE_F32, src, back, 6);
  for (i = 0; i < 6; i++) CHECK(bits_of(back[i]) == bits_of(src[i]), "f32 %d", i);
  test_poison(back, sizeof back);
  moe_convert_to_f32(MOE_F32, src, back, 6);
  for (i = 0; i < 6; i++) CHECK(bits_of(back[i]) == bits_of(src[i]), "f32 to %d", i);
  moe_convert_to_f32(MOE_BF16, NULL, NULL, 0);
  moe_convert_from_f32(MOE_F16, NULL, NULL, 0);
}

/* ---- per-token u8 activation quantization ----------------------------------------------------- */
static double rne(double v) { /* round half to even, independent of the rounding mode */
  double f = floor(v), d = v - f;
  return (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0)) ? f + 1 : f;
}

static void test_row_u8(void) {
  static const float row[] = {127.0f, 2.5f, 3.5f, -2.5f, -3.5f, 0.5f, 1.5f, -0.5f, -127.0f, 126.5f, -1.5f, 0.0f};
  static const int want[] = {127, 2, 4, -2, -4, 0, 2, 0, -127, 126, -2, 0};
  uint8_t q[64];
  float x[64], s;
  int i, t;
  kit_rng rng = {33};
  s = moe_quantize_row_u8(row, 12, q);
  CHECK(s == 1.0f, "scale %g", s);
  for (i = 0; i < 12; i++) CHECK(q[i] == want[i] + 128, "row[%d] = %g -> %d want %d", i, row[i], q[i] - 128, want[i]);
  /* scale 2: x / 2 = 2.5 and 3.5 and -2.5 */
  x[0] = 254.0f; x[1] = 5.0f; x[2] = 7.0f; x[3] = -5.0f; x[4] = 1.0f; x[5] = 3.0f;
  s = moe_quantize_row_u8(x, 6, q);
  CHECK(s == 2.0f, "scale %g", s);
  CHECK(q[0] == 255 && q[1] == 130 && q[2] == 132 && q[3] == 126 && q[4] == 128 && q[5] == 130,
        "scale 2: %d %d %d %d %d %d", q[0], q[1], q[2], q[3], q[4], q[5]);
  /* n = 0 and tiny rows take the 1e-7 floor */
  CHECK(moe_quantize_row_u8(NULL, 0, NULL) == 1e-7f / 127.0f, "n = 0");
  x[0] = 1e-9f; x[1] = -3e-8f; x[2] = 0.0f;
  s = moe_quantize_row_u8(x, 3, q);
  CHECK(s == 1e-7f / 127.0f, "tiny row");
  CHECK(q[0] == 129 && q[1] == (uint8_t)(128 - 38) && q[2] == 128, "tiny codes %d %d %d", q[0], q[1], q[2]);
  /* NaN and Inf rows: NaN / Inf scale, codes in range, no UB (UBSan) */
  for (t = 0; t < 4; t++) {
    for (i = 0; i < 16; i++) x[i] = (float)i - 7.5f;
    x[5] = t == 0 ? NAN : t == 1 ? INFINITY : t == 2 ? -INFINITY : -NAN;
    if (t == 1) x[9] = NAN; /* Inf then NaN: NaN wins */
    if (t == 0) x[11] = INFINITY;
    test_poison(q, 16);
    s = moe_quantize_row_u8(x, 16, q);
    if (t == 2) CHECK(isinf(s) && s > 0, "Inf row: scale %g", s);
    else CHECK(isnan(s), "NaN row %d: scale %g", t, s);
    for (i = 0; i < 16; i++) CHECK(q[i] >= 1, "row %d code %d", t, q[i]);
  }
  x[0] = 1.0f; x[1] = NAN; /* NaN after the first element too */
  CHECK(isnan(moe_quantize_row_u8(x, 2, q)), "late NaN");
  x[0] = NAN; x[1] = 1.0f; x[2] = 5.0f;
  CHECK(isnan(moe_quantize_row_u8(x, 3, q)), "early NaN");
  /* random rows against the formula: x / scale in f32, rounded half to even */
  for (t = 0; t < 200; t++) {
    int n = 1 + (int)kit_randint(&rng, 64);
    float amax = 0;
    double mag = ldexp(1.0, (int)kit_randint(&rng, 40) - 20);
    for (i = 0; i < n; i++) {
      x[i] = (float)(kit_normal(&rng) * mag);
      if (kit_randint(&rng, 8) == 0) x[i] = (float)rne(x[i]); /* some exact integers */
      amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    }
    s = moe_quantize_row_u8(x, n, q);
    CHECK(s == (amax > 1e-7f ? amax : 1e-7f) / 127.0f, "scale");
    for (i = 0; i < n; i++) {
      double v = rne((double)(x[i] / s));
      v = v > 127 ? 127 : v < -127 ? -127 : v;
      CHECK(q[i] == (int)v + 128, "row %d elt %d: %d want %d", t, i, q[i], (int)v + 128);
    }
  }
}

/* ---- weight quantizers ------------------------------------------------------------------------ */
/* E x rows x cols weights, row scales spread over 6 decades; some rows all >= 0, some all <= 0 */
static float *make_weights(int64_t E, int64_t rows, int64_t cols, uint64_t seed) {
  float *w = (float *)test_malloc((size_t)(E * rows * cols) * sizeof(float));
  kit_rng rng;
  int64_t r, c;
  rng.s = seed;
  for (r = 0; r < E * rows; r++) {
    double mag = pow(10.0, -3.0 + 6.0 * kit_uniform(&rng));
    for (c = 0; c < cols; c++) {
      double v = kit_normal(&rng) * mag;
      if (r % 5 == 1) v = fabs(v);
      if (r % 5 == 2) v = -fabs(v);
      w[r * cols + c] = (float)v;
    }
  }
  return w;
}

static void test_int8_weights(void) {
  const int64_t E = 2, R = 37, C = 100;
  float *w = make_weights(E, R, C, 101), *s = (float *)test_malloc((size_t)(E * R) * sizeof(float));
  int8_t *q = (int8_t *)test_malloc((size_t)(E * R * C));
  int64_t r, c;
  for (c = 0; c < C; c++) w[3 * C + c] = 0.0f; /* an all-zero row */
  test_poison(q, (size_t)(E * R * C));
  test_poison(s, (size_t)(E * R) * sizeof(float));
  moe_quantize_weight_int8(w, E, R, C, q, s);
  for (r = 0; r < E * R; r++) {
    float amax = 0, sr;
    for (c = 0; c < C; c++) amax = fabsf(w[r * C + c]) > amax ? fabsf(w[r * C + c]) : amax;
    sr = (amax > 1e-10f ? amax : 1e-10f) / 127.0f;
    CHECK(s[r] == sr, "row %d scale %g want %g", (int)r, s[r], sr);
    for (c = 0; c < C; c++) {
      double v = rne((double)(w[r * C + c] / sr)), err;
      v = v > 127 ? 127 : v < -127 ? -127 : v;
      CHECK(q[r * C + c] == (int)v, "row %d col %d: %d want %d", (int)r, (int)c, q[r * C + c], (int)v);
      err = fabs((double)w[r * C + c] - (double)q[r * C + c] * s[r]);
      CHECK(err <= 0.5 * s[r] * (1 + 1e-6), "row %d col %d err %g scale %g", (int)r, (int)c, err, s[r]);
    }
  }
  for (c = 0; c < C; c++) CHECK(q[3 * C + c] == 0, "zero row");
  CHECK(s[3] == 1e-10f / 127.0f, "zero row scale");
  free(w); free(s); free(q);
}

static void test_fp8_case(int64_t E, int64_t R, int64_t C, int br, int bc, uint64_t seed) {
  int64_t nrb = (R + br - 1) / br, ncb = (C + bc - 1) / bc, e, r, c;
  float *w = make_weights(E, R, C, seed), *s = (float *)test_malloc((size_t)(E * nrb * ncb) * sizeof(float));
  uint8_t *q = (uint8_t *)test_malloc((size_t)(E * R * C));
  /* expert E-1: its first block all zero */
  for (r = 0; r < br && r < R; r++)
    for (c = 0; c < bc && c < C; c++) w[((E - 1) * R + r) * C + c] = 0.0f;
  test_poison(q, (size_t)(E * R * C));
  test_poison(s, (size_t)(E * nrb * ncb) * sizeof(float));
  moe_quantize_weight_fp8(w, E, R, C, br, bc, q, s);
  for (e = 0; e < E; e++)
    for (r = 0; r < R; r++)
      for (c = 0; c < C; c++) {
        int64_t rb = r / br, cb = c / bc, rr, cc;
        float amax = 0, sb, x = w[(e * R + r) * C + c];
        uint8_t code = q[(e * R + r) * C + c];
        double deq;
        for (rr = rb * br; rr < (rb + 1) * br && rr < R; rr++)
          for (cc = cb * bc; cc < (cb + 1) * bc && cc < C; cc++)
            amax = fabsf(w[(e * R + rr) * C + cc]) > amax ? fabsf(w[(e * R + rr) * C + cc]) : amax;
        sb = amax > 0 ? amax / 448.0f : 1.0f;
        CHECK(s[(e * nrb + rb) * ncb + cb] == sb, "fp8 %dx%d scale e%d b%d,%d", br, bc, (int)e, (int)rb, (int)cb);
        CHECK(code == ref_enc_e4m3(x / sb), "fp8 %dx%d code e%d %d,%d: %02x want %02x", br, bc, (int)e, (int)r,
              (int)c, code, ref_enc_e4m3(x / sb));
        deq = ref_e4m3(code) * sb;
        if (fabs(x / sb) >= ldexp(1, -6))
          CHECK(fabs(deq - x) <= ldexp(fabs(x), -4) * (1 + 1e-6), "fp8 rel err %g at %g", fabs(deq - x), x);
        else
          CHECK(fabs(deq - x) <= ldexp(sb, -10) * (1 + 1e-6), "fp8 abs err %g at %g", fabs(deq - x), x);
        if (e == E - 1 && rb == 0 && cb == 0) CHECK(code == 0 && sb == 1.0f, "fp8 zero block");
      }
  free(w); free(s); free(q);
}

static void test_int4_case(int64_t E, int64_t R, int64_t C, int group, uint64_t seed) {
  int64_t ng = (C + group - 1) / group, stride = (C + 1) / 2, r, c;
  float *w = make_weights(E, R, C, seed), *s = (float *)test_malloc((size_t)(E * R * ng) * sizeof(float));
  uint8_t *q = (uint8_t *)test_malloc((size_t)(E * R * stride)), *z = (uint8_t *)test_malloc((size_t)(E * R * ng));
  for (c = 0; c < group && c < C; c++) w[3 * C + c] = 0.0f; /* an all-zero group */
  test_poison(q, (size_t)(E * R * stride));
  test_poison(s, (size_t)(E * R * ng) * sizeof(float));
  test_poison(z, (size_t)(E * R * ng));
  moe_quantize_weight_int4(w, E, R, C, group, q, s, z);
  for (r = 0; r < E * R; r++) {
    if (C & 1) CHECK((q[r * stride + stride - 1] >> 4) == 0, "int4 pad nibble row %d", (int)r);
    for (c = 0; c < C; c++) {
      int64_t g = c / group, cc;
      float lo = 0, hi = 0, sg, x = w[r * C + c];
      double zz, qq;
      int code = (q[r * stride + c / 2] >> ((c & 1) * 4)) & 15;
      for (cc = g * group; cc < (g + 1) * group && cc < C; cc++) {
        lo = w[r * C + cc] < lo ? w[r * C + cc] : lo;
        hi = w[r * C + cc] > hi ? w[r * C + cc] : hi;
      }
      sg = hi == lo ? 1.0f : (hi - lo) / 15.0f;
      zz = rne((double)(-lo / sg));
      zz = zz < 0 ? 0 : zz > 15 ? 15 : zz;
      qq = rne((double)(x / sg)) + zz;
      qq = qq < 0 ? 0 : qq > 15 ? 15 : qq;
      CHECK(s[r * ng + g] == sg, "int4 g%d scale row %d group %d", group, (int)r, (int)g);
      CHECK(z[r * ng + g] == (int)zz, "int4 g%d zero row %d group %d: %d want %g", group, (int)r, (int)g,
            z[r * ng + g], zz);
      CHECK(code == (int)qq, "int4 g%d code row %d col %d: %d want %g", group, (int)r, (int)c, code, qq);
      CHECK(fabs((code - zz) * sg - x) <= 0.5 * sg * (1 + 1e-5), "int4 err %g scale %g",
            fabs((code - zz) * sg - x), sg);
      if (r == 3 && g == 0) CHECK(code == 0 && zz == 0 && sg == 1.0f, "int4 zero group");
    }
  }
  free(w); free(s); free(q); free(z);
}

static void test_mxfp4_case(int64_t E, int64_t R, int64_t C, uint64_t seed) {
  int64_t nb = (C + 31) / 32, stride = (C + 1) / 2, r, c;
  float *w = make_weights(E, R, C, seed);
  uint8_t *q = (uint8_t *)test_malloc((size_t)(E * R * stride)), *s = (uint8_t *)test_malloc((size_t)(E * R * nb));
  for (c = 0; c < 32 && c < C; c++) w[2 * C + c] = 0.0f; /* an all-zero block */
  w[7 * C + 1] = 1e-40f; w[7 * C + 0] = -3e-41f; /* a subnormal block... */
  for (c = 2; c < 32 && c < C; c++) w[7 * C + c] = 0.0f;
  test_poison(q, (size_t)(E * R * stride));
  test_poison(s, (size_t)(E * R * nb));
  moe_quantize_weight_mxfp4(w, E, R, C, q, s);
  for (r = 0; r < E * R; r++) {
    if (C & 1) CHECK((q[r * stride + stride - 1] >> 4) == 0, "mxfp4 pad nibble row %d", (int)r);
    for (c = 0; c < C; c++) {
      int64_t b = c / 32, cc;
      double amax = 0, v, scale, deq, half;
      int ex = 0, se = 127;
      int code = (q[r * stride + c / 2] >> ((c & 1) * 4)) & 15;
      for (cc = b * 32; cc < (b + 1) * 32 && cc < C; cc++) amax = fabs((double)w[r * C + cc]) > amax ? fabs((double)w[r * C + cc]) : amax;
      if (amax > 0) {
        (void)frexp(amax, &ex);
        se = ex - 1 - 2 + 127;
        if (se >= 0) /* unclamped: the block's largest magnitude lands in [4, 8) on the e2m1 grid */
          CHECK(amax / ldexp(1.0, se - 127) >= 4 && amax / ldexp(1.0, se - 127) < 8, "mxfp4 amax/scale");
        se = se < 0 ? 0 : se > 254 ? 254 : se;
      }
      CHECK(s[r * nb + b] == se, "mxfp4 scale row %d block %d: %d want %d", (int)r, (int)b, s[r * nb + b], se);
      scale = ldexp(1.0, se - 127);
      v = (double)w[r * C + c] / scale; /* exact */
      CHECK(code == ref_enc_e2m1((float)v), "mxfp4 code row %d col %d: %x want %x (v %g)", (int)r, (int)c, code,
            ref_enc_e2m1((float)v), v);
      deq = ref_e2m1((uint8_t)code) * scale;
      half = fabs(v) < 2 ? 0.25 : fabs(v) < 4 ? 0.5 : 1.0;
      if (fabs(v) <= 6)
        CHECK(fabs(deq - w[r * C + c]) <= half * scale, "mxfp4 err %g at v %g", fabs(deq - w[r * C + c]), v);
      else
        CHECK(deq == (v > 0 ? 6 : -6) * scale, "mxfp4 saturates at v %g", v);
      if (r == 2 && b == 0) CHECK(code == 0 && se == 127, "mxfp4 zero block");
    }
  }
  CHECK(s[7 * nb] == 0, "subnormal block: e8m0 0, got %d", s[7 * nb]);
  free(w); free(s); free(q);
}

static void test_weights_special(void) {
  float w[6] = {0, 0, 0, 0, 0, 0}, s[4];
  int8_t q8[6];
  uint8_t q[6], z[2], e8[2];
  moe_quantize_weight_int8(w, 1, 2, 3, q8, s);
  CHECK(q8[0] == 0 && q8[5] == 0 && s[1] == 1e-10f / 127.0f, "int8 zeros");
  moe_quantize_weight_fp8(w, 1, 2, 3, 128, 128, q, s);
  CHECK(s[0] == 1.0f && q[0] == 0 && q[5] == 0, "fp8 zeros");
  moe_quantize_weight_int4(w, 1, 2, 3, 32, q, s, z);
  CHECK(s[0] == 1.0f && s[1] == 1.0f && z[0] == 0 && q[0] == 0 && q[1] == 0 && q[2] == 0 && q[3] == 0, "int4 zeros");
  moe_quantize_weight_mxfp4(w, 1, 2, 3, q, e8);
  CHECK(e8[0] == 127 && e8[1] == 127 && q[0] == 0 && q[1] == 0 && q[2] == 0 && q[3] == 0, "mxfp4 zeros");
  /* NaN poisons the scale of its row/block/group; codes stay in range; no UB */
  w[1] = NAN; w[4] = 2.0f;
  moe_quantize_weight_int8(w, 1, 2, 3, q8, s);
  CHECK(isnan(s[0]) && !isnan(s[1]) && q8[4] == 127, "int8 NaN");
  moe_quantize_weight_fp8(w, 1, 2, 3, 1, 3, q, s);
  CHECK(isnan(s[0]) && s[1] == 2.0f / 448.0f && q[4] == 0x7E, "fp8 NaN");
  moe_quantize_weight_int4(w, 1, 2, 3, 32, q, s, z);
  CHECK(isnan(s[0]) && z[0] <= 15 && s[1] == 2.0f / 15.0f && z[1] == 0 && (q[2] & 15) == 0 && (q[2] >> 4) == 15 && q[3] == 0,
        "int4 NaN");
  moe_quantize_weight_mxfp4(w, 1, 2, 3, q, e8);
  CHECK(e8[0] == 255 && e8[1] == 126, "mxfp4 NaN: %d %d", e8[0], e8[1]);
  w[1] = INFINITY;
  moe_quantize_weight_mxfp4(w, 1, 2, 3, q, e8);
  CHECK(e8[0] == 254, "mxfp4 Inf");
}

/* ---- gate/up deinterleave --------------------------------------------------------------------- */
static void test_deinterleave(void) {
  enum { E = 2, N = 3, RB = 5 };
  unsigned char src[E * 2 * N * RB], dst[E * 2 * N * RB];
  int e, r, b;
  for (e = 0; e < E; e++)
    for (r = 0; r < 2 * N; r++)
      for (b = 0; b < RB; b++) src[(e * 2 * N + r) * RB + b] = (unsigned char)(e * 100 + r * 10 + b);
  test_poison(dst, sizeof dst);
  CHECK(moe_deinterleave_gate_up(src, dst, E, N, RB) == MOE_OK, "ok");
  for (e = 0; e < E; e++)
    for (r = 0; r < 2 * N; r++) {
      int from = r < N ? 2 * r : 2 * (r - N) + 1; /* gate i <- 2i, up i <- 2i+1 */
      for (b = 0; b < RB; b++)
        CHECK(dst[(e * 2 * N + r) * RB + b] == e * 100 + from * 10 + b, "e%d row %d byte %d", e, r, b);
    }
  test_poison(dst, sizeof dst);
  CHECK(moe_deinterleave_gate_up(NULL, dst, E, N, RB) == MOE_ERR_NULL, "null src");
  CHECK(moe_deinterleave_gate_up(src, NULL, E, N, RB) == MOE_ERR_NULL, "null dst");
  CHECK(moe_deinterleave_gate_up(src, dst, 0, N, RB) == MOE_ERR_SHAPE, "E 0");
  CHECK(moe_deinterleave_gate_up(src, dst, -1, N, RB) == MOE_ERR_SHAPE, "E -1");
  CHECK(moe_deinterleave_gate_up(src, dst, E, 0, RB) == MOE_ERR_SHAPE, "N 0");
  CHECK(moe_deinterleave_gate_up(src, dst, E, N, 0) == MOE_ERR_SHAPE, "row_bytes 0");
  CHECK(moe_deinterleave_gate_up(src, src, E, N, RB) == MOE_ERR_ARG, "in place");
  CHECK(moe_deinterleave_gate_up(src, src + RB, E, N, RB) == MOE_ERR_ARG, "overlap");
  CHECK(moe_deinterleave_gate_up(src, dst, INT64_MAX / 2, INT64_MAX / 4, 16) == MOE_ERR_OVERFLOW, "overflow");
  CHECK(moe_deinterleave_gate_up(src, dst, 3, 1, (size_t)-1 / 4) == MOE_ERR_OVERFLOW, "overflow 2");
  CHECK(moe_deinterleave_gate_up(src, dst, 1, 1, (size_t)-1 / 2 + 1) == MOE_ERR_OVERFLOW, "overflow 3");
  for (b = 0; b < (int)sizeof dst; b++) CHECK(dst[b] == 0xFF, "untouched on error");
}

/* moe_sum_groups_u8: sums with a tail; bad arguments get a status and leave sums untouched. */
static void test_sum_groups(void) {
  uint8_t q[70];
  int32_t sums[4], want[3] = {0, 0, 0};
  for (int k = 0; k < 70; k++) q[k] = (uint8_t)(k * 37 % 256), want[k / 32] += k * 37 % 256 - 128;
  test_poison(sums, sizeof sums);
  CHECK(moe_sum_groups_u8(q, 70, 32, sums) == MOE_OK, "ok");
  CHECK(sums[0] == want[0] && sums[1] == want[1] && sums[2] == want[2], "sums %d %d %d", sums[0], sums[1], sums[2]);
  CHECK(sums[3] == (int32_t)0xFFFFFFFF, "nothing past the last group");
  test_poison(sums, sizeof sums);
  CHECK(moe_sum_groups_u8(NULL, 70, 32, sums) == MOE_ERR_NULL, "null q");
  CHECK(moe_sum_groups_u8(q, 70, 32, NULL) == MOE_ERR_NULL, "null sums");
  CHECK(moe_sum_groups_u8(q, 70, 0, sums) == MOE_ERR_ARG, "group 0");
  CHECK(moe_sum_groups_u8(q, -1, 32, sums) == MOE_ERR_ARG, "n < 0");
  CHECK(moe_sum_groups_u8(q, ((int64_t)1 << 24) + 1, 32, sums) == MOE_ERR_ARG, "n past 2^24");
  CHECK(moe_sum_groups_u8(NULL, 0, 32, NULL) == MOE_OK, "empty row");
  for (int j = 0; j < 4; j++) CHECK(sums[j] == (int32_t)0xFFFFFFFF, "untouched on error");
}

int main(void) {
  build_grids();
  test_names();
  test_e4m3();
  test_bf16();
  test_f16();
  test_e2m1_e8m0();
  test_convert();
  test_row_u8();
  test_int8_weights();
  test_fp8_case(2, 37, 100, 64, 128, 201);
  test_fp8_case(2, 37, 100, 5, 7, 202);
  test_fp8_case(1, 150, 260, 64, 128, 203);
  test_fp8_case(1, 9, 11, 1, 1, 204);
  test_int4_case(2, 37, 100, 32, 301);
  test_int4_case(2, 37, 99, 64, 302);
  test_int4_case(1, 5, 100, 128, 303);
  test_mxfp4_case(2, 37, 70, 401);
  test_mxfp4_case(1, 9, 69, 402);
  test_weights_special();
  test_deinterleave();
  test_sum_groups();
  return test_finish("test_quant");
}

/* Importer tests (moe_import.h). Each checkpoint layout is written here the way its tool writes it,
 * by a packer that follows the tool's own code, from known random plain values (with tails where
 * the format allows them):
 *   DeepSeek-V3 fp8     deepseek-ai/DeepSeek-V3 inference/kernel.py (weight_quant's stores)
 *   AutoAWQ GEMM        casper-hansen/AutoAWQ awq/modules/linear/gemm.py (from_linear)
 *   GPTQ v1             AutoGPTQ/AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_cuda.py (pack)
 *   gpt-oss mxfp4       the released layout as huggingface/transformers integrations/mxfp4.py
 *                       (convert_moe_packed_tensors) and models/gpt_oss (GptOssExperts) read it
 * Then
 *   (a) the imported plain codes, scales, zero points and exponents equal the known values bit for
 *       bit, and the destination rows outside [row0, row0 + rows) are still poisoned;
 *   (b) every element dequantized from the plain result with the library's decoders
 *       (moe_e4m3_to_f32, moe_e2m1_to_f32, moe_e8m0_to_f32, (q - zero) * scale) equals, in double,
 *       the tool's own dequantization written here after the tool's code (weight_dequant,
 *       dequantize_gemm, QuantLinear.forward, convert_moe_packed_tensors + the gate/up split);
 *   (c) whole layers (E = 3) imported through each importer (AWQ -> int4-w4a16, GPTQ -> int4-w4a8,
 *       DeepSeek fp8, gpt-oss mxfp4 with biases and SwiGLU-OAI) run through moe_pack + moe_forward
 *       and are compared with a float64 reference built from the tool-format dequantization, under
 *       test_layer.c's tolerance for f32 output (5e-4);
 *   (d) bad input: every status of every importer, with the outputs untouched.
 * First, the plain layouts the importers target are checked against the library's own quantizers:
 * a matrix quantized by moe_quantize_weight_{fp8,int4,mxfp4} and decoded by this file's plain
 * decoders is within the quantization step of its f32 input.
 * Equality checks are written so that a NaN fails them; no test data is all zeros.
 */
#define MOE_IMPLEMENTATION
#include "../moe.h"
#include "../moe_import.h"
#include "test_util.h"
#include "oracle.h"

/* ---- helpers -------------------------------------------------------------------------------------- */
static uint8_t *poisoned(size_t n) {
  uint8_t *p = (uint8_t *)test_malloc(n);
  test_poison(p, n);
  return p;
}
/* a copy of n bytes at an odd address: the importers read checkpoint tensors at any alignment */
static void *odd_copy(const void *src, size_t n) {
  uint8_t *p = (uint8_t *)test_malloc(n + 1);
  memcpy(p + 1, src, n);
  return p + 1;
}
static void odd_free(void *p) { free((uint8_t *)p - 1); }
static int nib(const uint8_t *row, int64_t c) { return (c & 1) ? row[c / 2] >> 4 : row[c / 2] & 15; }
static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static const char *dname(moe_dtype t) { return t == MOE_F32 ? "f32" : t == MOE_F16 ? "f16" : "bf16"; }
/* v rounded to dtype t, stored at element i of dst; returns the stored value (by oracle.h's decoders) */
static double store_scalar(moe_dtype t, uint8_t *dst, int64_t i, double v) {
  if (t == MOE_F32) {
    float f = (float)v;
    memcpy(dst + 4 * i, &f, 4);
    return (double)f;
  } else {
    uint16_t h = t == MOE_F16 ? orc_to_f16_bits(v) : orc_to_bf16_bits(v);
    memcpy(dst + 2 * i, &h, 2);
    return t == MOE_F16 ? orc_f16(h) : orc_bf16(h);
  }
}
static size_t dsize(moe_dtype t) { return t == MOE_F32 ? 4 : 2; }
/* element i of a bf16, f16 or f32 tensor, by oracle.h's decoders */
static double load_scalar(moe_dtype t, const uint8_t *src, int64_t i) {
  float f;
  uint16_t h;
  if (t == MOE_F32) return memcpy(&f, src + 4 * i, 4), (double)f;
  memcpy(&h, src + 2 * i, 2);
  return t == MOE_F16 ? orc_f16(h) : orc_bf16(h);
}

/* ==== the plain layouts, against the library's quantizers ========================================== */
static void test_plain_layouts(void) {
  kit_rng r = kit_rng_stream(11, 0);
  const int64_t rows = 40, cols = 201; /* odd: the int4/mxfp4 row pad */
  float *w = (float *)test_malloc(sizeof(float) * (size_t)(rows * cols));
  int64_t bad = 0;
  for (int64_t i = 0; i < rows * cols; i++) w[i] = (float)kit_normal(&r);
  { /* int4, group 64: value = (q - zero) * scale per (row, col/64); |w - value| <= scale / 2 */
    int64_t g = 64, ng = cdiv(cols, g), rb = cdiv(cols, 2);
    uint8_t *q = poisoned((size_t)(rows * rb)), *z = poisoned((size_t)(rows * ng));
    float *s = (float *)(void *)poisoned(sizeof(float) * (size_t)(rows * ng));
    moe_quantize_weight_int4(w, 1, rows, cols, (int)g, q, s, z);
    for (int64_t o = 0; o < rows; o++)
      for (int64_t c = 0; c < cols; c++) {
        double sc = s[o * ng + c / g], v = (nib(q + o * rb, c) - (int)z[o * ng + c / g]) * sc;
        bad += !(fabs(v - w[o * cols + c]) <= 0.5001 * sc);
      }
    CHECK(bad == 0, "int4 plain layout: %lld elements off by more than half a step", (long long)bad);
    free(q), free(z), free(s);
  }
  { /* fp8 e4m3 with 16 x 64 blocks: scale [row/16][col/64]; relative error <= 2^-4 (+ subnormals) */
    int64_t bn = 16, bk = 64, ncb = cdiv(cols, bk);
    uint8_t *q = poisoned((size_t)(rows * cols));
    float *s = (float *)(void *)poisoned(sizeof(float) * (size_t)(cdiv(rows, bn) * ncb));
    bad = 0;
    moe_quantize_weight_fp8(w, 1, rows, cols, (int)bn, (int)bk, q, s);
    for (int64_t o = 0; o < rows; o++)
      for (int64_t c = 0; c < cols; c++) {
        double sc = s[(o / bn) * ncb + c / bk], v = (double)moe_e4m3_to_f32(q[o * cols + c]) * sc;
        bad += !(fabs(v - w[o * cols + c]) <= 0.0626 * fabs(w[o * cols + c]) + sc / 512);
      }
    CHECK(bad == 0, "fp8 plain layout: %lld elements off", (long long)bad);
    free(q), free(s);
  }
  { /* mxfp4: e2m1 codes low nibble first, e8m0 per (row, col/32); |w - value| <= 2 * 2^(e - 127) */
    int64_t nb = cdiv(cols, 32), rb = cdiv(cols, 2);
    uint8_t *q = poisoned((size_t)(rows * rb)), *e = poisoned((size_t)(rows * nb));
    bad = 0;
    moe_quantize_weight_mxfp4(w, 1, rows, cols, q, e);
    for (int64_t o = 0; o < rows; o++)
      for (int64_t c = 0; c < cols; c++) {
        double sc = moe_e8m0_to_f32(e[o * nb + c / 32]), v = moe_e2m1_to_f32((uint8_t)nib(q + o * rb, c)) * sc;
        bad += !(fabs(v - w[o * cols + c]) <= 2 * sc);
      }
    CHECK(bad == 0, "mxfp4 plain layout: %lld elements off", (long long)bad);
    free(q), free(e);
  }
  free(w);
}

/* ==== int4: AutoAWQ and GPTQ ========================================================================= */
/* Known plain values of one matrix (rows = out features, cols = in features), its checkpoint tensors
 * and the tool's dequantization. */
typedef struct int4_mat {
  int64_t rows, cols, ng;
  int32_t group;
  moe_dtype st;       /* scale dtype                                                             */
  uint8_t *q;         /* [rows][cols] codes 0..15                                                */
  uint8_t *z;         /* [rows][ng] zero points                                                  */
  double *s;          /* [rows][ng] scales, exact values of the stored dtype                     */
  uint32_t *qweight;  /* AWQ [cols][rows/8], GPTQ [cols/8][rows]                                 */
  uint32_t *qzeros;   /* [ng][rows/8]                                                            */
  uint8_t *scales;    /* [ng][rows] of dtype st                                                  */
  int32_t *g_idx;     /* GPTQ [cols]: i / group                                                  */
  double *deq;        /* [rows][cols]: the tool's dequantization, as W[out][in]                   */
} int4_mat;

/* zero points drawn from [zlo, zhi]; scales sd / sqrt(42.5) * [0.5, 1.5) (42.5: var(q - z) for
 * uniform q and z), so a row has entries of rms about sd */
static void int4_known(int4_mat *m, int64_t rows, int64_t cols, int32_t group, int gptq, moe_dtype st, int zlo,
                       int zhi, double sd, kit_rng *r) {
  memset(m, 0, sizeof *m);
  m->rows = rows, m->cols = cols, m->group = group, m->st = st;
  m->ng = gptq ? cdiv(cols, group) : cols / group;
  m->q = (uint8_t *)test_malloc((size_t)(rows * cols));
  m->z = (uint8_t *)test_malloc((size_t)(rows * m->ng));
  m->s = (double *)test_malloc(sizeof(double) * (size_t)(rows * m->ng));
  m->scales = (uint8_t *)test_malloc(dsize(st) * (size_t)(rows * m->ng));
  m->qweight = (uint32_t *)calloc((size_t)(rows * cols / 8), 4);
  m->qzeros = (uint32_t *)calloc((size_t)(m->ng * rows / 8), 4);
  m->g_idx = (int32_t *)test_malloc(4 * (size_t)cols);
  m->deq = (double *)test_malloc(sizeof(double) * (size_t)(rows * cols));
  for (int64_t i = 0; i < rows * cols; i++) m->q[i] = (uint8_t)kit_randint(r, 16);
  for (int64_t o = 0; o < rows; o++)
    for (int64_t g = 0; g < m->ng; g++) {
      m->z[o * m->ng + g] = (uint8_t)(zlo + kit_randint(r, zhi - zlo + 1));
      /* scales [ng][rows] in the checkpoint */
      m->s[o * m->ng + g] = store_scalar(st, m->scales, g * rows + o, sd / sqrt(42.5) * (0.5 + kit_uniform(r)));
    }
  for (int64_t i = 0; i < cols; i++) m->g_idx[i] = (int32_t)(i / group);
}
static void int4_free(int4_mat *m) {
  free(m->q), free(m->z), free(m->s), free(m->scales), free(m->qweight), free(m->qzeros), free(m->g_idx);
  free(m->deq);
}

/* AutoAWQ WQLinear_GEMM.from_linear: intweight = the codes as [in, out]; qweight [in, out/8] with
 * qweight[:, col] |= intweight[:, col * 8 + order_map[i]] << (4 * i), order_map = [0, 2, 4, 6, 1, 3,
 * 5, 7]; qzeros [in/group, out/8] the same from zeros [in/group, out]; scales [in/group, out]. */
static const int awq_order_map[8] = {0, 2, 4, 6, 1, 3, 5, 7};
static void awq_write(int4_mat *m) {
  const int64_t rows = m->rows, cols = m->cols, wpr = rows / 8;
  for (int64_t i = 0; i < cols; i++)
    for (int64_t col = 0; col < wpr; col++)
      for (int p = 0; p < 8; p++)
        m->qweight[i * wpr + col] |= (uint32_t)m->q[(col * 8 + awq_order_map[p]) * cols + i] << (4 * p);
  for (int64_t g = 0; g < m->ng; g++)
    for (int64_t col = 0; col < wpr; col++)
      for (int p = 0; p < 8; p++)
        m->qzeros[g * wpr + col] |= (uint32_t)m->z[(col * 8 + awq_order_map[p]) * m->ng + g] << (4 * p);
}
/* AutoAWQ packing_utils.dequantize_gemm: unpack_awq shifts each word by 0, 4, .., 28 (unpacked
 * column 8c + j = nibble j), reverse_awq_order takes column 8c + k from unpacked 8c +
 * AWQ_REVERSE_ORDER[k], both masked to 4 bits; then (iweight - izeros) * scales, zeros and scales
 * repeated group_size times along in. Result [in, out], stored here as deq[out][in]. */
static const int awq_reverse_order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
static void awq_dequant(int4_mat *m) {
  const int64_t rows = m->rows, cols = m->cols, wpr = rows / 8;
  for (int64_t i = 0; i < cols; i++)
    for (int64_t o = 0; o < rows; o++) {
      int j = awq_reverse_order[o % 8];
      int iw = (int)((m->qweight[i * wpr + o / 8] >> (4 * j)) & 15);
      int iz = (int)((m->qzeros[(i / m->group) * wpr + o / 8] >> (4 * j)) & 15);
      m->deq[o * cols + i] = (double)(iw - iz) * load_scalar(m->st, m->scales, (i / m->group) * rows + o);
    }
}

/* AutoGPTQ QuantLinear.pack (4 bits): intweight = the codes as [in, out]; qweight [in/8, out] with
 * row r |= intweight[8r + j] << (4 * j); then `zeros -= 1` and qzeros [ngroups, out/8] with column
 * c |= zeros[:, 8c + j] << (4 * j); scales [ngroups, out]; g_idx [in]. */
static void gptq_write(int4_mat *m) {
  const int64_t rows = m->rows, cols = m->cols, wpr = rows / 8;
  for (int64_t row = 0; row < cols / 8; row++)
    for (int64_t o = 0; o < rows; o++)
      for (int j = 0; j < 8; j++) m->qweight[row * rows + o] |= (uint32_t)m->q[o * cols + 8 * row + j] << (4 * j);
  for (int64_t g = 0; g < m->ng; g++)
    for (int64_t c = 0; c < wpr; c++)
      for (int j = 0; j < 8; j++) m->qzeros[g * wpr + c] |= (uint32_t)(m->z[(8 * c + j) * m->ng + g] - 1) << (4 * j);
}
/* GPTQModel's v1 export of the same: its internal v2 qzeros (real zero points, packed as above
 * without the -1), then convert_gptq_v2_to_v1_format_module: qzeros -= 0x11111111 on the whole
 * int32 word, so a zero point of 0 borrows from the next nibble. */
static void gptqmodel_write(int4_mat *m) {
  const int64_t rows = m->rows, cols = m->cols, wpr = rows / 8;
  for (int64_t row = 0; row < cols / 8; row++)
    for (int64_t o = 0; o < rows; o++)
      for (int j = 0; j < 8; j++) m->qweight[row * rows + o] |= (uint32_t)m->q[o * cols + 8 * row + j] << (4 * j);
  for (int64_t g = 0; g < m->ng; g++)
    for (int64_t c = 0; c < wpr; c++) {
      for (int j = 0; j < 8; j++) m->qzeros[g * wpr + c] |= (uint32_t)m->z[(8 * c + j) * m->ng + g] << (4 * j);
      m->qzeros[g * wpr + c] -= 0x11111111u;
    }
}
/* AutoGPTQ QuantLinear.forward (torch path): zeros = (qzeros >> 4j) & 15, then + 1; weight =
 * (qweight >> 4j) & 15 unpacked along in; weights = scales[g_idx] * (weight - zeros[g_idx]).
 * word_add: GPTQModel's loader instead (convert_gptq_v1_to_v2_format_module: qzeros +=
 * 0x11111111 on the whole word, then nibbles without + 1). */
static void gptq_dequant(int4_mat *m, int word_add) {
  const int64_t rows = m->rows, cols = m->cols, wpr = rows / 8;
  for (int64_t i = 0; i < cols; i++)
    for (int64_t o = 0; o < rows; o++) {
      int64_t g = m->g_idx[i];
      int w = (int)((m->qweight[(i / 8) * rows + o] >> (4 * (i % 8))) & 15);
      uint32_t zw = m->qzeros[g * wpr + o / 8];
      int z = word_add ? (int)(((zw + 0x11111111u) >> (4 * (o % 8))) & 15) : (int)((zw >> (4 * (o % 8))) & 15) + 1;
      m->deq[o * cols + i] = load_scalar(m->st, m->scales, g * rows + o) * (double)(w - z);
    }
}

/* (a) and (b) for an int4 import of m into a destination of dst_rows rows at row0. */
static void check_int4(const char *what, const int4_mat *m, int64_t dst_rows, int64_t row0, const uint8_t *q,
                       const float *s, const uint8_t *z) {
  const int64_t rows = m->rows, cols = m->cols, ng = m->ng, rb = cdiv(cols, 2);
  int64_t bad_q = 0, bad_s = 0, bad_z = 0, bad_v = 0, bad_out = 0, nonzero = 0;
  for (int64_t d = 0; d < dst_rows; d++) {
    int64_t o = d - row0;
    if (o < 0 || o >= rows) {
      bad_out += !test_untouched(q + d * rb, (size_t)rb) + !test_untouched(s + d * ng, 4 * (size_t)ng) +
                 !test_untouched(z + d * ng, (size_t)ng);
      continue;
    }
    for (int64_t g = 0; g < ng; g++) {
      bad_s += !((double)s[d * ng + g] == m->s[o * ng + g]);
      bad_z += z[d * ng + g] != m->z[o * ng + g];
    }
    for (int64_t c = 0; c < cols; c++) {
      int64_t g = c / m->group;
      double v = (double)(nib(q + d * rb, c) - (int)z[d * ng + g]) * (double)s[d * ng + g];
      bad_q += nib(q + d * rb, c) != m->q[o * cols + c];
      bad_v += !(v == m->deq[o * cols + c]);
      nonzero += v != 0;
    }
  }
  CHECK(!bad_q && !bad_s && !bad_z, "%s: %lld codes, %lld scales, %lld zero points differ from the known values",
        what, (long long)bad_q, (long long)bad_s, (long long)bad_z);
  CHECK(!bad_v, "%s: %lld values differ from the tool's dequantization", what, (long long)bad_v);
  CHECK(!bad_out, "%s: %lld rows outside [row0, row0 + rows) were written", what, (long long)bad_out);
  CHECK(nonzero > rows * cols / 2, "%s: only %lld nonzero values", what, (long long)nonzero);
}

/* The int4 importers' paths this CPU runs (portable, and AVX2 where it has it), and the choice of one
 * (-1: detect again). */
static int int4_paths(void) {
#ifdef MOE__IMP_AVX2
  return moe__imp_avx2_on() ? 2 : 1;
#else
  return 1;
#endif
}
static void int4_path(int simd) {
#ifdef MOE__IMP_AVX2
  moe__imp_simd = simd;
#else
  (void)simd;
#endif
}

static void test_awq(void) {
  static const struct { int64_t rows, cols; int32_t group; moe_dtype st; int64_t dst_rows, row0; } cases[] = {
      {72, 192, 64, MOE_F16, 72, 0},    /* out not a multiple of 32                   */
      {48, 128, 32, MOE_F16, 96, 48},   /* up_proj into the second half of a W13      */
      {48, 128, 32, MOE_F16, 96, 0},    /* gate_proj into the first half              */
      {40, 256, 128, MOE_BF16, 50, 7},  /* other scale dtypes, an odd row offset      */
      {8, 96, 96, MOE_F32, 8, 0},       /* group_size -1 (one group of 96)            */
      {136, 256, 128, MOE_F16, 136, 0}, /* 17 words per row: two AVX2 blocks, a tail word */
      {64, 96, 32, MOE_BF16, 128, 64},  /* 8 words, in features 64..95 a short block  */
  };
  const int paths = int4_paths(); /* each case on the portable path, then the AVX2 one */
  for (size_t cp = 0; cp < paths * (sizeof cases / sizeof cases[0]); cp++) {
    const size_t ci = cp % (sizeof cases / sizeof cases[0]);
    const int simd = (int)(cp / (sizeof cases / sizeof cases[0]));
    kit_rng r = kit_rng_stream(21, ci);
    int4_mat m;
    char what[128];
    int64_t rb = cdiv(cases[ci].cols, 2), ng, dr = cases[ci].dst_rows;
    int4_known(&m, cases[ci].rows, cases[ci].cols, cases[ci].group, 0, cases[ci].st, 0, 15, 0.1, &r);
    awq_write(&m);
    awq_dequant(&m);
    ng = m.ng;
    {
      size_t nw = (size_t)(m.rows * m.cols / 8), nz = (size_t)(ng * m.rows / 8), ns = dsize(m.st) * (size_t)(ng * m.rows);
      void *qw = odd_copy(m.qweight, 4 * nw), *qz = odd_copy(m.qzeros, 4 * nz), *sc = odd_copy(m.scales, ns);
      uint8_t *q = poisoned((size_t)(dr * rb)), *z = poisoned((size_t)(dr * ng));
      float *s = (float *)(void *)poisoned(4 * (size_t)(dr * ng));
      moe_status st;
      int4_path(simd);
      st = moe_import_awq(qw, qz, sc, m.st, m.rows, m.cols, m.group, q, s, z, dr, cases[ci].row0);
      snprintf(what, sizeof what, "awq %lldx%lld group %d %s dst %lld row0 %lld%s", (long long)m.rows,
               (long long)m.cols, m.group, dname(m.st), (long long)dr, (long long)cases[ci].row0, simd ? " (AVX2)" : "");
      CHECK(st == MOE_OK, "%s: %s", what, moe_status_str(st));
      if (st == MOE_OK) check_int4(what, &m, dr, cases[ci].row0, q, s, z);
      printf("%s: %s\n", what, st == MOE_OK ? "imported" : moe_status_str(st));
      odd_free(qw), odd_free(qz), odd_free(sc), free(q), free(z), free(s);
    }
    int4_free(&m);
  }
  int4_path(-1);
}

static void test_gptq(void) {
  static const struct {
    int64_t rows, cols;
    int32_t group;
    moe_dtype st;
    int with_g_idx, sym, gptqmodel;
    int64_t dst_rows, row0;
  } cases[] = {
      {56, 200, 64, MOE_F16, 1, 0, 0, 56, 0},   /* last group partial (200 = 3 * 64 + 8), trivial g_idx */
      {48, 128, 32, MOE_F16, 0, 0, 0, 96, 48},  /* no g_idx, up_proj into a W13                       */
      {64, 256, 128, MOE_F16, 1, 1, 0, 64, 0},  /* symmetric: every zero point 8 (stored 7)            */
      {24, 72, 32, MOE_BF16, 1, 0, 0, 30, 5},   /* bf16 scales, odd row offset, partial group          */
      {16, 40, 64, MOE_F32, 0, 0, 0, 16, 0},    /* one partial group larger than cols                  */
      {64, 512, 32, MOE_F16, 1, 0, 1, 64, 0},   /* GPTQModel export: zero points 0..15, 0 borrowing    */
  };
  const int paths = int4_paths(); /* each case on the portable path, then the AVX2 one */
  for (size_t cp = 0; cp < paths * (sizeof cases / sizeof cases[0]); cp++) {
    const size_t ci = cp % (sizeof cases / sizeof cases[0]);
    const int simd = (int)(cp / (sizeof cases / sizeof cases[0]));
    kit_rng r = kit_rng_stream(31, ci);
    int4_mat m;
    char what[160];
    int64_t rb = cdiv(cases[ci].cols, 2), ng, dr = cases[ci].dst_rows;
    /* AutoGPTQ's pack cannot write a zero point of 0 (top comment of moe_import.h); GPTQModel's can */
    int zlo = cases[ci].sym ? 8 : cases[ci].gptqmodel ? 0 : 1, zhi = cases[ci].sym ? 8 : 15;
    int4_known(&m, cases[ci].rows, cases[ci].cols, cases[ci].group, 1, cases[ci].st, zlo, zhi, 0.1, &r);
    if (cases[ci].gptqmodel) gptqmodel_write(&m);
    else gptq_write(&m);
    gptq_dequant(&m, cases[ci].gptqmodel);
    ng = m.ng;
    if (cases[ci].gptqmodel) { /* some zero points of 0, and some of them borrowed from a nibble above */
      int64_t zeros = 0, borrowed = 0;
      for (int64_t i = 0; i < ng * m.rows / 8; i++)
        for (int j = 0; j < 7; j++) {
          int64_t o = 8 * (i % (m.rows / 8)) + j, g = i / (m.rows / 8);
          zeros += m.z[o * ng + g] == 0;
          borrowed += m.z[o * ng + g] == 0 && ((m.qzeros[i] >> (4 * j)) & 15) == 15;
        }
      CHECK(zeros > 0 && borrowed > 0, "gptqmodel case: %lld zero points of 0, %lld borrowing", (long long)zeros,
            (long long)borrowed);
    }
    if (cases[ci].sym)
      for (int64_t i = 0; i < ng * m.rows / 8; i++) CHECK(m.qzeros[i] == 0x77777777u, "sym qzeros %08x", m.qzeros[i]);
    {
      size_t nw = (size_t)(m.rows * m.cols / 8), nz = (size_t)(ng * m.rows / 8), ns = dsize(m.st) * (size_t)(ng * m.rows);
      void *qw = odd_copy(m.qweight, 4 * nw), *qz = odd_copy(m.qzeros, 4 * nz), *sc = odd_copy(m.scales, ns);
      void *gi = odd_copy(m.g_idx, 4 * (size_t)m.cols);
      uint8_t *q = poisoned((size_t)(dr * rb)), *z = poisoned((size_t)(dr * ng));
      float *s = (float *)(void *)poisoned(4 * (size_t)(dr * ng));
      moe_status st;
      int4_path(simd);
      st = moe_import_gptq(qw, qz, sc, m.st, cases[ci].with_g_idx ? gi : NULL, 4, m.rows, m.cols, m.group, q, s, z, dr,
                           cases[ci].row0);
      snprintf(what, sizeof what, "gptq %lldx%lld group %d %s%s%s%s dst %lld row0 %lld%s", (long long)m.rows,
               (long long)m.cols, m.group, dname(m.st), cases[ci].with_g_idx ? " g_idx" : "",
               cases[ci].sym ? " sym" : "", cases[ci].gptqmodel ? " gptqmodel-export" : "", (long long)dr,
               (long long)cases[ci].row0, simd ? " (AVX2)" : "");
      CHECK(st == MOE_OK, "%s: %s", what, moe_status_str(st));
      if (st == MOE_OK) check_int4(what, &m, dr, cases[ci].row0, q, s, z);
      printf("%s: %s\n", what, st == MOE_OK ? "imported" : moe_status_str(st));
      odd_free(qw), odd_free(qz), odd_free(sc), odd_free(gi), free(q), free(z), free(s);
    }
    int4_free(&m);
  }
  int4_path(-1);
}

/* ==== fp8: DeepSeek-V3 ================================================================================ */
typedef struct fp8_mat {
  int64_t rows, cols, nrb, ncb;
  int32_t bn, bk;
  uint8_t *weight;  /* [rows][cols] e4m3, as written (and the known codes: the layout is the same)  */
  float *wsi;       /* weight_scale_inv [nrb][ncb]                                                 */
  double *deq;      /* [rows][cols]                                                                */
} fp8_mat;
/* DeepSeek-V3 inference/kernel.py weight_quant: y stored at row * N + col of [M, N], the scale of
 * block (pid_m, pid_n) at pid_m * cdiv(N, B) + pid_n; weight_dequant reads them back the same way:
 * y = x * s. Random non-NaN codes and scales sd / rms(e4m3) * [0.5, 1.5) per block. */
static void fp8_known(fp8_mat *m, int64_t rows, int64_t cols, int32_t bn, int32_t bk, double sd, kit_rng *r) {
  const double *e4 = orc_tab_e4m3();
  m->rows = rows, m->cols = cols, m->bn = bn, m->bk = bk, m->nrb = cdiv(rows, bn), m->ncb = cdiv(cols, bk);
  m->weight = (uint8_t *)test_malloc((size_t)(rows * cols));
  m->wsi = (float *)test_malloc(sizeof(float) * (size_t)(m->nrb * m->ncb));
  m->deq = (double *)test_malloc(sizeof(double) * (size_t)(rows * cols));
  kit_fill_bytes(r, m->weight, (size_t)(rows * cols));
  for (int64_t i = 0; i < rows * cols; i++)
    if ((m->weight[i] & 0x7F) == 0x7F) m->weight[i] ^= 1; /* no NaN code */
  for (int64_t i = 0; i < m->nrb * m->ncb; i++) m->wsi[i] = (float)(sd / kit_rms_e4m3() * (0.5 + kit_uniform(r)));
  for (int64_t o = 0; o < rows; o++)
    for (int64_t i = 0; i < cols; i++)
      m->deq[o * cols + i] = e4[m->weight[o * cols + i]] * (double)m->wsi[(o / bn) * m->ncb + i / bk];
}
static void fp8_free(fp8_mat *m) { free(m->weight), free(m->wsi), free(m->deq); }

static void check_fp8(const char *what, const fp8_mat *m, int64_t dst_rows, int64_t row0, const uint8_t *q,
                      const float *s) {
  const int64_t cols = m->cols, ncb = m->ncb;
  int64_t bad_q = 0, bad_s = 0, bad_v = 0, bad_out = 0, nonzero = 0;
  for (int64_t d = 0; d < dst_rows; d++) {
    int64_t o = d - row0;
    if (o < 0 || o >= m->rows) {
      bad_out += !test_untouched(q + d * cols, (size_t)cols);
      if (d % m->bn == 0 && (d < row0 || d >= row0 + m->nrb * m->bn))
        bad_out += !test_untouched(s + (d / m->bn) * ncb, 4 * (size_t)ncb);
      continue;
    }
    if (o % m->bn == 0)
      for (int64_t b = 0; b < ncb; b++) bad_s += !(s[(d / m->bn) * ncb + b] == m->wsi[(o / m->bn) * ncb + b]);
    for (int64_t c = 0; c < cols; c++) {
      double v = (double)moe_e4m3_to_f32(q[d * cols + c]) * (double)s[(d / m->bn) * ncb + c / m->bk];
      bad_q += q[d * cols + c] != m->weight[o * cols + c];
      bad_v += !(v == m->deq[o * cols + c]);
      nonzero += v != 0;
    }
  }
  CHECK(!bad_q && !bad_s, "%s: %lld codes, %lld scales differ", what, (long long)bad_q, (long long)bad_s);
  CHECK(!bad_v, "%s: %lld values differ from weight_dequant", what, (long long)bad_v);
  CHECK(!bad_out, "%s: %lld rows or block rows outside the matrix were written", what, (long long)bad_out);
  CHECK(nonzero > m->rows * cols / 2, "%s: only %lld nonzero values", what, (long long)nonzero);
}

static void test_fp8(void) {
  static const struct { int64_t rows, cols; int32_t bn, bk; int64_t dst_rows, row0; } cases[] = {
      {200, 300, 128, 128, 200, 0},  /* DeepSeek blocks, both dimensions with a partial block */
      {256, 96, 128, 128, 512, 256}, /* up_proj (N = 256) into a W13                          */
      {256, 96, 128, 128, 512, 0},   /* gate_proj                                              */
      {100, 64, 128, 128, 228, 128}, /* the last matrix may end in a partial block            */
      {40, 72, 16, 32, 56, 16},      /* other blocks                                           */
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    kit_rng r = kit_rng_stream(41, ci);
    fp8_mat m;
    char what[128];
    int64_t dr = cases[ci].dst_rows, dnrb = cdiv(dr, cases[ci].bn);
    fp8_known(&m, cases[ci].rows, cases[ci].cols, cases[ci].bn, cases[ci].bk, 0.1, &r);
    {
      void *w = odd_copy(m.weight, (size_t)(m.rows * m.cols)), *wsi = odd_copy(m.wsi, 4 * (size_t)(m.nrb * m.ncb));
      uint8_t *q = poisoned((size_t)(dr * m.cols));
      float *s = (float *)(void *)poisoned(4 * (size_t)(dnrb * m.ncb));
      moe_status st = moe_import_fp8_block(w, wsi, m.rows, m.cols, m.bn, m.bk, q, s, dr, cases[ci].row0);
      snprintf(what, sizeof what, "fp8 %lldx%lld blocks %dx%d dst %lld row0 %lld", (long long)m.rows,
               (long long)m.cols, m.bn, m.bk, (long long)dr, (long long)cases[ci].row0);
      CHECK(st == MOE_OK, "%s: %s", what, moe_status_str(st));
      if (st == MOE_OK) check_fp8(what, &m, dr, cases[ci].row0, q, s);
      printf("%s: %s\n", what, st == MOE_OK ? "imported" : moe_status_str(st));
      odd_free(w), odd_free(wsi), free(q), free(s);
    }
    fp8_free(&m);
  }
  { /* re-blocked scales: gate and up of N = 192 with 128-row blocks into a W13 of 64-row blocks */
    const int64_t N = 192, cols = 160, dnrb = cdiv(2 * N, 64), ncb = cdiv(cols, 128);
    uint8_t *q = poisoned((size_t)(2 * N * cols));
    float *s = (float *)(void *)poisoned(4 * (size_t)(dnrb * ncb));
    int64_t bad_v = 0;
    fp8_mat g, u;
    kit_rng r = kit_rng_stream(43, 0);
    fp8_known(&g, N, cols, 128, 128, 0.1, &r), fp8_known(&u, N, cols, 128, 128, 0.1, &r);
    CHECK(moe_import_fp8_block(g.weight, g.wsi, N, cols, 128, 128, q, s, 2 * N, 0) == MOE_ERR_UNSUPPORTED,
          "gate of N 192 into 128-row blocks: a block shared with up");
    CHECK(moe_import_fp8_block_rows(g.weight, g.wsi, N, cols, 128, 128, 64, q, s, 2 * N, 0) == MOE_OK &&
              moe_import_fp8_block_rows(u.weight, u.wsi, N, cols, 128, 128, 64, q, s, 2 * N, N) == MOE_OK,
          "re-blocked gate and up");
    for (int64_t d = 0; d < 2 * N; d++) /* every value as weight_dequant gives it, read with 64-row blocks */
      for (int64_t c = 0; c < cols; c++) {
        const fp8_mat *m = d < N ? &g : &u;
        double v = (double)moe_e4m3_to_f32(q[d * cols + c]) * (double)s[(d / 64) * ncb + c / 128];
        bad_v += !(v == m->deq[(d % N) * cols + c]);
      }
    CHECK(!bad_v, "re-blocked: %lld values differ from weight_dequant", (long long)bad_v);
    CHECK(moe_import_fp8_block_rows(g.weight, g.wsi, N, cols, 128, 128, 48, q, s, 2 * N, 0) == MOE_ERR_DESCRIPTOR,
          "a destination block that does not divide the checkpoint's");
    CHECK(moe_import_fp8_block_rows(u.weight, u.wsi, N, cols, 128, 128, 64, q, s, 2 * N + 32, N + 32) == MOE_ERR_UNSUPPORTED,
          "row0 off the destination blocks");
    printf("fp8 N 192 gate/up re-blocked to 64-row blocks: %s\n", bad_v ? "FAIL" : "imported");
    fp8_free(&g), fp8_free(&u), free(q), free(s);
  }
}

/* ==== mxfp4: gpt-oss ================================================================================== */
/* transformers integrations/mxfp4.py FP4_VALUES: the e2m1 value of each 4-bit index */
static const double fp4_values[16] = {+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0,
                                      -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};
typedef struct mx_mat {
  int64_t rows, cols, nb;
  int interleaved;
  uint8_t *q;        /* known plain codes [rows][cols], gate rows first when interleaved              */
  uint8_t *e;        /* known plain e8m0 [rows][nb]                                                   */
  uint8_t *blocks;   /* checkpoint [rows][nb][16], rows interleaved (gate 2i, up 2i + 1) if so        */
  uint8_t *scales;   /* checkpoint [rows][nb]                                                         */
  double *deq;       /* [rows][cols] in plain row order: the tool's gate/up split of its dequantization */
} mx_mat;
static int64_t mx_plain_row(const mx_mat *m, int64_t t) {
  return m->interleaved ? (t % 2 ? m->rows / 2 : 0) + t / 2 : t;
}
/* Codes and exponents drawn so that a row has entries of rms about sd; written in the released
 * layout (two codes per byte, the even column in the low nibble, as convert_moe_packed_tensors reads
 * them), then dequantized as transformers does: lut[idx_lo] to even and lut[idx_hi] to odd columns,
 * ldexp by scales - 127, the result transposed to gate_up_proj [in, 2N] and split into gate =
 * [..., ::2], up = [..., 1::2] (GptOssExperts); down_proj [N, K] is the transpose of [K][N]. */
static void mx_known(mx_mat *m, int64_t rows, int64_t cols, int interleaved, double sd, kit_rng *r) {
  int base = 127 + (int)floor(log2(sd / kit_rms_e2m1()) + 0.5);
  m->rows = rows, m->cols = cols, m->nb = cols / 32, m->interleaved = interleaved;
  m->q = (uint8_t *)test_malloc((size_t)(rows * cols));
  m->e = (uint8_t *)test_malloc((size_t)(rows * m->nb));
  m->blocks = (uint8_t *)test_malloc((size_t)(rows * cols / 2));
  m->scales = (uint8_t *)test_malloc((size_t)(rows * m->nb));
  m->deq = (double *)test_malloc(sizeof(double) * (size_t)(rows * cols));
  for (int64_t i = 0; i < rows * cols; i++) m->q[i] = (uint8_t)kit_randint(r, 16);
  for (int64_t i = 0; i < rows * m->nb; i++) m->e[i] = (uint8_t)(base - 2 + kit_randint(r, 5));
  for (int64_t t = 0; t < rows; t++) { /* checkpoint row t */
    int64_t p = mx_plain_row(m, t);
    for (int64_t g = 0; g < m->nb; g++) {
      m->scales[t * m->nb + g] = m->e[p * m->nb + g];
      for (int b = 0; b < 16; b++)
        m->blocks[(t * m->nb + g) * 16 + b] =
            (uint8_t)(m->q[p * cols + 32 * g + 2 * b] | m->q[p * cols + 32 * g + 2 * b + 1] << 4);
    }
  }
  for (int64_t t = 0; t < rows; t++) /* out[t][k], then gate/up by the parity of t */
    for (int64_t g = 0; g < m->nb; g++)
      for (int b = 0; b < 16; b++) {
        uint8_t v = m->blocks[(t * m->nb + g) * 16 + b];
        int ex = (int)m->scales[t * m->nb + g] - 127;
        m->deq[mx_plain_row(m, t) * cols + 32 * g + 2 * b] = ldexp(fp4_values[v & 0x0F], ex);
        m->deq[mx_plain_row(m, t) * cols + 32 * g + 2 * b + 1] = ldexp(fp4_values[v >> 4], ex);
      }
}
static void mx_free(mx_mat *m) { free(m->q), free(m->e), free(m->blocks), free(m->scales), free(m->deq); }

static void check_mx(const char *what, const mx_mat *m, int64_t dst_rows, int64_t row0, const uint8_t *q,
                     const uint8_t *e) {
  const int64_t cols = m->cols, nb = m->nb, rb = cols / 2;
  int64_t bad_q = 0, bad_e = 0, bad_v = 0, bad_out = 0, nonzero = 0;
  for (int64_t d = 0; d < dst_rows; d++) {
    int64_t o = d - row0;
    if (o < 0 || o >= m->rows) {
      bad_out += !test_untouched(q + d * rb, (size_t)rb) + !test_untouched(e + d * nb, (size_t)nb);
      continue;
    }
    for (int64_t g = 0; g < nb; g++) bad_e += e[d * nb + g] != m->e[o * nb + g];
    for (int64_t c = 0; c < cols; c++) {
      double v = (double)moe_e2m1_to_f32((uint8_t)nib(q + d * rb, c)) * (double)moe_e8m0_to_f32(e[d * nb + c / 32]);
      bad_q += nib(q + d * rb, c) != m->q[o * cols + c];
      bad_v += !(v == m->deq[o * cols + c]);
      nonzero += v != 0;
    }
  }
  CHECK(!bad_q && !bad_e, "%s: %lld codes, %lld exponents differ", what, (long long)bad_q, (long long)bad_e);
  CHECK(!bad_v, "%s: %lld values differ from convert_moe_packed_tensors + the gate/up split", what, (long long)bad_v);
  CHECK(!bad_out, "%s: %lld rows outside the matrix were written", what, (long long)bad_out);
  CHECK(nonzero > m->rows * cols / 2, "%s: only %lld nonzero values", what, (long long)nonzero);
}

static void test_mxfp4(void) {
  static const struct { int64_t rows, cols; int interleaved; int64_t dst_rows, row0; } cases[] = {
      {2 * 90, 64, 1, 180, 0},  /* gate_up_proj, N = 90 (not a multiple of 32) */
      {64, 96, 0, 64, 0},       /* down_proj                                   */
      {2 * 24, 32, 1, 60, 12},  /* interleaved into a larger destination       */
      {48, 32, 0, 96, 48},      /* separate up_proj at row N                    */
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    kit_rng r = kit_rng_stream(51, ci);
    mx_mat m;
    char what[128];
    int64_t dr = cases[ci].dst_rows;
    mx_known(&m, cases[ci].rows, cases[ci].cols, cases[ci].interleaved, 0.1, &r);
    {
      void *bl = odd_copy(m.blocks, (size_t)(m.rows * m.cols / 2)), *sc = odd_copy(m.scales, (size_t)(m.rows * m.nb));
      uint8_t *q = poisoned((size_t)(dr * m.cols / 2)), *e = poisoned((size_t)(dr * m.nb));
      moe_status st = moe_import_mxfp4(bl, sc, m.rows, m.cols, m.interleaved, q, e, dr, cases[ci].row0);
      snprintf(what, sizeof what, "mxfp4 %lldx%lld%s dst %lld row0 %lld", (long long)m.rows, (long long)m.cols,
               m.interleaved ? " interleaved" : "", (long long)dr, (long long)cases[ci].row0);
      CHECK(st == MOE_OK, "%s: %s", what, moe_status_str(st));
      if (st == MOE_OK) check_mx(what, &m, dr, cases[ci].row0, q, e);
      printf("%s: %s\n", what, st == MOE_OK ? "imported" : moe_status_str(st));
      odd_free(bl), odd_free(sc), free(q), free(e);
    }
    mx_free(&m);
  }
}

/* gpt-oss biases: gate_up_proj_bias [2N] interleaved like the rows, down_proj_bias [K]; any dtype */
static void test_bias(void) {
  const moe_dtype types[3] = {MOE_BF16, MOE_F16, MOE_F32};
  for (int ti = 0; ti < 3; ti++)
    for (int il = 0; il < 2; il++) {
      kit_rng r = kit_rng_stream(61, (uint64_t)(2 * ti + il));
      const int64_t n = 2 * 45;
      uint8_t *src = (uint8_t *)test_malloc(4 * (size_t)n);
      double *known = (double *)test_malloc(sizeof(double) * (size_t)n); /* plain order */
      float *dst = (float *)(void *)poisoned(4 * (size_t)(n + 1));
      void *b;
      int64_t bad = 0;
      for (int64_t t = 0; t < n; t++) {
        int64_t p = il ? (t % 2 ? n / 2 : 0) + t / 2 : t;
        known[p] = store_scalar(types[ti], src, t, 0.1 * kit_normal(&r));
      }
      b = odd_copy(src, dsize(types[ti]) * (size_t)n);
      moe_status st = moe_import_bias(b, types[ti], n, il, dst);
      CHECK(st == MOE_OK, "bias %s: %s", dname(types[ti]), moe_status_str(st));
      for (int64_t i = 0; i < n; i++) bad += !((double)dst[i] == known[i]) || known[i] == 0;
      CHECK(!bad, "bias %s interleaved %d: %lld elements differ", dname(types[ti]), il, (long long)bad);
      CHECK(test_untouched(dst + n, 4), "bias %s: wrote past n", dname(types[ti]));
      odd_free(b), free(src), free(known), free(dst);
    }
}

/* ==== (c) whole layers ================================================================================ */
/* A float64 reference of the layer from dense weights in plain row order: W13 [E][2N][K] (gate rows
 * first), W2 [E][K][N]; activations as the library promises (oracle.h: bf16 rounding for A16
 * precisions, per-token int8 for A8, before GEMM1 and before GEMM2). */
typedef struct ref_layer {
  int64_t E, N, K;
  moe_precision p;
  moe_activation act;
  const double *w13, *w2;
  const float *b13, *b2;
} ref_layer;
static void ref_forward(const ref_layer *L, const float *x, int64_t M, int32_t topk, const int32_t *ids,
                        const float *wts, double *out) {
  const int64_t N = L->N, K = L->K;
  double *xv = (double *)test_malloc(sizeof(double) * (size_t)K), *xa = (double *)test_malloc(sizeof(double) * (size_t)K);
  double *pre = (double *)test_malloc(sizeof(double) * (size_t)(2 * N)), *h = (double *)test_malloc(sizeof(double) * (size_t)N);
  double *ha = (double *)test_malloc(sizeof(double) * (size_t)N);
  for (int64_t m = 0; m < M; m++) {
    for (int64_t k = 0; k < K; k++) xv[k] = x[m * K + k], out[m * K + k] = 0;
    orc_act_input(L->p, xv, K, xa);
    for (int32_t j = 0; j < topk; j++) {
      int64_t e = ids[m * topk + j];
      const double *w13 = L->w13 + e * 2 * N * K, *w2 = L->w2 + e * K * N;
      for (int64_t r = 0; r < 2 * N; r++) {
        double d = L->b13 ? L->b13[e * 2 * N + r] : 0.0;
        for (int64_t k = 0; k < K; k++) d += xa[k] * w13[r * K + k];
        pre[r] = d;
      }
      for (int64_t i = 0; i < N; i++) h[i] = orc_act(L->act, pre[i], pre[N + i], 1.702, 7.0);
      orc_act_input(L->p, h, N, ha);
      for (int64_t k = 0; k < K; k++) {
        double d = L->b2 ? L->b2[e * K + k] : 0.0;
        for (int64_t i = 0; i < N; i++) d += ha[i] * w2[k * N + i];
        out[m * K + k] += (double)wts[m * topk + j] * d;
      }
    }
  }
  free(xv), free(xa), free(pre), free(h), free(ha);
}

/* moe_pack + moe_forward (softmax top-2 routing, renormalized) of the imported weights, against the
 * reference; f32 activations and output. */
static void run_layer(const char *name, const moe_weights *w, const ref_layer *L, uint64_t seed) {
  const int64_t M = 24, E = w->E, K = w->K;
  const int32_t topk = 2;
  const double tol = 5e-4; /* test_layer.c: every precision, f32 output */
  kit_rng r = kit_rng_stream(seed, 99);
  moe_experts ex;
  size_t nbytes = moe_pack_size(w), wsb = 0;
  void *buf = test_malloc(nbytes), *ws;
  float *x = (float *)test_malloc(sizeof(float) * (size_t)(M * K)), *out = (float *)(void *)poisoned(4 * (size_t)(M * K));
  float *logits = (float *)test_malloc(sizeof(float) * (size_t)(M * E)), *wts = (float *)test_malloc(sizeof(float) * (size_t)(M * topk));
  int32_t *ids = (int32_t *)test_malloc(sizeof(int32_t) * (size_t)(M * topk));
  double *ref = (double *)test_malloc(sizeof(double) * (size_t)(M * K)), err;
  moe_router rt = MOE_ZERO_INIT;
  moe_call c = MOE_ZERO_INIT;
  moe_status st;
  CHECK(nbytes > 0, "%s: moe_pack_size 0", name);
  st = moe_pack(w, &ex, buf, nbytes);
  CHECK(st == MOE_OK, "%s: moe_pack: %s", name, moe_status_str(st));
  kit_fill_normal(&r, x, M * K, 1.0);
  kit_fill_normal(&r, logits, M * E, 1.0);
  rt.E = (int32_t)E, rt.topk = topk, rt.kind = MOE_ROUTE_SOFTMAX, rt.renormalize = 1;
  st = moe_route(&rt, logits, MOE_F32, M, wts, ids);
  CHECK(st == MOE_OK, "%s: moe_route: %s", name, moe_status_str(st));
  c.x = x, c.out = out, c.dtype = MOE_F32, c.M = M, c.topk = topk, c.act = L->act;
  st = moe_forward_workspace_size(&ex, &rt, &c, &wsb);
  CHECK(st == MOE_OK, "%s: moe_forward_workspace_size: %s", name, moe_status_str(st));
  ws = test_malloc(wsb);
  st = moe_forward(&ex, &rt, logits, MOE_F32, &c, ws, wsb, NULL);
  CHECK(st == MOE_OK, "%s: moe_forward: %s", name, moe_status_str(st));
  ref_forward(L, x, M, topk, ids, wts, ref);
  err = orc_rel_err(MOE_F32, out, K, ref, M, K, NULL);
  printf("layer %s: E %lld N %lld K %lld M %lld: rel_err %.3e (tol %.0e)\n", name, (long long)E, (long long)w->N,
         (long long)K, (long long)M, err, tol);
  CHECK(err <= tol, "layer %s: rel_err %.3e > %.0e", name, err, tol);
  free(buf), free(ws), free(x), free(out), free(logits), free(wts), free(ids), free(ref);
}

/* Plain int4 arrays of E experts and the dense reference weights. */
typedef struct int4_layer {
  int64_t E, N, K, ng13, ng2, rb13, rb2;
  uint8_t *q13, *q2, *z13, *z2;
  float *s13, *s2;
  double *d13, *d2;
} int4_layer;
static void int4_layer_alloc(int4_layer *l, int64_t E, int64_t N, int64_t K, int32_t group) {
  l->E = E, l->N = N, l->K = K, l->ng13 = cdiv(K, group), l->ng2 = cdiv(N, group), l->rb13 = cdiv(K, 2),
  l->rb2 = cdiv(N, 2);
  l->q13 = poisoned((size_t)(E * 2 * N * l->rb13)), l->q2 = poisoned((size_t)(E * K * l->rb2));
  l->z13 = poisoned((size_t)(E * 2 * N * l->ng13)), l->z2 = poisoned((size_t)(E * K * l->ng2));
  l->s13 = (float *)(void *)poisoned(4 * (size_t)(E * 2 * N * l->ng13));
  l->s2 = (float *)(void *)poisoned(4 * (size_t)(E * K * l->ng2));
  l->d13 = (double *)test_malloc(sizeof(double) * (size_t)(E * 2 * N * K));
  l->d2 = (double *)test_malloc(sizeof(double) * (size_t)(E * K * N));
}
static void int4_layer_free(int4_layer *l) {
  free(l->q13), free(l->q2), free(l->z13), free(l->z2), free(l->s13), free(l->s2), free(l->d13), free(l->d2);
}

/* An int4 layer through the AWQ (gptq = 0) or the GPTQ importer: per expert gate_proj, up_proj
 * (N x K) and down_proj (K x N), each written by the tool's packer from random known values. */
static void test_layer_int4(int gptq, moe_precision p, int64_t E, int64_t N, int64_t K, int32_t group) {
  int4_layer l;
  moe_weights w = MOE_ZERO_INIT;
  ref_layer L;
  char name[64];
  int4_layer_alloc(&l, E, N, K, group);
  for (int64_t e = 0; e < E; e++)
    for (int mat = 0; mat < 3; mat++) { /* gate, up, down */
      kit_rng r = kit_rng_stream(gptq ? 72 : 71, (uint64_t)(3 * e + mat));
      int64_t rows = mat < 2 ? N : K, cols = mat < 2 ? K : N, dr = mat < 2 ? 2 * N : K, row0 = mat == 1 ? N : 0;
      int64_t ng = mat < 2 ? l.ng13 : l.ng2, rb = mat < 2 ? l.rb13 : l.rb2;
      uint8_t *q = (mat < 2 ? l.q13 : l.q2) + e * dr * rb, *z = (mat < 2 ? l.z13 : l.z2) + e * dr * ng;
      float *s = (mat < 2 ? l.s13 : l.s2) + e * dr * ng;
      double *d = (mat < 2 ? l.d13 : l.d2) + e * dr * cols + row0 * cols;
      int4_mat m;
      moe_status st;
      int4_known(&m, rows, cols, group, gptq, MOE_F16, gptq ? 1 : 0, 15, 1.0 / sqrt((double)cols), &r);
      if (gptq) gptq_write(&m), gptq_dequant(&m, 0);
      else awq_write(&m), awq_dequant(&m);
      st = gptq ? moe_import_gptq(m.qweight, m.qzeros, m.scales, MOE_F16, m.g_idx, 4, rows, cols, group, q, s, z, dr, row0)
                : moe_import_awq(m.qweight, m.qzeros, m.scales, MOE_F16, rows, cols, group, q, s, z, dr, row0);
      CHECK(st == MOE_OK, "%s layer import expert %lld matrix %d: %s", gptq ? "gptq" : "awq", (long long)e, mat,
            moe_status_str(st));
      memcpy(d, m.deq, sizeof(double) * (size_t)(rows * cols));
      int4_free(&m);
    }
  w.E = E, w.N = N, w.K = K, w.precision = p, w.group = group;
  w.w13 = l.q13, w.w2 = l.q2, w.w13_scale = l.s13, w.w2_scale = l.s2, w.w13_zero = l.z13, w.w2_zero = l.z2;
  L.E = E, L.N = N, L.K = K, L.p = p, L.act = MOE_ACT_SILU, L.w13 = l.d13, L.w2 = l.d2, L.b13 = L.b2 = NULL;
  snprintf(name, sizeof name, "%s -> %s", gptq ? "gptq" : "awq", moe_precision_name(p));
  run_layer(name, &w, &L, gptq ? 72 : 71);
  int4_layer_free(&l);
}

/* DeepSeek fp8: gate, up (N x K, N a multiple of 128) and down (K x N) with 128 x 128 blocks. */
static void test_layer_fp8(int64_t E, int64_t N, int64_t K) {
  const int32_t B = 128;
  int64_t nrb13 = cdiv(2 * N, B), ncb13 = cdiv(K, B), nrb2 = cdiv(K, B), ncb2 = cdiv(N, B);
  uint8_t *q13 = poisoned((size_t)(E * 2 * N * K)), *q2 = poisoned((size_t)(E * K * N));
  float *s13 = (float *)(void *)poisoned(4 * (size_t)(E * nrb13 * ncb13)), *s2 = (float *)(void *)poisoned(4 * (size_t)(E * nrb2 * ncb2));
  double *d13 = (double *)test_malloc(sizeof(double) * (size_t)(E * 2 * N * K)), *d2 = (double *)test_malloc(sizeof(double) * (size_t)(E * K * N));
  moe_weights w = MOE_ZERO_INIT;
  ref_layer L;
  for (int64_t e = 0; e < E; e++)
    for (int mat = 0; mat < 3; mat++) {
      kit_rng r = kit_rng_stream(73, (uint64_t)(3 * e + mat));
      int64_t rows = mat < 2 ? N : K, cols = mat < 2 ? K : N, dr = mat < 2 ? 2 * N : K, row0 = mat == 1 ? N : 0;
      fp8_mat m;
      moe_status st;
      fp8_known(&m, rows, cols, B, B, 1.0 / sqrt((double)cols), &r);
      st = moe_import_fp8_block(m.weight, m.wsi, rows, cols, B, B, (mat < 2 ? q13 : q2) + e * dr * cols,
                                mat < 2 ? s13 + e * nrb13 * ncb13 : s2 + e * nrb2 * ncb2, dr, row0);
      CHECK(st == MOE_OK, "fp8 layer import expert %lld matrix %d: %s", (long long)e, mat, moe_status_str(st));
      memcpy((mat < 2 ? d13 : d2) + e * dr * cols + row0 * cols, m.deq, sizeof(double) * (size_t)(rows * cols));
      fp8_free(&m);
    }
  w.E = E, w.N = N, w.K = K, w.precision = MOE_PREC_FP8, w.block_n = B, w.block_k = B;
  w.w13 = q13, w.w2 = q2, w.w13_scale = s13, w.w2_scale = s2;
  L.E = E, L.N = N, L.K = K, L.p = MOE_PREC_FP8, L.act = MOE_ACT_SILU, L.w13 = d13, L.w2 = d2, L.b13 = L.b2 = NULL;
  run_layer("deepseek fp8 -> fp8", &w, &L, 73);
  free(q13), free(q2), free(s13), free(s2), free(d13), free(d2);
}

/* gpt-oss: gate_up_proj_blocks/scales [E, 2N, K/32, (16)] interleaved, down_proj [E, K, N/32, (16)],
 * bf16 biases gate_up_proj_bias [E, 2N] (interleaved) and down_proj_bias [E, K]; SwiGLU-OAI. */
static void test_layer_mxfp4(int64_t E, int64_t N, int64_t K) {
  uint8_t *q13 = poisoned((size_t)(E * 2 * N * K / 2)), *q2 = poisoned((size_t)(E * K * N / 2));
  uint8_t *x13 = poisoned((size_t)(E * 2 * N * K / 32)), *x2 = poisoned((size_t)(E * K * N / 32));
  float *b13 = (float *)(void *)poisoned(4 * (size_t)(E * 2 * N)), *b2 = (float *)(void *)poisoned(4 * (size_t)(E * K));
  double *d13 = (double *)test_malloc(sizeof(double) * (size_t)(E * 2 * N * K)), *d2 = (double *)test_malloc(sizeof(double) * (size_t)(E * K * N));
  uint8_t *tb13 = (uint8_t *)test_malloc(2 * (size_t)(E * 2 * N)), *tb2 = (uint8_t *)test_malloc(2 * (size_t)(E * K));
  double *kb13 = (double *)test_malloc(sizeof(double) * (size_t)(E * 2 * N)); /* tool order */
  moe_weights w = MOE_ZERO_INIT;
  ref_layer L;
  kit_rng rb = kit_rng_stream(74, 1000);
  float *rb13 = (float *)test_malloc(4 * (size_t)(E * 2 * N)); /* the reference's b13, split as the tool does */
  moe_status st;
  for (int64_t e = 0; e < E; e++)
    for (int mat = 0; mat < 2; mat++) {
      kit_rng r = kit_rng_stream(74, (uint64_t)(2 * e + mat));
      int64_t rows = mat ? K : 2 * N, cols = mat ? N : K;
      mx_mat m;
      mx_known(&m, rows, cols, !mat, 1.0 / sqrt((double)cols), &r);
      st = moe_import_mxfp4(m.blocks, m.scales, rows, cols, !mat, (mat ? q2 : q13) + e * rows * cols / 2,
                            (mat ? x2 : x13) + e * rows * (cols / 32), rows, 0);
      CHECK(st == MOE_OK, "mxfp4 layer import expert %lld matrix %d: %s", (long long)e, mat, moe_status_str(st));
      memcpy((mat ? d2 : d13) + e * rows * cols, m.deq, sizeof(double) * (size_t)(rows * cols));
      mx_free(&m);
    }
  for (int64_t i = 0; i < E * 2 * N; i++) kb13[i] = store_scalar(MOE_BF16, tb13, i, 0.1 * kit_normal(&rb));
  for (int64_t i = 0; i < E * K; i++) (void)store_scalar(MOE_BF16, tb2, i, 0.1 * kit_normal(&rb));
  for (int64_t e = 0; e < E; e++) {
    st = moe_import_bias(tb13 + 2 * e * 2 * N, MOE_BF16, 2 * N, 1, b13 + e * 2 * N);
    CHECK(st == MOE_OK, "gate_up_proj_bias: %s", moe_status_str(st));
    st = moe_import_bias(tb2 + 2 * e * K, MOE_BF16, K, 0, b2 + e * K);
    CHECK(st == MOE_OK, "down_proj_bias: %s", moe_status_str(st));
    for (int64_t i = 0; i < N; i++) { /* GptOssExperts: bias added to gate_up, then [::2] and [1::2] */
      rb13[e * 2 * N + i] = (float)kb13[e * 2 * N + 2 * i];
      rb13[e * 2 * N + N + i] = (float)kb13[e * 2 * N + 2 * i + 1];
    }
  }
  w.E = E, w.N = N, w.K = K, w.precision = MOE_PREC_MXFP4;
  w.w13 = q13, w.w2 = q2, w.w13_e8m0 = x13, w.w2_e8m0 = x2, w.b13 = b13, w.b2 = b2;
  L.E = E, L.N = N, L.K = K, L.p = MOE_PREC_MXFP4, L.act = MOE_ACT_SWIGLU_OAI, L.w13 = d13, L.w2 = d2;
  L.b13 = rb13, L.b2 = b2; /* b2 is not reordered: the imported copy equals the tool's */
  {
    int64_t bad = 0;
    for (int64_t i = 0; i < E * K; i++) bad += !((double)b2[i] == orc_bf16((uint16_t)(tb2[2 * i] | tb2[2 * i + 1] << 8)));
    CHECK(!bad, "down_proj_bias: %lld elements differ", (long long)bad);
  }
  run_layer("gpt-oss mxfp4 -> mxfp4 (bias, swiglu-oai)", &w, &L, 74);
  free(q13), free(q2), free(x13), free(x2), free(b13), free(b2), free(d13), free(d2), free(tb13), free(tb2);
  free(kb13), free(rb13);
}

/* ==== (d) bad input ==================================================================================== */
/* Output buffers of one importer call, poisoned before each call and checked after it. */
typedef struct outs {
  uint8_t *a, *b, *c;
  size_t na, nb, nc;
} outs;
static void outs_poison(outs *o) { test_poison(o->a, o->na), test_poison(o->b, o->nb), test_poison(o->c, o->nc); }
static int outs_untouched(const outs *o) { return test_untouched(o->a, o->na) && test_untouched(o->b, o->nb) && test_untouched(o->c, o->nc); }
static void expect(outs *o, moe_status got, moe_status want, const char *what) {
  CHECK(got == want, "%s: got %s (%d), want %s", what, moe_status_str(got), (int)got, moe_status_str(want));
  CHECK(outs_untouched(o), "%s: an output was written on error", what);
  outs_poison(o);
}

static void test_bad_input(void) {
  const int64_t BIG = (int64_t)1 << 40;
  const moe_dtype bad_dtype = (moe_dtype)7;
  kit_rng r = kit_rng_stream(81, 0);
  outs o;
  o.na = 4096, o.nb = 4096, o.nc = 4096;
  o.a = poisoned(o.na), o.b = poisoned(o.nb), o.c = poisoned(o.nc);
  float *fb = (float *)(void *)o.b;
  { /* AWQ: 16 x 64, group 32 */
    int4_mat m;
    int4_known(&m, 16, 64, 32, 0, MOE_F16, 0, 15, 0.1, &r);
    awq_write(&m);
    const void *W = m.qweight, *Z = m.qzeros, *S = m.scales;
#define AWQ(qw, qz, sc, st, rows, cols, g, q, s, z, dr, r0) moe_import_awq(qw, qz, sc, st, rows, cols, g, q, s, z, dr, r0)
    expect(&o, AWQ(NULL, Z, S, MOE_F16, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_NULL, "awq qweight NULL");
    expect(&o, AWQ(W, NULL, S, MOE_F16, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_NULL, "awq qzeros NULL");
    expect(&o, AWQ(W, Z, NULL, MOE_F16, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_NULL, "awq scales NULL");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 64, 32, NULL, fb, o.c, 16, 0), MOE_ERR_NULL, "awq q NULL");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 64, 32, o.a, NULL, o.c, 16, 0), MOE_ERR_NULL, "awq scale NULL");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 64, 32, o.a, fb, NULL, 16, 0), MOE_ERR_NULL, "awq zero NULL");
    expect(&o, AWQ(W, Z, S, MOE_F16, 0, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_SHAPE, "awq rows 0");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 0, 32, o.a, fb, o.c, 16, 0), MOE_ERR_SHAPE, "awq cols 0");
    expect(&o, AWQ(W, Z, S, MOE_F16, 12, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_SHAPE, "awq out not a multiple of 8");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 48, 32, o.a, fb, o.c, 16, 0), MOE_ERR_SHAPE, "awq in not a multiple of group");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 64, 32, o.a, fb, o.c, 15, 0), MOE_ERR_SHAPE, "awq dst_rows < rows");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 64, 32, o.a, fb, o.c, 32, 17), MOE_ERR_SHAPE, "awq row0 + rows > dst_rows");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 64, 32, o.a, fb, o.c, 32, -1), MOE_ERR_SHAPE, "awq row0 < 0");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 64, 0, o.a, fb, o.c, 16, 0), MOE_ERR_DESCRIPTOR, "awq group 0");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 64, -1, o.a, fb, o.c, 16, 0), MOE_ERR_DESCRIPTOR, "awq group -1");
    expect(&o, AWQ(W, Z, S, MOE_F16, 16, 64, 16, o.a, fb, o.c, 16, 0), MOE_ERR_UNSUPPORTED, "awq group 16");
    expect(&o, AWQ(W, Z, S, bad_dtype, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_ARG, "awq scale dtype 7");
    expect(&o, AWQ(W, Z, S, (moe_dtype)-1, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_ARG, "awq scale dtype -1");
    expect(&o, AWQ(W, Z, S, MOE_F16, BIG, BIG, 32, o.a, fb, o.c, BIG, 0), MOE_ERR_OVERFLOW, "awq 2^40 x 2^40");
#undef AWQ
    CHECK(moe_import_awq(W, Z, S, MOE_F16, 16, 64, 32, o.a, fb, o.c, 16, 0) == MOE_OK, "awq valid call");
    outs_poison(&o);
    int4_free(&m);
  }
  { /* GPTQ: 16 x 64, group 32 */
    int4_mat m;
    int32_t *gi;
    int4_known(&m, 16, 64, 32, 1, MOE_F16, 1, 15, 0.1, &r);
    gptq_write(&m);
    const void *W = m.qweight, *Z = m.qzeros, *S = m.scales, *G = m.g_idx;
#define GPTQ(qw, qz, sc, st, g_idx, bits, rows, cols, g, q, s, z, dr, r0) \
  moe_import_gptq(qw, qz, sc, st, g_idx, bits, rows, cols, g, q, s, z, dr, r0)
    expect(&o, GPTQ(NULL, Z, S, MOE_F16, G, 4, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_NULL, "gptq qweight NULL");
    expect(&o, GPTQ(W, NULL, S, MOE_F16, G, 4, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_NULL, "gptq qzeros NULL");
    expect(&o, GPTQ(W, Z, NULL, MOE_F16, G, 4, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_NULL, "gptq scales NULL");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 4, 16, 64, 32, NULL, fb, o.c, 16, 0), MOE_ERR_NULL, "gptq q NULL");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 4, 16, 64, 32, o.a, NULL, o.c, 16, 0), MOE_ERR_NULL, "gptq scale NULL");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 4, 16, 64, 32, o.a, fb, NULL, 16, 0), MOE_ERR_NULL, "gptq zero NULL");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 8, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_UNSUPPORTED, "gptq bits 8");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 3, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_UNSUPPORTED, "gptq bits 3");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 4, 16, 60, 32, o.a, fb, o.c, 16, 0), MOE_ERR_SHAPE, "gptq in not a multiple of 8");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 4, 20, 64, 32, o.a, fb, o.c, 20, 0), MOE_ERR_SHAPE, "gptq out not a multiple of 8");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 4, -8, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_SHAPE, "gptq rows < 0");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 4, 16, 64, 32, o.a, fb, o.c, 24, 9), MOE_ERR_SHAPE, "gptq row0 + rows > dst_rows");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 4, 16, 64, 0, o.a, fb, o.c, 16, 0), MOE_ERR_DESCRIPTOR, "gptq group 0");
    expect(&o, GPTQ(W, Z, S, MOE_F16, G, 4, 16, 64, 48, o.a, fb, o.c, 16, 0), MOE_ERR_UNSUPPORTED, "gptq group 48");
    expect(&o, GPTQ(W, Z, S, bad_dtype, G, 4, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_ARG, "gptq scale dtype 7");
    expect(&o, GPTQ(W, Z, S, MOE_F16, NULL, 4, BIG, BIG, 32, o.a, fb, o.c, BIG, 0), MOE_ERR_OVERFLOW, "gptq 2^40 x 2^40");
    /* act-order: g_idx as AutoGPTQ's quantizer makes it with desc_act (i // group permuted) */
    gi = (int32_t *)test_malloc(4 * 64);
    for (int i = 0; i < 64; i++) gi[i] = (int32_t)(((i * 37) % 64) / 32);
    expect(&o, GPTQ(W, Z, S, MOE_F16, gi, 4, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_UNSUPPORTED, "gptq act-order g_idx");
    for (int i = 0; i < 64; i++) gi[i] = i / 32;
    gi[63] = 0; /* wrong only at the very end: the whole g_idx is checked before anything is written */
    expect(&o, GPTQ(W, Z, S, MOE_F16, gi, 4, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_UNSUPPORTED, "gptq g_idx last");
    gi[63] = -1;
    expect(&o, GPTQ(W, Z, S, MOE_F16, gi, 4, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_UNSUPPORTED, "gptq g_idx -1");
    for (int i = 0; i < 64; i++) gi[i] = i / 16; /* a finer group than declared */
    expect(&o, GPTQ(W, Z, S, MOE_F16, gi, 4, 16, 64, 32, o.a, fb, o.c, 16, 0), MOE_ERR_UNSUPPORTED, "gptq g_idx i/16");
#undef GPTQ
    CHECK(moe_import_gptq(W, Z, S, MOE_F16, G, 4, 16, 64, 32, o.a, fb, o.c, 16, 0) == MOE_OK, "gptq valid call");
    outs_poison(&o);
    free(gi);
    int4_free(&m);
  }
  { /* fp8: 256 x 64 with 128 x 128 blocks */
    fp8_mat m;
    fp8_known(&m, 256, 64, 128, 128, 0.1, &r);
    const void *W = m.weight, *S = m.wsi;
    uint8_t *q = o.a;
    expect(&o, moe_import_fp8_block(NULL, S, 16, 64, 128, 128, q, fb, 16, 0), MOE_ERR_NULL, "fp8 weight NULL");
    expect(&o, moe_import_fp8_block(W, NULL, 16, 64, 128, 128, q, fb, 16, 0), MOE_ERR_NULL, "fp8 scale_inv NULL");
    expect(&o, moe_import_fp8_block(W, S, 16, 64, 128, 128, NULL, fb, 16, 0), MOE_ERR_NULL, "fp8 q NULL");
    expect(&o, moe_import_fp8_block(W, S, 16, 64, 128, 128, q, NULL, 16, 0), MOE_ERR_NULL, "fp8 scale NULL");
    expect(&o, moe_import_fp8_block(W, S, 0, 64, 128, 128, q, fb, 16, 0), MOE_ERR_SHAPE, "fp8 rows 0");
    expect(&o, moe_import_fp8_block(W, S, 16, -1, 128, 128, q, fb, 16, 0), MOE_ERR_SHAPE, "fp8 cols -1");
    expect(&o, moe_import_fp8_block(W, S, 16, 64, 128, 128, q, fb, 8, 0), MOE_ERR_SHAPE, "fp8 dst_rows < rows");
    expect(&o, moe_import_fp8_block(W, S, 16, 64, 0, 128, q, fb, 16, 0), MOE_ERR_DESCRIPTOR, "fp8 block_n 0");
    expect(&o, moe_import_fp8_block(W, S, 16, 64, 128, -128, q, fb, 16, 0), MOE_ERR_DESCRIPTOR, "fp8 block_k < 0");
    /* gate of N = 16 rows with 128-row blocks: its block would hold up rows too */
    expect(&o, moe_import_fp8_block(W, S, 16, 64, 128, 128, q, fb, 32, 0), MOE_ERR_UNSUPPORTED, "fp8 gate N=16 of 128-row blocks");
    expect(&o, moe_import_fp8_block(W, S, 16, 64, 128, 128, q, fb, 32, 16), MOE_ERR_UNSUPPORTED, "fp8 row0 not on a block");
    expect(&o, moe_import_fp8_block(W, S, 16, 64, 8, 128, q, fb, 48, 4), MOE_ERR_UNSUPPORTED, "fp8 row0 4 of 8-row blocks");
    expect(&o, moe_import_fp8_block(W, S, BIG, BIG, 128, 128, q, fb, BIG, 0), MOE_ERR_OVERFLOW, "fp8 2^40 x 2^40");
    CHECK(moe_import_fp8_block(W, S, 16, 64, 16, 128, q, fb, 32, 16) == MOE_OK, "fp8 valid call (16-row blocks)");
    outs_poison(&o);
    fp8_free(&m);
  }
  { /* mxfp4: 32 x 64 */
    mx_mat m;
    mx_known(&m, 32, 64, 1, 0.1, &r);
    const void *B = m.blocks, *S = m.scales;
    expect(&o, moe_import_mxfp4(NULL, S, 32, 64, 1, o.a, o.c, 32, 0), MOE_ERR_NULL, "mxfp4 blocks NULL");
    expect(&o, moe_import_mxfp4(B, NULL, 32, 64, 1, o.a, o.c, 32, 0), MOE_ERR_NULL, "mxfp4 scales NULL");
    expect(&o, moe_import_mxfp4(B, S, 32, 64, 1, NULL, o.c, 32, 0), MOE_ERR_NULL, "mxfp4 q NULL");
    expect(&o, moe_import_mxfp4(B, S, 32, 64, 1, o.a, NULL, 32, 0), MOE_ERR_NULL, "mxfp4 e8m0 NULL");
    expect(&o, moe_import_mxfp4(B, S, 31, 64, 1, o.a, o.c, 32, 0), MOE_ERR_SHAPE, "mxfp4 interleaved odd rows");
    expect(&o, moe_import_mxfp4(B, S, 32, 48, 1, o.a, o.c, 32, 0), MOE_ERR_SHAPE, "mxfp4 in not a multiple of 32");
    expect(&o, moe_import_mxfp4(B, S, 32, 0, 0, o.a, o.c, 32, 0), MOE_ERR_SHAPE, "mxfp4 cols 0");
    expect(&o, moe_import_mxfp4(B, S, 32, 64, 0, o.a, o.c, 40, 9), MOE_ERR_SHAPE, "mxfp4 row0 + rows > dst_rows");
    expect(&o, moe_import_mxfp4(B, S, BIG, BIG, 0, o.a, o.c, BIG, 0), MOE_ERR_OVERFLOW, "mxfp4 2^40 x 2^40");
    CHECK(moe_import_mxfp4(B, S, 32, 64, 1, o.a, o.c, 32, 0) == MOE_OK, "mxfp4 valid call");
    outs_poison(&o);
    mx_free(&m);
  }
  { /* bias */
    uint16_t b[8] = {0x3F80, 0x4000, 0xBF80, 0x3E00, 0x3F00, 0x4040, 0xC000, 0x3C00};
    expect(&o, moe_import_bias(NULL, MOE_BF16, 8, 1, fb), MOE_ERR_NULL, "bias NULL");
    expect(&o, moe_import_bias(b, MOE_BF16, 8, 1, NULL), MOE_ERR_NULL, "bias dst NULL");
    expect(&o, moe_import_bias(b, MOE_BF16, 0, 0, fb), MOE_ERR_SHAPE, "bias n 0");
    expect(&o, moe_import_bias(b, MOE_BF16, 7, 1, fb), MOE_ERR_SHAPE, "bias interleaved odd n");
    expect(&o, moe_import_bias(b, bad_dtype, 8, 0, fb), MOE_ERR_ARG, "bias dtype 7");
    expect(&o, moe_import_bias(b, MOE_BF16, INT64_MAX / 2, 0, fb), MOE_ERR_OVERFLOW, "bias n 2^62");
  }
  free(o.a), free(o.b), free(o.c);
}

int main(void) {
  test_plain_layouts();
  test_fp8();
  test_awq();
  test_gptq();
  test_mxfp4();
  test_bias();
  test_bad_input();
  test_layer_int4(0, MOE_PREC_INT4_W4A16, 3, 96, 64, 32); /* the AWQ layer of the task: E 3, int4-w4a16 */
  test_layer_int4(0, MOE_PREC_INT4_W4A8, 3, 64, 128, 64);
  test_layer_int4(1, MOE_PREC_INT4_W4A8, 3, 48, 64, 32);  /* GPTQ, N = 48: W2's last group partial */
  test_layer_int4(1, MOE_PREC_INT4_W4A16, 3, 40, 96, 64);
  test_layer_fp8(3, 128, 96);
  test_layer_mxfp4(3, 64, 64);
  return test_finish("test_import");
}

/* libFuzzer target: moe_pack with a weights descriptor and plain arrays taken from the input.
 *
 *   byte 0     precision (0..7: one out of range)         byte 7-8   fp8 block_n, block_k (from a table
 *   byte 1     E (1..3; 255: 0)                                      with 0, odd sizes and negatives)
 *   byte 2-3   N (1..96)                                  byte 9     int4 group (table: 0, 32 .. 128, odd, -1)
 *   byte 4-5   K (1..300)                                 byte 10    biases (bits 0, 1), a NULL array (bits 2-4)
 *   byte 6     K negated (bit 7)                          byte 11    buffer: exact, one byte short, larger
 *   then       the plain arrays' bytes (codes, scales, zero points, e8m0, biases), cycled over the input
 *
 * Each array is allocated at exactly the size the descriptor says (a read past it is an ASan report),
 * the pack buffer is followed by a poisoned guard. Beyond the sanitizers it checks what moe_gemm.h
 * promises: on an error status the buffer and the guard are untouched; on MOE_OK the guard is, and
 * every panel equals the element-by-element twin's (moe__pack_panel_scalar), byte for byte, so the
 * table-driven and vector packers are fuzzed against it on random shapes, blocks and codes.
 *
 * Build: tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#define FUZZ_NAME "fuzz_pack"
#include "fuzz_common.h" /* first: _POSIX_C_SOURCE, moe.h's implementation */

#define GUARD 64
#define POISON 0xA5

static const int32_t block_table[8] = {0, 1, 16, 32, 64, 128, 7, -5};
static const int32_t group_table[8] = {0, 32, 64, 96, 128, 100, -1, 48};

/* n bytes of the input cycled from *at (zeros when there is none), in a new buffer of exactly n. */
static void *fuzz_array(const uint8_t *data, size_t size, size_t *at, size_t n) {
  uint8_t *p = (uint8_t *)malloc(n ? n : 1);
  FUZZ_CHECK(p != NULL, "malloc %zu", n);
  for (size_t i = 0; i < n; i++) p[i] = size ? data[(*at + i) % size] : 0;
  *at += n;
  return p;
}

/* Every panel of w through the scalar twin, into base (laid out as moe_pack lays it). */
static void pack_scalar(const moe_weights *w, uint8_t *base) {
  moe__pack_plan pl;
  FUZZ_CHECK(moe__plan_pack(w, &pl) == MOE_OK, "plan");
  for (int64_t e = 0; e < w->E; e++) {
    moe__plain_mat m13 = moe__plain_of(w, &pl, 13, e), m2 = moe__plain_of(w, &pl, 2, e);
    for (int64_t q = 0; q < pl.panels13; q++) {
      int32_t nv = (int32_t)(w->N - q / 2 * MOE_NR < MOE_NR ? w->N - q / 2 * MOE_NR : MOE_NR);
      moe__pack_panel_scalar(&m13, (q & 1 ? w->N : 0) + q / 2 * MOE_NR, nv, base + (size_t)(e * pl.panels13 + q) * pl.panel13_bytes,
                             pl.panel13_bytes);
    }
    for (int64_t q = 0; q < pl.panels2; q++) {
      int32_t nv = (int32_t)(w->K - q * MOE_NR < MOE_NR ? w->K - q * MOE_NR : MOE_NR);
      moe__pack_panel_scalar(&m2, q * MOE_NR, nv, base + pl.w13_bytes + (size_t)(e * pl.panels2 + q) * pl.panel2_bytes,
                             pl.panel2_bytes);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t h[12] = {0};
  moe_weights w;
  void *arr[8] = {0};
  size_t at = sizeof h, n, bufsize;
  int64_t K, rows[2], cols[2];
  int bn, bk, g, elt;
  moe_experts ex;
  moe_status st;
  uint8_t *buf, *ref;
  memcpy(h, data, size < sizeof h ? size : sizeof h);
  memset(&w, 0, sizeof w);
  w.precision = (moe_precision)(h[0] % 8);
  w.E = h[1] == 255 ? 0 : 1 + h[1] % 3;
  w.N = 1 + (h[2] | h[3] << 8) % 96;
  K = 1 + (h[4] | h[5] << 8) % 300;
  w.K = h[6] & 0x80 ? -K : K;
  w.block_n = block_table[h[7] % 8], w.block_k = block_table[h[8] % 8], w.group = group_table[h[9] % 8];
  /* the arrays at the sizes the descriptor asks for (sizes from the clamped shape when it is bad) */
  rows[0] = 2 * w.N, cols[0] = K, rows[1] = K, cols[1] = w.N;
  bn = w.block_n > 0 ? w.block_n : 128, bk = w.block_k > 0 ? w.block_k : 128, g = w.group > 0 ? w.group : 128;
  elt = w.precision == MOE_PREC_BF16 || w.precision == MOE_PREC_FP16 ? 2 : 1;
  for (int m = 0; m < 2; m++) {
    const size_t E = w.E > 0 ? (size_t)w.E : 1, r = (size_t)rows[m], c = (size_t)cols[m];
    const int four = w.precision == MOE_PREC_INT4_W4A8 || w.precision == MOE_PREC_INT4_W4A16 || w.precision == MOE_PREC_MXFP4;
    size_t meta = 0;
    arr[m] = fuzz_array(data, size, &at, E * r * (four ? (c + 1) / 2 : c * (size_t)elt));
    if (w.precision == MOE_PREC_INT8) meta = E * r;
    if (w.precision == MOE_PREC_FP8) meta = E * ((r + (size_t)bn - 1) / (size_t)bn) * ((c + (size_t)bk - 1) / (size_t)bk);
    if (w.precision == MOE_PREC_INT4_W4A8 || w.precision == MOE_PREC_INT4_W4A16) meta = E * r * ((c + (size_t)g - 1) / (size_t)g);
    if (w.precision == MOE_PREC_MXFP4) meta = E * r * ((c + 31) / 32);
    if (meta && w.precision != MOE_PREC_MXFP4) arr[2 + m] = fuzz_array(data, size, &at, meta * sizeof(float));
    if (meta && (w.precision == MOE_PREC_INT4_W4A8 || w.precision == MOE_PREC_INT4_W4A16 || w.precision == MOE_PREC_MXFP4))
      arr[4 + m] = fuzz_array(data, size, &at, meta);
    if (h[10] & (1 << m)) arr[6 + m] = fuzz_array(data, size, &at, E * (size_t)(m ? K : 2 * w.N) * sizeof(float));
  }
  if ((h[10] >> 2) % 8 && (h[10] >> 2) % 8 <= 6) { /* one array NULL (a required one, or an unused one) */
    const int k = (h[10] >> 2) % 8 - 1;
    free(arr[k]);
    arr[k] = NULL;
  }
  w.w13 = arr[0], w.w2 = arr[1], w.w13_scale = (const float *)arr[2], w.w2_scale = (const float *)arr[3];
  if (w.precision == MOE_PREC_MXFP4) w.w13_e8m0 = (const uint8_t *)arr[4], w.w2_e8m0 = (const uint8_t *)arr[5];
  else w.w13_zero = (const uint8_t *)arr[4], w.w2_zero = (const uint8_t *)arr[5];
  w.b13 = (const float *)arr[6], w.b2 = (const float *)arr[7];

  n = moe_pack_size(&w);
  bufsize = n == 0 ? 4096 : h[11] % 3 == 1 ? n - 1 : h[11] % 3 == 2 ? n + 100 : n;
  buf = (uint8_t *)malloc(bufsize + GUARD);
  FUZZ_CHECK(buf != NULL, "malloc");
  memset(buf, POISON, bufsize + GUARD);
  st = moe_pack(&w, &ex, buf, bufsize);
  if (st != MOE_OK) {
    for (size_t i = 0; i < bufsize + GUARD; i++) FUZZ_CHECK(buf[i] == POISON, "status %d (%s) and byte %zu written", (int)st, moe_status_str(st), i);
  } else {
    const size_t panels = (size_t)((const uint8_t *)ex.w2 - (const uint8_t *)ex.w13) + (size_t)(ex.E * ex.panels2) * ex.panel2_bytes;
    FUZZ_CHECK(n > 0 && bufsize >= n, "MOE_OK with a buffer of %zu for %zu", bufsize, n);
    for (size_t i = bufsize; i < bufsize + GUARD; i++) FUZZ_CHECK(buf[i] == POISON, "byte %zu past the buffer written", i);
    ref = (uint8_t *)malloc(bufsize);
    FUZZ_CHECK(ref != NULL, "malloc");
    memset(ref, POISON, bufsize);
    pack_scalar(&w, ref + ((const uint8_t *)ex.w13 - buf));
    FUZZ_CHECK(!memcmp(ex.w13, ref + ((const uint8_t *)ex.w13 - buf), panels), "%s E %lld N %lld K %lld: panels differ from the scalar twin",
               moe_precision_name(w.precision), (long long)w.E, (long long)w.N, (long long)w.K);
    free(ref);
  }
  free(buf);
  for (int i = 0; i < 8; i++) free(arr[i]);
  return 0;
}

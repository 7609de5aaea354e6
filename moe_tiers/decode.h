/* moe_tiers/decode.h — every precision's weight decoders, the tiers side by side: one section per
 * row of MOE_PRECISION_LIST (moe_quant.h), with its packed layout (moe_gemm.h's layout table), the
 * scalar decoder the vector ones must match (the public conversions of moe_quant.h, through
 * moe__value_a16 in the scalar kernels), then its AVX-512 and AVX2 decoders. The AMX tier stages
 * its B tiles with the AVX-512 ones. Included by moe_gemm.h inside its implementation, after the
 * tiers' gates and target attributes; not a header to include on its own.
 *
 * BF16, FP16 (layout (a)) and INT8 (layout (a) with its compensation header) have no decoder: every
 * tier reads their stored lines as they are (FP16 weights were made bf16 by the packer). */

#ifdef MOE__HAVE_AVX512
/* The AVX-512 decoders' tables, per precision (moe__tables_of below): fp8 the bf16 high and low
 * bytes of its 128 magnitudes; 4-bit codes the bf16 words of e2m1, twice (hi0), or of int4 q - zero
 * (lo0), and f32 values: e2m1's 16 (f32), or int4 q - zero as a 5-bit index (f32: 0..15, f32_hi:
 * -16..-1). */
typedef struct moe__tables {
  __m512i hi0, hi1, lo0, lo1;
  __m512 f32, f32_hi;
} moe__tables;
#endif

/* ---- FP8 (E4M3, 128 x 128 block scales; W8A16) ---------------------------------------------------
 * Layout (b): one k pair per 64-byte line. Scalar: moe_e4m3_to_f32 (exact for all 256 codes; 0x7F
 * and 0xFF NaN). */
#ifdef MOE__HAVE_AVX512
/* bf16 of every e4m3 magnitude (code & 0x7F), as high and low bytes: exact, subnormals included;
 * 0x7F (NaN) -> 0x7FC0. The sign bit is or'ed in after the lookup. */
static const uint8_t moe__e4m3_bf16_hi[128] = {
    0x00, 0x3B, 0x3B, 0x3B, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C,
    0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D,
    0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E,
    0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F,
    0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
    0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
    0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42,
    0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x7F};
static const uint8_t moe__e4m3_bf16_lo[128] = {
    0x00, 0x00, 0x80, 0xC0, 0x00, 0x20, 0x40, 0x60, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xC0};
/* 64 bf16 high and low bytes -> the two lines of (a) they form (unpacking works within 16-byte
 * blocks, which layout (b) already accounts for): columns 0-15 and 16-31 of one pair. */
MOE__AVX512_BASE MOE__INLINE void moe__bf16_unpack(__m512i lo, __m512i hi, __m512bh *c0, __m512bh *c1) {
  *c0 = (__m512bh)_mm512_unpacklo_epi8(lo, hi);
  *c1 = (__m512bh)_mm512_unpackhi_epi8(lo, hi);
}
/* One FP8 line (layout (b)) -> bf16 of one pair: magnitude through the tables, sign or'ed back. */
MOE__AVX512_VBMI MOE__INLINE void moe__fp8_line(const uint8_t *line, const moe__tables *t, __m512bh *c0, __m512bh *c1) {
  __m512i v = _mm512_load_si512(line);
  __m512i hi = _mm512_permutex2var_epi8(t->hi0, v, t->hi1), lo = _mm512_permutex2var_epi8(t->lo0, v, t->lo1);
  moe__bf16_unpack(lo, _mm512_ternarylogic_epi32(hi, v, _mm512_set1_epi8((char)0x80), 0xF8), c0, c1); /* hi | (v & 0x80) */
}
#endif
#ifdef MOE__HAVE_AVX2
/* The even and odd element of pair i for the 8 columns 8q..8q+7 (layout (b): 8-byte runs of 4
 * columns x (k0, k1)) as f32 times 2^-8: e4m3 read as fp16 with its fields shifted in place (normals
 * and subnormals), S.1111.111 made an fp16 NaN, then vcvtph2ps (a third of the ops of a bit-field
 * decode, without byte permutes). */
MOE__AVX2_INLINE void moe__fp8_pair_avx2(const uint8_t *codes, int64_t i, int q, __m256 *we, __m256 *wo) {
  const uint8_t *line = codes + 64 * (size_t)i + 32 * (size_t)(q & 1) + 8 * (size_t)(q >> 1);
  __m128i x = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(const void *)line), _mm_loadl_epi64((const __m128i *)(const void *)(line + 16)));
  const __m256i m = _mm256_set1_epi16(0x7F00);
  __m256i u, h;
  x = _mm_shuffle_epi8(x, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
  u = _mm256_slli_epi16(_mm256_cvtepu8_epi16(x), 8);
  h = _mm256_and_si256(_mm256_srai_epi16(u, 1), _mm256_set1_epi16((short)0xBF80));
  h = _mm256_or_si256(h, _mm256_cmpeq_epi16(_mm256_and_si256(u, m), m));
  *we = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
  *wo = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}
/* A group's sums in units of the weights: FP8's are in units of 2^-8 (above), scaled back exactly
 * (a power of two; the same bits as decoding the value itself unless a product falls below 2^-118). */
MOE__AVX2_INLINE __m256 moe__lb_unit_avx2(moe_precision p, __m256 sum) { return p == MOE_PREC_FP8 ? _mm256_mul_ps(sum, _mm256_set1_ps(256.0f)) : sum; }
#endif

/* ---- 4-bit codes in layout (c) (INT4 W4A16, MXFP4) -----------------------------------------------
 * 8 k per line pair: dword c of a 64-byte line = column c's even k in its low word, odd k in its
 * high word, nibble j of a word = pair j of the 8 k. */
#ifdef MOE__HAVE_AVX512
/* Pair j (0..3) of a 4-bit line (layout (c)) -> bf16 of 16 columns: nibble j of every word indexes
 * the 32-entry table, which repeats its 16 values, so the bits above the nibble need no mask. */
MOE__AVX512_BASE MOE__INLINE __m512bh moe__b4_pair(__m512i line, int j, __m512i table) {
  return (__m512bh)_mm512_permutexvar_epi16(j ? _mm512_srli_epi16(line, (unsigned)(4 * j)) : line, table);
}
/* The f32 form (Intel's cores run two f32 FMAs per cycle, but a 512-bit vdpbf16ps only every
 * second cycle): the nibble at bit `shift` of every dword of the 4-bit line at `line` (layout (c):
 * dword c = column c's even k in its low word, odd k in its high word) -> f32 of 16 columns;
 * vpermps reads only the index's low 4 bits, so the bits above need no mask. Compilers fold the
 * line's read into the shift. MOE__B4_OFFSET_READS 1 reads it shift / 8 bytes further instead,
 * which puts byte shift / 8 of every dword in its low byte: only the high nibbles need a shift
 * (16 a k step instead of 28; the read ends up to 3 bytes past the line, inside the panel, whose
 * group scales follow its codes), but 3 reads in 4 split cache lines: 13 % slower on Zen 5, 16 %
 * fewer cycles in llvm-mca's Sapphire Rapids model, which knows no splits; to be measured on Intel
 * (docs/amx.md, seventeenth sitting; the slow suite's `offset_reads` tests it). */
#ifndef MOE__B4_OFFSET_READS
#define MOE__B4_OFFSET_READS 0
#endif
MOE__AVX512_BASE MOE__INLINE __m512 moe__b4_f32_at(const uint8_t *line, unsigned shift, __m512 table) {
#if MOE__B4_OFFSET_READS
  const __m512i x = _mm512_loadu_si512(line + shift / 8);
  return _mm512_permutexvar_ps(shift % 8 ? _mm512_srli_epi32(x, 4) : x, table);
#else
  const __m512i x = _mm512_load_si512(line);
  return _mm512_permutexvar_ps(shift ? _mm512_srli_epi32(x, shift) : x, table);
#endif
}
#endif
#ifdef MOE__HAVE_AVX2
/* Nibble pair i (even k in ie, odd k in io) of the 8 columns 8q..8q+7, as int32. */
MOE__AVX2_INLINE void moe__b4_nibbles_avx2(const uint8_t *codes, int64_t i, int q, __m256i *ie, __m256i *io) {
  const __m256i d = _mm256_srli_epi32(_mm256_load_si256((const __m256i *)(const void *)(codes + 128 * (size_t)(i / 4) + 32 * (size_t)q)), (int)(4 * (i % 4)));
  *ie = _mm256_and_si256(d, _mm256_set1_epi32(15));
  *io = _mm256_and_si256(_mm256_srli_epi32(d, 16), _mm256_set1_epi32(15));
}
#endif

/* ---- INT4 W4A16 (u4 codes, a zero point and an f32 scale per group of k; bf16 activations) --------
 * Scalar: (q - zero) x scale, q = the nibble (moe__value_a16 gives q; the zero point is subtracted in
 * the group's sum). */
#ifdef MOE__HAVE_AVX512
/* bf16 of the 4-bit values, 32 entries for vpermw: int4 q - zero as a 5-bit index (-15..15, two's
 * complement), and e2m1 (sign in bit 3) twice, so the bits above a nibble need no mask. */
static const uint16_t moe__int5_bf16[32] = {
    0x0000, 0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0, 0x40E0, 0x4100, 0x4110, 0x4120, 0x4130, 0x4140, 0x4150, 0x4160, 0x4170,
    0xC180, 0xC170, 0xC160, 0xC150, 0xC140, 0xC130, 0xC120, 0xC110, 0xC100, 0xC0E0, 0xC0C0, 0xC0A0, 0xC080, 0xC040, 0xC000, 0xBF80};
/* Pair j (0..3) of a 4-bit line as int4 q - zero (zero_bytes: each column's zero point in every byte of
 * its dword), bf16 of 16 columns: q - zero (-15..15) in a word's low 5 bits, vpermw's index into the
 * 32-entry signed table. */
MOE__AVX512_BASE MOE__INLINE __m512bh moe__b4_pair_zero(__m512i line, int j, __m512i zero_bytes, __m512i table) {
  __m512i q = _mm512_and_si512(_mm512_srli_epi16(line, (unsigned)(4 * j)), _mm512_set1_epi16(15));
  return (__m512bh)_mm512_permutexvar_epi16(_mm512_sub_epi8(q, zero_bytes), table);
}
/* ... for int4: q - zero (zero: f32), exact in f32. */
MOE__AVX512_BASE MOE__INLINE __m512 moe__b4_f32_zero_at(const uint8_t *line, unsigned shift, __m512 table, __m512 zero) {
  return _mm512_sub_ps(moe__b4_f32_at(line, shift, table), zero);
}
/* int4 q - zero of a whole 4-bit line, four nibbles a word at once: the nibbles of pairs 0 and 2
 * (even) and 1 and 3 (odd) isolated in the low and high byte of each word, each column's zero point
 * (zero_bytes: in every byte of its dword) subtracted bytewise, so a byte's low 5 bits are q - zero
 * (-15..15, two's complement): 7 vector ops a line besides its 4 permutes, where pair by pair take
 * 11, for two more live registers (the AMX staging, and the tiles of 1-2 rows: gen_tiles.py's
 * MINUS_ROWS).
 *
 *   word of line:  n3 n2 n1 n0 (nibble j = pair j)     even: [n2 - z][n0 - z]   odd: [n3 - z][n1 - z] */
MOE__AVX512_BASE MOE__INLINE void moe__b4_minus_zero(__m512i line, __m512i zero_bytes, __m512i *even, __m512i *odd) {
  const __m512i nibble = _mm512_set1_epi8(15);
  *even = _mm512_sub_epi8(_mm512_and_si512(line, nibble), zero_bytes);
  *odd = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(line, 4), nibble), zero_bytes);
}
/* Pair j (0..3) of those as bf16 of 16 columns: vpermw reads a word's low 5 bits (the table's index). */
MOE__AVX512_BASE MOE__INLINE __m512bh moe__b4_pair_minus(__m512i even, __m512i odd, int j, __m512i table) {
  const __m512i q = j & 1 ? odd : even;
  return (__m512bh)_mm512_permutexvar_epi16(j & 2 ? _mm512_srli_epi16(q, 8) : q, table);
}
/* The f32 form: the byte at bit `shift` of every dword of even (or odd), q - zero as a 5-bit index
 * into the 32-entry table (lo: 0..15, hi: -16..-1; vpermi2ps reads only the low 5 bits): exact. */
MOE__AVX512_BASE MOE__INLINE __m512 moe__b4_f32_minus(__m512i q, unsigned shift, __m512 lo, __m512 hi) {
  return _mm512_permutex2var_ps(lo, shift ? _mm512_srli_epi32(q, shift) : q, hi);
}
#endif
#ifdef MOE__HAVE_AVX2
/* q - zero of pair i for the 8 columns 8q..8q+7 (zq: their zero points), as f32. */
MOE__AVX2_INLINE void moe__i4_pair_avx2(const uint8_t *codes, int64_t i, int q, __m256i zq, __m256 *we, __m256 *wo) {
  __m256i ie, io;
  moe__b4_nibbles_avx2(codes, i, q, &ie, &io);
  *we = _mm256_cvtepi32_ps(_mm256_sub_epi32(ie, zq));
  *wo = _mm256_cvtepi32_ps(_mm256_sub_epi32(io, zq));
}
#endif

/* ---- MXFP4 (e2m1 codes, an e8m0 scale per 32 k) -------------------------------------------------
 * Scalar: moe_e2m1_to_f32 (sign in bit 3) x moe_e8m0_to_f32 (2^(e - 127); 255 NaN). */
#ifdef MOE__HAVE_AVX512
static const uint16_t moe__e2m1_bf16[32] = {
    0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0, 0x8000, 0xBF00, 0xBF80, 0xBFC0, 0xC000, 0xC040, 0xC080, 0xC0C0,
    0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0, 0x8000, 0xBF00, 0xBF80, 0xBFC0, 0xC000, 0xC040, 0xC080, 0xC0C0};
/* Folding a scale into decoded bf16 words (the AMX tier and the AVX-512 folded path): e2m1 times
 * 2^(e - 127) is its bf16 with (e - 127) << 7 added to every nonzero word, exact for e in [2, 252],
 * where every product is a normal bf16. 1 when the scales of a panel's first nv columns (meta: ng
 * groups of 32 bytes) all lie there; padded columns hold zero codes, whatever their scale. */
MOE__AVX512_BASE MOE__INLINE int moe__e8m0_foldable(const uint8_t *meta, int64_t ng, int32_t nv) {
  const uint64_t cols = nv >= 32 ? 0xFFFFFFFFu : ((uint64_t)1 << nv) - 1;
  __mmask64 bad = 0;
  for (int64_t g = 0; g < ng; g += 2) { /* two groups a load */
    const __mmask64 mk = (__mmask64)(g + 1 < ng ? cols | cols << 32 : cols);
    const __m512i x = _mm512_maskz_loadu_epi8(mk, meta + 32 * g);
    bad |= _mm512_mask_cmplt_epu8_mask(mk, x, _mm512_set1_epi8(2)) | _mm512_mask_cmpgt_epu8_mask(mk, x, _mm512_set1_epi8((char)252));
  }
  return !bad;
}
/* The adds of the 16 columns' scales at e, in both words of a column's dword (layout (a)). */
MOE__AVX512_BASE MOE__INLINE __m512i moe__e8m0_adds(const uint8_t *e) {
  const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)e);
  const __m512i d = _mm512_and_si512(_mm512_slli_epi32(_mm512_sub_epi32(_mm512_cvtepu8_epi32(x), _mm512_set1_epi32(127)), 7),
                                     _mm512_set1_epi32(0xFFFF));
  return _mm512_or_si512(d, _mm512_slli_epi32(d, 16));
}
/* Decoded bf16 words v with the adds applied to the nonzero ones (±0 stays). */
MOE__AVX512_BASE MOE__INLINE __m512i moe__e8m0_fold(__m512i v, __m512i adds) {
  return _mm512_mask_add_epi16(v, _mm512_test_epi16_mask(v, _mm512_set1_epi16(0x7FFF)), v, adds);
}
#endif
#ifdef MOE__HAVE_AVX2
/* e2m1 of pair i for the 8 columns 8q..8q+7 as f32: vpermps over the 8 magnitudes, bit 3 the sign. */
MOE__AVX2_INLINE void moe__e2m1_pair_avx2(const uint8_t *codes, int64_t i, int q, __m256 *we, __m256 *wo) {
  const __m256 mag = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
  __m256i ie, io;
  moe__b4_nibbles_avx2(codes, i, q, &ie, &io);
  *we = _mm256_xor_ps(_mm256_permutevar8x32_ps(mag, ie), _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(ie, _mm256_set1_epi32(8)), 28)));
  *wo = _mm256_xor_ps(_mm256_permutevar8x32_ps(mag, io), _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(io, _mm256_set1_epi32(8)), 28)));
}
/* The e8m0 scales of 8 columns as f32 (0: 2^-127, 255: NaN). */
MOE__AVX2_INLINE __m256 moe__e8m0_avx2(const uint8_t *e) {
  const __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)e));
  __m256i bits = _mm256_slli_epi32(x, 23);
  bits = _mm256_blendv_epi8(bits, _mm256_set1_epi32(0x00400000), _mm256_cmpeq_epi32(x, _mm256_setzero_si256()));
  bits = _mm256_blendv_epi8(bits, _mm256_set1_epi32(0x7FC00000), _mm256_cmpeq_epi32(x, _mm256_set1_epi32(255)));
  return _mm256_castsi256_ps(bits);
}
#endif

/* ---- INT4 W4A8 (u4 codes, a zero point and an f32 scale per group; u8 activations) ---------------
 * Layout (d): 4 k per line; the low nibbles hold columns 0-15 as (a) with KR = 4, the high nibbles
 * columns 16-31. Scalar: the nibble q, summed as (a - 128)(q - zero). */
#ifdef MOE__HAVE_AVX512
/* One W4A8 line (layout (d)) -> the u8 codes of columns 0-15 and 16-31. */
MOE__AVX512_BASE MOE__INLINE void moe__q4_line(const uint8_t *line, __m512i *c0, __m512i *c1) {
  const __m512i m4 = _mm512_set1_epi8(15);
  __m512i v = _mm512_load_si512(line);
  *c0 = _mm512_and_si512(v, m4);
  *c1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
}
#endif
#ifdef MOE__HAVE_AVX2
/* The u8 codes of half h (low or high nibbles) of the 32 bytes at `at` of a (d) line. */
MOE__AVX2_INLINE __m256i moe__q4_codes_avx2(const uint8_t *at, int h) {
  const __m256i line = _mm256_load_si256((const __m256i *)(const void *)at);
  return _mm256_and_si256(h ? _mm256_srli_epi16(line, 4) : line, _mm256_set1_epi8(15));
}
#endif

#ifdef MOE__HAVE_AVX512
/* The decoder's tables for precision p. */
static inline MOE__INLINE void moe__tables_of(moe_precision p, moe__tables *t) {
  memset(t, 0, sizeof *t);
  if (p == MOE_PREC_FP8) {
    memcpy(&t->hi0, moe__e4m3_bf16_hi, 64), memcpy(&t->hi1, moe__e4m3_bf16_hi + 64, 64);
    memcpy(&t->lo0, moe__e4m3_bf16_lo, 64), memcpy(&t->lo1, moe__e4m3_bf16_lo + 64, 64);
  } else {
    float v[32];
    memcpy(p == MOE_PREC_MXFP4 ? &t->hi0 : &t->lo0, p == MOE_PREC_MXFP4 ? moe__e2m1_bf16 : moe__int5_bf16, 64);
    for (int c = 0; c < 32; c++) v[c] = p == MOE_PREC_MXFP4 ? moe_bf16_to_f32(moe__e2m1_bf16[c % 16]) : (float)(c < 16 ? c : c - 32);
    memcpy(&t->f32, v, 64), memcpy(&t->f32_hi, v + 16, 64);
  }
}
#endif

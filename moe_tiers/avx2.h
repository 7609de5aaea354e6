/* moe_tiers/avx2.h — the AVX2 and AVX-VNNI tiers of moe_gemm.h: their microkernels for every
 * precision and their row operations. Included by moe_gemm.h inside its implementation (after the
 * AVX-512 and AMX tiers); not a header to include on its own.
 */
/* ---- AVX2 and AVX-VNNI kernels -------------------------------------------------------------------
 * For CPUs without AVX-512 (Intel client cores, Zen 2/3): the same packed panels, 8 columns per ymm.
 * BF16/FP16: each (a) line's dwords hold a column's bf16 pair; `<< 16` and `& 0xFFFF0000` widen the
 * even and odd element to f32, two FMAs take them, one chain per column in k order. INT8: the
 * activations as a - 128 (signed) and vpmaddubsw(|w|, sign(a - 128, w)) then vpmaddwd(., 1): each
 * 16-bit pair sum is at most 2 * 128 * 127 = 32512 < 32767, so nothing saturates and the int32 sum
 * is exactly sum_k (a - 128) w, the same integer as vpdpbusd's sum minus the compensation; AVX-VNNI
 * runs vpdpbusd on ymm (u8 x s8, then minus comp). Either way INT8 gives the bits of the other tiers.
 * Tiles of R rows x 16 columns (below); a call runs each panel half (gemm1: gate, then up) into f32
 * totals, then the activation or the top-k weight. FP8, INT4 and MXFP4: see "the low-bit precisions
 * on AVX2" below. */
#ifdef MOE__HAVE_AVX2 /* (moe_gemm.h: the gate, and the target attributes of the ISA table) */

/* Lanes < left all ones (maskload/maskstore). */
MOE__AVX2 __m256i moe__mask8(int64_t left) {
  const int32_t n = (int32_t)(left >= 8 ? 8 : left > 0 ? left : 0);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* e^x as moe__exp_avx512 (x from -86, no subnormal result): the same polynomial; 2^n in two halves (each a normal power of two). */
MOE__AVX2 __m256 moe__exp_avx2(__m256 x) {
  __m256 n, r, p;
  __m256i h1, h2;
  x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
  x = _mm256_max_ps(_mm256_set1_ps(-86.0f), x);
  n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  h1 = _mm256_srai_epi32(_mm256_cvtps_epi32(n), 1);
  h2 = _mm256_sub_epi32(_mm256_cvtps_epi32(n), h1);
  p = _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h1, _mm256_set1_epi32(127)), 23)));
  return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h2, _mm256_set1_epi32(127)), 23)));
}

/* act(g, u) for 8 columns (see moe__act). */
MOE__AVX2 __m256 moe__act_avx2(moe_activation act, __m256 g, __m256 u, float alpha, float limit) {
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 z;
  if (act == MOE_ACT_GELU_TANH) {
    __m256 g3 = _mm256_mul_ps(_mm256_mul_ps(g, g), g);
    z = _mm256_mul_ps(_mm256_set1_ps(2.0f * 0.7978845608028654f), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), g3, g));
  } else if (act == MOE_ACT_SWIGLU_OAI) {
    g = _mm256_min_ps(_mm256_set1_ps(limit), g);
    u = _mm256_max_ps(_mm256_set1_ps(-limit), _mm256_min_ps(_mm256_set1_ps(limit), u));
    u = _mm256_add_ps(u, one);
    z = _mm256_mul_ps(_mm256_set1_ps(alpha), g);
  } else {
    z = g;
  }
  return _mm256_div_ps(_mm256_mul_ps(g, u), _mm256_add_ps(one, moe__exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), z))));
}

/* Epilogues from the f32 totals of a call (row r: 64 floats; gemm1: gate 0-31, up 32-63). */
MOE__AVX2 void moe__store_avx2(const moe_gemm_args *g, const float *tot, int gemm1) {
  for (int32_t r = 0; r < g->mr; r++)
    for (int32_t c = 0; c < g->nr; c += 8) {
      const __m256i mk = moe__mask8(g->nr - c);
      __m256 v = _mm256_load_ps(tot + 64 * r + c);
      if (g->bias) v = _mm256_add_ps(v, _mm256_maskload_ps(g->bias + c, mk));
      if (gemm1) {
        __m256 u = _mm256_load_ps(tot + 64 * r + 32 + c);
        if (g->bias_up) u = _mm256_add_ps(u, _mm256_maskload_ps(g->bias_up + c, mk));
        _mm256_maskstore_ps(g->c + r * g->ldc + c, mk, moe__act_avx2(g->act, v, u, g->alpha, g->limit));
      } else {
        float *o = g->c_rows[r] + c;
        _mm256_maskstore_ps(o, mk, _mm256_fmadd_ps(v, _mm256_set1_ps(g->row_weight[r]), _mm256_maskload_ps(o, mk)));
      }
    }
}

/* The tiles: R rows x 16 columns (half h of a panel: its lines' bytes 64h..64h+63, two ymm), one
 * function per R through always_inline with a constant R. BF16: R <= 4 (8 accumulators, 4 widened
 * weight vectors, a pair of row values); INT8: R <= 6 with vpdpbusd, R <= 4 with vpmaddubsw; W4A8: R <= 4
 * (6 rows, 12 accumulators with the nibble mask and the flip, spilled: VNNI in cache 400 vs 680 GOPS). */

/* The k steps i of [lo, hi) whose kr elements all lie in [k0, k1): [*in0, *in1). The tiles run
 * STEP(0) there (a row's step is one dword load) and STEP(1) at the edges (moe__group_in masks it):
 * the masking's compare and branch per row and step cost the tiles up to half their speed. */
static inline void moe__interior(int64_t k0, int64_t k1, int kr, int64_t lo, int64_t hi, int64_t *in0, int64_t *in1) {
  *in0 = moe__clamp64((k0 + kr - 1) / kr, lo, hi);
  *in1 = moe__clamp64(k1 / kr, *in0, hi);
}
/* Software prefetch of what the call reads next (the up panel, then g->w_next), one line per k
 * step of the prefill passes: those passes re-read a panel from L2 while the prefetches bring the
 * next one in, so DRAM streams under the compute instead of stalling each call's first pass. */
typedef struct moe__pf {
  const uint8_t *p, *end, *next, *next_end;
} moe__pf;
static inline moe__pf moe__pf_init(const moe_gemm_args *g, const uint8_t *from, const uint8_t *to) {
  moe__pf f;
  f.p = from, f.end = to, f.next = g->w_next, f.next_end = g->w_next ? g->w_next + g->w_next_bytes : NULL;
  return f;
}
MOE__AVX2_INLINE void moe__pf_line(moe__pf *f) {
  if (f->p >= f->end) {
    if (!f->next) return;
    f->p = f->next, f->end = f->next_end, f->next = NULL;
  }
  _mm_prefetch((const char *)f->p, _MM_HINT_T1);
  f->p += 64;
}

/* The three parts of a tile's k loop: edge steps (FILL the rows' masked dwords, STEP(1)), the interior
 * (STEP(0), one prefetch each through the cursor pf, none when pf is NULL), edge steps. */
#define MOE__SPLIT_LOOP(i, lo, in0, in1, hi, FILL, STEP, pf)                                                          \
  for (i = lo; i < in0; i++) {                                                                                        \
    FILL;                                                                                                             \
    STEP(1)                                                                                                           \
  }                                                                                                                   \
  for (; i < in1; i++) {                                                                                              \
    STEP(0)                                                                                                           \
    if (pf) moe__pf_line(pf);                                                                                         \
  }                                                                                                                   \
  for (; i < hi; i++) {                                                                                               \
    FILL;                                                                                                             \
    STEP(1)                                                                                                           \
  }
/* Row r's dword at step i: edge[r] (filled by moe__edge_fill), else a plain load. The masked reads
 * are gathered before the step, apart from the accumulators: with them inside the step the compiler
 * kept the accumulators in memory in every loop. */
#define MOE__A_STEP(a, i, edge_r, edge) ((edge) ? (edge_r) : moe__load_u32((a) + 4 * (size_t)(i)))
static inline void moe__edge_fill(const moe_gemm_args *g, int32_t r0, int R, int64_t i, int64_t k0, int64_t k1, int kr, size_t elt, int pad,
                                  uint32_t *edge) {
  for (int r = 0; r < R; r++) edge[r] = moe__group_in((const uint8_t *)g->a[r0 + r], i, k0, k1, kr, elt, pad);
}

MOE__AVX2_INLINE void moe__bf16_tile_avx2(const moe_gemm_args *g, moe_precision p, const uint8_t *codes, int h0, const int NH, int32_t r0,
                                          const int R, float *t, moe__pf *pf) { /* BF16 panels have no header: codes = panel */
  const __m256i hi = _mm256_set1_epi32((int)0xFFFF0000u);
  const int64_t pairs = (g->kred + 1) / 2;
  (void)p;
  __m256 acc[4][4];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < 2 * NH; v++) acc[r][v] = _mm256_setzero_ps();
  int64_t i, in0, in1;
  uint32_t ae[6]; /* the rows' masked dwords at an edge step */
  moe__interior(0, g->kred, 2, 0, pairs, &in0, &in1);
#define MOE__BF16_STEP(edge)                                                                                          \
  for (int hh = 0; hh < NH; hh++) {                                                                                   \
    const uint8_t *line = codes + 128 * (size_t)i + 64 * (size_t)(h0 + hh);                                           \
    const __m256i w0 = _mm256_load_si256((const __m256i *)(const void *)line), w1 = _mm256_load_si256((const __m256i *)(const void *)(line + 32)); \
    const __m256 we0 = _mm256_castsi256_ps(_mm256_slli_epi32(w0, 16)), wo0 = _mm256_castsi256_ps(_mm256_and_si256(w0, hi)); \
    const __m256 we1 = _mm256_castsi256_ps(_mm256_slli_epi32(w1, 16)), wo1 = _mm256_castsi256_ps(_mm256_and_si256(w1, hi)); \
    for (int r = 0; r < R; r++) {                                                                                     \
      const __m256i d = _mm256_set1_epi32((int)MOE__A_STEP((const uint8_t *)g->a[r0 + r], i, ae[r], edge));           \
      const __m256 a0 = _mm256_castsi256_ps(_mm256_slli_epi32(d, 16)), a1 = _mm256_castsi256_ps(_mm256_and_si256(d, hi)); \
      acc[r][2 * hh] = _mm256_fmadd_ps(a1, wo0, _mm256_fmadd_ps(a0, we0, acc[r][2 * hh]));                            \
      acc[r][2 * hh + 1] = _mm256_fmadd_ps(a1, wo1, _mm256_fmadd_ps(a0, we1, acc[r][2 * hh + 1]));                    \
    }                                                                                                                 \
  }
  MOE__SPLIT_LOOP(i, 0, in0, in1, pairs, moe__edge_fill(g, r0, R, i, 0, g->kred, 2, 2, 0, ae), MOE__BF16_STEP, pf)
#undef MOE__BF16_STEP
  for (int r = 0; r < R; r++)
    for (int v = 0; v < 2 * NH; v++) _mm256_store_ps(t + 64 * r + 16 * h0 + 8 * v, acc[r][v]);
}

/* INT8 (c4 panels with the comp/scale header): exact int32 sums, dequantized as the other tiers. */
MOE__AVX2_INLINE void moe__qc8_dequant_avx2(const moe_gemm_args *g, const uint8_t *panel, int h, int32_t r, __m256i s0, __m256i s1,
                                            int vnni, float *t) {
  for (int v = 0; v < 2; v++) {
    const int c = 16 * h + 8 * v;
    __m256i s = v ? s1 : s0;
    if (vnni) s = _mm256_sub_epi32(s, _mm256_loadu_si256((const __m256i *)(const void *)(panel + 4 * c)));
    const __m256 col_scale = _mm256_loadu_ps((const float *)(const void *)(panel + MOE_NR * 4 + 4 * c));
    _mm256_store_ps(t + c, _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(g->a_scale[r])), col_scale));
  }
}
MOE__AVX2_INLINE void moe__qc8_tile_avx2(const moe_gemm_args *g, moe_precision p, const uint8_t *panel, int h0, const int NH, int32_t r0,
                                         const int R, float *t, moe__pf *pf) {
  const uint8_t *codes = panel + moe__codes_offset(p);
  const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);
  const int64_t quads = (g->kred + 3) / 4;
  __m256i acc[4][4];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < 2 * NH; v++) acc[r][v] = _mm256_setzero_si256();
  int64_t i, in0, in1;
  uint32_t ae[6]; /* the rows' masked dwords at an edge step */
  moe__interior(0, g->kred, 4, 0, quads, &in0, &in1);
#define MOE__QC8_STEP(edge)                                                                                           \
  for (int hh = 0; hh < NH; hh++) {                                                                                   \
    const uint8_t *line = codes + 128 * (size_t)i + 64 * (size_t)(h0 + hh);                                           \
    const __m256i w0 = _mm256_load_si256((const __m256i *)(const void *)line), w1 = _mm256_load_si256((const __m256i *)(const void *)(line + 32)); \
    const __m256i aw0 = _mm256_abs_epi8(w0), aw1 = _mm256_abs_epi8(w1);                                               \
    for (int r = 0; r < R; r++) {                                                                                     \
      const __m256i a = _mm256_xor_si256(_mm256_set1_epi32((int)MOE__A_STEP((const uint8_t *)g->a[r0 + r], i, ae[r], edge)), flip); \
      acc[r][2 * hh] = _mm256_add_epi32(acc[r][2 * hh], _mm256_madd_epi16(_mm256_maddubs_epi16(aw0, _mm256_sign_epi8(a, w0)), ones)); \
      acc[r][2 * hh + 1] = _mm256_add_epi32(acc[r][2 * hh + 1], _mm256_madd_epi16(_mm256_maddubs_epi16(aw1, _mm256_sign_epi8(a, w1)), ones)); \
    }                                                                                                                 \
  }
  MOE__SPLIT_LOOP(i, 0, in0, in1, quads, moe__edge_fill(g, r0, R, i, 0, g->kred, 4, 1, 0x80, ae), MOE__QC8_STEP, pf)
#undef MOE__QC8_STEP
  for (int r = 0; r < R; r++)
    for (int hh = 0; hh < NH; hh++) moe__qc8_dequant_avx2(g, panel, h0 + hh, r0 + r, acc[r][2 * hh], acc[r][2 * hh + 1], 0, t + 64 * r);
}
MOE__AVXVNNI_INLINE void moe__qc8_tile_avxvnni(const moe_gemm_args *g, moe_precision p, const uint8_t *panel, int h0, const int NH, int32_t r0,
                                               const int R, float *t, moe__pf *pf) {
  const uint8_t *codes = panel + moe__codes_offset(p);
  const int64_t quads = (g->kred + 3) / 4;
  __m256i acc[6][4];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < 2 * NH; v++) acc[r][v] = _mm256_setzero_si256();
  int64_t i, in0, in1;
  uint32_t ae[6]; /* the rows' masked dwords at an edge step */
  moe__interior(0, g->kred, 4, 0, quads, &in0, &in1);
#define MOE__VNNI_STEP(edge)                                                                                          \
  for (int hh = 0; hh < NH; hh++) {                                                                                   \
    const uint8_t *line = codes + 128 * (size_t)i + 64 * (size_t)(h0 + hh);                                           \
    const __m256i w0 = _mm256_load_si256((const __m256i *)(const void *)line), w1 = _mm256_load_si256((const __m256i *)(const void *)(line + 32)); \
    for (int r = 0; r < R; r++) {                                                                                     \
      const __m256i a = _mm256_set1_epi32((int)MOE__A_STEP((const uint8_t *)g->a[r0 + r], i, ae[r], edge));           \
      acc[r][2 * hh] = _mm256_dpbusd_avx_epi32(acc[r][2 * hh], a, w0);                                                \
      acc[r][2 * hh + 1] = _mm256_dpbusd_avx_epi32(acc[r][2 * hh + 1], a, w1);                                        \
    }                                                                                                                 \
  }
  MOE__SPLIT_LOOP(i, 0, in0, in1, quads, moe__edge_fill(g, r0, R, i, 0, g->kred, 4, 1, 0x80, ae), MOE__VNNI_STEP, pf)
#undef MOE__VNNI_STEP
  for (int r = 0; r < R; r++)
    for (int hh = 0; hh < NH; hh++) moe__qc8_dequant_avx2(g, panel, h0 + hh, r0 + r, acc[r][2 * hh], acc[r][2 * hh + 1], 1, t + 64 * r);
}


/* ---- the low-bit precisions on AVX2 -------------------------------------------------------------
 * Decoded in registers, 8 columns at a time, into f32 (FP8, INT4-W4A16, MXFP4: the even and odd
 * element of a pair, as the BF16 tile) or into unsigned codes (W4A8: a k quad per lane, the signed
 * operand being a - 128), group by group: a group's sums start at zero and at its end
 *   tot[r][c] = fma(sum, scale[c], tot[r][c])          (W4A8: sum - zero[c] * sum_k (a - 128) first)
 * as the AVX-512 kernels do, so W4A8 keeps the bits of the other tiers. The decoders (moe_tiers/
 * decode.h) use no byte or word permutes: e4m3 as fp16 with its fields shifted in place and
 * vcvtph2ps, e2m1 through vpermps over its 8 magnitudes and the sign bit, int4 as q - zero. */

/* f32 scale of 8 columns (col0..col0+7) of group gi: f32 meta, or e8m0 (moe__e8m0_avx2). */
MOE__AVX2 __m256 moe__lb_scale_avx2(moe_precision p, const uint8_t *meta, int64_t gi, int col0) {
  const size_t cell = (size_t)gi * MOE_NR + (size_t)col0;
  if (moe__meta_of(p) == MOE__META_E8M0) return moe__e8m0_avx2(meta + cell);
  return _mm256_loadu_ps((const float *)(const void *)(meta + 4 * cell));
}

/* The even and odd element of pair i for the 8 columns 8q..8q+7 of a panel, as f32 (before the
 * group scale; int4: q - zero with the group's zero points zq; fp8: the value x 2^-8): decode.h. */
MOE__AVX2_INLINE void moe__lb_pair_avx2(moe_precision p, const uint8_t *codes, int64_t i, int q, __m256i zq, __m256 *we, __m256 *wo) {
  if (p == MOE_PREC_FP8) moe__fp8_pair_avx2(codes, i, q, we, wo);
  else if (p == MOE_PREC_MXFP4) moe__e2m1_pair_avx2(codes, i, q, we, wo);
  else moe__i4_pair_avx2(codes, i, q, zq, we, wo);
}

/* FP8, INT4-W4A16, MXFP4 for 1-2 rows (decode): R rows x the panel's 32 columns, decoded in registers, into t;
 * the weights stream once, in order. */
MOE__AVX2_INLINE void moe__lb16_tile_avx2(const moe_gemm_args *g, moe_precision p, const uint8_t *panel, const int R, float *t) {
  const __m256i hi = _mm256_set1_epi32((int)0xFFFF0000u);
  const uint8_t *codes = panel, *meta = panel + moe__meta_offset(p, g->kpad);
  const int64_t ng = moe__cdiv(g->kred, g->kgroup);
  for (int64_t k0 = 0, gi = 0; k0 < g->kred; k0 += g->kgroup, gi++) {
    const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;
    __m256 acc[2][4];
    __m256i zq[4];
    for (int v = 0; v < 4; v++) {
      zq[v] = p == MOE_PREC_INT4_W4A16 ? _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(meta + (size_t)ng * MOE_NR * 4 + (size_t)gi * MOE_NR + 8 * (size_t)v)))
                                      : _mm256_setzero_si256();
      for (int r = 0; r < R; r++) acc[r][v] = _mm256_setzero_ps();
    }
    int64_t i, in0, in1;
    uint32_t ae[6]; /* the rows' masked dwords at an edge step */
    moe__interior(k0, k1, 2, k0 / 2, (k1 + 1) / 2, &in0, &in1);
#define MOE__LB16_STEP(edge)                                                                                          \
    for (int v = 0; v < 4; v++) {                                                                                     \
      __m256 we, wo;                                                                                                  \
      moe__lb_pair_avx2(p, codes, i, v, zq[v], &we, &wo);                                                             \
      for (int r = 0; r < R; r++) {                                                                                   \
        const __m256i d = _mm256_set1_epi32((int)MOE__A_STEP((const uint8_t *)g->a[r], i, ae[r], edge));              \
        const __m256 a0 = _mm256_castsi256_ps(_mm256_slli_epi32(d, 16)), a1 = _mm256_castsi256_ps(_mm256_and_si256(d, hi)); \
        acc[r][v] = _mm256_fmadd_ps(a1, wo, _mm256_fmadd_ps(a0, we, acc[r][v]));                                      \
      }                                                                                                               \
    }
    MOE__SPLIT_LOOP(i, k0 / 2, in0, in1, (k1 + 1) / 2, moe__edge_fill(g, 0, R, i, k0, k1, 2, 2, 0, ae), MOE__LB16_STEP, NULL)
#undef MOE__LB16_STEP
    for (int v = 0; v < 4; v++) {
      const __m256 s = moe__lb_scale_avx2(p, meta, gi, 8 * v);
      for (int r = 0; r < R; r++) {
        float *o = t + 64 * r + 8 * v;
        _mm256_store_ps(o, _mm256_fmadd_ps(moe__lb_unit_avx2(p, acc[r][v]), s, _mm256_load_ps(o)));
      }
    }
  }
}

/* sum_k (a[k] - 128) over n bytes, as moe__sum_s8 */
MOE__AVX2 int32_t moe__sum_s8_avx2(const uint8_t *a, int64_t n) {
  __m256i acc = _mm256_setzero_si256();
  int64_t i = 0, s;
  int64_t lanes[4];
  for (; i + 32 <= n; i += 32) acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_loadu_si256((const __m256i *)(const void *)(a + i)), _mm256_setzero_si256()));
  _mm256_storeu_si256((__m256i *)(void *)lanes, acc);
  s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; i++) s += a[i];
  return (int32_t)(s - 128 * n);
}
/* moe_sum_groups_u8 */
MOE__AVX2 void moe__sum_groups_u8_avx2(const uint8_t *q, int64_t n, int32_t group, int32_t *sums) {
  for (int64_t k0 = 0; k0 < n; k0 += group) sums[k0 / group] = moe__sum_s8_avx2(q + k0, k0 + group < n ? group : n - k0);
}
/* Row r's sum of (a - 128) over group gi, [k0, k1): the caller's (a_group_sum), else summed here. */
MOE__AVX2_INLINE int32_t moe__group_asum_avx2(const moe_gemm_args *g, int32_t r, int64_t gi, int64_t k0, int64_t k1) {
  return g->a_group_sum ? g->a_group_sum[r][gi] : moe__sum_s8_avx2((const uint8_t *)g->a[r] + k0, k1 - k0);
}

/* VEX vpdpbusd (AVX-VNNI): u8 x s8 quads into int32 */
MOE__AVXVNNI __m256i moe__dpbusd_ymm(__m256i acc, __m256i a_u8, __m256i w_s8) { return _mm256_dpbusd_avx_epi32(acc, a_u8, w_s8); }

/* W4A8: codes (0..15) x (a - 128), exact int32 group sums; VNNI: vpdpbusd, else vpmaddubsw (codes
 * unsigned, |a - 128| <= 127: pair sums <= 2 * 15 * 127, no saturation) + vpmaddwd. */
/* One k quad i of a W4A8 tile: codes x (a - 128) into acc[r][v] (v: the 8-column blocks of halves h0..). */
#define MOE__Q4_STEP(attr, name, vnni)                                                                                \
  attr void name(const moe_gemm_args *g, const uint8_t *panel, int64_t i, int h0, const int NH,                       \
                 int32_t r0, const int R, const int edge, const uint32_t *ae, __m256i (*acc)[4]) {                    \
    const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);                                   \
    for (int v = 0; v < 2 * NH; v++) { /* half h: low (h = 0) or high nibbles; v & 1: bytes 32.. */                   \
      const int h = h0 + v / 2;                                                                                       \
      const __m256i c = moe__q4_codes_avx2(panel + 64 * (size_t)i + 32 * (size_t)(v & 1), h);                         \
      for (int r = 0; r < R; r++) {                                                                                   \
        const __m256i a = _mm256_xor_si256(_mm256_set1_epi32((int)MOE__A_STEP((const uint8_t *)g->a[r0 + r], i, ae[r], edge)), flip); \
        acc[r][v] = vnni ? moe__dpbusd_ymm(acc[r][v], c, a)                                                           \
                         : _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(_mm256_maddubs_epi16(c, a), ones));          \
      }                                                                                                               \
    }                                                                                                                 \
  }
MOE__Q4_STEP(MOE__AVX2_INLINE, moe__q4_step_avx2, 0)
MOE__Q4_STEP(MOE__AVXVNNI_INLINE, moe__q4_step_avxvnni, 1)
#undef MOE__Q4_STEP

#define MOE__Q4_TILE(attr, name, step)                                                                                \
  attr void name(const moe_gemm_args *g, moe_precision p, const uint8_t *panel, int h0, const int NH, int32_t r0,     \
                 const int R, float *t, moe__pf *pf) {                                                                \
    const uint8_t *meta = panel + moe__meta_offset(p, g->kpad);                                                       \
    const int64_t ng = moe__cdiv(g->kred, g->kgroup);                                                                 \
    for (int64_t k0 = 0, gi = 0; k0 < g->kred; k0 += g->kgroup, gi++) {                                               \
      const int64_t k1 = k0 + g->kgroup < g->kred ? k0 + g->kgroup : g->kred;                                         \
      __m256i acc[MOE__Q4_MAXR][4];                                                                                   \
      int32_t asum[MOE__Q4_MAXR];                                                                                     \
      for (int r = 0; r < R; r++) {                                                                                   \
        asum[r] = moe__group_asum_avx2(g, r0 + r, gi, k0, k1);                                                        \
        for (int v = 0; v < 2 * NH; v++) acc[r][v] = _mm256_setzero_si256();                                          \
      }                                                                                                               \
      int64_t i, in0, in1;                                                                                            \
      uint32_t ae[MOE__Q4_MAXR];                                                                                      \
      moe__interior(k0, k1, 4, k0 / 4, (k1 + 3) / 4, &in0, &in1);                                                     \
      for (i = k0 / 4; i < in0; i++) {                                                                                \
        moe__edge_fill(g, r0, R, i, k0, k1, 4, 1, 0x80, ae);                                                          \
        step(g, panel, i, h0, NH, r0, R, 1, ae, acc);                                                                 \
      }                                                                                                               \
      for (; i < in1; i++) {                                                                                          \
        step(g, panel, i, h0, NH, r0, R, 0, ae, acc);                                                                 \
        if (pf) moe__pf_line(pf);                                                                                     \
      }                                                                                                               \
      for (; i < (k1 + 3) / 4; i++) {                                                                                 \
        moe__edge_fill(g, r0, R, i, k0, k1, 4, 1, 0x80, ae);                                                          \
        step(g, panel, i, h0, NH, r0, R, 1, ae, acc);                                                                 \
      }                                                                                                               \
      for (int v = 0; v < 2 * NH; v++) {                                                                              \
        const int col0 = 16 * h0 + 8 * v;                                                                             \
        const __m256 s = moe__lb_scale_avx2(p, meta, gi, col0);                                                       \
        const __m256i z = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(meta + (size_t)ng * MOE_NR * 4 + (size_t)gi * MOE_NR + (size_t)col0))); \
        for (int r = 0; r < R; r++) {                                                                                 \
          float *o = t + 64 * r + col0;                                                                               \
          const __m256 isum = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r][v], _mm256_mullo_epi32(z, _mm256_set1_epi32(asum[r])))); \
          _mm256_store_ps(o, _mm256_fmadd_ps(isum, s, _mm256_load_ps(o)));                                            \
        }                                                                                                             \
      }                                                                                                               \
    }                                                                                                                 \
  }
#define MOE__Q4_MAXR 4
MOE__Q4_TILE(MOE__AVX2_INLINE, moe__q4_tile_avx2, moe__q4_step_avx2)
MOE__Q4_TILE(MOE__AVXVNNI_INLINE, moe__q4_tile_avxvnni, moe__q4_step_avxvnni)
#undef MOE__Q4_TILE

/* A call: every panel (gemm1: gate then up; gemm2: one or two) into zeroed f32 totals, then the
 * epilogue. Up to 2 rows (decode) run both halves of a line pair in one pass (R x 32 columns), so the
 * weights stream once in order; more rows run each half on its own, rows in tiles of at most MAXR
 * with balanced heights (R x 16 columns: more rows per weight load). W4A8's totals then take the
 * row scale (the AVX-512 kernels' order; INT8's tiles apply it themselves). */
#define MOE__AVX2_GEMM(attr, name, tile, MAXR)                                                                        \
  attr void name(moe_precision p, const moe_gemm_args *g, int gemm1) {                                                \
    MOE__ALIGN64 float tot[MOE_BLOCK_M * 64];                                                                         \
    const int np = gemm1 || g->nr > MOE_NR ? 2 : 1;                                                                   \
    const int32_t tiles = (g->mr + MAXR - 1) / MAXR;                                                                  \
    moe__pf pf = moe__pf_init(g, g->w + g->panel_bytes, g->w + (size_t)np * g->panel_bytes);                          \
    memset(tot, 0, sizeof tot);                                                                                       \
    for (int i = 0; i < np; i++) {                                                                                    \
      const uint8_t *w = g->w + (size_t)i * g->panel_bytes;                                                           \
      float *t = tot + 32 * i;                                                                                        \
      if (g->mr <= 2) {                                                                                               \
        if (g->mr == 1) tile(g, p, w, 0, 2, 0, 1, t, NULL);                                                           \
        else tile(g, p, w, 0, 2, 0, 2, t, NULL);                                                                      \
        continue;                                                                                                     \
      }                                                                                                               \
      for (int h = 0; h < 2; h++)                                                                                     \
        for (int32_t ti = 0, r0 = 0; ti < tiles; ti++) {                                                              \
          const int32_t rows = moe__tile_rows(g->mr, MAXR, ti);                                                       \
          switch (rows) {                                                                                             \
          case 1: tile(g, p, w, h, 1, r0, 1, t + 64 * r0, &pf); break;                                                \
          case 2: tile(g, p, w, h, 1, r0, 2, t + 64 * r0, &pf); break;                                                \
          case 3: tile(g, p, w, h, 1, r0, 3 < MAXR ? 3 : MAXR, t + 64 * r0, &pf); break;                              \
          case 4: tile(g, p, w, h, 1, r0, 4 < MAXR ? 4 : MAXR, t + 64 * r0, &pf); break;                              \
          case 5: tile(g, p, w, h, 1, r0, 5 < MAXR ? 5 : MAXR, t + 64 * r0, &pf); break;                              \
          default: tile(g, p, w, h, 1, r0, MAXR, t + 64 * r0, &pf); break;                                            \
          }                                                                                                           \
          r0 += rows;                                                                                                 \
        }                                                                                                             \
    }                                                                                                                 \
    if (p == MOE_PREC_INT4_W4A8)                                                                                      \
      for (int32_t r = 0; r < g->mr; r++)                                                                             \
        for (int c = 0; c < 64; c += 8)                                                                               \
          _mm256_store_ps(tot + 64 * r + c, _mm256_mul_ps(_mm256_load_ps(tot + 64 * r + c), _mm256_set1_ps(g->a_scale[r]))); \
    moe__store_avx2(g, tot, gemm1);                                                                                   \
  }
MOE__AVX2_GEMM(MOE__AVX2, moe__bf16_gemm_avx2, moe__bf16_tile_avx2, 4)
MOE__AVX2_GEMM(MOE__AVX2, moe__qc8_gemm_avx2, moe__qc8_tile_avx2, 4)
MOE__AVX2_GEMM(MOE__AVXVNNI, moe__qc8_gemm_avxvnni, moe__qc8_tile_avxvnni, 6)
MOE__AVX2_GEMM(MOE__AVX2, moe__q4_gemm_avx2, moe__q4_tile_avx2, 4)
MOE__AVX2_GEMM(MOE__AVXVNNI, moe__q4_gemm_avxvnni, moe__q4_tile_avxvnni, 4)
#undef MOE__AVX2_GEMM

/* FP8, INT4-W4A16, MXFP4 with 3+ rows: each chunk of k pairs is decoded once into f32 for the
 * panel's 32 columns and every row tile reads it, so the decode (10-30 vector ops per 16 weights
 * without byte permutes) is paid once per call, not once per tile. The same sums in the same order
 * as the register tiles (bitwise equal): a group's sums from zero, then tot = fma(sum, s, tot).
 *   dec[pair - i0][q][we 0..7 | wo 0..7]     q: the 8-column blocks of the panel */
#define MOE__LB_CHUNK 64 /* pairs per decoded chunk: 16 KB of f32 */

/* Group gi's k range [k0, k1) and pairs [pair0, pair1) (an odd group edge shares its pair with the
 * neighbour group: each reads only its own element, moe__group_in). */
typedef struct moe__group_span {
  int64_t k0, k1, pair0, pair1;
} moe__group_span;
static inline moe__group_span moe__group_of(const moe_gemm_args *g, int64_t gi) {
  moe__group_span sp;
  sp.k0 = gi * g->kgroup, sp.k1 = sp.k0 + g->kgroup < g->kred ? sp.k0 + g->kgroup : g->kred;
  sp.pair0 = sp.k0 / 2, sp.pair1 = (sp.k1 + 1) / 2;
  return sp;
}

/* Decodes pairs [i0, i1) of a panel into dec, group by group (INT4: each group's zero points). */
MOE__AVX2_INLINE void moe__lb16_decode_avx2(const moe_gemm_args *g, moe_precision p, const uint8_t *codes, const uint8_t *meta,
                                            int64_t i0, int64_t i1, float *dec) {
  const int64_t ng = moe__cdiv(g->kred, g->kgroup);
  for (int64_t gi = 2 * i0 / g->kgroup; gi < ng; gi++) {
    const moe__group_span sp = moe__group_of(g, gi);
    const int64_t s0 = sp.pair0 > i0 ? sp.pair0 : i0, s1 = sp.pair1 < i1 ? sp.pair1 : i1;
    __m256i zq[4];
    if (s0 >= i1) break;
    for (int q = 0; q < 4; q++)
      zq[q] = p == MOE_PREC_INT4_W4A16 ? _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(meta + (size_t)ng * MOE_NR * 4 + (size_t)gi * MOE_NR + 8 * (size_t)q)))
                                       : _mm256_setzero_si256();
    for (int64_t i = s0; i < s1; i++)
      for (int q = 0; q < 4; q++) {
        __m256 we, wo;
        moe__lb_pair_avx2(p, codes, i, q, zq[q], &we, &wo);
        _mm256_store_ps(dec + 64 * (i - i0) + 16 * q, we);
        _mm256_store_ps(dec + 64 * (i - i0) + 16 * q + 8, wo);
      }
  }
}

/* Rows r0..r0+R-1 x the 16 columns of half h over the decoded pairs [i0, i1), group by group: a
 * group's sums start at zero (or from part, where it began in the previous chunk) and at its end go
 * into the totals, tot = fma(sum, scale, tot); a group that goes on into the next chunk is kept in
 * part. So a chunk holds several small groups (MXFP4's 32) or a piece of a large one. */
MOE__AVX2_INLINE void moe__lb16_dec_tile_avx2(const moe_gemm_args *g, moe_precision p, const float *dec, const uint8_t *meta,
                                              int64_t i0, int64_t i1, int h, int32_t r0, const int R, float *part, float *tot,
                                              moe__pf *pf) {
  const __m256i hi = _mm256_set1_epi32((int)0xFFFF0000u);
  const int64_t ng = moe__cdiv(g->kred, g->kgroup);
  for (int64_t gi = 2 * i0 / g->kgroup; gi < ng; gi++) {
    const moe__group_span sp = moe__group_of(g, gi);
    const int64_t k0 = sp.k0, k1 = sp.k1, s0 = sp.pair0 > i0 ? sp.pair0 : i0, s1 = sp.pair1 < i1 ? sp.pair1 : i1;
    int64_t i, in0, in1;
    uint32_t ae[6]; /* the rows' masked dwords at an edge step */
    __m256 acc[4][2];
    if (s0 >= i1) break;
    for (int r = 0; r < R; r++)
      for (int v = 0; v < 2; v++)
        acc[r][v] = s0 > sp.pair0 ? _mm256_load_ps(part + 32 * (r0 + r) + 16 * h + 8 * v) : _mm256_setzero_ps();
    moe__interior(k0, k1, 2, s0, s1, &in0, &in1);
#define MOE__DEC_STEP(edge)                                                                                           \
  {                                                                                                                   \
    const float *w = dec + 64 * (i - i0) + 32 * h;                                                                    \
    const __m256 we0 = _mm256_load_ps(w), wo0 = _mm256_load_ps(w + 8), we1 = _mm256_load_ps(w + 16),                  \
                 wo1 = _mm256_load_ps(w + 24);                                                                        \
    for (int r = 0; r < R; r++) {                                                                                     \
      const __m256i d = _mm256_set1_epi32((int)MOE__A_STEP((const uint8_t *)g->a[r0 + r], i, ae[r], edge));           \
      const __m256 a0 = _mm256_castsi256_ps(_mm256_slli_epi32(d, 16)), a1 = _mm256_castsi256_ps(_mm256_and_si256(d, hi)); \
      acc[r][0] = _mm256_fmadd_ps(a1, wo0, _mm256_fmadd_ps(a0, we0, acc[r][0]));                                      \
      acc[r][1] = _mm256_fmadd_ps(a1, wo1, _mm256_fmadd_ps(a0, we1, acc[r][1]));                                      \
    }                                                                                                                 \
  }
    MOE__SPLIT_LOOP(i, s0, in0, in1, s1, moe__edge_fill(g, r0, R, i, k0, k1, 2, 2, 0, ae), MOE__DEC_STEP, pf)
#undef MOE__DEC_STEP
    if (s1 < sp.pair1) { /* the group goes on in the next chunk */
      for (int r = 0; r < R; r++)
        for (int v = 0; v < 2; v++) _mm256_store_ps(part + 32 * (r0 + r) + 16 * h + 8 * v, acc[r][v]);
      break;
    }
    for (int v = 0; v < 2; v++) {
      const __m256 sc = moe__lb_scale_avx2(p, meta, gi, 16 * h + 8 * v);
      for (int r = 0; r < R; r++) {
        float *o = tot + 64 * (r0 + r) + 16 * h + 8 * v;
        _mm256_store_ps(o, _mm256_fmadd_ps(moe__lb_unit_avx2(p, acc[r][v]), sc, _mm256_load_ps(o)));
      }
    }
  }
}

MOE__AVX2 void moe__lb16_gemm_avx2(moe_precision p, const moe_gemm_args *g, int gemm1) {
  MOE__ALIGN64 float tot[MOE_BLOCK_M * 64], part[MOE_BLOCK_M * 32], dec[MOE__LB_CHUNK * 64];
  const int np = gemm1 || g->nr > MOE_NR ? 2 : 1;
  const int32_t tiles = (g->mr + 3) / 4;
  const int64_t pairs = (g->kred + 1) / 2;
  moe__pf pf;
  memset(tot, 0, sizeof tot);
  if (g->mr <= 2) { /* decode: the weights stream once (both halves of a line pair), decoded in registers */
    for (int pi = 0; pi < np; pi++) {
      if (g->mr == 1) moe__lb16_tile_avx2(g, p, g->w + (size_t)pi * g->panel_bytes, 1, tot + 32 * pi);
      else moe__lb16_tile_avx2(g, p, g->w + (size_t)pi * g->panel_bytes, 2, tot + 32 * pi);
    }
    moe__store_avx2(g, tot, gemm1);
    return;
  }
  pf = moe__pf_init(g, g->w, g->w + (size_t)np * g->panel_bytes); /* ahead of the chunks' decode */
  for (int pi = 0; pi < np; pi++) {
    const uint8_t *codes = g->w + (size_t)pi * g->panel_bytes, *meta = codes + moe__meta_offset(p, g->kpad);
    for (int64_t i0 = 0; i0 < pairs; i0 += MOE__LB_CHUNK) {
      const int64_t i1 = i0 + MOE__LB_CHUNK < pairs ? i0 + MOE__LB_CHUNK : pairs;
      moe__lb16_decode_avx2(g, p, codes, meta, i0, i1, dec);
      for (int h = 0; h < 2; h++)
        for (int32_t ti = 0, r0 = 0; ti < tiles; ti++) {
          const int32_t rows = moe__tile_rows(g->mr, 4, ti);
          float *t = tot + 32 * pi;
          switch (rows) {
          case 1: moe__lb16_dec_tile_avx2(g, p, dec, meta, i0, i1, h, r0, 1, part, t, &pf); break;
          case 2: moe__lb16_dec_tile_avx2(g, p, dec, meta, i0, i1, h, r0, 2, part, t, &pf); break;
          case 3: moe__lb16_dec_tile_avx2(g, p, dec, meta, i0, i1, h, r0, 3, part, t, &pf); break;
          default: moe__lb16_dec_tile_avx2(g, p, dec, meta, i0, i1, h, r0, 4, part, t, &pf); break;
          }
          r0 += rows;
        }
    }
  }
  moe__store_avx2(g, tot, gemm1);
}

#define MOE__AVX2_LB_UKERNELS(attr, fam, kr, sfx, prec, gemm)                                                         \
  attr void moe_##fam##_gemm1_ukernel_4x16c##kr##__##sfx(const moe_gemm_args *g) { gemm(prec, g, 1); }                \
  attr void moe_##fam##_gemm2_ukernel_4x16c##kr##__##sfx(const moe_gemm_args *g) { gemm(prec, g, 0); }
MOE__AVX2_LB_UKERNELS(MOE__AVX2, bf16_fp8w, 2, avx2, MOE_PREC_FP8, moe__lb16_gemm_avx2)
MOE__AVX2_LB_UKERNELS(MOE__AVX2, bf16_qc4w, 2, avx2, MOE_PREC_INT4_W4A16, moe__lb16_gemm_avx2)
MOE__AVX2_LB_UKERNELS(MOE__AVX2, bf16_mxfp4w, 2, avx2, MOE_PREC_MXFP4, moe__lb16_gemm_avx2)
MOE__AVX2_LB_UKERNELS(MOE__AVX2, qu8_qc4w, 4, avx2, MOE_PREC_INT4_W4A8, moe__q4_gemm_avx2)
#undef MOE__AVX2_LB_UKERNELS
MOE__AVXVNNI void moe_qu8_qc4w_gemm1_ukernel_4x16c4__avxvnni(const moe_gemm_args *g) { moe__q4_gemm_avxvnni(MOE_PREC_INT4_W4A8, g, 1); }
MOE__AVXVNNI void moe_qu8_qc4w_gemm2_ukernel_4x16c4__avxvnni(const moe_gemm_args *g) { moe__q4_gemm_avxvnni(MOE_PREC_INT4_W4A8, g, 0); }

/* The kernels of the list (tile rows x columns of one pass: 4x16, VNNI INT8 6x16). */
MOE__AVX2 void moe_bf16_bf16w_gemm1_ukernel_4x16c2__avx2(const moe_gemm_args *g) { moe__bf16_gemm_avx2(MOE_PREC_BF16, g, 1); }
MOE__AVX2 void moe_bf16_bf16w_gemm2_ukernel_4x16c2__avx2(const moe_gemm_args *g) { moe__bf16_gemm_avx2(MOE_PREC_BF16, g, 0); }
MOE__AVX2 void moe_qu8_qc8w_gemm1_ukernel_4x16c4__avx2(const moe_gemm_args *g) { moe__qc8_gemm_avx2(MOE_PREC_INT8, g, 1); }
MOE__AVX2 void moe_qu8_qc8w_gemm2_ukernel_4x16c4__avx2(const moe_gemm_args *g) { moe__qc8_gemm_avx2(MOE_PREC_INT8, g, 0); }
MOE__AVXVNNI void moe_qu8_qc8w_gemm1_ukernel_6x16c4__avxvnni(const moe_gemm_args *g) { moe__qc8_gemm_avxvnni(MOE_PREC_INT8, g, 1); }
MOE__AVXVNNI void moe_qu8_qc8w_gemm2_ukernel_6x16c4__avxvnni(const moe_gemm_args *g) { moe__qc8_gemm_avxvnni(MOE_PREC_INT8, g, 0); }

/* ---- row operations on AVX2 (the same bits as the scalar ones) ---------------------------------- */
/* x / s without a division, as moe__div_scale_avx512 (Markstein's correction; r = 1 / s rounded):
 * the same codes as x / s at every rounding tie (test_kernels --all-scales checks both tiers). */
MOE__AVX2_INLINE __m256 moe__div_scale_avx2(__m256 x, __m256 s, __m256 r) {
  const __m256 y = _mm256_mul_ps(x, r);
  return _mm256_fmadd_ps(_mm256_fnmadd_ps(y, s, x), r, y);
}
/* The low byte of each int32 lane, in order (a code 1..255, or NaN's INT_MIN + 128 -> 128). */
MOE__AVX2_INLINE __m128i moe__low_bytes_avx2(__m256i v) {
  const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                        0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, pick), _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1)));
}
MOE__AVX2 float moe__quantize_row_u8_avx2(const float *x, int64_t n, uint8_t *q) {
  __m256 vmax = _mm256_setzero_ps(), nan = _mm256_setzero_ps(), vscale, vrcp;
  float amax, scale, m[8];
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = _mm256_maskload_ps(x + i, moe__mask8(n - i));
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v));
  }
  _mm256_storeu_ps(m, vmax);
  amax = m[0];
  for (int j = 1; j < 8; j++) amax = m[j] > amax ? m[j] : amax;
  if (_mm256_movemask_ps(nan)) amax = NAN;
  scale = (amax < 1e-7f ? 1e-7f : amax) / 127.0f;
  vscale = _mm256_set1_ps(scale), vrcp = _mm256_set1_ps(1.0f / scale);
  for (int64_t i = 0; i < n; i += 8) {
    __m256 v = moe__div_scale_avx2(_mm256_maskload_ps(x + i, moe__mask8(n - i)), vscale, vrcp);
    v = _mm256_min_ps(_mm256_set1_ps(127.0f), _mm256_max_ps(_mm256_set1_ps(-127.0f), v));
    const __m128i b = moe__low_bytes_avx2(_mm256_add_epi32(_mm256_cvtps_epi32(v), _mm256_set1_epi32(128))); /* RNE */
    if (n - i >= 8) {
      _mm_storel_epi64((__m128i *)(void *)(q + i), b);
    } else {
      uint8_t t[16];
      _mm_storeu_si128((__m128i *)(void *)t, b);
      memcpy(q + i, t, (size_t)(n - i));
    }
  }
  return scale;
}
/* f32 bits -> bf16 bits in the low half of each lane: round to nearest even, NaN quieted
 * (moe_f32_to_bf16 on 8 lanes). */
MOE__AVX2_INLINE __m256i moe__bf16_bits_avx2(__m256i u) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)), _mm256_set1_epi32(0x7F800000));
  return _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
}
/* 8 values a step, their words packed into one 16-byte store (the last step's through a copy). */
MOE__AVX2 void moe__f32_to_bf16_avx2(const float *src, uint16_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i r = moe__bf16_bits_avx2(_mm256_castps_si256(_mm256_maskload_ps(src + i, moe__mask8(n - i))));
    const __m128i w = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
    if (n - i >= 8) {
      _mm_storeu_si128((__m128i *)(void *)(dst + i), w);
    } else {
      uint16_t b[8];
      _mm_storeu_si128((__m128i *)(void *)b, w);
      memcpy(dst + i, b, (size_t)(n - i) * sizeof *b);
    }
  }
}
#include "moe_tiers/transpose8.h" /* moe__word_transpose8_avx2, shared with GPTQ's importer */

/* ---- packing words (moe__pack_panel): moe__pack_words_avx512's steps on 8 columns x 8 steps ------
 * 8 plain rows x 8 steps are loaded as 8 vectors and transposed as 32-bit words, so each vector holds
 * one step's words of 8 columns: 32 bytes of that step's line at byte 32 q for columns 8q..8q+7
 * (layout (d): columns 8q.. in the low nibbles, 8q + 16.. in the high ones, of the same 32 bytes). */
/* One step's packed words from its plain words (moe__pack_word_avx512 on 8 lanes). */
MOE__AVX2_INLINE __m256i moe__pack_word_avx2(int kind, __m256i w) {
  const __m256i nib = _mm256_set1_epi32(0x0F0F0F0F), b0 = _mm256_set1_epi32(0xFF), b1 = _mm256_set1_epi32(0xFF00);
  if (kind == MOE__PW_F16) { /* both halves as fp16 -> f32 -> bf16 */
    const __m256i lo16 = _mm256_and_si256(w, _mm256_set1_epi32(0xFFFF)), hi16 = _mm256_srli_epi32(w, 16);
    const __m256i lo = _mm256_castps_si256(_mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(lo16), _mm256_extracti128_si256(lo16, 1))));
    const __m256i hi = _mm256_castps_si256(_mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(hi16), _mm256_extracti128_si256(hi16, 1))));
    return _mm256_or_si256(moe__bf16_bits_avx2(lo), _mm256_slli_epi32(moe__bf16_bits_avx2(hi), 16));
  }
  if (kind == MOE__PW_NIB_C) {
    __m256i e = _mm256_and_si256(w, nib), o = _mm256_and_si256(_mm256_srli_epi32(w, 4), nib);
    e = _mm256_or_si256(e, _mm256_srli_epi32(e, 4)), o = _mm256_or_si256(o, _mm256_srli_epi32(o, 4));
    e = _mm256_or_si256(_mm256_and_si256(e, b0), _mm256_and_si256(_mm256_srli_epi32(e, 8), b1));
    o = _mm256_or_si256(_mm256_and_si256(o, b0), _mm256_and_si256(_mm256_srli_epi32(o, 8), b1));
    return _mm256_or_si256(e, _mm256_slli_epi32(o, 16));
  }
  if (kind == MOE__PW_NIB_D) {
    const __m256i x = _mm256_or_si256(_mm256_and_si256(w, b0), _mm256_slli_epi32(_mm256_and_si256(w, b1), 8));
    return _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 4)), nib);
  }
  return w;
}
/* One 32-byte piece of a panel line: streaming where it is aligned and the panel was not written
 * before (as moe__pack_store_avx512; the packer fences at its end). */
MOE__AVX2_INLINE void moe__pack_store_avx2(uint8_t *dst, __m256i v, int stream) {
  if (stream && ((uintptr_t)dst & 31) == 0) _mm256_stream_si256((__m256i *)(void *)dst, v);
  else _mm256_storeu_si256((__m256i *)(void *)dst, v);
}
/* 8 columns' rows (src[0..7], NULL past nv) of 8 steps from step st, transposed (sb plain bytes a
 * step); int8 codes summed into sum[0..7]. */
MOE__AVX2_INLINE void moe__pack_rows8_avx2(const uint8_t *const *src, int64_t st, int32_t sb, int32_t *sum, __m256i r[8]) {
  for (int i = 0; i < 8; i++) {
    const uint8_t *p = src[i] ? src[i] + st * sb : NULL;
    r[i] = !p ? _mm256_setzero_si256() : sb == 4 ? _mm256_loadu_si256((const __m256i *)(const void *)p)
                                                 : _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    if (sum && p) { /* the 32 codes' sum, as sum(u8 (c ^ 0x80)) - 32 * 128 */
      int64_t t[4];
      _mm256_storeu_si256((__m256i *)(void *)t, _mm256_sad_epu8(_mm256_xor_si256(r[i], _mm256_set1_epi8((char)0x80)), _mm256_setzero_si256()));
      sum[i] += (int32_t)(t[0] + t[1] + t[2] + t[3]) - 32 * 128;
    }
  }
  moe__word_transpose8_avx2(r);
}
/* FP8 pairs (layout (b): a step's 32 columns in the order 0-3, 16-19, 4-7, 20-23 | 8-11, 24-27, 12-15,
 * 28-31, two bytes each): a transposed word holds two steps of a column; packing the chosen halves of
 * columns 8h.. and 8h + 16.. to 16 bits (within 128-bit lanes) gives that order. 16 steps per block. */
MOE__AVX2_INLINE int64_t moe__pack_fp8_avx2(const uint8_t *const *rows, int32_t nv, int64_t k0, int64_t k_end, uint8_t *codes,
                                            size_t line, int stream) {
  for (; k0 + 32 <= k_end; k0 += 32) {
    __m256i r[4][8];
    for (int q = 0; q < 4; q++)
      if (8 * q < nv) moe__pack_rows8_avx2(rows + 8 * q, k0 / 4, 4, NULL, r[q]);
      else for (int j = 0; j < 8; j++) r[q][j] = _mm256_setzero_si256();
    for (int j = 0; j < 8; j++)
      for (int e = 0; e < 2; e++)
        for (int h = 0; h < 2; h++) {
          const __m256i lo = e ? _mm256_srli_epi32(r[h][j], 16) : _mm256_and_si256(r[h][j], _mm256_set1_epi32(0xFFFF));
          const __m256i hi = e ? _mm256_srli_epi32(r[h + 2][j], 16) : _mm256_and_si256(r[h + 2][j], _mm256_set1_epi32(0xFFFF));
          moe__pack_store_avx2(codes + (size_t)(k0 / 2 + 2 * j + e) * line + 32 * (size_t)h, _mm256_packus_epi32(lo, hi), stream);
        }
  }
  return k0;
}
MOE__AVX2 int64_t moe__pack_words_avx2(const uint8_t *const *src, int32_t nv, int64_t k0, int64_t k_end, int32_t kr, int kind,
                                       uint8_t *codes, size_t line, int32_t *sum, int stream) {
  const int32_t sb = kind == MOE__PW_NIB_D ? 2 : 4; /* plain bytes of a column's step */
  const uint8_t *rows[MOE_NR];
  for (int32_t n = 0; n < MOE_NR; n++) rows[n] = n < nv ? src[n] : NULL;
  if (kind == MOE__PW_FP8) {
    k0 = moe__pack_fp8_avx2(rows, nv, k0, k_end, codes, line, stream);
    _mm_sfence();
    return k0;
  }
  for (; k0 + 8 * kr <= k_end; k0 += 8 * kr) {
    const int64_t st = k0 / kr;
    __m256i r[4][8];
    for (int q = 0; q < 4 && 8 * q < nv; q++) moe__pack_rows8_avx2(rows + 8 * q, st, sb, sum ? sum + 8 * q : NULL, r[q]);
    for (int s = 0; s < 8; s++) /* a line's 32-byte pieces one after the other (streaming stores combine them) */
      for (int q = 0; q < (kind == MOE__PW_NIB_D ? 2 : 4) && 8 * q < nv; q++) {
        __m256i v = moe__pack_word_avx2(kind, r[q][s]);
        if (kind == MOE__PW_NIB_D && 8 * q + 16 < nv) v = _mm256_or_si256(v, _mm256_slli_epi32(moe__pack_word_avx2(kind, r[q + 2][s]), 4));
        moe__pack_store_avx2(codes + (size_t)(st + s) * line + 32 * (size_t)q, v, stream);
      }
  }
  _mm_sfence();
  return k0;
}
MOE__AVX2 void moe__bf16_to_f32_avx2(const uint16_t *src, float *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + i))), 16)));
  for (; i < n; i++) dst[i] = moe_bf16_to_f32(src[i]);
}
MOE__AVX2 void moe__add_row_avx2(float *acc, const float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i mk = moe__mask8(n - i);
    _mm256_maskstore_ps(acc + i, mk, _mm256_add_ps(_mm256_maskload_ps(acc + i, mk), _mm256_maskload_ps(y + i, mk)));
  }
}
#endif /* AVX2 */

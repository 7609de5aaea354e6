/* moe_tiers/avx512.h — the AVX-512 tier of moe_gemm.h (AVX512F/BW/VL/DQ, with VNNI, BF16 and VBMI
 * where a kernel needs them): the epilogues, prefetch plans and the list's AVX-512 kernels; the
 * weight decoders are in moe_tiers/decode.h. The tile functions (one per height, named accumulators)
 * are generated into moe_tiers/avx512_tiles.h by tools/gen_tiles.py. Included by moe_gemm.h inside
 * its implementation; the AMX tier (moe_tiers/amx.h) shares its epilogues. Not a header to include
 * on its own.
 *
 * Compiled with target attributes (no -m flags needed) and chosen at run time. Each row's k loop
 * runs in one accumulator per column in the same order whatever the tile height, so a token's
 * result does not depend on which rows share its tile (bitwise determinism across chunkings). */
#ifdef MOE__HAVE_AVX512 /* (moe_gemm.h: the gate, and the target attributes of the ISA table) */
/* The k loop is not unrolled: with 24 accumulators live, unrolling makes compilers spill them. */
#if defined(__clang__)
#define MOE__NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define MOE__NO_UNROLL _Pragma("GCC unroll 1")
#endif

/* e^x for the activations' 1 + e^-z: x = n ln2 + r, |r| <= ln2/2, degree-6 Taylor polynomial,
 * then p * 2^n by vscalefps (which overflows to Inf on its own). x stops at -86, where e^x is still
 * a normal float: 1 + e^x is 1 from there on, and a subnormal result costs Intel cores a microcode
 * assist per element (an epilogue of large gate sums ran 10x slower on Emerald Rapids). min/max
 * keep x in the second operand so a NaN passes through. */
MOE__AVX512_BASE MOE__INLINE __m512 moe__exp_avx512(__m512 x) {
  __m512 n, r, p;
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
  x = _mm512_max_ps(_mm512_set1_ps(-86.0f), x);
  n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

/* act(g, u) for 16 columns (see moe__act). */
MOE__AVX512_BASE MOE__INLINE __m512 moe__act_avx512(moe_activation act, __m512 g, __m512 u, float alpha, float limit) {
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 z;
  if (act == MOE_ACT_GELU_TANH) { /* 0.5 (1 + tanh(z)) = sigmoid(2z) */
    __m512 g3 = _mm512_mul_ps(_mm512_mul_ps(g, g), g);
    z = _mm512_mul_ps(_mm512_set1_ps(2.0f * 0.7978845608028654f), _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), g3, g));
  } else if (act == MOE_ACT_SWIGLU_OAI) {
    g = _mm512_min_ps(_mm512_set1_ps(limit), g);
    u = _mm512_max_ps(_mm512_set1_ps(-limit), _mm512_min_ps(_mm512_set1_ps(limit), u));
    u = _mm512_add_ps(u, one);
    z = _mm512_mul_ps(_mm512_set1_ps(alpha), g);
  } else {
    z = g;
  }
  return _mm512_div_ps(_mm512_mul_ps(g, u), _mm512_add_ps(one, moe__exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), z))));
}

/* Mask of the first min(left, 16) lanes. */
static inline __mmask16 moe__tail_mask(int64_t left) { return (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1); }
/* Mask of the 16-column vector v (0..3) of a tile with nr valid columns. */
static inline __mmask16 moe__col_mask(int32_t nr, int v) {
  int32_t left = nr - 16 * v;
  return (__mmask16)(left >= 16 ? 0xFFFF : left > 0 ? (1u << left) - 1 : 0);
}

/* Epilogues on one row. gemm1: gate lo/hi and up lo/hi -> act -> 32 columns. gemm2: up to 4
 * vectors (64 columns: two neighbouring panels) -> (+ bias) * top-k weight. */
MOE__AVX512_BASE MOE__INLINE void moe__gemm1_store_avx512(const moe_gemm_args *g, int32_t r, __m512 g0, __m512 g1,
                                                         __m512 u0, __m512 u1) {
  for (int h = 0; h < 2; h++) {
    __mmask16 mk = moe__col_mask(g->nr, h);
    __m512 gv = h ? g1 : g0, uv = h ? u1 : u0;
    if (g->bias) gv = _mm512_add_ps(gv, _mm512_maskz_loadu_ps(mk, g->bias + 16 * h));
    if (g->bias_up) uv = _mm512_add_ps(uv, _mm512_maskz_loadu_ps(mk, g->bias_up + 16 * h));
    _mm512_mask_storeu_ps(g->c + r * g->ldc + 16 * h, mk, moe__act_avx512(g->act, gv, uv, g->alpha, g->limit));
  }
}
MOE__AVX512_BASE MOE__INLINE void moe__gemm2_store_avx512(const moe_gemm_args *g, int32_t r, int nv, __m512 v0,
                                                         __m512 v1, __m512 v2, __m512 v3) {
  for (int h = 0; h < nv; h++) {
    __mmask16 mk = moe__col_mask(g->nr, h);
    __m512 v = h == 0 ? v0 : h == 1 ? v1 : h == 2 ? v2 : v3;
    float *c = g->c_rows[r] + 16 * h;
    if (g->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, g->bias + 16 * h));
    _mm512_mask_storeu_ps(c, mk, _mm512_fmadd_ps(v, _mm512_set1_ps(g->row_weight[r]), _mm512_maskz_loadu_ps(mk, c)));
  }
}

/* The tile's output rows (token sums spread over the chunk, often not in cache) are fetched while
 * the k loop runs, not awaited in the epilogue (+4% on int8 gemm2 in a layer-like loop). */
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_c_rows(const moe_gemm_args *g, int32_t r0, int mr) {
  for (int r = 0; r < mr; r++)
    for (int32_t col = 0; col < g->nr; col += 16) _mm_prefetch((const char *)(g->c_rows[r0 + r] + col), _MM_HINT_T1);
}

#define MOE__PF_MIN_ROWS 11 /* blocks with fewer rows leave the weight stream to the hardware prefetcher */

/* ---- the tile kernels ------------------------------------------------------------------------
 * One k step = one k-group (KR k) of every row in the tile against 64-byte lines of the panels.
 * The loop runs over the full groups; a partial last group (kred not a multiple of KR) runs once
 * more with activations padded by zeros, so no row is read past kred.
 * Prefetch: the panels stream in sequentially. Blocks of MOE__PF_MIN_ROWS rows or more compute long
 * enough per panel for DRAM to idle, so each of their tiles also pulls in its share of the panels
 * the caller reads next (w_next). Smaller blocks (decode) differ by vendor: Zen's hardware
 * prefetcher follows the stream at full bandwidth (software prefetch cost 5-15% on Zen 4; on Zen 5,
 * bf16 and int8 at M = 1 and 32: 6-48 % slower on one thread, -6 to +17 % on two), Intel's
 * falls behind a core busy with dot products, so there the first tile prefetches its own panels
 * MOE__PF_AHEAD bytes ahead (Emerald Rapids, Qwen3 bf16: M = 1 2.8 -> 2.5 ms, M = 32 39.5-41.0 ->
 * 34.2-34.4 ms; docs/amx.md, ninth sitting).
 *
 * The tiles themselves are generated (tools/gen_tiles.py): one function per tile height with named
 * accumulators c<vector>_<row>, which every compiler keeps in registers at -O1..-O3. */

/* The KR activations of a row at k-group i, broadcast to 16 lanes; the tail form reads only the
 * elements below kred. */
MOE__AVX512_BASE MOE__INLINE __m512i moe__bcast_group(const uint8_t *a, int64_t i) {
  return _mm512_set1_epi32((int)moe__load_u32(a + 4 * (size_t)i));
}
/* The same for a group cut by [k0, k1) (moe__group_in), broadcast. */
MOE__AVX512_BASE MOE__INLINE __m512i moe__bcast_range(const uint8_t *a, int64_t i, int64_t k0, int64_t k1, int kr,
                                                     size_t elt, int pad) {
  return _mm512_set1_epi32((int)moe__group_in(a, i, k0, k1, kr, elt, pad));
}

MOE__AVX512_BASE MOE__INLINE __m512i moe__bcast_tail(const uint8_t *a, int64_t i, int64_t kred, size_t elt) {
  return moe__bcast_range(a, i, 0, kred, (int)(4 / elt), elt, 0);
}

/* `lines` cache lines from p into L2. */
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_ahead(const uint8_t *p, int lines) {
  for (int l = 0; l < lines; l++) _mm_prefetch((const char *)p + 64 * l, _MM_HINT_T1);
}
/* ... into L1: the low-bit tiles' streams (one Zen 5 core streams their codes 4-31 % faster than
 * with prefetcht1, W4A8 19 %; docs/amx.md, twenty-second sitting). */
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_l1(const uint8_t *p, int lines) {
  for (int l = 0; l < lines; l++) _mm_prefetch((const char *)p + 64 * l, _MM_HINT_T0);
}
/* 1 where a core's own software prefetch must keep its decode stream going: Intel's hardware
 * prefetcher falls behind a core busy with dot products, Zen's does not (see above). */
static inline int moe__own_prefetch_cpu(void) { return (moe_cpu_features() & MOE_CPU_INTEL) != 0; }

#define MOE__PF_AHEAD 2048 /* bytes a small block's first tile prefetches ahead of its loads, per panel */

/* What a tile prefetches: its share of the next panels (w_next), spread evenly over its k steps
 * (`rate` lines a step in 1/65536ths; a line every step until the share was sent, the first 57 % of
 * a bf16 GEMM1 tile's steps, left DRAM idle for the rest: Zen 5, M = 512 3-10 % slower), or its own
 * panels' lines MOE__PF_AHEAD bytes ahead (own[p], 128 bytes per step). */
typedef struct moe__prefetcher {
  const uint8_t *next, *end;
  int64_t rate, credit;
  const uint8_t *own[2];
} moe__prefetcher;
/* The plan of the tile at row r0 of `tile` rows whose panels' lines start at w0 and w1 (NULL: one
 * panel). */
static inline MOE__INLINE moe__prefetcher moe__prefetch_plan(const moe_gemm_args *g, int32_t r0, int tile, int64_t steps,
                                                            const uint8_t *w0, const uint8_t *w1) {
  moe__prefetcher pf = {NULL, NULL, 0, 0, {NULL, NULL}};
  if (g->w_next && g->mr >= MOE__PF_MIN_ROWS) {
    const int64_t tiles = (g->mr + tile - 1) / tile, t = moe__tile_at(g->mr, tile, r0);
    const int64_t lines = (int64_t)(g->w_next_bytes / 64), share = (lines + tiles - 1) / tiles;
    const int64_t first = t * share, last = first + share < lines ? first + share : lines;
    pf.next = g->w_next + 64 * first, pf.end = g->w_next + 64 * (last > first ? last : first);
    pf.rate = last > first ? ((last - first) * 65536 + steps - 1) / steps : 0;
  } else if (g->mr < MOE__PF_MIN_ROWS && r0 == 0 && moe__own_prefetch_cpu()) {
    pf.own[0] = w0 + MOE__PF_AHEAD; /* past a panel's end: what the caller reads next, or nothing (no fault) */
    pf.own[1] = w1 ? w1 + MOE__PF_AHEAD : NULL;
  }
  return pf;
}
static inline MOE__INLINE void moe__prefetch_next(moe__prefetcher *pf) {
  for (pf->credit += pf->rate; pf->credit >= 65536 && pf->next < pf->end; pf->credit -= 65536, pf->next += 64)
    _mm_prefetch((const char *)pf->next, _MM_HINT_T1);
}
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_own(moe__prefetcher *pf) {
  for (int p = 0; p < 2 && pf->own[p]; p++) {
    moe__prefetch_ahead(pf->own[p], 2); /* a step's two lines of the panel */
    pf->own[p] += 128;
  }
}
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_step(moe__prefetcher *pf) {
  moe__prefetch_next(pf);
  moe__prefetch_own(pf);
}

/* The dot-product instructions through inline asm that ties the accumulator to the destination
 * register: compiler intrinsics for these destructive instructions made gcc and clang copy and
 * spill accumulators at some optimization levels (up to 2x slower). The f32 rows' FMAs too: gcc 12
 * copied ~20 accumulators a k step in their 4-row tiles (llvm-mca, Sapphire Rapids: MXFP4 106 -> 91
 * cycles a step). */
MOE__AVX512_VNNI MOE__INLINE __m512i moe__dpbusd(__m512i acc, __m512i a_u8, __m512i w_s8) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a_u8), "v"(w_s8));
  return acc;
}
MOE__AVX512_BF16 MOE__INLINE __m512 moe__dpbf16(__m512 acc, __m512bh a, __m512bh w) {
  __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(w));
  return acc;
}
MOE__AVX512_BASE MOE__INLINE __m512 moe__fma(__m512 acc, __m512 a, __m512 w) {
  __asm__("vfmadd231ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(w));
  return acc;
}

/* INT8 (c4 panels with a comp/scale header): int32 sums minus the compensation, to f32, times the
 * row scale, times the column scales: the scalar kernel's order, so both give the same bits
 * before the epilogue. */
MOE__AVX512_BASE MOE__INLINE __m512 moe__qc8_dequant(__m512i acc, const uint8_t *panel, int h, float a_scale) {
  __m512i comp = _mm512_loadu_si512(panel + 64 * h);
  __m512 col_scale = _mm512_loadu_ps((const float *)(const void *)(panel + MOE_NR * 4 + 64 * h));
  __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc, comp));
  return _mm512_mul_ps(_mm512_mul_ps(v, _mm512_set1_ps(a_scale)), col_scale);
}

/* A tile's prefetch stream over one panel: the lines at `at` + a step's offset, and from the end of
 * the panel's codes on the same offsets into the panel the caller reads next. Linear addresses
 * would run over the panel's scales (prefetched at the call's start) and the gate panel's stream
 * into the up panel, which is streaming already, and leave the next call's up panel to start cold
 * (a harness of 32 KB panel pairs on one Zen 5 core: 27 -> 33 GB/s; docs/amx.md, twenty-first
 * sitting). */
typedef struct moe__ahead {
  uintptr_t at, end, jump; /* jump: the next panel's start less the panel's end (mod 2^64) */
} moe__ahead;
static inline MOE__INLINE const uint8_t *moe__ahead_at(const moe__ahead *s, size_t off) {
  const uintptr_t a = s->at + off;
  return (const uint8_t *)(a + (a < s->end ? 0 : s->jump));
}

/* ---- the low-bit tiles ---------------------------------------------------------------------------
 * FP8, INT4 and MXFP4 tiles decode their codes in registers at every k step (byte permutes: layouts
 * (b)-(d)) into bf16 pairs or W4A8's unsigned int8 quads, and run the dot products of up to 4 rows
 * on them (FP8: 5, one panel at a time; Zen 5's layer 4-9 % faster than with 4). A call runs k in
 * blocks of whole scale groups (MOE__LOWBIT_KB), every tile through a block before the next block
 * starts; within a block a tile goes group by group, its sums start at zero and at the group's end
 * are scaled into the totals:
 *   tot[r][c] = fma(sum, scale[c], tot[r][c])
 * so every row's bits are the same whatever rows share its tile. The decode is redone per tile
 * from cache: measured on Zen 5, 4-row tiles keep the dot-product units busier than decoding once
 * into an L1 scratch and reading it back (a store and a load per vector; docs/design.md).
 * W4A8 runs vpdpbusd with the codes (0..15) as the unsigned and the activations (a - 128) as the
 * signed operand, so sum = sum_k q (a - 128) exactly, and the zero point comes off once per group:
 * sum - zero[c] * asum[r], asum[r] = sum_k (a - 128) over the group. W4A16 decodes q - zero. */
typedef struct moe__lowbit {
  moe_precision p;
  const uint8_t *w0, *w1;        /* the panels' codes                                           */
  const uint8_t *meta[2];        /* the panels' group scales (f32, or e8m0 bytes)               */
  const uint8_t *zeros[2];       /* INT4: the panels' zero points                               */
  const struct moe__tables *tab; /* the decoder's tables                                        */
  float *tot;                    /* [MOE_BLOCK_M][64]: the dequantized sums of finished groups  */
  int64_t kb0, kb1;              /* the k block the tiles run now (whole scale groups)          */
  moe__ahead ahead[2][2];        /* the tiles' prefetch streams per panel: [0] own, [1] w_next  */
  const uint8_t *line[2][2];     /* their starts, for the tiles that prefetch linearly          */
} moe__lowbit;

#define MOE__LOWBIT_KB 512 /* k per block: every tile runs a block before the next block starts */

#ifndef MOE__LOWBIT_AHEAD /* bytes the first tile prefetches ahead of its loads, per panel (a build */
#define MOE__LOWBIT_AHEAD 4096 /* may set it: 2-16 KB measured alike on Zen 5, eighteenth sitting)   */
#endif

/* What tile t prefetches as it steps through k (moe__ahead_at(&ahead[t == 1][p], line bytes * step)):
 * tile 1 the panels the caller reads next (w_next) from their start, so DRAM keeps streaming while
 * the later tiles run from cache; the others, and tile 1 of a call without next panels,
 * MOE__LOWBIT_AHEAD bytes ahead of their own loads and on into the next panels: the first tile
 * streams its own panels that way, the later ones touch lines already cached. Set once per call. */
static inline MOE__INLINE void moe__lowbit_ahead(const moe_gemm_args *g, moe__lowbit *L) {
  for (int q = 0; q < 2; q++) {
    const uint8_t *own = q ? L->w1 : L->w0;
    const uint8_t *next = !g->w_next ? NULL : q && g->w_next_bytes > g->panel_bytes ? g->w_next + g->panel_bytes : g->w_next;
    moe__ahead *a = &L->ahead[0][q], *n = &L->ahead[1][q];
    a->at = (uintptr_t)own + MOE__LOWBIT_AHEAD, a->end = (uintptr_t)own + moe__meta_offset(L->p, g->kpad);
    a->jump = next ? (uintptr_t)next - a->end : 0; /* no next call: on past the panel, as before */
    *n = *a;
    if (next) n->at = (uintptr_t)next, n->end = UINTPTR_MAX, n->jump = 0;
    L->line[0][q] = (const uint8_t *)a->at, L->line[1][q] = (const uint8_t *)n->at;
  }
}

/* The group scale of the tile's 16-column vector v (panel v / 2, columns 16 (v % 2) ..) for group
 * gi: f32, or e8m0 as 2^(e - 127) (e = 0 the subnormal 2^-127, e = 255 NaN). */
MOE__AVX512_BASE MOE__INLINE __m512 moe__lowbit_scale(const moe__lowbit *L, int64_t gi, int v) {
  const uint8_t *at = L->meta[v >> 1] + (size_t)gi * MOE_NR + 16 * (size_t)(v & 1);
  if (moe__meta_of(L->p) == MOE__META_E8M0) {
    __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)at));
    __m512i bits = _mm512_slli_epi32(e, 23);
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512()), _mm512_set1_epi32(0x00400000));
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(255)), _mm512_set1_epi32(0x7FC00000));
    return _mm512_castsi512_ps(bits);
  }
  return _mm512_loadu_ps((const float *)(const void *)(L->meta[v >> 1] + 4 * ((size_t)gi * MOE_NR + 16 * (size_t)(v & 1))));
}
/* INT4 zero points of vector v for group gi, as int32. */
MOE__AVX512_BASE MOE__INLINE __m512i moe__lowbit_zero(const moe__lowbit *L, int64_t gi, int v) {
  const uint8_t *at = L->zeros[v >> 1] + (size_t)gi * MOE_NR + 16 * (size_t)(v & 1);
  return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)at));
}
/* ... as f32, for the f32 form's q - zero ... */
MOE__AVX512_BASE MOE__INLINE void moe__lowbit_zero_f32(const moe__lowbit *L, int64_t gi, int np, __m512 zf[4]) {
  for (int v = 0; v < 2 * np; v++) zf[v] = _mm512_cvtepi32_ps(moe__lowbit_zero(L, gi, v));
}
/* ... and in every byte of its column's dword (moe__b4_pair_zero, moe__b4_minus_zero; W4A8's q - zero
 * lines). */
MOE__AVX512_BASE MOE__INLINE __m512i moe__lowbit_zero_bytes(const moe__lowbit *L, int64_t gi, int v) {
  return _mm512_mullo_epi32(moe__lowbit_zero(L, gi, v), _mm512_set1_epi32(0x01010101));
}
/* The end of a group: tot[r][16v..] = fma(sum, scale, tot[r][16v..]). */
MOE__AVX512_BASE MOE__INLINE void moe__lowbit_finish(const moe__lowbit *L, int32_t r, int v, __m512 sum, __m512 scale) {
  float *t = L->tot + 64 * r + 16 * v;
  _mm512_store_ps(t, _mm512_fmadd_ps(sum, scale, _mm512_load_ps(t)));
}
/* W4A8's group sum without its zero point, exact: sum_k q (a - 128) - zero * sum_k (a - 128). */
MOE__AVX512_BASE MOE__INLINE __m512 moe__lowbit_isum(__m512i sum, __m512i zero, int32_t asum) {
  return _mm512_cvtepi32_ps(_mm512_sub_epi32(sum, _mm512_mullo_epi32(zero, _mm512_set1_epi32(asum))));
}
/* sum_k (a[k] - 128) over n bytes */
MOE__AVX512_BASE MOE__INLINE int32_t moe__sum_s8(const uint8_t *a, int64_t n) {
  __m512i acc = _mm512_setzero_si512();
  for (int64_t i = 0; i < n; i += 64) {
    __mmask64 mk = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
    acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(mk, a + i), _mm512_setzero_si512()));
  }
  return (int32_t)(_mm512_reduce_add_epi64(acc) - 128 * n);
}
/* moe_sum_groups_u8 */
MOE__AVX512_BASE void moe__sum_groups_u8_avx512(const uint8_t *q, int64_t n, int32_t group, int32_t *sums) {
  for (int64_t k0 = 0; k0 < n; k0 += group) sums[k0 / group] = moe__sum_s8(q + k0, k0 + group < n ? group : n - k0);
}
/* Row r's sum of (a - 128) over group gi, [k0, k1): the caller's (a_group_sum), else summed here. */
MOE__AVX512_BASE MOE__INLINE int32_t moe__group_asum(const moe_gemm_args *g, int32_t r, int64_t gi, int64_t k0, int64_t k1) {
  return g->a_group_sum ? g->a_group_sum[r][gi] : moe__sum_s8((const uint8_t *)g->a[r] + k0, k1 - k0);
}

/* A broadcast bf16 pair (moe__bcast_group) as f32: its odd k (the high word), its even k. An FMA
 * with each, odd first, gives vdpbf16ps's bits (it adds the two exact products in that order,
 * each rounded; measured bitwise on Emerald Rapids), bar its flushing of subnormals. */
MOE__AVX512_BASE MOE__INLINE __m512 moe__bf16_hi_f32(__m512i pair) {
  return _mm512_castsi512_ps(_mm512_and_si512(pair, _mm512_set1_epi32((int)0xFFFF0000u)));
}
MOE__AVX512_BASE MOE__INLINE __m512 moe__bf16_lo_f32(__m512i pair) { return _mm512_castsi512_ps(_mm512_slli_epi32(pair, 16)); }
/* bf16 -> f32 over n values (the row operation; also the f32 tiles' activations, MOE__AF_K at a
 * time, which every k step's FMAs then broadcast from memory: a load each, where the pair above
 * costs a vector op per k and row). */
MOE__AVX512_BASE void moe__bf16_to_f32_avx512(const uint16_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = moe__tail_mask(n - i);
    __m512i v = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, src + i)), 16);
    _mm512_mask_storeu_ps(dst + i, mk, _mm512_castsi512_ps(v));
  }
}
#define MOE__AF_K 512

#include "moe_tiers/avx512_tiles.h" /* generated: tools/gen_tiles.py */

/* The kernels of the list. gemm1: tiles of 5 rows x (32 gate + 32 up) columns. gemm2: 5 rows x 64
 * columns (two panels) while nr > 32, else 12 rows x 32 columns. */
MOE__AVX512_BF16 void moe_bf16_bf16w_gemm1_ukernel_5x32c2__avx512bf16(const moe_gemm_args *g) { moe__bf16_gemm1_rows(g); }
MOE__AVX512_BF16 void moe_bf16_bf16w_gemm2_ukernel_5x64c2_12x32c2__avx512bf16(const moe_gemm_args *g) {
  if (g->nr > MOE_NR) moe__bf16_gemm2x2_rows(g);
  else moe__bf16_gemm2_rows(g);
}
MOE__AVX512_VNNI void moe_qu8_qc8w_gemm1_ukernel_5x32c4__avx512vnni(const moe_gemm_args *g) { moe__qc8_gemm1_rows(g); }
MOE__AVX512_VNNI void moe_qu8_qc8w_gemm2_ukernel_5x64c4_12x32c4__avx512vnni(const moe_gemm_args *g) {
  if (g->nr > MOE_NR) moe__qc8_gemm2x2_rows(g);
  else moe__qc8_gemm2_rows(g);
}
/* ---- the low-bit kernels: the call (k blocks x row tiles), the list's functions (decoders: decode.h) */

/* The epilogue from the totals (A8: times the row scale): gemm1 act -> c, gemm2 (+ bias) * weight
 * into the rows. */
MOE__AVX512_BASE MOE__INLINE void moe__lowbit_store(const moe_gemm_args *g, const float *tot, int gemm1, int np, int a8) {
  for (int32_t r = 0; r < g->mr; r++) {
    const float *t = tot + 64 * r;
    const __m512 s = _mm512_set1_ps(a8 ? g->a_scale[r] : 1.0f);
    __m512 v0 = _mm512_load_ps(t), v1 = _mm512_load_ps(t + 16), v2 = _mm512_load_ps(t + 32), v3 = _mm512_load_ps(t + 48);
    if (a8) v0 = _mm512_mul_ps(v0, s), v1 = _mm512_mul_ps(v1, s), v2 = _mm512_mul_ps(v2, s), v3 = _mm512_mul_ps(v3, s);
    if (gemm1) moe__gemm1_store_avx512(g, r, v0, v1, v2, v3);
    else moe__gemm2_store_avx512(g, r, 2 * np, v0, v1, v2, v3);
  }
}

/* The row tiles of a call: one kind for gemm1 and gemm2 (the sums go to the totals; the epilogue,
 * moe__lowbit_store, tells the two apart). */
MOE__AVX512_BASE MOE__INLINE void moe__lowbit_rows(moe_precision p, int f32, const moe_gemm_args *g, const moe__lowbit *L) {
  if (p == MOE_PREC_FP8) moe__fp8_pair_rows(g, L);
  else if (moe__is_a8(p)) moe__q4_pair_rows(g, L);
  else if (p == MOE_PREC_INT4_W4A16) f32 ? moe__i4f_pair_rows(g, L) : moe__i4_pair_rows(g, L);
  else f32 ? moe__b4f_pair_rows(g, L) : moe__b4_pair_rows(g, L);
}

/* The scales and zero points of the call's panels: they lie apart from the codes, and a scale that
 * comes from DRAM only when its group ends stalls the core. */
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_meta(const moe_gemm_args *g, const moe__lowbit *L, int np) {
  for (int q = 0; q < np; q++)
    for (const uint8_t *at = L->meta[q]; at < g->w + (size_t)(q + 1) * g->panel_bytes; at += 64)
      _mm_prefetch((const char *)at, _MM_HINT_T0);
}

/* The first MOE__LOWBIT_AHEAD bytes of each panel's codes, which the tiles' own prefetch (that far
 * ahead of their loads) never covers. Intel only, as the dense kernels' (Emerald Rapids, Qwen3 FP8:
 * M = 1 1.6-1.9 -> 1.5-1.6 ms, M = 32 26.0-27.2 -> 24.5-25.2; the 4-bit formats 0-5 %). */
MOE__AVX512_BASE MOE__INLINE void moe__prefetch_heads(const moe__lowbit *L, int np) {
  if (!moe__own_prefetch_cpu()) return;
  for (int q = 0; q < np; q++) moe__prefetch_ahead(q ? L->w1 : L->w0, MOE__LOWBIT_AHEAD / 64);
}

/* One low-bit GEMM call (p a compile-time constant in each kernel): gemm1 over the gate and up
 * panels, gemm2 over one or two panels; tiles of up to 4 rows (FP8: 5), each over every scale
 * group. */
/* A call's panels (np: 1 or 2; a single, last, odd gemm2 panel serves as both panels of the two-panel
 * tiles, its second half not stored): codes, group scales and zero points. */
static inline MOE__INLINE void moe__lowbit_init(moe_precision p, const moe_gemm_args *g, int np, const moe__tables *tab, float *tot,
                                                moe__lowbit *L) {
  const size_t meta = moe__meta_offset(p, g->kpad), ng = (size_t)moe__cdiv(g->kred, g->kgroup ? g->kgroup : g->kred);
  memset(L, 0, sizeof *L);
  L->p = p, L->w0 = g->w, L->w1 = g->w + (size_t)(np - 1) * g->panel_bytes, L->tab = tab, L->tot = tot;
  for (int q = 0; q < 2; q++) L->meta[q] = (q ? L->w1 : L->w0) + meta, L->zeros[q] = L->meta[q] + ng * MOE_NR * 4;
}

MOE__AVX512_BASE MOE__INLINE void moe__lowbit_gemm_avx512(moe_precision p, int f32, const moe_gemm_args *g, int gemm1, float *tot) {
  const int np = gemm1 || g->nr > MOE_NR ? 2 : 1;
  moe__tables tab;
  moe__lowbit L;
  moe__tables_of(p, &tab);
  moe__lowbit_init(p, g, np, &tab, tot, &L);
  moe__lowbit_ahead(g, &L);
  moe__prefetch_meta(g, &L, np);
  moe__prefetch_heads(&L, np);
  if (!gemm1) moe__prefetch_c_rows(g, 0, g->mr);
  memset(tot, 0, (size_t)g->mr * 64 * sizeof(float));
  /* k blocks of whole groups, every tile in each: the later tiles read what the first brought in
   * while DRAM keeps streaming the next block, and a call costs one tile call per block */
  for (L.kb0 = 0; L.kb0 < g->kred; L.kb0 = L.kb1) {
    const int64_t kb = g->kgroup >= MOE__LOWBIT_KB ? g->kgroup : MOE__LOWBIT_KB / g->kgroup * g->kgroup;
    L.kb1 = L.kb0 + kb < g->kred ? L.kb0 + kb : g->kred;
    moe__lowbit_rows(p, f32, g, &L);
  }
  moe__lowbit_store(g, tot, gemm1, np, moe__is_a8(p));
}

/* The low-bit kernels of the list: tiles of up to 4 rows (FP8: 5) x 64 columns (gemm1: 32 gate + 32
 * up; gemm2: two panels, an odd last one as both), heights balanced over the call's rows. The fma
 * rows run the 4-bit bf16-activation codes through f32 FMAs (moe__b4_f32_at), which Intel's cores
 * prefer (moe__kernel_preferred). */
#define MOE__LOWBIT_UKERNELS(attr, fam, tile1, tile2, sfx, prec, f32)                                        \
  attr void moe_##fam##_gemm1_ukernel_##tile1##__##sfx(const moe_gemm_args *g) {                             \
    MOE__ALIGN64 float tot[MOE_BLOCK_M * 64];                                                                \
    moe__lowbit_gemm_avx512(prec, f32, g, 1, tot);                                                           \
  }                                                                                                          \
  attr void moe_##fam##_gemm2_ukernel_##tile2##__##sfx(const moe_gemm_args *g) {                             \
    MOE__ALIGN64 float tot[MOE_BLOCK_M * 64];                                                                \
    moe__lowbit_gemm_avx512(prec, f32, g, 0, tot);                                                           \
  }
MOE__LOWBIT_UKERNELS(MOE__AVX512_FP8, bf16_fp8w, 5x32c2, 5x64c2, avx512bf16, MOE_PREC_FP8, 0)
MOE__LOWBIT_UKERNELS(MOE__AVX512_BF16, bf16_qc4w, 5x32c2, 5x64c2, avx512bf16, MOE_PREC_INT4_W4A16, 0)
MOE__LOWBIT_UKERNELS(MOE__AVX512_BF16, bf16_mxfp4w, 5x32c2, 5x64c2, avx512bf16, MOE_PREC_MXFP4, 0)
MOE__LOWBIT_UKERNELS(MOE__AVX512_BASE, bf16_qc4w, 4x32c2, 4x64c2, avx512fma, MOE_PREC_INT4_W4A16, 1)
MOE__LOWBIT_UKERNELS(MOE__AVX512_BASE, bf16_mxfp4w, 4x32c2, 4x64c2, avx512fma, MOE_PREC_MXFP4, 1)
MOE__LOWBIT_UKERNELS(MOE__AVX512_VNNI, qu8_qc4w, 5x32c4, 5x64c4, avx512vnni, MOE_PREC_INT4_W4A8, 0)
#undef MOE__LOWBIT_UKERNELS

/* np MXFP4 panels (panel_bytes apart, k padded to kpad; nv[i] valid columns in panel i) as bf16
 * panels of layout (a), kpad * 64 bytes apart at dst, each e8m0 scale folded into its weights
 * (moe__e8m0_foldable). The layer's folded path (moe__fold_policy). 0, dst unwritten, when a valid
 * column's scale does not fold. */
MOE__AVX512_BASE int moe__mxfp4_to_bf16_avx512(const uint8_t *w, size_t panel_bytes, int np, const int32_t *nv, int64_t kred,
                                               int64_t kpad, uint8_t *dst) {
  const size_t meta_at = moe__meta_offset(MOE_PREC_MXFP4, kpad);
  __m512i table;
  memcpy(&table, moe__e2m1_bf16, 64);
  for (int i = 0; i < np; i++)
    if (!moe__e8m0_foldable(w + (size_t)i * panel_bytes + meta_at, moe__cdiv(kred, 32), nv[i])) return 0;
  for (int i = 0; i < np; i++) {
    const uint8_t *codes = w + (size_t)i * panel_bytes, *meta = codes + meta_at;
    uint8_t *out = dst + (size_t)i * (size_t)kpad * 64;
    for (int64_t li0 = 0; li0 < kpad / 8; li0 += 4) { /* a group of 32 k: four line pairs of 8 k */
      const __m512i adds[2] = {moe__e8m0_adds(meta + (size_t)(li0 / 4) * MOE_NR), moe__e8m0_adds(meta + (size_t)(li0 / 4) * MOE_NR + 16)};
      for (int64_t li = li0; li < li0 + 4 && li < kpad / 8; li++)
        for (int h = 0; h < 2; h++) { /* line h: columns 16h..16h+15 -> four bf16 lines of (a) */
          const __m512i line = _mm512_load_si512(codes + 128 * (size_t)li + 64 * h);
          for (int j = 0; j < 4; j++)
            _mm512_store_si512(out + 128 * (size_t)(4 * li + j) + 64 * h, moe__e8m0_fold((__m512i)moe__b4_pair(line, j, table), adds[h]));
        }
    }
  }
  return 1;
}

/* ---- row operations around the GEMMs (quantize, convert), vectorized ---------------------------- */

/* x / s without a division (r = 1 / s, rounded): y = x r, corrected once by the exact residual
 * x - y s (Markstein's correction). It may differ from x / s by an ulp, but not across a code's
 * rounding tie (k + 0.5, |k| <= 127): test_kernels checks the ties of every significand of s
 * (--all-scales; a sample in the default run). A NaN or infinite scale gives code 128 either way.
 * Zen 5, in cache: 300 -> 255 ns per 2,048 values. */
MOE__AVX512_BASE MOE__INLINE __m512 moe__div_scale_avx512(__m512 x, __m512 s, __m512 r) {
  __m512 y = _mm512_mul_ps(x, r);
  return _mm512_fmadd_ps(_mm512_fnmadd_ps(y, s, x), r, y);
}

/* moe_quantize_row_u8 with the same bits: amax (NaN sticks), scale, x / scale rounded half to even. */
MOE__AVX512_BASE float moe__quantize_row_u8_avx512(const float *x, int64_t n, uint8_t *q) {
  __m512 vmax = _mm512_setzero_ps(), vscale, vrcp;
  __mmask16 nan = 0;
  float amax, scale;
  for (int64_t i = 0; i < n; i += 16) {
    __m512 v = _mm512_maskz_loadu_ps(moe__tail_mask(n - i), x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    vmax = _mm512_max_ps(vmax, _mm512_abs_ps(v));
  }
  amax = nan ? NAN : _mm512_reduce_max_ps(vmax);
  scale = (amax < 1e-7f ? 1e-7f : amax) / 127.0f;
  vscale = _mm512_set1_ps(scale), vrcp = _mm512_set1_ps(1.0f / scale);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = moe__tail_mask(n - i);
    __m512 v = moe__div_scale_avx512(_mm512_maskz_loadu_ps(mk, x + i), vscale, vrcp);
    v = _mm512_min_ps(_mm512_set1_ps(127.0f), _mm512_max_ps(_mm512_set1_ps(-127.0f), v));
    __m512i qi = _mm512_add_epi32(_mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), _mm512_set1_epi32(128));
    _mm_mask_storeu_epi8(q + i, mk, _mm512_cvtepi32_epi8(qi)); /* NaN -> INT_MIN + 128 -> byte 128 */
  }
  return scale;
}

/* f32 bits -> bf16 bits in the low half of each lane: round to nearest even, NaN quieted
 * (moe_f32_to_bf16 on 16 lanes). */
MOE__AVX512_BASE MOE__INLINE __m512i moe__bf16_bits_avx512(__m512i u) {
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
}
MOE__AVX512_BASE void moe__f32_to_bf16_avx512(const float *src, uint16_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = moe__tail_mask(n - i);
    _mm256_mask_storeu_epi16(dst + i, mk, _mm512_cvtepi32_epi16(moe__bf16_bits_avx512(_mm512_maskz_loadu_epi32(mk, src + i))));
  }
}

/* ---- packing words (moe__pack_panel) -----------------------------------------------------------------
 * A k step of one column is one 32-bit word of its panel line at byte 4n (MOE__PW_*): 16 plain rows x
 * 16 steps are loaded as 16 vectors and transposed, so each vector holds one step's words of 16
 * columns: 64 bytes of that step's line (columns 16-31: the next 64; layout (d): the high nibbles
 * of the same 64).
 *
 *   row n: [w(n,s0) w(n,s0+1) .. w(n,s0+15)]   --transpose-->   step s: [w(0,s) w(1,s) .. w(15,s)] */
MOE__AVX512_BASE MOE__INLINE void moe__transpose16_epi32(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) /* per 128-bit lane: pairs of rows interleaved */
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  for (int g = 0; g < 4; g++) { /* u[4g + c], lane L: column 4L + c of rows 4g..4g+3 */
    const __m512i *q = t + 4 * g;
    u[4 * g + 0] = _mm512_unpacklo_epi64(q[0], q[2]), u[4 * g + 1] = _mm512_unpackhi_epi64(q[0], q[2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(q[1], q[3]), u[4 * g + 3] = _mm512_unpackhi_epi64(q[1], q[3]);
  }
  for (int c = 0; c < 4; c++) { /* the 4 x 4 transpose of 128-bit lanes: column 4L + c, lane g <- u[4g + c] lane L */
    const __m512i a = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), b = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE);
    const __m512i d = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44), e = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
    r[c] = _mm512_shuffle_i32x4(a, d, 0x88), r[4 + c] = _mm512_shuffle_i32x4(a, d, 0xDD);
    r[8 + c] = _mm512_shuffle_i32x4(b, e, 0x88), r[12 + c] = _mm512_shuffle_i32x4(b, e, 0xDD);
  }
}
/* One step's packed words from its plain words (moe__nibbles_c / _d and the fp16 conversion of the
 * scalar packer, on 16 lanes). */
MOE__AVX512_BASE MOE__INLINE __m512i moe__pack_word_avx512(int kind, __m512i w) {
  const __m512i nib = _mm512_set1_epi32(0x0F0F0F0F), b0 = _mm512_set1_epi32(0xFF), b1 = _mm512_set1_epi32(0xFF00);
  if (kind == MOE__PW_F16) {
    const __m512i lo = _mm512_castps_si512(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(w)));
    const __m512i hi = _mm512_castps_si512(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16))));
    return _mm512_or_si512(moe__bf16_bits_avx512(lo), _mm512_slli_epi32(moe__bf16_bits_avx512(hi), 16));
  }
  if (kind == MOE__PW_NIB_C) {
    __m512i e = _mm512_and_si512(w, nib), o = _mm512_and_si512(_mm512_srli_epi32(w, 4), nib);
    e = _mm512_or_si512(e, _mm512_srli_epi32(e, 4)), o = _mm512_or_si512(o, _mm512_srli_epi32(o, 4));
    e = _mm512_or_si512(_mm512_and_si512(e, b0), _mm512_and_si512(_mm512_srli_epi32(e, 8), b1));
    o = _mm512_or_si512(_mm512_and_si512(o, b0), _mm512_and_si512(_mm512_srli_epi32(o, 8), b1));
    return _mm512_or_si512(e, _mm512_slli_epi32(o, 16));
  }
  if (kind == MOE__PW_NIB_D) {
    const __m512i x = _mm512_or_si512(_mm512_and_si512(w, b0), _mm512_slli_epi32(_mm512_and_si512(w, b1), 8));
    return _mm512_and_si512(_mm512_or_si512(x, _mm512_slli_epi32(x, 4)), nib);
  }
  return w;
}
/* One 64-byte piece of a panel line: a streaming store where it is a whole aligned cache line (a
 * packed model is written once and read later, so the pack's stores need not read the lines in
 * first; the packer fences at its end). */
MOE__AVX512_BASE MOE__INLINE void moe__pack_store_avx512(uint8_t *dst, __m512i v, int stream) {
  if (stream && ((uintptr_t)dst & 63) == 0) _mm512_stream_si512((__m512i *)(void *)dst, v);
  else _mm512_storeu_si512(dst, v);
}
/* FP8 pairs (layout (b): column n's pair at 16 (n % 16 / 4) + 8 (n / 16) + 2 (n % 4) of a 64-byte
 * line): a transposed word holds two steps of a column; the 16-bit pairs of both column halves are
 * then permuted into each step's line. 32 steps per block. */
MOE__AVX512_BASE int64_t moe__pack_fp8_avx512(const uint8_t *const *src, int32_t nv, int64_t k0, int64_t k_end, uint8_t *codes,
                                              size_t line, int stream) {
  MOE__ALIGN64 uint16_t idx[2][32];
  __m512i perm[2];
  for (int32_t n = 0; n < 32; n++) /* line word of column n <- its pair in (half 0 | half 1) of the step */
    for (int e = 0; e < 2; e++) idx[e][8 * ((n & 15) >> 2) + 4 * (n >> 4) + (n & 3)] = (uint16_t)(32 * (n >> 4) + 2 * (n & 15) + e);
  perm[0] = _mm512_load_si512(idx[0]), perm[1] = _mm512_load_si512(idx[1]);
  for (; k0 + 64 <= k_end; k0 += 64) {
    __m512i r[2][16];
    for (int h = 0; h < 2; h++) {
      for (int i = 0; i < 16; i++)
        r[h][i] = 16 * h + i < nv ? _mm512_loadu_si512(src[16 * h + i] + k0) : _mm512_setzero_si512();
      if (16 * h < nv) moe__transpose16_epi32(r[h]);
    }
    for (int j = 0; j < 16; j++)
      for (int e = 0; e < 2; e++)
        moe__pack_store_avx512(codes + (size_t)(k0 / 2 + 2 * j + e) * line, _mm512_permutex2var_epi16(r[0][j], perm[e], r[1][j]), stream);
  }
  _mm_sfence();
  return k0;
}

/* Steps from k0 on in blocks of 16 while they lie inside the plain rows (k_end): the k where the
 * scalar packer goes on. */
MOE__AVX512_BASE int64_t moe__pack_words_avx512(const uint8_t *const *src, int32_t nv, int64_t k0, int64_t k_end, int32_t kr,
                                                int kind, uint8_t *codes, size_t line, int32_t *sum, int stream) {
  const int32_t sb = kind == MOE__PW_NIB_D ? 2 : 4; /* plain bytes of a column's step */
  if (kind == MOE__PW_FP8) return moe__pack_fp8_avx512(src, nv, k0, k_end, codes, line, stream);
  for (; k0 + 16 * kr <= k_end; k0 += 16 * kr) {
    const int64_t st = k0 / kr;
    __m512i r[2][16];
    for (int h = 0; h < 2 && 16 * h < nv; h++) {
      for (int i = 0; i < 16; i++) {
        const uint8_t *p = 16 * h + i < nv ? src[16 * h + i] + st * sb : NULL;
        r[h][i] = !p ? _mm512_setzero_si512() : sb == 4 ? _mm512_loadu_si512(p) : _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
        if (sum && p) /* int8: the 64 codes' sum, as sum(u8 (c ^ 0x80)) - 64 * 128 */
          sum[16 * h + i] += (int32_t)_mm512_reduce_add_epi64(_mm512_sad_epu8(_mm512_xor_si512(r[h][i], _mm512_set1_epi8((char)0x80)), _mm512_setzero_si512())) - 64 * 128;
      }
      moe__transpose16_epi32(r[h]);
      if (kind != MOE__PW_NIB_D)
        for (int s = 0; s < 16; s++) moe__pack_store_avx512(codes + (size_t)(st + s) * line + 64 * (size_t)h, moe__pack_word_avx512(kind, r[h][s]), stream);
    }
    if (kind == MOE__PW_NIB_D)
      for (int s = 0; s < 16; s++) {
        __m512i v = moe__pack_word_avx512(kind, r[0][s]);
        if (nv > 16) v = _mm512_or_si512(v, _mm512_slli_epi32(moe__pack_word_avx512(kind, r[1][s]), 4));
        moe__pack_store_avx512(codes + (size_t)(st + s) * line, v, stream);
      }
  }
  _mm_sfence();
  return k0;
}

/* acc[k] += y[k] over n floats. */
MOE__AVX512_BASE void moe__add_row_avx512(float *acc, const float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mk = moe__tail_mask(n - i);
    _mm512_mask_storeu_ps(acc + i, mk, _mm512_add_ps(_mm512_maskz_loadu_ps(mk, acc + i), _mm512_maskz_loadu_ps(mk, y + i)));
  }
}
#endif /* AVX-512 */

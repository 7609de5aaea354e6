/* moe_tiers/amx.h — the AMX tier of moe_gemm.h: AMX-BF16 and AMX-INT8 microkernels for every
 * precision, and the C model of the tiles (MOE_AMX_EMULATE) that runs them on any x86 with AVX-512.
 * Included by moe_gemm.h inside its implementation (after the AVX-512 tier, whose decoders and
 * epilogues it shares); not a header to include on its own.
 *
 * Tiles go through a thin layer: MOE__TILE_*() are the AMX instructions, or, with MOE_AMX_EMULATE,
 * a portable C model of the eight tile registers and palette 1 (so every AMX code path runs, and is
 * tested, on any x86 with AVX-512). The kernels read the packed panels the AVX-512 kernels read: a
 * decoded (or, for bf16 and int8, the stored) line is one B-tile row of 16 columns, so a panel of 32
 * columns is two B tiles per k step. The integer tiles (tdpbusd, u8 x s8: int8's codes, W4A8's
 * q - zero) give exact sums, as vpdpbusd's: those precisions are bitwise the same on the AMX and
 * AVX-512 tiers. tdpbf16ps rounds differently from vdpbf16ps (two FP32 sums per instruction,
 * DAZ/FTZ), so bf16-activation precisions agree with the other tiers to rounding.
 * The configuration is loaded once per thread and kept (moe__amx_config); the layer releases it at
 * the end of each thread's part of the experts' region (moe__amx_release). */
#if defined(MOE__HAVE_AVX512) && !defined(MOE_NO_AMX)
#define MOE__HAVE_AMX 1
#if defined(__cplusplus)
#define MOE__TLS thread_local
#else
#define MOE__TLS __thread
#endif

/* ldtilecfg's 64-byte operand, palette 1 */
typedef struct moe__tilecfg {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} moe__tilecfg;

#ifdef MOE_AMX_EMULATE
#define MOE__AMX_EMULATED 1
#define MOE__AMX_T MOE__T_AMX_HOST
/* The model: Intel SDM vol. 2, TILELOADD/TILESTORED/TILEZERO/LDTILECFG/TILERELEASE and TDPBF16PS,
 * TDPBUSD (pseudocode also at felixcloutier.com/x86/tdpbf16ps): rows and colsb from the
 * configuration, bytes past colsb and rows past rows read as zero; TDPBF16PS keeps two FP32 sums per
 * output (even and odd pair elements) over the instruction's k, each step an FMA with DAZ and FTZ
 * and round to nearest even, then adds their sum to the destination; the integer forms add each
 * k quad's four byte products, as a 32-bit sum, to the destination (wrapping). */
typedef struct moe__emu_tiles {
  uint8_t t[8][16][64];
  uint16_t colsb[8];
  uint8_t rows[8];
} moe__emu_tiles;
static MOE__TLS moe__emu_tiles moe__emu;
static inline void moe__emu_cfg(const moe__tilecfg *c) {
  memset(&moe__emu, 0, sizeof moe__emu);
  if (c)
    for (int i = 0; i < 8; i++) moe__emu.colsb[i] = c->colsb[i], moe__emu.rows[i] = c->rows[i];
}
static inline void moe__emu_load(int t, const void *base, size_t stride) {
  memset(moe__emu.t[t], 0, sizeof moe__emu.t[t]);
  for (int r = 0; r < moe__emu.rows[t]; r++) memcpy(moe__emu.t[t][r], (const uint8_t *)base + (size_t)r * stride, moe__emu.colsb[t]);
}
static inline void moe__emu_store(int t, void *base, size_t stride) {
  for (int r = 0; r < moe__emu.rows[t]; r++) memcpy((uint8_t *)base + (size_t)r * stride, moe__emu.t[t][r], moe__emu.colsb[t]);
}
static inline void moe__emu_zero(int t) { memset(moe__emu.t[t], 0, sizeof moe__emu.t[t]); }
/* DAZ and FTZ: a subnormal reads (or is written) as zero of its sign */
static inline float moe__emu_flush(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if ((u & 0x7F800000u) == 0) u &= 0x80000000u;
  memcpy(&v, &u, 4);
  return v;
}
static inline float moe__emu_bf16(const uint8_t *p) { return moe__emu_flush(moe_bf16_to_f32((uint16_t)(p[0] | p[1] << 8))); }
static inline void moe__emu_dpbf16ps(int c, int a, int b) {
  for (int m = 0; m < moe__emu.rows[c]; m++) {
    float tmp[32] = {0}, d;
    for (int k = 0; k < moe__emu.colsb[a] / 4; k++)
      for (int n = 0; n < moe__emu.colsb[c] / 4; n++)
        for (int e = 0; e < 2; e++)
          tmp[2 * n + e] = moe__emu_flush(fmaf(moe__emu_bf16(moe__emu.t[a][m] + 4 * k + 2 * e), moe__emu_bf16(moe__emu.t[b][k] + 4 * n + 2 * e), tmp[2 * n + e]));
    for (int n = 0; n < moe__emu.colsb[c] / 4; n++) {
      memcpy(&d, moe__emu.t[c][m] + 4 * n, 4);
      d = moe__emu_flush(moe__emu_flush(d) + moe__emu_flush(tmp[2 * n] + tmp[2 * n + 1]));
      memcpy(moe__emu.t[c][m] + 4 * n, &d, 4);
    }
  }
}
/* TDPBUSD: u8 (a) x s8 (b) */
static inline void moe__emu_dpbusd(int c, int a, int b) {
  for (int m = 0; m < moe__emu.rows[c]; m++)
    for (int n = 0; n < moe__emu.colsb[c] / 4; n++) {
      uint32_t d;
      memcpy(&d, moe__emu.t[c][m] + 4 * n, 4);
      for (int k = 0; k < moe__emu.colsb[a] / 4; k++) {
        int32_t s = 0;
        for (int i = 0; i < 4; i++) {
          uint8_t x = moe__emu.t[a][m][4 * k + i], y = moe__emu.t[b][k][4 * n + i];
          s += (int32_t)x * (int32_t)(int8_t)y;
        }
        d += (uint32_t)s;
      }
      memcpy(moe__emu.t[c][m] + 4 * n, &d, 4);
    }
}
#define MOE__TILE_CONFIG(cfg) moe__emu_cfg(cfg)
#define MOE__TILE_RELEASE() moe__emu_cfg(NULL)
#define MOE__TILE_LOAD(t, base, stride) moe__emu_load(t, base, stride)
#define MOE__TILE_LOAD_T1(t, base, stride) moe__emu_load(t, base, stride)
#define MOE__TILE_STORE(t, base, stride) moe__emu_store(t, base, stride)
#define MOE__TILE_ZERO(t) moe__emu_zero(t)
#define MOE__TILE_DPBF16PS(c, a, b) moe__emu_dpbf16ps(c, a, b)
#define MOE__TILE_DPBUSD(c, a, b) moe__emu_dpbusd(c, a, b)
#define MOE__AMX_FEATURES MOE__F_AMX_HOST /* the model needs no tiles */
#else
#define MOE__AMX_EMULATED 0
#define MOE__AMX_T MOE__T_AMX
/* gcc's _tile_loadconfig tells the compiler it reads one byte of the 64: the barrier keeps the
 * stores of the whole configuration before it (without it gcc 12 -O2 dropped them in the probe). */
#define MOE__TILE_CONFIG(cfg)                                                                         \
  do {                                                                                               \
    __asm__ volatile("" : : "r"(cfg) : "memory");                                                   \
    _tile_loadconfig(cfg);                                                                           \
  } while (0)
#define MOE__TILE_RELEASE() _tile_release()
#define MOE__TILE_LOAD(t, base, stride) _tile_loadd(t, base, (long)(stride))
#define MOE__TILE_LOAD_T1(t, base, stride) _tile_stream_loadd(t, base, (long)(stride)) /* tileloaddt1 */
#define MOE__TILE_STORE(t, base, stride) _tile_stored(t, base, (long)(stride))
#define MOE__TILE_ZERO(t) _tile_zero(t)
#define MOE__TILE_DPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)
#define MOE__TILE_DPBUSD(c, a, b) _tile_dpbusd(c, a, b)
#define MOE__AMX_FEATURES MOE__F_AMX
#endif
#define MOE__AMX_FN __attribute__((target(MOE__AMX_T))) static inline

/* ---- the microkernel ------------------------------------------------------------------------------
 * Every tile is 16 rows x 64 bytes (one configuration for every precision, loaded once per thread):
 *
 *   tmm0..3  C: 16 rows x 16 f32 / int32
 *   tmm4, 5  A: row tiles 0 and 1 (rows 0-15, 16-31) x one k step
 *   tmm6, 7  B: one panel's columns 0-15 and 16-31 x one k step (16 lines of layout (a))
 *
 * A k step is 64 bytes of a row: 32 bf16 k (tdpbf16ps) or 64 int8 k (tdpbusd). A call runs
 * one or more row blocks (the layer's blocks of one expert) against the same panels, k in chunks of
 * MOE__AMX_KC steps. A chunk's B tiles are staged once, a chunk ahead, for every block (stored lines
 * in place; low-bit lines decoded into an L1 block); each block's A tiles are read in place when its
 * rows are lda apart, else copied into an L1 block in tile order:
 *
 *   chunk ─► B: stored lines, or b[panel][step][half]     per block ─► A: in place, or a[rt][step]
 *            rows > 16, two panels: pass per panel, 2x2     C0 C1 = rt0 x (cols 0-15, 16-31)
 *                                                          C2 C3 = rt1 x (cols 0-15, 16-31)
 *            otherwise one pass: 2x2, 1x4 (C0 C1 panel 0, C2 C3 panel 1) or 1x2
 *            C through cbuf[block] between passes and chunks (resident with one block, one pass)
 *
 * C stays in the tiles over a whole scale group, then goes through cbuf into the totals as in the
 * AVX-512 low-bit kernels (tot = fma(sum, scale, tot): FP8, INT4), a few rows after each step of the
 * next group's first pass (there, not in one run between the chunks: at M = 2048 the layer's FP8 and
 * INT4 calls 5-16 % faster). bf16, int8 and MXFP4 have one
 * group: MXFP4's e8m0 scale is folded into the decoded bf16 weights, which is exact for a power of
 * two in bf16's normal range (calls with a valid column's scale outside it run the AVX-512 kernel). */
/* k steps per chunk. A chunk's A tiles (8 KB) and two chunks of B tiles (2 x 16 KB) stay in L1: a
 * call keeps ~42 KB of state on the stack. */
#define MOE__AMX_KC 4
/* Row blocks per call: the layer hands up to MOE__AMX_NB blocks of one expert to one call, so each
 * chunk's B tiles (loaded or decoded once) serve them all from L1. A block's C between chunks and
 * its scale-group totals (16 KB) lie in the caller's scratch: the layer's workspace (MOE__AMX_NB
 * blocks per worker), else the stack (MOE__AMX_NB_STACK blocks): a thread that runs AMX kernels
 * needs ~100 KB of stack. Eight: a chunk of 2048 tokens gives an expert of Qwen3-30B-A3B 4-5
 * blocks (128 +- 11 rows), which then share one decode of each panel instead of 1.4 (4 + 1). */
#ifndef MOE__AMX_NB
#define MOE__AMX_NB 8
#endif
#define MOE__AMX_NB_STACK 2
/* Panel pairs per dense call in the layer (bf16, fp16, int8: moe__amx_gemm_pairs, with MOE__AMX_NB /
 * MOE__AMX_PAIRS blocks): 1, pair by pair, unless a build sets more; built for the next AMX sitting
 * to measure (bench/amx_sitting.sh), not measured yet. */
#ifndef MOE__AMX_PAIRS
#define MOE__AMX_PAIRS 1
#endif
/* 1 when the tiles read B decoded into L1 (FP8, INT4, MXFP4): those calls take MOE__AMX_NB blocks
 * and stage the next chunk under the tiles; bf16 and int8 read the stored lines in place, from L2,
 * and keep MOE__AMX_NB_STACK blocks (four blocks' C and A crowd L1: bf16 M = 2048 7 % slower). */
static inline int moe__amx_decodes(moe_precision p) { return p != MOE_PREC_BF16 && p != MOE_PREC_FP16 && p != MOE_PREC_INT8; }
typedef struct moe__amx_block_buf {
  MOE__ALIGN64 int32_t c[2][2][2][16 * 16]; /* C between chunks: [rt][panel][half]  */
  MOE__ALIGN64 float tot[MOE_BLOCK_M * 64]; /* totals over the scale groups (FP8, INT4) */
} moe__amx_block_buf;

/* The thread's loaded configuration (0: none). */
static MOE__TLS int moe__amx_loaded;
MOE__AMX_FN void moe__amx_config(void) {
  moe__tilecfg cfg;
  if (moe__amx_loaded) return;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  MOE__TILE_CONFIG(&cfg);
  moe__amx_loaded = 1;
}
/* The end of a thread's tile use (the layer calls it when a thread's region work ends). */
MOE__AMX_FN void moe__amx_release(void) {
  if (!moe__amx_loaded) return;
  MOE__TILE_RELEASE();
  moe__amx_loaded = 0;
}

enum { MOE__AMX_BF16, MOE__AMX_BUSD };                             /* the dot product of a precision */
enum { MOE__AMX_2X2 = 0, MOE__AMX_1X4 = 1, MOE__AMX_1X2 = 2 };     /* C tile shapes of a pass     */

/* One B tile pair: columns 0-15 at t0, 16-31 at t1, rows `stride` bytes apart. */
typedef struct moe__amx_b {
  const uint8_t *t0, *t1;
  size_t stride;
} moe__amx_b;

/* A call's state: its plan, and the L1 blocks it works in. */
typedef struct moe__amx_call {
  MOE__ALIGN64 uint8_t a[2][MOE__AMX_KC][16 * 64];       /* copied A tiles of a block's chunk     */
  MOE__ALIGN64 uint8_t bb[2][2][MOE__AMX_KC][2][16 * 64]; /* decoded B tiles (or the K tail's), two chunks */
  moe__amx_b btt[2][2][MOE__AMX_KC];                     /* B tiles per panel, step, of two chunks */
  moe__amx_b at[MOE__AMX_KC];                            /* A tiles per step (t0, t1: row tiles)   */
  uint8_t (*b)[MOE__AMX_KC][2][16 * 64];                 /* the chunk's: bb[buffer]               */
  moe__amx_b (*bt)[MOE__AMX_KC];                         /* the chunk's: btt[buffer]              */
  moe__amx_block_buf *bufs;                              /* each block's C and totals             */
  int kc, blk;                                           /* k steps per chunk; the block running  */
  moe_precision p;
  int a8, dot, np, nrt, shape;
  int64_t ks, steps, gsteps; /* k per step; steps of the call; steps per scale group                */
  int64_t kgroup;            /* k per scale group of the packed meta (1: none)                     */
  const uint8_t *codes[2];
  moe__tables tab;
  moe__lowbit L;
  const uint8_t *pf, *pf_end; /* w_next, prefetched a few lines per step                           */
  int pf_lines;
  const uint8_t *own[2];      /* or each panel's own lines, MOE__AMX_OWN_AHEAD bytes ahead          */
  int64_t kpad;               /* the codes' padded k                                                */
  int64_t next_c0;            /* the next chunk: its first step, its steps, how many are staged, and */
  int next_n, next_done, next_buf; /* its buffer                                                    */
  int interleave, stage_here; /* decoded B: the next chunk staged a step at a time under the tiles  */
  const moe_gemm_args *gs;    /* the blocks' arguments                                              */
  MOE__ALIGN64 int32_t csum[4][4][16]; /* W4A8: per group (mod 4) and column vector, sum_k (q - zero) */
  int64_t fin_gi;             /* the scale group whose sums wait in cbuf to be finished (-1: none)  */
  __m512 fin_scale[4];        /* its scales per column vector, and W4A8's offsets (128 x csum)      */
  __m512i fin_off[4];
  int32_t fin_row[MOE__AMX_NB]; /* per block, the first row not yet finished                        */
  int fin_b, fin_per_step;    /* the block finishing under the running pass, and its rows per step  */
} moe__amx_call;

/* The dot product of tiles c += a . b in the call's precision (tile numbers are immediates). */
#define MOE__AMX_DOT(C, c, a, b)                                                                   \
  do {                                                                                             \
    if ((C)->dot == MOE__AMX_BF16) MOE__TILE_DPBF16PS(c, a, b);                                    \
    else MOE__TILE_DPBUSD(c, a, b);                                                                \
  } while (0)

/* The A tiles of steps [s0, s0 + n): read in place when the rows are lda bytes apart (every step
 * before K's tail), else copied into C->a (row r of row tile rt from a[16 rt + r], k past kred
 * zero). Rows past mr stay zero there. */
MOE__AMX_FN void moe__amx_pack_a(const moe_gemm_args *g, moe__amx_call *C, int64_t s0, int n) {
  const int64_t elt = C->a8 ? 1 : 2;
  const int in_place = g->lda != 0;
  int copy = n; /* the first step copied */
  for (int s = 0; s < n; s++) {
    const int64_t k0 = (s0 + s) * C->ks;
    moe__amx_b *at = &C->at[s];
    if (in_place && (k0 + C->ks) <= g->kred) {
      const uint8_t *a0 = (const uint8_t *)g->a[0] + k0 * elt;
      at->t0 = a0, at->t1 = a0 + 16 * g->lda, at->stride = (size_t)g->lda;
    } else {
      at->t0 = C->a[0][s], at->t1 = C->a[1][s], at->stride = 64;
      copy = copy < s ? copy : s;
    }
  }
  if (copy == n) return; /* all in place: no scalar work between the tile chains (in cache: 1.2x) */
  for (int32_t row = 0; row < 16 * C->nrt; row++) {
    const uint8_t *src = row < g->mr ? (const uint8_t *)g->a[row] : NULL;
    uint8_t *dst = C->a[row >> 4][0] + 64 * (row & 15);
    for (int s = copy; s < n; s++) {
      const int64_t k0 = (s0 + s) * C->ks, left = src ? (g->kred - k0) * elt : 0;
      const __mmask64 mk = left >= 64 ? ~(__mmask64)0 : left > 0 ? (((__mmask64)1 << left) - 1) : 0;
      _mm512_store_si512(dst + (size_t)s * 1024, _mm512_maskz_loadu_epi8(mk, src ? src + k0 * elt : dst));
    }
  }
}

/* The B tiles of panel i for the chunk's steps c0 + [s_lo, s_hi). Stored lines (bf16, int8) are
 * read in place (two lines per B-tile row: stride 128); the step that reaches past the codes (k
 * tail) and the low-bit formats go to C->b, lines past the codes zero. */
MOE__AMX_FN void moe__amx_prepare_b(moe__amx_call *C, int i, int64_t c0, int s_lo, int s_hi, int64_t kpad) {
  const uint8_t *codes = C->codes[i];
  const moe__lowbit *L = &C->L;
  for (int s = s_lo; s < s_hi; s++) {
    const int64_t step = c0 + s, k0 = step * C->ks;
    uint8_t *b0 = C->b[i][s][0], *b1 = C->b[i][s][1];
    moe__amx_b *bt = &C->bt[i][s];
    int64_t valid; /* B rows of this step inside the codes */
    bt->t0 = b0, bt->t1 = b1, bt->stride = 64;
    switch (C->p) {
    case MOE_PREC_FP8: { /* one k pair per line, layout (b); the tables copied out of C, which the
                            stores into C->b may alias, so they stay in registers (decode roof 1.3x) */
      const moe__tables tab = C->tab;
      valid = kpad / 2 - k0 / 2;
      for (int r = 0; r < 16; r++) {
        __m512bh c0 = (__m512bh)_mm512_setzero_si512(), c1 = c0;
        if (r < valid) moe__fp8_line(codes + 64 * (size_t)(k0 / 2 + r), &tab, &c0, &c1);
        _mm512_store_si512(b0 + 64 * r, (__m512i)c0), _mm512_store_si512(b1 + 64 * r, (__m512i)c1);
      }
      break;
    }
    case MOE_PREC_INT4_W4A16: case MOE_PREC_MXFP4: { /* 8 k per line pair, layout (c) */
      const int mx = C->p == MOE_PREC_MXFP4;
      const __m512i tab = mx ? C->tab.hi0 : C->tab.lo0;
      __m512i adj[2]; /* INT4: zero bytes; MXFP4: exponent adds */
      for (int h = 0; h < 2; h++)
        adj[h] = mx ? moe__e8m0_adds(L->meta[i] + (size_t)(k0 / 32) * MOE_NR + 16 * h) : moe__lowbit_zero_bytes(L, k0 / C->kgroup, 2 * i + h);
      valid = kpad / 8 - k0 / 8;
      for (int q = 0; q < 4; q++)
        for (int h = 0; h < 2; h++) {
          uint8_t *rows = (h ? b1 : b0) + 256 * q; /* B-tile rows 4q .. 4q + 3: the line's pairs */
          const __m512i line = q < valid ? _mm512_load_si512(codes + 128 * (size_t)(k0 / 8 + q) + 64 * h) : _mm512_setzero_si512();
          if (q >= valid) {
            for (int j = 0; j < 4; j++) _mm512_store_si512(rows + 64 * j, _mm512_setzero_si512());
          } else if (mx) {
            for (int j = 0; j < 4; j++) _mm512_store_si512(rows + 64 * j, moe__e8m0_fold((__m512i)moe__b4_pair(line, j, tab), adj[h]));
          } else {
            __m512i even, odd;
            moe__b4_minus_zero(line, adj[h], &even, &odd);
            for (int j = 0; j < 4; j++) _mm512_store_si512(rows + 64 * j, (__m512i)moe__b4_pair_minus(even, odd, j, tab));
          }
        }
      break;
    }
    case MOE_PREC_INT4_W4A8: { /* 4 k per line, layout (d), as q - zero (-15..15), and its column sums */
      const int64_t gi = k0 / C->kgroup;
      const __m512i ones = _mm512_set1_epi8(1);
      int32_t *cs0 = C->csum[gi & 3][2 * i], *cs1 = C->csum[gi & 3][2 * i + 1];
      __m512i z[2], s0 = _mm512_setzero_si512(), s1 = s0;
      for (int h = 0; h < 2; h++) z[h] = moe__lowbit_zero_bytes(L, gi, 2 * i + h);
      if (k0 % C->kgroup) s0 = _mm512_load_si512(cs0), s1 = _mm512_load_si512(cs1);
      valid = kpad / 4 - k0 / 4; /* padded k hold the last group's zero point: q - zero = 0 there */
      for (int r = 0; r < 16; r++) {
        __m512i c0 = _mm512_setzero_si512(), c1 = c0;
        if (r < valid) {
          moe__q4_line(codes + 64 * (size_t)(k0 / 4 + r), &c0, &c1);
          c0 = _mm512_sub_epi8(c0, z[0]), c1 = _mm512_sub_epi8(c1, z[1]);
          s0 = _mm512_dpbusd_epi32(s0, ones, c0), s1 = _mm512_dpbusd_epi32(s1, ones, c1);
        }
        _mm512_store_si512(b0 + 64 * r, c0), _mm512_store_si512(b1 + 64 * r, c1);
      }
      _mm512_store_si512(cs0, s0), _mm512_store_si512(cs1, s1);
      break;
    }
    default: { /* bf16, int8: two stored lines per B-tile row */
      const int kr = C->a8 ? 4 : 2;
      const uint8_t *at = codes + 128 * (size_t)(k0 / kr);
      valid = kpad / kr - k0 / kr;
      if (valid >= 16) {
        bt->t0 = at, bt->t1 = at + 64, bt->stride = 128;
        break;
      }
      for (int r = 0; r < 16; r++) {
        const __m512i z = _mm512_setzero_si512();
        _mm512_store_si512(b0 + 64 * r, r < valid ? _mm512_load_si512(at + 128 * r) : z);
        _mm512_store_si512(b1 + 64 * r, r < valid ? _mm512_load_si512(at + 128 * r + 64) : z);
      }
    }
    }
  }
}

/* The cbuf block of C tile t in a pass of `shape` over panel i (of the running block). */
static inline int32_t *moe__amx_cbuf(moe__amx_call *C, int shape, int i, int t) {
  if (shape == MOE__AMX_2X2) return C->bufs[C->blk].c[t >> 1][i][t & 1];
  return C->bufs[C->blk].c[0][shape == MOE__AMX_1X4 ? t >> 1 : 0][t & 1];
}

/* bf16 and fp16 calls of one block of up to 16 rows (decode-sized batches: Qwen3 M = 64-128) stream
 * their panels from DRAM with little tile work per line, and the next pair's prefetch (w_next),
 * spread over the call, leaves each step's lines to arrive late: there each step prefetches its own
 * lines two steps ahead instead (Emerald Rapids, Qwen3 bf16: M = 64 51-56 -> 50 ms, M = 128 55-61
 * -> 51 ms). Larger blocks, int8 and the decoded formats measured no gain. */
#define MOE__AMX_OWN_AHEAD 4096
static inline int moe__amx_own_prefetch(moe_precision p, const moe_gemm_args *gs, int nb) {
  return nb == 1 && gs[0].mr <= 16 && (p == MOE_PREC_BF16 || p == MOE_PREC_FP16);
}

/* A few lines of the caller's next weights into L2 per k step, or the step's own B lines (16 rows
 * 128 bytes apart, per panel) MOE__AMX_OWN_AHEAD bytes ahead. */
MOE__AMX_FN void moe__amx_prefetch(moe__amx_call *C) {
  for (int l = 0; l < C->pf_lines && C->pf < C->pf_end; l++, C->pf += 64) _mm_prefetch((const char *)C->pf, _MM_HINT_T1);
  const int step_bytes = 16 * 128; /* a step's B-tile rows of one panel, in place */
  if (!C->own[0]) return;
  for (int i = 0; i < C->np; i++) moe__prefetch_ahead(C->own[i], step_bytes / 64), C->own[i] += step_bytes;
}

/* Points the call at buffer `buf`'s B tiles. */
static inline void moe__amx_use(moe__amx_call *C, int buf) { C->b = C->bb[buf], C->bt = C->btt[buf]; }

/* Stages the next chunk's steps up to `upto` (into its own buffer; the running chunk's stay). */
MOE__AMX_FN void moe__amx_stage_next(moe__amx_call *C, int upto) {
  uint8_t (*b)[MOE__AMX_KC][2][16 * 64] = C->b;
  moe__amx_b (*bt)[MOE__AMX_KC] = C->bt;
  upto = upto < C->next_n ? upto : C->next_n;
  if (C->next_done >= upto) return;
  moe__amx_use(C, C->next_buf);
  for (int i = 0; i < C->np; i++) moe__amx_prepare_b(C, i, C->next_c0, C->next_done, upto, C->kpad);
  C->next_done = upto;
  C->b = b, C->bt = bt;
}

/* Up to n more rows of block b's finished scale group C->fin_gi: their sums in cbuf, scaled, into
 * the block's totals (FP8, INT4). W4A8's int32 sums are sum_k a (q - zero) with a = a' + 128 (u8):
 * less 128 sum_k (q - zero), the exact sum_k a' (q - zero) that vpdpbusd gives. */
MOE__AMX_FN void moe__amx_finish_rows(moe__amx_call *C, int b, int32_t n) {
  const int32_t r0 = C->fin_row[b], r1 = r0 + n < C->gs[b].mr ? r0 + n : C->gs[b].mr;
  C->L.tot = C->bufs[b].tot;
  for (int32_t row = r0; row < r1; row++)
    for (int v = 0; v < 2 * C->np; v++) {
      const __m512i s = _mm512_load_si512(C->bufs[b].c[row >> 4][v >> 1][v & 1] + 16 * (row & 15));
      moe__lowbit_finish(&C->L, row, v, C->a8 ? _mm512_cvtepi32_ps(_mm512_sub_epi32(s, C->fin_off[v])) : _mm512_castsi512_ps(s),
                         C->fin_scale[v]);
    }
  C->fin_row[b] = r1;
}
/* Group gi's sums now wait in every block's cbuf: its scales and offsets, once. */
MOE__AMX_FN void moe__amx_finish_begin(moe__amx_call *C, int64_t gi, int nb) {
  C->fin_gi = gi;
  for (int b = 0; b < nb; b++) C->fin_row[b] = 0;
  for (int v = 0; v < 2 * C->np; v++) {
    C->fin_scale[v] = moe__lowbit_scale(&C->L, gi, v);
    C->fin_off[v] = C->a8 ? _mm512_slli_epi32(_mm512_load_si512(C->csum[gi & 3][v]), 7) : _mm512_setzero_si512();
  }
}
/* Every block's rest of the group waiting in cbuf. */
MOE__AMX_FN void moe__amx_finish_all(moe__amx_call *C, int nb) {
  if (C->fin_gi < 0) return;
  for (int b = 0; b < nb; b++) moe__amx_finish_rows(C, b, MOE_BLOCK_M);
  C->fin_gi = -1;
}

/* n steps of one pass: panel i (2x2, 1x2) or both panels (1x4). A pass that stages decodes one
 * step of the next chunk after each step's tile instructions, so the vector decode runs while
 * the tiles execute instead of between their chains. */
MOE__AMX_FN void moe__amx_steps(moe__amx_call *C, int i, int n) {
  for (int s = 0; s < n; s++) {
    const moe__amx_b *b0 = &C->bt[i][s], *b1 = &C->bt[1][s];
    MOE__TILE_LOAD(4, C->at[s].t0, C->at[s].stride);
    MOE__TILE_LOAD(6, b0->t0, b0->stride);
    MOE__AMX_DOT(C, 0, 4, 6);
    MOE__TILE_LOAD(7, b0->t1, b0->stride);
    MOE__AMX_DOT(C, 1, 4, 7);
    if (C->shape == MOE__AMX_2X2) {
      MOE__TILE_LOAD(5, C->at[s].t1, C->at[s].stride);
      MOE__AMX_DOT(C, 2, 5, 6);
      MOE__AMX_DOT(C, 3, 5, 7);
    } else if (C->shape == MOE__AMX_1X4) {
      MOE__TILE_LOAD(6, b1->t0, b1->stride);
      MOE__AMX_DOT(C, 2, 4, 6);
      MOE__TILE_LOAD(7, b1->t1, b1->stride);
      MOE__AMX_DOT(C, 3, 4, 7);
    }
    moe__amx_prefetch(C);
    if (C->stage_here) moe__amx_stage_next(C, C->next_done + 1);
    if (C->fin_per_step) moe__amx_finish_rows(C, C->fin_b, C->fin_per_step);
  }
}

/* The C tiles of a pass from cbuf (zero at a group's start), and back. */
MOE__AMX_FN void moe__amx_load_c(moe__amx_call *C, int i, int zero) {
  const int four = C->shape != MOE__AMX_1X2;
  if (zero) {
    MOE__TILE_ZERO(0);
    MOE__TILE_ZERO(1);
    if (four) {
      MOE__TILE_ZERO(2);
      MOE__TILE_ZERO(3);
    }
    return;
  }
  MOE__TILE_LOAD(0, moe__amx_cbuf(C, C->shape, i, 0), 64);
  MOE__TILE_LOAD(1, moe__amx_cbuf(C, C->shape, i, 1), 64);
  if (four) {
    MOE__TILE_LOAD(2, moe__amx_cbuf(C, C->shape, i, 2), 64);
    MOE__TILE_LOAD(3, moe__amx_cbuf(C, C->shape, i, 3), 64);
  }
}
MOE__AMX_FN void moe__amx_store_c(moe__amx_call *C, int i) {
  MOE__TILE_STORE(0, moe__amx_cbuf(C, C->shape, i, 0), 64);
  MOE__TILE_STORE(1, moe__amx_cbuf(C, C->shape, i, 1), 64);
  if (C->shape != MOE__AMX_1X2) {
    MOE__TILE_STORE(2, moe__amx_cbuf(C, C->shape, i, 2), 64);
    MOE__TILE_STORE(3, moe__amx_cbuf(C, C->shape, i, 3), 64);
  }
}


/* The epilogue of the one-group precisions (bf16, int8, MXFP4) from cbuf. */
MOE__AMX_FN void moe__amx_store(const moe_gemm_args *g, moe__amx_call *C, int gemm1) {
  for (int32_t row = 0; row < g->mr; row++) {
    __m512 v[4];
    for (int q = 0; q < 4; q++) {
      const int i = q >> 1 < C->np ? q >> 1 : 0;
      const __m512i s = _mm512_load_si512(C->bufs[C->blk].c[row >> 4][i][q & 1] + 16 * (row & 15));
      v[q] = C->p == MOE_PREC_INT8 ? moe__qc8_dequant(s, C->codes[i] - moe__codes_offset(C->p), q & 1, g->a_scale[row]) : _mm512_castsi512_ps(s);
    }
    if (gemm1) moe__gemm1_store_avx512(g, row, v[0], v[1], v[2], v[3]);
    else moe__gemm2_store_avx512(g, row, 2 * C->np, v[0], v[1], v[2], v[3]);
  }
}

/* MXFP4's e8m0 scales of the call's panels (their valid columns) all in [2, 252]: folded into bf16
 * weights, exactly. */
MOE__AMX_FN int moe__amx_e8m0_foldable(const moe_gemm_args *g, const moe__amx_call *C, int gemm1) {
  int ok = 1;
  for (int i = 0; i < C->np; i++) {
    const int32_t nv = gemm1 ? g->nr : g->nr - 32 * i < 32 ? g->nr - 32 * i : 32;
    ok &= moe__e8m0_foldable(C->L.meta[i], moe__cdiv(g->kred, 32), nv);
  }
  return ok;
}

/* The end of the chunk that starts at step c0: KC steps, or the end of its scale group. */
static inline int64_t moe__amx_chunk_end(const moe__amx_call *C, int64_t c0) {
  const int64_t g1 = (c0 / C->gsteps + 1) * C->gsteps, end = g1 < C->steps ? g1 : C->steps;
  return c0 + C->kc < end ? c0 + C->kc : end;
}
/* The next chunk is steps [c0, c1), staged into buffer `buf` (none yet). */
static inline void moe__amx_next(moe__amx_call *C, int64_t c0, int64_t c1, int buf) {
  C->next_c0 = c0, C->next_n = (int)(c1 - c0), C->next_done = 0, C->next_buf = buf;
}
/* Block b of the call runs next: its row tiles and tile shape. */
static inline void moe__amx_block(moe__amx_call *C, const moe_gemm_args *g, int b) {
  C->blk = b, C->nrt = g->mr > 16 ? 2 : 1;
  C->shape = C->nrt == 2 ? MOE__AMX_2X2 : C->np == 2 ? MOE__AMX_1X4 : MOE__AMX_1X2;
}

/* k per scale group applied as sums (FP8 blocks, INT4 groups), 0 for one group (bf16, int8, MXFP4). */
static inline int64_t moe__amx_group_k(moe_precision p, const moe_gemm_args *g) {
  return g->kgroup && p != MOE_PREC_MXFP4 ? g->kgroup : 0;
}

/* The plan of a call over nb blocks against gs[0]'s panels (steps, chunks, codes, tables, prefetch),
 * with no tile state touched; 0 when the call does not fit the tiles. */
MOE__AMX_FN int moe__amx_plan(moe__amx_call *C, moe_precision p, const moe_gemm_args *gs, int nb, int gemm1,
                              moe__amx_block_buf *bufs) {
  const moe_gemm_args *g = &gs[0];
  const int64_t kg = moe__amx_group_k(p, g);
  C->bufs = bufs, C->p = p, C->a8 = moe__is_a8(p), C->np = gemm1 || g->nr > MOE_NR ? 2 : 1;
  C->dot = C->a8 ? MOE__AMX_BUSD : MOE__AMX_BF16;
  C->ks = C->a8 ? 64 : 32;
  if (kg % C->ks) return 0;
  C->steps = moe__cdiv(g->kred, C->ks);
  C->kc = MOE__AMX_KC;
  C->kgroup = g->kgroup ? g->kgroup : 1;
  C->gsteps = kg ? kg / C->ks : C->steps;
  for (int i = 0; i < C->np; i++) C->codes[i] = g->w + (size_t)i * g->panel_bytes + moe__codes_offset(p);
  if (C->np == 1) C->codes[1] = C->codes[0];
  moe__tables_of(p, &C->tab);
  moe__lowbit_init(p, g, C->np, &C->tab, bufs[0].tot, &C->L);
  if (p == MOE_PREC_MXFP4 && !moe__amx_e8m0_foldable(g, C, gemm1)) return 0;
  C->pf = g->w_next, C->pf_end = g->w_next ? g->w_next + g->w_next_bytes : NULL;
  C->pf_lines = g->w_next ? (int)moe__cdiv((int64_t)(g->w_next_bytes / 64), C->steps * nb) : 0;
  C->own[0] = C->own[1] = NULL;
  if (moe__amx_own_prefetch(p, gs, nb)) { /* past the panels' end: the expert's next pair, or nothing (no fault) */
    for (int i = 0; i < C->np; i++) C->own[i] = C->codes[i] + MOE__AMX_OWN_AHEAD;
    C->pf_lines = 0;
  }
  C->kpad = g->kpad;
  C->interleave = moe__amx_decodes(p);
  C->stage_here = 0;
  C->gs = gs, C->fin_gi = -1, C->fin_per_step = 0;
  return 1;
}

/* A call's B staging alone (the benchmarks' decode roof): every chunk's B tiles as the kernel stages
 * them (FP8, INT4 and MXFP4 lines decoded into C's L1 blocks; bf16 and int8 lines only pointed at),
 * without A, tiles or C. C and buf are the caller's, so the decoded tiles stay live. 0 when the
 * call does not fit the tiles. Runs on any CPU with the tier's AVX-512 features. */
MOE__AMX_FN int moe__amx_stage_all(moe__amx_call *C, moe_precision p, const moe_gemm_args *g, int gemm1,
                                   moe__amx_block_buf *buf) {
  if (!moe__amx_plan(C, p, g, 1, gemm1, buf)) return 0;
  moe__amx_use(C, 0);
  for (int64_t c0 = 0, b = 0; c0 < C->steps; b ^= 1) {
    const int64_t c1 = moe__amx_chunk_end(C, c0);
    moe__amx_next(C, c0, c1, (int)b);
    moe__amx_stage_next(C, C->next_n);
    c0 = c1;
  }
  return 1;
}

/* The AMX kernel of precision p over nb blocks of rows (gs[0..nb-1]: the same panels, kred and
 * hint; their own rows and outputs), bufs[b] their C and totals: gemm1 (gate and up panels, activation) or
 * gemm2 (1-2 panels). Per chunk the B tiles are staged once (a chunk ahead), then every block runs
 * its passes; with one block and one pass C stays in the tiles over a group, else it goes through
 * cbuf between chunks. 0 when the call does not fit the tiles (the caller runs AVX-512). */
MOE__AMX_FN int moe__amx_gemm(moe_precision p, const moe_gemm_args *gs, int nb, int gemm1, moe__amx_block_buf *bufs) {
  const int64_t kg = moe__amx_group_k(p, &gs[0]);
  moe__amx_call C;
  if (!moe__amx_plan(&C, p, gs, nb, gemm1, bufs)) return 0;
  for (int b = 0; b < nb; b++) {
    if (kg) memset(bufs[b].tot, 0, (size_t)gs[b].mr * 64 * sizeof(float));
    if (!gemm1) moe__prefetch_c_rows(&gs[b], 0, gs[b].mr);
  }
  moe__amx_config();
  moe__amx_use(&C, 0);
  moe__amx_next(&C, 0, moe__amx_chunk_end(&C, 0), 0);
  moe__amx_stage_next(&C, C.next_n); /* the first chunk, before any tiles */
  for (int64_t c0 = 0, c1 = moe__amx_chunk_end(&C, 0), buf = 0; c0 < C.steps; buf ^= 1) {
    const int64_t n0 = c1, n1 = n0 < C.steps ? moe__amx_chunk_end(&C, n0) : n0, gs0 = c0 / C.gsteps * C.gsteps;
    const int group_end = c1 == C.steps || c1 % C.gsteps == 0;
    /* the next chunk a chunk ahead (its stores retire meanwhile): decoded B step by step under
       the first pass's tiles, stored lines (pointers only) here */
    moe__amx_next(&C, n0, n1, (int)buf ^ 1);
    moe__amx_use(&C, (int)buf);
    if (!C.interleave) moe__amx_stage_next(&C, C.next_n);
    for (int b = 0; b < nb; b++) {
      int passes, resident;
      moe__amx_block(&C, &gs[b], b);
      passes = C.shape == MOE__AMX_2X2 ? C.np : 1;
      resident = nb == 1 && passes == 1; /* C stays in the tiles from chunk to chunk */
      moe__amx_pack_a(&gs[b], &C, c0, (int)(c1 - c0));
      for (int i = 0; i < passes; i++) {
        if (!resident || c0 == gs0) moe__amx_load_c(&C, i, c0 == gs0);
        C.stage_here = C.interleave && b == 0 && i == 0;
        /* the last group's rows of this block, all finished under pass 0's steps: before its store reuses cbuf */
        if (i == 0 && C.fin_gi >= 0) C.fin_b = b, C.fin_per_step = (int)moe__cdiv(gs[b].mr, c1 - c0);
        moe__amx_steps(&C, i, (int)(c1 - c0));
        C.stage_here = 0, C.fin_per_step = 0;
        if (!resident || group_end) moe__amx_store_c(&C, i);
      }
    }
    moe__amx_stage_next(&C, C.next_n); /* what the steps did not reach */
    C.fin_gi = -1;
    if (group_end && kg) moe__amx_finish_begin(&C, c0 / C.gsteps, nb); /* finished under the next chunk's first passes */
    c0 = n0, c1 = n1;
  }
  moe__amx_finish_all(&C, nb);
  for (int b = 0; b < nb; b++) {
    moe__amx_block(&C, &gs[b], b);
    if (kg) moe__lowbit_store(&gs[b], bufs[b].tot, gemm1, C.np, C.a8);
    else moe__amx_store(&gs[b], &C, gemm1);
  }
  return 1;
}

/* nb blocks against the same panels on the tiles, or block by block on AVX-512 when the call does
 * not fit them: up to MOE__AMX_NB with the caller's scratch (nb block buffers), MOE__AMX_NB_STACK
 * without (NULL). */
MOE__AMX_FN void moe__amx_gemm_blocks(moe_precision p, const moe_gemm_args *gs, int nb, int gemm1, moe__amx_block_buf *scratch) {
  moe__amx_block_buf own[MOE__AMX_NB_STACK];
  const moe_gemm_config *avx512;
  if (moe__amx_gemm(p, gs, nb, gemm1, scratch ? scratch : own)) return;
  avx512 = moe_gemm_config_for(p, MOE_ISA_AVX512);
  for (int b = 0; b < nb; b++) (gemm1 ? avx512->gemm1 : avx512->gemm2)(&gs[b]);
}

/* ---- dense calls over several panel pairs (MOE__AMX_PAIRS) ------------------------------------
 * bf16, fp16 and int8 tiles read A and B in place from L2, where a 2x2 block's four tile loads a
 * step cap it at ~0.45-0.5 of the tile peak; with A from L1 and only B from L2 a harness ran at
 * ~0.85 of the products' own rate (docs/amx.md: third and eighth sittings). So a call may take
 * npair consecutive pairs of one expert's panels, and each block's A chunk (rows x KC steps x 64
 * bytes: 16 KB at KC 8) serves every pair from L1; C goes through bufs[j * nb + b] between chunks:
 *
 *   chunk ─► block b ─► pair j ─► pass (2x2: per panel; 1x4, 1x2: one) ─► C in, KC steps, C out
 *   after the last chunk, the epilogue of every (pair, block)
 *
 * Each C tile sums its k steps in the same order as moe__amx_gemm's, so both give the same bits.
 * Built for the next AMX sitting to measure (MOE__AMX_PAIRS > 1 in the layer); not measured yet. */
#ifndef MOE__AMX_PAIRS_KC
#define MOE__AMX_PAIRS_KC 8
#endif
/* 1: B tiles loaded with the streaming hint (tileloaddt1), so they leave the A chunk in L1 (the
 * eighth sitting's harness: 19.2-20.1 against 21.1-21.8 cycles a product); a variant to measure. */
#if defined(MOE__AMX_PAIRS_BT1) && MOE__AMX_PAIRS_BT1
#define MOE__TILE_LOAD_B MOE__TILE_LOAD_T1
#else
#define MOE__TILE_LOAD_B MOE__TILE_LOAD
#endif

/* The call's running (pair, block) g: its panels' codes and count, its pass shape, its C buffer. */
static inline void moe__amx_pair(moe__amx_call *C, const moe_gemm_args *g, int gemm1, int buf) {
  C->np = gemm1 || g->nr > MOE_NR ? 2 : 1;
  for (int i = 0; i < 2; i++) C->codes[i] = g->w + (size_t)(i < C->np ? i : 0) * g->panel_bytes + moe__codes_offset(C->p);
  moe__amx_block(C, g, buf);
}

/* n steps from step s0 of pass i: A rows lda apart, B's stored lines in place (a step's 16 B-tile
 * rows 128 bytes apart: 2 KB per step and panel). */
MOE__AMX_FN void moe__amx_dense_steps(moe__amx_call *C, const moe_gemm_args *g, int i, int64_t s0, int64_t n) {
  const size_t lda = (size_t)g->lda;
  const uint8_t *a = (const uint8_t *)g->a[0] + 64 * s0, *b0 = C->codes[i] + 2048 * s0, *b1 = C->codes[1] + 2048 * s0;
  for (int64_t s = 0; s < n; s++, a += 64, b0 += 2048, b1 += 2048) {
    MOE__TILE_LOAD(4, a, lda);
    MOE__TILE_LOAD_B(6, b0, 128);
    MOE__AMX_DOT(C, 0, 4, 6);
    MOE__TILE_LOAD_B(7, b0 + 64, 128);
    MOE__AMX_DOT(C, 1, 4, 7);
    if (C->shape == MOE__AMX_2X2) {
      MOE__TILE_LOAD(5, a + 16 * lda, lda);
      MOE__AMX_DOT(C, 2, 5, 6);
      MOE__AMX_DOT(C, 3, 5, 7);
    } else if (C->shape == MOE__AMX_1X4) {
      MOE__TILE_LOAD_B(6, b1, 128);
      MOE__AMX_DOT(C, 2, 4, 6);
      MOE__TILE_LOAD_B(7, b1 + 64, 128);
      MOE__AMX_DOT(C, 3, 4, 7);
    }
    moe__amx_prefetch(C);
  }
}

/* nb blocks x npair panel pairs (gs[j * nb + b]: pair j, block b; bufs likewise) of a dense
 * precision whose rows are lda apart and whose k is whole steps; 0 otherwise (nothing written).
 * gs[0]'s w_next (the caller's next panels) is prefetched over the call. */
MOE__AMX_FN int moe__amx_dense_pairs(moe_precision p, const moe_gemm_args *gs, int nb, int npair, int gemm1, moe__amx_block_buf *bufs) {
  moe__amx_call C;
  const int64_t ks = moe__is_a8(p) ? 64 : 32, steps = gs[0].kred / ks;
  int64_t passes = 0; /* per chunk, of all pairs and blocks */
  if (!bufs || moe__amx_decodes(p) || gs[0].kred % ks || nb * npair > MOE__AMX_NB) return 0;
  for (int x = 0; x < nb * npair; x++)
    if (!gs[x].lda || gs[x].kred != gs[0].kred) return 0;
  C.bufs = bufs, C.p = p, C.a8 = moe__is_a8(p), C.dot = C.a8 ? MOE__AMX_BUSD : MOE__AMX_BF16;
  for (int x = 0; x < nb * npair; x++) {
    moe__amx_pair(&C, &gs[x], gemm1, x);
    passes += C.shape == MOE__AMX_2X2 ? C.np : 1;
  }
  C.pf = gs[0].w_next, C.pf_end = gs[0].w_next ? gs[0].w_next + gs[0].w_next_bytes : NULL;
  C.pf_lines = gs[0].w_next ? (int)moe__cdiv((int64_t)(gs[0].w_next_bytes / 64), steps * passes) : 0;
  C.own[0] = C.own[1] = NULL;
  if (!gemm1)
    for (int x = 0; x < nb * npair; x++) moe__prefetch_c_rows(&gs[x], 0, gs[x].mr);
  moe__amx_config();
  for (int64_t c0 = 0; c0 < steps; c0 += MOE__AMX_PAIRS_KC) {
    const int64_t n = steps - c0 < MOE__AMX_PAIRS_KC ? steps - c0 : MOE__AMX_PAIRS_KC;
    for (int b = 0; b < nb; b++)
      for (int j = 0; j < npair; j++) {
        const moe_gemm_args *g = &gs[j * nb + b];
        moe__amx_pair(&C, g, gemm1, j * nb + b);
        for (int i = 0; i < (C.shape == MOE__AMX_2X2 ? C.np : 1); i++) {
          moe__amx_load_c(&C, i, c0 == 0);
          moe__amx_dense_steps(&C, g, i, c0, n);
          moe__amx_store_c(&C, i);
        }
      }
  }
  for (int x = 0; x < nb * npair; x++) {
    moe__amx_pair(&C, &gs[x], gemm1, x);
    moe__amx_store(&gs[x], &C, gemm1);
  }
  return 1;
}

/* nb blocks x npair pairs as above, or pair by pair (moe__amx_gemm_blocks: one pair, or calls that
 * do not fit it); scratch: the caller's MOE__AMX_NB block buffers, or NULL for at most
 * MOE__AMX_NB_STACK blocks. */
MOE__AMX_FN void moe__amx_gemm_pairs(moe_precision p, const moe_gemm_args *gs, int nb, int npair, int gemm1, moe__amx_block_buf *scratch) {
  if (npair > 1 && moe__amx_dense_pairs(p, gs, nb, npair, gemm1, scratch)) return;
  for (int j = 0; j < npair; j++) moe__amx_gemm_blocks(p, &gs[j * nb], nb, gemm1, scratch);
}

/* The AMX microkernels of the list (names: <rows>x<columns>c<KR> of the C block one call runs:
 * two row tiles of 16 x one panel pair; gemm2 both panels). Calls whose scale groups do not hold
 * whole k steps (FP8 blocks or INT4 groups that are not a multiple of 32 k, W4A8 of 64), and MXFP4
 * calls with extreme scales, run the AVX-512 kernel. */
#define MOE__AMX_ATTR __attribute__((target(MOE__AMX_T))) static inline
#define MOE__AMX_UKERNELS(fam, kr, prec)                                                                               \
  MOE__AMX_ATTR void moe_##fam##_gemm1_ukernel_32x32c##kr##__amx(const moe_gemm_args *g) { moe__amx_gemm_blocks(prec, g, 1, 1, NULL); } \
  MOE__AMX_ATTR void moe_##fam##_gemm2_ukernel_32x64c##kr##__amx(const moe_gemm_args *g) { moe__amx_gemm_blocks(prec, g, 1, 0, NULL); }
MOE__AMX_UKERNELS(bf16_bf16w, 2, MOE_PREC_BF16)
MOE__AMX_UKERNELS(qu8_qc8w, 4, MOE_PREC_INT8)
MOE__AMX_UKERNELS(bf16_fp8w, 2, MOE_PREC_FP8)
MOE__AMX_UKERNELS(qu8_qc4w, 4, MOE_PREC_INT4_W4A8)
MOE__AMX_UKERNELS(bf16_qc4w, 2, MOE_PREC_INT4_W4A16)
MOE__AMX_UKERNELS(bf16_mxfp4w, 2, MOE_PREC_MXFP4)
#undef MOE__AMX_UKERNELS
#endif /* AMX */

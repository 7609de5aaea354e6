/* Every kernel of the kernel list (moe_kernel_at) against its scalar twin, for every precision, with
 * data generated per precision through kit.h (the library's quantizers on random f32 weights): fp8
 * with several scale blocks (128x128, 64x32, 3x7), int4 with groups 32, 64 and 128. An edge sweep per
 * kernel and layout: K and N equal to, below, above and multiples of the blocks and groups, 1 to 32
 * rows, gemm2 over one or two panels (nr up to 64), strided output poisoned around the mr x nr block.
 * Rows are separate allocations of exactly kred elements, so AddressSanitizer catches a read past
 * the end. Then the row operations (quantize to u8, f32 <-> bf16, add) of every tier against the
 * scalar ones, bit for bit.
 *
 * Tolerances, relative to the tile's largest output: A8 gemm2 (int8, int4-w4a8) bit-exact (exact
 * int32 group sums, scales applied in one order, one fma per element); A8 gemm1 1e-5 (the
 * activation's exp/tanh differ in the last bits); A16 5e-5 (f32 sums in another order).
 *
 * A kernel whose features this CPU lacks prints "skip <name>: CPU lacks <isa> (<features>)" and is
 * counted; the test exits 77 only when no fast kernel and no vector row operation could run. A
 * precision with no fast kernel compiled in still runs its scalar kernel over the sweep (all of the
 * block written, finite, nothing outside it, the same bits twice): that checks the data and the
 * harness, it is not counted as a tested kernel. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT: the fold slots' CPU count against glibc's */
#define MOE__FOLD_SLOTS 3 /* MXFP4's folded path on 3 workers whatever the CPUs (test_fold_workers) */
#define MOE__FOLD_SLOTS_PER_CPU 0
#define MOE_IMPLEMENTATION
#include "../moe.h"
#include "test_util.h"
#include "oracle.h" /* after test_util.h: its layer helpers (orc_plain_make) too */

#include <sched.h>
#include <time.h>

/* ---- data: one layout of a precision's scale blocks, one packed expert ------------------------- */
typedef struct layout {
  int32_t block_n, block_k, group; /* 0: the default 128 */
  const char *name;
} layout;

/* The layouts a precision is swept with: every non-default block and group a kernel must honour. */
static int layouts_of(moe_precision p, layout out[4]) {
  static const layout plain = {0, 0, 0, "default"};
  /* blocks and groups longer than a kernel's k chunk (128; W4A8 256) carry sums across chunks (576:
   * on the tiles too, for W4A16 and W4A8 alike) */
  static const layout fp8[] = {{0, 0, 0, "blocks 128x128"}, {64, 32, 0, "blocks 64x32"}, {3, 7, 0, "blocks 3x7"},
                               {5, 321, 0, "blocks 5x321"}};
  static const layout int4[] = {{0, 0, 32, "group 32"}, {0, 0, 64, "group 64"}, {0, 0, 0, "group 128"},
                                {0, 0, 576, "group 576"}};
  const layout *from = p == MOE_PREC_FP8 ? fp8 : kit_is_int4(p) ? int4 : &plain;
  int n = from == &plain ? 1 : 4;
  memcpy(out, from, sizeof *from * (size_t)n);
  return n;
}

typedef struct kcase {
  moe_precision p;
  layout lay;
  int64_t N, K;
} kcase;

/* One random expert (E = 1, biases included) of the case, packed; kw keeps the plain weights. */
static void *pack_case(const kcase *kc, uint64_t seed, kit_weights *kw, moe_experts *ex) {
  kit_weights_random_blocks(kw, kc->p, 1, kc->N, kc->K, kc->lay.block_n, kc->lay.block_k, kc->lay.group, seed,
                            KIT_BIAS);
  return kit_pack(&kw->w, ex);
}

/* mr activation rows of kred elements, each its own allocation: u8 (q + 128) with a row scale for
 * A8 kernels, bf16 for A16 ones; and a top-k weight per row for gemm2. */
typedef struct act_rows {
  int32_t mr;
  void *row[MOE_BLOCK_M];
  float scale[MOE_BLOCK_M], weight[MOE_BLOCK_M];
  uint8_t *block; /* strided rows: one buffer, rows lda bytes apart (moe_gemm_args.lda), or NULL */
  int64_t lda;
  int32_t *gsum;  /* W4A8: the rows' group sums (moe_gemm_args.a_group_sum), or NULL */
  const int32_t *gsum_row[MOE_BLOCK_M];
} act_rows;

/* mr random rows; strided: in one buffer lda bytes apart, the bytes past each row's kred and the
 * rows past mr up to the next 16 poisoned (0xFF: bf16 NaN), which a kernel may read but must not use. */
static void act_rows_make(act_rows *a, kit_rng *r, int a8, int32_t mr, int64_t kred, int strided) {
  const int64_t elt = a8 ? 1 : 2;
  a->mr = mr;
  a->lda = strided ? (kred * elt + 63) / 64 * 64 + 64 : 0;
  a->block = NULL, a->gsum = NULL;
  if (strided) {
    const size_t bytes = (size_t)(a->lda * ((mr + 15) / 16 * 16));
    a->block = (uint8_t *)test_malloc(bytes);
    memset(a->block, 0xFF, bytes);
  }
  for (int32_t m = 0; m < mr; m++) {
    void *row = strided ? a->block + m * a->lda : NULL;
    if (a8) {
      float *xf = (float *)test_malloc((size_t)kred * sizeof(float));
      kit_fill_normal(r, xf, kred, 1.0);
      a->row[m] = row ? row : test_malloc((size_t)kred);
      a->scale[m] = moe_quantize_row_u8(xf, kred, (uint8_t *)a->row[m]);
      free(xf);
    } else {
      uint16_t *v = kit_bf16_row(r, kred);
      if (row) memcpy(row, v, (size_t)kred * 2), free(v);
      a->row[m] = row ? row : v;
      a->scale[m] = 1.0f;
    }
    a->weight[m] = (float)(0.1 + 0.9 * kit_uniform(r));
  }
}
/* The rows' sums of (a - 128) per group of u8 rows of kred, as the layer hands them to W4A8 kernels. */
static void act_rows_sums(act_rows *a, int64_t kred, int32_t group) {
  const int64_t ng = (kred + group - 1) / group;
  a->gsum = (int32_t *)test_malloc((size_t)(a->mr * ng) * sizeof(int32_t));
  for (int32_t m = 0; m < a->mr; m++) {
    const uint8_t *q = (const uint8_t *)a->row[m];
    a->gsum_row[m] = a->gsum + m * ng;
    for (int64_t j = 0; j < ng; j++) {
      int32_t sum = 0;
      for (int64_t k = j * group; k < kred && k < (j + 1) * group; k++) sum += q[k] - 128;
      a->gsum[m * ng + j] = sum;
    }
  }
}
static void act_rows_free(act_rows *a) {
  free(a->gsum);
  if (a->block) free(a->block);
  else
    for (int32_t m = 0; m < a->mr; m++) free(a->row[m]);
}

/* ---- running and comparing one call --------------------------------------------------------------- */
/* Runs fn and returns its output block: gemm1 overwrites a poisoned block; gemm2 adds into rows that
 * start from a known pattern (row m's that of row m0 + m). Around the mr x nr part: poison. */
static float *run(moe_gemm_ukernel fn, int which, const moe_gemm_args *proto, int64_t ldc, int32_t m0) {
  size_t count = (size_t)(uint32_t)proto->mr * (size_t)(uint32_t)ldc;
  float *c = (float *)test_malloc(count * sizeof(float)), *rows[MOE_BLOCK_M];
  moe_gemm_args g = *proto;
  test_poison(c, count * sizeof(float));
  if (which == 2)
    for (int32_t m = 0; m < proto->mr; m++) {
      rows[m] = c + m * ldc;
      for (int32_t n = 0; n < proto->nr; n++) rows[m][n] = 0.25f * (float)(m0 + m - n % 7);
    }
  g.c = c, g.ldc = ldc, g.c_rows = rows;
  fn(&g);
  return c;
}

/* test runs test, ref runs ref: every one of mr x nr written, finite and within tol of ref (relative
 * to the block's largest output), nothing past nr. Returns the max difference relative to that. */
/* keep: when not NULL, receives test's output (ldc = nr + 5) instead of freeing it. */
static double compare(moe_gemm_ukernel test, moe_gemm_ukernel ref, int which, const moe_gemm_args *g, double tol,
                      const char *what, float **keep) {
  int64_t ldc = g->nr + 5;
  float *a = run(test, which, g, ldc, 0), *b = run(ref, which, g, ldc, 0);
  double maxref = 0, maxdiff = 0, floor_;
  int bad = 0;
  for (int32_t m = 0; m < g->mr; m++)
    for (int64_t n = 0; n < ldc; n++) {
      float x = a[m * ldc + n], y = b[m * ldc + n];
      uint32_t ux;
      memcpy(&ux, &x, 4);
      if (n >= g->nr) {
        bad += ux != 0xFFFFFFFFu;
        continue;
      }
      if (!isfinite(x) || !isfinite(y)) {
        bad++;
        continue;
      }
      if (fabs(y) > maxref) maxref = fabs(y);
      if (fabs(x - y) > maxdiff) maxdiff = fabs(x - y);
    }
  CHECK(bad == 0, "%s: %d elements unwritten, not finite or written past nr", what, bad);
  /* outputs are O(1); the floor covers a block that happens to cancel */
  floor_ = maxref > 1e-3 ? maxref : 1e-3;
  CHECK(maxdiff <= tol * floor_, "%s: max diff %.3g vs max %.3g (tol %.1g)", what, maxdiff, maxref, tol);
  if (keep) *keep = a;
  else free(a);
  free(b);
  return maxdiff / floor_;
}

/* Row m of a call run alone (a 1-row call) gives the bits it has in the call: a token's output must
 * not depend on the rows beside it in its block, whatever tile heights the kernel cuts the block
 * into (the layer's blocks change with the batch and the chunking). Not for the AMX tier, whose
 * bf16-activation calls under MOE_AMX_MIN_ROWS rows run AVX-512 by design. */
static void check_row_alone(moe_gemm_ukernel fn, int which, const moe_gemm_args *g, float *all, int32_t m, const char *what) {
  const int64_t ldc = g->nr + 5; /* all: fn's output of the whole call (compare's keep) */
  moe_gemm_args g1 = *g;
  float *one;
  g1.mr = 1, g1.a = g->a + m, g1.lda = 0, g1.a_scale = g->a_scale + m;
  if (g->a_group_sum) g1.a_group_sum = g->a_group_sum + m;
  if (g->row_weight) g1.row_weight = g->row_weight + m;
  one = run(fn, which, &g1, ldc, m); /* gemm2 adds into row m's starting pattern */
  CHECK(memcmp(one, all + (size_t)m * (size_t)ldc, (size_t)g->nr * sizeof(float)) == 0, "%s: row %d alone differs from its bits in the call",
        what, (int)m);
  free(all), free(one);
}

/* ---- the sweep ------------------------------------------------------------------------------------- */
typedef struct sweep_stats {
  int calls;
  double max_rel[3]; /* [1]: gemm1, [2]: gemm2 */
} sweep_stats;

/* Set while a kernel is compared with a sibling that must give its bits (0 tolerance). */
static int exact_sibling;

static double tolerance(moe_precision p, int which) {
  if (exact_sibling) return 0.0;
  if (moe__is_a8(p)) return which == 2 ? 0.0 : 1e-5;
  return 5e-5;
}

/* The arguments of one call over panel p (gemm1: the gate/up pair p; gemm2: panels 2p and 2p+1);
 * biases on odd panels, activations and prefetch hints varied. */
static moe_gemm_args args_of(const moe_experts *ex, const kit_weights *kw, int which, int64_t p, int64_t ncols,
                             const act_rows *a, int variant) {
  int64_t width = which == 1 ? MOE_NR : 2 * MOE_NR;
  moe_gemm_args g;
  memset(&g, 0, sizeof g);
  g.mr = a->mr;
  g.nr = (int32_t)(ncols - width * p < width ? ncols - width * p : width);
  g.a = (const void *const *)a->row;
  g.lda = a->lda;
  g.a_scale = a->scale;
  g.a_group_sum = a->gsum ? a->gsum_row : NULL;
  g.kgroup = moe__kgroup(ex->precision, ex->block_k, ex->group);
  g.act = (moe_activation)((p + variant) % 3);
  g.alpha = 1.702f, g.limit = 7.0f;
  if (which == 1) {
    g.w = ex->w13 + (size_t)(2 * p) * ex->panel13_bytes;
    g.panel_bytes = ex->panel13_bytes, g.kred = ex->K, g.kpad = ex->k13_pad;
    if (p % 2) g.bias = kw->b13 + MOE_NR * p, g.bias_up = kw->b13 + ex->N + MOE_NR * p;
  } else {
    int64_t panels = (ncols + MOE_NR - 1) / MOE_NR;
    g.w = ex->w2 + (size_t)(2 * p) * ex->panel2_bytes;
    g.panel_bytes = ex->panel2_bytes, g.kred = ex->N, g.kpad = ex->k2_pad;
    g.row_weight = a->weight;
    if (p % 2) g.bias = kw->b2 + 2 * MOE_NR * p;
    if (2 * p + 2 < panels) g.w_next = g.w + 2 * ex->panel2_bytes, g.w_next_bytes = ex->panel2_bytes;
  }
  return g;
}

#ifdef MOE__HAVE_AMX
/* The layer's AMX call over several row blocks of one expert (moe__amx_gemm_blocks) as a kernel of
 * one block: the block under test (at position `pos`) beside partner blocks of other rows, whose
 * outputs go to scratch. nb is MOE__AMX_NB_STACK (no scratch: the stack), or one more, or
 * MOE__AMX_NB (the layer's scratch, poisoned). Each block of the call must match the scalar twin on
 * its own. */
static struct {
  const act_rows *partner;
  int pos, nb;
  moe_precision p;
  float out[MOE_BLOCK_M * 2 * MOE_NR], *rows[MOE_BLOCK_M];
  moe__amx_block_buf scratch[MOE__AMX_NB];
} mb;
static void mb_call(const moe_gemm_args *g, int which) {
  moe_gemm_args gs[MOE__AMX_NB], other = *g;
  const act_rows *a = mb.partner;
  other.mr = a->mr, other.a = (const void *const *)a->row, other.lda = a->lda, other.a_scale = a->scale;
  other.row_weight = a->weight, other.a_group_sum = a->gsum ? a->gsum_row : NULL;
  for (int32_t m = 0; m < a->mr; m++) mb.rows[m] = mb.out + m * 2 * MOE_NR;
  other.c = mb.out, other.ldc = 2 * MOE_NR, other.c_rows = mb.rows;
  for (int b = 0; b < mb.nb; b++) gs[b] = b == mb.pos ? *g : other;
  memset(mb.scratch, 0xA5, sizeof mb.scratch);
  moe__amx_gemm_blocks(mb.p, gs, mb.nb, which == 1, mb.nb > MOE__AMX_NB_STACK ? mb.scratch : NULL);
}
static void mb_gemm1(const moe_gemm_args *g) { mb_call(g, 1); }
static void mb_gemm2(const moe_gemm_args *g) { mb_call(g, 2); }

/* The layer's dense AMX call over several panel pairs (moe__amx_gemm_pairs, MOE__AMX_PAIRS) as a
 * kernel of one block and pair: the call under test is the last pair of the last block, beside
 * partner pairs of other panels (mp.pairs) and a partner block of other rows, whose outputs go to
 * scratch; so a pair or block mixed up with another reads other panels or rows. Its bits must be
 * the one-block kernel's (each C tile sums its k steps in the same order). */
static struct {
  moe_gemm_args pairs[2];
  int npair, nb;
} mp;
static void mp_call(const moe_gemm_args *g, int which) {
  moe_gemm_args gs[MOE__AMX_NB];
  const act_rows *a = mb.partner;
  for (int32_t m = 0; m < MOE_BLOCK_M; m++) mb.rows[m] = mb.out + m * 2 * MOE_NR;
  for (int j = 0; j < mp.npair; j++)
    for (int b = 0; b < mp.nb; b++) {
      moe_gemm_args x = j == mp.npair - 1 ? *g : mp.pairs[j];
      if (b < mp.nb - 1) x.mr = a->mr, x.a = (const void *const *)a->row, x.lda = a->lda, x.a_scale = a->scale, x.row_weight = a->weight,
                           x.a_group_sum = a->gsum ? a->gsum_row : NULL;
      if (b < mp.nb - 1 || j < mp.npair - 1) x.c = mb.out, x.ldc = 2 * MOE_NR, x.c_rows = mb.rows;
      gs[j * mp.nb + b] = x;
    }
  memset(mb.scratch, 0xA5, sizeof mb.scratch);
  moe__amx_gemm_pairs(mb.p, gs, mp.nb, mp.npair, which == 1, mb.scratch);
}
static void mp_gemm1(const moe_gemm_args *g) { mp_call(g, 1); }
static void mp_gemm2(const moe_gemm_args *g) { mp_call(g, 2); }
#endif

/* One case: test against ref for both GEMMs, every row count, every panel (pair). */
static void sweep_case(const moe_gemm_config *test, const moe_gemm_config *ref, const kcase *kc, sweep_stats *st) {
  static const int32_t rows[] = {1, 2, 3, 5, 6, 7, 11, 12, 13, 32};
  uint64_t seed = kit_mix((uint64_t)kc->p << 56 ^ (uint64_t)kc->K << 24 ^ (uint64_t)kc->N << 4 ^
                          (uint64_t)(kc->lay.block_k * 131 + kc->lay.group));
  kit_rng r = kit_rng_stream(2026, seed);
  kit_weights kw;
  moe_experts ex;
  void *buf = pack_case(kc, seed, &kw, &ex);
  for (int which = 1; which <= 2; which++) {
    int64_t kred = which == 1 ? kc->K : kc->N, ncols = which == 1 ? kc->N : kc->K;
    int64_t width = which == 1 ? MOE_NR : 2 * MOE_NR, calls = (ncols + width - 1) / width;
    for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
      act_rows a;
      act_rows_make(&a, &r, moe__is_a8(kc->p), rows[ri], kred, (int)(ri % 2)); /* rows apart, or lda apart */
      if (moe__is_a8(kc->p) && moe__meta_of(kc->p) == MOE__META_GROUP && ri % 4 >= 2) /* W4A8: the layer's sums */
        act_rows_sums(&a, kred, ex.group);
      for (int64_t p = 0; p < calls; p++) {
        moe_gemm_args g = args_of(&ex, &kw, which, p, ncols, &a, (int)ri);
        char what[256];
        const int alone = test->isa != MOE_ISA_AMX && g.mr > 1 && p == 0; /* a row alone too */
        float *all = NULL;
        double rel;
        snprintf(what, sizeof what, "%s gemm%d %s N=%lld K=%lld mr=%d call=%lld act=%d lda=%lld", test->name, which,
                 kc->lay.name, (long long)kc->N, (long long)kc->K, (int)g.mr, (long long)p, (int)g.act, (long long)g.lda);
        rel = compare(which == 1 ? test->gemm1 : test->gemm2, which == 1 ? ref->gemm1 : ref->gemm2, which, &g,
                      test == ref ? 0.0 : tolerance(kc->p, which), what, alone ? &all : NULL);
        if (rel > st->max_rel[which]) st->max_rel[which] = rel;
        st->calls++;
        if (alone) check_row_alone(which == 1 ? test->gemm1 : test->gemm2, which, &g, all, (int32_t)(ri % (size_t)g.mr), what);
#ifdef MOE__HAVE_AMX
        if (test->isa == MOE_ISA_AMX && p == calls - 1) { /* blocks in one call (the last: nr tails) */
          act_rows partner;
          act_rows_make(&partner, &r, moe__is_a8(kc->p), rows[(ri + 3) % (sizeof rows / sizeof rows[0])], kred, (int)(ri / 2 % 2));
          if (a.gsum) act_rows_sums(&partner, kred, ex.group);
          mb.partner = &partner, mb.p = kc->p;
          mb.nb = ri % 3 == 0 ? MOE__AMX_NB_STACK : ri % 3 == 1 ? MOE__AMX_NB_STACK + 1 : MOE__AMX_NB;
          mb.pos = mb.nb - 1 - (int)(ri / 3 % (size_t)mb.nb); /* the last, then earlier ones */
          snprintf(what, sizeof what, "%s %d blocks (this one at %d, partners mr=%d) gemm%d %s N=%lld K=%lld mr=%d call=%lld",
                   test->name, mb.nb, mb.pos, (int)partner.mr, which, kc->lay.name, (long long)kc->N,
                   (long long)kc->K, (int)g.mr, (long long)p);
          rel = compare(which == 1 ? mb_gemm1 : mb_gemm2, which == 1 ? ref->gemm1 : ref->gemm2, which, &g,
                        tolerance(kc->p, which), what, NULL);
          if (rel > st->max_rel[which]) st->max_rel[which] = rel;
          st->calls++;
          if (!moe__amx_decodes(kc->p)) { /* and the dense pairs call: 1-3 pairs x 1-2 blocks */
            mp.npair = 1 + (int)(ri % 3), mp.nb = partner.lda ? 2 : 1; /* rows apart: pair by pair */
            for (int j = 0; j < mp.npair - 1; j++) mp.pairs[j] = args_of(&ex, &kw, which, (p + 1 + j) % calls, ncols, &a, (int)ri);
            snprintf(what, sizeof what, "%s %d pairs x %d blocks (partners mr=%d) gemm%d %s N=%lld K=%lld mr=%d call=%lld lda=%lld",
                     test->name, mp.npair, mp.nb, (int)partner.mr, which, kc->lay.name, (long long)kc->N, (long long)kc->K,
                     (int)g.mr, (long long)p, (long long)g.lda);
            compare(which == 1 ? mp_gemm1 : mp_gemm2, which == 1 ? test->gemm1 : test->gemm2, which, &g, 0.0, what, NULL);
            st->calls++;
          }
          act_rows_free(&partner);
        }
#endif
      }
      act_rows_free(&a);
    }
  }
  free(buf);
  kit_weights_free(&kw);
}

/* Every layout of the precision x the K and N sweep. As K is gemm2's column count, Ks covers one
 * panel, a panel pair and a partial pair there. */
/* quick: a few K and N (tails, a long K), for pairs whose parts the full sweep already covers */
static sweep_stats sweep_kernel(const moe_gemm_config *test, const moe_gemm_config *ref, int quick) {
  static const int64_t Ks[] = {1, 2, 3, 4, 5, 31, 32, 33, 63, 64, 100, 129, 2048 + 7};
  /* the long blocks and groups matter only where k spans several of them */
  static const int64_t Ns[] = {1, 16, 31, 32, 33, 70};
  layout lays[4];
  int nl = layouts_of(test->precision, lays);
  sweep_stats st;
  memset(&st, 0, sizeof st);
  for (int li = 0; li < nl; li++)
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
      for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++) {
        kcase kc;
        if (Ks[ki] * Ns[ni] > 40000 && ni % 2) continue; /* keep the big K to a few N */
        if (quick && ((ki != 2 && ki != 7 && ki < 11) || ni % 2 == 0)) continue; /* K 3, 33, 129, 2055 */
        if ((lays[li].group > 128 || lays[li].block_k > 128) && Ks[ki] < 129 && Ns[ni] < 70) continue;
        kc.p = test->precision, kc.lay = lays[li], kc.N = Ns[ni], kc.K = Ks[ki];
        sweep_case(test, ref, &kc, &st);
      }
  return st;
}

/* ---- the kernel list -------------------------------------------------------------------------------- */
/* The scalar twin of kernel k: the list's scalar row of the same precision. */
static const moe_gemm_config *scalar_twin(const moe_gemm_config *k) {
  for (int i = 0; i < moe_kernel_count(); i++) {
    const moe_gemm_config *c = moe_kernel_at(i);
    if (c->precision == k->precision && c->isa == MOE_ISA_SCALAR) return c;
  }
  return NULL;
}

/* "avx512bf16 avx512vnni ..." of the feature bits in mask (names of the MOE_CPU_* bits). */
static const char *feature_names(uint32_t mask, char *buf, size_t size) {
  static const char *const names[] = {"avx512f",  "avx512bw", "avx512vl", "avx512dq", "avx512vnni",
                                      "avx512bf16", "amx-tile", "amx-int8", "amx-bf16", "avx2",
                                      "fma",      "f16c",     "avx-vnni", "avx512vbmi"};
  size_t used = 0;
  buf[0] = 0;
  for (unsigned b = 0; b < 32; b++)
    if (mask & (1u << b)) {
      int n = snprintf(buf + used, size - used, "%s%s", used ? " " : "",
                       b < sizeof names / sizeof names[0] ? names[b] : "?");
      if (n < 0 || (size_t)n >= size - used) break;
      used += (size_t)n;
    }
  return buf;
}

static int has_fast_kernel(moe_precision p) {
  for (int i = 0; i < moe_kernel_count(); i++)
    if (moe_kernel_at(i)->precision == p && moe_kernel_at(i)->isa != MOE_ISA_SCALAR) return 1;
  return 0;
}

/* ---- row operations -------------------------------------------------------------------------------- */
/* W4A8's group sums (moe_sum_groups_u8) of row q against a plain sum, for groups with tails; a sum
 * past ceil(n / group) must stay unwritten. */
static void check_group_sums(const moe__row_ops *ops, const uint8_t *q, int64_t n, const char *tier) {
  static const int32_t groups[] = {1, 3, 32, 100, 128, 4096};
  int32_t got[2048 + 8];
  for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
    const int32_t group = groups[gi];
    const int64_t ng = (n + group - 1) / group;
    int bad = 0;
    test_poison(got, (size_t)(ng + 1) * sizeof got[0]);
    ops->sum_groups_u8(q, n, group, got);
    for (int64_t j = 0; j < ng; j++) {
      int64_t want = 0;
      for (int64_t k = j * group; k < n && k < (j + 1) * group; k++) want += (int64_t)q[k] - 128;
      bad += got[j] != want;
    }
    bad += got[ng] != (int32_t)0xFFFFFFFF;
    CHECK(bad == 0, "%s group sums n=%lld group=%d: %d wrong or written past the row", tier, (long long)n, (int)group, bad);
  }
}

/* The row operations of every tier give the same bits as the scalar ones (tails, NaN, Inf, ties,
 * subnormals). Returns the number of vector tiers tested. */
static int test_row_ops(void) {
  static const int64_t ns[] = {1, 7, 8, 15, 16, 17, 31, 33, 100, 2048 + 3};
  const moe__row_ops *ref = moe__row_ops_for(MOE_ISA_SCALAR);
  int tiers = 0;
  kit_rng r = kit_rng_stream(2026, 77);
  for (int isa = 0; isa < (int)MOE_ISA_COUNT; isa++) {
    const moe__row_ops *ops = moe__row_ops_for((moe_isa)isa);
    int before = test_failures;
    if (isa == MOE_ISA_SCALAR) continue;
    if (!ops) {
      printf("row operations %s: none here (not compiled, or the CPU lacks the tier)\n", moe_isa_name((moe_isa)isa));
      continue;
    }
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      for (int kind = 0; kind < 4; kind++) {
        int64_t n = ns[i];
        size_t n4 = (size_t)n * 4, n2 = (size_t)n * 2;
        float *x = (float *)test_malloc(n4), *y = (float *)test_malloc(n4), *f1 = (float *)test_malloc(n4),
              *f2 = (float *)test_malloc(n4);
        uint8_t *q1 = (uint8_t *)test_malloc((size_t)n), *q2 = (uint8_t *)test_malloc((size_t)n);
        uint16_t *b1 = (uint16_t *)test_malloc(n2), *b2 = (uint16_t *)test_malloc(n2);
        float s1, s2;
        for (int64_t k = 0; k < n; k++) {
          x[k] = (float)kit_normal(&r) * (kind == 3 ? 1e-39f : 3.0f); /* kind 3: f32 subnormals */
          y[k] = (float)kit_normal(&r);
        }
        if (kind == 1) x[n / 2] = NAN, y[0] = NAN;
        if (kind == 2) x[n - 1] = -INFINITY, y[n / 2] = INFINITY;
        if (n > 4 && kind == 0) x[1] = 2.5f, x[2] = 1.0f + 1.0f / 256; /* a quantization tie (amax 3 sd), a bf16 tie */
        test_poison(q1, (size_t)(uint32_t)n), test_poison(q2, (size_t)(uint32_t)n);
        s1 = ref->quantize_u8(x, n, q1);
        s2 = ops->quantize_u8(x, n, q2);
        /* with a NaN or Inf the scale says so and the codes are unspecified */
        CHECK(memcmp(&s1, &s2, 4) == 0 && (kind == 1 || kind == 2 || memcmp(q1, q2, (size_t)n) == 0),
              "%s quantize row n=%lld kind=%d", moe_isa_name((moe_isa)isa), (long long)n, kind);
        test_poison(b2, n2);
        ref->to_bf16(x, b1, n);
        ops->to_bf16(x, b2, n);
        CHECK(memcmp(b1, b2, n2) == 0, "%s f32->bf16 n=%lld kind=%d", moe_isa_name((moe_isa)isa), (long long)n, kind);
        ref->from_bf16(b1, f1, n);
        ops->from_bf16(b1, f2, n);
        CHECK(memcmp(f1, f2, n4) == 0, "%s bf16->f32 n=%lld kind=%d", moe_isa_name((moe_isa)isa), (long long)n, kind);
        memcpy(f1, x, n4), memcpy(f2, x, n4);
        ref->add(f1, y, n);
        ops->add(f2, y, n);
        CHECK(memcmp(f1, f2, n4) == 0, "%s add n=%lld kind=%d", moe_isa_name((moe_isa)isa), (long long)n, kind);
        for (int64_t k = 0; k < n; k++) q2[k] = (uint8_t)(kind == 2 ? 255 * (k % 2) : kit_randint(&r, 256)); /* kind 2: extremes */
        check_group_sums(ref, q2, n, "scalar"), check_group_sums(ops, q2, n, moe_isa_name((moe_isa)isa));
        free(x), free(y), free(f1), free(f2), free(q1), free(q2), free(b1), free(b2);
      }
    printf("row operations %s vs scalar: %s\n", moe_isa_name((moe_isa)isa), test_failures > before ? "FAILED" : "ok");
    tiers++;
  }
  return tiers;
}

/* ---- the u8 quantizer's division -------------------------------------------------------------------
 * moe__div_scale_avx512 and _avx2 (x / s as a product with one correction) must give x / s's code
 * wherever the two could differ: within a few ulps of a rounding tie. For each significand of s in
 * [1, 2) (other exponents scale x, s and 1 / s exactly), x runs over -8..+7 ulps around
 * RN((k + 0.5) s), k = 0..127, both signs, and both quotients are rounded half to even. step 1 is
 * every significand (--all-scales, a few seconds a tier); the default run takes every 61st. Without
 * the correction 0.58 billion codes differ. */
/* The bits of RN((k + 0.5) s), the tie between codes k and k + 1. */
static uint32_t tie_bits(float s, int k) {
  const float t = ((float)k + 0.5f) * s;
  uint32_t u;
  memcpy(&u, &t, 4);
  return u;
}
#ifdef MOE__HAVE_AVX512
MOE__AVX512_BASE long ties_differ_avx512(float s) {
  const __m512i off = _mm512_setr_epi32(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  const __m512 vs = _mm512_set1_ps(s), vr = _mm512_set1_ps(1.0f / s);
  long differ = 0;
  for (int k = 0; k < 128; k++) {
    const uint32_t tu = tie_bits(s, k);
    for (uint32_t sign = 0; sign < 2; sign++) {
      __m512i bits = _mm512_or_si512(_mm512_add_epi32(_mm512_set1_epi32((int)tu), off), _mm512_set1_epi32((int)(sign << 31)));
      __m512 x = _mm512_castsi512_ps(bits);
      __m512i a = _mm512_cvt_roundps_epi32(_mm512_div_ps(x, vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m512i b = _mm512_cvt_roundps_epi32(moe__div_scale_avx512(x, vs, vr), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      differ += __builtin_popcount(_mm512_cmpneq_epi32_mask(a, b));
    }
  }
  return differ;
}
#endif
#ifdef MOE__HAVE_AVX2
MOE__AVX2 long ties_differ_avx2(float s) {
  const __m256 vs = _mm256_set1_ps(s), vr = _mm256_set1_ps(1.0f / s);
  long differ = 0;
  for (int k = 0; k < 128; k++) {
    const uint32_t tu = tie_bits(s, k);
    for (uint32_t sign = 0; sign < 2; sign++)
      for (int half = 0; half < 2; half++) { /* -8..-1, then 0..7 ulps */
        const __m256i off = _mm256_add_epi32(_mm256_setr_epi32(-8, -7, -6, -5, -4, -3, -2, -1), _mm256_set1_epi32(8 * half));
        __m256 x = _mm256_castsi256_ps(_mm256_or_si256(_mm256_add_epi32(_mm256_set1_epi32((int)tu), off), _mm256_set1_epi32((int)(sign << 31))));
        __m256i a = _mm256_cvtps_epi32(_mm256_div_ps(x, vs)), b = _mm256_cvtps_epi32(moe__div_scale_avx2(x, vs, vr));
        differ += 8 - __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b))));
      }
  }
  return differ;
}
#endif
/* The tier's codes that differ from x / s over the significands m = 0, step, 2 step, ... of s. */
static void quantize_ties_tier(const char *tier, long (*differ)(float), uint32_t step) {
  long n = 0;
  for (uint32_t m = 0; m < (1u << 23); m += step) {
    const uint32_t su = 0x3F800000u | m;
    float s;
    memcpy(&s, &su, 4);
    n += differ(s);
  }
  CHECK(n == 0, "u8 quantizer (%s): %ld codes differ from x / s at the ties", tier, n);
  printf("u8 quantizer's division (%s) at the ties, 1 in %u significands of s: %s\n", tier, step, n ? "FAILED" : "ok");
}
/* Each vector tier's quantizer (only: one tier, or MOE_ISA_COUNT for all) over 1 in step significands. */
static void test_quantize_division(uint32_t step, moe_isa only) {
  int tiers = 0;
#ifdef MOE__HAVE_AVX512
  if ((only == MOE_ISA_COUNT || only == MOE_ISA_AVX512) && moe__row_ops_for(MOE_ISA_AVX512)) quantize_ties_tier("avx512", ties_differ_avx512, step), tiers++;
#endif
#ifdef MOE__HAVE_AVX2
  if ((only == MOE_ISA_COUNT || only == MOE_ISA_AVX2) && moe__row_ops_for(MOE_ISA_AVX2)) quantize_ties_tier("avx2", ties_differ_avx2, step), tiers++;
#endif
  (void)step, (void)only;
  if (!tiers) printf("u8 quantizer's division: no AVX2 or AVX-512 tier to check here\n");
}

/* ---- the activations at the edges --------------------------------------------------------------------
 * GEMM1's epilogue on every vector tier against float64 for gate sums far past e^-z's normal range
 * (|z| up to 1e4, where 1 + e^-z is 1 or Inf), the subnormal edge (z near 87 and 104), zero, and
 * non-finite values. (Large positive z once made the vector exp return subnormals: right, but a
 * microcode assist per element on Intel cores.) */
static const float edge_gates[] = {-1e4f, -200.0f, -104.5f, -103.0f, -88.0f, -87.5f, -86.5f, -86.0f, -85.5f, -20.0f, -1.0f,
                                   -0.0f,  0.0f,    1e-3f,   1.0f,    20.0f,  85.5f,  86.0f,  86.5f,  87.5f,  88.0f,
                                   103.0f, 104.5f, 200.0f,  1e4f,    INFINITY, -INFINITY, NAN};
enum { EDGE_N = sizeof edge_gates / sizeof edge_gates[0], EDGE_PAD = (EDGE_N + 15) / 16 * 16 };
#ifdef MOE__HAVE_AVX512
MOE__AVX512_BASE void edge_act_avx512(moe_activation act, const float *g, const float *u, float *out) {
  for (int i = 0; i < EDGE_PAD; i += 16)
    _mm512_storeu_ps(out + i, moe__act_avx512(act, _mm512_loadu_ps(g + i), _mm512_loadu_ps(u + i), 1.702f, 7.0f));
}
#endif
#ifdef MOE__HAVE_AVX2
MOE__AVX2 void edge_act_avx2(moe_activation act, const float *g, const float *u, float *out) {
  for (int i = 0; i < EDGE_PAD; i += 8)
    _mm256_storeu_ps(out + i, moe__act_avx2(act, _mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i), 1.702f, 7.0f));
}
#endif
/* act(g, u) in float64 (SWIGLU_OAI with alpha 1.702, limit 7, as the vector calls above). */
static double edge_oracle(moe_activation act, double g, double u) {
  double z = g;
  if (act == MOE_ACT_GELU_TANH) z = 2.0 * 0.7978845608028654 * (g + 0.044715 * g * g * g);
  if (act == MOE_ACT_SWIGLU_OAI) g = g > 7.0 ? 7.0 : g, u = (u > 7.0 ? 7.0 : u < -7.0 ? -7.0 : u) + 1.0, z = 1.702 * g;
  return g * u / (1.0 + exp(-z));
}
static void check_edge_act(const char *tier, void (*fn)(moe_activation, const float *, const float *, float *)) {
  float g[EDGE_PAD], u[EDGE_PAD], out[EDGE_PAD];
  for (int i = 0; i < EDGE_PAD; i++) g[i] = i < EDGE_N ? edge_gates[i] : 1.0f, u[i] = 0.75f - 0.125f * (float)(i % 5);
  for (int act = 0; act < 3; act++) {
    test_poison(out, sizeof out);
    fn((moe_activation)act, g, u, out);
    for (int i = 0; i < EDGE_N; i++) {
      const double want = edge_oracle((moe_activation)act, g[i], u[i]), got = out[i];
      const int ok = isnan(want) ? isnan(got) : got == want || fabs(got - want) <= 1e-6 * fabs(want) + 1e-30;
      CHECK(ok, "%s act %d g=%g u=%g: %.9g, float64 %.9g", tier, act, (double)g[i], (double)u[i], got, want);
    }
  }
}
static void test_edge_activations(void) {
  int tested = 0;
#ifdef MOE__HAVE_AVX512
  if (moe__row_ops_for(MOE_ISA_AVX512)) check_edge_act("avx512", edge_act_avx512), tested++;
#endif
#ifdef MOE__HAVE_AVX2
  if (moe__row_ops_for(MOE_ISA_AVX2)) check_edge_act("avx2", edge_act_avx2), tested++;
#endif
  printf("activations at the edges: %d vector tiers checked against float64\n", tested);
}

/* ---- every code decodes exactly ---------------------------------------------------------------------
 * One packed W2 of 32 columns and a reduction of 1 (pad included), one row a = 1.0 and weight 1:
 * gemm2 then writes each column's dequantized weight itself (1 * w + 0, exact), which must equal the
 * library's scalar decoding for every code: all 256 e4m3 codes (zero, subnormals, NaN), every e2m1
 * code at e8m0 exponents from 0 (2^-127) to 255 (NaN), every int4 q - zero. */
static float expected_w2(const moe_weights *w, int32_t n) {
  const uint8_t *q = (const uint8_t *)w->w2;
  switch (w->precision) {
  case MOE_PREC_FP8: return moe_e4m3_to_f32(q[n]) * w->w2_scale[0];
  case MOE_PREC_MXFP4: return moe_e2m1_to_f32(q[n] & 15) * moe_e8m0_to_f32(w->w2_e8m0[n]);
  default: return (float)((q[n] & 15) - w->w2_zero[n]) * w->w2_scale[n];
  }
}

static void check_codes(const moe_gemm_config *k, moe_weights *w, const char *what) {
  moe_experts ex;
  size_t size = moe_pack_size(w);
  void *buf = test_malloc(size);
  uint16_t one = moe_f32_to_bf16(1.0f);
  const void *row[1] = {&one};
  float c[MOE_NR], weight = 1.0f, scale = 1.0f, *rows[1] = {c};
  moe_gemm_args g;
  CHECK(moe_pack(w, &ex, buf, size) == MOE_OK, "%s: pack", what);
  memset(&g, 0, sizeof g);
  memset(c, 0, sizeof c);
  g.mr = 1, g.nr = MOE_NR, g.a = row, g.a_scale = &scale, g.w = ex.w2, g.panel_bytes = ex.panel2_bytes;
  g.kred = ex.N, g.kpad = ex.k2_pad, g.kgroup = moe__kgroup(ex.precision, ex.block_k, ex.group);
  g.row_weight = &weight, g.c_rows = rows;
  k->gemm2(&g);
  for (int32_t n = 0; n < MOE_NR; n++) {
    float want = expected_w2(w, n);
    CHECK(want == c[n] || (isnan(want) && isnan(c[n])), "%s column %d: %.9g, want %.9g", what, n, c[n], want);
  }
  free(buf);
}

static void test_all_codes(const moe_gemm_config *k) {
  static const uint8_t e8m0[] = {0, 1, 2, 100, 127, 140, 253, 254, 255};
  uint8_t w13[2 * MOE_NR] = {0}, w2[MOE_NR], zero13[2 * MOE_NR] = {0}, zero2[MOE_NR], e13[2 * MOE_NR] = {0}, e2[MOE_NR];
  float s13[2 * MOE_NR], s2[MOE_NR];
  moe_weights w;
  char what[128];
  int before = test_failures;
  for (int i = 0; i < 2 * MOE_NR; i++) s13[i] = 1.0f, e13[i] = 127;
  memset(&w, 0, sizeof w);
  w.E = 1, w.N = 1, w.K = MOE_NR, w.precision = k->precision, w.w13 = w13, w.w2 = w2;
  w.w13_scale = s13, w.w2_scale = s2, w.w13_zero = zero13, w.w2_zero = zero2, w.w13_e8m0 = e13, w.w2_e8m0 = e2;
  if (k->precision == MOE_PREC_FP8)
    for (int batch = 0; batch < 8; batch++) {
      for (int n = 0; n < MOE_NR; n++) w2[n] = (uint8_t)(MOE_NR * batch + n);
      s2[0] = batch == 7 ? 0.375f : 1.0f;
      snprintf(what, sizeof what, "%s e4m3 codes %d..%d", k->name, MOE_NR * batch, MOE_NR * batch + MOE_NR - 1);
      check_codes(k, &w, what);
    }
  if (k->precision == MOE_PREC_MXFP4)
    for (size_t b = 0; b < sizeof e8m0; b++) {
      for (int n = 0; n < MOE_NR; n++) w2[n] = (uint8_t)(n % 16), e2[n] = e8m0[(b + (size_t)(n / 16)) % sizeof e8m0];
      snprintf(what, sizeof what, "%s e2m1 codes, e8m0 %d", k->name, e8m0[b]);
      check_codes(k, &w, what);
    }
  if (k->precision == MOE_PREC_INT4_W4A16)
    for (int z = 0; z < 16; z++) {
      for (int n = 0; n < MOE_NR; n++) w2[n] = (uint8_t)(n % 16), zero2[n] = (uint8_t)z, s2[n] = n < 16 ? 1.0f : 0.5f;
      snprintf(what, sizeof what, "%s int4 codes - zero %d", k->name, z);
      check_codes(k, &w, what);
    }
  printf("%s: every code decodes exactly: %s\n", k->name, test_failures > before ? "FAILED" : "ok");
}

/* Weight (row, k) of W13 (which 1) or W2 as the AMX tier stages it, before its group scale: FP8's
 * e4m3, INT4's q - zero, MXFP4's e2m1 x 2^e8m0 (folded, as the AVX-512 folded path decodes it too);
 * 0 past the reduction. */
static double staged_value(const kit_weights *kw, int which, int64_t row, int64_t k) {
  const moe_weights *w = &kw->w;
  const int64_t cols = which == 1 ? w->K : w->N, g = w->group ? w->group : 128;
  const uint8_t *codes = (const uint8_t *)(which == 1 ? w->w13 : w->w2);
  int nib;
  if (k >= cols) return 0;
  if (w->precision == MOE_PREC_FP8) return orc_e4m3(codes[row * cols + k]);
  nib = (codes[row * ((cols + 1) / 2) + k / 2] >> (4 * (k & 1))) & 15;
  if (w->precision == MOE_PREC_MXFP4)
    return orc_e2m1((uint8_t)nib) * orc_e8m0((which == 1 ? w->w13_e8m0 : w->w2_e8m0)[row * ((cols + 31) / 32) + k / 32]);
  return nib - (which == 1 ? w->w13_zero : w->w2_zero)[row * ((cols + g - 1) / g) + k / g];
}


#ifdef MOE__HAVE_AVX512
/* bf16 element (column c, k) of a decoded panel (layout (a), KR 2). */
static double bf16_panel_at(const uint8_t *panel, int c, int64_t k) {
  const uint8_t *t = panel + 128 * (size_t)(k / 2) + 64 * (size_t)(c / 16) + 4 * (size_t)(c % 16) + 2 * (size_t)(k % 2);
  return orc_bf16((uint16_t)(t[0] | t[1] << 8));
}
/* The layer's folded path decodes (moe__mxfp4_to_bf16_avx512): W13's first gate and up panels and
 * W2's last pair (one panel: K leaves 3) as bf16 panels, every weight e2m1 x 2^e8m0 exactly (scales
 * 2 and 252 among them), zero past the reduction (K and N leave tails inside a line pair of 8 k and
 * a scale group of 32), nothing written past them; a valid column's scale 1 or 253 returns 0 and
 * writes nothing, a padded column's (zero codes) does not. Returns the panel sets checked. */
static int test_mxfp4_fold(void) {
  static const int64_t shapes[][2] = {{72, 70}, {40, 264}}; /* N, K */
  int sets = 0, before = test_failures;
  for (int si = 0; si < 2; si++) {
    const int64_t N = shapes[si][0], K = shapes[si][1];
    kit_weights kw;
    moe_experts ex;
    void *packed;
    kit_weights_random_blocks(&kw, MOE_PREC_MXFP4, 1, N, K, 0, 0, 0, 4242 + (uint64_t)si, 0);
    kw.x13[0] = 2, kw.x13[1] = 252, kw.x2[0] = 252, kw.x2[kw.m2.n_e8m0 - 1] = 2;
    packed = kit_pack(&kw.w, &ex);
    for (int which = 1; which <= 2; which++) {
      const int64_t q = which == 1 ? 0 : (ex.panels2 - 1) / 2, kred = which == 1 ? K : N, kpad = which == 1 ? ex.k13_pad : ex.k2_pad;
      const int np = which == 1 ? 2 : (int)(ex.panels2 - 2 * q);
      const size_t pb = which == 1 ? ex.panel13_bytes : ex.panel2_bytes, out_bytes = (size_t)np * (size_t)kpad * 64;
      uint8_t *w = (uint8_t *)(which == 1 ? ex.w13 : ex.w2) + 2 * (size_t)q * pb, *meta;
      uint8_t *out = (uint8_t *)aligned_alloc(64, out_bytes + 64);
      int32_t nv[2];
      int bad = 0;
      for (int i = 0; i < np; i++) {
        const int64_t left = which == 1 ? N : K - 32 * (2 * q + i);
        nv[i] = (int32_t)(left < 32 ? left : 32);
      }
      memset(out, 0xFF, out_bytes + 64);
      CHECK(moe__mxfp4_to_bf16_avx512(w, pb, np, nv, kred, kpad, out) == 1, "mxfp4 fold gemm%d: scales in [2, 252] refused", which);
      for (int i = 0; i < np; i++)
        for (int c = 0; c < 32; c++)
          for (int64_t k = 0; k < kpad; k++) {
            const int64_t row = which == 1 ? i * N + c : 32 * (2 * q + i) + c;
            const double want = c < nv[i] ? staged_value(&kw, which, row, k) : 0.0;
            bad += bf16_panel_at(out + (size_t)i * (size_t)kpad * 64, c, k) != want;
          }
      for (size_t o = out_bytes; o < out_bytes + 64; o++) bad += out[o] != 0xFF;
      CHECK(bad == 0, "mxfp4 fold N %lld K %lld gemm%d: %d bytes or weights wrong", (long long)N, (long long)K, which, bad);
      meta = w + (size_t)(np - 1) * pb + moe__meta_offset(MOE_PREC_MXFP4, kpad);
      for (int v = 0; v < 2; v++) { /* an unfoldable scale in a valid column: refused, nothing written */
        const uint8_t keep = meta[nv[np - 1] - 1];
        meta[nv[np - 1] - 1] = v ? 253 : 1;
        memset(out, 0xFF, out_bytes);
        CHECK(moe__mxfp4_to_bf16_avx512(w, pb, np, nv, kred, kpad, out) == 0, "mxfp4 fold gemm%d: scale %d folded", which, v ? 253 : 1);
        for (size_t o = 0; o < out_bytes; o++) bad += out[o] != 0xFF;
        meta[nv[np - 1] - 1] = keep;
      }
      if (nv[np - 1] < 32) { /* a padded column's scale is not looked at */
        meta[31] = 0;
        CHECK(moe__mxfp4_to_bf16_avx512(w, pb, np, nv, kred, kpad, out) == 1, "mxfp4 fold gemm%d: a padded column's scale refused", which);
      }
      CHECK(bad == 0, "mxfp4 fold gemm%d: a refused call wrote %d bytes", which, bad);
      free(out);
      sets++;
    }
    kit_weights_free(&kw);
    free(packed);
  }
  printf("mxfp4 folded decode: %d panel sets checked: %s\n", sets, test_failures > before ? "FAILED" : "ok");
  return sets;
}
#endif

/* A pool that runs the tasks one after another, the last first: the layer's workers past the fold
 * slots claim items before any worker with a slot starts. */
static void serial_reversed(void *pool, void (*fn)(void *arg, int64_t i), void *arg, int64_t n) {
  (void)pool;
  for (int64_t i = n - 1; i >= 0; i--) fn(arg, i);
}
/* The folded path's workers past the slots (3 here) take no items: MXFP4 over 2 experts with 150 rows
 * each, 7 workers run last first, bitwise the 1-worker run (K 1000: sums that round, so the grouped
 * kernel's bits would differ). And moe__cpus (a raw syscall) against glibc's count. */
static void test_fold_workers(void) {
  enum { M = 300, N = 64, K = 1000 };
  const moe_parallel one = {serial_reversed, NULL, 1}, seven = {serial_reversed, NULL, 7};
  const moe_parallel *pars[2] = {&one, &seven};
  const size_t bytes = 2 * (size_t)M * K;
  orc_spec s;
  orc_plain pl;
  moe_experts ex;
  moe_call c;
  kit_rng r = {77};
  float tw[M];
  int32_t ids[M];
  void *out[2], *buf, *x;
  size_t n, wsb = 0;
  cpu_set_t set;
  const int64_t cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
  CHECK(moe__cpus() == cpus, "moe__cpus %lld, sched_getaffinity %lld", (long long)moe__cpus(), (long long)cpus);
  if (!moe_precision_compiled(MOE_PREC_MXFP4)) return;
  memset(&s, 0, sizeof s);
  s.prec = MOE_PREC_MXFP4, s.E = 2, s.N = N, s.K = K, s.seed = 78;
  orc_plain_make(&pl, &s);
  n = moe_pack_size(&pl.w);
  buf = test_malloc(n);
  CHECK(moe_pack(&pl.w, &ex, buf, n) == MOE_OK, "fold workers: pack");
  x = orc_make_x(MOE_BF16, M, K, K, &r);
  for (int m = 0; m < M; m++) ids[m] = m & 1, tw[m] = (float)(0.5 + kit_uniform(&r));
  memset(&c, 0, sizeof c);
  c.x = x, c.dtype = MOE_BF16, c.M = M, c.topk = 1, c.topk_weights = tw, c.topk_ids = ids;
  CHECK(moe_workspace_size(&ex, &c, &wsb) == MOE_OK, "fold workers: workspace size");
  for (int i = 0; i < 2; i++) {
    void *ws = test_malloc(wsb);
    out[i] = test_malloc(bytes);
    test_poison(out[i], bytes);
    c.out = out[i];
    CHECK(moe_fused_experts(&ex, &c, ws, wsb, pars[i]) == MOE_OK, "fold workers: %d workers", pars[i]->n_threads);
    free(ws);
  }
  CHECK(memcmp(out[0], out[1], bytes) == 0, "fold workers: 7 workers past 3 slots differ from 1 worker");
  printf("%s, 7 workers on 3 slots, last first: %s\n",
         moe__fold_policy(moe_gemm_select(MOE_PREC_MXFP4), M, 2) ? "folded path" : "not folded on this tier",
         memcmp(out[0], out[1], bytes) ? "FAILED" : "ok");
  orc_plain_free(&pl);
  free(out[0]), free(out[1]), free(buf), free(x);
}

#ifdef MOE__HAVE_AMX
/* Weights of the chunk of n steps from step c0 that differ from buffer `b`'s B tiles of C. */
static int staged_chunk_errors(const moe__amx_call *C, const kit_weights *kw, int which, int b, int64_t c0, int n) {
  const int a8 = moe__is_a8(kw->w.precision), per_row = a8 ? 64 : 32, elt = a8 ? 1 : 2;
  int bad = 0;
  for (int i = 0; i < 2; i++)
    for (int s = 0; s < n; s++)
      for (int h = 0; h < 2; h++)
        for (int r = 0; r < 16; r++)
          for (int e = 0; e < 64 / elt; e++) { /* tile row r: 16 columns x (per_row / 16) k */
            const int c = 16 * h + e / (per_row / 16), kk = e % (per_row / 16);
            const int64_t row = which == 1 ? i * kw->w.N + c : 32 * i + c;
            const int64_t k = (c0 + s) * per_row + (per_row / 16) * r + kk;
            const uint8_t *t = C->bb[b][i][s][h] + 64 * r + elt * e;
            const double got = a8 ? (double)(int8_t)t[0] : orc_bf16((uint16_t)(t[0] | t[1] << 8));
            bad += got != staged_value(kw, which, row, k);
          }
  return bad;
}

/* The decode roof's staging (moe__amx_stage_all, bench/bench_decode.h) runs the call's B staging
 * chunk by chunk to its end: its last two chunks (one per buffer) are the call's last two, every
 * step of them staged, their B tiles the unscaled weights of those k (bf16 words, W4A8 bytes), zero
 * past K. K and N leave a tail step. Needs only the tier's AVX-512 features. Returns the calls
 * checked. */
static int test_amx_staging(void) {
  static const moe_precision ps[] = {MOE_PREC_FP8, MOE_PREC_INT4_W4A8, MOE_PREC_INT4_W4A16, MOE_PREC_MXFP4};
  moe__amx_call *C = (moe__amx_call *)aligned_alloc(64, (sizeof(moe__amx_call) + 63) / 64 * 64);
  moe__amx_block_buf *buf = (moe__amx_block_buf *)aligned_alloc(64, sizeof(moe__amx_block_buf));
  int calls = 0;
  if ((moe_cpu_features() & MOE__F_AMX_HOST) != MOE__F_AMX_HOST) {
    printf("skip the AMX staging: CPU lacks the tier's AVX-512 features\n");
    free(C), free(buf);
    return 0;
  }
  for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
    const kcase kc = {ps[pi], {0, 0, 0, "default"}, 96, 336};
    kit_weights kw;
    moe_experts ex;
    void *packed = pack_case(&kc, 77 + pi, &kw, &ex);
    for (int which = 1; which <= 2; which++) {
      int64_t prev = -1, last = 0; /* the call's last two chunks, from its own chunking */
      moe_gemm_args g;
      memset(&g, 0, sizeof g);
      g.mr = MOE_BLOCK_M, g.kgroup = moe__kgroup(kc.p, ex.block_k, ex.group), g.nr = which == 1 ? MOE_NR : 2 * MOE_NR;
      g.w = which == 1 ? ex.w13 : ex.w2, g.panel_bytes = which == 1 ? ex.panel13_bytes : ex.panel2_bytes;
      g.kred = which == 1 ? kc.K : kc.N, g.kpad = which == 1 ? ex.k13_pad : ex.k2_pad;
      memset(C, 0xA5, sizeof *C);
      if (!moe__amx_stage_all(C, kc.p, &g, which == 1, buf)) {
        CHECK(0, "AMX staging %s gemm%d: the call does not fit the tiles", moe_precision_name(kc.p), which);
        continue;
      }
      for (int64_t c = 0; c < C->steps; c = moe__amx_chunk_end(C, c)) prev = last, last = c;
      CHECK(C->next_c0 == last && C->next_c0 + C->next_n == C->steps && C->next_done == C->next_n,
            "AMX staging %s gemm%d: last chunk %lld + %d (%d staged) of %lld steps", moe_precision_name(kc.p), which,
            (long long)C->next_c0, C->next_n, C->next_done, (long long)C->steps);
      CHECK(staged_chunk_errors(C, &kw, which, C->next_buf, last, (int)(C->steps - last)) == 0,
            "AMX staging %s gemm%d: the last chunk's weights differ", moe_precision_name(kc.p), which);
      CHECK(last == 0 || staged_chunk_errors(C, &kw, which, C->next_buf ^ 1, prev, (int)(last - prev)) == 0,
            "AMX staging %s gemm%d: the chunk before the last differs", moe_precision_name(kc.p), which);
      calls++;
    }
    kit_weights_free(&kw);
    free(packed);
  }
  free(C), free(buf);
  return calls;
}
#endif

/* The f32 FMA rows (moe__b4_f32_at) against their vdpbf16ps siblings of the same tier: on Intel, whose
 * vdpbf16ps adds its two exact products odd k first, each rounded, the bits must be the same (the
 * data has no subnormals, which vdpbf16ps flushes); elsewhere within the usual tolerance. Returns
 * the pairs compared. */
static int test_fma_siblings(moe_isa only) {
  int pairs = 0;
  for (int i = 0; i < moe_kernel_count(); i++) {
    const moe_gemm_config *k = moe_kernel_at(i);
    if (strcmp(k->dot, "vfmadd231ps") != 0 || (only != MOE_ISA_COUNT && k->isa != only) || !moe_kernel_runnable(k)) continue;
    for (int j = 0; j < moe_kernel_count(); j++) {
      const moe_gemm_config *s = moe_kernel_at(j);
      int before = test_failures;
      if (s == k || s->isa != k->isa || s->precision != k->precision || !moe_kernel_runnable(s)) continue;
      exact_sibling = (moe_cpu_features() & MOE_CPU_INTEL) != 0;
      sweep_kernel(k, s, 1);
      exact_sibling = 0;
      pairs++;
      printf("%s (%s) vs %s: %s %s\n", k->name, moe_precision_name(k->precision), s->dot,
             (moe_cpu_features() & MOE_CPU_INTEL) ? "bitwise (Intel)" : "within tolerance", test_failures > before ? "FAILED" : "ok");
    }
  }
  return pairs;
}

#ifdef MOE__HAVE_AVX512
/* The AVX-512 tiles' balanced heights: every mr splits into ceil(mr / tile) tiles of at most `tile`
 * rows that differ by one at most and cover the rows once, and moe__tile_at finds each tile from its
 * first row (the w_next prefetch shares). */
static void test_tile_heights(void) {
  int before = test_failures;
  for (int tile = 1; tile <= 12; tile++)
    for (int32_t mr = 1; mr <= MOE_BLOCK_M; mr++) {
      const int32_t tiles = (mr + tile - 1) / tile;
      int32_t r0 = 0, lo = mr, hi = 0;
      for (int32_t t = 0; t < tiles; t++) {
        const int32_t rows = moe__tile_rows(mr, tile, t);
        CHECK(moe__tile_at(mr, tile, r0) == t, "tile %d, %d rows: row %d is tile %d, not %d", tile, mr, r0,
              moe__tile_at(mr, tile, r0), t);
        lo = rows < lo ? rows : lo, hi = rows > hi ? rows : hi, r0 += rows;
      }
      CHECK(r0 == mr && hi <= tile && hi - lo <= 1, "tile %d, %d rows: heights %d..%d cover %d rows", tile, mr, lo, hi, r0);
    }
  printf("tile heights balanced: %s\n", test_failures > before ? "FAILED" : "ok");
}

/* The dense tiles' w_next prefetch (blocks of MOE__PF_MIN_ROWS rows or more): the tiles' shares
 * cover the next panels' lines once, and each tile sends its share at an even pace over its k
 * steps (after s of n steps, share * s / n lines rounded either way), not as a burst. */
static void test_prefetch_spread(void) {
  static const int heights[] = {4, 5, 12}; /* the dense tiles' */
  static const int64_t line_counts[] = {1, 5, 100, 1536, 4096}, step_counts[] = {1, 7, 384, 1024, 1025};
  static uint8_t panels[4096 * 64], sent[4096]; /* the next panels, and how often each line was sent */
  int before = test_failures;
  for (size_t h = 0; h < sizeof heights / sizeof *heights; h++)
    for (int32_t mr = MOE__PF_MIN_ROWS; mr <= MOE_BLOCK_M; mr += 7)
      for (size_t li = 0; li < sizeof line_counts / sizeof *line_counts; li++)
        for (size_t si = 0; si < sizeof step_counts / sizeof *step_counts; si++) {
          const int64_t lines = line_counts[li], steps = step_counts[si];
          moe_gemm_args g;
          memset(&g, 0, sizeof g);
          memset(sent, 0, sizeof sent);
          g.mr = mr, g.w_next = panels, g.w_next_bytes = (size_t)lines * 64;
          for (int32_t tile = heights[h], t = 0, r0 = 0; t < (mr + tile - 1) / tile; r0 += moe__tile_rows(mr, tile, t), t++) {
            moe__prefetcher pf = moe__prefetch_plan(&g, r0, tile, steps, panels, panels);
            const int64_t share = (pf.end - pf.next) / 64;
            int64_t s = 1, done = 0;
            int uneven = 0;
            for (; s <= steps && !uneven; s++) {
              const uint8_t *from = pf.next;
              moe__prefetch_next(&pf);
              for (const uint8_t *at = from; at < pf.next; at += 64) sent[(at - panels) / 64]++;
              done += (pf.next - from) / 64;
              uneven = done * steps < share * s - (steps - 1) || done * steps > share * s + (steps - 1);
            }
            CHECK(!uneven, "height %d, %d rows, tile %d: %lld of %lld lines after step %lld of %lld", tile, mr, t,
                  (long long)done, (long long)share, (long long)(s - 1), (long long)steps);
          }
          for (int64_t l = 0; l < lines; l++)
            CHECK(sent[l] == 1, "height %d, %d rows, %lld lines over %lld steps: line %lld sent %d times", heights[h], mr,
                  (long long)lines, (long long)steps, (long long)l, sent[l]);
        }
  printf("w_next prefetch spread: %s\n", test_failures > before ? "FAILED" : "ok");
}
#endif

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Option --isa NAME: only that tier's kernels (the emulated AMX build sweeps its own tier only). */
int main(int argc, char **argv) {
  int tested = 0, skipped = 0, vector_rows;
  double t0 = now_s();
  const moe_isa only = argc > 2 && strcmp(argv[1], "--isa") == 0 ? moe_isa_from_name(argv[2]) : MOE_ISA_COUNT;
  if (argc > 1 && strcmp(argv[1], "--all-scales") == 0) { /* the slow suite's exhaustive check */
    test_quantize_division(1, MOE_ISA_COUNT);
    return test_finish("kernels --all-scales");
  }
  for (int i = 0; i < moe_kernel_count(); i++) {
    const moe_gemm_config *k = moe_kernel_at(i), *ref = scalar_twin(k);
    char feats[256];
    sweep_stats st;
    int before = test_failures;
    double t = now_s();
    if (k->isa == MOE_ISA_SCALAR) continue; /* the references */
    if (only != MOE_ISA_COUNT && k->isa != only) continue;
    if (!ref) {
      CHECK(0, "%s has no scalar twin in the kernel list", k->name);
      continue;
    }
    if (!moe_kernel_runnable(k)) {
      printf("skip %s: CPU lacks %s (%s)\n", k->name, moe_isa_name(k->isa),
             feature_names(k->cpu_features & ~moe_cpu_features(), feats, sizeof feats));
      skipped++;
      continue;
    }
    st = sweep_kernel(k, ref, 0);
    if (k->precision == MOE_PREC_FP8 || k->precision == MOE_PREC_MXFP4 || k->precision == MOE_PREC_INT4_W4A16) {
      test_all_codes(k);
      test_all_codes(ref);
    }
    tested++;
    printf("%s (%s) vs %s: %s, %d calls, max diff / tile max: gemm1 %.2e, gemm2 %.2e, %.1f s\n", k->name,
           moe_precision_name(k->precision), ref->name, test_failures > before ? "FAILED" : "ok", st.calls,
           st.max_rel[1], st.max_rel[2], now_s() - t);
  }
  for (int p = 0; p < (int)MOE_PREC_COUNT; p++) { /* precisions whose scalar kernel has no fast twin yet */
    const moe_gemm_config *ref = moe_gemm_config_for((moe_precision)p, MOE_ISA_SCALAR);
    int before = test_failures;
    if (!ref || has_fast_kernel((moe_precision)p)) continue;
    sweep_kernel(ref, ref, 0);
    printf("reference only (no fast kernel yet) %s (%s): %s\n", ref->name, moe_precision_name((moe_precision)p),
           test_failures > before ? "FAILED" : "runs clean");
  }
  test_fma_siblings(only);
#ifdef MOE__HAVE_AMX
  if (only == MOE_ISA_COUNT || only == MOE_ISA_AMX) printf("AMX staging alone (decode roof): %d calls checked\n", test_amx_staging());
#endif
#ifdef MOE__HAVE_AVX512
  test_tile_heights();
  test_prefetch_spread();
  if ((moe_cpu_features() & MOE__F_AVX512) == MOE__F_AVX512) test_mxfp4_fold();
#endif
  if (only == MOE_ISA_COUNT) test_fold_workers();
  vector_rows = test_row_ops();
  test_quantize_division(61, only);
  test_edge_activations();
  printf("%d kernels tested, %d skipped, %d vector row-op tiers, %.1f s\n", tested, skipped, vector_rows, now_s() - t0);
  if (!tested && !vector_rows) {
    printf("no fast kernel and no vector row operation runs on this CPU\n");
    return TEST_SKIP;
  }
  return test_finish("kernels");
}

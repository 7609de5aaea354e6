/* Packing: moe_pack's table-driven panels against their element-by-element twin
 * (moe__pack_panel_scalar), and moe_pack_parallel against moe_pack on thread pools of every kind
 * and order, bitwise, for every precision on shapes with tails (N, K not multiples of 32, of the
 * k step, of the FP8 blocks and INT4 groups), on poisoned buffers; bad input leaves them untouched. */
#define MOE_IMPLEMENTATION
#include "test_util.h"


#define POISON 0xA5

/* A pool that runs the tasks last to first on the calling thread. */
static void reverse_for(void *pool, void (*fn)(void *, int64_t), void *arg, int64_t n) {
  (void)pool;
  for (int64_t i = n - 1; i >= 0; i--) fn(arg, i);
}

/* Every panel through the scalar twin, into a buffer laid out as *ref (whose storage it is). */
static void pack_scalar(const moe_weights *w, const moe_experts *ref, uint8_t *base) {
  moe__pack_plan pl;
  moe__plan_pack(w, &pl);
  for (int64_t e = 0; e < w->E; e++) {
    moe__plain_mat m13 = moe__plain_of(w, &pl, 13, e), m2 = moe__plain_of(w, &pl, 2, e);
    for (int64_t q = 0; q < pl.panels13; q++) {
      int64_t hp = q / 2;
      int32_t nv = (int32_t)(w->N - hp * MOE_NR < MOE_NR ? w->N - hp * MOE_NR : MOE_NR);
      moe__pack_panel_scalar(&m13, (q & 1 ? w->N : 0) + hp * MOE_NR, nv,
                             base + (size_t)(e * pl.panels13 + q) * pl.panel13_bytes, pl.panel13_bytes);
    }
    for (int64_t q = 0; q < pl.panels2; q++) {
      int32_t nv = (int32_t)(w->K - q * MOE_NR < MOE_NR ? w->K - q * MOE_NR : MOE_NR);
      moe__pack_panel_scalar(&m2, q * MOE_NR, nv, base + pl.w13_bytes + (size_t)(e * pl.panels2 + q) * pl.panel2_bytes,
                             pl.panel2_bytes);
    }
  }
  (void)ref;
}

static int untouched(const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != POISON) return 0;
  return 1;
}

/* Expert e of kw alone (E = 1), pointing into kw's arrays. */
static moe_weights expert_of(const kit_weights *kw, int64_t e) {
  moe_weights w = kw->w;
  const size_t i = (size_t)e;
  w.E = 1;
  w.w13 = kw->w13 + i * kw->m13.code_bytes, w.w2 = kw->w2 + i * kw->m2.code_bytes;
  if (kw->s13) w.w13_scale = kw->s13 + i * kw->m13.n_scale, w.w2_scale = kw->s2 + i * kw->m2.n_scale;
  if (kw->z13) w.w13_zero = kw->z13 + i * kw->m13.n_zero, w.w2_zero = kw->z2 + i * kw->m2.n_zero;
  if (kw->x13) w.w13_e8m0 = kw->x13 + i * kw->m13.n_e8m0, w.w2_e8m0 = kw->x2 + i * kw->m2.n_e8m0;
  if (kw->b13) w.b13 = kw->b13 + i * 2 * (size_t)kw->w.N, w.b2 = kw->b2 + i * (size_t)kw->w.K;
  return w;
}

static void check_case(moe_precision p, int64_t E, int64_t N, int64_t K, int32_t bn, int32_t bk, int32_t group,
                       unsigned flags, uint64_t seed) {
  kit_weights kw;
  moe_experts ref, ex;
  size_t n, used;
  uint8_t *a, *b;
  const char *name = moe_precision_name(p);
  kit_weights_random_blocks(&kw, p, E, N, K, bn, bk, group, seed, KIT_CODES | flags);
  n = moe_pack_size(&kw.w);
  CHECK(n > 0, "%s: moe_pack_size 0", name);
  a = (uint8_t *)kit_malloc(n), b = (uint8_t *)kit_malloc(n);
  memset(a, POISON, n);
  CHECK(moe_pack(&kw.w, &ref, a, n) == MOE_OK, "%s: moe_pack", name);
  used = (size_t)((const uint8_t *)ref.w2 - (const uint8_t *)ref.w13) + (size_t)(E * ref.panels2) * ref.panel2_bytes;

  /* the scalar twin, panel by panel, at the same offsets */
  memset(b, POISON, n);
  pack_scalar(&kw.w, &ref, b + ((const uint8_t *)ref.w13 - a));
  CHECK(!memcmp(ref.w13, b + ((const uint8_t *)ref.w13 - a), used), "%s E%lld N%lld K%lld: panels differ from the scalar twin",
        name, (long long)E, (long long)N, (long long)K);

  /* moe_pack_parallel: NULL, a reverse-order pool, OpenMP (or serial) with 1-4 threads */
  for (int mode = 0; mode < 6; mode++) {
    moe_parallel par = {NULL, NULL, 0};
    if (mode == 1) par.parallel_for = reverse_for, par.n_threads = 3;
    if (mode >= 2) par.n_threads = mode - 1;
    memset(b, POISON, n);
    CHECK(moe_pack_parallel(&kw.w, &ex, b, n, mode ? &par : NULL) == MOE_OK, "%s: moe_pack_parallel", name);
    CHECK(!memcmp(ref.w13, ex.w13, used), "%s mode %d: parallel panels differ", name, mode);
    CHECK(ex.E == ref.E && ex.panels13 == ref.panels13 && ex.panel2_bytes == ref.panel2_bytes && ex.magic == ref.magic,
          "%s mode %d: descriptor differs", name, mode);
    CHECK(!ref.b13 || !memcmp(ref.b13, ex.b13, (size_t)(E * 2 * N) * sizeof(float)), "%s mode %d: b13", name, mode);
    CHECK(!ref.b2 || !memcmp(ref.b2, ex.b2, (size_t)(E * K) * sizeof(float)), "%s mode %d: b2", name, mode);
  }

  /* moe_pack_part: one expert at a time, last to first, each into its place */
  memset(b, POISON, n);
  for (int64_t e = E - 1; e >= 0; e--) {
    moe_weights part = expert_of(&kw, e);
    CHECK(moe_pack_part(&kw.w, &part, e, &ex, b, n) == MOE_OK, "%s: moe_pack_part expert %lld", name, (long long)e);
  }
  CHECK(!memcmp(ref.w13, ex.w13, used), "%s: moe_pack_part's panels differ from moe_pack's", name);
  CHECK(ex.E == ref.E && ex.panels13 == ref.panels13 && ex.panel2_bytes == ref.panel2_bytes && ex.magic == ref.magic &&
            !ex.b13 == !ref.b13 && !ex.b2 == !ref.b2,
        "%s: moe_pack_part's descriptor differs", name);
  CHECK(!ref.b13 || !memcmp(ref.b13, ex.b13, (size_t)(E * 2 * N) * sizeof(float)), "%s: moe_pack_part b13", name);
  CHECK(!ref.b2 || !memcmp(ref.b2, ex.b2, (size_t)(E * K) * sizeof(float)), "%s: moe_pack_part b2", name);
  { /* bad parts: a status, the buffer untouched */
    moe_weights part = expert_of(&kw, 0), wide = part;
    moe_experts before;
    wide.N = N + 1;
    memset(b, POISON, n);
    memcpy(&before, &ex, sizeof ex);
    CHECK(moe_pack_part(&kw.w, &part, E, &ex, b, n) == MOE_ERR_EXPERT_ID, "%s: moe_pack_part past the last expert", name);
    CHECK(moe_pack_part(&kw.w, &part, -1, &ex, b, n) == MOE_ERR_EXPERT_ID, "%s: moe_pack_part at -1", name);
    CHECK(moe_pack_part(&kw.w, &wide, 0, &ex, b, n) == MOE_ERR_DESCRIPTOR, "%s: moe_pack_part of another N", name);
    CHECK(moe_pack_part(&kw.w, &part, 0, &ex, b, n - 1) == MOE_ERR_BUFFER, "%s: moe_pack_part one byte short", name);
    CHECK(moe_pack_part(&kw.w, NULL, 0, &ex, b, n) == MOE_ERR_NULL, "%s: moe_pack_part NULL part", name);
    CHECK(untouched(b, n) && !memcmp(&ex, &before, sizeof ex), "%s: a failed moe_pack_part wrote", name);
  }

  /* bad input: a status, the buffer untouched */
  memset(b, POISON, n);
  CHECK(moe_pack_parallel(&kw.w, &ex, b, n - 1, NULL) == MOE_ERR_BUFFER, "%s: one byte short", name);
  CHECK(moe_pack_parallel(NULL, &ex, b, n, NULL) == MOE_ERR_NULL, "%s: NULL weights", name);
  CHECK(untouched(b, n), "%s: a failed pack wrote", name);
  free(a), free(b);
  kit_weights_free(&kw);
}

int main(void) {
  static const moe_precision precs[] = {MOE_PREC_BF16, MOE_PREC_FP16, MOE_PREC_INT8, MOE_PREC_FP8,
                                        MOE_PREC_INT4_W4A8, MOE_PREC_INT4_W4A16, MOE_PREC_MXFP4};
  int cases = 0;
  /* the packer's words: the best tier's vector ones, AVX2's, then the scalar ones (moe_set_isa caps them) */
  static const moe_isa caps[] = {MOE_ISA_COUNT, MOE_ISA_AVX2, MOE_ISA_SCALAR};
  for (size_t cap = 0; cap < sizeof caps / sizeof caps[0]; cap++) {
    moe_set_isa(caps[cap]);
    for (size_t i = 0; i < sizeof precs / sizeof precs[0]; i++) {
      moe_precision p = precs[i];
      if (!moe_precision_compiled(p)) continue;
      check_case(p, 3, 45, 77, 64, 128, 32, KIT_BIAS, 11 + i);  /* tails everywhere, biases */
      check_case(p, 2, 64, 256, 128, 128, 64, 0, 23 + i);       /* whole panels and groups */
      check_case(p, 1, 33, 130, 128, 64, 128, KIT_BIAS, 37 + i); /* one expert, a partial last group */
      cases += 3;
    }
  }
  moe_set_isa(MOE_ISA_COUNT); /* out of range: no cap */
  if (test_failures) {
    fprintf(stderr, "test_pack: %d failures\n", test_failures);
    return 1;
  }
  printf("test_pack: ok (%d cases)\n", cases);
  return 0;
}

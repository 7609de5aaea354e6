/* Packed-experts files (moe_packfile.h): every precision (tails, biases, a shared expert) written,
 * mapped back and run: the descriptor and panels equal moe_pack's, the layer's output bitwise equal
 * to the output from the packed buffer; then hostile files: truncated, extended, each header and
 * index field changed (with and without fixed checksums), another version, a misaligned mapping,
 * an offset past the end: each a status and a message, never a crash (ASan in the sanitized suite). */
#define _POSIX_C_SOURCE 200809L
#define MOE_IMPLEMENTATION
#define MOE_PACKFILE_IMPLEMENTATION
#include "moe_packfile.h"
#include "test_util.h"

#include <stdio.h>


static const moe_precision precs[] = {MOE_PREC_BF16, MOE_PREC_FP16, MOE_PREC_INT8, MOE_PREC_FP8,
                                      MOE_PREC_INT4_W4A8, MOE_PREC_INT4_W4A16, MOE_PREC_MXFP4};
#define NP (int)(sizeof precs / sizeof precs[0])

/* The layer's output for M tokens of a seed on ex (f32 in and out). */
static float *run_layer(const moe_experts *ex, int64_t M, uint64_t seed) {
  kit_rng r = kit_rng_stream(seed, 1);
  float *x = (float *)kit_malloc((size_t)(M * ex->K) * 4), *out = (float *)kit_malloc((size_t)(M * ex->K) * 4);
  float *w = (float *)kit_malloc((size_t)M * 2 * 4);
  int32_t *ids = (int32_t *)kit_malloc((size_t)M * 2 * 4);
  moe_call c = MOE_ZERO_INIT;
  size_t ws = 0;
  void *buf;
  const int32_t topk = ex->E < 2 ? 1 : 2;
  kit_fill_normal(&r, x, M * ex->K, 1.0);
  kit_route_random(&r, M, topk, (int32_t)ex->E, w, ids);
  c.x = x, c.out = out, c.M = M, c.topk = topk, c.topk_weights = w, c.topk_ids = ids, c.dtype = MOE_F32;
  CHECK(moe_workspace_size(ex, &c, &ws) == MOE_OK, "workspace size");
  buf = kit_malloc(ws);
  CHECK(moe_fused_experts(ex, &c, buf, ws, NULL) == MOE_OK, "moe_fused_experts");
  free(x), free(w), free(ids), free(buf);
  return out;
}

static uint8_t *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  uint8_t *b;
  long sz;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END), sz = ftell(f), fseek(f, 0, SEEK_SET);
  b = (uint8_t *)aligned_alloc(4096, ((size_t)sz + 4095) / 4096 * 4096 + 4096);
  *n = fread(b, 1, (size_t)sz, f) == (size_t)sz ? (size_t)sz : 0;
  fclose(f);
  return b;
}

/* Opens size bytes of a copy of the file image, aligned; the status. */
static moe_status open_image(const uint8_t *img, size_t size, moe_packfile_error *err) {
  uint8_t *b = (uint8_t *)aligned_alloc(4096, (size + 4095) / 4096 * 4096 + 4096);
  moe_packfile *pf = NULL;
  moe_status st;
  memcpy(b, img, size);
  err->msg[0] = 0;
  st = moe_packfile_open_memory(b, size, &pf, err);
  if (st == MOE_OK) { /* a hostile file that still opens must describe arrays inside it */
    for (int i = 0; i < moe_packfile_count(pf); i++) {
      const moe_experts *ex = moe_packfile_experts(pf, i);
      CHECK(ex->w13 >= b && ex->w2 >= b && ex->w13 < b + size && ex->w2 < b + size, "entry %d outside", i);
    }
  } else
    CHECK(err->msg[0] != 0, "status %d without a message", (int)st);
  moe_packfile_close(pf);
  free(b);
  return st;
}

static void fix_sums(uint8_t *img) {
  moe__pf_header h;
  memcpy(&h, img, sizeof h);
  h.index_sum = moe__pf_fnv(img + MOE__PF_HEADER, (size_t)h.index_bytes, MOE__PF_FNV0);
  h.header_sum = moe__pf_header_sum(&h);
  memcpy(img, &h, sizeof h);
}

static void hostile(const char *path) {
  size_t n = 0;
  uint8_t *img = read_all(path, &n), *mod = (uint8_t *)kit_malloc(n + 8192);
  moe_packfile_error err;
  CHECK(img && n > 0, "read %s", path);
  CHECK(open_image(img, n, &err) == MOE_OK, "the unmodified image: %s", err.msg);
  CHECK(open_image(img, n - 1, &err) == MOE_ERR_ARG, "truncated by one byte");
  CHECK(open_image(img, MOE__PF_HEADER - 1, &err) == MOE_ERR_ARG, "shorter than the header");
  CHECK(open_image(img, n / 2, &err) == MOE_ERR_ARG, "truncated to half");
  /* every byte of the header and index flipped: checksums catch it */
  for (size_t at = 0; at < MOE__PF_HEADER + 2 * MOE__PF_RECORD && at < n; at += 7) {
    memcpy(mod, img, n);
    mod[at] ^= 0x5A;
    CHECK(open_image(mod, n, &err) != MOE_OK || at >= MOE__PF_HEADER + (size_t)((moe__pf_header *)(void *)img)->index_bytes,
          "byte %zu flipped, accepted", at);
  }
  /* each 8-byte field of the index changed, checksums fixed: rejected, or still inside the file */
  for (size_t at = MOE__PF_HEADER; at < MOE__PF_HEADER + MOE__PF_RECORD; at += 4) {
    for (int v = 0; v < 3; v++) {
      uint32_t x;
      memcpy(mod, img, n);
      memcpy(&x, mod + at, 4);
      x = v == 0 ? x + 1 : v == 1 ? 0xFFFFFFFFu : x ^ 0x1000u;
      memcpy(mod + at, &x, 4);
      fix_sums(mod);
      (void)open_image(mod, n, &err); /* open_image checks what an accepted file describes */
    }
  }
  { /* another library version, checksums fixed */
    moe__pf_header h;
    memcpy(mod, img, n);
    memcpy(&h, mod, sizeof h);
    h.version += 100;
    memcpy(mod, &h, sizeof h);
    fix_sums(mod);
    CHECK(open_image(mod, n, &err) == MOE_ERR_UNSUPPORTED && strstr(err.msg, "repack"), "another version: %s", err.msg);
    memcpy(&h, img, sizeof h);
    h.format = 2;
    memcpy(mod, &h, sizeof h);
    fix_sums(mod);
    CHECK(open_image(mod, n, &err) == MOE_ERR_UNSUPPORTED, "another format");
  }
  { /* w2 of entry 0 pointed past the end, checksums fixed */
    moe__pf_record r;
    memcpy(mod, img, n);
    memcpy(&r, mod + MOE__PF_HEADER, sizeof r);
    r.off_w2 = (uint64_t)n;
    memcpy(mod + MOE__PF_HEADER, &r, sizeof r);
    fix_sums(mod);
    CHECK(open_image(mod, n, &err) == MOE_ERR_ARG && strstr(err.msg, "past the end"), "offset past the end: %s", err.msg);
  }
  { /* a misaligned image, and the file extended by a page */
    uint8_t *b = (uint8_t *)aligned_alloc(4096, n + 8192);
    moe_packfile *pf = NULL;
    memcpy(b + 64, img, n);
    CHECK(moe_packfile_open_memory(b + 64, n, &pf, &err) == MOE_ERR_ARG && !pf, "misaligned");
    memcpy(b, img, n), memset(b + n, 0, 4096);
    CHECK(moe_packfile_open_memory(b, n + 4096, &pf, &err) == MOE_ERR_ARG, "extended");
    free(b);
  }
  CHECK(moe_packfile_open("/nonexistent/x.moepack", &(moe_packfile *){NULL}, &err) == MOE_ERR_ARG, "a missing file");
  free(img), free(mod);
}

int main(void) {
  char path[] = "/tmp/moe_packfile_XXXXXX";
  int fd = mkstemp(path);
  moe_packfile_entry entries[2 * NP];
  moe_experts packed[2 * NP];
  void *bufs[2 * NP];
  char names[2 * NP][32];
  int n = 0;
  moe_packfile *pf = NULL;
  moe_packfile_error err;
  CHECK(fd >= 0, "mkstemp");
  close(fd);
  for (int i = 0; i < NP; i++) {
    kit_weights kw, ks;
    if (!moe_precision_compiled(precs[i])) continue;
    kit_weights_random_blocks(&kw, precs[i], 5, 45, 96, 64, 128, 32, 100 + (uint64_t)i, KIT_CODES | (i % 2 ? KIT_BIAS : 0));
    bufs[n] = kit_pack(&kw.w, &packed[n]);
    snprintf(names[n], sizeof names[n], "layer.%d.experts", i);
    entries[n].name = names[n], entries[n].experts = &packed[n], n++;
    kit_weights_random(&ks, precs[i], 1, 40, 96, 200 + (uint64_t)i, KIT_CODES);
    bufs[n] = kit_pack(&ks.w, &packed[n]);
    snprintf(names[n], sizeof names[n], "layer.%d.shared", i);
    entries[n].name = names[n], entries[n].experts = &packed[n], n++;
    kit_weights_free(&kw), kit_weights_free(&ks);
  }
  CHECK(moe_packfile_write(path, entries, n, &err) == MOE_OK, "write: %s", err.msg);
  CHECK(moe_packfile_open(path, &pf, &err) == MOE_OK, "open: %s", err.msg);
  CHECK(moe_packfile_count(pf) == n, "count %d, wrote %d", moe_packfile_count(pf), n);
  for (int i = 0; i < n && pf; i++) {
    const moe_experts *a = &packed[i], *b = moe_packfile_find(pf, names[i]);
    size_t b13 = (size_t)(a->E * a->panels13) * a->panel13_bytes, b2 = (size_t)(a->E * a->panels2) * a->panel2_bytes;
    CHECK(b == moe_packfile_experts(pf, i) && !strcmp(moe_packfile_name(pf, i), names[i]), "%s: lookup", names[i]);
    if (!b) continue;
    CHECK(b->E == a->E && b->N == a->N && b->K == a->K && b->precision == a->precision && b->group == a->group &&
              b->block_n == a->block_n && b->panel13_bytes == a->panel13_bytes && b->magic == a->magic,
          "%s: descriptor", names[i]);
    CHECK(((uintptr_t)b->w13 & 4095) == 0 && ((uintptr_t)b->w2 & 4095) == 0, "%s: panels not page-aligned", names[i]);
    CHECK(!memcmp(a->w13, b->w13, b13) && !memcmp(a->w2, b->w2, b2), "%s: panels differ", names[i]);
    CHECK(!a->b13 == !b->b13 && (!a->b13 || !memcmp(a->b13, b->b13, (size_t)(a->E * 2 * a->N) * 4)), "%s: b13", names[i]);
    {
      float *o1 = run_layer(a, 37, (uint64_t)i), *o2 = run_layer(b, 37, (uint64_t)i);
      CHECK(!memcmp(o1, o2, (size_t)(37 * a->K) * 4), "%s: the layer's output differs", names[i]);
      free(o1), free(o2);
    }
  }
  CHECK(moe_packfile_find(pf, "layer.99.experts") == NULL && moe_packfile_experts(pf, n) == NULL, "absent entries");
  moe_packfile_close(pf);
  /* writing what is not a packed moe_experts, or a name twice */
  {
    moe_experts bad = packed[0];
    moe_packfile_entry e[2] = {{"a", &bad}, {"a", &packed[0]}};
    bad.magic = 0;
    CHECK(moe_packfile_write(path, e, 1, &err) == MOE_ERR_DESCRIPTOR, "an unpacked entry");
    e[0].experts = &packed[0];
    CHECK(moe_packfile_write(path, e, 2, &err) == MOE_ERR_ARG, "a name twice");
    CHECK(moe_packfile_write(path, entries, n, &err) == MOE_OK, "rewrite");
  }
  hostile(path);
  remove(path);
  for (int i = 0; i < n; i++) free(bufs[i]);
  if (test_failures) {
    fprintf(stderr, "test_packfile: %d failures\n", test_failures);
    return 1;
  }
  printf("test_packfile: ok (%d entries)\n", n);
  return 0;
}

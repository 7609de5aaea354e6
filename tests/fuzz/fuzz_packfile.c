/* libFuzzer target: moe_packfile_open_memory over arbitrary bytes as a packed-experts file (copied to
 * a page-aligned buffer of exactly that size: a read past it is an ASan report). Checks, beyond the
 * sanitizers, what moe_packfile.h promises: on success every entry's arrays lie inside the buffer,
 * page-aligned, its names are NUL-terminated and unique, and every byte of every array is readable;
 * on failure err.msg is a non-empty message (fuzz_check_error). moe_packfile_close runs on every
 * outcome.
 *
 * Build: tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#define FUZZ_NAME "fuzz_packfile"
#include "fuzz_common.h" /* first: _POSIX_C_SOURCE, moe.h's implementation */
#define MOE_PACKFILE_IMPLEMENTATION
#include "moe_packfile.h"

static uint8_t fuzz_sum(const uint8_t *p, size_t n) {
  uint8_t acc = 0;
  for (size_t i = 0; i < n; i++) acc ^= p[i];
  return acc;
}

/* The header's checksums recomputed for the bytes as they are, so that mutations reach the checks
 * behind them (the entries), as well as being rejected by them in the other pass. */
static void fuzz_fix_sums(uint8_t *buf, size_t size) {
  moe__pf_header h;
  if (size < MOE__PF_HEADER) return;
  memcpy(&h, buf, sizeof h);
  if (h.index_bytes <= size - MOE__PF_HEADER) h.index_sum = moe__pf_fnv(buf + MOE__PF_HEADER, (size_t)h.index_bytes, MOE__PF_FNV0);
  h.header_sum = moe__pf_header_sum(&h);
  memcpy(buf, &h, sizeof h);
}

static void fuzz_open(const uint8_t *data, size_t size, int fix);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_open(data, size, 0);
  fuzz_open(data, size, 1);
  return 0;
}

static void fuzz_open(const uint8_t *data, size_t size, int fix) {
  uint8_t *buf = (uint8_t *)aligned_alloc(4096, size / 4096 * 4096 + 4096);
  moe_packfile *pf = NULL;
  moe_packfile_error err;
  moe_status st;
  FUZZ_CHECK(buf != NULL, "aligned_alloc");
  if (size) memcpy(buf, data, size);
  if (fix) fuzz_fix_sums(buf, size);
  err.msg[0] = 0;
  st = moe_packfile_open_memory(buf, size, &pf, &err);
  if (st != MOE_OK) {
    FUZZ_CHECK(pf == NULL, "status %d with an open file", (int)st);
    FUZZ_CHECK(err.msg[0] != 0 && memchr(err.msg, 0, sizeof err.msg) != NULL, "status %d without a message", (int)st);
  } else {
    volatile uint8_t acc = 0;
    for (int i = 0; i < moe_packfile_count(pf); i++) {
      const moe_experts *ex = moe_packfile_experts(pf, i);
      const char *name = moe_packfile_name(pf, i);
      size_t b13 = (size_t)(ex->E * ex->panels13) * ex->panel13_bytes, b2 = (size_t)(ex->E * ex->panels2) * ex->panel2_bytes;
      FUZZ_CHECK(name && memchr(name, 0, 96) && name[0], "entry %d: name", i);
      FUZZ_CHECK(moe_packfile_find(pf, name) == ex, "entry %d: %s found elsewhere (names not unique)", i, name);
      FUZZ_CHECK(ex->w13 >= buf && ex->w13 + b13 <= buf + size && ex->w2 >= buf && ex->w2 + b2 <= buf + size,
                 "entry %d: panels outside the file", i);
      FUZZ_CHECK(((uintptr_t)ex->w13 & 4095) == 0 && ((uintptr_t)ex->w2 & 4095) == 0, "entry %d: misaligned", i);
      acc ^= fuzz_sum(ex->w13, b13) ^ fuzz_sum(ex->w2, b2);
      if (ex->b13) acc ^= fuzz_sum((const uint8_t *)ex->b13, (size_t)(ex->E * 2 * ex->N) * 4);
      if (ex->b2) acc ^= fuzz_sum((const uint8_t *)ex->b2, (size_t)(ex->E * ex->K) * 4);
    }
    (void)acc;
  }
  moe_packfile_close(pf);
  free(buf);
}

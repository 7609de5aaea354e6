/* libFuzzer target: moe_ckpt_parse_index over arbitrary bytes as model.safetensors.index.json text of
 * the given size (passed as is, not NUL-terminated: a read past it is an ASan report). Checks, beyond
 * the sanitizers (ASan, UBSan, LeakSanitizer), what moe_checkpoint.h promises of a moe_ckpt_index:
 * files are distinct plain names inside the directory (non-empty, no '/', not "." or ".."), every
 * tensor name is a NUL-terminated string, file_of[i] is an index into files; on failure err.msg is a
 * non-empty NUL-terminated message (fuzz_check_error in fuzz_common.h). moe_ckpt_index_free is called
 * on every outcome.
 *
 * Build: tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#define FUZZ_NAME "fuzz_index"
#include "fuzz_common.h" /* first: it defines _POSIX_C_SOURCE and includes moe_checkpoint.h */

static int fuzz_strcmp_p(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void fuzz_check_index(const moe_ckpt_index *idx, size_t size) {
  FUZZ_CHECK(idx->n_files >= 0 && idx->n_tensors >= 0, "n_files %lld, n_tensors %lld", (long long)idx->n_files,
             (long long)idx->n_tensors);
  /* Each entry of weight_map takes at least "":"" (5 bytes) plus a comma. */
  FUZZ_CHECK((uint64_t)idx->n_tensors <= (uint64_t)size && (uint64_t)idx->n_files <= (uint64_t)size,
             "n_files %lld, n_tensors %lld for %zu bytes", (long long)idx->n_files, (long long)idx->n_tensors, size);
  FUZZ_CHECK(idx->n_files == 0 || idx->files != NULL, "n_files %lld with files == NULL", (long long)idx->n_files);
  FUZZ_CHECK(idx->n_tensors == 0 || (idx->tensors != NULL && idx->file_of != NULL),
             "n_tensors %lld with tensors or file_of NULL", (long long)idx->n_tensors);
  uint8_t acc = 0;
  for (int64_t i = 0; i < idx->n_files; i++) {
    const char *f = idx->files[i];
    FUZZ_CHECK(f != NULL, "files[%lld] == NULL", (long long)i);
    size_t fl = strlen(f);
    for (size_t k = 0; k < fl; k++) acc ^= (uint8_t)f[k];
    FUZZ_CHECK(fl > 0, "files[%lld] is empty", (long long)i);
    FUZZ_CHECK(strchr(f, '/') == NULL, "files[%lld] = \"%s\" is not a plain name", (long long)i, f);
    FUZZ_CHECK(strcmp(f, ".") != 0 && strcmp(f, "..") != 0, "files[%lld] = \"%s\"", (long long)i, f);
  }
  if (idx->n_files > 1) { /* distinct: sort a copy of the pointers, compare neighbours */
    const char **sorted = (const char **)malloc((size_t)idx->n_files * sizeof *sorted);
    FUZZ_CHECK(sorted != NULL, "malloc");
    memcpy(sorted, idx->files, (size_t)idx->n_files * sizeof *sorted);
    qsort(sorted, (size_t)idx->n_files, sizeof *sorted, fuzz_strcmp_p);
    for (int64_t i = 1; i < idx->n_files; i++)
      FUZZ_CHECK(strcmp(sorted[i - 1], sorted[i]) != 0, "files listed twice: \"%s\"", sorted[i]);
    free(sorted);
  }
  for (int64_t i = 0; i < idx->n_tensors; i++) {
    const char *t = idx->tensors[i];
    FUZZ_CHECK(t != NULL, "tensors[%lld] == NULL", (long long)i);
    size_t tl = strlen(t);
    for (size_t k = 0; k < tl; k++) acc ^= (uint8_t)t[k];
    FUZZ_CHECK(idx->file_of[i] >= 0 && (int64_t)idx->file_of[i] < idx->n_files, "%s: file_of = %d of %lld files",
               t, (int)idx->file_of[i], (long long)idx->n_files);
  }
  fuzz_sink = acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  moe_ckpt_index idx = {0};
  moe_ckpt_error err = {0};
  moe_status s = moe_ckpt_parse_index((const char *)data, size, &idx, &err);
  if (s == MOE_OK) {
    fuzz_check_index(&idx, size);
  } else {
    fuzz_check_error(s, &err);
  }
  moe_ckpt_index_free(&idx); /* on failure too: out is left empty or freeable */
  return 0;
}

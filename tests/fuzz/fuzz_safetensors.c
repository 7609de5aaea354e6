/* libFuzzer target: moe_ckpt_parse_safetensors over arbitrary bytes.
 *
 * Beyond the sanitizers (ASan, UBSan, LeakSanitizer) it checks what moe_checkpoint.h promises for a
 * parsed directory: every tensor's [data, data + bytes) lies inside the input, names are
 * NUL-terminated, n_dims is in [0, MOE_CKPT_MAX_DIMS], dims are >= 0, and for the fixed-width dtypes
 * bytes = prod(shape) * element size (the safetensors rule: data_offsets END - BEGIN is the tensor's
 * byte size; https://github.com/huggingface/safetensors README "Format"). Every byte of every tensor
 * is read, so a range past the input is an ASan report here rather than later in the layer loader.
 * On failure err.msg must be a non-empty NUL-terminated message.
 *
 * Build: tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#define _POSIX_C_SOURCE 200809L /* the implementation maps files (moe_checkpoint.h: POSIX before any include) */
#define MOE_IMPLEMENTATION
#define MOE_CHECKPOINT_IMPLEMENTATION
#include "moe_checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile uint8_t fuzz_sink;

#define FUZZ_CHECK(cond, ...)                                                                           \
  do {                                                                                                  \
    if (!(cond)) {                                                                                      \
      fprintf(stderr, "fuzz_safetensors: invariant failed: %s: ", #cond);                              \
      fprintf(stderr, __VA_ARGS__);                                                                     \
      fputc('\n', stderr);                                                                              \
      abort();                                                                                          \
    }                                                                                                   \
  } while (0)

/* Bytes per element of the fixed-width dtypes; 0 for the block and unknown ones. */
static size_t fuzz_elem_size(moe_ckpt_dtype d) {
  switch (d) {
  case MOE_CKPT_F64: case MOE_CKPT_I64: case MOE_CKPT_U64: return 8;
  case MOE_CKPT_F32: case MOE_CKPT_I32: case MOE_CKPT_U32: return 4;
  case MOE_CKPT_F16: case MOE_CKPT_BF16: case MOE_CKPT_I16: case MOE_CKPT_U16: return 2;
  case MOE_CKPT_F8_E4M3: case MOE_CKPT_F8_E5M2: case MOE_CKPT_I8: case MOE_CKPT_U8: case MOE_CKPT_BOOL: return 1;
  default: return 0;
  }
}

static void fuzz_check_tensors(const moe_ckpt_tensors *ts, const uint8_t *file, size_t size) {
  FUZZ_CHECK(ts->n >= 0, "n = %lld", (long long)ts->n);
  FUZZ_CHECK(ts->n == 0 || ts->t != NULL, "n = %lld with t == NULL", (long long)ts->n);
  /* More tensors than bytes is impossible for a well-formed header ({"x":{...}} per tensor). */
  FUZZ_CHECK((uint64_t)ts->n <= (uint64_t)size, "n = %lld > size %zu", (long long)ts->n, size);
  uint8_t acc = 0;
  for (int64_t i = 0; i < ts->n; i++) {
    const moe_ckpt_tensor *t = &ts->t[i];
    FUZZ_CHECK(t->name != NULL, "tensor %lld has no name", (long long)i);
    size_t nl = strlen(t->name); /* ASan: the name must be NUL-terminated inside its allocation */
    for (size_t k = 0; k < nl; k++) acc ^= (uint8_t)t->name[k];
    FUZZ_CHECK((int)t->dtype >= MOE_CKPT_F32 && (int)t->dtype <= MOE_CKPT_OTHER, "%s: dtype %d", t->name,
               (int)t->dtype);
    FUZZ_CHECK(moe_ckpt_dtype_name(t->dtype) != NULL, "%s: dtype %d has no name", t->name, (int)t->dtype);
    FUZZ_CHECK(t->n_dims >= 0 && t->n_dims <= MOE_CKPT_MAX_DIMS, "%s: n_dims %d", t->name, (int)t->n_dims);
    uint64_t elems = 1;
    int overflow = 0, zero = 0;
    for (int d = 0; d < t->n_dims; d++) {
      FUZZ_CHECK(t->shape[d] >= 0, "%s: shape[%d] = %lld", t->name, d, (long long)t->shape[d]);
      zero |= t->shape[d] == 0;
    }
    for (int d = 0; d < t->n_dims && !zero; d++) { /* a 0 dimension: no elements, whatever the others */
      if (elems > UINT64_MAX / (uint64_t)t->shape[d]) overflow = 1;
      else elems *= (uint64_t)t->shape[d];
    }
    if (zero) elems = 0;
    size_t es = fuzz_elem_size(t->dtype);
    if (es != 0) {
      FUZZ_CHECK(!overflow && elems <= UINT64_MAX / es && elems * es == (uint64_t)t->bytes,
                 "%s: %s shape of %llu elements (overflow %d) but bytes = %zu", t->name,
                 moe_ckpt_dtype_name(t->dtype), (unsigned long long)elems, overflow, t->bytes);
    }
    if (t->bytes == 0) continue;
    FUZZ_CHECK(t->data != NULL, "%s: bytes = %zu with data == NULL", t->name, t->bytes);
    FUZZ_CHECK(t->data >= file && t->data <= file + size, "%s: data %p outside the input [%p, %p)", t->name,
               (const void *)t->data, (const void *)file, (const void *)(file + size));
    size_t off = (size_t)(t->data - file);
    FUZZ_CHECK(t->bytes <= size - off, "%s: [%zu, %zu + %zu) past the input's %zu bytes", t->name, off, off,
               t->bytes, size);
    for (size_t k = 0; k < t->bytes; k++) acc ^= t->data[k]; /* ASan: every byte is readable */
  }
  fuzz_sink = acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  moe_ckpt_tensors ts;
  moe_ckpt_error err;
  memset(&ts, 0, sizeof ts);
  memset(&err, 0, sizeof err);
  moe_status s = moe_ckpt_parse_safetensors(data, size, &ts, &err);
  if (s == MOE_OK) {
    fuzz_check_tensors(&ts, data, size);
  } else {
    FUZZ_CHECK(memchr(err.msg, 0, sizeof err.msg) != NULL, "err.msg not NUL-terminated (status %d)", (int)s);
    FUZZ_CHECK(err.msg[0] != 0, "status %d with an empty err.msg", (int)s);
  }
  moe_ckpt_tensors_free(&ts); /* on failure too: out is left empty or freeable */
  return 0;
}

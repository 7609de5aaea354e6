/* What the libFuzzer targets in tests/fuzz/ share. Each target defines FUZZ_NAME (its name, a string
 * literal, e.g. "fuzz_gguf") and then includes this header before anything else: it brings in the
 * implementation of moe_checkpoint.h (which maps files, so _POSIX_C_SOURCE comes first) and the C
 * headers the targets use.
 *
 * Beyond the sanitizers (ASan, UBSan, LeakSanitizer) every target checks:
 *   - fuzz_check_error: on failure, err.msg is a non-empty NUL-terminated message;
 *   - fuzz_check_config (config and gguf): config.model_type stays NUL-terminated and the architecture
 *     has a name;
 *   - fuzz_check_tensors (safetensors and gguf): what moe_checkpoint.h promises for a parsed tensor
 *     directory: at most one tensor per min_tensor_bytes bytes of input, every tensor's
 *     [data, data + bytes) lies inside the input, names are NUL-terminated, dtypes are in range and have
 *     a name, n_dims is in [0, MOE_CKPT_MAX_DIMS], dims are >= 0, and bytes match the shape:
 *     prod(shape) * element size for the fixed-width types, and for the block types (blocks of 32
 *     along the last, contiguous dimension) prod(shape) / 32 * block bytes, with Q4_0 = 18 (f16 d + 16
 *     bytes), Q8_0 = 34 (f16 d + 32 int8), MXFP4 = 17 (e8m0 + 16 bytes): ggml/src/ggml-common.h
 *     block_q4_0, block_q8_0, block_mxfp4 (https://github.com/ggml-org/ggml) and moe_checkpoint.h's
 *     moe_ckpt_dtype. MOE_CKPT_OTHER tensors are listed, never read, so only their range is checked.
 *     (The safetensors parser yields no block types.) Every byte of every tensor is read, so a range
 *     past the input is an ASan report here rather than later in the layer loader.
 * A failed check prints "<FUZZ_NAME>: invariant failed: <condition>: <details>" and aborts (run_fuzz.sh
 * reports it as a finding).
 *
 * Build: tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#ifndef FUZZ_NAME
#error "define FUZZ_NAME (the target's name, e.g. \"fuzz_gguf\") before including fuzz_common.h"
#endif

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
      fprintf(stderr, FUZZ_NAME ": invariant failed: %s: ", #cond);                                    \
      fprintf(stderr, __VA_ARGS__);                                                                     \
      fputc('\n', stderr);                                                                              \
      abort();                                                                                          \
    }                                                                                                   \
  } while (0)

/* A pool that runs the items backwards on this thread: order independence, the parallel path. */
static inline void fuzz_backwards(void *pool, void (*fn)(void *, int64_t), void *arg, int64_t n) {
  (void)pool;
  for (int64_t i = n - 1; i >= 0; i--) fn(arg, i);
}

/* On failure: err.msg is a non-empty NUL-terminated message. */
static inline void fuzz_check_error(moe_status s, const moe_ckpt_error *err) {
  FUZZ_CHECK(memchr(err->msg, 0, sizeof err->msg) != NULL, "err.msg not NUL-terminated (status %d)", (int)s);
  FUZZ_CHECK(err->msg[0] != 0, "status %d with an empty err.msg", (int)s);
}

/* A parsed config: model_type stays NUL-terminated, the architecture has a name. */
static inline void fuzz_check_config(const moe_ckpt_config *cfg) {
  FUZZ_CHECK(memchr(cfg->model_type, 0, sizeof cfg->model_type) != NULL, "config.model_type not NUL-terminated");
  FUZZ_CHECK(moe_ckpt_arch_name(cfg->arch) != NULL, "arch %d has no name", (int)cfg->arch);
}

/* Bytes per element of the fixed-width dtypes; 0 for the block and unknown ones. */
static inline size_t fuzz_elem_size(moe_ckpt_dtype d) {
  switch (d) {
  case MOE_CKPT_F64: case MOE_CKPT_I64: case MOE_CKPT_U64: return 8;
  case MOE_CKPT_F32: case MOE_CKPT_I32: case MOE_CKPT_U32: return 4;
  case MOE_CKPT_F16: case MOE_CKPT_BF16: case MOE_CKPT_I16: case MOE_CKPT_U16: return 2;
  case MOE_CKPT_F8_E4M3: case MOE_CKPT_F8_E5M2: case MOE_CKPT_I8: case MOE_CKPT_U8: case MOE_CKPT_BOOL: return 1;
  default: return 0;
  }
}

/* Bytes per block of 32 elements (ggml-common.h); 0 for the others. */
static inline size_t fuzz_block_size(moe_ckpt_dtype d) {
  switch (d) {
  case MOE_CKPT_Q4_0: return 18;
  case MOE_CKPT_Q8_0: return 34;
  case MOE_CKPT_MXFP4: return 17;
  default: return 0;
  }
}

/* The tensor directory parsed from file[0, size): see the top comment. min_tensor_bytes is the fewest
 * input bytes one tensor's entry can take in the format (so n <= size / min_tensor_bytes). */
static inline void fuzz_check_tensors(const moe_ckpt_tensors *ts, const uint8_t *file, size_t size,
                                      size_t min_tensor_bytes) {
  FUZZ_CHECK(ts->n >= 0, "n = %lld", (long long)ts->n);
  FUZZ_CHECK(ts->n == 0 || ts->t != NULL, "n = %lld with t == NULL", (long long)ts->n);
  FUZZ_CHECK((uint64_t)ts->n <= (uint64_t)size / min_tensor_bytes,
             "n = %lld for %zu bytes (a tensor takes at least %zu)", (long long)ts->n, size, min_tensor_bytes);
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
    size_t es = fuzz_elem_size(t->dtype), bs = fuzz_block_size(t->dtype);
    if (es != 0) {
      FUZZ_CHECK(!overflow && elems <= UINT64_MAX / es && elems * es == (uint64_t)t->bytes,
                 "%s: %s shape of %llu elements (overflow %d) but bytes = %zu", t->name,
                 moe_ckpt_dtype_name(t->dtype), (unsigned long long)elems, overflow, t->bytes);
    } else if (bs != 0) {
      int64_t last = t->n_dims > 0 ? t->shape[t->n_dims - 1] : 1;
      FUZZ_CHECK(last % 32 == 0, "%s: %s with a last dimension of %lld, not a multiple of 32", t->name,
                 moe_ckpt_dtype_name(t->dtype), (long long)last);
      FUZZ_CHECK(!overflow && (elems / 32) <= UINT64_MAX / bs && elems / 32 * bs == (uint64_t)t->bytes,
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

#endif /* FUZZ_COMMON_H */

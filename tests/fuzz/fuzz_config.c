/* libFuzzer target: moe_ckpt_parse_config over arbitrary bytes as config.json text of the given size
 * (the parser takes the size: the input is passed as is, not NUL-terminated, so a read past it is an
 * ASan report). Checks, beyond the sanitizers (ASan, UBSan incl. float-cast-overflow of JSON numbers,
 * LeakSanitizer): config.model_type stays NUL-terminated, the architecture has a name, and on failure
 * err.msg is a non-empty NUL-terminated message.
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
      fprintf(stderr, "fuzz_config: invariant failed: %s: ", #cond);                                   \
      fprintf(stderr, __VA_ARGS__);                                                                     \
      fputc('\n', stderr);                                                                              \
      abort();                                                                                          \
    }                                                                                                   \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  moe_ckpt_config cfg;
  moe_ckpt_error err;
  memset(&cfg, 0, sizeof cfg);
  memset(&err, 0, sizeof err);
  moe_status s = moe_ckpt_parse_config((const char *)data, size, &cfg, &err);
  if (s == MOE_OK) {
    FUZZ_CHECK(memchr(cfg.model_type, 0, sizeof cfg.model_type) != NULL, "config.model_type not NUL-terminated");
    FUZZ_CHECK(moe_ckpt_arch_name(cfg.arch) != NULL, "arch %d has no name", (int)cfg.arch);
    fuzz_sink = (uint8_t)(strlen(cfg.model_type) ^ (size_t)cfg.hidden ^ (size_t)cfg.n_experts ^ (size_t)cfg.topk);
  } else {
    FUZZ_CHECK(memchr(err.msg, 0, sizeof err.msg) != NULL, "err.msg not NUL-terminated (status %d)", (int)s);
    FUZZ_CHECK(err.msg[0] != 0, "status %d with an empty err.msg", (int)s);
  }
  return 0;
}

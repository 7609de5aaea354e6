/* libFuzzer target: moe_ckpt_parse_config over arbitrary bytes as config.json text of the given size
 * (the parser takes the size: the input is passed as is, not NUL-terminated, so a read past it is an
 * ASan report). Checks, beyond the sanitizers (ASan, UBSan incl. float-cast-overflow of JSON numbers,
 * LeakSanitizer): the parsed config (fuzz_check_config) and, on failure, err.msg (fuzz_check_error);
 * both in fuzz_common.h.
 *
 * Build: tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#define FUZZ_NAME "fuzz_config"
#include "fuzz_common.h" /* first: it defines _POSIX_C_SOURCE and includes moe_checkpoint.h */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  moe_ckpt_config cfg = {0};
  moe_ckpt_error err = {0};
  moe_status s = moe_ckpt_parse_config((const char *)data, size, &cfg, &err);
  if (s == MOE_OK) {
    fuzz_check_config(&cfg);
    fuzz_sink = (uint8_t)(strlen(cfg.model_type) ^ (size_t)cfg.hidden ^ (size_t)cfg.n_experts ^ (size_t)cfg.topk);
  } else {
    fuzz_check_error(s, &err);
  }
  return 0;
}

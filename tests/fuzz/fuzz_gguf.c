/* libFuzzer target: moe_ckpt_parse_gguf over arbitrary bytes, with a moe_ckpt_config to fill.
 *
 * Beyond the sanitizers (ASan, UBSan, LeakSanitizer) it checks what moe_checkpoint.h promises for a
 * parsed directory (fuzz_check_tensors in fuzz_common.h: ranges inside the input, names, n_dims, dims,
 * and bytes matching the shape for the plain and the block types Q4_0, Q8_0, MXFP4; MOE_CKPT_OTHER
 * tensors are listed, never read, so only their range is checked), reading every byte of every tensor.
 * The config: config.model_type must stay NUL-terminated (fuzz_check_config). On failure err.msg must
 * be a non-empty NUL-terminated message (fuzz_check_error).
 *
 * Build: tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#define FUZZ_NAME "fuzz_gguf"
#include "fuzz_common.h" /* first: it defines _POSIX_C_SOURCE and includes moe_checkpoint.h */

/* Twice: without a config (the tensor directory alone, whatever the metadata says), then with one
 * (the architecture keys, which a file without a known MoE architecture fails before its tensors). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int with_cfg = 0; with_cfg < 2; with_cfg++) {
    moe_ckpt_tensors ts = {0};
    moe_ckpt_config cfg = {0};
    moe_ckpt_error err = {0};
    moe_status s = moe_ckpt_parse_gguf(data, size, &ts, with_cfg ? &cfg : NULL, &err);
    if (s == MOE_OK) {
      /* A tensor info takes at least 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset) bytes. */
      fuzz_check_tensors(&ts, data, size, 24);
      if (with_cfg) {
        fuzz_check_config(&cfg);
        fuzz_sink ^= (uint8_t)strlen(cfg.model_type);
      }
    } else {
      fuzz_check_error(s, &err);
    }
    moe_ckpt_tensors_free(&ts); /* on failure too: out is left empty or freeable */
  }
  return 0;
}

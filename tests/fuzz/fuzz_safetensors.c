/* libFuzzer target: moe_ckpt_parse_safetensors over arbitrary bytes.
 *
 * Beyond the sanitizers (ASan, UBSan, LeakSanitizer) it checks what moe_checkpoint.h promises for a
 * parsed directory (fuzz_check_tensors in fuzz_common.h: ranges inside the input, names, n_dims, dims,
 * and bytes = prod(shape) * element size for the fixed-width dtypes, the safetensors rule: data_offsets
 * END - BEGIN is the tensor's byte size; https://github.com/huggingface/safetensors README "Format"),
 * reading every byte of every tensor. On failure err.msg must be a non-empty NUL-terminated message
 * (fuzz_check_error).
 *
 * Build: tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#define FUZZ_NAME "fuzz_safetensors"
#include "fuzz_common.h" /* first: it defines _POSIX_C_SOURCE and includes moe_checkpoint.h */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  moe_ckpt_tensors ts = {0};
  moe_ckpt_error err = {0};
  moe_status s = moe_ckpt_parse_safetensors(data, size, &ts, &err);
  if (s == MOE_OK) {
    /* More tensors than bytes is impossible for a well-formed header ({"x":{...}} per tensor). */
    fuzz_check_tensors(&ts, data, size, 1);
  } else {
    fuzz_check_error(s, &err);
  }
  moe_ckpt_tensors_free(&ts); /* on failure too: out is left empty or freeable */
  return 0;
}

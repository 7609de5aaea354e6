#!/bin/sh
# The f32 rows' 4-bit lines read at byte offsets (MOE__B4_OFFSET_READS 1: moe_tiers/decode.h), the
# variant the next Intel sitting measures against the default (suite 'slow': `meson test -C build
# --suite slow offset_reads`, ~1 min on 2 cores): test_kernels' AVX-512 sweep built with it under
# AddressSanitizer + UBSan, so a read past a panel fails too. Needs AVX-512.
#   tests/offset_reads.sh SOURCE_DIR
src=${1:?usage: offset_reads.sh SOURCE_DIR}
cc=${CC:-cc}
. "$src/tests/sanitized_setup.sh" # $d; skips without AVX-512 (the f32 rows) or the sanitizers
$cc -I"$src" -I"$src/tests" -O1 -g1 -std=c11 -Wno-unused-function -DMOE__B4_OFFSET_READS=1 -pthread \
  -fsanitize=address,undefined -fno-sanitize-recover=all "$src/tests/test_kernels.c" -o "$d/test_kernels" -lm ||
  { echo "FAIL: build"; exit 1; }
ASAN_OPTIONS=detect_leaks=1 "$d/test_kernels" --isa avx512 >"$d/log" 2>&1 && grep -q avx512fma "$d/log" &&
  { grep avx512fma "$d/log"; tail -n 1 "$d/log"; exit 0; }
echo "FAIL: test_kernels --isa avx512 with MOE__B4_OFFSET_READS=1"; tail -n 40 "$d/log"; exit 1

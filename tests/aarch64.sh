#!/bin/sh
# The portable scalar tier off x86: the unit tests (quantization, routing, bad input, packing, the
# kernel list) and the layer test (--quick: every precision against the float64 oracle) built for
# aarch64 with Debian's cross compiler and run under qemu-user (suite 'slow': `meson test -C build
# --suite slow aarch64`, ~2 min). Needs gcc-aarch64-linux-gnu and qemu-user; skipped without them.
#   tests/aarch64.sh SOURCE_DIR
src=${1:?usage: aarch64.sh SOURCE_DIR}
cc=aarch64-linux-gnu-gcc
command -v $cc >/dev/null && command -v qemu-aarch64 >/dev/null || { echo "SKIP: no $cc or qemu-aarch64"; exit 77; }
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
fail=0
for t in quant route badinput pack kernels layer; do
  if ! $cc -O2 -std=c11 -Wall -Wextra -Werror -Wno-unused-function -I"$src" -I"$src/tests" "$src/tests/test_$t.c" \
      -o "$out/test_$t" -lm -lpthread; then echo "FAIL: test_$t does not build for aarch64"; fail=1; continue; fi
  args=; [ $t = layer ] && args=--quick
  qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/test_$t" $args >"$out/log" 2>&1
  rc=$?
  # test_kernels has nothing to compare there (no vector tier): 77, skipped, is its answer
  if [ $rc -eq 0 ] || { [ $t = kernels ] && [ $rc -eq 77 ]; }; then echo "ok: test_$t (rc $rc): $(tail -n 1 "$out/log")"
  else echo "FAIL: test_$t (rc $rc)"; cat "$out/log"; fail=1; fi
done
exit $fail

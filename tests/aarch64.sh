#!/bin/sh
# The portable scalar tier off x86: the unit tests (quantization, routing, bad input, packing, the
# kernel list) and the layer test (--quick: every precision against the float64 oracle) built for
# aarch64 with Debian's cross compiler and run under qemu-user, side by side (suite 'cross', in the
# default run; ~50 s on 2 cores). Needs gcc-aarch64-linux-gnu and qemu-user; skipped without them.
#   tests/aarch64.sh SOURCE_DIR
src=${1:?usage: aarch64.sh SOURCE_DIR}
cc=aarch64-linux-gnu-gcc
command -v $cc >/dev/null && command -v qemu-aarch64 >/dev/null || { echo "SKIP: no $cc or qemu-aarch64"; exit 77; }
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
tests="quant route badinput pack kernels layer"
fail=0
flags="-O2 -std=c11 -Wall -Wextra -Werror -Wno-unused-function -I$src -I$src/tests"
# the tests that call only the public API link one build of the library (moe.c), as in the suite
$cc $flags -c "$src/moe.c" -o "$out/moe.o" || { echo "FAIL: moe.c does not build for aarch64"; exit 1; }
for t in $tests; do
  lib="$out/moe.o"; grep -q '^#define MOE_IMPLEMENTATION' "$src/tests/test_$t.c" && lib=
  $cc $flags "$src/tests/test_$t.c" $lib -o "$out/test_$t" -lm -lpthread || { echo "FAIL: test_$t does not build for aarch64"; exit 1; }
done
for t in $tests; do # under qemu, all at once (the layer test takes most of the time)
  args=; [ $t = layer ] && args=--quick
  { qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/test_$t" $args >"$out/$t.log" 2>&1; echo $? >"$out/$t.rc"; } &
done
wait
for t in $tests; do
  rc=$(cat "$out/$t.rc")
  # test_kernels has nothing to compare there (no vector tier): 77, skipped, is its answer
  if [ "$rc" -eq 0 ] || { [ $t = kernels ] && [ "$rc" -eq 77 ]; }; then echo "ok: test_$t (rc $rc): $(tail -n 1 "$out/$t.log")"
  else echo "FAIL: test_$t (rc $rc)"; cat "$out/$t.log"; fail=1; fi
done
exit $fail

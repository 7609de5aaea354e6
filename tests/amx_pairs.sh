#!/bin/sh
# The layer's dense AMX calls over several panel pairs (MOE__AMX_PAIRS 4: moe_tiers/amx.h), the
# variant the next AMX sitting measures against the default (suite 'slow': `meson test -C build
# --suite slow amx_pairs`, ~2 min on 2 cores): the layer and determinism tests built with it on the
# tile model under AddressSanitizer + UBSan. (test_kernels checks the call itself in every run.)
# Needs AVX-512 (the tile model's host).
#   tests/amx_pairs.sh SOURCE_DIR
src=${1:?usage: amx_pairs.sh SOURCE_DIR}
cc=${CC:-cc}
. "$src/tests/sanitized_setup.sh" # $d; skips without AVX-512 or the sanitizers
flags="-O1 -g1 -std=c11 -D_FILE_OFFSET_BITS=64 -Wno-unused-function -DMOE_AMX_EMULATE -DMOE__AMX_PAIRS=4 -pthread
  -fsanitize=address,undefined -fno-sanitize-recover=all"
# shellcheck disable=SC2086
$cc -I"$src" $flags -c "$src/moe.c" -o "$d/moe.o" || { echo "FAIL: build"; exit 1; }
for t in layer determinism; do
  # shellcheck disable=SC2086
  $cc -I"$src" -I"$src/tests" $flags "$src/tests/test_$t.c" "$d/moe.o" -o "$d/test_$t" -lm || { echo "FAIL: build"; exit 1; }
done
fail=0
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
for t in layer determinism; do
  if "$d/test_$t" --quick >"$d/log" 2>&1; then echo "ok: test_$t --quick with MOE__AMX_PAIRS=4: $(tail -n 1 "$d/log")"
  else echo "FAIL: test_$t --quick with MOE__AMX_PAIRS=4"; tail -n 40 "$d/log"; fail=1; fi
done
exit $fail

#!/bin/sh
# The AMX tier on the tile model (MOE_AMX_EMULATE) under the sanitizers (suite 'slow': `meson test
# -C build --suite slow amx_sanitized`, ~6 min on 2 cores). The default run checks the tier on the
# tile model in a release build only (suite 'amx'), and its sanitized run covers the AVX-512 code the
# tier shares; this runs the tier's own code (the B staging, the A copies, the scratch slots of up
# to eight blocks, the layer's row lists) under AddressSanitizer + UBSan: the kernel sweep, the layer
# and the determinism tests; then the determinism test (threads 1-7, its many-rows case) under
# ThreadSanitizer, without OpenMP as tests/run_tests.sh does. Needs AVX-512 (the tile model's host).
#   tests/amx_sanitized.sh SOURCE_DIR
src=${1:?usage: amx_sanitized.sh SOURCE_DIR}
cc=${CC:-cc}
. "$src/tests/sanitized_setup.sh" # $d; skips without AVX-512 (the tile model's host) or the sanitizers
omp=$($cc -fopenmp "$d/probe.c" -o "$d/probe" 2>/dev/null && echo -fopenmp)
common="-O1 -g1 -std=c11 -D_FILE_OFFSET_BITS=64 -Wno-unused-function -DMOE_AMX_EMULATE -pthread"
asan="$common -fsanitize=address,undefined -fno-sanitize-recover=all $omp"
tsan="$common -fsanitize=thread"

build() { # name, flags...: one program, or moe.o (the implementation, as libmoe builds it)
  name=$1; shift
  if [ "$name" = moe ]; then $cc -I"$src" "$@" -c "$src/moe.c" -o "$d/moe.o"
  else $cc -I"$src" -I"$src/tests" "$@" "$src/tests/test_$name.c" -o "$d/test_$name" -lm; fi
}
# test_kernels defines the implementation itself; layer and determinism link moe.o (2 cores: pairs)
build kernels $asan & build moe $asan & wait
[ -f "$d/moe.o" ] && [ -x "$d/test_kernels" ] || { echo "FAIL: build (ASan)"; exit 1; }
build layer $asan "$d/moe.o" & build determinism $asan "$d/moe.o" & wait
fail=0
run() { # what, program, args...
  what=$1; shift
  if "$@" >"$d/log" 2>&1; then echo "ok: $what: $(tail -n 1 "$d/log")"
  else echo "FAIL: $what"; tail -n 40 "$d/log"; fail=1; fi
}
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
run "ASan+UBSan test_kernels --isa amx" "$d/test_kernels" --isa amx
run "ASan+UBSan test_layer --quick" "$d/test_layer" --quick
run "ASan+UBSan test_determinism --quick" "$d/test_determinism" --quick
build moe $tsan && build determinism $tsan "$d/moe.o" || { echo "FAIL: build (TSan)"; exit 1; }
export TSAN_OPTIONS=halt_on_error=1
run "TSan test_determinism --quick" "$d/test_determinism" --quick
exit $fail

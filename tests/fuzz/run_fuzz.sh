#!/usr/bin/env bash
# Builds and runs the fuzz targets (the checkpoint parsers, the packed-file reader, moe_route, moe_pack,
# the layer calls) (libFuzzer + ASan + UBSan).
#
#   tests/fuzz/run_fuzz.sh [BUILD_DIR] [RUNS] [TARGET...]
#
# BUILD_DIR  where the binaries, the working corpora, logs and crash artifacts go
#            (default: $TMPDIR/moe-fuzz, or /tmp/moe-fuzz)
# RUNS       executions per target (default 20000; -runs=N of libFuzzer)
# TARGET     any of safetensors index config gguf packfile route pack layer (default: all eight, in that
#            order), optionally TARGET:N for N executions of that one (the suite's short run gives pack,
#            moe_pack against its scalar twin, and layer, moe_fused_experts, moe_shared_expert and
#            moe_forward against the scalar tier, fewer: each execution packs or runs whole experts)
#
# The targets build side by side (pack and layer compile every kernel with the sanitizers: about a
# minute each, the parsers seconds).
#
# Each target runs over a fresh copy of tests/fuzz/corpus/fuzz_<target>/ (the repository's corpus is
# never written), with -max_len=65536 -timeout=10 -rss_limit_mb=2048. One line per target: executions,
# seconds, execs/s, coverage. Exit status: 0 when every target ran clean, 1 on any finding (crash,
# sanitizer report, leak, timeout, out-of-memory, failed invariant) or build error, 77 (Meson's
# "skipped") when no clang with libFuzzer or no cJSON (libcjson-dev) is available.
# Environment: FUZZ_CC (the compiler; default clang, then clang-14), FUZZ_ARGS (extra libFuzzer flags),
# FUZZ_OPT (optimization and debug flags; default -O1 -g: the suite's short run builds at -O0 -g1,
# which compiles pack and layer in half the time for the few seconds it runs them).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-${TMPDIR:-/tmp}/moe-fuzz}
runs=${2:-20000}
if [ $# -ge 2 ]; then shift 2; elif [ $# -ge 1 ]; then shift 1; fi
targets=${*:-safetensors index config gguf packfile route pack layer}

case $runs in '' | *[!0-9]*) echo "run_fuzz.sh: RUNS must be a number, got '$runs'" >&2; exit 1 ;; esac
mkdir -p "$build" || exit 1
build=$(cd "$build" && pwd)

# ---- toolchain: a compiler that builds and links a libFuzzer target against cJSON, or skip ----------
if pkg-config --exists libcjson 2>/dev/null; then
  cjson_cflags=$(pkg-config --cflags libcjson)
  cjson_libs=$(pkg-config --libs libcjson)
else
  cjson_cflags=""
  cjson_libs="-lcjson"
fi
sanflags="${FUZZ_OPT:--O1 -g} -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
probe="$build/probe_fuzzer.c"
cat >"$probe" <<'EOF'
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  cJSON *j = cJSON_ParseWithLength((const char *)d, n);
  cJSON_Delete(j);
  return 0;
}
EOF
cc=""
for c in ${FUZZ_CC:-} clang clang-14; do
  command -v "$c" >/dev/null 2>&1 || continue
  # shellcheck disable=SC2086
  if "$c" $sanflags $cjson_cflags "$probe" -o "$build/probe_fuzzer" $cjson_libs >"$build/probe.log" 2>&1 &&
    "$build/probe_fuzzer" -runs=1 >>"$build/probe.log" 2>&1; then
    cc=$c
    break
  fi
done
if [ -z "$cc" ]; then
  echo "run_fuzz.sh: SKIP: no clang with libFuzzer (-fsanitize=fuzzer) and cJSON (libcjson-dev) found"
  [ -f "$build/probe.log" ] && tail -n 5 "$build/probe.log"
  exit 77
fi

# ---- build ----------------------------------------------------------------------------------------------
status=0
mkdir -p "$build/logs"
build_one() { # target: compiles fuzz_<target> when stale; 1 on a build error
  t=$1 src="$here/fuzz_$1.c" bin="$build/fuzz_$1"
  # Rebuild when the target, fuzz_common.h (included by every target) or any header at the root (or in
  # moe_tiers/) is newer than the binary.
  if [ -x "$bin" ] && [ -z "$(find "$src" "$here/fuzz_common.h" "$root" "$root/moe_tiers" -maxdepth 1 -name '*.[ch]' -newer "$bin" -print -quit)" ]; then
    return 0
  fi
  # shellcheck disable=SC2086
  if ! "$cc" $sanflags -I"$root" $cjson_cflags "$src" -o "$bin" $cjson_libs -lm >"$build/logs/build_$t.log" 2>&1; then
    echo "fuzz_$t: BUILD FAILED ($build/logs/build_$t.log)"
    tail -n 30 "$build/logs/build_$t.log"
    return 1
  fi
}
names=""
for spec in $targets; do
  t=${spec%%:*}
  if [ ! -f "$here/fuzz_$t.c" ]; then
    echo "run_fuzz.sh: unknown target '$t' (no $here/fuzz_$t.c)" >&2
    exit 1
  fi
  names="$names $t"
done
pids=""
for t in $names; do
  build_one "$t" &
  pids="$pids $!"
done
for p in $pids; do wait "$p" || status=1; done
[ $status = 0 ] || exit 1

# ---- run ---------------------------------------------------------------------------------------------
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:handle_abort=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
for spec in $targets; do
  t=${spec%%:*} n=$runs
  case $spec in *:*) n=${spec#*:} ;; esac
  case $n in '' | *[!0-9]*) echo "run_fuzz.sh: $spec: N must be a number" >&2; exit 1 ;; esac
  bin="$build/fuzz_$t"
  work="$build/corpus/$t"
  art="$build/artifacts/$t"
  log="$build/logs/run_$t.log"
  rm -rf "$work"
  mkdir -p "$work" "$art"
  cp "$here/corpus/fuzz_$t/"* "$work/" 2>/dev/null
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$bin" -runs="$n" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 -artifact_prefix="$art/" \
    ${FUZZ_ARGS:-} "$work" >"$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(awk -v n="${execs:-0}" -v a="$start" -v b="$end" 'BEGIN { d = b - a; printf "%.0f", (d > 0 ? n / d : 0) }')
  cov=$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]* ft: [0-9]*' | tail -n 1)
  corp=$(grep -E '^#[0-9]+' "$log" | grep -o 'corp: [0-9]*/[0-9a-zA-Z]*' | tail -n 1)
  if [ $rc = 0 ]; then
    echo "fuzz_$t: OK: ${execs:-?} execs in ${secs} s (${rate:-?}/s), ${cov:-cov: ?}, ${corp:-corp: ?}"
  else
    status=1
    echo "fuzz_$t: FINDING (exit $rc) after ${execs:-?} execs in ${secs} s; log $log; reproducer(s):"
    find "$art" -type f | sed "s|^|  |"
    # the first report and the top of its stack
    awk '!f && /ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|invariant failed/ { print "  " $0; f = 1; next }
         f && /^ +#[0-9]+ 0x/ && c < 6 { print "  " $0; c++ }' "$log"
  fi
done
exit $status

#!/bin/sh
# The whole test run: the suite in a release build, then again under AddressSanitizer and
# UndefinedBehaviorSanitizer, and the threaded test under ThreadSanitizer. Ends with one line
# "N passed, N failed, N skipped".
cd "$(dirname "$0")/.." || exit 1
setup() { # dir, options...
  dir=$1; shift
  if [ -d "$dir" ]; then meson setup --reconfigure "$dir" "$@" >/dev/null; else meson setup "$dir" "$@" >/dev/null; fi
}
status=0
t0=$(date +%s)
phase() { t=$(date +%s); echo "run_tests: $1: $((t - t0)) s"; t0=$t; } # wall time of each phase
setup build || exit 1
meson compile -C build || exit 1
phase "release build"
meson test -C build --print-errorlogs --no-rebuild "$@" || status=1
phase "release tests"
# Sanitized builds at -O1 with line tables (-g1): the header's generated kernels compile 2.5x
# faster than at -O2 -g, and reports still carry function names and lines.
san_flags="-O1 -g1"
setup build-asan -Dbuildtype=plain -Db_sanitize=address,undefined -Db_lundef=false \
  "-Dc_args=$san_flags -fno-sanitize-recover=all" "-Dcpp_args=$san_flags -fno-sanitize-recover=all" \
  -Dexamples=false -Dbench=false || exit 1
meson compile -C build-asan || exit 1
phase "sanitized build"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --no-rebuild --suite unit "$@" || status=1
phase "sanitized tests"
# The threaded tests (pools of 1-8 threads in every order, the experts' region's atomics; the soak's
# concurrent calls on shared experts) under ThreadSanitizer; without OpenMP, whose runtime TSan
# cannot see.
setup build-tsan -Dbuildtype=plain -Db_sanitize=thread -Db_lundef=false -Dopenmp=disabled \
  "-Dc_args=$san_flags" "-Dcpp_args=$san_flags" -Dexamples=false -Dbench=false || exit 1
meson compile -C build-tsan test_determinism test_soak || exit 1
TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --no-rebuild determinism soak "$@" || status=1
phase "ThreadSanitizer build and tests"
python3 - build/meson-logs/testlog.json build-asan/meson-logs/testlog.json build-tsan/meson-logs/testlog.json <<'PY'
import json, sys
n = {"passed": 0, "failed": 0, "skipped": 0}
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)["result"]
        n["passed" if r in ("OK", "EXPECTEDFAIL") else "skipped" if r == "SKIP" else "failed"] += 1
print(f'{n["passed"]} passed, {n["failed"]} failed, {n["skipped"]} skipped')
PY
exit $status

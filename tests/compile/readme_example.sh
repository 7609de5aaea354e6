#!/bin/sh
# README's drop-in example as written: the first ```c block after "## Drop-in use" in README.md,
# compiled as C (gcc, clang) and C++ (g++, clang++) with -Wall -Wextra -Wpedantic -Werror, with
# OpenMP where the compiler has it, linked with -lm, and run (it must exit 0).
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
awk '/^## Drop-in use/ { h = 1 } h && /^```c$/ { b = 1; next } b && /^```/ { exit } b' "$src/README.md" >"$out/example.c"
[ -s "$out/example.c" ] || { echo "FAIL: no \`\`\`c block after '## Drop-in use' in README.md"; exit 1; }
fail=0
omp() { printf '#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n' >"$out/omp.c" &&
  $1 -fopenmp "$out/omp.c" -o "$out/omp" >/dev/null 2>&1 && "$out/omp" && echo -fopenmp; }
for cc in "gcc -std=c99" clang "g++ -x c++ -std=c++11" "clang++ -x c++"; do
  set -- $cc
  command -v $1 >/dev/null || { echo "FAIL: missing compiler $1"; fail=1; continue; }
  cmd="$cc -O2 $(omp $1) -Wall -Wextra -Wpedantic -Werror -I$src $out/example.c -lm -o $out/example"
  if $cmd >"$out/log" 2>&1 && "$out/example" >>"$out/log" 2>&1; then
    echo "ok: $cmd: $(tail -n 1 "$out/log")"
  else
    echo "FAIL: $cmd"; head -c 4000 "$out/log"; fail=1
  fi
done
exit $fail

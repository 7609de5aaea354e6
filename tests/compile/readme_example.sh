#!/bin/sh
# README's drop-in example as written: the first ```c block after "## Drop-in use" in README.md,
# compiled as C (gcc, clang) and C++ (g++, clang++) with -Wall -Wextra -Wpedantic -Werror, with
# OpenMP where the compiler has it, linked with -lm, and run (it must exit 0). At -O0: a third of
# -O2's compile time; the warnings that need the optimizer are the compile matrix's (call_api.c at
# -O2 and -O3 instantiates every kernel). The clang++ build
# includes the single-file amalgamation (tools/amalgamate.py) instead of the repository's headers,
# and must print what the others print.
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
awk '/^## Drop-in use/ { h = 1 } h && /^```c$/ { b = 1; next } b && /^```/ { exit } b' "$src/README.md" >"$out/example.c"
[ -s "$out/example.c" ] || { echo "FAIL: no \`\`\`c block after '## Drop-in use' in README.md"; exit 1; }
mkdir "$out/single"
python3 "$src/tools/amalgamate.py" -o "$out/single/moe_single.h" || { echo "FAIL: tools/amalgamate.py"; exit 1; }
sed 's|#include "moe.h"|#include "moe_single.h"|' "$out/example.c" >"$out/single/example.c"
fail=0
omp() { printf '#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n' >"$out/omp.c" &&
  $1 -fopenmp "$out/omp.c" -o "$out/omp" >/dev/null 2>&1 && "$out/omp" && echo -fopenmp; }
first=
for cc in "gcc -std=c99" clang "g++ -x c++ -std=c++11" "clang++ -x c++"; do
  set -- $cc
  command -v $1 >/dev/null || { echo "FAIL: missing compiler $1"; fail=1; continue; }
  dir=$src file=$out/example.c
  [ "$1" = clang++ ] && dir=$out/single file=$out/single/example.c
  cmd="$cc -O0 $(omp $1) -Wall -Wextra -Wpedantic -Werror -I$dir $file -lm -o $out/example"
  if $cmd >"$out/log" 2>&1 && "$out/example" >>"$out/log" 2>&1; then
    line=$(tail -n 1 "$out/log")
    echo "ok: $cmd: $line"
    [ -z "$first" ] && first=$line
    [ "$line" = "$first" ] || { echo "FAIL: $1 printed something else than the first build"; fail=1; }
  else
    echo "FAIL: $cmd"; head -c 4000 "$out/log"; fail=1
  fi
done
exit $fail

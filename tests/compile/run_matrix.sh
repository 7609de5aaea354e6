#!/bin/sh
# Compile matrix: each header alone and moe.h with the implementation, as C99 and C++11 (full: also
# C11 and C++17), under gcc and clang, -Wall -Wextra -Wpedantic -Werror; plus builds with precisions
# compiled out.
# Then call_api.c, which calls every public function (so the kernels are instantiated: some warnings
# only appear then), is compiled, linked and run, header-only: -O3 C and precisions compiled out
# (gcc), -O2 C++ with OpenMP where the compiler has it (clang); `run_matrix.sh full` (suite slow)
# runs those with both compilers and adds every standard at -O2 and -O3, a tier compiled out and
# moe.c as an object (libmoe-style). A compiler that is not installed is reported and the run fails
# (CI installs both).
mode=${1:-default}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0 n=0
flags="-O2 -Wall -Wextra -Wpedantic -Werror -I$src -c -o $out/o.o"
try() { n=$((n + 1)); if ! "$@" >"$out/log" 2>&1; then echo "FAIL: $*"; cat "$out/log"; fail=$((fail + 1)); fi; }
# build a program (compiler and arguments; -lm is added) and run it: both must succeed
api="$src/tests/compile/call_api.c"
warn="-Wall -Wextra -Wpedantic -Werror -I$src"
run() { n=$((n + 1)); if ! { "$@" -o "$out/a.out" -lm && "$out/a.out"; } >"$out/log" 2>&1; then
  echo "FAIL: $* (built and run)"; cat "$out/log"; fail=$((fail + 1)); fi; }
has_openmp() { printf '#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n' >"$out/omp.c" &&
  $1 -fopenmp "$out/omp.c" -o "$out/omp" >/dev/null 2>&1 && "$out/omp"; }
for cc in gcc clang; do
  command -v $cc >/dev/null || { echo "missing compiler $cc"; exit 1; }
  cxx=$([ $cc = gcc ] && echo g++ || echo clang++)
  for h in moe.h moe_gemm.h moe_quant.h moe_import.h moe_route.h; do
    for impl in "" "-DMOE_IMPLEMENTATION"; do
      cstds="c99" cxxstds="c++11"
      [ "$mode" = full ] && cstds="c99 c11" cxxstds="c++11 c++17"
      for std in $cstds; do try $cc -std=$std $impl "-DHEADER=\"$h\"" $flags "$src/tests/compile/each_header.c"; done
      for std in $cxxstds; do try $cxx -x c++ -std=$std $impl "-DHEADER=\"$h\"" $flags "$src/tests/compile/each_header.c"; done
    done
  done
  # the checkpoint reader (needs cJSON's header; POSIX for mmap): declarations, then the implementation
  if [ -f /usr/include/cjson/cJSON.h ]; then
    ck="-D_POSIX_C_SOURCE=200809L -DMOE_IMPLEMENTATION -DMOE_CHECKPOINT_IMPLEMENTATION"
    try $cc -std=c99 '-DHEADER="moe_checkpoint.h"' $flags "$src/tests/compile/each_header.c"
    try $cc -std=c99 $ck '-DHEADER="moe_checkpoint.h"' $flags "$src/tests/compile/each_header.c"
    # the reader's implementation alone, for a program that links libmoe for moe.h's
    try $cc -std=c99 -D_POSIX_C_SOURCE=200809L -DMOE_CHECKPOINT_IMPLEMENTATION '-DHEADER="moe_checkpoint.h"' $flags "$src/tests/compile/each_header.c"
    try $cxx -x c++ -std=c++11 $ck '-DHEADER="moe_checkpoint.h"' $flags "$src/tests/compile/each_header.c"
  else echo "note: no cjson/cJSON.h: moe_checkpoint.h not compiled"; fi
  # the pthreadpool adapter (needs pthreadpool.h): declarations, then with the implementation
  if [ -f /usr/include/pthreadpool.h ]; then
    try $cc -std=c99 '-DHEADER="moe_pthreadpool.h"' $flags "$src/tests/compile/each_header.c"
    try $cxx -x c++ -std=c++11 -DMOE_IMPLEMENTATION '-DHEADER="moe_pthreadpool.h"' $flags "$src/tests/compile/each_header.c"
  else echo "note: no pthreadpool.h: moe_pthreadpool.h not compiled"; fi
  # the packed-experts files (POSIX mmap): declarations, then the implementation in C and C++
  pf="-D_POSIX_C_SOURCE=200809L -DMOE_IMPLEMENTATION -DMOE_PACKFILE_IMPLEMENTATION"
  try $cc -std=c99 '-DHEADER="moe_packfile.h"' $flags "$src/tests/compile/each_header.c"
  try $cc -std=c99 $pf '-DHEADER="moe_packfile.h"' $flags "$src/tests/compile/each_header.c"
  try $cxx -x c++ -std=c++11 $pf '-DHEADER="moe_packfile.h"' $flags "$src/tests/compile/each_header.c"
  for no in MOE_NO_BF16 MOE_NO_INT8 MOE_NO_FP8 MOE_NO_INT4 MOE_NO_MXFP4 MOE_NO_AVX512 MOE_NO_AMX MOE_NO_AVX2 \
            "MOE_NO_BF16 -DMOE_NO_FP8 -DMOE_NO_INT4 -DMOE_NO_MXFP4"; do
    try $cc -std=c99 -DMOE_IMPLEMENTATION -D$no '-DHEADER="moe.h"' $flags "$src/tests/compile/each_header.c"
    try $cxx -x c++ -std=c++17 -DMOE_IMPLEMENTATION -D$no '-DHEADER="moe.h"' $flags "$src/tests/compile/each_header.c"
  done
  # the default run: -O3 C, -O2 C++ with OpenMP (where the compiler has it), and precisions compiled
  # out; "full" adds every standard at -O2 and -O3, OpenMP in both languages, MOE_NO_AVX512 and the
  # libmoe-style link (moe.c as a C object, the caller in C++: extern "C" linkage)
  omp=""
  if has_openmp $cc && has_openmp $cxx; then omp=-fopenmp; else
    echo "note: $cc/$cxx without OpenMP (omp.h or its runtime missing): OpenMP builds not tried"; fi
  # (the compile suite's readme_example builds an implementation at -O2 with gcc, clang, g++ and
  # clang++ too, so the default run splits these between the compilers)
  if [ "$mode" = full ] || [ $cc = gcc ]; then
    run $cc -std=c11 -O3 $warn -DMOE_IMPLEMENTATION "$api"
    run $cc -std=c99 -O2 $warn -DMOE_IMPLEMENTATION -DMOE_NO_BF16 -DMOE_NO_FP8 -DMOE_NO_INT4 -DMOE_NO_MXFP4 "$api"
  fi
  if [ "$mode" = full ] || [ $cc = clang ]; then
    run $cxx -x c++ -std=c++17 -O2 $omp $warn -DMOE_IMPLEMENTATION "$api"
    # the AMX tier's tile model as C++ (the amx suite builds it as C with gcc)
    run $cxx -x c++ -std=c++11 -O1 $warn -DMOE_IMPLEMENTATION -DMOE_AMX_EMULATE "$api"
  fi
  if [ "$mode" = full ]; then
    run $cc -std=c99 -O2 $warn -DMOE_IMPLEMENTATION "$api"
    run $cxx -x c++ -std=c++11 -O3 $warn -DMOE_IMPLEMENTATION "$api"
    run $cxx -x c++ -std=c++17 -O3 $warn -DMOE_IMPLEMENTATION "$api"
    [ -n "$omp" ] && run $cc -std=c11 -O2 $omp $warn -DMOE_IMPLEMENTATION "$api"
    run $cxx -x c++ -std=c++17 -O2 $warn -DMOE_IMPLEMENTATION -DMOE_NO_AVX512 "$api"
    try $cc -std=c99 -O2 $warn -c "$src/moe.c" -o "$out/moe.o"
    run $cxx -x c++ -std=c++11 -O2 $warn "$api" -x none "$out/moe.o"
  fi
  # all precisions compiled out must stop the build
  n=$((n + 1))
  if $cc -std=c99 -DMOE_IMPLEMENTATION -DMOE_NO_BF16 -DMOE_NO_INT8 -DMOE_NO_FP8 -DMOE_NO_INT4 -DMOE_NO_MXFP4 \
      '-DHEADER="moe.h"' $flags "$src/tests/compile/each_header.c" >/dev/null 2>&1; then
    echo "FAIL: every MOE_NO_<precision> together compiled"; fail=$((fail + 1))
  fi
done
echo "compile matrix: $n builds, $fail failed"
[ $fail -eq 0 ]

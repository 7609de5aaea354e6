#!/bin/sh
# One prepared sitting on an AMX host (a Xeon at hand, or a lent machine's host for a few minutes):
# the tiles' correctness natively, then issue 19's measurements in the order of their worth, so a
# run cut short keeps what matters most. Every build given runs each measurement in turn (rounds
# interleaved, for before/after in one sitting); bench/compare.py makes the tables.
#
#   bench/amx_sitting.sh prepare BUILD            a release build of this checkout that travels: the
#                                                 binaries below, its commit, libgomp beside them
#   bench/amx_sitting.sh run OUT BUILD [BUILD2]   THREADS=2 ROUNDS=2 (environment)
#
# BUILD: a release build directory (its bench/ and tests/; its commit from BUILD/commit.txt when
# there, else git: a lent machine gets no .git). OUT gets:
#   machine.txt   the CPU, its AMX flags, cores, memory, and each build's commit
#   tests.txt     test_kernels --isa amx, test_layer, test_determinism --quick: their last lines
#   <label>.jsonl every JSON line of a build (label: BUILD's last path part), rounds appended
#   log.txt       the benchmarks' stderr tables, step by step
# Without AMX (a dry run of the script) the layer runs on AVX-512 and the AMX-only steps are skipped.
set -u
usage() { echo "usage: $0 prepare BUILD | $0 run OUT BUILD [BUILD2]" >&2; exit 2; }
[ $# -ge 2 ] || usage
if [ "$1" = prepare ]; then
  b=$2
  [ -d "$b" ] || meson setup "$b" --buildtype=release -Donednn=disabled -Dexamples=false || exit 1
  ninja -C "$b" bench/bench_layer bench/bench_kernels bench/bench_stream tests/test_kernels tests/test_layer \
    tests/test_determinism || exit 1
  echo "$(git log -1 --format='%h %s')${CFLAGS:+ (CFLAGS=$CFLAGS)}" >"$b/commit.txt" # a variant build: CFLAGS=-D... at its first prepare
  mkdir -p "$b/lib"
  gomp=$(ldd "$b/bench/bench_layer" | sed -n 's/.*libgomp[^ ]* => \([^ ]*\).*/\1/p')
  [ -z "$gomp" ] || cp "$gomp" "$b/lib/"
  du -sh "$b"
  exit 0
fi
[ "$1" = run ] && [ $# -ge 3 ] || usage
out=$2; shift 2
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
mkdir -p "$out" || exit 2
for b in "$@"; do
  [ -x "$b/bench/bench_layer" ] || { echo "$b: no bench/bench_layer (a release build dir?)" >&2; exit 2; }
done
amx=$(grep -c -m1 amx_tile /proc/cpuinfo)
isa=avx512
[ "$amx" = 1 ] && isa=amx

{
  date -u
  grep -m1 'model name' /proc/cpuinfo
  grep -m1 'cpu family' /proc/cpuinfo
  grep -m1 '^model' /proc/cpuinfo
  echo "amx flags: $(grep -o 'amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "cpus: $(nproc); $(grep MemTotal /proc/meminfo)"
  echo "glibc: $(ldd --version 2>&1 | head -1)"
  for b in "$@"; do echo "build $b: $(cat "$b/commit.txt" 2>/dev/null || git -C "$b" log -1 --format='%h %s' 2>/dev/null)"; done
  echo "threads $threads, rounds $rounds, layer isa $isa"
} >"$out/machine.txt"
cat "$out/machine.txt"

log() { echo "== $*" | tee -a "$out/log.txt"; }
# step NAME CMD...: runs CMD with every build (the binary path relative to the build dir), its JSON
# lines tagged with the step and appended to <label>.jsonl, its stderr to log.txt.
step() {
  name=$1 cmd=$2; shift 2
  for b in $builds; do
    label=$(basename "$b")
    log "$name: $label: $cmd $*"
    LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$b/$cmd" "$@" 2>>"$out/log.txt" | sed "s/^{/{\"sitting_step\":\"$name\",/" >>"$out/$label.jsonl"
  done
}
builds="$*"

# 1. Correctness on the tiles (each build; a failure is reported, the sitting goes on).
for b in $builds; do
  for t in "test_kernels --isa $isa" "test_layer" "test_determinism --quick"; do
    r=$(LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$b"/tests/$t 2>&1 | tail -1)
    echo "$(basename "$b"): $t: $r" | tee -a "$out/tests.txt"
  done
done

r=1
while [ "$r" -le "$rounds" ]; do
  log "round $r"
  # 2. The decoded formats' decode roofs, and on AMX every AMX kernel in cache and streaming, the
  #    dense ones also in the layer's calls over four panel pairs (mode "pairs": MOE__AMX_PAIRS=4).
  step decode bench/bench_kernels --kernel __amx --threads "$threads" --runs 9 --pairs 4
  # 3. The layer: every precision, decode to prefill, on the tiles.
  step layer bench/bench_layer --model qwen3-30b-a3b --precision all --m 1,32,128,512,2048 --threads "$threads" --quick --isa "$isa"
  # 4. Decode's kernels (AVX-512: M = 1 runs them; Intel's f32 rows for W4A16 and MXFP4): every
  #    precision one row streaming and in cache, the f32 rows also at 2 rows.
  step rows1 bench/bench_kernels --isa avx512 --rows 1 --threads "$threads" --quick
  step rows2 bench/bench_kernels --kernel avx512fma --rows 2 --threads "$threads" --quick
  # 5. What the weight stream adds to the tiles (M = 512 and 2048's rows per expert).
  if [ "$isa" = amx ]; then
    step stream32 bench/bench_stream --precision bf16,int8,fp8,mxfp4 --rows 32 --threads "$threads" --isa amx
    step stream128 bench/bench_stream --precision bf16,int8,fp8,mxfp4 --rows 128 --threads "$threads" --isa amx
  fi
  r=$((r + 1))
done
# 6. Every core of a larger host, once (the 16-core host's figures in docs/amx.md).
n=$(nproc)
if [ "$n" -ge 8 ] && [ "$n" -ne "$threads" ]; then
  step layer-all bench/bench_layer --model qwen3-30b-a3b --precision bf16,int8,fp8,int4-w4a16,mxfp4 --m 1,128,2048 --threads "$n" --quick --isa "$isa"
fi
log "done"
ls -l "$out"

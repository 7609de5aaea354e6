#!/bin/sh
# The loopback figures of docs/parallel.md and bench/RESULTS.md (expert parallelism over MPI):
#   sh tests/mpi/figures.sh BUILD_DIR [OUT.jsonl]      (default OUT: bench/results-zen5-ep.jsonl)
# Qwen3-30B-A3B (E 128, bf16) and a DeepSeek-V3-shaped layer (E cut to 32, fp8 with 128x128 blocks, the
# shared expert of N 2048 included) at M = 1, 32, 512, every mode, on
#   2 ranks x 1 thread, shared memory (ob1 + vader, one copy through a shared buffer)
#   2 ranks x 1 thread, TCP over the loopback interface (ob1 + tcp on lo)
#   1 rank  x 2 threads (no communication: the single-process baseline)
# One JSON line per case (moe_ep's format) goes to OUT. Each mpirun runs under `flock /tmp/cpu.lock` when
# flock exists, so that other jobs on a shared machine do not run at the same time.
set -e
build=${1:?usage: figures.sh BUILD_DIR [OUT.jsonl]}
out=${2:-$(dirname "$0")/../../bench/results-zen5-ep.jsonl}
lock=""
command -v flock >/dev/null && lock="flock /tmp/cpu.lock"
: >"$out"
run() { # ranks threads bind btl model precision M runs
  OMPI_MCA_pml=ob1 OMPI_MCA_btl=$4 OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_btl_vader_single_copy_mechanism=none \
  OMP_NUM_THREADS=$2 $lock mpirun --allow-run-as-root --oversubscribe --bind-to "$3" --mca plm isolated \
    -x OMP_NUM_THREADS -x OMPI_MCA_pml -x OMPI_MCA_btl -np "$1" "$build/examples/moe_ep" --model "$5" \
    --precision "$6" --m "$7" --runs "$8" --threads "$2" --mode all >>"$out"
}
for model in qwen3-30b-a3b:bf16 deepseek-v3:fp8; do
  name=${model%%:*} prec=${model##*:}
  for M in 1 32 512; do
    runs=7
    [ "$M" = 512 ] && runs=3
    run 2 1 core self,vader "$name" "$prec" "$M" "$runs"
    run 2 1 core self,tcp "$name" "$prec" "$M" "$runs"
    run 1 2 none self,vader "$name" "$prec" "$M" "$runs"
  done
done
echo "figures.sh: $(wc -l <"$out") lines in $out"

#!/bin/sh
# Runs examples/moe_ep under mpirun for the Meson suite 'mpi':  run_ep.sh MPIRUN NP MOE_EP [ARGS...]
# Every option below is for a fresh container (CI: a Debian image, as root, 2 cores, no network devices):
#   --allow-run-as-root   mpirun refuses to start as root without it
#   --oversubscribe       3 ranks on a 2-core machine (more ranks than slots)
#   --bind-to none        Open MPI pins each rank to a core when np <= 2: fine, but oversubscribed ranks
#                         and a rank with several threads must not share one pinned core
#   --mca plm isolated    start the ranks on this node only, without looking for ssh/rsh
#   --mca pml ob1 --mca btl self,vader
#                         shared memory only: no UCX, libfabric or openib probing of network devices the
#                         container lacks (warnings and start-up delays)
#   --mca btl_vader_single_copy_mechanism none
#                         vader's default single copy (CMA: process_vm_readv) needs ptrace rights that
#                         Docker's default seccomp profile denies ("Read -1, expected ..., errno = 1")
#   OMP_NUM_THREADS=1     one thread per rank (the tests run --threads 1)
set -e
mpirun=$1 np=$2
shift 2
OMP_NUM_THREADS=1 exec "$mpirun" --allow-run-as-root --oversubscribe --bind-to none --mca plm isolated \
  --mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
  -x OMP_NUM_THREADS -np "$np" "$@"

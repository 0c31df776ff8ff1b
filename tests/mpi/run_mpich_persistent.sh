#!/bin/bash
# From a build without MPI_Neighbor_alltoallv_init (Open MPI 4.1): run the MPICH build's
# test_stencil_hamiltonian, which exercises the persistent halo exchange (MPI-4), at NP ranks.
# Skips (exit 77) when that build or mpirun.mpich is absent. The MPICH build is used as it is:
# rebuild it first (cmake --build build-mpich --target test_stencil_hamiltonian).
#   run_mpich_persistent.sh <build-mpich dir> <np>
set -u
dir=$1 np=$2
bin=$dir/tests/mpi/test_stencil_hamiltonian
if [ ! -x "$bin" ]; then echo "skip: $bin not built (scripts/setup.sh --mpi mpich)"; exit 77; fi
if ! command -v mpirun.mpich >/dev/null; then echo "skip: mpirun.mpich not installed"; exit 77; fi
if ! nm -C "$bin" | grep -q "MPI_Neighbor_alltoallv_init"; then
  echo "skip: $bin was built without MPI_Neighbor_alltoallv_init"; exit 77
fi
exec mpirun.mpich -np "$np" "$bin"

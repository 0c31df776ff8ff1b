#!/bin/bash
# main-job.sh — set up (scripts/setup.sh) and run tessel's main job on a built-in input:
# a verified 2048^3 distributed multiply on 4 local ranks, printing the plan, the time,
# GFLOP/s, and the bytes moved per rank against the Theorem 2 lower bound.
#
#   scripts/main-job.sh [--ranks N] [-- <extra `tessel gemm` options>]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RANKS=4
EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in
    --ranks) RANKS=$2; shift 2;;
    --) shift; EXTRA=("$@"); break;;
    -h|--help) sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0;;
    *) echo "main-job.sh: unknown argument '$1'" >&2; exit 2;;
  esac
done
bash "$ROOT/scripts/setup.sh" >&2
# shellcheck source=mpi-env.sh
source "$ROOT/scripts/mpi-env.sh"
exec mpirun.openmpi -np "$RANKS" "$ROOT/build/apps/tessel/tessel" gemm \
  --m 2048 --n 2048 --k 2048 --verify "${EXTRA[@]}" </dev/null

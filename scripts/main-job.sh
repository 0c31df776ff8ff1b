#!/bin/bash
# main-job.sh — set up (scripts/setup.sh) and run tessel's main job on a built-in input:
# `tessel purify` of the ring model (n = 1024 sites, gap 0.2 Eh, hopping 1 Eh, nocc = 512) by
# canonical purification around SymmSquareCube (seed 000, Algorithm 5) on 8 local ranks (a
# 2 x 2 x 2 mesh), printing one line per iteration, the TFLOP/s of the products, the trace and
# idempotency errors, the band energy next to the exact (analytic) one, and the bytes moved
# per rank by phase.
#
#   scripts/main-job.sh [--ranks N] [-- <extra `tessel purify` options>]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RANKS=8
EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in
    --ranks) [ $# -ge 2 ] || { echo "main-job.sh: --ranks needs a value" >&2; exit 2; }; RANKS=$2; shift 2;;
    --) shift; EXTRA=("$@"); break;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0;;
    *) echo "main-job.sh: unknown argument '$1'" >&2; exit 2;;
  esac
done
bash "$ROOT/scripts/setup.sh" >&2
# shellcheck source=mpi-env.sh
source "$ROOT/scripts/mpi-env.sh"
# More ranks than cores: Open MPI needs --oversubscribe (it yields the cores while waiting).
exec mpirun.openmpi --oversubscribe -np "$RANKS" "$ROOT/build/apps/tessel/tessel" purify \
  --n 1024 --gap 0.2 --hopping 1.0 "${EXTRA[@]}" </dev/null

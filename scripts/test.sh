#!/bin/bash
# test.sh — set up (scripts/setup.sh), build and run the whole test suite with ctest.
#
#   scripts/test.sh [--mpi openmpi|mpich] [--build-dir DIR] [--fuzz-total S] [-- <extra ctest args>]
#
# Exits with ctest's status. The MPI environment comes from scripts/mpi-env.sh.
# --fuzz-total S (or env TESSEL_FUZZ_TOTAL=S): afterwards also build and run the libFuzzer
# targets (scripts/fuzz.sh, build-fuzz) for S seconds in all; a crash fails the run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MPI=openmpi
BUILD_DIR=
SETUP_ARGS=()
CTEST_ARGS=()
FUZZ_TOTAL=${TESSEL_FUZZ_TOTAL:-0}

die() { echo "test.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --mpi) [ $# -ge 2 ] || die "--mpi needs a value"; MPI=$2; SETUP_ARGS+=(--mpi "$2"); shift 2;;
    --mpi=*) MPI=${1#--mpi=}; SETUP_ARGS+=(--mpi "$MPI"); shift;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; BUILD_DIR=$2; SETUP_ARGS+=(--build-dir "$2"); shift 2;;
    --build-dir=*) BUILD_DIR=${1#--build-dir=}; SETUP_ARGS+=(--build-dir "$BUILD_DIR"); shift;;
    --fuzz-total) [ $# -ge 2 ] || die "--fuzz-total needs a value"; FUZZ_TOTAL=$2; shift 2;;
    --fuzz-total=*) FUZZ_TOTAL=${1#--fuzz-total=}; shift;;
    --) shift; CTEST_ARGS=("$@"); break;;
    -h|--help) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0;;
    *) die "unknown argument '$1' (see --help)";;
  esac
done
if [ -z "$BUILD_DIR" ]; then
  if [ "$MPI" = mpich ]; then BUILD_DIR=build-mpich; else BUILD_DIR=build; fi
fi
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR;; esac

bash "$ROOT/scripts/setup.sh" "${SETUP_ARGS[@]}"

# shellcheck source=mpi-env.sh
source "$ROOT/scripts/mpi-env.sh"
cd "$BUILD_DIR"
status=0
ctest --output-on-failure "${CTEST_ARGS[@]}" </dev/null || status=$?
echo "test.sh: ctest exit status $status"
if [[ $FUZZ_TOTAL =~ ^[0-9]+$ ]] && [ "$FUZZ_TOTAL" -gt 0 ]; then
  fuzz_status=0
  bash "$ROOT/scripts/fuzz.sh" --total "$FUZZ_TOTAL" || fuzz_status=$?
  echo "test.sh: fuzz exit status $fuzz_status"
  [ $status -ne 0 ] || status=$fuzz_status
elif [ "$FUZZ_TOTAL" != 0 ]; then
  die "--fuzz-total / TESSEL_FUZZ_TOTAL must be a number of seconds, not '$FUZZ_TOTAL'"
fi
exit $status

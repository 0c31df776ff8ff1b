#!/bin/bash
# test.sh — set up (scripts/setup.sh), build and run the whole test suite with ctest.
#
#   scripts/test.sh [--mpi openmpi|mpich] [--build-dir DIR] [--sanitize] [--fuzz-total S] [-- <extra ctest args>]
#
# --sanitize: build into build-asan (default) with AddressSanitizer + UndefinedBehaviorSanitizer
# (RelWithDebInfo, -fno-sanitize-recover: any UB finding fails the test) and run there, MPI
# tests at rank counts <= 4 only (TESSEL_TEST_MAX_RANKS=4; a test declared only above 4 keeps
# its smallest count); LeakSanitizer suppressions for MPI's own allocations in
# scripts/sanitize/lsan.supp (each explained there).
# Exits with ctest's status. The MPI environment comes from scripts/mpi-env.sh.
# --fuzz-total S (or env TESSEL_FUZZ_TOTAL=S): afterwards also build and run the libFuzzer
# targets (scripts/fuzz.sh, build-fuzz) for S seconds in all; a crash fails the run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MPI=openmpi
BUILD_DIR=
SETUP_ARGS=()
CTEST_ARGS=()
SANITIZE=0
FUZZ_TOTAL=${TESSEL_FUZZ_TOTAL:-0}

die() { echo "test.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --mpi) [ $# -ge 2 ] || die "--mpi needs a value"; MPI=$2; SETUP_ARGS+=(--mpi "$2"); shift 2;;
    --mpi=*) MPI=${1#--mpi=}; SETUP_ARGS+=(--mpi "$MPI"); shift;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; BUILD_DIR=$2; SETUP_ARGS+=(--build-dir "$2"); shift 2;;
    --build-dir=*) BUILD_DIR=${1#--build-dir=}; SETUP_ARGS+=(--build-dir "$BUILD_DIR"); shift;;
    --sanitize) SANITIZE=1; shift;;
    --fuzz-total) [ $# -ge 2 ] || die "--fuzz-total needs a value"; FUZZ_TOTAL=$2; shift 2;;
    --fuzz-total=*) FUZZ_TOTAL=${1#--fuzz-total=}; shift;;
    --) shift; CTEST_ARGS=("$@"); break;;
    -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0;;
    *) die "unknown argument '$1' (see --help)";;
  esac
done
if [ -z "$BUILD_DIR" ]; then
  if [ $SANITIZE = 1 ]; then BUILD_DIR=build-asan
  elif [ "$MPI" = mpich ]; then BUILD_DIR=build-mpich; else BUILD_DIR=build; fi
fi
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR;; esac

if [ $SANITIZE = 1 ]; then
  bash "$ROOT/scripts/setup.sh" --mpi "$MPI" --no-build
  flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMPI_C_COMPILER=/usr/bin/mpicc.$MPI -DMPI_CXX_COMPILER=/usr/bin/mpicxx.$MPI \
    -DMPIEXEC_EXECUTABLE=/usr/bin/mpirun.$MPI -DTESSEL_BUILD_BENCH=OFF \
    "-DTESSEL_TEST_RANKS=1;2;3;4" -DTESSEL_TEST_MAX_RANKS=4 "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
    "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined"
  cmake --build "$BUILD_DIR" --parallel "$(nproc)"
  # halt_on_error: the first finding fails the test; new_delete_type_mismatch off: Open MPI's
  # C++ bindings are not used, the check only fires inside MPI's own allocators.
  # fast_unwind_on_malloc=0: the MPI libraries have no frame pointers; without the slow
  # unwinder a leak's stack stops inside them and the suppressions cannot match it.
  # disable_dlclose: Open MPI's components stay loaded, so their frames keep their names.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:new_delete_type_mismatch=0:fast_unwind_on_malloc=0}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/scripts/sanitize/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0}
  export OMPI_MCA_mca_base_component_disable_dlclose=1
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
else
  bash "$ROOT/scripts/setup.sh" "${SETUP_ARGS[@]}"
fi

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

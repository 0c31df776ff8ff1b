#!/bin/bash
# test.sh — set up (scripts/setup.sh), build and run the whole test suite with ctest, under
# Open MPI, MPICH or both.
#
#   scripts/test.sh [--mpi openmpi|mpich|both] [--build-dir DIR] [--sanitize] [--fuzz-total S] [-- <extra ctest args>]
#
# --mpi: which MPI to build against and run under (default both; env TESSEL_TEST_MPI).
#   both: Open MPI in build/, then MPICH in build-mpich/ (each as scripts/setup.sh --mpi M),
#   every test under each, then one summary line per MPI (tests passed/failed, minutes, the
#   load average); the exit status is non-zero when either failed. --build-dir needs one MPI.
#   MPICH: tessel's waits poll and sleep instead of spinning (docs/mpich.md); the Python tests
#   are skipped there (Debian's mpi4py is built on Open MPI: docs/python.md).
#   TESSEL_TEST_MPICH_MAX_RANKS=N caps MPICH's rank counts at N (CI: 4; default: all).
# --sanitize: build into build-asan (default) with AddressSanitizer + UndefinedBehaviorSanitizer
# (RelWithDebInfo, -fno-sanitize-recover: any UB finding fails the test) and run there, MPI
# tests at rank counts <= 4 only (TESSEL_TEST_MAX_RANKS=4: a test declared only above 4 keeps
# its smallest count); LeakSanitizer suppressions for MPI's own allocations in
# scripts/sanitize/lsan.supp (each explained there). Under one MPI only (default openmpi).
# Exits with ctest's status. The MPI environment comes from scripts/mpi-env.sh.
# --fuzz-total S (or env TESSEL_FUZZ_TOTAL=S): afterwards also build and run the libFuzzer
# targets (scripts/fuzz.sh, build-fuzz) for S seconds in all, once; a crash fails the run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MPI=
BUILD_DIR=
CTEST_ARGS=()
SANITIZE=0
FUZZ_TOTAL=${TESSEL_FUZZ_TOTAL:-0}

die() { echo "test.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --mpi) [ $# -ge 2 ] || die "--mpi needs a value"; MPI=$2; shift 2;;
    --mpi=*) MPI=${1#--mpi=}; shift;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; BUILD_DIR=$2; shift 2;;
    --build-dir=*) BUILD_DIR=${1#--build-dir=}; shift;;
    --sanitize) SANITIZE=1; shift;;
    --fuzz-total) [ $# -ge 2 ] || die "--fuzz-total needs a value"; FUZZ_TOTAL=$2; shift 2;;
    --fuzz-total=*) FUZZ_TOTAL=${1#--fuzz-total=}; shift;;
    --) shift; CTEST_ARGS=("$@"); break;;
    -h|--help) sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0;;
    *) die "unknown argument '$1' (see --help)";;
  esac
done
if [ -z "$MPI" ]; then
  if [ $SANITIZE = 1 ]; then MPI=openmpi; else MPI=${TESSEL_TEST_MPI:-both}; fi
fi
case $MPI in
  openmpi) MPIS=(openmpi);;
  mpich) MPIS=(mpich);;
  both) MPIS=(openmpi mpich);;
  *) die "--mpi must be openmpi, mpich or both, not '$MPI'";;
esac
[ ${#MPIS[@]} -eq 1 ] || [ -z "$BUILD_DIR" ] || die "--build-dir needs one MPI (--mpi openmpi or mpich)"
[ ${#MPIS[@]} -eq 1 ] || [ $SANITIZE = 0 ] || die "--sanitize runs under one MPI (--mpi openmpi or mpich)"
if ! [[ $FUZZ_TOTAL =~ ^[0-9]+$ ]]; then
  die "--fuzz-total / TESSEL_FUZZ_TOTAL must be a number of seconds, not '$FUZZ_TOTAL'"
fi

# Builds (setup.sh) and runs ctest for one MPI; sets RUN_STATUS and appends a summary line.
SUMMARY=()
run_one() {
  local mpi=$1 dir=$BUILD_DIR
  if [ -z "$dir" ]; then
    if [ $SANITIZE = 1 ]; then dir=build-asan
    elif [ "$mpi" = mpich ]; then dir=build-mpich; else dir=build; fi
  fi
  case $dir in /*) ;; *) dir=$ROOT/$dir;; esac
  local t0=$SECONDS status=0
  echo "test.sh: ==== $mpi: build $dir"
  if [ $SANITIZE = 1 ]; then
    bash "$ROOT/scripts/setup.sh" --mpi "$mpi" --no-build
    local flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DMPI_C_COMPILER=/usr/bin/mpicc.$mpi -DMPI_CXX_COMPILER=/usr/bin/mpicxx.$mpi \
      -DMPIEXEC_EXECUTABLE=/usr/bin/mpirun.$mpi -DTESSEL_BUILD_BENCH=OFF \
      "-DTESSEL_TEST_RANKS=1;2;3;4" -DTESSEL_TEST_MAX_RANKS=4 "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags" \
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
      "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" || status=$?
    [ $status -ne 0 ] || cmake --build "$dir" --parallel "$(nproc)" || status=$?
  else
    bash "$ROOT/scripts/setup.sh" --mpi "$mpi" --build-dir "$dir" || status=$?
    # TESSEL_TEST_MPICH_MAX_RANKS=N (.ci/run: 4) caps the MPICH run's rank counts (a test
    # declared only above N keeps its smallest count); 0 or unset: every rank count.
    if [ $status -eq 0 ] && [ "$mpi" = mpich ]; then
      cmake "$dir" -DTESSEL_TEST_MAX_RANKS="${TESSEL_TEST_MPICH_MAX_RANKS:-0}" >/dev/null || status=$?
    fi
  fi
  local t1=$SECONDS
  local log=$dir/test.sh-ctest.log
  if [ $status -eq 0 ]; then
    echo "test.sh: ==== $mpi: ctest in $dir (load $(cut -d' ' -f1-3 /proc/loadavg))"
    # A subshell: the sanitizer and MPI variables stay with this MPI's run. set +e: the
    # status is ctest's (PIPESTATUS), not the pipeline's.
    set +e
    (
      if [ $SANITIZE = 1 ]; then
        # halt_on_error: the first finding fails the test; new_delete_type_mismatch off: Open
        # MPI's C++ bindings are not used, the check only fires inside MPI's own allocators.
        # fast_unwind_on_malloc=0: the MPI libraries have no frame pointers; without the slow
        # unwinder a leak's stack stops inside them and the suppressions cannot match it.
        # disable_dlclose: Open MPI's components stay loaded, so their frames keep their names.
        export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:new_delete_type_mismatch=0:fast_unwind_on_malloc=0}
        export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/scripts/sanitize/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0}
        export OMPI_MCA_mca_base_component_disable_dlclose=1
        export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
      fi
      # shellcheck source=mpi-env.sh
      source "$ROOT/scripts/mpi-env.sh"
      cd "$dir"
      ctest --output-on-failure "${CTEST_ARGS[@]}" </dev/null
    ) 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    echo "test.sh: ==== $mpi: ctest exit status $status"
  else
    echo "test.sh: ==== $mpi: build failed (status $status)"
  fi
  local result
  result=$(grep -E '^[0-9]+% tests passed' "$log" 2>/dev/null | tail -1 || true)
  SUMMARY+=("$(printf '%-8s %-44s build %3d s, ctest %4d s, load %s' "$mpi" \
    "${result:-no ctest result (status $status)}" $((t1 - t0)) $((SECONDS - t1)) \
    "$(cut -d' ' -f1-3 /proc/loadavg)")")
  RUN_STATUS=$status
}

status=0
for mpi in "${MPIS[@]}"; do
  run_one "$mpi"
  [ $status -ne 0 ] || status=$RUN_STATUS
done
if [ "$FUZZ_TOTAL" -gt 0 ]; then
  fuzz_status=0
  t0=$SECONDS
  bash "$ROOT/scripts/fuzz.sh" --total "$FUZZ_TOTAL" || fuzz_status=$?
  echo "test.sh: fuzz exit status $fuzz_status"
  SUMMARY+=("$(printf '%-8s %-44s %d s' fuzz "exit status $fuzz_status" $((SECONDS - t0)))")
  [ $status -ne 0 ] || status=$fuzz_status
fi
echo "test.sh: summary (per MPI: ctest result, wall times, load average at the end)"
for line in "${SUMMARY[@]}"; do echo "test.sh:   $line"; done
echo "test.sh: exit status $status"
exit $status

#!/bin/bash
# test.sh — set up (scripts/setup.sh), build and run the whole test suite with ctest, under
# Open MPI, MPICH or both.
#
#   scripts/test.sh [--mpi openmpi|mpich|both] [--build-dir DIR] [--sanitize] [--sanitize-tests REGEX]
#                   [--fuzz-total S] [--smpi smoke|all|none] [-- <extra ctest args>]
#
# --mpi: which MPI to build against and run under (default both; env TESSEL_TEST_MPI).
#   both: Open MPI in build/, then MPICH in build-mpich/ (each as scripts/setup.sh --mpi M),
#   every test under each, then one summary line per MPI (tests passed/failed, minutes, the
#   load average); the exit status is non-zero when either failed. --build-dir needs one MPI.
#   MPICH: tessel's waits poll and sleep instead of spinning (docs/mpich.md); the Python tests
#   are skipped there (Debian's mpi4py is built on Open MPI: docs/python.md).
#   none: no suite run (only what --sanitize-tests / --fuzz-total add).
#   TESSEL_TEST_MPICH_MAX_RANKS=N caps MPICH's rank counts at N (CI: 5; default: all).
# --sanitize: build into build-asan (default) with clang's AddressSanitizer +
# UndefinedBehaviorSanitizer (and libFuzzer's coverage: the fuzz targets share the build)
# (RelWithDebInfo, -fno-sanitize-recover: any UB finding fails the test) and run there, MPI
# tests at rank counts <= 4 only (TESSEL_TEST_MAX_RANKS=4: a test declared only above 4 keeps
# its smallest count; env TESSEL_SANITIZE_RANKS=N sets another cap, =one one count per test,
# the smallest >= 2: cmake's TESSEL_TEST_ONE_COUNT); LeakSanitizer suppressions for MPI's own allocations in
# scripts/sanitize/lsan.supp (each explained there). Under one MPI only (default openmpi).
# Exits with ctest's status. The MPI environment comes from scripts/mpi-env.sh.
# --sanitize-tests REGEX (or env TESSEL_SANITIZE_TESTS=REGEX; empty: none): after the MPI
# runs, also the tests whose ctest name matches REGEX under the sanitizers (as --sanitize, in
# build-asan, Open MPI), building only the targets those tests run (the library, the test
# binaries); its own summary line. .ci/run sets a subset of memory-heavy tests at 1-3 ranks.
# --fuzz-total S (or env TESSEL_FUZZ_TOTAL=S): afterwards also build and run the libFuzzer
# targets (scripts/fuzz.sh; in build-asan after --sanitize-tests, else build-fuzz) for S
# seconds in all, once; a crash fails the run.
# --smpi smoke|all|none (or env TESSEL_TEST_SMPI; default smoke with --mpi both, CI's run, and
# none with one MPI, a newcomer's run): after an Open MPI run, also
# build the SMPI build (scripts/setup.sh --smpi: build-smpi/, the library and the command
# compiled with SimGrid's smpicxx) and run its tests against that Open MPI build: smoke = the
# block-sparse multiply on 16 simulated nodes whose answers and ledger bytes must equal the
# Open MPI run's (ctest label smoke, ~20 s); all = also the 4-rank cases (spgemm cannon and
# rma25d, gemm, stencil alltoallv; gemm under --simulate-compute skip); its own summary line
# (docs/simulation.md).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MPI=
BUILD_DIR=
CTEST_ARGS=()
SANITIZE=0
FUZZ_TOTAL=${TESSEL_FUZZ_TOTAL:-0}
SANITIZE_TESTS=${TESSEL_SANITIZE_TESTS:-}
SMPI=${TESSEL_TEST_SMPI:-}

die() { echo "test.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --mpi) [ $# -ge 2 ] || die "--mpi needs a value"; MPI=$2; shift 2;;
    --mpi=*) MPI=${1#--mpi=}; shift;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; BUILD_DIR=$2; shift 2;;
    --build-dir=*) BUILD_DIR=${1#--build-dir=}; shift;;
    --sanitize) SANITIZE=1; shift;;
    --sanitize-tests) [ $# -ge 2 ] || die "--sanitize-tests needs a value"; SANITIZE_TESTS=$2; shift 2;;
    --sanitize-tests=*) SANITIZE_TESTS=${1#--sanitize-tests=}; shift;;
    --fuzz-total) [ $# -ge 2 ] || die "--fuzz-total needs a value"; FUZZ_TOTAL=$2; shift 2;;
    --fuzz-total=*) FUZZ_TOTAL=${1#--fuzz-total=}; shift;;
    --smpi) [ $# -ge 2 ] || die "--smpi needs a value"; SMPI=$2; shift 2;;
    --smpi=*) SMPI=${1#--smpi=}; shift;;
    --) shift; CTEST_ARGS=("$@"); break;;
    -h|--help) sed -n '2,37p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0;;
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
  none) MPIS=();;
  *) die "--mpi must be openmpi, mpich, both or none, not '$MPI'";;
esac
[ ${#MPIS[@]} -eq 1 ] || [ -z "$BUILD_DIR" ] || die "--build-dir needs one MPI (--mpi openmpi or mpich)"
[ "$MPI" != none ] || [ $SANITIZE = 0 ] || die "--sanitize needs an MPI"
[ ${#MPIS[@]} -eq 1 ] || [ $SANITIZE = 0 ] || die "--sanitize runs under one MPI (--mpi openmpi or mpich)"
[ $SANITIZE = 0 ] || [ -z "$SANITIZE_TESTS" ] || die "--sanitize-tests is for a normal run (with --sanitize: -- -R REGEX)"
[ -n "$SMPI" ] || { if [ "$MPI" = both ]; then SMPI=smoke; else SMPI=none; fi; }
case $SMPI in
  smoke|all|none) ;;
  *) die "--smpi / TESSEL_TEST_SMPI must be smoke, all or none, not '$SMPI'";;
esac
if ! [[ $FUZZ_TOTAL =~ ^[0-9]+$ ]]; then
  die "--fuzz-total / TESSEL_FUZZ_TOTAL must be a number of seconds, not '$FUZZ_TOTAL'"
fi

# configure_asan MPI DIR: the sanitizer build (ASan + UBSan, RelWithDebInfo, no benchmarks,
# MPI tests at rank counts <= 4, or at one count each: env TESSEL_SANITIZE_RANKS=N|one). With clang and TESSEL_FUZZ=ON: the same build holds the
# libFuzzer targets, so the fuzzing after it (scripts/fuzz.sh --build-dir DIR) compiles no
# second sanitized library (clang also compiles it ~3x faster than gcc with these flags:
# 143 s against 460 s on the 2-core CI machine, session 7).
configure_asan() {
  local mpi=$1 dir=$2 max=${TESSEL_SANITIZE_RANKS:-4} one=OFF
  if [ "$max" = one ]; then max=4 one=ON; fi
  case $max in ''|*[!0-9]*) die "TESSEL_SANITIZE_RANKS=$max: expected a rank count or 'one'";; esac
  bash "$ROOT/scripts/setup.sh" --mpi "$mpi" --no-build
  local flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSEL_FUZZ=ON \
    -DMPI_C_COMPILER=/usr/bin/mpicc.$mpi -DMPI_CXX_COMPILER=/usr/bin/mpicxx.$mpi \
    -DMPIEXEC_EXECUTABLE=/usr/bin/mpirun.$mpi -DTESSEL_BUILD_BENCH=OFF \
    "-DTESSEL_TEST_RANKS=1;2;3;4" -DTESSEL_TEST_MAX_RANKS="$max" -DTESSEL_TEST_ONE_COUNT="$one" \
    "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
    "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined"
}

# subset_targets DIR: the build outputs (ninja targets, relative to DIR) named on the command
# lines of the tests matching SANITIZE_TESTS; ninja builds each with what it links.
subset_targets() {
  local dir=$1
  ninja -C "$dir" -t targets all | cut -d: -f1 >"$dir/test.sh-targets.txt"
  ctest --test-dir "$dir" -N -R "$SANITIZE_TESTS" --show-only=json-v1 </dev/null | python3 -c '
import json, os, sys
dir, outputs = sys.argv[1], set(open(sys.argv[2]).read().split())
found = []
for test in json.load(sys.stdin).get("tests", []):
    for arg in test.get("command", []):
        for part in arg.split("="):
            rel = os.path.relpath(part, dir) if part.startswith(dir + "/") else None
            if rel in outputs and rel not in found:
                found.append(rel)
print(" ".join(found))' "$dir" "$dir/test.sh-targets.txt"
}

# Builds (setup.sh) and runs ctest for one MPI; sets RUN_STATUS and appends a summary line.
# SUBSET=1: the --sanitize-tests run (SANITIZE=1, only the matching tests and their targets).
SUMMARY=()
SUBSET=0
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
    configure_asan "$mpi" "$dir" || status=$?
    if [ $status -eq 0 ]; then
      if [ $SUBSET = 1 ]; then
        local targets
        targets=$(subset_targets "$dir") || status=$?
        echo "test.sh: ==== $mpi: building for the subset: ${targets:-everything}"
        # shellcheck disable=SC2086
        [ $status -ne 0 ] || cmake --build "$dir" --parallel "$(nproc)" ${targets:+--target $targets} || status=$?
      else
        cmake --build "$dir" --parallel "$(nproc)" || status=$?
      fi
    fi
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
      if [ $SUBSET = 1 ]; then
        ctest --output-on-failure -R "$SANITIZE_TESTS" </dev/null
      else
        ctest --output-on-failure "${CTEST_ARGS[@]}" </dev/null
      fi
    ) 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    echo "test.sh: ==== $mpi: ctest exit status $status"
  else
    echo "test.sh: ==== $mpi: build failed (status $status)"
  fi
  local result
  result=$(grep -E '^[0-9]+% tests passed' "$log" 2>/dev/null | tail -1 || true)
  local label=$mpi
  [ $SANITIZE = 0 ] || label=asan
  SUMMARY+=("$(printf '%-8s %-44s build %3d s, ctest %4d s, load %s' "$label" \
    "${result:-no ctest result (status $status)}" $((t1 - t0)) $((SECONDS - t1)) \
    "$(cut -d' ' -f1-3 /proc/loadavg)")")
  RUN_STATUS=$status
}

# run_smpi REF: the SMPI build and its tests (--smpi) against the Open MPI build REF; sets
# RUN_STATUS and appends a summary line.
run_smpi() {
  local ref=$1 dir=$ROOT/build-smpi t0=$SECONDS status=0
  echo "test.sh: ==== smpi: build $dir (reference: $ref)"
  bash "$ROOT/scripts/setup.sh" --smpi --build-dir "$dir" || status=$?
  local t1=$SECONDS log=$dir/test.sh-ctest.log
  if [ $status -eq 0 ]; then
    cmake "$dir" -DTESSEL_SMPI_REFERENCE_TESSEL="$ref/apps/tessel/tessel" >/dev/null || status=$?
  fi
  if [ $status -eq 0 ]; then
    local label=()
    [ "$SMPI" = all ] || label=(-L smoke)
    echo "test.sh: ==== smpi: ctest ${label[*]} in $dir (load $(cut -d' ' -f1-3 /proc/loadavg))"
    set +e
    (cd "$dir" && ctest --output-on-failure "${label[@]}" </dev/null) 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    # A skipped test (no reference, no smpirun) must not read as a pass.
    if [ $status -eq 0 ] && grep -q 'Not Run\|Skipped' "$log"; then
      echo "test.sh: ==== smpi: tests were skipped (see above)"
    fi
  else
    echo "test.sh: ==== smpi: build failed (status $status)"
  fi
  local result
  result=$(grep -E '^[0-9]+% tests passed' "$log" 2>/dev/null | tail -1 || true)
  if grep -q '\*\*\*Skipped\|Not Run' "$log" 2>/dev/null; then result="$result (skipped)"; fi
  SUMMARY+=("$(printf '%-8s %-44s build %3d s, ctest %4d s, load %s' smpi \
    "${result:-no ctest result (status $status)}" $((t1 - t0)) $((SECONDS - t1)) \
    "$(cut -d' ' -f1-3 /proc/loadavg)")")
  RUN_STATUS=$status
}

status=0
for mpi in ${MPIS[@]+"${MPIS[@]}"}; do
  run_one "$mpi"
  [ $status -ne 0 ] || status=$RUN_STATUS
done
# The SMPI stage needs the Open MPI build of this run as its reference.
if [ "$SMPI" != none ] && [ $SANITIZE = 0 ] && [[ " ${MPIS[*]-} " == *" openmpi "* ]]; then
  ref=${BUILD_DIR:-build}
  case $ref in /*) ;; *) ref=$ROOT/$ref;; esac
  run_smpi "$ref"
  [ $status -ne 0 ] || status=$RUN_STATUS
fi
FUZZ_DIR=build-fuzz
if [ -n "$SANITIZE_TESTS" ]; then
  SANITIZE=1 SUBSET=1 BUILD_DIR=
  run_one openmpi
  [ $status -ne 0 ] || status=$RUN_STATUS
  FUZZ_DIR=build-asan  # configure_asan's build has the fuzz targets too
fi
if [ "$FUZZ_TOTAL" -gt 0 ]; then
  fuzz_status=0
  t0=$SECONDS
  bash "$ROOT/scripts/fuzz.sh" --total "$FUZZ_TOTAL" --build-dir "$FUZZ_DIR" || fuzz_status=$?
  echo "test.sh: fuzz exit status $fuzz_status"
  SUMMARY+=("$(printf '%-8s %-44s %d s' fuzz "exit status $fuzz_status" $((SECONDS - t0)))")
  [ $status -ne 0 ] || status=$fuzz_status
fi
echo "test.sh: summary (per MPI: ctest result, wall times, load average at the end)"
for line in "${SUMMARY[@]}"; do echo "test.sh:   $line"; done
echo "test.sh: exit status $status"
exit $status

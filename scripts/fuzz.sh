#!/bin/bash
# fuzz.sh — build the libFuzzer targets (tests/fuzz) with clang and run each for a fixed time.
#
#   scripts/fuzz.sh [--time S | --total S] [--build-dir DIR] [--jobs N] [TARGET...]
#
#   --time       seconds per target (default 60; env TESSEL_FUZZ_TIME)
#   --total      seconds for all targets together, split evenly (at least 5 s each); CI uses it
#   --build-dir  separate build folder (default build-fuzz), configured with clang,
#                -DTESSEL_FUZZ=ON (ASan + UBSan + libFuzzer coverage), no tests or benchmarks;
#                an existing one must have TESSEL_FUZZ=ON (scripts/test.sh's build-asan has)
#   TARGET       run only these targets (default: every fuzz_* target built)
#
# Each target starts from its checked-in seed corpus tests/fuzz/corpus/<target>/ (read only);
# new inputs go to <build-dir>/corpus/<target>/, crashes to <build-dir>/artifacts/. Exits 1
# when any target crashed, leaked, hung (>10 s on one input) or threw anything but a
# tessel::Error; prints the executions of each target.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TIME=${TESSEL_FUZZ_TIME:-60}
BUILD_DIR=build-fuzz
JOBS=$(nproc)
TARGETS=()
TOTAL=0
die() { echo "fuzz.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --time) [ $# -ge 2 ] || die "--time needs a value"; TIME=$2; shift 2;;
    --time=*) TIME=${1#--time=}; shift;;
    --total) [ $# -ge 2 ] || die "--total needs a value"; TOTAL=$2; shift 2;;
    --total=*) TOTAL=${1#--total=}; shift;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; BUILD_DIR=$2; shift 2;;
    --build-dir=*) BUILD_DIR=${1#--build-dir=}; shift;;
    --jobs) [ $# -ge 2 ] || die "--jobs needs a value"; JOBS=$2; shift 2;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0;;
    -*) die "unknown option '$1' (see --help)";;
    *) TARGETS+=("$1"); shift;;
  esac
done
[[ $TIME =~ ^[0-9]+$ ]] && [ "$TIME" -ge 1 ] || die "--time must be a positive integer, not '$TIME'"
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR;; esac
command -v clang++ >/dev/null || die "clang++ not found (apt-get install clang libclang-rt-14-dev)"

# shellcheck source=mpi-env.sh
source "$ROOT/scripts/mpi-env.sh"
if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
  # An existing build is used as it is configured (scripts/test.sh passes its build-asan).
  grep -q '^TESSEL_FUZZ:BOOL=ON$' "$BUILD_DIR/CMakeCache.txt" ||
    die "$BUILD_DIR is not configured with -DTESSEL_FUZZ=ON (clang): use another --build-dir or remove it"
else
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTESSEL_FUZZ=ON -DTESSEL_BUILD_TESTS=OFF -DTESSEL_BUILD_BENCH=OFF \
    -DMPI_C_COMPILER=/usr/bin/mpicc.openmpi -DMPI_CXX_COMPILER=/usr/bin/mpicxx.openmpi \
    -DMPIEXEC_EXECUTABLE=/usr/bin/mpirun.openmpi
fi
cmake --build "$BUILD_DIR" --target tessel_fuzz --parallel "$JOBS"

if [ ${#TARGETS[@]} -eq 0 ]; then
  for f in "$BUILD_DIR"/tests/fuzz/fuzz_*; do [ -x "$f" ] && TARGETS+=("$(basename "$f")"); done
fi
[ ${#TARGETS[@]} -gt 0 ] || die "no fuzz targets built in $BUILD_DIR/tests/fuzz"
if [ "$TOTAL" != 0 ]; then
  [[ $TOTAL =~ ^[0-9]+$ ]] || die "--total must be a number of seconds, not '$TOTAL'"
  TIME=$(( TOTAL / ${#TARGETS[@]} ))
  [ "$TIME" -ge 5 ] || TIME=5
fi

# Leaks: libFuzzer checks every input (memory allocated while one input runs and not freed
# afterwards is a finding). The exit-time report is off: it would list what MPI_Init allocated
# for the life of the process (the block-sparse targets), in threads whose stacks LSan cannot
# attribute to a library for the suppressions.
status=0
summary=()
mkdir -p "$BUILD_DIR/artifacts"
for t in "${TARGETS[@]}"; do
  bin=$BUILD_DIR/tests/fuzz/$t
  [ -x "$bin" ] || die "no fuzz target $t in $BUILD_DIR/tests/fuzz"
  seeds=$ROOT/tests/fuzz/corpus/$t
  [ -d "$seeds" ] || die "no seed corpus $seeds"
  work=$BUILD_DIR/corpus/$t
  mkdir -p "$work"
  log=$BUILD_DIR/fuzz-$t.log
  echo "fuzz.sh: $t for ${TIME}s (seeds: $(ls "$seeds" | wc -l) files; log $log)"
  rc=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/tests/fuzz/lsan.supp:print_suppressions=0:leak_check_at_exit=0} \
    "$bin" -max_total_time="$TIME" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$BUILD_DIR/artifacts/$t-" \
      "$work" "$seeds" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(ls "$work" | wc -l)
  if [ $rc -ne 0 ]; then
    status=1
    summary+=("$t: FAILED (exit $rc) after ${runs:-?} executions; see $log")
    tail -40 "$log" >&2
  else
    summary+=("$t: ok, ${runs:-?} executions in ${TIME}s, $corpus new corpus files, no crash")
  fi
done
printf 'fuzz.sh: %s\n' "${summary[@]}"
exit $status

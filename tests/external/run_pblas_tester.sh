#!/usr/bin/env bash
# run_pblas_tester.sh — ScaLAPACK's own PBLAS Level-3 testers against tessel's p?gemm_.
#
# Builds PBLAS/TESTING's xspblas3tst, xdpblas3tst, xcpblas3tst, xzpblas3tst from a ScaLAPACK
# source tree (linked against Debian's ScaLAPACK/BLACS, as PBLAS's Makefile does: the tester's
# own PB_Cabort/PB_Cwarn compiled with -DTestingPblas), runs each on --ranks processes twice —
# plain, and with libtessel_scalapack.so preloaded — and prints, per run, the GEMM line of the
# tester's summary and the number of error-exit mismatches ("ERROR CODE RETURNED").
# Not run by CI (no ScaLAPACK source there).
#
#   bash tests/external/run_pblas_tester.sh --src /tmp/scalapack-src [--build build] [--ranks 6]
#        [--work /tmp/pblas-tester] [--dat FILE.dat (a PDBLAS3TST.dat variant, used for d; s/c/z too)]
#
# A source tree: git clone https://github.com/Reference-ScaLAPACK/scalapack, or any
# scalapack-2.x tarball. The testers call pdgemm_ through the PLT, so LD_PRELOAD reroutes them.
set -euo pipefail
SRC= BUILD=build RANKS=6 WORK=/tmp/pblas-tester DAT=
while [ $# -gt 0 ]; do
  case $1 in
    --src) SRC=$2; shift 2;;
    --build) BUILD=$2; shift 2;;
    --ranks) RANKS=$2; shift 2;;
    --work) WORK=$2; shift 2;;
    --dat) DAT=$2; shift 2;;
    -h|--help) sed -n 2,16p "$0"; exit 0;;
    *) echo "run_pblas_tester.sh: unknown option '$1'" >&2; exit 2;;
  esac
done
[ -n "$SRC" ] && [ -f "$SRC/PBLAS/TESTING/pdblas3tst.f" ] ||
  { echo "run_pblas_tester.sh: --src must be a ScaLAPACK source tree (PBLAS/TESTING/pdblas3tst.f not found under '$SRC')" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$(cd "$HERE" && realpath "$BUILD")/src/libtessel_scalapack.so
[ -f "$LIB" ] || { echo "run_pblas_tester.sh: $LIB not found (build the tessel_scalapack target)" >&2; exit 2; }
source "$HERE/scripts/mpi-env.sh"
SL=${TESSEL_SCALAPACK_LIB:-scalapack-openmpi}
T="$SRC/PBLAS/TESTING"
mkdir -p "$WORK"
FFLAGS="-O2 -std=legacy -w -fallow-argument-mismatch"
cc_eh() {  # PBLAS's error handler, as the tester compiles it
  for f in PB_Cwarn PB_Cabort; do
    mpicc -O2 -DTestingPblas -DAdd_ -I"$SRC/PBLAS/TESTING" -I"$SRC/PBLAS/SRC" -c "$SRC/PBLAS/SRC/PTOOLS/$f.c" -o "$WORK/$f.o"
  done
}
cc_eh
declare -A PRE=([s]=ps [d]=pd [c]=pc [z]=pz) LAM=([s]=slamch [d]=dlamch [c]=slamch [z]=dlamch)
status=0
for p in s d c z; do
  exe="$WORK/x${p}pblas3tst"
  mpif90 $FFLAGS -o "$exe" "$T/${PRE[$p]}blas3tst.f" "$T/${PRE[$p]}blastst.f" "$T/${LAM[$p]}.f" "$T/pblastst.f" \
    "$WORK/PB_Cwarn.o" "$WORK/PB_Cabort.o" -l$SL -llapack -lblas
  P=$(echo "$p" | tr a-z A-Z)
  dat="$T/P${P}BLAS3TST.dat"
  # --dat: a PDBLAS3TST.dat-format file, adapted to each precision (summary name, E0 for s/c,
  # complex ALPHA/BETA, the precision's routine list with only P?GEMM tested).
  if [ -n "$DAT" ]; then
    dat="$WORK/P${P}BLAS3TST.dat"
    { grep -v -E "^P[SDCZ](GEMM|SYMM|HEMM|SYRK|HERK|SYR2K|HER2K|TRMM|TRSM|GEADD|TRADD) " "$DAT" |
        sed -e "s/PDBLAS3TST/P${P}BLAS3TST/"
      case $p in s|d) list="SYMM SYRK SYR2K TRMM TRSM GEADD TRADD";;
                 *) list="SYMM HEMM SYRK HERK SYR2K HER2K TRMM TRSM GEADD TRADD";; esac
      printf 'P%sGEMM  T\tput F for no test in the same column\n' "$P"
      for r in $list; do printf '%-7s F\tput F for no test in the same column\n' "P$P$r"; done
    } > "$dat"
    case $p in
      s) sed -i 's/^\([0-9.]*\)D0/\1E0/' "$dat";;
      c) sed -i 's/^2.0D0/(2.0E0, -4.0E0)/; s/^3.0D0/(3.0E0, -2.0E0)/' "$dat";;
      z) sed -i 's/^2.0D0/(2.0D0, -4.0D0)/; s/^3.0D0/(3.0D0, -2.0D0)/' "$dat";;
    esac
  fi
  for mode in plain tessel; do
    d="$WORK/$p-$mode"; mkdir -p "$d"; cp "$dat" "$d/P${P}BLAS3TST.dat"
    # P?BLAS3TST.dat names the summary file; the tester writes to unit 6 (stdout) by default.
    pre=(); [ $mode = tessel ] && pre=(-x LD_PRELOAD="$LIB")
    (cd "$d" && timeout 1200 mpirun -np "$RANKS" "${pre[@]}" "$exe" > out.txt 2> err.txt) || true
    out="$d/out.txt"; [ -s "$d/P${P}BLAS3TST.SUMM" ] && out="$d/P${P}BLAS3TST.SUMM"
    # Summary line: "  |  PDGEMM   total passed failed skipped".
    gemm=$(awk -v r="P${P}GEMM" '$1 == "|" && $2 == r && NF == 6 {print $3, $4, $5, $6}' "$out" | tail -1)
    mism=$(grep -c "ERROR CODE RETURNED" "$out" || true)
    printf 'x%spblas3tst %-6s  GEMM total/passed/failed/skipped: %-16s error-exit mismatches: %s   (%s)\n' \
      "$p" "$mode" "${gemm:-none}" "$mism" "$out"
    failed=$(echo "$gemm" | awk '{print $3}')
    { [ -z "$gemm" ] || [ "${failed:-1}" != 0 ] || [ "$mism" != 0 ]; } && status=1
  done
done
exit $status

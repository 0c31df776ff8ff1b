#!/usr/bin/env bash
# run_cp2k_water.sh — Debian's CP2K as a client of libtessel_scalapack: the same small water
# energy (Kohn–Sham DFT with ScaLAPACK diagonalisation, so CP2K calls pdgemm_ itself and
# through ScaLAPACK's pdsyevd) with and without tessel preloaded; prints both total energies.
#
#   bash tests/external/run_cp2k_water.sh [--build build] [--ranks 2] [--molecules 8] [--xyz FILE] [--work DIR]
#
# Geometry: the first --molecules (default 8; 32 for all) water molecules of
# ../shared/data/cp2k/h2o-32-szv/water32.xyz in its 9.86 A box (SZV-MOLOPT basis, GTH-PBE,
# cutoff 200 Ry). Not run by CI.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=build RANKS=2 MOLS=8 WORK=/tmp/tessel-cp2k XYZ="$HERE/../shared/data/cp2k/h2o-32-szv/water32.xyz"
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2;;
    --ranks) RANKS=$2; shift 2;;
    --xyz) XYZ=$2; shift 2;;
    --molecules) MOLS=$2; shift 2;;
    --work) WORK=$2; shift 2;;
    -h|--help) sed -n 2,10p "$0"; exit 0;;
    *) echo "run_cp2k_water.sh: unknown option '$1'" >&2; exit 2;;
  esac
done
LIB=$(cd "$HERE" && realpath "$BUILD")/src/libtessel_scalapack.so
[ -f "$LIB" ] || { echo "run_cp2k_water.sh: $LIB not found (build the tessel_scalapack target)" >&2; exit 2; }
[ -f "$XYZ" ] || { echo "run_cp2k_water.sh: geometry '$XYZ' not found" >&2; exit 2; }
command -v cp2k.popt >/dev/null || { echo "run_cp2k_water.sh: cp2k.popt not found (apt-get install cp2k)" >&2; exit 2; }
source "$HERE/scripts/mpi-env.sh"
mkdir -p "$WORK"
# The first MOLS molecules (3 atoms each, O H H) of the XYZ file.
awk -v n=$((3 * MOLS)) 'NR == 1 {print (n < $1 ? n : $1); next} NR == 2 {print; next} NR - 2 <= n' "$XYZ" > "$WORK/water.xyz"
cat > "$WORK/water.inp" <<INP
&GLOBAL
  PROJECT water
  RUN_TYPE ENERGY
  PRINT_LEVEL LOW
  PREFERRED_DIAG_LIBRARY SCALAPACK
&END GLOBAL
&FORCE_EVAL
  METHOD QS
  &DFT
    BASIS_SET_FILE_NAME BASIS_MOLOPT
    POTENTIAL_FILE_NAME GTH_POTENTIALS
    &MGRID
      CUTOFF 200
      REL_CUTOFF 30
    &END MGRID
    &QS
      EPS_DEFAULT 1.0E-10
    &END QS
    &SCF
      SCF_GUESS ATOMIC
      EPS_SCF 1.0E-6
      MAX_SCF 30
      &DIAGONALIZATION
        ALGORITHM STANDARD
      &END DIAGONALIZATION
      &MIXING
        METHOD BROYDEN_MIXING
        ALPHA 0.4
      &END MIXING
    &END SCF
    &XC
      &XC_FUNCTIONAL PBE
      &END XC_FUNCTIONAL
    &END XC
  &END DFT
  &SUBSYS
    &CELL
      ABC 9.86 9.86 9.86
      PERIODIC XYZ
    &END CELL
    &TOPOLOGY
      COORD_FILE_NAME water.xyz
      COORD_FILE_FORMAT XYZ
    &END TOPOLOGY
    &KIND H
      BASIS_SET SZV-MOLOPT-SR-GTH
      POTENTIAL GTH-PBE-q1
    &END KIND
    &KIND O
      BASIS_SET SZV-MOLOPT-SR-GTH
      POTENTIAL GTH-PBE-q6
    &END KIND
  &END SUBSYS
&END FORCE_EVAL
INP
for mode in plain tessel; do
  pre=(); [ $mode = tessel ] && pre=(-x LD_PRELOAD="$LIB")
  start=$(date +%s)
  (cd "$WORK" && OMP_NUM_THREADS=1 mpirun -np "$RANKS" "${pre[@]}" cp2k.popt -i water.inp -o "water-$mode.out")
  e=$(awk '/ENERGY\| Total FORCE_EVAL/ {print $NF}' "$WORK/water-$mode.out" | tail -1)
  echo "cp2k $mode: total energy ${e:-none} Eh ($(( $(date +%s) - start )) s, $WORK/water-$mode.out)"
done
# Proof that the preloaded run bound CP2K's and ScaLAPACK's pdgemm_ to tessel (one rank, first binding).
(cd "$WORK" && OMP_NUM_THREADS=1 LD_BIND_NOW=1 LD_DEBUG=bindings LD_PRELOAD="$LIB" timeout 30 cp2k.popt --version 2>&1 |
  grep -m3 -E "normal symbol .pdgemm_'" || true)

#!/usr/bin/env bash
# Builds NTPoly 3.1.1 (tag ntpoly-v3.1.1) from its public source, outside the product (issue 9's
# peer), with Debian's gfortran, Open MPI (mpif90), OpenBLAS/LAPACK and cmake, -j2, and then the
# driver bench/ntpoly_density.f90 + bench/ntpoly_count.c against it.
#
#   bash bench/peers/build_ntpoly.sh [--prefix DIR] [--jobs N] [--git DIR] [--tag TAG] [--force]
#
# Source: a git repository holding the tag (default ntpoly-v3.1.1; its CMakeLists.txt still says
# VERSION 3.1.0): the local snapshot /work/.mirror/william-dawson+NTPoly/repo when it exists,
# otherwise a clone of https://github.com/william-dawson/NTPoly. Fortran only (FORTRAN_ONLY=ON:
# no SWIG/Python bindings, no C++ wrapper), shared library (the driver's call counter interposes
# NTPoly's MatrixMultiply and convergence monitor, which needs libNTPoly.so), OpenMP on as
# NTPoly's CMake does it (run with OMP_NUM_THREADS=1).
#
# Installs into PREFIX (default build/peers/ntpoly-3.1.1, gitignored): lib/libNTPoly.so,
# include/*.mod, bin/ntpoly_density. Idempotent: NTPoly is rebuilt only with --force (marker
# PREFIX/.done-ntpoly); the driver is recompiled when its sources are newer than the binary.
# Prints `NTPOLY_PREFIX=...` on its last line.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX=$ROOT/build/peers/ntpoly-3.1.1
JOBS=2
TAG=ntpoly-v3.1.1
GIT=/work/.mirror/william-dawson+NTPoly/repo
FORCE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --git) GIT=$2; shift 2 ;;
    --tag) TAG=$2; shift 2 ;;
    --force) FORCE=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "build_ntpoly.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
MARK=$PREFIX/.done-ntpoly

for pkg in libopenmpi-dev gfortran libopenblas-dev liblapack-dev cmake; do
  dpkg -s "$pkg" >/dev/null 2>&1 || { echo "build_ntpoly.sh: Debian package $pkg missing (apt-get install $pkg)" >&2; exit 1; }
done

if [ ! -f "$MARK" ] || [ $FORCE = 1 ]; then
  SRC=$PREFIX/_src
  if [ ! -f "$SRC/CMakeLists.txt" ] || [ $FORCE = 1 ]; then
    repo=$GIT
    if [ ! -d "$repo" ]; then
      repo=$PREFIX/_git/NTPoly
      [ -d "$repo" ] || git clone --bare --quiet https://github.com/william-dawson/NTPoly "$repo"
    fi
    git -C "$repo" rev-parse -q --verify "refs/tags/$TAG" >/dev/null ||
      { echo "build_ntpoly.sh: $repo has no tag $TAG" >&2; exit 1; }
    rm -rf "$SRC"; mkdir -p "$SRC"
    git -C "$repo" archive "$TAG" | tar -x -C "$SRC"
    echo "$TAG $(git -C "$repo" rev-parse "$TAG^{commit}")" > "$SRC/.source"
  fi
  BLD=$PREFIX/_build
  cmake -S "$SRC" -B "$BLD" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
        -DCMAKE_Fortran_COMPILER=mpif90 -DCMAKE_C_COMPILER=mpicc -DCMAKE_CXX_COMPILER=mpicxx \
        -DFORTRAN_ONLY=ON -DNOSWIG=ON -DCMAKE_INSTALL_PREFIX="$PREFIX" \
        -DCMAKE_INSTALL_RPATH="$PREFIX/lib" \
        -DBLAS_LIBRARIES=/usr/lib/$(gcc -print-multiarch)/libopenblas.so \
        -DLAPACK_LIBRARIES=/usr/lib/$(gcc -print-multiarch)/libopenblas.so \
        >"$PREFIX/_cmake.log" 2>&1 || { tail -30 "$PREFIX/_cmake.log"; exit 1; }
  cmake --build "$BLD" -j "$JOBS" --target NTPoly
  cmake --install "$BLD" >/dev/null
  mkdir -p "$PREFIX/include"
  cp "$BLD"/include/*.mod "$PREFIX/include/"
  echo "NTPoly $(cat "$SRC/.source"), $(mpif90 --version | head -1), $(date -u +%FT%TZ)" > "$MARK"
fi

LIBDIR=$PREFIX/lib
[ -f "$LIBDIR/libNTPoly.so" ] || LIBDIR=$PREFIX/lib64
EXE=$PREFIX/bin/ntpoly_density
if [ ! -x "$EXE" ] || [ "$ROOT/bench/ntpoly_density.f90" -nt "$EXE" ] || [ "$ROOT/bench/ntpoly_count.c" -nt "$EXE" ] ||
   [ "$MARK" -nt "$EXE" ]; then
  mkdir -p "$PREFIX/bin" "$PREFIX/_driver"
  mpicc -O2 -fPIC -c "$ROOT/bench/ntpoly_count.c" -o "$PREFIX/_driver/ntpoly_count.o"
  mpif90 -O2 -cpp -I"$PREFIX/include" -J"$PREFIX/_driver" "$ROOT/bench/ntpoly_density.f90" \
         "$PREFIX/_driver/ntpoly_count.o" -L"$LIBDIR" -lNTPoly -Wl,-rpath,"$LIBDIR" \
         -lopenblas -ldl -fopenmp -o "$EXE"
fi
echo "build_ntpoly.sh: installed $(cat "$MARK"); driver $EXE"
echo "NTPOLY_PREFIX=$PREFIX"

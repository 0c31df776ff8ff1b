#!/usr/bin/env bash
# Builds COSMA 2.8.4 with COSTA 2.3.2 from their public source, outside the product (issue 13's
# peer), against Debian's Open MPI, OpenBLAS and ScaLAPACK (libscalapack-openmpi), -j2.
#
#   bash bench/peers/build_cosma.sh [--prefix DIR] [--jobs N] [--cosma-git DIR] [--costa-git DIR]
#
# Source: a git repository holding the tags v2.8.4 (COSMA) and v2.3.2 (COSTA): by default the
# local snapshots /work/.mirror/eth-cscs+COSMA/repo and /work/.mirror/eth-cscs+COSTA/repo when
# they exist, otherwise a clone of https://github.com/eth-cscs/{COSMA,COSTA}. The tag is exported
# with `git archive` (COSMA's submodules are not needed: COSTA is built first and found by
# COSMA's FetchContent through find_package; its miniapps, tests and benchmarks are off, so
# cxxopts, gtest and Tiled-MM are not needed). Shared libraries, so that libcosma_pxgemm.so (the
# library that replaces pdgemm_ & co.) is built.
#
# Installs into PREFIX (default build/peers/cosma-2.8.4, gitignored): lib/libcosma.so,
# lib/libcosma_pxgemm.so, lib/libcosma_prefixed_pxgemm.so, lib/libcosta.so, include/, and the
# build tree in PREFIX/_build. Idempotent: a second run with the same prefix rebuilds nothing
# (PREFIX/.done-cosma-2.8.4 marks a finished install; --force redoes it). Prints the prefix on
# its last line as `COSMA_PREFIX=...`.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX=$ROOT/build/peers/cosma-2.8.4
JOBS=2
COSMA_TAG=v2.8.4
COSTA_TAG=v2.3.2
COSMA_GIT=/work/.mirror/eth-cscs+COSMA/repo
COSTA_GIT=/work/.mirror/eth-cscs+COSTA/repo
FORCE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --cosma-git) COSMA_GIT=$2; shift 2 ;;
    --costa-git) COSTA_GIT=$2; shift 2 ;;
    --force) FORCE=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "build_cosma.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
MARK=$PREFIX/.done-cosma-2.8.4
if [ -f "$MARK" ] && [ $FORCE = 0 ]; then
  echo "build_cosma.sh: already installed ($(cat "$MARK"))"
  echo "COSMA_PREFIX=$PREFIX"
  exit 0
fi

for pkg in libopenmpi-dev libopenblas-dev libscalapack-openmpi-dev cmake g++; do
  dpkg -s "$pkg" >/dev/null 2>&1 || { echo "build_cosma.sh: Debian package $pkg missing (apt-get install $pkg)" >&2; exit 1; }
done
SCALAPACK_LIB=/usr/lib/$(gcc -print-multiarch)/libscalapack-openmpi.so
[ -f "$SCALAPACK_LIB" ] || { echo "build_cosma.sh: $SCALAPACK_LIB not found" >&2; exit 1; }

# export a tag of a repository (local snapshot or a fresh clone) into $3
export_tag() {
  local repo=$1 tag=$2 dest=$3 url=$4
  if [ -f "$dest/CMakeLists.txt" ]; then return; fi
  if [ ! -d "$repo" ]; then
    repo=$PREFIX/_git/$(basename "$url")
    [ -d "$repo" ] || git clone --bare --quiet "$url" "$repo"
  fi
  git -C "$repo" rev-parse -q --verify "refs/tags/$tag" >/dev/null ||
    { echo "build_cosma.sh: $repo has no tag $tag (tags: $(git -C "$repo" tag | tail -5 | tr '\n' ' '))" >&2; exit 1; }
  mkdir -p "$dest"
  git -C "$repo" archive "$tag" | tar -x -C "$dest"
  echo "$tag $(git -C "$repo" rev-parse "$tag^{commit}")" > "$dest/.source"
}

SRC=$PREFIX/_src
BLD=$PREFIX/_build
export_tag "$COSTA_GIT" $COSTA_TAG "$SRC/costa" https://github.com/eth-cscs/COSTA
export_tag "$COSMA_GIT" $COSMA_TAG "$SRC/cosma" https://github.com/eth-cscs/COSMA

COMMON=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX="$PREFIX"
        -DCMAKE_CXX_COMPILER=mpicxx -DCMAKE_C_COMPILER=mpicc
        -DCMAKE_INSTALL_RPATH="$PREFIX/lib" -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON
        -DFETCHCONTENT_FULLY_DISCONNECTED=ON)

echo "== COSTA $COSTA_TAG"
cmake -S "$SRC/costa" -B "$BLD/costa" "${COMMON[@]}" -DCOSTA_SCALAPACK=CUSTOM \
      -DCOSTA_WITH_TESTS=OFF -DCOSTA_WITH_APPS=OFF -DCOSTA_WITH_BENCHMARKS=OFF \
      -DCOSTA_SCALAPACK_LINK_LIBRARIES="$SCALAPACK_LIB" >"$BLD.costa.cmake.log" 2>&1 ||
  { tail -30 "$BLD.costa.cmake.log"; exit 1; }
cmake --build "$BLD/costa" -j "$JOBS"
cmake --install "$BLD/costa" >/dev/null

echo "== COSMA $COSMA_TAG"
cmake -S "$SRC/cosma" -B "$BLD/cosma" "${COMMON[@]}" -DCMAKE_PREFIX_PATH="$PREFIX" \
      -DCOSMA_BLAS=OPENBLAS -DCOSMA_SCALAPACK=CUSTOM -DCOSMA_SCALAPACK_LINK_LIBRARIES="$SCALAPACK_LIB" \
      -DCOSTA_SCALAPACK_LINK_LIBRARIES="$SCALAPACK_LIB" \
      -DCOSMA_WITH_TESTS=OFF -DCOSMA_WITH_APPS=OFF -DCOSMA_WITH_BENCHMARKS=OFF \
      >"$BLD.cosma.cmake.log" 2>&1 || { tail -30 "$BLD.cosma.cmake.log"; exit 1; }
grep -q "costa_DIR:PATH=$PREFIX" "$BLD/cosma/CMakeCache.txt" ||
  { echo "build_cosma.sh: COSMA did not pick up COSTA from $PREFIX" >&2; grep costa_DIR "$BLD/cosma/CMakeCache.txt" >&2; exit 1; }
cmake --build "$BLD/cosma" -j "$JOBS"
cmake --install "$BLD/cosma" >/dev/null

echo "COSMA $(cat "$SRC/cosma/.source"), COSTA $(cat "$SRC/costa/.source"), ScaLAPACK $SCALAPACK_LIB, $(date -u +%FT%TZ)" > "$MARK"
echo "build_cosma.sh: installed $(cat "$MARK")"
echo "COSMA_PREFIX=$PREFIX"

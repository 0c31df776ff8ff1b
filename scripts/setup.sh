#!/bin/bash
# setup.sh — install tessel's system dependencies (Debian 12) and build it.
#
#   scripts/setup.sh [--mpi openmpi|mpich|smpi] [--smpi] [--build-dir DIR] [--no-build]
#
#   --mpi        MPI implementation to build against (default openmpi)
#   --smpi       = --mpi smpi: the simulated build, the library and the `tessel` command
#                compiled with SimGrid's smpicc/smpicxx (Debian libsimgrid-dev) into build-smpi/
#                to run under smpirun on a modelled cluster; no Python, no ScaLAPACK, no
#                benchmark drivers, no commcount (docs/simulation.md)
#   --build-dir  build folder (default: build for openmpi, build-mpich for mpich, build-smpi)
#   --no-build   only install the packages; do not configure or build
#
# Idempotent: packages already installed are not touched (apt-get update runs only when
# something is missing), an existing build folder is re-used and only rebuilt where needed.
# Besides tessel it builds the commcount traffic counter from ../shared/tools/commcount into
# <build-dir>/commcount/<mpi>/libcommcount.so (skipped with a message when that folder is absent).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MPI=openmpi
BUILD_DIR=
DO_BUILD=1

usage() { sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "setup.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --mpi) [ $# -ge 2 ] || die "--mpi needs a value (openmpi or mpich)"; MPI=$2; shift 2;;
    --mpi=*) MPI=${1#--mpi=}; shift;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; BUILD_DIR=$2; shift 2;;
    --build-dir=*) BUILD_DIR=${1#--build-dir=}; shift;;
    --smpi) MPI=smpi; shift;;
    --no-build) DO_BUILD=0; shift;;
    -h|--help) usage; exit 0;;
    *) die "unknown argument '$1' (see --help)";;
  esac
done
case $MPI in
  openmpi|mpich|smpi) ;;
  *) die "--mpi must be openmpi, mpich or smpi, not '$MPI'";;
esac
if [ -z "$BUILD_DIR" ]; then
  case $MPI in
    openmpi) BUILD_DIR=build;;
    *) BUILD_DIR=build-$MPI;;
  esac
fi
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR;; esac

# ---------------------------------------------------------------- packages
# gfortran: commcount's `make test` compiles its Fortran-caller check with mpifort.
# bc: used by ../shared/tools/netcluster (bench/netcluster_gemm.sh).
# clang, libclang-rt-14-dev: the libFuzzer targets (scripts/fuzz.sh, run by .ci/run).
# clang-format: the ctest check_format (scripts/check_format.sh, style in .clang-format).
# libelpa-dev: bench/elpa_density and its ctest peers.elpa_check (0.9 MB, about 20 s to install).
PACKAGES=(
  cmake ninja-build make gcc g++ gfortran
  libopenmpi-dev openmpi-bin libmpich-dev mpich
  libopenblas-dev liblapack-dev libscalapack-openmpi-dev libscalapack-mpich-dev
  libgtest-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  python3 python3-numpy python3-matplotlib
  iproute2 bc
  libxsmm-dev libmetis-dev libdbcsr-dev libelpa-dev zlib1g-dev
  python3-dev python3-pip python3-venv pybind11-dev python3-mpi4py python3-scipy python3-pytest
  clang libclang-rt-14-dev clang-format
)
# SimGrid's SMPI (smpicc, smpicxx, smpirun), only for the simulated build.
if [ "$MPI" = smpi ]; then PACKAGES+=(libsimgrid-dev); fi

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup.sh: all ${#PACKAGES[@]} packages already installed"
else
  echo "setup.sh: installing ${missing[*]}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "not root and no sudo: install as root: apt-get install ${missing[*]}"
    SUDO=(sudo -n)
  fi
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}" </dev/null
fi

# ---------------------------------------------------------------- pip (Python package)
# pip_optional MODULE SPEC WHY: pip installs SPEC for the Debian python3 (/usr/bin/python3, the
# one with python3-mpi4py) when MODULE cannot be imported yet; a failed install only warns
# (WHY says what then goes without). Not for the SMPI build (no Python package).
PYTHON=/usr/bin/python3
pip_optional() {
  local module=$1 spec=$2 why=$3
  if [ "$MPI" = smpi ]; then return 0; fi
  if "$PYTHON" -c "import $module" 2>/dev/null; then
    echo "setup.sh: $module already installed for $PYTHON"
    return 0
  fi
  echo "setup.sh: pip installing $spec for $PYTHON"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo -n); fi
  "${sudo[@]}" "$PYTHON" -m pip install -q --break-system-packages --no-input "$spec" </dev/null ||
    echo "setup.sh: warning: could not pip install $spec ($why)" >&2
}
# scikit-build-core builds the `tessel` Python package for `pip install .` (pyproject.toml);
# Debian 12 has no package of it. The CMake build below does not need it: it builds the module
# directly (python/CMakeLists.txt).
pip_optional scikit_build_core 'scikit-build-core>=0.10' "only 'pip install .' needs it"
# PySCF (PyPI wheel, ~30 s) for tessel.pyscf and its tests (python/tests/test_pyscf.py, ctest
# python.pyscf.npN: skipped without it).
pip_optional pyscf 'pyscf>=2.14' "the python.pyscf tests will be skipped"

if [ $DO_BUILD = 0 ]; then
  echo "setup.sh: --no-build: packages ready, nothing configured or built"
  exit 0
fi

# ---------------------------------------------------------------- build
# shellcheck source=mpi-env.sh
source "$ROOT/scripts/mpi-env.sh"

# The SMPI build: the library and the command only, compiled by SimGrid's wrappers
# (cmake/TesselSmpi.cmake); its tests (tests/smpi) need no target of their own.
if [ "$MPI" = smpi ]; then
  for t in /usr/bin/smpicc /usr/bin/smpicxx /usr/bin/smpirun; do [ -x "$t" ] || die "$t not found"; done
  cache=$BUILD_DIR/CMakeCache.txt
  if [ -f "$cache" ] && ! grep -q '^TESSEL_SMPI:BOOL=ON' "$cache"; then
    die "$BUILD_DIR is not an SMPI build (TESSEL_SMPI is not ON in its cache): use another --build-dir or remove it"
  fi
  echo "setup.sh: configuring $BUILD_DIR for SMPI (smpicxx)"
  CC=/usr/bin/smpicc CXX=/usr/bin/smpicxx cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DTESSEL_SMPI=ON
  echo "setup.sh: building $BUILD_DIR (the library and the tessel command)"
  cmake --build "$BUILD_DIR" --parallel "$(nproc)" --target tessel_cli
  echo "setup.sh: done (smpi, $BUILD_DIR: run it with smpirun, docs/simulation.md)"
  exit 0
fi

MPICC=/usr/bin/mpicc.$MPI
MPICXX=/usr/bin/mpicxx.$MPI
MPIEXEC=/usr/bin/mpirun.$MPI
for t in "$MPICC" "$MPICXX" "$MPIEXEC"; do [ -x "$t" ] || die "$t not found"; done

# A build folder configured for another MPI or generator cannot be switched in place. One
# configured for the same MPI (e.g. as mpicxx.openmpi or mpicxx) is re-used as it is.
resolve() { local p; p=$(command -v "$1" 2>/dev/null) && readlink -f "$p" || echo "$1"; }
cache=$BUILD_DIR/CMakeCache.txt
mpi_args=(-DMPI_C_COMPILER="$MPICC" -DMPI_CXX_COMPILER="$MPICXX" -DMPIEXEC_EXECUTABLE="$MPIEXEC")
if [ -f "$cache" ]; then
  old_cxx=$(sed -n 's/^MPI_CXX_COMPILER:[A-Z]*=//p' "$cache")
  old_exec=$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$cache")
  old_gen=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$cache")
  if [ -n "$old_gen" ] && [ "$old_gen" != Ninja ]; then
    die "$BUILD_DIR uses the '$old_gen' generator, not Ninja: use another --build-dir or remove it"
  fi
  if [ -n "$old_cxx" ]; then
    if [ "$(resolve "$old_cxx")" != "$(resolve "$MPICXX")" ] ||
       { [ -n "$old_exec" ] && [ "$(resolve "$old_exec")" != "$(resolve "$MPIEXEC")" ]; }; then
      die "$BUILD_DIR is configured with $old_cxx / ${old_exec:-?}, not $MPICXX / $MPIEXEC: use another --build-dir or remove it"
    fi
    mpi_args=()   # same MPI: keep the cache as it is
  fi
fi

echo "setup.sh: configuring $BUILD_DIR for $MPI"
# The Python package (python/) is built for the Debian python3 that has mpi4py and NumPy.
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja "${mpi_args[@]}" -DPython3_EXECUTABLE="$PYTHON"
echo "setup.sh: building $BUILD_DIR"
cmake --build "$BUILD_DIR" --parallel "$(nproc)"

COMMCOUNT_SRC=$ROOT/../shared/tools/commcount
if [ -d "$COMMCOUNT_SRC" ]; then
  echo "setup.sh: building commcount ($MPI) into $BUILD_DIR/commcount"
  make -s -C "$COMMCOUNT_SRC" "$MPI" OUT="$BUILD_DIR/commcount"
  echo "setup.sh: commcount at $BUILD_DIR/commcount/$MPI/libcommcount.so"
else
  echo "setup.sh: $COMMCOUNT_SRC not found: commcount not built (benchmarks run without traffic counts)"
fi
echo "setup.sh: done ($MPI, $BUILD_DIR)"

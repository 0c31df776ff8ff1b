# The SMPI build (option TESSEL_SMPI; scripts/setup.sh --smpi; docs/simulation.md): tessel and
# its command compiled with SimGrid's smpicc/smpicxx and run by smpirun on a simulated
# cluster. The compiler wrappers bring mpi.h and libsimgrid, so MPI::MPI_C / MPI::MPI_CXX are
# empty targets here. Everything that needs ScaLAPACK (libtessel_scalapack, tessel_pgemm, the
# benchmark drivers) and the Python package are left out; the library is compiled with
# TESSEL_SMPI defined, which makes the strategies that need an MPI call SMPI lacks fail with
# a tessel::Error naming that call (docs/simulation.md lists them).
get_filename_component(_tessel_cxx_name "${CMAKE_CXX_COMPILER}" NAME)
if(NOT _tessel_cxx_name MATCHES "^smpicxx")
  message(FATAL_ERROR "TESSEL_SMPI=ON needs the SMPI compilers: configure a fresh build folder "
                      "with CC=smpicc CXX=smpicxx (scripts/setup.sh --smpi), not ${CMAKE_CXX_COMPILER}")
endif()
find_program(MPIEXEC_EXECUTABLE NAMES smpirun REQUIRED)
set(MPIEXEC_NUMPROC_FLAG -np)
add_library(MPI::MPI_C INTERFACE IMPORTED)
add_library(MPI::MPI_CXX INTERFACE IMPORTED)
set(TESSEL_MPI_FLAVOUR smpi)
set(TESSEL_BUILD_BENCH OFF CACHE BOOL "Build the benchmark drivers (need ScaLAPACK)" FORCE)
set(TESSEL_BUILD_PYTHON OFF CACHE STRING "Build the Python package: AUTO, ON or OFF" FORCE)
# smpi_helpers.h (force-included by smpicxx) would turn malloc/free/exit into macros that the
# C++ standard library's std::free / std::exit cannot take; tessel allocates with new/vector.
add_compile_definitions(SMPI_NO_OVERRIDE_MALLOC)
# It also makes exit() and getpid macros, which break CLI11's App::exit: undone by a second
# forced include (processed after smpicxx's own).
add_compile_options(-include ${PROJECT_SOURCE_DIR}/cmake/smpi_undef.h)
message(STATUS "tessel: SMPI build (${CMAKE_CXX_COMPILER}, ${MPIEXEC_EXECUTABLE}): no ScaLAPACK, no Python, no benchmarks")

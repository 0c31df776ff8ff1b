# tessel_add_mpi_test(NAME <name> TARGET <exe> RANKS <n...> [TIMEOUT <s>] [ARGS <args...>])
#
# Registers one ctest per rank count, named <name>.np<n>, launched by MPIEXEC with
# oversubscription, the container's MPI environment (scripts/mpi-env.sh), a timeout and the
# labels "mpi" and "np<n>"; TESSEL_SHARED_DATA is set to TESSEL_DATA_DIR (the optional folder
# of real test matrices, CMakeLists.txt; docs/architecture.md).
#
# TESSEL_TEST_MAX_RANKS (cache, default 0 = no cap): a reduced mode for slow builds (the
# sanitizer run of scripts/test.sh --sanitize sets 4): rank counts above it are not
# registered; a test whose counts are all above it keeps its smallest one, so no test vanishes.
set(TESSEL_TEST_MAX_RANKS 0 CACHE STRING "Register MPI tests only at rank counts <= this (0: all)")
# TESSEL_TEST_ONE_COUNT (cache, default OFF): after the cap, keep ONE rank count per test, the
# smallest >= 2 (more than one rank exercises the collective paths; 1 when that is all there
# is). For the slowest build, the sanitizer run of CI (scripts/test.sh, TESSEL_SANITIZE_RANKS).
option(TESSEL_TEST_ONE_COUNT "Register each MPI test at one rank count only (the smallest >= 2)" OFF)
# tessel_cap_ranks(<out-var> <n...>): the rank counts <= TESSEL_TEST_MAX_RANKS (all when it
# is 0; the smallest when none is). Every MPI test registration goes through it.
function(tessel_cap_ranks out)
  set(_kept "")
  set(_smallest "")
  foreach(np IN LISTS ARGN)
    if(TESSEL_TEST_MAX_RANKS LESS_EQUAL 0 OR NOT np GREATER TESSEL_TEST_MAX_RANKS)
      list(APPEND _kept ${np})
    endif()
    if(_smallest STREQUAL "" OR np LESS _smallest)
      set(_smallest ${np})
    endif()
  endforeach()
  if(NOT _kept)
    set(_kept ${_smallest})
  endif()
  if(TESSEL_TEST_ONE_COUNT)
    set(_one "")
    foreach(np IN LISTS _kept)
      if(np GREATER_EQUAL 2 AND (_one STREQUAL "" OR np LESS _one))
        set(_one ${np})
      endif()
    endforeach()
    if(_one STREQUAL "")
      list(GET _kept 0 _one)
    endif()
    set(_kept ${_one})
  endif()
  set(${out} ${_kept} PARENT_SCOPE)
endfunction()

function(tessel_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;TARGET;TIMEOUT" "RANKS;ARGS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  tessel_cap_ranks(T_RANKS ${T_RANKS})
  set(_extra "")
  if(TESSEL_MPI_FLAVOUR STREQUAL "openmpi")
    set(_extra --oversubscribe)
  endif()
  foreach(np IN LISTS T_RANKS)
    add_test(NAME ${T_NAME}.np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${_extra}
              ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${T_TARGET}> ${MPIEXEC_POSTFLAGS} ${T_ARGS})
    set_tests_properties(${T_NAME}.np${np} PROPERTIES
      TIMEOUT ${T_TIMEOUT} PROCESSORS 2 LABELS "mpi;np${np}"
      ENVIRONMENT "${TESSEL_MPI_ENV};TESSEL_SHARED_DATA=${TESSEL_DATA_DIR}")
  endforeach()
endfunction()

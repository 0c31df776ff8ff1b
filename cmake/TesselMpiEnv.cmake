# Reads scripts/mpi-env.sh (the one place the container's MPI knobs live) into
# TESSEL_MPI_ENV, a list of KEY=VALUE for the ENVIRONMENT property of tests.
file(STRINGS ${PROJECT_SOURCE_DIR}/scripts/mpi-env.sh _tessel_env_lines REGEX "^export [A-Za-z_0-9]+=")
set(TESSEL_MPI_ENV "")
foreach(_line IN LISTS _tessel_env_lines)
  string(REGEX REPLACE "^export " "" _kv "${_line}")
  list(APPEND TESSEL_MPI_ENV "${_kv}")
endforeach()

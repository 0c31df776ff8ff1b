# The MPI environment these containers need, in one place (see docs/mpi-environment.md).
# Sourced by every script and read by CMake for the tests; one `export KEY=VALUE` per line.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mpi_yield_when_idle=1
export OPENBLAS_NUM_THREADS=1

// The compiled part of the `tessel` Python package (tessel._tessel). The package's
// __init__.py re-exports it; see docs/python.md.
#include "bindings.hpp"
#include "tessel/version.hpp"

PYBIND11_MODULE(_tessel, m) {
  using namespace tessel::python;
  m.doc() = "tessel: communication-optimal distributed kernels over mpi4py communicators";
  import_mpi4py_api();
  register_errors(m);
  bind_context(m);
  bind_dense(m);
  bind_solvers(m);
  bind_sparse(m);
  bind_testing(m);
  m.attr("__version__") = TESSEL_VERSION;
  m.attr("mpi_flavour") = TESSEL_MPI_FLAVOUR;
}

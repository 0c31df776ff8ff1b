// ELPA's standard symmetric eigensolver for the diagonalization route (diag_eigen.hpp):
// elpa_init -> elpa_allocate -> the grid's parameters -> elpa_setup -> the solver ->
// elpa_eigenvectors -> elpa_deallocate -> elpa_uninit, per call (no state kept between
// calls). Compiled only where the build found ELPA (TESSEL_ELPA_BUILT: Open MPI builds, Debian
// libelpa-dev 2022.11). The route does its own Cholesky (pdpotrf: a non-positive-definite S
// is an error on every rank before ELPA runs; ELPA 2022.11's own Cholesky hangs on that).
#include "diag_eigen.hpp"
#include "elpa_api.hpp"

#include <string>

#include "tessel/solvers/density_diag.hpp"

namespace tessel::solvers {

bool diag_elpa_built() { return true; }

namespace diag {

std::string elpa_eigenvectors(const CyclicGrid& g, double* a, double* w, double* z,
                              bool two_stage) {
  if (elpa_init(elpa::kApiVersion) != 0)
    return "ELPA: elpa_init(" + std::to_string(elpa::kApiVersion) +
           ") failed: API version not supported";
  int err = 0;
  elpa_t h = elpa_allocate(&err);
  auto set = [&](const char* key, int value) {
    if (err == 0) elpa_set_integer(h, key, value, &err);
  };
  set("na", g.n);
  set("nev", g.n);
  set("local_nrows", g.local_rows);
  set("local_ncols", g.local_cols);
  set("nblk", g.nb);
  set("mpi_comm_parent", static_cast<int>(MPI_Comm_c2f(g.comm)));
  set("process_row", g.myrow);
  set("process_col", g.mycol);
  set("blacs_context", g.ctxt);
  if (err == 0) err = elpa_setup(h);
  set("solver", two_stage ? elpa::kSolver2Stage : elpa::kSolver1Stage);
  if (err == 0) elpa_eigenvectors_a_h_a_d(h, a, w, z, &err);
  std::string message = err == 0 ? "" : std::string("ELPA: ") + elpa_strerr(err);
  int ignored = 0;
  if (h != nullptr) elpa_deallocate(h, &ignored);
  elpa_uninit(&ignored);
  return message;
}

}  // namespace diag
}  // namespace tessel::solvers

// ELPA's standard symmetric eigensolver for the diagonalization route (diag_eigen.hpp):
// elpa_init -> elpa_allocate -> the grid's parameters -> elpa_setup -> the solver ->
// elpa_eigenvectors -> elpa_deallocate -> elpa_uninit, per call (no state kept between
// calls). Compiled only where the build found ELPA (TESSEL_ELPA_BUILT: Open MPI builds, Debian
// libelpa-dev 2022.11). The route does its own Cholesky (pdpotrf: a non-positive-definite S
// is an error on every rank before ELPA runs; ELPA 2022.11's own Cholesky hangs on that).
#include "diag_eigen.hpp"

#include <string>

#include "tessel/solvers/density_diag.hpp"

// The ELPA C API, declared here: <elpa/elpa.h> selects the typed entry points with C11
// _Generic, which C++ does not have.
extern "C" {
struct elpa_struct;
typedef struct elpa_struct* elpa_t;
int elpa_init(int api_version);
elpa_t elpa_allocate(int* error);
void elpa_deallocate(elpa_t handle, int* error);
void elpa_uninit(int* error);
void elpa_set_integer(elpa_t handle, const char* name, int value, int* error);
int elpa_setup(elpa_t handle);
void elpa_eigenvectors_a_h_a_d(elpa_t handle, double* a, double* ev, double* q, int* error);
const char* elpa_strerr(int elpa_error);
}

namespace tessel::solvers {

bool diag_elpa_built() { return true; }

namespace diag {

namespace {
constexpr int kElpaApi = 20221109;  // ELPA_API_VERSION of 2022.11.001, the oldest we accept
constexpr int kElpaSolver1Stage = 1, kElpaSolver2Stage = 2;  // ELPA_SOLVER_1STAGE / _2STAGE
}  // namespace

std::string elpa_eigenvectors(const CyclicGrid& g, double* a, double* w, double* z,
                              bool two_stage) {
  if (elpa_init(kElpaApi) != 0)
    return "ELPA: elpa_init(" + std::to_string(kElpaApi) + ") failed: API version not supported";
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
  set("solver", two_stage ? kElpaSolver2Stage : kElpaSolver1Stage);
  if (err == 0) elpa_eigenvectors_a_h_a_d(h, a, w, z, &err);
  std::string message = err == 0 ? "" : std::string("ELPA: ") + elpa_strerr(err);
  int ignored = 0;
  if (h != nullptr) elpa_deallocate(h, &ignored);
  elpa_uninit(&ignored);
  return message;
}

}  // namespace diag
}  // namespace tessel::solvers

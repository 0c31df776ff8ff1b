// The diagonalization route without ELPA (MPICH builds, or TESSEL_ELPA=OFF / libelpa not
// found): diag_elpa_built() is false and density_diag refuses DiagSolver Elpa1 / Elpa2 before
// calling this.
#include "diag_eigen.hpp"
#include "tessel/solvers/density_diag.hpp"

namespace tessel::solvers {

bool diag_elpa_built() { return false; }

namespace diag {
std::string elpa_eigenvectors(const CyclicGrid&, double*, double*, double*, bool) {
  return "ELPA is not built in this build";
}
}  // namespace diag

}  // namespace tessel::solvers

// The diagonalization route where the build has no ScaLAPACK (the SMPI build, or
// TESSEL_DIAGONALIZE=OFF): density_diag throws on every rank, auto never chooses it.
#include "tessel/core/error.hpp"
#include "tessel/solvers/density_diag.hpp"

namespace tessel::solvers {

bool diagonalization_built() { return false; }
bool diag_elpa_built() { return false; }

template <class M>
DensityResult<M> density_diag(Algebra<M>& alg, const M&, const M&, std::int64_t,
                              const DensityOptions&) {
  alg.ctx().agree([] {
    throw InputError(
        "density: method diag: diagonalization not built (this build has no ScaLAPACK; "
        "expected sign, trs4, canonical, trs2, mcweeny or auto)");
  });
  return {};
}

template DensityResult<dense::DistMatrix<double>> density_diag(DenseAlgebra&,
                                                               const dense::DistMatrix<double>&,
                                                               const dense::DistMatrix<double>&,
                                                               std::int64_t, const DensityOptions&);
template DensityResult<sparse::BlockSparseMatrix<double>> density_diag(
    SparseAlgebra&, const sparse::BlockSparseMatrix<double>&,
    const sparse::BlockSparseMatrix<double>&, std::int64_t, const DensityOptions&);

}  // namespace tessel::solvers

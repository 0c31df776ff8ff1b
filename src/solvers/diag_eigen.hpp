#pragma once
// The standard symmetric eigensolvers of the diagonalization route (density_diag.cpp): all n
// eigenpairs of the Cholesky-reduced matrix, block-cyclic on a BLACS grid. ScaLAPACK's
// pdsyevd lives in density_diag.cpp; ELPA's 1- and 2-stage solvers in diag_elpa.cpp (built
// only with TESSEL_ELPA_BUILT; diag_elpa_none.cpp elsewhere). Internal to src/solvers.
#include <mpi.h>

#include <string>

namespace tessel::solvers::diag {

/// One rank's view of a block-cyclic n x n matrix on a row-major BLACS grid (rank = myrow *
/// npcol + mycol, as density_diag's BlacsGrid).
struct CyclicGrid {
  MPI_Comm comm = MPI_COMM_NULL;  ///< the grid's ranks, in grid order
  int ctxt = -1, myrow = 0, mycol = 0;
  int n = 0, nb = 0, local_rows = 0, local_cols = 0;
};

/// Collective over g.comm. ELPA (two_stage: ELPA_SOLVER_2STAGE, else 1STAGE) on a (overwritten):
/// w the n eigenvalues ascending, z the eigenvectors in a's layout. Returns "" or ELPA's error
/// message (on the ranks that saw it; the caller agrees). Only where diag_elpa_built().
std::string elpa_eigenvectors(const CyclicGrid& g, double* a, double* w, double* z, bool two_stage);

}  // namespace tessel::solvers::diag

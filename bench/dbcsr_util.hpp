#pragma once
// A tessel BlockSparseMatrix copied into a DBCSR 2.5 matrix (C API) with the same blocks and
// the same owners: DBCSR's block (r, c) lives on rank prow * PC + pcol of the non-reordered
// MPI_Cart_create {PR, PC} `cart`, tessel's rank map. Shared by the bench/dbcsr_* drivers.
#include <vector>

#include "dbcsr.h"
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::bench {

/// Collective over `cart`. Creates `dist` (release it after the matrix) and the matrix.
inline dbcsr_matrix to_dbcsr(MPI_Comm cart, const sparse::BlockSparseMatrix<double>& m,
                             const char* name, dbcsr_distribution& dist) {
  const auto& d = m.distribution();
  std::vector<int> rd = d.row_dist(), cd = d.col_dist();
  std::vector<int> rs = d.row_blocks().sizes(), cs = d.col_blocks().sizes();
  c_dbcsr_distribution_new(&dist, cart, rd.data(), static_cast<int>(rd.size()), cd.data(),
                           static_cast<int>(cd.size()));
  dbcsr_matrix x = nullptr;
  c_dbcsr_create_new(&x, name, dist, dbcsr_type_no_symmetry, rs.data(), static_cast<int>(rs.size()),
                     cs.data(), static_cast<int>(cs.size()), nullptr, &dbcsr_type_real_8, nullptr,
                     nullptr, nullptr, nullptr);
  bool sum = false;
  double scale = 1.0;
  m.for_each_block([&](int r, int c, const double* v, int nr, int nc) {
    c_dbcsr_put_block2d_d(x, r, c, v, nr, nc, &sum, &scale);
  });
  c_dbcsr_finalize(x);
  return x;
}

}  // namespace tessel::bench

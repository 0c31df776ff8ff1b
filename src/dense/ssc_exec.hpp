#pragma once
// The executors of SymmSquareCube (one algorithm per file). Private to src/dense.
#include <cstdint>
#include <vector>

#include "tessel/comm/nonblocking.hpp"

namespace tessel::dense::ssc {

/// What the active rank P(i, j, k) needs: its coordinates, the block sizes and the
/// communicators (N_DUP duplicates each of row, col, grd and global).
struct Exec {
  int p = 1, i = 0, j = 0, k = 0;
  std::vector<std::int64_t> r;  // r[b] = rows (= columns) of block b
  int n_dup = 1;
  bool cube = true;  ///< false: "square only", D^2 alone (d3 is not touched)
  const comm::DupSet *row = nullptr, *col = nullptr, *grd = nullptr, *glob = nullptr;
};

/// Seed Algorithm 4 (blocking collectives). d, d2, d3: D_ij, D^2_ij, D^3_ij on plane 0
/// (r_i x r_j, column-major, ld r_i); unused elsewhere.
void alg4(const Exec& e, const double* d, double* d2, double* d3);
/// Seed Algorithm 5 (N_DUP pipelined nonblocking collectives), same contract.
void alg5(const Exec& e, const double* d, double* d2, double* d3);

}  // namespace tessel::dense::ssc

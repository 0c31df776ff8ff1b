#pragma once
// The executors of SymmSquareCube (one algorithm per file). Private to src/dense.
#include <cstdint>
#include <vector>

#include "tessel/comm/nonblocking.hpp"
#include "tessel/core/simulate.hpp"

namespace tessel::dense::ssc {

/// What the active rank P(i, j, k) needs: its coordinates, the block sizes and the
/// communicators (N_DUP duplicates each of row, col, grd and global). The 3D algorithms run
/// on a p x p x p mesh (c = p); the 2.5D one on a q x q x c mesh (q = p).
struct Exec {
  int p = 1, c = 1, i = 0, j = 0, k = 0;
  std::vector<std::int64_t> r;  // r[b] = rows (= columns) of block b
  int n_dup = 1;
  bool cube = true;  ///< false: "square only", D^2 alone (d3 is not touched)
  comm::CollImpl coll = comm::CollImpl::Mpi;  ///< the collectives: MPI's or tessel's p2p chains
  bool compute = true;  ///< false: benchmarks only — skip the local multiplies (results invalid)
  /// The Context's compute mode: Skip (SMPI build) charges the products to the simulated
  /// clock and makes the block buffers shared simulated memory (core/simulate.hpp).
  ComputeMode mode = ComputeMode::Run;
  const comm::DupSet *row = nullptr, *col = nullptr, *grd = nullptr, *glob = nullptr;
};

/// C = op(A) B of one block pair, unless e.compute is false (communication-only benchmarks);
/// under e.mode == ComputeMode::Skip only charged to the simulated clock.
void local_multiply(const Exec& e, char ta, std::int64_t m, std::int64_t n, std::int64_t k,
                    const double* a, std::int64_t lda, const double* b, std::int64_t ldb,
                    double beta, double* c, std::int64_t ldc);

/// Seed Algorithm 3 (GTFock's original: blocking collectives, D^2 back to plane 0 and
/// transposed by point-to-point), same contract as alg4.
void alg3(const Exec& e, const double* d, double* d2, double* d3);
/// Seed Algorithm 4 (blocking collectives). d, d2, d3: D_ij, D^2_ij, D^3_ij on plane 0
/// (r_i x r_j, column-major, ld r_i); unused elsewhere.
void alg4(const Exec& e, const double* d, double* d2, double* d3);
/// Seed Algorithm 5 (N_DUP pipelined nonblocking collectives), same contract.
void alg5(const Exec& e, const double* d, double* d2, double* d3);
/// Seed Algorithm 6 (2.5D: Cannon steps split over c layers, grd collectives in N_DUP
/// parts) on the q x q x c mesh (q = e.p, c = e.c); d, d2, d3 are the blocks of layer 0.
void alg25d(const Exec& e, const double* d, double* d2, double* d3);

}  // namespace tessel::dense::ssc

#pragma once
// Private: the dense block operations of the stencil eigensolvers (CheFSI, LOBPCG) on vectors
// distributed by points: n local rows x k columns, item-major (= k x n column-major). Each
// Gram matrix is one local GEMM + one allreduce; the k x k problems are solved by LAPACK on
// every rank (identical input, identical result).
#include <cstdint>
#include <vector>

#include "tessel/core/context.hpp"

namespace tessel::solvers::block {

/// Pure. Index of entry (row i, column j) of an item-major block of k columns, in 64 bits:
/// i k passes 2^31 at 10^6 local points and 2,148 columns, so no product of sizes is an int.
inline std::size_t at(std::int64_t i, std::int64_t j, std::int64_t k) {
  return static_cast<std::size_t>(i) * static_cast<std::size_t>(k) + static_cast<std::size_t>(j);
}
/// The widest block the eigensolvers take: its k x k Gram matrix is summed by one allreduce
/// with an int count, k^2 <= INT32_MAX.
inline constexpr std::int64_t kMaxBlockWidth = 46340;
/// Pure. Throws InputError naming `solver`, the width and the limit when a block of k columns
/// is wider than kMaxBlockWidth (the solvers check it before allocating their blocks).
void check_block_width(const char* solver, std::int64_t k);

/// Pure. A value in [-1, 1) from (seed, global point, column).
double hashed_unit(std::uint64_t seed, std::int64_t g, int col);
/// Collective over ctx: X^T Y (k x k, column-major), summed over ranks.
std::vector<double> gram(const Context& ctx, const double* x, const double* y, int n, int k);
/// Not collective: X <- X M (M k x k column-major); tmp is scratch.
void right_multiply(std::vector<double>& x, const std::vector<double>& m, int n, int k,
                    std::vector<double>& tmp);
/// Not collective: out (n x k) = S (n x m) C (m x k, column-major).
void multiply(const std::vector<double>& s, const std::vector<double>& c, int n, int m, int k,
              std::vector<double>& out);
/// Collective: Cholesky QR twice with unit-column scaling (a tiny shift if S is singular).
void orthonormalize(const Context& ctx, std::vector<double>& x, int n, int k);
/// Collective over ctx (one allreduce): r2[j] holds this rank's part of the squared residual
/// norm of state j (j < r2.size()); sums them over ranks, sets norms[j] to their square roots
/// and returns the largest.
double residual_norms(const Context& ctx, std::vector<double>& r2, std::vector<double>& norms);
/// Not collective: eigenvalues (ascending) of the symmetrised k x k matrix a; a <- eigenvectors.
std::vector<double> syev(std::vector<double>& a, int k);

}  // namespace tessel::solvers::block

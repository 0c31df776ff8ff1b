#pragma once
// Private: the dense block operations of the stencil eigensolvers (CheFSI, LOBPCG) on vectors
// distributed by points: n local rows x k columns, item-major (= k x n column-major). Each
// Gram matrix is one local GEMM + one allreduce; the k x k problems are solved by LAPACK on
// every rank (identical input, identical result).
#include <cstdint>
#include <vector>

#include "tessel/core/context.hpp"

namespace tessel::solvers::block {

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

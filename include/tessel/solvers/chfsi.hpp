#pragma once
/// @file chfsi.hpp
/// The lowest eigenpairs of the stencil Hamiltonian by Chebyshev-filtered subspace iteration
/// (Zhou, Saad, Tiago & Chelikowsky 2006), and one step of the 4th-order Taylor propagator
/// (Octopus's default exponential). Vectors are distributed as the Hamiltonian's points
/// (local_size x width, item-major). Each iteration:
///   filter  Y = p_m(H) X, the scaled Chebyshev polynomial of degree m that damps [a, b]
///           (a = largest Ritz value of the block, b = upper bound of the spectrum by Lanczos);
///   orth    Cholesky QR of Y, twice: S = Y^T Y (one local GEMM + one allreduce), columns
///           scaled to unit norm, S = R^T R (LAPACK dpotrf), Y = Y R^-1;
///   RR      G = Y^T H Y (one local GEMM + one allreduce), G = Q diag(theta) Q^T (LAPACK
///           dsyev on the small problem on every rank), X = Y Q;
///   stop    when every wanted residual ||H x_i - theta_i x_i|| (unit x_i) is below tol.
#include <cstdint>
#include <functional>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/stencil/hamiltonian.hpp"

namespace tessel::solvers {

/// One solver iteration, for progress output.
struct EigenStep {
  int iteration = 0;
  double max_residual = 0;  ///< over the wanted states
  double seconds = 0;       ///< wall time of this iteration (max over ranks not taken)
};

struct EigenOptions {
  int states = 4;     ///< wanted eigenpairs (>= 1)
  int extra = -1;     ///< guard vectors in the block; -1: max(4, states / 4)
  double tol = 1e-6;  ///< residual norm per state
  int max_iter = 300;
  int degree = 0;  ///< Chebyshev degree; 0: from h, clamp(ceil(6 / h), 8, 40)
  int lanczos_steps = 40;
  std::uint64_t seed = 7;  ///< start vectors: a hash of (seed, global point, column)
  std::function<void(const EigenStep&)> on_step;  ///< called on every rank after each iteration
};

struct EigenResult {
  std::vector<double> values;     ///< the wanted eigenvalues, ascending
  std::vector<double> residuals;  ///< their residual norms
  std::vector<double> vectors;    ///< local_size x states, item-major, orthonormal
  int iterations = 0, degree = 0, block = 0;
  bool converged = false;
  double lower = 0, upper = 0;  ///< Lanczos estimates of the spectrum's ends
  std::int64_t applies = 0;     ///< H applications (counting each vector)
};

/// Collective over ctx (every rank of the Hamiltonian's plan). Throws InputError when
/// states < 1, the block (states + extra) exceeds the mesh's points, tol <= 0 or max_iter < 1;
/// converged = false when max_iter is reached first.
EigenResult chfsi(Context& ctx, stencil::Hamiltonian& h, std::int64_t mesh_points, double spacing,
                  const EigenOptions& opt);

/// Collective over ctx: the same eigenpairs by LOBPCG (Knyazev 2001, without preconditioner),
/// for comparison: Rayleigh-Ritz on the orthonormalised basis [X, W, P] (W the residuals made
/// orthogonal to X, P the previous search directions), 3 (states + extra) H applies per
/// iteration. Same options (degree and lanczos_steps unused), result and errors as chfsi.
EigenResult lobpcg(Context& ctx, stencil::Hamiltonian& h, std::int64_t mesh_points,
                   const EigenOptions& opt);

/// Collective over ctx: one step of the 4th-order Taylor expansion of exp(-i H dt) applied to
/// `width` complex vectors stored as 2 width real columns (re, im of vector j in columns 2j,
/// 2j+1), in place: psi <- sum_{k=0..4} (-i dt H)^k / k! psi (four H applies of width 2 width).
void taylor_step(stencil::Hamiltonian& h, std::vector<double>& psi, int width, double dt);

/// Collective over ctx: squared norms of the `width` columns of local_size x width vectors.
std::vector<double> column_norms2(const Context& ctx, const std::vector<double>& x, std::int64_t n,
                                  int width);

}  // namespace tessel::solvers

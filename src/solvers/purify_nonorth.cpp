// Purification in a non-orthogonal basis: Z = S^-1/2 by the coupled Newton-Schulz iteration
// of newton_schulz.cpp (the solver shared with the block-sparse path, on the dense algebra),
// F' = Z F Z purified in the orthogonal basis, D = Z D' Z.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tessel/dense/multiply.hpp"
#include "purify_steps.hpp"
#include "tessel/solvers/density.hpp"
#include "tessel/solvers/purify.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::solvers {
namespace {

using Matrix = dense::DistMatrix<double>;

// Collective. X^T in X's layout (the shared algebra's transpose).
Matrix transposed(Context& ctx, const Matrix& x) { return DenseAlgebra(ctx).transpose(x); }

// Collective. InputError on every rank when `x` has NaN/Inf or max|X - X^T| > tol max|X|.
void check_symmetric(Context& ctx, const Matrix& x, double tol, const char* name) {
  double v[3] = {0, 0, 0};  // non-finite entries, max|X|, max|X - X^T|
  for (std::int64_t j = 0; j < x.local_cols(); ++j)
    for (std::int64_t i = 0; i < x.local_rows(); ++i) {
      double a = x.local(i, j);
      if (!std::isfinite(a))
        v[0] = 1;
      else
        v[1] = std::max(v[1], std::abs(a));
    }
  ctx.comm().allreduce(v, 2, MPI_MAX);
  if (v[0] == 0) {
    Matrix t = transposed(ctx, x);
    for (std::int64_t j = 0; j < x.local_cols(); ++j)
      for (std::int64_t i = 0; i < x.local_rows(); ++i)
        v[2] = std::max(v[2], std::abs(x.local(i, j) - t.local(i, j)));
    v[2] = ctx.comm().allreduce_value(v[2], MPI_MAX);
  }
  ctx.agree([&] {
    TESSEL_CHECK(v[0] == 0, InputError, "purify: ", name, " has NaN or Inf entries");
    TESSEL_CHECK(v[2] <= tol * v[1], InputError, "purify: ", name, " is not symmetric: max|", name,
                 " - ", name, "^T| = ", v[2], " exceeds symmetry_tol * max|", name, "| = ", tol,
                 " * ", v[1]);
  });
}

// Collective. X <- (X + X^T) / 2.
void symmetrize(Context& ctx, Matrix& x) { DenseAlgebra(ctx).symmetrize(x); }

Matrix product(Context& ctx, const Matrix& a, const Matrix& b) {
  Matrix c(ctx, a.layout());
  dense::multiply(ctx, 1.0, dense::Op::N, a, dense::Op::N, b, 0.0, c);
  return c;
}

// Collective. S^-1/2 by solvers::inverse_sqrt (order 2, Lanczos-scaled; its errors name S as
// not positive definite when a Ritz value is <= 0, the iteration diverges or stalls).
Matrix inverse_sqrt(Context& ctx, const Matrix& S, const PurifyOptions& opt, int* steps) {
  DenseAlgebra alg(ctx);
  InverseOptions io;
  io.tol = opt.ns_tol;
  io.max_iter = opt.ns_max_iter;
  auto r = solvers::inverse_sqrt(alg, S, io);
  *steps = r.iterations;
  return std::move(r.X);
}

}  // namespace

PurifyResult purify(Context& ctx, const dense::DistMatrix<double>& F,
                    const dense::DistMatrix<double>& S, std::int64_t nocc,
                    const PurifyOptions& opt) {
  ctx.agree([&] {
    TESSEL_CHECK(F.rows() == F.cols(), DimensionMismatch, "purify: F is ", F.rows(), " x ",
                 F.cols(), " (expected square)");
    TESSEL_CHECK(S.rows() == F.rows() && S.cols() == F.cols(), DimensionMismatch, "purify: S is ",
                 S.rows(), " x ", S.cols(), " but F is ", F.rows(), " x ", F.cols(),
                 " (expected the same shape)");
    TESSEL_CHECK(F.layout().comm_size() == ctx.size(), LayoutMismatch,
                 "purify: F's layout is over ", F.layout().comm_size(),
                 " ranks but the context has ", ctx.size());
    TESSEL_CHECK(S.layout() == F.layout(), LayoutMismatch, "purify: S's layout (",
                 S.layout().describe(), ") differs from F's (", F.layout().describe(), ")");
    TESSEL_CHECK(opt.ns_tol > 0 && std::isfinite(opt.ns_tol), InputError,
                 "purify: ns_tol = ", opt.ns_tol, " (expected > 0)");
    TESSEL_CHECK(opt.ns_max_iter >= 1, InputError, "purify: ns_max_iter = ", opt.ns_max_iter,
                 " (expected >= 1)");
    steps::check_options(opt, F.rows(), nocc);
  });
  Stopwatch t0;
  Matrix fp;
  int ns = 0;
  Matrix z;
  {
    PhaseScope ph(ctx.ledger(), "purify/validate");
    check_symmetric(ctx, F, opt.symmetry_tol, "F");
    check_symmetric(ctx, S, opt.symmetry_tol, "S");
  }
  {
    PhaseScope ph(ctx.ledger(), "purify/inverse sqrt");
    z = inverse_sqrt(ctx, S, opt, &ns);
  }
  {
    PhaseScope ph(ctx.ledger(), "purify/basis change");
    fp = product(ctx, product(ctx, z, F), z);
    symmetrize(ctx, fp);
  }
  double ns_seconds = t0.seconds();
  PurifyResult out = purify(ctx, fp, nocc, opt);
  t0.restart();
  {
    PhaseScope ph(ctx.ledger(), "purify/basis change");
    out.D = product(ctx, product(ctx, z, out.D), z);
  }
  out.ns_seconds = ns_seconds + t0.seconds();
  out.ns_iterations = ns;
  return out;
}

}  // namespace tessel::solvers

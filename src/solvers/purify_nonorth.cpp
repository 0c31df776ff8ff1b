// Purification in a non-orthogonal basis: Z = S^-1/2 by the coupled Newton-Schulz iteration
// (dense::multiply), F' = Z F Z purified in the orthogonal basis, D = Z D' Z.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tessel/dense/multiply.hpp"
#include "purify_steps.hpp"
#include "tessel/solvers/purify.hpp"

namespace tessel::solvers {
namespace {

using Clock = std::chrono::steady_clock;
using Matrix = dense::DistMatrix<double>;

// Collective. X^T in X's layout: the local block transposed is X^T's local block in the
// transposed layout (row and column partitions swapped), then one redistribution.
Matrix transposed(const Context& ctx, const Matrix& x) {
  const auto& l = x.layout();
  const auto& rp = l.row_partition();
  const auto& cp = l.col_partition();
  std::vector<int> owner(static_cast<std::size_t>(rp.groups()) * cp.groups());
  for (int gr = 0; gr < rp.groups(); ++gr)
    for (int gc = 0; gc < cp.groups(); ++gc)
      owner[static_cast<std::size_t>(gc) * rp.groups() + gr] = l.owner(gr, gc);
  Matrix t(ctx, layout::Layout(cp, rp, std::move(owner), l.comm_size()));
  for (std::int64_t j = 0; j < x.local_cols(); ++j)
    for (std::int64_t i = 0; i < x.local_rows(); ++i) t.local(j, i) = x.local(i, j);
  return dense::redistribute(ctx, t, l);
}

// Collective. InputError on every rank when `x` has NaN/Inf or max|X - X^T| > tol max|X|.
void check_symmetric(const Context& ctx, const Matrix& x, double tol, const char* name) {
  double v[3] = {0, 0, 0};  // non-finite entries, max|X|, max|X - X^T|
  for (std::int64_t j = 0; j < x.local_cols(); ++j)
    for (std::int64_t i = 0; i < x.local_rows(); ++i) {
      double a = x.local(i, j);
      if (!std::isfinite(a)) v[0] = 1;
      else v[1] = std::max(v[1], std::abs(a));
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
    TESSEL_CHECK(v[2] <= tol * v[1], InputError, "purify: ", name, " is not symmetric: max|",
                 name, " - ", name, "^T| = ", v[2], " exceeds symmetry_tol * max|", name,
                 "| = ", tol, " * ", v[1]);
  });
}

// Collective. X <- (X + X^T) / 2.
void symmetrize(const Context& ctx, Matrix& x) {
  Matrix t = transposed(ctx, x);
  for (std::int64_t j = 0; j < x.local_cols(); ++j)
    for (std::int64_t i = 0; i < x.local_rows(); ++i)
      x.local(i, j) = 0.5 * (x.local(i, j) + t.local(i, j));
}

Matrix product(Context& ctx, const Matrix& a, const Matrix& b) {
  Matrix c(ctx, a.layout());
  dense::multiply(ctx, 1.0, dense::Op::N, a, dense::Op::N, b, 0.0, c);
  return c;
}

// Collective. S^-1/2 by the coupled Newton-Schulz iteration: Y0 = S/s, Z0 = I with s >= the
// largest eigenvalue of S (min of the infinity and Frobenius norms); T = (3I - ZY)/2,
// Y <- YT, Z <- TZ; Z/sqrt(s) -> S^-1/2. For symmetric positive definite S every eigenvalue
// y of Y = S Z^2 moves monotonically to 1, so ||I - ZY||_F decreases at every step: a growth
// means a negative eigenvalue, a stall (not down by 0.1% in `kWindow` steps) a zero one.
Matrix inverse_sqrt(Context& ctx, const Matrix& S, const PurifyOptions& opt, int* steps) {
  constexpr int kWindow = 25;  // 2.25^25 ~ 6e8: eigenvalues of S/s down to ~1e-9 still move
  const std::int64_t n = S.rows();
  Matrix y(ctx, S.layout()), z(ctx, S.layout()), t(ctx, S.layout());
  // (DistMatrix's copy shares the storage: copy the local block by hand)
  for (std::int64_t j = 0; j < S.local_cols(); ++j)
    for (std::int64_t i = 0; i < S.local_rows(); ++i) y.local(i, j) = S.local(i, j);
  std::vector<double> rows(static_cast<std::size_t>(n), 0.0);
  double fro = 0;
  y.for_each_local([&](std::int64_t i, std::int64_t, double& v) {
    rows[static_cast<std::size_t>(i)] += std::abs(v);
    fro += v * v;
  });
  ctx.comm().allreduce(rows.data(), static_cast<int>(n), MPI_SUM);
  fro = std::sqrt(ctx.comm().allreduce_value(fro, MPI_SUM));
  const double s = std::min(fro, *std::max_element(rows.begin(), rows.end()));
  y.for_each_local([&](std::int64_t, std::int64_t, double& v) { v /= s; });
  z.for_each_local([&](std::int64_t i, std::int64_t j, double& v) { v = i == j ? 1.0 : 0.0; });
  const double tol = std::max(opt.ns_tol, 10 * static_cast<double>(n) *
                                              std::numeric_limits<double>::epsilon());
  std::vector<double> hist;
  std::string fail;
  int k = 0;
  for (;; ++k) {
    dense::multiply(ctx, 1.0, dense::Op::N, z, dense::Op::N, y, 0.0, t);
    double r = 0;
    t.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
      double e = (i == j ? 1.0 : 0.0) - v;
      r += e * e;
    });
    r = std::sqrt(ctx.comm().allreduce_value(r, MPI_SUM));
    hist.push_back(r);
    const double prev = k > 0 ? hist[static_cast<std::size_t>(k - 1)] : r;
    if (r < tol) break;
    if (!std::isfinite(r) || (r > prev && r >= 1e-6)) {
      fail = detail::concat("purify: S is not positive definite: ||I - Z Y||_F grew to ", r,
                            " at Newton-Schulz step ", k, " (from ", prev,
                            "); S has a non-positive eigenvalue");
      break;
    }
    if (r > prev) {  // the rounding floor, above tol
      if (r < 1e-9) break;
      fail = detail::concat("purify: Newton-Schulz for S^-1/2 stopped at ||I - Z Y||_F = ", r,
                            " (step ", k, ", ns_tol ", opt.ns_tol,
                            "): S is too ill-conditioned for double precision");
      break;
    }
    if (k >= kWindow && r > (1 - 1e-3) * hist[static_cast<std::size_t>(k - kWindow)]) {
      fail = detail::concat("purify: S is not positive definite: ||I - Z Y||_F stalled at ", r,
                            " over ", kWindow, " Newton-Schulz steps (step ", k,
                            "); S is singular (a zero eigenvalue) or nearly so");
      break;
    }
    if (k >= opt.ns_max_iter) {
      fail = detail::concat("purify: Newton-Schulz for S^-1/2 did not converge in ns_max_iter = ",
                            opt.ns_max_iter, " steps: ||I - Z Y||_F = ", r, " (tol ", tol,
                            "); S is nearly singular (or raise ns_max_iter)");
      break;
    }
    t.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
      v = 0.5 * ((i == j ? 3.0 : 0.0) - v);
    });
    y = product(ctx, y, t);
    z = product(ctx, t, z);
  }
  ctx.agree([&] {
    if (!fail.empty()) throw InputError(fail);
  });
  *steps = k;
  const double scale = 1 / std::sqrt(s);
  z.for_each_local([&](std::int64_t, std::int64_t, double& v) { v *= scale; });
  symmetrize(ctx, z);
  return z;
}

}  // namespace

PurifyResult purify(Context& ctx, const dense::DistMatrix<double>& F,
                    const dense::DistMatrix<double>& S, std::int64_t nocc,
                    const PurifyOptions& opt) {
  ctx.agree([&] {
    TESSEL_CHECK(F.rows() == F.cols(), DimensionMismatch, "purify: F is ", F.rows(), " x ",
                 F.cols(), " (expected square)");
    TESSEL_CHECK(S.rows() == F.rows() && S.cols() == F.cols(), DimensionMismatch,
                 "purify: S is ", S.rows(), " x ", S.cols(), " but F is ", F.rows(), " x ",
                 F.cols(), " (expected the same shape)");
    TESSEL_CHECK(F.layout().comm_size() == ctx.size(), LayoutMismatch, "purify: F's layout is over ",
                 F.layout().comm_size(), " ranks but the context has ", ctx.size());
    TESSEL_CHECK(S.layout() == F.layout(), LayoutMismatch, "purify: S's layout (",
                 S.layout().describe(), ") differs from F's (", F.layout().describe(), ")");
    TESSEL_CHECK(opt.ns_tol > 0 && std::isfinite(opt.ns_tol), InputError, "purify: ns_tol = ",
                 opt.ns_tol, " (expected > 0)");
    TESSEL_CHECK(opt.ns_max_iter >= 1, InputError, "purify: ns_max_iter = ", opt.ns_max_iter,
                 " (expected >= 1)");
    steps::check_options(opt, F.rows(), nocc);
  });
  auto t0 = Clock::now();
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
  double ns_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  PurifyResult out = purify(ctx, fp, nocc, opt);
  t0 = Clock::now();
  {
    PhaseScope ph(ctx.ledger(), "purify/basis change");
    out.D = product(ctx, product(ctx, z, out.D), z);
  }
  out.ns_seconds = ns_seconds + std::chrono::duration<double>(Clock::now() - t0).count();
  out.ns_iterations = ns;
  return out;
}

}  // namespace tessel::solvers

#pragma once
// Private: the algebra of the dense purify() fast path — matrices on plane 0 of the
// SymmSquareCube mesh (seed 000), the powers X^2, X^3, X^4 by SymmSquareCube, the rest local
// loops plus allreduces over the active ranks (mesh().global()). Called on the active ranks
// only: the inactive ranks wait in SymmSquareCube::release(). It offers what purify_generic
// uses, so purify() runs the same purification code as the dense and block-sparse algebras.
#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "gershgorin.hpp"
#include "tessel/dense/symm_square_cube.hpp"
#include "tessel/solvers/algebra.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::solvers {

/// A matrix on plane 0 of the SymmSquareCube mesh (empty local block on the other planes).
struct SscMatrix {
  dense::DistMatrix<double> m;
};

template <>
class Algebra<SscMatrix> {
 public:
  using Matrix = SscMatrix;
  Algebra(const Context& ctx, dense::SymmSquareCube& ssc) : ctx_(ctx), ssc_(ssc) {}
  double filter_eps() const { return 0.0; }
  void set_filter_eps(double) {}
  AlgebraStats& stats() { return stats_; }
  double ssc_seconds() const { return ssc_seconds_; }
  /// Collective over the active ranks.
  void agree(const std::function<void()>& f) const { agree_on(ssc_.mesh().global(), f); }
  std::int64_t n(const Matrix&) const { return ssc_.n(); }
  Matrix copy(const Matrix& a) const {
    Matrix c{dense::DistMatrix<double>(ctx_, ssc_.plane0())};
    std::copy(a.m.data(), a.m.data() + len(), c.m.data());
    return c;
  }
  /// X^2 .. X^k of a symmetric X by SymmSquareCube (k = 2: D^2 only; 3: D^2, D^3; 4: then (D^2)^2).
  void powers(const Matrix& x, int k, Matrix& x2, Matrix& x3, Matrix& x4) {
    const ScopedSeconds timed(&ssc_seconds_);
    x2 = Matrix{dense::DistMatrix<double>(ctx_, ssc_.plane0())};
    if (k == 2) {
      ssc_.run_square_active(x.m.data(), x2.m.data());
    } else {
      x3 = Matrix{dense::DistMatrix<double>(ctx_, ssc_.plane0())};
      ssc_.run_active(x.m.data(), x2.m.data(), x3.m.data());
      if (k == 4) {
        x4 = Matrix{dense::DistMatrix<double>(ctx_, ssc_.plane0())};
        ssc_.run_square_active(x2.m.data(), x4.m.data());
      }
    }
    stats_.multiplications += k - 1;
  }
  void add(Matrix& a, double alpha, const Matrix& b, double beta) const {
    double* x = a.m.data();
    const double* y = b.m.data();
    for (std::int64_t q = 0; q < len(); ++q) x[q] = alpha * x[q] + beta * y[q];
  }
  void scale(Matrix& a, double alpha) const {
    for (std::int64_t q = 0; q < len(); ++q) a.m.data()[q] *= alpha;
  }
  void shift(Matrix& a, double alpha) const {
    if (!diag()) return;
    const std::int64_t ri = a.m.local_rows();
    for (std::int64_t r = 0; r < ri; ++r) a.m.data()[r * ri + r] += alpha;
  }
  void filter(Matrix&) const {}
  /// Restores exact symmetry (the SymmSquareCube kernels compute half the blocks and mirror).
  void resymmetrize(Matrix& a) const { ssc_.symmetrize(a.m.data()); }
  double trace(const Matrix& a) const {
    double t = 0;
    if (diag())
      for (std::int64_t r = 0; r < a.m.local_rows(); ++r) t += a.m.data()[r * a.m.local_rows() + r];
    return ssc_.mesh().global().allreduce_value(t, MPI_SUM);
  }
  double dot(const Matrix& a, const Matrix& b) const {
    double t = 0;
    for (std::int64_t q = 0; q < len(); ++q) t += a.m.data()[q] * b.m.data()[q];
    return ssc_.mesh().global().allreduce_value(t, MPI_SUM);
  }
  double norm(const Matrix& a) const { return std::sqrt(std::max(0.0, dot(a, a))); }
  std::int64_t blocks(const Matrix&) const { return 0; }
  /// Gershgorin bounds: row sums of |X_ij| (j != i) and the diagonal, one allreduce of 2n.
  std::pair<double, double> gershgorin(const Matrix& a) const {
    const auto& m = ssc_.mesh();
    const std::int64_t n = ssc_.n();
    std::vector<double> rs(static_cast<std::size_t>(2 * n), 0.0);
    if (m.k() == 0) {
      const std::int64_t ri = ssc_.block(m.i()), rj = ssc_.block(m.j());
      const std::int64_t i0 = layout::split_begin(n, m.p(), m.i()),
                         j0 = layout::split_begin(n, m.p(), m.j());
      for (std::int64_t c = 0; c < rj; ++c)
        for (std::int64_t r = 0; r < ri; ++r) {
          const double v = a.m.data()[c * ri + r];
          if (i0 + r == j0 + c)
            rs[static_cast<std::size_t>(n + i0 + r)] = v;
          else
            rs[static_cast<std::size_t>(i0 + r)] += std::abs(v);
        }
    }
    allreduce_sum(m.global(), rs.data(), 2 * n);
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (std::int64_t r = 0; r < n; ++r) {
      lo = std::min(lo, rs[static_cast<std::size_t>(n + r)] - rs[static_cast<std::size_t>(r)]);
      hi = std::max(hi, rs[static_cast<std::size_t>(n + r)] + rs[static_cast<std::size_t>(r)]);
    }
    return {lo, hi};
  }

 private:
  const Context& ctx_;
  dense::SymmSquareCube& ssc_;
  AlgebraStats stats_;
  double ssc_seconds_ = 0;
  bool plane0() const { return ssc_.mesh().k() == 0; }
  bool diag() const { return plane0() && ssc_.mesh().i() == ssc_.mesh().j(); }
  std::int64_t len() const {
    return plane0() ? ssc_.block(ssc_.mesh().i()) * ssc_.block(ssc_.mesh().j()) : 0;
  }
};

}  // namespace tessel::solvers

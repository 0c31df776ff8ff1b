// Algebra<DistMatrix<double>>: the solvers' algebra on dense block-cyclic matrices, each
// operation a local loop over this rank's entries plus at most one allreduce; products by
// dense::multiply.
#include <algorithm>
#include <cmath>

#include "tessel/solvers/algebra.hpp"
#include "gershgorin.hpp"

namespace tessel::solvers {
namespace {

using Matrix = dense::DistMatrix<double>;

// for_each_local is a non-const member; the read-only loops below do not write.
template <class F>
void each(const Matrix& a, F&& f) {
  const_cast<Matrix&>(a).for_each_local(
      [&](std::int64_t i, std::int64_t j, double& v) { f(i, j, static_cast<const double&>(v)); });
}

}  // namespace

bool DenseAlgebra::conforms(const Matrix& a, const Matrix& b, std::string* why) {
  if (a.layout() == b.layout()) return true;
  *why = detail::concat(a.rows(), " x ", a.cols(), " (", a.layout().describe(), ") and ", b.rows(),
                        " x ", b.cols(), " (", b.layout().describe(), ")");
  return false;
}

Matrix DenseAlgebra::copy(const Matrix& a) const {
  Matrix c(ctx_, a.layout());  // (DistMatrix's copy shares the storage: copy by hand)
  for (std::int64_t j = 0; j < a.local_cols(); ++j)
    for (std::int64_t i = 0; i < a.local_rows(); ++i) c.local(i, j) = a.local(i, j);
  return c;
}

Matrix DenseAlgebra::identity(const Matrix& like, double alpha) const {
  Matrix c(ctx_, like.layout());
  c.for_each_local([&](std::int64_t i, std::int64_t j, double& v) { v = i == j ? alpha : 0.0; });
  return c;
}

Matrix DenseAlgebra::product(const Matrix& a, const Matrix& b, double alpha) {
  Matrix c(ctx_, a.layout());
  dense::multiply(ctx_, alpha, dense::Op::N, a, dense::Op::N, b, 0.0, c, opt_);
  ++stats_.multiplications;
  const double n = static_cast<double>(a.rows());
  stats_.flops += 2 * n * n * n / ctx_.size();
  return c;
}

void DenseAlgebra::add(Matrix& a, double alpha, const Matrix& b, double beta) const {
  TESSEL_CHECK(a.layout() == b.layout(), LayoutMismatch, "algebra add: layouts differ (",
               a.layout().describe(), " and ", b.layout().describe(), ")");
  for (std::int64_t j = 0; j < a.local_cols(); ++j)
    for (std::int64_t i = 0; i < a.local_rows(); ++i)
      a.local(i, j) = alpha * a.local(i, j) + beta * b.local(i, j);
}

void DenseAlgebra::scale(Matrix& a, double alpha) const {
  a.for_each_local([&](std::int64_t, std::int64_t, double& v) { v *= alpha; });
}

void DenseAlgebra::shift(Matrix& a, double alpha) const {
  a.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
    if (i == j) v += alpha;
  });
}

double DenseAlgebra::trace(const Matrix& a) const {
  double t = 0;
  each(a, [&](std::int64_t i, std::int64_t j, const double& v) {
    if (i == j) t += v;
  });
  return ctx_.comm().allreduce_value(t, MPI_SUM);
}

double DenseAlgebra::dot(const Matrix& a, const Matrix& b) const {
  TESSEL_CHECK(a.layout() == b.layout(), LayoutMismatch, "algebra dot: layouts differ");
  double t = 0;
  for (std::int64_t j = 0; j < a.local_cols(); ++j)
    for (std::int64_t i = 0; i < a.local_rows(); ++i) t += a.local(i, j) * b.local(i, j);
  return ctx_.comm().allreduce_value(t, MPI_SUM);
}

double DenseAlgebra::norm(const Matrix& a) const { return std::sqrt(std::max(0.0, dot(a, a))); }

// The local block transposed is A^T's local block in the transposed layout (row and column
// partitions swapped), then one redistribution into A's layout.
Matrix DenseAlgebra::transpose(const Matrix& x) const {
  const auto& l = x.layout();
  const auto& rp = l.row_partition();
  const auto& cp = l.col_partition();
  std::vector<int> owner(static_cast<std::size_t>(rp.groups()) * cp.groups());
  for (int gr = 0; gr < rp.groups(); ++gr)
    for (int gc = 0; gc < cp.groups(); ++gc)
      owner[static_cast<std::size_t>(gc) * rp.groups() + gr] = l.owner(gr, gc);
  Matrix t(ctx_, layout::Layout(cp, rp, std::move(owner), l.comm_size()));
  for (std::int64_t j = 0; j < x.local_cols(); ++j)
    for (std::int64_t i = 0; i < x.local_rows(); ++i) t.local(j, i) = x.local(i, j);
  return dense::redistribute(ctx_, t, l);
}

void DenseAlgebra::symmetrize(Matrix& a) const {
  Matrix t = transpose(a);
  add(a, 0.5, t, 0.5);
}

std::pair<double, double> DenseAlgebra::gershgorin(const Matrix& a) const {
  const std::int64_t n = a.rows();
  std::vector<double> rs(static_cast<std::size_t>(2 * n), 0.0);  // off-diagonal |.| sums, diagonal
  each(a, [&](std::int64_t i, std::int64_t j, const double& v) {
    if (i == j)
      rs[static_cast<std::size_t>(n + i)] = v;
    else
      rs[static_cast<std::size_t>(i)] += std::abs(v);
  });
  return gershgorin_interval(ctx_.comm(), rs, n);
}

void DenseAlgebra::matvec(const Matrix& a, const std::vector<double>& x,
                          std::vector<double>& y) const {
  y.assign(static_cast<std::size_t>(a.rows()), 0.0);
  each(a, [&](std::int64_t i, std::int64_t j, const double& v) {
    y[static_cast<std::size_t>(i)] += v * x[static_cast<std::size_t>(j)];
  });
  ctx_.comm().allreduce(y.data(), static_cast<int>(y.size()), MPI_SUM);
}

bool DenseAlgebra::finite(const Matrix& a) const {
  double bad = 0;
  each(a, [&](std::int64_t, std::int64_t, const double& v) {
    if (!std::isfinite(v)) bad = 1;
  });
  return ctx_.comm().allreduce_value(bad, MPI_MAX) == 0;
}

}  // namespace tessel::solvers

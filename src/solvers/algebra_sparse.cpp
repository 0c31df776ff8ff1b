// Algebra<BlockSparseMatrix<double>>: the solvers' algebra on block-sparse matrices, over the
// algebra of src/sparse/ops.cpp and sparse::multiply with on-the-fly filtering.
#include <algorithm>
#include <cmath>

#include "tessel/core/error.hpp"
#include "tessel/solvers/algebra.hpp"
#include "gershgorin.hpp"

namespace tessel::solvers {
namespace {
using Matrix = sparse::BlockSparseMatrix<double>;
}  // namespace

SparseAlgebra::Algebra(Context& ctx, sparse::SpMultiplyOptions opt)
    : ctx_(ctx), opt_(opt), cache_(std::make_unique<sparse::SpMultiplyCache>()) {
  TESSEL_CHECK(opt.filter_eps >= 0 && std::isfinite(opt.filter_eps), InputError,
               "filter eps = ", opt.filter_eps, " (expected >= 0; 0 means no filtering)");
  // A solver's products start from an empty C: a retained pattern would keep nothing, and a
  // comm-only multiply returns zero blocks.
  TESSEL_CHECK(!opt.retain_sparsity, InputError,
               "SparseAlgebra: SpMultiplyOptions::retain_sparsity = true (expected false: every "
               "product of a solver starts from an empty C, so it would be zero)");
  TESSEL_CHECK(!opt.comm_only, InputError,
               "SparseAlgebra: SpMultiplyOptions::comm_only = true (expected false: a comm-only "
               "multiply computes no block product, so every product would be zero)");
  TESSEL_CHECK(opt.product_bytes_hint >= 0 && std::isfinite(opt.product_bytes_hint), InputError,
               "SparseAlgebra: SpMultiplyOptions::product_bytes_hint = ", opt.product_bytes_hint,
               " (expected >= 0; 0 = estimate)");
}

SparseAlgebra::~Algebra() = default;

void SparseAlgebra::set_filter_eps(double eps) {
  TESSEL_CHECK(eps >= 0 && std::isfinite(eps), InputError, "filter eps = ", eps,
               " (expected >= 0; 0 means no filtering)");
  opt_.filter_eps = eps;
}

bool SparseAlgebra::conforms(const Matrix& a, const Matrix& b, std::string* why) {
  const auto& da = a.distribution();
  const auto& db = b.distribution();
  if (da == db) return true;
  if (da.row_blocks() != db.row_blocks() || da.col_blocks() != db.col_blocks())
    *why = detail::concat("block sizes differ: ", da.describe(), " and ", db.describe());
  else
    *why = detail::concat("distributions differ: ", da.describe(), " and ", db.describe());
  return false;
}

Matrix SparseAlgebra::identity(const Matrix& like, double alpha) const {
  Matrix c(ctx_, like.distribution(), "identity");
  sparse::shift(c, alpha);
  return c;
}

Matrix SparseAlgebra::product(const Matrix& a, const Matrix& b, double alpha) {
  Matrix c(ctx_, a.distribution(), "product");
  auto rep = sparse::multiply(ctx_, alpha, sparse::SpOp::N, a, sparse::SpOp::N, b, 0.0, c, opt_,
                              cache_.get());
  ++stats_.multiplications;
  stats_.flops += rep.flops;
  if (opt_.algorithm == sparse::SpAlgorithm::Rma25d && opt_.layers == 0) {
    // layers = auto: the next product's C bytes are guessed from this one's (a solver's
    // products change slowly), not from the hint given for the first.
    double bytes = 8.0 * static_cast<double>(rep.product_blocks + rep.product_values);
    opt_.product_bytes_hint = ctx_.comm().allreduce_value(bytes, MPI_SUM);
  }
  return c;
}

void SparseAlgebra::add(Matrix& a, double alpha, const Matrix& b, double beta) const {
  sparse::add(a, alpha, b, beta);
}
void SparseAlgebra::scale(Matrix& a, double alpha) const { sparse::scale(a, alpha); }
void SparseAlgebra::shift(Matrix& a, double alpha) const { sparse::shift(a, alpha); }
void SparseAlgebra::filter(Matrix& a) const { sparse::filter(a, opt_.filter_eps); }
double SparseAlgebra::trace(const Matrix& a) const { return sparse::trace(ctx_, a); }
double SparseAlgebra::dot(const Matrix& a, const Matrix& b) const {
  return sparse::dot(ctx_, a, b);
}
double SparseAlgebra::norm(const Matrix& a) const { return sparse::frobenius_norm(ctx_, a); }
std::int64_t SparseAlgebra::blocks(const Matrix& a) const { return sparse::nblocks(ctx_, a); }

Matrix SparseAlgebra::transpose(const Matrix& a) const {
  return sparse::transpose(ctx_, a, a.distribution());
}

void SparseAlgebra::symmetrize(Matrix& a) const {
  Matrix t = transpose(a);
  sparse::add(a, 0.5, t, 0.5);
}

std::pair<double, double> SparseAlgebra::gershgorin(const Matrix& a) const {
  const auto& rb = a.distribution().row_blocks();
  const auto& cb = a.distribution().col_blocks();
  const std::int64_t n = a.rows();
  std::vector<double> rs(static_cast<std::size_t>(2 * n), 0.0);
  a.for_each_block([&](int br, int bc, const double* x, int r, int c) {
    const std::int64_t i0 = rb.offset(br), j0 = cb.offset(bc);
    for (int j = 0; j < c; ++j)
      for (int i = 0; i < r; ++i) {
        const double v = x[static_cast<std::size_t>(j) * r + i];
        if (i0 + i == j0 + j)
          rs[static_cast<std::size_t>(n + i0 + i)] = v;
        else
          rs[static_cast<std::size_t>(i0 + i)] += std::abs(v);
      }
  });
  return gershgorin_interval(ctx_.comm(), rs, n);
}

void SparseAlgebra::matvec(const Matrix& a, const std::vector<double>& x,
                           std::vector<double>& y) const {
  const auto& rb = a.distribution().row_blocks();
  const auto& cb = a.distribution().col_blocks();
  y.assign(static_cast<std::size_t>(a.rows()), 0.0);
  a.for_each_block([&](int br, int bc, const double* b, int r, int c) {
    const std::int64_t i0 = rb.offset(br), j0 = cb.offset(bc);
    for (int j = 0; j < c; ++j) {
      const double xj = x[static_cast<std::size_t>(j0 + j)];
      for (int i = 0; i < r; ++i)
        y[static_cast<std::size_t>(i0 + i)] += b[static_cast<std::size_t>(j) * r + i] * xj;
    }
  });
  ctx_.comm().allreduce(y.data(), static_cast<int>(y.size()), MPI_SUM);
}

bool SparseAlgebra::finite(const Matrix& a) const {
  double bad = 0;
  a.for_each_block([&](int, int, const double* b, int r, int c) {
    for (std::int64_t q = 0; q < static_cast<std::int64_t>(r) * c; ++q)
      if (!std::isfinite(b[q])) bad = 1;
  });
  return ctx_.comm().allreduce_value(bad, MPI_MAX) == 0;
}

}  // namespace tessel::solvers

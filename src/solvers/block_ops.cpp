#include "block_ops.hpp"

#include <algorithm>
#include <cmath>

#include "small_lapack.hpp"

namespace tessel::solvers::block {

void check_block_width(const char* solver, std::int64_t k) {
  TESSEL_CHECK(k <= kMaxBlockWidth, InputError, solver, ": a block of ", k,
               " vectors: its Gram matrix of ", k, "^2 = ", k * k,
               " entries exceeds one MPI count (at most ", kMaxBlockWidth,
               " vectors, states and guard vectors together)");
}

double hashed_unit(std::uint64_t seed, std::int64_t g, int col) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL +
                    static_cast<std::uint64_t>(g) * 0xBF58476D1CE4E5B9ULL +
                    static_cast<std::uint64_t>(col) * 0x94D049BB133111EBULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// S (k x k) = X^T Y summed over ranks: X, Y are n x k item-major = k x n column-major.
std::vector<double> gram(const Context& ctx, const double* x, const double* y, int n, int k) {
  std::vector<double> s(static_cast<std::size_t>(k) * static_cast<std::size_t>(k), 0.0);
  const double one = 1, zero = 0;
  if (n > 0) dgemm_("N", "T", &k, &k, &n, &one, x, &k, y, &k, &zero, s.data(), &k);
  ctx.comm().allreduce(s.data(), static_cast<int>(at(k, 0, k)), MPI_SUM);  // k <= 46340
  return s;
}

// X (n x k) <- X M for a k x k column-major M: as k x n column-major, X^T <- M^T X^T.
void right_multiply(std::vector<double>& x, const std::vector<double>& m, int n, int k,
                    std::vector<double>& tmp) {
  tmp.resize(x.size());
  const double one = 1, zero = 0;
  if (n > 0) dgemm_("T", "N", &k, &n, &k, &one, m.data(), &k, x.data(), &k, &zero, tmp.data(), &k);
  x.swap(tmp);
}

void multiply(const std::vector<double>& s, const std::vector<double>& c, int n, int m, int k,
              std::vector<double>& out) {
  out.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(k), 0.0);
  const double one = 1, zero = 0;
  if (n > 0) dgemm_("T", "N", &k, &n, &m, &one, c.data(), &m, s.data(), &m, &zero, out.data(), &k);
}

// One Cholesky QR pass with unit-column scaling; a tiny shift when S is numerically singular.
static void chol_qr_pass(const Context& ctx, std::vector<double>& x, int n, int k) {
  std::vector<double> s = gram(ctx, x.data(), x.data(), n, k);
  std::vector<double> d(static_cast<std::size_t>(k));
  for (int j = 0; j < k; ++j) {
    const double sjj = s[at(j, j, k)];
    TESSEL_CHECK(sjj > 0 && std::isfinite(sjj), Error, "eigensolver: vector ", j, " has norm^2 ",
                 sjj, " (the block lost rank; try more states or a smaller degree)");
    d[static_cast<std::size_t>(j)] = 1.0 / std::sqrt(sjj);
  }
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j)
      s[at(j, i, k)] *= d[static_cast<std::size_t>(i)] * d[static_cast<std::size_t>(j)];
  std::vector<double> r = s;
  int info = 0;
  dpotrf_("U", &k, r.data(), &k, &info);
  for (double shift = 1e-14; info != 0 && shift < 1e-2; shift *= 100) {
    r = s;
    for (int j = 0; j < k; ++j) r[at(j, j, k)] += shift;
    dpotrf_("U", &k, r.data(), &k, &info);
  }
  TESSEL_CHECK(info == 0, Error, "eigensolver: Cholesky QR failed (dpotrf info ", info, ")");
  for (std::size_t p = 0; p < static_cast<std::size_t>(n); ++p)
    for (std::size_t j = 0; j < static_cast<std::size_t>(k); ++j)
      x[p * static_cast<std::size_t>(k) + j] *= d[j];
  const double one = 1;
  if (n > 0) dtrsm_("L", "U", "T", "N", &k, &n, &one, r.data(), &k, x.data(), &k);
}

void orthonormalize(const Context& ctx, std::vector<double>& x, int n, int k) {
  chol_qr_pass(ctx, x, n, k);
  chol_qr_pass(ctx, x, n, k);
}

// Eigen-decomposition of a symmetric k x k matrix (in place: eigenvectors), ascending values.
std::vector<double> syev(std::vector<double>& a, int k) {
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < i; ++j) {
      const double m = 0.5 * (a[at(j, i, k)] + a[at(i, j, k)]);
      a[at(j, i, k)] = a[at(i, j, k)] = m;
    }
  std::vector<double> w(static_cast<std::size_t>(k));
  int lwork = -1, info = 0;
  double q = 0;
  dsyev_("V", "U", &k, a.data(), &k, w.data(), &q, &lwork, &info);
  lwork = static_cast<int>(q);
  std::vector<double> work(static_cast<std::size_t>(std::max(1, lwork)));
  dsyev_("V", "U", &k, a.data(), &k, w.data(), work.data(), &lwork, &info);
  TESSEL_CHECK(info == 0, Error, "eigensolver: dsyev failed (info ", info, ")");
  return w;
}

double residual_norms(const Context& ctx, std::vector<double>& r2, std::vector<double>& norms) {
  ctx.comm().allreduce(r2.data(), static_cast<int>(r2.size()), MPI_SUM);
  double worst = 0;
  norms.assign(r2.size(), 0.0);
  for (std::size_t j = 0; j < r2.size(); ++j) {
    norms[j] = std::sqrt(r2[j]);
    worst = std::max(worst, norms[j]);
  }
  return worst;
}

}  // namespace tessel::solvers::block

// Spectral bounds by k Lanczos steps (no reorthogonalization: only the extreme Ritz values are
// used, and ghost copies do not move them), the tridiagonal eigenproblem by LAPACK dstev.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tessel/core/error.hpp"
#include "tessel/solvers/density.hpp"

extern "C" void dstev_(const char* jobz, const int* n, double* d, double* e, double* z,
                       const int* ldz, double* work, int* info);

namespace tessel::solvers {

SpectralBounds lanczos(
    const std::function<void(const std::vector<double>&, std::vector<double>&)>& op, std::int64_t n,
    int k) {
  SpectralBounds b;
  if (n <= 0) return b;
  k = static_cast<int>(std::min<std::int64_t>(k, n));
  const auto N = static_cast<std::size_t>(n);
  // A fixed pseudo-random start vector (a hash of the index, components in [-1, 1)),
  // normalised: its spectral measure (the Ritz weights) estimates the density of states.
  std::vector<double> v(N), vp(N, 0.0), w(N);
  double nv = 0;
  for (std::size_t i = 0; i < N; ++i) {
    std::uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    v[i] = 2.0 * static_cast<double>(h % 1000003) / 1000003.0 - 1.0;
    nv += v[i] * v[i];
  }
  for (auto& x : v) x /= std::sqrt(nv);
  std::vector<double> alpha, beta;
  double bprev = 0;
  for (int j = 0; j < k; ++j) {
    op(v, w);
    double a = 0;
    for (std::size_t i = 0; i < N; ++i) a += w[i] * v[i];
    double nb = 0;
    for (std::size_t i = 0; i < N; ++i) {
      w[i] -= a * v[i] + bprev * vp[i];
      nb += w[i] * w[i];
    }
    nb = std::sqrt(nb);
    alpha.push_back(a);
    beta.push_back(nb);
    if (!std::isfinite(a) || !std::isfinite(nb)) break;
    if (nb <= 1e-12 * std::max(1.0, std::abs(a))) break;  // an invariant subspace: exact
    for (std::size_t i = 0; i < N; ++i) {
      vp[i] = v[i];
      v[i] = w[i] / nb;
    }
    bprev = nb;
  }
  const int m = static_cast<int>(alpha.size());
  b.steps = m;
  std::vector<double> d = alpha, e(beta.begin(), beta.end() - 1),
                      z(static_cast<std::size_t>(m) * m),
                      work(static_cast<std::size_t>(std::max(1, 2 * m - 2)));
  int info = 0;
  if (m > 0) dstev_("V", &m, d.data(), e.data(), z.data(), &m, work.data(), &info);
  if (m == 0 || info != 0 || !std::isfinite(d[0])) {
    b.lo = b.ritz_min = -INFINITY;
    b.hi = b.ritz_max = INFINITY;
    return b;
  }
  // Residual norm of a Ritz pair: |beta_m * last component of its eigenvector|.
  const double bl = beta.back();
  const double r0 = std::abs(bl * z[static_cast<std::size_t>(m - 1)]);
  const double r1 =
      std::abs(bl * z[static_cast<std::size_t>(m - 1) * m + static_cast<std::size_t>(m - 1)]);
  b.ritz_min = d[0];
  b.ritz_max = d[static_cast<std::size_t>(m - 1)];
  for (int i = 0; i < m; ++i) {
    b.ritz.push_back(d[static_cast<std::size_t>(i)]);
    const double w0 = z[static_cast<std::size_t>(i) * m];
    b.weight.push_back(w0 * w0);
  }
  b.lo = b.ritz_min - r0;
  b.hi = b.ritz_max + r1;
  return b;
}

template <class M>
SpectralBounds lanczos_bounds(Algebra<M>& alg, const M& a, int k) {
  return lanczos([&](const std::vector<double>& x, std::vector<double>& y) { alg.matvec(a, x, y); },
                 Algebra<M>::n(a), k);
}

template SpectralBounds lanczos_bounds(DenseAlgebra&, const dense::DistMatrix<double>&, int);
template SpectralBounds lanczos_bounds(SparseAlgebra&, const sparse::BlockSparseMatrix<double>&,
                                       int);

}  // namespace tessel::solvers

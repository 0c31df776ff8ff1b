#pragma once
// Helpers shared by the MPI tests: random layouts and the serial reference multiply.
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/layout/grid_shape.hpp"

namespace tessel::testing {

extern "C" {
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*,
            const double*, const int*, const double*, const int*, const double*, double*,
            const int*);
void zgemm_(const char*, const char*, const int*, const int*, const int*,
            const std::complex<double>*, const std::complex<double>*, const int*,
            const std::complex<double>*, const int*, const std::complex<double>*,
            std::complex<double>*, const int*);
}

/// Serial reference: C = alpha op(A) op(B) + beta C on full column-major arrays.
inline void ref_gemm(char ta, char tb, int m, int n, int k, double al, const double* a, int lda,
                     const double* b, int ldb, double be, double* c, int ldc) {
  if (ta == 'C') ta = 'T';
  if (tb == 'C') tb = 'T';
  if (m && n) dgemm_(&ta, &tb, &m, &n, &k, &al, a, &lda, b, &ldb, &be, c, &ldc);
}
inline void ref_gemm(char ta, char tb, int m, int n, int k, std::complex<double> al,
                     const std::complex<double>* a, int lda, const std::complex<double>* b, int ldb,
                     std::complex<double> be, std::complex<double>* c, int ldc) {
  if (m && n) zgemm_(&ta, &tb, &m, &n, &k, &al, a, &lda, b, &ldb, &be, c, &ldc);
}

template <class T>
T random_value(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if constexpr (std::is_same_v<T, double>)
    return u(rng);
  else
    return T(u(rng), u(rng));
}

/// A grid of p ranks (pick odd: of p - 1, leaving a rank idle), the most square one, column-
/// heavy (pick % 3 == 0: row-heavy). Same on all ranks.
inline std::pair<int, int> grid_for(int p, int pick) {
  const int q = p - (pick % 2 == 1 && p > 1 ? 1 : 0);
  const int r = layout::most_square_grid(q).first;
  return pick % 3 == 0 ? std::make_pair(r, q / r) : std::make_pair(q / r, r);
}

/// A random block-cyclic layout of m x n over some grid of at most p ranks (same on all ranks
/// when rng is seeded the same).
inline layout::Layout random_layout(std::mt19937& rng, std::int64_t m, std::int64_t n, int p) {
  int q = 1 + static_cast<int>(rng() % static_cast<unsigned>(p));  // ranks in the grid
  std::vector<int> divs;
  for (int d = 1; d <= q; ++d)
    if (q % d == 0) divs.push_back(d);
  int pr = divs[rng() % divs.size()], pc = q / pr;
  std::int64_t mb = 1 + rng() % 9, nb = 1 + rng() % 9;
  int rsrc = static_cast<int>(rng() % static_cast<unsigned>(pr));
  int csrc = static_cast<int>(rng() % static_cast<unsigned>(pc));
  // a random permutation of ranks for the grid positions
  std::vector<int> ranks(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) ranks[static_cast<std::size_t>(i)] = i;
  std::shuffle(ranks.begin(), ranks.end(), rng);
  ranks.resize(static_cast<std::size_t>(q));
  return layout::Layout::block_cyclic(m, n, mb, nb, pr, pc, rsrc, csrc, p, ranks);
}

/// ||a - b||_F; +infinity when the sizes differ (a short or empty result never passes a
/// tolerance check).
template <class T>
double frob_diff(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::norm(a[i] - b[i]);
  return std::sqrt(s);
}
template <class T>
double frob(const std::vector<T>& a) {
  double s = 0;
  for (const auto& x : a) s += std::norm(x);
  return std::sqrt(s);
}

/// The whole matrix, column-major, on every rank: each rank writes its local elements into a
/// zeroed array and the arrays are summed (allreduce). Independent of redistribute/gather.
template <class T>
std::vector<T> gather_all(const Context& ctx, const dense::DistMatrix<T>& x) {
  std::vector<T> full(static_cast<std::size_t>(x.rows() * x.cols()), T(0));
  const_cast<dense::DistMatrix<T>&>(x).for_each_local([&](std::int64_t i, std::int64_t j, T& v) {
    full[static_cast<std::size_t>(j * x.rows() + i)] = v;
  });
  const int per = static_cast<int>(sizeof(T) / sizeof(double));
  ctx.comm().allreduce(reinterpret_cast<double*>(full.data()), static_cast<int>(full.size()) * per,
                       MPI_SUM);
  return full;
}

/// The owner rank of every element of `l` (column-major, -1 where nobody holds it), on every
/// rank, from each rank's own elements (DistMatrix::for_each_local) and one allreduce.
inline std::vector<int> owner_map(const Context& ctx, const layout::Layout& l) {
  std::vector<int> own(static_cast<std::size_t>(l.rows() * l.cols()), -1);
  dense::DistMatrix<double> x(ctx, l);
  x.for_each_local([&](std::int64_t i, std::int64_t j, double&) {
    own[static_cast<std::size_t>(j * l.rows() + i)] = ctx.rank();
  });
  ctx.comm().allreduce(own.data(), static_cast<int>(own.size()), MPI_MAX);
  return own;
}

/// What `rank` sends and receives when every element moves from its owner in `src` to its
/// owner in `dst` (owner maps of owner_map): counted element by element, independent of the
/// library's redistribution plan (layout::redist_volume).
struct BruteVolume {
  std::int64_t send_elems = 0, recv_elems = 0;
  int send_msgs = 0, recv_msgs = 0;
};
inline BruteVolume brute_volume(const std::vector<int>& src, const std::vector<int>& dst, int rank,
                                int p) {
  BruteVolume v;
  std::vector<char> to(static_cast<std::size_t>(p), 0), from(to);
  for (std::size_t e = 0; e < src.size(); ++e) {
    const int s = src[e], d = dst[e];
    if (s < 0 || d < 0 || s == d) continue;
    if (s == rank) {
      ++v.send_elems;
      to[static_cast<std::size_t>(d)] = 1;
    }
    if (d == rank) {
      ++v.recv_elems;
      from[static_cast<std::size_t>(s)] = 1;
    }
  }
  for (char c : to) v.send_msgs += c;
  for (char c : from) v.recv_msgs += c;
  return v;
}

}  // namespace tessel::testing

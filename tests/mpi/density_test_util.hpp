#pragma once
// Helpers of the density-matrix tests: dense and block-sparse copies of a full matrix held on
// every rank, and the gathered dense matrix of either.
#include <cstdint>
#include <vector>

#include "tessel/dense/dist_matrix.hpp"
#include "tessel/sparse/block_sparse.hpp"
#include "tessel/sparse/convert.hpp"

namespace tessel::testing {

/// A DistMatrix (block-cyclic, nb 8 on a 1 x p grid) from the full column-major n x n `a`
/// held on every rank.
inline dense::DistMatrix<double> dense_of(const Context& ctx, const std::vector<double>& a,
                                          std::int64_t n) {
  auto lay = layout::Layout::block_cyclic(n, n, 8, 8, 1, ctx.size(), 0, 0, ctx.size());
  dense::DistMatrix<double> m(ctx, lay);
  m.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
    v = a[static_cast<std::size_t>(j * n + i)];
  });
  return m;
}

/// The block-sparse matrix of `a` on Distribution::random over the default grid, keeping the
/// nonzero blocks.
inline sparse::BlockSparseMatrix<double> sparse_of(const Context& ctx, const std::vector<double>& a,
                                                   const std::vector<int>& sizes) {
  sparse::BlockSizes bs(sizes);
  auto g = sparse::Distribution::default_grid(ctx.size());
  auto dist = sparse::Distribution::random(bs, bs, g.first, g.second);
  return sparse::from_dense(ctx, dense_of(ctx, a, bs.extent()), dist);
}

/// The whole matrix, column-major, on every rank.
inline std::vector<double> full_of(const Context& ctx, const dense::DistMatrix<double>& m) {
  const std::int64_t n = m.rows();
  std::vector<double> f(static_cast<std::size_t>(n * m.cols()), 0.0);
  const_cast<dense::DistMatrix<double>&>(m).for_each_local(
      [&](std::int64_t i, std::int64_t j, double& v) {
        f[static_cast<std::size_t>(j * n + i)] = v;
      });
  ctx.comm().allreduce(f.data(), static_cast<int>(f.size()), MPI_SUM);
  return f;
}
inline std::vector<double> full_of(const Context& ctx, const sparse::BlockSparseMatrix<double>& m) {
  auto lay =
      layout::Layout::block_cyclic(m.rows(), m.cols(), 8, 8, 1, ctx.size(), 0, 0, ctx.size());
  return full_of(ctx, sparse::to_dense(ctx, m, lay));
}

/// Block sizes 5, 1, 1 repeated (STO-3G water: O 1s 2s 2p, H 1s), truncated or padded to n.
inline std::vector<int> water_sizes(std::int64_t n) {
  std::vector<int> s;
  std::int64_t t = 0;
  for (int k = 0; t < n; ++k) {
    int b = (k % 3 == 0) ? 5 : 1;
    if (t + b > n) b = static_cast<int>(n - t);
    s.push_back(b);
    t += b;
  }
  return s;
}

}  // namespace tessel::testing

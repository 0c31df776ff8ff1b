#pragma once
// Helpers of the block-sparse tests: random block sizes and distributions, and a dense
// reference (column-major, full) assembled on every rank from the same seeded choices.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tessel/dense/dist_matrix.hpp"
#include "tessel/sparse/block_sparse.hpp"
#include "tessel/sparse/convert.hpp"

namespace tessel::testing {

/// `n` block sizes drawn from {1, 4, 5, 13, 23} (the atomic sizes of the issue).
inline std::vector<int> random_sizes(std::mt19937& rng, int n) {
  static const int pick[] = {1, 4, 5, 13, 23};
  std::vector<int> s(static_cast<std::size_t>(n));
  for (auto& x : s) x = pick[rng() % 5];
  return s;
}

/// The grids tried at p ranks: the default, 1 x p and p x 1 (deduplicated).
inline std::vector<std::pair<int, int>> grids(int p) {
  std::vector<std::pair<int, int>> g{sparse::Distribution::default_grid(p)};
  if (g[0] != std::make_pair(1, p)) g.emplace_back(1, p);
  if (p > 1) g.emplace_back(p, 1);
  return g;
}

/// How the distribution is made: DBCSR's random default, caller-given random entries, or
/// caller-given with every block row on process row 0 and every block column on process
/// column 0 (all ranks but 0 own nothing).
enum class DistKind { Random, Given, AllOnZero };

inline sparse::Distribution make_dist(DistKind kind, const std::vector<int>& rs,
                                      const std::vector<int>& cs, int pr, int pc,
                                      std::mt19937& rng) {
  sparse::BlockSizes r(rs), c(cs);
  if (kind == DistKind::Random) return sparse::Distribution::random(r, c, pr, pc, rng());
  std::vector<int> rd(rs.size(), 0), cd(cs.size(), 0);
  if (kind == DistKind::Given) {
    for (auto& x : rd) x = static_cast<int>(rng() % static_cast<unsigned>(pr));
    for (auto& x : cd) x = static_cast<int>(rng() % static_cast<unsigned>(pc));
  }
  return sparse::Distribution(r, c, pr, pc, rd, cd);
}

/// A dense reference of a block-sparse matrix: full column-major values and which blocks are
/// stored.
struct DenseRef {
  sparse::BlockSizes rows, cols;
  std::vector<double> a;       // rows.extent() x cols.extent(), column-major
  std::vector<char> stored;    // [brow * cols.count() + bcol]
  std::int64_t m() const { return rows.extent(); }
  std::int64_t n() const { return cols.extent(); }
  bool has(int br, int bc) const { return stored[static_cast<std::size_t>(br) * cols.count() + bc] != 0; }
  double& at(std::int64_t i, std::int64_t j) { return a[static_cast<std::size_t>(j * m() + i)]; }
  double at(std::int64_t i, std::int64_t j) const { return a[static_cast<std::size_t>(j * m() + i)]; }
  /// Block (br, bc) column-major.
  std::vector<double> block(int br, int bc) const {
    std::vector<double> b;
    for (int j = 0; j < cols.size(bc); ++j)
      for (int i = 0; i < rows.size(br); ++i) b.push_back(at(rows.offset(br) + i, cols.offset(bc) + j));
    return b;
  }
};

inline DenseRef empty_ref(const sparse::Distribution& d) {
  DenseRef r{d.row_blocks(), d.col_blocks(), {}, {}};
  r.a.assign(static_cast<std::size_t>(r.m() * r.n()), 0.0);
  r.stored.assign(static_cast<std::size_t>(d.row_blocks().count()) * d.col_blocks().count(), 0);
  return r;
}

/// Fills `a` (empty, on dist) with random blocks (probability `fill`), each put by a random
/// rank (often not the owner) with accumulate = false, then finalize(); returns the reference
/// built on every rank from the same draws.
inline DenseRef fill_random(sparse::BlockSparseMatrix<double>& a, std::mt19937& rng, double fill,
                            int nranks) {
  const auto& d = a.distribution();
  DenseRef ref = empty_ref(d);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int br = 0; br < d.row_blocks().count(); ++br)
    for (int bc = 0; bc < d.col_blocks().count(); ++bc) {
      if (u(rng) * 0.5 + 0.5 >= fill) continue;
      const int putter = static_cast<int>(rng() % static_cast<unsigned>(nranks));
      std::vector<double> v(static_cast<std::size_t>(d.row_blocks().size(br)) * d.col_blocks().size(bc));
      for (auto& x : v) x = u(rng);
      ref.stored[static_cast<std::size_t>(br) * d.col_blocks().count() + bc] = 1;
      for (int j = 0; j < d.col_blocks().size(bc); ++j)
        for (int i = 0; i < d.row_blocks().size(br); ++i)
          ref.at(d.row_blocks().offset(br) + i, d.col_blocks().offset(bc) + j) =
              v[static_cast<std::size_t>(j) * d.row_blocks().size(br) + i];
      if (a.rank() == putter) a.put_block(br, bc, v.data());
    }
  a.finalize();
  return ref;
}

/// The whole dense matrix of `a` on every rank (to_dense into a block-cyclic layout, then
/// gathered on rank 0 and broadcast with plain MPI: test plumbing, not the library).
inline std::vector<double> dense_of(const Context& ctx, const sparse::BlockSparseMatrix<double>& a) {
  auto [pr, pc] = sparse::Distribution::default_grid(ctx.size());
  auto lay = layout::Layout::block_cyclic(a.rows(), a.cols(), 3, 2, pr, pc, 0, 0, ctx.size());
  auto full = dense::gather(ctx, sparse::to_dense(ctx, a, lay), 0);
  full.resize(static_cast<std::size_t>(a.rows() * a.cols()));
  if (!full.empty()) MPI_Bcast(full.data(), static_cast<int>(full.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return full;
}

inline double max_abs_diff(const std::vector<double>& x, const std::vector<double>& y) {
  double m = x.size() == y.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

}  // namespace tessel::testing

#pragma once
// Helpers of the block-sparse tests: random block sizes and distributions, and a dense
// reference (column-major, full) assembled on every rank from the same seeded choices.
#include <gtest/gtest.h>
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
  std::vector<double> a;     // rows.extent() x cols.extent(), column-major
  std::vector<char> stored;  // [brow * cols.count() + bcol]
  std::int64_t m() const { return rows.extent(); }
  std::int64_t n() const { return cols.extent(); }
  bool has(int br, int bc) const {
    return stored[static_cast<std::size_t>(br) * cols.count() + bc] != 0;
  }
  double& at(std::int64_t i, std::int64_t j) { return a[static_cast<std::size_t>(j * m() + i)]; }
  double at(std::int64_t i, std::int64_t j) const {
    return a[static_cast<std::size_t>(j * m() + i)];
  }
  /// Block (br, bc) column-major.
  std::vector<double> block(int br, int bc) const {
    std::vector<double> b;
    for (int j = 0; j < cols.size(bc); ++j)
      for (int i = 0; i < rows.size(br); ++i)
        b.push_back(at(rows.offset(br) + i, cols.offset(bc) + j));
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
      std::vector<double> v(static_cast<std::size_t>(d.row_blocks().size(br)) *
                            d.col_blocks().size(bc));
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
inline std::vector<double> dense_of(const Context& ctx,
                                    const sparse::BlockSparseMatrix<double>& a) {
  auto [pr, pc] = sparse::Distribution::default_grid(ctx.size());
  auto lay = layout::Layout::block_cyclic(a.rows(), a.cols(), 3, 2, pr, pc, 0, 0, ctx.size());
  auto full = dense::gather(ctx, sparse::to_dense(ctx, a, lay), 0);
  full.resize(static_cast<std::size_t>(a.rows() * a.cols()));
  if (!full.empty())
    MPI_Bcast(full.data(), static_cast<int>(full.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return full;
}

inline double max_abs_diff(const std::vector<double>& x, const std::vector<double>& y) {
  double m = x.size() == y.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

/// The scale of a relative error: max |x_i|, at least 1.
inline double max_abs_or_one(const std::vector<double>& x) {
  double m = 1;
  for (double v : x) m = std::max(m, std::abs(v));
  return m;
}

using sparse::BlockSizes;
using sparse::BlockSparseMatrix;
using sparse::Distribution;

inline int world_size() {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

// Every local block equals the reference, no block is missing or extra, and the local CSR
// follows the header's conventions (rows = the process row's block rows, sorted columns,
// norms = Frobenius norms).
inline void check_storage(const BlockSparseMatrix<double>& a, const DenseRef& ref) {
  const auto& d = a.distribution();
  ASSERT_TRUE(a.is_finalized());
  auto loc = a.local();
  ASSERT_EQ(*loc.brows, d.local_block_rows(a.prow()));
  std::int64_t count = 0;
  for (std::size_t i = 0; i < loc.brows->size(); ++i) {
    for (auto k = (*loc.row_ptr)[i]; k < (*loc.row_ptr)[i + 1]; ++k) {
      const int br = (*loc.brows)[i], bc = (*loc.col)[static_cast<std::size_t>(k)];
      if (k > (*loc.row_ptr)[i]) EXPECT_LT((*loc.col)[static_cast<std::size_t>(k) - 1], bc);
      EXPECT_EQ(d.owner(br, bc), a.rank());
      EXPECT_TRUE(ref.has(br, bc)) << "extra block (" << br << ", " << bc << ")";
      auto want = ref.block(br, bc);
      const double* x = loc.data + (*loc.offset)[static_cast<std::size_t>(k)];
      double s = 0;
      for (std::size_t e = 0; e < want.size(); ++e) {
        EXPECT_NEAR(x[e], want[e], 1e-13);
        s += x[e] * x[e];
      }
      EXPECT_NEAR((*loc.norm)[static_cast<std::size_t>(k)], std::sqrt(s), 1e-12);
    }
  }
  for (int br = 0; br < d.row_blocks().count(); ++br)
    for (int bc = 0; bc < d.col_blocks().count(); ++bc) {
      const double* x = a.get_block(br, bc);
      const bool mine = d.owner(br, bc) == a.rank();
      if (mine && ref.has(br, bc)) {
        ++count;
        ASSERT_NE(x, nullptr) << "missing block (" << br << ", " << bc << ")";
        auto want = ref.block(br, bc);
        for (std::size_t e = 0; e < want.size(); ++e) EXPECT_NEAR(x[e], want[e], 1e-13);
      } else {
        EXPECT_EQ(x, nullptr) << "block (" << br << ", " << bc << ")";
      }
    }
  EXPECT_EQ(count, a.local_nblocks());
}

// The distributions every test loops over at this rank count: for each grid, the random
// default and a caller-given one, plus one where all ranks but 0 own nothing.
struct Setup {
  Distribution dist;
  const char* what;
};
// square = the same block sizes along rows and columns (for trace and shift).
inline std::vector<Setup> setups(std::mt19937& rng, int p, bool square = false) {
  std::vector<Setup> out;
  for (auto [pr, pc] : grids(p)) {
    auto rs = random_sizes(rng, 7), cs = square ? rs : random_sizes(rng, 5);
    out.push_back({make_dist(DistKind::Random, rs, cs, pr, pc, rng), "random"});
    out.push_back({make_dist(DistKind::Given, cs, rs, pr, pc, rng), "given"});
  }
  auto [pr, pc] = Distribution::default_grid(p);
  auto s = random_sizes(rng, 6);
  out.push_back({make_dist(DistKind::AllOnZero, s, s, pr, pc, rng), "all on rank 0"});
  // fewer blocks than ranks along both dimensions
  if (square)
    out.push_back({make_dist(DistKind::Random, {23}, {23}, pr, pc, rng), "tiny"});
  else
    out.push_back({make_dist(DistKind::Random, {23}, {1, 13}, pr, pc, rng), "tiny"});
  return out;
}

/// The reference of A^T.
inline DenseRef transposed(const DenseRef& r) {
  DenseRef t{r.cols, r.rows, std::vector<double>(r.a.size()), std::vector<char>(r.stored.size())};
  for (std::int64_t j = 0; j < r.n(); ++j)
    for (std::int64_t i = 0; i < r.m(); ++i) t.at(j, i) = r.at(i, j);
  for (int br = 0; br < r.rows.count(); ++br)
    for (int bc = 0; bc < r.cols.count(); ++bc)
      t.stored[static_cast<std::size_t>(bc) * r.rows.count() + br] = r.has(br, bc);
  return t;
}

/// Sets block (br, bc) of the reference to `v` (column-major) and marks it stored or not.
inline void set_block(DenseRef& r, int br, int bc, const std::vector<double>& v, bool stored) {
  for (int j = 0; j < r.cols.size(bc); ++j)
    for (int i = 0; i < r.rows.size(br); ++i)
      r.at(r.rows.offset(br) + i, r.cols.offset(bc) + j) =
          v[static_cast<std::size_t>(j) * r.rows.size(br) + i];
  r.stored[static_cast<std::size_t>(br) * r.cols.count() + bc] = stored;
}

inline std::int64_t count_stored(const DenseRef& r) {
  std::int64_t n = 0;
  for (char s : r.stored) n += s;
  return n;
}

}  // namespace tessel::testing

// to_tiles / from_tiles (tiling.hpp) against the dense reference: the tiled matrix has the
// same elements, stores exactly the tiles that hold a block, comes back block for block, and
// a product computed in tiles equals the product of the dense references.
#include <gtest/gtest.h>
#include <mpi.h>

#include <random>

#include "sparse_test_util.hpp"
#include "tessel/core/context.hpp"
#include "tessel/sparse/multiply.hpp"
#include "tessel/sparse/tiling.hpp"

using namespace tessel;
using namespace tessel::sparse;
using namespace tessel::testing;

namespace {
// Tiles stored = the tiles holding at least one stored fine block of the reference.
std::int64_t tiles_holding(const DenseRef& ref, const Tiling& rt, const Tiling& ct) {
  std::vector<char> hit(static_cast<std::size_t>(rt.tiles().count()) * ct.tiles().count(), 0);
  for (int br = 0; br < ref.rows.count(); ++br)
    for (int bc = 0; bc < ref.cols.count(); ++bc)
      if (ref.has(br, bc))
        hit[static_cast<std::size_t>(rt.tile_of(br)) * ct.tiles().count() + ct.tile_of(bc)] = 1;
  std::int64_t n = 0;
  for (char h : hit) n += h;
  return n;
}
}  // namespace

TEST(Tiling, RoundTripKeepsEveryElementAndBlock) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(41);
  for (const auto& s : setups(rng, ctx.size()))
    for (int target : {1, 9, 30, 1000}) {
      SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe() + ", target " +
                   std::to_string(target));
      BlockSparseMatrix<double> a(ctx, s.dist, "A");
      DenseRef ref = fill_random(a, rng, 0.4, ctx.size());
      auto rt = Tiling::contiguous(s.dist.row_blocks(), target);
      auto ct = Tiling::contiguous(s.dist.col_blocks(), target);
      auto td = Distribution::random(rt.tiles(), ct.tiles(), s.dist.pr(), s.dist.pc(), 7);
      auto t = to_tiles(ctx, a, rt, ct, td);
      EXPECT_TRUE(t.is_finalized());
      EXPECT_EQ(nblocks(ctx, t), tiles_holding(ref, rt, ct));
      EXPECT_EQ(max_abs_diff(dense_of(ctx, t), ref.a), 0.0);
      auto back = from_tiles(ctx, t, rt, ct, s.dist);
      check_storage(back, ref);
    }
}

TEST(Tiling, FromTilesDropsFineBlocksBelowTheThreshold) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(42);
  for (const auto& s : setups(rng, ctx.size())) {
    SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe());
    BlockSparseMatrix<double> a(ctx, s.dist, "A");
    DenseRef ref = fill_random(a, rng, 0.6, ctx.size());
    auto rt = Tiling::contiguous(s.dist.row_blocks(), 24);
    auto ct = Tiling::contiguous(s.dist.col_blocks(), 24);
    auto t = to_tiles(ctx, a, rt, ct,
                      Distribution::random(rt.tiles(), ct.tiles(), s.dist.pr(), s.dist.pc(), 3));
    const double cut = 1.5;  // blocks of 1 element (|x| < 1) always go, large blocks stay
    auto back = from_tiles(ctx, t, rt, ct, s.dist, cut);
    DenseRef want = ref;
    for (int br = 0; br < ref.rows.count(); ++br)
      for (int bc = 0; bc < ref.cols.count(); ++bc) {
        if (!ref.has(br, bc)) continue;
        double ss = 0;
        for (double v : ref.block(br, bc)) ss += v * v;
        if (std::sqrt(ss) >= cut) continue;
        want.stored[static_cast<std::size_t>(br) * ref.cols.count() + bc] = 0;
        for (int j = 0; j < ref.cols.size(bc); ++j)
          for (int i = 0; i < ref.rows.size(br); ++i)
            want.at(ref.rows.offset(br) + i, ref.cols.offset(bc) + j) = 0;
      }
    check_storage(back, want);
  }
}

TEST(Tiling, ProductInTilesEqualsTheDenseProduct) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(43);
  for (const auto& s : setups(rng, ctx.size(), true)) {
    SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe());
    BlockSparseMatrix<double> a(ctx, s.dist, "A"), b(ctx, s.dist, "B");
    DenseRef ra = fill_random(a, rng, 0.5, ctx.size());
    DenseRef rb = fill_random(b, rng, 0.5, ctx.size());
    auto tl = Tiling::contiguous(s.dist.row_blocks(), 20);
    auto td = Distribution::random(tl.tiles(), tl.tiles(), s.dist.pr(), s.dist.pc(), 5);
    auto ta = to_tiles(ctx, a, tl, tl, td), tb = to_tiles(ctx, b, tl, tl, td);
    BlockSparseMatrix<double> tc(ctx, td, "C");
    multiply(ctx, 1.0, SpOp::N, ta, SpOp::T, tb, 0.0, tc);
    auto c = from_tiles(ctx, tc, tl, tl, s.dist);
    const std::int64_t n = ra.m();
    std::vector<double> want(static_cast<std::size_t>(n * n), 0.0);
    double scale = 1;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t k = 0; k < n; ++k)
        for (std::int64_t i = 0; i < n; ++i) {
          want[static_cast<std::size_t>(j * n + i)] += ra.at(i, k) * rb.at(j, k);
          scale += std::abs(ra.at(i, k) * rb.at(j, k));
        }
    EXPECT_LE(max_abs_diff(dense_of(ctx, c), want), 1e-13 * scale);
  }
}

TEST(Tiling, MismatchedStructuresAreRefusedOnEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  BlockSizes bs({4, 1, 1, 4, 1, 1});
  auto d = Distribution::random(bs, bs, pr, pc);
  BlockSparseMatrix<double> a(ctx, d, "A");
  auto tl = Tiling::contiguous(bs, 6);
  auto other = Tiling::contiguous(BlockSizes({4, 1, 1}), 6);
  auto td = Distribution::random(tl.tiles(), tl.tiles(), pr, pc);
  EXPECT_THROW(to_tiles(ctx, a, other, tl, td), DimensionMismatch);
  EXPECT_THROW(to_tiles(ctx, a, tl, tl, d), DimensionMismatch);    // target not in tiles
  EXPECT_THROW(from_tiles(ctx, a, tl, tl, d), DimensionMismatch);  // a not in tiles
  auto t = to_tiles(ctx, a, tl, tl, td);
  EXPECT_THROW(from_tiles(ctx, t, tl, tl, d, -1.0), InputError);
  if (ctx.size() > 1 && ctx.rank() == 1) {
    std::vector<double> v(16, 1.0);
    a.put_block(0, 0, v.data());  // not finalized on one rank only
  }
  if (ctx.size() > 1) { EXPECT_THROW(to_tiles(ctx, a, tl, tl, td), Error); }
}

// cluster_tiling on a distributed matrix whose strong blocks join groups of 6 shuffled blocks
// (the rest 1e-8 of them, below the 1e-3 cut): every rank gets the same tiles, and they are
// the groups.
TEST(Tiling, ClusterTilingFindsTheStronglyCoupledGroups) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  const int ng = 5, per = 6, n = ng * per;
  // member b of the group order sits at block (7b + 3) mod n; every group has three blocks
  // of 4 and three of 1 (15 elements)
  std::vector<int> group(static_cast<std::size_t>(n)), sizes(group.size());
  for (int b = 0; b < n; ++b) {
    group[static_cast<std::size_t>((b * 7 + 3) % n)] = b / per;
    sizes[static_cast<std::size_t>((b * 7 + 3) % n)] = (b % per) % 2 ? 1 : 4;
  }
  BlockSizes bs(sizes);
  auto d = Distribution::random(bs, bs, pr, pc, 11);
  BlockSparseMatrix<double> s(ctx, d, "S");
  if (ctx.rank() == 0)
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) {
        const bool same = group[static_cast<std::size_t>(r)] == group[static_cast<std::size_t>(c)];
        std::vector<double> v(static_cast<std::size_t>(bs.size(r)) * bs.size(c), r == c ? 1.0
                                                                                 : same ? 0.3
                                                                                        : 1e-8);
        s.put_block(r, c, v.data());
      }
  s.finalize();
  int target = 0;
  for (int b = 0; b < n; ++b)
    if (group[static_cast<std::size_t>(b)] == 0) target += bs.size(b);
  auto t = cluster_tiling(ctx, s, target);
  std::vector<int> mine(static_cast<std::size_t>(n)), root(mine.size());
  for (int b = 0; b < n; ++b) mine[static_cast<std::size_t>(b)] = t.tile_of(b);
  root = mine;
  MPI_Bcast(root.data(), n, MPI_INT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(mine, root);
  // blocks of one group share a tile, blocks of different groups do not
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      EXPECT_EQ(t.tile_of(a) == t.tile_of(b),
                group[static_cast<std::size_t>(a)] == group[static_cast<std::size_t>(b)])
          << a << " " << b;
  BlockSparseMatrix<double> rect(
      ctx, Distribution::random(bs, BlockSizes(std::vector<int>{2, 2}), pr, pc), "R");
  EXPECT_THROW(cluster_tiling(ctx, rect, 8), DimensionMismatch);
}

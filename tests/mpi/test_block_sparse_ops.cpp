// The algebra of BlockSparseMatrix against the same numbers computed densely (serially, on
// every rank, from the reference assembled from the same seeded draws).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>

#include "sparse_test_util.hpp"
#include "tessel/core/context.hpp"
#include "tessel/sparse/block_sparse.hpp"
#include "tessel/sparse/convert.hpp"

using namespace tessel;
using namespace tessel::sparse;
using namespace tessel::testing;

TEST(BlockSparseOps, ReductionsAgainstDense) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(21);
  for (bool square : {false, true})
    for (const auto& s : setups(rng, ctx.size(), square)) {
      SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe());
      BlockSparseMatrix<double> a(ctx, s.dist, "A"), b(ctx, s.dist, "B");
      DenseRef ra = fill_random(a, rng, 0.5, ctx.size());
      DenseRef rb = fill_random(b, rng, 0.4, ctx.size());
      const auto& d = s.dist;
      EXPECT_EQ(nblocks(ctx, a), count_stored(ra));
      const double positions = static_cast<double>(d.row_blocks().count()) * d.col_blocks().count();
      EXPECT_DOUBLE_EQ(occupation(ctx, a), count_stored(ra) / positions);
      double n2 = 0, ab = 0;
      for (std::size_t e = 0; e < ra.a.size(); ++e) {
        n2 += ra.a[e] * ra.a[e];
        ab += ra.a[e] * rb.a[e];
      }
      EXPECT_NEAR(frobenius_norm(ctx, a), std::sqrt(n2), 1e-12 * (1 + std::sqrt(n2)));
      EXPECT_NEAR(dot(ctx, a, b), ab, 1e-12 * (1 + n2));
      if (square) {
        double tr = 0;
        for (std::int64_t i = 0; i < ra.m(); ++i) tr += ra.at(i, i);
        EXPECT_NEAR(trace(ctx, a), tr, 1e-12 * (1 + std::abs(tr)));
      }
    }
  // an empty matrix: 0 blocks, occupation 0 (also for 0 x 0)
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  BlockSparseMatrix<double> e(ctx, Distribution::random(BlockSizes(), BlockSizes(), pr, pc));
  EXPECT_EQ(nblocks(ctx, e), 0);
  EXPECT_EQ(occupation(ctx, e), 0.0);
  EXPECT_EQ(frobenius_norm(ctx, e), 0.0);
  EXPECT_EQ(trace(ctx, e), 0.0);
}

TEST(BlockSparseOps, LocalUpdatesAgainstDense) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(22);
  for (bool square : {false, true})
    for (const auto& s : setups(rng, ctx.size(), square)) {
      SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe());
      const auto& d = s.dist;
      BlockSparseMatrix<double> a(ctx, d, "A"), b(ctx, d, "B");
      DenseRef ra = fill_random(a, rng, 0.5, ctx.size());
      DenseRef rb = fill_random(b, rng, 0.4, ctx.size());

      // scale
      BlockSparseMatrix<double> x = a;
      scale(x, -1.5);
      DenseRef rx = ra;
      for (auto& v : rx.a) v *= -1.5;
      check_storage(x, rx);

      // add: alpha A + beta B on the union of the sparsities
      x = a;
      add(x, 0.5, b, -2.0);
      rx = ra;
      for (std::size_t e = 0; e < rx.a.size(); ++e) rx.a[e] = 0.5 * ra.a[e] - 2.0 * rb.a[e];
      for (std::size_t k = 0; k < rx.stored.size(); ++k)
        rx.stored[k] = ra.stored[k] || rb.stored[k];
      check_storage(x, rx);
      EXPECT_LE(max_abs_diff(dense_of(ctx, x), rx.a), 1e-14);
      EXPECT_EQ(nblocks(ctx, x), count_stored(rx));

      // filter: drop the blocks of norm < eps
      const double eps = 2.0;
      x = a;
      filter(x, eps);
      rx = ra;
      for (int br = 0; br < d.row_blocks().count(); ++br)
        for (int bc = 0; bc < d.col_blocks().count(); ++bc) {
          if (!ra.has(br, bc)) continue;
          auto v = ra.block(br, bc);
          double n = 0;
          for (double y : v) n += y * y;
          if (std::sqrt(n) < eps) set_block(rx, br, bc, std::vector<double>(v.size(), 0.0), false);
        }
      check_storage(x, rx);
      x = a;
      filter(x, 0.0);  // drops nothing
      check_storage(x, ra);

      if (square) {  // shift: A + alpha I, missing diagonal blocks created
        x = a;
        shift(x, 3.0);
        rx = ra;
        for (std::int64_t i = 0; i < rx.m(); ++i) rx.at(i, i) += 3.0;
        for (int br = 0; br < d.row_blocks().count(); ++br)
          rx.stored[static_cast<std::size_t>(br) * d.col_blocks().count() + br] = 1;
        check_storage(x, rx);
        EXPECT_EQ(nblocks(ctx, x), count_stored(rx));
      }
    }
}

TEST(BlockSparseOps, TransposeRoundTrip) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(23);
  for (const auto& s : setups(rng, ctx.size())) {
    SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe());
    BlockSparseMatrix<double> a(ctx, s.dist, "A");
    DenseRef ra = fill_random(a, rng, 0.5, ctx.size());
    auto t = transpose(ctx, a);
    EXPECT_EQ(t.distribution(), s.dist.transposed());
    DenseRef rt = transposed(ra);
    check_storage(t, rt);
    EXPECT_LE(max_abs_diff(dense_of(ctx, t), rt.a), 0.0);
    auto tt = transpose(ctx, t);
    EXPECT_EQ(tt.distribution(), s.dist);
    check_storage(tt, ra);
    // onto a caller-chosen distribution of A^T (another grid shape)
    for (auto [pr, pc] : grids(ctx.size())) {
      auto to = Distribution::random(s.dist.col_blocks(), s.dist.row_blocks(), pr, pc, 7);
      auto t2 = transpose(ctx, a, to);
      EXPECT_EQ(t2.distribution(), to);
      check_storage(t2, rt);
    }
  }
}

TEST(BlockSparseOps, RedistributeRoundTripAndVolume) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(24);
  for (const auto& s : setups(rng, ctx.size())) {
    SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe());
    BlockSparseMatrix<double> a(ctx, s.dist, "A");
    DenseRef ra = fill_random(a, rng, 0.5, ctx.size());
    for (auto [pr, pc] : grids(ctx.size()))
      for (DistKind kind : {DistKind::Random, DistKind::Given}) {
        auto to =
            make_dist(kind, s.dist.row_blocks().sizes(), s.dist.col_blocks().sizes(), pr, pc, rng);
        // the byte formula: each of my blocks whose owner changes costs a 16-byte header + data
        std::int64_t want_bytes = 0, want_msgs = 0;
        std::vector<char> to_rank(static_cast<std::size_t>(ctx.size()), 0);
        a.for_each_block([&](int br, int bc, const double*, int r, int c) {
          const int o = to.owner(br, bc);
          if (o == ctx.rank()) return;
          want_bytes += 16 + 8 * static_cast<std::int64_t>(r) * c;
          to_rank[static_cast<std::size_t>(o)] = 1;
        });
        for (char x : to_rank) want_msgs += x;
        ctx.ledger().reset();
        auto b = redistribute(ctx, a, to);
        const auto got = ctx.ledger().total("sparse/redistribute");
        EXPECT_EQ(got.p2p_sent_bytes, want_bytes);
        EXPECT_EQ(got.p2p_sent_msgs, want_msgs);
        EXPECT_EQ(b.distribution(), to);
        check_storage(b, ra);
        auto back = redistribute(ctx, b, s.dist);
        check_storage(back, ra);
      }
  }
}

// ---- errors, expected on every rank ----

TEST(BlockSparseOpsErrors, MismatchedDistributions) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  BlockSizes r({4, 5, 1}), c({13, 23});
  BlockSparseMatrix<double> a(ctx, Distribution::random(r, c, pr, pc, 1), "A");
  BlockSparseMatrix<double> b(ctx, Distribution::random(r, c, pr, pc, 2), "B");
  BlockSparseMatrix<double> e(ctx, Distribution::random(r, r, pr, pc, 1), "E");
  if (a.distribution() != b.distribution()) {
    EXPECT_THROW(dot(ctx, a, b), LayoutMismatch);
    EXPECT_THROW(add(a, 1.0, b, 1.0), LayoutMismatch);
  }
  EXPECT_THROW(dot(ctx, a, e), LayoutMismatch);
  EXPECT_THROW(add(a, 1.0, e, 1.0), LayoutMismatch);
  EXPECT_THROW(trace(ctx, a), DimensionMismatch);  // not square in blocks
  EXPECT_THROW(shift(a, 1.0), DimensionMismatch);
  // redistribution: other block sizes, other rank count; transpose onto a wrong shape
  EXPECT_THROW(redistribute(ctx, a, Distribution::random(r, r, pr, pc)), DimensionMismatch);
  EXPECT_THROW(redistribute(ctx, a, Distribution::random(r, c, 1, ctx.size() + 1)),
               DimensionMismatch);
  EXPECT_THROW(transpose(ctx, a, Distribution::random(r, c, pr, pc)), DimensionMismatch);
  EXPECT_THROW(transpose(ctx, a, Distribution::random(c, r, 1, ctx.size() + 1)), DimensionMismatch);
}

TEST(BlockSparseOpsErrors, NegativeEps) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  BlockSparseMatrix<double> a(ctx, Distribution::random(BlockSizes({4}), BlockSizes({5}), pr, pc));
  EXPECT_THROW(filter(a, -1e-6), InputError);
}

TEST(BlockSparseOpsErrors, MovingAnUnfinalizedMatrixThrowsEverywhere) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  Distribution d = Distribution::random(BlockSizes({4, 5}), BlockSizes({5, 4}), pr, pc);
  BlockSparseMatrix<double> a(ctx, d, "A");
  std::vector<double> v(25, 1.0);
  if (ctx.rank() == ctx.size() - 1) a.put_block(1, 0, v.data());  // not finalized on one rank
  EXPECT_THROW(transpose(ctx, a), Error);
  EXPECT_THROW(redistribute(ctx, a, d), Error);
  a.finalize();
  EXPECT_NO_THROW(transpose(ctx, a));
}

// BlockSparseMatrix: construction, put/get/finalize, local CSR, dense conversion and the
// algebra, each against a dense reference assembled independently on every rank from the same
// seeded draws; random and caller-given distributions on square and non-square grids; error
// cases expected on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "sparse_test_util.hpp"
#include "tessel/core/context.hpp"
#include "tessel/sparse/block_sparse.hpp"
#include "tessel/sparse/convert.hpp"

using namespace tessel;
using namespace tessel::sparse;
using namespace tessel::testing;

TEST(BlockSparse, PutRemoteAndFinalize) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(11);
  for (const auto& s : setups(rng, ctx.size())) {
    SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe());
    BlockSparseMatrix<double> a(ctx, s.dist, "A");
    DenseRef ref = fill_random(a, rng, 0.5, ctx.size());
    check_storage(a, ref);
    EXPECT_LE(max_abs_diff(dense_of(ctx, a), ref.a), 0.0);
  }
}

TEST(BlockSparse, FinalizeLedgerMatchesTheByteFormula) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size(), me = ctx.rank();
  auto [pr, pc] = Distribution::default_grid(p);
  std::mt19937 rng(16);
  auto s = random_sizes(rng, 9);
  Distribution d = Distribution::random(BlockSizes(s), BlockSizes(s), pr, pc, 8);
  BlockSparseMatrix<double> a(ctx, d, "A");
  // rank r puts the blocks with (br + 2 bc) % p == r, some of them twice (accumulate)
  std::int64_t sent = 0;
  std::vector<char> peers(static_cast<std::size_t>(p), 0);
  for (int br = 0; br < d.row_blocks().count(); ++br)
    for (int bc = 0; bc < d.col_blocks().count(); ++bc) {
      if ((br + 2 * bc) % p != me) continue;
      std::vector<double> v(static_cast<std::size_t>(s[br]) * s[bc], 1.0);
      const int times = 1 + (br + bc) % 2;
      for (int t = 0; t < times; ++t) a.put_block(br, bc, v.data(), true);
      const int o = d.owner(br, bc);
      if (o != me) {
        sent += times * (16 + 8 * static_cast<std::int64_t>(v.size()));
        peers[static_cast<std::size_t>(o)] = 1;
      }
    }
  ctx.ledger().reset();
  a.finalize();
  const auto got = ctx.ledger().total("sparse/finalize");
  EXPECT_EQ(got.p2p_sent_bytes, sent);
  EXPECT_EQ(got.p2p_sent_msgs, std::count(peers.begin(), peers.end(), 1));
  // Context::agree's allreduce (one int, skipped on one rank) + the alltoall of counts
  EXPECT_EQ(got.coll_calls, p > 1 ? 2 : 1);
  EXPECT_EQ(got.coll_bytes, p > 1 ? 4 + 16 * (p - 1) : 0);
  // every stored value is the number of puts of its block
  a.for_each_block([&](int br, int bc, const double* x, int r, int c) {
    for (int e = 0; e < r * c; ++e) EXPECT_EQ(x[e], 1.0 + (br + bc) % 2);
  });
  EXPECT_EQ(nblocks(ctx, a), static_cast<std::int64_t>(s.size() * s.size()));
}

TEST(BlockSparse, AccumulateFromSeveralRanks) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(12);
  const int p = ctx.size();
  for (const auto& s : setups(rng, p)) {
    SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe());
    const auto& d = s.dist;
    BlockSparseMatrix<double> a(ctx, d, "A");
    DenseRef ref = empty_ref(d);
    std::uniform_real_distribution<double> u(-1, 1);
    // every stored block is put (accumulated) by 1..3 ranks, some of them twice
    for (int br = 0; br < d.row_blocks().count(); ++br)
      for (int bc = 0; bc < d.col_blocks().count(); ++bc) {
        if (rng() % 3 == 0) continue;
        ref.stored[static_cast<std::size_t>(br) * d.col_blocks().count() + bc] = 1;
        const int puts = 1 + static_cast<int>(rng() % 4);
        for (int t = 0; t < puts; ++t) {
          const int putter = static_cast<int>(rng() % static_cast<unsigned>(p));
          std::vector<double> v(static_cast<std::size_t>(d.row_blocks().size(br)) *
                                d.col_blocks().size(bc));
          for (auto& x : v) x = u(rng);
          for (int j = 0; j < d.col_blocks().size(bc); ++j)
            for (int i = 0; i < d.row_blocks().size(br); ++i)
              ref.at(d.row_blocks().offset(br) + i, d.col_blocks().offset(bc) + j) +=
                  v[static_cast<std::size_t>(j) * d.row_blocks().size(br) + i];
          if (a.rank() == putter) a.put_block(br, bc, v.data(), /*accumulate=*/true);
        }
      }
    a.finalize();
    check_storage(a, ref);
    EXPECT_LE(max_abs_diff(dense_of(ctx, a), ref.a), 1e-13);
  }
}

TEST(BlockSparse, LastWriteWinsInRankOrder) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  if (p < 3) GTEST_SKIP() << "needs 3 ranks";
  // one block row/column on process (0, 0) = rank 0; ranks 1 and 2 both write it
  Distribution d(BlockSizes({4}), BlockSizes({5}), 1, p, {0}, {0});
  BlockSparseMatrix<double> a(ctx, d, "A");
  std::vector<double> v0(20, 0.5), v1(20, 1.0), v2(20, 2.0);
  if (ctx.rank() == 0) a.put_block(0, 0, v0.data());  // local: applied first
  if (ctx.rank() == 2) a.put_block(0, 0, v2.data());
  if (ctx.rank() == 1) a.put_block(0, 0, v1.data());
  a.finalize();
  if (ctx.rank() == 0) {
    ASSERT_NE(a.get_block(0, 0), nullptr);
    EXPECT_EQ(a.get_block(0, 0)[7], 2.0);  // rank 2 is applied after rank 1
  }
  // a local overwrite after finalize is immediate and visible
  if (ctx.rank() == 0) {
    a.put_block(0, 0, v1.data());
    EXPECT_EQ(a.get_block(0, 0)[0], 1.0);
  }
  a.finalize();
}

TEST(BlockSparse, LocalPutsVisibleBeforeFinalize) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(13);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  auto s = random_sizes(rng, 6);
  Distribution d = Distribution::random(BlockSizes(s), BlockSizes(s), pr, pc, 5);
  BlockSparseMatrix<double> a(ctx, d);
  // put every owned block in reverse order: visible at once, sorted by finalize
  int n = 0;
  for (int br = d.row_blocks().count() - 1; br >= 0; --br)
    for (int bc = d.col_blocks().count() - 1; bc >= 0; --bc)
      if (d.owner(br, bc) == a.rank()) {
        std::vector<double> v(static_cast<std::size_t>(s[br]) * s[bc], br * 100.0 + bc);
        a.put_block(br, bc, v.data());
        ASSERT_NE(a.get_block(br, bc), nullptr);
        EXPECT_EQ(a.get_block(br, bc)[0], br * 100.0 + bc);
        ++n;
      }
  EXPECT_EQ(a.local_nblocks(), n);
  EXPECT_EQ(a.is_finalized(), n == 0);
  a.finalize();
  DenseRef ref = empty_ref(d);
  for (int br = 0; br < d.row_blocks().count(); ++br)
    for (int bc = 0; bc < d.col_blocks().count(); ++bc)
      if (d.owner(br, bc) == a.rank()) {
        ref.stored[static_cast<std::size_t>(br) * d.col_blocks().count() + bc] = 1;
        for (int j = 0; j < s[bc]; ++j)
          for (int i = 0; i < s[br]; ++i)
            ref.at(d.row_blocks().offset(br) + i, d.col_blocks().offset(bc) + j) = br * 100.0 + bc;
      }
  check_storage(a, ref);
  a.clear();
  EXPECT_EQ(a.local_nblocks(), 0);
  EXPECT_TRUE(a.is_finalized());
}

TEST(BlockSparse, AssignLocalAndForEach) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(14);
  for (const auto& s : setups(rng, ctx.size())) {
    SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe());
    BlockSparseMatrix<double> a(ctx, s.dist, "A");
    DenseRef ref = fill_random(a, rng, 0.6, ctx.size());
    // rebuild a copy's storage from a's blocks through assign_local (data in reverse order)
    BlockSparseMatrix<double> b(ctx, s.dist, "B");
    auto loc = a.local();
    std::vector<std::int64_t> offset(loc.col->size());
    std::vector<double> data(static_cast<std::size_t>(a.local_nnz()));
    std::int64_t at = static_cast<std::int64_t>(data.size());
    a.for_each_block([&, k = std::size_t{0}](int, int, const double* x, int r, int c) mutable {
      at -= static_cast<std::int64_t>(r) * c;
      std::copy(x, x + r * c, data.begin() + at);
      offset[k++] = at;
    });
    b.assign_local(*loc.row_ptr, *loc.col, offset, data);
    check_storage(b, ref);
    // for_each_block (mutable) scales in place; norms follow
    b.for_each_block([](int, int, double* x, int r, int c) {
      for (int e = 0; e < r * c; ++e) x[e] *= -2;
    });
    for (auto& x : ref.a) x *= -2;
    check_storage(b, ref);
  }
}

TEST(BlockSparse, DenseRoundTrip) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(15);
  for (const auto& s : setups(rng, ctx.size())) {
    SCOPED_TRACE(std::string(s.what) + ": " + s.dist.describe());
    BlockSparseMatrix<double> a(ctx, s.dist, "A");
    DenseRef ref = fill_random(a, rng, 0.5, ctx.size());
    auto lay =
        layout::Layout::block_cyclic(a.rows(), a.cols(), 4, 3, 1, ctx.size(), 0, 0, ctx.size());
    auto x = to_dense(ctx, a, lay);
    auto b = from_dense(ctx, x, s.dist, 0.0, "B");
    check_storage(b, ref);
    // onto another distribution, dropping the blocks of norm <= eps
    auto d2 = Distribution::random(s.dist.row_blocks(), s.dist.col_blocks(), s.dist.pr(),
                                   s.dist.pc(), 99);
    const double eps = 1.5;
    auto c = from_dense(ctx, x, d2, eps);
    DenseRef ref2 = ref;
    for (int br = 0; br < d2.row_blocks().count(); ++br)
      for (int bc = 0; bc < d2.col_blocks().count(); ++bc) {
        if (!ref.has(br, bc)) continue;
        double n = 0;
        for (double v : ref.block(br, bc)) n += v * v;
        if (std::sqrt(n) <= eps) {
          ref2.stored[static_cast<std::size_t>(br) * d2.col_blocks().count() + bc] = 0;
          for (int j = 0; j < d2.col_blocks().size(bc); ++j)
            for (int i = 0; i < d2.row_blocks().size(br); ++i)
              ref2.at(d2.row_blocks().offset(br) + i, d2.col_blocks().offset(bc) + j) = 0;
        }
      }
    check_storage(c, ref2);
    EXPECT_LE(max_abs_diff(dense_of(ctx, c), ref2.a), 0.0);
  }
}

// ---- errors, expected on every rank ----

TEST(BlockSparseErrors, BadPutOnOneRankThrowsEverywhereInFinalize) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  Distribution d = Distribution::random(BlockSizes({4, 5}), BlockSizes({1, 13, 4}), pr, pc);
  BlockSparseMatrix<double> a(ctx, d, "A");
  std::vector<double> v(4 * 13, 1.0);
  for (int bad : {0, 1, 2}) {
    if (ctx.rank() == ctx.size() - 1) {
      if (bad == 0) a.put_block(2, 0, v.data());   // block row out of range
      if (bad == 1) a.put_block(0, -1, v.data());  // block column out of range
      if (bad == 2) a.put_block(0, 1, nullptr);    // no values
    }
    if (ctx.rank() == 0) a.put_block(0, 1, v.data());  // a good put meanwhile
    EXPECT_THROW(a.finalize(), InputError);
    EXPECT_TRUE(a.is_finalized());
  }
  EXPECT_THROW(a.get_block(0, 3), InputError);
  a.finalize();  // usable afterwards
}

TEST(BlockSparseErrors, BadDistributionEntry) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  BlockSizes r({4, 5}), c({1, 13, 4});
  EXPECT_THROW(Distribution(r, c, pr, pc, {0, pr}, {0, 0, 0}), InputError);  // row >= PR
  EXPECT_THROW(Distribution(r, c, pr, pc, {0, 0}, {0, -1, 0}), InputError);  // negative
  EXPECT_THROW(Distribution(r, c, pr, pc, {0, 0}, {0, 0}), InputError);      // too short
  EXPECT_THROW(BlockSizes({4, 0}), InputError);                              // empty block
  EXPECT_THROW(Distribution::random(r, c, 0, pc), GridError);
}

TEST(BlockSparseErrors, CommunicatorSizeMustMatchGrid) {
  Context ctx(MPI_COMM_WORLD);
  Distribution d = Distribution::random(BlockSizes({4}), BlockSizes({4}), 1, ctx.size() + 1);
  EXPECT_THROW(BlockSparseMatrix<double>(ctx, d), DimensionMismatch);
}

TEST(BlockSparseErrors, FromDenseChecks) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  Distribution d = Distribution::random(BlockSizes({4, 5}), BlockSizes({1, 13}), pr, pc);
  dense::DistMatrix<double> x(ctx, layout::Layout::on_rank(9, 14, 0, ctx.size()));
  EXPECT_THROW(from_dense(ctx, x, d, -1.0), InputError);
  dense::DistMatrix<double> y(ctx, layout::Layout::on_rank(9, 15, 0, ctx.size()));
  EXPECT_THROW(from_dense(ctx, y, d), DimensionMismatch);
  BlockSparseMatrix<double> a(ctx, d);
  EXPECT_THROW(to_dense(ctx, a, layout::Layout::on_rank(9, 15, 0, ctx.size())), DimensionMismatch);
}

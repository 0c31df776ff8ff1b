// BlockSizes and Distribution: pure data, no MPI.
#include <gtest/gtest.h>

#include <numeric>

#include "tessel/core/error.hpp"
#include "tessel/sparse/block_sparse.hpp"
#include "tessel/sparse/convert.hpp"

using namespace tessel;
using namespace tessel::sparse;

TEST(BlockSizes, OffsetsAndBlockOf) {
  BlockSizes b({1, 4, 5, 13, 23});
  EXPECT_EQ(b.count(), 5);
  EXPECT_EQ(b.extent(), 46);
  EXPECT_EQ(b.offset(0), 0);
  EXPECT_EQ(b.offset(3), 10);
  EXPECT_EQ(b.offset(5), 46);
  EXPECT_EQ(b.block_of(0), 0);
  EXPECT_EQ(b.block_of(1), 1);
  EXPECT_EQ(b.block_of(4), 1);
  EXPECT_EQ(b.block_of(5), 2);
  EXPECT_EQ(b.block_of(45), 4);
  EXPECT_THROW(b.block_of(46), InputError);
  EXPECT_THROW(b.block_of(-1), InputError);
  BlockSizes e;
  EXPECT_EQ(e.count(), 0);
  EXPECT_EQ(e.extent(), 0);
  EXPECT_EQ(BlockSizes(std::vector<int>{}).extent(), 0);
}

// Copies share one store (a simulated run of thousands of ranks holds the sizes once per rank,
// not once per matrix and plan); a moved-from object is still whole (a move is a copy).
TEST(BlockSizes, CopiesShareTheStoreAndMovesLeaveItValid) {
  BlockSizes b({4, 1, 1, 13});
  BlockSizes c = b;
  EXPECT_EQ(c.sizes().data(), b.sizes().data());
  EXPECT_EQ(c, b);
  BlockSizes m = std::move(b);
  EXPECT_EQ(m.extent(), 19);
  EXPECT_EQ(b.extent(), 19);  // NOLINT(bugprone-use-after-move): the point of the test
  EXPECT_EQ(b.offset(3), 6);
  EXPECT_EQ(BlockSizes({4, 1, 1, 13}), m);  // equal by value across stores
  EXPECT_NE(BlockSizes({4, 1, 1, 12}), m);
  Distribution d(m, m, 2, 3, {0, 1, 1, 0}, {2, 0, 1, 2});
  Distribution e = d;
  EXPECT_EQ(e.row_dist().data(), d.row_dist().data());
  Distribution f = std::move(d);
  EXPECT_EQ(d.owner(3, 0), 2);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(f, e);
  EXPECT_EQ(Distribution(m, m, 2, 3, {0, 1, 1, 0}, {2, 0, 1, 2}), f);
  EXPECT_NE(Distribution(m, m, 2, 3, {0, 1, 1, 1}, {2, 0, 1, 2}), f);
}

TEST(BlockSizes, RejectsNonPositiveSizes) {
  EXPECT_THROW(BlockSizes({4, 0, 5}), InputError);
  EXPECT_THROW(BlockSizes({-1}), InputError);
  try {
    BlockSizes({4, 0}, "row block sizes");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("row block sizes: block 1 has size 0"), std::string::npos)
        << e.what();
  }
}

TEST(Distribution, CallerGivenChecks) {
  BlockSizes r({4, 5, 13}), c({1, 23});
  Distribution d(r, c, 2, 3, {1, 0, 1}, {2, 0});
  EXPECT_EQ(d.owner(0, 0), 1 * 3 + 2);
  EXPECT_EQ(d.owner(1, 1), 0);
  EXPECT_EQ(d.local_block_rows(1), (std::vector<int>{0, 2}));
  EXPECT_EQ(d.local_block_cols(1), (std::vector<int>{}));
  EXPECT_EQ(d.describe(), "22 x 24 elements, 3 x 2 blocks, 2 x 3 grid");
  EXPECT_THROW(Distribution(r, c, 2, 3, {1, 2, 1}, {2, 0}), InputError);   // row entry >= PR
  EXPECT_THROW(Distribution(r, c, 2, 3, {1, 0, 1}, {-1, 0}), InputError);  // negative column
  EXPECT_THROW(Distribution(r, c, 2, 3, {1, 0}, {2, 0}), InputError);      // too few entries
  EXPECT_THROW(Distribution(r, c, 0, 3, {0, 0, 0}, {0, 0}), GridError);
  try {
    Distribution(r, c, 2, 3, {1, 0, 1}, {2, 3});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("col_dist[1] = 3"), std::string::npos) << e.what();
  }
}

TEST(Distribution, TransposedSwapsEverything) {
  BlockSizes r({4, 5, 13}), c({1, 23});
  Distribution d(r, c, 2, 3, {1, 0, 1}, {2, 0});
  Distribution t = d.transposed();
  EXPECT_EQ(t.pr(), 3);
  EXPECT_EQ(t.pc(), 2);
  EXPECT_EQ(t.row_blocks(), c);
  EXPECT_EQ(t.col_blocks(), r);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(t.owner(j, i), d.col_owner(j) * 2 + d.row_owner(i));
  EXPECT_EQ(t.transposed(), d);
  EXPECT_NE(t, d);
}

TEST(Distribution, RandomIsReproducibleAndBalanced) {
  std::vector<int> sizes;
  for (int i = 0; i < 200; ++i) sizes.push_back(std::vector<int>{1, 4, 5, 13, 23}[i % 5]);
  BlockSizes b(sizes);
  for (auto [pr, pc] : std::vector<std::pair<int, int>>{{1, 1}, {2, 3}, {3, 3}, {7, 5}, {1, 13}}) {
    Distribution d = Distribution::random(b, b, pr, pc, 42);
    EXPECT_EQ(d, Distribution::random(b, b, pr, pc, 42));
    if (pr > 1) EXPECT_NE(d.row_dist(), Distribution::random(b, b, pr, pc, 43).row_dist());
    for (int g = 0; g < pr; ++g) {
      std::int64_t el = 0;
      for (int br : d.local_block_rows(g)) el += b.size(br);
      // greedy on the least loaded: within one largest block of the mean
      EXPECT_NEAR(static_cast<double>(el), b.extent() / static_cast<double>(pr), 23.0)
          << pr << " x " << pc;
    }
    for (int g = 0; g < pc; ++g) {
      std::int64_t el = 0;
      for (int bc : d.local_block_cols(g)) el += b.size(bc);
      EXPECT_NEAR(static_cast<double>(el), b.extent() / static_cast<double>(pc), 23.0);
    }
  }
  // a permutation, not the identity order: the first blocks are not all on group 0, 1, 2...
  Distribution d = Distribution::random(b, b, 4, 4, 1);
  std::vector<int> firsts(d.row_dist().begin(), d.row_dist().begin() + 8);
  EXPECT_NE(firsts, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  // a Distribution with no blocks is fine
  Distribution e = Distribution::random(BlockSizes(), BlockSizes(), 2, 2);
  EXPECT_EQ(e.local_block_rows(0).size(), 0u);
}

TEST(Distribution, DefaultGrid) {
  EXPECT_EQ(Distribution::default_grid(1), std::make_pair(1, 1));
  EXPECT_EQ(Distribution::default_grid(2), std::make_pair(1, 2));
  EXPECT_EQ(Distribution::default_grid(6), std::make_pair(2, 3));
  EXPECT_EQ(Distribution::default_grid(7), std::make_pair(1, 7));
  EXPECT_EQ(Distribution::default_grid(9), std::make_pair(3, 3));
  EXPECT_EQ(Distribution::default_grid(12), std::make_pair(3, 4));
  EXPECT_EQ(Distribution::default_grid(16), std::make_pair(4, 4));
  EXPECT_THROW(Distribution::default_grid(0), GridError);
}

TEST(Distribution, BlockLayoutPacksLocalBlocks) {
  BlockSizes r({4, 5, 13}), c({1, 23});
  Distribution d(r, c, 2, 1, {1, 0, 1}, {0, 0});
  auto lay = block_layout(d);
  EXPECT_EQ(lay.rows(), 22);
  EXPECT_EQ(lay.cols(), 24);
  EXPECT_EQ(lay.local_rows(0), 5);
  EXPECT_EQ(lay.local_rows(1), 17);
  EXPECT_EQ(lay.local_cols(1), 24);
}

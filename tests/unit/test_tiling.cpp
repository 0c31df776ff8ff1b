// Tiling (tiling.hpp) as pure data: the greedy contiguous grouping against a hand count, an
// explicit grouping's offsets, and the errors.
#include <gtest/gtest.h>

#include "tessel/core/error.hpp"
#include "tessel/sparse/tiling.hpp"

using namespace tessel;
using namespace tessel::sparse;

TEST(Tiling, ContiguousGroupsGreedilyUpToTheTarget) {
  BlockSizes fine({4, 1, 1, 4, 1, 1, 23, 5, 5});
  auto t = Tiling::contiguous(fine, 10);
  // 4+1+1+4 = 10 | 1+1 (next 23 would exceed) | 23 alone (larger than the target) | 5+5
  EXPECT_EQ(t.tiles().sizes(), (std::vector<int>{10, 2, 23, 10}));
  EXPECT_EQ(t.tile_of(3), 0);
  EXPECT_EQ(t.at(3), 6);
  EXPECT_EQ(t.tile_of(5), 1);
  EXPECT_EQ(t.at(5), 1);
  EXPECT_EQ(t.tile_of(6), 2);
  EXPECT_EQ(t.at(6), 0);
  EXPECT_EQ(t.members(3), (std::vector<int>{7, 8}));
  EXPECT_EQ(t.tiles().extent(), fine.extent());
  EXPECT_FALSE(t.is_identity());
  EXPECT_TRUE(Tiling::contiguous(fine, 1).is_identity());
  EXPECT_EQ(Tiling::contiguous(fine, 1000).tiles().count(), 1);
  EXPECT_EQ(Tiling::contiguous(BlockSizes(), 32).tiles().count(), 0);
}

TEST(Tiling, ExplicitGroupsKeepIncreasingOrderInsideATile) {
  BlockSizes fine({2, 3, 5, 7});
  Tiling t(fine, {1, 0, 1, 0});
  EXPECT_EQ(t.tiles().sizes(), (std::vector<int>{10, 7}));
  EXPECT_EQ(t.members(0), (std::vector<int>{1, 3}));
  EXPECT_EQ(t.at(3), 3);
  EXPECT_EQ(t.at(2), 2);
  EXPECT_NE(t.describe().find("4 blocks into 2 tiles"), std::string::npos);
}

TEST(Tiling, BadGroupingsNameTheEntry) {
  BlockSizes fine({2, 3, 5});
  EXPECT_THROW(Tiling(fine, {0, 1}), DimensionMismatch);
  EXPECT_THROW(Tiling(fine, {0, -1, 0}), InputError);
  EXPECT_THROW(Tiling(fine, {0, 2, 0}), InputError);  // group 1 empty
  EXPECT_THROW(Tiling::contiguous(fine, 0), InputError);
  try {
    Tiling(fine, {0, 2, 0});
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("group 1"), std::string::npos) << e.what();
  }
}

// Four cliques of 8 blocks of size 4 (32 elements each), numbered in a shuffled order and
// joined by weak edges: clustering at target 32 must give the cliques back as the tiles.
TEST(Tiling, ClusteredRecoversTheCliquesWhateverTheNumbering) {
  const int nq = 4, per = 8;
  std::vector<int> perm(static_cast<std::size_t>(nq * per));
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>((i * 13 + 5) % 32);
  std::vector<Tiling::Edge> e;
  for (int q = 0; q < nq; ++q) {
    for (int i = 0; i < per; ++i)
      for (int j = i + 1; j < per; ++j)
        e.push_back({perm[static_cast<std::size_t>(q * per + i)],
                     perm[static_cast<std::size_t>(q * per + j)], 20});
    // a weak link to the next clique
    e.push_back({perm[static_cast<std::size_t>(q * per)],
                 perm[static_cast<std::size_t>(((q + 1) % nq) * per)], 1});
  }
  auto t = Tiling::clustered(BlockSizes(std::vector<int>(32, 4)), e, 32);
  ASSERT_EQ(t.tiles().count(), nq);
  for (int q = 0; q < nq; ++q)
    for (int i = 1; i < per; ++i)
      EXPECT_EQ(t.tile_of(perm[static_cast<std::size_t>(q * per + i)]),
                t.tile_of(perm[static_cast<std::size_t>(q * per)]))
          << "clique " << q << " member " << i;
  for (int q = 0; q < nq; ++q) EXPECT_EQ(t.tiles().size(q), 32);
  // one part or one part per block: no METIS call, contiguous answers
  EXPECT_EQ(Tiling::clustered(BlockSizes(std::vector<int>(32, 4)), e, 1000).tiles().count(), 1);
  EXPECT_TRUE(Tiling::clustered(BlockSizes(std::vector<int>(32, 4)), e, 4).is_identity());
  EXPECT_THROW(Tiling::clustered(BlockSizes(std::vector<int>(32, 4)), {{3, 3, 1}}, 32), InputError);
  EXPECT_THROW(Tiling::clustered(BlockSizes(std::vector<int>(32, 4)), {{0, 40, 1}}, 32),
               InputError);
}

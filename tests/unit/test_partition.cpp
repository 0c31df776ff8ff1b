#include <gtest/gtest.h>

#include "tessel/core/error.hpp"
#include "tessel/layout/layout.hpp"
#include "tessel/layout/redistribute.hpp"

using namespace tessel::layout;

TEST(Partition, BlockCyclicMatchesNumroc) {
  // numroc(n=10, nb=3, iproc, isrc=1, nprocs=3): blocks 0..3 go to procs 1,2,0,1.
  auto p = Partition1D::block_cyclic(10, 3, 3, 1);
  ASSERT_EQ(p.intervals().size(), 4u);
  EXPECT_EQ(p.local_extent(1), 3 + 1);
  EXPECT_EQ(p.local_extent(2), 3);
  EXPECT_EQ(p.local_extent(0), 3);
  EXPECT_EQ(p.intervals()[3].group, 1);
  EXPECT_EQ(p.intervals()[3].local, 3);
}

TEST(Partition, FirstBlockOfItsOwnSize) {
  // ScaLAPACK type-2 descriptor: n = 10, IMB = 2, MB = 3, src = 1 over 2 processes:
  // [0,2)->1 [2,5)->0 [5,8)->1 [8,10)->0; PB_Cnumroc gives 5 rows to each.
  auto p = Partition1D::block_cyclic(10, 3, 2, 1, 2);
  ASSERT_EQ(p.intervals().size(), 4u);
  EXPECT_EQ(p.intervals()[0].len, 2);
  EXPECT_EQ(p.intervals()[0].group, 1);
  EXPECT_EQ(p.intervals()[1].begin, 2);
  EXPECT_EQ(p.intervals()[1].group, 0);
  EXPECT_EQ(p.intervals()[2].local, 2);
  EXPECT_EQ(p.local_extent(0), 5);
  EXPECT_EQ(p.local_extent(1), 5);
  // A first block larger than n, and first_nb 0 meaning nb.
  EXPECT_EQ(Partition1D::block_cyclic(4, 3, 2, 0, 9).intervals().size(), 1u);
  EXPECT_EQ(Partition1D::block_cyclic(10, 3, 3, 1, 0), Partition1D::block_cyclic(10, 3, 3, 1));
  EXPECT_EQ(
      Layout::block_cyclic_inb(7, 9, 2, 4, 3, 5, 2, 2, 1, 0, 4).col_partition().intervals()[0].len,
      4);
  EXPECT_THROW(Partition1D::block_cyclic(10, 3, 2, 0, -1), tessel::LayoutMismatch);
  EXPECT_THROW(Layout::block_cyclic_inb(4, 4, 0, 1, 2, 2, 1, 1, 0, 0, 1), tessel::LayoutMismatch);
}

TEST(Partition, SubKeepsLocalOffsets) {
  auto p = Partition1D::block_cyclic(10, 3, 2, 0);  // [0,3)->0 [3,6)->1 [6,9)->0 [9,10)->1
  auto s = p.sub(4, 5);                             // global [4,9)
  ASSERT_EQ(s.intervals().size(), 2u);
  EXPECT_EQ(s.intervals()[0].begin, 0);
  EXPECT_EQ(s.intervals()[0].len, 2);
  EXPECT_EQ(s.intervals()[0].group, 1);
  EXPECT_EQ(s.intervals()[0].local, 1);
  EXPECT_EQ(s.intervals()[1].group, 0);
  EXPECT_EQ(s.intervals()[1].local, 3);
}

TEST(Partition, MergeRefinesBoth) {
  auto a = Partition1D::block_cyclic(10, 4, 2, 0);
  auto b = Partition1D::block_cyclic(10, 3, 3, 0);
  auto m = merge(a, b);
  std::int64_t total = 0;
  for (auto& s : m) total += s.len;
  EXPECT_EQ(total, 10);
  EXPECT_EQ(m.size(), 6u);  // cuts at 3,4,6,8,9
}

TEST(Partition, RejectsBadInput) {
  EXPECT_THROW(Partition1D::block_cyclic(10, 0, 2, 0), tessel::LayoutMismatch);
  EXPECT_THROW(Partition1D::block_cyclic(10, 2, 2, 2), tessel::LayoutMismatch);
  EXPECT_THROW(Layout::block_cyclic(4, 4, 2, 2, 3, 3, 0, 0, 8), tessel::GridError);
  EXPECT_THROW(Layout::block_cyclic(-1, 4, 2, 2, 1, 1, 0, 0, 1), tessel::DimensionMismatch);
}

TEST(Redistribute, VolumeFormula) {
  // 8 x 8 from one rank to a 2 x 2 block layout: rank 0 keeps 16, sends 48 in 3 messages.
  auto src = Layout::on_rank(8, 8, 0, 4);
  auto dst = Layout::block_cyclic(8, 8, 4, 4, 2, 2, 0, 0, 4);
  auto v0 = redist_volume(src, dst, 0);
  EXPECT_EQ(v0.self_elems, 16);
  EXPECT_EQ(v0.send_elems, 48);
  EXPECT_EQ(v0.send_msgs, 3);
  auto v3 = redist_volume(src, dst, 3);
  EXPECT_EQ(v3.recv_elems, 16);
  EXPECT_EQ(v3.recv_msgs, 1);
}

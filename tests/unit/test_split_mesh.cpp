// Pure helpers of SymmSquareCube: split_part (N contiguous parts), Mesh3D::largest_p and
// Mesh3D::choose_grid.
#include <gtest/gtest.h>

#include "tessel/comm/nonblocking.hpp"
#include "tessel/layout/mesh3d.hpp"

using namespace tessel;

TEST(SplitPart, TilesTheBufferInWholeUnits) {
  for (std::int64_t units : {0, 1, 5, 7, 64})
    for (std::int64_t unit : {1, 3})
      for (int n : {1, 2, 3, 4, 8}) {
        std::int64_t next = 0;
        for (int c = 0; c < n; ++c) {
          auto p = comm::split_part(units * unit, n, c, unit);
          EXPECT_EQ(p.begin, next);
          EXPECT_EQ(p.count % unit, 0);
          EXPECT_LE(p.count, (units / n + 1) * unit);
          EXPECT_GE(p.count, (units / n) * unit);
          next += p.count;
        }
        EXPECT_EQ(next, units * unit);
      }
  EXPECT_THROW(comm::split_part(10, 0, 0), Error);
  EXPECT_THROW(comm::split_part(10, 2, 2), Error);
  EXPECT_THROW(comm::split_part(10, 2, 0, 3), Error);
}

TEST(Mesh3D, LargestP) {
  EXPECT_EQ(layout::Mesh3D::largest_p(1), 1);
  EXPECT_EQ(layout::Mesh3D::largest_p(7), 1);
  EXPECT_EQ(layout::Mesh3D::largest_p(8), 2);
  EXPECT_EQ(layout::Mesh3D::largest_p(26), 2);
  EXPECT_EQ(layout::Mesh3D::largest_p(27), 3);
  EXPECT_EQ(layout::Mesh3D::largest_p(1000), 10);
  EXPECT_THROW(layout::Mesh3D::largest_p(0), GridError);
}

// The 2.5D mesh: the largest q^2 c <= ranks with 1 <= c <= q <= n (ties: larger c).
TEST(Mesh3D, ChooseGrid) {
  using layout::GridShape;
  auto g = [](int r, std::int64_t n, int q = 0, int c = 0) {
    return layout::Mesh3D::choose_grid(r, n, q, c);
  };
  EXPECT_EQ(g(1, 10), (GridShape{1, 1}));
  EXPECT_EQ(g(3, 10), (GridShape{1, 1}));
  EXPECT_EQ(g(4, 10), (GridShape{2, 1}));
  EXPECT_EQ(g(7, 10), (GridShape{2, 1}));
  EXPECT_EQ(g(8, 10), (GridShape{2, 2}));
  EXPECT_EQ(g(9, 10), (GridShape{3, 1}));
  EXPECT_EQ(g(12, 10), (GridShape{3, 1}));  // 9 > 8
  EXPECT_EQ(g(16, 10), (GridShape{4, 1}));
  EXPECT_EQ(g(18, 10), (GridShape{3, 2}));
  EXPECT_EQ(g(27, 10), (GridShape{3, 3}));
  EXPECT_EQ(g(64, 10), (GridShape{4, 4}));  // tie with 8x8x1: the larger c
  EXPECT_EQ(g(27, 2), (GridShape{2, 2}));   // q <= n
  EXPECT_EQ(g(9, 1), (GridShape{1, 1}));
  EXPECT_EQ(g(20, 10, 3), (GridShape{3, 2}));     // q forced
  EXPECT_EQ(g(20, 10, 0, 2), (GridShape{3, 2}));  // c forced
  EXPECT_EQ(g(20, 10, 0, 1), (GridShape{4, 1}));
  EXPECT_EQ(g(20, 10, 2, 1), (GridShape{2, 1}));
  EXPECT_THROW(g(8, 10, 3), GridError);     // 9 > 8 ranks
  EXPECT_THROW(g(8, 10, 2, 3), GridError);  // c > q
  EXPECT_THROW(g(8, 10, 0, 3), GridError);  // c = 3 needs >= 27 ranks
  EXPECT_THROW(g(8, 10, -1), GridError);
  EXPECT_THROW(g(8, 10, 0, -1), GridError);
  EXPECT_THROW(g(27, 2, 3), GridError);  // q > n
  EXPECT_THROW(g(0, 10), GridError);
}

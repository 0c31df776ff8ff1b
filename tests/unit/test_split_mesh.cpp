// Pure helpers of SymmSquareCube: split_part (N contiguous parts) and Mesh3D::largest_p.
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

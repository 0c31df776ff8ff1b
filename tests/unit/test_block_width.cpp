// The eigensolvers' size arithmetic (issue 28): entry indices of an n x k item-major block in 64
// bits (ChFSI's `i * states` was an int product that overflowed once local points x states
// passed 2^31), and the widest block whose Gram matrix one MPI count holds.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "../../src/solvers/block_ops.hpp"
#include "tessel/core/error.hpp"

using tessel::solvers::block::at;
using tessel::solvers::block::check_block_width;
using tessel::solvers::block::kMaxBlockWidth;

TEST(BlockWidth, IndicesPast2To31) {
  // 10^6 local points x 2,148 states: the last row starts past INT32_MAX
  EXPECT_EQ(at(999999, 2147, 2148), 2147999999ULL);
  EXPECT_GT(at(999999, 0, 2148), static_cast<std::size_t>(INT32_MAX));
  EXPECT_EQ(at(1, 0, 2148), 2148u);
  EXPECT_EQ(at(0, 5, 7), 5u);
  EXPECT_EQ(at(3000000000LL, 1, 4), 12000000001ULL);  // more points than an int holds
}

TEST(BlockWidth, GramMatrixFitsOneCount) {
  EXPECT_LE(kMaxBlockWidth * kMaxBlockWidth, INT32_MAX);
  EXPECT_GT((kMaxBlockWidth + 1) * (kMaxBlockWidth + 1), INT32_MAX);
  EXPECT_NO_THROW(check_block_width("chfsi", 1));
  EXPECT_NO_THROW(check_block_width("chfsi", kMaxBlockWidth));
  try {
    check_block_width("lobpcg", kMaxBlockWidth + 1);
    ADD_FAILURE() << "46341 vectors accepted";
  } catch (const tessel::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("lobpcg"), std::string::npos) << what;
    EXPECT_NE(what.find("46341"), std::string::npos) << what;
    EXPECT_NE(what.find("46340"), std::string::npos) << what;
  }
}

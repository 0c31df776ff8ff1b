// core/memory.hpp's bookkeeping against sums worked out by hand: the current and peak totals
// by kind, the matrices alive at the peak (largest first), and what copying, moving and
// resizing a MemoryCharge does to them.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tessel/core/memory.hpp"

using tessel::MemKind;
using tessel::MemoryCharge;
using tessel::MemoryLedger;

TEST(MemoryLedger, PeakHoldsTheMatricesAliveThenLargestFirst) {
  auto l = std::make_shared<MemoryLedger>();
  {
    MemoryCharge a(l, MemKind::Matrix, 100), b(l, MemKind::Matrix, 300);
    MemoryCharge buf(l, MemKind::Buffers, 50);
    EXPECT_EQ(l->current(), 450);
    MemoryCharge c(l, MemKind::Matrix, 200);  // the peak: 650 = 600 matrices + 50 buffers
    EXPECT_EQ(l->peak(), 650);
    EXPECT_EQ(l->peak_by_kind()[0], 600);
    EXPECT_EQ(l->peak_by_kind()[1], 50);
    EXPECT_EQ(l->peak_matrices(), (std::vector<std::int64_t>{300, 200, 100}));
  }
  EXPECT_EQ(l->current(), 0);
  EXPECT_EQ(l->peak(), 650);
  EXPECT_EQ(l->largest_matrix(), 300);
  l->reset_peak();
  EXPECT_EQ(l->peak(), 0);
  EXPECT_TRUE(l->peak_matrices().empty());
}

TEST(MemoryLedger, CopyChargesAgainMoveTransfersResizeReplaces) {
  auto l = std::make_shared<MemoryLedger>();
  MemoryCharge a(l, MemKind::Matrix, 40);
  MemoryCharge b = a;  // a copy of the matrix: its storage counted twice
  EXPECT_EQ(l->current(), 80);
  MemoryCharge c = std::move(b);
  EXPECT_EQ(l->current(), 80);
  EXPECT_EQ(b.bytes(), 0);
  c.set(10);  // shrunk: the live sizes are 40 and 10, not 40, 40 and 10
  l->reset_peak();
  EXPECT_EQ(l->peak_matrices(), (std::vector<std::int64_t>{40, 10}));
  MemoryCharge w(l, MemKind::Windows, 5);
  EXPECT_EQ(l->peak(), 55);
  EXPECT_EQ(l->peak_by_kind()[2], 5);
  EXPECT_EQ(l->peak_matrices(), (std::vector<std::int64_t>{40, 10}));
}

TEST(MemoryLedger, PhasePeaksAreKeptPerPhase) {
  auto l = std::make_shared<MemoryLedger>();
  l->set_phase("a");
  { MemoryCharge x(l, MemKind::Buffers, 70); }
  l->set_phase("b");
  MemoryCharge y(l, MemKind::Matrix, 20);
  EXPECT_EQ(l->phase_peaks().at("a"), 70);
  EXPECT_EQ(l->phase_peaks().at("b"), 20);
  EXPECT_EQ(l->peak_phase(), "a");
}

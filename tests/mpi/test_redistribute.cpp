// Redistribution between random block-cyclic layouts against the gathered original.
#include <gtest/gtest.h>

#include <random>

#include "tessel/dense/dist_matrix.hpp"
#include "tessel/layout/redistribute.hpp"

using namespace tessel;

namespace {
std::pair<int, int> grid_for(int p, int pick) {
  // pick a factorisation of some q <= p
  int q = p - (pick % 2 == 1 && p > 1 ? 1 : 0);
  int r = 1;
  for (int d = 1; d * d <= q; ++d)
    if (q % d == 0) r = d;
  return pick % 3 == 0 ? std::make_pair(r, q / r) : std::make_pair(q / r, r);
}
}  // namespace

TEST(Redistribute, RoundTripBetweenRandomLayouts) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(42);  // same on all ranks
  for (int trial = 0; trial < 12; ++trial) {
    std::int64_t m = 1 + rng() % 37, n = 1 + rng() % 29;
    auto g1 = grid_for(ctx.size(), trial);
    auto g2 = grid_for(ctx.size(), trial + 1);
    auto l1 = layout::Layout::block_cyclic(m, n, 1 + rng() % 5, 1 + rng() % 6, g1.first,
                                           g1.second, 0, g1.second - 1, ctx.size());
    auto l2 = layout::Layout::block_cyclic(m, n, 1 + rng() % 7, 1 + rng() % 4, g2.first,
                                           g2.second, g2.first - 1, 0, ctx.size());
    std::vector<double> full(static_cast<std::size_t>(m * n));
    for (std::size_t i = 0; i < full.size(); ++i) full[i] = static_cast<double>(i) + 0.5;
    auto a = dense::scatter(ctx, full.data(), l1);
    auto b = dense::redistribute(ctx, a, l2);
    // every local element of b must equal its global value
    int bad = 0;
    b.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
      if (v != full[static_cast<std::size_t>(j * m + i)]) ++bad;
    });
    EXPECT_EQ(bad, 0) << "trial " << trial;
    auto back = dense::gather(ctx, b);
    if (ctx.rank() == 0) EXPECT_EQ(back, full) << "trial " << trial;
    // predicted volume equals what the ledger saw
    auto v = layout::redist_volume(l1, l2, ctx.rank());
    ctx.ledger().reset();
    {
      PhaseScope ph(ctx.ledger(), "r");
      auto c = dense::redistribute(ctx, a, l2);
    }
    EXPECT_EQ(ctx.ledger().total().p2p_recv_bytes, v.recv_elems * 8);
    EXPECT_EQ(ctx.ledger().total().p2p_sent_bytes, v.send_elems * 8);
  }
}

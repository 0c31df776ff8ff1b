// The redistribution plan (layout/redist_plan.hpp) against a brute force over every element:
// for each (i, j), its owner and local position in both layouts are looked up from the
// partitions' intervals directly, and the plan must send and receive exactly those elements,
// in a packing order that sender and receiver agree on. Several rank counts, grid shapes,
// block sizes, submatrix-like first blocks and ranks outside a grid.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "tessel/core/error.hpp"
#include "tessel/layout/redist_plan.hpp"
#include "tessel/layout/redistribute.hpp"

using namespace tessel;
using namespace tessel::layout;

namespace {

// (group, local) of global index x in `p`, from its intervals (no merge involved).
std::pair<int, std::int64_t> locate(const Partition1D& p, std::int64_t x) {
  for (const auto& v : p.intervals())
    if (x >= v.begin && x < v.begin + v.len) return {v.group, v.local + x - v.begin};
  return {-1, -1};
}

struct Elem {
  int src, dst;
  std::int64_t sr, sc, dr, dc;
};

std::vector<Elem> brute(const Layout& s, const Layout& d) {
  std::vector<Elem> out;
  for (std::int64_t j = 0; j < s.cols(); ++j)
    for (std::int64_t i = 0; i < s.rows(); ++i) {
      auto [sgr, sr] = locate(s.row_partition(), i);
      auto [sgc, sc] = locate(s.col_partition(), j);
      auto [dgr, dr] = locate(d.row_partition(), i);
      auto [dgc, dc] = locate(d.col_partition(), j);
      const int so = s.owner(sgr, sgc), dO = d.owner(dgr, dgc);
      if (so >= 0 && dO >= 0) out.push_back({so, dO, sr, sc, dr, dc});
    }
  return out;
}

// The plan's elements of `rank` as (src local, dst local) per peer, in packing order.
using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
std::vector<Key> unpack(const std::vector<RedistBlock>& blocks, int peer) {
  std::vector<Key> out;
  for (const auto& k : blocks)
    if (k.peer == peer)
      for (std::int64_t j = 0; j < k.cols; ++j)
        for (std::int64_t i = 0; i < k.rows; ++i)
          out.emplace_back(k.src_row + i, k.src_col + j, k.dst_row + i, k.dst_col + j);
  return out;
}

void check_pair(const Layout& s, const Layout& d) {
  const int p = s.comm_size();
  const auto all = brute(s, d);
  std::vector<RedistPlan> plans;
  for (int r = 0; r < p; ++r) plans.push_back(make_redist_plan(s, d, r));
  for (int r = 0; r < p; ++r) {
    const RedistPlan& pl = plans[static_cast<std::size_t>(r)];
    SCOPED_TRACE(pl.describe());
    EXPECT_NO_THROW(pl.exchange.validate(p, r));
    std::vector<std::int64_t> send(static_cast<std::size_t>(p), 0), recv(send);
    std::int64_t self = 0;
    for (const auto& e : all) {
      if (e.src == r && e.dst == r)
        ++self;
      else if (e.src == r)
        ++send[static_cast<std::size_t>(e.dst)];
      else if (e.dst == r)
        ++recv[static_cast<std::size_t>(e.src)];
    }
    EXPECT_EQ(pl.self_elems(), self);
    int smsg = 0, rmsg = 0;
    std::int64_t stot = 0, rtot = 0;
    for (int q = 0; q < p; ++q) {
      if (q == r) continue;
      EXPECT_EQ(pl.send_to(q), send[static_cast<std::size_t>(q)]) << "to " << q;
      EXPECT_EQ(pl.recv_from(q), recv[static_cast<std::size_t>(q)]) << "from " << q;
      smsg += send[static_cast<std::size_t>(q)] > 0;
      rmsg += recv[static_cast<std::size_t>(q)] > 0;
      stot += send[static_cast<std::size_t>(q)];
      rtot += recv[static_cast<std::size_t>(q)];
    }
    // redist_volume is read from the same plan; check it against the brute force too.
    const RedistVolume v = redist_volume(s, d, r);
    EXPECT_EQ(v.send_elems, stot);
    EXPECT_EQ(v.recv_elems, rtot);
    EXPECT_EQ(v.self_elems, self);
    EXPECT_EQ(v.send_msgs, smsg);
    EXPECT_EQ(v.recv_msgs, rmsg);
    EXPECT_EQ(pl.recv_from(r), 0);
    EXPECT_EQ(pl.send_to(r), 0);
    // The kept elements go last in both buffers; the peers' pieces are the prefix.
    EXPECT_EQ(pl.exchange.self_send, stot);
    EXPECT_EQ(pl.exchange.self_recv, rtot);
    // Packing order: what r packs for q is what q unpacks from r, element by element; and it
    // is exactly the brute force's elements of that pair.
    for (int q = 0; q < p; ++q) {
      const auto packed = unpack(pl.send_blocks, q);
      if (q != r)
        EXPECT_EQ(packed, unpack(plans[static_cast<std::size_t>(q)].recv_blocks, r)) << "to " << q;
      std::multiset<Key> want, got(packed.begin(), packed.end());
      for (const auto& e : all)
        if (e.src == r && e.dst == q) want.insert({e.sr, e.sc, e.dr, e.dc});
      EXPECT_EQ(got, want) << "to " << q;
    }
  }
}

}  // namespace

TEST(RedistPlan, MatchesBruteForceOverElements) {
  for (int p : {1, 2, 3, 5, 6, 7}) {
    for (int pr = 1; pr <= p; ++pr) {
      if (p % pr) continue;
      const int pc = p / pr;
      SCOPED_TRACE(::testing::Message() << p << " ranks, " << pr << "x" << pc);
      const auto a = Layout::block_cyclic(13, 11, 2, 3, pr, pc, 0, 0, p);
      const auto b = Layout::block_cyclic(13, 11, 4, 1, pc, pr, pc - 1, 0, p);
      const auto c = Layout::block_cyclic_inb(13, 11, 1, 2, 3, 3, pr, pc, pr - 1, pc - 1, p);
      const auto one = Layout::on_rank(13, 11, p - 1, p);
      check_pair(a, b);
      check_pair(b, c);
      check_pair(one, a);
      check_pair(c, one);
      check_pair(a, a);
    }
  }
  // Ranks outside the grid (2 x 2 of 7 ranks, ranks 4..6 hold nothing in `a`).
  const auto a = Layout::block_cyclic(9, 10, 2, 2, 2, 2, 0, 0, 7);
  const auto b = Layout::block_cyclic(9, 10, 3, 1, 1, 7, 0, 0, 7);
  check_pair(a, b);
  check_pair(b, a);
}

TEST(RedistPlan, RejectsMismatchedLayouts) {
  const auto a = Layout::block_cyclic(8, 8, 2, 2, 2, 2, 0, 0, 4);
  EXPECT_THROW(make_redist_plan(a, Layout::on_rank(8, 9, 0, 4), 0), DimensionMismatch);
  EXPECT_THROW(make_redist_plan(a, Layout::on_rank(8, 8, 0, 5), 0), LayoutMismatch);
  EXPECT_THROW(make_redist_plan(a, a, 4), LayoutMismatch);
}

TEST(RedistPlan, ExplainNamesTheBusiestRank) {
  // 8 x 8 from rank 0 to 2 x 2 blocks of 4: rank 0 keeps 16, sends 16 to each of 1, 2, 3.
  const auto src = Layout::on_rank(8, 8, 0, 4);
  const auto dst = Layout::block_cyclic(8, 8, 4, 4, 2, 2, 0, 0, 4);
  const std::string s = explain_redistribution(src, dst, 2);
  EXPECT_NE(s.find("moves 48 elements in all"), std::string::npos) << s;
  EXPECT_NE(s.find("sends 48 elements in 3 messages"), std::string::npos) << s;
  EXPECT_NE(s.find("rank 0: keeps 16; sends 3 messages, 48 elements (1: 16, 2: 16, 3: 16)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("(2 more ranks)"), std::string::npos) << s;
}

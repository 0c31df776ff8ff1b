// The plan of a dense redistribution (pure): merge the two layouts' partitions, list the
// blocks this rank sends (source side) and receives (destination side), count them per peer.
#include "tessel/layout/redist_plan.hpp"

#include <algorithm>

#include "tessel/core/error.hpp"

namespace tessel::layout {
namespace {

// Segments whose `side` group equals g (side 0: source, 1: destination).
std::vector<const Segment*> pick(const std::vector<Segment>& s, int side, int g) {
  std::vector<const Segment*> out;
  for (const auto& x : s)
    if ((side == 0 ? x.a_group : x.b_group) == g) out.push_back(&x);
  return out;
}

// Column segments outer, row segments inner: the packing order of a peer's piece.
RedistBlock block(int peer, const Segment& r, const Segment& c) {
  return {peer, r.len, c.len, r.a_local, c.a_local, r.b_local, c.b_local};
}

std::int64_t sum(const std::vector<std::int64_t>& v) {
  std::int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

std::int64_t count_of(const std::vector<int>& peers, const std::vector<std::int64_t>& counts,
                      int q) {
  auto it = std::lower_bound(peers.begin(), peers.end(), q);
  return it != peers.end() && *it == q ? counts[static_cast<std::size_t>(it - peers.begin())] : 0;
}

}  // namespace

std::int64_t RedistPlan::send_elems() const { return sum(exchange.send_counts); }
std::int64_t RedistPlan::recv_elems() const { return sum(exchange.recv_counts); }
std::int64_t RedistPlan::recv_from(int q) const {
  return count_of(exchange.recv_peers, exchange.recv_counts, q);
}
std::int64_t RedistPlan::send_to(int q) const {
  return count_of(exchange.send_peers, exchange.send_counts, q);
}

RedistPlan make_redist_plan(const Layout& src, const Layout& dst, int rank) {
  TESSEL_CHECK(src.rows() == dst.rows() && src.cols() == dst.cols(), DimensionMismatch,
               "redistribute: source is ", src.rows(), " x ", src.cols(), " but destination is ",
               dst.rows(), " x ", dst.cols());
  TESSEL_CHECK(src.comm_size() == dst.comm_size(), LayoutMismatch, "redistribute: layouts are for ",
               src.comm_size(), " and ", dst.comm_size(), " ranks (expected the same)");
  TESSEL_CHECK(rank >= 0 && rank < src.comm_size(), LayoutMismatch, "redistribute plan: rank ",
               rank, " (expected 0 .. ", src.comm_size() - 1, ")");
  RedistPlan p;
  p.rank = rank;
  p.comm_size = src.comm_size();
  const std::size_t n = static_cast<std::size_t>(p.comm_size);
  const auto rows = merge(src.row_partition(), dst.row_partition());
  const auto cols = merge(src.col_partition(), dst.col_partition());
  std::vector<std::int64_t> send(n, 0), recv(n, 0);
  if (auto g = src.groups_of(rank)) {
    const auto rs = pick(rows, 0, g->first), cs = pick(cols, 0, g->second);
    for (const Segment* c : cs)
      for (const Segment* r : rs) {
        const int d = dst.owner(r->b_group, c->b_group);
        if (d < 0) continue;
        p.send_blocks.push_back(block(d, *r, *c));
        send[static_cast<std::size_t>(d)] += r->len * c->len;
      }
  }
  if (auto g = dst.groups_of(rank)) {
    const auto rs = pick(rows, 1, g->first), cs = pick(cols, 1, g->second);
    for (const Segment* c : cs)
      for (const Segment* r : rs) {
        const int s = src.owner(r->a_group, c->a_group);
        if (s < 0) continue;
        recv[static_cast<std::size_t>(s)] += r->len * c->len;
        if (s != rank) p.recv_blocks.push_back(block(s, *r, *c));
      }
  }
  // Peers with elements, ascending; offsets in rank order over the peers only; the kept
  // elements (send[rank] == recv[rank]: the same blocks seen from both sides) go last.
  auto& e = p.exchange;
  std::int64_t so = 0, ro = 0;
  for (std::size_t q = 0; q < n; ++q) {
    if (static_cast<int>(q) == rank) continue;
    if (send[q] > 0) {
      e.send_peers.push_back(static_cast<int>(q));
      e.send_counts.push_back(send[q]);
      e.send_offsets.push_back(so);
      so += send[q];
    }
    if (recv[q] > 0) {
      e.recv_peers.push_back(static_cast<int>(q));
      e.recv_counts.push_back(recv[q]);
      e.recv_offsets.push_back(ro);
      ro += recv[q];
    }
  }
  const std::size_t me = static_cast<std::size_t>(rank);
  TESSEL_ASSERT(send[me] == recv[me]);
  e.self_count = send[me];
  e.self_send = so;
  e.self_recv = ro;
  return p;
}

namespace {
std::string peer_list(const std::vector<int>& peers, const std::vector<std::int64_t>& counts) {
  std::string s;
  for (std::size_t i = 0; i < peers.size(); ++i)
    s += detail::concat(i ? ", " : "", peers[i], ": ", counts[i]);
  return s;
}
}  // namespace

std::string RedistPlan::describe() const {
  const auto& e = exchange;
  return detail::concat("rank ", rank, ": keeps ", e.self_count, "; sends ", send_msgs(),
                        " messages, ", send_elems(), " elements",
                        send_msgs() ? " (" + peer_list(e.send_peers, e.send_counts) + ")" : "",
                        "; receives ", recv_msgs(), " messages, ", recv_elems(), " elements",
                        recv_msgs() ? " (" + peer_list(e.recv_peers, e.recv_counts) + ")" : "");
}

std::string explain_redistribution(const Layout& src, const Layout& dst, int max_ranks,
                                   const std::string& indent) {
  std::int64_t max_send = 0, max_recv = 0, total = 0;
  int max_smsg = 0, max_rmsg = 0;
  std::string ranks;
  for (int r = 0; r < src.comm_size(); ++r) {
    const RedistPlan p = make_redist_plan(src, dst, r);
    max_send = std::max(max_send, p.send_elems());
    max_recv = std::max(max_recv, p.recv_elems());
    max_smsg = std::max(max_smsg, p.send_msgs());
    max_rmsg = std::max(max_rmsg, p.recv_msgs());
    total += p.send_elems();
    if (r < max_ranks) ranks += indent + "  " + p.describe() + "\n";
  }
  if (src.comm_size() > max_ranks)
    ranks += detail::concat(indent, "  (", src.comm_size() - max_ranks, " more ranks)\n");
  return detail::concat(indent, "moves ", total, " elements in all; per rank at most: sends ",
                        max_send, " elements in ", max_smsg, " messages, receives ", max_recv,
                        " in ", max_rmsg, " messages\n", ranks);
}

}  // namespace tessel::layout

// Exchange strategy node-shared: peers on this node move through an MPI-3 shared-memory window
// (NodeWindow, here), the others point-to-point (exchange_p2p.cpp, over the plan less the
// window's pieces: ExchangeCore puts the two together). Reads as: node split -> allgather of
// the node's pair counts -> window (when a pair shares data) -> pack into it -> stores
// recorded -> publish (Win_sync + node barrier + Win_sync) -> unpack -> unlock.
#include "exchange_mover.hpp"
#include "tessel/core/error.hpp"

namespace tessel::comm::detail {

NodeWindow::NodeWindow(const Comm& c, int node_size) {
  if (c.cache()) {
    ns_ = &c.cache()->node_shared(c, node_size);
  } else {
    own_ = std::make_unique<NodeShared>(c, node_size);
    ns_ = own_.get();
  }
  node_ = &ns_->node();
  const std::size_t p = static_cast<std::size_t>(c.size());
  shm_.assign(p, -1), shm_to_.assign(p, 0), shm_from_.assign(p, 0);
  // Node rank order is the order of c's ranks, so the destination's part holds its incoming
  // pieces by source rank of c.
  crank_.assign(static_cast<std::size_t>(node_->size()), -1);
  for (int q = 0; q < c.size(); ++q)
    if (node_->node_rank_of(q) >= 0) crank_[static_cast<std::size_t>(node_->node_rank_of(q))] = q;
}

std::unique_ptr<NodeWindow> NodeWindow::open(const Comm& c, const ExchangePlan& plan,
                                             std::int64_t item_bytes, int node_size) {
  if (c.size() <= 1) return nullptr;
  auto w = std::make_unique<NodeWindow>(c, node_size);
  w->item_bytes_ = item_bytes;
  std::vector<std::int64_t> scount(static_cast<std::size_t>(c.size()), 0);
  for (std::size_t i = 0; i < plan.send_peers.size(); ++i)
    scount[static_cast<std::size_t>(plan.send_peers[i])] = plan.send_counts[i];
  if (!w->gather_counts(scount)) return nullptr;  // the same decision on every node rank
  const int nn = w->node_->size();
  std::vector<std::int64_t> need(static_cast<std::size_t>(nn), 0);  // bytes of each part
  for (int u = 0; u < nn; ++u)
    for (int t = 0; t < nn; ++t)
      need[static_cast<std::size_t>(t)] +=
          w->counts_[static_cast<std::size_t>(u * nn + t)] * item_bytes;
  w->win_ = w->ns_->window(need);  // null on every node rank alike: this node falls back to p2p
  if (!w->win_) return nullptr;
  w->win_->lock_all();
  w->place_pieces();
  for (std::size_t i = 0; i < plan.send_peers.size(); ++i)
    if (w->holds(plan.send_peers[i])) w->stores_.push_back(plan.send_counts[i]);
  return w;
}

bool NodeWindow::gather_counts(const std::vector<std::int64_t>& scount) {
  // The allgather also orders the reuse of a cached window: every node rank has finished its
  // loads of the previous call before any rank stores into the window for this one.
  const Comm& nc = node_->comm();
  const int nn = nc.size();
  std::vector<std::int64_t> mine(static_cast<std::size_t>(nn), 0);
  counts_.assign(static_cast<std::size_t>(nn) * static_cast<std::size_t>(nn), 0);
  for (int t = 0; t < nn; ++t)
    if (t != nc.rank())
      mine[static_cast<std::size_t>(t)] = scount[static_cast<std::size_t>(crank_[t])];
  if (nn > 1) nc.allgather(mine.data(), nn, counts_.data());
  std::int64_t node_total = 0;
  for (std::int64_t x : counts_) node_total += x;
  return node_total > 0;
}

void NodeWindow::place_pieces() {
  const int nn = node_->size(), me = node_->comm().rank();
  for (int t = 0; t < nn; ++t) {
    std::int64_t off = 0;  // where node rank u's pieces start in t's part
    for (int u = 0; u < nn; ++u) {
      if (u == t) continue;
      if (u == me) shm_to_[static_cast<std::size_t>(crank_[t])] = off;
      if (t == me) shm_from_[static_cast<std::size_t>(crank_[u])] = off;
      off += counts_[static_cast<std::size_t>(u * nn + t)];
    }
  }
  for (int t = 0; t < nn; ++t)
    if (t != me) shm_[static_cast<std::size_t>(crank_[t])] = t;
}

// Node rank r's part of the window (r = -1: this rank; parts start 64-byte aligned).
char* NodeWindow::send_piece(int q) const {
  const std::size_t i = static_cast<std::size_t>(q);
  return reinterpret_cast<char*>(win_->peer_data(shm_[i])) + shm_to_[i] * item_bytes_;
}

const char* NodeWindow::recv_piece(int q) const {
  return reinterpret_cast<const char*>(win_->peer_data(-1)) +
         shm_from_[static_cast<std::size_t>(q)] * item_bytes_;
}

ExchangePlan NodeWindow::messages(const ExchangePlan& plan) const {
  TESSEL_ASSERT(plan.self_count == 0);
  ExchangePlan msgs;
  auto keep = [&](const std::vector<int>& peers, const std::vector<std::int64_t>& counts,
                  std::vector<int>& out_peers, std::vector<std::int64_t>& out_counts,
                  std::vector<std::int64_t>& out_offsets) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i < peers.size(); ++i)
      if (!holds(peers[i])) {
        out_peers.push_back(peers[i]);
        out_counts.push_back(counts[i]);
        out_offsets.push_back(off);
        off += counts[i];
      }
  };
  keep(plan.send_peers, plan.send_counts, msgs.send_peers, msgs.send_counts, msgs.send_offsets);
  keep(plan.recv_peers, plan.recv_counts, msgs.recv_peers, msgs.recv_counts, msgs.recv_offsets);
  return msgs;
}

void NodeWindow::record_stores() const {
  for (std::int64_t n : stores_) win_->record_transfer(n * item_bytes_);
}

void NodeWindow::publish() const { win_->publish(node_->comm()); }

void NodeWindow::unlock() const { win_->unlock_all(); }

}  // namespace tessel::comm::detail

// RedistPlan executor node-shared: peers on this node move through an MPI-3 shared-memory
// window that holds each destination's incoming pieces (the source packs straight into the
// destination's part, the destination unpacks from its own part); peers on other nodes, and
// every peer of a node whose window could not be created, use the p2p executor. The node
// communicator and the window are c's cached ones when c has a cache (a Context's
// communicator: Comm::cache(); made once, the window grown only when a part must grow),
// else made for this call. Reads as:
// node split -> allgather of the node's pair counts -> window (when a pair shares data) ->
// pack -> stores recorded, p2p sends -> publish (Win_sync + node barrier + Win_sync) -> wait
// -> unpack -> unlock.
#include <complex>

#include "redist_exec.hpp"
#include "tessel/comm/comm_cache.hpp"
#include "tessel/comm/shared_window.hpp"
#include "tessel/core/error.hpp"

namespace tessel::layout::detail {
namespace {

template <class T>
class NodeSharedRedist final : public RedistExecutor<T> {
 public:
  NodeSharedRedist(const comm::Comm& c, const comm::ExchangePlan& plan, const RedistOptions& opt)
      : shm_(static_cast<std::size_t>(c.size()), -1),
        shm_to_(static_cast<std::size_t>(c.size()), 0),
        shm_from_(static_cast<std::size_t>(c.size()), 0) {
    const int p = c.size();
    std::vector<std::int64_t> scount(static_cast<std::size_t>(p), 0);
    for (std::size_t i = 0; i < plan.send_peers.size(); ++i)
      scount[static_cast<std::size_t>(plan.send_peers[i])] = plan.send_counts[i];
    open_window(c, scount, opt);
    // The pairs that do not move through the window: a plan of their own, offsets compacted.
    comm::ExchangePlan msgs;
    auto keep_p2p = [&](const std::vector<int>& peers, const std::vector<std::int64_t>& counts,
                        std::vector<int>& out_peers, std::vector<std::int64_t>& out_counts,
                        std::vector<std::int64_t>& out_offsets) {
      std::int64_t off = 0;
      for (std::size_t i = 0; i < peers.size(); ++i)
        if (shm_[static_cast<std::size_t>(peers[i])] < 0) {
          out_peers.push_back(peers[i]);
          out_counts.push_back(counts[i]);
          out_offsets.push_back(off);
          off += counts[i];
        }
    };
    keep_p2p(plan.send_peers, plan.send_counts, msgs.send_peers, msgs.send_counts,
             msgs.send_offsets);
    keep_p2p(plan.recv_peers, plan.recv_counts, msgs.recv_peers, msgs.recv_counts,
             msgs.recv_offsets);
    for (std::size_t i = 0; i < plan.send_peers.size(); ++i)
      if (shm_[static_cast<std::size_t>(plan.send_peers[i])] >= 0)
        stores_.push_back(plan.send_counts[i]);
    p2p_ = make_p2p_redist<T>(c, std::move(msgs), win_ ? node_->comm().raw() : MPI_COMM_NULL);
  }
  void post_receives() override { p2p_->post_receives(); }
  T* send_piece(int q) override {
    const int t = shm_[static_cast<std::size_t>(q)];
    return t >= 0 ? part(t) + shm_to_[static_cast<std::size_t>(q)] : p2p_->send_piece(q);
  }
  void start() override {
    for (std::int64_t n : stores_) win_->record_transfer(n * static_cast<std::int64_t>(sizeof(T)));
    p2p_->start();
  }
  void wait() override {
    // Unified memory model (MPI-3.1 sec. 11.5.4 / example 11.10): Win_sync + node barrier +
    // Win_sync orders every peer's stores into my part before my loads after it.
    if (win_) win_->publish(node_->comm());
    p2p_->wait();
  }
  const T* recv_piece(int q) const override {
    return shm_[static_cast<std::size_t>(q)] >= 0
               ? part(-1) + shm_from_[static_cast<std::size_t>(q)]
               : p2p_->recv_piece(q);
  }
  void finish() override {
    if (win_) win_->unlock_all();
    // Without a cache, ~NodeShared frees the window (MPI_Win_free, collective over the node)
    // after every rank's loads; a cached one is kept for the next call.
  }

 private:
  // The node split and, when some pair on the node shares data, the window; fills shm_,
  // shm_to_, shm_from_. Node rank order is the order of c's ranks, so the destination's part
  // holds its incoming pieces by source rank of c.
  void open_window(const comm::Comm& c, const std::vector<std::int64_t>& scount,
                   const RedistOptions& opt) {
    const int p = c.size();
    if (p <= 1) return;
    comm::NodeShared* ns = nullptr;
    if (c.cache()) {
      ns = &c.cache()->node_shared(c, redist_node_size(c, opt));
    } else {
      own_ = std::make_unique<comm::NodeShared>(c, redist_node_size(c, opt));
      ns = own_.get();
    }
    node_ = &ns->node();
    const comm::Comm& nc = node_->comm();
    const int nn = nc.size();
    std::vector<int> crank(static_cast<std::size_t>(nn), -1);  // node rank -> rank of c
    for (int q = 0; q < p; ++q)
      if (node_->node_rank_of(q) >= 0) crank[static_cast<std::size_t>(node_->node_rank_of(q))] = q;
    // counts[u * nn + t]: elements node rank u sends to node rank t (known on every node rank).
    // The allgather also orders the reuse of a cached window: every node rank has finished
    // its loads of the previous call before any rank stores into the window for this one.
    std::vector<std::int64_t> mine(static_cast<std::size_t>(nn), 0),
        counts(static_cast<std::size_t>(nn) * static_cast<std::size_t>(nn), 0);
    for (int t = 0; t < nn; ++t)
      if (t != nc.rank())
        mine[static_cast<std::size_t>(t)] = scount[static_cast<std::size_t>(crank[t])];
    if (nn > 1) nc.allgather(mine.data(), nn, counts.data());
    std::int64_t node_total = 0;
    std::vector<std::int64_t> need(static_cast<std::size_t>(nn), 0);  // bytes of each part
    for (int u = 0; u < nn; ++u)
      for (int t = 0; t < nn; ++t) {
        const std::int64_t x = counts[static_cast<std::size_t>(u * nn + t)];
        node_total += x;
        need[static_cast<std::size_t>(t)] += x * static_cast<std::int64_t>(sizeof(T));
      }
    if (node_total == 0) return;  // the same decision on every node rank
    win_ = ns->window(need);      // null on every node rank alike: this node falls back to p2p
    if (!win_) return;
    win_->lock_all();
    for (int t = 0; t < nn; ++t) {
      std::int64_t off = 0;  // where node rank u's pieces start in t's part
      for (int u = 0; u < nn; ++u) {
        if (u == t) continue;
        if (u == nc.rank()) shm_to_[static_cast<std::size_t>(crank[t])] = off;
        if (t == nc.rank()) shm_from_[static_cast<std::size_t>(crank[u])] = off;
        off += counts[static_cast<std::size_t>(u * nn + t)];
      }
    }
    for (int t = 0; t < nn; ++t)
      if (t != nc.rank()) shm_[static_cast<std::size_t>(crank[t])] = t;
  }

  // Node rank r's part of the window as elements of T (r = -1: this rank; parts start 64-byte
  // aligned).
  T* part(int r) const { return reinterpret_cast<T*>(win_->peer_data(r)); }

  // Declaration order is destruction order reversed: the p2p executor (its requests and
  // failure guard) goes first, then a window and node communicator made for this call only.
  std::unique_ptr<comm::NodeShared> own_;             // without a cache
  const comm::NodeComm* node_ = nullptr;              // own_'s or the cache's
  comm::SharedWindow<unsigned char>* win_ = nullptr;  // null: no same-node pair uses the window
  std::vector<int> shm_;                // q's node rank when q moves through the window, else -1
  std::vector<std::int64_t> shm_to_;    // my offset in q's part
  std::vector<std::int64_t> shm_from_;  // q's offset in my part
  std::vector<std::int64_t> stores_;    // elements stored into each same-node peer's part
  std::unique_ptr<RedistExecutor<T>> p2p_;
};

}  // namespace

template <class T>
std::unique_ptr<RedistExecutor<T>> make_node_shared_redist(const comm::Comm& c,
                                                           const comm::ExchangePlan& plan,
                                                           const RedistOptions& opt) {
  return std::make_unique<NodeSharedRedist<T>>(c, plan, opt);
}

template std::unique_ptr<RedistExecutor<double>> make_node_shared_redist<double>(
    const comm::Comm&, const comm::ExchangePlan&, const RedistOptions&);
template std::unique_ptr<RedistExecutor<std::complex<double>>>
make_node_shared_redist<std::complex<double>>(const comm::Comm&, const comm::ExchangePlan&,
                                              const RedistOptions&);

}  // namespace tessel::layout::detail

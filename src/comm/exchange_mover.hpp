#pragma once
// Private to src/comm: the strategies of comm::Exchange, one file each, over untyped buffers:
//   exchange_p2p.cpp          MPI_Irecv/MPI_Isend per peer;
//   exchange_alltoallv.cpp    MPI_Ialltoallv (alltoallv: waited for in start);
//   exchange_neighbor.cpp     MPI_Ineighbor_alltoallv or the persistent request;
//   exchange_node_shared.cpp  the node's shared window (NodeWindow), beside p2p for the rest.
// ExchangeCore (exchange.cpp) owns the buffers, the requests, the failure guard and the
// ledger's collective record; a mover only posts the MPI calls of its strategy.
#include <cstdint>
#include <memory>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/comm/comm_cache.hpp"
#include "tessel/comm/exchange.hpp"
#include "tessel/comm/shared_window.hpp"

namespace tessel::comm::detail {

/// The MPI calls of one strategy for one plan (the pieces that go by MPI; no self piece is
/// moved here). Buffers are the send and receive buffers the plan's offsets index, in items.
class ExchangeMover {
 public:
  virtual ~ExchangeMover() = default;
  /// True for one collective call per exchange (recorded by ExchangeCore as one call of the
  /// plan's payload); false for p2p (recorded per message by Comm::isend/irecv).
  virtual bool collective() const { return true; }
  /// Not collective. Posts what needs no packed data (p2p: the receives).
  virtual void post_receives(char* /*recv*/, RequestSet& /*rs*/) {}
  /// Posts the exchange into `rs` (collective for the collective strategies).
  virtual void start(const char* send, char* recv, RequestSet& rs) = 0;
};

/// Not collective. Receives and sends with tag `tag`; `plan` must outlive the mover.
std::unique_ptr<ExchangeMover> make_p2p_mover(const Comm& c, const ExchangePlan& plan,
                                              const ExchangeItem& item, int tag);
/// Not collective. `blocking`: alltoallv (completes in start), else ialltoallv; `bytes` is the
/// payload the trace records.
std::unique_ptr<ExchangeMover> make_alltoallv_mover(const Comm& c, const ExchangePlan& plan,
                                                    const ExchangeItem& item, bool blocking,
                                                    std::int64_t bytes);
/// Collective over `c`: the graph communicator; `persistent` also binds the request to the
/// buffers `send` and `recv` (which must then stay the ones of every start).
std::unique_ptr<ExchangeMover> make_neighbor_mover(const Comm& c, const ExchangePlan& plan,
                                                   const ExchangeItem& item, bool persistent,
                                                   std::int64_t bytes, const char* send,
                                                   char* recv);

/// The node-shared strategy's window: peers on this node move through an MPI-3 shared-memory
/// window that holds each destination's incoming pieces (the source packs straight into the
/// destination's part, the destination unpacks from its own part). The node communicator and
/// the window are c's cached ones when c has a cache (a Context's communicator:
/// Comm::cache(); made once, the window grown only when a part must grow), else made here.
class NodeWindow {
 public:
  /// Collective over `c`: the node split, an allgather of the node's pair counts, and the
  /// window when some pair on the node shares data. Null when no pair of this node uses a
  /// window (one rank; nothing to move on the node; MPI could not create the window): the
  /// same on every rank of the node, whose pairs then go point-to-point.
  static std::unique_ptr<NodeWindow> open(const Comm& c, const ExchangePlan& plan,
                                          std::int64_t item_bytes, int node_size);
  /// Collective over `c`: the node split only (use open()).
  NodeWindow(const Comm& c, int node_size);
  /// Rank q's piece goes through the window.
  bool holds(int q) const { return shm_[static_cast<std::size_t>(q)] >= 0; }
  /// For holds(q): where this rank stores its piece for q, where q's piece for it is.
  char* send_piece(int q) const;
  const char* recv_piece(int q) const;
  /// The plan less the pieces the window holds (offsets compacted in the same order).
  ExchangePlan messages(const ExchangePlan& plan) const;
  MPI_Comm node_comm() const { return node_->comm().raw(); }
  /// Not collective. Records this rank's stores into its peers' parts (the ledger's one-sided
  /// record of the window).
  void record_stores() const;
  /// Collective over the node. Orders every peer's stores into my part before my loads after
  /// it (Win_sync + node barrier + Win_sync: MPI-3.1 sec. 11.5.4, example 11.10).
  void publish() const;
  /// Not collective. Ends the access epoch (after the loads).
  void unlock() const;

 private:
  // Fills counts_ from the allgather of the node's pair counts; false when nothing moves.
  bool gather_counts(const std::vector<std::int64_t>& scount);
  void place_pieces();  // shm_, shm_to_, shm_from_ from counts_

  std::unique_ptr<NodeShared> own_;  // without a cache
  NodeShared* ns_ = nullptr;         // own_ or the cache's
  const NodeComm* node_ = nullptr;   // ns_'s
  SharedWindow<unsigned char>* win_ = nullptr;
  std::int64_t item_bytes_ = 0;
  std::vector<int> crank_;              // node rank -> rank of c
  std::vector<std::int64_t> counts_;    // [u * nn + t]: items node rank u sends to node rank t
  std::vector<int> shm_;                // q's node rank when q moves through the window, else -1
  std::vector<std::int64_t> shm_to_;    // my offset (items) in q's part
  std::vector<std::int64_t> shm_from_;  // q's offset (items) in my part
  std::vector<std::int64_t> stores_;    // items stored into each same-node peer's part
};

}  // namespace tessel::comm::detail

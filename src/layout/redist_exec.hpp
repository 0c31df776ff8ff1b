#pragma once
// Private to src/layout: the executors of a RedistPlan behind one interface, one file each:
//   redist_exec_p2p.cpp          one point-to-point message per peer and direction;
//   redist_exec_alltoallv.cpp    one MPI_Ialltoallv (counts of size p, zero for non-peers);
//   redist_exec_node_shared.cpp  same-node peers through an MPI-3 shared window, the others
//                                point-to-point.
// redistribute() asks an executor where to pack each peer's piece, starts it, waits, reads
// each peer's piece from where the executor says, and finishes it. The kept elements are
// copied by redistribute() itself (no executor sees them).
#include <cstdint>
#include <memory>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/comm/exchange.hpp"
#include "tessel/core/uninit_vector.hpp"
#include "tessel/layout/redist_plan.hpp"
#include "tessel/layout/redistribute.hpp"

namespace tessel::layout::detail {

template <class T>
class RedistExecutor {
 public:
  virtual ~RedistExecutor() = default;
  /// Not collective. Posts what needs no packed data (p2p: the receives).
  virtual void post_receives() {}
  /// Where this rank packs the plan.send_to(q) elements for peer q (contiguous).
  virtual T* send_piece(int q) = 0;
  /// After packing every piece: moves them (collective for alltoallv; neighbour-wise for
  /// p2p; the node-shared executor records its window stores here).
  virtual void start() = 0;
  /// Blocks until every piece for this rank is readable (polled; PeerFailure on a notice).
  virtual void wait() = 0;
  /// After wait(): where the plan.recv_from(q) elements from peer q are (contiguous).
  virtual const T* recv_piece(int q) const = 0;
  /// After unpacking (node-shared: ends the window's access epoch).
  virtual void finish() {}
};

/// The packed send and receive buffers of the peers' pieces of an ExchangePlan (the self
/// piece is not stored) and where each rank's piece starts in them.
template <class T>
struct PackedPieces {
  PackedPieces(const comm::ExchangePlan& plan, int comm_size)
      : send(static_cast<std::size_t>(plan.send_items() - plan.self_count) +
             1),  // + 1: data() valid
        recv(static_cast<std::size_t>(plan.recv_items() - plan.self_count) + 1),
        send_at(offsets(plan.send_peers, plan.send_offsets, comm_size)),
        recv_at(offsets(plan.recv_peers, plan.recv_offsets, comm_size)) {}
  T* send_piece(int q) { return send.data() + send_at[static_cast<std::size_t>(q)]; }
  const T* recv_piece(int q) const { return recv.data() + recv_at[static_cast<std::size_t>(q)]; }

  UninitVector<T> send, recv;  // every element is packed or received before it is read
  std::vector<std::int64_t> send_at, recv_at;  // size comm_size; -1 for a rank that is no peer

 private:
  static std::vector<std::int64_t> offsets(const std::vector<int>& peers,
                                           const std::vector<std::int64_t>& off, int comm_size) {
    std::vector<std::int64_t> at(static_cast<std::size_t>(comm_size), -1);
    for (std::size_t i = 0; i < peers.size(); ++i) at[static_cast<std::size_t>(peers[i])] = off[i];
    return at;
  }
};

/// Not collective (the p2p executor posts nothing in its constructor). `plan` is an exchange
/// over `c` without a self piece (self_count 0); extra_watch (may be null) is one more
/// communicator whose failure notices end this executor's waits and which it notifies when
/// abandoned (the node-shared executor's node communicator).
template <class T>
std::unique_ptr<RedistExecutor<T>> make_p2p_redist(const comm::Comm& c, comm::ExchangePlan plan,
                                                   MPI_Comm extra_watch = MPI_COMM_NULL);
/// Not collective (the collective call is in start()).
template <class T>
std::unique_ptr<RedistExecutor<T>> make_alltoallv_redist(const comm::Comm& c,
                                                         const comm::ExchangePlan& plan);
/// Collective over `c` (the node split, the window over each node).
template <class T>
std::unique_ptr<RedistExecutor<T>> make_node_shared_redist(const comm::Comm& c,
                                                           const comm::ExchangePlan& plan,
                                                           const RedistOptions& opt);

}  // namespace tessel::layout::detail

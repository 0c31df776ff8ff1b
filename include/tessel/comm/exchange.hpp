#pragma once
/// @file exchange.hpp
/// One exchange plan and its executors. ExchangePlan is pure data — this rank's per-peer
/// counts and offsets of items to send and to receive — computed without MPI (the stencil's
/// halo plan, the dense redistribution's plan layout::RedistPlan and the packed exchange of
/// the block-sparse code build one). An
/// Exchanger executes it over a communicator for a batch of `width` values per item, with one
/// message per peer whatever the width, by one of five strategies behind one interface:
///   alltoallv   blocking for the caller (no overlap): MPI_Alltoallv semantics over all ranks
///               (counts of size p, zeros for non-peers), posted as MPI_Ialltoallv and waited
///               for in start() by polling (MPICH busy-polls in a blocking MPI_Alltoallv);
///   ialltoallv  MPI_Ialltoallv (nonblocking);
///   neighbor    MPI_Dist_graph_create_adjacent once, then MPI_Ineighbor_alltoallv;
///   persistent  MPI_Neighbor_alltoallv_init once, then MPI_Start (MPI-4; only when tessel was
///               built against an MPI that has it: have_persistent_neighbor());
///   p2p         MPI_Irecv/MPI_Isend to the peers only.
/// Every strategy records its traffic in the communicator's ledger in the phase current at
/// start(), by the rule of shared/tools/commcount: the collectives as one call with payload
/// sum(send) + sum(recv) bytes (all peers are other ranks), p2p as messages.
///
/// Completion goes through comm's RequestSet like every other tessel wait: test() is one
/// MPI_Testsome pass, wait() polls (yielding, then sleeping: no busy MPI_Wait under MPICH),
/// throws PeerFailure when a failure notice arrives on the communicator, and the traced
/// transfers ("coll" or p2p, with bytes) complete in the trace when the request does. An
/// executor destroyed while an exchange is outstanding waits for it, or, during unwinding,
/// abandons it and notifies the peers (RequestSet's failure safety).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessel/comm/comm.hpp"

namespace tessel::comm {

/// This rank's part of an exchange (pure data). Items to peer send_peers[i] are the send
/// buffer's items [send_offsets[i], send_offsets[i] + send_counts[i]); likewise for receives.
/// Peers are other ranks, each listed at most once per side, ascending. The piece a rank keeps
/// (self_count items, from send offset self_send to receive offset self_recv) is copied without
/// a message. The stencil's halo plan (stencil/halo_plan.hpp) and the packed exchange of the
/// block-sparse code (packed_exchange.hpp: from_counts) are both this type.
struct ExchangePlan {
  std::vector<int> send_peers;
  std::vector<std::int64_t> send_counts, send_offsets;
  std::vector<int> recv_peers;
  std::vector<std::int64_t> recv_counts, recv_offsets;
  std::int64_t self_count = 0, self_send = 0, self_recv = 0;

  /// Pure. The plan of a packed exchange among `counts.size()` ranks: piece q of the send
  /// buffer (send[q] items, consecutive in rank order) goes to rank q, piece q of the receive
  /// buffer comes from rank q; the caller's own piece is the self piece; peers with a zero
  /// count are left out. Throws Error when the sizes differ or the own piece's send and
  /// receive counts do.
  static ExchangePlan from_counts(const std::vector<std::int64_t>& send,
                                  const std::vector<std::int64_t>& recv, int rank);

  std::int64_t send_items()
      const;  ///< sum of send_counts + self_count (the send buffer holds these)
  std::int64_t recv_items() const;  ///< sum of recv_counts + self_count
  /// Pure. Throws Error when the plan is inconsistent for a communicator of `comm_size` ranks
  /// with caller `rank`: sizes of the vectors differ, a peer out of range, the caller or a
  /// repeated peer, a negative count, or pieces (the self piece included) that overlap or
  /// leave the buffer.
  void validate(int comm_size, int rank) const;
};

/// Not collective. Posts into `rs` one receive per receive peer of `plan` (point-to-point,
/// recorded as p2p): plan.recv_counts[i] x width items of T into recv + recv_offsets[i] x width.
template <class T>
void post_plan_receives(const Comm& c, const ExchangePlan& plan, T* recv, std::int64_t width,
                        int tag, RequestSet& rs) {
  for (std::size_t i = 0; i < plan.recv_peers.size(); ++i)
    c.irecv(recv + plan.recv_offsets[i] * width, plan.recv_counts[i] * width, plan.recv_peers[i],
            tag, rs);
}
/// Not collective. Posts into `rs` one send per send peer of `plan`, then copies the self piece.
template <class T>
void post_plan_sends(const Comm& c, const ExchangePlan& plan, const T* send, T* recv,
                     std::int64_t width, int tag, RequestSet& rs) {
  for (std::size_t i = 0; i < plan.send_peers.size(); ++i)
    c.isend(send + plan.send_offsets[i] * width, plan.send_counts[i] * width, plan.send_peers[i],
            tag, rs);
  std::copy(send + plan.self_send * width, send + (plan.self_send + plan.self_count) * width,
            recv + plan.self_recv * width);
}

/// The MPI int counts and displacements of a plan for MPI_(I)alltoallv over `comm_size` ranks
/// (size comm_size, zero for every rank that is not a peer; the self piece is not part of
/// them), each scaled by `width`. Pure. Throws Error naming the value when one exceeds INT_MAX.
struct AlltoallvCounts {
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  static AlltoallvCounts of(const ExchangePlan& plan, int comm_size, std::int64_t width = 1);
};

/// Collective over `c` (every rank calls it). Posts one MPI_Ialltoallv of the peers' pieces of
/// `plan` (items of T at the plan's offsets in `send` and `recv`) into `rs`; the self piece is
/// not moved (the caller copies it). `k` (AlltoallvCounts::of(plan, c.size())) and both
/// buffers must stay valid until `rs` completes. Recorded as one collective call whose payload
/// is (sum(send_counts) + sum(recv_counts)) x sizeof(T) bytes, shared/tools/commcount's rule.
template <class T>
void post_plan_alltoallv(const Comm& c, const AlltoallvCounts& k, const T* send, T* recv,
                         RequestSet& rs) {
  post_alltoallv_bytes(c, k, send, recv, mpi_type<T>(), sizeof(T), rs);
}
/// The untyped form of post_plan_alltoallv (type `t` of `size` bytes).
void post_alltoallv_bytes(const Comm& c, const AlltoallvCounts& k, const void* send, void* recv,
                          MPI_Datatype t, std::size_t size, RequestSet& rs);

enum class ExchangeStrategy { Alltoallv, Ialltoallv, Neighbor, Persistent, P2P };
/// Pure. "alltoallv", "ialltoallv", "neighbor", "persistent", "p2p"; InputError otherwise.
ExchangeStrategy parse_exchange_strategy(const std::string& s);
const char* to_string(ExchangeStrategy s);
/// Pure. True when tessel was built against an MPI with MPI_Neighbor_alltoallv_init (MPI-4,
/// e.g. MPICH 4.0; Open MPI 4.1 lacks it), detected at build time.
bool have_persistent_neighbor();
/// Pure. True unless tessel is the SMPI build (kSimulatedMpi, docs/simulation.md): SimGrid's SMPI
/// 3.32 has neither MPI_Dist_graph_create_adjacent nor the neighbourhood collectives, so the
/// strategies neighbor and persistent throw InputError there, on every rank.
bool have_neighbor_collectives();

/// Executes one ExchangePlan repeatedly. It owns the send and receive buffers (items x width
/// doubles, item-major: the `width` values of an item are contiguous), so that a persistent
/// request can bind them once. Usage: post_receives() (optional, before packing); fill
/// send_buffer(); start(); test() now and then; wait(); read recv_buffer(). Not thread safe.
class Exchanger {
 public:
  virtual ~Exchanger();
  Exchanger(const Exchanger&) = delete;
  Exchanger& operator=(const Exchanger&) = delete;

  double* send_buffer() { return send_.data(); }
  const double* recv_buffer() const { return recv_.data(); }
  int width() const { return width_; }
  ExchangeStrategy strategy() const { return strategy_; }
  const ExchangePlan& plan() const { return plan_; }

  /// Not collective. Optional, before the send buffer is filled: posts what does not need it.
  /// p2p posts its receives here, so that a peer's message (or a rendezvous request to send
  /// one) matches a posted receive on arrival instead of waiting in the unexpected queue until
  /// this rank reaches start(); the collective strategies post nothing (their receives go out
  /// inside the one collective call). start() calls it when it was not called.
  virtual void post_receives() {}
  /// Collective over the communicator for the collective strategies (every rank calls it,
  /// including ranks with no peer), neighbour-wise for p2p: posts the exchange (alltoallv
  /// completes it here).
  virtual void start() = 0;
  /// Not collective. Drives progress (one MPI_Testsome pass over the outstanding requests:
  /// without an asynchronous progress thread, MPI moves a message only inside such calls);
  /// true once the exchange has completed.
  bool test() { return rs_.test_all(); }
  /// Not collective. Blocks until the exchange has completed (RequestSet::wait_all: polled,
  /// yields the core, throws PeerFailure on a failure notice).
  void wait() { rs_.wait_all(); }

 protected:
  Exchanger(const Comm& c, ExchangePlan plan, int width, ExchangeStrategy s);
  /// Completes or abandons the outstanding requests (as RequestSet's destructor does: waits,
  /// or abandons and notifies the peers when unwinding). Executors that own MPI objects the
  /// requests use (a graph communicator, a persistent request) call it first in their
  /// destructor; noexcept.
  void drain() noexcept;
  /// Bytes of one exchange in the ledger's collective rule: (send + receive items to and from
  /// other ranks) x width.
  std::int64_t payload_bytes() const;
  /// Records one collective call of this exchange's payload in the ledger (the self piece is
  /// not part of it) and copies the self piece (the collective strategies call it in start()).
  void begin_collective();
  /// MPI int counts and displacements of the plan scaled by width (checked to fit in int).
  std::vector<int> scaled(const std::vector<std::int64_t>& v) const;

  const Comm& comm_;
  ExchangePlan plan_;
  int width_;
  ExchangeStrategy strategy_;
  std::vector<double> send_, recv_;
  RequestSet rs_;  ///< the outstanding requests of the current exchange (watches comm_)
};

/// Collective over `c` (every rank calls it with its own plan; the plans must mirror each
/// other: what i sends to j, j receives from i). Validates the plan (Error on every rank if
/// any rank's plan is inconsistent), and builds the executor: neighbor and persistent create
/// the distributed graph communicator here (RAII: freed with the executor); persistent also
/// creates the persistent request (throws InputError on every rank when the MPI lacks it).
/// `c` must outlive the executor.
std::unique_ptr<Exchanger> make_exchanger(const Comm& c, const ExchangePlan& plan, int width,
                                          ExchangeStrategy s);

}  // namespace tessel::comm

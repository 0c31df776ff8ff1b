#pragma once
/// @file exchange.hpp
/// One exchange plan and its executors. ExchangePlan is pure data — this rank's per-peer
/// counts and offsets of items to send and to receive — computed without MPI (the stencil's
/// halo plan builds one; dense and sparse redistributions can build the same type). An
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
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessel/comm/comm.hpp"

namespace tessel::comm {

/// This rank's part of an exchange (pure data). Items to peer send_peers[i] are the send
/// buffer's items [send_offsets[i], send_offsets[i] + send_counts[i]); likewise for receives.
/// Peers are other ranks, each listed at most once per side, ascending.
struct ExchangePlan {
  std::vector<int> send_peers;
  std::vector<std::int64_t> send_counts, send_offsets;
  std::vector<int> recv_peers;
  std::vector<std::int64_t> recv_counts, recv_offsets;

  std::int64_t send_items() const;  ///< sum of send_counts (the send buffer holds these)
  std::int64_t recv_items() const;  ///< sum of recv_counts
  /// Pure. Throws Error when the plan is inconsistent for a communicator of `comm_size` ranks
  /// with caller `rank`: sizes of the vectors differ, a peer out of range, the caller or a
  /// repeated peer, a negative count, or pieces that overlap or leave the buffer.
  void validate(int comm_size, int rank) const;
};

enum class ExchangeStrategy { Alltoallv, Ialltoallv, Neighbor, Persistent, P2P };
/// Pure. "alltoallv", "ialltoallv", "neighbor", "persistent", "p2p"; InputError otherwise.
ExchangeStrategy parse_exchange_strategy(const std::string& s);
const char* to_string(ExchangeStrategy s);
/// Pure. True when tessel was built against an MPI with MPI_Neighbor_alltoallv_init (MPI-4,
/// e.g. MPICH 4.0; Open MPI 4.1 lacks it), detected at build time.
bool have_persistent_neighbor();

/// Executes one ExchangePlan repeatedly. It owns the send and receive buffers (items x width
/// doubles, item-major: the `width` values of an item are contiguous), so that a persistent
/// request can bind them once. Usage: fill send_buffer(); start(); test() now and then;
/// wait(); read recv_buffer(). Not thread safe.
class Exchanger {
 public:
  virtual ~Exchanger() = default;
  Exchanger(const Exchanger&) = delete;
  Exchanger& operator=(const Exchanger&) = delete;

  double* send_buffer() { return send_.data(); }
  const double* recv_buffer() const { return recv_.data(); }
  int width() const { return width_; }
  ExchangeStrategy strategy() const { return strategy_; }
  const ExchangePlan& plan() const { return plan_; }

  /// Collective over the communicator for the collective strategies (every rank calls it,
  /// including ranks with no peer), neighbour-wise for p2p: posts the exchange (alltoallv
  /// completes it here).
  virtual void start() = 0;
  /// Not collective. Drives progress; true once the exchange has completed.
  virtual bool test() = 0;
  /// Not collective. Blocks until the exchange has completed.
  virtual void wait() = 0;

 protected:
  Exchanger(const Comm& c, ExchangePlan plan, int width, ExchangeStrategy s);
  /// Records one collective call of this exchange's payload in the ledger.
  void record_collective() const;
  /// MPI int counts and displacements of the plan scaled by width (checked to fit in int).
  std::vector<int> scaled(const std::vector<std::int64_t>& v) const;

  const Comm& comm_;
  ExchangePlan plan_;
  int width_;
  ExchangeStrategy strategy_;
  std::vector<double> send_, recv_;
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

#pragma once
/// @file exchange_plan.hpp
/// The plan of a counted exchange, pure data: this rank's per-peer counts and offsets of items
/// to send and to receive, computed without MPI (the stencil's halo plan, the dense
/// redistribution's layout::RedistPlan and the packed exchange of the block-sparse code build
/// one), and the strategies that can execute it (exchange.hpp: comm::Exchange).
#include <cstdint>
#include <string>
#include <vector>

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

/// The MPI int counts and displacements of a plan for MPI_(I)alltoallv over `comm_size` ranks
/// (size comm_size, zero for every rank that is not a peer; the self piece is not part of
/// them), each scaled by `width`. Pure. Throws Error naming the value when one exceeds INT_MAX.
struct AlltoallvCounts {
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  static AlltoallvCounts of(const ExchangePlan& plan, int comm_size, std::int64_t width = 1);
};

/// How an exchange moves its pieces (comm::Exchange, exchange.hpp):
///   Alltoallv   blocking for the caller (no overlap): MPI_Alltoallv semantics over all ranks
///               (counts of size p, zeros for non-peers), posted as MPI_Ialltoallv and waited
///               for in start() by polling (MPICH busy-polls in a blocking MPI_Alltoallv);
///   Ialltoallv  MPI_Ialltoallv (nonblocking);
///   Neighbor    MPI_Dist_graph_create_adjacent once, then MPI_Ineighbor_alltoallv;
///   Persistent  MPI_Neighbor_alltoallv_init once, then MPI_Start (MPI-4; only when tessel was
///               built against an MPI that has it: have_persistent_neighbor());
///   P2P         MPI_Irecv/MPI_Isend to the peers only;
///   NodeShared  peers on this node through an MPI-3 shared-memory window (the sender packs
///               straight into the receiver's part), the others as P2P.
enum class ExchangeStrategy { Alltoallv, Ialltoallv, Neighbor, Persistent, P2P, NodeShared };
/// Pure. "alltoallv", "ialltoallv", "neighbor", "persistent", "p2p" (the strategies of a
/// contiguous exchange buffer, the stencil's --exchange); InputError otherwise.
ExchangeStrategy parse_exchange_strategy(const std::string& s);
/// Pure. The name parse_exchange_strategy reads ("node-shared" for NodeShared).
const char* to_string(ExchangeStrategy s);
/// Pure. True when tessel was built against an MPI with MPI_Neighbor_alltoallv_init (MPI-4,
/// e.g. MPICH 4.0; Open MPI 4.1 lacks it), detected at build time.
bool have_persistent_neighbor();
/// Pure. True unless tessel is the SMPI build (kSimulatedMpi, docs/simulation.md): SimGrid's SMPI
/// 3.32 has neither MPI_Dist_graph_create_adjacent nor the neighbourhood collectives, so the
/// strategies neighbor and persistent throw InputError there, on every rank.
bool have_neighbor_collectives();

}  // namespace tessel::comm

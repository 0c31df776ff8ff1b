#pragma once
/// @file p2p_coll.hpp
/// Pipelined nonblocking collectives built from MPI_Isend/MPI_Irecv only (COSMA builds its own
/// broadcast the same way, seed 004 sec. 7.2): the buffer is cut into segments that travel
/// along a chain of ranks, so that every link carries the message once and a rank forwards
/// segment s while segment s+1 is still arriving. Open MPI's default MPI_Ibcast (libnbc) sends
/// the whole buffer from the root to every receiver instead, which serialises on the root's
/// link and defeats the overlap of seed 000 (Huang & Chow) on a real network.
///
/// Chains (m ranks, ring order starting at the root):
///   broadcast   root -> root+1 -> ... -> root+m-1
///   reduce      root+m-1 -> root+m-2 -> ... -> root+1 -> root; each rank adds its own
///               contribution to a segment before forwarding it (the root adds last)
///   allreduce   reduce to rank 0, and every reduced segment is broadcast from rank 0 along
///               the broadcast chain as soon as it is complete (both pipelined)
///
/// Volume (recorded in the ledger as point-to-point at post time, in the phase current then,
/// so the ledger equals what shared/tools/commcount sees): a broadcast of B bytes in
/// s = ceil(B / segment) segments over m ranks: every rank but the root receives B bytes in
/// s messages and every rank but the last sends B bytes in s messages. A reduction is the
/// mirror image (every rank but the root sends, every rank but the first of the chain
/// (root+m-1) receives). count = 0 moves nothing.
///
/// Progress: no threads. Each received segment carries a continuation in the RequestSet
/// (RequestSet::Then) that forwards it; RequestSet::wait / wait_all / test_all drive every
/// outstanding request of the set, so all posted collectives progress together. Forwarding
/// is strictly in segment order, so matching never depends on completion order.
///
/// Tags: every P2P collective on a communicator takes the next value of a per-communicator
/// sequence number (kept in the Comm object, Comm::next_p2p_seq: no process-global state; a
/// second Comm borrowing the same MPI communicator counts on its own, so run the P2P
/// collectives of one MPI communicator through one Comm) and uses tag
/// kP2PTagBase + seq % kP2PTagWindow (tessel/comm/tags.hpp). Tags in
/// [kP2PTagBase, kP2PTagBase + kP2PTagWindow) = [16384, 32767] are therefore reserved on any
/// communicator used with these collectives (32767 is the smallest MPI_TAG_UB allowed); the
/// rest of tessel uses tags below 16384. Like MPI collectives, all ranks of the communicator
/// must call P2P collectives on it in the same order; at most kP2PTagWindow of them may be in
/// flight on one communicator at once.
///
/// Lifetime: the buffers and the MPI communicator must stay valid until the returned Pending
/// is done (as for MPI nonblocking calls); the RequestSet must be driven until then.
#include <cstdint>
#include <string>

#include "tessel/comm/comm.hpp"

namespace tessel::comm {

/// Which implementation a nonblocking collective uses.
enum class CollImpl {
  Mpi,  ///< the MPI library's MPI_Ibcast / MPI_Ireduce / MPI_Iallreduce
  P2P,  ///< tessel's segmented chain of MPI_Isend/MPI_Irecv (this file)
};

/// Pure. "mpi" or "p2p" (case-sensitive); throws InputError naming the value otherwise.
CollImpl parse_coll_impl(const std::string& s);
/// Pure. "mpi" or "p2p".
const char* to_string(CollImpl impl);

inline constexpr int kP2PTagBase = tag::kP2PBase;
inline constexpr int kP2PTagWindow = tag::kP2PWindow;
/// Default segment size of the P2P collectives: 32 KiB. Measured on the emulated cluster
/// (docs/bench/2026-11-23, 4 nodes, 1 gbit, Open MPI TCP): an 8 MiB chain broadcast took
/// 0.074-0.083 s with 16-32 KiB segments (the wire time is 0.068 s) but 0.13-0.21 s with
/// 128 KiB-4 MiB segments: segments above the TCP eager limit (64 KiB) each pay a rendezvous
/// handshake and the chain stalls. Networks with RDMA rendezvous may prefer larger segments.
inline constexpr std::int64_t kDefaultSegmentBytes = 32 * 1024;

/// Pure. Items per segment for items of `item_size` bytes (at least 1).
std::int64_t segment_items(std::int64_t segment_bytes, std::size_t item_size);
/// Pure. Number of segments of a message of `count` items (0 when count = 0).
std::int64_t segment_count(std::int64_t count, std::int64_t segment_bytes, std::size_t item_size);

/// Element-wise acc[i] += in[i] for n items of one type.
using AddFn = void (*)(void* acc, const void* in, std::int64_t n);

/// Collective (nonblocking) over `c`: chain broadcast of `count` items of type `t` (size `sz`)
/// from `root`. Returns the token that is done once this rank's part is complete.
Pending p2p_ibcast_raw(const Comm& c, void* buf, std::int64_t count, MPI_Datatype t, std::size_t sz,
                       int root, RequestSet& rs, std::int64_t segment_bytes = kDefaultSegmentBytes);
/// Collective (nonblocking) over `c`: chain sum-reduction of `send` into `recv` on `root`
/// (recv ignored elsewhere; must not alias send). `add` sums items of type `t`.
Pending p2p_ireduce_raw(const Comm& c, const void* send, void* recv, std::int64_t count,
                        MPI_Datatype t, std::size_t sz, AddFn add, int root, RequestSet& rs,
                        std::int64_t segment_bytes = kDefaultSegmentBytes);
/// Collective (nonblocking) over `c`: chain reduce to rank 0 pipelined into a chain broadcast
/// from rank 0; every rank's `recv` gets the sum (must not alias send).
Pending p2p_iallreduce_raw(const Comm& c, const void* send, void* recv, std::int64_t count,
                           MPI_Datatype t, std::size_t sz, AddFn add, RequestSet& rs,
                           std::int64_t segment_bytes = kDefaultSegmentBytes);

/// The AddFn of T (double, float, int, std::int64_t).
template <class T>
void add_items(void* acc, const void* in, std::int64_t n) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(in);
  for (std::int64_t i = 0; i < n; ++i) a[i] += b[i];
}

}  // namespace tessel::comm

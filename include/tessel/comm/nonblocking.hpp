#pragma once
/// @file nonblocking.hpp
/// Nonblocking collectives on a Comm (recorded in its ledger by the payload rule of
/// shared/tools/commcount, at post time), DupSet (N duplicates of one communicator, for the
/// "nonblocking overlap" of Huang & Chow, seed 000), the one helper that splits a buffer into
/// N contiguous parts, and the sleep-polled Ibarrier that parks inactive ranks.
#include <chrono>
#include <cstdint>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/comm/p2p_coll.hpp"

namespace tessel::comm {

/// One of N contiguous parts of a buffer of `count` items: [begin, begin + count).
struct Part {
  std::int64_t begin = 0, count = 0;
};

/// Pure. Part `c` (0 <= c < n) of `count` items split into `n` near-equal contiguous parts (the
/// first count % n parts one longer), each part a multiple of `unit` items (for example one
/// column of a column-major block): the split is over count / unit units. Parts may be
/// empty when there are fewer units than parts.
Part split_part(std::int64_t count, int n, int c, std::int64_t unit = 1);

/// N owned duplicates of one communicator (RAII; freed on destruction), all recording into
/// the parent's ledger. Collective over the parent to build.
class DupSet {
 public:
  DupSet() = default;
  /// Collective over `parent`: n >= 1 calls of MPI_Comm_dup. A null parent gives n null Comms.
  DupSet(const Comm& parent, int n);
  int size() const { return static_cast<int>(comms_.size()); }
  const Comm& operator[](int c) const { return comms_[static_cast<std::size_t>(c)]; }

 private:
  std::vector<Comm> comms_;
};

/// Collective (nonblocking) over `c`: broadcast of `count` items from `root`; completes in
/// `rs` (RequestSet::wait(token) or wait_all). impl = Mpi: MPI_Ibcast, recorded as
/// count * sizeof(T) bytes and one collective call on every rank (root included). impl = P2P:
/// the segmented chain of p2p_coll.hpp (segments of `segment_bytes`), recorded as
/// point-to-point messages.
template <class T>
Pending ibcast(const Comm& c, T* buf, std::int64_t count, int root, RequestSet& rs,
               CollImpl impl = CollImpl::Mpi, std::int64_t segment_bytes = kDefaultSegmentBytes) {
  if (impl == CollImpl::P2P)
    return p2p_ibcast_raw(c, buf, count, mpi_type<T>(), sizeof(T), root, rs, segment_bytes);
  return ibcast_raw(c, buf, count, mpi_type<T>(), sizeof(T), root, rs);
}
/// Collective (nonblocking) over `c`: sum of `count` items of `send` into `recv` on `root`
/// (recv is ignored elsewhere; it must not alias send). impl = Mpi: MPI_Ireduce with MPI_SUM,
/// recorded as count * sizeof(T) bytes and one call on every rank. impl = P2P: the reverse
/// chain of p2p_coll.hpp, recorded as point-to-point messages.
template <class T>
Pending ireduce_sum(const Comm& c, const T* send, T* recv, std::int64_t count, int root,
                    RequestSet& rs, CollImpl impl = CollImpl::Mpi,
                    std::int64_t segment_bytes = kDefaultSegmentBytes) {
  if (impl == CollImpl::P2P)
    return p2p_ireduce_raw(c, send, recv, count, mpi_type<T>(), sizeof(T), &add_items<T>, root, rs,
                           segment_bytes);
  return ireduce_raw(c, send, recv, count, mpi_type<T>(), sizeof(T), MPI_SUM, root, rs);
}
/// Collective (nonblocking) over `c`: every rank's `recv` gets the sum of all `send` (must not
/// alias). impl = Mpi: MPI_Iallreduce (recorded as count * sizeof(T) bytes, one call);
/// impl = P2P: chain reduce to rank 0 pipelined into a chain broadcast (point-to-point).
template <class T>
Pending iallreduce_sum(const Comm& c, const T* send, T* recv, std::int64_t count, RequestSet& rs,
                       CollImpl impl = CollImpl::Mpi,
                       std::int64_t segment_bytes = kDefaultSegmentBytes) {
  if (impl == CollImpl::P2P)
    return p2p_iallreduce_raw(c, send, recv, count, mpi_type<T>(), sizeof(T), &add_items<T>, rs,
                              segment_bytes);
  return iallreduce_raw(c, send, recv, count, mpi_type<T>(), sizeof(T), MPI_SUM, rs);
}
/// Collective (blocking) over `c`: ireduce_sum and wait; recorded as ireduce_sum.
template <class T>
void reduce_sum(const Comm& c, const T* send, T* recv, std::int64_t count, int root,
                CollImpl impl = CollImpl::Mpi, std::int64_t segment_bytes = kDefaultSegmentBytes) {
  RequestSet rs;
  ireduce_sum(c, send, recv, count, root, rs, impl, segment_bytes);
  rs.wait_all();
}
/// Collective (blocking) over `c`: ibcast and wait; recorded as ibcast.
template <class T>
void bcast(const Comm& c, T* buf, std::int64_t count, int root, CollImpl impl,
           std::int64_t segment_bytes = kDefaultSegmentBytes) {
  RequestSet rs;
  ibcast(c, buf, count, root, rs, impl, segment_bytes);
  rs.wait_all();
}
/// Collective (blocking) over `c`: iallreduce_sum and wait; recorded as iallreduce_sum.
template <class T>
void allreduce_sum(const Comm& c, const T* send, T* recv, std::int64_t count,
                   CollImpl impl = CollImpl::Mpi,
                   std::int64_t segment_bytes = kDefaultSegmentBytes) {
  RequestSet rs;
  iallreduce_sum(c, send, recv, count, rs, impl, segment_bytes);
  rs.wait_all();
}

/// Collective over `c`: posts MPI_Ibarrier and waits for it by MPI_Test every `poll`,
/// sleeping in between (the wake-up signal of the seed's "inactive ranks"; they give up the
/// core while they wait). Recorded as one collective call of 0 bytes.
void sleep_barrier(const Comm& c, std::chrono::microseconds poll = std::chrono::milliseconds(10));

Pending ibcast_raw(const Comm& c, void* buf, std::int64_t count, MPI_Datatype t, std::size_t sz,
                   int root, RequestSet& rs);
Pending ireduce_raw(const Comm& c, const void* send, void* recv, std::int64_t count, MPI_Datatype t,
                    std::size_t sz, MPI_Op op, int root, RequestSet& rs);
Pending iallreduce_raw(const Comm& c, const void* send, void* recv, std::int64_t count,
                       MPI_Datatype t, std::size_t sz, MPI_Op op, RequestSet& rs);

}  // namespace tessel::comm

#pragma once
/// @file group_p2p.hpp
/// Allgather and reduce-scatter within a group of ranks, built from point-to-point messages
/// so that they can be posted, overlapped with computation, and counted exactly.
#include <cstdint>
#include <vector>

#include "tessel/comm/comm.hpp"

namespace tessel::comm {

/// Contiguous pieces of one buffer, one per group member: piece g is [offset[g], +count[g]).
struct Pieces {
  std::vector<std::int64_t> offset, count;
};

/// Not collective by itself (each member of `members` must call it with the same pieces).
/// Posts the allgather of `buf`: this rank's piece (index `me`, already in place) is sent to
/// every other member, and every other piece is received into place. Completes in `rs`.
template <class T>
void post_allgather(const Comm& c, const std::vector<int>& members, int me, const Pieces& pc,
                    T* buf, int tag, RequestSet& rs) {
  const int q = static_cast<int>(members.size());
  for (int g = 0; g < q; ++g)
    if (g != me && pc.count[g] > 0) c.irecv(buf + pc.offset[g], pc.count[g], members[g], tag, rs);
  if (pc.count[me] > 0)
    for (int g = 0; g < q; ++g)
      if (g != me) c.isend(buf + pc.offset[me], pc.count[me], members[g], tag, rs);
}

/// Every member of `members` calls it. Sums `buf` (the whole vector, same length on every
/// member) over the group and leaves piece `me` of the sum in `out` (pc.count[me] items).
/// Blocking. Each member receives only the other members' copies of its own piece.
template <class T>
void reduce_scatter(const Comm& c, const std::vector<int>& members, int me, const Pieces& pc,
                    const T* buf, T* out, int tag) {
  const int q = static_cast<int>(members.size());
  const std::int64_t mine = pc.count[me];
  std::vector<T> recv(static_cast<std::size_t>(mine) * (q > 1 ? q - 1 : 0));
  RequestSet rs;
  int slot = 0;
  for (int g = 0; g < q; ++g)
    if (g != me && mine > 0) c.irecv(recv.data() + mine * slot++, mine, members[g], tag, rs);
  for (int g = 0; g < q; ++g)
    if (g != me && pc.count[g] > 0) c.isend(buf + pc.offset[g], pc.count[g], members[g], tag, rs);
  rs.wait_all();
  for (std::int64_t x = 0; x < mine; ++x) out[x] = buf[pc.offset[me] + x];
  for (int s = 0; s < slot; ++s)
    for (std::int64_t x = 0; x < mine; ++x) out[x] += recv[static_cast<std::size_t>(s * mine + x)];
}

}  // namespace tessel::comm

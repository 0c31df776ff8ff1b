#pragma once
/// @file packed_exchange.hpp
/// A sparse all-to-all exchange of packed buffers: every rank holds one send buffer cut into
/// consecutive pieces by destination rank (piece q goes to rank q) and receives one buffer
/// cut the same way by source rank. Counts travel first in one MPI_Alltoall (recorded as a
/// collective with shared/tools/commcount's payload rule, 2 (p-1) * 8 bytes per rank), then
/// one point-to-point message per pair and direction with a nonzero count (recorded as p2p);
/// the own piece is copied without a message. Used by the block-sparse finalize, transpose
/// and redistribution.
#include <cstdint>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/comm/exchange.hpp"

namespace tessel::comm {

/// Collective over `c`. MPI_Alltoall of one int64 per rank: returns recv with recv[q] = the
/// value rank q gave for this rank (send[me] on rank q). send.size() must equal c.size().
std::vector<std::int64_t> alltoall_counts(const Comm& c, const std::vector<std::int64_t>& send);

/// Pure data: items per peer of a packed exchange; pieces are consecutive in rank order.
struct ExchangeCounts {
  std::vector<std::int64_t> send, recv;
  /// Start of each piece (size p + 1; the last entry is the total).
  static std::vector<std::int64_t> offsets(const std::vector<std::int64_t>& count) {
    std::vector<std::int64_t> off(count.size() + 1, 0);
    for (std::size_t q = 0; q < count.size(); ++q) off[q + 1] = off[q] + count[q];
    return off;
  }
};

/// Collective over `c` (point-to-point between the pairs that have data). Sends piece q of
/// `send` to rank q and receives piece q of `recv` (sized by counts.recv) from rank q; the own
/// piece is copied. Blocking. All ranks' counts must be consistent (as alltoall_counts gives).
/// The pieces are an ExchangePlan (ExchangePlan::from_counts), run by the one executor
/// (exchange.hpp) on the caller's buffers, strategy p2p: receives first, then sends; should
/// this rank leave while messages are posted, its peers get a failure notice and throw instead
/// of waiting for it.
template <class T>
void exchange(const Comm& c, const ExchangeCounts& counts, const T* send, T* recv, int tag) {
  ExchangeOptions opt;
  opt.strategy = ExchangeStrategy::P2P;
  opt.tag = tag;
  Exchange<T, BufferOwner::Caller> ex(
      c, ExchangePlan::from_counts(counts.send, counts.recv, c.rank()), opt);
  ex.start(send, recv);
  ex.wait();
}

/// Collective over `c`: alltoall_counts of `send_count`, then exchange(). Returns the
/// received buffer; `recv_count` (if given) receives the items per source rank.
template <class T>
std::vector<T> exchange_packed(const Comm& c, const std::vector<std::int64_t>& send_count,
                               const std::vector<T>& send, int tag,
                               std::vector<std::int64_t>* recv_count = nullptr) {
  ExchangeCounts counts{send_count, alltoall_counts(c, send_count)};
  std::int64_t total = 0;
  for (auto x : counts.recv) total += x;
  std::vector<T> recv(static_cast<std::size_t>(total));
  exchange(c, counts, send.data(), recv.data(), tag);
  if (recv_count) *recv_count = std::move(counts.recv);
  return recv;
}

}  // namespace tessel::comm

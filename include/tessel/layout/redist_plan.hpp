#pragma once
/// @file redist_plan.hpp
/// The plan of one rank's part of a dense redistribution between two layouts: pure data,
/// computed without MPI. It is what layout::redistribute() executes (by any executor:
/// point-to-point, node-shared window, MPI_Alltoallv) and what redist_volume() reads, so the
/// prediction and the bytes moved come from one computation. `--explain` prints it.
#include <cstdint>
#include <string>
#include <vector>

#include "tessel/comm/exchange_plan.hpp"
#include "tessel/layout/layout.hpp"

namespace tessel::layout {

/// One rectangle of the matrix that stays within one owner in both layouts: `rows` x `cols`
/// elements at local (row, col) (src_row, src_col) of the source rank and (dst_row, dst_col)
/// of the destination rank. `peer` is the other rank (the destination in send_blocks, the
/// source in recv_blocks), or the plan's own rank for the piece it keeps.
struct RedistBlock {
  int peer;
  std::int64_t rows, cols;
  std::int64_t src_row, src_col, dst_row, dst_col;
};

/// This rank's redistribution (pure data). `exchange` is the comm::ExchangePlan of the moved
/// elements: per peer (other ranks, ascending) the element counts and the offsets of its piece
/// in a packed send or receive buffer that holds the peers' pieces in rank order; the elements
/// this rank keeps are its self piece, placed after the peers' pieces (self_send =
/// sum(send_counts), self_recv = sum(recv_counts)), so a buffer of the messages alone is the
/// prefix and the kept elements need none. A peer's piece is the concatenation, in
/// send_blocks (resp. recv_blocks) order, of each block's columns, each column's `rows`
/// elements contiguous: the packing order sender and receiver agree on.
struct RedistPlan {
  int rank = 0, comm_size = 1;
  comm::ExchangePlan exchange;
  std::vector<RedistBlock> send_blocks;  ///< blocks this rank holds in src (kept ones included)
  std::vector<RedistBlock> recv_blocks;  ///< blocks this rank receives in dst (not the kept ones)

  std::int64_t send_elems() const;  ///< elements sent to other ranks
  std::int64_t recv_elems() const;  ///< elements received from other ranks
  std::int64_t self_elems() const { return exchange.self_count; }
  int send_msgs() const { return static_cast<int>(exchange.send_peers.size()); }
  int recv_msgs() const { return static_cast<int>(exchange.recv_peers.size()); }
  /// Elements received from rank q (0 for q not a peer and for the rank itself).
  std::int64_t recv_from(int q) const;
  /// Elements sent to rank q (0 for q not a peer and for the rank itself).
  std::int64_t send_to(int q) const;
  /// "rank 0: keeps 12; sends 2 messages, 30 elements (1: 10, 3: 20); receives ...".
  std::string describe() const;
};

/// Pure, not collective. The plan of redistribute(src -> dst) on `rank` (layouts of the same
/// shape and rank count: DimensionMismatch / LayoutMismatch otherwise).
RedistPlan make_redist_plan(const Layout& src, const Layout& dst, int rank);

/// Pure. A few lines for `--explain`: over all ranks, the largest number of elements and of
/// messages a rank sends and receives, then each rank's plan (describe()) for up to
/// `max_ranks` ranks. Every line starts with `indent`.
std::string explain_redistribution(const Layout& src, const Layout& dst, int max_ranks = 4,
                                   const std::string& indent = "  ");

}  // namespace tessel::layout

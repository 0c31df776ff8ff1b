#pragma once
/// @file grid2d.hpp
/// ProcessGrid2D: a PR x PC process grid over the ranks of a communicator, with its row and
/// column sub-communicators (RAII). Rank r of the communicator is P(r / PC, r % PC) (row-major,
/// as MPI_Cart_create and the block-sparse Distribution). The one 2D grid of the design
/// (issue 11): used by the block-sparse Cannon multiply; SUMMA may adopt it.
#include <string>

#include "tessel/comm/comm.hpp"

namespace tessel::layout {

class ProcessGrid2D {
 public:
  /// A 1 x 1 grid without communicators (is_null()).
  ProcessGrid2D() = default;
  /// Collective over `c` (two MPI_Comm_split). pr * pc must equal c.size() (GridError on
  /// every rank otherwise, before any communication). row(): the PC ranks of my process row,
  /// ranked by process column; col(): the PR ranks of my process column, ranked by process row.
  ProcessGrid2D(const comm::Comm& c, int pr, int pc);
  ProcessGrid2D(ProcessGrid2D&&) noexcept = default;
  ProcessGrid2D& operator=(ProcessGrid2D&&) noexcept = default;

  /// Pure. Throws GridError naming the values unless pr >= 1, pc >= 1 and pr * pc == nranks.
  static void check(int pr, int pc, int nranks);

  bool is_null() const { return row_.is_null(); }
  int pr() const { return pr_; }
  int pc() const { return pc_; }
  int prow() const { return prow_; }
  int pcol() const { return pcol_; }
  /// Pure. Rank of P(i, j) (indices taken modulo the grid, so neighbours wrap around).
  int rank_of(int i, int j) const {
    return ((i % pr_ + pr_) % pr_) * pc_ + ((j % pc_ + pc_) % pc_);
  }
  const comm::Comm& row() const { return row_; }
  const comm::Comm& col() const { return col_; }
  /// "2x3 grid, P(1,2)".
  std::string describe() const;

 private:
  int pr_ = 1, pc_ = 1, prow_ = 0, pcol_ = 0;
  comm::Comm row_{MPI_COMM_NULL, nullptr}, col_{MPI_COMM_NULL, nullptr};
};

}  // namespace tessel::layout

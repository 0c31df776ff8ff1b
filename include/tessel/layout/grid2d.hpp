#pragma once
/// @file grid2d.hpp
/// ProcessGrid2D: a PR x PC process grid over the ranks of a communicator, with its row and
/// column sub-communicators (RAII). By default rank r of the communicator is P(r / PC, r % PC)
/// (row-major, as MPI_Cart_create and the block-sparse Distribution); a grid may also take any
/// placement (a 2D layout's owner table, e.g. ScaLAPACK's column-major grids) and leave ranks
/// out. The one 2D grid of the design (issue 11): used by the block-sparse Cannon multiply and
/// by 2D SUMMA on the caller's layouts (dense/summa_native.cpp).
#include <string>
#include <vector>

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
  /// Collective over `c` (two MPI_Comm_split). P(i, j) is rank placement[i * pc + j] of `c`;
  /// every rank appears at most once, and ranks that do not appear are outside the grid
  /// (in_grid() false, no communicators, prow() = pcol() = -1). GridError on every rank,
  /// before any communication, when the placement's size is not pr * pc, a rank is out of
  /// range or repeated. row() and col() are ranked by process column and row as above.
  ProcessGrid2D(const comm::Comm& c, int pr, int pc, std::vector<int> placement);
  ProcessGrid2D(ProcessGrid2D&&) noexcept = default;
  ProcessGrid2D& operator=(ProcessGrid2D&&) noexcept = default;

  /// Pure. Throws GridError naming the values unless pr >= 1, pc >= 1 and pr * pc == nranks.
  static void check(int pr, int pc, int nranks);

  bool is_null() const { return row_.is_null(); }
  /// This rank has a place in the grid (it has row and column communicators).
  bool in_grid() const { return !row_.is_null(); }
  int pr() const { return pr_; }
  int pc() const { return pc_; }
  int prow() const { return prow_; }
  int pcol() const { return pcol_; }
  /// Pure. Rank of P(i, j) (indices taken modulo the grid, so neighbours wrap around).
  int rank_of(int i, int j) const {
    const int k = ((i % pr_ + pr_) % pr_) * pc_ + ((j % pc_ + pc_) % pc_);
    return placement_.empty() ? k : placement_[static_cast<std::size_t>(k)];
  }
  const comm::Comm& row() const { return row_; }
  const comm::Comm& col() const { return col_; }
  /// "2x3 grid, P(1,2)".
  std::string describe() const;

 private:
  int pr_ = 1, pc_ = 1, prow_ = 0, pcol_ = 0;
  std::vector<int> placement_;  // empty: row-major
  comm::Comm row_{MPI_COMM_NULL, nullptr}, col_{MPI_COMM_NULL, nullptr};
};

}  // namespace tessel::layout

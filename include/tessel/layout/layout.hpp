#pragma once
/// @file layout.hpp
/// Layout: a 2D distribution of an m x n matrix over the ranks of a communicator — a row
/// partition, a column partition and the rank that owns each (row group, column group).
/// Each rank owns at most one pair of groups and stores it column-major. Pure data: it can
/// be built, compared and printed without MPI.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessel/layout/partition.hpp"

namespace tessel::layout {

class Layout {
 public:
  Layout() = default;
  /// owner[gr * cols.groups() + gc] is the rank (in [0, comm_size)) owning that pair, or -1.
  /// Throws LayoutMismatch when a rank owns two pairs or an owner is out of range.
  Layout(Partition1D rows, Partition1D cols, std::vector<int> owner, int comm_size);

  /// ScaLAPACK block-cyclic over an nprow x npcol grid; grid_rank[prow * npcol + pcol] is the
  /// rank of that grid position (row-major by default when empty).
  static Layout block_cyclic(std::int64_t m, std::int64_t n, std::int64_t mb, std::int64_t nb,
                             int nprow, int npcol, int rsrc, int csrc, int comm_size,
                             std::vector<int> grid_rank = {});
  /// ScaLAPACK's BLOCK_CYCLIC_2D_INB (descriptor type 2): as block_cyclic, with a first block
  /// of imb x inb (the following blocks mb x nb).
  static Layout block_cyclic_inb(std::int64_t m, std::int64_t n, std::int64_t imb, std::int64_t inb,
                                 std::int64_t mb, std::int64_t nb, int nprow, int npcol, int rsrc,
                                 int csrc, int comm_size, std::vector<int> grid_rank = {});
  /// The whole matrix on one rank.
  static Layout on_rank(std::int64_t m, std::int64_t n, int rank, int comm_size);

  std::int64_t rows() const { return rows_.extent(); }
  std::int64_t cols() const { return cols_.extent(); }
  const Partition1D& row_partition() const { return rows_; }
  const Partition1D& col_partition() const { return cols_; }
  int comm_size() const { return comm_size_; }
  int owner(int gr, int gc) const {
    return owner_[static_cast<std::size_t>(gr) * cols_.groups() + gc];
  }
  /// The (row group, column group) of `rank`, if it owns any.
  std::optional<std::pair<int, int>> groups_of(int rank) const;
  /// Local storage rows/cols of `rank` (0 x 0 when it owns nothing).
  std::int64_t local_rows(int rank) const;
  std::int64_t local_cols(int rank) const;
  /// The submatrix [i0, i0+m) x [j0, j0+n), addressing the same local storage.
  Layout sub(std::int64_t i0, std::int64_t j0, std::int64_t m, std::int64_t n) const;
  /// "m x n over R ranks, row groups G, column groups H".
  std::string describe() const;

  bool operator==(const Layout& o) const {
    return rows_ == o.rows_ && cols_ == o.cols_ && owner_ == o.owner_ && comm_size_ == o.comm_size_;
  }

 private:
  Partition1D rows_, cols_;
  std::vector<int> owner_;
  std::vector<std::pair<int, int>> of_rank_;  // (-1,-1) when the rank owns nothing
  int comm_size_ = 1;
};

/// Pure. True when a and b (same shape and communicator size) place every element on the same
/// rank at the same local (row, column) offset, so storage in one is storage in the other.
bool same_storage(const Layout& a, const Layout& b);

}  // namespace tessel::layout

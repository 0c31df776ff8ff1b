#pragma once
/// @file partition.hpp
/// Partition1D: how one dimension of a matrix is cut into intervals, each owned by a group
/// (a process row or column) at an offset in that group's local storage. Pure data.
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::layout {

/// One interval [begin, begin+len) of global indices, owned by `group`, stored from local
/// index `local` on.
struct Interval {
  std::int64_t begin = 0, len = 0;
  int group = 0;
  std::int64_t local = 0;
  bool operator==(const Interval& o) const {
    return begin == o.begin && len == o.len && group == o.group && local == o.local;
  }
};

class Partition1D {
 public:
  Partition1D() = default;
  /// Validates that `intervals` tile [0, n) in order with groups in [0, groups).
  Partition1D(std::int64_t n, int groups, std::vector<Interval> intervals);

  /// ScaLAPACK block-cyclic: blocks of nb, first block on group `src`, groups = nprocs.
  /// `first_nb` (ScaLAPACK's IMB/INB of a type-2 descriptor) is the size of the first block
  /// (0: nb); the blocks after it have nb.
  static Partition1D block_cyclic(std::int64_t n, std::int64_t nb, int nprocs, int src,
                                  std::int64_t first_nb = 0);
  /// Contiguous pieces of the given sizes; piece i is group i, stored from local index 0.
  static Partition1D blocks(const std::vector<std::int64_t>& sizes);
  /// `parts` near-equal contiguous pieces of [0, n) (the first n % parts one longer).
  static Partition1D even(std::int64_t n, int parts);

  std::int64_t extent() const { return n_; }
  int groups() const { return groups_; }
  const std::vector<Interval>& intervals() const { return iv_; }
  /// Local storage extent a group needs (max local + len over its intervals).
  std::int64_t local_extent(int group) const;
  /// The restriction to [offset, offset+n), re-based at 0; local offsets are kept, so the
  /// result addresses the same local storage (a ScaLAPACK submatrix view).
  Partition1D sub(std::int64_t offset, std::int64_t n) const;

  bool operator==(const Partition1D& o) const {
    return n_ == o.n_ && groups_ == o.groups_ && iv_ == o.iv_;
  }
  bool operator!=(const Partition1D& o) const { return !(*this == o); }

 private:
  std::int64_t n_ = 0;
  int groups_ = 1;
  std::vector<Interval> iv_;
  std::vector<std::int64_t> local_extent_;
};

/// Balanced split of n into `parts`: the start of piece i (i in [0, parts]).
inline std::int64_t split_begin(std::int64_t n, int parts, int i) {
  std::int64_t q = n / parts, r = n % parts;
  return i * q + (i < r ? i : r);
}

/// One piece of the merge of two partitions of the same extent: constant owner in both.
struct Segment {
  std::int64_t begin, len;
  int a_group;
  std::int64_t a_local;
  int b_group;
  std::int64_t b_local;
};
/// The common refinement of a and b (same extent), in increasing global order.
std::vector<Segment> merge(const Partition1D& a, const Partition1D& b);

}  // namespace tessel::layout

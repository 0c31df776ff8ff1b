// Tiling: the pure data of a grouping of fine (atomic) blocks into tiles (no MPI).
#include "tessel/sparse/tiling.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tessel/core/error.hpp"

namespace tessel::sparse {

Tiling::Tiling(BlockSizes fine, const std::vector<int>& group_of) : fine_(std::move(fine)) {
  const int n = fine_.count();
  TESSEL_CHECK(static_cast<int>(group_of.size()) == n, DimensionMismatch,
               "tiling: ", group_of.size(), " group entries for ", n, " blocks");
  int ng = 0;
  for (int b = 0; b < n; ++b) {
    const int g = group_of[static_cast<std::size_t>(b)];
    TESSEL_CHECK(g >= 0 && g < n, InputError, "tiling: group of block ", b, " is ", g,
                 ", expected 0 <= group < ", n);
    ng = std::max(ng, g + 1);
  }
  members_.assign(static_cast<std::size_t>(ng), {});
  for (int b = 0; b < n; ++b) members_[static_cast<std::size_t>(group_of[b])].push_back(b);
  std::vector<int> sizes(static_cast<std::size_t>(ng), 0);
  tile_of_.assign(static_cast<std::size_t>(n), 0);
  at_.assign(static_cast<std::size_t>(n), 0);
  for (int t = 0; t < ng; ++t) {
    TESSEL_CHECK(!members_[static_cast<std::size_t>(t)].empty(), InputError, "tiling: group ", t,
                 " has no block (groups must be numbered 0..", ng - 1, " without gaps)");
    int s = 0;
    for (int b : members_[static_cast<std::size_t>(t)]) {
      tile_of_[static_cast<std::size_t>(b)] = t;
      at_[static_cast<std::size_t>(b)] = s;
      s += fine_.size(b);
    }
    sizes[static_cast<std::size_t>(t)] = s;
  }
  tiles_ = BlockSizes(std::move(sizes), "tile sizes");
}

Tiling Tiling::contiguous(const BlockSizes& fine, int target) {
  TESSEL_CHECK(target >= 1, InputError, "tile size ", target, ": expected >= 1 elements");
  std::vector<int> g(static_cast<std::size_t>(fine.count()));
  int t = -1, fill = 0;
  for (int b = 0; b < fine.count(); ++b) {
    if (t < 0 || fill + fine.size(b) > target) {
      ++t;
      fill = 0;
    }
    fill += fine.size(b);
    g[static_cast<std::size_t>(b)] = t;
  }
  return Tiling(fine, g);
}

std::string Tiling::describe() const {
  if (tiles_.count() == 0) return "no blocks";
  const auto& s = tiles_.sizes();
  const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
  return fmt::format("{} blocks into {} tiles (sizes {}-{}, mean {:.1f})", fine_.count(),
                     tiles_.count(), *lo, *hi,
                     static_cast<double>(tiles_.extent()) / tiles_.count());
}

}  // namespace tessel::sparse

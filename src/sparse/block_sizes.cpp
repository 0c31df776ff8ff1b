// BlockSizes: per-block sizes along one dimension and their offsets (pure data).
#include <algorithm>

#include "tessel/core/error.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::sparse {

BlockSizes::BlockSizes(std::vector<int> sizes, const std::string& what) : sizes_(std::move(sizes)) {
  offsets_.assign(sizes_.size() + 1, 0);
  for (std::size_t b = 0; b < sizes_.size(); ++b) {
    TESSEL_CHECK(sizes_[b] >= 1, InputError, what, ": block ", b, " has size ", sizes_[b],
                 ", expected >= 1");
    offsets_[b + 1] = offsets_[b] + sizes_[b];
  }
}

int BlockSizes::block_of(std::int64_t i) const {
  TESSEL_CHECK(i >= 0 && i < extent(), InputError, "block_of: index ", i, " outside [0, ", extent(),
               ")");
  // The last offset <= i.
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), i);
  return static_cast<int>(it - offsets_.begin()) - 1;
}

}  // namespace tessel::sparse

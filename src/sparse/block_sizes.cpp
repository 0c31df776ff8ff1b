// BlockSizes: per-block sizes along one dimension and their offsets (pure data).
#include <algorithm>

#include "tessel/core/error.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::sparse {

BlockSizes::BlockSizes() : d_(std::make_shared<const Data>()) { view(); }

BlockSizes::BlockSizes(std::vector<int> sizes, const std::string& what) {
  auto d = std::make_shared<Data>();
  d->sizes = std::move(sizes);
  d->offsets.assign(d->sizes.size() + 1, 0);
  for (std::size_t b = 0; b < d->sizes.size(); ++b) {
    TESSEL_CHECK(d->sizes[b] >= 1, InputError, what, ": block ", b, " has size ", d->sizes[b],
                 ", expected >= 1");
    d->offsets[b + 1] = d->offsets[b] + d->sizes[b];
  }
  d_ = std::move(d);
  view();
}

void BlockSizes::view() {
  s_ = d_->sizes.data();
  o_ = d_->offsets.data();
  n_ = static_cast<int>(d_->sizes.size());
}

int BlockSizes::block_of(std::int64_t i) const {
  TESSEL_CHECK(i >= 0 && i < extent(), InputError, "block_of: index ", i, " outside [0, ", extent(),
               ")");
  // The last offset <= i.
  auto it = std::upper_bound(o_, o_ + n_ + 1, i);
  return static_cast<int>(it - o_) - 1;
}

}  // namespace tessel::sparse

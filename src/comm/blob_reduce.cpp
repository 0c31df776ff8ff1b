/// @file blob_reduce.cpp
/// allreduce_blob: binomial-tree reduction of byte blobs to rank 0, then a broadcast.
#include "tessel/comm/blob_reduce.hpp"

#include <climits>
#include <cstdint>

#include "tessel/comm/tags.hpp"
#include "tessel/core/error.hpp"

namespace tessel::comm {

void allreduce_blob(const Comm& c, std::vector<unsigned char>& blob, const BlobCombine& combine) {
  if (c.is_null() || c.size() <= 1) return;
  TESSEL_CHECK(blob.size() <= static_cast<std::size_t>(INT_MAX), InputError,
               "allreduce_blob: a blob of ", blob.size(), " bytes: expected at most ", INT_MAX);
  const int p = c.size(), me = c.rank();
  const auto bytes = static_cast<std::int64_t>(blob.size());
  std::vector<unsigned char> in(blob.size());
  for (int step = 1; step < p; step <<= 1) {
    RequestSet rs;
    if ((me & step) != 0) {  // my subtree is complete: to the parent, and out of the tree
      c.isend(blob.data(), bytes, me - step, tag::kBlobReduce, rs);
      rs.wait_all();
      break;
    }
    if (me + step >= p) continue;
    c.irecv(in.data(), bytes, me + step, tag::kBlobReduce, rs);
    rs.wait_all();
    combine(in.data(), blob.data());
  }
  c.bcast(blob.data(), static_cast<int>(bytes), 0);
}

}  // namespace tessel::comm

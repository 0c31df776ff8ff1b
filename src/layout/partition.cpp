#include "tessel/layout/partition.hpp"

#include <algorithm>

#include "tessel/core/error.hpp"

namespace tessel::layout {

Partition1D::Partition1D(std::int64_t n, int groups, std::vector<Interval> intervals)
    : n_(n), groups_(groups), iv_(std::move(intervals)) {
  TESSEL_CHECK(n >= 0, DimensionMismatch, "partition: extent n = ", n, ", expected n >= 0");
  TESSEL_CHECK(groups >= 1, GridError, "partition: groups = ", groups, ", expected >= 1");
  local_extent_.assign(static_cast<std::size_t>(groups), 0);
  std::int64_t at = 0;
  for (const auto& v : iv_) {
    TESSEL_CHECK(v.begin == at && v.len > 0, LayoutMismatch, "partition: interval [", v.begin,
                 ", +", v.len, ") does not continue at ", at);
    TESSEL_CHECK(v.group >= 0 && v.group < groups, LayoutMismatch, "partition: group ", v.group,
                 " outside [0, ", groups, ")");
    TESSEL_CHECK(v.local >= 0, LayoutMismatch, "partition: negative local offset ", v.local);
    auto& e = local_extent_[static_cast<std::size_t>(v.group)];
    e = std::max(e, v.local + v.len);
    at += v.len;
  }
  TESSEL_CHECK(at == n, LayoutMismatch, "partition: intervals cover ", at, " of ", n);
}

Partition1D Partition1D::block_cyclic(std::int64_t n, std::int64_t nb, int nprocs, int src,
                                      std::int64_t first_nb) {
  TESSEL_CHECK(nb >= 1, LayoutMismatch, "block size nb = ", nb, ", expected nb >= 1");
  TESSEL_CHECK(first_nb >= 0, LayoutMismatch, "first block size = ", first_nb,
               ", expected >= 1 (or 0 for nb)");
  if (first_nb == 0) first_nb = nb;
  TESSEL_CHECK(nprocs >= 1, GridError, "process count = ", nprocs, ", expected >= 1");
  TESSEL_CHECK(src >= 0 && src < nprocs, LayoutMismatch, "source process ", src, " outside [0, ",
               nprocs, ")");
  std::vector<Interval> iv;
  std::vector<std::int64_t> local(static_cast<std::size_t>(nprocs), 0);
  int g = src;
  for (std::int64_t b = 0; b < n;) {
    std::int64_t len = std::min(b == 0 ? first_nb : nb, n - b);
    iv.push_back({b, len, g, local[static_cast<std::size_t>(g)]});
    local[static_cast<std::size_t>(g)] += len;
    g = (g + 1) % nprocs;
    b += len;
  }
  return Partition1D(n, nprocs, std::move(iv));
}

Partition1D Partition1D::blocks(const std::vector<std::int64_t>& sizes) {
  std::vector<Interval> iv;
  std::int64_t at = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    TESSEL_CHECK(sizes[i] >= 0, DimensionMismatch, "partition piece ", i, " has size ", sizes[i]);
    if (sizes[i] > 0) iv.push_back({at, sizes[i], static_cast<int>(i), 0});
    at += sizes[i];
  }
  return Partition1D(at, std::max<int>(1, static_cast<int>(sizes.size())), std::move(iv));
}

Partition1D Partition1D::even(std::int64_t n, int parts) {
  std::vector<std::int64_t> s(static_cast<std::size_t>(parts));
  for (int i = 0; i < parts; ++i)
    s[static_cast<std::size_t>(i)] = split_begin(n, parts, i + 1) - split_begin(n, parts, i);
  return blocks(s);
}

std::int64_t Partition1D::local_extent(int group) const {
  return local_extent_.at(static_cast<std::size_t>(group));
}

Partition1D Partition1D::sub(std::int64_t offset, std::int64_t n) const {
  TESSEL_CHECK(offset >= 0 && n >= 0 && offset + n <= n_, DimensionMismatch, "sub-range [", offset,
               ", ", offset + n, ") outside [0, ", n_, ")");
  std::vector<Interval> iv;
  const std::int64_t end = offset + n;
  for (const auto& v : iv_) {
    std::int64_t b = std::max(v.begin, offset), e = std::min(v.begin + v.len, end);
    if (b >= e) continue;
    iv.push_back({b - offset, e - b, v.group, v.local + (b - v.begin)});
  }
  Partition1D p(n, groups_, std::move(iv));
  // Keep the parent's local extents: a view addresses the parent's storage.
  p.local_extent_ = local_extent_;
  return p;
}

std::vector<Segment> merge(const Partition1D& a, const Partition1D& b) {
  TESSEL_CHECK(a.extent() == b.extent(), DimensionMismatch, "merge: extents ", a.extent(), " and ",
               b.extent(), " differ");
  std::vector<Segment> out;
  const auto& ia = a.intervals();
  const auto& ib = b.intervals();
  std::size_t x = 0, y = 0;
  std::int64_t at = 0;
  while (x < ia.size() && y < ib.size()) {
    const auto& u = ia[x];
    const auto& v = ib[y];
    std::int64_t end = std::min(u.begin + u.len, v.begin + v.len);
    out.push_back(
        {at, end - at, u.group, u.local + (at - u.begin), v.group, v.local + (at - v.begin)});
    at = end;
    if (end == u.begin + u.len) ++x;
    if (end == v.begin + v.len) ++y;
  }
  return out;
}

}  // namespace tessel::layout

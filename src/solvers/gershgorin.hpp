#pragma once
// Private to src/solvers: the Gershgorin interval of a distributed symmetric matrix from each
// rank's partial row sums (the dense and the block-sparse algebras fill them their own way).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "tessel/comm/comm.hpp"

namespace tessel::solvers {

/// Collective over `c`: sums `count` doubles over the ranks in place, in allreduce calls of at
/// most INT32_MAX items (an int count; one call when count <= INT32_MAX, also for count 0).
inline void allreduce_sum(const comm::Comm& c, double* x, std::int64_t count) {
  std::int64_t off = 0;
  do {
    const std::int64_t len = std::min<std::int64_t>(INT32_MAX, count - off);
    c.allreduce(x + off, static_cast<int>(len), MPI_SUM);
    off += len;
  } while (off < count);
}

/// Collective over `c` (one allreduce while 2n <= INT32_MAX). `rs` (size 2n) holds this rank's part of each row's
/// off-diagonal sum of |a_ij| in [0, n) and of its diagonal in [n, 2n); sums them over the
/// ranks and returns [min_i (a_ii - r_i), max_i (a_ii + r_i)] ([0, 0] for n = 0).
inline std::pair<double, double> gershgorin_interval(const comm::Comm& c, std::vector<double>& rs,
                                                     std::int64_t n) {
  allreduce_sum(c, rs.data(), 2 * n);
  double lo = n > 0 ? INFINITY : 0, hi = n > 0 ? -INFINITY : 0;
  for (std::int64_t r = 0; r < n; ++r) {
    lo = std::min(lo, rs[static_cast<std::size_t>(n + r)] - rs[static_cast<std::size_t>(r)]);
    hi = std::max(hi, rs[static_cast<std::size_t>(n + r)] + rs[static_cast<std::size_t>(r)]);
  }
  return {lo, hi};
}

}  // namespace tessel::solvers

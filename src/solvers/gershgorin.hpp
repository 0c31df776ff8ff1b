#pragma once
// Private to src/solvers: the Gershgorin interval of a distributed symmetric matrix from each
// rank's partial row sums (the dense and the block-sparse algebras fill them their own way).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "tessel/comm/comm.hpp"

namespace tessel::solvers {

/// Collective over `c` (one allreduce). `rs` (size 2n) holds this rank's part of each row's
/// off-diagonal sum of |a_ij| in [0, n) and of its diagonal in [n, 2n); sums them over the
/// ranks and returns [min_i (a_ii - r_i), max_i (a_ii + r_i)] ([0, 0] for n = 0).
inline std::pair<double, double> gershgorin_interval(const comm::Comm& c, std::vector<double>& rs,
                                                     std::int64_t n) {
  c.allreduce(rs.data(), static_cast<int>(2 * n), MPI_SUM);
  double lo = n > 0 ? INFINITY : 0, hi = n > 0 ? -INFINITY : 0;
  for (std::int64_t r = 0; r < n; ++r) {
    lo = std::min(lo, rs[static_cast<std::size_t>(n + r)] - rs[static_cast<std::size_t>(r)]);
    hi = std::max(hi, rs[static_cast<std::size_t>(n + r)] + rs[static_cast<std::size_t>(r)]);
  }
  return {lo, hi};
}

}  // namespace tessel::solvers

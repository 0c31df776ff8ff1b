#pragma once
/// @file grid_shape.hpp
/// The shape of a default process grid. Pure: no MPI.
#include <cstdint>
#include <utility>

#include "tessel/core/error.hpp"

namespace tessel::layout {

/// Pure. The most square PR x PC grid of exactly `nranks` ranks with PR <= PC: PR is the
/// largest divisor of nranks not above its square root (7 -> 1 x 7, 12 -> 3 x 4). The default
/// grid of the CLI, the block-sparse Distribution and 2D SUMMA. GridError unless nranks >= 1.
inline std::pair<int, int> most_square_grid(int nranks) {
  TESSEL_CHECK(nranks >= 1, GridError, "process grid for ", nranks, " ranks: expected >= 1");
  int pr = 1;
  for (int d = 1; static_cast<std::int64_t>(d) * d <= nranks; ++d)
    if (nranks % d == 0) pr = d;
  return {pr, nranks / pr};
}

}  // namespace tessel::layout

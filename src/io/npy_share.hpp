#pragma once
// Private to io/: a rank's share of a layout as the MPI-IO file view of a matrix stored
// column-major (npy.cpp, checkpoint.cpp).
#include <cstdint>

#include "tessel/comm/file.hpp"
#include "tessel/layout/layout.hpp"

namespace tessel::io {

/// Pure. This rank's share of `lay` (local storage with leading dimension `ld`), for a file
/// holding the matrix column-major (row-major with `row_major`).
comm::MatrixShare share_of(const layout::Layout& lay, int rank, std::int64_t ld, bool row_major);

}  // namespace tessel::io

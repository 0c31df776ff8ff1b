#pragma once
// Private to src/sparse/: the Frobenius norm of one block's values, the one loop behind the
// stored block norms (block_sparse.cpp), the kernel's on-the-fly filter (local_multiply.cpp)
// and the generator's screening (generate_water.cpp). Pure.
#include <cmath>
#include <complex>
#include <cstdint>

namespace tessel::sparse {

/// Pure. sqrt(sum |x_i|^2) over the n values at x, summed in order.
template <class T>
double block_norm(const T* x, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += std::norm(x[i]);
  return std::sqrt(s);
}

}  // namespace tessel::sparse

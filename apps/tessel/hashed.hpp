#pragma once
// The generator of the `tessel` command's random inputs, header-only and free of tessel so the
// standalone peer drivers (bench/cosma_gemm) fill the very same matrices.
#include <cstdint>

namespace tessel::app {

/// Pure. A layout-independent random value in [-1, 1) for global element (i, j) of matrix
/// `which` (a hash of seed, which, i, j).
inline double hashed(std::uint64_t seed, int which, std::int64_t i, std::int64_t j) {
  std::uint64_t x =
      seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(which) * 0xBF58476D1CE4E5B9ull +
      static_cast<std::uint64_t>(i) * 0x94D049BB133111EBull + static_cast<std::uint64_t>(j);
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

}  // namespace tessel::app

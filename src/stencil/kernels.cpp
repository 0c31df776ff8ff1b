#include "kernels.hpp"

#include <algorithm>
#include <cstring>

namespace tessel::stencil::kernels {

void pack(const double* x, const std::int32_t* items, std::int64_t n, int w, double* out) {
  const std::size_t W = static_cast<std::size_t>(w);
  for (std::int64_t k = 0; k < n; ++k)
    std::memcpy(out + static_cast<std::size_t>(k) * W, x + static_cast<std::size_t>(items[k]) * W,
                W * sizeof(double));
}

void apply_potential(const double* v, const double* x, std::int64_t n, int w, double* y) {
  const std::size_t W = static_cast<std::size_t>(w);
  for (std::int64_t i = 0; i < n; ++i) {
    const double vi = v[i];
    const double* xi = x + static_cast<std::size_t>(i) * W;
    double* yi = y + static_cast<std::size_t>(i) * W;
    for (std::size_t b = 0; b < W; ++b) yi[b] = vi * xi[b];
  }
}

void apply_laplacian(const std::int32_t* list, std::int64_t count, const std::int32_t* nbrs, int r,
                     const double* c, double scale, const double* x, const double* ghost,
                     std::int64_t nloc, int w, double* y) {
  constexpr int kChunk = 16;
  const std::size_t W = static_cast<std::size_t>(w), NB = static_cast<std::size_t>(6 * r);
  double acc[kChunk];
  for (std::int64_t t = 0; t < count; ++t) {
    const std::size_t i = static_cast<std::size_t>(list[t]);
    const std::int32_t* nb = nbrs + i * NB;
    for (std::size_t b0 = 0; b0 < W; b0 += kChunk) {
      const std::size_t nbk = std::min<std::size_t>(kChunk, W - b0);
      const double* xi = x + i * W + b0;
      for (std::size_t b = 0; b < nbk; ++b) acc[b] = 3.0 * c[0] * xi[b];
      for (int axis = 0; axis < 3; ++axis)
        for (int s = 0; s < 2 * r; ++s) {
          const std::int32_t e = nb[axis * 2 * r + s];
          if (e < 0) continue;
          const double ck = c[s < r ? r - s : s - r + 1];
          const double* u = (e < nloc ? x + static_cast<std::size_t>(e) * W
                                      : ghost + static_cast<std::size_t>(e - nloc) * W) +
                            b0;
          for (std::size_t b = 0; b < nbk; ++b) acc[b] += ck * u[b];
        }
      double* yi = y + i * W + b0;
      for (std::size_t b = 0; b < nbk; ++b) yi[b] += scale * acc[b];
    }
  }
}

}  // namespace tessel::stencil::kernels

#pragma once
// Private: the local kernels of H phi on a batch of `w` vectors stored item-major (the w values
// of a point are contiguous). Raw pointers and sizes; no MPI. The per-point arithmetic is one
// fixed sequence whatever the split into inner / boundary points or ranks, so a distributed
// apply is bit-identical to a serial one on the same mesh.
#include <cstdint>

namespace tessel::stencil::kernels {

/// out[k, :] = x[items[k], :] for k < n.
void pack(const double* x, const std::int32_t* items, std::int64_t n, int w, double* out);
/// y[i, :] = v[i] * x[i, :] for i < n.
void apply_potential(const double* v, const double* x, std::int64_t n, int w, double* y);
/// For each listed point i: y[i, :] += scale * (3 c[0] x[i, :] + sum over axes and offsets
/// -r..-1, 1..r of c[|k|] u[nbr, :]), where u is x for nbr < nloc and ghost[nbr - nloc]
/// otherwise, and nbr = -1 contributes nothing. nbrs: 6 r entries per local point.
void apply_laplacian(const std::int32_t* list, std::int64_t count, const std::int32_t* nbrs, int r,
                     const double* c, double scale, const double* x, const double* ghost,
                     std::int64_t nloc, int w, double* y);

}  // namespace tessel::stencil::kernels

#pragma once
/// @file partition.hpp
/// Partitions of a Mesh over ranks: METIS on the stencil graph (k-way, or recursive bisection
/// for few parts) and a geometric baseline (recursive coordinate bisection). Pure and
/// deterministic: every rank computes the same owner vector from the same mesh, with no
/// communication (tessel runs METIS identically on every rank rather than on rank 0 plus a
/// broadcast: same input and METIS's fixed default seed give the same partition, and no
/// rank waits on another).
#include <cstdint>
#include <string>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/stencil/mesh.hpp"

namespace tessel::stencil {

enum class Partitioner { Metis, Geometric };
/// Pure. "metis" / "geometric"; InputError otherwise.
Partitioner parse_partitioner(const std::string& s);
const char* to_string(Partitioner p);

/// Pure. The stencil graph of `mesh` for `order` in CSR form (xadj, adjncy): point g is joined
/// to every mesh point within the stencil radius along one axis.
void stencil_graph(const Mesh& mesh, int order, std::vector<std::int32_t>& xadj,
                   std::vector<std::int32_t>& adjncy);

/// Pure. owner[g] in [0, parts) for every global point g. Throws GridError when parts < 1 or
/// parts > mesh.size() ("more ranks than points"), InputError for a bad order. Metis: k-way
/// (METIS_PartGraphKway) for parts > 8, recursive bisection (METIS_PartGraphRecursive)
/// otherwise, on stencil_graph(mesh, order); Geometric: recursive coordinate bisection (cut the
/// longest extent at the point-count quantile that gives each half its share of the parts;
/// ties broken by global index). Every part is non-empty.
std::vector<int> partition_mesh(const Mesh& mesh, int parts, Partitioner how, int order);

/// Collective over ctx: partition_mesh(mesh, ctx.size(), how, order) computed on rank 0 and
/// broadcast (ledger phase "stencil/partition"). Every rank holds the same mesh. Errors (more
/// ranks than points, a METIS failure) are thrown on every rank.
std::vector<int> partition_mesh(Context& ctx, const Mesh& mesh, Partitioner how, int order);

}  // namespace tessel::stencil

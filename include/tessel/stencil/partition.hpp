#pragma once
/// @file partition.hpp
/// Partitions of a Mesh over ranks: METIS on the stencil graph (k-way, or recursive bisection
/// for few parts) and a geometric baseline (recursive coordinate bisection). Pure and
/// deterministic: every rank would compute the same owner vector from the same mesh (same
/// input, METIS's fixed seed); the collective overload runs it on rank 0 only and broadcasts
/// the owners, so one copy of the graph is in memory.
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

/// Pure. The entries of the stencil graph of `mesh` for `order` (point g is joined to every mesh
/// point within the stencil radius along one axis; each edge counted at both ends, as METIS's
/// adjncy holds it), counted without building the graph. 64-bit: it passes 2^31 near 358 M
/// points at order 2 and 60 M at order 12.
std::int64_t stencil_edge_count(const Mesh& mesh, int order);
/// Pure. The largest vertex count and edge entry count the build's METIS can index (idx_t:
/// 2^31 - 1 for IDXTYPEWIDTH 32, as Debian's libmetis-dev, 2^63 - 1 for 64).
std::int64_t metis_index_max();
/// Pure. Throws InputError naming the counts, the limit and the way out (the geometric
/// partitioner, a 64-bit METIS) when a stencil graph of `points` vertices and `edges` entries
/// does not fit metis_index_max(). partition_mesh runs it before building the graph.
void check_metis_graph(std::int64_t points, std::int64_t edges, int order);

/// Pure. owner[g] in [0, parts) for every global point g. Throws GridError when parts < 1 or
/// parts > mesh.size() ("more ranks than points"), InputError for a bad order. Metis: k-way
/// (METIS_PartGraphKway) for parts > 8, recursive bisection (METIS_PartGraphRecursive)
/// otherwise, on the stencil graph of the order (InputError from check_metis_graph, before the
/// graph is allocated, when it has more entries than METIS's idx_t holds); Geometric: recursive coordinate bisection (cut the
/// longest extent at the point-count quantile that gives each half its share of the parts;
/// ties broken by global index). Every part is non-empty.
std::vector<int> partition_mesh(const Mesh& mesh, int parts, Partitioner how, int order);

/// Collective over ctx: partition_mesh(mesh, ctx.size(), how, order) computed on rank 0 and
/// broadcast (ledger phase "stencil/partition"). Every rank holds the same mesh. Errors (more
/// ranks than points, a METIS failure) are thrown on every rank.
std::vector<int> partition_mesh(Context& ctx, const Mesh& mesh, Partitioner how, int order);

/// The owners go in broadcasts of at most this many entries (1 MiB): Comm::bcast stages a copy
/// of its buffer, and under SMPI every rank's copy is alive at once in the one process.
constexpr std::int64_t kOwnerBcastPiece = std::int64_t{1} << 18;

/// Collective over ctx. The same with the mesh on rank 0 only (`mesh` may be null elsewhere):
/// rank 0 partitions it and broadcasts the point count, then the owners in pieces of
/// kOwnerBcastPiece (ledger phase "stencil/partition"); the others size their owner vector
/// from the count. A caller that
/// makes its own mesh only after this returns, derives its plan and then drops the mesh and the
/// owners before its next MPI call never has a mesh on every rank at once: under SMPI, where
/// all ranks are threads of one process and run one at a time between MPI calls, the
/// simulation then holds one mesh, not one per rank (docs/simulation.md, "Seed 002"). Errors
/// of rank 0 (no mesh, more ranks than points, a METIS failure) are thrown on every rank.
std::vector<int> partition_mesh_on_root(Context& ctx, const Mesh* mesh, Partitioner how, int order);

}  // namespace tessel::stencil

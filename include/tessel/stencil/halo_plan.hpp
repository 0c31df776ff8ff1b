#pragma once
/// @file halo_plan.hpp
/// HaloPlan: what one rank needs to apply a finite-difference Laplacian of order d to its part
/// of a partitioned Mesh — its points, its ghost points (points of other ranks within the
/// stencil radius along an axis), the stencil table in local numbering, the inner/boundary
/// split, and the halo exchange as a comm::ExchangePlan (per peer counts and offsets) plus the
/// pack list. Pure data computed without MPI from (mesh, owner, order, rank): every rank
/// derives its own plan, and the plans mirror each other.
#include <cstdint>
#include <string>
#include <vector>

#include "tessel/comm/exchange_plan.hpp"
#include "tessel/stencil/mesh.hpp"

namespace tessel::stencil {

struct HaloPlan {
  int rank = 0, ranks = 1, order = 2, radius = 1;
  /// Global indices of this rank's points, ascending; local index = position here.
  std::vector<std::int64_t> points;
  /// Global indices of the ghost points, ordered by owner then global index; ghost j has
  /// extended index points.size() + j, and is item j of the exchange's receive buffer.
  std::vector<std::int64_t> ghosts;
  /// neighbors[i * 6 r + (axis * 2 r) + s]: the extended index of the stencil neighbour of
  /// local point i along `axis` at offset -r..-1, 1..r (s = 0 .. 2r-1 in that order), or -1
  /// when that grid point is not in the mesh (the wave function is 0 there).
  std::vector<std::int32_t> neighbors;
  /// Local points whose stencil touches no ghost (inner) and the others (boundary), ascending.
  std::vector<std::int32_t> inner, boundary;
  /// The halo exchange: send item k is local point send_items[k]; receive item j is ghost j.
  comm::ExchangePlan exchange;
  std::vector<std::int32_t> send_items;

  std::int64_t local_size() const { return static_cast<std::int64_t>(points.size()); }
  std::int64_t ghost_size() const { return static_cast<std::int64_t>(ghosts.size()); }
  int neighbors_per_point() const { return 6 * radius; }
};

/// Pure. The plan of `rank` for the partition `owner` (owner[g] in [0, ranks) for every mesh
/// point) and finite-difference `order`. Throws InputError for a bad order, Error when owner
/// does not match the mesh or names a rank outside [0, ranks).
HaloPlan make_halo_plan(const Mesh& mesh, const std::vector<int>& owner, int ranks, int order,
                        int rank);

/// Pure. The seed's quantities of a partition, from every rank's plan: points per rank,
/// edge cut (undirected stencil edges between different ranks), neighbours (distinct peers,
/// send or receive) per rank, and points sent per rank (the message sizes of one vector).
struct PartitionReport {
  std::vector<std::int64_t> points, ghosts, sent_points;
  std::vector<int> neighbors;
  std::int64_t edge_cut = 0;
  /// Multi-line human summary: min / mean / max of each, and the cut.
  std::string describe() const;
};
PartitionReport partition_report(const Mesh& mesh, const std::vector<int>& owner, int ranks,
                                 int order);

}  // namespace tessel::stencil

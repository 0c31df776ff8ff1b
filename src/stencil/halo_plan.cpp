#include "tessel/stencil/halo_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "tessel/core/error.hpp"
#include "tessel/stencil/fd.hpp"

namespace tessel::stencil {
namespace {

void check_owner(const Mesh& mesh, const std::vector<int>& owner, int ranks) {
  TESSEL_CHECK(static_cast<std::int64_t>(owner.size()) == mesh.size(), Error,
               "halo plan: owner has ", owner.size(), " entries for a mesh of ", mesh.size(),
               " points");
  for (int o : owner)
    TESSEL_CHECK(o >= 0 && o < ranks, Error, "halo plan: owner rank ", o, " outside 0 .. ",
                 ranks - 1);
}

// Calls f(axis, s, neighbour global index or -1) for the 6 r stencil neighbours of g.
template <class F>
void for_each_neighbor(const Mesh& mesh, std::int64_t g, int r, F&& f) {
  const auto c = mesh.coords(g);
  for (int axis = 0; axis < 3; ++axis) {
    int s = 0;
    for (int k = -r; k <= r; ++k) {
      if (k == 0) continue;
      auto q = c;
      q[static_cast<std::size_t>(axis)] += k;
      f(axis, s++, mesh.find(q[0], q[1], q[2]));
    }
  }
}

}  // namespace

HaloPlan make_halo_plan(const Mesh& mesh, const std::vector<int>& owner, int ranks, int order,
                        int rank) {
  HaloPlan p;
  p.radius = stencil_radius(order);
  check_owner(mesh, owner, ranks);
  TESSEL_CHECK(rank >= 0 && rank < ranks, Error, "halo plan: rank ", rank, " outside 0 .. ",
               ranks - 1);
  p.rank = rank, p.ranks = ranks, p.order = order;
  const int r = p.radius, nb = 6 * r;
  for (std::int64_t g = 0; g < mesh.size(); ++g)
    if (owner[static_cast<std::size_t>(g)] == rank) p.points.push_back(g);

  // Ghosts (by owner, then global index) and, per peer, the local points it needs from us.
  std::map<std::int64_t, std::int32_t> ghost_index;  // global -> ghost slot (filled below)
  std::map<int, std::vector<std::int32_t>> to_peer;  // peer -> local points (ascending, unique)
  for (std::size_t i = 0; i < p.points.size(); ++i) {
    std::vector<int> peers;
    for_each_neighbor(mesh, p.points[i], r, [&](int, int, std::int64_t q) {
      if (q < 0) return;
      const int o = owner[static_cast<std::size_t>(q)];
      if (o == rank) return;
      ghost_index.emplace(q, 0);
      peers.push_back(o);
    });
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    for (int o : peers) to_peer[o].push_back(static_cast<std::int32_t>(i));
  }
  for (const auto& kv : ghost_index) p.ghosts.push_back(kv.first);
  std::stable_sort(p.ghosts.begin(), p.ghosts.end(), [&](std::int64_t a, std::int64_t b) {
    return owner[static_cast<std::size_t>(a)] < owner[static_cast<std::size_t>(b)];
  });
  const std::int32_t nloc = static_cast<std::int32_t>(p.points.size());
  for (std::size_t j = 0; j < p.ghosts.size(); ++j)
    ghost_index[p.ghosts[j]] = nloc + static_cast<std::int32_t>(j);

  // Receive side: one piece per owner of ghosts, in ghost order.
  for (std::size_t j = 0; j < p.ghosts.size();) {
    const int o = owner[static_cast<std::size_t>(p.ghosts[j])];
    std::size_t e = j;
    while (e < p.ghosts.size() && owner[static_cast<std::size_t>(p.ghosts[e])] == o) ++e;
    p.exchange.recv_peers.push_back(o);
    p.exchange.recv_offsets.push_back(static_cast<std::int64_t>(j));
    p.exchange.recv_counts.push_back(static_cast<std::int64_t>(e - j));
    j = e;
  }
  // Send side: per peer ascending, our points in ascending global order (= the peer's ghost order).
  for (const auto& kv : to_peer) {
    p.exchange.send_peers.push_back(kv.first);
    p.exchange.send_offsets.push_back(static_cast<std::int64_t>(p.send_items.size()));
    p.exchange.send_counts.push_back(static_cast<std::int64_t>(kv.second.size()));
    p.send_items.insert(p.send_items.end(), kv.second.begin(), kv.second.end());
  }

  // Stencil table in extended numbering; inner / boundary split.
  p.neighbors.assign(static_cast<std::size_t>(nloc) * static_cast<std::size_t>(nb), -1);
  for (std::int32_t i = 0; i < nloc; ++i) {
    bool touches_ghost = false;
    for_each_neighbor(
        mesh, p.points[static_cast<std::size_t>(i)], r, [&](int axis, int s, std::int64_t q) {
          if (q < 0) return;
          std::int32_t e;
          if (owner[static_cast<std::size_t>(q)] == rank) {
            e = static_cast<std::int32_t>(std::lower_bound(p.points.begin(), p.points.end(), q) -
                                          p.points.begin());
          } else {
            e = ghost_index.at(q);
            touches_ghost = true;
          }
          p.neighbors[static_cast<std::size_t>(i) * static_cast<std::size_t>(nb) +
                      static_cast<std::size_t>(axis * 2 * r + s)] = e;
        });
    (touches_ghost ? p.boundary : p.inner).push_back(i);
  }
  return p;
}

PartitionReport partition_report(const Mesh& mesh, const std::vector<int>& owner, int ranks,
                                 int order) {
  const int r = stencil_radius(order);
  check_owner(mesh, owner, ranks);
  PartitionReport rep;
  const std::size_t P = static_cast<std::size_t>(ranks);
  rep.points.assign(P, 0), rep.ghosts.assign(P, 0), rep.sent_points.assign(P, 0),
      rep.neighbors.assign(P, 0);
  for (int q = 0; q < ranks; ++q) {
    HaloPlan hp = make_halo_plan(mesh, owner, ranks, order, q);
    const std::size_t Q = static_cast<std::size_t>(q);
    rep.points[Q] = hp.local_size();
    rep.ghosts[Q] = hp.ghost_size();
    rep.sent_points[Q] = hp.exchange.send_items();
    std::vector<int> peers = hp.exchange.send_peers;
    peers.insert(peers.end(), hp.exchange.recv_peers.begin(), hp.exchange.recv_peers.end());
    std::sort(peers.begin(), peers.end());
    rep.neighbors[Q] = static_cast<int>(std::unique(peers.begin(), peers.end()) - peers.begin());
  }
  for (std::int64_t g = 0; g < mesh.size(); ++g)
    for_each_neighbor(mesh, g, r, [&](int, int, std::int64_t q) {
      if (q > g && owner[static_cast<std::size_t>(q)] != owner[static_cast<std::size_t>(g)])
        ++rep.edge_cut;
    });
  return rep;
}

std::string PartitionReport::describe() const {
  auto mmm = [](const auto& v) {
    double mn = 1e300, mx = -1e300, s = 0;
    for (auto x : v) {
      mn = std::min(mn, static_cast<double>(x));
      mx = std::max(mx, static_cast<double>(x));
      s += static_cast<double>(x);
    }
    return fmt::format("min {:g}, mean {:.1f}, max {:g}", mn, s / static_cast<double>(v.size()),
                       mx);
  };
  return fmt::format(
      "points per rank: {}\nghost points per rank: {}\nneighbours per rank: {}\n"
      "points sent per rank (one vector): {}\nedge cut: {} stencil edges\n",
      mmm(points), mmm(ghosts), mmm(neighbors), mmm(sent_points), edge_cut);
}

}  // namespace tessel::stencil

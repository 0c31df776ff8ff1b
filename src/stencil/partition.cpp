#include "tessel/stencil/partition.hpp"

#include <metis.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "tessel/core/error.hpp"
#include "tessel/stencil/fd.hpp"

namespace tessel::stencil {

Partitioner parse_partitioner(const std::string& s) {
  if (s == "metis") return Partitioner::Metis;
  if (s == "geometric") return Partitioner::Geometric;
  throw InputError(detail::concat("partitioner '", s, "': expected metis or geometric"));
}

const char* to_string(Partitioner p) { return p == Partitioner::Metis ? "metis" : "geometric"; }

namespace {

// f(o) for every mesh point o within the stencil radius r of point g along one axis.
template <class F>
void for_each_neighbor(const Mesh& mesh, std::int64_t g, int r, F&& f) {
  const auto c = mesh.coords(g);
  for (int d = 0; d < 3; ++d)
    for (int k = -r; k <= r; ++k) {
      if (k == 0) continue;
      auto q = c;
      q[static_cast<std::size_t>(d)] += k;
      const std::int64_t o = mesh.find(q[0], q[1], q[2]);
      if (o >= 0) f(o);
    }
}

}  // namespace

std::int64_t stencil_edge_count(const Mesh& mesh, int order) {
  const int r = stencil_radius(order);
  std::int64_t edges = 0;
  for (std::int64_t g = 0; g < mesh.size(); ++g)
    for_each_neighbor(mesh, g, r, [&](std::int64_t) { ++edges; });
  return edges;
}

std::int64_t metis_index_max() { return std::numeric_limits<idx_t>::max(); }

void check_metis_graph(std::int64_t points, std::int64_t edges, int order) {
  const std::int64_t limit = metis_index_max();
  TESSEL_CHECK(points <= limit && edges <= limit, InputError,
               "partitioner metis: the stencil graph of ", points, " points at order ", order,
               " has ", edges, " edge entries, but this build's METIS has ", IDXTYPEWIDTH,
               "-bit indices (at most ", limit,
               "): use the geometric partitioner, or build tessel against a METIS with "
               "IDXTYPEWIDTH 64");
}

namespace {

// The stencil graph in METIS's CSR form (xadj, adjncy) in the build's idx_t; `edges`
// (stencil_edge_count, checked by check_metis_graph: every offset fits idx_t) sizes adjncy.
void stencil_graph(const Mesh& mesh, int order, std::int64_t edges, std::vector<idx_t>& xadj,
                   std::vector<idx_t>& adjncy) {
  const int r = stencil_radius(order);
  const std::int64_t n = mesh.size();
  xadj.assign(static_cast<std::size_t>(n + 1), 0);
  adjncy.clear();
  adjncy.reserve(static_cast<std::size_t>(edges));
  for (std::int64_t g = 0; g < n; ++g) {
    for_each_neighbor(mesh, g, r, [&](std::int64_t o) { adjncy.push_back(static_cast<idx_t>(o)); });
    xadj[static_cast<std::size_t>(g + 1)] = static_cast<idx_t>(adjncy.size());
  }
}

std::vector<int> metis_parts(const Mesh& mesh, int parts, int order) {
  // The size check runs before the graph (8 GB of adjncy at 2^31 32-bit entries) is allocated.
  const std::int64_t edges = stencil_edge_count(mesh, order);
  check_metis_graph(mesh.size(), edges, order);
  std::vector<idx_t> xadj, adjncy;
  stencil_graph(mesh, order, edges, xadj, adjncy);
  idx_t nv = static_cast<idx_t>(mesh.size()), ncon = 1, np = parts, objval = 0;
  std::vector<idx_t> part(static_cast<std::size_t>(nv), 0);
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 1;  // fixed: the same partition on every rank and run
  int rc =
      parts > 8
          ? METIS_PartGraphKway(&nv, &ncon, xadj.data(), adjncy.data(), nullptr, nullptr, nullptr,
                                &np, nullptr, nullptr, options, &objval, part.data())
          : METIS_PartGraphRecursive(&nv, &ncon, xadj.data(), adjncy.data(), nullptr, nullptr,
                                     nullptr, &np, nullptr, nullptr, options, &objval, part.data());
  TESSEL_CHECK(rc == METIS_OK, GridError, "METIS failed (code ", rc, ") partitioning ", nv,
               " points into ", parts, " parts");
  return std::vector<int>(part.begin(), part.end());
}

// Recursive coordinate bisection of pts[b, e) into parts [p0, p0 + np).
void rcb(const Mesh& mesh, std::vector<std::int64_t>& pts, std::size_t b, std::size_t e, int p0,
         int np, std::vector<int>& owner) {
  if (np == 1) {
    for (std::size_t i = b; i < e; ++i) owner[static_cast<std::size_t>(pts[i])] = p0;
    return;
  }
  int lo[3] = {1 << 30, 1 << 30, 1 << 30}, hi[3] = {-(1 << 30), -(1 << 30), -(1 << 30)};
  for (std::size_t i = b; i < e; ++i) {
    const auto& c = mesh.coords(pts[i]);
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], c[static_cast<std::size_t>(d)]);
      hi[d] = std::max(hi[d], c[static_cast<std::size_t>(d)]);
    }
  }
  int axis = 0;
  for (int d = 1; d < 3; ++d)
    if (hi[d] - lo[d] > hi[axis] - lo[axis]) axis = d;
  const int n1 = np / 2;
  const std::size_t cnt = e - b;
  const std::size_t cut =
      b +
      static_cast<std::size_t>((static_cast<unsigned __int128>(cnt) * static_cast<unsigned>(n1)) /
                               static_cast<unsigned>(np));
  auto key = [&](std::int64_t g) {
    return std::make_pair(mesh.coords(g)[static_cast<std::size_t>(axis)], g);
  };
  std::nth_element(pts.begin() + static_cast<std::ptrdiff_t>(b),
                   pts.begin() + static_cast<std::ptrdiff_t>(cut),
                   pts.begin() + static_cast<std::ptrdiff_t>(e),
                   [&](std::int64_t x, std::int64_t y) { return key(x) < key(y); });
  rcb(mesh, pts, b, cut, p0, n1, owner);
  rcb(mesh, pts, cut, e, p0 + n1, np - n1, owner);
}

}  // namespace

std::vector<int> partition_mesh(const Mesh& mesh, int parts, Partitioner how, int order) {
  check_order(order);
  TESSEL_CHECK(parts >= 1, GridError, "partition: ", parts, " parts (expected >= 1)");
  TESSEL_CHECK(parts <= mesh.size(), GridError, "more ranks than points: ", parts,
               " ranks for a mesh of ", mesh.size(), " points (", mesh.describe(), ")");
  std::vector<int> owner(static_cast<std::size_t>(mesh.size()), 0);
  if (parts == 1) return owner;
  if (how == Partitioner::Metis) {
    owner = metis_parts(mesh, parts, order);
    std::vector<std::int64_t> cnt(static_cast<std::size_t>(parts), 0);
    for (int o : owner) ++cnt[static_cast<std::size_t>(o)];
    // METIS may leave a part empty on tiny meshes: fall back to the geometric partition then.
    if (std::find(cnt.begin(), cnt.end(), 0) == cnt.end()) return owner;
  }
  std::vector<std::int64_t> pts(static_cast<std::size_t>(mesh.size()));
  std::iota(pts.begin(), pts.end(), 0);
  rcb(mesh, pts, 0, pts.size(), 0, parts, owner);
  return owner;
}

std::vector<int> partition_mesh(Context& ctx, const Mesh& mesh, Partitioner how, int order) {
  return partition_mesh_on_root(ctx, &mesh, how, order);
}

std::vector<int> partition_mesh_on_root(Context& ctx, const Mesh* mesh, Partitioner how,
                                        int order) {
  check_order(order);
  std::vector<int> owner;
  std::int64_t points = 0;
  ctx.agree([&] {
    if (ctx.rank() != 0) return;
    TESSEL_CHECK(mesh != nullptr, Error, "partition_mesh_on_root: no mesh on rank 0");
    TESSEL_CHECK(ctx.size() <= mesh->size(), GridError, "more ranks than points: ", ctx.size(),
                 " ranks for a mesh of ", mesh->size(), " points (", mesh->describe(), ")");
    owner = partition_mesh(*mesh, ctx.size(), how, order);
    points = mesh->size();
  });
  PhaseScope phase(ctx.ledger(), "stencil/partition");
  ctx.comm().bcast(&points, 1, 0);
  owner.resize(static_cast<std::size_t>(points));
  for (std::int64_t at = 0; at < points; at += kOwnerBcastPiece)
    ctx.comm().bcast(owner.data() + at, static_cast<int>(std::min(kOwnerBcastPiece, points - at)),
                     0);
  return owner;
}

}  // namespace tessel::stencil

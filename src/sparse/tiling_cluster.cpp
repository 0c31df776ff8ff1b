// Tiles by graph clustering: the coupling graph of a matrix (its strong off-diagonal blocks),
// partitioned by METIS into parts of about `target` elements (Tiling::clustered), and the
// collective cluster_tiling that builds the graph from a distributed matrix on rank 0.
#include <metis.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tessel/comm/packed_exchange.hpp"
#include "tessel/comm/tags.hpp"
#include "tessel/core/error.hpp"
#include "tessel/sparse/tiling.hpp"

namespace tessel::sparse {

Tiling Tiling::clustered(const BlockSizes& fine, const std::vector<Edge>& edges, int target) {
  TESSEL_CHECK(target >= 1, InputError, "tile size ", target, ": expected >= 1 elements");
  const int n = fine.count();
  const std::int64_t parts64 = (fine.extent() + target - 1) / target;
  if (parts64 <= 1 || parts64 >= n) return contiguous(fine, parts64 <= 1 ? 1 << 30 : 1);
  // Symmetric adjacency, duplicates merged (largest weight).
  std::vector<std::pair<std::int64_t, int>> e;  // key u * n + v, weight
  e.reserve(2 * edges.size());
  for (const auto& x : edges) {
    TESSEL_CHECK(x.u >= 0 && x.u < n && x.v >= 0 && x.v < n && x.u != x.v && x.w >= 1, InputError,
                 "tiling: edge (", x.u, ", ", x.v, ", w ", x.w, ") for ", n,
                 " blocks: expected u != v in [0, n) and w >= 1");
    e.emplace_back(static_cast<std::int64_t>(x.u) * n + x.v, x.w);
    e.emplace_back(static_cast<std::int64_t>(x.v) * n + x.u, x.w);
  }
  std::sort(e.begin(), e.end());
  std::vector<idx_t> xadj(static_cast<std::size_t>(n) + 1, 0), adj, wgt;
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (i > 0 && e[i].first == e[i - 1].first) {
      wgt.back() = std::max<idx_t>(wgt.back(), e[i].second);
      continue;
    }
    const auto u = static_cast<std::size_t>(e[i].first / n);
    adj.push_back(static_cast<idx_t>(e[i].first % n));
    wgt.push_back(e[i].second);
    ++xadj[u + 1];
  }
  for (std::size_t u = 0; u < static_cast<std::size_t>(n); ++u) xadj[u + 1] += xadj[u];
  std::vector<idx_t> vw(fine.sizes().begin(), fine.sizes().end());
  idx_t nv = n, ncon = 1, np = static_cast<idx_t>(parts64), objval = 0;
  std::vector<idx_t> part(static_cast<std::size_t>(n), 0);
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 1;  // fixed: the same tiles on every run
  // METIS reads but does not change the arrays; its interface is not const.
  const int rc =
      np > 8 ? METIS_PartGraphKway(&nv, &ncon, xadj.data(), adj.data(), vw.data(), nullptr,
                                   wgt.data(), &np, nullptr, nullptr, options, &objval, part.data())
             : METIS_PartGraphRecursive(&nv, &ncon, xadj.data(), adj.data(), vw.data(), nullptr,
                                        wgt.data(), &np, nullptr, nullptr, options, &objval,
                                        part.data());
  TESSEL_CHECK(rc == METIS_OK, Error, "tiling: METIS failed (code ", rc, ") grouping ", n,
               " blocks into ", np, " tiles");
  // Parts numbered in order of their first fine block, empty ones dropped.
  std::vector<int> renum(static_cast<std::size_t>(np), -1), group(static_cast<std::size_t>(n));
  int next = 0;
  for (int b = 0; b < n; ++b) {
    int& r = renum[static_cast<std::size_t>(part[static_cast<std::size_t>(b)])];
    if (r < 0) r = next++;
    group[static_cast<std::size_t>(b)] = r;
  }
  return Tiling(fine, group);
}

Tiling cluster_tiling(const Context& ctx, const BlockSparseMatrix<double>& a, int target) {
  const auto& d = a.distribution();
  TESSEL_CHECK(d.row_blocks() == d.col_blocks(), DimensionMismatch, "cluster_tiling: ", a.name(),
               " needs the same block sizes along rows and columns, it is ", d.describe());
  TESSEL_CHECK(target >= 1, InputError, "tile size ", target, ": expected >= 1 elements");
  ctx.agree([&] {
    TESSEL_CHECK(a.is_finalized(), Error, "cluster_tiling: ", a.name(), " on rank ", a.rank(),
                 " has blocks put since the last finalize(); call finalize() first");
  });
  const comm::Comm& c = ctx.comm();
  PhaseScope ps(*c.ledger(), "sparse/tiles");
  double top = 0;
  a.for_each_block([&](int br, int bc, const double* x, int r, int cc) {
    if (br == bc) return;
    double s = 0;
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(r) * cc; ++e) s += x[e] * x[e];
    top = std::max(top, std::sqrt(s));
  });
  top = c.allreduce_value(top, MPI_MAX);
  // The strong couplings (u < v: S is symmetric, each pair once from whoever stores it).
  constexpr double kRelative = 1e-3;
  std::vector<Tiling::Edge> mine;
  if (top > 0)
    a.for_each_block([&](int br, int bc, const double* x, int r, int cc) {
      if (br >= bc) return;
      double s = 0;
      for (std::int64_t e = 0; e < static_cast<std::int64_t>(r) * cc; ++e) s += x[e] * x[e];
      const double rel = std::sqrt(s) / top;
      if (rel < kRelative) return;
      // weight 1 (at 1e-3 of the strongest) .. 31 (the strongest), log scale
      const int w = 1 + static_cast<int>(std::lround(10.0 * (std::log10(rel) + 3.0)));
      mine.push_back({br, bc, std::max(1, w)});
    });
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(c.size()), 0);
  bytes[0] = static_cast<std::int64_t>(mine.size() * sizeof(Tiling::Edge));
  std::vector<unsigned char> send(static_cast<std::size_t>(bytes[0]));
  if (!mine.empty()) std::memcpy(send.data(), mine.data(), send.size());
  auto recv = comm::exchange_packed(c, bytes, send, comm::tag::kSparseTilingEdges);
  std::vector<int> group(static_cast<std::size_t>(d.row_blocks().count()), 0);
  ctx.agree([&] {
    if (c.rank() != 0) return;
    std::vector<Tiling::Edge> all(recv.size() / sizeof(Tiling::Edge));
    if (!all.empty()) std::memcpy(all.data(), recv.data(), all.size() * sizeof(Tiling::Edge));
    auto t = Tiling::clustered(d.row_blocks(), all, target);
    for (int b = 0; b < d.row_blocks().count(); ++b)
      group[static_cast<std::size_t>(b)] = t.tile_of(b);
  });
  if (!group.empty()) c.bcast(group.data(), static_cast<int>(group.size()), 0);
  return Tiling(d.row_blocks(), group);
}

}  // namespace tessel::sparse

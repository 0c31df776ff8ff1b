// The stencil's pure parts against independent references: finite-difference weights against
// polynomial exactness, meshes against direct counts, partitions against balance and
// determinism, the halo plan against a brute-force neighbour search over all point pairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "tessel/core/error.hpp"
#include "tessel/stencil/fd.hpp"
#include "tessel/stencil/halo_plan.hpp"
#include "tessel/stencil/mesh.hpp"
#include "tessel/stencil/partition.hpp"

using namespace tessel;
using namespace tessel::stencil;

namespace {

std::string write_tmp(const std::string& name, const std::string& text) {
  std::string p = ::testing::TempDir() + name;
  std::ofstream(p) << text;
  return p;
}

// Three overlapping spheres and one apart: an irregular mesh of a few hundred points.
Mesh small_molecule(double h = 0.5) {
  std::vector<Atom> atoms = {
      {"C", 0, 0, 0}, {"C", 1.4, 0.3, 0}, {"H", -0.6, 1.1, 0.4}, {"O", 4.0, 0, 0.5}};
  return Mesh::spheres(atoms, 1.6, h);
}

}  // namespace

TEST(StencilFd, WeightsExactOnPolynomials) {
  for (int d : {2, 4, 6, 8, 12}) {
    auto c = second_derivative_weights(d);
    ASSERT_EQ(static_cast<int>(c.size()), d / 2 + 1);
    for (int p = 0; p <= d + 1; ++p) {  // f = x^p, f''(0) = 2 for p = 2, else 0
      double s = (p == 0 ? c[0] : 0.0);
      for (int k = 1; k <= d / 2; ++k)
        s += c[static_cast<std::size_t>(k)] * (std::pow(k, p) + std::pow(-k, p));
      EXPECT_NEAR(s, p == 2 ? 2.0 : 0.0, 1e-9) << "order " << d << " x^" << p;
    }
  }
  auto c4 = second_derivative_weights(4);
  EXPECT_NEAR(c4[0], -2.5, 1e-14);
  EXPECT_NEAR(c4[1], 4.0 / 3, 1e-14);
  EXPECT_NEAR(c4[2], -1.0 / 12, 1e-14);
  auto c12 = second_derivative_weights(12);
  EXPECT_NEAR(c12[0], -5369.0 / 1800, 1e-12);
  EXPECT_NEAR(c12[6], -1.0 / 16632, 1e-14);
}

TEST(StencilFd, UnsupportedOrderThrows) {
  for (int d : {0, 1, 3, 10, 14, -2}) EXPECT_THROW(check_order(d), InputError) << d;
}

TEST(StencilMesh, BoxCountsAndLookup) {
  Mesh m = Mesh::box(4.0, 0.5);  // n = 8: 7^3 interior points
  EXPECT_EQ(m.size(), 343);
  for (std::int64_t g = 0; g < m.size(); ++g) {
    const auto& c = m.coords(g);
    EXPECT_EQ(m.find(c[0], c[1], c[2]), g);
  }
  EXPECT_EQ(m.find(0, 1, 1), -1);  // on the wall
  EXPECT_EQ(m.find(8, 1, 1), -1);
  auto x = m.position(0);
  EXPECT_DOUBLE_EQ(x[0], -1.5);
}

TEST(StencilMesh, BoxErrors) {
  EXPECT_THROW(Mesh::box(4.0, 0.0), InputError);
  EXPECT_THROW(Mesh::box(4.0, -0.5), InputError);
  EXPECT_THROW(Mesh::box(4.0, 0.3), InputError);  // 4 / 0.3 not an integer
  EXPECT_THROW(Mesh::box(0.5, 0.5), InputError);  // no interior point
  EXPECT_THROW(Mesh::box(NAN, 0.5), InputError);
}

// Issue 28: a box of more points than a mesh holds is refused before anything is allocated
// (it used to fill 1291^3 coordinates, 26 GB, and die in bad_alloc or the OOM killer).
TEST(StencilMesh, BoxSizeCheckedBeforeAllocating) {
  EXPECT_EQ(Mesh::kMaxPoints, 2147483647);
  // 1290^3 = 2,146,689,000 <= 2^31 - 1 < 1291^3 = 2,151,685,171: L/h = 1292 is the first too large
  EXPECT_LE(1290LL * 1290 * 1290, Mesh::kMaxPoints);
  EXPECT_GT(1291LL * 1291 * 1291, Mesh::kMaxPoints);
  for (double length : {1292.0, 2001.0, 4000.0, 1e7}) {
    try {
      Mesh::box(length, 1.0);
      ADD_FAILURE() << "L/h = " << length << " accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("2147483647"), std::string::npos) << what;
      EXPECT_NE(what.find("L/h <= 1291"), std::string::npos) << what;
    }
  }
  EXPECT_THROW(Mesh::box(2584.0, 2.0), InputError);  // the same box at another spacing
}

TEST(StencilMesh, SpheresAgainstDirectCount) {
  std::vector<Atom> atoms = {{"H", 0.1, 0.2, -0.3}, {"H", 1.7, 0, 0}};
  const double r = 1.3, h = 0.4;
  Mesh m = Mesh::spheres(atoms, r, h);
  std::int64_t count = 0;
  for (int i = -20; i <= 20; ++i)
    for (int j = -20; j <= 20; ++j)
      for (int k = -20; k <= 20; ++k) {
        bool in = false;
        for (const auto& a : atoms) {
          const double dx = i * h - a.x, dy = j * h - a.y, dz = k * h - a.z;
          in = in || dx * dx + dy * dy + dz * dz <= r * r * (1 + 1e-12);  // on the sphere counts
        }
        if (in) {
          ++count;
          EXPECT_GE(m.find(i, j, k), 0);
        } else {
          EXPECT_EQ(m.find(i, j, k), -1);
        }
      }
  EXPECT_EQ(m.size(), count);
  for (std::int64_t g = 1; g < m.size(); ++g)
    EXPECT_LT(m.coords(g - 1), m.coords(g));  // lexicographic numbering
}

// Two small spheres 346 bohr apart: a table over their bounding box (205^3 cells at h = 1)
// would be 34 MB for 162 points; the mesh searches instead and must answer alike.
TEST(StencilMesh, ScatteredSpheresFindEveryPointAndNothingElse) {
  const std::vector<Atom> atoms = {{"H", 0, 0, 0}, {"H", 200, 200, 200}};
  const double r = 2.5, h = 1.0;
  Mesh m = Mesh::spheres(atoms, r, h);
  std::int64_t count = 0;
  for (const auto& a : atoms)
    for (int i = -4; i <= 4; ++i)
      for (int j = -4; j <= 4; ++j)
        for (int k = -4; k <= 4; ++k) {
          const int x = static_cast<int>(a.x) + i, y = static_cast<int>(a.y) + j,
                    z = static_cast<int>(a.z) + k;
          const bool in = i * i + j * j + k * k <= r * r;
          const std::int64_t g = m.find(x, y, z);
          if (!in) {
            EXPECT_EQ(g, -1) << x << " " << y << " " << z;
            continue;
          }
          ++count;
          ASSERT_GE(g, 0) << x << " " << y << " " << z;
          EXPECT_EQ(m.coords(g), (std::array<int, 3>{x, y, z}));
        }
  EXPECT_EQ(m.size(), count);
  EXPECT_EQ(m.find(100, 100, 100), -1);  // inside the bounding box, outside both spheres
  EXPECT_EQ(m.find(-1000, 0, 0), -1);    // outside the bounding box
}

TEST(StencilMesh, EmptyMeshAndBadSpacingThrow) {
  std::vector<Atom> one = {{"H", 0.25, 0.25, 0.25}};
  EXPECT_THROW(Mesh::spheres({}, 2.0, 0.5), InputError);    // no atoms
  EXPECT_THROW(Mesh::spheres(one, 0.0, 0.5), InputError);   // radius 0
  EXPECT_THROW(Mesh::spheres(one, 0.1, 1.0), InputError);   // no grid point inside
  EXPECT_THROW(Mesh::spheres(one, 2.0, 0.0), InputError);   // spacing 0
  EXPECT_THROW(Mesh::spheres(one, 2.0, -1.0), InputError);  // spacing < 0
  EXPECT_THROW(Mesh::spheres(one, -1.0, 0.5), InputError);  // radius < 0
}

TEST(StencilXyz, ReadsAndRejects) {
  auto ok = read_xyz(write_tmp("ok.xyz", "2\nwater-ish\nO 0 0 0\nH 1.0 -0.5 2 extra\n"));
  ASSERT_EQ(ok.size(), 2u);
  EXPECT_EQ(ok[1].symbol, "H");
  EXPECT_DOUBLE_EQ(ok[1].y, -0.5);
  EXPECT_THROW(read_xyz("/nonexistent/dir/mol.xyz"), InputError);
  EXPECT_THROW(read_xyz(write_tmp("empty.xyz", "")), InputError);
  EXPECT_THROW(read_xyz(write_tmp("count.xyz", "two\nc\nH 0 0 0\n")), InputError);
  EXPECT_THROW(read_xyz(write_tmp("neg.xyz", "-1\nc\n")), InputError);
  EXPECT_THROW(read_xyz(write_tmp("short.xyz", "3\nc\nH 0 0 0\n")), InputError);
  EXPECT_THROW(read_xyz(write_tmp("bad.xyz", "1\nc\nH 0 zero 0\n")), InputError);
  EXPECT_THROW(read_xyz(write_tmp("nocomment.xyz", "1\n")), InputError);
  EXPECT_TRUE(read_xyz(write_tmp("none.xyz", "0\nno atoms\n")).empty());
}

TEST(StencilPartition, BalancedDeterministicNonEmpty) {
  Mesh m = small_molecule();
  for (auto how : {Partitioner::Metis, Partitioner::Geometric})
    for (int parts : {1, 2, 3, 5, 8, 13}) {
      auto owner = partition_mesh(m, parts, how, 4);
      EXPECT_EQ(owner, partition_mesh(m, parts, how, 4));  // the same on every call (every rank)
      std::vector<std::int64_t> cnt(static_cast<std::size_t>(parts), 0);
      for (int o : owner) ++cnt[static_cast<std::size_t>(o)];
      const auto mx = *std::max_element(cnt.begin(), cnt.end()),
                 mn = *std::min_element(cnt.begin(), cnt.end());
      EXPECT_GE(mn, 1) << to_string(how) << " " << parts;
      if (how == Partitioner::Geometric)
        EXPECT_LE(mx - mn, 1);
      else
        EXPECT_LE(static_cast<double>(mx), 1.1 * static_cast<double>(m.size()) / parts + 2);
    }
}

TEST(StencilPartition, MoreRanksThanPointsThrows) {
  Mesh m = Mesh::box(2.0, 0.5);  // 27 points
  EXPECT_THROW(partition_mesh(m, 28, Partitioner::Metis, 2), GridError);
  EXPECT_THROW(partition_mesh(m, 28, Partitioner::Geometric, 2), GridError);
  EXPECT_THROW(partition_mesh(m, 0, Partitioner::Geometric, 2), GridError);
  EXPECT_NO_THROW(partition_mesh(m, 27, Partitioner::Geometric, 2));
  EXPECT_THROW(partition_mesh(m, 2, Partitioner::Metis, 5), InputError);
  EXPECT_THROW(parse_partitioner("scotch"), InputError);
}

namespace {
// Entries of the stencil graph of a box of m^3 points at radius r: along each of the 3 axes and
// both directions, the m^2 lines of m points hold sum_{k=1..r} max(0, m - k) pairs at distance k.
std::int64_t box_edges(std::int64_t m, int r) {
  std::int64_t pairs = 0;
  for (int k = 1; k <= r; ++k) pairs += std::max<std::int64_t>(0, m - k);
  return 3 * 2 * m * m * pairs;
}
}  // namespace

// Issue 28: the METIS graph's entries are counted in 64 bits without building it, and a graph
// beyond the build's METIS index width is refused before it is allocated, naming the limit.
// The boundary cases are only arithmetic: 392^3 points at order 12 (2,149,144,704 entries) and
// 711^3 at order 2 (2,153,519,460) pass 2^31 - 1; 391^3 and 710^3 do not.
TEST(StencilPartition, MetisGraphSizeCheckedBeforeBuilding) {
  Mesh m = Mesh::box(4.0, 0.5);  // 7^3
  for (int order : {2, 4, 6, 8, 12})
    EXPECT_EQ(stencil_edge_count(m, order), box_edges(7, order / 2)) << order;
  Mesh mol = small_molecule();  // irregular: against a brute-force count
  std::int64_t brute = 0;
  for (std::int64_t i = 0; i < mol.size(); ++i) {
    const auto c = mol.coords(i);
    for (int d = 0; d < 3; ++d)
      for (int k = -2; k <= 2; ++k) {
        auto q = c;
        q[static_cast<std::size_t>(d)] += k;
        if (k != 0 && mol.find(q[0], q[1], q[2]) >= 0) ++brute;
      }
  }
  EXPECT_EQ(stencil_edge_count(mol, 4), brute);

  const std::int64_t lim = metis_index_max();
  EXPECT_TRUE(lim == INT32_MAX || lim == INT64_MAX) << lim;
  EXPECT_EQ(box_edges(392, 6), 2149144704);
  EXPECT_EQ(box_edges(711, 1), 2153519460);
  EXPECT_NO_THROW(check_metis_graph(391LL * 391 * 391, box_edges(391, 6), 12));
  EXPECT_NO_THROW(check_metis_graph(710LL * 710 * 710, box_edges(710, 1), 2));
  for (auto [side, order] : {std::pair<std::int64_t, int>{392, 12}, {711, 2}}) {
    const std::int64_t e = box_edges(side, order / 2);
    if (lim == INT32_MAX) {
      try {
        check_metis_graph(side * side * side, e, order);
        ADD_FAILURE() << side << "^3 at order " << order << " accepted with 32-bit METIS";
      } catch (const InputError& err) {
        const std::string what = err.what();
        EXPECT_NE(what.find(std::to_string(e)), std::string::npos) << what;
        EXPECT_NE(what.find("2147483647"), std::string::npos) << what;
        EXPECT_NE(what.find("geometric"), std::string::npos) << what;
      }
    } else {
      EXPECT_NO_THROW(check_metis_graph(side * side * side, e, order));
    }
  }
  // the partition itself still works on the small meshes, through the same check
  EXPECT_EQ(partition_mesh(m, 4, Partitioner::Metis, 12).size(), 343u);
}

// Brute force: j is a stencil neighbour of i when their coordinates differ along exactly one
// axis by 1 .. r.
static bool brute_neighbor(const Mesh& m, std::int64_t i, std::int64_t j, int r) {
  const auto &a = m.coords(i), &b = m.coords(j);
  int diff = 0, dist = 0;
  for (int d = 0; d < 3; ++d)
    if (a[static_cast<std::size_t>(d)] != b[static_cast<std::size_t>(d)]) {
      ++diff;
      dist = std::abs(a[static_cast<std::size_t>(d)] - b[static_cast<std::size_t>(d)]);
    }
  return diff == 1 && dist <= r;
}

TEST(StencilHaloPlan, AgainstBruteForceNeighbourSearch) {
  Mesh m = small_molecule(0.6);
  const std::int64_t n = m.size();
  for (int order : {2, 6, 12})
    for (auto how : {Partitioner::Metis, Partitioner::Geometric})
      for (int P : {1, 2, 3, 5, 8}) {
        SCOPED_TRACE(::testing::Message()
                     << "order " << order << " " << to_string(how) << " P " << P);
        const int r = order / 2;
        auto owner = partition_mesh(m, P, how, order);
        std::vector<HaloPlan> plans;
        for (int q = 0; q < P; ++q) plans.push_back(make_halo_plan(m, owner, P, order, q));
        std::int64_t cut = 0;
        for (int q = 0; q < P; ++q) {
          const HaloPlan& hp = plans[static_cast<std::size_t>(q)];
          // ghosts: every point of another rank that neighbours one of ours
          std::set<std::int64_t> ghosts;
          std::vector<std::set<std::int64_t>> to(
              static_cast<std::size_t>(P));  // our points each rank needs
          for (std::int64_t i = 0; i < n; ++i) {
            if (owner[static_cast<std::size_t>(i)] != q) continue;
            for (std::int64_t j = 0; j < n; ++j)
              if (owner[static_cast<std::size_t>(j)] != q && brute_neighbor(m, i, j, r)) {
                ghosts.insert(j);
                to[static_cast<std::size_t>(owner[static_cast<std::size_t>(j)])].insert(i);
                if (j > i) ++cut;
              }
          }
          EXPECT_EQ(std::set<std::int64_t>(hp.ghosts.begin(), hp.ghosts.end()), ghosts);
          hp.exchange.validate(P, q);
          EXPECT_EQ(hp.exchange.recv_items(), hp.ghost_size());
          // send lists per peer = brute force, in ascending global order
          std::size_t npeers = 0;
          for (int s = 0; s < P; ++s) {
            if (to[static_cast<std::size_t>(s)].empty()) continue;
            ASSERT_LT(npeers, hp.exchange.send_peers.size());
            EXPECT_EQ(hp.exchange.send_peers[npeers], s);
            std::vector<std::int64_t> got;
            for (std::int64_t k = 0; k < hp.exchange.send_counts[npeers]; ++k)
              got.push_back(hp.points[static_cast<std::size_t>(
                  hp.send_items[static_cast<std::size_t>(hp.exchange.send_offsets[npeers] + k)])]);
            EXPECT_EQ(got, std::vector<std::int64_t>(to[static_cast<std::size_t>(s)].begin(),
                                                     to[static_cast<std::size_t>(s)].end()));
            // mirrored by the peer's receive piece from us: same points, same order
            const HaloPlan& hs = plans[static_cast<std::size_t>(s)];
            auto it = std::find(hs.exchange.recv_peers.begin(), hs.exchange.recv_peers.end(), q);
            ASSERT_NE(it, hs.exchange.recv_peers.end());
            const std::size_t ri = static_cast<std::size_t>(it - hs.exchange.recv_peers.begin());
            std::vector<std::int64_t> theirs(
                hs.ghosts.begin() + hs.exchange.recv_offsets[ri],
                hs.ghosts.begin() + hs.exchange.recv_offsets[ri] + hs.exchange.recv_counts[ri]);
            EXPECT_EQ(theirs, got);
            ++npeers;
          }
          EXPECT_EQ(npeers, hp.exchange.send_peers.size());
          // stencil table: the extended index of each neighbour names the right global point
          const int nb = 6 * r;
          for (std::size_t i = 0; i < hp.points.size(); ++i) {
            const auto c = m.coords(hp.points[i]);
            bool ghost_touched = false;
            for (int axis = 0; axis < 3; ++axis)
              for (int s = 0; s < 2 * r; ++s) {
                const int k = s < r ? s - r : s - r + 1;
                auto qc = c;
                qc[static_cast<std::size_t>(axis)] += k;
                const std::int64_t want = m.find(qc[0], qc[1], qc[2]);
                const std::int32_t e = hp.neighbors[i * static_cast<std::size_t>(nb) +
                                                    static_cast<std::size_t>(axis * 2 * r + s)];
                if (want < 0) {
                  EXPECT_EQ(e, -1);
                  continue;
                }
                ASSERT_GE(e, 0);
                const std::int64_t got =
                    e < hp.local_size() ? hp.points[static_cast<std::size_t>(e)]
                                        : hp.ghosts[static_cast<std::size_t>(e - hp.local_size())];
                EXPECT_EQ(got, want);
                ghost_touched = ghost_touched || e >= hp.local_size();
              }
            const auto li = static_cast<std::int32_t>(i);
            EXPECT_EQ(std::binary_search(hp.boundary.begin(), hp.boundary.end(), li),
                      ghost_touched);
            EXPECT_EQ(std::binary_search(hp.inner.begin(), hp.inner.end(), li), !ghost_touched);
          }
        }
        auto rep = partition_report(m, owner, P, order);
        EXPECT_EQ(rep.edge_cut, cut);
        std::int64_t total = 0;
        for (auto x : rep.points) total += x;
        EXPECT_EQ(total, n);
      }
}

TEST(StencilExchangePlan, ValidateRejectsInconsistentPlans) {
  comm::ExchangePlan p;
  p.send_peers = {1, 2};
  p.send_counts = {2, 3};
  p.send_offsets = {0, 2};
  EXPECT_NO_THROW(p.validate(3, 0));
  EXPECT_THROW(p.validate(3, 1), Error);  // peer = self
  EXPECT_THROW(p.validate(2, 0), Error);  // peer out of range
  auto q = p;
  q.send_offsets = {0, 1};  // overlapping pieces
  EXPECT_THROW(q.validate(3, 0), Error);
  q = p;
  q.send_peers = {2, 1};  // not ascending
  EXPECT_THROW(q.validate(3, 0), Error);
  q = p;
  q.recv_peers = {1};  // sizes differ
  EXPECT_THROW(q.validate(3, 0), Error);
  EXPECT_THROW(comm::parse_exchange_strategy("allgather"), InputError);
}

// The packed exchange's counts as an ExchangePlan (the one plan type of issue 11): checked
// against the offsets written out by hand for rank 1 of 4.
TEST(StencilExchangePlan, FromCountsOfAPackedExchange) {
  const std::vector<std::int64_t> send = {3, 2, 0, 4}, recv = {1, 2, 5, 0};
  const auto p = comm::ExchangePlan::from_counts(send, recv, 1);
  EXPECT_EQ(p.send_peers, (std::vector<int>{0, 3}));  // rank 2 gets nothing
  EXPECT_EQ(p.send_counts, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(p.send_offsets, (std::vector<std::int64_t>{0, 5}));
  EXPECT_EQ(p.recv_peers, (std::vector<int>{0, 2}));  // rank 3 sends nothing
  EXPECT_EQ(p.recv_counts, (std::vector<std::int64_t>{1, 5}));
  EXPECT_EQ(p.recv_offsets, (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(p.self_count, 2);
  EXPECT_EQ(p.self_send, 3);
  EXPECT_EQ(p.self_recv, 1);
  EXPECT_EQ(p.send_items(), 9);
  EXPECT_EQ(p.recv_items(), 8);
  EXPECT_NO_THROW(p.validate(4, 1));
  auto q = p;
  q.self_send = 4;  // self piece overlaps the piece to rank 3
  EXPECT_THROW(q.validate(4, 1), Error);
  q = p;
  q.self_recv = 7;  // leaves the receive buffer
  EXPECT_THROW(q.validate(4, 1), Error);
  EXPECT_THROW(comm::ExchangePlan::from_counts({1, 2}, {1, 3}, 1), Error);  // own piece 2 vs 3
  EXPECT_THROW(comm::ExchangePlan::from_counts({1, 2}, {1}, 0), Error);
}

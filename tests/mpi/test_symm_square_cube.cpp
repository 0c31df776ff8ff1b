// SymmSquareCube (seed 000, Algorithms 3, 4, 5 and the 2.5D Algorithm 6) against serial BLAS,
// its communication volume against the models derived from each algorithm's pattern, on the
// ledger, the inactive ranks' silence (leftover ranks and the active subset), and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "tessel/comm/shared_window.hpp"
#include "tessel/dense/symm_square_cube.hpp"
#include "tessel/layout/redistribute.hpp"
#include "test_util.hpp"

using namespace tessel;
using dense::SscAlgorithm;

namespace {

std::vector<double> random_symmetric(std::int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> a(static_cast<std::size_t>(n * n));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i <= j; ++i)
      a[static_cast<std::size_t>(j * n + i)] = a[static_cast<std::size_t>(i * n + j)] = u(rng);
  return a;
}

// The volume models below use the documented block split (n rows into p blocks, the first
// n % p one row longer), written out here rather than taken from the code under test
// (SymmSquareCube::block, layout::split_begin).
std::int64_t model_split_begin(std::int64_t n, int parts, int i) {
  return i * (n / parts) + std::min<std::int64_t>(i, n % parts);
}
std::int64_t model_block(std::int64_t n, int parts, int b) {
  return model_split_begin(n, parts, b + 1) - model_split_begin(n, parts, b);
}

double rel_err(const std::vector<double>& got, const std::vector<double>& ref) {
  return tessel::testing::frob_diff(got, ref) / tessel::testing::frob(ref);
}

const SscAlgorithm kAll[] = {SscAlgorithm::Original, SscAlgorithm::Baseline,
                             SscAlgorithm::Optimized, SscAlgorithm::TwoPointFiveD};

/// D, D^2 = D D and D^3 = D D^2 by serial BLAS (the independent reference).
struct Ref {
  std::vector<double> d, d2, d3;
};
Ref make_ref(std::int64_t n, unsigned seed) {
  Ref r;
  r.d = random_symmetric(n, seed);
  r.d2.resize(r.d.size());
  r.d3.resize(r.d.size());
  int ni = static_cast<int>(n);
  tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, r.d.data(), ni, r.d.data(), ni, 0.0,
                            r.d2.data(), ni);
  tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, r.d.data(), ni, r.d2.data(), ni, 0.0,
                            r.d3.data(), ni);
  return r;
}

/// The mesh (edge, depth) an algorithm uses on `ranks` ranks for n (no forced p or c).
layout::GridShape expected_shape(SscAlgorithm alg, int ranks, std::int64_t n) {
  if (alg == SscAlgorithm::TwoPointFiveD) return layout::Mesh3D::choose_grid(ranks, n);
  int p = std::min<int>(layout::Mesh3D::largest_p(ranks), static_cast<int>(n));
  return {p, p};
}

/// Runs `ssc` on D (from `full`) in the plane-0 layout; returns D^2 and D^3 gathered on all
/// ranks (D^3 empty when !cube).
std::pair<std::vector<double>, std::vector<double>> run_plane0(Context& ctx,
                                                               dense::SymmSquareCube& ssc,
                                                               const std::vector<double>& full,
                                                               bool cube) {
  const std::int64_t n = ssc.n();
  dense::DistMatrix<double> D(ctx, ssc.plane0()), D2(ctx, ssc.plane0()), D3(ctx, ssc.plane0());
  D.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
    v = full[static_cast<std::size_t>(j * n + i)];
  });
  if (cube)
    ssc.run(D.data(), D2.data(), D3.data());
  else
    ssc.run_square(D.data(), D2.data());
  // on every rank (the checks run on every rank; dense::gather fills the root only)
  auto g2 = tessel::testing::gather_all(ctx, D2);
  std::vector<double> g3;
  if (cube) g3 = tessel::testing::gather_all(ctx, D3);
  return {g2, g3};
}

/// Expected per-rank ledger counts of phase "ssc/compute".
struct Volume {
  std::int64_t coll_bytes = 0, coll_calls = 0;
  std::int64_t sent_bytes = 0, sent_msgs = 0, recv_bytes = 0, recv_msgs = 0;
  void send(std::int64_t doubles) {
    sent_bytes += 8 * doubles;
    sent_msgs += 1;
  }
  void recv(std::int64_t doubles) {
    recv_bytes += 8 * doubles;
    recv_msgs += 1;
  }
};

void expect_volume(const PhaseCounts& k, const Volume& v, const std::string& where) {
  EXPECT_EQ(k.coll_bytes, v.coll_bytes) << where;
  EXPECT_EQ(k.coll_calls, v.coll_calls) << where;
  EXPECT_EQ(k.p2p_sent_bytes, v.sent_bytes) << where;
  EXPECT_EQ(k.p2p_sent_msgs, v.sent_msgs) << where;
  EXPECT_EQ(k.p2p_recv_bytes, v.recv_bytes) << where;
  EXPECT_EQ(k.p2p_recv_msgs, v.recv_msgs) << where;
}

/// Runs `ssc` with a reset ledger and checks: the inactive ranks moved nothing and made one
/// collective call (the Ibarrier); the active ranks' "ssc/compute" matches `model` (called
/// on active ranks only), their "ssc/release" is that one Ibarrier when there are inactive
/// ranks; the bytes sent equal the bytes received over the run; D^2 (and D^3) are right.
template <class Model>
void check_run_volume(Context& ctx, dense::SymmSquareCube& ssc, const Ref& ref, bool cube,
                      Model model, const std::string& where) {
  ctx.ledger().reset();
  auto [g2, g3] = run_plane0(ctx, ssc, ref.d, cube);
  // run_plane0 gathers after the run: read the phases that the run wrote
  const auto& m = ssc.mesh();
  auto k = ctx.ledger().total("ssc/compute");
  auto rel = ctx.ledger().total("ssc/release");
  if (!m.active()) {  // everything the kernel did on this rank: one Ibarrier
    auto all = ctx.ledger().total("ssc/");
    EXPECT_EQ(all.coll_bytes + all.p2p_sent_bytes + all.p2p_recv_bytes, 0) << where;
    EXPECT_EQ(all.p2p_sent_msgs + all.p2p_recv_msgs, 0) << where;
    EXPECT_EQ(all.coll_calls, 1) << where;
    EXPECT_EQ(rel.coll_calls, 1) << where;
  } else {
    EXPECT_EQ(rel.coll_calls, m.inactive_ranks() > 0 ? 1 : 0) << where;
    EXPECT_EQ(rel.coll_bytes, 0) << where;
    expect_volume(k, model(),
                  where + " P(" + std::to_string(m.i()) + "," + std::to_string(m.j()) + "," +
                      std::to_string(m.k()) + ")");
  }
  std::int64_t sr[2] = {k.p2p_sent_bytes, k.p2p_recv_bytes};
  ctx.comm().allreduce(sr, 2, MPI_SUM);
  EXPECT_EQ(sr[0], sr[1]) << where;
  EXPECT_LE(rel_err(g2, ref.d2), 1e-13) << where;
  if (cube) EXPECT_LE(rel_err(g3, ref.d3), 1e-13) << where;
}

}  // namespace

TEST(SymmSquareCube, MatchesSerialBlas) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(7);
  for (std::int64_t n : {1, 5, 8, 13, 24, 37}) {
    auto full = random_symmetric(n, static_cast<unsigned>(n));
    std::vector<double> r2(full.size()), r3(full.size());
    int ni = static_cast<int>(n);
    tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, full.data(), ni, full.data(), ni, 0.0,
                              r2.data(), ni);
    tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, full.data(), ni, r2.data(), ni, 0.0,
                              r3.data(), ni);
    auto lay = tessel::testing::random_layout(rng, n, n, ctx.size());
    auto D = dense::scatter(ctx, full.data(), lay);
    for (auto alg : kAll)
      for (int nd : {1, 2, 4}) {
        dense::SscOptions o;
        o.algorithm = alg;
        o.n_dup = nd;
        auto shape = expected_shape(alg, ctx.size(), n);
        int p = shape.q;
        if (nd > n / p) continue;
        auto res = dense::symm_square_cube(ctx, D, o);
        EXPECT_EQ(res.p, p);
        EXPECT_EQ(res.c, shape.c);
        EXPECT_EQ(res.d2.layout(), lay);
        auto g2 = dense::gather(ctx, res.d2);
        auto g3 = dense::gather(ctx, res.d3);
        if (ctx.rank() == 0) {
          EXPECT_LE(rel_err(g2, r2), 1e-13)
              << "alg " << dense::to_string(alg) << " n=" << n << " nd=" << nd << " " << res.mesh;
          EXPECT_LE(rel_err(g3, r3), 1e-13)
              << "alg " << dense::to_string(alg) << " n=" << n << " nd=" << nd << " " << res.mesh;
        }
      }
  }
}

// The seed's volume model, payload rule of shared/tools/commcount, per active rank
// P(i,j,k) with blocks of r_i rows and p > 1 (8 bytes per double):
//   collective bytes = 8 (r_i r_j  [grd bcast of D_ij]  + r_k r_j [row bcast of D_kj]
//                         + r_i r_k [col reduce of D^2] + r_j r_k [row bcast of D^2_jk]
//                         + r_i r_k [col reduce of D^3])
//   collective calls = 5 N_DUP
//   p2p sent = 8 r_i r_k ([i == j and not i = k = 0] + [j == k and k != 0])
//   p2p recv (plane 0 only, k = 0) = 8 r_i r_j ([not i = j = 0] + [j != 0])
// The same for Algorithms 4 and 5 (Algorithm 5 only splits each message into N_DUP parts).
// With p = 1 nothing is communicated. Inactive ranks: no bytes, only the Ibarrier call.
TEST(SymmSquareCube, VolumeMatchesModelAndInactiveRanksAreSilent) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 29;
  auto full = random_symmetric(n, 3);
  for (auto alg : {SscAlgorithm::Baseline, SscAlgorithm::Optimized})
    for (int nd : {1, 2, 4}) {
      dense::SscOptions o;
      o.algorithm = alg;
      o.n_dup = nd;
      dense::SymmSquareCube ssc(ctx, n, o);
      dense::DistMatrix<double> D(ctx, ssc.plane0()), D2(ctx, ssc.plane0()), D3(ctx, ssc.plane0());
      D.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
        v = full[static_cast<std::size_t>(j * n + i)];
      });
      ctx.ledger().reset();
      ssc.run(D.data(), D2.data(), D3.data());
      const auto& m = ssc.mesh();
      auto k = ctx.ledger().total("ssc/compute");
      auto rel = ctx.ledger().total("ssc/release");
      auto all = ctx.ledger().total();
      int ndup = alg == SscAlgorithm::Baseline ? 1 : nd;
      EXPECT_EQ(ssc.n_dup(), alg == SscAlgorithm::Baseline ? 1 : nd);
      if (!m.active()) {
        EXPECT_EQ(all.coll_bytes + all.p2p_sent_bytes + all.p2p_recv_bytes, 0);
        EXPECT_EQ(all.p2p_sent_msgs + all.p2p_recv_msgs, 0);
        EXPECT_EQ(all.coll_calls, 1);  // the Ibarrier
        continue;
      }
      EXPECT_EQ(rel.coll_calls, m.inactive_ranks() > 0 ? 1 : 0);
      EXPECT_EQ(rel.coll_bytes, 0);
      int p = m.p(), i = m.i(), j = m.j(), kk = m.k();
      std::int64_t ri = model_block(n, p, i), rj = model_block(n, p, j), rk = model_block(n, p, kk);
      if (p == 1) {
        EXPECT_EQ(k.coll_bytes + k.p2p_sent_bytes + k.p2p_recv_bytes + k.coll_calls, 0);
        continue;
      }
      EXPECT_EQ(k.coll_bytes, 8 * (ri * rj + 2 * rj * rk + 2 * ri * rk));
      EXPECT_EQ(k.coll_calls, 5 * ndup);
      std::int64_t sent = 8 * ri * rk * ((i == j && !(i == kk && kk == 0)) + (j == kk && kk != 0));
      std::int64_t recv = kk == 0 ? 8 * ri * rj * (!(i == j && j == 0) + (j != 0)) : 0;
      EXPECT_EQ(k.p2p_sent_bytes, sent) << i << j << kk;
      EXPECT_EQ(k.p2p_recv_bytes, recv) << i << j << kk;
      // and the result is right
      if (kk == 0) {
        std::vector<double> r2(full.size());
        int ni = static_cast<int>(n);
        tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, full.data(), ni, full.data(), ni, 0.0,
                                  r2.data(), ni);
        double worst = 0;
        D2.for_each_local([&](std::int64_t a, std::int64_t b, double& v) {
          worst = std::max(worst, std::abs(v - r2[static_cast<std::size_t>(b * n + a)]));
        });
        EXPECT_LE(worst, 1e-13 * n);
      }
    }
}

TEST(SymmSquareCube, AutoNdupAndMesh) {
  Context ctx(MPI_COMM_WORLD);
  dense::SscOptions o;  // n_dup = 0: auto, parts >= n_t = 64 KiB, at most 4
  dense::SymmSquareCube small(ctx, 20, o);
  EXPECT_EQ(small.n_dup(), 1);
  dense::SymmSquareCube big(ctx, 400, o);  // blocks >= 200 x 200 doubles = 320 KB -> 4
  EXPECT_EQ(big.n_dup(), 4);
  EXPECT_EQ(big.p(), layout::Mesh3D::largest_p(ctx.size()));
  o.p = 1;
  dense::SymmSquareCube one(ctx, 20, o);
  EXPECT_EQ(one.mesh().inactive_ranks(), ctx.size() - 1);
  EXPECT_NE(one.mesh().describe().find("1x1x1 mesh"), std::string::npos);
  dense::SscOptions t;
  t.algorithm = SscAlgorithm::TwoPointFiveD;
  dense::SymmSquareCube two(ctx, 20, t);
  auto g = layout::Mesh3D::choose_grid(ctx.size(), 20);
  EXPECT_EQ(two.p(), g.q);
  EXPECT_EQ(two.c(), g.c);
  std::string want = std::to_string(g.q) + "x" + std::to_string(g.q) + "x" + std::to_string(g.c) +
                     " mesh (q=" + std::to_string(g.q) + ", c=" + std::to_string(g.c) + ")";
  EXPECT_NE(two.mesh().describe().find(want), std::string::npos) << two.mesh().describe();
}

TEST(SymmSquareCube, Errors) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 12;
  auto full = random_symmetric(n, 5);
  auto lay = layout::Layout::block_cyclic(n, n, 3, 3, 1, ctx.size(), 0, 0, ctx.size());
  auto D = dense::scatter(ctx, full.data(), lay);
  // not square
  auto rect = layout::Layout::block_cyclic(n, n + 1, 3, 3, 1, ctx.size(), 0, 0, ctx.size());
  dense::DistMatrix<double> R(ctx, rect);
  EXPECT_THROW(dense::symm_square_cube(ctx, R), DimensionMismatch);
  // not symmetric: relative asymmetry 1e-9 > symmetry_tol = 1e-12
  auto asym = full;
  asym[1] += 1e-9;
  auto A = dense::scatter(ctx, asym.data(), lay);
  EXPECT_THROW(dense::symm_square_cube(ctx, A), InputError);
  dense::SscOptions loose;
  loose.symmetry_tol = 1e-8;
  EXPECT_NO_THROW(dense::symm_square_cube(ctx, A, loose));
  // NaN
  auto bad = full;
  bad[static_cast<std::size_t>(n * n - 1)] = std::numeric_limits<double>::quiet_NaN();
  auto B = dense::scatter(ctx, bad.data(), lay);
  EXPECT_THROW(dense::symm_square_cube(ctx, B), InputError);
  // n_dup out of range
  dense::SscOptions o;
  o.n_dup = -1;
  EXPECT_THROW(dense::symm_square_cube(ctx, D, o), InputError);
  o.n_dup = static_cast<int>(n) + 1;
  EXPECT_THROW(dense::symm_square_cube(ctx, D, o), InputError);
  // mesh larger than the ranks
  dense::SscOptions q;
  q.p = layout::Mesh3D::largest_p(ctx.size()) + 1;
  EXPECT_THROW(dense::symm_square_cube(ctx, D, q), GridError);
}

// Square-only mode (run_square): D^2 alone, against serial BLAS.
TEST(SymmSquareCube, SquareOnlyMatchesSerialBlas) {
  Context ctx(MPI_COMM_WORLD);
  for (std::int64_t n : {1, 7, 30}) {
    auto full = random_symmetric(n, 11 + static_cast<unsigned>(n));
    std::vector<double> r2(full.size());
    int ni = static_cast<int>(n);
    tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, full.data(), ni, full.data(), ni, 0.0,
                              r2.data(), ni);
    for (auto alg : kAll)
      for (int nd : {1, 2}) {
        dense::SscOptions o;
        o.algorithm = alg;
        o.n_dup = nd;
        int p = expected_shape(alg, ctx.size(), n).q;
        if (nd > n / p) continue;
        dense::SymmSquareCube ssc(ctx, n, o);
        dense::DistMatrix<double> D(ctx, ssc.plane0()), D2(ctx, ssc.plane0());
        D.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
          v = full[static_cast<std::size_t>(j * n + i)];
        });
        ssc.run_square(D.data(), D2.data());
        auto g2 = dense::gather(ctx, D2);
        if (ctx.rank() == 0)
          EXPECT_LE(rel_err(g2, r2), 1e-13)
              << "alg " << dense::to_string(alg) << " n=" << n << " nd=" << nd;
      }
  }
}

// 2.5D on every q x q x c mesh that fits (c = 1 .. q), n divisible by q or not, N_DUP in
// {1, 2, 4} where n / q allows, D^2 and D^3 and square only, against serial BLAS.
TEST(SymmSquareCube, TwoPointFiveDEveryMesh) {
  Context ctx(MPI_COMM_WORLD);
  for (int q = 1; q * q <= ctx.size(); ++q)
    for (int c = 1; c <= q && q * q * c <= ctx.size(); ++c)
      for (std::int64_t n : {static_cast<std::int64_t>(q), std::int64_t{7}, std::int64_t{20}}) {
        if (n < q) continue;
        auto ref = make_ref(n, 100 + static_cast<unsigned>(n));
        for (int nd : {1, 2, 4}) {
          if (nd > n / q) continue;
          for (bool cube : {true, false}) {
            dense::SscOptions o;
            o.algorithm = SscAlgorithm::TwoPointFiveD;
            o.p = q;
            o.replication = c;
            o.n_dup = nd;
            dense::SymmSquareCube ssc(ctx, n, o);
            ASSERT_EQ(ssc.p(), q);
            ASSERT_EQ(ssc.c(), c);
            EXPECT_EQ(ssc.mesh().inactive_ranks(), ctx.size() - q * q * c);
            auto [g2, g3] = run_plane0(ctx, ssc, ref.d, cube);
            std::string where = "q=" + std::to_string(q) + " c=" + std::to_string(c) +
                                " n=" + std::to_string(n) + " nd=" + std::to_string(nd) +
                                (cube ? " cube" : " square");
            EXPECT_LE(rel_err(g2, ref.d2), 1e-13) << where;
            if (cube) EXPECT_LE(rel_err(g3, ref.d3), 1e-13) << where;
          }
        }
      }
}

// Algorithm 3's volume, payload rule of shared/tools/commcount, per active rank P(i,j,k),
// p > 1, blocks of r_i rows, 8 bytes per double, N_DUP = 1 (blocking collectives):
//   collective bytes = 8 (r_i r_j   [1: grd bcast of D_ij]   + r_k r_j [2: row bcast of D_kj]
//                       + r_i r_k   [4: col reduce of D^2]
//                       + r_j r_k   [7: row bcast of D^2_jk] + r_i r_k [9: col reduce of D^3])
//   collective calls = 5           (square only: the first three terms, 3 calls)
//   p2p sent = 8 r_i r_k [j = k != 0]                 (5: D^2_ik from P(i,k,k) to P(i,k,0))
//            + 8 r_i r_j [k = 0, (i,j) != (0,0)]      (6: D^2_ij from P(i,j,0) to P(j,i,j))
//            + 8 r_i r_k [j = k != 0]                 (10: D^3_ik)       -- 6, 10: cube only
//   p2p recv = 8 r_i r_j [k = 0, j != 0]              (5: into P(i,j,0) from P(i,j,j))
//            + 8 r_j r_k [i = k, (j,k) != (0,0)]      (6: D^2_jk into P(k,j,k) from P(j,k,0))
//            + 8 r_i r_j [k = 0, j != 0]              (10)
//   one message per term. With p = 1 nothing is communicated.
// Summed over the p^3 ranks with n = p b: collectives 5 p^3 b^2 doubles (as Algorithms 4, 5)
// and 2 (p^2 - p) + (p^2 - 1) blocks of b^2 point-to-point (Algorithm 4: 2 p^2 - p - 1).
// The test also checks that the bytes sent equal the bytes received over the run.
TEST(SymmSquareCube, OriginalVolumeMatchesModel) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 29;  // prime: unequal blocks for every p > 1
  auto ref = make_ref(n, 3);
  for (bool cube : {true, false}) {
    dense::SscOptions o;
    o.algorithm = SscAlgorithm::Original;
    o.n_dup = 2;  // ignored: Algorithm 3 uses blocking collectives
    dense::SymmSquareCube ssc(ctx, n, o);
    EXPECT_EQ(ssc.n_dup(), 1);
    auto model = [&] {
      Volume v;
      const auto& m = ssc.mesh();
      int p = m.p(), i = m.i(), j = m.j(), k = m.k();
      if (p == 1) return v;
      std::int64_t ri = model_block(n, p, i), rj = model_block(n, p, j), rk = model_block(n, p, k);
      v.coll_bytes = 8 * (ri * rj + rk * rj + ri * rk + (cube ? rj * rk + ri * rk : 0));
      v.coll_calls = cube ? 5 : 3;
      if (j == k && k != 0) v.send(ri * rk);
      if (k == 0 && j != 0) v.recv(ri * rj);
      if (cube) {
        if (k == 0 && !(i == 0 && j == 0)) v.send(ri * rj);
        if (i == k && !(j == 0 && k == 0)) v.recv(rj * rk);
        if (j == k && k != 0) v.send(ri * rk);
        if (k == 0 && j != 0) v.recv(ri * rj);
      }
      return v;
    };
    check_run_volume(ctx, ssc, ref, cube, model, cube ? "alg 3 cube" : "alg 3 square");
  }
}

// The 2.5D volume, payload rule of shared/tools/commcount, per active rank P(i,j,k) of the
// q x q x c mesh, blocks of r_i rows, 8 bytes per double. Layer k does Cannon steps
// t in [s0, s1) = [split_begin(q,c,k), split_begin(q,c,k+1)); l(t) = (i + j + t) mod q.
//   collectives (c > 1 only): 8 r_i r_j each, in N_DUP calls each: bcast D_ij (grd),
//     allreduce C (grd), reduce C (grd): 3 * 8 r_i r_j bytes, 3 N_DUP calls
//     (square only: bcast and a reduce: 2 * 8 r_i r_j, 2 N_DUP calls);
//   point-to-point (q > 1), one message each:
//     skew of A, once (the skewed A is kept for D^3): when l(s0) != j, send 8 r_i r_j,
//       receive 8 r_i r_l(s0);
//     per multiplication (2 with D^3, 1 square only):
//       skew of B: when l(s0) != i, send 8 r_i r_j, receive 8 r_l(s0) r_j;
//       shifts after steps t = s0 .. s1-2: send 8 (r_i r_l(t) + r_l(t) r_j) in 2 messages,
//       receive 8 (r_i r_l(t+1) + r_l(t+1) r_j) in 2 messages.
// With n = q b and c | q: per rank 3 b^2 collective doubles and at most
// (1 + 2 (1 + 2 (q/c - 1))) b^2 point-to-point doubles sent.
TEST(SymmSquareCube, TwoPointFiveDVolumeMatchesModel) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 29;
  auto ref = make_ref(n, 4);
  for (int q = 1; q * q <= ctx.size(); ++q)
    for (int c = 1; c <= q && q * q * c <= ctx.size(); ++c)
      for (int nd : {1, 2, 4})
        for (bool cube : {true, false}) {
          dense::SscOptions o;
          o.algorithm = SscAlgorithm::TwoPointFiveD;
          o.p = q;
          o.replication = c;
          o.n_dup = nd;
          dense::SymmSquareCube ssc(ctx, n, o);
          EXPECT_EQ(ssc.n_dup(), nd);
          auto model = [&] {
            Volume v;
            const auto& m = ssc.mesh();
            int i = m.i(), j = m.j(), k = m.k();
            auto r = [&](int b) { return model_block(n, q, b); };
            if (c > 1) {
              v.coll_bytes = (cube ? 3 : 2) * 8 * r(i) * r(j);
              v.coll_calls = (cube ? 3 : 2) * nd;
            }
            if (q == 1) return v;
            int s0 = static_cast<int>(model_split_begin(q, c, k));
            int s1 = static_cast<int>(model_split_begin(q, c, k + 1));
            auto l = [&](int t) { return (i + j + t) % q; };
            if (l(s0) != j) {
              v.send(r(i) * r(j));
              v.recv(r(i) * r(l(s0)));
            }
            for (int mult = 0; mult < (cube ? 2 : 1); ++mult) {
              if (l(s0) != i) {
                v.send(r(i) * r(j));
                v.recv(r(l(s0)) * r(j));
              }
              for (int t = s0; t + 1 < s1; ++t) {
                v.send(r(i) * r(l(t)));
                v.send(r(l(t)) * r(j));
                v.recv(r(i) * r(l(t + 1)));
                v.recv(r(l(t + 1)) * r(j));
              }
            }
            return v;
          };
          check_run_volume(ctx, ssc, ref, cube, model,
                           "2.5d q=" + std::to_string(q) + " c=" + std::to_string(c) +
                               " nd=" + std::to_string(nd) + (cube ? " cube" : " square"));
        }
}

// The active subset (seed III-B): with active_ranks = R the mesh is the largest that fits in
// R ranks; every other rank only takes part in the one Ibarrier. Results against BLAS.
TEST(SymmSquareCube, ActiveSubset) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 11;
  auto ref = make_ref(n, 9);
  for (int R = 1; R <= ctx.size(); ++R)
    for (auto alg : kAll) {
      dense::SscOptions o;
      o.algorithm = alg;
      o.active_ranks = R;
      o.n_dup = 1;
      dense::SymmSquareCube ssc(ctx, n, o);
      auto shape = expected_shape(alg, R, n);
      EXPECT_EQ(ssc.p(), shape.q);
      EXPECT_EQ(ssc.c(), shape.c);
      int inactive = ctx.size() - shape.q * shape.q * shape.c;
      EXPECT_EQ(ssc.mesh().inactive_ranks(), inactive);
      EXPECT_NE(ssc.mesh().describe().find("(" + std::to_string(inactive) + " inactive)"),
                std::string::npos)
          << ssc.mesh().describe();
      std::string where = "alg " + dense::to_string(alg) + " R=" + std::to_string(R);
      ctx.ledger().reset();
      auto [g2, g3] = run_plane0(ctx, ssc, ref.d, true);
      auto all = ctx.ledger().total("ssc/");
      if (!ssc.mesh().active()) {
        EXPECT_EQ(all.coll_bytes + all.p2p_sent_bytes + all.p2p_recv_bytes, 0) << where;
        EXPECT_EQ(all.p2p_sent_msgs + all.p2p_recv_msgs, 0) << where;
        EXPECT_EQ(all.coll_calls, 1) << where;
      }
      EXPECT_LE(rel_err(g2, ref.d2), 1e-13) << where;
      EXPECT_LE(rel_err(g3, ref.d3), 1e-13) << where;
    }
  // through symm_square_cube: SscResult::mesh names the inactive ranks
  auto lay = layout::Layout::block_cyclic(n, n, 2, 2, 1, ctx.size(), 0, 0, ctx.size());
  auto D = dense::scatter(ctx, ref.d.data(), lay);
  dense::SscOptions o;
  o.algorithm = SscAlgorithm::TwoPointFiveD;
  o.active_ranks = 1;
  auto res = dense::symm_square_cube(ctx, D, o);
  EXPECT_NE(res.mesh.find("1x1x1 mesh (q=1, c=1)"), std::string::npos) << res.mesh;
  EXPECT_NE(res.mesh.find("(" + std::to_string(ctx.size() - 1) + " inactive)"), std::string::npos)
      << res.mesh;
  EXPECT_LE(rel_err(tessel::testing::gather_all(ctx, res.d3), ref.d3), 1e-13);
}

// Errors of the mesh options, thrown on every rank.
TEST(SymmSquareCube, MeshErrors) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 6;
  const int P = ctx.size();
  auto make = [&](SscAlgorithm alg, int p, int c, int R) {
    dense::SscOptions o;
    o.algorithm = alg;
    o.p = p;
    o.replication = c;
    o.active_ranks = R;
    dense::SymmSquareCube ssc(ctx, n, o);
  };
  auto message = [&](SscAlgorithm alg, int p, int c, int R) -> std::string {
    try {
      make(alg, p, c, R);
    } catch (const GridError& e) { return e.what(); }
    return "(no throw)";
  };
  for (auto alg : kAll) {
    // active_ranks beyond the run, or negative
    std::string m = message(alg, 0, 0, P + 1);
    EXPECT_NE(m.find("active_ranks = " + std::to_string(P + 1)), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(P) + " ranks"), std::string::npos) << m;
    EXPECT_THROW(make(alg, 0, 0, -1), GridError);
    EXPECT_NO_THROW(make(alg, 0, 0, P));
  }
  // 3D: p^3 beyond the ranks allowed, p beyond n; replication is for 2.5D only
  int p3 = layout::Mesh3D::largest_p(P) + 1;
  EXPECT_THROW(make(SscAlgorithm::Original, p3, 0, 0), GridError);
  EXPECT_THROW(make(SscAlgorithm::Original, 2, 0, 7), GridError);  // 8 > 7 active ranks
  EXPECT_THROW(make(SscAlgorithm::Baseline, 7, 0, 0), GridError);  // p > n (and > ranks)
  EXPECT_THROW(make(SscAlgorithm::Optimized, 0, 2, 0), GridError);
  // 2.5D: q^2 c beyond the ranks, c > q, c < 0, q > n
  auto g = layout::Mesh3D::choose_grid(P, n);
  int qbig = 1;
  while (qbig * qbig <= P) ++qbig;  // q^2 > P: no c fits (qbig <= 4 < n for P <= 18)
  std::string m = message(SscAlgorithm::TwoPointFiveD, qbig, 1, 0);
  EXPECT_NE(m.find("q = " + std::to_string(qbig)), std::string::npos) << m;
  m = message(SscAlgorithm::TwoPointFiveD, 1, 2, 0);
  EXPECT_NE(m.find("replication c = 2 exceeds q = 1"), std::string::npos) << m;
  EXPECT_THROW(make(SscAlgorithm::TwoPointFiveD, 0, -1, 0), GridError);
  EXPECT_THROW(make(SscAlgorithm::TwoPointFiveD, 0, g.q + 1, 0), GridError);
  EXPECT_THROW(make(SscAlgorithm::TwoPointFiveD, 7, 1, 0), GridError);  // q > n
  EXPECT_THROW(make(SscAlgorithm::TwoPointFiveD, 1, 1, P + 1), GridError);
  EXPECT_NO_THROW(make(SscAlgorithm::TwoPointFiveD, 1, 1, 1));
}

// SscOptions::shm_moves: with inactive ranks the "redistribute in/out" moves go node-shared
// (layout::RedistOptions::node_shared). Results equal serial BLAS and are bit-identical with
// the flag on and off, on the real node (all ranks of this run) and on emulated nodes of 2
// ranks (ContextOptions::node_size, the mixed intra/inter-node path). On the real node, with a shared
// window, the in/out phases move no point-to-point bytes and their shm bytes equal the plain
// redistribution's volume.
TEST(SymmSquareCube, ShmMovesOnOffBitIdentical) {
  std::mt19937 rng(11);
  bool shm_ok = true;
  {
    Context ctx(MPI_COMM_WORLD);
    comm::NodeComm node(ctx.comm());
    try {
      comm::SharedWindow<double> w(node.comm(), 1);
    } catch (const MpiError&) {
      shm_ok = false;  // e.g. Open MPI with OMPI_MCA_osc=ucx alone: p2p fallback
    }
  }
  for (int node_size : {0, 2}) {
    ContextOptions copt;
    copt.node_size = node_size;
    Context ctx(MPI_COMM_WORLD, copt);
    for (std::int64_t n : {6, 17}) {
      Ref r = make_ref(n, static_cast<unsigned>(n + 3));
      auto lay = tessel::testing::random_layout(rng, n, n, ctx.size());
      auto D = dense::scatter(ctx, r.d.data(), lay);
      for (int active : {1, 2, 4}) {
        if (active > ctx.size()) continue;
        for (auto alg : {SscAlgorithm::Optimized, SscAlgorithm::TwoPointFiveD}) {
          dense::SscOptions o;
          o.algorithm = alg;
          o.active_ranks = active;
          std::vector<double> g[2][2];
          for (int on = 0; on < 2; ++on) {
            o.shm_moves = on == 1;
            ctx.ledger().reset();
            auto res = dense::symm_square_cube(ctx, D, o);
            g[on][0] = dense::gather(ctx, res.d2);
            g[on][1] = dense::gather(ctx, res.d3);
            const std::string where = "node_size " + std::to_string(node_size) +
                                      " n=" + std::to_string(n) +
                                      " active=" + std::to_string(active) + " alg " +
                                      dense::to_string(alg) + " shm_moves=" + std::to_string(on);
            const auto in = ctx.ledger().total("ssc/redistribute");
            // the plain volume of the three moves (D in; D^2, D^3 out), counted element by
            // element from the two layouts' owners (not by the library's redist_volume)
            dense::SymmSquareCube ssc(ctx, n, o);
            const bool has_inactive = ssc.mesh().inactive_ranks() > 0;
            auto dst0 = ssc.plane0();
            const auto own_lay = tessel::testing::owner_map(ctx, lay);
            const auto own_dst = tessel::testing::owner_map(ctx, dst0);
            auto vin = tessel::testing::brute_volume(own_lay, own_dst, ctx.rank(), ctx.size());
            auto vout = tessel::testing::brute_volume(own_dst, own_lay, ctx.rank(), ctx.size());
            const std::int64_t plain_sent = 8 * (vin.send_elems + 2 * vout.send_elems);
            EXPECT_EQ(in.p2p_sent_bytes + in.shm_bytes, plain_sent) << where;
            if (on == 0 || !has_inactive) EXPECT_EQ(in.shm_bytes, 0) << where;
            if (on == 1 && has_inactive && shm_ok && node_size == 0) {
              EXPECT_EQ(in.p2p_sent_bytes + in.p2p_recv_bytes, 0) << where;
              EXPECT_EQ(in.shm_bytes, plain_sent) << where;
            }
          }
          if (ctx.rank() == 0) {
            EXPECT_EQ(g[0][0], g[1][0]);
            EXPECT_EQ(g[0][1], g[1][1]);
            EXPECT_LE(rel_err(g[1][0], r.d2), 1e-13);
            EXPECT_LE(rel_err(g[1][1], r.d3), 1e-13);
          }
        }
      }
    }
  }
}

// Repeated calls make no communicators: the mesh and its duplicated communicators are kept in
// the Context's cache, keyed by the shape. D^2 and D^3 against serial BLAS on every call; a new shape (another n_dup, the
// 2.5D mesh) makes one new entry, which a later call of that shape reuses.
TEST(SymmSquareCube, RepeatedCallsReuseTheContextsCommunicators) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(5);
  const std::int64_t n = 14;
  Ref r = make_ref(n, 21);
  auto D = dense::scatter(ctx, r.d.data(), tessel::testing::random_layout(rng, n, n, ctx.size()));
  auto check = [&](const dense::SscOptions& o, const std::string& where) {
    auto res = dense::symm_square_cube(ctx, D, o);
    const auto g2 = tessel::testing::gather_all(ctx, res.d2);
    const auto g3 = tessel::testing::gather_all(ctx, res.d3);
    EXPECT_LE(rel_err(g2, r.d2), 1e-13) << where;
    EXPECT_LE(rel_err(g3, r.d3), 1e-13) << where;
  };
  dense::SscOptions o;
  o.n_dup = 2;
  o.shm_moves = false;  // the mesh entries alone (the node-shared ones: test_redistribute)
  check(o, "first");
  const int first = ctx.cache().creations();
  EXPECT_EQ(first, 1);
  for (int k = 0; k < 3; ++k) check(o, "again " + std::to_string(k));
  EXPECT_EQ(ctx.cache().creations(), first);
  o.n_dup = 1;
  check(o, "n_dup 1");
  EXPECT_EQ(ctx.cache().creations(), first + 1);
  o.algorithm = SscAlgorithm::TwoPointFiveD;
  check(o, "2.5d");
  EXPECT_EQ(ctx.cache().creations(), first + 2);
  o.algorithm = SscAlgorithm::Optimized;
  o.n_dup = 2;
  check(o, "n_dup 2 again");
  o.algorithm = SscAlgorithm::TwoPointFiveD;
  o.n_dup = 1;
  check(o, "2.5d again");
  EXPECT_EQ(ctx.cache().creations(), first + 2);
}

// The collectives as tessel's point-to-point chains (SscOptions::collectives = P2P), every
// algorithm: D^2 and D^3 against serial BLAS, and the chain's volume against the MPI run's
// ledger. A collective of B bytes over m ranks is recorded by the payload rule as B on each
// of its m ranks (MPI); as a chain every rank but one receives B (P2P). All collectives of
// Algorithms 3, 4, 5 span m = p ranks (row, col, grd), those of 2.5D m = c (grd), so summed
// over the run: recv(P2P) = recv(MPI) + coll(MPI) (m - 1) / m, and P2P makes no collective
// calls in phase ssc/compute. 2.5D's third collective is an allreduce (a chain reduce and a
// chain broadcast: 2 (m - 1) B received, payload m B) among three of equal size, so there
// recv(P2P) = recv(MPI) + coll(MPI) (m - 1) / m * 4/3.
TEST(SymmSquareCube, P2PCollectivesMatchBlasAndChainVolume) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 29;
  Ref ref = make_ref(n, 5);
  const auto& full = ref.d;
  for (auto alg : kAll)
    for (int nd : {1, 3}) {
      std::int64_t tot[2][2] = {{0, 0}, {0, 0}};  // [impl][recv, coll]
      int m = 1;
      for (auto impl : {comm::CollImpl::Mpi, comm::CollImpl::P2P}) {
        dense::SscOptions o;
        o.algorithm = alg;
        o.n_dup = nd;
        o.collectives = impl;
        dense::SymmSquareCube ssc(ctx, n, o);
        m = alg == SscAlgorithm::TwoPointFiveD ? ssc.c() : ssc.p();
        ctx.ledger().reset();
        auto [g2, g3] = run_plane0(ctx, ssc, full, true);
        auto k = ctx.ledger().total("ssc/compute");
        std::int64_t v[2] = {k.p2p_recv_bytes, k.coll_bytes};
        ctx.comm().allreduce(v, 2, MPI_SUM);
        const int x = impl == comm::CollImpl::P2P;
        tot[x][0] = v[0];
        tot[x][1] = v[1];
        std::string where = "alg " + dense::to_string(alg) + " nd " + std::to_string(nd) + " " +
                            comm::to_string(impl);
        EXPECT_LE(rel_err(g2, ref.d2), 1e-13) << where;
        EXPECT_LE(rel_err(g3, ref.d3), 1e-13) << where;
        if (impl == comm::CollImpl::P2P) EXPECT_EQ(k.coll_calls, 0) << where;
      }
      const bool a25 = alg == SscAlgorithm::TwoPointFiveD;
      ASSERT_EQ(tot[0][1] % (a25 ? 3 * m : m), 0);
      const std::int64_t extra = a25 ? tot[0][1] / (3 * m) * 4 * (m - 1) : tot[0][1] / m * (m - 1);
      EXPECT_EQ(tot[1][0], tot[0][0] + extra) << "alg " << dense::to_string(alg);
      EXPECT_EQ(tot[1][1], 0);
    }
}

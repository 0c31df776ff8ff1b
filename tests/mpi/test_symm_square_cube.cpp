// SymmSquareCube (seed 000, Algorithms 4 and 5) against serial BLAS, its communication volume
// against the seed's model on the ledger, the inactive ranks' silence, and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "tessel/dense/symm_square_cube.hpp"
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

double rel_err(const std::vector<double>& got, const std::vector<double>& ref) {
  return tessel::testing::frob_diff(got, ref) / tessel::testing::frob(ref);
}

}  // namespace

TEST(SymmSquareCube, MatchesSerialBlas) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(7);
  for (std::int64_t n : {1, 5, 8, 13, 24, 37}) {
    auto full = random_symmetric(n, static_cast<unsigned>(n));
    std::vector<double> r2(full.size()), r3(full.size());
    int ni = static_cast<int>(n);
    tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, full.data(), ni, full.data(), ni, 0.0, r2.data(), ni);
    tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, full.data(), ni, r2.data(), ni, 0.0, r3.data(), ni);
    auto lay = tessel::testing::random_layout(rng, n, n, ctx.size());
    auto D = dense::scatter(ctx, full.data(), lay);
    for (auto alg : {SscAlgorithm::Baseline, SscAlgorithm::Optimized})
      for (int nd : {1, 2, 4}) {
        dense::SscOptions o;
        o.algorithm = alg;
        o.n_dup = nd;
        int p = std::min<int>(layout::Mesh3D::largest_p(ctx.size()), static_cast<int>(n));
        if (nd > n / p) continue;
        auto res = dense::symm_square_cube(ctx, D, o);
        EXPECT_EQ(res.p, p);
        EXPECT_EQ(res.d2.layout(), lay);
        auto g2 = dense::gather(ctx, res.d2);
        auto g3 = dense::gather(ctx, res.d3);
        if (ctx.rank() == 0) {
          EXPECT_LE(rel_err(g2, r2), 1e-13) << "n=" << n << " nd=" << nd << " " << res.mesh;
          EXPECT_LE(rel_err(g3, r3), 1e-13) << "n=" << n << " nd=" << nd << " " << res.mesh;
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
      std::int64_t ri = ssc.block(i), rj = ssc.block(j), rk = ssc.block(kk);
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
        tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, full.data(), ni, full.data(), ni, 0.0, r2.data(), ni);
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
    tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, full.data(), ni, full.data(), ni, 0.0, r2.data(), ni);
    for (auto alg : {SscAlgorithm::Baseline, SscAlgorithm::Optimized})
      for (int nd : {1, 2}) {
        dense::SscOptions o;
        o.algorithm = alg;
        o.n_dup = nd;
        int p = std::min<int>(layout::Mesh3D::largest_p(ctx.size()), ni);
        if (nd > n / p) continue;
        dense::SymmSquareCube ssc(ctx, n, o);
        dense::DistMatrix<double> D(ctx, ssc.plane0()), D2(ctx, ssc.plane0());
        D.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
          v = full[static_cast<std::size_t>(j * n + i)];
        });
        ssc.run_square(D.data(), D2.data());
        auto g2 = dense::gather(ctx, D2);
        if (ctx.rank() == 0) EXPECT_LE(rel_err(g2, r2), 1e-13) << "n=" << n << " nd=" << nd;
      }
  }
}

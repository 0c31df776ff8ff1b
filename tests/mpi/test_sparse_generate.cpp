// The water generator: H and S symmetric, S positive definite (LAPACK dpotrf) and a HOMO-LUMO
// gap of the generalized problem (dsygv) with nocc = 4N for small N; every block against a
// brute-force serial computation over all atom pairs and images (no cell list, no
// distribution), so the matrices are the same at every rank count; occupancy falls with N.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "sparse_test_util.hpp"
#include "tessel/core/context.hpp"
#include "tessel/sparse/generate.hpp"

using namespace tessel;
using namespace tessel::sparse;
using namespace tessel::testing;

extern "C" {
void dpotrf_(const char*, const int*, double*, const int*, int*);
void dsygv_(const int*, const char*, const char*, const int*, double*, const int*, double*,
            const int*, double*, double*, const int*, int*);
}

namespace {

/// The dense S and H of n molecules from the pure per-pair function, every atom pair.
struct Brute {
  DenseRef s, h;
};
Brute brute_force(int n, const WaterOptions& opt) {
  const WaterGeometry g = water_geometry(n, opt);
  const BlockSizes bs = water_block_sizes(n);
  Distribution d(bs, bs, 1, 1, std::vector<int>(static_cast<std::size_t>(bs.count()), 0),
                 std::vector<int>(static_cast<std::size_t>(bs.count()), 0));
  Brute b{empty_ref(d), empty_ref(d)};
  const double rc = water_cutoff(opt.eps);
  double s[16], h[16];
  for (int i = 0; i < g.natoms(); ++i)
    for (int j = 0; j < g.natoms(); ++j) {
      if (water_block(g, i, j, rc, s, h) < opt.eps) continue;
      const int len = bs.size(i) * bs.size(j);
      set_block(b.s, i, j, std::vector<double>(s, s + len), true);
      set_block(b.h, i, j, std::vector<double>(h, h + len), true);
    }
  return b;
}

}  // namespace

TEST(SparseGenerate, SymmetricPositiveDefiniteWithAGap) {
  Context ctx(MPI_COMM_WORLD);
  for (int n : {8, 20}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    auto w = generate_water(ctx, n);
    EXPECT_EQ(w.nelectrons, 8 * n);
    const int m = static_cast<int>(w.S.rows());
    ASSERT_EQ(m, 6 * n);
    std::vector<double> s = dense_of(ctx, w.S), h = dense_of(ctx, w.H);
    double asym = 0;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j) {
        asym = std::max(asym, std::abs(s[i * m + j] - s[j * m + i]));
        asym = std::max(asym, std::abs(h[i * m + j] - h[j * m + i]));
      }
    EXPECT_LE(asym, 1e-13);
    std::vector<double> c = s;
    int info = 0;
    dpotrf_("L", &m, c.data(), &m, &info);
    EXPECT_EQ(info, 0) << "S is not positive definite";
    std::vector<double> ev(static_cast<std::size_t>(m)), work(static_cast<std::size_t>(64 * m));
    const int itype = 1, lwork = 64 * m;
    c = s;
    dsygv_(&itype, "N", "L", &m, h.data(), &m, c.data(), &m, ev.data(), work.data(), &lwork, &info);
    ASSERT_EQ(info, 0);
    const int nocc = 4 * n;
    const double gap = ev[static_cast<std::size_t>(nocc)] - ev[static_cast<std::size_t>(nocc - 1)];
    EXPECT_GT(gap, 0.1) << "HOMO " << ev[static_cast<std::size_t>(nocc - 1)] << " LUMO "
                        << ev[static_cast<std::size_t>(nocc)];
  }
}

TEST(SparseGenerate, BlocksEqualTheBruteForceComputation) {
  Context ctx(MPI_COMM_WORLD);
  // 8: a box smaller than the cutoff (images summed); 300 at eps 1e-4: the cell-list path (3
  // cells a side).
  for (int n : {8, 300}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    WaterOptions opt;
    opt.seed = 7;
    if (n == 300) opt.eps = 1e-4;
    const Brute ref = brute_force(n, opt);
    const BlockSizes bs = water_block_sizes(n);
    auto [pr, pc] = Distribution::default_grid(ctx.size());
    auto w = generate_water(ctx, n, opt, Distribution::random(bs, bs, pc, pr, 3));
    check_storage(w.S, ref.s);
    check_storage(w.H, ref.h);
    EXPECT_EQ(nblocks(ctx, w.S), count_stored(ref.s));
    // The same from a geometry computed once, on another distribution
    auto g =
        generate_water(ctx, water_geometry(n, opt), opt, Distribution::random(bs, bs, pr, pc, 5));
    check_storage(g.S, ref.s);
    check_storage(g.H, ref.h);
    if (n == 300) {  // no image of an atom within the cutoff: unit diagonal blocks
      EXPECT_GT(water_geometry(n, opt).box, 3 * water_cutoff(opt.eps));
      w.S.for_each_block([](int br, int bc, const double* x, int r, int) {
        if (br != bc) return;
        for (int j = 0; j < r; ++j)
          for (int i = 0; i < r; ++i) EXPECT_NEAR(x[j * r + i], i == j ? 1.0 : 0.0, 1e-14);
      });
    }
  }
}

TEST(SparseGenerate, GeometryAndOccupancy) {
  Context ctx(MPI_COMM_WORLD);
  const WaterOptions opt;
  const WaterGeometry g = water_geometry(100, opt);
  // No two atoms of different molecules closer than 1.5 A; bonds 0.9572 A.
  const double ang = 1.8897261254578281;
  auto d = [&](int a, int b) {
    double s = 0;
    for (int k = 0; k < 3; ++k) {
      double x = g.pos[a][k] - g.pos[b][k];
      x -= g.box * std::nearbyint(x / g.box);
      s += x * x;
    }
    return std::sqrt(s);
  };
  double dmin = 1e300;
  for (int a = 0; a < g.natoms(); ++a)
    for (int b = 0; b < g.natoms(); ++b)
      if (a / 3 != b / 3) dmin = std::min(dmin, d(a, b));
  EXPECT_GE(dmin, 1.5 * ang);
  EXPECT_NEAR(d(0, 1), 0.9572 * ang, 1e-9);
  EXPECT_NEAR(g.box, std::cbrt(100 / 0.0334) * ang, 1e-9);
  double prev = 2;
  for (int n : {30, 100, 300}) {
    auto w = generate_water(ctx, n);
    const double occ = occupation(ctx, w.S);
    EXPECT_LT(occ, prev) << "N = " << n;
    prev = occ;
  }
  EXPECT_THROW(generate_water(ctx, 0), InputError);
  WaterOptions bad;
  bad.eps = 0;
  EXPECT_THROW(generate_water(ctx, 4, bad), InputError);
}

// The CP2K matrices of ../shared/data/cp2k (32 waters SZV and DZVP, 256 waters SZV; GTEST_SKIP
// when absent): sign and TRS4 on block-sparse matrices with both multiply algorithms reproduce
// band_energy_exact of meta.json (a dense generalized diagonalization) to 1e-9 Ha without
// filtering and 1e-5 Ha at eps = 1e-6, and 2 tr(P S) = the electron count to 1e-8 (1e-5 at
// eps = 1e-6); the dense algebra gives the same. The 256-water case runs only with
// TESSEL_LONG_TESTS=1 (minutes on a loaded 2-core machine).
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "cp2k_test_util.hpp"
#include "density_test_util.hpp"
#include "tessel/solvers/density.hpp"
#include "tessel/sparse/tiling.hpp"

using namespace tessel;
namespace tt = tessel::testing;
using solvers::DensityMethod;

namespace {

using tt::load;
using tt::meta;
using tt::System;

// TESSEL_LONG_TESTS=1: the DZVP and 256-water cases (minutes each on the loaded 2-core machine).
bool long_tests() {
  const char* e = std::getenv("TESSEL_LONG_TESTS");
  return e != nullptr && std::string(e) == "1";
}

// Rank count number i of {1, 2, 4, 9} runs case i of a case list (not the later ones), so
// together they cover the list; TESSEL_TEST_FULL runs every case at every count.
bool runs_case(const Context& ctx, std::size_t k) {
  const std::vector<int> counts = {1, 2, 4, 9};
  const auto slot = static_cast<std::size_t>(std::find(counts.begin(), counts.end(), ctx.size()) -
                                             counts.begin());
  return std::getenv("TESSEL_TEST_FULL") != nullptr || k == slot % 4;
}

struct Case {
  DensityMethod method;
  sparse::SpAlgorithm alg;
  double eps;
  int tile = 1;  ///< > 1: solve on clustered tiles of about this many rows (sparse/tiling.hpp)
};

// One density of s on block-sparse matrices, checked against meta.json.
void check_case(Context& ctx, const System& s, const sparse::BlockSparseMatrix<double>& H,
                const sparse::BlockSparseMatrix<double>& S, const Case& c) {
  sparse::SpMultiplyOptions mo;
  mo.algorithm = c.alg;
  mo.filter_eps = c.eps;
  solvers::SparseAlgebra alg(ctx, mo);
  solvers::DensityOptions o;
  o.method = c.method;
  if (c.eps > 0) o.tol = 1e-8;
  const double tol = c.eps > 0 ? 1e-5 : 1e-9;
  const std::string what = s.name + " " + solvers::to_string(c.method) +
                           (c.alg == sparse::SpAlgorithm::Cannon ? " cannon" : " rma25d") +
                           " eps " + std::to_string(c.eps) +
                           (c.tile > 1 ? " tiles " + std::to_string(c.tile) : "");
  solvers::DensityResult<sparse::BlockSparseMatrix<double>> r;
  if (c.tile > 1) {
    // Into clustered tiles, solve, and P back into atomic blocks: the band energy recomputed
    // from the atomic P and H checks the way back too.
    const auto& d = H.distribution();
    auto tl = sparse::cluster_tiling(ctx, S, c.tile);
    ASSERT_FALSE(tl.is_identity()) << what;
    auto td = sparse::Distribution::random(tl.tiles(), tl.tiles(), d.pr(), d.pc());
    r = solvers::density(alg, sparse::to_tiles(ctx, H, tl, tl, td),
                         sparse::to_tiles(ctx, S, tl, tl, td), s.electrons, o);
    auto p = sparse::from_tiles(ctx, r.P, tl, tl, d);
    EXPECT_NEAR(2 * sparse::dot(ctx, p, H), r.band_energy, 1e-9 * std::abs(s.exact)) << what;
  } else {
    r = solvers::density(alg, H, S, s.electrons, o);
  }
  EXPECT_NEAR(r.band_energy, s.exact, tol) << what;
  EXPECT_NEAR(2 * r.trace_ps, static_cast<double>(s.electrons), c.eps > 0 ? 1e-5 : 1e-8) << what;
  EXPECT_GT(r.mu, meta(s.name, "homo")) << what;
  EXPECT_LT(r.mu, meta(s.name, "lumo")) << what;
  if (ctx.rank() == 0)
    std::printf(
        "  %s: dE %.2e, 2tr(PS) - N %.2e, mu %.5f, %d it, %d sign ev, %lld mult, idem %.1e\n",
        what.c_str(), r.band_energy - s.exact, 2 * r.trace_ps - static_cast<double>(s.electrons),
        r.mu, r.iterations, r.sign_evaluations, static_cast<long long>(r.multiplications),
        r.idempotency);
}

}  // namespace

TEST(DensityCp2k, Water32SzvSignAndTrs4BothAlgorithms) {
  Context ctx(MPI_COMM_WORLD);
  System s;
  if (!load("h2o-32-szv", s)) GTEST_SKIP() << "no ../shared/data/cp2k/h2o-32-szv";
  auto H = tt::sparse_of(ctx, s.H, s.sizes);
  auto S = tt::sparse_of(ctx, s.S, s.sizes);
  // The 8 cases (method x algorithm x eps); each rank count of {1, 2, 4, 9} runs one of the
  // first four (together: each method with each algorithm and each eps) to keep the test short
  // (a product of these tiny blocks costs ~0.1 s); with TESSEL_TEST_FULL set every rank count
  // runs all 8.
  using A = sparse::SpAlgorithm;
  const std::vector<Case> cases = {
      {DensityMethod::Sign, A::Cannon, 0.0}, {DensityMethod::Trs4, A::Rma25d, 1e-6},
      {DensityMethod::Trs4, A::Cannon, 0.0}, {DensityMethod::Sign, A::Rma25d, 1e-6},
      {DensityMethod::Sign, A::Rma25d, 0.0}, {DensityMethod::Trs4, A::Cannon, 1e-6},
      {DensityMethod::Trs4, A::Rma25d, 0.0}, {DensityMethod::Sign, A::Cannon, 1e-6}};
  // np1: sign cannon 0, np2: trs4 rma25d 1e-6, np4: trs4 cannon 0, np9: sign rma25d 1e-6
  for (std::size_t k = 0; k < cases.size(); ++k)
    if (runs_case(ctx, k)) check_case(ctx, s, H, S, cases[k]);
}

// DZVP (13 x 13 and 5 x 5 blocks, n = 736): one case per rank count (np1: TRS4 Cannon eps 0,
// np2: sign Cannon 1e-6, np4: TRS4 rma25d 1e-6, np9: sign rma25d 1e-6); all four with
// TESSEL_TEST_FULL. Only with TESSEL_LONG_TESTS=1: a sign step (2 products) took ~9 s at
// 2 ranks on the loaded machine, ~60 steps per sign density.
TEST(DensityCp2k, Water32DzvpSignAndTrs4) {
  Context ctx(MPI_COMM_WORLD);
  if (!long_tests()) GTEST_SKIP() << "set TESSEL_LONG_TESTS=1 to run the DZVP cases";
  System s;
  if (!load("h2o-32-dzvp", s)) GTEST_SKIP() << "no ../shared/data/cp2k/h2o-32-dzvp";
  auto H = tt::sparse_of(ctx, s.H, s.sizes);
  auto S = tt::sparse_of(ctx, s.S, s.sizes);
  using A = sparse::SpAlgorithm;
  const std::vector<Case> cases = {{DensityMethod::Trs4, A::Cannon, 0.0},
                                   {DensityMethod::Sign, A::Cannon, 1e-6},
                                   {DensityMethod::Trs4, A::Rma25d, 1e-6},
                                   {DensityMethod::Sign, A::Rma25d, 1e-6}};
  for (std::size_t k = 0; k < cases.size(); ++k)
    if (runs_case(ctx, k)) check_case(ctx, s, H, S, cases[k]);
}

// 256 waters SZV (n = 1536, 768 atom blocks) at eps = 1e-6, sign and TRS4 (Cannon), the
// accuracy target of issue 9: only with TESSEL_LONG_TESTS=1 (minutes per method here).
TEST(DensityCp2k, Water256SzvEps1e6Long) {
  Context ctx(MPI_COMM_WORLD);
  if (!long_tests()) GTEST_SKIP() << "set TESSEL_LONG_TESTS=1 to run the 256-water case";
  System s;
  if (!load("h2o-256-szv", s)) GTEST_SKIP() << "no ../shared/data/cp2k/h2o-256-szv";
  auto H = tt::sparse_of(ctx, s.H, s.sizes);
  auto S = tt::sparse_of(ctx, s.S, s.sizes);
  for (auto m : {DensityMethod::Trs4, DensityMethod::Sign})
    check_case(ctx, s, H, S, {m, sparse::SpAlgorithm::Cannon, 1e-6});
}

// The same cases on clustered tiles of ~32 rows (what `tessel density` does by default):
// sign and TRS4 with both algorithms at eps = 1e-6 at every rank count, and also at eps = 0
// at 1 and 2 ranks (every case everywhere with TESSEL_TEST_FULL).
TEST(DensityCp2k, Water32SzvTiles) {
  Context ctx(MPI_COMM_WORLD);
  System s;
  if (!load("h2o-32-szv", s)) GTEST_SKIP() << "no ../shared/data/cp2k/h2o-32-szv";
  auto H = tt::sparse_of(ctx, s.H, s.sizes);
  auto S = tt::sparse_of(ctx, s.S, s.sizes);
  using A = sparse::SpAlgorithm;
  for (auto m : {DensityMethod::Sign, DensityMethod::Trs4})
    for (auto a : {A::Cannon, A::Rma25d})
      for (double eps : {0.0, 1e-6})
        if (eps > 0 || ctx.size() <= 2 || std::getenv("TESSEL_TEST_FULL") != nullptr)
          check_case(ctx, s, H, S, {m, a, eps, 32});
}

// DZVP and 256-water SZV on tiles, one case per rank count (np1: TRS4 Cannon, np2: sign
// rma25d, np4: sign Cannon, np9: TRS4 rma25d; all at eps = 1e-6; every case at every rank
// count with TESSEL_TEST_FULL). A missing system is reported as a skip (after the other one
// ran), never as a pass.
TEST(DensityCp2k, Water32DzvpAndWater256SzvTiles) {
  Context ctx(MPI_COMM_WORLD);
  using A = sparse::SpAlgorithm;
  const std::vector<Case> cases = {{DensityMethod::Trs4, A::Cannon, 1e-6, 32},
                                   {DensityMethod::Sign, A::Rma25d, 1e-6, 32},
                                   {DensityMethod::Sign, A::Cannon, 1e-6, 32},
                                   {DensityMethod::Trs4, A::Rma25d, 1e-6, 32}};
  std::string missing;
  for (const char* sys : {"h2o-32-dzvp", "h2o-256-szv"}) {
    System s;
    if (!load(sys, s)) {
      missing += std::string(missing.empty() ? "" : ", ") + "../shared/data/cp2k/" + sys;
      continue;
    }
    auto H = tt::sparse_of(ctx, s.H, s.sizes);
    auto S = tt::sparse_of(ctx, s.S, s.sizes);
    for (std::size_t k = 0; k < cases.size(); ++k)
      if (runs_case(ctx, k)) check_case(ctx, s, H, S, cases[k]);
  }
  if (!missing.empty()) GTEST_SKIP() << "no " << missing;
}

TEST(DensityCp2k, Water32SzvDenseAlgebra) {
  Context ctx(MPI_COMM_WORLD);
  System s;
  if (!load("h2o-32-szv", s)) GTEST_SKIP() << "no ../shared/data/cp2k/h2o-32-szv";
  solvers::DenseAlgebra alg(ctx);
  auto H = tt::dense_of(ctx, s.H, s.n);
  auto S = tt::dense_of(ctx, s.S, s.n);
  for (auto method : {DensityMethod::Sign, DensityMethod::Trs4}) {
    solvers::DensityOptions o;
    o.method = method;
    auto r = solvers::density(alg, H, S, s.electrons, o);
    EXPECT_NEAR(r.band_energy, s.exact, 1e-9) << solvers::to_string(method);
    EXPECT_NEAR(2 * r.trace_ps, static_cast<double>(s.electrons), 1e-8);
  }
}

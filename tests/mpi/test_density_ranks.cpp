// The same answer at every rank count: the block-sparse density (sign and TRS4, Cannon and
// rma25d, on-the-fly and final filtering at eps = 1e-6) of the CP2K 32-water SZV matrices and of
// a generated box of 48 waters, run on all ranks of the test, against the same run on rank 0
// alone (a one-rank communicator): band energy equal to 1e-9 Eh, 2 tr(PS) to 1e-9 and every
// element of P to 1e-9. Rank count p runs case p mod 4 of the CP2K system and case
// (p + 1) mod 4 of the generated one (together every case; every case at every count with
// TESSEL_TEST_FULL).
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cp2k_test_util.hpp"
#include "density_test_util.hpp"
#include "tessel/solvers/density.hpp"
#include "tessel/sparse/generate.hpp"

using namespace tessel;
namespace tt = tessel::testing;
using solvers::DensityMethod;
using sparse::SpAlgorithm;

namespace {

struct Case {
  DensityMethod method;
  SpAlgorithm alg;
};
const std::vector<Case> kCases = {{DensityMethod::Sign, SpAlgorithm::Cannon},
                                  {DensityMethod::Trs4, SpAlgorithm::Rma25d},
                                  {DensityMethod::Trs4, SpAlgorithm::Cannon},
                                  {DensityMethod::Sign, SpAlgorithm::Rma25d}};
constexpr double kEps = 1e-6;

std::string name_of(const Case& c) {
  return solvers::to_string(c.method) + (c.alg == SpAlgorithm::Cannon ? " cannon" : " rma25d");
}

/// What is compared: the band energy, 2 tr(PS) and P (full, column-major).
struct Answer {
  std::vector<double> v;  // band energy, 2 tr(PS), then P
};

/// H and S of a system on `ctx` (its default grid).
using Build =
    std::function<std::pair<sparse::BlockSparseMatrix<double>, sparse::BlockSparseMatrix<double>>(
        Context&)>;

Answer solve(Context& ctx, const Build& build, std::int64_t electrons, const Case& c) {
  auto [H, S] = build(ctx);
  sparse::SpMultiplyOptions mo;
  mo.algorithm = c.alg;
  mo.filter_eps = kEps;
  solvers::SparseAlgebra alg(ctx, mo);
  solvers::DensityOptions o;
  o.method = c.method;
  o.tol = 1e-8;
  auto r = solvers::density(alg, H, S, electrons, o);
  Answer a;
  a.v = {r.band_energy, 2 * r.trace_ps};
  auto p = tt::full_of(ctx, r.P);
  a.v.insert(a.v.end(), p.begin(), p.end());
  return a;
}

/// The one-rank answer, computed on rank 0 while the others wait without spinning (MPICH
/// busy-polls in a blocking collective), then on every rank.
Answer one_rank_answer(const Build& build, std::int64_t electrons, const Case& c) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Answer a;
  if (rank == 0) {
    Context one(MPI_COMM_SELF);
    a = solve(one, build, electrons, c);
  }
  auto polite_bcast = [](void* buf, int count, MPI_Datatype t) {
    MPI_Request rq;
    MPI_Ibcast(buf, count, t, 0, MPI_COMM_WORLD, &rq);
    for (int done = 0;;) {
      MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
      if (done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  };
  long long n = static_cast<long long>(a.v.size());
  polite_bcast(&n, 1, MPI_LONG_LONG);
  a.v.resize(static_cast<std::size_t>(n));
  polite_bcast(a.v.data(), static_cast<int>(n), MPI_DOUBLE);
  return a;
}

void compare(Context& ctx, const std::string& sys, const Build& build, std::int64_t electrons,
             const Case& c) {
  const Answer want = one_rank_answer(build, electrons, c);
  const Answer got = solve(ctx, build, electrons, c);
  const std::string what = sys + " " + name_of(c) + " at " + std::to_string(ctx.size()) + " ranks";
  ASSERT_EQ(got.v.size(), want.v.size()) << what;
  EXPECT_NEAR(got.v[0], want.v[0], 1e-9) << what << ": band energy";
  EXPECT_NEAR(got.v[1], want.v[1], 1e-9) << what << ": 2 tr(PS)";
  double dp = 0;
  for (std::size_t i = 2; i < got.v.size(); ++i) dp = std::max(dp, std::abs(got.v[i] - want.v[i]));
  EXPECT_LE(dp, 1e-9) << what << ": max |P - P_1|";
  if (ctx.rank() == 0)
    std::printf("  %s: band energy %.10f, against one rank %.1e; max |P - P_1| %.1e\n",
                what.c_str(), got.v[0], got.v[0] - want.v[0], dp);
}

bool runs(const Context& ctx, std::size_t k, std::size_t shift) {
  return std::getenv("TESSEL_TEST_FULL") != nullptr ||
         k == (static_cast<std::size_t>(ctx.size()) + shift) % kCases.size();
}

}  // namespace

TEST(DensityRanks, Cp2kWater32SzvSameAtEveryRankCount) {
  Context ctx(MPI_COMM_WORLD);
  tt::System s;
  if (!tt::load("h2o-32-szv", s)) GTEST_SKIP() << "no cp2k/h2o-32-szv in the shared data";
  Build build = [&](Context& c) {
    return std::make_pair(tt::sparse_of(c, s.H, s.sizes), tt::sparse_of(c, s.S, s.sizes));
  };
  for (std::size_t k = 0; k < kCases.size(); ++k)
    if (runs(ctx, k, 0)) compare(ctx, s.name, build, s.electrons, kCases[k]);
}

TEST(DensityRanks, GeneratedWaterSameAtEveryRankCount) {
  Context ctx(MPI_COMM_WORLD);
  const int molecules = 48;
  Build build = [&](Context& c) {
    auto w = sparse::generate_water(c, molecules);
    return std::make_pair(std::move(w.H), std::move(w.S));
  };
  for (std::size_t k = 0; k < kCases.size(); ++k)
    if (runs(ctx, k, 1)) compare(ctx, "water:48", build, 8 * molecules, kCases[k]);
}

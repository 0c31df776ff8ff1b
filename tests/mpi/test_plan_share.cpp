// The planner split over the ranks (PlanShare, plan_multiply(ctx, ...)) against the planner
// alone on every rank: the same plan, runners-up and errors at every rank count, also for
// requests of more ranks than run the test (the share splits the pricing, not the plan's p);
// the tree reduction's messages; and multiply() with shared planning against serial BLAS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "multiply_test_util.hpp"
#include "tessel/comm/blob_reduce.hpp"
#include "tessel/dense/multiply.hpp"
#include "tessel/layout/grid_shape.hpp"
#include "test_util.hpp"

using namespace tessel;
using namespace tessel::dense;
using tessel::testing::expect_matches_blas;
using tessel::testing::random_operands;

namespace {

std::string describe(const GemmPlan& g) {
  return std::to_string(g.pm) + "x" + std::to_string(g.pn) + "x" + std::to_string(g.pk) + " r" +
         std::to_string(g.rounds) + (g.aligned() ? " aligned" : "") +
         (g.kind == PlanKind::CallerGrid ? " caller-grid" : "");
}

void expect_same(const GemmPlan& alone, const GemmPlan& shared, const std::string& what) {
  EXPECT_EQ(describe(alone), describe(shared)) << what;
  EXPECT_EQ(alone.cost.total_s(), shared.cost.total_s()) << what;  // exactly: the same pricing
  EXPECT_EQ(alone.cost.rank, shared.cost.rank) << what;
  ASSERT_EQ(alone.runners_up.size(), shared.runners_up.size()) << what;
  for (std::size_t x = 0; x < alone.runners_up.size(); ++x) {
    const PlanCandidate &a = alone.runners_up[x], &b = shared.runners_up[x];
    EXPECT_EQ(std::make_tuple(a.pm, a.pn, a.pk, a.rounds, a.aligned, a.kind),
              std::make_tuple(b.pm, b.pn, b.pk, b.rounds, b.aligned, b.kind))
        << what << " runner-up " << x;
    EXPECT_EQ(a.cost.total_s(), b.cost.total_s()) << what << " runner-up " << x;
  }
}

/// The simulated XC40 of bench/simulate/platforms/daint-xc40.machine.json: nodes of 36.
MachineModel xc40() { return load_machine_model(TESSEL_XC40_MACHINE); }

GemmPlanRequest request(std::int64_t m, std::int64_t n, std::int64_t k, int p,
                        const MachineModel& mm) {
  GemmPlanRequest r;
  r.m = m;
  r.n = n;
  r.k = k;
  r.p = p;
  r.machine = mm;
  return r;
}

}  // namespace

TEST(PlanShare, SameAsPlanningAloneWithoutCallerLayouts) {
  Context ctx(MPI_COMM_WORLD);
  const PlanShare share = plan_share(ctx);
  struct Case {
    std::int64_t m, n, k;
    int p;
    MachineModel mm;
  };
  const Case cases[] = {
      {16384, 16384, 16384, 512, xc40()},  // above 256: the exact walk after the search
      {131072, 131072, 512, 300, xc40()},  // flat, a rank count that factors badly
      {4096, 4096, 4096, 97, xc40()},      // prime p, node-aware exact search
      {17, 13, 11, 12, MachineModel{}},    // small shapes, links alike
      {64, 64, 64, 64, MachineModel{}},   {40, 3, 150, 7, MachineModel{}},
      {31, 29, 97, 1, MachineModel{}},    {1, 9, 7, 5, MachineModel{}}};
  for (const Case& c : cases)
    for (int choice : {0, 2}) {
      GemmPlanRequest r = request(c.m, c.n, c.k, c.p, c.mm);
      r.choice = choice;
      const std::string what = std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                               std::to_string(c.k) + " on " + std::to_string(c.p) + " choice " +
                               std::to_string(choice);
      GemmPlan alone, shared;
      try {
        alone = make_gemm_plan(r);
      } catch (const InputError&) {  // fewer candidates than the choice: both must say so
        EXPECT_THROW(make_gemm_plan(r, nullptr, &share), InputError) << what;
        continue;
      }
      shared = make_gemm_plan(r, nullptr, &share);
      expect_same(alone, shared, what);
    }
}

TEST(PlanShare, SameAsPlanningAloneFromCallerLayouts) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  const auto grid = layout::most_square_grid(p);
  MultiplyOptions opt;
  opt.shared_planning_from = 1;
  for (std::int64_t nb : {4, 32})
    for (auto [m, n, k] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{96, 80, 72},
                           {200, 30, 400},
                           {512, 512, 64}}) {
      auto bc = [&](std::int64_t r, std::int64_t c) {
        return layout::Layout::block_cyclic(r, c, nb, nb, grid.first, grid.second, 0, 0, p);
      };
      const CallerLayouts caller{false, false, bc(m, k), bc(k, n), bc(m, n)};
      const std::string what = std::to_string(m) + "x" + std::to_string(n) + "x" +
                               std::to_string(k) + " nb " + std::to_string(nb);
      expect_same(plan_multiply(m, n, k, p, opt, &caller),
                  plan_multiply(ctx, m, n, k, opt, &caller), what);
    }
}

TEST(PlanShare, TooLittleMemoryIsTheSameErrorOnEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  const PlanShare share = plan_share(ctx);
  GemmPlanRequest r = request(2000, 2000, 2000, 600, xc40());
  r.memory_words = 100;
  std::string alone, shared;
  try {
    make_gemm_plan(r);
  } catch (const GridError& e) { alone = e.what(); }
  try {
    make_gemm_plan(r, nullptr, &share);
  } catch (const GridError& e) { shared = e.what(); }
  EXPECT_FALSE(alone.empty());
  EXPECT_EQ(alone, shared);
}

TEST(PlanShare, TreeSendsOneBlobPerRankAndReduction) {
  // Without caller layouts the shared planner reduces twice (the best candidates, their exact
  // prices): every rank but 0 sends its blob once per reduction to its tree parent, rank 0
  // sends none and broadcasts the result.
  Context ctx(MPI_COMM_WORLD);
  const PlanShare share = plan_share(ctx);
  ctx.ledger().reset();
  make_gemm_plan(request(4096, 4096, 4096, 97, xc40()), nullptr, &share);
  const auto k = ctx.ledger().total("gemm/plan");
  const int expected = ctx.size() == 1 ? 0 : (ctx.rank() == 0 ? 0 : 2);
  EXPECT_EQ(k.p2p_sent_msgs, expected);
  // The blobs: 8 + 64 x sizeof(SearchEntry) = 56 bytes, then 16 bytes per priced candidate.
  if (expected > 0) EXPECT_GT(k.p2p_sent_bytes, 8 + 16);
}

TEST(PlanShare, BlobReduceCombinesEveryRankOnce) {
  // allreduce_blob with a sum and a max against the closed forms over 0 .. p - 1.
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  std::vector<unsigned char> blob(2 * sizeof(std::int64_t));
  const std::int64_t mine[2] = {ctx.rank() + 1, 3 * ctx.rank()};
  std::memcpy(blob.data(), mine, sizeof mine);
  comm::allreduce_blob(ctx.comm(), blob, [](const unsigned char* in, unsigned char* inout) {
    std::int64_t a[2], b[2];
    std::memcpy(a, in, sizeof a);
    std::memcpy(b, inout, sizeof b);
    b[0] += a[0];
    b[1] = std::max(a[1], b[1]);
    std::memcpy(inout, b, sizeof b);
  });
  std::int64_t got[2];
  std::memcpy(got, blob.data(), sizeof got);
  EXPECT_EQ(got[0], static_cast<std::int64_t>(p) * (p + 1) / 2);
  EXPECT_EQ(got[1], 3 * static_cast<std::int64_t>(p - 1));
}

TEST(PlanShare, MultiplyWithSharedPlanningMatchesBlas) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(29);
  const int p = ctx.size();
  MultiplyOptions opt;
  opt.shared_planning_from = 1;
  for (auto [m, n, k] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{57, 31, 44},
                         {9, 70, 130},
                         {120, 8, 5}})
    for (Op oa : {Op::N, Op::T}) {
      auto la = tessel::testing::random_layout(rng, oa == Op::N ? m : k, oa == Op::N ? k : m, p);
      auto lb = tessel::testing::random_layout(rng, k, n, p);
      auto lc = tessel::testing::random_layout(rng, m, n, p);
      auto x = random_operands<double>(ctx, rng, la, lb, lc, false);
      const MultiplyReport rep = multiply(ctx, 0.5, oa, x.A, Op::N, x.B, 1.5, x.C, opt);
      const std::string what = std::to_string(m) + "x" + std::to_string(n) + "x" +
                               std::to_string(k) + " " + to_string(oa) + " ran " +
                               describe(rep.plan);
      expect_same(plan_multiply(m, n, k, p, opt, nullptr), plan_multiply(ctx, m, n, k, opt), what);
      expect_matches_blas(ctx, x, oa, Op::N, 0.5, 1.5, what);
    }
}

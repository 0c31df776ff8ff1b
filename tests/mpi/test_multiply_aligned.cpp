// Plans that keep what the caller has: aligned plans (align_gemm_plan) and 2D SUMMA on the
// caller's layouts (PlanKind::CallerGrid), chosen by the planner on a slow-network model from
// block-cyclic inputs. Results against serial BLAS; the cost model's words and messages
// against the ledger, on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "multiply_test_util.hpp"
#include "tessel/dense/gemm_cost.hpp"

using namespace tessel;
using namespace tessel::dense;
using tessel::testing::Case;

namespace {

// 1 Gbit/s-class links with 50 us latency, 20 GFLOP/s: moving data dominates.
MachineModel slow_network() {
  MachineModel mm;
  mm.dgemm_flops = mm.zgemm_flops = 20e9;
  mm.inter = LinkModel{50e-6, 0.125e9};
  mm.intra = mm.inter;
  return mm;
}

std::pair<int, int> grid_of(int p, bool flat) {
  return flat ? std::pair{1, p} : tessel::layout::most_square_grid(p);
}

struct Counts {
  int aligned = 0, caller_grid = 0, runs = 0;
};

template <class T>
void run(Context& ctx, std::mt19937& rng, Case cs, Op oa, Op ob, std::pair<int, int> grid, int nb,
         Algorithm alg, Counts& counts) {
  const int p = ctx.size();
  const bool at = oa != Op::N, bt = ob != Op::N;
  const auto [pr, pc] = grid;
  const std::int64_t ar = at ? cs.k : cs.m, ac = at ? cs.m : cs.k;
  auto la = layout::Layout::block_cyclic(ar, ac, nb, nb, pr, pc, 0, 0, p);
  const std::int64_t br = bt ? cs.n : cs.k, bc = bt ? cs.k : cs.n;
  auto lb = layout::Layout::block_cyclic(br, bc, nb, nb, pr, pc, 0, 0, p);
  auto lc = layout::Layout::block_cyclic(cs.m, cs.n, nb, nb, pr, pc, 0, 0, p);
  auto x = tessel::testing::random_operands<T>(ctx, rng, la, lb, lc);
  MultiplyOptions opt;
  opt.algorithm = alg;
  opt.machine = slow_network();
  const T alpha = T(1.5), beta = T(-0.5);
  ctx.ledger().reset();
  const MultiplyReport rep = multiply(ctx, alpha, oa, x.A, ob, x.B, beta, x.C, opt);
  const auto rounds = [&] {
    auto t = ctx.ledger().total("gemm/rounds");
    t += ctx.ledger().total("gemm/reduce");
    t += ctx.ledger().total("gemm/summa");
    return t;
  }();
  const auto redist = ctx.ledger().total("gemm/redistribute");
  const bool cplx = !std::is_same_v<T, double>;
  const double bpw = cplx ? 16 : 8;
  const CallerLayouts cl{at, bt, la, lb, lc};
  const GemmCost want = price_gemm_rank(rep.plan, rep.plan.machine, cplx, &cl, ctx.rank());
  const std::string what = std::to_string(cs.m) + "x" + std::to_string(cs.n) + "x" +
                           std::to_string(cs.k) + " op " + to_string(oa) + to_string(ob) +
                           " grid " + std::to_string(pr) + "x" + std::to_string(pc) + " nb " +
                           std::to_string(nb) + (cplx ? " complex" : " double") + " ran " +
                           rep.executed + "\n" + rep.plan.to_string();
  EXPECT_EQ(rounds.p2p_recv_bytes, want.plan_words() * bpw) << what;
  EXPECT_EQ(redist.p2p_recv_bytes, want.redist_words * bpw) << what;
  EXPECT_EQ(rounds.p2p_recv_msgs + redist.p2p_recv_msgs, want.messages) << what;
  if (rep.plan.kind == PlanKind::CallerGrid) {
    ++counts.caller_grid;
    EXPECT_EQ(redist.p2p_recv_bytes, 0) << what;
  } else if (rep.plan.aligned()) {
    ++counts.aligned;
  }
  ++counts.runs;
  tessel::testing::expect_matches_blas(ctx, x, oa, ob, alpha, beta, what);
}

}  // namespace

TEST(MultiplyAligned, PlansThatKeepTheCallersDataMatchBlasAndLedger) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(13);
  Counts counts;
  for (Case cs : {Case{24, 24, 600}, Case{200, 8, 8}, Case{37, 41, 43}, Case{64, 64, 64},
                  Case{48, 40, 16}, Case{96, 96, 8}})
    for (bool flat : {false, true})
      for (Op oa : {Op::N, Op::T})
        for (Algorithm alg : {Algorithm::Optimal, Algorithm::Auto}) {
          const Op ob = alg == Algorithm::Optimal ? oa : Op::N;  // N T and T N below
          run<double>(ctx, rng, cs, oa, ob, grid_of(ctx.size(), flat), 8, alg, counts);
          if (cs.m == 37) {
            run<double>(ctx, rng, cs, Op::N, Op::T, grid_of(ctx.size(), flat), 8, alg, counts);
            run<std::complex<double>>(ctx, rng, cs, oa, oa == Op::N ? Op::N : Op::C,
                                      grid_of(ctx.size(), flat), 5, alg, counts);
          }
        }
  // The slow network makes the planner keep the caller's data somewhere at every p > 1, and
  // run on the caller's grid itself where that grid is 2D (on a 1 x p grid an aligned 1 x p x 1
  // plan is the same schedule with balanced columns, and wins the ties).
  if (ctx.size() > 1) EXPECT_GT(counts.aligned, 0) << "of " << counts.runs;
  if (grid_of(ctx.size(), false).first > 1)
    EXPECT_GT(counts.caller_grid, 0) << "of " << counts.runs;
}

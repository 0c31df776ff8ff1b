// multiply() against serial BLAS on gathered data: random shapes and layouts, every op
// combination, alpha/beta cases, double and complex, both algorithms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "tessel/dense/gemm_cost.hpp"
#include "tessel/dense/multiply.hpp"
#include "multiply_test_util.hpp"
#include "tessel/dense/plan_layouts.hpp"

using namespace tessel;
using namespace tessel::dense;
using tessel::layout::most_square_grid;
using tessel::testing::Case;
using tessel::testing::expect_matches_blas;
using tessel::testing::random_operands;

namespace {

template <class T>
void run_case(Context& ctx, std::mt19937& rng, Case cs, Op opa, Op opb, T alpha, T beta,
              Algorithm alg, int rounds, const std::string& what) {
  const int p = ctx.size();
  const std::int64_t ar = opa == Op::N ? cs.m : cs.k, ac = opa == Op::N ? cs.k : cs.m;
  const std::int64_t br = opb == Op::N ? cs.k : cs.n, bc = opb == Op::N ? cs.n : cs.k;
  auto la = tessel::testing::random_layout(rng, ar, ac, p);
  auto lb = tessel::testing::random_layout(rng, br, bc, p);
  auto lc = tessel::testing::random_layout(rng, cs.m, cs.n, p);
  auto x = random_operands<T>(ctx, rng, la, lb, lc, beta == T(0));
  MultiplyOptions opt;
  opt.algorithm = alg;
  opt.rounds = rounds;
  multiply(ctx, alpha, opa, x.A, opb, x.B, beta, x.C, opt);
  expect_matches_blas(ctx, x, opa, opb, alpha, beta, what);
}

const Case kShapes[] = {{17, 13, 11}, {1, 9, 7},    {9, 1, 7},    {8, 7, 1}, {40, 3, 150},
                        {3, 50, 2},   {64, 64, 64}, {31, 29, 97}, {0, 5, 3}, {5, 4, 0}};

}  // namespace

TEST(Multiply, DoubleAllOpsBothAlgorithms) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(1234);
  for (Algorithm alg : {Algorithm::Optimal, Algorithm::Summa2D})
    for (const Case& cs : kShapes)
      for (Op oa : {Op::N, Op::T})
        for (Op ob : {Op::N, Op::T}) {
          std::string what = to_string(alg) + " " + std::to_string(cs.m) + "x" +
                             std::to_string(cs.n) + "x" + std::to_string(cs.k) + " " +
                             to_string(oa) + to_string(ob);
          run_case<double>(ctx, rng, cs, oa, ob, 1.0, 0.0, alg, 0, what + " a=1 b=0");
          run_case<double>(ctx, rng, cs, oa, ob, -0.5, 2.0, alg, 3, what + " a=-.5 b=2 rounds=3");
        }
}

TEST(Multiply, ComplexAllOps) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(99);
  using Z = std::complex<double>;
  for (Algorithm alg : {Algorithm::Optimal, Algorithm::Summa2D})
    for (Case cs : {Case{13, 11, 17}, Case{2, 30, 5}, Case{25, 1, 40}})
      for (Op oa : {Op::N, Op::T, Op::C})
        for (Op ob : {Op::N, Op::T, Op::C}) {
          std::string what = to_string(alg) + " complex " + to_string(oa) + to_string(ob);
          run_case<Z>(ctx, rng, cs, oa, ob, Z(0.5, -1.0), Z(0.0, 0.0), alg, 0, what + " b=0");
          run_case<Z>(ctx, rng, cs, oa, ob, Z(1.0, 0.0), Z(-1.0, 0.5), alg, 2, what + " b!=0");
        }
}

TEST(Multiply, PlanLayoutVolumeMatchesFormula) {
  // The traffic of the plan phases (rounds + reduce) equals, on every rank, the exact count of
  // the elements it does not own: per round, the A panel (|I_i| x |K_lr|) minus its own piece
  // and the B panel minus its own piece; then (pk - 1) copies of its piece of C[I_i, J_j].
  Context ctx(MPI_COMM_WORLD);
  using layout::split_begin;
  for (Case cs : {Case{64, 64, 64}, Case{24, 24, 600}, Case{200, 8, 8}, Case{37, 41, 43}}) {
    const int p = ctx.size();
    auto la = layout::Layout::block_cyclic(cs.m, cs.k, 8, 8, 1, p, 0, 0, p);
    auto lb = layout::Layout::block_cyclic(cs.k, cs.n, 8, 8, 1, p, 0, 0, p);
    auto lc = layout::Layout::block_cyclic(cs.m, cs.n, 8, 8, 1, p, 0, 0, p);
    DistMatrix<double> A(ctx, la), B(ctx, lb), C(ctx, lc);
    ctx.ledger().reset();
    MultiplyOptions opt;
    opt.rounds = 3;
    opt.algorithm = Algorithm::Optimal;
    opt.machine =
        words_only_machine();  // the words-minimising plan (checked against Theorem 2 below)
    auto rep = multiply(ctx, 1.0, Op::N, A, Op::N, B, 0.0, C, opt);
    const auto& pl = rep.plan;
    const std::int64_t got = ctx.ledger().total("gemm/rounds").p2p_recv_bytes +
                             ctx.ledger().total("gemm/reduce").p2p_recv_bytes;
    std::int64_t want = 0;
    const int r = ctx.rank();
    if (r < pl.used()) {
      const int i = r % pl.pm, j = (r / pl.pm) % pl.pn, l = r / (pl.pm * pl.pn);
      auto len = [](std::int64_t n, int parts, int x) {
        return split_begin(n, parts, x + 1) - split_begin(n, parts, x);
      };
      const std::int64_t mi = len(cs.m, pl.pm, i), nj = len(cs.n, pl.pn, j),
                         kl = len(cs.k, pl.pk, l);
      for (int t = 0; t < pl.rounds; ++t) {
        const std::int64_t kr = len(kl, pl.rounds, t);
        want += mi * (kr - len(kr, pl.pn, j));  // A panel split by its k columns over j
        want += kr * (nj - len(nj, pl.pm, i));  // B panel split by its n columns over i
      }
      want += (pl.pk - 1) * mi * len(nj, pl.pk, l);
    }
    EXPECT_EQ(got, want * 8) << cs.m << "x" << cs.n << "x" << cs.k;
    // the most loaded rank moves no more than the Theorem 2 bound (unlimited memory)
    const double maxb = ctx.comm().allreduce_value(static_cast<double>(got), MPI_MAX);
    EXPECT_LE(maxb, 1.05 * pl.bound_words() * 8);
    // and never below what the busiest rank must receive
    EXPECT_GE(maxb, pl.recv_bound_words() * 8 * (1 - 1e-12));
  }
}

// 2D SUMMA on the caller's layouts when the grid is in any rank order (a shuffled placement,
// as layout::ProcessGrid2D takes it) and leaves a rank out (p > 2: q = p - 1 ranks): the
// result matches serial BLAS, nothing is redistributed, and each rank receives exactly the A
// elements of its process row and the B elements of its process column that other ranks
// hold, counted element by element from the owner maps (the left-out rank: nothing).
TEST(Multiply, SummaOnCallersLayoutAnyPlacement) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size(), q = p > 2 ? p - 1 : p;
  const auto [pr, pc] = most_square_grid(q);
  std::mt19937 rng(17);  // same on all ranks
  std::vector<int> ranks(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) ranks[static_cast<std::size_t>(i)] = i;
  std::shuffle(ranks.begin(), ranks.end(), rng);
  ranks.resize(static_cast<std::size_t>(q));
  for (Case cs : {Case{41, 29, 35}, Case{3, 70, 9}}) {
    auto la = layout::Layout::block_cyclic(cs.m, cs.k, 4, 5, pr, pc, pr - 1, 0, p, ranks);
    auto lb = layout::Layout::block_cyclic(cs.k, cs.n, 5, 3, pr, pc, pr - 1, 0, p, ranks);
    auto lc = layout::Layout::block_cyclic(cs.m, cs.n, 4, 3, pr, pc, pr - 1, 0, p, ranks);
    auto x = random_operands<double>(ctx, rng, la, lb, lc);
    MultiplyOptions opt;
    opt.algorithm = Algorithm::Summa2D;
    ctx.ledger().reset();
    auto rep = multiply(ctx, 1.5, Op::N, x.A, Op::N, x.B, 0.5, x.C, opt);
    const auto measured = ctx.ledger().total("gemm");  // before the owner maps' allreduces
    EXPECT_EQ(rep.executed.rfind("summa2d on", 0), 0u) << rep.executed;
    EXPECT_EQ(ctx.ledger().total("gemm/redistribute").p2p_recv_bytes, 0);
    const auto oa = tessel::testing::owner_map(ctx, la), ob = tessel::testing::owner_map(ctx, lb),
               oc = tessel::testing::owner_map(ctx, lc);
    // My process row and column from the placement; C's rows and columns there by ScaLAPACK's
    // INDXG2P (block 4 x 3, first process row pr - 1, first column 0). A rank whose process
    // row holds no rows of C still gets the B panels of its column (and vice versa).
    const auto at = std::find(ranks.begin(), ranks.end(), ctx.rank()) - ranks.begin();
    const bool in = at < q;
    std::vector<char> my_row(static_cast<std::size_t>(cs.m), 0),
        my_col(static_cast<std::size_t>(cs.n), 0);
    for (std::int64_t i = 0; i < cs.m; ++i) my_row[i] = in && (i / 4 + pr - 1) % pr == at / pc;
    for (std::int64_t j = 0; j < cs.n; ++j) my_col[j] = in && (j / 3) % pc == at % pc;
    for (std::int64_t j = 0; j < cs.n; ++j)  // the owner map agrees with it
      for (std::int64_t i = 0; i < cs.m; ++i)
        EXPECT_EQ(oc[static_cast<std::size_t>(j * cs.m + i)] == ctx.rank(), my_row[i] && my_col[j]);
    std::int64_t words = 0;
    for (std::int64_t k = 0; k < cs.k; ++k) {
      for (std::int64_t i = 0; i < cs.m; ++i)
        if (my_row[i] && oa[static_cast<std::size_t>(k * cs.m + i)] != ctx.rank()) ++words;
      for (std::int64_t j = 0; j < cs.n; ++j)
        if (my_col[j] && ob[static_cast<std::size_t>(j * cs.k + k)] != ctx.rank()) ++words;
    }
    EXPECT_EQ(measured.p2p_recv_bytes, words * 8);
    expect_matches_blas(ctx, x, Op::N, Op::N, 1.5, 0.5);
  }
}

TEST(Multiply, SummaOnCallersLayout) {
  // A, B, C block-cyclic on one grid: summa2d (and auto, when cheaper) runs without any
  // redistribution; the result matches serial BLAS and the traffic equals the SUMMA count.
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  const auto [pr, pc] = most_square_grid(p);
  std::mt19937 rng(5);
  for (Case cs : {Case{50, 37, 61}, Case{8, 96, 40}, Case{1, 1, 1}}) {
    for (Algorithm alg : {Algorithm::Summa2D, Algorithm::Auto}) {
      auto la = layout::Layout::block_cyclic(cs.m, cs.k, 5, 7, pr, pc, 0, pc - 1, p);
      auto lb = layout::Layout::block_cyclic(cs.k, cs.n, 4, 3, pr, pc, 0, pc - 1, p);
      auto lc = layout::Layout::block_cyclic(cs.m, cs.n, 5, 3, pr, pc, 0, pc - 1, p);
      auto x = random_operands<double>(ctx, rng, la, lb, lc);
      MultiplyOptions opt;
      opt.algorithm = alg;
      ctx.ledger().reset();
      auto rep = multiply(ctx, 2.0, Op::N, x.A, Op::N, x.B, -1.0, x.C, opt);
      const auto measured = ctx.ledger().total("gemm");  // before the owner maps' allreduces
      // SUMMA's words, counted element by element (not by the library's
      // summa_native_recv_elems): the rank at grid position (prow, pcol) receives every
      // element of A in the rows of process row prow, and of B in the columns of process
      // column pcol, that another rank holds (C's block-cyclic map, ScaLAPACK's INDXG2P).
      const auto oa = tessel::testing::owner_map(ctx, la), ob = tessel::testing::owner_map(ctx, lb);
      const int prow = ctx.rank() / pc, pcol = ctx.rank() % pc;
      std::vector<char> my_row(static_cast<std::size_t>(cs.m), 0),
          my_col(static_cast<std::size_t>(cs.n), 0);
      for (std::int64_t i = 0; i < cs.m; ++i) my_row[i] = (i / 5) % pr == prow;
      for (std::int64_t j = 0; j < cs.n; ++j) my_col[j] = (j / 3 + (pc - 1)) % pc == pcol;
      double summa_words = 0;
      for (std::int64_t q = 0; q < cs.k; ++q) {
        for (std::int64_t i = 0; i < cs.m; ++i)
          if (my_row[i] && oa[static_cast<std::size_t>(q * cs.m + i)] != ctx.rank())
            summa_words += 1;
        for (std::int64_t j = 0; j < cs.n; ++j)
          if (my_col[j] && ob[static_cast<std::size_t>(j * cs.k + q)] != ctx.rank())
            summa_words += 1;
      }
      summa_words = ctx.comm().allreduce_value(summa_words, MPI_MAX);
      const double recv =
          ctx.comm().allreduce_value(static_cast<double>(measured.p2p_recv_bytes), MPI_MAX);
      if (rep.executed.rfind("summa2d on", 0) == 0) {
        EXPECT_EQ(ctx.ledger().total("gemm/redistribute").p2p_recv_bytes, 0);
        EXPECT_EQ(recv, summa_words * 8);
      } else {
        // auto redistributed: the model must have predicted it no slower than SUMMA on these
        // layouts (ties go to the plan's own layouts)
        EXPECT_EQ(alg, Algorithm::Auto);
        GemmPlanRequest r;
        r.m = cs.m;
        r.n = cs.n;
        r.k = cs.k;
        r.p = p;
        r.machine = rep.plan.machine;
        const GemmPlan native = caller_grid_plan(r, CallerLayouts{false, false, la, lb, lc});
        EXPECT_LE(rep.plan.cost.total_s(), native.cost.total_s() * (1 + 1e-9));
      }
      expect_matches_blas(ctx, x, Op::N, Op::N, 2.0, -1.0);
    }
  }
}

TEST(Multiply, InputsAlreadyInThePlanLayouts) {
  // A, B, C created in the plan's own layouts: nothing is redistributed, and with pk == 1 the
  // rounds accumulate straight into C (beta applied once; beta == 0 ignores NaN in C).
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(11);
  for (Case cs : {Case{30, 20, 10}, Case{7, 40, 90}, Case{64, 8, 300}})
    for (double beta : {0.0, 0.75})
      for (Op oa : {Op::N, Op::T}) {
        const int p = ctx.size();
        MultiplyOptions opt;
        opt.algorithm = Algorithm::Optimal;
        opt.rounds = 2;
        const GemmPlan plan = plan_multiply(cs.m, cs.n, cs.k, p, opt);
        const auto L = make_plan_layouts(plan, oa != Op::N, false, p);
        auto x = random_operands<double>(ctx, rng, L.a, L.b, L.c, beta == 0.0);
        ctx.ledger().reset();
        multiply(ctx, 1.25, oa, x.A, Op::N, x.B, beta, x.C, opt);
        EXPECT_EQ(ctx.ledger().total("gemm/redistribute").p2p_recv_bytes, 0);
        expect_matches_blas(ctx, x, oa, Op::N, 1.25, beta,
                            std::to_string(cs.m) + "x" + std::to_string(cs.n) + "x" +
                                std::to_string(cs.k) + " grid " + std::to_string(plan.pm) + "x" +
                                std::to_string(plan.pn) + "x" + std::to_string(plan.pk));
      }
}

TEST(Multiply, GivenPlanIsThePlanRun) {
  // Plan-then-execute: the planner's best plan and its runners-up (plan_choice 1, 2), each
  // handed to multiply() in MultiplyOptions::plan with A, B, C in that plan's own layouts, run
  // exactly that grid with nothing redistributed, and C matches serial BLAS. (Replanning from
  // those layouts would rank the candidates again and could run another plan.)
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(17);
  const int p = ctx.size();
  int runners_up_run = 0;
  for (Case cs : {Case{96, 40, 72}, Case{20, 64, 130}})
    for (int choice = 0; choice <= 2; ++choice) {
      MultiplyOptions opt;
      opt.algorithm = Algorithm::Optimal;
      if (static_cast<std::size_t>(choice) >
          plan_multiply(cs.m, cs.n, cs.k, p, opt).runners_up.size())
        continue;  // fewer candidates at this rank count (one at p = 1)
      opt.plan_choice = choice;
      const GemmPlan plan = plan_multiply(cs.m, cs.n, cs.k, p, opt);
      const auto L = make_plan_layouts(plan, false, false, p);
      auto x = random_operands<double>(ctx, rng, L.a, L.b, L.c, true);
      MultiplyOptions run = opt;  // plan_choice too: the plan given wins over a new ranking
      run.plan = plan;
      ctx.ledger().reset();
      const MultiplyReport rep = multiply(ctx, 1.0, Op::N, x.A, Op::N, x.B, 0.0, x.C, run);
      const std::string what = std::to_string(cs.m) + "x" + std::to_string(cs.n) + "x" +
                               std::to_string(cs.k) + " choice " + std::to_string(choice);
      EXPECT_EQ(std::make_tuple(rep.plan.pm, rep.plan.pn, rep.plan.pk, rep.plan.rounds),
                std::make_tuple(plan.pm, plan.pn, plan.pk, plan.rounds))
          << what;
      EXPECT_EQ(ctx.ledger().total("gemm/redistribute").p2p_recv_bytes, 0) << what;
      expect_matches_blas(ctx, x, Op::N, Op::N, 1.0, 0.0, what);
      runners_up_run += choice > 0;
    }
  if (p > 1) EXPECT_GE(runners_up_run, 2);  // the runners-up were exercised, not skipped
}

TEST(MultiplyErrors, GivenPlanOfAnotherMultiply) {
  // A plan for another k, another rank count or another op(A) is refused on every rank.
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(5);
  const int p = ctx.size();
  const auto L = make_plan_layouts(plan_multiply(30, 20, 10, p, {}), false, false, p);
  auto x = random_operands<double>(ctx, rng, L.a, L.b, L.c, true);
  MultiplyOptions run;
  run.plan = plan_multiply(30, 20, 11, p, {});
  EXPECT_THROW(multiply(ctx, 1.0, Op::N, x.A, Op::N, x.B, 0.0, x.C, run), InputError);
  run.plan = plan_multiply(30, 20, 10, p + 1, {});
  EXPECT_THROW(multiply(ctx, 1.0, Op::N, x.A, Op::N, x.B, 0.0, x.C, run), InputError);
  run.plan = plan_multiply(30, 20, 10, p, {}, nullptr, true);  // made for complex elements
  EXPECT_THROW(multiply(ctx, 1.0, Op::N, x.A, Op::N, x.B, 0.0, x.C, run), InputError);
  run.plan = plan_multiply(30, 20, 10, p, {});
  EXPECT_NO_THROW(multiply(ctx, 1.0, Op::N, x.A, Op::N, x.B, 0.0, x.C, run));
}

TEST(MultiplyErrors, InnerDimensionMismatch) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  DistMatrix<double> A(ctx, layout::Layout::block_cyclic(5, 4, 2, 2, 1, p, 0, 0, p));
  DistMatrix<double> B(ctx, layout::Layout::block_cyclic(3, 6, 2, 2, 1, p, 0, 0, p));
  DistMatrix<double> C(ctx, layout::Layout::block_cyclic(5, 6, 2, 2, 1, p, 0, 0, p));
  try {
    multiply(ctx, 1.0, Op::N, A, Op::N, B, 0.0, C);
    FAIL() << "no error";
  } catch (const DimensionMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("inner dimensions differ"), std::string::npos) << e.what();
  }
  DistMatrix<double> C2(ctx, layout::Layout::block_cyclic(5, 7, 2, 2, 1, p, 0, 0, p));
  DistMatrix<double> B2(ctx, layout::Layout::block_cyclic(4, 6, 2, 2, 1, p, 0, 0, p));
  EXPECT_THROW(multiply(ctx, 1.0, Op::N, A, Op::N, B2, 0.0, C2), DimensionMismatch);
}

TEST(MultiplyErrors, MemoryTooSmall) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  auto l = layout::Layout::block_cyclic(64, 64, 8, 8, 1, p, 0, 0, p);
  DistMatrix<double> A(ctx, l), B(ctx, l), C(ctx, l);
  MultiplyOptions opt;
  opt.memory_words = 10;
  try {
    multiply(ctx, 1.0, Op::N, A, Op::N, B, 0.0, C, opt);
    FAIL() << "no error";
  } catch (const GridError& e) {
    EXPECT_NE(std::string(e.what()).find("needed"), std::string::npos) << e.what();
  }
}

TEST(MultiplyErrors, NanRefusedWhenChecked) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  auto l = layout::Layout::block_cyclic(9, 9, 2, 2, 1, p, 0, 0, p);
  std::vector<double> fa(81, 1.0);
  fa[80] = std::numeric_limits<double>::quiet_NaN();  // lives on one rank only
  auto A = scatter(ctx, fa.data(), l);
  DistMatrix<double> B(ctx, l), C(ctx, l);
  MultiplyOptions opt;
  opt.check_finite = true;
  try {
    multiply(ctx, 1.0, Op::N, A, Op::N, B, 0.0, C, opt);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(8, 8)"), std::string::npos) << e.what();
  }
}

TEST(MultiplyErrors, LayoutOfAnotherCommunicator) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  auto l = layout::Layout::block_cyclic(4, 4, 2, 2, 1, 1, 0, 0, p + 1);
  auto good = layout::Layout::block_cyclic(4, 4, 2, 2, 1, 1, 0, 0, p);
  DistMatrix<double> B(ctx, good), C(ctx, good);
  auto A = DistMatrix<double>::view(l, ctx.rank(), nullptr, 4);
  EXPECT_THROW(multiply(ctx, 1.0, Op::N, A, Op::N, B, 0.0, C), LayoutMismatch);
}

TEST(Multiply, CostModelWordsEqualLedger) {
  // The cost model's per-rank words and messages (gemm_cost.hpp: rounds + reduce, and the
  // redistribution from and to the caller's block-cyclic layouts) equal what the ledger
  // recorded on every rank, for double and complex, N and T, and several rounds.
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  const auto [pr, pc] = most_square_grid(p);
  for (Case cs : {Case{64, 64, 64}, Case{24, 24, 600}, Case{200, 8, 8}, Case{37, 41, 43}})
    for (Op oa : {Op::N, Op::T})
      for (int rounds : {0, 3}) {
        const bool at = oa != Op::N;
        auto la =
            layout::Layout::block_cyclic(at ? cs.k : cs.m, at ? cs.m : cs.k, 8, 8, pr, pc, 0, 0, p);
        auto lb = layout::Layout::block_cyclic(cs.k, cs.n, 8, 8, pr, pc, 0, 0, p);
        auto lc = layout::Layout::block_cyclic(cs.m, cs.n, 8, 8, pr, pc, 0, 0, p);
        MultiplyOptions opt;
        opt.rounds = rounds;
        opt.algorithm = Algorithm::Optimal;
        const CallerLayouts cl{at, false, la, lb, lc};
        for (int cplx = 0; cplx < 2; ++cplx) {
          ctx.ledger().reset();
          MultiplyReport rep;
          if (cplx) {
            using Z = std::complex<double>;
            DistMatrix<Z> A(ctx, la), B(ctx, lb), C(ctx, lc);
            rep = multiply(ctx, Z(1), oa, A, Op::N, B, Z(0), C, opt);
          } else {
            DistMatrix<double> A(ctx, la), B(ctx, lb), C(ctx, lc);
            rep = multiply(ctx, 1.0, oa, A, Op::N, B, 0.0, C, opt);
          }
          const GemmCost want =
              price_gemm_rank(rep.plan, rep.plan.machine, cplx == 1, &cl, ctx.rank());
          const double bpw = cplx ? 16 : 8;
          auto plan_phase = ctx.ledger().total("gemm/rounds");
          plan_phase += ctx.ledger().total("gemm/reduce");
          const auto redist = ctx.ledger().total("gemm/redistribute");
          const std::string what = std::to_string(cs.m) + "x" + std::to_string(cs.n) + "x" +
                                   std::to_string(cs.k) + " op " + to_string(oa) + " rounds " +
                                   std::to_string(rounds) + (cplx ? " complex" : " double") + "\n" +
                                   rep.plan.to_string();
          EXPECT_EQ(plan_phase.p2p_recv_bytes, want.plan_words() * bpw) << what;
          EXPECT_EQ(redist.p2p_recv_bytes, want.redist_words * bpw) << what;
          EXPECT_EQ(plan_phase.p2p_recv_msgs + redist.p2p_recv_msgs, want.messages) << what;
          // and the busiest rank's words never fall below the receive lower bound
          const double worst = ctx.comm().allreduce_value(
              static_cast<double>(plan_phase.p2p_recv_bytes + redist.p2p_recv_bytes) / bpw,
              MPI_MAX);
          EXPECT_GE(worst, rep.plan.recv_bound_words() * (1 - 1e-12)) << what;
        }
      }
}

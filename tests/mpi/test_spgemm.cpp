// The block-sparse multiply (Cannon and rma25d, seed 001) against serial BLAS on the gathered
// dense matrices: N/T, alpha/beta, L in {1, 2, 4} where valid, retain_sparsity, filtering within
// its promised bound, empty matrices and block rows, random/given/all-on-rank-0 distributions;
// the ledger's A/B/C panel bytes against the eq. 7 form computed here from the block patterns;
// every error on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <numeric>
#include <optional>
#include <random>

#include "sparse_test_util.hpp"
#include "test_util.hpp"
#include "tessel/core/context.hpp"
#include "tessel/sparse/multiply.hpp"

using namespace tessel;
using namespace tessel::sparse;
using namespace tessel::testing;

namespace {

struct Case {
  int pr = 1, pc = 1;
  SpAlgorithm alg = SpAlgorithm::Cannon;
  int layers = 1;
  SpOp opa = SpOp::N, opb = SpOp::N;
  double alpha = 1.0, beta = 0.0;
  double fill_a = 0.5, fill_b = 0.5, fill_c = 0.3;
  DistKind kind = DistKind::Random;
  int mb = 6, kb = 5, nb = 7;  // block counts of C (mb x nb) and the inner dimension
  bool retain = false;
  double eps = 0;
  unsigned seed = 1;
  double poll = SpMultiplyOptions{}.progress_poll;
  int pieces = SpMultiplyOptions{}.cannon_pieces;
  int panels = 1;
};

struct CaseRun {
  std::vector<double> got, want;  // dense C after the multiply, reference
  double scale = 1;               // max |reference|
  SpMultiplyReport rep;
  DenseRef c_ref;                   // C's pattern before the multiply
  std::int64_t c_local_blocks = 0;  // this rank's blocks of C before the multiply
};

CaseRun run_case(Context& ctx, const Case& cs) {
  std::mt19937 rng(cs.seed);
  auto ms = random_sizes(rng, cs.mb), ks = random_sizes(rng, cs.kb), ns = random_sizes(rng, cs.nb);
  // op(A) is mb x kb: A is stored kb x mb for op T.
  auto da = cs.opa == SpOp::N ? make_dist(cs.kind, ms, ks, cs.pr, cs.pc, rng)
                              : make_dist(cs.kind, ks, ms, cs.pr, cs.pc, rng);
  auto db = cs.opb == SpOp::N ? make_dist(cs.kind, ks, ns, cs.pr, cs.pc, rng)
                              : make_dist(cs.kind, ns, ks, cs.pr, cs.pc, rng);
  auto dc = make_dist(cs.kind, ms, ns, cs.pr, cs.pc, rng);
  BlockSparseMatrix<double> A(ctx, da, "A"), B(ctx, db, "B"), C(ctx, dc, "C");
  fill_random(A, rng, cs.fill_a, ctx.size());
  fill_random(B, rng, cs.fill_b, ctx.size());
  CaseRun r;
  r.c_ref = fill_random(C, rng, cs.fill_c, ctx.size());
  auto a = dense_of(ctx, A), b = dense_of(ctx, B), c = dense_of(ctx, C);
  int m = static_cast<int>(C.rows()), n = static_cast<int>(C.cols());
  int k = static_cast<int>(cs.opa == SpOp::N ? A.cols() : A.rows());
  r.want = c;
  ref_gemm(cs.opa == SpOp::N ? 'N' : 'T', cs.opb == SpOp::N ? 'N' : 'T', m, n, k, cs.alpha,
           a.data(), std::max(1, static_cast<int>(A.rows())), b.data(),
           std::max(1, static_cast<int>(B.rows())), cs.beta, r.want.data(), std::max(1, m));
  if (cs.retain)  // only C's stored blocks survive
    for (int br = 0; br < dc.row_blocks().count(); ++br)
      for (int bc = 0; bc < dc.col_blocks().count(); ++bc)
        if (!r.c_ref.has(br, bc))
          for (int j = 0; j < dc.col_blocks().size(bc); ++j)
            for (int i = 0; i < dc.row_blocks().size(br); ++i)
              r.want[static_cast<std::size_t>((dc.col_blocks().offset(bc) + j) * m +
                                              dc.row_blocks().offset(br) + i)] = 0;
  for (double x : r.want) r.scale = std::max(r.scale, std::abs(x));
  SpMultiplyOptions o;
  o.algorithm = cs.alg;
  o.layers = cs.layers;
  o.retain_sparsity = cs.retain;
  o.filter_eps = cs.eps;
  o.progress_poll = cs.poll;
  o.cannon_pieces = cs.pieces;
  o.row_panels = cs.panels;
  r.c_local_blocks = C.local_nblocks();
  r.rep = multiply(ctx, cs.alpha, cs.opa, A, cs.opb, B, cs.beta, C, o);
  r.got = dense_of(ctx, C);
  return r;
}

Case case_on(int pr, int pc, SpAlgorithm alg, int layers) {
  Case cs;
  cs.pr = pr;
  cs.pc = pc;
  cs.alg = alg;
  cs.layers = layers;
  return cs;
}

std::vector<int> layer_choices(SpAlgorithm alg, int pr, int pc) {
  if (alg == SpAlgorithm::Cannon) return {1};
  std::vector<int> out;
  for (int L : valid_layers(pr, pc))
    if (L == 1 || L == 2 || L == 4) out.push_back(L);
  return out;
}

}  // namespace

// Exact (no filtering): both algorithms, every grid shape, every valid L, the four op pairs and
// the three kinds of distribution cycled through.
TEST(Spgemm, MatchesDenseMultiply) {
  Context ctx(MPI_COMM_WORLD);
  int p = world_size();
  unsigned seed = 10;
  for (auto [pr, pc] : grids(p))
    for (auto alg : {SpAlgorithm::Cannon, SpAlgorithm::Rma25d})
      for (int L : layer_choices(alg, pr, pc)) {
        Case cs = case_on(pr, pc, alg, L);
        cs.seed = seed++;
        cs.opa = seed % 2 ? SpOp::T : SpOp::N;
        cs.opb = (seed / 2) % 2 ? SpOp::T : SpOp::N;
        cs.kind = static_cast<DistKind>(seed % 3);
        cs.alpha = 0.75;
        cs.beta = seed % 2 ? -0.5 : 0.0;
        CaseRun r = run_case(ctx, cs);
        double err = max_abs_diff(r.got, r.want) / r.scale;
        EXPECT_LE(err, 1e-12) << to_string(alg) << " L=" << L << " " << pr << "x" << pc << " seed "
                              << cs.seed;
        EXPECT_EQ(r.rep.plan.layers, L);
        EXPECT_EQ(r.rep.blocks_skipped, 0);
      }
}

// The progress polls during a tick's products (TickProgress) change when messages move, never
// what is computed: C bit for bit the same without polling and with a poll after every block row
// (interval 1e-12 s), both algorithms, every valid L. Unfiltered, the polled product equals the
// dense BLAS reference to 1e-12. The polls that call MPI are counted at their test point: none
// unpolled; polled, some on the ranks together wherever polling has something to test (rma25d
// always probes for failure notices; Cannon tests its shifts, which exist on more than one rank).
TEST(Spgemm, ProgressPollingLeavesTheResult) {
  Context ctx(MPI_COMM_WORLD);
  long polls = 0;
  comm::TestSettings ts;
  ts.at_point = [&](const std::string& point) {
    if (point == "spgemm: progress poll") ++polls;
  };
  ctx.set_testing(ts);
  auto [pr, pc] = Distribution::default_grid(world_size());
  for (auto alg : {SpAlgorithm::Cannon, SpAlgorithm::Rma25d})
    for (int L : layer_choices(alg, pr, pc))
      for (double eps : {0.0, 1e-3}) {
        Case cs = case_on(pr, pc, alg, L);
        cs.mb = 14;
        cs.kb = 12;
        cs.nb = 13;
        cs.eps = eps;
        cs.seed = 77;
        cs.poll = 0;
        polls = 0;
        CaseRun off = run_case(ctx, cs);
        const long polls_off = polls;
        cs.poll = 1e-12;
        polls = 0;
        CaseRun on = run_case(ctx, cs);
        const std::string what =
            std::string(to_string(alg)) + " L=" + std::to_string(L) + " eps=" + std::to_string(eps);
        EXPECT_EQ(off.got, on.got) << what;
        if (eps == 0) EXPECT_LE(max_abs_diff(on.got, on.want) / on.scale, 1e-12) << what;
        EXPECT_EQ(polls_off, 0) << what;
        // summed over the ranks: a rank whose images are all empty multiplies nothing
        const long all_polls = ctx.comm().allreduce_value(polls, MPI_SUM);
        if (alg == SpAlgorithm::Rma25d || pr * pc > 1) EXPECT_GT(all_polls, 0) << what;
      }
}

TEST(Spgemm, NoTransposeAndAllTransposed) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(world_size());
  for (auto alg : {SpAlgorithm::Cannon, SpAlgorithm::Rma25d})
    for (auto ops : {std::make_pair(SpOp::N, SpOp::N), std::make_pair(SpOp::T, SpOp::T)}) {
      Case cs;
      cs.pr = pr;
      cs.pc = pc;
      cs.alg = alg;
      cs.layers = 0;
      cs.opa = ops.first;
      cs.opb = ops.second;
      cs.beta = 1.0;
      cs.seed = 77;
      CaseRun r = run_case(ctx, cs);
      EXPECT_LE(max_abs_diff(r.got, r.want) / r.scale, 1e-12) << to_string(alg);
    }
}

// retain_sparsity at every grid and valid L: the dense product masked by C's old pattern (plus
// beta C), exact; with L > 1 the partials of the other layers also stay inside the pattern
// (C's owner sends it first: phase "spgemm/C pattern", 16 + 8 per block to each other layer).
TEST(Spgemm, RetainSparsity) {
  Context ctx(MPI_COMM_WORLD);
  unsigned seed = 5;
  for (auto [pr, pc] : grids(world_size()))
    for (auto alg : {SpAlgorithm::Cannon, SpAlgorithm::Rma25d})
      for (int L : layer_choices(alg, pr, pc)) {
        Case cs = case_on(pr, pc, alg, L);
        cs.retain = true;
        cs.beta = 2.0;
        cs.fill_c = 0.4;
        cs.seed = seed++;
        CaseRun r = run_case(ctx, cs);
        std::string what = std::string(to_string(alg)) + " L=" + std::to_string(L) + " " +
                           std::to_string(pr) + "x" + std::to_string(pc);
        EXPECT_LE(max_abs_diff(r.got, r.want) / r.scale, 1e-12) << what;
        const std::int64_t others = alg == SpAlgorithm::Rma25d ? L - 1 : 0;
        EXPECT_EQ(r.rep.c_pattern.sent, others * (16 + 8 * r.c_local_blocks)) << what;
        std::int64_t got_pat = r.rep.c_pattern.recv, sent_pat = r.rep.c_pattern.sent;
        MPI_Allreduce(MPI_IN_PLACE, &got_pat, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &sent_pat, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        EXPECT_EQ(got_pat, sent_pat) << what;
      }
}

// retain_sparsity with a cache, as in a density-matrix iteration: C's pattern goes to the other
// layers once (16 + 8 per block to each), later multiplies with the same pattern send its
// 16-byte header only; a changed pattern is sent again. Results equal those without a cache.
TEST(Spgemm, RetainPatternSentOnceWithCache) {
  Context ctx(MPI_COMM_WORLD);
  const int p = world_size();
  unsigned seed = 700;
  for (auto [pr, pc] : grids(p))
    for (int L : layer_choices(SpAlgorithm::Rma25d, pr, pc)) {
      std::mt19937 rng(seed++);
      auto ms = random_sizes(rng, 7), ks = random_sizes(rng, 6);
      auto da = Distribution::random(BlockSizes(ms), BlockSizes(ks), pr, pc, rng());
      auto db = Distribution::random(BlockSizes(ks), BlockSizes(ms), pr, pc, rng());
      auto dc = Distribution::random(BlockSizes(ms), BlockSizes(ms), pr, pc, rng());
      BlockSparseMatrix<double> A(ctx, da, "A"), B(ctx, db, "B"), C0(ctx, dc, "C0"),
          C1(ctx, dc, "C1");
      fill_random(A, rng, 0.6, p);
      fill_random(B, rng, 0.6, p);
      fill_random(C0, rng, 0.4, p);
      fill_random(C1, rng, 0.5, p);
      SpMultiplyOptions o;
      o.algorithm = SpAlgorithm::Rma25d;
      o.layers = L;
      o.retain_sparsity = true;
      SpMultiplyCache cache;
      const std::int64_t pat = 16 + 8 * C0.local_nblocks(), pat1 = 16 + 8 * C1.local_nblocks();
      std::vector<double> ref;
      const std::int64_t want[] = {pat, 16, 16, pat1, 16};
      for (int call = 0; call < 5; ++call) {
        BlockSparseMatrix<double> C = call < 3 ? C0 : C1;
        auto rep = multiply(ctx, 1.0, SpOp::N, A, SpOp::N, B, 0.5, C, o, &cache);
        std::string what = std::to_string(pr) + "x" + std::to_string(pc) +
                           " L=" + std::to_string(L) + " call " + std::to_string(call);
        EXPECT_EQ(rep.c_pattern.sent, (L - 1) * want[call]) << what;
        BlockSparseMatrix<double> Cn = call < 3 ? C0 : C1;  // the same without a cache
        multiply(ctx, 1.0, SpOp::N, A, SpOp::N, B, 0.5, Cn, o);
        auto got = dense_of(ctx, C), exp = dense_of(ctx, Cn);
        EXPECT_EQ(max_abs_diff(got, exp), 0.0) << what;
      }
    }
}

// Cannon on 9 x 8 blocks of C over 11 inner blocks: the splitting tests' case (more pieces or
// panels than some images or rows have blocks).
Case cannon_9x11x8(int pr, int pc, double eps, unsigned seed) {
  Case cs = case_on(pr, pc, SpAlgorithm::Cannon, 1);
  cs.mb = 9;
  cs.kb = 11;
  cs.nb = 8;
  cs.eps = eps;
  cs.seed = seed;
  return cs;
}

// Cannon in pieces (cannon_pieces: each image moved and multiplied as runs of its k blocks)
// moves the same bytes as whole images and computes the same C: every grid, 1 .. 5 pieces
// (more pieces than some images have k blocks: empty pieces), filtered and exact; the filtered
// run skips exactly the same products; unfiltered, C equals the dense BLAS reference.
TEST(Spgemm, CannonPiecesLeaveTheAnswerAndBytes) {
  Context ctx(MPI_COMM_WORLD);
  unsigned seed = 500;
  for (auto [pr, pc] : grids(world_size()))
    for (double eps : {0.0, 1e-3}) {
      Case cs = cannon_9x11x8(pr, pc, eps, seed++);
      cs.pieces = 1;
      const CaseRun whole = run_case(ctx, cs);
      for (int q : {2, 3, 5}) {
        cs.pieces = q;
        const CaseRun r = run_case(ctx, cs);
        const std::string what = std::to_string(pr) + "x" + std::to_string(pc) + " eps " +
                                 std::to_string(eps) + " pieces " + std::to_string(q);
        EXPECT_LE(max_abs_diff(r.got, whole.got) / whole.scale, 1e-14) << what;
        if (eps == 0) EXPECT_LE(max_abs_diff(r.got, r.want) / r.scale, 1e-12) << what;
        EXPECT_EQ(r.rep.blocks_skipped, whole.rep.blocks_skipped) << what;
        EXPECT_EQ(r.rep.blocks_multiplied, whole.rep.blocks_multiplied) << what;
        for (auto ph : {&SpMultiplyReport::a_panels, &SpMultiplyReport::b_panels}) {
          EXPECT_EQ((r.rep.*ph).recv, (whole.rep.*ph).recv) << what;
          EXPECT_EQ((r.rep.*ph).sent, (whole.rep.*ph).sent) << what;
        }
      }
    }
}

// Row panels (row_panels): C computed panel by panel of block rows, each merged before the next,
// is the one-pass C to rounding (the same block products, filtered once on the whole sum of each
// block; products of different shapes may be summed in another order); A moves exactly the
// one-pass bytes, B exactly `panels` times them; the same products are computed and skipped. A beta != 0, retain_sparsity or rma25d is refused on every rank.
TEST(Spgemm, RowPanelsLeaveTheAnswerAndMoveBOncePerPanel) {
  Context ctx(MPI_COMM_WORLD);
  unsigned seed = 900;
  for (auto [pr, pc] : grids(world_size()))
    for (double eps : {0.0, 1e-3}) {
      Case cs = cannon_9x11x8(pr, pc, eps, seed++);
      const CaseRun whole = run_case(ctx, cs);
      for (int panels : {2, 3, 12}) {  // 12 > 9 block rows: some panels are empty
        cs.panels = panels;
        const CaseRun r = run_case(ctx, cs);
        const std::string what = std::to_string(pr) + "x" + std::to_string(pc) + " eps " +
                                 std::to_string(eps) + " panels " + std::to_string(panels);
        EXPECT_LE(max_abs_diff(r.got, whole.got) / whole.scale, 1e-14) << what;
        if (eps == 0) EXPECT_LE(max_abs_diff(r.got, r.want) / r.scale, 1e-12) << what;
        EXPECT_EQ(r.rep.blocks_skipped, whole.rep.blocks_skipped) << what;
        EXPECT_EQ(r.rep.blocks_multiplied, whole.rep.blocks_multiplied) << what;
        EXPECT_EQ(r.rep.blocks_filtered, whole.rep.blocks_filtered) << what;
        EXPECT_EQ(r.rep.a_panels.recv, whole.rep.a_panels.recv) << what;
        EXPECT_EQ(r.rep.a_panels.sent, whole.rep.a_panels.sent) << what;
        EXPECT_EQ(r.rep.b_panels.recv, panels * whole.rep.b_panels.recv) << what;
        EXPECT_EQ(r.rep.b_panels.sent, panels * whole.rep.b_panels.sent) << what;
      }
    }
  Case bad = case_on(1, world_size(), SpAlgorithm::Cannon, 1);
  bad.panels = 2;
  bad.beta = 0.5;
  EXPECT_THROW(run_case(ctx, bad), tessel::InputError);
  bad.beta = 0.0;
  bad.retain = true;
  EXPECT_THROW(run_case(ctx, bad), tessel::InputError);
  bad.retain = false;
  bad.alg = SpAlgorithm::Rma25d;
  EXPECT_THROW(run_case(ctx, bad), tessel::InputError);
  bad.alg = SpAlgorithm::Cannon;
  bad.panels = 0;
  EXPECT_THROW(run_case(ctx, bad), tessel::InputError);
}

// comm_only does the symbolic product: the same blocks (the on-the-fly filter decides on the
// norms alone) zero-filled, so every phase moves exactly the bytes, messages and gets of the
// full run on the same inputs, the partial C panels included; and C is beta C plus zero blocks
// on the product's pattern (no flops).
TEST(Spgemm, CommOnlyMovesWhatTheFullRunMoves) {
  Context ctx(MPI_COMM_WORLD);
  const int p = world_size();
  unsigned seed = 300;
  for (auto [pr, pc] : grids(p))
    for (auto alg : {SpAlgorithm::Cannon, SpAlgorithm::Rma25d})
      for (int L : layer_choices(alg, pr, pc))
        for (double eps : {0.0, 1e-3}) {
          std::mt19937 rng(seed++);
          auto ms = random_sizes(rng, 7), ks = random_sizes(rng, 8), ns = random_sizes(rng, 6);
          auto da = Distribution::random(BlockSizes(ms), BlockSizes(ks), pr, pc, rng());
          auto db = Distribution::random(BlockSizes(ks), BlockSizes(ns), pr, pc, rng());
          auto dc = Distribution::random(BlockSizes(ms), BlockSizes(ns), pr, pc, rng());
          BlockSparseMatrix<double> A(ctx, da, "A"), B(ctx, db, "B");
          fill_random(A, rng, 0.6, p);
          fill_random(B, rng, 0.6, p);
          for (auto* M : {&A, &B})  // norms from 1 down to 1e-6: the filter skips some products
            M->for_each_block([](int br, int bc, double* x, int nr, int nc) {
              double sc = std::pow(10.0, -0.5 * ((br + bc) % 7));
              for (int e = 0; e < nr * nc; ++e) x[e] *= sc;
            });
          A.update_norms();
          B.update_norms();
          SpMultiplyOptions o;
          o.algorithm = alg;
          o.layers = L;
          o.filter_eps = eps;
          BlockSparseMatrix<double> C1(ctx, dc, "C1"), C2(ctx, dc, "C2");
          auto full = multiply(ctx, 1.0, SpOp::N, A, SpOp::N, B, 0.0, C1, o);
          o.comm_only = true;
          auto sym = multiply(ctx, 1.0, SpOp::N, A, SpOp::N, B, 0.0, C2, o);
          std::string what = std::string(to_string(alg)) + " L=" + std::to_string(L) + " " +
                             std::to_string(pr) + "x" + std::to_string(pc) + " eps " +
                             std::to_string(eps) + " rank " + std::to_string(ctx.rank());
          const SpPanelBytes* f[] = {&full.a_panels, &full.b_panels, &full.c_panels, &full.setup,
                                     &full.conform};
          const SpPanelBytes* c[] = {&sym.a_panels, &sym.b_panels, &sym.c_panels, &sym.setup,
                                     &sym.conform};
          for (int x = 0; x < 5; ++x) {
            EXPECT_EQ(f[x]->recv, c[x]->recv) << what << " phase " << x;
            EXPECT_EQ(f[x]->sent, c[x]->sent) << what << " phase " << x;
            EXPECT_EQ(f[x]->msgs, c[x]->msgs) << what << " phase " << x;
            EXPECT_EQ(f[x]->rma_ops, c[x]->rma_ops) << what << " phase " << x;
          }
          EXPECT_EQ(full.product_blocks, sym.product_blocks) << what;
          EXPECT_EQ(full.product_values, sym.product_values) << what;
          EXPECT_EQ(full.blocks_skipped, sym.blocks_skipped) << what;
          EXPECT_EQ(sym.flops, 0.0) << what;
          EXPECT_EQ(sym.blocks_multiplied, 0) << what;
          if (L > 1) {  // not vacuous: partials were sent
            std::int64_t sent = full.c_panels.sent;
            MPI_Allreduce(MPI_IN_PLACE, &sent, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
            EXPECT_GT(sent, 0) << what;
          }
          if (eps == 0) {  // C2: zero blocks exactly where the product has blocks
            EXPECT_EQ(C2.local_nblocks(), full.product_blocks) << what;
            C2.for_each_block([&](int, int, const double* x, int nr, int nc) {
              for (int e = 0; e < nr * nc; ++e) EXPECT_EQ(x[e], 0.0);
            });
          }
        }
}

// layers = auto picks the L of choose_layers on the model volume_model measures (every rank the
// same), and the result stays exact.
TEST(Spgemm, AutoLayersFollowEq7Model) {
  Context ctx(MPI_COMM_WORLD);
  const int p = world_size();
  for (auto [pr, pc] : grids(p)) {
    std::mt19937 rng(41);
    auto s = random_sizes(rng, 8);
    auto d = Distribution::random(BlockSizes(s), BlockSizes(s), pr, pc, 5);
    BlockSparseMatrix<double> A(ctx, d, "A"), C(ctx, d, "C");
    fill_random(A, rng, 0.4, p);
    auto a = dense_of(ctx, A);
    const int n = static_cast<int>(A.rows());
    std::vector<double> want(a.size(), 0.0);
    ref_gemm('N', 'N', n, n, n, 1.0, a.data(), n, a.data(), n, 0.0, want.data(), n);
    double scale = 1;
    for (double x : want) scale = std::max(scale, std::abs(x));
    for (double hint : {0.0, 1.0, 1e12}) {  // C estimated; C tiny (largest L wins); C huge (L = 1)
      SpMultiplyOptions o;
      o.algorithm = SpAlgorithm::Rma25d;
      o.product_bytes_hint = hint;
      BlockSparseMatrix<double> Cx(ctx, d, "C");
      const SpVolumeModel m = volume_model(ctx, A, A, Cx, o);
      auto rep = multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, Cx, o);
      EXPECT_EQ(rep.plan.layers, choose_layers(pr, pc, m)) << pr << "x" << pc << " hint " << hint;
      if (hint == 1e12) EXPECT_EQ(rep.plan.layers, 1);
      if (hint == 1.0) {
        int lmax = 1;
        for (int L : valid_layers(pr, pc))
          if (L <= 4) lmax = L;
        if (m.a > 0 && m.b > 0) EXPECT_EQ(rep.plan.layers, lmax) << pr << "x" << pc;
      }
      EXPECT_LE(max_abs_diff(dense_of(ctx, Cx), want) / scale, 1e-12);
    }
  }
}

// Filtering: blocks of very different scales; the error stays within the promise
// |alpha| eps sqrt(block rows) (on-the-fly: eps per C block row over the whole multiply, on any
// grid) + eps sqrt(blocks of C) (final filter) + with drop_partial_blocks and L > 1
// eps sqrt(blocks of C) (partial C blocks with norm bound < eps / (L |alpha|) not sent), and
// no stored block of C is below eps.
TEST(Spgemm, FilteringWithinBound) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(world_size());
  std::int64_t partial_dropped = 0;
  for (auto alg : {SpAlgorithm::Cannon, SpAlgorithm::Rma25d})
    for (int L : layer_choices(alg, pr, pc)) {
      std::mt19937 rng(3);
      auto ms = random_sizes(rng, 8), ks = random_sizes(rng, 8);
      auto d = Distribution::random(BlockSizes(ms), BlockSizes(ks), pr, pc, 9);
      auto dk = Distribution::random(BlockSizes(ks), BlockSizes(ms), pr, pc, 11);
      auto dc = Distribution::random(BlockSizes(ms), BlockSizes(ms), pr, pc, 13);
      BlockSparseMatrix<double> A(ctx, d, "A"), B(ctx, dk, "B"), C(ctx, dc, "C");
      fill_random(A, rng, 0.7, ctx.size());
      fill_random(B, rng, 0.7, ctx.size());
      // scale block (r, c) by 10^-(r + c) / 2: products from 1 down to 1e-14
      for (auto* M : {&A, &B})
        M->for_each_block([](int br, int bc, double* x, int nr, int nc) {
          double s = std::pow(10.0, -0.5 * (br + bc));
          for (int e = 0; e < nr * nc; ++e) x[e] *= s;
        });
      A.update_norms();
      B.update_norms();
      auto a = dense_of(ctx, A), b = dense_of(ctx, B);
      int m = static_cast<int>(A.rows()), k = static_cast<int>(A.cols());
      std::vector<double> want(static_cast<std::size_t>(m) * m, 0.0);
      const double alpha = 1.5, eps = 1e-4;
      ref_gemm('N', 'N', m, m, k, alpha, a.data(), m, b.data(), k, 0.0, want.data(), m);
      SpMultiplyOptions o;
      o.algorithm = alg;
      o.layers = L;
      o.filter_eps = eps;
      o.drop_partial_blocks = true;
      auto rep = multiply(ctx, alpha, SpOp::N, A, SpOp::N, B, 0.0, C, o);
      partial_dropped += rep.partial_blocks_dropped;
      if (L == 1) EXPECT_EQ(rep.partial_blocks_dropped, 0);
      auto got = dense_of(ctx, C);
      double err = 0;
      for (std::size_t x = 0; x < got.size(); ++x) err += (got[x] - want[x]) * (got[x] - want[x]);
      err = std::sqrt(err);
      double bound = alpha * eps * std::sqrt(8.0) + eps * std::sqrt(64.0) * (L > 1 ? 2 : 1);
      EXPECT_LE(err, bound) << to_string(alg) << " L=" << L;
      EXPECT_GT(err, 0.0);  // something was dropped
      std::int64_t skipped = rep.blocks_skipped + rep.blocks_filtered;
      MPI_Allreduce(MPI_IN_PLACE, &skipped, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      EXPECT_GT(skipped, 0);
      C.for_each_block([&](int, int, const double* x, int nr, int nc) {
        double s = 0;
        for (int e = 0; e < nr * nc; ++e) s += x[e] * x[e];
        EXPECT_GE(std::sqrt(s), eps);
      });
    }
  MPI_Allreduce(MPI_IN_PLACE, &partial_dropped, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (pr == 2 && pc == 2) EXPECT_GT(partial_dropped, 0);  // L = 4 exercised the partial filter
}

namespace {
// A and B of FilteringWithinBound's kind (block (r, c) scaled by 10^-(r + c) / 2) on `ctx`
// with a pr x pc grid: the same values whatever the grid (fill_random's draws do not depend on
// it).
void decaying_pair(Context& ctx, int pr, int pc, std::optional<BlockSparseMatrix<double>>& A,
                   std::optional<BlockSparseMatrix<double>>& B) {
  std::mt19937 rng(21);
  auto ms = random_sizes(rng, 14), ks = random_sizes(rng, 12);
  A.emplace(ctx, Distribution::random(BlockSizes(ms), BlockSizes(ks), pr, pc, 5), "A");
  B.emplace(ctx, Distribution::random(BlockSizes(ks), BlockSizes(ms), pr, pc, 6), "B");
  fill_random(*A, rng, 0.8, ctx.size());
  fill_random(*B, rng, 0.8, ctx.size());
  for (auto* M : {&*A, &*B}) {
    M->for_each_block([](int br, int bc, double* x, int nr, int nc) {
      double s = std::pow(10.0, -0.3 * (br + bc));
      for (int e = 0; e < nr * nc; ++e) x[e] *= s;
    });
    M->update_norms();
  }
}
// The dense matrix of a matrix whose blocks are all on this rank (column-major).
std::vector<double> local_dense(const BlockSparseMatrix<double>& m) {
  const auto& d = m.distribution();
  std::vector<double> f(static_cast<std::size_t>(m.rows() * m.cols()), 0.0);
  m.for_each_block([&](int br, int bc, const double* x, int nr, int nc) {
    for (int j = 0; j < nc; ++j)
      for (int i = 0; i < nr; ++i)
        f[static_cast<std::size_t>((d.col_blocks().offset(bc) + j) * m.rows() +
                                   d.row_blocks().offset(br) + i)] = x[j * nr + i];
  });
  return f;
}
}  // namespace

// The same answer at every rank count: with on-the-fly filtering (eps 1e-4 on blocks spanning
// 1 .. 1e-8), the product on all ranks (Cannon and rma25d at every valid L <= 4) equals the
// product on rank 0 alone to 1e-12 relative, and skips exactly the same block products.
TEST(Spgemm, FilteredProductIndependentOfRankCount) {
  Context ctx(MPI_COMM_WORLD);
  const double eps = 1e-4, alpha = 1.5;
  SpMultiplyOptions o;
  o.filter_eps = eps;
  std::vector<double> want;
  std::int64_t skipped_one = 0;
  if (ctx.rank() == 0) {  // the reference: one rank
    Context one(MPI_COMM_SELF);
    std::optional<BlockSparseMatrix<double>> A, B;
    decaying_pair(one, 1, 1, A, B);
    BlockSparseMatrix<double> C(one,
                                Distribution::random(A->distribution().row_blocks(),
                                                     B->distribution().col_blocks(), 1, 1, 7),
                                "C");
    skipped_one = multiply(one, alpha, SpOp::N, *A, SpOp::N, *B, 0.0, C, o).blocks_skipped;
    want = local_dense(C);
  }
  std::int64_t n = static_cast<std::int64_t>(want.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  MPI_Bcast(&skipped_one, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  want.resize(static_cast<std::size_t>(n));
  MPI_Bcast(want.data(), static_cast<int>(n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  ASSERT_GT(skipped_one, 0);  // the filter acts
  double scale = 0;
  for (double x : want) scale = std::max(scale, std::abs(x));
  auto [pr, pc] = Distribution::default_grid(world_size());
  std::optional<BlockSparseMatrix<double>> A, B;
  decaying_pair(ctx, pr, pc, A, B);
  for (auto alg : {SpAlgorithm::Cannon, SpAlgorithm::Rma25d})
    for (int L : layer_choices(alg, pr, pc)) {
      o.algorithm = alg;
      o.layers = L;
      BlockSparseMatrix<double> C(ctx,
                                  Distribution::random(A->distribution().row_blocks(),
                                                       B->distribution().col_blocks(), pr, pc, 7),
                                  "C");
      auto rep = multiply(ctx, alpha, SpOp::N, *A, SpOp::N, *B, 0.0, C, o);
      const std::string what = std::string(to_string(alg)) + " L=" + std::to_string(L) + " " +
                               std::to_string(pr) + "x" + std::to_string(pc);
      EXPECT_LE(max_abs_diff(dense_of(ctx, C), want) / scale, 1e-12) << what;
      std::int64_t skipped = rep.blocks_skipped;
      MPI_Allreduce(MPI_IN_PLACE, &skipped, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      EXPECT_EQ(skipped, skipped_one) << what;
    }
}

TEST(Spgemm, EmptyMatricesAndRows) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(world_size());
  for (auto alg : {SpAlgorithm::Cannon, SpAlgorithm::Rma25d}) {
    Case cs;  // A without any block: C = beta C
    cs.pr = pr;
    cs.pc = pc;
    cs.alg = alg;
    cs.layers = 0;
    cs.fill_a = 0.0;
    cs.beta = 0.5;
    CaseRun r = run_case(ctx, cs);
    EXPECT_LE(max_abs_diff(r.got, r.want) / r.scale, 1e-12);
    cs.fill_a = 0.15;  // many empty block rows and columns
    cs.fill_b = 0.15;
    cs.fill_c = 0.0;
    cs.seed = 4;
    r = run_case(ctx, cs);
    EXPECT_LE(max_abs_diff(r.got, r.want) / r.scale, 1e-12);
    {  // no block rows at all: C is 0 x n, nothing to do, nothing to fail
      std::mt19937 rng(2);
      auto ks = random_sizes(rng, 3);
      auto dz = Distribution::random(BlockSizes(std::vector<int>{}), BlockSizes(ks), pr, pc, 1);
      auto dk = Distribution::random(BlockSizes(ks), BlockSizes(ks), pr, pc, 2);
      BlockSparseMatrix<double> Z(ctx, dz, "Z"), K(ctx, dk, "K"), ZC(ctx, dz, "ZC");
      fill_random(K, rng, 1.0, world_size());
      SpMultiplyOptions oz;
      oz.algorithm = alg;
      EXPECT_NO_THROW(multiply(ctx, 1.0, SpOp::N, Z, SpOp::N, K, 0.0, ZC, oz));
      EXPECT_EQ(ZC.local_nblocks(), 0);
    }
    cs.alpha = 0.0;  // C = beta C without moving anything
    cs.fill_a = 0.5;
    cs.fill_c = 0.5;
    r = run_case(ctx, cs);
    EXPECT_LE(max_abs_diff(r.got, r.want) / r.scale, 1e-12);
    EXPECT_EQ(r.rep.a_panels.recv + r.rep.b_panels.recv, 0);
    cs.alpha = 1.0;
    cs.mb = 1;  // a single block row/column, more ranks than blocks
    cs.nb = 1;
    cs.kb = 1;
    cs.fill_a = cs.fill_b = 1.0;
    r = run_case(ctx, cs);
    EXPECT_LE(max_abs_diff(r.got, r.want) / r.scale, 1e-12);
  }
}

TEST(Spgemm, RankOwningNothing) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(world_size());
  for (auto alg : {SpAlgorithm::Cannon, SpAlgorithm::Rma25d}) {
    Case cs;
    cs.pr = pr;
    cs.pc = pc;
    cs.alg = alg;
    cs.layers = 0;
    cs.kind = DistKind::AllOnZero;
    cs.beta = 1.0;
    CaseRun r = run_case(ctx, cs);
    EXPECT_LE(max_abs_diff(r.got, r.want) / r.scale, 1e-12);
  }
}

TEST(Spgemm, Errors) {
  Context ctx(MPI_COMM_WORLD);
  int p = world_size();
  auto [pr, pc] = Distribution::default_grid(p);
  std::mt19937 rng(1);
  auto s = random_sizes(rng, 4), t = random_sizes(rng, 3);
  BlockSparseMatrix<double> A(ctx, Distribution::random(BlockSizes(s), BlockSizes(s), pr, pc), "A");
  BlockSparseMatrix<double> B(ctx, Distribution::random(BlockSizes(t), BlockSizes(s), pr, pc), "B");
  BlockSparseMatrix<double> C(ctx, Distribution::random(BlockSizes(s), BlockSizes(s), pr, pc), "C");
  SpMultiplyOptions o;
  o.algorithm = SpAlgorithm::Rma25d;
  o.layers = 3;  // never valid for p <= 9
  EXPECT_THROW(multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o), GridError);
  o.layers = 0;
  EXPECT_THROW(multiply(ctx, 1.0, SpOp::N, A, SpOp::N, B, 0.0, C, o), DimensionMismatch);
  EXPECT_THROW(multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, A, o), InputError);
  o.algorithm = SpAlgorithm::Cannon;
  o.layers = 2;
  EXPECT_THROW(multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o), GridError);
  o.layers = 0;
  o.filter_eps = -1;
  EXPECT_THROW(multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o), InputError);
  o.filter_eps = 0;
  for (double poll : {-1e-4, std::nan("")}) {
    o.progress_poll = poll;
    EXPECT_THROW(multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o), InputError);
  }
  o.progress_poll = 2e-4;
  for (int q : {-1, 65}) {  // cannon_pieces 0 (auto) .. 64
    o.cannon_pieces = q;
    EXPECT_THROW(multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o), InputError);
  }
  o.cannon_pieces = 0;
  // a put pending on one rank only: refused on every rank
  std::vector<double> v(static_cast<std::size_t>(s[0] * s[0]), 1.0);
  if (ctx.rank() == p - 1) A.put_block(0, 0, v.data());
  EXPECT_THROW(multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o), InputError);
  A.finalize();
  if (p > 1) {  // a matrix on another grid
    BlockSparseMatrix<double> D(ctx, Distribution::random(BlockSizes(s), BlockSizes(s), p, 1), "D");
    if (pr != p) EXPECT_THROW(multiply(ctx, 1.0, SpOp::N, A, SpOp::N, D, 0.0, C, o), GridError);
  }
  EXPECT_THROW(parse_sp_algorithm("summa"), InputError);
}

// The ledger's panel bytes of one multiply against eq. 7 in its exact per-rank form (see
// spgemm_plan.hpp), computed here from the block patterns: operands already on the plan's
// images (no conform step), image (m, v) = blocks of process row m (A) with k blocks of image v;
// bytes of an image = 16 per block (row and column, norm) + 8 per value; of a partial C panel
// 8 per block (two int32) + 8 per value + a 16-byte header. Cannon: a rank receives every image of its row (column) except the start images it
// holds at home. rma25d: the LR A and LC B images of each of its V/L ticks not at home; it sends
// its L - 1 foreign partial panels.
TEST(Spgemm, PanelBytesMatchEq7) {
  Context ctx(MPI_COMM_WORLD);
  const int p = world_size(), me = ctx.rank();
  unsigned seed = 100;
  for (auto [pr, pc] : grids(p))
    for (auto alg : {SpAlgorithm::Cannon, SpAlgorithm::Rma25d})
      for (int L : layer_choices(alg, pr, pc))
        for (bool retain : {false, true}) {
          std::mt19937 rng(seed++);
          int V = std::lcm(pr, pc);
          int lr = 1, lc = 1;
          if (alg == SpAlgorithm::Rma25d) {
            V = std::lcm(V, L);
            if (pr == pc)
              lr = lc = static_cast<int>(std::lround(std::sqrt(L)));
            else if (pr > pc)
              lr = L;
            else
              lc = L;
          }
          const int a = V / pc, b = V / pr, sr = pr / lr, sc = pc / lc;
          auto ms = random_sizes(rng, 7), ks = random_sizes(rng, 9), ns = random_sizes(rng, 6);
          auto dc = Distribution::random(BlockSizes(ms), BlockSizes(ns), pr, pc, rng());
          std::vector<int> acol(ks.size()), brow(ks.size()), img(ks.size());
          for (std::size_t k = 0; k < ks.size(); ++k) {
            int v = static_cast<int>(rng() % static_cast<unsigned>(V));
            acol[k] = v / a;
            brow[k] = v / b;
            img[k] = std::max(acol[k] * a, brow[k] * b);  // the documented first common image
          }
          Distribution da(BlockSizes(ms), BlockSizes(ks), pr, pc, dc.row_dist(), acol);
          Distribution db(BlockSizes(ks), BlockSizes(ns), pr, pc, brow, dc.col_dist());
          BlockSparseMatrix<double> A(ctx, da, "A"), B(ctx, db, "B"), C(ctx, dc, "C");
          DenseRef ra = fill_random(A, rng, 0.5, p), rb = fill_random(B, rng, 0.5, p);
          std::optional<DenseRef> rc;  // retain: C's fixed pattern
          if (retain) rc = fill_random(C, rng, 0.4, p);
          const std::int64_t c_mine = C.local_nblocks();
          SpMultiplyOptions o;
          o.algorithm = alg;
          o.layers = L;
          o.retain_sparsity = retain;
          auto rep = multiply(ctx, 1.0, SpOp::N, A, SpOp::N, B, 0.0, C, o);
          EXPECT_EQ(rep.conform.recv + rep.conform.sent, 0);

          auto bsz = [](int r, int c) { return static_cast<std::int64_t>(r) * c; };
          // Bytes (16 per block + 8 per entry) of the present blocks of A (B) with image v whose
          // row (column) block `o` lies in C's process row (column) `owner`: is_row picks A.
          auto image_bytes = [&](bool is_row, int owner, int v) {
            const auto& outer = is_row ? ms : ns;
            std::int64_t s = 0;
            for (int o = 0; o < static_cast<int>(outer.size()); ++o)
              for (int k = 0; k < static_cast<int>(ks.size()); ++k)
                if ((is_row ? dc.row_owner(o) : dc.col_owner(o)) == owner &&
                    img[static_cast<std::size_t>(k)] == v && (is_row ? ra.has(o, k) : rb.has(k, o)))
                  s += 16 +
                       8 * bsz(outer[static_cast<std::size_t>(o)], ks[static_cast<std::size_t>(k)]);
            return s;
          };
          auto s_a = [&](int m, int v) { return image_bytes(true, m, v); };
          auto s_b = [&](int v, int n) { return image_bytes(false, n, v); };
          const int i = me / pc, j = me % pc;
          std::int64_t ea = 0, eb = 0, ec = 0;
          if (alg == SpAlgorithm::Cannon) {
            for (int v = 0; v < V; ++v) ea += s_a(i, v), eb += s_b(v, j);
            for (int q = 0; q < a; ++q) {
              int w = (j * a + i * b + q) % V;
              if (w / a == j) ea -= s_a(i, w);
            }
            for (int q = 0; q < b; ++q) {
              int w = (j * a + i * b + q) % V;
              if (w / b == i) eb -= s_b(w, j);
            }
          } else {
            const int ii = i % sr, jj = j % sc, l = (j / sc) * lr + i / sr;
            std::vector<int> mine;
            for (int s = 0; s < V / L; ++s) mine.push_back((ii * b + jj * a + l + L * s) % V);
            for (int v : mine) {
              for (int x = 0; x < lr; ++x)
                if (x * sr + ii != i || v / a != j) ea += s_a(x * sr + ii, v);
              for (int y = 0; y < lc; ++y)
                if (v / b != i || y * sc + jj != j) eb += s_b(v, y * sc + jj);
            }
            for (int x = 0; x < lr; ++x)
              for (int y = 0; y < lc; ++y) {
                int m = x * sr + ii, n = y * sc + jj;
                if (m == i && n == j) continue;
                ec += 16;
                std::int64_t npat = 0;  // retain: the owner's pattern blocks (bitmap: 4 B per 32)
                for (int r = 0; r < static_cast<int>(ms.size()); ++r)
                  for (int c = 0; c < static_cast<int>(ns.size()); ++c) {
                    if (dc.row_owner(r) != m || dc.col_owner(c) != n) continue;
                    if (rc && !rc->has(r, c)) continue;  // outside the owner's pattern
                    if (rc) ++npat;
                    bool any = false;
                    for (int k = 0; k < static_cast<int>(ks.size()) && !any; ++k)
                      any = ra.has(r, k) && rb.has(k, c) &&
                            std::find(mine.begin(), mine.end(), img[static_cast<std::size_t>(k)]) !=
                                mine.end();
                    if (any)
                      ec += (rc ? 0 : 8) + 8 * bsz(ms[static_cast<std::size_t>(r)],
                                                   ns[static_cast<std::size_t>(c)]);
                  }
                if (rc) ec += 4 * ((npat + 31) / 32);
              }
          }
          EXPECT_EQ(rep.a_panels.recv, ea)
              << to_string(alg) << " L=" << L << " " << pr << "x" << pc << " rank " << me;
          EXPECT_EQ(rep.b_panels.recv, eb)
              << to_string(alg) << " L=" << L << " " << pr << "x" << pc << " rank " << me;
          EXPECT_EQ(rep.c_panels.sent, ec) << to_string(alg) << " L=" << L << " " << pr << "x" << pc
                                           << " rank " << me << " retain " << retain;
          const std::int64_t others = alg == SpAlgorithm::Rma25d && retain ? L - 1 : 0;
          EXPECT_EQ(rep.c_pattern.sent, others * (16 + 8 * c_mine))
              << pr << "x" << pc << " L=" << L;
          std::int64_t moved = ea + eb + ec;  // the check is not vacuous
          MPI_Allreduce(MPI_IN_PLACE, &moved, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
          if (p > 1) EXPECT_GT(moved, 0);
          if (L > 1) {
            std::int64_t c = ec;
            MPI_Allreduce(MPI_IN_PLACE, &c, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
            EXPECT_GT(c, 0);
          }
        }
}

// eq. 7's prediction with the images' real sizes (add_image_bytes + predict_layers) is the
// ledger's mean A and B bytes to the byte at every valid L (9 at 9 ranks too), also when the
// operands must be conformed first (random distributions) or are transposed.
TEST(Spgemm, Eq7PredictionWithImageSizesEqualsTheLedger) {
  Context ctx(MPI_COMM_WORLD);
  const int p = world_size();
  unsigned seed = 300;
  const std::pair<SpOp, SpOp> ops[] = {{SpOp::N, SpOp::N}, {SpOp::T, SpOp::N}, {SpOp::N, SpOp::T}};
  for (auto [pr, pc] : grids(p))
    for (int L : valid_layers(pr, pc))
      for (auto [opa, opb] : ops) {
        std::mt19937 rng(seed++);
        auto ms = random_sizes(rng, 7), ks = random_sizes(rng, 11), ns = random_sizes(rng, 6);
        auto da = opa == SpOp::N ? make_dist(DistKind::Random, ms, ks, pr, pc, rng)
                                 : make_dist(DistKind::Random, ks, ms, pr, pc, rng);
        auto db = opb == SpOp::N ? make_dist(DistKind::Random, ks, ns, pr, pc, rng)
                                 : make_dist(DistKind::Random, ns, ks, pr, pc, rng);
        auto dc = make_dist(DistKind::Random, ms, ns, pr, pc, rng);
        BlockSparseMatrix<double> A(ctx, da, "A"), B(ctx, db, "B"), C(ctx, dc, "C");
        fill_random(A, rng, 0.6, p);
        fill_random(B, rng, 0.4, p);
        SpMultiplyOptions o;
        o.algorithm = SpAlgorithm::Rma25d;
        o.layers = L;
        SpVolumeModel m = volume_model(ctx, A, B, C, o);
        add_image_bytes(ctx, opa, A, opb, B, dc, L, m);
        const auto pred = predict_layers(pr, pc, m, L);
        const auto rep = multiply(ctx, 1.0, opa, A, opb, B, 0.0, C, o);
        double got[2] = {static_cast<double>(rep.a_panels.recv),
                         static_cast<double>(rep.b_panels.recv)};
        MPI_Allreduce(MPI_IN_PLACE, got, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        const std::string what = std::to_string(pr) + "x" + std::to_string(pc) +
                                 " L=" + std::to_string(L) + " op " + (opa == SpOp::N ? "N" : "T") +
                                 (opb == SpOp::N ? "N" : "T");
        ASSERT_FALSE(pred.empty()) << what;
        ASSERT_EQ(pred.back().layers, L) << what;
        EXPECT_EQ(pred.back().a, got[0] / p) << what;
        EXPECT_EQ(pred.back().b, got[1] / p) << what;
        if (p > 1) EXPECT_GT(got[0] + got[1], 0) << what;  // not vacuous
      }
}

// rma25d's windows are kept in the caller's cache: created once, reused while the panels fit,
// re-created when one rank's panels grow; results stay exact throughout.
TEST(Spgemm, WindowCacheReusedAndGrown) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(world_size());
  SpMultiplyCache cache;
  std::mt19937 rng(8);
  auto s = random_sizes(rng, 6);
  auto d = Distribution::random(BlockSizes(s), BlockSizes(s), pr, pc, 3);
  SpMultiplyOptions o;
  o.algorithm = SpAlgorithm::Rma25d;
  BlockSparseMatrix<double> A0(ctx, d, "A");
  fill_random(A0, rng, 0.3, world_size());
  for (int round = 0; round < 3; ++round) {
    BlockSparseMatrix<double> A = A0, C(ctx, d, "C");
    if (round == 2) fill_random(A, rng, 1.0, world_size());
    auto a = dense_of(ctx, A);
    int n = static_cast<int>(A.rows());
    std::vector<double> want(a.size(), 0.0);
    ref_gemm('N', 'N', n, n, n, 1.0, a.data(), n, a.data(), n, 0.0, want.data(), n);
    auto rep = multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o, &cache);
    double scale = 1;
    for (double x : want) scale = std::max(scale, std::abs(x));
    EXPECT_LE(max_abs_diff(dense_of(ctx, C), want) / scale, 1e-12);
    if (round == 0) EXPECT_TRUE(rep.windows_created);
    if (round == 1) EXPECT_FALSE(rep.windows_created);  // same panels: reused
    SpMultiplyOptions oc;  // Cannon through the same cache (its grid communicators)
    BlockSparseMatrix<double> C2(ctx, d, "C2");
    multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C2, oc, &cache);
    EXPECT_LE(max_abs_diff(dense_of(ctx, C2), want) / scale, 1e-12);
  }
  EXPECT_EQ(cache.creations(), 2);  // the dense third round outgrew the windows
}

// Caches that disagree between ranks (rank 0's holds this grid, or its windows, the others' are
// new) give an InputError on every rank instead of a hang in the sub-communicator split; the
// same multiply with the caches agreeing then runs and is exact.
class SpgemmCaches : public ::testing::TestWithParam<SpAlgorithm> {};

TEST_P(SpgemmCaches, DisagreeingCachesAreAnErrorOnEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  if (world_size() == 1) GTEST_SKIP() << "needs two ranks to disagree";
  auto [pr, pc] = Distribution::default_grid(world_size());
  std::mt19937 rng(9);
  auto s = random_sizes(rng, 5);
  auto d = Distribution::random(BlockSizes(s), BlockSizes(s), pr, pc, 3);
  SpMultiplyOptions o;
  o.algorithm = GetParam();
  BlockSparseMatrix<double> A(ctx, d, "A"), C(ctx, d, "C");
  fill_random(A, rng, 0.4, world_size());
  SpMultiplyCache warm, fresh;
  multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o, &warm);
  SpMultiplyCache* mine = ctx.rank() == 0 ? &warm : &fresh;
  try {
    multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o, mine);
    ADD_FAILURE() << "disagreeing caches accepted on rank " << ctx.rank();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("differs between ranks"), std::string::npos) << e.what();
  }
  BlockSparseMatrix<double> C2(ctx, d, "C2");
  multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C2, o, &warm);  // agreeing again
  const auto a = dense_of(ctx, A);
  const int n = static_cast<int>(A.rows());
  std::vector<double> want(a.size(), 0.0);
  ref_gemm('N', 'N', n, n, n, 1.0, a.data(), n, a.data(), n, 0.0, want.data(), n);
  EXPECT_LE(max_abs_diff(dense_of(ctx, C2), want) / max_abs_or_one(want), 1e-12);
}
INSTANTIATE_TEST_SUITE_P(BothAlgorithms, SpgemmCaches,
                         ::testing::Values(SpAlgorithm::Cannon, SpAlgorithm::Rma25d));

// `tessel spgemm`: the block-sparse multiply C = op(A) op(B) (seed 001: Cannon or the 2.5D
// one-sided algorithm) on generated or given matrices: time per multiply, GFLOP/s of the block
// products done, occupancies, filtered products, bytes per rank by panel; --verify against the
// dense multiply, --explain prints the plan. run_spgemm: check the options -> the operands (and
// eq. 7's volumes) -> the timed multiplies -> sums and --verify -> the report, --out, --json.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "cli_util.hpp"
#include "memory_watch.hpp"
#include "commands.hpp"
#include "report.hpp"
#include "spgemm_case.hpp"
#include "tessel/dense/multiply.hpp"
#include "tessel/sparse/convert.hpp"
#include "tessel/io/sparse.hpp"
#include "tessel/sparse/multiply.hpp"
#include "tessel/core/atomic_file.hpp"
#include "tessel/core/memory.hpp"
#include "tessel/core/timer.hpp"
#include "tessel/version.hpp"

namespace tessel::app {
namespace {

using sparse::BlockSizes;
using sparse::BlockSparseMatrix;
using sparse::Distribution;

struct SpgemmArgs {
  std::string a, b, blocks, generate = "water:200", algorithm = "cannon", layers = "auto", grid,
                            transa = "N", transb = "N", out, json, retain = "none", trace,
                            simulate_compute = "run", product_times, measure_times;
  double eps = 0;
  double poll_us = 1e6 * sparse::SpMultiplyOptions{}.progress_poll;
  int repeat = 3, pieces = sparse::SpMultiplyOptions{}.cannon_pieces, row_panels = 1;
  bool verify = false, explain = false, comm_only = false, drop_partial = false;
  bool predict = false;  // rma25d: eq. 7's table beside a run with a given L
  std::uint64_t seed = 42;
};

sparse::SpOp parse_op(const char* option, const std::string& v) {
  if (v == "N" || v == "n") return sparse::SpOp::N;
  if (v == "T" || v == "t") return sparse::SpOp::T;
  throw InputError(detail::concat(option, " '", v, "': expected N or T"));
}

std::pair<int, int> parse_grid(const std::string& g, int p) {
  if (g.empty()) return most_square_grid(p);
  const auto [pr, pc] = parse_grid_option(g);
  TESSEL_CHECK(static_cast<long long>(pr) * pc == p, GridError, "--grid ", g, ": ", pr, "x", pc,
               " needs ", static_cast<long long>(pr) * pc, " ranks but the run has ", p);
  return {pr, pc};
}

double frob2_local(dense::DistMatrix<double>& x) {
  double s = 0;
  x.for_each_local([&](std::int64_t, std::int64_t, double& v) { s += v * v; });
  return s;
}

// ---- parse and validate (pure; the same on every rank, so the checks throw together) ----

/// The checked options of a run.
struct Setup {
  sparse::SpMultiplyOptions opt;
  sparse::SpOp opa = sparse::SpOp::N, opb = sparse::SpOp::N;
  bool retain = false;  // --retain a or c
  int pr = 1, pc = 1;
  SpgemmInputs in;
};

int parse_layers(const std::string& v) {
  if (v == "auto") return 0;
  try {
    std::size_t u = 0;
    const int layers = std::stoi(v, &u);
    TESSEL_CHECK(u == v.size() && layers >= 1, InputError, "");
    return layers;
  } catch (const std::exception&) {
    throw InputError("--layers '" + v + "': expected an integer >= 1 or auto");
  }
}

/// Pure. The options of `a` for `p` ranks: InputError (GridError for --grid) naming the option.
Setup check_options(const SpgemmArgs& a, int p) {
  Setup s;
  sparse::SpMultiplyOptions& opt = s.opt;
  opt.algorithm =
      parse_named("--algorithm", a.algorithm, "cannon or rma25d", sparse::parse_sp_algorithm);
  opt.layers = parse_layers(a.layers);
  opt.filter_eps = a.eps;
  opt.drop_partial_blocks = a.drop_partial;
  opt.comm_only = a.comm_only;
  TESSEL_CHECK(std::isfinite(a.poll_us) && a.poll_us >= 0, InputError, "--poll-us ", a.poll_us,
               ": expected >= 0");
  opt.progress_poll = a.poll_us * 1e-6;
  TESSEL_CHECK(a.pieces >= 0 && a.pieces <= 64, InputError, "--cannon-pieces ", a.pieces,
               ": expected 0 (auto) or 1 .. 64");
  opt.cannon_pieces = a.pieces;
  TESSEL_CHECK(a.row_panels >= 1 && a.row_panels <= 64, InputError, "--row-panels ", a.row_panels,
               ": expected 1 .. 64");
  TESSEL_CHECK(
      a.row_panels == 1 || (opt.algorithm == sparse::SpAlgorithm::Cannon && a.retain == "none"),
      InputError, "--row-panels ", a.row_panels,
      ": expected 1 with --algorithm rma25d or --retain");
  opt.row_panels = a.row_panels;
  TESSEL_CHECK(std::isfinite(a.eps) && a.eps >= 0, InputError, "--eps ", a.eps, ": expected >= 0");
  TESSEL_CHECK(a.repeat >= 1, InputError, "--repeat ", a.repeat, ": expected >= 1");
  TESSEL_CHECK(!(a.comm_only && a.verify), InputError,
               "--comm-only skips the block products: its C cannot pass --verify");
  s.opa = parse_op("--transa", a.transa);
  s.opb = parse_op("--transb", a.transb);
  TESSEL_CHECK(a.retain == "none" || a.retain == "a" || a.retain == "c", InputError, "--retain '",
               a.retain, "': expected none, a or c");
  s.retain = a.retain != "none";
  opt.retain_sparsity = s.retain;
  std::tie(s.pr, s.pc) = parse_grid(a.grid, p);
  s.in = {a.generate, a.a, a.b, a.blocks, a.seed};
  check_spgemm_inputs(s.in);
  return s;
}

/// Pure. The plan the operands are distributed for: `plan`, or with rma25d and layers auto the
/// largest candidate L <= 4 (its V is a multiple of every candidate's, so whichever L eq. 7
/// picks needs no conform step).
sparse::SpgemmPlan operand_plan(const Setup& s, const sparse::SpgemmPlan& plan) {
  if (s.opt.algorithm != sparse::SpAlgorithm::Rma25d || s.opt.layers != 0) return plan;
  int lmax = 1;
  for (int L : sparse::valid_layers(s.pr, s.pc))
    if (L <= 4) lmax = L;
  return sparse::make_spgemm_plan(s.opt.algorithm, s.pr, s.pc, lmax);
}

// ---- input: the operands, C's fixed pattern, eq. 7 ----

/// The matrices of a run and their occupancies (fractions of the blocks stored).
struct Operands {
  SpgemmCase cs;
  double occ_a = 0, occ_b = 0;
  BlockSparseMatrix<double> cpat;  // --retain: C's fixed pattern (else empty)
  double occ_pat = 0;
};

/// Collective. --retain: C's fixed pattern (zero values; beta = 0), as in a density-matrix
/// iteration: `a` = op(A)'s pattern (op(A) must be square like C), `c` = the pattern of the
/// product after the final filter (one Cannon multiply first, not counted); none: empty.
BlockSparseMatrix<double> retained_pattern(Context& ctx, const std::string& retain, const Setup& s,
                                           const SpgemmCase& cs) {
  BlockSparseMatrix<double> cpat(ctx, cs.dc, "C pattern");
  if (retain == "a") {
    TESSEL_CHECK(cs.A.distribution().row_blocks() == cs.A.distribution().col_blocks(), InputError,
                 "--retain a: op(A) is not square with C's block sizes (use --retain c)");
    std::vector<double> zeros;
    cs.A.for_each_block([&](int r, int c, const double*, int nr, int nc) {
      zeros.assign(static_cast<std::size_t>(nr) * nc, 0.0);
      if (s.opa == sparse::SpOp::N)
        cpat.put_block(r, c, zeros.data());
      else
        cpat.put_block(c, r, zeros.data());
    });
    cpat.finalize();
  } else if (retain == "c") {
    sparse::SpMultiplyOptions o0;
    o0.filter_eps = s.opt.filter_eps;
    (void)sparse::multiply(ctx, 1.0, s.opa, cs.A, s.opb, cs.B, 0.0, cpat, o0);
    sparse::scale(cpat, 0.0);
  }
  return cpat;
}

/// Collective. A and B on the plan `operands`, then C's fixed pattern.
Operands prepare_operands(Context& ctx, const SpgemmArgs& a, const Setup& s,
                          const sparse::SpgemmPlan& operands) {
  SpgemmCase cs = make_spgemm_case(ctx, s.in, s.opa, s.opb, operands);
  const double occ_a = sparse::occupation(ctx, cs.A), occ_b = sparse::occupation(ctx, cs.B);
  BlockSparseMatrix<double> cpat = retained_pattern(ctx, a.retain, s, cs);
  const double occ_pat = s.retain ? sparse::occupation(ctx, cpat) : 0.0;
  return Operands{std::move(cs), occ_a, occ_b, std::move(cpat), occ_pat};
}

/// Collective. rma25d with layers auto, --explain or --predict: eq. 7 for every candidate L, with the
/// product's size from one symbolic (comm-only) Cannon multiply: the blocks the products and
/// the on-the-fly filter create, before the final filter (a partial C panel is at most its part
/// of it). Sets s.opt.product_bytes_hint and, with layers auto, `plan` to eq. 7's choice.
std::vector<sparse::SpLayerPrediction> predict_volumes(Context& ctx, bool explain, Setup& s,
                                                       const Operands& ops,
                                                       sparse::SpgemmPlan& plan) {
  const bool auto_layers = s.opt.layers == 0;
  if (s.opt.algorithm != sparse::SpAlgorithm::Rma25d || !(auto_layers || explain)) return {};
  const bool retain = s.retain;
  sparse::SpMultiplyOptions so;
  so.comm_only = true;
  so.filter_eps = s.opt.filter_eps;
  so.retain_sparsity = retain;  // the product inside C's pattern
  BlockSparseMatrix<double> P = retain ? ops.cpat : BlockSparseMatrix<double>(ctx, ops.cs.dc, "P");
  sparse::SpMultiplyReport r0 =
      sparse::multiply(ctx, 1.0, s.opa, ops.cs.A, s.opb, ops.cs.B, 0.0, P, so);
  // C wire: 8 per block + 8 per value; with --retain the partials carry a bitmap over the
  // owner's pattern (1/8 byte per pattern block) instead of block indices
  const double per_block = retain ? 0.0 : 8.0;
  s.opt.product_bytes_hint = ctx.comm().allreduce_value(
      per_block * static_cast<double>(r0.product_blocks) +
          8.0 * static_cast<double>(r0.product_values) +
          (retain ? 0.125 * static_cast<double>(ops.cpat.local_nblocks()) : 0.0),
      MPI_SUM);
  // with --retain the model's C pattern is cpat's (P's zero blocks fell to the final filter)
  sparse::SpVolumeModel model =
      sparse::volume_model(ctx, ops.cs.A, ops.cs.B, retain ? ops.cpat : P, s.opt);
  // the images' real sizes: eq. 7's exact per-rank form at every L (also the one asked for)
  const int max_layers = std::max(sparse::kAutoMaxLayers, s.opt.layers);
  sparse::add_image_bytes(ctx, s.opa, ops.cs.A, s.opb, ops.cs.B, ops.cs.dc, max_layers, model);
  if (auto_layers) plan = sparse::make_spgemm_plan(s.opt.algorithm, s.pr, s.pc, 0, &model);
  return sparse::predict_layers(s.pr, s.pc, model, max_layers);
}

/// Rank 0: the run's header, the plan and eq. 7's table.
void print_plan(const SpgemmArgs& a, const Setup& s, const std::string& description, int p,
                const sparse::SpgemmPlan& plan,
                const std::vector<sparse::SpLayerPrediction>& pred) {
  std::cout << fmt::format("tessel spgemm: C = op{}(A) op{}(B), {}, {} ranks, eps {:g}{}\n",
                           a.transa, a.transb, description, p, a.eps,
                           a.comm_only ? ", COMMUNICATION ONLY (--comm-only)" : "")
            << plan.describe(a.explain ? 0 : -1) << std::flush;
  if (pred.empty()) return;
  std::cout << "eq. 7 predicted MB per rank (mean; A, B received, C partials sent; C from the "
               "symbolic product):\n";
  for (const auto& x : pred)
    std::cout << fmt::format("  L={}: A {:.2f}, B {:.2f}, C {:.2f}{}, total {:.2f}{}\n", x.layers,
                             x.a * 1e-6, x.b * 1e-6, x.c * 1e-6,
                             s.retain ? fmt::format(", C pattern {:.2f}", x.pattern * 1e-6) : "",
                             x.total() * 1e-6, x.layers == plan.layers ? "  <- this run" : "");
  std::cout << std::flush;
}

// ---- run: the timed multiplies ----

struct Timed {
  std::vector<double> times;            // per multiply, the largest over the ranks
  sparse::SpMultiplyReport rep;         // of the last multiply
  std::vector<comm::PhaseStats> stats;  // the ledger of the first multiply
  /// This rank's accounted memory at its peak during the first multiply (tessel's storage:
  /// A, B, C and the multiply's buffers and windows), and the kinds at that moment.
  std::int64_t mem_peak = 0;
  MemoryLedger::ByKind mem_kinds{};
  ShapeTimes product_times;  // --measure-product-times: this rank's, summed over the multiplies
};

/// Collective. `repeat` multiplies C = op(A) op(B) (C starts as C's pattern or empty), the
/// first one counted by the ledger.
Timed time_multiplies(Context& ctx, int repeat, const Setup& s, const Operands& ops,
                      BlockSparseMatrix<double>& C) {
  sparse::SpMultiplyCache cache;
  Timed t;
  const std::vector<std::string> phases = {"spgemm/A panels",
                                           "spgemm/B panels",
                                           "spgemm/C panels",
                                           "spgemm/C pattern",
                                           "spgemm/setup",
                                           "spgemm/conform",
                                           ""};
  for (int r = 0; r < repeat; ++r) {
    if (s.retain)
      C = ops.cpat;
    else
      C.clear();
    ctx.comm().barrier();
    if (r == 0) {
      ctx.ledger().reset();
      ctx.ledger().memory().reset_peak();
      comm::pcontrol(2);
    }
    const Stopwatch t0;
    t.rep = sparse::multiply(ctx, 1.0, s.opa, ops.cs.A, s.opb, ops.cs.B, 0.0, C, s.opt, &cache);
    const double seconds = t0.seconds();
    if (r == 0) {
      comm::pcontrol(0);
      t.stats = comm::ledger_stats(ctx.comm(), ctx.ledger(), phases);
      t.mem_peak = ctx.ledger().memory().peak();
      t.mem_kinds = ctx.ledger().memory().peak_by_kind();
    }
    t.times.push_back(ctx.comm().allreduce_value(seconds, MPI_MAX));
    add_to(t.product_times, t.rep.product_times);
  }
  return t;
}

// ---- report: sums over the ranks, --verify, the text and the JSON ----

/// Sums over the ranks (counts of the last multiply; C after the final filter).
struct Totals {
  double med = 0, flops = 0, gflops = 0, pattern_last = 0, occ_c = 0;
  double mem_peak_max = 0, mem_peak_mean = 0, mem_buffers_max = 0, maxrss_max = 0;
  double charged_max = 0;  // --simulate-compute skip: seconds of products charged, busiest rank
  double charged_sum = 0;  // ... summed over the ranks
  std::int64_t mult = 0, skipped = 0, dropped = 0, prod_blocks = 0, prod_values = 0,
               partial_dropped = 0, c_blocks = 0, c_values = 0;
};

/// Collective.
Totals sum_over_ranks(const Context& ctx, const Timed& t, const BlockSparseMatrix<double>& C) {
  const comm::Comm& c = ctx.comm();
  Totals n;
  n.med = median(t.times);
  n.flops = c.allreduce_value(t.rep.flops, MPI_SUM);
  n.charged_max = c.allreduce_value(t.rep.charged_s, MPI_MAX);
  n.charged_sum = c.allreduce_value(t.rep.charged_s, MPI_SUM);
  n.mult = c.allreduce_value(t.rep.blocks_multiplied, MPI_SUM);
  n.skipped = c.allreduce_value(t.rep.blocks_skipped, MPI_SUM);
  n.dropped = c.allreduce_value(t.rep.blocks_filtered, MPI_SUM);
  n.prod_blocks = c.allreduce_value(t.rep.product_blocks, MPI_SUM);
  n.prod_values = c.allreduce_value(t.rep.product_values, MPI_SUM);
  n.partial_dropped = c.allreduce_value(t.rep.partial_blocks_dropped, MPI_SUM);
  // --retain: the pattern goes to the layers once per cache; the last call sends headers only
  n.pattern_last =
      c.allreduce_value(static_cast<double>(t.rep.c_pattern.sent), MPI_SUM) / ctx.size();
  std::int64_t c_blocks = C.local_nblocks(), c_values = 0;
  C.for_each_block([&](int, int, const double*, int nr, int nc) {
    c_values += static_cast<std::int64_t>(nr) * nc;
  });
  n.c_blocks = c.allreduce_value(c_blocks, MPI_SUM);
  n.c_values = c.allreduce_value(c_values, MPI_SUM);
  n.occ_c = sparse::occupation(ctx, C);
  n.gflops = n.med > 0 ? n.flops / n.med * 1e-9 : 0.0;
  const auto peak = static_cast<double>(t.mem_peak);
  n.mem_peak_max = c.allreduce_value(peak, MPI_MAX);
  n.mem_peak_mean = c.allreduce_value(peak, MPI_SUM) / ctx.size();
  n.mem_buffers_max =
      c.allreduce_value(static_cast<double>(t.mem_kinds[static_cast<int>(MemKind::Buffers)] +
                                            t.mem_kinds[static_cast<int>(MemKind::Windows)]),
                        MPI_MAX);
  n.maxrss_max = c.allreduce_value(maxrss_bytes(), MPI_MAX);
  return n;
}

struct Verdict {
  std::string text = "not verified (use --verify)";
  double rel = -1, tol = -1;
};

/// Not collective. This rank's values of `x`, in for_each_local's order.
std::vector<double> local_values(dense::DistMatrix<double>& x) {
  std::vector<double> v;
  x.for_each_local([&](std::int64_t, std::int64_t, double& e) { v.push_back(e); });
  return v;
}

using LayoutOf = std::function<layout::Layout(std::int64_t, std::int64_t)>;

/// Collective. Multiplies `ref` by 1 inside C's fixed pattern and by 0 outside it.
void mask_by_pattern(Context& ctx, const BlockSparseMatrix<double>& pattern,
                     dense::DistMatrix<double>& ref, const LayoutOf& lay) {
  BlockSparseMatrix<double> mask = pattern;
  mask.for_each_block([](int, int, double* x, int nr, int nc) { std::fill(x, x + nr * nc, 1.0); });
  auto md = sparse::to_dense(ctx, mask, lay(pattern.rows(), pattern.cols()));
  const std::vector<double> mv = local_values(md);
  std::size_t x = 0;
  ref.for_each_local([&](std::int64_t, std::int64_t, double& v) { v *= mv[x++]; });
}

/// Collective. ||c - ref||_F (the same layout).
double frobenius_distance(const Context& ctx, dense::DistMatrix<double>& ref,
                          dense::DistMatrix<double>& c) {
  double diff = 0;
  const std::vector<double> rv = local_values(ref);
  std::size_t x = 0;
  c.for_each_local([&](std::int64_t, std::int64_t, double& v) {
    diff += (v - rv[x]) * (v - rv[x]);
    ++x;
  });
  return std::sqrt(ctx.comm().allreduce_value(diff, MPI_SUM));
}

/// Collective. --verify: C against the dense multiply of the same matrices (with --retain,
/// masked by C's pattern), within rounding, or the filter's promise with --eps (docs/sparse.md).
Verdict verify_against_dense(Context& ctx, const SpgemmArgs& a, const Setup& s, const Operands& ops,
                             const BlockSparseMatrix<double>& C, const sparse::SpgemmPlan& plan) {
  const LayoutOf lay = [p = ctx.size()](std::int64_t m, std::int64_t n) {
    auto [gr, gc] = most_square_grid(p);
    return layout::Layout::block_cyclic(m, n, 64, 64, gr, gc, 0, 0, p);
  };
  const BlockSparseMatrix<double>&A = ops.cs.A, &B = ops.cs.B;
  auto ad = sparse::to_dense(ctx, A, lay(A.rows(), A.cols()));
  auto bd = sparse::to_dense(ctx, B, lay(B.rows(), B.cols()));
  auto cd = sparse::to_dense(ctx, C, lay(C.rows(), C.cols()));
  dense::DistMatrix<double> ref(ctx, lay(C.rows(), C.cols()));
  auto dop = [](sparse::SpOp o) { return o == sparse::SpOp::N ? dense::Op::N : dense::Op::T; };
  dense::multiply(ctx, 1.0, dop(s.opa), ad, dop(s.opb), bd, 0.0, ref);
  if (s.retain) mask_by_pattern(ctx, ops.cpat, ref, lay);
  const double nref = std::sqrt(ctx.comm().allreduce_value(frob2_local(ref), MPI_SUM));
  Verdict v;
  v.rel = frobenius_distance(ctx, ref, cd) / std::max(nref, 1e-300);
  // exact: rounding; filtered: the promise of the filter (docs/sparse.md)
  // on-the-fly (< eps per block row) + final filter, + the partial C blocks not sent
  const double nbr = ops.cs.dc.row_blocks().count();
  const bool partial = a.drop_partial && plan.layers > 1;
  v.tol = 1e-12 + a.eps * (std::sqrt(nbr) + nbr * (partial ? 2 : 1)) / std::max(nref, 1e-300);
  v.text = fmt::format(
      "{} (against the dense multiply: relative Frobenius error {:.2e}, tolerance {:.2e})",
      v.rel <= v.tol ? "PASSED" : "FAILED", v.rel, v.tol);
  return v;
}

/// Rank 0: the times, occupancies, counts, the ledger of one multiply and the verdict.
void print_results(const SpgemmArgs& a, const Operands& ops, const Timed& t, const Totals& n,
                   const Verdict& v) {
  const bool retain = a.retain != "none";
  std::string reps;
  for (std::size_t i = 0; i < t.times.size(); ++i)
    reps += fmt::format("{}{:.4f}", i ? ", " : "", t.times[i]);
  std::cout
      << "times (s): " << reps << "\n"
      << fmt::format(
             "time: median {:.4f} s per multiply over {} runs (min {:.4f} s), {:.3f} GFLOP/s "
             "(flops of the block products done / median time)\n",
             n.med, a.repeat, *std::min_element(t.times.begin(), t.times.end()), n.gflops)
      << fmt::format("occupancy: A {:.2f}%, B {:.2f}%, C {:.2f}%{}\n", 100 * ops.occ_a,
                     100 * ops.occ_b, 100 * n.occ_c,
                     retain ? fmt::format(" (retain_sparsity: C's fixed pattern {:.2f}%, from {})",
                                          100 * ops.occ_pat,
                                          a.retain == "a" ? "op(A)" : "the filtered product")
                            : "")
      << fmt::format(
             "block products: {} done, {} skipped by the on-the-fly filter; {} blocks of C dropped "
             "by the final filter\n",
             n.mult, n.skipped, n.dropped)
      << fmt::format(
             "C before the final filter: {} blocks, {} values ({:.2f} MB as C wire: 8 B per block "
             "+ 8 per value); after: {} blocks, {} values ({:.2f} MB); partial C blocks not sent "
             "(norm bound < eps / L): {}\n",
             n.prod_blocks, n.prod_values,
             8e-6 * static_cast<double>(n.prod_blocks + n.prod_values), n.c_blocks, n.c_values,
             8e-6 * static_cast<double>(n.c_blocks + n.c_values), n.partial_dropped)
      << fmt::format(
             "accounted memory per rank in the first multiply: peak {} (max), {} (mean), of which "
             "the multiply's buffers and windows {} (max); ru_maxrss {} (max)\n",
             human_bytes(n.mem_peak_max), human_bytes(n.mem_peak_mean),
             human_bytes(n.mem_buffers_max), human_bytes(n.maxrss_max))
      << "bytes per rank for ONE multiply (received: point-to-point + MPI_Rget; C panels are partial "
         "sums sent to their owners):\n"
      << ledger_table(t.stats, true)
      << (retain && a.repeat > 1
              ? fmt::format(
                    "C pattern sent per rank in the last of the {} calls (cached: headers only): {} B\n",
                    a.repeat, n.pattern_last)
              : std::string())
      << "verify: " << v.text << "\n"
      << (a.simulate_compute == "skip"
              ? fmt::format("{}block products charged without running (busiest rank, last "
                            "multiply): {:.4f} s of this machine's time{}\n",
                            a.product_times.empty() ? kSkipNoticeSparse : kSkipNoticeTable,
                            n.charged_max,
                            a.product_times.empty() ? "" : ", from " + a.product_times)
              : std::string())
      << std::flush;
}

/// The --json fields that describe the run: its options and its plan.
nlohmann::json run_json(const Context& ctx, const SpgemmArgs& a, const Setup& s,
                        const Operands& ops, const sparse::SpgemmPlan& plan) {
  nlohmann::json j = run_header(ctx);
  j["command"] = "spgemm";
  j["generate"] = a.generate;
  j["n"] = ops.cs.dc.row_blocks().extent();
  j["blocks"] = ops.cs.dc.row_blocks().count();
  j["algorithm"] = sparse::to_string(s.opt.algorithm);
  j["layers"] = plan.layers;
  j["grid"] = fmt::format("{}x{}", s.pr, s.pc);
  j["v"] = plan.v;
  j["ticks"] = plan.ticks;
  j["eps"] = a.eps;
  j["transa"] = a.transa;
  j["transb"] = a.transb;
  j["comm_only"] = a.comm_only;
  j["simulate_compute"] = to_string(ctx.compute());
  j["product_times"] = a.product_times;  // --simulate-compute skip: the table charged (or "")
  j["poll_us"] = a.poll_us;
  j["cannon_pieces"] = a.pieces;
  j["row_panels"] = a.row_panels;
  j["retain"] = a.retain;
  j["product_bytes"] = s.opt.product_bytes_hint;
  j["plan"] = plan.describe();
  return j;
}

/// The --json fields of the results: times, counts, the ledger, eq. 7, the verdict.
void add_results_json(nlohmann::json& j, const SpgemmArgs& a, const Operands& ops,
                      const std::vector<sparse::SpLayerPrediction>& pred, const Timed& t,
                      const Totals& n, const Verdict& v) {
  j["times_s"] = t.times;
  j["median_s"] = n.med;
  j["flops"] = n.flops;
  j["gflops"] = n.gflops;
  j["charged_s_max"] = n.charged_max;  // --simulate-compute skip, last multiply
  j["charged_s_sum"] = n.charged_sum;
  j["occupancy"] = {{"a", ops.occ_a}, {"b", ops.occ_b}, {"c", n.occ_c}};
  j["blocks_multiplied"] = n.mult;
  j["blocks_skipped"] = n.skipped;
  j["blocks_filtered"] = n.dropped;
  j["product_blocks"] = n.prod_blocks;  // C before the final filter (sums over ranks)
  j["product_values"] = n.prod_values;
  j["c_blocks"] = n.c_blocks;  // C after the final filter
  j["c_values"] = n.c_values;
  j["partial_blocks_dropped"] = n.partial_dropped;
  j["retain_pattern_occupancy"] = ops.occ_pat;
  j["c_pattern_last_call_mean_bytes"] = n.pattern_last;
  j["ledger_one_call"] = ledger_json(t.stats);
  j["memory_peak_bytes_max"] = n.mem_peak_max;  // accounted, first multiply
  j["memory_peak_bytes_mean"] = n.mem_peak_mean;
  j["memory_buffers_bytes_max"] = n.mem_buffers_max;  // at each rank's peak
  j["maxrss_bytes_max"] = n.maxrss_max;
  nlohmann::json pj = nlohmann::json::array();
  for (const auto& x : pred)
    pj.push_back({{"layers", x.layers},
                  {"a_bytes", x.a},
                  {"b_bytes", x.b},
                  {"c_bytes", x.c},
                  {"c_pattern_bytes", x.pattern}});
  j["eq7_prediction"] = pj;  // mean bytes per rank; empty unless rma25d, layers auto or --predict
  j["verify"] = {
      {"done", a.verify}, {"relative_error", v.rel}, {"tolerance", v.tol}, {"text", v.text}};
}

/// Not collective. --product-times: the table, read on every rank (the same file: the same
/// error everywhere), before the Context that carries it is made.
std::shared_ptr<const KernelTimes> read_product_times(const SpgemmArgs& a) {
  if (a.product_times.empty()) return nullptr;
  TESSEL_CHECK(a.simulate_compute == "skip", InputError, "--product-times ", a.product_times,
               ": the table prices the products that --simulate-compute skip does not run: "
               "expected --simulate-compute skip");
  return std::make_shared<const KernelTimes>(KernelTimes::read(a.product_times));
}

/// Collective. --measure-product-times: the CPU time per block product of this computing run by
/// shape, summed over the ranks and the timed multiplies (shapes it did not run are timed on
/// rank 0 alone), written by rank 0 as the table --product-times reads. Returns the sums (every
/// rank).
ShapeTimes write_product_times(Context& ctx, const SpgemmArgs& a, const Setup& s,
                               const Operands& ops, const ShapeTimes& mine) {
  const auto& da = ops.cs.A.distribution();
  const BlockSizes& inner = s.opa == sparse::SpOp::N ? da.col_blocks() : da.row_blocks();
  const BlockSizes& rows = ops.cs.dc.row_blocks();
  const BlockSizes& cols = ops.cs.dc.col_blocks();
  const auto shapes = sparse::product_shapes(rows, inner, cols);  // the same list on every rank
  std::vector<double> sec(shapes.size()), cnt(shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    auto it = mine.find(shapes[i]);
    if (it == mine.end()) continue;
    sec[i] = it->second.seconds;
    cnt[i] = static_cast<double>(it->second.products);
  }
  ctx.comm().allreduce(sec.data(), static_cast<int>(sec.size()), MPI_SUM);
  ctx.comm().allreduce(cnt.data(), static_cast<int>(cnt.size()), MPI_SUM);
  ShapeTimes all;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    if (cnt[i] > 0) all[shapes[i]] = {sec[i], static_cast<std::int64_t>(cnt[i])};
  ctx.agree([&] {
    if (ctx.rank() != 0) return;
    const KernelTimes t = sparse::measure_product_times(rows, inner, cols, all, [](int d, int n) {
      std::cout << fmt::format("timed block shape {} of {} (not in the run)\n", d, n) << std::flush;
    });
    const std::string text = t.format(fmt::format(
        "tessel {}: CPU seconds per block product C(m x n) += A(m x k) B(k x n), the mean over the "
        "products of tessel spgemm --generate {} --measure-product-times on {} ranks, {} of the "
        "{} shapes timed in the run ({} products), the others alone",
        TESSEL_VERSION, a.generate, ctx.size(), all.size(), shapes.size(),
        std::accumulate(cnt.begin(), cnt.end(), 0.0)));
    write_file_atomic(a.measure_times, "--measure-product-times",
                      [&](std::FILE* f) { return std::fputs(text.c_str(), f) >= 0; });
    std::cout << "wrote the product times (" << t.size() << " shapes) to " << a.measure_times
              << "\n";
  });
  return all;
}

/// Collective: check the options -> the plan -> the operands (and eq. 7) -> the timed
/// multiplies -> sums, --verify -> the report, --out, --json.
int run_spgemm(const SpgemmArgs& a) {
  ContextOptions copt = context_options_from_environment();
  copt.compute = simulate_compute_options(a.simulate_compute, a.verify).compute;
  copt.product_times = read_product_times(a);
  TESSEL_CHECK(a.measure_times.empty() || a.simulate_compute == "run", InputError,
               "--measure-product-times with --simulate-compute ", a.simulate_compute,
               ": it times a computing run's products: expected --simulate-compute run");
  Context ctx(MPI_COMM_WORLD, copt);
  const bool root = ctx.rank() == 0;
  Setup s = check_options(a, ctx.size());
  s.opt.time_products = !a.measure_times.empty();
  TESSEL_CHECK(!(a.comm_only && s.opt.time_products), InputError,
               "--comm-only with --measure-product-times: the first runs no block product");
  TESSEL_CHECK(!(a.comm_only && ctx.compute() == ComputeMode::Skip), InputError,
               "--comm-only with --simulate-compute skip: the first makes no block products, the "
               "second charges them (expected one of the two)");
  // The plan first: a bad --layers fails here, on every rank, before any matrix is built.
  sparse::SpgemmPlan plan = sparse::make_spgemm_plan(s.opt.algorithm, s.pr, s.pc, s.opt.layers);
  check_writable(ctx, "--json", a.json);
  TraceRun trace(ctx, a.trace);
  check_writable(ctx, "--out", a.out);
  check_writable(ctx, "--measure-product-times", a.measure_times);

  const Operands ops = prepare_operands(ctx, a, s, operand_plan(s, plan));
  const auto pred = predict_volumes(ctx, a.explain || a.predict, s, ops, plan);
  if (root) print_plan(a, s, ops.cs.description, ctx.size(), plan, pred);
  if (a.explain) return trace.finish(0);

  BlockSparseMatrix<double> C(ctx, ops.cs.dc, "C");
  const Timed t = time_multiplies(ctx, a.repeat, s, ops, C);
  const Totals n = sum_over_ranks(ctx, t, C);
  const Verdict v = a.verify ? verify_against_dense(ctx, a, s, ops, C, plan) : Verdict{};

  if (root) print_results(a, ops, t, n, v);
  if (!a.out.empty()) io::write_cp2k_csr(ctx, C, a.out);
  const ShapeTimes timed =
      s.opt.time_products ? write_product_times(ctx, a, s, ops, t.product_times) : ShapeTimes{};
  if (!a.json.empty()) {
    nlohmann::json j = run_json(ctx, a, s, ops, plan);
    add_results_json(j, a, ops, pred, t, n, v);
    nlohmann::json pt = nlohmann::json::array();  // --measure-product-times: sums over ranks
    for (const auto& [shape, x] : timed)
      pt.push_back({{"m", shape[0]},
                    {"n", shape[1]},
                    {"k", shape[2]},
                    {"products", x.products},
                    {"seconds", x.seconds}});
    j["products_timed"] = pt;
    write_json(ctx, a.json, j);
  }
  return trace.finish((a.verify && v.text.rfind("PASSED", 0) != 0) ? 1 : 0);
}

/// --algorithm, --layers, --grid, --eps, --drop-partial-blocks, --cannon-pieces.
void add_algorithm_options(CLI::App* s, SpgemmArgs& a) {
  s->add_option("--algorithm", a.algorithm, "cannon (Algorithm 1) | rma25d (Algorithm 2)")
      ->capture_default_str();
  s->add_option(
       "--layers", a.layers,
       "rma25d layers L or auto (the valid L <= 4 with the smallest eq. 7 volume A+B+C, C from a "
       "symbolic multiply first)")
      ->capture_default_str();
  s->add_option("--grid", a.grid, "Process grid PRxPC (default: the most square, PR <= PC)");
  s->add_option("--eps", a.eps, "Filter threshold (on-the-fly and final; 0 = exact)")
      ->capture_default_str();
  s->add_flag(
      "--drop-partial-blocks", a.drop_partial,
      "rma25d, L > 1, --eps > 0: do not send partial C blocks whose norm bound is below "
      "eps / (L |alpha|) (fewer C bytes; the answer then depends on L, by < eps per block)");
  s->add_option("--cannon-pieces", a.pieces,
                "Cannon: move and multiply each image in this many pieces (1 .. 64; a rank "
                "holds its images plus one piece in flight; 1 = whole images; 0 = auto: pieces "
                "of at most ~16 MB)")
      ->capture_default_str();
  s->add_option("--row-panels", a.row_panels,
                "Cannon: compute C in this many panels of block rows, each filtered and merged "
                "before the next (the product's buffers shrink to ~1/N; B moves N times; "
                "1 .. 64)")
      ->capture_default_str();
}

}  // namespace

std::function<int()> add_spgemm(CLI::App& app) {
  auto a = std::make_shared<SpgemmArgs>();
  CLI::App* s = app.add_subcommand(
      "spgemm",
      "Block-sparse multiply C = op(A) op(B) (DBCSR's algorithms, seed 001; collective). "
      "GFLOP/s = flops of the block products done / median time.");
  s->add_option("--a", a->a, "A as CP2K CSR text (plain or gzip; with --b and --blocks)");
  s->add_option("--b", a->b, "B as CP2K CSR text (plain or gzip)");
  s->add_option("--blocks", a->blocks, "Block sizes file (blocksizes.txt) of --a/--b");
  s->add_option(
       "--generate", a->generate,
       "Generated A and B: water:N (H S of N water molecules, sparse/generate.hpp), water-ss:N (S S), "
       "water-ss-dzvp:N (S S on S's pattern with DZVP block sizes 13, 5, 5 per molecule, the "
       "values tiled: the multiply's block structure in that basis), water-hs-dzvp:N (H S "
       "likewise, H's longer-ranged pattern as A), "
       "or band:N (N molecules of blocks 4,1,1 on a ring, neighbours within 6)")
      ->capture_default_str();
  add_algorithm_options(s, *a);
  s->add_option("--transa", a->transa, "op(A): N or T")->capture_default_str();
  s->add_option("--transb", a->transb, "op(B): N or T")->capture_default_str();
  s->add_option("--repeat", a->repeat,
                "Timed multiplies (median reported; the ledger counts the first)")
      ->capture_default_str();
  s->add_option("--seed", a->seed, "Seed of the values and distributions")->capture_default_str();
  s->add_flag("--verify", a->verify, "Check C against the dense multiply of the same matrices");
  s->add_flag(
      "--explain", a->explain,
      "Print the plan (with rank 0's reads; rma25d: eq. 7's A, B, C bytes per candidate L) and exit");
  s->add_flag("--predict", a->predict,
              "rma25d: print eq. 7's A, B, C bytes per rank for every candidate L beside the run "
              "(and in the JSON; one symbolic multiply first; always on with --layers auto)");
  s->add_flag(
      "--comm-only", a->comm_only,
      "Benchmarks: move every panel (C partials of their true size: symbolic product) but compute no "
      "block product");
  s->add_option(
       "--retain", a->retain,
       "retain_sparsity with C's pattern fixed (zero values, beta = 0), as in a density-matrix "
       "iteration: none, a (op(A)'s pattern) or c (the pattern of the filtered product, from one "
       "multiply first); rma25d sends it to the other layers first")
      ->capture_default_str();
  s->add_option("--poll-us", a->poll_us,
                "Microseconds between progress polls while a tick multiplies (lets the next "
                "panels move without an MPI progress thread; 0 = no polling)")
      ->capture_default_str();
  s->add_option("--out", a->out, "Write C as CP2K CSR text");
  s->add_option("--json", a->json, "Write the results as JSON (default: not written)");
  add_trace_option(s, a->trace);
  s->add_option("--product-times", a->product_times,
                "With --simulate-compute skip: the table of seconds per block product by shape "
                "(from --measure-product-times); no product runs, each is charged its shape's "
                "time, so the simulated time does not depend on this machine's load");
  s->add_option("--measure-product-times", a->measure_times,
                "Time this run's block products by shape (CPU time of each batch, summed over "
                "ranks and --repeat; shapes it does not run are timed alone on rank 0) and write "
                "the table --product-times reads to this file. Run it on an idle machine; a small "
                "case with the same block sizes will do");
  add_simulate_compute_option(
      s, a->simulate_compute,
      "of each batch of block products of one shape (up to 30,000) only the first 3,072 are "
      "computed; the others are charged to the simulated clock at the CPU time per product of "
      "the last 2,048 of those (the filter, C's blocks and every transfer as in a real run); "
      "with --product-times none is computed, each charged its shape's time from the table");
  s->footer(
      "Errors are printed once as 'tessel: error: ...' and the command exits with status 2; "
      "a failed --verify exits with status 1. docs/sparse.md.");
  return [a]() { return run_spgemm(*a); };
}

}  // namespace tessel::app

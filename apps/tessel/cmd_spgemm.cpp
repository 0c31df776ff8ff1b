// `tessel spgemm`: the block-sparse multiply C = op(A) op(B) (seed 001: Cannon or the 2.5D
// one-sided algorithm) on generated or given matrices: time per multiply, GFLOP/s of the block
// products done, occupancies, filtered products, bytes per rank by panel; --verify against the
// dense multiply, --explain prints the plan.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <numeric>

#include "cli_util.hpp"
#include "commands.hpp"
#include "report.hpp"
#include "spgemm_case.hpp"
#include "tessel/dense/multiply.hpp"
#include "tessel/sparse/convert.hpp"
#include "tessel/io/sparse.hpp"
#include "tessel/sparse/multiply.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::app {
namespace {

using sparse::BlockSizes;
using sparse::BlockSparseMatrix;
using sparse::Distribution;

struct SpgemmArgs {
  std::string a, b, blocks, generate = "water:200", algorithm = "cannon", layers = "auto", grid,
                            transa = "N", transb = "N", out, json, retain = "none", trace;
  double eps = 0;
  double poll_us = 1e6 * sparse::SpMultiplyOptions{}.progress_poll;
  int repeat = 3, pieces = sparse::SpMultiplyOptions{}.cannon_pieces;
  bool verify = false, explain = false, comm_only = false, drop_partial = false;
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

int run_spgemm(const SpgemmArgs& a) {
  Context ctx(MPI_COMM_WORLD, context_options_from_environment());
  const int p = ctx.size();
  const bool root = ctx.rank() == 0;
  sparse::SpMultiplyOptions opt;
  opt.algorithm =
      parse_named("--algorithm", a.algorithm, "cannon or rma25d", sparse::parse_sp_algorithm);
  if (a.layers == "auto") {
    opt.layers = 0;
  } else {
    try {
      std::size_t u = 0;
      opt.layers = std::stoi(a.layers, &u);
      TESSEL_CHECK(u == a.layers.size() && opt.layers >= 1, InputError, "");
    } catch (const std::exception&) {
      throw InputError("--layers '" + a.layers + "': expected an integer >= 1 or auto");
    }
  }
  opt.filter_eps = a.eps;
  opt.drop_partial_blocks = a.drop_partial;
  opt.comm_only = a.comm_only;
  TESSEL_CHECK(std::isfinite(a.poll_us) && a.poll_us >= 0, InputError, "--poll-us ", a.poll_us,
               ": expected >= 0");
  opt.progress_poll = a.poll_us * 1e-6;
  TESSEL_CHECK(a.pieces >= 0 && a.pieces <= 64, InputError, "--cannon-pieces ", a.pieces,
               ": expected 0 (auto) or 1 .. 64");
  opt.cannon_pieces = a.pieces;
  TESSEL_CHECK(std::isfinite(a.eps) && a.eps >= 0, InputError, "--eps ", a.eps, ": expected >= 0");
  TESSEL_CHECK(a.repeat >= 1, InputError, "--repeat ", a.repeat, ": expected >= 1");
  TESSEL_CHECK(!(a.comm_only && a.verify), InputError,
               "--comm-only skips the block products: its C cannot pass --verify");
  const sparse::SpOp opa = parse_op("--transa", a.transa), opb = parse_op("--transb", a.transb);
  TESSEL_CHECK(a.retain == "none" || a.retain == "a" || a.retain == "c", InputError, "--retain '",
               a.retain, "': expected none, a or c");
  const bool retain = a.retain != "none";
  opt.retain_sparsity = retain;
  auto [pr, pc] = parse_grid(a.grid, p);
  SpgemmInputs in{a.generate, a.a, a.b, a.blocks, a.seed};
  check_spgemm_inputs(in);
  // The plan first: a bad --layers fails here, on every rank, before any matrix is built.
  sparse::SpgemmPlan plan = sparse::make_spgemm_plan(opt.algorithm, pr, pc, opt.layers);
  check_writable(ctx, "--json", a.json);
  TraceRun trace(ctx, a.trace);
  check_writable(ctx, "--out", a.out);
  const bool rma = opt.algorithm == sparse::SpAlgorithm::Rma25d;
  const bool auto_layers = rma && opt.layers == 0;
  // layers auto: the operands go on the images of the largest candidate L; its V is a multiple
  // of every candidate's, so whichever L eq. 7 picks needs no conform step.
  sparse::SpgemmPlan case_plan = plan;
  if (auto_layers) {
    int lmax = 1;
    for (int L : sparse::valid_layers(pr, pc))
      if (L <= 4) lmax = L;
    case_plan = sparse::make_spgemm_plan(opt.algorithm, pr, pc, lmax);
  }

  SpgemmCase cs = make_spgemm_case(ctx, in, opa, opb, case_plan);
  BlockSparseMatrix<double>& A = cs.A;
  BlockSparseMatrix<double>& B = cs.B;
  const Distribution& dc = cs.dc;
  const double occ_a = sparse::occupation(ctx, A), occ_b = sparse::occupation(ctx, B);

  // --retain: C's fixed pattern (zero values; beta = 0), as in a density-matrix iteration:
  // `a` = op(A)'s pattern (op(A) must be square like C), `c` = the pattern of the product after
  // the final filter (one Cannon multiply first, not counted).
  BlockSparseMatrix<double> Cpat(ctx, dc, "C pattern");
  if (a.retain == "a") {
    TESSEL_CHECK(A.distribution().row_blocks() == A.distribution().col_blocks(), InputError,
                 "--retain a: op(A) is not square with C's block sizes (use --retain c)");
    std::vector<double> zeros;
    A.for_each_block([&](int r, int c, const double*, int nr, int nc) {
      zeros.assign(static_cast<std::size_t>(nr) * nc, 0.0);
      if (opa == sparse::SpOp::N)
        Cpat.put_block(r, c, zeros.data());
      else
        Cpat.put_block(c, r, zeros.data());
    });
    Cpat.finalize();
  } else if (a.retain == "c") {
    sparse::SpMultiplyOptions o0;
    o0.filter_eps = opt.filter_eps;
    (void)sparse::multiply(ctx, 1.0, opa, A, opb, B, 0.0, Cpat, o0);
    sparse::scale(Cpat, 0.0);
  }
  const double occ_pat = retain ? sparse::occupation(ctx, Cpat) : 0.0;

  // rma25d with auto or --explain: eq. 7 for every candidate L, with the product's size from
  // one symbolic (comm-only) Cannon multiply: the blocks the products and the on-the-fly filter
  // create, before the final filter (a partial C panel is at most its part of it).
  std::vector<sparse::SpLayerPrediction> pred;
  if (rma && (auto_layers || a.explain)) {
    sparse::SpMultiplyOptions so;
    so.comm_only = true;
    so.filter_eps = opt.filter_eps;
    so.retain_sparsity = retain;  // the product inside C's pattern
    BlockSparseMatrix<double> P = retain ? Cpat : BlockSparseMatrix<double>(ctx, dc, "P");
    sparse::SpMultiplyReport r0 = sparse::multiply(ctx, 1.0, opa, A, opb, B, 0.0, P, so);
    // C wire: 8 per block + 8 per value; with --retain the partials carry a bitmap over the
    // owner's pattern (1/8 byte per pattern block) instead of block indices
    const double per_block = retain ? 0.0 : 8.0;
    opt.product_bytes_hint = ctx.comm().allreduce_value(
        per_block * static_cast<double>(r0.product_blocks) +
            8.0 * static_cast<double>(r0.product_values) +
            (retain ? 0.125 * static_cast<double>(Cpat.local_nblocks()) : 0.0),
        MPI_SUM);
    // with --retain the model's C pattern is Cpat's (P's zero blocks fell to the final filter)
    const sparse::SpVolumeModel model = sparse::volume_model(ctx, A, B, retain ? Cpat : P, opt);
    pred = sparse::predict_layers(pr, pc, model);
    if (auto_layers) plan = sparse::make_spgemm_plan(opt.algorithm, pr, pc, 0, &model);
  }

  if (root)
    std::cout << fmt::format("tessel spgemm: C = op{}(A) op{}(B), {}, {} ranks, eps {:g}{}\n",
                             a.transa, a.transb, cs.description, p, a.eps,
                             a.comm_only ? ", COMMUNICATION ONLY (--comm-only)" : "")
              << plan.describe(a.explain ? 0 : -1) << std::flush;
  if (root && !pred.empty()) {
    std::cout << "eq. 7 predicted MB per rank (mean; A, B received, C partials sent; C from the "
                 "symbolic product):\n";
    for (const auto& x : pred)
      std::cout << fmt::format("  L={}: A {:.2f}, B {:.2f}, C {:.2f}{}, total {:.2f}{}\n", x.layers,
                               x.a * 1e-6, x.b * 1e-6, x.c * 1e-6,
                               retain ? fmt::format(", C pattern {:.2f}", x.pattern * 1e-6) : "",
                               x.total() * 1e-6, x.layers == plan.layers ? "  <- this run" : "");
    std::cout << std::flush;
  }
  if (a.explain) return trace.finish(0);

  sparse::SpMultiplyCache cache;
  std::vector<double> times;
  sparse::SpMultiplyReport rep;
  BlockSparseMatrix<double> C(ctx, dc, "C");
  const std::vector<std::string> phases = {"spgemm/A panels",
                                           "spgemm/B panels",
                                           "spgemm/C panels",
                                           "spgemm/C pattern",
                                           "spgemm/setup",
                                           "spgemm/conform",
                                           ""};
  std::vector<comm::PhaseStats> stats;
  for (int r = 0; r < a.repeat; ++r) {
    if (retain)
      C = Cpat;
    else
      C.clear();
    ctx.comm().barrier();
    if (r == 0) {
      ctx.ledger().reset();
      comm::pcontrol(2);
    }
    const Stopwatch t0;
    rep = sparse::multiply(ctx, 1.0, opa, A, opb, B, 0.0, C, opt, &cache);
    const double t = t0.seconds();
    if (r == 0) {
      comm::pcontrol(0);
      stats = comm::ledger_stats(ctx.comm(), ctx.ledger(), phases);
    }
    times.push_back(ctx.comm().allreduce_value(t, MPI_MAX));
  }
  const double med = median(times);
  const double flops = ctx.comm().allreduce_value(rep.flops, MPI_SUM);
  const auto mult = ctx.comm().allreduce_value(rep.blocks_multiplied, MPI_SUM);
  const auto skipped = ctx.comm().allreduce_value(rep.blocks_skipped, MPI_SUM);
  const auto dropped = ctx.comm().allreduce_value(rep.blocks_filtered, MPI_SUM);
  const auto prod_blocks = ctx.comm().allreduce_value(rep.product_blocks, MPI_SUM);
  const auto prod_values = ctx.comm().allreduce_value(rep.product_values, MPI_SUM);
  const auto partial_dropped = ctx.comm().allreduce_value(rep.partial_blocks_dropped, MPI_SUM);
  // --retain: the pattern goes to the layers once per cache; the last call sends headers only
  const double pattern_last =
      ctx.comm().allreduce_value(static_cast<double>(rep.c_pattern.sent), MPI_SUM) / p;
  std::int64_t c_blocks = C.local_nblocks(), c_values = 0;
  C.for_each_block([&](int, int, const double*, int nr, int nc) {
    c_values += static_cast<std::int64_t>(nr) * nc;
  });
  c_blocks = ctx.comm().allreduce_value(c_blocks, MPI_SUM);
  c_values = ctx.comm().allreduce_value(c_values, MPI_SUM);
  const double occ_c = sparse::occupation(ctx, C);
  const double gflops = med > 0 ? flops / med * 1e-9 : 0.0;

  std::string verdict = "not verified (use --verify)";
  double rel = -1, tol = -1;
  if (a.verify) {
    auto lay = [&](std::int64_t m, std::int64_t n) {
      auto [gr, gc] = most_square_grid(p);
      return layout::Layout::block_cyclic(m, n, 64, 64, gr, gc, 0, 0, p);
    };
    auto ad = sparse::to_dense(ctx, A, lay(A.rows(), A.cols()));
    auto bd = sparse::to_dense(ctx, B, lay(B.rows(), B.cols()));
    auto cd = sparse::to_dense(ctx, C, lay(C.rows(), C.cols()));
    dense::DistMatrix<double> ref(ctx, lay(C.rows(), C.cols()));
    auto dop = [](sparse::SpOp o) { return o == sparse::SpOp::N ? dense::Op::N : dense::Op::T; };
    dense::multiply(ctx, 1.0, dop(opa), ad, dop(opb), bd, 0.0, ref);
    if (retain) {  // --retain: the reference masked by C's fixed pattern
      BlockSparseMatrix<double> mask = Cpat;
      mask.for_each_block(
          [](int, int, double* x, int nr, int nc) { std::fill(x, x + nr * nc, 1.0); });
      auto md = sparse::to_dense(ctx, mask, lay(C.rows(), C.cols()));
      std::vector<double> mv;
      md.for_each_local([&](std::int64_t, std::int64_t, double& v) { mv.push_back(v); });
      std::size_t x = 0;
      ref.for_each_local([&](std::int64_t, std::int64_t, double& v) { v *= mv[x++]; });
    }
    const double nref = std::sqrt(ctx.comm().allreduce_value(frob2_local(ref), MPI_SUM));
    double diff = 0;
    {
      std::vector<double> rv;
      ref.for_each_local([&](std::int64_t, std::int64_t, double& v) { rv.push_back(v); });
      std::size_t x = 0;
      cd.for_each_local([&](std::int64_t, std::int64_t, double& v) {
        diff += (v - rv[x]) * (v - rv[x]);
        ++x;
      });
    }
    diff = std::sqrt(ctx.comm().allreduce_value(diff, MPI_SUM));
    rel = diff / std::max(nref, 1e-300);
    // exact: rounding; filtered: the promise of the filter (docs/sparse.md)
    // on-the-fly (< eps per block row) + final filter, + the partial C blocks not sent
    const double nbr = dc.row_blocks().count();
    const bool partial = a.drop_partial && plan.layers > 1;
    tol = 1e-12 + a.eps * (std::sqrt(nbr) + nbr * (partial ? 2 : 1)) / std::max(nref, 1e-300);
    verdict = fmt::format(
        "{} (against the dense multiply: relative Frobenius error {:.2e}, tolerance {:.2e})",
        rel <= tol ? "PASSED" : "FAILED", rel, tol);
  }
  if (root) {
    std::string reps;
    for (std::size_t i = 0; i < times.size(); ++i)
      reps += fmt::format("{}{:.4f}", i ? ", " : "", times[i]);
    std::cout
        << "times (s): " << reps << "\n"
        << fmt::format(
               "time: median {:.4f} s per multiply over {} runs (min {:.4f} s), {:.3f} GFLOP/s "
               "(flops of the block products done / median time)\n",
               med, a.repeat, *std::min_element(times.begin(), times.end()), gflops)
        << fmt::format(
               "occupancy: A {:.2f}%, B {:.2f}%, C {:.2f}%{}\n", 100 * occ_a, 100 * occ_b,
               100 * occ_c,
               retain
                   ? fmt::format(" (retain_sparsity: C's fixed pattern {:.2f}%, from {})",
                                 100 * occ_pat, a.retain == "a" ? "op(A)" : "the filtered product")
                   : "")
        << fmt::format(
               "block products: {} done, {} skipped by the on-the-fly filter; {} blocks of C dropped "
               "by the final filter\n",
               mult, skipped, dropped)
        << fmt::format(
               "C before the final filter: {} blocks, {} values ({:.2f} MB as C wire: 8 B per block "
               "+ 8 per value); after: {} blocks, {} values ({:.2f} MB); partial C blocks not sent "
               "(norm bound < eps / L): {}\n",
               prod_blocks, prod_values, 8e-6 * static_cast<double>(prod_blocks + prod_values),
               c_blocks, c_values, 8e-6 * static_cast<double>(c_blocks + c_values), partial_dropped)
        << "bytes per rank for ONE multiply (received: point-to-point + MPI_Rget; C panels are partial "
           "sums sent to their owners):\n"
        << ledger_table(stats, true)
        << (retain && a.repeat > 1
                ? fmt::format(
                      "C pattern sent per rank in the last of the {} calls (cached: headers only): {} B\n",
                      a.repeat, pattern_last)
                : std::string())
        << "verify: " << verdict << "\n"
        << std::flush;
  }
  if (!a.out.empty()) io::write_cp2k_csr(ctx, C, a.out);
  if (!a.json.empty()) {
    nlohmann::json j = run_header(ctx);
    j["command"] = "spgemm";
    j["generate"] = a.generate;
    j["n"] = dc.row_blocks().extent();
    j["blocks"] = dc.row_blocks().count();
    j["algorithm"] = sparse::to_string(opt.algorithm);
    j["layers"] = plan.layers;
    j["grid"] = fmt::format("{}x{}", pr, pc);
    j["v"] = plan.v;
    j["ticks"] = plan.ticks;
    j["eps"] = a.eps;
    j["transa"] = a.transa;
    j["transb"] = a.transb;
    j["times_s"] = times;
    j["median_s"] = med;
    j["flops"] = flops;
    j["gflops"] = gflops;
    j["occupancy"] = {{"a", occ_a}, {"b", occ_b}, {"c", occ_c}};
    j["blocks_multiplied"] = mult;
    j["blocks_skipped"] = skipped;
    j["blocks_filtered"] = dropped;
    j["product_blocks"] = prod_blocks;  // C before the final filter (sums over ranks)
    j["product_values"] = prod_values;
    j["c_blocks"] = c_blocks;  // C after the final filter
    j["c_values"] = c_values;
    j["partial_blocks_dropped"] = partial_dropped;
    j["comm_only"] = a.comm_only;
    j["poll_us"] = a.poll_us;
    j["cannon_pieces"] = a.pieces;
    j["retain"] = a.retain;
    j["retain_pattern_occupancy"] = occ_pat;
    j["c_pattern_last_call_mean_bytes"] = pattern_last;
    j["ledger_one_call"] = ledger_json(stats);
    nlohmann::json pj = nlohmann::json::array();
    for (const auto& x : pred)
      pj.push_back({{"layers", x.layers},
                    {"a_bytes", x.a},
                    {"b_bytes", x.b},
                    {"c_bytes", x.c},
                    {"c_pattern_bytes", x.pattern}});
    j["eq7_prediction"] = pj;  // mean bytes per rank; empty unless rma25d with auto or --explain
    j["product_bytes"] = opt.product_bytes_hint;
    j["plan"] = plan.describe();
    j["verify"] = {
        {"done", a.verify}, {"relative_error", rel}, {"tolerance", tol}, {"text", verdict}};
    write_json(ctx, a.json, j);
  }
  return trace.finish((a.verify && verdict.rfind("PASSED", 0) != 0) ? 1 : 0);
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
       "or band:N (N molecules of blocks 4,1,1 on a ring, neighbours within 6)")
      ->capture_default_str();
  s->add_option("--algorithm", a->algorithm, "cannon (Algorithm 1) | rma25d (Algorithm 2)")
      ->capture_default_str();
  s->add_option(
       "--layers", a->layers,
       "rma25d layers L or auto (the valid L <= 4 with the smallest eq. 7 volume A+B+C, C from a "
       "symbolic multiply first)")
      ->capture_default_str();
  s->add_option("--grid", a->grid, "Process grid PRxPC (default: the most square, PR <= PC)");
  s->add_option("--eps", a->eps, "Filter threshold (on-the-fly and final; 0 = exact)")
      ->capture_default_str();
  s->add_flag(
      "--drop-partial-blocks", a->drop_partial,
      "rma25d, L > 1, --eps > 0: do not send partial C blocks whose norm bound is below "
      "eps / (L |alpha|) (fewer C bytes; the answer then depends on L, by < eps per block)");
  s->add_option("--cannon-pieces", a->pieces,
                "Cannon: move and multiply each image in this many pieces (1 .. 64; a rank "
                "holds its images plus one piece in flight; 1 = whole images; 0 = auto: pieces "
                "of at most ~16 MB)")
      ->capture_default_str();
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
  s->footer(
      "Errors are printed once as 'tessel: error: ...' and the command exits with status 2; "
      "a failed --verify exits with status 1. docs/sparse.md.");
  return [a]() { return run_spgemm(*a); };
}

}  // namespace tessel::app

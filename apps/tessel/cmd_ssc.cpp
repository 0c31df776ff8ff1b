// `tessel ssc`: SymmSquareCube (D^2 and D^3 of a symmetric D, seed 000) alone, for
// benchmarks: time per repetition, median, TFLOP/s, the bytes and messages per rank of one
// call, and an independent check of D^2 and D^3 (Freivalds: distributed matrix-vector products
// with D only). run_ssc: check the options -> D -> the mesh -> the timed calls -> --verify ->
// the report, --json.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "report.hpp"
#include "tessel/io/npy.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::app {
namespace {

using dense::DistMatrix;

struct SscCmdArgs {
  std::int64_t n = 2048;
  std::string in, matrix = "random", json, trace, simulate_compute = "run";
  double gap = 0.2, hopping = 1.0;
  int repeat = 3, nb = 64;
  bool verify = false, comm_only = false;
  std::uint64_t seed = 42;
  SscArgs ssc;
  CLI::App* app = nullptr;
};

// y = M x for a distributed M (any layout): each rank multiplies its own entries, one
// allreduce sums the parts. Independent of SymmSquareCube (no collective of the kernel).
std::vector<double> matvec(const Context& ctx, const DistMatrix<double>& m,
                           const std::vector<double>& x) {
  std::vector<double> y(x.size(), 0.0);
  const_cast<DistMatrix<double>&>(m).for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
    y[static_cast<std::size_t>(i)] += v * x[static_cast<std::size_t>(j)];
  });
  ctx.comm().allreduce(y.data(), static_cast<int>(y.size()), MPI_SUM);
  return y;
}

double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  const double r = std::sqrt(num) / std::max(1e-300, std::sqrt(den));
  return std::isfinite(r) ? r : std::numeric_limits<double>::infinity();
}

// ---- parse and validate (the same on every rank, so the checks throw together) ----

/// The checked options of a run.
struct Setup {
  dense::SscOptions opt;
  bool skip = false;  // --simulate-compute skip: values meaningless, never read
  bool file = false;  // D from --in
  RingModel model;    // --matrix ring
};

/// Not collective (the SymmSquareCube options may read --machine). The options of `a`:
/// InputError (LayoutMismatch for --nb) naming the option.
Setup check_options(const Context& ctx, const SscCmdArgs& a) {
  Setup s;
  s.skip = ctx.compute() == ComputeMode::Skip;
  TESSEL_CHECK(!s.skip || a.in.empty(), InputError, "--simulate-compute skip with --in ", a.in,
               ": D is shared simulated memory, expected a generated D");
  s.opt = a.ssc.options(ctx);
  TESSEL_CHECK(!(a.comm_only && a.verify), InputError,
               "--comm-only skips the local multiplies: its D^2 and D^3 cannot pass --verify");
  s.opt.compute_products = !a.comm_only;
  TESSEL_CHECK(a.repeat >= 1, InputError, "--repeat ", a.repeat, ": expected >= 1");
  TESSEL_CHECK(a.nb >= 1, LayoutMismatch, "--nb ", a.nb, ": block size must be >= 1");
  TESSEL_CHECK(a.matrix == "random" || a.matrix == "ring", InputError, "--matrix '", a.matrix,
               "': expected random or ring");
  s.file = !a.in.empty();
  if (s.file) {
    for (const char* o : {"--n", "--matrix", "--gap", "--hopping"})
      TESSEL_CHECK(a.app->count(o) == 0, InputError, o, " ",
                   a.app->get_option(o)->as<std::string>(),
                   ": describes a generated D, which --in ", a.in, " replaces");
  } else {
    TESSEL_CHECK(a.n >= 1, InputError, "--n ", a.n, ": expected a matrix size >= 1");
  }
  s.model = RingModel{a.n, a.gap, a.hopping};
  if (!s.file && a.matrix == "ring") s.model.validate();
  return s;
}

// ---- input: D from --in or generated ----

/// D and its description.
struct Input {
  std::optional<DistMatrix<double>> D;
  std::string description;
};

/// Collective. D block-cyclic --nb x --nb on the most square grid: --in (square), or
/// generated (not filled under skip): the ring model, or a hashed random symmetric matrix.
Input make_input(const Context& ctx, const SscCmdArgs& a, const Setup& s) {
  const int p = ctx.size();
  const auto [pr, pc] = most_square_grid(p);
  auto bc = [&, pr = pr, pc = pc](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, a.nb, a.nb, pr, pc, 0, 0, p);
  };
  Input in;
  if (s.file) {
    in.D = read_npy_option(ctx, "--in", a.in, bc);
    TESSEL_CHECK(in.D->rows() == in.D->cols(), DimensionMismatch, "--in ", a.in, " is ",
                 in.D->rows(), " x ", in.D->cols(), ": expected a square symmetric matrix");
    in.description = "--in " + a.in;
    return in;
  }
  DistMatrix<double>& D = in.D.emplace(ctx, bc(a.n, a.n));
  if (s.skip) {
    in.description = "not generated (--simulate-compute skip)";
  } else if (a.matrix == "ring") {
    s.model.fill(D);
    in.description = s.model.describe();
  } else {  // symmetric: element (i, j) from the hash of (min, max); scaled to spectrum O(1)
    const double scale = 1.0 / std::sqrt(static_cast<double>(a.n));
    D.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
      v = scale * hashed(a.seed, 1, std::min(i, j), std::max(i, j));
    });
    in.description =
        fmt::format("hashed random symmetric (seed {}, entries in [-1, 1)/sqrt(n))", a.seed);
  }
  return in;
}

/// Rank 0: the run's header: the size, the input, SymmSquareCube's mesh and options.
void print_header(const SscCmdArgs& a, const Setup& s, const std::string& input, std::int64_t n,
                  int p, const dense::SymmSquareCube& ssc) {
  const dense::SscOptions& opt = s.opt;
  std::cout
      << fmt::format("tessel ssc: D^2 and D^3 of a symmetric {} x {} D, {} ranks\n", n, n, p)
      << (s.skip ? kSkipNotice : "") << "input: " << input << "\n"
      << fmt::format(
             "SymmSquareCube: algorithm {}, mesh {} (p = {}), N_DUP = {} (requested {}), active ranks {}, "
             "collectives {}{}\n",
             dense::to_string(opt.algorithm), ssc.mesh().describe(), ssc.p(), ssc.n_dup(),
             a.ssc.n_dup,
             opt.active_ranks == 0 ? std::string("all") : std::to_string(opt.active_ranks),
             comm::to_string(opt.collectives),
             a.comm_only ? ", COMMUNICATION ONLY (--comm-only)" : "")
      << std::flush;
}

// ---- run: the timed calls ----

struct Timed {
  std::vector<double> times;            // per call, the largest over the ranks
  std::vector<comm::PhaseStats> stats;  // the ledger of the first call
};

/// Collective. --repeat calls D -> D^2, D^3; the ledger and a preloaded traffic counter see
/// exactly the first. An error of the active ranks is held until every rank has passed
/// release() (the inactive ranks wait there and would otherwise never learn of it), then
/// thrown on every rank.
Timed time_calls(Context& ctx, int repeat, dense::SymmSquareCube& ssc, DistMatrix<double>& d,
                 DistMatrix<double>& d2, DistMatrix<double>& d3) {
  const std::vector<std::string> phases = {"ssc/compute", "ssc/release", ""};
  Timed t;
  for (int r = 0; r < repeat; ++r) {
    ctx.comm().barrier();
    if (r == 0) {
      ctx.ledger().reset();
      comm::pcontrol(2);
    }
    const Stopwatch t0;
    std::exception_ptr failure;
    try {
      ssc.run_active(d.data(), d2.data(), d3.data());
    } catch (const Error&) { failure = std::current_exception(); }
    ssc.release();
    const double seconds = t0.seconds();
    if (r == 0) {
      comm::pcontrol(0);
      t.stats = comm::ledger_stats(ctx.comm(), ctx.ledger(), phases);  // every rank gets here
    }
    ctx.agree([&] {
      if (failure) std::rethrow_exception(failure);
    });
    t.times.push_back(ctx.comm().allreduce_value(seconds, MPI_MAX));
  }
  return t;
}

// ---- report: --verify, the text and the JSON ----

struct Verdict {
  std::string text = "not verified (use --verify)";
  double res2 = -1, res3 = -1;
};

/// Collective. --verify (Freivalds): D (D x) against D^2 x and D (D (D x)) against D^3 x for
/// 3 probes x, with distributed products by D only.
Verdict verify_freivalds(const Context& ctx, std::uint64_t seed, const DistMatrix<double>& d,
                         const DistMatrix<double>& d2, const DistMatrix<double>& d3) {
  const std::int64_t n = d.rows();
  Verdict v;
  v.res2 = v.res3 = 0;
  for (int probe = 0; probe < 3; ++probe) {
    std::vector<double> x(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      x[static_cast<std::size_t>(i)] = hashed(seed + 7, probe, i, 0);
    const auto dx = matvec(ctx, d, x), ddx = matvec(ctx, d, dx), dddx = matvec(ctx, d, ddx);
    v.res2 = std::max(v.res2, rel_diff(matvec(ctx, d2, x), ddx));
    v.res3 = std::max(v.res3, rel_diff(matvec(ctx, d3, x), dddx));
  }
  const double tol = 1e-13 * std::max(1.0, std::sqrt(static_cast<double>(n)));
  const bool ok = v.res2 <= tol && v.res3 <= tol;
  v.text = fmt::format(
      "{} (Freivalds, 3 probes, distributed D x products: relative residual D^2 {:.2e}, "
      "D^3 {:.2e}, tolerance {:.1e})",
      ok ? "PASSED" : "FAILED", v.res2, v.res3, tol);
  return v;
}

/// The rate: 4 n^3 flops per call over the median time.
struct Rate {
  double med = 0, flops = 0, tflops = 0;
};

Rate rate_of(std::int64_t n, const std::vector<double>& times) {
  Rate x;
  x.med = median(times);
  const double nn = static_cast<double>(n);
  x.flops = 4 * nn * nn * nn;
  x.tflops = x.med > 0 ? x.flops / x.med * 1e-12 : 0.0;
  return x;
}

/// Rank 0: the times, the rate, the ledger of one call and the verdict.
void print_results(const SscCmdArgs& a, bool skip, const std::vector<double>& times,
                   const std::vector<comm::PhaseStats>& stats, const Rate& x, const Verdict& v) {
  std::string reps;
  for (std::size_t i = 0; i < times.size(); ++i)
    reps += fmt::format("{}{:.4f}", i ? ", " : "", times[i]);
  std::cout
      << "times (s): " << reps << "\n"
      << fmt::format(
             "time: median {:.4f} s over {} runs (min {:.4f} s), {:.4f} TFLOP/s (4 n^3 / t)\n",
             x.med, a.repeat, *std::min_element(times.begin(), times.end()), x.tflops)
      << "bytes moved per rank for ONE call (point-to-point received, collective payload):\n"
      << ledger_table(stats, true)
      << "verify: " << (skip ? std::string("not possible (--simulate-compute skip)") : v.text)
      << "\n"
      << (skip ? kSkipNotice : "") << std::flush;
}

/// The --json document of a run.
nlohmann::json run_json(const Context& ctx, const SscCmdArgs& a, const Setup& s,
                        const std::string& input, const dense::SymmSquareCube& ssc, std::int64_t n,
                        const Timed& t, const Rate& x, const Verdict& v) {
  const dense::SscOptions& opt = s.opt;
  nlohmann::json j = run_header(ctx);
  j["command"] = "ssc";
  j["n"] = n;
  j["input"] = input;
  j["algorithm"] = dense::to_string(opt.algorithm);
  j["n_dup_requested"] = a.ssc.n_dup;
  j["n_dup"] = ssc.n_dup();
  j["n_t"] = opt.n_t;
  j["active_ranks"] = opt.active_ranks;
  j["replication"] = opt.replication;
  j["mesh"] = ssc.mesh().describe();
  j["p"] = ssc.p();
  j["times_s"] = t.times;
  j["median_s"] = x.med;
  j["flops"] = x.flops;
  j["tflops"] = x.tflops;
  j["tflops_formula"] = "4 n^3 / median time";
  j["ledger_one_call"] = ledger_json(t.stats);
  j["comm_only"] = a.comm_only;
  j["simulate_compute"] = to_string(ctx.compute());
  j["collectives"] = comm::to_string(opt.collectives);
  j["verify"] = {
      {"done", a.verify}, {"residual_d2", v.res2}, {"residual_d3", v.res3}, {"text", v.text}};
  return j;
}

/// Collective: check the options -> D -> SymmSquareCube's mesh, D on its plane 0 (untimed)
/// -> the timed calls -> --verify -> the report, --json.
int run_ssc(const SscCmdArgs& a) {
  ContextOptions copt = context_options_from_environment();
  copt.compute = simulate_compute_options(a.simulate_compute, a.verify).compute;
  Context ctx(MPI_COMM_WORLD, copt);
  const bool root = ctx.rank() == 0;
  const Setup s = check_options(ctx, a);
  check_writable(ctx, "--json", a.json);
  TraceRun trace(ctx, a.trace);

  const Input in = make_input(ctx, a, s);
  const std::int64_t n = in.D->rows();
  // Untimed: the mesh and communicators, the move to plane 0, the input check.
  dense::SymmSquareCube ssc(ctx, n, s.opt);
  DistMatrix<double> d = dense::redistribute(ctx, *in.D, ssc.plane0());
  if (!s.skip)
    ssc.check_input(d.data(), s.opt.symmetry_tol, "ssc",
                    s.file ? "--in " + a.in : std::string("D"));
  DistMatrix<double> d2(ctx, ssc.plane0()), d3(ctx, ssc.plane0());
  if (root) print_header(a, s, in.description, n, ctx.size(), ssc);

  const Timed t = time_calls(ctx, a.repeat, ssc, d, d2, d3);
  const Rate x = rate_of(n, t.times);
  const Verdict v = a.verify ? verify_freivalds(ctx, a.seed, d, d2, d3) : Verdict{};
  if (root) print_results(a, s.skip, t.times, t.stats, x, v);
  if (!a.json.empty())
    write_json(ctx, a.json, run_json(ctx, a, s, in.description, ssc, n, t, x, v));
  return trace.finish((a.verify && v.text.rfind("PASSED", 0) != 0) ? 1 : 0);
}

}  // namespace

std::function<int()> add_ssc(CLI::App& app) {
  auto a = std::make_shared<SscCmdArgs>();
  CLI::App* s = app.add_subcommand(
      "ssc",
      "Time SymmSquareCube (D^2 and D^3 of a symmetric D, seed 000) alone (collective). "
      "TFLOP/s = 4 n^3 / median time (two dense products of 2 n^3 flops).");
  a->app = s;
  s->add_option("--n", a->n, "Size of the generated D")->capture_default_str();
  s->add_option("--in", a->in,
                "D from a .npy file (float64, square, symmetric); default: generated");
  s->add_option("--matrix", a->matrix,
                "Generated D: random (hashed, symmetric, layout independent) | ring "
                "(the ring model of `tessel purify`)")
      ->capture_default_str();
  s->add_option("--gap", a->gap, "--matrix ring: on-site energy difference g (Eh)")
      ->capture_default_str();
  s->add_option("--hopping", a->hopping, "--matrix ring: hopping t (Eh)")->capture_default_str();
  a->ssc.add_to(s);
  s->add_option("--repeat", a->repeat, "Timed calls (median reported; the ledger counts the first)")
      ->capture_default_str();
  s->add_option("--nb", a->nb,
                "Block size of the block-cyclic layout D starts in (most square grid)")
      ->capture_default_str();
  s->add_option("--seed", a->seed, "Seed of the random D and of the check's vectors")
      ->capture_default_str();
  s->add_flag("--verify", a->verify,
              "Check D^2 and D^3 with Freivalds' test (distributed D x products)");
  s->add_flag("--comm-only", a->comm_only,
              "Benchmarks: skip the local multiplies and time the communication schedule alone "
              "(D^2 and D^3 are then not computed; the TFLOP/s line is meaningless)");
  s->add_option("--json", a->json, "Write the results as JSON (default: not written)");
  add_trace_option(s, a->trace);
  add_simulate_compute_option(s, a->simulate_compute);
  s->footer(
      std::string(kRingModelHelp) +
      "\n\nErrors are printed once as 'tessel: error: ...' and the command exits with status 2; "
      "a failed --verify exits with status 1.");
  return [a]() { return run_ssc(*a); };
}

}  // namespace tessel::app

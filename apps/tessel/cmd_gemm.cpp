// `tessel gemm`: a verified distributed multiply, with the plan, the time, and the bytes moved
// per rank against the Theorem 2 lower bound.
#include <fmt/format.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>

#include "commands.hpp"
#include "cli_util.hpp"
#include "report.hpp"
#include "tessel/core/build.hpp"
#include "tessel/dense/multiply.hpp"
#include "tessel/dense/plan_layouts.hpp"
#include "tessel/io/npy.hpp"
#include "tessel/layout/redist_plan.hpp"
#include "tessel/layout/redistribute.hpp"
#ifndef TESSEL_SMPI
#include "tessel/scalapack/pgemm.hpp"
#endif
#include "tessel/core/timer.hpp"

namespace tessel::app {
namespace {

using dense::DistMatrix;
using dense::Op;

struct GemmArgs {
  std::optional<std::int64_t> m, n, k;  // unset: from the files, else 1024
  std::string transa = "N", transb = "N", algorithm = "auto", dtype = "double";
  std::string layout = "block-cyclic", entry = "library";
  double alpha = 1.0, beta = 0.0, memory_mib = 0, delta = 0.15;
  int rounds = 0, repeat = 3, nb = 128;
  std::string grid, a, b, c, out, json, trace, machine, simulate_compute = "run";
  bool verify = false, explain = false;
  std::uint64_t seed = 42;
};

template <class T>
void fill_random(DistMatrix<T>& x, std::uint64_t seed, int which) {
  x.for_each_local([&](std::int64_t i, std::int64_t j, T& v) {
    if constexpr (std::is_same_v<T, double>)
      v = hashed(seed, which, i, j);
    else
      v = T(hashed(seed, which, i, j), hashed(seed, which + 10, i, j));
  });
}

std::pair<int, int> parse_grid(const std::string& g, int p) {
  if (g.empty()) return most_square_grid(p);
  const auto [pr, pc] = parse_grid_option(g);
  TESSEL_CHECK(static_cast<long long>(pr) * pc <= p, GridError, "--grid ", g, " needs ",
               static_cast<long long>(pr) * pc, " ranks, the run has ", p);
  return {pr, pc};
}

#ifndef TESSEL_SMPI  // the SMPI build has no ScaLAPACK (no BLACS, no p?gemm entry point)
extern "C" {
void Cblacs_get(int ctxt, int what, int* val);
void Cblacs_gridinit(int* ctxt, const char* order, int nprow, int npcol);
void Cblacs_gridexit(int ctxt);
}

// A BLACS grid pr x pc in row-major order over MPI_COMM_WORLD (the order of
// Layout::block_cyclic's default ranks); pr == 0: none. Ranks outside it get ctxt -1.
struct BlacsGrid {
  int ctxt = -1;
  BlacsGrid(int pr, int pc) {
    if (pr <= 0) return;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", pr, pc);
  }
  ~BlacsGrid() {
    if (ctxt >= 0) Cblacs_gridexit(ctxt);
  }
  BlacsGrid(const BlacsGrid&) = delete;
  BlacsGrid& operator=(const BlacsGrid&) = delete;
};

// The ScaLAPACK descriptor of a matrix in the --nb block-cyclic layout.
struct Descriptor {
  int d[9];
  template <class M>
  Descriptor(int ctxt, const M& x, int nb)
      : d{1, ctxt, static_cast<int>(x.rows()), static_cast<int>(x.cols()), nb, nb,
          0, 0,    static_cast<int>(x.ld())} {}
};
#endif

template <class T>
int run_gemm_typed(const GemmArgs& g) {
  ContextOptions copt = context_options_from_environment();
  copt.compute = simulate_compute_options(g.simulate_compute, g.verify).compute;
  Context ctx(MPI_COMM_WORLD, copt);
  const int p = ctx.size();
  const bool skip = ctx.compute() == ComputeMode::Skip;  // values meaningless, never read
  TESSEL_CHECK(!skip || (g.a.empty() && g.b.empty() && g.c.empty() && g.out.empty()), InputError,
               "--simulate-compute skip with a matrix file (--a, --b, --c or --out): the "
               "matrices are shared simulated memory, expected generated inputs and no --out");
  const Op opa = parse_named("--transa", g.transa, "N, T or C", dense::parse_op);
  const Op opb = parse_named("--transb", g.transb, "N, T or C", dense::parse_op);
  dense::MultiplyOptions opt;
  opt.algorithm =
      parse_named("--algorithm", g.algorithm, "auto, optimal or summa2d", dense::parse_algorithm);
  TESSEL_CHECK(g.memory_mib >= 0 && std::isfinite(g.memory_mib), InputError, "--memory ",
               g.memory_mib, ": expected MiB per rank >= 0 (0 = unlimited)");
  opt.memory_words = g.memory_mib * 1048576.0 / sizeof(T);
  TESSEL_CHECK(g.delta >= 0 && g.delta < 1, InputError, "--delta ", g.delta,
               ": expected a fraction in [0, 1)");
  TESSEL_CHECK(g.rounds >= 0, InputError, "--rounds ", g.rounds, ": expected >= 0 (0 = automatic)");
  TESSEL_CHECK(std::isfinite(g.alpha), InputError, "--alpha ", g.alpha,
               ": expected a finite number");
  TESSEL_CHECK(std::isfinite(g.beta), InputError, "--beta ", g.beta, ": expected a finite number");
  opt.delta = g.delta;
  opt.rounds = g.rounds;
  opt.machine = machine_model(ctx, g.machine);  // --machine > TESSEL_MACHINE > defaults
  opt.check_finite = g.verify;
  TESSEL_CHECK(g.repeat >= 1, InputError, "--repeat ", g.repeat, ": expected >= 1");
  TESSEL_CHECK(g.nb >= 1, LayoutMismatch, "--nb ", g.nb, ": block size must be >= 1");
  // Not a structured binding: C++17 lambdas cannot capture one (clang refuses; C++20 can).
  const std::pair<int, int> grid = parse_grid(g.grid, p);
  const int pr = grid.first, pc = grid.second;
  check_writable(ctx, "--out", g.out);
  check_writable(ctx, "--json", g.json);
  TraceRun trace(ctx, g.trace);
  auto bc = [&](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, g.nb, g.nb, pr, pc, 0, 0, p);
  };

  // Inputs: files, or layout-independent random matrices.
  std::optional<DistMatrix<T>> A, B, C;
  if (!g.a.empty()) A = io::read_npy<T>(ctx, g.a, bc);
  if (!g.b.empty()) B = io::read_npy<T>(ctx, g.b, bc);
  if (!g.c.empty()) C = io::read_npy<T>(ctx, g.c, bc);
  // Each of m, n, k comes from the first file that holds it, else from the option; `from`
  // records where, for the messages ("--a A.npy").
  struct Dim {
    std::int64_t value;
    std::string from;
  };
  auto pick = [](const std::optional<std::int64_t>& given, std::optional<std::int64_t> file,
                 const std::string& file_name, const char* name) -> Dim {
    if (given)
      TESSEL_CHECK(*given >= 0, DimensionMismatch, "--", name, " ", *given, ": expected >= 0");
    if (file && given)
      TESSEL_CHECK(*file == *given, DimensionMismatch, "--", name, " ", *given,
                   " disagrees with the input file ", file_name, ", where it is ", *file);
    if (file) return {*file, file_name};
    if (given) return {*given, std::string("--") + name};
    return {1024, std::string("the default of --") + name};
  };
  auto dim_of = [&](const std::optional<DistMatrix<T>>& x,
                    bool rows) -> std::optional<std::int64_t> {
    if (!x) return std::nullopt;
    return rows ? x->rows() : x->cols();
  };
  const std::string fa = "--a " + g.a, fb = "--b " + g.b, fc = "--c " + g.c;
  const Dim dm =
      A ? pick(g.m, dim_of(A, opa == Op::N), fa, "m") : pick(g.m, dim_of(C, true), fc, "m");
  const Dim dn =
      B ? pick(g.n, dim_of(B, opb != Op::N), fb, "n") : pick(g.n, dim_of(C, false), fc, "n");
  const Dim dk =
      A ? pick(g.k, dim_of(A, opa != Op::N), fa, "k") : pick(g.k, dim_of(B, opb == Op::N), fb, "k");
  const std::int64_t m = dm.value, n = dn.value, k = dk.value;
  const std::int64_t ar = opa == Op::N ? m : k, ac = opa == Op::N ? k : m;
  const std::int64_t br = opb == Op::N ? k : n, bcn = opb == Op::N ? n : k;
  TESSEL_CHECK(g.layout == "block-cyclic" || g.layout == "plan", InputError, "--layout '", g.layout,
               "': expected block-cyclic or plan");
  TESSEL_CHECK(g.entry == "library" || g.entry == "pdgemm", InputError, "--entry '", g.entry,
               "': expected library or pdgemm");
  TESSEL_CHECK(!(kSimulatedMpi && g.entry == "pdgemm"), InputError,
               "--entry pdgemm: this is the SMPI build of tessel, which has no ScaLAPACK and no "
               "ScaLAPACK-compatible entry point: expected --entry library");
  TESSEL_CHECK(!(g.entry == "pdgemm" && g.layout == "plan"), InputError,
               "--entry pdgemm takes ScaLAPACK descriptors: it needs --layout block-cyclic");
  const bool in_plan = g.layout == "plan";
  // Priced with the redistribution from and to the block-cyclic layouts the inputs start in
  // (multiply() plans the same way from the matrices' layouts).
  const dense::CallerLayouts caller{opa != Op::N, opb != Op::N, bc(ar, ac), bc(br, bcn), bc(m, n)};
  const dense::GemmPlan plan = [&] {
    try {
      return dense::plan_multiply(m, n, k, p, opt, in_plan ? nullptr : &caller,
                                  !std::is_same_v<T, double>);
    } catch (const GridError& e) {  // same on every rank: the plan is a pure function
      if (g.memory_mib <= 0) throw;
      throw GridError(detail::concat("--memory ", g.memory_mib, " (MiB per rank): ", e.what()));
    }
  }();
  // Generated inputs are made directly in the layout they start in (values do not depend on it).
  const auto L = dense::make_plan_layouts(plan, opa != Op::N, opb != Op::N, p);
  if (!A) {
    A.emplace(ctx, in_plan ? L.a : bc(ar, ac));
    if (!skip) fill_random(*A, g.seed, 1);
  }
  if (!B) {
    B.emplace(ctx, in_plan ? L.b : bc(br, bcn));
    if (!skip) fill_random(*B, g.seed, 2);
  }
  if (!C) {
    C.emplace(ctx, in_plan ? L.c : bc(m, n));
    if (g.beta != 0.0 && !skip) fill_random(*C, g.seed, 3);
  }
  // Only a file can disagree here (generated matrices get the shapes asked for).
  auto where = [&](const char* what) {
    return fmt::format("(m = {} from {}, n = {} from {}, k = {} from {}; {})", m, dm.from, n,
                       dn.from, k, dk.from, what);
  };
  TESSEL_CHECK(A->rows() == ar && A->cols() == ac, DimensionMismatch, fa, " is ", A->rows(), " x ",
               A->cols(), ", expected ", ar, " x ", ac, " ", where(("transa=" + g.transa).c_str()));
  TESSEL_CHECK(B->rows() == br && B->cols() == bcn, DimensionMismatch, fb, " is ", B->rows(), " x ",
               B->cols(), ", expected ", br, " x ", bcn, " ",
               where(("transb=" + g.transb).c_str()));
  TESSEL_CHECK(C->rows() == m && C->cols() == n, DimensionMismatch, fc, " is ", C->rows(), " x ",
               C->cols(), ", expected ", m, " x ", n, " ", where("C is m x n"));

  const bool root = ctx.rank() == 0;
  // Predicted words per rank: redistribution + plan, against 2D SUMMA on the input layouts.
  const auto pw = dense::predict_words(p, plan, opa, opb, A->layout(), B->layout(), C->layout());
  if (root) {
    std::cout
        << fmt::format("tessel gemm: C({} x {}) = {} op_{}(A) op_{}(B) + {} C, {} ranks, {}\n", m,
                       n, g.alpha, g.transa, g.transb, g.beta, p, g.dtype)
        << (skip ? kSkipNotice : "")
        << (in_plan ? std::string("inputs: in the plan's own layouts (--layout plan)\n")
                    : fmt::format("inputs: block-cyclic {} x {} blocks on a {} x {} grid\n", g.nb,
                                  g.nb, pr, pc))
        << "plan ("
        << (plan.kind == dense::PlanKind::CallerGrid
                ? std::string("summa2d on the caller's layout")
                : dense::to_string(opt.algorithm == dense::Algorithm::Auto
                                       ? dense::Algorithm::Optimal
                                       : opt.algorithm))
        << "):\n"
        << plan.to_string()
        << fmt::format(
               "  redistribution to/from the plan layouts: {} words per rank (max); plan + redistribution {} words\n",
               pw.redistribution, pw.optimal)
        << (pw.native >= 0
                ? fmt::format(
                      "  2D SUMMA on the input layout (no redistribution): {} words per rank (max)\n",
                      pw.native)
                : std::string(
                      "  2D SUMMA on the input layout: not applicable (layouts or ops differ)\n"));
  }
  if (g.explain &&
      root) {  // the redistribution plans (layout::RedistPlan) into and out of the plan layouts
    auto show = [&](const char* what, const layout::Layout& from, const layout::Layout& to) {
      std::cout << "  redistribution " << what
                << (layout::same_storage(from, to)
                        ? std::string(": none (same layout)\n")
                        : ":\n" + layout::explain_redistribution(from, to, 4, "    "));
    };
    show("A -> plan layout", A->layout(), L.a);
    show("B -> plan layout", B->layout(), L.b);
    show("plan layout -> C", L.c, C->layout());
  }
  if (g.explain) return trace.finish(0);

  if (in_plan) {  // files were read block-cyclic: move them (untimed) into the plan's layouts
    auto to_plan = [&](DistMatrix<T>& x, const layout::Layout& l) {
      if (!layout::same_storage(x.layout(), l)) x = dense::redistribute(ctx, x, l);
    };
    to_plan(*A, L.a);
    to_plan(*B, L.b);
    to_plan(*C, L.c);
  }
  // --entry pdgemm: the same multiply through the ScaLAPACK-compatible entry point, on a BLACS
  // grid matching the block-cyclic layout.
#ifdef TESSEL_SMPI
  auto run_once = [&]() -> dense::MultiplyReport {
    return dense::multiply(ctx, T(g.alpha), opa, *A, opb, *B, T(g.beta), *C, opt);
  };
#else
  BlacsGrid blacs(g.entry == "pdgemm" ? pr : 0, pc);
  auto run_once = [&]() -> dense::MultiplyReport {
    if (g.entry != "pdgemm")
      return dense::multiply(ctx, T(g.alpha), opa, *A, opb, *B, T(g.beta), *C, opt);
    dense::MultiplyReport r;
    if (blacs.ctxt < 0) return r;  // not in the BLACS grid
    Descriptor da(blacs.ctxt, *A, g.nb), db(blacs.ctxt, *B, g.nb), dc(blacs.ctxt, *C, g.nb);
    const int one = 1, im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
    const T al = T(g.alpha), be = T(g.beta);
    const std::string ta = g.transa.substr(0, 1), tb = g.transb.substr(0, 1);
    int rc = scalapack::pgemm<T>("tessel gemm --entry pdgemm", ta.c_str(), tb.c_str(), &im, &in,
                                 &ik, &al, A->data(), &one, &one, da.d, B->data(), &one, &one, db.d,
                                 &be, C->data(), &one, &one, dc.d, opt, &ctx.ledger(), &r);
    TESSEL_CHECK(rc == 0, InputError,
                 "--entry pdgemm: the ScaLAPACK-compatible entry point refused the call");
    return r;
  };
#endif

  // Keep the input C when beta != 0 so every repetition computes the same thing (not under
  // skip: C is shared simulated memory, its copy would be real memory).
  std::vector<T> c0;
  if (!skip) c0.assign(C->data(), C->data() + (C->data() ? C->local_rows() * C->local_cols() : 0));
  std::vector<double> times;
  const T alpha = T(g.alpha), beta = T(g.beta);
  // The ledger and a preloaded traffic counter both count exactly the timed multiplies.
  ctx.ledger().reset();
  comm::pcontrol(2);
  dense::MultiplyReport rep;
  for (int r = 0; r < g.repeat; ++r) {
    if (!skip) std::copy(c0.begin(), c0.end(), C->data());
    ctx.comm().barrier();
    const Stopwatch t0;
    rep = run_once();
    double t = t0.seconds();
    times.push_back(ctx.comm().allreduce_value(t, MPI_MAX));
  }
  comm::pcontrol(0);
  const double med = median(times);
  const double flops = (std::is_same_v<T, double> ? 2.0 : 8.0) * m * n * k;
  const auto stats = comm::ledger_stats(
      ctx.comm(), ctx.ledger(),
      {"gemm/redistribute A", "gemm/redistribute B", "gemm/rounds", "gemm/reduce C",
       "gemm/redistribute C", "gemm/summa", "gemm/redistribute", "gemm"},
      g.repeat);
  const double plan_recv_max = [&] {
    // rounds + reduce on the same rank: take the per-rank sum's max
    PhaseCounts t = ctx.ledger().total("gemm/rounds");
    t += ctx.ledger().total("gemm/reduce");
    t += ctx.ledger().total("gemm/summa");
    return ctx.comm().allreduce_value(static_cast<double>(t.recv_bytes()) / g.repeat, MPI_MAX);
  }();
  const double elem = sizeof(T);
  const double bound_bytes = plan.recv_bound_words() * elem;
  const double total_recv_max = ctx.comm().allreduce_value(
      static_cast<double>(ctx.ledger().total("gemm").recv_bytes()) / g.repeat, MPI_MAX);

  // Verification: Freivalds' check on rank 0 against serial arithmetic on the gathered data.
  std::string verdict = "not verified (use --verify)";
  double residual = -1;
  if (g.verify) {
    auto fa = dense::gather(ctx, *A), fb = dense::gather(ctx, *B), fc = dense::gather(ctx, *C);
    // the input C, kept in c0 with C's layout
    auto cview =
        DistMatrix<T>::view(C->layout(), ctx.rank(), c0.empty() ? nullptr : c0.data(), C->ld());
    auto fc0 = dense::gather(ctx, cview);
    if (root) {
      double worst = 0;
      for (int probe = 0; probe < 3; ++probe) {
        std::vector<T> x(static_cast<std::size_t>(n)), bx(static_cast<std::size_t>(k), T(0)),
            abx(static_cast<std::size_t>(m), T(0)), cx(static_cast<std::size_t>(m), T(0));
        for (std::int64_t j = 0; j < n; ++j) x[j] = T(hashed(g.seed + 7, probe, j, 0));
        auto at = [&](const std::vector<T>& f, std::int64_t ld, std::int64_t i, std::int64_t j,
                      Op op) {
          if (op == Op::N) return f[j * ld + i];
          T v = f[i * ld + j];
          if constexpr (!std::is_same_v<T, double>)
            if (op == Op::C) v = std::conj(v);
          return v;
        };
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t l = 0; l < k; ++l) bx[l] += at(fb, br, l, j, opb) * x[j];
        for (std::int64_t l = 0; l < k; ++l)
          for (std::int64_t i = 0; i < m; ++i) abx[i] += at(fa, ar, i, l, opa) * bx[l];
        double num = 0, den = 0;
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t i = 0; i < m; ++i)
            cx[i] += fc[j * m + i] * x[j] - (g.beta != 0.0 ? beta * fc0[j * m + i] * x[j] : T(0));
        for (std::int64_t i = 0; i < m; ++i) {
          num += std::norm(cx[i] - alpha * abx[i]);
          den += std::norm(alpha * abx[i]);
        }
        const double r = std::sqrt(num) / std::max(1e-300, std::sqrt(den));
        // A NaN/Inf result (e.g. overflow) must fail: std::max would drop a NaN.
        worst = std::isfinite(r) ? std::max(worst, r) : std::numeric_limits<double>::infinity();
      }
      residual = worst;
    }
    residual = ctx.comm().allreduce_value(residual, MPI_MAX);
    const double tol = 1e-12 * std::max<double>(1.0, std::sqrt(static_cast<double>(k)));
    verdict = fmt::format("{} (Freivalds, 3 probes: relative residual {:.2e}, tolerance {:.1e})",
                          residual <= tol ? "PASSED" : "FAILED", residual, tol);
  }

  if (root) {
    std::cout
        << "ran: " << rep.executed << "\n"
        << fmt::format("time: median {:.4f} s over {} runs (min {:.4f} s), {:.2f} GFLOP/s\n", med,
                       g.repeat, *std::min_element(times.begin(), times.end()), flops / med * 1e-9)
        << "bytes moved per rank, per multiply (received):\n"
        << ledger_table(stats)
        << fmt::format(
               "received per rank (max): multiply phases (rounds + reduce, or SUMMA) {}, "
               "with the redistribution {}; lower bound on what the busiest rank must receive "
               "{} -> ratios {:.3f} and {:.3f}\n",
               human_bytes(plan_recv_max), human_bytes(total_recv_max), human_bytes(bound_bytes),
               bound_bytes > 0 ? plan_recv_max / bound_bytes : 0.0,
               bound_bytes > 0 ? total_recv_max / bound_bytes : 0.0)
        << "verify: " << (skip ? std::string("not possible (--simulate-compute skip)") : verdict)
        << "\n"
        << (skip ? kSkipNotice : "");
  }
  const bool failed = g.verify && verdict.rfind("PASSED", 0) != 0;
  if (!g.out.empty() && failed && root)
    std::cerr << "tessel: --out " << g.out << " not written: the result failed --verify\n";
  if (!g.out.empty() && !failed) io::write_npy(ctx, g.out, *C);
  if (!g.json.empty()) {
    nlohmann::json j = run_header(ctx);
    j["command"] = "gemm";
    j["m"] = m;
    j["n"] = n;
    j["k"] = k;
    j["transa"] = g.transa;
    j["transb"] = g.transb;
    j["dtype"] = g.dtype;
    j["algorithm"] = dense::to_string(opt.algorithm);
    j["executed"] = rep.executed;
    j["predicted_words"] = {{"redistribution", pw.redistribution},
                            {"optimal", pw.optimal},
                            {"native_summa", pw.native}};
    j["plan"] = {{"grid", {plan.pm, plan.pn, plan.pk}},
                 {"used", plan.used()},
                 {"rounds", plan.rounds},
                 {"kind", plan.kind == dense::PlanKind::CallerGrid ? "caller_grid" : "grid"},
                 {"aligned", plan.kind == dense::PlanKind::Grid && plan.aligned()},
                 {"predicted_words", plan.cost.words()},
                 {"recv_words", plan.recv_words()},
                 {"memory_words_needed", plan.memory_words_needed()},
                 {"text", plan.to_string()}};
    j["bound_words"] = plan.bound_words();  // Theorem 2's words (inputs a rank holds included)
    j["recv_bound_words"] = plan.recv_bound_words();
    j["machine"] = nlohmann::json::parse(dense::machine_model_to_json(opt.machine));
    j["machine"]["source"] = opt.machine.source;
    j["predicted_time_s"] = {{"total", plan.cost.total_s()},
                             {"compute", plan.cost.compute_s},
                             {"rounds_transfer", plan.cost.rounds_bw_s},
                             {"rounds_latency", plan.cost.rounds_lat_s},
                             {"overlap", plan.cost.overlap_s},
                             {"reduce_transfer", plan.cost.reduce_bw_s},
                             {"reduce_latency", plan.cost.reduce_lat_s},
                             {"redistribution_transfer", plan.cost.redist_bw_s},
                             {"redistribution_latency", plan.cost.redist_lat_s},
                             {"redistribution_local", plan.cost.redist_local_s}};
    j["times_s"] = times;
    j["median_s"] = med;
    j["gflops"] = flops / med * 1e-9;
    j["ledger"] = ledger_json(stats);
    j["ledger"]["plan_recv_bytes"] = {{"max", plan_recv_max}};
    j["ledger"]["redistribution_recv_bytes"] = {{"max", stats[6].recv_bytes.max},
                                                {"mean", stats[6].recv_bytes.mean}};
    j["ledger"]["total_recv_bytes"] = {{"max", stats[7].recv_bytes.max},
                                       {"mean", stats[7].recv_bytes.mean}};
    j["ratio_to_bound"] = bound_bytes > 0 ? plan_recv_max / bound_bytes : 0.0;
    j["verify"] = {{"done", g.verify}, {"residual", residual}, {"text", verdict}};
    j["simulate_compute"] = to_string(ctx.compute());
    write_json(ctx, g.json, j);
  }
  return trace.finish((g.verify && verdict.rfind("PASSED", 0) != 0) ? 1 : 0);
}

}  // namespace

std::function<int()> add_gemm(CLI::App& app) {
  auto g = std::make_shared<GemmArgs>();
  CLI::App* s =
      app.add_subcommand("gemm", "Distributed C = alpha op(A) op(B) + beta C (collective)");
  s->add_option("--m", g->m, "Rows of C (default 1024, or from the files)");
  s->add_option("--n", g->n, "Columns of C (default 1024, or from the files)");
  s->add_option("--k", g->k, "Inner dimension (default 1024, or from the files)");
  s->add_option("--transa", g->transa, "op(A): N, T or C")->capture_default_str();
  s->add_option("--transb", g->transb, "op(B): N, T or C")->capture_default_str();
  s->add_option("--alpha", g->alpha, "alpha")->capture_default_str();
  s->add_option("--beta", g->beta, "beta (0: C is not read)")->capture_default_str();
  s->add_option("--algorithm", g->algorithm, "auto | optimal | summa2d")->capture_default_str();
  s->add_option("--memory", g->memory_mib,
                "Memory budget per rank in MiB for the plan (0 = unlimited)")
      ->capture_default_str();
  s->add_option("--delta", g->delta,
                "Most ranks that may idle (fraction), when that lowers the predicted time")
      ->capture_default_str();
  s->add_option("--machine", g->machine,
                "Machine file (JSON, see `tessel calibrate`) that prices the plans; default: "
                "$TESSEL_MACHINE, else built-in defaults");
  s->add_option("--rounds", g->rounds, "Sequential rounds over k (0 = automatic)")
      ->capture_default_str();
  s->add_option("--nb", g->nb, "Block size of the block-cyclic input/output layout")
      ->capture_default_str();
  s->add_option("--grid", g->grid,
                "Process grid PRxPC of the input/output layout (default: most square)");
  s->add_option("--dtype", g->dtype, "double | complex")->capture_default_str();
  s->add_option("--a", g->a, "A from a .npy file (float64 or complex128)");
  s->add_option("--b", g->b, "B from a .npy file");
  s->add_option("--c", g->c, "C from a .npy file (used with beta != 0)");
  s->add_option("--out", g->out, "Write C to this .npy file");
  s->add_option("--json", g->json, "Write the results as JSON to this file");
  add_trace_option(s, g->trace);
  s->add_option("--repeat", g->repeat, "Timed repetitions")->capture_default_str();
  s->add_option("--seed", g->seed, "Seed of the generated inputs")->capture_default_str();
  s->add_option("--layout", g->layout,
                "block-cyclic (the --nb/--grid layout) | plan (start from the plan's own layouts)")
      ->capture_default_str();
  s->add_option("--entry", g->entry,
                "library (tessel::dense::multiply) | pdgemm (the ScaLAPACK-compatible entry point)")
      ->capture_default_str();
  s->add_flag("--verify", g->verify, "Refuse NaN/Inf inputs and check the result (Freivalds)");
  s->add_flag("--explain", g->explain, "Print the plan and exit without multiplying");
  add_simulate_compute_option(s, g->simulate_compute);
  return [g]() -> int {
    if (g->dtype == "double") return run_gemm_typed<double>(*g);
    if (g->dtype == "complex") return run_gemm_typed<std::complex<double>>(*g);
    throw InputError("--dtype '" + g->dtype + "': expected double or complex");
  };
}

}  // namespace tessel::app

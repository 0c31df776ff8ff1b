// `tessel gemm`: a verified distributed multiply, with the plan, the time, and the bytes moved
// per rank against the Theorem 2 lower bound. run_gemm_typed: check the options -> the inputs
// (files or generated), their shapes and the plan -> the timed multiplies -> sums and --verify
// -> the report, --out, --json.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

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
  int rounds = 0, repeat = 3, nb = 128, plan_choice = 0;
  int shared_planning_from = dense::MultiplyOptions{}.shared_planning_from;
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
#else
// No ScaLAPACK: --entry pdgemm is refused before a grid would be made.
struct BlacsGrid {
  int ctxt = -1;
  BlacsGrid(int, int) {}
};
#endif

using LayoutOf = std::function<layout::Layout(std::int64_t, std::int64_t)>;

// ---- parse and validate (the same on every rank, so the checks throw together) ----

/// The checked options of a run.
struct Setup {
  Op opa = Op::N, opb = Op::N;
  dense::MultiplyOptions opt;
  int pr = 1, pc = 1;    // the grid of the block-cyclic input/output layout
  bool skip = false;     // --simulate-compute skip: values meaningless, never read
  bool in_plan = false;  // --layout plan
};

/// Not collective (reads --machine). The options of `g` on `ctx`'s ranks for elements of type
/// T: InputError (GridError for --grid, LayoutMismatch for --nb) naming the option.
template <class T>
Setup check_options(const Context& ctx, const GemmArgs& g) {
  Setup s;
  s.skip = ctx.compute() == ComputeMode::Skip;
  TESSEL_CHECK(!s.skip || (g.a.empty() && g.b.empty() && g.c.empty() && g.out.empty()), InputError,
               "--simulate-compute skip with a matrix file (--a, --b, --c or --out): the "
               "matrices are shared simulated memory, expected generated inputs and no --out");
  s.opa = parse_named("--transa", g.transa, "N, T or C", dense::parse_op);
  s.opb = parse_named("--transb", g.transb, "N, T or C", dense::parse_op);
  dense::MultiplyOptions& opt = s.opt;
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
  TESSEL_CHECK(g.plan_choice >= 0 && g.plan_choice <= 4, InputError, "--plan-choice ",
               g.plan_choice, ": expected 0 (the planner's best) .. 4");
  opt.plan_choice = g.plan_choice;
  TESSEL_CHECK(g.shared_planning_from >= 1, InputError, "--shared-planning-from ",
               g.shared_planning_from, ": expected a rank count >= 1");
  opt.shared_planning_from = g.shared_planning_from;
  opt.machine = machine_model(ctx, g.machine);  // --machine > TESSEL_MACHINE > defaults
  opt.check_finite = g.verify;
  TESSEL_CHECK(g.repeat >= 1, InputError, "--repeat ", g.repeat, ": expected >= 1");
  TESSEL_CHECK(g.nb >= 1, LayoutMismatch, "--nb ", g.nb, ": block size must be >= 1");
  std::tie(s.pr, s.pc) = parse_grid(g.grid, ctx.size());
  s.in_plan = g.layout == "plan";
  return s;
}

/// Pure. --layout and --entry (checked after the files are read).
void check_layout_options(const GemmArgs& g) {
  TESSEL_CHECK(g.layout == "block-cyclic" || g.layout == "plan", InputError, "--layout '", g.layout,
               "': expected block-cyclic or plan");
  TESSEL_CHECK(g.entry == "library" || g.entry == "pdgemm", InputError, "--entry '", g.entry,
               "': expected library or pdgemm");
  TESSEL_CHECK(!(kSimulatedMpi && g.entry == "pdgemm"), InputError,
               "--entry pdgemm: this is the SMPI build of tessel, which has no ScaLAPACK and no "
               "ScaLAPACK-compatible entry point: expected --entry library");
  TESSEL_CHECK(!(g.entry == "pdgemm" && g.layout == "plan"), InputError,
               "--entry pdgemm takes ScaLAPACK descriptors: it needs --layout block-cyclic");
}

// ---- input: the files, the shapes, the plan, the generated matrices ----

/// m, n or k, and where it came from, for the messages ("--a A.npy").
struct Dim {
  std::int64_t value = 0;
  std::string from;
};

/// Pure. A dimension from the first file that holds it (`file`, named `file_name`), else from
/// the option --`name` (`given`), else 1024: DimensionMismatch when the option is negative or
/// disagrees with the file.
Dim pick_dim(const std::optional<std::int64_t>& given, std::optional<std::int64_t> file,
             const std::string& file_name, const char* name) {
  if (given)
    TESSEL_CHECK(*given >= 0, DimensionMismatch, "--", name, " ", *given, ": expected >= 0");
  if (file && given)
    TESSEL_CHECK(*file == *given, DimensionMismatch, "--", name, " ", *given,
                 " disagrees with the input file ", file_name, ", where it is ", *file);
  if (file) return {*file, file_name};
  if (given) return {*given, std::string("--") + name};
  return {1024, std::string("the default of --") + name};
}

template <class T>
std::optional<std::int64_t> dim_of(const std::optional<DistMatrix<T>>& x, bool rows) {
  if (!x) return std::nullopt;
  return rows ? x->rows() : x->cols();
}

/// The matrices of a run and their shapes: C is m x n, op(A) m x k, op(B) k x n.
template <class T>
struct Operands {
  std::optional<DistMatrix<T>> A, B, C;
  Dim dm, dn, dk;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t ar = 0, ac = 0, br = 0, bcn = 0;  // A is ar x ac, B br x bcn
};

/// Collective. --a, --b, --c read block-cyclic (`bc`), then m, n, k from the files and the
/// options (DimensionMismatch naming both when they disagree).
template <class T>
Operands<T> read_operands(const Context& ctx, const GemmArgs& g, const Setup& s,
                          const LayoutOf& bc) {
  Operands<T> x;
  if (!g.a.empty()) x.A = io::read_npy<T>(ctx, g.a, bc);
  if (!g.b.empty()) x.B = io::read_npy<T>(ctx, g.b, bc);
  if (!g.c.empty()) x.C = io::read_npy<T>(ctx, g.c, bc);
  const std::string fa = "--a " + g.a, fb = "--b " + g.b, fc = "--c " + g.c;
  x.dm = x.A ? pick_dim(g.m, dim_of(x.A, s.opa == Op::N), fa, "m")
             : pick_dim(g.m, dim_of(x.C, true), fc, "m");
  x.dn = x.B ? pick_dim(g.n, dim_of(x.B, s.opb != Op::N), fb, "n")
             : pick_dim(g.n, dim_of(x.C, false), fc, "n");
  x.dk = x.A ? pick_dim(g.k, dim_of(x.A, s.opa != Op::N), fa, "k")
             : pick_dim(g.k, dim_of(x.B, s.opb == Op::N), fb, "k");
  x.m = x.dm.value;
  x.n = x.dn.value;
  x.k = x.dk.value;
  x.ar = s.opa == Op::N ? x.m : x.k;
  x.ac = s.opa == Op::N ? x.k : x.m;
  x.br = s.opb == Op::N ? x.k : x.n;
  x.bcn = s.opb == Op::N ? x.n : x.k;
  return x;
}

/// Collective from MultiplyOptions::shared_planning_from ranks up (the pricing split over the
/// ranks). The plan of the multiply, priced with the redistribution from and to the
/// block-cyclic layouts the inputs start in (multiply() plans the same way from the matrices'
/// layouts); none with --layout plan. A GridError under --memory names it.
template <class T>
dense::GemmPlan make_plan(Context& ctx, const GemmArgs& g, const Setup& s, const Operands<T>& x,
                          const LayoutOf& bc) {
  const dense::CallerLayouts caller{s.opa != Op::N, s.opb != Op::N, bc(x.ar, x.ac), bc(x.br, x.bcn),
                                    bc(x.m, x.n)};
  try {
    return dense::plan_multiply(ctx, x.m, x.n, x.k, s.opt, s.in_plan ? nullptr : &caller,
                                !std::is_same_v<T, double>);
  } catch (const GridError& e) {  // same on every rank: every rank fits every grid
    if (g.memory_mib <= 0) throw;
    throw GridError(detail::concat("--memory ", g.memory_mib, " (MiB per rank): ", e.what()));
  }
}

/// Not collective. The matrices no file gave, random and independent of the layout, made
/// directly in the layout they start in: the plan's (`L`, --layout plan) or block-cyclic.
template <class T>
void generate_missing(const Context& ctx, const GemmArgs& g, const Setup& s,
                      const dense::PlanLayouts& L, const LayoutOf& bc, Operands<T>& x) {
  if (!x.A) {
    x.A.emplace(ctx, s.in_plan ? L.a : bc(x.ar, x.ac));
    if (!s.skip) fill_random(*x.A, g.seed, 1);
  }
  if (!x.B) {
    x.B.emplace(ctx, s.in_plan ? L.b : bc(x.br, x.bcn));
    if (!s.skip) fill_random(*x.B, g.seed, 2);
  }
  if (!x.C) {
    x.C.emplace(ctx, s.in_plan ? L.c : bc(x.m, x.n));
    if (g.beta != 0.0 && !s.skip) fill_random(*x.C, g.seed, 3);
  }
}

/// Pure. The shapes of A, B and C against m, n, k: only a file can disagree here (generated
/// matrices get the shapes asked for); DimensionMismatch saying where m, n, k came from.
template <class T>
void check_shapes(const GemmArgs& g, const Operands<T>& x) {
  auto where = [&](const char* what) {
    return fmt::format("(m = {} from {}, n = {} from {}, k = {} from {}; {})", x.m, x.dm.from, x.n,
                       x.dn.from, x.k, x.dk.from, what);
  };
  const DistMatrix<T>&A = *x.A, &B = *x.B, &C = *x.C;
  TESSEL_CHECK(A.rows() == x.ar && A.cols() == x.ac, DimensionMismatch, "--a " + g.a, " is ",
               A.rows(), " x ", A.cols(), ", expected ", x.ar, " x ", x.ac, " ",
               where(("transa=" + g.transa).c_str()));
  TESSEL_CHECK(B.rows() == x.br && B.cols() == x.bcn, DimensionMismatch, "--b " + g.b, " is ",
               B.rows(), " x ", B.cols(), ", expected ", x.br, " x ", x.bcn, " ",
               where(("transb=" + g.transb).c_str()));
  TESSEL_CHECK(C.rows() == x.m && C.cols() == x.n, DimensionMismatch, "--c " + g.c, " is ",
               C.rows(), " x ", C.cols(), ", expected ", x.m, " x ", x.n, " ", where("C is m x n"));
}

/// Rank 0: the run's header, the inputs' layout, the plan and the predicted words per rank
/// (redistribution + plan, against 2D SUMMA on the input layouts).
void print_plan(const GemmArgs& g, const Setup& s, std::int64_t m, std::int64_t n, int p,
                const dense::GemmPlan& plan, const dense::PredictedWords& pw) {
  std::cout
      << fmt::format("tessel gemm: C({} x {}) = {} op_{}(A) op_{}(B) + {} C, {} ranks, {}\n", m, n,
                     g.alpha, g.transa, g.transb, g.beta, p, g.dtype)
      << (s.skip ? kSkipNotice : "")
      << (s.in_plan ? std::string("inputs: in the plan's own layouts (--layout plan)\n")
                    : fmt::format("inputs: block-cyclic {} x {} blocks on a {} x {} grid\n", g.nb,
                                  g.nb, s.pr, s.pc))
      << "plan ("
      << (plan.kind == dense::PlanKind::CallerGrid
              ? std::string("summa2d on the caller's layout")
              : dense::to_string(s.opt.algorithm == dense::Algorithm::Auto
                                     ? dense::Algorithm::Optimal
                                     : s.opt.algorithm))
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

/// Rank 0, --explain: the redistribution plans (layout::RedistPlan) into and out of the plan
/// layouts.
template <class T>
void print_redistributions(const Operands<T>& x, const dense::PlanLayouts& L) {
  auto show = [&](const char* what, const layout::Layout& from, const layout::Layout& to) {
    std::cout << "  redistribution " << what
              << (layout::same_storage(from, to)
                      ? std::string(": none (same layout)\n")
                      : ":\n" + layout::explain_redistribution(from, to, 4, "    "));
  };
  show("A -> plan layout", x.A->layout(), L.a);
  show("B -> plan layout", x.B->layout(), L.b);
  show("plan layout -> C", L.c, x.C->layout());
}

/// Collective. --layout plan: files were read block-cyclic; move them (untimed) into the
/// plan's layouts.
template <class T>
void to_plan_layouts(const Context& ctx, const dense::PlanLayouts& L, Operands<T>& x) {
  auto to_plan = [&](DistMatrix<T>& m, const layout::Layout& l) {
    if (!layout::same_storage(m.layout(), l)) m = dense::redistribute(ctx, m, l);
  };
  to_plan(*x.A, L.a);
  to_plan(*x.B, L.b);
  to_plan(*x.C, L.c);
}

// ---- run: the timed multiplies ----

/// One multiply C = alpha op(A) op(B) + beta C as the command runs it: dense::multiply, or with
/// --entry pdgemm the same multiply through the ScaLAPACK-compatible entry point on a BLACS
/// grid matching the block-cyclic layout (made by the constructor, collectively, and held for
/// the object's life).
template <class T>
class Multiply {
 public:
  Multiply(Context& ctx, const GemmArgs& g, const Setup& s, Operands<T>& x)
      : ctx_(ctx), g_(g), s_(s), x_(x), blacs_(g.entry == "pdgemm" ? s.pr : 0, s.pc) {}
  /// Collective.
  dense::MultiplyReport operator()() {
    if (g_.entry != "pdgemm")
      return dense::multiply(ctx_, T(g_.alpha), s_.opa, *x_.A, s_.opb, *x_.B, T(g_.beta), *x_.C,
                             s_.opt);
    return pdgemm();
  }

 private:
  /// Collective over the BLACS grid (nothing on the ranks outside it).
  dense::MultiplyReport pdgemm() {
    dense::MultiplyReport r;
#ifndef TESSEL_SMPI
    if (blacs_.ctxt < 0) return r;  // not in the BLACS grid
    DistMatrix<T>&A = *x_.A, &B = *x_.B, &C = *x_.C;
    Descriptor da(blacs_.ctxt, A, g_.nb), db(blacs_.ctxt, B, g_.nb), dc(blacs_.ctxt, C, g_.nb);
    const int one = 1, im = static_cast<int>(x_.m), in = static_cast<int>(x_.n),
              ik = static_cast<int>(x_.k);
    const T al = T(g_.alpha), be = T(g_.beta);
    const std::string ta = g_.transa.substr(0, 1), tb = g_.transb.substr(0, 1);
    int rc = scalapack::pgemm<T>("tessel gemm --entry pdgemm", ta.c_str(), tb.c_str(), &im, &in,
                                 &ik, &al, A.data(), &one, &one, da.d, B.data(), &one, &one, db.d,
                                 &be, C.data(), &one, &one, dc.d, s_.opt, &ctx_.ledger(), &r);
    TESSEL_CHECK(rc == 0, InputError,
                 "--entry pdgemm: the ScaLAPACK-compatible entry point refused the call");
#endif
    return r;
  }
  Context& ctx_;
  const GemmArgs& g_;
  const Setup& s_;
  Operands<T>& x_;
  BlacsGrid blacs_;
};

template <class T>
struct Timed {
  std::vector<T> c0;          // the input C (empty under skip)
  std::vector<double> times;  // per multiply, the largest over the ranks
  dense::MultiplyReport rep;  // of the last multiply
};

/// Collective. --repeat multiplies, each from the input C (kept when beta != 0 so every
/// repetition computes the same thing; not under skip: C is shared simulated memory, its copy
/// would be real memory). The ledger and a preloaded traffic counter count exactly these.
template <class T>
Timed<T> time_multiplies(Context& ctx, const GemmArgs& g, const Setup& s, DistMatrix<T>& C,
                         Multiply<T>& multiply) {
  Timed<T> t;
  if (!s.skip) t.c0.assign(C.data(), C.data() + (C.data() ? C.local_rows() * C.local_cols() : 0));
  ctx.ledger().reset();
  comm::pcontrol(2);
  for (int r = 0; r < g.repeat; ++r) {
    if (!s.skip) std::copy(t.c0.begin(), t.c0.end(), C.data());
    ctx.comm().barrier();
    const Stopwatch t0;
    t.rep = multiply();
    double seconds = t0.seconds();
    t.times.push_back(ctx.comm().allreduce_value(seconds, MPI_MAX));
  }
  comm::pcontrol(0);
  return t;
}

// ---- report: sums over the ranks, --verify, the text and the JSON ----

/// Times and bytes per multiply, over the ranks.
struct Totals {
  double med = 0, flops = 0;
  std::vector<comm::PhaseStats> stats;
  double plan_recv_max = 0;   // rounds + reduce (or SUMMA), max over ranks of their sum
  double total_recv_max = 0;  // with the redistribution
  double bound_bytes = 0;     // Theorem 2: what the busiest rank must receive
};

/// Collective.
template <class T>
Totals sum_over_ranks(const Context& ctx, const GemmArgs& g, const dense::GemmPlan& plan,
                      const Operands<T>& x, const Timed<T>& t) {
  Totals n;
  n.med = median(t.times);
  n.flops = (std::is_same_v<T, double> ? 2.0 : 8.0) * x.m * x.n * x.k;
  n.stats = comm::ledger_stats(
      ctx.comm(), ctx.ledger(),
      {"gemm/redistribute A", "gemm/redistribute B", "gemm/rounds", "gemm/reduce C",
       "gemm/redistribute C", "gemm/summa", "gemm/redistribute", "gemm"},
      g.repeat);
  // rounds + reduce on the same rank: take the per-rank sum's max
  PhaseCounts c = ctx.ledger().total("gemm/rounds");
  c += ctx.ledger().total("gemm/reduce");
  c += ctx.ledger().total("gemm/summa");
  n.plan_recv_max =
      ctx.comm().allreduce_value(static_cast<double>(c.recv_bytes()) / g.repeat, MPI_MAX);
  n.bound_bytes = plan.recv_bound_words() * static_cast<double>(sizeof(T));
  n.total_recv_max = ctx.comm().allreduce_value(
      static_cast<double>(ctx.ledger().total("gemm").recv_bytes()) / g.repeat, MPI_MAX);
  return n;
}

struct Verdict {
  std::string text = "not verified (use --verify)";
  double residual = -1;
};

/// Element (i, j) of op(F) for F stored column-major with leading dimension ld.
template <class T>
T op_element(const std::vector<T>& f, std::int64_t ld, std::int64_t i, std::int64_t j, Op op) {
  if (op == Op::N) return f[j * ld + i];
  T v = f[i * ld + j];
  if constexpr (!std::is_same_v<T, double>)
    if (op == Op::C) v = std::conj(v);
  return v;
}

/// Not collective. Freivalds' check on the gathered A, B, C and the input C0: the largest over
/// 3 random probes x of ||C x - beta C0 x - alpha op(A) (op(B) x)|| / ||alpha op(A) op(B) x||
/// (infinity when one is not finite).
template <class T>
double freivalds_residual(const GemmArgs& g, const Setup& s, const Operands<T>& x,
                          const std::vector<T>& fa, const std::vector<T>& fb,
                          const std::vector<T>& fc, const std::vector<T>& fc0) {
  const std::int64_t m = x.m, n = x.n, k = x.k;
  const T alpha = T(g.alpha), beta = T(g.beta);
  double worst = 0;
  for (int probe = 0; probe < 3; ++probe) {
    std::vector<T> v(static_cast<std::size_t>(n)), bx(static_cast<std::size_t>(k), T(0)),
        abx(static_cast<std::size_t>(m), T(0)), cx(static_cast<std::size_t>(m), T(0));
    for (std::int64_t j = 0; j < n; ++j) v[j] = T(hashed(g.seed + 7, probe, j, 0));
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t l = 0; l < k; ++l) bx[l] += op_element(fb, x.br, l, j, s.opb) * v[j];
    for (std::int64_t l = 0; l < k; ++l)
      for (std::int64_t i = 0; i < m; ++i) abx[i] += op_element(fa, x.ar, i, l, s.opa) * bx[l];
    double num = 0, den = 0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        cx[i] += fc[j * m + i] * v[j] - (g.beta != 0.0 ? beta * fc0[j * m + i] * v[j] : T(0));
    for (std::int64_t i = 0; i < m; ++i) {
      num += std::norm(cx[i] - alpha * abx[i]);
      den += std::norm(alpha * abx[i]);
    }
    const double r = std::sqrt(num) / std::max(1e-300, std::sqrt(den));
    // A NaN/Inf result (e.g. overflow) must fail: std::max would drop a NaN.
    worst = std::isfinite(r) ? std::max(worst, r) : std::numeric_limits<double>::infinity();
  }
  return worst;
}

/// Collective. --verify: Freivalds' check on rank 0 against serial arithmetic on the gathered
/// data (the input C kept in `c0`, with C's layout; viewed, not written).
template <class T>
Verdict verify_freivalds(const Context& ctx, const GemmArgs& g, const Setup& s,
                         const Operands<T>& x, std::vector<T>& c0) {
  const DistMatrix<T>& C = *x.C;
  auto fa = dense::gather(ctx, *x.A), fb = dense::gather(ctx, *x.B), fc = dense::gather(ctx, C);
  auto cview =
      DistMatrix<T>::view(C.layout(), ctx.rank(), c0.empty() ? nullptr : c0.data(), C.ld());
  auto fc0 = dense::gather(ctx, cview);
  Verdict v;
  if (ctx.rank() == 0) v.residual = freivalds_residual(g, s, x, fa, fb, fc, fc0);
  v.residual = ctx.comm().allreduce_value(v.residual, MPI_MAX);
  const double tol = 1e-12 * std::max<double>(1.0, std::sqrt(static_cast<double>(x.k)));
  v.text = fmt::format("{} (Freivalds, 3 probes: relative residual {:.2e}, tolerance {:.1e})",
                       v.residual <= tol ? "PASSED" : "FAILED", v.residual, tol);
  return v;
}

/// Rank 0: what ran, the times, the bytes per rank against the lower bound, the verdict.
void print_results(const GemmArgs& g, const Setup& s, const dense::MultiplyReport& rep,
                   const std::vector<double>& times, const Totals& n, const Verdict& v) {
  std::cout << "ran: " << rep.executed << "\n"
            << fmt::format("time: median {:.4f} s over {} runs (min {:.4f} s), {:.2f} GFLOP/s\n",
                           n.med, g.repeat, *std::min_element(times.begin(), times.end()),
                           n.flops / n.med * 1e-9)
            << "bytes moved per rank, per multiply (received):\n"
            << ledger_table(n.stats)
            << fmt::format(
                   "received per rank (max): multiply phases (rounds + reduce, or SUMMA) {}, "
                   "with the redistribution {}; lower bound on what the busiest rank must receive "
                   "{} -> ratios {:.3f} and {:.3f}\n",
                   human_bytes(n.plan_recv_max), human_bytes(n.total_recv_max),
                   human_bytes(n.bound_bytes),
                   n.bound_bytes > 0 ? n.plan_recv_max / n.bound_bytes : 0.0,
                   n.bound_bytes > 0 ? n.total_recv_max / n.bound_bytes : 0.0)
            << "verify: "
            << (s.skip ? std::string("not possible (--simulate-compute skip)") : v.text) << "\n"
            << (s.skip ? kSkipNotice : "");
}

/// The --json fields that describe the run: shapes, options, the plan and its predictions.
template <class T>
nlohmann::json run_json(const Context& ctx, const GemmArgs& g, const Setup& s, const Operands<T>& x,
                        const dense::GemmPlan& plan, const dense::PredictedWords& pw) {
  nlohmann::json j = run_header(ctx);
  j.update({{"command", "gemm"},
            {"m", x.m},
            {"n", x.n},
            {"k", x.k},
            {"transa", g.transa},
            {"transb", g.transb},
            {"dtype", g.dtype}});
  j["algorithm"] = dense::to_string(s.opt.algorithm);
  j["predicted_words"] = {
      {"redistribution", pw.redistribution}, {"optimal", pw.optimal}, {"native_summa", pw.native}};
  j["plan"] = {{"grid", {plan.pm, plan.pn, plan.pk}},
               {"used", plan.used()},
               {"rounds", plan.rounds},
               {"choice", plan.choice},  // --plan-choice: 0 the best, k the k-th runner-up
               {"kind", plan.kind == dense::PlanKind::CallerGrid ? "caller_grid" : "grid"},
               {"aligned", plan.kind == dense::PlanKind::Grid && plan.aligned()},
               {"predicted_words", plan.cost.words()},
               {"recv_words", plan.recv_words()},
               {"memory_words_needed", plan.memory_words_needed()},
               {"text", plan.to_string()}};
  j["bound_words"] = plan.bound_words();  // Theorem 2's words (inputs a rank holds included)
  j["recv_bound_words"] = plan.recv_bound_words();
  j["machine"] = nlohmann::json::parse(dense::machine_model_to_json(s.opt.machine));
  j["machine"]["source"] = s.opt.machine.source;
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
  j["simulate_compute"] = to_string(ctx.compute());
  return j;
}

/// The --json fields of the results: times, the ledger against the bound, the verdict.
void add_results_json(nlohmann::json& j, bool verify, const dense::MultiplyReport& rep,
                      const std::vector<double>& times, const Totals& n, const Verdict& v) {
  j["executed"] = rep.executed;
  j["times_s"] = times;
  j["median_s"] = n.med;
  j["gflops"] = n.flops / n.med * 1e-9;
  j["ledger"] = ledger_json(n.stats);
  j["ledger"]["plan_recv_bytes"] = {{"max", n.plan_recv_max}};
  j["ledger"]["redistribution_recv_bytes"] = {{"max", n.stats[6].recv_bytes.max},
                                              {"mean", n.stats[6].recv_bytes.mean}};
  j["ledger"]["total_recv_bytes"] = {{"max", n.stats[7].recv_bytes.max},
                                     {"mean", n.stats[7].recv_bytes.mean}};
  j["ratio_to_bound"] = n.bound_bytes > 0 ? n.plan_recv_max / n.bound_bytes : 0.0;
  j["verify"] = {{"done", verify}, {"residual", v.residual}, {"text", v.text}};
}

/// Collective: check the options -> the inputs, their shapes and the plan (--explain stops
/// here) -> the timed multiplies -> sums, --verify -> the report, --out, --json.
template <class T>
int run_gemm_typed(const GemmArgs& g) {
  ContextOptions copt = context_options_from_environment();
  copt.compute = simulate_compute_options(g.simulate_compute, g.verify).compute;
  Context ctx(MPI_COMM_WORLD, copt);
  const int p = ctx.size();
  const bool root = ctx.rank() == 0;
  Setup s = check_options<T>(ctx, g);
  check_writable(ctx, "--out", g.out);
  check_writable(ctx, "--json", g.json);
  TraceRun trace(ctx, g.trace);
  const LayoutOf bc = [&g, &s, p](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, g.nb, g.nb, s.pr, s.pc, 0, 0, p);
  };

  Operands<T> x = read_operands<T>(ctx, g, s, bc);
  check_layout_options(g);
  const dense::GemmPlan plan = make_plan(ctx, g, s, x, bc);
  const auto L = dense::make_plan_layouts(plan, s.opa != Op::N, s.opb != Op::N, p);
  generate_missing(ctx, g, s, L, bc, x);
  check_shapes(g, x);
  // For rank 0's report only: O(p) redistribution plans (2,048 ranks each computing it took
  // most of a simulated --explain's wall time).
  const auto pw = root ? dense::predict_words(p, plan, s.opa, s.opb, x.A->layout(), x.B->layout(),
                                              x.C->layout())
                       : dense::PredictedWords{};
  if (root) print_plan(g, s, x.m, x.n, p, plan, pw);
  if (g.explain && root) print_redistributions(x, L);
  if (g.explain) return trace.finish(0);

  if (s.in_plan) {
    to_plan_layouts(ctx, L, x);
    s.opt.plan = plan;  // the plan printed (and its --plan-choice) is the plan run
  }
  Multiply<T> multiply(ctx, g, s, x);
  Timed<T> t = time_multiplies(ctx, g, s, *x.C, multiply);
  const Totals n = sum_over_ranks(ctx, g, plan, x, t);
  const Verdict v = g.verify ? verify_freivalds(ctx, g, s, x, t.c0) : Verdict{};

  if (root) print_results(g, s, t.rep, t.times, n, v);
  const bool failed = g.verify && v.text.rfind("PASSED", 0) != 0;
  if (!g.out.empty() && failed && root)
    std::cerr << "tessel: --out " << g.out << " not written: the result failed --verify\n";
  if (!g.out.empty() && !failed) io::write_npy(ctx, g.out, *x.C);
  if (!g.json.empty()) {
    nlohmann::json j = run_json(ctx, g, s, x, plan, pw);
    add_results_json(j, g.verify, t.rep, t.times, n, v);
    write_json(ctx, g.json, j);
  }
  return trace.finish(failed ? 1 : 0);
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
  s->add_option("--plan-choice", g->plan_choice,
                "Run the planner's k-th runner-up instead of its best plan (0 = the best, up to "
                "4): to measure how well the cost model ranks plans (docs/gemm.md)")
      ->capture_default_str();
  s->add_option("--shared-planning-from", g->shared_planning_from,
                "From this many ranks up the ranks split the planner's pricing and meet in two "
                "small reductions (the same plan as planning alone on every rank; docs/gemm.md)")
      ->capture_default_str();
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

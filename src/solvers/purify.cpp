// The purification driver around SymmSquareCube, shared by every method (the methods'
// starting guesses and polynomial steps are in purify_steps.cpp): the iteration runs on the
// p^3 active ranks (D lives on plane 0), the inactive ranks wait in SymmSquareCube::release().
#include "tessel/solvers/purify.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "purify_steps.hpp"
#include "ssc_algebra.hpp"
#include "tessel/solvers/density.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::solvers {
namespace {

struct Failure {
  bool input = false;
  std::string msg;
};

}  // namespace

std::string to_string(PurifyMethod m) {
  switch (m) {
    case PurifyMethod::Canonical: return "canonical";
    case PurifyMethod::McWeeny: return "mcweeny";
    case PurifyMethod::Trs2: return "trs2";
    case PurifyMethod::Trs4: return "trs4";
  }
  return "?";
}

PurifyMethod parse_purify_method(const std::string& s, const std::string& what) {
  for (auto m :
       {PurifyMethod::Canonical, PurifyMethod::McWeeny, PurifyMethod::Trs2, PurifyMethod::Trs4})
    if (s == to_string(m)) return m;
  throw InputError(
      detail::concat(what, " = '", s, "' (expected canonical, mcweeny, trs2 or trs4)"));
}

namespace {

// The active ranks' part: purify_generic (the purification code shared with the dense and
// block-sparse algebras, purify_generic.cpp) on the SymmSquareCube algebra of plane 0
// (ssc_algebra.hpp). Returns the failure, if any; fills `stats` (meaningful on context rank 0).
struct Stats {
  double iterations = 0, idempotency = 0, trace_error = 0, band_energy = 0, products = 0,
         stopped = 0;
  double ssc_seconds = 0;
};

// A resumed iterate (and best iterate) on plane 0, redistributed on every rank beforehand.
struct ResumeOnPlane0 {
  const PurifyState* state = nullptr;
  SscMatrix x, best;
};

std::optional<Failure> iterate(const Context& ctx, dense::SymmSquareCube& ssc,
                               const dense::DistMatrix<double>& f, dense::DistMatrix<double>& d,
                               std::int64_t nocc, const PurifyOptions& opt,
                               const ResumeOnPlane0& resume, Stats& st) {
  Algebra<SscMatrix> alg(ctx, ssc);
  SscMatrix fm = alg.copy(SscMatrix{
      dense::DistMatrix<double>::view(ssc.plane0(), f.rank(), const_cast<double*>(f.data()),
                                      std::max<std::int64_t>(1, f.local_rows()))});
  ProgressFn step;
  if (opt.on_step)
    step = [&](const IterationInfo& i) {
      PurifyStep ps;
      ps.iteration = i.iteration;
      ps.idempotency_error = i.residual;
      ps.trace = i.occupation / 2;
      ps.band_energy = i.band_energy;
      ps.seconds = i.seconds;
      // The user's callback may throw on some active ranks only: agreed, so that every
      // active rank leaves the iteration with the same error (held and agreed below).
      agree_on(ssc.mesh().global(), [&] { opt.on_step(ps); });
    };
  PurifyCheckpointing<SscMatrix> ck;
  ck.every = opt.checkpoint_every;
  ck.stop_after = opt.stop_after;
  if (opt.on_checkpoint)
    ck.on_checkpoint = [&](const PurifyState& s, const SscMatrix& x, const SscMatrix* best) {
      opt.on_checkpoint(ssc.mesh().global(), s, x.m, best ? &best->m : nullptr);
    };
  if (resume.state) {
    ck.resume = resume.state;
    ck.resume_x = &resume.x;
    ck.resume_best = resume.state->has_best ? &resume.best : nullptr;
  }
  auto r = purify_generic(alg, fm, nocc, opt.method, opt.mu, opt.tol, opt.max_iter, step,
                          opt.stall_window, ck);
  std::copy(r.X.m.data(), r.X.m.data() + f.local_rows() * f.local_cols(), d.data());
  st.iterations = r.iterations;
  st.idempotency = r.idempotency_error;
  st.trace_error = std::abs(r.trace - static_cast<double>(nocc));
  st.band_energy = r.band_energy;
  st.products = static_cast<double>(r.products);
  st.ssc_seconds = alg.ssc_seconds();
  st.stopped = r.stopped ? 1 : 0;
  if (opt.method == PurifyMethod::McWeeny && !r.stopped && st.trace_error > 1e-6)
    return Failure{
        true,
        detail::concat("purify: mcweeny: mu = ", *opt.mu,
                       " is not inside the HOMO-LUMO gap at nocc = ", nocc, ": tr D = ", r.trace,
                       " states lie below mu (expected mu between the HOMO and the LUMO)")};
  return std::nullopt;
}

}  // namespace

namespace steps {

void check_options(const PurifyOptions& opt, std::int64_t n, std::int64_t nocc) {
  TESSEL_CHECK(nocc > 0 && nocc < n, InputError, "purify: nocc = ", nocc,
               " (expected 1 .. n-1 = ", n - 1, ")");
  TESSEL_CHECK(opt.tol > 0 && std::isfinite(opt.tol), InputError, "purify: tol = ", opt.tol,
               " (expected > 0)");
  TESSEL_CHECK(opt.max_iter >= 1, InputError, "purify: max_iter = ", opt.max_iter,
               " (expected >= 1)");
  TESSEL_CHECK(opt.stall_window >= 2, InputError, "purify: stall_window = ", opt.stall_window,
               " (expected >= 2)");
  TESSEL_CHECK(opt.method != PurifyMethod::McWeeny || opt.mu.has_value(), InputError,
               "purify: mcweeny needs the chemical potential mu inside the HOMO-LUMO gap: "
               "set PurifyOptions::mu (e.g. (HOMO + LUMO)/2); it cannot be bounded from F alone");
  TESSEL_CHECK(!opt.mu || std::isfinite(*opt.mu), InputError, "purify: mu = ", *opt.mu,
               " (expected a finite energy inside the HOMO-LUMO gap)");
}

void check_resume(const PurifyState& st, bool have_x, bool have_best) {
  const auto k = static_cast<std::size_t>(std::max(0, st.iteration));
  TESSEL_CHECK(st.iteration >= 1, InputError, "purify: resume at step ", st.iteration,
               " (expected >= 1: a checkpoint is written after a step)");
  TESSEL_CHECK(st.coefficients.size() == 4 * k && st.history.size() == k, InputError,
               "purify: resume at step ", st.iteration, " with ", st.coefficients.size(),
               " step coefficients and ", st.history.size(), " residuals (expected ", 4 * k,
               " and ", k, ")");
  TESSEL_CHECK(st.best_iteration >= 0 && st.best_iteration < st.iteration && st.behind >= 0,
               InputError, "purify: resume at step ", st.iteration, " with best step ",
               st.best_iteration, " and ", st.behind, " steps behind (expected 0 .. ",
               st.iteration - 1, ")");
  TESSEL_CHECK(std::isfinite(st.hmin) && std::isfinite(st.hmax) && std::isfinite(st.trace_f) &&
                   std::isfinite(st.start_a) && std::isfinite(st.start_b),
               InputError, "purify: resume state has non-finite bounds or start (hmin ", st.hmin,
               ", hmax ", st.hmax, ", tr ", st.trace_f, ", a ", st.start_a, ", b ", st.start_b,
               ")");
  TESSEL_CHECK(have_x, InputError, "purify: resume state without the iterate X");
  TESSEL_CHECK(!st.has_best || have_best, InputError,
               "purify: resume state says it keeps the best iterate, but none is given");
}

}  // namespace steps

namespace {

// Collective. The input checks of purify (the same error on every rank).
void validate(Context& ctx, const dense::DistMatrix<double>& F, std::int64_t nocc,
              const PurifyOptions& opt) {
  const std::int64_t n = F.rows();
  ctx.agree([&] {
    TESSEL_CHECK(F.rows() == F.cols(), DimensionMismatch, "purify: F is ", F.rows(), " x ",
                 F.cols(), " (expected square)");
    TESSEL_CHECK(F.layout().comm_size() == ctx.size(), LayoutMismatch,
                 "purify: F's layout is over ", F.layout().comm_size(),
                 " ranks but the context has ", ctx.size());
    steps::check_options(opt, n, nocc);
    if (opt.resume) {
      const auto& r = *opt.resume;
      TESSEL_CHECK(r.X.rows() == n && r.X.cols() == n && r.X.layout().comm_size() == ctx.size(),
                   DimensionMismatch, "purify: the resumed iterate is ", r.X.rows(), " x ",
                   r.X.cols(), " over ", r.X.layout().comm_size(), " ranks (expected ", n, " x ", n,
                   " over ", ctx.size(), ", as F)");
      TESSEL_CHECK(!r.state.has_best || (r.best.rows() == n && r.best.cols() == n &&
                                         r.best.layout().comm_size() == ctx.size()),
                   DimensionMismatch, "purify: the resumed best iterate is ", r.best.rows(), " x ",
                   r.best.cols(), " (expected ", n, " x ", n, " over ", ctx.size(),
                   " ranks, as F)");
    }
  });
}

// Collective. A resumed iterate (and best iterate) moved bit for bit onto plane 0.
ResumeOnPlane0 resume_on_plane0(Context& ctx, const dense::SymmSquareCube& ssc,
                                const PurifyOptions& opt, const layout::RedistOptions& moves) {
  ResumeOnPlane0 resume;
  if (!opt.resume) return resume;
  PhaseScope ph(ctx.ledger(), "purify/redistribute in");
  resume.state = &opt.resume->state;
  resume.x.m = dense::redistribute(ctx, opt.resume->X, ssc.plane0(), moves);
  if (opt.resume->state.has_best)
    resume.best.m = dense::redistribute(ctx, opt.resume->best, ssc.plane0(), moves);
  return resume;
}

// The iteration on the active ranks (none elsewhere). An error thrown on the active ranks
// alone is held, returned, until every rank has passed release() (the inactive ranks wait
// there) and then agreed (agree_outcome).
std::optional<Failure> iterate_held(Context& ctx, dense::SymmSquareCube& ssc,
                                    const dense::DistMatrix<double>& f,
                                    dense::DistMatrix<double>& d, std::int64_t nocc,
                                    const PurifyOptions& opt, const ResumeOnPlane0& resume,
                                    Stats& st) {
  if (!ssc.mesh().active()) return std::nullopt;
  PhaseScope ph(ctx.ledger(), "purify/iterate");
  try {
    return iterate(ctx, ssc, f, d, nocc, opt, resume, st);
  } catch (const InputError& e) { return Failure{true, e.what()}; } catch (const Error& e) {
    return Failure{false, e.what()};
  } catch (const std::exception& e) { return Failure{false, detail::concat("purify: ", e.what())}; }
}

// Collective, after release(): the failure, if any, thrown on every rank; else the statistics
// of rank 0 (an active rank) to every rank, the slowest SymmSquareCube time.
void agree_outcome(Context& ctx, const layout::Mesh3D& m, const std::optional<Failure>& fail,
                   Stats& st) {
  double stats[6] = {st.iterations,  st.idempotency, st.trace_error,
                     st.band_energy, st.products,    st.stopped};
  PhaseScope ph(ctx.ledger(), "purify/result");
  ctx.agree([&] {
    if (fail && fail->input) throw InputError(fail->msg);
    if (fail) throw Error(fail->msg);
  });
  if (m.inactive_ranks() > 0) ctx.comm().bcast(stats, 6, 0);
  st.ssc_seconds = ctx.comm().allreduce_value(st.ssc_seconds, MPI_MAX);
  st.iterations = stats[0];
  st.idempotency = stats[1];
  st.trace_error = stats[2];
  st.band_energy = stats[3];
  st.products = stats[4];
  st.stopped = stats[5];
}

// The result's numbers from the agreed statistics.
void fill_result(const Stats& st, std::int64_t n, const PurifyOptions& opt,
                 const dense::SymmSquareCube& ssc, PurifyResult& out) {
  const double nd = static_cast<double>(n);
  out.iterations = static_cast<int>(st.iterations);
  out.idempotency_error = st.idempotency;
  out.trace_error = st.trace_error;
  out.band_energy = st.band_energy;
  out.flops = st.products * 2 * nd * nd * nd;
  out.stopped = st.stopped != 0;
  out.ssc_seconds = st.ssc_seconds;
  out.method = opt.method;
  out.p = ssc.p();
  out.n_dup = ssc.n_dup();
  out.mesh = ssc.mesh().describe();
}

}  // namespace

PurifyResult purify(Context& ctx, const dense::DistMatrix<double>& F, std::int64_t nocc,
                    const PurifyOptions& opt) {
  validate(ctx, F, nocc, opt);
  const std::int64_t n = F.rows();
  const Stopwatch t0;
  dense::SymmSquareCube ssc(ctx, n, opt.ssc);
  layout::RedistOptions moves;  // node-shared moves to/from the active ranks (SscOptions)
  moves.node_shared = opt.ssc.shm_moves && ssc.mesh().inactive_ranks() > 0;
  dense::DistMatrix<double> f;
  {
    PhaseScope ph(ctx.ledger(), "purify/redistribute in");
    f = dense::redistribute(ctx, F, ssc.plane0(), moves);
  }
  {
    PhaseScope ph(ctx.ledger(), "purify/validate");
    ssc.check_input(f.data(), opt.symmetry_tol, "purify", "F");
  }
  const ResumeOnPlane0 resume = resume_on_plane0(ctx, ssc, opt, moves);
  dense::DistMatrix<double> d(ctx, ssc.plane0());
  Stats st;
  const std::optional<Failure> fail = iterate_held(ctx, ssc, f, d, nocc, opt, resume, st);
  ssc.release();
  agree_outcome(ctx, ssc.mesh(), fail, st);
  PurifyResult out;
  out.seconds = t0.seconds();
  {
    PhaseScope ph(ctx.ledger(), "purify/redistribute out");
    out.D = dense::redistribute(ctx, d, F.layout(), moves);
  }
  fill_result(st, n, opt, ssc, out);
  return out;
}

}  // namespace tessel::solvers

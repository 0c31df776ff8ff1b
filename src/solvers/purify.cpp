// The purification driver around SymmSquareCube, shared by every method (the methods'
// starting guesses and polynomial steps are in purify_steps.cpp): the iteration runs on the
// p^3 active ranks (D lives on plane 0), the inactive ranks wait in SymmSquareCube::release().
#include "tessel/solvers/purify.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "purify_steps.hpp"

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
  for (auto m : {PurifyMethod::Canonical, PurifyMethod::McWeeny, PurifyMethod::Trs2, PurifyMethod::Trs4})
    if (s == to_string(m)) return m;
  throw InputError(detail::concat(what, " = '", s, "' (expected canonical, mcweeny, trs2 or trs4)"));
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The active ranks' part: Gershgorin bounds, the starting guess and the iteration on the
// plane-0 blocks. Returns the failure, if any; fills `stats` (meaningful on context rank 0).
// Below kFloor, kFloorSteps steps without a new lowest ||D - D^2||_F mean the rounding floor.
constexpr double kFloor = 1e-6;
constexpr int kFloorSteps = 3;

struct Stats {
  double iterations = 0, idempotency = 0, trace_error = 0, band_energy = 0, products = 0;
  double ssc_seconds = 0;
};

std::optional<Failure> iterate(const Context& ctx, dense::SymmSquareCube& ssc, const dense::DistMatrix<double>& f,
                               dense::DistMatrix<double>& d, std::int64_t nocc,
                               const PurifyOptions& opt, Stats& st) {
  const auto& m = ssc.mesh();
  const auto& g = m.global();
  const std::int64_t n = ssc.n();
  const bool plane0 = m.k() == 0;
  const int bi = m.i(), bj = m.j();
  const std::int64_t ri = ssc.block(bi), rj = ssc.block(bj);
  const std::int64_t i0 = layout::split_begin(n, m.p(), bi), j0 = layout::split_begin(n, m.p(), bj);
  const std::int64_t len = plane0 ? ri * rj : 0;
  const bool diag = plane0 && bi == bj;
  // Gershgorin bounds and the trace of F: row sums of |F_ij| (j != i) and the diagonal.
  std::vector<double> rs(static_cast<std::size_t>(2 * n), 0.0);
  if (plane0)
    for (std::int64_t c = 0; c < rj; ++c)
      for (std::int64_t r = 0; r < ri; ++r) {
        double v = f.data()[c * ri + r];
        if (i0 + r == j0 + c) rs[static_cast<std::size_t>(n + i0 + r)] = v;
        else rs[static_cast<std::size_t>(i0 + r)] += std::abs(v);
      }
  g.allreduce(rs.data(), static_cast<int>(2 * n), MPI_SUM);
  steps::Bounds b;
  b.n = n;
  b.nocc = nocc;
  b.hmin = std::numeric_limits<double>::infinity();
  b.hmax = -b.hmin;
  for (std::int64_t r = 0; r < n; ++r) {
    double dg = rs[static_cast<std::size_t>(n + r)], off = rs[static_cast<std::size_t>(r)];
    b.hmin = std::min(b.hmin, dg - off);
    b.hmax = std::max(b.hmax, dg + off);
    b.trace += dg;
  }
  steps::Start x0;
  std::string start_error;
  switch (opt.method) {
    case PurifyMethod::Canonical: x0 = steps::start_canonical(b); break;
    case PurifyMethod::McWeeny: x0 = steps::start_mcweeny(b, *opt.mu, &start_error); break;
    default: x0 = steps::start_trs(b); break;
  }
  if (!start_error.empty()) return Failure{true, start_error};
  for (std::int64_t c = 0; c < rj && plane0; ++c)
    for (std::int64_t r = 0; r < ri; ++r)
      d.data()[c * ri + r] = x0.a * f.data()[c * ri + r] + (i0 + r == j0 + c ? x0.b : 0.0);
  ssc.symmetrize(d.data());

  const int power = steps::highest_power(opt.method);
  const int products = power == 2 ? 1 : power == 3 ? 2 : 3;  // dense products per step
  const auto& lay = ssc.plane0();
  dense::DistMatrix<double> d2(ctx, lay), d3, d4;
  if (power >= 3) d3 = dense::DistMatrix<double>(ctx, lay);
  if (power >= 4) d4 = dense::DistMatrix<double>(ctx, lay);
  std::vector<double> hist;
  std::optional<Failure> fail;
  struct Best {
    double err, t1, en;
    int it, behind;  // its step; steps since
  } best{std::numeric_limits<double>::infinity(), 0, 0, 0, 0};
  std::vector<double> best_d(static_cast<std::size_t>(len));
  int performed = -1;  // steps whose products were computed, when not it + 1
  int it = 0;
  double err = 0, t1 = 0, en = 0;
  auto t_step = Clock::now();
  for (;; ++it) {
    auto t_ssc = Clock::now();
    if (power == 2) ssc.run_square_active(d.data(), d2.data());
    else ssc.run_active(d.data(), d2.data(), d3.data());
    if (power == 4) ssc.run_square_active(d2.data(), d4.data());
    st.ssc_seconds += since(t_ssc);
    // tr X, tr X^2, tr X^3, tr X^4, ||X - X^2||_F^2, tr(X F)
    double s[6] = {0, 0, 0, 0, 0, 0};
    const double *x = d.data(), *x2 = d2.data(), *x3 = d3.data(), *x4 = d4.data();
    for (std::int64_t q = 0; q < len; ++q) {
      s[4] += (x[q] - x2[q]) * (x[q] - x2[q]);
      s[5] += x[q] * f.data()[q];  // F symmetric: tr(XF) = sum X_ij F_ij
    }
    if (diag)
      for (std::int64_t r = 0; r < ri; ++r) {
        s[0] += x[r * ri + r];
        s[1] += x2[r * ri + r];
        if (power >= 3) s[2] += x3[r * ri + r];
        if (power >= 4) s[3] += x4[r * ri + r];
      }
    g.allreduce(s, 6, MPI_SUM);
    t1 = s[0];
    err = std::sqrt(s[4]);
    en = 2 * s[5];
    hist.push_back(err);
    if (opt.on_step) {
      PurifyStep ps;
      ps.iteration = it;
      ps.idempotency_error = err;
      ps.trace = t1;
      ps.band_energy = en;
      ps.seconds = since(t_step);
      // The user's callback may throw on some active ranks only: agreed, so that every
      // active rank leaves the iteration with the same error (held and agreed below).
      agree_on(g, [&] { opt.on_step(ps); });
    }
    t_step = Clock::now();
    if (!std::isfinite(err)) {
      fail = Failure{false, detail::concat("purify: ", to_string(opt.method),
                                           ": ||D - D^2||_F is not finite at step ", it)};
      break;
    }
    if (err < best.err) {
      best = Best{err, t1, en, it, 0};
      std::copy(d.data(), d.data() + len, best_d.begin());
    } else {
      ++best.behind;
    }
    if (err < opt.tol) break;
    if (best.behind >= kFloorSteps && best.err < kFloor) {
      // The rounding floor lies above tol (large n): ||D - D^2||_F has stopped improving
      // (McWeeny's iteration even lets a rounding mode double per step). Return the best D.
      std::copy(best_d.begin(), best_d.end(), d.data());
      performed = it + 1;
      it = best.it;
      err = best.err;
      t1 = best.t1;
      en = best.en;
      break;
    }
    if (it >= opt.max_iter) {
      fail = Failure{false, detail::concat("purify: ", to_string(opt.method),
                                           ": no convergence in max_iter = ", opt.max_iter,
                                           " steps: ||D - D^2||_F = ", err, " (tol ", opt.tol, ")")};
      break;
    }
    if (it >= opt.stall_window && err > 0.5 * hist[static_cast<std::size_t>(it - opt.stall_window)]) {
      fail = Failure{true, detail::concat(
          "purify: ", to_string(opt.method), ": no clear occupation: ||D - D^2||_F = ", err,
          " has not halved in ", opt.stall_window, " steps (step ", it, "); about ",
          (s[0] - s[1]) / 0.25, " states sit at occupation ~1/2: the HOMO-LUMO gap of F is "
          "zero (degenerate at nocc = ", nocc, ") or too small to resolve")};
      break;
    }
    steps::Traces t{s[0], s[1], s[2], s[3]};
    steps::Coefficients c{};
    switch (opt.method) {
      case PurifyMethod::Canonical: c = steps::step_canonical(t, b); break;
      case PurifyMethod::McWeeny: c = steps::step_mcweeny(); break;
      case PurifyMethod::Trs2: c = steps::step_trs2(t, b); break;
      case PurifyMethod::Trs4: c = steps::step_trs4(t, b); break;
    }
    double* y = d.data();
    for (std::int64_t q = 0; q < len; ++q) {
      double v = c[0] * x[q] + c[1] * x2[q];
      if (c[2] != 0) v += c[2] * x3[q];
      if (c[3] != 0) v += c[3] * x4[q];
      y[q] = v;
    }
    ssc.symmetrize(y);  // D^2, D^3 from different blocks round differently: keep D = D^T
  }
  st.iterations = it;
  st.idempotency = err;
  st.trace_error = std::abs(t1 - static_cast<double>(nocc));
  st.band_energy = en;
  st.products = static_cast<double>(performed >= 0 ? performed : it + 1) * products;
  if (!fail && opt.method == PurifyMethod::McWeeny && st.trace_error > 1e-6)
    fail = Failure{true, detail::concat(
        "purify: mcweeny: mu = ", *opt.mu, " is not inside the HOMO-LUMO gap at nocc = ", nocc,
        ": tr D = ", t1, " states lie below mu (expected mu between the HOMO and the LUMO)")};
  return fail;
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
  TESSEL_CHECK(opt.stall_window >= 2, InputError, "purify: stall_window = ",
               opt.stall_window, " (expected >= 2)");
  TESSEL_CHECK(opt.method != PurifyMethod::McWeeny || opt.mu.has_value(), InputError,
               "purify: mcweeny needs the chemical potential mu inside the HOMO-LUMO gap: "
               "set PurifyOptions::mu (e.g. (HOMO + LUMO)/2); it cannot be bounded from F alone");
  TESSEL_CHECK(!opt.mu || std::isfinite(*opt.mu), InputError, "purify: mu = ", *opt.mu,
               " (expected a finite energy inside the HOMO-LUMO gap)");
}

}  // namespace steps

PurifyResult purify(Context& ctx, const dense::DistMatrix<double>& F, std::int64_t nocc,
                    const PurifyOptions& opt) {
  const std::int64_t n = F.rows();
  ctx.agree([&] {
    TESSEL_CHECK(F.rows() == F.cols(), DimensionMismatch, "purify: F is ", F.rows(), " x ",
                 F.cols(), " (expected square)");
    TESSEL_CHECK(F.layout().comm_size() == ctx.size(), LayoutMismatch, "purify: F's layout is over ",
                 F.layout().comm_size(), " ranks but the context has ", ctx.size());
    steps::check_options(opt, n, nocc);
  });
  const auto t0 = Clock::now();
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
  const auto& m = ssc.mesh();
  dense::DistMatrix<double> d(ctx, ssc.plane0());
  Stats st;
  std::optional<Failure> fail;
  if (m.active()) {
    PhaseScope ph(ctx.ledger(), "purify/iterate");
    // An error thrown on the active ranks alone is held until every rank has passed
    // release() (the inactive ranks wait there) and then agreed below.
    try {
      fail = iterate(ctx, ssc, f, d, nocc, opt, st);
    } catch (const InputError& e) {
      fail = Failure{true, e.what()};
    } catch (const Error& e) {
      fail = Failure{false, e.what()};
    } catch (const std::exception& e) {
      fail = Failure{false, detail::concat("purify: ", e.what())};
    }
  }
  ssc.release();
  double stats[5] = {st.iterations, st.idempotency, st.trace_error, st.band_energy, st.products};
  {
    PhaseScope ph(ctx.ledger(), "purify/result");
    ctx.agree([&] {
      if (fail && fail->input) throw InputError(fail->msg);
      if (fail) throw Error(fail->msg);
    });
    if (m.inactive_ranks() > 0) ctx.comm().bcast(stats, 5, 0);
    st.ssc_seconds = ctx.comm().allreduce_value(st.ssc_seconds, MPI_MAX);
  }
  PurifyResult out;
  out.seconds = since(t0);
  {
    PhaseScope ph(ctx.ledger(), "purify/redistribute out");
    out.D = dense::redistribute(ctx, d, F.layout(), moves);
  }
  const double nd = static_cast<double>(n);
  out.iterations = static_cast<int>(stats[0]);
  out.idempotency_error = stats[1];
  out.trace_error = stats[2];
  out.band_energy = stats[3];
  out.flops = stats[4] * 2 * nd * nd * nd;
  out.ssc_seconds = st.ssc_seconds;
  out.method = opt.method;
  out.p = ssc.p();
  out.n_dup = ssc.n_dup();
  out.mesh = m.describe();
  return out;
}


}  // namespace tessel::solvers

// Purification (canonical, McWeeny, TRS2, TRS4) over any Algebra<M>: the starting guesses and
// coefficient steps of purify_steps.cpp, the stopping rules of the dense driver (purify.cpp),
// and mu recovered afterwards from the composed step polynomials: the energy e whose starting
// value a e + b the steps map to 1/2.
//
// A step X <- c0 X + c1 X^2 + c2 X^3 + c3 X^4 needs the traces of the powers and the update.
// The dense and block-sparse algebras compute X^2 = X X only, the traces tr X^2 = <X, X>,
// tr X^3 = <X, X^2> and tr X^4 = <X^2, X^2> as dot products (X symmetric), and the update as
// c0 X + c1 X^2 + X^2 (c2 X + c3 X^2): at most 2 products per step (TRS4: 2, was 3 with
// X^3 and X^4; 1 when the step is 2X - X^2 or X^2), as NTPoly's TRS4 does. The SymmSquareCube
// algebra of purify() computes X^2 and X^3 together (seed 000) and X^4 as (X^2)^2 by
// alg.powers(), and the update as a sum of the powers.
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "noise_floor.hpp"
#include "purify_steps.hpp"
#include "ssc_algebra.hpp"
#include "tessel/core/error.hpp"
#include "tessel/solvers/density.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::solvers {
namespace {

double apply_steps(double x, const std::vector<steps::Coefficients>& cs) {
  for (const auto& c : cs) {
    const double x2 = x * x;
    x = c[0] * x + c[1] * x2 + c[2] * x2 * x + c[3] * x2 * x2;
  }
  return x;
}

/// Algebras that offer powers(): X^2 .. X^4 together, cheaper than products one by one.
template <class M, class = void>
constexpr bool kFusedPowers = false;
template <class M>
constexpr bool kFusedPowers<M, std::void_t<decltype(std::declval<Algebra<M>&>().powers(
                                   std::declval<const M&>(), 2, std::declval<M&>(),
                                   std::declval<M&>(), std::declval<M&>()))>> = true;
static_assert(kFusedPowers<SscMatrix> && !kFusedPowers<dense::DistMatrix<double>> &&
              !kFusedPowers<sparse::BlockSparseMatrix<double>>);

/// purify_generic's body. consumed: Ht's own storage, moved into X at the start (then Ht is
/// empty from there on and no energy is taken against it), or null (X is a copy of Ht).
template <class M>
PurifyGenericResult<M> purify_impl(Algebra<M>& alg, const M& Ht, M* consumed, std::int64_t nocc,
                                   PurifyMethod method, std::optional<double> mu, double tol,
                                   int max_iter, const ProgressFn& on_step, int stall_window,
                                   const PurifyCheckpointing<M>& ck) {
  const std::int64_t n = alg.n(Ht);
  PurifyOptions popt;
  popt.method = method;
  popt.mu = mu;
  popt.tol = tol;
  popt.max_iter = max_iter;
  popt.stall_window = stall_window;
  alg.agree([&] {
    steps::check_options(popt, n, nocc);
    TESSEL_CHECK(ck.every >= 0 && ck.stop_after >= 0, InputError, "purify: checkpoint every ",
                 ck.every, " steps, stop after ", ck.stop_after, " (expected >= 0; 0 = never)");
    if (ck.resume)
      steps::check_resume(*ck.resume, ck.resume_x != nullptr, ck.resume_best != nullptr);
  });
  const double eps = alg.filter_eps();
  // The filtering / rounding floor (NoiseFloor): kFloorSteps steps in a row below the level
  // that do not halve the best residual. Below the floor a step that does not halve it is
  // filtering noise, even when it improves on it a little (1000 generated waters, TRS4, eps
  // 1e-6: 1.6e-5, 2.4e-5, 4.7e-5, 1.1e-5, 1.8e-5, 3.5e-5, 6.9e-5 — counting the dip at the
  // fourth step as progress cost three more products of ~20 s each).
  constexpr int kFloorSteps = 3;
  NoiseFloor noise_floor{noise_level(eps, 1e-6, 1e-6), 0.5, kFloorSteps};
  const double floor_level = noise_floor.level;
  const int kStall = stall_window;
  const int power = steps::highest_power(method);
  steps::Bounds b;
  b.n = n;
  b.nocc = nocc;
  steps::Start x0;
  M x, best;
  std::vector<steps::Coefficients> cs;
  std::vector<double> hist;
  double best_err = INFINITY, best_t1 = 0, best_en = 0;
  int best_it = 0, behind = 0;
  int it = 0;
  if (ck.resume) {  // everything step 0 computed comes from the state: nothing recomputed
    const PurifyState& st = *ck.resume;
    b.hmin = st.hmin;
    b.hmax = st.hmax;
    b.trace = st.trace_f;
    x0 = {st.start_a, st.start_b};
    for (std::size_t k = 0; k + 3 < st.coefficients.size(); k += 4)
      cs.push_back({st.coefficients[k], st.coefficients[k + 1], st.coefficients[k + 2],
                    st.coefficients[k + 3]});
    hist = st.history;
    best_err = st.best_err;
    best_t1 = st.best_trace;
    best_en = st.best_energy;
    best_it = st.best_iteration;
    behind = st.behind;
    noise_floor.best = best_err;
    noise_floor.behind = behind;
    it = st.iteration;
    x = alg.copy(*ck.resume_x);
    if (st.has_best) best = alg.copy(*ck.resume_best);
  } else {
    std::tie(b.hmin, b.hmax) = alg.gershgorin(Ht);
    b.trace = alg.trace(Ht);
    std::string start_error;
    switch (method) {
      case PurifyMethod::Canonical: x0 = steps::start_canonical(b); break;
      case PurifyMethod::McWeeny: x0 = steps::start_mcweeny(b, *mu, &start_error); break;
      default: x0 = steps::start_trs(b); break;
    }
    alg.agree([&] {
      if (!start_error.empty()) throw InputError(start_error);
    });
    if (consumed) {  // X in Ht's storage: one matrix fewer alive through every step
      x = std::move(*consumed);
      *consumed = M{};
    } else {
      x = alg.copy(Ht);
    }
    alg.scale(x, x0.a);
    alg.shift(x, x0.b);
    alg.filter(x);
    alg.resymmetrize(x);
  }
  // The state after `steps` steps (X enters step `steps`), for on_checkpoint.
  auto state_after = [&](int steps_taken) {
    PurifyState st;
    st.iteration = steps_taken;
    st.hmin = b.hmin;
    st.hmax = b.hmax;
    st.trace_f = b.trace;
    st.start_a = x0.a;
    st.start_b = x0.b;
    for (const auto& c : cs) st.coefficients.insert(st.coefficients.end(), c.begin(), c.end());
    st.history = hist;
    st.best_err = best_err;
    st.best_trace = best_t1;
    st.best_energy = best_en;
    st.best_iteration = best_it;
    st.behind = behind;
    st.has_best = best_err < floor_level;
    return st;
  };
  bool stopped = false;
  double err = 0, t1 = 0, en = 0;
  Stopwatch t;
  const auto m0 = alg.stats().multiplications;
  for (;; ++it) {
    M x2, x3, x4;  // x3, x4: from powers() of a fused algebra only
    steps::Traces tr;
    tr.t1 = t1 = alg.trace(x);
    if constexpr (kFusedPowers<M>) {
      alg.powers(x, power, x2, x3, x4);
      tr.t2 = alg.trace(x2);
      if (power >= 3) tr.t3 = alg.trace(x3);
      if (power >= 4) tr.t4 = alg.trace(x4);
    } else {
      // tr X^2 = ||X||_F^2 exactly (X symmetric), not the trace of the filtered product: then
      // t2 - 2 t3 + t4 = ||X - X^2||_F^2 (TRS4's tr G) is a square, tiny near convergence, and
      // TRS4 takes McWeeny's step there instead of chasing the filter's drift of the trace.
      x2 = alg.product(x, x);
      tr.t2 = alg.dot(x, x);
      if (power >= 3) tr.t3 = alg.dot(x, x2);
      if (power >= 4) tr.t4 = alg.dot(x2, x2);
    }
    {
      M d = alg.copy(x);
      alg.add(d, 1.0, x2, -1.0);
      err = alg.norm(d);
    }
    en = consumed ? std::numeric_limits<double>::quiet_NaN() : 2 * alg.dot(x, Ht);
    hist.push_back(err);
    if (on_step) {
      IterationInfo s;
      s.stage = to_string(method);
      s.iteration = it;
      s.residual = err;
      s.occupation = 2 * t1;
      s.band_energy = en;
      s.blocks = alg.blocks(x);
      s.seconds = t.seconds();
      on_step(s);
      t.restart();
    }
    if (!std::isfinite(err))
      throw Error(detail::concat("purify: ", to_string(method),
                                 ": ||D - D^2||_F is not finite at step ", it));
    if (err < best_err) {
      best_err = err;
      best_t1 = t1;
      best_en = en;
      best_it = it;
      // Only a best below the floor is ever returned (or checkpointed): no copy above it.
      best = err < floor_level ? alg.copy(x) : M{};
    }
    if (err < tol) break;
    const bool at_floor = noise_floor.reached(err);
    behind = noise_floor.behind;
    if (at_floor) {  // the filtering / rounding floor: the best iterate is the answer
      x = std::move(best);
      err = best_err;
      t1 = best_t1;
      en = best_en;
      cs.resize(static_cast<std::size_t>(best_it));
      it = best_it;
      break;
    }
    if (it >= max_iter)
      throw Error(detail::concat("purify: ", to_string(method), ": no convergence in max_iter = ",
                                 max_iter, " steps: ||X - X^2||_F = ", err, " (tol ", tol, ")"));
    if (it >= kStall && err > 0.5 * hist[static_cast<std::size_t>(it - kStall)])
      throw InputError(detail::concat(
          "purify: ", to_string(method), ": no clear occupation: ||X - X^2||_F = ", err,
          " has not halved in ", kStall, " steps (step ", it, "); about ", (tr.t1 - tr.t2) / 0.25,
          " states sit at occupation ~1/2: the HOMO-LUMO gap is zero (degenerate at nocc = ", nocc,
          ") or too small to resolve (or the filter threshold is too large)"));
    steps::Coefficients c{};
    switch (method) {
      case PurifyMethod::Canonical: c = steps::step_canonical(tr, b); break;
      case PurifyMethod::McWeeny: c = steps::step_mcweeny(); break;
      case PurifyMethod::Trs2: c = steps::step_trs2(tr, b); break;
      case PurifyMethod::Trs4: c = steps::step_trs4(tr, b); break;
    }
    cs.push_back(c);
    if constexpr (kFusedPowers<M>) {
      alg.add(x, c[0], x2, c[1]);
      if (c[2] != 0) alg.add(x, 1.0, x3, c[2]);
      if (c[3] != 0) alg.add(x, 1.0, x4, c[3]);
    } else if (c[0] == 0 && (c[2] != 0 || c[3] != 0)) {
      // c1 X^2 + X^2 (c2 X + c3 X^2) (TRS4): X is not needed once Y = c2 X + c3 X^2 is formed,
      // so Y takes X's storage (one matrix fewer alive during the product; the same values).
      alg.add(x, c[2], x2, c[3]);
      M p = alg.product(x2, x);
      x = M{};
      alg.add(p, 1.0, x2, c[1]);
      x2 = M{};
      x = std::move(p);
    } else if (c[2] != 0 || c[3] != 0) {  // c0 X + c1 X^2 + X^2 (c2 X + c3 X^2)
      M y = alg.copy(x);
      alg.add(y, c[2], x2, c[3]);
      M p = alg.product(x2, y);
      y = M{};
      alg.add(x, c[0], x2, c[1]);
      x2 = M{};
      alg.add(x, 1.0, p, 1.0);
    } else {
      alg.add(x, c[0], x2, c[1]);
    }
    alg.filter(x);
    alg.resymmetrize(x);  // X^2, X^3 from different blocks round differently: keep X = X^T
    const bool stop = ck.stop_after > 0 && it + 1 >= ck.stop_after;
    if (ck.on_checkpoint && ((ck.every > 0 && (it + 1) % ck.every == 0) || stop)) {
      const PurifyState st = state_after(it + 1);
      alg.agree([&] { ck.on_checkpoint(st, x, st.has_best ? &best : nullptr); });
    }
    if (stop) {
      stopped = true;
      ++it;
      break;
    }
  }
  PurifyGenericResult<M> out;
  out.X = std::move(x);
  out.iterations = it;
  out.idempotency_error = err;
  out.trace = t1;
  out.band_energy = en;
  out.stopped = stopped;
  // Products computed by this call (a resumed run counts from its first step on).
  out.products = alg.stats().multiplications - m0;
  // mu: the steps map x0 = a e + b (a < 0) monotonically to the occupation of energy e.
  double lo = b.hmin, hi = b.hmax;
  if (x0.a != 0) {
    for (int k = 0; k < 200 && hi - lo > 1e-15 * std::max(1.0, std::abs(hi)); ++k) {
      const double e = 0.5 * (lo + hi);
      const double occ = apply_steps(x0.a * e + x0.b, cs);
      if ((occ > 0.5) == (x0.a < 0))
        lo = e;
      else
        hi = e;
    }
  }
  out.mu = 0.5 * (lo + hi);
  return out;
}

}  // namespace

template <class M>
PurifyGenericResult<M> purify_generic(Algebra<M>& alg, const M& Ht, std::int64_t nocc,
                                      PurifyMethod method, std::optional<double> mu, double tol,
                                      int max_iter, const ProgressFn& on_step, int stall_window,
                                      const PurifyCheckpointing<M>& ck) {
  return purify_impl<M>(alg, Ht, nullptr, nocc, method, mu, tol, max_iter, on_step, stall_window,
                        ck);
}

template <class M>
PurifyGenericResult<M> purify_generic(Algebra<M>& alg, M&& Ht, std::int64_t nocc,
                                      PurifyMethod method, std::optional<double> mu, double tol,
                                      int max_iter, const ProgressFn& on_step, int stall_window) {
  M h = std::move(Ht);  // ours now: the caller's matrix is empty whatever happens
  return purify_impl<M>(alg, h, &h, nocc, method, mu, tol, max_iter, on_step, stall_window, {});
}

template PurifyGenericResult<dense::DistMatrix<double>> purify_generic(
    DenseAlgebra&, dense::DistMatrix<double>&&, std::int64_t, PurifyMethod, std::optional<double>,
    double, int, const ProgressFn&, int);
template PurifyGenericResult<sparse::BlockSparseMatrix<double>> purify_generic(
    SparseAlgebra&, sparse::BlockSparseMatrix<double>&&, std::int64_t, PurifyMethod,
    std::optional<double>, double, int, const ProgressFn&, int);
template PurifyGenericResult<dense::DistMatrix<double>> purify_generic(
    DenseAlgebra&, const dense::DistMatrix<double>&, std::int64_t, PurifyMethod,
    std::optional<double>, double, int, const ProgressFn&, int,
    const PurifyCheckpointing<dense::DistMatrix<double>>&);
template PurifyGenericResult<sparse::BlockSparseMatrix<double>> purify_generic(
    SparseAlgebra&, const sparse::BlockSparseMatrix<double>&, std::int64_t, PurifyMethod,
    std::optional<double>, double, int, const ProgressFn&, int,
    const PurifyCheckpointing<sparse::BlockSparseMatrix<double>>&);
template PurifyGenericResult<SscMatrix> purify_generic(Algebra<SscMatrix>&, const SscMatrix&,
                                                       std::int64_t, PurifyMethod,
                                                       std::optional<double>, double, int,
                                                       const ProgressFn&, int,
                                                       const PurifyCheckpointing<SscMatrix>&);

}  // namespace tessel::solvers

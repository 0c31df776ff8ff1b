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

/// One purification (purify_generic's body) as its named steps: check the arguments -> step 0
/// (X from Ht, or from a resumed state) -> per step: the powers and their traces, the residual
/// and the progress report, the best iterate, the stopping rules, the coefficients, the update,
/// the checkpoint -> the result and mu. The object holds the iteration's state; every method
/// is collective over the algebra's ranks unless it says otherwise.
template <class M>
class Purification {
 public:
  /// Not collective. consumed: Ht's own storage, moved into X at the start (then Ht is empty
  /// from there on and no energy is taken against it), or null (X is a copy of Ht).
  Purification(Algebra<M>& alg, const M& Ht, M* consumed, std::int64_t nocc, PurifyMethod method,
               std::optional<double> mu, double tol, int max_iter, const ProgressFn& on_step,
               int stall_window, const PurifyCheckpointing<M>& ck)
      : alg_(alg),
        ht_(Ht),
        consumed_(consumed),
        method_(method),
        mu_(mu),
        tol_(tol),
        max_iter_(max_iter),
        on_step_(on_step),
        stall_(stall_window),
        ck_(ck),
        noise_floor_{noise_level(alg.filter_eps(), 1e-6, 1e-6), 0.5, kFloorSteps},
        power_(steps::highest_power(method)) {
    b_.n = alg.n(Ht);
    b_.nocc = nocc;
  }

  PurifyGenericResult<M> run() {
    check();
    if (ck_.resume)
      resume(*ck_.resume);
    else
      start();
    t_.restart();
    const auto m0 = alg_.stats().multiplications;
    while (!step()) ++it_;
    return result(m0);
  }

 private:
  // The filtering / rounding floor (NoiseFloor): kFloorSteps steps in a row below the level
  // that do not halve the best residual. Below the floor a step that does not halve it is
  // filtering noise, even when it improves on it a little (1000 generated waters, TRS4, eps
  // 1e-6: 1.6e-5, 2.4e-5, 4.7e-5, 1.1e-5, 1.8e-5, 3.5e-5, 6.9e-5 — counting the dip at the
  // fourth step as progress cost three more products of ~20 s each).
  static constexpr int kFloorSteps = 3;

  /// The options and the checkpointing, agreed on every rank.
  void check() {
    PurifyOptions popt;
    popt.method = method_;
    popt.mu = mu_;
    popt.tol = tol_;
    popt.max_iter = max_iter_;
    popt.stall_window = stall_;
    alg_.agree([&] {
      steps::check_options(popt, b_.n, b_.nocc);
      TESSEL_CHECK(ck_.every >= 0 && ck_.stop_after >= 0, InputError, "purify: checkpoint every ",
                   ck_.every, " steps, stop after ", ck_.stop_after, " (expected >= 0; 0 = never)");
      if (ck_.resume)
        steps::check_resume(*ck_.resume, ck_.resume_x != nullptr, ck_.resume_best != nullptr);
    });
  }

  /// Not collective but for the copies. Step 0 from a checkpoint: everything step 0 computed
  /// comes from the state, nothing is recomputed.
  void resume(const PurifyState& st) {
    b_.hmin = st.hmin;
    b_.hmax = st.hmax;
    b_.trace = st.trace_f;
    x0_ = {st.start_a, st.start_b};
    for (std::size_t k = 0; k + 3 < st.coefficients.size(); k += 4)
      cs_.push_back({st.coefficients[k], st.coefficients[k + 1], st.coefficients[k + 2],
                     st.coefficients[k + 3]});
    hist_ = st.history;
    best_err_ = st.best_err;
    best_t1_ = st.best_trace;
    best_en_ = st.best_energy;
    best_it_ = st.best_iteration;
    behind_ = st.behind;
    noise_floor_.best = best_err_;
    noise_floor_.behind = behind_;
    it_ = st.iteration;
    x_ = alg_.copy(*ck_.resume_x);
    if (st.has_best) best_ = alg_.copy(*ck_.resume_best);
  }

  /// Step 0 from Ht: its spectral bounds and trace, the starting guess X = a Ht + b.
  void start() {
    std::tie(b_.hmin, b_.hmax) = alg_.gershgorin(ht_);
    b_.trace = alg_.trace(ht_);
    std::string start_error;
    switch (method_) {
      case PurifyMethod::Canonical: x0_ = steps::start_canonical(b_); break;
      case PurifyMethod::McWeeny: x0_ = steps::start_mcweeny(b_, *mu_, &start_error); break;
      default: x0_ = steps::start_trs(b_); break;
    }
    alg_.agree([&] {
      if (!start_error.empty()) throw InputError(start_error);
    });
    if (consumed_) {  // X in Ht's storage: one matrix fewer alive through every step
      x_ = std::move(*consumed_);
      *consumed_ = M{};
    } else {
      x_ = alg_.copy(ht_);
    }
    alg_.scale(x_, x0_.a);
    alg_.shift(x_, x0_.b);
    alg_.filter(x_);
    alg_.resymmetrize(x_);
  }

  /// Step it_: true when the iteration ends here (converged, at the floor, or stopped).
  bool step() {
    M x2, x3, x4;  // x3, x4: from powers() of a fused algebra only
    const steps::Traces tr = powers(x2, x3, x4);
    measure(x2);
    if (!std::isfinite(err_))
      throw Error(detail::concat("purify: ", to_string(method_),
                                 ": ||D - D^2||_F is not finite at step ", it_));
    keep_best();
    if (err_ < tol_) return true;
    if (at_floor()) return true;
    check_progress(tr);
    const steps::Coefficients c = coefficients(tr);
    cs_.push_back(c);
    update(c, x2, x3, x4);
    alg_.filter(x_);
    alg_.resymmetrize(x_);  // X^2, X^3 from different blocks round differently: keep X = X^T
    return checkpoint_or_stop();
  }

  /// X^2 (and X^3, X^4 from a fused algebra) and the traces of the powers of X.
  steps::Traces powers(M& x2, M& x3, M& x4) {
    steps::Traces tr;
    tr.t1 = t1_ = alg_.trace(x_);
    if constexpr (kFusedPowers<M>) {
      alg_.powers(x_, power_, x2, x3, x4);
      tr.t2 = alg_.trace(x2);
      if (power_ >= 3) tr.t3 = alg_.trace(x3);
      if (power_ >= 4) tr.t4 = alg_.trace(x4);
    } else {
      // tr X^2 = ||X||_F^2 exactly (X symmetric), not the trace of the filtered product: then
      // t2 - 2 t3 + t4 = ||X - X^2||_F^2 (TRS4's tr G) is a square, tiny near convergence, and
      // TRS4 takes McWeeny's step there instead of chasing the filter's drift of the trace.
      x2 = alg_.product(x_, x_);
      tr.t2 = alg_.dot(x_, x_);
      if (power_ >= 3) tr.t3 = alg_.dot(x_, x2);
      if (power_ >= 4) tr.t4 = alg_.dot(x2, x2);
    }
    return tr;
  }

  /// ||X - X^2||_F and the band energy 2 tr(X Ht) (NaN when Ht was consumed), then on_step.
  void measure(const M& x2) {
    {
      M d = alg_.copy(x_);
      alg_.add(d, 1.0, x2, -1.0);
      err_ = alg_.norm(d);
    }
    en_ = consumed_ ? std::numeric_limits<double>::quiet_NaN() : 2 * alg_.dot(x_, ht_);
    hist_.push_back(err_);
    if (!on_step_) return;
    IterationInfo s;
    s.stage = to_string(method_);
    s.iteration = it_;
    s.residual = err_;
    s.occupation = 2 * t1_;
    s.band_energy = en_;
    s.blocks = alg_.blocks(x_);
    s.seconds = t_.seconds();
    on_step_(s);
    t_.restart();
  }

  /// The best iterate so far: only a best below the floor is ever returned (or
  /// checkpointed), so no copy is kept above it.
  void keep_best() {
    if (err_ >= best_err_) return;
    best_err_ = err_;
    best_t1_ = t1_;
    best_en_ = en_;
    best_it_ = it_;
    best_ = err_ < noise_floor_.level ? alg_.copy(x_) : M{};
  }

  /// Not collective. True at the filtering / rounding floor: the best iterate is the answer.
  bool at_floor() {
    const bool at = noise_floor_.reached(err_);
    behind_ = noise_floor_.behind;
    if (!at) return false;
    x_ = std::move(best_);
    err_ = best_err_;
    t1_ = best_t1_;
    en_ = best_en_;
    cs_.resize(static_cast<std::size_t>(best_it_));
    it_ = best_it_;
    return true;
  }

  /// Not collective (the same on every rank). Error after max_iter steps; InputError when the
  /// residual has not halved in the stall window (no clear occupation).
  void check_progress(const steps::Traces& tr) const {
    if (it_ >= max_iter_)
      throw Error(detail::concat("purify: ", to_string(method_), ": no convergence in max_iter = ",
                                 max_iter_, " steps: ||X - X^2||_F = ", err_, " (tol ", tol_, ")"));
    if (it_ >= stall_ && err_ > 0.5 * hist_[static_cast<std::size_t>(it_ - stall_)])
      throw InputError(detail::concat(
          "purify: ", to_string(method_), ": no clear occupation: ||X - X^2||_F = ", err_,
          " has not halved in ", stall_, " steps (step ", it_, "); about ", (tr.t1 - tr.t2) / 0.25,
          " states sit at occupation ~1/2: the HOMO-LUMO gap is zero (degenerate at nocc = ",
          b_.nocc, ") or too small to resolve (or the filter threshold is too large)"));
  }

  /// Pure. This step's polynomial c0 X + c1 X^2 + c2 X^3 + c3 X^4.
  steps::Coefficients coefficients(const steps::Traces& tr) const {
    switch (method_) {
      case PurifyMethod::Canonical: return steps::step_canonical(tr, b_);
      case PurifyMethod::McWeeny: return steps::step_mcweeny();
      case PurifyMethod::Trs2: return steps::step_trs2(tr, b_);
      case PurifyMethod::Trs4: return steps::step_trs4(tr, b_);
    }
    return steps::Coefficients{};
  }

  /// X <- c0 X + c1 X^2 + c2 X^3 + c3 X^4: a sum of the powers (fused algebra), else
  /// c0 X + c1 X^2 + X^2 (c2 X + c3 X^2) with at most one more product; frees X^2 as soon as
  /// it is not needed.
  void update(const steps::Coefficients& c, M& x2, const M& x3, const M& x4) {
    if constexpr (kFusedPowers<M>) {
      alg_.add(x_, c[0], x2, c[1]);
      if (c[2] != 0) alg_.add(x_, 1.0, x3, c[2]);
      if (c[3] != 0) alg_.add(x_, 1.0, x4, c[3]);
    } else if (c[0] == 0 && (c[2] != 0 || c[3] != 0)) {
      // c1 X^2 + X^2 (c2 X + c3 X^2) (TRS4): X is not needed once Y = c2 X + c3 X^2 is formed,
      // so Y takes X's storage (one matrix fewer alive during the product; the same values).
      alg_.add(x_, c[2], x2, c[3]);
      M p = alg_.product(x2, x_);
      x_ = M{};
      alg_.add(p, 1.0, x2, c[1]);
      x2 = M{};
      x_ = std::move(p);
    } else if (c[2] != 0 || c[3] != 0) {  // c0 X + c1 X^2 + X^2 (c2 X + c3 X^2)
      M y = alg_.copy(x_);
      alg_.add(y, c[2], x2, c[3]);
      M p = alg_.product(x2, y);
      y = M{};
      alg_.add(x_, c[0], x2, c[1]);
      x2 = M{};
      alg_.add(x_, 1.0, p, 1.0);
    } else {
      alg_.add(x_, c[0], x2, c[1]);
    }
  }

  /// The checkpoint after this step (every ck.every steps, and at ck.stop_after); true when
  /// ck.stop_after stops the run here.
  bool checkpoint_or_stop() {
    const bool stop = ck_.stop_after > 0 && it_ + 1 >= ck_.stop_after;
    if (ck_.on_checkpoint && ((ck_.every > 0 && (it_ + 1) % ck_.every == 0) || stop)) {
      const PurifyState st = state_after(it_ + 1);
      alg_.agree([&] { ck_.on_checkpoint(st, x_, st.has_best ? &best_ : nullptr); });
    }
    if (!stop) return false;
    stopped_ = true;
    ++it_;
    return true;
  }

  /// Pure. The state after `steps_taken` steps (X enters step `steps_taken`), for on_checkpoint.
  PurifyState state_after(int steps_taken) const {
    PurifyState st;
    st.iteration = steps_taken;
    st.hmin = b_.hmin;
    st.hmax = b_.hmax;
    st.trace_f = b_.trace;
    st.start_a = x0_.a;
    st.start_b = x0_.b;
    for (const auto& c : cs_) st.coefficients.insert(st.coefficients.end(), c.begin(), c.end());
    st.history = hist_;
    st.best_err = best_err_;
    st.best_trace = best_t1_;
    st.best_energy = best_en_;
    st.best_iteration = best_it_;
    st.behind = behind_;
    st.has_best = best_err_ < noise_floor_.level;
    return st;
  }

  /// Not collective but for the product count. The result; `m0`: the products before step 0.
  PurifyGenericResult<M> result(std::int64_t m0) {
    PurifyGenericResult<M> out;
    out.X = std::move(x_);
    out.iterations = it_;
    out.idempotency_error = err_;
    out.trace = t1_;
    out.band_energy = en_;
    out.stopped = stopped_;
    // Products computed by this call (a resumed run counts from its first step on).
    out.products = alg_.stats().multiplications - m0;
    out.mu = recover_mu();
    return out;
  }

  /// Pure. mu: the steps map x0 = a e + b (a < 0) monotonically to the occupation of energy e.
  double recover_mu() const {
    double lo = b_.hmin, hi = b_.hmax;
    if (x0_.a != 0) {
      for (int k = 0; k < 200 && hi - lo > 1e-15 * std::max(1.0, std::abs(hi)); ++k) {
        const double e = 0.5 * (lo + hi);
        const double occ = apply_steps(x0_.a * e + x0_.b, cs_);
        if ((occ > 0.5) == (x0_.a < 0))
          lo = e;
        else
          hi = e;
      }
    }
    return 0.5 * (lo + hi);
  }

  Algebra<M>& alg_;
  const M& ht_;
  M* consumed_;
  const PurifyMethod method_;
  const std::optional<double> mu_;
  const double tol_;
  const int max_iter_;
  const ProgressFn& on_step_;
  const int stall_;
  const PurifyCheckpointing<M>& ck_;
  NoiseFloor noise_floor_;
  const int power_;
  steps::Bounds b_;
  steps::Start x0_;
  M x_, best_;
  std::vector<steps::Coefficients> cs_;
  std::vector<double> hist_;
  double best_err_ = INFINITY, best_t1_ = 0, best_en_ = 0;
  int best_it_ = 0, behind_ = 0;
  int it_ = 0;
  bool stopped_ = false;
  double err_ = 0, t1_ = 0, en_ = 0;
  Stopwatch t_;
};

/// purify_generic's body: see Purification.
template <class M>
PurifyGenericResult<M> purify_impl(Algebra<M>& alg, const M& Ht, M* consumed, std::int64_t nocc,
                                   PurifyMethod method, std::optional<double> mu, double tol,
                                   int max_iter, const ProgressFn& on_step, int stall_window,
                                   const PurifyCheckpointing<M>& ck) {
  return Purification<M>(alg, Ht, consumed, nocc, method, mu, tol, max_iter, on_step, stall_window,
                         ck)
      .run();
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

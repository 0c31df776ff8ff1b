// S^-1/2 and S^-1 by Newton-Schulz (orders 2 and 3) and S^-1 by Hotelling, scaled from the
// Lanczos bounds of S; written once over Algebra<M>. The stopping rule and the failure
// messages are shared by the three iterations (Monitor).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "noise_floor.hpp"
#include "tessel/core/error.hpp"
#include "tessel/solvers/density.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::solvers {
namespace {

/// The Lanczos bounds of S are estimates: the starting scale divides by (lo + hi) times this
/// 2 % margin, so that an extreme eigenvalue a little outside [lo, hi] still maps inside the
/// convergence region (see inverse_sqrt, inverse_hotelling).
constexpr double kBoundsMargin = 1.02;

void check_inverse_options(const Context& ctx, const InverseOptions& opt) {
  ctx.agree([&] {
    TESSEL_CHECK(opt.order == 2 || opt.order == 3, InputError, "inverse sqrt: order = ", opt.order,
                 " (expected 2 or 3)");
    TESSEL_CHECK(opt.tol > 0 && std::isfinite(opt.tol), InputError, "inverse sqrt: tol = ", opt.tol,
                 " (expected > 0)");
    TESSEL_CHECK(opt.max_iter >= 1, InputError, "inverse sqrt: max_iter = ", opt.max_iter,
                 " (expected >= 1)");
    TESSEL_CHECK(opt.lanczos_steps >= 2, InputError,
                 "inverse sqrt: lanczos_steps = ", opt.lanczos_steps, " (expected >= 2)");
  });
}

// Lanczos bounds of S; InputError when a Ritz value is <= 0 (S is then certainly not
// positive definite) or S is not finite.
template <class M>
SpectralBounds bounds_of_s(Algebra<M>& alg, const M& S, const InverseOptions& opt,
                           const char* who) {
  const bool fin = alg.finite(S);
  SpectralBounds b = fin ? lanczos_bounds(alg, S, opt.lanczos_steps) : SpectralBounds{};
  alg.ctx().agree([&] {
    TESSEL_CHECK(fin, InputError, who, ": S has NaN or Inf entries");
    TESSEL_CHECK(b.ritz_min > 0, InputError, who,
                 ": S is not positive definite: Lanczos found "
                 "an eigenvalue estimate ",
                 b.ritz_min,
                 " <= 0 (the lower spectral bound of S "
                 "failed; largest estimate ",
                 b.ritz_max, "); S is singular or indefinite");
  });
  return b;
}

// The shared stopping rule: converged (r < tol), the filtering or rounding floor (NoiseFloor:
// one step below the noise level that keeps more than 0.8 of the residual), divergence (r
// grows while large, or is not finite), a stall.
// The floor rule's values for Newton-Schulz and Hotelling (noise_floor.hpp): the residual may
// be held up by filtering below max(1e-3, kNoisePerEps eps), by rounding below 1e-7; one step
// (patience 1) that keeps more than 0.8 of the best residual reaches the floor.
constexpr double kFilteredFloorMin = 1e-3, kRoundingFloor = 1e-7, kFloorKeep = 0.8;
// A stall: the residual fell by less than this fraction over kStallWindow steps.
constexpr double kStallProgress = 1e-3;
constexpr int kStallWindow = 25;

struct Monitor {
  const char* who;
  double tol, eps;
  int max_iter;
  double lo, hi, scale;  // bounds of S and the scale used
  std::vector<double> hist;
  bool stagnated = false;
  NoiseFloor noise_floor{noise_level(eps, kFilteredFloorMin, kRoundingFloor), kFloorKeep, 1};
  // true: stop now. Throws (on every rank: r is replicated) on failure.
  bool done(double r, int k) {
    hist.push_back(r);
    const double prev = k > 0 ? hist[static_cast<std::size_t>(k - 1)] : r;
    if (r < tol) return true;
    const double floor = noise_floor.level;
    if (!std::isfinite(r) || (r > prev && r >= floor))
      throw InputError(detail::concat(
          who,
          ": S is not positive definite or its spectral bounds are wrong: the residual grew to ", r,
          " at step ", k, " (from ", prev,
          "): the eigenvalues of S/s left the convergence region; the spectral bounds of S used "
          "(lower ",
          lo, ", upper ", hi, ", scale s = ", scale, ") are wrong: ",
          lo <= 0 ? "the lower bound failed (S is not positive definite)"
                  : "the upper bound failed or S has an eigenvalue <= 0 (not positive definite)"));
    if (noise_floor.reached(r)) {
      stagnated = true;
      return true;
    }
    if (k >= kStallWindow &&
        r > (1 - kStallProgress) * hist[static_cast<std::size_t>(k - kStallWindow)])
      throw InputError(detail::concat(who, ": S is not positive definite: the residual stalled at ",
                                      r, " over ", kStallWindow,
                                      " steps: S is singular or nearly so (lower bound ", lo, ")"));
    if (k >= max_iter)
      throw Error(detail::concat(who, ": no convergence in max_iter = ", max_iter,
                                 " steps: residual ", r, " (tol ", tol, ")"));
    return false;
  }
};

template <class M>
double identity_residual(Algebra<M>& alg, const M& t) {  // ||I - T||_F / sqrt(n)
  M r = alg.copy(t);
  alg.shift(r, -1.0);
  return alg.norm(r) / std::sqrt(static_cast<double>(std::max<std::int64_t>(1, alg.n(t))));
}

template <class M>
void report(Algebra<M>& alg, const InverseOptions& opt, const char* stage, int k, double r,
            const M& x, Stopwatch& t) {
  if (!opt.on_step) return;
  IterationInfo s;
  s.stage = stage;
  s.iteration = k;
  s.residual = r;
  s.blocks = alg.blocks(x);
  s.seconds = t.seconds();
  opt.on_step(s);
  t.restart();
}

struct IterationEnd {
  int iterations = 0;
  double residual = 0;
};

// The loop both iterations share: at step k, T = product() (the iterate's product that tends to
// I), its residual ||I - T||_F / sqrt(n), the report of x (stage mon.who), the monitor's stopping
// rule; else step(T) updates the iterates.
template <class M, class Product, class Step>
IterationEnd iterate_to_identity(Algebra<M>& alg, const InverseOptions& opt, Monitor& mon,
                                 const M& x, Product&& product, Step&& step) {
  Stopwatch t;
  IterationEnd end;
  for (;; ++end.iterations) {
    M tm = product();
    end.residual = identity_residual(alg, tm);
    report(alg, opt, mon.who, end.iterations, end.residual, x, t);
    if (mon.done(end.residual, end.iterations)) return end;
    step(tm);
  }
}

struct Start {
  std::int64_t m0;  // the algebra's multiplications before the call
  double lo, hi;    // the interval of S's spectrum the starting scale uses
};

// The start both iterations share: the option checks, the spectral bounds of S into
// out.bounds, and [lo, hi] with lo no lower than half the smallest Ritz value.
template <class M>
Start start(Algebra<M>& alg, const M& S, const InverseOptions& opt, const char* who,
            InverseResult<M>& out) {
  check_inverse_options(alg.ctx(), opt);
  const std::int64_t m0 = alg.stats().multiplications;
  out.bounds = bounds_of_s(alg, S, opt, who);
  return {m0, std::max(out.bounds.lo, 0.5 * out.bounds.ritz_min), out.bounds.hi};
}

// The end both share: the iterate symmetrized into out.X, with the iterations, the last
// residual and the products since m0.
template <class M>
void finish(Algebra<M>& alg, M&& x, const IterationEnd& end, std::int64_t m0,
            InverseResult<M>& out) {
  alg.symmetrize(x);
  out.X = std::move(x);
  out.iterations = end.iterations;
  out.residual = end.residual;
  out.multiplications = alg.stats().multiplications - m0;
}

}  // namespace

template <class M>
InverseResult<M> inverse_sqrt(Algebra<M>& alg, const M& S, const InverseOptions& opt) {
  InverseResult<M> out;
  const Start st = start(alg, S, opt, "inverse sqrt", out);
  const double lo = st.lo, hi = st.hi;
  // Y0 = S/s maps the spectrum into [2 lo/(lo+hi), 2 hi/(lo+hi)] (times 1/kBoundsMargin):
  // inside the convergence region (0, 3) of order 2 and (0, ~2.3) of order 3 with a margin.
  const double s = kBoundsMargin * (lo + hi) / 2;
  M y = alg.copy(S);
  alg.scale(y, 1 / s);
  M z = alg.identity(S);
  Monitor mon{"inverse sqrt", opt.tol, alg.filter_eps(), opt.max_iter, lo, hi, s, {}};
  const IterationEnd end = iterate_to_identity(
      alg, opt, mon, z, [&] { return alg.product(z, y); },
      [&](M& tm) {
        if (opt.order == 2) {  // T = (3I - ZY)/2
          alg.scale(tm, -0.5);
          alg.shift(tm, 1.5);
        } else {  // T = (15I - 10ZY + 3(ZY)^2)/8
          M t2 = alg.product(tm, tm);
          alg.add(tm, -10.0 / 8, t2, 3.0 / 8);
          alg.shift(tm, 15.0 / 8);
        }
        y = alg.product(y, tm);
        z = alg.product(tm, z);
      });
  alg.scale(z, 1 / std::sqrt(s));
  out.scale = s;
  finish(alg, std::move(z), end, st.m0, out);
  return out;
}

template <class M>
InverseResult<M> inverse(Algebra<M>& alg, const M& S, const InverseOptions& opt) {
  auto out = inverse_sqrt(alg, S, opt);
  out.X = alg.product(out.X, out.X);
  ++out.multiplications;
  return out;
}

template <class M>
InverseResult<M> inverse_hotelling(Algebra<M>& alg, const M& S, const InverseOptions& opt) {
  InverseResult<M> out;
  const Start st = start(alg, S, opt, "hotelling", out);
  const double lo = st.lo, hi = st.hi;
  const double a = 2 / (kBoundsMargin * (lo + hi));  // eigenvalues of S X0 in (0, 2)
  M x = alg.identity(S, a);
  Monitor mon{"hotelling", opt.tol, alg.filter_eps(), opt.max_iter, lo, hi, 1 / a, {}};
  const IterationEnd end = iterate_to_identity(
      alg, opt, mon, x, [&] { return alg.product(S, x); },
      [&](M& sx) {
        M xsx = alg.product(x, sx);
        alg.add(x, 2.0, xsx, -1.0);  // X <- 2X - X S X
      });
  finish(alg, std::move(x), end, st.m0, out);
  return out;
}

#define TESSEL_INSTANTIATE(M)                                                           \
  template InverseResult<M> inverse_sqrt(Algebra<M>&, const M&, const InverseOptions&); \
  template InverseResult<M> inverse(Algebra<M>&, const M&, const InverseOptions&);      \
  template InverseResult<M> inverse_hotelling(Algebra<M>&, const M&, const InverseOptions&);
TESSEL_INSTANTIATE(dense::DistMatrix<double>)
TESSEL_INSTANTIATE(sparse::BlockSparseMatrix<double>)
#undef TESSEL_INSTANTIATE

}  // namespace tessel::solvers

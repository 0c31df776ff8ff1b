// The density matrix of (H, S), written once over Algebra<M>:
//   validate -> Z = S^-1/2 (newton_schulz.cpp) -> Ht = Z H Z -> Lanczos bounds of Ht ->
//   sign: mu search (bracket, then Illinois regula falsi on the occupation), Pt = (I - X)/2
//         [nonsymmetric form: X = sign(S^-1 H - mu I), P = (S^-1 - X S^-1)/2]
//   trs4 | canonical | trs2 | mcweeny: purify_generic(Ht), mu from the step polynomials
//   -> P = Z Pt Z -> tr(PS), 2 tr(PH), occupation check -> W = P H P (option).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tessel/core/error.hpp"
#include "tessel/solvers/density.hpp"
#include "tessel/solvers/density_diag.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::solvers {

std::string to_string(DensityMethod m) {
  switch (m) {
    case DensityMethod::Sign: return "sign";
    case DensityMethod::Trs4: return "trs4";
    case DensityMethod::Canonical: return "canonical";
    case DensityMethod::Trs2: return "trs2";
    case DensityMethod::McWeeny: return "mcweeny";
    case DensityMethod::Diag: return "diag";
    case DensityMethod::Auto: return "auto";
  }
  return "?";
}

DensityMethod parse_density_method(const std::string& s, const std::string& what) {
  for (auto m :
       {DensityMethod::Sign, DensityMethod::Trs4, DensityMethod::Canonical, DensityMethod::Trs2,
        DensityMethod::McWeeny, DensityMethod::Diag, DensityMethod::Auto})
    if (s == to_string(m)) return m;
  throw InputError(detail::concat(
      what, " = '", s, "' (expected sign, trs4, canonical, trs2, mcweeny, diag or auto)"));
}

std::string to_string(DiagSolver s) {
  switch (s) {
    case DiagSolver::Auto: return "auto";
    case DiagSolver::Pdsyevd: return "pdsyevd";
    case DiagSolver::Elpa1: return "elpa1";
    case DiagSolver::Elpa2: return "elpa2";
  }
  return "?";
}

DiagSolver parse_diag_solver(const std::string& s, const std::string& what) {
  for (auto x : {DiagSolver::Auto, DiagSolver::Pdsyevd, DiagSolver::Elpa1, DiagSolver::Elpa2})
    if (s == to_string(x)) return x;
  throw InputError(detail::concat(what, " = '", s, "' (expected auto, pdsyevd, elpa1 or elpa2)"));
}

namespace {

/// The sign iteration's spectral bound of A - mu I, from the Lanczos bounds of A: 1 % above
/// the farther end, because Lanczos estimates the extremes from inside and the scaled start
/// must have every eigenvalue in (-1, 1).
constexpr double kSignBoundMargin = 1.01;

// ||A - A^T||_F / ||A||_F (0 for A = 0).
template <class M>
double asymmetry(Algebra<M>& alg, const M& a) {
  M t = alg.transpose(a);
  const double na = alg.norm(a);
  alg.add(t, -1.0, a, 1.0);
  const double d = alg.norm(t);
  return na > 0 ? d / na : d;
}

// The Lanczos estimate of the number of states below mu (the Ritz values weighted by the start
// vector's spectral measure), piecewise linear and increasing from (lo, 0) to (hi, n). The mu
// search runs in u = estimate(mu): there the true count is nearly u itself, so the secant
// steps of regula falsi land close even where the density of states is far from uniform.
struct Warp {
  std::vector<double> x, y;
  Warp(const SpectralBounds& b, std::int64_t n) {
    const double nd = static_cast<double>(n);
    x.push_back(b.lo);
    y.push_back(0);
    double acc = 0;
    for (std::size_t i = 0; i < b.ritz.size(); ++i) {
      acc += b.weight[i];
      const double xi = b.ritz[i], yi = nd * (acc - 0.5 * b.weight[i]);
      if (xi > x.back() && xi < b.hi && yi > y.back()) {
        x.push_back(xi);
        y.push_back(std::min(yi, nd * (1 - 1e-9)));
      }
    }
    x.push_back(b.hi);
    y.push_back(nd);
  }
  static double interp(const std::vector<double>& from, const std::vector<double>& to, double v) {
    if (v <= from.front()) return to.front();
    if (v >= from.back()) return to.back();
    const auto k =
        static_cast<std::size_t>(std::upper_bound(from.begin(), from.end(), v) - from.begin());
    const double t = (v - from[k - 1]) / (from[k] - from[k - 1]);
    return to[k - 1] + t * (to[k] - to[k - 1]);
  }
  double u(double mu) const { return interp(x, y, mu); }
  double mu(double u) const { return interp(y, x, u); }
};

}  // namespace

double mu_first_guess(const SpectralBounds& b, std::int64_t n, std::int64_t nocc) {
  const Warp w(b, n);
  const double fallback = w.mu(static_cast<double>(nocc));
  if (n <= 0 || b.ritz.size() < 4) return fallback;
  const double tau = static_cast<double>(nocc) / static_cast<double>(n);
  // A random unit start vector's measure below the gap: tau +- sqrt(2 tau (1 - tau) / n).
  const double tol = std::max(0.01, 4 * std::sqrt(2 * tau * (1 - tau) / static_cast<double>(n)));
  // Ritz values of non-negligible weight (one inside a gap carries next to none), with the
  // cumulative weight through each.
  const double negligible = 1e-3 / static_cast<double>(b.ritz.size());
  std::vector<double> x, acc;
  double sum = 0;
  for (std::size_t i = 0; i < b.ritz.size(); ++i) {
    sum += b.weight[i];
    if (b.weight[i] <= negligible) continue;
    x.push_back(b.ritz[i]);
    acc.push_back(sum);
  }
  // Interval j = (x[j], x[j+1]); its width against the mean of up to two neighbours a side.
  const std::size_t m = x.size() < 2 ? 0 : x.size() - 1;
  double best = 2.0, guess = fallback;  // a gap is at least twice as wide as its neighbours
  for (std::size_t j = 0; j < m; ++j) {
    const double lo = x[j], hi = x[j + 1], width = hi - lo;
    const bool near = std::abs(acc[j] - tau) <= tol || (fallback >= lo && fallback <= hi);
    if (!near) continue;
    double around = 0;
    int count = 0;
    for (std::size_t k = (j >= 2 ? j - 2 : 0); k <= std::min(m - 1, j + 2); ++k)
      if (k != j) {
        around += x[k + 1] - x[k];
        ++count;
      }
    if (count == 0 || around <= 0) continue;
    const double score = width / (around / count);
    if (score > best) {
      best = score;
      guess = 0.5 * (lo + hi);
    }
  }
  return guess;
}

namespace {

template <class M>
struct SignSearch {
  Algebra<M>& alg;
  const M& A;  // Ht (symmetric form) or S^-1 H (nonsymmetric form)
  const SpectralBounds& b;
  const DensityOptions& opt;
  std::int64_t n, nocc;
  DensityResult<M>& out;
  M x;  // sign at the last mu evaluated
  // count(mu) = (n - tr sign(A - mu I)) / 2 = tr(P S)
  double count(double mu) {
    x = M{};  // the last evaluation's sign: not needed while the next one runs
    M a = alg.copy(A);
    alg.shift(a, -mu);
    const double bound = kSignBoundMargin * std::max(std::abs(b.hi - mu), std::abs(b.lo - mu));
    SignOptions so;
    so.order = opt.sign_order;
    so.tol = opt.tol;
    so.max_iter = opt.max_iter;
    so.mu = mu;
    so.on_step = opt.on_step;
    auto r = sign(alg, std::move(a), bound, so);
    ++out.sign_evaluations;
    out.iterations += r.iterations;
    out.residual = r.residual;
    x = std::move(r.X);
    const double c = 0.5 * (static_cast<double>(n) - alg.trace(x));
    if (opt.on_step) {
      IterationInfo s;
      s.stage = "mu";
      s.iteration = out.sign_evaluations;
      s.residual = r.residual;
      s.occupation = 2 * c;
      s.mu = mu;
      s.blocks = alg.blocks(x);
      opt.on_step(s);
    }
    return c;
  }
  // One point of the search: u (mu in the warped coordinate), mu, f = count(mu) - nocc.
  struct Probe {
    double u, mu, f;
  };
  // f is a non-decreasing step function of mu: any mu with |f| < 1/2 lies in the HOMO-LUMO gap.
  static bool in_gap(double f) { return std::abs(f) < 0.5; }
  // The search stops (no gap) when its bracket is narrower than this, relative to the spectrum
  // width (at least 1): HOMO and LUMO are then degenerate.
  static constexpr double kDegenerateWidth = 1e-12;

  Probe probe(double u, double mu) { return {u, mu, count(mu) - static_cast<double>(nocc)}; }

  // First guess mid-gap (mu_first_guess: the sign iteration needs fewer steps and less fill
  // the farther mu is from the nearest eigenvalue), then bracket, then Illinois.
  double search() {
    const Warp w(b, n);
    const double mu = mu_first_guess(b, n, nocc);
    const Probe first = probe(w.u(mu), mu);
    if (in_gap(first.f)) return finish(mu, mu, mu);
    Probe lo = first, hi = first;
    if (bracket(w, first, lo, hi)) return finish(lo.mu, lo.mu, lo.mu);
    return illinois(w, lo, hi);
  }

  // Bracket from `first`: secant steps of slope 1 in u, doubled while the sign of f does not
  // change. True when a probe fell in the gap (it is then lo); else lo.f < 0 < hi.f.
  bool bracket(const Warp& w, const Probe& first, Probe& lo, Probe& hi) {
    const double target = static_cast<double>(nocc);
    Probe cur = first;
    double step = std::abs(first.f) + 0.5;
    for (;;) {
      check_budget();
      const double next_u =
          std::clamp(cur.u + (cur.f < 0 ? step : -step), 0.0, static_cast<double>(n));
      const double next = w.mu(next_u);
      TESSEL_CHECK(next != cur.mu, InputError, "density: the electron count ", 2 * nocc,
                   " cannot be reached inside the spectrum bounds [", b.lo, ", ", b.hi,
                   "] (occupation at mu = ", cur.mu, " is ", 2 * (cur.f + target), ")",
                   alg.filter_eps() > 0
                       ? detail::concat(": the filter threshold eps = ", alg.filter_eps(),
                                        " may be too large (occupation lost)")
                       : std::string());
      cur = probe(next_u, next);
      if (in_gap(cur.f)) {
        lo = cur;
        return true;
      }
      (cur.f < 0 ? lo : hi) = cur;
      if ((lo.f < 0) != (hi.f < 0)) break;
      step *= 2;
    }
    if (lo.f > 0) std::swap(lo, hi);
    return false;
  }

  // Illinois regula falsi on f(u) between lo (f < 0) and hi (f > 0).
  double illinois(const Warp& w, Probe lo, Probe hi) {
    const double target = static_cast<double>(nocc);
    int side = 0;
    for (;;) {
      check_budget();
      TESSEL_CHECK(hi.mu - lo.mu > kDegenerateWidth * std::max(1.0, b.hi - b.lo), InputError,
                   "density: no gap at the electron count ", 2 * nocc,
                   ": the occupation jumps from ", 2 * (lo.f + target), " to ", 2 * (hi.f + target),
                   " between mu = ", lo.mu, " and ", hi.mu, " (HOMO and LUMO degenerate)");
      double um = hi.u - hi.f * (hi.u - lo.u) / (hi.f - lo.f);
      double m = w.mu(um);
      if (!(m > lo.mu && m < hi.mu)) {
        m = 0.5 * (lo.mu + hi.mu);
        um = w.u(m);
      }
      const Probe mid = probe(um, m);
      if (in_gap(mid.f)) return finish(m, lo.mu, hi.mu);
      if (mid.f < 0) {
        lo = mid;
        if (side == -1) hi.f *= 0.5;  // Illinois: the same end kept twice
        side = -1;
      } else {
        hi = mid;
        if (side == 1) lo.f *= 0.5;
        side = 1;
      }
    }
  }
  void check_budget() {
    if (out.sign_evaluations >= opt.max_sign_evaluations)
      throw Error(detail::concat("density: mu not found in max_sign_evaluations = ",
                                 opt.max_sign_evaluations, " sign evaluations"));
  }
  double finish(double mu, double lo, double hi) {
    out.homo_lumo_lo = lo;
    out.homo_lumo_hi = hi;
    return mu;
  }
};

}  // namespace

namespace {

// The input checks of every route (InputError on every rank).
template <class M>
void validate(Algebra<M>& alg, const M& H, const M& S, std::int64_t electrons,
              const DensityOptions& opt) {
  Context& ctx = alg.ctx();
  const std::int64_t n = Algebra<M>::n(H);
  ctx.agree([&] {
    TESSEL_CHECK(H.rows() == H.cols(), DimensionMismatch, "density: H is ", H.rows(), " x ",
                 H.cols(), " (expected square)");
    std::string why;
    TESSEL_CHECK(Algebra<M>::conforms(H, S, &why), DimensionMismatch,
                 "density: H and S do not match: ", why);
    TESSEL_CHECK(electrons > 0 && electrons % 2 == 0, InputError,
                 "density: electrons = ", electrons,
                 " (expected an even number > 0: closed-shell, two electrons per occupied state)");
    TESSEL_CHECK(electrons / 2 < n, InputError, "density: electrons = ", electrons, " fill ",
                 electrons / 2, " states but the basis has n = ", n, " (expected at most ",
                 2 * (n - 1), ")");
    TESSEL_CHECK(opt.sign_order == 2 || opt.sign_order == 3, InputError,
                 "density: sign order = ", opt.sign_order, " (expected 2 or 3)");
    TESSEL_CHECK(opt.tol > 0 && std::isfinite(opt.tol), InputError, "density: tol = ", opt.tol,
                 " (expected > 0)");
    TESSEL_CHECK(opt.max_iter >= 1 && opt.max_sign_evaluations >= 1, InputError,
                 "density: max_iter = ", opt.max_iter,
                 ", max_sign_evaluations = ", opt.max_sign_evaluations, " (expected >= 1)");
    TESSEL_CHECK(opt.occupation_tol > 0, InputError,
                 "density: occupation_tol = ", opt.occupation_tol, " (expected > 0)");
    TESSEL_CHECK(!opt.mu || std::isfinite(*opt.mu), InputError, "density: mu = ", *opt.mu,
                 " (expected a finite energy)");
    TESSEL_CHECK(opt.method != DensityMethod::McWeeny || opt.mu, InputError,
                 "density: mcweeny needs mu inside the HOMO-LUMO gap (--mu)");
  });
  const bool fh = alg.finite(H), fs = alg.finite(S);
  ctx.agree([&] {
    TESSEL_CHECK(fh, InputError, "density: H has NaN or Inf entries");
    TESSEL_CHECK(fs, InputError, "density: S has NaN or Inf entries");
  });
  const double ah = asymmetry(alg, H), as = asymmetry(alg, S);
  ctx.agree([&] {
    TESSEL_CHECK(ah <= opt.symmetry_tol, InputError,
                 "density: H is not symmetric: ||H - H^T||_F / ||H||_F = ", ah,
                 " (expected <= ", opt.symmetry_tol, ")");
    TESSEL_CHECK(as <= opt.symmetry_tol, InputError,
                 "density: S is not symmetric: ||S - S^T||_F / ||S||_F = ", as,
                 " (expected <= ", opt.symmetry_tol, ")");
  });
}

/// DensityOptions::inputs_needed, when set: H and S needed (or not) from here on.
void inputs_needed(const DensityOptions& opt, bool h, bool s) {
  if (opt.inputs_needed) opt.inputs_needed(h, s);
}

/// DensityOptions::park_z, when set and the matrices are block-sparse: Z needed (or not).
template <class M>
void z_needed(const DensityOptions& opt, M& z, bool needed) {
  if constexpr (std::is_same_v<M, sparse::BlockSparseMatrix<double>>)
    if (opt.park_z) opt.park_z(z, needed);
}

/// Pure. The filter threshold of each stage (unset options: eps times the stage's factor)
/// and the number of final McWeeny steps, into `out`.
template <class M>
void set_stage_eps(double eps, const DensityOptions& opt, DensityResult<M>& out) {
  auto stage = [eps](double v, double factor) { return v >= 0 ? v : eps * factor; };
  out.eps_iteration = eps;
  out.eps_inverse = stage(opt.eps_inverse, kEpsInverseFactor);
  out.eps_transform = stage(opt.eps_transform, kEpsTransformFactor);
  out.eps_final = stage(opt.eps_final, kEpsFinalFactor);
  out.final_steps = opt.final_steps >= 0 ? opt.final_steps : kFinalSteps;
}

/// Collective. Z = S^-1/2 (Newton-Schulz, filtered at eps_inverse).
template <class M>
InverseResult<M> inverse_sqrt_stage(Algebra<M>& alg, const M& S, const DensityOptions& opt,
                                    DensityResult<M>& out) {
  InverseOptions io = opt.inverse;
  if (!io.on_step) io.on_step = opt.on_step;
  InverseResult<M> z;
  inputs_needed(opt, false, true);
  {
    FilterScope<M> fs(alg, out.eps_inverse);
    z = inverse_sqrt(alg, S, io);
  }
  out.inverse_iterations = z.iterations;
  out.inverse_scale = z.scale;
  return z;
}

/// Collective. Ht = Z H Z (filtered at eps_transform) and its Lanczos bounds: InputError on
/// every rank when they have no spread, or a given mu lies outside them.
template <class M>
M orthogonal_hamiltonian(Algebra<M>& alg, const M& H, const M& Z, const DensityOptions& opt,
                         DensityResult<M>& out) {
  Context& ctx = alg.ctx();
  M ht;
  inputs_needed(opt, true, false);
  {
    FilterScope<M> fs(alg, out.eps_transform);
    ht = alg.product(alg.product(Z, H), Z);
  }
  alg.symmetrize(ht);
  out.bounds = lanczos_bounds(alg, ht, opt.lanczos_steps);
  ctx.agree([&] {
    TESSEL_CHECK(out.bounds.hi > out.bounds.lo, InputError,
                 "density: S^-1/2 H S^-1/2 has no spread of eigenvalues (Lanczos bounds [",
                 out.bounds.lo, ", ", out.bounds.hi, "]): no occupation can be resolved",
                 alg.filter_eps() > 0
                     ? detail::concat("; occupation lost: the filter threshold eps = ",
                                      alg.filter_eps(), " is too large for this system")
                     : std::string());
  });
  if (opt.mu) {
    const double mu = *opt.mu;
    ctx.agree([&] {
      TESSEL_CHECK(mu > out.bounds.lo && mu < out.bounds.hi, InputError, "density: mu = ", mu,
                   " is outside the spectrum [", out.bounds.lo, ", ", out.bounds.hi,
                   "] of S^-1 H (Lanczos bounds): every state would be ",
                   mu <= out.bounds.lo ? "empty" : "occupied");
    });
  }
  return ht;
}

/// Collective. The sign iteration with its mu search (or the given mu): Pt = (I - X) / 2,
/// returned; the nonsymmetric form sets out.P = (S^-1 - X S^-1) / 2 itself and returns an
/// empty matrix.
template <class M>
M sign_stage(Algebra<M>& alg, const M& H, const M& Z, const M& ht, const DensityOptions& opt,
             std::int64_t n, std::int64_t nocc, DensityResult<M>& out) {
  M sinv;
  M a;
  if (opt.nonsymmetric) {
    FilterScope<M> fs(alg, out.eps_transform);
    sinv = alg.product(Z, Z);
    a = alg.product(sinv, H);
  }
  inputs_needed(opt, false, false);
  SignSearch<M> s{alg, opt.nonsymmetric ? a : ht, out.bounds, opt, n, nocc, out, M{}};
  if (opt.mu) {
    out.mu = *opt.mu;
    s.count(out.mu);
    out.homo_lumo_lo = out.homo_lumo_hi = out.mu;
  } else {
    out.mu = s.search();
  }
  M pt;
  if (opt.nonsymmetric) {  // P = (S^-1 - X S^-1) / 2
    FilterScope<M> fs(alg, out.eps_transform);
    M xs = alg.product(s.x, sinv);
    alg.add(sinv, 0.5, xs, -0.5);
    alg.symmetrize(sinv);
    out.P = std::move(sinv);
  } else {
    pt = std::move(s.x);  // Pt = (I - X) / 2
    alg.scale(pt, -0.5);
    alg.shift(pt, 0.5);
  }
  return pt;
}

/// Collective. TRS4, canonical, TRS2 or McWeeny purification of Ht (purify_generic): Pt,
/// with mu from the step polynomials. X is built in Ht's storage (Ht is not needed after the
/// start): the peak of memory is in these steps' products, so each matrix fewer alive here
/// lowers it. `ht` is empty afterwards.
template <class M>
M purify_stage(Algebra<M>& alg, M& ht, const DensityOptions& opt, std::int64_t nocc,
               DensityResult<M>& out) {
  PurifyMethod pm = opt.method == DensityMethod::Trs4      ? PurifyMethod::Trs4
                    : opt.method == DensityMethod::Trs2    ? PurifyMethod::Trs2
                    : opt.method == DensityMethod::McWeeny ? PurifyMethod::McWeeny
                                                           : PurifyMethod::Canonical;
  inputs_needed(opt, false, false);
  auto r = purify_generic(alg, std::move(ht), nocc, pm, opt.mu, opt.tol, opt.max_iter, opt.on_step);
  out.mu = r.mu;
  out.iterations = r.iterations;
  out.residual = r.idempotency_error;
  return std::move(r.X);
}

/// Collective. P = Z Pt Z (filtered at eps_transform); Ht and Pt are freed on the way.
template <class M>
void back_transform(Algebra<M>& alg, const M& Z, M& ht, M& pt, DensityResult<M>& out) {
  ht = M{};  // each matrix is freed as soon as nothing after needs it: the peak of memory
  FilterScope<M> fs(alg, out.eps_transform);
  M zp = alg.product(Z, pt);
  pt = M{};
  out.P = alg.product(zp, Z);
  alg.symmetrize(out.P);
}

/// Collective. ||PSP - P||_F / ||P||_F, then the final McWeeny steps in the non-orthogonal
/// basis with the true S, P <- 3 PSP - 2 PSPSP (reusing PS and PSP: one more product per
/// step). They make P an S-projector onto its own subspace: the errors of first order in the
/// band energy (the normalization errors of an inexact S^-1/2, Z S Z - I, and the
/// occupied-occupied / virtual-virtual parts of the truncation errors) vanish; what remains
/// is second order (the subspace rotation) plus the truncation of these products.
template <class M>
void final_mcweeny(Algebra<M>& alg, const M& S, const DensityOptions& opt, DensityResult<M>& out) {
  FilterScope<M> fs(alg, out.final_steps > 0 ? out.eps_final : -1.0);
  M ps = alg.product(out.P, S);
  inputs_needed(opt, false, false);  // S is read again only by the next step's PS
  M psp = alg.product(ps, out.P);
  {
    M d = alg.copy(psp);
    alg.add(d, 1.0, out.P, -1.0);
    const double np = alg.norm(out.P);
    out.idempotency = alg.norm(d) / (np > 0 ? np : 1.0);
  }
  for (int k = 0; k < out.final_steps; ++k) {
    const Stopwatch t;
    if (k > 0) {
      inputs_needed(opt, false, true);
      ps = alg.product(out.P, S);
      inputs_needed(opt, false, false);
      psp = alg.product(ps, out.P);
    }
    out.P = M{};  // P <- 3 PSP - 2 PS PSP: the old P is not needed by the product
    M pspsp = alg.product(ps, psp);
    ps = M{};
    alg.add(psp, 3.0, pspsp, -2.0);
    alg.symmetrize(psp);
    out.P = std::move(psp);
    if (opt.on_step) {
      inputs_needed(opt, false, true);
      IterationInfo s;
      s.stage = "final mcweeny";
      s.iteration = k;
      s.residual = out.idempotency;
      s.occupation = 2 * alg.dot(out.P, S);
      s.blocks = alg.blocks(out.P);
      s.seconds = t.seconds();
      opt.on_step(s);
    }
  }
}

/// Collective. tr(PS) and 2 tr(PH), then the occupation (unless the sign's mu was given) and
/// the idempotency against their tolerances: InputError on every rank naming eps.
template <class M>
void check_result(Algebra<M>& alg, const M& H, const M& S, std::int64_t electrons,
                  const DensityOptions& opt, DensityResult<M>& out) {
  out.trace_ps = alg.dot(out.P, S);
  out.band_energy = 2 * alg.dot(out.P, H);
  const double occ = 2 * out.trace_ps;
  const bool given_mu = opt.mu && opt.method == DensityMethod::Sign;
  alg.ctx().agree([&] {
    TESSEL_CHECK(std::isfinite(occ), Error, "density: the occupation is not finite");
    TESSEL_CHECK(
        given_mu || std::abs(occ - static_cast<double>(electrons)) <= opt.occupation_tol,
        InputError, "density: occupation lost: 2 tr(P S) = ", occ, " but electrons = ", electrons,
        " (|difference| > occupation_tol = ", opt.occupation_tol,
        "): the filter threshold eps = ", alg.filter_eps(), " is too large for this system");
    TESSEL_CHECK(out.idempotency <= opt.idempotency_tol, InputError,
                 "density: idempotency lost: ||P S P - P||_F / ||P||_F = ", out.idempotency,
                 " (> idempotency_tol = ", opt.idempotency_tol,
                 "): the filter threshold eps = ", alg.filter_eps(),
                 " is too large for this system");
  });
}

// Sign and the purifications (validated input): Z = S^-1/2 -> Ht = Z H Z -> Pt (sign or a
// purification) -> P = Z Pt Z -> the final McWeeny steps -> the checks -> W = P H P (option).
// Each matrix is freed as soon as nothing after needs it (the peak of memory), and H and S
// are announced as needed or not (DensityOptions::inputs_needed) between the stages.
template <class M>
DensityResult<M> iterate(Algebra<M>& alg, const M& H, const M& S, std::int64_t electrons,
                         const DensityOptions& opt) {
  const std::int64_t n = Algebra<M>::n(H), nocc = electrons / 2;
  const auto m0 = alg.stats().multiplications;
  DensityResult<M> out;
  set_stage_eps(alg.filter_eps(), opt, out);
  InverseResult<M> z = inverse_sqrt_stage(alg, S, opt, out);
  const M& Z = z.X;
  M ht = orthogonal_hamiltonian(alg, H, Z, opt, out);
  const bool sign = opt.method == DensityMethod::Sign;
  if (!sign) z_needed(opt, z.X, false);  // read again only by P = Z X Z
  M pt =
      sign ? sign_stage(alg, H, Z, ht, opt, n, nocc, out) : purify_stage(alg, ht, opt, nocc, out);
  if (!sign) z_needed(opt, z.X, true);
  if (!(sign && opt.nonsymmetric)) back_transform(alg, Z, ht, pt, out);
  pt = M{};
  ht = M{};
  z.X = M{};
  inputs_needed(opt, true, false);
  out.band_energy_before_final = 2 * alg.dot(out.P, H);
  inputs_needed(opt, false, true);
  final_mcweeny(alg, S, opt, out);
  inputs_needed(opt, true, true);
  check_result(alg, H, S, electrons, opt, out);
  if (opt.energy_weighted) out.W = alg.product(alg.product(out.P, H), out.P);
  out.multiplications = alg.stats().multiplications - m0;
  return out;
}

// The stored fraction of S's blocks (dense: 1), for the cost model of auto. Collective.
double stored_fraction(DenseAlgebra&, const dense::DistMatrix<double>&) { return 1.0; }
double stored_fraction(SparseAlgebra& alg, const sparse::BlockSparseMatrix<double>& s) {
  const double nb = s.distribution().row_blocks().count();
  return static_cast<double>(alg.blocks(s)) / (nb * nb);
}

}  // namespace

template <class M>
DensityResult<M> density(Algebra<M>& alg, const M& H, const M& S, std::int64_t electrons,
                         const DensityOptions& opt) {
  validate(alg, H, S, electrons, opt);
  DensityOptions o = opt;
  MethodChoice choice;
  if (opt.method == DensityMethod::Auto) {
    choice = choose_density_method(Algebra<M>::n(H), stored_fraction(alg, S), alg.ctx().size(),
                                   !std::is_same_v<M, dense::DistMatrix<double>>,
                                   diagonalization_built(), opt.mu.has_value());
    o.method = choice.method;
  }
  DensityResult<M> r = o.method == DensityMethod::Diag ? density_diag(alg, H, S, electrons, o)
                                                       : iterate(alg, H, S, electrons, o);
  r.method = o.method;
  r.method_reason = choice.reason;
  return r;
}

template DensityResult<dense::DistMatrix<double>> density(DenseAlgebra&,
                                                          const dense::DistMatrix<double>&,
                                                          const dense::DistMatrix<double>&,
                                                          std::int64_t, const DensityOptions&);
template DensityResult<sparse::BlockSparseMatrix<double>> density(
    SparseAlgebra&, const sparse::BlockSparseMatrix<double>&,
    const sparse::BlockSparseMatrix<double>&, std::int64_t, const DensityOptions&);

}  // namespace tessel::solvers

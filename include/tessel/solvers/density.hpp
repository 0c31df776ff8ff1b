#pragma once
/// @file density.hpp
/// Linear-scaling density matrices (seed 001 §1, CP2K LS_SCF, NTPoly), each solver written
/// once over Algebra<M> (algebra.hpp) and instantiated for dense DistMatrix<double> and
/// block-sparse BlockSparseMatrix<double>:
///  - lanczos_bounds: extreme eigenvalues of a symmetric matrix (or operator) by Lanczos;
///  - inverse_sqrt / inverse: S^-1/2 and S^-1 by Newton-Schulz of order 2 or 3 scaled from
///    Lanczos bounds; inverse_hotelling: S^-1 by X <- 2X - X S X;
///  - sign: the matrix sign function by Newton-Schulz (order 2 or 3);
///  - density: P = 1/2 (I - sign(S^-1 H - mu I)) S^-1 (or its symmetric form through S^-1/2)
///    with mu from the electron count (bracket + Illinois regula falsi on the trace), or
///    TRS4 / canonical / TRS2 / McWeeny purification of S^-1/2 H S^-1/2 with mu recovered
///    from the purification polynomial; W = P H P on request.
/// P is the density of one spin channel: tr(P S) = electrons / 2, band energy 2 tr(P H).
/// docs/density.md has the formulas, stopping rules and errors. All calls are collective over
/// the algebra's Context; every error is thrown on every rank.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tessel/solvers/algebra.hpp"
#include "tessel/solvers/purify.hpp"

namespace tessel::solvers {

/// One line of progress: the stage ("lanczos", "inverse sqrt", "sign", "mu", "trs4", ...),
/// its iteration, residual, occupation (electrons, when known), mu, blocks stored, seconds.
struct IterationInfo {
  std::string stage;
  int iteration = 0;
  double residual = 0;
  double occupation = 0;
  double mu = 0;
  double band_energy = 0;  ///< purification: 2 tr(X Ht) of this step's X (NaN: not taken)
  std::int64_t blocks = 0;
  double seconds = 0;
};
using ProgressFn = std::function<void(const IterationInfo&)>;

/// Bounds of the spectrum: [lo, hi] are the extreme Ritz values widened by their residual
/// norms (estimates that enclose the spectrum in practice, not guaranteed bounds).
struct SpectralBounds {
  double lo = 0, hi = 0;
  double ritz_min = 0, ritz_max = 0;
  int steps = 0;
  /// All Ritz values (increasing) and their weights (squared first components of the Ritz
  /// vectors: the start vector's spectral measure, summing to 1) — a density-of-states estimate.
  std::vector<double> ritz, weight;
};

/// Pure computation over a collective operator: `k` Lanczos steps of y = op(x) (x, y of
/// length n replicated on every rank, the same on every rank) from a fixed start vector.
SpectralBounds lanczos(
    const std::function<void(const std::vector<double>&, std::vector<double>&)>& op, std::int64_t n,
    int k);
/// Pure. A first chemical potential for the sign method's search, from the Lanczos Ritz
/// values and weights of S^-1/2 H S^-1/2 (n states, nocc occupied). A HOMO-LUMO gap shows as
/// an interval between consecutive Ritz values (of non-negligible weight: at most one Ritz
/// value lies inside a gap, and it carries next to no weight) much wider than its neighbours,
/// where the cumulative weight is within a few standard deviations of nocc / n (the spectral
/// measure of a random start vector): the guess is the middle of the interval whose width is
/// the largest multiple (at least 2) of its neighbours' mean width; else the interpolated
/// count estimate (where the cumulative weight crosses nocc / n). The search still checks the
/// count: a guess, not a bound. Resolving a gap of a few percent of the spectrum's width takes
/// ~100 Lanczos steps (DensityOptions::lanczos_steps).
double mu_first_guess(const SpectralBounds& b, std::int64_t n, std::int64_t nocc);
/// Collective. lanczos over algebra.matvec(a).
template <class M>
SpectralBounds lanczos_bounds(Algebra<M>& alg, const M& a, int k = 30);

struct InverseOptions {
  int order = 2;  ///< Newton-Schulz order: 2 or 3
  double tol =
      1e-11;  ///< stop when ||I - Z S Z||_F / sqrt(n) < tol (or stagnation under filtering)
  int max_iter = 100;
  int lanczos_steps = 30;  ///< for the scaling bounds of S
  ProgressFn on_step;
};

template <class M>
struct InverseResult {
  M X;  ///< S^-1/2 (inverse_sqrt) or S^-1 (inverse, inverse_hotelling)
  int iterations = 0;
  std::int64_t multiplications = 0;
  double residual = 0;    ///< final relative residual
  SpectralBounds bounds;  ///< of S
  double scale = 0;       ///< inverse_sqrt: s of Y0 = S/s
};

/// Collective. S^-1/2 by the coupled Newton-Schulz iteration (order 2: T = (3I - ZY)/2; order 3:
/// T = (15I - 10ZY + 3(ZY)^2)/8; Y <- YT, Z <- TZ) from Y0 = S/s, Z0 = I, s from the Lanczos
/// bounds of S. InputError when S is not positive definite (a Ritz value <= 0, or the
/// iteration diverging; the message says which bound failed) or the options are bad.
template <class M>
InverseResult<M> inverse_sqrt(Algebra<M>& alg, const M& S, const InverseOptions& opt = {});
/// Collective. S^-1 = (S^-1/2)^2 from inverse_sqrt (one more product).
template <class M>
InverseResult<M> inverse(Algebra<M>& alg, const M& S, const InverseOptions& opt = {});
/// Collective. S^-1 by Hotelling's X <- 2X - X S X from X0 = 2/(lo + hi) I (order ignored).
template <class M>
InverseResult<M> inverse_hotelling(Algebra<M>& alg, const M& S, const InverseOptions& opt = {});

struct SignOptions {
  int order = 2;       ///< 2: X <- X(3I - X^2)/2; 3: X <- X(15I - 10X^2 + 3X^4)/8
  double tol = 1e-12;  ///< stop when ||I - X^2||_F < tol ||X^2||_F (or stagnation)
  int max_iter = 100;
  double mu = 0;  ///< reported in the progress lines only
  ProgressFn on_step;
};

template <class M>
struct SignResult {
  M X;
  int iterations = 0;
  std::int64_t multiplications = 0;
  double residual = 0;     ///< ||I - X^2||_F / ||X^2||_F of the returned X
  bool stagnated = false;  ///< stopped at the filtering floor above tol
};

/// Pure. The sign iteration's floor test: true when the relative residual `res` (after a step
/// from `prev`) is below min(max(1e-3, 1e3 eps), 0.1 / sqrt(n)) (eps = 0: 1e-6 for the cap's
/// first term) and fell by less than 4x. Below that floor every eigenvalue is in the quadratic
/// phase, so a smaller fall is filtering or rounding noise; the 0.1 / sqrt(n) cap keeps a single
/// eigenvalue near zero, still in its slow linear phase, from passing for noise at large n.
bool sign_floor_reached(double res, double prev, std::int64_t n, double eps);

/// Collective. sign(A) by Newton-Schulz from X0 = A / bound, where `bound` >= the spectral
/// radius of A (|lambda| / bound <= 1). Error when the residual diverges or is not finite.
template <class M>
SignResult<M> sign(Algebra<M>& alg, const M& A, double bound, const SignOptions& opt = {});
/// Collective. The same, taking A's storage for the iterate (no copy of A: one matrix less at
/// the peak of memory).
template <class M>
SignResult<M> sign(Algebra<M>& alg, M&& A, double bound, const SignOptions& opt = {});

/// Diag: diagonalization by ScaLAPACK (density_diag.hpp; only where the build has it).
/// Auto: diag or sign, chosen by choose_density_method's cost model (density_diag.hpp).
enum class DensityMethod { Sign, Trs4, Canonical, Trs2, McWeeny, Diag, Auto };
std::string to_string(DensityMethod m);
/// Pure. "sign", "trs4", "canonical", "trs2", "mcweeny", "diag", "auto" (InputError naming
/// `what` otherwise).
DensityMethod parse_density_method(const std::string& s, const std::string& what = "method");

/// The eigensolver of method diag: ScaLAPACK's pdsyevd (Auto: measured at least as fast as
/// ELPA on this project's machine, docs/density.md "The eigensolver"), ELPA 1- or 2-stage
/// (only where the build has ELPA: diag_elpa_built()).
enum class DiagSolver { Auto, Pdsyevd, Elpa1, Elpa2 };
std::string to_string(DiagSolver s);
/// Pure. "auto", "pdsyevd", "elpa1", "elpa2" (InputError naming `what` otherwise).
DiagSolver parse_diag_solver(const std::string& s, const std::string& what = "diag_solver");

struct DensityOptions {
  DensityMethod method = DensityMethod::Sign;
  DiagSolver diag_solver = DiagSolver::Auto;  ///< method diag (and auto when it chooses diag)
  int sign_order = 2;
  /// Sign method: false = symmetric form P = Z (I - sign(Z H Z - mu I)) Z / 2 with Z = S^-1/2;
  /// true = P = (I - sign(S^-1 H - mu I)) S^-1 / 2 (the seed's eq. 1).
  bool nonsymmetric = false;
  std::optional<double> mu;  ///< given: no search (must lie inside the spectrum)
  double tol = 1e-12;        ///< sign: relative residual; purification: ||X - X^2||_F
  int max_iter = 200;
  int max_sign_evaluations = 30;
  double symmetry_tol = 1e-8;    ///< ||H - H^T||_F <= tol ||H||_F (and S)
  double occupation_tol = 1e-2;  ///< |2 tr(PS) - N| above this: "occupation lost" error
  /// ||P S P - P||_F / ||P||_F above this: "idempotency lost" error (2 more products)
  double idempotency_tol = 1e-2;
  bool energy_weighted = false;  ///< also W = P H P
  InverseOptions inverse;        ///< for S^-1/2
  int lanczos_steps = 100;       ///< bounds of S^-1/2 H S^-1/2 and its gap (mu_first_guess)
  /// Filter thresholds of the stages on block-sparse matrices (docs/density.md, "Filtering
  /// by stage"); a negative value means the algebra's eps times the default factor below,
  /// 0 no filtering. The iteration itself (sign / purification) uses the algebra's eps.
  double eps_inverse = -1;    ///< S^-1/2 (default factor kEpsInverseFactor)
  double eps_transform = -1;  ///< Ht = Z H Z and P = Z Pt Z (default factor kEpsTransformFactor)
  double eps_final = -1;      ///< the final McWeeny steps (default factor kEpsFinalFactor)
  /// McWeeny steps P <- 3 PSP - 2 PSPSP on the final P with the true S, at eps_final (one
  /// product each beyond the idempotency check's PS and PSP): they remove the first-order band
  /// energy error of an inexact S^-1/2 and of the iteration's truncations. -1 = kFinalSteps.
  int final_steps = -1;
  ProgressFn on_step;
  /// Optional (the iterative methods; diag reads H and S throughout): tells the caller which
  /// of H and S the solver reads next, so that it can keep the others out of memory while the
  /// iteration runs (`tessel density --spill DIR` writes them to disk). Collective: called on
  /// every rank at the same points, in this order: (false, true) before S^-1/2; (true, false)
  /// before S^-1/2 H S^-1/2; (false, false) for the iteration; (true, false) before the band
  /// energy of P = Z X Z; (false, true) before the final McWeeny steps, (false, false) in each
  /// step once PS is formed (PSP and PS PSP do not read S), (false, true) before the next
  /// step's PS and before on_step (its occupation reads S); (true, true) before the last
  /// traces. While an input is not needed
  /// the solver keeps only its reference (the caller may free its storage); when it is needed
  /// again the caller must have restored it, same distribution and values.
  std::function<void(bool need_h, bool need_s)> inputs_needed;
  /// Optional, block-sparse purifications (trs4, canonical, trs2, mcweeny; the sign method
  /// reads Z throughout): keeps Z = S^-1/2, which the solver makes and holds, out of memory
  /// while the purification iterates, since only Ht = Z H Z before it and P = Z X Z after it
  /// read Z. Called with (Z, false) once Ht is formed (the callee may write Z and free its
  /// storage) and (Z, true) before P = Z X Z (the callee must have restored it in the same
  /// object, same distribution and values). Collective: on every rank at the same points.
  /// `tessel density --spill DIR` sets it (one matrix fewer at the purification's peak).
  std::function<void(sparse::BlockSparseMatrix<double>& z, bool needed)> park_z;
};

/// The default stage thresholds relative to the iteration's eps and the final steps
/// (measured on the CP2K water systems, docs/density.md).
inline constexpr double kEpsInverseFactor = 1.0;
inline constexpr double kEpsTransformFactor = 1.0;
inline constexpr double kEpsFinalFactor = 0.1;
inline constexpr int kFinalSteps = 1;

template <class M>
struct DensityResult {
  DensityMethod method = DensityMethod::Sign;  ///< the method that ran (auto resolved)
  std::string method_reason;  ///< auto: why it chose `method` (the cost model's line); else empty
  std::string eigensolver;    ///< diag: the solver that ran ("pdsyevd", "elpa1", "elpa2"); else ""
  M P;                        ///< density of one spin channel in the non-orthogonal basis
  M W;                        ///< P H P when energy_weighted (else empty)
  double mu = 0;
  double band_energy = 0;  ///< 2 tr(P H)
  /// 2 tr(P H) of P = Z Pt Z before the final McWeeny steps (= 2 tr(Pt Ht) in the orthogonal
  /// basis up to the filtering of the basis change; a diagnostic: what the final steps change)
  double band_energy_before_final = 0;
  /// The stage thresholds used (resolved from DensityOptions)
  double eps_inverse = 0, eps_transform = 0, eps_iteration = 0, eps_final = 0;
  int final_steps = 0;
  double trace_ps = 0;       ///< tr(P S) (= electrons / 2)
  double idempotency = 0;    ///< ||P S P - P||_F / ||P||_F of P before the final McWeeny steps
  double residual = 0;       ///< last sign residual or ||X - X^2||_F of the purification
  int iterations = 0;        ///< sign / purification steps, all mu evaluations together
  int sign_evaluations = 0;  ///< sign iterations run (mu search); 0 for purification
  int inverse_iterations = 0;
  std::int64_t multiplications = 0;           ///< every product, S^-1/2 and basis changes included
  double homo_lumo_lo = 0, homo_lumo_hi = 0;  ///< sign search: final bracket of mu
  SpectralBounds bounds;                      ///< of S^-1/2 H S^-1/2
  double inverse_scale = 0;  ///< s of S^-1/2's Y0 = S/s (for a peer running the same iteration)
};

/// Collective. The density matrix of (H, S) with `electrons` electrons (even, 2 .. 2(n-1)).
/// method Auto resolves to Diag or Sign (choose_density_method, from n, the stored fraction
/// of S and the rank count); Diag runs density_diag after the input checks below.
/// InputError (every rank): H or S not square/same structure, not finite, not symmetric
/// (with the relative asymmetry), S not positive definite, odd or out-of-range electrons,
/// mu outside the spectrum, occupation lost (filter too large), no gap at the electron count;
/// Error: no convergence.
template <class M>
DensityResult<M> density(Algebra<M>& alg, const M& H, const M& S, std::int64_t electrons,
                         const DensityOptions& opt = {});

/// Collective. Purification (canonical, McWeeny, TRS2, TRS4: the coefficient steps of
/// purify_steps) of a symmetric Ht in an orthogonal basis with nocc occupied states, over any
/// algebra (also purify()'s SymmSquareCube algebra). Returns X (the density) and mu recovered
/// from the composed step polynomials. Stops as purify.hpp says (tol, the rounding/filtering
/// floor, max_iter, no clear occupation over stall_window steps).
template <class M>
struct PurifyGenericResult {
  M X;
  int iterations = 0;
  double idempotency_error = 0;
  double mu = 0;
  double trace = 0;           ///< tr X of the returned X
  double band_energy = 0;     ///< 2 tr(X Ht) of the returned X
  std::int64_t products = 0;  ///< products of the steps actually used
  bool stopped = false;       ///< PurifyCheckpointing::stop_after ended it unconverged
};
/// Checkpoint and restart of purify_generic, for every algebra. Only purify() uses it (on the
/// SymmSquareCube algebra); density() passes none, so `tessel density` cannot checkpoint.
///  - every > 0: after each step whose count is a multiple of `every` (and after the step at
///    which stop_after stops), on_checkpoint(state, X, best) is called, collective over the
///    algebra's ranks (alg.agree's), best null unless state.has_best; a throw on any of them
///    fails purify_generic on all of them.
///  - resume: continue from that state, with resume_x (and resume_best when
///    resume->has_best) in the algebra's layout; the run then ends bitwise as the
///    uninterrupted one (same ranks and options).
///  - stop_after > 0: stop unconverged after that many steps (PurifyGenericResult::stopped).
template <class M>
struct PurifyCheckpointing {
  int every = 0;
  std::function<void(const PurifyState&, const M& x, const M* best)> on_checkpoint;
  const PurifyState* resume = nullptr;
  const M* resume_x = nullptr;
  const M* resume_best = nullptr;
  int stop_after = 0;
};

template <class M>
PurifyGenericResult<M> purify_generic(Algebra<M>& alg, const M& Ht, std::int64_t nocc,
                                      PurifyMethod method, std::optional<double> mu, double tol,
                                      int max_iter, const ProgressFn& on_step,
                                      int stall_window = 40,
                                      const PurifyCheckpointing<M>& checkpointing = {});
/// The same, consuming Ht: X is built in Ht's own storage, so one matrix fewer is alive through
/// every step (Ht is empty afterwards). X, mu and the stopping are bitwise those of the call
/// above; no energy is taken against Ht: IterationInfo::band_energy and the result's
/// band_energy are NaN. Collective over the algebra's ranks. No checkpointing.
template <class M>
PurifyGenericResult<M> purify_generic(Algebra<M>& alg, M&& Ht, std::int64_t nocc,
                                      PurifyMethod method, std::optional<double> mu, double tol,
                                      int max_iter, const ProgressFn& on_step,
                                      int stall_window = 40);

}  // namespace tessel::solvers

#pragma once
/// @file purify.hpp
/// Purification: the density matrix D of a symmetric Fock matrix F in an orthogonal basis
/// with `nocc` occupied states, from powers of D by SymmSquareCube (seed 000) on a p x p x p
/// mesh; the methods are listed at PurifyMethod (docs/symm_square_cube.md has the formulas).
/// Canonical (Palser & Manolopoulos, as in GTFock pscf/purif.c), the default:
///   start: Gershgorin bounds hmin, hmax of F; mu = tr(F)/n;
///          lambda = min(nocc/(hmax - mu), (n - nocc)/(mu - hmin));
///          D0 = (lambda/n)(mu I - F) + (nocc/n) I
///   step:  c = tr(D^2 - D^3)/tr(D - D^2); c < 1/2: D = ((1-2c)D + (1+c)D^2 - D^3)/(1-c),
///          else D = ((1+c)D^2 - D^3)/c. Near convergence tr(D - D^2) is rounding noise: when
///          it is below 10 n eps or c falls outside [0, 1] the step is McWeeny's (c = 1/2).
///   stop (every method): ||D - D^2||_F < tol, at most max_iter steps; or the rounding floor
///          (large n): below 1e-6 and no new lowest ||D - D^2||_F in 3 steps -> the best D.
/// A zero (or unresolvably small) HOMO-LUMO gap leaves eigenvalues stuck at occupation 1/2:
/// ||D - D^2||_F then stops decreasing; when it has not halved over `stall_window` steps
/// purify throws InputError ("no clear occupation") instead of running to max_iter.
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/dense/symm_square_cube.hpp"

namespace tessel::solvers {

/// The purification scheme.
///  - Canonical: Palser-Manolopoulos (above), trace conserved, no mu needed.
///  - McWeeny: D0 = 1/2 I + lambda (mu I - F) (Gershgorin-scaled), D <- 3 D^2 - 2 D^3; needs mu
///    inside the HOMO-LUMO gap (PurifyOptions::mu).
///  - Trs2, Trs4: Niklasson's trace-resetting purification (as NTPoly): X0 = (hmax I - F) /
///    (hmax - hmin); TRS2 X <- X^2 or 2X - X^2 by the trace; TRS4 X <- F(X) + gamma G(X) with
///    F = X^2 (4X - 3X^2), G = X^2 (I - X)^2.
enum class PurifyMethod { Canonical, McWeeny, Trs2, Trs4 };

/// Pure. "canonical", "mcweeny", "trs2", "trs4".
std::string to_string(PurifyMethod m);
/// Pure. Parses the names of to_string; InputError naming `what` and the accepted values.
PurifyMethod parse_purify_method(const std::string& s, const std::string& what = "method");

/// One purification step, as reported to PurifyOptions::on_step.
struct PurifyStep {
  int iteration = 0;             ///< 0 = the starting guess
  double idempotency_error = 0;  ///< ||D - D^2||_F of this step's D
  double trace = 0;              ///< tr(D)
  double band_energy = 0;        ///< 2 tr(D F) (orthogonal basis)
  double seconds = 0;            ///< wall time of this step
};

/// The scalar state of a purification between two steps: with the iterate X (and, below the
/// rounding floor, the best iterate so far) it determines the rest of the run bitwise. A
/// checkpoint (PurifyOptions::on_checkpoint) hands it out; PurifyOptions::resume takes it back.
/// Everything computed once at step 0 (the spectral bounds, the starting guess) is kept here,
/// so a resumed run never recomputes it. Shared by every algebra (purify_generic, density.hpp).
struct PurifyState {
  int iteration = 0;          ///< steps taken: X is the iterate that enters step `iteration` (>= 1)
  double hmin = 0, hmax = 0;  ///< Gershgorin bounds of the purified matrix (from step 0)
  double trace_f = 0;         ///< its trace
  double start_a = 0, start_b = 0;   ///< X0 = a F + b I (for mu)
  std::vector<double> coefficients;  ///< c1..c4 of each step taken (4 per step), for mu
  std::vector<double> history;       ///< ||X - X^2||_F of steps 0 .. iteration-1 (stall test)
  double best_err = std::numeric_limits<double>::infinity();  ///< lowest ||X - X^2||_F so far
  double best_trace = 0, best_energy = 0;  ///< tr X and 2 tr(X F) of that best iterate
  int best_iteration = 0, behind = 0;      ///< its step; steps since the best residual last halved
  /// The best iterate is part of the state (only when best_err is below the rounding floor:
  /// above it the floor rule cannot return it before a better one replaces it).
  bool has_best = false;
};

/// A resumed purification: the state and the matrices of a checkpoint, in any layout over
/// the context (purify redistributes them, bit for bit). `best` is empty unless
/// state.has_best.
struct PurifyResume {
  PurifyState state;
  dense::DistMatrix<double> X, best;
};

struct PurifyOptions {
  PurifyMethod method = PurifyMethod::Canonical;
  /// McWeeny only: the chemical potential, strictly inside the HOMO-LUMO gap. Unset: purify
  /// refuses McWeeny with an InputError (it cannot be bounded from F without a spectrum).
  std::optional<double> mu;
  double tol = 1e-11;           ///< stop when ||D - D^2||_F < tol
  int max_iter = 200;           ///< iteration cap
  int stall_window = 40;        ///< zero-gap detection window (steps)
  double symmetry_tol = 1e-10;  ///< F must satisfy max|F - F^T| <= symmetry_tol * max|F|
  dense::SscOptions ssc{};      ///< algorithm, n_dup, mesh edge p of SymmSquareCube
  /// Called after every step on the active ranks (context rank 0 is always one of them). If it
  /// throws on any of them, purify() throws a tessel::Error naming the exception on every
  /// rank of the context (the call is agreed among the active ranks: one allreduce a step).
  std::function<void(const PurifyStep&)> on_step;
  /// Checkpointing: after every `checkpoint_every`-th step (state.iteration % checkpoint_every
  /// == 0; 0 = never) and after the step at which `stop_after` stops, on_checkpoint is called
  /// with the state and this rank's part of the iterate X and of the best iterate (null unless
  /// state.has_best), both on the layout of plane 0 of the SymmSquareCube mesh (their layouts
  /// span the whole context; the inactive ranks and the other planes hold nothing). Collective
  /// over `active`, the active ranks of the mesh only (context rank 0 among them; the
  /// inactive ranks wait in SymmSquareCube::release()): io::write_checkpoint over `active`
  /// writes a checkpoint file. A throw on any active rank fails purify() on every rank.
  int checkpoint_every = 0;
  std::function<void(const comm::Comm& active, const PurifyState& state,
                     const dense::DistMatrix<double>& X, const dense::DistMatrix<double>* best)>
      on_checkpoint;
  /// Resume from a checkpoint (the same options, ranks and input, else the result differs):
  /// the iteration continues at resume->state.iteration and ends bitwise as the
  /// uninterrupted run. Null: start from F.
  std::shared_ptr<const PurifyResume> resume;
  /// > 0: stop after this many steps (after its checkpoint) even if not converged;
  /// PurifyResult::stopped is then true and D is that iterate, not a density matrix (for
  /// jobs with a time limit, and tests of restart).
  int stop_after = 0;
  /// Non-orthogonal path: Newton-Schulz iteration for S^-1/2 stops when ||I - Z Y||_F (Y = S Z
  /// in exact arithmetic) is below max(ns_tol, 10 n eps), at most ns_max_iter steps.
  double ns_tol = 1e-12;
  int ns_max_iter = 100;
};

struct PurifyResult {
  dense::DistMatrix<double> D;   ///< in F's layout
  int iterations = 0;            ///< purification steps taken
  double idempotency_error = 0;  ///< ||D - D^2||_F of the returned D (>= tol at the floor)
  double trace_error = 0;        ///< |tr(D) - nocc|
  double band_energy = 0;        ///< 2 tr(D F)
  int p = 1, n_dup = 1;
  std::string mesh;
  PurifyMethod method = PurifyMethod::Canonical;
  double seconds = 0;      ///< wall time of the purification iterations
  double ssc_seconds = 0;  ///< of which in SymmSquareCube (max over ranks)
  double flops = 0;        ///< flops of the dense products: 2 n^3 per product
  int ns_iterations = 0;   ///< Newton-Schulz steps (non-orthogonal path; else 0)
  double ns_seconds = 0;   ///< wall time of S^-1/2 and the basis changes
  /// PurifyOptions::stop_after ended the run unconverged: D is the iterate after `iterations`
  /// steps (not a density matrix); the errors and energy are those of the last step's input.
  bool stopped = false;
};

/// Collective. Throws on every rank: DimensionMismatch (F not square), InputError (nocc not
/// in 1 .. n-1, NaN/Inf or non-symmetric F, bad options, zero gap), Error (no convergence in
/// max_iter steps). Ledger phases "purify/..." and "ssc/compute".
PurifyResult purify(Context& ctx, const dense::DistMatrix<double>& F, std::int64_t nocc,
                    const PurifyOptions& opt = {});

/// Collective. Non-orthogonal basis: F and the overlap S (same shape and layout). S^-1/2 = Z
/// by Newton-Schulz with dense::multiply; F' = Z F Z is purified; D = Z D' Z is returned in
/// the non-orthogonal basis (tr(D S) = nocc). band_energy = 2 tr(D F). Throws InputError on
/// every rank when S is not symmetric, not finite or not positive definite (the iteration
/// diverges or stalls), besides the errors of the orthogonal purify.
PurifyResult purify(Context& ctx, const dense::DistMatrix<double>& F,
                    const dense::DistMatrix<double>& S, std::int64_t nocc,
                    const PurifyOptions& opt = {});

}  // namespace tessel::solvers

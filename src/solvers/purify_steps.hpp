#pragma once
// Private: the polynomial steps of the purification methods. Each method is a starting guess
// X0 = a F + b I and a step X <- c1 X + c2 X^2 + c3 X^3 + c4 X^4 whose coefficients depend
// only on traces; the driver (purify.cpp) computes the powers, the traces and the stopping
// tests, identical for every method.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "tessel/solvers/purify.hpp"

namespace tessel::solvers::steps {

/// What the driver knows about F before the first step (replicated on the active ranks).
struct Bounds {
  double hmin = 0, hmax = 0;  ///< Gershgorin bounds of the spectrum of F
  double trace = 0;           ///< tr F
  std::int64_t n = 0, nocc = 0;
};

/// X0 = a F + b I.
struct Start {
  double a = 0, b = 0;
};

/// Traces of the current X (those of the powers the method computes; the rest are 0).
struct Traces {
  double t1 = 0, t2 = 0, t3 = 0, t4 = 0;
};

/// X <- c[0] X + c[1] X^2 + c[2] X^3 + c[3] X^4.
using Coefficients = std::array<double, 4>;

/// Throws InputError (call inside ctx.agree) for nocc outside 1 .. n-1 or bad options (tol,
/// max_iter, stall_window, McWeeny without a finite mu). Shared by both purify overloads.
void check_options(const PurifyOptions& opt, std::int64_t n, std::int64_t nocc);

/// Throws InputError (call inside agree) unless `st` is a consistent resume state: iteration
/// >= 1, 4 coefficients and one residual per step taken, best_iteration < iteration, finite
/// bounds, and the matrices given (`have_x`; `have_best` when st.has_best).
void check_resume(const PurifyState& st, bool have_x, bool have_best);

/// The highest power of X a method's step needs: 2 (TRS2: run_square), 3 (canonical,
/// McWeeny: run), 4 (TRS4: run, then run_square on X^2).
int highest_power(PurifyMethod m);

/// The starting guess, or a message (InputError) when the method cannot start from these
/// bounds (McWeeny: mu outside (hmin, hmax)).
Start start_canonical(const Bounds& b);
Start start_mcweeny(const Bounds& b, double mu, std::string* error);
Start start_trs(const Bounds& b);

/// One step's coefficients from the traces of X.
Coefficients step_canonical(const Traces& t, const Bounds& b);
Coefficients step_mcweeny();
Coefficients step_trs2(const Traces& t, const Bounds& b);
Coefficients step_trs4(const Traces& t, const Bounds& b);

}  // namespace tessel::solvers::steps

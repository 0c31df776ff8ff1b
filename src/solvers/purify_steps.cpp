// The starting guesses and polynomial steps of canonical (Palser-Manolopoulos), McWeeny, TRS2
// and TRS4 (Niklasson) purification, as coefficients for the driver in purify.cpp.
#include "purify_steps.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tessel/core/error.hpp"

namespace tessel::solvers::steps {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

// Below this, a trace difference is rounding noise (tr(X - X^2) near convergence).
double noise(const Bounds& b) { return 10 * static_cast<double>(b.n) * kEps; }

}  // namespace

int highest_power(PurifyMethod m) {
  switch (m) {
    case PurifyMethod::Trs2: return 2;
    case PurifyMethod::Trs4: return 4;
    default: return 3;
  }
}

// D0 = (lambda/n)(mu I - F) + (nocc/n) I with mu = tr(F)/n (GTFock).
Start start_canonical(const Bounds& b) {
  const double nd = static_cast<double>(b.n), no = static_cast<double>(b.nocc);
  const double mu = b.trace / nd;
  double lambda = std::min(no / (b.hmax - mu), (nd - no) / (mu - b.hmin));
  if (!(b.hmax > mu) || !(mu > b.hmin)) lambda = 0;  // F = mu I: D0 = (nocc/n) I (no gap)
  return {-lambda / nd, lambda / nd * mu + no / nd};
}

// D0 = 1/2 I + lambda (mu I - F), lambda = min(1/(hmax - mu), 1/(mu - hmin)) / 2: the
// spectrum of D0 lies in [0, 1] with mu mapped to 1/2.
Start start_mcweeny(const Bounds& b, double mu, std::string* error) {
  if (!(mu > b.hmin && mu < b.hmax)) {
    *error = ::tessel::detail::concat(
        "purify: mcweeny: mu = ", mu, " is outside the Gershgorin bounds (", b.hmin, ", ", b.hmax,
        ") of the spectrum of F (expected mu inside the HOMO-LUMO gap)");
    return {};
  }
  const double lambda = std::min(1 / (b.hmax - mu), 1 / (mu - b.hmin)) / 2;
  return {-lambda, 0.5 + lambda * mu};
}

// X0 = (hmax I - F) / (hmax - hmin): spectrum in [0, 1], the lowest states near 1.
Start start_trs(const Bounds& b) {
  const double w = b.hmax - b.hmin;
  if (!(w > 0)) return {0, static_cast<double>(b.nocc) / static_cast<double>(b.n)};  // F = c I
  return {-1 / w, b.hmax / w};
}

// c = tr(D^2 - D^3)/tr(D - D^2); McWeeny's step (c = 1/2) when the denominator is noise or
// c falls outside [0, 1].
Coefficients step_canonical(const Traces& t, const Bounds& b) {
  double den = t.t1 - t.t2, c = (t.t2 - t.t3) / den;
  if (!(den > noise(b)) || !(c >= 0 && c <= 1)) c = 0.5;
  if (c < 0.5) return {(1 - 2 * c) / (1 - c), (1 + c) / (1 - c), -1 / (1 - c), 0};
  return {0, (1 + c) / c, -1 / c, 0};
}

Coefficients step_mcweeny() { return {0, 3, -2, 0}; }

// X^2 lowers the trace, 2X - X^2 raises it.
Coefficients step_trs2(const Traces& t, const Bounds& b) {
  if (t.t1 > static_cast<double>(b.nocc)) return {0, 1, 0, 0};
  return {2, -1, 0, 0};
}

// F(X) = 4X^3 - 3X^4, G(X) = X^2 - 2X^3 + X^4, gamma = (nocc - tr F)/tr G; gamma > 6:
// 2X - X^2, gamma < 0: X^2, else F + gamma G. Near convergence tr G is rounding noise: then
// gamma = 3, i.e. McWeeny's 3X^2 - 2X^3.
Coefficients step_trs4(const Traces& t, const Bounds& b) {
  const double trf = 4 * t.t3 - 3 * t.t4, trg = t.t2 - 2 * t.t3 + t.t4;
  double gamma = (static_cast<double>(b.nocc) - trf) / trg;
  if (!(std::abs(trg) > noise(b)) || !std::isfinite(gamma)) gamma = 3;
  if (gamma > 6) return {2, -1, 0, 0};
  if (gamma < 0) return {0, 1, 0, 0};
  return {0, gamma, 4 - 2 * gamma, gamma - 3};
}

}  // namespace tessel::solvers::steps

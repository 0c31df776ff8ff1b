// The matrix sign function by Newton-Schulz, written once over Algebra<M>:
//   X0 = A / bound;  order 2: X <- X (3I - X^2) / 2           (2 products per step)
//                    order 3: X <- X (15I - 10X^2 + 3X^4) / 8 (3 products per step)
//   stop: ||I - X^2||_F < tol ||X^2||_F, or the residual stops falling quadratically once
//   small (the filtering floor), or it doubles in a step / is not finite (error).
//
// The floor rule (NoiseFloor, noise_floor.hpp). r = ||I - X^2||_F / ||X^2||_F ~ sqrt(sum_i (1 - x_i^2)^2 / n). Below
// floor = min(max(1e-3, 1e3 eps), 0.1 / sqrt(n)) every eigenvalue has |1 - x_i^2| < 0.1, i.e.
// is in the quadratic phase (1 - x'^2 ~ 3/4 (1 - x^2)^2), so an exact step divides r by more
// than 10: a step that divides it by less than 4 (r > prev / 4) is filtering or rounding noise,
// and more steps only polish the noise (the final McWeeny step of the density does that
// better). The 0.1 / sqrt(n) cap keeps one eigenvalue near mu, still in its slow linear phase
// (it alone contributes ~1/sqrt(n)), from looking like a floor when n is large.
#include <cmath>

#include "noise_floor.hpp"
#include "tessel/core/error.hpp"
#include "tessel/solvers/density.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::solvers {

namespace {
/// A step that multiplies the residual by more than this diverges. In exact arithmetic, with
/// every eigenvalue of X0 in [-1, 1], no step raises the residual (each |1 - x_i^2| falls and
/// ||X^2|| grows); rounding moves it by a few ulps when an eigenvalue of A sits at zero (X's
/// eigenvalue there stays at noise level and only slowly grows), which is no divergence. A
/// spectral bound too small puts an eigenvalue beyond sqrt(5), where it grows cubically: the
/// residual then at least doubles per step.
constexpr double kDivergenceGrowth = 2;

/// The residual below which filtering (eps > 0) or rounding may hold the iteration up.
double noise_level(double eps) { return solvers::noise_level(eps, 1e-3, 1e-6); }

/// The sign iteration's NoiseFloor (the floor rule above): one step (patience 1) that keeps
/// more than a quarter of the residual below min(noise_level, 0.1 / sqrt(n)).
NoiseFloor sign_noise_floor(std::int64_t n, double eps) {
  const double nd = static_cast<double>(std::max<std::int64_t>(1, n));
  return NoiseFloor{std::min(noise_level(eps), 0.1 / std::sqrt(nd)), 0.25, 1};
}
}  // namespace

bool sign_floor_reached(double res, double prev, std::int64_t n, double eps) {
  NoiseFloor f = sign_noise_floor(n, eps);
  f.best = prev;
  return f.reached(res);
}

template <class M>
SignResult<M> sign(Algebra<M>& alg, const M& A, double bound, const SignOptions& opt) {
  return sign(alg, alg.copy(A), bound, opt);
}

template <class M>
SignResult<M> sign(Algebra<M>& alg, M&& A, double bound, const SignOptions& opt) {
  alg.ctx().agree([&] {
    TESSEL_CHECK(opt.order == 2 || opt.order == 3, InputError, "sign: order = ", opt.order,
                 " (expected 2 or 3)");
    TESSEL_CHECK(bound > 0 && std::isfinite(bound), InputError, "sign: bound = ", bound,
                 " (expected > 0: a bound of the spectral radius of A)");
    TESSEL_CHECK(opt.tol > 0, InputError, "sign: tol = ", opt.tol, " (expected > 0)");
    TESSEL_CHECK(opt.max_iter >= 1, InputError, "sign: max_iter = ", opt.max_iter,
                 " (expected >= 1)");
  });
  const auto m0 = alg.stats().multiplications;
  const double eps = alg.filter_eps();
  const double floor = noise_level(eps);  // a growing residual above it is divergence
  const std::int64_t n = alg.n(A);
  M x = std::move(A);
  alg.scale(x, 1 / bound);
  alg.filter(x);
  SignResult<M> out;
  NoiseFloor noise_floor = sign_noise_floor(n, eps);
  double prev = INFINITY;
  Stopwatch t;
  int k = 0;
  for (;; ++k) {
    if (eps > 0 && alg.blocks(x) == 0)  // X = 0 is a fixed point: nothing left to converge
      throw InputError(detail::concat(
          "sign: filter eps = ", eps, " removed all blocks of X at step ", k,
          " (every block of X / bound, the bound ", bound, ", fell below eps): lower eps"));
    M x2 = alg.product(x, x);
    const double n2 = alg.norm(x2);
    double res;
    {  // freed before the next product
      M r = alg.copy(x2);
      alg.shift(r, -1.0);
      res = alg.norm(r) / (n2 > 0 ? n2 : 1.0);
    }
    if (opt.on_step) {
      IterationInfo s;
      s.stage = "sign";
      s.iteration = k;
      s.residual = res;
      s.mu = opt.mu;
      s.blocks = alg.blocks(x);
      s.seconds = t.seconds();
      opt.on_step(s);
      t.restart();
    }
    out.residual = res;
    if (res < opt.tol) break;
    if (!std::isfinite(res) || (res > kDivergenceGrowth * prev && res > floor))
      throw Error(detail::concat("sign: Newton-Schulz diverged: ||I - X^2||_F / ||X^2||_F = ", res,
                                 " at step ", k, ": the spectral bound ", bound,
                                 " of A is too small"));
    if (noise_floor.reached(res)) {  // the filtering (or rounding) floor
      out.stagnated = true;
      break;
    }
    if (k >= opt.max_iter)
      throw Error(detail::concat("sign: no convergence in max_iter = ", opt.max_iter,
                                 " steps: residual ", res, " (tol ", opt.tol,
                                 "); an eigenvalue of A "
                                 "is too close to zero (mu too close to an eigenvalue)"));
    prev = res;
    if (opt.order == 2) {  // X (3I - X^2)/2
      alg.scale(x2, -0.5);
      alg.shift(x2, 1.5);
      x = alg.product(x, x2);
    } else {  // X (15I - 10X^2 + 3X^4)/8
      M x4 = alg.product(x2, x2);
      alg.add(x2, -10.0 / 8, x4, 3.0 / 8);
      x4 = M{};  // not alive during the next product
      alg.shift(x2, 15.0 / 8);
      x = alg.product(x, x2);
    }
  }
  out.X = std::move(x);
  out.iterations = k;
  out.multiplications = alg.stats().multiplications - m0;
  return out;
}

template SignResult<dense::DistMatrix<double>> sign(DenseAlgebra&, const dense::DistMatrix<double>&,
                                                    double, const SignOptions&);
template SignResult<dense::DistMatrix<double>> sign(DenseAlgebra&, dense::DistMatrix<double>&&,
                                                    double, const SignOptions&);
template SignResult<sparse::BlockSparseMatrix<double>> sign(
    SparseAlgebra&, const sparse::BlockSparseMatrix<double>&, double, const SignOptions&);
template SignResult<sparse::BlockSparseMatrix<double>> sign(SparseAlgebra&,
                                                            sparse::BlockSparseMatrix<double>&&,
                                                            double, const SignOptions&);

}  // namespace tessel::solvers

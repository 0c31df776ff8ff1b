// The sign iteration's floor test (sign_floor_reached) on the exact Newton-Schulz iteration of
// a diagonal matrix, run in scalars: x_i <- x_i (3 - x_i^2) / 2 from x_i = a_i, the residual
// ||I - X^2||_F / ||X^2||_F computed from the x_i, and filtering modelled as a noise floor
// added to it. Checked: the rule stops within two steps of reaching a noise floor, and never
// while one eigenvalue near zero is still in its slow linear phase (the case the 0.1 / sqrt(n)
// cap is for; the earlier rule "below 1e-3 and > 0.8 x the previous" stopped there at n = 1e6).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "tessel/solvers/density.hpp"

namespace {

using tessel::solvers::sign_floor_reached;

struct Run {
  int steps = 0;        // steps taken when the rule stopped (or the cap was hit)
  double slow = 0;      // the x of the eigenvalue nearest zero when it stopped
  int floor_step = -1;  // first step whose exact residual is below the noise
  bool stopped = false;
};

// a: the eigenvalues of X0 (|a| <= 1); noise: the modelled filtering floor of the residual.
Run iterate(std::vector<double> x, double noise, double eps,
            const std::function<bool(double, double, std::int64_t, double)>& rule) {
  const auto n = static_cast<std::int64_t>(x.size());
  std::size_t slow_i = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::abs(x[i]) < std::abs(x[slow_i])) slow_i = i;
  Run out;
  double prev = INFINITY;
  for (int k = 0; k < 200; ++k) {
    double num = 0, den = 0;
    for (double v : x) {
      const double v2 = v * v;
      num += (1 - v2) * (1 - v2);
      den += v2 * v2;
    }
    const double exact = std::sqrt(num / den);
    if (out.floor_step < 0 && exact < noise) out.floor_step = k;
    const double res = std::sqrt(exact * exact + noise * noise);
    out.steps = k;
    out.slow = x[slow_i];
    if (res < 1e-14 || (k > 0 && rule(res, prev, n, eps))) {
      out.stopped = true;
      return out;
    }
    prev = res;
    for (double& v : x) v = v * (3 - v * v) / 2;
  }
  return out;
}

// n eigenvalues of X0, half in [-1, -gap], half in [gap, 1], one at `slow`.
std::vector<double> spectrum(std::int64_t n, double gap, double slow, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(gap, 1.0);
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = (i % 2 ? -1 : 1) * u(g);
  x[0] = slow;
  return x;
}

bool old_rule(double res, double prev, std::int64_t, double eps) {
  const double floor = eps > 0 ? std::max(1e-3, 1e3 * eps) : 1e-6;
  return res < floor && res > 0.8 * prev;
}

TEST(SignFloor, StopsWithinTwoStepsOfTheNoiseFloor) {
  for (std::int64_t n : {200, 1536, 20000})
    for (double noise : {1e-5, 1e-7, 3e-9}) {
      auto r = iterate(spectrum(n, 0.05, 0.05, 7), noise, 1e-6, sign_floor_reached);
      ASSERT_TRUE(r.stopped) << "n " << n << " noise " << noise;
      ASSERT_GE(r.floor_step, 0);
      EXPECT_LE(r.steps, r.floor_step + 2) << "n " << n << " noise " << noise;
      EXPECT_GT(std::abs(r.slow), 1 - 1e-3) << "n " << n << " noise " << noise;
      // the earlier rule: never sooner
      auto o = iterate(spectrum(n, 0.05, 0.05, 7), noise, 1e-6, old_rule);
      EXPECT_GE(o.steps, r.steps);
    }
}

TEST(SignFloor, NeverStopsOnAnEigenvalueNearZeroAtLargeN) {
  // n = 4e6: the slow eigenvalue alone makes the relative residual ~1/sqrt(n) = 5e-4 (below the
  // earlier floor 1e-3) for ~30 steps while everything else has converged; noise far below.
  const std::int64_t n = 4000000;
  auto x = spectrum(n, 0.2, 1e-6, 3);
  auto r = iterate(x, 1e-10, 1e-6, sign_floor_reached);
  ASSERT_TRUE(r.stopped);
  EXPECT_GT(std::abs(r.slow), 1 - 1e-6) << "stopped at step " << r.steps;
  // The earlier rule stopped with that eigenvalue still near zero (half an electron lost).
  auto o = iterate(x, 1e-10, 1e-6, old_rule);
  EXPECT_LT(std::abs(o.slow), 0.5) << "the scenario no longer exercises the cap";
}

TEST(SignFloor, ExactQuadraticStepsAreNotAFloor) {
  const std::int64_t n = 1536;
  // a residual that falls 1e-4 -> 7.5e-9 is a quadratic step, not a floor
  EXPECT_FALSE(sign_floor_reached(7.5e-9, 1e-4, n, 1e-6));
  EXPECT_TRUE(sign_floor_reached(1.7e-8, 3.3e-8, n, 1e-6));  // 256 waters, tessel at eps 1e-6
  EXPECT_FALSE(sign_floor_reached(2e-3, 2.1e-3, n, 1e-6));   // above the floor: keep going
  EXPECT_TRUE(sign_floor_reached(5e-7, 6e-7, n, 0.0));       // eps 0: the rounding floor is 1e-6
  EXPECT_FALSE(sign_floor_reached(5e-6, 6e-6, n, 0.0));      // above it
}

}  // namespace

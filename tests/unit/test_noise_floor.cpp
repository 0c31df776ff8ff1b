// The one noise-floor stopping rule of the iterative solvers (src/solvers/noise_floor.hpp,
// used by sign, the Newton-Schulz inverses and purification): below the level, `patience`
// steps in a row that keep more than `keep` of the best residual stop the iteration; a step at
// or above the level, or one that falls to keep x best, starts the count afresh.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../../src/solvers/noise_floor.hpp"

namespace {

using tessel::solvers::noise_level;
using tessel::solvers::NoiseFloor;

// The step (0-based) at which `f` first reports the floor, or -1.
int stop_step(NoiseFloor f, const std::vector<double>& residuals) {
  for (std::size_t k = 0; k < residuals.size(); ++k)
    if (f.reached(residuals[k])) return static_cast<int>(k);
  return -1;
}

TEST(NoiseFloor, LevelFollowsTheFilterThreshold) {
  EXPECT_EQ(noise_level(0, 1e-3, 1e-7), 1e-7);           // no filtering: rounding
  EXPECT_EQ(noise_level(1e-8, 1e-3, 1e-7), 1e-3);        // a small eps: the minimum
  EXPECT_EQ(noise_level(1e-5, 1e-3, 1e-7), 1e-5 * 1e3);  // kNoisePerEps x eps
}

TEST(NoiseFloor, QuadraticConvergenceIsNeverNoise) {
  // r <- r^2 from 0.5: each step below the level divides r by far more than 1 / keep.
  std::vector<double> r;
  for (double x = 0.5; x > 1e-300; x *= x) r.push_back(x);
  EXPECT_EQ(stop_step({1e-3, 0.25, 1}, r), -1);
  EXPECT_EQ(stop_step({1e-6, 0.5, 3}, r), -1);
}

TEST(NoiseFloor, StopsAfterPatienceStepsWithoutProgressBelowTheLevel) {
  // falls quadratically to the noise, then wanders around it
  const std::vector<double> r = {1e-1, 1e-2, 1e-4, 3e-5, 2.5e-5, 2.6e-5, 2.4e-5, 2e-5};
  EXPECT_EQ(stop_step({1e-3, 0.25, 1}, r), 3);  // 3e-5 keeps more than a quarter of 1e-4
  EXPECT_EQ(stop_step({1e-3, 0.8, 1}, r), 4);   // 2.5e-5 > 0.8 x 3e-5
  EXPECT_EQ(stop_step({1e-3, 0.5, 3}, r), 6);   // 2.5e-5, 2.6e-5, 2.4e-5: three in a row
  EXPECT_EQ(stop_step({1e-5, 0.5, 1}, r), -1);  // never below the level
}

TEST(NoiseFloor, ProgressOrALevelCrossingRestartsTheCount) {
  // the dip to 1.1e-5 halves nothing: it does not restart the count (the measured TRS4 case)
  const std::vector<double> trs4 = {1e-2, 1.6e-5, 2.4e-5, 4.7e-5, 1.1e-5, 1.8e-5, 3.5e-5, 6.9e-5};
  EXPECT_EQ(stop_step({1e-3, 0.5, 3}, trs4), 4);
  // halving restarts it, and so does a step above the level
  const std::vector<double> halving = {1e-4, 9e-5,   8e-5,   3e-5,  2.9e-5,
                                       2e-3, 2.8e-5, 2.7e-5, 2.6e-5};
  EXPECT_EQ(stop_step({1e-3, 0.5, 3}, halving), 8);
  NoiseFloor f{1e-3, 0.5, 3};
  f.reached(1e-4);
  f.reached(9e-5);
  EXPECT_EQ(f.behind, 1);
  EXPECT_EQ(f.best, 9e-5);
}

}  // namespace

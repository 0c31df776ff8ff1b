// mu_first_guess (the sign method's first chemical potential) on diagonal operators with a
// known spectrum: as many Lanczos steps as the density solver takes by default, the guess checked against
// the gap the spectrum was built with.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tessel/solvers/density.hpp"

namespace {

using tessel::solvers::lanczos;
using tessel::solvers::mu_first_guess;

struct Spectrum {
  std::vector<double> eig;  // in a shuffled order (the operator is diag(eig))
  double homo, lumo;
};

// nocc eigenvalues uniform in [lo, homo], the rest in [lumo, hi], shuffled.
Spectrum banded(std::int64_t n, std::int64_t nocc, double lo, double homo, double lumo, double hi,
                unsigned seed) {
  std::mt19937_64 g(seed);
  Spectrum s{{}, homo, lumo};
  std::uniform_real_distribution<double> occ(lo, homo), virt(lumo, hi);
  for (std::int64_t i = 0; i < n; ++i) s.eig.push_back(i < nocc ? occ(g) : virt(g));
  // the band edges themselves are eigenvalues
  s.eig[0] = homo;
  s.eig[static_cast<std::size_t>(nocc)] = lumo;
  std::shuffle(s.eig.begin(), s.eig.end(), g);
  return s;
}

double guess(const Spectrum& s, std::int64_t nocc) {
  const auto n = static_cast<std::int64_t>(s.eig.size());
  auto b = lanczos(
      [&](const std::vector<double>& x, std::vector<double>& y) {
        y.resize(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) y[i] = s.eig[i] * x[i];
      },
      n, tessel::solvers::DensityOptions{}.lanczos_steps);
  return mu_first_guess(b, n, nocc);
}

struct GapCase {
  std::int64_t n, nocc;
  double lo, homo, lumo, hi;
};

class MuGuess : public ::testing::TestWithParam<GapCase> {};

// The guess lies in the middle half of the gap for wide and narrow gaps, occupied fractions
// 2/3 (water SZV) and 0.17 (DZVP), small and large n, several spectra each.
TEST_P(MuGuess, MiddleOfTheGap) {
  const GapCase c = GetParam();
  for (unsigned seed = 1; seed <= 5; ++seed) {
    const Spectrum s = banded(c.n, c.nocc, c.lo, c.homo, c.lumo, c.hi, seed);
    const double mu = guess(s, c.nocc), gap = c.lumo - c.homo;
    EXPECT_GT(mu, c.homo + 0.25 * gap) << "seed " << seed;
    EXPECT_LT(mu, c.lumo - 0.25 * gap) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Spectra, MuGuess,
                         ::testing::Values(GapCase{3000, 2000, -1.25, -0.53, 0.20, 1.26},
                                           GapCase{192, 128, -0.86, -0.04, 0.22, 0.61},
                                           GapCase{736, 128, -0.84, -0.09, 0.08, 5.79},
                                           GapCase{1536, 1024, -0.94, 0.04, 0.17, 0.68},
                                           GapCase{20000, 13333, -1.0, -0.2, 0.0, 1.0}));

// Without a gap (a uniform spectrum) the guess is still inside the spectrum and its count is
// near nocc (the interpolated estimate): a start for the bracket, not a wrong answer.
TEST(MuGuessNoGap, InsideTheSpectrumNearTheCount) {
  const std::int64_t n = 4000, nocc = 1500;
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> u(-1, 1);
  Spectrum s{{}, 0, 0};
  for (std::int64_t i = 0; i < n; ++i) s.eig.push_back(u(g));
  const double mu = guess(s, nocc);
  const auto below = std::count_if(s.eig.begin(), s.eig.end(), [&](double e) { return e < mu; });
  EXPECT_GT(mu, -1.0);
  EXPECT_LT(mu, 1.0);
  EXPECT_NEAR(static_cast<double>(below), static_cast<double>(nocc), 0.1 * n);
}

}  // namespace

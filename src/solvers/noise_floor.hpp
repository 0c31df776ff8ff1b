#pragma once
// The one noise-floor stopping rule of the iterative solvers (sign.cpp, newton_schulz.cpp,
// purify_generic.cpp). Pure (no MPI): every rank feeds it the same replicated residuals.
//
// An iteration whose residual r should fall to 0 (quadratically, near convergence) is held up
// by filtering (eps > 0) or rounding once r is small: below `level`, a step whose residual
// stays above `keep` times the best residual so far only polishes noise. After `patience` such
// steps in a row the floor is reached: stop (the caller keeps its last or its best iterate). A
// step at or above the level, or one that falls to `keep` times the best or below, starts the
// count afresh. Each solver keeps its own level, keep and patience, named where it makes its
// NoiseFloor (the unit test test_noise_floor.cpp checks the rule once).
#include <algorithm>
#include <cmath>

namespace tessel::solvers {

/// Filtering at threshold eps leaves the residual noisy at about this multiple of eps.
inline constexpr double kNoisePerEps = 1e3;

/// Pure. The residual below which noise may hold an iteration up: with filtering (eps > 0),
/// max(`filtered_min`, kNoisePerEps eps); without, `unfiltered` (rounding).
inline double noise_level(double eps, double filtered_min, double unfiltered) {
  return eps > 0 ? std::max(filtered_min, kNoisePerEps * eps) : unfiltered;
}

struct NoiseFloor {
  double level = 0;        ///< below it, noise may hold the residual up
  double keep = 0.5;       ///< a step progresses when r <= keep * best
  int patience = 1;        ///< steps in a row below the level without progress before stopping
  double best = INFINITY;  ///< the smallest residual so far
  int behind = 0;          ///< steps in a row below the level without progress

  /// Pure. Records the residual `r` of the next step; true when the floor is reached.
  bool reached(double r) {
    const bool noise = r < level && r > keep * best;
    behind = noise ? behind + 1 : 0;
    best = std::min(best, r);
    return behind >= patience;
  }
};

}  // namespace tessel::solvers

#pragma once
/// @file density_diag.hpp
/// The density matrix by diagonalization (issue 31): the generalized problem H C = S C e solved
/// by ScaLAPACK (Cholesky S = U^T U, reduction to U^-T H U^-1, divide-and-conquer pdsyevd,
/// C = U^-1 Z), D = C_occ C_occ^T, on a block-cyclic copy of H and S; and the cost model that
/// `--method auto` uses to choose between it and the sign iteration (docs/density.md,
/// "Choosing the method"). Built only where ScaLAPACK is (TESSEL_HAVE_SCALAPACK; never in the
/// SMPI build): elsewhere diagonalization_built() is false and density_diag throws.
#include <cstdint>
#include <string>

#include "tessel/solvers/density.hpp"

namespace tessel::solvers {

/// Not collective. True when this build links ScaLAPACK and has the diagonalization route.
bool diagonalization_built();
/// Not collective. True when the diagonalization route can also use ELPA (DiagSolver Elpa1,
/// Elpa2: an Open MPI build with libelpa found, CMake option TESSEL_ELPA).
bool diag_elpa_built();

/// Collective. D of (H, S) with `electrons` electrons (even) by diagonalization: P in the
/// caller's matrix type and distribution (block-sparse: filtered at the algebra's eps, as the
/// other routes' P), mu = (HOMO + LUMO) / 2, bounds = the lowest and highest eigenvalues,
/// band_energy_before_final = 2 sum of the occupied eigenvalues, idempotency ||PSP - P|| / ||P||
/// (two products of the algebra), iterations 0. The input checks are density()'s (it calls
/// this for DensityMethod::Diag). InputError (every rank): S not positive definite (pdpotrf),
/// a degenerate HOMO/LUMO pair (no gap at the electron count), mu given; Error: pdsyevd failed;
/// InputError "diagonalization not built" without ScaLAPACK. ScaLAPACK's own traffic is not in
/// the ledger (only the copies into and out of the block-cyclic layout and the products are).
template <class M>
DensityResult<M> density_diag(Algebra<M>& alg, const M& H, const M& S, std::int64_t electrons,
                              const DensityOptions& opt);

/// The constants of the cost model (docs/density.md, "Choosing the method": measured on this
/// project's 2-core machine, 2026-11-28, under load; the rank exponent is assumed, not measured).
struct DensityCostModel {
  /// Diagonalization (pdpotrf, pdsygst, pdsyevd, pdtrsm, C C^T): seconds per n^3 on one rank
  /// (water:250, n = 1500: 2.7-2.8 s; water:100, n = 600: 0.23 s).
  double diag_seconds_per_n3 = 8.5e-10;
  /// Parallel efficiency of the diagonalization: p ranks run it p^exponent times faster
  /// (assumed: ScaLAPACK's eigensolver scales worse than the products; not measurable on 2 cores).
  double diag_rank_exponent = 0.7;
  /// One product of the sign iteration: seconds per 2 n^3 fill flops on one rank, dense
  /// (dense::multiply, water:100 --dense: 2.62 s for 46 products at n = 600) and block-sparse
  /// (water:250 at eps 1e-6: 19.7 s for 52 products at n = 1500, fill 1).
  double dense_product_seconds_per_flop = 1.3e-10;
  double sparse_product_seconds_per_flop = 5.6e-11;
  /// Products of a sign density (S^-1/2, mu search, basis changes, final McWeeny step): 46-52
  /// measured on the generated water boxes.
  double products = 50;
  /// The fill of the iteration's matrices relative to the fill of S (generated water at
  /// eps 1e-6: S 6.5% and P 61% of the blocks at 1,000 molecules, 3.2% and 40% at 2,000).
  double fill_growth = 10.0;
  /// Below this n the distributed products and eigensolver are counted as running on one rank:
  /// they are latency-bound there (tessel.pyscf's step at n = 192-416 on 4 ranks was slower
  /// than on 1, docs/pyscf.md).
  std::int64_t min_parallel_n = 1000;
};

/// What --method auto chose and why (one line for the CLI and the JSON).
struct MethodChoice {
  DensityMethod method = DensityMethod::Sign;
  std::string reason;
  double diag_seconds = 0;    ///< the model's estimate (0 when not considered)
  double purify_seconds = 0;  ///< the model's estimate of the sign iteration
};

/// Pure. The method for n basis functions whose overlap has `fill_s` of its blocks stored
/// (1 for dense matrices), with the products on `ranks` ranks and the eigensolver on
/// `diag_ranks` (0: the same ranks; 1: a replicated eigensolver, as PySCF's eigh on every
/// rank): diag when built, no mu is given and the model's diagonalization time is below the
/// sign iteration's; else sign. InputError for n < 1 or diag_ranks < 0.
MethodChoice choose_density_method(std::int64_t n, double fill_s, int ranks, bool sparse,
                                   bool diag_built, bool mu_given,
                                   const DensityCostModel& model = {}, int diag_ranks = 0);

}  // namespace tessel::solvers

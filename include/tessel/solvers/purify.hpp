#pragma once
/// @file purify.hpp
/// Canonical purification (Palser & Manolopoulos, as in GTFock pscf/purif.c): the density
/// matrix D of a symmetric Fock matrix F in an orthogonal basis with `nocc` occupied states,
/// from D^2 and D^3 of SymmSquareCube (seed 000) on a p x p x p mesh.
///   start: Gershgorin bounds hmin, hmax of F; mu = tr(F)/n;
///          lambda = min(nocc/(hmax - mu), (n - nocc)/(mu - hmin));
///          D0 = (lambda/n)(mu I - F) + (nocc/n) I
///   step:  c = tr(D^2 - D^3)/tr(D - D^2); c < 1/2: D = ((1-2c)D + (1+c)D^2 - D^3)/(1-c),
///          else D = ((1+c)D^2 - D^3)/c. Near convergence tr(D - D^2) is rounding noise: when
///          it is below 10 n eps or c falls outside [0, 1] the step is McWeeny's (c = 1/2).
///   stop:  ||D - D^2||_F < tol, at most max_iter steps.
/// A zero (or unresolvably small) HOMO-LUMO gap leaves eigenvalues stuck at occupation 1/2:
/// ||D - D^2||_F then stops decreasing; when it has not halved over `stall_window` steps
/// purify throws InputError ("no clear occupation") instead of running to max_iter.
#include <cstdint>
#include <string>

#include "tessel/core/context.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/dense/symm_square_cube.hpp"

namespace tessel::solvers {

struct PurifyOptions {
  double tol = 1e-11;           ///< stop when ||D - D^2||_F < tol
  int max_iter = 200;           ///< iteration cap
  int stall_window = 40;        ///< zero-gap detection window (steps)
  double symmetry_tol = 1e-10;  ///< F must satisfy max|F - F^T| <= symmetry_tol * max|F|
  dense::SscOptions ssc{};      ///< algorithm, n_dup, mesh edge p of SymmSquareCube
};

struct PurifyResult {
  dense::DistMatrix<double> D;     ///< in F's layout
  int iterations = 0;              ///< purification steps taken
  double idempotency_error = 0;    ///< ||D - D^2||_F of the returned D
  double trace_error = 0;          ///< |tr(D) - nocc|
  double band_energy = 0;          ///< 2 tr(D F)
  int p = 1, n_dup = 1;
  std::string mesh;
};

/// Collective. Throws on every rank: DimensionMismatch (F not square), InputError (nocc not
/// in 1 .. n-1, NaN/Inf or non-symmetric F, bad options, zero gap), Error (no convergence in
/// max_iter steps). Ledger phases "purify/..." and "ssc/compute".
PurifyResult purify(Context& ctx, const dense::DistMatrix<double>& F, std::int64_t nocc,
                    const PurifyOptions& opt = {});

}  // namespace tessel::solvers

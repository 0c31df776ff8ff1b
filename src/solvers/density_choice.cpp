// --method auto: the cost model choosing between diagonalization and the sign iteration
// (docs/density.md, "Choosing the method"). Pure: no MPI, no data.
#include <algorithm>
#include <cmath>

#include "tessel/core/error.hpp"
#include "tessel/solvers/density_diag.hpp"

namespace tessel::solvers {

namespace {

/// The ranks a distributed step of size n is counted on (min_parallel_n: one below it).
double effective_ranks(std::int64_t n, int ranks, const DensityCostModel& m) {
  return n < m.min_parallel_n ? 1.0 : static_cast<double>(std::max(1, ranks));
}

}  // namespace

MethodChoice choose_density_method(std::int64_t n, double fill_s, int ranks, bool sparse,
                                   bool diag_built, bool mu_given, const DensityCostModel& m,
                                   int diag_ranks) {
  TESSEL_CHECK(n >= 1, InputError, "density method: n = ", n, ", expected >= 1");
  TESSEL_CHECK(diag_ranks >= 0, InputError, "density method: diag_ranks = ", diag_ranks,
               ", expected >= 0 (0: the products' ranks)");
  MethodChoice c;
  const double nd = static_cast<double>(n), n3 = nd * nd * nd;
  const double p = effective_ranks(n, ranks, m);
  const double pd = effective_ranks(n, diag_ranks == 0 ? ranks : diag_ranks, m);
  const double fill = std::clamp(sparse ? fill_s * m.fill_growth : 1.0, 0.0, 1.0);
  const double rate = sparse ? m.sparse_product_seconds_per_flop : m.dense_product_seconds_per_flop;
  c.purify_seconds = m.products * 2 * n3 * fill * rate / p;
  std::string sizes = sparse ? detail::concat("n = ", n, ", S fill ", fill_s, " -> iteration fill ",
                                              fill, ", ", ranks, " ranks")
                             : detail::concat("n = ", n, ", dense, ", ranks, " ranks");
  if (diag_ranks != 0 && diag_ranks != ranks)
    sizes += detail::concat(", the eigensolver on ", diag_ranks);
  if (n < m.min_parallel_n && std::max({ranks, diag_ranks, 1}) > 1)
    sizes += detail::concat(", counted on one rank below n = ", m.min_parallel_n);
  if (!diag_built) {
    c.reason = "diagonalization is not built (no ScaLAPACK in this build)";
    return c;
  }
  if (mu_given) {
    c.reason = "mu is given (diagonalization takes the electron count only)";
    return c;
  }
  // The eigensolver, plus the two products of the idempotency check in the caller's algebra.
  c.diag_seconds = m.diag_seconds_per_n3 * n3 / std::pow(pd, m.diag_rank_exponent) +
                   2 * c.purify_seconds / m.products;
  const bool diag = c.diag_seconds < c.purify_seconds;
  c.method = diag ? DensityMethod::Diag : DensityMethod::Sign;
  c.reason = detail::concat("the model estimates diagonalization ", c.diag_seconds, " s ",
                            diag ? "<" : ">=", " sign ", c.purify_seconds, " s (", sizes, ")");
  return c;
}

}  // namespace tessel::solvers

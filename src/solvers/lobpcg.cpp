// LOBPCG without preconditioner: X random -> orth -> RR; then per iteration
// R = HX - X Theta -> W = R - X (X^T R) -> S = orth [X W P] -> RR on S (dsyev, 2k or 3k) ->
// X = S C_k, P = S_{W,P} C_{W,P; k}.
#include <algorithm>
#include <cmath>

#include "block_ops.hpp"
#include "tessel/solvers/chfsi.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::solvers {

using namespace block;

EigenResult lobpcg(Context& ctx, stencil::Hamiltonian& h, std::int64_t mesh_points,
                   const EigenOptions& opt) {
  const int extra = opt.extra >= 0 ? opt.extra : std::max(4, opt.states / 4);
  TESSEL_CHECK(opt.states >= 1, InputError, "states ", opt.states, ": expected >= 1");
  TESSEL_CHECK(3 * (static_cast<std::int64_t>(opt.states) + extra) <= mesh_points, InputError,
               "states ", opt.states, " (+ ", extra,
               " guard vectors, 3 blocks for LOBPCG): more than the ", mesh_points,
               " points of the mesh");
  TESSEL_CHECK(opt.tol > 0 && std::isfinite(opt.tol), InputError, "tolerance ", opt.tol,
               ": expected > 0");
  TESSEL_CHECK(opt.max_iter >= 1, InputError, "max_iter ", opt.max_iter, ": expected >= 1");
  check_block_width("lobpcg", 3 * (static_cast<std::int64_t>(opt.states) + extra));  // [X W P]
  const int k = opt.states + extra;
  const auto& pts = h.plan().points;
  const int n = static_cast<int>(pts.size());
  const std::size_t K = static_cast<std::size_t>(k);
  EigenResult res;
  res.block = k;

  std::vector<double> x(static_cast<std::size_t>(n) * K), hx(x.size()), p, tmp;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < k; ++j)
      x[static_cast<std::size_t>(i) * K + static_cast<std::size_t>(j)] =
          hashed_unit(opt.seed, pts[static_cast<std::size_t>(i)], j);
  orthonormalize(ctx, x, n, k);
  h.apply(x.data(), hx.data(), k);
  res.applies += k;
  std::vector<double> g = gram(ctx, x.data(), hx.data(), n, k);
  std::vector<double> theta = syev(g, k);
  right_multiply(x, g, n, k, tmp);
  right_multiply(hx, g, n, k, tmp);

  for (int it = 1; it <= opt.max_iter; ++it) {
    const Stopwatch t0;
    // Residuals R = HX - X Theta; the wanted ones decide convergence.
    std::vector<double> w(x.size());
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < k; ++j) {
        const std::size_t q = static_cast<std::size_t>(i) * K + static_cast<std::size_t>(j);
        w[q] = hx[q] - theta[static_cast<std::size_t>(j)] * x[q];
      }
    std::vector<double> r2(static_cast<std::size_t>(opt.states), 0.0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < opt.states; ++j) {
        const double v = w[static_cast<std::size_t>(i) * K + static_cast<std::size_t>(j)];
        r2[static_cast<std::size_t>(j)] += v * v;
      }
    const double worst = block::residual_norms(ctx, r2, res.residuals);
    res.iterations = it;
    if (worst <= opt.tol) {
      res.converged = true;
      if (opt.on_step) opt.on_step(EigenStep{it, worst, t0.seconds()});
      break;
    }
    // W orthogonal to X.
    std::vector<double> m = gram(ctx, x.data(), w.data(), n, k), xm = x;
    right_multiply(xm, m, n, k, tmp);
    for (std::size_t q = 0; q < w.size(); ++q) w[q] -= xm[q];
    // S = [X W P], orthonormalised.
    const int nb = p.empty() ? 2 : 3, mm = nb * k;
    const std::size_t M = static_cast<std::size_t>(mm);
    std::vector<double> s(static_cast<std::size_t>(n) * M), hs(s.size());
    for (int i = 0; i < n; ++i) {
      const std::size_t I = static_cast<std::size_t>(i);
      std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(I * K), k,
                  s.begin() + static_cast<std::ptrdiff_t>(I * M));
      std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(I * K), k,
                  s.begin() + static_cast<std::ptrdiff_t>(I * M + K));
      if (nb == 3)
        std::copy_n(p.begin() + static_cast<std::ptrdiff_t>(I * K), k,
                    s.begin() + static_cast<std::ptrdiff_t>(I * M + 2 * K));
    }
    orthonormalize(ctx, s, n, mm);
    h.apply(s.data(), hs.data(), mm);
    res.applies += mm;
    std::vector<double> gs = gram(ctx, s.data(), hs.data(), n, mm);
    std::vector<double> all = syev(gs, mm);
    std::vector<double> ck(gs.begin(),
                           gs.begin() + static_cast<std::ptrdiff_t>(M * K));  // first k columns
    multiply(s, ck, n, mm, k, x);
    multiply(hs, ck, n, mm, k, hx);
    for (int j = 0; j < k; ++j)
      for (int i = 0; i < k; ++i)
        ck[static_cast<std::size_t>(j) * M + static_cast<std::size_t>(i)] = 0.0;  // drop the X rows
    multiply(s, ck, n, mm, k, p);
    theta.assign(all.begin(), all.begin() + k);
    if (opt.on_step) opt.on_step(EigenStep{it, worst, t0.seconds()});
  }
  res.values.assign(theta.begin(), theta.begin() + opt.states);
  res.vectors.resize(at(n, 0, opt.states));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < opt.states; ++j) res.vectors[at(i, j, opt.states)] = x[at(i, j, k)];
  return res;
}

}  // namespace tessel::solvers

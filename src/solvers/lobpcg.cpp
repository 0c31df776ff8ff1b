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

namespace {
/// Pure. The block width k (states + guard vectors), after checking the options (InputError).
int block_width(const EigenOptions& opt, std::int64_t mesh_points) {
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
  return opt.states + extra;
}

/// The iteration's blocks on this rank's rows (row-major, k columns; p empty before the first
/// step) and the Ritz values.
struct Blocks {
  int n = 0, k = 0;
  std::vector<double> x, hx, p, tmp, theta;
};

/// Not collective. R = HX - X Theta, and the squared norms of the wanted states' columns.
std::vector<double> residuals(const Blocks& b, int states, std::vector<double>& r2) {
  const std::size_t K = static_cast<std::size_t>(b.k);
  std::vector<double> w(b.x.size());
  for (int i = 0; i < b.n; ++i)
    for (int j = 0; j < b.k; ++j) {
      const std::size_t q = static_cast<std::size_t>(i) * K + static_cast<std::size_t>(j);
      w[q] = b.hx[q] - b.theta[static_cast<std::size_t>(j)] * b.x[q];
    }
  r2.assign(static_cast<std::size_t>(states), 0.0);
  for (int i = 0; i < b.n; ++i)
    for (int j = 0; j < states; ++j) {
      const double v = w[static_cast<std::size_t>(i) * K + static_cast<std::size_t>(j)];
      r2[static_cast<std::size_t>(j)] += v * v;
    }
  return w;
}

/// Not collective. S = [X W P] (P only once there is one), row by row; returns its width.
int stack(const Blocks& b, const std::vector<double>& w, std::vector<double>& s) {
  const int nb = b.p.empty() ? 2 : 3, mm = nb * b.k;
  const std::size_t K = static_cast<std::size_t>(b.k), M = static_cast<std::size_t>(mm);
  s.assign(static_cast<std::size_t>(b.n) * M, 0.0);
  for (int i = 0; i < b.n; ++i) {
    const std::size_t I = static_cast<std::size_t>(i);
    std::copy_n(b.x.begin() + static_cast<std::ptrdiff_t>(I * K), b.k,
                s.begin() + static_cast<std::ptrdiff_t>(I * M));
    std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(I * K), b.k,
                s.begin() + static_cast<std::ptrdiff_t>(I * M + K));
    if (nb == 3)
      std::copy_n(b.p.begin() + static_cast<std::ptrdiff_t>(I * K), b.k,
                  s.begin() + static_cast<std::ptrdiff_t>(I * M + 2 * K));
  }
  return mm;
}

/// Collective (Gram allreduces, mm H applies). Rayleigh-Ritz on S = [X W P]:
/// X = S C_k, HX = HS C_k, P = S_{W,P} C_{W,P; k}, Theta the k lowest Ritz values.
void rayleigh_ritz_step(Context& ctx, stencil::Hamiltonian& h, Blocks& b, std::vector<double>& w,
                        EigenResult& res) {
  const int n = b.n, k = b.k;
  // W orthogonal to X.
  std::vector<double> m = gram(ctx, b.x.data(), w.data(), n, k), xm = b.x;
  right_multiply(xm, m, n, k, b.tmp);
  for (std::size_t q = 0; q < w.size(); ++q) w[q] -= xm[q];
  std::vector<double> s;
  const int mm = stack(b, w, s);
  const std::size_t M = static_cast<std::size_t>(mm), K = static_cast<std::size_t>(k);
  std::vector<double> hs(s.size());
  orthonormalize(ctx, s, n, mm);
  h.apply(s.data(), hs.data(), mm);
  res.applies += mm;
  std::vector<double> gs = gram(ctx, s.data(), hs.data(), n, mm);
  std::vector<double> all = syev(gs, mm);
  std::vector<double> ck(gs.begin(),
                         gs.begin() + static_cast<std::ptrdiff_t>(M * K));  // first k columns
  multiply(s, ck, n, mm, k, b.x);
  multiply(hs, ck, n, mm, k, b.hx);
  for (int j = 0; j < k; ++j)
    for (int i = 0; i < k; ++i)
      ck[static_cast<std::size_t>(j) * M + static_cast<std::size_t>(i)] = 0.0;  // drop the X rows
  multiply(s, ck, n, mm, k, b.p);
  b.theta.assign(all.begin(), all.begin() + k);
}
}  // namespace

EigenResult lobpcg(Context& ctx, stencil::Hamiltonian& h, std::int64_t mesh_points,
                   const EigenOptions& opt) {
  const int k = block_width(opt, mesh_points);
  const auto& pts = h.plan().points;
  Blocks b;
  b.n = static_cast<int>(pts.size());
  b.k = k;
  const std::size_t K = static_cast<std::size_t>(k);
  EigenResult res;
  res.block = k;

  b.x.resize(static_cast<std::size_t>(b.n) * K);
  b.hx.resize(b.x.size());
  for (int i = 0; i < b.n; ++i)
    for (int j = 0; j < k; ++j)
      b.x[static_cast<std::size_t>(i) * K + static_cast<std::size_t>(j)] =
          hashed_unit(opt.seed, pts[static_cast<std::size_t>(i)], j);
  orthonormalize(ctx, b.x, b.n, k);
  h.apply(b.x.data(), b.hx.data(), k);
  res.applies += k;
  std::vector<double> g = gram(ctx, b.x.data(), b.hx.data(), b.n, k);
  b.theta = syev(g, k);
  right_multiply(b.x, g, b.n, k, b.tmp);
  right_multiply(b.hx, g, b.n, k, b.tmp);

  for (int it = 1; it <= opt.max_iter; ++it) {
    const Stopwatch t0;
    std::vector<double> r2;
    std::vector<double> w = residuals(b, opt.states, r2);  // the wanted ones decide convergence
    const double worst = block::residual_norms(ctx, r2, res.residuals);
    res.iterations = it;
    if (worst <= opt.tol) {
      res.converged = true;
      if (opt.on_step) opt.on_step(EigenStep{it, worst, t0.seconds()});
      break;
    }
    rayleigh_ritz_step(ctx, h, b, w, res);
    if (opt.on_step) opt.on_step(EigenStep{it, worst, t0.seconds()});
  }
  res.values.assign(b.theta.begin(), b.theta.begin() + opt.states);
  res.vectors.resize(at(b.n, 0, opt.states));
  for (int i = 0; i < b.n; ++i)
    for (int j = 0; j < opt.states; ++j) res.vectors[at(i, j, opt.states)] = b.x[at(i, j, k)];
  return res;
}

}  // namespace tessel::solvers

// Chebyshev-filtered subspace iteration: Lanczos bounds -> random block -> orth -> RR ->
// (filter -> orth -> RR -> residuals)* . Communication: H applies (halo exchange), one
// allreduce per Gram matrix, one per residual check; every dense step is a local BLAS/LAPACK
// call on this rank's rows or on the small k x k problem (identical on every rank).
#include "tessel/solvers/chfsi.hpp"
#include "tessel/core/timer.hpp"

#include <algorithm>
#include <cmath>

#include "block_ops.hpp"

namespace tessel::solvers {
namespace {

using namespace block;

struct Bounds {
  double lower, upper;
};

// Lanczos on one hashed start vector: the extreme Ritz values; upper + |beta_last| bounds the
// spectrum from above (capped by the Gershgorin bound of H).
Bounds lanczos(Context& ctx, stencil::Hamiltonian& h, int steps, std::uint64_t seed, double vmax) {
  const auto& pts = h.plan().points;
  const int n = static_cast<int>(pts.size());
  std::vector<double> q(static_cast<std::size_t>(n)), qprev(q.size(), 0.0), w(q.size());
  for (int i = 0; i < n; ++i)
    q[static_cast<std::size_t>(i)] = hashed_unit(seed + 1, pts[static_cast<std::size_t>(i)], 0);
  auto dot = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return ctx.comm().allreduce_value(s, MPI_SUM);
  };
  double nq = std::sqrt(dot(q, q));
  for (auto& v : q) v /= nq;
  std::vector<double> alpha, beta;
  double b = 0;
  for (int j = 0; j < steps; ++j) {
    h.apply(q.data(), w.data(), 1);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= b * qprev[i];
    const double a = dot(q, w);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= a * q[i];
    alpha.push_back(a);
    b = std::sqrt(dot(w, w));
    beta.push_back(b);
    if (b < 1e-12 * std::abs(a) + 1e-300) break;
    qprev = q;  // (a copy: GCC 12 misreads a swap here as freeing a non-heap pointer)
    for (std::size_t i = 0; i < w.size(); ++i) q[i] = w[i] / b;
  }
  const int m = static_cast<int>(alpha.size());
  std::vector<double> t(at(m, 0, m), 0.0);
  for (int i = 0; i < m; ++i) {
    t[at(i, i, m)] = alpha[static_cast<std::size_t>(i)];
    if (i + 1 < m) t[at(i, i + 1, m)] = t[at(i + 1, i, m)] = beta[static_cast<std::size_t>(i)];
  }
  auto ev = syev(t, m);
  if (ev.empty()) return {0.0, h.kinetic_bound() + vmax};
  const double gersh = h.kinetic_bound() + vmax;
  const double top = ev[ev.size() - 1] + std::abs(beta[beta.size() - 1]);
  return {ev[0], std::min(top, gersh)};
}

}  // namespace

std::vector<double> column_norms2(const Context& ctx, const std::vector<double>& x, std::int64_t n,
                                  int width) {
  std::vector<double> s(static_cast<std::size_t>(width), 0.0);
  for (std::int64_t p = 0; p < n; ++p)
    for (int j = 0; j < width; ++j) {
      const double v = x[at(p, j, width)];
      s[static_cast<std::size_t>(j)] += v * v;
    }
  ctx.comm().allreduce(s.data(), width, MPI_SUM);
  return s;
}

namespace {
/// Pure. The block width (states + guard vectors), after checking the options (InputError).
int block_width(const EigenOptions& opt, std::int64_t mesh_points) {
  const int extra = opt.extra >= 0 ? opt.extra : std::max(4, opt.states / 4);
  const std::int64_t kk = static_cast<std::int64_t>(opt.states) + extra;
  TESSEL_CHECK(opt.states >= 1, InputError, "states ", opt.states, ": expected >= 1");
  TESSEL_CHECK(kk <= mesh_points, InputError, "states ", opt.states, " (+ ", extra,
               " guard vectors): more than the ", mesh_points, " points of the mesh");
  TESSEL_CHECK(opt.tol > 0 && std::isfinite(opt.tol), InputError, "tolerance ", opt.tol,
               ": expected > 0");
  TESSEL_CHECK(opt.lanczos_steps >= 1, InputError, "lanczos_steps ", opt.lanczos_steps,
               ": expected >= 1");
  TESSEL_CHECK(opt.max_iter >= 1, InputError, "max_iter ", opt.max_iter, ": expected >= 1");
  TESSEL_CHECK(opt.degree >= 0 && opt.degree <= 1000, InputError, "degree ", opt.degree,
               ": expected 0 (automatic) .. 1000");
  check_block_width("chfsi", kk);
  return static_cast<int>(kk);
}

/// The iteration's state on this rank's rows: the block x, H x, the filter's work vectors,
/// the Ritz values.
struct Block {
  int n = 0, k = 0;
  std::vector<double> x, hx, y, ynew, hy, tmp, theta;
};

/// Collective (an allreduce per Gram matrix, k H applies). Rayleigh-Ritz on v: orthonormalise,
/// H v, the k x k eigenproblem; x becomes the Ritz vectors, hx their H images, theta the values.
void rayleigh_ritz(Context& ctx, stencil::Hamiltonian& h, Block& w, std::vector<double>& v,
                   EigenResult& res) {
  orthonormalize(ctx, v, w.n, w.k);
  h.apply(v.data(), w.hx.data(), w.k);
  res.applies += w.k;
  std::vector<double> g = gram(ctx, v.data(), w.hx.data(), w.n, w.k);
  w.theta = syev(g, w.k);
  right_multiply(v, g, w.n, w.k, w.tmp);
  right_multiply(w.hx, g, w.n, w.k, w.tmp);
  w.x.swap(v);
}

/// Collective (H applies). The Chebyshev filter of degree res.degree into w.y: damps [a, b],
/// a = the block's largest Ritz value, scaled at a0 = the lowest; b the spectrum's upper bound.
void chebyshev_filter(stencil::Hamiltonian& h, Block& w, double b, EigenResult& res) {
  const double a = w.theta.back();
  const std::size_t N = w.x.size();
  if (a >= b) {
    w.y = w.x;
    return;
  }
  const double e = (b - a) / 2, c = (b + a) / 2;
  const double a0 = std::min(w.theta.front(), a - 1e-3 * (b - a));
  double sigma = e / (a0 - c);
  const double tau = 2 / sigma;
  // y = (H x - c x) sigma / e; H x is hx from the Rayleigh-Ritz step.
  for (std::size_t i = 0; i < N; ++i) w.y[i] = (w.hx[i] - c * w.x[i]) * (sigma / e);
  for (int d = 2; d <= res.degree; ++d) {
    const double sn = 1 / (tau - sigma);
    h.apply(w.y.data(), w.hy.data(), w.k);
    res.applies += w.k;
    for (std::size_t i = 0; i < N; ++i)
      w.ynew[i] = (w.hy[i] - c * w.y[i]) * (2 * sn / e) - sigma * sn * w.x[i];
    w.x.swap(w.y);
    w.y.swap(w.ynew);
    sigma = sn;
  }
}

/// Collective (one allreduce). The residual norms of the wanted states into res.residuals;
/// returns the largest.
double wanted_residuals(const Context& ctx, const Block& w, int states, EigenResult& res) {
  std::vector<double> r2(static_cast<std::size_t>(states), 0.0);
  for (int i = 0; i < w.n; ++i)
    for (int j = 0; j < states; ++j) {
      const std::size_t p = at(i, j, w.k);
      const double rr = w.hx[p] - w.theta[static_cast<std::size_t>(j)] * w.x[p];
      r2[static_cast<std::size_t>(j)] += rr * rr;
    }
  return block::residual_norms(ctx, r2, res.residuals);
}
}  // namespace

EigenResult chfsi(Context& ctx, stencil::Hamiltonian& h, std::int64_t mesh_points, double spacing,
                  const EigenOptions& opt) {
  const int k = block_width(opt, mesh_points);
  const auto& pts = h.plan().points;
  Block w;
  w.n = static_cast<int>(pts.size());
  w.k = k;
  const std::size_t N = at(w.n, 0, k);

  EigenResult res;
  res.block = k;
  res.degree =
      opt.degree > 0 ? opt.degree : std::clamp(static_cast<int>(std::ceil(6.0 / spacing)), 8, 40);
  double vmax = 0;  // |V| bound for the Gershgorin cap of the spectrum
  for (double v : h.potential()) vmax = std::max(vmax, std::abs(v));
  vmax = ctx.comm().allreduce_value(vmax, MPI_MAX);
  const Bounds bd = lanczos(ctx, h, opt.lanczos_steps, opt.seed, vmax);
  res.lower = bd.lower;
  res.upper = bd.upper;
  res.applies += opt.lanczos_steps;

  for (auto* v : {&w.x, &w.hx, &w.y, &w.ynew, &w.hy}) v->resize(N);
  for (int i = 0; i < w.n; ++i)
    for (int j = 0; j < k; ++j)
      w.x[at(i, j, k)] = hashed_unit(opt.seed, pts[static_cast<std::size_t>(i)], j);
  rayleigh_ritz(ctx, h, w, w.x, res);

  for (int it = 1; it <= opt.max_iter; ++it) {
    const Stopwatch t0;
    chebyshev_filter(h, w, bd.upper, res);
    rayleigh_ritz(ctx, h, w, w.y, res);
    const double worst = wanted_residuals(ctx, w, opt.states, res);
    res.iterations = it;
    if (opt.on_step) opt.on_step(EigenStep{it, worst, t0.seconds()});
    if (worst <= opt.tol) {
      res.converged = true;
      break;
    }
  }
  res.values.assign(w.theta.begin(), w.theta.begin() + opt.states);
  res.vectors.resize(at(w.n, 0, opt.states));
  for (int i = 0; i < w.n; ++i)
    for (int j = 0; j < opt.states; ++j) res.vectors[at(i, j, opt.states)] = w.x[at(i, j, k)];
  return res;
}

void taylor_step(stencil::Hamiltonian& h, std::vector<double>& psi, int width, double dt) {
  const int w2 = 2 * width;
  const std::size_t N = psi.size();
  TESSEL_CHECK(static_cast<std::int64_t>(N) == h.plan().local_size() * w2, DimensionMismatch,
               "taylor_step: ", N, " values for ", h.plan().local_size(), " points x ", w2,
               " real columns");
  std::vector<double> t = psi, u(N);
  for (int kterm = 1; kterm <= 4; ++kterm) {
    h.apply(t.data(), u.data(), w2);
    const double f = dt / kterm;
    // t <- (-i dt / k) H t: (re, im) <- (f im(Ht), -f re(Ht)).
    for (std::size_t p = 0; p < N; p += 2) {
      t[p] = f * u[p + 1];
      t[p + 1] = -f * u[p];
    }
    for (std::size_t p = 0; p < N; ++p) psi[p] += t[p];
  }
}

}  // namespace tessel::solvers

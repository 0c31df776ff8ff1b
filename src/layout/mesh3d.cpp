#include "tessel/layout/mesh3d.hpp"

#include "tessel/core/error.hpp"

namespace tessel::layout {

int Mesh3D::largest_p(int nranks) {
  TESSEL_CHECK(nranks >= 1, GridError, "Mesh3D: ", nranks, " ranks (expected >= 1)");
  int p = 1;
  while ((p + 1) * (p + 1) * (p + 1) <= nranks) ++p;
  return p;
}

GridShape Mesh3D::choose_grid(int nranks, std::int64_t n, int q, int c) {
  TESSEL_CHECK(nranks >= 1, GridError, "Mesh3D: ", nranks, " ranks (expected >= 1)");
  TESSEL_CHECK(n >= 1, GridError, "Mesh3D: n = ", n, " (expected >= 1)");
  TESSEL_CHECK(q >= 0, GridError, "Mesh3D: q = ", q, " (expected >= 1, or 0 to choose)");
  TESSEL_CHECK(c >= 0, GridError, "Mesh3D: replication c = ", c,
               " (expected >= 1, or 0 to choose)");
  TESSEL_CHECK(q <= n, GridError, "Mesh3D: q = ", q, " exceeds n = ", n,
               " (every block needs at least one row)");
  if (q > 0 && c > 0) {
    TESSEL_CHECK(c <= q, GridError, "Mesh3D: replication c = ", c, " exceeds q = ", q,
                 " (expected 1 <= c <= q)");
    TESSEL_CHECK(static_cast<std::int64_t>(q) * q * c <= nranks, GridError, "Mesh3D: q = ", q,
                 ", c = ", c, " needs q^2 c = ", static_cast<std::int64_t>(q) * q * c,
                 " ranks but only ", nranks, " are available");
    return {q, c};
  }
  GridShape best{0, 0};
  std::int64_t best_size = 0;
  for (int qq = 1; static_cast<std::int64_t>(qq) * qq <= nranks && qq <= n; ++qq) {
    if (q > 0 && qq != q) continue;
    for (int cc = 1; cc <= qq; ++cc) {
      if (c > 0 && cc != c) continue;
      std::int64_t s = static_cast<std::int64_t>(qq) * qq * cc;
      if (s > nranks) break;
      if (s > best_size || (s == best_size && cc > best.c)) {
        best = {qq, cc};
        best_size = s;
      }
    }
  }
  if (q > 0)
    TESSEL_CHECK(best_size > 0, GridError, "Mesh3D: q = ", q,
                 " needs at least q^2 = ", static_cast<std::int64_t>(q) * q, " ranks but only ",
                 nranks, " are available");
  if (c > 0)
    TESSEL_CHECK(best_size > 0, GridError, "Mesh3D: replication c = ", c,
                 " needs q >= c and q^2 c <= ", nranks,
                 " ranks (at least c^3 = ", static_cast<std::int64_t>(c) * c * c,
                 ") with q <= n = ", n);
  return best;
}

Mesh3D::Mesh3D(const Context& ctx, int p) : nranks_(ctx.size()) {
  int pmax = largest_p(ctx.size());
  ctx.agree([&] {
    TESSEL_CHECK(p >= 0 && p <= pmax, GridError, "Mesh3D: p = ", p,
                 " needs p^3 = ", static_cast<long long>(p) * p * p, " ranks but the context has ",
                 ctx.size(), " (expected 1 <= p <= ", pmax, ", or 0 for the largest)");
  });
  p_ = p == 0 ? pmax : p;
  c_ = p_;
  build(ctx);
}

Mesh3D Mesh3D::grid(const Context& ctx, int q, int c) {
  ctx.agree([&] {
    TESSEL_CHECK(q >= 1 && c >= 1 && c <= q, GridError, "Mesh3D: q = ", q, ", c = ", c,
                 " (expected 1 <= c <= q)");
    TESSEL_CHECK(static_cast<std::int64_t>(q) * q * c <= ctx.size(), GridError, "Mesh3D: q = ", q,
                 ", c = ", c, " needs q^2 c = ", static_cast<std::int64_t>(q) * q * c,
                 " ranks but the context has ", ctx.size());
  });
  Mesh3D m;
  m.nranks_ = ctx.size();
  m.p_ = q;
  m.c_ = c;
  m.layered_ = true;
  m.build(ctx);
  return m;
}

void Mesh3D::build(const Context& ctx) {
  int r = ctx.rank();
  active_ = r < active_ranks();
  if (active_) {
    k_ = r / (p_ * p_);
    i_ = (r % (p_ * p_)) / p_;
    j_ = r % p_;
  }
  const auto& cm = ctx.comm();
  global_ = cm.split(active_ ? 0 : -1, r);
  row_ = cm.split(active_ ? j_ + k_ * p_ : -1, i_);
  col_ = cm.split(active_ ? i_ + k_ * p_ : -1, j_);
  grd_ = cm.split(active_ ? i_ * p_ + j_ : -1, k_);
}

std::string Mesh3D::describe() const {
  int a = active_ranks();
  std::string shape = detail::concat(p_, "x", p_, "x", c_, " mesh");
  if (layered_) shape += detail::concat(" (q=", p_, ", c=", c_, ")");
  return detail::concat(shape, " on ranks 0..", a - 1, " of ", nranks_, " (", nranks_ - a,
                        " inactive)");
}

}  // namespace tessel::layout

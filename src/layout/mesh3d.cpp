#include "tessel/layout/mesh3d.hpp"

#include "tessel/core/error.hpp"

namespace tessel::layout {

int Mesh3D::largest_p(int nranks) {
  TESSEL_CHECK(nranks >= 1, GridError, "Mesh3D: ", nranks, " ranks (expected >= 1)");
  int p = 1;
  while ((p + 1) * (p + 1) * (p + 1) <= nranks) ++p;
  return p;
}

Mesh3D::Mesh3D(const Context& ctx, int p) : nranks_(ctx.size()) {
  int pmax = largest_p(ctx.size());
  ctx.agree([&] {
    TESSEL_CHECK(p >= 0 && p <= pmax, GridError, "Mesh3D: p = ", p, " needs p^3 = ",
                 static_cast<long long>(p) * p * p, " ranks but the context has ",
                 ctx.size(), " (expected 1 <= p <= ", pmax, ", or 0 for the largest)");
  });
  p_ = p == 0 ? pmax : p;
  int r = ctx.rank();
  active_ = r < p_ * p_ * p_;
  if (active_) {
    k_ = r / (p_ * p_);
    i_ = (r % (p_ * p_)) / p_;
    j_ = r % p_;
  }
  const auto& c = ctx.comm();
  global_ = c.split(active_ ? 0 : -1, r);
  row_ = c.split(active_ ? j_ + k_ * p_ : -1, i_);
  col_ = c.split(active_ ? i_ + k_ * p_ : -1, j_);
  grd_ = c.split(active_ ? i_ * p_ + j_ : -1, k_);
}

std::string Mesh3D::describe() const {
  int a = p_ * p_ * p_;
  return detail::concat(p_, "x", p_, "x", p_, " mesh on ranks 0..", a - 1, " of ", nranks_,
                        " (", nranks_ - a, " inactive)");
}

}  // namespace tessel::layout

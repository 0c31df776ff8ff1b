// The generator's analytic Gaussian overlaps (src/sparse/generate_water.cpp) against numerical
// quadrature of the same normalised Gaussians on a grid: O-H (s-s, p-s) and O-O (s-p, p-p)
// blocks for a displacement along a generic direction; the cutoff bounds every block norm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tessel/sparse/generate.hpp"

using namespace tessel::sparse;

namespace {

constexpr double kPi = 3.14159265358979323846;

/// Value of a normalised primitive Gaussian (alpha, l) centred at c, at point r
/// (l = -1 s, 0..2 p_x..p_z).
double primitive(double alpha, int l, const double* c, const double* r) {
  double d2 = 0, d[3];
  for (int k = 0; k < 3; ++k) {
    d[k] = r[k] - c[k];
    d2 += d[k] * d[k];
  }
  const double n = std::pow(2 * alpha / kPi, 0.75) * (l < 0 ? 1 : 2 * std::sqrt(alpha));
  return n * (l < 0 ? 1 : d[l]) * std::exp(-alpha * d2);
}

/// The documented model (docs/sparse_generator.md): core exponent alpha plus a tail of weight
/// 0.04 and exponent 0.08, normalised by the closed form <phi|phi> = 1 + w^2 + 2 w t^(3/2)
/// (s) or t^(5/2) (p), t = 2 sqrt(a b) / (a + b).
double orbital(double alpha, int l, const double* c, const double* r) {
  const double w = 0.04, b = 0.08, t = 2 * std::sqrt(alpha * b) / (alpha + b);
  const double nn = 1 + w * w + 2 * w * std::pow(t, l < 0 ? 1.5 : 2.5);
  return (primitive(alpha, l, c, r) + w * primitive(b, l, c, r)) / std::sqrt(nn);
}

/// Overlap block by the midpoint rule on a cube around both centres (h = 0.2 bohr: the aliasing error of a Gaussian of exponent p is ~exp(-pi^2 / (p h^2))).
std::vector<double> quadrature(bool oi, bool oj, const double* a, const double* b) {
  struct Orb {
    double alpha;
    int l;
  };
  auto orbs = [](bool o) {
    return o ? std::vector<Orb>{{0.55, -1}, {0.55, 0}, {0.55, 1}, {0.55, 2}}
             : std::vector<Orb>{{0.42, -1}};
  };
  const auto x = orbs(oi), y = orbs(oj);
  std::vector<double> s(x.size() * y.size(), 0.0);
  const double h = 0.2, lo = -12, hi = 12 + 3;
  for (double px = lo + h / 2; px < hi; px += h)
    for (double py = lo + h / 2; py < hi; py += h)
      for (double pz = lo + h / 2; pz < hi; pz += h) {
        const double r[3] = {px, py, pz};
        double fx[4], fy[4];
        for (std::size_t u = 0; u < x.size(); ++u) fx[u] = orbital(x[u].alpha, x[u].l, a, r);
        for (std::size_t v = 0; v < y.size(); ++v) fy[v] = orbital(y[v].alpha, y[v].l, b, r);
        for (std::size_t v = 0; v < y.size(); ++v)
          for (std::size_t u = 0; u < x.size(); ++u)
            s[v * x.size() + u] += fx[u] * fy[v] * h * h * h;
      }
  return s;
}

}  // namespace

TEST(WaterOverlap, AnalyticEqualsQuadrature) {
  WaterGeometry g;
  g.box = 200;  // large: the minimum image is the only one
  const double a[3] = {0, 0, 0}, b[3] = {1.3, -0.9, 2.1};
  g.pos = {{100 + a[0], 100 + a[1], 100 + a[2]},
           {100 + b[0], 100 + b[1], 100 + b[2]},
           {100 + b[0], 100 + b[1], 100 + b[2]}};
  g.is_oxygen = {1, 0, 1};
  double s[16], hm[16];
  for (int j : {1, 2}) {
    SCOPED_TRACE(j == 1 ? "O-H" : "O-O");
    water_block(g, 0, j, 50.0, s, hm);
    const auto q = quadrature(true, j == 2, a, b);
    for (std::size_t k = 0; k < q.size(); ++k) EXPECT_NEAR(s[k], q[k], 2e-4) << "element " << k;
    // and the transpose block (p-s against s-p signs)
    double t[16];
    water_block(g, j, 0, 50.0, t, hm);
    const int r = 4, c = j == 2 ? 4 : 1;
    for (int u = 0; u < r; ++u)
      for (int v = 0; v < c; ++v) EXPECT_NEAR(s[v * r + u], t[u * c + v], 1e-15);
  }
  // Normalisation: an atom with itself is the identity.
  water_block(g, 0, 0, 50.0, s, hm);
  for (int u = 0; u < 4; ++u)
    for (int v = 0; v < 4; ++v) EXPECT_NEAR(s[v * 4 + u], u == v ? 1.0 : 0.0, 1e-14);
}

TEST(WaterOverlap, CutoffBoundsTheBlockNorm) {
  const double eps = 1e-6, rc = water_cutoff(eps);
  WaterGeometry g;
  g.box = 400;
  g.is_oxygen = {1, 1, 0, 0};
  double s[16], h[16];
  for (double r = rc; r < rc + 10; r += 0.37) {
    g.pos = {{10, 10, 10},
             {10 + r * 0.48, 10 + r * 0.6, 10 + r * 0.64},
             {10 + r * 0.8, 10, 10 + r * 0.6},
             {10, 10, 10}};  // atom 3 (H) where atom 0 is: H-H at r from atom 2
    EXPECT_LT(water_block(g, 0, 1, 100.0, s, h), eps) << "O-O at " << r;
    EXPECT_LT(water_block(g, 0, 2, 100.0, s, h), eps) << "O-H at " << r;
    EXPECT_LT(water_block(g, 3, 2, 100.0, s, h), eps) << "H-H at " << r;
  }
  // some pair of kinds reaches eps just inside the cutoff
  g.pos = {{10, 10, 10}, {10 + rc - 0.3, 10, 10}, {10, 10, 10 + rc - 0.3}, {10, 10, 10}};
  EXPECT_GE(std::max({water_block(g, 0, 1, 100.0, s, h), water_block(g, 0, 2, 100.0, s, h),
                      water_block(g, 3, 2, 100.0, s, h)}),
            eps);
  EXPECT_THROW(water_cutoff(0), tessel::InputError);
}

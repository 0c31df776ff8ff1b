#include "tessel/stencil/fd.hpp"

#include <cmath>

#include "tessel/core/error.hpp"

namespace tessel::stencil {

void check_order(int order) {
  TESSEL_CHECK(order == 2 || order == 4 || order == 6 || order == 8 || order == 12, InputError,
               "finite-difference order ", order, ": expected 2, 4, 6, 8 or 12");
}

int stencil_radius(int order) {
  check_order(order);
  return order / 2;
}

std::vector<double> second_derivative_weights(int order) {
  const int r = stencil_radius(order);
  // Fornberg (Math. Comp. 51, 1988): weights of derivatives 0..2 at x0 = 0 on the nodes
  // x = 0, 1, -1, 2, -2, ..., r, -r (in units of h).
  const int n = 2 * r + 1, M = 2;
  std::vector<double> x(static_cast<std::size_t>(n));
  for (int i = 1; i <= r; ++i) {
    x[static_cast<std::size_t>(2 * i - 1)] = i;
    x[static_cast<std::size_t>(2 * i)] = -i;
  }
  // c[m][j]: weight of node j for derivative m.
  std::vector<std::vector<double>> c(M + 1, std::vector<double>(static_cast<std::size_t>(n), 0.0));
  c[0][0] = 1.0;
  double c1 = 1.0;
  for (int i = 1; i < n; ++i) {
    const std::size_t I = static_cast<std::size_t>(i);
    double c2 = 1.0;
    const int mn = i < M ? i : M;
    for (int j = 0; j < i; ++j) {
      const std::size_t J = static_cast<std::size_t>(j);
      const double c3 = x[I] - x[J];
      c2 *= c3;
      if (j == i - 1) {
        for (int m = mn; m >= 1; --m)
          c[m][I] = c1 * (m * c[m - 1][I - 1] - x[I - 1] * c[m][I - 1]) / c2;
        c[0][I] = -c1 * x[I - 1] * c[0][I - 1] / c2;
      }
      for (int m = mn; m >= 1; --m) c[m][J] = (x[I] * c[m][J] - m * c[m - 1][J]) / c3;
      c[0][J] = x[I] * c[0][J] / c3;
    }
    c1 = c2;
  }
  std::vector<double> w(static_cast<std::size_t>(r + 1));
  w[0] = c[2][0];
  for (int k = 1; k <= r; ++k)
    w[static_cast<std::size_t>(k)] = c[2][static_cast<std::size_t>(2 * k - 1)];
  return w;
}

}  // namespace tessel::stencil

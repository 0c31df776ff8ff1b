#pragma once
/// @file fd.hpp
/// Central finite-difference coefficients of the second derivative (Fornberg's weights on an
/// equispaced grid): order d in {2, 4, 6, 8, 12}, radius d/2.
#include <vector>

namespace tessel::stencil {

/// Pure. Throws InputError unless d is 2, 4, 6, 8 or 12.
void check_order(int order);
/// Pure. Stencil radius d/2 (after check_order).
int stencil_radius(int order);
/// Pure. c[0 .. d/2]: f''(x) ~ (c[0] f(x) + sum_k c[k] (f(x + k h) + f(x - k h))) / h^2.
/// Computed by Fornberg's recursion (exact for polynomials of degree <= d + 1).
std::vector<double> second_derivative_weights(int order);

}  // namespace tessel::stencil

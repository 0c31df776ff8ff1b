#pragma once
// Helpers shared by the dense multiply tests (test_multiply, test_multiply_aligned): random
// operands scattered onto given layouts, and the check of C against serial BLAS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tessel/dense/multiply.hpp"
#include "test_util.hpp"

namespace tessel::testing {

/// C (m x n) = op(A) (m x k) op(B) (k x n).
struct Case {
  std::int64_t m, n, k;
};

/// Pure. The BLAS character of `o`.
inline char op_char(dense::Op o) {
  return o == dense::Op::N ? 'N' : (o == dense::Op::T ? 'T' : 'C');
}

/// The stored A, B, C of one multiply: full column-major arrays (the same on every rank when
/// `rng` is seeded the same) and their scattered copies.
template <class T>
struct Operands {
  std::vector<T> fa, fb, fc;
  dense::DistMatrix<T> A, B, C;
  bool nan_c = false;  // C was filled with NaN (for beta == 0)
};

/// Collective. Random entries in [-1, 1) (complex: both parts) for A on `la`, B on `lb` and C on
/// `lc`, drawn from `rng` in that order; with `nan_c` C is NaN and draws nothing.
template <class T>
Operands<T> random_operands(const Context& ctx, std::mt19937& rng, const layout::Layout& la,
                            const layout::Layout& lb, const layout::Layout& lc,
                            bool nan_c = false) {
  auto fill = [&](const layout::Layout& l, bool nan) {
    std::vector<T> f(static_cast<std::size_t>(l.rows() * l.cols()));
    for (auto& x : f) x = nan ? T(std::numeric_limits<double>::quiet_NaN()) : random_value<T>(rng);
    return f;
  };
  std::vector<T> fa = fill(la, false), fb = fill(lb, false), fc = fill(lc, nan_c);
  auto A = dense::scatter(ctx, fa.data(), la);
  auto B = dense::scatter(ctx, fb.data(), lb);
  auto C = dense::scatter(ctx, fc.data(), lc);
  return {std::move(fa), std::move(fb), std::move(fc), std::move(A),
          std::move(B),  std::move(C),  nan_c};
}

/// Collective (gathers x.C to rank 0). On rank 0: ||C - ref||_F <= 1e-12 max(1, ||ref||_F)
/// with ref = alpha op(A) op(B) + beta C0 by serial BLAS on the full arrays (C0 = 0 when it was
/// NaN); `what` names the case in a failure.
template <class T>
void expect_matches_blas(const Context& ctx, const Operands<T>& x, dense::Op oa, dense::Op ob,
                         T alpha, T beta, const std::string& what = "") {
  auto got = dense::gather(ctx, x.C);
  if (ctx.rank() != 0) return;
  const auto ld = [](std::int64_t r) { return static_cast<int>(std::max<std::int64_t>(1, r)); };
  const std::int64_t m = x.C.rows(), n = x.C.cols();
  const std::int64_t k = oa == dense::Op::N ? x.A.cols() : x.A.rows();
  std::vector<T> ref = x.fc;
  if (x.nan_c) std::fill(ref.begin(), ref.end(), T(0));
  ref_gemm(op_char(oa), op_char(ob), static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
           alpha, x.fa.data(), ld(x.A.rows()), x.fb.data(), ld(x.B.rows()), beta, ref.data(),
           ld(m));
  EXPECT_LE(frob_diff(got, ref), 1e-12 * std::max(1.0, frob(ref))) << what;
}

}  // namespace tessel::testing

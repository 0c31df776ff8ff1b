// Value semantics and aliasing (issue 11): DistMatrix copies are independent of the original
// (and of the structs that hold one), multiply() with C sharing storage with A or B gives the
// serial BLAS result, redistribute() refuses leading dimensions below the local row count.
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <random>

#include "tessel/dense/multiply.hpp"
#include "tessel/dense/plan_layouts.hpp"
#include "tessel/dense/symm_square_cube.hpp"
#include "tessel/layout/redistribute.hpp"
#include "test_util.hpp"

using namespace tessel;
using namespace tessel::dense;

namespace {

layout::Layout square_cyclic(std::int64_t n, int p) {
  // a 1 x p grid of 3 x 2 blocks: every rank holds columns, ranks > n/2 may hold none
  return layout::Layout::block_cyclic(n, n, 3, 2, 1, p, 0, 0, p);
}

std::vector<double> random_vec(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<double> v(n);
  for (auto& x : v) x = tessel::testing::random_value<double>(rng);
  return v;
}

// The global matrix a DistMatrix holds, rebuilt from its local elements on every rank
// (allreduce of a full array in which each element is set by its owner only).
std::vector<double> everywhere(const Context& ctx, const DistMatrix<double>& x) {
  std::vector<double> full(static_cast<std::size_t>(x.rows() * x.cols()), 0.0);
  const_cast<DistMatrix<double>&>(x).for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
    full[static_cast<std::size_t>(j * x.rows() + i)] = v;
  });
  ctx.comm().allreduce(full.data(), static_cast<int>(full.size()), MPI_SUM);
  return full;
}

}  // namespace

// ---------------------------------------------------------------- test helpers
TEST(Values, FrobDiffRefusesAShortResult) {
  const std::vector<double> ref = {1.0, 2.0, 3.0};
  EXPECT_EQ(tessel::testing::frob_diff(std::vector<double>{}, ref),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(tessel::testing::frob_diff(std::vector<double>{1.0, 2.0}, ref),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(tessel::testing::frob_diff(ref, ref), 0.0);
}

// ---------------------------------------------------------------- DistMatrix copies
TEST(Values, CopyOfOwningMatrixIsIndependent) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 11;
  const auto full = random_vec(static_cast<std::size_t>(n * n), 7);
  auto A = scatter(ctx, full.data(), square_cyclic(n, ctx.size()));
  DistMatrix<double> B = A;  // copy construction
  EXPECT_FALSE(B.is_view());
  if (A.local_rows() * A.local_cols() > 0) {
    EXPECT_NE(B.data(), A.data());
    B.for_each_local([](std::int64_t, std::int64_t, double& v) { v = -1.0; });
  }
  EXPECT_EQ(everywhere(ctx, A), full);  // writing to the copy left the original alone
  DistMatrix<double> C(ctx, square_cyclic(n, ctx.size()));
  C = A;  // copy assignment
  C.for_each_local([](std::int64_t, std::int64_t, double& v) { v *= 2; });
  EXPECT_EQ(everywhere(ctx, A), full);
}

TEST(Values, CopyOutlivesTheOriginal) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 9;
  const auto full = random_vec(static_cast<std::size_t>(n * n), 8);
  std::unique_ptr<DistMatrix<double>> orig =
      std::make_unique<DistMatrix<double>>(scatter(ctx, full.data(), square_cyclic(n, ctx.size())));
  DistMatrix<double> copy(*orig);
  DistMatrix<double> assigned;
  assigned = *orig;
  orig.reset();  // the original's storage is gone
  // Reuse the freed memory, then read the copies.
  std::vector<double> junk(static_cast<std::size_t>(n * n), 42.0);
  EXPECT_EQ(everywhere(ctx, copy), full);
  EXPECT_EQ(everywhere(ctx, assigned), full);
}

TEST(Values, CopyOfViewIsAViewOfTheSameStorage) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 7;
  const auto lay = square_cyclic(n, ctx.size());
  std::vector<double> store(static_cast<std::size_t>(std::max<std::int64_t>(
                                1, lay.local_rows(ctx.rank()) * lay.local_cols(ctx.rank()))),
                            1.0);
  auto v = DistMatrix<double>::view(lay, ctx.rank(), store.data(),
                                    std::max<std::int64_t>(1, lay.local_rows(ctx.rank())));
  DistMatrix<double> w = v;
  EXPECT_EQ(w.data(), store.data());
  w.for_each_local([](std::int64_t, std::int64_t, double& x) { x = 3.0; });
  v.for_each_local([](std::int64_t, std::int64_t, double& x) { EXPECT_EQ(x, 3.0); });
}

TEST(Values, MovedFromMatrixIsEmptyAndTargetKeepsData) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 8;
  const auto full = random_vec(static_cast<std::size_t>(n * n), 9);
  auto A = scatter(ctx, full.data(), square_cyclic(n, ctx.size()));
  DistMatrix<double> B(std::move(A));
  EXPECT_EQ(A.data(), nullptr);  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_FALSE(A.is_view());
  EXPECT_EQ(everywhere(ctx, B), full);
}

TEST(Values, SscResultCopyIsIndependent) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 6;
  std::vector<double> d(static_cast<std::size_t>(n * n));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i)
      d[static_cast<std::size_t>(j * n + i)] = 1.0 / static_cast<double>(1 + i + j);  // Hilbert
  auto D = scatter(ctx, d.data(), square_cyclic(n, ctx.size()));
  std::unique_ptr<SscResult> r = std::make_unique<SscResult>(symm_square_cube(ctx, D));
  const auto d2 = everywhere(ctx, r->d2);
  SscResult copy = *r;
  copy.d2.for_each_local([](std::int64_t, std::int64_t, double& v) { v = 0; });
  EXPECT_EQ(everywhere(ctx, r->d2), d2);
  SscResult copy2 = *r;
  r.reset();
  EXPECT_EQ(everywhere(ctx, copy2.d2), d2);
  // and D^2 itself against serial BLAS
  std::vector<double> ref(d.size());
  const int ni = static_cast<int>(n);
  tessel::testing::ref_gemm('N', 'N', ni, ni, ni, 1.0, d.data(), ni, d.data(), ni, 0.0, ref.data(),
                            ni);
  EXPECT_LE(tessel::testing::frob_diff(d2, ref), 1e-13);
}

// ---------------------------------------------------------------- multiply with aliasing
namespace {

// C = alpha A B + beta C where C and A (which = 'A') or C and B (which = 'B') are views of
// the same local buffer, each in its own layout, compared with serial BLAS on the values the
// views held before the call. Summa2D: all three in one 2D block-cyclic layout (SUMMA on the
// caller's layout). Optimal: all three in the plan's own layouts (the in-place path).
void aliased_multiply(Algorithm alg, char which, double beta) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size(), me = ctx.rank();
  const std::int64_t n = 13;
  MultiplyOptions opt;
  opt.algorithm = alg;
  layout::Layout la, lb, lc;
  if (alg == Algorithm::Summa2D) {
    const int pr = layout::most_square_grid(p).first;
    la = lb = lc = layout::Layout::block_cyclic(n, n, 2, 3, pr, p / pr, 0, 0, p);
  } else {
    const auto L = make_plan_layouts(plan_multiply(n, n, n, p, opt), false, false, p);
    la = L.a;
    lb = L.b;
    lc = L.c;
  }
  const layout::Layout& lx = which == 'A' ? la : lb;
  const std::int64_t ld = std::max<std::int64_t>({1, lx.local_rows(me), lc.local_rows(me)});
  const std::int64_t cols = std::max(lx.local_cols(me), lc.local_cols(me));
  auto buf = random_vec(static_cast<std::size_t>(ld * std::max<std::int64_t>(1, cols)),
                        static_cast<unsigned>(100 + me));
  const auto other = random_vec(static_cast<std::size_t>(n * n), 22);
  DistMatrix<double> X = DistMatrix<double>::view(lx, me, buf.data(), ld);
  DistMatrix<double> Y = scatter(ctx, other.data(), which == 'A' ? lb : la);
  DistMatrix<double> C = DistMatrix<double>::view(lc, me, buf.data(), ld);
  const DistMatrix<double>& A = which == 'A' ? X : Y;
  const DistMatrix<double>& B = which == 'A' ? Y : X;
  const auto fa = everywhere(ctx, A), fb = everywhere(ctx, B);
  std::vector<double> ref = everywhere(ctx, C);  // C's old contents
  const double alpha = 0.75;
  auto rep = multiply(ctx, alpha, Op::N, A, Op::N, B, beta, C, opt);
  if (alg == Algorithm::Summa2D)
    EXPECT_EQ(rep.executed, "summa2d on the caller's layout");
  else
    EXPECT_EQ(rep.executed.rfind("optimal", 0), 0u) << rep.executed;
  const int ni = static_cast<int>(n);
  tessel::testing::ref_gemm('N', 'N', ni, ni, ni, alpha, fa.data(), ni, fb.data(), ni, beta,
                            ref.data(), ni);
  const auto got = everywhere(ctx, C);
  ASSERT_EQ(got.size(), ref.size());
  EXPECT_LE(tessel::testing::frob_diff(got, ref), 1e-12 * tessel::testing::frob(ref))
      << "C aliases " << which;
}

}  // namespace

TEST(Values, MultiplySummaWithCAliasingA) { aliased_multiply(Algorithm::Summa2D, 'A', 0.0); }
TEST(Values, MultiplySummaWithCAliasingB) { aliased_multiply(Algorithm::Summa2D, 'B', 0.5); }
TEST(Values, MultiplyOptimalWithCAliasingA) { aliased_multiply(Algorithm::Optimal, 'A', 0.5); }
TEST(Values, MultiplyOptimalWithCAliasingB) { aliased_multiply(Algorithm::Optimal, 'B', 0.0); }

TEST(Values, MultiplyWithCOverlappingPartOfA) {
  // C is the 10 x 10 sub-block at (3, 3) of a 13 x 13 buffer that also holds A's top-left
  // 10 x 10 sub-block: storage overlaps partially.
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 13, m = 10;
  const auto big = layout::Layout::block_cyclic(n, n, 2, 2, 1, ctx.size(), 0, 0, ctx.size());
  const auto fbig = random_vec(static_cast<std::size_t>(n * n), 31);
  auto Big = scatter(ctx, fbig.data(), big);
  auto A = DistMatrix<double>::view(big.sub(0, 0, m, m), ctx.rank(), Big.data(), Big.ld());
  auto C = DistMatrix<double>::view(big.sub(3, 3, m, m), ctx.rank(), Big.data(), Big.ld());
  const auto fb = random_vec(static_cast<std::size_t>(m * m), 32);
  auto B =
      scatter(ctx, fb.data(), layout::Layout::block_cyclic(m, m, 3, 3, 1, 1, 0, 0, ctx.size()));
  std::vector<double> fa(static_cast<std::size_t>(m * m)), ref(fa.size());
  for (std::int64_t j = 0; j < m; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      fa[static_cast<std::size_t>(j * m + i)] = fbig[static_cast<std::size_t>(j * n + i)];
      ref[static_cast<std::size_t>(j * m + i)] =
          fbig[static_cast<std::size_t>((j + 3) * n + i + 3)];
    }
  multiply(ctx, 1.0, Op::N, A, Op::N, B, 1.0, C);
  const int mi = static_cast<int>(m);
  tessel::testing::ref_gemm('N', 'N', mi, mi, mi, 1.0, fa.data(), mi, fb.data(), mi, 1.0,
                            ref.data(), mi);
  const auto got = everywhere(ctx, C);
  EXPECT_LE(tessel::testing::frob_diff(got, ref), 1e-12 * tessel::testing::frob(ref));
}

// ---------------------------------------------------------------- redistribute leading dims
TEST(Values, RedistributeRefusesShortLeadingDimensionOnOneRank) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 10;
  const int p = ctx.size();
  const auto src = layout::Layout::block_cyclic(n, n, 2, 2, p, 1, 0, 0, p);
  const auto dst = layout::Layout::block_cyclic(n, n, 3, 3, 1, p, 0, 0, p);
  for (int side = 0; side < 2; ++side) {
    const std::int64_t lr_a = src.local_rows(ctx.rank()), lr_b = dst.local_rows(ctx.rank());
    std::vector<double> a(static_cast<std::size_t>(std::max<std::int64_t>(1, lr_a) * n), 1.0),
        b(static_cast<std::size_t>(std::max<std::int64_t>(1, lr_b) * n), 0.0);
    std::int64_t lda = std::max<std::int64_t>(1, lr_a), ldb = std::max<std::int64_t>(1, lr_b);
    const bool holds =
        (side == 0 ? lr_a : lr_b) > 1 && (side == 0 ? src : dst).local_cols(ctx.rank()) > 0;
    // The failing rank: the highest rank with more than one local row on that side.
    int last = holds ? ctx.rank() : -1;
    ctx.comm().allreduce(&last, 1, MPI_MAX);
    if (last < 0) continue;  // (1 rank with n = 10 always holds rows)
    if (ctx.rank() == last) (side == 0 ? lda : ldb) -= 1;
    try {
      layout::redistribute(ctx.comm(), src, a.data(), lda, dst, b.data(), ldb);
      ADD_FAILURE() << "no throw on rank " << ctx.rank() << " (side " << side << ")";
    } catch (const LayoutMismatch& e) {
      EXPECT_NE(std::string(e.what()).find(side == 0 ? "lda" : "ldb"), std::string::npos)
          << e.what();
    }
  }
}

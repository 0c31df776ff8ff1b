// The density-matrix solvers over Algebra<M>, each test run on dense DistMatrix and on
// block-sparse BlockSparseMatrix (the shared code path tested twice): sign, S^-1/2, S^-1 and
// Hotelling against known spectra; density (sign, TRS4, canonical, TRS2, McWeeny) on the PySCF
// systems against the dense purification (purify(), SymmSquareCube) and the exact density;
// every input error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "density_test_util.hpp"
#include "purify_test_util.hpp"
#include "tessel/io/npy.hpp"
#include "tessel/solvers/density.hpp"

using namespace tessel;
namespace tt = tessel::testing;
using solvers::DensityMethod;

namespace {

using Dense = dense::DistMatrix<double>;
using Sparse = sparse::BlockSparseMatrix<double>;

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

// f(a) over both algebras: dense (exact products), sparse with Cannon and no filtering, and
// sparse with rma25d at the largest valid L <= 4 (L > 1 on 2, 3, 4 ranks ...) and a filter
// eps of 1e-13 (below the tests' tolerances, above most rounding).
template <class F>
void both(Context& ctx, const std::vector<double>& a, std::int64_t n, F&& f) {
  {
    solvers::DenseAlgebra alg(ctx);
    f(alg, tt::dense_of(ctx, a, n), "dense");
  }
  {
    solvers::SparseAlgebra alg(ctx);
    f(alg, tt::sparse_of(ctx, a, tt::water_sizes(n)), "sparse");
  }
  {
    auto [pr, pc] = sparse::Distribution::default_grid(ctx.size());
    sparse::SpMultiplyOptions o;
    o.algorithm = sparse::SpAlgorithm::Rma25d;
    for (int L : sparse::valid_layers(pr, pc))
      if (L <= 4) o.layers = L;
    o.filter_eps = 1e-13;
    solvers::SparseAlgebra alg(ctx, o);
    const std::string kind = "sparse rma25d L=" + std::to_string(o.layers) + " eps 1e-13";
    f(alg, tt::sparse_of(ctx, a, tt::water_sizes(n)), kind.c_str());
  }
}

std::vector<double> spectrum(int n, double lo, double hi, double hole) {
  std::vector<double> e(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    e[i] = lo + (hi - lo) * (i + 0.5) / n;
    if (std::abs(e[i]) < hole) e[i] = e[i] < 0 ? -hole : hole;
  }
  return e;
}

std::vector<double> mapped(const std::vector<double>& e, double (*f)(double)) {
  std::vector<double> r(e);
  for (auto& x : r) x = f(x);
  return tt::with_spectrum(r);
}

}  // namespace

TEST(Density, SignOfKnownSpectrum) {
  Context ctx(MPI_COMM_WORLD);
  const int n = 37;
  auto e = spectrum(n, -2.0, 3.0, 0.05);
  auto a = tt::with_spectrum(e);
  auto want = mapped(e, [](double x) { return x < 0 ? -1.0 : 1.0; });
  both(ctx, a, n, [&](auto& alg, const auto& m, const char* kind) {
    for (int order : {2, 3}) {
      solvers::SignOptions o;
      o.order = order;
      auto r = solvers::sign(alg, m, 3.0, o);
      EXPECT_LT(max_diff(tt::full_of(ctx, r.X), want), 1e-10) << kind << " order " << order;
      if (ctx.rank() == 0)
        std::printf("  sign %s order %d: %d iterations, %lld multiplications, residual %.2e\n",
                    kind, order, r.iterations, static_cast<long long>(r.multiplications),
                    r.residual);
    }
  });
}

// An eigenvalue of A at zero (to rounding; a chemical potential on an eigenvalue): X's
// eigenvalue there starts at rounding noise, the residual stays near 1/sqrt(n) for tens of
// steps and moves by ulps, up as often as down. That is no divergence (it was reported as one
// until the test was written): the noise grows 1.5x a step to +-1, and X is a sign matrix
// whose other eigenvalues are exact.
TEST(Density, SignWithAnEigenvalueAtZeroConverges) {
  Context ctx(MPI_COMM_WORLD);
  const int n = 26;
  auto e = spectrum(n, -18.0, 1.6, 0.0);
  e[9] = 0.0;
  auto a = tt::with_spectrum(e);
  double others = 0;  // tr sign(A) over the eigenvalues away from zero
  for (int i = 0; i < n; ++i)
    if (i != 9) others += e[static_cast<std::size_t>(i)] < 0 ? -1.0 : 1.0;
  both(ctx, a, n, [&](auto& alg, const auto& m, const char* kind) {
    solvers::SignOptions o;
    o.max_iter = 200;
    auto r = solvers::sign(alg, m, 18.5, o);
    const double tr = alg.trace(r.X);
    EXPECT_NEAR(std::abs(tr - others), 1.0, 1e-8) << kind << ": tr X = " << tr;
    auto x2 = alg.product(r.X, r.X);
    alg.shift(x2, -1.0);
    EXPECT_LT(alg.norm(x2), 1e-8) << kind;
    if (ctx.rank() == 0)
      std::printf("  sign %s, an eigenvalue at 0: %d iterations, residual %.2e, tr X %.12f\n", kind,
                  r.iterations, r.residual, tr);
  });
}

// purify_generic on both algebras against the exact projector of a known spectrum, with the
// products it may spend: X^2 every step plus at most one product for the update (tr X^3 and
// tr X^4 are dot products), so TRS2 1 and the others <= 2 per step (TRS4 took 3 before).
TEST(Density, PurifyOfKnownSpectrumAtMostTwoProductsPerStep) {
  Context ctx(MPI_COMM_WORLD);
  const int n = 37;
  auto e = spectrum(n, -2.0, 3.0, 0.05);
  const auto nocc =
      static_cast<std::int64_t>(std::count_if(e.begin(), e.end(), [](double x) { return x < 0; }));
  auto a = tt::with_spectrum(e);
  auto want = mapped(e, [](double x) { return x < 0 ? 1.0 : 0.0; });
  both(ctx, a, n, [&](auto& alg, const auto& m, const char* kind) {
    using solvers::PurifyMethod;
    for (auto method :
         {PurifyMethod::Canonical, PurifyMethod::McWeeny, PurifyMethod::Trs2, PurifyMethod::Trs4}) {
      const auto m0 = alg.stats().multiplications;
      std::optional<double> mu;
      if (method == PurifyMethod::McWeeny) mu = 0.0;
      auto r = solvers::purify_generic(alg, m, nocc, method, mu, 1e-9, 200, {});
      const std::string what = std::string(kind) + " " + solvers::to_string(method);
      EXPECT_LT(max_diff(tt::full_of(ctx, r.X), want), 1e-8) << what;
      EXPECT_NEAR(r.trace, static_cast<double>(nocc), 1e-8) << what;
      EXPECT_GT(r.mu, -0.05) << what;  // in the gap (-0.05, 0.05)
      EXPECT_LT(r.mu, 0.05) << what;
      EXPECT_EQ(r.products, alg.stats().multiplications - m0) << what;
      const std::int64_t steps = r.iterations + 1;  // X^2 of the last step too
      EXPECT_GE(r.products, steps) << what;
      EXPECT_LE(r.products, method == PurifyMethod::Trs2 ? steps : 2 * steps - 1) << what;
      if (ctx.rank() == 0)
        std::printf("  purify %s: %d iterations, %lld products\n", what.c_str(), r.iterations,
                    static_cast<long long>(r.products));
    }
  });
}

TEST(Density, InverseSqrtAndInverseOfKnownSpectrum) {
  Context ctx(MPI_COMM_WORLD);
  const int n = 29;
  auto e = spectrum(n, 0.05, 4.0, 0.0);
  auto s = tt::with_spectrum(e);
  auto want_isqrt = mapped(e, [](double x) { return 1 / std::sqrt(x); });
  auto want_inv = mapped(e, [](double x) { return 1 / x; });
  both(ctx, s, n, [&](auto& alg, const auto& m, const char* kind) {
    for (int order : {2, 3}) {
      solvers::InverseOptions o;
      o.order = order;
      auto z = solvers::inverse_sqrt(alg, m, o);
      EXPECT_LT(max_diff(tt::full_of(ctx, z.X), want_isqrt), 1e-9) << kind << " order " << order;
      EXPECT_GT(z.bounds.ritz_min, 0.04);
      EXPECT_LT(z.bounds.ritz_max, 4.01);
      auto x = solvers::inverse(alg, m, o);
      EXPECT_LT(max_diff(tt::full_of(ctx, x.X), want_inv), 1e-8) << kind << " order " << order;
      if (ctx.rank() == 0)
        std::printf("  inverse sqrt %s order %d: %d iterations, %lld multiplications\n", kind,
                    order, z.iterations, static_cast<long long>(z.multiplications));
    }
    auto h = solvers::inverse_hotelling(alg, m);
    EXPECT_LT(max_diff(tt::full_of(ctx, h.X), want_inv), 1e-8) << kind << " hotelling";
  });
}

// The PySCF systems (orthogonal basis: S = I): every method on both algebras gives the dense
// purification's D (purify(), SymmSquareCube) to 1e-10 and the exact D_ref.
TEST(Density, PyscfAgainstDensePurification) {
  Context ctx(MPI_COMM_WORLD);
  for (std::string tag : {"h2o8_sto3g_rhf", "h2o8_sto3g_lda-dfj"}) {
    if (!tt::have_system(tag)) GTEST_SKIP() << "no " << tag << " in " << tt::pyscf_dir();
    const auto n = static_cast<std::int64_t>(tt::json_number(tag, "n"));
    const auto nocc = static_cast<std::int64_t>(tt::json_number(tag, "nocc"));
    const double mu = 0.5 * (tt::json_number(tag, "homo") + tt::json_number(tag, "lumo"));
    auto lay = [&](std::int64_t r, std::int64_t c) {
      return layout::Layout::block_cyclic(r, c, 8, 8, 1, ctx.size(), 0, 0, ctx.size());
    };
    auto dir = tt::pyscf_dir();
    auto F = io::read_npy<double>(ctx, (dir / (tag + "_F_orth.npy")).string(), lay);
    auto fullF = tt::full_of(ctx, F);
    auto dref =
        tt::full_of(ctx, io::read_npy<double>(ctx, (dir / (tag + "_D_ref.npy")).string(), lay));
    std::vector<double> eye(static_cast<std::size_t>(n * n), 0.0);
    for (std::int64_t i = 0; i < n; ++i) eye[static_cast<std::size_t>(i * n + i)] = 1.0;
    for (auto method : {DensityMethod::Sign, DensityMethod::Trs4, DensityMethod::Canonical,
                        DensityMethod::Trs2, DensityMethod::McWeeny}) {
      std::vector<double> dpur;
      if (method != DensityMethod::Sign) {
        solvers::PurifyOptions po;
        po.method = solvers::parse_purify_method(solvers::to_string(method));
        if (method == DensityMethod::McWeeny) po.mu = mu;
        dpur = tt::full_of(ctx, solvers::purify(ctx, F, nocc, po).D);
      }
      for (bool use_sparse : {false, true}) {
        solvers::DensityOptions o;
        o.method = method;
        if (method == DensityMethod::McWeeny) o.mu = mu;
        std::vector<double> p;
        double be = 0, trace = 0, mu_found = 0;
        auto run = [&](auto& alg, const auto& H, const auto& S) {
          auto r = solvers::density(alg, H, S, 2 * nocc, o);
          p = tt::full_of(ctx, r.P);
          be = r.band_energy;
          trace = r.trace_ps;
          mu_found = r.mu;
          if (ctx.rank() == 0)
            std::printf(
                "  %s %s %s: %d iterations, %d sign evaluations, %lld multiplications, mu %.6f\n",
                tag.c_str(), use_sparse ? "sparse" : "dense", solvers::to_string(method).c_str(),
                r.iterations, r.sign_evaluations, static_cast<long long>(r.multiplications), r.mu);
        };
        if (use_sparse) {
          solvers::SparseAlgebra alg(ctx);
          auto sizes = tt::water_sizes(n);
          run(alg, tt::sparse_of(ctx, fullF, sizes), tt::sparse_of(ctx, eye, sizes));
        } else {
          solvers::DenseAlgebra alg(ctx);
          run(alg, F, tt::dense_of(ctx, eye, n));
        }
        const char* what = use_sparse ? "sparse" : "dense";
        EXPECT_LT(max_diff(p, dref), 1e-10)
            << tag << " " << what << " " << solvers::to_string(method);
        if (!dpur.empty())
          EXPECT_LT(max_diff(p, dpur), 1e-10)
              << tag << " " << what << " " << solvers::to_string(method);
        EXPECT_NEAR(trace, static_cast<double>(nocc), 1e-8);
        double be_ref = 0;
        for (std::size_t q = 0; q < fullF.size(); ++q) be_ref += 2 * dref[q] * fullF[q];
        EXPECT_NEAR(be, be_ref, 1e-9);
        if (method != DensityMethod::McWeeny) {
          EXPECT_GT(mu_found, tt::json_number(tag, "homo"))
              << what << " " << solvers::to_string(method);
          EXPECT_LT(mu_found, tt::json_number(tag, "lumo"))
              << what << " " << solvers::to_string(method);
        }
      }
    }
  }
}

TEST(Density, NonsymmetricFormAndEnergyWeighted) {
  Context ctx(MPI_COMM_WORLD);
  const int n = 23;
  auto es = spectrum(n, 0.3, 2.5, 0.0);
  auto S = tt::with_spectrum(es);
  std::vector<double> eh(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) eh[i] = -1.0 + 0.1 * i + (i >= 8 ? 0.5 : 0.0);  // gap above 8 states
  // H = S^1/2 Hd S^1/2 with Hd diagonal in another basis: the generalized problem has eigenvalues eh.
  auto half = mapped(es, [](double x) { return std::sqrt(x); });
  std::vector<double> hd(static_cast<std::size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) hd[static_cast<std::size_t>(i) * n + i] = eh[i];
  auto H = tt::matmul(tt::matmul(half, hd, n), half, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < j; ++i) {
      double v = 0.5 * (H[j * n + i] + H[i * n + j]);
      H[j * n + i] = H[i * n + j] = v;
    }
  double be_ref = 0;
  for (int i = 0; i < 8; ++i) be_ref += 2 * eh[i];
  both(ctx, H, n, [&](auto& alg, const auto& h, const char* kind) {
    using M = std::decay_t<decltype(h)>;
    M s;
    if constexpr (std::is_same_v<M, Dense>)
      s = tt::dense_of(ctx, S, n);
    else
      s = tt::sparse_of(ctx, S, tt::water_sizes(n));
    for (bool nonsym : {false, true}) {
      solvers::DensityOptions o;
      o.nonsymmetric = nonsym;
      o.energy_weighted = true;
      auto r = solvers::density(alg, h, s, 16, o);
      EXPECT_NEAR(r.band_energy, be_ref, 1e-9) << kind << " nonsymmetric " << nonsym;
      EXPECT_NEAR(2 * r.trace_ps, 16.0, 1e-8);
      // W = P H P: tr(W S) = sum of the occupied eigenvalues.
      EXPECT_NEAR(2 * alg.dot(r.W, s), be_ref, 1e-8) << kind;
      EXPECT_GT(r.mu, eh[7]);
      EXPECT_LT(r.mu, eh[8]);
    }
    solvers::DensityOptions o;
    o.method = DensityMethod::Trs4;
    auto r = solvers::density(alg, h, s, 16, o);
    EXPECT_NEAR(r.band_energy, be_ref, 1e-9) << kind << " trs4";
    EXPECT_GT(r.mu, eh[7]);
    EXPECT_LT(r.mu, eh[8]);
    o.method = DensityMethod::Sign;
    o.mu = 0.5 * (eh[7] + eh[8]);
    r = solvers::density(alg, h, s, 16, o);
    EXPECT_EQ(r.sign_evaluations, 1);
    EXPECT_NEAR(r.band_energy, be_ref, 1e-9) << kind << " given mu";
  });
}

TEST(Density, Errors) {
  Context ctx(MPI_COMM_WORLD);
  const int n = 17;
  auto S = tt::with_spectrum(spectrum(n, 0.5, 2.0, 0.0));
  auto H = tt::with_spectrum(spectrum(n, -1.0, 1.0, 0.05));
  auto Hbad = H;
  Hbad[3 * n + 1] += 1e-3;                                     // not symmetric
  auto Sneg = tt::with_spectrum(spectrum(n, -0.5, 2.0, 0.1));  // not positive definite
  auto msg = [&](const std::function<void()>& f) { return tt::message_of(f); };
  both(ctx, H, n, [&](auto& alg, const auto& h, const char* kind) {
    using M = std::decay_t<decltype(h)>;
    auto make = [&](const std::vector<double>& a) {
      if constexpr (std::is_same_v<M, Dense>)
        return tt::dense_of(ctx, a, n);
      else
        return tt::sparse_of(ctx, a, tt::water_sizes(n));
    };
    M s = make(S);
    EXPECT_NE(msg([&] { solvers::density(alg, make(Hbad), s, 8); }).find("H is not symmetric"),
              std::string::npos)
        << kind;
    EXPECT_NE(msg([&] { solvers::density(alg, h, make(Sneg), 8); }).find("not positive definite"),
              std::string::npos)
        << kind;
    EXPECT_NE(msg([&] { solvers::inverse_sqrt(alg, make(Sneg)); }).find("not positive definite"),
              std::string::npos)
        << kind;
    EXPECT_NE(msg([&] { solvers::density(alg, h, s, 7); }).find("electrons = 7"), std::string::npos)
        << kind;
    EXPECT_NE(msg([&] { solvers::density(alg, h, s, 0); }).find("electrons = 0"), std::string::npos)
        << kind;
    EXPECT_NE(msg([&] { solvers::density(alg, h, s, 2 * n); }).find("at most"), std::string::npos)
        << kind;
    solvers::DensityOptions o;
    o.mu = 50.0;
    EXPECT_NE(msg([&] { solvers::density(alg, h, s, 8, o); }).find("outside the spectrum"),
              std::string::npos)
        << kind;
    o.mu = -50.0;
    EXPECT_NE(msg([&] { solvers::density(alg, h, s, 8, o); }).find("outside the spectrum"),
              std::string::npos)
        << kind;
    solvers::DensityOptions bad;
    bad.sign_order = 5;
    EXPECT_NE(msg([&] { solvers::density(alg, h, s, 8, bad); }).find("sign order"),
              std::string::npos)
        << kind;
    bad = {};
    bad.method = DensityMethod::McWeeny;
    EXPECT_NE(msg([&] { solvers::density(alg, h, s, 8, bad); }).find("mcweeny"), std::string::npos)
        << kind;
    auto Hnan = H;
    Hnan[5] = NAN;
    if constexpr (std::is_same_v<M, Dense>)  // (from_dense drops a block whose norm is NaN)
      EXPECT_NE(msg([&] { solvers::density(alg, make(Hnan), s, 8); }).find("NaN"),
                std::string::npos)
          << kind;
  });
  // Block sizes that do not match; a negative filter eps; a filter eps so large that the
  // occupation is lost.
  {
    solvers::SparseAlgebra alg(ctx);
    auto h = tt::sparse_of(ctx, H, tt::water_sizes(n));
    std::vector<int> other(static_cast<std::size_t>(n), 1);
    auto s = tt::sparse_of(ctx, S, other);
    EXPECT_THROW(solvers::density(alg, h, s, 8), DimensionMismatch);
    sparse::SpMultiplyOptions neg;
    neg.filter_eps = -1e-6;
    EXPECT_NE(msg([&] { solvers::SparseAlgebra a(ctx, neg); }).find("filter eps"),
              std::string::npos);
    for (auto flag :
         {&sparse::SpMultiplyOptions::retain_sparsity, &sparse::SpMultiplyOptions::comm_only}) {
      sparse::SpMultiplyOptions o;
      o.*flag = true;
      const std::string m = msg([&] { solvers::SparseAlgebra a(ctx, o); });
      EXPECT_NE(m.find(flag == &sparse::SpMultiplyOptions::comm_only ? "comm_only = true"
                                                                     : "retain_sparsity = true"),
                std::string::npos)
          << m;
    }
    {  // a filter that removes every block of X / bound: said so, not "eigenvalue near zero"
      sparse::SpMultiplyOptions o;
      o.filter_eps = 0.1;
      solvers::SparseAlgebra a(ctx, o);
      const std::string m = msg([&] { solvers::sign(a, h, 1e3); });
      EXPECT_NE(m.find("removed all blocks of X at step 0"), std::string::npos) << m;
    }
    sparse::SpMultiplyOptions big;
    big.filter_eps = 1.0;
    solvers::SparseAlgebra coarse(ctx, big);
    auto sp = tt::sparse_of(ctx, S, tt::water_sizes(n));
    for (auto m : {DensityMethod::Sign, DensityMethod::Trs4}) {
      solvers::DensityOptions o;
      o.method = m;
      std::string what = "(no error)";
      try {
        auto r = solvers::density(coarse, h, sp, 8, o);
        if (ctx.rank() == 0)
          std::printf("  eps 1.0: occ %.6f idem %.3e be %.6f\n", 2 * r.trace_ps, r.idempotency,
                      r.band_energy);
      } catch (const Error& e) { what = e.what(); }
      if (ctx.rank() == 0)
        std::printf("  eps 1.0 %s: %s\n", solvers::to_string(m).c_str(), what.c_str());
      EXPECT_NE(what, "(no error)") << solvers::to_string(m);
    }
  }
  {
    solvers::DenseAlgebra alg(ctx);
    auto h = tt::dense_of(ctx, H, n);
    auto s = tt::dense_of(ctx, std::vector<double>(static_cast<std::size_t>(19 * 19), 0.0), 19);
    EXPECT_THROW(solvers::density(alg, h, s, 8), DimensionMismatch);
  }
  EXPECT_THROW(solvers::parse_density_method("lanczos"), InputError);
}

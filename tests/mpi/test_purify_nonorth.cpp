// Purification in a non-orthogonal basis: S with a known spectrum (S = H diag(s) H, H a
// Householder reflection, so S^1/2 and S^-1/2 are known exactly), F = S^1/2 F_orth S^1/2 from a
// PySCF F_orth; D must be S^-1/2 D_ref S^-1/2. And the errors on S.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "purify_test_util.hpp"
#include "tessel/io/npy.hpp"
#include "tessel/solvers/purify.hpp"
#include "test_util.hpp"

using namespace tessel;
using solvers::PurifyMethod;
namespace tt = tessel::testing;

namespace {

// Eigenvalues f(s_i) of S, s_i evenly from lo to hi (default 0.3 .. 2: condition number 6.7,
// as the STO-3G overlaps of the PySCF systems).
std::vector<double> overlap_spectrum(std::int64_t n, double (*f)(double), double lo = 0.3,
                                     double hi = 2.0) {
  std::vector<double> s(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    s[i] = f(lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n - 1));
  return s;
}

layout::Layout lay(const Context& ctx, std::int64_t n, std::int64_t nb = 16) {
  return layout::Layout::block_cyclic(n, n, nb, nb, 1, ctx.size(), 0, 0, ctx.size());
}

using tessel::testing::message_of;

}  // namespace

// S with the extreme eigenvalues of the system's real overlap (json s_min_eig, s_cond).
void check_pyscf(const std::string& tag) {
  Context ctx(MPI_COMM_WORLD);
  const double lo = tt::json_number(tag, "s_min_eig"), hi = lo * tt::json_number(tag, "s_cond");
  const auto n = static_cast<std::int64_t>(tt::json_number(tag, "n"));
  const auto nocc = static_cast<std::int64_t>(tt::json_number(tag, "nocc"));
  const double mu = 0.5 * (tt::json_number(tag, "homo") + tt::json_number(tag, "lumo"));
  auto L = [&](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, 16, 16, 1, ctx.size(), 0, 0, ctx.size());
  };
  auto dir = tt::pyscf_dir();
  auto Forth = io::read_npy<double>(ctx, (dir / (tag + "_F_orth.npy")).string(), L);
  auto Dref = io::read_npy<double>(ctx, (dir / (tag + "_D_ref.npy")).string(), L);
  auto fo = dense::gather(ctx, Forth), dr = dense::gather(ctx, Dref);
  std::vector<double> S, F, Dexp;
  if (ctx.rank() == 0) {
    S = tt::with_spectrum(overlap_spectrum(
        n, [](double x) { return x; }, lo, hi));
    auto sh = tt::with_spectrum(overlap_spectrum(
        n, [](double x) { return std::sqrt(x); }, lo, hi));
    auto si = tt::with_spectrum(overlap_spectrum(
        n, [](double x) { return 1 / std::sqrt(x); }, lo, hi));
    F = tt::matmul(tt::matmul(sh, fo, n), sh, n);
    for (std::int64_t j = 0; j < n; ++j)  // exactly symmetric
      for (std::int64_t i = 0; i < j; ++i) F[j * n + i] = F[i * n + j];
    Dexp = tt::matmul(tt::matmul(si, dr, n), si, n);
  }
  auto Sd = dense::scatter(ctx, S.data(), lay(ctx, n));
  auto Fd = dense::scatter(ctx, F.data(), lay(ctx, n));
  for (auto m :
       {PurifyMethod::Canonical, PurifyMethod::McWeeny, PurifyMethod::Trs2, PurifyMethod::Trs4}) {
    solvers::PurifyOptions o;
    o.method = m;
    o.mu = mu;
    auto orth = solvers::purify(ctx, Forth, nocc, o);
    auto res = solvers::purify(ctx, Fd, Sd, nocc, o);
    auto g = dense::gather(ctx, res.D);
    EXPECT_NEAR(res.band_energy, orth.band_energy, 1e-9) << solvers::to_string(m);
    EXPECT_GT(res.ns_iterations, 3);
    EXPECT_GE(res.ns_seconds, 0);
    if (ctx.rank() != 0) continue;
    double err = tt::frob_diff(g, Dexp) / tt::frob(Dexp);
    double trds = 0;  // tr(D S)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t q = 0; q < n; ++q) trds += g[q * n + i] * S[i * n + q];
    EXPECT_LE(err, 1e-10) << solvers::to_string(m);
    EXPECT_NEAR(trds, static_cast<double>(nocc), 1e-10) << solvers::to_string(m);
    std::printf(
        "  %s (S cond %.0f) %-9s non-orthogonal: %d NS steps, %d it, |D-Dexp|/|Dexp| = %.2e, "
        "|tr(DS)-nocc| = %.1e, 2tr(DF) - orth = %.1e\n",
        tag.c_str(), hi / lo, solvers::to_string(m).c_str(), res.ns_iterations, res.iterations, err,
        std::abs(trds - static_cast<double>(nocc)), res.band_energy - orth.band_energy);
  }
}

TEST(PurifyNonorth, PyscfSto3gOverlap) {
  if (!tt::have_system("h2o8_sto3g_rhf")) GTEST_SKIP() << "no " << tt::pyscf_dir();
  check_pyscf("h2o8_sto3g_rhf");
}

TEST(PurifyNonorth, PyscfCcpvdzOverlap) {
  if (!tt::have_system("h2o8_ccpvdz_rhf")) GTEST_SKIP() << "no " << tt::pyscf_dir();
  check_pyscf("h2o8_ccpvdz_rhf");
}

// Known spectra, no data files: band energy = 2 sum of the nocc lowest generalized eigenvalues
// (F = S^1/2 F_orth S^1/2 with F_orth of eigenvalues e).
TEST(PurifyNonorth, SyntheticGeneralized) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 12, nocc = 5;
  std::vector<double> e(n);
  for (std::int64_t i = 0; i < n; ++i) e[i] = -1.0 + 0.15 * i + (i >= nocc ? 0.4 : 0.0);
  auto fo = tt::with_spectrum(e);
  auto sh = tt::with_spectrum(overlap_spectrum(n, [](double x) { return std::sqrt(x); }));
  // a different reflection for F_orth than for S would be better; permute F_orth's rows and
  // columns so that it does not commute with S
  std::vector<double> fp(fo.size());
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) fp[j * n + i] = fo[(n - 1 - j) * n + (n - 1 - i)];
  auto F = tt::matmul(tt::matmul(sh, fp, n), sh, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < j; ++i) F[j * n + i] = F[i * n + j];
  auto S = tt::with_spectrum(overlap_spectrum(n, [](double x) { return x; }));
  auto Fd = dense::scatter(ctx, F.data(), lay(ctx, n, 3));
  auto Sd = dense::scatter(ctx, S.data(), lay(ctx, n, 3));
  double ref = 0;
  for (std::int64_t i = 0; i < nocc; ++i) ref += 2 * e[i];
  for (auto m : {PurifyMethod::Canonical, PurifyMethod::Trs2, PurifyMethod::Trs4}) {
    solvers::PurifyOptions o;
    o.method = m;
    auto res = solvers::purify(ctx, Fd, Sd, nocc, o);
    EXPECT_NEAR(res.band_energy, ref, 1e-10) << solvers::to_string(m);
  }
}

TEST(PurifyNonorth, Errors) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 10, nocc = 4;
  std::vector<double> e(n);
  for (std::int64_t i = 0; i < n; ++i) e[i] = 0.1 * i + (i >= nocc ? 0.3 : 0.0);
  auto F = dense::scatter(ctx, tt::with_spectrum(e).data(), lay(ctx, n, 3));
  auto spd = tt::with_spectrum(overlap_spectrum(n, [](double x) { return x; }));
  auto S = dense::scatter(ctx, spd.data(), lay(ctx, n, 3));
  // S indefinite: one eigenvalue -0.5
  auto sp = overlap_spectrum(n, [](double x) { return x; });
  sp[3] = -0.5;
  auto Sneg = dense::scatter(ctx, tt::with_spectrum(sp).data(), lay(ctx, n, 3));
  auto msg = message_of([&] { solvers::purify(ctx, F, Sneg, nocc); });
  EXPECT_NE(msg.find("S is not positive definite"), std::string::npos) << msg;
  // (the Lanczos bounds of the shared inverse_sqrt name the negative eigenvalue)
  EXPECT_NE(msg.find("-0.5 <= 0"), std::string::npos) << msg;
  // S singular: diagonal with an exact zero (rounding cannot move it)
  std::vector<double> sd(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) sd[i * n + i] = i == 6 ? 0.0 : 1.0 + 0.1 * i;
  auto Ssing = dense::scatter(ctx, sd.data(), lay(ctx, n, 3));
  msg = message_of([&] { solvers::purify(ctx, F, Ssing, nocc); });
  EXPECT_NE(msg.find("S is not positive definite"), std::string::npos) << msg;
  EXPECT_NE(msg.find("singular"), std::string::npos) << msg;
  // S singular, rotated (the zero eigenvalue becomes rounding noise of either sign)
  sp = overlap_spectrum(n, [](double x) { return x; });
  sp[2] = 0.0;
  auto Srot = dense::scatter(ctx, tt::with_spectrum(sp).data(), lay(ctx, n, 3));
  msg = message_of([&] { solvers::purify(ctx, F, Srot, nocc); });
  EXPECT_NE(msg.find("S is not positive definite"), std::string::npos) << msg;
  // NaN / Inf in S and in F
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    auto x = spd;
    x[7] = bad;
    auto Sb = dense::scatter(ctx, x.data(), lay(ctx, n, 3));
    msg = message_of([&] { solvers::purify(ctx, F, Sb, nocc); });
    EXPECT_NE(msg.find("S has NaN or Inf"), std::string::npos) << msg;
    auto f = tt::with_spectrum(e);
    f[12] = bad;
    auto Fb = dense::scatter(ctx, f.data(), lay(ctx, n, 3));
    msg = message_of([&] { solvers::purify(ctx, Fb, S, nocc); });
    EXPECT_NE(msg.find("F has NaN or Inf"), std::string::npos) << msg;
  }
  // not symmetric, by how much
  auto x = spd;
  x[1] += 2e-3;
  auto Sa = dense::scatter(ctx, x.data(), lay(ctx, n, 3));
  msg = message_of([&] { solvers::purify(ctx, F, Sa, nocc); });
  EXPECT_NE(msg.find("S is not symmetric: max|S - S^T| = 0.002"), std::string::npos) << msg;
  auto f = tt::with_spectrum(e);
  f[1] += 1e-3;
  auto Fa = dense::scatter(ctx, f.data(), lay(ctx, n, 3));
  msg = message_of([&] { solvers::purify(ctx, Fa, S, nocc); });
  EXPECT_NE(msg.find("F is not symmetric: max|F - F^T| = 0.001"), std::string::npos) << msg;
  // shapes and layouts
  dense::DistMatrix<double> small(ctx, lay(ctx, n - 1, 3));
  EXPECT_THROW(solvers::purify(ctx, F, small, nocc), DimensionMismatch);
  auto Sother = dense::scatter(ctx, spd.data(), lay(ctx, n, 2));
  EXPECT_THROW(solvers::purify(ctx, F, Sother, nocc), LayoutMismatch);
  EXPECT_THROW(solvers::purify(ctx, F, S, 0), InputError);
  solvers::PurifyOptions bad;
  bad.ns_tol = -1;
  EXPECT_NE(message_of([&] { solvers::purify(ctx, F, S, nocc, bad); }).find("ns_tol = -1"),
            std::string::npos);
  bad = {};
  bad.ns_max_iter = 0;
  EXPECT_NE(message_of([&] { solvers::purify(ctx, F, S, nocc, bad); }).find("ns_max_iter = 0"),
            std::string::npos);
  // the orthogonal path's errors come through: McWeeny without mu
  solvers::PurifyOptions o;
  o.method = PurifyMethod::McWeeny;
  msg = message_of([&] { solvers::purify(ctx, F, S, nocc, o); });
  EXPECT_NE(msg.find("needs the chemical potential mu"), std::string::npos) << msg;
}

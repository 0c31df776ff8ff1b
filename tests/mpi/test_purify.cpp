// Canonical purification against the exact PySCF densities of ../shared/data/pyscf, and its
// errors (bad nocc, non-symmetric or non-finite F, a zero gap).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>

#include "tessel/io/npy.hpp"
#include "tessel/solvers/purify.hpp"
#include "test_util.hpp"

using namespace tessel;

namespace {

std::filesystem::path pyscf_dir() {
  if (const char* e = std::getenv("TESSEL_SHARED_DATA")) return std::filesystem::path(e) / "pyscf";
  return std::filesystem::path(TESSEL_SOURCE_DIR) / ".." / "shared" / "data" / "pyscf";
}

std::int64_t json_int(const std::filesystem::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  if (!std::regex_search(s, m, std::regex("\"" + key + "\"\\s*:\\s*(\\d+)"))) return -1;
  return std::stoll(m[1]);
}

void check_system(const std::string& tag, dense::SscAlgorithm alg) {
  auto dir = pyscf_dir();
  if (!std::filesystem::exists(dir / (tag + "_F_orth.npy"))) GTEST_SKIP() << "no " << dir;
  Context ctx(MPI_COMM_WORLD);
  std::int64_t nocc = json_int(dir / (tag + ".json"), "nocc");
  ASSERT_GT(nocc, 0);
  auto lay = [&](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, 16, 16, 1, ctx.size(), 0, 0, ctx.size());
  };
  auto F = io::read_npy<double>(ctx, (dir / (tag + "_F_orth.npy")).string(), lay);
  auto Dref = io::read_npy<double>(ctx, (dir / (tag + "_D_ref.npy")).string(), lay);
  solvers::PurifyOptions o;
  o.ssc.algorithm = alg;
  auto t0 = std::chrono::steady_clock::now();
  auto res = solvers::purify(ctx, F, nocc, o);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto g = dense::gather(ctx, res.D), gr = dense::gather(ctx, Dref);
  if (ctx.rank() == 0) {
    double err = tessel::testing::frob_diff(g, gr) / tessel::testing::frob(gr);
    double tr = 0;
    std::int64_t n = F.rows();
    for (std::int64_t i = 0; i < n; ++i) tr += g[static_cast<std::size_t>(i * n + i)];
    EXPECT_LE(err, 1e-10) << tag;
    EXPECT_LE(std::abs(tr - static_cast<double>(nocc)), 1e-10) << tag;
    EXPECT_LE(res.trace_error, 1e-10);
    EXPECT_LT(res.idempotency_error, o.tol);
    EXPECT_GT(res.iterations, 5);
    EXPECT_LT(res.iterations, 60);
    std::printf("  %s: %d iterations, |D-Dref|/|Dref| = %.2e, 2tr(DF) = %.10f, %s, %.2f s\n",
                tag.c_str(), res.iterations, err, res.band_energy, res.mesh.c_str(), secs);
  }
}

// A symmetric n x n matrix with eigenvalues e (dense: Householder rotation of diag(e)).
std::vector<double> with_spectrum(const std::vector<double>& e) {
  std::int64_t n = static_cast<std::int64_t>(e.size());
  std::vector<double> v(e.size()), a(e.size() * e.size());
  double vv = 0;
  for (std::int64_t i = 0; i < n; ++i) { v[i] = 1.0 + 0.37 * i; vv += v[i] * v[i]; }
  // H = I - 2 v v^T / vv; A = H diag(e) H
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (std::int64_t q = 0; q < n; ++q) {
        double hiq = (i == q) - 2 * v[i] * v[q] / vv, hqj = (q == j) - 2 * v[q] * v[j] / vv;
        s += hiq * e[q] * hqj;
      }
      a[static_cast<std::size_t>(j * n + i)] = s;
    }
  for (std::int64_t j = 0; j < n; ++j)  // exactly symmetric
    for (std::int64_t i = 0; i < j; ++i)
      a[static_cast<std::size_t>(j * n + i)] = a[static_cast<std::size_t>(i * n + j)];
  return a;
}

}  // namespace

TEST(Purify, H2O8Sto3gRhf) { check_system("h2o8_sto3g_rhf", dense::SscAlgorithm::Optimized); }
TEST(Purify, H2O8Sto3gLdaBaseline) { check_system("h2o8_sto3g_lda-dfj", dense::SscAlgorithm::Baseline); }
TEST(Purify, H2O8CcpvdzRhf) { check_system("h2o8_ccpvdz_rhf", dense::SscAlgorithm::Optimized); }
TEST(Purify, H2O32Sto3gRhf) { check_system("h2o32_sto3g_rhf", dense::SscAlgorithm::Optimized); }

TEST(Purify, SmallSyntheticGap) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 10, nocc = 4;
  std::vector<double> e(n);
  for (std::int64_t i = 0; i < n; ++i) e[i] = -1.0 + 0.2 * i + (i >= nocc ? 0.5 : 0.0);
  auto full = with_spectrum(e);
  auto lay = layout::Layout::block_cyclic(n, n, 2, 2, 1, ctx.size(), 0, 0, ctx.size());
  auto F = dense::scatter(ctx, full.data(), lay);
  auto res = solvers::purify(ctx, F, nocc);
  EXPECT_LE(res.trace_error, 1e-10);
  // band energy = 2 * sum of the nocc lowest eigenvalues
  double ref = 0;
  for (std::int64_t i = 0; i < nocc; ++i) ref += 2 * e[i];
  EXPECT_NEAR(res.band_energy, ref, 1e-10);
}

TEST(Purify, Errors) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 10;
  std::vector<double> e(n);
  for (std::int64_t i = 0; i < n; ++i) e[i] = 0.1 * i;
  auto full = with_spectrum(e);
  auto lay = layout::Layout::block_cyclic(n, n, 3, 3, 1, ctx.size(), 0, 0, ctx.size());
  auto F = dense::scatter(ctx, full.data(), lay);
  EXPECT_THROW(solvers::purify(ctx, F, 0), InputError);
  EXPECT_THROW(solvers::purify(ctx, F, n), InputError);
  EXPECT_THROW(solvers::purify(ctx, F, -3), InputError);
  auto asym = full;
  asym[1] += 1e-3;
  auto A = dense::scatter(ctx, asym.data(), lay);
  EXPECT_THROW(solvers::purify(ctx, A, 4), InputError);
  auto nan = full;
  nan[5] = std::numeric_limits<double>::infinity();
  auto B = dense::scatter(ctx, nan.data(), lay);
  EXPECT_THROW(solvers::purify(ctx, B, 4), InputError);
  auto rect = layout::Layout::block_cyclic(n, n - 1, 3, 3, 1, ctx.size(), 0, 0, ctx.size());
  dense::DistMatrix<double> R(ctx, rect);
  EXPECT_THROW(solvers::purify(ctx, R, 4), DimensionMismatch);
  // zero gap: e[3] == e[4] with nocc = 4 -> occupation 1/2 for the pair, reported. F is
  // diagonal so that rounding cannot split the pair (a rotated F is split by rounding
  // after enough steps, then converges to an arbitrary split of the pair).
  std::vector<double> fz(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) fz[static_cast<std::size_t>(i * n + i)] = e[i];
  fz[static_cast<std::size_t>(4 * n + 4)] = e[3];
  auto Z = dense::scatter(ctx, fz.data(), lay);
  try {
    solvers::purify(ctx, Z, 4);
    ADD_FAILURE() << "zero gap not reported";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("no clear occupation"), std::string::npos) << err.what();
  }
}

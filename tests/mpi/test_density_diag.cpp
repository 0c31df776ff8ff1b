// Density by diagonalization (issue 31, --method diag / auto): against serial LAPACK dsygvd on
// a generated water box (P = C_occ C_occ^T, band energy 2 sum of the occupied eigenvalues, mu
// mid-gap), against the sign iteration on the same systems (dense and block-sparse), against
// the shared CP2K (band_energy_exact) and PySCF (D_ref) matrices (GTEST_SKIP when absent),
// auto's choice, and the errors. Only built where ScaLAPACK is (tests/mpi/CMakeLists.txt).
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cp2k_test_util.hpp"
#include "density_test_util.hpp"
#include "purify_test_util.hpp"
#include "tessel/io/npy.hpp"
#include "tessel/solvers/density_diag.hpp"
#include "tessel/sparse/generate.hpp"

extern "C" void dsygvd_(const int* itype, const char* jobz, const char* uplo, const int* n,
                        double* a, const int* lda, double* b, const int* ldb, double* w,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info);

using namespace tessel;
namespace tt = tessel::testing;
using solvers::DensityMethod;
using Dense = dense::DistMatrix<double>;
using Sparse = sparse::BlockSparseMatrix<double>;

namespace {

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

// The reference: serial LAPACK dsygvd of the full (H, S) on every rank.
struct Reference {
  std::vector<double> w, P;  // eigenvalues; P = C_occ C_occ^T
  double band = 0, mu = 0;
};
Reference lapack(std::vector<double> h, std::vector<double> s, int n, int nocc) {
  Reference r;
  r.w.assign(static_cast<std::size_t>(n), 0.0);
  const int one = 1;
  int info = 0, lwork = 1 + 6 * n + 2 * n * n, liwork = 3 + 5 * n;
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  dsygvd_(&one, "V", "U", &n, h.data(), &n, s.data(), &n, r.w.data(), work.data(), &lwork,
          iwork.data(), &liwork, &info);
  EXPECT_EQ(info, 0);
  r.P.assign(static_cast<std::size_t>(n) * n, 0.0);
  for (int k = 0; k < nocc; ++k) {
    r.band += 2 * r.w[static_cast<std::size_t>(k)];
    const double* c = h.data() + static_cast<std::size_t>(k) * n;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) r.P[static_cast<std::size_t>(j) * n + i] += c[i] * c[j];
  }
  r.mu = 0.5 * (r.w[static_cast<std::size_t>(nocc - 1)] + r.w[static_cast<std::size_t>(nocc)]);
  return r;
}

template <class M>
solvers::DensityResult<M> run(Context& ctx, const M& H, const M& S, std::int64_t electrons,
                              DensityMethod method, double eps = 0,
                              solvers::DiagSolver solver = solvers::DiagSolver::Auto) {
  solvers::DensityOptions o;
  o.method = method;
  o.diag_solver = solver;
  if constexpr (std::is_same_v<M, Dense>) {
    solvers::DenseAlgebra alg(ctx);
    return solvers::density(alg, H, S, electrons, o);
  } else {
    sparse::SpMultiplyOptions mo;
    mo.filter_eps = eps;
    solvers::SparseAlgebra alg(ctx, mo);
    return solvers::density(alg, H, S, electrons, o);
  }
}

}  // namespace

// A generated water box: diag (dense and block-sparse) equals dsygvd's P, band energy and
// mid-gap mu; the sign iteration gives the same band energy.
TEST(DensityDiag, GeneratedWaterAgainstLapackAndSign) {
  Context ctx(MPI_COMM_WORLD);
  ASSERT_TRUE(solvers::diagonalization_built());
  auto w = sparse::generate_water(ctx, 6);
  const int n = static_cast<int>(w.H.rows()), nocc = static_cast<int>(w.nelectrons / 2);
  const auto fh = tt::full_of(ctx, w.H), fs = tt::full_of(ctx, w.S);
  const Reference ref = lapack(fh, fs, n, nocc);
  const Dense H = tt::dense_of(ctx, fh, n), S = tt::dense_of(ctx, fs, n);
  auto d = run(ctx, H, S, w.nelectrons, DensityMethod::Diag);
  auto s = run(ctx, w.H, w.S, w.nelectrons, DensityMethod::Diag);
  auto sign = run(ctx, w.H, w.S, w.nelectrons, DensityMethod::Sign);
  EXPECT_EQ(d.method, DensityMethod::Diag);
  EXPECT_LT(max_diff(tt::full_of(ctx, d.P), ref.P), 1e-10);
  EXPECT_LT(max_diff(tt::full_of(ctx, s.P), ref.P), 1e-10);
  for (const double be : {d.band_energy, d.band_energy_before_final, s.band_energy})
    EXPECT_NEAR(be, ref.band, 1e-9 * std::abs(ref.band));
  EXPECT_NEAR(sign.band_energy, ref.band, 1e-8 * std::abs(ref.band));
  EXPECT_NEAR(d.mu, ref.mu, 1e-10);
  EXPECT_GT(sign.mu, ref.w[static_cast<std::size_t>(nocc - 1)]);
  EXPECT_LT(sign.mu, ref.w[static_cast<std::size_t>(nocc)]);
  EXPECT_NEAR(2 * d.trace_ps, static_cast<double>(w.nelectrons), 1e-9);
  EXPECT_LT(d.idempotency, 1e-10);
  EXPECT_EQ(d.iterations, 0);
  EXPECT_NEAR(d.bounds.lo, ref.w.front(), 1e-9 * std::abs(ref.w.front()));
  EXPECT_NEAR(d.bounds.hi, ref.w.back(), 1e-9 * std::abs(ref.w.back()));
  if (ctx.rank() == 0)
    std::printf("  water:6 n = %d: diag %.12f, dsygvd %.12f, sign %.12f\n", n, d.band_energy,
                ref.band, sign.band_energy);
}

// Every eigensolver this build has (pdsyevd; ELPA 1- and 2-stage where built) gives dsygvd's
// P and band energy, dense and block-sparse; auto names the one it ran; ELPA where it is not
// built is an InputError on every rank.
TEST(DensityDiag, EveryEigensolverAgainstLapack) {
  using solvers::DiagSolver;
  Context ctx(MPI_COMM_WORLD);
  auto w = sparse::generate_water(ctx, 5);
  const int n = static_cast<int>(w.H.rows()), nocc = static_cast<int>(w.nelectrons / 2);
  const auto fh = tt::full_of(ctx, w.H), fs = tt::full_of(ctx, w.S);
  const Reference ref = lapack(fh, fs, n, nocc);
  const Dense H = tt::dense_of(ctx, fh, n), S = tt::dense_of(ctx, fs, n);
  for (DiagSolver solver : {DiagSolver::Pdsyevd, DiagSolver::Elpa1, DiagSolver::Elpa2}) {
    const std::string name = solvers::to_string(solver);
    if (solver != DiagSolver::Pdsyevd && !solvers::diag_elpa_built()) {
      try {
        run(ctx, H, S, w.nelectrons, DensityMethod::Diag, 0, solver);
        ADD_FAILURE() << name << " accepted without ELPA";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("ELPA is not built"), std::string::npos) << e.what();
      }
      continue;
    }
    auto d = run(ctx, H, S, w.nelectrons, DensityMethod::Diag, 0, solver);
    auto s = run(ctx, w.H, w.S, w.nelectrons, DensityMethod::Diag, 0, solver);
    EXPECT_EQ(d.eigensolver, name);
    EXPECT_LT(max_diff(tt::full_of(ctx, d.P), ref.P), 1e-10) << name;
    EXPECT_LT(max_diff(tt::full_of(ctx, s.P), ref.P), 1e-10) << name;
    EXPECT_NEAR(d.band_energy, ref.band, 1e-9 * std::abs(ref.band)) << name;
    EXPECT_NEAR(d.bounds.lo, ref.w.front(), 1e-9 * std::abs(ref.w.front())) << name;
    EXPECT_NEAR(d.bounds.hi, ref.w.back(), 1e-9 * std::abs(ref.w.back())) << name;
  }
  auto a = run(ctx, H, S, w.nelectrons, DensityMethod::Diag);
  EXPECT_EQ(a.eigensolver, "pdsyevd");
  EXPECT_THROW(solvers::parse_diag_solver("elpa3"), InputError);
}

// The shared CP2K systems: diag on block-sparse matrices reproduces band_energy_exact (a dense
// generalized diagonalization) and the sign iteration's band energy; unfiltered and at 1e-6.
TEST(DensityDiag, Cp2kAgainstExactAndSign) {
  Context ctx(MPI_COMM_WORLD);
  tt::System sys;
  if (!tt::load("h2o-32-szv", sys)) GTEST_SKIP() << "no " << tt::cp2k_dir("h2o-32-szv");
  const Sparse H = tt::sparse_of(ctx, sys.H, sys.sizes), S = tt::sparse_of(ctx, sys.S, sys.sizes);
  auto d = run(ctx, H, S, sys.electrons, DensityMethod::Diag);
  auto sign = run(ctx, H, S, sys.electrons, DensityMethod::Sign);
  auto f = run(ctx, H, S, sys.electrons, DensityMethod::Diag, 1e-6);
  EXPECT_NEAR(d.band_energy, sys.exact, 1e-9);
  EXPECT_NEAR(d.band_energy, sign.band_energy, 1e-9);
  EXPECT_NEAR(f.band_energy, sys.exact, 1e-5);
  EXPECT_NEAR(2 * d.trace_ps, static_cast<double>(sys.electrons), 1e-8);
  if (ctx.rank() == 0)
    std::printf("  h2o-32-szv: diag %.10f, sign %.10f, exact %.10f, diag eps 1e-6 %.10f\n",
                d.band_energy, sign.band_energy, sys.exact, f.band_energy);
}

// The shared PySCF systems (orthogonal basis, S = I): diag's D is D_ref, as the sign
// iteration's is.
TEST(DensityDiag, PyscfAgainstReference) {
  Context ctx(MPI_COMM_WORLD);
  for (std::string tag : {"h2o8_sto3g_rhf", "h2o8_ccpvdz_rhf"}) {
    if (!tt::have_system(tag)) GTEST_SKIP() << "no " << tag << " in " << tt::pyscf_dir();
    const auto n = static_cast<std::int64_t>(tt::json_number(tag, "n"));
    const auto nocc = static_cast<std::int64_t>(tt::json_number(tag, "nocc"));
    auto lay = [&](std::int64_t r, std::int64_t c) {
      return layout::Layout::block_cyclic(r, c, 8, 8, 1, ctx.size(), 0, 0, ctx.size());
    };
    auto dir = tt::pyscf_dir();
    auto F = io::read_npy<double>(ctx, (dir / (tag + "_F_orth.npy")).string(), lay);
    auto dref =
        tt::full_of(ctx, io::read_npy<double>(ctx, (dir / (tag + "_D_ref.npy")).string(), lay));
    std::vector<double> eye(static_cast<std::size_t>(n * n), 0.0);
    for (std::int64_t i = 0; i < n; ++i) eye[static_cast<std::size_t>(i * n + i)] = 1.0;
    const Dense I = tt::dense_of(ctx, eye, n);
    const Dense Fc = tt::dense_of(ctx, tt::full_of(ctx, F), n);
    auto d = run(ctx, Fc, I, 2 * nocc, DensityMethod::Diag);
    auto sign = run(ctx, Fc, I, 2 * nocc, DensityMethod::Sign);
    EXPECT_LT(max_diff(tt::full_of(ctx, d.P), dref), 1e-8) << tag;
    EXPECT_NEAR(d.band_energy, sign.band_energy, 1e-8) << tag;
    EXPECT_NEAR(d.mu, 0.5 * (tt::json_number(tag, "homo") + tt::json_number(tag, "lumo")), 1e-8)
        << tag;
  }
}

// auto: the choice and its reason in the result; the pure model's cases.
TEST(DensityDiag, AutoChoice) {
  Context ctx(MPI_COMM_WORLD);
  auto w = sparse::generate_water(ctx, 6);
  auto r = run(ctx, w.H, w.S, w.nelectrons, DensityMethod::Auto);
  EXPECT_EQ(r.method, DensityMethod::Diag) << r.method_reason;
  EXPECT_NE(r.method_reason.find("diagonalization"), std::string::npos) << r.method_reason;
  // The model alone: dense always favours diag (c_d n^3 against ~120 n^3); sparse at low fill,
  // many ranks and large n the sign iteration; without ScaLAPACK or with mu given never diag.
  using solvers::choose_density_method;
  EXPECT_EQ(choose_density_method(2808, 1.0, 4, false, true, false).method, DensityMethod::Diag);
  EXPECT_EQ(choose_density_method(200000, 0.002, 64, true, true, false).method,
            DensityMethod::Sign);
  const auto off = choose_density_method(100, 1.0, 1, false, false, false);
  EXPECT_EQ(off.method, DensityMethod::Sign);
  EXPECT_NE(off.reason.find("not built"), std::string::npos) << off.reason;
  EXPECT_EQ(choose_density_method(100, 1.0, 1, false, true, true).method, DensityMethod::Sign);
  // The eigensolver replicated (diag_ranks 1, as PySCF's): at n = 2000 on 16 ranks the model
  // gives sign 50 * 2 n^3 * 1.3e-10 / 16 = 6.5 s against 8.5e-10 n^3 + 0.26 = 7.06 s; on the
  // products' 16 ranks diag takes 6.8 / 16^0.7 + 0.26 = 1.25 s.
  const auto rep = choose_density_method(2000, 1.0, 16, false, true, false, {}, 1);
  EXPECT_EQ(rep.method, DensityMethod::Sign) << rep.reason;
  EXPECT_NEAR(rep.purify_seconds, 6.5, 1e-9);
  EXPECT_NEAR(rep.diag_seconds, 6.8 + 0.26, 1e-9);
  EXPECT_NE(rep.reason.find("the eigensolver on 1"), std::string::npos) << rep.reason;
  EXPECT_EQ(choose_density_method(2000, 1.0, 16, false, true, false).method, DensityMethod::Diag);
  // Below min_parallel_n both run as on one rank: diag, whatever the rank count.
  const auto small = choose_density_method(500, 1.0, 100000, false, true, false, {}, 1);
  EXPECT_EQ(small.method, DensityMethod::Diag) << small.reason;
  EXPECT_NE(small.reason.find("one rank below n = 1000"), std::string::npos) << small.reason;
  EXPECT_THROW(choose_density_method(100, 1.0, 4, false, true, false, {}, -1), InputError);
  EXPECT_THROW(choose_density_method(0, 1.0, 4, false, true, false), InputError);
}

// Errors on every rank: mu given to diag, S not positive definite, degenerate HOMO/LUMO.
TEST(DensityDiag, Errors) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 12;
  std::vector<double> h(static_cast<std::size_t>(n * n), 0.0), s = h;
  for (std::int64_t i = 0; i < n; ++i) {
    h[static_cast<std::size_t>(i * n + i)] = static_cast<double>(i / 2);  // pairs degenerate
    s[static_cast<std::size_t>(i * n + i)] = 1.0;
  }
  const Dense H = tt::dense_of(ctx, h, n), S = tt::dense_of(ctx, s, n);
  solvers::DenseAlgebra alg(ctx);
  solvers::DensityOptions o;
  o.method = DensityMethod::Diag;
  try {  // eigenvalues 0 0 1 1 2 2 ...: 3 occupied states end inside the pair at 1
    solvers::density(alg, H, S, 6, o);
    ADD_FAILURE() << "degenerate HOMO/LUMO accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no gap"), std::string::npos) << e.what();
  }
  o.mu = 0.5;
  try {
    solvers::density(alg, H, S, 4, o);
    ADD_FAILURE() << "mu given to diag accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("takes no mu"), std::string::npos) << e.what();
  }
  o.mu.reset();
  std::vector<double> bad = s;
  bad[static_cast<std::size_t>(3 * n + 3)] = -1.0;
  const Dense B = tt::dense_of(ctx, bad, n);
  try {
    solvers::density(alg, H, B, 4, o);
    ADD_FAILURE() << "indefinite S accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("positive definite"), std::string::npos) << e.what();
  }
}

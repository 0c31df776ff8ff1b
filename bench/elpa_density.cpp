// elpa_density — the eigensolver peers of dense purification (issue 31, part 2): the density
// matrix D = C_occ C_occ^T of the generalized problem F C = S C e by ELPA 2022.11 (1-stage or
// 2-stage, its generalized routine: Cholesky of S, transform, eigenvectors, back-transform) or
// by ScaLAPACK's expert driver pdsygvx (the lowest nocc + 1 states; nocc + 1 for the gap).
//
//   mpirun -np P elpa_density --fock F.npy --overlap S.npy --nocc N --solver elpa1|elpa2|pdsygvx
//          [--nb 64] [--repeat 1] [--warmup 0] [--json FILE] [--out D.npy]
//
// F and S are float64 .npy files (C or Fortran order); every rank maps them (mmap, so the
// page cache holds one copy per machine) and copies its nb x nb block-cyclic part on the most
// square BLACS grid PR <= PC with PR * PC = P (ELPA needs every rank in the grid). The time to D
// is solve + pdgemm (D = C_occ C_occ^T) on fresh copies of F and S, the slowest rank, each
// repetition after a barrier; the timed repetitions are bracketed by MPI_Pcontrol(2)/(0) so a
// preloaded commcount counts them only (divide by --repeat). Afterwards: the band energy
// 2 tr(D F), tr(D S) (= nocc) and ||D S D - D||_F. --out writes D (Fortran order; every rank
// writes its entries through a shared mapping of the file, so the file system must be shared).
// Bad input (file, shape, --nocc, S not positive definite) is reported once; exit status 1.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_blacs.hpp"
#include "bench_mpi.hpp"
#include "bench_util.hpp"
#include "elpa_density_io.hpp"

#include "elpa_api.hpp"  // src/solvers: the library's own ELPA declarations

extern "C" {
void pdsygvx_(const int* ibtype, const char* jobz, const char* range, const char* uplo,
              const int* n, double* a, const int* ia, const int* ja, const int* desca, double* b,
              const int* ib, const int* jb, const int* descb, const double* vl, const double* vu,
              const int* il, const int* iu, const double* abstol, int* m, int* nz, double* w,
              const double* orfac, double* z, const int* iz, const int* jz, const int* descz,
              double* work, const int* lwork, int* iwork, const int* liwork, int* ifail,
              int* iclustr, double* gap, int* info);
double pdlamch_(const int* ictxt, const char* cmach);
void pdpotrf_(const char* uplo, const int* n, double* a, const int* ia, const int* ja,
              const int* desca, int* info);
}

namespace bench = tessel::bench;
namespace ed = tessel::bench::elpa_density;

namespace {

constexpr int kElpaApi = tessel::elpa::kApiVersion;

struct Args {
  std::string fock, overlap, solver = "elpa2", json, out;
  int nocc = 0, nb = 64, repeat = 1, warmup = 0;
};

// The eigenpairs of the lowest `nev` states: ev (n entries, the first nev valid) and the
// eigenvectors in the columns of q (block-cyclic like F). `status`: 0, or the solver's code.
struct Eigen {
  std::vector<double> ev;
  int status = 0;
  std::string message;
};

// Collective over the grid. ELPA's generalized solver on copies a <- F, b <- S (overwritten).
Eigen solve_elpa(const bench::BlacsGrid& g, int n, int nev, int nb, bool two_stage,
                 bench::BlockCyclic& a, bench::BlockCyclic& b, bench::BlockCyclic& q) {
  Eigen e;
  e.ev.assign(static_cast<std::size_t>(n), 0.0);
  int err = 0;
  elpa_t h = elpa_allocate(&err);
  auto set = [&](const char* k, int v) {
    if (err == 0) elpa_set_integer(h, k, v, &err);
  };
  set("na", n);
  set("nev", nev);
  set("local_nrows", a.lr);
  set("local_ncols", a.lc);
  set("nblk", nb);
  set("mpi_comm_parent", static_cast<int>(MPI_Comm_c2f(MPI_COMM_WORLD)));
  set("process_row", g.myrow);
  set("process_col", g.mycol);
  set("blacs_context", g.ctxt);
  if (err == 0) err = elpa_setup(h);
  set("solver", two_stage ? tessel::elpa::kSolver2Stage : tessel::elpa::kSolver1Stage);
  if (err == 0)
    elpa_generalized_eigenvectors_d(h, a.local.data(), b.local.data(), e.ev.data(), q.local.data(),
                                    0, &err);
  int derr = 0;
  elpa_deallocate(h, &derr);
  e.status = err;
  if (err != 0) e.message = std::string("ELPA: ") + elpa_strerr(err);
  return e;
}

// Collective over the grid. pdsygvx (ibtype 1, jobz V, range I, upper) for states 1 .. nev.
Eigen solve_pdsygvx(const bench::BlacsGrid& g, int n, int nev, bench::BlockCyclic& a,
                    bench::BlockCyclic& b, bench::BlockCyclic& q) {
  Eigen e;
  e.ev.assign(static_cast<std::size_t>(n), 0.0);
  const int one = 1, il = 1, iu = nev;
  const double vl = 0, vu = 0, orfac = 1e-3, abstol = 2 * pdlamch_(&g.ctxt, "S");
  int m = 0, nz = 0, info = 0, lwork = -1, liwork = -1, iwq = 0;
  double wq = 0;
  std::vector<int> ifail(static_cast<std::size_t>(n)), iclustr(2 * g.nprow * g.npcol);
  std::vector<double> gap(static_cast<std::size_t>(g.nprow * g.npcol));
  auto call = [&](double* work, int* iwork) {
    pdsygvx_(&one, "V", "I", "U", &n, a.local.data(), &one, &one, a.desc, b.local.data(), &one,
             &one, b.desc, &vl, &vu, &il, &iu, &abstol, &m, &nz, e.ev.data(), &orfac,
             q.local.data(), &one, &one, q.desc, work, &lwork, iwork, &liwork, ifail.data(),
             iclustr.data(), gap.data(), &info);
  };
  call(&wq, &iwq);  // workspace query
  // Slack over the query for eigenvalue clusters (pdsyevx's documentation: (size - 1) * n).
  lwork = static_cast<int>(wq * 1.5) + 64 * n;
  liwork = iwq + 8 * n;
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  call(work.data(), iwork.data());
  e.status = info;
  if (info > n || (info > 0 && info % 2 == 0 && info != 2) || nz < nev || info < 0)
    e.message = "pdsygvx: info " + std::to_string(info) + ", " + std::to_string(nz) + " of " +
                std::to_string(nev) + " eigenvectors";
  else if (info != 0)  // 2: clusters not reorthogonalized (checked by ||DSD - D|| below)
    e.message = "pdsygvx: warning: info " + std::to_string(info);
  return e;
}

// Collective, untimed. 0 when S is positive definite (pdpotrf on a copy), else pdpotrf's info
// (the largest over the ranks). ELPA 2022.11 hangs when its own Cholesky fails on one rank.
int cholesky_info(const bench::BlacsGrid& g, int n, int nb, const bench::BlockCyclic& s) {
  bench::BlockCyclic c(g, n, n, nb, {});
  c.local = s.local;
  const int one = 1;
  int info = 0;
  pdpotrf_("U", &n, c.local.data(), &one, &one, c.desc, &info);
  MPI_Allreduce(MPI_IN_PLACE, &info, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return info;
}

// Collective. D = Q(:, 1:nocc) Q(:, 1:nocc)^T.
void form_density(int n, int nocc, bench::BlockCyclic& q, bench::BlockCyclic& d) {
  const int one = 1;
  const double alpha = 1, beta = 0;
  pdgemm_("N", "T", &n, &n, &nocc, &alpha, q.local.data(), &one, &one, q.desc, q.local.data(), &one,
          &one, q.desc, &beta, d.local.data(), &one, &one, d.desc);
}

struct Quality {
  double band_energy = 0, trace_ds = 0, idempotency = 0;
};

// Collective. The quality of D: 2 tr(D F), tr(D S) and ||D S D - D||_F (t and u: work space).
Quality quality(int n, bench::BlockCyclic& d, const bench::BlockCyclic& f,
                const bench::BlockCyclic& s, bench::BlockCyclic& t, bench::BlockCyclic& u) {
  const int one = 1;
  const double alpha = 1, beta = 0;
  pdgemm_("N", "N", &n, &n, &n, &alpha, d.local.data(), &one, &one, d.desc, s.local.data(), &one,
          &one, s.desc, &beta, t.local.data(), &one, &one, t.desc);
  pdgemm_("N", "N", &n, &n, &n, &alpha, t.local.data(), &one, &one, t.desc, d.local.data(), &one,
          &one, d.desc, &beta, u.local.data(), &one, &one, u.desc);
  double sums[3] = {0, 0, 0};  // tr(DF), tr(DS) (D, F, S symmetric), ||DSD - D||^2
  for (int j = 0; j < d.lc; ++j)
    for (int i = 0; i < d.lr; ++i) {
      const std::size_t k = static_cast<std::size_t>(j) * d.lld + i;
      sums[0] += d.local[k] * f.local[k];
      sums[1] += d.local[k] * s.local[k];
      sums[2] += (u.local[k] - d.local[k]) * (u.local[k] - d.local[k]);
    }
  MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return {2 * sums[0], sums[1], std::sqrt(sums[2])};
}

// Collective. Times --repeat solves + D on fresh copies of F and S; fills d and the eigenpairs.
std::pair<bench::Timing, Eigen> run(const Args& a, const bench::BlacsGrid& g, int n,
                                    const bench::BlockCyclic& f, const bench::BlockCyclic& s,
                                    bench::BlockCyclic& d) {
  bench::BlockCyclic A(g, n, n, a.nb, {}), B(g, n, n, a.nb, {}), Q(g, n, n, a.nb, {});
  const int nev = std::min(n, a.nocc + 1);
  Eigen e;
  auto once = [&] {
    A.local = f.local;
    B.local = s.local;
    e = a.solver == "pdsygvx" ? solve_pdsygvx(g, n, nev, A, B, Q)
                              : solve_elpa(g, n, nev, a.nb, a.solver == "elpa2", A, B, Q);
    if (e.status == 0 || e.message.rfind("pdsygvx: warning", 0) == 0) form_density(n, a.nocc, Q, d);
  };
  auto times = bench::timed_repetitions(a.warmup, a.repeat, once);
  return {bench::Timing::of(times, 0), e};
}

void add_options(CLI::App& app, Args& a) {
  app.add_option("--fock", a.fock, "Fock matrix F (.npy, float64, n x n, symmetric)")->required();
  app.add_option("--overlap", a.overlap, "overlap S (.npy, float64, n x n, positive definite)")
      ->required();
  app.add_option("--nocc", a.nocc, "occupied states, 1 .. n-1")->required();
  app.add_option("--solver", a.solver, "elpa1 | elpa2 | pdsygvx")
      ->capture_default_str()
      ->check(CLI::IsMember({"elpa1", "elpa2", "pdsygvx"}));
  app.add_option("--nb", a.nb, "block size of the block-cyclic layout")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--repeat", a.repeat, "timed solves")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", a.warmup, "untimed solves first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--json", a.json, "write the results as JSON (rank 0)");
  app.add_option("--out", a.out, "write D to this .npy file (Fortran order)");
}

// Collective. Prints the line, writes --json and --out; returns the exit status.
int report(const Args& a, const bench::BlacsGrid& g, int n, const bench::Timing& t, const Eigen& e,
           const Quality& q, bench::BlockCyclic& d) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const double homo = e.ev[static_cast<std::size_t>(a.nocc - 1)];
  const double lumo = a.nocc < n ? e.ev[static_cast<std::size_t>(a.nocc)] : NAN;
  if (rank == 0)
    std::printf(
        "elpa_density %s n=%d nocc=%d ranks=%d grid=%dx%d nb=%d: time to D %s, band energy "
        "%.12f, tr(DS) %.10f, ||DSD-D||_F %.2e, HOMO %.6f LUMO %.6f%s%s\n",
        a.solver.c_str(), n, a.nocc, nranks, g.nprow, g.npcol, a.nb, t.text().c_str(),
        q.band_energy, q.trace_ds, q.idempotency, homo, lumo, e.message.empty() ? "" : "; ",
        e.message.c_str());
  nlohmann::json j = {{"tool", "elpa_density"},
                      {"solver", a.solver},
                      {"n", n},
                      {"nocc", a.nocc},
                      {"ranks", nranks},
                      {"grid", {g.nprow, g.npcol}},
                      {"nb", a.nb},
                      {"repeat", a.repeat},
                      {"warmup", a.warmup},
                      {"times_s", t.times_s},
                      {"median_s", t.median_s},
                      {"band_energy", q.band_energy},
                      {"trace_ds", q.trace_ds},
                      {"idempotency", q.idempotency},
                      {"homo", homo},
                      {"lumo", lumo},
                      {"solver_status", e.status},
                      {"solver_message", e.message},
                      {"fock", a.fock},
                      {"overlap", a.overlap},
                      {"mpi", bench::mpi_library_version()},
                      {"blas", bench::blas_config()}};
  const std::string err = a.out.empty() ? "" : ed::write_npy(a.out, n, a.nb, g, d);
  if (!err.empty() && rank == 0) std::fprintf(stderr, "elpa_density: %s\n", err.c_str());
  if (rank == 0 && !a.json.empty()) bench::write_json_atomically(a.json, j);
  return err.empty() ? 0 : 1;
}

// Collective. The whole run on a grid; returns the exit status.
int density(const Args& a, const bench::BlacsGrid& g) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto fail = [&](const std::string& m) {
    if (rank == 0) std::fprintf(stderr, "elpa_density: %s\n", m.c_str());
    return 1;
  };
  int n = 0;
  std::string err = ed::agree(ed::matrix_size(a.fock, "--fock", &n));
  if (err.empty()) err = ed::agree(ed::expect_size(a.overlap, "--overlap", n, a.fock));
  if (!err.empty()) return fail(err);
  if (a.nocc < 1 || a.nocc >= n)
    return fail("--nocc " + std::to_string(a.nocc) +
                ": expected 1 .. n-1 = " + std::to_string(n - 1) + " (n = " + std::to_string(n) +
                " from --fock " + a.fock + ")");
  bench::BlockCyclic F(g, n, n, a.nb, {}), S(g, n, n, a.nb, {}), D(g, n, n, a.nb, {});
  err = ed::agree(ed::read_block_cyclic(a.fock, "--fock", a.nb, g, F));
  if (err.empty()) err = ed::agree(ed::read_block_cyclic(a.overlap, "--overlap", a.nb, g, S));
  if (!err.empty()) return fail(err);
  if (const int info = cholesky_info(g, n, a.nb, S))
    return fail("--overlap " + a.overlap + ": not positive definite (pdpotrf info " +
                std::to_string(info) + ": the leading minor of that order is not)");
  auto [t, e] = run(a, g, n, F, S, D);
  const int bad = e.status != 0 && e.message.rfind("pdsygvx: warning", 0) != 0;
  if (bad)
    return fail(e.message + " (for a Cholesky failure: --overlap " + a.overlap +
                " is not positive definite)");
  bench::BlockCyclic T(g, n, n, a.nb, {}), U(g, n, n, a.nb, {});
  const auto q = quality(n, D, F, S, T, U);
  return report(a, g, n, t, e, q, D);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int nranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  CLI::App app{"Density matrix of F C = S C e by ELPA (1-/2-stage) or ScaLAPACK pdsygvx"};
  Args a;
  add_options(app, a);
  if (auto rc = bench::parse_or_finalize(app, argc, argv)) return *rc;
  if (a.solver != "pdsygvx" && elpa_init(kElpaApi) != 0) {
    std::fprintf(stderr, "elpa_density: elpa_init(%d) failed: API version not supported\n",
                 kElpaApi);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const auto [pr, pc] = *bench::parse_grid("", nranks);
  int status = 0;
  {
    bench::BlacsGrid g(pr, pc);
    status = density(a, g);
  }
  if (a.solver != "pdsygvx") {
    int err = 0;
    elpa_uninit(&err);
  }
  MPI_Finalize();
  return status;
}

// scalapack_gemm — the ScaLAPACK baseline: times Debian ScaLAPACK pdgemm_ on random matrices.
//
//   mpirun -np P scalapack_gemm --m M --n N --k K [--nb 128] [--grid PRxPC] [--transa N|T]
//          [--transb N|T] [--repeat 3] [--warmup 1] [--seed 42] [--json FILE] [--no-check]
//
// C (m x n) = op(A) op(B), op(A) m x k, op(B) k x n, all block-cyclic nb x nb on a PR x PC
// BLACS grid (default: the most square PR <= PC with PR*PC = P; a smaller grid leaves ranks
// idle). Entries are a hash of (seed, matrix, global row, global column), so the data do not
// depend on the grid and a few entries of C can be checked exactly on every rank.
//
// Each timed repetition starts after an MPI_Barrier; its time is the slowest rank's. The timed
// repetitions are bracketed by MPI_Pcontrol(2) (reset) and MPI_Pcontrol(0) (pause), so a
// preloaded ../shared/tools/commcount counts exactly `repeat` multiplies (plus `repeat`
// zero-byte barriers): divide its counts by `repeat`.
//
// Prints one line; with --json rank 0 writes {"tool":"scalapack","m","n","k","ranks","grid",
// "nb","times_s","median_s","gflops",...} (written to a temporary file, then renamed).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
void Cblacs_pinfo(int* mypnum, int* nprocs);
void Cblacs_get(int icontxt, int what, int* val);
void Cblacs_gridinit(int* icontxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int icontxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int icontxt);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* irsrc, const int* icsrc, const int* ictxt, const int* lld, int* info);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
             const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
             double* c, const int* ic, const int* jc, const int* descc);
}

namespace {

// Entry (i, j) of stored matrix `id` (1 = A, 2 = B): uniform in [-1, 1), grid-independent.
double entry(std::uint64_t seed, std::uint64_t id, std::uint64_t i, std::uint64_t j) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (id << 56) ^ (i * 0xD1B54A32D192ED03ull) ^
                    (j * 0x94D049BB133111EBull + 0x2545F4914F6CDD1Dull);
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-52 - 1.0;
}

// Global index of local index l in a block-cyclic dimension (source process 0).
long global_index(long l, int nb, int me, int np) {
  return ((l / nb) * np + me) * static_cast<long>(nb) + l % nb;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

std::string blas_config() {
  using cfg_fn = char* (*)();
  if (auto f = reinterpret_cast<cfg_fn>(dlsym(RTLD_DEFAULT, "openblas_get_config"))) return f();
  return "unknown (not OpenBLAS)";
}

void write_json_atomically(const std::string& path, const nlohmann::json& j) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp);
    if (!f) throw std::runtime_error("cannot write --json file '" + path + "'");
    f << j.dump(1) << "\n";
    if (!f.flush()) throw std::runtime_error("cannot write --json file '" + path + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename to --json file '" + path + "'");
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  CLI::App app{"ScaLAPACK pdgemm baseline: C = op(A) op(B), op(A) m x k, op(B) k x n"};
  int m = 0, n = 0, k = 0, nb = 128, repeat = 3, warmup = 1;
  std::uint64_t seed = 42;
  std::string grid_s, transa = "N", transb = "N", json_path;
  bool no_check = false;
  app.add_option("--m", m, "rows of C and op(A)")->required()->check(CLI::PositiveNumber);
  app.add_option("--n", n, "columns of C and op(B)")->required()->check(CLI::PositiveNumber);
  app.add_option("--k", k, "inner dimension")->required()->check(CLI::PositiveNumber);
  app.add_option("--nb", nb, "block size of the block-cyclic layout")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--grid", grid_s, "process grid PRxPC (default: most square PR<=PC, PR*PC=ranks)");
  app.add_option("--transa", transa, "op(A): N or T")
      ->capture_default_str()
      ->check(CLI::IsMember({"N", "T"}, CLI::ignore_case));
  app.add_option("--transb", transb, "op(B): N or T")
      ->capture_default_str()
      ->check(CLI::IsMember({"N", "T"}, CLI::ignore_case));
  app.add_option("--repeat", repeat, "timed repetitions")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed repetitions first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "seed of the random matrices")->capture_default_str();
  app.add_option("--json", json_path, "write the result as JSON (rank 0)");
  app.add_flag("--no-check", no_check, "skip the check of sampled entries of C");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = 0;
    if (rank == 0)
      code = app.exit(e);
    else
      code = e.get_exit_code();
    MPI_Finalize();
    return code;
  }
  transa = static_cast<char>(std::toupper(transa[0]));
  transb = static_cast<char>(std::toupper(transb[0]));

  // Process grid.
  int pr = 0, pc = 0;
  if (grid_s.empty()) {
    for (int d = 1; static_cast<long>(d) * d <= nranks; ++d)
      if (nranks % d == 0) pr = d;
    pc = nranks / pr;
  } else {
    char x = 0, extra = 0;
    if (std::sscanf(grid_s.c_str(), "%d%c%d%c", &pr, &x, &pc, &extra) != 3 ||
        (x != 'x' && x != 'X') || pr < 1 || pc < 1 || static_cast<long>(pr) * pc > nranks) {
      if (rank == 0)
        std::fprintf(stderr, "scalapack_gemm: --grid '%s': expected PRxPC with PR*PC <= %d ranks\n",
                     grid_s.c_str(), nranks);
      MPI_Finalize();
      return 2;
    }
  }

  int me = 0, np = 0, ctxt = 0;
  Cblacs_pinfo(&me, &np);
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", pr, pc);
  int nprow = 0, npcol = 0, myrow = -1, mycol = -1;
  const bool in_grid = ctxt >= 0;
  if (in_grid) Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);

  // Stored shapes: A is m x k (N) or k x m (T); B is k x n (N) or n x k (T).
  const int ar = transa == "N" ? m : k, ac = transa == "N" ? k : m;
  const int br = transb == "N" ? k : n, bc = transb == "N" ? n : k;
  const int izero = 0, ione = 1;
  int desca[9] = {0}, descb[9] = {0}, descc[9] = {0};
  std::vector<double> A, B, C;
  int cr_loc = 0, cc_loc = 0;
  int info_bad = 0;
  if (in_grid) {
    auto setup = [&](int id, int rows, int cols, int* desc, std::vector<double>& X, int& lr,
                     int& lc) {
      lr = numroc_(&rows, &nb, &myrow, &izero, &nprow);
      lc = numroc_(&cols, &nb, &mycol, &izero, &npcol);
      int lld = std::max(1, lr), info = 0;
      descinit_(desc, &rows, &cols, &nb, &nb, &izero, &izero, &ctxt, &lld, &info);
      if (info != 0) info_bad = 1;
      X.assign(std::max<size_t>(1, static_cast<size_t>(lld) * lc), 0.0);
      if (id == 0) return;
      for (int lj = 0; lj < lc; ++lj) {
        const long gj = global_index(lj, nb, mycol, npcol);
        for (int li = 0; li < lr; ++li)
          X[static_cast<size_t>(lj) * lld + li] =
              entry(seed, id, global_index(li, nb, myrow, nprow), gj);
      }
    };
    int lr = 0, lc = 0;
    setup(1, ar, ac, desca, A, lr, lc);
    setup(2, br, bc, descb, B, lr, lc);
    setup(0, m, n, descc, C, cr_loc, cc_loc);
  }
  MPI_Allreduce(MPI_IN_PLACE, &info_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (info_bad) {
    if (rank == 0) std::fprintf(stderr, "scalapack_gemm: descinit_ failed\n");
    MPI_Finalize();
    return 1;
  }

  const double alpha = 1.0, beta = 0.0;
  auto multiply = [&] {
    if (in_grid)
      pdgemm_(transa.c_str(), transb.c_str(), &m, &n, &k, &alpha, A.data(), &ione, &ione, desca,
              B.data(), &ione, &ione, descb, &beta, C.data(), &ione, &ione, descc);
  };
  for (int w = 0; w < warmup; ++w) {
    MPI_Barrier(MPI_COMM_WORLD);
    multiply();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<double> times(repeat, 0.0);
  MPI_Pcontrol(2);  // commcount: reset, count only the timed multiplies
  for (int r = 0; r < repeat; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    multiply();
    times[r] = MPI_Wtime() - t0;
  }
  MPI_Pcontrol(0);  // commcount: pause
  MPI_Allreduce(MPI_IN_PLACE, times.data(), repeat, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

  // Check sampled entries of C against the generator: |c - ref| / sum_l |a_il b_lj|.
  double max_err = 0.0;
  int samples = 0;
  if (!no_check && in_grid && cr_loc > 0 && cc_loc > 0) {
    const int lld = std::max(1, cr_loc);
    std::uint64_t s = seed * 31 + static_cast<std::uint64_t>(rank) + 1;
    for (int t = 0; t < 8; ++t) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const int li = static_cast<int>((s >> 33) % static_cast<std::uint64_t>(cr_loc));
      const int lj = static_cast<int>((s >> 13) % static_cast<std::uint64_t>(cc_loc));
      const long gi = global_index(li, nb, myrow, nprow), gj = global_index(lj, nb, mycol, npcol);
      double ref = 0.0, mag = 0.0;
      for (long l = 0; l < k; ++l) {
        const double a = transa == "N" ? entry(seed, 1, gi, l) : entry(seed, 1, l, gi);
        const double b = transb == "N" ? entry(seed, 2, l, gj) : entry(seed, 2, gj, l);
        ref += a * b;
        mag += std::fabs(a * b);
      }
      const double c = C[static_cast<size_t>(lj) * lld + li];
      max_err = std::max(max_err, std::fabs(c - ref) / std::max(mag, 1e-300));
      ++samples;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &max_err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &samples, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const double tol = 64.0 * 1.1e-16 * std::sqrt(static_cast<double>(k)) + 1e-14;
  const bool check_ok = no_check || max_err <= tol;

  int status = check_ok ? 0 : 1;
  if (rank == 0) {
    const double med = median(times);
    const double flops = 2.0 * m * static_cast<double>(n) * k;
    const double gflops = flops / med * 1e-9;
    std::printf(
        "scalapack pdgemm %c%c m=%d n=%d k=%d ranks=%d grid=%dx%d nb=%d: median %.4f s "
        "(min %.4f, %d reps), %.2f GFLOP/s, check %s (max rel err %.1e, %d samples)\n",
        transa[0], transb[0], m, n, k, nranks, pr, pc, nb, med,
        *std::min_element(times.begin(), times.end()), repeat, gflops,
        no_check ? "skipped" : (check_ok ? "ok" : "FAILED"), max_err, samples);
    std::fflush(stdout);
    if (!json_path.empty()) {
      char ver[MPI_MAX_LIBRARY_VERSION_STRING];
      int vl = 0;
      MPI_Get_library_version(ver, &vl);
      std::string mpi_ver(ver, static_cast<size_t>(vl));
      mpi_ver = mpi_ver.substr(0, mpi_ver.find_first_of(",\n"));
      nlohmann::json j = {
          {"tool", "scalapack"},
          {"routine", "pdgemm_"},
          {"m", m},
          {"n", n},
          {"k", k},
          {"ranks", nranks},
          {"grid", {pr, pc}},
          {"idle_ranks", nranks - pr * pc},
          {"nb", nb},
          {"transa", transa},
          {"transb", transb},
          {"repeat", repeat},
          {"warmup", warmup},
          {"seed", seed},
          {"times_s", times},
          {"median_s", med},
          {"min_s", *std::min_element(times.begin(), times.end())},
          {"gflops", gflops},
          {"check",
           {{"ok", check_ok},
            {"samples", samples},
            {"max_rel_err", max_err},
            {"tol", tol},
            {"skipped", no_check}}},
          {"commcount_region", "timed repetitions only (MPI_Pcontrol 2 .. 0): divide by repeat"},
          {"mpi", mpi_ver},
          {"blas", blas_config()}};
      try {
        write_json_atomically(json_path, j);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "scalapack_gemm: %s\n", e.what());
        status = 1;
      }
    }
    if (!check_ok)
      std::fprintf(stderr, "scalapack_gemm: check FAILED: max relative error %.3e > %.3e\n",
                   max_err, tol);
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (in_grid) Cblacs_gridexit(ctxt);
  MPI_Finalize();
  return status;
}

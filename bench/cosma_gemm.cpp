// cosma_gemm — the COSMA peer of issue 13: times COSMA 2.8.4 (with COSTA 2.3.2, built by
// bench/peers/build_cosma.sh) on the matrices `tessel gemm` generates, in two ways:
//
//   mpirun -np P cosma_gemm --mode native --m M --n N --k K [--repeat 3] [--warmup 1] ...
//   mpirun -np P cosma_gemm --mode pdgemm --m M --n N --k K [--nb 128] [--grid PRxPC] ...
//          [--seed 42] [--json FILE] [--out C.npy] [--no-check]
//
// native: cosma::multiply on CosmaMatrix objects in COSMA's own layout for the strategy COSMA
//   picks itself (cosma::Strategy(m, n, k, P), the memory limit from COSMA_CPU_MAX_MEMORY as in
//   its miniapp), i.e. the inputs already where COSMA wants them (like `tessel gemm --layout plan`).
// pdgemm: the ScaLAPACK entry point exactly as a user gets it: this binary links
//   libcosma_pxgemm.so before Debian's libscalapack-openmpi, so `pdgemm_` is COSMA's wrapper
//   (COSTA converts the block-cyclic nb x nb layout on the PR x PC BLACS grid to COSMA's layout
//   and back; below COSMA_DIM_THRESHOLD it forwards to ScaLAPACK's pdgemm_). Like
//   `tessel gemm --entry pdgemm` and bench/scalapack_gemm.
//
// C = A B with A m x k, B k x n (no transposes), alpha 1, beta 0. Entries are tessel's
// generator (apps/tessel/cli_util.cpp `hashed(seed, which, i, j)`, which 1 = A, 2 = B; the copy
// below must stay equal to it), so C is the C of `tessel gemm --seed S`: `--out C.npy` (rank 0
// gathers C, float64, Fortran order) lets bench/cosma_bench.py --check compare the two.
// Each rank checks 8 sampled entries of C against a direct dot product (exit 1 if wrong).
//
// Timing and counting as bench/scalapack_gemm: a barrier before each timed repetition, the
// slowest rank's MPI_Wtime; MPI_Pcontrol(2) / MPI_Pcontrol(0) around the timed repetitions so a
// preloaded ../shared/tools/commcount counts `repeat` multiplies. Prints one line; --json
// (rank 0) writes {"tool":"cosma"|"cosma-pdgemm","m","n","k","ranks","times_s","median_s",
// "gflops","min_s","repeat","warmup","check","strategy",...}.
#include <mpi.h>

#include <cosma/multiply.hpp>
#include <cosma/strategy.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
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

// Equal to tessel's apps/tessel/cli_util.cpp hashed(): the inputs of `tessel gemm --seed`.
double hashed(std::uint64_t seed, int which, std::int64_t i, std::int64_t j) {
  std::uint64_t x =
      seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(which) * 0xBF58476D1CE4E5B9ull +
      static_cast<std::uint64_t>(i) * 0x94D049BB133111EBull + static_cast<std::uint64_t>(j);
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

long global_index(long l, int nb, int me, int np) {
  return ((l / nb) * np + me) * static_cast<long>(nb) + l % nb;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f.flush()) throw std::runtime_error("cannot write '" + path + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename to '" + path + "'");
}

// float64 Fortran-order .npy of an m x n column-major array.
std::string npy_bytes(const std::vector<double>& c, int m, int n) {
  std::string h = "{'descr': '<f8', 'fortran_order': True, 'shape': (" + std::to_string(m) + ", " +
                  std::to_string(n) + "), }";
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  out += h;
  out.append(reinterpret_cast<const char*>(c.data()), c.size() * sizeof(double));
  return out;
}

// The local entries of C as (global column-major index, value); rank 0 assembles C.
std::vector<double> gather_c(const std::vector<long>& idx, const std::vector<double>& val, int m,
                             int n) {
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  int cnt = static_cast<int>(idx.size());
  std::vector<int> counts(p), displs(p, 0);
  MPI_Gather(&cnt, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (int r = 1; r < p; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  const long total = rank == 0 ? displs[p - 1] + counts[p - 1] : 0;
  std::vector<long> all_idx(std::max(1L, total));
  std::vector<double> all_val(std::max(1L, total));
  MPI_Gatherv(idx.data(), cnt, MPI_LONG, all_idx.data(), counts.data(), displs.data(), MPI_LONG, 0,
              MPI_COMM_WORLD);
  MPI_Gatherv(val.data(), cnt, MPI_DOUBLE, all_val.data(), counts.data(), displs.data(), MPI_DOUBLE,
              0, MPI_COMM_WORLD);
  std::vector<double> c;
  if (rank == 0) {
    c.assign(static_cast<size_t>(m) * n, std::numeric_limits<double>::quiet_NaN());
    for (long t = 0; t < total; ++t) c[static_cast<size_t>(all_idx[t])] = all_val[t];
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  CLI::App app{"COSMA peer: C = A B in COSMA's layout (native) or through its pdgemm_ wrapper"};
  int m = 0, n = 0, k = 0, nb = 128, repeat = 3, warmup = 1;
  std::uint64_t seed = 42;
  std::string mode = "native", grid_s, json_path, out_path;
  bool no_check = false;
  app.add_option("--mode", mode, "native (COSMA's layout) or pdgemm (COSMA's pdgemm_ wrapper)")
      ->capture_default_str()
      ->check(CLI::IsMember({"native", "pdgemm"}));
  app.add_option("--m", m, "rows of C and A")->required()->check(CLI::PositiveNumber);
  app.add_option("--n", n, "columns of C and B")->required()->check(CLI::PositiveNumber);
  app.add_option("--k", k, "inner dimension")->required()->check(CLI::PositiveNumber);
  app.add_option("--nb", nb, "pdgemm: block size of the block-cyclic layout")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--grid", grid_s,
                 "pdgemm: BLACS grid PRxPC (default: most square PR<=PC, PR*PC=ranks)");
  app.add_option("--repeat", repeat, "timed repetitions")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed repetitions first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "seed of tessel's generator")->capture_default_str();
  app.add_option("--json", json_path, "write the result as JSON (rank 0)");
  app.add_option("--out", out_path, "write C as a float64 .npy (rank 0 gathers it; small sizes)");
  app.add_flag("--no-check", no_check, "skip the check of sampled entries of C");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = rank == 0 ? app.exit(e) : e.get_exit_code();
    MPI_Finalize();
    return code;
  }
  const bool native = mode == "native";
  const double alpha = 1.0, beta = 0.0;

  // The local part of C as (global row, column) -> value, for the check and --out.
  std::vector<long> c_idx;
  std::vector<double> c_val;
  std::vector<double> times(repeat, 0.0);
  std::string strategy_text, grid_text;
  auto timed = [&](auto&& multiply) {
    for (int w = 0; w < warmup; ++w) {
      MPI_Barrier(MPI_COMM_WORLD);
      multiply();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(2);  // commcount: reset, count only the timed multiplies
    for (int r = 0; r < repeat; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      multiply();
      times[r] = MPI_Wtime() - t0;
    }
    MPI_Pcontrol(0);  // commcount: pause
  };

  if (native) {
    const long long mem = cosma::get_cpu_max_memory<double>();
    cosma::Strategy strategy(m, n, k, static_cast<size_t>(nranks), mem);
    std::ostringstream os;
    os << strategy;
    strategy_text = os.str();
    cosma::CosmaMatrix<double> A('A', strategy, rank), B('B', strategy, rank),
        C('C', strategy, rank);
    for (auto [X, id] : {std::pair{&A, 1}, std::pair{&B, 2}}) {
      double* x = X->matrix_pointer();
      for (size_t l = 0; l < X->matrix_size(); ++l) {
        auto [gi, gj] = X->global_coordinates(static_cast<int>(l));
        x[l] = hashed(seed, id, gi, gj);
      }
    }
    timed([&] { cosma::multiply(A, B, C, strategy, MPI_COMM_WORLD, alpha, beta); });
    const double* c = C.matrix_pointer();
    for (size_t l = 0; l < C.matrix_size(); ++l) {
      auto [gi, gj] = C.global_coordinates(static_cast<int>(l));
      if (gi < 0 || gj < 0) continue;
      c_idx.push_back(static_cast<long>(gj) * m + gi);
      c_val.push_back(c[l]);
    }
  } else {
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
          std::fprintf(stderr, "cosma_gemm: --grid '%s': expected PRxPC with PR*PC <= %d ranks\n",
                       grid_s.c_str(), nranks);
        MPI_Finalize();
        return 2;
      }
    }
    grid_text = std::to_string(pr) + "x" + std::to_string(pc);
    int me = 0, np = 0, ctxt = 0;
    Cblacs_pinfo(&me, &np);
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", pr, pc);
    int nprow = 0, npcol = 0, myrow = -1, mycol = -1;
    const bool in_grid = ctxt >= 0;
    if (in_grid) Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
    const int izero = 0, ione = 1;
    int desca[9] = {0}, descb[9] = {0}, descc[9] = {0}, info_bad = 0, cr = 0, cc = 0;
    std::vector<double> A, B, C;
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
        for (int lj = 0; lj < lc; ++lj)
          for (int li = 0; li < lr; ++li)
            X[static_cast<size_t>(lj) * lld + li] = hashed(
                seed, id, global_index(li, nb, myrow, nprow), global_index(lj, nb, mycol, npcol));
      };
      int lr = 0, lc = 0;
      setup(1, m, k, desca, A, lr, lc);
      setup(2, k, n, descb, B, lr, lc);
      setup(0, m, n, descc, C, cr, cc);
    }
    MPI_Allreduce(MPI_IN_PLACE, &info_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (info_bad) {
      if (rank == 0) std::fprintf(stderr, "cosma_gemm: descinit_ failed\n");
      MPI_Finalize();
      return 1;
    }
    timed([&] {
      if (in_grid)
        pdgemm_("N", "N", &m, &n, &k, &alpha, A.data(), &ione, &ione, desca, B.data(), &ione, &ione,
                descb, &beta, C.data(), &ione, &ione, descc);
    });
    const int lld = std::max(1, cr);
    for (int lj = 0; lj < cc; ++lj)
      for (int li = 0; li < cr; ++li) {
        c_idx.push_back(global_index(lj, nb, mycol, npcol) * m +
                        global_index(li, nb, myrow, nprow));
        c_val.push_back(C[static_cast<size_t>(lj) * lld + li]);
      }
    if (in_grid) Cblacs_gridexit(ctxt);
  }
  MPI_Allreduce(MPI_IN_PLACE, times.data(), repeat, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

  // Check 8 sampled local entries of C per rank: |c - ref| / sum_l |a_il b_lj|.
  double max_err = 0.0;
  int samples = 0;
  if (!no_check && !c_idx.empty()) {
    std::uint64_t s = seed * 31 + static_cast<std::uint64_t>(rank) + 1;
    for (int t = 0; t < 8; ++t) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const size_t e = static_cast<size_t>((s >> 33) % c_idx.size());
      const long gi = c_idx[e] % m, gj = c_idx[e] / m;
      double ref = 0.0, mag = 0.0;
      for (long l = 0; l < k; ++l) {
        const double p = hashed(seed, 1, gi, l) * hashed(seed, 2, l, gj);
        ref += p;
        mag += std::fabs(p);
      }
      max_err = std::max(max_err, std::fabs(c_val[e] - ref) / std::max(mag, 1e-300));
      ++samples;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &max_err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &samples, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const double tol = 64.0 * 1.1e-16 * std::sqrt(static_cast<double>(k)) + 1e-14;
  const bool check_ok = no_check || (max_err <= tol && std::isfinite(max_err));

  // Frobenius norm of C (every local entry once) and the optional gathered copy.
  double fro2 = 0.0;
  for (double v : c_val) fro2 += v * v;
  MPI_Allreduce(MPI_IN_PLACE, &fro2, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int status = check_ok ? 0 : 1;
  if (!out_path.empty()) {
    auto c = gather_c(c_idx, c_val, m, n);
    if (rank == 0) {
      try {
        write_text_atomically(out_path, npy_bytes(c, m, n));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cosma_gemm: --out: %s\n", e.what());
        status = 1;
      }
    }
  }

  if (rank == 0) {
    const double med = median(times);
    const double gflops = 2.0 * m * static_cast<double>(n) * k / med * 1e-9;
    const std::string tool = native ? "cosma" : "cosma-pdgemm";
    std::printf(
        "%s m=%d n=%d k=%d ranks=%d%s: median %.4f s (min %.4f, %d reps), %.2f GFLOP/s, "
        "||C||_F %.12e, check %s (max rel err %.1e, %d samples)\n",
        tool.c_str(), m, n, k, nranks,
        native ? "" : (" grid=" + grid_text + " nb=" + std::to_string(nb)).c_str(), med,
        *std::min_element(times.begin(), times.end()), repeat, gflops, std::sqrt(fro2),
        no_check ? "skipped" : (check_ok ? "ok" : "FAILED"), max_err, samples);
    if (native) std::printf("strategy: %s\n", strategy_text.c_str());
    std::fflush(stdout);
    if (!json_path.empty()) {
      char ver[MPI_MAX_LIBRARY_VERSION_STRING];
      int vl = 0;
      MPI_Get_library_version(ver, &vl);
      std::string mpi_ver(ver, static_cast<size_t>(vl));
      mpi_ver = mpi_ver.substr(0, mpi_ver.find_first_of(",\n"));
      nlohmann::json j = {
          {"tool", tool},
          {"library", "COSMA 2.8.4 + COSTA 2.3.2"},
          {"m", m},
          {"n", n},
          {"k", k},
          {"ranks", nranks},
          {"repeat", repeat},
          {"warmup", warmup},
          {"seed", seed},
          {"times_s", times},
          {"median_s", med},
          {"min_s", *std::min_element(times.begin(), times.end())},
          {"gflops", gflops},
          {"c_frobenius", std::sqrt(fro2)},
          {"check",
           {{"ok", check_ok},
            {"samples", samples},
            {"max_rel_err", max_err},
            {"tol", tol},
            {"skipped", no_check}}},
          {"commcount_region", "timed repetitions only (MPI_Pcontrol 2 .. 0): divide by repeat"},
          {"mpi", mpi_ver}};
      if (native)
        j["strategy"] = strategy_text;
      else {
        j["grid"] = grid_text;
        j["nb"] = nb;
      }
      try {
        write_text_atomically(json_path, j.dump(1) + "\n");
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cosma_gemm: %s\n", e.what());
        status = 1;
      }
    }
    if (!check_ok)
      std::fprintf(stderr, "cosma_gemm: check FAILED: max relative error %.3e > %.3e\n", max_err,
                   tol);
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}

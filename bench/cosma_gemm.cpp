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
// generator (apps/tessel/hashed.hpp `hashed(seed, which, i, j)`, which 1 = A, 2 = B, included
// from there), so C is the C of `tessel gemm --seed S`: `--out C.npy` (rank 0
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

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "bench_blacs.hpp"
#include "bench_mpi.hpp"
#include "bench_util.hpp"
#include "hashed.hpp"  // apps/tessel: the generator of `tessel gemm`

namespace bench = tessel::bench;
using tessel::app::hashed;

namespace {

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
  bench::GemmArgs a;
  int nb = 128;
  std::string mode = "native", grid_s, out_path;
  bool no_check = false;
  app.add_option("--mode", mode, "native (COSMA's layout) or pdgemm (COSMA's pdgemm_ wrapper)")
      ->capture_default_str()
      ->check(CLI::IsMember({"native", "pdgemm"}));
  a.add_to(app, "A", "B", "seed of tessel's generator");
  app.add_option("--nb", nb, "pdgemm: block size of the block-cyclic layout")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--grid", grid_s,
                 "pdgemm: BLACS grid PRxPC (default: most square PR<=PC, PR*PC=ranks)");
  app.add_option("--out", out_path, "write C as a float64 .npy (rank 0 gathers it; small sizes)");
  app.add_flag("--no-check", no_check, "skip the check of sampled entries of C");
  if (auto rc = bench::parse_or_finalize(app, argc, argv)) return *rc;
  const int m = a.m, n = a.n, k = a.k;
  const std::uint64_t seed = a.seed;
  const bool native = mode == "native";
  const double alpha = 1.0, beta = 0.0;

  // The local part of C as (global column-major index, value), for the check and --out.
  std::vector<long> c_idx;
  std::vector<double> c_val;
  std::vector<double> times;
  std::string strategy_text, grid_text;

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
    times = bench::timed_repetitions(a.warmup, a.repeat, [&] {
      cosma::multiply(A, B, C, strategy, MPI_COMM_WORLD, alpha, beta);
    });
    const double* c = C.matrix_pointer();
    for (size_t l = 0; l < C.matrix_size(); ++l) {
      auto [gi, gj] = C.global_coordinates(static_cast<int>(l));
      if (gi < 0 || gj < 0) continue;
      c_idx.push_back(static_cast<long>(gj) * m + gi);
      c_val.push_back(c[l]);
    }
  } else {
    const auto grid = bench::parse_grid(grid_s, nranks);
    if (!grid) {
      if (rank == 0)
        std::fprintf(stderr, "cosma_gemm: --grid '%s': expected PRxPC with PR*PC <= %d ranks\n",
                     grid_s.c_str(), nranks);
      MPI_Finalize();
      return 2;
    }
    grid_text = std::to_string(grid->first) + "x" + std::to_string(grid->second);
    bench::BlacsGrid g(grid->first, grid->second);
    bench::BlockCyclic A(g, m, k, nb, [&](long i, long j) { return hashed(seed, 1, i, j); });
    bench::BlockCyclic B(g, k, n, nb, [&](long i, long j) { return hashed(seed, 2, i, j); });
    bench::BlockCyclic C(g, m, n, nb, {});
    int info_bad = A.desc_ok && B.desc_ok && C.desc_ok ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &info_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (info_bad) {
      if (rank == 0) std::fprintf(stderr, "cosma_gemm: descinit_ failed\n");
      g.exit();
      MPI_Finalize();
      return 1;
    }
    const int ione = 1;
    times = bench::timed_repetitions(a.warmup, a.repeat, [&] {
      if (g.in_grid())
        pdgemm_("N", "N", &m, &n, &k, &alpha, A.local.data(), &ione, &ione, A.desc, B.local.data(),
                &ione, &ione, B.desc, &beta, C.local.data(), &ione, &ione, C.desc);
    });
    for (int lj = 0; lj < C.lc; ++lj)
      for (int li = 0; li < C.lr; ++li) {
        c_idx.push_back(bench::global_index(lj, nb, g.mycol, g.npcol) * m +
                        bench::global_index(li, nb, g.myrow, g.nprow));
        c_val.push_back(C.at(li, lj));
      }
  }  // the BLACS grid exits here
  const auto t = bench::Timing::of(times, a.flops());

  // Check 8 sampled local entries of C per rank against a direct dot product.
  const auto check = bench::check_sampled_entries(
      no_check, !c_idx.empty(), seed, k,
      [&](std::uint64_t s) {
        const size_t e = static_cast<size_t>((s >> 33) % c_idx.size());
        return std::tuple{c_idx[e] % m, c_idx[e] / m, c_val[e]};
      },
      [&](long gi, long gj, long l) { return hashed(seed, 1, gi, l) * hashed(seed, 2, l, gj); });

  // Frobenius norm of C (every local entry once) and the optional gathered copy.
  double fro2 = 0.0;
  for (double v : c_val) fro2 += v * v;
  MPI_Allreduce(MPI_IN_PLACE, &fro2, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int status = 0;
  if (!out_path.empty()) {
    auto c = gather_c(c_idx, c_val, m, n);
    if (rank == 0) {
      try {
        bench::write_text_atomically(out_path, npy_bytes(c, m, n));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cosma_gemm: --out: %s\n", e.what());
        status = 1;
      }
    }
  }

  const std::string tool = native ? "cosma" : "cosma-pdgemm";
  if (rank == 0) {
    std::printf(
        "%s m=%d n=%d k=%d ranks=%d%s: %s, ||C||_F %.12e, check %s (max rel err %.1e, %d "
        "samples)\n",
        tool.c_str(), m, n, k, nranks,
        native ? "" : (" grid=" + grid_text + " nb=" + std::to_string(nb)).c_str(),
        t.text().c_str(), std::sqrt(fro2), check.status(), check.max_rel_err, check.samples);
    if (native) std::printf("strategy: %s\n", strategy_text.c_str());
    std::fflush(stdout);
  }
  nlohmann::json j = t.to_json(a);
  j.update({{"tool", tool},
            {"library", "COSMA 2.8.4 + COSTA 2.3.2"},
            {"ranks", nranks},
            {"c_frobenius", std::sqrt(fro2)}});
  if (native)
    j["strategy"] = strategy_text;
  else {
    j["grid"] = grid_text;
    j["nb"] = nb;
  }
  status = bench::finish_run("cosma_gemm", a.json_path, j, check, status);
  MPI_Finalize();
  return status;
}

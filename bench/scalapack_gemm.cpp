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

#include <cctype>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "bench_blacs.hpp"
#include "bench_mpi.hpp"
#include "bench_util.hpp"

namespace bench = tessel::bench;

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

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  CLI::App app{"ScaLAPACK pdgemm baseline: C = op(A) op(B), op(A) m x k, op(B) k x n"};
  bench::GemmArgs a;
  int nb = 128;
  std::string grid_s, transa = "N", transb = "N";
  bool no_check = false;
  a.add_to(app, "op(A)", "op(B)");
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
  app.add_flag("--no-check", no_check, "skip the check of sampled entries of C");
  if (auto rc = bench::parse_or_finalize(app, argc, argv)) return *rc;
  transa = static_cast<char>(std::toupper(transa[0]));
  transb = static_cast<char>(std::toupper(transb[0]));
  const int m = a.m, n = a.n, k = a.k;
  const std::uint64_t seed = a.seed;

  const auto grid = bench::parse_grid(grid_s, nranks);
  if (!grid) {
    if (rank == 0)
      std::fprintf(stderr, "scalapack_gemm: --grid '%s': expected PRxPC with PR*PC <= %d ranks\n",
                   grid_s.c_str(), nranks);
    MPI_Finalize();
    return 2;
  }
  const auto [pr, pc] = *grid;
  int status = 0;
  {
    bench::BlacsGrid g(pr, pc);
    // Stored shapes: A is m x k (N) or k x m (T); B is k x n (N) or n x k (T).
    const bool ta = transa == "T", tb = transb == "T";
    bench::BlockCyclic A(g, ta ? k : m, ta ? m : k, nb,
                         [&](long i, long j) { return entry(seed, 1, i, j); });
    bench::BlockCyclic B(g, tb ? n : k, tb ? k : n, nb,
                         [&](long i, long j) { return entry(seed, 2, i, j); });
    bench::BlockCyclic C(g, m, n, nb, {});
    int info_bad = A.desc_ok && B.desc_ok && C.desc_ok ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &info_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (info_bad) {
      if (rank == 0) std::fprintf(stderr, "scalapack_gemm: descinit_ failed\n");
      g.exit();
      MPI_Finalize();
      return 1;
    }

    const double alpha = 1.0, beta = 0.0;
    const int ione = 1;
    auto multiply = [&] {
      if (g.in_grid())
        pdgemm_(transa.c_str(), transb.c_str(), &m, &n, &k, &alpha, A.local.data(), &ione, &ione,
                A.desc, B.local.data(), &ione, &ione, B.desc, &beta, C.local.data(), &ione, &ione,
                C.desc);
    };
    const auto t =
        bench::Timing::of(bench::timed_repetitions(a.warmup, a.repeat, multiply), a.flops());

    // Check sampled entries of C against the generator.
    const auto check = bench::check_sampled_entries(
        no_check, g.in_grid() && C.lr > 0 && C.lc > 0, seed, k,
        [&](std::uint64_t s) {
          const int li = static_cast<int>((s >> 33) % static_cast<std::uint64_t>(C.lr));
          const int lj = static_cast<int>((s >> 13) % static_cast<std::uint64_t>(C.lc));
          return std::tuple{bench::global_index(li, nb, g.myrow, g.nprow),
                            bench::global_index(lj, nb, g.mycol, g.npcol), C.at(li, lj)};
        },
        [&](long gi, long gj, long l) {
          return (ta ? entry(seed, 1, l, gi) : entry(seed, 1, gi, l)) *
                 (tb ? entry(seed, 2, gj, l) : entry(seed, 2, l, gj));
        });

    if (rank == 0) {
      std::printf(
          "scalapack pdgemm %c%c m=%d n=%d k=%d ranks=%d grid=%dx%d nb=%d: %s, check %s (max rel "
          "err %.1e, %d samples)\n",
          transa[0], transb[0], m, n, k, nranks, pr, pc, nb, t.text().c_str(), check.status(),
          check.max_rel_err, check.samples);
      std::fflush(stdout);
    }
    nlohmann::json j = t.to_json(a);
    j.update({{"tool", "scalapack"},
              {"routine", "pdgemm_"},
              {"ranks", nranks},
              {"grid", {pr, pc}},
              {"idle_ranks", nranks - pr * pc},
              {"nb", nb},
              {"transa", transa},
              {"transb", transb},
              {"blas", bench::blas_config()}});
    status = bench::finish_run("scalapack_gemm", a.json_path, j, check);
  }  // the BLACS grid exits here
  MPI_Finalize();
  return status;
}

// DBCSR 2.5 (Debian libdbcsr-dev, C API) on the matrices and distributions of `tessel spgemm`
// (apps/tessel/spgemm_case): C = A B with c_dbcsr_multiply_d, timed per multiply (median of
// --repeat, barrier before each), flops as DBCSR counts them, GFLOP/s, occupancies, and
// ||C||_F next to tessel's (Cannon) as a check that both computed the same product.
// DBCSR's blocks are owned by rank prow * PC + pcol of a non-reordered MPI_Cart_create
// {PR, PC}, the same rank map as tessel. One thread per rank (OMP_NUM_THREADS=1).
// Under ../shared/tools/commcount (LD_PRELOAD) only the FIRST DBCSR multiply is counted
// (MPI_Pcontrol: paused from MPI_Init, reset and resumed right before it, paused right after
// it), as tessel's ledger counts its first multiply; without commcount MPI_Pcontrol does nothing.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <vector>

#include "bench_mpi.hpp"
#include "bench_util.hpp"
#include "dbcsr_util.hpp"
#include "spgemm_case.hpp"
#include "tessel/sparse/multiply.hpp"

using namespace tessel;
using namespace tessel::sparse;
using tessel::bench::to_dbcsr;

using tessel::bench::median;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Pcontrol(0);  // commcount: count nothing but the first DBCSR multiply
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  CLI::App app{"DBCSR 2.5 multiply on the matrices of `tessel spgemm`"};
  app::SpgemmInputs in;
  std::string grid, json;
  double eps = 0;
  int repeat = 3;
  app.add_option("--generate", in.generate, "band:N (as tessel spgemm)")->capture_default_str();
  app.add_option("--seed", in.seed, "Seed (as tessel spgemm)")->capture_default_str();
  app.add_option("--a", in.a, "A as CP2K CSR text (as tessel spgemm)");
  app.add_option("--b", in.b, "B as CP2K CSR text (as tessel spgemm)");
  app.add_option("--blocks", in.blocks, "Block sizes file of --a/--b");
  app.add_option("--grid", grid, "PRxPC (default: the most square, PR <= PC)");
  app.add_option("--eps", eps, "filter_eps of c_dbcsr_multiply_d")->capture_default_str();
  app.add_option("--repeat", repeat, "Timed multiplies (median)")->capture_default_str();
  app.add_option("--json", json, "Write the results as JSON");
  if (auto code = tessel::bench::parse_or_finalize(app, argc, argv)) return *code;
  int rc = 0;
  try {
    Context ctx(MPI_COMM_WORLD);
    auto [pr, pc] = Distribution::default_grid(p);
    if (!grid.empty()) std::sscanf(grid.c_str(), "%dx%d", &pr, &pc);
    TESSEL_CHECK(pr * pc == p, GridError, "--grid ", grid, ": ", pr, "x", pc, " != ", p, " ranks");
    SpgemmPlan plan = make_spgemm_plan(SpAlgorithm::Cannon, pr, pc);
    app::SpgemmCase cs = app::make_spgemm_case(ctx, in, SpOp::N, SpOp::N, plan);
    // tessel's product, for the check
    BlockSparseMatrix<double> Ct(ctx, cs.dc, "C");
    SpMultiplyOptions o;
    o.filter_eps = eps;
    multiply(ctx, 1.0, SpOp::N, cs.A, SpOp::N, cs.B, 0.0, Ct, o);
    const double norm_tessel = frobenius_norm(ctx, Ct);

    int io_unit = -1;
    c_dbcsr_init_lib(MPI_COMM_WORLD, &io_unit);
    MPI_Comm cart;
    int dims[2] = {pr, pc}, periods[2] = {0, 0};
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    dbcsr_distribution da = nullptr, db = nullptr, dcd = nullptr;
    dbcsr_matrix A = to_dbcsr(cart, cs.A, "A", da), B = to_dbcsr(cart, cs.B, "B", db);
    dbcsr_matrix C = to_dbcsr(cart, Ct, "C", dcd);
    std::vector<double> times;
    long long flop = 0;
    bool retain = false;
    for (int r = 0; r < repeat; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (r == 0) {
        MPI_Pcontrol(2);
        MPI_Pcontrol(1);
      }
      double t0 = MPI_Wtime();
      c_dbcsr_multiply_d('N', 'N', 1.0, A, B, 0.0, C, nullptr, nullptr, nullptr, nullptr, nullptr,
                         nullptr, &retain, &eps, &flop);
      double t = MPI_Wtime() - t0;
      if (r == 0) MPI_Pcontrol(0);
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      times.push_back(t);
    }
    bool local = false;
    const double norm_dbcsr = c_dbcsr_frobenius_norm(C, &local);
    const double occ_a = c_dbcsr_get_occupation(A), occ_b = c_dbcsr_get_occupation(B),
                 occ_c = c_dbcsr_get_occupation(C);
    long long flops = flop;  // DBCSR's count is this rank's: sum over ranks
    MPI_Allreduce(MPI_IN_PLACE, &flops, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    const double med = median(times);
    const double rel = std::abs(norm_dbcsr - norm_tessel) / std::max(norm_tessel, 1e-300);
    if (rank == 0) {
      std::cout << "dbcsr_spgemm: DBCSR 2.5 c_dbcsr_multiply_d, " << cs.description << ", " << p
                << " ranks (" << pr << "x" << pc << "), eps " << eps << "\n";
      std::printf("time: median %.4f s per multiply over %d runs (min %.4f s), %.3f GFLOP/s\n", med,
                  repeat, *std::min_element(times.begin(), times.end()),
                  med > 0 ? static_cast<double>(flops) / med * 1e-9 : 0.0);
      std::printf("occupancy: A %.2f%%, B %.2f%%, C %.2f%%\n", 100 * occ_a, 100 * occ_b,
                  100 * occ_c);
      std::printf("check: ||C||_F DBCSR %.12e, tessel %.12e (relative difference %.1e)\n",
                  norm_dbcsr, norm_tessel, rel);
    }
    if (!json.empty() && rank == 0) {
      nlohmann::json j{{"command", "dbcsr_spgemm"},
                       {"generate", in.generate},
                       {"ranks", p},
                       {"grid", std::to_string(pr) + "x" + std::to_string(pc)},
                       {"eps", eps},
                       {"times_s", times},
                       {"median_s", med},
                       {"flops", flops},
                       {"gflops", med > 0 ? static_cast<double>(flops) / med * 1e-9 : 0.0},
                       {"occupancy", {{"a", occ_a}, {"b", occ_b}, {"c", occ_c}}},
                       {"norm_c", norm_dbcsr},
                       {"norm_c_tessel", norm_tessel},
                       {"commcount_counts", "the first multiply only (MPI_Pcontrol)"}};
      std::ofstream(json) << j.dump(2) << "\n";
    }
    c_dbcsr_release(&A);
    c_dbcsr_release(&B);
    c_dbcsr_release(&C);
    c_dbcsr_distribution_release(&da);
    c_dbcsr_distribution_release(&db);
    c_dbcsr_distribution_release(&dcd);
    MPI_Comm_free(&cart);
    c_dbcsr_finalize_lib();
    rc = rel < 1e-8 || eps > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "dbcsr_spgemm: error: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}

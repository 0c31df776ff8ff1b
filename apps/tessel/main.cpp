// tessel: communication-bound kernels of electronic-structure codes, on MPI.
#include <mpi.h>

#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "tessel/core/error.hpp"
#include "tessel/version.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  {
    CLI::App app{"tessel " TESSEL_VERSION
                 " — communication-optimal kernels for electronic-structure codes, on MPI.\n"
                 "Run under mpirun/srun; every subcommand is collective over all ranks."};
    app.require_subcommand(1);
    app.set_version_flag("--version", TESSEL_VERSION);
    auto run_gemm = tessel::app::add_gemm(app);
    auto run_purify = tessel::app::add_purify(app);
    auto run_ssc = tessel::app::add_ssc(app);
    auto run_stencil = tessel::app::add_stencil(app);
    auto run_spgemm = tessel::app::add_spgemm(app);
    auto run_density = tessel::app::add_density(app);
    auto run_generate = tessel::app::add_generate(app);
    auto run_calibrate = tessel::app::add_calibrate(app);
    auto run_info = tessel::app::add_info(app);
    try {
      app.parse(argc, argv);
      if (app.got_subcommand("gemm"))
        rc = run_gemm();
      else if (app.got_subcommand("purify"))
        rc = run_purify();
      else if (app.got_subcommand("ssc"))
        rc = run_ssc();
      else if (app.got_subcommand("stencil"))
        rc = run_stencil();
      else if (app.got_subcommand("spgemm"))
        rc = run_spgemm();
      else if (app.got_subcommand("density"))
        rc = run_density();
      else if (app.got_subcommand("generate"))
        rc = run_generate();
      else if (app.got_subcommand("calibrate"))
        rc = run_calibrate();
      else if (app.got_subcommand("info"))
        rc = run_info();
    } catch (const CLI::ParseError& e) {
      // Every rank parses the same arguments; only rank 0 speaks.
      if (rank == 0)
        rc = app.exit(e);
      else
        rc = e.get_exit_code();
    } catch (const tessel::Error& e) {
      // tessel errors are agreed on all ranks; print once.
      if (rank == 0) std::fprintf(stderr, "tessel: error: %s\n", e.what());
      rc = 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tessel: internal error on rank %d: %s\n", rank, e.what());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  MPI_Finalize();
  return rc;
}

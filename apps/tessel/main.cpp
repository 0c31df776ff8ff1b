// tessel: communication-bound kernels of electronic-structure codes, on MPI.
#include <mpi.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "tessel/core/error.hpp"
#include "tessel/version.hpp"

namespace {

/// One example per subcommand, runnable as printed (with `tessel` on PATH): the end of each
/// subcommand's --help and, together, of `tessel --help`. tests/cli/check_readme_commands.py
/// parses every one of them (with --parse-only) beside the commands of README.md.
const std::vector<std::pair<std::string, std::string>>& examples() {
  static const std::vector<std::pair<std::string, std::string>> ex = {
      {"gemm", "mpirun -np 8 tessel gemm --m 2048 --n 2048 --k 2048 --verify"},
      {"purify", "mpirun -np 8 tessel purify --n 1024 --gap 0.2"},
      {"ssc", "mpirun -np 8 tessel ssc --n 2048 --verify"},
      {"stencil", "mpirun -np 4 tessel stencil"},
      {"spgemm", "mpirun -np 4 tessel spgemm --generate water:500 --eps 1e-6 --verify"},
      {"density", "mpirun -np 4 tessel density --generate water:250 --eps 1e-6"},
      {"generate", "tessel generate water --molecules 32 --out-dir ."},
      {"calibrate", "mpirun -np 4 tessel calibrate --out machine.json"},
      {"info", "mpirun -np 2 tessel info"},
  };
  return ex;
}

}  // namespace

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
    std::string all_examples = "Examples (docs: README.md and docs/):";
    for (const auto& [name, example] : examples()) {
      CLI::App* sub = app.get_subcommand(name);  // after the subcommand's own footer, if any
      const std::string own = sub->get_footer();
      sub->footer((own.empty() ? "" : own + "\n\n") + "Example:\n  " + example);
      all_examples += "\n  " + example;
    }
    app.footer(all_examples);
    // Hidden: parse the command line, run nothing, exit 0 (a parse error exits as usual).
    // tests/cli/check_readme_commands.py checks README.md's commands with it.
    bool parse_only = false;
    app.add_flag("--parse-only", parse_only)->group("");
    try {
      app.parse(argc, argv);
      if (parse_only)
        rc = 0;
      else if (app.got_subcommand("gemm"))
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

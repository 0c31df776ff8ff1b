#include "bench_mpi.hpp"

#include <cstdio>

#include "bench_util.hpp"

namespace tessel::bench {

std::optional<int> parse_or_finalize(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int code = rank == 0 ? app.exit(e) : e.get_exit_code();
    MPI_Finalize();
    return code;
  }
}

std::string mpi_library_version() {
  char ver[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(ver, &len);
  std::string v(ver, static_cast<std::size_t>(len));
  return v.substr(0, v.find_first_of(",\n"));
}

std::vector<double> timed_repetitions(int warmup, int repeat,
                                      const std::function<void()>& multiply) {
  for (int w = 0; w < warmup; ++w) {
    MPI_Barrier(MPI_COMM_WORLD);
    multiply();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<double> times(static_cast<std::size_t>(repeat), 0.0);
  MPI_Pcontrol(2);  // commcount: reset, count only the timed multiplies
  for (int r = 0; r < repeat; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    multiply();
    times[static_cast<std::size_t>(r)] = MPI_Wtime() - t0;
  }
  MPI_Pcontrol(0);  // commcount: pause
  MPI_Allreduce(MPI_IN_PLACE, times.data(), repeat, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return times;
}

int finish_run(const std::string& tool, const std::string& json_path, nlohmann::json j,
               const SampleCheck& check, int status) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!check.ok) status = 1;
  if (rank == 0) {
    if (!json_path.empty()) {
      j["check"] = check.to_json();
      j["commcount_region"] = "timed repetitions only (MPI_Pcontrol 2 .. 0): divide by repeat";
      j["mpi"] = mpi_library_version();
      try {
        write_json_atomically(json_path, j);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: --json: %s\n", tool.c_str(), e.what());
        status = 1;
      }
    }
    if (!check.ok)
      std::fprintf(stderr, "%s: check FAILED: max relative error %.3e > %.3e\n", tool.c_str(),
                   check.max_rel_err, check.tol);
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return status;
}

}  // namespace tessel::bench

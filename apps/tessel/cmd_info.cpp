// `tessel info`: versions, MPI implementation, BLAS, build options.
#include <mpi.h>

#include <iostream>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tessel/version.hpp"

extern "C" {
char* openblas_get_config(void) __attribute__((weak));
}

namespace tessel::app {

std::function<int()> add_info(CLI::App& app) {
  CLI::App* s = app.add_subcommand("info", "Versions, MPI implementation, BLAS and build options");
  auto trace_path = std::make_shared<std::string>();
  add_trace_option(s, *trace_path);
  return [trace_path]() -> int {
    Context ctx(MPI_COMM_WORLD, context_options_from_environment());
    TraceRun trace(ctx, *trace_path);
    int rank = 0, size = 1, major = 0, minor = 0, len = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_version(&major, &minor);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(lib, &len);
    std::string l(lib, static_cast<std::size_t>(len));
    l = l.substr(0, l.find('\n'));
    if (rank == 0) {
      std::cout << "tessel " << TESSEL_VERSION << " (" << TESSEL_BUILD_TYPE << ", "
                << TESSEL_CXX_COMPILER << ")\n"
                << "MPI standard " << major << "." << minor << ": " << l << "\n"
                << "built for MPI flavour: " << TESSEL_MPI_FLAVOUR << "\n"
                << "ranks in this run: " << size << "\n"
                << "BLAS: " << (openblas_get_config ? openblas_get_config() : "(not OpenBLAS)")
                << "\n"
                << "BLAS libraries at build time: " << TESSEL_BLAS_LIBRARIES << "\n";
    }
    return trace.finish(0);
  };
}

}  // namespace tessel::app

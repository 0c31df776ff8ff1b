#pragma once
// For the targets whose readers take a path and a Context (the block-sparse text readers):
// MPI initialised once for the whole fuzzing run (a singleton: one rank), one Context, and the
// input written to one temporary file per process.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz_util.hpp"
#include "tessel/core/context.hpp"

namespace tessel::fuzz {

/// The Context of the run (MPI_Init on first use). MPI_Finalize is not called: it unloads
/// Open MPI's components, and LeakSanitizer's exit-time report could then no longer attribute
/// their never-freed tables to them (tests/fuzz/lsan.supp matches them by library name).
inline Context& context() {
  static const bool mpi_ready = [] {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
    return true;
  }();
  (void)mpi_ready;
  static Context* ctx = new Context(MPI_COMM_WORLD);  // lives until exit (no collective teardown)
  return *ctx;
}

/// Writes `bytes` to this process's temporary file (suffix `ext`, e.g. ".csr") and returns its
/// path; the same file is overwritten for every input and removed at exit.
inline const std::string& as_file(const std::string& bytes, const char* ext) {
  static std::string path;
  if (path.empty()) {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/tessel_fuzz." + std::to_string(::getpid()) +
           ext;
    std::atexit([] { std::remove(path.c_str()); });
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  require(f != nullptr, "cannot create the temporary input file");
  require(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size(), "short write");
  require(std::fclose(f) == 0, "cannot close the temporary input file");
  return path;
}

}  // namespace tessel::fuzz

#pragma once
// Helpers shared by the gemm benchmark drivers (blas_gemm, scalapack_gemm, cosma_gemm) and the
// other bench/*.cpp drivers: the common options, the timing summary, the BLAS in use, and
// writing a result file atomically. No MPI here (blas_gemm has none): bench_mpi.hpp has the MPI
// parts, bench_blacs.hpp the BLACS grid and block-cyclic matrices. No global state.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::bench {

/// Pure. The median of `v` (the mean of the middle two for an even count; 0 when empty).
double median(std::vector<double> v);

/// The options every gemm driver has: C (m x n) = op(A) (m x k) op(B) (k x n), `repeat` timed
/// and `warmup` untimed multiplies, the seed of the random matrices, the --json path.
struct GemmArgs {
  int m = 0, n = 0, k = 0, repeat = 3, warmup = 1;
  std::uint64_t seed = 42;
  std::string json_path;

  /// Adds --m --n --k (required, > 0), --repeat (> 0), --warmup (>= 0), --seed and --json;
  /// `a`/`b` name the operands in the help ("A" or "op(A)"), `seed_help` the seed's matrices.
  void add_to(CLI::App& app, const std::string& a = "A", const std::string& b = "B",
              const std::string& seed_help = "seed of the random matrices");
  /// Pure. 2 m n k.
  double flops() const { return 2.0 * m * static_cast<double>(n) * k; }
};

/// The summary of the timed repetitions.
struct Timing {
  std::vector<double> times_s;
  double median_s = 0, min_s = 0, gflops = 0;

  /// Pure. Median, minimum and GFLOP/s (at the median) of `times` for `flops` per multiply.
  static Timing of(std::vector<double> times, double flops);
  /// "median 0.1234 s (min 0.1200, 3 reps), 12.34 GFLOP/s", the middle of every driver's line.
  std::string text() const;
  /// {"m","n","k","repeat","warmup","seed","times_s","median_s","min_s","gflops"}.
  nlohmann::json to_json(const GemmArgs& a) const;
};

/// The BLAS in the process: openblas_get_config() (looked up by dlsym), else "unknown (not
/// OpenBLAS)".
std::string blas_config();
/// openblas_get_num_threads() (dlsym), else 0.
int blas_threads();

/// Writes `text` to `path` through a temporary file `path.tmp.PID` renamed over it, so a reader
/// never sees half a file. Throws std::runtime_error naming `path` when it cannot.
void write_text_atomically(const std::string& path, const std::string& text);
/// write_text_atomically(path, j.dump(1) + "\n").
void write_json_atomically(const std::string& path, const nlohmann::json& j);

}  // namespace tessel::bench

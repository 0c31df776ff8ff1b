// blas_gemm — bare single-process dgemm_ (the BLAS tessel links, OpenBLAS on Debian), no MPI.
// The yardstick for "tessel on 1 rank is within 5% of bare dgemm".
//
//   blas_gemm --m M --n N --k K [--repeat 3] [--warmup 1] [--seed 42] [--json FILE]
//
// C (m x n) = A (m x k) B (k x n), column-major, random entries in [-1, 1). Prints one line;
// with --json writes {"tool":"blas","m","n","k","ranks":1,"times_s","median_s","gflops",...}.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

extern "C" void dgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const double* alpha, const double* a, const int* lda,
                       const double* b, const int* ldb, const double* beta, double* c,
                       const int* ldc, std::size_t transa_len, std::size_t transb_len);

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bare single-process BLAS dgemm: C = A B, A m x k, B k x n"};
  int m = 0, n = 0, k = 0, repeat = 3, warmup = 1;
  unsigned seed = 42;
  std::string json_path;
  app.add_option("--m", m, "rows of C and A")->required()->check(CLI::PositiveNumber);
  app.add_option("--n", n, "columns of C and B")->required()->check(CLI::PositiveNumber);
  app.add_option("--k", k, "inner dimension")->required()->check(CLI::PositiveNumber);
  app.add_option("--repeat", repeat, "timed repetitions")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed repetitions first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "seed of the random matrices")->capture_default_str();
  app.add_option("--json", json_path, "write the result as JSON");
  CLI11_PARSE(app, argc, argv);

  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> A(static_cast<size_t>(m) * k), B(static_cast<size_t>(k) * n),
      C(static_cast<size_t>(m) * n, 0.0);
  for (auto& x : A) x = dist(gen);
  for (auto& x : B) x = dist(gen);

  const double alpha = 1.0, beta = 0.0;
  auto multiply = [&] {
    dgemm_("N", "N", &m, &n, &k, &alpha, A.data(), &m, B.data(), &k, &beta, C.data(), &m, 1, 1);
  };
  for (int w = 0; w < warmup; ++w) multiply();
  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    multiply();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double med = median(times);
  const double gflops = 2.0 * m * static_cast<double>(n) * k / med * 1e-9;

  using cfg_fn = char* (*)();
  using thr_fn = int (*)();
  auto cfg = reinterpret_cast<cfg_fn>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  auto thr = reinterpret_cast<thr_fn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  const std::string blas = cfg ? cfg() : "unknown (not OpenBLAS)";
  const int threads = thr ? thr() : 0;

  std::printf(
      "blas dgemm m=%d n=%d k=%d: median %.4f s (min %.4f, %d reps), %.2f GFLOP/s, "
      "%d thread(s), %s\n",
      m, n, k, med, *std::min_element(times.begin(), times.end()), repeat, gflops, threads,
      blas.c_str());
  if (!json_path.empty()) {
    nlohmann::json j = {{"tool", "blas"},
                        {"routine", "dgemm_"},
                        {"m", m},
                        {"n", n},
                        {"k", k},
                        {"ranks", 1},
                        {"repeat", repeat},
                        {"warmup", warmup},
                        {"times_s", times},
                        {"median_s", med},
                        {"min_s", *std::min_element(times.begin(), times.end())},
                        {"gflops", gflops},
                        {"blas", blas},
                        {"blas_threads", threads}};
    const std::string tmp = json_path + ".tmp." + std::to_string(getpid());
    std::ofstream f(tmp);
    f << j.dump(1) << "\n";
    f.close();
    if (!f || std::rename(tmp.c_str(), json_path.c_str()) != 0) {
      std::remove(tmp.c_str());
      std::fprintf(stderr, "blas_gemm: cannot write --json file '%s'\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}

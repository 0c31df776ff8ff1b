// blas_gemm — bare single-process dgemm_ (the BLAS tessel links, OpenBLAS on Debian), no MPI.
// The yardstick for "tessel on 1 rank is within 5% of bare dgemm".
//
//   blas_gemm --m M --n N --k K [--repeat 3] [--warmup 1] [--seed 42] [--json FILE]
//
// C (m x n) = A (m x k) B (k x n), column-major, random entries in [-1, 1). Prints one line;
// with --json writes {"tool":"blas","m","n","k","ranks":1,"times_s","median_s","gflops",...}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"

extern "C" void dgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const double* alpha, const double* a, const int* lda,
                       const double* b, const int* ldb, const double* beta, double* c,
                       const int* ldc, std::size_t transa_len, std::size_t transb_len);

namespace bench = tessel::bench;

int main(int argc, char** argv) {
  CLI::App app{"bare single-process BLAS dgemm: C = A B, A m x k, B k x n"};
  bench::GemmArgs a;
  a.add_to(app);
  CLI11_PARSE(app, argc, argv);
  const int m = a.m, n = a.n, k = a.k;

  std::mt19937_64 gen(a.seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> A(static_cast<size_t>(m) * k), B(static_cast<size_t>(k) * n),
      C(static_cast<size_t>(m) * n, 0.0);
  for (auto& x : A) x = dist(gen);
  for (auto& x : B) x = dist(gen);

  const double alpha = 1.0, beta = 0.0;
  auto multiply = [&] {
    dgemm_("N", "N", &m, &n, &k, &alpha, A.data(), &m, B.data(), &k, &beta, C.data(), &m, 1, 1);
  };
  for (int w = 0; w < a.warmup; ++w) multiply();
  std::vector<double> times;
  for (int r = 0; r < a.repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    multiply();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const auto t = bench::Timing::of(times, a.flops());
  const std::string blas = bench::blas_config();
  const int threads = bench::blas_threads();

  std::printf("blas dgemm m=%d n=%d k=%d: %s, %d thread(s), %s\n", m, n, k, t.text().c_str(),
              threads, blas.c_str());
  if (!a.json_path.empty()) {
    nlohmann::json j = t.to_json(a);
    j.update({{"tool", "blas"},
              {"routine", "dgemm_"},
              {"ranks", 1},
              {"blas", blas},
              {"blas_threads", threads}});
    try {
      bench::write_json_atomically(a.json_path, j);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "blas_gemm: --json: %s\n", e.what());
      return 1;
    }
  }
  return 0;
}

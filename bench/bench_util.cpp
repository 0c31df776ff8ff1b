#include "bench_util.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace tessel::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

void GemmArgs::add_to(CLI::App& app, const std::string& a, const std::string& b,
                      const std::string& seed_help) {
  app.add_option("--m", m, "rows of C and " + a)->required()->check(CLI::PositiveNumber);
  app.add_option("--n", n, "columns of C and " + b)->required()->check(CLI::PositiveNumber);
  app.add_option("--k", k, "inner dimension")->required()->check(CLI::PositiveNumber);
  app.add_option("--repeat", repeat, "timed repetitions")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed repetitions first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, seed_help)->capture_default_str();
  app.add_option("--json", json_path, "write the result as JSON (rank 0)");
}

Timing Timing::of(std::vector<double> times, double flops) {
  Timing t;
  t.median_s = median(times);
  t.min_s = times.empty() ? 0.0 : *std::min_element(times.begin(), times.end());
  t.gflops = t.median_s > 0 ? flops / t.median_s * 1e-9 : 0.0;
  t.times_s = std::move(times);
  return t;
}

std::string Timing::text() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "median %.4f s (min %.4f, %d reps), %.2f GFLOP/s", median_s, min_s,
                static_cast<int>(times_s.size()), gflops);
  return buf;
}

nlohmann::json Timing::to_json(const GemmArgs& a) const {
  return {{"m", a.m},           {"n", a.n},        {"k", a.k},           {"repeat", a.repeat},
          {"warmup", a.warmup}, {"seed", a.seed},  {"times_s", times_s}, {"median_s", median_s},
          {"min_s", min_s},     {"gflops", gflops}};
}

std::string blas_config() {
  using cfg_fn = char* (*)();
  if (auto f = reinterpret_cast<cfg_fn>(dlsym(RTLD_DEFAULT, "openblas_get_config"))) return f();
  return "unknown (not OpenBLAS)";
}

int blas_threads() {
  using thr_fn = int (*)();
  if (auto f = reinterpret_cast<thr_fn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads")))
    return f();
  return 0;
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw std::runtime_error("cannot write '" + path + "'");
    f << text;
    if (!f.flush()) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write '" + path + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename to '" + path + "'");
  }
}

void write_json_atomically(const std::string& path, const nlohmann::json& j) {
  write_text_atomically(path, j.dump(1) + "\n");
}

}  // namespace tessel::bench

#pragma once
// Helpers of the purification tests: the PySCF systems of ../shared/data/pyscf and symmetric
// matrices with a known spectrum.
#include <cmath>
#include <cstdio>
#include <functional>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tessel/core/error.hpp"

namespace tessel::testing {

inline std::filesystem::path pyscf_dir() {
  if (const char* e = std::getenv("TESSEL_SHARED_DATA")) return std::filesystem::path(e) / "pyscf";
  return std::filesystem::path(TESSEL_SOURCE_DIR) / ".." / "shared" / "data" / "pyscf";
}

/// A number of a PySCF system's json ("n", "nocc", "homo", "lumo"); NaN when absent.
inline double json_number(const std::string& tag, const std::string& key) {
  std::ifstream in(pyscf_dir() / (tag + ".json"));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  if (!std::regex_search(s, m, std::regex("\"" + key + "\"\\s*:\\s*([-+0-9.eE]+)")))
    return std::nan("");
  return std::stod(m[1]);
}

inline bool have_system(const std::string& tag) {
  return std::filesystem::exists(pyscf_dir() / (tag + "_F_orth.npy"));
}

/// A symmetric n x n matrix (column-major) with eigenvalues e: H diag(e) H with the
/// Householder reflection H = I - 2 v v^T / v^T v, v_i = 1 + 0.37 i. Exactly symmetric.
inline std::vector<double> with_spectrum(const std::vector<double>& e) {
  std::int64_t n = static_cast<std::int64_t>(e.size());
  std::vector<double> v(e.size()), a(e.size() * e.size());
  double vv = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    v[i] = 1.0 + 0.37 * i;
    vv += v[i] * v[i];
  }
  // (H diag(e) H)_ij = e_i d_ij - 2 w_i (e_i + e_j) w_j + 4 w_i w_j sum_q e_q w_q^2, w = v/|v|
  std::vector<double> w(e.size());
  double ew = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    w[i] = v[i] / std::sqrt(vv);
    ew += e[i] * w[i] * w[i];
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i <= j; ++i) {
      double s = (i == j ? e[i] : 0.0) - 2 * w[i] * w[j] * (e[i] + e[j]) + 4 * w[i] * w[j] * ew;
      a[static_cast<std::size_t>(j * n + i)] = s;
      a[static_cast<std::size_t>(i * n + j)] = s;
    }
  return a;
}

/// Serial C = A B (n x n, column-major).
inline std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b,
                                  std::int64_t n) {
  std::vector<double> c(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t q = 0; q < n; ++q) {
      double bq = b[static_cast<std::size_t>(j * n + q)];
      for (std::int64_t i = 0; i < n; ++i)
        c[static_cast<std::size_t>(j * n + i)] += a[static_cast<std::size_t>(q * n + i)] * bq;
    }
  return c;
}

/// The message of the InputError `f` throws ("(no InputError)" when it throws none); printed
/// with TESSEL_TEST_VERBOSE set.
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    if (std::getenv("TESSEL_TEST_VERBOSE")) std::fprintf(stderr, "    message: %s\n", e.what());
    return e.what();
  }
  return "(no InputError)";
}

}  // namespace tessel::testing

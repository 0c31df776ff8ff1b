#pragma once
// The CP2K matrices of the shared data folder (cp2k/<system>/: KS.csr, S.csr, blocksizes.txt,
// meta.json) read by the tests through an independent reader (zlib's gzopen and sscanf, not the
// library's), into full column-major arrays held on every rank.
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace tessel::testing {

inline std::filesystem::path cp2k_dir(const std::string& sys) {
  if (const char* e = std::getenv("TESSEL_SHARED_DATA"))
    return std::filesystem::path(e) / "cp2k" / sys;
  return std::filesystem::path(TESSEL_SOURCE_DIR) / ".." / "shared" / "data" / "cp2k" / sys;
}

inline double meta(const std::string& sys, const std::string& key) {
  std::ifstream in(cp2k_dir(sys) / "meta.json");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  if (!std::regex_search(s, m, std::regex("\"" + key + "\"\\s*:\\s*([-+0-9.eE]+)")))
    return std::nan("");
  return std::stod(m[1]);
}

// An independent reader of CP2K CSR text (plain or gzip, through zlib's gzopen) into a full
// column-major n x n array on every rank: the reference path of the test, not the library's.
inline std::vector<double> read_full(const std::filesystem::path& base, std::int64_t n) {
  std::string p = base.string();
  if (!std::filesystem::exists(p)) p += ".gz";
  gzFile f = gzopen(p.c_str(), "rb");
  std::vector<double> a(static_cast<std::size_t>(n * n), 0.0);
  char line[256];
  while (f && gzgets(f, line, sizeof line)) {
    long r = 0, c = 0;
    double v = 0;
    if (std::sscanf(line, "%ld %ld %lf", &r, &c, &v) == 3)
      a[static_cast<std::size_t>((c - 1) * n + (r - 1))] = v;
  }
  if (f) gzclose(f);
  return a;
}

inline std::vector<int> block_sizes(const std::string& sys) {
  std::ifstream in(cp2k_dir(sys) / "blocksizes.txt");
  std::vector<int> s;
  int b;
  while (in >> b) s.push_back(b);
  return s;
}

struct System {
  std::string name;
  std::int64_t n = 0, electrons = 0;
  double exact = 0;
  std::vector<double> H, S;
  std::vector<int> sizes;
};

inline bool load(const std::string& sys, System& s) {
  if (!std::filesystem::exists(cp2k_dir(sys) / "meta.json")) return false;
  s.name = sys;
  s.n = static_cast<std::int64_t>(meta(sys, "n"));
  s.electrons = static_cast<std::int64_t>(meta(sys, "n_electrons"));
  s.exact = meta(sys, "band_energy_exact");
  s.H = read_full(cp2k_dir(sys) / "KS.csr", s.n);
  s.S = read_full(cp2k_dir(sys) / "S.csr", s.n);
  s.sizes = block_sizes(sys);
  return true;
}

}  // namespace tessel::testing

// The table of seconds per small GEMM by shape (core/kernel_times.hpp): its text format.
#include "tessel/core/kernel_times.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "tessel/core/error.hpp"

namespace tessel {

void KernelTimes::set(int m, int n, int k, double seconds) {
  TESSEL_CHECK(m >= 1 && n >= 1 && k >= 1, InputError, "kernel times: shape ", m, " x ", n, " x ",
               k, ": expected sizes >= 1");
  TESSEL_CHECK(std::isfinite(seconds) && seconds >= 0, InputError, "kernel times: shape ", m, " x ",
               n, " x ", k, ": seconds ", seconds, ", expected finite and >= 0");
  t_[Shape{m, n, k}] = seconds;
}

const double* KernelTimes::find(int m, int n, int k) const {
  auto it = t_.find(Shape{m, n, k});
  return it == t_.end() ? nullptr : &it->second;
}

std::string KernelTimes::format(const std::string& comment) const {
  std::ostringstream o;
  std::istringstream c(comment);
  for (std::string line; std::getline(c, line);) o << "# " << line << "\n";
  o << "# m n k seconds\n" << std::setprecision(6);
  for (const auto& [s, sec] : t_) o << s[0] << " " << s[1] << " " << s[2] << " " << sec << "\n";
  return o.str();
}

namespace {
// Parses one data line into (m, n, k, seconds); false when it is not exactly that.
bool parse_line(const std::string& line, KernelTimes::Shape& s, double& sec) {
  std::istringstream in(line);
  std::string extra;
  if (!(in >> s[0] >> s[1] >> s[2] >> sec)) return false;
  return !(in >> extra);
}
}  // namespace

KernelTimes KernelTimes::parse(const std::string& text, const std::string& what) {
  KernelTimes t;
  std::istringstream in(text);
  int no = 0;
  for (std::string line; std::getline(in, line);) {
    ++no;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    Shape s{};
    double sec = 0;
    const bool ok = parse_line(line, s, sec) && s[0] >= 1 && s[1] >= 1 && s[2] >= 1 &&
                    std::isfinite(sec) && sec >= 0;
    TESSEL_CHECK(ok, InputError, what, " line ", no, ": '", line,
                 "': expected 'm n k seconds' (sizes >= 1, seconds >= 0)");
    TESSEL_CHECK(!t.find(s[0], s[1], s[2]), InputError, what, " line ", no, ": shape ", s[0], " x ",
                 s[1], " x ", s[2], " given twice: expected each shape once");
    t.set(s[0], s[1], s[2], sec);
  }
  TESSEL_CHECK(!t.empty(), InputError, what,
               ": no shape in it: expected lines 'm n k seconds' (written by tessel spgemm "
               "--measure-product-times)");
  return t;
}

KernelTimes KernelTimes::read(const std::string& path) {
  std::ifstream in(path);
  TESSEL_CHECK(in.good(), InputError, "cannot read product times file ", path, ": ",
               std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  KernelTimes t = parse(s.str(), "product times file " + path);
  t.source_ = "product times file " + path;
  return t;
}

}  // namespace tessel

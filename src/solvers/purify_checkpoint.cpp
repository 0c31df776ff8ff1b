// The text form of PurifyState in a checkpoint record (the io layer's container, io/checkpoint):
// doubles as C99 hex floats (printf "%a", read back by strtod bit for bit), lists as
// "count v1 v2 ...".
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tessel/core/error.hpp"
#include "tessel/solvers/purify_checkpoint.hpp"

namespace tessel::solvers {
namespace {

using detail::concat;

std::string fmt_double(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%a", v);
  return b;
}

std::string fmt_list(const std::vector<double>& v) {
  std::string s = std::to_string(v.size());
  for (double x : v) s += " " + fmt_double(x);
  return s;
}

}  // namespace

void put_purify_state(io::CheckpointRecord& r, const PurifyState& st) {
  auto& s = r.state;
  s.emplace_back("iteration", std::to_string(st.iteration));
  s.emplace_back("hmin", fmt_double(st.hmin));
  s.emplace_back("hmax", fmt_double(st.hmax));
  s.emplace_back("trace_f", fmt_double(st.trace_f));
  s.emplace_back("start_a", fmt_double(st.start_a));
  s.emplace_back("start_b", fmt_double(st.start_b));
  s.emplace_back("coefficients", fmt_list(st.coefficients));
  s.emplace_back("history", fmt_list(st.history));
  s.emplace_back("best_err", fmt_double(st.best_err));
  s.emplace_back("best_trace", fmt_double(st.best_trace));
  s.emplace_back("best_energy", fmt_double(st.best_energy));
  s.emplace_back("best_iteration", std::to_string(st.best_iteration));
  s.emplace_back("behind", std::to_string(st.behind));
  s.emplace_back("has_best", st.has_best ? "1" : "0");
}

PurifyState get_purify_state(const io::CheckpointRecord& r, const std::string& path) {
  auto bad = [&](const std::string& key, const std::string& v) {
    return InputError(
        concat("checkpoint ", path, " is malformed: state.", key, " '", v, "' does not parse"));
  };
  auto num = [&](const std::string& key) {
    const std::string& v = r.state_value(key, path);
    char* e = nullptr;
    const double x = std::strtod(v.c_str(), &e);
    if (v.empty() || *e) throw bad(key, v);
    return x;
  };
  auto integer = [&](const std::string& key) {
    const std::string& v = r.state_value(key, path);
    char* e = nullptr;
    const long x = std::strtol(v.c_str(), &e, 10);
    if (v.empty() || *e || x < std::numeric_limits<int>::min() ||
        x > std::numeric_limits<int>::max())
      throw bad(key, v);
    return static_cast<int>(x);
  };
  auto list = [&](const std::string& key) {
    const std::string& v = r.state_value(key, path);
    std::istringstream in(v);
    long long count = -1;
    std::vector<double> out;
    if (!(in >> count) || count < 0 || count > (1 << 24)) throw bad(key, v);
    std::string tok;
    for (long long q = 0; q < count; ++q) {
      char* e = nullptr;
      if (!(in >> tok)) throw bad(key, v);
      out.push_back(std::strtod(tok.c_str(), &e));
      if (*e) throw bad(key, v);
    }
    if (in >> tok) throw bad(key, v);
    return out;
  };
  PurifyState st;
  st.iteration = integer("iteration");
  st.hmin = num("hmin");
  st.hmax = num("hmax");
  st.trace_f = num("trace_f");
  st.start_a = num("start_a");
  st.start_b = num("start_b");
  st.coefficients = list("coefficients");
  st.history = list("history");
  st.best_err = num("best_err");
  st.best_trace = num("best_trace");
  st.best_energy = num("best_energy");
  st.best_iteration = integer("best_iteration");
  st.behind = integer("behind");
  st.has_best = integer("has_best") != 0;
  return st;
}

}  // namespace tessel::solvers

// The text form of PurifyState in a checkpoint record (the io layer's container, io/checkpoint):
// doubles as C99 hex floats (printf "%a", read back by strtod bit for bit), lists as
// "count v1 v2 ...". One list of the fields (for_each_field) serves both directions.
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

/// Every field of the state with its key, in the record's order.
template <class State, class F>
void for_each_field(State& st, F&& f) {
  f("iteration", st.iteration);
  f("hmin", st.hmin);
  f("hmax", st.hmax);
  f("trace_f", st.trace_f);
  f("start_a", st.start_a);
  f("start_b", st.start_b);
  f("coefficients", st.coefficients);
  f("history", st.history);
  f("best_err", st.best_err);
  f("best_trace", st.best_trace);
  f("best_energy", st.best_energy);
  f("best_iteration", st.best_iteration);
  f("behind", st.behind);
  f("has_best", st.has_best);
}

// ---- to text

std::string text(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%a", v);
  return b;
}
std::string text(int v) { return std::to_string(v); }
std::string text(bool v) { return v ? "1" : "0"; }
std::string text(const std::vector<double>& v) {
  std::string s = std::to_string(v.size());
  for (double x : v) s += " " + text(x);
  return s;
}

// ---- from text: false when `v` does not parse

bool parse(const std::string& v, double& out) {
  char* e = nullptr;
  out = std::strtod(v.c_str(), &e);
  return !v.empty() && !*e;
}
bool parse(const std::string& v, int& out) {
  char* e = nullptr;
  const long x = std::strtol(v.c_str(), &e, 10);
  if (v.empty() || *e || x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    return false;
  out = static_cast<int>(x);
  return true;
}
bool parse(const std::string& v, bool& out) {
  int x = 0;
  if (!parse(v, x)) return false;
  out = x != 0;
  return true;
}
bool parse(const std::string& v, std::vector<double>& out) {
  std::istringstream in(v);
  long long count = -1;
  if (!(in >> count) || count < 0 || count > (1 << 24)) return false;
  out.clear();
  std::string tok;
  for (long long q = 0; q < count; ++q) {
    char* e = nullptr;
    if (!(in >> tok)) return false;
    out.push_back(std::strtod(tok.c_str(), &e));
    if (*e) return false;
  }
  return !(in >> tok);
}

}  // namespace

void put_purify_state(io::CheckpointRecord& r, const PurifyState& st) {
  for_each_field(st, [&](const char* key, const auto& v) { r.state.emplace_back(key, text(v)); });
}

PurifyState get_purify_state(const io::CheckpointRecord& r, const std::string& path) {
  PurifyState st;
  for_each_field(st, [&](const char* key, auto& out) {
    const std::string& v = r.state_value(key, path);
    if (!parse(v, out))
      throw InputError(
          concat("checkpoint ", path, " is malformed: state.", key, " '", v, "' does not parse"));
  });
  return st;
}

}  // namespace tessel::solvers

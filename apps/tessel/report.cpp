#include "report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "tessel/core/atomic_file.hpp"
#include "tessel/version.hpp"

namespace tessel::app {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string human_bytes(double b) {
  const char* unit[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  return fmt::format("{:.3g} {}", b, unit[u]);
}

std::string ledger_table(const std::vector<comm::PhaseStats>& s, bool collectives) {
  std::string out = fmt::format("  {:<26} {:>12} {:>12} {:>10} {:>10}", "phase", "recv max",
                                "recv mean", "msgs max", "msgs mean");
  if (collectives) out += fmt::format(" {:>12} {:>12}", "coll max", "coll mean");
  out += "\n";
  for (const auto& p : s) {
    out += fmt::format("  {:<26} {:>12} {:>12} {:>10.1f} {:>10.1f}",
                       p.prefix.empty() ? "(all)" : p.prefix, human_bytes(p.recv_bytes.max),
                       human_bytes(p.recv_bytes.mean), p.recv_msgs.max, p.recv_msgs.mean);
    if (collectives)
      out += fmt::format(" {:>12} {:>12}", human_bytes(p.coll_bytes.max),
                         human_bytes(p.coll_bytes.mean));
    out += "\n";
  }
  return out;
}

nlohmann::json ledger_json(const std::vector<comm::PhaseStats>& s) {
  nlohmann::json j = nlohmann::json::object();
  auto stat = [](const LedgerStat& x) {
    return nlohmann::json{{"max", x.max}, {"mean", x.mean}, {"total", x.total}};
  };
  for (const auto& p : s)
    j[p.prefix.empty() ? "all" : p.prefix] = {
        {"recv_bytes", stat(p.recv_bytes)}, {"sent_bytes", stat(p.sent_bytes)},
        {"recv_msgs", stat(p.recv_msgs)},   {"sent_msgs", stat(p.sent_msgs)},
        {"coll_bytes", stat(p.coll_bytes)}, {"rma_bytes", stat(p.rma_bytes)},
        {"shm_bytes", stat(p.shm_bytes)}};
  return j;
}

nlohmann::json run_header(const Context& ctx) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string l(lib, static_cast<std::size_t>(len));
  l = l.substr(0, l.find('\n'));
  return {{"tessel_version", TESSEL_VERSION}, {"mpi", l}, {"ranks", ctx.size()}};
}

void write_json(const Context& ctx, const std::string& path, const nlohmann::json& j) {
  ctx.agree([&] {
    if (ctx.rank() != 0) return;
    write_text_atomic(path, "--json", j.dump(2) + "\n");
  });
}

}  // namespace tessel::app

/// @file machine_model.cpp
/// The machine file: parse, validate, write. Pure code, no MPI.
#include "tessel/dense/machine_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tessel/core/context.hpp"
#include "tessel/core/error.hpp"

namespace tessel::dense {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& what, const std::string& key, const std::string& value,
                      const std::string& expected) {
  throw InputError(
      fmt::format("machine file {}: {} = {}: expected {}", what, key, value, expected));
}

double number(const json& j, const std::string& what, const std::string& key) {
  if (!j.is_number()) bad(what, key, j.dump(), "a number");
  return j.get<double>();
}

double positive(const json& j, const std::string& what, const std::string& key) {
  double v = number(j, what, key);
  if (!(std::isfinite(v) && v > 0)) bad(what, key, j.dump(), "a finite number > 0");
  return v;
}

void link(const json& j, const std::string& what, const std::string& key, LinkModel& out) {
  if (!j.is_object())
    bad(what, key, j.dump(), "an object {\"latency_us\": ..., \"bandwidth_gbs\": ...}");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string k = key + "." + it.key();
    if (it.key() == "latency_us") {
      double v = number(*it, what, k);
      if (!(std::isfinite(v) && v >= 0)) bad(what, k, it->dump(), "a finite number >= 0");
      out.latency_s = v * 1e-6;
    } else if (it.key() == "bandwidth_gbs") {
      out.bandwidth_bps = positive(*it, what, k) * 1e9;
    } else if (it.key() != "spread" && it.key() != "comment") {
      bad(what, k, it->dump(), "no such key (latency_us, bandwidth_gbs)");
    }
  }
}

}  // namespace

MachineModel machine_model_from_json(const std::string& text, const std::string& what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("machine file {}: not valid JSON ({})", what, e.what()));
  }
  if (!j.is_object()) bad(what, "(top level)", j.dump(), "a JSON object");
  MachineModel m;
  m.source = what;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    if (key == "dgemm_gflops") {
      m.dgemm_flops = positive(*it, what, key) * 1e9;
    } else if (key == "zgemm_gflops") {
      m.zgemm_flops = positive(*it, what, key) * 1e9;
    } else if (key == "memory_bandwidth_gbs") {
      m.mem_bandwidth_bps = positive(*it, what, key) * 1e9;
    } else if (key == "intra_node") {
      link(*it, what, key, m.intra);
    } else if (key == "inter_node") {
      link(*it, what, key, m.inter);
    } else if (key == "node_size") {
      double v = number(*it, what, key);
      if (!(v >= 0 && v <= 1e9 && v == std::floor(v)))
        bad(what, key, it->dump(), "an integer >= 0 (0 = unknown)");
      m.node_size = static_cast<int>(v);
    } else if (key == "p2p_segment_bytes") {
      double v = number(*it, what, key);
      if (!(v >= 1 && v <= 9e15 && v == std::floor(v)))
        bad(what, key, it->dump(), "an integer >= 1");
      m.p2p_segment_bytes = static_cast<std::int64_t>(v);
    } else if (key == "overlap") {
      double v = number(*it, what, key);
      if (!(v >= 0 && v <= 1)) bad(what, key, it->dump(), "a fraction in [0, 1]");
      m.overlap = v;
    } else if (key != "comment" && key != "tessel_version" && key != "measured") {
      bad(what, key, it->dump(),
          "no such key (dgemm_gflops, zgemm_gflops, memory_bandwidth_gbs, intra_node, inter_node, "
          "node_size, "
          "p2p_segment_bytes, overlap; informational: comment, tessel_version, measured)");
    }
  }
  return m;
}

MachineModel load_machine_model(const std::string& path) {
  std::ifstream in(path);
  TESSEL_CHECK(in.good(), InputError, "machine file ", path, ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return machine_model_from_json(ss.str(), path);
}

MachineModel resolve_machine_model(const std::string& cli_path, const std::string& machine_file) {
  if (!cli_path.empty()) {
    MachineModel m = load_machine_model(cli_path);
    m.source = "--machine " + cli_path;
    return m;
  }
  if (!machine_file.empty()) {
    MachineModel m = load_machine_model(machine_file);
    m.source = "machine file " + machine_file;
    return m;
  }
  return MachineModel{};
}

MachineModel resolve_machine_model(const Context& ctx, const std::string& cli_path) {
  return resolve_machine_model(cli_path, ctx.machine_file());
}

std::string machine_model_to_json(const MachineModel& m) {
  json j;
  j["dgemm_gflops"] = m.dgemm_flops * 1e-9;
  j["zgemm_gflops"] = m.zgemm_flops * 1e-9;
  j["memory_bandwidth_gbs"] = m.mem_bandwidth_bps * 1e-9;
  j["intra_node"] = {{"latency_us", m.intra.latency_s * 1e6},
                     {"bandwidth_gbs", m.intra.bandwidth_bps * 1e-9}};
  j["inter_node"] = {{"latency_us", m.inter.latency_s * 1e6},
                     {"bandwidth_gbs", m.inter.bandwidth_bps * 1e-9}};
  j["node_size"] = m.node_size;
  j["p2p_segment_bytes"] = m.p2p_segment_bytes;
  j["overlap"] = m.overlap;
  return j.dump(2);
}

std::string describe(const MachineModel& m) {
  return fmt::format(
      "machine ({}): dgemm {:.4g} GFLOP/s, zgemm {:.4g} GFLOP/s, memory {:.4g} GB/s per rank; "
      "intra-node {:.3g} us, {:.4g} GB/s; inter-node {:.3g} us, {:.4g} GB/s; node size {}",
      m.source, m.dgemm_flops * 1e-9, m.zgemm_flops * 1e-9, m.mem_bandwidth_bps * 1e-9,
      m.intra.latency_s * 1e6, m.intra.bandwidth_bps * 1e-9, m.inter.latency_s * 1e6,
      m.inter.bandwidth_bps * 1e-9,
      m.node_size > 0 ? std::to_string(m.node_size)
                      : std::string("unknown (all links inter-node)"));
}

}  // namespace tessel::dense

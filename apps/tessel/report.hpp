#pragma once
// Shared output helpers of the tessel command: ledger tables, JSON, timing statistics.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessel/comm/ledger_stats.hpp"
#include "tessel/core/context.hpp"

namespace tessel::app {

double median(std::vector<double> v);
/// Human table of bytes/messages per rank (max, mean) for each phase group: point-to-point and
/// one-sided bytes received and messages received; with `collectives`, also the collective
/// payload bytes per rank (the payload rule of commcount: bytes of the caller's buffers).
std::string ledger_table(const std::vector<comm::PhaseStats>& s, bool collectives = false);
nlohmann::json ledger_json(const std::vector<comm::PhaseStats>& s);
/// Version, MPI library, ranks: the header of every JSON result.
nlohmann::json run_header(const Context& ctx);
/// Collective: rank 0 writes `j` to `path` through a temporary file renamed into place; an
/// unwritable path throws InputError on every rank and leaves no file.
void write_json(const Context& ctx, const std::string& path, const nlohmann::json& j);
/// Human byte count ("12.3 MB").
std::string human_bytes(double b);

}  // namespace tessel::app

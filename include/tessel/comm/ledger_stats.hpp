#pragma once
/// @file ledger_stats.hpp
/// Aggregates a CommLedger over the ranks of a communicator (max, mean, total per counter).
#include <string>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/core/ledger.hpp"

namespace tessel::comm {

/// One group of phases (all phases whose name starts with `prefix`), over all ranks.
struct PhaseStats {
  std::string prefix;
  LedgerStat recv_bytes, sent_bytes, recv_msgs, sent_msgs, coll_bytes, rma_bytes;
  /// Bytes stored into node peers' shared-memory windows (PhaseCounts::shm_bytes; no MPI traffic).
  LedgerStat shm_bytes;
};

/// Collective over c: for each prefix, the per-rank sums of its phases, reduced to max, mean
/// and total. `scale` divides every count (e.g. by the number of repetitions).
std::vector<PhaseStats> ledger_stats(const Comm& c, const CommLedger& l,
                                     const std::vector<std::string>& prefixes, double scale = 1);

}  // namespace tessel::comm

#pragma once
/// @file ledger.hpp
/// CommLedger: bytes and messages moved, per named phase and per kind of traffic.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessel/core/memory.hpp"

namespace tessel {

class Tracer;  // core/trace.hpp

/// Counters of one phase on one rank. Collective bytes follow the payload rule of
/// shared/tools/commcount (bytes of the caller's buffers that go to or come from other ranks).
struct PhaseCounts {
  std::int64_t p2p_sent_bytes = 0, p2p_sent_msgs = 0;
  std::int64_t p2p_recv_bytes = 0, p2p_recv_msgs = 0;
  std::int64_t coll_bytes = 0, coll_calls = 0;
  std::int64_t rma_put_bytes = 0, rma_get_bytes = 0, rma_acc_bytes = 0, rma_ops = 0;
  /// Not MPI traffic (a PMPI counter does not see it): bytes this rank stored into other
  /// ranks' memory of an MPI-3 shared-memory window (comm/shared_window.hpp), and the number
  /// of such transfers (one per origin/target pair where p2p would send one message).
  /// Excluded from recv_bytes()/sent_bytes().
  std::int64_t shm_bytes = 0, shm_msgs = 0;

  /// Bytes this rank received (point-to-point + one-sided get). Collectives not included.
  std::int64_t recv_bytes() const { return p2p_recv_bytes + rma_get_bytes; }
  /// Bytes this rank sent (point-to-point + one-sided put/accumulate).
  std::int64_t sent_bytes() const { return p2p_sent_bytes + rma_put_bytes + rma_acc_bytes; }
  PhaseCounts& operator+=(const PhaseCounts& o);
};

/// Statistics of one counter over the ranks of a communicator.
struct LedgerStat {
  double max = 0, mean = 0, total = 0;
};

/// Per-phase, per-rank counts. Not thread safe; owned by a Context. Phases nest by name
/// ("gemm/redistribute A"); a PhaseScope sets the current phase for its lifetime.
class CommLedger {
 public:
  /// Current phase name ("" when none is open).
  const std::string& phase() const { return current_; }
  void push_phase(const std::string& name);
  void pop_phase();
  /// The counters of the current phase (created on first use).
  PhaseCounts& now() { return phases_[current_]; }
  const std::map<std::string, PhaseCounts>& phases() const { return phases_; }
  /// Sum over all phases.
  PhaseCounts total() const;
  /// Sum over the phases whose name starts with prefix.
  PhaseCounts total(const std::string& prefix) const;
  void reset() { phases_.clear(); }
  /// The timeline recorder (core/trace.hpp) the comm/ layer reports transfers to and
  /// push_phase/pop_phase report phases to; null (the default) when not tracing.
  Tracer* tracer() const { return tracer_; }
  void set_tracer(Tracer* t) { tracer_ = t; }
  /// The bytes tessel holds on this rank (core/memory.hpp), peaks by this ledger's phases.
  MemoryLedger& memory() { return *memory_; }
  const MemoryLedger& memory() const { return *memory_; }
  /// Not collective. A charge of `bytes` of kind k against memory(), for an object's lifetime.
  MemoryCharge charge(MemKind k, std::int64_t bytes = 0) const { return {memory_, k, bytes}; }

 private:
  Tracer* tracer_ = nullptr;
  std::shared_ptr<MemoryLedger> memory_ = std::make_shared<MemoryLedger>();
  std::string current_;
  std::vector<std::string> stack_;
  std::map<std::string, PhaseCounts> phases_;
};

/// RAII: opens phase `name` (nested under the current one) for the scope's lifetime.
class PhaseScope {
 public:
  PhaseScope(CommLedger& l, const std::string& name) : l_(l) { l_.push_phase(name); }
  ~PhaseScope() { l_.pop_phase(); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  CommLedger& l_;
};

}  // namespace tessel

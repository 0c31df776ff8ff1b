#pragma once
/// @file trace.hpp
/// Tracer: one rank's timeline of a run in the Chrome trace-event format (viewable in Perfetto,
/// chrome://tracing; rendered by bench/trace_plot.py). Started and written through the Context
/// (Context::start_trace / Context::write_trace, `--trace FILE.json` on every subcommand).
///
/// What is recorded, on lane (pid) = rank:
///  - a span ("X", cat "phase", tid 0) per ledger phase (PhaseScope), named by the full path;
///  - a span ("X", cat "compute", tid 0) per local kernel (KernelSpan: the local GEMM calls);
///  - every transfer the CommLedger counts, as an async pair ("b" when posted, "e" when
///    completed; cat "comm") with args {kind, peer, bytes}: kind is the ledger counter it adds
///    to (p2p_send, p2p_recv, coll, rma_put, rma_get, rma_acc, shm), peer the other rank in
///    the communicator used (-1 for collectives and aggregated chains), bytes the bytes the
///    ledger adds. The bytes of all "b" events of a kind equal the ledger's total of that kind.
///
/// Zero cost when off: the CommLedger holds a null Tracer pointer, and every hook is one test
/// of it. Not thread safe (like the ledger).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessel/core/ledger.hpp"
#include "tessel/core/timer.hpp"

namespace tessel {

class Tracer {
 public:
  /// Records for `rank`; time 0 is now (Context::start_trace calls it after a barrier).
  explicit Tracer(int rank);

  /// Microseconds since the start.
  double now() const { return clock_.microseconds(); }
  int rank() const { return rank_; }

  /// Phase spans (called by CommLedger::push_phase / pop_phase).
  void phase_begin(const std::string& full_name);
  void phase_end();
  /// A span [t_begin, now()] of category `cat` on the main lane ("compute" for kernels).
  void span(const char* cat, const char* name, double t_begin, const std::string& args_json = "");
  /// A transfer posted now; returns its id for transfer_completed (kind: see the file comment).
  std::uint64_t transfer_posted(const char* kind, int peer, std::int64_t bytes, double at = -1);
  /// The transfer `id` completed now.
  void transfer_completed(std::uint64_t id);
  /// A transfer posted and completed at once (blocking calls; RMA put/accumulate, which
  /// complete at the next synchronisation; shared-memory stores).
  void transfer(const char* kind, int peer, std::int64_t bytes) {
    transfer_completed(transfer_posted(kind, peer, bytes));
  }
  /// A blocking transfer that began at `t_begin` (from now()) and completed now.
  void transfer_since(const char* kind, int peer, std::int64_t bytes, double t_begin);

  /// This rank's events as JSON objects separated by ",\n" (no brackets), with the metadata
  /// naming the lane "rank <r>".
  std::string events_json() const;
  std::size_t size() const { return events_.size(); }

 private:
  struct Event {
    char ph;  // 'X', 'b', 'e'
    const char* cat;
    std::string name;
    double ts, dur;
    std::uint64_t id;  // 'b'/'e'
    std::string args;  // JSON object text or ""
  };
  struct Open {
    std::string name;
    double ts;
  };
  int rank_;
  Stopwatch clock_;  // started at construction: time 0
  std::uint64_t next_id_ = 0;
  std::vector<Open> phases_;
  std::vector<Event> events_;
  std::unordered_map<std::uint64_t, std::size_t> open_;  // posted transfers: id -> its "b"
};

/// The tracer of `l` (null when tracing is off or `l` is null).
inline Tracer* tracer_of(const CommLedger* l) { return l ? l->tracer() : nullptr; }

/// RAII: a "compute" span for one local kernel call on the tracer of `l` (nothing when off).
/// `flops` goes into the span's args.
class KernelSpan {
 public:
  KernelSpan(const CommLedger* l, const char* name, double flops = 0)
      : t_(tracer_of(l)), name_(name), flops_(flops), t0_(t_ ? t_->now() : 0) {}
  ~KernelSpan();
  KernelSpan(const KernelSpan&) = delete;
  KernelSpan& operator=(const KernelSpan&) = delete;

 private:
  Tracer* t_;
  const char* name_;
  double flops_, t0_;
};

}  // namespace tessel

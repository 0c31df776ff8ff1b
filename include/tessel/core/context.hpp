#pragma once
/// @file context.hpp
/// Context: what every collective tessel call needs — a private duplicate of the user's
/// communicator and the CommLedger that records its traffic. No global state: pass it.
#include <functional>
#include <memory>
#include <string>

#include "tessel/comm/comm.hpp"
#include "tessel/core/ledger.hpp"
#include "tessel/core/trace.hpp"

namespace tessel {

class Context {
 public:
  /// Collective over `user_comm`: duplicates it, so tessel's messages never mix with the
  /// caller's. The ledger lives in the Context (stable address, the Context is not movable).
  explicit Context(MPI_Comm user_comm);
  /// Collective, as above, but records into `ledger` (owned by the caller, outliving this
  /// Context) instead of a ledger of its own: several Contexts can report into one ledger.
  Context(MPI_Comm user_comm, CommLedger& ledger);
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  const comm::Comm& comm() const { return comm_; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  CommLedger& ledger() { return *ledger_; }
  /// Not collective, for tests only: test settings of this Context's communicator and of the
  /// communicators made from it afterwards (comm::TestSettings). Set the same on every rank.
  void set_testing(comm::TestSettings s);
  const CommLedger& ledger() const { return *ledger_; }

  /// Collective. Runs `check` on every rank; if it throws on any rank, every rank throws the
  /// same error: a tessel::Error of the same kind with the lowest failing rank's message, or,
  /// for any other exception (std::bad_alloc, a user callback's), a tessel::Error whose
  /// message names that rank and the original what(). One allreduce when all succeed, so no
  /// rank waits forever on a peer that failed.
  void agree(const std::function<void()>& check) const;

  // ---- the trace option (core/trace.hpp, docs/trace.md)
  /// Collective. Starts recording this run's timeline (phases, transfers, local kernels) into
  /// a Tracer attached to the ledger; time 0 is the end of a barrier. Restarts when on.
  void start_trace();
  /// Collective. Stops recording, gathers every rank's events on rank 0 (not recorded in the
  /// ledger) and writes them to `path` as one Chrome trace-event JSON file (a temporary file
  /// beside it, renamed into place). Throws InputError on every rank when tracing was not
  /// started or `path` cannot be written.
  void write_trace(const std::string& path);
  /// This rank's tracer (null when not tracing).
  Tracer* tracer() const { return tracer_.get(); }

 private:
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<CommLedger> own_;
  CommLedger* ledger_;
  comm::Comm comm_;
};

/// Collective over `c`: as Context::agree, on any communicator.
void agree_on(const comm::Comm& c, const std::function<void()>& check);

}  // namespace tessel

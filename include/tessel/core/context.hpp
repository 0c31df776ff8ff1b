#pragma once
/// @file context.hpp
/// Context: what every collective tessel call needs — a private duplicate of the user's
/// communicator and the CommLedger that records its traffic. No global state: pass it.
#include <functional>
#include <memory>
#include <string>

#include "tessel/comm/agree.hpp"
#include "tessel/comm/comm.hpp"
#include "tessel/comm/comm_cache.hpp"
#include "tessel/core/ledger.hpp"
#include "tessel/core/kernel_times.hpp"
#include "tessel/core/simulate.hpp"
#include "tessel/core/trace.hpp"

namespace tessel {

/// Options of a Context, fixed when it is made; the same on every rank. The library reads no
/// environment variable: a program that takes these from its environment (the `tessel`
/// command: TESSEL_NODE_SIZE, TESSEL_MACHINE; the Python module: TESSEL_NODE_SIZE) reads it
/// and passes the values here.
struct ContextOptions {
  /// Ranks per emulated node of the node-shared paths (layout::RedistOptions::node_shared):
  /// consecutive ranks of a real node are cut into groups of node_size, so that one machine
  /// runs the mixed intra/inter-node paths (tests). Precedence, first that is set wins:
  ///   1. a call's own option (RedistOptions::node_size > 0);
  ///   2. this option (> 0);
  ///   3. the real node (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)).
  /// Default 0 = not set. A negative value throws InputError naming node_size from the
  /// constructor (after the collective duplicate; on every rank when every rank has the same
  /// options). parse_node_size reads one from text.
  int node_size = 0;
  /// How the local kernels run (core/simulate.hpp). ComputeMode::Skip exists only in the SMPI
  /// build: elsewhere the constructor throws InputError. Under Skip, the dense local GEMMs are
  /// not run but charged to the simulated clock, and DistMatrix storage and the multiply's
  /// buffers are shared by all simulated ranks: every result is meaningless by design.
  ComputeMode compute = ComputeMode::Run;
  /// Under ComputeMode::Skip only: the seconds per block product by shape, measured once
  /// (core/kernel_times.hpp). The block-sparse multiply then runs no block product and charges
  /// each its entry, so the simulated time does not depend on the load of the machine running
  /// the simulation; the multiply throws InputError, on every rank, for a shape of its operands
  /// that the table lacks. Null (default): the products are sampled and timed (docs/
  /// simulation.md). Given with ComputeMode::Run, the constructor throws InputError.
  std::shared_ptr<const KernelTimes> product_times;
  /// The machine file (JSON written by `tessel calibrate`; docs/gemm.md) of the cost model
  /// that prices plans made with this Context (dense::resolve_machine_model(ctx, ...)).
  /// Default empty = the built-in defaults. Only the path is kept: the file is read, and a
  /// bad one reported, when a model is resolved.
  std::string machine_file;
};

/// Pure. A node size given as text (`what` names where it came from in the error, e.g.
/// "TESSEL_NODE_SIZE"): a positive integer, else InputError naming `what`, the text and the
/// expectation.
int parse_node_size(const std::string& text, const std::string& what);

class Context {
 public:
  /// Collective over `user_comm`: duplicates it, so tessel's messages never mix with the
  /// caller's. The ledger lives in the Context (stable address, the Context is not movable).
  /// Communicators and node-shared windows that tessel derives from it (the node
  /// communicator and window of the node-shared redistribution, SymmSquareCube's mesh) are
  /// made on first use and kept in cache() until the Context is destroyed.
  explicit Context(MPI_Comm user_comm, const ContextOptions& opt = {});
  /// Collective, as above, but records into `ledger` (owned by the caller, outliving this
  /// Context) instead of a ledger of its own: several Contexts can report into one ledger.
  Context(MPI_Comm user_comm, CommLedger& ledger, const ContextOptions& opt = {});
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  /// Collective over the communicator when cache() holds anything (it frees the kept windows:
  /// a polled arrival, then MPI_Win_free; and the kept communicators): destroy a Context on
  /// every rank at the same point, as it was made. After a rank left an exchange with an
  /// error (a failure notice), the kept windows are leaked instead.
  ~Context();

  const comm::Comm& comm() const { return comm_; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  CommLedger& ledger() { return *ledger_; }
  /// For tests only: test settings of this Context's communicator and of the communicators
  /// made from it afterwards (comm::TestSettings). Set the same on every rank. Drops cache()
  /// (so that kept communicators get the settings too): collective when it holds anything.
  void set_testing(comm::TestSettings s);
  const CommLedger& ledger() const { return *ledger_; }
  /// The communicators and windows derived from comm() and kept across calls
  /// (comm/comm_cache.hpp); also comm().cache(). Calls that make an entry are collective.
  comm::CommCache& cache() const { return *cache_; }
  /// Ranks per emulated node (0 = the real node): ContextOptions::node_size. Also
  /// comm().node_size().
  int node_size() const { return comm_.node_size(); }
  /// ContextOptions::compute: how the local kernels run.
  ComputeMode compute() const { return compute_; }
  /// ContextOptions::product_times (null: none).
  const KernelTimes* product_times() const { return product_times_.get(); }
  /// ContextOptions::machine_file (empty = the built-in machine model).
  const std::string& machine_file() const { return machine_file_; }

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
  // Collective, as the public constructors: records into `own` when given (the Context's own
  // ledger), else into `ledger`.
  Context(MPI_Comm user_comm, std::unique_ptr<CommLedger> own, CommLedger* ledger,
          const ContextOptions& opt);

  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<CommLedger> own_;
  CommLedger* ledger_;
  comm::Comm comm_;
  std::unique_ptr<comm::CommCache> cache_;  // after comm_: destroyed (freed) before it
  ComputeMode compute_ = ComputeMode::Run;
  std::shared_ptr<const KernelTimes> product_times_;
  std::string machine_file_;
};

}  // namespace tessel

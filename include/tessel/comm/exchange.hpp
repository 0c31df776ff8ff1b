#pragma once
/// @file exchange.hpp
/// The one executor of counted exchanges: comm::Exchange<T, Owner> runs an ExchangePlan
/// (exchange_plan.hpp: per peer, which pieces go and come) over a communicator, `width`
/// elements of T per item, one message (or one collective call) per peer whatever the width,
/// by one of the strategies of ExchangeStrategy. The stencil's halo (Exchanger), the dense
/// redistribution (layout::redistribute) and the packed exchange of the block-sparse code
/// (packed_exchange.hpp) all run on it. It is templated on who owns the buffers:
///   BufferOwner::Executor  the executor allocates the send and receive buffers once (a
///                          persistent request binds them; the node-shared strategy places
///                          same-node pieces in a shared window): the caller packs into
///                          send_buffer() or send_piece(q) and reads recv_buffer() or
///                          recv_piece(q). Every strategy.
///   BufferOwner::Caller    the caller passes its own buffers to start() on every exchange
///                          (no copy in or out): p2p, alltoallv, ialltoallv, neighbor.
///
/// In one place, whatever the strategy:
/// - the ledger: every exchange records into the communicator's ledger, in the phase current
///   at start(), by the rule of shared/tools/commcount: the collective strategies as one call
///   with payload sum(send) + sum(recv) bytes (all peers are other ranks), p2p as messages
///   (Comm::isend/irecv, which cut a message above the MPI int count limit into pieces);
/// - the failure notices: completion goes through comm's RequestSet (test() is one
///   MPI_Testsome pass; wait() polls, yields, throws PeerFailure on a failure notice; the
///   traced transfers complete in the trace when their request does); from the first post of
///   an exchange until it completes, an ExchangeGuard sends failure notices should this rank
///   leave by an exception (on the communicator, and on the node communicator of a node-shared
///   window); an executor destroyed with an exchange outstanding waits for it or, while
///   unwinding, abandons it and notifies the peers (RequestSet's failure safety).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/comm/exchange_plan.hpp"
#include "tessel/comm/mpi_type.hpp"
#include "tessel/comm/tags.hpp"
#include "tessel/core/uninit_vector.hpp"

namespace tessel::comm {

/// Strategy values of an exchange.
struct ExchangeOptions {
  ExchangeStrategy strategy = ExchangeStrategy::P2P;
  int tag = tag::kHalo;  ///< the tag of the p2p messages (tags.hpp)
  /// NodeShared only: ranks per emulated node (Comm::node_size's meaning; 0 = the real node).
  int node_size = 0;
};

/// Who owns an exchange's buffers (see the file comment).
enum class BufferOwner { Executor, Caller };

namespace detail {

class ExchangeMover;  // one strategy's MPI calls (src/comm/exchange_mover.hpp)
class NodeWindow;     // node-shared: the same-node pieces' window (src/comm/exchange_mover.hpp)

/// One item of an exchange as MPI sees it: `width` elements of `type`, `size` bytes each.
struct ExchangeItem {
  MPI_Datatype type;
  std::size_t size;
  int width;
};

/// The untyped executor behind Exchange<T, Owner> (use that): the strategy, the buffers when
/// it owns them, the request set, the failure guard and the ledger. Not thread safe.
class ExchangeCore {
 public:
  /// Collective over `c` for neighbor and persistent (the graph communicator, the persistent
  /// request) and node-shared (the node split, the window); not collective otherwise.
  /// Throws Error for a strategy the ownership cannot serve (persistent, node-shared: the
  /// executor's buffers) and for node-shared with a self piece. `c` must outlive it.
  ExchangeCore(const Comm& c, ExchangePlan plan, const ExchangeOptions& opt, ExchangeItem item,
               bool own_buffers);
  ~ExchangeCore();
  ExchangeCore(const ExchangeCore&) = delete;
  ExchangeCore& operator=(const ExchangeCore&) = delete;

  void* send_buffer() { return send_.data(); }
  const void* recv_buffer() const { return recv_.data(); }
  void* send_piece(int q);
  const void* recv_piece(int q) const;
  /// recv, send: the caller's buffers (ignored when the executor owns them).
  void post_receives(void* recv);
  void start(const void* send, void* recv);
  bool test();
  void wait();
  void finish();
  const ExchangePlan& plan() const { return plan_; }
  const ExchangeOptions& options() const { return opt_; }
  int width() const { return item_.width; }

 private:
  void open();  // the failure guard of one exchange, from its first post until it completes
  std::int64_t bytes(std::int64_t items) const {
    return items * item_.width * static_cast<std::int64_t>(item_.size);
  }

  const Comm& comm_;
  ExchangePlan plan_;
  ExchangeOptions opt_;
  ExchangeItem item_;
  bool own_;                     // the executor owns the buffers
  std::int64_t coll_bytes_ = 0;  // a collective strategy's payload per exchange
  // Declaration order is destruction order reversed: the requests go first (waited for or
  // abandoned), then the guard, the strategy (a graph communicator, a persistent request),
  // the buffers, and last the window the requests' peers may still have stored into.
  std::unique_ptr<NodeWindow> window_;  // node-shared with a window on this node, else null
  ExchangePlan msgs_;                   // the pieces that go by MPI (plan_ less the window's)
  std::vector<std::int64_t> send_at_, recv_at_;  // per rank: piece's byte offset in msgs_, or -1
  UninitVector<std::max_align_t> send_, recv_;   // executor-owned buffers (empty otherwise)
  std::unique_ptr<ExchangeMover> mover_;
  bool receives_posted_ = false;
  std::optional<ExchangeGuard> guard_;
  RequestSet rs_;  // the outstanding requests of the current exchange (watches comm_)
};

}  // namespace detail

/// Executes one ExchangePlan repeatedly, `width` elements of T per item (item-major: an item's
/// elements are contiguous). Usage: post_receives() (optional, before packing); pack; start();
/// test() now and then; wait(); read; finish() (node-shared: ends the window epoch). With
/// BufferOwner::Executor the buffers are send_buffer()/recv_buffer() at the plan's offsets, or
/// per peer send_piece(q)/recv_piece(q) (the only way under node-shared); with
/// BufferOwner::Caller they are the arguments of post_receives(recv) and start(send, recv).
/// The self piece is copied in start(). Not thread safe.
template <class T, BufferOwner Owner = BufferOwner::Executor>
class Exchange {
  static constexpr bool kOwned = Owner == BufferOwner::Executor;

 public:
  /// Collective over `c` for neighbor, persistent and node-shared (see ExchangeCore); the
  /// plans of all ranks must mirror each other (what i sends to j, j receives from i). The plan
  /// is not checked here (make_exchanger agrees on it; the redistribution and the packed
  /// exchange compute theirs alike on every rank). `c` must outlive the executor.
  Exchange(const Comm& c, ExchangePlan plan, const ExchangeOptions& opt, int width = 1)
      : core_(c, std::move(plan), opt, {mpi_type<T>(), sizeof(T), width}, kOwned) {}

  /// Executor-owned: the buffers of all items (not under node-shared).
  T* send_buffer() { return static_cast<T*>(owned(core_.send_buffer())); }
  const T* recv_buffer() const { return static_cast<const T*>(owned(core_.recv_buffer())); }
  /// Executor-owned: where peer q's piece goes (contiguous), before start().
  T* send_piece(int q) { return static_cast<T*>(owned(core_.send_piece(q))); }
  /// Executor-owned: where peer q's piece is (contiguous), after wait().
  const T* recv_piece(int q) const { return static_cast<const T*>(owned(core_.recv_piece(q))); }

  /// Not collective. Optional, before packing: posts what needs no packed data (p2p: the
  /// receives, so that a peer's message matches a posted receive on arrival instead of waiting
  /// in the unexpected queue); the collective strategies post nothing. start() calls it when
  /// it was not called.
  void post_receives() { core_.post_receives(owned(nullptr)); }
  void post_receives(T* recv) { core_.post_receives(caller(recv)); }
  /// Collective over the communicator for the collective strategies (every rank calls it,
  /// including ranks with no peer), neighbour-wise for p2p and node-shared: posts the exchange
  /// (alltoallv completes it here) and copies the self piece.
  void start() { core_.start(owned(nullptr), nullptr); }
  void start(const T* send, T* recv) { core_.start(caller(send), recv); }
  /// Not collective. Drives progress (one MPI_Testsome pass: without an asynchronous progress
  /// thread, MPI moves a message only inside such calls); true once the exchange completed.
  bool test() { return core_.test(); }
  /// Not collective (node-shared: over the node). Blocks until the exchange has completed
  /// (polled, yields the core, throws PeerFailure on a failure notice).
  void wait() { core_.wait(); }
  /// Not collective. After reading: node-shared ends the window's access epoch.
  void finish() { core_.finish(); }

  int width() const { return core_.width(); }
  ExchangeStrategy strategy() const { return core_.options().strategy; }
  const ExchangePlan& plan() const { return core_.plan(); }

 private:
  template <class P>
  static P owned(P p) {
    static_assert(kOwned, "comm::Exchange: this call needs BufferOwner::Executor");
    return p;
  }
  template <class P>
  static P caller(P p) {
    static_assert(!kOwned, "comm::Exchange: this call needs BufferOwner::Caller");
    return p;
  }

  detail::ExchangeCore core_;
};

/// The stencil halo's executor: executor-owned buffers of doubles.
using Exchanger = Exchange<double>;

/// Collective over `c` (every rank calls it with its own plan; the plans must mirror each
/// other). Validates the plan (Error on every rank if any rank's plan is inconsistent or its
/// items x width exceed the MPI int count limit; InputError on every rank for a strategy this
/// MPI lacks, or node-shared, which has no contiguous buffers), and builds the executor:
/// neighbor and persistent create the distributed graph communicator here (freed with the
/// executor); persistent also binds its request to the buffers. `c` must outlive the executor.
std::unique_ptr<Exchanger> make_exchanger(const Comm& c, const ExchangePlan& plan, int width,
                                          ExchangeStrategy s);

}  // namespace tessel::comm

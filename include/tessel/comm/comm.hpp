#pragma once
/// @file comm.hpp
/// Comm: an RAII communicator handle whose every operation is recorded in a CommLedger.
/// This folder is the only place in tessel that calls MPI.
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "tessel/comm/mpi_type.hpp"
#include "tessel/comm/tags.hpp"
#include "tessel/core/error.hpp"
#include "tessel/core/ledger.hpp"

namespace tessel::comm {

/// MPI_Pcontrol(level): tells a profiling layer (e.g. shared/tools/commcount) to reset (2),
/// pause (0) or resume (1) counting. No effect without one.
void pcontrol(int level);

/// Not collective. MPI's text for the error code rc (MPI_Error_string), or "MPI error <rc>"
/// when MPI has none. The one error-string helper of tessel's MPI errors.
std::string mpi_error_string(int rc);
/// Throws MpiError naming the call and mpi_error_string(rc) when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* call);

/// Collective over `c`, the window's communicator (the RAII release of Window and
/// SharedWindow): closes an open lock_all epoch when `locked`, waits for every rank of `c` in
/// a polled arrival barrier (MPI_Win_free synchronises, and under MPICH busy-polls while it
/// waits: docs/mpich.md), frees `win` (skipped after MPI_Finalize); afterwards win ==
/// MPI_WIN_NULL and locked == false. A null window is left alone. Should a failure notice
/// arrive on `c` during the arrival, the window is dropped without the collective free
/// (leaked rather than hang on a rank that left).
void free_window(MPI_Win& win, bool& locked, MPI_Comm c) noexcept;

class RequestSet;
class CommCache;

/// Tag of failure notices (below the P2P collectives' range; no other tessel message uses it).
inline constexpr int kFailureTag = tag::kFailure;

/// Not collective. Sends a failure notice to every rank of `c`, the caller included (small
/// messages that are never received: they mark `c`). Every later tessel wait on `c`, on any
/// rank, then throws PeerFailure, and Window/SharedWindow/File over `c` skip their collective
/// free (the handle is leaked rather than hang on a peer that left). Called by RequestSet when a
/// rank leaves an exchange with requests outstanding. Null `c`: nothing.
void notify_failure(MPI_Comm c) noexcept;
/// Not collective. True when a failure notice is pending on `c` (MPI_Iprobe; consumes nothing).
bool failure_pending(MPI_Comm c) noexcept;
/// Not collective. Throws PeerFailure when failure_pending(c).
void throw_if_failed(MPI_Comm c);

/// RAII guard of a section that every rank must complete once it has started (an exchange
/// after its agreed checks): if this rank leaves the section by an exception, failure notices
/// go out on the guarded communicators (notify_failure), so peers waiting on it in tessel
/// throw PeerFailure instead of hanging. Not collective.
class ExchangeGuard {
 public:
  explicit ExchangeGuard(MPI_Comm c) { add(c); }
  ExchangeGuard(const ExchangeGuard&) = delete;
  ExchangeGuard& operator=(const ExchangeGuard&) = delete;
  ~ExchangeGuard();
  void add(MPI_Comm c) {
    if (c != MPI_COMM_NULL) comms_.push_back(c);
  }

 private:
  int uncaught_ = std::uncaught_exceptions();
  std::vector<MPI_Comm> comms_;
};

/// Test-only settings of a communicator, inherited by the Comms duplicated or split from it
/// (Context::set_testing sets them on a Context's communicator). Every rank must use the same.
struct TestSettings {
  /// Most items one MPI call carries: longer point-to-point messages, collectives and one-sided
  /// operations are sent as several calls of at most this many items (the ledger records the
  /// same bytes, and one message / call / op per piece, as an MPI profiler would see).
  /// Production: INT_MAX, the MPI int count limit. Tests lower it to run the pieces path.
  std::int64_t max_message_items = INT_MAX;
  /// Called with the name of a point inside an exchange (e.g. "redistribute: posted", after
  /// the receives are posted and before anything is sent); a test throws from it on one rank.
  std::function<void(const std::string& point)> at_point;
  /// Called with the name of a point where a buffer received from other ranks is about to be
  /// read (e.g. "finalize: received"), its address and length in bytes; a test changes the
  /// bytes on one rank to feed a malformed message to the checks that follow.
  std::function<void(const std::string& point, void* data, std::size_t bytes)> at_received;
};

/// Completion token of one operation posted into a RequestSet: it may consist of many
/// requests, including requests that continuations post later (a pipelined point-to-point
/// collective). Copies share the same state. A default-constructed token is done.
class Pending {
 public:
  /// Not collective. True when every request posted under this token has completed and its
  /// continuation has run.
  bool done() const { return !n_ || *n_ == 0; }

 private:
  friend class RequestSet;
  std::shared_ptr<std::int64_t> n_;
};

/// A set of outstanding nonblocking requests, and a small progress engine: a request may carry
/// a continuation, run (on the calling thread, inside test/wait) once the request completed;
/// it receives the set and may post further requests into it. Waits for all of them (and
/// runs all continuations) on destruction. Not thread safe.
///
/// Failure safety: the set remembers the communicators it posted on (watch()). When a wait
/// starts and while nothing completes, it checks them for failure notices and throws
/// PeerFailure when one is pending. Destroyed during stack unwinding (or when its last wait threw) with requests
/// outstanding, it does not wait for them: it sends a failure notice on every watched
/// communicator (notify_failure), cancels its receives, gives the rest one second to complete
/// and leaves what still remains to MPI (a send no peer will receive, a collective). So a rank
/// that leaves an exchange with an error ends the waits of its peers within seconds instead
/// of hanging them; peers that had already finished fail at their next wait on that
/// communicator.
class RequestSet {
 public:
  /// What runs when a request completes; may call rs.add(...) to post more.
  using Then = std::function<void(RequestSet& rs)>;

  RequestSet() = default;
  RequestSet(RequestSet&&) noexcept = default;
  RequestSet& operator=(RequestSet&& o) noexcept;
  RequestSet(const RequestSet&) = delete;
  RequestSet& operator=(const RequestSet&) = delete;
  ~RequestSet();

  /// Slot for one request without continuation or token. The pointer is valid until the next
  /// add(), test or wait.
  MPI_Request* add() { return add_entry(nullptr, Then{}, false); }
  /// As add(), for a point-to-point receive (cancelled when the set is abandoned).
  MPI_Request* add_recv() { return add_entry(nullptr, Then{}, true); }
  /// As add_recv(), with a continuation `then` run when it completes (the tracer's hook).
  MPI_Request* add_recv(Then then) { return add_entry(nullptr, std::move(then), true); }
  /// Slot for a started persistent request (MPI_Start'ed by its owner, who keeps and frees
  /// the handle): `req` is copied into the set, which completes it like any other request and
  /// then drops its copy (the request is inactive again and may be restarted). `then` (may be
  /// empty) runs when it completes. Not for a request that is not active.
  void add_started(MPI_Request req, Then then = {}) {
    *add_entry(nullptr, std::move(then), false) = req;
  }
  /// Remembers `c` (not null) as a communicator this set posts on: waits check it for failure
  /// notices; an abandoned set notifies it.
  void watch(MPI_Comm c);
  /// Slot for one request counted in `token`; `then` (may be empty) runs when it completes,
  /// before the token is released, so requests that `then` posts under the same token keep it
  /// open. The pointer is valid until the next add(), test or wait.
  MPI_Request* add(Pending& token, Then then = {});
  /// A new token, not yet done only once requests are added under it.
  static Pending make_pending();

  std::size_t size() const { return reqs_.size(); }
  bool empty() const { return reqs_.empty(); }
  /// Drives progress without blocking (tests every outstanding request once and runs the
  /// continuations of those that completed); true when all requests completed.
  bool test_all();
  /// Blocks until all complete (including those posted by continuations meanwhile). When
  /// nothing completes it yields the core, and after ~1000 idle tests sleeps 50 us between
  /// tests, so that oversubscribed ranks give up the core (MPICH busy-polls in MPI_Waitall).
  /// In the SMPI build (kSimulatedMpi) it blocks in MPI_Waitsome instead: there a failure
  /// notice that arrives while it blocks is not seen (SMPI reports the deadlock).
  void wait_all();
  /// Blocks until `token` is done, driving every outstanding request of the set meanwhile (so
  /// that other pipelined operations keep moving). Same polling as wait_all.
  void wait(const Pending& token);

 private:
  MPI_Request* add_entry(std::shared_ptr<std::int64_t> counter, Then then, bool recv);
  /// One MPI_Testsome pass (block: MPI_Waitsome, once every slot holds a request; the SMPI
  /// build's waits); returns the number of requests that completed. `only`: the counter of
  /// the token a blocking wait is for (wait_one).
  int progress(bool block, const std::int64_t* only = nullptr);
  /// For a blocking pass over many requests none of which has a continuation: MPI_Wait on
  /// the first (of `only`'s when given); returns its slot, or -1 when it did not wait.
  int wait_one(const std::int64_t* only);
  /// Nothing completed for `n` tests: yield the core (then, after a while, sleep briefly);
  /// throw PeerFailure on a failure notice.
  void idle(int n);
  /// Leaves the outstanding requests (see the class comment). noexcept.
  void abandon() noexcept;

  int uncaught_ = std::uncaught_exceptions();
  std::vector<MPI_Comm> comms_;  // watched communicators
  std::vector<char> recv_;       // parallel to reqs_: a p2p receive
  std::vector<MPI_Request> reqs_;
  std::vector<Then> thens_;                            // parallel to reqs_
  std::vector<std::shared_ptr<std::int64_t>> tokens_;  // parallel to reqs_ (may be null)
};

/// A communicator, owned (freed on destruction) or borrowed, plus the ledger it records into.
/// Copying is not allowed; dup() makes a new owned communicator.
class Comm {
 public:
  /// Borrows `c` (not freed). `ledger` may be null (nothing is recorded).
  Comm(MPI_Comm c, CommLedger* ledger) : comm_(c), owned_(false), ledger_(ledger) { init(); }
  Comm(Comm&& o) noexcept;
  Comm& operator=(Comm&& o) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();

  /// Collective: an owned duplicate recording into the same ledger (and the same test
  /// settings; so do split() and split_shared()). MPI_Comm_idup, waited for by polling.
  Comm dup() const;
  /// Collective: MPI_Comm_split; color < 0 gives a null Comm (is_null()).
  Comm split(int color, int key) const;
  /// Collective: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), ranks ordered as in this
  /// communicator: the ranks that share memory with the caller (its node).
  Comm split_shared() const;
  /// Not collective. The rank in `other` of each rank of this communicator (-1 when not in
  /// `other`), by MPI_Group_translate_ranks.
  std::vector<int> translate_ranks(const Comm& other) const;
  /// Collective over the listed ranks of `parent` only (MPI_Comm_create_group): an owned
  /// communicator whose rank i is parent rank ranks[i].
  static Comm create_group(MPI_Comm parent, const std::vector<int>& ranks, CommLedger* ledger);

  MPI_Comm raw() const { return comm_; }
  bool is_null() const { return comm_ == MPI_COMM_NULL; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  CommLedger* ledger() const { return ledger_; }
  /// Not collective, for tests only (see TestSettings).
  void set_testing(TestSettings s) {
    testing_ = std::make_shared<const TestSettings>(std::move(s));
  }
  /// Most items one MPI call carries (INT_MAX unless lowered by TestSettings).
  std::int64_t max_message_items() const {
    return testing_ ? testing_->max_message_items : std::int64_t{INT_MAX};
  }
  /// The cache of communicators and windows derived from this communicator (comm_cache.hpp),
  /// or null: a Context sets its own on its communicator; dup(), split() do not inherit it.
  CommCache* cache() const { return cache_; }
  /// Not collective. Borrows `c` (null: none) as cache(); it must outlive this Comm's use.
  void set_cache(CommCache* c) { cache_ = c; }
  /// Calls TestSettings::at_point(point) when set (tests inject failures there).
  void test_point(const char* point) const {
    if (testing_ && testing_->at_point) testing_->at_point(point);
  }
  /// Calls TestSettings::at_received(point, data, bytes) when set (tests corrupt a received
  /// buffer there). Nothing for an empty buffer.
  void test_received(const char* point, void* data, std::size_t bytes) const {
    if (testing_ && testing_->at_received && bytes > 0) testing_->at_received(point, data, bytes);
  }
  /// Ranks per emulated node of the node-shared paths (NodeComm via layout::redistribute):
  /// 0 = the real node. The owning Context sets it from its options (ContextOptions::node_size,
  /// core/context.hpp); dup(), split() and split_shared() inherit it.
  int node_size() const { return node_size_; }
  /// Not collective. Sets node_size() (n >= 0; the same on every rank).
  void set_node_size(int n) { node_size_ = n; }
  /// Not collective, but every rank must call it in the same order: the sequence number of the
  /// next P2P collective on this Comm (p2p_coll.hpp, its tag). Starts at 0 for every new
  /// communicator (dup, split, ...); a move carries it along.
  std::uint64_t next_p2p_seq() const { return p2p_seq_++; }

  // ---- point-to-point (recorded as p2p) ----
  /// Not collective. Posts a send of `count` items (any count >= 0: above
  /// max_message_items() it goes as several messages, received by the matching irecv);
  /// completes in `rs`.
  template <class T>
  void isend(const T* buf, std::int64_t count, int dest, int tag, RequestSet& rs) const {
    isend_bytes(buf, count, mpi_type<T>(), sizeof(T), dest, tag, rs);
  }
  /// Not collective. Posts a receive of exactly `count` items.
  template <class T>
  void irecv(T* buf, std::int64_t count, int src, int tag, RequestSet& rs) const {
    irecv_bytes(buf, count, mpi_type<T>(), sizeof(T), src, tag, rs);
  }
  /// The untyped forms of isend and irecv: `count` items of type `t`, `sz` bytes each.
  void isend_bytes(const void* buf, std::int64_t count, MPI_Datatype t, std::size_t sz, int dest,
                   int tag, RequestSet& rs) const;
  void irecv_bytes(void* buf, std::int64_t count, MPI_Datatype t, std::size_t sz, int src, int tag,
                   RequestSet& rs) const;

  // ---- collectives (recorded with the payload rule of shared/tools/commcount) ----
  // Blocking for the caller, but posted nonblocking and waited for by RequestSet's polling
  // (sleeps when nothing moves, so oversubscribed ranks yield the core under MPICH too; throws
  // PeerFailure on a failure notice). allreduce and bcast go in pieces of at most
  // max_message_items() items (one call each in the ledger).
  /// Collective. In-place sum/min/max over all ranks.
  template <class T>
  void allreduce(T* buf, int count, MPI_Op op) const {
    allreduce_raw(buf, count, mpi_type<T>(), sizeof(T), op);
  }
  template <class T>
  T allreduce_value(T v, MPI_Op op) const {
    allreduce(&v, 1, op);
    return v;
  }
  /// Collective. Broadcast from root.
  template <class T>
  void bcast(T* buf, int count, int root) const {
    bcast_raw(buf, count, mpi_type<T>(), sizeof(T), root);
  }
  /// Collective. Every rank contributes `count` items; recv holds size()*count.
  template <class T>
  void allgather(const T* send, int count, T* recv) const {
    allgather_raw(send, count, recv, mpi_type<T>(), sizeof(T));
  }
  /// Collective.
  void barrier() const;

 private:
  void init();
  void allreduce_raw(void* buf, int count, MPI_Datatype t, std::size_t sz, MPI_Op op) const;
  void bcast_raw(void* buf, int count, MPI_Datatype t, std::size_t sz, int root) const;
  void allgather_raw(const void* send, int count, void* recv, MPI_Datatype t, std::size_t sz) const;
  PhaseCounts* counts() const { return ledger_ ? &ledger_->now() : nullptr; }

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  CommLedger* ledger_ = nullptr;
  int rank_ = -1, size_ = 0;
  std::shared_ptr<const TestSettings> testing_;  // null: production settings
  int node_size_ = 0;                            // 0: the real node
  mutable std::uint64_t p2p_seq_ = 0;            // P2P collectives posted on this Comm
  CommCache* cache_ = nullptr;                   // borrowed (the owning Context's)
};

}  // namespace tessel::comm

#include "tessel/comm/comm.hpp"

#include "tessel/core/build.hpp"
#include "tessel/core/timer.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "pieces.hpp"
#include "poll.hpp"
#include "trace_hooks.hpp"

namespace tessel::comm {

void pcontrol(int level) {
  // SMPI has no MPI_Pcontrol (it aborts the simulation), and no profiler to tell.
  if constexpr (!kSimulatedMpi) MPI_Pcontrol(level);
}

std::string mpi_error_string(int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) return detail::concat("MPI error ", rc);
  return std::string(msg, static_cast<std::size_t>(len));
}

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  throw MpiError(detail::concat(call, " failed: ", mpi_error_string(rc)));
}

// ---------------------------------------------------------------- failure notices
void notify_failure(MPI_Comm c) noexcept {
  if (c == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  static const int kNotice = 1;  // the payload outlives every send
  int size = 0;
  if (MPI_Comm_size(c, &size) != MPI_SUCCESS) return;
  for (int r = 0; r < size; ++r) {
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Isend(&kNotice, 1, MPI_INT, r, kFailureTag, c, &req) == MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

bool failure_pending(MPI_Comm c) noexcept {
  if (c == MPI_COMM_NULL) return false;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return false;
  int flag = 0;
  MPI_Status st;
  if (MPI_Iprobe(MPI_ANY_SOURCE, kFailureTag, c, &flag, &st) != MPI_SUCCESS) return false;
  return flag != 0;
}

void throw_if_failed(MPI_Comm c) {
  if (c == MPI_COMM_NULL) return;
  int flag = 0;
  MPI_Status st;
  check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kFailureTag, c, &flag, &st), "MPI_Iprobe");
  if (flag)
    throw PeerFailure(
        detail::concat("rank ", st.MPI_SOURCE,
                       " of a communicator of this call left an exchange with an "
                       "error (see that rank's message); this Context cannot be used any more"));
}

ExchangeGuard::~ExchangeGuard() {
  if (std::uncaught_exceptions() <= uncaught_) return;
  for (MPI_Comm c : comms_)
    if (!failure_pending(c)) notify_failure(c);
}

// ---------------------------------------------------------------- RequestSet
namespace {
constexpr bool kBlockingWaits = kSimulatedMpi;  // see back_off
}  // namespace

RequestSet& RequestSet::operator=(RequestSet&& o) noexcept {
  if (this != &o) {
    try {
      wait_all();
    } catch (...) { abandon(); }
    reqs_ = std::move(o.reqs_);
    thens_ = std::move(o.thens_);
    tokens_ = std::move(o.tokens_);
    recv_ = std::move(o.recv_);
    comms_ = std::move(o.comms_);
    o.reqs_.clear();
    o.thens_.clear();
    o.tokens_.clear();
    o.recv_.clear();
    o.comms_.clear();
  }
  return *this;
}

RequestSet::~RequestSet() {
  if (std::uncaught_exceptions() > uncaught_) {  // unwinding: never block on peers
    abandon();
    return;
  }
  try {
    wait_all();
  } catch (...) { abandon(); }
}

void RequestSet::abandon() noexcept {
  if (reqs_.empty()) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    for (MPI_Comm c : comms_)
      if (!failure_pending(c)) notify_failure(c);
    for (std::size_t i = 0; i < reqs_.size(); ++i)
      if (recv_[i] && reqs_[i] != MPI_REQUEST_NULL) MPI_Cancel(&reqs_[i]);
    // Cancelled receives and sends already matched complete quickly; give them a second.
    const Stopwatch waited;
    int flag = 0;
    while (!flag) {
      if (MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag, MPI_STATUSES_IGNORE) !=
          MPI_SUCCESS)
        break;
      if (flag || waited.seconds() > 1.0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  reqs_.clear();  // what remains is left to MPI
  thens_.clear();
  tokens_.clear();
  recv_.clear();
}

void RequestSet::watch(MPI_Comm c) {
  if (c == MPI_COMM_NULL) return;
  if (std::find(comms_.begin(), comms_.end(), c) == comms_.end()) comms_.push_back(c);
}

Pending RequestSet::make_pending() {
  Pending p;
  p.n_ = std::make_shared<std::int64_t>(0);
  return p;
}

MPI_Request* RequestSet::add_entry(std::shared_ptr<std::int64_t> counter, Then then, bool recv) {
  if (counter) ++*counter;
  reqs_.push_back(MPI_REQUEST_NULL);
  thens_.push_back(std::move(then));
  tokens_.push_back(std::move(counter));
  recv_.push_back(recv ? 1 : 0);
  return &reqs_.back();
}

MPI_Request* RequestSet::add(Pending& token, Then then) {
  if (!token.n_) token.n_ = std::make_shared<std::int64_t>(0);
  return add_entry(token.n_, std::move(then), false);
}

// ---------------------------------------------------------------- polled waits (poll.hpp)
// Under SMPI (kSimulatedMpi) the waits block instead (progress(true), MPI_Wait): the ranks are
// simulated actors that do not compete for a core, a real sleep or yield would be measured and
// charged as computation, and every MPI_Test that finds nothing advances the simulated clock
// by SMPI's injected smpi/test time (growing with repeated tests), which would quantise waits.
// Idle tests before back_off yields the core (spinning keeps the latency of a message that
// is about to arrive), before it sleeps instead (oversubscribed ranks give the core to the
// rank that will send), and how long it sleeps.
constexpr int kSpinTests = 64, kYieldTests = 1024;
constexpr auto kIdleSleep = std::chrono::microseconds(50);
void back_off(int idle_tests) {
  if (kSimulatedMpi || idle_tests <= kSpinTests) return;
  if (idle_tests < kYieldTests)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(kIdleSleep);
}

int wait_polled(MPI_Request& r, MPI_Status* st) noexcept {
  if constexpr (kSimulatedMpi) return MPI_Wait(&r, st);  // see back_off
  for (int idle = 1;; idle = std::min(idle + 1, 1 << 20)) {
    int flag = 0;
    const int rc = MPI_Test(&r, &flag, st);
    if (rc != MPI_SUCCESS || flag) return rc;
    back_off(idle);
  }
}

void arrive(MPI_Comm c, bool watch) {
  if (c == MPI_COMM_NULL) return;
  RequestSet
      rs;  // by default no watch(c): c may be the caller's own communicator (no probing on it)
  if (watch) rs.watch(c);
  if constexpr (kSimulatedMpi) {
    check_mpi(PMPI_Barrier(c), "MPI_Barrier");  // see kBlockingCollectives
  } else {
    check_mpi(PMPI_Ibarrier(c, rs.add()), "MPI_Ibarrier");
    rs.wait_all();
  }
}

void RequestSet::idle(int n) {
  for (MPI_Comm c : comms_) throw_if_failed(c);
  back_off(n);
}

int RequestSet::progress(bool block, const std::int64_t* only) {
  if (reqs_.empty()) return 0;
  const int n = static_cast<int>(reqs_.size());
  std::vector<int> idx(static_cast<std::size_t>(n));
  int out = 0;
  const int one = block ? wait_one(only) : -1;
  // Blocking only while every slot holds a request: an empty slot counts as done at once
  // (below), and its continuation may be what a peer waits for.
  if (one >= 0)
    out = 0;  // slot `one` completed (below)
  else if (block && std::find(reqs_.begin(), reqs_.end(), MPI_REQUEST_NULL) == reqs_.end())
    check_mpi(MPI_Waitsome(n, reqs_.data(), &out, idx.data(), MPI_STATUSES_IGNORE), "MPI_Waitsome");
  else
    check_mpi(MPI_Testsome(n, reqs_.data(), &out, idx.data(), MPI_STATUSES_IGNORE), "MPI_Testsome");
  // Completed requests are now MPI_REQUEST_NULL; so are slots that were never filled or that
  // were already inactive (MPI_Testsome then reports MPI_UNDEFINED): all of them are done. A
  // started persistent request (add_started) stays allocated when it completes: MPI_Testsome
  // names it in idx and marks it inactive; it is done too (its owner frees it).
  std::vector<char> fin(static_cast<std::size_t>(n), 0);
  if (one >= 0) fin[static_cast<std::size_t>(one)] = 1;
  if (out != MPI_UNDEFINED)
    for (int k = 0; k < out; ++k)
      fin[static_cast<std::size_t>(idx[static_cast<std::size_t>(k)])] = 1;
  idx.clear();
  for (int i = 0; i < n; ++i)
    if (fin[static_cast<std::size_t>(i)] || reqs_[static_cast<std::size_t>(i)] == MPI_REQUEST_NULL)
      idx.push_back(i);
  if (idx.empty()) return 0;
  out = static_cast<int>(idx.size());
  // Take the completed entries out first: continuations may add() to the vectors.
  std::vector<std::pair<Then, std::shared_ptr<std::int64_t>>> done;
  done.reserve(idx.size());
  for (int i : idx)
    done.emplace_back(std::move(thens_[static_cast<std::size_t>(i)]),
                      std::move(tokens_[static_cast<std::size_t>(i)]));
  std::size_t w = 0;
  for (std::size_t r = 0, d = 0; r < reqs_.size(); ++r) {
    if (d < idx.size() && static_cast<std::size_t>(idx[d]) == r) {
      ++d;
      continue;
    }
    if (w != r) {
      reqs_[w] = reqs_[r];
      thens_[w] = std::move(thens_[r]);
      tokens_[w] = std::move(tokens_[r]);
      recv_[w] = recv_[r];
    }
    ++w;
  }
  reqs_.resize(w);
  thens_.resize(w);
  tokens_.resize(w);
  recv_.resize(w);
  for (auto& [then, token] : done) {
    if (then) then(*this);
    if (token) --*token;
  }
  return out;
}

int RequestSet::wait_one(const std::int64_t* only) {
  // SMPI (the only build whose waits block, kBlockingWaits): MPI_Waitsome over n requests
  // costs SimGrid O(n) per completion (every completion withdraws the wait from all n), so
  // ranks with hundreds of requests (an exchange with every peer) made the simulation
  // quadratic: a 256-rank spgemm spent 95% of the simulator's time there. When no request of
  // the set has a continuation, the order in which they complete cannot change what this rank
  // posts, so blocking on one of them (MPI_Wait) is as good; under a token, only on one of
  // the token's (another request may need what this rank does after the wait).
  constexpr std::size_t kFew = 16;  // below this, MPI_Waitsome is cheap
  if (reqs_.size() <= kFew) return -1;
  for (const Then& t : thens_)
    if (t) return -1;
  for (std::size_t i = 0; i < reqs_.size(); ++i) {
    if (reqs_[i] == MPI_REQUEST_NULL) return -1;  // collect the empty slots first (no wait)
    if (only != nullptr && tokens_[i].get() != only) continue;
    check_mpi(MPI_Wait(&reqs_[i], MPI_STATUS_IGNORE), "MPI_Wait");
    return static_cast<int>(i);
  }
  return -1;
}

bool RequestSet::test_all() {
  progress(false);
  return reqs_.empty();
}

void RequestSet::wait_all() {
  if (reqs_.empty()) return;
  for (MPI_Comm c : comms_) throw_if_failed(c);  // a marked communicator fails at once
  int idle = 0;
  while (!reqs_.empty()) {
    // Spin briefly for latency, then sleep so oversubscribed ranks give up the core (SMPI:
    // block in MPI_Waitsome, see back_off).
    if (progress(kBlockingWaits) > 0)
      idle = 0;
    else if (++idle > 64)
      this->idle(idle = std::min(idle, 1 << 20));
  }
}

void RequestSet::wait(const Pending& token) {
  if (token.done()) return;
  for (MPI_Comm c : comms_) throw_if_failed(c);  // a marked communicator fails at once
  int idle = 0;
  while (!token.done()) {
    TESSEL_CHECK(!reqs_.empty(), Error,
                 "RequestSet::wait: the token has outstanding requests that are not in this set");
    if (progress(kBlockingWaits, token.n_.get()) > 0)
      idle = 0;
    else if (++idle > 64)
      this->idle(idle = std::min(idle, 1 << 20));
  }
}

// ---------------------------------------------------------------- Comm
void Comm::init() {
  if (comm_ == MPI_COMM_NULL) return;
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

Comm::Comm(Comm&& o) noexcept
    : comm_(o.comm_),
      owned_(o.owned_),
      ledger_(o.ledger_),
      rank_(o.rank_),
      size_(o.size_),
      testing_(std::move(o.testing_)),
      node_size_(o.node_size_),
      p2p_seq_(o.p2p_seq_),
      cache_(o.cache_) {
  o.comm_ = MPI_COMM_NULL;
  o.owned_ = false;
  o.cache_ = nullptr;
}

Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    if (owned_ && comm_ != MPI_COMM_NULL && !failure_pending(comm_)) MPI_Comm_free(&comm_);
    comm_ = o.comm_;
    owned_ = o.owned_;
    ledger_ = o.ledger_;
    rank_ = o.rank_;
    size_ = o.size_;
    testing_ = std::move(o.testing_);
    node_size_ = o.node_size_;
    p2p_seq_ = o.p2p_seq_;
    cache_ = o.cache_;
    o.comm_ = MPI_COMM_NULL;
    o.owned_ = false;
    o.cache_ = nullptr;
  }
  return *this;
}

Comm::~Comm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // A communicator marked by a failure notice is not freed (leaked): messages an abandoned
  // exchange left unreceived on it (the notices themselves, sends whose receive was cancelled)
  // must never match a later communicator that reuses its context id (MPICH does).
  if (owned_ && comm_ != MPI_COMM_NULL && !finalized && !failure_pending(comm_))
    MPI_Comm_free(&comm_);
}

Comm Comm::dup() const {
  MPI_Comm c = MPI_COMM_NULL;
  // MPI_Comm_idup waited for by polling (poll.hpp): the nonblocking form of MPI_Comm_dup,
  // in which MPICH would busy-poll for the last rank (context id agreement).
  if constexpr (kSimulatedMpi) {
    // SMPI has no MPI_Comm_idup; its blocking MPI_Comm_dup is the same duplicate and does not
    // busy-poll (the ranks are simulated).
    check_mpi(MPI_Comm_dup(comm_, &c), "MPI_Comm_dup");
  } else {
    MPI_Request r = MPI_REQUEST_NULL;
    check_mpi(MPI_Comm_idup(comm_, &c, &r), "MPI_Comm_idup");
    check_mpi(wait_polled(r, MPI_STATUS_IGNORE), "MPI_Comm_idup (wait)");
  }
  Comm out(c, ledger_);
  out.owned_ = true;
  out.testing_ = testing_;
  out.node_size_ = node_size_;
  return out;
}

Comm Comm::split(int color, int key) const {
  MPI_Comm c;
  arrive(comm_);  // polled: MPICH busy-polls in communicator creation (poll.hpp)
  check_mpi(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &c), "MPI_Comm_split");
  Comm out(c, ledger_);
  out.owned_ = (c != MPI_COMM_NULL);
  out.testing_ = testing_;
  out.node_size_ = node_size_;
  return out;
}

Comm Comm::split_shared() const {
  MPI_Comm c = MPI_COMM_NULL;
  arrive(comm_);  // polled: MPICH busy-polls in communicator creation (poll.hpp)
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &c),
            "MPI_Comm_split_type");
  Comm out(c, ledger_);
  out.owned_ = (c != MPI_COMM_NULL);
  out.testing_ = testing_;
  out.node_size_ = node_size_;
  return out;
}

std::vector<int> Comm::translate_ranks(const Comm& other) const {
  std::vector<int> mine(static_cast<std::size_t>(size_)), theirs(mine.size(), MPI_UNDEFINED);
  for (int i = 0; i < size_; ++i) mine[static_cast<std::size_t>(i)] = i;
  MPI_Group g1, g2;
  check_mpi(MPI_Comm_group(comm_, &g1), "MPI_Comm_group");
  check_mpi(MPI_Comm_group(other.comm_, &g2), "MPI_Comm_group");
  int rc = MPI_Group_translate_ranks(g1, size_, mine.data(), g2, theirs.data());
  MPI_Group_free(&g1);
  MPI_Group_free(&g2);
  check_mpi(rc, "MPI_Group_translate_ranks");
  for (int& r : theirs)
    if (r == MPI_UNDEFINED) r = -1;
  return theirs;
}

Comm Comm::create_group(MPI_Comm parent, const std::vector<int>& ranks, CommLedger* ledger) {
  MPI_Group world_group, group;
  check_mpi(MPI_Comm_group(parent, &world_group), "MPI_Comm_group");
  int rc = MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &group);
  MPI_Group_free(&world_group);
  check_mpi(rc, "MPI_Group_incl");
  MPI_Comm c = MPI_COMM_NULL;
  rc = MPI_Comm_create_group(parent, group, tag::kCreateGroup, &c);
  MPI_Group_free(&group);
  check_mpi(rc, "MPI_Comm_create_group");
  Comm out(c, ledger);
  out.owned_ = (c != MPI_COMM_NULL);
  return out;
}

void Comm::isend_bytes(const void* buf, std::int64_t count, MPI_Datatype t, std::size_t sz,
                       int dest, int tag, RequestSet& rs) const {
  rs.watch(comm_);
  Tracer* tr = dest != MPI_PROC_NULL ? tracer_of(ledger_) : nullptr;
  const auto* p = static_cast<const char*>(buf);
  const std::int64_t pieces =
      for_each_piece(count, max_message_items(), [&](std::int64_t at, int n) {
        MPI_Request* slot = trace::add(
            rs, tr, "p2p_send", dest, static_cast<std::int64_t>(n) * static_cast<std::int64_t>(sz));
        check_mpi(MPI_Isend(p + at * static_cast<std::int64_t>(sz), n, t, dest, tag, comm_, slot),
                  "MPI_Isend");
      });
  if (auto* k = counts(); k && dest != MPI_PROC_NULL) {
    k->p2p_sent_bytes += count * static_cast<std::int64_t>(sz);
    k->p2p_sent_msgs += pieces;
  }
}

void Comm::irecv_bytes(void* buf, std::int64_t count, MPI_Datatype t, std::size_t sz, int src,
                       int tag, RequestSet& rs) const {
  rs.watch(comm_);
  Tracer* tr = src != MPI_PROC_NULL ? tracer_of(ledger_) : nullptr;
  auto* p = static_cast<char*>(buf);
  const std::int64_t pieces =
      for_each_piece(count, max_message_items(), [&](std::int64_t at, int n) {
        MPI_Request* slot = trace::add_recv(
            rs, tr, src, static_cast<std::int64_t>(n) * static_cast<std::int64_t>(sz));
        check_mpi(MPI_Irecv(p + at * static_cast<std::int64_t>(sz), n, t, src, tag, comm_, slot),
                  "MPI_Irecv");
      });
  if (auto* k = counts(); k && src != MPI_PROC_NULL) {
    k->p2p_recv_bytes += count * static_cast<std::int64_t>(sz);
    k->p2p_recv_msgs += pieces;
  }
}

namespace {
// Waits for the `calls` requests of one blocking collective in `rs` (polled, as every tessel
// wait), then records them: `bytes` of payload in `calls` calls in the ledger counts `k`, and
// one "coll" transfer since `t0` on the tracer `tr` (either may be null).
void complete_collective(RequestSet& rs, PhaseCounts* k, Tracer* tr, std::int64_t bytes,
                         std::int64_t calls, double t0) {
  rs.wait_all();
  if (k) {
    k->coll_bytes += bytes;
    k->coll_calls += calls;
  }
  if (tr) tr->transfer_since("coll", -1, bytes, t0);
}

// Buffers of collectives abandoned after a PeerFailure: MPI may still write them, so they are
// kept (reachable) until the process ends, as the marked communicator itself is never freed.
void keep_for_mpi(std::unique_ptr<char[]> p) {
  static std::mutex m;
  static std::vector<std::unique_ptr<char[]>> kept;
  const std::lock_guard<std::mutex> lock(m);
  kept.push_back(std::move(p));
}

// The buffer a blocking collective runs on: a heap copy of the caller's. When a peer's failure
// ends the wait (PeerFailure: the RequestSet abandons the collective, which MPI may still
// progress among the other ranks and write into), the copy is kept for MPI (keep_for_mpi)
// rather than freed under it, and the caller's buffer (often on the stack) is never written
// again.
class Staged {
 public:
  Staged(void* user, std::size_t bytes, bool copy_in)
      : user_(static_cast<char*>(user)),
        bytes_(bytes),
        p_(std::make_unique<char[]>(bytes > 0 ? bytes : 1)) {
    if (copy_in && bytes > 0) std::memcpy(p_.get(), user_, bytes);
  }
  Staged(const Staged&) = delete;
  Staged& operator=(const Staged&) = delete;
  ~Staged() {
    if (std::uncaught_exceptions() > uncaught_) keep_for_mpi(std::move(p_));  // abandoned
  }
  char* data() const { return p_.get(); }
  void copy_out() const {
    if (bytes_ > 0) std::memcpy(user_, p_.get(), bytes_);
  }

 private:
  char* user_;
  std::size_t bytes_;
  std::unique_ptr<char[]> p_;
  int uncaught_ = std::uncaught_exceptions();
};
}  // namespace

// The blocking collectives of Comm are posted nonblocking and waited for by polling (MPICH
// busy-polls inside the blocking calls). In the SMPI build (kSimulatedMpi) they are the blocking
// calls: SMPI builds its nonblocking collectives from one request per peer and completes them
// in O(p^2) per rank, which made simulations of a few hundred ranks spend hours there, while
// its blocking ones are its tuned algorithms. The payload, and so the ledger, is the same.
constexpr bool kBlockingCollectives = kSimulatedMpi;

namespace {
// One in-place collective of `count` items of `sz` bytes on a staged copy of `buf` (copied in
// when copy_in), cut into pieces of at most max_items: post(piece, n, rs) calls MPI for each
// (blocking under kBlockingCollectives, else one request into rs); then waited for, recorded
// (complete_collective) and copied back.
template <class Post>
void staged_collective(MPI_Comm comm, void* buf, int count, std::size_t sz, bool copy_in,
                       std::int64_t max_items, PhaseCounts* k, Tracer* tr, Post&& post) {
  const double t0 = trace::begin(tr);
  const Staged st(buf, static_cast<std::size_t>(count) * sz, copy_in);  // outlives rs
  RequestSet rs;
  rs.watch(comm);
  char* p = st.data();
  const std::int64_t pieces = for_each_piece(count, max_items, [&](std::int64_t at, int n) {
    post(p + at * static_cast<std::int64_t>(sz), n, rs);
  });
  complete_collective(rs, k, tr, static_cast<std::int64_t>(count) * sz, pieces, t0);
  st.copy_out();
}
}  // namespace

void Comm::allreduce_raw(void* buf, int count, MPI_Datatype t, std::size_t sz, MPI_Op op) const {
  staged_collective(comm_, buf, count, sz, true, max_message_items(), counts(), tracer_of(ledger_),
                    [&](char* piece, int n, RequestSet& rs) {
                      if (kBlockingCollectives)
                        check_mpi(MPI_Allreduce(MPI_IN_PLACE, piece, n, t, op, comm_),
                                  "MPI_Allreduce");
                      else
                        check_mpi(MPI_Iallreduce(MPI_IN_PLACE, piece, n, t, op, comm_, rs.add()),
                                  "MPI_Iallreduce");
                    });
}

void Comm::bcast_raw(void* buf, int count, MPI_Datatype t, std::size_t sz, int root) const {
  staged_collective(comm_, buf, count, sz, rank_ == root, max_message_items(), counts(),
                    tracer_of(ledger_), [&](char* piece, int n, RequestSet& rs) {
                      if (kBlockingCollectives)
                        check_mpi(MPI_Bcast(piece, n, t, root, comm_), "MPI_Bcast");
                      else
                        check_mpi(MPI_Ibcast(piece, n, t, root, comm_, rs.add()), "MPI_Ibcast");
                    });
}

void Comm::allgather_raw(const void* send, int count, void* recv, MPI_Datatype t,
                         std::size_t sz) const {
  const double t0 = trace::begin(tracer_of(ledger_));
  const std::size_t bytes = static_cast<std::size_t>(count) * sz;
  const Staged in(const_cast<void*>(send), bytes, true);  // both outlive rs
  const Staged out(recv, bytes * static_cast<std::size_t>(size_), false);
  RequestSet rs;
  rs.watch(comm_);
  if (kBlockingCollectives)
    check_mpi(MPI_Allgather(in.data(), count, t, out.data(), count, t, comm_), "MPI_Allgather");
  else
    check_mpi(MPI_Iallgather(in.data(), count, t, out.data(), count, t, comm_, rs.add()),
              "MPI_Iallgather");
  // payload: own + (p-1) received
  complete_collective(rs, counts(), tracer_of(ledger_),
                      static_cast<std::int64_t>(count) * sz * size_, 1, t0);
  out.copy_out();
}

void Comm::barrier() const {
  const double t0 = trace::begin(tracer_of(ledger_));
  RequestSet rs;
  rs.watch(comm_);
  if (kBlockingCollectives)
    check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
  else
    check_mpi(MPI_Ibarrier(comm_, rs.add()), "MPI_Ibarrier");
  complete_collective(rs, counts(), tracer_of(ledger_), 0, 1, t0);
}

}  // namespace tessel::comm

// Pipelined chain collectives from point-to-point messages; see p2p_coll.hpp.
#include "tessel/comm/p2p_coll.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "tessel/core/trace.hpp"

namespace tessel::comm {

CollImpl parse_coll_impl(const std::string& s) {
  if (s == "mpi") return CollImpl::Mpi;
  if (s == "p2p") return CollImpl::P2P;
  throw InputError(
      detail::concat("collective implementation '", s, "' is not known (expected 'mpi' or 'p2p')"));
}

const char* to_string(CollImpl impl) { return impl == CollImpl::P2P ? "p2p" : "mpi"; }

std::int64_t segment_items(std::int64_t segment_bytes, std::size_t item_size) {
  TESSEL_CHECK(segment_bytes >= 1, InputError, "p2p collectives: segment of ", segment_bytes,
               " bytes (expected >= 1)");
  const auto sz = static_cast<std::int64_t>(item_size);
  std::int64_t items = std::max<std::int64_t>(1, segment_bytes / sz);
  return std::min<std::int64_t>(items, INT_MAX);
}

std::int64_t segment_count(std::int64_t count, std::int64_t segment_bytes, std::size_t item_size) {
  const std::int64_t items = segment_items(segment_bytes, item_size);
  return (count + items - 1) / items;
}

namespace {

// ---- the per-communicator sequence number that gives each collective its own tag ----
// The counter lives in the Comm (Comm::next_p2p_seq; a new communicator starts at 0 on every
// rank), not in process-global state.
int next_tag(const Comm& c) {
  const std::uint64_t seq = c.next_p2p_seq();
  return kP2PTagBase + static_cast<int>(seq % static_cast<std::uint64_t>(kP2PTagWindow));
}

// ---- one chain of segments ----
struct Chain {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::size_t size = 0;    // bytes per item
  std::int64_t count = 0;  // items
  std::int64_t items = 1;  // items per segment
  std::int64_t nseg = 0;
  int tag = 0;

  std::int64_t offset_bytes(std::int64_t s) const {
    return s * items * static_cast<std::int64_t>(size);
  }
  std::int64_t offset(std::int64_t s) const { return s * items; }
  int len(std::int64_t s) const { return static_cast<int>(std::min(items, count - s * items)); }
  /// `keep` (may be null) is held until the send completed: the owner of a buffer that the
  /// schedule allocated (the partial sums of a middle rank of a reduction).
  void send(RequestSet& rs, Pending& tok, const void* base, std::int64_t s, int dest,
            std::shared_ptr<const void> keep = nullptr) const {
    const char* p = static_cast<const char*>(base) + offset_bytes(s);
    RequestSet::Then then;
    if (keep) then = [keep = std::move(keep)](RequestSet&) {};
    rs.watch(comm);
    MPI_Request* r = rs.add(tok, std::move(then));
    check_mpi(MPI_Isend(p, len(s), type, dest, tag, comm, r), "MPI_Isend");
  }
  void recv(RequestSet& rs, Pending& tok, void* base, std::int64_t s, int src,
            RequestSet::Then then) const {
    char* p = static_cast<char*>(base) + offset_bytes(s);
    rs.watch(comm);
    MPI_Request* r = rs.add(tok, std::move(then));
    check_mpi(MPI_Irecv(p, len(s), type, src, tag, comm, r), "MPI_Irecv");
  }
};

/// Releases segments strictly in order: mark(s) then calls f(q) for every q of the completed
/// prefix not yet released. Keeps message order on a link equal to segment order.
struct InOrder {
  std::vector<char> ready;
  std::int64_t next = 0;
  template <class F>
  void mark(std::int64_t s, F&& f) {
    ready[static_cast<std::size_t>(s)] = 1;
    while (next < static_cast<std::int64_t>(ready.size()) && ready[static_cast<std::size_t>(next)])
      f(next++);
  }
};

Chain make_chain(const Comm& c, std::int64_t count, MPI_Datatype t, std::size_t sz,
                 std::int64_t segment_bytes) {
  Chain ch;
  ch.comm = c.raw();
  ch.type = t;
  ch.size = sz;
  ch.count = count;
  ch.items = segment_items(segment_bytes, sz);
  ch.nseg = (count + ch.items - 1) / ch.items;
  ch.tag = next_tag(c);
  return ch;
}

void validate(const Comm& c, std::int64_t count, int root, const char* what) {
  TESSEL_CHECK(!c.is_null(), InputError, what, ": null communicator");
  TESSEL_CHECK(count >= 0, InputError, what, ": count = ", count, " (expected >= 0)");
  TESSEL_CHECK(root >= 0 && root < c.size(), InputError, what, ": root = ", root,
               " (expected 0 <= root < ", c.size(), ")");
}

void record(const Comm& c, std::int64_t bytes, std::int64_t msgs, bool sends, bool recvs) {
  auto* l = c.ledger();
  if (!l || msgs == 0) return;
  auto& k = l->now();
  if (sends) {
    k.p2p_sent_bytes += bytes;
    k.p2p_sent_msgs += msgs;
  }
  if (recvs) {
    k.p2p_recv_bytes += bytes;
    k.p2p_recv_msgs += msgs;
  }
  if (Tracer* t = l->tracer()) {  // the chain's messages of this call, at once
    if (sends) t->transfer("p2p_send", -1, bytes);
    if (recvs) t->transfer("p2p_recv", -1, bytes);
  }
}

struct BcastState {
  Chain ch;
  void* buf = nullptr;
  int next = -1;  // -1: last of the chain
  InOrder fwd;
};

struct ReduceState {
  Chain red;  // toward the root
  Chain bc;   // allreduce only: from rank 0 outward
  const void* send = nullptr;
  void* recv = nullptr;
  std::vector<char> partial;  // middle ranks of the reduce chain
  AddFn add = nullptr;
  int to = -1, next = -1;  // reduce: toward the root; broadcast: away from rank 0
  InOrder fwd, fwd_bc;
};

// Posts the reduce chain of `st->red` (and, when `allreduce`, the broadcast chain of st->bc
// from the root, fed segment by segment by the reduction).
void post_reduce(const std::shared_ptr<ReduceState>& st, int rank, int m, int root, bool allreduce,
                 RequestSet& rs, Pending& tok) {
  const Chain& red = st->red;
  const int pos = (rank - root + m) % m;
  const int from = (rank + 1) % m;
  st->to = (rank - 1 + m) % m;
  st->next = pos < m - 1 ? (rank + 1) % m : -1;
  const auto n = static_cast<std::size_t>(red.nseg);
  st->fwd.ready.assign(n, 0);
  st->fwd_bc.ready.assign(n, 0);
  const std::int64_t sz = static_cast<std::int64_t>(red.size);

  if (pos == m - 1) {  // first of the reduce chain: its contribution as it is
    for (std::int64_t s = 0; s < red.nseg; ++s) red.send(rs, tok, st->send, s, st->to);
  } else if (pos > 0) {  // middle: partial(s) += own(s), then forward in order
    st->partial.resize(static_cast<std::size_t>(red.count * sz));
    for (std::int64_t s = 0; s < red.nseg; ++s)
      red.recv(rs, tok, st->partial.data(), s, from, [st, tok, s, sz](RequestSet& r) mutable {
        const Chain& c = st->red;
        st->add(st->partial.data() + c.offset(s) * sz,
                static_cast<const char*>(st->send) + c.offset(s) * sz, c.len(s));
        st->fwd.mark(s, [&](std::int64_t q) {
          c.send(r, tok, st->partial.data(), q, st->to, st);  // st owns `partial`
        });
      });
  } else {  // root: recv(s) = partial(s) + own(s); allreduce: broadcast it onward in order
    for (std::int64_t s = 0; s < red.nseg; ++s)
      red.recv(rs, tok, st->recv, s, from, [st, tok, s, sz, allreduce](RequestSet& r) mutable {
        const Chain& c = st->red;
        st->add(static_cast<char*>(st->recv) + c.offset(s) * sz,
                static_cast<const char*>(st->send) + c.offset(s) * sz, c.len(s));
        if (allreduce && st->next >= 0)
          st->fwd_bc.mark(s, [&](std::int64_t q) { st->bc.send(r, tok, st->recv, q, st->next); });
      });
  }
  if (allreduce && pos > 0) {  // broadcast chain from rank 0 (= root) into recv
    const int prev = st->to;
    for (std::int64_t s = 0; s < red.nseg; ++s) {
      RequestSet::Then then;
      if (st->next >= 0)
        then = [st, tok, s](RequestSet& r) mutable {
          st->fwd_bc.mark(s, [&](std::int64_t q) { st->bc.send(r, tok, st->recv, q, st->next); });
        };
      st->bc.recv(rs, tok, st->recv, s, prev, std::move(then));
    }
  }
}

}  // namespace

Pending p2p_ibcast_raw(const Comm& c, void* buf, std::int64_t count, MPI_Datatype t, std::size_t sz,
                       int root, RequestSet& rs, std::int64_t segment_bytes) {
  validate(c, count, root, "p2p ibcast");
  auto st = std::make_shared<BcastState>();
  st->ch = make_chain(c, count, t, sz, segment_bytes);  // takes a tag on every rank
  st->buf = buf;
  Pending tok = RequestSet::make_pending();
  const int m = c.size(), rank = c.rank();
  const Chain& ch = st->ch;
  if (m == 1 || ch.nseg == 0) return tok;
  const int pos = (rank - root + m) % m;
  const int prev = (rank - 1 + m) % m;
  st->next = pos < m - 1 ? (rank + 1) % m : -1;
  st->fwd.ready.assign(static_cast<std::size_t>(ch.nseg), 0);
  const std::int64_t bytes = count * static_cast<std::int64_t>(sz);
  record(c, bytes, ch.nseg, /*sends=*/pos<m - 1, /*recvs=*/pos> 0);

  if (pos == 0) {
    for (std::int64_t s = 0; s < ch.nseg; ++s) ch.send(rs, tok, buf, s, st->next);
    return tok;
  }
  for (std::int64_t s = 0; s < ch.nseg; ++s) {
    RequestSet::Then then;
    if (st->next >= 0)
      then = [st, tok, s](RequestSet& r) mutable {
        st->fwd.mark(s, [&](std::int64_t q) { st->ch.send(r, tok, st->buf, q, st->next); });
      };
    ch.recv(rs, tok, buf, s, prev, std::move(then));
  }
  return tok;
}

namespace {

// The state of a chain reduction (and, for an allreduce, of its broadcast). On one rank the
// sum is the rank's own data: copied to recv here, nothing is posted.
std::shared_ptr<ReduceState> reduce_state(const Comm& c, const void* send, void* recv,
                                          std::int64_t count, MPI_Datatype t, std::size_t sz,
                                          AddFn add, std::int64_t segment_bytes, bool allreduce) {
  auto st = std::make_shared<ReduceState>();
  st->red = make_chain(c, count, t, sz, segment_bytes);
  if (allreduce) st->bc = make_chain(c, count, t, sz, segment_bytes);
  st->send = send;
  st->recv = recv;
  st->add = add;
  const std::int64_t bytes = count * static_cast<std::int64_t>(sz);
  if (c.size() == 1 && bytes > 0) std::memcpy(recv, send, static_cast<std::size_t>(bytes));
  return st;
}

}  // namespace

Pending p2p_ireduce_raw(const Comm& c, const void* send, void* recv, std::int64_t count,
                        MPI_Datatype t, std::size_t sz, AddFn add, int root, RequestSet& rs,
                        std::int64_t segment_bytes) {
  validate(c, count, root, "p2p ireduce");
  const int m = c.size(), rank = c.rank();
  TESSEL_CHECK(rank != root || count == 0 || recv != nullptr, InputError,
               "p2p ireduce: null receive buffer on the root");
  TESSEL_CHECK(rank != root || count == 0 || recv != send, InputError,
               "p2p ireduce: the receive buffer aliases the send buffer");
  auto st = reduce_state(c, send, recv, count, t, sz, add, segment_bytes, false);
  Pending tok = RequestSet::make_pending();
  const std::int64_t bytes = count * static_cast<std::int64_t>(sz);
  if (m == 1 || st->red.nseg == 0) return tok;
  const int pos = (rank - root + m) % m;
  record(c, bytes, st->red.nseg, /*sends=*/pos > 0, /*recvs=*/pos < m - 1);
  post_reduce(st, rank, m, root, /*allreduce=*/false, rs, tok);
  return tok;
}

Pending p2p_iallreduce_raw(const Comm& c, const void* send, void* recv, std::int64_t count,
                           MPI_Datatype t, std::size_t sz, AddFn add, RequestSet& rs,
                           std::int64_t segment_bytes) {
  validate(c, count, 0, "p2p iallreduce");
  TESSEL_CHECK(count == 0 || (recv != nullptr && recv != send), InputError,
               "p2p iallreduce: the receive buffer is null or aliases the send buffer");
  const int m = c.size(), rank = c.rank();
  auto st = reduce_state(c, send, recv, count, t, sz, add, segment_bytes, true);
  Pending tok = RequestSet::make_pending();
  const std::int64_t bytes = count * static_cast<std::int64_t>(sz);
  if (m == 1 || st->red.nseg == 0) return tok;
  // reduce: all but rank 0 send, all but m-1 receive; broadcast: all but m-1 send, all but 0
  // receive.
  record(c, bytes, st->red.nseg, rank > 0, rank < m - 1);
  record(c, bytes, st->red.nseg, rank<m - 1, rank> 0);
  post_reduce(st, rank, m, 0, /*allreduce=*/true, rs, tok);
  return tok;
}

}  // namespace tessel::comm

#include "tessel/comm/nonblocking.hpp"
#include "tessel/core/build.hpp"

#include <algorithm>
#include <climits>
#include <thread>

#include "pieces.hpp"
#include "trace_hooks.hpp"

namespace tessel::comm {

Part split_part(std::int64_t count, int n, int c, std::int64_t unit) {
  TESSEL_CHECK(n >= 1 && c >= 0 && c < n, Error, "split_part: part ", c, " of ", n,
               " parts (expected 0 <= part < parts, parts >= 1)");
  TESSEL_CHECK(unit >= 1 && count >= 0 && count % unit == 0, Error, "split_part: ", count,
               " items are not a whole number of units of ", unit);
  std::int64_t units = count / unit, q = units / n, r = units % n;
  std::int64_t b = c * q + (c < r ? c : r);
  std::int64_t len = q + (c < r ? 1 : 0);
  return Part{b * unit, len * unit};
}

DupSet::DupSet(const Comm& parent, int n) {
  TESSEL_CHECK(n >= 1, Error, "DupSet: n = ", n, " (expected >= 1)");
  comms_.reserve(static_cast<std::size_t>(n));
  for (int c = 0; c < n; ++c) {
    if (parent.is_null())
      comms_.emplace_back(MPI_COMM_NULL, parent.ledger());
    else
      comms_.push_back(parent.dup());
  }
}

namespace {
// Posts `post(first item, items)` for pieces of at most c.max_message_items() items
// (comm::for_each_piece) and returns the number of pieces.
template <class F>
std::int64_t post_pieces(const Comm& c, std::int64_t count, const char* what, F&& post) {
  return for_each_piece(count, c.max_message_items(), post, what);
}

void record_coll(const Comm& c, std::int64_t bytes, std::int64_t calls) {
  if (auto* l = c.ledger()) {
    auto& k = l->now();
    k.coll_bytes += bytes;
    k.coll_calls += calls;
  }
}
}  // namespace

Pending ibcast_raw(const Comm& c, void* buf, std::int64_t count, MPI_Datatype t, std::size_t sz,
                   int root, RequestSet& rs) {
  Pending tok = RequestSet::make_pending();
  rs.watch(c.raw());
  auto* p = static_cast<char*>(buf);
  const std::int64_t es = static_cast<std::int64_t>(sz);
  const auto pieces = post_pieces(c, count, "ibcast", [&](std::int64_t at, int n) {
    check_mpi(MPI_Ibcast(p + at * es, n, t, root, c.raw(),
                         trace::add(rs, tok, tracer_of(c.ledger()), "coll", -1,
                                    static_cast<std::int64_t>(n) * es)),
              "MPI_Ibcast");
  });
  record_coll(c, count * es, pieces);
  return tok;
}

Pending ireduce_raw(const Comm& c, const void* send, void* recv, std::int64_t count, MPI_Datatype t,
                    std::size_t sz, MPI_Op op, int root, RequestSet& rs) {
  Pending tok = RequestSet::make_pending();
  rs.watch(c.raw());
  const auto* s = static_cast<const char*>(send);
  auto* r = static_cast<char*>(recv);
  const std::int64_t es = static_cast<std::int64_t>(sz);
  const auto pieces = post_pieces(c, count, "ireduce", [&](std::int64_t at, int n) {
    check_mpi(MPI_Ireduce(s + at * es, r ? r + at * es : nullptr, n, t, op, root, c.raw(),
                          trace::add(rs, tok, tracer_of(c.ledger()), "coll", -1,
                                     static_cast<std::int64_t>(n) * es)),
              "MPI_Ireduce");
  });
  record_coll(c, count * es, pieces);
  return tok;
}

Pending iallreduce_raw(const Comm& c, const void* send, void* recv, std::int64_t count,
                       MPI_Datatype t, std::size_t sz, MPI_Op op, RequestSet& rs) {
  Pending tok = RequestSet::make_pending();
  rs.watch(c.raw());
  const auto* s = static_cast<const char*>(send);
  auto* r = static_cast<char*>(recv);
  const std::int64_t es = static_cast<std::int64_t>(sz);
  const auto pieces = post_pieces(c, count, "iallreduce", [&](std::int64_t at, int n) {
    check_mpi(MPI_Iallreduce(s + at * es, r + at * es, n, t, op, c.raw(),
                             trace::add(rs, tok, tracer_of(c.ledger()), "coll", -1,
                                        static_cast<std::int64_t>(n) * es)),
              "MPI_Iallreduce");
  });
  record_coll(c, count * es, pieces);
  return tok;
}

void sleep_barrier(const Comm& c, std::chrono::microseconds poll) {
  MPI_Request r = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(c.raw(), &r), "MPI_Ibarrier");
  if (auto* l = c.ledger()) l->now().coll_calls += 1;
  if constexpr (kSimulatedMpi) {  // simulated ranks: block (see back_off in comm.cpp)
    check_mpi(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    return;
  }
  for (;;) {
    int flag = 0;
    check_mpi(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    if (flag) return;
    throw_if_failed(c.raw());  // a peer left with an error: do not wait for it (Ibarrier leaked)
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace tessel::comm

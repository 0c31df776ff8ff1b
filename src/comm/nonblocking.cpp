#include "tessel/comm/nonblocking.hpp"

#include <climits>
#include <thread>

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
    if (parent.is_null()) comms_.emplace_back(MPI_COMM_NULL, parent.ledger());
    else comms_.push_back(parent.dup());
  }
}

static int nb_count(std::int64_t count, const char* what) {
  TESSEL_CHECK(count >= 0 && count <= INT_MAX, Error, what, ": message of ", count,
               " items exceeds the MPI int count limit (", INT_MAX, ")");
  return static_cast<int>(count);
}

Pending ibcast_raw(const Comm& c, void* buf, std::int64_t count, MPI_Datatype t,
                   std::size_t sz, int root, RequestSet& rs) {
  int n = nb_count(count, "ibcast");
  Pending tok = RequestSet::make_pending();
  check_mpi(MPI_Ibcast(buf, n, t, root, c.raw(), trace::add(rs, tok, tracer_of(c.ledger()), "coll", -1, count * static_cast<std::int64_t>(sz))), "MPI_Ibcast");
  if (auto* l = c.ledger()) {
    auto& k = l->now();
    k.coll_bytes += count * static_cast<std::int64_t>(sz);
    k.coll_calls += 1;
  }
  return tok;
}

Pending ireduce_raw(const Comm& c, const void* send, void* recv, std::int64_t count,
                    MPI_Datatype t, std::size_t sz, MPI_Op op, int root, RequestSet& rs) {
  int n = nb_count(count, "ireduce");
  Pending tok = RequestSet::make_pending();
  check_mpi(MPI_Ireduce(send, recv, n, t, op, root, c.raw(),
                        trace::add(rs, tok, tracer_of(c.ledger()), "coll", -1, count * static_cast<std::int64_t>(sz))), "MPI_Ireduce");
  if (auto* l = c.ledger()) {
    auto& k = l->now();
    k.coll_bytes += count * static_cast<std::int64_t>(sz);
    k.coll_calls += 1;
  }
  return tok;
}

Pending iallreduce_raw(const Comm& c, const void* send, void* recv, std::int64_t count,
                       MPI_Datatype t, std::size_t sz, MPI_Op op, RequestSet& rs) {
  int n = nb_count(count, "iallreduce");
  Pending tok = RequestSet::make_pending();
  check_mpi(MPI_Iallreduce(send, recv, n, t, op, c.raw(),
                           trace::add(rs, tok, tracer_of(c.ledger()), "coll", -1, count * static_cast<std::int64_t>(sz))), "MPI_Iallreduce");
  if (auto* l = c.ledger()) {
    auto& k = l->now();
    k.coll_bytes += count * static_cast<std::int64_t>(sz);
    k.coll_calls += 1;
  }
  return tok;
}

void sleep_barrier(const Comm& c, std::chrono::microseconds poll) {
  MPI_Request r = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(c.raw(), &r), "MPI_Ibarrier");
  if (auto* l = c.ledger()) l->now().coll_calls += 1;
  for (;;) {
    int flag = 0;
    check_mpi(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    if (flag) return;
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace tessel::comm

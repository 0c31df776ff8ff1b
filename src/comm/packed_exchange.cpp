#include "tessel/comm/packed_exchange.hpp"
#include "tessel/core/build.hpp"

#include "trace_hooks.hpp"

namespace tessel::comm {

std::vector<std::int64_t> alltoall_counts(const Comm& c, const std::vector<std::int64_t>& send) {
  const int p = c.size();
  TESSEL_CHECK(static_cast<int>(send.size()) == p, Error, "alltoall_counts: ", send.size(),
               " counts for a communicator of ", p, " ranks");
  std::vector<std::int64_t> recv(static_cast<std::size_t>(p), 0);
  const double t0 = trace::begin(tracer_of(c.ledger()));
  {  // posted nonblocking and polled (RequestSet): a blocking MPI_Alltoall spins under MPICH
    RequestSet rs;
    rs.watch(c.raw());
    if constexpr (kSimulatedMpi)  // blocking in the SMPI build (comm.cpp, kBlockingCollectives)
      check_mpi(MPI_Alltoall(send.data(), 1, MPI_INT64_T, recv.data(), 1, MPI_INT64_T, c.raw()),
                "MPI_Alltoall");
    else
      check_mpi(MPI_Ialltoall(send.data(), 1, MPI_INT64_T, recv.data(), 1, MPI_INT64_T, c.raw(),
                              rs.add()),
                "MPI_Ialltoall");
    rs.wait_all();
  }
  if (CommLedger* l = c.ledger()) {
    PhaseCounts& k = l->now();
    k.coll_bytes +=
        static_cast<std::int64_t>(p - 1) * 2 * static_cast<std::int64_t>(sizeof(std::int64_t));
    k.coll_calls += 1;
  }
  if (Tracer* tr = tracer_of(c.ledger()))
    tr->transfer_since(
        "coll", -1,
        static_cast<std::int64_t>(p - 1) * 2 * static_cast<std::int64_t>(sizeof(std::int64_t)), t0);
  return recv;
}

}  // namespace tessel::comm

// Exchange strategies alltoallv and ialltoallv: the Octopus original of seed 002. Counts and
// displacements of size p, zero for every rank that is not a peer.
#include "exchange_mover.hpp"
#include "tessel/core/build.hpp"
#include "trace_hooks.hpp"

namespace tessel::comm::detail {
namespace {

class AlltoallvMover final : public ExchangeMover {
 public:
  AlltoallvMover(const Comm& c, const ExchangePlan& plan, const ExchangeItem& item, bool blocking,
                 std::int64_t bytes)
      : c_(c),
        k_(AlltoallvCounts::of(plan, c.size(), item.width)),
        type_(item.type),
        blocking_(blocking),
        bytes_(bytes) {}
  void start(const char* send, char* recv, RequestSet& rs) override {
    Tracer* t = tracer_of(c_.ledger());
    // SMPI: the blocking original is MPI_Alltoallv itself (comm.cpp, kBlockingCollectives).
    if (kSimulatedMpi && blocking_) {
      const double t0 = trace::begin(t);
      check_mpi(MPI_Alltoallv(send, k_.send_counts.data(), k_.send_displs.data(), type_, recv,
                              k_.recv_counts.data(), k_.recv_displs.data(), type_, c_.raw()),
                "MPI_Alltoallv");
      if (t) t->transfer_since("coll", -1, bytes_, t0);
      return;
    }
    check_mpi(MPI_Ialltoallv(send, k_.send_counts.data(), k_.send_displs.data(), type_, recv,
                             k_.recv_counts.data(), k_.recv_displs.data(), type_, c_.raw(),
                             trace::add(rs, t, "coll", -1, bytes_)),
              "MPI_Ialltoallv");
    // alltoallv, the blocking original the seed measures against: complete before returning
    // (no overlap), but waited for by RequestSet's polling, since a blocking MPI_Alltoallv
    // busy-polls under MPICH (poll.hpp) and cannot notice a peer that has left.
    if (blocking_) rs.wait_all();
  }

 private:
  const Comm& c_;
  AlltoallvCounts k_;  // bound by the outstanding request (the core drains it first)
  MPI_Datatype type_;
  bool blocking_;
  std::int64_t bytes_;
};

}  // namespace

std::unique_ptr<ExchangeMover> make_alltoallv_mover(const Comm& c, const ExchangePlan& plan,
                                                    const ExchangeItem& item, bool blocking,
                                                    std::int64_t bytes) {
  return std::make_unique<AlltoallvMover>(c, plan, item, blocking, bytes);
}

}  // namespace tessel::comm::detail

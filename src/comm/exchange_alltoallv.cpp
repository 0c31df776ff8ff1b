// Exchanger strategies alltoallv and ialltoallv: the Octopus original of seed 002. Counts and
// displacements of size p, zero for every rank that is not a peer.
#include "exchange_impl.hpp"
#include "tessel/core/build.hpp"
#include "trace_hooks.hpp"

namespace tessel::comm {
namespace {

class AlltoallvExchanger final : public Exchanger {
 public:
  AlltoallvExchanger(const Comm& c, const ExchangePlan& plan, int width, ExchangeStrategy s)
      : Exchanger(c, plan, width, s), k_(AlltoallvCounts::of(plan_, c.size(), width)) {}
  ~AlltoallvExchanger() override { drain(); }
  void start() override {
    begin_collective();
    Tracer* t = tracer_of(comm_.ledger());
    // SMPI: the blocking original is MPI_Alltoallv itself (comm.cpp, kBlockingCollectives).
    if (kSimulatedMpi && strategy_ == ExchangeStrategy::Alltoallv) {
      const double t0 = trace::begin(t);
      check_mpi(MPI_Alltoallv(send_.data(), k_.send_counts.data(), k_.send_displs.data(),
                              MPI_DOUBLE, recv_.data(), k_.recv_counts.data(),
                              k_.recv_displs.data(), MPI_DOUBLE, comm_.raw()),
                "MPI_Alltoallv");
      if (t) t->transfer_since("coll", -1, payload_bytes(), t0);
      return;
    }
    check_mpi(MPI_Ialltoallv(send_.data(), k_.send_counts.data(), k_.send_displs.data(), MPI_DOUBLE,
                             recv_.data(), k_.recv_counts.data(), k_.recv_displs.data(), MPI_DOUBLE,
                             comm_.raw(), trace::add(rs_, t, "coll", -1, payload_bytes())),
              "MPI_Ialltoallv");
    // alltoallv, the blocking original the seed measures against: complete before returning
    // (no overlap), but waited for by RequestSet's polling, since a blocking MPI_Alltoallv
    // busy-polls under MPICH (poll.hpp) and cannot notice a peer that has left.
    if (strategy_ == ExchangeStrategy::Alltoallv) wait();
  }

 private:
  AlltoallvCounts k_;  // bound by the outstanding request: drained first
};

}  // namespace

std::unique_ptr<Exchanger> make_alltoallv_exchanger(const Comm& c, const ExchangePlan& plan,
                                                    int width, ExchangeStrategy s) {
  return std::make_unique<AlltoallvExchanger>(c, plan, width, s);
}

}  // namespace tessel::comm

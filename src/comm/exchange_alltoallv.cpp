// Exchanger strategies alltoallv and ialltoallv: the Octopus original of seed 002. Counts and
// displacements of size p, zero for every rank that is not a peer.
#include "exchange_impl.hpp"
#include "trace_hooks.hpp"

namespace tessel::comm {
namespace {

class AlltoallvExchanger final : public Exchanger {
 public:
  AlltoallvExchanger(const Comm& c, const ExchangePlan& plan, int width, ExchangeStrategy s)
      : Exchanger(c, plan, width, s) {
    const std::size_t p = static_cast<std::size_t>(c.size());
    sc_.assign(p, 0), sd_.assign(p, 0), rc_.assign(p, 0), rd_.assign(p, 0);
    const auto scnt = scaled(plan_.send_counts), soff = scaled(plan_.send_offsets);
    const auto rcnt = scaled(plan_.recv_counts), roff = scaled(plan_.recv_offsets);
    for (std::size_t i = 0; i < plan_.send_peers.size(); ++i) {
      sc_[static_cast<std::size_t>(plan_.send_peers[i])] = scnt[i];
      sd_[static_cast<std::size_t>(plan_.send_peers[i])] = soff[i];
    }
    for (std::size_t i = 0; i < plan_.recv_peers.size(); ++i) {
      rc_[static_cast<std::size_t>(plan_.recv_peers[i])] = rcnt[i];
      rd_[static_cast<std::size_t>(plan_.recv_peers[i])] = roff[i];
    }
  }
  ~AlltoallvExchanger() override { drain(); }
  void start() override {
    begin_collective();
    Tracer* t = tracer_of(comm_.ledger());
    if (strategy_ == ExchangeStrategy::Alltoallv) {
      // The blocking original (the baseline the seed measures against): one MPI_Alltoallv,
      // after a check that no peer has left (a notice pending on the communicator).
      throw_if_failed(comm_.raw());
      const double t0 = trace::begin(t);
      check_mpi(MPI_Alltoallv(send_.data(), sc_.data(), sd_.data(), MPI_DOUBLE, recv_.data(), rc_.data(),
                              rd_.data(), MPI_DOUBLE, comm_.raw()),
                "MPI_Alltoallv");
      if (t) t->transfer_since("coll", -1, payload_bytes(), t0);
      return;
    }
    check_mpi(MPI_Ialltoallv(send_.data(), sc_.data(), sd_.data(), MPI_DOUBLE, recv_.data(), rc_.data(),
                             rd_.data(), MPI_DOUBLE, comm_.raw(), trace::add(rs_, t, "coll", -1, payload_bytes())),
              "MPI_Ialltoallv");
  }

 private:
  std::vector<int> sc_, sd_, rc_, rd_;  // bound by the outstanding request: drained first
};

}  // namespace

std::unique_ptr<Exchanger> make_alltoallv_exchanger(const Comm& c, const ExchangePlan& plan, int width,
                                                    ExchangeStrategy s) {
  return std::make_unique<AlltoallvExchanger>(c, plan, width, s);
}

}  // namespace tessel::comm

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
    check_mpi(MPI_Ialltoallv(send_.data(), sc_.data(), sd_.data(), MPI_DOUBLE, recv_.data(), rc_.data(),
                             rd_.data(), MPI_DOUBLE, comm_.raw(), trace::add(rs_, t, "coll", -1, payload_bytes())),
              "MPI_Ialltoallv");
    // alltoallv, the blocking original the seed measures against: complete before returning
    // (no overlap), but waited for by RequestSet's polling, since a blocking MPI_Alltoallv
    // busy-polls under MPICH (poll.hpp) and cannot notice a peer that has left.
    if (strategy_ == ExchangeStrategy::Alltoallv) wait();
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

// Exchanger strategies alltoallv and ialltoallv: the Octopus original of seed 002. Counts and
// displacements of size p, zero for every rank that is not a peer.
#include "exchange_impl.hpp"

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
  void start() override {
    record_collective();
    check_mpi(MPI_Ialltoallv(send_.data(), sc_.data(), sd_.data(), MPI_DOUBLE, recv_.data(), rc_.data(),
                             rd_.data(), MPI_DOUBLE, comm_.raw(), &req_),
              "MPI_Ialltoallv");
    // alltoallv: blocking for the caller (no overlap), but waited for by polling: a blocking
    // MPI_Alltoallv busy-polls under MPICH (poll.hpp).
    if (strategy_ == ExchangeStrategy::Alltoallv) poll_wait(req_);
  }
  bool test() override {
    if (req_ == MPI_REQUEST_NULL) return true;
    int flag = 0;
    check_mpi(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    return flag != 0;
  }
  void wait() override {
    if (req_ != MPI_REQUEST_NULL) poll_wait(req_);
  }
  ~AlltoallvExchanger() override {
    if (req_ != MPI_REQUEST_NULL) {
      int fin = 0;
      MPI_Finalized(&fin);
      if (!fin) wait_polled(req_, MPI_STATUS_IGNORE);
    }
  }

 private:
  std::vector<int> sc_, sd_, rc_, rd_;
  MPI_Request req_ = MPI_REQUEST_NULL;
};

}  // namespace

std::unique_ptr<Exchanger> make_alltoallv_exchanger(const Comm& c, const ExchangePlan& plan, int width,
                                                    ExchangeStrategy s) {
  return std::make_unique<AlltoallvExchanger>(c, plan, width, s);
}

}  // namespace tessel::comm

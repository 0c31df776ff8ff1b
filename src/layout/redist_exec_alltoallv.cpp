// RedistPlan executor alltoallv: the peers' pieces in packed buffers, moved by one
// MPI_Ialltoallv over the communicator (counts of size p, zero for non-peers) and waited for
// by RequestSet's polling (a blocking MPI_Alltoallv busy-polls under MPICH).
#include <complex>

#include "redist_exec.hpp"

namespace tessel::layout::detail {
namespace {

template <class T>
class AlltoallvRedist final : public RedistExecutor<T> {
 public:
  AlltoallvRedist(const comm::Comm& c, const comm::ExchangePlan& plan)
      : c_(c),
        counts_(comm::AlltoallvCounts::of(plan, c.size())),
        buf_(plan, c.size()),
        guard_(c.raw()) {}
  T* send_piece(int q) override { return buf_.send_piece(q); }
  void start() override {
    comm::post_plan_alltoallv(c_, counts_, buf_.send.data(), buf_.recv.data(), rs_);
  }
  void wait() override { rs_.wait_all(); }
  const T* recv_piece(int q) const override { return buf_.recv_piece(q); }

 private:
  const comm::Comm& c_;
  comm::AlltoallvCounts counts_;  // bound by the outstanding request (declared before rs_)
  PackedPieces<T> buf_;
  comm::ExchangeGuard guard_;
  comm::RequestSet rs_;
};

}  // namespace

template <class T>
std::unique_ptr<RedistExecutor<T>> make_alltoallv_redist(const comm::Comm& c,
                                                         const comm::ExchangePlan& plan) {
  return std::make_unique<AlltoallvRedist<T>>(c, plan);
}

template std::unique_ptr<RedistExecutor<double>> make_alltoallv_redist<double>(
    const comm::Comm&, const comm::ExchangePlan&);
template std::unique_ptr<RedistExecutor<std::complex<double>>>
make_alltoallv_redist<std::complex<double>>(const comm::Comm&, const comm::ExchangePlan&);

}  // namespace tessel::layout::detail

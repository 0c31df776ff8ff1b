// RedistPlan executor p2p: one MPI_Irecv and one MPI_Isend per peer (the plan's pieces in
// packed buffers), receives posted before packing.
#include <complex>

#include "redist_exec.hpp"

namespace tessel::layout::detail {
namespace {

template <class T>
class P2PRedist final : public RedistExecutor<T> {
 public:
  P2PRedist(const comm::Comm& c, comm::ExchangePlan plan, MPI_Comm extra)
      : c_(c), plan_(std::move(plan)), buf_(plan_, c.size()), guard_(c.raw()) {
    TESSEL_ASSERT(plan_.self_count == 0);
    if (extra != MPI_COMM_NULL) {
      guard_.add(extra);
      rs_.watch(extra);
    }
  }
  void post_receives() override {
    comm::post_plan_receives(c_, plan_, buf_.recv.data(), 1, kTag, rs_);
  }
  T* send_piece(int q) override { return buf_.send_piece(q); }
  void start() override {
    comm::post_plan_sends(c_, plan_, buf_.send.data(), buf_.recv.data(), 1, kTag, rs_);
  }
  void wait() override { rs_.wait_all(); }
  const T* recv_piece(int q) const override { return buf_.recv_piece(q); }

 private:
  static constexpr int kTag = comm::tag::kRedistribute;
  const comm::Comm& c_;
  comm::ExchangePlan plan_;
  PackedPieces<T> buf_;
  // Should this rank leave while messages are posted, `guard_` sends failure notices and its
  // peers throw PeerFailure instead of waiting for it; rs_, abandoned while unwinding, does
  // not wait for them either (comm::RequestSet). Declared after the buffers: freed first.
  comm::ExchangeGuard guard_;
  comm::RequestSet rs_;
};

}  // namespace

template <class T>
std::unique_ptr<RedistExecutor<T>> make_p2p_redist(const comm::Comm& c, comm::ExchangePlan plan,
                                                   MPI_Comm extra_watch) {
  return std::make_unique<P2PRedist<T>>(c, std::move(plan), extra_watch);
}

template std::unique_ptr<RedistExecutor<double>> make_p2p_redist<double>(const comm::Comm&,
                                                                         comm::ExchangePlan,
                                                                         MPI_Comm);
template std::unique_ptr<RedistExecutor<std::complex<double>>>
make_p2p_redist<std::complex<double>>(const comm::Comm&, comm::ExchangePlan, MPI_Comm);

}  // namespace tessel::layout::detail

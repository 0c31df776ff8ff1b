// Exchanger strategy p2p: MPI_Irecv from and MPI_Isend to the peers only (what Octopus does
// today). One message per peer and direction; recorded as point-to-point traffic.
#include "exchange_impl.hpp"

namespace tessel::comm {
namespace {

constexpr int kHaloTag = tag::kHalo;

class P2PExchanger final : public Exchanger {
 public:
  P2PExchanger(const Comm& c, const ExchangePlan& plan, int width)
      : Exchanger(c, plan, width, ExchangeStrategy::P2P) {}
  void start() override {
    for (std::size_t i = 0; i < plan_.recv_peers.size(); ++i)
      comm_.irecv(recv_.data() + plan_.recv_offsets[i] * width_, plan_.recv_counts[i] * width_,
                  plan_.recv_peers[i], kHaloTag, rs_);
    for (std::size_t i = 0; i < plan_.send_peers.size(); ++i)
      comm_.isend(send_.data() + plan_.send_offsets[i] * width_, plan_.send_counts[i] * width_,
                  plan_.send_peers[i], kHaloTag, rs_);
  }
  bool test() override { return rs_.test_all(); }
  void wait() override { rs_.wait_all(); }

 private:
  RequestSet rs_;
};

}  // namespace

std::unique_ptr<Exchanger> make_p2p_exchanger(const Comm& c, const ExchangePlan& plan, int width) {
  return std::make_unique<P2PExchanger>(c, plan, width);
}

}  // namespace tessel::comm

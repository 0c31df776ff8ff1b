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
  // Receives first (before the caller packs), then sends in start().
  void post_receives() override {
    if (receives_posted_) return;
    post_plan_receives(comm_, plan_, recv_.data(), width_, kHaloTag, rs_);
    receives_posted_ = true;
  }
  void start() override {
    post_receives();
    receives_posted_ = false;  // the next exchange posts its own
    post_plan_sends(comm_, plan_, send_.data(), recv_.data(), width_, kHaloTag, rs_);
  }

 private:
  bool receives_posted_ = false;
};

}  // namespace

std::unique_ptr<Exchanger> make_p2p_exchanger(const Comm& c, const ExchangePlan& plan, int width) {
  return std::make_unique<P2PExchanger>(c, plan, width);
}

}  // namespace tessel::comm

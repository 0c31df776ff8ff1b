// Exchange strategy p2p: MPI_Irecv from and MPI_Isend to the peers only (what Octopus does
// today). One message per peer and direction (more above the MPI int count limit:
// Comm::isend/irecv cut it into pieces); recorded as point-to-point traffic by Comm.
#include "exchange_mover.hpp"

namespace tessel::comm::detail {
namespace {

class P2PMover final : public ExchangeMover {
 public:
  P2PMover(const Comm& c, const ExchangePlan& plan, const ExchangeItem& item, int tag)
      : c_(c), plan_(plan), item_(item), tag_(tag) {}
  bool collective() const override { return false; }
  void post_receives(char* recv, RequestSet& rs) override {
    for (std::size_t i = 0; i < plan_.recv_peers.size(); ++i)
      c_.irecv_bytes(recv + bytes(plan_.recv_offsets[i]), plan_.recv_counts[i] * item_.width,
                     item_.type, item_.size, plan_.recv_peers[i], tag_, rs);
  }
  void start(const char* send, char*, RequestSet& rs) override {
    for (std::size_t i = 0; i < plan_.send_peers.size(); ++i)
      c_.isend_bytes(send + bytes(plan_.send_offsets[i]), plan_.send_counts[i] * item_.width,
                     item_.type, item_.size, plan_.send_peers[i], tag_, rs);
  }

 private:
  std::int64_t bytes(std::int64_t items) const {
    return items * item_.width * static_cast<std::int64_t>(item_.size);
  }

  const Comm& c_;
  const ExchangePlan& plan_;  // the executor's (outlives the mover)
  const ExchangeItem item_;
  const int tag_;
};

}  // namespace

std::unique_ptr<ExchangeMover> make_p2p_mover(const Comm& c, const ExchangePlan& plan,
                                              const ExchangeItem& item, int tag) {
  return std::make_unique<P2PMover>(c, plan, item, tag);
}

}  // namespace tessel::comm::detail

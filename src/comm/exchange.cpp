// The one executor of counted exchanges (exchange.hpp): ExchangeCore holds what every strategy
// shares — the buffers it owns, the index of each peer's piece, the failure guard, the request
// set and the ledger's record of the collective strategies — and a mover per strategy posts
// the MPI calls (exchange_mover.hpp, one file each). An exchange reads as: post receives ->
// start (the window's stores recorded, the collective recorded, the mover's calls, the self
// piece copied) -> test / wait (the window published) -> finish (the window unlocked).
#include "tessel/comm/exchange.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "exchange_mover.hpp"
#include "tessel/comm/agree.hpp"

namespace tessel::comm {
namespace detail {
namespace {

std::int64_t sum(const std::vector<std::int64_t>& v) {
  std::int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

// Per rank of a communicator of `p`: the byte offset of its piece (offsets in items of
// `item_bytes`), -1 for a rank that is no peer.
std::vector<std::int64_t> piece_index(const std::vector<int>& peers,
                                      const std::vector<std::int64_t>& offsets, int p,
                                      std::int64_t item_bytes) {
  std::vector<std::int64_t> at(static_cast<std::size_t>(p), -1);
  for (std::size_t i = 0; i < peers.size(); ++i)
    at[static_cast<std::size_t>(peers[i])] = offsets[i] * item_bytes;
  return at;
}

// An uninitialised buffer of at least `bytes` bytes (one unit more: data() is valid when empty).
void allocate(UninitVector<std::max_align_t>& buf, std::int64_t bytes) {
  const std::int64_t unit = static_cast<std::int64_t>(sizeof(std::max_align_t));
  buf.resize(static_cast<std::size_t>((bytes + unit - 1) / unit + 1));
}

std::unique_ptr<ExchangeMover> make_mover(const Comm& c, const ExchangePlan& msgs,
                                          const ExchangeOptions& opt, const ExchangeItem& item,
                                          std::int64_t bytes, const char* send, char* recv) {
  switch (opt.strategy) {
    case ExchangeStrategy::Alltoallv:
    case ExchangeStrategy::Ialltoallv:
      return make_alltoallv_mover(c, msgs, item, opt.strategy == ExchangeStrategy::Alltoallv,
                                  bytes);
    case ExchangeStrategy::Neighbor:
    case ExchangeStrategy::Persistent:
      return make_neighbor_mover(c, msgs, item, opt.strategy == ExchangeStrategy::Persistent, bytes,
                                 send, recv);
    case ExchangeStrategy::P2P:
    case ExchangeStrategy::NodeShared: return make_p2p_mover(c, msgs, item, opt.tag);
  }
  return nullptr;
}

}  // namespace

ExchangeCore::ExchangeCore(const Comm& c, ExchangePlan plan, const ExchangeOptions& opt,
                           ExchangeItem item, bool own_buffers)
    : comm_(c), plan_(std::move(plan)), opt_(opt), item_(item), own_(own_buffers) {
  const ExchangeStrategy s = opt_.strategy;
  TESSEL_CHECK(
      own_buffers || (s != ExchangeStrategy::Persistent && s != ExchangeStrategy::NodeShared),
      Error, "exchange strategy ", to_string(s), " needs the executor's own buffers");
  const std::int64_t item_bytes = bytes(1);
  rs_.watch(c.raw());
  if (s == ExchangeStrategy::NodeShared) {
    TESSEL_CHECK(plan_.self_count == 0, Error, "exchange strategy node-shared: a self piece of ",
                 plan_.self_count, " items (expected none)");
    window_ = NodeWindow::open(c, plan_, item_bytes, opt_.node_size);
  }
  msgs_ = window_ ? window_->messages(plan_) : plan_;
  if (window_) rs_.watch(window_->node_comm());
  if (own_buffers) {
    send_at_ = piece_index(msgs_.send_peers, msgs_.send_offsets, c.size(), item_bytes);
    recv_at_ = piece_index(msgs_.recv_peers, msgs_.recv_offsets, c.size(), item_bytes);
    allocate(send_, bytes(msgs_.send_items()));
    allocate(recv_, bytes(msgs_.recv_items()));
  }
  coll_bytes_ = bytes(sum(msgs_.send_counts) + sum(msgs_.recv_counts));
  mover_ =
      make_mover(c, msgs_, opt_, item_, coll_bytes_, reinterpret_cast<const char*>(send_.data()),
                 reinterpret_cast<char*>(recv_.data()));
}

ExchangeCore::~ExchangeCore() = default;

void* ExchangeCore::send_piece(int q) {
  if (window_ && window_->holds(q)) return window_->send_piece(q);
  return reinterpret_cast<char*>(send_.data()) + send_at_[static_cast<std::size_t>(q)];
}

const void* ExchangeCore::recv_piece(int q) const {
  if (window_ && window_->holds(q)) return window_->recv_piece(q);
  return reinterpret_cast<const char*>(recv_.data()) + recv_at_[static_cast<std::size_t>(q)];
}

void ExchangeCore::open() {
  if (guard_) return;
  guard_.emplace(comm_.raw());
  if (window_) guard_->add(window_->node_comm());
}

void ExchangeCore::post_receives(void* recv) {
  if (receives_posted_) return;
  open();
  if (own_) recv = recv_.data();
  mover_->post_receives(static_cast<char*>(recv), rs_);
  receives_posted_ = true;
}

void ExchangeCore::start(const void* send, void* recv) {
  if (own_) send = send_.data(), recv = recv_.data();
  post_receives(recv);
  receives_posted_ = false;  // the next exchange posts its own
  if (window_) window_->record_stores();
  if (CommLedger* l = comm_.ledger(); l && mover_->collective()) {
    PhaseCounts& k = l->now();  // commcount's rule: one call, sum(send) + sum(recv) bytes
    k.coll_bytes += coll_bytes_;
    k.coll_calls += 1;
  }
  mover_->start(static_cast<const char*>(send), static_cast<char*>(recv), rs_);
  if (msgs_.self_count > 0)
    std::memcpy(static_cast<char*>(recv) + bytes(msgs_.self_recv),
                static_cast<const char*>(send) + bytes(msgs_.self_send),
                static_cast<std::size_t>(bytes(msgs_.self_count)));
}

bool ExchangeCore::test() {
  const bool done = rs_.test_all();
  if (done) guard_.reset();
  return done;
}

void ExchangeCore::wait() {
  if (window_) window_->publish();
  rs_.wait_all();
  guard_.reset();
}

void ExchangeCore::finish() {
  if (window_) window_->unlock();
}

}  // namespace detail

std::unique_ptr<Exchanger> make_exchanger(const Comm& c, const ExchangePlan& plan, int width,
                                          ExchangeStrategy s) {
  agree_on(c, [&] {
    TESSEL_CHECK(width >= 1, Error, "exchange: width ", width, " (expected >= 1)");
    plan.validate(c.size(), c.rank());
    const std::int64_t lim = INT_MAX / width;
    TESSEL_CHECK(plan.send_items() <= lim && plan.recv_items() <= lim, Error,
                 "exchange: ", plan.send_items(), " items sent and ", plan.recv_items(),
                 " received of width ", width, " exceed the MPI int count limit");
    TESSEL_CHECK(s != ExchangeStrategy::NodeShared, InputError,
                 "exchange strategy node-shared: the halo's exchange has contiguous buffers; "
                 "use alltoallv, ialltoallv, neighbor, persistent or p2p");
    TESSEL_CHECK((s != ExchangeStrategy::Neighbor && s != ExchangeStrategy::Persistent) ||
                     have_neighbor_collectives(),
                 InputError, "exchange strategy ", to_string(s),
                 ": this is tessel's SMPI build, and SimGrid's SMPI has no "
                 "MPI_Dist_graph_create_adjacent nor MPI_Ineighbor_alltoallv (nor any "
                 "neighbourhood collective): use alltoallv, ialltoallv or p2p");
    TESSEL_CHECK(
        s != ExchangeStrategy::Persistent || have_persistent_neighbor(), InputError,
        "exchange strategy persistent: this MPI has no MPI_Neighbor_alltoallv_init (MPI-4; "
        "Open MPI 4.1 is MPI-3): use neighbor, or build tessel against MPICH 4");
  });
  ExchangeOptions opt;
  opt.strategy = s;
  opt.tag = tag::kHalo;
  return std::make_unique<Exchanger>(c, plan, opt, width);
}

}  // namespace tessel::comm

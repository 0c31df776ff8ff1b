// The exchange plan (pure), the Exchanger base and the factory; one file per strategy:
// exchange_alltoallv.cpp, exchange_neighbor.cpp (neighbor + persistent), exchange_p2p.cpp.
#include "tessel/comm/exchange.hpp"

#include <algorithm>
#include <climits>

#include "exchange_impl.hpp"
#include "tessel/core/context.hpp"

namespace tessel::comm {

static std::int64_t sum(const std::vector<std::int64_t>& v) {
  std::int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}
std::int64_t ExchangePlan::send_items() const { return sum(send_counts); }
std::int64_t ExchangePlan::recv_items() const { return sum(recv_counts); }

static void validate_side(const char* side, const std::vector<int>& peers, const std::vector<std::int64_t>& counts,
                          const std::vector<std::int64_t>& offsets, int comm_size, int rank) {
  TESSEL_CHECK(peers.size() == counts.size() && peers.size() == offsets.size(), Error, "exchange plan: ", side,
               " has ", peers.size(), " peers, ", counts.size(), " counts and ", offsets.size(),
               " offsets (expected equal)");
  const std::int64_t total = sum(counts);
  std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    TESSEL_CHECK(peers[i] >= 0 && peers[i] < comm_size && peers[i] != rank, Error, "exchange plan: ", side,
                 " peer ", peers[i], " of rank ", rank, " (expected another rank of 0 .. ", comm_size - 1, ")");
    TESSEL_CHECK(i == 0 || peers[i] > peers[i - 1], Error, "exchange plan: ", side,
                 " peers must be ascending and distinct (", peers[i - 1], " then ", peers[i], ")");
    TESSEL_CHECK(counts[i] >= 0 && offsets[i] >= 0 && offsets[i] + counts[i] <= total, Error, "exchange plan: ",
                 side, " piece for peer ", peers[i], " (offset ", offsets[i], ", count ", counts[i],
                 ") leaves the buffer of ", total, " items");
    if (counts[i] > 0) pieces.push_back({offsets[i], counts[i]});
  }
  std::sort(pieces.begin(), pieces.end());
  for (std::size_t i = 1; i < pieces.size(); ++i)
    TESSEL_CHECK(pieces[i - 1].first + pieces[i - 1].second <= pieces[i].first, Error, "exchange plan: ", side,
                 " pieces at offsets ", pieces[i - 1].first, " and ", pieces[i].first, " overlap");
}

void ExchangePlan::validate(int comm_size, int rank) const {
  validate_side("send", send_peers, send_counts, send_offsets, comm_size, rank);
  validate_side("recv", recv_peers, recv_counts, recv_offsets, comm_size, rank);
}

ExchangeStrategy parse_exchange_strategy(const std::string& s) {
  if (s == "alltoallv") return ExchangeStrategy::Alltoallv;
  if (s == "ialltoallv") return ExchangeStrategy::Ialltoallv;
  if (s == "neighbor") return ExchangeStrategy::Neighbor;
  if (s == "persistent") return ExchangeStrategy::Persistent;
  if (s == "p2p") return ExchangeStrategy::P2P;
  throw InputError(detail::concat("exchange strategy '", s,
                                  "': expected alltoallv, ialltoallv, neighbor, persistent or p2p"));
}

const char* to_string(ExchangeStrategy s) {
  switch (s) {
    case ExchangeStrategy::Alltoallv: return "alltoallv";
    case ExchangeStrategy::Ialltoallv: return "ialltoallv";
    case ExchangeStrategy::Neighbor: return "neighbor";
    case ExchangeStrategy::Persistent: return "persistent";
    case ExchangeStrategy::P2P: return "p2p";
  }
  return "?";
}

bool have_persistent_neighbor() {
#ifdef TESSEL_HAVE_NEIGHBOR_ALLTOALLV_INIT
  return true;
#else
  return false;
#endif
}

Exchanger::Exchanger(const Comm& c, ExchangePlan plan, int width, ExchangeStrategy s)
    : comm_(c), plan_(std::move(plan)), width_(width), strategy_(s) {
  // One element more than needed, so that data() is a valid pointer for an empty side.
  send_.assign(static_cast<std::size_t>(plan_.send_items() * width_ + 1), 0.0);
  recv_.assign(static_cast<std::size_t>(plan_.recv_items() * width_ + 1), 0.0);
}

void Exchanger::record_collective() const {
  if (auto* l = comm_.ledger()) {
    auto& k = l->now();
    k.coll_bytes += (plan_.send_items() + plan_.recv_items()) * width_ * static_cast<std::int64_t>(sizeof(double));
    k.coll_calls += 1;
  }
}

std::vector<int> Exchanger::scaled(const std::vector<std::int64_t>& v) const {
  std::vector<int> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<int>(v[i] * width_);
  return out;
}

void poll_wait(MPI_Request& r) { check_mpi(wait_polled(r, MPI_STATUS_IGNORE), "MPI_Wait"); }

std::unique_ptr<Exchanger> make_exchanger(const Comm& c, const ExchangePlan& plan, int width, ExchangeStrategy s) {
  agree_on(c, [&] {
    TESSEL_CHECK(width >= 1, Error, "exchange: width ", width, " (expected >= 1)");
    plan.validate(c.size(), c.rank());
    const std::int64_t lim = INT_MAX / width;
    TESSEL_CHECK(plan.send_items() <= lim && plan.recv_items() <= lim, Error, "exchange: ",
                 plan.send_items(), " items sent and ", plan.recv_items(), " received of width ", width,
                 " exceed the MPI int count limit");
    TESSEL_CHECK(s != ExchangeStrategy::Persistent || have_persistent_neighbor(), InputError,
                 "exchange strategy persistent: this MPI has no MPI_Neighbor_alltoallv_init (MPI-4; "
                 "Open MPI 4.1 is MPI-3): use neighbor, or build tessel against MPICH 4");
  });
  switch (s) {
    case ExchangeStrategy::Alltoallv:
    case ExchangeStrategy::Ialltoallv: return make_alltoallv_exchanger(c, plan, width, s);
    case ExchangeStrategy::Neighbor:
    case ExchangeStrategy::Persistent: return make_neighbor_exchanger(c, plan, width, s);
    case ExchangeStrategy::P2P: return make_p2p_exchanger(c, plan, width);
  }
  return nullptr;
}

}  // namespace tessel::comm

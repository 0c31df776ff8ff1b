// The exchange plan (pure data: its construction from packed counts, its checks, the MPI int
// counts of the collective strategies) and the strategy names. No MPI call here.
#include "tessel/comm/exchange_plan.hpp"

#include <algorithm>
#include <utility>

#include "tessel/core/build.hpp"
#include "tessel/core/error.hpp"

namespace tessel::comm {

static std::int64_t sum(const std::vector<std::int64_t>& v) {
  std::int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}
std::int64_t ExchangePlan::send_items() const { return sum(send_counts) + self_count; }
std::int64_t ExchangePlan::recv_items() const { return sum(recv_counts) + self_count; }

ExchangePlan ExchangePlan::from_counts(const std::vector<std::int64_t>& send,
                                       const std::vector<std::int64_t>& recv, int rank) {
  TESSEL_CHECK(
      send.size() == recv.size() && rank >= 0 && static_cast<std::size_t>(rank) < send.size(),
      Error, "exchange plan: ", send.size(), " send counts, ", recv.size(),
      " receive counts and rank ", rank, " (expected equal sizes and a rank below them)");
  const std::size_t me = static_cast<std::size_t>(rank);
  TESSEL_CHECK(send[me] == recv[me], Error, "exchange: own piece sends ", send[me],
               " items but receives ", recv[me]);
  ExchangePlan p;
  std::int64_t so = 0, ro = 0;
  for (std::size_t q = 0; q < send.size(); ++q) {
    if (q == me) {
      p.self_count = send[q], p.self_send = so, p.self_recv = ro;
    } else {
      if (send[q] > 0) {
        p.send_peers.push_back(static_cast<int>(q));
        p.send_counts.push_back(send[q]);
        p.send_offsets.push_back(so);
      }
      if (recv[q] > 0) {
        p.recv_peers.push_back(static_cast<int>(q));
        p.recv_counts.push_back(recv[q]);
        p.recv_offsets.push_back(ro);
      }
    }
    so += send[q];
    ro += recv[q];
  }
  return p;
}

static void validate_side(const char* side, const std::vector<int>& peers,
                          const std::vector<std::int64_t>& counts,
                          const std::vector<std::int64_t>& offsets, std::int64_t self_count,
                          std::int64_t self_offset, int comm_size, int rank) {
  TESSEL_CHECK(peers.size() == counts.size() && peers.size() == offsets.size(), Error,
               "exchange plan: ", side, " has ", peers.size(), " peers, ", counts.size(),
               " counts and ", offsets.size(), " offsets (expected equal)");
  const std::int64_t total = sum(counts) + self_count;
  std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
  TESSEL_CHECK(self_count >= 0 && self_offset >= 0 && self_offset + self_count <= total, Error,
               "exchange plan: ", side, " self piece (offset ", self_offset, ", count ", self_count,
               ") leaves the buffer of ", total, " items");
  if (self_count > 0) pieces.push_back({self_offset, self_count});
  for (std::size_t i = 0; i < peers.size(); ++i) {
    TESSEL_CHECK(peers[i] >= 0 && peers[i] < comm_size && peers[i] != rank, Error,
                 "exchange plan: ", side, " peer ", peers[i], " of rank ", rank,
                 " (expected another rank of 0 .. ", comm_size - 1, ")");
    TESSEL_CHECK(i == 0 || peers[i] > peers[i - 1], Error, "exchange plan: ", side,
                 " peers must be ascending and distinct (", peers[i - 1], " then ", peers[i], ")");
    TESSEL_CHECK(counts[i] >= 0 && offsets[i] >= 0 && offsets[i] + counts[i] <= total, Error,
                 "exchange plan: ", side, " piece for peer ", peers[i], " (offset ", offsets[i],
                 ", count ", counts[i], ") leaves the buffer of ", total, " items");
    if (counts[i] > 0) pieces.push_back({offsets[i], counts[i]});
  }
  std::sort(pieces.begin(), pieces.end());
  for (std::size_t i = 1; i < pieces.size(); ++i)
    TESSEL_CHECK(pieces[i - 1].first + pieces[i - 1].second <= pieces[i].first, Error,
                 "exchange plan: ", side, " pieces at offsets ", pieces[i - 1].first, " and ",
                 pieces[i].first, " overlap");
}

void ExchangePlan::validate(int comm_size, int rank) const {
  validate_side("send", send_peers, send_counts, send_offsets, self_count, self_send, comm_size,
                rank);
  validate_side("recv", recv_peers, recv_counts, recv_offsets, self_count, self_recv, comm_size,
                rank);
}

AlltoallvCounts AlltoallvCounts::of(const ExchangePlan& plan, int comm_size, std::int64_t width) {
  const std::size_t p = static_cast<std::size_t>(comm_size);
  AlltoallvCounts k;
  k.send_counts.assign(p, 0), k.send_displs.assign(p, 0), k.recv_counts.assign(p, 0),
      k.recv_displs.assign(p, 0);
  auto put = [&](const std::vector<int>& peers, const std::vector<std::int64_t>& counts,
                 const std::vector<std::int64_t>& offsets, std::vector<int>& c,
                 std::vector<int>& d) {
    for (std::size_t i = 0; i < peers.size(); ++i) {
      const std::size_t q = static_cast<std::size_t>(peers[i]);
      c[q] = detail::checked_int(counts[i] * width, "alltoallv count");
      d[q] = detail::checked_int((offsets[i] + counts[i]) * width, "alltoallv displacement") - c[q];
    }
  };
  put(plan.send_peers, plan.send_counts, plan.send_offsets, k.send_counts, k.send_displs);
  put(plan.recv_peers, plan.recv_counts, plan.recv_offsets, k.recv_counts, k.recv_displs);
  return k;
}

ExchangeStrategy parse_exchange_strategy(const std::string& s) {
  if (s == "alltoallv") return ExchangeStrategy::Alltoallv;
  if (s == "ialltoallv") return ExchangeStrategy::Ialltoallv;
  if (s == "neighbor") return ExchangeStrategy::Neighbor;
  if (s == "persistent") return ExchangeStrategy::Persistent;
  if (s == "p2p") return ExchangeStrategy::P2P;
  throw InputError(detail::concat(
      "exchange strategy '", s, "': expected alltoallv, ialltoallv, neighbor, persistent or p2p"));
}

const char* to_string(ExchangeStrategy s) {
  switch (s) {
    case ExchangeStrategy::Alltoallv: return "alltoallv";
    case ExchangeStrategy::Ialltoallv: return "ialltoallv";
    case ExchangeStrategy::Neighbor: return "neighbor";
    case ExchangeStrategy::Persistent: return "persistent";
    case ExchangeStrategy::P2P: return "p2p";
    case ExchangeStrategy::NodeShared: return "node-shared";
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

bool have_neighbor_collectives() { return !kSimulatedMpi; }

}  // namespace tessel::comm

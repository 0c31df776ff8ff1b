// Distributed H phi against an independent serial application on the same mesh (written here
// from the mesh alone, no plan, no exchange): bit-identical for every exchange strategy, both
// orders, several batch widths and both partitioners; ranks with no neighbour and graphs
// with no edge at all; the ledger's halo bytes against the plan's formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tessel/comm/exchange.hpp"
#include "tessel/core/context.hpp"
#include "tessel/stencil/fd.hpp"
#include "tessel/stencil/hamiltonian.hpp"
#include "tessel/stencil/partition.hpp"

using namespace tessel;
using namespace tessel::stencil;

namespace {

const std::vector<comm::ExchangeStrategy> kStrategies = {
    comm::ExchangeStrategy::Alltoallv, comm::ExchangeStrategy::Ialltoallv,
    comm::ExchangeStrategy::Neighbor, comm::ExchangeStrategy::Persistent,
    comm::ExchangeStrategy::P2P};

double value(std::int64_t g, int b) {
  return std::sin(0.37 * static_cast<double>(g) + 1.1 * b) + 0.01 * b;
}

// Serial H x at every mesh point, the same arithmetic sequence per point as the kernels.
std::vector<double> serial_apply(const Mesh& m, const std::vector<double>& v, int order, int w) {
  const int r = order / 2;
  const auto c = second_derivative_weights(order);
  const double scale = -0.5 / (m.spacing() * m.spacing());
  std::vector<double> y(static_cast<std::size_t>(m.size() * w));
  for (std::int64_t g = 0; g < m.size(); ++g)
    for (int b = 0; b < w; ++b) {
      double acc = 3.0 * c[0] * value(g, b);
      const auto cg = m.coords(g);
      for (int axis = 0; axis < 3; ++axis)
        for (int k = -r; k <= r; ++k) {
          if (k == 0) continue;
          auto q = cg;
          q[static_cast<std::size_t>(axis)] += k;
          const std::int64_t o = m.find(q[0], q[1], q[2]);
          if (o >= 0) acc += c[static_cast<std::size_t>(std::abs(k))] * value(o, b);
        }
      double yy = v[static_cast<std::size_t>(g)] * value(g, b);
      yy += scale * acc;
      y[static_cast<std::size_t>(g * w + b)] = yy;
    }
  return y;
}

// Runs every strategy and order on `owner`, comparing bitwise with the serial result.
void check_all(Context& ctx, const Mesh& m, const std::vector<int>& owner, int order,
               const std::vector<int>& widths) {
  const int P = ctx.size(), me = ctx.rank();
  HaloPlan plan = make_halo_plan(m, owner, P, order, me);
  std::vector<double> vglob(static_cast<std::size_t>(m.size()));
  for (std::int64_t g = 0; g < m.size(); ++g)
    vglob[static_cast<std::size_t>(g)] = 0.3 * std::cos(0.11 * static_cast<double>(g));
  std::vector<double> vloc;
  for (auto g : plan.points) vloc.push_back(vglob[static_cast<std::size_t>(g)]);
  for (int w : widths) {
    const auto ref = serial_apply(m, vglob, order, w);
    std::vector<double> x(static_cast<std::size_t>(plan.local_size() * w)), y(x.size());
    for (std::size_t i = 0; i < plan.points.size(); ++i)
      for (int b = 0; b < w; ++b)
        x[i * static_cast<std::size_t>(w) + static_cast<std::size_t>(b)] = value(plan.points[i], b);
    for (auto s : kStrategies) {
      if (s == comm::ExchangeStrategy::Persistent && !comm::have_persistent_neighbor()) {
        Hamiltonian h(ctx, plan, vloc, m.spacing(), {s, true});
        EXPECT_THROW(h.apply(x.data(), y.data(), w), InputError);  // on every rank, no hang
        continue;
      }
      for (bool overlap : {true, false}) {
        SCOPED_TRACE(::testing::Message()
                     << comm::to_string(s) << " overlap " << overlap << " width " << w << " order "
                     << order << " ranks " << P);
        HamiltonianOptions opt{s, overlap, 7};
        Hamiltonian h(ctx, plan, vloc, m.spacing(), opt);
        ctx.ledger().reset();
        std::fill(y.begin(), y.end(), -1.0);
        h.apply(x.data(), y.data(), w);
        h.apply(x.data(), y.data(), w);  // twice: persistent requests and graphs are reused
        int bad = 0;
        for (std::size_t i = 0; i < plan.points.size(); ++i)
          for (int b = 0; b < w; ++b) {
            const double got = y[i * static_cast<std::size_t>(w) + static_cast<std::size_t>(b)];
            const double want = ref[static_cast<std::size_t>(plan.points[i] * w + b)];
            if (std::memcmp(&got, &want, sizeof(double)) != 0) ++bad;
          }
        EXPECT_EQ(bad, 0);
        // Ledger: two applies, each the plan's items x width doubles.
        const auto k = ctx.ledger().total("stencil/halo");
        const std::int64_t bytes =
            2 * w * 8 * (plan.exchange.send_items() + plan.exchange.recv_items());
        if (s == comm::ExchangeStrategy::P2P) {
          EXPECT_EQ(k.p2p_sent_bytes + k.p2p_recv_bytes, bytes);
          EXPECT_EQ(k.p2p_sent_msgs,
                    2 * static_cast<std::int64_t>(plan.exchange.send_peers.size()));
          EXPECT_EQ(k.coll_calls, 0);
        } else {
          EXPECT_EQ(k.coll_bytes, bytes);
          EXPECT_EQ(k.coll_calls, 2);
          EXPECT_EQ(k.p2p_sent_msgs, 0);
        }
      }
    }
  }
}

std::vector<Atom> molecule() {
  return {{"C", 0, 0, 0},
          {"C", 1.4, 0.3, 0},
          {"H", -0.6, 1.1, 0.4},
          {"O", 3.9, 0, 0.5},
          {"H", 2.5, -1.5, 0}};
}

}  // namespace

TEST(StencilHamiltonian, BitIdenticalToSerialMetis) {
  Context ctx(MPI_COMM_WORLD);
  Mesh m = Mesh::spheres(molecule(), 1.7, 0.45);
  for (int order : {4, 12})
    check_all(ctx, m, partition_mesh(m, ctx.size(), Partitioner::Metis, order), order, {1, 3});
}

TEST(StencilHamiltonian, BitIdenticalToSerialGeometric) {
  Context ctx(MPI_COMM_WORLD);
  Mesh m = Mesh::spheres(molecule(), 1.7, 0.45);
  check_all(ctx, m, partition_mesh(m, ctx.size(), Partitioner::Geometric, 6), 6, {2, 17});
}

TEST(StencilHamiltonian, BoxMeshOrder2And8) {
  Context ctx(MPI_COMM_WORLD);
  Mesh m = Mesh::box(4.0, 0.5);
  for (int order : {2, 8})
    check_all(ctx, m, partition_mesh(m, ctx.size(), Partitioner::Metis, order), order, {1});
}

// Rank 0 owns an isolated sphere (degree 0); the other ranks share a second one.
TEST(StencilHamiltonian, ZeroDegreeRank) {
  Context ctx(MPI_COMM_WORLD);
  const int P = ctx.size();
  Mesh m = Mesh::spheres({{"H", 0, 0, 0}, {"H", 20, 0, 0}}, 1.5, 0.5);
  std::vector<int> owner(static_cast<std::size_t>(m.size()));
  std::vector<std::int64_t> far;
  for (std::int64_t g = 0; g < m.size(); ++g) {
    if (m.position(g)[0] < 10)
      owner[static_cast<std::size_t>(g)] = 0;
    else
      far.push_back(g);
  }
  for (std::size_t i = 0; i < far.size(); ++i)
    owner[static_cast<std::size_t>(far[i])] =
        P == 1 ? 0 : 1 + static_cast<int>(i * static_cast<std::size_t>(P - 1) / far.size());
  HaloPlan plan = make_halo_plan(m, owner, P, 4, ctx.rank());
  if (ctx.rank() == 0)
    EXPECT_TRUE(plan.exchange.send_peers.empty() && plan.exchange.recv_peers.empty());
  check_all(ctx, m, owner, 4, {1, 2});
}

// Every rank owns a sphere of its own: an exchange graph with no edge at all.
TEST(StencilHamiltonian, EmptyGraph) {
  Context ctx(MPI_COMM_WORLD);
  const int P = ctx.size();
  std::vector<Atom> atoms;
  for (int q = 0; q < P; ++q) atoms.push_back({"H", 10.0 * q, 0, 0});
  Mesh m = Mesh::spheres(atoms, 1.2, 0.5);
  std::vector<int> owner(static_cast<std::size_t>(m.size()));
  for (std::int64_t g = 0; g < m.size(); ++g)
    owner[static_cast<std::size_t>(g)] = static_cast<int>(std::lround(m.position(g)[0] / 10.0));
  check_all(ctx, m, owner, 6, {3});
}

TEST(StencilHamiltonian, BadArgumentsThrowOnEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  Mesh m = Mesh::box(3.0, 0.5);
  auto owner = partition_mesh(m, ctx.size(), Partitioner::Geometric, 2);
  HaloPlan plan = make_halo_plan(m, owner, ctx.size(), 2, ctx.rank());
  std::vector<double> v(static_cast<std::size_t>(plan.local_size()), 0.0), x(v), y(v);
  Hamiltonian h(ctx, plan, v, 0.5);
  EXPECT_THROW(h.apply(x.data(), y.data(), 0), InputError);
  EXPECT_THROW(Hamiltonian(ctx, plan, std::vector<double>(v.size() + 1), 0.5), DimensionMismatch);
  // An inconsistent plan on one rank only: every rank throws, none waits.
  comm::ExchangePlan bad = plan.exchange;
  if (ctx.rank() == ctx.size() - 1) {
    bad.send_peers.push_back(ctx.rank());
    bad.send_counts.push_back(1);
    bad.send_offsets.push_back(0);
  }
  EXPECT_THROW(comm::make_exchanger(ctx.comm(), bad, 1, comm::ExchangeStrategy::Neighbor), Error);
}

// The partition with the mesh on rank 0 only (the command's path, which keeps one mesh per
// simulation under SMPI): the same owners as the serial partition on every rank, the count and
// the owners as the ledger's broadcast payload, and rank 0's errors thrown on every rank.
TEST(StencilPartition, MeshOnRootOnly) {
  Context ctx(MPI_COMM_WORLD);
  const Mesh m = Mesh::spheres(molecule(), 1.7, 0.45);
  for (auto how : {Partitioner::Metis, Partitioner::Geometric}) {
    ctx.ledger().reset();
    const auto owner = partition_mesh_on_root(ctx, ctx.rank() == 0 ? &m : nullptr, how, 4);
    EXPECT_EQ(owner, partition_mesh(m, ctx.size(), how, 4));
    EXPECT_EQ(ctx.ledger().total("stencil/partition").coll_calls, 2);
  }
  // 65^3 = 274,625 points: the owners in two pieces (three broadcasts with the count).
  const Mesh big = Mesh::box(33.0, 0.5);
  ASSERT_GT(big.size(), kOwnerBcastPiece);
  ctx.ledger().reset();
  const auto owner =
      partition_mesh_on_root(ctx, ctx.rank() == 0 ? &big : nullptr, Partitioner::Geometric, 2);
  EXPECT_EQ(owner, partition_mesh(big, ctx.size(), Partitioner::Geometric, 2));
  EXPECT_EQ(ctx.ledger().total("stencil/partition").coll_calls,
            1 + (big.size() + kOwnerBcastPiece - 1) / kOwnerBcastPiece);
  EXPECT_EQ(ctx.ledger().total("stencil/partition").coll_bytes,
            static_cast<std::int64_t>(sizeof(std::int64_t)) + 4 * big.size());
  const Mesh tiny = Mesh::box(1.0, 0.5);  // one point
  if (ctx.size() > 1)
    EXPECT_THROW(
        partition_mesh_on_root(ctx, ctx.rank() == 0 ? &tiny : nullptr, Partitioner::Geometric, 2),
        GridError);
  EXPECT_THROW(partition_mesh_on_root(ctx, nullptr, Partitioner::Geometric, 2), Error);
  EXPECT_THROW(partition_mesh_on_root(ctx, &m, Partitioner::Geometric, 3), InputError);
}

// A packed exchange's plan (ExchangePlan::from_counts: a self piece and zero counts) through
// every Exchanger strategy: each received item against the value its sender wrote, computed
// here from (sender, receiver, item, lane).
TEST(StencilExchangePlan, PackedPlanEveryStrategy) {
  Context ctx(MPI_COMM_WORLD);
  const int P = ctx.size(), me = ctx.rank(), w = 3;
  auto count = [](int from, int to) { return static_cast<std::int64_t>((from + 2 * to) % 3); };
  auto val = [](int from, int to, std::int64_t k, int b) {
    return 1000.0 * from + 100.0 * to + 10.0 * k + b;
  };
  std::vector<std::int64_t> send(static_cast<std::size_t>(P)), recv(send);
  for (int q = 0; q < P; ++q)
    send[static_cast<std::size_t>(q)] = count(me, q),
    recv[static_cast<std::size_t>(q)] = count(q, me);
  const auto plan = comm::ExchangePlan::from_counts(send, recv, me);
  for (auto s : kStrategies) {
    if (s == comm::ExchangeStrategy::Persistent && !comm::have_persistent_neighbor()) continue;
    SCOPED_TRACE(comm::to_string(s));
    auto ex = comm::make_exchanger(ctx.comm(), plan, w, s);
    for (int round = 0; round < 2; ++round) {
      ex->post_receives();
      double* sb = ex->send_buffer();
      for (int q = 0, at = 0; q < P; ++q)
        for (std::int64_t k = 0; k < count(me, q); ++k, ++at)
          for (int b = 0; b < w; ++b) sb[at * w + b] = val(me, q, k, b) + round;
      ex->start();
      for (int i = 0; i < 3 && !ex->test(); ++i) {}
      ex->wait();
      EXPECT_TRUE(ex->test());  // completed: test stays true
      int bad = 0;
      for (int q = 0, at = 0; q < P; ++q)
        for (std::int64_t k = 0; k < count(q, me); ++k, ++at)
          for (int b = 0; b < w; ++b)
            bad += ex->recv_buffer()[at * w + b] != val(q, me, k, b) + round;
      EXPECT_EQ(bad, 0);
    }
  }
}

// A rank that leaves between posting its receives and sending (an exception; its executor is
// destroyed while unwinding) ends every rank within seconds through RequestSet's failure
// notices: its ring neighbour's wait throws PeerFailure, the others fail at their next wait.
TEST(StencilExchangePlan, RankLeavingAnExchangeEndsEveryRank) {
  for (auto s : {comm::ExchangeStrategy::P2P}) {
    Context ctx(MPI_COMM_WORLD);
    const int P = ctx.size(), me = ctx.rank(), bad = P - 1;
    if (P == 1) GTEST_SKIP() << "needs a peer";
    SCOPED_TRACE(comm::to_string(s));
    comm::ExchangePlan plan;
    plan.send_peers = {(me + 1) % P}, plan.send_counts = {2}, plan.send_offsets = {0};
    plan.recv_peers = {(me + P - 1) % P}, plan.recv_counts = {2}, plan.recv_offsets = {0};
    const auto t0 = std::chrono::steady_clock::now();
    std::string what;
    try {
      auto ex = comm::make_exchanger(ctx.comm(), plan, 3, s);
      ex->post_receives();
      if (me == bad) throw std::runtime_error("injected failure before sending");
      ex->start();
      ex->wait();
      ctx.comm().barrier();
    } catch (const std::exception& e) { what = e.what(); }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (me == bad)
      EXPECT_EQ(what, "injected failure before sending");
    else
      EXPECT_NE(what.find("left an exchange with an error"), std::string::npos)
          << "rank " << me << ": " << what;
    EXPECT_LT(secs, 20.0);
  }
}

// The same packed plan on the caller's buffers (BufferOwner::Caller, as the block-sparse code's
// packed exchange runs it) through every strategy that takes them: each received item against
// its sender's value, the self piece copied, and the ledger's record (one collective call of
// sum(send) + sum(recv) bytes, or the p2p messages).
TEST(StencilExchangePlan, CallerBuffersEveryStrategy) {
  Context ctx(MPI_COMM_WORLD);
  const int P = ctx.size(), me = ctx.rank();
  auto count = [](int from, int to) { return static_cast<std::int64_t>((from + 2 * to) % 3); };
  auto val = [](int from, int to, std::int64_t k) { return 1000.0 * from + 100.0 * to + k; };
  std::vector<std::int64_t> send(static_cast<std::size_t>(P)), recv(send);
  std::int64_t ns = 0, nr = 0, self = count(me, me);
  for (int q = 0; q < P; ++q) {
    send[static_cast<std::size_t>(q)] = count(me, q), ns += count(me, q);
    recv[static_cast<std::size_t>(q)] = count(q, me), nr += count(q, me);
  }
  const auto plan = comm::ExchangePlan::from_counts(send, recv, me);
  std::vector<double> sb, rb(static_cast<std::size_t>(nr));
  for (int q = 0; q < P; ++q)
    for (std::int64_t k = 0; k < count(me, q); ++k) sb.push_back(val(me, q, k));
  for (auto s : {comm::ExchangeStrategy::Alltoallv, comm::ExchangeStrategy::Ialltoallv,
                 comm::ExchangeStrategy::Neighbor, comm::ExchangeStrategy::P2P}) {
    if (s == comm::ExchangeStrategy::Neighbor && !comm::have_neighbor_collectives()) continue;
    SCOPED_TRACE(comm::to_string(s));
    ctx.ledger().reset();
    std::fill(rb.begin(), rb.end(), -1.0);
    {
      comm::Exchange<double, comm::BufferOwner::Caller> ex(ctx.comm(), plan, {s, comm::tag::kHalo});
      ex.start(sb.data(), rb.data());
      ex.wait();
    }
    int bad = 0;
    for (int q = 0, at = 0; q < P; ++q)
      for (std::int64_t k = 0; k < count(q, me); ++k, ++at) bad += rb[at] != val(q, me, k);
    EXPECT_EQ(bad, 0);
    const auto k = ctx.ledger().total();
    const std::int64_t moved = 8 * (ns + nr - 2 * self);
    if (s == comm::ExchangeStrategy::P2P) {
      EXPECT_EQ(k.p2p_sent_bytes + k.p2p_recv_bytes, moved);
      EXPECT_EQ(k.coll_calls, 0);
    } else {
      EXPECT_EQ(k.coll_bytes, moved);
      EXPECT_EQ(k.coll_calls, 1);
    }
  }
  // The strategies that bind or place the buffers need the executor's own.
  EXPECT_THROW((comm::Exchange<double, comm::BufferOwner::Caller>(
                   ctx.comm(), plan, {comm::ExchangeStrategy::Persistent, comm::tag::kHalo})),
               Error);
}

// Redistribution between random block-cyclic layouts against the gathered original.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <complex>
#include <cstring>
#include <random>

#include "tessel/comm/comm_cache.hpp"
#include "tessel/comm/shared_window.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/layout/grid2d.hpp"
#include "tessel/layout/redistribute.hpp"
#include "test_util.hpp"

using namespace tessel;

using tessel::testing::grid_for;

TEST(Redistribute, RoundTripBetweenRandomLayouts) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(42);  // same on all ranks
  for (int trial = 0; trial < 12; ++trial) {
    std::int64_t m = 1 + rng() % 37, n = 1 + rng() % 29;
    auto g1 = grid_for(ctx.size(), trial);
    auto g2 = grid_for(ctx.size(), trial + 1);
    auto l1 = layout::Layout::block_cyclic(m, n, 1 + rng() % 5, 1 + rng() % 6, g1.first, g1.second,
                                           0, g1.second - 1, ctx.size());
    auto l2 = layout::Layout::block_cyclic(m, n, 1 + rng() % 7, 1 + rng() % 4, g2.first, g2.second,
                                           g2.first - 1, 0, ctx.size());
    std::vector<double> full(static_cast<std::size_t>(m * n));
    for (std::size_t i = 0; i < full.size(); ++i) full[i] = static_cast<double>(i) + 0.5;
    auto a = dense::scatter(ctx, full.data(), l1);
    auto b = dense::redistribute(ctx, a, l2);
    // every local element of b must equal its global value
    int bad = 0;
    b.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
      if (v != full[static_cast<std::size_t>(j * m + i)]) ++bad;
    });
    EXPECT_EQ(bad, 0) << "trial " << trial;
    auto back = dense::gather(ctx, b);
    if (ctx.rank() == 0) EXPECT_EQ(back, full) << "trial " << trial;
    // the ledger equals an element-by-element count of the moves (independent of the
    // library's plan), and so does the prediction redist_volume
    const auto v =
        tessel::testing::brute_volume(tessel::testing::owner_map(ctx, l1),
                                      tessel::testing::owner_map(ctx, l2), ctx.rank(), ctx.size());
    const auto pred = layout::redist_volume(l1, l2, ctx.rank());
    EXPECT_EQ(pred.send_elems, v.send_elems);
    EXPECT_EQ(pred.recv_elems, v.recv_elems);
    EXPECT_EQ(pred.send_msgs, v.send_msgs);
    EXPECT_EQ(pred.recv_msgs, v.recv_msgs);
    ctx.ledger().reset();
    {
      PhaseScope ph(ctx.ledger(), "r");
      auto c = dense::redistribute(ctx, a, l2);
    }
    EXPECT_EQ(ctx.ledger().total().p2p_recv_bytes, v.recv_elems * 8);
    EXPECT_EQ(ctx.ledger().total().p2p_sent_bytes, v.send_elems * 8);
    EXPECT_EQ(ctx.ledger().total().p2p_recv_msgs, v.recv_msgs);
    EXPECT_EQ(ctx.ledger().total().p2p_sent_msgs, v.send_msgs);
  }
}

// ---------------------------------------------------------------- node-shared (RedistOptions)
namespace {
// A random layout over `p` ranks: block-cyclic over a random grid of q <= p ranks (the others
// hold empty local blocks) with a random rank order, or the whole matrix on one rank.
layout::Layout random_layout(std::mt19937& rng, std::int64_t m, std::int64_t n, int p) {
  if (rng() % 5 == 0) return layout::Layout::on_rank(m, n, static_cast<int>(rng() % p), p);
  auto g = grid_for(p, static_cast<int>(rng() % 6));
  std::vector<int> ranks(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) ranks[static_cast<std::size_t>(i)] = i;
  std::shuffle(ranks.begin(), ranks.end(), rng);
  ranks.resize(static_cast<std::size_t>(g.first * g.second));
  return layout::Layout::block_cyclic(m, n, 1 + rng() % 6, 1 + rng() % 6, g.first, g.second,
                                      static_cast<int>(rng() % g.first),
                                      static_cast<int>(rng() % g.second), p, ranks);
}

template <class T>
T value_at(std::int64_t i, std::int64_t j, int trial);
template <>
double value_at<double>(std::int64_t i, std::int64_t j, int trial) {
  return std::sin(0.37 * static_cast<double>(i) + 1.3 * static_cast<double>(j) + trial) * 1e3 / 7;
}
template <>
std::complex<double> value_at<std::complex<double>>(std::int64_t i, std::int64_t j, int trial) {
  return {value_at<double>(i, j, trial), value_at<double>(j, i, trial + 1)};
}

// Redistributes l1 -> l2 plainly and node-shared (node_size), checks bit-identity and that the
// ledger splits the plain volume into p2p (other nodes) + shm (same node).
template <class T>
void check_node_shared(Context& ctx, const layout::Layout& l1, const layout::Layout& l2,
                       int node_size, int trial) {
  dense::DistMatrix<T> a(ctx, l1);
  a.for_each_local([&](std::int64_t i, std::int64_t j, T& v) { v = value_at<T>(i, j, trial); });
  dense::DistMatrix<T> plain(ctx, l2), shm(ctx, l2);
  layout::redistribute(ctx.comm(), l1, a.data(), a.ld(), l2, plain.data(), plain.ld());
  ctx.ledger().reset();
  {
    PhaseScope ph(ctx.ledger(), "shm");
    layout::RedistOptions opt;
    opt.node_shared = true;
    opt.node_size = node_size;
    layout::redistribute(ctx.comm(), l1, a.data(), a.ld(), l2, shm.data(), shm.ld(), opt);
  }
  const std::size_t bytes =
      static_cast<std::size_t>(l2.local_rows(ctx.rank()) * l2.local_cols(ctx.rank())) * sizeof(T);
  if (bytes > 0)
    EXPECT_EQ(std::memcmp(plain.data(), shm.data(), bytes), 0)
        << "trial " << trial << " node_size " << node_size;
  int bad = 0;
  shm.for_each_local([&](std::int64_t i, std::int64_t j, T& v) {
    if (v != value_at<T>(i, j, trial)) ++bad;
  });
  EXPECT_EQ(bad, 0) << "trial " << trial << " node_size " << node_size;

  const auto t = ctx.ledger().total();  // before owner_map's allreduces
  const auto v =
      tessel::testing::brute_volume(tessel::testing::owner_map(ctx, l1),
                                    tessel::testing::owner_map(ctx, l2), ctx.rank(), ctx.size());
  const auto sz = static_cast<std::int64_t>(sizeof(T));
  EXPECT_EQ(t.p2p_sent_bytes + t.shm_bytes, v.send_elems * sz) << "trial " << trial;
  EXPECT_EQ(t.p2p_sent_msgs + t.shm_msgs, v.send_msgs) << "trial " << trial;
  EXPECT_LE(t.p2p_recv_bytes, v.recv_elems * sz) << "trial " << trial;
  EXPECT_EQ(t.rma_ops, 0);
  if (node_size == 1) {  // every rank its own node: the plain path
    EXPECT_EQ(t.shm_bytes, 0);
    EXPECT_EQ(t.p2p_sent_bytes, v.send_elems * sz);
    EXPECT_EQ(t.p2p_recv_bytes, v.recv_elems * sz);
  }
}
}  // namespace

TEST(Redistribute, NodeSharedBitIdenticalOnRandomLayouts) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(4242);  // same on all ranks
  const int p = ctx.size();
  for (int trial = 0; trial < 10; ++trial) {
    std::int64_t m = 1 + rng() % 41, n = 1 + rng() % 33;
    auto l1 = random_layout(rng, m, n, p);
    auto l2 = random_layout(rng, m, n, p);
    for (int ns : {0, 1, 2, 3}) {
      check_node_shared<double>(ctx, l1, l2, ns, trial);
      if (trial % 3 == 0) check_node_shared<std::complex<double>>(ctx, l1, l2, ns, trial);
    }
  }
}

// The MPI_Alltoallv executor of the same plan: bit-identical to the point-to-point one and
// to the element values; the ledger shows one collective call whose payload is the element
// count of the moves (counted element by element from the two layouts' owners, not by the
// library's plan) and no point-to-point traffic. Both together is an InputError on every rank.
TEST(Redistribute, AlltoallvExecutorMovesThePlanInOneCollective) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(911);  // same on all ranks
  const int p = ctx.size();
  for (int trial = 0; trial < 8; ++trial) {
    std::int64_t m = 1 + rng() % 41, n = 1 + rng() % 33;
    auto l1 = random_layout(rng, m, n, p);
    auto l2 = random_layout(rng, m, n, p);
    dense::DistMatrix<std::complex<double>> a(ctx, l1), plain(ctx, l2), coll(ctx, l2);
    a.for_each_local([&](std::int64_t i, std::int64_t j, std::complex<double>& v) {
      v = value_at<std::complex<double>>(i, j, trial);
    });
    ctx.ledger().reset();
    {
      PhaseScope ph(ctx.ledger(), "p2p");
      layout::redistribute(ctx.comm(), l1, a.data(), a.ld(), l2, plain.data(), plain.ld());
    }
    const auto agree = ctx.ledger().total();  // the p2p call's collectives: its agreed checks
    layout::RedistOptions opt;
    opt.alltoallv = true;
    ctx.ledger().reset();
    {
      PhaseScope ph(ctx.ledger(), "a2av");
      layout::redistribute(ctx.comm(), l1, a.data(), a.ld(), l2, coll.data(), coll.ld(), opt);
    }
    const auto t = ctx.ledger().total();
    const std::size_t bytes =
        static_cast<std::size_t>(l2.local_rows(ctx.rank()) * l2.local_cols(ctx.rank())) *
        sizeof(std::complex<double>);
    if (bytes > 0) EXPECT_EQ(std::memcmp(plain.data(), coll.data(), bytes), 0) << "trial " << trial;
    int bad = 0;
    coll.for_each_local([&](std::int64_t i, std::int64_t j, std::complex<double>& v) {
      if (v != value_at<std::complex<double>>(i, j, trial)) ++bad;
    });
    EXPECT_EQ(bad, 0) << "trial " << trial;
    const auto v = tessel::testing::brute_volume(
        tessel::testing::owner_map(ctx, l1), tessel::testing::owner_map(ctx, l2), ctx.rank(), p);
    EXPECT_EQ(t.p2p_sent_bytes + t.p2p_recv_bytes + t.shm_bytes, 0) << "trial " << trial;
    // the same agreed checks as the p2p call, and the alltoallv
    EXPECT_EQ(t.coll_calls, agree.coll_calls + 1) << "trial " << trial;
    EXPECT_EQ(t.coll_bytes - agree.coll_bytes, (v.send_elems + v.recv_elems) * 16)
        << "trial " << trial;
  }
  layout::RedistOptions both;
  both.alltoallv = both.node_shared = true;
  const auto l = layout::Layout::on_rank(3, 3, 0, p);
  std::vector<double> x(9, 1.0), y(9, 0.0);
  EXPECT_THROW(layout::redistribute(ctx.comm(), l, x.data(), 3, l, y.data(), 3, both), InputError);
}

TEST(Redistribute, NodeSharedOneNodeMovesNoP2pBytes) {
  // Every rank of this test run is on one machine: with the real node, every pair shares
  // memory, so the ledger shows no point-to-point bytes and shm bytes equal the plain volume.
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(77);
  const int p = ctx.size();
  // Can MPI make a shared window here? (Open MPI 4.1 with OMPI_MCA_osc=ucx alone cannot:
  // redistribute then falls back to point-to-point, which this test checks instead.)
  bool shm_ok = true;
  {
    comm::NodeComm node(ctx.comm());
    try {
      comm::SharedWindow<double> w(node.comm(), 1);
    } catch (const MpiError& e) {
      shm_ok = false;
      if (ctx.rank() == 0)
        std::printf("no shared window (%s): checking the p2p fallback\n", e.what());
    }
  }
  for (int trial = 0; trial < 6; ++trial) {
    std::int64_t m = 1 + rng() % 50, n = 1 + rng() % 50;
    auto l1 = random_layout(rng, m, n, p);
    auto l2 = random_layout(rng, m, n, p);
    std::vector<double> a(static_cast<std::size_t>(
        std::max<std::int64_t>(1, l1.local_rows(ctx.rank()) * l1.local_cols(ctx.rank())))),
        b(static_cast<std::size_t>(
            std::max<std::int64_t>(1, l2.local_rows(ctx.rank()) * l2.local_cols(ctx.rank()))));
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i);
    layout::RedistOptions opt;
    opt.node_shared = true;
    opt.node_size = 0;
    ctx.ledger().reset();
    {
      PhaseScope ph(ctx.ledger(), "shm");
      layout::redistribute(ctx.comm(), l1, a.data(),
                           std::max<std::int64_t>(1, l1.local_rows(ctx.rank())), l2, b.data(),
                           std::max<std::int64_t>(1, l2.local_rows(ctx.rank())), opt);
    }
    const auto t = ctx.ledger().total();  // before owner_map's allreduces
    const auto v = tessel::testing::brute_volume(
        tessel::testing::owner_map(ctx, l1), tessel::testing::owner_map(ctx, l2), ctx.rank(), p);
    if (!shm_ok) {
      EXPECT_EQ(t.shm_bytes, 0);
      EXPECT_EQ(t.p2p_sent_bytes, v.send_elems * 8) << "trial " << trial;
      EXPECT_EQ(t.p2p_recv_bytes, v.recv_elems * 8) << "trial " << trial;
      continue;
    }
    EXPECT_EQ(t.p2p_sent_bytes, 0) << "trial " << trial;
    EXPECT_EQ(t.p2p_recv_bytes, 0) << "trial " << trial;
    EXPECT_EQ(t.p2p_sent_msgs + t.p2p_recv_msgs, 0) << "trial " << trial;
    EXPECT_EQ(t.shm_bytes, v.send_elems * 8) << "trial " << trial;
    EXPECT_EQ(t.shm_msgs, v.send_msgs) << "trial " << trial;
    EXPECT_EQ(t.recv_bytes() + t.sent_bytes(), 0);
  }
}

// The node communicator and the shared window of the node-shared path are made once per
// Context (Context::cache()) and reused: repeated calls make nothing new (CommCache::
// creations), a larger matrix grows the window once, a smaller one reuses it; every result is
// the gathered original, element by element (independent of the path). A communicator
// without a cache (a duplicate of the Context's) makes its own for each call, with the same
// results.
TEST(Redistribute, NodeSharedReusesTheContextsNodeCommAndWindow) {
  ContextOptions copt;
  copt.node_size = 2;  // emulated nodes of 2: shared-window pairs and p2p pairs
  Context ctx(MPI_COMM_WORLD, copt);
  const int p = ctx.size(), me = ctx.rank();
  layout::RedistOptions opt;
  opt.node_shared = true;
  auto run = [&](const comm::Comm& c, std::int64_t n, int trial) {
    // row blocks -> column blocks: every rank sends to every other one
    const auto src = layout::Layout::block_cyclic(n, n, 3, n, p, 1, 0, 0, p);
    const auto dst = layout::Layout::block_cyclic(n, n, n, 2, 1, p, 0, 0, p);
    dense::DistMatrix<double> a(ctx, src), b(ctx, dst);
    a.for_each_local(
        [&](std::int64_t i, std::int64_t j, double& v) { v = value_at<double>(i, j, trial); });
    layout::redistribute(c, src, a.data(), a.ld(), dst, b.data(), b.ld(), opt);
    int bad = 0;
    b.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
      if (v != value_at<double>(i, j, trial)) ++bad;
    });
    EXPECT_EQ(bad, 0) << "n " << n << " trial " << trial;
  };
  ASSERT_EQ(ctx.comm().cache(), &ctx.cache());
  EXPECT_EQ(ctx.cache().creations(), 0);
  run(ctx.comm(), 20, 0);
  const int first = ctx.cache().creations();
  // this rank has a node peer when its emulated node of 2 is complete
  const bool peer = p > 1 && (me / 2 * 2 + 1) < p;
  if (p > 1) EXPECT_GE(first, 1);  // the node communicator (and, with a peer, the window)
  EXPECT_LE(first, peer ? 2 : 1);
  for (int trial = 1; trial < 4; ++trial) run(ctx.comm(), 20, trial);
  EXPECT_EQ(ctx.cache().creations(), first) << "same sizes: nothing made again";
  run(ctx.comm(), 11, 4);
  EXPECT_EQ(ctx.cache().creations(), first) << "smaller: the window is reused";
  run(ctx.comm(), 41, 5);
  const int grown = ctx.cache().creations();
  // grown on the ranks that have a window (a node where MPI cannot make one: never made)
  if (peer && first == 2)
    EXPECT_EQ(grown, first + 1);
  else
    EXPECT_EQ(grown, first);
  run(ctx.comm(), 41, 6);
  run(ctx.comm(), 7, 7);
  EXPECT_EQ(ctx.cache().creations(), grown);
  // node_size 1 (every rank its own node) is another entry: a node communicator, no window
  opt.node_size = 1;
  run(ctx.comm(), 13, 8);
  EXPECT_EQ(ctx.cache().creations(), grown + (p > 1 ? 1 : 0));
  opt.node_size = 0;
  // no cache: made and freed within each call
  const comm::Comm dup = ctx.comm().dup();
  EXPECT_EQ(dup.cache(), nullptr);
  const int before = ctx.cache().creations();
  run(dup, 20, 9);
  run(dup, 33, 10);
  EXPECT_EQ(ctx.cache().creations(), before);
}

// The emulated node size is a Context option (ContextOptions::node_size) with a documented
// precedence: a call's RedistOptions::node_size > the Context option > the real node. The
// library reads no environment (TESSEL_NODE_SIZE is the command's: parse_node_size).
// Communicators made from the Context's inherit it; bad values throw InputError naming them on
// every rank. The node communicators it gives have at most node_size ranks (checked against
// MPI_Comm_split_type's node, independently of tessel).
TEST(Redistribute, NodeSizeIsAContextOptionWithPrecedence) {
  {
    setenv("TESSEL_NODE_SIZE", "3", 1);  // not read by the library
    Context plain(MPI_COMM_WORLD);
    unsetenv("TESSEL_NODE_SIZE");
    EXPECT_EQ(plain.node_size(), 0);
    EXPECT_EQ(plain.machine_file(), "");
    layout::RedistOptions call;
    EXPECT_EQ(layout::redist_node_size(plain.comm(), call), 0);
    call.node_size = 1;
    EXPECT_EQ(layout::redist_node_size(plain.comm(), call), 1);
  }
  ContextOptions three;
  three.node_size = parse_node_size("3", "TESSEL_NODE_SIZE");
  three.machine_file = "machine.json";  // kept, not read: resolve_machine_model reads it
  Context from_opt(MPI_COMM_WORLD, three);
  ContextOptions two;
  two.node_size = 2;
  Context explicit_opt(MPI_COMM_WORLD, two);
  EXPECT_EQ(from_opt.node_size(), 3);
  EXPECT_EQ(from_opt.machine_file(), "machine.json");
  EXPECT_EQ(explicit_opt.node_size(), 2);
  EXPECT_EQ(from_opt.comm().dup().node_size(), 3);
  EXPECT_EQ(from_opt.comm().split(0, from_opt.rank()).node_size(), 3);
  layout::RedistOptions call;
  EXPECT_EQ(layout::redist_node_size(from_opt.comm(), call), 3);
  EXPECT_EQ(layout::redist_node_size(explicit_opt.comm(), call), 2);
  call.node_size = 1;
  EXPECT_EQ(layout::redist_node_size(explicit_opt.comm(), call), 1);
  {
    // the real node from MPI directly, then tessel's emulated node of 2 inside it
    MPI_Comm real;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &real);
    int real_size = 0, real_rank = 0;
    MPI_Comm_size(real, &real_size);
    MPI_Comm_rank(real, &real_rank);
    MPI_Comm_free(&real);
    comm::NodeComm node(explicit_opt.comm(), layout::redist_node_size(explicit_opt.comm(), {}));
    // consecutive node ranks in groups of 2; the last group is shorter when real_size is odd
    EXPECT_EQ(node.size(), std::min(2, real_size - real_rank / 2 * 2));
  }
  for (const char* bad : {"abc", "0", "-2", "3x", ""}) {
    try {
      parse_node_size(bad, "TESSEL_NODE_SIZE");
      ADD_FAILURE() << "TESSEL_NODE_SIZE='" << bad << "' accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("TESSEL_NODE_SIZE = '" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
  ContextOptions negative;
  negative.node_size = -1;
  try {
    Context c(MPI_COMM_WORLD, negative);
    ADD_FAILURE() << "node_size = -1 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("node_size = -1"), std::string::npos) << e.what();
  }
}

// layout::ProcessGrid2D with a placement (any rank order, ranks left out): each rank's row and
// column communicators hold exactly the world ranks the placement puts in its process row and
// column, ranked by process column and row (checked by allgathering world ranks over them).
TEST(ProcessGrid2D, PlacementGivesRowAndColumnCommunicators) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  std::mt19937 rng(3);  // same on all ranks
  for (int trial = 0; trial < 4; ++trial) {
    const int q = trial % 2 == 0 || p == 1 ? p : p - 1;
    int pr = layout::most_square_grid(q).first;
    if (trial % 2 == 1) pr = q / pr;
    const std::pair<int, int> g{pr, q / pr};
    std::vector<int> placement(static_cast<std::size_t>(p));
    for (int i = 0; i < p; ++i) placement[static_cast<std::size_t>(i)] = i;
    if (trial > 0) std::shuffle(placement.begin(), placement.end(), rng);
    placement.resize(static_cast<std::size_t>(q));
    const layout::ProcessGrid2D grid(ctx.comm(), g.first, g.second, placement);
    int at = -1;
    for (int k = 0; k < q; ++k)
      if (placement[static_cast<std::size_t>(k)] == ctx.rank()) at = k;
    ASSERT_EQ(grid.in_grid(), at >= 0) << "trial " << trial;
    for (int i = 0; i < g.first; ++i)
      for (int j = 0; j < g.second; ++j)
        EXPECT_EQ(grid.rank_of(i, j), placement[static_cast<std::size_t>(i * g.second + j)]);
    if (at < 0) {
      EXPECT_EQ(grid.prow(), -1);
      continue;
    }
    EXPECT_EQ(grid.prow(), at / g.second);
    EXPECT_EQ(grid.pcol(), at % g.second);
    std::vector<int> row(static_cast<std::size_t>(grid.row().size())),
        col(static_cast<std::size_t>(grid.col().size()));
    const int me = ctx.rank();
    grid.row().allgather(&me, 1, row.data());
    grid.col().allgather(&me, 1, col.data());
    ASSERT_EQ(static_cast<int>(row.size()), g.second);
    ASSERT_EQ(static_cast<int>(col.size()), g.first);
    for (int j = 0; j < g.second; ++j)
      EXPECT_EQ(row[static_cast<std::size_t>(j)],
                placement[static_cast<std::size_t>(grid.prow() * g.second + j)]);
    for (int i = 0; i < g.first; ++i)
      EXPECT_EQ(col[static_cast<std::size_t>(i)],
                placement[static_cast<std::size_t>(i * g.second + grid.pcol())]);
  }
  // Bad placements: GridError on every rank, before any communication.
  EXPECT_THROW(
      layout::ProcessGrid2D(ctx.comm(), 1, p, std::vector<int>(static_cast<std::size_t>(p + 1), 0)),
      GridError);
  EXPECT_THROW(layout::ProcessGrid2D(ctx.comm(), 1, 1, std::vector<int>{p}), GridError);
  if (p > 1)
    EXPECT_THROW(layout::ProcessGrid2D(ctx.comm(), 1, 2, std::vector<int>{0, 0}), GridError);
}

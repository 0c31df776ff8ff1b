// comm::Window: one-sided data movement is right, and the ledger records exactly the bytes and
// operations of the commcount rule (origin buffer bytes, one op per call, PROC_NULL not
// counted) — at every rank count, with windows of different sizes on different ranks.
#include <gtest/gtest.h>

#include <cstdio>
#include <mpi.h>

#include <complex>
#include <cstdint>
#include <vector>

#include "tessel/comm/shared_window.hpp"
#include "tessel/comm/window.hpp"
#include "tessel/core/context.hpp"

using tessel::Context;
using tessel::PhaseCounts;
using tessel::PhaseScope;
using tessel::comm::LockAllEpoch;
using tessel::comm::RequestSet;
using tessel::comm::Window;

namespace {

// Rank r exposes 8 + 3r elements (odd numbers of doubles on odd ranks: without the padding in
// Window, MPICH 4.0.2 misaddresses such windows); element i of rank r holds value(r, i).
std::int64_t local_count(int r) { return 8 + 3 * r; }
double value(int r, std::int64_t i) { return 1000.0 * r + static_cast<double>(i); }

// The slice rank `me` reads from rank `t`: a length and an offset that differ per pair and
// stay within t's window.
std::int64_t slice_len(int me, int t) { return 1 + (me + 2 * t) % 5; }
std::int64_t slice_off(int me, int t) {
  return (3 * me + t) % (local_count(t) - slice_len(me, t) + 1);
}

void expect_only_rma(const PhaseCounts& c, std::int64_t put, std::int64_t get, std::int64_t acc,
                     std::int64_t ops) {
  EXPECT_EQ(c.rma_put_bytes, put);
  EXPECT_EQ(c.rma_get_bytes, get);
  EXPECT_EQ(c.rma_acc_bytes, acc);
  EXPECT_EQ(c.rma_ops, ops);
  EXPECT_EQ(c.p2p_sent_bytes, 0);
  EXPECT_EQ(c.p2p_recv_bytes, 0);
  EXPECT_EQ(c.p2p_sent_msgs, 0);
  EXPECT_EQ(c.p2p_recv_msgs, 0);
}

}  // namespace

TEST(Window, RgetPutAccumulateValuesAndLedger) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size(), me = ctx.rank();
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  const std::int64_t n = local_count(me);

  Window<double> w(ctx.comm(), n);
  EXPECT_FALSE(w.is_null());
  EXPECT_EQ(w.size(), n);
  EXPECT_EQ(w.comm_size(), p);
  for (int t = 0; t < p; ++t) EXPECT_EQ(w.target_size(t), local_count(t));
  for (std::int64_t i = 0; i < n; ++i) w.data()[i] = value(me, i);
  ctx.comm().barrier();  // every window is filled before anyone reads

  // ---- every rank Rgets one slice from every other rank
  std::vector<std::vector<double>> got(static_cast<std::size_t>(p));
  std::int64_t get_elems = 0;
  {
    PhaseScope ph(ctx.ledger(), "rget");
    LockAllEpoch epoch(w);
    RequestSet rs;
    for (int t = 0; t < p; ++t) {
      if (t == me) continue;
      auto& g = got[static_cast<std::size_t>(t)];
      g.assign(static_cast<std::size_t>(slice_len(me, t)), -1.0);
      w.rget(g.data(), slice_len(me, t), t, slice_off(me, t), rs);
      get_elems += slice_len(me, t);
    }
    rs.wait_all();
    w.flush_local_all();
  }
  // (EXPECT, not ASSERT, wherever collectives follow: a rank leaving early would hang the rest)
  for (int t = 0; t < p; ++t) {
    if (t == me) continue;
    const auto& g = got[static_cast<std::size_t>(t)];
    int wrong = 0;
    for (std::int64_t i = 0; i < slice_len(me, t); ++i)
      wrong += g[static_cast<std::size_t>(i)] != value(t, slice_off(me, t) + i);
    EXPECT_EQ(wrong, 0) << "rank " << me << " got " << wrong << " wrong values of the slice ["
                        << slice_off(me, t) << ", +" << slice_len(me, t) << ") of rank " << t
                        << ", first " << g[0] << " instead of " << value(t, slice_off(me, t));
  }
  expect_only_rma(ctx.ledger().total("rget"), 0, get_elems * 8, 0, p - 1);
  ctx.comm().barrier();  // all reads done before the windows change

  // ---- passive target: Put k values into the right neighbour's [0, k); Accumulate k values
  // (me + 1) into [k, 2k) of both neighbours (the same rank twice when p <= 2).
  const std::int64_t k = 4;  // 2k <= 8 <= every window
  std::vector<double> put_src(k), acc_src(k, static_cast<double>(me + 1));
  for (std::int64_t j = 0; j < k; ++j) put_src[static_cast<std::size_t>(j)] = 1e6 * me + j;
  {
    PhaseScope ph(ctx.ledger(), "put_acc");
    LockAllEpoch epoch(w);
    w.put(put_src.data(), k, right, 0);
    w.accumulate(acc_src.data(), k, right, k);
    w.accumulate(acc_src.data(), k, left, k, MPI_SUM);
    w.flush(right);
    w.flush(left);
  }
  ctx.comm().barrier();  // every origin has closed its epoch: all updates are at the targets
  expect_only_rma(ctx.ledger().total("put_acc"), k * 8, 0, 2 * k * 8, 3);
  {
    // The target reads its own window: a memory barrier first (MPI_Win_sync).
    LockAllEpoch epoch(w);
    w.sync();
    const int from = left;  // who put into me
    double acc_expected = 0;
    for (int o = 0; o < p; ++o) {
      if ((o + 1) % p == me) acc_expected += o + 1;
      if ((o + p - 1) % p == me) acc_expected += o + 1;
    }
    for (std::int64_t j = 0; j < k; ++j) {
      EXPECT_EQ(w.data()[j], 1e6 * from + j) << "put, rank " << me << " element " << j;
      EXPECT_EQ(w.data()[k + j], value(me, k + j) + acc_expected)
          << "accumulate, rank " << me << " element " << k + j;
    }
    for (std::int64_t i = 2 * k; i < n; ++i) EXPECT_EQ(w.data()[i], value(me, i));
  }

  // ---- active target: fence / Put the last element of mine into the right neighbour's last
  // element / fence.
  ctx.comm().barrier();
  {
    PhaseScope ph(ctx.ledger(), "fence");
    double v = -1.0 - me;
    w.fence();
    w.put(&v, 1, right, local_count(right) - 1);
    w.fence();
  }
  EXPECT_EQ(w.data()[n - 1], -1.0 - left);
  expect_only_rma(ctx.ledger().total("fence"), 8, 0, 0, 1);

  // ---- whole-test ledger: the sum of the three phases (the constructor's allgather and
  // agreement are collectives, not one-sided)
  const PhaseCounts all = ctx.ledger().total();
  EXPECT_EQ(all.rma_get_bytes, get_elems * 8);
  EXPECT_EQ(all.rma_put_bytes, (k + 1) * 8);
  EXPECT_EQ(all.rma_acc_bytes, 2 * k * 8);
  EXPECT_EQ(all.rma_ops, (p - 1) + 3 + 1);
  EXPECT_EQ(all.sent_bytes(), (k + 1) * 8 + 2 * k * 8);
  EXPECT_EQ(all.recv_bytes(), get_elems * 8);
}

// Self-targeted and zero-count calls are operations (counted, as commcount counts them);
// MPI_PROC_NULL targets are not. Bytes are sizeof(T) per element for other types too.
TEST(Window, CountingEdgeCasesAndOtherTypes) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size(), me = ctx.rank();
  using C = std::complex<double>;
  Window<C> w(ctx.comm(), 6);
  for (int i = 0; i < 6; ++i) w.data()[i] = C(me, i);
  Window<std::int64_t> wi(ctx.comm(), me == 0 ? 0 : 3);  // rank 0 exposes nothing
  for (std::int64_t i = 0; i < wi.size(); ++i) wi.data()[i] = 0;
  ctx.comm().barrier();

  PhaseScope ph(ctx.ledger(), "edge");
  std::vector<C> buf(6);
  std::int64_t ones[3] = {1, 1, 1};
  {
    LockAllEpoch epoch(w);
    RequestSet rs;
    w.rget(buf.data(), 6, me, 0, rs);               // self: 96 get bytes, 1 op
    w.rget(buf.data(), 0, (me + 1) % p, 6, rs);     // zero count at the end: 0 bytes, 1 op
    w.rget(buf.data(), 6, MPI_PROC_NULL, 0, rs);    // not counted
    w.put(buf.data(), 3, MPI_PROC_NULL, 0);         // not counted
    w.accumulate(buf.data(), 2, MPI_PROC_NULL, 0);  // not counted
    rs.wait_all();
  }
  for (int i = 0; i < 6; ++i) EXPECT_EQ(buf[static_cast<std::size_t>(i)], C(me, i));
  {
    LockAllEpoch epoch(wi);
    for (int t = 1; t < p; ++t) wi.accumulate(ones, 3, t, 0);  // 24 acc bytes, 1 op each
    wi.accumulate(ones, 0, 0, 0);                              // into rank 0's empty window
  }
  ctx.comm().barrier();
  const PhaseCounts c = ctx.ledger().total("edge");
  EXPECT_EQ(c.rma_get_bytes, 6 * 16);
  EXPECT_EQ(c.rma_put_bytes, 0);
  EXPECT_EQ(c.rma_acc_bytes, (p - 1) * 3 * 8);
  EXPECT_EQ(c.rma_ops, 2 + (p - 1) + 1);
  {
    LockAllEpoch epoch(wi);
    wi.sync();
    for (std::int64_t i = 0; i < wi.size(); ++i) EXPECT_EQ(wi.data()[i], p);
  }
}

// Argument checks throw on the calling rank before anything is posted or recorded; the RAII
// pieces (epoch guard, move) behave.
TEST(Window, ChecksMoveAndEpochs) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size(), me = ctx.rank();
  Window<double> w(ctx.comm(), 5);
  RequestSet rs;
  double buf[8];
  PhaseScope ph(ctx.ledger(), "checks");
  EXPECT_THROW(w.rget(buf, 1, 0, 0, rs), tessel::Error);  // outside an epoch
  {
    LockAllEpoch epoch(w);
    EXPECT_TRUE(w.locked_all());
    EXPECT_THROW(w.lock_all(), tessel::Error);
    EXPECT_THROW(w.rget(buf, 6, 0, 0, rs), tessel::Error);  // past the end
    EXPECT_THROW(w.rget(buf, 2, 0, 4, rs), tessel::Error);  // past the end
    EXPECT_THROW(w.put(buf, 1, p, 0), tessel::Error);       // no such rank
    EXPECT_THROW(w.put(buf, 1, 0, -1), tessel::Error);      // negative offset
    EXPECT_THROW(w.accumulate(buf, -1, 0, 0), tessel::Error);
    EXPECT_THROW(w.fence(), tessel::Error);  // inside a lock_all epoch
  }
  EXPECT_FALSE(w.locked_all());
  EXPECT_THROW(w.unlock_all(), tessel::Error);
  EXPECT_TRUE(rs.empty());
  const PhaseCounts c = ctx.ledger().total("checks");
  EXPECT_EQ(c.rma_ops, 0);
  EXPECT_EQ(c.rma_get_bytes + c.rma_put_bytes + c.rma_acc_bytes, 0);

  // Move construction and assignment keep the window usable; the moved-from one is null.
  w.data()[0] = 10.0 + me;
  Window<double> moved(std::move(w));
  EXPECT_TRUE(w.is_null());  // NOLINT(bugprone-use-after-move)
  EXPECT_FALSE(moved.is_null());
  Window<double> other;
  EXPECT_TRUE(other.is_null());
  other = std::move(moved);
  ctx.comm().barrier();
  {
    LockAllEpoch epoch(other);
    other.rget(buf, 1, (me + 1) % p, 0, rs);
    rs.wait_all();
  }
  EXPECT_EQ(buf[0], 10.0 + (me + 1) % p);
  ctx.comm().barrier();

  // A negative count on one rank: every rank throws (the counts are allgathered).
  EXPECT_THROW(Window<double>(ctx.comm(), me == p - 1 ? -1 : 4), tessel::Error);
}

// SharedWindow (MPI_Win_allocate_shared over a NodeComm): every node rank stores into its
// right neighbour's part, publish() (Win_sync + node barrier + Win_sync), each reads its own
// part. Emulated nodes of 1, 2 and 3 ranks, and the real node. Where MPI has no shared windows
// (Open MPI with OMPI_MCA_osc=ucx alone) the constructor throws MpiError on every node rank.
TEST(SharedWindow, StoresIntoPeersAreSeenAfterPublish) {
  Context ctx(MPI_COMM_WORLD);
  for (int ns : {0, 1, 2, 3}) {
    tessel::comm::NodeComm node(ctx.comm(), ns);
    const tessel::comm::Comm& nc = node.comm();
    const int nn = nc.size(), me = nc.rank();
    if (ns > 0) EXPECT_LE(nn, ns);
    EXPECT_EQ(node.node_rank_of(ctx.rank()), me);
    const std::int64_t count = 3 + me;  // node rank r exposes 3 + r doubles
    ctx.ledger().reset();
    try {
      tessel::comm::SharedWindow<double> w(nc, count);
      for (int r = 0; r < nn; ++r) EXPECT_EQ(w.peer_size(r), 3 + r);
      w.lock_all();
      const int right = (me + 1) % nn;
      double* dst = w.peer_data(right);
      for (std::int64_t i = 0; i < 3 + right; ++i)
        dst[i] = 100.0 * ctx.rank() + static_cast<double>(i);
      w.record_transfer(3 + right);
      w.publish(nc);
      const int left = (me + nn - 1) % nn;
      int left_world = -1;
      for (int q = 0; q < ctx.size(); ++q)
        if (node.node_rank_of(q) == left) left_world = q;
      for (std::int64_t i = 0; i < count; ++i)
        EXPECT_EQ(w.data()[i], 100.0 * left_world + static_cast<double>(i)) << "node_size " << ns;
      w.unlock_all();
      const auto t = ctx.ledger().total();
      EXPECT_EQ(t.shm_bytes, 8 * (3 + right));
      EXPECT_EQ(t.shm_msgs, 1);
      EXPECT_EQ(t.sent_bytes() + t.recv_bytes(), 0);
    } catch (const tessel::MpiError& e) {
      if (ctx.rank() == 0) std::printf("no shared window: %s\n", e.what());
    }
  }
}

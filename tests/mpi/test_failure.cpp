// Failures on one rank end the call on every rank (issue 11): Context::agree turns any
// exception into the same tessel::Error everywhere; user callbacks (purify's on_step,
// read_npy's layout) that throw on one rank.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "purify_test_util.hpp"
#include "tessel/comm/window.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/io/npy.hpp"
#include "tessel/layout/redistribute.hpp"
#include "tessel/solvers/purify.hpp"
#include "test_util.hpp"

using namespace tessel;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

// ---------------------------------------------------------------- Context::agree
TEST(Failure, AgreeEndsEveryRankWithTheSameErrorForAnyException) {
  Context ctx(MPI_COMM_WORLD);
  for (int bad = 0; bad < ctx.size(); ++bad)
    for (int kind = 0; kind < 4; ++kind) {
      std::string msg;
      try {
        ctx.agree([&] {
          if (ctx.rank() != bad) return;
          if (kind == 0) throw std::bad_alloc();
          if (kind == 1) throw std::runtime_error("user callback failed");
          if (kind == 2) throw 42;
          throw InputError("bad input here");
        });
        ADD_FAILURE() << "no throw on rank " << ctx.rank();
      } catch (const InputError& e) {
        EXPECT_EQ(kind, 3);
        msg = e.what();
      } catch (const Error& e) {
        EXPECT_NE(kind, 3);
        msg = e.what();
      }
      const std::string rank = "rank " + std::to_string(bad);
      if (kind == 0) EXPECT_TRUE(contains(msg, "bad_alloc") && contains(msg, rank)) << msg;
      if (kind == 1)
        EXPECT_TRUE(contains(msg, "user callback failed") && contains(msg, rank)) << msg;
      if (kind == 2)
        EXPECT_TRUE(contains(msg, "not derived from std::exception") && contains(msg, rank)) << msg;
      if (kind == 3) EXPECT_EQ(msg, "bad input here");
      // every rank holds the same message
      int len = static_cast<int>(msg.size()), lmin = len, lmax = len;
      ctx.comm().allreduce(&lmin, 1, MPI_MIN);
      ctx.comm().allreduce(&lmax, 1, MPI_MAX);
      EXPECT_EQ(lmin, lmax);
    }
}

// ---------------------------------------------------------------- user callbacks
TEST(Failure, PurifyOnStepThrowingOnOneRankEndsEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 24;
  std::vector<double> e(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    e[static_cast<std::size_t>(i)] = (i < n / 2 ? -1.0 : 1.0) + 0.01 * i;
  const auto f = tessel::testing::with_spectrum(e);
  const auto lay = layout::Layout::block_cyclic(n, n, 4, 4, 1, ctx.size(), 0, 0, ctx.size());
  auto F = dense::scatter(ctx, f.data(), lay);
  for (int kind = 0; kind < 2; ++kind) {
    solvers::PurifyOptions opt;
    // context rank 0 is always active; throw there at step 2 (the others keep iterating)
    opt.on_step = [&](const solvers::PurifyStep& s) {
      if (ctx.rank() == 0 && s.iteration == 2) {
        if (kind == 0) throw std::runtime_error("on_step says stop");
        throw InputError("on_step input error");
      }
    };
    try {
      solvers::purify(ctx, F, n / 2, opt);
      ADD_FAILURE() << "no throw on rank " << ctx.rank();
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), kind == 0 ? "on_step says stop" : "on_step input error"))
          << e.what();
    }
  }
  // and the same context still works afterwards
  auto r = solvers::purify(ctx, F, n / 2);
  EXPECT_NEAR(r.trace_error, 0.0, 1e-8);
  // PurifyResult is a value (issue 11: DistMatrix copies): a copy written to leaves r alone
  const auto d = tessel::testing::gather_all(ctx, r.D);
  solvers::PurifyResult c = r;
  c.D.for_each_local([](std::int64_t, std::int64_t, double& v) { v = -7.0; });
  EXPECT_EQ(tessel::testing::gather_all(ctx, r.D), d);
}

TEST(Failure, ReadNpyLayoutCallbackThrowingOnOneRankEndsEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 6;
  int pid = static_cast<int>(::getpid());
  ctx.comm().bcast(&pid, 1, 0);
  char name[64];
  std::snprintf(name, sizeof name, "/tmp/tessel_failure_%d.npy", pid);
  std::string path = name;
  const auto lay = layout::Layout::block_cyclic(n, n, 2, 2, 1, ctx.size(), 0, 0, ctx.size());
  std::vector<double> full(static_cast<std::size_t>(n * n), 1.5);
  auto X = dense::scatter(ctx, full.data(), lay);
  io::write_npy(ctx, path, X);
  const int bad = ctx.size() - 1;
  try {
    io::read_npy<double>(ctx, path, [&](std::int64_t r, std::int64_t c) {
      if (ctx.rank() == bad) throw std::runtime_error("layout callback failed");
      return layout::Layout::block_cyclic(r, c, 2, 2, 1, ctx.size(), 0, 0, ctx.size());
    });
    ADD_FAILURE() << "no throw on rank " << ctx.rank();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "layout callback failed")) << e.what();
  }
  ctx.comm().barrier();
  if (ctx.rank() == 0) std::remove(path.c_str());
}

// ---------------------------------------------------------------- failure mid-exchange
namespace {

using Clock = std::chrono::steady_clock;

// Every rank, row blocks -> column blocks: every rank exchanges with every other one.
void exchange_with_failure(bool node_shared, int bad) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  comm::TestSettings ts;
  ts.at_point = [&](const std::string& point) {
    if (point == "redistribute: posted" && ctx.rank() == bad)
      throw std::runtime_error("injected failure after posting");
  };
  ctx.set_testing(ts);
  const std::int64_t n = 4 * p + 3;
  const auto src = layout::Layout::block_cyclic(n, n, 4, n, p, 1, 0, 0, p);
  const auto dst = layout::Layout::block_cyclic(n, n, n, 4, 1, p, 0, 0, p);
  std::vector<double> a(static_cast<std::size_t>(n * n), 1.0), b(a.size(), 0.0);
  layout::RedistOptions opt;
  opt.node_shared = node_shared;
  opt.node_size = node_shared ? 2 : 0;  // emulated nodes of 2: shared window and p2p pairs
  const auto t0 = Clock::now();
  std::string what;
  try {
    layout::redistribute(ctx.comm(), src, a.data(),
                         std::max<std::int64_t>(1, src.local_rows(ctx.rank())), dst, b.data(),
                         std::max<std::int64_t>(1, dst.local_rows(ctx.rank())), opt);
  } catch (const std::runtime_error& e) { what = e.what(); }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (p == 1) {
    EXPECT_EQ(what, "injected failure after posting");
    return;
  }
  if (ctx.rank() == bad)
    EXPECT_EQ(what, "injected failure after posting");
  else
    EXPECT_TRUE(contains(what, "left an exchange with an error"))
        << "rank " << ctx.rank() << ": '" << what << "'";
  EXPECT_LT(secs, 20.0) << "rank " << ctx.rank();
  // The Context is marked: its next wait fails at once on every rank.
  EXPECT_THROW(ctx.comm().barrier(), PeerFailure);
}

}  // namespace

TEST(Failure, InjectedFailureAfterPostingEndsEveryRankP2P) {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  exchange_with_failure(false, p - 1);
  exchange_with_failure(false, 0);
}

TEST(Failure, InjectedFailureAfterPostingEndsEveryRankNodeShared) {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  exchange_with_failure(true, p / 2);
}

// ---------------------------------------------------------------- messages in pieces
namespace {

// The same redistribution, SymmSquareCube and window/file traffic with a lowered message
// limit: results equal the unchunked ones and the ledger holds the same bytes.
struct PiecesRun {
  std::vector<double> out;
  PhaseCounts counts;
};

PiecesRun redistribute_run(std::int64_t limit) {
  Context ctx(MPI_COMM_WORLD);
  if (limit > 0) {
    comm::TestSettings ts;
    ts.max_message_items = limit;
    ctx.set_testing(ts);
  }
  const int p = ctx.size();
  const std::int64_t n = 23;
  std::vector<double> full(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < full.size(); ++i) full[i] = 0.5 + static_cast<double>(i);
  const auto src = layout::Layout::block_cyclic(n, n, 5, 3, p, 1, 0, 0, p);
  const auto dst = layout::Layout::block_cyclic(n, n, 2, 7, 1, p, 0, 0, p);
  auto X = dense::scatter(ctx, full.data(), src);
  PiecesRun r;
  {
    PhaseScope ph(ctx.ledger(), "test");
    auto Y = dense::redistribute(ctx, X, dst);
    std::vector<double> g(static_cast<std::size_t>(n * n), 0.0);
    Y.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
      g[static_cast<std::size_t>(j * n + i)] = v;
    });
    // a collective in pieces too
    ctx.comm().allreduce(g.data(), static_cast<int>(g.size()), MPI_SUM);
    r.out = g;
  }
  r.counts = ctx.ledger().total("test");
  EXPECT_EQ(r.out, full);
  return r;
}

}  // namespace

TEST(Failure, MessagesInPiecesEqualWholeMessages) {
  const PiecesRun whole = redistribute_run(0);
  for (std::int64_t lim : {1, 7, 64}) {
    const PiecesRun cut = redistribute_run(lim);
    EXPECT_EQ(cut.out, whole.out) << lim;
    EXPECT_EQ(cut.counts.p2p_sent_bytes, whole.counts.p2p_sent_bytes) << lim;
    EXPECT_EQ(cut.counts.p2p_recv_bytes, whole.counts.p2p_recv_bytes) << lim;
    EXPECT_EQ(cut.counts.coll_bytes, whole.counts.coll_bytes) << lim;
    // pieces: at least as many messages and calls, more whenever some message exceeds lim
    EXPECT_GE(cut.counts.p2p_sent_msgs, whole.counts.p2p_sent_msgs) << lim;
    EXPECT_GT(cut.counts.coll_calls, whole.counts.coll_calls) << lim;  // 529 doubles > 64
  }
}

TEST(Failure, WindowAndFileInPieces) {
  Context ctx(MPI_COMM_WORLD);
  comm::TestSettings ts;
  ts.max_message_items = 5;
  ctx.set_testing(ts);
  const int p = ctx.size(), me = ctx.rank();
  // one-sided: get 23 elements from the next rank in pieces of 5
  const std::int64_t len = 23;
  comm::Window<double> w(ctx.comm(), len);
  for (std::int64_t i = 0; i < len; ++i) w.data()[i] = 100.0 * me + static_cast<double>(i);
  ctx.comm().barrier();
  std::vector<double> got(static_cast<std::size_t>(len), -1.0);
  const int target = (me + 1) % p;
  PhaseCounts before = ctx.ledger().total();
  {
    comm::LockAllEpoch epoch(w);
    comm::RequestSet rs;
    w.rget(got.data(), len, target, 0, rs);
    rs.wait_all();
  }
  PhaseCounts after = ctx.ledger().total();
  EXPECT_EQ(after.rma_get_bytes - before.rma_get_bytes, len * 8);
  EXPECT_EQ(after.rma_ops - before.rma_ops, 5);  // ceil(23 / 5)
  for (std::int64_t i = 0; i < len; ++i)
    EXPECT_EQ(got[static_cast<std::size_t>(i)], 100.0 * target + static_cast<double>(i));
  ctx.comm().barrier();
  // file I/O: write and read back a matrix with blocks and memory types of at most 5 items
  int pid = static_cast<int>(::getpid());
  ctx.comm().bcast(&pid, 1, 0);
  const std::string path = "/tmp/tessel_pieces_" + std::to_string(pid) + ".npy";
  const std::int64_t n = 13;
  std::vector<double> full(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < full.size(); ++i) full[i] = static_cast<double>(i) - 7.25;
  const auto lay = layout::Layout::block_cyclic(n, n, 3, 4, 1, p, 0, 0, p);
  auto X = dense::scatter(ctx, full.data(), lay);
  io::write_npy(ctx, path, X);
  auto Y = io::read_npy<double>(ctx, path, [&](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, 6, 2, p, 1, 0, 0, p);
  });
  Y.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
    EXPECT_EQ(v, full[static_cast<std::size_t>(j * n + i)]);
  });
  ctx.comm().barrier();
  if (me == 0) std::remove(path.c_str());
}

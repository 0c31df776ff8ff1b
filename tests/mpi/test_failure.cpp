// Failures on one rank end the call on every rank (issue 11): Context::agree turns any
// exception into the same tessel::Error everywhere; user callbacks (purify's on_step,
// read_npy's layout) that throw on one rank.
#include <gtest/gtest.h>

#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "purify_test_util.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/io/npy.hpp"
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
      if (kind == 1) EXPECT_TRUE(contains(msg, "user callback failed") && contains(msg, rank)) << msg;
      if (kind == 2) EXPECT_TRUE(contains(msg, "not derived from std::exception") && contains(msg, rank)) << msg;
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
  for (std::int64_t i = 0; i < n; ++i) e[static_cast<std::size_t>(i)] = (i < n / 2 ? -1.0 : 1.0) + 0.01 * i;
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

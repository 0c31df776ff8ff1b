// Malformed messages from other ranks (issue 28): the checks on received data stay on in
// release builds and end the call on every rank with a tessel::Error, never a crash or a hang.
// The test hook comm::TestSettings::at_received corrupts a received buffer on every rank that
// receives a non-empty one at the named point; each test also checks that some rank did.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "sparse_test_util.hpp"
#include "test_util.hpp"
#include "tessel/sparse/multiply.hpp"
#include "tessel/sparse/spgemm_plan.hpp"

using namespace tessel;
using namespace tessel::sparse;
using namespace tessel::testing;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Runs `call`, expecting a tessel::Error on every rank; returns its message ("" and a test
// failure when it did not throw). The same message on every rank: checked by its length.
template <class F>
std::string error_of(Context& ctx, F&& call) {
  std::string what;
  try {
    call();
    ADD_FAILURE() << "no error on rank " << ctx.rank();
  } catch (const Error& e) { what = e.what(); }
  return what;
}

void expect_same_everywhere(const Context& ctx, const std::string& msg) {
  int len = static_cast<int>(msg.size()), lmin = len, lmax = len;
  ctx.comm().allreduce(&lmin, 1, MPI_MIN);
  ctx.comm().allreduce(&lmax, 1, MPI_MAX);
  EXPECT_EQ(lmin, lmax) << msg;
}

// Hook on `point`: `corrupt(data, bytes)` on every non-empty buffer received there; `hits`
// counts them on this rank.
comm::TestSettings corrupting(const std::string& point, int& hits,
                              std::function<void(void*, std::size_t)> corrupt) {
  comm::TestSettings ts;
  ts.at_received = [point, &hits, corrupt](const std::string& at, void* data, std::size_t bytes) {
    if (at != point) return;
    ++hits;
    corrupt(data, bytes);
  };
  return ts;
}

// Every rank puts every block it does not own (value: its rank + 1), accumulating.
void put_foreign(BlockSparseMatrix<double>& a) {
  const auto& d = a.distribution();
  for (int br = 0; br < d.row_blocks().count(); ++br)
    for (int bc = 0; bc < d.col_blocks().count(); ++bc) {
      if (d.owner(br, bc) == a.rank()) continue;
      std::vector<double> v(
          static_cast<std::size_t>(d.row_blocks().size(br)) * d.col_blocks().size(bc),
          a.rank() + 1.0);
      a.put_block(br, bc, v.data(), true);
    }
}

}  // namespace

// finalize: a block header outside the block grid, an accumulate flag that is neither 0 nor 1,
// a block of another rank. Every rank throws the same Error before anything received is
// applied; the matrix stays usable (a clean finalize afterwards gives the right sums).
TEST(FailureReceived, FinalizeRejectsAMalformedBlockOnEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  std::mt19937 rng(3);
  auto s = random_sizes(rng, 7);
  auto [pr, pc] = Distribution::default_grid(p);
  const Distribution d = Distribution::random(BlockSizes(s), BlockSizes(s), pr, pc, 5);
  int other_br = -1, other_bc = -1;  // a block this rank does not own
  for (int br = 0; br < d.row_blocks().count(); ++br)
    for (int bc = 0; bc < d.col_blocks().count(); ++bc)
      if (d.owner(br, bc) != ctx.rank()) other_br = br, other_bc = bc;
  for (int kind = 0; kind < 3; ++kind) {
    BlockSparseMatrix<double> a(ctx, d, "A");
    put_foreign(a);
    int hits = 0;
    ctx.set_testing(corrupting("finalize: received", hits, [&](void* data, std::size_t) {
      auto* h = static_cast<std::int32_t*>(data);  // the first header: brow, bcol, accumulate
      if (kind == 0) h[0] = 1 << 30;
      if (kind == 1) h[2] = 7;
      if (kind == 2 && other_br >= 0) h[0] = other_br, h[1] = other_bc;
    }));
    if (p == 1) {  // nothing is received
      EXPECT_NO_THROW(a.finalize());
      EXPECT_EQ(hits, 0);
      continue;
    }
    const std::string msg = error_of(ctx, [&] { a.finalize(); });
    EXPECT_TRUE(contains(msg, "finalize: the ") && contains(msg, "are malformed")) << msg;
    if (kind == 0) EXPECT_TRUE(contains(msg, "1073741824")) << msg;
    if (kind == 1) EXPECT_TRUE(contains(msg, "accumulate 7")) << msg;
    expect_same_everywhere(ctx, msg);
    EXPECT_GT(ctx.comm().allreduce_value(hits, MPI_SUM), 0) << "no rank received anything";
    // usable afterwards: nothing received was applied, a clean exchange sums every put
    ctx.set_testing({});
    EXPECT_TRUE(a.is_finalized());
    EXPECT_EQ(a.local_nblocks(), 0);
    put_foreign(a);
    a.finalize();
    a.for_each_block([&](int, int, const double* x, int r, int c) {
      const double want = p * (p + 1) / 2.0 - (a.rank() + 1);  // every other rank's value
      for (int e = 0; e < r * c; ++e) EXPECT_EQ(x[e], want);
    });
  }
}

namespace {

// rma25d at the largest valid L > 1 of the default grid (0: none).
int layers_above_one(int pr, int pc) {
  const auto v = valid_layers(pr, pc);
  return v.back() > 1 ? v.back() : 0;
}

struct Operands {
  std::optional<BlockSparseMatrix<double>> a, b, c;
  DenseRef c_ref;
  std::vector<double> want;  // A B inside C's pattern (retain) or everywhere
};

Operands operands(Context& ctx, int pr, int pc, bool retain) {
  std::mt19937 rng(11);
  auto ms = random_sizes(rng, 9), ks = random_sizes(rng, 8), ns = random_sizes(rng, 7);
  Operands o;
  o.a.emplace(ctx, Distribution::random(BlockSizes(ms), BlockSizes(ks), pr, pc, 1), "A");
  o.b.emplace(ctx, Distribution::random(BlockSizes(ks), BlockSizes(ns), pr, pc, 2), "B");
  o.c.emplace(ctx, Distribution::random(BlockSizes(ms), BlockSizes(ns), pr, pc, 3), "C");
  fill_random(*o.a, rng, 0.6, ctx.size());
  fill_random(*o.b, rng, 0.6, ctx.size());
  o.c_ref = fill_random(*o.c, rng, 0.4, ctx.size());
  auto a = dense_of(ctx, *o.a), b = dense_of(ctx, *o.b);
  const int m = static_cast<int>(o.c->rows()), n = static_cast<int>(o.c->cols()),
            k = static_cast<int>(o.a->cols());
  o.want.assign(static_cast<std::size_t>(m) * n, 0.0);
  ref_gemm('N', 'N', m, n, k, 1.0, a.data(), m, b.data(), k, 0.0, o.want.data(), m);
  if (retain)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        const auto& rb = o.c_ref.rows;
        const auto& cb = o.c_ref.cols;
        int bi = 0, bj = 0;
        while (rb.offset(bi + 1) <= i) ++bi;
        while (cb.offset(bj + 1) <= j) ++bj;
        if (!o.c_ref.has(bi, bj)) o.want[static_cast<std::size_t>(j) * m + i] = 0;
      }
  return o;
}

SpMultiplyReport run(Context& ctx, Operands& o, int L, bool retain, SpMultiplyCache& cache) {
  SpMultiplyOptions opt;
  opt.algorithm = SpAlgorithm::Rma25d;
  opt.layers = L;
  opt.retain_sparsity = retain;
  return multiply(ctx, 1.0, SpOp::N, *o.a, SpOp::N, *o.b, 0.0, *o.c, opt, &cache);
}

double error_vs_want(Context& ctx, const Operands& o) {
  double scale = 1;
  for (double x : o.want) scale = std::max(scale, std::abs(x));
  return max_abs_diff(dense_of(ctx, *o.c), o.want) / scale;
}

}  // namespace

// rma25d, L > 1, no retain: a partial C panel naming a block outside the grid. Every rank
// throws the same Error at the end of the exchange; the same Context and cache multiply
// correctly afterwards.
TEST(FailureReceived, Rma25dRejectsAMalformedPartialOnEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  const int L = layers_above_one(pr, pc);
  if (L == 0) GTEST_SKIP() << "no L > 1 on a " << pr << " x " << pc << " grid";
  Operands o = operands(ctx, pr, pc, false);
  SpMultiplyCache cache;
  int hits = 0;
  ctx.set_testing(corrupting("rma25d: C partial received", hits, [](void* data, std::size_t) {
    static_cast<std::int32_t*>(data)[0] = 1 << 30;  // the first block's row
  }));
  const std::string msg = error_of(ctx, [&] { run(ctx, o, L, false, cache); });
  EXPECT_TRUE(contains(msg, "rma25d: the partial C panel rank") && contains(msg, "(1073741824, ") &&
              contains(msg, "outside the"))
      << msg;
  expect_same_everywhere(ctx, msg);
  EXPECT_GT(ctx.comm().allreduce_value(hits, MPI_SUM), 0) << "no partial was received";
  ctx.set_testing({});
  run(ctx, o, L, false, cache);
  EXPECT_LE(error_vs_want(ctx, o), 1e-12);
}

// rma25d, L > 1, retain_sparsity: (1) a new C pattern naming a block outside the grid; (2) a
// header that says "unchanged" with a count the cache does not hold (the pattern caches
// disagree: before, a release build dereferenced pattern_from.end() when the cache had none).
// Both end on every rank with the same Error; the multiplies after them (patterns re-sent,
// then header-only) give the masked product.
TEST(FailureReceived, Rma25dRejectsAMalformedOrUnknownPatternOnEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  const int L = layers_above_one(pr, pc);
  if (L == 0) GTEST_SKIP() << "no L > 1 on a " << pr << " x " << pc << " grid";
  Operands o = operands(ctx, pr, pc, true);
  SpMultiplyCache cache;
  int hits = 0;
  // (1) the first multiply on this cache: every pattern follows its header
  ctx.set_testing(corrupting("rma25d: C pattern received", hits, [](void* data, std::size_t) {
    static_cast<std::int32_t*>(data)[0] = -1;
  }));
  std::string msg = error_of(ctx, [&] { run(ctx, o, L, true, cache); });
  EXPECT_TRUE(contains(msg, "rma25d: the C pattern rank") && contains(msg, "(-1, ")) << msg;
  expect_same_everywhere(ctx, msg);
  EXPECT_GT(ctx.comm().allreduce_value(hits, MPI_SUM), 0) << "no pattern was received";
  ctx.set_testing({});
  run(ctx, o, L, true, cache);  // patterns sent and cached
  EXPECT_LE(error_vs_want(ctx, o), 1e-12);
  // (2) C's pattern is unchanged: headers only; one claims two more entries than it sent
  hits = 0;
  ctx.set_testing(corrupting("rma25d: C pattern heads", hits, [](void* data, std::size_t) {
    static_cast<std::int64_t*>(data)[0] += 2;  // the first source's count (follows bit clear)
  }));
  msg = error_of(ctx, [&] { run(ctx, o, L, true, cache); });
  EXPECT_TRUE(contains(msg, "as unchanged, but rank") && contains(msg, "caches disagree")) << msg;
  expect_same_everywhere(ctx, msg);
  EXPECT_GT(ctx.comm().allreduce_value(hits, MPI_SUM), 0);
  ctx.set_testing({});
  for (int again = 0; again < 2; ++again) {  // caches dropped and re-sent, then header-only
    run(ctx, o, L, true, cache);
    EXPECT_LE(error_vs_want(ctx, o), 1e-12) << again;
  }
}

// A received count that cannot be right (negative) sizes nothing: that rank ends the exchange
// with an Error naming it, its peers throw PeerFailure (failure notices), no rank hangs.
TEST(FailureReceived, Rma25dImpossibleCountEndsEveryRank) {
  auto [pr, pc] = Distribution::default_grid(world_size());
  const int L = layers_above_one(pr, pc);
  if (L == 0) GTEST_SKIP() << "no L > 1 on a " << pr << " x " << pc << " grid";
  Context ctx(MPI_COMM_WORLD);  // marked by the failure: not used afterwards
  Operands o = operands(ctx, pr, pc, false);
  SpMultiplyCache cache;
  int hits = 0;
  ctx.set_testing(corrupting("rma25d: C partial heads", hits, [&](void* data, std::size_t) {
    if (ctx.rank() == 0) static_cast<std::int64_t*>(data)[1] = -5;  // the first value count
  }));
  const std::string msg = error_of(ctx, [&] { run(ctx, o, L, false, cache); });
  if (ctx.rank() == 0)
    EXPECT_TRUE(contains(msg, "received a C partial value count of -5")) << msg;
  else
    EXPECT_TRUE(contains(msg, "left an exchange with an error")) << msg;
}

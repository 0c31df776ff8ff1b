// Checkpoint and restart of purify() through the library API (PurifyOptions::on_checkpoint,
// resume, stop_after; io::write_checkpoint / read_checkpoint): a resumed run ends bitwise as
// the uninterrupted one, also when the checkpoint is read back into another layout; the
// state's text form reads back bit for bit; bad resume states and option mismatches throw on
// every rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "purify_test_util.hpp"
#include "tessel/io/checkpoint.hpp"
#include "tessel/solvers/purify_checkpoint.hpp"
#include "tessel/solvers/purify.hpp"
#include "test_util.hpp"

using namespace tessel;
using solvers::PurifyMethod;
namespace tt = tessel::testing;

namespace {

// A symmetric F with a known spectrum and a gap after nocc states, block-cyclic nb x nb.
dense::DistMatrix<double> make_f(Context& ctx, std::int64_t n, std::int64_t nocc, std::int64_t nb) {
  std::vector<double> e(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) e[i] = -1.0 + 0.05 * i + (i >= nocc ? 0.3 : 0.0);
  auto lay = layout::Layout::block_cyclic(n, n, nb, nb, 1, ctx.size(), 0, 0, ctx.size());
  const auto full = tt::with_spectrum(e);
  return dense::scatter(ctx, full.data(), lay);
}

// Collective: true on every rank when the local blocks of a and b (same layout) are bitwise equal.
bool same_bits(Context& ctx, const dense::DistMatrix<double>& a,
               const dense::DistMatrix<double>& b) {
  int bad = 0;
  for (std::int64_t j = 0; j < a.local_cols(); ++j)
    if (std::memcmp(&a.local(0, j), &b.local(0, j), static_cast<std::size_t>(a.local_rows()) * 8) !=
        0)
      bad = 1;
  return ctx.comm().allreduce_value(bad, MPI_MAX) == 0;
}

std::string temp_path(Context& ctx, const std::string& tag) {
  std::int64_t pid = ::getpid();
  ctx.comm().bcast(&pid, 1, 0);
  return "/tmp/tessel_test_ckpt_" + std::to_string(pid) + "_" + tag + ".bin";
}

// Runs purify with a checkpoint every `every` steps, stopped after `stop`; restarts from the
// file read into a block-cyclic layout of block size 5; the result must equal `full` bitwise.
void stop_and_resume(Context& ctx, const dense::DistMatrix<double>& F, std::int64_t nocc,
                     solvers::PurifyOptions o, const solvers::PurifyResult& full, int every,
                     int stop, const std::string& what) {
  const std::string path = temp_path(ctx, "lib");
  io::CheckpointRecord::Pairs given = {{"what", what}};
  o.checkpoint_every = every;
  o.stop_after = stop;
  int written = 0;
  o.on_checkpoint = [&](const comm::Comm& active, const solvers::PurifyState& st,
                        const dense::DistMatrix<double>& X, const dense::DistMatrix<double>* best) {
    io::CheckpointRecord rec;
    rec.kind = "purify";
    rec.options = given;
    solvers::put_purify_state(rec, st);
    std::vector<const dense::DistMatrix<double>*> mats{&X};
    if (best) mats.push_back(best);
    io::write_checkpoint(active, path, rec, mats);
    ++written;
  };
  auto part = solvers::purify(ctx, F, nocc, o);
  ASSERT_TRUE(part.stopped) << what;
  EXPECT_EQ(part.iterations, stop) << what;
  if (ctx.rank() == 0) EXPECT_EQ(written, stop / every + (stop % every != 0)) << what;

  const std::int64_t n = F.rows();
  auto other = [&](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, 5, 5, ctx.size(), 1, 0, 0, ctx.size());
  };
  auto ck = io::read_checkpoint(ctx, path, "purify", other);
  io::check_checkpoint_options(path, ck.record, given);
  auto resume = std::make_shared<solvers::PurifyResume>();
  resume->state = solvers::get_purify_state(ck.record, path);
  EXPECT_EQ(resume->state.iteration, stop) << what;
  ASSERT_EQ(ck.matrices.size(), resume->state.has_best ? 2u : 1u) << what;
  EXPECT_EQ(ck.matrices[0].rows(), n);
  resume->X = std::move(ck.matrices[0]);
  if (resume->state.has_best) resume->best = std::move(ck.matrices[1]);
  solvers::PurifyOptions r = o;
  r.on_checkpoint = nullptr;
  r.stop_after = 0;
  r.resume = resume;
  auto res = solvers::purify(ctx, F, nocc, r);
  EXPECT_FALSE(res.stopped);
  EXPECT_EQ(res.iterations, full.iterations) << what;
  EXPECT_EQ(std::memcmp(&res.band_energy, &full.band_energy, 8), 0)
      << what << ": band energy " << res.band_energy << " vs " << full.band_energy;
  EXPECT_EQ(std::memcmp(&res.idempotency_error, &full.idempotency_error, 8), 0) << what;
  EXPECT_TRUE(same_bits(ctx, res.D, full.D)) << what << ": D differs from the uninterrupted run";
  if (ctx.rank() == 0) std::remove(path.c_str());
}

}  // namespace

TEST(PurifyCheckpoint, ResumedRunIsBitwiseIdentical) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 40, nocc = 17;
  auto F = make_f(ctx, n, nocc, 4);
  for (auto m :
       {PurifyMethod::Canonical, PurifyMethod::Trs2, PurifyMethod::Trs4, PurifyMethod::McWeeny}) {
    for (double tol : {1e-11, 1e-30}) {  // 1e-30: ends at the rounding floor (the best iterate)
      solvers::PurifyOptions o;
      o.method = m;
      o.mu = -1.0 + 0.05 * (nocc - 1) + 0.15;
      o.tol = tol;
      auto full = solvers::purify(ctx, F, nocc, o);
      ASSERT_GE(full.iterations, 4);
      const std::string what = solvers::to_string(m) + (tol < 1e-20 ? " floor" : "");
      stop_and_resume(ctx, F, nocc, o, full, 2, 3, what + " early");
      // Late: a checkpoint after every step up to the last (each overwrites the previous file)
      // at <= 4 ranks; above, one checkpoint whose periodic and stop triggers coincide (must
      // be written once). The resumed state is the same either way and every write covers
      // each rank's share of the file; the ~20 writes per case at 5-9 ranks cost minutes
      // under MPICH (ROMIO's blocking open/set_size/close, docs/mpich.md).
      const int late_every = ctx.size() <= 4 ? 1 : full.iterations;
      stop_and_resume(ctx, F, nocc, o, full, late_every, full.iterations, what + " late");
    }
  }
}

TEST(PurifyCheckpoint, StateTextRoundTripIsExact) {
  solvers::PurifyState st;
  st.iteration = 3;
  st.hmin = -std::acos(-1.0);
  st.hmax = 1.0 / 3.0;
  st.trace_f = 1e-300;
  st.start_a = -0.1;
  st.start_b = std::nextafter(0.5, 1.0);
  st.coefficients = {0, 3, -2, 0, 0.1, 0.2, 0.3, 0.4, 1e300, -1e-300, 5e-324, 0};
  st.history = {1.5, 0.7, 1e-9};
  st.best_err = std::numeric_limits<double>::infinity();
  st.best_iteration = 2;
  st.behind = 1;
  st.has_best = true;
  io::CheckpointRecord rec;
  solvers::put_purify_state(rec, st);
  auto back = solvers::get_purify_state(rec, "x");
  EXPECT_EQ(back.iteration, st.iteration);
  for (auto [a, b] : {std::pair{back.hmin, st.hmin},
                      {back.hmax, st.hmax},
                      {back.trace_f, st.trace_f},
                      {back.start_a, st.start_a},
                      {back.start_b, st.start_b},
                      {back.best_err, st.best_err}})
    EXPECT_EQ(std::memcmp(&a, &b, 8), 0) << a << " vs " << b;
  ASSERT_EQ(back.coefficients.size(), st.coefficients.size());
  EXPECT_EQ(
      std::memcmp(back.coefficients.data(), st.coefficients.data(), 8 * st.coefficients.size()), 0);
  ASSERT_EQ(back.history.size(), st.history.size());
  EXPECT_EQ(std::memcmp(back.history.data(), st.history.data(), 8 * st.history.size()), 0);
  EXPECT_EQ(back.best_iteration, 2);
  EXPECT_EQ(back.behind, 1);
  EXPECT_TRUE(back.has_best);
  rec.state[1].second = "0x1.5q";  // hmin does not parse
  EXPECT_THROW(solvers::get_purify_state(rec, "x"), InputError);
}

TEST(PurifyCheckpoint, Errors) {
  Context ctx(MPI_COMM_WORLD);
  const std::int64_t n = 12, nocc = 5;
  auto F = make_f(ctx, n, nocc, 3);
  auto resume = std::make_shared<solvers::PurifyResume>();
  resume->state.iteration = 2;
  resume->state.coefficients = {0, 3, -2, 0};  // one step's, expected two
  resume->state.history = {1, 0.5};
  resume->X = F;
  solvers::PurifyOptions o;
  o.resume = resume;
  const std::string m1 = tt::message_of([&] { solvers::purify(ctx, F, nocc, o); });
  EXPECT_NE(m1.find("4 step coefficients"), std::string::npos) << m1;
  EXPECT_NE(m1.find("expected 8"), std::string::npos) << m1;
  resume->state.coefficients = {0, 3, -2, 0, 0, 3, -2, 0};
  resume->X = make_f(ctx, n + 2, nocc, 3);  // wrong size
  EXPECT_THROW(solvers::purify(ctx, F, nocc, o), DimensionMismatch);
  // Option mismatch: names the option and both values.
  io::CheckpointRecord rec;
  rec.options = {{"--method", "canonical"}, {"n", "12"}};
  try {
    io::check_checkpoint_options("c.bin", rec, {{"n", "12"}, {"--method", "trs4"}});
    ADD_FAILURE() << "no throw";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--method"), std::string::npos) << m;
    EXPECT_NE(m.find("'canonical'"), std::string::npos) << m;
    EXPECT_NE(m.find("'trs4'"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(io::check_checkpoint_options("c.bin", rec, {{"n", "12"}}));
  // A missing file: InputError on every rank.
  EXPECT_THROW(io::read_checkpoint(ctx, "/nonexistent/c.bin", "purify",
                                   [&](std::int64_t, std::int64_t) { return F.layout(); }),
               InputError);
}

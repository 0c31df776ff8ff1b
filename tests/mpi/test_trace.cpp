// The trace option (core/trace.hpp): the file rank 0 writes is valid Chrome trace-event JSON
// with one lane per rank, properly nested spans, matched transfer pairs, and per rank the
// bytes of its transfer events equal to the ledger's counters (an independent record: the
// ledger is what commcount checks). Runs a multiply (redistribution exchanges + rounds) and a
// purification (SymmSquareCube with MPI and with tessel's point-to-point collectives).
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/core/error.hpp"
#include "tessel/core/trace.hpp"
#include "tessel/dense/multiply.hpp"
#include "tessel/solvers/purify.hpp"

using namespace tessel;
using dense::DistMatrix;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

/// One temporary path for all ranks (rank 0's pid).
std::string shared_tmp(const std::string& stem) {
  long pid = static_cast<long>(::getpid());
  MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  return "/tmp/" + stem + "." + std::to_string(pid) + ".json";
}

const char* const kKinds[] = {"p2p_send", "p2p_recv", "coll", "rma_put",
                              "rma_get",  "rma_acc",  "shm"};

std::vector<std::int64_t> ledger_bytes(const PhaseCounts& k) {
  return {k.p2p_sent_bytes, k.p2p_recv_bytes, k.coll_bytes, k.rma_put_bytes,
          k.rma_get_bytes,  k.rma_acc_bytes,  k.shm_bytes};
}

/// Runs the workload with tracing on and returns every rank's ledger byte counters (rank 0).
std::vector<std::vector<std::int64_t>> traced_run(Context& ctx, const std::string& path) {
  const std::int64_t n = 24;
  const int p = ctx.size();
  auto lay = layout::Layout::block_cyclic(n, n, 5, 5, 1, p, 0, 0, p);
  DistMatrix<double> A(ctx, lay), B(ctx, lay), C(ctx, lay), F(ctx, lay);
  A.for_each_local(
      [](std::int64_t i, std::int64_t j, double& x) { x = std::sin(1.0 + i + 2.0 * j); });
  B.for_each_local([](std::int64_t i, std::int64_t j, double& x) { x = std::cos(0.5 * i - j); });
  // F: eigenvalues near -1 (first half) and +1 (second half), a gap of about 2.
  F.for_each_local([&](std::int64_t i, std::int64_t j, double& x) {
    x = (i == j ? (i < n / 2 ? -1.0 : 1.0) : 0.0) + 0.01 * std::cos(static_cast<double>(i + j));
  });

  ctx.ledger().reset();
  ctx.start_trace();
  EXPECT_NE(ctx.tracer(), nullptr);
  EXPECT_EQ(ctx.ledger().tracer(), ctx.tracer());
  dense::multiply(ctx, 1.0, dense::Op::N, A, dense::Op::T, B, 0.0, C);
  solvers::PurifyOptions opt;
  solvers::purify(ctx, F, n / 2, opt);
  opt.ssc.collectives = comm::CollImpl::P2P;
  solvers::purify(ctx, F, n / 2, opt);
  const std::vector<std::int64_t> mine = ledger_bytes(ctx.ledger().total());
  ctx.write_trace(path);
  EXPECT_EQ(ctx.tracer(), nullptr);
  EXPECT_EQ(ctx.ledger().tracer(), nullptr);

  const std::size_t nk = mine.size();
  std::vector<std::int64_t> all(nk * static_cast<std::size_t>(p));
  MPI_Gather(mine.data(), static_cast<int>(nk), MPI_INT64_T, all.data(), static_cast<int>(nk),
             MPI_INT64_T, 0, MPI_COMM_WORLD);
  std::vector<std::vector<std::int64_t>> out;
  for (int r = 0; r < p; ++r)
    out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(r * nk),
                     all.begin() + static_cast<std::ptrdiff_t>((r + 1) * nk));
  return out;
}

}  // namespace

TEST(Trace, FileStructureAndBytesMatchTheLedger) {
  Context ctx(MPI_COMM_WORLD);
  const int p = ctx.size();
  const std::string path = shared_tmp("tessel_test_trace");
  const auto ledger = traced_run(ctx, path);
  if (world_rank() != 0) return;

  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = nlohmann::json::parse(in)) << "not valid JSON";
  std::remove(path.c_str());
  ASSERT_TRUE(doc.contains("traceEvents"));
  const auto& ev = doc["traceEvents"];
  ASSERT_TRUE(ev.is_array());

  // One lane per rank: pids 0 .. p-1, each named "rank r" once.
  std::map<int, int> names;
  std::set<int> pids;
  for (const auto& e : ev) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name"));
    pids.insert(e["pid"].get<int>());
    if (e["ph"] == "M" && e["name"] == "process_name") {
      ++names[e["pid"].get<int>()];
      EXPECT_EQ(e["args"]["name"], "rank " + std::to_string(e["pid"].get<int>()));
    }
  }
  EXPECT_EQ(static_cast<int>(pids.size()), p);
  EXPECT_EQ(*pids.begin(), 0);
  EXPECT_EQ(*pids.rbegin(), p - 1);
  for (int r = 0; r < p; ++r) EXPECT_EQ(names[r], 1) << "rank " << r;

  // Per lane: spans nest (sorted by start, each lies inside the enclosing open one, up to the
  // 1 ns rounding of ts and dur); every "b" has one "e" (same name, not earlier); bytes per kind.
  std::vector<std::map<std::string, std::int64_t>> bytes(static_cast<std::size_t>(p));
  int phases = 0, kernels = 0;
  for (int r = 0; r < p; ++r) {
    std::vector<std::pair<double, double>> spans;
    std::map<std::string, std::pair<const nlohmann::json*, const nlohmann::json*>> pairs;
    for (const auto& e : ev) {
      if (e["pid"].get<int>() != r) continue;
      const std::string ph = e["ph"];
      if (ph == "X") {
        const double ts = e["ts"], dur = e["dur"];
        EXPECT_GE(dur, 0.0);
        EXPECT_GE(ts, 0.0);
        spans.emplace_back(ts, ts + dur);
        if (e["cat"] == "phase") ++phases;
        if (e["cat"] == "compute") ++kernels;
      } else if (ph == "b") {
        const std::string id = e["id"];
        EXPECT_EQ(pairs[id].first, nullptr) << "id " << id << " posted twice";
        pairs[id].first = &e;
        EXPECT_EQ(e["cat"], "comm");
        const std::string kind = e["args"]["kind"];
        EXPECT_EQ(e["name"], kind);
        EXPECT_GE(e["args"]["bytes"].get<std::int64_t>(), 0);
        const int peer = e["args"]["peer"];
        EXPECT_TRUE(peer >= -1 && peer < p) << peer;
        bytes[static_cast<std::size_t>(r)][kind] += e["args"]["bytes"].get<std::int64_t>();
      } else if (ph == "e") {
        const std::string id = e["id"];
        EXPECT_EQ(pairs[id].second, nullptr) << "id " << id << " completed twice";
        pairs[id].second = &e;
      }
    }
    for (const auto& [id, be] : pairs) {
      ASSERT_NE(be.first, nullptr) << "rank " << r << ": completion of " << id << " never posted";
      ASSERT_NE(be.second, nullptr) << "rank " << r << ": transfer " << id << " never completed";
      EXPECT_EQ((*be.first)["name"], (*be.second)["name"]);
      EXPECT_GE((*be.second)["ts"].get<double>(), (*be.first)["ts"].get<double>());
    }
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open;   // ends of the enclosing spans
    const double eps = 0.0021;  // ts and dur are rounded to 1 ns each
    for (const auto& [b, e] : spans) {
      while (!open.empty() && open.back() <= b + eps) open.pop_back();
      if (!open.empty())
        EXPECT_LE(e, open.back() + eps)
            << "rank " << r << ": span [" << b << ", " << e << "] overlaps its parent";
      open.push_back(e);
    }
    // The bytes of the transfer events equal the ledger's counters of this rank, per kind.
    for (std::size_t k = 0; k < std::size(kKinds); ++k)
      EXPECT_EQ(bytes[static_cast<std::size_t>(r)][kKinds[k]],
                ledger[static_cast<std::size_t>(r)][k])
          << "rank " << r << ", " << kKinds[k];
  }
  EXPECT_GE(phases, p);   // every rank opens the multiply's and purify's phases
  EXPECT_GE(kernels, 1);  // local GEMMs ran somewhere
  std::int64_t p2p = 0;
  for (int r = 0; r < p; ++r) p2p += ledger[static_cast<std::size_t>(r)][0];
  if (p > 1) EXPECT_GT(p2p, 0);  // the check compared real traffic
}

TEST(Trace, OffByDefaultAndErrorsOnEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  EXPECT_EQ(ctx.tracer(), nullptr);
  EXPECT_EQ(ctx.ledger().tracer(), nullptr);
  const std::string path = shared_tmp("tessel_test_trace_err");
  // Not started: InputError on every rank, nothing written.
  EXPECT_THROW(ctx.write_trace(path), InputError);
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
  // An unwritable path: InputError on every rank, no file or temporary left behind.
  ctx.start_trace();
  const std::string bad = "/nonexistent-dir-tessel/trace.json";
  EXPECT_THROW(ctx.write_trace(bad), InputError);
  EXPECT_EQ(ctx.tracer(), nullptr);  // tracing stopped even so
  // An empty path.
  ctx.start_trace();
  EXPECT_THROW(ctx.write_trace(""), InputError);
  // A restart replaces the tracer; the file then holds only the lanes' metadata and barrier.
  ctx.start_trace();
  ctx.start_trace();
  ctx.write_trace(path);
  if (world_rank() == 0) {
    std::ifstream in(path);
    nlohmann::json doc = nlohmann::json::parse(in);
    std::set<int> pids;
    for (const auto& e : doc["traceEvents"]) pids.insert(e["pid"].get<int>());
    EXPECT_EQ(static_cast<int>(pids.size()), ctx.size());
    std::remove(path.c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Trace, SharedLedgerIsDetachedWhenTheContextEnds) {
  CommLedger ledger;
  {
    Context ctx(MPI_COMM_WORLD, ledger);
    ctx.start_trace();
    EXPECT_NE(ledger.tracer(), nullptr);
  }
  EXPECT_EQ(ledger.tracer(), nullptr);
}

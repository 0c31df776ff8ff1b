// coll_overlap — the micro-benchmark of Figure 5 of Huang & Chow (seed 000, sec. V-B):
// broadcast and reduction bandwidth versus message size on `nodes` nodes, for
//   blocking   MPI_Bcast / MPI_Reduce of the whole message, one rank per node
//   mpi-1      one MPI_Ibcast / MPI_Ireduce of the whole message, one rank per node
//   mpi-ndup   N_DUP nonblocking MPI_Ibcast / MPI_Ireduce on N_DUP duplicated communicators,
//              each a contiguous part (comm::split_part) of the message, one rank per node
//   p2p-1      tessel's pipelined chain (comm/p2p_coll.hpp) on one communicator
//   p2p-ndup   tessel's chain, N_DUP parts on N_DUP duplicated communicators
//   ppn        "PPN ranks per node": ppn column communicators of `nodes` ranks (one per node),
//              each a blocking MPI_Bcast / MPI_Reduce of 1/ppn of the message (needs ranks =
//              nodes * ppn, mapped node by node: rank r is on node r / ppn)
// Bandwidth = 2 (p - 1) n / p / t with p = nodes and n the message bytes, as in the seed.
//
//   mpirun -np NODES*PPN [--map-by ppr:PPN:node] build/bench/coll_overlap --nodes 4
//       [--sizes 65536,262144,...] [--modes blocking,mpi-ndup,p2p-ndup,ppn] [--ndup 4]
//       [--segment 32768] [--repeat 5] [--warmup 1] [--ops bcast,reduce] [--json FILE]
//
// One-rank-per-node modes run on the ranks r with r % ppn == 0 (the others wait in a
// sleep-polled barrier); ppn mode needs ppn > 1. Modes alternate within each repetition
// (round-robin) so that noise hits all of them alike. Each time is the slowest rank's,
// measured from a barrier. The reduced values are checked (integers, exact); the broadcast
// is checked on the last rank. Rank 0 prints a table and writes the raw times as JSON.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_mpi.hpp"
#include "bench_util.hpp"
#include "tessel/comm/nonblocking.hpp"
#include "tessel/comm/p2p_coll.hpp"

namespace tc = tessel::comm;

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

struct Setup {
  MPI_Comm world = MPI_COMM_WORLD;
  tc::Comm* world_comm = nullptr;
  int rank = 0, size = 1, nodes = 4, ppn = 1, ndup = 4;
  std::int64_t segment = tc::kDefaultSegmentBytes;
  // leaders: one rank per node (r % ppn == 0); column: ranks with the same r % ppn
  tc::Comm* leaders = nullptr;  // null on non-leaders
  tc::DupSet* leader_dups = nullptr;
  tc::Comm* column = nullptr;  // null when ppn == 1
};

// One timed operation of `mode` on this rank (call on every rank; returns the local time).
double run_once(const Setup& s, const std::string& op, const std::string& mode, std::int64_t count,
                std::vector<double>& a, std::vector<double>& b) {
  const bool is_bcast = op == "bcast";
  const bool leader_mode = mode != "ppn";
  MPI_Barrier(s.world);
  const double t0 = MPI_Wtime();
  if (leader_mode && s.leaders) {
    const tc::Comm& c = *s.leaders;
    MPI_Comm raw = c.raw();
    if (mode == "blocking") {
      if (is_bcast)
        MPI_Bcast(a.data(), static_cast<int>(count), MPI_DOUBLE, 0, raw);
      else
        MPI_Reduce(a.data(), b.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM, 0, raw);
    } else {
      const bool dup = mode == "mpi-ndup" || mode == "p2p-ndup";
      const tc::CollImpl impl = mode.rfind("p2p", 0) == 0 ? tc::CollImpl::P2P : tc::CollImpl::Mpi;
      const int n = dup ? s.ndup : 1;
      tc::RequestSet rs;
      for (int q = 0; q < n; ++q) {
        const tc::Comm& cq = dup ? (*s.leader_dups)[q] : c;
        auto pt = tc::split_part(count, n, q);
        if (is_bcast)
          tc::ibcast(cq, a.data() + pt.begin, pt.count, 0, rs, impl, s.segment);
        else
          tc::ireduce_sum(cq, a.data() + pt.begin, b.data() + pt.begin, pt.count, 0, rs, impl,
                          s.segment);
      }
      rs.wait_all();
    }
  } else if (!leader_mode && s.column) {
    // column c (= rank % ppn) moves part c of the message over its `nodes` ranks
    auto pt = tc::split_part(count, s.ppn, s.rank % s.ppn);
    MPI_Comm raw = s.column->raw();
    if (is_bcast)
      MPI_Bcast(a.data() + pt.begin, static_cast<int>(pt.count), MPI_DOUBLE, 0, raw);
    else
      MPI_Reduce(a.data() + pt.begin, b.data() + pt.begin, static_cast<int>(pt.count), MPI_DOUBLE,
                 MPI_SUM, 0, raw);
  }
  const double t = MPI_Wtime() - t0;
  tc::sleep_barrier(*s.world_comm, std::chrono::microseconds(100));  // idle ranks yield
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Setup s;
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);

  CLI::App app{"coll_overlap: broadcast/reduction bandwidth (seed 000, Figure 5)"};
  std::string sizes_s = "65536,131072,262144,524288,1048576,2097152,4194304,8388608,16777216";
  std::string modes_s = "blocking,mpi-ndup,p2p-ndup,ppn", ops_s = "bcast,reduce", json_path;
  std::string label;
  int repeat = 5, warmup = 1;
  app.add_option("--nodes", s.nodes, "nodes (p in the bandwidth formula); ranks = nodes * ppn");
  app.add_option("--sizes", sizes_s, "message sizes in bytes (comma list; multiples of 8)");
  app.add_option("--modes", modes_s, "blocking,mpi-1,mpi-ndup,p2p-1,p2p-ndup,ppn");
  app.add_option("--ops", ops_s, "bcast,reduce");
  app.add_option("--ndup", s.ndup, "N_DUP duplicated communicators");
  app.add_option("--segment", s.segment, "segment bytes of the p2p chains");
  app.add_option("--repeat", repeat, "timed repetitions per (op, mode, size)");
  app.add_option("--warmup", warmup, "untimed repetitions first");
  app.add_option("--label", label, "free text copied into the JSON (e.g. the launch)");
  app.add_option("--json", json_path, "write the raw times (rank 0)");
  if (auto rc = tessel::bench::parse_or_finalize(app, argc, argv)) return *rc;
  const auto sizes = split_list(sizes_s), modes = split_list(modes_s), ops = split_list(ops_s);
  if (s.nodes < 1 || s.size % s.nodes != 0) {
    if (s.rank == 0)
      std::fprintf(stderr, "coll_overlap: %d ranks are not a multiple of --nodes %d\n", s.size,
                   s.nodes);
    MPI_Finalize();
    return 2;
  }
  s.ppn = s.size / s.nodes;
  const bool want_ppn = std::find(modes.begin(), modes.end(), "ppn") != modes.end();
  if (want_ppn && s.ppn < 2) {
    if (s.rank == 0)
      std::fprintf(stderr, "coll_overlap: mode ppn needs ranks = nodes * ppn, ppn > 1\n");
    MPI_Finalize();
    return 2;
  }

  tc::Comm world(MPI_COMM_WORLD, nullptr);
  s.world_comm = &world;
  tc::Comm leaders = world.split(s.rank % s.ppn == 0 ? 0 : -1, s.rank);
  tc::DupSet leader_dups(leaders, s.ndup);
  if (!leaders.is_null()) {
    s.leaders = &leaders;
    s.leader_dups = &leader_dups;
  }
  tc::Comm column = world.split(s.ppn > 1 ? s.rank % s.ppn : -1, s.rank / s.ppn);
  if (!column.is_null()) s.column = &column;

  std::int64_t max_count = 0;
  for (auto& z : sizes) max_count = std::max<std::int64_t>(max_count, std::stoll(z) / 8);
  std::vector<double> a(static_cast<std::size_t>(max_count)), b(a.size());

  nlohmann::json results = nlohmann::json::array();
  int bad = 0;
  for (const auto& op : ops)
    for (const auto& z : sizes) {
      const std::int64_t bytes = std::stoll(z), count = bytes / 8;
      std::map<std::string, std::vector<double>> times;
      for (int it = 0; it < warmup + repeat; ++it)
        for (const auto& mode : modes) {
          // integer-valued data: rank r holds r + (i % 7); the root's for the broadcast
          for (std::int64_t i = 0; i < count; ++i) {
            a[i] = static_cast<double>(s.rank + (i % 7));
            b[i] = -1.0;
          }
          double t = run_once(s, op, mode, count, a, b);
          double tmax = 0;
          MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          if (it >= warmup) times[mode].push_back(tmax);
          // check: bcast -> everyone who took part holds the root's data (root = rank 0);
          // reduce -> rank 0 holds the sum over the participants
          int local_bad = 0;
          const bool took_part = mode == "ppn" ? s.column != nullptr : s.leaders != nullptr;
          if (took_part && count > 0) {
            std::int64_t lo = 0, hi = count;
            if (mode == "ppn") {
              auto pt = tc::split_part(count, s.ppn, s.rank % s.ppn);
              lo = pt.begin;
              hi = pt.begin + pt.count;
            }
            // participants' world ranks: ppn -> (column c) c, c+ppn, ...; else 0, ppn, ...
            const int c0 = mode == "ppn" ? s.rank % s.ppn : 0;
            for (std::int64_t i = lo; i < hi && !local_bad;
                 i += std::max<std::int64_t>(1, (hi - lo) / 97)) {
              if (op == "bcast") {
                local_bad = a[i] != static_cast<double>(c0 + (i % 7));
              } else if ((mode == "ppn" ? s.column->rank() : s.leaders->rank()) == 0) {
                double sum = 0;
                for (int nd = 0; nd < s.nodes; ++nd) sum += c0 + nd * s.ppn + (i % 7);
                local_bad = b[i] != sum;
              }
            }
          }
          int any = 0;
          MPI_Allreduce(&local_bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
          if (any && s.rank == 0)
            std::fprintf(stderr, "coll_overlap: WRONG RESULT %s %s %lld bytes\n", op.c_str(),
                         mode.c_str(), static_cast<long long>(bytes));
          bad |= any;
        }
      for (const auto& mode : modes) {
        const double med = tessel::bench::median(times[mode]);
        const double p = s.nodes;
        const double bw = med > 0 ? 2.0 * (p - 1.0) * static_cast<double>(bytes) / p / med : 0;
        if (s.rank == 0)
          std::printf("%-7s %-9s %10lld B  median %10.6f s  bandwidth %8.2f MB/s\n", op.c_str(),
                      mode.c_str(), static_cast<long long>(bytes), med, bw / 1e6);
        results.push_back({{"op", op},
                           {"mode", mode},
                           {"bytes", bytes},
                           {"times_s", times[mode]},
                           {"median_s", med},
                           {"bandwidth_Bps", bw}});
      }
      if (s.rank == 0) std::fflush(stdout);
    }

  if (s.rank == 0 && !json_path.empty()) {
    const std::string v = tessel::bench::mpi_library_version();
    nlohmann::json j = {{"tool", "coll_overlap"},
                        {"ranks", s.size},
                        {"nodes", s.nodes},
                        {"ppn", s.ppn},
                        {"ndup", s.ndup},
                        {"segment_bytes", s.segment},
                        {"repeat", repeat},
                        {"warmup", warmup},
                        {"mpi", v},
                        {"label", label},
                        {"bandwidth_formula", "2*(p-1)*n/p/t, p = nodes"},
                        {"check", bad ? "failed" : "ok"},
                        {"results", results}};
    std::ofstream(json_path) << j.dump(1) << "\n";
  }
  MPI_Finalize();
  return bad ? 1 : 0;
}

// `tessel calibrate`: measures the machine the planner prices (dense/machine_model.hpp) and
// writes the machine file: local dgemm/zgemm rate, memory bandwidth, point-to-point latency
// and bandwidth within a node and between nodes (MPI_Comm_split_type), alone and with every
// rank exchanging at once (what the model prices), the p2p segment size
// from the bandwidth curve, and the overlap of a transfer with a GEMM. Every figure with its
// spread (min / median / max over the repeats). run_calibrate: check the options -> the nodes
// -> the measurements -> the machine model -> the summary, the machine file, --json.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <utility>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "report.hpp"
#include "tessel/comm/comm.hpp"
#include "tessel/comm/tags.hpp"
#include "tessel/dense/machine_model.hpp"
#include "tessel/core/timer.hpp"

extern "C" {
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*,
            const double*, const int*, const double*, const int*, const double*, double*,
            const int*);
void zgemm_(const char*, const char*, const int*, const int*, const int*,
            const std::complex<double>*, const std::complex<double>*, const int*,
            const std::complex<double>*, const int*, const std::complex<double>*,
            std::complex<double>*, const int*);
}

namespace tessel::app {
namespace {

struct CalibrateArgs {
  std::string out = "machine.json", json, trace;
  int gemm_size = 1024, repeat = 5, pingpong = 20, stream_mib = 32;
  std::int64_t bw_bytes = 4 << 20;
};

struct Spread {
  double min = 0, median = 0, max = 0;
  nlohmann::json to_json() const { return {{"min", min}, {"median", median}, {"max", max}}; }
};

Spread spread(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  s.median = median(v);
  return s;
}

// Collective. Every rank's samples, rank by rank (each rank gives the same count).
std::vector<double> all_samples(const comm::Comm& c, const std::vector<double>& mine) {
  std::vector<double> all(mine.size() * static_cast<std::size_t>(c.size()));
  c.allgather(mine.data(), static_cast<int>(mine.size()), all.data());
  return all;
}

// The partner of rank r of p in the pairs (r, r + p/2), r < p/2; -1 for a rank left over.
// On nodes of consecutive ranks whose size divides p/2, the two sit on different nodes.
int half_partner(int r, int p) {
  const int h = p / 2;
  return r < h ? r + h : r < 2 * h ? r - h : -1;
}

// Collective. Seconds from a barrier to the barrier after it, during which this rank exchanges
// snd / rcv with `partner` both ways (none when partner < 0) while running `work` (if any),
// i.e. the slowest rank's time.
double timed_exchange(const comm::Comm& c, int partner, const std::vector<char>& snd,
                      std::vector<char>& rcv, const std::function<void()>& work = {}) {
  const auto bytes = static_cast<std::int64_t>(snd.size());
  c.barrier();
  const Stopwatch t0;
  comm::RequestSet rs;
  if (partner >= 0) {
    c.irecv(rcv.data(), bytes, partner, comm::tag::kCalibrateOverlap, rs);
    c.isend(snd.data(), bytes, partner, comm::tag::kCalibrateOverlap, rs);
  }
  if (work) work();
  rs.wait_all();
  c.barrier();
  return std::max(t0.seconds(), 1e-9);
}

// The n x n operands A, B of the timed GEMMs (finite, not special values).
template <class T>
std::pair<std::vector<T>, std::vector<T>> gemm_operands(int n) {
  std::vector<T> a(static_cast<std::size_t>(n) * n), b(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = T(std::sin(0.1 * static_cast<double>(i)));
    b[i] = T(std::cos(0.1 * static_cast<double>(i)));
  }
  return {std::move(a), std::move(b)};
}

// GFLOP/s of `repeat` local n x n x n GEMMs on every rank at once; samples of all ranks. A
// sample is timed from a barrier to the barrier after the GEMM, i.e. until the slowest rank is
// done, as the ranks of a multiply wait for each other (where ranks share a core, the rate
// per rank is the core's shared: 8 ranks on 2 cores here 11-12 GFLOP/s each, 1 rank 44).
template <class T>
std::vector<double> gemm_rates(const comm::Comm& c, int n, int repeat) {
  auto [a, b] = gemm_operands<T>(n);
  std::vector<T> out(a.size());
  const T one(1), zero(0);
  const double flops = (std::is_same_v<T, double> ? 2.0 : 8.0) * n * n * static_cast<double>(n);
  std::vector<double> mine;
  for (int r = 0; r <= repeat; ++r) {  // the first run warms up, not recorded
    c.barrier();
    const Stopwatch t0;
    if constexpr (std::is_same_v<T, double>)
      dgemm_("N", "N", &n, &n, &n, &one, a.data(), &n, b.data(), &n, &zero, out.data(), &n);
    else
      zgemm_("N", "N", &n, &n, &n, &one, a.data(), &n, b.data(), &n, &zero, out.data(), &n);
    c.barrier();
    const double t = std::max(t0.seconds(), 1e-9);
    if (r > 0) mine.push_back(flops / t * 1e-9);
  }
  return all_samples(c, mine);
}

// GB/s of copying one array of `mib` MiB into another (bytes read + bytes written), every
// rank at once (as the ranks of a multiply share their socket's bandwidth), timed until the
// slowest rank is done (as gemm_rates); samples of all ranks.
std::vector<double> copy_rates(const comm::Comm& c, int mib, int repeat) {
  const std::size_t n = static_cast<std::size_t>(mib) * (std::size_t{1} << 20) / sizeof(double);
  std::vector<double> a(n, 1.0), b(n, 0.0);  // written once: the pages exist before the timing
  std::vector<double> mine;
  for (int r = 0; r <= repeat; ++r) {  // the first run warms up, not recorded
    c.barrier();
    const Stopwatch t0;
    std::copy(a.begin(), a.end(), b.begin());
    c.barrier();
    const double t = std::max(t0.seconds(), 1e-9);
    a[static_cast<std::size_t>(r) % n] = b[n - 1];  // the copy is used: not optimised away
    if (r > 0) mine.push_back(2.0 * static_cast<double>(n * sizeof(double)) / t * 1e-9);
  }
  return all_samples(c, mine);
}

// The model's `overlap`: the fraction of min(transfer, GEMM) hidden when a transfer is in
// flight during a local GEMM, as in a multiply's rounds. Rank r < h = p/2 exchanges `bytes`
// with r + h (another node when nodes hold consecutive ranks), all pairs at once; per sample
// the exchange alone (t_c), the n^3 GEMM alone (t_g) and both (post, GEMM, wait: t_b), each
// from a barrier to the next; overlap = (t_c + t_g - t_b) / min(t_c, t_g), clamped to [0, 1].
// Samples of the ranks with a partner (a rank left over when p is odd only joins barriers).
std::vector<double> overlap_samples(const comm::Comm& c, int n, std::int64_t bytes, int repeat) {
  const int peer = half_partner(c.rank(), c.size());
  auto [a, b] = gemm_operands<double>(n);
  std::vector<double> out(a.size());
  std::vector<char> snd(static_cast<std::size_t>(bytes), 1), rcv(snd.size());
  const double one = 1, zero = 0;
  auto gemm = [&] {
    dgemm_("N", "N", &n, &n, &n, &one, a.data(), &n, b.data(), &n, &zero, out.data(), &n);
  };
  std::vector<double> mine;  // NaN from the rank without a partner, dropped after the gather
  for (int r = 0; r <= repeat; ++r) {  // the first sample warms up, not recorded
    const double tc = timed_exchange(c, peer, snd, rcv), tg = timed_exchange(c, -1, snd, rcv, gemm),
                 tb = timed_exchange(c, peer, snd, rcv, gemm);
    if (r > 0)
      mine.push_back(peer < 0 ? NAN : std::clamp((tc + tg - tb) / std::min(tc, tg), 0.0, 1.0));
  }
  std::vector<double> all = all_samples(c, mine);
  all.erase(std::remove_if(all.begin(), all.end(), [](double x) { return std::isnan(x); }),
            all.end());
  return all;
}

// Half round trips (seconds) of `bytes`-byte messages between ranks a and b of c, `iters`
// ping-pongs per sample, `repeat` samples; the other ranks only join the barriers. Spins on
// test_all (no sleeping) so that the wait does not add to the latency.
std::vector<double> pingpong(const comm::Comm& c, int a, int b, std::int64_t bytes, int iters,
                             int repeat) {
  std::vector<char> buf(static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1)));
  std::vector<double> samples;
  const int me = c.rank();
  for (int r = 0; r <= repeat; ++r) {  // the first sample warms up, not recorded
    c.barrier();
    const Stopwatch t0;
    if (me == a || me == b) {
      const int peer = me == a ? b : a;
      for (int i = 0; i < iters; ++i) {
        comm::RequestSet rs;
        if (me == a) {
          c.isend(buf.data(), bytes, peer, comm::tag::kCalibratePingPong, rs);
          while (!rs.test_all()) {}
          c.irecv(buf.data(), bytes, peer, comm::tag::kCalibratePingPong, rs);
          while (!rs.test_all()) {}
        } else {
          c.irecv(buf.data(), bytes, peer, comm::tag::kCalibratePingPong, rs);
          while (!rs.test_all()) {}
          c.isend(buf.data(), bytes, peer, comm::tag::kCalibratePingPong, rs);
          while (!rs.test_all()) {}
        }
      }
    }
    const double half = t0.seconds() / (2.0 * iters);
    if (r > 0) samples.push_back(half);
  }
  // rank a's samples for everyone
  c.bcast(samples.data(), static_cast<int>(samples.size()), a);
  return samples;
}

struct LinkResult {
  bool measured = false;
  int a = 0, b = 0;
  Spread latency_us, bandwidth_gbs;
  std::vector<std::pair<std::int64_t, double>> curve;  // bytes -> median GB/s
  Spread all_at_once_gbs;  // per rank and direction, every rank exchanging on such a link
  bool all_at_once = false;
};

LinkResult measure_link(const comm::Comm& c, int a, int b, const CalibrateArgs& g) {
  LinkResult L;
  L.measured = true;
  L.a = a;
  L.b = b;
  std::vector<double> lat = pingpong(c, a, b, 0, g.pingpong, g.repeat);
  for (double& x : lat) x *= 1e6;
  L.latency_us = spread(lat);
  for (std::int64_t bytes = std::min<std::int64_t>(4096, g.bw_bytes);;
       bytes = std::min(bytes * 4, g.bw_bytes)) {
    const int iters = std::max(2, g.pingpong / 4);
    std::vector<double> t = pingpong(c, a, b, bytes, iters, g.repeat);
    std::vector<double> bw;
    for (double x : t) bw.push_back(static_cast<double>(bytes) / x * 1e-9);
    L.curve.push_back({bytes, median(bw)});
    if (bytes == g.bw_bytes) {
      L.bandwidth_gbs = spread(bw);
      break;
    }
  }
  return L;
}

// GB/s per rank and direction of every rank exchanging `bytes` with `partner` at once, both
// ways (-1: this rank only joins the barriers), timed barrier to barrier, i.e. the slowest
// pair; samples of all ranks. A multiply's phases move data on all ranks at once; where the
// network is full duplex and the NIC moves the data this is the ping-pong figure shared by
// the ranks of a node, where moving bytes takes CPU time or the links are not full duplex
// (TCP without offload; the emulated cluster of bench/README.md, whose links are processes
// on the machine's cores: 0.05 against 0.12 GB/s ping-pong) it is lower.
std::vector<double> exchange_all(const comm::Comm& c, int partner, std::int64_t bytes, int repeat) {
  std::vector<char> snd(static_cast<std::size_t>(bytes), 1), rcv(snd.size());
  std::vector<double> mine;
  for (int r = 0; r <= repeat; ++r) {  // the first sample warms up, not recorded
    const double t = timed_exchange(c, partner, snd, rcv);
    if (r > 0) mine.push_back(static_cast<double>(bytes) / t * 1e-9);
  }
  return all_samples(c, mine);
}

nlohmann::json link_json(const LinkResult& L) {
  if (!L.measured) return nullptr;
  nlohmann::json curve = nlohmann::json::array();
  for (auto& [b, v] : L.curve) curve.push_back({{"bytes", b}, {"gbs", v}});
  return {
      {"ranks", {L.a, L.b}},
      {"latency_us", L.latency_us.to_json()},
      {"bandwidth_gbs", L.bandwidth_gbs.to_json()},
      {"all_at_once_gbs", L.all_at_once ? L.all_at_once_gbs.to_json() : nlohmann::json(nullptr)},
      {"curve", curve}};
}

/// Pure. The options of `g`: InputError naming the option.
void check_options(const CalibrateArgs& g) {
  TESSEL_CHECK(g.gemm_size >= 1, InputError, "--gemm-size ", g.gemm_size, ": expected >= 1");
  TESSEL_CHECK(g.repeat >= 1, InputError, "--repeat ", g.repeat, ": expected >= 1");
  TESSEL_CHECK(g.pingpong >= 1, InputError, "--pingpong ", g.pingpong, ": expected >= 1");
  TESSEL_CHECK(g.stream_mib >= 1 && g.stream_mib <= 16384, InputError, "--stream-mib ",
               g.stream_mib, ": expected 1 .. 16384");
  TESSEL_CHECK(g.bw_bytes >= 1 && g.bw_bytes <= (std::int64_t{1} << 30), InputError, "--bw-bytes ",
               g.bw_bytes, ": expected 1 .. 1073741824");
  TESSEL_CHECK(!g.out.empty(), InputError, "--out '': expected a file name");
}

/// The nodes of the run and the peers of rank 0 whose links are measured.
struct Nodes {
  int intra_peer = -1, inter_peer = -1;  // the first rank on rank 0's node / on another node
  std::vector<int> sizes;                // ranks per node, by node
  bool consecutive = true;               // nodes hold consecutive ranks of equal count
};

/// Collective. Nodes: MPI_Comm_split_type(SHARED); node id = the world rank of its first rank.
Nodes find_nodes(const comm::Comm& c) {
  const int p = c.size(), rank = c.rank();
  comm::Comm node = c.split_shared();
  int leader = rank;
  node.bcast(&leader, 1, 0);
  std::vector<int> leaders(static_cast<std::size_t>(p));
  c.allgather(&leader, 1, leaders.data());
  Nodes x;
  for (int r = 1; r < p; ++r) {
    if (leaders[r] == leaders[0] && x.intra_peer < 0) x.intra_peer = r;
    if (leaders[r] != leaders[0] && x.inter_peer < 0) x.inter_peer = r;
  }
  for (int r = 0; r < p; ++r)
    if (leaders[r] == r)
      x.sizes.push_back(static_cast<int>(std::count(leaders.begin(), leaders.end(), r)));
  for (int r = 0; r < p; ++r)
    if (leaders[r] != (r / x.sizes[0]) * x.sizes[0]) x.consecutive = false;
  return x;
}

/// What was measured, with the spreads over the repeats.
struct Measured {
  Spread dgemm, zgemm, memory, overlap;
  LinkResult intra, inter;
  std::int64_t overlap_bytes = 0;  // 0: overlap not measured
};

/// Collective. Both links with every rank exchanging at once (exchange_all): within a node
/// ranks pair with a neighbour on it, between nodes rank r < p/2 with r + p/2 (another node;
/// nodes of consecutive ranks only, else not measured).
void measure_all_at_once(const comm::Comm& c, const CalibrateArgs& g, const Nodes& nodes,
                         Measured& m) {
  const int me = c.rank(), ns = nodes.sizes[0];
  if (!nodes.consecutive) return;
  if (m.intra.measured) {
    const int base = me - me % ns, pl = (me % ns) ^ 1;
    m.intra.all_at_once_gbs =
        spread(exchange_all(c, pl < ns ? base + pl : -1, g.bw_bytes, g.repeat));
    m.intra.all_at_once = true;
  }
  if (m.inter.measured && (c.size() / 2) % ns == 0) {  // then the pairs cross nodes
    m.inter.all_at_once_gbs =
        spread(exchange_all(c, half_partner(me, c.size()), g.bw_bytes, g.repeat));
    m.inter.all_at_once = true;
  }
}

/// Collective. The local rates, the links from rank 0 to its peers, and the overlap of a
/// message that takes about as long as the GEMM on the link the pairs use.
Measured measure(const comm::Comm& c, const CalibrateArgs& g, const Nodes& nodes) {
  Measured m;
  m.dgemm = spread(gemm_rates<double>(c, g.gemm_size, g.repeat));
  m.zgemm = spread(gemm_rates<std::complex<double>>(c, g.gemm_size, g.repeat));
  m.memory = spread(copy_rates(c, g.stream_mib, g.repeat));
  if (nodes.intra_peer > 0) m.intra = measure_link(c, 0, nodes.intra_peer, g);
  if (nodes.inter_peer > 0) m.inter = measure_link(c, 0, nodes.inter_peer, g);
  measure_all_at_once(c, g, nodes, m);
  const LinkResult& pair_link = m.inter.measured ? m.inter : m.intra;
  if (c.size() > 1 && pair_link.measured) {
    const double t_gemm =
        2.0 * g.gemm_size * g.gemm_size * static_cast<double>(g.gemm_size) / (m.dgemm.median * 1e9);
    m.overlap_bytes = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(pair_link.bandwidth_gbs.median * 1e9 * t_gemm), 65536,
        std::int64_t{256} << 20);
    m.overlap = spread(overlap_samples(c, g.gemm_size, m.overlap_bytes, g.repeat));
  }
  return m;
}

/// Pure. The machine model of the measurements: the medians; one node prices the inter-node
/// link as the intra-node one; the p2p segment is the smallest message that reaches 90% of
/// the largest message's bandwidth.
dense::MachineModel machine_model_of(const Measured& m, const Nodes& nodes) {
  dense::MachineModel mm;
  mm.dgemm_flops = m.dgemm.median * 1e9;
  mm.zgemm_flops = m.zgemm.median * 1e9;
  mm.mem_bandwidth_bps = m.memory.median * 1e9;
  // The bandwidth a multiply sees: with every rank exchanging at once when measured (between
  // nodes x node size, as the model shares an inter-node link among a node's ranks), never
  // above the ping-pong's.
  const double share = nodes.consecutive ? nodes.sizes[0] : 1;
  auto set = [](dense::LinkModel& l, const LinkResult& r, double ranks_sharing) {
    l.latency_s = r.latency_us.median * 1e-6;
    const double all = r.all_at_once ? r.all_at_once_gbs.median * ranks_sharing : 1e300;
    l.bandwidth_bps = std::min(r.bandwidth_gbs.median, all) * 1e9;
  };
  if (m.intra.measured) set(mm.intra, m.intra, 1.0);
  if (m.inter.measured)
    set(mm.inter, m.inter, share);
  else if (m.intra.measured)
    mm.inter = mm.intra;  // one node: no other link to price
  mm.node_size = nodes.consecutive ? nodes.sizes[0] : 0;
  if (m.overlap_bytes > 0) mm.overlap = m.overlap.median;
  const LinkResult& seg_link = m.inter.measured ? m.inter : m.intra;
  if (seg_link.measured && !seg_link.curve.empty()) {
    const double top = seg_link.curve.back().second;
    for (auto& [bytes, bw] : seg_link.curve)
      if (bw >= 0.9 * top) {
        mm.p2p_segment_bytes = bytes;
        break;
      }
  }
  mm.source = "tessel calibrate";
  return mm;
}

/// The machine file's "measured" section.
nlohmann::json measured_json(const CalibrateArgs& g, int p, const Nodes& nodes, const Measured& m) {
  nlohmann::json measured = {{"ranks", p},
                             {"nodes", nodes.sizes.size()},
                             {"ranks_per_node", nodes.sizes},
                             {"gemm_size", g.gemm_size},
                             {"repeat", g.repeat},
                             {"dgemm_gflops", m.dgemm.to_json()},
                             {"zgemm_gflops", m.zgemm.to_json()},
                             {"stream_mib", g.stream_mib},
                             {"memory_bandwidth_gbs", m.memory.to_json()},
                             {"intra_node", link_json(m.intra)},
                             {"inter_node", link_json(m.inter)}};
  if (m.overlap_bytes > 0) {
    measured["overlap"] = m.overlap.to_json();
    measured["overlap_bytes"] = m.overlap_bytes;
  } else {
    measured["overlap"] = nullptr;
  }
  return measured;
}

/// Rank 0: the measurements and the file written.
void print_summary(const CalibrateArgs& g, int p, const Nodes& nodes, const Measured& m,
                   const dense::MachineModel& mm) {
  auto line = [](const char* what, const Spread& s, const char* unit) {
    return fmt::format("  {:<26} median {:.4g} {} (min {:.4g}, max {:.4g})\n", what, s.median, unit,
                       s.min, s.max);
  };
  std::cout << fmt::format("tessel calibrate: {} ranks on {} node(s), {} repeats\n", p,
                           nodes.sizes.size(), g.repeat)
            << line(fmt::format("dgemm {}^3 per rank", g.gemm_size).c_str(), m.dgemm, "GFLOP/s")
            << line(fmt::format("zgemm {}^3 per rank", g.gemm_size).c_str(), m.zgemm, "GFLOP/s")
            << line(fmt::format("memory copy {} MiB per rank", g.stream_mib).c_str(), m.memory,
                    "GB/s");
  for (const auto* L : {&m.intra, &m.inter}) {
    const char* name = L == &m.intra ? "intra-node" : "inter-node";
    if (!L->measured) {
      std::cout << "  " << name << ": "
                << (L == &m.intra ? "no intra-node pair (one rank per node)"
                                  : "no inter-node pair (one node)")
                << "\n";
      continue;
    }
    std::cout << line(fmt::format("{} latency {}-{}", name, L->a, L->b).c_str(), L->latency_us,
                      "us")
              << line(fmt::format("{} bandwidth {} B", name, g.bw_bytes).c_str(), L->bandwidth_gbs,
                      "GB/s");
    if (L->all_at_once)
      std::cout << line("  ... all ranks at once", L->all_at_once_gbs, "GB/s per rank");
  }
  if (!nodes.consecutive)
    std::cout
        << "  nodes do not hold consecutive ranks of equal count: node_size written as 0 (unknown)\n";
  if (m.overlap_bytes > 0)
    std::cout << line(fmt::format("overlap, {} B with GEMM", m.overlap_bytes).c_str(), m.overlap,
                      "(fraction hidden)");
  else
    std::cout << "  overlap: not measured (one rank); default " << mm.overlap << " written\n";
  std::cout << "  p2p segment: " << mm.p2p_segment_bytes << " bytes\n"
            << "wrote " << g.out << " (" << dense::describe(mm) << ")\n";
}

/// Collective: check the options -> the nodes -> the measurements -> the machine model -> the
/// summary, the machine file (--out), --json.
int run_calibrate(const CalibrateArgs& g) {
  Context ctx(MPI_COMM_WORLD, context_options_from_environment());
  check_options(g);
  check_writable(ctx, "--out", g.out);
  check_writable(ctx, "--json", g.json);
  TraceRun trace(ctx, g.trace);
  const comm::Comm& c = ctx.comm();

  const Nodes nodes = find_nodes(c);
  const Measured m = measure(c, g, nodes);
  const dense::MachineModel mm = machine_model_of(m, nodes);
  const nlohmann::json measured = measured_json(g, c.size(), nodes, m);
  if (c.rank() == 0) print_summary(g, c.size(), nodes, m, mm);
  nlohmann::json file = nlohmann::json::parse(dense::machine_model_to_json(mm));
  file["comment"] = "written by tessel calibrate; medians over the repeats";
  file["tessel_version"] = run_header(ctx)["tessel_version"];
  file["measured"] = measured;
  write_json(ctx, g.out, file);
  if (!g.json.empty()) {
    nlohmann::json j = run_header(ctx);
    j["command"] = "calibrate";
    j["machine"] = file;
    write_json(ctx, g.json, j);
  }
  return trace.finish(0);
}

}  // namespace

std::function<int()> add_calibrate(CLI::App& app) {
  auto g = std::make_shared<CalibrateArgs>();
  CLI::App* s = app.add_subcommand(
      "calibrate",
      "Measure local GEMM rates, memory bandwidth, p2p latency/bandwidth (intra- and "
      "inter-node) and the overlap of a transfer with a GEMM, and write the machine file the "
      "planner reads (--machine / TESSEL_MACHINE) (collective)");
  s->add_option("--out", g->out, "Machine file to write (JSON)")->capture_default_str();
  add_trace_option(s, g->trace);
  s->add_option("--json", g->json, "Also write the run and the machine file as a JSON result");
  s->add_option("--gemm-size", g->gemm_size, "n of the local n x n x n dgemm/zgemm")
      ->capture_default_str();
  s->add_option("--stream-mib", g->stream_mib,
                "MiB of the array each rank copies to measure its memory bandwidth (all ranks at "
                "once; larger than the caches)")
      ->capture_default_str();
  s->add_option("--repeat", g->repeat, "Samples per figure (min / median / max reported)")
      ->capture_default_str();
  s->add_option("--pingpong", g->pingpong, "Ping-pongs per latency sample")->capture_default_str();
  s->add_option("--bw-bytes", g->bw_bytes, "Largest message of the bandwidth curve (bytes)")
      ->capture_default_str();
  return [g]() -> int { return run_calibrate(*g); };
}

}  // namespace tessel::app

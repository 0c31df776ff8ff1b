#include "cli_util.hpp"

#include "tessel/dense/machine_model.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "tessel/io/npy.hpp"
#include "tessel/io/path.hpp"

namespace tessel::app {

ContextOptions context_options_from_environment() {
  ContextOptions o;
  if (const char* e = std::getenv("TESSEL_NODE_SIZE"))
    o.node_size = parse_node_size(e, "TESSEL_NODE_SIZE");
  if (const char* e = std::getenv("TESSEL_MACHINE")) o.machine_file = e;
  return o;
}

dense::MachineModel machine_model(const Context& ctx, const std::string& cli_path) {
  dense::MachineModel m = dense::resolve_machine_model(ctx, cli_path);
  if (cli_path.empty() && !ctx.machine_file().empty())
    m.source = "TESSEL_MACHINE=" + ctx.machine_file();
  return m;
}

std::pair<int, int> parse_grid_option(const std::string& text) {
  const auto x = text.find_first_of("xX");
  int pr = 0, pc = 0;
  try {
    TESSEL_CHECK(x != std::string::npos && x > 0 && x + 1 < text.size(), InputError, "");
    std::size_t used_r = 0, used_c = 0;
    pr = std::stoi(text.substr(0, x), &used_r);
    pc = std::stoi(text.substr(x + 1), &used_c);
    TESSEL_CHECK(used_r == x && used_c == text.size() - x - 1, InputError, "");
  } catch (const std::exception&) {
    throw InputError("--grid '" + text + "': expected PRxPC, e.g. 2x4");
  }
  TESSEL_CHECK(pr >= 1 && pc >= 1, InputError, "--grid ", text, ": expected PR >= 1 and PC >= 1");
  return {pr, pc};
}

void check_writable(const Context& ctx, const std::string& option, const std::string& path) {
  if (path.empty()) return;
  ctx.agree([&] {
    if (ctx.rank() != 0) return;
    const std::string dir = io::directory_of(path);
    TESSEL_CHECK(::access(dir.c_str(), W_OK) == 0, InputError, option, " ", path, ": directory '",
                 dir, "' does not exist or is not writable");
    struct stat st {};
    TESSEL_CHECK(::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode), InputError, option, " ",
                 path, ": is a directory");
  });
}

void add_trace_option(CLI::App* s, std::string& path) {
  s->add_option("--trace", path,
                "Write the run's timeline (phases, transfers, local kernels; one lane per rank) "
                "to this file in the Chrome trace-event format (Perfetto; bench/trace_plot.py)");
}

void add_simulate_compute_option(CLI::App* s, std::string& mode, const std::string& help) {
  s->add_option(
       "--simulate-compute", mode,
       "run | skip. skip (only in the SMPI build, docs/simulation.md): " +
           (help.empty() ? std::string("the local GEMMs are not computed but charged to the "
                                       "simulated clock at the simulated host's speed, and the "
                                       "matrices are shared simulated memory")
                         : help) +
           ": results are meaningless, times and bytes are not (no --verify)")
      ->capture_default_str();
}

ContextOptions simulate_compute_options(const std::string& mode, bool verify) {
  ContextOptions o;
  o.compute = parse_compute_mode(mode, "--simulate-compute");
  TESSEL_CHECK(!(verify && o.compute == ComputeMode::Skip), InputError,
               "--verify with --simulate-compute skip: the local products are not computed, so "
               "there is no result to verify (expected one of the two)");
  return o;
}

TraceRun::TraceRun(Context& ctx, const std::string& path) : ctx_(ctx), path_(path) {
  if (path_.empty()) return;
  check_writable(ctx_, "--trace", path_);
  ctx_.start_trace();
}

int TraceRun::finish(int rc) {
  if (!path_.empty()) ctx_.write_trace(path_);
  return rc;
}

dense::DistMatrix<double> read_npy_option(
    const Context& ctx, const std::string& option, const std::string& path,
    const std::function<layout::Layout(std::int64_t, std::int64_t)>& make_layout) {
  try {
    return io::read_npy<double>(ctx, path, make_layout);
  } catch (const InputError& e) {  // thrown on every rank alike
    throw InputError(detail::concat(option, " ", path, ": ", e.what()));
  }
}

int parse_n_dup(const std::string& value) {
  if (value == "auto") return 0;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(value.c_str(), &end, 10);
  TESSEL_CHECK(!value.empty() && end && *end == '\0' && errno == 0 && v >= 1 && v <= 1 << 20,
               InputError, "--n-dup '", value, "': expected an integer >= 1 or auto");
  return static_cast<int>(v);
}

dense::SscOptions SscArgs::options(const Context& ctx) const {
  const int ranks = ctx.size();
  dense::SscOptions o;
  o.algorithm =
      parse_named("--algorithm", algorithm, "3, 4, 5 or 2.5d (the seed's Algorithms 3, 4, 5, 6)",
                  [](const std::string& v) { return dense::parse_ssc_algorithm(v); });
  o.n_dup = parse_n_dup(n_dup);
  if (n_t) {
    TESSEL_CHECK(*n_t >= 1, InputError, "--n-t ", *n_t, ": expected a message size in bytes >= 1");
    o.n_t = *n_t;
  } else {  // the machine file's segment sweet spot, when there is a machine file
    const dense::MachineModel mm = machine_model(ctx, machine);
    o.n_t = mm.source == "defaults" ? 64 * 1024 : mm.p2p_segment_bytes;
  }
  TESSEL_CHECK(active_ranks >= 0 && active_ranks <= ranks, GridError, "--active-ranks ",
               active_ranks, ": the run has ", ranks, " ranks (expected 1 .. ", ranks,
               ", or 0 for all)");
  o.active_ranks = active_ranks;
  TESSEL_CHECK(replication >= 0, InputError, "--replication ", replication,
               ": expected a replication factor >= 1 (or 0 for automatic)");
  TESSEL_CHECK(replication == 0 || o.algorithm == dense::SscAlgorithm::TwoPointFiveD, InputError,
               "--replication ", replication, " applies to --algorithm 2.5d only (got --algorithm ",
               algorithm, ")");
  o.replication = replication;
  o.collectives = parse_named("--collectives", collectives, "mpi or p2p",
                              [](const std::string& v) { return comm::parse_coll_impl(v); });
  return o;
}

void SscArgs::add_to(CLI::App* s) {
  s->add_option(
       "--algorithm", algorithm,
       "SymmSquareCube algorithm of seed 000: 3 (GTFock original), 4 (blocking collectives), "
       "5 (N_DUP pipelined nonblocking collectives), 2.5d (Algorithm 6)")
      ->capture_default_str();
  s->add_option(
       "--n-dup", n_dup,
       "Parts per collective on duplicated communicators (N_DUP): an integer >= 1, or auto "
       "(the largest N <= 4 whose parts of the smallest block are >= --n-t bytes)")
      ->capture_default_str();
  s->add_option(
      "--n-t", n_t,
      "Message size threshold in bytes for --n-dup auto (default: p2p_segment_bytes of the "
      "machine file, else 65536)");
  s->add_option("--machine", machine,
                "Machine file (tessel calibrate) whose p2p_segment_bytes is the default --n-t; "
                "default: $TESSEL_MACHINE");
  s->add_option("--active-ranks", active_ranks,
                "Ranks the kernel may use (the seed's active subset); 0 = all ranks of the run")
      ->capture_default_str();
  s->add_option("--replication", replication,
                "Replication factor c of --algorithm 2.5d (0 = automatic)")
      ->capture_default_str();
  s->add_option("--collectives", collectives,
                "Collectives of the kernel: mpi (the MPI library's Bcast/Ibcast, Reduce/Ireduce, "
                "Iallreduce) or p2p (tessel's pipelined point-to-point chains in 32 KiB segments; "
                "every link carries a message once)")
      ->capture_default_str();
}

const char* const kRingModelHelp =
    "Built-in input (no --fock): the ring model. n sites on a ring (n even), on-site energy -g/2 on "
    "even and +g/2 on odd sites (0-based), hopping -t between ring neighbours: a two-site unit cell "
    "(the ionic / Rice-Mele chain without bond dimerisation). Its spectrum is analytic: for "
    "kappa = 2 pi m / (n/2), m = 0 .. n/2-1,  E = +-sqrt(g^2/4 + 4 t^2 cos^2(kappa/2)). With nocc = n/2 "
    "the lower band is filled: exact band energy 2 * sum of the nocc lowest E, HOMO-LUMO gap "
    "E_(nocc+1) - E_(nocc) (= g when n/2 is even). Each rank fills its own entries of F (no "
    "communication).";

void RingModel::add_to(CLI::App* s) {
  s->add_option("--n", n, "Ring model: number of sites (even; the matrix size)")
      ->capture_default_str();
  s->add_option("--gap", gap, "Ring model: on-site energy difference g in Eh (> 0)")
      ->capture_default_str();
  s->add_option("--hopping", hopping, "Ring model: hopping t between neighbours in Eh")
      ->capture_default_str();
}

std::string RingModel::describe() const {
  return fmt::format("ring model: n = {} sites, on-site -+g/2 with g = {} Eh, hopping t = {} Eh", n,
                     gap, hopping);
}

double RingModel::element(std::int64_t i, std::int64_t j) const {
  if (i == j) return i % 2 ? 0.5 * gap : -0.5 * gap;
  double v = 0;
  if ((i + 1) % n == j) v -= hopping;  // bond (i, i+1)
  if ((j + 1) % n == i) v -= hopping;  // bond (j, j+1); both when n = 2
  return v;
}

void RingModel::fill(dense::DistMatrix<double>& f) const {
  f.for_each_local([&](std::int64_t i, std::int64_t j, double& v) { v = element(i, j); });
}

std::vector<double> RingModel::spectrum() const {
  const std::int64_t cells = n / 2;
  const double pi = std::acos(-1.0);
  std::vector<double> e;
  e.reserve(static_cast<std::size_t>(n));
  for (std::int64_t m = 0; m < cells; ++m) {
    double c = std::cos(pi * static_cast<double>(m) / static_cast<double>(cells));  // cos(kappa/2)
    double E = std::sqrt(0.25 * gap * gap + 4 * hopping * hopping * c * c);
    e.push_back(-E);
    e.push_back(E);
  }
  std::sort(e.begin(), e.end());
  return e;
}

void RingModel::validate() const {
  TESSEL_CHECK(n >= 2 && n % 2 == 0, InputError, "--n ", n,
               ": the ring model needs an even number of sites >= 2 (two-site unit cell)");
  TESSEL_CHECK(gap > 0 && std::isfinite(gap), InputError, "--gap ", gap,
               ": expected a finite on-site energy difference > 0 (Eh)");
  TESSEL_CHECK(std::isfinite(hopping), InputError, "--hopping ", hopping,
               ": expected a finite hopping energy (Eh)");
}

}  // namespace tessel::app

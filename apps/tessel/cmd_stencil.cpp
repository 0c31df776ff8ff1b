// `tessel stencil`: the lowest eigenstates of H = -1/2 Laplacian + V on a real-space mesh
// partitioned over the ranks (seed 002, Octopus), with the halo exchange as a sparse
// collective overlapped with the stencil. Prints the partition (points, neighbours, message
// sizes, cut), one line per solver iteration, the eigenvalues beside the analytic ones, the
// exchange time and the part the overlap hid, and the bytes and neighbours per rank.
// run_stencil: check the options -> the mesh, its partition and H -> the eigensolver, the
// hidden-exchange measurement, the propagation -> the report and --json.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "report.hpp"
#include "tessel/comm/exchange.hpp"
#include "tessel/solvers/chfsi.hpp"
#include "tessel/stencil/fd.hpp"
#include "tessel/stencil/hamiltonian.hpp"
#include "tessel/stencil/partition.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::app {
namespace {

constexpr double kBohrPerAngstrom = 1.8897261246257702;

struct StencilArgs {
  std::string xyz, xyz_units = "angstrom", potential, exchange = "neighbor", overlap = "on",
                   partitioner = "metis", solver = "chfsi", json, trace;
  double radius = 0, box = 0, spacing = 0.5, omega = 1.0, softening = 1.0, tol = 1e-6, dt = 0.02;
  int order = 4, states = 10, max_iter = 300, degree = 0, propagate = 0, repeat = 5, batch = 0,
      test_every = 0;
  bool apply_only = false;
  CLI::App* app = nullptr;
};

// The built-in default: four pseudo-atoms of a bent chain; spheres of 4.5 bohr around them make
// an irregular mesh that holds the oscillator's lowest shells.
std::vector<stencil::Atom> builtin_atoms() {
  return {
      {"X", -2.0, -0.8, 0.0}, {"X", 0.0, 0.6, 0.3}, {"X", 2.0, -0.6, 0.0}, {"X", 0.3, 0.4, 1.8}};
}

// Analytic spectra: the oscillator (omega (n + 3/2), degeneracy (n+1)(n+2)/2) and the box.
std::vector<double> analytic(stencil::PotentialKind k, double omega, double box, int count) {
  std::vector<double> e;
  if (k == stencil::PotentialKind::Harmonic) {
    for (int n = 0; static_cast<int>(e.size()) < count; ++n)
      for (int d = 0; d < (n + 1) * (n + 2) / 2; ++d) e.push_back(omega * (n + 1.5));
  } else if (k == stencil::PotentialKind::Box && box > 0) {
    const double pi = std::acos(-1.0), u = pi * pi / (2 * box * box);
    const int m = static_cast<int>(std::cbrt(count)) + 4;
    for (int a = 1; a <= m; ++a)
      for (int b = 1; b <= m; ++b)
        for (int c = 1; c <= m; ++c) e.push_back(u * (a * a + b * b + c * c));
    std::sort(e.begin(), e.end());
  }
  if (static_cast<int>(e.size()) > count) e.resize(static_cast<std::size_t>(count));
  return e;
}

struct Stat {
  double min = 0, mean = 0, max = 0;
};
Stat over_ranks(const Context& ctx, double v) {
  std::vector<double> all(static_cast<std::size_t>(ctx.size()));
  ctx.comm().allgather(&v, 1, all.data());
  Stat s{all[0], 0, all[0]};
  for (double x : all) {
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    s.mean += x / static_cast<double>(all.size());
  }
  return s;
}
std::string fmt_stat(const Stat& s, const char* f = "{:.0f}") {
  return fmt::format(fmt::runtime(std::string("min ") + f + ", mean " + f + ", max " + f), s.min,
                     s.mean, s.max);
}
nlohmann::json json_stat(const Stat& s) {
  return {{"min", s.min}, {"mean", s.mean}, {"max", s.max}};
}

// ---- parse and validate (the same on every rank: plain checks throw together) ----

/// The checked options of a run.
struct Setup {
  bool have_xyz = false, have_box = false;
  comm::ExchangeStrategy strategy{};
  stencil::Partitioner part{};
  stencil::PotentialKind pot{};
};

/// Pure. The mesh, exchange, partitioner and potential options (InputError naming the option).
Setup check_mesh_options(const StencilArgs& a) {
  Setup s;
  s.have_xyz = !a.xyz.empty();
  s.have_box = a.app->count("--box") > 0;
  TESSEL_CHECK(!(s.have_xyz && s.have_box), InputError, "--xyz ", a.xyz, " and --box ", a.box,
               ": choose one mesh (spheres around atoms, or a box)");
  TESSEL_CHECK(s.have_xyz || a.app->count("--radius") == 0 || !s.have_box, InputError, "--radius ",
               a.radius, ": only with --xyz (the box has no spheres)");
  TESSEL_CHECK(a.xyz_units == "angstrom" || a.xyz_units == "bohr", InputError, "--xyz-units '",
               a.xyz_units, "': expected angstrom or bohr");
  TESSEL_CHECK(a.spacing > 0 && std::isfinite(a.spacing), InputError, "--spacing ", a.spacing,
               ": expected a grid spacing > 0 (bohr)");
  try {
    stencil::check_order(a.order);
  } catch (const InputError&) {
    throw InputError(fmt::format("--order {}: expected 2, 4, 6, 8 or 12", a.order));
  }
  s.strategy =
      parse_named("--exchange", a.exchange, "alltoallv, ialltoallv, neighbor, persistent or p2p",
                  [](const std::string& v) { return comm::parse_exchange_strategy(v); });
  TESSEL_CHECK(a.overlap == "on" || a.overlap == "off", InputError, "--overlap '", a.overlap,
               "': expected on or off");
  s.part = parse_named("--partitioner", a.partitioner, "metis or geometric",
                       [](const std::string& v) { return stencil::parse_partitioner(v); });
  const std::string pot_name = a.potential.empty() ? (s.have_xyz   ? "softcoulomb"
                                                      : s.have_box ? "box"
                                                                   : "harmonic")
                                                   : a.potential;
  s.pot = parse_named("--potential", pot_name, "harmonic, box or softcoulomb",
                      [](const std::string& v) { return stencil::parse_potential(v); });
  return s;
}

/// Pure. The solver and measurement options, then whether this MPI has the exchange.
void check_solver_options(const StencilArgs& a, comm::ExchangeStrategy strategy) {
  TESSEL_CHECK(a.states >= 1, InputError, "--states ", a.states, ": expected >= 1");
  TESSEL_CHECK(a.solver == "chfsi" || a.solver == "lobpcg", InputError, "--solver '", a.solver,
               "': expected chfsi or lobpcg");
  TESSEL_CHECK(a.tol > 0 && std::isfinite(a.tol), InputError, "--tol ", a.tol, ": expected > 0");
  TESSEL_CHECK(a.max_iter >= 1, InputError, "--max-iter ", a.max_iter, ": expected >= 1");
  TESSEL_CHECK(a.degree >= 0, InputError, "--degree ", a.degree,
               ": expected 0 (automatic) or >= 1");
  TESSEL_CHECK(a.propagate >= 0, InputError, "--propagate ", a.propagate, ": expected >= 0 steps");
  TESSEL_CHECK(a.dt > 0 && std::isfinite(a.dt), InputError, "--dt ", a.dt, ": expected > 0");
  TESSEL_CHECK(a.repeat >= 1, InputError, "--repeat ", a.repeat, ": expected >= 1");
  TESSEL_CHECK(a.batch >= 0, InputError, "--batch ", a.batch,
               ": expected >= 1 vectors (0: the solver's block)");
  TESSEL_CHECK(a.test_every >= 0, InputError, "--test-every ", a.test_every,
               ": expected >= 1 points, or 0 for the default");
  TESSEL_CHECK(!a.apply_only || a.propagate == 0, InputError, "--propagate ", a.propagate,
               ": needs the eigenstates, which --apply-only skips");
  TESSEL_CHECK(a.omega > 0 && std::isfinite(a.omega), InputError, "--omega ", a.omega,
               ": expected > 0");
  TESSEL_CHECK((strategy != comm::ExchangeStrategy::Neighbor &&
                strategy != comm::ExchangeStrategy::Persistent) ||
                   comm::have_neighbor_collectives(),
               InputError, "--exchange ", a.exchange,
               ": this is tessel's SMPI build, and SimGrid's SMPI has no "
               "MPI_Dist_graph_create_adjacent nor MPI_Ineighbor_alltoallv: use --exchange "
               "alltoallv, ialltoallv or p2p");
  TESSEL_CHECK(
      strategy != comm::ExchangeStrategy::Persistent || comm::have_persistent_neighbor(),
      InputError,
      "--exchange persistent: this MPI has no MPI_Neighbor_alltoallv_init (MPI-4; Open MPI 4.1 is "
      "MPI-3): use --exchange neighbor, or build tessel against MPICH 4 (scripts/setup.sh --mpi mpich)");
}

// ---- input: the mesh (every rank builds the same one; a file error on any rank stops all) ----

struct MeshInput {
  std::vector<stencil::Atom> atoms;  // none for the box
  std::string source;                // "input: ..." of the report
  double radius = 0;                 // of the spheres
};

/// Collective. The atoms of --xyz (in bohr), the built-in ones, or none (--box).
MeshInput read_atoms(Context& ctx, const StencilArgs& a, const Setup& s) {
  MeshInput in;
  if (s.have_xyz) {
    TESSEL_CHECK(a.radius > 0 && std::isfinite(a.radius), InputError, "--radius ", a.radius,
                 ": expected a sphere radius > 0 (bohr) with --xyz (0 gives an empty mesh)");
    ctx.agree([&] {
      try {
        in.atoms = stencil::read_xyz(a.xyz);
      } catch (const InputError& e) {
        throw InputError(std::string("--xyz ") + a.xyz + ": " + e.what());
      }
    });
    TESSEL_CHECK(!in.atoms.empty(), InputError, "--xyz ", a.xyz, ": no atoms (an empty mesh)");
    if (a.xyz_units == "angstrom")
      for (auto& at : in.atoms)
        at.x *= kBohrPerAngstrom, at.y *= kBohrPerAngstrom, at.z *= kBohrPerAngstrom;
    in.source = fmt::format("{} ({} atoms)", a.xyz, in.atoms.size());
  } else if (!s.have_box) {
    in.atoms = builtin_atoms();
    in.source = "built-in: 4 pseudo-atoms of a bent chain";
  } else {
    in.source = "box";
  }
  in.radius = s.have_xyz ? a.radius : (a.app->count("--radius") ? a.radius : 4.5);
  return in;
}

/// Pure. The box, or the spheres around the atoms (InputError naming --spacing and the size).
stencil::Mesh make_mesh(const StencilArgs& a, const Setup& s, const MeshInput& in) {
  try {
    return s.have_box ? stencil::Mesh::box(a.box, a.spacing)
                      : stencil::Mesh::spheres(in.atoms, in.radius, a.spacing);
  } catch (const InputError& e) {
    throw InputError(fmt::format(
        "--spacing {} {}: {}", a.spacing,
        s.have_box ? fmt::format("--box {}", a.box) : fmt::format("--radius {}", in.radius),
        e.what()));
  }
}

// What a rank keeps of the mesh: its plan, its potential values and the mesh's summary.
struct LocalMesh {
  stencil::HaloPlan plan;
  std::vector<double> v;
  std::int64_t points = 0;
  double spacing = 0;
  std::string describe;
};

// Collective. Rank 0 makes the mesh (its errors thrown on every rank) and partitions it, the
// owners are broadcast, then the other ranks make theirs; each rank keeps its plan and its
// potential and drops the mesh and the owners before its next MPI call. Under SMPI (all ranks
// in one process, run one at a time between MPI calls) the simulation so holds one mesh at a
// time instead of one per rank (docs/simulation.md, "Seed 002").
template <class MakeMesh, class Potential>
LocalMesh make_local_mesh(Context& ctx, const MakeMesh& make, stencil::Partitioner part, int order,
                          const Potential& potential) {
  std::optional<stencil::Mesh> mesh;
  ctx.agree([&] {
    if (ctx.rank() == 0) mesh.emplace(make());
  });
  std::vector<int> owner =
      stencil::partition_mesh_on_root(ctx, mesh ? &*mesh : nullptr, part, order);
  if (!mesh) mesh.emplace(make());
  LocalMesh out;
  out.plan = stencil::make_halo_plan(*mesh, owner, ctx.size(), order, ctx.rank());
  out.v = potential(*mesh, out.plan);
  out.points = mesh->size();
  out.spacing = mesh->spacing();
  out.describe = mesh->describe();
  return out;  // the mesh and the owners go here
}

// ---- the partition (each rank its own numbers, gathered) ----

struct PartitionStats {
  Stat points, nbrs, sent, msgs;
  std::int64_t edge_cut = 0;
};

/// Collective.
PartitionStats partition_stats(const Context& ctx, const stencil::HaloPlan& plan) {
  std::vector<int> peers = plan.exchange.send_peers;
  peers.insert(peers.end(), plan.exchange.recv_peers.begin(), plan.exchange.recv_peers.end());
  std::sort(peers.begin(), peers.end());
  const double nbrs = static_cast<double>(std::unique(peers.begin(), peers.end()) - peers.begin());
  // stencil edges from my points to other ranks' (each cut edge twice overall)
  std::int64_t cut_local = 0;
  for (std::size_t i = 0; i < plan.points.size(); ++i)
    for (int s = 0; s < plan.neighbors_per_point(); ++s)
      cut_local += plan.neighbors[i * static_cast<std::size_t>(plan.neighbors_per_point()) +
                                  static_cast<std::size_t>(s)] >= plan.local_size();
  PartitionStats ps;
  ps.edge_cut = ctx.comm().allreduce_value(cut_local, MPI_SUM) / 2;
  ps.points = over_ranks(ctx, static_cast<double>(plan.local_size()));
  ps.nbrs = over_ranks(ctx, nbrs);
  ps.sent = over_ranks(ctx, static_cast<double>(plan.exchange.send_items()));
  ps.msgs = over_ranks(ctx, static_cast<double>(plan.exchange.send_peers.size()));
  return ps;
}

/// Rank 0: the run's header and the partition.
void print_partition(const StencilArgs& a, const Setup& s, const LocalMesh& mesh,
                     const std::string& source, const stencil::HaloPlan& plan, int P,
                     const PartitionStats& ps) {
  std::cout
      << fmt::format("tessel stencil: {} potential on {}\n", stencil::to_string(s.pot),
                     mesh.describe)
      << fmt::format("input: {}\n", source)
      << fmt::format(
             "order {} (stencil radius {}), {} ranks, partitioner {}, exchange {}, overlap {}\n",
             a.order, plan.radius, P, stencil::to_string(s.part), comm::to_string(s.strategy),
             a.overlap)
      << fmt::format(
             "partition: points per rank {}; neighbours per rank {}; points sent per rank {} "
             "(one vector); edge cut {}\n",
             fmt_stat(ps.points), fmt_stat(ps.nbrs, "{:.1f}"), fmt_stat(ps.sent), ps.edge_cut)
      << std::flush;
}

// ---- run: the eigensolver, the hidden exchange, the propagation ----

struct Solve {
  solvers::EigenResult res;
  std::vector<nlohmann::json> steps;
  double seconds = 0;
  stencil::ApplyTimes times;  // the Hamiltonian's during the solve
  Stat halo_bytes, other_bytes, exchange;
};

/// Collective. The lowest --states eigenpairs (--apply-only: none; res.block the batch), with
/// one line per iteration on rank 0, and the solve's exchange time and bytes per rank.
Solve solve(Context& ctx, const StencilArgs& a, stencil::Hamiltonian& h, const LocalMesh& mesh) {
  Solve sv;
  solvers::EigenOptions eo;
  eo.states = a.states;
  eo.tol = a.tol;
  eo.max_iter = a.max_iter;
  eo.degree = a.degree;
  eo.on_step = [&](const solvers::EigenStep& s) {
    sv.steps.push_back(
        {{"iteration", s.iteration}, {"max_residual", s.max_residual}, {"seconds", s.seconds}});
    if (ctx.rank() == 0)
      std::cout << fmt::format("iter {:4d}  max residual {:.3e}  {:.3f} s\n", s.iteration,
                               s.max_residual, s.seconds)
                << std::flush;
  };
  ctx.ledger().reset();
  ctx.comm().barrier();
  const Stopwatch t0;
  if (!a.apply_only)
    sv.res = a.solver == "lobpcg" ? solvers::lobpcg(ctx, h, mesh.points, eo)
                                  : solvers::chfsi(ctx, h, mesh.points, mesh.spacing, eo);
  else
    sv.res.block = a.batch > 0 ? a.batch : a.states;
  sv.seconds = ctx.comm().allreduce_value(t0.seconds(), MPI_MAX);
  sv.times = h.times();
  const auto halo = ctx.ledger().total("stencil/halo");
  const auto total = ctx.ledger().total();
  sv.halo_bytes = over_ranks(
      ctx, static_cast<double>(halo.coll_bytes + halo.p2p_sent_bytes + halo.p2p_recv_bytes));
  sv.other_bytes = over_ranks(ctx, static_cast<double>(total.coll_bytes - halo.coll_bytes));
  sv.exchange = over_ranks(ctx, sv.times.exchange);
  return sv;
}

/// The hidden-exchange measurement: per repetition, the largest over the ranks.
struct Overlap {
  int k = 0;  // vectors per apply
  std::vector<double> ex_plain, ex_over, tot_plain, tot_over, work_over, tests_over;
  std::vector<double> pack_plain, pack_over, wait_plain, wait_over;  // parts of ex_*
  Stat apply_bytes;  // halo bytes per rank per apply
  double hidden = 0, hideable = 0, saved = 0;
  int per_test = 0;  // inner points between two tests
};

/// Collective. The same batch of `k` vectors applied in the plain and the overlapped order,
/// alternating, `repeat` times each; hidden = 1 - exposed(overlapped) / exposed(plain), each
/// the largest over the ranks. Beside it, two checks of that number (docs/stencil.md,
/// "Progress"): the most the order can hide, min(1, work between start and wait / plain
/// exchange), and the time the overlap saves on the whole apply, (apply(plain) -
/// apply(overlapped)) / plain exchange, which also charges what the overlap costs the
/// computation (tests, contention for the core). Leaves h in the --overlap order.
Overlap measure_overlap(Context& ctx, const StencilArgs& a, stencil::Hamiltonian& h,
                        std::int64_t local_size, int k) {
  Overlap o;
  o.k = k;
  std::vector<double> x(static_cast<std::size_t>(local_size * k), 0.0), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.001 * static_cast<double>(i + 1));
  h.apply(x.data(), y.data(), k);  // builds the executor of this width (untimed)
  ctx.ledger().reset();
  for (int r = 0; r < a.repeat; ++r)
    for (bool on : {false, true}) {
      h.set_overlap(on);
      h.reset_times();
      ctx.comm().barrier();
      h.apply(x.data(), y.data(), k);
      const double e = ctx.comm().allreduce_value(h.times().exchange, MPI_MAX);
      const double t = ctx.comm().allreduce_value(h.times().total, MPI_MAX);
      (on ? o.ex_over : o.ex_plain).push_back(e);
      (on ? o.tot_over : o.tot_plain).push_back(t);
      (on ? o.pack_over : o.pack_plain)
          .push_back(ctx.comm().allreduce_value(h.times().pack, MPI_MAX));
      (on ? o.wait_over : o.wait_plain)
          .push_back(ctx.comm().allreduce_value(h.times().wait + h.times().tests_seconds, MPI_MAX));
      if (on) {
        o.work_over.push_back(ctx.comm().allreduce_value(h.times().overlapped, MPI_MIN));
        o.tests_over.push_back(
            ctx.comm().allreduce_value(static_cast<double>(h.times().tests), MPI_MAX));
      }
    }
  h.set_overlap(a.overlap == "on");
  const auto per_apply = ctx.ledger().total("stencil/halo");
  o.apply_bytes =
      over_ranks(ctx, static_cast<double>(per_apply.coll_bytes + per_apply.p2p_sent_bytes +
                                          per_apply.p2p_recv_bytes) /
                          (2.0 * a.repeat));
  const double m_plain = median(o.ex_plain), m_over = median(o.ex_over);
  o.hidden = m_plain > 0 ? std::max(0.0, 1 - m_over / m_plain) : 0.0;
  o.hideable = m_plain > 0 ? std::min(1.0, median(o.work_over) / m_plain) : 0.0;
  o.saved = m_plain > 0 ? (median(o.tot_plain) - median(o.tot_over)) / m_plain : 0.0;
  o.per_test = h.points_per_test(k);
  return o;
}

struct Propagation {
  double norm_dev = 0, seconds = 0;
};

/// Collective. --propagate: the converged states as complex orbitals, `steps` 4th-order Taylor
/// steps of dt; the largest deviation of a norm from 1.
Propagation propagate(Context& ctx, const StencilArgs& a, stencil::Hamiltonian& h,
                      std::int64_t local_size, const std::vector<double>& vectors) {
  Propagation pr;
  const int w = a.states;
  std::vector<double> psi(static_cast<std::size_t>(local_size * 2 * w), 0.0);
  for (std::int64_t i = 0; i < local_size; ++i)
    for (int j = 0; j < w; ++j)
      psi[static_cast<std::size_t>((i * w + j) * 2)] = vectors[static_cast<std::size_t>(i * w + j)];
  const Stopwatch tp;
  for (int s = 0; s < a.propagate; ++s) solvers::taylor_step(h, psi, w, a.dt);
  pr.seconds = ctx.comm().allreduce_value(tp.seconds(), MPI_MAX);
  auto n2 = solvers::column_norms2(ctx, psi, local_size, 2 * w);
  for (int j = 0; j < w; ++j)
    pr.norm_dev = std::max(pr.norm_dev, std::abs(n2[static_cast<std::size_t>(2 * j)] +
                                                 n2[static_cast<std::size_t>(2 * j + 1)] - 1));
  return pr;
}

// ---- report: the text (rank 0) and the JSON ----

/// Rank 0: how the solver ended and the eigenvalues beside the analytic ones.
void print_eigenvalues(const StencilArgs& a, const Solve& sv, const std::vector<double>& ref) {
  const solvers::EigenResult& res = sv.res;
  const std::string how =
      a.solver == "lobpcg"
          ? std::string("LOBPCG")
          : fmt::format("Chebyshev degree {}, spectrum bounds [{:.4g}, {:.4g}] Eh by Lanczos",
                        res.degree, res.lower, res.upper);
  std::cout << fmt::format(
      "{} after {} iterations (block {}, {}), {:.3f} s, {} vector applications of H\n",
      res.converged ? "converged" : "NOT converged (--max-iter reached)", res.iterations, res.block,
      how, sv.seconds, res.applies);
  std::cout << "state  eigenvalue (Eh)    residual   analytic (Eh)  difference\n";
  for (int i = 0; i < a.states; ++i) {
    const std::size_t I = static_cast<std::size_t>(i);
    std::cout << fmt::format("{:5d}  {:15.8f}  {:9.2e}", i, res.values[I], res.residuals[I]);
    if (I < ref.size())
      std::cout << fmt::format("  {:13.8f}  {:+.3e}", ref[I], res.values[I] - ref[I]);
    std::cout << "\n";
  }
}

/// Rank 0: the exchange (solve, overlap, bytes), the other collectives, the propagation.
void print_exchange(const StencilArgs& a, const Solve& sv, const Overlap& o,
                    const PartitionStats& ps, const Propagation& pr) {
  if (!a.apply_only)
    std::cout << fmt::format(
        "exchange during the solve: {:.3f} s exposed per rank (max; {:.1f}% of the solve), {} "
        "applies\n",
        sv.exchange.max, 100 * sv.exchange.max / std::max(sv.seconds, 1e-300), sv.times.applies);
  std::cout
      << fmt::format(
             "overlap: exchange of a batch of {} vectors {:.3f} ms in the plain order, {:.3f} ms exposed in "
             "the overlapped order: {:.0f}% hidden (median of {}; apply {:.3f} / {:.3f} ms)\n",
             o.k, 1e3 * median(o.ex_plain), 1e3 * median(o.ex_over), 100 * o.hidden, a.repeat,
             1e3 * median(o.tot_plain), 1e3 * median(o.tot_over))
      << fmt::format(
             "overlap check: at most {:.0f}% hideable (V + inner points {:.3f} ms, least over the "
             "ranks); the apply saves {:.0f}% of the plain exchange; {} tests of the exchange per "
             "apply (every {} points)\n",
             100 * o.hideable, 1e3 * median(o.work_over), 100 * o.saved, median(o.tests_over),
             o.per_test)
      << fmt::format(
             "halo bytes per rank per apply of the batch (sent + received): {}; during the solve: {}; halo "
             "messages per rank per apply: {}; neighbours per rank: {}\n",
             fmt_stat(o.apply_bytes, "{:.4g}"), fmt_stat(sv.halo_bytes, "{:.3g}"),
             fmt_stat(ps.msgs, "{:.1f}"), fmt_stat(ps.nbrs, "{:.1f}"));
  if (!a.apply_only)
    std::cout << fmt::format(
        "other collective bytes per rank in the solve (allreduce of Gram matrices, norms): {}\n",
        fmt_stat(sv.other_bytes, "{:.3g}"));
  if (a.propagate > 0)
    std::cout << fmt::format(
        "propagation: {} steps of dt = {} (4th-order Taylor), {:.3f} s; max |norm - 1| = {:.2e}\n",
        a.propagate, a.dt, pr.seconds, pr.norm_dev);
  std::cout << std::flush;
}

/// The --json fields of the mesh, the partition and the solve.
nlohmann::json solve_json(const Context& ctx, const StencilArgs& a, const Setup& s,
                          const LocalMesh& mesh, const PartitionStats& ps, const Solve& sv,
                          const std::vector<double>& ref) {
  nlohmann::json j = run_header(ctx);
  j["command"] = "stencil";
  j["mesh"] = mesh.describe;
  j["points"] = mesh.points;
  j["spacing"] = mesh.spacing;
  j["order"] = a.order;
  j["potential"] = stencil::to_string(s.pot);
  j["overlap"] = a.overlap;
  j["partitioner"] = stencil::to_string(s.part);
  j["partition"] = {{"points_per_rank", json_stat(ps.points)},
                    {"neighbors_per_rank", json_stat(ps.nbrs)},
                    {"points_sent_per_rank", json_stat(ps.sent)},
                    {"edge_cut", ps.edge_cut}};
  j["solver"] = a.solver;
  j["converged"] = sv.res.converged;
  j["iterations"] = sv.res.iterations;
  j["block"] = sv.res.block;
  j["degree"] = sv.res.degree;
  j["eigenvalues"] = sv.res.values;
  j["residuals"] = sv.res.residuals;
  j["analytic"] = ref;
  j["steps"] = sv.steps;
  j["solve_seconds"] = sv.seconds;
  j["apply_only"] = a.apply_only;
  return j;
}

/// The --json fields of the exchange (solve and overlap measurement) and the propagation.
void add_exchange_json(nlohmann::json& j, const StencilArgs& a, const Setup& s, const Solve& sv,
                       const Overlap& o, const PartitionStats& ps, const Propagation& pr) {
  j["test_every"] = o.per_test;
  j["exchange"] = {{"strategy", comm::to_string(s.strategy)},
                   {"solve_exposed_seconds_max", sv.exchange.max},
                   {"batch", o.k},
                   {"plain_seconds", o.ex_plain},
                   {"overlapped_exposed_seconds", o.ex_over},
                   {"plain_pack_seconds", o.pack_plain},
                   {"overlapped_pack_seconds", o.pack_over},
                   {"plain_wait_seconds", o.wait_plain},
                   {"overlapped_test_wait_seconds", o.wait_over},
                   {"apply_plain_seconds", o.tot_plain},
                   {"apply_overlapped_seconds", o.tot_over},
                   {"hidden_fraction", o.hidden},
                   {"hideable_fraction", o.hideable},
                   {"saved_fraction", o.saved},
                   {"overlapped_work_seconds", o.work_over},
                   {"tests_per_apply", o.tests_over},
                   {"halo_bytes_per_rank_solve", json_stat(sv.halo_bytes)},
                   {"halo_bytes_per_rank_per_apply", json_stat(o.apply_bytes)},
                   {"messages_per_rank", json_stat(ps.msgs)},
                   {"neighbors_per_rank", json_stat(ps.nbrs)}};
  if (a.propagate > 0)
    j["propagation"] = {{"steps", a.propagate},
                        {"dt", a.dt},
                        {"seconds", pr.seconds},
                        {"max_norm_deviation", pr.norm_dev}};
}

/// Collective: check the options -> the mesh, its partition and H -> the eigensolver, the
/// hidden-exchange measurement, the propagation -> the report and --json.
int run_stencil(const StencilArgs& a) {
  Context ctx(MPI_COMM_WORLD, context_options_from_environment());
  const bool root = ctx.rank() == 0;
  const Setup s = check_mesh_options(a);
  check_solver_options(a, s.strategy);
  check_writable(ctx, "--json", a.json);
  TraceRun trace(ctx, a.trace);

  const MeshInput in = read_atoms(ctx, a, s);
  LocalMesh mesh = make_local_mesh(
      ctx, [&] { return make_mesh(a, s, in); }, s.part, a.order,
      [&](const stencil::Mesh& m, const stencil::HaloPlan& p) {
        return stencil::potential_values(m, p, s.pot, a.omega, in.atoms, a.softening);
      });
  const stencil::HaloPlan& plan = mesh.plan;
  const stencil::HamiltonianOptions hopt{s.strategy, a.overlap == "on", a.test_every};
  stencil::Hamiltonian h(ctx, plan, std::move(mesh.v), mesh.spacing, hopt);
  const PartitionStats ps = partition_stats(ctx, plan);
  if (root) print_partition(a, s, mesh, in.source, plan, ctx.size(), ps);

  const Solve sv = solve(ctx, a, h, mesh);
  const Overlap o =
      measure_overlap(ctx, a, h, plan.local_size(), a.batch > 0 ? a.batch : sv.res.block);
  const Propagation pr =
      a.propagate > 0 ? propagate(ctx, a, h, plan.local_size(), sv.res.vectors) : Propagation{};

  const auto ref = analytic(s.pot, a.omega, s.have_box ? a.box : 0, a.states);
  if (root && !a.apply_only) print_eigenvalues(a, sv, ref);
  if (root) print_exchange(a, sv, o, ps, pr);
  if (!a.json.empty()) {
    nlohmann::json j = solve_json(ctx, a, s, mesh, ps, sv, ref);
    add_exchange_json(j, a, s, sv, o, ps, pr);
    write_json(ctx, a.json, j);
  }
  return trace.finish((a.apply_only || sv.res.converged) ? 0 : 1);
}

/// --states, --solver, --tol, --max-iter, --degree.
void add_solver_options(CLI::App* s, StencilArgs& a) {
  s->add_option("--states", a.states, "Eigenstates wanted")->capture_default_str();
  s->add_option("--solver", a.solver,
                "chfsi (Chebyshev-filtered subspace iteration) | lobpcg (for comparison)")
      ->capture_default_str();
  s->add_option("--tol", a.tol, "Residual norm per state")->capture_default_str();
  s->add_option("--max-iter", a.max_iter, "Solver iteration cap")->capture_default_str();
  s->add_option("--degree", a.degree,
                "Chebyshev filter degree (0: from h, clamp(ceil(6/h), 8, 40))")
      ->capture_default_str();
}

}  // namespace

std::function<int()> add_stencil(CLI::App& app) {
  auto a = std::make_shared<StencilArgs>();
  CLI::App* s = app.add_subcommand(
      "stencil",
      "Lowest eigenstates of H = -1/2 Laplacian + V on a real-space mesh partitioned over the ranks, with the "
      "halo exchange as a sparse collective overlapped with the stencil (seed 002, Octopus). Collective. "
      "With no options: a harmonic oscillator on an irregular mesh (spheres around 4 built-in pseudo-atoms).");
  a->app = s;
  s->add_option("--xyz", a->xyz, "Mesh: spheres of --radius around the atoms of this .xyz file");
  s->add_option("--xyz-units", a->xyz_units, "Units of the .xyz coordinates: angstrom | bohr")
      ->capture_default_str();
  s->add_option("--radius", a->radius,
                "Sphere radius in bohr (with --xyz; default 4.5 for the built-in atoms)");
  s->add_option("--box", a->box,
                "Mesh: the cube [-L/2, L/2]^3 (bohr), Dirichlet walls; L/h must be an integer");
  s->add_option("--spacing", a->spacing, "Grid spacing h in bohr")->capture_default_str();
  s->add_option("--order", a->order, "Finite-difference order of the Laplacian: 2, 4, 6, 8, 12")
      ->capture_default_str();
  s->add_option(
      "--potential", a->potential,
      "harmonic (1/2 omega^2 r^2) | box (0) | softcoulomb (-sum 1/sqrt(|r-R|^2 + a^2)); default: softcoulomb "
      "with --xyz, box with --box, else harmonic");
  s->add_option("--omega", a->omega, "Oscillator frequency (Eh)")->capture_default_str();
  s->add_option("--softening", a->softening, "Soft-Coulomb softening a (bohr)")
      ->capture_default_str();
  add_solver_options(s, *a);
  s->add_option("--exchange", a->exchange,
                "Halo exchange: alltoallv | ialltoallv | neighbor | persistent | p2p")
      ->capture_default_str();
  s->add_option("--overlap", a->overlap,
                "Overlap the exchange with V and the inner points: on | off")
      ->capture_default_str();
  s->add_option("--partitioner", a->partitioner,
                "metis | geometric (recursive coordinate bisection)")
      ->capture_default_str();
  s->add_option("--propagate", a->propagate,
                "Afterwards, propagate the states this many 4th-order Taylor steps")
      ->capture_default_str();
  s->add_option("--dt", a->dt, "Time step of --propagate (atomic units)")->capture_default_str();
  s->add_option("--repeat", a->repeat,
                "Timed applies per order for the hidden-exchange measurement")
      ->capture_default_str();
  s->add_option("--batch", a->batch,
                "Vectors per H apply in the hidden-exchange measurement (0: the solver's block)")
      ->capture_default_str();
  s->add_option("--test-every", a->test_every,
                "Overlapped order: inner points between two tests of the exchange (0: about 65536 "
                "multiply-adds of stencil work per test, from the batch and the order)")
      ->capture_default_str();
  s->add_flag("--apply-only", a->apply_only,
              "Skip the eigensolver: only the partition and the timed H applies (benchmarks)");
  s->add_option("--json", a->json, "Write the results as JSON");
  add_trace_option(s, a->trace);
  s->footer(
      "Exit status 0 when the solver converged, 1 when --max-iter was reached first, 2 on bad input "
      "(printed once as 'tessel: error: ...'; no --json file is left behind). docs/stencil.md has the details.");
  return [a]() { return run_stencil(*a); };
}

}  // namespace tessel::app

// `tessel density`: the density matrix of (H, S) and an electron count by the linear-scaling
// solvers of solvers/density.hpp (sign with a mu search, TRS4, canonical, TRS2, McWeeny) or
// by diagonalization (density_diag.hpp; --method auto chooses) on
// block-sparse matrices (or dense with --dense), one progress line per iteration and a
// summary: band energy, mu, tr(PS), idempotency, sign evaluations, multiplications, time and
// bytes per rank. run_density: check the options -> the input and its tiles -> the solve (dense
// or block-sparse; --explain stops before it) -> sums over the ranks -> the summary, --json.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "input_spill.hpp"
#include "memory_watch.hpp"
#include "report.hpp"
#include "tessel/comm/ledger_stats.hpp"
#include "tessel/io/npy.hpp"
#include "tessel/solvers/density.hpp"
#include "tessel/solvers/density_diag.hpp"
#include "tessel/sparse/convert.hpp"
#include "tessel/sparse/generate.hpp"
#include "tessel/io/sparse.hpp"
#include "tessel/sparse/tiling.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::app {
namespace {

using sparse::BlockSparseMatrix;

/// --tile auto: rows per tile (docs/density.md, "Tiles": measured on the CP2K water systems).
constexpr int kAutoTile = 32;

struct DensityArgs {
  std::string ks, overlap, blocks, generate, method = "auto", algorithm = "cannon", layers = "auto",
                                             tile = "auto", tiling = "cluster", out, json, trace,
                                             spill, diag_solver = "auto";
  std::optional<std::int64_t> electrons;
  std::optional<double> mu;
  int sign_order = 2, max_iter = 200;
  std::string row_panels = "auto";
  double eps = 1e-6, tol = 1e-12;
  double memory_mib = 0;  // 0: no budget
  std::optional<double> eps_inverse, eps_transform,
      eps_final;  // unset: the defaults of DensityOptions
  std::optional<int> final_steps;
  bool dense = false, nonsymmetric = false, energy_weighted = false, explain = false;
};

struct Input {
  BlockSparseMatrix<double> H, S;
  std::int64_t electrons = 0;
  std::string description;
};

// H, S and the electron count from the files (CP2K CSR + block sizes) or the generator.
Input read_input(Context& ctx, const DensityArgs& a) {
  Input in;
  if (!a.generate.empty()) {
    const auto colon = a.generate.find(':');
    long long n = 0;
    bool ok = colon != std::string::npos && a.generate.substr(0, colon) == "water";
    if (ok) {
      try {
        std::size_t used = 0;
        n = std::stoll(a.generate.substr(colon + 1), &used);
        ok = used == a.generate.size() - colon - 1 && n >= 1;
      } catch (const std::exception&) { ok = false; }
    }
    TESSEL_CHECK(ok, InputError, "--generate '", a.generate,
                 "': expected water:N (N >= 1 molecules)");
    auto w = sparse::generate_water(ctx, static_cast<int>(n));
    in.H = std::move(w.H);
    in.S = std::move(w.S);
    in.electrons = a.electrons.value_or(w.nelectrons);
    in.description = fmt::format("generated water box: {} molecules ({:.1f} A), {} basis functions",
                                 n, w.box_angstrom, in.H.rows());
    return in;
  }
  TESSEL_CHECK(!a.ks.empty() && !a.overlap.empty() && !a.blocks.empty(), InputError,
               "--ks, --overlap and --blocks are all needed (or --generate water:N)");
  TESSEL_CHECK(a.electrons.has_value(), InputError, "--electrons is needed with --ks/--overlap");
  const sparse::BlockSizes bs = io::read_block_sizes(a.blocks);
  auto g = sparse::Distribution::default_grid(ctx.size());
  auto dist = sparse::Distribution::random(bs, bs, g.first, g.second);
  io::ReadOptions ro;
  ro.name = "--ks " + a.ks;
  in.H = io::read_cp2k_csr(ctx, a.ks, dist, ro);
  ro.name = "--overlap " + a.overlap;
  in.S = io::read_cp2k_csr(ctx, a.overlap, dist, ro);
  in.electrons = *a.electrons;
  in.description = fmt::format("{} and {} ({} basis functions, {} atoms)", a.ks, a.overlap,
                               in.H.rows(), bs.count());
  return in;
}

// The accounted memory per rank by stage (max over ranks), for the summary.
std::string memory_table(const std::vector<StagePeak>& stages, double peak,
                         const std::string& peak_stage, double largest) {
  std::string t = fmt::format(
      "accounted memory per rank (max over ranks): peak {} in stage '{}', largest matrix {} "
      "(peak / largest {:.1f})\n",
      human_bytes(peak), peak_stage, human_bytes(largest), largest > 0 ? peak / largest : 0.0);
  t += fmt::format("{:>16} {:>12} {:>12} {:>12} {:>12} {:>8}  {}\n", "stage", "peak", "matrices",
                   "buffers", "windows", "/ alive", "matrices alive at the peak");
  for (const auto& s : stages) {
    std::string alive;
    for (double b : s.alive) alive += (alive.empty() ? "" : " ") + human_bytes(b);
    const double ratio = s.alive.empty() ? 0.0 : s.total / s.alive.front();
    t += fmt::format("{:>16} {:>12} {:>12} {:>12} {:>12} {:>8.1f}  {}\n", s.stage,
                     human_bytes(s.total), human_bytes(s.matrices), human_bytes(s.buffers),
                     human_bytes(s.windows), ratio, alive);
  }
  return t;
}

/// --row-panels auto: 1 (every product in one pass: the fewest bytes) unless a --memory budget
/// is given and the predicted peak exceeds it; then the fewest panels (1, 2, 4, .. 16) whose
/// prediction fits (16 when none does: the start check then stops the run). Collective.
int auto_row_panels(Context& ctx, sparse::SpAlgorithm alg, std::int64_t input, double budget_mib,
                    bool spilled) {
  if (budget_mib <= 0 || alg != sparse::SpAlgorithm::Cannon) return 1;
  const double largest = ctx.comm().allreduce_value(static_cast<double>(input), MPI_MAX);
  constexpr int kMostAuto = 16;
  int r = 1;
  while (r < kMostAuto &&
         peak_per_largest_input(r, spilled) * largest > budget_mib * 1024.0 * 1024.0)
    r *= 2;
  return r;
}

template <class M>
solvers::DensityResult<M> solve(solvers::Algebra<M>& alg, const M& H, const M& S,
                                std::int64_t electrons, const solvers::DensityOptions& o) {
  return solvers::density(alg, H, S, electrons, o);
}

// ---- parse and validate (pure; the same on every rank, so the checks throw together) ----

/// Pure. An integer >= 1 (parse_named turns the throw into its message naming the option).
int positive_int(const std::string& v) {
  std::size_t used = 0;
  int x = 0;
  try {
    x = std::stoi(v, &used);
  } catch (const std::exception&) { throw InputError("bad"); }
  if (used != v.size() || x < 1) throw InputError("bad");
  return x;
}

/// The checked options of a run.
struct Setup {
  solvers::DensityOptions opt;
  sparse::SpMultiplyOptions mo;   // row_panels: set by the block-sparse solve (auto resolved)
  int row_panels = 0;             // --row-panels; 0: auto
  int tile = kAutoTile;           // rows per tile; 1: none
  bool npy = false, csr = false;  // --out's format
};

/// Pure. --algorithm, --layers, --row-panels and --eps as the block-sparse multiply's options.
void check_multiply_options(const DensityArgs& a, Setup& s) {
  sparse::SpMultiplyOptions& mo = s.mo;
  mo.algorithm = parse_named("--algorithm", a.algorithm, "cannon or rma25d",
                             [](const std::string& v) { return sparse::parse_sp_algorithm(v); });
  mo.layers = a.layers == "auto"
                  ? 0
                  : parse_named("--layers", a.layers, "auto or an integer >= 1", positive_int);
  mo.filter_eps = a.eps;
  s.row_panels = a.row_panels == "auto"
                     ? 0
                     : parse_named("--row-panels", a.row_panels, "auto or an integer 1 .. 64",
                                   [&](const std::string& v) {
                                     const int x = positive_int(v);
                                     if (x > 64) throw InputError("bad");
                                     return x;
                                   });
  TESSEL_CHECK(s.row_panels <= 1 || mo.algorithm == sparse::SpAlgorithm::Cannon, InputError,
               "--row-panels ", a.row_panels, ": expected 1 or auto with --algorithm rma25d");
}

/// Pure. The options checked before the output files: InputError naming the option.
Setup check_options(const DensityArgs& a) {
  Setup s;
  s.opt.method =
      parse_named("--method", a.method, "auto, diag, sign, trs4, canonical, trs2 or mcweeny",
                  [](const std::string& v) { return solvers::parse_density_method(v); });
  s.opt.diag_solver =
      parse_named("--diag-solver", a.diag_solver, "auto, pdsyevd, elpa1 or elpa2",
                  [](const std::string& v) { return solvers::parse_diag_solver(v); });
  TESSEL_CHECK(a.sign_order == 2 || a.sign_order == 3, InputError, "--sign-order ", a.sign_order,
               ": expected 2 or 3");
  TESSEL_CHECK(a.eps >= 0 && std::isfinite(a.eps), InputError, "--eps ", a.eps,
               ": expected >= 0 (0 = no filtering)");
  TESSEL_CHECK(a.tol > 0, InputError, "--tol ", a.tol, ": expected > 0");
  TESSEL_CHECK(!a.mu || std::isfinite(*a.mu), InputError, "--mu: expected a finite energy");
  TESSEL_CHECK(a.memory_mib >= 0 && std::isfinite(a.memory_mib), InputError, "--memory ",
               a.memory_mib, ": expected MiB per rank >= 0 (0 = no budget)");
  check_multiply_options(a, s);
  TESSEL_CHECK(a.spill.empty() || !a.dense, InputError, "--spill '", a.spill,
               "': expected no --spill with --dense (it keeps the block-sparse H and S on disk)");
  s.tile = a.tile == "auto" ? kAutoTile
           : a.tile == "none"
               ? 1
               : parse_named("--tile", a.tile, "auto, none or an integer >= 1", positive_int);
  s.npy = a.out.size() > 4 && a.out.substr(a.out.size() - 4) == ".npy";
  s.csr = a.out.size() > 4 && a.out.substr(a.out.size() - 4) == ".csr";
  TESSEL_CHECK(a.out.empty() || s.npy || s.csr, InputError, "--out '", a.out,
               "': expected a .npy or .csr file name");
  TESSEL_CHECK(!(s.csr && a.dense), InputError, "--out '", a.out, "': --dense writes .npy only");
  return s;
}

/// Pure. The solver's options (checked after the output files): InputError naming the option.
void check_solver_options(const DensityArgs& a, solvers::DensityOptions& opt) {
  opt.sign_order = a.sign_order;
  opt.nonsymmetric = a.nonsymmetric;
  opt.mu = a.mu;
  opt.tol = a.tol;
  opt.max_iter = a.max_iter;
  opt.energy_weighted = a.energy_weighted;
  for (const auto& [name, v] :
       {std::pair<const char*, std::optional<double>>{"--eps-inverse", a.eps_inverse},
        {"--eps-transform", a.eps_transform},
        {"--eps-final", a.eps_final}})
    TESSEL_CHECK(!v || (*v >= 0 && std::isfinite(*v)), InputError, name, " ", *v,
                 ": expected >= 0 (0 = no filtering)");
  TESSEL_CHECK(!a.final_steps || *a.final_steps >= 0, InputError, "--final-steps ", *a.final_steps,
               ": expected >= 0");
  opt.eps_inverse = a.eps_inverse.value_or(-1);
  opt.eps_transform = a.eps_transform.value_or(-1);
  opt.eps_final = a.eps_final.value_or(-1);
  opt.final_steps = a.final_steps.value_or(-1);
}

// ---- input: H, S and the electron count, in tiles ----

/// The input of the solve and its tiles, with the times they took.
struct Prepared {
  Input in;
  sparse::Tiling tl;
  double read_seconds = 0, tile_seconds = 0;
  int block_rows = 0;  // atomic block rows of H
  std::int64_t n = 0;  // basis functions (H's rows; kept: the sparse solve frees H)
  bool tiled() const { return !tl.is_identity(); }
};

/// Collective. The input (read or generated), then the tiles: from here on the ledger and
/// commcount count the solve (tiling included).
Prepared prepare_input(Context& ctx, const DensityArgs& a, const Setup& s) {
  Prepared p;
  const Stopwatch t_in;
  p.in = read_input(ctx, a);
  p.read_seconds = t_in.seconds();
  p.block_rows = p.in.H.distribution().row_blocks().count();
  p.n = p.in.H.rows();
  TESSEL_CHECK(a.tiling == "cluster" || a.tiling == "contiguous", InputError, "--tiling '",
               a.tiling, "': expected cluster or contiguous");
  ctx.comm().barrier();
  ctx.ledger().reset();
  comm::pcontrol(2);
  const Stopwatch t_tile;
  p.tl = a.dense || s.tile == 1 || a.tiling == "contiguous"
             ? sparse::Tiling::contiguous(p.in.H.distribution().row_blocks(), a.dense ? 1 : s.tile)
             : sparse::cluster_tiling(ctx, p.in.S, s.tile);
  p.tile_seconds = t_tile.seconds();
  return p;
}

/// Rank 0: the run's header, the tiles and the head of the progress table.
void print_header(const DensityArgs& a, const Setup& s, const Prepared& p, int ranks) {
  std::cout << fmt::format(
                   "tessel density: {}, {} electrons, method {}{}, {} ranks, {}, eps {:g}\n",
                   p.in.description, p.in.electrons, a.method,
                   s.opt.method == solvers::DensityMethod::Sign
                       ? fmt::format(" (order {})", a.sign_order)
                       : "",
                   ranks, a.dense ? "dense" : a.algorithm, a.dense ? 0.0 : a.eps)
            << (p.tiled() ? fmt::format("tiles: {} (--tile {}, --tiling {}, {:.3f} s)\n",
                                        p.tl.describe(), a.tile, a.tiling, p.tile_seconds)
                          : std::string())
            << (a.explain
                    ? std::string()
                    : fmt::format("{:>14} {:>5} {:>12} {:>14} {:>12} {:>10} {:>9}\n", "stage",
                                  "iter", "residual", "occupation", "mu", "blocks", "seconds"))
            << std::flush;
}

/// The solver's on_step: every rank records the step in `watch` (with --memory it may stop
/// the run, collectively); rank 0 prints its progress line.
solvers::ProgressFn progress_lines(MemoryWatch& watch, bool root) {
  return [&watch, root](const solvers::IterationInfo& s) {
    watch.step(s);
    if (!root) return;
    std::cout << fmt::format(
                     "{:>14} {:>5} {:>12.3e} {:>14} {:>12} {:>10} {:>9.3f}\n", s.stage, s.iteration,
                     s.residual, s.occupation != 0 ? fmt::format("{:.8f}", s.occupation) : "-",
                     s.stage == "sign" || s.stage == "mu" ? fmt::format("{:.6f}", s.mu) : "-",
                     s.blocks > 0 ? std::to_string(s.blocks) : "-", s.seconds)
              << std::flush;
  };
}

// ---- run: the solve, dense or block-sparse ----

/// What the report shows of a solve (the same on every rank).
template <class M>
struct Outcome {
  solvers::DensityResult<M> r;  // without its matrices (freed after the output)
  double flops = 0;             // of the products, summed over the ranks
  double seconds = 0, mem_predicted = 0;
  std::int64_t p_blocks = 0, tiles_stored = -1;
  double p_occupation = 1.0;
};

/// Collective (the flops are summed over the ranks). Ends the counted solve: its time (`t0`,
/// plus `extra_seconds`) and `alg`'s flops into `o`.
template <class M, class A>
void end_solve(const Context& ctx, A& alg, const Stopwatch& t0, double extra_seconds,
               Outcome<M>& o) {
  o.seconds = t0.seconds() + extra_seconds;
  comm::pcontrol(0);
  o.flops = ctx.comm().allreduce_value(alg.stats().flops, MPI_SUM);
}

/// Not collective. The result `r` into `o` without its matrices (P and W are freed).
template <class M>
void keep_result(solvers::DensityResult<M>&& r, Outcome<M>& o) {
  r.P = M{};
  r.W = M{};
  o.r = std::move(r);
}

/// Collective. --dense: H and S to dense block-cyclic matrices, the solve, --out (.npy).
/// nullopt: --explain stopped before the solve.
std::optional<Outcome<dense::DistMatrix<double>>> solve_dense(Context& ctx, const DensityArgs& a,
                                                              const Setup& s, const Input& in,
                                                              const Stopwatch& t0) {
  auto g = most_square_grid(ctx.size());
  auto lay = layout::Layout::block_cyclic(in.H.rows(), in.H.cols(), 64, 64, g.first, g.second, 0, 0,
                                          ctx.size());
  auto H = sparse::to_dense(ctx, in.H, lay);
  auto S = sparse::to_dense(ctx, in.S, lay);
  if (a.explain) {
    if (ctx.rank() == 0)
      std::cout << "--explain: the dense path has no memory model (every matrix n^2 / ranks "
                   "values); stopped before the solve\n";
    return std::nullopt;
  }
  solvers::DenseAlgebra alg(ctx);
  auto r = solve(alg, H, S, in.electrons, s.opt);
  Outcome<dense::DistMatrix<double>> o;
  end_solve(ctx, alg, t0, 0.0, o);
  if (s.npy) io::write_npy(ctx, a.out, r.P);
  keep_result(std::move(r), o);
  return o;
}

/// Rank 0: the predicted peak memory per rank of the block-sparse solve.
void print_memory_prediction(const DensityArgs& a, const Setup& s, double predicted, bool spilled) {
  std::cout << fmt::format(
      "memory per rank: predicted peak {} ({:.1f} x the largest input matrix as the solver "
      "holds it, {} row panel(s){}{}; docs/density.md){}\n",
      human_bytes(predicted), peak_per_largest_input(s.mo.row_panels, spilled), s.mo.row_panels,
      s.row_panels > 0 ? "" : ", auto", spilled ? ", H and S spilled" : "",
      a.memory_mib > 0 ? fmt::format(", budget {:g} MiB", a.memory_mib) : std::string());
}

/// Collective. The block-sparse solve: H and S into tiles (sparse/tiling.hpp: the moves into
/// and out of tiles are part of the timed solve), the row panels (auto: from --memory),
/// --spill, the start's memory check; the solve, P back from tiles, --out. Sets
/// s.mo.row_panels. nullopt: --explain stopped before the solve.
std::optional<Outcome<BlockSparseMatrix<double>>> solve_sparse(Context& ctx, const DensityArgs& a,
                                                               Setup& s, Prepared& p,
                                                               MemoryWatch& watch,
                                                               const Stopwatch& t0) {
  Input& in = p.in;
  const sparse::Distribution fine = in.H.distribution();
  if (p.tiled()) {
    auto td = sparse::Distribution::random(p.tl.tiles(), p.tl.tiles(), fine.pr(), fine.pc());
    in.H = sparse::to_tiles(ctx, in.H, p.tl, p.tl, td, "H");
    in.S = sparse::to_tiles(ctx, in.S, p.tl, p.tl, td, "S");
  }
  const std::int64_t input = std::max(in.H.local_bytes(), in.S.local_bytes());
  const bool spilled = !a.spill.empty();
  s.mo.row_panels = s.row_panels > 0
                        ? s.row_panels
                        : auto_row_panels(ctx, s.mo.algorithm, input, a.memory_mib, spilled);
  std::optional<InputSpill> spill;
  if (spilled) {
    spill.emplace(ctx, a.spill, in.H, in.S);
    s.opt.inputs_needed = [&spill](bool h, bool need_s) { spill->need(h, need_s); };
    s.opt.park_z = [&spill](sparse::BlockSparseMatrix<double>& z, bool needed) {
      spill->park(z, needed);
    };
  }
  Outcome<BlockSparseMatrix<double>> o;
  o.mem_predicted = watch.check_start("the solve", input, s.mo.row_panels, spilled);
  if (ctx.rank() == 0) print_memory_prediction(a, s, o.mem_predicted, spilled);
  if (a.explain) {
    if (ctx.rank() == 0) std::cout << "--explain: stopped before the solve\n";
    return std::nullopt;
  }
  solvers::SparseAlgebra alg(ctx, s.mo);
  auto r = solve(alg, in.H, in.S, in.electrons, s.opt);
  in.H = sparse::BlockSparseMatrix<double>();  // not needed after the solve: freed before P
  in.S = sparse::BlockSparseMatrix<double>();  // leaves its tiles (the end's peak)
  if (p.tiled()) {
    o.tiles_stored = sparse::nblocks(ctx, r.P);
    r.P = sparse::from_tiles(ctx, std::move(r.P), p.tl, p.tl, fine, 0.0, "P");
  }
  end_solve(ctx, alg, t0, p.tile_seconds, o);
  o.p_blocks = sparse::nblocks(ctx, r.P);
  o.p_occupation = sparse::occupation(ctx, r.P);
  if (s.npy) io::write_npy_blocks(ctx, r.P, a.out);
  if (s.csr) io::write_cp2k_csr(ctx, r.P, a.out);
  keep_result(std::move(r), o);
  return o;
}

// ---- report: sums over the ranks, the summary and the JSON ----

/// Memory and traffic, max (and mean) over the ranks.
struct Totals {
  std::vector<StagePeak> mem_stages;
  double largest = 0, mem_peak = 0;
  std::string mem_peak_stage;
  double rss_max = 0, rss_mean = 0;            // ru_maxrss
  std::vector<comm::PhaseStats> stats, table;  // the whole run; by phase group
  double bytes_max = 0;
};

/// Collective. Closes the memory watch with the stage "end" (from the last step to the end: P
/// back from tiles, the output), then the sums over the ranks.
Totals sum_over_ranks(const Context& ctx, MemoryWatch& watch) {
  {
    solvers::IterationInfo end;
    end.stage = "end";
    watch.step(end);
  }
  Totals n;
  n.mem_stages = watch.stages();
  n.largest = watch.largest_matrix();
  for (const auto& st : n.mem_stages)
    if (st.total > n.mem_peak) {
      n.mem_peak = st.total;
      n.mem_peak_stage = st.stage;
    }
  // Peak resident memory per rank (getrusage ru_maxrss, kB on Linux), max and mean over ranks.
  const double rss = maxrss_bytes();
  n.rss_max = ctx.comm().allreduce_value(rss, MPI_MAX);
  n.rss_mean = ctx.comm().allreduce_value(rss, MPI_SUM) / ctx.size();
  n.stats = comm::ledger_stats(ctx.comm(), ctx.ledger(), {""});
  n.bytes_max = n.stats.empty() ? 0
                                : n.stats[0].recv_bytes.max + n.stats[0].coll_bytes.max +
                                      n.stats[0].rma_bytes.max;
  n.table = comm::ledger_stats(ctx.comm(), ctx.ledger(), {"spgemm", "gemm", "sparse", ""});
  return n;
}

/// Rank 0: the summary after the solve.
template <class M>
void print_summary(const DensityArgs& a, const Setup& s, const Prepared& p, const Outcome<M>& o,
                   const Totals& n) {
  const solvers::DensityResult<M>& r = o.r;
  const std::string method_used = solvers::to_string(r.method);
  std::cout << (r.method_reason.empty() ? std::string()
                                        : fmt::format("method auto: chose {} because {}\n",
                                                      method_used, r.method_reason))
            << fmt::format(
                   "band energy 2 tr(PH): {:.10f} Eh (before the final McWeeny steps: {:.10f})\n",
                   r.band_energy, r.band_energy_before_final)
            << fmt::format(
                   "filter eps by stage: S^-1/2 {:g}, basis changes {:g}, iteration {:g}, "
                   "{} final McWeeny steps {:g}\n",
                   r.eps_inverse, r.eps_transform, r.eps_iteration, r.final_steps, r.eps_final)
            << fmt::format("mu: {:.6f} Eh{}\n", r.mu, s.opt.mu ? " (given)" : "")
            << fmt::format("tr(PS): {:.10f} (electrons 2 tr(PS) = {:.10f}, expected {})\n",
                           r.trace_ps, 2 * r.trace_ps, p.in.electrons)
            << fmt::format("idempotency ||PSP - P||_F / ||P||_F: {:.3e}\n", r.idempotency)
            << fmt::format(
                   "iterations: {} ({}{}), S^-1/2: {} Newton-Schulz steps; sign evaluations: {}\n",
                   r.iterations, method_used,
                   r.eigensolver.empty() ? "" : ", eigensolver " + r.eigensolver,
                   r.inverse_iterations, r.sign_evaluations)
            << fmt::format("multiplications: {} ({:.3g} GFLOP), residual {:.3e}\n",
                           r.multiplications, o.flops / 1e9, r.residual)
            << (a.dense ? std::string()
                        : fmt::format("P: {} blocks stored ({:.2f}% of all){}\n", o.p_blocks,
                                      100 * o.p_occupation,
                                      o.tiles_stored >= 0
                                          ? fmt::format(", {} tiles in the solver", o.tiles_stored)
                                          : std::string()))
            << fmt::format("time: {:.3f} s (input {:.3f} s{})\n", o.seconds, p.read_seconds,
                           p.tiled() ? fmt::format(", tiling {:.3f} s included", p.tile_seconds)
                                     : std::string())
            << fmt::format("bytes received per rank (max): {}\n", human_bytes(n.bytes_max))
            << fmt::format("peak memory per rank (ru_maxrss): max {}, mean {}\n",
                           human_bytes(n.rss_max), human_bytes(n.rss_mean))
            << (a.dense ? std::string()
                        : memory_table(n.mem_stages, n.mem_peak, n.mem_peak_stage, n.largest))
            << ledger_table(n.table, true) << std::flush;
}

/// The --json fields that describe the run: its options, input and tiles.
nlohmann::json run_json(const Context& ctx, const DensityArgs& a, const Setup& s,
                        const Prepared& p) {
  nlohmann::json j = run_header(ctx);
  j["command"] = "density";
  j["input"] = p.in.description;
  j["method"] = a.method;
  j["row_panels"] = a.dense ? 0 : s.mo.row_panels;
  j["sign_order"] = a.sign_order;
  j["algorithm"] = a.dense ? "dense" : a.algorithm;
  j["eps"] = a.eps;
  j["electrons"] = p.in.electrons;
  j["n"] = p.n;
  j["block_rows"] = p.block_rows;
  j["tile"] = s.tile;
  j["tiling"] = p.tiled() ? a.tiling : "none";
  j["tiles"] = p.tl.tiles().count();
  j["tiling_seconds"] = p.tile_seconds;
  return j;
}

/// The --json fields of the results: the solve, memory and traffic.
template <class M>
void add_results_json(nlohmann::json& j, bool dense, const Outcome<M>& o, const Totals& n) {
  const solvers::DensityResult<M>& r = o.r;
  j.update({{"method_used", solvers::to_string(r.method)},
            {"method_reason", r.method_reason},
            {"eigensolver", r.eigensolver},
            {"band_energy", r.band_energy},
            {"band_energy_before_final", r.band_energy_before_final},
            {"eps_inverse", r.eps_inverse},
            {"eps_transform", r.eps_transform},
            {"eps_final", r.eps_final},
            {"final_steps", r.final_steps},
            {"bounds", {r.bounds.lo, r.bounds.hi}},
            {"inverse_scale", r.inverse_scale},
            {"mu", r.mu},
            {"trace_ps", r.trace_ps},
            {"idempotency", r.idempotency},
            {"iterations", r.iterations},
            {"inverse_sqrt_iterations", r.inverse_iterations},
            {"sign_evaluations", r.sign_evaluations},
            {"multiplications", r.multiplications}});
  j["flops"] = o.flops;
  j["seconds"] = o.seconds;
  j["p_blocks"] = o.p_blocks;
  j["tiles_stored"] = o.tiles_stored;
  j["bytes_per_rank_max"] = n.bytes_max;
  j["maxrss_bytes_max"] = n.rss_max;
  j["maxrss_bytes_mean"] = n.rss_mean;
  j["ledger"] = ledger_json(n.stats);
  if (dense) return;
  j["memory_predicted_bytes"] = o.mem_predicted;
  j["memory_peak_bytes"] = n.mem_peak;
  j["memory_peak_stage"] = n.mem_peak_stage;
  j["largest_matrix_bytes"] = n.largest;
  for (const auto& st : n.mem_stages)
    j["memory_stages"].push_back({{"stage", st.stage},
                                  {"peak_bytes", st.total},
                                  {"matrices", st.matrices},
                                  {"buffers", st.buffers},
                                  {"windows", st.windows},
                                  {"matrices_alive", st.alive}});
}

/// Collective. After the solve (`o`; nullopt: --explain stopped before it): sums over the
/// ranks -> the summary, --json. Returns the exit status.
template <class M>
int report(const Context& ctx, const DensityArgs& a, const Setup& s, const Prepared& p,
           MemoryWatch& watch, TraceRun& trace, const std::optional<Outcome<M>>& o) {
  if (!o) return trace.finish(0);  // --explain
  const Totals n = sum_over_ranks(ctx, watch);
  if (ctx.rank() == 0) print_summary(a, s, p, *o, n);
  if (!a.json.empty()) {
    nlohmann::json j = run_json(ctx, a, s, p);
    add_results_json(j, a.dense, *o, n);
    write_json(ctx, a.json, j);
  }
  return trace.finish(0);
}

/// Collective: check the options -> the input and its tiles -> the solve (dense or
/// block-sparse; --explain stops before it) -> sums over the ranks -> the summary, --json.
int run_density(const DensityArgs& a) {
  Context ctx(MPI_COMM_WORLD, context_options_from_environment());
  const bool root = ctx.rank() == 0;
  Setup s = check_options(a);
  check_writable(ctx, "--out", a.out);
  check_writable(ctx, "--json", a.json);
  TraceRun trace(ctx, a.trace);
  check_solver_options(a, s.opt);

  Prepared p = prepare_input(ctx, a, s);
  if (root) print_header(a, s, p, ctx.size());
  MemoryWatch watch(ctx, a.memory_mib * 1024.0 * 1024.0);
  s.opt.on_step = progress_lines(watch, root);

  const Stopwatch t0;
  if (a.dense) return report(ctx, a, s, p, watch, trace, solve_dense(ctx, a, s, p.in, t0));
  return report(ctx, a, s, p, watch, trace, solve_sparse(ctx, a, s, p, watch, t0));
}
}  // namespace

std::function<int()> add_density(CLI::App& app) {
  auto a = std::make_shared<DensityArgs>();
  auto* s = app.add_subcommand(
      "density",
      "Density matrix P of (H, S) and an electron count by linear-scaling solvers "
      "(sign function with a mu search, TRS4, canonical, TRS2, McWeeny) on block-sparse "
      "matrices, or by diagonalization (ScaLAPACK) where that is faster (--method auto, "
      "the default); collective. docs/density.md.");
  s->add_option("--ks", a->ks, "Kohn-Sham matrix H as CP2K CSR text (plain or gzip)");
  s->add_option("--overlap", a->overlap, "Overlap S as CP2K CSR text");
  s->add_option("--blocks", a->blocks, "Block sizes file (blocksizes.txt)");
  s->add_option("--generate", a->generate,
                "water:N — the generated water box of N molecules instead of files");
  s->add_option("--electrons", a->electrons,
                "Electron count N (even; default with --generate: 8 per molecule)");
  s->add_option("--method", a->method,
                "auto | diag | sign | trs4 | canonical | trs2 | mcweeny. auto: diag (ScaLAPACK "
                "pdsyevd or ELPA, where built) when the cost model (n, the stored fraction of S, "
                "ranks) says it is faster than the sign iteration, else sign; it prints what it "
                "chose and why (docs/density.md, \"Choosing the method\")")
      ->capture_default_str();
  s->add_option("--diag-solver", a->diag_solver,
                "auto | pdsyevd | elpa1 | elpa2: the eigensolver of diag (auto: pdsyevd, measured "
                "at least as fast as ELPA here; elpa1/elpa2 where the build has ELPA: Open MPI "
                "with libelpa-dev; docs/density.md)")
      ->capture_default_str();
  s->add_option("--sign-order", a->sign_order, "Newton-Schulz order of the sign iteration: 2 or 3")
      ->capture_default_str();
  s->add_option("--eps", a->eps, "Filter threshold of every product (0 = no filtering)")
      ->capture_default_str();
  s->add_option("--eps-inverse", a->eps_inverse,
                "Filter threshold of S^-1/2 (default: from --eps, docs/density.md)");
  s->add_option("--eps-transform", a->eps_transform,
                "Filter threshold of Ht = Z H Z and P = Z Pt Z (default: from --eps)");
  s->add_option("--eps-final", a->eps_final,
                "Filter threshold of the final McWeeny steps (default: from --eps)");
  s->add_option("--final-steps", a->final_steps,
                "McWeeny steps after the iteration (default: docs/density.md)");
  s->add_option("--mu", a->mu, "Chemical potential (Eh): no search (sign), required for mcweeny");
  s->add_option("--tol", a->tol, "Stop: sign relative residual / ||X - X^2||_F")
      ->capture_default_str();
  s->add_option("--max-iter", a->max_iter, "Iteration cap per sign evaluation / purification")
      ->capture_default_str();
  s->add_option("--algorithm", a->algorithm, "Block-sparse multiply: cannon | rma25d")
      ->capture_default_str();
  s->add_option(
       "--layers", a->layers,
       "rma25d layers L (auto: the valid L <= 4 with the smallest eq. 7 volume, C from the output matrix's current pattern or an estimate; docs/sparse.md)")
      ->capture_default_str();
  s->add_option("--tile", a->tile,
                "Solve on tiles of consecutive atomic blocks of about this many rows: auto (" +
                    std::to_string(kAutoTile) +
                    "), none (the atomic blocks) or an integer; docs/density.md")
      ->capture_default_str();
  s->add_option("--tiling", a->tiling,
                "How atomic blocks are grouped into tiles: cluster (METIS on the overlap's "
                "couplings: neighbouring atoms share a tile whatever their numbering) or "
                "contiguous (consecutive blocks)")
      ->capture_default_str();
  s->add_flag("--dense", a->dense, "Run the same solver on dense matrices (dense::multiply)");
  s->add_flag("--nonsymmetric", a->nonsymmetric,
              "Sign: P = (I - sign(S^-1 H - mu I)) S^-1 / 2 instead of the S^-1/2 form");
  s->add_flag("--energy-weighted", a->energy_weighted, "Also compute W = P H P");
  s->add_option("--out", a->out, "Write P (.npy dense, or .csr CP2K text)");
  s->add_option("--json", a->json, "Write the results as JSON");
  s->add_option("--memory", a->memory_mib,
                "Budget per rank in MiB (0 = none): the run stops with an error on every rank, "
                "at the start or at the first step, when tessel's accounted peak (matrices, "
                "multiply buffers, windows), the process's ru_maxrss or the next step's "
                "extrapolated peak exceeds it")
      ->capture_default_str();
  s->add_option("--row-panels", a->row_panels,
                "Cannon: compute every product in N panels of block rows, each filtered and "
                "merged before the next: the multiply's largest buffers (the product before the "
                "filter, A's images) shrink to about 1/N, B moves N times (docs/sparse.md). "
                "auto: 1, or with --memory the fewest of 1, 2, 4 .. 16 whose predicted peak fits")
      ->capture_default_str();
  s->add_option("--spill", a->spill,
                "Directory for each rank's part of H and S while the solver does not read them, "
                "and of Z = S^-1/2 while a purification iterates (each written once, read back "
                "when needed, removed at the end): two or three matrices fewer in memory during "
                "the iteration, one in the final McWeeny products (docs/density.md)");
  s->add_flag("--explain", a->explain,
              "Read (or generate) and tile the input, print the predicted peak memory per rank, "
              "and stop before the solve (no output files)");
  add_trace_option(s, a->trace);
  return [a] { return run_density(*a); };
}

}  // namespace tessel::app

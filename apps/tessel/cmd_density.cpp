// `tessel density`: the density matrix of (H, S) and an electron count by the linear-scaling
// solvers of solvers/density.hpp (sign with a mu search, TRS4, canonical, TRS2, McWeeny) or
// by diagonalization (density_diag.hpp; --method auto chooses) on
// block-sparse matrices (or dense with --dense), one progress line per iteration and a
// summary: band energy, mu, tr(PS), idempotency, sign evaluations, multiplications, time and
// bytes per rank.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

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

int run_density(const DensityArgs& a) {
  Context ctx(MPI_COMM_WORLD, context_options_from_environment());
  const bool root = ctx.rank() == 0;
  solvers::DensityOptions opt;
  opt.method =
      parse_named("--method", a.method, "auto, diag, sign, trs4, canonical, trs2 or mcweeny",
                  [](const std::string& v) { return solvers::parse_density_method(v); });
  opt.diag_solver = parse_named("--diag-solver", a.diag_solver, "auto, pdsyevd, elpa1 or elpa2",
                                [](const std::string& v) { return solvers::parse_diag_solver(v); });
  TESSEL_CHECK(a.sign_order == 2 || a.sign_order == 3, InputError, "--sign-order ", a.sign_order,
               ": expected 2 or 3");
  TESSEL_CHECK(a.eps >= 0 && std::isfinite(a.eps), InputError, "--eps ", a.eps,
               ": expected >= 0 (0 = no filtering)");
  TESSEL_CHECK(a.tol > 0, InputError, "--tol ", a.tol, ": expected > 0");
  TESSEL_CHECK(!a.mu || std::isfinite(*a.mu), InputError, "--mu: expected a finite energy");
  TESSEL_CHECK(a.memory_mib >= 0 && std::isfinite(a.memory_mib), InputError, "--memory ",
               a.memory_mib, ": expected MiB per rank >= 0 (0 = no budget)");
  sparse::SpMultiplyOptions mo;
  mo.algorithm = parse_named("--algorithm", a.algorithm, "cannon or rma25d",
                             [](const std::string& v) { return sparse::parse_sp_algorithm(v); });
  // An integer >= 1 (parse_named turns the throw into its message naming the option).
  auto positive_int = [](const std::string& v) {
    std::size_t used = 0;
    int x = 0;
    try {
      x = std::stoi(v, &used);
    } catch (const std::exception&) { throw InputError("bad"); }
    if (used != v.size() || x < 1) throw InputError("bad");
    return x;
  };
  mo.layers = a.layers == "auto"
                  ? 0
                  : parse_named("--layers", a.layers, "auto or an integer >= 1", positive_int);
  mo.filter_eps = a.eps;
  const int row_panels = a.row_panels == "auto"
                             ? 0
                             : parse_named("--row-panels", a.row_panels,
                                           "auto or an integer 1 .. 64", [&](const std::string& v) {
                                             const int x = positive_int(v);
                                             if (x > 64) throw InputError("bad");
                                             return x;
                                           });
  TESSEL_CHECK(row_panels <= 1 || mo.algorithm == sparse::SpAlgorithm::Cannon, InputError,
               "--row-panels ", a.row_panels, ": expected 1 or auto with --algorithm rma25d");
  TESSEL_CHECK(a.spill.empty() || !a.dense, InputError, "--spill '", a.spill,
               "': expected no --spill with --dense (it keeps the block-sparse H and S on disk)");
  const int tile = a.tile == "auto"   ? kAutoTile
                   : a.tile == "none" ? 1
                                      : parse_named("--tile", a.tile,
                                                    "auto, none or an integer >= 1", positive_int);
  const bool npy = a.out.size() > 4 && a.out.substr(a.out.size() - 4) == ".npy";
  const bool csr = a.out.size() > 4 && a.out.substr(a.out.size() - 4) == ".csr";
  TESSEL_CHECK(a.out.empty() || npy || csr, InputError, "--out '", a.out,
               "': expected a .npy or .csr file name");
  TESSEL_CHECK(!(csr && a.dense), InputError, "--out '", a.out, "': --dense writes .npy only");
  check_writable(ctx, "--out", a.out);
  check_writable(ctx, "--json", a.json);
  TraceRun trace(ctx, a.trace);
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
  const Stopwatch t_in;
  Input in = read_input(ctx, a);
  const double read_seconds = t_in.seconds();
  const int block_rows = in.H.distribution().row_blocks().count();
  TESSEL_CHECK(a.tiling == "cluster" || a.tiling == "contiguous", InputError, "--tiling '",
               a.tiling, "': expected cluster or contiguous");
  // The solve (tiling included) is what the ledger and commcount see.
  ctx.comm().barrier();
  ctx.ledger().reset();
  comm::pcontrol(2);
  const Stopwatch t_tile;
  const auto tl =
      a.dense || tile == 1 || a.tiling == "contiguous"
          ? sparse::Tiling::contiguous(in.H.distribution().row_blocks(), a.dense ? 1 : tile)
          : sparse::cluster_tiling(ctx, in.S, tile);
  const bool tiled = !tl.is_identity();
  const double tile_seconds = t_tile.seconds();
  if (root)
    std::cout << fmt::format(
                     "tessel density: {}, {} electrons, method {}{}, {} ranks, {}, eps {:g}\n",
                     in.description, in.electrons, a.method,
                     opt.method == solvers::DensityMethod::Sign
                         ? fmt::format(" (order {})", a.sign_order)
                         : "",
                     ctx.size(), a.dense ? "dense" : a.algorithm, a.dense ? 0.0 : a.eps)
              << (tiled ? fmt::format("tiles: {} (--tile {}, --tiling {}, {:.3f} s)\n",
                                      tl.describe(), a.tile, a.tiling, tile_seconds)
                        : std::string())
              << (a.explain
                      ? std::string()
                      : fmt::format("{:>14} {:>5} {:>12} {:>14} {:>12} {:>10} {:>9}\n", "stage",
                                    "iter", "residual", "occupation", "mu", "blocks", "seconds"))
              << std::flush;
  MemoryWatch watch(ctx, a.memory_mib * 1024.0 * 1024.0);
  opt.on_step = [&](const solvers::IterationInfo& s) {
    watch.step(s);  // every rank: with --memory it may stop the run (collectively)
    if (!root) return;
    std::cout << fmt::format(
                     "{:>14} {:>5} {:>12.3e} {:>14} {:>12} {:>10} {:>9.3f}\n", s.stage, s.iteration,
                     s.residual, s.occupation != 0 ? fmt::format("{:.8f}", s.occupation) : "-",
                     s.stage == "sign" || s.stage == "mu" ? fmt::format("{:.6f}", s.mu) : "-",
                     s.blocks > 0 ? std::to_string(s.blocks) : "-", s.seconds)
              << std::flush;
  };
  nlohmann::json j = run_header(ctx);
  const Stopwatch t0;
  double band = 0, band_orth = 0, mu = 0, trace_ps = 0, idem = 0, residual = 0, flops = 0;
  double eps_stage[4] = {0, 0, 0, 0};  // inverse, transform, iteration, final
  double bounds[2] = {0, 0}, inverse_scale = 0;
  int iters = 0, sign_ev = 0, inv_iters = 0, final_steps = 0;
  std::int64_t mults = 0, p_blocks = 0, tiles_stored = -1;
  double p_occupation = 1.0;
  std::string method_used = a.method, method_reason, eigensolver;
  auto take = [&](const auto& r, auto& alg) {
    method_used = solvers::to_string(r.method);
    method_reason = r.method_reason;
    eigensolver = r.eigensolver;
    band = r.band_energy;
    band_orth = r.band_energy_before_final;
    eps_stage[0] = r.eps_inverse;
    eps_stage[1] = r.eps_transform;
    eps_stage[2] = r.eps_iteration;
    eps_stage[3] = r.eps_final;
    final_steps = r.final_steps;
    bounds[0] = r.bounds.lo;
    bounds[1] = r.bounds.hi;
    inverse_scale = r.inverse_scale;
    mu = r.mu;
    trace_ps = r.trace_ps;
    idem = r.idempotency;
    residual = r.residual;
    iters = r.iterations;
    sign_ev = r.sign_evaluations;
    inv_iters = r.inverse_iterations;
    mults = r.multiplications;
    flops = ctx.comm().allreduce_value(alg.stats().flops, MPI_SUM);
  };
  double seconds = 0, mem_predicted = 0;
  if (a.dense) {
    auto g = most_square_grid(ctx.size());
    auto lay = layout::Layout::block_cyclic(in.H.rows(), in.H.cols(), 64, 64, g.first, g.second, 0,
                                            0, ctx.size());
    auto H = sparse::to_dense(ctx, in.H, lay);
    auto S = sparse::to_dense(ctx, in.S, lay);
    if (a.explain) {
      if (root)
        std::cout << "--explain: the dense path has no memory model (every matrix n^2 / ranks "
                     "values); stopped before the solve\n";
      return trace.finish(0);
    }
    solvers::DenseAlgebra alg(ctx);
    auto r = solve(alg, H, S, in.electrons, opt);
    seconds = t0.seconds();
    comm::pcontrol(0);
    take(r, alg);
    if (npy) io::write_npy(ctx, a.out, r.P);
  } else {
    // Tiles (sparse/tiling.hpp): the solver runs on groups of consecutive atomic blocks; the
    // moves into and out of tiles are part of the timed solve.
    const sparse::Distribution fine = in.H.distribution();
    if (tiled) {
      auto td = sparse::Distribution::random(tl.tiles(), tl.tiles(), fine.pr(), fine.pc());
      in.H = sparse::to_tiles(ctx, in.H, tl, tl, td, "H");
      in.S = sparse::to_tiles(ctx, in.S, tl, tl, td, "S");
    }
    const std::int64_t input = std::max(in.H.local_bytes(), in.S.local_bytes());
    const bool spilled = !a.spill.empty();
    mo.row_panels = row_panels > 0
                        ? row_panels
                        : auto_row_panels(ctx, mo.algorithm, input, a.memory_mib, spilled);
    std::optional<InputSpill> spill;
    if (spilled) {
      spill.emplace(ctx, a.spill, in.H, in.S);
      opt.inputs_needed = [&spill](bool h, bool s) { spill->need(h, s); };
    }
    mem_predicted = watch.check_start("the solve", input, mo.row_panels, spilled);
    if (root)
      std::cout << fmt::format(
          "memory per rank: predicted peak {} ({:.1f} x the largest input matrix as the solver "
          "holds it, {} row panel(s){}{}; docs/density.md){}\n",
          human_bytes(mem_predicted), peak_per_largest_input(mo.row_panels, spilled), mo.row_panels,
          row_panels > 0 ? "" : ", auto", spilled ? ", H and S spilled" : "",
          a.memory_mib > 0 ? fmt::format(", budget {:g} MiB", a.memory_mib) : std::string());
    if (a.explain) {
      if (root) std::cout << "--explain: stopped before the solve\n";
      return trace.finish(0);
    }
    solvers::SparseAlgebra alg(ctx, mo);
    auto r = solve(alg, in.H, in.S, in.electrons, opt);
    in.H = sparse::BlockSparseMatrix<double>();  // not needed after the solve: freed before P
    in.S = sparse::BlockSparseMatrix<double>();  // leaves its tiles (the end's peak)
    if (tiled) {
      tiles_stored = sparse::nblocks(ctx, r.P);
      r.P = sparse::from_tiles(ctx, std::move(r.P), tl, tl, fine, 0.0, "P");
    }
    seconds = t0.seconds() + tile_seconds;
    comm::pcontrol(0);
    take(r, alg);
    p_blocks = sparse::nblocks(ctx, r.P);
    p_occupation = sparse::occupation(ctx, r.P);
    if (npy) io::write_npy_blocks(ctx, r.P, a.out);
    if (csr) io::write_cp2k_csr(ctx, r.P, a.out);
  }
  {
    solvers::IterationInfo end;
    end.stage = "end";  // from the last step to the end: P back from tiles, the output
    watch.step(end);
  }
  const auto mem_stages = watch.stages();
  const double largest = watch.largest_matrix();
  double mem_peak = 0;
  std::string mem_peak_stage;
  for (const auto& st : mem_stages)
    if (st.total > mem_peak) {
      mem_peak = st.total;
      mem_peak_stage = st.stage;
    }
  // Peak resident memory per rank (getrusage ru_maxrss, kB on Linux), max and mean over ranks.
  const double rss = maxrss_bytes();
  const double rss_max = ctx.comm().allreduce_value(rss, MPI_MAX);
  const double rss_mean = ctx.comm().allreduce_value(rss, MPI_SUM) / ctx.size();
  auto stats = comm::ledger_stats(ctx.comm(), ctx.ledger(), {""});
  const double bytes_max =
      stats.empty() ? 0
                    : stats[0].recv_bytes.max + stats[0].coll_bytes.max + stats[0].rma_bytes.max;
  if (root) {
    std::cout
        << (method_reason.empty()
                ? std::string()
                : fmt::format("method auto: chose {} because {}\n", method_used, method_reason))
        << fmt::format(
               "band energy 2 tr(PH): {:.10f} Eh (before the final McWeeny steps: {:.10f})\n", band,
               band_orth)
        << fmt::format(
               "filter eps by stage: S^-1/2 {:g}, basis changes {:g}, iteration {:g}, "
               "{} final McWeeny steps {:g}\n",
               eps_stage[0], eps_stage[1], eps_stage[2], final_steps, eps_stage[3])
        << fmt::format("mu: {:.6f} Eh{}\n", mu, opt.mu ? " (given)" : "")
        << fmt::format("tr(PS): {:.10f} (electrons 2 tr(PS) = {:.10f}, expected {})\n", trace_ps,
                       2 * trace_ps, in.electrons)
        << fmt::format("idempotency ||PSP - P||_F / ||P||_F: {:.3e}\n", idem)
        << fmt::format(
               "iterations: {} ({}{}), S^-1/2: {} Newton-Schulz steps; sign evaluations: {}\n",
               iters, method_used, eigensolver.empty() ? "" : ", eigensolver " + eigensolver,
               inv_iters, sign_ev)
        << fmt::format("multiplications: {} ({:.3g} GFLOP), residual {:.3e}\n", mults, flops / 1e9,
                       residual)
        << (a.dense ? std::string()
                    : fmt::format(
                          "P: {} blocks stored ({:.2f}% of all){}\n", p_blocks, 100 * p_occupation,
                          tiles_stored >= 0 ? fmt::format(", {} tiles in the solver", tiles_stored)
                                            : std::string()))
        << fmt::format(
               "time: {:.3f} s (input {:.3f} s{})\n", seconds, read_seconds,
               tiled ? fmt::format(", tiling {:.3f} s included", tile_seconds) : std::string())
        << fmt::format("bytes received per rank (max): {}\n", human_bytes(bytes_max))
        << fmt::format("peak memory per rank (ru_maxrss): max {}, mean {}\n", human_bytes(rss_max),
                       human_bytes(rss_mean))
        << (a.dense ? std::string() : memory_table(mem_stages, mem_peak, mem_peak_stage, largest))
        << ledger_table(
               comm::ledger_stats(ctx.comm(), ctx.ledger(), {"spgemm", "gemm", "sparse", ""}), true)
        << std::flush;
  } else {
    (void)comm::ledger_stats(ctx.comm(), ctx.ledger(), {"spgemm", "gemm", "sparse", ""});
  }
  if (!a.json.empty()) {
    j["command"] = "density";
    j["input"] = in.description;
    j["method"] = a.method;
    j["row_panels"] = a.dense ? 0 : mo.row_panels;
    j["method_used"] = method_used;
    j["method_reason"] = method_reason;
    j["eigensolver"] = eigensolver;
    j["sign_order"] = a.sign_order;
    j["algorithm"] = a.dense ? "dense" : a.algorithm;
    j["eps"] = a.eps;
    j["electrons"] = in.electrons;
    j["band_energy"] = band;
    j["band_energy_before_final"] = band_orth;
    j["eps_inverse"] = eps_stage[0];
    j["eps_transform"] = eps_stage[1];
    j["eps_final"] = eps_stage[3];
    j["final_steps"] = final_steps;
    j["bounds"] = {bounds[0], bounds[1]};
    j["inverse_scale"] = inverse_scale;
    j["mu"] = mu;
    j["trace_ps"] = trace_ps;
    j["idempotency"] = idem;
    j["iterations"] = iters;
    j["inverse_sqrt_iterations"] = inv_iters;
    j["sign_evaluations"] = sign_ev;
    j["multiplications"] = mults;
    j["flops"] = flops;
    j["seconds"] = seconds;
    j["p_blocks"] = p_blocks;
    j["bytes_per_rank_max"] = bytes_max;
    j["maxrss_bytes_max"] = rss_max;
    j["maxrss_bytes_mean"] = rss_mean;
    if (!a.dense) {
      j["memory_predicted_bytes"] = mem_predicted;
      j["memory_peak_bytes"] = mem_peak;
      j["memory_peak_stage"] = mem_peak_stage;
      j["largest_matrix_bytes"] = largest;
      for (const auto& st : mem_stages)
        j["memory_stages"].push_back({{"stage", st.stage},
                                      {"peak_bytes", st.total},
                                      {"matrices", st.matrices},
                                      {"buffers", st.buffers},
                                      {"windows", st.windows},
                                      {"matrices_alive", st.alive}});
    }
    j["n"] = in.H.rows();
    j["block_rows"] = block_rows;
    j["tile"] = tile;
    j["tiles_stored"] = tiles_stored;
    j["tiling"] = tiled ? a.tiling : "none";
    j["tiles"] = tl.tiles().count();
    j["tiling_seconds"] = tile_seconds;
    j["ledger"] = ledger_json(stats);
    write_json(ctx, a.json, j);
  }
  return trace.finish(0);
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
                "Directory for each rank's part of H and S while the solver does not read them "
                "(written once, read back for H S^-1/2 products and the final steps, removed at "
                "the end): two matrices fewer in memory during the iteration (docs/density.md)");
  s->add_flag("--explain", a->explain,
              "Read (or generate) and tile the input, print the predicted peak memory per rank, "
              "and stop before the solve (no output files)");
  add_trace_option(s, a->trace);
  return [a] { return run_density(*a); };
}

}  // namespace tessel::app

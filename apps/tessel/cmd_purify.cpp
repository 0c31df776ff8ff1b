// `tessel purify`: the density matrix of a Fock matrix by purification around SymmSquareCube
// (seed 000), with one progress line per iteration, the flops rate of the products, the
// errors, the band energy (against the analytic value for the built-in ring model) and the
// bytes moved per rank by phase. run_purify: check the options -> the input -> checkpoint and
// restart -> the purification -> the report, --out, --json.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "report.hpp"
#include "tessel/io/checkpoint.hpp"
#include "tessel/solvers/purify_checkpoint.hpp"
#include "tessel/io/npy.hpp"
#include "tessel/solvers/purify.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::app {
namespace {

using dense::DistMatrix;

// Exit status of a run ended by --stop-after (not an error, not a finished run either).
constexpr int kExitStopped = 3;

struct PurifyArgs {
  std::string fock, overlap, method = "canonical", out, json, trace, checkpoint, restart;
  int checkpoint_every = 10, stop_after = 0;
  std::optional<std::int64_t> nocc;
  std::optional<double> mu;
  double tol = 1e-11;
  int max_iter = 200, nb = 64;
  SscArgs ssc;
  RingModel model;
  CLI::App* app = nullptr;  // to ask which options were given
};

// The analytic reference of the ring model for nocc occupied states.
struct Analytic {
  double band_energy = 0, homo = 0, lumo = 0;
};

Analytic analytic(const RingModel& m, std::int64_t nocc) {
  const auto e = m.spectrum();
  Analytic a;
  for (std::int64_t i = 0; i < nocc; ++i) a.band_energy += 2 * e[static_cast<std::size_t>(i)];
  a.homo = e[static_cast<std::size_t>(nocc - 1)];
  a.lumo = e[static_cast<std::size_t>(nocc)];
  return a;
}

// The options that determine the result, as a checkpoint records them (keys are the option
// names a user sees in the mismatch error). F and S by the hash of their values (F-hash: of
// the --fock file or of the ring model --n/--gap/--hopping; S-hash: of --overlap, or none).
io::CheckpointRecord::Pairs result_options(const PurifyArgs& a, const solvers::PurifyOptions& opt,
                                           int p, std::int64_t n, std::int64_t nocc,
                                           std::uint64_t f_hash,
                                           std::optional<std::uint64_t> s_hash) {
  return {{"--method", solvers::to_string(opt.method)},
          {"n", std::to_string(n)},
          {"--nocc", std::to_string(nocc)},
          {"--mu", opt.mu ? fmt::format("{}", *opt.mu) : "unset"},
          {"--tol", fmt::format("{}", opt.tol)},
          {"stall_window", std::to_string(opt.stall_window)},
          {"F-hash", io::hex64(f_hash)},
          {"S-hash", s_hash ? io::hex64(*s_hash) : "none"},
          {"ranks", std::to_string(p)},
          {"--algorithm", a.ssc.algorithm},
          {"--n-dup", a.ssc.n_dup},
          {"--n-t", std::to_string(opt.ssc.n_t)},
          {"--active-ranks", std::to_string(a.ssc.active_ranks)},
          {"--replication", std::to_string(a.ssc.replication)},
          {"--collectives", a.ssc.collectives}};
}

// --restart: the checkpoint's iterate and state, after checking its options against ours.
std::shared_ptr<const solvers::PurifyResume> load_restart(
    Context& ctx, const std::string& path, const io::CheckpointRecord::Pairs& given,
    const std::function<layout::Layout(std::int64_t, std::int64_t)>& make_layout) {
  io::CheckpointData ck;
  try {
    ck = io::read_checkpoint(ctx, path, "purify", make_layout);
  } catch (const InputError& e) {  // on every rank alike
    throw InputError(detail::concat("--restart ", path, ": ", e.what()));
  }
  auto r = std::make_shared<solvers::PurifyResume>();
  ctx.agree([&] {
    io::check_checkpoint_options(path, ck.record, given);
    r->state = solvers::get_purify_state(ck.record, path);
    const std::size_t want = r->state.has_best ? 2 : 1;
    TESSEL_CHECK(ck.matrices.size() == want, InputError, "--restart ", path,
                 " is malformed: ", ck.matrices.size(), " matrices, expected ", want,
                 " (state.has_best = ", r->state.has_best, ")");
  });
  r->X = std::move(ck.matrices[0]);
  if (r->state.has_best) r->best = std::move(ck.matrices[1]);
  return r;
}

// ---- parse and validate (the same on every rank, so the checks throw together) ----

/// Pure. Without --fock the ring model's --n, --gap, --hopping (and no --overlap: the model is
/// orthogonal); with it, none of the model's options: InputError naming the option.
void check_input_options(const PurifyArgs& a) {
  if (a.fock.empty()) {
    a.model.validate();
    TESSEL_CHECK(a.overlap.empty(), InputError, "--overlap ", a.overlap,
                 ": needs --fock (the built-in ring model is orthogonal)");
  } else {
    for (const char* o : {"--n", "--gap", "--hopping"})
      TESSEL_CHECK(a.app->count(o) == 0, InputError, o, " ",
                   a.app->get_option(o)->as<std::string>(),
                   ": describes the built-in ring model, which --fock ", a.fock, " replaces");
  }
}

/// Not collective (the SymmSquareCube options may read --machine). The options of `a`:
/// InputError (LayoutMismatch for --nb) naming the option.
solvers::PurifyOptions check_options(const Context& ctx, const PurifyArgs& a) {
  solvers::PurifyOptions opt;
  opt.method = parse_named("--method", a.method, "canonical, mcweeny, trs2 or trs4",
                           [](const std::string& v) { return solvers::parse_purify_method(v); });
  opt.ssc = a.ssc.options(ctx);
  TESSEL_CHECK(a.tol > 0 && std::isfinite(a.tol), InputError, "--tol ", a.tol,
               ": expected a finite tolerance > 0");
  TESSEL_CHECK(a.max_iter >= 1, InputError, "--max-iter ", a.max_iter, ": expected >= 1");
  TESSEL_CHECK(a.nb >= 1, LayoutMismatch, "--nb ", a.nb, ": block size must be >= 1");
  opt.tol = a.tol;
  opt.max_iter = a.max_iter;
  if (a.mu) {
    TESSEL_CHECK(std::isfinite(*a.mu), InputError, "--mu ", *a.mu,
                 ": expected a finite energy (Eh)");
    opt.mu = *a.mu;
  }
  check_input_options(a);
  TESSEL_CHECK(a.checkpoint_every >= 1, InputError, "--checkpoint-every ", a.checkpoint_every,
               ": expected >= 1 (steps between checkpoints)");
  TESSEL_CHECK(!a.checkpoint.empty() || a.app->count("--checkpoint-every") == 0, InputError,
               "--checkpoint-every ", a.checkpoint_every, ": needs --checkpoint FILE");
  TESSEL_CHECK(a.stop_after >= 0, InputError, "--stop-after ", a.stop_after,
               ": expected >= 0 (0 = never)");
  if (!a.checkpoint.empty()) opt.checkpoint_every = a.checkpoint_every;
  opt.stop_after = a.stop_after;
  return opt;
}

// ---- input: F (and S) from the files or the ring model, nocc ----

/// The matrices of a run and what describes them.
struct Input {
  int pr = 1, pc = 1;  // the grid of the block-cyclic layout
  std::optional<DistMatrix<double>> F, S;
  std::int64_t n = 0, nocc = 0;
  std::optional<Analytic> exact;  // the ring model's reference
};

using LayoutOf = std::function<layout::Layout(std::int64_t, std::int64_t)>;

/// Pure. The layout of F, S and D: block-cyclic --nb x --nb on `in`'s grid of `p` ranks.
LayoutOf block_cyclic_of(const PurifyArgs& a, const Input& in, int p) {
  return [nb = a.nb, pr = in.pr, pc = in.pc, p](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, nb, nb, pr, pc, 0, 0, p);
  };
}

/// Collective. F: the model, filled in place by every rank, or --fock (collective MPI-IO);
/// S: --overlap, or none. DimensionMismatch naming the files when F is not square or S's
/// shape differs.
void read_matrices(const Context& ctx, const PurifyArgs& a, const LayoutOf& bc, Input& in) {
  if (a.fock.empty()) {
    in.F.emplace(ctx, bc(a.model.n, a.model.n));
    a.model.fill(*in.F);
    return;
  }
  in.F = read_npy_option(ctx, "--fock", a.fock, bc);
  const DistMatrix<double>& F = *in.F;
  TESSEL_CHECK(F.rows() == F.cols(), DimensionMismatch, "--fock ", a.fock, " is ", F.rows(), " x ",
               F.cols(), ": expected a square Fock matrix");
  if (a.overlap.empty()) return;
  in.S = read_npy_option(ctx, "--overlap", a.overlap, bc);
  TESSEL_CHECK(in.S->rows() == F.rows() && in.S->cols() == F.cols(), DimensionMismatch,
               "--overlap ", a.overlap, " is ", in.S->rows(), " x ", in.S->cols(), " but --fock ",
               a.fock, " is ", F.rows(), " x ", F.cols(), ": expected the same shape");
}

/// Pure. nocc (--nocc, or n/2 for the ring model) in 1 .. n-1 and, for the model, a gap
/// between states nocc and nocc + 1: InputError naming --nocc.
void check_occupation(const PurifyArgs& a, Input& in) {
  const bool model = a.fock.empty();
  const std::int64_t n = in.n;
  const std::string n_from = model ? "the ring model's --n" : "--fock " + a.fock;
  TESSEL_CHECK(model || a.nocc, InputError, "--nocc is required with --fock ", a.fock,
               " (the number of occupied states, 1 .. n-1)");
  in.nocc = a.nocc ? *a.nocc : n / 2;
  const std::int64_t nocc = in.nocc;
  TESSEL_CHECK(nocc >= 1 && nocc < n, InputError, "--nocc ", nocc, ": expected 1 .. n-1 = ", n - 1,
               " (n = ", n, " from ", n_from, ")");
  if (!model) return;
  in.exact = analytic(a.model, nocc);
  const Analytic& e = *in.exact;
  const double width = std::max(std::abs(e.homo), std::abs(e.lumo));
  TESSEL_CHECK(e.lumo - e.homo > 1e-9 * std::max(1.0, width), InputError, "--nocc ", nocc,
               ": states ", nocc, " and ", nocc + 1,
               " of the ring model are degenerate (E = ", e.homo,
               " Eh): no HOMO-LUMO gap, no clear occupation (n/2 = ", n / 2, " has a gap)");
}

/// Collective. The input on the most square grid, block-cyclic --nb x --nb.
Input read_input(const Context& ctx, const PurifyArgs& a) {
  Input in;
  std::tie(in.pr, in.pc) = most_square_grid(ctx.size());
  const LayoutOf bc = block_cyclic_of(a, in, ctx.size());
  read_matrices(ctx, a, bc, in);
  in.n = in.F->rows();
  check_occupation(a, in);
  return in;
}

/// Rank 0: the run's header: sizes, the input, SymmSquareCube's options, the stop rule.
void print_header(const PurifyArgs& a, const solvers::PurifyOptions& opt, const Input& in, int p) {
  std::cout
      << fmt::format("tessel purify: n = {}, nocc = {}, method {}, {} ranks\n", in.n, in.nocc,
                     solvers::to_string(opt.method), p)
      << "input: "
      << (a.fock.empty()
              ? a.model.describe() + " (generated in place on every rank)"
              : "--fock " + a.fock +
                    (in.S ? ", --overlap " + a.overlap : std::string(" (orthogonal basis)")))
      << fmt::format(", block-cyclic {} x {} blocks on a {} x {} grid\n", a.nb, a.nb, in.pr, in.pc)
      << fmt::format(
             "SymmSquareCube: algorithm {}, N_DUP {}, n_t {} B, collectives {}, active ranks {}{}\n",
             dense::to_string(opt.ssc.algorithm), a.ssc.n_dup, opt.ssc.n_t,
             comm::to_string(opt.ssc.collectives),
             a.ssc.active_ranks == 0 ? std::string("all") : std::to_string(a.ssc.active_ranks),
             opt.ssc.algorithm == dense::SscAlgorithm::TwoPointFiveD
                 ? (a.ssc.replication ? fmt::format(", replication {}", a.ssc.replication)
                                      : std::string(", replication auto"))
                 : std::string())
      << fmt::format("stop: ||D - D^2||_F < {:g}, at most {} iterations\n", a.tol, a.max_iter)
      << std::flush;
}

// ---- checkpoint and restart ----

/// Collective (hashes F and S) with --checkpoint or --restart: the options that fix the
/// result, checked on --restart and recorded in every --checkpoint; else empty.
io::CheckpointRecord::Pairs checkpoint_options(const Context& ctx, const PurifyArgs& a,
                                               const solvers::PurifyOptions& opt, const Input& in) {
  if (a.checkpoint.empty() && a.restart.empty()) return {};
  const std::uint64_t fh = io::content_hash(ctx, *in.F);
  std::optional<std::uint64_t> sh;
  if (in.S) sh = io::content_hash(ctx, *in.S);
  return result_options(a, opt, ctx.size(), in.n, in.nocc, fh, sh);
}

/// The solver's on_checkpoint for --checkpoint: the state and X (and the best iterate) with the
/// options `given` (held by the caller) to the file, collectively over the active ranks; rank 0
/// prints a line.
decltype(solvers::PurifyOptions::on_checkpoint) checkpoint_writer(
    const PurifyArgs& a, const io::CheckpointRecord::Pairs& given, bool has_s, bool root) {
  return [&a, &given, has_s, root](const comm::Comm& active, const solvers::PurifyState& st,
                                   const DistMatrix<double>& X, const DistMatrix<double>* best) {
    io::CheckpointRecord rec;
    rec.kind = "purify";
    rec.options = given;
    rec.options.emplace_back(
        "input", a.fock.empty()
                     ? a.model.describe()
                     : "--fock " + a.fock + (has_s ? " --overlap " + a.overlap : std::string()));
    solvers::put_purify_state(rec, st);
    std::vector<const DistMatrix<double>*> mats{&X};
    if (best) mats.push_back(best);
    io::write_checkpoint(active, a.checkpoint, rec, mats);
    if (root)
      std::cout << fmt::format("checkpoint: {} written, resumes at step {}\n", a.checkpoint,
                               st.iteration)
                << std::flush;
  };
}

/// Collective. --restart: the iterate and state to resume from (rank 0 prints a line);
/// --checkpoint: the writer.
void set_checkpointing(Context& ctx, const PurifyArgs& a, const Input& in,
                       const io::CheckpointRecord::Pairs& given, solvers::PurifyOptions& opt) {
  const bool root = ctx.rank() == 0;
  if (!a.restart.empty()) {
    opt.resume = load_restart(ctx, a.restart, given, block_cyclic_of(a, in, ctx.size()));
    if (root)
      std::cout << fmt::format("restart: from {} at step {}\n", a.restart,
                               opt.resume->state.iteration)
                << std::flush;
  }
  if (!a.checkpoint.empty())
    opt.on_checkpoint = checkpoint_writer(a, given, in.S.has_value(), root);
}

/// The solver's on_step: rank 0 keeps each step in `steps` (for --json) and prints its line,
/// under a head line before the first.
std::function<void(const solvers::PurifyStep&)> progress_lines(
    std::vector<solvers::PurifyStep>& steps, bool root) {
  return [&steps, root](const solvers::PurifyStep& s) {
    if (!root) return;
    if (steps.empty())
      std::cout << fmt::format("{:>5} {:>14} {:>18} {:>22} {:>10}\n", "iter", "||D-D^2||_F",
                               "trace", "band energy (Eh)", "seconds");
    steps.push_back(s);
    std::cout << fmt::format("{:>5} {:>14.6e} {:>18.10f} {:>22.12f} {:>10.4f}\n", s.iteration,
                             s.idempotency_error, s.trace, s.band_energy, s.seconds)
              << std::flush;
  };
}

// ---- run: the purification ----

/// Collective. The purification, counted by the ledger and a preloaded traffic counter; an
/// InputError from the solver names the files the input came from. `wall`: the largest time
/// over the ranks.
solvers::PurifyResult run_timed(Context& ctx, const PurifyArgs& a, const Input& in,
                                const solvers::PurifyOptions& opt, double& wall) {
  ctx.ledger().reset();
  ctx.comm().barrier();
  comm::pcontrol(2);
  const Stopwatch t0;
  solvers::PurifyResult r;
  try {
    r = in.S ? solvers::purify(ctx, *in.F, *in.S, in.nocc, opt)
             : solvers::purify(ctx, *in.F, in.nocc, opt);
  } catch (const InputError& e) {  // agreed on every rank: name the file the input came from
    if (a.fock.empty()) throw;
    throw InputError(detail::concat(
        "--fock ", a.fock, in.S ? " --overlap " + a.overlap : std::string(), ": ", e.what()));
  }
  wall = ctx.comm().allreduce_value(t0.seconds(), MPI_MAX);
  comm::pcontrol(0);
  return r;
}

// ---- report: the text and the JSON ----

/// The rate of the products: flops = result.flops (2 n^3 per dense product), over ssc_seconds.
struct Rate {
  double seconds = 0, flops = 0, tflops = 0;
  std::string note;
};

Rate rate_of(const solvers::PurifyResult& r, double wall) {
  Rate x;
  x.seconds = r.seconds > 0 ? r.seconds : wall;
  x.flops = r.flops;
  const double flop_seconds = r.ssc_seconds;
  x.tflops = flop_seconds > 0 ? x.flops / flop_seconds * 1e-12 : 0.0;
  x.note = fmt::format("{:.3g} flops in SymmSquareCube over {:.4f} s", x.flops, flop_seconds);
  return x;
}

/// Rank 0: the mesh, convergence, rate, errors, band energy (against the ring model's) and
/// the ledger.
void print_results(const solvers::PurifyOptions& opt, const Input& in,
                   const solvers::PurifyResult& r, const Rate& x,
                   const std::vector<comm::PhaseStats>& stats) {
  std::cout
      << fmt::format("mesh: {} (p = {}), N_DUP = {}, algorithm {}\n", r.mesh, r.p, r.n_dup,
                     dense::to_string(opt.ssc.algorithm))
      << fmt::format("converged: {} iterations in {:.4f} s{}\n", r.iterations, x.seconds,
                     r.ssc_seconds > 0 ? fmt::format(" (SymmSquareCube {:.4f} s)", r.ssc_seconds)
                                       : std::string())
      << fmt::format(
             "rate: {:.4f} TFLOP/s = flops / ssc_seconds, flops = 2 n^3 per dense product ({})\n",
             x.tflops, x.note)
      << fmt::format("trace error |tr(D) - nocc|: {:.3e}\n", r.trace_error)
      << fmt::format("idempotency error ||D - D^2||_F: {:.3e}\n", r.idempotency_error)
      << fmt::format("band energy 2 tr(D F): {:.12f} Eh\n", r.band_energy);
  if (in.S)
    std::cout << fmt::format("Newton-Schulz S^-1/2: {} iterations, {:.4f} s\n", r.ns_iterations,
                             r.ns_seconds);
  if (in.exact) {
    const Analytic& e = *in.exact;
    const double diff = r.band_energy - e.band_energy;
    std::cout << fmt::format(
        "exact (analytic ring model): band energy {:.12f} Eh, difference {:.3e} Eh "
        "(relative {:.3e}); HOMO {:.6f} Eh, LUMO {:.6f} Eh, gap {:.6f} Eh\n",
        e.band_energy, diff, std::abs(diff) / std::abs(e.band_energy), e.homo, e.lumo,
        e.lumo - e.homo);
  }
  std::cout
      << "bytes moved per rank over the whole purification (point-to-point received, collective payload):\n"
      << ledger_table(stats, true) << std::flush;
}

/// The --json fields that describe the run: sizes, options, the input.
nlohmann::json run_json(const Context& ctx, const PurifyArgs& a, const solvers::PurifyOptions& opt,
                        const Input& in) {
  nlohmann::json j = run_header(ctx);
  j["command"] = "purify";
  j["n"] = in.n;
  j["nocc"] = in.nocc;
  j["method"] = solvers::to_string(opt.method);
  if (opt.mu) j["mu"] = *opt.mu;
  j["input"] = a.fock.empty() ? nlohmann::json{{"model", "ring"},
                                               {"n", a.model.n},
                                               {"gap", a.model.gap},
                                               {"hopping", a.model.hopping}}
                              : nlohmann::json{{"fock", a.fock}, {"overlap", a.overlap}};
  j["tol"] = a.tol;
  j["max_iter"] = a.max_iter;
  return j;
}

/// The --json fields of the results: SymmSquareCube's mesh, convergence, rate, errors, the
/// ring model's reference, the steps and the ledger.
void add_results_json(nlohmann::json& j, const PurifyArgs& a, const solvers::PurifyOptions& opt,
                      const Input& in, const solvers::PurifyResult& r, const Rate& x,
                      const std::vector<solvers::PurifyStep>& steps,
                      const std::vector<comm::PhaseStats>& stats) {
  j["ssc"] = {{"algorithm", dense::to_string(opt.ssc.algorithm)},
              {"n_dup_requested", a.ssc.n_dup},
              {"n_dup", r.n_dup},
              {"n_t", opt.ssc.n_t},
              {"active_ranks", a.ssc.active_ranks},
              {"replication", a.ssc.replication},
              {"mesh", r.mesh},
              {"p", r.p}};
  j["iterations"] = r.iterations;
  j["seconds"] = x.seconds;
  j["ssc_seconds"] = r.ssc_seconds;
  j["flops"] = x.flops;
  j["tflops"] = x.tflops;
  j["tflops_formula"] = "flops / ssc_seconds; flops = 2 n^3 per dense product";
  j["trace_error"] = r.trace_error;
  j["idempotency_error"] = r.idempotency_error;
  j["band_energy"] = r.band_energy;
  j["ns_iterations"] = r.ns_iterations;
  j["ns_seconds"] = r.ns_seconds;
  if (in.exact)
    j["analytic"] = {{"band_energy", in.exact->band_energy},
                     {"homo", in.exact->homo},
                     {"lumo", in.exact->lumo},
                     {"homo_lumo_gap", in.exact->lumo - in.exact->homo},
                     {"difference", r.band_energy - in.exact->band_energy}};
  nlohmann::json js = nlohmann::json::array();
  for (const auto& s : steps)
    js.push_back({{"iteration", s.iteration},
                  {"idempotency_error", s.idempotency_error},
                  {"trace", s.trace},
                  {"band_energy", s.band_energy},
                  {"seconds", s.seconds}});
  j["steps"] = js;
  j["ledger"] = ledger_json(stats);
}

/// Collective: check the options -> the input -> checkpoint and restart -> the purification
/// (--stop-after ends it here, exit status 3) -> the report, --out, --json.
int run_purify(const PurifyArgs& a) {
  Context ctx(MPI_COMM_WORLD, context_options_from_environment());
  const bool root = ctx.rank() == 0;
  solvers::PurifyOptions opt = check_options(ctx, a);
  check_writable(ctx, "--checkpoint", a.checkpoint);
  check_writable(ctx, "--out", a.out);
  check_writable(ctx, "--json", a.json);
  TraceRun trace(ctx, a.trace);

  const Input in = read_input(ctx, a);
  if (root) print_header(a, opt, in, ctx.size());
  const io::CheckpointRecord::Pairs given = checkpoint_options(ctx, a, opt, in);
  set_checkpointing(ctx, a, in, given, opt);
  std::vector<solvers::PurifyStep> steps;
  opt.on_step = progress_lines(steps, root);

  double wall = 0;
  const solvers::PurifyResult r = run_timed(ctx, a, in, opt, wall);
  if (r.stopped) {  // --stop-after: an unfinished run writes no --out/--json
    if (root)
      std::cout << fmt::format("stopped after {} steps (--stop-after {}), not converged: {}\n",
                               r.iterations, a.stop_after,
                               a.checkpoint.empty() ? std::string("no --checkpoint written")
                                                    : "resume with --restart " + a.checkpoint)
                << std::flush;
    return trace.finish(kExitStopped);
  }
  const auto stats = comm::ledger_stats(
      ctx.comm(), ctx.ledger(),
      {"ssc/setup", "purify/redistribute in", "purify/validate", "purify/iterate/ssc/compute",
       "purify/iterate", "ssc/release", "purify/result", "purify/redistribute out", ""});
  const Rate x = rate_of(r, wall);
  if (root) print_results(opt, in, r, x, stats);
  if (!a.out.empty()) io::write_npy(ctx, a.out, r.D);
  if (!a.json.empty()) {
    nlohmann::json j = run_json(ctx, a, opt, in);
    add_results_json(j, a, opt, in, r, x, steps, stats);
    write_json(ctx, a.json, j);
  }
  return trace.finish(0);
}

}  // namespace

std::function<int()> add_purify(CLI::App& app) {
  auto a = std::make_shared<PurifyArgs>();
  CLI::App* s = app.add_subcommand(
      "purify",
      "Density matrix D of a Fock matrix by purification around SymmSquareCube (collective). "
      "Prints one line per iteration and the rate of the products: TFLOP/s = flops / ssc_seconds "
      "with flops = 2 n^3 per dense product (canonical and McWeeny: D^2 and D^3 per step).");
  a->app = s;
  s->add_option("--fock", a->fock,
                "Fock matrix F from a .npy file (float64, square, symmetric); "
                "default: the built-in ring model (below)");
  s->add_option("--overlap", a->overlap,
                "Overlap matrix S from a .npy file (non-orthogonal basis; "
                "same shape as F); default: orthogonal basis");
  s->add_option("--nocc", a->nocc,
                "Occupied states, 1 .. n-1 (default n/2 for the ring model; "
                "required with --fock)");
  s->add_option("--method", a->method, "canonical | mcweeny | trs2 | trs4")->capture_default_str();
  s->add_option("--mu", a->mu,
                "Chemical potential in Eh, inside the HOMO-LUMO gap (McWeeny; default: unset)");
  a->ssc.add_to(s);
  s->add_option("--tol", a->tol, "Stop when ||D - D^2||_F < tol")->capture_default_str();
  s->add_option("--max-iter", a->max_iter, "Iteration cap")->capture_default_str();
  s->add_option("--nb", a->nb,
                "Block size of the block-cyclic layout of F, S and D (most square grid)")
      ->capture_default_str();
  a->model.add_to(s);
  s->add_option("--out", a->out,
                "Write D to this .npy file (only on success; default: not written)");
  s->add_option("--json", a->json,
                "Write the results and the per-iteration records as JSON (default: not written)");
  add_trace_option(s, a->trace);
  s->add_option(
      "--checkpoint", a->checkpoint,
      "Write the iteration's state to this file every --checkpoint-every steps (collective "
      "MPI-IO to FILE.tmp, then renamed; a .npy of the iterate plus a text record; "
      "docs/purify.md)");
  s->add_option("--checkpoint-every", a->checkpoint_every, "Steps between checkpoints")
      ->capture_default_str();
  s->add_option(
      "--restart", a->restart,
      "Continue from this checkpoint (same options, ranks and input; checked): the run ends "
      "bitwise as the uninterrupted one");
  s->add_option(
       "--stop-after", a->stop_after,
       "Stop after this many steps (after writing the checkpoint), not converged: exit status 3, "
       "no --out/--json (0 = never)")
      ->capture_default_str();
  s->footer(
      std::string(kRingModelHelp) +
      "\n\nErrors (bad option values, --nocc out of range, F/S shape mismatch, unreadable or "
      "malformed files, unwritable --out/--json, a --restart checkpoint that is truncated or was "
      "written with other options) are printed once as 'tessel: error: ...' and the command "
      "exits with status 2, leaving no output file. --stop-after exits with status 3.");
  return [a]() { return run_purify(*a); };
}

}  // namespace tessel::app

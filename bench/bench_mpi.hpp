#pragma once
// The MPI side of the benchmark drivers (bench_util.hpp has the rest): option parsing on every
// rank, the timed-repetition loop with its commcount region, the sampled check of C, the MPI
// library's name. No global state.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace tessel::bench {

/// Collective over MPI_COMM_WORLD only by what the caller does next. Parses argv into `app` on
/// every rank; on --help or a bad option rank 0 prints the message, MPI_Finalize is called and
/// the exit code is returned (nullopt: parsed, go on). Use:
///   if (auto rc = bench::parse_or_finalize(app, argc, argv)) return *rc;
std::optional<int> parse_or_finalize(CLI::App& app, int argc, char** argv);

/// Local. The first line of MPI_Get_library_version, cut at its first comma
/// ("Open MPI v4.1.4", "MPICH Version:      4.0.2").
std::string mpi_library_version();

/// Collective over MPI_COMM_WORLD. `warmup` untimed and `repeat` timed calls of `multiply`,
/// each after an MPI_Barrier; the timed ones between MPI_Pcontrol(2) (a preloaded commcount
/// resets) and MPI_Pcontrol(0) (pauses), so commcount counts exactly `repeat` multiplies (plus
/// `repeat` zero-byte barriers). Returns each repetition's time on the slowest rank.
std::vector<double> timed_repetitions(int warmup, int repeat,
                                      const std::function<void()>& multiply);

struct SampleCheck;

/// Collective over MPI_COMM_WORLD; the end of a gemm driver's run. Adds "check",
/// "commcount_region" and "mpi" to `j`; rank 0 writes it to `json_path` (when not empty) and
/// reports a failed `check` on stderr, both prefixed with `tool`. Returns on every rank rank 0's
/// `status`, or 1 when the check failed or the file could not be written.
int finish_run(const std::string& tool, const std::string& json_path, nlohmann::json j,
               const SampleCheck& check, int status = 0);

/// The check of sampled entries of C against a direct dot product: the largest
/// |c - sum_l a_il b_lj| / sum_l |a_il b_lj| over every rank's samples.
struct SampleCheck {
  double max_rel_err = 0, tol = 0;
  int samples = 0;
  bool skipped = false, ok = true;

  /// "ok", "FAILED" or "skipped".
  const char* status() const { return skipped ? "skipped" : (ok ? "ok" : "FAILED"); }
  /// {"ok","samples","max_rel_err","tol","skipped"}.
  nlohmann::json to_json() const {
    return {{"ok", ok},
            {"samples", samples},
            {"max_rel_err", max_rel_err},
            {"tol", tol},
            {"skipped", skipped}};
  }
};

/// Collective over MPI_COMM_WORLD. Each rank where `local` holds draws 8 samples from a
/// generator seeded by (seed, rank): `pick(s)` maps a 64-bit draw `s` to one local entry of C
/// as (global row, global column, value), `product(i, j, l)` is a_il b_lj. The tolerance is
/// 64 eps sqrt(k) + 1e-14; a non-finite error fails. With `skip` nothing is sampled.
template <class Pick, class Product>
SampleCheck check_sampled_entries(bool skip, bool local, std::uint64_t seed, long k, Pick pick,
                                  Product product) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  SampleCheck c;
  c.skipped = skip;
  if (!skip && local) {
    std::uint64_t s = seed * 31 + static_cast<std::uint64_t>(rank) + 1;
    for (int t = 0; t < 8; ++t) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const auto [gi, gj, value] = pick(s);
      double ref = 0.0, mag = 0.0;
      for (long l = 0; l < k; ++l) {
        const double p = product(gi, gj, l);
        ref += p;
        mag += std::fabs(p);
      }
      c.max_rel_err = std::max(c.max_rel_err, std::fabs(value - ref) / std::max(mag, 1e-300));
      ++c.samples;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &c.max_rel_err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &c.samples, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  c.tol = 64.0 * 1.1e-16 * std::sqrt(static_cast<double>(k)) + 1e-14;
  c.ok = skip || (c.max_rel_err <= c.tol && std::isfinite(c.max_rel_err));
  return c;
}

}  // namespace tessel::bench

#pragma once
// Helpers shared by the subcommands of the `tessel` command: option checks, generated inputs.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hashed.hpp"
#include "tessel/core/context.hpp"
#include "tessel/core/error.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/dense/machine_model.hpp"
#include "tessel/dense/symm_square_cube.hpp"
#include "tessel/layout/grid_shape.hpp"

namespace tessel::app {

using layout::most_square_grid;  // the CLI's default grid (tessel/layout/grid_shape.hpp)

/// Not collective. The Context options of a command, from the environment (the library reads
/// none): TESSEL_NODE_SIZE, when set, as ContextOptions::node_size (InputError naming it unless
/// a positive integer); TESSEL_MACHINE, when set and not empty, as ContextOptions::machine_file.
ContextOptions context_options_from_environment();

/// Not collective. The machine model of a command: `cli_path` (--machine FILE) if not empty,
/// else the Context's machine file (TESSEL_MACHINE; source "TESSEL_MACHINE=FILE"), else the
/// built-in defaults.
dense::MachineModel machine_model(const Context& ctx, const std::string& cli_path);

/// Pure. The value of a `--grid PRxPC` option (also "PRXPC"): InputError naming the option
/// and the value unless it is two integers >= 1 around an 'x'. The rank count is the caller's
/// check (gemm: PR x PC <= ranks, spgemm: == ranks).
std::pair<int, int> parse_grid_option(const std::string& text);

/// Collective (via Context::agree). Rank 0 checks that the directory of `path` is writable and
/// that `path` is not a directory; throws InputError naming `option` and `path` on every rank.
/// An empty path is not checked.
void check_writable(const Context& ctx, const std::string& option, const std::string& path);

/// `--trace FILE.json` of every subcommand: the run's timeline in the Chrome trace-event format
/// (Context::start_trace / write_trace; docs/trace.md).
void add_trace_option(CLI::App* s, std::string& path);
class TraceRun {
 public:
  /// Collective. Checks that `path` is writable and starts tracing on `ctx` (nothing when
  /// `path` is empty).
  TraceRun(Context& ctx, const std::string& path);
  /// Collective. Writes the trace (when on) and returns `rc`.
  int finish(int rc);

 private:
  Context& ctx_;
  std::string path_;
};

/// `--simulate-compute run|skip` (gemm, ssc, spgemm): skip, in the SMPI build only, skips the
/// local kernels and charges them to the simulated clock (docs/simulation.md); `help`: what skip
/// does in this command (default: the dense commands' GEMMs and shared buffers).
void add_simulate_compute_option(CLI::App* s, std::string& mode, const std::string& help = "");
/// Pure. The Context options of a command run with `--simulate-compute mode`: InputError naming
/// the option for a value other than run or skip, and for skip outside the SMPI build. Under
/// skip, `verify` (the command's --verify) is refused as well: the results are meaningless.
ContextOptions simulate_compute_options(const std::string& mode, bool verify);
/// The line a command prints (rank 0) when its local kernels are skipped.
inline constexpr const char* kSkipNotice =
    "SIMULATED COMPUTE SKIPPED (--simulate-compute skip): the local products were not computed "
    "and the matrices are shared simulated memory, so every result is meaningless by design; "
    "the times (simulated) and the bytes moved are the output\n";
/// kSkipNotice of `tessel spgemm`, whose matrices are real and whose products are sampled.
inline constexpr const char* kSkipNoticeSparse =
    "SIMULATED COMPUTE SKIPPED (--simulate-compute skip): of each batch of block products of one "
    "shape only a sample was computed, the time of the others charged to the simulated clock at "
    "the sample's measured speed, so C is meaningless by design; the times (simulated) and the "
    "bytes moved are the output\n";

/// kSkipNotice of `tessel spgemm --product-times`: no product runs.
inline constexpr const char* kSkipNoticeTable =
    "SIMULATED COMPUTE SKIPPED (--simulate-compute skip --product-times): no block product was "
    "computed, each charged to the simulated clock at its shape's time from the table, so C is "
    "meaningless by design; the times (simulated) and the bytes moved are the output\n";

/// An option value parsed by the library, with the option's name in the error message:
/// InputError "<option> '<value>': expected <expected>".
template <class F>
auto parse_named(const char* option, const std::string& value, const char* expected, F parse) {
  try {
    return parse(value);
  } catch (const InputError&) {
    throw InputError(detail::concat(option, " '", value, "': expected ", expected));
  }
}

/// Collective. io::read_npy<double> into a block-cyclic layout, with the option's name in front
/// of any error: InputError "--fock F.npy: <what read_npy says>" on every rank.
dense::DistMatrix<double> read_npy_option(
    const Context& ctx, const std::string& option, const std::string& path,
    const std::function<layout::Layout(std::int64_t, std::int64_t)>& make_layout);

/// Pure. Parses "--n-dup": "auto" -> 0, an integer >= 1 -> itself; InputError naming the
/// option and the value otherwise.
int parse_n_dup(const std::string& value);

/// The SymmSquareCube options of the command line (`tessel purify`, `tessel ssc`), checked on
/// every rank (all ranks hold the same arguments): --algorithm (3, 4, 5, 2.5d), --n-dup
/// (auto or >= 1), --n-t (>= 1 byte), --active-ranks (0 = all, else 1 .. ranks),
/// --replication (0 = automatic, else >= 1; --algorithm 2.5d only), --collectives (mpi or
/// p2p). Throws InputError or
/// GridError naming the option and its value.
struct SscArgs {
  std::string algorithm = "5", n_dup = "auto", collectives = "mpi", machine;
  /// --n-t; not given: the machine file's p2p_segment_bytes when there is one (--machine,
  /// else TESSEL_MACHINE), else 64 KiB.
  std::optional<std::int64_t> n_t;
  int active_ranks = 0, replication = 0;
  dense::SscOptions options(const Context& ctx) const;
  /// Registers --algorithm, --n-dup, --n-t, --active-ranks, --replication, --collectives,
  /// --machine.
  void add_to(CLI::App* s);
};

/// The built-in Fock matrix of `tessel purify` and `tessel ssc`: a ring of n sites (n even)
/// with on-site energies -gap/2 on even and +gap/2 on odd sites and hopping -t between ring
/// neighbours (a two-site unit cell: the ionic / Rice-Mele chain without bond dimerisation).
/// In the basis of the n/2 Bloch waves, kappa = 2 pi m / (n/2), m = 0 .. n/2-1, each 2 x 2 block
/// [[-g/2, -t (1 + e^{-i kappa})], [-t (1 + e^{i kappa}), g/2]] has the eigenvalues
///   E = +-sqrt(g^2/4 + 4 t^2 cos^2(kappa/2)).
struct RingModel {
  std::int64_t n = 1024;
  double gap = 0.2;      ///< g (Eh): the on-site energy difference; the band gap is >= g
  double hopping = 1.0;  ///< t (Eh)

  /// Pure. Element (i, j) of F (n = 2: the two bonds of the ring join the same pair: -2t).
  double element(std::int64_t i, std::int64_t j) const;
  /// Not collective. Fills this rank's entries of F (any layout; no communication).
  void fill(dense::DistMatrix<double>& f) const;
  /// Pure. The n eigenvalues, ascending, from the formula above.
  std::vector<double> spectrum() const;
  /// Pure. Checks n >= 2 and even, gap > 0 finite, hopping finite; InputError naming the
  /// options --n, --gap, --hopping.
  void validate() const;
  /// Registers --n, --gap, --hopping on `s` with their defaults (`what`: "sites" help text).
  void add_to(CLI::App* s);
  /// Pure. One line: "ring model: n = .., g = .. Eh, t = .. Eh".
  std::string describe() const;
};

/// The model's description for --help (the formula of the spectrum).
extern const char* const kRingModelHelp;

}  // namespace tessel::app

#pragma once
// Private to src/sparse: the executors of the block-sparse multiply. multiply.cpp prepares the
// operands (conformed to the plan's image distribution) and calls one of them; each returns
// this rank's product panel alpha-free (C_own += op(A) op(B) over all images), to be merged
// into C by merge_into.
#include <map>
#include <optional>
#include <vector>

#include "spgemm_panels.hpp"
#include "tessel/comm/window.hpp"
#include "tessel/core/build.hpp"
#include "tessel/core/context.hpp"
#include "tessel/core/timer.hpp"
#include "tessel/layout/grid2d.hpp"
#include "tessel/sparse/multiply.hpp"

namespace tessel::sparse {

/// What a cache keeps between multiplies: Cannon's grid communicators, rma25d's
/// sub-communicators and windows (keyed by the Context's communicator, the grid and L).
struct SpMultiplyCache::State {
  // Cannon
  MPI_Comm grid_comm = MPI_COMM_NULL;
  const CommLedger* grid_ledger = nullptr;
  std::optional<layout::ProcessGrid2D> grid;
  // rma25d
  MPI_Comm key_comm = MPI_COMM_NULL;
  const CommLedger* key_ledger = nullptr;  // a new Context may reuse a freed handle
  int pr = 0, pc = 0, layers = 0, creations = 0;
  comm::Comm acomm{MPI_COMM_NULL, nullptr}, bcomm{MPI_COMM_NULL, nullptr};
  comm::Window<std::int64_t> a_meta, b_meta;
  comm::Window<double> a_data, b_data;
  MemoryCharge windows;  // the four windows' bytes (MemKind::Windows)
  // rma25d, retain_sparsity: my C pattern as last sent to the other layers of my fibre, and
  // the patterns last received from them (by context rank). A pattern equal to the one sent
  // last goes as its 16-byte header only. Cleared when the grid, L or communicator changes.
  bool pattern_sent_valid = false;
  detail::CWire pattern_sent;
  std::map<int, detail::CWire> pattern_from;
  /// True from a multiply's set-up until it completed: still true at the next multiply when
  /// the last one threw midway, and then every rank drops its patterns (the set-up's allreduce
  /// carries the flag), so the caches never disagree.
  bool in_flight = false;
};

}  // namespace tessel::sparse

namespace tessel::sparse::detail {

/// Ledger phases (nested under the caller's phase).
inline constexpr const char* kPhaseA = "spgemm/A panels";
inline constexpr const char* kPhaseB = "spgemm/B panels";
inline constexpr const char* kPhaseC = "spgemm/C panels";
/// rma25d, retain_sparsity, L > 1: C's pattern sent by each owner to the other layers.
inline constexpr const char* kPhaseCPattern = "spgemm/C pattern";
inline constexpr const char* kPhaseSetup = "spgemm/setup";
inline constexpr const char* kPhaseConform = "spgemm/conform";

/// op(A) (rows as C, k blocks on process column kv / a) and op(B) (k blocks on process row
/// kv / b, columns as C), ready for the plan.
struct SpOperands {
  const BlockSparseMatrix<double>* a = nullptr;
  const BlockSparseMatrix<double>* b = nullptr;
  std::vector<int> kv;  // image of every k block
  const BlockSizes* rows = nullptr;
  const BlockSizes* inner = nullptr;
  const BlockSizes* cols = nullptr;
};

struct ExecOptions {
  /// The on-the-fly filter's threshold of every block row of C (row_thresholds), null: exact.
  const double* row_thr = nullptr;
  /// rma25d: blocks of a foreign partial C panel whose norm bound is below this are not sent
  /// (eps / (L |alpha|): the L - 1 dropped parts of a block of alpha C sum to < eps). Only with
  /// SpMultiplyOptions::drop_partial_blocks (the result then depends on L).
  double partial_drop = 0;
  /// The local kernel's mode: Symbolic for SpMultiplyOptions::comm_only, Sampled under the
  /// simulated build's ComputeMode::Skip (the executor charges the products not run after
  /// every kernel call: charge_skipped_products).
  KernelRun kernel;
  const CAccumulator* allowed = nullptr;  // retain_sparsity: C's own pattern
  /// retain_sparsity: C (rma25d with L > 1 sends its local pattern to the other layers first,
  /// so they neither compute nor send partial blocks outside it).
  const BlockSparseMatrix<double>* retain_c = nullptr;
  double progress_poll = 0;  // seconds between TickProgress polls, from SpMultiplyOptions; 0 = none
  int cannon_pieces = 1;     // Cannon: pieces per image (SpMultiplyOptions::cannon_pieces)
  RowRange a_rows;           // Cannon: the block rows of A (and C) of this pass (row_panels)
};

/// SpMultiplyOptions::cannon_pieces at most: more pieces only add messages.
constexpr int kMaxCannonPieces = 64;
/// SpMultiplyOptions::row_panels at most: each panel moves all of B once more.
constexpr int kMaxRowPanels = 64;
/// cannon_pieces = auto: a piece of an image holds at most about this many bytes. Every piece
/// costs a pass over the accumulator's rows and its own messages (4 pieces of ~30 MB images
/// made a 4-rank multiply of generated water:600 with atomic blocks ~10% slower than whole
/// images, 2026-11-28, loaded machine); above a few tens of MB per image the memory saved
/// matters more (water:1000 in 32-row tiles at 4 ranks: 55 MB, 4 pieces).
constexpr std::int64_t kAutoPieceBytes = std::int64_t{16} << 20;
constexpr int kMaxAutoPieces = 16;

struct ExecResult {
  /// This rank's C panel, sum over all images (not scaled by alpha); merge_into reads it in
  /// place. Empty when nothing was multiplied (alpha = 0).
  std::optional<CAccumulator> product;
  KernelStats stats;
  std::int64_t partial_blocks_dropped = 0;
  bool windows_created = false;
};

/// Not collective. Advances the simulated clock by the products the kernel sampled but did not
/// run (KernelStats::pending_s, KernelMode::Sampled; nothing when there are none): called by
/// the executors after each multiply_images, where the products would have run.
inline void charge_skipped_products(KernelStats& s) {
  if (s.pending_s <= 0) return;
  sim::charge_seconds(s.pending_s);
  s.charged_s += s.pending_s;
  s.pending_s = 0;
}

/// The local kernel's progress hook (multiply_images calls it after every block row): at most
/// every `interval` seconds (0: never), one test pass over the requests the tick posted (`rs`,
/// may be null) and, when `c` is not null, one MPI_Iprobe on `c` (comm::throw_if_failed: it also
/// notices a peer's failure). Without `c` the hook stops once `rs` completed (point-to-point
/// transfers need no more calls); with `c` it goes on (other ranks' reads from my windows). Without an
/// asynchronous progress thread (the default of Open MPI and MPICH) a rendezvous message moves,
/// and a one-sided read from this rank's window is served (Open MPI's osc pt2pt, MPICH), only
/// while the ranks involved are inside MPI calls: without these calls the next tick's panels
/// would move only after the multiply, and communication would not overlap computation.
/// `hooks` (may be null): its test point kPointPoll is hit before every poll that calls MPI
/// (comm::TestSettings::at_point; tests count the polls).
///
/// In the SMPI build (kSimulatedMpi) the hook is off: the simulator moves messages and serves
/// one-sided reads without the ranks' MPI calls (as a network with RDMA would), and a clock
/// read per block row is an MPI call there (MPI_Wtime), which made a 1,024-rank simulation
/// spend its time in them. The bytes are the same (the polls only test).
class TickProgress {
 public:
  static constexpr const char* kPointPoll = "spgemm: progress poll";
  TickProgress(comm::RequestSet* rs, MPI_Comm c, double interval, const comm::Comm* hooks = nullptr)
      : rs_(rs), c_(c), interval_(interval), on_(interval > 0 && !kSimulatedMpi), hooks_(hooks) {}
  void operator()() {
    if (!on_) return;
    const double now = clock_.seconds();
    if (now < next_) return;  // the first call polls at once
    next_ = now + interval_;
    if (hooks_ && (c_ != MPI_COMM_NULL || (rs_ && !rs_->empty()))) hooks_->test_point(kPointPoll);
    const bool done = !rs_ || rs_->test_all();
    if (c_ != MPI_COMM_NULL)
      comm::throw_if_failed(c_);
    else if (done)
      on_ = false;
  }

 private:
  comm::RequestSet* rs_;
  MPI_Comm c_;
  double interval_;
  bool on_;
  const comm::Comm* hooks_;
  Stopwatch clock_;
  double next_ = 0;
};

/// Collective over ctx. Seed Algorithm 1 (cannon.cpp).
ExecResult run_cannon(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops,
                      const ExecOptions& opt, SpMultiplyCache::State* cache);
/// Collective over ctx. Seed Algorithm 2 (rma25d.cpp). `cache` may be null.
ExecResult run_rma25d(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops,
                      const ExecOptions& opt, SpMultiplyCache::State* cache);

/// Collective over `c`. The sizes of every member's images (`mine.size()` each, the same count
/// on every member), member by member: one allgather of two counts per image. Cannon's image
/// directories and rma25d's window directory.
inline std::vector<ImageSize> gather_image_sizes(const comm::Comm& c,
                                                 const std::vector<ImageSize>& mine) {
  std::vector<std::int64_t> send;
  for (const auto& s : mine) send.insert(send.end(), {s.nblocks, s.ndata});
  std::vector<std::int64_t> all(send.size() * static_cast<std::size_t>(c.size()));
  c.allgather(send.data(), static_cast<int>(send.size()), all.data());
  std::vector<ImageSize> out(all.size() / 2);
  for (std::size_t x = 0; x < out.size(); ++x) out[x] = {all[2 * x], all[2 * x + 1]};
  return out;
}

}  // namespace tessel::sparse::detail

#pragma once
// The memory accounting of a solver run for the commands (`tessel density`): the peak of the
// Context's MemoryLedger per solver stage, the largest matrix, and the --memory budget.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/solvers/density.hpp"

namespace tessel::app {

/// Not collective. This process's peak resident memory so far (getrusage ru_maxrss), bytes.
double maxrss_bytes();

/// Per rank: the accounted peak of each stage (max over its steps) with its parts.
struct StagePeak {
  std::string stage;
  double total = 0, matrices = 0, buffers = 0, windows = 0;  // max over ranks
  /// The local sizes of the matrices alive at the peak, largest first: the k-th is the max
  /// over ranks of each rank's k-th largest (zeros dropped).
  std::vector<double> alive;
};

/// The solve's peak per rank predicted from its largest input matrix X (local bytes of H or S as
/// the solver holds them, max over ranks), in units of X, for Cannon in `row_panels` panels.
/// The iterations hold five matrices the size of the iterate (H, S, Z = S^-1/2, X^2 and Y in
/// TRS4, whose X takes H~'s storage), the iterate at least as large as the inputs; a multiply
/// holds B's images (1.25 with Cannon's pieces), the panels of C done so far ((R - 1) / R) and,
/// per panel, A's images (1.25 / R) and the accumulator (the product before the final filter,
/// about 3 / R). One pass (R = 1): 10.5. Measured 2026-11-28 with --generate water:N, TRS4,
/// eps 1e-6, 4 ranks, before H~ shared X's storage: 11.4 at N = 4,000 (X and H the same size
/// in tiles), 417 MB against 408 MB predicted at N = 1,000. `spilled` (--spill): H and S are
/// on disk whenever the solver does not read them: the two of the five fewer.
double peak_per_largest_input(int row_panels, bool spilled = false);

class MemoryWatch {
 public:
  /// `budget_bytes` <= 0: no budget. Not collective.
  MemoryWatch(Context& ctx, double budget_bytes);
  /// Collective (call it on every rank at the same points: the solvers' on_step is). Records
  /// this step's peak under its stage; with a budget, throws InputError on every rank when the
  /// peak so far (accounted, or the process's ru_maxrss) exceeds it, or when the next step,
  /// extrapolated from the growth of the iterate's blocks, would.
  void step(const solvers::IterationInfo& s);
  /// Collective, before the solve: the predicted peak per rank (max over ranks; see
  /// kPeakPerLargestInput), from the largest of `inputs` (this rank's local bytes). Throws when
  /// it, or what is already held plus the first products' buffers (one more copy of the largest
  /// matrix for the product, one for its accumulator), or ru_maxrss exceeds the budget.
  double check_start(const char* what, std::int64_t largest_input, int row_panels,
                     bool spilled = false);
  /// Collective. The per-stage peaks, max over ranks (the stages in order of first appearance).
  std::vector<StagePeak> stages() const;
  /// Collective. Max over ranks of the largest single matrix seen.
  double largest_matrix() const;

 private:
  void over(const std::string& where, double need, const std::string& why) const;
  Context& ctx_;
  double budget_;
  std::vector<std::string> order_;
  std::map<std::string, std::vector<double>> peak_;  // total, matrices, buffers, windows, alive
  std::string last_stage_;  // the previous step's stage, iteration and X's blocks
  int last_iteration_ = -1;
  std::int64_t last_blocks_ = 0;
};

}  // namespace tessel::app

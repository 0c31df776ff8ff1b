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
/// The iterations hold seven matrices the size of the iterate at their peak (TRS4: H, S, Z =
/// S^-1/2, X, X^2, Y and the product being made; the final McWeeny steps: H, S, Z, P, PS, PSP
/// and the product), the iterate at least as large as the inputs; a multiply holds B's images
/// (1.25 with Cannon's pieces), the panels of C done so far ((R - 1) / R) and, per panel, A's
/// images (1.25 / R) and the accumulator (the product before the final filter, about 3 / R).
/// One pass (R = 1): 12.5. Measured (the run's own accounting, matrices alive at the peak):
/// seven at --generate water:8000, TRS4, R = 4 (2026-11-28); five with --spill at water:4000,
/// R = 4 (2026-12-07; the model counted five and three until then, and that run's accounted
/// peak was 1.65x its prediction, 1.68 against 1.01 GB, the iterate 1.5-1.7x the input: the
/// prediction is a lower bound where the iterate fills in beyond the inputs, which the
/// per-step check of MemoryWatch then sees). `spilled` (--spill): H and S are on disk whenever
/// the solver does not read them: two of the seven fewer.
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

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

class MemoryWatch {
 public:
  /// `budget_bytes` <= 0: no budget. Not collective.
  MemoryWatch(Context& ctx, double budget_bytes);
  /// Collective (call it on every rank at the same points: the solvers' on_step is). Records
  /// this step's peak under its stage; with a budget, throws InputError on every rank when the
  /// peak so far (accounted, or the process's ru_maxrss) exceeds it, or when the next step,
  /// extrapolated from the growth of the iterate's blocks, would.
  void step(const solvers::IterationInfo& s);
  /// Collective, before the solve: throws when what is already held plus the first products'
  /// buffers (one more copy of the largest matrix for the product, one for its accumulator)
  /// exceeds the budget.
  void check_start(const char* what);
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
  std::int64_t last_blocks_ = 0;
};

}  // namespace tessel::app

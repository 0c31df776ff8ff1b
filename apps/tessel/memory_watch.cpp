#include "memory_watch.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>

#include "report.hpp"
#include "tessel/core/memory.hpp"

namespace tessel::app {

namespace {
// Per stage: total, matrices, buffers, windows, then the sizes of the matrices alive.
constexpr std::size_t kParts = 4 + MemoryLedger::kPeakMatrices;
}  // namespace

double maxrss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;  // kB on Linux
}

MemoryWatch::MemoryWatch(Context& ctx, double budget_bytes) : ctx_(ctx), budget_(budget_bytes) {
  ctx_.ledger().memory().reset_peak();
}

void MemoryWatch::over(const std::string& where, double need, const std::string& why) const {
  throw InputError(fmt::format(
      "--memory {:g} MiB: {} needs {} per rank (max over ranks; {}): more than the budget. "
      "Give the run more memory per rank (--memory, more ranks) or a larger --eps",
      budget_ / (1024.0 * 1024.0), where, human_bytes(need), why));
}

double peak_per_largest_input(int row_panels, bool spilled) {
  constexpr double kMatrices = 7, kSpilled = 2, kBImages = 1.25, kAImages = 1.25, kAccumulator = 3;
  const double r = row_panels;
  return kMatrices - (spilled ? kSpilled : 0.0) + kBImages + (r - 1) / r +
         (kAImages + kAccumulator) / r;
}

double MemoryWatch::check_start(const char* what, std::int64_t largest_input, int row_panels,
                                bool spilled) {
  const auto& m = ctx_.ledger().memory();
  const double per = peak_per_largest_input(row_panels, spilled);
  double v[3] = {static_cast<double>(m.current() + 2 * m.largest_matrix()), maxrss_bytes(),
                 per * static_cast<double>(largest_input)};
  ctx_.comm().allreduce(v, 3, MPI_MAX);
  if (budget_ > 0 && v[2] > budget_)
    over(what, v[2],
         fmt::format("predicted with {} row panel(s): {:.1f} x the largest input matrix as the "
                     "solver holds it, {}; more --row-panels cut the multiply's buffers{}",
                     row_panels, per, human_bytes(v[2] / per),
                     spilled ? "" : ", --spill DIR keeps H and S on disk (two matrices fewer)"));
  if (budget_ > 0 && v[0] > budget_)
    over(what, v[0],
         "predicted: the matrices held now plus a product and its accumulator the size of the "
         "largest");
  if (budget_ > 0 && v[1] > budget_) over(what, v[1], "measured: ru_maxrss");
  return v[2];
}

void MemoryWatch::step(const solvers::IterationInfo& s) {
  // The step's freed buffers go back to the kernel before the next step allocates: glibc keeps
  // freed heap memory (below its mmap threshold) resident, and the next step's allocations,
  // of other sizes, fragment it further, so the resident size drifted above what is alive
  // (water:2000 TRS4 at 4 ranks, 2 row panels: ru_maxrss 1.22 GB against 1.0 GB accounted).
  return_free_heap();
  auto& m = ctx_.ledger().memory();
  const auto& k = m.peak_by_kind();
  std::vector<double> v = {static_cast<double>(m.peak()), static_cast<double>(k[0]),
                           static_cast<double>(k[1]), static_cast<double>(k[2]), maxrss_bytes()};
  auto& p = peak_[s.stage];
  if (p.empty()) {
    order_.push_back(s.stage);
    p.assign(kParts, 0.0);
  }
  if (v[0] > p[0]) {
    std::copy(v.begin(), v.begin() + 4, p.begin());
    std::fill(p.begin() + 4, p.end(), 0.0);
    const auto& alive = m.peak_matrices();
    for (std::size_t i = 0; i < alive.size() && 4 + i < kParts; ++i)
      p[4 + i] = static_cast<double>(alive[i]);
  }
  m.reset_peak();
  if (budget_ <= 0) return;
  ctx_.comm().allreduce(v.data(), static_cast<int>(v.size()), MPI_MAX);
  const std::string where =
      fmt::format("stage '{}' step {} (X: {} blocks)", s.stage, s.iteration, s.blocks);
  if (v[0] > budget_) over(where, v[0], "accounted: matrices, multiply buffers and windows");
  if (v[4] > budget_) over(where, v[4], "measured: ru_maxrss");
  // The next step: this step's peak grown as the iterate's blocks grew over this step. Only
  // from one iterate to the next of the same stage: a stage's step 0 is its seed (the identity,
  // or H scaled), whose blocks say nothing of the iterates' fill (water:8000's inverse sqrt
  // went from 1,500 to 155,340 blocks in step 1 while its peak stayed that of S's products:
  // a growth of 104x predicted 334 GB for a run that needs 4 GB).
  const bool iterate_to_iterate = s.stage == last_stage_ && last_iteration_ >= 1;
  const double growth = iterate_to_iterate && last_blocks_ > 0 && s.blocks > last_blocks_
                            ? static_cast<double>(s.blocks) / static_cast<double>(last_blocks_)
                            : 1.0;
  last_stage_ = s.stage;
  last_iteration_ = s.iteration;
  last_blocks_ = s.blocks;
  if (v[0] * growth > budget_)
    over(fmt::format("the step after {}", where), v[0] * growth,
         fmt::format("predicted: this step's {} grown {:.3f}x with X's blocks", human_bytes(v[0]),
                     growth));
}

std::vector<StagePeak> MemoryWatch::stages() const {
  std::vector<double> all;
  for (const auto& st : order_) {
    const auto& p = peak_.at(st);
    all.insert(all.end(), p.begin(), p.end());
  }
  ctx_.comm().allreduce(all.data(), static_cast<int>(all.size()), MPI_MAX);
  std::vector<StagePeak> out;
  for (std::size_t i = 0; i < order_.size(); ++i) {
    const double* q = all.data() + kParts * i;
    StagePeak sp{order_[i], q[0], q[1], q[2], q[3], {}};
    for (std::size_t j = 4; j < kParts && q[j] > 0; ++j) sp.alive.push_back(q[j]);
    out.push_back(std::move(sp));
  }
  return out;
}

double MemoryWatch::largest_matrix() const {
  return ctx_.comm().allreduce_value(static_cast<double>(ctx_.ledger().memory().largest_matrix()),
                                     MPI_MAX);
}

}  // namespace tessel::app

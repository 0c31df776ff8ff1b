#include "tessel/core/memory.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "tessel/core/build.hpp"

namespace tessel {

void return_free_heap() {
#if defined(__GLIBC__)
  if constexpr (!kSimulatedMpi) malloc_trim(0);
#endif
}

const char* to_string(MemKind k) {
  switch (k) {
    case MemKind::Matrix: return "matrices";
    case MemKind::Buffers: return "buffers";
    case MemKind::Windows: return "windows";
  }
  return "?";
}

void MemoryLedger::add(MemKind k, std::int64_t bytes) {
  now_[static_cast<std::size_t>(k)] += bytes;
  total_ += bytes;
  if (total_ > peak_) {
    peak_ = total_;
    snapshot_peak();
  }
  std::int64_t& p = phase_peak_[phase_];
  if (total_ > p) p = total_;
}

void MemoryLedger::set_phase(const std::string& p) {
  phase_ = p;
  std::int64_t& q = phase_peak_[phase_];
  if (total_ > q) q = total_;
}

void MemoryLedger::reset_peak() {
  peak_ = total_;
  snapshot_peak();
  phase_peak_.clear();
}

void MemoryLedger::matrix_changed(std::int64_t from, std::int64_t to) {
  if (from > 0) {
    auto it = live_.find(from);
    if (it != live_.end()) live_.erase(it);
  }
  if (to > 0) live_.insert(to);
}

void MemoryLedger::snapshot_peak() {
  at_peak_ = now_;
  peak_phase_ = phase_;
  at_peak_matrices_.clear();
  for (auto it = live_.begin(); it != live_.end() && at_peak_matrices_.size() < kPeakMatrices; ++it)
    at_peak_matrices_.push_back(*it);
}

}  // namespace tessel

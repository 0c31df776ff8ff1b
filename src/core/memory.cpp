#include "tessel/core/memory.hpp"

namespace tessel {

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
    at_peak_ = now_;
    peak_phase_ = phase_;
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
  at_peak_ = now_;
  peak_phase_ = phase_;
  phase_peak_.clear();
}

}  // namespace tessel

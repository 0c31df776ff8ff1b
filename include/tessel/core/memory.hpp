#pragma once
/// @file memory.hpp
/// MemoryLedger: the bytes tessel holds on this rank (matrices, the buffers of a multiply or an exchange, one-sided
/// windows), current and peak, with the ledger phase each peak was reached in; MemoryCharge:
/// the RAII holder of one object's charge. Pure bookkeeping: nothing is allocated through it.
/// One per CommLedger (so per Context); not thread safe.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tessel {

enum class MemKind : int { Matrix = 0, Buffers = 1, Windows = 2 };
inline constexpr int kMemKinds = 3;
/// "matrices", "multiply buffers", "windows".
const char* to_string(MemKind k);

/// Not collective. Returns the heap's free pages to the kernel (glibc's malloc_trim; nothing
/// with another C library): glibc keeps freed memory below its mmap threshold resident. Does
/// nothing in the SMPI build, where every simulated rank shares the simulator's one heap, so a
/// trim would walk (and charge one rank the CPU time of) the free pages of all of them.
void return_free_heap();

class MemoryLedger {
 public:
  using ByKind = std::array<std::int64_t, kMemKinds>;
  /// Not collective. Adds `bytes` (negative: released) of kind k in the current phase.
  void add(MemKind k, std::int64_t bytes);
  std::int64_t current() const { return total_; }
  const ByKind& current_by_kind() const { return now_; }
  /// The highest current() since the last reset_peak(), the kinds at that moment and the
  /// phase it was reached in.
  std::int64_t peak() const { return peak_; }
  const ByKind& peak_by_kind() const { return at_peak_; }
  const std::string& peak_phase() const { return peak_phase_; }
  /// The largest single matrix charge (one matrix's local storage) seen so far.
  std::int64_t largest_matrix() const { return largest_matrix_; }
  /// Not collective. A matrix's charge became `bytes` (MemoryCharge::set calls it).
  void note_matrix(std::int64_t bytes) {
    if (bytes > largest_matrix_) largest_matrix_ = bytes;
  }
  /// Not collective. One matrix's charge changed from `from` to `to` bytes (MemoryCharge::set
  /// calls it before add()): keeps the sizes of the matrices alive, so a peak can say which
  /// matrices it held.
  void matrix_changed(std::int64_t from, std::int64_t to);
  /// The local sizes of the matrices alive at the peak, largest first (at most kPeakMatrices).
  static constexpr std::size_t kPeakMatrices = 12;
  const std::vector<std::int64_t>& peak_matrices() const { return at_peak_matrices_; }
  /// The highest current() reached inside each phase (by full phase name, "" outside any).
  const std::map<std::string, std::int64_t>& phase_peaks() const { return phase_peak_; }
  /// Not collective. Starts a new peak measurement (and new phase peaks) from current().
  void reset_peak();
  /// Set by CommLedger when its phase changes (the phase's peak starts at current()).
  void set_phase(const std::string& p);

 private:
  void snapshot_peak();
  ByKind now_{}, at_peak_{};
  std::multiset<std::int64_t, std::greater<>> live_;  // sizes of the matrices alive (> 0 bytes)
  std::vector<std::int64_t> at_peak_matrices_;
  std::int64_t total_ = 0, peak_ = 0, largest_matrix_ = 0;
  std::string phase_, peak_phase_;
  std::map<std::string, std::int64_t> phase_peak_;
};

/// RAII: `bytes` of one kind charged to a MemoryLedger while alive (set() changes them). A copy
/// charges the same bytes again (as the copied object's storage does); a move transfers them.
/// It keeps the ledger alive (shared), so an object may outlive its Context.
class MemoryCharge {
 public:
  MemoryCharge() = default;
  MemoryCharge(std::shared_ptr<MemoryLedger> l, MemKind k, std::int64_t bytes = 0)
      : l_(std::move(l)), k_(k) {
    set(bytes);
  }
  ~MemoryCharge() { set(0); }
  MemoryCharge(const MemoryCharge& o) : l_(o.l_), k_(o.k_) { set(o.bytes_); }
  MemoryCharge& operator=(const MemoryCharge& o) {
    if (this != &o) {
      set(0);
      l_ = o.l_;
      k_ = o.k_;
      set(o.bytes_);
    }
    return *this;
  }
  MemoryCharge(MemoryCharge&& o) noexcept : l_(std::move(o.l_)), k_(o.k_), bytes_(o.bytes_) {
    o.bytes_ = 0;
  }
  MemoryCharge& operator=(MemoryCharge&& o) noexcept {
    if (this != &o) {
      set(0);
      l_ = std::move(o.l_);
      k_ = o.k_;
      bytes_ = o.bytes_;
      o.bytes_ = 0;
    }
    return *this;
  }
  /// Not collective. The charge becomes `bytes`.
  void set(std::int64_t bytes) {
    if (l_ && bytes != bytes_) {
      if (k_ == MemKind::Matrix) l_->matrix_changed(bytes_, bytes);
      l_->add(k_, bytes - bytes_);
      if (k_ == MemKind::Matrix) l_->note_matrix(bytes);
    }
    bytes_ = bytes;
  }
  std::int64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<MemoryLedger> l_;
  MemKind k_ = MemKind::Matrix;
  std::int64_t bytes_ = 0;
};

/// Bytes of a vector's storage (its capacity).
template <class V>
std::int64_t capacity_bytes(const V& v) {
  return static_cast<std::int64_t>(v.capacity() * sizeof(typename V::value_type));
}

}  // namespace tessel

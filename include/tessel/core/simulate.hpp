#pragma once
/// @file simulate.hpp
/// The compute mode of a run: local kernels run for real, or (the SMPI build only, for
/// studying scale on a simulated cluster: docs/simulation.md) they are skipped and their flops
/// charged to the simulated clock, with the large buffers shared by all simulated ranks so
/// that memory stays small. Results are then meaningless by design. The mode is a value of
/// the Context (ContextOptions::compute), never a global; this file is the one place where
/// the SMPI calls behind it are made (src/core/simulate.cpp).
#include <cstddef>
#include <string>
#include <utility>

#include "tessel/core/build.hpp"
#include "tessel/core/uninit_vector.hpp"

namespace tessel {

/// How local kernels (the dense local GEMMs) run.
enum class ComputeMode {
  Run,   ///< for real
  Skip,  ///< SMPI build only: not run, their flops charged at the simulated host's speed;
         ///< big buffers (Storage) shared by all ranks: every result is meaningless
};

/// Pure. "run" or "skip"; `what` names the option in the errors. Throws InputError for any
/// other value, and for "skip" in a build that is not the SMPI build.
ComputeMode parse_compute_mode(const std::string& s, const std::string& what);
std::string to_string(ComputeMode m);

namespace sim {
/// Not collective. Advances the calling rank's simulated clock by `flops` at its simulated
/// host's speed (SMPI's smpi_execute_flops). Throws Error outside the SMPI build.
void charge_flops(double flops);
/// Not collective. Advances the calling rank's simulated clock by `seconds` of computation on
/// this machine, scaled as SMPI scales measured computation (smpi_execute: seconds times
/// smpi/host-speed flops). Throws Error outside the SMPI build.
void charge_seconds(double seconds);
/// Not collective. `bytes` of memory that every simulated rank's allocation shares
/// (SMPI_SHARED_MALLOC: contents meaningless); free with shared_free. SMPI build only.
void* shared_malloc(std::size_t bytes);
void shared_free(void* p) noexcept;
}  // namespace sim

/// An owned, uninitialised buffer of n elements of T: heap memory (ComputeMode::Run), or
/// shared simulated memory (ComputeMode::Skip; its contents are meaningless). Copying copies
/// the contents (Run) or makes a new shared buffer of the same size (Skip). Not collective.
template <class T>
class Storage {
 public:
  Storage() = default;
  Storage(ComputeMode mode, std::size_t n) : mode_(mode) { resize(n); }
  Storage(const Storage& o) : mode_(o.mode_), own_(o.own_) {
    if (o.shared_) resize(o.n_);
  }
  Storage(Storage&& o) noexcept { swap(o); }
  Storage& operator=(Storage o) noexcept {
    swap(o);
    return *this;
  }
  ~Storage() { release(); }

  /// Discards the contents; n elements, uninitialised.
  void resize(std::size_t n) {
    if (mode_ == ComputeMode::Run) {
      own_.resize(n);
      return;
    }
    if (n == n_) return;
    release();
    if (n > 0) shared_ = static_cast<T*>(sim::shared_malloc(n * sizeof(T)));
    n_ = n;
  }
  void clear() noexcept {
    release();
    own_.clear();
    own_.shrink_to_fit();
  }
  T* data() { return shared_ ? shared_ : own_.data(); }
  const T* data() const { return shared_ ? shared_ : own_.data(); }
  T* begin() { return data(); }
  T* end() { return data() + size(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  std::size_t size() const { return shared_ ? n_ : own_.size(); }
  bool empty() const { return size() == 0; }
  ComputeMode mode() const { return mode_; }

 private:
  void swap(Storage& o) noexcept {
    std::swap(mode_, o.mode_);
    own_.swap(o.own_);
    std::swap(shared_, o.shared_);
    std::swap(n_, o.n_);
  }
  void release() noexcept {
    if (shared_) sim::shared_free(shared_);
    shared_ = nullptr;
    n_ = 0;
  }
  ComputeMode mode_ = ComputeMode::Run;
  UninitVector<T> own_;  // Run
  T* shared_ = nullptr;  // Skip
  std::size_t n_ = 0;    // Skip: elements of shared_
};

}  // namespace tessel

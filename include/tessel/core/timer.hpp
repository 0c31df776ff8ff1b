#pragma once
/// @file timer.hpp
/// Stopwatch: the one clock of tessel. Every elapsed time the library and the `tessel` command
/// report or use (step and phase seconds, the overlap split of the Hamiltonian apply, trace
/// timestamps, polling deadlines, CLI wall times) is read from it, never from MPI_Wtime or a
/// std::chrono clock of its own. It is std::chrono::steady_clock: monotonic, per process, not
/// synchronised across ranks (reduce with MPI_MAX for a wall time over ranks). Not collective;
/// no MPI; not thread safe. In the SMPI build (TESSEL_SMPI, docs/simulation.md) it is the
/// simulated clock instead (MPI_Wtime, SMPI's simulated seconds; the only MPI call here): a
/// real clock would time the simulator, not the simulated cluster.
#include <chrono>
#ifdef TESSEL_SMPI
#include <mpi.h>
#endif

namespace tessel {

#ifdef TESSEL_SMPI
/// The simulated clock of SMPI as a std::chrono clock (MPI_Wtime; steady in simulated time).
struct SimulatedClock {
  using duration = std::chrono::duration<double>;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<SimulatedClock>;
  static constexpr bool is_steady = true;
  static time_point now() { return time_point(duration(MPI_Wtime())); }
};
#endif

class Stopwatch {
 public:
  /// Starts now.
  Stopwatch() : t0_(Clock::now()) {}
  /// Seconds since the start.
  double seconds() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  /// Microseconds since the start (the trace's unit).
  double microseconds() const {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0_).count();
  }
  /// Seconds since the start; the start becomes now (per-step times of an iteration).
  double lap() {
    const auto t = Clock::now();
    const double s = std::chrono::duration<double>(t - t0_).count();
    t0_ = t;
    return s;
  }
  /// The start becomes now.
  void restart() { t0_ = Clock::now(); }

 private:
#ifdef TESSEL_SMPI
  using Clock = SimulatedClock;
#else
  using Clock = std::chrono::steady_clock;
#endif
  Clock::time_point t0_;
};

/// RAII: adds the seconds of its lifetime to `*total` (accumulated time of a repeated step).
class ScopedSeconds {
 public:
  explicit ScopedSeconds(double* total) : total_(total) {}
  ~ScopedSeconds() { *total_ += sw_.seconds(); }
  ScopedSeconds(const ScopedSeconds&) = delete;
  ScopedSeconds& operator=(const ScopedSeconds&) = delete;

 private:
  double* total_;
  Stopwatch sw_;
};

}  // namespace tessel

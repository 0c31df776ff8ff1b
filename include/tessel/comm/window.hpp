#pragma once
/// @file window.hpp
/// Window<T>: an RAII owner of an MPI one-sided window (MPI_Win_allocate), whose data-moving
/// calls record into the ledger of the Comm it was created over.
///
/// Recording follows the one-sided rule of shared/tools/commcount: counted at the origin only,
/// bytes of the origin buffer (count * sizeof(T)), in the ledger's current phase at the time
/// of the call; rget -> rma_get_bytes, put -> rma_put_bytes, accumulate -> rma_acc_bytes, and
/// rma_ops += 1 per call (also for count 0, and when the target is the calling rank itself).
/// Calls whose target is MPI_PROC_NULL move nothing and are not recorded. Synchronisation
/// (lock_all, unlock_all, flush, fence) records nothing.
///
/// Typical passive-target use (the DBCSR 2.5D pattern):
///
///     comm::Window<double> w(comm, n);          // collective
///     fill(w.data(), w.size());
///     comm.barrier();                           // the data is exposed before anyone reads it
///     {
///       comm::LockAllEpoch epoch(w);            // MPI_Win_lock_all(0)
///       comm::RequestSet rs;
///       w.rget(buf, len, target, offset, rs);   // MPI_Rget, recorded as get bytes
///       rs.wait_all();                          // buf is ready
///     }                                         // MPI_Win_unlock_all
///
/// Only MPI_Win_allocate is used (never MPI_Win_create): in these containers Open MPI's
/// default one-sided component for windows over user memory fails (docs/mpi-environment.md).
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <exception>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/comm/mpi_type.hpp"
#include "tessel/core/ledger.hpp"

namespace tessel::comm {

/// The untyped part of Window<T>: owns the MPI_Win, synchronises, records. Use Window<T>.
class WindowBase {
 public:
  WindowBase(const WindowBase&) = delete;
  WindowBase& operator=(const WindowBase&) = delete;

  MPI_Win raw() const { return win_; }
  /// True for a default-constructed or moved-from window.
  bool is_null() const { return win_ == MPI_WIN_NULL; }
  /// Rank of the caller and number of ranks of the communicator the window was created over.
  int rank() const { return rank_; }
  int comm_size() const { return static_cast<int>(sizes_.size()); }
  /// Number of elements `target` exposes (known on every rank since construction).
  std::int64_t target_size(int target) const;
  /// True between lock_all() and unlock_all().
  bool locked_all() const { return locked_; }

  // ---- synchronisation (records nothing) ----
  /// Not collective. Opens a passive-target access epoch to every rank (MPI_Win_lock_all,
  /// shared). Prefer the RAII LockAllEpoch. Throws Error if an epoch is already open.
  void lock_all();
  /// Not collective. Closes the epoch opened by lock_all(): every operation this rank
  /// started in it is complete at the origin and at the target (MPI_Win_unlock_all).
  void unlock_all();
  /// Not collective; inside a lock_all epoch. Completes this rank's operations to `target`
  /// at the origin and at the target (MPI_Win_flush).
  void flush(int target);
  /// Not collective; inside a lock_all epoch. Completes this rank's operations to all
  /// targets at the origin only: origin buffers may be reused/read (MPI_Win_flush_local_all).
  void flush_local_all();
  /// Not collective; inside a lock_all epoch. MPI_Win_sync: a memory barrier between this
  /// rank's public and private window copies. A target reading its own window after other
  /// ranks' updates (completed by their flush/unlock_all, then ordered by e.g. a barrier)
  /// calls it first, as does a rank about to expose values it stored locally.
  void sync();
  /// Collective over the window's communicator. Active-target synchronisation
  /// (MPI_Win_fence): completes every operation of the previous fence epoch, everywhere.
  /// Not inside a lock_all epoch. A polled arrival barrier first (docs/mpich.md).
  void fence(int assert_flags = 0);

 protected:
  WindowBase() = default;
  /// Collective over `c`; see Window<T>::Window.
  WindowBase(const Comm& c, std::int64_t count, std::size_t elem_size);
  WindowBase(WindowBase&& o) noexcept;
  WindowBase& operator=(WindowBase&& o) noexcept;
  ~WindowBase();

  void* base() const { return base_; }
  std::int64_t local_size() const { return count_; }
  void rget_bytes(void* origin, std::int64_t count, MPI_Datatype t, std::size_t sz, int target,
                  std::int64_t offset, RequestSet& rs);
  void put_bytes(const void* origin, std::int64_t count, MPI_Datatype t, std::size_t sz, int target,
                 std::int64_t offset);
  void accumulate_bytes(const void* origin, std::int64_t count, MPI_Datatype t, std::size_t sz,
                        int target, std::int64_t offset, MPI_Op op);

 private:
  /// Checks target, offset and count against the target's size; false for MPI_PROC_NULL.
  bool check_access(const char* call, int target, std::int64_t offset, std::int64_t count) const;
  PhaseCounts* counts() const { return ledger_ ? &ledger_->now() : nullptr; }
  /// Calls f(first element, elements) for pieces of at most max_items_ (one for count 0);
  /// returns the number of pieces.
  template <class F>
  std::int64_t pieces(std::int64_t count, F&& f) const;
  void release() noexcept;

  MPI_Win win_ = MPI_WIN_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;  // borrowed: checked for failure notices before the free
  int uncaught_ = std::uncaught_exceptions();  // at construction: tells unwinding apart
  std::int64_t max_items_ = INT_MAX;           // most items one MPI call carries (Comm's setting)
  void* base_ = nullptr;
  std::int64_t count_ = 0;
  std::vector<std::int64_t> sizes_;  // elements exposed by each rank
  CommLedger* ledger_ = nullptr;
  int rank_ = -1;
  bool locked_ = false;
};

/// An RAII one-sided window of `T`: this rank exposes size() elements at data(), addressed by
/// element offsets (displacement unit sizeof(T)). Move-only; moving is not allowed while a
/// LockAllEpoch refers to the window.
///
/// Operations of more than the Comm's max_message_items() (INT_MAX) elements go as several MPI
/// calls (one op each in the ledger). The Comm must outlive the window. If a failure notice is
/// pending on it (comm::notify_failure: a rank left an exchange with an error), the destructor
/// does not call the collective MPI_Win_free (the window is leaked rather than hang).
///
/// Argument checks (target rank, offset + count within the target's window) are rank-local: the calling rank throws tessel::Error, naming the call and
/// the values, before anything is posted. Use Context::agree() when all ranks must fail
/// together.
template <class T>
class Window : public WindowBase {
 public:
  /// A null window (is_null()); assign a real one later.
  Window() = default;
  /// Collective over `c`: every rank exposes `count` elements (counts may differ between
  /// ranks, 0 allowed), allocated by MPI (MPI_Win_allocate, each rank's part rounded up to a
  /// multiple of 64 bytes: MPICH 4.0.2 misaddresses other sizes) and uninitialised. Records one
  /// allgather (the counts, so that targets are checked) and one allreduce (agreement) in
  /// c's ledger. Throws the same Error on every rank if any count is negative or too large,
  /// or if MPI cannot create the window.
  Window(const Comm& c, std::int64_t count) : WindowBase(c, count, sizeof(T)) {}
  Window(Window&&) noexcept = default;
  Window& operator=(Window&&) noexcept = default;
  /// Collective (MPI_Win_free) over the window's communicator; closes an open lock_all epoch
  /// first. Skipped after MPI_Finalize. Every rank must destroy its window, in the same order.
  ~Window() = default;

  T* data() { return static_cast<T*>(base()); }
  const T* data() const { return static_cast<const T*>(base()); }
  /// Elements this rank exposes.
  std::int64_t size() const { return local_size(); }

  // ---- data movement (recorded at the origin, in the current phase) ----
  /// Not collective; inside a lock_all epoch. Posts MPI_Rget of `count` elements from
  /// `target`'s window at element `target_offset` into `origin`; the request completes in
  /// `rs` (origin is ready after rs.wait_all()). Records count*sizeof(T) get bytes, 1 op.
  void rget(T* origin, std::int64_t count, int target, std::int64_t target_offset, RequestSet& rs) {
    rget_bytes(origin, count, mpi_type<T>(), sizeof(T), target, target_offset, rs);
  }
  /// Not collective; inside an epoch (lock_all or fence). MPI_Put of `count` elements from
  /// `origin` to `target`'s window at `target_offset`. `origin` must not change until a
  /// flush/unlock_all/fence. Records count*sizeof(T) put bytes, 1 op.
  void put(const T* origin, std::int64_t count, int target, std::int64_t target_offset) {
    put_bytes(origin, count, mpi_type<T>(), sizeof(T), target, target_offset);
  }
  /// Not collective; inside an epoch (lock_all or fence). MPI_Accumulate (element-wise
  /// atomic `op`, MPI_SUM by default) of `count` elements of `origin` into `target`'s window
  /// at `target_offset`. Records count*sizeof(T) accumulate bytes, 1 op.
  void accumulate(const T* origin, std::int64_t count, int target, std::int64_t target_offset,
                  MPI_Op op = MPI_SUM) {
    accumulate_bytes(origin, count, mpi_type<T>(), sizeof(T), target, target_offset, op);
  }
};

/// RAII passive-target epoch: lock_all() on construction, unlock_all() on destruction (errors
/// ignored there; call w.unlock_all() — then the guard does nothing — to see them). Not
/// collective. The window must outlive the guard.
class LockAllEpoch {
 public:
  explicit LockAllEpoch(WindowBase& w) : w_(w) { w_.lock_all(); }
  ~LockAllEpoch();
  LockAllEpoch(const LockAllEpoch&) = delete;
  LockAllEpoch& operator=(const LockAllEpoch&) = delete;

 private:
  WindowBase& w_;
};

}  // namespace tessel::comm

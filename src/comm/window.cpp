#include "tessel/comm/window.hpp"

#include <algorithm>
#include <climits>
#include <limits>
#include <string>
#include <utility>

#include "tessel/comm/agree.hpp"
#include "tessel/core/error.hpp"
#include "pieces.hpp"
#include "poll.hpp"
#include "trace_hooks.hpp"

namespace tessel::comm {

namespace {
// Each rank's window allocation is rounded up to a multiple of this many bytes (see below).
constexpr std::int64_t kPadBytes = 64;

}  // namespace

WindowBase::WindowBase(const Comm& c, std::int64_t count, std::size_t elem_size)
    : comm_(c.raw()), max_items_(c.max_message_items()), ledger_(c.ledger()), rank_(c.rank()) {
  TESSEL_CHECK(!c.is_null(), Error, "Window: the communicator is MPI_COMM_NULL");
  // Every rank learns every count: the same check runs on identical data everywhere (so all
  // ranks throw together), and targets can be checked without asking them.
  sizes_.assign(static_cast<std::size_t>(c.size()), 0);
  c.allgather(&count, 1, sizes_.data());
  const auto max_elems = static_cast<std::int64_t>(
      (std::numeric_limits<MPI_Aint>::max() - kPadBytes) / static_cast<MPI_Aint>(elem_size));
  for (int r = 0; r < c.size(); ++r) {
    std::int64_t n = sizes_[static_cast<std::size_t>(r)];
    TESSEL_CHECK(n >= 0 && n <= max_elems, Error, "Window: rank ", r, " asked for ", n,
                 " elements of ", elem_size, " bytes; expected 0 to ", max_elems);
  }
  count_ = count;

  // Each rank's allocation is rounded up to a multiple of kPadBytes: MPICH 4.0.2 (Debian,
  // ch4:ucx) addresses a target's part of a node-shared MPI_Win_allocate window wrongly
  // unless every rank's size in bytes is a multiple of 16: Rget/Put/Accumulate then touch
  // bytes a few places before the right ones (measured here; see
  // docs/mpi-environment.md). The padding is never addressed (targets are checked against
  // the requested counts) and costs < 64 bytes per rank.
  const std::int64_t bytes = count * static_cast<std::int64_t>(elem_size);
  const std::int64_t padded = (bytes + kPadBytes - 1) / kPadBytes * kPadBytes;

  // MPI_Win_allocate reports errors through the communicator's handler: make them return
  // for this call so that a failure is agreed on and thrown, not an abort.
  MPI_Errhandler old = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(c.raw(), &old);
  MPI_Comm_set_errhandler(c.raw(), MPI_ERRORS_RETURN);
  void* base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  arrive(c.raw());  // polled: MPICH busy-polls in MPI_Win_allocate (poll.hpp)
  int rc = MPI_Win_allocate(static_cast<MPI_Aint>(padded), static_cast<int>(elem_size),
                            MPI_INFO_NULL, c.raw(), &base, &win);
  MPI_Comm_set_errhandler(c.raw(), old);
  MPI_Errhandler_free(&old);
  if (rc == MPI_SUCCESS) {
    win_ = win;
    base_ = base;
    MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);  // one-sided errors throw MpiError
  }
  // If MPI_Win_allocate failed on some ranks only, the others cannot free their window
  // (MPI_Win_free is collective): it is dropped rather than hang.
  try {
    agree_on(c, [&] {
      if (rc != MPI_SUCCESS)
        throw MpiError(
            detail::concat("MPI_Win_allocate of ", count, " elements of ", elem_size,
                           " bytes failed on rank ", c.rank(), ": ", mpi_error_string(rc),
                           " (Open MPI in these containers: see docs/mpi-environment.md)"));
    });
  } catch (...) {
    win_ = MPI_WIN_NULL;
    base_ = nullptr;
    throw;
  }
}

WindowBase::WindowBase(WindowBase&& o) noexcept
    : win_(o.win_),
      comm_(o.comm_),
      max_items_(o.max_items_),
      base_(o.base_),
      count_(o.count_),
      sizes_(std::move(o.sizes_)),
      ledger_(o.ledger_),
      rank_(o.rank_),
      locked_(o.locked_) {
  o.win_ = MPI_WIN_NULL;
  o.base_ = nullptr;
  o.count_ = 0;
  o.sizes_.clear();
  o.locked_ = false;
}

WindowBase& WindowBase::operator=(WindowBase&& o) noexcept {
  if (this != &o) {
    release();
    win_ = o.win_;
    comm_ = o.comm_;
    max_items_ = o.max_items_;
    base_ = o.base_;
    count_ = o.count_;
    sizes_ = std::move(o.sizes_);
    ledger_ = o.ledger_;
    rank_ = o.rank_;
    locked_ = o.locked_;
    o.win_ = MPI_WIN_NULL;
    o.base_ = nullptr;
    o.count_ = 0;
    o.sizes_.clear();
    o.locked_ = false;
  }
  return *this;
}

void free_window(MPI_Win& win, bool& locked, MPI_Comm c) noexcept {
  if (win == MPI_WIN_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    if (locked) MPI_Win_unlock_all(win);
    // Polled arrival (poll.hpp): MPI_Win_free synchronises the window's group and busy-polls
    // under MPICH while it waits; a failure notice meanwhile leaks the window instead.
    bool peer_left = false;
    try {
      arrive(c, true);
    } catch (...) { peer_left = true; }
    if (!peer_left) MPI_Win_free(&win);
  }
  win = MPI_WIN_NULL;
  locked = false;
}

WindowBase::~WindowBase() { release(); }

void WindowBase::release() noexcept {
  if (win_ == MPI_WIN_NULL) return;
  // Unwinding after a peer left (a failure notice on the communicator): no collective free,
  // the window is leaked rather than hang. Checked only while unwinding.
  if (std::uncaught_exceptions() > uncaught_ && failure_pending(comm_)) win_ = MPI_WIN_NULL;
  free_window(win_, locked_, comm_);
  base_ = nullptr;
  count_ = 0;
}

std::int64_t WindowBase::target_size(int target) const {
  TESSEL_CHECK(target >= 0 && target < comm_size(), Error, "Window::target_size: target rank ",
               target, " is not in [0, ", comm_size(), ")");
  return sizes_[static_cast<std::size_t>(target)];
}

// ---------------------------------------------------------------- synchronisation
void WindowBase::lock_all() {
  TESSEL_CHECK(!is_null(), Error, "Window::lock_all on a null window");
  TESSEL_CHECK(!locked_, Error, "Window::lock_all: a lock_all epoch is already open");
  check_mpi(MPI_Win_lock_all(0, win_), "MPI_Win_lock_all");
  locked_ = true;
}

void WindowBase::unlock_all() {
  TESSEL_CHECK(locked_, Error, "Window::unlock_all without lock_all");
  locked_ = false;
  check_mpi(MPI_Win_unlock_all(win_), "MPI_Win_unlock_all");
}

void WindowBase::flush(int target) {
  TESSEL_CHECK(locked_, Error, "Window::flush outside a lock_all epoch");
  if (target == MPI_PROC_NULL) return;
  TESSEL_CHECK(target >= 0 && target < comm_size(), Error, "Window::flush: target rank ", target,
               " is not in [0, ", comm_size(), ")");
  check_mpi(MPI_Win_flush(target, win_), "MPI_Win_flush");
}

void WindowBase::flush_local_all() {
  TESSEL_CHECK(locked_, Error, "Window::flush_local_all outside a lock_all epoch");
  check_mpi(MPI_Win_flush_local_all(win_), "MPI_Win_flush_local_all");
}

void WindowBase::sync() {
  TESSEL_CHECK(locked_, Error, "Window::sync outside a lock_all epoch");
  check_mpi(MPI_Win_sync(win_), "MPI_Win_sync");
}

void WindowBase::fence(int assert_flags) {
  TESSEL_CHECK(!is_null(), Error, "Window::fence on a null window");
  TESSEL_CHECK(!locked_, Error, "Window::fence inside a lock_all epoch");
  arrive(comm_);  // polled: MPI_Win_fence synchronises and busy-polls under MPICH (poll.hpp)
  check_mpi(MPI_Win_fence(assert_flags, win_), "MPI_Win_fence");
}

// ---------------------------------------------------------------- data movement
template <class F>
std::int64_t WindowBase::pieces(std::int64_t count, F&& f) const {
  return for_each_piece(count, max_items_, f, "Window");
}

bool WindowBase::check_access(const char* call, int target, std::int64_t offset,
                              std::int64_t count) const {
  TESSEL_CHECK(!is_null(), Error, "Window::", call, " on a null window");
  if (target == MPI_PROC_NULL) return false;
  TESSEL_CHECK(target >= 0 && target < comm_size(), Error, "Window::", call, ": target rank ",
               target, " is not in [0, ", comm_size(), ")");
  TESSEL_CHECK(count >= 0, Error, "Window::", call, ": count ", count, " (expected >= 0)");
  const std::int64_t n = sizes_[static_cast<std::size_t>(target)];
  TESSEL_CHECK(offset >= 0 && offset <= n - count, Error, "Window::", call, ": elements [", offset,
               ", ", offset + count, ") of rank ", target, "'s window, which holds ", n);
  return true;
}

void WindowBase::rget_bytes(void* origin, std::int64_t count, MPI_Datatype t, std::size_t sz,
                            int target, std::int64_t offset, RequestSet& rs) {
  TESSEL_CHECK(locked_, Error,
               "Window::rget outside a lock_all epoch (MPI_Rget needs a "
               "passive-target epoch)");
  if (!check_access("rget", target, offset, count)) return;
  auto* o = static_cast<char*>(origin);
  const auto ops = pieces(count, [&](std::int64_t at, int c) {
    check_mpi(MPI_Rget(o + at * static_cast<std::int64_t>(sz), c, t, target,
                       static_cast<MPI_Aint>(offset + at), c, t, win_,
                       trace::add(rs, tracer_of(ledger_), "rma_get", target,
                                  static_cast<std::int64_t>(c) * static_cast<std::int64_t>(sz))),
              "MPI_Rget");
  });
  if (auto* k = counts()) {
    k->rma_get_bytes += count * static_cast<std::int64_t>(sz);
    k->rma_ops += ops;
  }
}

void WindowBase::put_bytes(const void* origin, std::int64_t count, MPI_Datatype t, std::size_t sz,
                           int target, std::int64_t offset) {
  if (!check_access("put", target, offset, count)) return;
  const auto* o = static_cast<const char*>(origin);
  const auto ops = pieces(count, [&](std::int64_t at, int c) {
    check_mpi(MPI_Put(o + at * static_cast<std::int64_t>(sz), c, t, target,
                      static_cast<MPI_Aint>(offset + at), c, t, win_),
              "MPI_Put");
  });
  if (auto* k = counts()) {
    k->rma_put_bytes += count * static_cast<std::int64_t>(sz);
    k->rma_ops += ops;
  }
  if (Tracer* tr = tracer_of(ledger_))
    tr->transfer("rma_put", target, count * static_cast<std::int64_t>(sz));
}

void WindowBase::accumulate_bytes(const void* origin, std::int64_t count, MPI_Datatype t,
                                  std::size_t sz, int target, std::int64_t offset, MPI_Op op) {
  if (!check_access("accumulate", target, offset, count)) return;
  const auto* o = static_cast<const char*>(origin);
  const auto ops = pieces(count, [&](std::int64_t at, int c) {
    check_mpi(MPI_Accumulate(o + at * static_cast<std::int64_t>(sz), c, t, target,
                             static_cast<MPI_Aint>(offset + at), c, t, op, win_),
              "MPI_Accumulate");
  });
  if (auto* k = counts()) {
    k->rma_acc_bytes += count * static_cast<std::int64_t>(sz);
    k->rma_ops += ops;
  }
  if (Tracer* tr = tracer_of(ledger_))
    tr->transfer("rma_acc", target, count * static_cast<std::int64_t>(sz));
}

// ---------------------------------------------------------------- LockAllEpoch
LockAllEpoch::~LockAllEpoch() {
  if (!w_.locked_all()) return;
  try {
    w_.unlock_all();
  } catch (...) {}
}

}  // namespace tessel::comm

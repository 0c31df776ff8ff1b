#include "tessel/comm/shared_window.hpp"

#include <limits>
#include <string>
#include <utility>

#include "tessel/comm/agree.hpp"
#include "tessel/comm/nonblocking.hpp"
#include "tessel/core/error.hpp"
#include "tessel/core/trace.hpp"

#include "poll.hpp"

namespace tessel::comm {

namespace {
// Each rank's part is rounded up to a multiple of this many bytes (as in window.cpp): keeps
// every peer's part 64-byte aligned in the (contiguous) shared segment.
constexpr std::int64_t kPadBytes = 64;

}  // namespace

// ---------------------------------------------------------------- NodeComm
NodeComm::NodeComm(const Comm& c, int ranks_per_node) : node_(MPI_COMM_NULL, c.ledger()) {
  agree_on(c, [&] {
    TESSEL_CHECK(ranks_per_node >= 0, Error, "NodeComm: ranks_per_node = ", ranks_per_node,
                 " (expected >= 0; 0 = the real node)");
  });
  Comm shared = c.split_shared();
  if (ranks_per_node > 0 && ranks_per_node < shared.size())
    node_ = shared.split(shared.rank() / ranks_per_node, shared.rank());
  else
    node_ = std::move(shared);
  node_rank_ = c.translate_ranks(node_);
}

// ---------------------------------------------------------------- SharedWindowBase
SharedWindowBase::SharedWindowBase(const Comm& node, std::int64_t count, std::size_t elem_size)
    : comm_(node.raw()), ledger_(node.ledger()), rank_(node.rank()) {
  TESSEL_CHECK(!node.is_null(), Error, "SharedWindow: the communicator is MPI_COMM_NULL");
  sizes_.assign(static_cast<std::size_t>(node.size()), 0);
  node.allgather(&count, 1, sizes_.data());
  const auto max_elems = static_cast<std::int64_t>(
      (std::numeric_limits<MPI_Aint>::max() / 2 - kPadBytes) / static_cast<MPI_Aint>(elem_size));
  for (int r = 0; r < node.size(); ++r) {
    const std::int64_t n = sizes_[static_cast<std::size_t>(r)];
    TESSEL_CHECK(n >= 0 && n <= max_elems, Error, "SharedWindow: node rank ", r, " asked for ", n,
                 " elements of ", elem_size, " bytes; expected 0 to ", max_elems);
  }
  const std::int64_t bytes = count * static_cast<std::int64_t>(elem_size);
  const std::int64_t padded = (bytes + kPadBytes - 1) / kPadBytes * kPadBytes;

  // Errors return for this call so that a failure is agreed on and thrown, not an abort
  // (e.g. Open MPI with OMPI_MCA_osc=ucx alone has no component for shared windows).
  MPI_Errhandler old = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(node.raw(), &old);
  MPI_Comm_set_errhandler(node.raw(), MPI_ERRORS_RETURN);
  void* base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  arrive(node.raw());  // polled: MPICH busy-polls in MPI_Win_allocate_shared (poll.hpp)
  int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(padded), static_cast<int>(elem_size),
                                   MPI_INFO_NULL, node.raw(), &base, &win);
  MPI_Comm_set_errhandler(node.raw(), old);
  MPI_Errhandler_free(&old);
  std::string why;
  if (rc == MPI_SUCCESS) {
    win_ = win;
    MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
    bases_.assign(static_cast<std::size_t>(node.size()), nullptr);
    for (int r = 0; r < node.size() && rc == MPI_SUCCESS; ++r) {
      MPI_Aint sz = 0;
      int du = 0;
      void* p = nullptr;
      rc = MPI_Win_shared_query(win_, r, &sz, &du, &p);
      if (rc != MPI_SUCCESS) why = "MPI_Win_shared_query";
      bases_[static_cast<std::size_t>(r)] = p;
    }
  } else {
    why = "MPI_Win_allocate_shared";
  }
  try {
    agree_on(node, [&] {
      if (rc != MPI_SUCCESS)
        throw MpiError(detail::concat(why, " of ", count, " elements of ", elem_size,
                                      " bytes failed on node rank ", node.rank(), ": ",
                                      mpi_error_string(rc)));
    });
  } catch (...) {
    // MPI_Win_free is collective: a window that failed on some rank only is dropped rather
    // than hang (as in window.cpp).
    win_ = MPI_WIN_NULL;
    bases_.clear();
    throw;
  }
}

SharedWindowBase::SharedWindowBase(SharedWindowBase&& o) noexcept
    : win_(o.win_),
      comm_(o.comm_),
      bases_(std::move(o.bases_)),
      sizes_(std::move(o.sizes_)),
      ledger_(o.ledger_),
      rank_(o.rank_),
      locked_(o.locked_) {
  o.win_ = MPI_WIN_NULL;
  o.bases_.clear();
  o.sizes_.clear();
  o.locked_ = false;
}

SharedWindowBase& SharedWindowBase::operator=(SharedWindowBase&& o) noexcept {
  if (this != &o) {
    release();
    win_ = o.win_;
    comm_ = o.comm_;
    bases_ = std::move(o.bases_);
    sizes_ = std::move(o.sizes_);
    ledger_ = o.ledger_;
    rank_ = o.rank_;
    locked_ = o.locked_;
    o.win_ = MPI_WIN_NULL;
    o.bases_.clear();
    o.sizes_.clear();
    o.locked_ = false;
  }
  return *this;
}

SharedWindowBase::~SharedWindowBase() { release(); }

void SharedWindowBase::abandon() noexcept {
  win_ = MPI_WIN_NULL;
  locked_ = false;
  bases_.clear();
  sizes_.clear();
}

void SharedWindowBase::release() noexcept {
  if (win_ == MPI_WIN_NULL) return;
  // Unwinding after a peer left: no collective free (leaked rather than hang).
  if (std::uncaught_exceptions() > uncaught_ && failure_pending(comm_)) win_ = MPI_WIN_NULL;
  free_window(win_, locked_, comm_);
  bases_.clear();
  sizes_.clear();
}

std::int64_t SharedWindowBase::peer_size(int r) const {
  TESSEL_CHECK(r >= 0 && r < static_cast<int>(sizes_.size()), Error,
               "SharedWindow::peer_size: node rank ", r, " is not in [0, ", sizes_.size(), ")");
  return sizes_[static_cast<std::size_t>(r)];
}

void* SharedWindowBase::peer_base(int r) const {
  if (win_ == MPI_WIN_NULL) return nullptr;
  if (r < 0) r = rank_;
  TESSEL_CHECK(r < static_cast<int>(bases_.size()), Error, "SharedWindow::peer_data: node rank ", r,
               " is not in [0, ", bases_.size(), ")");
  return bases_[static_cast<std::size_t>(r)];
}

void SharedWindowBase::record(std::int64_t bytes) const {
  if (!ledger_) return;
  auto& k = ledger_->now();
  k.shm_bytes += bytes;
  k.shm_msgs += 1;
  if (Tracer* t = ledger_->tracer()) t->transfer("shm", -1, bytes);
}

// ---------------------------------------------------------------- synchronisation
void SharedWindowBase::lock_all() {
  TESSEL_CHECK(!is_null(), Error, "SharedWindow::lock_all on a null window");
  TESSEL_CHECK(!locked_, Error, "SharedWindow::lock_all: a lock_all epoch is already open");
  check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
  locked_ = true;
}

void SharedWindowBase::unlock_all() {
  TESSEL_CHECK(locked_, Error, "SharedWindow::unlock_all without lock_all");
  locked_ = false;
  check_mpi(MPI_Win_unlock_all(win_), "MPI_Win_unlock_all");
}

void SharedWindowBase::sync() {
  TESSEL_CHECK(locked_, Error, "SharedWindow::sync outside a lock_all epoch");
  check_mpi(MPI_Win_sync(win_), "MPI_Win_sync");
}

void SharedWindowBase::publish(const Comm& node, std::chrono::microseconds poll) {
  sync();
  sleep_barrier(node, poll);
  sync();
}

}  // namespace tessel::comm

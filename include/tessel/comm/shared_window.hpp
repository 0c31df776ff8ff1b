#pragma once
/// @file shared_window.hpp
/// NodeComm (the ranks of a communicator that share memory with the caller) and
/// SharedWindow<T> (an RAII MPI-3 shared-memory window, MPI_Win_allocate_shared, over a
/// NodeComm): node peers read and write each other's window memory with plain loads and
/// stores, without MPI messages.
///
/// Synchronisation (MPI-3 unified memory model, "Using Advanced MPI" 4.x and MPI-3.1
/// sec. 11.5.4 / example 11.10): every rank opens a passive-target epoch with lock_all()
/// (MPI_MODE_NOCHECK) right after construction; ranks store into peers' memory; then
/// publish() = MPI_Win_sync (the stores leave this rank) + a barrier over the node (ordering
/// between ranks) + MPI_Win_sync (this rank's later loads see the peers' stores). Loads after
/// publish() see every store made before any rank's publish().
///
/// Ledger: stores into peers' memory are no MPI messages, and a PMPI traffic counter does not
/// see them: they are recorded apart, as shm_bytes / shm_msgs of the current phase, by
/// record_transfer() (the caller's report of what it stored). The window's construction
/// records what MPI does: one allgather (the counts) and one allreduce (agreement on
/// failure) over the node; publish() records one collective call (the barrier).
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <vector>

#include "tessel/comm/comm.hpp"

namespace tessel::comm {

/// The ranks of a communicator `c` on the caller's node (one shared-memory domain), as an
/// owned communicator, and the map from c's ranks to node ranks.
class NodeComm {
 public:
  /// Collective over `c`: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (ranks ordered as in c).
  /// ranks_per_node > 0 cuts each node further into groups of that many consecutive node
  /// ranks ("simulated nodes": lets one machine test the mixed intra/inter-node paths);
  /// 0 keeps the real node. Throws Error (on every rank) for ranks_per_node < 0.
  explicit NodeComm(const Comm& c, int ranks_per_node = 0);
  NodeComm(NodeComm&&) noexcept = default;
  NodeComm& operator=(NodeComm&&) noexcept = default;

  /// The node communicator (records into c's ledger).
  const Comm& comm() const { return node_; }
  /// Not collective. The node rank of c's rank q, or -1 when q is on another node.
  int node_rank_of(int q) const { return node_rank_[static_cast<std::size_t>(q)]; }
  /// Number of ranks of c on this node.
  int size() const { return node_.size(); }

 private:
  Comm node_;
  std::vector<int> node_rank_;  // indexed by rank of c
};

/// The untyped part of SharedWindow<T>. Use SharedWindow<T>.
class SharedWindowBase {
 public:
  SharedWindowBase(const SharedWindowBase&) = delete;
  SharedWindowBase& operator=(const SharedWindowBase&) = delete;

  bool is_null() const { return win_ == MPI_WIN_NULL; }
  MPI_Win raw() const { return win_; }
  /// The caller's rank in the node communicator.
  int rank() const { return rank_; }
  /// Number of ranks of the node communicator.
  int size() const { return static_cast<int>(sizes_.size()); }
  /// Elements node rank r exposes (known on every rank since construction).
  std::int64_t peer_size(int r) const;
  bool locked_all() const { return locked_; }

  /// Not collective. MPI_Win_lock_all(MPI_MODE_NOCHECK): opens the epoch in which loads and
  /// stores to the window memory are allowed. Throws Error if one is open.
  void lock_all();
  /// Not collective. MPI_Win_unlock_all.
  void unlock_all();
  /// Not collective; inside lock_all. MPI_Win_sync (memory barrier public <-> private copy).
  void sync();
  /// Collective over the node communicator `node` (the one the window was built over);
  /// inside lock_all: sync(), a sleep-polled MPI_Ibarrier (every `poll`), sync(). Stores
  /// made by any rank before its publish() are visible to loads of every rank after its
  /// publish(). Records one collective call.
  void publish(const Comm& node, std::chrono::microseconds poll = std::chrono::microseconds(50));
  /// Not collective. Drops the window without the collective MPI_Win_free (leaked), for an
  /// owner that knows a node rank left (a failure notice); afterwards is_null().
  void abandon() noexcept;

 protected:
  SharedWindowBase() = default;
  /// Collective over `node`; see SharedWindow<T>::SharedWindow.
  SharedWindowBase(const Comm& node, std::int64_t count, std::size_t elem_size);
  SharedWindowBase(SharedWindowBase&& o) noexcept;
  SharedWindowBase& operator=(SharedWindowBase&& o) noexcept;
  ~SharedWindowBase();

  void* peer_base(int r) const;
  void record(std::int64_t bytes) const;

 private:
  void release() noexcept;
  MPI_Win win_ = MPI_WIN_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;              // the node communicator (borrowed; see release())
  int uncaught_ = std::uncaught_exceptions();  // at construction: tells unwinding apart
  std::vector<void*> bases_;                   // every node rank's memory, in this process
  std::vector<std::int64_t> sizes_;            // elements exposed by each node rank
  CommLedger* ledger_ = nullptr;
  int rank_ = -1;  // the caller's node rank
  bool locked_ = false;
};

/// An RAII shared-memory window of `T` over a node communicator: node rank r exposes
/// peer_size(r) elements at peer_data(r), addressable by every node rank. Move-only.
template <class T>
class SharedWindow : public SharedWindowBase {
 public:
  SharedWindow() = default;
  /// Collective over `node` (a NodeComm's comm()): every rank exposes `count` elements
  /// (0 allowed), uninitialised, allocated by MPI_Win_allocate_shared (each rank's part
  /// rounded up to 64 bytes), and queries every peer's address (MPI_Win_shared_query).
  /// Throws the same MpiError on every rank if MPI cannot create the window (e.g. an
  /// Open MPI one-sided component without shared windows), Error for bad counts.
  SharedWindow(const Comm& node, std::int64_t count) : SharedWindowBase(node, count, sizeof(T)) {}
  SharedWindow(SharedWindow&&) noexcept = default;
  SharedWindow& operator=(SharedWindow&&) noexcept = default;
  /// Collective (MPI_Win_free) over the node; closes an open lock_all epoch first. Skipped
  /// (the window is leaked) during stack unwinding when a failure notice is pending on the
  /// node communicator, which must outlive the window.
  ~SharedWindow() = default;

  /// This rank's elements.
  T* data() const { return peer_data(-1); }
  /// Node rank r's elements (r = -1: this rank), for loads and stores inside lock_all.
  T* peer_data(int r) const { return static_cast<T*>(peer_base(r)); }
  /// Not collective. Records one transfer of `count` elements stored into a peer's memory
  /// (shm_bytes += count * sizeof(T), shm_msgs += 1) in the current phase.
  void record_transfer(std::int64_t count) const {
    record(count * static_cast<std::int64_t>(sizeof(T)));
  }
};

}  // namespace tessel::comm

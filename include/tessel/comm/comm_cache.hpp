#pragma once
/// @file comm_cache.hpp
/// CommCache: the communicators and node-shared windows derived from one communicator, made on
/// first use and kept for later calls. A Context owns one for its communicator
/// (Context::cache(), Comm::cache()); no global state.
///
/// Why: creating a communicator (MPI_Comm_split[_type], MPI_Comm_dup) or a window
/// (MPI_Win_allocate_shared, MPI_Win_free) is a blocking collective with internal
/// synchronisation, and under MPICH with more ranks than cores every rank busy-polls in it
/// while a descheduled peer gets there (docs/mpich.md). The node-shared redistribution and
/// SymmSquareCube made theirs on every call; with the cache they make them once per Context.
///
/// Every call that may create something is collective over the communicator it derives from
/// and must be made by every rank in the same order with the same arguments (as the calls that
/// use it are: redistribute, SymmSquareCube). A hit does no MPI at all.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/comm/shared_window.hpp"

namespace tessel::comm {

/// The ranks of one communicator on the caller's (possibly emulated) node, and one byte window
/// shared by them that grows when a call needs more (it never shrinks). Made by CommCache.
class NodeShared {
 public:
  /// Collective over `parent`: NodeComm(parent, ranks_per_node). No window yet.
  NodeShared(const Comm& parent, int ranks_per_node);
  NodeShared(const NodeShared&) = delete;
  NodeShared& operator=(const NodeShared&) = delete;
  /// Collective over the node: frees the window (a polled arrival first, see free_window)
  /// unless a failure notice is pending on the node or parent communicator, or arrives while
  /// waiting for the node's ranks — then the window is dropped without the collective free
  /// (leaked rather than hang on a rank that left).
  ~NodeShared();

  const NodeComm& node() const { return node_; }
  int ranks_per_node() const { return ranks_per_node_; }
  /// Collective over node().comm() when the window must be (re)made: node rank r needs
  /// need_bytes[r] bytes (the same vector on every node rank). The window is made, or remade
  /// with max(need, current) bytes per rank, only when some rank needs more than it has: the
  /// same decision on every node rank, without communication. Returns null when MPI cannot
  /// make a shared window on this node (remembered: the node's pairs use point-to-point from
  /// then on; e.g. Open MPI with OMPI_MCA_osc=ucx alone). A window left in a lock_all epoch
  /// (by an exception) is unlocked first. Loads and stores go inside lock_all/unlock_all as
  /// usual; the caller orders the reuse across calls (redistribute: its node allgather).
  SharedWindow<unsigned char>* window(const std::vector<std::int64_t>& need_bytes);
  /// Windows made so far (first one and every growth).
  int window_creations() const { return window_creations_; }

 private:
  MPI_Comm parent_ = MPI_COMM_NULL;  // borrowed: checked for failure notices on release
  int ranks_per_node_ = 0;
  NodeComm node_;
  SharedWindow<unsigned char> win_;
  bool unavailable_ = false;
  int window_creations_ = 0;
};

/// Communicators and windows derived from one communicator (see the file comment). Not
/// movable. Its destructor is collective over that communicator when it holds anything.
class CommCache {
 public:
  /// Entries kept by get(); on a miss beyond this, the least recently used one is dropped.
  static constexpr std::size_t kMaxEntries = 8;

  /// Not collective. Empty: nothing is made before the first use.
  CommCache() = default;
  CommCache(const CommCache&) = delete;
  CommCache& operator=(const CommCache&) = delete;
  /// Collective over the communicator the entries derive from (clear()).
  ~CommCache();

  /// The node-shared state of `parent` with `ranks_per_node` ranks per emulated node (0: the
  /// real node). Collective over `parent` on the first call for a ranks_per_node (it makes
  /// the node communicator); later calls do no MPI. Every call must pass the same `parent`
  /// (Error otherwise).
  NodeShared& node_shared(const Comm& parent, int ranks_per_node);

  /// The object stored under `key`, made by `make()` on a miss. Collective as `make` is on a
  /// miss, and then every rank must ask for the same keys in the same order (the cache
  /// evicts the same entry everywhere). A kept object lives until it is evicted or the cache
  /// is destroyed, and longer while a caller holds the returned pointer. Error when `key`
  /// holds an object of another type.
  template <class T, class Make>
  std::shared_ptr<T> get(const std::string& key, Make&& make) {
    std::shared_ptr<void> p = find(key, typeid(T));
    if (!p) {
      std::shared_ptr<T> made = std::forward<Make>(make)();
      p = made;
      insert(key, typeid(T), std::move(p));
      return made;
    }
    return std::static_pointer_cast<T>(p);
  }

  /// Node communicators, windows and get() objects made so far (for tests: a second call
  /// that hits the cache leaves it unchanged).
  int creations() const;
  /// Collective over the communicator the entries derive from: drops every entry, the most
  /// recently made first (the same order on every rank).
  void clear() noexcept;

 private:
  struct Entry {
    std::string key;
    const std::type_info* type;
    std::shared_ptr<void> obj;
    std::uint64_t used;
  };
  std::shared_ptr<void> find(const std::string& key, const std::type_info& type);
  void insert(const std::string& key, const std::type_info& type, std::shared_ptr<void> obj);

  MPI_Comm parent_ = MPI_COMM_NULL;
  std::vector<std::unique_ptr<NodeShared>> nodes_;  // one per ranks_per_node, in creation order
  std::vector<Entry> entries_;                      // in creation order
  std::uint64_t clock_ = 0;
  int creations_ = 0;
};

}  // namespace tessel::comm

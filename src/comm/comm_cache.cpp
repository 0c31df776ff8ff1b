// CommCache: the node communicators and node-shared windows, and the keyed objects, a Context
// keeps across calls (comm_cache.hpp).
#include "tessel/comm/comm_cache.hpp"

#include <algorithm>

#include "tessel/comm/agree.hpp"
#include "tessel/core/error.hpp"

#include "poll.hpp"

namespace tessel::comm {

// ---------------------------------------------------------------- NodeShared
NodeShared::NodeShared(const Comm& parent, int ranks_per_node)
    : parent_(parent.raw()), ranks_per_node_(ranks_per_node), node_(parent, ranks_per_node) {}

NodeShared::~NodeShared() {
  if (win_.is_null()) return;
  // A rank that left an exchange on this node marked the node and the parent communicators:
  // no collective free then (free_window also watches the node while it waits).
  if (failure_pending(node_.comm().raw()) || failure_pending(parent_)) win_.abandon();
}

SharedWindow<unsigned char>* NodeShared::window(const std::vector<std::int64_t>& need_bytes) {
  const Comm& nc = node_.comm();
  TESSEL_CHECK(static_cast<int>(need_bytes.size()) == nc.size(), Error,
               "NodeShared::window: ", need_bytes.size(), " sizes for a node of ", nc.size(),
               " ranks");
  if (unavailable_) return nullptr;
  if (win_.locked_all()) win_.unlock_all();  // left open by an exception in the last call
  bool grow = win_.is_null();
  for (int r = 0; r < nc.size() && !grow; ++r)
    grow = need_bytes[static_cast<std::size_t>(r)] > win_.peer_size(r);
  if (!grow) return &win_;
  std::int64_t mine = need_bytes[static_cast<std::size_t>(nc.rank())];
  if (!win_.is_null()) mine = std::max(mine, win_.peer_size(nc.rank()));
  win_ = SharedWindow<unsigned char>();  // free the old one first (collective over the node)
  try {
    win_ = SharedWindow<unsigned char>(nc, mine);
  } catch (const MpiError&) {
    unavailable_ = true;  // thrown on every node rank alike: this node uses point-to-point
    return nullptr;
  }
  ++window_creations_;
  return &win_;
}

// ---------------------------------------------------------------- CommCache
CommCache::~CommCache() { clear(); }

void CommCache::clear() noexcept {
  while (!entries_.empty()) entries_.pop_back();  // the most recent first, on every rank
  while (!nodes_.empty()) nodes_.pop_back();
  parent_ = MPI_COMM_NULL;
}

NodeShared& CommCache::node_shared(const Comm& parent, int ranks_per_node) {
  TESSEL_CHECK(parent_ == MPI_COMM_NULL || parent_ == parent.raw(), Error,
               "CommCache::node_shared: asked for another communicator than the one it "
               "caches for");
  parent_ = parent.raw();
  for (auto& n : nodes_)
    if (n->ranks_per_node() == ranks_per_node) return *n;
  nodes_.push_back(std::make_unique<NodeShared>(parent, ranks_per_node));
  ++creations_;
  return *nodes_.back();
}

int CommCache::creations() const {
  int n = creations_;
  for (const auto& x : nodes_) n += x->window_creations();
  return n;
}

std::shared_ptr<void> CommCache::find(const std::string& key, const std::type_info& type) {
  for (auto& e : entries_) {
    if (e.key != key) continue;
    TESSEL_CHECK(*e.type == type, Error, "CommCache: key '", key, "' holds a ", e.type->name(),
                 ", not a ", type.name());
    e.used = ++clock_;
    return e.obj;
  }
  return nullptr;
}

void CommCache::insert(const std::string& key, const std::type_info& type,
                       std::shared_ptr<void> obj) {
  if (entries_.size() >= kMaxEntries) {  // the least recently used, the same on every rank
    auto lru = std::min_element(entries_.begin(), entries_.end(),
                                [](const Entry& a, const Entry& b) { return a.used < b.used; });
    entries_.erase(lru);
  }
  entries_.push_back(Entry{key, &type, std::move(obj), ++clock_});
  ++creations_;
}

}  // namespace tessel::comm

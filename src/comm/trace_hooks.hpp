#pragma once
// The comm/ layer's hooks into the Tracer (core/trace.hpp): each is one null test when off.
// Private to src/comm.
#include <cstdint>

#include "tessel/comm/comm.hpp"
#include "tessel/core/trace.hpp"

namespace tessel::comm::trace {

/// Slot for a request in `rs` (rs.add()); when tracing, the transfer is recorded as posted now
/// and as completed when `rs` sees the request complete.
inline MPI_Request* add(RequestSet& rs, Tracer* t, const char* kind, int peer, std::int64_t bytes) {
  if (!t) return rs.add();
  const std::uint64_t id = t->transfer_posted(kind, peer, bytes);
  Pending own;  // a token of its own, only to carry the continuation
  return rs.add(own, [t, id](RequestSet&) { t->transfer_completed(id); });
}

/// As above for a request counted in `token` (rs.add(token)).
inline MPI_Request* add(RequestSet& rs, Pending& token, Tracer* t, const char* kind, int peer,
                        std::int64_t bytes) {
  if (!t) return rs.add(token);
  const std::uint64_t id = t->transfer_posted(kind, peer, bytes);
  return rs.add(token, [t, id](RequestSet&) { t->transfer_completed(id); });
}

/// As add(rs, t, ...) for a point-to-point receive (rs.add_recv(): cancelled when abandoned).
inline MPI_Request* add_recv(RequestSet& rs, Tracer* t, int peer, std::int64_t bytes) {
  if (!t) return rs.add_recv();
  const std::uint64_t id = t->transfer_posted("p2p_recv", peer, bytes);
  return rs.add_recv([t, id](RequestSet&) { t->transfer_completed(id); });
}

/// As add(rs, t, ...) for a started persistent request (rs.add_started(req)).
inline void add_started(RequestSet& rs, MPI_Request req, Tracer* t, const char* kind, int peer,
                        std::int64_t bytes) {
  if (!t) return rs.add_started(req);
  const std::uint64_t id = t->transfer_posted(kind, peer, bytes);
  rs.add_started(req, [t, id](RequestSet&) { t->transfer_completed(id); });
}

/// Start time of a blocking call (0 when off).
inline double begin(const Tracer* t) { return t ? t->now() : 0.0; }

}  // namespace tessel::comm::trace

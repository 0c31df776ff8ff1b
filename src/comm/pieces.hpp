#pragma once
// The one place that cuts a transfer into MPI calls of at most `lim` items (MPI counts are
// int; Comm, the nonblocking collectives, Window and File all go through it). Private to
// src/comm.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "tessel/core/error.hpp"

namespace tessel::comm {

/// Pure. The most items one MPI call may carry for a limit `lim` (Comm::max_message_items, a
/// test's lower value): lim, or INT_MAX when lim < 1 or > INT_MAX.
inline std::int64_t message_limit(std::int64_t lim) {
  return (lim < 1 || lim > INT_MAX) ? std::int64_t{INT_MAX} : lim;
}

/// Pure. Calls f(first item, items) for consecutive pieces of `count` items, each at most `lim`
/// (lim < 1 or > INT_MAX means INT_MAX); count == 0 is one empty piece (a message of 0 items is
/// still a message). Returns the number of pieces. `what` names the call in the error for a
/// negative count.
template <class F>
std::int64_t for_each_piece(std::int64_t count, std::int64_t lim, F&& f,
                            const char* what = "message") {
  TESSEL_CHECK(count >= 0, Error, what, ": count = ", count, " (expected >= 0)");
  lim = message_limit(lim);
  std::int64_t pieces = 0, at = 0;
  do {
    const std::int64_t n = std::min(count - at, lim);
    f(at, static_cast<int>(n));
    at += n;
    ++pieces;
  } while (at < count);
  return pieces;
}

}  // namespace tessel::comm

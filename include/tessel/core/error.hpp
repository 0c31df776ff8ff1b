#pragma once
/// @file error.hpp
/// The one error type of tessel and its kinds, plus the always-on argument check.
#include <climits>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tessel {

/// Base of every error tessel throws. what() names the parameter, the value and what was
/// expected. Not collective by itself: see Context::agree() for collective validation.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};
/// Operand shapes disagree (inner dimensions, C shape, descriptor vs data).
class DimensionMismatch : public Error {
  using Error::Error;
};
/// Two layouts that must match do not, or a descriptor is inconsistent with its grid.
class LayoutMismatch : public Error {
  using Error::Error;
};
/// A process grid or plan cannot be built (too few ranks, memory too small, ...).
class GridError : public Error {
  using Error::Error;
};
/// Bad user input: values (NaN/Inf, non-symmetric), files (truncated, wrong dtype), options.
class InputError : public Error {
  using Error::Error;
};
/// An MPI call failed.
class MpiError : public Error {
  using Error::Error;
};
/// Another rank left an exchange with an error (its own error says why): this rank saw its
/// failure notice while waiting. The communicator (Context) is unusable afterwards.
class PeerFailure : public Error {
  using Error::Error;
};

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// Pure. The one integer-range checker: `v` as an int (MPI counts, 32-bit BLAS dimensions);
/// throws Error "<what> = <v> exceeds <range> (0 .. INT_MAX)" when v < 0 or v > INT_MAX.
inline int checked_int(std::int64_t v, const char* what, const char* range = "the MPI int limit") {
  if (v < 0 || v > INT_MAX)
    throw Error(concat(what, " = ", v, " exceeds ", range, " (0 .. ", INT_MAX, ")"));
  return static_cast<int>(v);
}
}  // namespace detail

}  // namespace tessel

/// Always-on check of user input (never compiled out). Throws KIND with the streamed message.
/// Use only on data every rank of the call holds, so that all ranks throw together; for
/// rank-local conditions use Context::agree().
#define TESSEL_CHECK(cond, KIND, ...)                               \
  do {                                                              \
    if (!(cond)) throw KIND(::tessel::detail::concat(__VA_ARGS__)); \
  } while (0)

/// Debug-only check of an internal invariant (a bug in tessel if it fires).
#ifndef NDEBUG
#define TESSEL_ASSERT(cond)                                                                      \
  do {                                                                                           \
    if (!(cond))                                                                                 \
      throw ::tessel::Error(                                                                     \
          ::tessel::detail::concat("internal error: ", #cond, " at ", __FILE__, ":", __LINE__)); \
  } while (0)
#else
#define TESSEL_ASSERT(cond) ((void)0)
#endif

#pragma once
// Shared by the libFuzzer targets (tests/fuzz): the one rule every target checks.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tessel/core/error.hpp"

namespace tessel::fuzz {

/// The input as a string (the readers' in-memory entry points take one).
inline std::string bytes_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// A property of a parsed input that must hold: abort (a libFuzzer crash) with `what`.
inline void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz property violated: %s\n", what);
  std::abort();
}

/// Runs `f`; a tessel::Error with a non-empty message is the expected outcome of a bad input.
/// Any other exception escapes and ends the run (libFuzzer reports it as a crash).
template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const tessel::Error& e) {
    require(e.what()[0] != '\0', "a tessel::Error with an empty message");
  }
}

}  // namespace tessel::fuzz

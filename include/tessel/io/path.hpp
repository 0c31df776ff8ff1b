#pragma once
/// @file path.hpp
/// File-name helpers. Pure: no I/O, no MPI.
#include <string>

namespace tessel::io {

/// Pure. The directory part of `path`: "." for a bare name, "/" for a file in the root.
inline std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace tessel::io

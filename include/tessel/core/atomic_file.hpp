#pragma once
/// @file atomic_file.hpp
/// Writing a small file on one rank so that no partial file is ever left under its name.
/// Not collective: call it on the one rank that writes (inside Context::agree, so a failure
/// reaches every rank).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "tessel/core/error.hpp"

namespace tessel {

/// Not collective. Opens `path.tmp.<pid>`, calls `fill(FILE*)` (which returns false when a
/// write failed), closes it and renames it to `path`. On any failure removes the temporary
/// file and throws InputError "cannot write <what> <path>: <reason>".
template <class Fill>
void write_file_atomic(const std::string& path, const char* what, Fill&& fill) {
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long long>(::getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw InputError(detail::concat("cannot write ", what, " ", path, ": ", std::strerror(errno)));
  errno = 0;
  bool ok = false;
  try {
    ok = fill(f);
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw InputError(detail::concat("cannot write ", what, " ", path, ": ",
                                    err ? std::strerror(err) : "write failed"));
  }
}

/// Not collective. write_file_atomic of one string.
inline void write_text_atomic(const std::string& path, const char* what, const std::string& text) {
  write_file_atomic(path, what, [&](std::FILE* f) {
    return std::fwrite(text.data(), 1, text.size(), f) == text.size();
  });
}

}  // namespace tessel

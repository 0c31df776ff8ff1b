// Block-size files (CP2K's blocksizes.txt): one positive integer per line.
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "sparse_text.hpp"
#include "tessel/core/error.hpp"
#include "tessel/io/sparse.hpp"

namespace tessel::io {

BlockSizes read_block_sizes(const std::string& path) {
  using detail::concat;
  std::ifstream in(path);
  TESSEL_CHECK(in.good(), InputError, "cannot read block sizes ", path, ": ", std::strerror(errno));
  std::vector<int> sizes;
  std::string line;
  std::int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const char* b = line.data();
    const char* e = b + line.size();
    while (b < e && (*b == ' ' || *b == '\t')) ++b;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) --e;
    if (b == e || *b == '#') continue;
    int v = 0;
    auto r = std::from_chars(b, e, v);
    TESSEL_CHECK(r.ec == std::errc() && r.ptr == e, InputError, path, ", line ", lineno,
                 ": expected one block size (a positive integer), found ",
                 sparse_text::quote_line(line.data(), line.data() + line.size()));
    TESSEL_CHECK(v >= 1, InputError, path, ", line ", lineno, ": block size ", v,
                 ", expected >= 1");
    sizes.push_back(v);
  }
  TESSEL_CHECK(!in.bad(), InputError, "cannot read block sizes ", path, ": read error");
  TESSEL_CHECK(!sizes.empty(), InputError, path,
               ": no block sizes (expected one positive "
               "integer per line)");
  return BlockSizes(std::move(sizes), path);
}

}  // namespace tessel::io

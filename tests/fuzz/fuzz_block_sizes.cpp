// libFuzzer target: io::read_block_sizes (CP2K's blocksizes.txt: one positive integer per
// line). Every input reads or throws tessel::InputError; what was read writes back
// (write_block_sizes) and reads again to the same sizes.
#include <cstddef>
#include <cstdint>

#include "fuzz_file.hpp"
#include "tessel/io/sparse.hpp"

using namespace tessel;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = fuzz::as_file(fuzz::bytes_of(data, size), ".txt");
  fuzz::expect_clean([&] {
    const sparse::BlockSizes b = io::read_block_sizes(path);
    fuzz::require(b.count() >= 1, "read no block sizes without an error");
    io::write_block_sizes(b, path);
    const sparse::BlockSizes again = io::read_block_sizes(path);
    fuzz::require(again.count() == b.count() && again.offset(b.count()) == b.offset(b.count()),
                  "write_block_sizes does not round-trip");
  });
  return 0;
}

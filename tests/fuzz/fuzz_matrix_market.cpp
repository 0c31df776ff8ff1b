// libFuzzer target: io::read_matrix_market (coordinate real/integer, general/symmetric)
// on one rank, rows and columns in blocks 4, 1, 1, 4, 1, 1 (12 x 12). Every input reads or
// throws tessel::InputError.
#include <cstddef>
#include <cstdint>

#include "fuzz_file.hpp"
#include "tessel/io/sparse.hpp"

using namespace tessel;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Context& ctx = fuzz::context();
  const sparse::BlockSizes blocks({4, 1, 1, 4, 1, 1}, "fuzz blocks");
  const std::string& path = fuzz::as_file(fuzz::bytes_of(data, size), ".mtx");
  fuzz::expect_clean([&] { (void)io::read_matrix_market(ctx, path, blocks, blocks); });
  return 0;
}

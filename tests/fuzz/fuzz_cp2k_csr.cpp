// libFuzzer target: io::read_cp2k_csr (CP2K CSR text `row col value`, plain or gzip) on
// one rank, rows and columns in blocks 4, 1, 1, 4, 1, 1 (two water molecules in SZV, as the
// seeds cut from ../shared/data/cp2k/h2o-32-szv/S.csr), with and without exact_extent. Every
// input reads or throws tessel::InputError.
#include <cstddef>
#include <cstdint>

#include "fuzz_file.hpp"
#include "tessel/io/sparse.hpp"

using namespace tessel;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Context& ctx = fuzz::context();
  const sparse::BlockSizes blocks({4, 1, 1, 4, 1, 1}, "fuzz blocks");
  const std::string& path = fuzz::as_file(fuzz::bytes_of(data, size), ".csr");
  for (bool exact : {true, false}) {
    fuzz::expect_clean([&] {
      io::ReadOptions opt;
      opt.exact_extent = exact;
      (void)io::read_cp2k_csr(ctx, path, blocks, blocks, opt);
    });
  }
  return 0;
}

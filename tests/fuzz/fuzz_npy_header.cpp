// libFuzzer target: the .npy header parser (io::npy_header_length, parse_npy_header,
// check_npy_header). Every input either parses or throws tessel::InputError; a parsed header
// re-made with make_npy_header parses back to the same header.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.hpp"
#include "tessel/io/npy.hpp"

using namespace tessel;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = fuzz::bytes_of(data, size);
  fuzz::expect_clean([&] { (void)io::npy_header_length(bytes, "fuzz.npy"); });
  fuzz::expect_clean([&] {
    const io::NpyHeader h = io::parse_npy_header(bytes, "fuzz.npy");
    fuzz::require(h.data_offset >= 10 && h.data_offset <= static_cast<std::int64_t>(size),
                  "data_offset outside the input");
    for (auto n : h.shape) fuzz::require(n >= 0, "negative extent accepted");
    fuzz::expect_clean([&] {
      io::check_npy_header(h, "<f8", "float64", static_cast<std::int64_t>(size), "fuzz.npy");
      // A valid float64 matrix header: the header tessel writes for it parses back the same.
      const std::string made = io::make_npy_header(h.descr, h.fortran_order, h.rows(), h.cols());
      const io::NpyHeader back = io::parse_npy_header(made, "made.npy");
      fuzz::require(back.descr == h.descr && back.fortran_order == h.fortran_order &&
                        back.rows() == h.rows() && back.cols() == h.cols() &&
                        back.data_offset == static_cast<std::int64_t>(made.size()) &&
                        back.data_offset % 64 == 0,
                    "make_npy_header does not round-trip");
    });
    fuzz::expect_clean([&] {
      io::check_npy_header(h, "<c16", "complex128", static_cast<std::int64_t>(size), "fuzz.npy");
    });
  });
  return 0;
}

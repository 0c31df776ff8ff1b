// libFuzzer target: a whole .npy file in memory (io::decode_npy, the serial counterpart of
// read_npy: header checks plus the data in C or Fortran order). Every input decodes or throws
// tessel::InputError; a decoded matrix written back (make_npy_header + column-major data)
// decodes to the same bytes.
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.hpp"
#include "tessel/io/npy.hpp"

using namespace tessel;

namespace {
template <class T>
void decode_and_round_trip(const std::string& bytes) {
  fuzz::expect_clean([&] {
    io::NpyHeader h;
    const std::vector<T> x = io::decode_npy<T>(bytes, "fuzz.npy", &h);
    fuzz::require(static_cast<std::int64_t>(x.size()) == h.rows() * h.cols(),
                  "decoded size is not rows x cols");
    std::string again = io::make_npy_header(io::npy_descr<T>(), true, h.rows(), h.cols());
    again.append(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(T));
    const std::vector<T> y = io::decode_npy<T>(again, "again.npy");
    fuzz::require(y.size() == x.size() &&
                      (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0),
                  "decode(encode(decode(file))) differs");
  });
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = fuzz::bytes_of(data, size);
  decode_and_round_trip<double>(bytes);
  decode_and_round_trip<std::complex<double>>(bytes);
  return 0;
}

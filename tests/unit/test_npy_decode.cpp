// io::decode_npy (the pure in-memory .npy reader the fuzz target drives) against files NumPy
// wrote (the seed corpus of tests/fuzz), and a replay of every corpus file: each one decodes
// or throws tessel::InputError — the fuzz targets' rule, checked in the normal suite without
// clang. Crashes found by fuzzing are added to the corpus and so replayed here.
#include <gtest/gtest.h>

#include <complex>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tessel/core/error.hpp"
#include "tessel/io/npy.hpp"

using namespace tessel;
namespace fs = std::filesystem;

namespace {
const fs::path kCorpus = TESSEL_FUZZ_CORPUS_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) { return e.what(); }
  return "(no InputError)";
}
}  // namespace

TEST(NpyDecode, NumpyFilesInBothOrders) {
  // np.arange(6.).reshape(2, 3) in C order: column-major result [0, 3, 1, 4, 2, 5].
  io::NpyHeader h;
  auto c = io::decode_npy<double>(slurp(kCorpus / "fuzz_npy_data/f8_c_2x3.npy"), "c.npy", &h);
  EXPECT_EQ(h.rows(), 2);
  EXPECT_EQ(h.cols(), 3);
  EXPECT_EQ(c, (std::vector<double>{0, 3, 1, 4, 2, 5}));
  // np.asfortranarray(np.arange(6.).reshape(3, 2)): column-major [0, 2, 4, 1, 3, 5].
  auto f = io::decode_npy<double>(slurp(kCorpus / "fuzz_npy_data/f8_f_3x2.npy"));
  EXPECT_EQ(f, (std::vector<double>{0, 2, 4, 1, 3, 5}));
  // (np.arange(4.) + 1j).reshape(2, 2), C order.
  auto z = io::decode_npy<std::complex<double>>(slurp(kCorpus / "fuzz_npy_data/c16_c_2x2.npy"));
  using Z = std::complex<double>;
  EXPECT_EQ(z, (std::vector<Z>{Z(0, 1), Z(2, 1), Z(1, 1), Z(3, 1)}));
  // 1-D of length 5 -> 5 x 1; versions 2.0 and 3.0; an empty 0 x 4.
  EXPECT_EQ(io::decode_npy<double>(slurp(kCorpus / "fuzz_npy_data/f8_1d_5.npy")),
            (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(io::decode_npy<double>(slurp(kCorpus / "fuzz_npy_data/f8_v2_2x2.npy")),
            (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(io::decode_npy<double>(slurp(kCorpus / "fuzz_npy_data/f8_v3_1x1.npy")),
            (std::vector<double>{1}));
  EXPECT_TRUE(io::decode_npy<double>(slurp(kCorpus / "fuzz_npy_data/f8_0x4.npy"), "e", &h).empty());
  EXPECT_EQ(h.cols(), 4);
}

TEST(NpyDecode, BadFilesThrowInputError) {
  auto bad = [](const char* name) {
    const std::string bytes = slurp(kCorpus / "fuzz_npy_data" / name);
    return error_of([&] { io::decode_npy<double>(bytes, name); });
  };
  EXPECT_NE(bad("truncated.npy").find("truncated.npy is truncated"), std::string::npos);
  EXPECT_NE(bad("bad_magic.npy").find("is not a .npy file"), std::string::npos);
  EXPECT_NE(bad("i4_2x2.npy").find("dtype '<i4', expected '<f8'"), std::string::npos);
  EXPECT_NE(bad("f8_be_2x2.npy").find("big-endian"), std::string::npos);
  EXPECT_NE(bad("f8_3d.npy").find("3-D array"), std::string::npos);
  EXPECT_NE(error_of([] {
              io::decode_npy<std::complex<double>>(slurp(kCorpus / "fuzz_npy_data/f8_c_2x3.npy"),
                                                   "x.npy");
            }).find("expected '<c16'"),
            std::string::npos);
  EXPECT_NE(error_of([] { io::decode_npy<double>("", "empty.npy"); }).find("not a .npy file"),
            std::string::npos);
}

TEST(NpyDecode, EveryCorpusFileDecodesOrThrowsInputError) {
  int files = 0;
  for (const auto& dir : fs::directory_iterator(kCorpus)) {
    if (!dir.is_directory() || dir.path().filename().string().rfind("fuzz_npy", 0) != 0) continue;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      const std::string bytes = slurp(f.path());
      ++files;
      try {
        (void)io::parse_npy_header(bytes, f.path().string());
      } catch (const InputError&) {}
      try {
        (void)io::decode_npy<double>(bytes, f.path().string());
      } catch (const InputError&) {}
      try {
        (void)io::decode_npy<std::complex<double>>(bytes, f.path().string());
      } catch (const InputError&) {}
    }
  }
  EXPECT_GT(files, 20);
}

// .npy header parsing and writing: pure functions, no MPI.
#include <gtest/gtest.h>

#include <string>

#include "tessel/core/error.hpp"
#include "tessel/io/npy.hpp"

using namespace tessel;
using namespace tessel::io;

namespace {
// What numpy.save (NumPy 1.24) writes for np.zeros((3, 4)) (float64, C order): magic, version
// 1.0, header length 118 (0x76) little-endian, the dictionary, 58 spaces, '\n' -> 128 bytes.
const std::string kNumpyC34 = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                              "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }" +
                              "                                                          \n";

std::string with_dict(const std::string& dict, int major = 1) {
  std::string d = dict + "\n";
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t n = d.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major > 1) out += std::string(2, '\0');
  return out + d;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) { return e.what(); }
  return "(no InputError)";
}
}  // namespace

TEST(NpyHeader, NumpyWrittenBytesParse) {
  ASSERT_EQ(kNumpyC34.size(), 128u);
  NpyHeader h = parse_npy_header(kNumpyC34);
  EXPECT_EQ(h.major, 1);
  EXPECT_EQ(h.minor, 0);
  EXPECT_EQ(h.descr, "<f8");
  EXPECT_FALSE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(h.data_offset, 128);
  EXPECT_EQ(h.rows(), 3);
  EXPECT_EQ(h.cols(), 4);
  EXPECT_EQ(npy_header_length(kNumpyC34.substr(0, 12)), 128);
  // data after the header is ignored
  EXPECT_EQ(parse_npy_header(kNumpyC34 + std::string(96, '\0')).shape, h.shape);
}

TEST(NpyHeader, MakeMatchesNumpyBytes) {
  EXPECT_EQ(make_npy_header("<f8", false, 3, 4), kNumpyC34);
  // Fortran order, complex: the same layout with the growth axis padding on the columns.
  const std::string f = make_npy_header("<c16", true, 3, 4);
  EXPECT_EQ(f, std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                   "{'descr': '<c16', 'fortran_order': True, 'shape': (3, 4), }" +
                   std::string(58, ' ') + "\n");
}

TEST(NpyHeader, RoundTrip) {
  for (bool fo : {false, true})
    for (auto [m, n] : {std::pair<std::int64_t, std::int64_t>{0, 0},
                        {1, 1},
                        {7, 5},
                        {123456789, 3},
                        {2, 98765432101LL}}) {
      const std::string h = make_npy_header("<c16", fo, m, n);
      EXPECT_EQ(h.size() % 64, 0u) << h;
      EXPECT_EQ(h.back(), '\n');
      NpyHeader p = parse_npy_header(h);
      EXPECT_EQ(p.descr, "<c16");
      EXPECT_EQ(p.fortran_order, fo);
      EXPECT_EQ(p.shape, (std::vector<std::int64_t>{m, n}));
      EXPECT_EQ(p.data_offset, static_cast<std::int64_t>(h.size()));
    }
}

TEST(NpyHeader, VersionsAndVariants) {
  const std::string dict = "{'descr': '<f8', 'fortran_order': True, 'shape': (5,), }";
  for (int v : {1, 2, 3}) {
    NpyHeader h = parse_npy_header(with_dict(dict, v));
    EXPECT_EQ(h.major, v);
    EXPECT_EQ(h.shape, (std::vector<std::int64_t>{5}));
    EXPECT_EQ(h.rows(), 5);
    EXPECT_EQ(h.cols(), 1);
    EXPECT_EQ(h.data_offset, static_cast<std::int64_t>((v == 1 ? 10 : 12) + dict.size() + 1));
  }
  // key order, double quotes, no trailing comma, Python 2 longs, 3-D
  NpyHeader h = parse_npy_header(
      with_dict("{\"shape\": (2L, 3L, 4L), \"fortran_order\": False, \"descr\": \"<i4\"}"));
  EXPECT_EQ(h.descr, "<i4");
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{2, 3, 4}));
  // 0-D and structured dtypes parse (they are rejected later, by check_npy_header)
  EXPECT_TRUE(parse_npy_header(with_dict("{'descr': '<f8', 'fortran_order': False, 'shape': ()}"))
                  .shape.empty());
  EXPECT_EQ(parse_npy_header(with_dict("{'descr': [('a', '<f8'), ('b', '<i4')], "
                                       "'fortran_order': False, 'shape': (3,)}"))
                .descr,
            "[('a', '<f8'), ('b', '<i4')]");
}

TEST(NpyHeader, MalformedThrows) {
  EXPECT_NE(error_of([] {
              parse_npy_header("hello world, not numpy", "x.txt");
            }).find("x.txt is not a .npy file"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_npy_header(""); }).find("not a .npy file"), std::string::npos);
  EXPECT_NE(error_of([] { parse_npy_header(std::string("\x93NUM", 4)); }).find("not a .npy"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_npy_header(kNumpyC34.substr(0, 9)); }).find("truncated"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_npy_header(kNumpyC34.substr(0, 100), "a.npy");
            }).find("a.npy is truncated: 100 bytes, but its header needs 128"),
            std::string::npos);
  std::string v4 = kNumpyC34;
  v4[6] = 4;
  EXPECT_NE(error_of([&] { parse_npy_header(v4); }).find("unsupported .npy format version 4.0"),
            std::string::npos);
  const char* bad[] = {
      "",                                                                   // no dict
      "['descr', '<f8']",                                                   // not a dict
      "{'descr': '<f8', 'fortran_order': False}",                           // missing shape
      "{'descr': '<f8', 'shape': (3, 4)}",                                  // missing fortran_order
      "{'fortran_order': False, 'shape': (3, 4)}",                          // missing descr
      "{'descr': '<f8', 'fortran_order': 0, 'shape': (3, 4)}",              // not a bool
      "{'descr': '<f8', 'fortran_order': False, 'shape': 3}",               // not a tuple
      "{'descr': '<f8', 'fortran_order': False, 'shape': (3, -4)}",         // negative
      "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4.5)}",        // not integers
      "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), 'x': 1}",  // extra key
      "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (3, 4)}",  // twice
      "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4)",                   // unterminated
      "{'descr': '<f8 , 'fortran_order': False, 'shape': (3, 4)}",                  // bad quoting
      "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4)} extra",
      "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999, 4)}",
  };
  for (const char* d : bad)
    EXPECT_NE(error_of([&] { parse_npy_header(with_dict(d), "b.npy"); }).find("b.npy"),
              std::string::npos)
        << d;
  EXPECT_THROW(make_npy_header("<f8", true, -1, 3), DimensionMismatch);
  EXPECT_THROW(make_npy_header("<f'8", true, 1, 3), InputError);
}

TEST(NpyHeader, CheckDtypeShapeAndSize) {
  auto h = parse_npy_header(make_npy_header("<f8", true, 3, 4));
  EXPECT_NO_THROW(check_npy_header(h, "<f8", "float64", 128 + 96, "A.npy"));
  EXPECT_EQ(error_of([&] { check_npy_header(h, "<f8", "float64", 200, "A.npy"); }),
            "A.npy is truncated: 200 bytes, expected 224 (128-byte header + 3 x 4 elements of 8 "
            "bytes)");
  EXPECT_EQ(error_of([&] { check_npy_header(h, "<c16", "complex128", 1000, "A.npy"); }),
            "A.npy: dtype '<f8', expected '<c16' (complex128)");
  auto i4 = parse_npy_header(make_npy_header("<i4", false, 3, 4));
  EXPECT_EQ(error_of([&] { check_npy_header(i4, "<f8", "float64", 1000, "B.npy"); }),
            "B.npy: dtype '<i4', expected '<f8' (float64)");
  auto be = parse_npy_header(make_npy_header(">f8", false, 3, 4));
  EXPECT_NE(error_of([&] {
              check_npy_header(be, "<f8", "float64", 1000, "C.npy");
            }).find("C.npy is big-endian"),
            std::string::npos);
  auto d3 =
      parse_npy_header(with_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }"));
  EXPECT_EQ(error_of([&] { check_npy_header(d3, "<f8", "float64", 1000, "D.npy"); }),
            "D.npy holds a 3-D array of shape (2, 3, 4), expected a 2-D matrix (or a 1-D vector)");
  auto d0 = parse_npy_header(with_dict("{'descr': '<f8', 'fortran_order': False, 'shape': ()}"));
  EXPECT_NE(
      error_of([&] { check_npy_header(d0, "<f8", "float64", 1000, "E.npy"); }).find("0-D array"),
      std::string::npos);
  // 1-D is n x 1
  auto v = parse_npy_header(with_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (5,)}"));
  EXPECT_NO_THROW(check_npy_header(v, "<f8", "float64", v.data_offset + 40, "v.npy"));
  EXPECT_THROW(check_npy_header(v, "<f8", "float64", v.data_offset + 39, "v.npy"), InputError);
  // absurd shapes do not overflow
  auto big = parse_npy_header(make_npy_header("<f8", true, 1LL << 40, 1LL << 40));
  EXPECT_NE(
      error_of([&] { check_npy_header(big, "<f8", "float64", 1000, "F.npy"); }).find("too large"),
      std::string::npos);
}

TEST(NpyHeader, ExpectShape) {
  EXPECT_NO_THROW(expect_shape("A.npy", 3, 4, 3, 4));
  EXPECT_EQ(error_of([] { expect_shape("A.npy", 3, 5, 3, 4); }),
            "file A.npy is 3 x 4, expected 3 x 5");
}

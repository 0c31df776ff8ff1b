// .npy read/write with collective MPI-IO: round trips through random block-cyclic layouts,
// files written by NumPy (and tessel's files read by NumPy), and collective errors.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tessel/dense/dist_matrix.hpp"
#include "tessel/io/npy.hpp"
#include "test_util.hpp"

using namespace tessel;
using cplx = std::complex<double>;
namespace fs = std::filesystem;

namespace {

std::string bcast_string(const Context& ctx, std::string s) {
  int n = static_cast<int>(s.size());
  ctx.comm().bcast(&n, 1, 0);
  s.resize(static_cast<std::size_t>(n));
  ctx.comm().bcast(s.data(), n, 0);
  return s;
}

int bcast_int(const Context& ctx, int v) {
  ctx.comm().bcast(&v, 1, 0);
  return v;
}

/// A fresh directory made by rank 0, removed (by rank 0) when the test ends.
struct TempDir {
  const Context& ctx;
  std::string path;
  explicit TempDir(const Context& c) : ctx(c) {
    std::string p;
    if (ctx.rank() == 0) {
      const char* base = std::getenv("TMPDIR");
      std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tessel_npy_XXXXXX";
      std::vector<char> buf(tmpl.begin(), tmpl.end());
      buf.push_back('\0');
      if (::mkdtemp(buf.data())) p = buf.data();
    }
    path = bcast_string(ctx, p);
    if (path.empty()) throw std::runtime_error("mkdtemp failed");
  }
  ~TempDir() {
    ctx.comm().barrier();
    std::error_code ec;
    if (ctx.rank() == 0) fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
  /// Names in the directory (rank 0's view), sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

using tessel::testing::grid_for;

layout::Layout random_layout(std::mt19937& rng, std::int64_t m, std::int64_t n, int p, int pick) {
  auto g = grid_for(p, pick);
  std::vector<int> ranks;  // sometimes a permuted assignment of grid positions to ranks
  if (pick % 4 == 2) {
    for (int i = 0; i < g.first * g.second; ++i) ranks.push_back(p - 1 - i);
  }
  return layout::Layout::block_cyclic(m, n, 1 + rng() % 5, 1 + rng() % 4, g.first, g.second,
                                      static_cast<int>(rng() % g.first),
                                      static_cast<int>(rng() % g.second), p, ranks);
}

template <class T>
T value_at(std::int64_t i, std::int64_t j, unsigned seed);
template <>
double value_at<double>(std::int64_t i, std::int64_t j, unsigned seed) {
  return static_cast<double>(i) * 1000.0 + static_cast<double>(j) + seed * 0.125 + 1.0 / 3.0;
}
template <>
cplx value_at<cplx>(std::int64_t i, std::int64_t j, unsigned seed) {
  return {value_at<double>(i, j, seed), -static_cast<double>(j) * 7.0 - i - 0.1};
}

template <class T>
int count_bad(dense::DistMatrix<T>& x, unsigned seed) {
  int bad = 0;
  x.for_each_local([&](std::int64_t i, std::int64_t j, T& v) {
    if (v != value_at<T>(i, j, seed)) ++bad;
  });
  return bad;
}

template <class T>
dense::DistMatrix<T> make_matrix(const Context& ctx, const layout::Layout& l, unsigned seed) {
  dense::DistMatrix<T> x(ctx, l);
  x.for_each_local([&](std::int64_t i, std::int64_t j, T& v) { v = value_at<T>(i, j, seed); });
  return x;
}

/// Throws on every rank? Checks that f throws tessel::InputError on this rank whose message
/// contains every needle, and that every rank threw.
template <class F>
void expect_input_error_everywhere(const Context& ctx, F&& f,
                                   const std::vector<std::string>& needles) {
  bool threw = false;
  std::string msg;
  try {
    f();
  } catch (const InputError& e) {
    threw = true;
    msg = e.what();
  } catch (const std::exception& e) { msg = std::string("not an InputError: ") + e.what(); }
  EXPECT_TRUE(threw) << msg;
  int all = ctx.comm().allreduce_value(threw ? 1 : 0, MPI_MIN);
  EXPECT_EQ(all, 1) << "some rank did not throw";
  for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << msg;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A .npy header with an arbitrary dictionary, padded as NumPy pads.
std::string header_with_dict(std::string dict) {
  std::size_t hlen = dict.size() + 1;
  std::size_t pad = 64 - (10 + hlen) % 64;
  dict += std::string(pad, ' ') + "\n";
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  return out + dict;
}

/// The python3 on PATH or /usr/bin/python3, whichever imports numpy ("" if none does).
std::string python_with_numpy(const Context& ctx) {
  std::string py;
  if (ctx.rank() == 0)
    for (const char* cand : {"python3", "/usr/bin/python3"})
      if (std::system((std::string(cand) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) {
        py = cand;
        break;
      }
  return bcast_string(ctx, py);
}

template <class T>
void round_trips(const Context& ctx, const TempDir& dir, unsigned seed0) {
  std::mt19937 rng(seed0);  // same on all ranks
  const int p = ctx.size();
  // 6 trials cover every kind of layout random_layout makes (trial % 2, % 3, % 4 for both
  // layouts) besides the 1 x 1 and 17 x 1 cases; at <= 4 ranks 4 more random sizes. Above 4
  // ranks each trial's three MPI-IO opens and closes cost seconds under MPICH (docs/mpich.md).
  const int trials = p <= 4 ? 10 : 6;
  for (int trial = 0; trial < trials; ++trial) {
    const unsigned seed = seed0 + static_cast<unsigned>(trial);
    std::int64_t m = 1 + rng() % 23, n = 1 + rng() % 19;
    if (trial == 0) m = n = 1;
    if (trial == 1) {
      m = 17;
      n = 1;
    }
    auto l1 = random_layout(rng, m, n, p, trial);
    auto l2 = random_layout(rng, m, n, p, trial + 1);
    const std::string path = dir / ("rt_" + std::to_string(trial) + ".npy");
    {
      auto x = make_matrix<T>(ctx, l1, seed);
      io::write_npy(ctx, path, x);
    }
    // read back into another layout; every local element must have its global value
    auto y = io::read_npy<T>(ctx, path, [&](std::int64_t r, std::int64_t c) {
      EXPECT_EQ(r, m);
      EXPECT_EQ(c, n);
      return l2;
    });
    EXPECT_EQ(y.layout(), l2);
    EXPECT_EQ(count_bad(y, seed), 0)
        << "trial " << trial << " " << l1.describe() << " -> " << l2.describe();
    // and against the gathered matrix, independently of the file view
    auto full = dense::gather(ctx, y);
    if (ctx.rank() == 0) {
      int bad = 0;
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i)
          if (full[static_cast<std::size_t>(j * m + i)] != value_at<T>(i, j, seed)) ++bad;
      EXPECT_EQ(bad, 0) << "trial " << trial;
      // the file is exactly header + data, with the header NumPy writes
      const std::string h = io::make_npy_header(io::npy_descr<T>(), true, m, n);
      EXPECT_EQ(static_cast<std::int64_t>(fs::file_size(path)),
                static_cast<std::int64_t>(h.size()) + m * n * static_cast<std::int64_t>(sizeof(T)));
    }
    // the same file read onto the last rank only
    auto z = io::read_npy<T>(ctx, path, [&](std::int64_t r, std::int64_t c) {
      return layout::Layout::on_rank(r, c, p - 1, p);
    });
    EXPECT_EQ(count_bad(z, seed), 0) << "trial " << trial;
  }
}

}  // namespace

TEST(Npy, RoundTripRandomLayoutsDouble) {
  Context ctx(MPI_COMM_WORLD);
  TempDir dir(ctx);
  round_trips<double>(ctx, dir, 1000);
  if (ctx.rank() == 0)
    for (const auto& e : dir.entries()) EXPECT_EQ(e.find(".tmp."), std::string::npos) << e;
}

TEST(Npy, RoundTripRandomLayoutsComplex) {
  Context ctx(MPI_COMM_WORLD);
  TempDir dir(ctx);
  round_trips<cplx>(ctx, dir, 2000);
}

TEST(Npy, WriteFromViewWithPaddedLeadingDimensionAndOverwrite) {
  Context ctx(MPI_COMM_WORLD);
  TempDir dir(ctx);
  const std::int64_t m = 11, n = 9;
  auto g = grid_for(ctx.size(), 1);
  auto l = layout::Layout::block_cyclic(m, n, 3, 2, g.first, g.second, 0, 0, ctx.size());
  const std::int64_t ld = l.local_rows(ctx.rank()) + 3;
  std::vector<double> store(
      static_cast<std::size_t>(ld * std::max<std::int64_t>(1, l.local_cols(ctx.rank()))), -1.0);
  auto v = dense::DistMatrix<double>::view(l, ctx.rank(), store.data(), ld);
  v.for_each_local(
      [&](std::int64_t i, std::int64_t j, double& x) { x = value_at<double>(i, j, 7); });
  const std::string path = dir / "view.npy";
  io::write_npy(ctx, path, make_matrix<double>(ctx, l, 3));  // first version
  io::write_npy(ctx, path, v);                               // replaced in place
  auto y = io::read_npy<double>(ctx, path, [&](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, 2, 5, 1, ctx.size(), 0, 0, ctx.size());
  });
  EXPECT_EQ(count_bad(y, 7), 0);
  // the padding rows of the view were not written
  auto w = io::read_npy<double>(ctx, path, [&](std::int64_t r, std::int64_t c) {
    return layout::Layout::on_rank(r, c, 0, ctx.size());
  });
  EXPECT_EQ(count_bad(w, 7), 0);
  if (ctx.rank() == 0) {
    auto e = dir.entries();
    EXPECT_EQ(e, std::vector<std::string>{"view.npy"});
  }
}

TEST(Npy, EmptyMatrix) {
  Context ctx(MPI_COMM_WORLD);
  TempDir dir(ctx);
  for (auto [m, n] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {0, 5}, {4, 0}}) {
    auto l = layout::Layout::block_cyclic(m, n, 2, 2, 1, ctx.size(), 0, 0, ctx.size());
    const std::string path = dir / "empty.npy";
    io::write_npy(ctx, path, dense::DistMatrix<double>(ctx, l));
    auto h = io::read_npy_header(ctx, path);
    EXPECT_EQ(h.shape, (std::vector<std::int64_t>{m, n}));
    auto y = io::read_npy<double>(ctx, path, [&](std::int64_t r, std::int64_t c) {
      return layout::Layout::block_cyclic(r, c, 3, 1, ctx.size(), 1, 0, 0, ctx.size());
    });
    EXPECT_EQ(y.rows(), m);
    EXPECT_EQ(y.cols(), n);
  }
}

TEST(Npy, ReadsNumpyFilesAndNumpyReadsOurs) {
  Context ctx(MPI_COMM_WORLD);
  const std::string py = python_with_numpy(ctx);
  if (py.empty()) GTEST_SKIP() << "python3 with numpy not found";
  TempDir dir(ctx);
  const std::int64_t m = 13, n = 11;
  // a[i, j] = i*100 + j; z = a + 1j*(i - 2j)
  const std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "i, j = np.meshgrid(np.arange(13), np.arange(11), indexing='ij')\n"
      "a = (i * 100 + j).astype('<f8')\n"
      "z = (a + 1j * (i - 2 * j)).astype('<c16')\n"
      "np.save(d + '/c_f8.npy', np.ascontiguousarray(a))\n"
      "np.save(d + '/f_f8.npy', np.asfortranarray(a))\n"
      "np.save(d + '/c_c16.npy', np.ascontiguousarray(z))\n"
      "np.save(d + '/f_c16.npy', np.asfortranarray(z))\n"
      "np.save(d + '/v_f8.npy', np.arange(9) * 1.5)\n"
      "np.save(d + '/i4.npy', a.astype('<i4'))\n"
      "np.save(d + '/d3.npy', np.zeros((2, 3, 4)))\n"
      "np.save(d + '/be.npy', a.astype('>f8'))\n"
      "assert not np.isfortran(np.load(d + '/c_f8.npy'))\n"
      "assert np.isfortran(np.load(d + '/f_f8.npy'))\n";
  int rc = 0;
  if (ctx.rank() == 0) {
    write_bytes(dir / "gen.py", script);
    rc = std::system((py + " " + dir / "gen.py" + " " + dir.path).c_str());
  }
  ASSERT_EQ(bcast_int(ctx, rc), 0) << "the numpy generator failed";

  std::mt19937 rng(5);
  for (int trial = 0; trial < 4; ++trial) {
    auto make = [&](std::int64_t r, std::int64_t c) {
      EXPECT_EQ(r, m);
      EXPECT_EQ(c, n);
      return random_layout(rng, r, c, ctx.size(), trial);
    };
    for (const char* name : {"c_f8.npy", "f_f8.npy"}) {
      auto x = io::read_npy<double>(ctx, dir / name, make);
      int bad = 0;
      x.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
        if (v != static_cast<double>(i * 100 + j)) ++bad;
      });
      EXPECT_EQ(bad, 0) << name << " trial " << trial;
    }
    for (const char* name : {"c_c16.npy", "f_c16.npy"}) {
      auto x = io::read_npy<cplx>(ctx, dir / name, make);
      int bad = 0;
      x.for_each_local([&](std::int64_t i, std::int64_t j, cplx& v) {
        if (v != cplx(static_cast<double>(i * 100 + j), static_cast<double>(i - 2 * j))) ++bad;
      });
      EXPECT_EQ(bad, 0) << name << " trial " << trial;
    }
  }
  // 1-D reads as n x 1
  auto v = io::read_npy<double>(ctx, dir / "v_f8.npy", [&](std::int64_t r, std::int64_t c) {
    EXPECT_EQ(r, 9);
    EXPECT_EQ(c, 1);
    return layout::Layout::block_cyclic(r, c, 2, 1, ctx.size(), 1, 0, 0, ctx.size());
  });
  int bad = 0;
  v.for_each_local([&](std::int64_t i, std::int64_t j, double& x) {
    if (j != 0 || x != 1.5 * static_cast<double>(i)) ++bad;
  });
  EXPECT_EQ(bad, 0);
  // NumPy-written error cases
  auto any = [&](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, 2, 2, 1, ctx.size(), 0, 0, ctx.size());
  };
  expect_input_error_everywhere(ctx, [&] { io::read_npy<double>(ctx, dir / "i4.npy", any); },
                                {dir / "i4.npy", "'<i4', expected '<f8' (float64)"});
  expect_input_error_everywhere(ctx, [&] { io::read_npy<cplx>(ctx, dir / "f_f8.npy", any); },
                                {"'<f8', expected '<c16' (complex128)"});
  expect_input_error_everywhere(ctx, [&] { io::read_npy<double>(ctx, dir / "d3.npy", any); },
                                {dir / "d3.npy", "3-D", "(2, 3, 4)"});
  expect_input_error_everywhere(ctx, [&] { io::read_npy<double>(ctx, dir / "be.npy", any); },
                                {dir / "be.npy", "big-endian"});

  // NumPy reads what tessel writes (Fortran order, both dtypes), values by formula.
  {
    auto l = random_layout(rng, m, n, ctx.size(), 1);
    dense::DistMatrix<double> a(ctx, l);
    a.for_each_local([](std::int64_t i, std::int64_t j, double& x) { x = i * 100.0 + j; });
    io::write_npy(ctx, dir / "t_f8.npy", a);
    dense::DistMatrix<cplx> z(ctx, l);
    z.for_each_local([](std::int64_t i, std::int64_t j, cplx& x) {
      x = cplx(i * 100.0 + j, static_cast<double>(i - 2 * j));
    });
    io::write_npy(ctx, dir / "t_c16.npy", z);
  }
  const std::string check =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "i, j = np.meshgrid(np.arange(13), np.arange(11), indexing='ij')\n"
      "a = np.load(d + '/t_f8.npy')\n"
      "z = np.load(d + '/t_c16.npy')\n"
      "assert a.dtype == np.float64 and a.shape == (13, 11) and np.isfortran(a)\n"
      "assert z.dtype == np.complex128 and z.shape == (13, 11) and np.isfortran(z)\n"
      "assert (a == i * 100 + j).all()\n"
      "assert (z == i * 100 + j + 1j * (i - 2 * j)).all()\n";
  if (ctx.rank() == 0) {
    write_bytes(dir / "check.py", check);
    rc = std::system((py + " " + dir / "check.py" + " " + dir.path).c_str());
  }
  EXPECT_EQ(bcast_int(ctx, rc), 0) << "numpy could not read tessel's files";
}

// C-order (fortran_order False) files without NumPy: each rank's elements are strided in
// its local buffer (regression: MPICH's ROMIO before 4.1 mangled such memory types).
template <class T>
void reads_c_order(const Context& ctx, const TempDir& dir, unsigned seed0) {
  std::mt19937 rng(seed0);
  for (int trial = 0; trial < 4; ++trial) {
    const unsigned seed = seed0 + static_cast<unsigned>(trial);
    std::int64_t m = 1 + rng() % 17, n = 1 + rng() % 13;
    if (trial == 1) m = 1;
    if (trial == 2) n = 1;
    const std::string path = dir / ("c_" + std::to_string(trial) + ".npy");
    if (ctx.rank() == 0) {
      std::string data;
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          const T v = value_at<T>(i, j, seed);
          data.append(reinterpret_cast<const char*>(&v), sizeof v);
        }
      write_bytes(path, io::make_npy_header(io::npy_descr<T>(), false, m, n) + data);
    }
    ctx.comm().barrier();
    auto l = random_layout(rng, m, n, ctx.size(), trial + 2);
    auto x = io::read_npy<T>(ctx, path, [&](std::int64_t, std::int64_t) { return l; });
    EXPECT_EQ(count_bad(x, seed), 0) << "trial " << trial << " " << l.describe();
  }
}

TEST(Npy, ReadsCOrderFilesIntoRandomLayouts) {
  Context ctx(MPI_COMM_WORLD);
  TempDir dir(ctx);
  reads_c_order<double>(ctx, dir, 3000);
  reads_c_order<cplx>(ctx, dir, 4000);
}

TEST(Npy, ErrorsAreCollective) {
  Context ctx(MPI_COMM_WORLD);
  TempDir dir(ctx);
  const int p = ctx.size();
  auto any = [&](std::int64_t r, std::int64_t c) {
    return layout::Layout::block_cyclic(r, c, 2, 3, p, 1, 0, 0, p);
  };
  if (ctx.rank() == 0) {
    // truncated: a 4 x 5 float64 header with 10 of its 20 values
    write_bytes(dir / "trunc.npy",
                io::make_npy_header("<f8", true, 4, 5) + std::string(10 * 8, '\1'));
    write_bytes(dir / "short_header.npy", io::make_npy_header("<f8", true, 4, 5).substr(0, 40));
    write_bytes(dir / "text.npy", "this is not a numpy file\n1 2 3\n");
    write_bytes(dir / "i4.npy", io::make_npy_header("<i4", false, 3, 4) + std::string(48, '\0'));
    write_bytes(dir / "d3.npy",
                header_with_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }") +
                    std::string(24 * 8, '\0'));
    write_bytes(dir / "bad_dict.npy",
                header_with_dict("{'descr': '<f8', 'fortran_order': maybe, 'shape': (2, 3), }") +
                    std::string(6 * 8, '\0'));
    fs::create_directory(dir / "a_directory.npy");
  }
  ctx.comm().barrier();

  expect_input_error_everywhere(ctx, [&] { io::read_npy<double>(ctx, dir / "trunc.npy", any); },
                                {dir / "trunc.npy", "truncated", "208 bytes", "expected 288"});
  expect_input_error_everywhere(ctx,
                                [&] { io::read_npy<double>(ctx, dir / "short_header.npy", any); },
                                {dir / "short_header.npy", "truncated"});
  expect_input_error_everywhere(ctx, [&] { io::read_npy<double>(ctx, dir / "text.npy", any); },
                                {dir / "text.npy", "not a .npy file"});
  expect_input_error_everywhere(ctx, [&] { io::read_npy<double>(ctx, dir / "i4.npy", any); },
                                {dir / "i4.npy", "dtype '<i4', expected '<f8' (float64)"});
  expect_input_error_everywhere(ctx, [&] { io::read_npy<cplx>(ctx, dir / "i4.npy", any); },
                                {"dtype '<i4', expected '<c16' (complex128)"});
  expect_input_error_everywhere(ctx, [&] { io::read_npy<double>(ctx, dir / "d3.npy", any); },
                                {dir / "d3.npy", "3-D array of shape (2, 3, 4)"});
  expect_input_error_everywhere(ctx, [&] { io::read_npy<double>(ctx, dir / "bad_dict.npy", any); },
                                {dir / "bad_dict.npy", "malformed"});
  expect_input_error_everywhere(ctx, [&] { io::read_npy<double>(ctx, dir / "missing.npy", any); },
                                {dir / "missing.npy", "No such file"});
  expect_input_error_everywhere(ctx, [&] { io::read_npy_header(ctx, dir / "missing.npy"); },
                                {dir / "missing.npy"});
  expect_input_error_everywhere(ctx,
                                [&] { io::read_npy<double>(ctx, dir / "a_directory.npy", any); },
                                {dir / "a_directory.npy", "directory"});

  // a make_layout that throws on one rank only: every rank throws it
  {
    auto ok = make_matrix<double>(ctx, any(5, 4), 1);
    io::write_npy(ctx, dir / "ok.npy", ok);
    bool threw = false;
    try {
      io::read_npy<double>(ctx, dir / "ok.npy", [&](std::int64_t r, std::int64_t c) {
        TESSEL_CHECK(ctx.rank() != p - 1, GridError, "no grid on the last rank");
        return any(r, c);
      });
    } catch (const GridError& e) {
      threw = std::string(e.what()).find("no grid on the last rank") != std::string::npos;
    }
    EXPECT_TRUE(threw);
    EXPECT_EQ(ctx.comm().allreduce_value(threw ? 1 : 0, MPI_MIN), 1);
  }

  // writes that cannot happen leave nothing behind
  auto x = make_matrix<double>(ctx, any(6, 5), 2);
  expect_input_error_everywhere(ctx, [&] { io::write_npy(ctx, "/nonexistent_dir/x.npy", x); },
                                {"/nonexistent_dir/x.npy"});
  if (ctx.rank() == 0) EXPECT_FALSE(fs::exists("/nonexistent_dir"));
  expect_input_error_everywhere(ctx, [&] { io::write_npy(ctx, dir / "no/such/x.npy", x); },
                                {dir / "no/such/x.npy"});
  // the temporary file is written, but renaming it over a directory fails: it is removed
  expect_input_error_everywhere(ctx, [&] { io::write_npy(ctx, dir / "a_directory.npy", x); },
                                {dir / "a_directory.npy", "rename"});
  ctx.comm().barrier();
  if (ctx.rank() == 0) {
    std::vector<std::string> want = {"a_directory.npy", "bad_dict.npy", "d3.npy",
                                     "i4.npy",          "ok.npy",       "short_header.npy",
                                     "text.npy",        "trunc.npy"};
    EXPECT_EQ(dir.entries(), want);
    EXPECT_TRUE(fs::is_empty(dir / "a_directory.npy"));
  }
  // the error left the library usable: a good write and read still work
  io::write_npy(ctx, dir / "after.npy", x);
  auto y = io::read_npy<double>(ctx, dir / "after.npy", any);
  EXPECT_EQ(count_bad(y, 2), 0);
}

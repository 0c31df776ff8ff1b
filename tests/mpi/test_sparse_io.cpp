// Block-sparse I/O: every malformed-file case expected as the same InputError (file, line,
// what) on every rank, plain and gzip; write -> read round trips; CP2K's own files against a
// tiny serial reader written here (sscanf over every line, zlib's gzgets for .gz) through the
// test's dense reference (sparse_test_util.hpp: values and stored blocks).
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "cp2k_test_util.hpp"
#include "sparse_test_util.hpp"
#include "tessel/core/context.hpp"
#include "tessel/io/sparse.hpp"

using namespace tessel;
using namespace tessel::sparse;
using namespace tessel::io;
using namespace tessel::testing;

namespace {

int rank_of() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

/// A file name in the build directory, the same on every rank.
std::string tmp_path(const std::string& name) {
  return "sparse_io_" + std::to_string(world_size()) + "_" + name;
}

/// Rank 0 writes `text` (gzip-compressed when gz) once every rank is done with the file's
/// previous content; everyone waits.
void put_file(const std::string& path, const std::string& text, bool gz = false) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank_of() == 0) {
    if (gz) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
      gzclose(f);
    } else {
      std::FILE* f = std::fopen(path.c_str(), "wb");
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

/// The serial reference reader: every "row col value" line with sscanf; `stored` marks every
/// block with at least one line.
DenseRef reference_csr(const std::string& path, const BlockSizes& bs) {
  Distribution d(bs, bs, 1, 1, std::vector<int>(static_cast<std::size_t>(bs.count()), 0),
                 std::vector<int>(static_cast<std::size_t>(bs.count()), 0));
  DenseRef ref = empty_ref(d);
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  char line[256];
  while (gzgets(f, line, sizeof line)) {
    long long i, j;
    double v;
    if (std::sscanf(line, "%lld %lld %lf", &i, &j, &v) != 3) continue;
    ref.at(i - 1, j - 1) = v;
    ref.stored[static_cast<std::size_t>(bs.block_of(i - 1)) * bs.count() + bs.block_of(j - 1)] = 1;
  }
  gzclose(f);
  return ref;
}

/// Expects InputError on every rank (the call is collective) whose message contains each of
/// `parts`.
template <class F>
void expect_input_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected InputError containing " << parts.front();
  } catch (const InputError& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message: " << e.what() << "\nexpected to contain: " << p;
  }
}

/// Block sizes {4, 1, 1, 4, 1, 1} (two waters, n = 12) and a dense valid CSR of it.
BlockSizes small_sizes() { return BlockSizes({4, 1, 1, 4, 1, 1}); }
std::vector<std::string> small_lines() {
  std::vector<std::string> lines;
  char buf[64];
  for (int i = 1; i <= 12; ++i)
    for (int j = 1; j <= 12; ++j) {
      std::snprintf(buf, sizeof buf, "%8d%8d %22.14E", i, j, 1.0 / (i + j) - (i == j ? 2 : 0));
      lines.push_back(buf);
    }
  return lines;
}
std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

}  // namespace

TEST(SparseIo, BlockSizesFile) {
  const std::string p = tmp_path("bs.txt");
  put_file(p, "# atoms\n4\n1\n\n1\n");
  EXPECT_EQ(read_block_sizes(p), BlockSizes({4, 1, 1}));
  put_file(p, "4\n0\n");
  expect_input_error([&] { read_block_sizes(p); }, {p, "line 2", "block size 0, expected >= 1"});
  put_file(p, "4\n1 1\n");
  expect_input_error([&] { read_block_sizes(p); }, {p, "line 2", "expected one block size"});
  put_file(p, "\n# nothing\n");
  expect_input_error([&] { read_block_sizes(p); }, {p, "no block sizes"});
  expect_input_error([&] { read_block_sizes(p + ".missing"); }, {p + ".missing", "cannot read"});
}

TEST(SparseIo, Cp2kCsrReadsAValidFile) {
  Context ctx(MPI_COMM_WORLD);
  for (bool gz : {false, true}) {
    const std::string p = tmp_path(gz ? "ok.csr.gz" : "ok.csr");
    auto lines = small_lines();
    // Leave out block (row block 1, col block 3) entirely and half of block (0, 0): missing
    // entries are zeros, blocks with no line are not stored.
    std::vector<std::string> kept;
    for (std::size_t k = 0; k < lines.size(); ++k) {
      const int i = static_cast<int>(k / 12), j = static_cast<int>(k % 12);
      if (i == 4 && j >= 6 && j < 10) continue;
      if (i < 4 && j < 4 && (i + j) % 2) continue;
      kept.push_back(lines[k]);
    }
    put_file(p, join(kept), gz);
    const BlockSizes bs = small_sizes();
    auto [pr, pc] = Distribution::default_grid(ctx.size());
    auto m = read_cp2k_csr(ctx, p, Distribution::random(bs, bs, pr, pc, 3));
    check_storage(m, reference_csr(p, bs));
    EXPECT_EQ(nblocks(ctx, m), 36 - 1);
  }
}

TEST(SparseIo, Cp2kCsrMalformedFilesFailOnEveryRank) {
  Context ctx(MPI_COMM_WORLD);
  const BlockSizes bs = small_sizes();
  struct Case {
    const char* what;
    std::function<void(std::vector<std::string>&, std::size_t)> edit;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {"missing value",
       [](auto& l, std::size_t k) { l[k] = l[k].substr(0, 16); },
       {"expected a real number after the indices"}},
      {"not a number",
       [](auto& l, std::size_t k) { l[k] = l[k].substr(0, 16) + " 1.0x"; },
       {"expected a real number"}},
      {"extra field", [](auto& l, std::size_t k) { l[k] += " 7"; }, {"nothing more"}},
      {"row out of range",
       [](auto& l, std::size_t k) { l[k] = "13 " + l[k].substr(8); },
       {"row 13 is out of range", "1 <= row <= 12"}},
      {"column zero",
       [](auto& l, std::size_t k) { l[k] = l[k].substr(0, 8) + " 0 1.0"; },
       {"column 0 is out of range"}},
      {"unsorted",
       [](auto& l, std::size_t k) { std::swap(l[k], l[k - 1]); },
       {"expected lines sorted by row, then column"}},
      {"duplicate", [](auto& l, std::size_t k) { l[k] = l[k - 1]; }, {"duplicate entry"}},
  };
  // Error lines spread over the file so that they fall in every rank's byte range.
  for (std::size_t k :
       {std::size_t(1), std::size_t(37), std::size_t(72), std::size_t(101), std::size_t(143)})
    for (const auto& c : cases)
      for (bool gz : {false, true}) {
        SCOPED_TRACE(std::string(c.what) + " at line " + std::to_string(k + 1) +
                     (gz ? " (gzip)" : ""));
        auto lines = small_lines();
        c.edit(lines, k);
        const std::string p = tmp_path(gz ? "bad.csr.gz" : "bad.csr");
        put_file(p, join(lines), gz);
        // an unsorted swap reports the later of the two lines
        auto expect = c.expect;
        expect.push_back(p + ", line " + std::to_string(k + 1) + ":");
        expect_input_error([&] { read_cp2k_csr(ctx, p, bs, bs); }, expect);
      }
}

TEST(SparseIo, Cp2kCsrBlockSizesAndPattern) {
  Context ctx(MPI_COMM_WORLD);
  const std::string p = tmp_path("sizes.csr");
  put_file(p, join(small_lines()));
  const BlockSizes big({4, 1, 1, 4, 1, 1, 1});
  expect_input_error([&] { read_cp2k_csr(ctx, p, big, big); },
                     {p, "block sizes sum to 13 x 13", "largest indices in the file are 12 x 12"});
  ReadOptions loose;
  loose.exact_extent = false;
  auto m = read_cp2k_csr(ctx, p, big, big, loose);
  EXPECT_EQ(m.rows(), 13);
  const BlockSizes small({4, 1, 1, 4, 1});
  expect_input_error([&] { read_cp2k_csr(ctx, p, small, small); }, {"out of range", "<= 11"});

  // A pattern without block (2, 4) (1-based): nonzeros there are refused, zeros skipped.
  const BlockSizes bs = small_sizes();
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  BlockSparseMatrix<double> pat(ctx, Distribution::random(bs, bs, pr, pc, 5), "P");
  for (int br = 0; br < 6; ++br)
    for (int bc = 0; bc < 6; ++bc) {
      if (br == 1 && bc == 3) continue;
      std::vector<double> v(static_cast<std::size_t>(bs.size(br)) * bs.size(bc), 1.0);
      if (pat.distribution().owner(br, bc) == ctx.rank()) pat.put_block(br, bc, v.data());
    }
  pat.finalize();
  ReadOptions withpat;
  withpat.pattern = &pat;
  expect_input_error([&] { read_cp2k_csr(ctx, p, bs, bs, withpat); },
                     {p, "line 55:", "(5, 7) lies in block (2, 4)", "pattern does not store"});
  auto lines = small_lines();
  for (int j = 7; j <= 10; ++j) {
    char b[64];
    std::snprintf(b, sizeof b, "%8d%8d  0.0", 5, j);
    lines[static_cast<std::size_t>(4 * 12 + j - 1)] = b;
  }
  put_file(p, join(lines));
  auto q = read_cp2k_csr(ctx, p, bs, bs, withpat);
  EXPECT_EQ(nblocks(ctx, q), 35);
}

TEST(SparseIo, Cp2kCsrTruncatedGzipAndMissingFile) {
  Context ctx(MPI_COMM_WORLD);
  const BlockSizes bs = small_sizes();
  const std::string p = tmp_path("trunc.csr.gz");
  put_file(p, join(small_lines()), true);
  const std::string whole = slurp(p);
  MPI_Barrier(MPI_COMM_WORLD);
  put_file(p, whole.substr(0, whole.size() - 12));  // cut into the deflate data / trailer
  expect_input_error([&] { read_cp2k_csr(ctx, p, bs, bs); }, {p, "gzip stream is", "line"});
  put_file(p, whole.substr(0, whole.size() / 2));
  expect_input_error([&] { read_cp2k_csr(ctx, p, bs, bs); }, {p, "truncated", "line"});
  expect_input_error([&] { read_cp2k_csr(ctx, p + ".none", bs, bs); },
                     {"cannot read", p + ".none"});
  put_file(p, "");
  expect_input_error([&] { read_cp2k_csr(ctx, p, bs, bs); }, {p, "no entries"});
}

TEST(SparseIo, Cp2kCsrRoundTrip) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(21);
  const auto sizes = random_sizes(rng, 7);
  const BlockSizes bs(sizes);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  BlockSparseMatrix<double> a(ctx, Distribution::random(bs, bs, pr, pc, 9), "A");
  DenseRef ref = fill_random(a, rng, 0.4, ctx.size());
  // make sure the last block row and column are stored (exact extent)
  {
    const int l = bs.count() - 1;
    std::vector<double> v(static_cast<std::size_t>(bs.size(l)) * bs.size(l), 0.5);
    if (ctx.rank() == 0) a.put_block(l, l, v.data());
    a.finalize();
    set_block(ref, l, l, v, true);
  }
  // CP2K's E23.14 keeps 14 significant digits: the reference rounded the same way.
  for (auto& x : ref.a) {
    char b[40];
    std::snprintf(b, sizeof b, "%.13E", x);
    x = std::strtod(b, nullptr);
  }
  const std::string p = tmp_path("rt.csr");
  write_cp2k_csr(ctx, a, p);
  const std::string text = slurp(p);
  EXPECT_EQ(text.size() % 40, 0u);
  if (!text.empty()) EXPECT_EQ(text[39], '\n');
  auto b = read_cp2k_csr(ctx, p, Distribution::random(bs, bs, pc, pr, 4));
  check_storage(b, ref);

  // An unwritable path: InputError on every rank, nothing left behind.
  expect_input_error([&] { write_cp2k_csr(ctx, a, "no/such/dir/x.csr"); },
                     {"cannot write no/such/dir/x.csr"});
  // A non-finite value is refused before anything is written.
  BlockSparseMatrix<double> c = a;
  c.for_each_block([](int, int, double* x, int, int) { x[0] = NAN; });
  if (nblocks(ctx, c) > 0) {
    put_file(p, "keep");
    expect_input_error([&] { write_cp2k_csr(ctx, c, p); }, {"non-finite"});
    EXPECT_EQ(slurp(p), "keep");
  }
}

TEST(SparseIo, Cp2kFilesFromSharedData) {
  const std::string dir = tessel::testing::cp2k_dir("").string();  // TESSEL_SHARED_DATA/cp2k/
  if (!exists(dir)) GTEST_SKIP() << dir << " is absent";
  Context ctx(MPI_COMM_WORLD);
  for (const std::string f : {"h2o-32-szv/KS.csr", "h2o-32-szv/S.csr", "h2o-256-szv/S.csr.gz"}) {
    SCOPED_TRACE(f);
    const std::string path = dir + f;
    const BlockSizes bs = read_block_sizes(dir + f.substr(0, f.find('/')) + "/blocksizes.txt");
    auto m = read_cp2k_csr(ctx, path, bs, bs);
    const DenseRef ref = reference_csr(path, bs);
    check_storage(m, ref);
    EXPECT_EQ(nblocks(ctx, m), count_stored(ref));
  }
}

TEST(SparseIo, MatrixMarketHandWritten) {
  Context ctx(MPI_COMM_WORLD);
  const BlockSizes bs({4, 1, 1});
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  const Distribution d = Distribution::random(bs, bs, pr, pc, 2);
  // general, entries in no particular order, a comment line and a blank line
  const std::string p = tmp_path("g.mtx");
  put_file(p,
           "%%MatrixMarket matrix coordinate real general\n% comment\n6 6 5\n"
           "6 1 -2.5\n1 1 1.0\n\n5 5 3e-3\n2 3 7\n1 6 4\n");
  auto g = read_matrix_market(ctx, p, d);
  DenseRef ref = empty_ref(d);
  ref.at(5, 0) = -2.5, ref.at(0, 0) = 1, ref.at(4, 4) = 3e-3, ref.at(1, 2) = 7, ref.at(0, 5) = 4;
  for (auto [br, bc] : {std::pair{2, 0}, {0, 0}, {1, 1}, {0, 2}}) ref.stored[br * 3 + bc] = 1;
  check_storage(g, ref);
  // symmetric: the lower triangle, mirrored
  put_file(p, "%%MatrixMarket matrix coordinate real symmetric\n6 6 3\n6 1 -2.5\n1 1 1.0\n5 4 2\n");
  auto s = read_matrix_market(ctx, p, d);
  DenseRef sr = empty_ref(d);
  sr.at(5, 0) = sr.at(0, 5) = -2.5, sr.at(0, 0) = 1, sr.at(4, 3) = sr.at(3, 4) = 2;
  for (auto [br, bc] : {std::pair{2, 0}, {0, 2}, {0, 0}, {1, 0}, {0, 1}})
    sr.stored[br * 3 + bc] = 1;
  check_storage(s, sr);

  const std::string hdr = "%%MatrixMarket matrix coordinate real general\n";
  struct Bad {
    std::string text;
    std::vector<std::string> expect;
  };
  const std::vector<Bad> bad = {
      {"%%MatrixMarket matrix array real general\n6 6\n", {"line 1", "'coordinate'"}},
      {"%%MatrixMarket matrix coordinate complex general\n6 6 0\n", {"line 1", "field 'complex'"}},
      {"hello\n", {"line 1", "expected the banner"}},
      {hdr + "7 6 1\n1 1 1\n", {"line 2", "the matrix is 7 x 6", "block sizes sum to 6 x 6"}},
      {hdr + "6 6\n", {"line 2", "size line"}},
      {hdr + "6 6 2\n1 1 1\n1 x 2\n", {"line 4", "expected 'row col value'"}},
      {hdr + "6 6 2\n1 1 1\n7 1 2\n", {"line 4", "row 7 is out of range"}},
      {hdr + "6 6 3\n1 1 1\n2 2 2\n1 1 3\n", {"line 5", "duplicate entry (1, 1): line 3"}},
      {hdr + "6 6 3\n1 1 1\n2 2 2\n", {"announces 3 entries, the file holds 2"}},
      {"%%MatrixMarket matrix coordinate real symmetric\n6 6 2\n1 1 1\n1 2 2\n",
       {"line 4", "above the diagonal"}},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.text);
    put_file(p, b.text);
    auto expect = b.expect;
    expect.push_back(p);
    expect_input_error([&] { read_matrix_market(ctx, p, d); }, expect);
  }
}

TEST(SparseIo, MatrixMarketAndNpyRoundTrips) {
  Context ctx(MPI_COMM_WORLD);
  std::mt19937 rng(31);
  const BlockSizes bs(random_sizes(rng, 6));
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  BlockSparseMatrix<double> a(ctx, Distribution::random(bs, bs, pr, pc, 6), "A");
  DenseRef ref = fill_random(a, rng, 0.4, ctx.size());
  const std::string p = tmp_path("rt.mtx");
  write_matrix_market(ctx, a, p);
  check_storage(read_matrix_market(ctx, p, Distribution::random(bs, bs, pc, pr, 8)), ref);
  const std::string q = tmp_path("rt.npy");
  write_npy_blocks(ctx, a, q);
  check_storage(read_npy_blocks(ctx, q, Distribution::random(bs, bs, pc, pr, 8)), ref);
  expect_input_error([&] { write_matrix_market(ctx, a, "no/such/dir/a.mtx"); },
                     {"cannot write no/such/dir/a.mtx"});
  // symmetric: A + A^T written as its lower triangle reads back whole
  std::vector<double> full = ref.a;
  const std::int64_t n = bs.extent();
  BlockSparseMatrix<double> sym(ctx, a.distribution(), "S");
  DenseRef sref = empty_ref(a.distribution());
  for (int br = 0; br < bs.count(); ++br)
    for (int bc = 0; bc < bs.count(); ++bc) {
      if (!ref.has(br, bc) && !ref.has(bc, br)) continue;
      std::vector<double> v;
      for (int j = 0; j < bs.size(bc); ++j)
        for (int i = 0; i < bs.size(br); ++i) {
          const std::int64_t gi = bs.offset(br) + i, gj = bs.offset(bc) + j;
          v.push_back(full[gj * n + gi] + full[gi * n + gj]);
        }
      set_block(sref, br, bc, v, true);
      if (sym.distribution().owner(br, bc) == ctx.rank()) sym.put_block(br, bc, v.data());
    }
  sym.finalize();
  write_matrix_market(ctx, sym, p, true);
  check_storage(read_matrix_market(ctx, p, bs, bs), sref);
}

TEST(SparseIo, MatrixMarketAndNpyFromScipy) {
  const std::string mtx = tmp_path("scipy.mtx"), npy = tmp_path("scipy.npy");
  int ok = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank_of() == 0) {
    const std::string cmd =
        "/usr/bin/python3 -c \"import numpy as np, scipy.sparse as sp, scipy.io as sio\n"
        "a = sp.random(17, 17, density=0.2, random_state=4); a = (a + a.T).tocoo()\n"
        "sio.mmwrite('" +
        mtx +
        "', a, symmetry='symmetric')\n"
        "np.save('" +
        npy + "', a.toarray())\" 2>/dev/null";
    ok = std::system(cmd.c_str()) == 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) GTEST_SKIP() << "python3 with scipy is not available";
  Context ctx(MPI_COMM_WORLD);
  const BlockSizes bs({4, 1, 1, 4, 1, 1, 5});
  auto m = read_matrix_market(ctx, mtx, bs, bs);
  auto [pr, pc] = Distribution::default_grid(ctx.size());
  auto x = read_npy_blocks(ctx, npy, Distribution::random(bs, bs, pr, pc, 5));
  // mmwrite prints 16 significant digits: equal to rounding
  EXPECT_LE(max_abs_diff(dense_of(ctx, m), dense_of(ctx, x)), 1e-15);
  EXPECT_EQ(nblocks(ctx, m), nblocks(ctx, x));  // zero blocks stored by neither
  EXPECT_GT(frobenius_norm(ctx, m), 0.0);
}

// Writing block-sparse matrices as text: check (agreed) -> move the blocks to contiguous
// block-row ranges, one per rank (put_block + finalize, ledger phase "sparse/io") -> each rank
// formats its rows -> offsets from an allgather of the byte counts -> every rank writes its
// part of a temporary file (MPI-IO, independent writes) -> rank 0 renames it when all succeeded.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>

#include "sparse_text.hpp"
#include "tessel/comm/file.hpp"
#include "tessel/core/atomic_file.hpp"
#include "tessel/core/error.hpp"
#include "tessel/io/sparse.hpp"

namespace tessel::io {
namespace {

using detail::concat;
using namespace sparse_text;

/// Collective. `a` on block-row ranges: rank r holds the block rows [b_r, b_{r+1}) (balanced
/// in stored elements' rows by the row extents), all block columns.
BlockSparseMatrix<double> by_row_ranges(const Context& ctx, const BlockSparseMatrix<double>& a) {
  PhaseScope phase(*ctx.comm().ledger(), "sparse/io");
  const Distribution& d = a.distribution();
  const int p = ctx.size();
  const BlockSizes& rows = d.row_blocks();
  std::vector<int> row_dist(static_cast<std::size_t>(rows.count()));
  for (int b = 0; b < rows.count(); ++b)
    row_dist[static_cast<std::size_t>(b)] = static_cast<int>(std::min<std::int64_t>(
        p - 1, rows.offset(b) * p / std::max<std::int64_t>(1, rows.extent())));
  std::vector<int> col_dist(static_cast<std::size_t>(d.col_blocks().count()), 0);
  BlockSparseMatrix<double> out(ctx, Distribution(rows, d.col_blocks(), p, 1, row_dist, col_dist),
                                a.name());
  a.for_each_block([&](int br, int bc, const double* x, int, int) { out.put_block(br, bc, x); });
  out.finalize();
  return out;
}

/// Collective. The checks every writer makes.
void check_write(const Context& ctx, const BlockSparseMatrix<double>& a, const std::string& path) {
  ctx.agree([&] {
    TESSEL_CHECK(!path.empty(), InputError, "writing ", a.name(), ": empty output path");
    TESSEL_CHECK(a.distribution().nranks() == ctx.size(), GridError, "writing ", path, ": ",
                 a.name(), " is distributed over ", a.distribution().nranks(),
                 " ranks, the context has ", ctx.size());
    TESSEL_CHECK(a.is_finalized(), InputError, "writing ", path, ": ", a.name(),
                 " has blocks put since its last finalize()");
    a.for_each_block([&](int br, int bc, const double* x, int r, int c) {
      for (int k = 0; k < r * c; ++k)
        TESSEL_CHECK(std::isfinite(x[k]), InputError, "writing ", path, ": ", a.name(),
                     " holds the non-finite value ", x[k], " in block (", br, ", ", bc,
                     "): expected finite values");
    });
  });
}

/// Collective. Writes `header` (rank 0) followed by every rank's `text` in rank order to
/// `path` through a temporary file.
void write_parts(const Context& ctx, const std::string& path, const std::string& header,
                 const std::string& text) {
  const int p = ctx.size();
  std::int64_t mine = static_cast<std::int64_t>(text.size());
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(p));
  ctx.comm().allgather(&mine, 1, sizes.data());
  std::int64_t offset = static_cast<std::int64_t>(header.size());
  for (int q = 0; q < ctx.rank(); ++q) offset += sizes[static_cast<std::size_t>(q)];
  const std::string tmp = comm::temp_file_name(ctx.comm(), path);
  std::string failed;
  try {
    comm::File f = comm::File::create_new(ctx.comm(), tmp);
    try {
      if (ctx.rank() == 0 && !header.empty())
        f.write_at(0, header.data(), static_cast<std::int64_t>(header.size()));
      if (!text.empty()) f.write_at(offset, text.data(), mine);
    } catch (const Error& e) { failed = e.what(); }
    f.close();
  } catch (const Error& e) {  // create or close failed: agreed on every rank already
    if (ctx.rank() == 0) std::remove(tmp.c_str());
    throw InputError(concat("cannot write ", path, ": ", e.what()));
  }
  commit_file(ctx, tmp, path, failed);
}

/// Fortran's E23.14: " -0.72630680134815E+000" (sign or blank, 14 digits, 3-digit exponent).
void fortran_e23_14(double v, char* out) {
  char tmp[40];
  std::snprintf(tmp, sizeof tmp, "%.13E", std::fabs(v));  // d.dddddddddddddE+xx
  int e = std::atoi(tmp + 16);
  if (v != 0) e += 1;
  out[0] = ' ';
  out[1] = std::signbit(v) && v != 0 ? '-' : ' ';
  out[2] = '0';
  out[3] = '.';
  out[4] = tmp[0];
  std::memcpy(out + 5, tmp + 2, 13);
  out[18] = 'E';
  out[19] = e < 0 ? '-' : '+';
  const int ae = e < 0 ? -e : e;
  out[20] = static_cast<char>('0' + ae / 100);
  out[21] = static_cast<char>('0' + ae / 10 % 10);
  out[22] = static_cast<char>('0' + ae % 10);
}

/// Calls line(i, j, v) (0-based) for every element of the stored blocks of `m` (on block-row
/// ranges, so local rows are contiguous), sorted by row then column; `keep(i, j)` filters.
template <class F>
void for_each_row_sorted(const BlockSparseMatrix<double>& m, F&& line) {
  const LocalBlocks<double> lb = m.local();
  const BlockSizes& rows = m.distribution().row_blocks();
  const BlockSizes& cols = m.distribution().col_blocks();
  for (std::size_t li = 0; li < lb.brows->size(); ++li) {
    const int br = (*lb.brows)[li];
    const int r = rows.size(br);
    for (int i = 0; i < r; ++i)
      for (std::int64_t k = (*lb.row_ptr)[li]; k < (*lb.row_ptr)[li + 1]; ++k) {
        const int bc = (*lb.col)[static_cast<std::size_t>(k)];
        const double* x = lb.data + (*lb.offset)[static_cast<std::size_t>(k)];
        for (int j = 0; j < cols.size(bc); ++j)
          line(rows.offset(br) + i, cols.offset(bc) + j, x[static_cast<std::size_t>(j) * r + i]);
      }
  }
}

}  // namespace

void write_cp2k_csr(const Context& ctx, const BlockSparseMatrix<double>& a,
                    const std::string& path) {
  check_write(ctx, a, path);
  ctx.agree([&] {
    TESSEL_CHECK(a.rows() < 100000000 && a.cols() < 100000000, InputError, "writing ", path, ": ",
                 a.rows(), " x ", a.cols(), " does not fit CP2K's I8 index fields");
  });
  const BlockSparseMatrix<double> m = by_row_ranges(ctx, a);
  std::string text;
  text.reserve(static_cast<std::size_t>(m.local_nnz()) * 40);
  char line[48];
  for_each_row_sorted(m, [&](std::int64_t i, std::int64_t j, double v) {
    std::snprintf(line, sizeof line, "%8lld%8lld", static_cast<long long>(i + 1),
                  static_cast<long long>(j + 1));
    fortran_e23_14(v, line + 16);
    line[39] = '\n';
    text.append(line, 40);
  });
  write_parts(ctx, path, "", text);
}

void write_matrix_market(const Context& ctx, const BlockSparseMatrix<double>& a,
                         const std::string& path, bool symmetric) {
  check_write(ctx, a, path);
  ctx.agree([&] {
    TESSEL_CHECK(!symmetric || a.rows() == a.cols(), DimensionMismatch, "writing ", path,
                 " as symmetric: ", a.name(), " is ", a.rows(), " x ", a.cols(),
                 ", expected a square matrix");
  });
  const BlockSparseMatrix<double> m = by_row_ranges(ctx, a);
  std::string text;
  std::int64_t count = 0;
  char line[80];
  for_each_row_sorted(m, [&](std::int64_t i, std::int64_t j, double v) {
    if (symmetric && j > i) return;
    const int n = std::snprintf(line, sizeof line, "%lld %lld %.17g\n",
                                static_cast<long long>(i + 1), static_cast<long long>(j + 1), v);
    text.append(line, static_cast<std::size_t>(n));
    ++count;
  });
  const std::int64_t total = ctx.comm().allreduce_value(count, MPI_SUM);
  const std::string header =
      concat("%%MatrixMarket matrix coordinate real ", symmetric ? "symmetric" : "general",
             "\n% written by tessel (", a.name(), ")\n", a.rows(), " ", a.cols(), " ", total, "\n");
  write_parts(ctx, path, header, text);
}

void write_block_sizes(const BlockSizes& sizes, const std::string& path) {
  write_file_atomic(path, "block sizes", [&](std::FILE* f) {
    bool ok = true;
    for (int s : sizes.sizes()) ok = ok && std::fprintf(f, "%d\n", s) > 0;
    return ok;
  });
}

}  // namespace tessel::io

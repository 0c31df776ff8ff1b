// The algebra of BlockSparseMatrix<double>: reductions (one allreduce each), local updates
// (scale, shift, add, filter: rebuild the local CSR, no MPI) and the two collective moves
// (transpose, redistribute: every block put into the new matrix, then one finalize exchange).
#include <algorithm>
#include <cmath>

#include "access.hpp"
#include "tessel/core/error.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::sparse {
namespace {

using Matrix = BlockSparseMatrix<double>;

void check_square_blocks(const Matrix& a, const char* op) {
  const auto& d = a.distribution();
  TESSEL_CHECK(d.row_blocks() == d.col_blocks(), DimensionMismatch, op, ": ", a.name(),
               " needs the same block sizes along rows and columns, it is ", d.describe());
}

void check_same_dist(const Matrix& a, const Matrix& b, const char* op) {
  TESSEL_CHECK(a.distribution() == b.distribution(), LayoutMismatch, op, ": ", a.name(), " (",
               a.distribution().describe(), ") and ", b.name(), " (", b.distribution().describe(),
               ") have different distributions; redistribute one first");
}

double sum_all(const Context& ctx, double v, const char* phase) {
  PhaseScope ps(*ctx.comm().ledger(), phase);
  return ctx.comm().allreduce_value(v, MPI_SUM);
}

// A local CSR under construction (what assign_local takes).
struct Csr {
  std::vector<std::int64_t> row_ptr{0}, offset;
  std::vector<int> col;
  std::vector<double> data;
  double* append(int bc, std::int64_t n) {
    col.push_back(bc);
    offset.push_back(static_cast<std::int64_t>(data.size()));
    data.resize(data.size() + static_cast<std::size_t>(n));
    return data.data() + offset.back();
  }
  void end_row() { row_ptr.push_back(static_cast<std::int64_t>(col.size())); }
  /// The exact sizes up front: append() then never reallocates (a growing vector held up to
  /// three times the result while it doubled: the old buffer, the new one, unaccounted).
  void reserve(std::size_t rows, std::size_t blocks, std::size_t values) {
    row_ptr.reserve(rows + 1);
    col.reserve(blocks);
    offset.reserve(blocks);
    data.reserve(values);
  }
  void assign_to(Matrix& a) {
    a.assign_local(std::move(row_ptr), std::move(col), std::move(offset), std::move(data));
  }
};

// The collective checks of transpose/redistribute: no remote block may be waiting.
void agree_finalized(const Context& ctx, const Matrix& a, const char* op) {
  ctx.agree([&] {
    TESSEL_CHECK(a.is_finalized(), Error, op, ": ", a.name(), " on rank ", a.rank(),
                 " has blocks put since the last finalize(); call finalize() first");
  });
}

// Every stored block of a put into b (transposed when asked), then one exchange.
Matrix move_blocks(const Context& ctx, const Matrix& a, Distribution to, bool transpose,
                   std::string name) {
  Matrix b(ctx, std::move(to), std::move(name));
  put_all_blocks(a, b, transpose);
  BlockSparseAccess::exchange_pending(b);
  return b;
}

}  // namespace

void put_all_blocks(const Matrix& from, Matrix& to, bool transpose) {
  std::vector<double> t;
  from.for_each_block([&](int br, int bc, const double* x, int r, int c) {
    if (!transpose) {
      to.put_block(br, bc, x);
      return;
    }
    t.resize(static_cast<std::size_t>(r) * c);
    for (int j = 0; j < c; ++j)
      for (int i = 0; i < r; ++i)
        t[static_cast<std::size_t>(i) * c + j] = x[static_cast<std::size_t>(j) * r + i];
    to.put_block(bc, br, t.data());
  });
}

double trace(const Context& ctx, const Matrix& a) {
  check_square_blocks(a, "trace");
  double s = 0;
  a.for_each_block([&](int br, int bc, const double* x, int r, int) {
    if (br == bc)
      for (int i = 0; i < r; ++i) s += x[static_cast<std::size_t>(i) * r + i];
  });
  return sum_all(ctx, s, "sparse/trace");
}

double dot(const Context& ctx, const Matrix& a, const Matrix& b) {
  check_same_dist(a, b, "dot");
  double s = 0;
  a.for_each_block([&](int br, int bc, const double* x, int r, int c) {
    if (const double* y = b.get_block(br, bc))
      for (std::int64_t e = 0; e < static_cast<std::int64_t>(r) * c; ++e) s += x[e] * y[e];
  });
  return sum_all(ctx, s, "sparse/dot");
}

double frobenius_norm(const Context& ctx, const Matrix& a) {
  double s = 0;
  a.for_each_block([&](int, int, const double* x, int r, int c) {
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(r) * c; ++e) s += x[e] * x[e];
  });
  return std::sqrt(sum_all(ctx, s, "sparse/norm"));
}

std::int64_t nblocks(const Context& ctx, const Matrix& a) {
  PhaseScope ps(*ctx.comm().ledger(), "sparse/count");
  return ctx.comm().allreduce_value<std::int64_t>(a.local_nblocks(), MPI_SUM);
}

double occupation(const Context& ctx, const Matrix& a) {
  const auto& d = a.distribution();
  const double positions = static_cast<double>(d.row_blocks().count()) * d.col_blocks().count();
  const std::int64_t n = nblocks(ctx, a);
  return positions > 0 ? static_cast<double>(n) / positions : 0.0;
}

void scale(Matrix& a, double alpha) {
  double* x = a.local_data();
  for (std::int64_t e = 0; e < a.local_nnz(); ++e) x[e] *= alpha;
  a.update_norms();
}

void shift(Matrix& a, double alpha) {
  check_square_blocks(a, "shift");
  const auto& d = a.distribution();
  std::vector<double> eye;
  for (int br : d.local_block_rows(a.prow())) {
    if (d.col_owner(br) != a.pcol()) continue;
    const int r = d.row_blocks().size(br);
    if (double* x = a.get_block(br, br)) {
      for (int i = 0; i < r; ++i) x[static_cast<std::size_t>(i) * r + i] += alpha;
    } else {
      eye.assign(static_cast<std::size_t>(r) * r, 0.0);
      for (int i = 0; i < r; ++i) eye[static_cast<std::size_t>(i) * r + i] = alpha;
      a.put_block(br, br, eye.data());  // local: no message
    }
  }
  BlockSparseAccess::sort_local(a);
  a.update_norms();
}

namespace {
/// The union of two local CSR patterns (same distribution, sorted rows), walked in CSR order:
/// f(local row i, block column, A's entry or -1, B's entry or -1); row_end(i) after each row.
template <class L, class F, class E>
void for_each_union(const L& la, const L& lb, F&& f, E&& row_end) {
  for (std::size_t i = 0; i < la.brows->size(); ++i) {
    std::int64_t ka = (*la.row_ptr)[i], kb = (*lb.row_ptr)[i];
    const std::int64_t ea = (*la.row_ptr)[i + 1], eb = (*lb.row_ptr)[i + 1];
    while (ka < ea || kb < eb) {
      const int ca = ka < ea ? (*la.col)[static_cast<std::size_t>(ka)] : INT32_MAX;
      const int cb = kb < eb ? (*lb.col)[static_cast<std::size_t>(kb)] : INT32_MAX;
      const int bc = std::min(ca, cb);
      f(i, bc, ca == bc ? ka++ : -1, cb == bc ? kb++ : -1);
    }
    row_end(i);
  }
}
}  // namespace

void add(Matrix& a, double alpha, const Matrix& b, double beta) {
  check_same_dist(a, b, "add");
  BlockSparseAccess::sort_local(a);
  const Matrix* bs = &b;
  Matrix b_sorted;
  if (!b.is_finalized()) {  // local puts not yet in CSR order: sort a copy
    b_sorted = b;
    BlockSparseAccess::sort_local(b_sorted);
    bs = &b_sorted;
  }
  const auto& d = a.distribution();
  const auto la = a.local(), lb = bs->local();
  Csr out;
  std::size_t blocks = 0, values = 0;  // the sizes first (Csr::reserve)
  for_each_union(
      la, lb,
      [&](std::size_t i, int bc, std::int64_t, std::int64_t) {
        ++blocks;
        values += static_cast<std::size_t>(d.row_blocks().size((*la.brows)[i])) *
                  static_cast<std::size_t>(d.col_blocks().size(bc));
      },
      [](std::size_t) {});
  out.reserve(la.brows->size(), blocks, values);
  for_each_union(
      la, lb,
      [&](std::size_t i, int bc, std::int64_t ka, std::int64_t kb) {
        const std::int64_t n = static_cast<std::int64_t>(d.row_blocks().size((*la.brows)[i])) *
                               d.col_blocks().size(bc);
        double* z = out.append(bc, n);
        const double* x = ka >= 0 ? la.data + (*la.offset)[static_cast<std::size_t>(ka)] : nullptr;
        const double* y = kb >= 0 ? lb.data + (*lb.offset)[static_cast<std::size_t>(kb)] : nullptr;
        for (std::int64_t e = 0; e < n; ++e)
          z[e] = (x ? alpha * x[e] : 0.0) + (y ? beta * y[e] : 0.0);
      },
      [&](std::size_t) { out.end_row(); });
  out.assign_to(a);
}

void filter(Matrix& a, double eps) {
  TESSEL_CHECK(eps >= 0, InputError, "filter: eps = ", eps, " for ", a.name(),
               ", expected eps >= 0");
  if (eps == 0) return;
  BlockSparseAccess::sort_local(a);
  const auto& d = a.distribution();
  const auto la = a.local();
  // f(local row i, block column, values count, values) for every block kept (norm not below
  // eps); row_end() after each row
  auto kept = [&](auto&& f, auto&& row_end) {
    for (std::size_t i = 0; i < la.brows->size(); ++i) {
      for (std::int64_t k = (*la.row_ptr)[i]; k < (*la.row_ptr)[i + 1]; ++k)
        if (!((*la.norm)[static_cast<std::size_t>(k)] < eps))
          f(i, (*la.col)[static_cast<std::size_t>(k)],
            static_cast<std::int64_t>(d.row_blocks().size((*la.brows)[i])) *
                d.col_blocks().size((*la.col)[static_cast<std::size_t>(k)]),
            la.data + (*la.offset)[static_cast<std::size_t>(k)]);
      row_end();
    }
  };
  Csr out;
  std::size_t blocks = 0, values = 0;  // the sizes first (Csr::reserve)
  kept(
      [&](std::size_t, int, std::int64_t n, const double*) {
        ++blocks;
        values += static_cast<std::size_t>(n);
      },
      [] {});
  out.reserve(la.brows->size(), blocks, values);
  kept([&](std::size_t, int bc, std::int64_t n,
           const double* x) { std::copy(x, x + n, out.append(bc, n)); },
       [&] { out.end_row(); });
  out.assign_to(a);
}

Matrix transpose(const Context& ctx, const Matrix& a) {
  PhaseScope ps(*ctx.comm().ledger(), "sparse/transpose");
  agree_finalized(ctx, a, "transpose");
  return move_blocks(ctx, a, a.distribution().transposed(), true, a.name() + "^T");
}

Matrix transpose(const Context& ctx, const Matrix& a, const Distribution& to) {
  const auto& d = a.distribution();
  TESSEL_CHECK(to.row_blocks() == d.col_blocks() && to.col_blocks() == d.row_blocks(),
               DimensionMismatch, "transpose: ", a.name(), " is ", d.describe(),
               " but the target distribution is ", to.describe(),
               " (its block rows must be the block columns of ", a.name(), ")");
  PhaseScope ps(*ctx.comm().ledger(), "sparse/transpose");
  agree_finalized(ctx, a, "transpose");
  return move_blocks(ctx, a, to, true, a.name() + "^T");
}

Matrix redistribute(const Context& ctx, const Matrix& a, const Distribution& to) {
  const auto& d = a.distribution();
  TESSEL_CHECK(to.row_blocks() == d.row_blocks() && to.col_blocks() == d.col_blocks(),
               DimensionMismatch, "redistribute: ", a.name(), " is ", d.describe(),
               " but the target distribution is ", to.describe(), " (block sizes differ)");
  TESSEL_CHECK(to.nranks() == ctx.size(), DimensionMismatch, "redistribute: the target grid is ",
               to.pr(), " x ", to.pc(), " = ", to.nranks(), " ranks but the communicator has ",
               ctx.size());
  PhaseScope ps(*ctx.comm().ledger(), "sparse/redistribute");
  agree_finalized(ctx, a, "redistribute");
  return move_blocks(ctx, a, to, false, a.name());
}

}  // namespace tessel::sparse

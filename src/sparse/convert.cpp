// Dense <-> block-sparse: through block_layout(dist), where each rank's dense local storage is
// exactly its block rows x block columns, and one dense::redistribute.
#include "tessel/sparse/convert.hpp"

#include <cmath>

#include "tessel/core/error.hpp"

namespace tessel::sparse {
namespace {

layout::Partition1D block_partition(const BlockSizes& b, const std::vector<int>& dist, int groups) {
  std::vector<layout::Interval> iv;
  std::vector<std::int64_t> local(static_cast<std::size_t>(groups), 0);
  for (int i = 0; i < b.count(); ++i) {
    const int g = dist[static_cast<std::size_t>(i)];
    iv.push_back({b.offset(i), b.size(i), g, local[static_cast<std::size_t>(g)]});
    local[static_cast<std::size_t>(g)] += b.size(i);
  }
  return layout::Partition1D(b.extent(), groups, std::move(iv));
}

// Local dense offset of each block row (column) held by this process row (column); -1 else.
std::vector<std::int64_t> local_offsets(const BlockSizes& b, const std::vector<int>& dist, int g) {
  std::vector<std::int64_t> off(static_cast<std::size_t>(b.count()), -1);
  std::int64_t at = 0;
  for (int i = 0; i < b.count(); ++i)
    if (dist[static_cast<std::size_t>(i)] == g) {
      off[static_cast<std::size_t>(i)] = at;
      at += b.size(i);
    }
  return off;
}

}  // namespace

layout::Layout block_layout(const Distribution& dist) {
  std::vector<int> owner(static_cast<std::size_t>(dist.nranks()));
  for (int r = 0; r < dist.nranks(); ++r) owner[static_cast<std::size_t>(r)] = r;
  return layout::Layout(block_partition(dist.row_blocks(), dist.row_dist(), dist.pr()),
                        block_partition(dist.col_blocks(), dist.col_dist(), dist.pc()),
                        std::move(owner), dist.nranks());
}

dense::DistMatrix<double> to_dense(const Context& ctx, const BlockSparseMatrix<double>& a,
                                   const layout::Layout& to) {
  const Distribution& d = a.distribution();
  TESSEL_CHECK(to.rows() == a.rows() && to.cols() == a.cols(), DimensionMismatch,
               "to_dense: ", a.name(), " is ", a.rows(), " x ", a.cols(), " but the layout is ",
               to.rows(), " x ", to.cols());
  PhaseScope phase(*ctx.comm().ledger(), "sparse/to_dense");
  dense::DistMatrix<double> local(ctx, block_layout(d));
  const auto roff = local_offsets(d.row_blocks(), d.row_dist(), a.prow());
  const auto coff = local_offsets(d.col_blocks(), d.col_dist(), a.pcol());
  a.for_each_block([&](int br, int bc, const double* x, int r, int c) {
    const std::int64_t i0 = roff[static_cast<std::size_t>(br)],
                       j0 = coff[static_cast<std::size_t>(bc)];
    for (int j = 0; j < c; ++j)
      for (int i = 0; i < r; ++i)
        local.local(i0 + i, j0 + j) = x[static_cast<std::size_t>(j) * r + i];
  });
  return dense::redistribute(ctx, local, to);
}

BlockSparseMatrix<double> from_dense(const Context& ctx, const dense::DistMatrix<double>& x,
                                     const Distribution& dist, double eps, std::string name) {
  TESSEL_CHECK(eps >= 0, InputError, "from_dense: eps = ", eps, ", expected eps >= 0");
  TESSEL_CHECK(x.rows() == dist.row_blocks().extent() && x.cols() == dist.col_blocks().extent(),
               DimensionMismatch, "from_dense: the dense matrix is ", x.rows(), " x ", x.cols(),
               " but the distribution is ", dist.describe());
  BlockSparseMatrix<double> a(ctx, dist, std::move(name));
  PhaseScope phase(*ctx.comm().ledger(), "sparse/from_dense");
  dense::DistMatrix<double> local = dense::redistribute(ctx, x, block_layout(dist));
  const auto roff = local_offsets(dist.row_blocks(), dist.row_dist(), a.prow());
  const auto coff = local_offsets(dist.col_blocks(), dist.col_dist(), a.pcol());
  const auto brows = dist.local_block_rows(a.prow());
  const auto bcols = dist.local_block_cols(a.pcol());
  std::vector<std::int64_t> row_ptr{0}, offset;
  std::vector<int> col;
  std::vector<double> data, block;
  for (int br : brows) {
    const int r = dist.row_blocks().size(br);
    for (int bc : bcols) {
      const int c = dist.col_blocks().size(bc);
      block.resize(static_cast<std::size_t>(r) * c);
      double s = 0;
      for (int j = 0; j < c; ++j)
        for (int i = 0; i < r; ++i) {
          const double v = local.local(roff[static_cast<std::size_t>(br)] + i,
                                       coff[static_cast<std::size_t>(bc)] + j);
          block[static_cast<std::size_t>(j) * r + i] = v;
          s += v * v;
        }
      if (!(std::sqrt(s) > eps)) continue;
      col.push_back(bc);
      offset.push_back(static_cast<std::int64_t>(data.size()));
      data.insert(data.end(), block.begin(), block.end());
    }
    row_ptr.push_back(static_cast<std::int64_t>(col.size()));
  }
  a.assign_local(std::move(row_ptr), std::move(col), std::move(offset), std::move(data));
  return a;
}

}  // namespace tessel::sparse

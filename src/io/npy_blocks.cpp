// Dense .npy files of block-sparse matrices: read_npy straight into the dense layout of
// the block distribution (block_layout), then from_dense; writing through to_dense + write_npy.
#include "tessel/core/error.hpp"
#include "tessel/io/npy.hpp"
#include "tessel/sparse/convert.hpp"
#include "tessel/io/sparse.hpp"

#include "sparse_text.hpp"

namespace tessel::io {

BlockSparseMatrix<double> read_npy_blocks(const Context& ctx, const std::string& path,
                                          const Distribution& dist, double eps,
                                          const std::string& name) {
  (void)sparse_text::check_read_args(ctx, path, dist, ReadOptions{});
  auto x = read_npy<double>(ctx, path, [&](std::int64_t rows, std::int64_t cols) {
    TESSEL_CHECK(rows == dist.row_blocks().extent() && cols == dist.col_blocks().extent(),
                 InputError, path, " is ", rows, " x ", cols, " but the block sizes sum to ",
                 dist.row_blocks().extent(), " x ", dist.col_blocks().extent(),
                 ": expected block sizes that sum to the dimension");
    return sparse::block_layout(dist);
  });
  return sparse::from_dense(ctx, x, dist, eps, name.empty() ? sparse_text::base_name(path) : name);
}

void write_npy_blocks(const Context& ctx, const BlockSparseMatrix<double>& a,
                      const std::string& path) {
  ctx.agree([&] {
    TESSEL_CHECK(a.distribution().nranks() == ctx.size(), GridError, "writing ", path, ": ",
                 a.name(), " is distributed over ", a.distribution().nranks(),
                 " ranks, the context has ", ctx.size());
  });
  write_npy(ctx, path, sparse::to_dense(ctx, a, sparse::block_layout(a.distribution())));
}

}  // namespace tessel::io

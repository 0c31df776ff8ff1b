#pragma once
/// @file convert.hpp
/// Conversion between a BlockSparseMatrix and a dense DistMatrix, for tests and small cases:
/// both go through the dense layout of the block distribution (block_layout), in which every
/// rank stores its block rows x block columns densely, and one dense::redistribute. The dense
/// local storage costs (local rows x local cols) per rank: not for large sparse matrices.
#include <string>

#include "tessel/dense/dist_matrix.hpp"
#include "tessel/layout/layout.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::sparse {

/// Pure. The dense Layout whose local storage on rank prow * PC + pcol holds the block rows of
/// process row prow and the block columns of process column pcol, packed in increasing order.
layout::Layout block_layout(const Distribution& dist);

/// Collective. The dense matrix of `a` (blocks not stored are zero) in layout `to` (any layout
/// of the same shape over the same number of ranks). Ledger phase "sparse/to_dense". Blocks put
/// since the last finalize() are included only when local (call finalize() first).
dense::DistMatrix<double> to_dense(const Context& ctx, const BlockSparseMatrix<double>& a,
                                   const layout::Layout& to);

/// Collective. The block-sparse matrix of `x` on `dist` (same shape, dist.nranks() ==
/// ctx.size()), keeping the blocks whose Frobenius norm is > eps (eps = 0: the nonzero blocks).
/// eps < 0 is an InputError. Ledger phase "sparse/from_dense".
BlockSparseMatrix<double> from_dense(const Context& ctx, const dense::DistMatrix<double>& x,
                                     const Distribution& dist, double eps = 0,
                                     std::string name = "matrix");

}  // namespace tessel::sparse

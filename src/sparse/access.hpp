#pragma once
// Private to src/sparse/: the operations of the algebra that need a BlockSparseMatrix's
// internals (the header's friend BlockSparseAccess).
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::sparse {

struct BlockSparseAccess {
  /// Not collective. Restores CSR order after local puts (no MPI).
  template <class T>
  static void sort_local(BlockSparseMatrix<T>& a) {
    a.sort_local();
  }
  /// Collective. finalize() recorded in the caller's current ledger phase.
  template <class T>
  static void exchange_pending(BlockSparseMatrix<T>& a) {
    a.exchange_pending();
  }
};

/// Not collective. Puts every stored block of `from` into `to` (transposed, at (bc, br), when
/// `transpose`): they wait in `to` for the caller's exchange (finalize() or
/// BlockSparseAccess::exchange_pending). The one copy loop of transpose, redistribute and the
/// multiply's conform step.
void put_all_blocks(const BlockSparseMatrix<double>& from, BlockSparseMatrix<double>& to,
                    bool transpose);

}  // namespace tessel::sparse

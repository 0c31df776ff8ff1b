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

}  // namespace tessel::sparse

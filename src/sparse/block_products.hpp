#pragma once
// The block products of the local kernel (no MPI): a batch of products of one shape, run
// through one LIBXSMM kernel (BLAS dgemm for large blocks). local_multiply.cpp fills and runs
// them; block_products.cpp also times them for the simulated build's table of product times.
#include <libxsmm.h>

#include <cstddef>
#include <vector>

namespace tessel::sparse::detail {

/// The products of one block shape, run together through one LIBXSMM kernel (or dgemm).
struct Stack {
  int m = 0, n = 0, k = 0;
  libxsmm_dmmfunction f = nullptr;  // null: dgemm
  struct Item {
    const double* a;
    const double* b;
    double* c;  // the block of C (its values never move)
  };
  std::vector<Item> p;
  /// An empty batch of shape m x n x k with its kernel (LIBXSMM's JIT for m n k up to 80^3).
  static Stack of(int m, int n, int k);
};
/// Products per batch: a full batch runs at once.
constexpr std::size_t kStackSize = 30000;

/// CPU seconds of the calling thread: what SMPI charges for measured computation (its thread
/// timer), and unlike a wall clock blind to the time the thread waits for a busy core.
double thread_cpu_seconds();

/// Runs products [from, to) of the batch: C += A B.
void run_products(const Stack& s, std::size_t from, std::size_t to);

}  // namespace tessel::sparse::detail

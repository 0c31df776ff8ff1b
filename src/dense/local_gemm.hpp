#pragma once
// Local BLAS kernels: raw pointers and sizes, no MPI.
#include <complex>
#include <cstdint>
#include <functional>

#include "tessel/core/simulate.hpp"

namespace tessel::dense::kernels {

/// Columns of C per chunk when a GEMM overlaps communication: small enough that the requests
/// in flight are tested often (MPI progress), large enough that the chunked GEMM stays near the
/// speed of one call.
inline constexpr std::int64_t kProgressChunk = 256;

/// C(m x n) = alpha op(A) op(B) + beta C, column-major, opa/opb in {'N','T','C'}. Runs in column
/// chunks of C and calls `between` (may be empty) after each chunk, so a caller can drive
/// outstanding communication while the kernel runs. Under ComputeMode::Skip (SMPI build) it
/// reads and writes nothing: it charges the product's flops to the simulated clock and calls
/// `between` once. Not collective.
template <class T>
void gemm(ComputeMode mode, char opa, char opb, std::int64_t m, std::int64_t n, std::int64_t k,
          T alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
          std::int64_t ldc, const std::function<void()>& between = {}, std::int64_t chunk = 0);

}  // namespace tessel::dense::kernels

#pragma once
// The matrices of `tessel spgemm` and of bench/dbcsr_spgemm (same matrices, same distribution
// in both): generated (band:N) or read, on a PR x PC grid.
#include <cstdint>
#include <string>

#include "tessel/core/context.hpp"
#include "tessel/sparse/multiply.hpp"

namespace tessel::app {

struct SpgemmInputs {
  std::string generate = "water:200";  // water:N, water-ss:N, water-ss-dzvp:N or band:N
  std::string a, b, blocks;            // CP2K CSR files and block sizes (all three or none)
  std::uint64_t seed = 42;
};

struct SpgemmCase {
  sparse::BlockSparseMatrix<double> A, B;
  sparse::Distribution dc;  // C's distribution
  std::string description;
};

/// Pure: checks the inputs (InputError naming the option and value).
void check_spgemm_inputs(const SpgemmInputs& in);

/// Collective. A and B stored for op(A) op(B): with op N on distributions that need no
/// redistribution for `plan` (C's rows and columns balanced at random as DBCSR's permutation,
/// the k blocks on random images), with op T on a random distribution (multiply conforms it).
SpgemmCase make_spgemm_case(Context& ctx, const SpgemmInputs& in, sparse::SpOp opa,
                            sparse::SpOp opb, const sparse::SpgemmPlan& plan);

}  // namespace tessel::app

#pragma once
// The .npy side of elpa_density: the size of a square float64 matrix, its block-cyclic part
// (read through mmap, so all ranks of a machine share one copy in the page cache), D written
// through a shared mapping, and the collective agreement on an error message. Errors are
// returned as text ("" = fine), never thrown. No global state.
#include <string>

#include "bench_blacs.hpp"

namespace tessel::bench::elpa_density {

/// Local. Reads the header of `path` (option `opt`): a 2-D square float64 array, sets *n.
std::string matrix_size(const std::string& path, const std::string& opt, int* n);
/// Local. As matrix_size, and the size must be n (that of --fock `fock`).
std::string expect_size(const std::string& path, const std::string& opt, int n,
                        const std::string& fock);
/// Local. Fills `m` (n x n, block nb on grid `g`) with this rank's entries of the file.
std::string read_block_cyclic(const std::string& path, const std::string& opt, int nb,
                              const BlacsGrid& g, BlockCyclic& m);
/// Collective. Writes `d` (n x n, block nb on `g`) to `path` as a Fortran-order .npy: rank 0
/// creates it, every rank stores its entries through a shared mapping. Agreed error text.
std::string write_npy(const std::string& path, int n, int nb, const BlacsGrid& g,
                      const BlockCyclic& d);
/// Collective over MPI_COMM_WORLD. "" when every rank's `err` is empty, else the message of
/// the lowest rank that has one, on every rank.
std::string agree(const std::string& err);

}  // namespace tessel::bench::elpa_density

#pragma once
/// @file sparse.hpp
/// Reading and writing block-sparse matrices: CP2K's CSR text (plain or gzip), MatrixMarket
/// coordinate (real, general or symmetric), dense `.npy`, and block-size files. See
/// docs/sparse_io.md for the formats, the parallel reading scheme and every error.
///
/// Every reader and writer taking a Context is collective: all ranks call it with the same
/// arguments; a problem found on any rank (a malformed line, an index out of range, an
/// unsorted or duplicate entry, a nonzero outside the pattern, a truncated gzip stream, an
/// unreadable or unwritable path) throws the same InputError on every rank, naming the file,
/// the line number and what was expected. Writers never leave a partial file: they write a
/// temporary file beside the target and rename it only when every rank succeeded.
#include <cstdint>
#include <string>

#include "tessel/core/context.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::io {

/// Not collective (every rank may call it on the same file and throws the same error). Reads a
/// block-size file: one positive integer per line (CP2K's blocksizes.txt, the basis functions
/// of each atom in atom order); blank lines and lines starting with '#' are skipped. Throws
/// InputError naming the file and line for a missing file, a non-integer, a size < 1, trailing
/// text, or no sizes at all.
sparse::BlockSizes read_block_sizes(const std::string& path);

/// Not collective. Writes `sizes` one per line (temporary file + rename).
void write_block_sizes(const sparse::BlockSizes& sizes, const std::string& path);

/// Options shared by the readers.
struct ReadOptions {
  /// When given (on every rank, finalized, same block sizes as the file): the block sparsity
  /// the file must respect. A nonzero value in a block that `pattern` does not store is an
  /// InputError naming the line ("a nonzero outside a stored block"); zero values there are
  /// skipped. The pattern's block list is gathered on every rank (memory O(its blocks)).
  const sparse::BlockSparseMatrix<double>* pattern = nullptr;
  /// Name of the returned matrix (error messages); default: the file name.
  std::string name;
  /// CP2K CSR has no size line: its dimension is its largest row and column index. When true,
  /// block sizes that do not sum to exactly that are an InputError (a wrong blocksizes.txt);
  /// false accepts larger sums (a matrix whose last rows or columns hold no stored block).
  bool exact_extent = true;
};

/// Collective. Reads CP2K CSR text (`row col value` per line, 1-based, both triangles, sorted
/// by row then column; gzip-compressed when the file starts with the gzip magic bytes) into a
/// matrix on `dist` (whose block sizes define rows and columns: their sums must be at least
/// the largest index and are the matrix dimensions). A block is stored when at least one line
/// falls in it (explicit zeros included, as CP2K writes whole stored blocks); the entries of a
/// stored block that no line gives are zero.
///
/// Plain files: each rank parses the byte range [r S/P, (r+1) S/P) of the file, from the
/// first line that starts in it to the last; gzip files: every rank inflates the whole stream
/// (gzip has no random access) and parses the lines that start in its share of 1 MiB chunks
/// of the inflated text (chunk k to rank k mod P). The parsed blocks go to their owners with
/// put_block(accumulate) + finalize().
sparse::BlockSparseMatrix<double> read_cp2k_csr(const Context& ctx, const std::string& path,
                                                const sparse::Distribution& dist,
                                                const ReadOptions& opt = {});
/// Collective. As above on Distribution::random(rows, cols, default grid of ctx.size()).
sparse::BlockSparseMatrix<double> read_cp2k_csr(const Context& ctx, const std::string& path,
                                                const sparse::BlockSizes& rows,
                                                const sparse::BlockSizes& cols,
                                                const ReadOptions& opt = {});

/// Collective. Writes `a` as CP2K CSR text: every element of every stored block (zeros
/// included), sorted by row then column, each line as Fortran's (2I8, E23.14) — 40 bytes, so
/// every rank writes its lines at a computed offset. The blocks are first moved to a
/// distribution of contiguous block-row ranges (one process row per rank; ledger phase
/// "sparse/io"). Non-finite values are refused (InputError) before anything is written.
void write_cp2k_csr(const Context& ctx, const sparse::BlockSparseMatrix<double>& a,
                    const std::string& path);

/// Collective. Reads a MatrixMarket coordinate file (`%%MatrixMarket matrix coordinate real
/// general|symmetric`; `integer` is accepted as real) whose size line must match the block
/// sizes of `dist`. Symmetric files must give only the lower triangle (row >= column); each
/// off-diagonal entry is mirrored. Entries may come in any order; a duplicate (the same
/// position twice) is an InputError naming both lines. Blocks are stored as in read_cp2k_csr.
/// Each rank parses a byte range of the entries; entries go to the owners of their blocks in
/// one exchange (ledger phase "sparse/io").
sparse::BlockSparseMatrix<double> read_matrix_market(const Context& ctx, const std::string& path,
                                                     const sparse::Distribution& dist,
                                                     const ReadOptions& opt = {});
sparse::BlockSparseMatrix<double> read_matrix_market(const Context& ctx, const std::string& path,
                                                     const sparse::BlockSizes& rows,
                                                     const sparse::BlockSizes& cols,
                                                     const ReadOptions& opt = {});

/// Collective. Writes `a` as a MatrixMarket `coordinate real general` file (every element of
/// every stored block, sorted by row then column, values with 17 significant digits so they
/// read back exactly); with `symmetric`, a `symmetric` file of the lower triangle (the caller
/// asserts that `a` is symmetric; the upper triangle is not written).
void write_matrix_market(const Context& ctx, const sparse::BlockSparseMatrix<double>& a,
                         const std::string& path, bool symmetric = false);

/// Collective. Reads a dense float64 `.npy` matrix (io::read_npy) and converts it to blocks on
/// `dist` (from_dense), keeping the blocks whose Frobenius norm is > eps (0: nonzero blocks).
sparse::BlockSparseMatrix<double> read_npy_blocks(const Context& ctx, const std::string& path,
                                                  const sparse::Distribution& dist, double eps = 0,
                                                  const std::string& name = "");
/// Collective. Writes `a` densely as a float64 `.npy` (to_dense + io::write_npy).
void write_npy_blocks(const Context& ctx, const sparse::BlockSparseMatrix<double>& a,
                      const std::string& path);

}  // namespace tessel::io

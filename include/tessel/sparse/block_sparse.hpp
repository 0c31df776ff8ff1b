#pragma once
/// @file block_sparse.hpp
/// BlockSparseMatrix<T>: a distributed block-sparse matrix in the manner of DBCSR (seeds
/// 001/003): block rows and columns of per-atom sizes, distributed over a PR x PC process grid
/// by a block-row and a block-column distribution; each rank stores the blocks it owns as
/// block-CSR with one contiguous data buffer and the Frobenius norm of every block.
///
/// Conventions (relied on by every file of src/sparse/):
/// - a block is stored column-major, rows x cols = row_sizes[brow] x col_sizes[bcol];
/// - the owner of block (brow, bcol) is the rank prow * PC + pcol of the Context's
///   communicator, with prow = row_dist[brow], pcol = col_dist[bcol] (row-major, as
///   MPI_Cart_create);
/// - local block rows are the global block rows with row_dist[brow] == my process row, in
///   increasing order; within a local block row the stored blocks are sorted by block column;
///   no duplicates.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/core/memory.hpp"

namespace tessel::sparse {

/// Sizes of consecutive blocks along one dimension and their offsets. Pure, immutable data:
/// copies share one store (a matrix, its distribution and every plan and buffer built from
/// them hold the same sizes once per rank, not once per copy: at 20,736 blocks that is 250 kB,
/// which a simulated run of thousands of ranks in one process pays per rank and per copy).
class BlockSizes {
 public:
  BlockSizes();
  // Copies only (a move is a copy): a moved-from object keeps its store and stays valid.
  BlockSizes(const BlockSizes&) = default;
  BlockSizes& operator=(const BlockSizes&) = default;
  /// Throws InputError naming `what` when a size is < 1 (size 0 blocks are not allowed).
  explicit BlockSizes(std::vector<int> sizes, const std::string& what = "block sizes");
  int count() const { return n_; }
  int size(int b) const { return s_[b]; }
  /// First element row/column of block b; offset(count()) is the extent.
  std::int64_t offset(int b) const { return o_[b]; }
  std::int64_t extent() const { return o_[n_]; }
  /// The block holding element index i (0 <= i < extent()), by binary search.
  int block_of(std::int64_t i) const;
  const std::vector<int>& sizes() const { return d_->sizes; }
  bool operator==(const BlockSizes& o) const { return d_ == o.d_ || d_->sizes == o.d_->sizes; }
  bool operator!=(const BlockSizes& o) const { return !(*this == o); }

 private:
  struct Data {
    std::vector<int> sizes;
    std::vector<std::int64_t> offsets{0};
  };
  // d_ is never null and never changes behind a copy: the raw views below stay valid as long
  // as d_ (copies only; no move constructor, so a moved-from object keeps its store).
  std::shared_ptr<const Data> d_;
  const int* s_ = nullptr;
  const std::int64_t* o_ = nullptr;
  int n_ = 0;
  void view();
};

/// Where every block lives: block sizes, a PR x PC grid and the process row of every block row
/// and process column of every block column. Pure data (no MPI): it can be built, compared and
/// printed anywhere; every rank of a matrix holds the same Distribution. Copies share the
/// block sizes and the two dist vectors (immutable).
class Distribution {
 public:
  Distribution() = default;
  // Copies only (a move is a copy, of three shared pointers): a moved-from object stays valid.
  Distribution(const Distribution&) = default;
  Distribution& operator=(const Distribution&) = default;
  /// As DBCSR's distribution_new: the caller gives row_dist[brow] in [0, pr) and
  /// col_dist[bcol] in [0, pc). Throws InputError/GridError naming the bad entry.
  Distribution(BlockSizes rows, BlockSizes cols, int pr, int pc, std::vector<int> row_dist,
               std::vector<int> col_dist);
  /// The default: block rows (columns) dealt to process rows (columns) by a seeded random
  /// permutation, balanced in elements (greedy on the permuted order, so any block-size
  /// distribution balances), reproducible from `seed` on every rank. When rows == cols (a
  /// square matrix of atomic blocks) block i is dealt to one of V = lcm(pr, pc) images and
  /// goes to process row v / (V / pr) and process column v / (V / pc): then block column k of
  /// one such matrix and block row k of another share an image, so a product of matrices on
  /// this distribution needs no operand moved before it (k_images; any L of rma25d).
  static Distribution random(BlockSizes rows, BlockSizes cols, int pr, int pc,
                             std::uint64_t seed = 1);
  /// The most square pr x pc with pr * pc == nranks and pr <= pc.
  static std::pair<int, int> default_grid(int nranks);

  const BlockSizes& row_blocks() const { return rows_; }
  const BlockSizes& col_blocks() const { return cols_; }
  int pr() const { return pr_; }
  int pc() const { return pc_; }
  int nranks() const { return pr_ * pc_; }
  int row_owner(int brow) const { return (*row_dist_)[static_cast<std::size_t>(brow)]; }
  int col_owner(int bcol) const { return (*col_dist_)[static_cast<std::size_t>(bcol)]; }
  const std::vector<int>& row_dist() const { return *row_dist_; }
  const std::vector<int>& col_dist() const { return *col_dist_; }
  /// Rank (prow * pc + pcol) owning block (brow, bcol).
  int owner(int brow, int bcol) const { return row_owner(brow) * pc_ + col_owner(bcol); }
  /// Global block rows held by process row `prow`, increasing (and columns by `pcol`).
  std::vector<int> local_block_rows(int prow) const;
  std::vector<int> local_block_cols(int pcol) const;
  /// The distribution of the transpose (rows and columns swapped, grid pc x pr).
  Distribution transposed() const;
  /// "n x m elements, B x C blocks, PR x PC grid".
  std::string describe() const;
  bool operator==(const Distribution& o) const;
  bool operator!=(const Distribution& o) const { return !(*this == o); }

 private:
  /// The dist vectors shared by copies, as BlockSizes' store (never null).
  using Shared = std::shared_ptr<const std::vector<int>>;
  struct SharedTag {};
  Distribution(SharedTag, BlockSizes rows, BlockSizes cols, int pr, int pc, Shared row_dist,
               Shared col_dist);
  BlockSizes rows_, cols_;
  int pr_ = 1, pc_ = 1;
  Shared row_dist_ = std::make_shared<const std::vector<int>>(),
         col_dist_ = std::make_shared<const std::vector<int>>();
};

/// The local block-CSR storage of one rank, exposed read-only for kernels (multiply, I/O).
/// Block k of local block row i (0 <= i < brows.size()) is entry k in
/// [row_ptr[i], row_ptr[i+1]): global block column col[k], data at data + offset[k], Frobenius
/// norm norm[k].
template <class T>
struct LocalBlocks {
  const std::vector<int>* brows = nullptr;  // global block row of each local block row
  const std::vector<std::int64_t>* row_ptr = nullptr;
  const std::vector<int>* col = nullptr;
  const std::vector<std::int64_t>* offset = nullptr;
  const std::vector<double>* norm = nullptr;
  const T* data = nullptr;
  std::int64_t nblocks() const { return static_cast<std::int64_t>(col->size()); }
};

template <class T>
class BlockSparseMatrix {
 public:
  BlockSparseMatrix() = default;
  /// Not collective. An empty (no blocks stored) matrix of `dist` over ctx's communicator,
  /// whose size must equal dist.nranks() (DimensionMismatch otherwise). `name` appears in
  /// error messages.
  BlockSparseMatrix(const Context& ctx, Distribution dist, std::string name = "matrix");
  /// Deep copies; moves are cheap.
  BlockSparseMatrix(const BlockSparseMatrix&) = default;
  BlockSparseMatrix& operator=(const BlockSparseMatrix&) = default;
  BlockSparseMatrix(BlockSparseMatrix&&) noexcept = default;
  BlockSparseMatrix& operator=(BlockSparseMatrix&&) noexcept = default;

  const Distribution& distribution() const { return dist_; }
  const std::string& name() const { return name_; }
  std::int64_t rows() const { return dist_.row_blocks().extent(); }
  std::int64_t cols() const { return dist_.col_blocks().extent(); }
  int rank() const { return rank_; }
  int prow() const { return rank_ / dist_.pc(); }
  int pcol() const { return rank_ % dist_.pc(); }

  // ---- blocks ----
  /// Not collective. Stores block (brow, bcol) (column-major, rows x cols of its sizes), or
  /// adds it to the block already there when `accumulate`. A block owned by another rank is
  /// buffered and sent by the next finalize(); a local block is visible at once (get_block)
  /// but the CSR order is restored only by finalize(). Indices are checked: a bad put (index
  /// out of range, null values) stores nothing and does not throw here; the next finalize()
  /// throws InputError naming it on every rank, so one rank's bad put cannot leave the others
  /// waiting in finalize(). Pointers from get_block() may be invalidated by a put.
  void put_block(int brow, int bcol, const T* values, bool accumulate = false);
  /// Not collective. The stored local block or nullptr (also for blocks owned elsewhere).
  /// Throws InputError when an index is out of range.
  const T* get_block(int brow, int bcol) const;
  T* get_block(int brow, int bcol);
  /// Collective. Sends the buffered remote blocks to their owners (one alltoall of byte
  /// counts, then one message per pair that has blocks to exchange; ledger phase
  /// "sparse/finalize"), merges them (added when `accumulate` was given for them, last write
  /// wins otherwise: local puts took effect when made, received blocks are applied after them
  /// in increasing source rank, each rank's in put order), sorts the local CSR and recomputes
  /// the norms. Throws (on every rank) the first bad put of any rank since the last finalize.
  void finalize();
  /// Not collective. True when the local CSR is sorted, no remote block is buffered and no bad
  /// put is pending (after construction, finalize(), assign_local() without earlier remote
  /// puts); local() describes every block only then; transpose/redistribute require it.
  bool is_finalized() const { return !unsorted_ && pending_.empty() && put_error_.empty(); }
  /// Not collective. Drops every stored block (and buffered remote blocks and a pending bad
  /// put).
  void clear();
  /// Not collective. Rebuilds this rank's storage from a sorted block-CSR built by a kernel
  /// (the multiply, add, filter): brows must be this rank's local block rows; norms are
  /// recomputed. Pure local operation, no finalize needed.
  void assign_local(std::vector<std::int64_t> row_ptr, std::vector<int> col,
                    std::vector<std::int64_t> offset, std::vector<T> data);

  /// Not collective. f(brow, bcol, const T* block, rows, cols) for every local block in CSR
  /// order (local blocks put since the last finalize() follow, in put order). The mutable
  /// overload lets f change the values and recomputes the norms afterwards.
  void for_each_block(const std::function<void(int, int, const T*, int, int)>& f) const;
  void for_each_block(const std::function<void(int, int, T*, int, int)>& f);

  /// Not collective: blocks stored on this rank. Collective versions below. local() describes
  /// the sorted CSR: valid when is_finalized() (blocks put since are not in row_ptr).
  std::int64_t local_nblocks() const { return static_cast<std::int64_t>(col_.size()); }
  /// Not collective. This rank's storage in bytes (the vectors' capacities: what the Context's
  /// MemoryLedger is charged for this matrix).
  std::int64_t local_bytes() const { return charge_.bytes(); }
  std::int64_t local_nnz() const { return static_cast<std::int64_t>(data_.size()); }
  LocalBlocks<T> local() const {
    return {&brows_, &row_ptr_, &col_, &offset_, &norm_, data_.data()};
  }
  T* local_data() { return data_.data(); }
  /// Not collective. Recomputes the Frobenius norms after writes through local_data().
  void update_norms();

 private:
  const Context* ctx_ = nullptr;
  Distribution dist_;
  std::string name_;
  int rank_ = 0;
  std::vector<int> brows_;
  std::vector<std::int64_t> row_ptr_{0};
  std::vector<int> col_;
  std::vector<std::int64_t> offset_;
  std::vector<double> norm_;
  std::vector<T> data_;
  /// Remote blocks waiting for finalize(): (brow, bcol, accumulate) + values.
  struct Pending {
    int brow, bcol;
    bool accumulate;
    std::int64_t offset;
  };
  std::vector<Pending> pending_;
  std::vector<T> pending_data_;
  /// Local blocks put since the last sort (CSR order not yet restored). They are stored after
  /// row_ptr_.back() in col_/offset_/norm_, with their local block row in tail_row_ and their
  /// position found through tail_index_ (key brow * block columns + bcol).
  bool unsorted_ = false;
  std::vector<int> tail_row_;
  std::unordered_map<std::int64_t, std::int64_t> tail_index_;
  /// The first bad put since the last finalize() (empty when none).
  std::string put_error_;
  /// This rank's storage (the vectors' capacities) in the Context's MemoryLedger.
  MemoryCharge charge_;
  /// Not collective. charge_ = the storage's bytes now.
  void recharge();

  /// Index of local row `brow` in brows_, or -1.
  int local_row(int brow) const;
  /// Position (in col_/offset_/norm_) of local block (brow, bcol), or -1.
  std::int64_t find(int brow, int bcol) const;
  /// Stores a block owned by this rank (overwrite or add).
  void put_local(int brow, int bcol, const T* values, bool accumulate);
  /// Moves the blocks put since the last sort into CSR order (local, no MPI).
  void sort_local();
  /// finalize() without its ledger phase (transpose and redistribute record under their own).
  void exchange_pending();

  friend struct BlockSparseAccess;
};

extern template class BlockSparseMatrix<double>;

// ---- algebra (src/sparse/ops.cpp). "Collective" means over the matrices' Context. ----
// Reductions (trace, dot, norm, counts) cover every locally stored block, including local puts
// not yet finalized; remote blocks waiting for finalize() are not counted. The local updates
// keep the CSR sorted; matrices combined must have equal distributions (LayoutMismatch).

/// Collective. Sum of all stored elements of the diagonal blocks (square block structure).
double trace(const Context& ctx, const BlockSparseMatrix<double>& a);
/// Collective. tr(A^T B) = sum_ij A_ij B_ij (same distribution required).
double dot(const Context& ctx, const BlockSparseMatrix<double>& a,
           const BlockSparseMatrix<double>& b);
/// Collective. Frobenius norm.
double frobenius_norm(const Context& ctx, const BlockSparseMatrix<double>& a);
/// Collective. Fraction of the block positions that are stored (0 for a 0 x 0 matrix).
double occupation(const Context& ctx, const BlockSparseMatrix<double>& a);
/// Collective. Number of stored blocks over all ranks.
std::int64_t nblocks(const Context& ctx, const BlockSparseMatrix<double>& a);
/// Not collective. A *= alpha.
void scale(BlockSparseMatrix<double>& a, double alpha);
/// Not collective. A += alpha I (square block structure; missing diagonal blocks are created).
void shift(BlockSparseMatrix<double>& a, double alpha);
/// Not collective. A = alpha A + beta B, sparsity the union (same distribution required).
void add(BlockSparseMatrix<double>& a, double alpha, const BlockSparseMatrix<double>& b,
         double beta);
/// Not collective. Drops blocks whose Frobenius norm is < eps (eps = 0: drops nothing);
/// eps < 0 is an InputError.
void filter(BlockSparseMatrix<double>& a, double eps);
/// Collective. A^T on distribution a.distribution().transposed() unless `to` is given (its
/// block rows must be a's block columns and vice versa). Blocks move to their owners in one
/// exchange (ledger phase "sparse/transpose"). a must be finalized (checked on every rank).
BlockSparseMatrix<double> transpose(const Context& ctx, const BlockSparseMatrix<double>& a);
BlockSparseMatrix<double> transpose(const Context& ctx, const BlockSparseMatrix<double>& a,
                                    const Distribution& to);
/// Collective. Copies `a` onto another distribution of the same block sizes (any grid of
/// ctx.size() ranks): one alltoall of counts and one message per pair of ranks that share
/// blocks (ledger phase "sparse/redistribute"). a must be finalized (checked on every rank).
BlockSparseMatrix<double> redistribute(const Context& ctx, const BlockSparseMatrix<double>& a,
                                       const Distribution& to);

}  // namespace tessel::sparse

#pragma once
/// @file multiply.hpp
/// The block-sparse multiply C = alpha op(A) op(B) + beta C (seed 001, DBCSR): Cannon with
/// point-to-point shifts (Algorithm 1) or the 2.5D one-sided algorithm with L layers
/// (Algorithm 2), on-the-fly norm filtering, LIBXSMM block products. docs/sparse.md.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessel/core/kernel_times.hpp"
#include "tessel/sparse/block_sparse.hpp"
#include "tessel/sparse/spgemm_plan.hpp"

namespace tessel::sparse {

enum class SpOp { N, T };

struct SpMultiplyOptions {
  SpAlgorithm algorithm = SpAlgorithm::Cannon;
  /// rma25d layers L (0 = auto: the valid L <= 4 with the smallest eq. 7 volume, A+B+C, from
  /// volume_model); Cannon takes 0 or 1.
  int layers = 0;
  /// layers = auto: the bytes of the product op(A) op(B) before the final filter (8 per value
  /// + 8 per block, summed over ranks; e.g. from a previous multiply's report or a comm_only
  /// pass; with retain_sparsity 8 per value + 1/8 per block of C's pattern, the bitmap format).
  /// 0 = estimate it (volume_model).
  double product_bytes_hint = 0;
  /// On-the-fly filter: a block product is skipped when ||A_ik|| ||B_kj|| < eps / n_i, n_i the
  /// block products of C's block row i in the whole multiply (counted over all ranks, so the
  /// skipped products and the answer do not depend on the grid: the norm skipped from a row of
  /// C is < eps); then blocks of C with norm < eps are dropped. 0 = exact.
  double filter_eps = 0.0;
  /// rma25d with L > 1 and filter_eps > 0: send no block of a partial C panel whose norm bound
  /// is < eps / (L |alpha|) (fewer C bytes; each block of C may lose < eps more). Off by
  /// default: what is dropped depends on L and the split of k over the layers, so the answer
  /// would then change (by less than eps per block) with the rank count.
  bool drop_partial_blocks = false;
  /// Keep C's existing block pattern: products outside it are not stored. rma25d with L > 1
  /// sends C's pattern (index only) to the other layers first, so they neither compute nor
  /// send partial blocks outside it.
  bool retain_sparsity = false;
  /// Benchmarks: move every panel but do only the symbolic product (the blocks the products and
  /// the on-the-fly filter would create, zero-filled): every panel, the partial C panels
  /// included, has the size of the full run's. C = beta C + (zero blocks of the product).
  bool comm_only = false;
  /// Seconds between progress polls while a tick's block products run (one MPI_Testsome over
  /// the next panels' requests and one MPI_Iprobe: without an asynchronous progress thread,
  /// rendezvous messages and one-sided reads served by this rank move only inside MPI calls).
  /// 0 = no polling (an MPI with a progress thread; or to measure what polling buys).
  double progress_poll = 2e-4;
  /// Time every batch of block products this call runs (the thread's CPU time, two clock reads
  /// per batch of up to 30,000 products of one shape) into SpMultiplyReport::product_times: the
  /// measurement behind the simulated build's table of product times
  /// (`tessel spgemm --measure-product-times`). Off: nothing is timed.
  bool time_products = false;
  /// Cannon: every image of A and B is sent and multiplied in this many pieces (its k blocks
  /// cut into consecutive runs), so a rank holds the images it multiplies plus one piece in
  /// flight per operand, not a second whole image. 1 = whole images (fewer, larger messages);
  /// 0 = auto: pieces of at most ~16 MB of the larger operand's local storage (1 for small
  /// matrices; one allreduce). The bytes moved and the answer do not depend on it. 0 .. 64.
  int cannon_pieces = 0;
  /// Cannon: C is computed in this many panels of consecutive block rows, one after the other,
  /// each summed, filtered and merged into C before the next begins: the product's accumulator
  /// (before the filter, the largest buffer of a multiply: ~2.5x the filtered product at eps
  /// 1e-6) and A's images hold ~1/row_panels of theirs, at the price of moving B once per panel
  /// (A's bytes stay; B's, and the setup's, grow row_panels times). The answer does not depend
  /// on it beyond rounding (the same block products, each block filtered once on its whole sum;
  /// products of different block shapes may be summed in another order). 1 = one pass. 1 .. 64;
  /// > 1 needs beta = 0, no retain_sparsity, algorithm Cannon.
  int row_panels = 1;
  /// After each panel's product is merged into C (its accumulator and images freed), return
  /// the free pages of the heap to the system (glibc's malloc_trim; nothing elsewhere): glibc
  /// keeps freed buffers below its mmap threshold resident, so without it a process's resident
  /// size grows past what it holds (water:1000 TRS4 at 4 ranks: ru_maxrss 460-480 MB against
  /// 404-413 MB with it, the accounted peak 313 MB both). Costs a walk of the heap's free list
  /// per product. Ignored in the SMPI build (all simulated ranks share one heap).
  bool trim_heap = true;
};

/// Per-rank bytes of one phase ("spgemm/A panels", ...): received (p2p + get) and sent.
struct SpPanelBytes {
  std::int64_t recv = 0, sent = 0, msgs = 0, rma_ops = 0;
};

struct SpMultiplyReport {
  SpgemmPlan plan;
  /// This rank: flops of the block products done (2 m n k each), products done and skipped by
  /// the on-the-fly filter, and blocks of C dropped by the final filter.
  double flops = 0;
  std::int64_t blocks_multiplied = 0, blocks_skipped = 0, blocks_filtered = 0;
  /// This rank, the simulated build's ComputeMode::Skip only: seconds of block products
  /// charged to the simulated clock without being run (their time estimated from a sample of
  /// each shape run on this machine); 0 otherwise.
  double charged_s = 0;
  /// This rank's panel of the product op(A) op(B) before the final filter: blocks and values
  /// (8 (blocks + values) summed over ranks is SpVolumeModel::c).
  std::int64_t product_blocks = 0, product_values = 0;
  /// rma25d, eps > 0, L > 1: blocks of this rank's foreign partial C panels not sent because
  /// their norm bound (sum of ||A_ik|| ||B_kj|| over the products done) is < eps / (L |alpha|).
  std::int64_t partial_blocks_dropped = 0;
  /// This rank's bytes of each phase of this call. c_pattern: rma25d with retain_sparsity and
  /// L > 1, C's pattern sent by its owner to the L - 1 other layers (phase "spgemm/C pattern").
  SpPanelBytes a_panels, b_panels, c_panels, setup, conform, c_pattern;
  /// SpMultiplyOptions::time_products: this rank's CPU seconds and count of the block products
  /// run, by shape (m, n, k); empty otherwise.
  ShapeTimes product_times;
  /// rma25d: true when the windows were (re)created by this call.
  bool windows_created = false;
};

/// What is kept across multiplies (seed sec. 3): rma25d's window buffers and sub-communicators,
/// Cannon's row and column communicators. Owned by the caller and passed to every multiply of
/// an iteration (a Cannon multiply without a cache splits two communicators per call). They
/// are re-created (collectively) only when the grid or L changes or a rank's panels outgrow
/// them, decided by an allreduce in the multiply's set-up (rma25d: overlapped with it; Cannon:
/// one of two bits, only when a cache is passed). Pass the same cache (or none) on every rank:
/// both algorithms throw InputError on every rank when the ranks' caches disagree about the
/// communicator, grid (and L) they hold, instead of waiting in a split. Destroy it
/// (collective over the matrices' Context) before MPI_Finalize. Movable, not copyable.
class SpMultiplyCache {
 public:
  SpMultiplyCache();
  ~SpMultiplyCache();
  SpMultiplyCache(SpMultiplyCache&&) noexcept;
  SpMultiplyCache& operator=(SpMultiplyCache&&) noexcept;
  /// Number of times the windows were created so far.
  int creations() const;
  struct State;
  State& state() { return *s_; }

 private:
  std::unique_ptr<State> s_;
};

/// Collective over ctx. C = alpha op(A) op(B) + beta C. A, B and C live on the same PR x PC grid
/// (ctx.size() ranks); block sizes must agree (DimensionMismatch naming both). Operands whose
/// distribution does not fit the algorithm (op = T, rows of op(A) not distributed as C's rows,
/// k blocks of A and B not on a common image, ...) are first
/// conformed: each local block (transposed locally for op T) is put to its owner on the target
/// distribution and one finalize() moves them, recorded as phase "spgemm/conform". `cache`
/// keeps communicators and windows between calls; null = made for this call only. Errors (bad L, grid,
/// sizes) are thrown on every rank before any panel moves.
SpMultiplyReport multiply(Context& ctx, double alpha, SpOp opa, const BlockSparseMatrix<double>& a,
                          SpOp opb, const BlockSparseMatrix<double>& b, double beta,
                          BlockSparseMatrix<double>& c, const SpMultiplyOptions& options = {},
                          SpMultiplyCache* cache = nullptr);

/// Collective over ctx (one allreduce). The totals eq. 7 needs to choose L (SpVolumeModel):
/// bytes of op(A) and op(B) as images, and of the product: options.product_bytes_hint when
/// > 0, else C's current pattern when C has blocks (as in an iteration that reuses C), else the
/// larger of A and B (a product of two such matrices is at least as full; an underestimate for
/// products that fill in, which then favours larger L: pass the hint). With retain_sparsity
/// also C's pattern (c_pattern: 8 bytes per block of C), which rma25d sends to the other layers.
SpVolumeModel volume_model(Context& ctx, const BlockSparseMatrix<double>& a,
                           const BlockSparseMatrix<double>& b, const BlockSparseMatrix<double>& c,
                           const SpMultiplyOptions& options);

/// Collective over ctx (one allreduce of (PR + PC) V integers per L). Adds to `m` the real
/// size in bytes (the wire format: 8 per value + 16 per block) of every A and B image that
/// rma25d with L layers reads, for every valid L <= max_layers on C's grid, with the images
/// the multiply itself would give the k blocks (k_images on op(A)'s and op(B)'s
/// distributions). predict_layers then gives eq. 7's exact per-rank form: the A and B bytes
/// the ledger counts, to the byte, at every L.
void add_image_bytes(Context& ctx, SpOp opa, const BlockSparseMatrix<double>& a, SpOp opb,
                     const BlockSparseMatrix<double>& b, const Distribution& dc, int max_layers,
                     SpVolumeModel& m);

/// Not collective. The table of seconds per block product C(m x n) += A(m x k) B(k x n) for
/// every shape with m a block size of `rows`, n of `cols` and k of `inner`: the mean of
/// `measured` (a computing run's own products, SpMultiplyReport::product_times summed over
/// ranks and calls) where it has products of the shape; for the others, products run here in
/// batches through the multiply's own kernel on blocks spread over tens of MB (the thread's
/// CPU time after a warm-up, median of three batches). Run it on an idle core. `progress` (may
/// be empty) is called with (shapes timed here so far, shapes to time here).
KernelTimes measure_product_times(const BlockSizes& rows, const BlockSizes& inner,
                                  const BlockSizes& cols, const ShapeTimes& measured = {},
                                  const std::function<void(int, int)>& progress = {});

/// Pure. Every block shape (m, n, k) of a multiply with these block sizes, in order.
std::vector<KernelTimes::Shape> product_shapes(const BlockSizes& rows, const BlockSizes& inner,
                                               const BlockSizes& cols);

/// Pure. InputError naming `what` and the first block shape m x n x k (m of `rows`, n of
/// `cols`, k of `inner`) that `t` has no entry for; nothing when it has them all.
void check_product_times(const KernelTimes& t, const BlockSizes& rows, const BlockSizes& inner,
                         const BlockSizes& cols, const std::string& what);

/// Pure. "cannon" / "rma25d" (InputError otherwise, naming the value).
SpAlgorithm parse_sp_algorithm(const std::string& s);

}  // namespace tessel::sparse

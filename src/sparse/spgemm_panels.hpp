#pragma once
// Private to src/sparse: the wire format of A/B images and C panels, packing, the local kernel
// (no MPI) and the final merge into C. Used by cannon.cpp, rma25d.cpp and multiply.cpp.
//
// An image/panel is two arrays on the wire: meta (2 int64 per block: block row << 32 | block
// column, and the Frobenius norm as the bit pattern of a double), sorted by (row, column), and
// data (column-major blocks, back to back). The offset of a block's first value is not sent: it
// follows from the block sizes, and the receiver computes every offset once (`off`, index()).
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "tessel/core/kernel_times.hpp"
#include "tessel/core/memory.hpp"
#include "tessel/core/simulate.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::sparse::detail {

constexpr int kMeta = 2;  // int64 per block in meta
constexpr std::int64_t kMetaBytes = kMeta * 8;
/// Bytes of one nr x nc block in an A/B image on the wire (its meta and its values): the one
/// formula of the images' sizes (ImageSize::bytes and PanelView::bytes sum it over blocks),
/// of eq. 7's prediction (add_image_bytes) and of the volume model.
constexpr std::int64_t image_block_bytes(int nr, int nc) {
  return kMetaBytes + 8 * std::int64_t{nr} * nc;
}

inline std::int64_t meta_rc(int r, int c) {
  return static_cast<std::int64_t>(
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(r)) << 32) |
      static_cast<std::uint32_t>(c));
}
inline int meta_row(std::int64_t w) {
  return static_cast<int>(static_cast<std::uint64_t>(w) >> 32);
}
inline int meta_col(std::int64_t w) {
  return static_cast<int>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(w)));
}

/// The offset of every block's first value in the data array (blocks back to back in meta's
/// order), from the block sizes: off[b], b < nblocks. Pure.
void block_offsets(const std::int64_t* meta, std::int64_t nblocks, const BlockSizes& rows,
                   const BlockSizes& cols, std::vector<std::int64_t>& off);

/// A read-only image/panel: the wire arrays plus the offsets computed from them.
struct PanelView {
  const std::int64_t* meta = nullptr;
  std::int64_t nblocks = 0;
  const double* data = nullptr;
  std::int64_t ndata = 0;
  const std::int64_t* off = nullptr;  // nblocks offsets into data (block_offsets)
  int brow(std::int64_t b) const { return meta_row(meta[kMeta * b]); }
  int bcol(std::int64_t b) const { return meta_col(meta[kMeta * b]); }
  const double* block(std::int64_t b) const { return data + off[b]; }
  double norm(std::int64_t b) const {
    double x;
    std::memcpy(&x, &meta[kMeta * b + 1], sizeof x);
    return x;
  }
  std::int64_t bytes() const { return nblocks * kMetaBytes + ndata * 8; }
};

/// An image/panel with its storage. After meta/data are filled (packed or received), index()
/// computes the offsets; view() needs them (an error otherwise: a view without offsets would
/// read the wrong values).
struct PanelBuf {
  std::vector<std::int64_t> meta;
  std::vector<double> data;
  std::vector<std::int64_t> off;
  std::int64_t nblocks() const { return static_cast<std::int64_t>(meta.size() / kMeta); }
  void index(const BlockSizes& rows, const BlockSizes& cols) {
    block_offsets(meta.data(), nblocks(), rows, cols, off);
  }
  PanelView view() const;
  /// Bytes held (the vectors' capacities), for the MemoryLedger.
  std::int64_t held_bytes() const {
    return capacity_bytes(meta) + capacity_bytes(data) + capacity_bytes(off);
  }
  void resize(std::int64_t nblocks, std::int64_t ndata) {
    meta.resize(static_cast<std::size_t>(nblocks * kMeta));
    data.resize(static_cast<std::size_t>(ndata));
    off.clear();
  }
};

/// A partial C panel on the wire (rma25d's C phase): (block row, block column) as two int32 per
/// block, sorted by (row, column), and the values back to back. No offsets (they follow from the
/// block sizes) and no norms (the owner only adds): 8 bytes per block of metadata, not 32.
/// The values are heap memory, or (KernelMode::Sampled, AccValues::Virtual) shared simulated
/// memory holding zeros (Storage in ComputeMode::Skip): the sizes on the wire are a computing
/// run's, the values meaningless.
struct CWire {
  std::vector<std::int32_t> idx;
  Storage<double> data;
  std::int64_t bytes() const {
    return static_cast<std::int64_t>(idx.size()) * 4 + static_cast<std::int64_t>(data.size()) * 8;
  }
  /// Bytes held (the index's capacity and the values), for the MemoryLedger: what a computing
  /// run holds, also when the values are shared simulated memory.
  std::int64_t held_bytes() const {
    return capacity_bytes(idx) + static_cast<std::int64_t>(data.size()) * 8;
  }
};

/// Size of one image: blocks and values.
struct ImageSize {
  std::int64_t nblocks = 0, ndata = 0;
  std::int64_t bytes() const { return nblocks * kMetaBytes + ndata * 8; }
};

/// Block rows [lo, hi) of an operand (Cannon's row panels, SpMultiplyOptions::row_panels).
struct RowRange {
  int lo = 0, hi = std::numeric_limits<int>::max();
  bool has(int r) const { return r >= lo && r < hi; }
};
/// The local blocks of `m` in block rows `only` cut into images: A (by_col = true) groups
/// blocks by kv[bcol], B by kv[brow]; images first .. first + count - 1 are packed back to back
/// into meta/data (in image order, each sorted by (row, column)). Returns each image's size.
/// Pure.
/// The `panels` row ranges of SpMultiplyOptions::row_panels: consecutive block rows cut where
/// the element rows reach p / panels of the extent (the same on every rank). Pure.
std::vector<RowRange> row_panels(const BlockSizes& rows, int panels);
std::vector<ImageSize> image_sizes(const LocalBlocks<double>& m, const BlockSizes& rows,
                                   const BlockSizes& cols, const std::vector<int>& kv, bool by_col,
                                   int first, int count, RowRange only = {});
void pack_images(const LocalBlocks<double>& m, const BlockSizes& rows, const BlockSizes& cols,
                 const std::vector<int>& kv, bool by_col, int first, int count, std::int64_t* meta,
                 double* data, RowRange only = {});

/// Cannon's pieces: kv refined so that image v's k blocks (in order of k) are cut into
/// `pieces` consecutive runs of nearly equal count; piece c of image v becomes image
/// v * pieces + c. A's and B's pieces of one image then share their k blocks. Pure.
std::vector<int> image_pieces(const std::vector<int>& kv, int images, int pieces);

/// Statistics of the local kernel.
struct KernelStats {
  double flops = 0;
  std::int64_t multiplied = 0, skipped = 0;
  /// KernelMode::Sampled: seconds of the products not run, estimated from the sampled ones and
  /// not yet charged to the simulated clock (charge_skipped_products), and all charged so far.
  double pending_s = 0, charged_s = 0;
  /// KernelRun::time: CPU seconds and count of the products run, by shape.
  ShapeTimes timed;
};

/// How multiply_images treats the block products it decides to make.
enum class KernelMode {
  Compute,   ///< run them
  Symbolic,  ///< comm-only runs: create C's blocks (zero), run and count nothing
  /// The simulated build's ComputeMode::Skip: C's blocks as Symbolic, every product counted in
  /// flops and multiplied as Compute, but of each batch of one shape only the first
  /// kSampledProducts run; the others' time is estimated from theirs (pending_s), so their
  /// cost is charged to the simulated clock at this machine's measured per-shape speed
  /// without the wall time of running them. C's values are meaningless.
  Sampled,
};
/// Products of one shape run per batch (up to 30,000) in KernelMode::Sampled: the first
/// kSampleWarmup untimed, the rest timed. Measured on water-ss:500 at one rank (4 x 4, 4 x 1
/// and 1 x 1 blocks, 2026-12-02, CPU time): 11.9 ns per product over the first 256 of a batch,
/// 6.9 over the next 768, 5.6 over the rest; so a sample of the first 256 overestimated the
/// kernel twofold (docs/simulation.md has the validation against real runs).
constexpr std::size_t kSampleWarmup = 1024, kSampledProducts = 3072;

/// How multiply_images runs its products: the mode and, in KernelMode::Sampled, the table of
/// seconds per product by shape (ContextOptions::product_times, may be null). With a table no
/// product runs: each is charged its shape's entry (pending_s), so the charge does not depend on
/// the load of the machine; a shape missing from it is an internal error (the multiply checks
/// the table against its operands' block sizes first: check_product_times).
struct KernelRun {
  KernelMode mode = KernelMode::Compute;
  const KernelTimes* times = nullptr;
  bool time = false;  ///< Compute: time every batch by shape (KernelStats::timed)
  KernelRun() = default;
  KernelRun(KernelMode m, const KernelTimes* t = nullptr, bool timed = false)  // NOLINT
      : mode(m), times(t), time(timed) {}
};

/// Where a CAccumulator keeps its blocks' values.
enum class AccValues {
  Held,  ///< in its own pages (every accumulator of a computing run)
  /// KernelMode::Sampled only (the simulated build's ComputeMode::Skip), for a partial panel
  /// that is only packed and sent (rma25d, L > 1): every block's values alias one scratch
  /// block, so the sampled products write garbage there and L - 1 of a rank's L partial panels
  /// take no memory in the one simulator process (they did not fit at DZVP block sizes); the
  /// blocks, their norm bounds (which decide what is sent), bytes() and the packed wire's sizes
  /// are a computing run's. pack_wire / pack_masked then write zeros into shared simulated
  /// memory, so the owner adds zeros.
  Virtual,
};

/// Where a partial panel's values travel: heap (Held) or shared simulated memory (Virtual).
inline ComputeMode wire_mode(AccValues v) {
  return v == AccValues::Virtual ? ComputeMode::Skip : ComputeMode::Run;
}

/// A C panel being accumulated: blocks by row, values in pages that never move (a block's
/// values stay where slot() put them, so the kernel keeps pointers, and growing never copies).
/// Lookups go through a dense column index of the current row (a sparse accumulator, as
/// Gustavson's), so calls should come row by row (the kernel does); switching rows costs the
/// row's blocks.
class CAccumulator {
 public:
  CAccumulator(const BlockSizes* rows, const BlockSizes* cols, AccValues values = AccValues::Held);
  /// Values of block (r, c), created (zero) when absent.
  double* slot(int r, int c);
  /// slot(), and adds x to the block's norm bound (the kernel adds ||A_rk|| ||B_kc|| per
  /// product, so the bound is >= the block's Frobenius norm).
  double* slot_bound(int r, int c, double x);
  /// True when block (r, c) exists (created by slot() or mark()).
  bool contains(int r, int c) const;
  /// Pattern only (retain_sparsity's allowed blocks): block (r, c) is created without values,
  /// so contains() is true for it; an accumulator built with mark() is only for contains().
  void mark(int r, int c);
  /// mark() every block of a pattern in the C wire format (idx only; data ignored).
  void mark(const CWire& pattern);
  /// Adds a received panel (same block sizes).
  void add(const PanelView& p);
  /// Adds a received partial panel in the C wire format (same block sizes). Throws Error, and
  /// adds nothing, when the wire is malformed: an odd index count, a block outside the block
  /// grid, values that do not match the blocks' sizes (always on: it comes from another rank).
  void add(const CWire& w);
  /// f(r, c, values, norm bound) for every block, sorted by (row, column). Not for mark()ed
  /// accumulators.
  void for_each_block(const std::function<void(int, int, const double*, double)>& f) const;
  /// The blocks of row r sorted by column: (column, values); empty when the row has none.
  void sorted_row(int r, std::vector<std::pair<int, const double*>>& out) const;
  /// Packs into the C wire format, sorted by (row, column), leaving out the blocks whose norm
  /// bound is < drop_below (counted in *dropped when given).
  CWire pack_wire(double drop_below = 0, std::int64_t* dropped = nullptr) const;
  /// Packs in the order of the owner's `pattern` (retain_sparsity: every block of this
  /// accumulator is in it): idx = a bitmap over the pattern's blocks (bit b % 32 of word b / 32:
  /// block b is sent), data = the values of the sent blocks in pattern order. 4 bytes per 32
  /// pattern blocks instead of 8 per block. Blocks with norm bound < drop_below are not sent.
  CWire pack_masked(const CWire& pattern, double drop_below = 0,
                    std::int64_t* dropped = nullptr) const;
  /// Adds a partial packed by pack_masked against the same pattern. Throws Error, and adds
  /// nothing, when the bitmap's length does not match the pattern's, marks a block beyond it,
  /// or the values do not match the marked blocks' sizes.
  void add_masked(const CWire& w, const CWire& pattern);
  std::int64_t nvalues() const { return nvalues_; }
  std::int64_t nblocks() const { return nblocks_; }
  /// Bytes held: the value pages and the index (about 48 bytes per block, 12 per block row,
  /// 8 per block column).
  std::int64_t bytes() const;
  /// From now on bytes() is charged to `c` (updated whenever a page is added, and by
  /// recharge()).
  void charge_to(MemoryCharge c);
  void recharge() { charge_.set(bytes()); }

 private:
  void select(int r) const;
  std::int64_t slot_id(int r, int c, bool values = true);
  std::int64_t find_id(int r, int c) const;
  std::int64_t block_size(int r, int c) const;
  /// Throws Error naming `what` when (r, c) is outside the block grid.
  void check_block(int r, int c, const char* what) const;
  /// Adds block (r, c)'s values from src (created when absent); returns the values added.
  std::int64_t add_block(int r, int c, const double* src);
  /// n zero values in the current page (a new page when they do not fit).
  double* take(std::int64_t n);
  /// Row indices (into entries_) sorted by global row.
  std::vector<std::size_t> row_order() const;
  const BlockSizes* rows_;
  const BlockSizes* cols_;
  std::vector<int> row_slot_;  // global row -> index into entries_, or -1
  std::vector<int> row_of_;    // index into entries_ -> global row
  std::vector<std::vector<std::pair<int, std::int64_t>>> entries_;  // (column, block id)
  std::vector<double*> values_;  // block id -> its values (null for mark()ed blocks)
  std::vector<double> bounds_;   // block id -> norm bound (sum of norm products)
  /// The values of n more blocks' worth in a new wire (zeros under AccValues::Virtual).
  Storage<double> wire_values(std::int64_t n) const;
  /// Copies block id's n values to dst (zeros under AccValues::Virtual).
  void put_values(std::int64_t id, std::int64_t n, double* dst) const;
  AccValues mode_ = AccValues::Held;
  std::vector<double> scratch_;  // AccValues::Virtual: the one block every block aliases
  std::vector<std::unique_ptr<double[]>> pages_;
  std::int64_t page_values_ = 0;  // values in all pages (Virtual: that a computing run holds)
  MemoryCharge charge_;
  double* page_at_ = nullptr;  // the unused part of the last page
  std::int64_t page_left_ = 0;
  mutable std::vector<std::int64_t> spa_;  // column -> block id in the current row, or -1
  mutable int cur_ = -1;
  std::int64_t nblocks_ = 0, nvalues_ = 0;
};

/// The local kernel (no MPI): C += A_image * B_image over block-CSR images. On-the-fly filter
/// with `row_thr` (may be null: exact): a product is skipped when ||A_ik|| ||B_kj|| <
/// row_thr[i], the threshold of C's block row i for the whole multiply (row_thresholds), so
/// the products skipped do not depend on how the multiply is split into calls, ticks or ranks.
/// `allowed` (may be null): a block (r, c) of C outside it is
/// never created (retain_sparsity). Products are batched by (m, n, k) and run through LIBXSMM
/// (one kernel per shape), BLAS dgemm for large blocks. `run` (KernelRun): in Symbolic and
/// Sampled the same filter decisions (they need only the norms) create the same blocks of C. `progress` (may be empty) is called after every block row
/// of A: the executor's hook that lets the tick's transfers move (TickProgress); the kernel
/// itself never calls MPI.
void multiply_images(const PanelView& a, const PanelView& b, const BlockSizes& rows,
                     const BlockSizes& inner, const BlockSizes& cols, const double* row_thr,
                     const CAccumulator* allowed, CAccumulator& c, KernelStats& stats,
                     const KernelRun& run = {}, const std::function<void()>& progress = {});

/// Not collective. n[k] += the number of local blocks of m in block row k (n sized to m's
/// block rows).
void add_row_counts(const LocalBlocks<double>& m, std::vector<std::int64_t>& n);
/// Not collective. n[r] += sum over a's local blocks (r, k) of b_rows[k]: with b_rows the
/// blocks of every row of B (summed over all ranks), and n summed over all ranks afterwards,
/// n[r] is the number of block products of C's block row r in the whole multiply.
void add_row_products(const LocalBlocks<double>& a, const std::vector<std::int64_t>& b_rows,
                      std::vector<std::int64_t>& n);
/// The on-the-fly filter's thresholds: eps / n_r for every block row r of C (0 where n_r = 0).
/// The products skipped in row r then sum to a norm below n_r (eps / n_r) = eps, whatever the
/// grid, the number of ticks or layers.
std::vector<double> row_thresholds(const std::vector<std::int64_t>& products, double eps);

/// C = beta C + alpha P on this rank's local blocks (P: the product panel of this rank, read
/// in place; null: no product), then drop blocks of norm < eps (eps > 0). retain: C's pattern
/// is kept (P blocks outside are dropped). The new storage is sized exactly before it is
/// filled (a first pass decides which blocks the filter keeps). Returns the number of blocks
/// dropped by the final filter. `held` (may be null) is charged with the new storage while
/// it exists beside the old one.
std::int64_t merge_into(BlockSparseMatrix<double>& c, double beta, double alpha,
                        const CAccumulator* p, bool retain, double eps,
                        MemoryCharge* held = nullptr);

/// The pattern of C's local blocks as an accumulator (for retain_sparsity; mark()ed, no values).
CAccumulator pattern_of(const BlockSparseMatrix<double>& c);
/// The pattern of C's local blocks in the C wire format: idx only (two int32 per block, sorted
/// by (row, column)), no values. rma25d sends it to the other layers under retain_sparsity.
CWire pattern_wire(const BlockSparseMatrix<double>& c);

}  // namespace tessel::sparse::detail

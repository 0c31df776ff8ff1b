#pragma once
/// @file tiling.hpp
/// Tiles: coarser blocks made of groups of the input's (atomic) blocks, and the collective
/// moves between the two block structures.
///
/// Why: a block-sparse multiply pays a fixed cost per block product (lookup of C's block,
/// a kernel call); with the 1x1 and 4x4 blocks of a minimal basis (SZV water: O 4, H 1) that
/// cost dominates and the flops run at a few percent of the core's speed. Grouping consecutive
/// atoms into tiles of ~32-64 rows turns the same work into fewer, larger block products (more
/// flops where a tile is partly empty, many times fewer products). Filtering then works on
/// tiles: a tile is dropped only when its whole Frobenius norm is below eps, so a tiled run
/// keeps at least the elements the atomic run keeps (it is never less accurate at the same eps).
///
/// A Tiling is pure data (no MPI): fine block b lies in tile tile_of(b) at element offset
/// at(b) of that tile; the fine blocks of a tile are consecutive in the tile in increasing
/// fine index.
#include <cstdint>
#include <string>
#include <vector>

#include "tessel/sparse/block_sparse.hpp"

namespace tessel::sparse {

class Tiling {
 public:
  Tiling() = default;
  /// Pure. Tiles from an explicit grouping: group_of[b] in [0, ngroups) for every fine block,
  /// every group non-empty (InputError naming the entry otherwise). Tile t holds the fine
  /// blocks with group t in increasing order.
  Tiling(BlockSizes fine, const std::vector<int>& group_of);
  /// Pure. Consecutive fine blocks grouped greedily: a tile is closed when adding the next
  /// block would exceed `target` elements (a block larger than target is a tile alone).
  /// target >= 1 (InputError otherwise); target 1 gives the identity tiling.
  static Tiling contiguous(const BlockSizes& fine, int target);
  /// A coupling between two fine blocks (u != v) of integer strength w >= 1.
  struct Edge {
    int u, v, w;
  };
  /// Pure. Tiles from a coupling graph: the fine blocks partitioned by METIS (k-way, vertex
  /// weights = block sizes, edge weights w, fixed seed) into ceil(extent / target) parts of
  /// about `target` elements each, so that strongly coupled blocks (neighbouring atoms) share
  /// a tile whatever their numbering. Edges may come in either direction and repeat (the
  /// largest w counts). Parts METIS leaves empty are dropped; target >= 1.
  static Tiling clustered(const BlockSizes& fine, const std::vector<Edge>& edges, int target);

  const BlockSizes& fine() const { return fine_; }
  const BlockSizes& tiles() const { return tiles_; }
  int tile_of(int b) const { return tile_of_[static_cast<std::size_t>(b)]; }
  /// Element offset of fine block b inside its tile.
  int at(int b) const { return at_[static_cast<std::size_t>(b)]; }
  /// Fine blocks of tile t, increasing.
  const std::vector<int>& members(int t) const { return members_[static_cast<std::size_t>(t)]; }
  /// True when every tile is one fine block.
  bool is_identity() const { return tiles_.count() == fine_.count(); }
  /// "N blocks into T tiles (sizes min-max, mean x)".
  std::string describe() const;

 private:
  BlockSizes fine_, tiles_;
  std::vector<int> tile_of_, at_;
  std::vector<std::vector<int>> members_;
};

/// Collective over ctx. Tiling::clustered over the coupling graph of the square matrix `a`
/// (typically the overlap S, whose block norms decay with the distance between atoms): the
/// off-diagonal blocks with Frobenius norm >= 1e-3 of the largest, weighted by the log of the
/// norm, gathered on rank 0 (ledger phase "sparse/tiles"), clustered there and broadcast.
/// The same Tiling on every rank. A must be finalized.
Tiling cluster_tiling(const Context& ctx, const BlockSparseMatrix<double>& a, int target);

/// Collective over ctx. A with rows and columns grouped into tiles (`rows`, `cols`: tilings
/// whose fine() equal A's row and column block sizes, DimensionMismatch otherwise), in a new
/// matrix distributed by `to` (whose block sizes must be the tiles). Every stored block of A
/// becomes a sub-block of its tile; tiles holding none are not stored; parts of a stored tile
/// that A does not store are zero. One exchange (ledger phase "sparse/tiles"). A must be
/// finalized.
BlockSparseMatrix<double> to_tiles(const Context& ctx, const BlockSparseMatrix<double>& a,
                                   const Tiling& rows, const Tiling& cols, Distribution to,
                                   std::string name = "");

/// Collective over ctx. The inverse move: every stored tile of `a` (block sizes = the tilings'
/// tiles) cut into the fine blocks of the tilings, in a matrix distributed by `to` (block
/// sizes = the tilings' fine blocks). A fine block is stored when its Frobenius norm is above
/// `drop_below` (> 0) or, with drop_below = 0, when it is not all zero. One exchange (ledger
/// phase "sparse/tiles"). A must be finalized.
BlockSparseMatrix<double> from_tiles(const Context& ctx, const BlockSparseMatrix<double>& a,
                                     const Tiling& rows, const Tiling& cols, Distribution to,
                                     double drop_below = 0, std::string name = "");
/// The same, consuming `a`: its storage is freed once its pieces are packed, before the
/// exchange (the end of a solve in tiles holds the tiled P, its packed copy and the received
/// one otherwise). `a` is left empty.
BlockSparseMatrix<double> from_tiles(const Context& ctx, BlockSparseMatrix<double>&& a,
                                     const Tiling& rows, const Tiling& cols, Distribution to,
                                     double drop_below = 0, std::string name = "");

}  // namespace tessel::sparse

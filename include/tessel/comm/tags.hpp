#pragma once
/// @file tags.hpp
/// Every point-to-point message tag tessel uses, in one place (no tag literals elsewhere).
///
/// Tessel only sends on its own communicators (the Context's duplicate and communicators
/// made from it), so these tags never meet the caller's messages. Messages of one operation
/// are matched by (communicator, source, tag) in posting order; each operation below has its
/// own tag, so two operations that overlap on one communicator cannot take each other's
/// messages. The ranges:
///   [1, kFailure)                            point-to-point messages of tessel's algorithms;
///   kFailure = 16383                         failure notices (comm.hpp, notify_failure);
///   [kP2PBase, kP2PBase + kP2PWindow)        the point-to-point collectives (p2p_coll.hpp),
///                                            one tag per call from a per-communicator counter.
/// All values are below 32767, the smallest MPI_TAG_UB the MPI standard allows.
/// Not collective; constants only.

namespace tessel::comm::tag {

// ---- dense: SymmSquareCube (ssc_alg3/4/5.cpp, ssc_25d.cpp, symm_square_cube.cpp)
/// D^2 blocks returned to / gathered on plane 0 (Algorithms 3, 4, 5).
inline constexpr int kSscD2 = 1;
/// D^3 blocks returned to plane 0 (Algorithms 3, 4, 5).
inline constexpr int kSscD3 = 2;
/// Algorithm 3, line 6: D^2_jk sent to P(k,j,k) for the transpose.
inline constexpr int kSscTranspose = 3;
/// 2.5D: the initial skews of A (along the column communicator) and B (along the row).
inline constexpr int kSsc25dSkewA = 11;
inline constexpr int kSsc25dSkewB = 12;
/// 2.5D: the circular shifts of A and B in each round.
inline constexpr int kSsc25dShiftA = 13;
inline constexpr int kSsc25dShiftB = 14;
/// SymmSquareCube::check_input and symmetrize: D_ji from the transposed partner.
inline constexpr int kSscCheckPartner = 71;
inline constexpr int kSscSymmetrizePartner = 72;

// ---- dense: the GEMM executor (gemm_executor.cpp)
/// The double-buffered round gathers of A and B: tags base + round % 2.
inline constexpr int kGemmRoundsA = 100;
inline constexpr int kGemmRoundsB = 200;
/// The reduce-scatter of the partial C over the k planes.
inline constexpr int kGemmReduceC = 300;

// ---- dense: native SUMMA (summa_native.cpp), the ring forwarding of A and B panels
inline constexpr int kSummaPanelA = 21;
inline constexpr int kSummaPanelB = 22;

// ---- sparse: block-sparse multiply (cannon.cpp, rma25d.cpp) and assembly; io: its readers
/// Cannon (cannon.cpp): a panel's block index and its values, to the next rank of the ring.
inline constexpr int kCannonMeta = 801;
inline constexpr int kCannonData = 802;
/// rma25d (rma25d.cpp), the C partials of the L - 1 other layers to the owner of their fibre:
/// the two counts (index, values), then the index, then the values.
inline constexpr int kRma25dHead = 811;
inline constexpr int kRma25dMeta = 812;
inline constexpr int kRma25dData = 813;
/// rma25d with a retained C pattern, a protocol of its own before the partials: the owner's
/// pattern header (count and "follows" flag) and then, when it changed, its block index, to
/// the other layers of the fibre.
inline constexpr int kRma25dPatternHead = 814;
inline constexpr int kRma25dPatternIdx = 815;
/// BlockSparseMatrix::finalize: the blocks that go to their owners.
inline constexpr int kSparseFinalize = 7201;
/// to_tiles / from_tiles (tiles_move.cpp): blocks to the owners of their tiles and back.
inline constexpr int kSparseTiles = 7202;
/// The clustered tiling (tiling_cluster.cpp): every rank's coupling edges to rank 0.
inline constexpr int kSparseTilingEdges = 7203;
/// Block-sparse readers (io/sparse_text.cpp): every rank's block pattern to every rank.
inline constexpr int kSparsePattern = 7301;
/// MatrixMarket reader (io/mm_read.cpp): the entries to their owners.
inline constexpr int kSparseMmEntries = 7302;

// ---- layout, stencil, core
/// layout::redistribute, the point-to-point part.
inline constexpr int kRedistribute = 7101;
/// The point-to-point halo exchanger (exchange_p2p.cpp).
inline constexpr int kHalo = 7311;
/// Context::write_trace: every rank's events to rank 0.
inline constexpr int kTraceGather = 7401;
/// Comm::create_group (the tag argument of MPI_Comm_create_group on the parent).
inline constexpr int kCreateGroup = 7501;
/// allreduce_blob (blob_reduce.cpp): a blob from a child to its parent in the binomial tree.
inline constexpr int kBlobReduce = 7502;

// ---- apps: tessel calibrate (cmd_calibrate.cpp)
/// The ping-pong between two ranks (latency and bandwidth samples).
inline constexpr int kCalibratePingPong = 7601;
/// The pairwise exchange of the overlap measurement.
inline constexpr int kCalibrateOverlap = 7602;

// ---- reserved ranges
/// Failure notices (notify_failure); no other message uses it.
inline constexpr int kFailure = 16383;
/// The point-to-point collectives use kP2PBase + seq % kP2PWindow = [16384, 32767].
inline constexpr int kP2PBase = 16384;
inline constexpr int kP2PWindow = 16384;

namespace detail {
inline constexpr int kAll[] = {kSscD2,
                               kSscD3,
                               kSscTranspose,
                               kSsc25dSkewA,
                               kSsc25dSkewB,
                               kSsc25dShiftA,
                               kSsc25dShiftB,
                               kSscCheckPartner,
                               kSscSymmetrizePartner,
                               kGemmRoundsA,
                               kGemmRoundsA + 1,
                               kGemmRoundsB,
                               kGemmRoundsB + 1,
                               kGemmReduceC,
                               kSummaPanelA,
                               kSummaPanelB,
                               kCannonMeta,
                               kCannonData,
                               kRma25dHead,
                               kRma25dMeta,
                               kRma25dData,
                               kRma25dPatternHead,
                               kRma25dPatternIdx,
                               kSparseFinalize,
                               kSparseTiles,
                               kSparseTilingEdges,
                               kSparsePattern,
                               kSparseMmEntries,
                               kRedistribute,
                               kHalo,
                               kTraceGather,
                               kCreateGroup,
                               kBlobReduce,
                               kCalibratePingPong,
                               kCalibrateOverlap};
constexpr bool all_distinct_and_below_failure() {
  constexpr int n = static_cast<int>(sizeof kAll / sizeof kAll[0]);
  for (int a = 0; a < n; ++a) {
    if (kAll[a] < 0 || kAll[a] >= kFailure) return false;
    for (int b = a + 1; b < n; ++b)
      if (kAll[a] == kAll[b]) return false;
  }
  return true;
}
static_assert(all_distinct_and_below_failure(),
              "tessel message tags must be distinct and below tag::kFailure");
static_assert(kP2PBase == kFailure + 1 && kP2PBase + kP2PWindow - 1 == 32767,
              "the P2P collectives' range must follow kFailure and end at 32767");
}  // namespace detail

}  // namespace tessel::comm::tag

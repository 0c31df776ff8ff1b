#pragma once
/// @file symm_square_cube.hpp
/// SymmSquareCube (Huang & Chow, seed 000, sec. IV and V-E): D^2 and D^3 of a symmetric n x n
/// D on a p x p x p mesh (3D algorithms) or a q x q x c mesh (2.5D), layout/mesh3d.hpp. D is
/// moved to "plane 0 blocks" (p x p, or q x q, near-equal blocks, block (i, j) on P(i, j, 0)),
/// squared and cubed there, and moved back.
///
/// Algorithms:
///  - Original (seed Algorithm 3): blocking collectives; D^2 reduced on P(i,k,k), returned to
///    plane 0, transposed by point-to-point so that P(k,j,k) holds D^2_jk, broadcast as B.
///  - Baseline (seed Algorithm 4): blocking MPI_Bcast / MPI_Reduce, point-to-point returns.
///  - Optimized (seed Algorithm 5): every collective split into N_DUP contiguous parts (column
///    ranges of the column-major block) posted as MPI_Ibcast / MPI_Ireduce on N_DUP duplicated
///    communicators; the grd broadcast of D is pipelined into the row broadcast, the reduction
///    of D^2 into its row broadcast, and the reduction of D^3 into the returns to plane 0.
///    With N_DUP = 1 it moves exactly what the baseline moves.
///  - TwoPointFiveD (seed Algorithm 6): q x q x c mesh; grd broadcast of D, layer k does
///    Cannon steps [split_begin(q,c,k), split_begin(q,c,k+1)), grd allreduce gives D^2, Cannon
///    again, grd reduce gives D^3; the three collectives in N_DUP parts (nonblocking).
/// Volume per active rank P(i, j, k) of Algorithms 4 and 5 (payload rule of
/// shared/tools/commcount, p > 1; blocks of r_i rows): collective bytes
/// 8 (r_i r_j + 2 r_j r_k + 2 r_i r_k); point-to-point: P(i,i,k) sends D^2_ik (8 r_i r_k) to
/// P(i,k,0) unless i = k = 0, P(i,k,k) sends D^3_ik (8 r_i r_k) to P(i,k,0) unless k = 0;
/// P(i,j,0) receives those. Algorithm 3 and 2.5D: docs/symm_square_cube.md (and the tests).
/// With a 1-rank mesh nothing is communicated. Inactive ranks (beyond the mesh, or beyond
/// `active_ranks`) only take part in one MPI_Ibarrier (sleep-polled, every `poll`), and in
/// the redistributions when they hold part of D.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessel/comm/nonblocking.hpp"
#include "tessel/core/context.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/layout/mesh3d.hpp"

namespace tessel::dense {

enum class SscAlgorithm {
  Original,      ///< seed Algorithm 3 (GTFock's original: D^2 returned to plane 0 and transposed)
  Baseline,      ///< seed Algorithm 4 (blocking collectives)
  Optimized,     ///< seed Algorithm 5 (N_DUP pipelined nonblocking collectives)
  TwoPointFiveD  ///< seed Algorithm 6 (q x q x c mesh, Cannon steps, collectives split by N_DUP)
};

/// Pure. "3", "4", "5", "2.5d" (the names of the command line).
std::string to_string(SscAlgorithm a);
/// Pure. Parses "3", "4", "5", "2.5d" (also "original", "baseline", "optimized"); throws
/// InputError naming `what` and the accepted values otherwise.
SscAlgorithm parse_ssc_algorithm(const std::string& s, const std::string& what = "algorithm");

struct SscOptions {
  SscAlgorithm algorithm = SscAlgorithm::Optimized;
  /// Parts per collective (duplicated communicators); 0 = auto: the largest N <= max_auto_dup
  /// whose parts of the smallest block are at least n_t bytes (at least 1).
  int n_dup = 0;
  std::int64_t n_t = 64 * 1024;  ///< auto threshold message size in bytes (seed: 16 KB .. 1 MB)
  int max_auto_dup = 4;          ///< the seed's choice of N_DUP
  /// Mesh edge; 0 = the largest p with p^3 <= ranks and p <= n (for 2.5D: the q of the
  /// q x q x c mesh; 0 = the largest q^2 c <= ranks, Mesh3D::choose_grid). "ranks" is
  /// active_ranks when set. GridError when the mesh does not fit or p > n.
  int p = 0;
  /// 2.5D only: replication factor c (1 <= c <= q, q^2 c <= ranks); 0 = automatic. Any other
  /// value is a GridError (also a non-zero value with another algorithm).
  int replication = 0;
  /// Ranks the kernel may use (the "active subset", seed III-B); 0 = all ranks of the
  /// context. Must not exceed the context's size (GridError). The mesh is the largest that
  /// fits in these ranks; the others wait in a sleep-polled MPI_Ibarrier.
  int active_ranks = 0;
  /// The collectives of the kernels: Mpi (the MPI library's MPI_Bcast/Ibcast, MPI_Reduce/
  /// Ireduce, MPI_Iallreduce) or P2P (tessel's segmented point-to-point chains,
  /// comm/p2p_coll.hpp: every link carries a message once and segments are forwarded as they
  /// arrive; Open MPI's default MPI_Ibcast sends the whole buffer from the root to every
  /// receiver instead). The ledger records P2P as point-to-point messages.
  comm::CollImpl collectives = comm::CollImpl::Mpi;
  /// Benchmarks only: false skips the local multiplies, so that the communication schedule
  /// alone is timed (D^2 and D^3 are then garbage). Default true.
  bool compute_products = true;
  /// D must satisfy max|D - D^T| <= symmetry_tol * max|D| (checked when check_input).
  double symmetry_tol = 1e-12;
  bool check_input = true;  ///< refuse non-finite or non-symmetric D (one exchange of blocks)
  std::chrono::microseconds poll = std::chrono::milliseconds(10);  ///< inactive ranks' sleep
  /// When the run has inactive ranks: the "redistribute in/out" moves (symm_square_cube(),
  /// purify()) use layout::RedistOptions::node_shared, so data between an inactive and an
  /// active rank of the same node goes through an MPI-3 shared-memory window (one copy; the
  /// ledger records it as shm_bytes, not p2p). false: plain point-to-point redistribution.
  /// Results are bit-identical either way. Without inactive ranks it has no effect.
  bool shm_moves = true;
};

struct SscResult {
  DistMatrix<double> d2, d3;  ///< in D's layout
  int p = 1;                  ///< mesh edge (q for 2.5D)
  int c = 1;                  ///< mesh depth (p for the 3D algorithms, the replication c for 2.5D)
  int n_dup = 1;
  std::string mesh;  ///< Mesh3D::describe(), with the number of inactive ranks
};

/// Collective. D^2 and D^3 of the symmetric matrix D (any layout), returned in D's layout.
/// Throws on every rank: DimensionMismatch (D not square), InputError (NaN/Inf, not symmetric
/// within symmetry_tol, bad n_dup), GridError (bad p). Ledger phases "ssc/...".
SscResult symm_square_cube(Context& ctx, const DistMatrix<double>& D, const SscOptions& opt = {});

/// The mesh and duplicated communicators of one SymmSquareCube shape (mesh, N_DUP of row and
/// col and global, N_DUP of grd). Kept in the Context's cache (Context::cache(), key
/// "dense/ssc ..." naming the shape) and shared by every SymmSquareCube of that shape, so
/// that repeated symm_square_cube() calls make no communicators (docs/mpich.md).
struct SscComms {
  layout::Mesh3D mesh;
  comm::DupSet row, col, grd, glob;
};

/// The mesh, duplicated communicators and plane-0 layout of SymmSquareCube for one n, kept
/// across calls (purification calls it every iteration).
class SymmSquareCube {
 public:
  /// Collective over ctx: builds the mesh and its duplicated communicators (N_DUP each of
  /// row, col, grd, global; Algorithms 3 and 4: one each; 2.5D: N_DUP of grd, one of the
  /// others), or takes them from ctx.cache() when a SymmSquareCube of the same shape made
  /// them before (SscComms). Validates n >= 1, active_ranks, p, replication and n_dup on
  /// every rank (GridError / InputError).
  SymmSquareCube(Context& ctx, std::int64_t n, const SscOptions& opt = {});
  ~SymmSquareCube();

  /// Plane-0 block layout over ctx's ranks: block (i, j) on P(i, j, 0).
  const layout::Layout& plane0() const { return plane0_; }
  const layout::Mesh3D& mesh() const { return comms_->mesh; }
  /// Mesh edge: p of the p x p x p mesh, q of 2.5D's q x q x c mesh.
  int p() const { return comms_->mesh.p(); }
  /// Mesh depth: p for the 3D algorithms, the replication factor c for 2.5D.
  int c() const { return comms_->mesh.c(); }
  int n_dup() const { return n_dup_; }
  std::int64_t n() const { return n_; }
  /// Pure. Rows of block i.
  std::int64_t block(int i) const {
    return layout::split_begin(n_, p(), i + 1) - layout::split_begin(n_, p(), i);
  }

  /// Collective over the active ranks only (mesh().global()): d, d2, d3 are this rank's
  /// plane-0 blocks (column-major, ld = rows; ignored off plane 0). Phase "ssc/compute".
  void run_active(const double* d, double* d2, double* d3);
  /// As run_active, "square only": D^2 alone (half the flops and a bit over half the
  /// traffic; TRS2/TRS4 use it).
  void run_square_active(const double* d, double* d2);
  /// Collective over ctx: active ranks run_active; then, when there are inactive ranks, all
  /// ranks meet in one sleep-polled MPI_Ibarrier.
  void run(const double* d, double* d2, double* d3);
  /// Collective over ctx: run_square_active, then release().
  void run_square(const double* d, double* d2);
  /// Collective over ctx: the inactive ranks' side of run() (and the active ranks' closing
  /// call): one sleep-polled Ibarrier, none when every rank is active.
  void release();
  /// Collective over the active ranks (a no-op off plane 0): D <- (D + D^T)/2 on the plane-0
  /// blocks, bitwise symmetric afterwards (P(i,j,0) swaps blocks with P(j,i,0)). The kernel
  /// assumes D = D^T (it broadcasts D_kj as B_jk^T); iterations that feed D^3 back (McWeeny,
  /// TRS4) would otherwise double an antisymmetric rounding mode at every step.
  void symmetrize(double* d) const;
  /// Collective over ctx: throws InputError on every rank when the plane-0 blocks `d` have
  /// NaN/Inf or max|D - D^T| > symmetry_tol * max|D| (P(i,j,0) swaps blocks with P(j,i,0)).
  /// `who` and `name` prefix the message ("purify", "F").
  void check_input(const double* d, double symmetry_tol, const std::string& who,
                   const std::string& name) const;

 private:
  void exec(const double* d, double* d2, double* d3, bool cube);
  /// Point-to-point on plane 0 (P(i,j,0) <-> P(j,i,0), tag `tag`): D_ji of the partner
  /// (r_j x r_i, column-major); a copy of `d` on the diagonal.
  std::vector<double> partner_block(const double* d, int tag) const;
  Context& ctx_;
  std::int64_t n_ = 0;
  SscOptions opt_;
  int n_dup_ = 1;
  std::shared_ptr<const SscComms> comms_;  // shared with ctx's cache
  layout::Layout plane0_;
};

}  // namespace tessel::dense

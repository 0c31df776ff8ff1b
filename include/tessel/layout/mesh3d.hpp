#pragma once
/// @file mesh3d.hpp
/// Mesh3D: a q x q x c process mesh P(i, j, k) on the first q^2 c ranks of a Context, with the
/// sub-communicators of SymmSquareCube (Huang & Chow, seed 000, sec. IV and V-E):
///   row = P(:, j, k) (rank i), col = P(i, :, k) (rank j), grd = P(i, j, :) (rank k),
///   global = all q^2 c active ranks (rank = context rank).
/// Context rank r = i * q + j + k * q^2 (row by row in one plane, then plane by plane).
/// The 3D algorithms use c = q = p (a p x p x p mesh); the 2.5D algorithm any 1 <= c <= q.
/// Ranks q^2 c .. P-1 are inactive: they hold null communicators.
#include <cstdint>
#include <string>

#include "tessel/comm/comm.hpp"
#include "tessel/core/context.hpp"

namespace tessel::layout {

/// Edge q and depth c of a q x q x c mesh.
struct GridShape {
  int q = 1, c = 1;
  bool operator==(const GridShape& o) const { return q == o.q && c == o.c; }
};

class Mesh3D {
 public:
  /// Pure. The largest p with p^3 <= nranks (nranks >= 1).
  static int largest_p(int nranks);
  /// Pure. The q x q x c mesh of the 2.5D algorithm for `nranks` ranks and an n x n matrix:
  /// the largest q^2 c <= nranks with 1 <= c <= q and q <= n (ties: the larger c).
  /// `q` > 0 forces the edge, `c` > 0 forces the depth (0 = choose). Throws GridError, naming
  /// the values, when q < 0, c < 0, c > q, q > n or q^2 c > nranks (or nothing fits).
  static GridShape choose_grid(int nranks, std::int64_t n, int q = 0, int c = 0);

  Mesh3D() = default;
  /// Collective over ctx (three MPI_Comm_split plus one for `global`; inactive ranks take
  /// part with MPI_UNDEFINED). p = 0 picks largest_p(ctx.size()); a given p must satisfy
  /// 1 <= p and p^3 <= ctx.size() (GridError otherwise, on every rank). A p x p x p mesh.
  Mesh3D(const Context& ctx, int p = 0);
  /// Collective over ctx: a q x q x c mesh (1 <= c <= q, q^2 c <= ctx.size(); GridError on
  /// every rank otherwise).
  static Mesh3D grid(const Context& ctx, int q, int c);

  /// Mesh edge (q; p for the cube).
  int p() const { return p_; }
  int q() const { return p_; }
  /// Mesh depth (number of planes / layers): p for the cube, c for 2.5D.
  int c() const { return c_; }
  int nranks() const { return nranks_; }
  int active_ranks() const { return p_ * p_ * c_; }
  int inactive_ranks() const { return nranks_ - active_ranks(); }
  bool active() const { return active_; }
  int i() const { return i_; }
  int j() const { return j_; }
  int k() const { return k_; }
  /// Pure. The context rank of P(i, j, k).
  int rank_of(int i, int j, int k) const { return i * p_ + j + k * p_ * p_; }

  const comm::Comm& global() const { return global_; }
  const comm::Comm& row() const { return row_; }
  const comm::Comm& col() const { return col_; }
  const comm::Comm& grd() const { return grd_; }

  /// "2x2x2 mesh on ranks 0..7 of 8 (0 inactive)"; for a mesh made by grid()
  /// "3x3x2 mesh (q=3, c=2) on ranks 0..17 of 20 (2 inactive)".
  std::string describe() const;

 private:
  void build(const Context& ctx);
  int p_ = 0, c_ = 0, nranks_ = 0;
  bool layered_ = false;  // made by grid(): describe() names q and c
  bool active_ = false;
  int i_ = -1, j_ = -1, k_ = -1;
  comm::Comm global_{MPI_COMM_NULL, nullptr}, row_{MPI_COMM_NULL, nullptr},
      col_{MPI_COMM_NULL, nullptr}, grd_{MPI_COMM_NULL, nullptr};
};

}  // namespace tessel::layout

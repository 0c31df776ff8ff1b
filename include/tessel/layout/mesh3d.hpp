#pragma once
/// @file mesh3d.hpp
/// Mesh3D: a p x p x p process mesh P(i, j, k) on the first p^3 ranks of a Context, with the
/// sub-communicators of SymmSquareCube (Huang & Chow, seed 000, sec. IV):
///   row = P(:, j, k) (rank i), col = P(i, :, k) (rank j), grd = P(i, j, :) (rank k),
///   global = all p^3 active ranks (rank = context rank).
/// Context rank r = i * p + j + k * p^2 (row by row in one plane, then plane by plane).
/// Ranks p^3 .. P-1 are inactive: they hold null communicators.
#include <string>

#include "tessel/comm/comm.hpp"
#include "tessel/core/context.hpp"

namespace tessel::layout {

class Mesh3D {
 public:
  /// Pure. The largest p with p^3 <= nranks (nranks >= 1).
  static int largest_p(int nranks);

  Mesh3D() = default;
  /// Collective over ctx (three MPI_Comm_split plus one for `global`; inactive ranks take
  /// part with MPI_UNDEFINED). p = 0 picks largest_p(ctx.size()); a given p must satisfy
  /// 1 <= p and p^3 <= ctx.size() (GridError otherwise, on every rank).
  Mesh3D(const Context& ctx, int p = 0);

  int p() const { return p_; }
  int nranks() const { return nranks_; }
  int inactive_ranks() const { return nranks_ - p_ * p_ * p_; }
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

  /// "2x2x2 mesh on ranks 0..7 of 8 (0 inactive)".
  std::string describe() const;

 private:
  int p_ = 0, nranks_ = 0;
  bool active_ = false;
  int i_ = -1, j_ = -1, k_ = -1;
  comm::Comm global_{MPI_COMM_NULL, nullptr}, row_{MPI_COMM_NULL, nullptr},
      col_{MPI_COMM_NULL, nullptr}, grd_{MPI_COMM_NULL, nullptr};
};

}  // namespace tessel::layout

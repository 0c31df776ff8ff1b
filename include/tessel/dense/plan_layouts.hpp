#pragma once
/// @file plan_layouts.hpp
/// Where a GemmPlan wants A, B and C: the "plan layouts" the executor redistributes into.
/// Pure data (no MPI), so tests can check them and redist_volume() can price them.
#include <cstdint>
#include <vector>

#include "tessel/dense/gemm_plan.hpp"
#include "tessel/layout/layout.hpp"

namespace tessel::dense {

/// Coordinates of a rank in the plan grid; active == false for the ranks the plan leaves idle.
struct PlanCoords {
  bool active = false;
  int i = 0, j = 0, l = 0;
};
/// Ranks are numbered i fastest, then j, then l: rank = (l * pn + j) * pm + i.
int plan_rank(const GemmPlan& p, int i, int j, int l);
PlanCoords plan_coords(const GemmPlan& p, int rank);

/// How one input operand is gathered per round. The stored matrix has the contracted
/// dimension k either along its columns (A as N, B as T) or its rows (A as T/C, B as N).
/// The round panel is split among the q ranks of a gather group by the panel's columns, so
/// the gathered panel is column-major and contiguous.
struct GatherSpec {
  bool k_in_cols = true;
  int q = 1;  ///< ranks in a gather group (pn for A, pm for B)
  /// This rank's free group (I_i or J_j) and K_l: first global index and size. An aligned
  /// plan's groups are unions of intervals (GemmPlan::part_m() ...); the panels hold them in
  /// local order, the executor only needs the sizes.
  std::int64_t free_begin = 0, free_len = 0;
  std::int64_t k_begin = 0, k_len = 0;
  std::vector<int> members;  ///< ranks of the gather group, by piece index
  int me = 0;                ///< this rank's piece index
};

struct PlanLayouts {
  layout::Layout a, b, c;  ///< stored A, stored B, and C after the reduction over pk
};

/// The plan layouts of stored A (op(A) is m x k), stored B (op(B) is k x n) and C, for a
/// communicator of `comm_size` >= plan.used() ranks. Rows, columns and k follow the plan's
/// splits (part_m(), part_n(), part_k()): group g's local index x is the x-th element of its
/// intervals in global order, in A, B and C alike, so the local GEMM pairs the right
/// elements whatever the split.
PlanLayouts make_plan_layouts(const GemmPlan& p, bool a_transposed, bool b_transposed,
                              int comm_size);
/// The gather groups of `rank` (active) for A and B.
GatherSpec gather_spec_a(const GemmPlan& p, bool a_transposed, int rank);
GatherSpec gather_spec_b(const GemmPlan& p, bool b_transposed, int rank);

/// Round r of K_l (length klen): [round_begin(klen, rounds, r), round_begin(.., r+1)).
inline std::int64_t round_begin(std::int64_t klen, int rounds, int r) {
  return layout::split_begin(klen, rounds, r);
}

}  // namespace tessel::dense

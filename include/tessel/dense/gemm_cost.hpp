#pragma once
/// @file gemm_cost.hpp
/// The multiply planner's cost model (pure, no MPI): the predicted time of a GemmPlan on a
/// MachineModel, for the busiest rank, split into its parts.
///
/// Per rank r (exact piece sizes of the executor, gemm_executor.cpp):
///   rounds:  each of the `rounds` rounds gathers the A panel from its pn - 1 peers and the B
///            panel from its pm - 1 peers (one message per peer whose piece is not empty) and
///            runs a local GEMM of 2 mi nj kr flops (8 for complex) at the machine's rate.
///            Double buffering overlaps round t+1's transfer with round t's GEMM, so the rounds
///            cost  sum (c_r + g_r) - h sum_{r > first} min(c_r, g_r)  with c_r, g_r round r's
///            transfer and GEMM times and h = machine.overlap (equal rounds, h = 1:
///            c + g + (t - 1) max(c, g)); reported as transfer + latency + compute + overlap,
///            overlap <= 0 and never more than the transfer or the GEMM. (The rounds of a
///            balanced split differ by one k: 512 in 160 rounds is 32 of 4 and 128 of 3; pricing
///            every round at the longer one's min hid 2.13 s of a 1.73 s transfer.)
///   reduce:  pk - 1 messages of mi x |piece of J_j| words (reduce-scatter over pk).
///   redistribution (only with CallerLayouts): A and B from the caller's layouts into the plan
///            layouts and C back, one message per peer that shares data (layout::make_redist_plan),
///            not overlapped; plus its local passes: every element the rank keeps, sends or
///            receives is copied once (kept: into place; sent: packed; received: unpacked), i.e.
///            read and written, at the machine's memory bandwidth. Without that term a plan
///            that moves all of C back (e.g. 8192 x 8192 x 256 from 2x4 nb 128 on 8 ranks:
///            4M elements kept, sent and received per rank) looked 3.7 ms dearer than SUMMA on
///            the caller's grid and ran 0.3 s slower.
/// A PlanKind::CallerGrid plan (2D SUMMA on the caller's layouts, needs `caller`) is priced
/// from summa_native's k segments: per segment one A panel message from the left neighbour
/// in the process row unless the rank's process column owns it, one B panel message from
/// the neighbour above unless its process row owns it, and the local GEMM; segment s's
/// transfer hides behind segment s-1's GEMM by machine.overlap. Reported as rounds; no
/// reduce, no redistribution. The ring's start-up (the first segment reaches a rank d hops
/// from its owner after d - 1 forwards) is added to rounds_lat_s; forwarding that waits for
/// a GEMM chunk to end is not modelled.
/// Aligned plans (GemmPlan::split_m/n/k) are priced with their exact group sizes and layouts.
/// Each message costs link.latency + bytes / link.bandwidth, with the link intra- or
/// inter-node by the model's node_size (unknown: inter-node); an inter-node link carries
/// 1/node_size of the NIC (MachineModel::link: the ranks of a node share it). Collisions and
/// uneven NIC use are not modelled. The plan's time is the largest over the ranks of
/// the per-rank sum (idle ranks only redistribute).
#include <cstdint>
#include <vector>

#include "tessel/dense/machine_model.hpp"
#include "tessel/layout/layout.hpp"

namespace tessel::dense {

struct GemmPlan;

/// The layouts the caller's A, B and C are in (stored A is m x k unless a_transposed).
struct CallerLayouts {
  bool a_transposed = false, b_transposed = false;
  layout::Layout a, b, c;
};

/// Predicted cost of one rank (seconds, words, messages). total_s() is the predicted time.
struct GemmCost {
  int rank = 0;             ///< the rank it describes (the busiest, from price_gemm_plan)
  double compute_s = 0;     ///< local GEMM at the machine's rate
  double rounds_bw_s = 0;   ///< A and B panel words / bandwidth
  double rounds_lat_s = 0;  ///< A and B panel messages x latency
  double overlap_s = 0;     ///< <= 0: transfer hidden behind the GEMM by double buffering
  double reduce_bw_s = 0, reduce_lat_s = 0;  ///< reduce-scatter of C over pk
  double redist_bw_s = 0, redist_lat_s = 0;  ///< caller's layouts <-> plan layouts
  double redist_local_s = 0;  ///< the redistribution's local passes (keep, pack, unpack copies)
  double rounds_words = 0, reduce_words = 0, redist_words = 0;  ///< received by this rank
  double messages = 0;                                          ///< received by this rank
  double flops = 0;                                             ///< local GEMM flops of this rank
  double total_s() const {
    return compute_s + rounds_bw_s + rounds_lat_s + overlap_s + reduce_bw_s + reduce_lat_s +
           redist_bw_s + redist_lat_s + redist_local_s;
  }
  double plan_words() const { return rounds_words + reduce_words; }
  double words() const { return plan_words() + redist_words; }
};

/// Not collective, pure. The cost of `rank` (0 <= rank < plan.p) running `plan` with elements
/// of 8 bytes (complex: 16), including the redistribution when `caller` is given.
GemmCost price_gemm_rank(const GemmPlan& plan, const MachineModel& machine, bool complex,
                         const CallerLayouts* caller, int rank);
/// Not collective, pure. The busiest rank's cost (the largest total_s(); ties: lowest rank).
GemmCost price_gemm_plan(const GemmPlan& plan, const MachineModel& machine, bool complex,
                         const CallerLayouts* caller = nullptr);
/// Not collective, pure. As price_gemm_plan over the ranks first, first + stride, ... only
/// (a share of the ranks, for planning split over a communicator: the busiest of all is the
/// busiest of the shares' answers, ties to the lowest rank). No such rank priced: rank = -1.
GemmCost price_gemm_plan_ranks(const GemmPlan& plan, const MachineModel& machine, bool complex,
                               const CallerLayouts* caller, int first, int stride);
/// As price_gemm_plan without caller layouts, for the planner's search: when every link is
/// alike (node_size 0, 1 or >= p) or p > 256, only representative ranks are priced: a rank's
/// costs depend on its grid index only through "is this piece of a balanced split one of the
/// larger ones" tests, so one index per interval between the splits' remainders stands for
/// all (exact when links are alike); otherwise every used rank. Above 256 ranks on nodes of
/// several ranks the representatives do not see which peers share a node, so the price is a
/// lower bound of the busiest rank's: make_gemm_plan prices candidates exactly
/// (price_gemm_plan) in the order of that bound until no later one can be among its best 8.
GemmCost price_gemm_plan_search(const GemmPlan& plan, const MachineModel& machine, bool complex);

}  // namespace tessel::dense

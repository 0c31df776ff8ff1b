#pragma once
/// @file plan_share.hpp
/// The planner's search split over ranks (PlanShare, gemm_plan.hpp): the order of candidates
/// as plain keys, the merge of every rank's best candidates, and exact prices from every
/// rank's share of the ranks. Pure code: the communication is the share's all_reduce hook.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessel/dense/gemm_plan.hpp"

namespace tessel::dense::detail {

/// What orders two candidates: predicted time, then fewer words, more ranks used, less
/// compute (dm dn dk), fewer rounds.
struct PlanKey {
  double t = 0, words = 0, volume = 0;
  int used = 0, rounds = 0;
};

/// Pure. Two predicted times within 1e-9 of each other (relative): a tie.
bool same_time(double a, double b);
/// Pure. The local GEMM volume dm dn dk of the largest domain.
double compute_volume(const GemmPlan& g);
/// Pure. g's key (t: g.cost.total_s()).
PlanKey key_of(const GemmPlan& g);
/// Pure. a strictly better than b without the time: less volume (relative 1e-12), more ranks,
/// less compute, fewer rounds.
bool key_better(const PlanKey& a, const PlanKey& b);
/// Pure. a strictly before b: less time (relative 1e-9), then key_better.
bool key_faster(const PlanKey& a, const PlanKey& b);

/// A search candidate as the ranks exchange it: its key, its place in the search's order,
/// its grid (the rounds are in the key).
struct SearchEntry {
  PlanKey key;
  std::int64_t at = 0;
  int pm = 1, pn = 1, pk = 1;
};

/// Pure. a before b: key_faster, ties by the search's order (what a stable sort of all
/// candidates by key_faster gives).
bool entry_before(const SearchEntry& a, const SearchEntry& b);

/// Collective over the share's ranks. The first `keep` of all ranks' entries in entry_before
/// order, the same on every rank; `mine` is this rank's, in that order.
std::vector<SearchEntry> best_of_all(const PlanShare& share, const std::vector<SearchEntry>& mine,
                                     std::size_t keep);

/// For each plan the busiest rank's cost, as price_gemm_plan gives it (the same on every
/// rank). Without a share (null, or one rank): price_gemm_plan, not collective. With one:
/// collective over its ranks; each prices its share of the ranks (price_gemm_plan_ranks),
/// the largest time wins (ties: the lowest rank), and that rank's cost is priced again.
std::vector<GemmCost> price_all(const PlanShare* share, const std::vector<const GemmPlan*>& plans,
                                const MachineModel& machine, bool complex,
                                const CallerLayouts* caller);

}  // namespace tessel::dense::detail

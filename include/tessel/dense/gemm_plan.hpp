#pragma once
/// @file gemm_plan.hpp
/// The pure planner (no MPI) of the communication-optimal dense multiply C = A * B
/// (COSMA, Kwasniewski et al., SC'19, §6.3 and §7.1–7.3) and of its 2D SUMMA baseline.
///
/// The executor runs on a grid pm x pn x pk (used = pm*pn*pk <= p ranks; the others idle):
/// rank (i, j, l) computes C[I_i, J_j] partial over K_l, where I, J, K are balanced splits
/// (layout::split_begin) of m, n, k into pm, pn, pk pieces. K_l is split (balanced) into
/// `rounds` consecutive chunks. Per round r the A panel A[I_i, K_l,r] is allgathered among the
/// pn ranks (i, *, l), the B panel B[K_l,r, J_j] among the pm ranks (*, j, l), and a local GEMM
/// accumulates; after the last round C[I_i, J_j] is reduce-scattered among the pk ranks
/// (i, j, *). Two A and two B round buffers (double buffering) let round r+1's transfer
/// overlap round r's GEMM.
///
/// All volumes and memory sizes are per rank, in words (matrix elements), maximised over the
/// ranks by using the largest piece sizes: dm = ceil(m/pm), dn = ceil(n/pn), dk = ceil(k/pk).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tessel/dense/gemm_cost.hpp"
#include "tessel/dense/machine_model.hpp"
#include "tessel/layout/partition.hpp"

namespace tessel::dense {

/// What to plan. Validated by make_gemm_plan / make_summa_plan.
struct GemmPlanRequest {
  std::int64_t m = 0, n = 0, k = 0;  ///< C is m x n, A is m x k, B is k x n
  int p = 1;                         ///< ranks available
  double memory_words = 0;           ///< per-rank budget S in words (elements); <= 0: unlimited
  /// Ceiling on the fraction of ranks that may idle: at most floor(delta * p) ranks idle, and
  /// only when the predicted time (cost model, gemm_cost.hpp) falls. The COSMA paper used 3%
  /// on thousands of cores; at tens of ranks 3% is not one rank, so the default 0.15 lets a
  /// prime count such as 7 or 13 consider dropping one rank for a grid that factors. Does not
  /// apply to PlanKind::CallerGrid (the caller's grid is what it is).
  double delta = 0.15;
  int rounds = 0;             ///< 0 = automatic; else forced number of rounds over k
  MachineModel machine;       ///< prices the candidates (defaults: machine_model.hpp)
  bool complex = false;       ///< elements are complex<double> (16 bytes, 8 flops/madd)
  bool a_transposed = false;  ///< stored A is k x m (op(A) = T or C)
  bool b_transposed = false;  ///< stored B is n x k
  /// With caller layouts that allow it (summa2d_on_caller_applies), also consider 2D SUMMA on
  /// the caller's layouts as they are (PlanKind::CallerGrid). multiply() sets it for
  /// Algorithm::Auto only.
  bool allow_caller_grid = false;
  /// 0: the best candidate (the plan). 1 .. 4: the choice-th runner-up instead, i.e. the
  /// candidate the model ranks (choice + 1)-th, so that the model's ranking can be measured
  /// (docs/gemm.md, "How good is the model"); the plan's runners_up are then the others, best
  /// first. The planner throws InputError when it priced no more than `choice` candidates.
  int choice = 0;
};

/// What executes a plan.
enum class PlanKind {
  Grid,        ///< the pm x pn x pk executor (gemm_executor.cpp) on the plan layouts
  CallerGrid,  ///< 2D SUMMA on the caller's block-cyclic layouts as they are (summa_native.cpp):
               ///< pm x pn = the caller's process grid, pk = 1, no redistribution
};

/// A candidate the planner priced: grid, rounds and the busiest rank's predicted cost.
struct PlanCandidate {
  int pm = 1, pn = 1, pk = 1, rounds = 1;
  PlanKind kind = PlanKind::Grid;
  bool aligned = false;  ///< GemmPlan::aligned()
  GemmCost cost;
};

/// Per-rank memory of the executor in words, term by term (see GemmPlan::memory()).
struct GemmMemory {
  double c_partial = 0;  ///< partial C[I_i, J_j]: dm*dn
  double a_piece = 0;    ///< own plan-layout piece of A[I_i, K_l]: ceil(dm*dk / pn)
  double b_piece = 0;    ///< own plan-layout piece of B[K_l, J_j]: ceil(dk*dn / pm)
  double a_rounds = 0;   ///< two A round buffers: 2 * dm*kr
  double b_rounds = 0;   ///< two B round buffers: 2 * kr*dn
  double c_out = 0;      ///< reduce-scatter output: dm * ceil(dn/pk)
  double c_recv = 0;     ///< reduce-scatter receive buffer: dm*dn
  double total() const {
    return c_partial + a_piece + b_piece + a_rounds + b_rounds + c_out + c_recv;
  }
};

/// A plan: the grid, the number of rounds and the predicted cost. Pure data.
struct GemmPlan {
  std::int64_t m = 0, n = 0, k = 0;
  int p = 1;                   ///< ranks available (Theorem 2 uses this p)
  int pm = 1, pn = 1, pk = 1;  ///< grid; used = pm*pn*pk <= p
  int rounds = 1;              ///< sequential steps over the local k range (>= 1)
  double delta = 0.15;         ///< as requested
  double memory_words = 0;     ///< budget as requested (<= 0: unlimited)
  bool complex = false, a_transposed = false, b_transposed = false;  ///< as requested
  MachineModel machine;  ///< the model the plan was priced on
  PlanKind kind = PlanKind::Grid;
  /// How m, n and k are split among the pm, pn and pk groups. Empty: balanced contiguous
  /// pieces (layout::split_begin), the plan's own layouts. Set (an aligned plan, made by
  /// align_gemm_plan): a partition of the extent into pm (pn, pk) groups, each group's
  /// storage packed in global order, whose pieces follow the caller's block-cyclic layouts so
  /// that ranks keep more of what they hold. Group sizes are those of the balanced split.
  std::optional<layout::Partition1D> split_m, split_n, split_k;
  GemmCost cost;  ///< predicted cost of the busiest rank (with redistribution
                  ///< when the caller's layouts were given)
  std::vector<PlanCandidate> runners_up;  ///< the next best candidates, best first (<= 4)
  int choice = 0;  ///< GemmPlanRequest::choice: 0 the best candidate, else its rank - 1

  int used() const { return pm * pn * pk; }
  bool aligned() const { return split_m || split_n || split_k; }
  /// The split of m (n, k): split_m if set, else the balanced Partition1D::even(m, pm).
  layout::Partition1D part_m() const;
  layout::Partition1D part_n() const;
  layout::Partition1D part_k() const;
  /// Size of group i of m's split (j of n's, l of k's).
  std::int64_t piece_m(int i) const;
  std::int64_t piece_n(int j) const;
  std::int64_t piece_k(int l) const;
  int idle() const { return p - used(); }
  /// Largest local domain extents: ceil(m/pm), ceil(n/pn), ceil(k/pk).
  std::int64_t dom_m() const;
  std::int64_t dom_n() const;
  std::int64_t dom_k() const;
  /// Largest k chunk of one round: ceil(dom_k() / rounds) (rounds <= 0: this plan's rounds).
  std::int64_t k_per_round(int rounds = 0) const;

  /// Words received per rank (max over ranks): A dm*dk*(pn-1)/pn, B dk*dn*(pm-1)/pm,
  /// C dm*dn*(pk-1)/pk. Independent of the number of rounds.
  double recv_words_a() const;
  double recv_words_b() const;
  double recv_words_c() const;
  double recv_words() const;  ///< sum of the three

  /// The executor's per-rank memory with `rounds` rounds (<= 0: this plan's rounds), with
  /// kr = k_per_round(rounds). The executor allocates exactly these buffers.
  GemmMemory memory(int rounds = 0) const;
  /// memory().total(): the words per rank this plan needs.
  double memory_words_needed() const;
  /// memory(rounds).total().
  double memory_words_needed(int rounds) const;

  /// Theorem 2 lower bound per rank with p = this->p and S = memory_words:
  /// min{2mnk/(p sqrt S) + S, 3 (mnk/p)^(2/3)}; unlimited memory: 3 (mnk/p)^(2/3).
  /// Note: with X = mnk/p, 2X/sqrt(S) + S >= 3 X^(2/3) for every S > 0 (AM-GM, equality at
  /// S = X^(2/3)), so this min always equals 3 X^(2/3); see bound_words_eq4().
  double bound_words() const;
  /// The cost of the paper's memory-constrained optimal domain (eqs. 4-5): 2X/a + a^2 with
  /// X = mnk/p and a = min{sqrt S, X^(1/3)} (unlimited memory: a = X^(1/3), equal to
  /// bound_words()). Never below bound_words(); larger when S < X^(2/3).
  double bound_words_eq4() const;
  /// The lower bound on the words the busiest rank must RECEIVE, for any schedule whose
  /// busiest rank does at most dm*dn*dk multiply-adds and that starts from layouts holding
  /// each element of A, B (and ends with C) on one rank: recv_lower_bound_words().
  double recv_bound_words() const;

  /// Multi-line human text for `--explain`: grid, idle ranks, local domain, rounds, k per
  /// round, predicted words per rank (A, B, C, total), Theorem 2 bound and ratio, memory
  /// needed vs budget.
  std::string to_string() const;
};

/// The bound on what the busiest rank must receive (pure; see docs/gemm.md for the proof).
/// A rank doing V_j multiply-adds touches projections |A_j|, |B_j|, |C_j| of the iteration
/// space with |A_j||B_j||C_j| >= V_j^2 (Loomis-Whitney, the basis of Theorem 2) and
/// V_j/n <= |A_j| <= mk, V_j/m <= |B_j| <= nk, V_j/k <= |C_j| <= mn. Let f(V) be the least
/// |A|+|B|+|C| under these constraints; f(V)/V does not increase with V. It must receive the
/// inputs it does not hold and send a partial sum for every C entry it does not own at the
/// end, so the total received is at least sum_j f(V_j) - (mk + kn + mn) >= mnk f(V)/V -
/// (mk + kn + mn) for V = max_j V_j, and the busiest rank receives at least 1/p of it:
///   max(0, (mnk f(V)/V - (mk + kn + mn)) / p).
/// With V = mnk/p and the cube inside the matrices this is Theorem 2's 3 (mnk/p)^(2/3) minus
/// the (mk + kn + mn)/p words a rank holds on average.
double recv_lower_bound_words(std::int64_t m, std::int64_t n, std::int64_t k, int p,
                              double max_volume);

/// Most ranks that may idle: floor(delta * p) (with a tiny tolerance for rounding).
int gemm_max_idle(int p, double delta);

/// How make_gemm_plan splits its pricing over the ranks of a communicator (dense::plan_share
/// in multiply.hpp makes one from a Context). With a share the planner is collective over
/// those ranks and returns the same plan on each, the plan it makes alone: rank `index` of
/// `count` prices the search candidates x (in the search's order, after the memory fit) with
/// x % count == index, and in every exact price the ranks r with r % count == index; the
/// results meet in all_reduce. Nothing else differs.
struct PlanShare {
  int index = 0, count = 1;
  /// Combines what two ranks found: `inout` = in (+) inout, associative and commutative.
  using Combine = std::function<void(const unsigned char* in, unsigned char* inout)>;
  /// Collective over the share's ranks: replaces `blob` (the same size on every rank) by the
  /// combination of every rank's blob, the same on every rank.
  std::function<void(std::vector<unsigned char>& blob, const Combine& combine)> all_reduce;
};

/// The plan with the least predicted time on req.machine. Not collective; deterministic.
/// With `share` (count > 1) collective over its ranks, same result (PlanShare).
///
/// Validation: m, n, k >= 0 (DimensionMismatch); p >= 1, 0 <= delta < 1, rounds >= 0,
/// memory_words not NaN (InputError). Any of m, n, k == 0: the trivial plan 1x1x1, 1 round.
///
/// Grid: every (pm, pn, pk) with pm*pn*pk = q for q in [p - gemm_max_idle(p, delta), p], with
/// pm <= m, pn <= n, pk <= k (a dimension of size d cannot use more than d ranks). If no such
/// grid exists (tiny matrices), the window is [qtop - gemm_max_idle(p, delta), qtop] where
/// qtop is the largest q <= p that has one. Grids whose memory does not fit even with one
/// k column per round (or, if rounds are forced, with the forced rounds) are skipped. Chosen:
/// least predicted time (price_gemm_plan, relative ties within 1e-9); ties: fewer words
/// (recv_words()), more ranks used, less compute dm*dn*dk, fewer rounds, then the first in
/// (pm, pn) ascending order. The search's price is exact up to 256 ranks (or when every link
/// is alike), else a lower bound (price_gemm_plan_search); without `caller` the candidates are
/// then priced on every rank in the order of that bound until the next bound exceeds the 8th
/// exact price (at most 64 priced), and ranked by the exact price. With `caller`, the 8 best
/// candidates without redistribution are
/// priced again with the redistribution from and to the caller's layouts, together with the
/// aligned variants (align_gemm_plan) of the best 4 of those and, with req.allow_caller_grid and layouts that
/// allow it, 2D SUMMA on the caller's layouts (caller_grid_plan); the cheapest of all is
/// chosen. A model where flops and latency are free and bandwidth is 1 byte/s
/// (MachineModel words_only) reproduces the words-only planner. One search serves every
/// planner here: candidates, a cost functor, the tie-breaks above.
///
/// Rounds: t_min = the least t in [1, dk] with memory_words_needed(t) <= budget; the default
/// t0 = max(t_min, clamp(dk / 512, 1, 8)), then t_min and t_min * 2^i (up to dk and 256)
/// are priced and the fastest kept (t0 on ties). A forced req.rounds is clamped to
/// [1, max(1, dk)] and used as is.
///
/// Throws GridError if the budget is too small for every candidate grid (the message gives the
/// budget and the least memory needed, in words and MiB of 8-byte words), or for the forced
/// rounds.
GemmPlan make_gemm_plan(const GemmPlanRequest& req, const CallerLayouts* caller = nullptr,
                        const PlanShare* share = nullptr);

/// Not collective, pure. The aligned variant of the grid plan `g` for the caller's layouts:
/// the same grid, rounds and group sizes, but the global indices of m, n and k are dealt to
/// the groups so that ranks keep what they already hold. Per dimension (m, then n, then k,
/// each only when split in more than one group), the common refinement of the two caller
/// partitions of that dimension (A's and C's rows for m, B's and C's columns for n, A's
/// columns and B's rows for k; transposes respected) is cut into segments; a segment given
/// to group g saves, on every rank of g, the elements of A, B and C in it that the rank holds
/// in the caller's layout and will hold in the plan layout (each operand weighted by 1 / the
/// number of ranks that share its plan piece: pn for A, pm for B, pk for C). Pairs (segment,
/// group) are taken by saving per element, best first, each filling what is left of the
/// segment and of the group's size (the balanced split's, so flops stay balanced). A
/// heuristic: the exact redistribution is priced by price_gemm_plan. Dimensions with more
/// than 2^21 segment-rank pairs are left balanced. Returns `g` unchanged (aligned() false)
/// when every split stays the balanced one.
GemmPlan align_gemm_plan(const GemmPlan& g, const CallerLayouts& caller);

/// Not collective, pure. True when 2D SUMMA can run on the caller's layouts as they are:
/// op(A) = A and op(B) = B, A's row partition equal to C's and B's column partition equal to
/// C's, the same rank at each grid position in A, B and C, and C's local storage packed from
/// 0 (not a corner that starts inside a block).
bool summa2d_on_caller_applies(const CallerLayouts& caller);

/// Not collective, pure. The PlanKind::CallerGrid plan (pm x pn = C's process grid, pk = 1,
/// rounds = the k segments of summa_native) for req's shapes, priced on req.machine.
/// Throws InputError when summa2d_on_caller_applies(caller) is false.
GemmPlan caller_grid_plan(const GemmPlanRequest& req, const CallerLayouts& caller);

/// A model where only words count: free flops, zero latency, 1 byte/s links (for tests and
/// for the words-only planner).
MachineModel words_only_machine();

/// The 2D SUMMA baseline: pk = 1, pm*pn = p (all ranks), pm x pn the factorization of p
/// closest to square, in the orientation (pm <= pn or pm >= pn) with less volume (ties:
/// pm <= pn; an orientation whose memory does not fit is skipped; the same search as
/// make_gemm_plan with words as the cost functor). The plan is priced (cost) on req.machine. Rounds = ceil(k / 256)
/// unless forced, at least what memory needs, at most k. Same validation and errors as
/// make_gemm_plan (delta is only recorded).
GemmPlan make_summa_plan(const GemmPlanRequest& req);

namespace detail {
/// Pure. A plan with the request's fields (sizes, p, delta, memory budget, precision,
/// transposes, machine) copied and nothing chosen yet: the start of every candidate.
GemmPlan base_plan(const GemmPlanRequest& req);
}  // namespace detail

}  // namespace tessel::dense

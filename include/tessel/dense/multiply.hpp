#pragma once
/// @file multiply.hpp
/// Distributed dense multiply C = alpha op(A) op(B) + beta C.
#include <string>

#include "tessel/core/context.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/dense/gemm_plan.hpp"

namespace tessel::dense {

/// op(X): as stored, transposed, or conjugate-transposed (C is T for real types).
enum class Op { N, T, C };
/// Multiply strategies. Optimal: the planner's pm x pn x pk plans, in their own layouts or
/// aligned with the caller's (align_gemm_plan), by predicted time. Auto: those and 2D SUMMA on
/// the caller's block-cyclic layouts as they are (PlanKind::CallerGrid, no redistribution),
/// whichever the model predicts fastest. Summa2D: SUMMA on the caller's layouts when they allow
/// it, else the 2D plan (pk = 1).
enum class Algorithm { Auto, Optimal, Summa2D };

Op parse_op(const std::string& s);                ///< "N", "T", "C" (case-insensitive)
Algorithm parse_algorithm(const std::string& s);  ///< "auto", "optimal", "summa2d"
std::string to_string(Op op);
std::string to_string(Algorithm a);

struct MultiplyOptions {
  Algorithm algorithm = Algorithm::Auto;
  double memory_words = 0;  ///< per-rank budget S in elements; <= 0: unlimited
  double delta =
      0.15;  ///< fraction of ranks that may idle to lower the volume (seed 004 §7.1; see GemmPlanRequest)
  int rounds = 0;  ///< 0: automatic; else the number of sequential rounds over k
  /// GemmPlanRequest::choice: 0 the planner's best plan, 1 .. 4 a runner-up instead (to
  /// measure the cost model). Not with Algorithm::Summa2D (InputError).
  int plan_choice = 0;
  /// Plan-then-execute: run this plan (from plan_multiply, for the same m, n, k, rank count,
  /// transposes and element type) instead of planning again. The options that made it
  /// (algorithm, memory, delta, rounds, plan_choice, machine) are then not consulted. A plan
  /// made without the caller's layouts starts from its own layouts (inputs elsewhere are
  /// redistributed into them); this is how `tessel gemm --layout plan --plan-choice K` runs the
  /// K-th plan from that plan's layouts. A plan for another multiply, or a CallerGrid plan on
  /// layouts that do not allow SUMMA on them, is an InputError (on every rank).
  std::optional<GemmPlan> plan;
  bool check_finite = false;  ///< refuse NaN/Inf in A, B (and C when beta != 0)
  /// From this many ranks up, multiply() and plan_multiply(ctx, ...) split the planner's
  /// pricing over the ranks (plan_share): each rank prices 1/p of the candidate grids and of
  /// the ranks in each exact price, and two small reductions (the best 64 candidates, 56 bytes
  /// each; 64 prices) give every rank the plan it would have made alone. Below it each rank
  /// plans alone, without messages. Planning alone takes ~0.3 s per rank at 2,048 ranks and
  /// 2-3 s at 16,384 (36 per node; docs/gemm.md). 1: always split.
  int shared_planning_from = 256;
  /// Prices the candidate plans (gemm_cost.hpp). Default: the documented defaults; the CLI
  /// and the p?gemm_ entry points use resolve_machine_model (--machine, else the Context's
  /// machine file, which they take from TESSEL_MACHINE).
  MachineModel machine;
};

/// What a multiply did: the plan it ran. Traffic is in ctx.ledger(), under phases
/// "gemm/redistribute A|B|C" (layout changes) and "gemm/rounds A|B", "gemm/reduce C" (the plan).
struct MultiplyReport {
  Algorithm algorithm = Algorithm::Optimal;
  GemmPlan plan;
  std::string executed;  ///< what ran, e.g. "optimal (grid 2x2x2)", "optimal (grid 1x1x8, aligned
                         ///< with the caller's layouts)", "summa2d on the caller's layout"
};

/// Predicted words received per rank (max over ranks) of the two ways to run a multiply.
struct PredictedWords {
  double redistribution = 0;  ///< into and out of the plan layouts
  double optimal = 0;         ///< redistribution + the plan's rounds and reduction
  double native = -1;         ///< 2D SUMMA on the caller's layouts (-1: layouts not compatible)
};
/// Pure (no MPI): the plan's words against 2D SUMMA on the caller's layouts, for display
/// (multiply() chooses by predicted time in the planner). For a CallerGrid plan,
/// redistribution is 0 and optimal = native.
PredictedWords predict_words(int p, const GemmPlan& plan, Op opa, Op opb, const layout::Layout& a,
                             const layout::Layout& b, const layout::Layout& c);

/// The plan multiply() would run for these shapes and options, without MPI traffic. Without
/// `caller` the plan is priced without redistribution (inputs already in its layouts); with
/// it (what multiply() does), the redistribution from and to the caller's layouts counts.
GemmPlan plan_multiply(std::int64_t m, std::int64_t n, std::int64_t k, int p,
                       const MultiplyOptions& opt, const CallerLayouts* caller = nullptr,
                       bool complex = false);

/// Not collective to make; its all_reduce is collective over ctx (allreduce_blob on
/// ctx.comm(), recorded in the ledger under the phase "gemm/plan"): the planner's work split
/// over ctx's ranks (PlanShare). It refers to ctx, which must outlive it.
PlanShare plan_share(Context& ctx);

/// Collective over ctx when ctx.size() >= opt.shared_planning_from (then the pricing is
/// split over the ranks, plan_share), else not: the plan plan_multiply(m, n, k, ctx.size(),
/// opt, caller, complex) gives, the same on every rank.
GemmPlan plan_multiply(Context& ctx, std::int64_t m, std::int64_t n, std::int64_t k,
                       const MultiplyOptions& opt, const CallerLayouts* caller = nullptr,
                       bool complex = false);

/// Collective over ctx. C = alpha op(A) op(B) + beta C for any m, n, k >= 0, any layouts of
/// A, B, C over ctx's ranks. With beta == 0, C is not read (NaN in C does not propagate).
/// C may share storage with A or B (the same matrix, or views over one buffer, also in part):
/// a rank whose local storage of C overlaps that of A (or B) copies A (or B) first, so the
/// result is that of distinct operands.
/// Throws (on every rank): DimensionMismatch for inconsistent shapes, LayoutMismatch for
/// layouts of another communicator size, GridError when memory is too small, InputError for
/// NaN/Inf when opt.check_finite.
template <class T>
MultiplyReport multiply(Context& ctx, T alpha, Op opa, const DistMatrix<T>& A, Op opb,
                        const DistMatrix<T>& B, T beta, DistMatrix<T>& C,
                        const MultiplyOptions& opt = {});

}  // namespace tessel::dense

#pragma once
// The executor of a GemmPlan (grid pm x pn x pk, rounds over k): private to the dense layer.
#include "tessel/dense/multiply.hpp"

namespace tessel::dense::detail {

/// Collective. Redistributes A and B into the plan layouts, runs the rounds (gathers of the
/// next round posted before this round's local GEMM), reduce-scatters C over pk and
/// redistributes C into C's layout, where C = result + beta C.
template <class T>
void execute_plan(Context& ctx, const GemmPlan& plan, T alpha, Op opa, const DistMatrix<T>& A,
                  Op opb, const DistMatrix<T>& B, T beta, DistMatrix<T>& C);

}  // namespace tessel::dense::detail

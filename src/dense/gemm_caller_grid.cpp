/// @file gemm_caller_grid.cpp
/// The planner's PlanKind::CallerGrid candidate: 2D SUMMA on the caller's block-cyclic
/// layouts as they are (executed by summa_native.cpp), priced like every other plan.
/// Pure code, no MPI.
#include "summa_native.hpp"
#include "tessel/core/error.hpp"
#include "tessel/dense/gemm_plan.hpp"

namespace tessel::dense {

bool summa2d_on_caller_applies(const CallerLayouts& cl) {
  return !cl.a_transposed && !cl.b_transposed &&
         detail::summa_native_applies(Op::N, Op::N, cl.a, cl.b, cl.c);
}

GemmPlan caller_grid_plan(const GemmPlanRequest& req, const CallerLayouts& cl) {
  TESSEL_CHECK(summa2d_on_caller_applies(cl), InputError,
               "caller_grid_plan: the caller's layouts do not allow 2D SUMMA as they are (need "
               "op N, A's rows and C's rows split alike, B's and C's columns alike, one rank "
               "per grid position)");
  TESSEL_CHECK(cl.c.rows() == req.m && cl.c.cols() == req.n && cl.a.cols() == req.k,
               DimensionMismatch, "caller_grid_plan: C is ", cl.c.rows(), " x ", cl.c.cols(),
               " and A has ", cl.a.cols(), " columns, the request is m = ", req.m, ", n = ", req.n,
               ", k = ", req.k);
  GemmPlan g = detail::base_plan(req);
  g.kind = PlanKind::CallerGrid;
  g.pm = cl.c.row_partition().groups();
  g.pn = cl.c.col_partition().groups();
  g.pk = 1;
  g.split_m = cl.c.row_partition();
  g.split_n = cl.c.col_partition();
  g.rounds = std::max<int>(1, static_cast<int>(detail::summa_native_segments(cl.a, cl.b).size()));
  g.cost = price_gemm_plan(g, req.machine, req.complex, &cl);
  return g;
}

}  // namespace tessel::dense

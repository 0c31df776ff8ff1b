// Public multiply(): validate on every rank, agree, plan, then execute.
#include "tessel/dense/multiply.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <complex>
#include <cstdint>
#include <optional>
#include <utility>

#include "gemm_executor.hpp"
#include "summa_native.hpp"
#include "tessel/comm/blob_reduce.hpp"
#include "tessel/dense/plan_layouts.hpp"
#include "tessel/layout/redistribute.hpp"

namespace tessel::dense {

Op parse_op(const std::string& s) {
  std::string u = s;
  for (auto& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (u == "N") return Op::N;
  if (u == "T") return Op::T;
  if (u == "C") return Op::C;
  throw InputError("op = '" + s + "', expected N, T or C");
}

Algorithm parse_algorithm(const std::string& s) {
  if (s == "auto") return Algorithm::Auto;
  if (s == "optimal") return Algorithm::Optimal;
  if (s == "summa2d") return Algorithm::Summa2D;
  throw InputError("algorithm = '" + s + "', expected auto, optimal or summa2d");
}

std::string to_string(Op op) { return op == Op::N ? "N" : (op == Op::T ? "T" : "C"); }
std::string to_string(Algorithm a) {
  switch (a) {
    case Algorithm::Auto: return "auto";
    case Algorithm::Optimal: return "optimal";
    case Algorithm::Summa2D: return "summa2d";
  }
  return "?";
}

namespace {
GemmPlan plan_request(std::int64_t m, std::int64_t n, std::int64_t k, int p,
                      const MultiplyOptions& opt, const CallerLayouts* caller, bool complex,
                      const PlanShare* share) {
  GemmPlanRequest req;
  req.m = m;
  req.n = n;
  req.k = k;
  req.p = p;
  req.memory_words = opt.memory_words;
  req.delta = opt.delta;
  req.rounds = opt.rounds;
  req.choice = opt.plan_choice;
  req.machine = opt.machine;
  req.complex = complex;
  if (caller != nullptr) {
    req.a_transposed = caller->a_transposed;
    req.b_transposed = caller->b_transposed;
  }
  const bool live = m > 0 && n > 0 && k > 0;
  if (opt.algorithm == Algorithm::Summa2D) {
    TESSEL_CHECK(opt.plan_choice == 0, InputError, "multiply: plan choice ", opt.plan_choice,
                 " with algorithm summa2d: the SUMMA baseline has one plan (expected 0)");
    if (caller != nullptr && live && summa2d_on_caller_applies(*caller))
      return caller_grid_plan(req, *caller);
    return make_summa_plan(req);
  }
  req.allow_caller_grid = opt.algorithm == Algorithm::Auto;
  return make_gemm_plan(req, caller, share);
}
}  // namespace

GemmPlan plan_multiply(std::int64_t m, std::int64_t n, std::int64_t k, int p,
                       const MultiplyOptions& opt, const CallerLayouts* caller, bool complex) {
  return plan_request(m, n, k, p, opt, caller, complex, nullptr);
}

PlanShare plan_share(Context& ctx) {
  PlanShare s;
  s.index = ctx.rank();
  s.count = ctx.size();
  s.all_reduce = [&ctx](std::vector<unsigned char>& blob, const PlanShare::Combine& combine) {
    PhaseScope ph(ctx.ledger(), "gemm/plan");
    comm::allreduce_blob(ctx.comm(), blob, combine);
  };
  return s;
}

GemmPlan plan_multiply(Context& ctx, std::int64_t m, std::int64_t n, std::int64_t k,
                       const MultiplyOptions& opt, const CallerLayouts* caller, bool complex) {
  if (ctx.size() < std::max(2, opt.shared_planning_from))
    return plan_multiply(m, n, k, ctx.size(), opt, caller, complex);
  const PlanShare share = plan_share(ctx);
  return plan_request(m, n, k, ctx.size(), opt, caller, complex, &share);
}

PredictedWords predict_words(int p, const GemmPlan& plan, Op opa, Op opb, const layout::Layout& a,
                             const layout::Layout& b, const layout::Layout& c) {
  PredictedWords w;
  const bool native = detail::summa_native_applies(opa, opb, a, b, c);
  const bool caller_grid = plan.kind == PlanKind::CallerGrid;
  std::optional<PlanLayouts> L;
  if (!caller_grid) L = make_plan_layouts(plan, opa != Op::N, opb != Op::N, p);
  for (int r = 0; r < p; ++r) {
    if (L) {
      auto recv = [r](const layout::Layout& src, const layout::Layout& dst) {
        if (layout::same_storage(src, dst)) return 0.0;  // used in place: nothing moves
        return static_cast<double>(layout::redist_volume(src, dst, r).recv_elems);
      };
      w.redistribution = std::max(w.redistribution, recv(a, L->a) + recv(b, L->b) + recv(L->c, c));
    }
    if (native)
      w.native =
          std::max(w.native, static_cast<double>(detail::summa_native_recv_elems(a, b, c, r)));
  }
  w.optimal = caller_grid ? w.native : w.redistribution + plan.recv_words();
  if (!native) w.native = -1;
  return w;
}

namespace {

template <class T>
bool finite(const T& v) {
  if constexpr (std::is_same_v<T, double>)
    return std::isfinite(v);
  else
    return std::isfinite(v.real()) && std::isfinite(v.imag());
}

// Not collective; the same verdict on every rank (metadata only): MultiplyOptions::plan must
// be a plan of this multiply.
void check_given_plan(const GemmPlan& g, std::int64_t m, std::int64_t n, std::int64_t k, int p,
                      const CallerLayouts& caller, bool complex, bool summa_on_caller) {
  TESSEL_CHECK(g.m == m && g.n == n && g.k == k && g.p == p, InputError,
               "multiply: options.plan is for ", g.m, " x ", g.n, " x ", g.k, " on ", g.p,
               " ranks: expected a plan of this multiply, ", m, " x ", n, " x ", k, " on ", p,
               " ranks (plan_multiply)");
  TESSEL_CHECK(g.a_transposed == caller.a_transposed && g.b_transposed == caller.b_transposed &&
                   g.complex == complex,
               InputError, "multiply: options.plan was made for op(A) ",
               g.a_transposed ? "transposed" : "N", ", op(B) ", g.b_transposed ? "transposed" : "N",
               ", ", g.complex ? "complex" : "real", " elements: expected op(A) ",
               caller.a_transposed ? "transposed" : "N", ", op(B) ",
               caller.b_transposed ? "transposed" : "N", ", ", complex ? "complex" : "real");
  TESSEL_CHECK(g.kind != PlanKind::CallerGrid || summa_on_caller, InputError,
               "multiply: options.plan is 2D SUMMA on the caller's layouts (", g.pm, " x ", g.pn,
               "), which these layouts of A, B and C do not allow: expected a "
               "pm x pn x pk plan, or the layouts the plan was made for");
}

// Collective from opt.shared_planning_from ranks up (plan_multiply(ctx, ...)), the same on
// every rank: opt.plan, checked, else the planner's choice by predicted time among its own
// plans, the plans aligned with the caller's layouts and (auto) 2D SUMMA on the caller's
// layouts as they are.
template <class T>
GemmPlan plan_to_run(Context& ctx, Op opa, const DistMatrix<T>& A, Op opb, const DistMatrix<T>& B,
                     const DistMatrix<T>& C, std::int64_t k, const MultiplyOptions& opt) {
  const CallerLayouts caller{opa != Op::N, opb != Op::N, A.layout(), B.layout(), C.layout()};
  const bool complex = !std::is_same_v<T, double>;
  if (!opt.plan) return plan_multiply(ctx, C.rows(), C.cols(), k, opt, &caller, complex);
  check_given_plan(*opt.plan, C.rows(), C.cols(), k, ctx.size(), caller, complex,
                   detail::summa_native_applies(opa, opb, A.layout(), B.layout(), C.layout()));
  return *opt.plan;
}

// Rank-local: throws InputError naming the first non-finite element of x.
template <class T>
void check_finite(const char* name, const DistMatrix<T>& x) {
  bool bad = false;
  std::int64_t bi = 0, bj = 0;
  const_cast<DistMatrix<T>&>(x).for_each_local([&](std::int64_t i, std::int64_t j, T& v) {
    if (!bad && !finite(v)) {
      bad = true;
      bi = i;
      bj = j;
    }
  });
  TESSEL_CHECK(!bad, InputError, "multiply: ", name, " contains NaN or Inf at (", bi, ", ", bj,
               "); refusing to propagate it");
}

// Rank-local: true when the local storage of x and y (first to last element they address)
// overlaps, e.g. when C is A itself or a view over part of A's buffer.
template <class T>
bool storage_overlaps(const DistMatrix<T>& x, const DistMatrix<T>& y) {
  auto span = [](const DistMatrix<T>& m) -> std::pair<std::uintptr_t, std::uintptr_t> {
    const std::int64_t r = m.local_rows(), c = m.local_cols();
    if (r == 0 || c == 0 || m.data() == nullptr) return {0, 0};
    const auto b = reinterpret_cast<std::uintptr_t>(m.data());
    return {b, b + static_cast<std::uintptr_t>((c - 1) * m.ld() + r) * sizeof(T)};
  };
  const auto a = span(x), b = span(y);
  return a.first < a.second && b.first < b.second && a.first < b.second && b.first < a.second;
}

}  // namespace

template <class T>
MultiplyReport multiply(Context& ctx, T alpha, Op opa, const DistMatrix<T>& A, Op opb,
                        const DistMatrix<T>& B, T beta, DistMatrix<T>& C,
                        const MultiplyOptions& opt) {
  const std::int64_t m = C.rows(), n = C.cols();
  const std::int64_t am = opa == Op::N ? A.rows() : A.cols();
  const std::int64_t ak = opa == Op::N ? A.cols() : A.rows();
  const std::int64_t bk = opb == Op::N ? B.rows() : B.cols();
  const std::int64_t bn = opb == Op::N ? B.cols() : B.rows();
  MultiplyReport rep;
  // Metadata checks: every rank holds the same shapes, so every rank throws together.
  TESSEL_CHECK(ak == bk, DimensionMismatch, "multiply: op(A) is ", am, " x ", ak, " but op(B) is ",
               bk, " x ", bn, ": inner dimensions differ");
  TESSEL_CHECK(am == m && bn == n, DimensionMismatch, "multiply: op(A) op(B) is ", am, " x ", bn,
               " but C is ", m, " x ", n);
  for (const auto* x : {&A.layout(), &B.layout(), &C.layout()})
    TESSEL_CHECK(x->comm_size() == ctx.size(), LayoutMismatch, "multiply: a layout is for ",
                 x->comm_size(), " ranks, the context has ", ctx.size());
  rep.plan = plan_to_run(ctx, opa, A, opb, B, C, ak, opt);
  const bool on_caller = rep.plan.kind == PlanKind::CallerGrid;
  rep.algorithm = on_caller
                      ? Algorithm::Summa2D
                      : (opt.algorithm == Algorithm::Auto ? Algorithm::Optimal : opt.algorithm);
  if (on_caller)
    rep.executed = "summa2d on the caller's layout";
  else
    rep.executed = to_string(rep.algorithm) + " (grid " + std::to_string(rep.plan.pm) + "x" +
                   std::to_string(rep.plan.pn) + "x" + std::to_string(rep.plan.pk) +
                   (rep.plan.aligned() ? ", aligned with the caller's layouts)" : ")");
  if (opt.check_finite) {
    ctx.agree([&] {
      check_finite("A", A);
      check_finite("B", B);
      if (beta != T(0)) check_finite("C", C);
    });
  }
  // C sharing storage with A or B (SUMMA scales C before it reads A and B; the in-place plan
  // path writes C while later rounds still read A): that input is copied first. Rank-local
  // (each rank compares its own storage), no communication, same schedule on every rank.
  DistMatrix<T> a_copy, b_copy;
  const DistMatrix<T>* pa = &A;
  const DistMatrix<T>* pb = &B;
  if (storage_overlaps(A, C)) {
    a_copy = A.clone();
    pa = &a_copy;
  }
  if (storage_overlaps(B, C)) {
    b_copy = B.clone();
    pb = &b_copy;
  }
  if (on_caller)
    detail::summa_native(ctx, alpha, *pa, *pb, beta, C);
  else
    detail::execute_plan(ctx, rep.plan, alpha, opa, *pa, opb, *pb, beta, C);
  return rep;
}

template MultiplyReport multiply<double>(Context&, double, Op, const DistMatrix<double>&, Op,
                                         const DistMatrix<double>&, double, DistMatrix<double>&,
                                         const MultiplyOptions&);
template MultiplyReport multiply<std::complex<double>>(Context&, std::complex<double>, Op,
                                                       const DistMatrix<std::complex<double>>&, Op,
                                                       const DistMatrix<std::complex<double>>&,
                                                       std::complex<double>,
                                                       DistMatrix<std::complex<double>>&,
                                                       const MultiplyOptions&);

}  // namespace tessel::dense

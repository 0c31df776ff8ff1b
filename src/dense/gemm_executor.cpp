// Executor of a GemmPlan. Reads as: redistribute A, B -> rounds (gather A and B panels,
// local GEMM) -> reduce-scatter C over pk -> redistribute C -> C = result + beta C.
#include "gemm_executor.hpp"

#include <algorithm>
#include <complex>
#include <utility>
#include <vector>

#include "local_gemm.hpp"
#include "tessel/core/trace.hpp"
#include "tessel/comm/group_p2p.hpp"
#include "tessel/dense/plan_layouts.hpp"
#include "tessel/layout/redistribute.hpp"

namespace tessel::dense::detail {
namespace {

char op_char(Op op) { return op == Op::N ? 'N' : (op == Op::T ? 'T' : 'C'); }

// The pieces of round r's panel and where this rank's piece sits in its plan-layout storage.
struct RoundPieces {
  comm::Pieces pieces;
  std::int64_t klen = 0;          // k extent of the round
  std::int64_t local_offset = 0;  // k_in_cols: first local column; else first local row
};

RoundPieces round_pieces(const GatherSpec& s, int rounds, int r) {
  RoundPieces rp;
  std::int64_t rb = round_begin(s.k_len, rounds, r);
  rp.klen = round_begin(s.k_len, rounds, r + 1) - rb;
  rp.pieces.offset.resize(static_cast<std::size_t>(s.q));
  rp.pieces.count.resize(static_cast<std::size_t>(s.q));
  for (int g = 0; g < s.q; ++g) {
    if (s.k_in_cols) {  // panel free_len x klen, split by k columns
      std::int64_t b = layout::split_begin(rp.klen, s.q, g),
                   e = layout::split_begin(rp.klen, s.q, g + 1);
      rp.pieces.offset[g] = s.free_len * b;
      rp.pieces.count[g] = s.free_len * (e - b);
    } else {  // panel klen x free_len, split by free columns
      std::int64_t b = layout::split_begin(s.free_len, s.q, g),
                   e = layout::split_begin(s.free_len, s.q, g + 1);
      rp.pieces.offset[g] = rp.klen * b;
      rp.pieces.count[g] = rp.klen * (e - b);
    }
  }
  if (s.k_in_cols) {
    for (int rr = 0; rr < r; ++rr) {
      std::int64_t kl = round_begin(s.k_len, rounds, rr + 1) - round_begin(s.k_len, rounds, rr);
      rp.local_offset +=
          layout::split_begin(kl, s.q, s.me + 1) - layout::split_begin(kl, s.q, s.me);
    }
  } else {
    rp.local_offset = rb;
  }
  return rp;
}

// Copies this rank's piece of round r from its plan-layout storage into the panel.
template <class T>
void place_own_piece(const GatherSpec& s, const RoundPieces& rp, const DistMatrix<T>& X, T* panel) {
  const std::int64_t cnt = rp.pieces.count[s.me];
  if (cnt == 0) return;
  T* dst = panel + rp.pieces.offset[s.me];
  if (s.k_in_cols) {  // local columns [local_offset, +w): contiguous when ld == free_len
    const std::int64_t w = cnt / std::max<std::int64_t>(1, s.free_len);
    for (std::int64_t j = 0; j < w; ++j)
      std::copy_n(X.data() + (rp.local_offset + j) * X.ld(), s.free_len, dst + j * s.free_len);
  } else {  // local rows [local_offset, +klen) of every local column
    const std::int64_t w = cnt / std::max<std::int64_t>(1, rp.klen);
    for (std::int64_t j = 0; j < w; ++j)
      std::copy_n(X.data() + j * X.ld() + rp.local_offset, rp.klen, dst + j * rp.klen);
  }
}

// One operand's double-buffered round gathers.
template <class T>
struct Gatherer {
  Gatherer(const comm::Comm& c, GatherSpec spec, const DistMatrix<T>& X, int rounds, int tag_base,
           ComputeMode mode)
      : c(c), spec(std::move(spec)), X(X), rounds(rounds), tag_base(tag_base), mode(mode) {}

  const comm::Comm& c;
  GatherSpec spec;
  const DistMatrix<T>& X;
  int rounds;
  int tag_base;
  ComputeMode mode;
  Storage<T> buf[2];  // shared simulated memory under ComputeMode::Skip
  comm::RequestSet pending[2];
  RoundPieces rp[2];
  const T* direct[2] = {nullptr, nullptr};  // q == 1: the panel is read in place

  void post(CommLedger& ledger, const char* phase, int r) {
    PhaseScope ph(ledger, phase);
    const int b = r % 2;
    rp[b] = round_pieces(spec, rounds, r);
    if (spec.q == 1) {  // nothing to gather: use the plan-layout storage itself
      direct[b] =
          spec.k_in_cols ? X.data() + rp[b].local_offset * X.ld() : X.data() + rp[b].local_offset;
      return;
    }
    std::int64_t need = spec.free_len * rp[b].klen;
    if (static_cast<std::int64_t>(buf[b].size()) < need)
      buf[b] = Storage<T>(mode, static_cast<std::size_t>(need));
    if (mode == ComputeMode::Run) place_own_piece(spec, rp[b], X, buf[b].data());
    comm::post_allgather(c, spec.members, spec.me, rp[b].pieces, buf[b].data(), tag_base + b,
                         pending[b]);
  }
  const T* wait(int r) {
    pending[r % 2].wait_all();
    return spec.q == 1 ? direct[r % 2] : buf[r % 2].data();
  }
  std::int64_t klen(int r) const { return rp[r % 2].klen; }
  /// Leading dimension of round r's panel.
  std::int64_t ld(int r) const {
    if (spec.q == 1) return X.ld();
    return std::max<std::int64_t>(1, spec.k_in_cols ? spec.free_len : rp[r % 2].klen);
  }
};

// X in the plan layout `to`: a view of X when it already is in it (e.g. on one rank), else
// redistributed.
template <class T>
DistMatrix<T> into_plan(Context& ctx, const DistMatrix<T>& X, const layout::Layout& to,
                        const char* phase) {
  if (layout::same_storage(X.layout(), to))
    return DistMatrix<T>::view(to, ctx.rank(), const_cast<T*>(X.data()), X.ld());
  PhaseScope ph(ctx.ledger(), phase);
  return redistribute(ctx, X, to);
}

// The rounds: round r + 1's panels are gathered while round r's local GEMM runs; the first
// round's GEMM applies beta0 to out (0: out is only written).
template <class T>
void run_rounds(Context& ctx, int rounds, T alpha, Op opa, Gatherer<T>& ga, Op opb, Gatherer<T>& gb,
                T beta0, T* out, std::int64_t ldo) {
  const std::int64_t mi = ga.spec.free_len, nj = gb.spec.free_len;
  ga.post(ctx.ledger(), "rounds A", 0);
  gb.post(ctx.ledger(), "rounds B", 0);
  for (int r = 0; r < rounds; ++r) {
    const T* a = ga.wait(r);
    const T* b = gb.wait(r);
    const std::int64_t kr = ga.klen(r);
    if (r + 1 < rounds) {  // the next round's transfer overlaps this round's GEMM
      ga.post(ctx.ledger(), "rounds A", r + 1);
      gb.post(ctx.ledger(), "rounds B", r + 1);
    }
    auto& na = ga.pending[(r + 1) % 2];
    auto& nb = gb.pending[(r + 1) % 2];
    const std::int64_t lda = ga.ld(r), ldb = gb.ld(r);
    const T beta_r = r > 0 ? T(1) : beta0;
    const KernelSpan kspan(&ctx.ledger(), "local gemm", 2.0 * mi * nj * kr);
    // In column chunks that test the next round's requests in between (MPI progress); one
    // call when nothing is in flight (a chunked GEMM is slower than one large call).
    const bool in_flight = !na.empty() || !nb.empty();
    kernels::gemm<T>(
        ctx.compute(), op_char(opa), op_char(opb), mi, nj, kr, alpha, a, lda, b, ldb, beta_r, out,
        ldo,
        [&] {
          na.test_all();
          nb.test_all();
        },
        in_flight ? kernels::kProgressChunk : 0);
  }
}

// Sums the pk layers' mi x nj partial products; layer l keeps its slice of nj's columns in Cp.
template <class T>
void reduce_c(Context& ctx, const GemmPlan& plan, const PlanCoords& pc, std::int64_t mi,
              std::int64_t nj, T* partial, DistMatrix<T>& Cp) {
  PhaseScope ph(ctx.ledger(), "reduce C");
  comm::Pieces cp;
  std::vector<int> members;
  for (int l = 0; l < plan.pk; ++l) {
    std::int64_t b = layout::split_begin(nj, plan.pk, l),
                 e = layout::split_begin(nj, plan.pk, l + 1);
    cp.offset.push_back(mi * b);
    cp.count.push_back(mi * (e - b));
    members.push_back(plan_rank(plan, pc.i, pc.j, l));
  }
  comm::reduce_scatter(ctx.comm(), members, pc.l, cp, partial, Cp.data(), comm::tag::kGemmReduceC);
}

// An active rank's part of the product: the rounds, then the reduction over pk. Into C itself
// when c_in_place (beta applied by the first round), else into Cp.
template <class T>
void multiply_active(Context& ctx, const GemmPlan& plan, const PlanCoords& pc, T alpha, Op opa,
                     const DistMatrix<T>& Ap, Op opb, const DistMatrix<T>& Bp, T beta,
                     bool c_in_place, DistMatrix<T>& C, DistMatrix<T>& Cp) {
  Gatherer<T> ga(ctx.comm(), gather_spec_a(plan, opa != Op::N, ctx.rank()), Ap, plan.rounds,
                 comm::tag::kGemmRoundsA, ctx.compute());
  Gatherer<T> gb(ctx.comm(), gather_spec_b(plan, opb != Op::N, ctx.rank()), Bp, plan.rounds,
                 comm::tag::kGemmRoundsB, ctx.compute());
  const std::int64_t mi = ga.spec.free_len, nj = gb.spec.free_len;
  // Where the rounds accumulate: C itself (in place), Cp when there is nothing to reduce
  // (pk == 1: Cp's part is the mi x nj panel), else a partial sum for the reduce-scatter.
  // The first round's GEMM writes every element (beta 0, or C's beta), so nothing is zeroed.
  const bool into_cp = !c_in_place && plan.pk == 1 && Cp.ld() == std::max<std::int64_t>(1, mi);
  Storage<T> partial;
  if (!c_in_place && !into_cp)
    partial = Storage<T>(ctx.compute(), static_cast<std::size_t>(mi * nj));
  T* out = c_in_place ? C.data() : (into_cp ? Cp.data() : partial.data());
  const std::int64_t ldo = c_in_place ? C.ld() : std::max<std::int64_t>(1, mi);
  run_rounds(ctx, plan.rounds, alpha, opa, ga, opb, gb, c_in_place ? beta : T(0), out, ldo);
  if (!c_in_place && !into_cp) reduce_c(ctx, plan, pc, mi, nj, partial.data(), Cp);
}

// C = R + beta C over this rank's part of C (beta == 0: C is not read).
template <class T>
void add_into(int rank, const DistMatrix<T>& R, T beta, DistMatrix<T>& C) {
  const bool keep = beta != T(0);
  auto g = C.layout().groups_of(rank);
  if (!g) return;
  for (const auto& cj : C.layout().col_partition().intervals()) {
    if (cj.group != g->second) continue;
    for (const auto& ri : C.layout().row_partition().intervals()) {
      if (ri.group != g->first) continue;
      for (std::int64_t j = 0; j < cj.len; ++j) {
        T* c = C.data() + (cj.local + j) * C.ld() + ri.local;
        const T* r = R.data() + (cj.local + j) * R.ld() + ri.local;
        for (std::int64_t i = 0; i < ri.len; ++i) c[i] = keep ? r[i] + beta * c[i] : r[i];
      }
    }
  }
}

// The product Cp (in the plan's C layout lc) into C: as it is when lc already places every
// element at C's local offsets (Cp keeps its own leading dimension: C may be a corner of a
// larger caller matrix whose local extents exceed Cp's), straight into C's storage when C is
// not read (beta == 0), else redistributed and added.
template <class T>
void deliver_c(Context& ctx, const layout::Layout& lc, DistMatrix<T>& Cp, T beta,
               DistMatrix<T>& C) {
  DistMatrix<T> R;
  if (layout::same_storage(lc, C.layout())) {
    R = std::move(Cp);
  } else if (beta == T(0)) {
    PhaseScope ph(ctx.ledger(), "redistribute C");
    layout::redistribute(ctx.comm(), Cp.layout(), Cp.data(), Cp.ld(), C.layout(), C.data(), C.ld());
    return;
  } else {
    PhaseScope ph(ctx.ledger(), "redistribute C");
    R = redistribute(ctx, Cp, C.layout());
  }
  add_into(ctx.rank(), R, beta, C);
}

}  // namespace

template <class T>
void execute_plan(Context& ctx, const GemmPlan& plan, T alpha, Op opa, const DistMatrix<T>& A,
                  Op opb, const DistMatrix<T>& B, T beta, DistMatrix<T>& C) {
  const PlanLayouts L = make_plan_layouts(plan, opa != Op::N, opb != Op::N, ctx.size());
  PhaseScope gemm_phase(ctx.ledger(), "gemm");
  DistMatrix<T> Ap = into_plan(ctx, A, L.a, "redistribute A");
  DistMatrix<T> Bp = into_plan(ctx, B, L.b, "redistribute B");

  // With pk == 1 and C already in the plan's layout, the rounds accumulate straight into C
  // (beta applied by the first round's GEMM): no reduction, no copy.
  const bool c_in_place = plan.pk == 1 && layout::same_storage(L.c, C.layout());
  const PlanCoords pc = plan_coords(plan, ctx.rank());
  // Cp: the product in the plan's C layout. An active rank writes all of its part (the rounds
  // with pk == 1, else the reduce-scatter), so it is not zeroed first.
  DistMatrix<T> Cp = c_in_place  ? DistMatrix<T>()
                     : pc.active ? DistMatrix<T>::uninitialized(ctx, L.c)
                                 : DistMatrix<T>(ctx, L.c);
  if (pc.active) multiply_active(ctx, plan, pc, alpha, opa, Ap, opb, Bp, beta, c_in_place, C, Cp);
  if (c_in_place) return;
  deliver_c(ctx, L.c, Cp, beta, C);
}

template void execute_plan<double>(Context&, const GemmPlan&, double, Op, const DistMatrix<double>&,
                                   Op, const DistMatrix<double>&, double, DistMatrix<double>&);
template void execute_plan<std::complex<double>>(Context&, const GemmPlan&, std::complex<double>,
                                                 Op, const DistMatrix<std::complex<double>>&, Op,
                                                 const DistMatrix<std::complex<double>>&,
                                                 std::complex<double>,
                                                 DistMatrix<std::complex<double>>&);

}  // namespace tessel::dense::detail

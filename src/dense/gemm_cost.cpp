/// @file gemm_cost.cpp
/// The planner's cost model: per-rank time of a GemmPlan (rounds with double buffering,
/// reduce-scatter, redistribution from and to the caller's layouts). Pure code, no MPI.
#include "tessel/dense/gemm_cost.hpp"

#include <algorithm>
#include <optional>

#include "summa_native.hpp"
#include "tessel/core/error.hpp"
#include "tessel/dense/gemm_plan.hpp"
#include "tessel/dense/plan_layouts.hpp"
#include "tessel/layout/partition.hpp"
#include "tessel/layout/redist_plan.hpp"

namespace tessel::dense {
namespace {

using layout::split_begin;

std::int64_t len(std::int64_t n, int parts, int x) {
  return split_begin(n, parts, x + 1) - split_begin(n, parts, x);
}

// Receive time and words of one gather/reduce group: `piece(g)` words from member g != me.
struct Traffic {
  double words = 0, msgs = 0, bw_s = 0, lat_s = 0;
  void add(const LinkModel& l, double w, double bytes_per_word) {
    if (w <= 0) return;
    words += w;
    msgs += 1;
    bw_s += w * bytes_per_word / l.bandwidth_bps;
    lat_s += l.latency_s;
  }
};

// Pieces g in [a, b) of a balanced split of n into q, and how many of them are the larger
// (n / q + 1, the indices below n % q).
struct PieceCount {
  double all = 0, large = 0;
};
PieceCount pieces_in(std::int64_t n, int q, std::int64_t a, std::int64_t b) {
  PieceCount c;
  if (b <= a) return c;
  c.all = static_cast<double>(b - a);
  c.large = static_cast<double>(std::max<std::int64_t>(0, std::min(b, n % q) - a));
  return c;
}

// One gather (or reduce) group of q ranks base + stride * g, g != me: member g sends
// `other` x len(split, q, g) words to rank base + stride * me. In closed form: the members on
// this rank's node are one contiguous range of g (the group's ranks increase with g), and
// every member of a range outside it reaches this rank over the same link
// (MachineModel::link), so each range is priced through its first member. O(1) per group.
void add_group(Traffic& t, const MachineModel& mm, double bpw, int base, int stride, int q, int me,
               std::int64_t other, std::int64_t split) {
  const std::int64_t lo = split / q;
  const int me_rank = base + stride * me, ns = mm.node_size;
  auto add_range = [&](std::int64_t a, std::int64_t b) {
    const PieceCount c = pieces_in(split, q, a, b);
    const double words = static_cast<double>(other) * (c.all * static_cast<double>(lo) + c.large);
    const double msgs = other > 0 ? (lo > 0 ? c.all : c.large) : 0.0;
    if (words <= 0) return;
    const LinkModel link = mm.link(me_rank, base + stride * static_cast<int>(a));
    t.words += words;
    t.msgs += msgs;
    t.bw_s += words * bpw / link.bandwidth_bps;
    t.lat_s += msgs * link.latency_s;
  };
  // This rank's node: the members g with base + stride g in [first, first + ns), i.e. g in
  // [g0, g1); nodes unknown (ns <= 0): this rank alone.
  std::int64_t g0 = me, g1 = me + 1;
  if (ns > 0) {
    const std::int64_t first = static_cast<std::int64_t>(me_rank / ns) * ns;
    g0 = std::max<std::int64_t>(0, (first - base + stride - 1) / stride);
    g1 = std::min<std::int64_t>(q, (first + ns - base + stride - 1) / stride);
  }
  add_range(0, g0);
  add_range(g0, me);
  add_range(me + 1, g1);
  add_range(g1, q);
}

// One round of the plan with k chunk kr on rank (i, j, l): A and B panel receives. The A panel
// (mi x kr, split over j by its columns: k for N, the free range for T/C) comes from the ranks
// (i, g, l), stride pm; the B panel (kr x nj, split over i) from (g, j, l), stride 1.
Traffic round_traffic(const GemmPlan& p, const MachineModel& mm, double bpw, int i, int j, int l,
                      std::int64_t mi, std::int64_t nj, std::int64_t kr) {
  Traffic t;
  const int a_base = plan_rank(p, i, 0, l), b_base = plan_rank(p, 0, j, l);
  if (p.a_transposed)
    add_group(t, mm, bpw, a_base, p.pm, p.pn, j, kr, mi);
  else
    add_group(t, mm, bpw, a_base, p.pm, p.pn, j, mi, kr);
  if (p.b_transposed)
    add_group(t, mm, bpw, b_base, 1, p.pm, i, nj, kr);
  else
    add_group(t, mm, bpw, b_base, 1, p.pm, i, kr, nj);
  return t;
}

// Seconds a panel of `bytes` takes to reach a rank d hops along a ring, beyond its own
// receive: the d - 1 forwarding hops before it.
double forwarding_hops(int d, const LinkModel& link, double bytes) {
  return d > 1 ? (d - 1) * link.time(bytes, 1) : 0.0;
}

// 2D SUMMA on the caller's layouts (summa_native.cpp): per k segment, the A panel from the
// left neighbour in the process row unless this rank's process column owns it, the B panel
// from the neighbour above unless its process row owns it; the next segment's transfer
// overlaps this segment's GEMM. Forwarding: segment s's panels reach a rank after d - 1
// forwarding hops besides its own receive (d = its ring distance from the segment's owner),
// counted as waiting (latency). The first segment pays them in full (the pipeline fill), later
// ones (1 - overlap) of them: a rank forwards only when it is in MPI, so where nothing
// progresses during a GEMM (overlap 0) every segment waits for its hops. (Paid once, 2048^3
// from 2 x 4 nb 128 on the emulated cluster, 16 segments, ran 1.31x its prediction and lost to
// 2 x 2 x 2.)
GemmCost price_caller_grid_rank(const MachineModel& mm, bool complex, const CallerLayouts& cl,
                                const std::vector<layout::Segment>& segs, int rank) {
  GemmCost c;
  c.rank = rank;
  const auto g = cl.c.groups_of(rank);
  if (!g) return c;
  const double bpw = complex ? 16.0 : 8.0;
  const int myr = g->first, myc = g->second;
  const int pr = cl.c.row_partition().groups(), pcn = cl.c.col_partition().groups();
  const std::int64_t mr = cl.c.row_partition().local_extent(myr);
  const std::int64_t nc = cl.c.col_partition().local_extent(myc);
  const LinkModel left = mm.link(rank, cl.c.owner(myr, (myc + pcn - 1) % pcn)),
                  up = mm.link(rank, cl.c.owner((myr + pr - 1) % pr, myc));
  const double per_madd = complex ? 8.0 : 2.0;
  double prev_comp = 0;
  for (std::size_t s = 0; s < segs.size(); ++s) {
    const std::int64_t a_words = mr * segs[s].len, b_words = segs[s].len * nc;
    Traffic tr;
    if (segs[s].a_group != myc) tr.add(left, static_cast<double>(a_words), bpw);
    if (segs[s].b_group != myr) tr.add(up, static_cast<double>(b_words), bpw);
    const double fl = per_madd * static_cast<double>(mr) * static_cast<double>(nc) * segs[s].len;
    c.rounds_words += tr.words;
    c.messages += tr.msgs;
    c.rounds_bw_s += tr.bw_s;
    c.rounds_lat_s += tr.lat_s;
    const double hops =
        std::max(forwarding_hops((myc - segs[s].a_group + pcn) % pcn, left, bpw * a_words),
                 forwarding_hops((myr - segs[s].b_group + pr) % pr, up, bpw * b_words));
    c.rounds_lat_s += (s == 0 ? 1.0 : 1.0 - mm.overlap) * hops;
    const double comp = mm.gemm_seconds(complex, static_cast<double>(mr), static_cast<double>(nc),
                                        static_cast<double>(segs[s].len));
    c.flops += fl;
    c.compute_s += comp;
    if (s > 0) c.overlap_s -= mm.overlap * std::min(tr.bw_s + tr.lat_s, prev_comp);
    prev_comp = comp;
  }
  return c;
}

GemmCost price_rank(const GemmPlan& p, const MachineModel& mm, bool complex,
                    const CallerLayouts* caller, const PlanLayouts* layouts, int rank) {
  GemmCost c;
  c.rank = rank;
  const double bpw = complex ? 16.0 : 8.0;
  const PlanCoords pc = plan_coords(p, rank);
  if (pc.active && p.m > 0 && p.n > 0 && p.k > 0) {
    const std::int64_t mi = p.piece_m(pc.i), nj = p.piece_n(pc.j), kl = p.piece_k(pc.l);
    const int t = std::max(1, p.rounds);
    const double flops_per_madd = complex ? 8.0 : 2.0;
    // Rounds have one of two lengths (balanced split of kl): price each once.
    const std::int64_t k_lo = kl / t, n_hi = kl % t, n_lo = t - n_hi;
    double hidden = 0;  // each round's transfer behind the GEMM before it: all rounds but the first
    for (int which = 0; which < 2; ++which) {
      const std::int64_t kr = k_lo + which, count = which ? n_hi : n_lo;
      if (count == 0) continue;
      Traffic tr = round_traffic(p, mm, bpw, pc.i, pc.j, pc.l, mi, nj, kr);
      const double fl = flops_per_madd * static_cast<double>(mi) * nj * kr;
      c.rounds_words += count * tr.words;
      c.messages += count * tr.msgs;
      c.rounds_bw_s += count * tr.bw_s;
      c.rounds_lat_s += count * tr.lat_s;
      const double comp = mm.gemm_seconds(complex, static_cast<double>(mi), static_cast<double>(nj),
                                          static_cast<double>(kr));
      c.flops += count * fl;
      c.compute_s += count * comp;
      const double one = std::min(tr.bw_s + tr.lat_s, comp);
      hidden += static_cast<double>(count) * one;
      if (which == (n_hi > 0 ? 1 : 0)) hidden -= one;  // the first round (a longer one) hides none
    }
    c.overlap_s = -mm.overlap * hidden;
    // Reduce-scatter of C over pk: pk - 1 copies of this rank's piece of C[I_i, J_j].
    Traffic red;
    const double piece = static_cast<double>(mi) * len(nj, p.pk, pc.l);
    add_group(red, mm, bpw, plan_rank(p, pc.i, pc.j, 0), p.pm * p.pn, p.pk, pc.l,
              static_cast<std::int64_t>(piece), p.pk);
    c.reduce_words = red.words;
    c.messages += red.msgs;
    c.reduce_bw_s = red.bw_s;
    c.reduce_lat_s = red.lat_s;
  }
  if (caller != nullptr && p.m > 0 && p.n > 0 && p.k > 0) {
    const PlanLayouts L =
        layouts != nullptr ? *layouts
                           : make_plan_layouts(p, caller->a_transposed, caller->b_transposed, p.p);
    Traffic red;
    double passed = 0;  // elements this rank copies locally: kept, packed or unpacked
    auto add = [&](const layout::Layout& src, const layout::Layout& dst) {
      if (layout::same_storage(src, dst)) return;  // used in place (gemm_executor.cpp)
      const layout::RedistPlan rp = layout::make_redist_plan(src, dst, rank);
      for (int s = 0; s < rp.comm_size; ++s)
        red.add(mm.link(rank, s), static_cast<double>(rp.recv_from(s)), bpw);
      passed += static_cast<double>(rp.self_elems() + rp.send_elems() + rp.recv_elems());
    };
    add(caller->a, L.a);
    add(caller->b, L.b);
    add(L.c, caller->c);
    c.redist_words = red.words;
    c.messages += red.msgs;
    c.redist_bw_s = red.bw_s;
    c.redist_lat_s = red.lat_s;
    // Each of those elements is read once and written once (redistribute.cpp: the kept blocks
    // straight into the destination, the sent ones into the send buffer, the received ones out
    // of the receive buffer); the MPI transport's own copies are not counted.
    c.redist_local_s = 2.0 * passed * bpw / mm.mem_bandwidth_bps;
  }
  return c;
}

}  // namespace

GemmCost price_gemm_rank(const GemmPlan& p, const MachineModel& mm, bool complex,
                         const CallerLayouts* caller, int rank) {
  if (p.kind == PlanKind::CallerGrid) {
    TESSEL_CHECK(caller != nullptr, Error,
                 "price_gemm_rank: a CallerGrid plan needs the caller's layouts");
    if (p.m == 0 || p.n == 0 || p.k == 0) return GemmCost{rank};
    return price_caller_grid_rank(mm, complex, *caller,
                                  detail::summa_native_segments(caller->a, caller->b), rank);
  }
  return price_rank(p, mm, complex, caller, nullptr, rank);
}

GemmCost price_gemm_plan(const GemmPlan& p, const MachineModel& mm, bool complex,
                         const CallerLayouts* caller) {
  return price_gemm_plan_ranks(p, mm, complex, caller, 0, 1);
}

GemmCost price_gemm_plan_ranks(const GemmPlan& p, const MachineModel& mm, bool complex,
                               const CallerLayouts* caller, int first, int stride) {
  TESSEL_CHECK(first >= 0 && stride >= 1, Error, "price_gemm_plan_ranks: first = ", first,
               ", stride = ", stride, ": expected first >= 0, stride >= 1");
  // Without redistribution idle ranks cost nothing: look at the ranks the plan uses.
  const int ranks = caller != nullptr ? p.p : std::min(p.p, p.used());
  const bool live = p.m > 0 && p.n > 0 && p.k > 0;
  std::vector<layout::Segment> segs;
  std::optional<PlanLayouts> L;  // built once for every rank
  if (p.kind == PlanKind::CallerGrid) {
    TESSEL_CHECK(caller != nullptr, Error,
                 "price_gemm_plan: a CallerGrid plan needs the caller's layouts");
    if (live) segs = detail::summa_native_segments(caller->a, caller->b);
  } else if (caller != nullptr && live) {
    L = make_plan_layouts(p, caller->a_transposed, caller->b_transposed, p.p);
  }
  auto one = [&](int r) {
    if (p.kind == PlanKind::CallerGrid)
      return live ? price_caller_grid_rank(mm, complex, *caller, segs, r) : GemmCost{r};
    return price_rank(p, mm, complex, caller, L ? &*L : nullptr, r);
  };
  GemmCost best;
  best.rank = -1;
  for (int r = first; r < ranks; r += stride) {
    GemmCost c = one(r);
    if (best.rank < 0 || c.total_s() > best.total_s()) best = c;
  }
  return best;
}

namespace {
// Representative indices of a dimension split q ways: a balanced split of n gives pieces of
// n/q + 1 to the indices below n % q; a rank's costs depend on its index only through such
// "below the remainder" tests, so the start of every interval between the remainders (and 0)
// stands for all the indices in it.
std::vector<int> representatives(int q, const std::vector<std::int64_t>& splits) {
  std::vector<int> r{0};
  for (std::int64_t n : splits) {
    const std::int64_t th = n % q;
    if (th > 0) r.push_back(static_cast<int>(th));
  }
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}
}  // namespace

GemmCost price_gemm_plan_search(const GemmPlan& p, const MachineModel& mm, bool complex) {
  if ((!mm.uniform_link(p.p) && p.p <= 256) || p.aligned() || p.kind != PlanKind::Grid)
    return price_gemm_plan(p, mm, complex, nullptr);
  // The two piece sizes of each split the costs depend on.
  auto both = [](std::int64_t n, int q) { return std::vector<std::int64_t>{n / q, n / q + 1}; };
  std::vector<std::int64_t> mis = both(p.m, p.pm), njs = both(p.n, p.pn), kls = both(p.k, p.pk),
                            krs;
  for (std::int64_t kl : kls)
    for (std::int64_t kr : both(kl, std::max(1, p.rounds))) krs.push_back(kr);
  std::vector<std::int64_t> si{p.m}, sj{p.n}, sl{p.k};
  for (std::int64_t x : njs) {
    si.push_back(x);
    sl.push_back(x);
  }  // B piece over i, C piece over l
  for (std::int64_t x : krs) {
    si.push_back(x);
    sj.push_back(x);
  }                                            // k pieces over i (B^T), j (A)
  for (std::int64_t x : mis) sj.push_back(x);  // A^T piece over j
  const std::vector<int> ri = representatives(p.pm, si), rj = representatives(p.pn, sj),
                         rl = representatives(p.pk, sl);
  GemmCost best;
  bool any = false;
  for (int l : rl)
    for (int j : rj)
      for (int i : ri) {
        GemmCost x = price_rank(p, mm, complex, nullptr, nullptr, plan_rank(p, i, j, l));
        if (!any || x.total_s() > best.total_s()) best = x;
        any = true;
      }
  return best;
}

}  // namespace tessel::dense

/// @file gemm_align.cpp
/// Aligned plans (align_gemm_plan): a grid plan whose splits of m, n and k are dealt to the
/// groups so that ranks keep what the caller's layouts already put on them. Reads as: per
/// dimension, segments of the caller's two partitions of it -> the saving of each (segment,
/// group) pair -> best pairs first, within the balanced group sizes. Pure code, no MPI.
#include <algorithm>
#include <optional>
#include <vector>

#include "tessel/dense/gemm_plan.hpp"
#include "tessel/dense/plan_layouts.hpp"

namespace tessel::dense {
namespace {

using layout::Interval;
using layout::Layout;
using layout::Partition1D;
using layout::Segment;

enum Dim { kM = 0, kN = 1, kK = 2 };

// One operand seen from the plan: its caller layout, the plan dimension of its stored rows and
// of its stored columns, and 1 / the number of plan ranks that share its plan piece.
struct Operand {
  const Layout* lay;
  Dim row_dim, col_dim;
  double weight;
  const Partition1D& part(Dim d) const {
    return d == row_dim ? lay->row_partition() : lay->col_partition();
  }
  // The caller's group of `rank` along dimension d (-1: the rank holds nothing).
  int group(Dim d, int rank) const {
    const auto g = lay->groups_of(rank);
    if (!g) return -1;
    return d == row_dim ? g->first : g->second;
  }
};

int parts(const GemmPlan& g, Dim d) { return d == kM ? g.pm : (d == kN ? g.pn : g.pk); }
Partition1D part(const GemmPlan& g, Dim d) {
  return d == kM ? g.part_m() : (d == kN ? g.part_n() : g.part_k());
}
int coord(const PlanCoords& c, Dim d) { return d == kM ? c.i : (d == kN ? c.j : c.l); }

// cnt[x][c]: elements of plan group x (of plan_part) in the caller's group c (of caller_part).
std::vector<std::vector<double>> overlap_counts(const Partition1D& plan_part,
                                                const Partition1D& caller_part) {
  std::vector<std::vector<double>> cnt(
      static_cast<std::size_t>(plan_part.groups()),
      std::vector<double>(static_cast<std::size_t>(caller_part.groups()), 0.0));
  for (const Segment& s : layout::merge(plan_part, caller_part))
    cnt[static_cast<std::size_t>(s.a_group)][static_cast<std::size_t>(s.b_group)] +=
        static_cast<double>(s.len);
  return cnt;
}

// The aligned split of dimension d of plan g (the other splits as g has them), or nullopt
// when it is the balanced one or too large to search.
std::optional<Partition1D> align_dim(const GemmPlan& g, Dim d, const std::vector<Operand>& ops) {
  const int G = parts(g, d);
  if (G <= 1) return std::nullopt;
  std::vector<const Operand*> use;
  for (const Operand& op : ops)
    if (op.row_dim == d || op.col_dim == d) use.push_back(&op);
  const std::vector<Segment> segs = layout::merge(use[0]->part(d), use[1]->part(d));
  const int used = g.used();
  if (static_cast<double>(segs.size()) * used > static_cast<double>(1 << 21)) return std::nullopt;

  // Per operand and rank: its caller group along d, and what it holds of its plan piece along
  // the other dimension (times the weight): a segment in that caller group given to the
  // rank's group saves len * held per element.
  struct RankTerm {
    int rank_group, caller_group;
    double held;
  };
  std::vector<std::vector<RankTerm>> terms(use.size());
  for (std::size_t o = 0; o < use.size(); ++o) {
    const Operand& op = *use[o];
    const Dim e = op.row_dim == d ? op.col_dim : op.row_dim;
    const auto cnt = overlap_counts(part(g, e), op.part(e));
    for (int r = 0; r < used; ++r) {
      const PlanCoords c = plan_coords(g, r);
      const int cd = op.group(d, r), ce = op.group(e, r);
      if (cd < 0) continue;
      const double held =
          cnt[static_cast<std::size_t>(coord(c, e))][static_cast<std::size_t>(ce)] * op.weight;
      if (held > 0) terms[o].push_back({coord(c, d), cd, held});
    }
  }
  // Saving per element of each (segment, group) pair; best first (ties: segment, group order).
  struct Pair {
    double saving;
    std::size_t s;
    int x;
  };
  std::vector<Pair> pairs;
  pairs.reserve(segs.size() * static_cast<std::size_t>(G));
  std::vector<double> save(static_cast<std::size_t>(G));
  for (std::size_t s = 0; s < segs.size(); ++s) {
    std::fill(save.begin(), save.end(), 0.0);
    for (std::size_t o = 0; o < use.size(); ++o) {
      const int sg = o == 0 ? segs[s].a_group : segs[s].b_group;
      for (const RankTerm& t : terms[o])
        if (t.caller_group == sg) save[static_cast<std::size_t>(t.rank_group)] += t.held;
    }
    for (int x = 0; x < G; ++x) pairs.push_back({save[static_cast<std::size_t>(x)], s, x});
  }
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const Pair& a, const Pair& b) { return a.saving > b.saving; });

  // Deal: each pair takes what is left of its segment and of its group's balanced size.
  const std::int64_t n = use[0]->part(d).extent();
  std::vector<std::int64_t> seg_left(segs.size()), cap(static_cast<std::size_t>(G));
  for (std::size_t s = 0; s < segs.size(); ++s) seg_left[s] = segs[s].len;
  for (int x = 0; x < G; ++x)
    cap[static_cast<std::size_t>(x)] =
        layout::split_begin(n, G, x + 1) - layout::split_begin(n, G, x);
  std::vector<std::vector<std::pair<int, std::int64_t>>> take(segs.size());
  for (const Pair& pr : pairs) {
    const std::int64_t a = std::min(seg_left[pr.s], cap[static_cast<std::size_t>(pr.x)]);
    if (a <= 0) continue;
    take[pr.s].push_back({pr.x, a});
    seg_left[pr.s] -= a;
    cap[static_cast<std::size_t>(pr.x)] -= a;
  }
  // Intervals in global order, each group's storage packed in global order.
  std::vector<Interval> iv;
  std::vector<std::int64_t> local(static_cast<std::size_t>(G), 0);
  for (std::size_t s = 0; s < segs.size(); ++s) {
    std::int64_t b = segs[s].begin;
    for (const auto& [x, a] : take[s]) {
      auto& at = local[static_cast<std::size_t>(x)];
      if (!iv.empty() && iv.back().group == x && iv.back().begin + iv.back().len == b &&
          iv.back().local + iv.back().len == at)
        iv.back().len += a;
      else
        iv.push_back({b, a, x, at});
      at += a;
      b += a;
    }
  }
  Partition1D out(n, G, std::move(iv));
  if (out == Partition1D::even(n, G)) return std::nullopt;
  return out;
}

}  // namespace

GemmPlan align_gemm_plan(const GemmPlan& g, const CallerLayouts& cl) {
  if (g.kind != PlanKind::Grid || g.m == 0 || g.n == 0 || g.k == 0) return g;
  // Stored A is m x k (k x m when transposed), stored B k x n (n x k), C m x n.
  const std::vector<Operand> ops = {
      {&cl.a, cl.a_transposed ? kK : kM, cl.a_transposed ? kM : kK, 1.0 / g.pn},
      {&cl.b, cl.b_transposed ? kN : kK, cl.b_transposed ? kK : kN, 1.0 / g.pm},
      {&cl.c, kM, kN, 1.0 / g.pk}};
  GemmPlan a = g;
  a.split_m = a.split_n = a.split_k = std::nullopt;
  a.runners_up.clear();
  a.split_m = align_dim(a, kM, ops);
  a.split_n = align_dim(a, kN, ops);
  a.split_k = align_dim(a, kK, ops);
  return a;
}

}  // namespace tessel::dense

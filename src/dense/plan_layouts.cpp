#include "tessel/dense/plan_layouts.hpp"

#include <algorithm>

#include "tessel/core/error.hpp"

namespace tessel::dense {
using layout::Interval;
using layout::Layout;
using layout::Partition1D;
using layout::split_begin;

int plan_rank(const GemmPlan& p, int i, int j, int l) { return (l * p.pn + j) * p.pm + i; }

PlanCoords plan_coords(const GemmPlan& p, int rank) {
  PlanCoords c;
  if (rank < 0 || rank >= p.pm * p.pn * p.pk) return c;
  c.active = true;
  c.i = rank % p.pm;
  c.j = (rank / p.pm) % p.pn;
  c.l = rank / (p.pm * p.pn);
  return c;
}

namespace {

// The global runs of each group of `part`, in local order.
std::vector<std::vector<Interval>> runs_by_group(const Partition1D& part) {
  std::vector<std::vector<Interval>> runs(static_cast<std::size_t>(part.groups()));
  for (const Interval& v : part.intervals()) runs[static_cast<std::size_t>(v.group)].push_back(v);
  for (auto& r : runs)
    std::sort(r.begin(), r.end(),
              [](const Interval& a, const Interval& b) { return a.local < b.local; });
  return runs;
}

// Calls f(global begin, len) for the local range [lb, le) of a group with these runs.
template <class F>
void for_local_range(const std::vector<Interval>& runs, std::int64_t lb, std::int64_t le, F&& f) {
  for (const Interval& v : runs) {
    const std::int64_t b = std::max(lb, v.local), e = std::min(le, v.local + v.len);
    if (b < e) f(v.begin + (b - v.local), e - b);
  }
}

Partition1D sorted_partition(std::int64_t n, int groups, std::vector<Interval> iv) {
  std::sort(iv.begin(), iv.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  return Partition1D(n, groups, std::move(iv));
}

// k split into pk groups (kpart); in group l, round r's piece g of q goes to group l*q + g,
// stored after the same group's pieces of earlier rounds.
Partition1D k_round_pieces(const Partition1D& kpart, int rounds, int q) {
  const int pk = kpart.groups();
  const auto runs = runs_by_group(kpart);
  std::vector<Interval> iv;
  std::vector<std::int64_t> local(static_cast<std::size_t>(pk) * q, 0);
  for (int l = 0; l < pk; ++l) {
    const std::int64_t kl = kpart.local_extent(l);
    for (int r = 0; r < rounds; ++r) {
      std::int64_t rb = round_begin(kl, rounds, r), rl = round_begin(kl, rounds, r + 1) - rb;
      for (int g = 0; g < q; ++g) {
        std::int64_t b = split_begin(rl, q, g), e = split_begin(rl, q, g + 1);
        const int grp = l * q + g;
        for_local_range(runs[static_cast<std::size_t>(l)], rb + b, rb + e,
                        [&](std::int64_t gb, std::int64_t len) {
                          iv.push_back({gb, len, grp, local[static_cast<std::size_t>(grp)]});
                          local[static_cast<std::size_t>(grp)] += len;
                        });
      }
    }
  }
  return sorted_partition(kpart.extent(), pk * q, std::move(iv));
}

// Free dimension split into F groups (part), each split into q pieces: piece g of f is group f*q+g.
Partition1D free_pieces(const Partition1D& part, int q) {
  const int F = part.groups();
  const auto runs = runs_by_group(part);
  std::vector<Interval> iv;
  for (int f = 0; f < F; ++f) {
    const std::int64_t fl = part.local_extent(f);
    for (int g = 0; g < q; ++g) {
      std::int64_t b = split_begin(fl, q, g), e = split_begin(fl, q, g + 1), at = 0;
      for_local_range(runs[static_cast<std::size_t>(f)], b, e,
                      [&](std::int64_t gb, std::int64_t len) {
                        iv.push_back({gb, len, f * q + g, at});
                        at += len;
                      });
    }
  }
  return sorted_partition(part.extent(), F * q, std::move(iv));
}

// Layout of one operand. free: extent, F groups (index f); q gather ranks (index g).
// owner(f, g, l) gives the rank.
template <class Owner>
Layout operand_layout(bool k_in_cols, const Partition1D& free_part, const Partition1D& kpart,
                      int rounds, int q, int comm_size, Owner owner) {
  const int F = free_part.groups(), pk = kpart.groups();
  if (k_in_cols) {
    Partition1D cols = k_round_pieces(kpart, rounds, q);
    std::vector<int> own(static_cast<std::size_t>(F) * pk * q);
    for (int f = 0; f < F; ++f)
      for (int l = 0; l < pk; ++l)
        for (int g = 0; g < q; ++g)
          own[static_cast<std::size_t>(f) * pk * q + l * q + g] = owner(f, g, l);
    return Layout(free_part, cols, own, comm_size);
  }
  Partition1D cols = free_pieces(free_part, q);
  std::vector<int> own(static_cast<std::size_t>(pk) * F * q);
  for (int l = 0; l < pk; ++l)
    for (int f = 0; f < F; ++f)
      for (int g = 0; g < q; ++g)
        own[static_cast<std::size_t>(l) * F * q + f * q + g] = owner(f, g, l);
  return Layout(kpart, cols, own, comm_size);
}

}  // namespace

PlanLayouts make_plan_layouts(const GemmPlan& p, bool at, bool bt, int comm_size) {
  TESSEL_CHECK(p.used() <= comm_size, GridError, "plan uses ", p.used(),
               " ranks, communicator has ", comm_size);
  PlanLayouts out;
  const Partition1D pm_part = p.part_m(), pn_part = p.part_n(), pk_part = p.part_k();
  // A: free = m (F = pm, index i), gathered over j (q = pn). k in columns unless transposed.
  out.a = operand_layout(!at, pm_part, pk_part, p.rounds, p.pn, comm_size,
                         [&](int f, int g, int l) { return plan_rank(p, f, g, l); });
  // B: free = n (F = pn, index j), gathered over i (q = pm). k in rows unless transposed.
  out.b = operand_layout(bt, pn_part, pk_part, p.rounds, p.pm, comm_size,
                         [&](int f, int g, int l) { return plan_rank(p, g, f, l); });
  // C: rows I_i; columns J_j split into pk pieces (piece l on rank (i, j, l)).
  Partition1D cols = free_pieces(pn_part, p.pk);
  std::vector<int> own(static_cast<std::size_t>(p.pm) * p.pn * p.pk);
  for (int i = 0; i < p.pm; ++i)
    for (int j = 0; j < p.pn; ++j)
      for (int l = 0; l < p.pk; ++l)
        own[static_cast<std::size_t>(i) * p.pn * p.pk + j * p.pk + l] = plan_rank(p, i, j, l);
  out.c = Layout(pm_part, cols, own, comm_size);
  return out;
}

namespace {
GatherSpec spec(const GemmPlan& p, bool k_in_cols, bool is_a, int rank) {
  PlanCoords c = plan_coords(p, rank);
  TESSEL_CHECK(c.active, Error, "gather_spec: rank ", rank, " is idle in this plan");
  GatherSpec s;
  s.k_in_cols = k_in_cols;
  s.q = is_a ? p.pn : p.pm;
  const int f = is_a ? c.i : c.j;
  const Partition1D free_part = is_a ? p.part_m() : p.part_n(), kpart = p.part_k();
  auto first = [](const Partition1D& part, int g) {
    for (const Interval& v : part.intervals())
      if (v.group == g && v.local == 0) return v.begin;
    return part.extent();
  };
  s.free_begin = first(free_part, f);
  s.free_len = free_part.local_extent(f);
  s.k_begin = first(kpart, c.l);
  s.k_len = kpart.local_extent(c.l);
  s.me = is_a ? c.j : c.i;
  for (int g = 0; g < s.q; ++g)
    s.members.push_back(is_a ? plan_rank(p, c.i, g, c.l) : plan_rank(p, g, c.j, c.l));
  return s;
}
}  // namespace

GatherSpec gather_spec_a(const GemmPlan& p, bool at, int rank) { return spec(p, !at, true, rank); }
GatherSpec gather_spec_b(const GemmPlan& p, bool bt, int rank) { return spec(p, bt, false, rank); }

}  // namespace tessel::dense

#include "tessel/dense/plan_layouts.hpp"

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

// Free dimension split into F groups (group f = piece f).
Partition1D free_split(std::int64_t n, int parts) { return Partition1D::even(n, parts); }

// k split into pk groups; in group l, round r's piece g of q goes to group l*q + g, stored
// after the same group's pieces of earlier rounds.
Partition1D k_round_pieces(std::int64_t k, int pk, int rounds, int q) {
  std::vector<Interval> iv;
  std::vector<std::int64_t> local(static_cast<std::size_t>(pk) * q, 0);
  for (int l = 0; l < pk; ++l) {
    std::int64_t kb = split_begin(k, pk, l), kl = split_begin(k, pk, l + 1) - kb;
    for (int r = 0; r < rounds; ++r) {
      std::int64_t rb = round_begin(kl, rounds, r), rl = round_begin(kl, rounds, r + 1) - rb;
      for (int g = 0; g < q; ++g) {
        std::int64_t b = split_begin(rl, q, g), e = split_begin(rl, q, g + 1);
        if (e == b) continue;
        int grp = l * q + g;
        iv.push_back({kb + rb + b, e - b, grp, local[static_cast<std::size_t>(grp)]});
        local[static_cast<std::size_t>(grp)] += e - b;
      }
    }
  }
  return Partition1D(k, pk * q, std::move(iv));
}

// Free dimension split into F groups, each split into q pieces: piece g of f is group f*q+g.
Partition1D free_pieces(std::int64_t n, int F, int q) {
  std::vector<Interval> iv;
  for (int f = 0; f < F; ++f) {
    std::int64_t fb = split_begin(n, F, f), fl = split_begin(n, F, f + 1) - fb;
    for (int g = 0; g < q; ++g) {
      std::int64_t b = split_begin(fl, q, g), e = split_begin(fl, q, g + 1);
      if (e > b) iv.push_back({fb + b, e - b, f * q + g, 0});
    }
  }
  return Partition1D(n, F * q, std::move(iv));
}

// Layout of one operand. free: extent, F groups (index f); q gather ranks (index g).
// owner(f, g, l) gives the rank.
template <class Owner>
Layout operand_layout(bool k_in_cols, std::int64_t free_n, int F, std::int64_t k, int pk,
                      int rounds, int q, int comm_size, Owner owner) {
  if (k_in_cols) {
    Partition1D rows = free_split(free_n, F);
    Partition1D cols = k_round_pieces(k, pk, rounds, q);
    std::vector<int> own(static_cast<std::size_t>(F) * pk * q);
    for (int f = 0; f < F; ++f)
      for (int l = 0; l < pk; ++l)
        for (int g = 0; g < q; ++g) own[static_cast<std::size_t>(f) * pk * q + l * q + g] = owner(f, g, l);
    return Layout(rows, cols, own, comm_size);
  }
  Partition1D rows = Partition1D::even(k, pk);
  Partition1D cols = free_pieces(free_n, F, q);
  std::vector<int> own(static_cast<std::size_t>(pk) * F * q);
  for (int l = 0; l < pk; ++l)
    for (int f = 0; f < F; ++f)
      for (int g = 0; g < q; ++g) own[static_cast<std::size_t>(l) * F * q + f * q + g] = owner(f, g, l);
  return Layout(rows, cols, own, comm_size);
}

}  // namespace

PlanLayouts make_plan_layouts(const GemmPlan& p, bool at, bool bt, int comm_size) {
  TESSEL_CHECK(p.used() <= comm_size, GridError, "plan uses ", p.used(), " ranks, communicator has ",
               comm_size);
  PlanLayouts out;
  // A: free = m (F = pm, index i), gathered over j (q = pn). k in columns unless transposed.
  out.a = operand_layout(!at, p.m, p.pm, p.k, p.pk, p.rounds, p.pn, comm_size,
                         [&](int f, int g, int l) { return plan_rank(p, f, g, l); });
  // B: free = n (F = pn, index j), gathered over i (q = pm). k in rows unless transposed.
  out.b = operand_layout(bt, p.n, p.pn, p.k, p.pk, p.rounds, p.pm, comm_size,
                         [&](int f, int g, int l) { return plan_rank(p, g, f, l); });
  // C: rows I_i; columns J_j split into pk pieces (piece l on rank (i, j, l)).
  Partition1D rows = Partition1D::even(p.m, p.pm);
  Partition1D cols = free_pieces(p.n, p.pn, p.pk);
  std::vector<int> own(static_cast<std::size_t>(p.pm) * p.pn * p.pk);
  for (int i = 0; i < p.pm; ++i)
    for (int j = 0; j < p.pn; ++j)
      for (int l = 0; l < p.pk; ++l)
        own[static_cast<std::size_t>(i) * p.pn * p.pk + j * p.pk + l] = plan_rank(p, i, j, l);
  out.c = Layout(rows, cols, own, comm_size);
  return out;
}

namespace {
GatherSpec spec(const GemmPlan& p, bool k_in_cols, bool is_a, int rank) {
  PlanCoords c = plan_coords(p, rank);
  TESSEL_CHECK(c.active, Error, "gather_spec: rank ", rank, " is idle in this plan");
  GatherSpec s;
  s.k_in_cols = k_in_cols;
  s.q = is_a ? p.pn : p.pm;
  const int f = is_a ? c.i : c.j, F = is_a ? p.pm : p.pn;
  const std::int64_t n = is_a ? p.m : p.n;
  s.free_begin = split_begin(n, F, f);
  s.free_len = split_begin(n, F, f + 1) - s.free_begin;
  s.k_begin = split_begin(p.k, p.pk, c.l);
  s.k_len = split_begin(p.k, p.pk, c.l + 1) - s.k_begin;
  s.me = is_a ? c.j : c.i;
  for (int g = 0; g < s.q; ++g)
    s.members.push_back(is_a ? plan_rank(p, c.i, g, c.l) : plan_rank(p, g, c.j, c.l));
  return s;
}
}  // namespace

GatherSpec gather_spec_a(const GemmPlan& p, bool at, int rank) { return spec(p, !at, true, rank); }
GatherSpec gather_spec_b(const GemmPlan& p, bool bt, int rank) { return spec(p, bt, false, rank); }

}  // namespace tessel::dense

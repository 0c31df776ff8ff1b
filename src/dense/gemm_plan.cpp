/// @file gemm_plan.cpp
/// The multiply planner: grid fitting with idle ranks, rounds under a memory budget, predicted
/// volume and the Theorem 2 bound (COSMA §6.3, §7.1–7.3). Pure code, no MPI.
#include "tessel/dense/gemm_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "plan_share.hpp"
#include "tessel/core/error.hpp"
#include "tessel/layout/grid_shape.hpp"
#include "tessel/layout/partition.hpp"

namespace tessel::dense {

namespace {

using detail::compute_volume;
using detail::same_time;

/// The largest piece of a balanced split of n into `parts` (= ceil(n / parts)).
std::int64_t max_piece(std::int64_t n, int parts) {
  if (parts <= 1) return n;
  return layout::split_begin(n, parts, 1) - layout::split_begin(n, parts, 0);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

bool unlimited(double budget) { return !(budget > 0); }

bool fits(double needed, double budget) { return unlimited(budget) || needed <= budget; }

double mib(double words) { return words * 8.0 / (1024.0 * 1024.0); }

std::string words_str(double w) { return fmt::format("{:.0f}", w); }

std::string budget_str(double budget) {
  if (unlimited(budget)) return "unlimited";
  return fmt::format("{} words ({:.4g} MiB)", budget, mib(budget));
}

void validate(const GemmPlanRequest& req) {
  TESSEL_CHECK(req.m >= 0, DimensionMismatch, "multiply: m = ", req.m, " must be >= 0");
  TESSEL_CHECK(req.n >= 0, DimensionMismatch, "multiply: n = ", req.n, " must be >= 0");
  TESSEL_CHECK(req.k >= 0, DimensionMismatch, "multiply: k = ", req.k, " must be >= 0");
  TESSEL_CHECK(req.p >= 1, InputError, "multiply: p = ", req.p, " ranks; need at least 1");
  TESSEL_CHECK(req.delta >= 0 && req.delta < 1, InputError, "multiply: delta = ", req.delta,
               " must be in [0, 1)");
  TESSEL_CHECK(req.rounds >= 0, InputError, "multiply: rounds = ", req.rounds,
               " must be >= 0 (0 = automatic)");
  TESSEL_CHECK(req.choice >= 0 && req.choice <= 4, InputError, "multiply: plan choice ", req.choice,
               ": expected 0 (the best plan) .. 4 (the fourth runner-up)");
  TESSEL_CHECK(!std::isnan(req.memory_words), InputError,
               "multiply: memory budget is NaN (use <= 0 for unlimited)");
}

/// The least t in [1, max(1, dk)] whose memory fits the budget; nullopt if none does.
std::optional<int> min_rounds(const GemmPlan& g) {
  if (unlimited(g.memory_words)) return 1;
  std::int64_t dk = std::max<std::int64_t>(1, g.dom_k());
  int hi = static_cast<int>(std::min<std::int64_t>(dk, std::numeric_limits<int>::max()));
  if (!fits(g.memory_words_needed(hi), g.memory_words)) return std::nullopt;
  int lo = 1;  // memory is non-increasing in t: binary search the first fitting t
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (fits(g.memory_words_needed(mid), g.memory_words))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

int clamp_rounds(std::int64_t want, std::int64_t dk) {
  std::int64_t hi = std::max<std::int64_t>(1, dk);
  hi = std::min<std::int64_t>(hi, std::numeric_limits<int>::max());
  return static_cast<int>(std::clamp<std::int64_t>(want, 1, hi));
}

/// The rounds to use on grid g: forced (clamped), or max(t_min, overlap rounds). nullopt if
/// the memory does not fit.
std::optional<int> choose_rounds(const GemmPlan& g, int forced, std::int64_t auto_rounds) {
  if (forced > 0) {
    int t = clamp_rounds(forced, g.dom_k());
    if (!fits(g.memory_words_needed(t), g.memory_words)) return std::nullopt;
    return t;
  }
  auto tmin = min_rounds(g);
  if (!tmin) return std::nullopt;
  return std::max(*tmin, clamp_rounds(auto_rounds, g.dom_k()));
}

/// a strictly better than b: less volume, more ranks, less compute, fewer rounds.
bool better(const GemmPlan& a, const GemmPlan& b) {
  return detail::key_better(detail::key_of(a), detail::key_of(b));
}

/// The divisors of q, ascending.
std::vector<int> divisors(int q) {
  std::vector<int> lo, hi;
  for (int d = 1; static_cast<std::int64_t>(d) * d <= q; ++d) {
    if (q % d != 0) continue;
    lo.push_back(d);
    if (d != q / d) hi.push_back(q / d);
  }
  lo.insert(lo.end(), hi.rbegin(), hi.rend());
  return lo;
}

/// Every (pm, pn, pk) with product q and pm <= m, pn <= n, pk <= k, (pm, pn) ascending.
template <class F>
void for_each_grid(int q, std::int64_t m, std::int64_t n, std::int64_t k, F&& f) {
  const std::vector<int> divs = divisors(q);
  for (int pm : divs) {
    if (pm > m) break;
    int r = q / pm;
    for (int pn : divs) {
      if (pn > r || pn > n) break;
      if (r % pn != 0) continue;
      int pk = r / pn;
      if (pk > k) continue;
      f(pm, pn, pk);
    }
  }
}

bool has_grid(int q, std::int64_t m, std::int64_t n, std::int64_t k) {
  bool any = false;
  for_each_grid(q, m, n, k, [&](int, int, int) { any = true; });
  return any;
}

[[noreturn]] void throw_too_small(const GemmPlanRequest& req, double least) {
  throw GridError(fmt::format(
      "multiply: memory budget {} per rank is too small for any plan of {} x {} x {} on {} "
      "ranks: at least {} words ({:.4g} MiB) needed",
      budget_str(req.memory_words), req.m, req.n, req.k, req.p, words_str(least), mib(least)));
}

[[noreturn]] void throw_forced(const GemmPlanRequest& req, double least) {
  throw GridError(fmt::format(
      "multiply: memory budget {} per rank is too small for {} x {} x {} on {} ranks with "
      "rounds = {}: at least {} words ({:.4g} MiB) needed; use more rounds or rounds = 0 "
      "(automatic)",
      budget_str(req.memory_words), req.m, req.n, req.k, req.p, req.rounds, words_str(least),
      mib(least)));
}

}  // namespace

GemmPlan detail::base_plan(const GemmPlanRequest& req) {
  GemmPlan g;
  g.m = req.m;
  g.n = req.n;
  g.k = req.k;
  g.p = req.p;
  g.delta = req.delta;
  g.memory_words = req.memory_words;
  g.complex = req.complex;
  g.a_transposed = req.a_transposed;
  g.b_transposed = req.b_transposed;
  g.machine = req.machine;
  return g;
}

// ---- GemmPlan ------------------------------------------------------------------------------

namespace {
std::int64_t largest_group(const layout::Partition1D& part) {
  std::int64_t x = 0;
  for (int g = 0; g < part.groups(); ++g) x = std::max(x, part.local_extent(g));
  return x;
}
std::int64_t piece_of(const std::optional<layout::Partition1D>& split, std::int64_t n, int parts,
                      int x) {
  if (split) return split->local_extent(x);
  return layout::split_begin(n, parts, x + 1) - layout::split_begin(n, parts, x);
}
}  // namespace

std::int64_t GemmPlan::dom_m() const {
  return split_m ? largest_group(*split_m) : max_piece(m, pm);
}
std::int64_t GemmPlan::dom_n() const {
  return split_n ? largest_group(*split_n) : max_piece(n, pn);
}
std::int64_t GemmPlan::dom_k() const {
  return split_k ? largest_group(*split_k) : max_piece(k, pk);
}

layout::Partition1D GemmPlan::part_m() const {
  return split_m ? *split_m : layout::Partition1D::even(m, pm);
}
layout::Partition1D GemmPlan::part_n() const {
  return split_n ? *split_n : layout::Partition1D::even(n, pn);
}
layout::Partition1D GemmPlan::part_k() const {
  return split_k ? *split_k : layout::Partition1D::even(k, pk);
}
std::int64_t GemmPlan::piece_m(int i) const { return piece_of(split_m, m, pm, i); }
std::int64_t GemmPlan::piece_n(int j) const { return piece_of(split_n, n, pn, j); }
std::int64_t GemmPlan::piece_k(int l) const { return piece_of(split_k, k, pk, l); }

std::int64_t GemmPlan::k_per_round(int t) const {
  if (t <= 0) t = rounds;
  return max_piece(dom_k(), std::max(1, t));
}

double GemmPlan::recv_words_a() const {
  return static_cast<double>(dom_m()) * static_cast<double>(dom_k()) * (pn - 1) / pn;
}
double GemmPlan::recv_words_b() const {
  return static_cast<double>(dom_k()) * static_cast<double>(dom_n()) * (pm - 1) / pm;
}
double GemmPlan::recv_words_c() const {
  return static_cast<double>(dom_m()) * static_cast<double>(dom_n()) * (pk - 1) / pk;
}
double GemmPlan::recv_words() const { return recv_words_a() + recv_words_b() + recv_words_c(); }

GemmMemory GemmPlan::memory(int t) const {
  const std::int64_t dm = dom_m(), dn = dom_n(), dk = dom_k(), kr = k_per_round(t);
  GemmMemory mem;
  if (kind == PlanKind::CallerGrid) {  // A, B and C stay in the caller's storage: the panels
    mem.a_rounds = 2.0 * static_cast<double>(dm * kr);
    mem.b_rounds = 2.0 * static_cast<double>(kr * dn);
    return mem;
  }
  mem.c_partial = static_cast<double>(dm * dn);
  mem.a_piece = static_cast<double>(ceil_div(dm * dk, pn));
  mem.b_piece = static_cast<double>(ceil_div(dk * dn, pm));
  mem.a_rounds = 2.0 * static_cast<double>(dm * kr);
  mem.b_rounds = 2.0 * static_cast<double>(kr * dn);
  mem.c_out = static_cast<double>(dm * ceil_div(dn, pk));
  mem.c_recv = static_cast<double>(dm * dn);
  return mem;
}

double GemmPlan::memory_words_needed() const { return memory(rounds).total(); }
double GemmPlan::memory_words_needed(int t) const { return memory(t).total(); }

double GemmPlan::bound_words() const {
  double mnk = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  double cubic = 3.0 * std::cbrt((mnk / p) * (mnk / p));
  if (unlimited(memory_words) || std::isinf(memory_words)) return cubic;
  double limited = 2.0 * mnk / (p * std::sqrt(memory_words)) + memory_words;
  return std::min(limited, cubic);
}

double GemmPlan::bound_words_eq4() const {
  double x = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / p;
  double a = std::cbrt(x);
  if (!unlimited(memory_words) && !std::isinf(memory_words))
    a = std::min(a, std::sqrt(memory_words));
  return a > 0 ? 2.0 * x / a + a * a : 0.0;
}

double recv_lower_bound_words(std::int64_t m, std::int64_t n, std::int64_t k, int p, double v) {
  const double M = static_cast<double>(m), N = static_cast<double>(n), K = static_cast<double>(k);
  if (!(v > 0) || p < 1) return 0.0;
  const double lo[3] = {v / N, v / M, v / K}, hi[3] = {M * K, N * K, M * N};
  const double need = v * v;  // |A||B||C| >= V^2
  // f(V): each variable at its lower bound, its upper bound, or free; free ones are equal
  // (KKT of min sum x_i s.t. prod x_i >= V^2 in a box). 27 cases.
  double f = std::numeric_limits<double>::infinity();
  for (int code = 0; code < 27; ++code) {
    int st[3] = {code % 3, (code / 3) % 3, code / 9};  // 0 lower, 1 upper, 2 free
    double fixed_prod = 1, fixed_sum = 0;
    int nfree = 0;
    for (int x = 0; x < 3; ++x) {
      if (st[x] == 2) {
        ++nfree;
        continue;
      }
      const double val = st[x] == 0 ? lo[x] : hi[x];
      fixed_prod *= val;
      fixed_sum += val;
    }
    if (nfree == 0) {
      if (fixed_prod >= need * (1 - 1e-12)) f = std::min(f, fixed_sum);
      continue;
    }
    const double t = std::pow(need / fixed_prod, 1.0 / nfree);
    bool ok = true;
    for (int x = 0; x < 3; ++x)
      if (st[x] == 2 && (t < lo[x] * (1 - 1e-12) || t > hi[x] * (1 + 1e-12))) ok = false;
    if (ok) f = std::min(f, fixed_sum + nfree * t);
  }
  if (!std::isfinite(f)) return 0.0;
  const double total = M * N * K * f / v - (M * K + K * N + M * N);
  return std::max(0.0, total / p);
}

double GemmPlan::recv_bound_words() const {
  return recv_lower_bound_words(m, n, k, p, compute_volume(*this));
}

namespace {
std::string ms(double s) { return fmt::format("{:.3f} ms", s * 1e3); }

std::string cost_parts(const GemmCost& c) {
  return fmt::format(
      "compute {}, rounds transfer {} + latency {}, overlap {}, reduce {} + {}, "
      "redistribution {} + {} + local copies {}",
      ms(c.compute_s), ms(c.rounds_bw_s), ms(c.rounds_lat_s), ms(c.overlap_s), ms(c.reduce_bw_s),
      ms(c.reduce_lat_s), ms(c.redist_bw_s), ms(c.redist_lat_s), ms(c.redist_local_s));
}
}  // namespace

std::string GemmPlan::to_string() const {
  std::string s;
  auto line = [&s](const std::string& l) { s += l + "\n"; };
  line(fmt::format("multiply plan: C ({} x {}) = A ({} x {}) * B ({} x {}) on {} ranks", m, n, m, k,
                   k, n, p));
  int max_idle = gemm_max_idle(p, delta);
  std::string idle_txt =
      idle() == 0 ? std::string("no rank idle") : fmt::format("{} of {} ranks idle", idle(), p);
  line(
      fmt::format("  grid pm x pn x pk = {} x {} x {}: {} ranks used, {} (delta {} allows up "
                  "to {})",
                  pm, pn, pk, used(), idle_txt, delta, max_idle));
  if (kind == PlanKind::CallerGrid)
    line(
        fmt::format("  2D SUMMA on the caller's layouts as they are ({} x {} process grid, {} k "
                    "segments): no redistribution; A panels travel along process rows, B "
                    "panels along process columns",
                    pm, pn, rounds));
  else if (aligned())
    line(
        fmt::format("  aligned with the caller's layouts: the splits of {}{}{}follow where A, B "
                    "and C already are (align_gemm_plan)",
                    split_m ? "m " : "", split_n ? "n " : "", split_k ? "k " : ""));
  line(
      fmt::format("  local domain (largest) dm x dn x dk = {} x {} x {} ({:.4g} multiply-adds "
                  "per rank)",
                  dom_m(), dom_n(), dom_k(), compute_volume(*this)));
  line(fmt::format("  rounds over k: {}, k per round <= {}", rounds, k_per_round()));
  double total = recv_words();
  line(
      fmt::format("  predicted words received per rank: A {}, B {}, C {}, total {} "
                  "({:.4g} MiB)",
                  words_str(recv_words_a()), words_str(recv_words_b()), words_str(recv_words_c()),
                  words_str(total), mib(total)));
  double bound = recv_bound_words();
  std::string ratio = bound > 0 ? fmt::format("{:.3f}", total / bound) : std::string("n/a");
  line(
      fmt::format("  lower bound on words the busiest rank must receive (any schedule with at "
                  "most {:.4g} multiply-adds per rank, from layouts that hold each element "
                  "once): {} words; predicted / bound = {}",
                  compute_volume(*this), words_str(bound), ratio));
  line(fmt::format("  {}", describe(machine)));
  line(fmt::format("  predicted time of the busiest rank (rank {}): {} = {}", cost.rank,
                   ms(cost.total_s()), cost_parts(cost)));
  line(fmt::format(
      "  predicted words received by the busiest rank: {} (plan {}, "
      "redistribution {})",
      words_str(cost.words()), words_str(cost.plan_words()), words_str(cost.redist_words)));
  if (choice > 0)
    line(
        fmt::format("  plan choice {}: the candidate the model ranks {} (the ones below exclude "
                    "it; the first of them is the model's best)",
                    choice, choice + 1));
  for (const auto& r : runners_up)
    line(
        fmt::format("    runner-up {} x {} x {}{}, {} rounds: {} ({} words) = {}", r.pm, r.pn, r.pk,
                    r.kind == PlanKind::CallerGrid ? " (2D SUMMA on the caller's layouts)"
                    : r.aligned                    ? " (aligned)"
                                                   : "",
                    r.rounds, ms(r.cost.total_s()), words_str(r.cost.words()), cost_parts(r.cost)));
  GemmMemory mem = memory();
  line(fmt::format("  memory per rank: {} words ({:.4g} MiB) needed, budget {}",
                   words_str(mem.total()), mib(mem.total()), budget_str(memory_words)));
  line(
      fmt::format("    C partial {}, A piece {}, B piece {}, A round buffers {}, B round "
                  "buffers {}, C reduce-scatter out {}, C reduce-scatter recv {}",
                  words_str(mem.c_partial), words_str(mem.a_piece), words_str(mem.b_piece),
                  words_str(mem.a_rounds), words_str(mem.b_rounds), words_str(mem.c_out),
                  words_str(mem.c_recv)));
  return s;
}

// ---- planners ------------------------------------------------------------------------------

int gemm_max_idle(int p, double delta) {
  if (p < 1 || !(delta > 0)) return 0;
  int idle = static_cast<int>(std::floor(delta * p + 1e-9));
  return std::clamp(idle, 0, p - 1);
}

namespace {
// Sets the rounds of candidate grids and remembers the least memory any candidate needed, for
// the error when none fits. Shared by both planners.
struct RoundsFit {
  const GemmPlanRequest& req;
  double least_any = std::numeric_limits<double>::infinity();     // t = dk, any grid
  double least_forced = std::numeric_limits<double>::infinity();  // forced rounds

  // Sets g.rounds (forced, or at least `overlap_rounds` and what memory needs); false when the
  // grid does not fit the budget.
  bool rounds(GemmPlan& g, std::int64_t overlap_rounds) {
    const std::int64_t dk = g.dom_k();
    least_any = std::min(least_any, g.memory_words_needed(clamp_rounds(dk, dk)));
    if (req.rounds > 0)
      least_forced = std::min(least_forced, g.memory_words_needed(clamp_rounds(req.rounds, dk)));
    auto t = choose_rounds(g, req.rounds, overlap_rounds);
    if (!t) return false;
    g.rounds = *t;
    return true;
  }
  [[noreturn]] void throw_no_plan() const {
    if (!fits(least_any, req.memory_words)) throw_too_small(req, least_any);
    throw_forced(req, least_forced);
  }
};
}  // namespace

namespace {

/// a strictly better than b by predicted time, then by better().
bool faster(const GemmPlan& a, const GemmPlan& b) {
  return detail::key_faster(detail::key_of(a), detail::key_of(b));
}

/// Prices g (without redistribution) at its rounds; then, unless rounds are forced, t_min alone
/// when the rounds gather nothing, else t_min and t_min * 2^i (<= dk, <= 256), keeping the
/// fastest (the default rounds on ties).
void price_rounds(GemmPlan& g, const GemmPlanRequest& req) {
  g.cost = price_gemm_plan_search(g, req.machine, req.complex);
  if (req.rounds > 0) return;
  auto tmin = min_rounds(g);
  if (!tmin) return;
  if (g.cost.rounds_words == 0 && g.rounds != *tmin) {
    // Nothing is gathered in the rounds (one rank, or pm = pn = 1): there is no transfer to
    // hide, and every extra round is one more pass over C. As few as the memory allows.
    g.rounds = *tmin;
    g.cost = price_gemm_plan_search(g, req.machine, req.complex);
    return;
  }
  // The other rounds are compared on the busiest rank of the default rounds (the rounds change
  // a rank's time, hardly which rank is busiest); the winner is priced in full.
  const int busiest = g.cost.rank;
  double best_t = g.cost.total_s();
  int best_rounds = g.rounds;
  const std::int64_t dk = std::max<std::int64_t>(1, g.dom_k());
  for (std::int64_t t = *tmin; t <= dk && t <= std::max(256, *tmin); t *= 2) {
    if (t == g.rounds) continue;
    GemmPlan h = g;
    h.rounds = static_cast<int>(t);
    const double ht = price_gemm_rank(h, req.machine, req.complex, nullptr, busiest).total_s();
    if (!same_time(ht, best_t) && ht < best_t) {
      best_t = ht;
      best_rounds = h.rounds;
    }
  }
  if (best_rounds != g.rounds) {  // keep it only if the full pricing agrees
    GemmPlan h = g;
    h.rounds = best_rounds;
    h.cost = price_gemm_plan_search(h, req.machine, req.complex);
    if (!same_time(h.cost.total_s(), g.cost.total_s()) && h.cost.total_s() < g.cost.total_s())
      g = h;
  }
}

PlanCandidate candidate_of(const GemmPlan& g) {
  PlanCandidate c;
  c.pm = g.pm;
  c.pn = g.pn;
  c.pk = g.pk;
  c.rounds = g.rounds;
  c.kind = g.kind;
  c.aligned = g.aligned();
  c.cost = g.cost;
  return c;
}

/// The one search of the planners: orders the candidates by `key` (a cost functor: the
/// predicted time, or the words for the SUMMA baseline), ties by `tie` (a strict order);
/// the first is the plan (with `choice` > 0 the choice-th after it), the next four of the
/// others are its runners-up.
template <class Key, class Tie>
GemmPlan pick(const std::vector<GemmPlan>& cands, Key key, Tie tie, int choice = 0) {
  std::vector<double> kv(cands.size());
  std::vector<std::size_t> order(cands.size());
  for (std::size_t x = 0; x < cands.size(); ++x) {
    kv[x] = key(cands[x]);
    order[x] = x;
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (!same_time(kv[a], kv[b])) return kv[a] < kv[b];
    return tie(cands[a], cands[b]);
  });
  const auto c = static_cast<std::size_t>(choice);
  TESSEL_CHECK(c < order.size(), InputError, "multiply: plan choice ", choice,
               ": the planner priced ", order.size(),
               " candidate(s) for this multiply (expected "
               "a choice below that)");
  GemmPlan best = cands[order[c]];
  best.choice = choice;
  best.runners_up.clear();
  for (std::size_t x = 0; x < order.size() && best.runners_up.size() < 4; ++x)
    if (x != c) best.runners_up.push_back(candidate_of(cands[order[x]]));
  return best;
}

double time_key(const GemmPlan& g) { return g.cost.total_s(); }

/// Candidates the planner keeps, priced exactly (on every rank, with the caller's layouts),
/// after the search; and the most it prices exactly to find them.
constexpr std::size_t kExactlyPriced = 8;
constexpr std::size_t kMostExactlyPriced = 64;

/// The kExactlyPriced fastest candidates by exact price. The search price is a lower bound of
/// the exact one (a maximum over fewer ranks, without the redistribution), so candidates are
/// priced exactly in the order of their search price until the next bound is above the
/// kExactlyPriced-th exact price found (or kMostExactlyPriced are priced): no later one could
/// be among the fastest. Each exact price is O(p) (with the caller's layouts O(p) per rank:
/// there at most `most` = kExactlyPriced, as the redistribution puts most bounds far below).
/// With `share` (collective) the first `most` are priced at once, each rank its share of
/// the ranks (the walk then reads those prices: the same plans are kept).
void keep_fastest_exactly(std::vector<GemmPlan>& cands, const GemmPlanRequest& req,
                          const CallerLayouts* caller, std::size_t most, const PlanShare* share) {
  std::stable_sort(cands.begin(), cands.end(), faster);
  std::vector<GemmCost> shared;
  if (share != nullptr) {
    std::vector<const GemmPlan*> first;
    for (std::size_t x = 0; x < cands.size() && x < most; ++x) first.push_back(&cands[x]);
    shared = detail::price_all(share, first, req.machine, req.complex, caller);
  }
  std::vector<double> exact;  // ascending
  std::size_t x = 0;
  for (; x < cands.size() && x < most; ++x) {
    if (exact.size() >= kExactlyPriced && cands[x].cost.total_s() > exact[kExactlyPriced - 1])
      break;
    cands[x].cost =
        share != nullptr ? shared[x] : price_gemm_plan(cands[x], req.machine, req.complex, caller);
    exact.insert(std::upper_bound(exact.begin(), exact.end(), cands[x].cost.total_s()),
                 cands[x].cost.total_s());
  }
  cands.resize(x);
  std::stable_sort(cands.begin(), cands.end(), faster);
  cands.resize(std::min(cands.size(), kExactlyPriced));
}

}  // namespace

namespace {

/// Collective over the share's ranks: the best `most` of all ranks' priced candidates
/// (`mine`, in the search's order `at`), as plans priced by the search, in faster() order.
std::vector<GemmPlan> best_of_all_ranks(const std::vector<GemmPlan>& mine,
                                        const std::vector<std::int64_t>& at,
                                        const GemmPlanRequest& req, const PlanShare& share,
                                        std::size_t most) {
  std::vector<detail::SearchEntry> entries;
  for (std::size_t x = 0; x < mine.size(); ++x)
    entries.push_back({detail::key_of(mine[x]), at[x], mine[x].pm, mine[x].pn, mine[x].pk});
  std::stable_sort(entries.begin(), entries.end(), detail::entry_before);
  std::vector<GemmPlan> best;
  for (const detail::SearchEntry& e : detail::best_of_all(share, entries, most)) {
    GemmPlan g = detail::base_plan(req);
    g.pm = e.pm;
    g.pn = e.pn;
    g.pk = e.pk;
    g.rounds = e.key.rounds;
    g.cost = price_gemm_plan_search(g, req.machine, req.complex);  // what its rank found
    best.push_back(std::move(g));
  }
  return best;
}

}  // namespace

GemmPlan make_gemm_plan(const GemmPlanRequest& req, const CallerLayouts* caller,
                        const PlanShare* share) {
  validate(req);
  if (share != nullptr && share->count <= 1) share = nullptr;
  GemmPlan best = detail::base_plan(req);
  if (req.m == 0 || req.n == 0 || req.k == 0) return best;  // trivial 1x1x1, 1 round

  const int max_idle = gemm_max_idle(req.p, req.delta);
  int qhi = req.p, qlo = req.p - max_idle;
  bool any = false;
  for (int q = qhi; q >= qlo && !any; --q) any = has_grid(q, req.m, req.n, req.k);
  if (!any) {  // tiny matrices: anchor the window at the largest usable rank count
    qhi = qlo - 1;
    while (qhi > 1 && !has_grid(qhi, req.m, req.n, req.k)) --qhi;
    qlo = std::max(1, qhi - max_idle);
  }

  std::vector<GemmPlan> cands;
  std::vector<std::int64_t> at;  // each candidate's place in the search (with a share)
  RoundsFit fit{req};            // every rank fits every grid: the same error everywhere
  std::int64_t fitted = 0;
  for (int q = qhi; q >= qlo; --q) {
    for_each_grid(q, req.m, req.n, req.k, [&](int pm, int pn, int pk) {
      GemmPlan g = detail::base_plan(req);
      g.pm = pm;
      g.pn = pn;
      g.pk = pk;
      if (!fit.rounds(g, std::clamp<std::int64_t>(g.dom_k() / 512, 1, 8))) return;
      const std::int64_t x = fitted++;
      if (share != nullptr && x % share->count != share->index) return;
      price_rounds(g, req);
      cands.push_back(std::move(g));
      at.push_back(x);
    });
  }
  if (fitted == 0) fit.throw_no_plan();
  const std::size_t most = caller == nullptr ? kMostExactlyPriced : kExactlyPriced;
  if (share != nullptr) cands = best_of_all_ranks(cands, at, req, *share, most);
  if (caller == nullptr) {
    // Above 256 ranks on nodes of several ranks the search priced representative ranks that
    // ignore which peers share a node (price_gemm_plan_search, a lower bound): the fastest are
    // found by exact prices on every rank.
    keep_fastest_exactly(cands, req, nullptr, most, share);  // 8 > the largest choice (4)
    return pick(cands, time_key, better, req.choice);
  }
  // From the caller's layouts: the best few again with the redistribution, their aligned
  // variants, and 2D SUMMA on the caller's layouts.
  keep_fastest_exactly(cands, req, caller, most, share);
  const std::size_t aligned = std::min<std::size_t>(cands.size(), 4);  // pricing is per rank
  std::vector<GemmPlan> variants;
  for (std::size_t x = 0; x < aligned; ++x) {
    GemmPlan a = align_gemm_plan(cands[x], *caller);
    if (a.aligned()) variants.push_back(std::move(a));
  }
  std::vector<const GemmPlan*> to_price;
  for (const GemmPlan& a : variants) to_price.push_back(&a);
  const std::vector<GemmCost> costs =
      detail::price_all(share, to_price, req.machine, req.complex, caller);
  for (std::size_t x = 0; x < variants.size(); ++x) {
    variants[x].cost = costs[x];
    cands.push_back(std::move(variants[x]));
  }
  if (req.allow_caller_grid && summa2d_on_caller_applies(*caller)) {
    GemmPlan n = caller_grid_plan(req, *caller);
    if (fits(n.memory_words_needed(), req.memory_words)) cands.push_back(std::move(n));
  }
  // Ties: the plan's own layouts before aligned ones before the caller's grid, then better().
  auto rank_of = [](const GemmPlan& g) {
    return g.kind == PlanKind::CallerGrid ? 2 : (g.aligned() ? 1 : 0);
  };
  return pick(
      cands, time_key,
      [&](const GemmPlan& a, const GemmPlan& b) {
        if (rank_of(a) != rank_of(b)) return rank_of(a) < rank_of(b);
        return better(a, b);
      },
      req.choice);
}

MachineModel words_only_machine() {
  MachineModel m;
  m.dgemm_flops = m.zgemm_flops = m.mem_bandwidth_bps = std::numeric_limits<double>::infinity();
  m.intra = LinkModel{0.0, 1.0};
  m.inter = LinkModel{0.0, 1.0};
  m.source = "words only (free flops and latency, 1 byte/s links)";
  return m;
}

GemmPlan make_summa_plan(const GemmPlanRequest& req) {
  validate(req);
  GemmPlan best = detail::base_plan(req);
  if (req.m == 0 || req.n == 0 || req.k == 0) return best;

  const std::pair<int, int> square = layout::most_square_grid(req.p);
  const int a = square.first, b = square.second;

  RoundsFit fit{req};
  std::vector<GemmPlan> cands;
  for (int orient = 0; orient < (a == b ? 1 : 2); ++orient) {
    GemmPlan g = detail::base_plan(req);
    g.pm = orient == 0 ? a : b;
    g.pn = orient == 0 ? b : a;
    g.pk = 1;
    if (!fit.rounds(g, ceil_div(req.k, 256))) continue;
    g.cost = price_gemm_plan(g, req.machine, req.complex, nullptr);
    cands.push_back(std::move(g));
  }
  if (cands.empty()) fit.throw_no_plan();
  // The orientation with less volume; ties keep pm <= pn (the first).
  return pick(
      cands, [](const GemmPlan& g) { return g.recv_words(); },
      [](const GemmPlan&, const GemmPlan&) { return false; });
}

}  // namespace tessel::dense

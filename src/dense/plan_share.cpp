/// @file plan_share.cpp
/// The planner's search split over ranks: merging the ranks' best candidates and their
/// exact prices through PlanShare::all_reduce (fixed-size blobs of trivially copyable records).
#include "plan_share.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "tessel/core/error.hpp"

namespace tessel::dense::detail {

namespace {

bool same_volume(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max({1.0, std::abs(a), std::abs(b)});
}

static_assert(std::is_trivially_copyable_v<SearchEntry>);

/// A blob of at most `keep` entries: the count, then the entries.
std::vector<unsigned char> pack(const std::vector<SearchEntry>& v, std::size_t keep) {
  const std::uint64_t n = std::min(v.size(), keep);
  std::vector<unsigned char> blob(sizeof n + keep * sizeof(SearchEntry), 0);
  std::memcpy(blob.data(), &n, sizeof n);
  if (n > 0) std::memcpy(blob.data() + sizeof n, v.data(), n * sizeof(SearchEntry));
  return blob;
}

std::vector<SearchEntry> unpack(const unsigned char* blob) {
  std::uint64_t n = 0;
  std::memcpy(&n, blob, sizeof n);
  std::vector<SearchEntry> v(n);
  if (n > 0) std::memcpy(v.data(), blob + sizeof n, n * sizeof(SearchEntry));
  return v;
}

/// One rank's answer for one plan's exact price: its busiest rank of its share (-1: none).
struct Busiest {
  double t = 0;
  std::int64_t rank = -1;
};
static_assert(std::is_trivially_copyable_v<Busiest>);

/// x takes y when y is busier, or as busy and a lower rank (price_gemm_plan's order).
void take_busier(Busiest& x, const Busiest& y) {
  if (y.rank < 0) return;
  if (x.rank < 0 || y.t > x.t || (y.t == x.t && y.rank < x.rank)) x = y;
}

}  // namespace

bool same_time(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), 1e-300});
}

double compute_volume(const GemmPlan& g) {
  return static_cast<double>(g.dom_m()) * static_cast<double>(g.dom_n()) *
         static_cast<double>(g.dom_k());
}

PlanKey key_of(const GemmPlan& g) {
  PlanKey k;
  k.t = g.cost.total_s();
  k.words = g.recv_words();
  k.volume = compute_volume(g);
  k.used = g.used();
  k.rounds = g.rounds;
  return k;
}

bool key_better(const PlanKey& a, const PlanKey& b) {
  if (!same_volume(a.words, b.words)) return a.words < b.words;
  if (a.used != b.used) return a.used > b.used;
  if (a.volume != b.volume) return a.volume < b.volume;
  return a.rounds < b.rounds;
}

bool key_faster(const PlanKey& a, const PlanKey& b) {
  if (!same_time(a.t, b.t)) return a.t < b.t;
  return key_better(a, b);
}

bool entry_before(const SearchEntry& a, const SearchEntry& b) {
  if (key_faster(a.key, b.key)) return true;
  if (key_faster(b.key, a.key)) return false;
  return a.at < b.at;
}

std::vector<SearchEntry> best_of_all(const PlanShare& share, const std::vector<SearchEntry>& mine,
                                     std::size_t keep) {
  std::vector<unsigned char> blob = pack(mine, keep);
  if (share.count > 1)
    share.all_reduce(blob, [keep](const unsigned char* in, unsigned char* inout) {
      const std::vector<SearchEntry> a = unpack(in), b = unpack(inout);
      std::vector<SearchEntry> both(a.size() + b.size());
      std::merge(a.begin(), a.end(), b.begin(), b.end(), both.begin(), entry_before);
      const std::vector<unsigned char> out = pack(both, keep);
      std::memcpy(inout, out.data(), out.size());
    });
  return unpack(blob.data());
}

std::vector<GemmCost> price_all(const PlanShare* s, const std::vector<const GemmPlan*>& plans,
                                const MachineModel& machine, bool complex,
                                const CallerLayouts* caller) {
  const std::size_t n = plans.size();
  if (s == nullptr || s->count <= 1) {
    std::vector<GemmCost> out;
    for (const GemmPlan* g : plans) out.push_back(price_gemm_plan(*g, machine, complex, caller));
    return out;
  }
  const PlanShare& share = *s;
  std::vector<Busiest> mine(n);
  for (std::size_t x = 0; x < n; ++x) {
    const GemmCost c =
        price_gemm_plan_ranks(*plans[x], machine, complex, caller, share.index, share.count);
    mine[x] = Busiest{c.total_s(), c.rank};
  }
  std::vector<unsigned char> blob(n * sizeof(Busiest));
  if (n > 0) std::memcpy(blob.data(), mine.data(), blob.size());
  if (n > 0)
    share.all_reduce(blob, [n](const unsigned char* in, unsigned char* inout) {
      for (std::size_t x = 0; x < n; ++x) {
        Busiest a, b;
        std::memcpy(&a, in + x * sizeof(Busiest), sizeof a);
        std::memcpy(&b, inout + x * sizeof(Busiest), sizeof b);
        take_busier(b, a);
        std::memcpy(inout + x * sizeof(Busiest), &b, sizeof b);
      }
    });
  std::vector<GemmCost> out(n);
  for (std::size_t x = 0; x < n; ++x) {
    Busiest b;
    std::memcpy(&b, blob.data() + x * sizeof(Busiest), sizeof b);
    TESSEL_CHECK(b.rank >= 0, Error, "price_all: no rank priced plan ", x, " (share ", share.index,
                 " of ", share.count, ")");
    out[x] = price_gemm_rank(*plans[x], machine, complex, caller, static_cast<int>(b.rank));
  }
  return out;
}

}  // namespace tessel::dense::detail

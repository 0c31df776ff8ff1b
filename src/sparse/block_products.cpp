// The local kernel's batches of block products (block_products.hpp) and the table of their
// times by shape (sparse/multiply.hpp: measure_product_times, check_product_times).
#include "block_products.hpp"

#include <algorithm>
#include <ctime>
#include <set>

#include "tessel/core/error.hpp"
#include "tessel/sparse/multiply.hpp"

extern "C" void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*,
                       const double*, const int*, const double*, const int*, const double*, double*,
                       const int*);

namespace tessel::sparse {
namespace detail {

namespace {
/// Blocks with m * n * k above this go to BLAS (LIBXSMM's JIT covers small shapes best).
constexpr long long kXsmmMaxMnk = 80LL * 80 * 80;
}  // namespace

Stack Stack::of(int m, int n, int k) {
  Stack s;
  s.m = m;
  s.n = n;
  s.k = k;
  const double one = 1.0;
  if (static_cast<long long>(m) * n * k <= kXsmmMaxMnk)
    s.f = libxsmm_dmmdispatch(m, n, k, nullptr, nullptr, nullptr, &one, &one, nullptr, nullptr);
  return s;
}

// The parentheses keep SMPI's clock_gettime macro (the simulated clock) out.
double thread_cpu_seconds() {
  timespec ts{};
  (clock_gettime)(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void run_products(const Stack& s, std::size_t from, std::size_t to) {
  const double one = 1.0;
  if (s.f) {
    for (std::size_t i = from; i < to; ++i) s.f(s.p[i].a, s.p[i].b, s.p[i].c);
  } else {
    for (std::size_t i = from; i < to; ++i)
      dgemm_("N", "N", &s.m, &s.n, &s.k, &one, s.p[i].a, &s.m, s.p[i].b, &s.k, &one, s.p[i].c,
             &s.m);
  }
}

namespace {
/// Blocks of each operand the measurement spreads its products over: about 24 MB per operand
/// (out of cache, as the multiply's images are), at least 64 and at most 8,192 blocks.
std::size_t pool_blocks(int rows, int cols) {
  const std::size_t per = 8 * static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  return std::clamp<std::size_t>((std::size_t{24} << 20) / per, 64, 8192);
}

/// Seconds of CPU per product of shape m x n x k: a batch of kStackSize products over pools of
/// blocks (A, B and C drawn in a fixed scattered order), its first kWarm untimed; the median
/// of three timed batches.
double time_shape(int m, int n, int k) {
  constexpr std::size_t kWarm = 1024;
  const std::size_t na = pool_blocks(m, k), nb = pool_blocks(k, n), nc = pool_blocks(m, n);
  std::vector<double> a(na * m * k, 0.5), b(nb * k * n, 0.25), c(nc * m * n, 0.0);
  Stack s = Stack::of(m, n, k);
  for (std::size_t i = 0; i < kStackSize; ++i)
    s.p.push_back({&a[(i * 7919 % na) * m * k], &b[(i * 104729 % nb) * k * n],
                   &c[(i * 15485863 % nc) * m * n]});
  std::vector<double> t;
  for (int rep = 0; rep < 3; ++rep) {
    run_products(s, 0, kWarm);
    const double t0 = thread_cpu_seconds();
    run_products(s, kWarm, kStackSize);
    t.push_back((thread_cpu_seconds() - t0) / static_cast<double>(kStackSize - kWarm));
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

std::set<int> distinct(const BlockSizes& b) {
  return std::set<int>(b.sizes().begin(), b.sizes().end());
}
}  // namespace
}  // namespace detail

std::vector<KernelTimes::Shape> product_shapes(const BlockSizes& rows, const BlockSizes& inner,
                                               const BlockSizes& cols) {
  std::vector<KernelTimes::Shape> out;
  for (int m : detail::distinct(rows))
    for (int n : detail::distinct(cols))
      for (int k : detail::distinct(inner)) out.push_back({m, n, k});
  return out;
}

KernelTimes measure_product_times(const BlockSizes& rows, const BlockSizes& inner,
                                  const BlockSizes& cols, const ShapeTimes& measured,
                                  const std::function<void(int, int)>& progress) {
  KernelTimes t;
  std::vector<KernelTimes::Shape> here;
  for (const auto& s : product_shapes(rows, inner, cols)) {
    auto it = measured.find(s);
    if (it != measured.end() && it->second.products > 0)
      t.set(s[0], s[1], s[2], it->second.seconds / static_cast<double>(it->second.products));
    else
      here.push_back(s);
  }
  int done = 0;
  for (const auto& s : here) {
    t.set(s[0], s[1], s[2], detail::time_shape(s[0], s[1], s[2]));
    if (progress) progress(++done, static_cast<int>(here.size()));
  }
  return t;
}

void check_product_times(const KernelTimes& t, const BlockSizes& rows, const BlockSizes& inner,
                         const BlockSizes& cols, const std::string& what) {
  for (const auto& s : product_shapes(rows, inner, cols))
    TESSEL_CHECK(t.find(s[0], s[1], s[2]), InputError, what,
                 ": no entry for the block product shape ", s[0], " x ", s[1], " x ", s[2],
                 " (m x n x k) of these matrices: expected a table measured on matrices with "
                 "the same block sizes (tessel spgemm --measure-product-times)");
}

}  // namespace tessel::sparse

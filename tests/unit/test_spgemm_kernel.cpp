// The local kernel of the block-sparse multiply (src/sparse/local_multiply.cpp, no MPI): images
// built by hand, C += A B against a naive dense product, with block sizes that take both the
// LIBXSMM path and the BLAS path (> 80^3), the on-the-fly filter and its per-row bound, and the
// retain pattern.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "../../src/sparse/spgemm_panels.hpp"
#include "tessel/core/error.hpp"
#include "tessel/sparse/multiply.hpp"

using namespace tessel::sparse;
using namespace tessel::sparse::detail;

namespace {

struct Dense {
  BlockSizes r, c;
  std::vector<double> v;  // column-major
  std::vector<char> has;
  Dense(const BlockSizes& rr, const BlockSizes& cc)
      : r(rr),
        c(cc),
        v(static_cast<std::size_t>(rr.extent() * cc.extent()), 0.0),
        has(static_cast<std::size_t>(rr.count() * cc.count()), 0) {}
  double& at(std::int64_t i, std::int64_t j) {
    return v[static_cast<std::size_t>(j * r.extent() + i)];
  }
};

// The image of d's blocks (i, j) with keep(i, j), from d's values; the receiver's offsets
// (index(), from the block sizes alone) must be where the blocks were put.
template <class Keep>
PanelBuf image_of(Dense& d, Keep keep) {
  PanelBuf p;
  std::vector<std::int64_t> offsets;  // where the blocks were put
  for (int i = 0; i < d.r.count(); ++i)
    for (int j = 0; j < d.c.count(); ++j) {
      if (!d.has[static_cast<std::size_t>(i * d.c.count() + j)] || !keep(i, j)) continue;
      offsets.push_back(static_cast<std::int64_t>(p.data.size()));
      double nrm = 0;
      for (int y = 0; y < d.c.size(j); ++y)
        for (int x = 0; x < d.r.size(i); ++x) {
          const double v = d.at(d.r.offset(i) + x, d.c.offset(j) + y);
          p.data.push_back(v);
          nrm += v * v;
        }
      nrm = std::sqrt(nrm);
      std::int64_t bits;
      std::memcpy(&bits, &nrm, sizeof bits);
      p.meta.insert(p.meta.end(), {meta_rc(i, j), bits});
    }
  p.index(d.r, d.c);
  EXPECT_EQ(p.off, offsets);
  return p;
}

// Random blocks of d with probability `fill`, block (i, j) scaled by scale(i, j); their image.
PanelBuf make_image(Dense& d, std::mt19937& rng, double fill, double (*scale)(int, int)) {
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < d.r.count(); ++i)
    for (int j = 0; j < d.c.count(); ++j) {
      if (u(rng) * 0.5 + 0.5 >= fill) continue;
      d.has[static_cast<std::size_t>(i * d.c.count() + j)] = 1;
      const double s = scale(i, j);
      for (int y = 0; y < d.c.size(j); ++y)
        for (int x = 0; x < d.r.size(i); ++x)
          d.at(d.r.offset(i) + x, d.c.offset(j) + y) = s * u(rng);
    }
  return image_of(d, [](int, int) { return true; });
}

// The on-the-fly thresholds eps / n_i, n_i counted here from the two patterns (the products
// of C's block row i in the whole multiply).
std::vector<double> thresholds(const Dense& a, const Dense& b, double eps) {
  std::vector<double> t(static_cast<std::size_t>(a.r.count()), 0.0);
  for (int i = 0; i < a.r.count(); ++i) {
    long n = 0;
    for (int k = 0; k < a.c.count(); ++k)
      if (a.has[static_cast<std::size_t>(i * a.c.count() + k)])
        for (int j = 0; j < b.c.count(); ++j)
          n += b.has[static_cast<std::size_t>(k * b.c.count() + j)];
    if (n > 0) t[static_cast<std::size_t>(i)] = eps / static_cast<double>(n);
  }
  return t;
}

double one(int, int) { return 1.0; }
double decay(int i, int j) { return std::pow(10.0, -0.7 * (i + j)); }

// C (dense) from an accumulator.
std::vector<double> dense_of(const CAccumulator& acc, const BlockSizes& r, const BlockSizes& c) {
  std::vector<double> out(static_cast<std::size_t>(r.extent() * c.extent()), 0.0);
  acc.for_each_block([&](int i, int j, const double* v, double) {
    for (int y = 0; y < c.size(j); ++y)
      for (int x = 0; x < r.size(i); ++x)
        out[static_cast<std::size_t>((c.offset(j) + y) * r.extent() + r.offset(i) + x)] =
            v[y * r.size(i) + x];
  });
  return out;
}

std::vector<double> naive(Dense& a, Dense& b) {
  std::int64_t m = a.r.extent(), k = a.c.extent(), n = b.c.extent();
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t l = 0; l < k; ++l)
      for (std::int64_t i = 0; i < m; ++i)
        c[static_cast<std::size_t>(j * m + i)] += a.at(i, l) * b.at(l, j);
  return c;
}

}  // namespace

TEST(SpgemmKernel, ExactAgainstNaiveProduct) {
  std::mt19937 rng(5);
  // sizes 1, 4, 5, 13, 23 (LIBXSMM) and 90 (BLAS: 90^3 > 80^3)
  BlockSizes rs({1, 4, 90, 5, 13}), ks({23, 4, 90, 1}), cs({5, 90, 1, 13});
  Dense a(rs, ks), b(ks, cs);
  PanelBuf pa = make_image(a, rng, 0.7, one), pb = make_image(b, rng, 0.7, one);
  CAccumulator acc(&rs, &cs);
  KernelStats st;
  // twice: the second call accumulates into the blocks of the first
  multiply_images(pa.view(), pb.view(), rs, ks, cs, nullptr, nullptr, acc, st);
  multiply_images(pa.view(), pb.view(), rs, ks, cs, nullptr, nullptr, acc, st);
  auto want = naive(a, b);
  auto got = dense_of(acc, rs, cs);
  double scale = 1, err = 0;
  for (std::size_t x = 0; x < want.size(); ++x) {
    scale = std::max(scale, std::abs(2 * want[x]));
    err = std::max(err, std::abs(got[x] - 2 * want[x]));
  }
  EXPECT_LE(err / scale, 1e-13);
  EXPECT_EQ(st.skipped, 0);
  EXPECT_GT(st.multiplied, 0);
}

TEST(SpgemmKernel, FilterWithinPerRowBound) {
  std::mt19937 rng(6);
  std::vector<int> s(12, 4);
  BlockSizes bs(s);
  Dense a(bs, bs), b(bs, bs);
  PanelBuf pa = make_image(a, rng, 0.8, decay), pb = make_image(b, rng, 0.8, decay);
  const double eps = 1e-5;
  CAccumulator acc(&bs, &bs);
  KernelStats st;
  const auto thr = thresholds(a, b, eps);
  multiply_images(pa.view(), pb.view(), bs, bs, bs, thr.data(), nullptr, acc, st);
  EXPECT_GT(st.skipped, 0);
  auto want = naive(a, b);
  auto got = dense_of(acc, bs, bs);
  // the skipped part of each block row has Frobenius norm < eps
  for (int i = 0; i < bs.count(); ++i) {
    double e = 0;
    for (std::int64_t j = 0; j < bs.extent(); ++j)
      for (int x = 0; x < 4; ++x) {
        double d = got[static_cast<std::size_t>(j * bs.extent() + bs.offset(i) + x)] -
                   want[static_cast<std::size_t>(j * bs.extent() + bs.offset(i) + x)];
        e += d * d;
      }
    EXPECT_LT(std::sqrt(e), eps) << "block row " << i;
  }
}

// The multiply split into calls (k in three ranges, as over the ticks of a grid) skips exactly
// the products one call skips, and gives the same C: the thresholds belong to the whole
// multiply, not to a call.
TEST(SpgemmKernel, SplitCallsSkipWhatOneCallSkips) {
  std::mt19937 rng(16);
  std::vector<int> s(15, 3);
  BlockSizes bs(s);
  Dense a(bs, bs), b(bs, bs);
  (void)make_image(a, rng, 0.7, decay);
  (void)make_image(b, rng, 0.7, decay);
  const auto thr = thresholds(a, b, 1e-4);
  CAccumulator whole(&bs, &bs), split(&bs, &bs);
  KernelStats st1, st3;
  PanelBuf pa = image_of(a, [](int, int) { return true; });
  PanelBuf pb = image_of(b, [](int, int) { return true; });
  multiply_images(pa.view(), pb.view(), bs, bs, bs, thr.data(), nullptr, whole, st1);
  for (int part = 0; part < 3; ++part) {
    PanelBuf qa = image_of(a, [&](int, int k) { return k % 3 == part; });
    PanelBuf qb = image_of(b, [&](int k, int) { return k % 3 == part; });
    multiply_images(qa.view(), qb.view(), bs, bs, bs, thr.data(), nullptr, split, st3);
  }
  EXPECT_GT(st1.skipped, 0);
  EXPECT_EQ(st3.skipped, st1.skipped);
  EXPECT_EQ(st3.multiplied, st1.multiplied);
  auto x = dense_of(whole, bs, bs), y = dense_of(split, bs, bs);
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t q = 0; q < x.size(); ++q) EXPECT_NEAR(x[q], y[q], 1e-14 * (1 + std::abs(x[q])));
}

TEST(SpgemmKernel, RetainPattern) {
  std::mt19937 rng(7);
  BlockSizes bs({4, 1, 5});
  Dense a(bs, bs), b(bs, bs);
  PanelBuf pa = make_image(a, rng, 1.0, one), pb = make_image(b, rng, 1.0, one);
  CAccumulator allowed(&bs, &bs);
  allowed.slot(0, 0);
  allowed.slot(2, 1);
  CAccumulator acc(&bs, &bs);
  KernelStats st;
  multiply_images(pa.view(), pb.view(), bs, bs, bs, nullptr, &allowed, acc, st);
  EXPECT_EQ(acc.nblocks(), 2);
  EXPECT_TRUE(acc.contains(0, 0));
  EXPECT_TRUE(acc.contains(2, 1));
  EXPECT_FALSE(acc.contains(1, 1));
}

// AccValues::Virtual (the simulated build's sampled partial panels): the kernel creates the
// same blocks with the same norm bounds as into a Held accumulator, and bytes() and the
// values counted are a computing run's, though the values are stored nowhere (every block
// aliases one scratch block the size of the largest).
TEST(SpgemmKernel, VirtualValuesKeepBlocksBoundsAndBytes) {
  std::mt19937 rng(9);
  std::vector<int> s{4, 1, 1, 4, 1, 1, 4, 1, 1, 5};
  BlockSizes bs(s);
  Dense a(bs, bs), b(bs, bs);
  PanelBuf pa = make_image(a, rng, 0.8, decay), pb = make_image(b, rng, 0.8, decay);
  CAccumulator held(&bs, &bs), virt(&bs, &bs, AccValues::Virtual);
  KernelStats sh, sv;
  const auto rt = thresholds(a, b, 1e-12);
  multiply_images(pa.view(), pb.view(), bs, bs, bs, rt.data(), nullptr, held, sh);
  multiply_images(pa.view(), pb.view(), bs, bs, bs, rt.data(), nullptr, virt, sv);
  EXPECT_GT(held.nblocks(), 10);
  EXPECT_EQ(virt.nblocks(), held.nblocks());
  EXPECT_EQ(virt.nvalues(), held.nvalues());
  EXPECT_EQ(sv.multiplied, sh.multiplied);
  EXPECT_EQ(sv.skipped, sh.skipped);
  std::vector<std::tuple<int, int, double>> bh, bv;
  std::set<const double*> where;
  held.for_each_block([&](int r, int c, const double*, double x) { bh.emplace_back(r, c, x); });
  virt.for_each_block([&](int r, int c, const double* v, double x) {
    bv.emplace_back(r, c, x);
    where.insert(v);
  });
  EXPECT_EQ(bv, bh);
  EXPECT_EQ(where.size(), 1u);  // one scratch block
  // bytes(): held counts whole 512 KiB pages, virtual the values exactly; both the index
  EXPECT_EQ(virt.bytes() - 8 * virt.nvalues(), held.bytes() - 8 * (std::int64_t{1} << 16));
}

// The C wire format (rma25d's partial panels): 8 bytes of metadata per block, a round trip
// through add(CWire) gives the same panel; blocks whose norm bound (sum of the norm products
// the kernel did) is below drop_below are left out, and every block left out has a true norm
// <= its bound; the symbolic kernel creates the same blocks (zero-filled) with the same bounds.
TEST(SpgemmKernel, WireFormatPartialDropAndSymbolic) {
  std::mt19937 rng(8);
  std::vector<int> s{4, 1, 1, 4, 1, 1, 4, 1, 1, 5};
  BlockSizes bs(s);
  Dense a(bs, bs), b(bs, bs);
  PanelBuf pa = make_image(a, rng, 0.8, decay), pb = make_image(b, rng, 0.8, decay);
  CAccumulator acc(&bs, &bs), sym(&bs, &bs);
  KernelStats st, st_sym;
  const auto rt = thresholds(a, b, 1e-12);
  multiply_images(pa.view(), pb.view(), bs, bs, bs, rt.data(), nullptr, acc, st);
  multiply_images(pa.view(), pb.view(), bs, bs, bs, rt.data(), nullptr, sym, st_sym,
                  KernelMode::Symbolic);
  EXPECT_EQ(st_sym.flops, 0.0);
  EXPECT_EQ(st_sym.multiplied, 0);
  EXPECT_EQ(st_sym.skipped, st.skipped);
  ASSERT_EQ(sym.nblocks(), acc.nblocks());
  EXPECT_EQ(sym.nvalues(), acc.nvalues());
  // round trip, nothing dropped
  CWire w = acc.pack_wire();
  EXPECT_EQ(w.bytes(), 8 * acc.nblocks() + 8 * acc.nvalues());
  CAccumulator back(&bs, &bs);
  back.add(w);
  EXPECT_EQ(dense_of(back, bs, bs), dense_of(acc, bs, bs));
  // with a threshold: the dropped blocks are small, the kept ones identical
  const double thr = 1e-4;
  std::int64_t dropped = 0, dropped_sym = 0;
  CWire wd = acc.pack_wire(thr, &dropped);
  CWire ws = sym.pack_wire(thr, &dropped_sym);
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, acc.nblocks());
  EXPECT_EQ(dropped, dropped_sym);  // symbolic: the same blocks go
  EXPECT_EQ(wd.idx, ws.idx);
  EXPECT_EQ(static_cast<std::int64_t>(wd.idx.size()) / 2, acc.nblocks() - dropped);
  std::size_t q = 0;
  acc.for_each_block([&](int r, int c, const double* v, double bound) {
    bool kept = q < wd.idx.size() / 2 && wd.idx[2 * q] == r && wd.idx[2 * q + 1] == c;
    double ss = 0;
    for (int x = 0; x < bs.size(r) * bs.size(c); ++x) ss += v[x] * v[x];
    const double norm = std::sqrt(ss);
    EXPECT_LE(norm, bound * (1 + 1e-12));
    if (kept)
      ++q;
    else
      EXPECT_LT(norm, thr) << r << "," << c;
  });
  EXPECT_EQ(q, wd.idx.size() / 2);
}

// KernelMode::Sampled (the simulated build's --simulate-compute skip): the same blocks of C and
// the same counts (flops, products, skipped) as the real kernel; only kSampledProducts of each
// batch of one shape run, and the estimated time of the others is left in pending_s (positive
// exactly when some shape has more products than that).
struct ComputedAndSampled {
  CAccumulator computed, sampled;
  KernelStats c, s;
};
static ComputedAndSampled computed_and_sampled(const BlockSizes& bs, std::mt19937& rng,
                                               double fill) {
  Dense a(bs, bs), b(bs, bs);
  PanelBuf pa = make_image(a, rng, fill, one), pb = make_image(b, rng, fill, one);
  ComputedAndSampled r{CAccumulator(&bs, &bs), CAccumulator(&bs, &bs), {}, {}};
  multiply_images(pa.view(), pb.view(), bs, bs, bs, nullptr, nullptr, r.computed, r.c);
  multiply_images(pa.view(), pb.view(), bs, bs, bs, nullptr, nullptr, r.sampled, r.s,
                  KernelMode::Sampled);
  return r;
}

TEST(SpgemmKernel, SampledCountsAsComputeAndEstimatesTheRest) {
  std::mt19937 rng(12);
  BlockSizes bs(std::vector<int>(40, 4));  // one shape: 4 x 4 x 4, 40^3 / 2 products
  ComputedAndSampled x = computed_and_sampled(bs, rng, 0.8);
  const KernelStats &st = x.c, &ss = x.s;
  ASSERT_GT(st.multiplied, static_cast<std::int64_t>(kSampledProducts));
  EXPECT_EQ(ss.multiplied, st.multiplied);
  EXPECT_EQ(ss.flops, st.flops);
  EXPECT_EQ(ss.flops, 128.0 * static_cast<double>(st.multiplied));
  EXPECT_EQ(ss.skipped, st.skipped);
  EXPECT_EQ(x.sampled.nblocks(), x.computed.nblocks());
  EXPECT_EQ(x.sampled.nvalues(), x.computed.nvalues());
  EXPECT_EQ(st.pending_s, 0.0);
  EXPECT_GT(ss.pending_s, 0.0);
  // a multiply of fewer products than one sample: all run, nothing estimated
  BlockSizes few(std::vector<int>(5, 4));
  ComputedAndSampled y = computed_and_sampled(few, rng, 1.0);
  EXPECT_EQ(y.s.multiplied, 125);
  EXPECT_EQ(y.s.pending_s, 0.0);
  EXPECT_EQ(dense_of(y.sampled, few, few), dense_of(y.computed, few, few));  // all of them ran
}

// retain_sparsity's partials in the owner's pattern order: a pattern from a C (pattern_wire
// order = CSR), mark()ed as the allowed set; the kernel's blocks all fall inside it; pack_masked
// sends a bitmap (4 bytes per 32 pattern blocks) and the values, add_masked restores the same
// panel; with a threshold the dropped blocks are those pack_wire drops.
TEST(SpgemmKernel, MaskedPartialRoundTrip) {
  std::mt19937 rng(9);
  std::vector<int> s{4, 1, 1, 4, 1, 1, 4, 1, 1, 5, 4, 1, 1, 4, 1, 1, 4, 1, 1,
                     5, 4, 1, 1, 4, 1, 1, 4, 1, 1, 5, 4, 1, 1, 4, 1, 1, 4, 1};
  BlockSizes bs(s);
  const int n = bs.count();
  CWire pattern;  // about half of all blocks, row-major sorted
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c)
      if (rng() % 2) pattern.idx.insert(pattern.idx.end(), {r, c});
  const std::int64_t np = static_cast<std::int64_t>(pattern.idx.size() / 2);
  ASSERT_GT(np, 64);  // more than two bitmap words
  CAccumulator allowed(&bs, &bs);
  allowed.mark(pattern);
  Dense a(bs, bs), b(bs, bs);
  PanelBuf pa = make_image(a, rng, 0.04, decay), pb = make_image(b, rng, 0.04, decay);
  CAccumulator acc(&bs, &bs);
  KernelStats st;
  multiply_images(pa.view(), pb.view(), bs, bs, bs, nullptr, &allowed, acc, st);
  ASSERT_GT(acc.nblocks(), 0);
  ASSERT_LT(acc.nblocks(), np);  // some pattern blocks absent: the bitmap matters
  CWire w = acc.pack_masked(pattern);
  EXPECT_EQ(static_cast<std::int64_t>(w.idx.size()), (np + 31) / 32);
  EXPECT_EQ(static_cast<std::int64_t>(w.data.size()), acc.nvalues());
  CAccumulator back(&bs, &bs);
  back.add_masked(w, pattern);
  EXPECT_EQ(back.nblocks(), acc.nblocks());
  EXPECT_EQ(dense_of(back, bs, bs), dense_of(acc, bs, bs));
  const double thr = 1e-3;
  std::int64_t d1 = 0, d2 = 0;
  CWire wm = acc.pack_masked(pattern, thr, &d1);
  CWire wp = acc.pack_wire(thr, &d2);
  EXPECT_EQ(d1, d2);
  EXPECT_GT(d1, 0);
  EXPECT_EQ(std::vector<double>(wm.data.begin(), wm.data.end()),
            std::vector<double>(wp.data.begin(), wp.data.end()));  // same blocks, same order
  CAccumulator b1(&bs, &bs), b2(&bs, &bs);
  b1.add_masked(wm, pattern);
  b2.add(wp);
  EXPECT_EQ(dense_of(b1, bs, bs), dense_of(b2, bs, bs));
}

// The accumulator's storage: a block's values stay where slot() put them while many more
// blocks are created (the kernel keeps these pointers across its stacks), blocks larger than a
// page included; every block starts at zero; for_each_block visits rows and columns in order
// and nvalues() counts exactly the values of the blocks created (mark() creates none).
TEST(SpgemmKernel, AccumulatorValuesNeverMove) {
  // 400 x 400 blocks: sizes 1..9 and one of 300 (300^2 values > one 65,536-value page)
  std::vector<int> s(400);
  for (int x = 0; x < 400; ++x) s[static_cast<std::size_t>(x)] = 1 + x % 9;
  s[123] = 300;
  BlockSizes bs(s);
  CAccumulator acc(&bs, &bs);
  struct Seen {
    int r, c;
    double* v;
  };
  std::vector<Seen> seen;
  std::int64_t values = 0;
  std::mt19937 rng(3);
  for (int r = 0; r < 400; r += 3)  // rows 0, 3, ..., 123 (the 300-row block), ...
    for (int k = 0; k < 80; ++k) {
      // block (123, 123): 90,000 values, more than a page
      const int c = r == 123 && k == 40 ? 123 : static_cast<int>(rng() % 400);
      const bool fresh = !acc.contains(r, c);
      double* v = acc.slot(r, c);
      const int n = bs.size(r) * bs.size(c);
      if (!fresh) continue;
      values += n;
      for (int x = 0; x < n; ++x) ASSERT_EQ(v[x], 0.0) << r << "," << c;
      for (int x = 0; x < n; ++x) v[x] = r * 1000.0 + c + x * 1e-6;
      seen.push_back({r, c, v});
    }
  acc.mark(1, 1);                // a pattern-only block: no values
  ASSERT_GT(values, 4 * 65536);  // several pages
  ASSERT_TRUE(acc.contains(123, 123));
  EXPECT_EQ(acc.nvalues(), values);
  EXPECT_EQ(acc.nblocks(), static_cast<std::int64_t>(seen.size()) + 1);
  for (const auto& b : seen) {
    EXPECT_EQ(acc.slot(b.r, b.c), b.v);  // the same address as when created
    const int n = bs.size(b.r) * bs.size(b.c);
    for (int x = 0; x < n; ++x) ASSERT_EQ(b.v[x], b.r * 1000.0 + b.c + x * 1e-6);
  }
  int pr = -1, pc = -1;
  std::int64_t visited = 0;
  CAccumulator values_only(&bs, &bs);
  for (const auto& b : seen) values_only.slot(b.r, b.c);
  values_only.for_each_block([&](int r, int c, const double* v, double) {
    EXPECT_TRUE(r > pr || (r == pr && c > pc)) << r << "," << c;
    EXPECT_NE(v, nullptr);
    pr = r;
    pc = c;
    ++visited;
  });
  EXPECT_EQ(visited, static_cast<std::int64_t>(seen.size()));
}

// Cannon's pieces (image_pieces): every k block stays in its image, the pieces of an image
// are consecutive runs in k whose counts differ by at most one, and one piece is the identity.
TEST(CannonPieces, ConsecutiveBalancedRunsInsideEachImage) {
  const std::vector<int> kv = {0, 1, 0, 2, 1, 0, 0, 2, 1, 0, 0};
  EXPECT_EQ(tessel::sparse::detail::image_pieces(kv, 3, 1), kv);
  for (int q : {2, 3, 4, 7}) {
    const auto out = tessel::sparse::detail::image_pieces(kv, 3, q);
    ASSERT_EQ(out.size(), kv.size());
    std::vector<std::vector<int>> count(3, std::vector<int>(static_cast<std::size_t>(q), 0));
    std::vector<int> last(3, 0);
    for (std::size_t k = 0; k < kv.size(); ++k) {
      EXPECT_EQ(out[k] / q, kv[k]) << "k " << k << " pieces " << q;
      const int c = out[k] % q;
      EXPECT_GE(c, last[static_cast<std::size_t>(kv[k])]) << "not consecutive: k " << k;
      last[static_cast<std::size_t>(kv[k])] = c;
      ++count[static_cast<std::size_t>(kv[k])][static_cast<std::size_t>(c)];
    }
    for (int v = 0; v < 3; ++v) {
      const auto& cv = count[static_cast<std::size_t>(v)];
      const int n = std::accumulate(cv.begin(), cv.end(), 0);
      for (int c : cv) {  // n / q rounded down or up
        EXPECT_GE(c, n / q) << "image " << v << " pieces " << q;
        EXPECT_LE(c, (n + q - 1) / q) << "image " << v << " pieces " << q;
      }
    }
  }
}

// Row panels (SpMultiplyOptions::row_panels): consecutive ranges covering every block row once,
// each holding its share of the element rows to within one block.
TEST(RowPanels, ConsecutiveRangesSplittingTheRowsEvenly) {
  const tessel::sparse::BlockSizes rows(std::vector<int>{4, 1, 1, 5, 4, 1, 1, 3, 2, 4, 1, 1});
  for (int panels : {1, 2, 3, 5, 12, 20}) {
    const auto r = tessel::sparse::detail::row_panels(rows, panels);
    ASSERT_EQ(static_cast<int>(r.size()), panels);
    EXPECT_EQ(r.front().lo, 0);
    EXPECT_EQ(r.back().hi, rows.count()) << panels;
    for (int p = 0; p < panels; ++p) {
      const auto& x = r[static_cast<std::size_t>(p)];
      if (p > 0) EXPECT_EQ(x.lo, r[static_cast<std::size_t>(p - 1)].hi) << panels;
      EXPECT_LE(x.lo, x.hi);
      // Element rows [offset(lo), offset(hi)) against the ideal share [p E / P, (p + 1) E / P).
      const double ideal_lo = static_cast<double>(rows.extent()) * p / panels;
      EXPECT_GE(static_cast<double>(rows.offset(x.lo)), ideal_lo - 1e-12) << panels << " " << p;
      EXPECT_LT(static_cast<double>(rows.offset(x.lo)), ideal_lo + 5) << panels << " " << p;
    }
  }
}

// KernelMode::Sampled with a table of product times (the simulated build's --product-times):
// the same blocks of C as a computing run, no product run (C's values stay zero), and the
// charge is the sum over the products made of their shape's entry; with the entry m n k ns
// that sum is half the kernel's flops in ns, counted independently of the charge.
TEST(SpgemmKernel, ProductTimesChargeEachProductItsShape) {
  std::mt19937 rng(10);
  std::vector<int> s{4, 1, 1, 4, 1, 1, 4, 1, 1, 5};
  BlockSizes bs(s);
  Dense a(bs, bs), b(bs, bs);
  PanelBuf pa = make_image(a, rng, 0.8, decay), pb = make_image(b, rng, 0.8, decay);
  tessel::KernelTimes t;
  for (int m : {1, 4, 5})
    for (int n : {1, 4, 5})
      for (int k : {1, 4, 5}) t.set(m, n, k, 1e-9 * m * n * k);
  CAccumulator held(&bs, &bs), charged(&bs, &bs);
  KernelStats sh, sc;
  const auto rt = thresholds(a, b, 1e-12);
  multiply_images(pa.view(), pb.view(), bs, bs, bs, rt.data(), nullptr, held, sh);
  multiply_images(pa.view(), pb.view(), bs, bs, bs, rt.data(), nullptr, charged, sc,
                  KernelRun{KernelMode::Sampled, &t});
  ASSERT_GT(sh.multiplied, 100);
  EXPECT_EQ(sc.multiplied, sh.multiplied);
  EXPECT_EQ(sc.flops, sh.flops);
  EXPECT_NEAR(sc.pending_s, 0.5e-9 * sh.flops, 1e-12 * sh.flops);
  EXPECT_EQ(sh.pending_s, 0.0);
  ASSERT_EQ(charged.nblocks(), held.nblocks());
  double sum = 0;
  charged.for_each_block([&](int r, int c, const double* v, double) {
    for (int i = 0; i < bs.size(r) * bs.size(c); ++i) sum += std::abs(v[i]);
  });
  EXPECT_EQ(sum, 0.0);  // nothing ran
  // KernelRun::time (a computing run timed by shape): every product counted once, under its
  // shape, with the flops of its shape; the same C as untimed
  CAccumulator timed(&bs, &bs);
  KernelStats st;
  multiply_images(pa.view(), pb.view(), bs, bs, bs, rt.data(), nullptr, timed, st,
                  KernelRun{KernelMode::Compute, nullptr, true});
  std::int64_t n = 0;
  double flops = 0;
  for (const auto& [shape, x] : st.timed) {
    n += x.products;
    flops += 2.0 * shape[0] * shape[1] * shape[2] * static_cast<double>(x.products);
    EXPECT_GE(x.seconds, 0.0);
  }
  EXPECT_EQ(n, sh.multiplied);
  EXPECT_EQ(flops, sh.flops);
  EXPECT_TRUE(sh.timed.empty());
  EXPECT_EQ(dense_of(timed, bs, bs), dense_of(held, bs, bs));
}

// The table's text: a round trip through format and parse; malformed lines, repeated shapes
// and an empty table are InputErrors naming the file and the line; check_product_times names
// the first missing shape; measure_product_times gives every shape of the sizes, positive.
TEST(SpgemmKernel, ProductTimesFileAndMeasurement) {
  tessel::KernelTimes t;
  t.set(13, 5, 5, 7.2e-8);
  t.set(5, 5, 5, 3.5e-8);
  const tessel::KernelTimes back = tessel::KernelTimes::parse(t.format("a\nb"), "f");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_DOUBLE_EQ(*back.find(13, 5, 5), 7.2e-8);
  EXPECT_EQ(back.find(5, 13, 5), nullptr);
  auto error_of = [](const std::string& text) -> std::string {
    try {
      tessel::KernelTimes::parse(text, "times.txt");
    } catch (const tessel::InputError& e) { return e.what(); }
    return "";
  };
  EXPECT_NE(error_of("# c\n5 5 5 1e-8\n5 5 x 1e-8\n").find("times.txt line 3: '5 5 x 1e-8'"),
            std::string::npos);
  EXPECT_NE(error_of("5 5 5 -1\n").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("5 5 5 1e-8 7\n").find("expected 'm n k seconds'"), std::string::npos);
  EXPECT_NE(error_of("5 5 5 1e-8\n5 5 5 2e-8\n").find("given twice"), std::string::npos);
  EXPECT_NE(error_of("# nothing\n\n").find("no shape"), std::string::npos);
  BlockSizes r({5, 13, 5}), k({5, 13}), c({13});
  std::string missing;
  try {
    check_product_times(back, r, k, c, "--product-times t");
  } catch (const tessel::InputError& e) { missing = e.what(); }
  EXPECT_NE(missing.find("--product-times t: no entry for the block product shape 5 x 13 x 5"),
            std::string::npos)
      << missing;
  // a run's own timing of one shape is taken as it is (its mean); the other three are timed
  tessel::ShapeTimes run;
  run[{5, 13, 5}] = {2e-6, 4};
  run[{7, 7, 7}] = {1.0, 1};  // not a shape of these sizes: ignored
  int calls = 0;
  const tessel::KernelTimes m = measure_product_times(r, k, c, run, [&](int d, int n) {
    ++calls;
    EXPECT_EQ(n, 3);
    EXPECT_EQ(d, calls);
  });
  EXPECT_EQ(calls, 3);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(product_shapes(r, k, c).size(), 4u);
  EXPECT_DOUBLE_EQ(*m.find(5, 13, 5), 5e-7);
  EXPECT_EQ(m.find(7, 7, 7), nullptr);
  for (const auto& [shape, sec] : m.entries()) {
    EXPECT_GT(sec, 0.0);
    EXPECT_LT(sec, 1e-3);  // a 13^3 block product takes microseconds at most
  }
  EXPECT_NO_THROW(check_product_times(m, r, k, c, "measured"));
}

// tessel's p?gemm_ against Debian's ScaLAPACK on the same descriptors, where sub(A), sub(B),
// sub(C) are corners of larger matrices (offsets in the last block, M or N = 1), with source
// processes != 0, block sizes 1..7, descriptors of type 1 and type 2 (IMB != MB), on BLACS
// sub-grids 1x1, 2x2, 1x3, 2x3, 3x2 of one launch (those that fit), in all four precisions.
#include <gtest/gtest.h>

#include "pdgemm_test_util.hpp"
#include "tessel/scalapack/pdgemm.h"

using namespace pdgemm_test;

namespace {

struct Case {
  char ta, tb;
  int m, n, k;
  int ia, ja, ib, jb, ic, jc;
  int am, an, bm, bn, cm, cn;  // whole matrices
  int imb[3], inb[3], mb[3], nb[3], rsrc[3], csrc[3];
  bool type2;
  std::string str() const {
    return std::string(1, ta) + tb + " m n k " + std::to_string(m) + " " + std::to_string(n) + " " +
           std::to_string(k) + " ia ja " + std::to_string(ia) + " " + std::to_string(ja) +
           " ib jb " + std::to_string(ib) + " " + std::to_string(jb) + " ic jc " +
           std::to_string(ic) + " " + std::to_string(jc) + " C " + std::to_string(cm) + "x" +
           std::to_string(cn) + " mb " + std::to_string(mb[2]) + " imb " + std::to_string(imb[2]) +
           (type2 ? " type 2" : " type 1");
  }
};

template <class T>
void run(int ctxt, const Case& c, const char* sym, PgemmFn<T> mine, std::uint32_t seed,
         double tol) {
  auto ref = reference<T>(sym);
  ASSERT_NE(ref, nullptr) << sym;
  Local<T> A = make<T>(ctxt, c.am, c.an, c.imb[0], c.inb[0], c.mb[0], c.nb[0], c.rsrc[0], c.csrc[0],
                       c.type2, 1, seed);
  Local<T> B = make<T>(ctxt, c.bm, c.bn, c.imb[1], c.inb[1], c.mb[1], c.nb[1], c.rsrc[1], c.csrc[1],
                       c.type2, 0, seed + 1);
  Local<T> C1 = make<T>(ctxt, c.cm, c.cn, c.imb[2], c.inb[2], c.mb[2], c.nb[2], c.rsrc[2],
                        c.csrc[2], c.type2, 2, seed + 2);
  Local<T> C2 = C1;
  const T alpha = T(1.5), beta = (seed % 2) ? T(0) : T(-0.5);
  mine(&c.ta, &c.tb, &c.m, &c.n, &c.k, &alpha, A.data.data(), &c.ia, &c.ja, A.desc.data(),
       B.data.data(), &c.ib, &c.jb, B.desc.data(), &beta, C1.data.data(), &c.ic, &c.jc,
       C1.desc.data());
  ref(&c.ta, &c.tb, &c.m, &c.n, &c.k, &alpha, A.data.data(), &c.ia, &c.ja, A.desc.data(),
      B.data.data(), &c.ib, &c.jb, B.desc.data(), &beta, C2.data.data(), &c.ic, &c.jc,
      C2.desc.data());
  auto [err, nrm] = diff(C1.data, C2.data);
  EXPECT_LE(err, tol * std::max(1.0, nrm)) << sym << " " << c.str();
}

// The last block's first index (1-based) of a dimension of n with first block ib, blocks nb.
int last_block(int n, int ib, int nb) {
  if (n <= ib) return 1;
  return ib + ((n - ib - 1) / nb) * nb + 1;
}

// Random corner cases (the same on every process: one generator seeded alike).
Case draw(std::mt19937& g, int pr, int pc, bool type2) {
  Case c{};
  auto u = [&](int lo, int hi) {
    return lo + static_cast<int>(g() % static_cast<unsigned>(hi - lo + 1));
  };
  c.ta = u(0, 1) ? 'T' : 'N';
  c.tb = u(0, 1) ? 'T' : 'N';
  c.type2 = type2;
  for (int x = 0; x < 3; ++x) {
    c.mb[x] = u(1, 7);
    c.nb[x] = u(1, 7);
    c.imb[x] = type2 ? u(1, 7) : c.mb[x];
    c.inb[x] = type2 ? u(1, 7) : c.nb[x];
    c.rsrc[x] = u(0, pr - 1);
    c.csrc[x] = u(0, pc - 1);
  }
  // Whole matrices first, then offsets at 1, inside, or at the start of the last block.
  const int cm = u(1, 30), cn = u(1, 30);
  auto off = [&](int n, int ib, int nb) {
    switch (u(0, 2)) {
      case 0: return 1;
      case 1: return u(1, n);
      default: return last_block(n, ib, nb);
    }
  };
  c.cm = cm;
  c.cn = cn;
  c.ic = off(cm, c.imb[2], c.mb[2]);
  c.jc = off(cn, c.inb[2], c.nb[2]);
  c.m = u(0, 1) ? 1 : cm - c.ic + 1;
  c.n = u(0, 1) ? 1 : cn - c.jc + 1;
  c.k = u(0, 2) == 0 ? 1 : u(1, 12);
  // A holds op(A) = m x k at (ia, ja): room for the corner plus a few rows/cols beyond.
  const int ar = c.ta == 'N' ? c.m : c.k, ac = c.ta == 'N' ? c.k : c.m;
  const int br = c.tb == 'N' ? c.k : c.n, bc = c.tb == 'N' ? c.n : c.k;
  c.ia = u(1, 9);
  c.ja = u(1, 9);
  c.ib = u(1, 9);
  c.jb = u(1, 9);
  c.am = c.ia - 1 + ar + u(0, 1) * u(0, 5);
  c.an = c.ja - 1 + ac + u(0, 1) * u(0, 5);
  c.bm = c.ib - 1 + br + u(0, 1) * u(0, 5);
  c.bn = c.jb - 1 + bc + u(0, 1) * u(0, 5);
  return c;
}

// The shapes of issue 7: N,N M = N = 1, K = 31 in 47 x 47 matrices, MB = NB = 4; T,T M = N = K = 11.
std::vector<Case> issue_cases() {
  Case a{};
  a.ta = a.tb = 'N';
  a.m = a.n = 1;
  a.k = 31;
  a.ia = a.ja = a.ib = a.jb = a.ic = a.jc = 1;
  a.am = a.an = a.bm = a.bn = a.cm = a.cn = 47;
  for (int x = 0; x < 3; ++x) a.imb[x] = a.inb[x] = a.mb[x] = a.nb[x] = 4;
  Case b = a;
  b.ta = b.tb = 'T';
  b.m = b.n = b.k = 11;
  return {a, b};
}

template <class F>
void on_grids(F&& body) {
  int me, np;
  Cblacs_pinfo(&me, &np);
  const int grids[][2] = {{1, 1}, {2, 2}, {1, 3}, {2, 3}, {3, 2}, {1, 2}};
  for (auto& gsz : grids) {
    const int pr = gsz[0], pc = gsz[1];
    if (pr * pc > np) continue;
    int ctxt;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", pr, pc);
    body(ctxt, pr, pc);  // every process draws the same cases; only grid members run them
    if (ctxt >= 0) Cblacs_gridexit(ctxt);
  }
}

}  // namespace

TEST(PdgemmCorners, IssueShapesMatchScalapack) {
  on_grids([](int ctxt, int, int) {
    if (ctxt < 0) return;
    for (const Case& c : issue_cases()) run<double>(ctxt, c, "pdgemm_", &pdgemm_, 5, 1e-12);
  });
}

TEST(PdgemmCorners, SweepMatchesScalapack) {
  on_grids([](int ctxt, int pr, int pc) {
    std::mt19937 g(static_cast<unsigned>(pr * 10 + pc));
    for (int t = 0; t < 24; ++t) {
      const Case c = draw(g, pr, pc, t % 2 == 1);
      if (ctxt >= 0)
        run<double>(ctxt, c, "pdgemm_", &pdgemm_, static_cast<std::uint32_t>(t), 1e-12);
    }
  });
}

TEST(PdgemmCorners, AllPrecisionsMatchScalapack) {
  on_grids([](int ctxt, int pr, int pc) {
    std::mt19937 g(static_cast<unsigned>(pr * 100 + pc));
    for (int t = 0; t < 4; ++t) {
      const Case c = draw(g, pr, pc, t % 2 == 0);
      if (ctxt < 0) continue;
      const auto s = static_cast<std::uint32_t>(t);
      run<std::complex<double>>(ctxt, c, "pzgemm_", &pzgemm_, s, 1e-12);
      // Single precision: tessel rounds a double result once, ScaLAPACK accumulates in float.
      run<float>(ctxt, c, "psgemm_", &psgemm_, s, 2e-5);
      run<std::complex<float>>(ctxt, c, "pcgemm_", &pcgemm_, s, 2e-5);
    }
  });
}

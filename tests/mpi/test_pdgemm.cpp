// The pdgemm_ entry point against Debian's ScaLAPACK pdgemm_ on the same descriptors: grids
// of every shape that fits (including grids using fewer ranks), submatrix offsets, ops, alpha
// and beta. Debian's routine is found with dlsym in its own library, since this binary's
// pdgemm_ is tessel's.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tessel/scalapack/pdgemm.h"

extern "C" {
void Cblacs_pinfo(int* mypnum, int* nprocs);
void Cblacs_get(int ctxt, int what, int* val);
void Cblacs_gridinit(int* ctxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* irsrc, const int* icsrc, const int* ictxt, const int* lld, int* info);
}

using PdgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*,
                          const double*, const double*, const int*, const int*, const int*,
                          const double*, const int*, const int*, const int*, const double*, double*,
                          const int*, const int*, const int*);

namespace {

PdgemmFn reference_pdgemm() {
  static void* h = dlopen(TESSEL_SCALAPACK_SONAME, RTLD_NOW | RTLD_GLOBAL);
  if (!h) return nullptr;
  return reinterpret_cast<PdgemmFn>(dlsym(h, "pdgemm_"));
}

struct Local {
  int desc[9];
  std::vector<double> data;
};

// A global M x N matrix with entries f(i, j), distributed by the descriptor.
Local make(int ctxt, int M, int N, int mb, int nb, int rsrc, int csrc, std::uint32_t seed) {
  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  int lr = numroc_(&M, &mb, &myrow, &rsrc, &nprow), lc = numroc_(&N, &nb, &mycol, &csrc, &npcol);
  int lld = std::max(1, lr) + 2;  // padded leading dimension
  Local x;
  int info = 0;
  descinit_(x.desc, &M, &N, &mb, &nb, &rsrc, &csrc, &ctxt, &lld, &info);
  EXPECT_EQ(info, 0);
  x.data.assign(static_cast<std::size_t>(lld) * std::max(1, lc), -7.0);
  for (int jl = 0; jl < lc; ++jl)
    for (int il = 0; il < lr; ++il) {
      int gi = ((il / mb) * nprow + (nprow + myrow - rsrc) % nprow) * mb + il % mb;
      int gj = ((jl / nb) * npcol + (npcol + mycol - csrc) % npcol) * nb + jl % nb;
      std::mt19937 r(seed * 7919u + static_cast<std::uint32_t>(gi) * 131u +
                     static_cast<std::uint32_t>(gj));
      x.data[static_cast<std::size_t>(jl) * lld + il] =
          std::uniform_real_distribution<double>(-1, 1)(r);
    }
  return x;
}

}  // namespace

TEST(Pdgemm, MatchesScalapackOnTheSameDescriptors) {
  PdgemmFn ref = reference_pdgemm();
  if (!ref) GTEST_SKIP() << "cannot dlopen " << TESSEL_SCALAPACK_SONAME;
  int me, np;
  Cblacs_pinfo(&me, &np);
  std::mt19937 rng(3);
  int trial = 0;
  for (int pr = 1; pr <= np; ++pr)
    for (int pc = 1; pr * pc <= np; ++pc) {
      if (pr * pc < np - 1 && !(pr == 1 && pc == 1))
        continue;  // grids of np or np-1 ranks, and 1x1
      int ctxt;
      Cblacs_get(-1, 0, &ctxt);
      Cblacs_gridinit(&ctxt, "Row", pr, pc);
      for (int rep = 0; rep < 4; ++rep, ++trial) {
        const int m = 1 + rng() % 40, n = 1 + rng() % 40, k = 1 + rng() % 40;
        const char ta = (rng() % 2) ? 'T' : 'N', tb = (rng() % 2) ? 'T' : 'N';
        const int ia = 1 + rng() % 4, ja = 1 + rng() % 4, ib = 1 + rng() % 3, jb = 1 + rng() % 3;
        const int ic = 1 + rng() % 5, jc = 1 + rng() % 2;
        const int mb = 1 + rng() % 6, nb = 1 + rng() % 6;
        const double alpha = 1.5, beta = (rep % 2) ? 0.0 : -0.5;
        if (ctxt < 0) continue;  // this rank is outside the grid (all ranks draw the same numbers)
        const int am = (ta == 'N' ? m : k) + ia - 1, an = (ta == 'N' ? k : m) + ja - 1;
        const int bm = (tb == 'N' ? k : n) + ib - 1, bn = (tb == 'N' ? n : k) + jb - 1;
        const int cm = m + ic - 1 + 1, cn = n + jc - 1;
        Local A = make(ctxt, am, an, mb, nb, 0, pc - 1, 1 + trial);
        Local B = make(ctxt, bm, bn, nb, mb, pr - 1, 0, 2 + trial);
        Local C1 = make(ctxt, cm, cn, mb, mb, 0, 0, 3 + trial);
        Local C2 = C1;
        pdgemm_(&ta, &tb, &m, &n, &k, &alpha, A.data.data(), &ia, &ja, A.desc, B.data.data(), &ib,
                &jb, B.desc, &beta, C1.data.data(), &ic, &jc, C1.desc);
        ref(&ta, &tb, &m, &n, &k, &alpha, A.data.data(), &ia, &ja, A.desc, B.data.data(), &ib, &jb,
            B.desc, &beta, C2.data.data(), &ic, &jc, C2.desc);
        double err = 0, nrm = 0;
        for (std::size_t x = 0; x < C1.data.size(); ++x) {
          err = std::max(err, std::abs(C1.data[x] - C2.data[x]));
          nrm = std::max(nrm, std::abs(C2.data[x]));
        }
        EXPECT_LE(err, 1e-12 * std::max(1.0, nrm))
            << "grid " << pr << "x" << pc << " m n k " << m << " " << n << " " << k << " " << ta
            << tb << " ia ja " << ia << " " << ja << " ic jc " << ic << " " << jc;
      }
      if (ctxt >= 0) Cblacs_gridexit(ctxt);
    }
}

TEST(Pdgemm, BadDescriptorIsReportedAndCLeftAlone) {
  int me, np;
  Cblacs_pinfo(&me, &np);
  int ctxt;
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", 1, np);
  Local A = make(ctxt, 6, 6, 2, 2, 0, 0, 1), B = make(ctxt, 6, 6, 2, 2, 0, 0, 2),
        C = make(ctxt, 6, 6, 2, 2, 0, 0, 3);
  const std::vector<double> c0 = C.data;
  const int m = 6, n = 6, k = 6, one = 1, seven = 7;
  const double alpha = 1, beta = 0;
  // K = 6 starting at column 7 of A: outside A.
  EXPECT_NE(
      tessel_pdgemm("N", "N", &m, &n, &k, &alpha, A.data.data(), &one, &seven, A.desc,
                    B.data.data(), &one, &one, B.desc, &beta, C.data.data(), &one, &one, C.desc),
      0);
  EXPECT_EQ(C.data, c0);
  // An LLD too small on one process only: every process must report it.
  Local A2 = A;
  if (me == np - 1) A2.desc[8] = 0;
  EXPECT_NE(
      tessel_pdgemm("N", "N", &m, &n, &k, &alpha, A2.data.data(), &one, &one, A2.desc,
                    B.data.data(), &one, &one, B.desc, &beta, C.data.data(), &one, &one, C.desc),
      0);
  EXPECT_EQ(C.data, c0);
  // Block size 0.
  Local A3 = A;
  A3.desc[4] = 0;
  EXPECT_NE(
      tessel_pdgemm("N", "N", &m, &n, &k, &alpha, A3.data.data(), &one, &one, A3.desc,
                    B.data.data(), &one, &one, B.desc, &beta, C.data.data(), &one, &one, C.desc),
      0);
  EXPECT_EQ(C.data, c0);
  Cblacs_gridexit(ctxt);
}

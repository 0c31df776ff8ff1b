// Every illegal-argument code of pdgemm_ / pzgemm_, as PBLAS's own tester provokes them
// (PDCHKMAT in PBLAS/TESTING/pdblastst.f: each of IA, JA and the 11 descriptor entries set to
// -2, RSRC/CSRC out of the grid, LLD too small; plus TRANSA, TRANSB, M, N, K), reported
// through a replaced PB_Cabort (this binary's, as the tester's): tessel's code must equal
// Debian ScaLAPACK's for the same call, equal the tester's expected code, and leave C alone.
#include <gtest/gtest.h>
#include <mpi.h>

#include "pdgemm_test_util.hpp"
#include "tessel/scalapack/pdgemm.h"

using namespace pdgemm_test;

namespace {
int g_info = 0;  // the INFO of the last PB_Cabort on this process
int g_aborts = 0;
}  // namespace

// Replace ScaLAPACK's error handler and silence its messages, as PBLAS's tester does; both
// tessel and Debian's library resolve these names to this executable (ENABLE_EXPORTS).
extern "C" void PB_Cabort(int, const char*, int info) {
  g_info = info;
  ++g_aborts;
}
extern "C" void PB_Cwarn(int, int, const char*, const char*, ...) {}

namespace {

struct Args {
  char ta = 'N', tb = 'N';
  int m = 1, n = 1, k = 1, ia = 1, ja = 1, ib = 1, jb = 1, ic = 1, jc = 1;
  std::vector<int> da, db, dc;
};

// PDSETPBLAS: 2 x 2 matrices, 1 x 1 blocks, LLD 2, M = N = K = 1.
Args base(int ctxt, bool type2) {
  Args a;
  std::vector<int> d2 = {2, ctxt, 2, 2, 1, 1, 1, 1, 0, 0, 2};
  std::vector<int> d1 = {1, ctxt, 2, 2, 1, 1, 0, 0, 2};
  a.da = a.db = a.dc = type2 ? d2 : d1;
  return a;
}

// INFO reported by `f` for `x` through PB_Cabort (0 when none), with C checked unchanged.
template <class T>
int info_of(PgemmFn<T> f, const Args& x, bool* c_unchanged) {
  std::vector<T> A(4, T(1)), B(4, T(1)), C(4, T(1));
  const std::vector<T> c0 = C;
  const T alpha = T(2), beta = T(3);
  g_info = 0;
  f(&x.ta, &x.tb, &x.m, &x.n, &x.k, &alpha, A.data(), &x.ia, &x.ja, x.da.data(), B.data(), &x.ib,
    &x.jb, x.db.data(), &beta, C.data(), &x.ic, &x.jc, x.dc.data());
  if (c_unchanged) *c_unchanged = C == c0;
  return g_info;
}

// The tester's cases (PDOPTEE, PDDIMEE, PDCHKMAT for A at 7, B at 11, C at 16) with the
// code it expects. Entries are numbered as in a type-2 descriptor (PB_CargFtoC), so a type-1
// descriptor's entry e maps to that of its type-2 counterpart.
struct Probe {
  Args x;
  int expected;
  std::string what;
};

std::vector<Probe> probes(int ctxt, bool type2, int nprow, int npcol, int myrow, int mycol) {
  std::vector<Probe> v;
  auto add = [&](auto edit, int code, std::string what) {
    Args a = base(ctxt, type2);
    edit(a);
    v.push_back({a, code, what + (type2 ? " (type 2)" : " (type 1)")});
  };
  add([](Args& a) { a.ta = '/'; }, -1, "TRANSA");
  add([](Args& a) { a.tb = '/'; }, -2, "TRANSB");
  add([](Args& a) { a.m = -1; }, -3, "M");
  add([](Args& a) { a.n = -1; }, -4, "N");
  add([](Args& a) { a.k = -1; }, -5, "K");
  // Type-1 entry e (0-based) -> the type-2 entry ScaLAPACK reports: a type-1 MB, NB becomes
  // both IMB and MB (INB and NB), and IMB (INB) is checked first.
  const int t1_to_t2[] = {0, 1, 2, 3, 4, 5, 8, 9, 10};
  struct Mat {
    int pos;  // argument position of the matrix (A 7, B 11, C 16)
    std::vector<int> Args::*d;
    int Args::*i;
    int Args::*j;
  };
  const Mat mats[] = {{7, &Args::da, &Args::ia, &Args::ja},
                      {11, &Args::db, &Args::ib, &Args::jb},
                      {16, &Args::dc, &Args::ic, &Args::jc}};
  for (const Mat& mt : mats) {
    const std::string nm(1, mt.pos == 7 ? 'A' : (mt.pos == 11 ? 'B' : 'C'));
    add([&](Args& a) { a.*(mt.i) = -1; }, -(mt.pos + 1), "I" + nm);
    add([&](Args& a) { a.*(mt.j) = -1; }, -(mt.pos + 2), "J" + nm);
    const int len = type2 ? 11 : 9;
    for (int e = 0; e < len; ++e) {
      const int e2 = type2 ? e : t1_to_t2[e];
      int code = -((mt.pos + 3) * 100 + e2 + 1);
      // An invalid context in the first descriptor: no grid at all (pdgemm_.c: -(1001 + CTXT_)).
      if (mt.pos == 7 && e2 == 1) code = -1002;
      add([&](Args& a) { (a.*(mt.d))[static_cast<std::size_t>(e)] = -2; }, code,
          "desc" + nm + "[" + std::to_string(e) + "] = -2");
      if (e2 == 8 || e2 == 9 || e2 == 10) {
        add(
            [&](Args& a) {
              auto& d = a.*(mt.d);
              if (e2 == 8) d[static_cast<std::size_t>(e)] = nprow;
              if (e2 == 9) d[static_cast<std::size_t>(e)] = npcol;
              if (e2 == 10) d[static_cast<std::size_t>(e)] = (myrow == 0 && mycol == 0) ? 1 : 0;
            },
            -((mt.pos + 3) * 100 + e2 + 1),
            "desc" + nm + " entry " + std::to_string(e2 + 1) + " out of range");
      }
    }
  }
  return v;
}

template <class T>
void check_all(const char* sym, PgemmFn<T> mine) {
  auto ref = reference<T>(sym);
  ASSERT_NE(ref, nullptr);
  int me, np;
  Cblacs_pinfo(&me, &np);
  const int shapes[][2] = {{1, np}, {2, np / 2}};  // the tester's 1 x NPROCS grid, and 2 x P/2
  for (auto& s : shapes) {
    if (s[1] < 1 || s[0] * s[1] > np || (s[0] == 2 && np < 4)) continue;
    int ctxt;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", s[0], s[1]);
    MPI_Comm grid;  // the grid's processes, to check that some process reported the code
    MPI_Comm_split(MPI_COMM_WORLD, ctxt >= 0 ? 0 : MPI_UNDEFINED, me, &grid);
    if (ctxt < 0) continue;
    int nprow, npcol, myrow, mycol;
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
    for (bool type2 : {false, true}) {
      const std::vector<Probe> ps = probes(ctxt, type2, nprow, npcol, myrow, mycol);
      std::vector<int> hit(ps.size(), 0);
      for (std::size_t i = 0; i < ps.size(); ++i) {
        const Probe& p = ps[i];
        bool unchanged = false;
        const int theirs = info_of<T>(ref, p.x, nullptr);
        const int ours = info_of<T>(mine, p.x, &unchanged);
        // The same code as ScaLAPACK on every process (0 where ScaLAPACK finds nothing: a
        // leading dimension is checked against the process's own rows).
        EXPECT_EQ(ours, theirs) << sym << " " << p.what << " grid " << nprow << "x" << npcol
                                << " process {" << myrow << "," << mycol << "}";
        hit[i] = ours == p.expected;
        EXPECT_TRUE(unchanged) << sym << " " << p.what;
      }
      // As PBLAS's tester (PCHKPBE): the expected code on at least one process of the grid.
      MPI_Allreduce(MPI_IN_PLACE, hit.data(), static_cast<int>(hit.size()), MPI_INT, MPI_MAX, grid);
      for (std::size_t i = 0; i < ps.size(); ++i)
        EXPECT_EQ(hit[i], 1) << sym << " " << ps[i].what << ": no process reported "
                             << ps[i].expected;
    }
    // A legal call reports nothing.
    bool unchanged = true;
    EXPECT_EQ(info_of<T>(mine, base(ctxt, true), &unchanged), 0);
    Cblacs_gridexit(ctxt);
    MPI_Comm_free(&grid);
  }
}

}  // namespace

TEST(PdgemmErrors, EveryCodeAsScalapackReportsIt) {
  const int before = g_aborts;
  check_all<double>("pdgemm_", &pdgemm_);
  EXPECT_GT(g_aborts, before);
}

TEST(PdgemmErrors, ComplexToo) { check_all<std::complex<double>>("pzgemm_", &pzgemm_); }

TEST(PdgemmErrors, ReturnedByTesselEntryPoints) {
  int ctxt;
  int me, np;
  Cblacs_pinfo(&me, &np);
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", 1, np);
  Args x = base(ctxt, true);
  x.db[6] = 0;  // MB of B
  std::vector<double> A(4, 1), B(4, 1), C(4, 1);
  const double alpha = 1, beta = 0;
  g_aborts = 0;
  EXPECT_EQ(tessel_pdgemm(&x.ta, &x.tb, &x.m, &x.n, &x.k, &alpha, A.data(), &x.ia, &x.ja,
                          x.da.data(), B.data(), &x.ib, &x.jb, x.db.data(), &beta, C.data(), &x.ic,
                          &x.jc, x.dc.data()),
            -1407);
  EXPECT_EQ(g_aborts, 0);  // tessel_p?gemm return INFO instead of calling PB_Cabort
  EXPECT_EQ(C, std::vector<double>(4, 1));
  Cblacs_gridexit(ctxt);
}

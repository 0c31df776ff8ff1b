// ScaLAPACK-compatible entry points: descriptors -> layouts and views of the caller's storage
// (no copy) -> tessel::dense::multiply on the BLACS grid's ranks.
#include "tessel/scalapack/pdgemm.h"

#include <mpi.h>

#include <cstdio>
#include <vector>

#include "tessel/scalapack/pgemm.hpp"

extern "C" {
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_get(int ctxt, int what, int* val);
int Cblacs_pnum(int ctxt, int prow, int pcol);
MPI_Comm Cblacs2sys_handle(int sysctxt);
}

namespace tessel::scalapack {
namespace {

enum Desc { DTYPE = 0, CTXT, M, N, MB, NB, RSRC, CSRC, LLD };

// Rank-local numroc: rows/cols of a block-cyclic dimension held by process `iproc`.
std::int64_t numroc(std::int64_t n, std::int64_t nb, int iproc, int isrc, int nprocs) {
  const int mydist = (nprocs + iproc - isrc) % nprocs;
  const std::int64_t nblocks = n / nb;
  std::int64_t num = (nblocks / nprocs) * nb;
  const std::int64_t extra = nblocks % nprocs;
  if (mydist < extra) num += nb;
  else if (mydist == extra) num += n % nb;
  return num;
}

// The submatrix (i0, j0) of size rows x cols of the matrix described by `d` on the grid.
layout::Layout sub_layout(const char* name, const int* d, int nprow, int npcol, int p, int ctxt,
                          int i, int j, std::int64_t rows, std::int64_t cols) {
  TESSEL_CHECK(d[DTYPE] == 1, LayoutMismatch, "desc", name, "[0] (DTYPE) = ", d[DTYPE],
               ", expected 1 (block-cyclic 2D)");
  TESSEL_CHECK(d[CTXT] == ctxt, LayoutMismatch, "desc", name, "[1] (CTXT) = ", d[CTXT],
               ", expected the same BLACS context as descA (", ctxt, ")");
  TESSEL_CHECK(d[M] >= 0 && d[N] >= 0, DimensionMismatch, "desc", name, " is ", d[M], " x ", d[N],
               ": sizes must be >= 0");
  TESSEL_CHECK(d[MB] >= 1 && d[NB] >= 1, LayoutMismatch, "desc", name, " block size ", d[MB], " x ",
               d[NB], ": expected >= 1");
  TESSEL_CHECK(d[RSRC] >= 0 && d[RSRC] < nprow && d[CSRC] >= 0 && d[CSRC] < npcol, LayoutMismatch,
               "desc", name, " source process (", d[RSRC], ", ", d[CSRC], ") outside the ", nprow,
               " x ", npcol, " grid");
  TESSEL_CHECK(i >= 1 && j >= 1, DimensionMismatch, "I", name, " = ", i, ", J", name, " = ", j,
               ": expected >= 1");
  TESSEL_CHECK(rows == 0 || cols == 0 || (i - 1 + rows <= d[M] && j - 1 + cols <= d[N]),
               DimensionMismatch, "sub(", name, ") = ", name, "(", i, ":", i - 1 + rows, ", ", j, ":",
               j - 1 + cols, ") exceeds the ", d[M], " x ", d[N], " matrix of desc", name);
  auto full = layout::Layout::block_cyclic(d[M], d[N], d[MB], d[NB], nprow, npcol, d[RSRC], d[CSRC], p);
  if (rows == 0 || cols == 0) return full.sub(0, 0, rows, cols);
  return full.sub(i - 1, j - 1, rows, cols);
}

}  // namespace

template <class T>
int pgemm(const char* routine, const char* transa, const char* transb, const int* m, const int* n,
          const int* k, const T* alpha, const T* a, const int* ia, const int* ja, const int* desca,
          const T* b, const int* ib, const int* jb, const int* descb, const T* beta, T* c,
          const int* ic, const int* jc, const int* descc, const dense::MultiplyOptions& opt,
          CommLedger* ledger, dense::MultiplyReport* report) {
  const int ctxt = desca[CTXT];
  int nprow = -1, npcol = -1, myrow = -1, mycol = -1;
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  if (myrow < 0 || myrow >= nprow || mycol < 0 || mycol >= npcol) return 0;  // not in this grid
  int sysctxt = 0;
  Cblacs_get(ctxt, 10, &sysctxt);
  std::vector<int> ranks(static_cast<std::size_t>(nprow) * npcol);
  for (int r = 0; r < nprow; ++r)
    for (int q = 0; q < npcol; ++q) ranks[static_cast<std::size_t>(r) * npcol + q] = Cblacs_pnum(ctxt, r, q);
  // The grid's own communicator: rank r * npcol + q is grid position (r, q).
  comm::Comm grid = comm::Comm::create_group(Cblacs2sys_handle(sysctxt), ranks, nullptr);
  CommLedger scratch;
  Context ctx(grid.raw(), ledger ? *ledger : scratch);
  const int p = ctx.size();
  try {
    dense::Op opa{}, opb{};
    layout::Layout la, lb, lc;
    ctx.agree([&] {
      opa = dense::parse_op(std::string(1, *transa));
      opb = dense::parse_op(std::string(1, *transb));
      TESSEL_CHECK(*m >= 0 && *n >= 0 && *k >= 0, DimensionMismatch, routine, ": M = ", *m, ", N = ", *n,
                   ", K = ", *k, ": expected >= 0");
      const bool at = opa != dense::Op::N, bt = opb != dense::Op::N;
      la = sub_layout("A", desca, nprow, npcol, p, ctxt, *ia, *ja, at ? *k : *m, at ? *m : *k);
      lb = sub_layout("B", descb, nprow, npcol, p, ctxt, *ib, *jb, bt ? *n : *k, bt ? *k : *n);
      lc = sub_layout("C", descc, nprow, npcol, p, ctxt, *ic, *jc, *m, *n);
      for (auto [nm, d] : {std::pair<const char*, const int*>{"A", desca}, {"B", descb}, {"C", descc}}) {
        const std::int64_t need = std::max<std::int64_t>(1, numroc(d[M], d[MB], myrow, d[RSRC], nprow));
        TESSEL_CHECK(d[LLD] >= need, LayoutMismatch, "desc", nm, "[8] (LLD) = ", d[LLD],
                     " on process (", myrow, ", ", mycol, "), expected >= ", need);
      }
    });
    const int me = ctx.rank();
    auto A = dense::DistMatrix<T>::view(la, me, const_cast<T*>(a), desca[LLD]);
    auto B = dense::DistMatrix<T>::view(lb, me, const_cast<T*>(b), descb[LLD]);
    auto C = dense::DistMatrix<T>::view(lc, me, c, descc[LLD]);
    auto rep = dense::multiply(ctx, *alpha, opa, A, opb, B, *beta, C, opt);
    if (report) *report = rep;
    return 0;
  } catch (const tessel::Error& e) {
    if (myrow == 0 && mycol == 0) std::fprintf(stderr, "%s: %s\n", routine, e.what());
    return 1;
  }
}

#define TESSEL_PGEMM(T)                                                                          \
  template int pgemm<T>(const char*, const char*, const char*, const int*, const int*, const int*, \
                        const T*, const T*, const int*, const int*, const int*, const T*,          \
                        const int*, const int*, const int*, const T*, T*, const int*, const int*,  \
                        const int*, const dense::MultiplyOptions&, CommLedger*,                    \
                        dense::MultiplyReport*);
TESSEL_PGEMM(double)
TESSEL_PGEMM(std::complex<double>)
#undef TESSEL_PGEMM

}  // namespace tessel::scalapack

using tessel::scalapack::pgemm;

extern "C" {

int tessel_pdgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                  const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
                  const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
                  double* c, const int* ic, const int* jc, const int* descc) {
  return pgemm<double>("tessel_pdgemm", transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb,
                       descb, beta, c, ic, jc, descc);
}

int tessel_pzgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                  const tessel_dcomplex* alpha, const tessel_dcomplex* a, const int* ia, const int* ja,
                  const int* desca, const tessel_dcomplex* b, const int* ib, const int* jb,
                  const int* descb, const tessel_dcomplex* beta, tessel_dcomplex* c, const int* ic,
                  const int* jc, const int* descc) {
  return pgemm<std::complex<double>>("tessel_pzgemm", transa, transb, m, n, k, alpha, a, ia, ja, desca,
                                     b, ib, jb, descb, beta, c, ic, jc, descc);
}

void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
             const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
             double* c, const int* ic, const int* jc, const int* descc) {
  pgemm<double>("PDGEMM (tessel)", transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb,
                beta, c, ic, jc, descc);
}

void pzgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const tessel_dcomplex* alpha, const tessel_dcomplex* a, const int* ia, const int* ja,
             const int* desca, const tessel_dcomplex* b, const int* ib, const int* jb, const int* descb,
             const tessel_dcomplex* beta, tessel_dcomplex* c, const int* ic, const int* jc,
             const int* descc) {
  pgemm<std::complex<double>>("PZGEMM (tessel)", transa, transb, m, n, k, alpha, a, ia, ja, desca, b,
                              ib, jb, descb, beta, c, ic, jc, descc);
}

}  // extern "C"

#pragma once
/// @file pgemm.hpp
/// The C++ form of tessel's ScaLAPACK-compatible multiply (what p?gemm_ call), with the
/// options and the ledger a C++ caller may want to pass. Descriptors of type 1 (9 integers)
/// and type 2 (11 integers, BLOCK_CYCLIC_2D_INB: a first block IMB x INB) are accepted.
#include <complex>

#include "tessel/core/ledger.hpp"
#include "tessel/dense/multiply.hpp"

namespace tessel::scalapack {

/// A p?gemm call after PBLAS's PB_CargFtoC: 0-based offsets and 11-entry descriptors.
struct Call {
  const char* transa = "N";
  const char* transb = "N";
  int m = 0, n = 0, k = 0;
  int ai = 0, aj = 0, bi = 0, bj = 0, ci = 0, cj = 0;
  int ad[11] = {}, bd[11] = {}, cd[11] = {};
};

/// Not collective. The Fortran arguments of p?gemm_ as a Call (descriptor type 1 or 2).
Call make_call(const char* transa, const char* transb, const int* m, const int* n, const int* k,
               const int* ia, const int* ja, const int* desca, const int* ib, const int* jb,
               const int* descb, const int* ic, const int* jc, const int* descc);

/// Not collective. ScaLAPACK's checks of pdgemm_ (PBLAS's own PB_Cchkmat, in its order) on
/// this process: 0, -i for argument i, or -(100 i + j) for entry j of the descriptor in
/// argument i (entries numbered as in a type-2 descriptor); -1002 for an invalid context.
/// Each problem is printed by PBLAS's PB_Cwarn under the routine name `rout`.
int check_arguments(const char* rout, const Call& x);

/// True when a descriptor has RSRC or CSRC = -1 (a matrix replicated over process rows or
/// columns), which tessel's layouts do not express: the entry points hand such calls to
/// ScaLAPACK's own routine.
bool replicated(const Call& x);

/// How an illegal argument is reported: Pblas calls PB_Cabort(ICTXT, rout, INFO) as ScaLAPACK
/// does (which aborts the program unless the application replaced it); Return only returns INFO.
enum class ErrorMode { Pblas, Return };

/// Collective over the BLACS grid of desca's context. C = alpha op(A) op(B) + beta C on the
/// caller's block-cyclic storage. Returns 0; or, with C unchanged on every grid process, the
/// ScaLAPACK INFO of this process (or of the first process that found one); or 1 after
/// printing (every failing process) when tessel cannot run arguments ScaLAPACK accepts
/// (with ErrorMode::Pblas the program is then aborted with Cblacs_abort). float and
/// complex<float> are computed in double and rounded once at the end. Records traffic into
/// `ledger` when given.
template <class T>
int pgemm(const char* rout, const Call& x, const T* alpha, const T* a, const T* b, const T* beta,
          T* c, ErrorMode mode, const dense::MultiplyOptions& opt = {},
          CommLedger* ledger = nullptr, dense::MultiplyReport* report = nullptr);

/// As above with pdgemm_'s own arguments (1-based offsets, 9- or 11-integer descriptors);
/// errors are returned, not passed to PB_Cabort.
template <class T>
int pgemm(const char* rout, const char* transa, const char* transb, const int* m, const int* n,
          const int* k, const T* alpha, const T* a, const int* ia, const int* ja, const int* desca,
          const T* b, const int* ib, const int* jb, const int* descb, const T* beta, T* c,
          const int* ic, const int* jc, const int* descc, const dense::MultiplyOptions& opt = {},
          CommLedger* ledger = nullptr, dense::MultiplyReport* report = nullptr) {
  const Call x = make_call(transa, transb, m, n, k, ia, ja, desca, ib, jb, descb, ic, jc, descc);
  return pgemm<T>(rout, x, alpha, a, b, beta, c, ErrorMode::Return, opt, ledger, report);
}

}  // namespace tessel::scalapack

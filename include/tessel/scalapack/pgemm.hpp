#pragma once
/// @file pgemm.hpp
/// The C++ form of tessel's ScaLAPACK-compatible multiply (what pdgemm_/pzgemm_ call), with
/// the options and the ledger a C++ caller may want to pass.
#include "tessel/core/ledger.hpp"
#include "tessel/dense/multiply.hpp"

namespace tessel::scalapack {

/// Collective over the BLACS grid of desca's context; ScaLAPACK's arguments (1-based offsets,
/// 9-integer descriptors). Records traffic into `ledger` when given. Returns 0, or 1 after
/// printing the error once (grid process (0, 0)) with C unchanged.
template <class T>
int pgemm(const char* routine, const char* transa, const char* transb, const int* m, const int* n,
          const int* k, const T* alpha, const T* a, const int* ia, const int* ja, const int* desca,
          const T* b, const int* ib, const int* jb, const int* descb, const T* beta, T* c,
          const int* ic, const int* jc, const int* descc, const dense::MultiplyOptions& opt = {},
          CommLedger* ledger = nullptr, dense::MultiplyReport* report = nullptr);

}  // namespace tessel::scalapack

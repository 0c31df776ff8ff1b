#pragma once
// Private: the few BLAS/LAPACK calls of the stencil eigensolver (column-major, Fortran ABI).
extern "C" {
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*,
            const double*, const int*, const double*, const int*, const double*, double*,
            const int*);
void dtrsm_(const char*, const char*, const char*, const char*, const int*, const int*,
            const double*, const double*, const int*, double*, const int*);
void dpotrf_(const char*, const int*, double*, const int*, int*);
void dsyev_(const char*, const char*, const int*, double*, const int*, double*, double*, const int*,
            int*);
}

/* tessel's ScaLAPACK-compatible multiply entry points (library tessel_scalapack).
 *
 * pdgemm_ / pzgemm_ have the exact ScaLAPACK argument lists (Fortran calling convention:
 * every argument by pointer, 1-based IA/JA, 9-integer descriptors). Link
 * -ltessel_scalapack ahead of -lscalapack-<mpi> and existing codes run tessel's multiply
 * unchanged. tessel_pdgemm / tessel_pzgemm are the same calls under tessel's own names.
 *
 * Collective over the BLACS grid of the descriptors' context. Errors (bad descriptors,
 * inconsistent sizes) are detected on every grid rank together; the message is printed
 * once by grid rank (0, 0), as ScaLAPACK's PXERBLA does, and C is left unchanged. */
#ifndef TESSEL_SCALAPACK_PDGEMM_H
#define TESSEL_SCALAPACK_PDGEMM_H

#ifdef __cplusplus
#include <complex>
typedef std::complex<double> tessel_dcomplex;
extern "C" {
#else
#include <complex.h>
typedef double _Complex tessel_dcomplex;
#endif

void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const double* alpha, const double* a, const int* ia, const int* ja,
             const int* desca, const double* b, const int* ib, const int* jb, const int* descb,
             const double* beta, double* c, const int* ic, const int* jc, const int* descc);
void pzgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const tessel_dcomplex* alpha, const tessel_dcomplex* a, const int* ia,
             const int* ja, const int* desca, const tessel_dcomplex* b, const int* ib,
             const int* jb, const int* descb, const tessel_dcomplex* beta, tessel_dcomplex* c,
             const int* ic, const int* jc, const int* descc);

/* Same arguments as pdgemm_ / pzgemm_. Returns 0, or a nonzero value after printing the
 * error (once per grid) when the arguments are invalid. */
int tessel_pdgemm(const char* transa, const char* transb, const int* m, const int* n,
                  const int* k, const double* alpha, const double* a, const int* ia,
                  const int* ja, const int* desca, const double* b, const int* ib,
                  const int* jb, const int* descb, const double* beta, double* c, const int* ic,
                  const int* jc, const int* descc);
int tessel_pzgemm(const char* transa, const char* transb, const int* m, const int* n,
                  const int* k, const tessel_dcomplex* alpha, const tessel_dcomplex* a,
                  const int* ia, const int* ja, const int* desca, const tessel_dcomplex* b,
                  const int* ib, const int* jb, const int* descb, const tessel_dcomplex* beta,
                  tessel_dcomplex* c, const int* ic, const int* jc, const int* descc);

#ifdef __cplusplus
}
#endif
#endif

/* tessel's ScaLAPACK-compatible multiply entry points (library tessel_scalapack).
 *
 * psgemm_ / pdgemm_ / pcgemm_ / pzgemm_ have the exact ScaLAPACK argument lists (Fortran
 * calling convention: every argument by pointer, 1-based IA/JA, descriptors of type 1
 * (9 integers) or type 2 (11 integers, BLOCK_CYCLIC_2D_INB)). Link -ltessel_scalapack ahead
 * of -lscalapack-<mpi>, or preload libtessel_scalapack.so, and existing codes run tessel's
 * multiply unchanged. Single precision is computed in double and rounded once (docs/scalapack.md).
 *
 * Collective over the BLACS grid of the descriptors' context. Illegal arguments are found
 * with ScaLAPACK's own checks and reported as ScaLAPACK does: PB_Cwarn prints each problem,
 * then PB_Cabort(ICTXT, "PDGEMM", INFO) with INFO = -i (argument i) or -(100 i + j) (entry j of
 * the descriptor in argument i); PB_Cabort aborts unless the application replaced it, and then
 * C is left unchanged on every grid process. tessel_p?gemm are the same calls returning INFO
 * (0 on success) instead of calling PB_Cabort. */
#ifndef TESSEL_SCALAPACK_PDGEMM_H
#define TESSEL_SCALAPACK_PDGEMM_H

#ifdef __cplusplus
#include <complex>
typedef std::complex<double> tessel_dcomplex;
typedef std::complex<float> tessel_scomplex;
extern "C" {
#else
#include <complex.h>
typedef double _Complex tessel_dcomplex;
typedef float _Complex tessel_scomplex;
#endif

#define TESSEL_PGEMM_ARGS(T)                                                                  \
  const char *transa, const char *transb, const int *m, const int *n, const int *k,           \
      const T *alpha, const T *a, const int *ia, const int *ja, const int *desca, const T *b, \
      const int *ib, const int *jb, const int *descb, const T *beta, T *c, const int *ic,     \
      const int *jc, const int *descc

void psgemm_(TESSEL_PGEMM_ARGS(float));
void pdgemm_(TESSEL_PGEMM_ARGS(double));
void pcgemm_(TESSEL_PGEMM_ARGS(tessel_scomplex));
void pzgemm_(TESSEL_PGEMM_ARGS(tessel_dcomplex));

/* Same arguments; return 0, or ScaLAPACK's INFO (< 0) after PB_Cwarn printed the problem. */
int tessel_psgemm(TESSEL_PGEMM_ARGS(float));
int tessel_pdgemm(TESSEL_PGEMM_ARGS(double));
int tessel_pcgemm(TESSEL_PGEMM_ARGS(tessel_scomplex));
int tessel_pzgemm(TESSEL_PGEMM_ARGS(tessel_dcomplex));

#undef TESSEL_PGEMM_ARGS

#ifdef __cplusplus
}
#endif
#endif

/* ntpoly_count.c — counts what NTPoly does, for bench/ntpoly_density.f90 (issue 9's peer).
 *
 * NTPoly has no counter of its own. libNTPoly.so (built shared by bench/peers/build_ntpoly.sh)
 * calls its module procedures across modules through the PLT, so the executable that defines a
 * function of the same mangled name sees every call first and forwards it with
 * dlsym(RTLD_NEXT, ...):
 *   __psmatrixalgebramodule_MOD_matrixmultiply_ps   one distributed matrix product
 *   __convergencemonitor_MOD_appendvalue      one iteration of an iterative solver
 * (gfortran's names for PSMatrixAlgebraModule::MatrixMultiply_ps and
 * ConvergenceMonitor::AppendValue of NTPoly 3.1; arguments by reference, an absent
 * OPTIONAL argument as a null pointer). ntpoly_counts(mult, iter) reads the counters, and
 * ntpoly_counts_reset() zeroes them (both callable from Fortran through BIND(C)).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static long n_mult = 0, n_iter = 0;

typedef void (*mult_fn)(void*, void*, void*, void*, void*, void*, void*);
typedef void (*append_fn)(void*, void*);

static void* next_symbol(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (!f) {
    fprintf(stderr, "ntpoly_count: %s not found in libNTPoly (not NTPoly 3.1?)\n", name);
    abort();
  }
  return f;
}

void __psmatrixalgebramodule_MOD_matrixmultiply_ps(void* a, void* b, void* c, void* alpha, void* beta,
                                                     void* threshold, void* pool) {
  static mult_fn real = 0;
  if (!real) real = (mult_fn)next_symbol("__psmatrixalgebramodule_MOD_matrixmultiply_ps");
  ++n_mult;
  real(a, b, c, alpha, beta, threshold, pool);
}

void __convergencemonitor_MOD_appendvalue(void* monitor, void* value) {
  static append_fn real = 0;
  if (!real) real = (append_fn)next_symbol("__convergencemonitor_MOD_appendvalue");
  ++n_iter;
  real(monitor, value);
}

void ntpoly_counts(long* mult, long* iter) {
  *mult = n_mult;
  *iter = n_iter;
}

void ntpoly_counts_reset(void) { n_mult = 0; n_iter = 0; }

// The extern "C" entry points psgemm_, pdgemm_, pcgemm_, pzgemm_ (ScaLAPACK's argument lists)
// and tessel_p?gemm (the same, returning INFO): calls with replicated descriptors go to
// ScaLAPACK's own routine, every other call to scalapack::pgemm.
#include "tessel/scalapack/pdgemm.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tessel/scalapack/pgemm.hpp"

extern "C" void Cblacs_abort(int ctxt, int errorno);

namespace tessel::scalapack {
namespace {

template <class T>
using Fn = void (*)(const char*, const char*, const int*, const int*, const int*, const T*,
                    const T*, const int*, const int*, const int*, const T*, const int*, const int*,
                    const int*, const T*, T*, const int*, const int*, const int*);

// ScaLAPACK's own routine `sym`: the next definition after this library (the library
// linked or preloaded after tessel_scalapack), else the one in ScaLAPACK's shared object.
template <class T>
Fn<T> scalapack_routine(const char* sym) {
  void* f = dlsym(RTLD_NEXT, sym);
  if (!f) {
    if (void* h = dlopen(TESSEL_SCALAPACK_SONAME, RTLD_NOW | RTLD_GLOBAL)) f = dlsym(h, sym);
  }
  return reinterpret_cast<Fn<T>>(f);
}

// The one process-boundary exception to "the library reads no environment"
// (docs/architecture.md, layer 1): these drop-in entry points are called from Fortran programs
// with ScaLAPACK's arguments only, so the environment is their one channel for options. The
// planner's machine model: the file named by TESSEL_MACHINE, else the defaults (as the `tessel`
// command reads it in apps/ and passes it on). Throws tessel::Error for a bad file.
dense::MultiplyOptions options_from_environment() {
  dense::MultiplyOptions opt;
  const char* file = std::getenv("TESSEL_MACHINE");
  opt.machine = dense::resolve_machine_model({}, file ? file : "");
  if (file && *file) opt.machine.source = std::string("TESSEL_MACHINE=") + file;
  return opt;
}

template <class T>
int entry(const char* rout, const char* sym, ErrorMode mode, const char* transa, const char* transb,
          const int* m, const int* n, const int* k, const T* alpha, const T* a, const int* ia,
          const int* ja, const int* desca, const T* b, const int* ib, const int* jb,
          const int* descb, const T* beta, T* c, const int* ic, const int* jc, const int* descc) {
  const Call x = make_call(transa, transb, m, n, k, ia, ja, desca, ib, jb, descb, ic, jc, descc);
  if (replicated(x)) {
    if (Fn<T> f = scalapack_routine<T>(sym)) {
      f(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc);
      return 0;
    }
  }
  dense::MultiplyOptions opt;
  try {
    opt = options_from_environment();
  } catch (const tessel::Error& e) {
    std::fprintf(stderr, "%s (tessel): %s\n", rout, e.what());
    if (mode == ErrorMode::Pblas) Cblacs_abort(desca[1], 1);
    return 1;
  }
  return pgemm<T>(rout, x, alpha, a, b, beta, c, mode, opt);
}

}  // namespace
}  // namespace tessel::scalapack

using tessel::scalapack::entry;
using tessel::scalapack::ErrorMode;
using scomplex = std::complex<float>;

#define TESSEL_ENTRY(T, ROUT, SYM, MODE)                                                        \
  entry<T>(ROUT, SYM, MODE, transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, \
           beta, c, ic, jc, descc)
#define TESSEL_ARGS(T)                                                                        \
  const char *transa, const char *transb, const int *m, const int *n, const int *k,           \
      const T *alpha, const T *a, const int *ia, const int *ja, const int *desca, const T *b, \
      const int *ib, const int *jb, const int *descb, const T *beta, T *c, const int *ic,     \
      const int *jc, const int *descc

extern "C" {

void psgemm_(TESSEL_ARGS(float)) { TESSEL_ENTRY(float, "PSGEMM", "psgemm_", ErrorMode::Pblas); }
void pdgemm_(TESSEL_ARGS(double)) { TESSEL_ENTRY(double, "PDGEMM", "pdgemm_", ErrorMode::Pblas); }
void pcgemm_(TESSEL_ARGS(tessel_scomplex)) {
  TESSEL_ENTRY(scomplex, "PCGEMM", "pcgemm_", ErrorMode::Pblas);
}
void pzgemm_(TESSEL_ARGS(tessel_dcomplex)) {
  TESSEL_ENTRY(tessel_dcomplex, "PZGEMM", "pzgemm_", ErrorMode::Pblas);
}

int tessel_psgemm(TESSEL_ARGS(float)) {
  return TESSEL_ENTRY(float, "TESSEL_PSGEMM", "psgemm_", ErrorMode::Return);
}
int tessel_pdgemm(TESSEL_ARGS(double)) {
  return TESSEL_ENTRY(double, "TESSEL_PDGEMM", "pdgemm_", ErrorMode::Return);
}
int tessel_pcgemm(TESSEL_ARGS(tessel_scomplex)) {
  return TESSEL_ENTRY(scomplex, "TESSEL_PCGEMM", "pcgemm_", ErrorMode::Return);
}
int tessel_pzgemm(TESSEL_ARGS(tessel_dcomplex)) {
  return TESSEL_ENTRY(tessel_dcomplex, "TESSEL_PZGEMM", "pzgemm_", ErrorMode::Return);
}

}  // extern "C"

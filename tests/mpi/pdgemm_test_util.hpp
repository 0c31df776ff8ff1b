// Test helpers for the p?gemm entry points: block-cyclic matrices with descriptors of type 1
// or 2 (first block IMB x INB), filled with values of their global indices, and Debian's
// ScaLAPACK routines found by dlsym in its own library (this binary's p?gemm_ are tessel's).
#pragma once
#include <dlfcn.h>

#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

extern "C" {
void Cblacs_pinfo(int* mypnum, int* nprocs);
void Cblacs_get(int ctxt, int what, int* val);
void Cblacs_gridinit(int* ctxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int ctxt);
}

namespace pdgemm_test {

template <class T>
using PgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const T*,
                         const T*, const int*, const int*, const int*, const T*, const int*,
                         const int*, const int*, const T*, T*, const int*, const int*, const int*);

/// Debian's ScaLAPACK routine `sym` (e.g. "pdgemm_"), or nullptr.
template <class T>
PgemmFn<T> reference(const char* sym) {
  static void* h = dlopen(TESSEL_SCALAPACK_SONAME, RTLD_NOW | RTLD_GLOBAL);
  return h ? reinterpret_cast<PgemmFn<T>>(dlsym(h, sym)) : nullptr;
}

/// One dimension of a block-cyclic distribution with a first block of `ib`: for every global
/// index, its process and local index; and the local extent of process `me`.
struct Dim {
  std::vector<int> proc;
  std::vector<int> local;
  int extent = 0;
  Dim(int n, int ib, int nb, int src, int nprocs, int me) {
    std::vector<int> count(static_cast<std::size_t>(nprocs), 0);
    int p = src;
    for (int b = 0; b < n;) {
      int len = std::min(b == 0 ? ib : nb, n - b);
      for (int i = 0; i < len; ++i) {
        proc.push_back(p);
        local.push_back(count[static_cast<std::size_t>(p)]++);
      }
      b += len;
      p = (p + 1) % nprocs;
    }
    extent = count[static_cast<std::size_t>(me)];
  }
};

template <class T>
T value(std::uint32_t seed, int i, int j) {
  std::mt19937 r(seed * 7919u + static_cast<std::uint32_t>(i) * 131u +
                 static_cast<std::uint32_t>(j));
  std::uniform_real_distribution<double> u(-1, 1);
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(u(r));
  else {
    double re = u(r), im = u(r);
    return T(static_cast<typename T::value_type>(re), static_cast<typename T::value_type>(im));
  }
}

/// A global M x N matrix distributed by a descriptor (type 2 when `type2`, else type 1 with
/// imb = mb, inb = nb). The leading dimension is the local row count plus `pad`, or 1 on a
/// process holding no column (ScaLAPACK accepts that); padding holds -7.
template <class T>
struct Local {
  std::vector<int> desc;
  std::vector<T> data;
};

template <class T>
Local<T> make(int ctxt, int M, int N, int imb, int inb, int mb, int nb, int rsrc, int csrc,
              bool type2, int pad, std::uint32_t seed) {
  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  Dim r(M, imb, mb, rsrc, nprow, myrow), c(N, inb, nb, csrc, npcol, mycol);
  const int lld = c.extent == 0 ? 1 : std::max(1, r.extent) + pad;
  Local<T> x;
  if (type2)
    x.desc = {2, ctxt, M, N, imb, inb, mb, nb, rsrc, csrc, lld};
  else
    x.desc = {1, ctxt, M, N, mb, nb, rsrc, csrc, lld};
  x.data.assign(static_cast<std::size_t>(lld) * std::max(1, c.extent), T(-7));
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < M; ++i)
      if (r.proc[static_cast<std::size_t>(i)] == myrow &&
          c.proc[static_cast<std::size_t>(j)] == mycol)
        x.data[static_cast<std::size_t>(c.local[static_cast<std::size_t>(j)]) * lld +
               static_cast<std::size_t>(r.local[static_cast<std::size_t>(i)])] =
            value<T>(seed, i, j);
  return x;
}

/// max |x - y| and max |y| over two local arrays.
template <class T>
std::pair<double, double> diff(const std::vector<T>& x, const std::vector<T>& y) {
  double err = 0, nrm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    err = std::max(err, static_cast<double>(std::abs(x[i] - y[i])));
    nrm = std::max(nrm, static_cast<double>(std::abs(y[i])));
  }
  return {err, nrm};
}

}  // namespace pdgemm_test

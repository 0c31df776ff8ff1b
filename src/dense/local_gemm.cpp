#include "local_gemm.hpp"

#include <algorithm>
#include <climits>
#include <type_traits>

#include "tessel/core/error.hpp"

extern "C" {
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*,
            const double*, const int*, const double*, const int*, const double*, double*,
            const int*);
void zgemm_(const char*, const char*, const int*, const int*, const int*,
            const std::complex<double>*, const std::complex<double>*, const int*,
            const std::complex<double>*, const int*, const std::complex<double>*,
            std::complex<double>*, const int*);
}

namespace tessel::dense::kernels {
namespace {
int blas_int(std::int64_t v, const char* what) {
  return tessel::detail::checked_int(v, what, "the 32-bit BLAS integer range of local gemm");
}
void call(char ta, char tb, int m, int n, int k, double al, const double* a, int lda,
          const double* b, int ldb, double be, double* c, int ldc) {
  if (ta == 'C') ta = 'T';
  if (tb == 'C') tb = 'T';
  dgemm_(&ta, &tb, &m, &n, &k, &al, a, &lda, b, &ldb, &be, c, &ldc);
}
void call(char ta, char tb, int m, int n, int k, std::complex<double> al,
          const std::complex<double>* a, int lda, const std::complex<double>* b, int ldb,
          std::complex<double> be, std::complex<double>* c, int ldc) {
  zgemm_(&ta, &tb, &m, &n, &k, &al, a, &lda, b, &ldb, &be, c, &ldc);
}
}  // namespace

template <class T>
void gemm(ComputeMode mode, char opa, char opb, std::int64_t m, std::int64_t n, std::int64_t k,
          T alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
          std::int64_t ldc, const std::function<void()>& between, std::int64_t chunk) {
  if (m == 0 || n == 0) return;
  if (mode == ComputeMode::Skip) {
    sim::charge_flops((std::is_same_v<T, double> ? 2.0 : 8.0) * m * n * k);
    if (between) between();
    return;
  }
  if (k == 0) {  // BLAS would do this too, but make beta == 0 not read C explicitly
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        c[j * ldc + i] = (beta == T(0)) ? T(0) : beta * c[j * ldc + i];
    return;
  }
  if (chunk <= 0 || !between) chunk = n;
  for (std::int64_t j0 = 0; j0 < n; j0 += chunk) {
    std::int64_t nj = std::min(chunk, n - j0);
    const T* bj = (opb == 'N') ? b + j0 * ldb : b + j0;
    call(opa, opb, blas_int(m, "m"), blas_int(nj, "n"), blas_int(k, "k"), alpha, a,
         blas_int(std::max<std::int64_t>(1, lda), "lda"), bj,
         blas_int(std::max<std::int64_t>(1, ldb), "ldb"), beta, c + j0 * ldc,
         blas_int(std::max<std::int64_t>(1, ldc), "ldc"));
    if (between) between();
  }
}

template void gemm<double>(ComputeMode, char, char, std::int64_t, std::int64_t, std::int64_t,
                           double, const double*, std::int64_t, const double*, std::int64_t, double,
                           double*, std::int64_t, const std::function<void()>&, std::int64_t);
template void gemm<std::complex<double>>(ComputeMode, char, char, std::int64_t, std::int64_t,
                                         std::int64_t, std::complex<double>,
                                         const std::complex<double>*, std::int64_t,
                                         const std::complex<double>*, std::int64_t,
                                         std::complex<double>, std::complex<double>*, std::int64_t,
                                         const std::function<void()>&, std::int64_t);

}  // namespace tessel::dense::kernels

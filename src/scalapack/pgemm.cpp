// ScaLAPACK-compatible p?gemm, in pdgemm_.c's order: ScaLAPACK's own argument checks
// (PB_CargFtoC, PB_Cchkmat) -> agree on the grid -> ScaLAPACK's quick returns -> descriptors
// (type 1 or 2) to layouts and views of the caller's storage (no copy) -> dense::multiply.
#include "tessel/scalapack/pgemm.hpp"

#include <cctype>
#include <climits>
#include <cstdio>
#include <optional>
#include <type_traits>
#include <vector>

#include "blacs_pblas.hpp"

namespace tessel::scalapack {
namespace {

using namespace pblas;

// The arithmetic type tessel computes in: float data is widened to double (see docs/scalapack.md).
template <class T>
struct Wide {
  using type = T;
};
template <>
struct Wide<float> {
  using type = double;
};
template <>
struct Wide<std::complex<float>> {
  using type = std::complex<double>;
};

bool is_zero(const float& v) { return v == 0.0f; }
bool is_zero(const double& v) { return v == 0.0; }
template <class R>
bool is_zero(const std::complex<R>& v) {
  return v == std::complex<R>(0);
}
template <class T>
bool is_one(const T& v) {
  return v == T(1);
}

// Calls f(local_i, local_j, len) for each column run of `lay` (a sub-layout of the caller's
// matrix) stored on `rank`.
template <class F>
void for_each_local_run(const layout::Layout& lay, int rank, F&& f) {
  auto g = lay.groups_of(rank);
  if (!g) return;
  for (const auto& c : lay.col_partition().intervals()) {
    if (c.group != g->second) continue;
    for (std::int64_t j = 0; j < c.len; ++j)
      for (const auto& r : lay.row_partition().intervals())
        if (r.group == g->first) f(r.local, c.local + j, r.len);
  }
}

}  // namespace

int check_arguments(const char* rout, const Call& x) {
  const char ta = static_cast<char>(std::toupper(static_cast<unsigned char>(*x.transa)));
  const char tb = static_cast<char>(std::toupper(static_cast<unsigned char>(*x.transb)));
  const bool nota = ta == 'N', notb = tb == 'N';
  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(x.ad[CTXT], &nprow, &npcol, &myrow, &mycol);
  int info = nprow == -1 ? -(1001 + CTXT) : 0;
  if (info) return info;
  const int ctxt = x.ad[CTXT];
  if (!nota && ta != 'T' && ta != 'C') {
    PB_Cwarn(ctxt, __LINE__, rout, "Illegal TRANSA = %c\n", ta);
    info = -1;
  } else if (!notb && tb != 'T' && tb != 'C') {
    PB_Cwarn(ctxt, __LINE__, rout, "Illegal TRANSB = %c\n", tb);
    info = -2;
  }
  if (nota)
    PB_Cchkmat(ctxt, rout, "A", x.m, 3, x.k, 5, x.ai, x.aj, x.ad, 10, &info);
  else
    PB_Cchkmat(ctxt, rout, "A", x.k, 5, x.m, 3, x.ai, x.aj, x.ad, 10, &info);
  if (notb)
    PB_Cchkmat(ctxt, rout, "B", x.k, 5, x.n, 4, x.bi, x.bj, x.bd, 14, &info);
  else
    PB_Cchkmat(ctxt, rout, "B", x.n, 4, x.k, 5, x.bi, x.bj, x.bd, 14, &info);
  PB_Cchkmat(ctxt, rout, "C", x.m, 3, x.n, 4, x.ci, x.cj, x.cd, 19, &info);
  return info;
}

Call make_call(const char* transa, const char* transb, const int* m, const int* n, const int* k,
               const int* ia, const int* ja, const int* desca, const int* ib, const int* jb,
               const int* descb, const int* ic, const int* jc, const int* descc) {
  Call x;
  x.transa = transa;
  x.transb = transb;
  x.m = *m;
  x.n = *n;
  x.k = *k;
  PB_CargFtoC(*ia, *ja, desca, &x.ai, &x.aj, x.ad);
  PB_CargFtoC(*ib, *jb, descb, &x.bi, &x.bj, x.bd);
  PB_CargFtoC(*ic, *jc, descc, &x.ci, &x.cj, x.cd);
  return x;
}

bool replicated(const Call& x) {
  for (const int* d : {x.ad, x.bd, x.cd})
    if (d[RSRC] == -1 || d[CSRC] == -1) return true;
  return false;
}

namespace {

// This process's place on the BLACS grid of a call.
struct GridPos {
  int nprow = 0, npcol = 0, myrow = 0, mycol = 0;
};

// 1. ScaLAPACK's checks, on this process (LLD is checked against this process's rows). 2. The
// grid's own communicator `grid`: rank r * npcol + q is grid position (r, q). Every grid
// process learns whether any of them found an error, so none waits on a peer that returned.
// Returns the INFO to return at once, or nothing to go on.
std::optional<int> check_on_grid(const char* rout, const Call& x, ErrorMode mode, GridPos& g,
                                 comm::Comm& grid) {
  const int info = check_arguments(rout, x);
  const int ctxt = x.ad[CTXT];
  if (info && mode == ErrorMode::Pblas) PB_Cabort(ctxt, rout, info);  // aborts unless replaced
  Cblacs_gridinfo(ctxt, &g.nprow, &g.npcol, &g.myrow, &g.mycol);
  if (g.nprow == -1) return info;  // no grid to agree on (info is -1002)
  int sysctxt = 0;
  Cblacs_get(ctxt, 10, &sysctxt);
  std::vector<int> ranks(static_cast<std::size_t>(g.nprow) * g.npcol);
  for (int r = 0; r < g.nprow; ++r)
    for (int q = 0; q < g.npcol; ++q)
      ranks[static_cast<std::size_t>(r) * g.npcol + q] = Cblacs_pnum(ctxt, r, q);
  grid = comm::Comm::create_group(Cblacs2sys_handle(sysctxt), ranks, nullptr);
  const int first = grid.allreduce_value(info ? -info : INT_MAX, MPI_MIN);
  if (first != INT_MAX) return info ? info : -first;
  return std::nullopt;
}

// sub(C) = beta sub(C) on this process's part, without reading A and B (beta == 0: C is not
// read).
template <class T>
void scale_c(const layout::Layout& lc, int me, const Call& x, T beta, T* c) {
  const bool zero = is_zero(beta);
  for_each_local_run(lc, me, [&](std::int64_t i, std::int64_t j, std::int64_t len) {
    T* col = c + j * x.cd[LLD] + i;
    for (std::int64_t r = 0; r < len; ++r) col[r] = zero ? T(0) : beta * col[r];
  });
}

// Single precision: this process's storage of a matrix of full layout f widened to double.
template <class T, class W = typename Wide<T>::type>
std::vector<W> widen(const layout::Layout& f, int me, const T* src, int lld) {
  const std::int64_t lr = f.local_rows(me), lcn = f.local_cols(me);
  std::vector<W> w(lr > 0 && lcn > 0 ? static_cast<std::size_t>((lcn - 1) * lld + lr) : 0);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<W>(src[i]);
  return w;
}

// The layouts of one call: the full matrices' (fa, fb, fc) and sub(A), sub(B), sub(C)'s.
struct CallLayouts {
  layout::Layout fa, fb, fc, la, lb, lc;
};

// 4. sub(C) = alpha op(sub(A)) op(sub(B)) + beta sub(C) on views of the caller's storage, in
// double precision (single precision widened, multiplied in double, sub(C) rounded back).
template <class T>
dense::MultiplyReport multiply_views(Context& ctx, int me, const Call& x, const CallLayouts& L,
                                     const T* alpha, const T* a, const T* b, const T* beta, T* c,
                                     const dense::MultiplyOptions& opt) {
  using W = typename Wide<T>::type;
  const dense::Op opa = dense::parse_op(std::string(1, *x.transa));
  const dense::Op opb = dense::parse_op(std::string(1, *x.transb));
  if constexpr (std::is_same_v<T, W>) {
    auto A = dense::DistMatrix<W>::view(L.la, me, const_cast<T*>(a), x.ad[LLD]);
    auto B = dense::DistMatrix<W>::view(L.lb, me, const_cast<T*>(b), x.bd[LLD]);
    auto C = dense::DistMatrix<W>::view(L.lc, me, c, x.cd[LLD]);
    return dense::multiply(ctx, *alpha, opa, A, opb, B, *beta, C, opt);
  } else {
    std::vector<W> wa = widen(L.fa, me, a, x.ad[LLD]), wb = widen(L.fb, me, b, x.bd[LLD]);
    std::vector<W> wc = widen(L.fc, me, c, x.cd[LLD]);  // beta == 0: C is not read by multiply
    auto A = dense::DistMatrix<W>::view(L.la, me, wa.data(), x.ad[LLD]);
    auto B = dense::DistMatrix<W>::view(L.lb, me, wb.data(), x.bd[LLD]);
    auto C = dense::DistMatrix<W>::view(L.lc, me, wc.data(), x.cd[LLD]);
    auto rep =
        dense::multiply(ctx, static_cast<W>(*alpha), opa, A, opb, B, static_cast<W>(*beta), C, opt);
    for_each_local_run(L.lc, me, [&](std::int64_t i, std::int64_t j, std::int64_t len) {
      const std::size_t at0 = static_cast<std::size_t>(j * x.cd[LLD] + i);
      for (std::int64_t r = 0; r < len; ++r) c[at0 + r] = static_cast<T>(wc[at0 + r]);
    });
    return rep;
  }
}

}  // namespace

template <class T>
int pgemm(const char* rout, const Call& x, const T* alpha, const T* a, const T* b, const T* beta,
          T* c, ErrorMode mode, const dense::MultiplyOptions& opt, CommLedger* ledger,
          dense::MultiplyReport* report) {
  GridPos g;
  comm::Comm grid(MPI_COMM_NULL, nullptr);
  if (const std::optional<int> now = check_on_grid(rout, x, mode, g, grid)) return *now;

  // 3. ScaLAPACK's quick returns: nothing to do, or C = beta C without reading A and B.
  const bool at = *x.transa != 'N' && *x.transa != 'n', bt = *x.transb != 'N' && *x.transb != 'n';
  if (x.m == 0 || x.n == 0 || ((is_zero(*alpha) || x.k == 0) && is_one(*beta))) return 0;
  const int me = g.myrow * g.npcol + g.mycol;
  const int p = g.nprow * g.npcol;
  CommLedger scratch;
  Context ctx(grid.raw(), ledger ? *ledger : scratch);
  try {
    auto full = [&](const int* d) {
      return layout::Layout::block_cyclic_inb(d[M], d[N], d[IMB], d[INB], d[MB], d[NB], g.nprow,
                                              g.npcol, d[RSRC], d[CSRC], p);
    };
    const layout::Layout fc = full(x.cd);
    const layout::Layout lc = fc.sub(x.ci, x.cj, x.m, x.n);
    if (is_zero(*alpha) || x.k == 0) {
      scale_c(lc, me, x, *beta, c);
      return 0;
    }
    // 4. Descriptors to layouts of sub(A), sub(B), sub(C); the multiply on views.
    const layout::Layout fa = full(x.ad), fb = full(x.bd);
    const CallLayouts L{fa,
                        fb,
                        fc,
                        fa.sub(x.ai, x.aj, at ? x.k : x.m, at ? x.m : x.k),
                        fb.sub(x.bi, x.bj, bt ? x.n : x.k, bt ? x.k : x.n),
                        lc};
    const dense::MultiplyReport rep = multiply_views(ctx, me, x, L, alpha, a, b, beta, c, opt);
    if (report) *report = rep;
    return 0;
  } catch (const tessel::Error& e) {
    // Arguments ScaLAPACK accepts but tessel could not run: never a quiet return.
    std::fprintf(stderr, "%s (tessel) on process {%d,%d}: %s\n", rout, g.myrow, g.mycol, e.what());
    if (mode == ErrorMode::Pblas) Cblacs_abort(x.ad[CTXT], 1);
    return 1;
  }
}

#define TESSEL_PGEMM(T)                                                                       \
  template int pgemm<T>(const char*, const Call&, const T*, const T*, const T*, const T*, T*, \
                        ErrorMode, const dense::MultiplyOptions&, CommLedger*,                \
                        dense::MultiplyReport*);
TESSEL_PGEMM(float)
TESSEL_PGEMM(double)
TESSEL_PGEMM(std::complex<float>)
TESSEL_PGEMM(std::complex<double>)
#undef TESSEL_PGEMM

}  // namespace tessel::scalapack

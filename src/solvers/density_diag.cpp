// The density matrix by diagonalization, on ScaLAPACK (compiled only where the build links
// it: TESSEL_HAVE_SCALAPACK). Named steps:
//   copy H, S into a block-cyclic layout on a BLACS grid of the Context's ranks ->
//   S = U^T U (pdpotrf) -> A = U^-T H U^-1 (pdsygst) -> A = Z e Z^T (pdsyevd, divide and
//   conquer, or ELPA 1-/2-stage: diag_eigen.hpp) -> C_occ = U^-1 Z_occ (pdtrsm) ->
//   D = C_occ C_occ^T (pdgemm) ->
//   D back into the caller's matrix type and distribution -> tr(DS), 2 tr(DH), ||DSD - D||.
// Why pdsyevd on the Cholesky-reduced problem rather than pdsygvx: divide and conquer returns
// orthogonal eigenvectors for clustered eigenvalues without pdsygvx's reorthogonalization
// workspace (ORFAC, clusters on one process) and is the faster solver for all vectors; the
// reduction is pdsygvx's own (pdpotrf + pdsygst), cheaper than forming S^-1/2.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "tessel/core/error.hpp"
#include "tessel/core/timer.hpp"
#include "tessel/layout/grid_shape.hpp"
#include "tessel/solvers/density_diag.hpp"
#include "tessel/sparse/convert.hpp"

#include "diag_eigen.hpp"

extern "C" {
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int* ctxt, const char* order, int nprow, int npcol);
void Cblacs_gridexit(int ctxt);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* irsrc, const int* icsrc, const int* ictxt, const int* lld, int* info);
void pdpotrf_(const char* uplo, const int* n, double* a, const int* ia, const int* ja,
              const int* desca, int* info);
void pdsygst_(const int* ibtype, const char* uplo, const int* n, double* a, const int* ia,
              const int* ja, const int* desca, const double* b, const int* ib, const int* jb,
              const int* descb, double* scale, int* info);
void pdsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* ia,
              const int* ja, const int* desca, double* w, double* z, const int* iz, const int* jz,
              const int* descz, double* work, const int* lwork, int* iwork, const int* liwork,
              int* info);
void pdtrsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m,
             const int* n, const double* alpha, const double* a, const int* ia, const int* ja,
             const int* desca, double* b, const int* ib, const int* jb, const int* descb);
void pdtran_(const int* m, const int* n, const double* alpha, const double* a, const int* ia,
             const int* ja, const int* desca, const double* beta, double* c, const int* ic,
             const int* jc, const int* descc);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
             const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
             double* c, const int* ic, const int* jc, const int* descc);
}

namespace tessel::solvers {

bool diagonalization_built() { return true; }

namespace {

/// A BLACS grid over the Context's communicator (row-major: rank = prow * npcol + pcol, as
/// layout::Layout::block_cyclic's default), released on destruction. Collective.
class BlacsGrid {
 public:
  BlacsGrid(MPI_Comm comm, int pr, int pc) : comm_(comm), pr_(pr), pc_(pc) {
    sys_ = Csys2blacs_handle(comm);
    ctxt_ = sys_;
    Cblacs_gridinit(&ctxt_, "Row", pr, pc);
  }
  ~BlacsGrid() {
    Cblacs_gridexit(ctxt_);
    Cfree_blacs_system_handle(sys_);
  }
  BlacsGrid(const BlacsGrid&) = delete;
  BlacsGrid& operator=(const BlacsGrid&) = delete;
  int ctxt() const { return ctxt_; }
  int pr() const { return pr_; }
  int pc() const { return pc_; }
  MPI_Comm comm() const { return comm_; }

 private:
  MPI_Comm comm_;
  int sys_ = -1, ctxt_ = -1, pr_ = 1, pc_ = 1;
};

using Dense = dense::DistMatrix<double>;

/// Not collective. The ScaLAPACK descriptor of a block-cyclic DistMatrix on `g`.
struct Desc {
  int d[9] = {};
  Desc(const BlacsGrid& g, const Dense& x, int nb) {
    const int n = detail::checked_int(x.rows(), "density diag: n", "ScaLAPACK's int");
    const int zero = 0, ctxt = g.ctxt(), lld = static_cast<int>(std::max<std::int64_t>(1, x.ld()));
    int info = 0;
    descinit_(d, &n, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
    if (info != 0) throw Error(detail::concat("density diag: descinit_ info = ", info));
  }
};

// The block-cyclic copy of the caller's matrix (dense: redistribute; sparse: to_dense).
Dense to_cyclic(const Context& ctx, const Dense& x, const layout::Layout& to) {
  return dense::redistribute(ctx, x, to);
}
Dense to_cyclic(const Context& ctx, const sparse::BlockSparseMatrix<double>& x,
                const layout::Layout& to) {
  return sparse::to_dense(ctx, x, to);
}
// And back, in the distribution of `like` (sparse: the blocks above the algebra's eps).
Dense from_cyclic(Algebra<Dense>& alg, const Dense& d, const Dense& like) {
  return dense::redistribute(alg.ctx(), d, like.layout());
}
sparse::BlockSparseMatrix<double> from_cyclic(Algebra<sparse::BlockSparseMatrix<double>>& alg,
                                              const Dense& d,
                                              const sparse::BlockSparseMatrix<double>& like) {
  return sparse::from_dense(alg.ctx(), d, like.distribution(), alg.filter_eps(), "P");
}

/// The eigenvalues (all, increasing) and D = C_occ C_occ^T in the block-cyclic layout of `h`.
/// Collective over the grid. h and s are overwritten.
struct Eigen {
  std::vector<double> w;
  Dense D;
};

/// Collective over the grid. pdsygst("U") leaves the reduced matrix in A's upper triangle
/// (pdsyevd reads only that); ELPA reads both: A's strict lower triangle := its upper's
/// transpose (z = A^T by pdtran, z then overwritten by the solver; what A's lower triangle
/// held before lands in z's upper one, which is not read).
void symmetrize_from_upper(const BlacsGrid& g, Dense& a, double* pa, Dense& z, double* pz, int nb) {
  const int n = static_cast<int>(a.rows()), one = 1;
  const double alpha = 1, beta = 0;
  const Desc da(g, a, nb), dz(g, z, nb);
  pdtran_(&n, &n, &alpha, pa, &one, &one, da.d, &beta, pz, &one, &one, dz.d);
  TESSEL_ASSERT(a.ld() == z.ld());  // one layout: the same local offsets
  const double* at = z.data();
  a.for_each_local([&](std::int64_t i, std::int64_t j, double& v) {
    if (i > j) v = at[&v - a.data()];
  });
}

/// Collective over the grid. The standard problem A = Z e Z^T (a overwritten) by `solver`
/// (resolved: not Auto): w ascending, z in a's layout.
void standard_eigen(const Context& ctx, const BlacsGrid& g, DiagSolver solver, Dense& a, double* pa,
                    std::vector<double>& w, Dense& z, double* pz, int nb) {
  const int n = static_cast<int>(a.rows()), one = 1;
  if (solver != DiagSolver::Pdsyevd) {
    symmetrize_from_upper(g, a, pa, z, pz, nb);
    diag::CyclicGrid cg;
    cg.comm = g.comm();
    cg.ctxt = g.ctxt();
    cg.myrow = ctx.rank() / g.pc();
    cg.mycol = ctx.rank() % g.pc();
    cg.n = n;
    cg.nb = nb;
    cg.local_rows = static_cast<int>(a.local_rows());
    cg.local_cols = static_cast<int>(a.local_cols());
    const std::string bad =
        diag::elpa_eigenvectors(cg, pa, w.data(), pz, solver == DiagSolver::Elpa2);
    ctx.agree([&] { TESSEL_CHECK(bad.empty(), Error, "density diag: ", bad); });
    return;
  }
  const Desc da(g, a, nb), dz(g, z, nb);
  double wq = 0;
  int iq = 0, lwork = -1, liwork = -1, info = 0;
  pdsyevd_("V", "U", &n, pa, &one, &one, da.d, w.data(), pz, &one, &one, dz.d, &wq, &lwork, &iq,
           &liwork, &info);
  lwork = static_cast<int>(wq) + 2 * n;  // margin over the query (known to be tight)
  liwork = std::max(iq, 7 * n + 8 * g.pc() + 2);
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  pdsyevd_("V", "U", &n, pa, &one, &one, da.d, w.data(), pz, &one, &one, dz.d, work.data(), &lwork,
           iwork.data(), &liwork, &info);
  ctx.agree([&] { TESSEL_CHECK(info == 0, Error, "density diag: pdsyevd info ", info); });
}

Eigen solve_cyclic(const Context& ctx, const BlacsGrid& g, DiagSolver solver, Dense& h, Dense& s,
                   int nb, int nocc) {
  const int n = static_cast<int>(h.rows()), one = 1, ibtype = 1;
  const Desc dh(g, h, nb), ds(g, s, nb);
  double dummy = 0;  // for an empty local part: ScaLAPACK reads nothing there
  auto ptr = [&dummy](Dense& x) { return x.data() != nullptr ? x.data() : &dummy; };
  int info = 0;
  pdpotrf_("U", &n, ptr(s), &one, &one, ds.d, &info);
  ctx.agree([&] {
    TESSEL_CHECK(info == 0, InputError, "density diag: S is not positive definite (pdpotrf info ",
                 info, ": the leading minor of order ", info, " is not positive)");
  });
  double scale = 1;
  pdsygst_(&ibtype, "U", &n, ptr(h), &one, &one, dh.d, ptr(s), &one, &one, ds.d, &scale, &info);
  ctx.agree([&] { TESSEL_CHECK(info == 0, Error, "density diag: pdsygst info ", info); });
  Eigen e;
  e.w.assign(static_cast<std::size_t>(n), 0.0);
  Dense z = Dense::uninitialized(ctx, h.layout());
  const Desc dz(g, z, nb);
  standard_eigen(ctx, g, solver, h, ptr(h), e.w, z, ptr(z), nb);
  for (double& x : e.w) x *= scale;
  const double alpha = 1, beta = 0;
  pdtrsm_("L", "U", "N", "N", &n, &nocc, &alpha, ptr(s), &one, &one, ds.d, ptr(z), &one, &one,
          dz.d);
  e.D = Dense::uninitialized(ctx, h.layout());
  pdgemm_("N", "T", &n, &n, &nocc, &alpha, ptr(z), &one, &one, dz.d, ptr(z), &one, &one, dz.d,
          &beta, ptr(e.D), &one, &one, dz.d);
  return e;
}

// One progress line (stage, occupation, blocks, seconds since t) through opt.on_step.
void progress(const DensityOptions& opt, const char* stage, double occupation, const Stopwatch& t,
              std::int64_t blocks = 0) {
  if (!opt.on_step) return;
  IterationInfo s;
  s.stage = stage;
  s.occupation = occupation;
  s.blocks = blocks;
  s.seconds = t.seconds();
  opt.on_step(s);
}

// mu mid-gap, the spectrum's ends, 2 sum of the occupied eigenvalues, the stage thresholds.
template <class M>
void from_eigenvalues(DensityResult<M>& out, const std::vector<double>& w, std::int64_t nocc,
                      double eps) {
  const double homo = w[static_cast<std::size_t>(nocc - 1)],
               lumo = w[static_cast<std::size_t>(nocc)];
  out.mu = 0.5 * (homo + lumo);
  out.homo_lumo_lo = homo;
  out.homo_lumo_hi = lumo;
  out.bounds.lo = out.bounds.ritz_min = w.front();
  out.bounds.hi = out.bounds.ritz_max = w.back();
  double occupied = 0;
  for (std::int64_t i = 0; i < nocc; ++i) occupied += w[static_cast<std::size_t>(i)];
  out.band_energy_before_final = 2 * occupied;
  out.eps_iteration = out.eps_final = out.eps_inverse = out.eps_transform = eps;
}

// The filtered P (block-sparse, eps > 0) still holds the electrons and is idempotent: the
// iterative routes' checks and messages (InputError on every rank).
template <class M>
void check_filtered(Algebra<M>& alg, const DensityResult<M>& out, std::int64_t electrons,
                    const DensityOptions& opt) {
  const double occ = 2 * out.trace_ps;
  alg.ctx().agree([&] {
    TESSEL_CHECK(std::abs(occ - static_cast<double>(electrons)) <= opt.occupation_tol, InputError,
                 "density: occupation lost: 2 tr(P S) = ", occ, " but electrons = ", electrons,
                 " (|difference| > occupation_tol = ", opt.occupation_tol,
                 "): the filter threshold eps = ", alg.filter_eps(),
                 " is too large for this system");
    TESSEL_CHECK(out.idempotency <= opt.idempotency_tol, InputError,
                 "density: idempotency lost: ||P S P - P||_F / ||P||_F = ", out.idempotency,
                 " (> idempotency_tol = ", opt.idempotency_tol,
                 "): the filter threshold eps = ", alg.filter_eps(),
                 " is too large for this system");
  });
}

/// The eigensolver `asked` resolves to (Auto: pdsyevd, measured here at least as fast as ELPA:
/// docs/density.md "The eigensolver"); InputError (every rank: the options are the same) for
/// ELPA where it is not built.
DiagSolver resolve_solver(DiagSolver asked) {
  if (asked == DiagSolver::Auto) return DiagSolver::Pdsyevd;
  TESSEL_CHECK(asked == DiagSolver::Pdsyevd || diag_elpa_built(), InputError,
               "density: diag_solver = ", to_string(asked),
               ": ELPA is not built in this build (it needs Open MPI and libelpa-dev, CMake "
               "option TESSEL_ELPA; expected auto or pdsyevd)");
  return asked;
}

}  // namespace

template <class M>
DensityResult<M> density_diag(Algebra<M>& alg, const M& H, const M& S, std::int64_t electrons,
                              const DensityOptions& opt) {
  Context& ctx = alg.ctx();
  const std::int64_t n = Algebra<M>::n(H), nocc = electrons / 2;
  ctx.agree([&] {
    TESSEL_CHECK(!opt.mu, InputError, "density: method diag takes no mu (given ", *opt.mu,
                 "): it occupies the ", nocc, " lowest states");
  });
  DiagSolver solver = DiagSolver::Pdsyevd;
  ctx.agree([&] { solver = resolve_solver(opt.diag_solver); });
  const auto m0 = alg.stats().multiplications;
  const auto [pr, pc] = layout::most_square_grid(ctx.size());
  const int nb = static_cast<int>(
      std::clamp<std::int64_t>(n / (2 * std::max(pr, pc)), 8, 64));  // a few blocks per process
  const auto lay = layout::Layout::block_cyclic(n, n, nb, nb, pr, pc, 0, 0, ctx.size());
  const BlacsGrid grid(ctx.comm().raw(), pr, pc);
  Eigen e;
  Stopwatch t;
  {
    Dense h = to_cyclic(ctx, H, lay), s = to_cyclic(ctx, S, lay);
    e = solve_cyclic(ctx, grid, solver, h, s, nb, static_cast<int>(nocc));
  }
  const std::string solver_name = to_string(solver);
  progress(opt, solver_name.c_str(), 2 * static_cast<double>(nocc), t);
  const double homo = e.w[static_cast<std::size_t>(nocc - 1)],
               lumo = e.w[static_cast<std::size_t>(nocc)];
  ctx.agree([&] {
    TESSEL_CHECK(lumo - homo > 1e-12 * std::max(1.0, e.w.back() - e.w.front()), InputError,
                 "density: no gap at the electron count ", electrons, ": HOMO ", homo, " and LUMO ",
                 lumo, " are degenerate");
  });
  DensityResult<M> out;
  out.eigensolver = solver_name;
  t = Stopwatch();
  out.P = from_cyclic(alg, e.D, H);
  e.D = Dense{};
  progress(opt, "P back", 0, t, alg.blocks(out.P));
  from_eigenvalues(out, e.w, nocc, alg.filter_eps());
  t = Stopwatch();
  {
    M ps = alg.product(out.P, S);
    M psp = alg.product(ps, out.P);
    alg.add(psp, 1.0, out.P, -1.0);
    const double np = alg.norm(out.P);
    out.idempotency = alg.norm(psp) / (np > 0 ? np : 1.0);
  }
  out.trace_ps = alg.dot(out.P, S);
  out.band_energy = 2 * alg.dot(out.P, H);
  check_filtered(alg, out, electrons, opt);
  progress(opt, "checks", 2 * out.trace_ps, t);
  if (opt.energy_weighted) out.W = alg.product(alg.product(out.P, H), out.P);
  out.multiplications = alg.stats().multiplications - m0;
  return out;
}

template DensityResult<dense::DistMatrix<double>> density_diag(DenseAlgebra&,
                                                               const dense::DistMatrix<double>&,
                                                               const dense::DistMatrix<double>&,
                                                               std::int64_t, const DensityOptions&);
template DensityResult<sparse::BlockSparseMatrix<double>> density_diag(
    SparseAlgebra&, const sparse::BlockSparseMatrix<double>&,
    const sparse::BlockSparseMatrix<double>&, std::int64_t, const DensityOptions&);

}  // namespace tessel::solvers

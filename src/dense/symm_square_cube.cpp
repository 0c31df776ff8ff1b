// SymmSquareCube: options, mesh and communicators, input checks, the move to and from plane
// 0, and the choice of executor (ssc_alg3.cpp, ssc_alg4.cpp, ssc_alg5.cpp, ssc_25d.cpp).
#include "tessel/dense/symm_square_cube.hpp"

#include <algorithm>
#include <cmath>

#include "local_gemm.hpp"
#include "tessel/core/trace.hpp"
#include "ssc_exec.hpp"

namespace tessel::dense {
namespace {

/// Pure. The cube's edge: p when given, else the largest p with p^3 <= ranks and p <= n.
int pick_p(int ranks, std::int64_t n, int p) {
  if (p != 0) return p;  // validated by the caller
  std::int64_t q = layout::Mesh3D::largest_p(ranks);
  return static_cast<int>(std::max<std::int64_t>(1, std::min(q, n)));
}

layout::Layout plane0_layout(std::int64_t n, int p, int comm_size) {
  std::vector<int> owner(static_cast<std::size_t>(p) * p);
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j) owner[static_cast<std::size_t>(i) * p + j] = i * p + j;
  return layout::Layout(layout::Partition1D::even(n, p), layout::Partition1D::even(n, p),
                        std::move(owner), comm_size);
}

}  // namespace

namespace ssc {

void local_multiply(const Exec& e, char ta, std::int64_t m, std::int64_t n, std::int64_t k,
                    const double* a, std::int64_t lda, const double* b, std::int64_t ldb,
                    double beta, double* c, std::int64_t ldc) {
  if (!e.compute) return;
  const comm::DupSet* any = e.glob ? e.glob : e.row;
  const KernelSpan kspan(any ? (*any)[0].ledger() : nullptr, "local gemm", 2.0 * m * n * k);
  kernels::gemm<double>(e.mode, 'N', ta, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace ssc

std::string to_string(SscAlgorithm a) {
  switch (a) {
    case SscAlgorithm::Original: return "3";
    case SscAlgorithm::Baseline: return "4";
    case SscAlgorithm::Optimized: return "5";
    case SscAlgorithm::TwoPointFiveD: return "2.5d";
  }
  return "?";
}

SscAlgorithm parse_ssc_algorithm(const std::string& s, const std::string& what) {
  if (s == "3" || s == "original") return SscAlgorithm::Original;
  if (s == "4" || s == "baseline") return SscAlgorithm::Baseline;
  if (s == "5" || s == "optimized") return SscAlgorithm::Optimized;
  if (s == "2.5d" || s == "2.5D" || s == "6") return SscAlgorithm::TwoPointFiveD;
  throw InputError(detail::concat(
      what, " = '", s, "' (expected 3, 4, 5 or 2.5d: the seed's Algorithms 3, 4, 5, 6)"));
}

SymmSquareCube::SymmSquareCube(Context& ctx, std::int64_t n, const SscOptions& opt)
    : ctx_(ctx), n_(n), opt_(opt) {
  PhaseScope ph(ctx.ledger(), "ssc/setup");
  const bool is25d = opt.algorithm == SscAlgorithm::TwoPointFiveD;
  layout::GridShape shape;
  ctx.agree([&] {
    TESSEL_CHECK(n >= 1, DimensionMismatch, "symm_square_cube: n = ", n, " (expected >= 1)");
    TESSEL_CHECK(opt.active_ranks >= 0 && opt.active_ranks <= ctx.size(), GridError,
                 "symm_square_cube: active_ranks = ", opt.active_ranks, " but the run has ",
                 ctx.size(), " ranks (expected 0 for all, or 1 .. ", ctx.size(), ")");
    const int ranks = opt.active_ranks == 0 ? ctx.size() : opt.active_ranks;
    TESSEL_CHECK(opt.p >= 0, GridError, "symm_square_cube: p = ", opt.p, " (expected >= 0)");
    TESSEL_CHECK(opt.replication >= 0, GridError,
                 "symm_square_cube: replication = ", opt.replication,
                 " (expected 0 for auto, or 1 <= c <= q)");
    if (is25d) {
      shape = layout::Mesh3D::choose_grid(ranks, n, opt.p, opt.replication);
    } else {
      TESSEL_CHECK(opt.replication == 0, GridError,
                   "symm_square_cube: replication = ", opt.replication,
                   " applies only to algorithm 2.5d (got algorithm ", to_string(opt.algorithm),
                   "; expected 0)");
      int p = pick_p(ranks, n, opt.p);
      TESSEL_CHECK(p <= n, GridError, "symm_square_cube: p = ", p, " exceeds n = ", n,
                   " (every block needs at least one row)");
      TESSEL_CHECK(
          static_cast<std::int64_t>(p) * p * p <= ranks, GridError, "symm_square_cube: p = ", p,
          " needs p^3 = ", static_cast<std::int64_t>(p) * p * p, " ranks but only ", ranks,
          " may be used (", ctx.size(), " in the run, active_ranks = ", opt.active_ranks, ")");
      shape = {p, p};
    }
    const int p = shape.q;
    std::int64_t rmin = n / p;  // rows of the smallest block
    TESSEL_CHECK(opt.n_dup >= 0 && opt.n_dup <= rmin, InputError,
                 "symm_square_cube: n_dup = ", opt.n_dup, " (expected 0 for auto, or 1 .. ", rmin,
                 ", the row count of the smallest ", rmin, " x ", rmin, " block of n = ", n,
                 " on p = ", p, ")");
    TESSEL_CHECK(opt.n_dup > 0 || (opt.n_t >= 1 && opt.max_auto_dup >= 1), InputError,
                 "symm_square_cube: auto n_dup needs n_t >= 1 (got ", opt.n_t,
                 ") and max_auto_dup >= 1 (got ", opt.max_auto_dup, ")");
    TESSEL_CHECK(opt.symmetry_tol >= 0 && std::isfinite(opt.symmetry_tol), InputError,
                 "symm_square_cube: symmetry_tol = ", opt.symmetry_tol, " (expected >= 0)");
    if (opt.n_dup > 0) {
      n_dup_ = opt.n_dup;
    } else {  // largest N <= max_auto_dup with parts >= n_t bytes, at least 1, at most rmin
      std::int64_t bytes = rmin * rmin * 8;
      n_dup_ = static_cast<int>(std::clamp<std::int64_t>(bytes / opt.n_t, 1, opt.max_auto_dup));
      n_dup_ = static_cast<int>(std::min<std::int64_t>(n_dup_, std::max<std::int64_t>(1, rmin)));
    }
  });
  // Algorithms 3 and 4 use blocking collectives: one communicator each.
  const bool blocking =
      opt.algorithm == SscAlgorithm::Baseline || opt.algorithm == SscAlgorithm::Original;
  if (blocking) n_dup_ = 1;
  // 2.5D: row and col carry only Cannon's point-to-point; global is not used.
  const int nd_rc = is25d ? 1 : n_dup_;
  // The same key on every rank (shape and n_dup are agreed above): a hit everywhere or a
  // miss everywhere, where the communicators are made collectively.
  const std::string key = detail::concat("dense/ssc q=", shape.q, " c=", shape.c,
                                         is25d ? " grid" : " cube", " dup=", n_dup_, " rc=", nd_rc);
  comms_ = ctx.cache().get<SscComms>(key, [&] {
    auto m = std::make_shared<SscComms>();
    m->mesh = is25d ? layout::Mesh3D::grid(ctx, shape.q, shape.c) : layout::Mesh3D(ctx, shape.q);
    m->row = comm::DupSet(m->mesh.row(), nd_rc);
    m->col = comm::DupSet(m->mesh.col(), nd_rc);
    m->grd = comm::DupSet(m->mesh.grd(), n_dup_);
    m->glob = comm::DupSet(m->mesh.global(), nd_rc);
    return m;
  });
  plane0_ = plane0_layout(n, p(), ctx.size());
}

SymmSquareCube::~SymmSquareCube() = default;

void SymmSquareCube::run_active(const double* d, double* d2, double* d3) { exec(d, d2, d3, true); }

void SymmSquareCube::run_square_active(const double* d, double* d2) { exec(d, d2, nullptr, false); }

void SymmSquareCube::run_square(const double* d, double* d2) {
  run_square_active(d, d2);
  release();
}

void SymmSquareCube::exec(const double* d, double* d2, double* d3, bool cube) {
  if (!comms_->mesh.active()) return;
  PhaseScope ph(ctx_.ledger(), "ssc/compute");
  ssc::Exec e;
  e.p = comms_->mesh.p();
  e.c = comms_->mesh.c();
  e.i = comms_->mesh.i();
  e.j = comms_->mesh.j();
  e.k = comms_->mesh.k();
  for (int b = 0; b < e.p; ++b) e.r.push_back(block(b));
  e.n_dup = n_dup_;
  e.cube = cube;
  e.coll = opt_.collectives;
  e.compute = opt_.compute_products;
  e.mode = ctx_.compute();
  e.row = &comms_->row;
  e.col = &comms_->col;
  e.grd = &comms_->grd;
  e.glob = &comms_->glob;
  switch (opt_.algorithm) {
    case SscAlgorithm::Original: ssc::alg3(e, d, d2, d3); break;
    case SscAlgorithm::Baseline: ssc::alg4(e, d, d2, d3); break;
    case SscAlgorithm::Optimized: ssc::alg5(e, d, d2, d3); break;
    case SscAlgorithm::TwoPointFiveD: ssc::alg25d(e, d, d2, d3); break;
  }
}

void SymmSquareCube::release() {
  if (comms_->mesh.inactive_ranks() == 0) return;
  PhaseScope ph(ctx_.ledger(), "ssc/release");
  comm::sleep_barrier(ctx_.comm(),
                      comms_->mesh.active() ? std::chrono::microseconds(50) : opt_.poll);
}

void SymmSquareCube::run(const double* d, double* d2, double* d3) {
  run_active(d, d2, d3);
  release();
}

std::vector<double> SymmSquareCube::partner_block(const double* d, int tag) const {
  const auto& m = comms_->mesh;
  const std::int64_t ri = block(m.i()), rj = block(m.j());
  if (m.i() == m.j()) return std::vector<double>(d, d + ri * rj);
  std::vector<double> t(static_cast<std::size_t>(ri * rj));
  comm::RequestSet rs;
  const int peer = m.rank_of(m.j(), m.i(), 0);
  ctx_.comm().isend(d, ri * rj, peer, tag, rs);
  ctx_.comm().irecv(t.data(), ri * rj, peer, tag, rs);
  rs.wait_all();
  return t;
}

void SymmSquareCube::symmetrize(double* d) const {
  const auto& m = comms_->mesh;
  if (!m.active() || m.k() != 0) return;
  const std::int64_t ri = block(m.i()), rj = block(m.j());
  // D_ji (rj x ri, column-major)
  const std::vector<double> t = partner_block(d, comm::tag::kSscSymmetrizePartner);
  for (std::int64_t c = 0; c < rj; ++c)
    for (std::int64_t r = 0; r < ri; ++r) d[c * ri + r] = 0.5 * (d[c * ri + r] + t[r * rj + c]);
}

void SymmSquareCube::check_input(const double* d, double symmetry_tol, const std::string& who,
                                 const std::string& name) const {
  const auto& m = comms_->mesh;
  const Context& ctx = ctx_;
  double amax = 0, dmax = 0;
  bool finite = true;
  if (m.active() && m.k() == 0) {
    std::int64_t ri = block(m.i()), rj = block(m.j());
    for (std::int64_t x = 0; x < ri * rj; ++x) {
      double v = d[x];
      if (!std::isfinite(v))
        finite = false;
      else
        amax = std::max(amax, std::abs(v));
    }
    const std::vector<double> t = partner_block(d, comm::tag::kSscCheckPartner);
    const double* other = t.data();  // D_ji (rj x ri, column-major)
    for (std::int64_t c = 0; c < rj && finite; ++c)
      for (std::int64_t r = 0; r < ri; ++r)
        dmax = std::max(dmax, std::abs(d[c * ri + r] - other[r * rj + c]));
  }
  double red[3] = {finite ? 0.0 : 1.0, amax, dmax};
  ctx.comm().allreduce(red, 3, MPI_MAX);
  TESSEL_CHECK(red[0] == 0, InputError, who, ": ", name, " has NaN or Inf entries");
  TESSEL_CHECK(red[2] <= symmetry_tol * red[1], InputError, who, ": ", name,
               " is not symmetric: max|", name, " - ", name, "^T| = ", red[2],
               " exceeds symmetry_tol * max|", name, "| = ", symmetry_tol, " * ", red[1]);
}

SscResult symm_square_cube(Context& ctx, const DistMatrix<double>& D, const SscOptions& opt) {
  ctx.agree([&] {
    TESSEL_CHECK(D.rows() == D.cols(), DimensionMismatch, "symm_square_cube: D is ", D.rows(),
                 " x ", D.cols(), " (expected square)");
    TESSEL_CHECK(D.layout().comm_size() == ctx.size(), LayoutMismatch,
                 "symm_square_cube: D's layout is over ", D.layout().comm_size(),
                 " ranks but the context has ", ctx.size());
  });
  SymmSquareCube ssc(ctx, D.rows(), opt);
  layout::RedistOptions moves;
  moves.node_shared = opt.shm_moves && ssc.mesh().inactive_ranks() > 0;
  DistMatrix<double> d0;
  {
    PhaseScope ph(ctx.ledger(), "ssc/redistribute in");
    d0 = redistribute(ctx, D, ssc.plane0(), moves);
  }
  if (opt.check_input) {
    PhaseScope ph(ctx.ledger(), "ssc/validate");
    ssc.check_input(d0.data(), opt.symmetry_tol, "symm_square_cube", "D");
  }
  DistMatrix<double> d2(ctx, ssc.plane0()), d3(ctx, ssc.plane0());
  ssc.run(d0.data(), d2.data(), d3.data());
  SscResult out;
  {
    PhaseScope ph(ctx.ledger(), "ssc/redistribute out");
    out.d2 = redistribute(ctx, d2, D.layout(), moves);
    out.d3 = redistribute(ctx, d3, D.layout(), moves);
  }
  out.p = ssc.p();
  out.c = ssc.c();
  out.n_dup = ssc.n_dup();
  out.mesh = ssc.mesh().describe();
  return out;
}

}  // namespace tessel::dense

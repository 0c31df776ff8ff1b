// Canonical purification around SymmSquareCube; the iteration runs on the p^3 active ranks
// (D lives on plane 0), the inactive ranks wait in SymmSquareCube::release().
#include "tessel/solvers/purify.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace tessel::solvers {
namespace {

struct Failure {
  bool input = false;
  std::string msg;
};

}  // namespace

std::string to_string(PurifyMethod m) {
  switch (m) {
    case PurifyMethod::Canonical: return "canonical";
    case PurifyMethod::McWeeny: return "mcweeny";
    case PurifyMethod::Trs2: return "trs2";
    case PurifyMethod::Trs4: return "trs4";
  }
  return "?";
}

PurifyMethod parse_purify_method(const std::string& s, const std::string& what) {
  for (auto m : {PurifyMethod::Canonical, PurifyMethod::McWeeny, PurifyMethod::Trs2, PurifyMethod::Trs4})
    if (s == to_string(m)) return m;
  throw InputError(detail::concat(what, " = '", s, "' (expected canonical, mcweeny, trs2 or trs4)"));
}

PurifyResult purify(Context& ctx, const dense::DistMatrix<double>& F,
                    const dense::DistMatrix<double>& S, std::int64_t nocc,
                    const PurifyOptions& opt) {
  (void)F; (void)S; (void)nocc; (void)opt;
  ctx.agree([&] { throw InputError("purify: the non-orthogonal path is not built yet"); });
  return {};
}

PurifyResult purify(Context& ctx, const dense::DistMatrix<double>& F, std::int64_t nocc,
                    const PurifyOptions& opt) {
  const std::int64_t n = F.rows();
  ctx.agree([&] {
    TESSEL_CHECK(F.rows() == F.cols(), DimensionMismatch, "purify: F is ", F.rows(), " x ",
                 F.cols(), " (expected square)");
    TESSEL_CHECK(F.layout().comm_size() == ctx.size(), LayoutMismatch, "purify: F's layout is over ",
                 F.layout().comm_size(), " ranks but the context has ", ctx.size());
    TESSEL_CHECK(nocc > 0 && nocc < n, InputError, "purify: nocc = ", nocc,
                 " (expected 1 .. n-1 = ", n - 1, ")");
    TESSEL_CHECK(opt.tol > 0 && std::isfinite(opt.tol), InputError, "purify: tol = ", opt.tol,
                 " (expected > 0)");
    TESSEL_CHECK(opt.max_iter >= 1, InputError, "purify: max_iter = ", opt.max_iter,
                 " (expected >= 1)");
    TESSEL_CHECK(opt.method == PurifyMethod::Canonical, InputError, "purify: method ",
                 to_string(opt.method), " is not built yet");
    TESSEL_CHECK(opt.stall_window >= 2, InputError, "purify: stall_window = ",
                 opt.stall_window, " (expected >= 2)");
  });
  dense::SymmSquareCube ssc(ctx, n, opt.ssc);
  layout::RedistOptions moves;  // node-shared moves to/from the active ranks (SscOptions)
  moves.node_shared = opt.ssc.shm_moves && ssc.mesh().inactive_ranks() > 0;
  dense::DistMatrix<double> f;
  {
    PhaseScope ph(ctx.ledger(), "purify/redistribute in");
    f = dense::redistribute(ctx, F, ssc.plane0(), moves);
  }
  {
    PhaseScope ph(ctx.ledger(), "purify/validate");
    ssc.check_input(f.data(), opt.symmetry_tol, "purify", "F");
  }
  const auto& m = ssc.mesh();
  dense::DistMatrix<double> d(ctx, ssc.plane0()), d2(ctx, ssc.plane0()), d3(ctx, ssc.plane0());
  double stats[4] = {0, 0, 0, 0};  // iterations, idempotency error, trace error, band energy
  std::optional<Failure> fail;
  if (m.active()) {
    PhaseScope ph(ctx.ledger(), "purify/iterate");
    const auto& g = m.global();
    const bool plane0 = m.k() == 0;
    const int bi = m.i(), bj = m.j();
    const std::int64_t ri = ssc.block(bi), rj = ssc.block(bj);
    const std::int64_t i0 = layout::split_begin(n, m.p(), bi), j0 = layout::split_begin(n, m.p(), bj);
    const std::int64_t len = plane0 ? ri * rj : 0;
    // Gershgorin bounds and the trace of F: row sums of |F_ij| (j != i) and the diagonal.
    std::vector<double> rs(static_cast<std::size_t>(2 * n), 0.0);
    if (plane0)
      for (std::int64_t c = 0; c < rj; ++c)
        for (std::int64_t r = 0; r < ri; ++r) {
          double v = f.data()[c * ri + r];
          if (i0 + r == j0 + c) rs[static_cast<std::size_t>(n + i0 + r)] = v;
          else rs[static_cast<std::size_t>(i0 + r)] += std::abs(v);
        }
    g.allreduce(rs.data(), static_cast<int>(2 * n), MPI_SUM);
    double hmin = std::numeric_limits<double>::infinity(), hmax = -hmin, trf = 0;
    for (std::int64_t r = 0; r < n; ++r) {
      double dg = rs[static_cast<std::size_t>(n + r)], off = rs[static_cast<std::size_t>(r)];
      hmin = std::min(hmin, dg - off);
      hmax = std::max(hmax, dg + off);
      trf += dg;
    }
    const double nd = static_cast<double>(n), no = static_cast<double>(nocc);
    const double mu = trf / nd;
    double lambda = std::min(no / (hmax - mu), (nd - no) / (mu - hmin));
    if (!(hmax > mu) || !(mu > hmin)) lambda = 0;  // F = mu I: D0 = (nocc/n) I (no gap)
    for (std::int64_t c = 0; c < rj && plane0; ++c)
      for (std::int64_t r = 0; r < ri; ++r) {
        double v = -lambda / nd * f.data()[c * ri + r];
        if (i0 + r == j0 + c) v += lambda / nd * mu + no / nd;
        d.data()[c * ri + r] = v;
      }
    std::vector<double> hist;
    int it = 0;
    double err = 0, t1 = 0;
    for (;; ++it) {
      ssc.run_active(d.data(), d2.data(), d3.data());
      double s[4] = {0, 0, 0, 0};  // tr D, tr D^2, tr D^3, ||D - D^2||_F^2
      const double *x = d.data(), *x2 = d2.data(), *x3 = d3.data();
      for (std::int64_t q = 0; q < len; ++q) s[3] += (x[q] - x2[q]) * (x[q] - x2[q]);
      if (plane0 && bi == bj)
        for (std::int64_t r = 0; r < ri; ++r) {
          s[0] += x[r * ri + r];
          s[1] += x2[r * ri + r];
          s[2] += x3[r * ri + r];
        }
      g.allreduce(s, 4, MPI_SUM);
      t1 = s[0];
      err = std::sqrt(s[3]);
      hist.push_back(err);
      if (!std::isfinite(err)) {
        fail = Failure{false, detail::concat("purify: ||D - D^2||_F is not finite at step ", it)};
        break;
      }
      if (err < opt.tol) break;
      if (it >= opt.max_iter) {
        fail = Failure{false, detail::concat("purify: no convergence in max_iter = ", opt.max_iter,
                                             " steps: ||D - D^2||_F = ", err, " (tol ", opt.tol, ")")};
        break;
      }
      if (it >= opt.stall_window && err > 0.5 * hist[static_cast<std::size_t>(it - opt.stall_window)]) {
        fail = Failure{true, detail::concat(
            "purify: no clear occupation: ||D - D^2||_F = ", err, " has not halved in ",
            opt.stall_window, " steps (step ", it, "); about ", (s[0] - s[1]) / 0.25,
            " states sit at occupation ~1/2: the HOMO-LUMO gap of F is zero (degenerate at "
            "nocc = ", nocc, ") or too small to resolve")};
        break;
      }
      double den = s[0] - s[1], c = (s[1] - s[2]) / den;
      if (!(den > 10 * nd * std::numeric_limits<double>::epsilon()) || !(c >= 0 && c <= 1)) c = 0.5;
      if (c < 0.5) {
        double a = (1 - 2 * c) / (1 - c), b = (1 + c) / (1 - c), e = -1 / (1 - c);
        for (std::int64_t q = 0; q < len; ++q) d.data()[q] = a * x[q] + b * x2[q] + e * x3[q];
      } else {
        double b = (1 + c) / c, e = -1 / c;
        for (std::int64_t q = 0; q < len; ++q) d.data()[q] = b * x2[q] + e * x3[q];
      }
    }
    double en = 0;
    for (std::int64_t q = 0; q < len; ++q) en += d.data()[q] * f.data()[q];
    g.allreduce(&en, 1, MPI_SUM);
    stats[0] = it;
    stats[1] = err;
    stats[2] = std::abs(t1 - no);
    stats[3] = 2 * en;
  }
  ssc.release();
  {
    PhaseScope ph(ctx.ledger(), "purify/result");
    ctx.agree([&] {
      if (fail && fail->input) throw InputError(fail->msg);
      if (fail) throw Error(fail->msg);
    });
    if (m.inactive_ranks() > 0) ctx.comm().bcast(stats, 4, 0);
  }
  PurifyResult out;
  {
    PhaseScope ph(ctx.ledger(), "purify/redistribute out");
    out.D = dense::redistribute(ctx, d, F.layout(), moves);
  }
  out.iterations = static_cast<int>(stats[0]);
  out.idempotency_error = stats[1];
  out.trace_error = stats[2];
  out.band_energy = stats[3];
  out.p = ssc.p();
  out.n_dup = ssc.n_dup();
  out.mesh = m.describe();
  return out;
}

}  // namespace tessel::solvers

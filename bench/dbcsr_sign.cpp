// The peer of `tessel density --method sign --mu X` on DBCSR 2.5 (Debian libdbcsr-dev, C API):
// the same Newton-Schulz iteration in the same symmetric form, with the same filter thresholds,
// stopping rules, scale factors and mu, so the two differ only in the library underneath.
//
//   Z = S^-1/2: coupled Newton-Schulz of order 2 from Y0 = S/s, Z0 = I (s = --s-scale, tessel's
//       1.02 (lo + hi)/2 from its Lanczos bounds of S: JSON "inverse_scale"); T = (3I - ZY)/2,
//       Y <- YT, Z <- TZ; stop when ||I - ZY||_F/sqrt(n) < 1e-11 or, under filtering, when it
//       falls by less than 0.8x below max(1e-3, 1e3 eps); filter --eps-inverse.
//   Ht = Z H Z (filter --eps-transform).
//   X0 = (Ht - mu I)/b, b = 1.01 max(|hi - mu|, |lo - mu|) with [lo, hi] = --bounds (tessel's
//       Lanczos bounds of Ht: JSON "bounds"); X <- X (3I - X^2)/2; stop when
//       ||I - X^2||_F < tol ||X^2||_F or, under filtering, the residual falls by less than 0.8x
//       below max(1e-3, 1e3 eps); filter --eps.
//   Pt = (I - X)/2; P = Z Pt Z (filter --eps-transform); --final-steps McWeeny steps with the
//   true S, P <- 3 PSP - 2 PSPSP (filter --eps-final, 3 products each); band energy 2 tr(PH)
//   and tr(PS) by dbcsr_dot.
// Not done here (tessel does them): symmetrizing Z, Ht and P (rounding-level differences) and
// the idempotency norm ||PSP - P|| (tessel reuses the PS, PSP of its final step for it; with
// --final-steps 0 it costs tessel 2 products the driver does not run).
// Input: the CP2K CSR files read by tessel's reader (or tessel's generated water box) on
// tessel's distribution, copied block by block into DBCSR. One thread per rank.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bench_mpi.hpp"
#include "dbcsr_util.hpp"
#include "tessel/core/error.hpp"
#include "tessel/sparse/generate.hpp"
#include "tessel/io/sparse.hpp"

using namespace tessel;
using tessel::bench::to_dbcsr;

namespace {

// The few DBCSR operations the iteration needs, counting the multiplications.
// Shifts add a multiple of the identity built on tessel's side (c_dbcsr_add_on_diag_d crashed
// on these matrices in Debian's 2.5 build).
struct Dbcsr {
  long long mults = 0, flops = 0;
  int n = 0;
  dbcsr_matrix eye = nullptr;
  void shift(dbcsr_matrix a, double alpha) const { c_dbcsr_add_d(a, eye, 1.0, alpha); }
  dbcsr_matrix like(dbcsr_matrix t, const char* name) const {
    dbcsr_matrix m = nullptr;
    const char type = dbcsr_type_no_symmetry;
    c_dbcsr_create_template(&m, name, t, nullptr, &type, nullptr, 0, nullptr, 0, nullptr, nullptr,
                            nullptr, nullptr, nullptr);
    return m;
  }
  dbcsr_matrix copy(dbcsr_matrix a, const char* name) const {
    dbcsr_matrix m = like(a, name);
    c_dbcsr_add_d(m, a, 0.0, 1.0);
    return m;
  }
  dbcsr_matrix identity(double alpha, const char* name) const {
    dbcsr_matrix m = copy(eye, name);
    c_dbcsr_scale_d(m, alpha, nullptr);
    return m;
  }
  // C = alpha A B filtered at eps (a new matrix)
  dbcsr_matrix product(dbcsr_matrix a, dbcsr_matrix b, double eps, const char* name,
                       double alpha = 1.0) {
    dbcsr_matrix c = like(a, name);
    long long f = 0;
    bool retain = false;
    c_dbcsr_multiply_d('N', 'N', alpha, a, b, 0.0, c, nullptr, nullptr, nullptr, nullptr, nullptr,
                       nullptr, &retain, eps > 0 ? &eps : nullptr, &f);
    ++mults;
    flops += f;
    return c;
  }
  static double norm(dbcsr_matrix a) {
    bool local = false;
    return c_dbcsr_frobenius_norm(a, &local);
  }
  static double trace(dbcsr_matrix a) {
    double t = 0;
    c_dbcsr_trace_d(a, &t);
    return t;
  }
  static double dot(dbcsr_matrix a, dbcsr_matrix b) {
    double t = 0;
    c_dbcsr_dot_d(a, b, &t);
    return t;
  }
  static void filter(dbcsr_matrix a, double eps) {
    if (eps > 0) c_dbcsr_filter(a, &eps, nullptr, nullptr, nullptr);
  }
  static void release(dbcsr_matrix& a) { c_dbcsr_release(&a); }
  // ||I - A||_F
  double identity_distance(dbcsr_matrix a) const {
    dbcsr_matrix r = copy(a, "r");
    shift(r, -1.0);
    const double d = norm(r);
    c_dbcsr_release(&r);
    return d;
  }
};

// tessel's filtering-floor rule: stop when the residual falls by less than 0.8x once below it.
double floor_of(double eps, double unfiltered) {
  return eps > 0 ? std::max(1e-3, 1e3 * eps) : unfiltered;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  CLI::App app{
      "The Newton-Schulz sign density of `tessel density --method sign --mu X` on DBCSR 2.5"};
  std::string ks, overlap, blocks, generate, bounds_s, json;
  long long electrons = 0;
  double mu = NAN, s_scale = 0, eps = 1e-6, eps_inverse = -1, eps_transform = -1, eps_final = -1,
         tol = 1e-12;
  int final_steps = 0, max_iter = 200;
  app.add_option("--ks", ks, "Kohn-Sham matrix H (CP2K CSR, plain or gzip)");
  app.add_option("--overlap", overlap, "Overlap S (CP2K CSR)");
  app.add_option("--blocks", blocks, "Block sizes file");
  app.add_option("--generate", generate, "water:N (tessel's generated box) instead of files");
  app.add_option("--electrons", electrons, "Electron count (reported against tr(PS))");
  app.add_option("--mu", mu, "Chemical potential (tessel's JSON \"mu\")")->required();
  app.add_option("--bounds", bounds_s, "lo,hi: Lanczos bounds of Ht (tessel's JSON \"bounds\")")
      ->required();
  app.add_option("--s-scale", s_scale,
                 "Scale s of S^-1/2's Y0 = S/s (tessel's JSON \"inverse_scale\")")
      ->required();
  app.add_option("--eps", eps, "Filter threshold of the sign iteration")->capture_default_str();
  app.add_option("--eps-inverse", eps_inverse, "Filter threshold of S^-1/2 (default --eps)");
  app.add_option("--eps-transform", eps_transform,
                 "Filter threshold of Z H Z and Z Pt Z (default --eps)");
  app.add_option("--eps-final", eps_final,
                 "Filter threshold of the final McWeeny steps (default --eps)");
  app.add_option("--final-steps", final_steps, "McWeeny steps after the sign iteration")
      ->capture_default_str();
  app.add_option("--tol", tol, "Sign: stop at ||I - X^2||_F < tol ||X^2||_F")
      ->capture_default_str();
  app.add_option("--max-iter", max_iter, "Cap on the iterations")->capture_default_str();
  app.add_option("--json", json, "Write the results as JSON");
  if (auto code = tessel::bench::parse_or_finalize(app, argc, argv)) return *code;
  int rc = 0;
  if (eps_inverse < 0) eps_inverse = eps;
  if (eps_transform < 0) eps_transform = eps;
  if (eps_final < 0) eps_final = eps;
  try {
    double lo = 0, hi = 0;
    TESSEL_CHECK(std::sscanf(bounds_s.c_str(), "%lf,%lf", &lo, &hi) == 2 && hi > lo, InputError,
                 "--bounds '", bounds_s, "': expected lo,hi with lo < hi");
    TESSEL_CHECK(mu > lo && mu < hi, InputError, "--mu ", mu, ": expected inside --bounds");
    TESSEL_CHECK(s_scale > 0, InputError, "--s-scale ", s_scale, ": expected > 0");
    TESSEL_CHECK(eps >= 0, InputError, "--eps ", eps, ": expected >= 0");
    Context ctx(MPI_COMM_WORLD);
    sparse::BlockSparseMatrix<double> Ht_, St_;
    std::string description;
    if (!generate.empty()) {
      TESSEL_CHECK(generate.rfind("water:", 0) == 0, InputError, "--generate '", generate,
                   "': expected water:N");
      auto w = sparse::generate_water(ctx, std::stoi(generate.substr(6)));
      Ht_ = std::move(w.H);
      St_ = std::move(w.S);
      if (electrons == 0) electrons = w.nelectrons;
      description = "generated " + generate;
    } else {
      TESSEL_CHECK(!ks.empty() && !overlap.empty() && !blocks.empty(), InputError,
                   "--ks, --overlap and --blocks are all needed (or --generate water:N)");
      const sparse::BlockSizes bs = io::read_block_sizes(blocks);
      auto g = sparse::Distribution::default_grid(ctx.size());
      auto dist = sparse::Distribution::random(bs, bs, g.first, g.second);
      Ht_ = io::read_cp2k_csr(ctx, ks, dist);
      St_ = io::read_cp2k_csr(ctx, overlap, dist);
      description = ks;
    }
    const auto& d = Ht_.distribution();
    int io_unit = -1;
    c_dbcsr_init_lib(MPI_COMM_WORLD, &io_unit);
    MPI_Comm cart;
    int dims[2] = {d.pr(), d.pc()}, periods[2] = {0, 0};
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    dbcsr_distribution dh = nullptr, ds = nullptr, di = nullptr;
    dbcsr_matrix H = to_dbcsr(cart, Ht_, "H", dh), S = to_dbcsr(cart, St_, "S", ds);
    sparse::BlockSparseMatrix<double> eye(ctx, d, "I");
    sparse::shift(eye, 1.0);
    Dbcsr db;
    db.eye = to_dbcsr(cart, eye, "I", di);
    db.n = static_cast<int>(Ht_.rows());
    const double sqrt_n = std::sqrt(static_cast<double>(db.n));

    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    // S^-1/2
    dbcsr_matrix y = db.copy(S, "Y");
    c_dbcsr_scale_d(y, 1 / s_scale, nullptr);
    dbcsr_matrix z = db.identity(1.0, "Z");
    int inv_it = 0;
    double prev = INFINITY, r = 0;
    for (;; ++inv_it) {
      dbcsr_matrix t = db.product(z, y, eps_inverse, "T");
      r = db.identity_distance(t) / sqrt_n;
      if (r < 1e-11 || (inv_it > 0 && r > 0.8 * prev && r < floor_of(eps_inverse, 1e-7)) ||
          inv_it >= max_iter) {
        Dbcsr::release(t);
        break;
      }
      TESSEL_CHECK(std::isfinite(r) && !(r > prev && r >= floor_of(eps_inverse, 1e-7)), Error,
                   "S^-1/2 diverged: residual ", r, " at step ", inv_it);
      prev = r;
      c_dbcsr_scale_d(t, -0.5, nullptr);
      db.shift(t, 1.5);
      dbcsr_matrix y2 = db.product(y, t, eps_inverse, "Y");
      dbcsr_matrix z2 = db.product(t, z, eps_inverse, "Z");
      Dbcsr::release(y);
      Dbcsr::release(z);
      Dbcsr::release(t);
      y = y2;
      z = z2;
    }
    Dbcsr::release(y);
    c_dbcsr_scale_d(z, 1 / std::sqrt(s_scale), nullptr);
    const double t_inv = MPI_Wtime() - t0;
    // Ht = Z H Z
    dbcsr_matrix zh = db.product(z, H, eps_transform, "ZH");
    dbcsr_matrix ht = db.product(zh, z, eps_transform, "Ht");
    Dbcsr::release(zh);
    // sign(Ht - mu I)
    const double b = 1.01 * std::max(std::abs(hi - mu), std::abs(lo - mu));
    dbcsr_matrix x = db.copy(ht, "X");
    db.shift(x, -mu);
    c_dbcsr_scale_d(x, 1 / b, nullptr);
    Dbcsr::filter(x, eps);
    int it = 0;
    double res = 0;
    prev = INFINITY;
    const double t_sign0 = MPI_Wtime();
    for (;; ++it) {
      dbcsr_matrix x2 = db.product(x, x, eps, "X2");
      const double n2 = Dbcsr::norm(x2);
      res = db.identity_distance(x2) / (n2 > 0 ? n2 : 1.0);
      const bool stop =
          res < tol || (res > 0.8 * prev && res < floor_of(eps, 1e-6)) || it >= max_iter;
      TESSEL_CHECK(std::isfinite(res) && !(res > prev && res > floor_of(eps, 1e-6)), Error,
                   "sign diverged: residual ", res, " at step ", it);
      if (stop) {
        Dbcsr::release(x2);
        break;
      }
      prev = res;
      c_dbcsr_scale_d(x2, -0.5, nullptr);
      db.shift(x2, 1.5);
      dbcsr_matrix xn = db.product(x, x2, eps, "X");
      Dbcsr::release(x);
      Dbcsr::release(x2);
      x = xn;
    }
    const double t_sign = MPI_Wtime() - t_sign0;
    // Pt = (I - X)/2, P = Z Pt Z, final McWeeny steps P <- 3 PSP - 2 PSPSP with the true S
    c_dbcsr_scale_d(x, -0.5, nullptr);
    db.shift(x, 0.5);
    const double band_orth = 2 * Dbcsr::dot(x, ht);
    dbcsr_matrix zp = db.product(z, x, eps_transform, "ZPt");
    dbcsr_matrix P = db.product(zp, z, eps_transform, "P");
    for (int k = 0; k < final_steps; ++k) {
      dbcsr_matrix ps = db.product(P, S, eps_final, "PS");
      dbcsr_matrix psp = db.product(ps, P, eps_final, "PSP");
      dbcsr_matrix pspsp = db.product(ps, psp, eps_final, "PSPSP");
      c_dbcsr_add_d(psp, pspsp, 3.0, -2.0);
      for (dbcsr_matrix* m : {&P, &ps, &pspsp}) Dbcsr::release(*m);
      P = psp;
    }
    const double band = 2 * Dbcsr::dot(P, H);
    const double trace_ps = Dbcsr::dot(P, S);
    double seconds = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const double occ_p = c_dbcsr_get_occupation(P);
    long long flops = db.flops;
    MPI_Allreduce(MPI_IN_PLACE, &flops, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf(
          "dbcsr_sign: DBCSR 2.5, %s, %d ranks (%dx%d), mu %.6f, eps %g (S^-1/2 %g, basis changes %g, "
          "%d final McWeeny steps %g)\n",
          description.c_str(), p, d.pr(), d.pc(), mu, eps, eps_inverse, eps_transform, final_steps,
          eps_final);
      std::printf(
          "S^-1/2: %d steps, residual %.3e, %.3f s; sign: %d steps, residual %.3e, %.3f s\n",
          inv_it, r, t_inv, it, res, t_sign);
      std::printf("band energy 2 tr(PH): %.10f Eh (orthogonal basis %.10f)\n", band, band_orth);
      std::printf("tr(PS): %.10f (2 tr(PS) = %.10f, electrons %lld)\n", trace_ps, 2 * trace_ps,
                  electrons);
      std::printf("multiplications: %lld (%.3g GFLOP), P occupancy %.2f%%, time %.3f s\n", db.mults,
                  flops * 1e-9, 100 * occ_p, seconds);
    }
    if (!json.empty() && rank == 0) {
      nlohmann::json j{{"command", "dbcsr_sign"},
                       {"input", description},
                       {"ranks", p},
                       {"mu", mu},
                       {"eps", eps},
                       {"eps_inverse", eps_inverse},
                       {"eps_transform", eps_transform},
                       {"eps_final", eps_final},
                       {"final_steps", final_steps},
                       {"inverse_sqrt_iterations", inv_it},
                       {"iterations", it},
                       {"residual", res},
                       {"multiplications", db.mults},
                       {"flops", flops},
                       {"band_energy", band},
                       {"band_energy_orthogonal", band_orth},
                       {"trace_ps", trace_ps},
                       {"electrons", electrons},
                       {"p_occupation", occ_p},
                       {"seconds", seconds}};
      std::ofstream(json) << j.dump(2) << "\n";
    }
    for (dbcsr_matrix* m : {&H, &S, &z, &ht, &x, &zp, &P, &db.eye}) Dbcsr::release(*m);
    c_dbcsr_distribution_release(&di);
    c_dbcsr_distribution_release(&dh);
    c_dbcsr_distribution_release(&ds);
    MPI_Comm_free(&cart);
    c_dbcsr_finalize_lib();
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "dbcsr_sign: error: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}

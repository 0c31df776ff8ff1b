// H x on a batch, seed 002's schedule: start exchange -> V x -> inner Laplacian (testing) ->
// wait -> boundary Laplacian; or the plain order exchange -> V x -> Laplacian.
#include "tessel/stencil/hamiltonian.hpp"

#include <algorithm>
#include <cmath>

#include "kernels.hpp"
#include "tessel/core/trace.hpp"
#include "tessel/stencil/fd.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::stencil {

PotentialKind parse_potential(const std::string& s) {
  if (s == "harmonic") return PotentialKind::Harmonic;
  if (s == "box") return PotentialKind::Box;
  if (s == "softcoulomb") return PotentialKind::SoftCoulomb;
  throw InputError(detail::concat("potential '", s, "': expected harmonic, box or softcoulomb"));
}

const char* to_string(PotentialKind k) {
  switch (k) {
    case PotentialKind::Harmonic: return "harmonic";
    case PotentialKind::Box: return "box";
    case PotentialKind::SoftCoulomb: return "softcoulomb";
  }
  return "?";
}

std::vector<double> potential_values(const Mesh& mesh, const HaloPlan& plan, PotentialKind kind,
                                     double omega, const std::vector<Atom>& atoms,
                                     double softening) {
  std::vector<double> v(plan.points.size(), 0.0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto x = mesh.position(plan.points[i]);
    if (kind == PotentialKind::Harmonic) {
      v[i] = 0.5 * omega * omega * (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    } else if (kind == PotentialKind::SoftCoulomb) {
      double s = 0;
      for (const auto& a : atoms) {
        const double dx = x[0] - a.x, dy = x[1] - a.y, dz = x[2] - a.z;
        s -= 1.0 / std::sqrt(dx * dx + dy * dy + dz * dz + softening * softening);
      }
      v[i] = s;
    }
  }
  return v;
}

Hamiltonian::Hamiltonian(Context& ctx, const HaloPlan& plan, std::vector<double> potential,
                         double h, HamiltonianOptions opt)
    : ctx_(ctx),
      plan_(plan),
      v_(std::move(potential)),
      c_(second_derivative_weights(plan.order)),
      scale_(-0.5 / (h * h)),
      opt_(opt) {
  TESSEL_CHECK(static_cast<std::int64_t>(v_.size()) == plan.local_size(), DimensionMismatch,
               "Hamiltonian: ", v_.size(), " potential values for ", plan.local_size(),
               " local points");
  TESSEL_CHECK(std::isfinite(h) && h > 0, InputError, "Hamiltonian: spacing h = ", h,
               ": expected > 0");
  TESSEL_CHECK(opt_.test_every >= 0, InputError, "Hamiltonian: test_every = ", opt_.test_every,
               " (expected >= 1, or 0 for the default)");
}

Hamiltonian::~Hamiltonian() = default;

double Hamiltonian::kinetic_bound() const {
  // Gershgorin: |3 c0| + 3 * 2 sum_k |c_k|, times 1/(2 h^2).
  double s = 3 * std::abs(c_[0]);
  for (std::size_t k = 1; k < c_.size(); ++k) s += 6 * std::abs(c_[k]);
  return -scale_ * s;
}

comm::Exchanger& Hamiltonian::exchanger(int width) {
  auto it = ex_.find(width);
  if (it == ex_.end())
    it = ex_.emplace(width, comm::make_exchanger(ctx_.comm(), plan_.exchange, width, opt_.exchange))
             .first;
  return *it->second;
}

int Hamiltonian::points_per_test(int width) const {
  if (opt_.test_every > 0) return opt_.test_every;
  // About kTestWork multiply-adds of stencil work between two tests: each inner point costs
  // width x (6 r + 1) of them (r = stencil radius).
  constexpr std::int64_t kTestWork = std::int64_t{1} << 16;
  const std::int64_t per_point = static_cast<std::int64_t>(width) * (6 * plan_.radius + 1);
  return static_cast<int>(std::max<std::int64_t>(kMinPointsPerTest, kTestWork / per_point));
}

void Hamiltonian::apply(const double* x, double* y, int width) {
  TESSEL_CHECK(width >= 1, InputError, "Hamiltonian::apply: width ", width, " (expected >= 1)");
  comm::Exchanger& ex = exchanger(width);
  PhaseScope phase(ctx_.ledger(), "stencil/halo");
  Tracer* tr = tracer_of(&ctx_.ledger());
  const std::int64_t nloc = plan_.local_size();
  const int r = plan_.radius;
  const Stopwatch clock;  // the times below are seconds on it
  const double t0 = clock.seconds();
  double tex = 0, twait = 0, ttest = 0, tover = 0;
  long tests = 0;

  // 1. Start the exchange: receives first (p2p posts them before packing), pack, post.
  ex.post_receives();
  const double tk = tr ? tr->now() : 0;
  kernels::pack(x, plan_.send_items.data(), static_cast<std::int64_t>(plan_.send_items.size()),
                width, ex.send_buffer());
  if (tr) tr->span("compute", "stencil pack", tk);
  ex.start();
  const double tpack = clock.seconds() - t0;
  tex += tpack;
  const double* ghost = ex.recv_buffer();

  if (!opt_.overlap) {
    const double tw = clock.seconds();
    ex.wait();
    twait = clock.seconds() - tw;
    tex += twait;
    // 2. y = V x; 3. (plain) the Laplacian on every point: inner then boundary, as in the
    // overlapped order.
    kernels::apply_potential(v_.data(), x, nloc, width, y);
    kernels::apply_laplacian(plan_.inner.data(), static_cast<std::int64_t>(plan_.inner.size()),
                             plan_.neighbors.data(), r, c_.data(), scale_, x, ghost, nloc, width,
                             y);
    kernels::apply_laplacian(
        plan_.boundary.data(), static_cast<std::int64_t>(plan_.boundary.size()),
        plan_.neighbors.data(), r, c_.data(), scale_, x, ghost, nloc, width, y);
  } else {
    // Progress: one MPI_Testsome pass per call until the exchange has completed. Open MPI has
    // no asynchronous progress thread: a rendezvous message (above the eager limit) moves only
    // while both its sender and its receiver are inside MPI calls, so the calls come early
    // (right after posting) and often (every `block` points), through V x and the inner points.
    bool done = false;
    auto progress = [&] {
      if (done) return;
      const double tt = clock.seconds(), ts = tr ? tr->now() : 0;
      done = ex.test();
      ttest += clock.seconds() - tt;
      ++tests;
      if (tr) tr->span("progress", "halo test", ts);
    };
    progress();
    const std::int64_t block = points_per_test(width);
    // 2. y = V x, in blocks of the same work as the stencil blocks (1 / (6 r + 1) per point).
    const double tc = clock.seconds(), ttest0 = ttest, tsv = tr ? tr->now() : 0;
    const std::int64_t vblock = block * (6 * r + 1);
    for (std::int64_t b = 0; b < nloc; b += vblock) {
      kernels::apply_potential(v_.data() + b, x + b * width, std::min(vblock, nloc - b), width,
                               y + b * width);
      progress();
    }
    if (tr) tr->span("compute", "stencil potential", tsv);
    // 3. The Laplacian on the inner points, testing the exchange every `block` points.
    const double tsi = tr ? tr->now() : 0;
    const std::int64_t n_inner = static_cast<std::int64_t>(plan_.inner.size());
    for (std::int64_t b = 0; b < n_inner; b += block) {
      kernels::apply_laplacian(plan_.inner.data() + b, std::min(block, n_inner - b),
                               plan_.neighbors.data(), r, c_.data(), scale_, x, ghost, nloc, width,
                               y);
      progress();
    }
    if (tr) tr->span("compute", "stencil inner", tsi);
    tover = clock.seconds() - tc - (ttest - ttest0);  // V + inner, without the tests in between
    // 4. Wait for the exchange.
    const double tw = clock.seconds();
    ex.wait();
    twait = clock.seconds() - tw;
    tex += ttest + twait;
    // 5. The Laplacian on the boundary points.
    const double tsb = tr ? tr->now() : 0;
    kernels::apply_laplacian(
        plan_.boundary.data(), static_cast<std::int64_t>(plan_.boundary.size()),
        plan_.neighbors.data(), r, c_.data(), scale_, x, ghost, nloc, width, y);
    if (tr) tr->span("compute", "stencil boundary", tsb);
  }
  const double total = clock.seconds() - t0;
  times_.exchange += tex;
  times_.pack += tpack;
  times_.wait += twait;
  times_.tests_seconds += ttest;
  times_.overlapped += tover;
  times_.tests += tests;
  times_.compute += total - tex;
  times_.total += total;
  times_.applies += 1;
}

}  // namespace tessel::stencil

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

namespace {

// One apply of H to a batch of `width` vectors: the stencil's data, the halo exchange in
// flight, and this apply's times on one clock (added to the Hamiltonian's ApplyTimes at the
// end).
class ApplyRun {
 public:
  ApplyRun(const HaloPlan& plan, const std::vector<double>& v, const std::vector<double>& c,
           double scale, comm::Exchanger& ex, Tracer* tr, const double* x, double* y, int width)
      : plan_(plan),
        v_(v),
        c_(c),
        scale_(scale),
        ex_(ex),
        tr_(tr),
        x_(x),
        y_(y),
        width_(width),
        nloc_(plan.local_size()),
        r_(plan.radius) {}

  // 1. Start the exchange: receives first (p2p posts them before packing), pack, post.
  void start_exchange() {
    ex_.post_receives();
    const double tk = now();
    kernels::pack(x_, plan_.send_items.data(), static_cast<std::int64_t>(plan_.send_items.size()),
                  width_, ex_.send_buffer());
    if (tr_) tr_->span("compute", "stencil pack", tk);
    ex_.start();
    tpack_ = clock_.seconds() - t0_;
    tex_ += tpack_;
    ghost_ = ex_.recv_buffer();
  }

  // The plain order: wait for the exchange; 2. y = V x; 3. the Laplacian on every point: inner
  // then boundary, as in the overlapped order.
  void plain() {
    wait();
    tex_ += twait_;
    kernels::apply_potential(v_.data(), x_, nloc_, width_, y_);
    laplacian(plan_.inner.data(), static_cast<std::int64_t>(plan_.inner.size()));
    laplacian(plan_.boundary.data(), static_cast<std::int64_t>(plan_.boundary.size()));
  }

  // The overlapped order, testing the exchange every `block` points of stencil work.
  void overlapped(std::int64_t block) {
    progress();
    // 2. y = V x, in blocks of the same work as the stencil blocks (1 / (6 r + 1) per point).
    const double tc = clock_.seconds(), ttest0 = ttest_, tsv = now();
    const std::int64_t vblock = block * (6 * r_ + 1);
    for (std::int64_t b = 0; b < nloc_; b += vblock) {
      kernels::apply_potential(v_.data() + b, x_ + b * width_, std::min(vblock, nloc_ - b), width_,
                               y_ + b * width_);
      progress();
    }
    if (tr_) tr_->span("compute", "stencil potential", tsv);
    // 3. The Laplacian on the inner points, testing the exchange every `block` points.
    const double tsi = now();
    const std::int64_t n_inner = static_cast<std::int64_t>(plan_.inner.size());
    for (std::int64_t b = 0; b < n_inner; b += block) {
      laplacian(plan_.inner.data() + b, std::min(block, n_inner - b));
      progress();
    }
    if (tr_) tr_->span("compute", "stencil inner", tsi);
    tover_ = clock_.seconds() - tc - (ttest_ - ttest0);  // V + inner, without the tests between
    // 4. Wait for the exchange.
    wait();
    tex_ += ttest_ + twait_;
    // 5. The Laplacian on the boundary points.
    const double tsb = now();
    laplacian(plan_.boundary.data(), static_cast<std::int64_t>(plan_.boundary.size()));
    if (tr_) tr_->span("compute", "stencil boundary", tsb);
  }

  void add_to(ApplyTimes& t) const {
    const double total = clock_.seconds() - t0_;
    t.exchange += tex_;
    t.pack += tpack_;
    t.wait += twait_;
    t.tests_seconds += ttest_;
    t.overlapped += tover_;
    t.tests += tests_;
    t.compute += total - tex_;
    t.total += total;
    t.applies += 1;
  }

 private:
  double now() const { return tr_ ? tr_->now() : 0; }

  void wait() {
    const double tw = clock_.seconds();
    ex_.wait();
    twait_ = clock_.seconds() - tw;
  }

  void laplacian(const std::int32_t* list, std::int64_t count) {
    kernels::apply_laplacian(list, count, plan_.neighbors.data(), r_, c_.data(), scale_, x_, ghost_,
                             nloc_, width_, y_);
  }

  // Progress: one MPI_Testsome pass per call until the exchange has completed. Open MPI has no
  // asynchronous progress thread: a rendezvous message (above the eager limit) moves only while
  // both its sender and its receiver are inside MPI calls, so the calls come early (right after
  // posting) and often (every `block` points), through V x and the inner points.
  void progress() {
    if (done_) return;
    const double tt = clock_.seconds(), ts = now();
    done_ = ex_.test();
    ttest_ += clock_.seconds() - tt;
    ++tests_;
    if (tr_) tr_->span("progress", "halo test", ts);
  }

  const HaloPlan& plan_;
  const std::vector<double>& v_;
  const std::vector<double>& c_;
  const double scale_;
  comm::Exchanger& ex_;
  Tracer* const tr_;
  const double* const x_;
  double* const y_;
  const int width_;
  const std::int64_t nloc_;
  const int r_;
  const Stopwatch clock_;  // the times below are seconds on it
  const double t0_ = clock_.seconds();
  const double* ghost_ = nullptr;
  double tex_ = 0, tpack_ = 0, twait_ = 0, ttest_ = 0, tover_ = 0;
  long tests_ = 0;
  bool done_ = false;
};

}  // namespace

void Hamiltonian::apply(const double* x, double* y, int width) {
  TESSEL_CHECK(width >= 1, InputError, "Hamiltonian::apply: width ", width, " (expected >= 1)");
  comm::Exchanger& ex = exchanger(width);
  PhaseScope phase(ctx_.ledger(), "stencil/halo");
  ApplyRun run(plan_, v_, c_, scale_, ex, tracer_of(&ctx_.ledger()), x, y, width);
  run.start_exchange();
  if (opt_.overlap)
    run.overlapped(points_per_test(width));
  else
    run.plain();
  run.add_to(times_);
}

}  // namespace tessel::stencil

// H x on a batch, seed 002's schedule: start exchange -> V x -> inner Laplacian (testing) ->
// wait -> boundary Laplacian; or the plain order exchange -> V x -> Laplacian.
#include "tessel/stencil/hamiltonian.hpp"

#include <algorithm>
#include <cmath>

#include "kernels.hpp"
#include "tessel/stencil/fd.hpp"

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

std::vector<double> potential_values(const Mesh& mesh, const HaloPlan& plan, PotentialKind kind, double omega,
                                     const std::vector<Atom>& atoms, double softening) {
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

Hamiltonian::Hamiltonian(Context& ctx, const HaloPlan& plan, std::vector<double> potential, double h,
                         HamiltonianOptions opt)
    : ctx_(ctx), plan_(plan), v_(std::move(potential)), c_(second_derivative_weights(plan.order)),
      scale_(-0.5 / (h * h)), opt_(opt) {
  TESSEL_CHECK(static_cast<std::int64_t>(v_.size()) == plan.local_size(), DimensionMismatch, "Hamiltonian: ",
               v_.size(), " potential values for ", plan.local_size(), " local points");
  TESSEL_CHECK(std::isfinite(h) && h > 0, InputError, "Hamiltonian: spacing h = ", h, ": expected > 0");
  TESSEL_CHECK(opt_.test_every >= 1, InputError, "Hamiltonian: test_every = ", opt_.test_every, " (expected >= 1)");
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
    it = ex_.emplace(width, comm::make_exchanger(ctx_.comm(), plan_.exchange, width, opt_.exchange)).first;
  return *it->second;
}

void Hamiltonian::apply(const double* x, double* y, int width) {
  TESSEL_CHECK(width >= 1, InputError, "Hamiltonian::apply: width ", width, " (expected >= 1)");
  comm::Exchanger& ex = exchanger(width);
  PhaseScope phase(ctx_.ledger(), "stencil/halo");
  const std::int64_t nloc = plan_.local_size();
  const int r = plan_.radius;
  const double t0 = MPI_Wtime();
  double tex = 0, twait = 0;

  // 1. Start the exchange of the boundary values (pack, post).
  kernels::pack(x, plan_.send_items.data(), static_cast<std::int64_t>(plan_.send_items.size()), width,
                ex.send_buffer());
  ex.start();
  if (!opt_.overlap) {
    const double tw = MPI_Wtime();
    ex.wait();
    twait = MPI_Wtime() - tw;
  }
  tex += MPI_Wtime() - t0;
  const double* ghost = ex.recv_buffer();

  // 2. y = V x.
  kernels::apply_potential(v_.data(), x, nloc, width, y);
  if (!opt_.overlap) {
    // 3. (plain) the Laplacian on every point: inner then boundary, as in the overlapped order.
    kernels::apply_laplacian(plan_.inner.data(), static_cast<std::int64_t>(plan_.inner.size()),
                             plan_.neighbors.data(), r, c_.data(), scale_, x, ghost, nloc, width, y);
    kernels::apply_laplacian(plan_.boundary.data(), static_cast<std::int64_t>(plan_.boundary.size()),
                             plan_.neighbors.data(), r, c_.data(), scale_, x, ghost, nloc, width, y);
  } else {
    // 3. The Laplacian on the inner points, testing the exchange now and then.
    const std::int64_t n_inner = static_cast<std::int64_t>(plan_.inner.size());
    bool done = false;
    for (std::int64_t b = 0; b < n_inner; b += opt_.test_every) {
      const std::int64_t cnt = std::min<std::int64_t>(opt_.test_every, n_inner - b);
      kernels::apply_laplacian(plan_.inner.data() + b, cnt, plan_.neighbors.data(), r, c_.data(), scale_, x,
                               ghost, nloc, width, y);
      if (!done) {
        const double tt = MPI_Wtime();
        done = ex.test();
        tex += MPI_Wtime() - tt;
      }
    }
    // 4. Wait for the exchange.
    const double tw = MPI_Wtime();
    ex.wait();
    twait = MPI_Wtime() - tw;
    tex += twait;
    // 5. The Laplacian on the boundary points.
    kernels::apply_laplacian(plan_.boundary.data(), static_cast<std::int64_t>(plan_.boundary.size()),
                             plan_.neighbors.data(), r, c_.data(), scale_, x, ghost, nloc, width, y);
  }
  const double total = MPI_Wtime() - t0;
  times_.exchange += tex;
  times_.wait += twait;
  times_.compute += total - tex;
  times_.total += total;
  times_.applies += 1;
}

}  // namespace tessel::stencil

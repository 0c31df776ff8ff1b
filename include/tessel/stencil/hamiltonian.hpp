#pragma once
/// @file hamiltonian.hpp
/// H = -1/2 Laplacian + V on a partitioned mesh, applied to a batch of vectors with the halo
/// exchange of seed 002. The executor reads as the seed's numbered steps:
///   overlapped: 1 start the exchange (p2p: receives posted before packing); 2 y = V x; 3
///               Laplacian on the inner points; through 2 and 3 the exchange is tested right
///               after posting and then every `test_every` points' worth of work, so that it
///               progresses (no MPI progress thread: docs/stencil.md, "Progress"); 4 wait; 5
///               Laplacian on the boundary points;
///   plain:      1 exchange (start + wait); 2 y = V x; 3 Laplacian on all points.
/// Both orders do the same arithmetic per point, so results are bit-identical across orders,
/// strategies and rank counts. Local kernels never call MPI.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessel/comm/exchange.hpp"
#include "tessel/core/context.hpp"
#include "tessel/stencil/halo_plan.hpp"

namespace tessel::stencil {

/// The model potentials of `tessel stencil`.
enum class PotentialKind { Harmonic, Box, SoftCoulomb };
/// Pure. "harmonic" / "box" / "softcoulomb"; InputError otherwise.
PotentialKind parse_potential(const std::string& s);
const char* to_string(PotentialKind k);
/// Pure. V at this plan's points: harmonic 1/2 omega^2 |x|^2; box 0 (walls from the mesh);
/// soft Coulomb -sum_a Z_a / sqrt(|x - R_a|^2 + a^2) with Z = 1 per atom and a = softening.
std::vector<double> potential_values(const Mesh& mesh, const HaloPlan& plan, PotentialKind kind,
                                     double omega, const std::vector<Atom>& atoms,
                                     double softening);

struct HamiltonianOptions {
  comm::ExchangeStrategy exchange = comm::ExchangeStrategy::Neighbor;
  bool overlap = true;
  /// Overlapped order: inner points between two tests of the exchange (V x goes in blocks of
  /// the same work, test_every x (6 r + 1) points). 0: the default, points_per_test(): about
  /// 65536 multiply-adds of stencil work per test (test_every = 65536 / (width (6 r + 1)),
  /// at least 64), i.e. a test every few tens of microseconds on one core.
  int test_every = 0;
};

/// Accumulated wall-clock seconds of apply() on this rank.
struct ApplyTimes {
  double exchange = 0;       ///< exposed exchange time: pack + start + tests + wait
  double pack = 0;           ///< of which packing and posting (never hidden)
  double wait = 0;           ///< of which blocked in wait()
  double tests_seconds = 0;  ///< of which inside test() (overlapped order)
  double overlapped = 0;     ///< overlapped order: V x + inner points between start and wait
                             ///< (tests excluded): the most of the exchange the order can hide
  double compute = 0;        ///< potential + Laplacian (tests excluded)
  double total = 0;
  long tests = 0;  ///< test() calls (overlapped order)
  long applies = 0;
};

class Hamiltonian {
 public:
  /// Not collective. `potential`: V at plan.points. The Context, plan and mesh spacing h must
  /// outlive the Hamiltonian.
  Hamiltonian(Context& ctx, const HaloPlan& plan, std::vector<double> potential, double h,
              HamiltonianOptions opt = {});
  ~Hamiltonian();
  /// Collective over ctx for the collective exchange strategies (every rank calls it with the
  /// same width), neighbour-wise for p2p: y = H x for `width` vectors, x and y local_size x
  /// width, item-major. The first call with a new width builds its exchanger (collective).
  /// Traffic is recorded in the ledger phase "stencil/halo".
  void apply(const double* x, double* y, int width);
  const HaloPlan& plan() const { return plan_; }
  /// V at this rank's points.
  const std::vector<double>& potential() const { return v_; }
  const HamiltonianOptions& options() const { return opt_; }
  void set_overlap(bool on) { opt_.overlap = on; }
  const ApplyTimes& times() const { return times_; }
  void reset_times() { times_ = {}; }
  /// Pure. Points of inner stencil work between two tests of the exchange for `width` vectors
  /// (HamiltonianOptions::test_every, or its default when 0).
  int points_per_test(int width) const;
  /// Pure. Bounds of the kinetic operator's spectrum on any mesh: 0 <= -1/2 Lap <= this.
  double kinetic_bound() const;

 private:
  comm::Exchanger& exchanger(int width);
  static constexpr std::int64_t kMinPointsPerTest = 64;
  Context& ctx_;
  const HaloPlan& plan_;
  std::vector<double> v_, c_;
  double scale_;
  HamiltonianOptions opt_;
  std::map<int, std::unique_ptr<comm::Exchanger>> ex_;
  ApplyTimes times_;
};

}  // namespace tessel::stencil

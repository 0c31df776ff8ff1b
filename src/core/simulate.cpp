// The compute mode's SMPI calls (core/simulate.hpp): the one place, besides core/build.hpp,
// that tests TESSEL_SMPI, because smpi_execute_flops and smpi_shared_malloc exist only in
// SimGrid's headers (brought by smpicxx's mpi.h).
#include "tessel/core/simulate.hpp"

#include <mpi.h>

#include "tessel/core/error.hpp"

namespace tessel {

ComputeMode parse_compute_mode(const std::string& s, const std::string& what) {
  if (s == "run") return ComputeMode::Run;
  TESSEL_CHECK(s == "skip", InputError, what, " '", s, "': expected run or skip");
  TESSEL_CHECK(kSimulatedMpi, InputError, what,
               " skip: skipping the local kernels exists only in the simulated build on "
               "SimGrid's SMPI (scripts/setup.sh --smpi, docs/simulation.md); this build runs "
               "on a real MPI: expected run");
  return ComputeMode::Skip;
}

std::string to_string(ComputeMode m) { return m == ComputeMode::Skip ? "skip" : "run"; }

namespace sim {

#ifdef TESSEL_SMPI
// Both end SMPI's benchmark of the rank's measured computation first (charging what ran since
// the last MPI call) and restart it after: smpi_execute_flops and smpi_execute called inside a
// benchmarked region lose that measured time (seen: a 1-rank spgemm whose measured 0.9 s of
// filtering and merging vanished from the simulated time).
void charge_flops(double flops) {
  if (flops > 0) smpi_execute_flops_benched(flops);
}
void charge_seconds(double seconds) {
  if (seconds <= 0) return;
  smpi_bench_end();  // smpi_execute_benched would take seconds of the simulated host instead
  smpi_execute(seconds);
  smpi_bench_begin();
}
void* shared_malloc(std::size_t bytes) { return SMPI_SHARED_MALLOC(bytes); }
void shared_free(void* p) noexcept { SMPI_SHARED_FREE(p); }
#else
namespace {
[[noreturn]] void not_simulated(const char* what) {
  throw Error(detail::concat("internal error: ", what,
                             " called outside the SMPI build (ComputeMode::Skip cannot be made "
                             "there)"));
}
}  // namespace
void charge_flops(double) { not_simulated("sim::charge_flops"); }
void charge_seconds(double) { not_simulated("sim::charge_seconds"); }
void* shared_malloc(std::size_t) { not_simulated("sim::shared_malloc"); }
void shared_free(void*) noexcept {}
#endif

}  // namespace sim
}  // namespace tessel

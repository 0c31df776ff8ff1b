#pragma once
/// @file build.hpp
/// Properties of this build of tessel, as constants (one place for the preprocessor test).
namespace tessel {

/// True in the simulated build on SimGrid's SMPI (TESSEL_SMPI, docs/simulation.md): the code
/// paths that differ there (blocking collectives and waits, no progress polls, the simulated
/// clock) test this constant.
#ifdef TESSEL_SMPI
inline constexpr bool kSimulatedMpi = true;
#else
inline constexpr bool kSimulatedMpi = false;
#endif

}  // namespace tessel

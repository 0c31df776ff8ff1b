#pragma once
// The `tessel` command's subcommands. Each registers its options on a CLI11 app and runs
// collectively over MPI_COMM_WORLD.
#include <CLI/CLI.hpp>
#include <functional>

namespace tessel::app {

/// Registers `gemm`; returns the function that runs it after parsing.
std::function<int()> add_gemm(CLI::App& app);
/// Registers `purify`.
std::function<int()> add_purify(CLI::App& app);
/// Registers `ssc`.
std::function<int()> add_ssc(CLI::App& app);
/// Registers `stencil`.
std::function<int()> add_stencil(CLI::App& app);
/// Registers `spgemm`.
std::function<int()> add_spgemm(CLI::App& app);
/// Registers `density`.
std::function<int()> add_density(CLI::App& app);
/// Registers `generate` (water: H and S of a periodic water box, sparse/generate.hpp).
std::function<int()> add_generate(CLI::App& app);
/// Registers `calibrate` (measures the machine, writes the planner's machine file).
std::function<int()> add_calibrate(CLI::App& app);
/// Registers `info`.
std::function<int()> add_info(CLI::App& app);

}  // namespace tessel::app

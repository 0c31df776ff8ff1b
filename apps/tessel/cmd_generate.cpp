// `tessel generate water`: H and S of a periodic box of liquid water (sparse/generate.hpp,
// docs/sparse_generator.md), written as CP2K CSR text with its blocksizes.txt, or only
// summarised (blocks, occupancy) without --out-dir.
#include <mpi.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tessel/core/atomic_file.hpp"
#include "tessel/core/context.hpp"
#include "tessel/core/error.hpp"
#include "tessel/sparse/generate.hpp"
#include "tessel/io/sparse.hpp"
#include "tessel/core/timer.hpp"

namespace tessel::app {

std::function<int()> add_generate(CLI::App& app) {
  struct Args {
    std::string system = "water", out_dir, trace;
    int molecules = 32;
    std::uint64_t seed = 1;
    double eps = 1e-6, density = 0.0334;
  };
  auto a = std::make_shared<Args>();
  CLI::App* g = app.add_subcommand("generate", "Generate H and S of a model system (block-sparse)");
  g->add_option("system", a->system, "the system: water")->capture_default_str();
  g->add_option("--molecules", a->molecules, "number of molecules")->capture_default_str();
  g->add_option("--seed", a->seed, "geometry seed")->capture_default_str();
  g->add_option("--eps", a->eps, "blocks with ||S_ij||_F < eps are not stored")
      ->capture_default_str();
  g->add_option("--density", a->density, "molecules per cubic Angstrom")->capture_default_str();
  g->add_option("--out-dir", a->out_dir,
                "write H.csr, S.csr (CP2K CSR text), blocksizes.txt and water.xyz (the atoms, "
                "Angstrom) into this directory");
  add_trace_option(g, a->trace);
  return [a]() -> int {
    Context ctx(MPI_COMM_WORLD, context_options_from_environment());
    ctx.agree([&] {
      TESSEL_CHECK(a->system == "water", InputError, "generate: system '", a->system,
                   "', expected water");
      if (!a->out_dir.empty() && ctx.rank() == 0) {
        struct stat st;
        TESSEL_CHECK(::stat(a->out_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode), InputError,
                     "--out-dir ", a->out_dir, ": expected an existing directory");
      }
    });
    TraceRun trace(ctx, a->trace);
    sparse::WaterOptions opt;
    opt.seed = a->seed;
    opt.eps = a->eps;
    opt.density = a->density;
    const Stopwatch t0;
    auto w = sparse::generate_water(ctx, a->molecules, opt);
    const double t = t0.seconds();
    const std::int64_t nb = sparse::nblocks(ctx, w.S);
    const double occ = sparse::occupation(ctx, w.S);
    if (ctx.rank() == 0)
      std::printf(
          "water: %d molecules, box %.3f A, n = %lld (%d blocks a side), %lld electrons\n"
          "stored blocks %lld, occupancy %.4f%% (eps %g), generated in %.3f s on %d ranks\n",
          a->molecules, w.box_angstrom, static_cast<long long>(w.S.rows()), w.blocks.count(),
          static_cast<long long>(w.nelectrons), static_cast<long long>(nb), 100 * occ, a->eps, t,
          ctx.size());
    if (!a->out_dir.empty()) {
      const std::string d = a->out_dir + "/";
      io::write_cp2k_csr(ctx, w.H, d + "H.csr");
      io::write_cp2k_csr(ctx, w.S, d + "S.csr");
      ctx.agree([&] {
        if (ctx.rank() != 0) return;
        io::write_block_sizes(w.blocks, d + "blocksizes.txt");
        write_text_atomic(d + "water.xyz", "atoms",
                          sparse::water_xyz(sparse::water_geometry(a->molecules, opt)));
      });
      if (ctx.rank() == 0)
        std::printf("wrote %sH.csr, %sS.csr, %sblocksizes.txt, %swater.xyz\n", d.c_str(), d.c_str(),
                    d.c_str(), d.c_str());
    }
    return trace.finish(0);
  };
}

}  // namespace tessel::app

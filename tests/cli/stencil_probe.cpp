// The halo exchange's ledger against commcount: H phi applied with every exchange strategy this
// MPI offers (alltoallv, ialltoallv, neighbor, persistent when built, p2p) on a METIS-partitioned
// irregular mesh, batch of 3 vectors, 3 applies each. Building the executors (graph
// communicators, persistent requests, the agreement allreduce) happens with counting paused;
// then commcount and the ledger are reset together and must agree exactly on the applies.
// Usage: stencil_probe OUT.json
#include <mpi.h>

#include <cstdio>
#include <string>

#include "tessel/comm/exchange.hpp"
#include "tessel/core/context.hpp"
#include "tessel/stencil/hamiltonian.hpp"
#include "tessel/stencil/partition.hpp"

using namespace tessel;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    if (argc < 2) {
      if (rank == 0) std::fprintf(stderr, "usage: stencil_probe OUT.json\n");
      MPI_Finalize();
      return 2;
    }
    comm::pcontrol(0);
    Context ctx(MPI_COMM_WORLD);
    auto mesh = stencil::Mesh::spheres({{"C", 0, 0, 0}, {"C", 2.5, 0.5, 0}, {"O", -1.5, 1.5, 0.5}},
                                       2.2, 0.4);
    auto owner = stencil::partition_mesh(mesh, ctx.size(), stencil::Partitioner::Metis, 6);
    auto plan = stencil::make_halo_plan(mesh, owner, ctx.size(), 6, ctx.rank());
    std::vector<double> v(static_cast<std::size_t>(plan.local_size()), 0.1);
    std::vector<std::unique_ptr<stencil::Hamiltonian>> hs;
    for (auto s : {comm::ExchangeStrategy::Alltoallv, comm::ExchangeStrategy::Ialltoallv,
                   comm::ExchangeStrategy::Neighbor, comm::ExchangeStrategy::Persistent,
                   comm::ExchangeStrategy::P2P}) {
      if (s == comm::ExchangeStrategy::Persistent && !comm::have_persistent_neighbor()) continue;
      hs.push_back(std::make_unique<stencil::Hamiltonian>(
          ctx, plan, v, mesh.spacing(), stencil::HamiltonianOptions{s, true, 64}));
    }
    const int w = 3;
    std::vector<double> x(static_cast<std::size_t>(plan.local_size() * w), 1.0), y(x.size());
    for (auto& h : hs) h->apply(x.data(), y.data(), w);  // builds the executors (not counted)
    ctx.comm().barrier();
    ctx.ledger().reset();
    comm::pcontrol(2);
    comm::pcontrol(1);
    for (int r = 0; r < 3; ++r)
      for (auto& h : hs) h->apply(x.data(), y.data(), w);
    comm::pcontrol(0);
    const PhaseCounts t = ctx.ledger().total();
    comm::Comm quiet(ctx.comm().raw(), nullptr);
    const char* names[] = {"p2p_sent_bytes", "p2p_sent_msgs", "p2p_recv_bytes",
                           "p2p_recv_msgs",  "coll_bytes",    "coll_calls"};
    constexpr int kN = 6;
    std::int64_t sum[kN] = {t.p2p_sent_bytes, t.p2p_sent_msgs, t.p2p_recv_bytes,
                            t.p2p_recv_msgs,  t.coll_bytes,    t.coll_calls};
    std::int64_t mx[kN];
    for (int i = 0; i < kN; ++i) mx[i] = sum[i];
    quiet.allreduce(sum, kN, MPI_SUM);
    quiet.allreduce(mx, kN, MPI_MAX);
    if (rank == 0) {
      std::string js = "{\"ranks\": " + std::to_string(ctx.size()) +
                       ", \"strategies\": " + std::to_string(hs.size());
      for (int a = 0; a < 2; ++a) {
        const std::int64_t* val = a == 0 ? sum : mx;
        js += a == 0 ? ", \"total\": {" : ", \"max\": {";
        for (int i = 0; i < kN; ++i)
          js += std::string(i ? ", " : "") + "\"" + names[i] + "\": " + std::to_string(val[i]);
        js += "}";
      }
      js += "}\n";
      std::FILE* f = std::fopen(argv[1], "w");
      if (!f || std::fputs(js.c_str(), f) < 0 || std::fclose(f) != 0) rc = 1;
    }
    rc = quiet.allreduce_value(rc, MPI_MAX);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stencil_probe (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}

// A block-sparse multiply run whose ledger totals are compared with shared/tools/commcount by
// check_spgemm_commcount.sh: matrices built with put_block/finalize, then Cannon (point-to-
// point), rma25d with L = auto (MPI_Rget + partial C panels) twice through one window cache,
// and one multiply with op T (the conform step). Writes the ledger's totals and per-rank
// maxima as JSON (same shape as rma_probe).
// Usage: spgemm_probe OUT.json [MOLECULES]
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/sparse/multiply.hpp"

using namespace tessel;
using namespace tessel::sparse;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  try {
    if (argc < 2 || argc > 3) {
      if (rank == 0) std::fprintf(stderr, "usage: spgemm_probe OUT.json [MOLECULES]\n");
      MPI_Finalize();
      return 2;
    }
    const int nmol = argc == 3 ? std::atoi(argv[2]) : 20;
    Context ctx(MPI_COMM_WORLD);
    {
      std::vector<int> s;
      for (int m = 0; m < nmol; ++m) s.insert(s.end(), {4, 1, 1});
      BlockSizes bs(s);
      auto [pr, pc] = Distribution::default_grid(ctx.size());
      Distribution d = Distribution::random(bs, bs, pr, pc, 5);
      BlockSparseMatrix<double> A(ctx, d, "A"), C(ctx, d, "C");
      std::vector<double> v;
      for (int r = 0; r < bs.count(); ++r)  // every rank puts its share, many to other owners
        for (int c = 0; c < bs.count(); ++c) {
          int dm = std::abs(r / 3 - c / 3);
          if (std::min(dm, nmol - dm) > 3 || (r + c) % ctx.size() != ctx.rank()) continue;
          v.assign(static_cast<std::size_t>(bs.size(r)) * bs.size(c), 1.0 / (1 + r + c));
          A.put_block(r, c, v.data());
        }
      A.finalize();
      SpMultiplyOptions o;
      o.algorithm = SpAlgorithm::Cannon;
      multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o);
      SpMultiplyCache cache;
      o.algorithm = SpAlgorithm::Rma25d;
      o.layers = 1;  // the largest valid L <= 4: C partials go point-to-point
      for (int L : valid_layers(C.distribution().pr(), C.distribution().pc()))
        if (L <= 4) o.layers = L;
      for (int rep = 0; rep < 2; ++rep)
        multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o, &cache);
      o.filter_eps = 1e-8;
      multiply(ctx, 1.0, SpOp::T, A, SpOp::N, A, 0.5, C, o, &cache);
      o.layers = 0;  // auto: the eq. 7 choice's allreduce is counted too
      multiply(ctx, 1.0, SpOp::N, A, SpOp::N, A, 0.0, C, o, &cache);
    }  // windows freed here (not counted by either)
    const PhaseCounts t = ctx.ledger().total();

    tessel::comm::pcontrol(0);  // the probe's own bookkeeping: not counted, not recorded
    comm::Comm quiet(ctx.comm().raw(), nullptr);
    const char* names[] = {"p2p_sent_bytes", "p2p_sent_msgs", "p2p_recv_bytes", "p2p_recv_msgs",
                           "rma_put_bytes",  "rma_get_bytes", "rma_acc_bytes",  "rma_ops",
                           "coll_bytes",     "coll_calls"};
    constexpr int kN = 10;
    std::int64_t sum[kN] = {t.p2p_sent_bytes, t.p2p_sent_msgs, t.p2p_recv_bytes, t.p2p_recv_msgs,
                            t.rma_put_bytes,  t.rma_get_bytes, t.rma_acc_bytes,  t.rma_ops,
                            t.coll_bytes,     t.coll_calls};
    std::int64_t mx[kN];
    for (int i = 0; i < kN; ++i) mx[i] = sum[i];
    quiet.allreduce(sum, kN, MPI_SUM);
    quiet.allreduce(mx, kN, MPI_MAX);
    if (rank == 0) {
      std::string js = "{\"ranks\": " + std::to_string(ctx.size());
      for (int a = 0; a < 2; ++a) {
        const std::int64_t* x = a == 0 ? sum : mx;
        js += a == 0 ? ", \"total\": {" : ", \"max\": {";
        for (int i = 0; i < kN; ++i)
          js += std::string(i ? ", " : "") + "\"" + names[i] + "\": " + std::to_string(x[i]);
        js += "}";
      }
      js += "}\n";
      std::FILE* f = std::fopen(argv[1], "w");
      if (!f || std::fputs(js.c_str(), f) < 0 || std::fclose(f) != 0) {
        std::fprintf(stderr, "spgemm_probe: cannot write %s\n", argv[1]);
        rc = 1;
      }
    }
    rc = quiet.allreduce_value(rc, MPI_MAX);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spgemm_probe (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}

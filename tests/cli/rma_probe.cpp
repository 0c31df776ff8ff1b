// rma_probe: a known mix of point-to-point traffic (comm::Comm isend/irecv) and one-sided
// traffic (comm::Window rget/put/accumulate, passive and fence epochs, several element types,
// self targets, zero counts, MPI_PROC_NULL targets) in a Context. Checks the data it moved,
// then, after a node-shared redistribution (shm_phase) and block-sparse finalize / transpose /
// redistribute moves (sparse_phase: comm::alltoall_counts + comm::exchange), writes the
// ledger's totals as JSON (rank 0) for check_rma_commcount.sh to compare with
// shared/tools/commcount:
//
//   {"ranks": p, "bad": 0, "total": {<counter>: sum over ranks}, "max": {<counter>: max}}
//
// with commcount's counter names (p2p_sent_bytes, ..., rma_ops, coll_bytes, coll_calls).
// The ledger is read before the probe's own bookkeeping, which runs with commcount paused
// (MPI_Pcontrol(0)), so the whole-program counts of commcount must equal the ledger.
//
// Usage: rma_probe OUT.json [SCALE]   (SCALE >= 1 multiplies every message length)
// Exit code 0 when the data moved was right and the JSON was written, 1 otherwise.
#include <mpi.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/comm/window.hpp"
#include "tessel/core/context.hpp"
#include "tessel/layout/redistribute.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace {

using tessel::PhaseCounts;
using tessel::comm::Comm;
using tessel::comm::LockAllEpoch;
using tessel::comm::RequestSet;
using tessel::comm::Window;
using C = std::complex<double>;

double dval(int r, std::int64_t i) { return 1000.0 * r + static_cast<double>(i); }

// Point-to-point: a ring of doubles, a symmetric all-pairs exchange of ints, an empty message.
std::int64_t p2p_phase(const Comm& c, std::int64_t s) {
  const int p = c.size(), me = c.rank();
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  std::int64_t bad = 0;
  const std::int64_t ring = 1000 * s;
  std::vector<double> out(static_cast<std::size_t>(ring)), in(static_cast<std::size_t>(ring), -1);
  for (std::int64_t i = 0; i < ring; ++i) out[static_cast<std::size_t>(i)] = dval(me, i);
  auto pair_len = [&](int a, int b) { return (1 + (a + b) % 7) * s; };  // symmetric in a, b
  std::vector<std::vector<int>> sends(static_cast<std::size_t>(p)),
      recvs(static_cast<std::size_t>(p));
  char empty_out = 0, empty_in = 0;
  {
    RequestSet rs;
    c.irecv(in.data(), ring, left, 1, rs);
    c.isend(out.data(), ring, right, 1, rs);
    for (int t = 0; t < p; ++t) {
      if (t == me) continue;
      auto& so = sends[static_cast<std::size_t>(t)];
      auto& ri = recvs[static_cast<std::size_t>(t)];
      so.assign(static_cast<std::size_t>(pair_len(me, t)), me * 100 + t);
      ri.assign(static_cast<std::size_t>(pair_len(t, me)), -1);
      c.irecv(ri.data(), pair_len(t, me), t, 2, rs);
      c.isend(so.data(), pair_len(me, t), t, 2, rs);
    }
    c.irecv(&empty_in, 0, left, 3, rs);
    c.isend(&empty_out, 0, right, 3, rs);
    rs.wait_all();
  }
  for (std::int64_t i = 0; i < ring; ++i) bad += in[static_cast<std::size_t>(i)] != dval(left, i);
  for (int t = 0; t < p; ++t)
    for (int v : recvs[static_cast<std::size_t>(t)]) bad += v != t * 100 + me;
  return bad;
}

// One-sided traffic through comm::Window.
std::int64_t rma_phase(const Comm& c, std::int64_t s) {
  const int p = c.size(), me = c.rank();
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  std::int64_t bad = 0;
  auto dcount = [&](int r) { return 64 * s + r; };
  Window<double> wd(c, dcount(me));
  Window<C> wc(c, 8 * s);
  Window<int> wi(c, me == 0 ? 0 : 5);  // rank 0 exposes nothing
  for (std::int64_t i = 0; i < wd.size(); ++i) wd.data()[i] = dval(me, i);
  for (std::int64_t i = 0; i < wc.size(); ++i) wc.data()[i] = C(0, 0);
  for (std::int64_t i = 0; i < wi.size(); ++i) wi.data()[i] = 7 * me + static_cast<int>(i);
  c.barrier();

  // Passive target: Rget a slice of every rank's window (itself included), and a zero-count
  // Rget; Put into the right neighbour's [0, 3s); Accumulate into the left's [3s, 5s);
  // operations on MPI_PROC_NULL (nothing moves, nothing is counted).
  auto len = [&](int t) { return (1 + (me + t) % 5) * s; };
  auto off = [&](int t) { return (me * 7 + t) % (dcount(t) - len(t) + 1); };
  std::vector<std::vector<double>> got(static_cast<std::size_t>(p));
  std::vector<double> put_src(static_cast<std::size_t>(3 * s)),
      acc_src(static_cast<std::size_t>(2 * s), 0.5);
  for (std::int64_t j = 0; j < 3 * s; ++j) put_src[static_cast<std::size_t>(j)] = -dval(me, j);
  std::vector<int> ig(static_cast<std::size_t>(5 * p), -1);
  {
    LockAllEpoch epoch(wd);
    RequestSet rs;
    for (int t = 0; t < p; ++t) {
      auto& g = got[static_cast<std::size_t>(t)];
      g.assign(static_cast<std::size_t>(len(t)), -1);
      wd.rget(g.data(), len(t), t, off(t), rs);
    }
    double dummy = 0;
    wd.rget(&dummy, 0, right, 0, rs);
    wd.rget(&dummy, 1, MPI_PROC_NULL, 0, rs);
    wd.put(put_src.data(), 3 * s, MPI_PROC_NULL, 0);
    rs.wait_all();
    wd.flush_local_all();
    // Everyone has read rank t's initial values once all ranks passed this barrier...
  }
  c.barrier();  // ...so the writes below cannot race with the reads above
  {
    LockAllEpoch epoch(wd);
    wd.put(put_src.data(), 3 * s, right, 0);
    wd.accumulate(acc_src.data(), 2 * s, left, 3 * s);
    wd.accumulate(acc_src.data(), 2 * s, MPI_PROC_NULL, 0);
    wd.flush(right);
  }
  {
    LockAllEpoch epoch(wi);
    RequestSet rs;
    for (int t = 1; t < p; ++t) wi.rget(&ig[static_cast<std::size_t>(5 * t)], 5, t, 0, rs);
    rs.wait_all();
  }
  // Active target (fence): complex Accumulate and Put into the right neighbour.
  std::vector<C> cacc(static_cast<std::size_t>(4 * s), C(1, me));
  C cput(me, -1);
  wc.fence();
  wc.accumulate(cacc.data(), 4 * s, right, 0);
  wc.put(&cput, 1, right, 8 * s - 1);
  wc.fence();
  c.barrier();

  for (int t = 0; t < p; ++t)
    for (std::int64_t i = 0; i < len(t); ++i)
      bad += got[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)] != dval(t, off(t) + i);
  for (int t = 1; t < p; ++t)
    for (int i = 0; i < 5; ++i) bad += ig[static_cast<std::size_t>(5 * t + i)] != 7 * t + i;
  {
    LockAllEpoch epoch(wd);
    wd.sync();
    for (std::int64_t j = 0; j < 3 * s; ++j) bad += wd.data()[j] != -dval(left, j);
    // one accumulate into me, from my right neighbour (p == 1: from myself)
    for (std::int64_t j = 3 * s; j < 5 * s; ++j) bad += wd.data()[j] != dval(me, j) + 0.5;
  }
  for (std::int64_t j = 0; j < 4 * s; ++j) bad += wc.data()[j] != C(1, left);
  bad += wc.data()[8 * s - 1] != C(left, -1);
  return bad;
}

// Node-shared redistribution (layout::RedistOptions): a block-cyclic matrix gathered on rank 0
// and scattered back, on the real node (every pair through the shared window: no p2p) and on
// emulated nodes of 2 ranks (shared window within, messages between). Its MPI calls (the node
// agreement, the pair-count allgather, the window's allgather/allreduce and the node barrier)
// are collectives both counters see; the shared-memory stores are seen by neither.
std::int64_t shm_phase(const Comm& c, std::int64_t s) {
  namespace L = tessel::layout;
  const int p = c.size(), me = c.rank();
  const std::int64_t m = 7 * s + 3, n = 5 + p;
  auto bc = L::Layout::block_cyclic(m, n, 2, 3, 1, p, 0, 0, p);
  auto one = L::Layout::on_rank(m, n, 0, p);
  const std::int64_t lr = bc.local_rows(me), lc = bc.local_cols(me);
  std::vector<double> a(static_cast<std::size_t>(std::max<std::int64_t>(1, lr * lc)));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = dval(me, static_cast<std::int64_t>(i));
  std::vector<double> full(static_cast<std::size_t>(me == 0 ? m * n : 1)), back(a.size(), -1.0);
  std::int64_t bad = 0;
  for (int node_size : {0, 2}) {
    L::RedistOptions o;
    o.node_shared = true;
    o.node_size = node_size;
    L::redistribute(c, bc, a.data(), std::max<std::int64_t>(1, lr), one, full.data(),
                    me == 0 ? m : 1, o);
    L::redistribute(c, one, full.data(), me == 0 ? m : 1, bc, back.data(),
                    std::max<std::int64_t>(1, lr), o);
    for (std::int64_t i = 0; i < lr * lc; ++i)
      if (back[static_cast<std::size_t>(i)] != a[static_cast<std::size_t>(i)]) ++bad;
  }
  return bad;
}

// Block-sparse moves (finalize: agree allreduce + alltoall of counts + p2p; transpose;
// redistribute), each block's values a formula of its position, checked after the round trips.
std::int64_t sparse_phase(const tessel::Context& ctx, std::int64_t s) {
  namespace S = tessel::sparse;
  const int p = ctx.size(), me = ctx.rank();
  std::vector<int> sizes;
  for (std::int64_t k = 0; k < s; ++k)
    for (int x : {1, 4, 5, 13, 23, 4, 1}) sizes.push_back(x);
  const S::BlockSizes b(sizes);
  const int nb = b.count();
  auto val = [](int br, int bc, int e) { return 1000.0 * br + bc + 1e-3 * e; };
  auto [pr, pc] = S::Distribution::default_grid(p);
  S::BlockSparseMatrix<double> a(ctx, S::Distribution::random(b, b, pr, pc, 3), "A");
  std::vector<double> v;
  for (int br = 0; br < nb; ++br)
    for (int bc = 0; bc < nb; ++bc) {
      if ((br * 3 + bc) % 4 == 0 || (br * 7 + bc) % p != me) continue;  // put by one rank
      v.resize(static_cast<std::size_t>(b.size(br)) * b.size(bc));
      for (std::size_t e = 0; e < v.size(); ++e) v[e] = val(br, bc, static_cast<int>(e));
      a.put_block(br, bc, v.data());
    }
  a.finalize();
  auto tt = S::transpose(ctx, S::transpose(ctx, a));
  auto r = S::redistribute(ctx, a, S::Distribution::random(b, b, 1, p, 4));
  std::int64_t bad = 0;
  for (const auto* m : {&a, &tt, &r})
    m->for_each_block([&](int br, int bc, const double* x, int rr, int cc) {
      if ((br * 3 + bc) % 4 == 0) ++bad;
      for (int e = 0; e < rr * cc; ++e)
        if (x[e] != val(br, bc, e)) ++bad;
    });
  if (S::nblocks(ctx, tt) != S::nblocks(ctx, a) || S::nblocks(ctx, r) != S::nblocks(ctx, a)) ++bad;
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  try {
    if (argc < 2 || argc > 3) {
      if (rank == 0) std::fprintf(stderr, "usage: rma_probe OUT.json [SCALE]\n");
      MPI_Finalize();
      return 2;
    }
    const std::int64_t scale = argc == 3 ? std::atoll(argv[2]) : 1;
    if (scale < 1) {
      if (rank == 0) std::fprintf(stderr, "rma_probe: SCALE must be >= 1, not '%s'\n", argv[2]);
      MPI_Finalize();
      return 2;
    }
    tessel::Context ctx(MPI_COMM_WORLD);
    std::int64_t bad = p2p_phase(ctx.comm(), scale);
    bad += rma_phase(ctx.comm(), scale);  // windows freed on return
    bad += shm_phase(ctx.comm(), scale);
    bad += sparse_phase(ctx, scale);
    const PhaseCounts t = ctx.ledger().total();

    // The probe's own bookkeeping: not counted by commcount, not recorded in the ledger.
    tessel::comm::pcontrol(0);
    Comm quiet(ctx.comm().raw(), nullptr);
    const char* names[] = {"p2p_sent_bytes", "p2p_sent_msgs", "p2p_recv_bytes", "p2p_recv_msgs",
                           "rma_put_bytes",  "rma_get_bytes", "rma_acc_bytes",  "rma_ops",
                           "coll_bytes",     "coll_calls"};
    constexpr int kN = 10;
    std::int64_t sum[kN + 1] = {t.p2p_sent_bytes,
                                t.p2p_sent_msgs,
                                t.p2p_recv_bytes,
                                t.p2p_recv_msgs,
                                t.rma_put_bytes,
                                t.rma_get_bytes,
                                t.rma_acc_bytes,
                                t.rma_ops,
                                t.coll_bytes,
                                t.coll_calls,
                                bad};
    std::int64_t mx[kN];
    for (int i = 0; i < kN; ++i) mx[i] = sum[i];
    quiet.allreduce(sum, kN + 1, MPI_SUM);
    quiet.allreduce(mx, kN, MPI_MAX);
    if (sum[kN] != 0) {
      if (rank == 0)
        std::fprintf(stderr, "rma_probe: %lld wrong values moved\n",
                     static_cast<long long>(sum[kN]));
      rc = 1;
    }
    if (rank == 0) {
      std::string js = "{\"ranks\": " + std::to_string(ctx.size()) +
                       ", \"scale\": " + std::to_string(scale) +
                       ", \"bad\": " + std::to_string(sum[kN]);
      for (int a = 0; a < 2; ++a) {
        const std::int64_t* v = a == 0 ? sum : mx;
        js += a == 0 ? ", \"total\": {" : ", \"max\": {";
        for (int i = 0; i < kN; ++i)
          js += std::string(i ? ", " : "") + "\"" + names[i] + "\": " + std::to_string(v[i]);
        js += "}";
      }
      js += "}\n";
      std::FILE* f = std::fopen(argv[1], "w");
      if (!f || std::fputs(js.c_str(), f) < 0 || std::fclose(f) != 0) {
        std::fprintf(stderr, "rma_probe: cannot write %s\n", argv[1]);
        rc = 1;
      }
    }
    rc = quiet.allreduce_value(rc, MPI_MAX);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rma_probe (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}

// 2D SUMMA on the caller's block-cyclic layouts. Reads as: the layouts' process grid
// (layout::ProcessGrid2D over C's owner table: row and column communicators) -> for each k
// segment: pass the A panel around the process row and the B panel around the process column
// in a ring that starts at the owner (as BLACS's default broadcast; each link carries one
// copy, and neighbours are often on the same node), receives posted one segment ahead ->
// local GEMM (the first segment's also scales C by beta).
#include "summa_native.hpp"

#include <algorithm>
#include <complex>
#include <memory>
#include <string>

#include "local_gemm.hpp"
#include "tessel/comm/comm_cache.hpp"
#include "tessel/core/context.hpp"
#include "tessel/core/error.hpp"
#include "tessel/core/trace.hpp"
#include "tessel/layout/grid2d.hpp"

namespace tessel::dense::detail {
using layout::Layout;
using layout::Segment;

namespace {
constexpr int kTagA = comm::tag::kSummaPanelA, kTagB = comm::tag::kSummaPanelB;

// Every group's intervals fill its local storage from 0 without gaps (not so for a submatrix
// view that starts inside a block).
bool packed_from_zero(const layout::Partition1D& part) {
  std::vector<std::int64_t> next(static_cast<std::size_t>(part.groups()), 0);
  for (const auto& v : part.intervals()) {
    if (v.local != next[static_cast<std::size_t>(v.group)]) return false;
    next[static_cast<std::size_t>(v.group)] += v.len;
  }
  return true;
}
}  // namespace

bool summa_native_applies(Op opa, Op opb, const Layout& a, const Layout& b, const Layout& c) {
  if (opa != Op::N || opb != Op::N) return false;
  if (!packed_from_zero(c.row_partition()) || !packed_from_zero(c.col_partition())) return false;
  if (a.row_partition() != c.row_partition() || b.col_partition() != c.col_partition())
    return false;
  const int pr = c.row_partition().groups(), pc = c.col_partition().groups();
  if (a.col_partition().groups() != pc || b.row_partition().groups() != pr) return false;
  for (int r = 0; r < pr; ++r)
    for (int q = 0; q < pc; ++q) {
      const int o = c.owner(r, q);
      if (o < 0 || a.owner(r, q) != o || b.owner(r, q) != o) return false;
    }
  return true;
}

namespace {
// Local extent of the intervals of `part` that belong to group g.
std::int64_t owned(const layout::Partition1D& part, int g) {
  std::int64_t s = 0;
  for (const auto& v : part.intervals())
    if (v.group == g) s += v.len;
  return s;
}
}  // namespace

std::int64_t summa_native_recv_elems(const Layout& a, const Layout& b, const Layout& c, int rank) {
  auto g = c.groups_of(rank);
  if (!g) return 0;
  const std::int64_t k = a.cols();
  const std::int64_t mr = owned(c.row_partition(), g->first),
                     nc = owned(c.col_partition(), g->second);
  const std::int64_t ka = owned(a.col_partition(), g->second),
                     kb = owned(b.row_partition(), g->first);
  return mr * (k - ka) + (k - kb) * nc;
}

std::vector<Segment> summa_native_segments(const Layout& a, const Layout& b) {
  // k segments with one A owner column and one B owner row; neighbours with the same owners
  // and contiguous local storage are joined (on one rank: a single GEMM over all of k).
  std::vector<Segment> segs;
  for (const Segment& sg : layout::merge(a.col_partition(), b.row_partition())) {
    if (!segs.empty()) {
      Segment& t = segs.back();
      if (t.a_group == sg.a_group && t.b_group == sg.b_group && t.a_local + t.len == sg.a_local &&
          t.b_local + t.len == sg.b_local) {
        t.len += sg.len;
        continue;
      }
    }
    segs.push_back(sg);
  }
  return segs;
}

namespace {

template <class T>
struct Panel {
  std::vector<T> a, b;
  comm::RequestSet recv_a, recv_b, sends;
  bool fwd_a = false, fwd_b = false;  // passed on to the next rank of the ring (or nothing to pass)
};

}  // namespace

template <class T>
void summa_native(Context& ctx, T alpha, const DistMatrix<T>& A, const DistMatrix<T>& B, T beta,
                  DistMatrix<T>& C) {
  PhaseScope gemm_phase(ctx.ledger(), "gemm");
  const Layout& lc = C.layout();
  const int pr = lc.row_partition().groups(), pc = lc.col_partition().groups();
  std::vector<int> placement(static_cast<std::size_t>(pr) * static_cast<std::size_t>(pc));
  for (int r = 0; r < pr; ++r)
    for (int q = 0; q < pc; ++q) placement[static_cast<std::size_t>(r) * pc + q] = lc.owner(r, q);
  // The grid's row and column communicators are kept in the Context's cache: two
  // MPI_Comm_split on every call made test_density 10x slower under MPICH with more ranks
  // than cores (MPICH busy-polls in them; docs/mpich.md). C's layout is the same on every
  // rank, so is the key: a hit everywhere or a miss everywhere, where the grid is made
  // collectively.
  std::string key = ::tessel::detail::concat("dense/summa ", pr, "x", pc, ":");
  for (int o : placement) key += ::tessel::detail::concat(" ", o);
  const auto kept = ctx.cache().get<layout::ProcessGrid2D>(key, [&] {
    return std::make_shared<layout::ProcessGrid2D>(ctx.comm(), pr, pc, std::move(placement));
  });
  const layout::ProcessGrid2D& grid = *kept;
  if (!grid.in_grid()) return;
  // The A ring runs along grid.row() (ranked by process column), the B ring along grid.col()
  // (ranked by process row).
  const int myr = grid.prow(), myc = grid.pcol();
  const comm::Comm& row = grid.row();
  const comm::Comm& col = grid.col();
  const std::int64_t mr = owned(lc.row_partition(), myr), nc = owned(lc.col_partition(), myc);
  const std::vector<Segment> segs = summa_native_segments(A.layout(), B.layout());

  // C = beta C on the owned part (beta == 0: not read): by the first segment's GEMM, or, when
  // there is no segment (k = 0), by the kernel's k = 0 case.
  if (segs.empty())
    kernels::gemm<T>(ctx.compute(), 'N', 'N', mr, nc, 0, alpha, nullptr, 1, nullptr, 1, beta,
                     C.data(), C.ld(), {}, 0);

  Panel<T> buf[2];
  const T* pa[2] = {nullptr, nullptr};  // this segment's A panel (in place or received)
  const T* pb[2] = {nullptr, nullptr};
  std::int64_t lda[2] = {1, 1}, ldb[2] = {1, 1};
  auto post = [&](std::size_t s) {
    const Segment& sg = segs[s];
    const int x = static_cast<int>(s % 2);
    Panel<T>& P = buf[x];
    P.sends.wait_all();  // the sends of segment s - 2 out of this buffer
    P.fwd_a = P.fwd_b = false;
    {
      PhaseScope ph(ctx.ledger(), "summa A");  // owner column starts the ring along the process row
      if (sg.a_group == myc) {
        // A rank may hold no A (or no B): data() is then null and takes no offset.
        pa[x] = A.data() ? A.data() + sg.a_local * A.ld() : nullptr;
        lda[x] = A.ld();
        if (pc > 1 && mr * sg.len > 0) {
          if (A.ld() != mr) {  // pack to send contiguously
            P.a.resize(static_cast<std::size_t>(mr * sg.len));
            for (std::int64_t j = 0; j < sg.len; ++j)
              std::copy_n(A.data() + (sg.a_local + j) * A.ld(), mr, P.a.data() + j * mr);
            pa[x] = P.a.data();
            lda[x] = mr;
          }
          row.isend(pa[x], mr * sg.len, (myc + 1) % pc, kTagA, P.sends);
        }
      } else {
        P.a.resize(static_cast<std::size_t>(mr * sg.len));
        pa[x] = P.a.data();
        lda[x] = std::max<std::int64_t>(1, mr);
        if (mr * sg.len > 0)
          row.irecv(P.a.data(), mr * sg.len, (myc + pc - 1) % pc, kTagA, P.recv_a);
      }
    }
    {
      PhaseScope ph(ctx.ledger(), "summa B");  // owner row starts the ring along the process column
      if (sg.b_group == myr) {
        pb[x] = B.data() ? B.data() + sg.b_local : nullptr;
        ldb[x] = B.ld();
        if (pr > 1 && sg.len * nc > 0) {
          P.b.resize(static_cast<std::size_t>(sg.len * nc));
          for (std::int64_t j = 0; j < nc; ++j)
            std::copy_n(B.data() + j * B.ld() + sg.b_local, sg.len, P.b.data() + j * sg.len);
          col.isend(P.b.data(), sg.len * nc, (myr + 1) % pr, kTagB, P.sends);
        }
      } else {
        P.b.resize(static_cast<std::size_t>(sg.len * nc));
        pb[x] = P.b.data();
        ldb[x] = std::max<std::int64_t>(1, sg.len);
        if (sg.len * nc > 0)
          col.irecv(P.b.data(), sg.len * nc, (myr + pr - 1) % pr, kTagB, P.recv_b);
      }
    }
  };

  // A received panel goes on to the next rank of the ring (unless that rank started it) as soon
  // as it has arrived: checked between GEMM chunks, and at the latest when the segment is used.
  // Every rank thus sends to its neighbour in segment order.
  auto forward_a = [&](std::size_t s) {
    Panel<T>& P = buf[s % 2];
    if (P.fwd_a || !P.recv_a.test_all()) return;
    P.fwd_a = true;
    const Segment& sg = segs[s];
    const int next_c = (myc + 1) % pc;
    if (sg.a_group != myc && next_c != sg.a_group && mr * sg.len > 0) {
      PhaseScope ph(ctx.ledger(), "summa A");
      row.isend(P.a.data(), mr * sg.len, next_c, kTagA, P.sends);
    }
  };
  auto forward_b = [&](std::size_t s) {
    Panel<T>& P = buf[s % 2];
    if (P.fwd_b || !P.recv_b.test_all()) return;
    P.fwd_b = true;
    const Segment& sg = segs[s];
    const int next_r = (myr + 1) % pr;
    if (sg.b_group != myr && next_r != sg.b_group && sg.len * nc > 0) {
      PhaseScope ph(ctx.ledger(), "summa B");
      col.isend(P.b.data(), sg.len * nc, next_r, kTagB, P.sends);
    }
  };

  if (!segs.empty()) post(0);
  for (std::size_t s = 0; s < segs.size(); ++s) {
    const int x = static_cast<int>(s % 2);
    buf[x].recv_a.wait_all();
    buf[x].recv_b.wait_all();
    forward_a(s);  // before post(s + 1), so sends stay in segment order
    forward_b(s);
    const bool more = s + 1 < segs.size();
    if (more) post(s + 1);
    Panel<T>& N = buf[(s + 1) % 2];
    const KernelSpan kspan(&ctx.ledger(), "local gemm", 2.0 * mr * nc * segs[s].len);
    // In column chunks that forward the next panels and test the sends in between; one call
    // when there is nothing left to progress.
    const bool in_flight = more || !N.sends.empty();
    kernels::gemm<T>(
        ctx.compute(), 'N', 'N', mr, nc, segs[s].len, alpha, pa[x], lda[x], pb[x], ldb[x],
        s == 0 ? beta : T(1), C.data(), C.ld(),
        [&] {
          if (more) {
            forward_a(s + 1);
            forward_b(s + 1);
          }
          N.sends.test_all();
        },
        in_flight ? 256 : 0);
  }
  for (auto& P : buf) P.sends.wait_all();
}

template void summa_native<double>(Context&, double, const DistMatrix<double>&,
                                   const DistMatrix<double>&, double, DistMatrix<double>&);
template void summa_native<std::complex<double>>(Context&, std::complex<double>,
                                                 const DistMatrix<std::complex<double>>&,
                                                 const DistMatrix<std::complex<double>>&,
                                                 std::complex<double>,
                                                 DistMatrix<std::complex<double>>&);

}  // namespace tessel::dense::detail

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

// The process grid of C's owner table. Its row and column communicators are kept in the
// Context's cache: two MPI_Comm_split on every call made test_density 10x slower under MPICH
// with more ranks than cores (MPICH busy-polls in them; docs/mpich.md). C's layout is the same
// on every rank, so is the key: a hit everywhere or a miss everywhere, where the grid is made
// collectively.
std::shared_ptr<const layout::ProcessGrid2D> cached_grid(Context& ctx, const Layout& lc) {
  const int pr = lc.row_partition().groups(), pc = lc.col_partition().groups();
  std::vector<int> placement(static_cast<std::size_t>(pr) * static_cast<std::size_t>(pc));
  for (int r = 0; r < pr; ++r)
    for (int q = 0; q < pc; ++q) placement[static_cast<std::size_t>(r) * pc + q] = lc.owner(r, q);
  std::string key = ::tessel::detail::concat("dense/summa ", pr, "x", pc, ":");
  for (int o : placement) key += ::tessel::detail::concat(" ", o);
  return ctx.cache().get<layout::ProcessGrid2D>(key, [&] {
    return std::make_shared<layout::ProcessGrid2D>(ctx.comm(), pr, pc, std::move(placement));
  });
}

// One SUMMA on a grid this rank belongs to: the two rings (A along grid.row(), ranked by
// process column; B along grid.col(), ranked by process row), double-buffered one segment
// ahead, and the local GEMMs.
template <class T>
class SummaRings {
 public:
  SummaRings(Context& ctx, const layout::ProcessGrid2D& grid, T alpha, const DistMatrix<T>& A,
             const DistMatrix<T>& B, T beta, DistMatrix<T>& C)
      : ctx_(ctx),
        row_(grid.row()),
        col_(grid.col()),
        myr_(grid.prow()),
        myc_(grid.pcol()),
        pr_(C.layout().row_partition().groups()),
        pc_(C.layout().col_partition().groups()),
        mr_(owned(C.layout().row_partition(), myr_)),
        nc_(owned(C.layout().col_partition(), myc_)),
        segs_(summa_native_segments(A.layout(), B.layout())),
        alpha_(alpha),
        beta_(beta),
        A_(A),
        B_(B),
        C_(C) {}

  void run() {
    if (segs_.empty()) scale_c_only();
    if (!segs_.empty()) post(0);
    for (std::size_t s = 0; s < segs_.size(); ++s) {
      const int x = static_cast<int>(s % 2);
      buf_[x].recv_a.wait_all();
      buf_[x].recv_b.wait_all();
      forward_a(s);  // before post(s + 1), so sends stay in segment order
      forward_b(s);
      if (s + 1 < segs_.size()) post(s + 1);
      multiply(s);
    }
    for (auto& P : buf_) P.sends.wait_all();
  }

 private:
  // C = beta C on the owned part (beta == 0: not read) when there is no segment (k = 0), by the
  // kernel's k = 0 case; otherwise the first segment's GEMM does it.
  void scale_c_only() {
    kernels::gemm<T>(ctx_.compute(), 'N', 'N', mr_, nc_, 0, alpha_, nullptr, 1, nullptr, 1, beta_,
                     C_.data(), C_.ld(), {}, 0);
  }

  // Segment s's panels into buffer s % 2: the owners start the rings, the others post receives.
  void post(std::size_t s) {
    const int x = static_cast<int>(s % 2);
    Panel<T>& P = buf_[x];
    P.sends.wait_all();  // the sends of segment s - 2 out of this buffer
    P.fwd_a = P.fwd_b = false;
    post_a(segs_[s], x);
    post_b(segs_[s], x);
  }

  void post_a(const Segment& sg, int x) {
    PhaseScope ph(ctx_.ledger(), "summa A");  // owner column starts the ring along the process row
    Panel<T>& P = buf_[x];
    if (sg.a_group == myc_) {
      // A rank may hold no A (or no B): data() is then null and takes no offset.
      pa_[x] = A_.data() ? A_.data() + sg.a_local * A_.ld() : nullptr;
      lda_[x] = A_.ld();
      if (pc_ > 1 && mr_ * sg.len > 0) {
        if (A_.ld() != mr_) {  // pack to send contiguously
          P.a.resize(static_cast<std::size_t>(mr_ * sg.len));
          for (std::int64_t j = 0; j < sg.len; ++j)
            std::copy_n(A_.data() + (sg.a_local + j) * A_.ld(), mr_, P.a.data() + j * mr_);
          pa_[x] = P.a.data();
          lda_[x] = mr_;
        }
        row_.isend(pa_[x], mr_ * sg.len, (myc_ + 1) % pc_, kTagA, P.sends);
      }
    } else {
      P.a.resize(static_cast<std::size_t>(mr_ * sg.len));
      pa_[x] = P.a.data();
      lda_[x] = std::max<std::int64_t>(1, mr_);
      if (mr_ * sg.len > 0)
        row_.irecv(P.a.data(), mr_ * sg.len, (myc_ + pc_ - 1) % pc_, kTagA, P.recv_a);
    }
  }

  void post_b(const Segment& sg, int x) {
    PhaseScope ph(ctx_.ledger(), "summa B");  // owner row starts the ring along the process column
    Panel<T>& P = buf_[x];
    if (sg.b_group == myr_) {
      pb_[x] = B_.data() ? B_.data() + sg.b_local : nullptr;
      ldb_[x] = B_.ld();
      if (pr_ > 1 && sg.len * nc_ > 0) {
        P.b.resize(static_cast<std::size_t>(sg.len * nc_));
        for (std::int64_t j = 0; j < nc_; ++j)
          std::copy_n(B_.data() + j * B_.ld() + sg.b_local, sg.len, P.b.data() + j * sg.len);
        col_.isend(P.b.data(), sg.len * nc_, (myr_ + 1) % pr_, kTagB, P.sends);
      }
    } else {
      P.b.resize(static_cast<std::size_t>(sg.len * nc_));
      pb_[x] = P.b.data();
      ldb_[x] = std::max<std::int64_t>(1, sg.len);
      if (sg.len * nc_ > 0)
        col_.irecv(P.b.data(), sg.len * nc_, (myr_ + pr_ - 1) % pr_, kTagB, P.recv_b);
    }
  }

  // A received panel goes on to the next rank of the ring (unless that rank started it) as soon
  // as it has arrived: checked between GEMM chunks, and at the latest when the segment is used.
  // Every rank thus sends to its neighbour in segment order.
  void forward_a(std::size_t s) {
    Panel<T>& P = buf_[s % 2];
    if (P.fwd_a || !P.recv_a.test_all()) return;
    P.fwd_a = true;
    const Segment& sg = segs_[s];
    const int next_c = (myc_ + 1) % pc_;
    if (sg.a_group != myc_ && next_c != sg.a_group && mr_ * sg.len > 0) {
      PhaseScope ph(ctx_.ledger(), "summa A");
      row_.isend(P.a.data(), mr_ * sg.len, next_c, kTagA, P.sends);
    }
  }

  void forward_b(std::size_t s) {
    Panel<T>& P = buf_[s % 2];
    if (P.fwd_b || !P.recv_b.test_all()) return;
    P.fwd_b = true;
    const Segment& sg = segs_[s];
    const int next_r = (myr_ + 1) % pr_;
    if (sg.b_group != myr_ && next_r != sg.b_group && sg.len * nc_ > 0) {
      PhaseScope ph(ctx_.ledger(), "summa B");
      col_.isend(P.b.data(), sg.len * nc_, next_r, kTagB, P.sends);
    }
  }

  // Segment s's local GEMM (the first one scales C by beta), in column chunks that forward the
  // next panels and test the sends in between; one call when there is nothing left to progress.
  void multiply(std::size_t s) {
    const int x = static_cast<int>(s % 2);
    const bool more = s + 1 < segs_.size();
    Panel<T>& N = buf_[(s + 1) % 2];
    const KernelSpan kspan(&ctx_.ledger(), "local gemm", 2.0 * mr_ * nc_ * segs_[s].len);
    const bool in_flight = more || !N.sends.empty();
    kernels::gemm<T>(
        ctx_.compute(), 'N', 'N', mr_, nc_, segs_[s].len, alpha_, pa_[x], lda_[x], pb_[x], ldb_[x],
        s == 0 ? beta_ : T(1), C_.data(), C_.ld(),
        [&] {
          if (more) {
            forward_a(s + 1);
            forward_b(s + 1);
          }
          N.sends.test_all();
        },
        in_flight ? kernels::kProgressChunk : 0);
  }

  Context& ctx_;
  const comm::Comm& row_;
  const comm::Comm& col_;
  const int myr_, myc_, pr_, pc_;
  const std::int64_t mr_, nc_;
  const std::vector<Segment> segs_;
  const T alpha_, beta_;
  const DistMatrix<T>& A_;
  const DistMatrix<T>& B_;
  DistMatrix<T>& C_;
  Panel<T> buf_[2];
  const T* pa_[2] = {nullptr, nullptr};  // this segment's A panel (in place or received)
  const T* pb_[2] = {nullptr, nullptr};
  std::int64_t lda_[2] = {1, 1}, ldb_[2] = {1, 1};
};

}  // namespace

template <class T>
void summa_native(Context& ctx, T alpha, const DistMatrix<T>& A, const DistMatrix<T>& B, T beta,
                  DistMatrix<T>& C) {
  PhaseScope gemm_phase(ctx.ledger(), "gemm");
  const auto grid = cached_grid(ctx, C.layout());
  if (!grid->in_grid()) return;
  SummaRings<T>(ctx, *grid, alpha, A, B, beta, C).run();
}

template void summa_native<double>(Context&, double, const DistMatrix<double>&,
                                   const DistMatrix<double>&, double, DistMatrix<double>&);
template void summa_native<std::complex<double>>(Context&, std::complex<double>,
                                                 const DistMatrix<std::complex<double>>&,
                                                 const DistMatrix<std::complex<double>>&,
                                                 std::complex<double>,
                                                 DistMatrix<std::complex<double>>&);

}  // namespace tessel::dense::detail

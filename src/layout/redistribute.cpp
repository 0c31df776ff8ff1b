#include "tessel/layout/redistribute.hpp"

#include <algorithm>
#include <complex>
#include <cstring>
#include <vector>

#include "tessel/core/error.hpp"

namespace tessel::layout {
namespace {

// The merged segments of one dimension, filtered to those this rank owns on one side.
struct Plan1D {
  std::vector<Segment> segs;
};

// Segments whose `side` group equals g (side 0: source, 1: destination).
std::vector<const Segment*> pick(const std::vector<Segment>& s, int side, int g) {
  std::vector<const Segment*> out;
  for (const auto& x : s)
    if ((side == 0 ? x.a_group : x.b_group) == g) out.push_back(&x);
  return out;
}

template <class F>
void for_each_block(const std::vector<const Segment*>& rs, const std::vector<const Segment*>& cs,
                    F&& f) {
  for (const Segment* c : cs)
    for (const Segment* r : rs) f(*r, *c);
}

}  // namespace

RedistVolume redist_volume(const Layout& src, const Layout& dst, int rank) {
  RedistVolume v;
  auto rows = merge(src.row_partition(), dst.row_partition());
  auto cols = merge(src.col_partition(), dst.col_partition());
  std::vector<char> to(static_cast<std::size_t>(src.comm_size()), 0), from(to);
  if (auto g = src.groups_of(rank)) {
    for_each_block(pick(rows, 0, g->first), pick(cols, 0, g->second), [&](const Segment& r, const Segment& c) {
      int d = dst.owner(r.b_group, c.b_group);
      if (d < 0) return;
      std::int64_t e = r.len * c.len;
      if (d == rank) v.self_elems += e;
      else { v.send_elems += e; to[static_cast<std::size_t>(d)] = 1; }
    });
  }
  if (auto g = dst.groups_of(rank)) {
    for_each_block(pick(rows, 1, g->first), pick(cols, 1, g->second), [&](const Segment& r, const Segment& c) {
      int s = src.owner(r.a_group, c.a_group);
      if (s >= 0 && s != rank) { v.recv_elems += r.len * c.len; from[static_cast<std::size_t>(s)] = 1; }
    });
  }
  for (char x : to) v.send_msgs += x;
  for (char x : from) v.recv_msgs += x;
  return v;
}

template <class T>
void redistribute(const comm::Comm& c, const Layout& src, const T* a, std::int64_t lda,
                  const Layout& dst, T* b, std::int64_t ldb) {
  TESSEL_CHECK(src.rows() == dst.rows() && src.cols() == dst.cols(), DimensionMismatch,
               "redistribute: source is ", src.rows(), " x ", src.cols(), " but destination is ",
               dst.rows(), " x ", dst.cols());
  TESSEL_CHECK(src.comm_size() == c.size() && dst.comm_size() == c.size(), LayoutMismatch,
               "redistribute: layouts are for ", src.comm_size(), " and ", dst.comm_size(),
               " ranks, the communicator has ", c.size());
  const int me = c.rank(), p = c.size();
  const auto rows = merge(src.row_partition(), dst.row_partition());
  const auto cols = merge(src.col_partition(), dst.col_partition());
  const auto sg = src.groups_of(me);
  const auto dg = dst.groups_of(me);
  std::vector<const Segment*> srows, scols, drows, dcols;
  if (sg) { srows = pick(rows, 0, sg->first); scols = pick(cols, 0, sg->second); }
  if (dg) { drows = pick(rows, 1, dg->first); dcols = pick(cols, 1, dg->second); }

  // Count what goes to and comes from every rank.
  std::vector<std::int64_t> scount(static_cast<std::size_t>(p), 0), rcount(scount);
  for_each_block(srows, scols, [&](const Segment& r, const Segment& s) {
    int d = dst.owner(r.b_group, s.b_group);
    if (d >= 0) scount[static_cast<std::size_t>(d)] += r.len * s.len;
  });
  for_each_block(drows, dcols, [&](const Segment& r, const Segment& s) {
    int o = src.owner(r.a_group, s.a_group);
    if (o >= 0) rcount[static_cast<std::size_t>(o)] += r.len * s.len;
  });
  std::vector<std::int64_t> soff(static_cast<std::size_t>(p) + 1, 0), roff(soff);
  for (int q = 0; q < p; ++q) {
    soff[q + 1] = soff[q] + (q == me ? 0 : scount[q]);
    roff[q + 1] = roff[q] + (q == me ? 0 : rcount[q]);
  }
  std::vector<T> sbuf(static_cast<std::size_t>(soff[p])), rbuf(static_cast<std::size_t>(roff[p]));

  comm::RequestSet rs;
  const int tag = 7101;
  for (int q = 0; q < p; ++q)
    if (q != me && rcount[q] > 0) c.irecv(rbuf.data() + roff[q], rcount[q], q, tag, rs);

  // Pack (column segments outer, row segments inner: the receiver unpacks in this order).
  std::vector<std::int64_t> cur(soff.begin(), soff.end() - 1);
  for_each_block(srows, scols, [&](const Segment& r, const Segment& s) {
    int d = dst.owner(r.b_group, s.b_group);
    if (d < 0) return;
    for (std::int64_t j = 0; j < s.len; ++j) {
      const T* from = a + (s.a_local + j) * lda + r.a_local;
      T* to = (d == me) ? b + (s.b_local + j) * ldb + r.b_local : sbuf.data() + cur[d];
      std::copy(from, from + r.len, to);
      if (d != me) cur[d] += r.len;
    }
  });
  for (int q = 0; q < p; ++q)
    if (q != me && scount[q] > 0) c.isend(sbuf.data() + soff[q], scount[q], q, tag, rs);
  rs.wait_all();

  std::vector<std::int64_t> rcur(roff.begin(), roff.end() - 1);
  for_each_block(drows, dcols, [&](const Segment& r, const Segment& s) {
    int o = src.owner(r.a_group, s.a_group);
    if (o < 0 || o == me) return;
    for (std::int64_t j = 0; j < s.len; ++j) {
      const T* from = rbuf.data() + rcur[o];
      std::copy(from, from + r.len, b + (s.b_local + j) * ldb + r.b_local);
      rcur[o] += r.len;
    }
  });
}

template void redistribute<double>(const comm::Comm&, const Layout&, const double*, std::int64_t,
                                   const Layout&, double*, std::int64_t);
template void redistribute<std::complex<double>>(const comm::Comm&, const Layout&,
                                                 const std::complex<double>*, std::int64_t,
                                                 const Layout&, std::complex<double>*, std::int64_t);

}  // namespace tessel::layout

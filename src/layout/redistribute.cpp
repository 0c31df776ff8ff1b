#include "tessel/layout/redistribute.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>
#include <complex>
#include <cstring>
#include <vector>

#include "tessel/comm/comm_cache.hpp"
#include "tessel/core/context.hpp"
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

std::vector<std::int64_t> redist_recv_from(const Layout& src, const Layout& dst, int rank) {
  std::vector<std::int64_t> from(static_cast<std::size_t>(src.comm_size()), 0);
  auto g = dst.groups_of(rank);
  if (!g) return from;
  auto rows = merge(src.row_partition(), dst.row_partition());
  auto cols = merge(src.col_partition(), dst.col_partition());
  for_each_block(pick(rows, 1, g->first), pick(cols, 1, g->second), [&](const Segment& r, const Segment& c) {
    int s = src.owner(r.a_group, c.a_group);
    if (s >= 0 && s != rank) from[static_cast<std::size_t>(s)] += r.len * c.len;
  });
  return from;
}

int redist_node_size(const comm::Comm& c, const RedistOptions& opt) {
  return opt.node_size != 0 ? opt.node_size : c.node_size();
}

template <class T>
void redistribute(const comm::Comm& c, const Layout& src, const T* a, std::int64_t lda,
                  const Layout& dst, T* b, std::int64_t ldb, const RedistOptions& opt) {
  TESSEL_CHECK(src.rows() == dst.rows() && src.cols() == dst.cols(), DimensionMismatch,
               "redistribute: source is ", src.rows(), " x ", src.cols(), " but destination is ",
               dst.rows(), " x ", dst.cols());
  TESSEL_CHECK(src.comm_size() == c.size() && dst.comm_size() == c.size(), LayoutMismatch,
               "redistribute: layouts are for ", src.comm_size(), " and ", dst.comm_size(),
               " ranks, the communicator has ", c.size());
  const int me = c.rank(), p = c.size();
  // Rank-local checks, agreed before the first message (one allreduce when p > 1): the
  // leading dimensions hold the local blocks (a rank holding nothing may pass any ld >= 1).
  agree_on(c, [&] {
    const std::int64_t ra = src.local_rows(me), ca = src.local_cols(me);
    const std::int64_t rb = dst.local_rows(me), cb = dst.local_cols(me);
    TESSEL_CHECK(lda >= 1 && (ra == 0 || ca == 0 || lda >= ra), LayoutMismatch,
                 "redistribute: lda = ", lda, " on rank ", me, ", expected >= ",
                 std::max<std::int64_t>(1, ra), " (its local rows of the source)");
    TESSEL_CHECK(ldb >= 1 && (rb == 0 || cb == 0 || ldb >= rb), LayoutMismatch,
                 "redistribute: ldb = ", ldb, " on rank ", me, ", expected >= ",
                 std::max<std::int64_t>(1, rb), " (its local rows of the destination)");
  });
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

  // Node-shared: the pairs (q, me) on this node move through `win`. Node rank order is the
  // order of c's ranks, so the destination's part holds its incoming segments by source rank
  // of c (the order of the p2p receive buffer). shm[q]: q's node rank when q is a same-node
  // peer moving through the window, -1 otherwise (point-to-point). The node communicator and
  // the window are c's cached ones (Comm::cache(): a Context's communicator; made once, the
  // window grown when a part must grow), else made for this call.
  std::vector<int> shm(static_cast<std::size_t>(p), -1);
  std::vector<std::int64_t> shm_to(static_cast<std::size_t>(p), 0);    // my offset in q's part
  std::vector<std::int64_t> shm_from(static_cast<std::size_t>(p), 0);  // q's offset in my part
  std::unique_ptr<comm::NodeShared> own;  // without a cache: made for this call, freed at its end
  const comm::NodeComm* node = nullptr;
  comm::SharedWindow<unsigned char>* win = nullptr;  // null: no same-node pair uses shm
  if (opt.node_shared && p > 1) {
    comm::NodeShared* ns = nullptr;
    if (c.cache()) {
      ns = &c.cache()->node_shared(c, redist_node_size(c, opt));
    } else {
      own = std::make_unique<comm::NodeShared>(c, redist_node_size(c, opt));
      ns = own.get();
    }
    node = &ns->node();
    const comm::Comm& nc = node->comm();
    const int nn = nc.size();
    std::vector<int> crank(static_cast<std::size_t>(nn), -1);  // node rank -> rank of c
    for (int q = 0; q < p; ++q)
      if (node->node_rank_of(q) >= 0) crank[static_cast<std::size_t>(node->node_rank_of(q))] = q;
    // counts[u * nn + t]: elements node rank u sends to node rank t (known on every node rank).
    // The allgather also orders the reuse of a cached window: every node rank has finished
    // its loads of the previous call before any rank stores into the window for this one.
    std::vector<std::int64_t> mine(static_cast<std::size_t>(nn), 0),
        counts(static_cast<std::size_t>(nn) * static_cast<std::size_t>(nn), 0);
    for (int t = 0; t < nn; ++t)
      if (t != nc.rank()) mine[static_cast<std::size_t>(t)] = scount[static_cast<std::size_t>(crank[t])];
    if (nn > 1) nc.allgather(mine.data(), nn, counts.data());
    std::int64_t node_total = 0;
    std::vector<std::int64_t> need(static_cast<std::size_t>(nn), 0);  // bytes of each part
    for (int u = 0; u < nn; ++u)
      for (int t = 0; t < nn; ++t) {
        const std::int64_t x = counts[static_cast<std::size_t>(u * nn + t)];
        node_total += x;
        need[static_cast<std::size_t>(t)] += x * static_cast<std::int64_t>(sizeof(T));
      }
    if (node_total > 0) win = ns->window(need);  // the same decision on every node rank
    if (win) {  // null: MPI cannot make a shared window here, this node uses p2p
      win->lock_all();
      for (int t = 0; t < nn; ++t) {
        std::int64_t off = 0;  // where node rank u's segments start in t's part
        for (int u = 0; u < nn; ++u) {
          if (u == t) continue;
          if (u == nc.rank()) shm_to[static_cast<std::size_t>(crank[t])] = off;
          if (t == nc.rank()) shm_from[static_cast<std::size_t>(crank[u])] = off;
          off += counts[static_cast<std::size_t>(u * nn + t)];
        }
      }
      for (int t = 0; t < nn; ++t)
        if (t != nc.rank()) shm[static_cast<std::size_t>(crank[t])] = t;
    }
  }
  // Node rank r's part of the window, as elements of T (each part starts 64-byte aligned).
  auto part = [&](int r) { return reinterpret_cast<T*>(win->peer_data(r)); };

  std::vector<std::int64_t> soff(static_cast<std::size_t>(p) + 1, 0), roff(soff);
  for (int q = 0; q < p; ++q) {
    const bool msg = q != me && shm[q] < 0;
    soff[q + 1] = soff[q] + (msg ? scount[q] : 0);
    roff[q + 1] = roff[q] + (msg ? rcount[q] : 0);
  }
  std::vector<T> sbuf(static_cast<std::size_t>(soff[p])), rbuf(static_cast<std::size_t>(roff[p]));

  // Everything that can fail on one rank only happened above (agreed, or sizes every rank
  // computes alike). Should this rank still leave from here on, `guard` sends failure notices
  // on c and on the node communicator, and its peers throw PeerFailure instead of waiting for
  // it; rs, abandoned while unwinding, does not wait for them either (comm::RequestSet).
  comm::ExchangeGuard guard(c.raw());
  comm::RequestSet rs;
  if (win) {
    guard.add(node->comm().raw());
    rs.watch(node->comm().raw());
  }
  const int tag = comm::tag::kRedistribute;
  for (int q = 0; q < p; ++q)
    if (q != me && shm[q] < 0 && rcount[q] > 0) c.irecv(rbuf.data() + roff[q], rcount[q], q, tag, rs);
  c.test_point("redistribute: posted");

  // Pack (column segments outer, row segments inner: the receiver unpacks in this order):
  // into b for this rank, into the destination's window part for a same-node peer, into the
  // send buffer otherwise.
  std::vector<std::int64_t> cur(soff.begin(), soff.end() - 1);
  std::vector<T*> dest(static_cast<std::size_t>(p), nullptr);
  for (int q = 0; q < p; ++q) {
    if (q == me) continue;
    if (shm[q] >= 0) { dest[q] = part(shm[q]) + shm_to[q]; cur[q] = 0; }
    else dest[q] = sbuf.data();
  }
  for_each_block(srows, scols, [&](const Segment& r, const Segment& s) {
    int d = dst.owner(r.b_group, s.b_group);
    if (d < 0) return;
    for (std::int64_t j = 0; j < s.len; ++j) {
      const T* from = a + (s.a_local + j) * lda + r.a_local;
      T* to = (d == me) ? b + (s.b_local + j) * ldb + r.b_local : dest[d] + cur[d];
      std::copy(from, from + r.len, to);
      if (d != me) cur[d] += r.len;
    }
  });
  for (int q = 0; q < p; ++q) {
    if (q == me || scount[q] == 0) continue;
    if (shm[q] >= 0) win->record_transfer(scount[q] * static_cast<std::int64_t>(sizeof(T)));
    else c.isend(sbuf.data() + soff[q], scount[q], q, tag, rs);
  }
  // Unified memory model (MPI-3.1 sec. 11.5.4 / example 11.10): Win_sync + node barrier +
  // Win_sync orders every peer's stores into my part before my loads below.
  if (win) win->publish(node->comm());
  rs.wait_all();

  std::vector<std::int64_t> rcur(roff.begin(), roff.end() - 1);
  std::vector<const T*> orig(static_cast<std::size_t>(p), nullptr);
  for (int q = 0; q < p; ++q) {
    if (q == me) continue;
    if (shm[q] >= 0) { orig[q] = part(-1) + shm_from[q]; rcur[q] = 0; }
    else orig[q] = rbuf.data();
  }
  for_each_block(drows, dcols, [&](const Segment& r, const Segment& s) {
    int o = src.owner(r.a_group, s.a_group);
    if (o < 0 || o == me) return;
    for (std::int64_t j = 0; j < s.len; ++j) {
      const T* from = orig[o] + rcur[o];
      std::copy(from, from + r.len, b + (s.b_local + j) * ldb + r.b_local);
      rcur[o] += r.len;
    }
  });
  if (win) win->unlock_all();
  // A window made for this call only (no cache): ~NodeShared frees it (MPI_Win_free,
  // collective over the node) after every rank's loads.
}

template void redistribute<double>(const comm::Comm&, const Layout&, const double*, std::int64_t,
                                   const Layout&, double*, std::int64_t,
                                   const RedistOptions&);
template void redistribute<std::complex<double>>(const comm::Comm&, const Layout&,
                                                 const std::complex<double>*, std::int64_t,
                                                 const Layout&, std::complex<double>*, std::int64_t,
                                                 const RedistOptions&);

}  // namespace tessel::layout

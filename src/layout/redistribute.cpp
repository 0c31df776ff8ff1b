// The one dense redistribution. Reads as: check -> plan (make_redist_plan, pure) -> executor
// (comm::Exchange with its own buffers: point-to-point, MPI_Ialltoallv or node-shared window)
// -> post receives -> pack (the kept blocks straight into b) -> start -> wait -> unpack ->
// finish.
#include "tessel/layout/redistribute.hpp"

#include <algorithm>
#include <complex>
#include <memory>
#include <vector>

#include "tessel/comm/exchange.hpp"
#include "tessel/comm/agree.hpp"
#include "tessel/core/error.hpp"
#include "tessel/layout/redist_plan.hpp"

namespace tessel::layout {

RedistVolume redist_volume(const Layout& src, const Layout& dst, int rank) {
  const RedistPlan p = make_redist_plan(src, dst, rank);
  RedistVolume v;
  v.send_elems = p.send_elems();
  v.recv_elems = p.recv_elems();
  v.self_elems = p.self_elems();
  v.send_msgs = p.send_msgs();
  v.recv_msgs = p.recv_msgs();
  return v;
}

int redist_node_size(const comm::Comm& c, const RedistOptions& opt) {
  return opt.node_size != 0 ? opt.node_size : c.node_size();
}

namespace {

// The executor's plan is the exchange less the kept elements (no message; copied straight into
// b), its strategy the options' choice.
comm::ExchangePlan message_plan(const RedistPlan& plan) {
  comm::ExchangePlan msgs = plan.exchange;
  msgs.self_count = msgs.self_send = msgs.self_recv = 0;
  return msgs;
}

comm::ExchangeOptions exchange_options(const comm::Comm& c, const RedistOptions& opt) {
  comm::ExchangeOptions x;
  x.strategy = opt.alltoallv     ? comm::ExchangeStrategy::Ialltoallv
               : opt.node_shared ? comm::ExchangeStrategy::NodeShared
                                 : comm::ExchangeStrategy::P2P;
  x.tag = comm::tag::kRedistribute;
  x.node_size = redist_node_size(c, opt);
  return x;
}

}  // namespace

template <class T>
void redistribute(const comm::Comm& c, const Layout& src, const T* a, std::int64_t lda,
                  const Layout& dst, T* b, std::int64_t ldb, const RedistOptions& opt) {
  TESSEL_CHECK(src.rows() == dst.rows() && src.cols() == dst.cols(), DimensionMismatch,
               "redistribute: source is ", src.rows(), " x ", src.cols(), " but destination is ",
               dst.rows(), " x ", dst.cols());
  TESSEL_CHECK(src.comm_size() == c.size() && dst.comm_size() == c.size(), LayoutMismatch,
               "redistribute: layouts are for ", src.comm_size(), " and ", dst.comm_size(),
               " ranks, the communicator has ", c.size());
  TESSEL_CHECK(
      !(opt.alltoallv && opt.node_shared), InputError,
      "redistribute: RedistOptions asks for both alltoallv and node_shared (expected at most one)");
  const int me = c.rank();
  const RedistPlan plan = make_redist_plan(src, dst, me);
  // Rank-local checks, agreed before the first message (one allreduce when p > 1): the
  // leading dimensions hold the local blocks (a rank holding nothing may pass any ld >= 1);
  // for alltoallv, the counts fit MPI's int.
  agree_on(c, [&] {
    const std::int64_t ra = src.local_rows(me), ca = src.local_cols(me);
    const std::int64_t rb = dst.local_rows(me), cb = dst.local_cols(me);
    TESSEL_CHECK(lda >= 1 && (ra == 0 || ca == 0 || lda >= ra), LayoutMismatch,
                 "redistribute: lda = ", lda, " on rank ", me,
                 ", expected >= ", std::max<std::int64_t>(1, ra),
                 " (its local rows of the source)");
    TESSEL_CHECK(ldb >= 1 && (rb == 0 || cb == 0 || ldb >= rb), LayoutMismatch,
                 "redistribute: ldb = ", ldb, " on rank ", me,
                 ", expected >= ", std::max<std::int64_t>(1, rb),
                 " (its local rows of the destination)");
    if (opt.alltoallv) comm::AlltoallvCounts::of(plan.exchange, c.size());
  });
  // Everything that can fail on one rank only happened above (agreed, or sizes every rank
  // computes alike). Should this rank still leave from here on, the executor's failure guard
  // notifies its peers, which throw PeerFailure instead of waiting for it.
  comm::Exchange<T> ex(c, message_plan(plan), exchange_options(c, opt));
  ex.post_receives();
  c.test_point("redistribute: posted");

  // Pack (each block's columns in turn: the receiver unpacks in this order): into b for this
  // rank, into the executor's piece for the destination otherwise.
  std::vector<std::int64_t> cur(static_cast<std::size_t>(c.size()), 0);
  std::vector<T*> to_peer(static_cast<std::size_t>(c.size()), nullptr);
  for (int q : plan.exchange.send_peers) to_peer[static_cast<std::size_t>(q)] = ex.send_piece(q);
  for (const RedistBlock& k : plan.send_blocks) {
    const std::size_t d = static_cast<std::size_t>(k.peer);
    for (std::int64_t j = 0; j < k.cols; ++j) {
      const T* from = a + (k.src_col + j) * lda + k.src_row;
      T* to = k.peer == me ? b + (k.dst_col + j) * ldb + k.dst_row : to_peer[d] + cur[d];
      std::copy(from, from + k.rows, to);
      if (k.peer != me) cur[d] += k.rows;
    }
  }
  ex.start();
  ex.wait();

  std::fill(cur.begin(), cur.end(), 0);
  std::vector<const T*> from_peer(static_cast<std::size_t>(c.size()), nullptr);
  for (int q : plan.exchange.recv_peers) from_peer[static_cast<std::size_t>(q)] = ex.recv_piece(q);
  for (const RedistBlock& k : plan.recv_blocks) {
    const std::size_t o = static_cast<std::size_t>(k.peer);
    for (std::int64_t j = 0; j < k.cols; ++j) {
      const T* from = from_peer[o] + cur[o];
      std::copy(from, from + k.rows, b + (k.dst_col + j) * ldb + k.dst_row);
      cur[o] += k.rows;
    }
  }
  ex.finish();
}

template void redistribute<double>(const comm::Comm&, const Layout&, const double*, std::int64_t,
                                   const Layout&, double*, std::int64_t, const RedistOptions&);
template void redistribute<std::complex<double>>(const comm::Comm&, const Layout&,
                                                 const std::complex<double>*, std::int64_t,
                                                 const Layout&, std::complex<double>*, std::int64_t,
                                                 const RedistOptions&);

}  // namespace tessel::layout

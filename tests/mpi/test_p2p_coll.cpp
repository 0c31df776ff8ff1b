// comm::ibcast / ireduce_sum / iallreduce_sum with CollImpl::P2P (segmented chains of
// point-to-point messages driven by RequestSet continuations): results bit-identical to the
// root's data (broadcast) and equal to the exact sum of integer-valued doubles (reductions),
// for counts 0, 1, odd and many segments, every root, N_DUP parts on duplicated communicators
// completed in mixed order, the forwarding pattern of SymmSquareCube Algorithm 5, and a ledger
// equal to the chain formula of p2p_coll.hpp.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tessel/comm/nonblocking.hpp"
#include "tessel/comm/p2p_coll.hpp"
#include "tessel/core/ledger.hpp"

using tessel::CommLedger;
using tessel::InputError;
using tessel::PhaseCounts;
using tessel::comm::CollImpl;
using tessel::comm::Comm;
using tessel::comm::DupSet;
using tessel::comm::Pending;
using tessel::comm::RequestSet;

namespace {

// Non-integer values that differ in every bit pattern (bit-identity is what we check).
double data_value(int tag, std::int64_t i) {
  return std::sin(0.37 * static_cast<double>(i) + 1.3 * tag) * 1e3 + 1.0 / (3.0 + tag);
}
// Integer-valued contributions: every partial sum is exact, so any order gives the same sum.
double int_value(int rank, std::int64_t i) {
  return static_cast<double>((rank + 1) * (i % 97) - 3 * rank + (i % 5));
}
double int_sum(int m, std::int64_t i) {
  double s = 0;
  for (int r = 0; r < m; ++r) s += int_value(r, i);
  return s;
}

const std::vector<std::int64_t> kCounts = {0, 1, 7, 1001, 40000};
// 8 bytes = 1 double per segment; 24 = 3; 100 -> 12 (not a divisor of the counts); 1 byte is
// below one item and must round up to one item; the default (32 KiB).
const std::vector<std::int64_t> kSegBytes = {1, 24, 100, tessel::comm::kDefaultSegmentBytes};

std::int64_t nseg(std::int64_t count, std::int64_t seg_bytes) {
  return tessel::comm::segment_count(count, seg_bytes, sizeof(double));
}

}  // namespace

TEST(P2PColl, ParseAndSegments) {
  EXPECT_EQ(tessel::comm::parse_coll_impl("mpi"), CollImpl::Mpi);
  EXPECT_EQ(tessel::comm::parse_coll_impl("p2p"), CollImpl::P2P);
  EXPECT_THROW(tessel::comm::parse_coll_impl("P2P "), InputError);
  EXPECT_STREQ(tessel::comm::to_string(CollImpl::P2P), "p2p");
  EXPECT_EQ(tessel::comm::segment_items(1, sizeof(double)), 1);
  EXPECT_EQ(tessel::comm::segment_items(262144, sizeof(double)), 32768);
  EXPECT_EQ(nseg(0, 8), 0);
  EXPECT_EQ(nseg(7, 24), 3);
  EXPECT_THROW(tessel::comm::segment_items(0, 8), InputError);
}

TEST(P2PColl, RejectsBadArguments) {
  Comm w(MPI_COMM_WORLD, nullptr);
  RequestSet rs;
  double x = 0;
  EXPECT_THROW(tessel::comm::ibcast(w, &x, 1, w.size(), rs, CollImpl::P2P), InputError);
  EXPECT_THROW(tessel::comm::ibcast(w, &x, -1, 0, rs, CollImpl::P2P), InputError);
  EXPECT_THROW(tessel::comm::ibcast(w, &x, 1, 0, rs, CollImpl::P2P, 0), InputError);
  EXPECT_TRUE(rs.empty());
}

TEST(P2PColl, BroadcastEveryRootCountSegment) {
  CommLedger ledger;
  Comm w(MPI_COMM_WORLD, &ledger);
  const int m = w.size(), me = w.rank();
  for (std::int64_t count : kCounts)
    for (std::int64_t seg : kSegBytes)
      for (int root = 0; root < m; ++root) {
        if (count == 40000 && seg == 1) continue;  // 40000 one-item messages: too slow here
        std::vector<double> ref(static_cast<std::size_t>(count)), buf(ref.size(), -7.5);
        for (std::int64_t i = 0; i < count; ++i) ref[i] = data_value(root, i);
        if (me == root) buf = ref;
        ledger.reset();
        RequestSet rs;
        Pending t = tessel::comm::ibcast(w, buf.data(), count, root, rs, CollImpl::P2P, seg);
        rs.wait(t);
        EXPECT_TRUE(t.done());
        EXPECT_TRUE(rs.empty());
        // count 0: data() may be null, and memcmp of a null pointer is undefined (UBSan).
        ASSERT_EQ(
            ref.empty() ? 0 : std::memcmp(buf.data(), ref.data(), ref.size() * sizeof(double)), 0)
            << "count " << count << " seg " << seg << " root " << root;
        // Chain formula: B bytes in s segments; non-roots receive B in s messages; all but the
        // last of the chain (root + m - 1) send B in s messages.
        const PhaseCounts k = ledger.total();
        const int pos = (me - root + m) % m;
        const std::int64_t B = count * 8, s = nseg(count, seg);
        const bool moves = m > 1 && s > 0;
        EXPECT_EQ(k.p2p_recv_bytes, moves && pos > 0 ? B : 0);
        EXPECT_EQ(k.p2p_recv_msgs, moves && pos > 0 ? s : 0);
        EXPECT_EQ(k.p2p_sent_bytes, moves && pos < m - 1 ? B : 0);
        EXPECT_EQ(k.p2p_sent_msgs, moves && pos < m - 1 ? s : 0);
        EXPECT_EQ(k.coll_bytes, 0);
        EXPECT_EQ(k.coll_calls, 0);
      }
}

TEST(P2PColl, ReduceEveryRootCountSegment) {
  CommLedger ledger;
  Comm w(MPI_COMM_WORLD, &ledger);
  const int m = w.size(), me = w.rank();
  for (std::int64_t count : kCounts)
    for (std::int64_t seg : kSegBytes)
      for (int root = 0; root < m; ++root) {
        if (count == 40000 && seg == 1) continue;
        std::vector<double> send(static_cast<std::size_t>(count)), recv(send.size(), -1.0);
        for (std::int64_t i = 0; i < count; ++i) send[i] = int_value(me, i);
        ledger.reset();
        tessel::comm::reduce_sum(w, send.data(), me == root ? recv.data() : nullptr, count, root,
                                 CollImpl::P2P, seg);
        if (me == root)
          for (std::int64_t i = 0; i < count; ++i)
            ASSERT_EQ(recv[i], int_sum(m, i)) << "i " << i << " count " << count << " seg " << seg;
        for (std::int64_t i = 0; i < count; ++i) ASSERT_EQ(send[i], int_value(me, i));
        // Mirror of the broadcast: all but the root send B in s messages; all but the first of
        // the chain (root + m - 1) receive B in s messages.
        const PhaseCounts k = ledger.total();
        const int pos = (me - root + m) % m;
        const std::int64_t B = count * 8, s = nseg(count, seg);
        const bool moves = m > 1 && s > 0;
        EXPECT_EQ(k.p2p_sent_bytes, moves && pos > 0 ? B : 0);
        EXPECT_EQ(k.p2p_sent_msgs, moves && pos > 0 ? s : 0);
        EXPECT_EQ(k.p2p_recv_bytes, moves && pos < m - 1 ? B : 0);
        EXPECT_EQ(k.p2p_recv_msgs, moves && pos < m - 1 ? s : 0);
      }
}

TEST(P2PColl, Allreduce) {
  CommLedger ledger;
  Comm w(MPI_COMM_WORLD, &ledger);
  const int m = w.size(), me = w.rank();
  for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{1001}})
    for (std::int64_t seg : {std::int64_t{24}, std::int64_t{1000}}) {
      std::vector<double> send(static_cast<std::size_t>(count)), recv(send.size(), -1.0);
      for (std::int64_t i = 0; i < count; ++i) send[i] = int_value(me, i);
      ledger.reset();
      tessel::comm::allreduce_sum(w, send.data(), recv.data(), count, CollImpl::P2P, seg);
      for (std::int64_t i = 0; i < count; ++i) ASSERT_EQ(recv[i], int_sum(m, i));
      const PhaseCounts k = ledger.total();
      const std::int64_t B = count * 8, s = nseg(count, seg);
      const bool moves = m > 1 && s > 0;
      // reduce to 0 (all but 0 send, all but m-1 receive) + broadcast from 0 (all but m-1
      // send, all but 0 receive)
      const std::int64_t sends = (me > 0) + (me < m - 1), recvs = (me < m - 1) + (me > 0);
      EXPECT_EQ(k.p2p_sent_bytes, moves ? sends * B : 0);
      EXPECT_EQ(k.p2p_sent_msgs, moves ? sends * s : 0);
      EXPECT_EQ(k.p2p_recv_bytes, moves ? recvs * B : 0);
      EXPECT_EQ(k.p2p_recv_msgs, moves ? recvs * s : 0);
    }
}

// Several collectives in flight on one communicator (different roots, kinds and sizes): the
// per-communicator sequence tags keep their messages apart.
TEST(P2PColl, ManyInFlightOnOneComm) {
  Comm w(MPI_COMM_WORLD, nullptr);
  const int m = w.size(), me = w.rank();
  const std::int64_t n = 3001;
  std::vector<std::vector<double>> b(static_cast<std::size_t>(m));
  std::vector<double> send(n), red(n, -1.0);
  for (std::int64_t i = 0; i < n; ++i) send[i] = int_value(me, i);
  RequestSet rs;
  std::vector<Pending> t;
  for (int root = 0; root < m; ++root) {
    auto& v = b[static_cast<std::size_t>(root)];
    v.assign(static_cast<std::size_t>(n - root), -2.0);
    if (me == root)
      for (std::int64_t i = 0; i < n - root; ++i) v[i] = data_value(root, i);
    t.push_back(tessel::comm::ibcast(w, v.data(), n - root, root, rs, CollImpl::P2P, 800));
  }
  Pending tr = tessel::comm::ireduce_sum(w, send.data(), me == m - 1 ? red.data() : nullptr, n,
                                         m - 1, rs, CollImpl::P2P, 512);
  rs.wait(tr);
  for (auto it = t.rbegin(); it != t.rend(); ++it) rs.wait(*it);
  rs.wait_all();
  for (int root = 0; root < m; ++root)
    for (std::int64_t i = 0; i < n - root; ++i)
      ASSERT_EQ(b[static_cast<std::size_t>(root)][i], data_value(root, i));
  if (me == m - 1)
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(red[i], int_sum(m, i));
}

// N_DUP = 4 parts, each on its own duplicated communicator, broadcast and reduction posted at
// once into one RequestSet and completed in mixed order (3, 0, 2, 1), with both impls.
TEST(P2PColl, NDupPartsMixedOrder) {
  Comm w(MPI_COMM_WORLD, nullptr);
  const int m = w.size(), me = w.rank(), N = 4;
  DupSet dup(w, N);
  const std::int64_t n = 10007;
  for (CollImpl impl : {CollImpl::Mpi, CollImpl::P2P}) {
    const int broot = m / 2, rroot = m - 1;
    std::vector<double> buf(n, 0.0), send(n), recv(n, -1.0);
    for (std::int64_t i = 0; i < n; ++i) {
      send[i] = int_value(me, i);
      if (me == broot) buf[i] = data_value(9, i);
    }
    RequestSet rs;
    std::vector<Pending> tb(N), tr(N);
    for (int q = 0; q < N; ++q) {
      auto pt = tessel::comm::split_part(n, N, q);
      tb[q] = tessel::comm::ibcast(dup[q], buf.data() + pt.begin, pt.count, broot, rs, impl, 4096);
      tr[q] = tessel::comm::ireduce_sum(dup[q], send.data() + pt.begin, recv.data() + pt.begin,
                                        pt.count, rroot, rs, impl, 2048);
    }
    for (int q : {3, 0, 2, 1}) {
      rs.wait(tr[q]);
      rs.wait(tb[q]);
      auto pt = tessel::comm::split_part(n, N, q);
      for (std::int64_t i = pt.begin; i < pt.begin + pt.count; ++i) {
        ASSERT_EQ(buf[i], data_value(9, i)) << tessel::comm::to_string(impl);
        if (me == rroot) ASSERT_EQ(recv[i], int_sum(m, i)) << tessel::comm::to_string(impl);
      }
    }
    rs.wait_all();
  }
}

// The pipelined pattern of Algorithm 5: part q is broadcast on grd[q] from rank 0; rank f
// forwards each part along row[q] (root f) as soon as that part arrived, while the other parts
// are still moving; everyone else receives the forwarded copy into a second buffer.
TEST(P2PColl, Alg5ForwardPattern) {
  Comm w(MPI_COMM_WORLD, nullptr);
  const int m = w.size(), me = w.rank(), N = 4, f = m - 1;
  DupSet grd(w, N), row(w, N);
  const std::int64_t n = 20011;
  for (CollImpl impl : {CollImpl::Mpi, CollImpl::P2P}) {
    std::vector<double> a(n, 0.0), bt(n, -3.0);
    if (me == 0)
      for (std::int64_t i = 0; i < n; ++i) a[i] = data_value(5, i);
    double* btp = me == f ? a.data() : bt.data();
    RequestSet rs;
    std::vector<Pending> ga(N);
    for (int q = 0; q < N; ++q) {
      auto pt = tessel::comm::split_part(n, N, q);
      ga[q] = tessel::comm::ibcast(grd[q], a.data() + pt.begin, pt.count, 0, rs, impl, 8192);
    }
    for (int q = 0; q < N; ++q) {
      auto pt = tessel::comm::split_part(n, N, q);
      if (me == f) rs.wait(ga[q]);  // forward part q once it arrived
      tessel::comm::ibcast(row[q], btp + pt.begin, pt.count, f, rs, impl, 8192);
    }
    rs.wait_all();
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(a[i], data_value(5, i)) << tessel::comm::to_string(impl);
      ASSERT_EQ(btp[i], data_value(5, i)) << tessel::comm::to_string(impl);
    }
  }
}

// Sub-communicators: the chain runs in the ranks of a split (odd/even), with the ledger
// recording into the parent's ledger.
TEST(P2PColl, SplitCommunicators) {
  CommLedger ledger;
  Comm w(MPI_COMM_WORLD, &ledger);
  Comm half = w.split(w.rank() % 2, w.rank());
  const int m = half.size(), me = half.rank();
  const std::int64_t n = 999;
  for (int root = 0; root < m; ++root) {
    std::vector<double> buf(n, 0.0);
    if (me == root)
      for (std::int64_t i = 0; i < n; ++i) buf[i] = data_value(root + 20, i);
    tessel::comm::bcast(half, buf.data(), n, root, CollImpl::P2P, 1000);
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(buf[i], data_value(root + 20, i));
  }
}

// A large reduction: the middle ranks' partial sums (owned by the schedule) must outlive their
// last send (a 16 MiB buffer is unmapped when freed; this crashed before the sends kept it).
TEST(P2PColl, LargeReduceKeepsPartialsAlive) {
  Comm w(MPI_COMM_WORLD, nullptr);
  const int m = w.size(), me = w.rank();
  const std::int64_t n = std::int64_t{1} << 21;
  std::vector<double> send(n), recv(me == 0 ? n : 0);
  for (std::int64_t i = 0; i < n; ++i) send[i] = int_value(me, i);
  tessel::comm::reduce_sum(w, send.data(), me == 0 ? recv.data() : nullptr, n, 0, CollImpl::P2P);
  if (me == 0)
    for (std::int64_t i = 0; i < n; i += 4099) ASSERT_EQ(recv[i], int_sum(m, i));
}

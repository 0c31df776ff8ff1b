// SymmSquareCube, seed Algorithm 5 (optimized): each collective of Algorithm 4 split into
// N_DUP contiguous parts (column ranges of the column-major blocks, comm::split_part) posted
// as nonblocking collectives on N_DUP duplicated communicators, and pipelined:
//  - part c of the grd broadcast of D_ij is re-broadcast along the row by P(i,j,i) as soon
//    as it arrives;
//  - part c of the reduction of D^2_ik is re-broadcast along the row by P(i,i,k) as soon as
//    it is reduced;
//  - part c of the reduction of D^3_ik goes to plane 0 as soon as it is reduced, beside the
//    point-to-point return of D^2_ik.
// With p = 1 nothing is communicated (the same local products as Algorithm 4).
// !e.cube: D^2 only (its reduction pipelined into the returns to plane 0).
#include <algorithm>

#include "local_gemm.hpp"
#include "ssc_exec.hpp"

namespace tessel::dense::ssc {

void alg5(const Exec& e, const double* d, double* d2, double* d3) {
  if (e.p == 1) return alg4(e, d, d2, d3);
  const int i = e.i, j = e.j, k = e.k, p = e.p, N = e.n_dup;
  const std::int64_t ri = e.r[i], rj = e.r[j], rk = e.r[k];
  auto part = [&](std::int64_t rows, std::int64_t cols, int c) {
    return comm::split_part(rows * cols, N, c, rows == 0 ? 1 : rows);
  };
  Storage<double> a(e.mode, static_cast<std::size_t>(ri * rj)),
      c(e.mode, static_cast<std::size_t>(ri * rk));
  Storage<double> bt(e.mode, 0), b2(e.mode, 0), d2blk(e.mode, 0), d3blk(e.mode, 0);

  // One RequestSet drives every part: waiting for part q (RequestSet::wait) keeps the other
  // parts moving, which the point-to-point chains (e.coll = P2P) need to forward segments.
  comm::RequestSet rs;
  std::vector<comm::Pending> tok(static_cast<std::size_t>(N));

  // Lines 1-7: D_ij along grd (parts), P(i,j,i) forwards each part along row (j, i).
  if (k == 0 && e.mode == ComputeMode::Run) std::copy(d, d + ri * rj, a.data());
  double* btp = a.data();  // P(k,j,k) broadcasts its A = D_kj; the others receive D_kj
  if (i != k) {
    bt.resize(static_cast<std::size_t>(rk * rj));
    btp = bt.data();
  }
  for (int q = 0; q < N; ++q) {
    auto pt = part(ri, rj, q);
    tok[q] = comm::ibcast((*e.grd)[q], a.data() + pt.begin, pt.count, 0, rs, e.coll);
  }
  for (int q = 0; q < N; ++q) {
    auto pt = part(rk, rj, q);
    if (i == k) rs.wait(tok[q]);  // root of the row: forward part q once it arrived
    comm::ibcast((*e.row)[q], btp + pt.begin, pt.count, k, rs, e.coll);
  }
  rs.wait_all();
  // Line 8: C_ik = A_ij B_jk.
  local_multiply(e, 'T', ri, rk, rj, a.data(), ri, btp, rk, 0.0, c.data(), ri);

  // Lines 9-16: reduce parts of D^2_ik on P(i,i,k); it forwards each part along row (i, k).
  if (i == j) d2blk.resize(static_cast<std::size_t>(ri * rk));
  double* b2p = d2blk.data();
  if (i != j) {
    b2.resize(static_cast<std::size_t>(rj * rk));
    b2p = b2.data();
  }
  for (int q = 0; q < N; ++q) {
    auto pt = part(ri, rk, q);
    tok[q] = comm::ireduce_sum((*e.col)[q], c.data() + pt.begin,
                               i == j ? d2blk.data() + pt.begin : nullptr, pt.count, i, rs, e.coll);
  }
  if (!e.cube) {  // square only: each reduced part of D^2_ik goes straight to plane 0
    if (k == 0 && !(i == j && j == 0))
      for (int q = 0; q < N; ++q) {
        auto pt = part(ri, rj, q);
        (*e.glob)[q].irecv(d2 + pt.begin, pt.count, i * p + i + j * p * p, comm::tag::kSscD2, rs);
      }
    for (int q = 0; q < N; ++q) {
      auto pt = part(ri, rk, q);
      rs.wait(tok[q]);
      if (i != j) continue;
      if (i == k && k == 0)
        std::copy(d2blk.begin() + pt.begin, d2blk.begin() + pt.begin + pt.count, d2 + pt.begin);
      else
        (*e.glob)[q].isend(d2blk.data() + pt.begin, pt.count, i * p + k, comm::tag::kSscD2, rs);
    }
    rs.wait_all();
    return;
  }
  for (int q = 0; q < N; ++q) {
    auto pt = part(rj, rk, q);
    if (i == j) rs.wait(tok[q]);
    comm::ibcast((*e.row)[q], b2p + pt.begin, pt.count, j, rs, e.coll);
  }
  rs.wait_all();
  // Line 17: C_ik = A_ij D^2_jk.
  local_multiply(e, 'N', ri, rk, rj, a.data(), ri, b2p, rj, 0.0, c.data(), ri);

  // Lines 18-27: reduce parts of D^3_ik on P(i,k,k); return D^2 and D^3 parts to plane 0.
  if (j == k) d3blk.resize(static_cast<std::size_t>(ri * rk));
  for (int q = 0; q < N; ++q) {
    auto pt = part(ri, rk, q);
    tok[q] = comm::ireduce_sum((*e.col)[q], c.data() + pt.begin,
                               j == k ? d3blk.data() + pt.begin : nullptr, pt.count, k, rs, e.coll);
  }
  if (k == 0) {  // P(i,j,0): receives D^2_ij from P(i,i,j), D^3_ij from P(i,j,j)
    for (int q = 0; q < N; ++q) {
      auto pt = part(ri, rj, q);
      if (!(i == j && j == 0))
        (*e.glob)[q].irecv(d2 + pt.begin, pt.count, i * p + i + j * p * p, comm::tag::kSscD2, rs);
      if (j != 0) (*e.grd)[q].irecv(d3 + pt.begin, pt.count, j, comm::tag::kSscD3, rs);
    }
  }
  for (int q = 0; q < N; ++q) {
    auto pt = part(ri, rk, q);
    if (i == j) {
      if (i == k && k == 0)
        std::copy(d2blk.begin() + pt.begin, d2blk.begin() + pt.begin + pt.count, d2 + pt.begin);
      else
        (*e.glob)[q].isend(d2blk.data() + pt.begin, pt.count, i * p + k, comm::tag::kSscD2, rs);
    }
    rs.wait(tok[q]);
    if (j == k) {
      if (k == 0)
        std::copy(d3blk.begin() + pt.begin, d3blk.begin() + pt.begin + pt.count, d3 + pt.begin);
      else
        (*e.grd)[q].isend(d3blk.data() + pt.begin, pt.count, 0, comm::tag::kSscD3, rs);
    }
  }
  rs.wait_all();
}

}  // namespace tessel::dense::ssc

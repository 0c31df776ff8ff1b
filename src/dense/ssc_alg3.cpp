// SymmSquareCube, seed Algorithm 3 (the original GTFock code), blocking collectives.
// Planes are 0-based (the seed's plane 1 is k = 0). On P(i, j, k):
//   1: P(i,j,0) broadcasts D_ij as A_ij along grd;
//   2: P(k,j,k) broadcasts D_kj (= B_jk^T, D symmetric) along row (j, k);
//   3: C = A_ij B_jk;
//   4: reduce C over j (col) to D^2_ik on P(i,k,k);
//   5: P(i,k,k) sends D^2_ik to P(i,k,0) (grd)            -- square only stops here;
//   6: transpose: P(j,k,0) sends D^2_jk to P(k,j,k) (global);
//   7: P(k,j,k) broadcasts D^2_jk as B_jk along row (j, k);
//   8: C = A_ij B_jk;
//   9: reduce C over j (col) to D^3_ik on P(i,k,k);
//  10: P(i,k,k) sends D^3_ik to P(i,k,0) (grd).
// With p = 1 nothing is communicated.
#include <algorithm>

#include "local_gemm.hpp"
#include "ssc_exec.hpp"

namespace tessel::dense::ssc {

namespace {

/// Line 5 / 10: P(i,k,k) sends its reduced block `blk` (r_i x r_k) to P(i,k,0) over grd;
/// P(i,j,0) receives block (i, j) into `out` (a copy when k = 0). Tag `tag`.
void return_to_plane0(const Exec& e, const comm::Comm& grd, const Storage<double>& blk, double* out,
                      int tag) {
  const std::int64_t ri = e.r[e.i], rj = e.r[e.j], rk = e.r[e.k];
  comm::RequestSet rs;
  if (e.j == e.k) {
    if (e.k == 0)
      std::copy(blk.begin(), blk.end(), out);
    else
      grd.isend(blk.data(), ri * rk, 0, tag, rs);
  }
  if (e.k == 0 && e.j != 0) grd.irecv(out, ri * rj, e.j, tag, rs);
  rs.wait_all();
}

}  // namespace

void alg3(const Exec& e, const double* d, double* d2, double* d3) {
  const int i = e.i, j = e.j, k = e.k, p = e.p;
  const std::int64_t ri = e.r[i], rj = e.r[j], rk = e.r[k];
  const comm::Comm &row = (*e.row)[0], &col = (*e.col)[0], &grd = (*e.grd)[0], &glob = (*e.glob)[0];
  Storage<double> a(e.mode, static_cast<std::size_t>(ri * rj)),
      c(e.mode, static_cast<std::size_t>(ri * rk));
  Storage<double> bt(e.mode, 0), blk(e.mode, 0);

  // 1: P(i,j,0) broadcasts D_ij as A_ij along grd.
  if (k == 0 && e.mode == ComputeMode::Run) std::copy(d, d + ri * rj, a.data());
  if (p > 1) comm::bcast(grd, a.data(), ri * rj, 0, e.coll);
  // 2: P(k,j,k) broadcasts its A = D_kj as B_jk^T along row (j, k).
  const double* btp = a.data();
  if (i != k) {
    bt.resize(static_cast<std::size_t>(rk * rj));
    btp = bt.data();
  }
  if (p > 1) comm::bcast(row, i == k ? a.data() : bt.data(), rk * rj, k, e.coll);
  // 3: C_ik = A_ij B_jk.
  local_multiply(e, 'T', ri, rk, rj, a.data(), ri, btp, rk, 0.0, c.data(), ri);
  // 4: reduce over j to D^2_ik on P(i,k,k).
  if (j == k) blk.resize(static_cast<std::size_t>(ri * rk));
  if (p > 1)
    comm::reduce_sum(col, c.data(), j == k ? blk.data() : nullptr, ri * rk, k, e.coll);
  else
    blk = c;
  // 5: D^2_ik from P(i,k,k) to P(i,k,0).
  return_to_plane0(e, grd, blk, d2, comm::tag::kSscD2);
  if (!e.cube) return;

  // 6: transpose: P(j',k',0) sends D^2_j'k' to P(k',j',k'), so P(k,j,k) holds D^2_jk.
  Storage<double> b(e.mode, static_cast<std::size_t>(rj * rk));
  {
    comm::RequestSet rs;
    if (k == 0) {  // P(i,j,0) holds D^2_ij: to P(j,i,j) (itself only at P(0,0,0))
      if (i == 0 && j == 0)
        std::copy(d2, d2 + ri * rj, b.begin());
      else
        glob.isend(d2, ri * rj, j * p + i + j * p * p, comm::tag::kSscTranspose, rs);
    }
    if (i == k && !(j == 0 && k == 0))
      glob.irecv(b.data(), rj * rk, j * p + k, comm::tag::kSscTranspose, rs);
    rs.wait_all();
  }
  // 7: P(k,j,k) broadcasts D^2_jk as B_jk along row (j, k).
  if (p > 1) comm::bcast(row, b.data(), rj * rk, k, e.coll);
  // 8: C_ik = A_ij D^2_jk.
  local_multiply(e, 'N', ri, rk, rj, a.data(), ri, b.data(), rj, 0.0, c.data(), ri);
  // 9: reduce over j to D^3_ik on P(i,k,k).
  if (p > 1)
    comm::reduce_sum(col, c.data(), j == k ? blk.data() : nullptr, ri * rk, k, e.coll);
  else
    blk = c;
  // 10: D^3_ik from P(i,k,k) to P(i,k,0).
  return_to_plane0(e, grd, blk, d3, comm::tag::kSscD3);
}

}  // namespace tessel::dense::ssc

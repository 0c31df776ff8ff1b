// SymmSquareCube, seed Algorithm 4 (baseline): blocking broadcasts and reductions.
// P(i, j, k) ends with A = D_ij, Bt = D_kj (= B_jk^T since D is symmetric), computes
// C = A B, reduces D^2_ik on P(i, i, k), which broadcasts it as B_jk along its row; C = A D^2,
// reduces D^3_ik on P(i, k, k); both go back to P(i, k, 0).
#include <algorithm>

#include "local_gemm.hpp"
#include "ssc_exec.hpp"

namespace tessel::dense::ssc {

void alg4(const Exec& e, const double* d, double* d2, double* d3) {
  const int i = e.i, j = e.j, k = e.k, p = e.p;
  const std::int64_t ri = e.r[i], rj = e.r[j], rk = e.r[k];
  const comm::Comm &row = (*e.row)[0], &col = (*e.col)[0], &grd = (*e.grd)[0], &glob = (*e.glob)[0];
  Storage<double> a(e.mode, static_cast<std::size_t>(ri * rj)), bt(e.mode, 0),
      c(e.mode, static_cast<std::size_t>(ri * rk));
  Storage<double> d2blk(e.mode, 0), d3blk(e.mode, 0), b2(e.mode, 0);
  // 4 and 7: C reduced over j onto P(i, root, k) of the column (`at_root`), into `out`.
  auto reduce_c = [&](Storage<double>& out, bool at_root, int root) {
    if (at_root) out.resize(static_cast<std::size_t>(ri * rk));
    if (p > 1)
      comm::reduce_sum(col, c.data(), at_root ? out.data() : nullptr, ri * rk, root, e.coll);
    else
      out = c;
  };
  // 8: P(i,i,k) returns D^2_ik to P(i,k,0) (a copy when that is itself).
  auto return_d2 = [&](comm::RequestSet& rs) {
    if (i != j) return;
    if (i == k && k == 0)
      std::copy(d2blk.begin(), d2blk.end(), d2);
    else
      glob.isend(d2blk.data(), ri * rk, i * p + k, comm::tag::kSscD2, rs);
  };

  // 1: P(i,j,0) broadcasts D_ij as A_ij along grd.
  if (k == 0 && e.mode == ComputeMode::Run) std::copy(d, d + ri * rj, a.data());
  if (p > 1) comm::bcast(grd, a.data(), ri * rj, 0, e.coll);
  // 2: P(k,j,k) broadcasts D_kj as B_jk^T along row (j, k).
  const double* btp = a.data();
  if (i != k) bt.resize(static_cast<std::size_t>(rk * rj));
  if (p > 1) {
    double* buf = (i == k) ? a.data() : bt.data();
    comm::bcast(row, buf, rk * rj, k, e.coll);
    if (i != k) btp = bt.data();
  }
  // 3: C_ik = A_ij B_jk.
  local_multiply(e, 'T', ri, rk, rj, a.data(), ri, btp, rk, 0.0, c.data(), ri);
  // 4: reduce C over j to D^2_ik on P(i,i,k).
  reduce_c(d2blk, i == j, i);
  if (!e.cube) {  // square only: 8 alone
    comm::RequestSet rs;
    return_d2(rs);
    if (k == 0 && !(i == j && j == 0))
      glob.irecv(d2, ri * rj, i * p + i + j * p * p, comm::tag::kSscD2, rs);
    rs.wait_all();
    return;
  }
  // 5: P(j,j,k) broadcasts D^2_jk as B_jk along row (j, k).
  double* b2p = d2blk.data();
  if (i != j) {
    b2.resize(static_cast<std::size_t>(rj * rk));
    b2p = b2.data();
  }
  if (p > 1) comm::bcast(row, b2p, rj * rk, j, e.coll);
  // 6: C_ik = A_ij D^2_jk.
  local_multiply(e, 'N', ri, rk, rj, a.data(), ri, b2p, rj, 0.0, c.data(), ri);
  // 7: reduce over j to D^3_ik on P(i,k,k).
  reduce_c(d3blk, j == k, k);
  // 8, 9: D^2_ik from P(i,i,k) and D^3_ik from P(i,k,k) to P(i,k,0).
  comm::RequestSet rs;
  return_d2(rs);
  if (j == k) {
    if (k == 0)
      std::copy(d3blk.begin(), d3blk.end(), d3);
    else
      grd.isend(d3blk.data(), ri * rk, 0, comm::tag::kSscD3, rs);
  }
  if (k == 0) {  // P(i,j,0) receives D^2_ij from P(i,i,j) and D^3_ij from P(i,j,j)
    if (!(i == j && j == 0)) glob.irecv(d2, ri * rj, i * p + i + j * p * p, comm::tag::kSscD2, rs);
    if (j != 0) grd.irecv(d3, ri * rj, j, comm::tag::kSscD3, rs);
  }
  rs.wait_all();
}

}  // namespace tessel::dense::ssc

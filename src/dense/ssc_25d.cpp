// SymmSquareCube, seed Algorithm 6 (2.5D) on a q x q x c mesh (q = e.p, c = e.c), D_ij on
// P(i,j,0) in q x q near-equal blocks. Layer k performs Cannon steps
// [split_begin(q, c, k), split_begin(q, c, k+1)) of the q steps (the seed's sqrt(p/c^3) =
// q/c per layer when c divides q; any 1 <= c <= q here):
//   1: P(i,j,0) broadcasts D_ij (as A_ij and B_ij) along grd            [N_DUP parts];
//   2: Cannon: skew A and B by point-to-point in col / row, then per step a local GEMM
//      and (except after the layer's last step) a circular shift of A left and B up;
//   3: allreduce C over grd: D^2_ij on every layer, the new B          [N_DUP parts];
//   4: Cannon with A skewed as in 2 (the skewed copy of step 2 is kept, so A is not sent
//      again) and B = D^2 (skewed again);
//   5: reduce C over grd to D^3_ij on P(i,j,0)                          [N_DUP parts].
// Square only (!e.cube): step 3 is a reduce to layer 0 (nobody else needs D^2), then stop.
// Block sizes vary when q does not divide n: every receiver knows the size of what it
// receives from the block split (e.r), so no sizes are sent. With c = 1 the grd collectives
// are local copies; with q = 1 nothing is communicated.
#include <algorithm>

#include "local_gemm.hpp"
#include "ssc_exec.hpp"
#include "tessel/layout/partition.hpp"

namespace tessel::dense::ssc {

namespace {

int mod(int x, int q) { return ((x % q) + q) % q; }

std::size_t sz(std::int64_t n) { return static_cast<std::size_t>(n); }

/// Initial skew of A: P(i,j,k) receives A_{i,l0}, l0 = (i + j + s0) mod q, from P(i,l0,k)
/// and sends its A_ij to P(i, (j - i - s0) mod q, k) (col communicator, rank = j).
std::vector<double> skew_a(const Exec& e, const comm::Comm& col, const std::vector<double>& a,
                           int s0) {
  const int q = e.p, i = e.i, j = e.j;
  const int l0 = mod(i + j + s0, q);
  if (l0 == j) return a;
  std::vector<double> out(sz(e.r[i] * e.r[l0]));
  comm::RequestSet rs;
  col.isend(a.data(), e.r[i] * e.r[j], mod(j - i - s0, q), comm::tag::kSsc25dSkewA, rs);
  col.irecv(out.data(), e.r[i] * e.r[l0], l0, comm::tag::kSsc25dSkewA, rs);
  rs.wait_all();
  return out;
}

/// Initial skew of B: P(i,j,k) receives B_{l0,j} from P(l0,j,k) and sends its B_ij to
/// P((i - j - s0) mod q, j, k) (row communicator, rank = i).
std::vector<double> skew_b(const Exec& e, const comm::Comm& row, const double* b, int s0) {
  const int q = e.p, i = e.i, j = e.j;
  const int l0 = mod(i + j + s0, q);
  std::vector<double> out(sz(e.r[l0] * e.r[j]));
  if (l0 == i) {
    std::copy(b, b + e.r[i] * e.r[j], out.begin());
    return out;
  }
  comm::RequestSet rs;
  row.isend(b, e.r[i] * e.r[j], mod(i - j - s0, q), comm::tag::kSsc25dSkewB, rs);
  row.irecv(out.data(), e.r[l0] * e.r[j], l0, comm::tag::kSsc25dSkewB, rs);
  rs.wait_all();
  return out;
}

/// This layer's Cannon steps t = s0 .. s1-1: C_ij = sum_t A_{i,l} B_{l,j}, l = (i+j+t) mod q,
/// with a (A_{i,l(s0)}) and b (B_{l(s0),j}) already skewed; shifts A left and B up between
/// steps (point-to-point in col / row).
void cannon_steps(const Exec& e, const comm::Comm& row, const comm::Comm& col,
                  std::vector<double> a, std::vector<double> b, int s0, int s1, double* c) {
  const int q = e.p, i = e.i, j = e.j;
  const std::int64_t ri = e.r[i], rj = e.r[j];
  std::vector<double> an, bn;
  for (int t = s0; t < s1; ++t) {
    const int l = mod(i + j + t, q);
    const std::int64_t rl = e.r[l];
    local_multiply(e, 'N', ri, rj, rl, a.data(), ri, b.data(), rl, t == s0 ? 0.0 : 1.0, c, ri);
    if (t + 1 == s1) break;
    // circular shift: A_{i,l} to P(i,j-1), A_{i,l+1} from P(i,j+1); B_{l,j} to P(i-1,j),
    // B_{l+1,j} from P(i+1,j).
    const std::int64_t rn = e.r[mod(l + 1, q)];
    an.resize(sz(ri * rn));
    bn.resize(sz(rn * rj));
    comm::RequestSet rs;
    col.isend(a.data(), ri * rl, mod(j - 1, q), comm::tag::kSsc25dShiftA, rs);
    col.irecv(an.data(), ri * rn, mod(j + 1, q), comm::tag::kSsc25dShiftA, rs);
    row.isend(b.data(), rl * rj, mod(i - 1, q), comm::tag::kSsc25dShiftB, rs);
    row.irecv(bn.data(), rn * rj, mod(i + 1, q), comm::tag::kSsc25dShiftB, rs);
    rs.wait_all();
    a.swap(an);
    b.swap(bn);
  }
}

}  // namespace

void alg25d(const Exec& e, const double* d, double* d2, double* d3) {
  const int q = e.p, c = e.c, i = e.i, j = e.j, k = e.k, N = e.n_dup;
  const std::int64_t ri = e.r[i], rj = e.r[j];
  const comm::Comm &row = (*e.row)[0], &col = (*e.col)[0];
  const int s0 = static_cast<int>(layout::split_begin(q, c, k));
  const int s1 = static_cast<int>(layout::split_begin(q, c, k + 1));
  auto part = [&](int x) { return comm::split_part(ri * rj, N, x, ri); };

  // 1: D_ij from P(i,j,0) to every layer (A_ij and B_ij are both D_ij).
  std::vector<double> dij(sz(ri * rj));
  if (k == 0) std::copy(d, d + ri * rj, dij.begin());
  if (c > 1) {
    comm::RequestSet rs;
    for (int x = 0; x < N; ++x) {
      auto pt = part(x);
      comm::ibcast((*e.grd)[x], dij.data() + pt.begin, pt.count, 0, rs, e.coll);
    }
    rs.wait_all();
  }

  // 2: this layer's share of Cannon for C = D D.
  std::vector<double> a = skew_a(e, col, dij, s0);
  std::vector<double> cij(sz(ri * rj));
  cannon_steps(e, row, col, a, skew_b(e, row, dij.data(), s0), s0, s1, cij.data());

  // 3: sum over layers: D^2_ij (on every layer for D^3; on layer 0 only when squaring).
  if (!e.cube) {
    if (c == 1) {
      std::copy(cij.begin(), cij.end(), d2);
      return;
    }
    comm::RequestSet rs;
    for (int x = 0; x < N; ++x) {
      auto pt = part(x);
      comm::ireduce_sum((*e.grd)[x], cij.data() + pt.begin, k == 0 ? d2 + pt.begin : nullptr,
                        pt.count, 0, rs, e.coll);
    }
    rs.wait_all();
    return;
  }
  std::vector<double> s2;  // D^2_ij on every layer
  if (c > 1) {
    s2.resize(sz(ri * rj));
    comm::RequestSet rs;
    for (int x = 0; x < N; ++x) {
      auto pt = part(x);
      comm::iallreduce_sum((*e.grd)[x], cij.data() + pt.begin, s2.data() + pt.begin, pt.count, rs,
                           e.coll);
    }
    rs.wait_all();
  } else {
    s2 = std::move(cij);
  }
  if (k == 0) std::copy(s2.begin(), s2.end(), d2);

  // 4: this layer's share of Cannon for C = D D^2 (A keeps its skew from step 2).
  std::vector<double> c3(sz(ri * rj));
  cannon_steps(e, row, col, std::move(a), skew_b(e, row, s2.data(), s0), s0, s1, c3.data());

  // 5: sum over layers to D^3_ij on P(i,j,0).
  if (c == 1) {
    std::copy(c3.begin(), c3.end(), d3);
    return;
  }
  comm::RequestSet rs;
  for (int x = 0; x < N; ++x) {
    auto pt = part(x);
    comm::ireduce_sum((*e.grd)[x], c3.data() + pt.begin, k == 0 ? d3 + pt.begin : nullptr, pt.count,
                      0, rs, e.coll);
  }
  rs.wait_all();
}

}  // namespace tessel::dense::ssc

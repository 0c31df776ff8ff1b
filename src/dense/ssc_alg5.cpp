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
#include <vector>

#include "local_gemm.hpp"
#include "ssc_exec.hpp"

namespace tessel::dense::ssc {
namespace {

// One run of Algorithm 5 on P(i, j, k): its blocks and the requests of every part. One
// RequestSet drives every part: waiting for part q (RequestSet::wait) keeps the other parts
// moving, which the point-to-point chains (e.coll = P2P) need to forward segments.
class Alg5 {
 public:
  Alg5(const Exec& e, double* d2, double* d3)
      : e_(e),
        i_(e.i),
        j_(e.j),
        k_(e.k),
        p_(e.p),
        N_(e.n_dup),
        ri_(e.r[e.i]),
        rj_(e.r[e.j]),
        rk_(e.r[e.k]),
        d2_(d2),
        d3_(d3),
        a_(e.mode, static_cast<std::size_t>(ri_ * rj_)),
        c_(e.mode, static_cast<std::size_t>(ri_ * rk_)),
        tok_(static_cast<std::size_t>(N_)) {}

  void run(const double* d) {
    broadcast_d(d);  // lines 1-7
    // Line 8: C_ik = A_ij B_jk.
    local_multiply(e_, 'T', ri_, rk_, rj_, a_.data(), ri_, btp_, rk_, 0.0, c_.data(), ri_);
    reduce_d2();  // lines 9-16
    if (!e_.cube) return return_d2_alone();
    broadcast_d2();
    // Line 17: C_ik = A_ij D^2_jk.
    local_multiply(e_, 'N', ri_, rk_, rj_, a_.data(), ri_, b2p_, rj_, 0.0, c_.data(), ri_);
    reduce_d3_and_return();  // lines 18-27
  }

 private:
  comm::Part part(std::int64_t rows, std::int64_t cols, int q) const {
    return comm::split_part(rows * cols, N_, q, rows == 0 ? 1 : rows);
  }

  // Lines 1-7: D_ij along grd (parts), P(i,j,i) forwards each part along row (j, i).
  void broadcast_d(const double* d) {
    if (k_ == 0 && e_.mode == ComputeMode::Run) std::copy(d, d + ri_ * rj_, a_.data());
    btp_ = a_.data();  // P(k,j,k) broadcasts its A = D_kj; the others receive D_kj
    if (i_ != k_) {
      bt_.resize(static_cast<std::size_t>(rk_ * rj_));
      btp_ = bt_.data();
    }
    for (int q = 0; q < N_; ++q) {
      auto pt = part(ri_, rj_, q);
      tok_[q] = comm::ibcast((*e_.grd)[q], a_.data() + pt.begin, pt.count, 0, rs_, e_.coll);
    }
    for (int q = 0; q < N_; ++q) {
      auto pt = part(rk_, rj_, q);
      if (i_ == k_) rs_.wait(tok_[q]);  // root of the row: forward part q once it arrived
      comm::ibcast((*e_.row)[q], btp_ + pt.begin, pt.count, k_, rs_, e_.coll);
    }
    rs_.wait_all();
  }

  // Lines 9-16, first half: reduce parts of D^2_ik on P(i,i,k).
  void reduce_d2() {
    if (i_ == j_) d2blk_.resize(static_cast<std::size_t>(ri_ * rk_));
    b2p_ = d2blk_.data();
    if (i_ != j_) {
      b2_.resize(static_cast<std::size_t>(rj_ * rk_));
      b2p_ = b2_.data();
    }
    for (int q = 0; q < N_; ++q) {
      auto pt = part(ri_, rk_, q);
      tok_[q] = comm::ireduce_sum((*e_.col)[q], c_.data() + pt.begin,
                                  i_ == j_ ? d2blk_.data() + pt.begin : nullptr, pt.count, i_, rs_,
                                  e_.coll);
    }
  }

  // Lines 9-16, second half: P(i,i,k) forwards each reduced part along row (i, k).
  void broadcast_d2() {
    for (int q = 0; q < N_; ++q) {
      auto pt = part(rj_, rk_, q);
      if (i_ == j_) rs_.wait(tok_[q]);
      comm::ibcast((*e_.row)[q], b2p_ + pt.begin, pt.count, j_, rs_, e_.coll);
    }
    rs_.wait_all();
  }

  // Square only: each reduced part of D^2_ik goes straight to plane 0.
  void return_d2_alone() {
    if (k_ == 0 && !(i_ == j_ && j_ == 0))
      for (int q = 0; q < N_; ++q) recv_d2_part(q);
    for (int q = 0; q < N_; ++q) {
      rs_.wait(tok_[q]);
      if (i_ == j_) return_d2_part(q);
    }
    rs_.wait_all();
  }

  // Lines 18-27: reduce parts of D^3_ik on P(i,k,k); return D^2 and D^3 parts to plane 0.
  void reduce_d3_and_return() {
    if (j_ == k_) d3blk_.resize(static_cast<std::size_t>(ri_ * rk_));
    for (int q = 0; q < N_; ++q) {
      auto pt = part(ri_, rk_, q);
      tok_[q] = comm::ireduce_sum((*e_.col)[q], c_.data() + pt.begin,
                                  j_ == k_ ? d3blk_.data() + pt.begin : nullptr, pt.count, k_, rs_,
                                  e_.coll);
    }
    if (k_ == 0) {  // P(i,j,0): receives D^2_ij from P(i,i,j), D^3_ij from P(i,j,j)
      for (int q = 0; q < N_; ++q) {
        auto pt = part(ri_, rj_, q);
        if (!(i_ == j_ && j_ == 0)) recv_d2_part(q);
        if (j_ != 0) (*e_.grd)[q].irecv(d3_ + pt.begin, pt.count, j_, comm::tag::kSscD3, rs_);
      }
    }
    for (int q = 0; q < N_; ++q) {
      auto pt = part(ri_, rk_, q);
      if (i_ == j_) return_d2_part(q);
      rs_.wait(tok_[q]);
      if (j_ == k_) {
        if (k_ == 0)
          std::copy(d3blk_.begin() + pt.begin, d3blk_.begin() + pt.begin + pt.count,
                    d3_ + pt.begin);
        else
          (*e_.grd)[q].isend(d3blk_.data() + pt.begin, pt.count, 0, comm::tag::kSscD3, rs_);
      }
    }
    rs_.wait_all();
  }

  // P(i,j,0) receives part q of D^2_ij from P(i,i,j).
  void recv_d2_part(int q) {
    auto pt = part(ri_, rj_, q);
    (*e_.glob)[q].irecv(d2_ + pt.begin, pt.count, i_ * p_ + i_ + j_ * p_ * p_, comm::tag::kSscD2,
                        rs_);
  }

  // P(i,i,k) returns part q of D^2_ik to P(i,k,0) (a copy when that is itself).
  void return_d2_part(int q) {
    auto pt = part(ri_, rk_, q);
    if (i_ == k_ && k_ == 0)
      std::copy(d2blk_.begin() + pt.begin, d2blk_.begin() + pt.begin + pt.count, d2_ + pt.begin);
    else
      (*e_.glob)[q].isend(d2blk_.data() + pt.begin, pt.count, i_ * p_ + k_, comm::tag::kSscD2, rs_);
  }

  const Exec& e_;
  const int i_, j_, k_, p_, N_;
  const std::int64_t ri_, rj_, rk_;
  double* d2_;
  double* d3_;
  Storage<double> a_, c_;
  Storage<double> bt_{e_.mode, 0}, b2_{e_.mode, 0}, d2blk_{e_.mode, 0}, d3blk_{e_.mode, 0};
  double* btp_ = nullptr;  // B_jk^T: a_ on P(k,j,k), else bt_
  double* b2p_ = nullptr;  // D^2_jk: d2blk_ on P(j,j,k), else b2_
  comm::RequestSet rs_;
  std::vector<comm::Pending> tok_;
};

}  // namespace

void alg5(const Exec& e, const double* d, double* d2, double* d3) {
  if (e.p == 1) return alg4(e, d, d2, d3);
  Alg5(e, d2, d3).run(d);
}

}  // namespace tessel::dense::ssc

#pragma once
/// @file algebra.hpp
/// The matrix algebra the density-matrix solvers need, one small interface that both dense
/// `dense::DistMatrix<double>` and block-sparse `sparse::BlockSparseMatrix<double>` satisfy:
/// Algebra<M> carries the Context, the filter threshold and the multiply strategy, counts the
/// multiplications, and offers
///
///   product (filtered multiply), add, scale, shift, trace, dot (= trace of a product of
///   symmetric matrices), norm, identity, filter, copy, transpose, symmetrize,
///   gershgorin bounds, matvec on replicated vectors (for Lanczos), stored blocks.
///
/// Every solver (src/solvers/newton_schulz.cpp, sign.cpp, density_sign.cpp, purify_generic.cpp)
/// is a template over M written once against this class and instantiated for both types.
/// An algebra that can compute X^2 .. X^4 together cheaper than by products one at a time
/// offers `powers(x, k, x2, x3, x4)` (only purify()'s SymmSquareCube algebra does, seed 000);
/// purify_generic uses it where it exists.
/// "Collective" below means over the Context's communicator.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/dense/multiply.hpp"
#include "tessel/sparse/block_sparse.hpp"
#include "tessel/sparse/multiply.hpp"

namespace tessel::solvers {

/// What every algebra counts.
struct AlgebraStats {
  std::int64_t multiplications = 0;  ///< matrix-matrix products done
  double flops = 0;                  ///< of those products, this rank (sparse) or 2 n^3 (dense)
};

template <class M>
class Algebra;

/// Dense: dense::multiply (the optimal COSMA-style plan or 2D SUMMA). Filtering does nothing
/// (dense products are exact); filter_eps is kept for reporting.
template <>
class Algebra<dense::DistMatrix<double>> {
 public:
  using Matrix = dense::DistMatrix<double>;
  explicit Algebra(Context& ctx, dense::MultiplyOptions opt = {}) : ctx_(ctx), opt_(opt) {}
  Context& ctx() const { return ctx_; }
  double filter_eps() const { return 0.0; }
  /// Not collective. Dense products are exact: nothing to change (see FilterScope).
  void set_filter_eps(double) {}
  AlgebraStats& stats() { return stats_; }

  /// Not collective. Order n of a square matrix.
  static std::int64_t n(const Matrix& a) { return a.rows(); }
  /// Not collective. Same shape and distribution (layout), so the two can be added; else a
  /// description of both for an error message in *why.
  static bool conforms(const Matrix& a, const Matrix& b, std::string* why);
  /// Not collective. A deep copy.
  Matrix copy(const Matrix& a) const;
  /// Not collective. alpha I in a's layout.
  Matrix identity(const Matrix& like, double alpha = 1.0) const;
  /// Collective. alpha A B (filtered for sparse).
  Matrix product(const Matrix& a, const Matrix& b, double alpha = 1.0);
  /// Not collective. A = alpha A + beta B.
  void add(Matrix& a, double alpha, const Matrix& b, double beta) const;
  void scale(Matrix& a, double alpha) const;
  /// Not collective. A += alpha I.
  void shift(Matrix& a, double alpha) const;
  void filter(Matrix&) const {}
  /// Collective. tr(A), sum_ij A_ij B_ij (= tr(A B) for symmetric A or B), ||A||_F.
  double trace(const Matrix& a) const;
  double dot(const Matrix& a, const Matrix& b) const;
  double norm(const Matrix& a) const;
  /// Collective. A^T; (A + A^T)/2 in place.
  Matrix transpose(const Matrix& a) const;
  void symmetrize(Matrix& a) const;
  /// Collective. Gershgorin bounds {min, max} of the spectrum (symmetric A).
  std::pair<double, double> gershgorin(const Matrix& a) const;
  /// Collective. y = A x with x, y of length n replicated on every rank (Lanczos).
  void matvec(const Matrix& a, const std::vector<double>& x, std::vector<double>& y) const;
  /// Collective. 1 when every entry is finite, 0 otherwise.
  bool finite(const Matrix& a) const;
  /// Collective. Context::agree (the SymmSquareCube algebra of purify() agrees over its
  /// active ranks instead).
  void agree(const std::function<void()>& f) const { ctx_.agree(f); }
  /// Restores exact symmetry where a kernel relies on it (nothing to do here).
  void resymmetrize(Matrix&) const {}
  /// Collective. Stored blocks (dense: 0, meaning "dense").
  std::int64_t blocks(const Matrix&) const { return 0; }

 private:
  Context& ctx_;
  dense::MultiplyOptions opt_;
  AlgebraStats stats_;
};

/// Block-sparse: sparse::multiply (Cannon or the 2.5D RMA algorithm) with on-the-fly norm
/// filtering at filter_eps and a final filter of every result; the rma25d windows are kept in
/// the algebra between products (destroy the algebra before MPI_Finalize).
template <>
class Algebra<sparse::BlockSparseMatrix<double>> {
 public:
  using Matrix = sparse::BlockSparseMatrix<double>;
  /// opt.filter_eps is the filter threshold of every product and of filter() (>= 0).
  explicit Algebra(Context& ctx, sparse::SpMultiplyOptions opt = {});
  ~Algebra();
  Algebra(const Algebra&) = delete;
  Algebra& operator=(const Algebra&) = delete;
  Context& ctx() const { return ctx_; }
  double filter_eps() const { return opt_.filter_eps; }
  /// Not collective (call it with the same value on every rank). The filter threshold of the
  /// following products and filter() calls (>= 0; InputError otherwise). See FilterScope.
  void set_filter_eps(double eps);
  AlgebraStats& stats() { return stats_; }

  static std::int64_t n(const Matrix& a) { return a.rows(); }
  static bool conforms(const Matrix& a, const Matrix& b, std::string* why);
  Matrix copy(const Matrix& a) const { return a; }
  Matrix identity(const Matrix& like, double alpha = 1.0) const;
  Matrix product(const Matrix& a, const Matrix& b, double alpha = 1.0);
  void add(Matrix& a, double alpha, const Matrix& b, double beta) const;
  void scale(Matrix& a, double alpha) const;
  void shift(Matrix& a, double alpha) const;
  void filter(Matrix& a) const;
  double trace(const Matrix& a) const;
  double dot(const Matrix& a, const Matrix& b) const;
  double norm(const Matrix& a) const;
  Matrix transpose(const Matrix& a) const;
  void symmetrize(Matrix& a) const;
  std::pair<double, double> gershgorin(const Matrix& a) const;
  void matvec(const Matrix& a, const std::vector<double>& x, std::vector<double>& y) const;
  bool finite(const Matrix& a) const;
  std::int64_t blocks(const Matrix& a) const;
  void agree(const std::function<void()>& f) const { ctx_.agree(f); }
  void resymmetrize(Matrix&) const {}

 private:
  Context& ctx_;
  sparse::SpMultiplyOptions opt_;
  std::unique_ptr<sparse::SpMultiplyCache> cache_;
  AlgebraStats stats_;
};

/// Not collective. Sets the algebra's filter threshold for one stage of a solver (S^-1/2, the
/// basis changes, the final purification step) and restores the previous one on scope exit.
/// A negative `eps` keeps the current threshold.
template <class M>
class FilterScope {
 public:
  FilterScope(Algebra<M>& alg, double eps) : alg_(alg), old_(alg.filter_eps()) {
    if (eps >= 0) alg_.set_filter_eps(eps);
  }
  ~FilterScope() { alg_.set_filter_eps(old_); }
  FilterScope(const FilterScope&) = delete;
  FilterScope& operator=(const FilterScope&) = delete;

 private:
  Algebra<M>& alg_;
  double old_;
};

using DenseAlgebra = Algebra<dense::DistMatrix<double>>;
using SparseAlgebra = Algebra<sparse::BlockSparseMatrix<double>>;

}  // namespace tessel::solvers

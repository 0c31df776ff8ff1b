#pragma once
/// @file dist_matrix.hpp
/// DistMatrix<T>: a distributed dense matrix — a Layout plus this rank's column-major local
/// block, owned or viewed (e.g. existing ScaLAPACK storage, without a copy).
///
/// Value semantics: copying an owning matrix copies its local block (the copy owns new
/// storage; writing to one never changes the other, and the copy outlives the original).
/// Copying a view gives another view of the same storage (a view is a reference to storage
/// the caller owns; use clone() for an owning copy of a view). Moving transfers the storage
/// and leaves the source empty. None of these is collective.
#include <complex>
#include <cstdint>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/core/simulate.hpp"
#include "tessel/layout/layout.hpp"
#include "tessel/layout/redistribute.hpp"

namespace tessel::dense {

template <class T>
class DistMatrix {
 public:
  DistMatrix() = default;
  /// Not collective. Allocates (zeroed) this rank's local block of `layout`. Under
  /// ctx.compute() == ComputeMode::Skip (SMPI build) the block is shared simulated memory,
  /// neither zeroed nor meaningful (core/simulate.hpp); also for uninitialized().
  DistMatrix(const Context& ctx, layout::Layout layout);
  /// Not collective. A non-owning view of local storage `data` (leading dimension `ld`, at
  /// least the local row count) laid out as `layout`, as seen by rank `rank`.
  static DistMatrix view(layout::Layout layout, int rank, T* data, std::int64_t ld);
  /// Not collective. Like the constructor, but the local block is not zeroed: for a matrix
  /// whose every element is written before it is read (e.g. a redistribution's destination).
  static DistMatrix uninitialized(const Context& ctx, layout::Layout layout);

  DistMatrix(const DistMatrix& o);
  DistMatrix& operator=(const DistMatrix& o);
  DistMatrix(DistMatrix&& o) noexcept;
  DistMatrix& operator=(DistMatrix&& o) noexcept;
  ~DistMatrix() = default;
  /// Not collective. An owning deep copy (also of a view), with ld = max(1, local rows).
  DistMatrix clone() const;

  const layout::Layout& layout() const { return layout_; }
  std::int64_t rows() const { return layout_.rows(); }
  std::int64_t cols() const { return layout_.cols(); }
  std::int64_t local_rows() const { return layout_.local_rows(rank_); }
  std::int64_t local_cols() const { return layout_.local_cols(rank_); }
  std::int64_t ld() const { return ld_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  bool is_view() const { return store_.empty() && data_ != nullptr; }
  int rank() const { return rank_; }

  /// This rank's element at local (i, j).
  T& local(std::int64_t i, std::int64_t j) { return data_[j * ld_ + i]; }
  const T& local(std::int64_t i, std::int64_t j) const { return data_[j * ld_ + i]; }

  /// Not collective. Calls f(global_i, global_j, value&) for every local element.
  template <class F>
  void for_each_local(F&& f) {
    auto g = layout_.groups_of(rank_);
    if (!g) return;
    for (const auto& c : layout_.col_partition().intervals()) {
      if (c.group != g->second) continue;
      for (std::int64_t j = 0; j < c.len; ++j)
        for (const auto& r : layout_.row_partition().intervals()) {
          if (r.group != g->first) continue;
          T* col = data_ + (c.local + j) * ld_ + r.local;
          for (std::int64_t i = 0; i < r.len; ++i) f(r.begin + i, c.begin + j, col[i]);
        }
    }
  }

 private:
  layout::Layout layout_;
  int rank_ = 0;
  std::int64_t ld_ = 1;
  Storage<T> store_;
  T* data_ = nullptr;
};

/// Collective. Copies `x` into a new matrix of layout `to` (layout::redistribute with `opt`).
template <class T>
DistMatrix<T> redistribute(const Context& ctx, const DistMatrix<T>& x, const layout::Layout& to,
                           const layout::RedistOptions& opt = {});

/// Collective. The whole matrix, column-major, on `root` (empty on the other ranks).
template <class T>
std::vector<T> gather(const Context& ctx, const DistMatrix<T>& x, int root = 0);

/// Collective. Distributes the column-major m x n array `full` held on `root` into `to`.
template <class T>
DistMatrix<T> scatter(const Context& ctx, const T* full, const layout::Layout& to, int root = 0);

extern template class DistMatrix<double>;
extern template class DistMatrix<std::complex<double>>;

}  // namespace tessel::dense

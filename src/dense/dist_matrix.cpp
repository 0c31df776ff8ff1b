// Explicit instantiations of the dense layer's scalar types live here, in one place.
#include "tessel/dense/dist_matrix.hpp"

#include <algorithm>

#include "tessel/layout/redistribute.hpp"

namespace tessel::dense {

template <class T>
DistMatrix<T>::DistMatrix(const Context& ctx, layout::Layout layout)
    : DistMatrix(uninitialized(ctx, std::move(layout))) {
  if (store_.mode() == ComputeMode::Run)
    std::fill(store_.data(), store_.data() + store_.size(), T{});
}

template <class T>
DistMatrix<T> DistMatrix<T>::uninitialized(const Context& ctx, layout::Layout layout) {
  TESSEL_CHECK(layout.comm_size() == ctx.size(), LayoutMismatch, "DistMatrix: layout is for ",
               layout.comm_size(), " ranks, the context has ", ctx.size());
  DistMatrix<T> m;
  m.layout_ = std::move(layout);
  m.rank_ = ctx.rank();
  const std::int64_t lr = m.local_rows(), lc = m.local_cols();
  m.ld_ = std::max<std::int64_t>(1, lr);
  m.store_ = Storage<T>(ctx.compute(), static_cast<std::size_t>(lr * lc));  // not written
  m.data_ = m.store_.empty() ? nullptr : m.store_.data();
  return m;
}

template <class T>
DistMatrix<T> DistMatrix<T>::view(layout::Layout layout, int rank, T* data, std::int64_t ld) {
  DistMatrix<T> m;
  m.layout_ = std::move(layout);
  m.rank_ = rank;
  // A rank that holds no element may pass any ld >= 1.
  const bool empty = m.local_rows() == 0 || m.local_cols() == 0;
  TESSEL_CHECK(ld >= 1 && (empty || ld >= m.local_rows()), LayoutMismatch,
               "DistMatrix view: leading dimension ld = ", ld, ", expected >= local rows ",
               std::max<std::int64_t>(1, m.local_rows()));
  m.ld_ = ld;
  m.data_ = data;
  return m;
}

template <class T>
DistMatrix<T>::DistMatrix(const DistMatrix& o)
    : layout_(o.layout_), rank_(o.rank_), ld_(o.ld_), store_(o.store_), data_(o.data_) {
  if (!o.store_.empty()) data_ = store_.data();  // an owning copy points at its own storage
}

template <class T>
DistMatrix<T>& DistMatrix<T>::operator=(const DistMatrix& o) {
  if (this != &o) {
    DistMatrix tmp(o);
    *this = std::move(tmp);
  }
  return *this;
}

template <class T>
DistMatrix<T>::DistMatrix(DistMatrix&& o) noexcept
    : layout_(std::move(o.layout_)),
      rank_(o.rank_),
      ld_(o.ld_),
      store_(std::move(o.store_)),
      data_(o.data_) {
  o.store_.clear();
  o.data_ = nullptr;
  o.ld_ = 1;
}

template <class T>
DistMatrix<T>& DistMatrix<T>::operator=(DistMatrix&& o) noexcept {
  if (this != &o) {
    layout_ = std::move(o.layout_);
    rank_ = o.rank_;
    ld_ = o.ld_;
    store_ = std::move(o.store_);
    data_ = o.data_;
    o.store_.clear();
    o.data_ = nullptr;
    o.ld_ = 1;
  }
  return *this;
}

template <class T>
DistMatrix<T> DistMatrix<T>::clone() const {
  DistMatrix<T> m;
  m.layout_ = layout_;
  m.rank_ = rank_;
  const std::int64_t lr = local_rows(), lc = local_cols();
  m.ld_ = std::max<std::int64_t>(1, lr);
  m.store_ = Storage<T>(store_.empty() ? ComputeMode::Run : store_.mode(),
                        static_cast<std::size_t>(lr * lc));
  m.data_ = m.store_.empty() ? nullptr : m.store_.data();
  if (m.store_.mode() == ComputeMode::Skip) return m;  // shared: nothing to copy
  for (std::int64_t j = 0; j < lc; ++j)
    std::copy(data_ + j * ld_, data_ + j * ld_ + lr, m.data_ + j * m.ld_);
  return m;
}

template <class T>
DistMatrix<T> redistribute(const Context& ctx, const DistMatrix<T>& x, const layout::Layout& to,
                           const layout::RedistOptions& opt) {
  auto y = DistMatrix<T>::uninitialized(ctx, to);  // redistribute writes every element
  layout::redistribute(ctx.comm(), x.layout(), x.data(), x.ld(), to, y.data(), y.ld(), opt);
  return y;
}

template <class T>
std::vector<T> gather(const Context& ctx, const DistMatrix<T>& x, int root) {
  auto to = layout::Layout::on_rank(x.rows(), x.cols(), root, ctx.size());
  DistMatrix<T> y = redistribute(ctx, x, to);
  std::vector<T> out;
  if (ctx.rank() == root && x.rows() > 0) {  // 0 rows: no storage (data() may be null)
    out.assign(static_cast<std::size_t>(x.rows() * x.cols()), T{});
    for (std::int64_t j = 0; j < x.cols(); ++j)
      std::copy(y.data() + j * y.ld(), y.data() + j * y.ld() + x.rows(), out.data() + j * x.rows());
  }
  return out;
}

template <class T>
DistMatrix<T> scatter(const Context& ctx, const T* full, const layout::Layout& to, int root) {
  auto from = layout::Layout::on_rank(to.rows(), to.cols(), root, ctx.size());
  auto src = DistMatrix<T>::view(from, ctx.rank(), const_cast<T*>(full),
                                 std::max<std::int64_t>(1, to.rows()));
  return redistribute(ctx, src, to);
}

#define TESSEL_INSTANTIATE(T)                                                                      \
  template class DistMatrix<T>;                                                                    \
  template DistMatrix<T> redistribute(const Context&, const DistMatrix<T>&, const layout::Layout&, \
                                      const layout::RedistOptions&);                               \
  template std::vector<T> gather(const Context&, const DistMatrix<T>&, int);                       \
  template DistMatrix<T> scatter(const Context&, const T*, const layout::Layout&, int);
TESSEL_INSTANTIATE(double)
TESSEL_INSTANTIATE(std::complex<double>)
#undef TESSEL_INSTANTIATE

}  // namespace tessel::dense

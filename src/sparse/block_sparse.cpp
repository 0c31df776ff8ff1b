// BlockSparseMatrix<T>: local block-CSR storage, put/get of blocks, and the collective
// finalize() that sends buffered remote blocks to their owners: counts (one alltoall) ->
// blocks (one message per pair) -> merge in source-rank order -> sort the local CSR.
#include "tessel/sparse/block_sparse.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "block_norm.hpp"
#include "tessel/comm/packed_exchange.hpp"
#include "tessel/core/error.hpp"

namespace tessel::sparse {
namespace {

// Header of one block in a finalize message (16 bytes, so block data stays 8-byte aligned).
struct WireHeader {
  std::int32_t brow, bcol, accumulate, pad;
};

constexpr int kFinalizeTag = comm::tag::kSparseFinalize;

// Not collective. The first malformed block of a received finalize buffer, or "" when none:
// the bytes from each source (`from`, per rank) must parse as headers of blocks of this rank
// (`me`), each followed by its values (`elem` bytes each). Always on: the buffer comes from
// other ranks.
std::string check_received(const std::vector<unsigned char>& recv,
                           const std::vector<std::int64_t>& from, const Distribution& dist, int me,
                           std::size_t elem) {
  const int nbr = dist.row_blocks().count(), nbc = dist.col_blocks().count();
  std::size_t pos = 0;
  for (std::size_t src = 0; src < from.size(); ++src) {
    const std::size_t end = pos + static_cast<std::size_t>(from[src]);
    auto bad = [&](auto... what) {
      return detail::concat("finalize: the ", from[src], " bytes of blocks rank ", me,
                            " received from rank ", src, " are malformed at byte ",
                            pos - (end - static_cast<std::size_t>(from[src])), ": ", what...);
    };
    while (pos < end) {
      WireHeader h;
      if (end - pos < sizeof h) return bad("a header of ", sizeof h, " bytes does not fit");
      std::memcpy(&h, recv.data() + pos, sizeof h);
      if (h.brow < 0 || h.brow >= nbr || h.bcol < 0 || h.bcol >= nbc || h.accumulate < 0 ||
          h.accumulate > 1)
        return bad("block (", h.brow, ", ", h.bcol, ") accumulate ", h.accumulate,
                   ", expected a "
                   "block of the ",
                   nbr, " x ", nbc, " block grid and accumulate 0 or 1");
      if (dist.owner(h.brow, h.bcol) != me)
        return bad("block (", h.brow, ", ", h.bcol, ") belongs to rank ",
                   dist.owner(h.brow, h.bcol));
      pos += sizeof h;
      const std::size_t n = static_cast<std::size_t>(dist.row_blocks().size(h.brow)) *
                            static_cast<std::size_t>(dist.col_blocks().size(h.bcol)) * elem;
      if (end - pos < n)
        return bad("block (", h.brow, ", ", h.bcol, ") needs ", n, " bytes of values, ", end - pos,
                   " remain");
      pos += n;
    }
  }
  return {};
}

}  // namespace

template <class T>
BlockSparseMatrix<T>::BlockSparseMatrix(const Context& ctx, Distribution dist, std::string name)
    : ctx_(&ctx), dist_(std::move(dist)), name_(std::move(name)), rank_(ctx.rank()) {
  TESSEL_CHECK(ctx.size() == dist_.nranks(), DimensionMismatch, name_,
               ": the distribution's grid is ", dist_.pr(), " x ", dist_.pc(), " = ",
               dist_.nranks(), " ranks but the communicator has ", ctx.size());
  brows_ = dist_.local_block_rows(prow());
  row_ptr_.assign(brows_.size() + 1, 0);
  charge_ = ctx.ledger().charge(MemKind::Matrix);
  recharge();
}

template <class T>
void BlockSparseMatrix<T>::recharge() {
  constexpr std::int64_t kHashEntry = 32;  // an unordered_map node, roughly
  charge_.set(capacity_bytes(brows_) + capacity_bytes(row_ptr_) + capacity_bytes(col_) +
              capacity_bytes(offset_) + capacity_bytes(norm_) + capacity_bytes(data_) +
              capacity_bytes(pending_) + capacity_bytes(pending_data_) + capacity_bytes(tail_row_) +
              kHashEntry * static_cast<std::int64_t>(tail_index_.size()));
}

template <class T>
int BlockSparseMatrix<T>::local_row(int brow) const {
  auto it = std::lower_bound(brows_.begin(), brows_.end(), brow);
  return (it != brows_.end() && *it == brow) ? static_cast<int>(it - brows_.begin()) : -1;
}

template <class T>
std::int64_t BlockSparseMatrix<T>::find(int brow, int bcol) const {
  const int li = local_row(brow);
  if (li < 0 || dist_.col_owner(bcol) != pcol()) return -1;
  auto b = col_.begin() + row_ptr_[static_cast<std::size_t>(li)];
  auto e = col_.begin() + row_ptr_[static_cast<std::size_t>(li) + 1];
  auto it = std::lower_bound(b, e, bcol);
  if (it != e && *it == bcol) return it - col_.begin();
  if (!unsorted_) return -1;
  auto t = tail_index_.find(static_cast<std::int64_t>(brow) * dist_.col_blocks().count() + bcol);
  return t == tail_index_.end() ? -1 : t->second;
}

template <class T>
void BlockSparseMatrix<T>::put_local(int brow, int bcol, const T* values, bool accumulate) {
  const std::int64_t n =
      static_cast<std::int64_t>(dist_.row_blocks().size(brow)) * dist_.col_blocks().size(bcol);
  const std::int64_t k = find(brow, bcol);
  if (k >= 0) {
    T* dst = data_.data() + offset_[static_cast<std::size_t>(k)];
    if (accumulate)
      for (std::int64_t i = 0; i < n; ++i) dst[i] += values[i];
    else
      std::copy(values, values + n, dst);
    norm_[static_cast<std::size_t>(k)] = block_norm(dst, n);
    return;
  }
  offset_.push_back(static_cast<std::int64_t>(data_.size()));
  data_.insert(data_.end(), values, values + n);
  col_.push_back(bcol);
  norm_.push_back(block_norm(values, n));
  tail_row_.push_back(local_row(brow));
  tail_index_[static_cast<std::int64_t>(brow) * dist_.col_blocks().count() + bcol] =
      static_cast<std::int64_t>(col_.size()) - 1;
  unsorted_ = true;
  recharge();
}

template <class T>
void BlockSparseMatrix<T>::put_block(int brow, int bcol, const T* values, bool accumulate) {
  const bool ok = brow >= 0 && brow < dist_.row_blocks().count() && bcol >= 0 &&
                  bcol < dist_.col_blocks().count() && values != nullptr;
  if (!ok) {
    if (put_error_.empty())
      put_error_ = detail::concat(
          name_, ": put_block(", brow, ", ", bcol, ") on rank ", rank_,
          values == nullptr
              ? std::string(": values is null")
              : detail::concat(": expected block row in [0, ", dist_.row_blocks().count(),
                               ") and block column in [0, ", dist_.col_blocks().count(), ")"));
    return;
  }
  if (dist_.owner(brow, bcol) == rank_) {
    put_local(brow, bcol, values, accumulate);
    return;
  }
  const std::int64_t n =
      static_cast<std::int64_t>(dist_.row_blocks().size(brow)) * dist_.col_blocks().size(bcol);
  pending_.push_back({brow, bcol, accumulate, static_cast<std::int64_t>(pending_data_.size())});
  pending_data_.insert(pending_data_.end(), values, values + n);
  recharge();
}

template <class T>
const T* BlockSparseMatrix<T>::get_block(int brow, int bcol) const {
  TESSEL_CHECK(brow >= 0 && brow < dist_.row_blocks().count() && bcol >= 0 &&
                   bcol < dist_.col_blocks().count(),
               InputError, name_, ": get_block(", brow, ", ", bcol, "): expected block row in [0, ",
               dist_.row_blocks().count(), ") and block column in [0, ", dist_.col_blocks().count(),
               ")");
  const std::int64_t k = find(brow, bcol);
  return k < 0 ? nullptr : data_.data() + offset_[static_cast<std::size_t>(k)];
}

template <class T>
T* BlockSparseMatrix<T>::get_block(int brow, int bcol) {
  return const_cast<T*>(static_cast<const BlockSparseMatrix&>(*this).get_block(brow, bcol));
}

template <class T>
void BlockSparseMatrix<T>::sort_local() {
  if (!unsorted_) return;
  struct Entry {
    int row, col;
    std::int64_t k;
  };
  std::vector<Entry> e;
  e.reserve(col_.size());
  for (std::size_t i = 0; i < brows_.size(); ++i)
    for (std::int64_t k = row_ptr_[i]; k < row_ptr_[i + 1]; ++k)
      e.push_back({static_cast<int>(i), col_[static_cast<std::size_t>(k)], k});
  for (std::size_t t = 0; t < tail_row_.size(); ++t) {
    const std::int64_t k = row_ptr_.back() + static_cast<std::int64_t>(t);
    e.push_back({tail_row_[t], col_[static_cast<std::size_t>(k)], k});
  }
  std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) {
    return a.row != b.row ? a.row < b.row : a.col < b.col;
  });
  std::vector<std::int64_t> row_ptr(brows_.size() + 1, 0), offset(e.size());
  std::vector<int> col(e.size());
  std::vector<double> norm(e.size());
  std::vector<T> data(data_.size());
  MemoryCharge sorted =
      ctx_ ? ctx_->ledger().charge(MemKind::Matrix, capacity_bytes(data)) : MemoryCharge();
  std::int64_t at = 0;
  for (std::size_t x = 0; x < e.size(); ++x) {
    const auto k = static_cast<std::size_t>(e[x].k);
    const std::int64_t n = static_cast<std::int64_t>(dist_.row_blocks().size(
                               brows_[static_cast<std::size_t>(e[x].row)])) *
                           dist_.col_blocks().size(e[x].col);
    row_ptr[static_cast<std::size_t>(e[x].row) + 1] += 1;
    col[x] = e[x].col;
    norm[x] = norm_[k];
    offset[x] = at;
    std::copy(data_.begin() + offset_[k], data_.begin() + offset_[k] + n, data.begin() + at);
    at += n;
  }
  data.resize(static_cast<std::size_t>(at));
  for (std::size_t i = 0; i < brows_.size(); ++i) row_ptr[i + 1] += row_ptr[i];
  sorted.set(0);  // charge_ takes the new storage over below
  row_ptr_ = std::move(row_ptr);
  col_ = std::move(col);
  offset_ = std::move(offset);
  norm_ = std::move(norm);
  data_ = std::move(data);
  tail_row_.clear();
  tail_index_.clear();
  unsorted_ = false;
  recharge();
}

template <class T>
void BlockSparseMatrix<T>::finalize() {
  TESSEL_CHECK(ctx_ != nullptr, Error, "finalize: the matrix has no Context (default-constructed)");
  PhaseScope phase(*ctx_->comm().ledger(), "sparse/finalize");
  exchange_pending();
}

template <class T>
void BlockSparseMatrix<T>::exchange_pending() {
  TESSEL_CHECK(ctx_ != nullptr, Error, "finalize: the matrix has no Context (default-constructed)");
  const Context& ctx = *ctx_;
  const comm::Comm& c = ctx.comm();

  // Pack the buffered blocks by destination rank (put order kept within a destination).
  const int p = c.size();
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(p), 0);
  auto block_elems = [&](int brow, int bcol) {
    return static_cast<std::int64_t>(dist_.row_blocks().size(brow)) * dist_.col_blocks().size(bcol);
  };
  for (const auto& b : pending_)
    bytes[static_cast<std::size_t>(dist_.owner(b.brow, b.bcol))] +=
        static_cast<std::int64_t>(sizeof(WireHeader)) +
        block_elems(b.brow, b.bcol) * static_cast<std::int64_t>(sizeof(T));
  auto at = comm::ExchangeCounts::offsets(bytes);
  std::vector<unsigned char> send(static_cast<std::size_t>(at.back()));
  for (const auto& b : pending_) {
    auto& pos = at[static_cast<std::size_t>(dist_.owner(b.brow, b.bcol))];
    WireHeader h{b.brow, b.bcol, b.accumulate ? 1 : 0, 0};
    std::memcpy(send.data() + pos, &h, sizeof h);
    pos += sizeof h;
    const std::int64_t nb = block_elems(b.brow, b.bcol) * static_cast<std::int64_t>(sizeof(T));
    std::memcpy(send.data() + pos, pending_data_.data() + b.offset, static_cast<std::size_t>(nb));
    pos += nb;
  }
  std::vector<Pending>().swap(pending_);  // released, not just emptied
  std::vector<T>().swap(pending_data_);
  recharge();

  // Exchange, then one agreement: a bad put on any rank (InputError, the caller's mistake) or a
  // malformed received buffer (Error) ends the call on every rank before anything received is
  // applied; the received blocks are dropped and the matrix stays usable.
  std::vector<std::int64_t> from;
  MemoryCharge buffers = ctx.ledger().charge(MemKind::Buffers, capacity_bytes(send));
  std::vector<unsigned char> recv = comm::exchange_packed(c, bytes, send, kFinalizeTag, &from);
  buffers.set(capacity_bytes(send) + capacity_bytes(recv));
  c.test_received("finalize: received", recv.data(), recv.size());
  const std::string malformed = check_received(recv, from, dist_, rank_, sizeof(T));
  try {
    ctx.agree([&] {
      TESSEL_CHECK(put_error_.empty(), InputError, put_error_);
      TESSEL_CHECK(malformed.empty(), Error, malformed);
    });
  } catch (const Error&) {
    put_error_.clear();
    sort_local();
    throw;
  }

  // Apply in increasing source rank (the receive buffer's order).
  std::vector<T> values;
  for (std::size_t pos = 0; pos < recv.size();) {
    WireHeader h;
    std::memcpy(&h, recv.data() + pos, sizeof h);
    pos += sizeof h;
    const std::int64_t n = block_elems(h.brow, h.bcol);
    values.resize(static_cast<std::size_t>(n));
    std::memcpy(values.data(), recv.data() + pos, static_cast<std::size_t>(n) * sizeof(T));
    pos += static_cast<std::size_t>(n) * sizeof(T);
    put_local(h.brow, h.bcol, values.data(), h.accumulate != 0);
  }
  sort_local();
  recharge();
}

template <class T>
void BlockSparseMatrix<T>::clear() {
  row_ptr_.assign(brows_.size() + 1, 0);
  col_.clear();
  offset_.clear();
  norm_.clear();
  data_.clear();
  pending_.clear();
  pending_data_.clear();
  tail_row_.clear();
  tail_index_.clear();
  put_error_.clear();
  unsorted_ = false;
  std::vector<T>().swap(data_);  // the storage is released
  std::vector<T>().swap(pending_data_);
  recharge();
}

template <class T>
void BlockSparseMatrix<T>::assign_local(std::vector<std::int64_t> row_ptr, std::vector<int> col,
                                        std::vector<std::int64_t> offset, std::vector<T> data) {
  const std::size_t nr = brows_.size();
  TESSEL_CHECK(row_ptr.size() == nr + 1, InputError, name_, ": assign_local: row_ptr has ",
               row_ptr.size(), " entries, expected local block rows + 1 = ", nr + 1);
  TESSEL_CHECK(row_ptr[0] == 0 && row_ptr[nr] == static_cast<std::int64_t>(col.size()) &&
                   offset.size() == col.size(),
               InputError, name_, ": assign_local: row_ptr[0] = ", row_ptr[0], ", row_ptr[", nr,
               "] = ", row_ptr[nr], ", ", col.size(), " columns and ", offset.size(),
               " offsets: expected 0 and one column and offset per block");
  const int nbc = dist_.col_blocks().count();
  for (std::size_t i = 0; i < nr; ++i) {
    TESSEL_CHECK(row_ptr[i] <= row_ptr[i + 1], InputError, name_, ": assign_local: row_ptr[", i,
                 "] = ", row_ptr[i], " > row_ptr[", i + 1, "] = ", row_ptr[i + 1]);
    const int rsz = dist_.row_blocks().size(brows_[i]);
    for (std::int64_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
      const int bc = col[static_cast<std::size_t>(k)];
      TESSEL_CHECK(bc >= 0 && bc < nbc && dist_.col_owner(bc) == pcol(), InputError, name_,
                   ": assign_local: block (", brows_[i], ", ", bc,
                   ") is not a block column of process column ", pcol());
      TESSEL_CHECK(k == row_ptr[i] || col[static_cast<std::size_t>(k) - 1] < bc, InputError, name_,
                   ": assign_local: block row ", brows_[i], " is not sorted by block column (",
                   col[static_cast<std::size_t>(k) - 1], " before ", bc, ")");
      const std::int64_t off = offset[static_cast<std::size_t>(k)];
      const std::int64_t n = static_cast<std::int64_t>(rsz) * dist_.col_blocks().size(bc);
      TESSEL_CHECK(off >= 0 && off + n <= static_cast<std::int64_t>(data.size()), InputError, name_,
                   ": assign_local: block (", brows_[i], ", ", bc, ") at offset ", off, " with ", n,
                   " values exceeds the data (", data.size(), ")");
    }
  }
  row_ptr_ = std::move(row_ptr);
  col_ = std::move(col);
  offset_ = std::move(offset);
  data_ = std::move(data);
  tail_row_.clear();
  tail_index_.clear();
  unsorted_ = false;
  update_norms();
  recharge();
}

template <class T>
void BlockSparseMatrix<T>::for_each_block(
    const std::function<void(int, int, const T*, int, int)>& f) const {
  for (std::size_t i = 0; i < brows_.size(); ++i) {
    const int rs = dist_.row_blocks().size(brows_[i]);
    for (std::int64_t k = row_ptr_[i]; k < row_ptr_[i + 1]; ++k) {
      const int bc = col_[static_cast<std::size_t>(k)];
      f(brows_[i], bc, data_.data() + offset_[static_cast<std::size_t>(k)], rs,
        dist_.col_blocks().size(bc));
    }
  }
  for (std::size_t t = 0; t < tail_row_.size(); ++t) {
    const auto k = static_cast<std::size_t>(row_ptr_.back()) + t;
    const int br = brows_[static_cast<std::size_t>(tail_row_[t])];
    f(br, col_[k], data_.data() + offset_[k], dist_.row_blocks().size(br),
      dist_.col_blocks().size(col_[k]));
  }
}

template <class T>
void BlockSparseMatrix<T>::for_each_block(const std::function<void(int, int, T*, int, int)>& f) {
  const auto& self = *this;
  self.for_each_block(
      [&](int br, int bc, const T* x, int r, int c) { f(br, bc, const_cast<T*>(x), r, c); });
  update_norms();
}

template <class T>
void BlockSparseMatrix<T>::update_norms() {
  norm_.assign(col_.size(), 0.0);
  std::size_t k = 0;
  static_cast<const BlockSparseMatrix&>(*this).for_each_block(
      [&](int, int, const T* x, int r, int c) {
        norm_[k++] = block_norm(x, static_cast<std::int64_t>(r) * c);
      });
}

template class BlockSparseMatrix<double>;

}  // namespace tessel::sparse

// The local kernel of the block-sparse multiply (no MPI): images packed from block-CSR,
// C += A * B over images with on-the-fly filtering, block products batched by shape and run
// through LIBXSMM (BLAS dgemm for large blocks), and the final merge into C.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "block_norm.hpp"
#include "block_products.hpp"
#include "spgemm_panels.hpp"
#include "tessel/core/error.hpp"

namespace tessel::sparse::detail {

namespace {
std::int64_t norm_bits(double x) {
  std::int64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
}  // namespace

void block_offsets(const std::int64_t* meta, std::int64_t nblocks, const BlockSizes& rows,
                   const BlockSizes& cols, std::vector<std::int64_t>& off) {
  off.resize(static_cast<std::size_t>(nblocks));
  std::int64_t at = 0;
  for (std::int64_t b = 0; b < nblocks; ++b) {
    off[static_cast<std::size_t>(b)] = at;
    at += static_cast<std::int64_t>(rows.size(meta_row(meta[kMeta * b]))) *
          cols.size(meta_col(meta[kMeta * b]));
  }
}

PanelView PanelBuf::view() const {
  TESSEL_CHECK(static_cast<std::int64_t>(off.size()) == nblocks(), Error,
               "internal error: a panel of ", nblocks(), " blocks viewed before index()");
  return {meta.data(), nblocks(), data.data(), static_cast<std::int64_t>(data.size()), off.data()};
}

std::vector<RowRange> row_panels(const BlockSizes& rows, int panels) {
  std::vector<RowRange> out(static_cast<std::size_t>(panels));
  int r = 0;
  for (int p = 0; p < panels; ++p) {
    out[static_cast<std::size_t>(p)].lo = r;
    const std::int64_t end = rows.extent() * (p + 1);  // offset(r) * panels < end: panel p
    while (r < rows.count() && rows.offset(r) * panels < end) ++r;
    out[static_cast<std::size_t>(p)].hi = r;
  }
  return out;
}

std::vector<ImageSize> image_sizes(const LocalBlocks<double>& m, const BlockSizes& rows,
                                   const BlockSizes& cols, const std::vector<int>& kv, bool by_col,
                                   int first, int count, RowRange only) {
  std::vector<ImageSize> s(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < m.brows->size(); ++i) {
    int r = (*m.brows)[i];
    if (!only.has(r)) continue;
    for (std::int64_t k = (*m.row_ptr)[i]; k < (*m.row_ptr)[i + 1]; ++k) {
      int c = (*m.col)[static_cast<std::size_t>(k)];
      int img = kv[static_cast<std::size_t>(by_col ? c : r)] - first;
      if (img < 0 || img >= count) continue;
      auto& x = s[static_cast<std::size_t>(img)];
      x.nblocks += 1;
      x.ndata += static_cast<std::int64_t>(rows.size(r)) * cols.size(c);
    }
  }
  return s;
}

void pack_images(const LocalBlocks<double>& m, const BlockSizes& rows, const BlockSizes& cols,
                 const std::vector<int>& kv, bool by_col, int first, int count, std::int64_t* meta,
                 double* data, RowRange only) {
  auto sizes = image_sizes(m, rows, cols, kv, by_col, first, count, only);
  std::vector<std::int64_t> mcur(static_cast<std::size_t>(count)), dcur(mcur.size());
  std::int64_t mb = 0, db = 0;
  for (std::size_t q = 0; q < mcur.size(); ++q) {
    mcur[q] = mb;
    dcur[q] = db;
    mb += sizes[q].nblocks;
    db += sizes[q].ndata;
  }
  for (std::size_t i = 0; i < m.brows->size(); ++i) {
    int r = (*m.brows)[i];
    if (!only.has(r)) continue;
    for (std::int64_t k = (*m.row_ptr)[i]; k < (*m.row_ptr)[i + 1]; ++k) {
      auto kk = static_cast<std::size_t>(k);
      int c = (*m.col)[kk];
      int img = kv[static_cast<std::size_t>(by_col ? c : r)] - first;
      if (img < 0 || img >= count) continue;
      auto q = static_cast<std::size_t>(img);
      std::int64_t n = static_cast<std::int64_t>(rows.size(r)) * cols.size(c);
      std::int64_t* e = meta + kMeta * mcur[q]++;
      e[0] = meta_rc(r, c);
      e[1] = norm_bits((*m.norm)[kk]);
      std::memcpy(data + dcur[q], m.data + (*m.offset)[kk], static_cast<std::size_t>(n) * 8);
      dcur[q] += n;
    }
  }
}

namespace {
int largest(const BlockSizes& s) {
  int m = 0;
  for (int b = 0; b < s.count(); ++b) m = std::max(m, s.size(b));
  return m;
}
}  // namespace

CAccumulator::CAccumulator(const BlockSizes* rows, const BlockSizes* cols, AccValues values)
    : rows_(rows),
      cols_(cols),
      row_slot_(static_cast<std::size_t>(rows->count()), -1),
      spa_(static_cast<std::size_t>(cols->count()), -1) {
  mode_ = values;
  if (mode_ == AccValues::Virtual)  // never grows: the kernel keeps pointers into it
    scratch_.assign(static_cast<std::size_t>(largest(*rows)) * largest(*cols), 0.0);
}

void CAccumulator::select(int r) const {
  if (r == cur_) return;
  if (cur_ >= 0 && row_slot_[static_cast<std::size_t>(cur_)] >= 0)
    for (auto& e : entries_[static_cast<std::size_t>(row_slot_[static_cast<std::size_t>(cur_)])])
      spa_[static_cast<std::size_t>(e.first)] = -1;
  cur_ = r;
  if (row_slot_[static_cast<std::size_t>(r)] >= 0)
    for (auto& e : entries_[static_cast<std::size_t>(row_slot_[static_cast<std::size_t>(r)])])
      spa_[static_cast<std::size_t>(e.first)] = e.second;
}

std::int64_t CAccumulator::find_id(int r, int c) const {
  select(r);
  return spa_[static_cast<std::size_t>(c)];
}

bool CAccumulator::contains(int r, int c) const { return find_id(r, c) >= 0; }

double* CAccumulator::take(std::int64_t n) {
  if (mode_ == AccValues::Virtual) {  // counted as held, stored nowhere
    page_values_ += n;
    return scratch_.data();
  }
  constexpr std::int64_t kPage = std::int64_t{1} << 16;  // values (512 KiB)
  if (n > page_left_) {  // the rest of the page stays unused; a large block gets its own page
    const std::int64_t size = std::max(kPage, n);
    pages_.push_back(std::make_unique<double[]>(static_cast<std::size_t>(size)));  // zeroed
    page_at_ = pages_.back().get();
    page_left_ = size;
    page_values_ += size;
    recharge();
  }
  double* v = page_at_;
  page_at_ += n;
  page_left_ -= n;
  return v;
}

std::int64_t CAccumulator::bytes() const {
  constexpr std::int64_t kPerBlock = 48;  // values_, bounds_, an entries_ pair, spa_ share
  return 8 * page_values_ + kPerBlock * nblocks_ +
         12 * static_cast<std::int64_t>(row_slot_.size()) +
         8 * static_cast<std::int64_t>(spa_.size());
}

void CAccumulator::charge_to(MemoryCharge c) {
  charge_ = std::move(c);
  recharge();
}

std::vector<std::size_t> CAccumulator::row_order() const {
  std::vector<std::size_t> order(entries_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](auto x, auto y) { return row_of_[x] < row_of_[y]; });
  return order;
}

Storage<double> CAccumulator::wire_values(std::int64_t n) const {
  return Storage<double>(wire_mode(mode_), static_cast<std::size_t>(n));
}

void CAccumulator::put_values(std::int64_t id, std::int64_t n, double* dst) const {
  if (mode_ == AccValues::Virtual)
    std::fill_n(dst, n, 0.0);
  else
    std::copy_n(values_[static_cast<std::size_t>(id)], n, dst);
}

CWire CAccumulator::pack_masked(const CWire& pattern, double drop_below,
                                std::int64_t* dropped) const {
  const std::int64_t np = static_cast<std::int64_t>(pattern.idx.size() / 2);
  CWire w;
  w.idx.assign(static_cast<std::size_t>((np + 31) / 32), 0);
  std::vector<std::pair<std::int64_t, std::int64_t>> sent;  // (block id, values)
  std::int64_t found = 0, nsent = 0;
  for (std::int64_t b = 0; b < np; ++b) {
    const int r = pattern.idx[static_cast<std::size_t>(2 * b)],
              c = pattern.idx[static_cast<std::size_t>(2 * b + 1)];
    const std::int64_t id = find_id(r, c);
    if (id < 0) continue;
    ++found;
    if (bounds_[static_cast<std::size_t>(id)] < drop_below) {  // ||block|| <= bound < drop_below
      if (dropped) ++*dropped;
      continue;
    }
    w.idx[static_cast<std::size_t>(b / 32)] |= static_cast<std::int32_t>(1u << (b % 32));
    sent.emplace_back(id, block_size(r, c));
    nsent += sent.back().second;
  }
  TESSEL_ASSERT(found == nblocks_);  // every block is inside the owner's pattern
  w.data = wire_values(nsent);
  double* at = w.data.data();
  for (auto [id, n] : sent) {
    put_values(id, n, at);
    at += n;
  }
  return w;
}

void CAccumulator::add_masked(const CWire& w, const CWire& pattern) {
  // Checked before anything is added (the bitmap and values come from another rank).
  const std::int64_t np = static_cast<std::int64_t>(pattern.idx.size() / 2);
  TESSEL_CHECK(static_cast<std::int64_t>(w.idx.size()) == (np + 31) / 32, Error,
               "a masked partial C panel has a bitmap of ", w.idx.size(),
               " words, but the pattern of ", np, " blocks needs ", (np + 31) / 32);
  auto sent = [&](std::int64_t b) {
    return ((static_cast<std::uint32_t>(w.idx[static_cast<std::size_t>(b / 32)]) >> (b % 32)) &
            1u) != 0;
  };
  std::int64_t need = 0;
  for (std::int64_t b = 0; b < static_cast<std::int64_t>(w.idx.size()) * 32; ++b) {
    if (!sent(b)) continue;
    TESSEL_CHECK(b < np, Error, "a masked partial C panel marks block ", b, " of a pattern of ", np,
                 " blocks");
    const int r = pattern.idx[static_cast<std::size_t>(2 * b)],
              c = pattern.idx[static_cast<std::size_t>(2 * b + 1)];
    check_block(r, c, "a masked partial C panel's pattern");
    need += block_size(r, c);
  }
  TESSEL_CHECK(need == static_cast<std::int64_t>(w.data.size()), Error,
               "a masked partial C panel's bitmap selects blocks of ", need,
               " values, but it holds ", w.data.size());
  std::int64_t at = 0;
  for (std::int64_t b = 0; b < np; ++b)
    if (sent(b))
      at += add_block(pattern.idx[static_cast<std::size_t>(2 * b)],
                      pattern.idx[static_cast<std::size_t>(2 * b + 1)], w.data.data() + at);
}

void CAccumulator::check_block(int r, int c, const char* what) const {
  TESSEL_CHECK(r >= 0 && r < rows_->count() && c >= 0 && c < cols_->count(), Error, what,
               " names block (", r, ", ", c, "), outside the ", rows_->count(), " x ",
               cols_->count(), " block grid");
}

std::int64_t CAccumulator::block_size(int r, int c) const {
  return static_cast<std::int64_t>(rows_->size(r)) * cols_->size(c);
}

std::int64_t CAccumulator::add_block(int r, int c, const double* src) {
  double* dst = slot(r, c);
  const std::int64_t n = block_size(r, c);
  for (std::int64_t x = 0; x < n; ++x) dst[x] += src[x];
  return n;
}

std::int64_t CAccumulator::slot_id(int r, int c, bool values) {
  select(r);
  std::int64_t& id = spa_[static_cast<std::size_t>(c)];
  if (id >= 0) return id;
  int& rs = row_slot_[static_cast<std::size_t>(r)];
  if (rs < 0) {
    rs = static_cast<int>(entries_.size());
    entries_.emplace_back();
    row_of_.push_back(r);
  }
  id = nblocks_++;
  bounds_.push_back(0.0);
  entries_[static_cast<std::size_t>(rs)].emplace_back(c, id);
  if (values) {
    const std::int64_t n = block_size(r, c);
    values_.push_back(take(n));
    nvalues_ += n;
  } else {
    values_.push_back(nullptr);
  }
  return id;
}

void CAccumulator::mark(int r, int c) { (void)slot_id(r, c, false); }

void CAccumulator::mark(const CWire& pattern) {
  for (std::size_t b = 0; b + 1 < pattern.idx.size(); b += 2) {
    const int r = pattern.idx[b], c = pattern.idx[b + 1];
    TESSEL_ASSERT(r >= 0 && r < rows_->count() && c >= 0 && c < cols_->count());
    mark(r, c);
  }
}

double* CAccumulator::slot(int r, int c) {
  double* v = values_[static_cast<std::size_t>(slot_id(r, c))];
  TESSEL_ASSERT(v);  // not a mark()ed block
  return v;
}

double* CAccumulator::slot_bound(int r, int c, double x) {
  auto id = static_cast<std::size_t>(slot_id(r, c));
  bounds_[id] += x;
  return values_[id];
}

void CAccumulator::add(const PanelView& p) {
  for (std::int64_t b = 0; b < p.nblocks; ++b) add_block(p.brow(b), p.bcol(b), p.block(b));
}

void CAccumulator::add(const CWire& w) {
  // Checked before anything is added (the wire comes from another rank).
  TESSEL_CHECK(w.idx.size() % 2 == 0, Error, "a partial C panel has ", w.idx.size(),
               " index entries (expected 2 per block)");
  const std::int64_t nb = static_cast<std::int64_t>(w.idx.size() / 2);
  std::int64_t need = 0;
  for (std::int64_t b = 0; b < nb; ++b) {
    const int r = w.idx[static_cast<std::size_t>(2 * b)],
              c = w.idx[static_cast<std::size_t>(2 * b + 1)];
    check_block(r, c, "a partial C panel");
    need += block_size(r, c);
  }
  TESSEL_CHECK(need == static_cast<std::int64_t>(w.data.size()), Error, "a partial C panel of ", nb,
               " blocks needs ", need, " values, but it holds ", w.data.size());
  std::int64_t at = 0;
  for (std::int64_t b = 0; b < nb; ++b)
    at += add_block(w.idx[static_cast<std::size_t>(2 * b)],
                    w.idx[static_cast<std::size_t>(2 * b + 1)], w.data.data() + at);
}

void CAccumulator::for_each_block(
    const std::function<void(int, int, const double*, double)>& f) const {
  for (std::size_t i : row_order()) {
    auto row = entries_[i];
    std::sort(row.begin(), row.end());
    for (auto [c, id] : row)
      f(row_of_[i], c, values_[static_cast<std::size_t>(id)],
        bounds_[static_cast<std::size_t>(id)]);
  }
}

void CAccumulator::sorted_row(int r, std::vector<std::pair<int, const double*>>& out) const {
  out.clear();
  const int rs = row_slot_[static_cast<std::size_t>(r)];
  if (rs < 0) return;
  for (auto [c, id] : entries_[static_cast<std::size_t>(rs)])
    out.emplace_back(c, values_[static_cast<std::size_t>(id)]);
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
}

CWire CAccumulator::pack_wire(double drop_below, std::int64_t* dropped) const {
  CWire w;
  w.idx.reserve(static_cast<std::size_t>(nblocks_) * 2);
  std::int64_t nsent = 0;
  for_each_block([&](int r, int c, const double*, double bound) {
    if (bound < drop_below) {  // ||block|| <= bound < drop_below
      if (dropped) ++*dropped;
      return;
    }
    w.idx.insert(w.idx.end(), {r, c});
    nsent += block_size(r, c);
  });
  w.data = wire_values(nsent);
  double* at = w.data.data();
  for (std::size_t b = 0; b < w.idx.size(); b += 2) {
    const int r = w.idx[b], c = w.idx[b + 1];
    const std::int64_t n = block_size(r, c);
    put_values(find_id(r, c), n, at);
    at += n;
  }
  return w;
}

namespace {
/// Runs the batch (KernelMode::Compute) or, in Sampled, charges it to stats.pending_s: with a
/// table of product times each product its shape's entry, none run; without one, the batch's
/// first kSampledProducts run and the CPU time of the others is estimated from the rate of the
/// sample after its first kSampleWarmup (the first products of a batch run at about half the
/// rate of the rest).
void flush(Stack& s, KernelStats& stats, const KernelRun& run) {
  const std::size_t np = s.p.size();
  if (run.mode == KernelMode::Sampled && run.times) {
    const double* t = run.times->find(s.m, s.n, s.k);
    if (!t)
      throw Error(tessel::detail::concat("internal error: no product time for block shape ", s.m,
                                         " x ", s.n, " x ", s.k,
                                         " (check_product_times was not called)"));
    stats.pending_s += *t * static_cast<double>(np);
  } else if (run.time && run.mode == KernelMode::Compute) {
    const double t0 = thread_cpu_seconds();
    run_products(s, 0, np);
    ShapeTime& st = stats.timed[{s.m, s.n, s.k}];
    st.seconds += thread_cpu_seconds() - t0;
    st.products += static_cast<std::int64_t>(np);
  } else if (run.mode != KernelMode::Sampled || np <= kSampledProducts) {
    run_products(s, 0, np);
  } else {
    run_products(s, 0, kSampleWarmup);
    const double t0 = thread_cpu_seconds();
    run_products(s, kSampleWarmup, kSampledProducts);
    stats.pending_s += (thread_cpu_seconds() - t0) * static_cast<double>(np - kSampledProducts) /
                       static_cast<double>(kSampledProducts - kSampleWarmup);
  }
  stats.flops += 2.0 * s.m * s.n * s.k * static_cast<double>(np);
  stats.multiplied += static_cast<std::int64_t>(np);
  s.p.clear();
}
}  // namespace

void multiply_images(const PanelView& a, const PanelView& b, const BlockSizes& rows,
                     const BlockSizes& inner, const BlockSizes& cols, const double* row_thr,
                     const CAccumulator* allowed, CAccumulator& c, KernelStats& stats,
                     const KernelRun& run, const std::function<void()>& progress) {
  if (a.nblocks == 0 || b.nblocks == 0) return;
  // B's block rows: [begin, end) of each row present (B is sorted by row); B's block columns
  // and their sizes, read once.
  std::vector<std::int64_t> rb;  // triples: row, begin, end
  std::vector<int> bc(static_cast<std::size_t>(b.nblocks)), bn(bc.size());
  for (std::int64_t z = 0; z < b.nblocks; ++z) {
    bc[static_cast<std::size_t>(z)] = b.bcol(z);
    bn[static_cast<std::size_t>(z)] = cols.size(b.bcol(z));
  }
  for (std::int64_t x = 0; x < b.nblocks;) {
    std::int64_t y = x;
    while (y < b.nblocks && b.brow(y) == b.brow(x)) ++y;
    rb.insert(rb.end(), {b.brow(x), x, y});
    x = y;
  }
  auto brange = [&](int k) -> std::pair<std::int64_t, std::int64_t> {
    std::size_t lo = 0, hi = rb.size() / 3;
    while (lo < hi) {
      std::size_t mid = (lo + hi) / 2;
      if (rb[3 * mid] < k)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo < rb.size() / 3 && rb[3 * lo] == k) return {rb[3 * lo + 1], rb[3 * lo + 2]};
    return {0, 0};
  };
  std::vector<Stack> stacks;
  // Shapes with all sizes <= kTableMax (the usual atomic block sizes of the basis sets) are
  // found through a direct table indexed by (m, n, k), kT = kTableMax + 1 entries a side;
  // others by search.
  constexpr int kTableMax = 32, kT = kTableMax + 1;
  std::vector<int> table(static_cast<std::size_t>(kT) * kT * kT, -1);
  auto stack_of = [&](int m, int n, int k) -> Stack& {
    const bool small = m < kT && n < kT && k < kT;
    int* t = small ? &table[(static_cast<std::size_t>(m) * kT + n) * kT + k] : nullptr;
    if (t && *t >= 0) return stacks[static_cast<std::size_t>(*t)];
    if (!t)
      for (auto& s : stacks)
        if (s.m == m && s.n == n && s.k == k) return s;
    stacks.push_back(Stack::of(m, n, k));
    if (t) *t = static_cast<int>(stacks.size() - 1);
    return stacks.back();
  };
  for (std::int64_t x = 0; x < a.nblocks;) {
    int r = a.brow(x);
    std::int64_t y = x;
    while (y < a.nblocks && a.brow(y) == r) ++y;
    const double thr = row_thr ? row_thr[r] : 0.0;  // the same in every call of the multiply
    const int m = rows.size(r);
    for (std::int64_t q = x; q < y; ++q) {
      int k = a.bcol(q);
      auto [lo, hi] = brange(k);
      const double na = a.norm(q);
      const double* ab = a.block(q);
      const int kk = inner.size(k);
      for (std::int64_t z = lo; z < hi; ++z) {
        const int cc = bc[static_cast<std::size_t>(z)];
        if (na * b.norm(z) < thr) {
          ++stats.skipped;
          continue;
        }
        if (allowed && !allowed->contains(r, cc)) continue;
        double* const cv = c.slot_bound(r, cc, na * b.norm(z));
        if (run.mode == KernelMode::Symbolic) continue;  // C's block as the product makes it
        Stack& s = stack_of(m, bn[static_cast<std::size_t>(z)], kk);
        s.p.push_back({ab, b.block(z), cv});
        if (s.p.size() >= kStackSize) flush(s, stats, run);
      }
    }
    x = y;
    if (progress) progress();
  }
  for (auto& s : stacks) flush(s, stats, run);
}

void add_row_counts(const LocalBlocks<double>& m, std::vector<std::int64_t>& n) {
  for (std::size_t i = 0; i < m.brows->size(); ++i)
    n[static_cast<std::size_t>((*m.brows)[i])] += (*m.row_ptr)[i + 1] - (*m.row_ptr)[i];
}

void add_row_products(const LocalBlocks<double>& a, const std::vector<std::int64_t>& b_rows,
                      std::vector<std::int64_t>& n) {
  for (std::size_t i = 0; i < a.brows->size(); ++i) {
    std::int64_t& nr = n[static_cast<std::size_t>((*a.brows)[i])];
    for (std::int64_t k = (*a.row_ptr)[i]; k < (*a.row_ptr)[i + 1]; ++k)
      nr += b_rows[static_cast<std::size_t>((*a.col)[static_cast<std::size_t>(k)])];
  }
}

std::vector<double> row_thresholds(const std::vector<std::int64_t>& products, double eps) {
  std::vector<double> thr(products.size(), 0.0);
  for (std::size_t r = 0; r < thr.size(); ++r)
    if (products[r] > 0) thr[r] = eps / static_cast<double>(products[r]);
  return thr;
}

CAccumulator pattern_of(const BlockSparseMatrix<double>& c) {
  const auto& d = c.distribution();
  CAccumulator acc(&d.row_blocks(), &d.col_blocks());
  auto l = c.local();
  for (std::size_t i = 0; i < l.brows->size(); ++i)
    for (std::int64_t k = (*l.row_ptr)[i]; k < (*l.row_ptr)[i + 1]; ++k)
      acc.mark((*l.brows)[i], (*l.col)[static_cast<std::size_t>(k)]);
  return acc;
}

CWire pattern_wire(const BlockSparseMatrix<double>& c) {
  CWire w;
  auto l = c.local();
  w.idx.reserve(static_cast<std::size_t>(2 * c.local_nblocks()));
  for (std::size_t i = 0; i < l.brows->size(); ++i)  // CSR: rows increasing, columns sorted
    for (std::int64_t k = (*l.row_ptr)[i]; k < (*l.row_ptr)[i + 1]; ++k)
      w.idx.insert(w.idx.end(), {(*l.brows)[i], (*l.col)[static_cast<std::size_t>(k)]});
  return w;
}

std::int64_t merge_into(BlockSparseMatrix<double>& c, double beta, double alpha,
                        const CAccumulator* p, bool retain, double eps, MemoryCharge* held) {
  const auto& rows = c.distribution().row_blocks();
  const auto& cols = c.distribution().col_blocks();
  auto l = c.local();
  const bool keep_old = retain || beta != 0.0;
  // Every block of the result in CSR order: f(r, column, old values or null, product or null);
  // row_end() after each of C's local rows.
  std::vector<std::pair<int, const double*>> prow;
  std::int64_t pseen = 0;
  auto walk = [&](const std::function<void(int, int, const double*, const double*)>& f,
                  const std::function<void()>& row_end) {
    pseen = 0;
    for (std::size_t i = 0; i < l.brows->size(); ++i) {
      const int r = (*l.brows)[i];
      if (p) p->sorted_row(r, prow);
      pseen += static_cast<std::int64_t>(prow.size());
      std::int64_t k = (*l.row_ptr)[i];
      const std::int64_t kend = (*l.row_ptr)[i + 1];
      std::size_t q = 0;
      while (k < kend || q < prow.size()) {
        const int oc = k < kend ? (*l.col)[static_cast<std::size_t>(k)] : -1;
        const int pc = q < prow.size() ? prow[q].first : -1;
        const double* old = oc >= 0 ? l.data + (*l.offset)[static_cast<std::size_t>(k)] : nullptr;
        if (oc >= 0 && (pc < 0 || oc < pc)) {
          if (keep_old) f(r, oc, old, nullptr);
          ++k;
        } else if (oc < 0 || pc < oc) {
          if (!retain) f(r, pc, nullptr, prow[q].second);
          ++q;
        } else {
          f(r, oc, keep_old ? old : nullptr, prow[q].second);
          ++k;
          ++q;
        }
      }
      row_end();
    }
  };
  auto combine = [&](double* dst, std::int64_t n, const double* old, const double* prod) {
    for (std::int64_t x = 0; x < n; ++x)
      dst[x] = (old && beta != 0.0 ? beta * old[x] : 0.0) + (prod ? alpha * prod[x] : 0.0);
  };
  // Pass 1: which blocks the filter keeps, and the exact size of the new storage.
  std::vector<char> keep;
  std::vector<double> scratch;
  std::int64_t nkept = 0, nvalues = 0, dropped = 0;
  walk(
      [&](int r, int cc, const double* old, const double* prod) {
        const std::int64_t n = static_cast<std::int64_t>(rows.size(r)) * cols.size(cc);
        bool k = true;
        if (eps > 0) {
          scratch.resize(static_cast<std::size_t>(n));
          combine(scratch.data(), n, old, prod);
          k = block_norm(scratch.data(), n) >= eps;
        }
        keep.push_back(k);
        if (k) {
          ++nkept;
          nvalues += n;
        } else {
          ++dropped;
        }
      },
      [] {});
  TESSEL_ASSERT(!p || pseen == p->nblocks());  // every product block is in one of C's rows
  // Pass 2: fill.
  std::vector<std::int64_t> row_ptr, offset;
  std::vector<int> col;
  std::vector<double> data(static_cast<std::size_t>(nvalues));
  row_ptr.reserve(l.brows->size() + 1);
  row_ptr.push_back(0);
  col.reserve(static_cast<std::size_t>(nkept));
  offset.reserve(static_cast<std::size_t>(nkept));
  if (held)
    held->set(capacity_bytes(data) + capacity_bytes(row_ptr) + capacity_bytes(col) +
              capacity_bytes(offset));
  std::size_t b = 0;
  std::int64_t at = 0;
  walk(
      [&](int r, int cc, const double* old, const double* prod) {
        if (!keep[b++]) return;
        const std::int64_t n = static_cast<std::int64_t>(rows.size(r)) * cols.size(cc);
        combine(data.data() + at, n, old, prod);
        col.push_back(cc);
        offset.push_back(at);
        at += n;
      },
      [&] { row_ptr.push_back(static_cast<std::int64_t>(col.size())); });
  TESSEL_ASSERT(at == nvalues);
  if (held) held->set(0);  // c's own charge takes the new storage over
  c.assign_local(std::move(row_ptr), std::move(col), std::move(offset), std::move(data));
  return dropped;
}

}  // namespace tessel::sparse::detail

#include "tessel/layout/layout.hpp"

#include <set>
#include <sstream>

#include "tessel/core/error.hpp"

namespace tessel::layout {

Layout::Layout(Partition1D rows, Partition1D cols, std::vector<int> owner, int comm_size)
    : rows_(std::move(rows)),
      cols_(std::move(cols)),
      owner_(std::move(owner)),
      comm_size_(comm_size) {
  const std::size_t pairs = static_cast<std::size_t>(rows_.groups()) * cols_.groups();
  TESSEL_CHECK(owner_.size() == pairs, LayoutMismatch, "layout: owner table has ", owner_.size(),
               " entries, expected ", pairs);
  of_rank_.assign(static_cast<std::size_t>(comm_size), {-1, -1});
  for (int gr = 0; gr < rows_.groups(); ++gr)
    for (int gc = 0; gc < cols_.groups(); ++gc) {
      int r = this->owner(gr, gc);
      if (r < 0) continue;
      TESSEL_CHECK(r < comm_size, GridError, "layout: owner rank ", r, " outside [0, ", comm_size,
                   ")");
      auto& slot = of_rank_[static_cast<std::size_t>(r)];
      TESSEL_CHECK(slot.first < 0, LayoutMismatch, "layout: rank ", r, " owns two blocks");
      slot = {gr, gc};
    }
}

Layout Layout::block_cyclic(std::int64_t m, std::int64_t n, std::int64_t mb, std::int64_t nb,
                            int nprow, int npcol, int rsrc, int csrc, int comm_size,
                            std::vector<int> grid_rank) {
  return block_cyclic_inb(m, n, mb, nb, mb, nb, nprow, npcol, rsrc, csrc, comm_size,
                          std::move(grid_rank));
}

Layout Layout::block_cyclic_inb(std::int64_t m, std::int64_t n, std::int64_t imb, std::int64_t inb,
                                std::int64_t mb, std::int64_t nb, int nprow, int npcol, int rsrc,
                                int csrc, int comm_size, std::vector<int> grid_rank) {
  TESSEL_CHECK(m >= 0, DimensionMismatch, "rows m = ", m, ", expected m >= 0");
  TESSEL_CHECK(n >= 0, DimensionMismatch, "cols n = ", n, ", expected n >= 0");
  TESSEL_CHECK(mb >= 1, LayoutMismatch, "row block size mb = ", mb, ", expected mb >= 1");
  TESSEL_CHECK(nb >= 1, LayoutMismatch, "column block size nb = ", nb, ", expected nb >= 1");
  TESSEL_CHECK(imb >= 1 && inb >= 1, LayoutMismatch, "first block ", imb, " x ", inb,
               ", expected sizes >= 1");
  TESSEL_CHECK(nprow >= 1 && npcol >= 1 && static_cast<std::int64_t>(nprow) * npcol <= comm_size,
               GridError, "process grid ", nprow, " x ", npcol, " needs ", nprow * npcol,
               " ranks, the communicator has ", comm_size);
  if (grid_rank.empty()) {
    grid_rank.resize(static_cast<std::size_t>(nprow) * npcol);
    for (std::size_t i = 0; i < grid_rank.size(); ++i) grid_rank[i] = static_cast<int>(i);
  }
  return Layout(Partition1D::block_cyclic(m, mb, nprow, rsrc, imb),
                Partition1D::block_cyclic(n, nb, npcol, csrc, inb), std::move(grid_rank),
                comm_size);
}

Layout Layout::on_rank(std::int64_t m, std::int64_t n, int rank, int comm_size) {
  return Layout(Partition1D::blocks({m}), Partition1D::blocks({n}), {rank}, comm_size);
}

std::optional<std::pair<int, int>> Layout::groups_of(int rank) const {
  if (rank < 0 || rank >= comm_size_) return std::nullopt;
  auto g = of_rank_[static_cast<std::size_t>(rank)];
  if (g.first < 0) return std::nullopt;
  return g;
}

std::int64_t Layout::local_rows(int rank) const {
  auto g = groups_of(rank);
  return g ? rows_.local_extent(g->first) : 0;
}

std::int64_t Layout::local_cols(int rank) const {
  auto g = groups_of(rank);
  return g ? cols_.local_extent(g->second) : 0;
}

Layout Layout::sub(std::int64_t i0, std::int64_t j0, std::int64_t m, std::int64_t n) const {
  return Layout(rows_.sub(i0, m), cols_.sub(j0, n), owner_, comm_size_);
}

std::string Layout::describe() const {
  std::ostringstream os;
  os << rows() << " x " << cols() << " over " << comm_size_ << " ranks (" << rows_.groups()
     << " row groups x " << cols_.groups() << " column groups)";
  return os.str();
}

bool same_storage(const Layout& a, const Layout& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols() || a.comm_size() != b.comm_size()) return false;
  std::set<std::pair<int, int>> rg, cg;  // (group in a, group in b) that meet
  for (const auto& s : merge(a.row_partition(), b.row_partition())) {
    if (s.a_local != s.b_local) return false;
    rg.insert({s.a_group, s.b_group});
  }
  for (const auto& s : merge(a.col_partition(), b.col_partition())) {
    if (s.a_local != s.b_local) return false;
    cg.insert({s.a_group, s.b_group});
  }
  for (const auto& r : rg)
    for (const auto& c : cg)
      if (a.owner(r.first, c.first) != b.owner(r.second, c.second)) return false;
  return true;
}

}  // namespace tessel::layout

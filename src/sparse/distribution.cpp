// Distribution: block sizes, the PR x PC grid and the process row (column) of every block row
// (column). Pure data. The default is DBCSR's: a seeded random permutation of the blocks dealt
// greedily to the least loaded process row/column (in elements), the same on every rank.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>

#include "tessel/core/error.hpp"
#include "tessel/layout/grid_shape.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::sparse {
namespace {

void check_dist(const BlockSizes& b, const std::vector<int>& dist, int np, const char* what,
                const char* procs) {
  TESSEL_CHECK(static_cast<int>(dist.size()) == b.count(), InputError, "distribution: ", what,
               " has ", dist.size(), " entries but there are ", b.count(), " blocks");
  for (std::size_t i = 0; i < dist.size(); ++i)
    TESSEL_CHECK(dist[i] >= 0 && dist[i] < np, InputError, "distribution: ", what, "[", i,
                 "] = ", dist[i], ", expected a process ", procs, " in [0, ", np, ")");
}

// Fisher-Yates with mt19937_64 (whose output the standard fixes): identical on every platform.
std::vector<int> permutation(int n, std::uint64_t seed) {
  std::vector<int> p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  std::mt19937_64 rng(seed);
  for (int i = n - 1; i > 0; --i) {
    auto j = static_cast<int>(rng() % static_cast<std::uint64_t>(i + 1));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

// Blocks in permuted order, each to the group with the fewest elements so far (lowest index
// on ties).
std::vector<int> balanced(const BlockSizes& b, int groups, std::uint64_t seed) {
  std::vector<int> dist(static_cast<std::size_t>(b.count()), 0);
  std::vector<std::int64_t> load(static_cast<std::size_t>(groups), 0);
  for (int blk : permutation(b.count(), seed)) {
    auto g = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    dist[static_cast<std::size_t>(blk)] = static_cast<int>(g);
    load[g] += b.size(blk);
  }
  return dist;
}

std::vector<int> held_by(const std::vector<int>& dist, int g) {
  std::vector<int> out;
  for (std::size_t i = 0; i < dist.size(); ++i)
    if (dist[i] == g) out.push_back(static_cast<int>(i));
  return out;
}

}  // namespace

Distribution::Distribution(BlockSizes rows, BlockSizes cols, int pr, int pc,
                           std::vector<int> row_dist, std::vector<int> col_dist)
    : Distribution(SharedTag{}, std::move(rows), std::move(cols), pr, pc,
                   std::make_shared<const std::vector<int>>(std::move(row_dist)),
                   std::make_shared<const std::vector<int>>(std::move(col_dist))) {}

Distribution::Distribution(SharedTag, BlockSizes rows, BlockSizes cols, int pr, int pc,
                           Shared row_dist, Shared col_dist)
    : rows_(std::move(rows)),
      cols_(std::move(cols)),
      pr_(pr),
      pc_(pc),
      row_dist_(std::move(row_dist)),
      col_dist_(std::move(col_dist)) {
  TESSEL_CHECK(pr >= 1 && pc >= 1, GridError, "distribution: process grid ", pr, " x ", pc,
               ", expected PR >= 1 and PC >= 1");
  check_dist(rows_, *row_dist_, pr, "row_dist", "row");
  check_dist(cols_, *col_dist_, pc, "col_dist", "column");
}

Distribution Distribution::random(BlockSizes rows, BlockSizes cols, int pr, int pc,
                                  std::uint64_t seed) {
  TESSEL_CHECK(pr >= 1 && pc >= 1, GridError, "distribution: process grid ", pr, " x ", pc,
               ", expected PR >= 1 and PC >= 1");
  if (rows == cols) {  // through the multiply's images: row k and column k share an image
    const int v = std::lcm(pr, pc);
    auto img = balanced(rows, v, seed);
    std::vector<int> rd(img.size()), cd(img.size());
    for (std::size_t k = 0; k < img.size(); ++k) {
      rd[k] = img[k] / (v / pr);
      cd[k] = img[k] / (v / pc);
    }
    return Distribution(std::move(rows), std::move(cols), pr, pc, std::move(rd), std::move(cd));
  }
  auto rd = balanced(rows, pr, seed);
  auto cd = balanced(cols, pc, seed ^ 0x9e3779b97f4a7c15ULL);
  return Distribution(std::move(rows), std::move(cols), pr, pc, std::move(rd), std::move(cd));
}

std::pair<int, int> Distribution::default_grid(int nranks) {
  return layout::most_square_grid(nranks);
}

std::vector<int> Distribution::local_block_rows(int prow) const {
  return held_by(*row_dist_, prow);
}
std::vector<int> Distribution::local_block_cols(int pcol) const {
  return held_by(*col_dist_, pcol);
}

Distribution Distribution::transposed() const {
  return Distribution(SharedTag{}, cols_, rows_, pc_, pr_, col_dist_, row_dist_);
}

std::string Distribution::describe() const {
  std::ostringstream os;
  os << rows_.extent() << " x " << cols_.extent() << " elements, " << rows_.count() << " x "
     << cols_.count() << " blocks, " << pr_ << " x " << pc_ << " grid";
  return os.str();
}

bool Distribution::operator==(const Distribution& o) const {
  return rows_ == o.rows_ && cols_ == o.cols_ && pr_ == o.pr_ && pc_ == o.pc_ &&
         (row_dist_ == o.row_dist_ || *row_dist_ == *o.row_dist_) &&
         (col_dist_ == o.col_dist_ || *col_dist_ == *o.col_dist_);
}

}  // namespace tessel::sparse

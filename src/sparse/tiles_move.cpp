// The collective moves between a block structure and its tiles (tiling.hpp): every stored
// block (or cut-out sub-block) packed with its place, one packed exchange to the owners
// (ledger phase "sparse/tiles"), then the receiver's local block-CSR built in one pass.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tessel/comm/packed_exchange.hpp"
#include "tessel/comm/tags.hpp"
#include "tessel/core/error.hpp"
#include "tessel/sparse/tiling.hpp"

namespace tessel::sparse {
namespace {

using Matrix = BlockSparseMatrix<double>;

/// One block on the wire: its place in the destination block (brow, bcol) at element offset
/// (ri, ci), its size nr x nc, then nr * nc doubles (column-major).
struct Piece {
  std::int32_t brow, bcol, ri, ci, nr, nc;
};

void check_move(const Context& ctx, const Matrix& a, const BlockSizes& a_rows,
                const BlockSizes& a_cols, const Distribution& to, const BlockSizes& to_rows,
                const BlockSizes& to_cols, const char* op) {
  const auto& d = a.distribution();
  TESSEL_CHECK(d.row_blocks() == a_rows && d.col_blocks() == a_cols, DimensionMismatch, op, ": ",
               a.name(), " (", d.describe(), ") does not have the tiling's ",
               std::string(op) == "to_tiles" ? "fine blocks" : "tiles");
  TESSEL_CHECK(to.row_blocks() == to_rows && to.col_blocks() == to_cols, DimensionMismatch, op,
               ": the target distribution (", to.describe(), ") does not have the tiling's ",
               std::string(op) == "to_tiles" ? "tiles" : "fine blocks");
  TESSEL_CHECK(to.nranks() == ctx.size(), DimensionMismatch, op, ": the target distribution has ",
               to.nranks(), " ranks, the communicator ", ctx.size());
  ctx.agree([&] {
    TESSEL_CHECK(a.is_finalized(), Error, op, ": ", a.name(), " on rank ", a.rank(),
                 " has blocks put since the last finalize(); call finalize() first");
  });
}

/// Bytes of the pieces per destination, then the packed send buffer.
class Packer {
 public:
  explicit Packer(int nranks) : bytes_(static_cast<std::size_t>(nranks), 0) {}
  void count(int dest, const Piece& p) {
    bytes_[static_cast<std::size_t>(dest)] +=
        static_cast<std::int64_t>(sizeof(Piece)) + std::int64_t{8} * p.nr * p.nc;
  }
  void start() {
    at_ = comm::ExchangeCounts::offsets(bytes_);
    send_.resize(static_cast<std::size_t>(at_.back()));
  }
  /// Copies the nr x nc sub-block at x (leading dimension ld) after the header.
  void put(int dest, const Piece& p, const double* x, int ld) {
    auto& pos = at_[static_cast<std::size_t>(dest)];
    std::memcpy(send_.data() + pos, &p, sizeof p);
    pos += sizeof p;
    for (int j = 0; j < p.nc; ++j) {
      std::memcpy(send_.data() + pos, x + static_cast<std::size_t>(j) * ld,
                  static_cast<std::size_t>(p.nr) * 8);
      pos += std::int64_t{8} * p.nr;
    }
  }
  /// Collective. The received pieces; the send buffer is freed as soon as they arrived.
  std::vector<unsigned char> exchange(const Context& ctx) {
    PhaseScope ps(*ctx.comm().ledger(), "sparse/tiles");
    auto recv = comm::exchange_packed(ctx.comm(), bytes_, send_, comm::tag::kSparseTiles);
    std::vector<unsigned char>().swap(send_);
    return recv;
  }

 private:
  std::vector<std::int64_t> bytes_, at_;
  std::vector<unsigned char> send_;
};

/// The received pieces as the local CSR of `m`: pieces sorted by (brow, bcol); each distinct
/// block zero-filled once, then every piece copied into its place.
void assemble(Matrix& m, const std::vector<unsigned char>& recv) {
  struct Ref {
    Piece p;
    std::size_t data;
  };
  std::vector<Ref> refs;
  for (std::size_t pos = 0; pos < recv.size();) {
    Ref r;
    std::memcpy(&r.p, recv.data() + pos, sizeof r.p);
    r.data = pos + sizeof r.p;
    pos = r.data + static_cast<std::size_t>(r.p.nr) * r.p.nc * 8;
    TESSEL_ASSERT(pos <= recv.size());
    refs.push_back(r);
  }
  std::sort(refs.begin(), refs.end(), [](const Ref& x, const Ref& y) {
    return x.p.brow != y.p.brow ? x.p.brow < y.p.brow : x.p.bcol < y.p.bcol;
  });
  const auto& d = m.distribution();
  std::vector<std::int64_t> row_ptr{0}, offset;
  std::vector<int> col;
  std::vector<double> data;
  {  // the exact sizes first: a doubling vector held up to three times the result
    std::size_t blocks = 0, values = 0;
    for (std::size_t x = 0; x < refs.size(); ++x)
      if (x == 0 || refs[x].p.brow != refs[x - 1].p.brow || refs[x].p.bcol != refs[x - 1].p.bcol) {
        ++blocks;
        values += static_cast<std::size_t>(d.row_blocks().size(refs[x].p.brow)) *
                  static_cast<std::size_t>(d.col_blocks().size(refs[x].p.bcol));
      }
    col.reserve(blocks);
    offset.reserve(blocks);
    data.reserve(values);
  }
  std::size_t q = 0;
  for (int br : d.local_block_rows(m.prow())) {
    const int ld = d.row_blocks().size(br);
    for (; q < refs.size() && refs[q].p.brow == br; ++q) {
      const Piece& p = refs[q].p;
      TESSEL_ASSERT(d.owner(p.brow, p.bcol) == m.rank());
      if (col.empty() || offset.size() == static_cast<std::size_t>(row_ptr.back()) ||
          col.back() != p.bcol) {
        col.push_back(p.bcol);
        offset.push_back(static_cast<std::int64_t>(data.size()));
        data.resize(data.size() + static_cast<std::size_t>(ld) * d.col_blocks().size(p.bcol), 0.0);
      }
      double* dst = data.data() + offset.back() + static_cast<std::int64_t>(p.ci) * ld + p.ri;
      for (int j = 0; j < p.nc; ++j)
        std::memcpy(dst + static_cast<std::size_t>(j) * ld,
                    recv.data() + refs[q].data + static_cast<std::size_t>(j) * p.nr * 8,
                    static_cast<std::size_t>(p.nr) * 8);
    }
    row_ptr.push_back(static_cast<std::int64_t>(col.size()));
  }
  TESSEL_ASSERT(q == refs.size());
  m.assign_local(std::move(row_ptr), std::move(col), std::move(offset), std::move(data));
}

}  // namespace

Matrix to_tiles(const Context& ctx, const Matrix& a, const Tiling& rows, const Tiling& cols,
                Distribution to, std::string name) {
  check_move(ctx, a, rows.fine(), cols.fine(), to, rows.tiles(), cols.tiles(), "to_tiles");
  Packer pk(ctx.size());
  auto piece = [&](int br, int bc, int r, int c) {
    return Piece{rows.tile_of(br), cols.tile_of(bc), rows.at(br), cols.at(bc), r, c};
  };
  a.for_each_block([&](int br, int bc, const double*, int r, int c) {
    const Piece p = piece(br, bc, r, c);
    pk.count(to.owner(p.brow, p.bcol), p);
  });
  pk.start();
  a.for_each_block([&](int br, int bc, const double* x, int r, int c) {
    const Piece p = piece(br, bc, r, c);
    pk.put(to.owner(p.brow, p.bcol), p, x, r);
  });
  Matrix m(ctx, std::move(to), name.empty() ? a.name() + " (tiles)" : std::move(name));
  assemble(m, pk.exchange(ctx));
  return m;
}

namespace {
/// from_tiles' pieces of `a` packed for their owners under `to` (two passes over the same cut:
/// count, then pack; keep() is deterministic).
void pack_from_tiles(const Matrix& a, const Tiling& rows, const Tiling& cols,
                     const Distribution& to, double drop_below, Packer& pk) {
  auto cut = [&](bool pack) {
    a.for_each_block([&](int bt, int ct, const double* x, int ld, int) {
      for (int bc : cols.members(ct))
        for (int br : rows.members(bt)) {
          const int nr = rows.fine().size(br), nc = cols.fine().size(bc);
          const double* s = x + static_cast<std::size_t>(cols.at(bc)) * ld + rows.at(br);
          double ss = 0;
          for (int j = 0; j < nc; ++j)
            for (int i = 0; i < nr; ++i) {
              const double v = s[static_cast<std::size_t>(j) * ld + i];
              ss += v * v;
            }
          if (drop_below > 0 ? std::sqrt(ss) < drop_below : ss == 0) continue;
          const Piece p{br, bc, 0, 0, nr, nc};
          if (pack)
            pk.put(to.owner(br, bc), p, s, ld);
          else
            pk.count(to.owner(br, bc), p);
        }
    });
  };
  cut(false);
  pk.start();
  cut(true);
}

void check_from_tiles(const Context& ctx, const Matrix& a, const Tiling& rows, const Tiling& cols,
                      const Distribution& to, double drop_below) {
  check_move(ctx, a, rows.tiles(), cols.tiles(), to, rows.fine(), cols.fine(), "from_tiles");
  TESSEL_CHECK(drop_below >= 0 && std::isfinite(drop_below), InputError, "from_tiles: drop_below ",
               drop_below, ": expected >= 0");
}
}  // namespace

namespace {
/// Both from_tiles: `release` (may be null) is emptied once its pieces are packed.
Matrix from_tiles_impl(const Context& ctx, const Matrix& a, const Tiling& rows, const Tiling& cols,
                       Distribution to, double drop_below, std::string name, Matrix* release) {
  check_from_tiles(ctx, a, rows, cols, to, drop_below);
  Packer pk(ctx.size());
  pack_from_tiles(a, rows, cols, to, drop_below, pk);
  Matrix m(ctx, std::move(to), name.empty() ? a.name() : std::move(name));
  if (release) *release = Matrix();  // packed: its storage is not needed for the exchange
  assemble(m, pk.exchange(ctx));
  return m;
}
}  // namespace

Matrix from_tiles(const Context& ctx, const Matrix& a, const Tiling& rows, const Tiling& cols,
                  Distribution to, double drop_below, std::string name) {
  return from_tiles_impl(ctx, a, rows, cols, std::move(to), drop_below, std::move(name), nullptr);
}

Matrix from_tiles(const Context& ctx, Matrix&& a, const Tiling& rows, const Tiling& cols,
                  Distribution to, double drop_below, std::string name) {
  return from_tiles_impl(ctx, a, rows, cols, std::move(to), drop_below, std::move(name), &a);
}

}  // namespace tessel::sparse

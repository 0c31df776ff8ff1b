#include "spgemm_case.hpp"

#include <fmt/format.h>

#include <cmath>

#include "cli_util.hpp"
#include "tessel/sparse/generate.hpp"
#include "tessel/io/sparse.hpp"

namespace tessel::app {

using sparse::BlockSizes;
using sparse::BlockSparseMatrix;
using sparse::Distribution;

namespace {
/// The synthetic "band" system: `nmol` molecules of three atoms (block sizes 4, 1, 1, as water
/// in a minimal basis) on a ring; blocks between molecules at most 6 apart (periodic), values
/// hashed in [-1, 1) times exp(-distance).
struct Band {
  int nmol = 100;
  BlockSizes sizes() const {
    std::vector<int> s;
    for (int m = 0; m < nmol; ++m) s.insert(s.end(), {4, 1, 1});
    return BlockSizes(s);
  }
  void fill(BlockSparseMatrix<double>& a, std::uint64_t seed, int which) const {
    const auto& d = a.distribution();
    const BlockSizes& bs = d.row_blocks();
    std::vector<double> v;
    for (int r : d.local_block_rows(a.prow()))
      for (int c : d.local_block_cols(a.pcol())) {
        int dm = std::abs(r / 3 - c / 3);
        dm = std::min(dm, nmol - dm);
        if (dm > 6) continue;
        v.resize(static_cast<std::size_t>(bs.size(r)) * bs.size(c));
        double s = std::exp(-1.0 * dm);
        for (int j = 0; j < bs.size(c); ++j)
          for (int i = 0; i < bs.size(r); ++i)
            v[static_cast<std::size_t>(j) * bs.size(r) + i] =
                s * hashed(seed, which, bs.offset(r) + i, bs.offset(c) + j);
        a.put_block(r, c, v.data());
      }
    a.finalize();
  }
};

/// Block sizes of a DZVP-like basis for water: 13, 5, 5 per molecule (CP2K's DZVP-MOLOPT for O,
/// 2s 2p 1d, and H, 2s 1p).
BlockSizes dzvp_water_block_sizes(int n) {
  std::vector<int> s;
  s.reserve(3 * static_cast<std::size_t>(n));
  for (int m = 0; m < n; ++m) s.insert(s.end(), {13, 5, 5});
  return BlockSizes(std::move(s), "water DZVP block sizes");
}

/// Not collective. The blocks of `m` (finalized, on the same owners as `to`, whose block sizes
/// may differ) on `to`: block (r, c) keeps its place and its Frobenius norm; its values are m's
/// block tiled over the new shape and scaled back to that norm. The water-ss-dzvp case: the
/// SZV pattern with the block sizes of a DZVP basis (the multiply's bytes and flops per block),
/// not a DZVP overlap (the tiled matrix is singular).
BlockSparseMatrix<double> spread_blocks(const Context& ctx, const BlockSparseMatrix<double>& m,
                                        const Distribution& to, const std::string& name) {
  const sparse::LocalBlocks<double> l = m.local();
  const BlockSizes& from = m.distribution().row_blocks();
  const BlockSizes& rows = to.row_blocks();
  const BlockSizes& cols = to.col_blocks();
  std::vector<std::int64_t> offset;
  std::vector<double> data;
  for (std::size_t i = 0; i < l.brows->size(); ++i) {
    const int r = (*l.brows)[i], mr = rows.size(r), fr = from.size(r);
    for (std::int64_t k = (*l.row_ptr)[i]; k < (*l.row_ptr)[i + 1]; ++k) {
      const int c = (*l.col)[static_cast<std::size_t>(k)], mc = cols.size(c),
                fc = m.distribution().col_blocks().size(c);
      const double* src = l.data + (*l.offset)[static_cast<std::size_t>(k)];
      offset.push_back(static_cast<std::int64_t>(data.size()));
      double s2 = 0;
      for (int y = 0; y < mc; ++y)
        for (int x = 0; x < mr; ++x) {
          data.push_back(src[(y % fc) * fr + x % fr]);
          s2 += data.back() * data.back();
        }
      const double scale = s2 > 0 ? (*l.norm)[static_cast<std::size_t>(k)] / std::sqrt(s2) : 0.0;
      for (auto v = data.end() - static_cast<std::ptrdiff_t>(mr) * mc; v != data.end(); ++v)
        *v *= scale;
    }
  }
  BlockSparseMatrix<double> out(ctx, to, name);
  out.assign_local(*l.row_ptr, *l.col, std::move(offset), std::move(data));
  return out;
}

int parse_count(const std::string& spec) {
  auto colon = spec.find(':');
  try {
    TESSEL_CHECK(colon != std::string::npos, InputError, "");
    std::size_t u = 0;
    int n = std::stoi(spec.substr(colon + 1), &u);
    TESSEL_CHECK(u == spec.size() - colon - 1 && n >= 1, InputError, "");
    return n;
  } catch (const std::exception&) {
    throw InputError("--generate '" + spec +
                     "': expected water:N, water-ss:N, water-ss-dzvp:N, water-hs-dzvp:N or "
                     "band:N (N >= 1 molecules)");
  }
}
}  // namespace

void check_spgemm_inputs(const SpgemmInputs& in) {
  if (!in.a.empty() || !in.b.empty() || !in.blocks.empty()) {
    TESSEL_CHECK(!in.a.empty() && !in.b.empty() && !in.blocks.empty(), InputError,
                 "--a/--b/--blocks: all three are needed together (got --a '", in.a, "', --b '",
                 in.b, "', --blocks '", in.blocks, "')");
    return;
  }
  std::string kind = in.generate.substr(0, in.generate.find(':'));
  parse_count(in.generate);
  TESSEL_CHECK(kind == "band" || kind == "water" || kind == "water-ss" || kind == "water-ss-dzvp" ||
                   kind == "water-hs-dzvp",
               InputError, "--generate '", in.generate,
               "': expected water:N, water-ss:N, water-ss-dzvp:N, water-hs-dzvp:N or band:N");
}

SpgemmCase make_spgemm_case(Context& ctx, const SpgemmInputs& in, sparse::SpOp opa,
                            sparse::SpOp opb, const sparse::SpgemmPlan& plan) {
  check_spgemm_inputs(in);
  const bool files = !in.a.empty();
  const std::string kind = files ? "csr" : in.generate.substr(0, in.generate.find(':'));
  const int n = files ? 0 : parse_count(in.generate);
  Band band{n};
  const bool dzvp = kind == "water-ss-dzvp" || kind == "water-hs-dzvp";
  BlockSizes bs = files            ? io::read_block_sizes(in.blocks)
                  : kind == "band" ? band.sizes()
                  : dzvp           ? dzvp_water_block_sizes(n)
                                   : sparse::water_block_sizes(n);
  const int pr = plan.pr, pc = plan.pc;
  SpgemmCase c;
  c.dc = Distribution::random(bs, bs, pr, pc, in.seed);
  Distribution dk = Distribution::random(bs, bs, plan.v, plan.v, in.seed + 1);
  std::vector<int> acol(dk.row_dist().size()), brow(acol.size());
  for (std::size_t k = 0; k < acol.size(); ++k) {
    acol[k] = plan.a_home_col(dk.row_dist()[k]);
    brow[k] = plan.b_home_row(dk.row_dist()[k]);
  }
  Distribution da = opa == sparse::SpOp::N ? Distribution(bs, bs, pr, pc, c.dc.row_dist(), acol)
                                           : Distribution::random(bs, bs, pr, pc, in.seed + 2);
  Distribution db = opb == sparse::SpOp::N ? Distribution(bs, bs, pr, pc, brow, c.dc.col_dist())
                                           : Distribution::random(bs, bs, pr, pc, in.seed + 3);
  if (files) {  // CP2K CSR text, read straight onto the distributions
    io::ReadOptions ra, rb;
    ra.name = "--a " + in.a;
    rb.name = "--b " + in.b;
    c.A = io::read_cp2k_csr(ctx, in.a, da, ra);
    c.B = io::read_cp2k_csr(ctx, in.b, db, rb);
    c.description =
        fmt::format("{} x {} ({} blocks per side), A = {}, B = {} (CP2K CSR, block sizes {})",
                    bs.extent(), bs.extent(), bs.count(), in.a, in.b, in.blocks);
  } else if (kind == "band") {
    c.A = BlockSparseMatrix<double>(ctx, da, "A");
    c.B = BlockSparseMatrix<double>(ctx, db, "B");
    band.fill(c.A, in.seed, 1);
    band.fill(c.B, in.seed, 2);
    c.description = fmt::format(
        "{} x {} ({} blocks per side), {}: molecules of blocks 4,1,1 on a ring, "
        "neighbours within 6",
        bs.extent(), bs.extent(), bs.count(), in.generate);
  } else {  // the water box (sparse/generate.hpp): A = H (or S), B = S
    // Both generated in place (each rank computes only its blocks), not B redistributed
    // from A: on a random distribution that is an exchange between all pairs of ranks, whose
    // thousands of requests per rank made the setup of a 1,296-rank simulation take most of
    // its hour (SimGrid's request completion is linear in the requests waited on).
    sparse::WaterOptions wo;
    wo.seed = in.seed;
    const BlockSizes szv = sparse::water_block_sizes(n);
    const sparse::WaterGeometry geometry = sparse::water_geometry(n, wo);  // once for A and B
    auto on = [&](const Distribution& d) {
      return sparse::generate_water(ctx, geometry, wo,
                                    Distribution(szv, szv, pr, pc, d.row_dist(), d.col_dist()));
    };
    sparse::WaterSystem w = on(da);
    c.A = kind == "water"           ? std::move(w.H)
          : kind == "water-hs-dzvp" ? spread_blocks(ctx, w.H, da, "H")
          : dzvp                    ? spread_blocks(ctx, w.S, da, "S")
                                    : std::move(w.S);
    sparse::WaterSystem wb = on(db);  // B = S on its own owners
    c.B = dzvp ? spread_blocks(ctx, wb.S, db, "S") : std::move(wb.S);
    c.description =
        fmt::format("{} x {} ({} blocks per side), {}: {} water molecules (box {:.1f} A), {}",
                    bs.extent(), bs.extent(), bs.count(), in.generate, n, w.box_angstrom,
                    kind == "water" ? "A = H, B = S"
                    : dzvp ? fmt::format("A = {}, B = S with the SZV patterns spread over DZVP "
                                         "block sizes 13, 5, 5 (a model of the block structure, "
                                         "not DZVP matrices)",
                                         kind == "water-hs-dzvp" ? "H" : "S")
                           : "A = B = S");
  }
  return c;
}

}  // namespace tessel::app

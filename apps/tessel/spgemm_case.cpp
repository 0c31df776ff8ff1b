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
                     "': expected water:N, water-ss:N or band:N (N >= 1 molecules)");
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
  TESSEL_CHECK(kind == "band" || kind == "water" || kind == "water-ss", InputError, "--generate '",
               in.generate, "': expected water:N, water-ss:N or band:N");
}

SpgemmCase make_spgemm_case(Context& ctx, const SpgemmInputs& in, sparse::SpOp opa,
                            sparse::SpOp opb, const sparse::SpgemmPlan& plan) {
  check_spgemm_inputs(in);
  const bool files = !in.a.empty();
  const std::string kind = files ? "csr" : in.generate.substr(0, in.generate.find(':'));
  const int n = files ? 0 : parse_count(in.generate);
  Band band{n};
  BlockSizes bs = files            ? io::read_block_sizes(in.blocks)
                  : kind == "band" ? band.sizes()
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
    sparse::WaterOptions wo;
    wo.seed = in.seed;
    sparse::WaterSystem w = sparse::generate_water(ctx, n, wo, da);
    c.A = kind == "water" ? std::move(w.H) : std::move(w.S);
    c.B = sparse::redistribute(ctx, kind == "water" ? w.S : c.A, db);
    c.description =
        fmt::format("{} x {} ({} blocks per side), {}: {} water molecules (box {:.1f} A), {}",
                    bs.extent(), bs.extent(), bs.count(), in.generate, n, w.box_angstrom,
                    kind == "water" ? "A = H, B = S" : "A = B = S");
  }
  return c;
}

}  // namespace tessel::app

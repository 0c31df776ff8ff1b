// The water-box generator (docs/sparse_generator.md): geometry (pure, identical on every rank
// from the seed) -> cutoff from the Gaussian decay and eps -> each rank computes the blocks it
// owns (cell list, or all pairs with periodic images for boxes below three cutoffs) -> one
// local block-CSR per rank (assign_local). No dense matrix, no communication but the
// agreement on the arguments.
#include "tessel/sparse/generate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "block_norm.hpp"
#include "tessel/core/error.hpp"

namespace tessel::sparse {
namespace {

constexpr double kAngstrom = 1.8897261254578281;  // bohr per Angstrom
constexpr double kEv = 1.0 / 27.211386245988;     // Hartree per eV
constexpr double kPi = 3.14159265358979323846;
// Each orbital is a normalised contraction of two Gaussians (exponents in bohr^-2): a core with
// the exponent of an STO-1G fit (O 2sp zeta 2.25, H 1s zeta 1.24) plus a diffuse tail of weight
// kTail, so that the overlap matches CP2K's SZV-MOLOPT water in conditioning (lambda_min(S)
// ~0.2) and in its decay with distance (docs/sparse_generator.md).
constexpr double kAlphaOs = 0.55, kAlphaOp = 0.55, kAlphaH = 0.42, kAlphaTail = 0.08, kTail = 0.04;
// Extended Hueckel: valence ionisation energies and the Wolfsberg-Helmholz constant.
constexpr double kEOs = -32.3 * kEv, kEOp = -14.8 * kEv, kEH = -13.6 * kEv, kK = 1.75;
constexpr double kROH = 0.9572 * kAngstrom, kHOH = 104.52 * kPi / 180;
constexpr double kMinDist = 1.5 * kAngstrom;  // intermolecular atom-atom minimum

/// Uniform in [0, 1) from 53 random bits (the same on every platform).
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

using Vec = std::array<double, 3>;

double min_image(double d, double box) { return d - box * std::nearbyint(d / box); }

double dist2_min_image(const Vec& a, const Vec& b, double box) {
  double s = 0;
  for (int k = 0; k < 3; ++k) {
    const double d = min_image(a[k] - b[k], box);
    s += d * d;
  }
  return s;
}

/// One primitive Gaussian of a contraction: coefficient (weight times the primitive's and the
/// contraction's normalisation) and exponent.
struct Primitive {
  double c, alpha;
};
/// The normalisation of a primitive Gaussian of exponent a, angular part l.
double primitive_norm(double a, int l) {
  return std::pow(2 * a / kPi, 0.75) * (l < 0 ? 1 : 2 * std::sqrt(a));
}
/// One orbital: two primitives, angular part (-1 = s, 0/1/2 = p_x/p_y/p_z), on-site energy.
struct Orbital {
  Primitive prim[2];
  int l;
  double e;
};

/// Overlap of unnormalised primitive Gaussians a (at A) and b (at B) of angular parts la, lb,
/// R = A - B.
double overlap(double a, int la, double b, int lb, const double* r) {
  const double p = a + b, mu = a * b / p;
  const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
  double ang;
  if (la < 0 && lb < 0)
    ang = 1;
  else if (la < 0)
    ang = a * r[lb] / p;  // (P - B)_j
  else if (lb < 0)
    ang = -b * r[la] / p;  // (P - A)_i
  else
    ang = -a * b * r[la] * r[lb] / (p * p) + (la == lb ? 0.5 / p : 0);
  const double q = kPi / p;
  return ang * q * std::sqrt(q) * std::exp(-mu * r2);
}

/// Overlap of two orbitals (contractions; the coefficients carry all normalisation), R = A - B.
double overlap(const Orbital& a, const Orbital& b, const double* r) {
  double s = 0;
  for (const Primitive& x : a.prim)
    for (const Primitive& y : b.prim) s += x.c * y.c * overlap(x.alpha, a.l, y.alpha, b.l, r);
  return s;
}

/// The orbital of core exponent alpha plus the tail, normalised by the closed form
/// <phi|phi> = 1 + w^2 + 2 w t^(3/2) (s) or t^(5/2) (p), t = 2 sqrt(a b) / (a + b).
Orbital orbital(double alpha, int l, double e) {
  const double t = 2 * std::sqrt(alpha * kAlphaTail) / (alpha + kAlphaTail);
  const double norm = 1 / std::sqrt(1 + kTail * kTail + 2 * kTail * std::pow(t, l < 0 ? 1.5 : 2.5));
  Orbital o;
  o.prim[0] = {norm * primitive_norm(alpha, l), alpha};
  o.prim[1] = {norm * kTail * primitive_norm(kAlphaTail, l), kAlphaTail};
  o.l = l;
  o.e = e;
  return o;
}

/// The orbitals of an atom (O: 2s, 2p_x, 2p_y, 2p_z; H: 1s), built once (constants).
int orbitals_of(bool oxygen, Orbital* o) {
  static const Orbital h1s = orbital(kAlphaH, -1, kEH), o2s = orbital(kAlphaOs, -1, kEOs);
  static const Orbital o2p[3] = {orbital(kAlphaOp, 0, kEOp), orbital(kAlphaOp, 1, kEOp),
                                 orbital(kAlphaOp, 2, kEOp)};
  if (!oxygen) {
    o[0] = h1s;
    return 1;
  }
  o[0] = o2s;
  for (int k = 0; k < 3; ++k) o[1 + k] = o2p[k];
  return 4;
}

/// Adds the S block of one image (displacement r = A - B) to s (column-major, na x nb);
/// returns nothing. Used for both the blocks and the cutoff.
void add_image(const Orbital* oa, int na, const Orbital* ob, int nb, const double* r, double* s) {
  for (int j = 0; j < nb; ++j)
    for (int i = 0; i < na; ++i) s[j * na + i] += overlap(oa[i], ob[j], r);
}

}  // namespace

BlockSizes water_block_sizes(int n) {
  TESSEL_CHECK(n >= 1, InputError, "water: ", n, " molecules, expected at least 1");
  std::vector<int> s;
  s.reserve(3 * static_cast<std::size_t>(n));
  for (int m = 0; m < n; ++m) s.insert(s.end(), {4, 1, 1});
  return BlockSizes(std::move(s), "water block sizes");
}

WaterGeometry water_geometry(int n, const WaterOptions& opt) {
  TESSEL_CHECK(n >= 1, InputError, "water: ", n, " molecules, expected at least 1");
  TESSEL_CHECK(opt.density > 0 && std::isfinite(opt.density), InputError, "water: density ",
               opt.density, " molecules/A^3, expected > 0 (liquid water: 0.0334)");
  WaterGeometry g;
  g.box = std::cbrt(n / opt.density) * kAngstrom;
  int m = 1;
  while (static_cast<std::int64_t>(m) * m * m < n) ++m;
  const double a = g.box / m;
  std::mt19937_64 rng(opt.seed);
  // n distinct sites of the m^3 lattice: a seeded Fisher-Yates shuffle.
  std::vector<int> sites(static_cast<std::size_t>(m) * m * m);
  for (std::size_t k = 0; k < sites.size(); ++k) sites[k] = static_cast<int>(k);
  for (std::size_t k = sites.size() - 1; k > 0; --k) std::swap(sites[k], sites[rng() % (k + 1)]);
  sites.resize(static_cast<std::size_t>(n));
  std::vector<int> mol_at(static_cast<std::size_t>(m) * m * m, -1);  // molecule on each site

  g.pos.resize(3 * static_cast<std::size_t>(n));
  g.is_oxygen.assign(3 * static_cast<std::size_t>(n), 0);
  const double hx = kROH * std::sin(kHOH / 2), hz = kROH * std::cos(kHOH / 2);
  for (int mol = 0; mol < n; ++mol) {
    const int s = sites[static_cast<std::size_t>(mol)];
    const int ix = s % m, iy = (s / m) % m, iz = s / (m * m);
    const Vec site{(ix + 0.5) * a, (iy + 0.5) * a, (iz + 0.5) * a};
    Vec o;
    for (int k = 0; k < 3; ++k) o[k] = site[k] + (uniform(rng) - 0.5) * 0.2 * a;
    // Already placed molecules on neighbouring sites (distinct, periodic).
    std::vector<int> near;
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int q = ((ix + dx + m) % m) + m * (((iy + dy + m) % m) + m * ((iz + dz + m) % m));
          const int other = mol_at[static_cast<std::size_t>(q)];
          if (other >= 0 && std::find(near.begin(), near.end(), other) == near.end())
            near.push_back(other);
        }
    std::array<Vec, 3> best{};
    double best_d2 = -1;
    for (int tries = 0; tries < 200 && best_d2 < kMinDist * kMinDist; ++tries) {
      // A uniform random rotation (Shoemake's quaternion).
      const double u1 = uniform(rng), u2 = 2 * kPi * uniform(rng), u3 = 2 * kPi * uniform(rng);
      const double w = std::sqrt(1 - u1) * std::sin(u2), x = std::sqrt(1 - u1) * std::cos(u2);
      const double y = std::sqrt(u1) * std::sin(u3), z = std::sqrt(u1) * std::cos(u3);
      const double rot[3][3] = {
          {1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)},
          {2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)},
          {2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)}};
      std::array<Vec, 3> at{o, o, o};
      for (int k = 0; k < 3; ++k) {
        at[1][k] += rot[k][0] * hx + rot[k][2] * hz;
        at[2][k] += -rot[k][0] * hx + rot[k][2] * hz;
      }
      double d2 = 1e300;
      for (int other : near)
        for (int p = 0; p < 3; ++p)
          for (int q = 0; q < 3; ++q)
            d2 = std::min(d2,
                          dist2_min_image(at[static_cast<std::size_t>(p)],
                                          g.pos[3 * static_cast<std::size_t>(other) + q], g.box));
      if (d2 > best_d2) {
        best_d2 = d2;
        best = at;
      }
    }
    for (int p = 0; p < 3; ++p) {
      Vec v = best[static_cast<std::size_t>(p)];
      for (int k = 0; k < 3; ++k) v[k] -= g.box * std::floor(v[k] / g.box);
      g.pos[3 * static_cast<std::size_t>(mol) + p] = v;
    }
    g.is_oxygen[3 * static_cast<std::size_t>(mol)] = 1;
    mol_at[static_cast<std::size_t>(s)] = mol;
  }
  return g;
}

std::string water_xyz(const WaterGeometry& g) {
  std::string out = detail::concat(g.natoms(), "\nwater box: periodic cube of edge ",
                                   g.box / kAngstrom, " Angstrom (tessel generate)\n");
  char line[96];
  for (int a = 0; a < g.natoms(); ++a) {
    const Vec& p = g.pos[static_cast<std::size_t>(a)];
    const int n = std::snprintf(line, sizeof line, "%s %.6f %.6f %.6f\n",
                                g.is_oxygen[static_cast<std::size_t>(a)] ? "O" : "H",
                                p[0] / kAngstrom, p[1] / kAngstrom, p[2] / kAngstrom);
    out.append(line, static_cast<std::size_t>(n));
  }
  return out;
}

double water_cutoff(double eps) {
  TESSEL_CHECK(eps > 0 && std::isfinite(eps), InputError, "water: eps ", eps,
               ", expected > 0 (it sets the neighbour cutoff)");
  // The Frobenius norm of a block depends on the distance only (the p functions rotate
  // orthogonally); walk in from far away until some pair of atom kinds reaches eps.
  Orbital o[4], h[1];
  orbitals_of(true, o);
  orbitals_of(false, h);
  const Orbital* kinds[2] = {o, h};
  const int sizes[2] = {4, 1};
  for (double r = 100.0; r > 0; r -= 0.01) {
    const double d[3] = {r * 0.6, r * 0.48, r * 0.64};  // |d| = r, a generic direction
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) {
        double s[16] = {0};
        add_image(kinds[a], sizes[a], kinds[b], sizes[b], d, s);
        if (block_norm(s, sizes[a] * sizes[b]) >= eps) return r + 0.01;
      }
  }
  return 0.01;
}

double water_block(const WaterGeometry& g, int i, int j, double cutoff, double* s, double* h) {
  Orbital oi[4], oj[4];
  const int ni = orbitals_of(g.is_oxygen[static_cast<std::size_t>(i)] != 0, oi);
  const int nj = orbitals_of(g.is_oxygen[static_cast<std::size_t>(j)] != 0, oj);
  std::fill(s, s + ni * nj, 0.0);
  double d[3];
  for (int k = 0; k < 3; ++k)
    d[k] = min_image(g.pos[static_cast<std::size_t>(i)][k] - g.pos[static_cast<std::size_t>(j)][k],
                     g.box);
  const double c2 = cutoff * cutoff;
  // Images of atom j: only the minimum one can be within a cutoff below half the box.
  const int k = cutoff < g.box / 2 ? 0 : static_cast<int>(std::ceil(cutoff / g.box)) + 1;
  bool self = false;
  for (int nz = -k; nz <= k; ++nz)
    for (int ny = -k; ny <= k; ++ny)
      for (int nx = -k; nx <= k; ++nx) {
        const double r[3] = {d[0] + nx * g.box, d[1] + ny * g.box, d[2] + nz * g.box};
        if (r[0] * r[0] + r[1] * r[1] + r[2] * r[2] >= c2) continue;
        if (i == j && nx == 0 && ny == 0 && nz == 0) self = true;
        add_image(oi, ni, oj, nj, r, s);
      }
  // Extended Hueckel: H = K S (E_u + E_v) / 2 over every (orbital, image) pair except an
  // orbital with itself (same atom, same image), which gives its ionisation energy E_u.
  for (int v = 0; v < nj; ++v)
    for (int u = 0; u < ni; ++u) {
      const double x = s[v * ni + u] - (self && u == v ? 1.0 : 0.0);  // the self term S_uu = 1
      h[v * ni + u] = kK * x * (oi[u].e + oj[v].e) / 2 + (self && u == v ? oi[u].e : 0.0);
    }
  return block_norm(s, ni * nj);
}

WaterSystem generate_water(const Context& ctx, int n, const WaterOptions& opt,
                           const Distribution& dist) {
  WaterGeometry g;
  ctx.agree([&] {
    (void)water_block_sizes(n);  // n's own error first
    g = water_geometry(n, opt);
  });
  return generate_water(ctx, g, opt, dist);
}

WaterSystem generate_water(const Context& ctx, const WaterGeometry& g, const WaterOptions& opt,
                           const Distribution& dist) {
  BlockSizes blocks;
  double rc = 0;
  const int n = g.natoms() / 3;
  ctx.agree([&] {
    TESSEL_CHECK(g.natoms() > 0 && g.natoms() % 3 == 0, InputError, "generate_water: ", g.natoms(),
                 " atoms in the geometry (expected 3 per molecule)");
    blocks = water_block_sizes(n);
    rc = water_cutoff(opt.eps);
    TESSEL_CHECK(dist.row_blocks() == blocks && dist.col_blocks() == blocks, DimensionMismatch,
                 "generate_water: the distribution is ", dist.describe(), ", expected ",
                 blocks.count(), " x ", blocks.count(), " blocks of sizes 4, 1, 1 per molecule");
    TESSEL_CHECK(dist.nranks() == ctx.size(), GridError, "generate_water: the distribution is for ",
                 dist.nranks(), " ranks, the context has ", ctx.size());
  });
  WaterSystem w{BlockSparseMatrix<double>(ctx, dist, "H"),
                BlockSparseMatrix<double>(ctx, dist, "S"), blocks, 8 * static_cast<std::int64_t>(n),
                g.box / kAngstrom};
  const int pc = dist.pc(), prow = ctx.rank() / pc, pcol = ctx.rank() % pc;
  const int na = g.natoms();
  std::vector<char> my_col(static_cast<std::size_t>(na), 0);
  for (int j = 0; j < na; ++j) my_col[static_cast<std::size_t>(j)] = dist.col_owner(j) == pcol;

  // Candidate neighbours: a cell list when the box holds at least 3 cells of the cutoff
  // (then each pair has at most one image within it), all atoms otherwise.
  const int mc = static_cast<int>(std::floor(g.box / rc));
  std::vector<std::vector<int>> cells;
  auto cell_of = [&](const Vec& p, int k) {
    return std::min(mc - 1, static_cast<int>(p[static_cast<std::size_t>(k)] / g.box * mc));
  };
  if (mc >= 3) {
    cells.resize(static_cast<std::size_t>(mc) * mc * mc);
    for (int j = 0; j < na; ++j) {
      if (!my_col[static_cast<std::size_t>(j)]) continue;
      const Vec& p = g.pos[static_cast<std::size_t>(j)];
      cells[static_cast<std::size_t>(cell_of(p, 0) + mc * (cell_of(p, 1) + mc * cell_of(p, 2)))]
          .push_back(j);
    }
  }
  std::vector<std::int64_t> row_ptr{0}, offset;
  std::vector<int> col;
  std::vector<double> sdata, hdata;
  std::vector<int> cand;
  double s[16], h[16];
  for (int i : dist.local_block_rows(prow)) {
    cand.clear();
    if (mc >= 3) {
      const Vec& p = g.pos[static_cast<std::size_t>(i)];
      const int cx = cell_of(p, 0), cy = cell_of(p, 1), cz = cell_of(p, 2);
      for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            const int q =
                (cx + dx + mc) % mc + mc * ((cy + dy + mc) % mc + mc * ((cz + dz + mc) % mc));
            for (int j : cells[static_cast<std::size_t>(q)])
              if (dist2_min_image(p, g.pos[static_cast<std::size_t>(j)], g.box) < rc * rc)
                cand.push_back(j);
          }
      std::sort(cand.begin(), cand.end());
    } else {
      for (int j = 0; j < na; ++j)
        if (my_col[static_cast<std::size_t>(j)]) cand.push_back(j);
    }
    for (int j : cand) {
      if (water_block(g, i, j, rc, s, h) < opt.eps) continue;
      const int len = blocks.size(i) * blocks.size(j);
      col.push_back(j);
      offset.push_back(static_cast<std::int64_t>(sdata.size()));
      sdata.insert(sdata.end(), s, s + len);
      hdata.insert(hdata.end(), h, h + len);
    }
    row_ptr.push_back(static_cast<std::int64_t>(col.size()));
  }
  w.S.assign_local(row_ptr, col, offset, std::move(sdata));
  w.H.assign_local(std::move(row_ptr), std::move(col), std::move(offset), std::move(hdata));
  return w;
}

WaterSystem generate_water(const Context& ctx, int n, const WaterOptions& opt) {
  BlockSizes blocks;
  ctx.agree([&] { blocks = water_block_sizes(n); });
  const auto [pr, pc] = Distribution::default_grid(ctx.size());
  return generate_water(ctx, n, opt, Distribution::random(blocks, blocks, pr, pc));
}

}  // namespace tessel::sparse

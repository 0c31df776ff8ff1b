#pragma once
/// @file generate.hpp
/// A generator of large realistic block-sparse systems: H and S of a periodic box of liquid
/// water in a minimal basis (O 2s 2p, H 1s; 6 functions per molecule, blocks of 4, 1, 1 per
/// molecule as CP2K's SZV), with an overlap from normalised Gaussian orbitals and an
/// extended-Hueckel H. The model is described in docs/sparse_generator.md.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::sparse {

struct WaterOptions {
  std::uint64_t seed = 1;  ///< geometry (lattice choice, jitter, orientations)
  /// Blocks (i, j) with ||S_ij||_F < eps are stored in neither S nor H (absolute: S is
  /// dimensionless with unit diagonal). eps must be > 0 (it sets the neighbour cutoff).
  double eps = 1e-6;
  double density = 0.0334;  ///< molecules per cubic Angstrom (liquid water, 1 g/cm^3)
};

/// Pure data: the atoms of the box (bohr), in atom order O, H, H of molecule 0, 1, ...
struct WaterGeometry {
  double box = 0;                          ///< edge of the periodic cube in bohr
  std::vector<std::array<double, 3>> pos;  ///< positions in [0, box)^3
  std::vector<int> is_oxygen;              ///< 1 for O, 0 for H
  int natoms() const { return static_cast<int>(pos.size()); }
};

/// Pure. The geometry of `n` molecules: n lattice sites chosen (seeded) from the smallest
/// cubic lattice with >= n sites, oxygen jittered by up to 10% of the spacing, random
/// orientations redrawn until every intermolecular atom pair is at least 1.5 A apart
/// (at most 200 tries, then the best one). Throws InputError for n < 1 or density <= 0.
WaterGeometry water_geometry(int n, const WaterOptions& opt = {});
/// Pure. The geometry as .xyz text (Angstrom; the comment line gives the periodic box edge),
/// the format `tessel stencil --xyz` reads.
std::string water_xyz(const WaterGeometry& g);
/// Pure. Block sizes 4, 1, 1 per molecule.
BlockSizes water_block_sizes(int n);
/// Pure. The distance (bohr) beyond which every block of S (any atom pair) has
/// Frobenius norm < eps.
double water_cutoff(double eps);
/// Pure. Blocks S_ij and H_ij (column-major, rows of atom i x cols of atom j) summed over the
/// periodic images of atom j within water_cutoff(eps) of atom i (the minimum image only when
/// the cutoff is below half the box). Returns ||S_ij||_F.
double water_block(const WaterGeometry& g, int i, int j, double cutoff, double* s, double* h);

/// What generate_water returns.
struct WaterSystem {
  BlockSparseMatrix<double> H, S;
  BlockSizes blocks;
  std::int64_t nelectrons = 0;  ///< valence electrons, 8 per molecule
  double box_angstrom = 0;
};

/// Collective. H and S of `n` water molecules on `dist` (block sizes water_block_sizes(n)),
/// each rank computing only the blocks it owns (cell list of atoms within the cutoff, no
/// dense matrix, no communication but the agreement on the arguments).
WaterSystem generate_water(const Context& ctx, int n, const WaterOptions& opt,
                           const Distribution& dist);
/// Collective. As above on a geometry already computed (water_geometry(n, opt), the same on
/// every rank): for a caller generating several matrices of one box (e.g. on two
/// distributions) without recomputing it. Throws as above; InputError when g's atoms are not
/// 3 per molecule.
WaterSystem generate_water(const Context& ctx, const WaterGeometry& g, const WaterOptions& opt,
                           const Distribution& dist);
/// Collective. As above on Distribution::random over the default grid of ctx.size().
WaterSystem generate_water(const Context& ctx, int n, const WaterOptions& opt = {});

}  // namespace tessel::sparse

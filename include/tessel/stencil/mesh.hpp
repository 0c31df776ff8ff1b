#pragma once
/// @file mesh.hpp
/// The real-space mesh of seed 002 (Octopus): a regular grid of spacing h, clipped to a union
/// of spheres of radius r around the atoms of an .xyz file (Octopus's "minimum" box), or a
/// whole cubic box. Pure data: every rank builds the same Mesh from the same input, with no
/// communication, and the global numbering of the points is the lexicographic order of their
/// grid coordinates (x slowest, z fastest).
#include <array>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::stencil {

/// One atom of an .xyz file (coordinates in bohr).
struct Atom {
  std::string symbol;
  double x = 0, y = 0, z = 0;
};

/// Not collective (reads the file on the calling rank). Reads an .xyz file: a count line, a
/// comment line, then `count` lines "symbol x y z" (further columns ignored). Coordinates are
/// taken as given (tessel's unit is bohr; the command converts Angstrom). Throws InputError
/// naming the file and the line when it cannot be opened, the count is not a non-negative
/// integer, or a line is missing or malformed.
std::vector<Atom> read_xyz(const std::string& path);

/// Pure. The widest stencil radius a Mesh pads for (order 12: radius 6).
constexpr int kMaxStencilRadius = 6;

class Mesh {
 public:
  /// The most points a mesh holds (global indices are 32-bit in the halo plans and lookups).
  static constexpr std::int64_t kMaxPoints = INT32_MAX;
  /// Pure. A cube [-L/2, L/2]^3 with Dirichlet walls (the wave function is 0 on and beyond
  /// them): the interior points x = -L/2 + i h, i = 1 .. n-1, n = round(L/h). Throws InputError
  /// for h <= 0, L <= 0, non-finite values, L/h not within 1e-9 of an integer >= 2, or more
  /// than kMaxPoints points (L/h > 1291), the last before anything is allocated.
  static Mesh box(double length, double spacing);
  /// Pure. The points i h (i integer, per axis) within distance `radius` of some atom. Throws
  /// InputError for h <= 0, radius <= 0 (an empty mesh), non-finite values, for an
  /// empty mesh (no atoms, or a radius too small to contain a grid point), for a bounding box
  /// of more than 4e9 grid points, and for more than kMaxPoints points (counted before the
  /// points are stored when the bounding box has more than kMaxPoints grid points).
  static Mesh spheres(const std::vector<Atom>& atoms, double radius, double spacing);

  double spacing() const { return h_; }
  std::int64_t size() const { return static_cast<std::int64_t>(coords_.size()); }
  /// Grid coordinates (integers; position = origin + coords * h) of global point g.
  const std::array<int, 3>& coords(std::int64_t g) const {
    return coords_[static_cast<std::size_t>(g)];
  }
  /// Position of global point g.
  std::array<double, 3> position(std::int64_t g) const;
  /// Global index of the point at grid coordinates (i, j, k), or -1 when that point is not in
  /// the mesh (outside the box or the spheres; any coordinates are allowed). O(1) by a table
  /// over the bounding box, or O(log n) by search when that box is mostly empty.
  std::int64_t find(int i, int j, int k) const;
  /// One line: "box L = 10 bohr, h = 0.5: 6859 points" or "3 spheres r = ..".
  const std::string& describe() const { return desc_; }

 private:
  void index_points();
  double h_ = 0;
  std::array<double, 3> origin_{};  // position of grid coordinate (0, 0, 0)
  std::array<int, 3> lo_{}, n_{};   // bounding box: coordinates lo .. lo + n - 1
  std::vector<std::array<int, 3>> coords_;
  std::vector<std::int32_t> lookup_;  // box -> global index or -1; empty for a sparse mesh
  /// The dense lookup table is built when the bounding box has at most this many cells per
  /// point (plus kDenseLookupMinCells): a sphere fills pi/6 = 52% of its cube, so a compact
  /// molecule stays well inside; scattered spheres are searched instead (O(log n) per find).
  static constexpr double kDenseLookupCellsPerPoint = 8;
  static constexpr double kDenseLookupMinCells = 1 << 20;
  std::string desc_;
};

}  // namespace tessel::stencil

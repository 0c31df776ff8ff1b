#include "tessel/stencil/mesh.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <fstream>
#include <sstream>

#include "tessel/core/error.hpp"

namespace tessel::stencil {

std::vector<Atom> read_xyz(const std::string& path) {
  std::ifstream in(path);
  TESSEL_CHECK(in.good(), InputError, "cannot read .xyz file '", path, "'");
  std::string line;
  TESSEL_CHECK(static_cast<bool>(std::getline(in, line)), InputError, ".xyz file '", path,
               "' is empty: expected the number of atoms on line 1");
  long long count = -1;
  {
    std::istringstream ls(line);
    std::string rest;
    TESSEL_CHECK((ls >> count) && !(ls >> rest) && count >= 0, InputError, ".xyz file '", path,
                 "' line 1 '", line, "': expected the number of atoms (an integer >= 0)");
  }
  TESSEL_CHECK(static_cast<bool>(std::getline(in, line)), InputError, ".xyz file '", path,
               "': missing the comment line (line 2)");
  std::vector<Atom> atoms;
  for (long long a = 0; a < count; ++a) {
    const long long lineno = a + 3;
    TESSEL_CHECK(static_cast<bool>(std::getline(in, line)), InputError, ".xyz file '", path,
                 "' ends at line ", lineno - 1, ": expected ", count, " atoms");
    std::istringstream ls(line);
    Atom at;
    TESSEL_CHECK((ls >> at.symbol >> at.x >> at.y >> at.z) && std::isfinite(at.x) &&
                     std::isfinite(at.y) && std::isfinite(at.z),
                 InputError, ".xyz file '", path, "' line ", lineno, " '", line,
                 "': expected 'symbol x y z' with finite coordinates");
    atoms.push_back(at);
  }
  return atoms;
}

std::array<double, 3> Mesh::position(std::int64_t g) const {
  const auto& c = coords(g);
  return {origin_[0] + c[0] * h_, origin_[1] + c[1] * h_, origin_[2] + c[2] * h_};
}

std::int64_t Mesh::find(int i, int j, int k) const {
  const long long a = static_cast<long long>(i) - lo_[0], b = static_cast<long long>(j) - lo_[1],
                  c = static_cast<long long>(k) - lo_[2];
  if (a < 0 || b < 0 || c < 0 || a >= n_[0] || b >= n_[1] || c >= n_[2]) return -1;
  if (!lookup_.empty()) return lookup_[static_cast<std::size_t>((a * n_[1] + b) * n_[2] + c)];
  const std::array<int, 3> key{i, j, k};  // sparse mesh: coords_ is sorted, search it
  const auto it = std::lower_bound(coords_.begin(), coords_.end(), key);
  return it != coords_.end() && *it == key ? static_cast<std::int64_t>(it - coords_.begin()) : -1;
}

// coords_ is in lexicographic order already; builds the padded lookup box.
void Mesh::index_points() {
  TESSEL_CHECK(coords_.size() <= static_cast<std::size_t>(kMaxPoints), InputError, "mesh of ",
               coords_.size(), " points: at most ", kMaxPoints, " supported");
  std::array<int, 3> lo{INT_MAX, INT_MAX, INT_MAX}, hi{INT_MIN, INT_MIN, INT_MIN};
  for (const auto& c : coords_)
    for (int d = 0; d < 3; ++d) {
      lo[static_cast<std::size_t>(d)] =
          std::min(lo[static_cast<std::size_t>(d)], c[static_cast<std::size_t>(d)]);
      hi[static_cast<std::size_t>(d)] =
          std::max(hi[static_cast<std::size_t>(d)], c[static_cast<std::size_t>(d)]);
    }
  std::size_t cells = 1;
  for (std::size_t d = 0; d < 3; ++d) {
    lo_[d] = lo[d];
    n_[d] = hi[d] - lo[d] + 1;
    cells *= static_cast<std::size_t>(n_[d]);
  }
  lookup_.clear();
  // A dense table costs 4 bytes per cell of the bounding box: far-apart spheres would make it
  // many times the mesh (two atoms 1,000 bohr apart at h = 0.25: 16 GB for a few points), so
  // such meshes are searched instead (find: binary search in the sorted coordinates).
  if (static_cast<double>(cells) >
      kDenseLookupCellsPerPoint * static_cast<double>(coords_.size()) + kDenseLookupMinCells)
    return;
  lookup_.assign(cells, -1);
  for (std::size_t g = 0; g < coords_.size(); ++g) {
    const auto& c = coords_[g];
    const std::size_t a = static_cast<std::size_t>(c[0] - lo_[0]),
                      b = static_cast<std::size_t>(c[1] - lo_[1]),
                      k = static_cast<std::size_t>(c[2] - lo_[2]);
    lookup_[(a * static_cast<std::size_t>(n_[1]) + b) * static_cast<std::size_t>(n_[2]) + k] =
        static_cast<std::int32_t>(g);
  }
}

Mesh Mesh::box(double length, double spacing) {
  TESSEL_CHECK(std::isfinite(spacing) && spacing > 0, InputError, "spacing h = ", spacing,
               ": expected a finite value > 0");
  TESSEL_CHECK(std::isfinite(length) && length > 0, InputError, "box length L = ", length,
               ": expected a finite value > 0");
  const double q = length / spacing;
  const long long n = std::llround(q);
  TESSEL_CHECK(std::abs(q - static_cast<double>(n)) <= 1e-9 * std::max(1.0, q) && n >= 2,
               InputError, "box length L = ", length, " and spacing h = ", spacing, ": L/h = ", q,
               " must be an integer >= 2 (the walls lie on grid points)");
  // Before anything is allocated: (n - 1)^3 interior points (n <= 1291 fits a 32-bit index).
  const long long side = std::min(n, 1LL << 20) - 1, points = side * side * side;
  TESSEL_CHECK(points <= Mesh::kMaxPoints, InputError, "box L/h = ", n, ": ", side, "^3 = ", points,
               " interior points, more than the ", Mesh::kMaxPoints, " a mesh holds (L/h <= 1291)");
  Mesh m;
  m.h_ = spacing;
  m.origin_ = {-length / 2, -length / 2, -length / 2};
  m.coords_.reserve(static_cast<std::size_t>(points));
  for (int i = 1; i < n; ++i)
    for (int j = 1; j < n; ++j)
      for (int k = 1; k < n; ++k) m.coords_.push_back({i, j, k});
  m.index_points();
  m.desc_ = fmt::format("box L = {:g} bohr, h = {:g} bohr: {}^3 = {} points", length, spacing,
                        n - 1, m.coords_.size());
  return m;
}

Mesh Mesh::spheres(const std::vector<Atom>& atoms, double radius, double spacing) {
  TESSEL_CHECK(std::isfinite(spacing) && spacing > 0, InputError, "spacing h = ", spacing,
               ": expected a finite value > 0");
  TESSEL_CHECK(std::isfinite(radius) && radius >= 0, InputError, "radius r = ", radius,
               ": expected a finite value > 0");
  TESSEL_CHECK(radius > 0, InputError,
               "empty mesh: radius r = 0 (the mesh is the union of spheres of radius r)");
  TESSEL_CHECK(!atoms.empty(), InputError,
               "empty mesh: no atoms (the mesh is the union of spheres around them)");
  Mesh m;
  m.h_ = spacing;
  m.origin_ = {0, 0, 0};
  std::array<double, 3> lo{1e300, 1e300, 1e300}, hi{-1e300, -1e300, -1e300};
  for (const auto& a : atoms) {
    const double p[3] = {a.x, a.y, a.z};
    for (std::size_t d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], p[d] - radius);
      hi[d] = std::max(hi[d], p[d] + radius);
    }
  }
  std::array<long long, 3> ilo{}, ihi{};
  double cells = 1;
  for (std::size_t d = 0; d < 3; ++d) {
    ilo[d] = static_cast<long long>(std::floor(lo[d] / spacing));
    ihi[d] = static_cast<long long>(std::ceil(hi[d] / spacing));
    TESSEL_CHECK(
        std::abs(static_cast<double>(ilo[d])) < 1e6 && std::abs(static_cast<double>(ihi[d])) < 1e6,
        InputError, "mesh extent ", lo[d], " .. ", hi[d], " bohr at h = ", spacing,
        ": more than 10^6 points per axis");
    cells *= static_cast<double>(ihi[d] - ilo[d] + 1);
  }
  TESSEL_CHECK(cells <= 4e9, InputError, "mesh bounding box of ", cells,
               " grid points at h = ", spacing, ": too large (at most 4e9)");
  const double r2 = radius * radius * (1 + 1e-12);
  auto inside = [&](long long i, long long j, long long k) {
    const double x = static_cast<double>(i) * spacing, y = static_cast<double>(j) * spacing,
                 z = static_cast<double>(k) * spacing;
    for (const auto& a : atoms) {
      const double dx = x - a.x, dy = y - a.y, dz = z - a.z;
      if (dx * dx + dy * dy + dz * dz <= r2) return true;
    }
    return false;
  };
  auto for_each_point = [&](const auto& f) {
    for (long long i = ilo[0]; i <= ihi[0]; ++i)
      for (long long j = ilo[1]; j <= ihi[1]; ++j)
        for (long long k = ilo[2]; k <= ihi[2]; ++k)
          if (inside(i, j, k)) f(i, j, k);
  };
  if (cells > static_cast<double>(kMaxPoints)) {  // count before allocating
    std::int64_t count = 0;
    for_each_point([&](long long, long long, long long) { ++count; });
    TESSEL_CHECK(count <= kMaxPoints, InputError, "mesh of ", count, " points (", atoms.size(),
                 " spheres of r = ", radius, " at h = ", spacing, "): at most ", kMaxPoints,
                 " supported");
  }
  for_each_point([&](long long i, long long j, long long k) {
    m.coords_.push_back({static_cast<int>(i), static_cast<int>(j), static_cast<int>(k)});
  });
  TESSEL_CHECK(!m.coords_.empty(), InputError, "empty mesh: no grid point of spacing h = ", spacing,
               " lies within radius r = ", radius, " of any of the ", atoms.size(), " atoms");
  m.index_points();
  m.desc_ = fmt::format("{} spheres of r = {:g} bohr, h = {:g} bohr: {} points", atoms.size(),
                        radius, spacing, m.coords_.size());
  return m;
}

}  // namespace tessel::stencil

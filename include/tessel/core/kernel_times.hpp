#pragma once
/// @file kernel_times.hpp
/// Seconds per call of a small local GEMM, C(m x n) += A(m x k) B(k x n), by shape, measured once
/// on one machine and kept in a text file: what the simulated build charges for a block product
/// it does not run (ContextOptions::product_times, docs/simulation.md), so that a simulation's
/// clock does not depend on how busy the machine that runs it was. Pure data; the file is
/// written by `tessel spgemm --measure-product-times` (sparse::measure_product_times).
///
/// File format: one shape per line, `m n k seconds` (whitespace separated); `#` starts a
/// comment line; blank lines are ignored.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace tessel {

/// CPU seconds spent in the products of one shape and how many they were (a run's own
/// timing, summed; SpMultiplyOptions::time_products).
struct ShapeTime {
  double seconds = 0;
  std::int64_t products = 0;
};
using ShapeTimes = std::map<std::array<int, 3>, ShapeTime>;  // by (m, n, k)

/// Pure. Adds every shape's seconds and products of `from` into `to`.
inline void add_to(ShapeTimes& to, const ShapeTimes& from) {
  for (const auto& [shape, x] : from) {
    to[shape].seconds += x.seconds;
    to[shape].products += x.products;
  }
}

class KernelTimes {
 public:
  using Shape = std::array<int, 3>;  // m, n, k

  /// Pure. Sets the seconds per call of shape m x n x k; InputError for a size < 1 or seconds
  /// that are negative or not finite.
  void set(int m, int n, int k, double seconds);
  /// Pure. The seconds per call of the shape, or null when the table has no entry for it.
  const double* find(int m, int n, int k) const;
  std::size_t size() const { return t_.size(); }
  bool empty() const { return t_.empty(); }
  const std::map<Shape, double>& entries() const { return t_; }
  /// Where the table came from, for errors ("product times file PATH" after read(); else "").
  const std::string& source() const { return source_; }

  /// Pure. The file's text: `comment` (each line prefixed with "# ") then one line per shape.
  std::string format(const std::string& comment) const;
  /// Pure. Parses a file's text; `what` names it in the errors: InputError "<what> line L:
  /// '<line>': expected 'm n k seconds' ..." for a malformed line or a shape given twice, and
  /// for a text with no shape at all.
  static KernelTimes parse(const std::string& text, const std::string& what);
  /// Not collective. Reads and parses `path` (InputError naming it when it cannot be read).
  static KernelTimes read(const std::string& path);

 private:
  std::map<Shape, double> t_;
  std::string source_;
};

}  // namespace tessel

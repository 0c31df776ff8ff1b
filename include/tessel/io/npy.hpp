#pragma once
/// @file npy.hpp
/// NumPy `.npy` files of distributed matrices, read and written with collective MPI-IO.
///
/// Header functions are pure (no MPI). read_npy / write_npy are collective: every rank of the
/// Context calls them with the same arguments, and a failure on any rank throws the same
/// tessel::InputError (naming the file and what is wrong) on every rank.
///
/// Supported: dtypes '<f8' (double) and '<c16' (std::complex<double>), 2-D arrays (1-D arrays
/// of length n read as n x 1), fortran_order True (column-major) and False (C order, read
/// as the transpose in column-major terms: the file view selects each rank's elements, which
/// are then put in place in local memory), format versions 1.0, 2.0 and 3.0. Files are
/// written as version 1.0 (2.0 when the header does not fit), fortran_order True, with the
/// header bytes NumPy itself writes.
#include <complex>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/layout/layout.hpp"

namespace tessel::io {

/// The parsed header of a .npy file.
struct NpyHeader {
  int major = 1, minor = 0;         ///< format version
  std::string descr;                ///< dtype string, e.g. "<f8"
  bool fortran_order = false;       ///< true: column-major data
  std::vector<std::int64_t> shape;  ///< as written ((3, 4) -> {3, 4}; (5,) -> {5})
  std::int64_t data_offset = 0;     ///< bytes before the data: magic, version, length, dict

  /// Matrix rows/cols: shape for 2-D, n x 1 for 1-D (valid for ndim 1 and 2 only).
  std::int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  std::int64_t cols() const { return shape.size() >= 2 ? shape[1] : 1; }
};

/// The dtype descr of T in a little-endian .npy file: "<f8" for double, "<c16" for
/// std::complex<double>.
template <class T>
const char* npy_descr();
template <>
inline const char* npy_descr<double>() {
  return "<f8";
}
template <>
inline const char* npy_descr<std::complex<double>>() {
  return "<c16";
}
/// NumPy's name of that dtype: "float64", "complex128".
template <class T>
const char* npy_dtype_name();
template <>
inline const char* npy_dtype_name<double>() {
  return "float64";
}
template <>
inline const char* npy_dtype_name<std::complex<double>>() {
  return "complex128";
}

/// Pure. From the first bytes of a file (at least 12, or the whole file when shorter): the
/// total header length (= data offset). Throws InputError, naming `name`, when the magic
/// string or version is wrong or `prefix` is too short to tell.
std::int64_t npy_header_length(const std::string& prefix, const std::string& name = "npy data");

/// Pure. Parses a header from `bytes_or_prefix` (the file's first bytes: at least the whole
/// header, more is ignored). Checks the magic string, the version (1.0, 2.0, 3.0) and the
/// dictionary ('descr' a string, 'fortran_order' True/False, 'shape' a tuple of
/// non-negative integers, no other keys). Does not check the dtype or the number of
/// dimensions (see check_npy_header). Throws InputError naming `name` on malformed input.
NpyHeader parse_npy_header(const std::string& bytes_or_prefix,
                           const std::string& name = "npy data");

/// Pure. The header NumPy's numpy.save writes (format 1.0; 2.0 if longer than 65535 bytes)
/// for a rows x cols array: "{'descr': ..., 'fortran_order': ..., 'shape': (rows, cols), }",
/// padded with spaces to a multiple of 64 bytes and ended with '\n'.
std::string make_npy_header(const std::string& descr, bool fortran_order, std::int64_t rows,
                            std::int64_t cols);

/// Pure. Throws InputError naming `name` unless `h` describes a 1-D or 2-D little-endian
/// array of dtype `expected_descr` (NumPy name `expected_name`) and `file_size` bytes hold
/// the header and all of its data; e.g. "A.npy: dtype '<i4', expected '<f8' (float64)",
/// "A.npy is truncated: 100 bytes, expected 224 (128-byte header + 12 elements of 8 bytes)".
void check_npy_header(const NpyHeader& h, const std::string& expected_descr,
                      const std::string& expected_name, std::int64_t file_size,
                      const std::string& name);

/// Pure. Throws InputError "file A.npy is 3 x 4, expected 3 x 5" unless the shapes agree.
void expect_shape(const std::string& path, std::int64_t rows, std::int64_t cols,
                  std::int64_t found_rows, std::int64_t found_cols);

/// Pure. Decodes the whole contents of a .npy file held in memory (`bytes`: header and data)
/// of dtype npy_descr<T>() into a column-major rows x cols array (leading dimension rows;
/// C-order files are transposed into place). Checks exactly what read_npy checks (header,
/// dimensions, byte order, dtype, truncation); bytes after the data are ignored. Stores the
/// header in `*header` when not null. Throws InputError naming `name`. The serial, in-memory
/// counterpart of read_npy (and the entry point of the fuzz target tests/fuzz/fuzz_npy_data).
template <class T>
std::vector<T> decode_npy(const std::string& bytes, const std::string& name = "npy data",
                          NpyHeader* header = nullptr);

/// Collective. Rank 0 reads the header and the file size and broadcasts them; every rank
/// parses the same bytes. Checks what parse_npy_header checks, the number of dimensions
/// (1 or 2), the byte order and that the file holds all of its data (the dtype must have a
/// known item size); not the dtype itself. Throws InputError on every rank.
NpyHeader read_npy_header(const Context& ctx, const std::string& path);

/// Collective. Reads the matrix in `path` (dtype npy_descr<T>()) into the layout
/// make_layout(rows, cols) (called on every rank; its comm size must be ctx.size()), with
/// one collective MPI-IO read. Throws InputError on every rank for a missing or unreadable
/// file, bad magic, truncation, wrong dtype, more than 2 dimensions or big-endian data
/// (and whatever make_layout throws, also on every rank).
template <class T>
dense::DistMatrix<T> read_npy(
    const Context& ctx, const std::string& path,
    const std::function<layout::Layout(std::int64_t rows, std::int64_t cols)>& make_layout);

/// Collective. Writes `x` to `path` as a fortran_order (column-major) .npy file of dtype
/// npy_descr<T>(): the data go with one collective MPI-IO write to the temporary file
/// `path + ".tmp.<pid>.<n>"` beside it, which rank 0 renames to `path` only when every rank
/// succeeded. On any failure the temporary file is removed, `path` is left as it was, and
/// every rank throws InputError naming `path`.
template <class T>
void write_npy(const Context& ctx, const std::string& path, const dense::DistMatrix<T>& x);

extern template dense::DistMatrix<double> read_npy<double>(
    const Context&, const std::string&,
    const std::function<layout::Layout(std::int64_t, std::int64_t)>&);
extern template dense::DistMatrix<std::complex<double>> read_npy<std::complex<double>>(
    const Context&, const std::string&,
    const std::function<layout::Layout(std::int64_t, std::int64_t)>&);
extern template std::vector<double> decode_npy<double>(const std::string&, const std::string&,
                                                       NpyHeader*);
extern template std::vector<std::complex<double>> decode_npy<std::complex<double>>(
    const std::string&, const std::string&, NpyHeader*);
extern template void write_npy<double>(const Context&, const std::string&,
                                       const dense::DistMatrix<double>&);
extern template void write_npy<std::complex<double>>(
    const Context&, const std::string&, const dense::DistMatrix<std::complex<double>>&);

}  // namespace tessel::io

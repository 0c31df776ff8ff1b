// .npy headers (pure) and collective MPI-IO read/write of distributed matrices.
#include "tessel/io/npy.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <sstream>
#include <sys/stat.h>

#include "tessel/comm/file.hpp"
#include "tessel/core/error.hpp"
#include "npy_share.hpp"

namespace tessel::io {

namespace {

using detail::concat;

const char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
constexpr std::int64_t kAlign = 64;         // NumPy's ARRAY_ALIGN
constexpr std::int64_t kGrowthDigits = 21;  // NumPy's GROWTH_AXIS_MAX_DIGITS

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ',';
  os << ')';
  return os.str();
}

/// "'<f8'" for a plain dtype string, the raw text for anything else (structured dtypes).
std::string descr_text(const std::string& d) {
  if (d.empty() || d.find_first_of("[(',\"") != std::string::npos) return d;
  return "'" + d + "'";
}

/// Item size of a plain dtype string ("<f8" -> 8, "<c16" -> 16, "<U3" -> 12), -1 if unknown.
std::int64_t descr_itemsize(const std::string& d) {
  if (d.size() < 3 || std::string("<>|=").find(d[0]) == std::string::npos) return -1;
  const char kind = d[1];
  std::int64_t n = 0;
  std::size_t i = 2;
  for (; i < d.size() && d[i] >= '0' && d[i] <= '9'; ++i) {
    if (n > (1 << 20)) return -1;
    n = n * 10 + (d[i] - '0');
  }
  if (i == 2 || n <= 0) return -1;
  if (i != d.size() && !((kind == 'M' || kind == 'm') && d[i] == '[')) return -1;
  return kind == 'U' ? 4 * n : n;
}

// ---- a small reader of the Python literal NumPy writes as the header dictionary
struct Value {
  enum Kind { Str, Bool, Ints, Other } kind = Other;
  std::string str;                 // Str: the string; Other: the raw source text
  bool b = false;                  // Bool
  std::vector<std::int64_t> ints;  // Ints: the elements of a tuple/list of integers
};

class Literal {
 public:
  Literal(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool at(char c) {
    skip_ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!at(c)) fail(concat("expected '", c, "'"));
    ++i_;
  }
  bool at_end() {
    skip_ws();
    return i_ >= s_.size();
  }
  [[noreturn]] void fail(const std::string& what) const {
    std::string near = s_.substr(i_ < s_.size() ? i_ : s_.size(), 20);
    throw InputError(concat(name_, ": malformed .npy header dictionary at character ", i_, ": ",
                            what, i_ < s_.size() ? concat(" near \"", near, "\"") : " at its end",
                            " (header: ", s_.substr(0, s_.find_last_not_of(" \n") + 1), ")"));
  }

  std::string string_lit() {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted string");
    const char q = s_[i_++];
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) ++i_;
      out += s_[i_++];
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }

  Value value(int depth = 0) {
    if (depth > 16) fail("nested too deeply");
    skip_ws();
    if (i_ >= s_.size()) fail("expected a value");
    const std::size_t start = i_;
    Value v;
    const char c = s_[i_];
    if (c == '\'' || c == '"') {
      v.kind = Value::Str;
      v.str = string_lit();
      return v;
    }
    if (c == '(' || c == '[') {
      const char close = c == '(' ? ')' : ']';
      ++i_;
      bool all_ints = true;
      while (!at(close)) {
        Value e = value(depth + 1);
        if (e.kind == Value::Ints && e.ints.size() == 1 && e.str == "int")
          v.ints.push_back(e.ints[0]);
        else
          all_ints = false;
        if (at(','))
          ++i_;
        else if (!at(close))
          fail(concat("expected ',' or '", close, "'"));
      }
      ++i_;
      v.kind = all_ints ? Value::Ints : Value::Other;
      if (!all_ints) {
        v.ints.clear();
        v.str = s_.substr(start, i_ - start);
      }
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {  // an integer (Python 2 may add 'L')
      bool neg = c == '-';
      if (neg) ++i_;
      if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') fail("expected a digit");
      std::int64_t n = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        const int d = s_[i_++] - '0';
        if (n > (std::numeric_limits<std::int64_t>::max() - d) / 10) fail("integer too large");
        n = n * 10 + d;
      }
      if (i_ < s_.size() && (s_[i_] == 'L' || s_[i_] == 'l')) ++i_;
      v.kind = Value::Ints;
      v.ints = {neg ? -n : n};
      v.str = "int";  // marks a scalar integer (vs. a 1-tuple)
      return v;
    }
    // a name: True, False, None, ...
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      ++i_;
    const std::string word = s_.substr(start, i_ - start);
    if (word == "True" || word == "False") {
      v.kind = Value::Bool;
      v.b = word == "True";
      return v;
    }
    if (word.empty()) fail("unexpected character");
    v.kind = Value::Other;
    v.str = word;
    return v;
  }

 private:
  const std::string& s_;
  const std::string& name_;
  std::size_t i_ = 0;
};

std::uint32_t le(const std::string& b, std::size_t at, int bytes) {
  std::uint32_t v = 0;
  for (int k = bytes - 1; k >= 0; --k)
    v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(k)]);
  return v;
}

/// What rank 0 read: the header bytes and the file size.
struct RawHeader {
  std::string bytes;
  std::int64_t file_size = 0;
};

/// Collective: rank 0 reads the header bytes and size of `path`; every rank gets them.
RawHeader fetch_header(const Context& ctx, const std::string& path) {
  RawHeader raw;
  ctx.agree([&] {
    if (ctx.rank() != 0) return;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      throw InputError(concat("cannot read ", path, ": ", std::strerror(errno)));
    if (S_ISDIR(st.st_mode)) throw InputError(concat("cannot read ", path, ": it is a directory"));
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw InputError(concat("cannot read ", path, ": ", std::strerror(errno)));
    struct Closer {
      std::FILE* f;
      ~Closer() { std::fclose(f); }
    } closer{f};
    std::string prefix(12, '\0');
    prefix.resize(std::fread(prefix.data(), 1, prefix.size(), f));
    if (std::ferror(f)) throw InputError(concat("cannot read ", path, ": read error"));
    const std::int64_t len = npy_header_length(prefix, path);
    if (std::fseek(f, 0, SEEK_END) != 0)
      throw InputError(concat("cannot read ", path, ": cannot seek"));
    raw.file_size = static_cast<std::int64_t>(std::ftell(f));
    if (raw.file_size < len)
      throw InputError(concat(path, " is truncated: ", raw.file_size,
                              " bytes, but its header alone needs ", len));
    TESSEL_CHECK(len <= std::numeric_limits<int>::max(), InputError, path, ": header of ", len,
                 " bytes is too long");
    raw.bytes.assign(static_cast<std::size_t>(len), '\0');
    std::rewind(f);
    if (std::fread(raw.bytes.data(), 1, raw.bytes.size(), f) != raw.bytes.size())
      throw InputError(concat("cannot read ", path, ": short read of the header"));
  });
  // One broadcast for the usual header (NumPy's are 128 bytes): the two sizes and up to
  // kInline header bytes; a second one only for the rest of a longer header.
  constexpr std::size_t kInline = 4096;
  std::vector<char> msg(2 * sizeof(std::int64_t) + kInline);
  const std::int64_t sizes[2] = {raw.file_size, static_cast<std::int64_t>(raw.bytes.size())};
  std::memcpy(msg.data(), sizes, sizeof sizes);
  std::memcpy(msg.data() + sizeof sizes, raw.bytes.data(), std::min(raw.bytes.size(), kInline));
  ctx.comm().bcast(msg.data(), static_cast<int>(msg.size()), 0);
  std::int64_t got[2];
  std::memcpy(got, msg.data(), sizeof got);
  raw.file_size = got[0];
  const std::size_t len = static_cast<std::size_t>(got[1]);
  raw.bytes.resize(len);
  std::memcpy(raw.bytes.data(), msg.data() + sizeof got, std::min(len, kInline));
  if (len > kInline)
    ctx.comm().bcast(raw.bytes.data() + kInline, static_cast<int>(len - kInline), 0);
  return raw;
}

void check_ndim_and_order(const NpyHeader& h, const std::string& name) {
  if (h.shape.empty() || h.shape.size() > 2)
    throw InputError(concat(name, " holds a ", h.shape.size(), "-D array of shape ",
                            shape_text(h.shape), ", expected a 2-D matrix (or a 1-D vector)"));
  if (!h.descr.empty() && h.descr[0] == '>')
    throw InputError(concat(name, " is big-endian (dtype ", descr_text(h.descr),
                            "); only little-endian .npy files are supported"));
}

void check_size(const NpyHeader& h, std::int64_t itemsize, std::int64_t file_size,
                const std::string& name) {
  const std::int64_t r = h.rows(), c = h.cols();
  const std::int64_t maxv = std::numeric_limits<std::int64_t>::max();
  if ((c != 0 && r > maxv / c) || (r * c != 0 && itemsize > (maxv - h.data_offset) / (r * c)))
    throw InputError(concat(name, ": shape ", shape_text(h.shape), " is too large"));
  const std::int64_t need = h.data_offset + r * c * itemsize;
  if (file_size < need)
    throw InputError(concat(name, " is truncated: ", file_size, " bytes, expected ", need, " (",
                            h.data_offset, "-byte header + ", r, " x ", c, " elements of ",
                            itemsize, " bytes)"));
}

}  // namespace

comm::MatrixShare share_of(const layout::Layout& lay, int rank, std::int64_t ld, bool row_major) {
  comm::MatrixShare s;
  s.rows = lay.rows();
  s.cols = lay.cols();
  s.ld = ld;
  s.row_major_file = row_major;
  auto g = lay.groups_of(rank);
  if (!g) return s;
  for (const auto& v : lay.row_partition().intervals())
    if (v.group == g->first) s.row_runs.push_back({v.begin, v.len, v.local});
  for (const auto& v : lay.col_partition().intervals())
    if (v.group == g->second) s.col_runs.push_back({v.begin, v.len, v.local});
  return s;
}

// ------------------------------------------------------------------ pure header functions
std::int64_t npy_header_length(const std::string& p, const std::string& name) {
  const std::size_t m = std::min(p.size(), kMagicLen);
  if (p.compare(0, m, kMagic, m) != 0 || p.size() < kMagicLen)
    throw InputError(concat(name,
                            " is not a .npy file (it does not start with the magic "
                            "string \\x93NUMPY)"));
  if (p.size() < 8)
    throw InputError(concat(name, " is truncated: ", p.size(), " bytes, no .npy version"));
  const int major = static_cast<unsigned char>(p[6]), minor = static_cast<unsigned char>(p[7]);
  if (!((major == 1 || major == 2 || major == 3) && minor == 0))
    throw InputError(concat(name, ": unsupported .npy format version ", major, ".", minor,
                            ", expected 1.0, 2.0 or 3.0"));
  const std::size_t pre = major == 1 ? 10 : 12;
  if (p.size() < pre)
    throw InputError(
        concat(name, " is truncated: ", p.size(), " bytes, the .npy preamble needs ", pre));
  return static_cast<std::int64_t>(pre) + le(p, 8, major == 1 ? 2 : 4);
}

NpyHeader parse_npy_header(const std::string& bytes, const std::string& name) {
  const std::int64_t total = npy_header_length(bytes, name);
  if (static_cast<std::int64_t>(bytes.size()) < total)
    throw InputError(
        concat(name, " is truncated: ", bytes.size(), " bytes, but its header needs ", total));
  NpyHeader h;
  h.major = static_cast<unsigned char>(bytes[6]);
  h.minor = static_cast<unsigned char>(bytes[7]);
  h.data_offset = total;
  const std::size_t pre = h.major == 1 ? 10 : 12;
  const std::string dict = bytes.substr(pre, static_cast<std::size_t>(total) - pre);

  Literal lit(dict, name);
  lit.expect('{');
  bool have_descr = false, have_order = false, have_shape = false;
  while (!lit.at('}')) {
    const std::string key = lit.string_lit();
    lit.expect(':');
    Value v = lit.value();
    if (key == "descr" && !have_descr) {
      have_descr = true;
      h.descr = v.str;
      if (v.kind != Value::Str && v.kind != Value::Other) lit.fail("'descr' is not a dtype");
    } else if (key == "fortran_order" && !have_order) {
      have_order = true;
      if (v.kind != Value::Bool) lit.fail("'fortran_order' is not True or False");
      h.fortran_order = v.b;
    } else if (key == "shape" && !have_shape) {
      have_shape = true;
      if (v.kind != Value::Ints || v.str == "int") lit.fail("'shape' is not a tuple of integers");
      for (auto n : v.ints)
        if (n < 0) lit.fail(concat("'shape' has a negative extent ", n));
      h.shape = v.ints;
    } else if (key == "descr" || key == "fortran_order" || key == "shape") {
      lit.fail(concat("key '", key, "' appears twice"));
    } else {
      lit.fail(concat("unexpected key '", key, "'"));
    }
    if (lit.at(','))
      lit.expect(',');
    else if (!lit.at('}'))
      lit.fail("expected ',' or '}'");
  }
  lit.expect('}');
  if (!lit.at_end()) lit.fail("unexpected text after the dictionary");
  if (!have_descr || !have_order || !have_shape)
    lit.fail(concat("missing key '",
                    !have_descr   ? "descr"
                    : !have_order ? "fortran_order"
                                  : "shape",
                    "'"));
  return h;
}

std::string make_npy_header(const std::string& descr, bool fortran_order, std::int64_t rows,
                            std::int64_t cols) {
  TESSEL_CHECK(rows >= 0 && cols >= 0, DimensionMismatch, "npy shape (", rows, ", ", cols,
               "), expected non-negative extents");
  TESSEL_CHECK(!descr.empty() && descr.find_first_of("'\\\n") == std::string::npos, InputError,
               "npy descr \"", descr, "\" is not a plain dtype string");
  std::string d =
      concat("{'descr': '", descr, "', 'fortran_order': ", fortran_order ? "True" : "False",
             ", 'shape': (", rows, ", ", cols, "), }");
  // Like numpy.save: room to grow the growth axis in place (the last for Fortran order).
  const std::string grow = std::to_string(fortran_order ? cols : rows);
  d.append(static_cast<std::size_t>(kGrowthDigits - static_cast<std::int64_t>(grow.size())), ' ');
  const std::int64_t hlen = static_cast<std::int64_t>(d.size()) + 1;  // + '\n'
  int major = 1;
  std::int64_t pre = 10;
  std::int64_t pad = kAlign - (pre + hlen) % kAlign;
  if (hlen + pad > 65535) {
    major = 2;
    pre = 12;
    pad = kAlign - (pre + hlen) % kAlign;
  }
  const std::int64_t len = hlen + pad;
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  for (int k = 0; k < (major == 1 ? 2 : 4); ++k) out += static_cast<char>((len >> (8 * k)) & 0xff);
  out += d;
  out.append(static_cast<std::size_t>(pad), ' ');
  out += '\n';
  return out;
}

void check_npy_header(const NpyHeader& h, const std::string& expected_descr,
                      const std::string& expected_name, std::int64_t file_size,
                      const std::string& name) {
  check_ndim_and_order(h, name);
  if (h.descr != expected_descr)
    throw InputError(concat(name, ": dtype ", descr_text(h.descr), ", expected '", expected_descr,
                            "' (", expected_name, ")"));
  check_size(h, descr_itemsize(expected_descr), file_size, name);
}

void expect_shape(const std::string& path, std::int64_t rows, std::int64_t cols,
                  std::int64_t found_rows, std::int64_t found_cols) {
  TESSEL_CHECK(rows == found_rows && cols == found_cols, InputError, "file ", path, " is ",
               found_rows, " x ", found_cols, ", expected ", rows, " x ", cols);
}

template <class T>
std::vector<T> decode_npy(const std::string& bytes, const std::string& name, NpyHeader* header) {
  static_assert(sizeof(T) == 8 || sizeof(T) == 16, "npy: unexpected item size");
  const NpyHeader h = parse_npy_header(bytes, name);
  check_npy_header(h, npy_descr<T>(), npy_dtype_name<T>(), static_cast<std::int64_t>(bytes.size()),
                   name);
  if (header) *header = h;
  // check_npy_header guarantees data_offset + rows * cols * sizeof(T) <= bytes.size().
  const std::size_t rows = static_cast<std::size_t>(h.rows()),
                    cols = static_cast<std::size_t>(h.cols());
  std::vector<T> out(rows * cols);
  const char* src = bytes.data() + h.data_offset;
  if (h.fortran_order || h.shape.size() == 1) {
    if (!out.empty()) std::memcpy(out.data(), src, out.size() * sizeof(T));
  } else {  // C order: element (i, j) at i * cols + j
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j)
        std::memcpy(&out[j * rows + i], src + (i * cols + j) * sizeof(T), sizeof(T));
  }
  return out;
}

// ------------------------------------------------------------------ collective I/O
NpyHeader read_npy_header(const Context& ctx, const std::string& path) {
  const RawHeader raw = fetch_header(ctx, path);
  // Every rank parses the same bytes, so every rank throws the same error.
  NpyHeader h = parse_npy_header(raw.bytes, path);
  check_ndim_and_order(h, path);
  const std::int64_t itemsize = descr_itemsize(h.descr);
  if (itemsize > 0) check_size(h, itemsize, raw.file_size, path);
  return h;
}

template <class T>
dense::DistMatrix<T> read_npy(
    const Context& ctx, const std::string& path,
    const std::function<layout::Layout(std::int64_t rows, std::int64_t cols)>& make_layout) {
  static_assert(sizeof(T) == 8 || sizeof(T) == 16, "npy: unexpected item size");
  const RawHeader raw = fetch_header(ctx, path);
  const NpyHeader h = parse_npy_header(raw.bytes, path);  // same bytes, same result on all ranks
  check_npy_header(h, npy_descr<T>(), npy_dtype_name<T>(), raw.file_size, path);
  const std::int64_t rows = h.rows(), cols = h.cols();

  layout::Layout lay;
  ctx.agree([&] {
    lay = make_layout(rows, cols);
    TESSEL_CHECK(lay.rows() == rows && lay.cols() == cols, DimensionMismatch, "read_npy(", path,
                 "): make_layout(", rows, ", ", cols, ") returned a ", lay.rows(), " x ",
                 lay.cols(), " layout");
    TESSEL_CHECK(lay.comm_size() == ctx.size(), LayoutMismatch, "read_npy(", path,
                 "): make_layout returned a layout for ", lay.comm_size(),
                 " ranks, the context has ", ctx.size());
  });
  dense::DistMatrix<T> x(ctx, lay);
  // A C-order 2-D file holds the transpose in column-major terms; the file view reads it
  // straight into place. A 1-D file is the same in both orders.
  const bool row_major = !h.fortran_order && h.shape.size() == 2;
  const comm::MatrixShare share = share_of(lay, ctx.rank(), x.ld(), row_major);
  comm::File f = comm::File::open_read(ctx.comm(), path);
  f.read_all(h.data_offset, share, x.data());
  f.close();
  return x;
}

template <class T>
void write_npy(const Context& ctx, const std::string& path, const dense::DistMatrix<T>& x) {
  const layout::Layout& lay = x.layout();
  ctx.agree([&] {
    TESSEL_CHECK(lay.comm_size() == ctx.size(), LayoutMismatch, "write_npy(", path,
                 "): the matrix layout is for ", lay.comm_size(), " ranks, the context has ",
                 ctx.size());
    TESSEL_CHECK(!path.empty(), InputError, "write_npy: empty output path");
  });
  const std::string tmp = comm::temp_file_name(ctx.comm(), path);  // one name for all ranks

  const std::string header = make_npy_header(npy_descr<T>(), true, x.rows(), x.cols());
  const comm::MatrixShare share = share_of(lay, ctx.rank(), x.ld(), false);
  // Every collective step below agrees across ranks, so all ranks leave the try block
  // together (and close the file together, collectively, in its destructor). The header,
  // written by rank 0 alone, is agreed on with the rename: a failed header write keeps
  // rank 0 in step, and the rename is refused on every rank.
  try {
    comm::File f = comm::File::create_new(ctx.comm(), tmp);
    std::exception_ptr header_failed;
    if (ctx.rank() == 0) {
      try {
        f.write_at(0, header.data(), static_cast<std::int64_t>(header.size()));
      } catch (const Error&) { header_failed = std::current_exception(); }
    }
    f.write_all(static_cast<std::int64_t>(header.size()), share, x.data());
    f.close();
    ctx.agree([&] {
      if (header_failed) std::rethrow_exception(header_failed);
      if (ctx.rank() == 0 && std::rename(tmp.c_str(), path.c_str()) != 0)
        throw InputError(concat("cannot rename ", tmp, " to ", path, ": ", std::strerror(errno)));
    });
  } catch (const Error& e) {
    if (ctx.rank() == 0) std::remove(tmp.c_str());
    throw InputError(concat("cannot write ", path, ": ", e.what()));
  }
}

#define TESSEL_INSTANTIATE(T)                                                                  \
  template dense::DistMatrix<T> read_npy<T>(                                                   \
      const Context&, const std::string&,                                                      \
      const std::function<layout::Layout(std::int64_t, std::int64_t)>&);                       \
  template void write_npy<T>(const Context&, const std::string&, const dense::DistMatrix<T>&); \
  template std::vector<T> decode_npy<T>(const std::string&, const std::string&, NpyHeader*);
TESSEL_INSTANTIATE(double)
TESSEL_INSTANTIATE(std::complex<double>)
#undef TESSEL_INSTANTIATE

}  // namespace tessel::io

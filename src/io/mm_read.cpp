// Reading MatrixMarket coordinate files in parallel: header and size line (every rank, agreed)
// -> each rank parses a byte range of the entries (checked line by line) -> line numbers from
// an allgather of line counts; the earliest error thrown on every rank -> the entry count
// against the size line -> entries (mirrored for symmetric files) go to the owners of their
// blocks in one exchange (ledger phase "sparse/io") -> owners sort them, refuse duplicates
// (naming both lines) and assemble their blocks.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sparse_text.hpp"
#include "tessel/comm/packed_exchange.hpp"
#include "tessel/core/error.hpp"
#include "tessel/io/sparse.hpp"

namespace tessel::io {
namespace {

using detail::concat;
using namespace sparse_text;

struct MmHeader {
  bool symmetric = false;
  std::int64_t rows = 0, cols = 0, nnz = 0;
  std::int64_t data_begin = 0;  // byte offset of the first entry line
  std::int64_t lines = 0;       // header lines (banner, comments, size line)
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Not collective: reads and checks the banner and size line (throws InputError).
MmHeader read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TESSEL_CHECK(in.good(), InputError, "cannot read ", path, ": ", std::strerror(errno));
  MmHeader h;
  std::string line;
  TESSEL_CHECK(static_cast<bool>(std::getline(in, line)), InputError, path,
               ": empty file, expected a '%%MatrixMarket matrix coordinate ...' banner");
  h.lines = 1;
  h.data_begin = static_cast<std::int64_t>(line.size()) + 1;
  std::istringstream banner(lower(line));
  std::string tag, object, format, field, symmetry;
  banner >> tag >> object >> format >> field >> symmetry;
  TESSEL_CHECK(tag == "%%matrixmarket" && object == "matrix", InputError, path,
               ", line 1: expected the banner '%%MatrixMarket matrix coordinate real general|"
               "symmetric', found ",
               quote_line(line.data(), line.data() + line.size()));
  TESSEL_CHECK(format == "coordinate", InputError, path, ", line 1: format '", format,
               "', expected 'coordinate' (dense 'array' files are not supported)");
  TESSEL_CHECK(field == "real" || field == "integer" || field == "double", InputError, path,
               ", line 1: field '", field, "', expected 'real' (or 'integer')");
  TESSEL_CHECK(symmetry == "general" || symmetry == "symmetric", InputError, path,
               ", line 1: symmetry '", symmetry, "', expected 'general' or 'symmetric'");
  h.symmetric = symmetry == "symmetric";
  for (;;) {
    TESSEL_CHECK(static_cast<bool>(std::getline(in, line)), InputError, path,
                 ": no size line 'rows cols entries' after the banner");
    ++h.lines;
    h.data_begin += static_cast<std::int64_t>(line.size()) + 1;
    if (!line.empty() && line[0] == '%') continue;
    if (blank(line.data(), line.data() + line.size())) continue;
    std::istringstream sz(line);
    std::string rest;
    TESSEL_CHECK((sz >> h.rows >> h.cols >> h.nnz) && !(sz >> rest) && h.rows >= 0 && h.cols >= 0 &&
                     h.nnz >= 0,
                 InputError, path, ", line ", h.lines,
                 ": expected the size line 'rows cols entries' (three non-negative integers), "
                 "found ",
                 quote_line(line.data(), line.data() + line.size()));
    return h;
  }
}

/// One entry on its way to its owner: 0-based indices, global line, value bits.
struct Item {
  std::int64_t i, j, line;
  double v;
};

/// The file being read: its checked header, its descriptor and its size.
struct MmFile {
  MmHeader h;
  Fd fd;
  std::int64_t size = 0;
};

/// Collective (via Context::agree). Reads the header, checks it against dist, opens the file.
void open_checked(const Context& ctx, const std::string& path, const Distribution& dist,
                  MmFile& f) {
  MmHeader& h = f.h;
  Fd& fd = f.fd;
  ctx.agree([&] {
    h = read_header(path);
    TESSEL_CHECK(h.rows == dist.row_blocks().extent() && h.cols == dist.col_blocks().extent(),
                 InputError, path, ", line ", h.lines, ": the matrix is ", h.rows, " x ", h.cols,
                 " but the block sizes sum to ", dist.row_blocks().extent(), " x ",
                 dist.col_blocks().extent(), ": expected block sizes that sum to the dimension");
    TESSEL_CHECK(!h.symmetric || h.rows == h.cols, InputError, path, ": a symmetric file of ",
                 h.rows, " x ", h.cols, ", expected a square matrix");
    fd.fd = ::open(path.c_str(), O_RDONLY);
    TESSEL_CHECK(fd.fd >= 0, InputError, "cannot read ", path, ": ", std::strerror(errno));
    struct stat st;
    TESSEL_CHECK(::fstat(fd.fd, &st) == 0, InputError, "cannot read ", path);
    f.size = static_cast<std::int64_t>(st.st_size);
  });
}

/// The entries of this rank's lines, their line numbers local to the rank until numbered.
struct MyEntries {
  std::vector<Item> items;  // mirrored ones included (symmetric files)
  FirstError err;           // the first bad line
  std::int64_t count = 0;   // entries read (not mirrored)
  std::int64_t lines = 0;   // lines read
};

/// Not collective. Parses and checks the lines of `text` from `first` on; with opt.pattern,
/// only the blocks whose keys are in `keys` may hold nonzeros.
MyEntries parse_my_entries(const std::string& text, std::size_t first, const MmHeader& h,
                           const Distribution& dist, const std::vector<std::int64_t>& keys,
                           const ReadOptions& opt) {
  const BlockSizes& rb = dist.row_blocks();
  const BlockSizes& cb = dist.col_blocks();
  const std::int64_t nbc = cb.count();
  auto in_pattern = [&](std::int64_t i, std::int64_t j) {
    return std::binary_search(keys.begin(), keys.end(), rb.block_of(i) * nbc + cb.block_of(j));
  };
  MyEntries e;
  FirstError& err = e.err;
  e.lines = for_each_line(text, first, [&](std::int64_t line, const char* b, const char* le) {
    if (err.any() || blank(b, le) || *b == '%') return;
    Entry x;
    std::string why;
    if (!parse_entry(b, le, x, why)) return err.set(line, why);
    if (x.row < 1 || x.row > h.rows)
      return err.set(line,
                     concat("row ", x.row, " is out of range: expected 1 <= row <= ", h.rows));
    if (x.col < 1 || x.col > h.cols)
      return err.set(
          line, concat("column ", x.col, " is out of range: expected 1 <= column <= ", h.cols));
    if (h.symmetric && x.row < x.col)
      return err.set(line, concat("entry (", x.row, ", ", x.col,
                                  ") is above the diagonal: a symmetric "
                                  "file gives the lower triangle only (row >= column)"));
    ++e.count;
    const std::int64_t i = x.row - 1, j = x.col - 1;
    if (opt.pattern && (!in_pattern(i, j) || (h.symmetric && !in_pattern(j, i)))) {
      if (x.value == 0) return;
      return err.set(line, concat("nonzero ", x.value, " at (", x.row, ", ", x.col,
                                  ") lies in a block the pattern does not store: expected zero "
                                  "there"));
    }
    e.items.push_back({i, j, line, x.value});
    if (h.symmetric && i != j) e.items.push_back({j, i, line, x.value});
  });
  return e;
}

/// Collective. Global line numbers: the header's lines + the lines of the ranks before.
void number_lines(const Context& ctx, const MmHeader& h, MyEntries& e) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(ctx.size()));
  ctx.comm().allgather(&e.lines, 1, all.data());
  std::int64_t offset = h.lines;
  for (int q = 0; q < ctx.rank(); ++q) offset += all[static_cast<std::size_t>(q)];
  if (e.err.any()) e.err.line += offset;
  for (auto& it : e.items) it.line += offset;
}

/// Collective. Sends each entry to the owner of its block (four int64 words each: i, j, line,
/// the value's bits; ledger phase "sparse/io"); returns the entries this rank owns.
std::vector<Item> send_to_owners(const Context& ctx, const Distribution& dist,
                                 const std::vector<Item>& items) {
  constexpr std::size_t kWords = 4;
  const BlockSizes& rb = dist.row_blocks();
  const BlockSizes& cb = dist.col_blocks();
  std::vector<std::int64_t> send_count(static_cast<std::size_t>(ctx.size()), 0), send;
  std::vector<int> dest(items.size());
  for (std::size_t k = 0; k < items.size(); ++k) {
    dest[k] = dist.owner(rb.block_of(items[k].i), cb.block_of(items[k].j));
    send_count[static_cast<std::size_t>(dest[k])] += kWords;
  }
  std::vector<std::int64_t> at = comm::ExchangeCounts::offsets(send_count);
  send.resize(static_cast<std::size_t>(at.back()));
  for (std::size_t k = 0; k < items.size(); ++k) {
    std::int64_t* o = &send[static_cast<std::size_t>(at[static_cast<std::size_t>(dest[k])])];
    at[static_cast<std::size_t>(dest[k])] += kWords;
    o[0] = items[k].i;
    o[1] = items[k].j;
    o[2] = items[k].line;
    std::memcpy(&o[3], &items[k].v, sizeof(double));
  }
  std::vector<std::int64_t> recv;
  {
    PhaseScope phase(*ctx.comm().ledger(), "sparse/io");
    recv = comm::exchange_packed(ctx.comm(), send_count, send, comm::tag::kSparseMmEntries);
  }
  std::vector<Item> mine(recv.size() / kWords);
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const std::int64_t* o = &recv[kWords * k];
    mine[k] = {o[0], o[1], o[2], 0};
    std::memcpy(&mine[k].v, &o[3], sizeof(double));
  }
  return mine;
}

/// Collective. Sorts the owned entries by row, column and line; throws on every rank the
/// earliest duplicate position, naming both lines.
void sort_refusing_duplicates(const Context& ctx, const std::string& path, const MmHeader& h,
                              std::vector<Item>& mine) {
  std::sort(mine.begin(), mine.end(), [](const Item& a, const Item& b) {
    return a.i != b.i ? a.i < b.i : a.j != b.j ? a.j < b.j : a.line < b.line;
  });
  FirstError dup;
  for (std::size_t k = 1; k < mine.size(); ++k)
    if (mine[k].i == mine[k - 1].i && mine[k].j == mine[k - 1].j)
      dup.set(mine[k].line, concat("duplicate entry (", mine[k].i + 1, ", ", mine[k].j + 1,
                                   "): line ", mine[k - 1].line, " gives the same position",
                                   h.symmetric ? " (symmetric file: mirrored entries count)" : ""));
  throw_first_error(ctx, path, dup);
}

}  // namespace

BlockSparseMatrix<double> read_matrix_market(const Context& ctx, const std::string& path,
                                             const Distribution& dist, const ReadOptions& opt) {
  const std::vector<std::int64_t> keys = check_read_args(ctx, path, dist, opt);
  MmFile file;
  open_checked(ctx, path, dist, file);
  const MmHeader& h = file.h;

  std::size_t first = 0;
  const std::string text = read_my_lines(ctx, file.fd.fd, path, file.size, h.data_begin, first);
  MyEntries e = parse_my_entries(text, first, h, dist, keys, opt);
  number_lines(ctx, h, e);
  throw_first_error(ctx, path, e.err);
  const std::int64_t total = ctx.comm().allreduce_value(e.count, MPI_SUM);
  ctx.agree([&] {
    TESSEL_CHECK(total == h.nnz, InputError, path, ": the size line (line ", h.lines,
                 ") announces ", h.nnz, " entries, the file holds ", total);
  });

  std::vector<Item> mine = send_to_owners(ctx, dist, e.items);
  sort_refusing_duplicates(ctx, path, h, mine);
  BlockSparseMatrix<double> m(ctx, dist, opt.name.empty() ? base_name(path) : opt.name);
  SortedAssembler sa(m);
  for (const Item& it : mine) sa.add(it.i, it.j, it.v);
  sa.flush();
  m.finalize();
  return m;
}

}  // namespace tessel::io

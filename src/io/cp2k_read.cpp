// Reading CP2K CSR text in parallel: open (agreed) -> each rank parses its lines (plain: a byte
// range of the file; gzip: every rank inflates the stream and parses the lines starting in its
// 1 MiB chunks) into blocks, checking each line -> the earliest error of any rank is thrown on
// every rank (plain files: line numbers from an exclusive sum of the ranks' line counts; the
// order across range boundaries from an allgather of first/last entries) -> the extent check
// -> finalize() sends the blocks to their owners.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sparse_text.hpp"
#include "tessel/core/error.hpp"
#include "tessel/io/sparse.hpp"

namespace tessel::io {
namespace {

using detail::concat;
using namespace sparse_text;

constexpr std::int64_t kChunk = 1 << 20;  // inflated bytes per chunk (gzip files)

/// Checks and collects the lines of one rank, in file order.
class LineConsumer {
 public:
  LineConsumer(BlockSparseMatrix<double>& m, const std::vector<std::int64_t>* keys)
      : asm_(m),
        rows_(m.distribution().row_blocks()),
        cols_(m.distribution().col_blocks()),
        nrows_(m.rows()),
        ncols_(m.cols()),
        keys_(keys),
        nbc_(cols_.count()) {}

  /// The entry before the next line (for the order check across ranges), or none.
  void set_prev(bool valid, std::int64_t r, std::int64_t c) {
    have_prev_ = valid;
    prev_ = {r, c, 0};
  }
  /// Line `line` (1-based in the caller's numbering) is [b, e), without its '\n'.
  void line(std::int64_t line, const char* b, const char* e) {
    if (err.any() || blank(b, e)) return;
    Entry x;
    std::string why;
    if (!parse_entry(b, e, x, why)) return err.set(line, why);
    if (x.row < 1 || x.row > nrows_)
      return err.set(line, concat("row ", x.row, " is out of range: expected 1 <= row <= ", nrows_,
                                  " (the sum of the row block sizes)"));
    if (x.col < 1 || x.col > ncols_)
      return err.set(line, concat("column ", x.col, " is out of range: expected 1 <= column <= ",
                                  ncols_, " (the sum of the column block sizes)"));
    if (have_prev_ && (x.row < prev_.row || (x.row == prev_.row && x.col <= prev_.col))) {
      if (x.row == prev_.row && x.col == prev_.col)
        return err.set(line, concat("duplicate entry (", x.row, ", ", x.col,
                                    "): the previous line gives the same position"));
      return err.set(line, concat("entry (", x.row, ", ", x.col, ") follows (", prev_.row, ", ",
                                  prev_.col, "): expected lines sorted by row, then column"));
    }
    if (!have_first) {
      have_first = true;
      first = x;
      first_line = line;
    }
    have_prev_ = true;
    prev_ = x;
    max_row = std::max(max_row, x.row);
    max_col = std::max(max_col, x.col);
    const std::int64_t i = x.row - 1, j = x.col - 1;
    if (keys_) {
      const int bi = rows_.block_of(i), bj = cols_.block_of(j);
      if (!std::binary_search(keys_->begin(), keys_->end(), bi * nbc_ + bj)) {
        if (x.value == 0) return;
        return err.set(line, concat("nonzero ", x.value, " at (", x.row, ", ", x.col,
                                    ") lies in block (", bi + 1, ", ", bj + 1,
                                    "), which the pattern does not store: expected zero there"));
      }
    }
    asm_.add(i, j, x.value);
  }
  void flush() { asm_.flush(); }
  const Entry& last() const { return prev_; }
  bool have_last() const { return have_first; }

  FirstError err;
  bool have_first = false;
  Entry first;
  std::int64_t first_line = 0, max_row = 0, max_col = 0;

 private:
  SortedAssembler asm_;
  const BlockSizes& rows_;
  const BlockSizes& cols_;
  std::int64_t nrows_, ncols_;
  const std::vector<std::int64_t>* keys_;
  std::int64_t nbc_;
  bool have_prev_ = false;
  Entry prev_;
};

/// Plain text: this rank's byte range; line numbers local until the allgather.
void read_plain(const Context& ctx, const std::string& path, std::int64_t size, int fd,
                LineConsumer& lc) {
  const int p = ctx.size(), r = ctx.rank();
  std::size_t first = 0;
  const std::string text = read_my_lines(ctx, fd, path, size, 0, first);
  const std::int64_t nlines = for_each_line(
      text, first, [&](std::int64_t line, const char* b, const char* e) { lc.line(line, b, e); });
  // Global line numbers and the order across range boundaries.
  std::int64_t mine[6] = {nlines,       lc.have_last() ? 1 : 0, lc.first.row,
                          lc.first.col, lc.last().row,          lc.last().col};
  std::vector<std::int64_t> all(6 * static_cast<std::size_t>(p));
  ctx.comm().allgather(mine, 6, all.data());
  std::int64_t offset = 0;
  bool have_prev = false;
  Entry prev;
  for (int q = 0; q < r; ++q) {
    const std::int64_t* a = &all[6 * static_cast<std::size_t>(q)];
    offset += a[0];
    if (a[1]) {
      have_prev = true;
      prev = {a[4], a[5], 0};
    }
  }
  FirstError err;
  if (lc.err.any()) err.set(offset + lc.err.line, lc.err.msg);
  if (lc.have_first && have_prev &&
      (lc.first.row < prev.row || (lc.first.row == prev.row && lc.first.col <= prev.col))) {
    err.set(offset + lc.first_line,
            lc.first.row == prev.row && lc.first.col == prev.col
                ? concat("duplicate entry (", prev.row, ", ", prev.col,
                         "): an earlier line gives the same position")
                : concat("entry (", lc.first.row, ", ", lc.first.col, ") follows (", prev.row, ", ",
                         prev.col, "): expected lines sorted by row, then column"));
  }
  lc.err = err;
}

/// gzip: every rank inflates the whole stream; lines starting in chunk k go to rank k mod P.
void read_gzip(const Context& ctx, const std::string& path, LineConsumer& lc) {
  const int p = ctx.size(), r = ctx.rank();
  gzFile f = gzopen(path.c_str(), "rb");
  ctx.agree([&] {
    TESSEL_CHECK(f != nullptr, InputError, "cannot read ", path, ": ", std::strerror(errno));
  });
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{f};
  gzbuffer(f, 1 << 17);
  std::string buf, prev_store;
  std::int64_t buf_off = 0;  // inflated offset of buf[0]
  std::int64_t line = 0;
  int prev_owner = -1;
  const char* prev_b = nullptr;
  const char* prev_e = nullptr;
  bool prev_in_buf = false;
  auto process = [&](const char* b, const char* le) {
    const std::int64_t start = buf_off + (b - buf.data());
    const int owner = static_cast<int>((start / kChunk) % p);
    ++line;
    if (owner == r) {
      if (prev_owner != r) {  // the previous line belongs to another rank: order across
        std::int64_t pr = 0, pc = 0;
        const bool ok = prev_b && parse_indices(prev_b, prev_e, pr, pc);
        lc.set_prev(ok, pr, pc);
      }
      lc.line(line, b, le);
    }
    prev_owner = owner;
    prev_in_buf = true;
    prev_b = b;
    prev_e = le;
  };
  std::vector<char> in(static_cast<std::size_t>(kChunk));
  int nread = 0;
  while ((nread = gzread(f, in.data(), static_cast<unsigned>(in.size()))) > 0) {
    // prev_b points into prev_store here (copied below before buf changes).
    buf.append(in.data(), static_cast<std::size_t>(nread));
    const char* s = buf.data();
    const char* e = s + buf.size();
    const char* b = s;
    for (;;) {
      const char* nl =
          static_cast<const char*>(std::memchr(b, '\n', static_cast<std::size_t>(e - b)));
      if (!nl) break;
      process(b, nl);
      b = nl + 1;
    }
    if (prev_in_buf) {  // keep the previous line's text before buf changes
      prev_in_buf = false;
      prev_store.assign(prev_b, prev_e);
      prev_b = prev_store.data();
      prev_e = prev_b + prev_store.size();
    }
    const std::size_t used = static_cast<std::size_t>(b - s);
    buf.erase(0, used);
    buf_off += static_cast<std::int64_t>(used);
  }
  int errnum = Z_OK;
  const char* zmsg = gzerror(f, &errnum);
  if (nread < 0 || errnum != Z_OK) {
    lc.err.set(line + 1,
               concat("the gzip stream is ", errnum == Z_BUF_ERROR ? "truncated" : "corrupt",
                      " (zlib: ", zmsg, ") after ", line,
                      " complete lines: expected more compressed "
                      "data and the gzip trailer"));
  } else if (!buf.empty()) {
    process(buf.data(), buf.data() + buf.size());  // a last line without '\n'
  }
}

}  // namespace

BlockSparseMatrix<double> read_cp2k_csr(const Context& ctx, const std::string& path,
                                        const Distribution& dist, const ReadOptions& opt) {
  const std::vector<std::int64_t> keys = check_read_args(ctx, path, dist, opt);
  // Open and classify (gzip magic 1f 8b) on every rank.
  Fd fd;
  std::int64_t size = 0;
  bool gz = false;
  ctx.agree([&] {
    fd.fd = ::open(path.c_str(), O_RDONLY);
    if (fd.fd < 0) throw InputError(concat("cannot read ", path, ": ", std::strerror(errno)));
    struct stat st;
    if (::fstat(fd.fd, &st) != 0 || S_ISDIR(st.st_mode))
      throw InputError(concat("cannot read ", path, ": it is a directory"));
    size = static_cast<std::int64_t>(st.st_size);
    unsigned char magic[2] = {0, 0};
    gz = size >= 2 && ::pread(fd.fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  });
  BlockSparseMatrix<double> m(ctx, dist, opt.name.empty() ? base_name(path) : opt.name);
  LineConsumer lc(m, opt.pattern ? &keys : nullptr);
  if (gz)
    read_gzip(ctx, path, lc);
  else
    read_plain(ctx, path, size, fd.fd, lc);
  throw_first_error(ctx, path, lc.err);

  std::int64_t ext[2] = {lc.max_row, lc.max_col};
  ctx.comm().allreduce(ext, 2, MPI_MAX);
  ctx.agree([&] {
    TESSEL_CHECK(ext[0] > 0, InputError, path, ": no entries (expected lines 'row col value')");
    const bool ok = opt.exact_extent ? (ext[0] == m.rows() && ext[1] == m.cols())
                                     : (ext[0] <= m.rows() && ext[1] <= m.cols());
    TESSEL_CHECK(ok, InputError, path, ": the block sizes sum to ", m.rows(), " x ", m.cols(),
                 " but the largest indices in the file are ", ext[0], " x ", ext[1],
                 ": expected block sizes that sum to the matrix dimension");
  });
  lc.flush();
  m.finalize();
  return m;
}

}  // namespace tessel::io

// Shared pieces of the block-sparse readers and writers (see sparse_text.hpp).
#include "sparse_text.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "tessel/comm/packed_exchange.hpp"
#include "tessel/core/error.hpp"

namespace tessel::io::sparse_text {

using detail::concat;

namespace {
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }
const char* skip(const char* p, const char* e) {
  while (p < e && is_space(*p)) ++p;
  return p;
}
const char* token_end(const char* p, const char* e) {
  while (p < e && !is_space(*p)) ++p;
  return p;
}
bool parse_int(const char*& p, const char* e, std::int64_t& v) {
  p = skip(p, e);
  const char* t = token_end(p, e);
  if (p < t && *p == '+') ++p;
  auto r = std::from_chars(p, t, v);
  if (r.ec != std::errc() || r.ptr != t || p == t) return false;
  p = t;
  return true;
}
}  // namespace

bool blank(const char* b, const char* e) { return skip(b, e) == e; }

std::string quote_line(const char* b, const char* e) {
  std::string s(b, static_cast<std::size_t>(std::min<std::ptrdiff_t>(e - b, 60)));
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return concat("\"", s, e - b > 60 ? "...\"" : "\"");
}

bool parse_indices(const char* b, const char* e, std::int64_t& row, std::int64_t& col) {
  const char* p = b;
  return parse_int(p, e, row) && parse_int(p, e, col);
}

bool parse_entry(const char* b, const char* e, Entry& out, std::string& why) {
  const char* p = b;
  if (!parse_int(p, e, out.row) || !parse_int(p, e, out.col)) {
    why = concat("expected 'row col value' (two integers and a real number), found ",
                 quote_line(b, e));
    return false;
  }
  p = skip(p, e);
  const char* t = token_end(p, e);
  const char* q = (p < t && *p == '+') ? p + 1 : p;
  auto r = std::from_chars(q, t, out.value);
  if (p == t || r.ec != std::errc() || r.ptr != t) {
    why = concat("expected a real number after the indices, found ", quote_line(b, e));
    return false;
  }
  if (skip(t, e) != e) {
    why = concat("expected 'row col value' and nothing more, found ", quote_line(b, e));
    return false;
  }
  return true;
}

void throw_first_error(const Context& ctx, const std::string& path, const FirstError& e) {
  const std::int64_t first = ctx.comm().allreduce_value(e.line, MPI_MIN);
  if (first == kNoLine) return;
  ctx.agree(
      [&] { TESSEL_CHECK(e.line != first, InputError, path, ", line ", e.line, ": ", e.msg); });
}

std::vector<std::int64_t> pattern_keys(const Context& ctx,
                                       const BlockSparseMatrix<double>& pattern) {
  PhaseScope phase(*ctx.comm().ledger(), "sparse/io");
  const std::int64_t nbc = pattern.distribution().col_blocks().count();
  std::vector<std::int64_t> mine;
  pattern.for_each_block(
      [&](int br, int bc, const double*, int, int) { mine.push_back(br * nbc + bc); });
  const int p = ctx.size();
  std::vector<std::int64_t> send;
  send.reserve(mine.size() * static_cast<std::size_t>(p));
  for (int q = 0; q < p; ++q) send.insert(send.end(), mine.begin(), mine.end());
  std::vector<std::int64_t> counts(static_cast<std::size_t>(p),
                                   static_cast<std::int64_t>(mine.size()));
  auto all = comm::exchange_packed(ctx.comm(), counts, send, comm::tag::kSparsePattern);
  std::sort(all.begin(), all.end());
  return all;
}

std::string base_name(const std::string& path) {
  const auto s = path.find_last_of('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

std::vector<std::int64_t> check_read_args(const Context& ctx, const std::string& path,
                                          const Distribution& dist, const ReadOptions& opt) {
  ctx.agree([&] {
    TESSEL_CHECK(dist.nranks() == ctx.size(), GridError, "reading ", path,
                 ": the distribution is for ", dist.nranks(), " ranks, the context has ",
                 ctx.size());
    if (opt.pattern) {
      const Distribution& pd = opt.pattern->distribution();
      TESSEL_CHECK(pd.row_blocks() == dist.row_blocks() && pd.col_blocks() == dist.col_blocks(),
                   DimensionMismatch, "reading ", path, ": the pattern ", opt.pattern->name(),
                   " has ", pd.describe(), ", the distribution ", dist.describe(),
                   ": expected the same block sizes");
      TESSEL_CHECK(opt.pattern->is_finalized(), InputError, "reading ", path, ": the pattern ",
                   opt.pattern->name(), " has blocks put since its last finalize()");
    }
  });
  return opt.pattern ? pattern_keys(ctx, *opt.pattern) : std::vector<std::int64_t>{};
}

SortedAssembler::SortedAssembler(BlockSparseMatrix<double>& m)
    : m_(m), rows_(m.distribution().row_blocks()), cols_(m.distribution().col_blocks()) {}

void SortedAssembler::add(std::int64_t i, std::int64_t j, double v) {
  const int bi = rows_.block_of(i);
  if (bi != brow_) {
    flush();
    brow_ = bi;
  }
  const int bj = cols_.block_of(j);
  auto& blk = blocks_[bj];
  const int r = rows_.size(bi);
  if (blk.empty()) blk.assign(static_cast<std::size_t>(r) * cols_.size(bj), 0.0);
  blk[static_cast<std::size_t>((j - cols_.offset(bj)) * r + (i - rows_.offset(bi)))] = v;
}

void SortedAssembler::flush() {
  for (auto& [bj, blk] : blocks_) m_.put_block(brow_, bj, blk.data(), /*accumulate=*/true);
  blocks_.clear();
}

Fd::~Fd() {
  if (fd >= 0) ::close(fd);
}

std::string read_my_lines(const Context& ctx, int fd, const std::string& path,
                          std::int64_t file_size, std::int64_t data_begin, std::size_t& first) {
  const int p = ctx.size(), r = ctx.rank();
  const std::int64_t span = std::max<std::int64_t>(0, file_size - data_begin);
  const std::int64_t begin = data_begin + span * r / p, end = data_begin + span * (r + 1) / p;
  std::int64_t base = 0;
  std::string text;
  ctx.agree([&] { text = read_line_range(fd, path, file_size, begin, end, base, first); });
  return text;
}

std::string read_line_range(int fd, const std::string& path, std::int64_t file_size,
                            std::int64_t begin, std::int64_t end, std::int64_t& base,
                            std::size_t& first) {
  base = std::max<std::int64_t>(0, begin - 1);
  std::string buf;
  auto read_more = [&](std::int64_t upto) {
    const std::size_t old = buf.size();
    const std::int64_t at = base + static_cast<std::int64_t>(old);
    upto = std::min(upto, file_size);
    if (upto <= at) return false;
    buf.resize(static_cast<std::size_t>(upto - base));
    std::size_t got = old;
    while (got < buf.size()) {
      const ssize_t n = ::pread(fd, buf.data() + got, buf.size() - got,
                                static_cast<off_t>(base + static_cast<std::int64_t>(got)));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw InputError(concat("cannot read ", path, ": ", std::strerror(errno)));
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    buf.resize(got);
    return got > old;
  };
  if (begin >= end) {
    first = 0;
    return {};
  }
  read_more(end);
  // The first line starting at or after `begin`: after the first '\n' at or after begin - 1.
  if (begin == 0) {
    first = 0;
  } else {
    std::size_t nl = buf.find('\n');
    while (nl == std::string::npos &&
           read_more(base + static_cast<std::int64_t>(buf.size()) + 65536))
      nl = buf.find('\n');
    first = nl == std::string::npos ? buf.size() : nl + 1;
  }
  // Up to the '\n' ending the line that holds byte end - 1 (if that line starts before end).
  const std::size_t last = static_cast<std::size_t>(end - 1 - base);
  if (first <= last) {
    std::size_t nl = buf.find('\n', last);
    while (nl == std::string::npos) {
      const std::size_t from = buf.size();
      if (!read_more(base + static_cast<std::int64_t>(buf.size()) + 65536)) break;
      nl = buf.find('\n', from);
    }
    if (nl != std::string::npos) buf.resize(nl + 1);
  } else {
    buf.resize(first);  // no line starts in the range
  }
  return buf;
}

void commit_file(const Context& ctx, const std::string& tmp, const std::string& path,
                 const std::string& failed) {
  try {
    ctx.agree([&] {
      TESSEL_CHECK(failed.empty(), InputError, failed);
      if (ctx.rank() == 0 && std::rename(tmp.c_str(), path.c_str()) != 0)
        throw InputError(concat("cannot rename ", tmp, " to ", path, ": ", std::strerror(errno)));
    });
  } catch (const Error& e) {
    if (ctx.rank() == 0) std::remove(tmp.c_str());
    throw InputError(concat("cannot write ", path, ": ", e.what()));
  }
}

}  // namespace tessel::io::sparse_text

namespace tessel::io {
namespace {
/// Distribution::random(rows, cols) on the default grid of ctx.size() ranks.
Distribution default_distribution(const Context& ctx, const BlockSizes& rows,
                                  const BlockSizes& cols) {
  const auto [pr, pc] = Distribution::default_grid(ctx.size());
  return Distribution::random(rows, cols, pr, pc);
}
}  // namespace

// The readers' overloads on block sizes (io/sparse.hpp): the readers on default_distribution.
BlockSparseMatrix<double> read_cp2k_csr(const Context& ctx, const std::string& path,
                                        const BlockSizes& rows, const BlockSizes& cols,
                                        const ReadOptions& opt) {
  return read_cp2k_csr(ctx, path, default_distribution(ctx, rows, cols), opt);
}
BlockSparseMatrix<double> read_matrix_market(const Context& ctx, const std::string& path,
                                             const BlockSizes& rows, const BlockSizes& cols,
                                             const ReadOptions& opt) {
  return read_matrix_market(ctx, path, default_distribution(ctx, rows, cols), opt);
}

}  // namespace tessel::io

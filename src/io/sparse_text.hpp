#pragma once
// Private helpers of the block-sparse readers and writers (src/io/{block_sizes,sparse_text,cp2k_read,mm_read,npy_blocks,sparse_write}.cpp): line parsing,
// the first-error agreement, the pattern key set, the sorted-entry block assembler, byte
// ranges of text files and the temporary-file protocol of the writers.
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tessel/core/context.hpp"
#include "tessel/sparse/block_sparse.hpp"
#include "tessel/io/sparse.hpp"

namespace tessel::io {
// The matrix types the block-sparse formats read into and write from (layer sparse, below io).
using sparse::BlockSizes;
using sparse::BlockSparseMatrix;
using sparse::Distribution;
using sparse::LocalBlocks;
}  // namespace tessel::io

namespace tessel::io::sparse_text {

constexpr std::int64_t kNoLine = std::numeric_limits<std::int64_t>::max();

/// One parsed line: 1-based row and column as written, and the value.
struct Entry {
  std::int64_t row = 0, col = 0;
  double value = 0;
};

/// True when [b, e) holds only blanks (spaces, tabs, '\r').
bool blank(const char* b, const char* e);
/// Parses "row col value" (whitespace separated, nothing after) from the line [b, e). On
/// failure returns false and sets `why` to what was expected and found.
bool parse_entry(const char* b, const char* e, Entry& out, std::string& why);
/// Parses only the two indices (for order checks across ranges); false when malformed.
bool parse_indices(const char* b, const char* e, std::int64_t& row, std::int64_t& col);
/// The line [b, e) quoted for a message, cut at 60 characters.
std::string quote_line(const char* b, const char* e);

/// The earliest error found by this rank: its (global, 1-based) line and message.
struct FirstError {
  std::int64_t line = kNoLine;
  std::string msg;
  void set(std::int64_t l, std::string m) {
    if (l < line) {
      line = l;
      msg = std::move(m);
    }
  }
  bool any() const { return line != kNoLine; }
};

/// Collective. Throws, on every rank, the InputError "<path>, line <L>: <msg>" of the earliest
/// line any rank found (one allreduce when there is none).
void throw_first_error(const Context& ctx, const std::string& path, const FirstError& e);

/// Collective. The sorted keys brow * (block columns) + bcol of every block `pattern` stores
/// (gathered from all ranks, ledger phase "sparse/io").
std::vector<std::int64_t> pattern_keys(const Context& ctx,
                                       const BlockSparseMatrix<double>& pattern);

/// Collective. Checks the arguments every reader shares (distribution for ctx.size() ranks,
/// the pattern's block sizes equal to dist's and finalized); returns the pattern's keys
/// (pattern_keys; none without opt.pattern).
std::vector<std::int64_t> check_read_args(const Context& ctx, const std::string& path,
                                          const Distribution& dist, const ReadOptions& opt);
/// The file name part of a path ("S.csr" of "/x/S.csr").
std::string base_name(const std::string& path);

/// Collects entries sorted by row then column (0-based) into blocks of the current block row
/// and puts them into `m` (put_block with accumulate: a block split between ranks adds up).
class SortedAssembler {
 public:
  explicit SortedAssembler(BlockSparseMatrix<double>& m);
  void add(std::int64_t i, std::int64_t j, double v);
  /// Puts the blocks of the current block row.
  void flush();

 private:
  BlockSparseMatrix<double>& m_;
  const BlockSizes& rows_;
  const BlockSizes& cols_;
  int brow_ = -1;
  std::map<int, std::vector<double>> blocks_;
};

/// Bytes [begin, end) of an open file descriptor plus what follows up to the end of the line
/// that contains byte end - 1 (or the end of the file); `first` is set to the offset in the
/// returned text of the first line that starts at or after `begin` (the line starting at
/// begin - 1's successor); lines starting before `end` belong to the caller. Throws
/// InputError (local) on read errors.
std::string read_line_range(int fd, const std::string& path, std::int64_t file_size,
                            std::int64_t begin, std::int64_t end, std::int64_t& base,
                            std::size_t& first);
/// Not collective. Calls f(n, b, e) for each line of `text` from offset `first` on: n = 1, 2,
/// ..., [b, e) the line without its '\n' (the last may have none). Returns the lines' count.
template <class F>
std::int64_t for_each_line(const std::string& text, std::size_t first, F&& f) {
  std::int64_t n = 0;
  const char* e = text.data() + text.size();
  for (const char* b = text.data() + first; b < e;) {
    const char* nl =
        static_cast<const char*>(std::memchr(b, '\n', static_cast<std::size_t>(e - b)));
    const char* le = nl ? nl : e;
    f(++n, b, le);
    b = nl ? nl + 1 : e;
  }
  return n;
}
/// Collective (via Context::agree). This rank's lines of the text [data_begin, file_size) of
/// `fd`: read_line_range of the rank's share [data_begin + S r / P, data_begin + S (r+1) / P),
/// S = file_size - data_begin; a read error on any rank is thrown on every rank.
std::string read_my_lines(const Context& ctx, int fd, const std::string& path,
                          std::int64_t file_size, std::int64_t data_begin, std::size_t& first);

/// Owns an open file descriptor (-1: none): closes it when it goes.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
};

/// Collective. After every rank wrote its part of `tmp` (ok or the error it met in `failed`),
/// renames tmp to path on rank 0 when all succeeded; otherwise removes tmp and throws
/// InputError "cannot write <path>: ..." on every rank.
void commit_file(const Context& ctx, const std::string& tmp, const std::string& path,
                 const std::string& failed);

}  // namespace tessel::io::sparse_text

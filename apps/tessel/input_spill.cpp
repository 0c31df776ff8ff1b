#include "input_spill.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "tessel/core/error.hpp"

namespace tessel::app {

namespace {
using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;
constexpr char kMagic[8] = {'t', 'e', 's', 's', 'S', 'P', 'L', '1'};

std::string spill_path(const std::string& dir, int rank, const std::string& what) {
  return dir + "/tessel-spill-" + std::to_string(::getpid()) + "-r" + std::to_string(rank) + "-" +
         what + ".bin";
}

/// Not collective. This rank's blocks of `m` into `path`: magic, block count, value count, the
/// (row, column) pairs, the values (block by block: no copy of the matrix is made). Returns ""
/// or what failed.
std::string write_local(const sparse::BlockSparseMatrix<double>& m, const std::string& path,
                        double& bytes) {
  std::vector<std::int32_t> idx;
  std::int64_t nvalues = 0;
  m.for_each_block([&](int r, int c, const double*, int nr, int nc) {
    idx.push_back(r);
    idx.push_back(c);
    nvalues += static_cast<std::int64_t>(nr) * nc;
  });
  File f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return std::strerror(errno);
  const std::int64_t head[2] = {static_cast<std::int64_t>(idx.size() / 2), nvalues};
  bool ok = std::fwrite(kMagic, 1, sizeof kMagic, f.get()) == sizeof kMagic &&
            std::fwrite(head, sizeof head, 1, f.get()) == 1 &&
            std::fwrite(idx.data(), sizeof(std::int32_t), idx.size(), f.get()) == idx.size();
  m.for_each_block([&](int, int, const double* v, int nr, int nc) {
    const auto n = static_cast<std::size_t>(nr) * static_cast<std::size_t>(nc);
    ok = ok && std::fwrite(v, sizeof(double), n, f.get()) == n;
  });
  ok = (std::fclose(f.release()) == 0) && ok;
  if (!ok) return std::strerror(errno ? errno : EIO);
  bytes += static_cast<double>(sizeof kMagic + sizeof head + 4 * idx.size() + 8 * nvalues);
  return "";
}

/// Not collective. Reads `path` (write_local's) into `m` (an empty matrix of the distribution the
/// blocks were written from: every block is local), block by block (no second copy of the
/// matrix while it is read). Returns "" or what failed.
std::string read_local(sparse::BlockSparseMatrix<double>& m, const std::string& path,
                       double& bytes) {
  File f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return std::strerror(errno);
  char magic[sizeof kMagic];
  std::int64_t head[2];
  if (std::fread(magic, 1, sizeof magic, f.get()) != sizeof magic ||
      std::memcmp(magic, kMagic, sizeof magic) != 0 ||
      std::fread(head, sizeof head, 1, f.get()) != 1 || head[0] < 0 || head[1] < 0)
    return "not a spill file of this run (bad header)";
  std::vector<std::int32_t> idx(static_cast<std::size_t>(2 * head[0]));
  if (std::fread(idx.data(), sizeof(std::int32_t), idx.size(), f.get()) != idx.size())
    return "truncated";
  const auto& d = m.distribution();
  std::vector<double> block;
  std::int64_t at = 0;
  for (std::size_t b = 0; b < idx.size(); b += 2) {
    const int r = idx[b], c = idx[b + 1];
    if (r < 0 || r >= d.row_blocks().count() || c < 0 || c >= d.col_blocks().count() ||
        d.owner(r, c) != m.rank())
      return "a block outside this rank's part of the matrix";
    block.resize(static_cast<std::size_t>(d.row_blocks().size(r)) *
                 static_cast<std::size_t>(d.col_blocks().size(c)));
    at += static_cast<std::int64_t>(block.size());
    if (at > head[1]) return "fewer values than its blocks need";
    if (std::fread(block.data(), sizeof(double), block.size(), f.get()) != block.size())
      return "truncated";
    m.put_block(r, c, block.data());
  }
  if (at != head[1]) return "more values than its blocks need";
  bytes += static_cast<double>(sizeof magic + sizeof head + 4 * idx.size() + 8 * at);
  return "";
}
}  // namespace

InputSpill::InputSpill(Context& ctx, const std::string& dir, sparse::BlockSparseMatrix<double>& H,
                       sparse::BlockSparseMatrix<double>& S)
    : ctx_(ctx),
      slot_{{&H, spill_path(dir, ctx.rank(), "H"), H.distribution(), H.name()},
            {&S, spill_path(dir, ctx.rank(), "S"), S.distribution(), S.name()},
            {nullptr, spill_path(dir, ctx.rank(), "Z"), {}, "Z"}} {
  const std::string probe = spill_path(dir, ctx.rank(), "probe");
  ctx_.agree([&] {
    File f(std::fopen(probe.c_str(), "wb"), &std::fclose);
    const int err = errno;
    TESSEL_CHECK(f != nullptr, InputError, "--spill '", dir, "': cannot write a file there (",
                 std::strerror(err),
                 "); expected a writable directory with room for this rank's "
                 "part of H and S");
    f.reset();
    std::remove(probe.c_str());
  });
}

InputSpill::~InputSpill() {
  for (const Slot& x : slot_)
    if (x.on_disk) std::remove(x.path.c_str());
}

void InputSpill::need(bool h, bool s) {
  const bool want[2] = {h, s};
  for (int i = 0; i < 2; ++i) {
    if (want[i] && !slot_[i].in_memory) restore(slot_[i]);
    if (!want[i] && slot_[i].in_memory) release(slot_[i]);
  }
}

void InputSpill::park(sparse::BlockSparseMatrix<double>& z, bool needed) {
  Slot& x = slot_[2];
  if (!needed && !x.m) {  // the first time: the solver's Z, its distribution to rebuild it
    x.m = &z;
    x.dist = z.distribution();
  }
  TESSEL_ASSERT(x.m == &z);
  if (needed && !x.in_memory) restore(x);
  if (!needed && x.in_memory) release(x);
}

void InputSpill::release(Slot& x) {
  if (!x.on_disk) {
    x.on_disk = true;  // from here on the destructor removes the file, also a partial one
    ctx_.agree([&] {
      const std::string err = write_local(*x.m, x.path, written_);
      TESSEL_CHECK(err.empty(), InputError, "--spill: cannot write ", x.name, " to '", x.path,
                   "': ", err);
    });
  }
  *x.m = sparse::BlockSparseMatrix<double>();  // its storage (and memory charge) released
  x.in_memory = false;
}

void InputSpill::restore(Slot& x) {
  sparse::BlockSparseMatrix<double> m(ctx_, x.dist, x.name);
  ctx_.agree([&] {
    const std::string err = read_local(m, x.path, read_);
    TESSEL_CHECK(err.empty(), InputError, "--spill: cannot read ", x.name, " back from '", x.path,
                 "': ", err);
  });
  m.finalize();  // every block is local: no values move; the norms and the CSR order
  *x.m = std::move(m);
  x.in_memory = true;
}

}  // namespace tessel::app

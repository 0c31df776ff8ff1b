// Checkpoint files: a .npy of the matrices side by side (the collective MPI-IO of npy.cpp and
// comm/file.cpp), then a text record and an end marker; written to FILE.tmp and renamed.
#include "tessel/io/checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <sstream>

#include "npy_share.hpp"
#include "tessel/comm/file.hpp"
#include "tessel/core/error.hpp"
#include "tessel/io/npy.hpp"
#include "tessel/io/path.hpp"

namespace tessel::io {
namespace {

using detail::concat;

constexpr char kMarker[] = "TSLCKPT1";  // the last 8 bytes of every checkpoint
constexpr std::int64_t kTail = 16 + 8;  // record length (16 hex digits) + marker
constexpr const char* kFormat = "tessel-checkpoint 1";

std::uint64_t mix(std::uint64_t z) {  // splitmix64's finalizer
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// "key value\n" lines; keys without spaces, values without newlines.
void put_line(std::string& out, const std::string& key, const std::string& value) {
  TESSEL_CHECK(!key.empty() && key.find_first_of(" \n") == std::string::npos &&
                   value.find('\n') == std::string::npos,
               InputError, "checkpoint record: key '", key, "' or its value '", value,
               "' is not one line (expected a key without spaces)");
  out += key;
  out += ' ';
  out += value;
  out += '\n';
}

std::string record_text(const CheckpointRecord& r, std::int64_t n,
                        const std::vector<std::uint64_t>& hashes) {
  std::string t = std::string(kFormat) + "\n";
  put_line(t, "kind", r.kind);
  put_line(t, "n", std::to_string(n));
  put_line(t, "matrices", std::to_string(hashes.size()));
  for (std::size_t k = 0; k < hashes.size(); ++k) put_line(t, concat("hash.", k), hex64(hashes[k]));
  for (const auto& [k, v] : r.options) put_line(t, "option." + k, v);
  for (const auto& [k, v] : r.state) put_line(t, "state." + k, v);
  put_line(t, "end", "");
  return t;
}

// The record of a checkpoint's text; `hashes` and `n` from its header lines.
CheckpointRecord parse_record(const std::string& text, const std::string& path, std::int64_t* n,
                              std::vector<std::uint64_t>* hashes) {
  std::istringstream in(text);
  std::string line;
  auto bad = [&](const std::string& why) {
    return InputError(concat("checkpoint ", path, " is malformed: ", why));
  };
  if (!std::getline(in, line) || line != kFormat)
    throw bad(concat("first line '", line, "', expected '", kFormat, "'"));
  CheckpointRecord r;
  std::int64_t matrices = -1;
  bool end = false;
  while (std::getline(in, line)) {
    const auto sp = line.find(' ');
    if (sp == std::string::npos) throw bad(concat("line '", line, "' is not 'key value'"));
    const std::string key = line.substr(0, sp), value = line.substr(sp + 1);
    char* e = nullptr;
    if (end) throw bad("text after the 'end' line");
    if (key == "end") {
      end = true;
    } else if (key == "kind") {
      r.kind = value;
    } else if (key == "n" || key == "matrices") {
      const long long v = std::strtoll(value.c_str(), &e, 10);
      if (value.empty() || *e || v < 0) throw bad(concat(key, " '", value, "' is not a count"));
      (key == "n" ? *n : matrices) = v;
    } else if (key.rfind("hash.", 0) == 0) {
      const unsigned long long h = std::strtoull(value.c_str(), &e, 16);
      if (value.size() != 16 || *e) throw bad(concat(key, " '", value, "' is not 16 hex digits"));
      if (key != concat("hash.", hashes->size())) throw bad(concat("unexpected ", key));
      hashes->push_back(h);
    } else if (key.rfind("option.", 0) == 0) {
      r.options.emplace_back(key.substr(7), value);
    } else if (key.rfind("state.", 0) == 0) {
      r.state.emplace_back(key.substr(6), value);
    } else {
      throw bad(concat("unknown key '", key, "'"));
    }
  }
  if (!end) throw bad("no 'end' line");
  if (matrices < 1 || static_cast<std::int64_t>(hashes->size()) != matrices)
    throw bad(concat(hashes->size(), " hashes for ", matrices, " matrices"));
  return r;
}

// Rank 0's view of the file: size, npy header bytes, record text.
struct Raw {
  std::int64_t size = 0;
  std::string header, record;
};

Raw read_raw(const std::string& path) {
  Raw raw;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(concat("cannot read checkpoint ", path, ": ", std::strerror(errno)));
  if (S_ISDIR(st.st_mode))
    throw InputError(concat("cannot read checkpoint ", path, ": it is a directory"));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(concat("cannot read checkpoint ", path, ": ", std::strerror(errno)));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  raw.size = static_cast<std::int64_t>(st.st_size);
  auto read_at = [&](std::int64_t off, std::int64_t len) {
    std::string b(static_cast<std::size_t>(len), '\0');
    if (std::fseek(f, static_cast<long>(off), SEEK_SET) != 0 ||
        std::fread(b.data(), 1, b.size(), f) != b.size())
      throw InputError(concat("cannot read checkpoint ", path, ": short read at byte ", off));
    return b;
  };
  const std::string prefix = read_at(0, std::min<std::int64_t>(12, raw.size));
  const std::int64_t hlen = npy_header_length(prefix, "checkpoint " + path);
  if (raw.size < hlen + kTail)
    throw InputError(concat("checkpoint ", path, " is truncated: ", raw.size,
                            " bytes, less than its ", hlen, "-byte header and ", kTail,
                            "-byte end marker"));
  raw.header = read_at(0, hlen);
  const std::string tail = read_at(raw.size - kTail, kTail);
  if (tail.compare(16, 8, kMarker) != 0)
    throw InputError(concat("checkpoint ", path,
                            " is truncated or not a tessel checkpoint: it does "
                            "not end with the marker '",
                            kMarker, "'"));
  char* e = nullptr;
  const std::string lens = tail.substr(0, 16);
  const long long len = std::strtoll(lens.c_str(), &e, 16);
  if (*e || len <= 0 || len > raw.size - hlen - kTail)
    throw InputError(concat("checkpoint ", path, " is malformed: record length '", lens,
                            "' (file of ", raw.size, " bytes)"));
  raw.record = read_at(raw.size - kTail - len, len);
  return raw;
}

void bcast_string(const comm::Comm& c, std::string& s) {
  std::int64_t len = static_cast<std::int64_t>(s.size());
  c.bcast(&len, 1, 0);
  s.resize(static_cast<std::size_t>(len));
  if (len > 0) c.bcast(s.data(), static_cast<int>(len), 0);
}

// Best effort, rank 0: fsync of the directory holding `path`, so the rename itself is on the
// device (POSIX leaves it in the directory's cache otherwise). Some file systems refuse to
// open or sync a directory (EINVAL); the checkpoint is then as durable as they make it.
void sync_directory_of(const std::string& path) {
  const int fd = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

const std::string& CheckpointRecord::state_value(const std::string& key,
                                                 const std::string& path) const {
  for (const auto& [k, v] : state)
    if (k == key) return v;
  throw InputError(concat("checkpoint ", path, " is malformed: no state.", key,
                          " (written by another "
                          "kind of run or version)"));
}

std::string hex64(std::uint64_t h) {
  char b[20];
  std::snprintf(b, sizeof b, "%016" PRIx64, h);
  return b;
}

std::uint64_t content_hash(const comm::Comm& c, const dense::DistMatrix<double>& x) {
  const comm::MatrixShare s = share_of(x.layout(), x.rank(), x.ld(), false);
  std::uint64_t h = 0;
  for (const auto& cr : s.col_runs)
    for (std::int64_t j = 0; j < cr.len; ++j)
      for (const auto& rr : s.row_runs)
        for (std::int64_t i = 0; i < rr.len; ++i) {
          const double v = x.data()[(cr.local + j) * x.ld() + rr.local + i];
          std::uint64_t bits;
          std::memcpy(&bits, &v, sizeof bits);
          const auto pos = static_cast<std::uint64_t>((cr.begin + j) * s.rows + rr.begin + i);
          h ^= mix(bits ^ mix(pos));  // order-free: the same for every layout
        }
  std::int64_t v = static_cast<std::int64_t>(h);
  c.allreduce(&v, 1, MPI_BXOR);
  return static_cast<std::uint64_t>(v);
}

std::uint64_t content_hash(const Context& ctx, const dense::DistMatrix<double>& x) {
  return content_hash(ctx.comm(), x);
}

void write_checkpoint(const comm::Comm& c, const std::string& path, const CheckpointRecord& record,
                      const std::vector<const dense::DistMatrix<double>*>& mats) {
  const std::int64_t n = mats.empty() ? 0 : mats[0]->rows();
  agree_on(c, [&] {
    TESSEL_CHECK(!path.empty(), InputError, "write_checkpoint: empty path");
    TESSEL_CHECK(!mats.empty(), InputError, "write_checkpoint ", path, ": no matrices");
    for (const auto* m : mats)
      TESSEL_CHECK(m->rows() == n && m->cols() == n, DimensionMismatch, "write_checkpoint ", path,
                   ": a ", m->rows(), " x ", m->cols(), " matrix beside a ", n, " x ", n, " one");
  });
  std::vector<std::uint64_t> hashes;
  for (const auto* m : mats) hashes.push_back(content_hash(c, *m));
  const auto k = static_cast<std::int64_t>(mats.size());
  const std::string header = make_npy_header("<f8", true, n, k * n);
  const std::int64_t data = static_cast<std::int64_t>(header.size());
  const std::int64_t end = data + k * n * n * static_cast<std::int64_t>(sizeof(double));
  std::string text;
  agree_on(c, [&] { text = record_text(record, n, hashes); });
  char len[24];
  std::snprintf(len, sizeof len, "%016llx", static_cast<unsigned long long>(text.size()));
  text += len;
  text += kMarker;
  const std::string tmp = path + ".tmp";
  try {
    // Every collective step agrees, so all ranks leave together. Rank 0's own writes (the
    // header, the record) are agreed on with the rename.
    comm::File f = comm::File::create_write(c, tmp);
    std::exception_ptr rank0_failed;
    if (c.rank() == 0) {
      try {
        f.write_at(0, header.data(), data);
        f.write_at(end, text.data(), static_cast<std::int64_t>(text.size()));
      } catch (const Error&) { rank0_failed = std::current_exception(); }
    }
    for (std::int64_t j = 0; j < k; ++j) {
      const auto* m = mats[static_cast<std::size_t>(j)];
      f.write_all(data + j * n * n * static_cast<std::int64_t>(sizeof(double)),
                  share_of(m->layout(), m->rank(), m->ld(), false), m->data());
    }
    // The data on the device before the rename publishes the file: a crash after it (of a
    // node, not only of a rank) cannot leave a checkpoint whose bytes were never written.
    f.sync();
    f.close();  // collective and agreed: every rank has written its part (the barrier)
    agree_on(c, [&] {
      if (rank0_failed) std::rethrow_exception(rank0_failed);
      if (c.rank() == 0) {
        if (std::rename(tmp.c_str(), path.c_str()) != 0)
          throw InputError(concat("cannot rename ", tmp, " to ", path, ": ", std::strerror(errno)));
        sync_directory_of(path);
      }
    });
  } catch (const Error& e) {
    if (c.rank() == 0) std::remove(tmp.c_str());
    throw InputError(concat("cannot write checkpoint ", path, ": ", e.what()));
  }
}

CheckpointData read_checkpoint(
    const Context& ctx, const std::string& path, const std::string& kind,
    const std::function<layout::Layout(std::int64_t rows, std::int64_t cols)>& make_layout) {
  Raw raw;
  ctx.agree([&] {
    if (ctx.rank() == 0) raw = read_raw(path);
  });
  ctx.comm().bcast(&raw.size, 1, 0);
  bcast_string(ctx.comm(), raw.header);
  bcast_string(ctx.comm(), raw.record);
  // Every rank parses the same bytes: the same result, the same error.
  CheckpointData out;
  std::int64_t n = -1;
  std::vector<std::uint64_t> hashes;
  NpyHeader h;
  layout::Layout lay;
  ctx.agree([&] {
    out.record = parse_record(raw.record, path, &n, &hashes);
    TESSEL_CHECK(out.record.kind == kind, InputError, "checkpoint ", path, " was written by '",
                 out.record.kind, "', expected '", kind, "'");
    h = parse_npy_header(raw.header, "checkpoint " + path);
    const auto k = static_cast<std::int64_t>(hashes.size());
    TESSEL_CHECK(h.descr == "<f8" && h.fortran_order && h.shape.size() == 2 && h.rows() == n &&
                     h.cols() == k * n,
                 InputError, "checkpoint ", path, " is malformed: its array is ", h.descr, " of ",
                 h.rows(), " x ", h.cols(), (h.fortran_order ? "" : " in C order"),
                 ", expected <f8 of ", n, " x ", k * n, " in Fortran order");
    const std::int64_t need =
        h.data_offset + k * n * n * 8 + static_cast<std::int64_t>(raw.record.size()) + kTail;
    TESSEL_CHECK(raw.size == need, InputError, "checkpoint ", path,
                 " is truncated or torn: ", raw.size, " bytes, expected ", need, " (header, ", k,
                 " matrices of ", n, " x ", n, ", record)");
    lay = make_layout(n, n);
    TESSEL_CHECK(lay.rows() == n && lay.cols() == n && lay.comm_size() == ctx.size(),
                 LayoutMismatch, "read_checkpoint ", path, ": make_layout(", n, ", ", n,
                 ") gave a ", lay.rows(), " x ", lay.cols(), " layout over ", lay.comm_size(),
                 " ranks (context: ", ctx.size(), ")");
  });
  comm::File f = comm::File::open_read(ctx.comm(), path);
  for (std::size_t j = 0; j < hashes.size(); ++j) {
    dense::DistMatrix<double> x(ctx, lay);
    f.read_all(h.data_offset + static_cast<std::int64_t>(j) * n * n * 8,
               share_of(lay, ctx.rank(), x.ld(), false), x.data());
    out.matrices.push_back(std::move(x));
  }
  f.close();
  for (std::size_t j = 0; j < hashes.size(); ++j) {
    const std::uint64_t got = content_hash(ctx, out.matrices[j]);
    TESSEL_CHECK(got == hashes[j], InputError, "checkpoint ", path, " is corrupted: matrix ", j,
                 " hashes to ", hex64(got), ", its record says ", hex64(hashes[j]));
  }
  return out;
}

void check_checkpoint_options(const std::string& path, const CheckpointRecord& stored,
                              const CheckpointRecord::Pairs& given) {
  for (const auto& [k, v] : given) {
    const std::string* was = nullptr;
    for (const auto& [sk, sv] : stored.options)
      if (sk == k) was = &sv;
    TESSEL_CHECK(was, InputError, "checkpoint ", path, " does not record option ", k, " (given ", v,
                 "): written by another kind of run or version");
    TESSEL_CHECK(
        *was == v, InputError, "checkpoint ", path, ": option ", k, " was '", *was,
        "' when it was written, now '", v,
        "': restart with the same options, ranks and input (or start afresh without --restart)");
  }
}

}  // namespace tessel::io

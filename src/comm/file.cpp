#include "tessel/comm/file.hpp"
#include "tessel/core/build.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <random>
#include <utility>

#include "tessel/comm/agree.hpp"
#include "pieces.hpp"
#include "poll.hpp"

namespace tessel::comm {

std::string temp_file_name(const Comm& c, const std::string& path) {
  std::int64_t token[2] = {0, 0};
  if (c.rank() == 0) {
    std::random_device rd;
    token[0] = static_cast<std::int64_t>(::getpid());
    token[1] = static_cast<std::int64_t>(rd());
  }
  c.bcast(token, 2, 0);
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, "%lld.%08x", static_cast<long long>(token[0]),
                static_cast<unsigned>(token[1]));
  return path + ".tmp." + suffix;
}

namespace {

using tessel::detail::checked_int;

/// Frees an intermediate (uncommitted) derived type at scope exit.
struct TypeGuard {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  TypeGuard() = default;
  TypeGuard(const TypeGuard&) = delete;
  TypeGuard& operator=(const TypeGuard&) = delete;
  ~TypeGuard() {
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
  }
};

/// Visits the pieces of share `s` in file order: `f(file, local, stride, len)` for `len`
/// elements at consecutive file positions from element `file` (relative to the start of the
/// matrix data), held in the local column-major buffer at element `local`, `local + stride`,
/// ... A column-major file is traversed column by column, each column's row runs in order
/// (local stride 1); a row-major file row by row, each row's column runs in order (local
/// stride ld). File positions increase strictly from piece to piece.
template <class F>
void for_each_piece(const MatrixShare& s, F&& f) {
  const bool cm = !s.row_major_file;
  const auto& outer = cm ? s.col_runs : s.row_runs;
  const auto& inner = cm ? s.row_runs : s.col_runs;
  const std::int64_t file_outer = cm ? s.rows : s.cols;  // file elements per outer index
  const std::int64_t local_outer = cm ? s.ld : 1;        // local elements per outer index
  const std::int64_t local_inner = cm ? 1 : s.ld;        // local elements per inner index
  for (const auto& o : outer)
    for (std::int64_t k = 0; k < o.len; ++k)
      for (const auto& r : inner)
        if (r.len > 0)
          f((o.begin + k) * file_outer + r.begin,
            (o.local + k) * local_outer + r.local * local_inner, local_inner, r.len);
}

/// True when the pieces of `s`, in file order, are already one contiguous run of the local
/// buffer from its start: the buffer can then be handed to MPI-IO as it is.
bool local_is_file_order(const MatrixShare& s) {
  std::int64_t next = 0;
  bool ok = true;
  for_each_piece(s, [&](std::int64_t, std::int64_t local, std::int64_t stride, std::int64_t len) {
    if (local != next || (stride != 1 && len > 1)) ok = false;
    next = local + len;
  });
  return ok;
}

/// Copies the elements of share `s` between the local buffer and `packed` (contiguous, in
/// file order): to `packed` when `to_packed`, back to `local` otherwise.
void copy_packed(const MatrixShare& s, unsigned char* local, unsigned char* packed, std::int64_t es,
                 bool to_packed) {
  std::size_t pos = 0;
  const std::size_t e = static_cast<std::size_t>(es);
  for_each_piece(s, [&](std::int64_t, std::int64_t off, std::int64_t stride, std::int64_t len) {
    unsigned char* l = local + static_cast<std::size_t>(off) * e;
    if (stride == 1 || len == 1) {
      const std::size_t bytes = static_cast<std::size_t>(len) * e;
      if (to_packed)
        std::memcpy(packed + pos, l, bytes);
      else
        std::memcpy(l, packed + pos, bytes);
      pos += bytes;
      return;
    }
    const std::size_t step = static_cast<std::size_t>(stride) * e;
    for (std::int64_t k = 0; k < len; ++k, l += step, pos += e) {
      if (to_packed)
        std::memcpy(packed + pos, l, e);
      else
        std::memcpy(l, packed + pos, e);
    }
  });
}

/// `n` elements of type `elem` (`es` bytes) stored contiguously, as (count, type): `n` of
/// `elem` when `n` fits an int, else one contiguous derived type (kept alive in `holder`).
std::pair<int, MPI_Datatype> contiguous(std::int64_t n, MPI_Datatype elem, std::int64_t es,
                                        Datatype& holder, std::int64_t lim) {
  lim = message_limit(lim);
  if (n <= lim) return {static_cast<int>(n), elem};
  const std::int64_t kChunk = std::min<std::int64_t>(std::int64_t{1} << 30, lim);
  const std::int64_t q = n / kChunk, r = n % kChunk;
  TypeGuard chunk;
  check_mpi(MPI_Type_contiguous(static_cast<int>(kChunk), elem, &chunk.t), "MPI_Type_contiguous");
  int lens[2] = {checked_int(q, "number of chunks"), static_cast<int>(r)};
  MPI_Aint disps[2] = {0, static_cast<MPI_Aint>(q * kChunk * es)};
  MPI_Datatype types[2] = {chunk.t, elem};
  MPI_Datatype t = MPI_DATATYPE_NULL;
  check_mpi(MPI_Type_create_struct(r > 0 ? 2 : 1, lens, disps, types, &t),
            "MPI_Type_create_struct");
  holder = Datatype(t);
  return {1, holder.raw()};
}

}  // namespace

// ---------------------------------------------------------------- Datatype
Datatype::Datatype(MPI_Datatype t) : t_(t) {
  int rc = MPI_Type_commit(&t_);
  if (rc != MPI_SUCCESS) {
    MPI_Type_free(&t_);
    check_mpi(rc, "MPI_Type_commit");
  }
}

Datatype& Datatype::operator=(Datatype&& o) noexcept {
  if (this != &o) {
    if (t_ != MPI_DATATYPE_NULL) MPI_Type_free(&t_);
    t_ = o.t_;
    o.t_ = MPI_DATATYPE_NULL;
  }
  return *this;
}

Datatype::~Datatype() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (t_ != MPI_DATATYPE_NULL && !finalized) MPI_Type_free(&t_);
}

std::int64_t Datatype::size() const {
  if (t_ == MPI_DATATYPE_NULL) return 0;
  MPI_Count s = 0;
  check_mpi(MPI_Type_size_x(t_, &s), "MPI_Type_size_x");
  return static_cast<std::int64_t>(s);
}

// ---------------------------------------------------------------- MatrixShare
std::int64_t MatrixShare::elements() const {
  std::int64_t r = 0, c = 0;
  for (const auto& v : row_runs) r += v.len;
  for (const auto& v : col_runs) c += v.len;
  return r * c;
}

Datatype share_file_type(const MatrixShare& s, MPI_Datatype elem, std::int64_t es,
                         std::int64_t max_block) {
  const std::int64_t lim = message_limit(max_block);
  // One level only: a flat list of (byte offset, element count) blocks of the element type.
  // ROMIO (MPICH before 4.1) mis-flattens nested types built from resized subtypes.
  std::vector<int> lens;
  std::vector<MPI_Aint> disps;
  std::int64_t end = -1;  // file element just past the last block
  for_each_piece(s, [&](std::int64_t file, std::int64_t, std::int64_t, std::int64_t len) {
    while (len > 0) {
      if (file == end && lens.back() < lim) {  // continues the last block
        const std::int64_t add = std::min<std::int64_t>(len, lim - lens.back());
        lens.back() += static_cast<int>(add);
        file += add;
        len -= add;
      } else {
        const std::int64_t take = std::min<std::int64_t>(len, lim);
        lens.push_back(static_cast<int>(take));
        disps.push_back(static_cast<MPI_Aint>(file * es));
        file += take;
        len -= take;
      }
      end = file;
    }
  });
  TypeGuard blocks;
  check_mpi(MPI_Type_create_hindexed(
                checked_int(static_cast<std::int64_t>(lens.size()), "number of file blocks"),
                lens.data(), disps.data(), elem, &blocks.t),
            "MPI_Type_create_hindexed");
  MPI_Datatype t = MPI_DATATYPE_NULL;
  check_mpi(MPI_Type_create_resized(blocks.t, 0, static_cast<MPI_Aint>(s.rows * s.cols * es), &t),
            "MPI_Type_create_resized");
  return Datatype(t);
}

// ---------------------------------------------------------------- File
File::File(const Comm& c, const std::string& path, int amode, const char* what)
    : comm_(c.raw()), max_items_(c.max_message_items()), ledger_(c.ledger()), path_(path) {
  MPI_File fh = MPI_FILE_NULL;
  // The same on every rank (a build property), before any message: a collective failure.
  if constexpr (kSimulatedMpi)
    throw InputError(detail::concat(
        "cannot open ", path, " for ", what,
        ": this is tessel's SMPI build: SimGrid's SMPI does MPI-IO on disks modelled in the "
        "platform, and lacks calls tessel's transfers use (MPI_File_iread_all, "
        "MPI_File_iwrite_all, MPI_Get_elements_x): file input and output need tessel built "
        "against a real MPI"));
  // Arrival barrier (poll.hpp): MPI_File_open is blocking and collective (ROMIO duplicates
  // the communicator and reduces inside) and busy-polls under MPICH while it waits.
  arrive(c.raw());
  int rc = MPI_File_open(c.raw(), path.c_str(), amode, MPI_INFO_NULL, &fh);
  if (rc == MPI_SUCCESS) {
    fh_ = fh;
    MPI_File_set_errhandler(fh_, MPI_ERRORS_RETURN);
  }
  // If the open failed on some ranks only, the ranks that opened the file cannot close it
  // (MPI_File_close is collective), so the handle is dropped; this needs a file system that
  // shows different ranks different things.
  try {
    agree_on(c, [&] {
      if (rc != MPI_SUCCESS)
        throw InputError(
            detail::concat("cannot open ", path, " for ", what, ": ", mpi_error_string(rc)));
    });
  } catch (...) {
    fh_ = MPI_FILE_NULL;
    throw;
  }
}

File File::open_read(const Comm& c, const std::string& path) {
  return File(c, path, MPI_MODE_RDONLY, "reading");
}

File File::create_write(const Comm& c, const std::string& path) {
  // RDWR rather than WRONLY: read-modify-write of holes (data sieving) needs read access.
  File f(c, path, MPI_MODE_CREATE | MPI_MODE_RDWR, "writing");
  f.set_size(0);
  return f;
}

File File::create_new(const Comm& c, const std::string& path) {
  return File(c, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, "writing");
}

File::File(File&& o) noexcept
    : fh_(o.fh_),
      comm_(o.comm_),
      max_items_(o.max_items_),
      ledger_(o.ledger_),
      path_(std::move(o.path_)) {
  o.fh_ = MPI_FILE_NULL;
}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    release();
    fh_ = o.fh_;
    comm_ = o.comm_;
    max_items_ = o.max_items_;
    ledger_ = o.ledger_;
    path_ = std::move(o.path_);
    o.fh_ = MPI_FILE_NULL;
  }
  return *this;
}

File::~File() { release(); }

void File::release() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // A peer that left an exchange with an error never closes: leak rather than hang.
  bool peer_left = std::uncaught_exceptions() > uncaught_ && failure_pending(comm_);
  if (fh_ != MPI_FILE_NULL && !finalized && !peer_left) {
    // Arrival barrier as in close(); a failure notice there also leaks the handle.
    try {
      arrive(comm_);
    } catch (...) { peer_left = true; }
    if (!peer_left) MPI_File_close(&fh_);
  }
  fh_ = MPI_FILE_NULL;
}

void File::close() {
  if (fh_ == MPI_FILE_NULL) return;
  // Arrival barrier (poll.hpp): MPI_File_close is blocking and collective (ROMIO: a barrier
  // inside) and busy-polls under MPICH while it waits for the last rank.
  arrive(comm_);
  int rc = MPI_File_close(&fh_);
  fh_ = MPI_FILE_NULL;
  agree_on(Comm(comm_, ledger_), [&] {
    if (rc != MPI_SUCCESS)
      throw InputError(detail::concat("cannot close ", path_, ": ", mpi_error_string(rc)));
  });
}

std::int64_t File::size() const {
  TESSEL_CHECK(fh_ != MPI_FILE_NULL, Error, "file ", path_, " is not open");
  MPI_Offset s = 0;
  check_mpi(MPI_File_get_size(fh_, &s), "MPI_File_get_size");
  return static_cast<std::int64_t>(s);
}

void File::set_size(std::int64_t bytes) {
  // Arrival barrier (poll.hpp): MPI_File_set_size is collective (ROMIO: an allreduce of the
  // sizes and a barrier inside) and busy-polls under MPICH while it waits for the last rank.
  arrive(comm_);
  int rc = MPI_File_set_size(fh_, static_cast<MPI_Offset>(bytes));
  agree_on(Comm(comm_, ledger_), [&] {
    if (rc != MPI_SUCCESS)
      throw InputError(
          detail::concat("cannot resize ", path_, " to ", bytes, " bytes: ", mpi_error_string(rc)));
  });
}

void File::sync() {
  TESSEL_CHECK(fh_ != MPI_FILE_NULL, Error, "file ", path_, " is not open");
  // Arrival barrier (poll.hpp): MPI_File_sync is collective and blocking.
  arrive(comm_);
  int rc = MPI_File_sync(fh_);
  agree_on(Comm(comm_, ledger_), [&] {
    if (rc != MPI_SUCCESS)
      throw InputError(detail::concat("cannot sync ", path_, ": ", mpi_error_string(rc)));
  });
}

void File::read_at(std::int64_t offset, void* buf, std::int64_t bytes) const {
  TESSEL_CHECK(fh_ != MPI_FILE_NULL, Error, "file ", path_, " is not open");
  MPI_Status st;
  int rc = MPI_File_read_at(fh_, static_cast<MPI_Offset>(offset), buf,
                            checked_int(bytes, "read size"), MPI_BYTE, &st);
  if (rc != MPI_SUCCESS)
    throw InputError(detail::concat("cannot read ", path_, ": ", mpi_error_string(rc)));
  int got = 0;
  MPI_Get_count(&st, MPI_BYTE, &got);
  TESSEL_CHECK(got == bytes, InputError, "short read of ", path_, ": ", got, " of ", bytes,
               " bytes at offset ", offset);
}

void File::write_at(std::int64_t offset, const void* buf, std::int64_t bytes) const {
  TESSEL_CHECK(fh_ != MPI_FILE_NULL, Error, "file ", path_, " is not open");
  MPI_Status st;
  int rc = MPI_File_write_at(fh_, static_cast<MPI_Offset>(offset), buf,
                             checked_int(bytes, "write size"), MPI_BYTE, &st);
  if (rc != MPI_SUCCESS)
    throw InputError(detail::concat("cannot write ", path_, ": ", mpi_error_string(rc)));
  int put = 0;
  MPI_Get_count(&st, MPI_BYTE, &put);
  TESSEL_CHECK(put == bytes, InputError, "short write to ", path_, ": ", put, " of ", bytes,
               " bytes at offset ", offset);
}

void File::share_io(std::int64_t offset, const MatrixShare& s, void* local, MPI_Datatype elem,
                    std::int64_t elem_size, bool write) {
  // Open and closed together on every rank (both agreed), so this holds on all or none.
  TESSEL_CHECK(fh_ != MPI_FILE_NULL, Error, "file ", path_, " is not open");
  const Comm c(comm_, ledger_);
  const std::int64_t n = s.elements();
  // One agreement, at the end: a rank that fails on the way still makes every collective
  // call (with a plain view and 0 items), so no rank waits on a peer that left, and the
  // failure is reported on every rank afterwards. (Each agreement is a blocking allreduce,
  // which MPICH busy-polls; with ranks oversubscribed each one costs tens of ms.)
  std::exception_ptr failed;
  Datatype ftype, mtype_holder;
  // The memory side is always contiguous, in file order: the local buffer itself when it
  // already is (e.g. whole columns with no padding), else a packed copy. MPI-IO then never
  // walks a noncontiguous memory type (which ROMIO in MPICH before 4.1 gets wrong).
  std::unique_ptr<unsigned char[]> packed;
  void* buf = local;
  std::pair<int, MPI_Datatype> mem{0, elem};
  // Step 1: the types and the packed copy. A rank with nothing to move keeps a plain view
  // and moves 0 items (a zero-size file type trips some MPI-IO implementations).
  try {
    if (n > 0) {
      ftype = share_file_type(s, elem, elem_size, max_items_);
      mem = contiguous(n, elem, elem_size, mtype_holder, max_items_);
      if (!local_is_file_order(s)) {
        const std::int64_t bytes = n * elem_size;
        packed.reset(new (std::nothrow) unsigned char[static_cast<std::size_t>(bytes)]);
        TESSEL_CHECK(packed, Error, "cannot allocate ", bytes, " bytes to stage ", n,
                     " elements for ", path_);
        if (write)
          copy_packed(s, static_cast<unsigned char*>(local), packed.get(), elem_size, true);
        buf = packed.get();
      }
    }
  } catch (const Error&) {
    failed = std::current_exception();
    mem = {0, elem};
    buf = local;
  }
  // Step 2: the view (collective on every rank; MPI-IO may communicate here). Arrival barrier
  // first, polled: the packing above takes different times on different ranks, and a
  // blocking MPI_File_set_view busy-polls under MPICH while it waits for the last one.
  arrive(comm_);
  const bool typed = !failed && n > 0;
  int rc_set = MPI_File_set_view(fh_, static_cast<MPI_Offset>(offset), elem,
                                 typed ? ftype.raw() : elem, "native", MPI_INFO_NULL);
  if (rc_set != MPI_SUCCESS) mem = {0, elem};  // take part in the transfer, move nothing
  // Step 3: the collective transfer.
  // Posted nonblocking and waited for by polling with a short sleep: MPICH busy-polls inside
  // a blocking MPI_File_read_all/write_all, which costs oversubscribed ranks their core.
  MPI_Status st;
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = write ? MPI_File_iwrite_all(fh_, buf, mem.first, mem.second, &req)
                 : MPI_File_iread_all(fh_, buf, mem.first, mem.second, &req);
  if (rc == MPI_SUCCESS) rc = wait_polled(req, &st);
  MPI_Count done = 0;
  if (rc == MPI_SUCCESS) MPI_Get_elements_x(&st, mem.second, &done);
  // Step 4: back to the default byte view, so read_at/write_at take byte offsets again
  // (after an arrival: ranks leave the transfer at different times, and the blocking
  // MPI_File_set_view busy-polls under MPICH while it waits for the last one).
  arrive(comm_);
  int rc_view = MPI_File_set_view(fh_, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  agree_on(c, [&] {
    if (failed) std::rethrow_exception(failed);
    if (rc_set != MPI_SUCCESS)
      throw InputError(
          detail::concat("cannot set the file view of ", path_, ": ", mpi_error_string(rc_set)));
    if (rc != MPI_SUCCESS)
      throw InputError(
          detail::concat("cannot ", write ? "write " : "read ", path_, ": ", mpi_error_string(rc)));
    if (static_cast<std::int64_t>(done) != n)
      throw InputError(detail::concat("short ", write ? "write to " : "read of ", path_, ": ",
                                      static_cast<std::int64_t>(done), " of ", n, " elements"));
    if (rc_view != MPI_SUCCESS)
      throw InputError(
          detail::concat("cannot reset the file view of ", path_, ": ", mpi_error_string(rc_view)));
    if (!write && packed)
      copy_packed(s, static_cast<unsigned char*>(local), packed.get(), elem_size, false);
  });
}

}  // namespace tessel::comm

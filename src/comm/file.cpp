#include "tessel/comm/file.hpp"

#include <climits>
#include <utility>

#include "tessel/core/context.hpp"

namespace tessel::comm {

namespace {

std::string mpi_error_string(int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) return detail::concat("MPI error ", rc);
  return std::string(msg, static_cast<std::size_t>(len));
}

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

int checked_int(std::int64_t v, const char* what) {
  TESSEL_CHECK(v >= 0 && v <= INT_MAX, Error, what, " = ", v, " exceeds the MPI int limit (",
               INT_MAX, ")");
  return static_cast<int>(v);
}

/// A run of positions along one axis.
struct Axis {
  std::vector<int> lens;
  std::vector<MPI_Aint> disps;  // bytes
};

Axis axis(const std::vector<Run>& runs, bool use_global, std::int64_t stride) {
  Axis a;
  for (const auto& r : runs) {
    if (r.len <= 0) continue;
    a.lens.push_back(checked_int(r.len, "run length"));
    a.disps.push_back(static_cast<MPI_Aint>((use_global ? r.begin : r.local) * stride));
  }
  checked_int(static_cast<std::int64_t>(a.lens.size()), "number of runs");
  return a;
}

/// Element (a, b) at byte a*sa + b*sb, for a in the runs of `inner` and b in the runs of
/// `outer`, traversed outer run by outer run, b, inner run, a. With extent > 0 the result is
/// resized to [0, extent). Returns an uncommitted type owned by the caller.
MPI_Datatype build_2d(const Axis& inner, std::int64_t sa, const Axis& outer, std::int64_t sb,
                      MPI_Datatype elem, std::int64_t es, std::int64_t extent) {
  TypeGuard base, in, in_sized, out;
  MPI_Datatype b = elem;
  if (sa != es) {  // elements along the inner axis are sa bytes apart
    check_mpi(MPI_Type_create_resized(elem, 0, static_cast<MPI_Aint>(sa), &base.t),
              "MPI_Type_create_resized");
    b = base.t;
  }
  check_mpi(MPI_Type_create_hindexed(static_cast<int>(inner.lens.size()), inner.lens.data(),
                                     inner.disps.data(), b, &in.t),
            "MPI_Type_create_hindexed");
  check_mpi(MPI_Type_create_resized(in.t, 0, static_cast<MPI_Aint>(sb), &in_sized.t),
            "MPI_Type_create_resized");
  check_mpi(MPI_Type_create_hindexed(static_cast<int>(outer.lens.size()), outer.lens.data(),
                                     outer.disps.data(), in_sized.t, &out.t),
            "MPI_Type_create_hindexed");
  MPI_Datatype result = MPI_DATATYPE_NULL;
  if (extent > 0) {
    check_mpi(MPI_Type_create_resized(out.t, 0, static_cast<MPI_Aint>(extent), &result),
              "MPI_Type_create_resized");
  } else {
    result = out.t;
    out.t = MPI_DATATYPE_NULL;
  }
  return result;
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

Datatype share_file_type(const MatrixShare& s, MPI_Datatype elem, std::int64_t es) {
  const std::int64_t extent = s.rows * s.cols * es;
  if (!s.row_major_file)  // column-major: element (i, j) at (j * rows + i) * es
    return Datatype(build_2d(axis(s.row_runs, true, es), es, axis(s.col_runs, true, s.rows * es),
                             s.rows * es, elem, es, extent));
  // row-major: element (i, j) at (i * cols + j) * es; traverse rows outer, columns inner
  return Datatype(build_2d(axis(s.col_runs, true, es), es, axis(s.row_runs, true, s.cols * es),
                           s.cols * es, elem, es, extent));
}

Datatype share_memory_type(const MatrixShare& s, MPI_Datatype elem, std::int64_t es) {
  const std::int64_t ld = s.ld;
  if (!s.row_major_file)
    return Datatype(build_2d(axis(s.row_runs, false, es), es, axis(s.col_runs, false, ld * es),
                             ld * es, elem, es, 0));
  // the same traversal as the row-major file type: rows outer, columns inner
  return Datatype(build_2d(axis(s.col_runs, false, ld * es), ld * es,
                           axis(s.row_runs, false, es), es, elem, es, 0));
}

// ---------------------------------------------------------------- File
File::File(const Comm& c, const std::string& path, int amode, const char* what)
    : comm_(c.raw()), ledger_(c.ledger()), path_(path) {
  MPI_File fh = MPI_FILE_NULL;
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
        throw InputError(detail::concat("cannot open ", path, " for ", what, ": ",
                                        mpi_error_string(rc)));
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

File::File(File&& o) noexcept
    : fh_(o.fh_), comm_(o.comm_), ledger_(o.ledger_), path_(std::move(o.path_)) {
  o.fh_ = MPI_FILE_NULL;
}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    release();
    fh_ = o.fh_;
    comm_ = o.comm_;
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
  if (fh_ != MPI_FILE_NULL && !finalized) MPI_File_close(&fh_);
  fh_ = MPI_FILE_NULL;
}

void File::close() {
  if (fh_ == MPI_FILE_NULL) return;
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
  int rc = MPI_File_set_size(fh_, static_cast<MPI_Offset>(bytes));
  agree_on(Comm(comm_, ledger_), [&] {
    if (rc != MPI_SUCCESS)
      throw InputError(detail::concat("cannot resize ", path_, " to ", bytes, " bytes: ",
                                      mpi_error_string(rc)));
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
  const Comm c(comm_, ledger_);
  const std::int64_t n = s.elements();
  Datatype ftype, mtype;
  // Step 1: the types (a rank that threw here would skip the collectives below, so agree
  // first). A rank with nothing to move keeps a plain view and moves 0 items (a zero-size
  // file type trips some MPI-IO implementations).
  agree_on(c, [&] {
    TESSEL_CHECK(fh_ != MPI_FILE_NULL, Error, "file ", path_, " is not open");
    if (n > 0) {
      ftype = share_file_type(s, elem, elem_size);
      mtype = share_memory_type(s, elem, elem_size);
    }
  });
  // Step 2: the view (collective on every rank; MPI-IO may communicate here).
  int rc_set = MPI_File_set_view(fh_, static_cast<MPI_Offset>(offset), elem,
                                 n > 0 ? ftype.raw() : elem, "native", MPI_INFO_NULL);
  agree_on(c, [&] {
    if (rc_set != MPI_SUCCESS)
      throw InputError(detail::concat("cannot set the file view of ", path_, ": ",
                                      mpi_error_string(rc_set)));
  });
  // Step 3: the collective transfer.
  MPI_Status st;
  const int count = n > 0 ? 1 : 0;
  const MPI_Datatype mt = n > 0 ? mtype.raw() : elem;
  int rc = write ? MPI_File_write_all(fh_, local, count, mt, &st)
                 : MPI_File_read_all(fh_, local, count, mt, &st);
  MPI_Count done = 0;
  if (rc == MPI_SUCCESS) MPI_Get_elements_x(&st, mt, &done);
  // Step 4: back to the default byte view, so read_at/write_at take byte offsets again.
  int rc_view = MPI_File_set_view(fh_, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  agree_on(c, [&] {
    if (rc != MPI_SUCCESS)
      throw InputError(detail::concat("cannot ", write ? "write " : "read ", path_, ": ",
                                      mpi_error_string(rc)));
    if (static_cast<std::int64_t>(done) != n)
      throw InputError(detail::concat("short ", write ? "write to " : "read of ", path_, ": ",
                                      static_cast<std::int64_t>(done), " of ", n,
                                      " elements"));
    if (rc_view != MPI_SUCCESS)
      throw InputError(detail::concat("cannot reset the file view of ", path_, ": ",
                                      mpi_error_string(rc_view)));
  });
}

}  // namespace tessel::comm

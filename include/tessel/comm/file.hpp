#pragma once
/// @file file.hpp
/// Collective MPI-IO: an RAII owner of an MPI_File, an RAII owner of derived datatypes, and
/// the file view of one rank's share of a distributed matrix stored in a file.
///
/// File I/O is not traffic between ranks: nothing here records bytes in the ledger. The
/// collective error agreements (one allreduce per checked step) are recorded as usual.
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/comm/mpi_type.hpp"

namespace tessel::comm {

/// Collective over `c` (one bcast from rank 0). A temporary file name beside `path`, the same
/// on every rank: path + ".tmp." + rank 0's pid and a random number, so that concurrent jobs
/// writing the same output do not share a temporary file.
std::string temp_file_name(const Comm& c, const std::string& path);

/// RAII owner of a committed MPI derived datatype (freed on destruction). Move-only.
class Datatype {
 public:
  Datatype() = default;
  /// Takes ownership of `t` (a derived type, not yet committed) and commits it.
  explicit Datatype(MPI_Datatype t);
  Datatype(Datatype&& o) noexcept : t_(o.t_) { o.t_ = MPI_DATATYPE_NULL; }
  Datatype& operator=(Datatype&& o) noexcept;
  Datatype(const Datatype&) = delete;
  Datatype& operator=(const Datatype&) = delete;
  ~Datatype();

  MPI_Datatype raw() const { return t_; }
  /// Bytes of data the type describes (MPI_Type_size), 0 for the null type.
  std::int64_t size() const;

 private:
  MPI_Datatype t_ = MPI_DATATYPE_NULL;
};

/// A run [begin, begin+len) of global indices held from local index `local` on.
struct Run {
  std::int64_t begin = 0, len = 0, local = 0;
};

/// One rank's share of a global `rows x cols` matrix stored in a file: the cross product of
/// `row_runs` and `col_runs` (each in increasing, non-overlapping global order), held in
/// local column-major storage with leading dimension `ld`. The file holds the matrix
/// column-major (Fortran order) or, with `row_major_file`, row-major (C order).
struct MatrixShare {
  std::int64_t rows = 0, cols = 0;
  std::vector<Run> row_runs, col_runs;
  std::int64_t ld = 1;
  bool row_major_file = false;

  /// Number of elements of the share (sum of row run lengths x sum of column run lengths).
  std::int64_t elements() const;
};

/// The file type of `s`: the elements of the share at their places in the file (offsets
/// relative to the start of the matrix data), in file order, as one flat hindexed list of
/// contiguous blocks of `elem` (`elem_size` bytes; displacements increasing, as MPI-IO
/// needs). Extent: the whole matrix. Flat on purpose: ROMIO before MPICH 4.1 mis-flattens
/// nested types built on resized subtypes.
/// Blocks hold at most `max_block` elements (INT_MAX; lower only in tests).
Datatype share_file_type(const MatrixShare& s, MPI_Datatype elem, std::int64_t elem_size,
                         std::int64_t max_block = INT_MAX);

/// An open MPI file (closed on destruction), collective over the communicator it was opened
/// on. Move-only. Every collective member agrees on failure: when it fails on any rank it
/// throws on every rank (InputError for open/read/write problems, naming the path).
class File {
 public:
  File() = default;
  /// Collective over `c`: opens an existing file read-only.
  static File open_read(const Comm& c, const std::string& path);
  /// Collective over `c`: creates (or opens and truncates to zero) a file for writing.
  static File create_write(const Comm& c, const std::string& path);
  /// Collective over `c`: creates a new file for writing; fails (on every rank) if `path`
  /// exists. One collective step fewer than create_write: nothing to truncate.
  static File create_new(const Comm& c, const std::string& path);
  File(File&& o) noexcept;
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  /// Collective: closes the file if still open (errors ignored; use close() to see them).
  /// Skipped (the handle is leaked) during stack unwinding when a failure notice is pending on
  /// the communicator (comm::notify_failure): MPI_File_close would wait for a peer that left.
  ~File();

  bool is_open() const { return fh_ != MPI_FILE_NULL; }
  const std::string& path() const { return path_; }

  /// Collective: closes the file; throws InputError on every rank if it failed on any.
  void close();
  /// Not collective: the current size of the file in bytes (throws MpiError).
  std::int64_t size() const;
  /// Collective: sets the file size in bytes (agreed).
  void set_size(std::int64_t bytes);
  /// Collective: MPI_File_sync, every rank's writes transferred to the storage device
  /// (agreed: InputError on every rank if it failed on any). Before a rename that publishes
  /// the file, so a crash of the node after it cannot leave a published file with data lost.
  void sync();
  /// Not collective: reads/writes `bytes` raw bytes at byte `offset` (independent I/O,
  /// default view). Throws InputError locally (agree in the caller) on failure or a short
  /// read/write.
  void read_at(std::int64_t offset, void* buf, std::int64_t bytes) const;
  void write_at(std::int64_t offset, const void* buf, std::int64_t bytes) const;

  /// Collective: reads this rank's share `s` of the matrix whose data starts at byte
  /// `offset` into the local buffer `local` (column-major, leading dimension s.ld). The
  /// memory side of the transfer is always contiguous: unless the share already lies in
  /// file order at the start of `local`, it goes through a packed copy (n elements) that is
  /// scattered into / gathered from `local` here, never by MPI-IO.
  template <class T>
  void read_all(std::int64_t offset, const MatrixShare& s, T* local) {
    share_io(offset, s, local, mpi_type<T>(), sizeof(T), /*write=*/false);
  }
  /// Collective: writes this rank's share `s` from `local` at byte `offset`.
  template <class T>
  void write_all(std::int64_t offset, const MatrixShare& s, const T* local) {
    share_io(offset, s, const_cast<T*>(local), mpi_type<T>(), sizeof(T), /*write=*/true);
  }

 private:
  File(const Comm& c, const std::string& path, int amode, const char* what);
  void share_io(std::int64_t offset, const MatrixShare& s, void* local, MPI_Datatype elem,
                std::int64_t elem_size, bool write);
  void release() noexcept;

  MPI_File fh_ = MPI_FILE_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;     // borrowed; the Comm given at open must outlive the File
  std::int64_t max_items_ = INT_MAX;  // most items one MPI-IO call or type block carries
  int uncaught_ = std::uncaught_exceptions();  // at construction: tells unwinding apart
  CommLedger* ledger_ = nullptr;
  std::string path_;
};

}  // namespace tessel::comm

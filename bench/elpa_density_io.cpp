#include "elpa_density_io.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "tessel/io/npy.hpp"

namespace tessel::bench::elpa_density {

namespace {

// A read-only or shared read-write mapping of a whole file, unmapped and closed at the end.
struct Mapped {
  int fd = -1;
  void* p = MAP_FAILED;
  std::size_t size = 0;
  Mapped(const std::string& path, bool write) {
    fd = ::open(path.c_str(), write ? O_RDWR : O_RDONLY);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size == 0) return;
    size = static_cast<std::size_t>(st.st_size);
    p = ::mmap(nullptr, size, write ? PROT_READ | PROT_WRITE : PROT_READ,
               write ? MAP_SHARED : MAP_PRIVATE, fd, 0);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  ~Mapped() {
    if (p != MAP_FAILED) ::munmap(p, size);
    if (fd >= 0) ::close(fd);
  }
  bool ok() const { return p != MAP_FAILED; }
  const char* bytes() const { return static_cast<const char*>(p); }
};

// The checked header of a square float64 .npy (throws tessel::InputError / std::exception).
io::NpyHeader square_header(const Mapped& m, const std::string& path, const std::string& opt) {
  const std::string name = opt + " " + path;
  const std::string prefix(m.bytes(), std::min<std::size_t>(m.size, 12));
  const auto len = io::npy_header_length(prefix, name);
  if (static_cast<std::size_t>(len) > m.size) throw std::runtime_error(name + ": truncated header");
  auto h = io::parse_npy_header(std::string(m.bytes(), static_cast<std::size_t>(len)), name);
  io::check_npy_header(h, "<f8", "float64", static_cast<std::int64_t>(m.size), name);
  if (h.shape.size() != 2 || h.rows() != h.cols() || h.rows() < 2 || h.rows() > 46340)
    throw std::runtime_error(name + " is " + std::to_string(h.rows()) + " x " +
                             std::to_string(h.cols()) + ": expected a square matrix, n >= 2");
  return h;
}

std::string open_error(const std::string& path, const std::string& opt) {
  return opt + " " + path + ": cannot read (" + std::strerror(errno) + ")";
}

}  // namespace

std::string matrix_size(const std::string& path, const std::string& opt, int* n) {
  Mapped m(path, false);
  if (!m.ok()) return open_error(path, opt);
  try {
    *n = static_cast<int>(square_header(m, path, opt).rows());
  } catch (const std::exception& e) { return e.what(); }
  return "";
}

std::string expect_size(const std::string& path, const std::string& opt, int n,
                        const std::string& fock) {
  int m = 0;
  std::string err = matrix_size(path, opt, &m);
  if (err.empty() && m != n)
    err = opt + " " + path + " is " + std::to_string(m) + " x " + std::to_string(m) +
          " but --fock " + fock + " is " + std::to_string(n) + " x " + std::to_string(n) +
          ": expected the same shape";
  return err;
}

std::string read_block_cyclic(const std::string& path, const std::string& opt, int nb,
                              const BlacsGrid& g, BlockCyclic& out) {
  Mapped m(path, false);
  if (!m.ok()) return open_error(path, opt);
  try {
    const auto h = square_header(m, path, opt);
    const long n = h.rows();
    const char* data = m.bytes() + h.data_offset;
    for (int lj = 0; lj < out.lc; ++lj) {
      const long gj = global_index(lj, nb, g.mycol, g.npcol);
      for (int li = 0; li < out.lr; ++li) {
        const long gi = global_index(li, nb, g.myrow, g.nprow);
        const long k = h.fortran_order ? gj * n + gi : gi * n + gj;
        std::memcpy(&out.at(li, lj), data + 8 * k, 8);
      }
    }
  } catch (const std::exception& e) { return e.what(); }
  return "";
}

std::string write_npy(const std::string& path, int n, int nb, const BlacsGrid& g,
                      const BlockCyclic& d) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string header = io::make_npy_header("<f8", true, n, n);
  const std::size_t size = header.size() + 8ull * n * n;
  std::string err;
  if (rank == 0) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << header;
    if (!f || (f.close(), !f) || ::truncate(path.c_str(), static_cast<off_t>(size)) != 0)
      err = "--out " + path + ": cannot write";
  }
  err = agree(err);
  if (!err.empty()) return err;
  {
    Mapped m(path, true);
    if (!m.ok() || m.size != size) {
      err = "--out " + path + ": cannot map for writing (a shared file system is needed)";
    } else {
      char* data = static_cast<char*>(m.p) + header.size();
      for (int lj = 0; lj < d.lc; ++lj) {
        const long gj = global_index(lj, nb, g.mycol, g.npcol);
        for (int li = 0; li < d.lr; ++li) {
          const long gi = global_index(li, nb, g.myrow, g.nprow);
          const double v = d.local[static_cast<std::size_t>(lj) * d.lld + li];
          std::memcpy(data + 8 * (gj * static_cast<long>(n) + gi), &v, 8);
        }
      }
      if (::msync(m.p, m.size, MS_SYNC) != 0) err = "--out " + path + ": msync failed";
    }
  }
  return agree(err);
}

std::string agree(const std::string& err) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int first = err.empty() ? nranks : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == nranks) return "";
  int len = static_cast<int>(err.size());
  MPI_Bcast(&len, 1, MPI_INT, first, MPI_COMM_WORLD);
  std::string msg = rank == first ? err : std::string(static_cast<std::size_t>(len), ' ');
  MPI_Bcast(msg.data(), len, MPI_CHAR, first, MPI_COMM_WORLD);
  return msg;
}

}  // namespace tessel::bench::elpa_density

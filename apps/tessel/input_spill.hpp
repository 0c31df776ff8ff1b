#pragma once
// `tessel density --spill DIR`: H and S (as the solver holds them, in tiles) kept on disk while
// the solver does not read them (solvers::DensityOptions::inputs_needed), and the solver's
// Z = S^-1/2 while a purification iterates (DensityOptions::park_z). Each rank writes its
// local blocks of a matrix once, to its own file in DIR, the first time the matrix is not
// needed, frees the storage, and reads it back when the solver needs it again; the files are
// removed when the InputSpill is destroyed (also when the run throws).
#include <string>

#include "tessel/core/context.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace tessel::app {

class InputSpill {
 public:
  /// Collective. Checks on every rank that `dir` is a directory this rank can write a file in
  /// (InputError naming --spill otherwise, on every rank). H and S must outlive the spill.
  InputSpill(Context& ctx, const std::string& dir, sparse::BlockSparseMatrix<double>& H,
             sparse::BlockSparseMatrix<double>& S);
  ~InputSpill();
  InputSpill(const InputSpill&) = delete;
  InputSpill& operator=(const InputSpill&) = delete;

  /// Collective (DensityOptions::inputs_needed): a matrix not needed is written (first time
  /// only) and freed; one needed and not in memory is read back. A failed write or read throws
  /// InputError on every rank, naming the file.
  void need(bool h, bool s);
  /// Collective (DensityOptions::park_z): Z not needed is written (first time only) and freed;
  /// needed, it is read back into the same object. Errors as need().
  void park(sparse::BlockSparseMatrix<double>& z, bool needed);
  /// Bytes this rank wrote and read so far (all matrices).
  double bytes_written() const { return written_; }
  double bytes_read() const { return read_; }

 private:
  struct Slot {
    sparse::BlockSparseMatrix<double>* m;
    std::string path;
    sparse::Distribution dist;  // to rebuild it
    std::string name;
    bool on_disk = false, in_memory = true;
  };
  void release(Slot& x);
  void restore(Slot& x);
  Context& ctx_;
  Slot slot_[3];  // H, S, and Z (its matrix known at the first park)
  double written_ = 0, read_ = 0;
};

}  // namespace tessel::app

#pragma once
/// @file checkpoint.hpp
/// Checkpoint files of long iterations (docs/purify.md, "Checkpoint and restart").
///
/// A checkpoint is one file: a NumPy .npy array (dtype '<f8', Fortran order, shape (n, k n):
/// the k distributed n x n matrices side by side, so `numpy.load` reads them) written with
/// the collective MPI-IO of npy.cpp, followed by a text record and an end marker:
///
///     <.npy header><n x k n doubles><record text><16 hex digits: record length>TSLCKPT1
///
/// The record is line-based ("key value"): "tessel-checkpoint 1", the kind ("purify"), the
/// number of matrices and a layout-independent hash of each, then the options that determine
/// the result ("option.<name> <value>", checked on restart) and the iteration's scalar state
/// ("state.<name> <value>"; doubles as C99 hex floats, so they read back bit for bit).
/// write_checkpoint writes `FILE.tmp` and renames it to `FILE` only after every rank has
/// written and closed it, so a crash at any moment leaves the previous `FILE` whole. A
/// truncated, torn or altered file (missing end marker, wrong length, hash mismatch) is
/// refused by read_checkpoint with an InputError on every rank. This is the container only:
/// each solver serialises its own state into the record (solvers/purify_checkpoint.hpp).
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/core/context.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/layout/layout.hpp"

namespace tessel::io {

/// The text part of a checkpoint: ordered (key, value) pairs. Keys: no spaces; values: one
/// line (no newline).
struct CheckpointRecord {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  std::string kind;  ///< what iteration wrote it, e.g. "purify"
  Pairs options;     ///< what determines the result: compared on restart
  Pairs state;       ///< the iteration's scalar state

  /// Pure. The state value of `key`; InputError naming `path` when it is missing.
  const std::string& state_value(const std::string& key, const std::string& path) const;
};

/// A checkpoint read back: its record and its matrices (in the caller's layout).
struct CheckpointData {
  CheckpointRecord record;
  std::vector<dense::DistMatrix<double>> matrices;
};

/// Collective over `c`: the ranks that hold the parts of `mats` (each x.rank() is this rank's
/// place in the matrix layout, which may span more ranks than `c`: ranks outside `c` must own
/// nothing). Writes `path + ".tmp"` (one collective MPI-IO write per matrix; rank 0 of `c`
/// writes the .npy header and the record), closes it on every rank (agreed: a barrier) and
/// then rank 0 renames it to `path`. All matrices must be n x n. On any failure every rank of
/// `c` throws InputError naming `path`; the temporary file is removed, `path` is untouched.
void write_checkpoint(const comm::Comm& c, const std::string& path, const CheckpointRecord& record,
                      const std::vector<const dense::DistMatrix<double>*>& mats);

/// Collective over ctx. Reads a checkpoint of kind `kind` written by write_checkpoint: the
/// record (rank 0 reads it and broadcasts it) and every matrix into make_layout(n, n) (one
/// collective MPI-IO read each), and checks each matrix against its stored hash. Throws
/// InputError on every rank, naming `path`, for a missing, truncated or malformed file, a
/// different kind or format version, or a hash mismatch.
CheckpointData read_checkpoint(
    const Context& ctx, const std::string& path, const std::string& kind,
    const std::function<layout::Layout(std::int64_t rows, std::int64_t cols)>& make_layout);

/// Pure. Throws InputError "checkpoint P: option --method was canonical when it was written,
/// now trs4: restart with the same options (or start afresh without --restart)" for the first
/// option of `given` whose stored value differs or is missing (options only stored are
/// ignored). Every rank holds the same record, so every rank throws alike.
void check_checkpoint_options(const std::string& path, const CheckpointRecord& stored,
                              const CheckpointRecord::Pairs& given);

/// Collective over `c` (as write_checkpoint). A 64-bit hash of x's values and their global
/// positions, the same for every layout of the same matrix (the identity of an input).
std::uint64_t content_hash(const comm::Comm& c, const dense::DistMatrix<double>& x);
/// Collective over ctx: content_hash over ctx.comm().
std::uint64_t content_hash(const Context& ctx, const dense::DistMatrix<double>& x);

/// Pure. `h` as 16 lowercase hex digits.
std::string hex64(std::uint64_t h);

}  // namespace tessel::io

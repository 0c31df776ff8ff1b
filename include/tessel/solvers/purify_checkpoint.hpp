#pragma once
/// @file purify_checkpoint.hpp
/// A purification's state in a checkpoint record: the solver's own serialisation, in the io
/// layer's container (io/checkpoint.hpp; docs/purify.md, "Checkpoint and restart"). Doubles
/// are written as C99 hex floats, so a resumed run continues bit for bit.
#include <string>

#include "tessel/io/checkpoint.hpp"
#include "tessel/solvers/purify.hpp"

namespace tessel::solvers {

/// Pure. Appends the state of a purification (PurifyState) to record.state.
void put_purify_state(io::CheckpointRecord& record, const PurifyState& st);
/// Pure. The purification state in record.state; InputError naming `path` when a key is
/// missing or a value does not parse.
PurifyState get_purify_state(const io::CheckpointRecord& record, const std::string& path);

}  // namespace tessel::solvers

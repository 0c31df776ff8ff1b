#pragma once
/// @file agree.hpp
/// agree_on: collective validation on any communicator (every rank throws the same error).
/// In comm/, not core/, so that comm's own sources need nothing from Context: the layers are
/// core/error, core/ledger, core/trace  <-  comm/  <-  core/context (see docs/design notes in
/// docs/failure.md, "Layers").
#include <functional>

#include "tessel/comm/comm.hpp"

namespace tessel {

/// Collective over `c`. Runs `check` on every rank; if it throws on any rank, every rank
/// throws the same error: a tessel::Error of the same kind with the lowest failing rank's
/// message, or, for any other exception (std::bad_alloc, a user callback's), a tessel::Error
/// whose message names that rank and the original what(). One allreduce when all succeed (no
/// communication on a null or one-rank communicator), so no rank waits forever on a peer that
/// failed. Context::agree is agree_on(ctx.comm(), check).
void agree_on(const comm::Comm& c, const std::function<void()>& check);

}  // namespace tessel

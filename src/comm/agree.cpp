// agree_on: collective validation. Every rank runs the check; one allreduce finds the lowest
// failing rank, which broadcasts its error's kind and message; every rank throws it.
#include "tessel/comm/agree.hpp"

#include <climits>
#include <exception>
#include <string>

#include "tessel/core/error.hpp"

namespace tessel {

namespace {
enum Kind : int { kNone = 0, kError, kDim, kLayout, kGrid, kInput, kMpi, kPeer };

[[noreturn]] void throw_kind(int kind, const std::string& msg) {
  switch (kind) {
    case kDim: throw DimensionMismatch(msg);
    case kLayout: throw LayoutMismatch(msg);
    case kGrid: throw GridError(msg);
    case kInput: throw InputError(msg);
    case kMpi: throw MpiError(msg);
    case kPeer: throw PeerFailure(msg);
    default: throw Error(msg);
  }
}
}  // namespace

void agree_on(const comm::Comm& c, const std::function<void()>& check) {
  int kind = kNone;
  std::string msg;
  try {
    check();
  } catch (const DimensionMismatch& e) {
    kind = kDim;
    msg = e.what();
  } catch (const LayoutMismatch& e) {
    kind = kLayout;
    msg = e.what();
  } catch (const GridError& e) {
    kind = kGrid;
    msg = e.what();
  } catch (const InputError& e) {
    kind = kInput;
    msg = e.what();
  } catch (const MpiError& e) {
    kind = kMpi;
    msg = e.what();
  } catch (const PeerFailure& e) {
    kind = kPeer;
    msg = e.what();
  } catch (const Error& e) {
    kind = kError;
    msg = e.what();
  } catch (const std::exception& e) {
    // Anything else (std::bad_alloc, a user callback's exception): a tessel::Error on every
    // rank that names the original.
    kind = kError;
    msg = detail::concat("exception on rank ", c.is_null() ? 0 : c.rank(), ": ", e.what());
  } catch (...) {
    kind = kError;
    msg = detail::concat("exception of a type not derived from std::exception on rank ",
                         c.is_null() ? 0 : c.rank());
  }
  if (c.is_null() || c.size() == 1) {
    if (kind != kNone) throw_kind(kind, msg);
    return;
  }
  // One allreduce: the lowest failing rank (or INT_MAX when none failed).
  int first = c.allreduce_value(kind != kNone ? c.rank() : INT_MAX, MPI_MIN);
  if (first == INT_MAX) return;
  int header[2] = {kind, static_cast<int>(msg.size())};
  c.bcast(header, 2, first);
  msg.resize(static_cast<std::size_t>(header[1]));
  c.bcast(msg.data(), header[1], first);
  throw_kind(header[0], msg);
}

}  // namespace tessel

#pragma once
/// @file redistribute.hpp
/// The one any-to-any redistribution between two layouts of the same matrix.
#include <cstdint>

#include "tessel/comm/comm.hpp"
#include "tessel/layout/layout.hpp"

namespace tessel::layout {

/// What one rank sends and receives in a redistribution (pure data, computed without MPI).
struct RedistVolume {
  std::int64_t send_elems = 0, recv_elems = 0, self_elems = 0;
  int send_msgs = 0, recv_msgs = 0;
};
/// Predicts the traffic of redistribute(src -> dst) on `rank`.
RedistVolume redist_volume(const Layout& src, const Layout& dst, int rank);

/// Collective over `c` (whose size equals both layouts' comm_size): copies the matrix held
/// in `src` layout (local column-major storage `a`, leading dimension `lda`) into `dst`
/// layout (`b`, `ldb`). Point-to-point messages, one per pair of ranks that share data;
/// the local part is copied without a message. Recorded in c's ledger in the current phase.
template <class T>
void redistribute(const comm::Comm& c, const Layout& src, const T* a, std::int64_t lda,
                  const Layout& dst, T* b, std::int64_t ldb);

}  // namespace tessel::layout

#pragma once
/// @file redistribute.hpp
/// The one any-to-any redistribution between two layouts of the same matrix: a pure plan
/// (layout/redist_plan.hpp: per peer counts and offsets, a comm::ExchangePlan, and the
/// blocks to pack) executed by point-to-point messages, MPI_Alltoallv or a node-shared
/// window. redist_volume() reads the same plan.
#include <cstdint>
#include <vector>

#include "tessel/comm/comm.hpp"
#include "tessel/layout/layout.hpp"
#include "tessel/layout/redist_plan.hpp"

namespace tessel::layout {

/// What one rank sends and receives in a redistribution (pure data, computed without MPI).
struct RedistVolume {
  std::int64_t send_elems = 0, recv_elems = 0, self_elems = 0;
  int send_msgs = 0, recv_msgs = 0;
};
/// Not collective, pure. The traffic of redistribute(src -> dst) on `rank`: the counts of
/// make_redist_plan(src, dst, rank), the plan redistribute() executes (messages are those of
/// the p2p executor: one per peer with elements).
RedistVolume redist_volume(const Layout& src, const Layout& dst, int rank);

/// How redistribute() moves data between ranks.
struct RedistOptions {
  /// false: every pair of ranks that share data exchanges one point-to-point message.
  /// true ("node-shared"): pairs of ranks on the same node (MPI_Comm_split_type
  /// MPI_COMM_TYPE_SHARED) move their data through an MPI-3 shared-memory window
  /// (MPI_Win_allocate_shared) that holds each destination's incoming segments: the source
  /// packs straight into the destination's part (one copy across processes, instead of a pack
  /// into a send buffer plus the MPI transport's copies), the destination unpacks from it;
  /// pairs on different nodes keep the point-to-point messages. Bit-identical results.
  /// Costs: the node split (MPI_Comm_split_type, and MPI_Comm_split with node_size) and the
  /// window (MPI_Win_allocate_shared: one allgather + one allreduce) are made once per
  /// communicator and node size when `c` is a Context's (Comm::cache(), kept until the Context
  /// is destroyed; the window is remade only when a rank's part must grow), else on every
  /// call. Per call: one allgather of the node's pair counts and, when some pair on the node
  /// shares data, one sleep-polled node MPI_Ibarrier.
  /// If MPI cannot create a shared window on a node (e.g. Open MPI with OMPI_MCA_osc=ucx
  /// alone), that node's pairs fall back to point-to-point messages.
  bool node_shared = false;
  /// Node-shared only, for tests: ranks per emulated node (consecutive ranks of a real node
  /// are cut into groups of node_size), so one machine runs the mixed intra/inter-node path.
  /// 0 = the communicator's (Comm::node_size: the Context's ContextOptions::node_size), else
  /// the real node.
  int node_size = 0;
  /// true: every pair moves through one MPI_Ialltoallv over the communicator (counts of size
  /// p, zero for non-peers; waited for by polling), recorded as one collective call with the
  /// payload of all pairs (shared/tools/commcount's rule) instead of p2p messages. Same bytes
  /// and bit-identical results; not with node_shared (InputError). The counts must fit MPI's
  /// int (Error on every rank otherwise, before any message).
  bool alltoallv = false;
};

/// Collective over `c` (whose size equals both layouts' comm_size): copies the matrix held
/// in `src` layout (local column-major storage `a`, leading dimension `lda`) into `dst`
/// layout (`b`, `ldb`), executing make_redist_plan(src, dst, c.rank()). By default
/// point-to-point messages, one per pair of ranks that share data (opt.alltoallv: one
/// MPI_Ialltoallv instead); the local part is copied without a message. Recorded in c's
/// ledger in the current phase.
/// With opt.node_shared, same-node pairs use a shared-memory window instead (see
/// RedistOptions): those transfers are no MPI messages and are recorded as shm_bytes /
/// shm_msgs (one per pair) of the sender, not as p2p; the window's MPI calls are recorded as
/// what they are (collectives), as shared/tools/commcount counts them.
/// Before any message, the leading dimensions are checked on every rank (lda >= the local
/// rows of src, ldb >= those of dst, on ranks that hold elements) and agreed by one allreduce
/// (recorded as a collective): LayoutMismatch on every rank if one rank's is too small.
template <class T>
void redistribute(const comm::Comm& c, const Layout& src, const T* a, std::int64_t lda,
                  const Layout& dst, T* b, std::int64_t ldb, const RedistOptions& opt = {});

/// Not collective. The node size redistribute() over `c` uses for opt (opt.node_size when
/// not 0, else c.node_size(), which is 0 = the real node unless the Context set it).
int redist_node_size(const comm::Comm& c, const RedistOptions& opt);

}  // namespace tessel::layout

// Exchange strategies neighbor and persistent (seed 002's proposal in MPI-3 and MPI-4
// form): the plan's peers become a distributed graph (MPI_Dist_graph_create_adjacent, sources =
// the peers we receive from, destinations = the peers we send to, in the plan's order, no
// reordering), then MPI_Ineighbor_alltoallv per exchange, or one persistent
// MPI_Neighbor_alltoallv_init request started per exchange. Every rank takes part, including a
// rank with no peer (degree 0), so the collectives match.
#include <algorithm>

#include "exchange_mover.hpp"
#include "poll.hpp"
#include "tessel/core/error.hpp"
#include "trace_hooks.hpp"

namespace tessel::comm::detail {
namespace {

bool finalized() {
  int fin = 0;
  MPI_Finalized(&fin);
  return fin != 0;
}

/// RAII owner of the distributed graph communicator.
class GraphComm {
 public:
  GraphComm(const Comm& parent, const std::vector<int>& sources, const std::vector<int>& dests) {
    int dummy = 0;
    arrive(parent.raw());  // polled: MPICH busy-polls in communicator creation (poll.hpp)
    check_mpi(MPI_Dist_graph_create_adjacent(parent.raw(), static_cast<int>(sources.size()),
                                             sources.empty() ? &dummy : sources.data(),
                                             MPI_UNWEIGHTED, static_cast<int>(dests.size()),
                                             dests.empty() ? &dummy : dests.data(), MPI_UNWEIGHTED,
                                             MPI_INFO_NULL, /*reorder=*/0, &comm_),
              "MPI_Dist_graph_create_adjacent");
  }
  ~GraphComm() {
    if (comm_ != MPI_COMM_NULL && !finalized()) MPI_Comm_free(&comm_);
  }
  GraphComm(const GraphComm&) = delete;
  GraphComm& operator=(const GraphComm&) = delete;
  MPI_Comm raw() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

/// RAII owner of the persistent request (freed after the RequestSet that completes its starts
/// is drained; an exchange abandoned while active leaves it to MPI: freeing an active
/// persistent collective request is erroneous).
class PersistentRequest {
 public:
  PersistentRequest() = default;
  ~PersistentRequest() {
    if (req_ == MPI_REQUEST_NULL || finalized()) return;
    int inactive = 0;
    if (MPI_Request_get_status(req_, &inactive, MPI_STATUS_IGNORE) == MPI_SUCCESS && inactive)
      MPI_Request_free(&req_);
  }
  PersistentRequest(const PersistentRequest&) = delete;
  PersistentRequest& operator=(const PersistentRequest&) = delete;
  MPI_Request* slot() { return &req_; }
  MPI_Request get() const { return req_; }

 private:
  MPI_Request req_ = MPI_REQUEST_NULL;
};

class NeighborMover final : public ExchangeMover {
 public:
  NeighborMover(const Comm& c, const ExchangePlan& plan, const ExchangeItem& item, bool persistent,
                std::int64_t bytes, const char* send, char* recv)
      : graph_(c, plan.recv_peers, plan.send_peers),
        sc_(scaled(plan.send_counts, item.width, "neighbor send count")),
        sd_(scaled(plan.send_offsets, item.width, "neighbor send displacement")),
        rc_(scaled(plan.recv_counts, item.width, "neighbor receive count")),
        rd_(scaled(plan.recv_offsets, item.width, "neighbor receive displacement")),
        type_(item.type),
        persistent_(persistent),
        bytes_(bytes),
        ledger_(c.ledger()) {
#ifdef TESSEL_HAVE_NEIGHBOR_ALLTOALLV_INIT
    if (persistent)
      check_mpi(MPI_Neighbor_alltoallv_init(send, sc_.data(), sd_.data(), type_, recv, rc_.data(),
                                            rd_.data(), type_, graph_.raw(), MPI_INFO_NULL,
                                            request_.slot()),
                "MPI_Neighbor_alltoallv_init");
#else
    (void)send, (void)recv;
    TESSEL_CHECK(
        !persistent, InputError,
        "exchange strategy persistent: this MPI has no MPI_Neighbor_alltoallv_init (MPI-4; Open MPI "
        "4.1 is MPI-3): use neighbor, or build tessel against MPICH 4");
#endif
  }
  // The persistent request is bound to the buffers of its construction: start() gets them.
  void start(const char* send, char* recv, RequestSet& rs) override {
    Tracer* t = tracer_of(ledger_);
    if (persistent_) {
      check_mpi(MPI_Start(request_.slot()), "MPI_Start");
      trace::add_started(rs, request_.get(), t, "coll", -1, bytes_);
      return;
    }
    check_mpi(
        MPI_Ineighbor_alltoallv(send, sc_.data(), sd_.data(), type_, recv, rc_.data(), rd_.data(),
                                type_, graph_.raw(), trace::add(rs, t, "coll", -1, bytes_)),
        "MPI_Ineighbor_alltoallv");
  }

 private:
  // MPI int counts or displacements scaled by the width; one element for a degree-0 rank (a
  // valid pointer).
  static std::vector<int> scaled(const std::vector<std::int64_t>& v, int width, const char* what) {
    std::vector<int> out(std::max<std::size_t>(v.size(), 1), 0);
    for (std::size_t i = 0; i < v.size(); ++i)
      out[i] = tessel::detail::checked_int(v[i] * width, what);
    return out;
  }

  GraphComm graph_;
  std::vector<int> sc_, sd_, rc_, rd_;
  MPI_Datatype type_;
  bool persistent_;
  std::int64_t bytes_;
  CommLedger* ledger_;
  PersistentRequest request_;
};

}  // namespace

std::unique_ptr<ExchangeMover> make_neighbor_mover(const Comm& c, const ExchangePlan& plan,
                                                   const ExchangeItem& item, bool persistent,
                                                   std::int64_t bytes, const char* send,
                                                   char* recv) {
  return std::make_unique<NeighborMover>(c, plan, item, persistent, bytes, send, recv);
}

}  // namespace tessel::comm::detail

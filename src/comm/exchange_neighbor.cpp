// Exchanger strategies neighbor and persistent (seed 002's proposal in MPI-3 and MPI-4
// form): the plan's peers become a distributed graph (MPI_Dist_graph_create_adjacent, sources =
// the peers we receive from, destinations = the peers we send to, in the plan's order, no
// reordering), then MPI_Ineighbor_alltoallv per exchange, or one persistent
// MPI_Neighbor_alltoallv_init request started per exchange. Every rank takes part, including a
// rank with no peer (degree 0), so the collectives match.
#include "exchange_impl.hpp"
#include "poll.hpp"
#include "trace_hooks.hpp"

namespace tessel::comm {
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

class NeighborExchanger final : public Exchanger {
 public:
  NeighborExchanger(const Comm& c, const ExchangePlan& plan, int width, ExchangeStrategy s)
      : Exchanger(c, plan, width, s),
        graph_(c, plan_.recv_peers, plan_.send_peers),
        sc_(nonempty(scaled(plan_.send_counts))),
        sd_(nonempty(scaled(plan_.send_offsets))),
        rc_(nonempty(scaled(plan_.recv_counts))),
        rd_(nonempty(scaled(plan_.recv_offsets))) {
#ifdef TESSEL_HAVE_NEIGHBOR_ALLTOALLV_INIT
    if (s == ExchangeStrategy::Persistent)
      check_mpi(MPI_Neighbor_alltoallv_init(send_.data(), sc_.data(), sd_.data(), MPI_DOUBLE,
                                            recv_.data(), rc_.data(), rd_.data(), MPI_DOUBLE,
                                            graph_.raw(), MPI_INFO_NULL, persistent_.slot()),
                "MPI_Neighbor_alltoallv_init");
#else
    TESSEL_CHECK(
        s != ExchangeStrategy::Persistent, InputError,
        "exchange strategy persistent: this MPI has no MPI_Neighbor_alltoallv_init (MPI-4; Open MPI "
        "4.1 is MPI-3): use neighbor, or build tessel against MPICH 4");
#endif
  }
  // The outstanding exchange completes (or is abandoned) before the persistent request and the
  // graph communicator it uses are freed (members are destroyed after this body).
  ~NeighborExchanger() override { drain(); }
  void start() override {
    begin_collective();
    Tracer* t = tracer_of(comm_.ledger());
    if (strategy_ == ExchangeStrategy::Persistent) {
      check_mpi(MPI_Start(persistent_.slot()), "MPI_Start");
      trace::add_started(rs_, persistent_.get(), t, "coll", -1, payload_bytes());
      return;
    }
    check_mpi(
        MPI_Ineighbor_alltoallv(send_.data(), sc_.data(), sd_.data(), MPI_DOUBLE, recv_.data(),
                                rc_.data(), rd_.data(), MPI_DOUBLE, graph_.raw(),
                                trace::add(rs_, t, "coll", -1, payload_bytes())),
        "MPI_Ineighbor_alltoallv");
  }

 private:
  // A valid pointer for the count arrays of a degree-0 rank.
  static std::vector<int> nonempty(std::vector<int> v) {
    if (v.empty()) v.push_back(0);
    return v;
  }

  GraphComm graph_;
  std::vector<int> sc_, sd_, rc_, rd_;
  PersistentRequest persistent_;
};

}  // namespace

std::unique_ptr<Exchanger> make_neighbor_exchanger(const Comm& c, const ExchangePlan& plan,
                                                   int width, ExchangeStrategy s) {
  return std::make_unique<NeighborExchanger>(c, plan, width, s);
}

}  // namespace tessel::comm

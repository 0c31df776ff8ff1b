#pragma once
// Private: the factories of the Exchanger strategies (one file each) and their shared wait.
#include "poll.hpp"
#include "tessel/comm/exchange.hpp"

namespace tessel::comm {

/// MPI_Wait by wait_polled (poll.hpp: MPICH busy-polls in MPI_Wait); throws MpiError.
void poll_wait(MPI_Request& r);

std::unique_ptr<Exchanger> make_alltoallv_exchanger(const Comm& c, const ExchangePlan& plan, int width,
                                                    ExchangeStrategy s);
std::unique_ptr<Exchanger> make_neighbor_exchanger(const Comm& c, const ExchangePlan& plan, int width,
                                                   ExchangeStrategy s);
std::unique_ptr<Exchanger> make_p2p_exchanger(const Comm& c, const ExchangePlan& plan, int width);

}  // namespace tessel::comm

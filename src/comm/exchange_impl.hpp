#pragma once
// Private: the factories of the Exchanger strategies (one file each).
#include "tessel/comm/exchange.hpp"

namespace tessel::comm {

std::unique_ptr<Exchanger> make_alltoallv_exchanger(const Comm& c, const ExchangePlan& plan,
                                                    int width, ExchangeStrategy s);
std::unique_ptr<Exchanger> make_neighbor_exchanger(const Comm& c, const ExchangePlan& plan,
                                                   int width, ExchangeStrategy s);
std::unique_ptr<Exchanger> make_p2p_exchanger(const Comm& c, const ExchangePlan& plan, int width);

}  // namespace tessel::comm

#include "tessel/comm/ledger_stats.hpp"

namespace tessel::comm {

std::vector<PhaseStats> ledger_stats(const Comm& c, const CommLedger& l,
                                     const std::vector<std::string>& prefixes, double scale) {
  constexpr int kFields = 7;
  const std::size_t n = prefixes.size() * kFields;
  std::vector<double> mine(n), mx(n), sum(n);
  for (std::size_t i = 0; i < prefixes.size(); ++i) {
    PhaseCounts t = l.total(prefixes[i]);
    double* v = &mine[i * kFields];
    v[0] = static_cast<double>(t.recv_bytes());
    v[1] = static_cast<double>(t.sent_bytes());
    v[2] = static_cast<double>(t.p2p_recv_msgs);
    v[3] = static_cast<double>(t.p2p_sent_msgs + t.rma_ops);
    v[4] = static_cast<double>(t.coll_bytes);
    v[5] = static_cast<double>(t.rma_put_bytes + t.rma_get_bytes + t.rma_acc_bytes);
    v[6] = static_cast<double>(t.shm_bytes);
  }
  for (auto& x : mine) x /= scale;
  mx = mine;
  sum = mine;
  // Internal statistics: not recorded in the ledger they describe.
  Comm quiet(c.raw(), nullptr);
  quiet.allreduce(mx.data(), static_cast<int>(n), MPI_MAX);
  quiet.allreduce(sum.data(), static_cast<int>(n), MPI_SUM);
  std::vector<PhaseStats> out;
  for (std::size_t i = 0; i < prefixes.size(); ++i) {
    PhaseStats s;
    s.prefix = prefixes[i];
    LedgerStat* f[kFields] = {&s.recv_bytes, &s.sent_bytes, &s.recv_msgs, &s.sent_msgs,
                              &s.coll_bytes, &s.rma_bytes,  &s.shm_bytes};
    for (int k = 0; k < kFields; ++k) {
      f[k]->max = mx[i * kFields + k];
      f[k]->total = sum[i * kFields + k];
      f[k]->mean = f[k]->total / c.size();
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace tessel::comm

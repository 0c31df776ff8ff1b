#include "tessel/core/ledger.hpp"

#include "tessel/core/trace.hpp"

namespace tessel {

PhaseCounts& PhaseCounts::operator+=(const PhaseCounts& o) {
  p2p_sent_bytes += o.p2p_sent_bytes;
  p2p_sent_msgs += o.p2p_sent_msgs;
  p2p_recv_bytes += o.p2p_recv_bytes;
  p2p_recv_msgs += o.p2p_recv_msgs;
  coll_bytes += o.coll_bytes;
  coll_calls += o.coll_calls;
  rma_put_bytes += o.rma_put_bytes;
  rma_get_bytes += o.rma_get_bytes;
  rma_acc_bytes += o.rma_acc_bytes;
  rma_ops += o.rma_ops;
  shm_bytes += o.shm_bytes;
  shm_msgs += o.shm_msgs;
  return *this;
}

void CommLedger::push_phase(const std::string& name) {
  stack_.push_back(current_);
  current_ = current_.empty() ? name : current_ + "/" + name;
  memory_->set_phase(current_);
  if (tracer_) tracer_->phase_begin(current_);
}

void CommLedger::pop_phase() {
  if (stack_.empty()) return;
  if (tracer_) tracer_->phase_end();
  current_ = stack_.back();
  stack_.pop_back();
  memory_->set_phase(current_);
}

PhaseCounts CommLedger::total() const { return total(""); }

PhaseCounts CommLedger::total(const std::string& prefix) const {
  PhaseCounts t;
  for (const auto& [name, c] : phases_)
    if (name.compare(0, prefix.size(), prefix) == 0) t += c;
  return t;
}

}  // namespace tessel

// Context: the duplicated communicator, the ledger, agree, and the trace option (start, gather
// on rank 0, write).
#include "tessel/core/context.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tessel/core/atomic_file.hpp"
#include "tessel/core/error.hpp"

namespace tessel {

namespace {
// ContextOptions::node_size, checked (0 = not set).
int checked_node_size(const ContextOptions& opt) {
  TESSEL_CHECK(opt.node_size >= 0, InputError, "Context: node_size = ", opt.node_size,
               ", expected >= 0 (0 = not set)");
  return opt.node_size;
}
}  // namespace

int parse_node_size(const std::string& text, const std::string& what) {
  const char* e = text.c_str();
  char* endp = nullptr;
  errno = 0;
  const long v = std::strtol(e, &endp, 10);
  TESSEL_CHECK(endp != e && *endp == '\0' && errno == 0 && v > 0 && v <= INT_MAX, InputError,
               "Context: ", what, " = '", text,
               "', expected a positive integer (ranks per "
               "emulated node)");
  return static_cast<int>(v);
}

namespace {
ComputeMode checked_compute(const ContextOptions& opt) {
  TESSEL_CHECK(opt.compute == ComputeMode::Run || kSimulatedMpi, InputError,
               "Context: compute = ", to_string(opt.compute),
               ": skipping the local kernels exists only in the simulated build on SimGrid's "
               "SMPI (docs/simulation.md): expected run");
  TESSEL_CHECK(!opt.product_times || opt.compute == ComputeMode::Skip, InputError,
               "Context: product_times with compute = ", to_string(opt.compute),
               ": the table prices the block products a simulated run skips: expected compute = "
               "skip, or no product_times");
  return opt.compute;
}
}  // namespace

Context::Context(MPI_Comm user_comm, const ContextOptions& opt)
    : Context(user_comm, std::make_unique<CommLedger>(), nullptr, opt) {}

Context::Context(MPI_Comm user_comm, CommLedger& ledger, const ContextOptions& opt)
    : Context(user_comm, nullptr, &ledger, opt) {}

Context::Context(MPI_Comm user_comm, std::unique_ptr<CommLedger> own, CommLedger* ledger,
                 const ContextOptions& opt)
    : own_(std::move(own)),
      ledger_(own_ ? own_.get() : ledger),
      comm_(comm::Comm(user_comm, ledger_).dup()),
      cache_(std::make_unique<comm::CommCache>()),
      machine_file_(opt.machine_file) {
  comm_.set_node_size(checked_node_size(opt));
  comm_.set_cache(cache_.get());
  compute_ = checked_compute(opt);
  product_times_ = opt.product_times;
}

void Context::set_testing(comm::TestSettings s) {
  cache_->clear();
  comm_.set_testing(std::move(s));
}

void Context::agree(const std::function<void()>& check) const { agree_on(comm_, check); }

// ---------------------------------------------------------------- Context's trace option
Context::~Context() {
  cache_.reset();  // the kept windows and communicators first (collective; see the header)
  if (tracer_ && ledger_->tracer() == tracer_.get()) ledger_->set_tracer(nullptr);
}

void Context::start_trace() {
  if (tracer_ && ledger_->tracer() == tracer_.get()) ledger_->set_tracer(nullptr);
  tracer_.reset();
  comm_.barrier();
  tracer_ = std::make_unique<Tracer>(rank());
  ledger_->set_tracer(tracer_.get());
}

void Context::write_trace(const std::string& path) {
  std::string mine;
  const bool was_on = tracer_ != nullptr;
  if (tracer_) {
    if (ledger_->tracer() == tracer_.get()) ledger_->set_tracer(nullptr);
    mine = tracer_->events_json();
    tracer_.reset();
  }
  agree([&] {
    TESSEL_CHECK(was_on, InputError, "write_trace(", path,
                 "): tracing was not started (start_trace)");
    TESSEL_CHECK(!path.empty(), InputError, "write_trace: empty output path");
  });
  // The gather goes through a communicator without a ledger: it is not part of the run.
  const comm::Comm quiet(comm_.raw(), nullptr);
  const int p = size();
  const std::int64_t len = static_cast<std::int64_t>(mine.size());
  std::vector<std::int64_t> lens(static_cast<std::size_t>(p));
  quiet.allgather(&len, 1, lens.data());
  for (int r = 0; r < p; ++r)
    TESSEL_CHECK(lens[static_cast<std::size_t>(r)] <= INT_MAX, InputError, "write_trace(", path,
                 "): the trace of rank ", r, " has ", lens[static_cast<std::size_t>(r)],
                 " bytes, more than one message can carry");
  std::vector<std::string> parts;
  {
    comm::RequestSet rs;
    if (rank() == 0) {
      parts.resize(static_cast<std::size_t>(p));
      parts[0] = std::move(mine);
      for (int r = 1; r < p; ++r) {
        parts[static_cast<std::size_t>(r)].resize(
            static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]));
        quiet.irecv(parts[static_cast<std::size_t>(r)].data(), lens[static_cast<std::size_t>(r)], r,
                    comm::tag::kTraceGather, rs);
      }
    } else {
      quiet.isend(mine.data(), len, 0, comm::tag::kTraceGather, rs);
    }
    rs.wait_all();
  }
  agree([&] {
    if (rank() != 0) return;
    write_file_atomic(path, "trace", [&](std::FILE* f) {
      bool ok = std::fputs("{\"traceEvents\":[\n", f) >= 0;
      for (int r = 0; r < p && ok; ++r) {
        const std::string& s = parts[static_cast<std::size_t>(r)];
        if (r > 0) ok = std::fputs(",\n", f) >= 0;
        ok = ok && std::fwrite(s.data(), 1, s.size(), f) == s.size();
      }
      return ok && std::fprintf(f,
                                "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"ranks\":%d,"
                                "\"producer\":\"tessel\"}}\n",
                                p) > 0;
    });
  });
}

}  // namespace tessel

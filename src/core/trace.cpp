// Tracer (one rank's timeline) and the Context's trace option: start, gather on rank 0, write.
#include "tessel/core/trace.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "tessel/core/context.hpp"
#include "tessel/core/error.hpp"

namespace tessel {

namespace {

/// JSON string literal of `s` (quotes, backslashes and control characters escaped).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

}  // namespace

Tracer::Tracer(int rank) : rank_(rank), t0_(Clock::now()) {}

void Tracer::phase_begin(const std::string& full_name) { phases_.push_back({full_name, now()}); }

void Tracer::phase_end() {
  if (phases_.empty()) return;  // opened before tracing started
  Open o = std::move(phases_.back());
  phases_.pop_back();
  const double t = now();
  events_.push_back({'X', "phase", std::move(o.name), o.ts, t - o.ts, 0, ""});
}

void Tracer::span(const char* cat, const char* name, double t_begin, const std::string& args) {
  const double t = now();
  events_.push_back({'X', cat, name, t_begin, t - t_begin, 0, args});
}

std::uint64_t Tracer::transfer_posted(const char* kind, int peer, std::int64_t bytes, double at) {
  const std::uint64_t id = (static_cast<std::uint64_t>(rank_) << 40) | next_id_++;
  std::string args = "{\"kind\":\"" + std::string(kind) + "\",\"peer\":" + std::to_string(peer) +
                     ",\"bytes\":" + std::to_string(bytes) + "}";
  open_[id] = events_.size();
  events_.push_back({'b', "comm", kind, at < 0 ? now() : at, 0, id, std::move(args)});
  return id;
}

void Tracer::transfer_completed(std::uint64_t id) {
  // The name of an "e" event must match its "b".
  auto it = open_.find(id);
  if (it == open_.end()) return;
  const std::size_t b = it->second;
  open_.erase(it);
  events_.push_back({'e', "comm", events_[b].name, now(), 0, id, ""});
}

void Tracer::transfer_since(const char* kind, int peer, std::int64_t bytes, double t_begin) {
  transfer_completed(transfer_posted(kind, peer, bytes, t_begin));
}

std::string Tracer::events_json() const {
  const std::string lane = ",\"pid\":" + std::to_string(rank_) + ",\"tid\":";
  std::string out = "{\"ph\":\"M\",\"name\":\"process_name\"" + lane + "0,\"args\":{\"name\":\"rank " +
                    std::to_string(rank_) + "\"}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\"" +
                    lane + "0,\"args\":{\"sort_index\":" + std::to_string(rank_) + "}}";
  for (const Event& e : events_) {
    out += ",\n{\"ph\":\"";
    out += e.ph;
    out += "\",\"cat\":\"";
    out += e.cat;
    out += "\",\"name\":" + quoted(e.name) + ",\"ts\":" + num(e.ts);
    if (e.ph == 'X') out += ",\"dur\":" + num(e.dur);
    if (e.ph != 'X') {
      char id[24];
      std::snprintf(id, sizeof id, "\"0x%llx\"", static_cast<unsigned long long>(e.id));
      out += std::string(",\"id\":") + id;
    }
    out += lane + "0";
    if (!e.args.empty()) out += ",\"args\":" + e.args;
    out += "}";
  }
  return out;
}

KernelSpan::~KernelSpan() {
  if (!t_) return;
  t_->span("compute", name_, t0_, flops_ > 0 ? "{\"flops\":" + num(flops_) + "}" : "");
}

// ---------------------------------------------------------------- Context's trace option
Context::~Context() {
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
    TESSEL_CHECK(was_on, InputError, "write_trace(", path, "): tracing was not started (start_trace)");
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
        parts[static_cast<std::size_t>(r)].resize(static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]));
        quiet.irecv(parts[static_cast<std::size_t>(r)].data(), lens[static_cast<std::size_t>(r)], r, 7401, rs);
      }
    } else {
      quiet.isend(mine.data(), len, 0, 7401, rs);
    }
    rs.wait_all();
  }
  agree([&] {
    if (rank() != 0) return;
    const std::string tmp = path + ".tmp." + std::to_string(static_cast<long long>(::getpid()));
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw InputError(detail::concat("cannot write trace ", path, ": ", std::strerror(errno)));
    bool ok = std::fputs("{\"traceEvents\":[\n", f) >= 0;
    for (int r = 0; r < p && ok; ++r) {
      const std::string& s = parts[static_cast<std::size_t>(r)];
      if (r > 0) ok = std::fputs(",\n", f) >= 0;
      ok = ok && std::fwrite(s.data(), 1, s.size(), f) == s.size();
    }
    ok = ok && std::fprintf(f, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"ranks\":%d,"
                               "\"producer\":\"tessel\"}}\n", p) > 0;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp.c_str());
      throw InputError(detail::concat("cannot write trace ", path, ": ", std::strerror(err)));
    }
  });
}

}  // namespace tessel

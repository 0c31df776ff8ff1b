// Tracer: one rank's timeline (the Context's trace option, which gathers and writes it, is in
// context.cpp: this file uses nothing from comm/).
#include "tessel/core/trace.hpp"

#include <cstdio>
#include <string>

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

Tracer::Tracer(int rank) : rank_(rank) {}

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
  std::string out = "{\"ph\":\"M\",\"name\":\"process_name\"" + lane +
                    "0,\"args\":{\"name\":\"rank " + std::to_string(rank_) +
                    "\"}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\"" + lane +
                    "0,\"args\":{\"sort_index\":" + std::to_string(rank_) + "}}";
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

}  // namespace tessel

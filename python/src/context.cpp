// tessel.Context: construction from an mpi4py communicator, the ledger as dicts, agree.
#include <pybind11/functional.h>

#include <algorithm>
#include <cstdlib>

#include "bindings.hpp"
#include "tessel/comm/ledger_stats.hpp"

namespace tessel::python {

namespace {

/// Collective over ctx: the names of the phases any rank has recorded (sorted, without the
/// unnamed phase ""). Not recorded in the ledger it describes (as comm::ledger_stats).
std::vector<std::string> all_phases(const Context& ctx) {
  comm::Comm quiet(ctx.comm().raw(), nullptr);
  std::string mine;  // "|name\0" per phase
  for (const auto& kv : ctx.ledger().phases())
    if (!kv.first.empty()) mine += "|" + kv.first + '\0';
  const int len = quiet.allreduce_value(static_cast<int>(mine.size()), MPI_MAX);
  if (len == 0) return {};
  mine.resize(static_cast<std::size_t>(len), '\0');
  std::string all(static_cast<std::size_t>(len) * ctx.size(), '\0');
  quiet.allgather(mine.data(), len, all.data());
  std::vector<std::string> names;
  for (std::size_t i = 0; i < all.size();) {
    if (all[i] != '|') {
      ++i;
      continue;
    }
    std::size_t end = all.find('\0', i);
    names.push_back(all.substr(i + 1, end - i - 1));
    i = end + 1;
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

py::dict stat_dict(const LedgerStat& s) {
  py::dict d;
  d["max"] = s.max;
  d["mean"] = s.mean;
  d["total"] = s.total;
  return d;
}

py::dict ledger_dict(PyContext& c, const std::optional<std::vector<std::string>>& prefixes) {
  const auto names = prefixes ? *prefixes : all_phases(*c);
  const auto stats = comm::ledger_stats(c->comm(), c->ledger(), names);
  py::dict out;
  for (const auto& s : stats) {
    py::dict d;
    d["recv_bytes"] = stat_dict(s.recv_bytes);
    d["sent_bytes"] = stat_dict(s.sent_bytes);
    d["recv_msgs"] = stat_dict(s.recv_msgs);
    d["sent_msgs"] = stat_dict(s.sent_msgs);
    d["coll_bytes"] = stat_dict(s.coll_bytes);
    d["rma_bytes"] = stat_dict(s.rma_bytes);
    d["shm_bytes"] = stat_dict(s.shm_bytes);
    out[py::str(s.prefix)] = d;
  }
  return out;
}

}  // namespace

void bind_context(py::module_& m) {
  py::class_<PyContext, ContextPtr>(m, "Context", R"doc(
Context(comm=None)

Collective over `comm` (an mpi4py intracommunicator; default MPI.COMM_WORLD): duplicates it,
so tessel's messages never mix with the caller's, and owns the ledger of bytes and messages
per phase that every tessel call records into. The environment variable TESSEL_NODE_SIZE, when
set, is its emulated node size (ranks per node of the node-shared paths; a positive integer).)doc")
      .def(py::init([](py::object comm) {
             if (comm.is_none()) comm = py::module_::import("mpi4py.MPI").attr("COMM_WORLD");
             MPI_Comm c = comm_of(comm, "Context: comm");
             auto p = std::make_shared<PyContext>();
             p->comm = comm;
             ContextOptions opt;  // the module, not the library, reads the environment
             if (const char* e = std::getenv("TESSEL_NODE_SIZE"))
               opt.node_size = parse_node_size(e, "TESSEL_NODE_SIZE");
             p->ctx = std::make_unique<Context>(c, opt);
             return p;
           }),
           py::arg("comm") = py::none())
      .def_property_readonly("rank", [](const PyContext& c) { return c->rank(); })
      .def_property_readonly("size", [](const PyContext& c) { return c->size(); })
      .def_property_readonly(
          "comm", [](const PyContext& c) { return c.comm; },
          "The mpi4py communicator this Context was made from.")
      .def(
          "ledger",
          [](PyContext& c, bool local,
             std::optional<std::vector<std::string>> prefixes) -> py::dict {
            if (local) return ledger_local_dict(c->ledger());
            return ledger_dict(c, prefixes);
          },
          py::arg("local") = false, py::arg("prefixes") = py::none(), R"doc(
The ledger as a dict.

local=False (collective): {phase: {counter: {"max", "mean", "total"}}} over the ranks, for
every phase any rank recorded (or the given name prefixes; "" is the sum of all phases); a
phase includes the phases nested under it ("gemm" covers "gemm/rounds A"). Counters:
recv_bytes, sent_bytes (point-to-point and one-sided), recv_msgs, sent_msgs, coll_bytes
(collective payload), rma_bytes, shm_bytes (node-shared window stores, not MPI traffic).

local=True (not collective): this rank's raw counters per phase, exactly as the C++ CommLedger
holds them (recv_bytes, sent_bytes, p2p_*, coll_*, rma_*, shm_*).)doc")
      .def(
          "reset_ledger", [](PyContext& c) { c->ledger().reset(); },
          "Not collective. Forgets every phase of this rank's ledger.")
      .def(
          "agree",
          [](PyContext& c, const py::function& check) {
            agree_py(*c, "agree: check", [&] { check(); });
          },
          py::arg("check"), R"doc(
Collective. Runs check() on every rank; if it raises on any rank, every rank raises the same
tessel error (tessel.* kinds keep their kind; other exceptions become tessel.Error naming their
type) with the message of the lowest failing rank.)doc")
      .def(
          "barrier", [](PyContext& c) { c->comm().barrier(); }, "Collective. MPI_Barrier.")
      .def("__repr__", [](const PyContext& c) {
        return "tessel.Context(rank " + std::to_string(c->rank()) + " of " +
               std::to_string(c->size()) + ")";
      });
}

}  // namespace tessel::python

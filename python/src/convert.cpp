// Errors both ways (C++ kinds -> tessel.* exceptions, Python exceptions -> C++ kinds) and the
// ledger as Python dicts.
#include "bindings.hpp"

namespace tessel::python {

namespace {
// The Python exception types, created once at import and kept for the life of the process.
PyObject* exc_error = nullptr;
PyObject* exc_dim = nullptr;
PyObject* exc_layout = nullptr;
PyObject* exc_grid = nullptr;
PyObject* exc_input = nullptr;
PyObject* exc_mpi = nullptr;

PyObject* make_exception(py::module_& m, const char* name, PyObject* base, const char* doc) {
  std::string full = std::string("tessel.") + name;
  PyObject* t = PyErr_NewExceptionWithDoc(full.c_str(), doc, base, nullptr);
  if (!t) throw py::error_already_set();
  m.add_object(name, py::handle(t));  // the module keeps a reference; ours is never released
  return t;
}
}  // namespace

void register_errors(py::module_& m) {
  exc_error =
      make_exception(m, "Error", PyExc_RuntimeError,
                     "Base of every tessel error; raised with the same message on every rank.");
  exc_dim = make_exception(m, "DimensionMismatch", exc_error,
                           "Operand shapes disagree (inner dimensions, C shape, array vs layout).");
  exc_layout = make_exception(m, "LayoutMismatch", exc_error,
                              "Layouts that must match do not, or a descriptor is inconsistent.");
  exc_grid = make_exception(m, "GridError", exc_error,
                            "A process grid or plan cannot be built (too few ranks, memory).");
  exc_input = make_exception(m, "InputError", exc_error,
                             "Bad input: values, files, dtypes, options, communicators.");
  exc_mpi = make_exception(m, "MpiError", exc_error, "An MPI call failed.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DimensionMismatch& e) {
      PyErr_SetString(exc_dim, e.what());
    } catch (const LayoutMismatch& e) {
      PyErr_SetString(exc_layout, e.what());
    } catch (const GridError& e) {
      PyErr_SetString(exc_grid, e.what());
    } catch (const InputError& e) {
      PyErr_SetString(exc_input, e.what());
    } catch (const MpiError& e) { PyErr_SetString(exc_mpi, e.what()); } catch (const Error& e) {
      PyErr_SetString(exc_error, e.what());
    }
  });
}

void rethrow_python(py::error_already_set& e, const std::string& where) {
  const std::string msg = py::str(e.value());
  if (e.matches(exc_dim)) throw DimensionMismatch(msg);
  if (e.matches(exc_layout)) throw LayoutMismatch(msg);
  if (e.matches(exc_grid)) throw GridError(msg);
  if (e.matches(exc_input)) throw InputError(msg);
  if (e.matches(exc_mpi)) throw MpiError(msg);
  if (e.matches(exc_error)) throw Error(msg);
  std::string type = py::str(py::type::handle_of(e.value()).attr("__name__"));
  throw Error(where + " raised " + type + (msg.empty() ? "" : ": " + msg));
}

py::dict counts_dict(const PhaseCounts& c) {
  py::dict d;
  d["recv_bytes"] = c.recv_bytes();
  d["sent_bytes"] = c.sent_bytes();
  d["p2p_sent_bytes"] = c.p2p_sent_bytes;
  d["p2p_sent_msgs"] = c.p2p_sent_msgs;
  d["p2p_recv_bytes"] = c.p2p_recv_bytes;
  d["p2p_recv_msgs"] = c.p2p_recv_msgs;
  d["coll_bytes"] = c.coll_bytes;
  d["coll_calls"] = c.coll_calls;
  d["rma_put_bytes"] = c.rma_put_bytes;
  d["rma_get_bytes"] = c.rma_get_bytes;
  d["rma_acc_bytes"] = c.rma_acc_bytes;
  d["rma_ops"] = c.rma_ops;
  d["shm_bytes"] = c.shm_bytes;
  d["shm_msgs"] = c.shm_msgs;
  return d;
}

py::dict ledger_local_dict(const CommLedger& l) {
  py::dict d;
  for (const auto& [name, c] : l.phases()) d[py::str(name)] = counts_dict(c);
  return d;
}

}  // namespace tessel::python

#pragma once
/// @file bindings.hpp
/// Shared pieces of the `tessel` Python module (pybind11): the Context holder, the layout and
/// matrix holders, the conversion of communicators and of errors in both directions.
///
/// Errors: every tessel::Error kind is translated to the Python exception of the same name
/// (tessel.Error and its subclasses). The other direction — a Python exception raised inside
/// a collective call (an on_step callback, a check run by Context.agree) — is turned into the
/// tessel::Error kind it mirrors (python_error), so that Context::agree carries it to every rank.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "tessel/core/context.hpp"
#include "tessel/core/error.hpp"
#include "tessel/dense/dist_matrix.hpp"
#include "tessel/layout/layout.hpp"
#include "tessel/sparse/block_sparse.hpp"

namespace py = pybind11;

namespace tessel::python {

using cplx = std::complex<double>;

// ---- communicators (comm4py.cpp, the one file that includes mpi4py's C API) ----
/// Imports mpi4py's C API (and so initialises MPI through mpi4py). Throws error_already_set.
void import_mpi4py_api();
/// Not collective. The MPI_Comm of an mpi4py communicator. InputError (naming `what`) for any
/// other object (an int, None), MPI.COMM_NULL or an intercommunicator. Every rank of the
/// communicator passes the same kind of object, so every rank throws together.
MPI_Comm comm_of(py::handle obj, const std::string& what);

// ---- errors (convert.cpp) ----
/// Registers tessel.Error, DimensionMismatch, LayoutMismatch, GridError, InputError, MpiError
/// and the translator of the C++ kinds into them.
void register_errors(py::module_& m);
/// The tessel::Error kind mirroring a Python exception: a tessel.* exception keeps its kind
/// and message; any other becomes tessel::Error("<where>: <Type>: <message>"). Call with the
/// GIL held.
[[noreturn]] void rethrow_python(py::error_already_set& e, const std::string& where);
/// Calls f() (GIL held); a Python exception leaves as rethrow_python's C++ error.
template <class F>
void call_python(const std::string& where, F&& f) {
  try {
    f();
  } catch (py::error_already_set& e) { rethrow_python(e, where); }
}

/// Collective: Context::agree over f, where any exception f throws — a Python one, a pybind11
/// cast error, any std::exception — reaches every rank as a tessel::Error kind (not only the
/// tessel::Error kinds agree() itself carries), so no rank is left waiting.
template <class F>
void agree_py(const Context& ctx, const std::string& where, F&& f) {
  ctx.agree([&] {
    try {
      f();
    } catch (const Error&) { throw; } catch (py::error_already_set& e) {
      rethrow_python(e, where);
    } catch (const std::exception& e) { throw Error(where + ": " + e.what()); }
  });
}

// ---- the Context ----
/// tessel.Context: the library Context (a duplicate of the user's communicator and its ledger)
/// and the mpi4py communicator it was made from.
struct PyContext {
  py::object comm;
  std::unique_ptr<Context> ctx;
  Context& operator*() const { return *ctx; }
  Context* operator->() const { return ctx.get(); }
};
using ContextPtr = std::shared_ptr<PyContext>;
/// The Context `h`, or InputError naming `fn` when it is not a tessel.Context.
ContextPtr context_ptr(py::handle h, const char* fn);

// ---- layouts and matrices ----
/// The block-cyclic parameters a Layout was made from (ScaLAPACK descriptor terms).
struct BlockCyclic {
  std::int64_t m = 0, n = 0, mb = 1, nb = 1;
  int nprow = 1, npcol = 1, rsrc = 0, csrc = 0;
};

/// tessel.Layout: a layout::Layout and, when it is block-cyclic, its parameters.
struct PyLayout {
  layout::Layout lay;
  std::optional<BlockCyclic> bc;
};
/// Pure. Block-cyclic over the most square nprow x npcol = nranks (nprow <= npcol), blocks of
/// min(64, ceil(m / nprow)) x min(64, ceil(n / npcol)) (at least 1).
PyLayout default_layout(std::int64_t m, std::int64_t n, int nranks);
PyLayout block_cyclic(const BlockCyclic& bc, int nranks);

enum class Dtype { F64 = 0, C128 = 1 };
/// "float64", "complex128".
const char* dtype_name(Dtype d);
/// The Dtype of a NumPy array, or nullopt for any other dtype.
std::optional<Dtype> dtype_of(const py::array& a);

/// tessel.DistMatrix: a dense distributed matrix of float64 or complex128. `keep` holds the
/// NumPy array a view() addresses (None for owned storage). Never copied (DistMatrix's copy
/// would share the storage); created by the factories as unique_ptr.
struct PyDistMatrix {
  ContextPtr ctx;
  std::variant<dense::DistMatrix<double>, dense::DistMatrix<cplx>> m;
  PyLayout layout;
  py::object keep;
  Dtype dtype() const { return m.index() == 0 ? Dtype::F64 : Dtype::C128; }
  template <class T>
  dense::DistMatrix<T>& as() {
    return std::get<dense::DistMatrix<T>>(m);
  }
  template <class T>
  const dense::DistMatrix<T>& as() const {
    return std::get<dense::DistMatrix<T>>(m);
  }
};

/// tessel.BlockSparseMatrix (sparse.cpp). `bad_put` holds the first put_block error of this
/// rank since the last finalize (a wrong array shape or dtype): put_block is not collective, so
/// as in the library it is reported by the next finalize on every rank.
struct PySparse {
  ContextPtr ctx;
  sparse::BlockSparseMatrix<double> m;
  std::string bad_put;
};

// ---- conversions to Python (convert.cpp) ----
py::dict counts_dict(const PhaseCounts& c);
/// Not collective. {phase: counts_dict} of this rank's ledger.
py::dict ledger_local_dict(const CommLedger& l);

// ---- the parts of the module ----
void bind_context(py::module_& m);
void bind_dense(py::module_& m);
void bind_solvers(py::module_& m);
void bind_sparse(py::module_& m);
void bind_testing(py::module_& m);

}  // namespace tessel::python

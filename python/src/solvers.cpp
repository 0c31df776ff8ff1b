// tessel.purify: the density matrix of a Fock matrix, with a Python per-step callback.
#include "bindings.hpp"
#include "tessel/comm/p2p_coll.hpp"
#include "tessel/solvers/algebra.hpp"
#include "tessel/solvers/density.hpp"
#include "tessel/solvers/density_diag.hpp"
#include "tessel/solvers/purify.hpp"

namespace tessel::python {

namespace {

// (the solver's matrix as a tessel.DistMatrix in `lay` of `ctx`, its report): a solver's result.
py::tuple result(const ContextPtr& ctx, const PyLayout& lay, dense::DistMatrix<double>&& m,
                 py::dict report) {
  auto out = std::make_unique<PyDistMatrix>();
  out->ctx = ctx;
  out->layout = lay;
  out->m = std::move(m);
  return py::make_tuple(py::cast(std::move(out)), report);
}

py::dict step_dict(const solvers::PurifyStep& s) {
  py::dict d;
  d["iteration"] = s.iteration;
  d["idempotency_error"] = s.idempotency_error;
  d["trace"] = s.trace;
  d["band_energy"] = s.band_energy;
  d["seconds"] = s.seconds;
  return d;
}

py::tuple purify(py::object ctx_obj, py::object F_obj, std::int64_t nocc, py::object S_obj,
                 const std::string& method, std::optional<double> mu, double tol, int max_iter,
                 const std::string& algorithm, int n_dup, int p, int active_ranks, int replication,
                 const std::string& collectives, py::object on_step) {
  const ContextPtr cp = context_ptr(ctx_obj, "purify");
  PyContext& c = *cp;
  auto matrix = [](py::handle h, const char* name) -> PyDistMatrix& {
    if (!py::isinstance<PyDistMatrix>(h))
      throw InputError(std::string("purify: ") + name + " must be a tessel.DistMatrix");
    auto& x = h.cast<PyDistMatrix&>();
    TESSEL_CHECK(x.dtype() == Dtype::F64, InputError, "purify: ", name,
                 " is complex128 (expected a real symmetric float64 matrix)");
    return x;
  };
  PyDistMatrix& F = matrix(F_obj, "F");
  PyDistMatrix* S = S_obj.is_none() ? nullptr : &matrix(S_obj, "S");
  TESSEL_CHECK(F.ctx.get() == &c && (!S || S->ctx.get() == &c), InputError,
               "purify: a matrix belongs to another tessel.Context than ctx");
  TESSEL_CHECK(on_step.is_none() || PyCallable_Check(on_step.ptr()), InputError,
               "purify: on_step must be callable or None");
  solvers::PurifyOptions opt;
  opt.method = solvers::parse_purify_method(method);
  opt.mu = mu;
  opt.tol = tol;
  opt.max_iter = max_iter;
  opt.ssc.algorithm = dense::parse_ssc_algorithm(algorithm);
  opt.ssc.n_dup = n_dup;
  opt.ssc.p = p;
  opt.ssc.active_ranks = active_ranks;
  opt.ssc.replication = replication;
  opt.ssc.collectives = comm::parse_coll_impl(collectives);
  if (!on_step.is_none()) {
    // Runs on the active ranks with the GIL released around it; a Python exception becomes a
    // tessel::Error, which purify holds and agrees: every rank raises, none waits.
    opt.on_step = [&on_step](const solvers::PurifyStep& s) {
      py::gil_scoped_acquire gil;
      call_python("purify: on_step", [&] { on_step(step_dict(s)); });
    };
  }
  solvers::PurifyResult r;
  {
    py::gil_scoped_release nogil;
    if (S)
      r = solvers::purify(*c, F.as<double>(), S->as<double>(), nocc, opt);
    else
      r = solvers::purify(*c, F.as<double>(), nocc, opt);
  }
  py::dict res;
  res["iterations"] = r.iterations;
  res["idempotency_error"] = r.idempotency_error;
  res["trace_error"] = r.trace_error;
  res["band_energy"] = r.band_energy;
  res["p"] = r.p;
  res["n_dup"] = r.n_dup;
  res["mesh"] = r.mesh;
  res["method"] = solvers::to_string(r.method);
  res["seconds"] = r.seconds;
  res["ssc_seconds"] = r.ssc_seconds;
  res["flops"] = r.flops;
  res["ns_iterations"] = r.ns_iterations;
  res["ns_seconds"] = r.ns_seconds;
  return result(cp, F.layout, std::move(r.D), res);
}

// The result dict of tessel.density (either matrix kind).
template <class M>
py::dict density_dict(const solvers::DensityResult<M>& r) {
  py::dict res;
  res["method"] = solvers::to_string(r.method);
  res["method_reason"] = r.method_reason;
  res["iterations"] = r.iterations;
  res["sign_evaluations"] = r.sign_evaluations;
  res["mu"] = r.mu;
  res["band_energy"] = r.band_energy;
  res["trace_ps"] = r.trace_ps;
  res["idempotency"] = r.idempotency;
  res["residual"] = r.residual;
  res["multiplications"] = r.multiplications;
  res["inverse_iterations"] = r.inverse_iterations;
  return res;
}

solvers::DensityOptions density_options(const std::string& method, std::optional<double> mu,
                                        double tol, int max_iter) {
  solvers::DensityOptions opt;
  opt.method = solvers::parse_density_method(method);
  opt.mu = mu;
  opt.tol = tol;
  opt.max_iter = max_iter;
  return opt;
}

// tessel.density on dense matrices: solvers::density over the dense algebra (dense::multiply).
py::tuple density_dense(PyContext& c, const ContextPtr& cp, py::object H_obj, py::object S_obj,
                        std::int64_t electrons, const solvers::DensityOptions& opt) {
  auto matrix = [&c](py::handle h, const char* name) -> PyDistMatrix& {
    TESSEL_CHECK(py::isinstance<PyDistMatrix>(h), InputError, "density: ", name,
                 " must be a tessel.DistMatrix (as H) or both BlockSparseMatrix");
    auto& x = h.cast<PyDistMatrix&>();
    TESSEL_CHECK(x.dtype() == Dtype::F64, InputError, "density: ", name,
                 " is complex128 (expected a real symmetric float64 matrix)");
    TESSEL_CHECK(x.ctx.get() == &c, InputError, "density: ", name,
                 " belongs to another tessel.Context than ctx");
    return x;
  };
  PyDistMatrix& H = matrix(H_obj, "H");
  PyDistMatrix& S = matrix(S_obj, "S");
  solvers::DensityResult<dense::DistMatrix<double>> r;
  {
    py::gil_scoped_release nogil;
    solvers::Algebra<dense::DistMatrix<double>> alg(*c);
    r = solvers::density(alg, H.as<double>(), S.as<double>(), electrons, opt);
    if (!(r.P.layout() == H.layout.lay)) r.P = dense::redistribute(*c, r.P, H.layout.lay);
  }
  return result(cp, H.layout, std::move(r.P), density_dict(r));
}

// tessel.density on block-sparse matrices: solvers::density over the block-sparse algebra
// (sparse::multiply with `algorithm`, filtering every product at `eps`); P on H's distribution.
py::tuple density_sparse(PyContext& c, const ContextPtr& cp, py::object H_obj, py::object S_obj,
                         std::int64_t electrons, const solvers::DensityOptions& opt, double eps,
                         const std::string& algorithm) {
  auto matrix = [&c](py::handle h, const char* name) -> PySparse& {
    TESSEL_CHECK(py::isinstance<PySparse>(h), InputError, "density: ", name,
                 " must be a tessel.BlockSparseMatrix (as H) or both DistMatrix");
    auto& x = h.cast<PySparse&>();
    TESSEL_CHECK(x.ctx.get() == &c, InputError, "density: ", name,
                 " belongs to another tessel.Context than ctx");
    return x;
  };
  PySparse& H = matrix(H_obj, "H");
  PySparse& S = matrix(S_obj, "S");
  sparse::SpMultiplyOptions so;
  so.algorithm = sparse::parse_sp_algorithm(algorithm);
  so.filter_eps = eps;
  solvers::DensityResult<sparse::BlockSparseMatrix<double>> r;
  {
    py::gil_scoped_release nogil;
    solvers::SparseAlgebra alg(*c, so);
    r = solvers::density(alg, H.m, S.m, electrons, opt);
  }
  auto out = std::make_unique<PySparse>();
  out->ctx = cp;
  out->m = std::move(r.P);
  return py::make_tuple(py::cast(std::move(out)), density_dict(r));
}

py::tuple density(py::object ctx_obj, py::object H_obj, py::object S_obj, std::int64_t electrons,
                  const std::string& method, std::optional<double> mu, double tol, int max_iter,
                  double eps, const std::string& algorithm) {
  const ContextPtr cp = context_ptr(ctx_obj, "density");
  const solvers::DensityOptions opt = density_options(method, mu, tol, max_iter);
  if (py::isinstance<PySparse>(H_obj))
    return density_sparse(*cp, cp, H_obj, S_obj, electrons, opt, eps, algorithm);
  TESSEL_CHECK(eps == 0.0, InputError, "density: eps = ", eps,
               " (a filter threshold of block-sparse products; expected 0 for DistMatrix)");
  return density_dense(*cp, cp, H_obj, S_obj, electrons, opt);
}

}  // namespace

void bind_solvers(py::module_& m) {
  m.def("diagonalization_built", &solvers::diagonalization_built,
        "Not collective. True when this build has density's ScaLAPACK diagonalization (method "
        "\"diag\"; auto may choose it).");
  m.def(
      "choose_density_method",
      [](std::int64_t n, double fill, int ranks, bool sparse, bool mu_given, int diag_ranks,
         std::optional<bool> diag_built) {
        const auto c = solvers::choose_density_method(
            n, fill, ranks, sparse, diag_built.value_or(solvers::diagonalization_built()), mu_given,
            {}, diag_ranks);
        return py::make_tuple(solvers::to_string(c.method), c.reason);
      },
      py::arg("n"), py::arg("fill") = 1.0, py::arg("ranks") = 1, py::arg("sparse") = false,
      py::arg("mu_given") = false, py::arg("diag_ranks") = 0, py::arg("diag_built") = py::none(),
      "Pure. density's method=\"auto\" rule: (\"diag\" | \"sign\", reason) for n basis "
      "functions, S's stored fraction `fill`, the products on `ranks` ranks and the eigensolver "
      "on `diag_ranks` (0: the same; 1: replicated, as PySCF's eigh); `diag_built` None: this "
      "build's ScaLAPACK route (docs/density.md). tessel.InputError for n < 1 or diag_ranks < 0.");
  m.def("density", &density, py::arg("ctx"), py::arg("H"), py::arg("S"), py::arg("electrons"),
        py::arg("method") = "auto", py::arg("mu") = py::none(), py::arg("tol") = 1e-12,
        py::arg("max_iter") = 200, py::arg("eps") = 0.0, py::arg("algorithm") = "cannon", R"doc(
Collective. The density matrix P of one spin channel of (H, S) with `electrons` electrons
(even; tr(P S) = electrons / 2) by solvers::density, as `tessel density`, on dense matrices
(H and S tessel.DistMatrix) or block-sparse ones (both tessel.BlockSparseMatrix on the same
block sizes: every product by the block-sparse multiply with `algorithm` "cannon" or
"rma25d", filtered at `eps`; eps must be 0 for dense):
method "auto" (diag where the cost model says it is faster and the build has ScaLAPACK, else
sign; docs/density.md "Choosing the method"), "diag" (ScaLAPACK pdsyevd), "sign"
(chemical-potential search unless mu is given), "trs4", "canonical", "trs2"; S^-1/2 by
Newton-Schulz. Returns (P, result) with P in H's layout (dense) or distribution (block-sparse),
result: method (the one that ran),
method_reason (auto: why), iterations,
sign_evaluations, mu, band_energy (2 tr(P H)), trace_ps, idempotency, residual,
multiplications, inverse_iterations.)doc");
  m.def("purify", &purify, py::arg("ctx"), py::arg("F"), py::arg("nocc"), py::arg("S") = py::none(),
        py::arg("method") = "canonical", py::arg("mu") = py::none(), py::arg("tol") = 1e-11,
        py::arg("max_iter") = 200, py::arg("algorithm") = "5", py::arg("n_dup") = 0,
        py::arg("p") = 0, py::arg("active_ranks") = 0, py::arg("replication") = 0,
        py::arg("collectives") = "mpi", py::arg("on_step") = py::none(), R"doc(
Collective. The density matrix D of the symmetric float64 Fock matrix F with `nocc` occupied
states, by purification around SymmSquareCube (seed 000); returns (D, result) with D in F's
layout. S: the overlap for a non-orthogonal basis (D = Z D' Z, Z = S^-1/2 by Newton-Schulz).
method: "canonical", "mcweeny" (needs mu inside the gap), "trs2", "trs4"; algorithm: "3", "4",
"5", "2.5d"; n_dup (0 = auto), p (mesh edge, 0 = auto), active_ranks, replication,
collectives ("mpi" or "p2p") as `tessel purify`.
on_step(step) is called after every iteration on the active ranks (context rank 0 is always
one) with a dict {iteration, idempotency_error, trace, band_energy, seconds}; an exception it
raises stops the iteration and is raised as tessel.Error on every rank.
result: iterations, idempotency_error, trace_error, band_energy, p, n_dup, mesh, method,
seconds, ssc_seconds, flops, ns_iterations, ns_seconds.)doc");
}

}  // namespace tessel::python

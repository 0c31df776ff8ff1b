// tessel.Layout, tessel.DistMatrix (NumPy in and out, zero-copy views, .npy), multiply, explain.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "bindings.hpp"
#include "tessel/dense/multiply.hpp"
#include "tessel/io/npy.hpp"

namespace tessel::python {

// ---------------------------------------------------------------- layouts

PyLayout block_cyclic(const BlockCyclic& bc, int nranks) {
  PyLayout out;
  out.lay = layout::Layout::block_cyclic(bc.m, bc.n, bc.mb, bc.nb, bc.nprow, bc.npcol, bc.rsrc,
                                         bc.csrc, nranks);
  out.bc = bc;
  return out;
}

PyLayout default_layout(std::int64_t m, std::int64_t n, int nranks) {
  int pr = 1;
  for (int d = 1; static_cast<std::int64_t>(d) * d <= nranks; ++d)
    if (nranks % d == 0) pr = d;
  const int pc = nranks / pr;
  BlockCyclic bc;
  bc.m = m;
  bc.n = n;
  bc.nprow = pr;
  bc.npcol = pc;
  bc.mb = std::clamp<std::int64_t>((m + pr - 1) / pr, 1, 64);
  bc.nb = std::clamp<std::int64_t>((n + pc - 1) / pc, 1, 64);
  return block_cyclic(bc, nranks);
}

const char* dtype_name(Dtype d) { return d == Dtype::F64 ? "float64" : "complex128"; }

namespace {
/// NumPy's own test of dtype equivalence (native byte order float64 / complex128).
bool same_dtype(const py::dtype& a, const py::dtype& b) {
  return py::detail::npy_api::get().PyArray_EquivTypes_(a.ptr(), b.ptr());
}
}  // namespace

std::optional<Dtype> dtype_of(const py::array& a) {
  if (same_dtype(a.dtype(), py::dtype::of<double>())) return Dtype::F64;
  if (same_dtype(a.dtype(), py::dtype::of<cplx>())) return Dtype::C128;
  return std::nullopt;
}

ContextPtr context_ptr(py::handle h, const char* fn) {
  if (!py::isinstance<PyContext>(h))
    throw InputError(std::string(fn) + ": ctx must be a tessel.Context, not " +
                     std::string(py::str(py::type::handle_of(h).attr("__qualname__"))));
  return h.cast<ContextPtr>();
}

namespace {

/// Ranks of a Context or an int (for pure layout and plan functions).
int nranks_of(py::handle h, const char* what) {
  if (py::isinstance<PyContext>(h)) return h.cast<PyContext&>()->size();
  if (py::isinstance<py::int_>(h)) {
    const auto p = h.cast<long long>();
    TESSEL_CHECK(p >= 1 && p <= (1LL << 30), InputError, what, " = ", p, " ranks (expected >= 1)");
    return static_cast<int>(p);
  }
  throw InputError(std::string(what) + " must be a tessel.Context or a number of ranks");
}

std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__qualname__")); }

PyDistMatrix& matrix_arg(py::handle h, const char* fn, const char* name) {
  if (!py::isinstance<PyDistMatrix>(h))
    throw InputError(std::string(fn) + ": " + name + " must be a tessel.DistMatrix, not " +
                     type_name(h) + " (make one with tessel.DistMatrix.from_numpy)");
  return h.cast<PyDistMatrix&>();
}

const PyLayout& layout_arg(py::handle h, const char* fn) {
  if (!py::isinstance<PyLayout>(h))
    throw InputError(std::string(fn) + ": layout must be a tessel.Layout, not " + type_name(h));
  return h.cast<const PyLayout&>();
}

std::optional<Dtype> parse_dtype(py::handle h) {
  py::dtype d;
  try {
    d = py::dtype::from_args(py::reinterpret_borrow<py::object>(h));
  } catch (py::error_already_set&) { return std::nullopt; }
  if (same_dtype(d, py::dtype::of<double>())) return Dtype::F64;
  if (same_dtype(d, py::dtype::of<cplx>())) return Dtype::C128;
  return std::nullopt;
}

std::unique_ptr<PyDistMatrix> make_matrix(const ContextPtr& ctx, const PyLayout& lay, Dtype d) {
  TESSEL_CHECK(lay.lay.comm_size() == (*ctx)->size(), LayoutMismatch, "DistMatrix: layout is for ",
               lay.lay.comm_size(), " ranks, the context has ", (*ctx)->size());
  auto out = std::make_unique<PyDistMatrix>();
  out->ctx = ctx;
  out->layout = lay;
  if (d == Dtype::F64)
    out->m = dense::DistMatrix<double>(**ctx, lay.lay);
  else
    out->m = dense::DistMatrix<cplx>(**ctx, lay.lay);
  return out;
}

/// Not collective. Throws InputError unless `a` is a 2-D float64/complex128 ndarray
/// (optionally of `shape`).
void check_array(py::handle a, const char* fn, const char* what,
                 std::optional<std::pair<std::int64_t, std::int64_t>> shape = std::nullopt) {
  if (!py::isinstance<py::array>(a))
    throw InputError(std::string(fn) + ": " + what + " must be a NumPy array, not " + type_name(a));
  auto arr = py::reinterpret_borrow<py::array>(a);
  if (!dtype_of(arr))
    throw InputError(std::string(fn) + ": " + what + " has dtype " +
                     std::string(py::str(arr.dtype())) + " (expected float64 or complex128)");
  TESSEL_CHECK(arr.ndim() == 2, DimensionMismatch, fn, ": ", what, " has ", arr.ndim(),
               " dimensions (expected a 2-D array)");
  if (shape)
    TESSEL_CHECK(arr.shape(0) == shape->first && arr.shape(1) == shape->second, DimensionMismatch,
                 fn, ": ", what, " is ", arr.shape(0), " x ", arr.shape(1), " (expected ",
                 shape->first, " x ", shape->second, ")");
}

/// Collective. The dtype every rank passed (InputError on every rank when they differ).
Dtype agree_dtype(PyContext& c, Dtype mine, const char* fn) {
  int lo = static_cast<int>(mine), hi = lo;
  lo = c->comm().allreduce_value(lo, MPI_MIN);
  hi = c->comm().allreduce_value(hi, MPI_MAX);
  TESSEL_CHECK(lo == hi, InputError, fn,
               ": the ranks passed arrays of different dtypes "
               "(float64 on some, complex128 on others)");
  return mine;
}

template <class T>
void copy_in(dense::DistMatrix<T>& x, const py::array& a) {
  auto f = py::array_t<T, py::array::f_style>::ensure(a);  // a copy only when not column-major
  if (!f) throw py::error_already_set();
  const std::int64_t lr = x.local_rows(), lc = x.local_cols();
  for (std::int64_t j = 0; j < lc; ++j)
    std::memcpy(x.data() + j * x.ld(), f.data() + j * lr, static_cast<std::size_t>(lr) * sizeof(T));
}

/// DistMatrix.from_numpy: scatter from root, or each rank's local piece.
std::unique_ptr<PyDistMatrix> from_numpy(py::object ctx_obj, py::object array, py::object lay_obj,
                                         int root, bool local) {
  const ContextPtr cp = context_ptr(ctx_obj, "DistMatrix.from_numpy");
  PyContext& c = *cp;
  const char* fn = "DistMatrix.from_numpy";
  PhaseScope ph(c->ledger(), "python/from_numpy");
  std::optional<PyLayout> lay;
  if (!lay_obj.is_none()) lay = layout_arg(lay_obj, fn);
  if (local) {
    TESSEL_CHECK(lay.has_value(), InputError, fn, ": local=True needs the layout of the pieces");
    TESSEL_CHECK(lay->lay.comm_size() == c->size(), LayoutMismatch, fn, ": layout is for ",
                 lay->lay.comm_size(), " ranks, the context has ", c->size());
    const int r = c->rank();
    agree_py(*c, fn, [&] {
      check_array(array, fn, "the local piece",
                  std::make_pair(lay->lay.local_rows(r), lay->lay.local_cols(r)));
    });
    const Dtype d = agree_dtype(c, *dtype_of(py::reinterpret_borrow<py::array>(array)), fn);
    auto out = make_matrix(cp, *lay, d);
    if (d == Dtype::F64)
      copy_in(out->as<double>(), array);
    else
      copy_in(out->as<cplx>(), array);
    return out;
  }
  TESSEL_CHECK(root >= 0 && root < c->size(), InputError, fn, ": root = ", root, " (expected 0 .. ",
               c->size() - 1, ")");
  py::array full;  // root: the array in column-major order (a copy only when it is not)
  agree_py(*c, fn, [&] {
    if (c->rank() != root) return;
    check_array(array, fn, "array");
    auto a = py::reinterpret_borrow<py::array>(array);
    if (lay)
      TESSEL_CHECK(a.shape(0) == lay->lay.rows() && a.shape(1) == lay->lay.cols(),
                   DimensionMismatch, fn, ": array is ", a.shape(0), " x ", a.shape(1),
                   " but the layout is ", lay->lay.rows(), " x ", lay->lay.cols());
    if (*dtype_of(a) == Dtype::F64)
      full = py::array_t<double, py::array::f_style>::ensure(a);
    else
      full = py::array_t<cplx, py::array::f_style>::ensure(a);
    if (!full) throw py::error_already_set();
  });
  // Root tells the others the dtype and shape.
  std::int64_t head[3] = {0, 0, 0};
  if (c->rank() == root) {
    auto a = py::reinterpret_borrow<py::array>(array);
    head[0] = static_cast<std::int64_t>(*dtype_of(a));
    head[1] = a.shape(0);
    head[2] = a.shape(1);
  }
  c->comm().bcast(head, 3, root);
  const Dtype d = static_cast<Dtype>(head[0]);
  if (!lay) lay = default_layout(head[1], head[2], c->size());
  TESSEL_CHECK(lay->lay.comm_size() == c->size(), LayoutMismatch, fn, ": layout is for ",
               lay->lay.comm_size(), " ranks, the context has ", c->size());
  auto out = std::make_unique<PyDistMatrix>();
  out->ctx = cp;
  out->layout = *lay;
  auto scatter = [&](auto tag) {
    using T = decltype(tag);
    const T* p = c->rank() == root ? static_cast<const T*>(full.data()) : nullptr;
    py::gil_scoped_release nogil;
    out->m = dense::scatter<T>(*c, p, lay->lay, root);
  };
  if (d == Dtype::F64)
    scatter(double{});
  else
    scatter(cplx{});
  return out;
}

/// DistMatrix.view: each rank's column-major piece, without a copy.
std::unique_ptr<PyDistMatrix> view_numpy(py::object ctx_obj, py::object array, py::object lay_obj) {
  const ContextPtr cp = context_ptr(ctx_obj, "DistMatrix.view");
  PyContext& c = *cp;
  const char* fn = "DistMatrix.view";
  PhaseScope ph(c->ledger(), "python/view");
  const PyLayout lay = layout_arg(lay_obj, fn);
  TESSEL_CHECK(lay.lay.comm_size() == c->size(), LayoutMismatch, fn, ": layout is for ",
               lay.lay.comm_size(), " ranks, the context has ", c->size());
  const int r = c->rank();
  const std::int64_t lr = lay.lay.local_rows(r), lc = lay.lay.local_cols(r);
  std::int64_t ld = std::max<std::int64_t>(1, lr);
  agree_py(*c, fn, [&] {
    check_array(array, fn, "the local piece", std::make_pair(lr, lc));
    auto a = py::reinterpret_borrow<py::array>(array);
    const auto item = static_cast<std::int64_t>(a.itemsize());
    TESSEL_CHECK(a.writeable(), InputError, fn, ": the local piece is read-only");
    if (lr > 0 && lc > 0) {
      const bool colmajor = (lr == 1 || a.strides(0) == item) && a.strides(1) % item == 0 &&
                            (lc == 1 || a.strides(1) / item >= lr);
      TESSEL_CHECK(
          colmajor, InputError, fn, ": the local piece has strides (", a.strides(0), ", ",
          a.strides(1), ") bytes: not column-major with a leading dimension >= ", lr,
          " (use numpy.asfortranarray, or DistMatrix.from_numpy(..., local=True) to copy)");
      if (lc > 1) ld = a.strides(1) / item;
    }
  });
  auto a = py::reinterpret_borrow<py::array>(array);
  const Dtype d = agree_dtype(c, *dtype_of(a), fn);
  auto out = std::make_unique<PyDistMatrix>();
  out->ctx = cp;
  out->layout = lay;
  out->keep = array;
  if (d == Dtype::F64)
    out->m =
        dense::DistMatrix<double>::view(lay.lay, r, static_cast<double*>(a.mutable_data()), ld);
  else
    out->m = dense::DistMatrix<cplx>::view(lay.lay, r, static_cast<cplx*>(a.mutable_data()), ld);
  return out;
}

py::object to_numpy(PyDistMatrix& x, int root) {
  PyContext& c = *x.ctx;
  TESSEL_CHECK(root >= 0 && root < c->size(), InputError, "DistMatrix.to_numpy: root = ", root,
               " (expected 0 .. ", c->size() - 1, ")");
  auto run = [&](auto tag) -> py::object {
    using T = decltype(tag);
    std::vector<T> full;
    {
      py::gil_scoped_release nogil;
      full = dense::gather(*c, x.as<T>(), root);
    }
    if (c->rank() != root) return py::none();
    auto* v = new std::vector<T>(std::move(full));
    py::capsule own(v, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    const auto m = x.layout.lay.rows(), n = x.layout.lay.cols();
    return py::array_t<T>(
        {m, n}, {static_cast<py::ssize_t>(sizeof(T)), static_cast<py::ssize_t>(sizeof(T) * m)},
        v->data(), own);
  };
  return x.dtype() == Dtype::F64 ? run(double{}) : run(cplx{});
}

py::array local_view(py::object self) {
  auto& x = self.cast<PyDistMatrix&>();
  auto run = [&](auto tag) -> py::array {
    using T = decltype(tag);
    auto& d = x.as<T>();
    const auto lr = d.local_rows(), lc = d.local_cols();
    static T dummy{};
    T* p = d.data() ? d.data() : &dummy;  // an empty piece: a valid pointer for a 0-size view
    return py::array_t<T>(
        {lr, lc},
        {static_cast<py::ssize_t>(sizeof(T)), static_cast<py::ssize_t>(sizeof(T) * d.ld())}, p,
        self);
  };
  return x.dtype() == Dtype::F64 ? run(double{}) : run(cplx{});
}

std::vector<std::int64_t> descriptor(const PyLayout& l, int rank, int ctxt, std::int64_t lld) {
  TESSEL_CHECK(l.bc.has_value(), LayoutMismatch, "descriptor: ", l.lay.describe(),
               " is not a block-cyclic layout (no ScaLAPACK descriptor)");
  const auto& b = *l.bc;
  if (lld <= 0) lld = std::max<std::int64_t>(1, l.lay.local_rows(rank));
  return {1, ctxt, b.m, b.n, b.mb, b.nb, b.rsrc, b.csrc, lld};
}

// ---------------------------------------------------------------- multiply

py::dict plan_dict(const dense::GemmPlan& p) {
  py::dict d;
  d["m"] = p.m;
  d["n"] = p.n;
  d["k"] = p.k;
  d["p"] = p.p;
  d["grid"] = py::make_tuple(p.pm, p.pn, p.pk);
  d["used"] = p.used();
  d["idle"] = p.idle();
  d["kind"] = p.kind == dense::PlanKind::CallerGrid ? "caller_grid" : "grid";
  d["aligned"] = p.kind == dense::PlanKind::Grid && p.aligned();
  d["rounds"] = p.rounds;
  d["k_per_round"] = p.k_per_round();
  d["domain"] = py::make_tuple(p.dom_m(), p.dom_n(), p.dom_k());
  d["delta"] = p.delta;
  d["memory_words"] = p.memory_words;
  d["memory_words_needed"] = p.memory_words_needed();
  py::dict w;
  w["a"] = p.recv_words_a();
  w["b"] = p.recv_words_b();
  w["c"] = p.recv_words_c();
  w["total"] = p.recv_words();
  d["recv_words"] = w;
  d["bound_words"] = p.bound_words();
  d["bound_words_eq4"] = p.bound_words_eq4();
  d["recv_bound_words"] = p.recv_bound_words();  // what the busiest rank must receive
  d["predicted_time_s"] = p.cost.total_s();      // on the plan's machine model
  d["text"] = p.to_string();
  return d;
}

PhaseCounts minus(PhaseCounts a, const PhaseCounts& b) {
  a.p2p_sent_bytes -= b.p2p_sent_bytes;
  a.p2p_sent_msgs -= b.p2p_sent_msgs;
  a.p2p_recv_bytes -= b.p2p_recv_bytes;
  a.p2p_recv_msgs -= b.p2p_recv_msgs;
  a.coll_bytes -= b.coll_bytes;
  a.coll_calls -= b.coll_calls;
  a.rma_put_bytes -= b.rma_put_bytes;
  a.rma_get_bytes -= b.rma_get_bytes;
  a.rma_acc_bytes -= b.rma_acc_bytes;
  a.rma_ops -= b.rma_ops;
  a.shm_bytes -= b.shm_bytes;
  a.shm_msgs -= b.shm_msgs;
  return a;
}

template <class T>
T scalar_arg(py::handle h, Dtype d, const char* what) {
  cplx z;
  try {
    z = h.cast<cplx>();
  } catch (const py::cast_error&) {
    throw InputError(std::string("multiply: ") + what + " must be a number, not " + type_name(h));
  }
  if constexpr (std::is_same_v<T, double>) {
    TESSEL_CHECK(z.imag() == 0, InputError, "multiply: ", what, " = ", z,
                 " is complex but the matrices are ", dtype_name(d));
    return z.real();
  } else {
    return z;
  }
}

dense::MultiplyOptions multiply_options(const std::string& algorithm, double memory_words,
                                        double delta, int rounds, bool check_finite) {
  dense::MultiplyOptions o;
  o.algorithm = dense::parse_algorithm(algorithm);
  o.memory_words = memory_words;
  o.delta = delta;
  o.rounds = rounds;
  o.check_finite = check_finite;
  return o;
}

py::tuple multiply(py::object ctx_obj, py::object A_obj, py::object B_obj, py::object C_obj,
                   py::object alpha_obj, py::object beta_obj, const std::string& transa,
                   const std::string& transb, const std::string& algorithm, double memory_words,
                   double delta, int rounds, bool check_finite) {
  const char* fn = "multiply";
  const ContextPtr cp = context_ptr(ctx_obj, fn);
  PyContext& c = *cp;
  PyDistMatrix& A = matrix_arg(A_obj, fn, "A");
  PyDistMatrix& B = matrix_arg(B_obj, fn, "B");
  TESSEL_CHECK(A.dtype() == B.dtype(), InputError, "multiply: A is ", dtype_name(A.dtype()),
               " but B is ", dtype_name(B.dtype()));
  const Dtype d = A.dtype();
  const auto opa = dense::parse_op(transa), opb = dense::parse_op(transb);
  const auto opt = multiply_options(algorithm, memory_words, delta, rounds, check_finite);
  const std::int64_t m = opa == dense::Op::N ? A.layout.lay.rows() : A.layout.lay.cols();
  const std::int64_t n = opb == dense::Op::N ? B.layout.lay.cols() : B.layout.lay.rows();
  if (C_obj.is_none()) {
    const cplx beta = beta_obj.is_none() ? cplx(0) : scalar_arg<cplx>(beta_obj, d, "beta");
    TESSEL_CHECK(beta == cplx(0), InputError, "multiply: beta = ", beta,
                 " needs an input C (C is None)");
    C_obj = py::cast(make_matrix(cp, default_layout(m, n, c->size()), d));
  }
  PyDistMatrix& C = matrix_arg(C_obj, fn, "C");
  TESSEL_CHECK(C.dtype() == d, InputError, "multiply: A and B are ", dtype_name(d), " but C is ",
               dtype_name(C.dtype()));
  for (auto* x : {&A, &B, &C})
    TESSEL_CHECK(x->ctx.get() == &c, InputError,
                 "multiply: a matrix belongs to another tessel.Context than ctx");
  const auto before = c->ledger().phases();
  dense::MultiplyReport rep;
  double seconds = 0;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T alpha = scalar_arg<T>(alpha_obj, d, "alpha");
    const T beta = beta_obj.is_none() ? T(0) : scalar_arg<T>(beta_obj, d, "beta");
    py::gil_scoped_release nogil;
    const auto t0 = std::chrono::steady_clock::now();
    rep = dense::multiply(*c, alpha, opa, A.as<T>(), opb, B.as<T>(), beta, C.as<T>(), opt);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  if (d == Dtype::F64)
    run(double{});
  else
    run(cplx{});
  py::dict ledger;
  PhaseCounts total;
  for (const auto& [name, cnt] : c->ledger().phases()) {
    auto it = before.find(name);
    PhaseCounts delta_c = it == before.end() ? cnt : minus(cnt, it->second);
    total += delta_c;
    ledger[py::str(name)] = counts_dict(delta_c);
  }
  py::dict report;
  report["algorithm"] = dense::to_string(rep.algorithm);
  report["executed"] = rep.executed;
  report["plan"] = plan_dict(rep.plan);
  report["seconds"] = seconds;
  report["recv_bytes"] = total.recv_bytes();
  report["sent_bytes"] = total.sent_bytes();
  report["coll_bytes"] = total.coll_bytes;
  report["ledger"] = ledger;
  return py::make_tuple(C_obj, report);
}

py::dict explain(py::object where, py::object A_obj, py::object B_obj, py::object C_obj,
                 std::optional<std::int64_t> m, std::optional<std::int64_t> n,
                 std::optional<std::int64_t> k, const std::string& transa,
                 const std::string& transb, const std::string& algorithm, double memory_words,
                 double delta, int rounds) {
  const char* fn = "explain";
  const int p = nranks_of(where, "explain: ctx");
  const auto opa = dense::parse_op(transa), opb = dense::parse_op(transb);
  const auto opt = multiply_options(algorithm, memory_words, delta, rounds, false);
  PyDistMatrix* A = A_obj.is_none() ? nullptr : &matrix_arg(A_obj, fn, "A");
  PyDistMatrix* B = B_obj.is_none() ? nullptr : &matrix_arg(B_obj, fn, "B");
  PyDistMatrix* C = C_obj.is_none() ? nullptr : &matrix_arg(C_obj, fn, "C");
  TESSEL_CHECK((A == nullptr) == (B == nullptr), InputError,
               "explain: give both A and B or neither");
  if (A) {
    m = opa == dense::Op::N ? A->layout.lay.rows() : A->layout.lay.cols();
    k = opa == dense::Op::N ? A->layout.lay.cols() : A->layout.lay.rows();
    n = opb == dense::Op::N ? B->layout.lay.cols() : B->layout.lay.rows();
  }
  TESSEL_CHECK(m && n && k, InputError, "explain: give the matrices A and B, or the sizes m, n, k");
  // With A and B: priced as multiply() prices it, with the redistribution from the caller's
  // layouts (C's, or the layout multiply gives a new C), so this is the plan multiply runs.
  std::optional<PyLayout> c_lay;
  if (A) c_lay = C ? C->layout : default_layout(*m, *n, p);
  std::optional<dense::CallerLayouts> caller;
  if (A)
    caller.emplace(dense::CallerLayouts{opa != dense::Op::N, opb != dense::Op::N, A->layout.lay,
                                        B->layout.lay, c_lay->lay});
  const bool complex = A && A->dtype() == Dtype::C128;
  const auto plan = dense::plan_multiply(*m, *n, *k, p, opt, caller ? &*caller : nullptr, complex);
  py::dict d = plan_dict(plan);
  d["algorithm"] = algorithm;
  std::string runs = (opt.algorithm == dense::Algorithm::Summa2D ? "summa2d" : "optimal") +
                     std::string(" (grid ") + std::to_string(plan.pm) + "x" +
                     std::to_string(plan.pn) + "x" + std::to_string(plan.pk) + ")";
  if (A) {
    const auto w =
        dense::predict_words(p, plan, opa, opb, A->layout.lay, B->layout.lay, c_lay->lay);
    py::dict pw;
    pw["redistribution"] = w.redistribution;
    pw["optimal"] = w.optimal;
    pw["native"] = w.native < 0 ? py::object(py::none()) : py::object(py::float_(w.native));
    d["predicted_words"] = pw;
    if (plan.aligned() && plan.kind == dense::PlanKind::Grid)
      runs.insert(runs.size() - 1, ", aligned with the caller's layouts");
  }
  if (plan.kind == dense::PlanKind::CallerGrid) runs = "summa2d on the caller's layout";
  d["executes"] = runs;
  return d;
}

}  // namespace

void bind_dense(py::module_& m) {
  py::class_<PyLayout>(m, "Layout", R"doc(
The distribution of an m x n matrix over the ranks of a Context. Pure data (no MPI).
Block-cyclic layouts (ScaLAPACK's) know their descriptor; Layout.on_rank puts the whole
matrix on one rank.)doc")
      .def_static(
          "block_cyclic",
          [](py::object where, std::int64_t m, std::int64_t n, std::int64_t mb, std::int64_t nb,
             std::optional<std::pair<int, int>> grid, int rsrc, int csrc) {
            const int p = nranks_of(where, "Layout.block_cyclic: ctx");
            if (!grid) {
              auto d = default_layout(m, n, p);
              grid = std::make_pair(d.bc->nprow, d.bc->npcol);
            }
            BlockCyclic bc{m, n, mb, nb, grid->first, grid->second, rsrc, csrc};
            return block_cyclic(bc, p);
          },
          py::arg("ctx"), py::arg("m"), py::arg("n"), py::arg("mb") = 64, py::arg("nb") = 64,
          py::arg("grid") = py::none(), py::arg("rsrc") = 0, py::arg("csrc") = 0, R"doc(
ScaLAPACK block-cyclic: mb x nb blocks over a grid = (nprow, npcol) of ranks (row-major:
rank prow * npcol + pcol; default: the most square grid of all ranks, nprow <= npcol), first
block on process (rsrc, csrc). ctx: a Context or a number of ranks.)doc")
      .def_static(
          "default",
          [](py::object where, std::int64_t m, std::int64_t n) {
            return default_layout(m, n, nranks_of(where, "Layout.default: ctx"));
          },
          py::arg("ctx"), py::arg("m"), py::arg("n"),
          "The layout from_numpy uses when none is given: block-cyclic, the most square grid, "
          "blocks of at most 64 x 64 so that every grid row and column holds data.")
      .def_static(
          "from_descriptor",
          [](py::object where, std::vector<std::int64_t> desc, std::pair<int, int> grid) {
            TESSEL_CHECK(desc.size() == 9, InputError, "Layout.from_descriptor: descriptor has ",
                         desc.size(), " entries (expected the 9 of a ScaLAPACK descriptor)");
            TESSEL_CHECK(desc[0] == 1, InputError, "Layout.from_descriptor: DTYPE = ", desc[0],
                         " (expected 1, a dense block-cyclic descriptor)");
            BlockCyclic bc{desc[2],
                           desc[3],
                           desc[4],
                           desc[5],
                           grid.first,
                           grid.second,
                           static_cast<int>(desc[6]),
                           static_cast<int>(desc[7])};
            return block_cyclic(bc, nranks_of(where, "Layout.from_descriptor: ctx"));
          },
          py::arg("ctx"), py::arg("desc"), py::arg("grid"),
          "From a ScaLAPACK descriptor [1, ctxt, m, n, mb, nb, rsrc, csrc, lld] and the BLACS grid "
          "(nprow, npcol) of its context (row-major ranks). CTXT and LLD are not used.")
      .def_static(
          "on_rank",
          [](py::object where, std::int64_t m, std::int64_t n, int rank) {
            PyLayout l;
            const int p = nranks_of(where, "Layout.on_rank: ctx");
            TESSEL_CHECK(rank >= 0 && rank < p, InputError, "Layout.on_rank: rank = ", rank,
                         " (expected 0 .. ", p - 1, ")");
            l.lay = layout::Layout::on_rank(m, n, rank, p);
            return l;
          },
          py::arg("ctx"), py::arg("m"), py::arg("n"), py::arg("rank") = 0,
          "The whole matrix on one rank.")
      .def_property_readonly(
          "shape", [](const PyLayout& l) { return py::make_tuple(l.lay.rows(), l.lay.cols()); })
      .def_property_readonly("nranks", [](const PyLayout& l) { return l.lay.comm_size(); })
      .def_property_readonly("is_block_cyclic", [](const PyLayout& l) { return l.bc.has_value(); })
      .def_property_readonly("block_size",
                             [](const PyLayout& l) -> py::object {
                               if (!l.bc) return py::none();
                               return py::make_tuple(l.bc->mb, l.bc->nb);
                             })
      .def_property_readonly("grid",
                             [](const PyLayout& l) -> py::object {
                               if (!l.bc) return py::none();
                               return py::make_tuple(l.bc->nprow, l.bc->npcol);
                             })
      .def_property_readonly("src",
                             [](const PyLayout& l) -> py::object {
                               if (!l.bc) return py::none();
                               return py::make_tuple(l.bc->rsrc, l.bc->csrc);
                             })
      .def(
          "local_shape",
          [](const PyLayout& l, int rank) {
            return py::make_tuple(l.lay.local_rows(rank), l.lay.local_cols(rank));
          },
          py::arg("rank"), "Rows and columns stored on `rank` (0 x 0 when it owns nothing).")
      .def(
          "descriptor",
          [](const PyLayout& l, int rank, int ctxt, std::int64_t lld) {
            return descriptor(l, rank, ctxt, lld);
          },
          py::arg("rank"), py::arg("ctxt") = 0, py::arg("lld") = 0,
          "The ScaLAPACK descriptor [1, ctxt, m, n, mb, nb, rsrc, csrc, lld] as seen by `rank` "
          "(lld = max(1, local rows) unless given). LayoutMismatch when not block-cyclic.")
      .def("describe", [](const PyLayout& l) { return l.lay.describe(); })
      .def("__eq__", [](const PyLayout& a, const PyLayout& b) { return a.lay == b.lay; })
      .def("__repr__", [](const PyLayout& l) {
        std::string s = "tessel.Layout(" + l.lay.describe();
        if (l.bc)
          s += ", block-cyclic " + std::to_string(l.bc->mb) + "x" + std::to_string(l.bc->nb) +
               " blocks on " + std::to_string(l.bc->nprow) + "x" + std::to_string(l.bc->npcol);
        return s + ")";
      });

  py::class_<PyDistMatrix>(m, "DistMatrix", R"doc(
A dense matrix distributed over the ranks of a Context: a Layout and this rank's column-major
local piece (float64 or complex128), owned, or viewed in a NumPy array (DistMatrix.view).)doc")
      .def(py::init([](py::object ctx_obj, py::object lay, py::object dtype) {
             const ContextPtr ctx = context_ptr(ctx_obj, "DistMatrix");
             auto d = parse_dtype(dtype);
             TESSEL_CHECK(d.has_value(), InputError, "DistMatrix: dtype ",
                          std::string(py::str(dtype)), " (expected float64 or complex128)");
             return make_matrix(ctx, layout_arg(lay, "DistMatrix"), *d);
           }),
           py::arg("ctx"), py::arg("layout"), py::arg("dtype") = "float64",
           "Not collective. A zero matrix of `layout`.")
      .def_static("from_numpy", &from_numpy, py::arg("ctx"), py::arg("array"),
                  py::arg("layout") = py::none(), py::arg("root") = 0, py::arg("local") = false,
                  R"doc(
Collective. local=False: `array` (2-D float64 or complex128, any order; significant on `root`
only, others may pass None) is scattered into `layout` (default: Layout.default).
local=True: every rank passes its own local piece of `layout` (local_shape), which is copied.)doc")
      .def_static("view", &view_numpy, py::arg("ctx"), py::arg("array"), py::arg("layout"),
                  R"doc(
Collective. A matrix of `layout` whose local piece IS `array` on each rank (no copy): a
writeable column-major (Fortran-order, or a column slice of one) float64/complex128 array of
shape layout.local_shape(rank). The array is kept alive by the matrix.)doc")
      .def_static(
          "read_npy",
          [](py::object ctx_obj, const std::string& path, py::object lay_obj) {
            const ContextPtr cp = context_ptr(ctx_obj, "DistMatrix.read_npy");
            PyContext& c = *cp;
            std::optional<PyLayout> lay;
            if (!lay_obj.is_none()) lay = layout_arg(lay_obj, "DistMatrix.read_npy");
            const auto h = io::read_npy_header(*c, path);
            const bool complex = h.descr == io::npy_descr<cplx>();
            const std::int64_t rows = h.rows(), cols = h.cols();
            if (lay) io::expect_shape(path, lay->lay.rows(), lay->lay.cols(), rows, cols);
            const PyLayout use = lay ? *lay : default_layout(rows, cols, c->size());
            auto out = std::make_unique<PyDistMatrix>();
            out->ctx = cp;
            out->layout = use;
            auto make = [&](std::int64_t, std::int64_t) { return use.lay; };
            py::gil_scoped_release nogil;
            if (complex)
              out->m = io::read_npy<cplx>(*c, path, make);
            else
              out->m = io::read_npy<double>(*c, path, make);
            return out;
          },
          py::arg("ctx"), py::arg("path"), py::arg("layout") = py::none(),
          "Collective. Reads a float64 or complex128 .npy file (C or Fortran order) with "
          "collective MPI-IO into `layout` (default: Layout.default).")
      .def(
          "write_npy",
          [](PyDistMatrix& x, const std::string& path) {
            py::gil_scoped_release nogil;
            if (x.dtype() == Dtype::F64)
              io::write_npy(**x.ctx, path, x.as<double>());
            else
              io::write_npy(**x.ctx, path, x.as<cplx>());
          },
          py::arg("path"),
          "Collective. Writes a Fortran-order .npy file (collective MPI-IO; "
          "the file appears only when every rank succeeded).")
      .def("to_numpy", &to_numpy, py::arg("root") = 0,
           "Collective. The whole matrix as a NumPy array on `root`; None on the other ranks.")
      .def(
          "redistribute",
          [](PyDistMatrix& x, py::object lay_obj) {
            const PyLayout& lay = layout_arg(lay_obj, "DistMatrix.redistribute");
            auto out = std::make_unique<PyDistMatrix>();
            out->ctx = x.ctx;
            out->layout = lay;
            py::gil_scoped_release nogil;
            if (x.dtype() == Dtype::F64)
              out->m = dense::redistribute(**x.ctx, x.as<double>(), lay.lay);
            else
              out->m = dense::redistribute(**x.ctx, x.as<cplx>(), lay.lay);
            return out;
          },
          py::arg("layout"), "Collective. A copy in another layout of the same shape.")
      .def_property_readonly(
          "local", &local_view,
          "This rank's local piece as a NumPy array (column-major, no copy): writing to it "
          "writes the distributed matrix.")
      .def_property_readonly("shape",
                             [](const PyDistMatrix& x) {
                               return py::make_tuple(x.layout.lay.rows(), x.layout.lay.cols());
                             })
      .def_property_readonly("dtype",
                             [](const PyDistMatrix& x) {
                               return x.dtype() == Dtype::F64 ? py::dtype::of<double>()
                                                              : py::dtype::of<cplx>();
                             })
      .def_property_readonly("layout", [](const PyDistMatrix& x) { return x.layout; })
      .def_property_readonly("ctx", [](const PyDistMatrix& x) { return x.ctx; })
      .def_property_readonly(
          "ld",
          [](const PyDistMatrix& x) {
            return std::visit([](const auto& d) { return d.ld(); }, x.m);
          },
          "Leading dimension of the local piece (elements).")
      .def_property_readonly("is_view", [](const PyDistMatrix& x) { return !x.keep.is_none(); })
      .def(
          "descriptor",
          [](const PyDistMatrix& x, int ctxt) {
            const auto ld = std::visit([](const auto& d) { return d.ld(); }, x.m);
            return descriptor(x.layout, (*x.ctx)->rank(), ctxt, ld);
          },
          py::arg("ctxt") = 0,
          "This rank's ScaLAPACK descriptor of the local piece (lld = its leading dimension).")
      .def("__repr__", [](const PyDistMatrix& x) {
        return "tessel.DistMatrix(" + std::to_string(x.layout.lay.rows()) + " x " +
               std::to_string(x.layout.lay.cols()) + ", " + dtype_name(x.dtype()) + ")";
      });

  m.def("multiply", &multiply, py::arg("ctx"), py::arg("A"), py::arg("B"),
        py::arg("C") = py::none(), py::arg("alpha") = 1.0, py::arg("beta") = 0.0,
        py::arg("transa") = "N", py::arg("transb") = "N", py::arg("algorithm") = "auto",
        py::arg("memory_words") = 0.0, py::arg("delta") = 0.15, py::arg("rounds") = 0,
        py::arg("check_finite") = false, R"doc(
Collective. C = alpha op(A) op(B) + beta C; returns (C, report). C=None makes a new matrix
(Layout.default, beta must be 0). transa/transb: "N", "T", "C"; algorithm: "auto", "optimal",
"summa2d"; memory_words: per-rank budget in elements (0: unlimited); delta: fraction of ranks
that may idle; rounds: 0 = automatic; check_finite: refuse NaN/Inf.
report: algorithm, executed, plan (as explain), seconds (this rank's wall time), recv_bytes,
sent_bytes, coll_bytes (this rank, this call) and ledger (this rank's counters of this call per
phase, as Context.ledger(local=True)).)doc");
  m.def("explain", &explain, py::arg("ctx"), py::arg("A") = py::none(), py::arg("B") = py::none(),
        py::arg("C") = py::none(), py::arg("m") = py::none(), py::arg("n") = py::none(),
        py::arg("k") = py::none(), py::arg("transa") = "N", py::arg("transb") = "N",
        py::arg("algorithm") = "auto", py::arg("memory_words") = 0.0, py::arg("delta") = 0.15,
        py::arg("rounds") = 0, R"doc(
Not collective, no MPI. The plan multiply would run, as a dict: grid (pm, pn, pk), used, idle,
rounds, k_per_round, domain, recv_words {a, b, c, total} per rank, bound_words (COSMA
Theorem 2), memory_words_needed, text (the CLI's --explain); with A and B also
predicted_words {redistribution, optimal, native} and `executes`, what auto would run.
ctx: a Context or a number of ranks; give A and B (and C) or m, n, k.)doc");
}

}  // namespace tessel::python

// tessel._testing: the same library calls made from C++ alone, for the tests to compare the
// Python results against (the ledger of a multiply without any binding code in between).
#include "bindings.hpp"
#include "tessel/dense/multiply.hpp"

namespace tessel::python {

void bind_testing(py::module_& m) {
  auto t = m.def_submodule("_testing", "C++ reference calls for the tests.");
  t.def(
      "multiply_ledger",
      [](py::object comm, std::int64_t m_, std::int64_t n, std::int64_t k, std::int64_t mb,
         std::int64_t nb, int nprow, int npcol, const std::string& transa,
         const std::string& transb, const std::string& algorithm) {
        Context ctx(comm_of(comm, "multiply_ledger: comm"));
        const auto opa = dense::parse_op(transa), opb = dense::parse_op(transb);
        const std::int64_t ar = opa == dense::Op::N ? m_ : k, ac = opa == dense::Op::N ? k : m_;
        const std::int64_t br = opb == dense::Op::N ? k : n, bc = opb == dense::Op::N ? n : k;
        using layout::Layout;
        dense::DistMatrix<double> A(
            ctx, Layout::block_cyclic(ar, ac, mb, nb, nprow, npcol, 0, 0, ctx.size()));
        dense::DistMatrix<double> B(
            ctx, Layout::block_cyclic(br, bc, mb, nb, nprow, npcol, 0, 0, ctx.size()));
        dense::DistMatrix<double> C(
            ctx, Layout::block_cyclic(m_, n, mb, nb, nprow, npcol, 0, 0, ctx.size()));
        dense::MultiplyOptions opt;
        opt.algorithm = dense::parse_algorithm(algorithm);
        dense::multiply(ctx, 1.0, opa, A, opb, B, 0.0, C, opt);
        // (phase, [p2p_sent_bytes, p2p_sent_msgs, p2p_recv_bytes, p2p_recv_msgs, coll_bytes,
        //  coll_calls, rma_put_bytes, rma_get_bytes, rma_acc_bytes, rma_ops, shm_bytes, shm_msgs])
        py::list out;
        for (const auto& [name, c] : ctx.ledger().phases())
          out.append(py::make_tuple(
              name, std::vector<std::int64_t>{c.p2p_sent_bytes, c.p2p_sent_msgs, c.p2p_recv_bytes,
                                              c.p2p_recv_msgs, c.coll_bytes, c.coll_calls,
                                              c.rma_put_bytes, c.rma_get_bytes, c.rma_acc_bytes,
                                              c.rma_ops, c.shm_bytes, c.shm_msgs}));
        return out;
      },
      py::arg("comm"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("mb"), py::arg("nb"),
      py::arg("nprow"), py::arg("npcol"), py::arg("transa") = "N", py::arg("transb") = "N",
      py::arg("algorithm") = "auto",
      "Collective. A multiply of zero block-cyclic matrices in C++ alone; this rank's raw ledger.");
  t.def(
      "multiply_raw",
      [](py::object ctx_obj, PyDistMatrix& A, PyDistMatrix& B, PyDistMatrix& C,
         const std::string& transa, const std::string& transb, const std::string& algorithm) {
        const ContextPtr cp = context_ptr(ctx_obj, "multiply_raw");
        TESSEL_CHECK(A.dtype() == Dtype::F64 && B.dtype() == Dtype::F64 && C.dtype() == Dtype::F64,
                     InputError, "multiply_raw: float64 only");
        dense::MultiplyOptions opt;
        opt.algorithm = dense::parse_algorithm(algorithm);
        const auto opa = dense::parse_op(transa), opb = dense::parse_op(transb);
        py::gil_scoped_release nogil;
        dense::multiply(**cp, 1.0, opa, A.as<double>(), opb, B.as<double>(), 0.0, C.as<double>(),
                        opt);
      },
      py::arg("ctx"), py::arg("A"), py::arg("B"), py::arg("C"), py::arg("transa") = "N",
      py::arg("transb") = "N", py::arg("algorithm") = "auto",
      "Collective. C = A B through dense::multiply with nothing around it (no checks of the "
      "Python layer, no report): the baseline of bench/python_overhead.py.");
}

}  // namespace tessel::python

// tessel.Distribution and tessel.BlockSparseMatrix (include/tessel/sparse): blocks in and out
// as NumPy arrays, finalize, dense conversion and the algebra. SciPy input is Python code
// (tessel/sparse.py: BlockSparseMatrix.from_scipy) over put_block + finalize.
//
// Extension points: the block-sparse multiply and the CP2K/MatrixMarket readers (in the C++
// library, not bound yet) go here beside the algebra (module functions taking BlockSparseMatrix
// holders), with their errors agreed by the library as for finalize(). The density solvers on
// block-sparse matrices are bound in solvers.cpp (tessel.density takes either kind).
#include "bindings.hpp"
#include "tessel/sparse/block_sparse.hpp"
#include "tessel/sparse/convert.hpp"

namespace tessel::python {

namespace {

using sparse::BlockSizes;
using sparse::BlockSparseMatrix;
using sparse::Distribution;

int nranks(py::handle h) {
  if (py::isinstance<PyContext>(h)) return h.cast<PyContext&>()->size();
  if (!py::isinstance<py::int_>(h))
    throw InputError("Distribution.random: ctx must be a tessel.Context or a number of ranks");
  const auto p = h.cast<long long>();
  TESSEL_CHECK(p >= 1, InputError, "Distribution: nranks = ", p, " (expected >= 1)");
  return static_cast<int>(p);
}

std::unique_ptr<PySparse> wrap(const ContextPtr& ctx, BlockSparseMatrix<double> m) {
  auto out = std::make_unique<PySparse>();
  out->ctx = ctx;
  out->m = std::move(m);
  return out;
}

py::array block_copy(const double* p, int rows, int cols) {
  py::array_t<double, py::array::f_style> a({rows, cols});
  std::copy(p, p + static_cast<std::size_t>(rows) * cols, a.mutable_data());
  return std::move(a);
}

void same_ctx(const PySparse& a, const PySparse& b, const char* fn) {
  TESSEL_CHECK(a.ctx.get() == b.ctx.get(), InputError, fn,
               ": the matrices belong to different tessel.Contexts");
}

}  // namespace

void bind_sparse(py::module_& m) {
  py::class_<Distribution>(m, "Distribution", R"doc(
Where every block of a block-sparse matrix lives: block sizes along rows and columns, a
pr x pc process grid (rank prow * pc + pcol) and the process row of every block row and the
process column of every block column. Pure data (no MPI).)doc")
      .def(py::init([](std::vector<int> row_sizes, std::vector<int> col_sizes,
                       std::pair<int, int> grid, std::vector<int> row_dist,
                       std::vector<int> col_dist) {
             return Distribution(BlockSizes(std::move(row_sizes), "row block sizes"),
                                 BlockSizes(std::move(col_sizes), "column block sizes"), grid.first,
                                 grid.second, std::move(row_dist), std::move(col_dist));
           }),
           py::arg("row_sizes"), py::arg("col_sizes"), py::arg("grid"), py::arg("row_dist"),
           py::arg("col_dist"), "Caller-given distribution (as DBCSR's distribution_new).")
      .def_static(
          "random",
          [](py::object where, std::vector<int> row_sizes,
             std::optional<std::vector<int>> col_sizes, std::optional<std::pair<int, int>> grid,
             std::uint64_t seed) {
            const int p = nranks(where);
            if (!grid) grid = Distribution::default_grid(p);
            TESSEL_CHECK(grid->first * grid->second == p, GridError, "Distribution.random: grid ",
                         grid->first, " x ", grid->second, " is not ", p, " ranks");
            BlockSizes rows(row_sizes, "row block sizes");
            BlockSizes cols(col_sizes ? *col_sizes : row_sizes, "column block sizes");
            return Distribution::random(rows, cols, grid->first, grid->second, seed);
          },
          py::arg("ctx"), py::arg("row_sizes"), py::arg("col_sizes") = py::none(),
          py::arg("grid") = py::none(), py::arg("seed") = 1, R"doc(
Seeded random balanced distribution (the same on every rank for the same seed). ctx: a
Context or a number of ranks; col_sizes default to row_sizes; grid defaults to the most
square pr x pc = ranks, pr <= pc.)doc")
      .def_property_readonly("row_sizes",
                             [](const Distribution& d) { return d.row_blocks().sizes(); })
      .def_property_readonly("col_sizes",
                             [](const Distribution& d) { return d.col_blocks().sizes(); })
      .def_property_readonly("grid",
                             [](const Distribution& d) { return py::make_tuple(d.pr(), d.pc()); })
      .def_property_readonly("row_dist", &Distribution::row_dist)
      .def_property_readonly("col_dist", &Distribution::col_dist)
      .def_property_readonly("shape",
                             [](const Distribution& d) {
                               return py::make_tuple(d.row_blocks().extent(),
                                                     d.col_blocks().extent());
                             })
      .def_property_readonly("block_shape",
                             [](const Distribution& d) {
                               return py::make_tuple(d.row_blocks().count(),
                                                     d.col_blocks().count());
                             })
      .def(
          "owner",
          [](const Distribution& d, int brow, int bcol) {
            TESSEL_CHECK(brow >= 0 && brow < d.row_blocks().count() && bcol >= 0 &&
                             bcol < d.col_blocks().count(),
                         InputError, "Distribution.owner: block (", brow, ", ", bcol, ") outside ",
                         d.row_blocks().count(), " x ", d.col_blocks().count(), " blocks");
            return d.owner(brow, bcol);
          },
          py::arg("brow"), py::arg("bcol"))
      .def("transposed", &Distribution::transposed)
      .def("describe", &Distribution::describe)
      .def("__eq__", [](const Distribution& a, const Distribution& b) { return a == b; })
      .def("__repr__",
           [](const Distribution& d) { return "tessel.Distribution(" + d.describe() + ")"; });

  py::class_<PySparse>(m, "BlockSparseMatrix", R"doc(
A distributed block-sparse matrix of float64 (DBCSR's storage): per-rank block-CSR of the
blocks it owns. Blocks are put on any rank and moved to their owners by finalize().)doc")
      .def(py::init([](py::object ctx_obj, const Distribution& dist, const std::string& name) {
             const ContextPtr ctx = context_ptr(ctx_obj, "BlockSparseMatrix");
             auto out = std::make_unique<PySparse>();
             out->ctx = ctx;
             out->m = BlockSparseMatrix<double>(**ctx, dist, name);
             return out;
           }),
           py::arg("ctx"), py::arg("dist"), py::arg("name") = "matrix",
           "Not collective. An empty matrix of `dist` (dist's grid must have ctx.size ranks).")
      .def(
          "put_block",
          [](PySparse& s, int brow, int bcol, py::object block, bool accumulate) {
            const auto& d = s.m.distribution();
            const bool in_range = brow >= 0 && brow < d.row_blocks().count() && bcol >= 0 &&
                                  bcol < d.col_blocks().count();
            if (!in_range) {  // the library records it for finalize
              s.m.put_block(brow, bcol, nullptr, accumulate);
              return;
            }
            const int r = d.row_blocks().size(brow), c = d.col_blocks().size(bcol);
            py::array_t<double, py::array::f_style> a;
            std::string err;
            if (!py::isinstance<py::array>(block) ||
                !(a = py::array_t<double, py::array::f_style>::ensure(block)) ||
                py::reinterpret_borrow<py::array>(block).dtype().kind() == 'c') {
              PyErr_Clear();
              err = "a float64 NumPy array";
            } else if (a.ndim() != 2 || a.shape(0) != r || a.shape(1) != c) {
              err = "shape (" + std::to_string(r) + ", " + std::to_string(c) + ")";
            }
            if (!err.empty()) {
              if (s.bad_put.empty())
                s.bad_put = s.m.name() + ": put_block(" + std::to_string(brow) + ", " +
                            std::to_string(bcol) + ") on rank " + std::to_string(s.m.rank()) +
                            ": the block must be " + err;
              return;
            }
            s.m.put_block(brow, bcol, a.data(), accumulate);
          },
          py::arg("brow"), py::arg("bcol"), py::arg("block"), py::arg("accumulate") = false,
          R"doc(
Not collective. Stores block (brow, bcol) (a real array of its rows x cols), or adds it with
accumulate=True. A block owned by another rank moves at the next finalize(). A bad put (index
out of range, wrong shape or dtype) stores nothing; the next finalize() raises InputError
naming it on every rank.)doc")
      .def(
          "get_block",
          [](PySparse& s, int brow, int bcol) -> py::object {
            const double* p = s.m.get_block(brow, bcol);
            if (!p) return py::none();
            const auto& d = s.m.distribution();
            return block_copy(p, d.row_blocks().size(brow), d.col_blocks().size(bcol));
          },
          py::arg("brow"), py::arg("bcol"),
          "Not collective. A copy of the stored local block, or None (not stored or not local).")
      .def(
          "finalize",
          [](PySparse& s) {
            std::string bad = std::move(s.bad_put);
            s.bad_put.clear();
            (*s.ctx)->agree([&] {
              if (!bad.empty()) throw InputError(bad);
            });
            py::gil_scoped_release nogil;
            s.m.finalize();
          },
          "Collective. Moves put blocks to their owners, sorts and recomputes norms.")
      .def(
          "blocks",
          [](const PySparse& s) {
            py::list out;
            s.m.for_each_block([&](int br, int bc, const double* p, int r, int c) {
              out.append(py::make_tuple(br, bc, block_copy(p, r, c)));
            });
            return out;
          },
          "Not collective. [(brow, bcol, block copy)] of the blocks stored on this rank.")
      .def_property_readonly(
          "shape", [](const PySparse& s) { return py::make_tuple(s.m.rows(), s.m.cols()); })
      .def_property_readonly("distribution", [](const PySparse& s) { return s.m.distribution(); })
      .def_property_readonly("name", [](const PySparse& s) { return s.m.name(); })
      .def_property_readonly("ctx", [](const PySparse& s) { return s.ctx; })
      .def_property_readonly("local_nblocks", [](const PySparse& s) { return s.m.local_nblocks(); })
      .def_property_readonly(
          "is_finalized", [](const PySparse& s) { return s.m.is_finalized() && s.bad_put.empty(); })
      .def(
          "to_dense",
          [](const PySparse& s, py::object lay_obj) {
            auto out = std::make_unique<PyDistMatrix>();
            out->ctx = s.ctx;
            if (!lay_obj.is_none() && !py::isinstance<PyLayout>(lay_obj))
              throw InputError(
                  "BlockSparseMatrix.to_dense: layout must be a tessel.Layout or None");
            out->layout = lay_obj.is_none()
                              ? default_layout(s.m.rows(), s.m.cols(), (*s.ctx)->size())
                              : lay_obj.cast<PyLayout>();
            py::gil_scoped_release nogil;
            out->m = sparse::to_dense(**s.ctx, s.m, out->layout.lay);
            return out;
          },
          py::arg("layout") = py::none(),
          "Collective. The dense DistMatrix (default layout: Layout.default).")
      .def(
          "to_numpy",
          [](const PySparse& s, int root) -> py::object {
            PyContext& c = *s.ctx;
            TESSEL_CHECK(root >= 0 && root < c->size(), InputError,
                         "BlockSparseMatrix.to_numpy: root = ", root, " (expected 0 .. ",
                         c->size() - 1, ")");
            const auto lay = layout::Layout::on_rank(s.m.rows(), s.m.cols(), root, c->size());
            dense::DistMatrix<double> d;
            {
              py::gil_scoped_release nogil;
              d = sparse::to_dense(*c, s.m, lay);
            }
            if (c->rank() != root) return py::none();
            py::array_t<double, py::array::f_style> a({s.m.rows(), s.m.cols()});
            for (std::int64_t j = 0; j < s.m.cols(); ++j)
              std::copy(d.data() + j * d.ld(), d.data() + j * d.ld() + s.m.rows(),
                        a.mutable_data() + j * s.m.rows());
            return std::move(a);
          },
          py::arg("root") = 0,
          "Collective. The dense matrix as a NumPy array on `root` (None elsewhere); for small cases.")
      .def_static(
          "from_dense",
          [](const PyDistMatrix& x, const Distribution& dist, double eps, const std::string& name) {
            TESSEL_CHECK(
                x.dtype() == Dtype::F64, InputError,
                "BlockSparseMatrix.from_dense: the matrix is complex128 (expected float64)");
            py::gil_scoped_release nogil;
            return wrap(x.ctx, sparse::from_dense(**x.ctx, x.as<double>(), dist, eps, name));
          },
          py::arg("x"), py::arg("dist"), py::arg("eps") = 0.0, py::arg("name") = "matrix",
          "Collective. The blocks of the dense DistMatrix x with Frobenius norm > eps.")
      .def(
          "copy", [](const PySparse& s) { return wrap(s.ctx, s.m); },
          "Not collective. A deep copy.")
      // ---- algebra ----
      .def(
          "trace", [](const PySparse& s) { return sparse::trace(**s.ctx, s.m); }, "Collective.")
      .def(
          "dot",
          [](const PySparse& a, const PySparse& b) {
            same_ctx(a, b, "dot");
            return sparse::dot(**a.ctx, a.m, b.m);
          },
          py::arg("other"), "Collective. sum_ij A_ij B_ij (same distribution).")
      .def(
          "norm", [](const PySparse& s) { return sparse::frobenius_norm(**s.ctx, s.m); },
          "Collective. Frobenius norm.")
      .def(
          "occupation", [](const PySparse& s) { return sparse::occupation(**s.ctx, s.m); },
          "Collective. Fraction of block positions stored.")
      .def(
          "nblocks", [](const PySparse& s) { return sparse::nblocks(**s.ctx, s.m); },
          "Collective. Stored blocks over all ranks.")
      .def(
          "scale", [](PySparse& s, double alpha) { sparse::scale(s.m, alpha); }, py::arg("alpha"),
          "Not collective. A *= alpha.")
      .def(
          "shift", [](PySparse& s, double alpha) { sparse::shift(s.m, alpha); }, py::arg("alpha"),
          "Not collective. A += alpha I.")
      .def(
          "add",
          [](PySparse& a, const PySparse& b, double alpha, double beta) {
            same_ctx(a, b, "add");
            sparse::add(a.m, alpha, b.m, beta);
          },
          py::arg("other"), py::arg("alpha") = 1.0, py::arg("beta") = 1.0,
          "Not collective. A = alpha A + beta B (same distribution).")
      .def(
          "filter", [](PySparse& s, double eps) { sparse::filter(s.m, eps); }, py::arg("eps"),
          "Not collective. Drops blocks of Frobenius norm < eps.")
      .def(
          "transpose",
          [](const PySparse& s, std::optional<Distribution> to) {
            py::gil_scoped_release nogil;
            return wrap(
                s.ctx, to ? sparse::transpose(**s.ctx, s.m, *to) : sparse::transpose(**s.ctx, s.m));
          },
          py::arg("dist") = py::none(), "Collective. A^T (default: the transposed distribution).")
      .def(
          "redistribute",
          [](const PySparse& s, const Distribution& to) {
            py::gil_scoped_release nogil;
            return wrap(s.ctx, sparse::redistribute(**s.ctx, s.m, to));
          },
          py::arg("dist"), "Collective. A copy on another distribution of the same block sizes.")
      .def("__repr__", [](const PySparse& s) {
        return "tessel.BlockSparseMatrix(" + s.m.name() + ": " + s.m.distribution().describe() +
               ")";
      });
}

}  // namespace tessel::python

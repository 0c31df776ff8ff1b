"""Every bad argument raises a tessel error with the same message on every rank: no hang, no
segfault. After each, a collective on the same communicator proves the ranks still agree."""
import numpy as np
import pytest
from mpi4py import MPI

import tessel
from conftest import on_root, raises_everywhere


@pytest.fixture
def small(ctx):
    A = np.arange(12.0).reshape(4, 3)
    return tessel.DistMatrix.from_numpy(ctx, on_root(ctx, A))


def test_bad_communicators(ctx):
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.Context(5), match="mpi4py communicator")
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.Context("world"), match="not str")
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.Context(MPI.COMM_NULL), match="COMM_NULL")
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.Context(MPI.COMM_WORLD.Get_group()),
                      match="not Group")


def test_intercommunicator(ctx):
    world = MPI.COMM_WORLD
    if world.Get_size() < 2:
        pytest.skip("an intercommunicator needs two groups")
    color = world.Get_rank() % 2
    local = world.Split(color, world.Get_rank())
    inter = local.Create_intercomm(0, world, 1 - color, tag=7)
    try:
        raises_everywhere(ctx, tessel.InputError, lambda: tessel.Context(inter), match="intercommunicator")
    finally:
        inter.Free()
        local.Free()


def test_from_numpy_bad_arrays(ctx):
    fn = tessel.DistMatrix.from_numpy
    raises_everywhere(ctx, tessel.InputError, lambda: fn(ctx, on_root(ctx, np.ones((3, 3), dtype=np.int64))),
                      match="dtype int64")
    raises_everywhere(ctx, tessel.InputError, lambda: fn(ctx, on_root(ctx, np.ones((3, 3), dtype=np.float32))),
                      match="dtype float32")
    raises_everywhere(ctx, tessel.InputError, lambda: fn(ctx, on_root(ctx, np.ones((3, 3), dtype=">f8"))),
                      match="dtype >f8")
    raises_everywhere(ctx, tessel.InputError, lambda: fn(ctx, on_root(ctx, [[1.0, 2.0]])), match="NumPy array")
    raises_everywhere(ctx, tessel.DimensionMismatch, lambda: fn(ctx, on_root(ctx, np.ones((2, 2, 2)))),
                      match="3 dimensions")
    lay = tessel.Layout.block_cyclic(ctx, 5, 5, 2, 2)
    raises_everywhere(ctx, tessel.DimensionMismatch, lambda: fn(ctx, on_root(ctx, np.ones((5, 4))), layout=lay),
                      match="5 x 4 but the layout is 5 x 5")
    raises_everywhere(ctx, tessel.InputError, lambda: fn(ctx, np.ones((2, 2)), root=ctx.size), match="root")
    raises_everywhere(ctx, tessel.InputError, lambda: fn(ctx, np.ones((5, 5)), layout="5x5"), match="tessel.Layout")
    other = tessel.Layout.block_cyclic(ctx.size + 1, 5, 5, 2, 2)
    raises_everywhere(ctx, tessel.LayoutMismatch, lambda: fn(ctx, on_root(ctx, np.ones((5, 5))), layout=other),
                      match="ranks")
    raises_everywhere(ctx, tessel.LayoutMismatch, lambda: fn(ctx, np.ones((1, 1)), layout=other, local=True),
                      match="ranks")
    raises_everywhere(ctx, tessel.LayoutMismatch, lambda: tessel.DistMatrix.view(ctx, np.ones((1, 1)), other),
                      match="ranks")


def test_local_pieces_wrong_on_one_rank(ctx):
    lay = tessel.Layout.block_cyclic(ctx, 6, 6, 1, 1)
    lr, lc = lay.local_shape(ctx.rank)
    last = ctx.size - 1
    piece = np.ones((lr + (ctx.rank == last), lc))
    raises_everywhere(ctx, tessel.DimensionMismatch,
                      lambda: tessel.DistMatrix.from_numpy(ctx, piece, layout=lay, local=True),
                      match=r"\(expected")
    good = np.ones((lr, lc), dtype=np.complex128 if ctx.rank == last else np.float64)
    if ctx.size > 1:
        raises_everywhere(ctx, tessel.InputError,
                          lambda: tessel.DistMatrix.from_numpy(ctx, good, layout=lay, local=True),
                          match="different dtypes")


def test_view_non_contiguous_on_one_rank(ctx):
    lay = tessel.Layout.block_cyclic(ctx, 8, 8, 2, 2)
    lr, lc = lay.local_shape(ctx.rank)
    piece = np.zeros((lr, lc), order="F")
    if ctx.rank == 0:
        piece = np.zeros((2 * lr, lc), order="F")[::2]  # every other row: not column-major
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.DistMatrix.view(ctx, piece, lay),
                      match="not column-major")
    ro = np.zeros((lr, lc), order="F")
    ro.flags.writeable = False
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.DistMatrix.view(ctx, ro, lay), match="read-only")


def test_multiply_bad_arguments(ctx, small):
    mul = tessel.multiply
    raises_everywhere(ctx, tessel.InputError, lambda: mul(ctx, np.ones((4, 3)), small), match="must be a tessel.DistMatrix")
    raises_everywhere(ctx, tessel.InputError, lambda: mul(5, small, small), match="ctx must be a tessel.Context")
    raises_everywhere(ctx, tessel.DimensionMismatch, lambda: mul(ctx, small, small), match="inner dimensions differ")
    raises_everywhere(ctx, tessel.InputError, lambda: mul(ctx, small, small, transa="X"), match="expected N, T or C")
    raises_everywhere(ctx, tessel.InputError, lambda: mul(ctx, small, small, transb="T", algorithm="fast"),
                      match="algorithm")
    raises_everywhere(ctx, tessel.InputError, lambda: mul(ctx, small, small, transb="T", beta=1.0), match="needs an input C")
    raises_everywhere(ctx, tessel.InputError, lambda: mul(ctx, small, small, transb="T", alpha=1j), match="complex")
    raises_everywhere(ctx, tessel.InputError, lambda: mul(ctx, small, small, transb="T", alpha="two"), match="number")
    z = tessel.DistMatrix(ctx, tessel.Layout.default(ctx, 3, 4), dtype="complex128")
    raises_everywhere(ctx, tessel.InputError, lambda: mul(ctx, small, z), match="complex128")
    wrong_c = tessel.DistMatrix(ctx, tessel.Layout.default(ctx, 5, 4))
    raises_everywhere(ctx, tessel.DimensionMismatch, lambda: mul(ctx, small, small, wrong_c, transb="T"), match="C is 5 x 4")
    raises_everywhere(ctx, tessel.GridError, lambda: mul(ctx, small, small, transb="T", memory_words=1), match="memory")
    nan = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, np.full((4, 3), np.nan)))
    raises_everywhere(ctx, tessel.InputError, lambda: mul(ctx, nan, small, transb="T", check_finite=True))
    other = tessel.Context()
    x = tessel.DistMatrix(other, tessel.Layout.default(other, 3, 4))
    raises_everywhere(ctx, tessel.InputError, lambda: mul(ctx, small, x), match="another tessel.Context")


def test_layout_and_matrix_bad_arguments(ctx):
    raises_everywhere(ctx, tessel.GridError,
                      lambda: tessel.Layout.block_cyclic(ctx, 4, 4, 2, 2, grid=(ctx.size + 1, 1)), match="needs")
    raises_everywhere(ctx, tessel.LayoutMismatch, lambda: tessel.Layout.block_cyclic(ctx, 4, 4, 0, 2), match="mb")
    raises_everywhere(ctx, tessel.LayoutMismatch,
                      lambda: tessel.DistMatrix(ctx, tessel.Layout.default(ctx.size + 1, 4, 4)), match="ranks")
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.DistMatrix(ctx, tessel.Layout.default(ctx, 4, 4), dtype="int32"), match="dtype")
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.DistMatrix(ctx, tessel.Layout.default(ctx, 4, 4), dtype="no such type"), match="dtype")
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.Layout.from_descriptor(ctx, [2, 0, 4, 4, 2, 2, 0, 0, 4], (1, 1)), match="DTYPE")
    raises_everywhere(ctx, tessel.LayoutMismatch,
                      lambda: tessel.Layout.on_rank(ctx, 4, 4).descriptor(0), match="not a block-cyclic")
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.Layout.default(0, 4, 4), match="ranks")


def test_npy_bad_files(ctx, tmp_path_factory):
    d = ctx.comm.bcast(str(tmp_path_factory.mktemp("bad")) if ctx.rank == 0 else None)
    if ctx.rank == 0:
        np.save(d + "/i.npy", np.ones((3, 3), dtype=np.int32))
        open(d + "/junk.npy", "wb").write(b"not a numpy file")
    ctx.barrier()
    rd = tessel.DistMatrix.read_npy
    raises_everywhere(ctx, tessel.InputError, lambda: rd(ctx, d + "/missing.npy"))
    raises_everywhere(ctx, tessel.InputError, lambda: rd(ctx, d + "/junk.npy"))
    raises_everywhere(ctx, tessel.InputError, lambda: rd(ctx, d + "/i.npy"), match="dtype")
    x = tessel.DistMatrix(ctx, tessel.Layout.default(ctx, 2, 2))
    raises_everywhere(ctx, tessel.InputError, lambda: x.write_npy(d + "/no/such/dir/x.npy"))


def test_purify_bad_arguments(ctx):
    F = np.diag(np.arange(6.0))
    dF = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, F))
    pur = tessel.purify
    raises_everywhere(ctx, tessel.InputError, lambda: pur(ctx, dF, 0), match="nocc")
    raises_everywhere(ctx, tessel.InputError, lambda: pur(ctx, dF, 3, method="magic"), match="method")
    raises_everywhere(ctx, tessel.InputError, lambda: pur(ctx, dF, 3, on_step=42), match="callable")
    raises_everywhere(ctx, tessel.InputError, lambda: pur(ctx, F, 3), match="tessel.DistMatrix")
    rect = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, np.ones((6, 5))))
    raises_everywhere(ctx, tessel.DimensionMismatch, lambda: pur(ctx, rect, 3), match="square")
    cx = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, F.astype(np.complex128)))
    raises_everywhere(ctx, tessel.InputError, lambda: pur(ctx, cx, 3), match="complex128")
    asym = F.copy()
    asym[0, 5] = 1.0
    da = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, asym))
    raises_everywhere(ctx, tessel.InputError, lambda: pur(ctx, da, 3), match="symmetric")


def test_agree_carries_python_errors(ctx):
    def check():
        if ctx.rank == ctx.size - 1:
            raise KeyError("only here")
    raises_everywhere(ctx, tessel.Error, lambda: ctx.agree(check), match="KeyError")

    def dim():
        if ctx.rank == 0:
            raise tessel.DimensionMismatch("rank 0 disagrees")
    raises_everywhere(ctx, tessel.DimensionMismatch, lambda: ctx.agree(dim), match="rank 0 disagrees")


def test_not_a_context(ctx):
    for call in (lambda: tessel.DistMatrix.from_numpy(MPI.COMM_WORLD, np.ones((2, 2))),
                 lambda: tessel.DistMatrix(None, tessel.Layout.default(ctx, 2, 2)),
                 lambda: tessel.DistMatrix.read_npy("ctx", "x.npy"),
                 lambda: tessel.purify(1, None, 1)):
        raises_everywhere(ctx, tessel.InputError, call, match="ctx must be a tessel.Context")

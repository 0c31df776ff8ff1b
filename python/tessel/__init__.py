"""tessel: communication-optimal kernels of electronic-structure codes, from Python.

Every call that takes a ``ctx`` is collective over the ranks of that :class:`Context`
(made from an mpi4py communicator) unless its docstring says otherwise. Errors are raised as
:class:`Error` or one of its subclasses with the same message on every rank. See
docs/python.md.
"""
from mpi4py import MPI as _MPI  # noqa: F401  (initialises MPI before the module loads)

from ._tessel import (  # noqa: F401
    BlockSparseMatrix,
    Context,
    DimensionMismatch,
    DistMatrix,
    Distribution,
    Error,
    GridError,
    InputError,
    Layout,
    LayoutMismatch,
    MpiError,
    __version__,
    _testing,
    choose_density_method,
    density,
    diagonalization_built,
    explain,
    mpi_flavour,
    multiply,
)
from ._tessel import purify as _purify
from .sparse import _from_scipy

BlockSparseMatrix.from_scipy = staticmethod(_from_scipy)


def purify(ctx, F, nocc, S=None, method="canonical", on_step=None, **options):
    """Collective. The density matrix of F with ``nocc`` occupied states: returns (D, result).

    Options as the compiled ``tessel._tessel.purify`` (mu, tol, max_iter, algorithm, n_dup, p,
    active_ranks, replication, collectives). ``on_step(step)`` runs after every iteration on
    the active ranks; if it raises, every rank raises :class:`Error`, and on the rank(s)
    where the callback raised, the original exception is chained as ``__cause__``.
    """
    raised = []
    callback = None
    if on_step is not None:
        if not callable(on_step):
            raise InputError("purify: on_step must be callable or None")

        def callback(step):
            try:
                on_step(step)
            except BaseException as e:  # noqa: B902 - handed on to every rank as tessel.Error
                raised.append(e)
                raise

    try:
        return _purify(ctx, F, nocc, S=S, method=method, on_step=callback, **options)
    except Error as err:
        if raised:
            raise err from raised[0]
        raise


__all__ = [
    "BlockSparseMatrix", "Context", "DimensionMismatch", "DistMatrix", "Distribution", "Error",
    "GridError", "InputError", "Layout", "LayoutMismatch", "MpiError", "choose_density_method",
    "density", "diagonalization_built", "explain", "multiply", "purify",
]

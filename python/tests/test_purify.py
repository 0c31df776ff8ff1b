"""purify against numpy.linalg.eigh; the per-step callback and its exceptions."""
import json

import numpy as np
import pytest
import scipy.linalg

import tessel
from conftest import on_root, raises_everywhere


def fock(shared_data):
    """The PySCF Fock matrix of 8 waters (STO-3G, n = 56, nocc = 40), or a model with a gap."""
    base = shared_data / "pyscf" / "h2o8_sto3g_rhf"
    try:
        F = np.load(str(base) + "_F_orth.npy")
        nocc = json.loads(open(str(base) + ".json").read())["nocc"]
        return F, nocc
    except OSError:
        rng = np.random.default_rng(5)
        Q, _ = np.linalg.qr(rng.standard_normal((48, 48)))
        e = np.r_[np.linspace(-2, -0.5, 30), np.linspace(0.5, 2, 18)]
        return (Q * e) @ Q.T, 30


def projector(F, nocc, S=None):
    w, v = scipy.linalg.eigh(F, S)
    c = v[:, :nocc]
    return c @ c.T, 2 * w[:nocc].sum()


@pytest.mark.parametrize("method", ["canonical", "trs4"])
def test_purify_against_eigh(ctx, shared_data, method):
    F, nocc = fock(shared_data)
    n = F.shape[0]
    dF = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, F), layout=tessel.Layout.block_cyclic(ctx, n, n, 8, 8))
    steps = []
    D, res = tessel.purify(ctx, dF, nocc, method=method, on_step=steps.append)
    assert res["method"] == method and res["iterations"] >= 1
    if ctx.rank == 0:  # context rank 0 is always active
        assert [s["iteration"] for s in steps] == list(range(len(steps)))
        assert steps[-1]["idempotency_error"] == pytest.approx(res["idempotency_error"])
    got = D.to_numpy()
    if ctx.rank == 0:
        ref, energy = projector(F, nocc)
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-9
        assert res["band_energy"] == pytest.approx(energy, rel=1e-10)
        assert res["trace_error"] < 1e-8


def test_purify_nonorthogonal(ctx, shared_data):
    F, nocc = fock(shared_data)
    n = F.shape[0]
    rng = np.random.default_rng(3)
    X = 0.05 * rng.standard_normal((n, n))
    S = np.eye(n) + X @ X.T
    dF = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, F))
    dS = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, S))
    D, res = tessel.purify(ctx, dF, nocc, S=dS)
    got = D.to_numpy()
    if ctx.rank == 0:
        ref, _ = projector(F, nocc, S)
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-8
        assert res["ns_iterations"] > 0


def test_callback_exception_reaches_every_rank(ctx, shared_data):
    F, nocc = fock(shared_data)
    dF = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, F))

    def stop(step):
        if step["iteration"] == 2:
            raise ValueError("stop at step 2")

    err = raises_everywhere(ctx, tessel.Error, lambda: tessel.purify(ctx, dF, nocc, on_step=stop),
                            match="on_step raised ValueError: stop at step 2")
    if ctx.rank == 0:  # where the callback ran and raised, the original is chained
        assert isinstance(err.__cause__, ValueError)
    # the communicator is still usable afterwards
    assert ctx.comm.allreduce(1) == ctx.size


def test_callback_tessel_error_keeps_its_kind(ctx, shared_data):
    F, nocc = fock(shared_data)
    dF = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, F))

    def bad(step):
        raise tessel.InputError("callback says no")

    raises_everywhere(ctx, tessel.InputError, lambda: tessel.purify(ctx, dF, nocc, on_step=bad),
                      match="callback says no")

"""The SCF density step of tessel.pyscf without PySCF: replicated arrays to and from
DistMatrix, the step against scipy.linalg.eigh, the HOMO/LUMO against eigvalsh."""
import numpy as np
import pytest
import scipy.linalg

import tessel
from tessel._replicated import gather_replicated, scatter_replicated
from tessel._route import choose, usable_cores
from tessel._scf_step import DensityStep, frontier_levels


@pytest.mark.parametrize("shape,mb,nb,src", [((37, 23), 4, 5, (0, 0)), ((64, 64), 8, 8, (1, 0)),
                                             ((5, 70), 64, 64, (0, 1))])
def test_scatter_and_gather_replicated(ctx, shape, mb, nb, src):
    a = np.random.default_rng(11).standard_normal(shape)  # the same on every rank
    grid = tessel.Layout.default(ctx, *shape).grid
    src = (src[0] % grid[0], src[1] % grid[1])
    lay = tessel.Layout.block_cyclic(ctx, *shape, mb, nb, rsrc=src[0], csrc=src[1])
    x = scatter_replicated(ctx, a, lay)
    full = x.to_numpy(root=0)
    if ctx.rank == 0:
        assert np.array_equal(full, a)
    assert np.array_equal(gather_replicated(ctx, x), a)


def model(n, nocc, seed):
    """(F, S, x): a symmetric F with a gap after nocc states in a non-orthogonal basis S."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    e = np.r_[np.linspace(-2, -0.4, nocc), np.linspace(0.3, 2, n - nocc)]
    b = np.eye(n) + 0.1 * rng.standard_normal((n, n))
    S = b @ b.T
    w, v = scipy.linalg.eigh(S)
    x = v / np.sqrt(w)  # x^T S x = I
    xi = np.linalg.inv(x)
    return xi.T @ ((q * e) @ q.T) @ xi, S, x


@pytest.mark.parametrize("method", ["canonical", "trs4", "sign"])
@pytest.mark.parametrize("n", [40, 90])
def test_step_against_eigh(ctx, method, n):
    nocc = n // 3
    F, S, x = model(n, nocc, seed=n)
    record = DensityStep(ctx, nocc, method).run(F, x)
    e, c = scipy.linalg.eigh(F, S)
    ref = c[:, :nocc] @ c[:, :nocc].T
    assert np.abs(record.density - ref).max() < 1e-9
    assert record.homo == pytest.approx(e[nocc - 1], abs=1e-9)
    assert record.lumo == pytest.approx(e[nocc], abs=1e-9)
    # the gradient's norm is PySCF's 2 ||C_vir^T F C_occ|| (zero here: F is the Fock of D)
    assert np.linalg.norm(record.orbital_gradient(F)) < 1e-8
    F2 = F + 0.01 * (S @ np.ones((n, n)) @ S)  # another Fock: gradient of D against it
    g_ref = 2 * np.linalg.norm(c[:, nocc:].T @ F2 @ c[:, :nocc])
    assert np.linalg.norm(record.orbital_gradient(F2)) == pytest.approx(g_ref, rel=1e-8)


def test_frontier_levels_lanczos_path():
    """m >= 64 takes the Lanczos path; against eigvalsh."""
    m, nocc = 150, 50
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    e = np.sort(rng.uniform(-3, 3, m))
    f = (q * e) @ q.T
    d = q[:, :nocc] @ q[:, :nocc].T
    homo, lumo = frontier_levels(f, d, nocc)
    assert homo == pytest.approx(e[nocc - 1], abs=1e-9)
    assert lumo == pytest.approx(e[nocc], abs=1e-9)


def test_auto_route_rule():
    """The library's rule with PySCF's replicated eigensolver, against the model written out:
    purify t_s = 50 products x 2 n^3 x 1.3e-10 s / p, diagonalize 8.5e-10 n^3 + 2 t_s / 50
    (p = 1 below n = 1000)."""
    for n in (100, 999, 1000, 3000, 20000):
        for cores in (1, 4, 9, 14, 15, 16, 64, 1024):
            p = cores if n >= 1000 else 1
            t_s = 50 * 2 * n**3 * 1.3e-10 / p
            t_d = 8.5e-10 * n**3 + 2 * t_s / 50
            route, reason = choose(n, cores)
            assert route == ("diagonalize" if t_d < t_s else "purify"), (n, cores, reason)
            assert f"n = {n}" in reason and "diagonalization" in reason
    assert choose(1000, 14)[0] == "diagonalize" and choose(1000, 16)[0] == "purify"
    assert "the eigensolver on 1" in choose(2000, 8)[1]
    with pytest.raises(tessel.InputError, match="n = 0"):
        choose(0, 4)


def test_usable_cores(ctx):
    import os

    cores = usable_cores(ctx.comm)
    assert 1 <= cores <= ctx.size
    assert cores == ctx.comm.bcast(cores)
    if ctx.comm.allreduce(os.uname().nodename != ctx.comm.bcast(os.uname().nodename)) == 0:
        assert cores == min(ctx.size, len(os.sched_getaffinity(0)))  # one node

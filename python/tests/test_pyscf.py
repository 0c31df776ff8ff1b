"""tessel.pyscf against PySCF's own SCF run in the same process (independent: PySCF's
diagonalization). Skipped (reported as skipped) when PySCF is not installed.

Every rank runs both SCFs; the energies must agree to 1e-8 Eh, the cycle counts within 2, the
HOMO/LUMO and the density to the SCF's convergence; unsupported objects raise InputError on
every rank.
"""
import re

import numpy as np
import pytest

pyscf = pytest.importorskip("pyscf")

from pyscf import dft, gto, scf  # noqa: E402

import tessel  # noqa: E402
import tessel._route  # noqa: E402
import tessel.pyscf  # noqa: E402
from conftest import raises_everywhere  # noqa: E402

pyscf.lib.num_threads(1)  # one OpenMP thread per rank: the ranks share 2 cores

WATER = [("O", (0.0, 0.0, 0.0)), ("H", (0.757, 0.586, 0.0)), ("H", (-0.757, 0.586, 0.0))]


def water_cluster(nx, ny, nz, spacing=2.9):
    """Waters on an nx x ny x nz grid (Angstrom), the same orientation: a test geometry."""
    atoms = []
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                shift = np.array([i, j, k]) * spacing
                atoms += [(el, tuple(np.array(xyz) + shift)) for el, xyz in WATER]
    return atoms


def polyene(ncarbon):
    """All-trans C_n H_(n+2) in the xy plane: C=C 1.34, C-C 1.46, C-H 1.09 Angstrom, 120 deg."""
    c, up = [np.zeros(2)], 1
    for i in range(1, ncarbon):
        bond = 1.34 if i % 2 else 1.46
        angle = np.radians(30 * up)
        c.append(c[-1] + bond * np.array([np.cos(angle), np.sin(angle)]))
        up = -up
    atoms = [("C", (*p, 0.0)) for p in c]
    for i, p in enumerate(c):  # hydrogens away from the chain's neighbours
        nb = [c[j] for j in (i - 1, i + 1) if 0 <= j < ncarbon]
        out = sum(p - q for q in nb)
        out /= np.linalg.norm(out)
        hs = [out] if len(nb) == 2 else [_rotate(out, 60), _rotate(out, -60)]
        atoms += [("H", (*(p + 1.09 * h), 0.0)) for h in hs]
    return atoms


def _rotate(v, deg):
    a = np.radians(deg)
    return np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]) @ v


def make_mf(atoms, basis, xc):
    mol = gto.M(atom=atoms, basis=basis, verbose=0, symmetry=False)
    mf = scf.RHF(mol) if xc is None else dft.RKS(mol, xc=xc)
    if xc is not None:
        mf.grids.level = 0  # coarse: the same grid in both runs, cheap on shared cores
    mf.conv_tol = 1e-10
    return mf


CASES = {
    "h2o2-rhf": (water_cluster(2, 1, 1), "sto-3g", None),
    "h2o2-pbe": (water_cluster(2, 1, 1), "6-31g", "pbe"),
    "h2o8-rhf": (water_cluster(2, 2, 2), "sto-3g", None),
    "octatetraene-pbe": (polyene(8), "sto-3g", "pbe"),
}


@pytest.mark.parametrize("case,method,matrices", [
    ("h2o2-rhf", "canonical", "dense"), ("h2o2-pbe", "trs4", "dense"),
    ("h2o8-rhf", "trs4", "dense"), ("octatetraene-pbe", "canonical", "dense"),
    ("h2o2-pbe", "sign", "dense"), ("octatetraene-pbe", "sign", "dense"),
    ("h2o2-pbe", "sign", "block-sparse"), ("h2o8-rhf", "trs4", "block-sparse"),
    ("octatetraene-pbe", "sign", "block-sparse"),
])
def test_energy_equals_pyscf(ctx, case, method, matrices):
    atoms, basis, xc = CASES[case]
    ref = make_mf(atoms, basis, xc)
    e_ref = ref.kernel()
    mf = tessel.pyscf.use_tessel(make_mf(atoms, basis, xc), ctx, method=method, matrices=matrices)
    e = mf.kernel()
    assert ref.converged and mf.converged
    assert abs(e - e_ref) < 1e-8, (e, e_ref)
    assert abs(mf.cycles - ref.cycles) <= 2, (mf.cycles, ref.cycles)
    nocc = ref.mol.nelectron // 2
    assert mf.mo_energy[nocc - 1] == pytest.approx(ref.mo_energy[nocc - 1], abs=1e-5)
    assert mf.mo_energy[nocc] == pytest.approx(ref.mo_energy[nocc], abs=1e-5)
    assert np.abs(mf.make_rdm1() - ref.make_rdm1()).max() < 1e-5
    # every rank holds the same density
    dm = mf.make_rdm1()
    assert np.array_equal(dm, ctx.comm.bcast(dm, root=0))


@pytest.mark.parametrize("route", ["diagonalize", "purify"])
def test_auto_either_route_equals_pyscf(ctx, monkeypatch, route):
    """method="auto": the route it chooses (diagonalization at this size; purification when
    the test replaces the rule) gives PySCF's energy."""
    if route == "purify":  # the rule chooses diagonalization at this n on any core count
        monkeypatch.setattr(tessel._route, "choose", lambda n, cores: ("purify", "the test"))
    e_ref = make_mf(*CASES["h2o2-rhf"]).kernel()
    mf = tessel.pyscf.use_tessel(make_mf(*CASES["h2o2-rhf"]), ctx)  # the default: auto
    e = mf.kernel()
    assert mf.tessel_route[0] == route, mf.tessel_route
    assert isinstance(mf.mo_coeff, tessel.pyscf.TesselOrbitals) == (route == "purify")
    assert abs(e - e_ref) < 1e-8


def test_undo_gives_pyscf_back(ctx):
    mf = tessel.pyscf.use_tessel(make_mf(*CASES["h2o2-rhf"]), ctx)
    plain = mf.undo_tessel()
    assert not hasattr(plain, "tessel_step")
    assert abs(plain.kernel() - make_mf(*CASES["h2o2-rhf"]).kernel()) < 1e-9


def _open_shell():
    return gto.M(atom="O 0 0 0; H 0 0 0.97", basis="sto-3g", spin=1, verbose=0)


def _closed():
    return gto.M(atom=WATER, basis="sto-3g", verbose=0)


UNSUPPORTED = {
    "uhf": (lambda: scf.UHF(_open_shell()), "UHF"),
    "uks": (lambda: dft.UKS(_open_shell(), xc="pbe"), "UKS"),
    "rohf": (lambda: scf.ROHF(_open_shell()), "ROHF"),
    "uhf-closed": (lambda: scf.UHF(_closed()), "UHF"),
    "smearing": (lambda: scf.addons.smearing(scf.RHF(_closed()), sigma=0.01), "smearing"),
    "frac-occ": (lambda: scf.addons.frac_occ(scf.RHF(_closed())), "mf.get_occ replaced"),
    "symmetry": (lambda: scf.RHF(gto.M(atom=WATER, basis="sto-3g", symmetry=True, verbose=0)),
                 "symmetry=False"),
    "newton": (lambda: scf.RHF(_closed()).newton(), "second-order"),
}


@pytest.mark.parametrize("kind", sorted(UNSUPPORTED))
def test_unsupported_raises_everywhere(ctx, kind):
    make, words = UNSUPPORTED[kind]
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.pyscf.use_tessel(make(), ctx),
                      match=words)


@pytest.mark.parametrize("method", ["eigh?", "trs3"])
def test_bad_method_raises_everywhere(ctx, method):
    """Unknown methods raise on every rank."""
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.pyscf.use_tessel(scf.RHF(_closed()), ctx, method=method),
                      match=rf"method = '{re.escape(method)}' \(expected one of auto, canonical, trs2, trs4, sign\)")


def test_unknown_option_raises_everywhere(ctx):
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.pyscf.use_tessel(scf.RHF(_closed()), ctx, tolerance=1e-9),
                      match=r"unknown option tolerance = 1e-09 \(expected tessel.purify's: tol, ")


def test_block_sparse_bad_method_or_option_raises_everywhere(ctx):
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.pyscf.use_tessel(scf.RHF(_closed()), ctx, method="trs2?",
                                                      matrices="block-sparse"),
                      match=r"method = 'trs2\?' \(expected one of auto, sign, trs4, canonical, trs2 "
                            r"with block-sparse matrices\)")
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.pyscf.use_tessel(scf.RHF(_closed()), ctx, matrices="csr"),
                      match=r"matrices = 'csr' \(expected one of dense, block-sparse\)")
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.pyscf.use_tessel(scf.RHF(_closed()), ctx, method="sign",
                                                      matrices="block-sparse", n_dup=2),
                      match=r"unknown option n_dup = 2 \(expected the block-sparse tessel.density's: eps, ")


def test_purify_option_with_sign_raises_everywhere(ctx):
    """method="sign" takes tessel.density's options, not tessel.purify's."""
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.pyscf.use_tessel(scf.RHF(_closed()), ctx, method="sign", n_dup=2),
                      match=r"unknown option n_dup = 2 \(expected tessel.density's: mu, tol, max_iter\)")


def test_method_differing_between_ranks_raises_everywhere(ctx):
    """A rank-local mistake (one rank passes a bad method) still raises on every rank."""
    method = "canonical" if ctx.rank != ctx.size - 1 else "eigh"
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.pyscf.use_tessel(scf.RHF(_closed()), ctx, method=method),
                      match="method = 'eigh'")

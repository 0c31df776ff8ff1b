"""tessel.density's method="auto" | "diag" (issue 31) against scipy's generalized eigh and the
sign iteration; the auto rule's choice and reason; diag's errors on every rank."""
import json

import numpy as np
import pytest
import scipy.linalg

import tessel
from conftest import on_root, raises_everywhere

needs_diag = pytest.mark.skipif(not tessel.diagonalization_built(),
                                reason="this build has no ScaLAPACK diagonalization")


def system(shared_data):
    """(H, S, nocc): the PySCF Fock matrix of 8 waters with a generated overlap-like S, or a
    model with a gap when the shared data are absent."""
    base = shared_data / "pyscf" / "h2o8_sto3g_rhf"
    try:
        F = np.load(str(base) + "_F_orth.npy")
        nocc = json.loads(open(str(base) + ".json").read())["nocc"]
    except OSError:
        rng = np.random.default_rng(5)
        Q, _ = np.linalg.qr(rng.standard_normal((48, 48)))
        F, nocc = (Q * np.r_[np.linspace(-2, -0.5, 30), np.linspace(0.5, 2, 18)]) @ Q.T, 30
    n = F.shape[0]
    rng = np.random.default_rng(7)
    B = 0.05 * rng.standard_normal((n, n))
    S = np.eye(n) + 0.5 * (B + B.T) @ (B + B.T).T / n  # symmetric positive definite, near I
    return F, S, nocc


def dist(ctx, a):
    n = a.shape[0]
    return tessel.DistMatrix.from_numpy(ctx, on_root(ctx, a), layout=tessel.Layout.block_cyclic(ctx, n, n, 8, 8))


@needs_diag
def test_diag_and_auto_against_eigh_and_sign(ctx, shared_data):
    F, S, nocc = system(shared_data)
    w, v = scipy.linalg.eigh(F, S)
    P_ref, band_ref = v[:, :nocc] @ v[:, :nocc].T, 2 * w[:nocc].sum()
    H, Sd = dist(ctx, F), dist(ctx, S)
    results = {}
    for method in ("diag", "auto", "sign"):
        P, res = tessel.density(ctx, H, Sd, 2 * nocc, method=method)
        full = P.to_numpy()
        if ctx.rank == 0:
            assert np.abs(full - P_ref).max() < 1e-8, method
        assert abs(res["band_energy"] - band_ref) < 1e-8, (method, res["band_energy"], band_ref)
        results[method] = res
    assert results["diag"]["method"] == "diag" and results["diag"]["iterations"] == 0
    assert abs(results["diag"]["mu"] - 0.5 * (w[nocc - 1] + w[nocc])) < 1e-10
    assert results["auto"]["method"] == "diag"  # a small dense system: diagonalization
    assert "diagonalization" in results["auto"]["method_reason"]
    assert results["sign"]["method"] == "sign" and results["sign"]["method_reason"] == ""


def test_auto_rule():
    method, reason = tessel.choose_density_method(2808, 1.0, 4)
    assert method == ("diag" if tessel.diagonalization_built() else "sign") and reason
    assert tessel.choose_density_method(200000, 0.002, 64, sparse=True)[0] == "sign"
    assert tessel.choose_density_method(100, mu_given=True)[0] == "sign"


def test_diag_errors(ctx, shared_data):
    F, S, nocc = system(shared_data)
    H, Sd = dist(ctx, F), dist(ctx, S)
    if not tessel.diagonalization_built():
        raises_everywhere(ctx, tessel.InputError,
                          lambda: tessel.density(ctx, H, Sd, 2 * nocc, method="diag"),
                          match="diagonalization not built")
        return
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.density(ctx, H, Sd, 2 * nocc, method="diag", mu=0.0),
                      match="takes no mu")
    bad = S.copy()
    bad[3, 3] = -1.0
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.density(ctx, H, dist(ctx, bad), 2 * nocc, method="diag"),
                      match="positive definite")

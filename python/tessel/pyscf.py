"""tessel.pyscf: PySCF's closed-shell SCF (RHF, RKS; molecules) with tessel's density step.

    from pyscf import gto, dft
    import tessel, tessel.pyscf
    ctx = tessel.Context(MPI.COMM_WORLD)
    mf = tessel.pyscf.use_tessel(dft.RKS(mol, xc="pbe"), ctx, method="trs4")
    mf.kernel()                     # every rank; PySCF's own cycle lines, tessel's densities

Every rank runs the same PySCF code on the same inputs (integrals, Fock builds, DIIS, energy:
replicated); each SCF step's density is tessel's, from F and PySCF's orthogonalizer x
distributed over the Context's ranks (tessel._scf_step). PySCF's loop is unchanged: the
object's `eig` returns orbital energies and a placeholder for the orbitals (TesselOrbitals)
that carries the density, and `get_occ`, `make_rdm1`, `get_grad` read it. What is exact and
what is a substitute: docs/pyscf.md. PySCF is an optional dependency (`pip install
tessel[pyscf]`); importing this module without it raises ImportError.
"""
import numpy as np
from mpi4py import MPI
from pyscf import lib
from pyscf.lib import logger
from pyscf.scf import hf as _hf

from . import _route, _scf_sparse
from ._scf_step import DensityStep
from ._tessel import Context, InputError

#: The methods use_tessel offers: purification around SymmSquareCube ("canonical", "trs2",
#: "trs4"; tessel.purify), and "sign": the sign iteration with its chemical-potential search
#: (tessel.density over the dense multiply, in PySCF's orthogonal basis with S = I).
#: "auto" (the default): PySCF's own diagonalization or canonical purification, chosen at the
#: first step from n and the cores (tessel._route, logged at PySCF's NOTE level).
METHODS = ("auto", "canonical", "trs2", "trs4", "sign")
#: Keywords passed on to tessel.purify.
PURIFY_OPTIONS = ("tol", "max_iter", "algorithm", "n_dup", "p", "active_ranks", "replication",
                  "collectives")
#: Keywords passed on to tessel.density (method "sign").
SIGN_OPTIONS = ("mu", "tol", "max_iter")
#: The matrices of the step: "dense" (tessel.DistMatrix, the orthogonal basis of PySCF's x) or
#: "block-sparse" (tessel.BlockSparseMatrix with one block per atom, the AO basis with S).
MATRICES = ("dense", "block-sparse")
#: Keywords of the block-sparse step (tessel.density): its filter threshold and multiply.
SPARSE_OPTIONS = ("eps", "algorithm", "mu", "tol", "max_iter")

__all__ = ["use_tessel", "TesselOrbitals", "METHODS"]


class TesselOrbitals(np.ndarray):
    """The `mo_coeff` of a tessel SCF step: NaN-filled (n_ao x n_mo, so any use as orbitals
    shows), with `.tessel`, the step's StepRecord (density, HOMO, LUMO, ...)."""

    def __new__(cls, record, shape):
        obj = np.full(shape, np.nan).view(cls)
        obj.tessel = record
        return obj

    def __array_finalize__(self, obj):
        self.tessel = getattr(obj, "tessel", None)


def use_tessel(mf, ctx=None, method="auto", matrices="dense", **purify_options):
    """Collective over ctx (default: a new Context on MPI.COMM_WORLD; make one and pass it).

    A copy of the PySCF mean-field object `mf` (restricted closed-shell RHF or RKS of a
    molecule, no point-group symmetry) whose density step is tessel's: `method` one of
    METHODS ("auto": PySCF's own diagonalization where that is faster, see tessel._route;
    "sign": the sign iteration); `purify_options` as tessel.purify (tol, max_iter, algorithm,
    n_dup, ...), or for "sign" as tessel.density (mu, tol, max_iter). `matrices`: "dense"
    (default) or "block-sparse": atomic blocks from the basis' shells, the AO basis with S,
    tessel.density on the block-sparse multiply (methods sign, trs4, canonical, trs2; auto's
    product route runs sign; options eps (filter threshold, default 1e-12), algorithm
    ("cannon" or "rma25d"), mu, tol, max_iter).
    Unsupported objects (UHF/UKS, ROHF, GHF, smearing, fractional or replaced occupations,
    second-order SCF, symmetry, periodic cells, odd electron counts) raise tessel.InputError
    on every rank. Call `.kernel()` on every rank.
    """
    if ctx is None:
        ctx = Context(MPI.COMM_WORLD)
    ctx.agree(lambda: _check_supported(mf, method, purify_options, matrices))
    nocc = mf.mol.nelectron // 2
    if matrices == "block-sparse":
        sizes = _scf_sparse.atomic_block_sizes(mf.mol)
        step = _scf_sparse.SparseDensityStep(ctx, nocc, "sign" if method == "auto" else method,
                                             sizes, **purify_options)
    else:
        step = DensityStep(ctx, nocc, "canonical" if method == "auto" else method,
                           **purify_options)
    return lib.set_class(_TesselSCF(mf, step, method), (_TesselSCF, mf.__class__))


def _check_supported(mf, method, options, matrices="dense"):
    """Not collective. Raises InputError naming what `mf`, `method`, `matrices` or an option
    is and what is needed."""
    where = "tessel.pyscf.use_tessel"
    if matrices not in MATRICES:
        raise InputError(f"{where}: matrices = {matrices!r} (expected one of {', '.join(MATRICES)})")
    methods = METHODS if matrices == "dense" else ("auto",) + _scf_sparse.METHODS
    if method not in methods:
        raise InputError(f"{where}: method = {method!r} (expected one of {', '.join(methods)}"
                         f"{'' if matrices == 'dense' else ' with block-sparse matrices'})")
    if matrices == "block-sparse":
        known, whose = SPARSE_OPTIONS, "the block-sparse tessel.density's"
    elif method == "sign":
        known, whose = SIGN_OPTIONS, "tessel.density's"
    else:
        known, whose = PURIFY_OPTIONS, "tessel.purify's"
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise InputError(f"{where}: unknown option {unknown[0]} = {options[unknown[0]]!r} "
                         f"(expected {whose}: {', '.join(known)})")
    for cls_path, what in _UNSUPPORTED:
        cls = _class_at(cls_path)
        if cls is not None and isinstance(mf, cls):
            raise InputError(f"{where}: mf is a {type(mf).__name__} ({what}); tessel.pyscf "
                             "supports restricted closed-shell RHF/RKS with integer occupations")
    if not isinstance(mf, _hf.RHF):
        raise InputError(f"{where}: mf is a {type(mf).__name__} (expected a pyscf RHF or RKS object)")
    mol = mf.mol
    if getattr(mol, "a", None) is not None:
        raise InputError(f"{where}: mf.mol is a periodic cell (expected a molecule)")
    if mol.spin != 0 or mol.nelectron % 2:
        raise InputError(f"{where}: mol.spin = {mol.spin}, mol.nelectron = {mol.nelectron} "
                         "(expected a closed shell: spin 0, an even electron count)")
    replaced = sorted(k for k in ("eig", "_eigh", "get_occ", "make_rdm1", "get_grad") if k in vars(mf))
    if replaced:
        raise InputError(f"{where}: mf.{', mf.'.join(replaced)} replaced on the object (e.g. "
                         "scf.addons.frac_occ or mom: fractional or chosen occupations; expected "
                         "aufbau integer occupations)")


# (module.class, what it is) of the objects refused, checked before RHF (ROHF is an RHF).
_UNSUPPORTED = (
    ("pyscf.scf.rohf.ROHF", "restricted open shell"),
    ("pyscf.scf.uhf.UHF", "unrestricted, open shell"),
    ("pyscf.scf.ghf.GHF", "generalized spin orbitals"),
    ("pyscf.scf.dhf.DHF", "relativistic four-component"),
    ("pyscf.scf.smearing._SmearingSCF", "smearing: fractional occupations"),
    ("pyscf.soscf.newton_ah._CIAH_SOSCF", "second-order SCF: orbital rotations"),
    ("pyscf.scf.hf_symm.SymAdaptedRHF", "point-group symmetry: build the molecule with symmetry=False"),
    ("pyscf.pbc.scf.hf.SCF", "periodic"),
)


def _class_at(path):
    import importlib

    module, name = path.rsplit(".", 1)
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


class _TesselSCF:
    """Mixin over the PySCF class: eig, get_occ, make_rdm1 and get_grad on tessel's density
    (their inputs from elsewhere — real orbitals — go to PySCF's own methods)."""

    __name_mixin__ = "Tessel"
    _keys = {"tessel_step", "tessel_method", "tessel_route"}

    def __init__(self, mf, step, method):
        self.__dict__.update(mf.__dict__)
        self.tessel_step = step
        self.tessel_method = method
        self.tessel_route = None  # ("diagonalize" | "purify", reason) once chosen

    def eig(self, h, s, overwrite=False, x=None):
        """Collective. (mo_energy, TesselOrbitals) of Fock matrix h: tessel's density of h.
        mo_energy: NaN except the HOMO (index nocc-1) and LUMO (nocc) of the projected F.
        Where "auto" chose diagonalization: PySCF's own eig (real orbitals)."""
        if x is None:
            x = self._tessel_x(s)
        if self._tessel_route(x.shape[1]) == "diagonalize":
            return super().eig(h, s, overwrite, x)
        record = self.tessel_step.run(np.asarray(h), x, np.asarray(s))
        _log_step(self, record)
        mo_energy = np.full(x.shape[1], np.nan)
        mo_energy[record.nocc - 1], mo_energy[record.nocc] = record.homo, record.lumo
        return mo_energy, TesselOrbitals(record, x.shape)

    def get_occ(self, mo_energy=None, mo_coeff=None):
        """Not collective. 2 for the nocc lowest states, 0 above (aufbau, as the density)."""
        record = _record_of(self, mo_coeff)
        if record is None:
            return super().get_occ(mo_energy, mo_coeff)
        mo_occ = np.zeros(record.x.shape[1])
        mo_occ[: record.nocc] = 2.0
        gap = (record.lumo - record.homo) * 27.211386245988
        self.scf_summary["gap"] = gap
        logger.info(self, "  HOMO = %.15g  LUMO = %.15g  gap/eV = %.5f  (tessel)",
                    record.homo, record.lumo, gap)
        return mo_occ

    def make_rdm1(self, mo_coeff=None, mo_occ=None, **kwargs):
        """Not collective. dm = 2 P from tessel's step (a plain array, no orbitals attached)."""
        record = _record_of(self, mo_coeff)
        if record is None:
            return super().make_rdm1(mo_coeff, mo_occ, **kwargs)
        return 2.0 * record.density

    def get_grad(self, mo_coeff, mo_occ, fock=None):
        """Not collective. The orbital gradient in the orthogonal basis (StepRecord)."""
        record = _record_of(self, mo_coeff)
        if record is None:
            return super().get_grad(mo_coeff, mo_occ, fock)
        if fock is None:
            fock = self.get_hcore(self.mol) + self.get_veff(self.mol, 2.0 * record.density)
        return record.orbital_gradient(np.asarray(fock))

    def _tessel_route(self, n):
        """Collective at the first call (counts the cores). The route of this SCF."""
        if self.tessel_method != "auto":
            return "purify"
        if self.tessel_route is None:
            cores = _route.usable_cores(self.tessel_step.ctx.comm)
            self.tessel_route = _route.choose(n, cores)
            logger.note(self, "tessel.pyscf method auto: %s (%s)", *self.tessel_route)
        return self.tessel_route[0]

    def undo_tessel(self):
        """Not collective. The object with PySCF's own density step again."""
        obj = lib.view(self, lib.drop_class(self.__class__, _TesselSCF))
        del obj.tessel_step, obj.tessel_method, obj.tessel_route
        return obj

    def _tessel_x(self, s):
        """PySCF's canonical orthogonalization of s (as its kernel passes to eig)."""
        cached = getattr(self, "_tessel_x_cache", None)
        if cached is None or cached[0] is not s:
            self._tessel_x_cache = (s, _hf.check_linear_dependency(s))
        return self._tessel_x_cache[1]


def _record_of(mf, mo_coeff):
    if mo_coeff is None:
        mo_coeff = mf.mo_coeff
    if isinstance(mo_coeff, TesselOrbitals) and mo_coeff.tessel is not None:
        if mo_coeff.shape == mo_coeff.tessel.x.shape:
            return mo_coeff.tessel
    return None


def _log_step(mf, record):
    r, t = record.result, record.seconds
    if "idempotency_error" in r:
        quality = "||D-D^2|| = %.2e" % r["idempotency_error"]
    else:
        quality = "residual %.2e, mu = %.6f" % (r["residual"], r["mu"])
    logger.info(mf, "  tessel %s: %d iterations, %s, %.3f s (density %.3f s) on %d ranks",
                r["method"], r["iterations"], quality, sum(t.values()), t["purify"],
                mf.tessel_step.ctx.size)

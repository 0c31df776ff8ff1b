"""method="auto" of tessel.pyscf: diagonalize (PySCF's own eigh, replicated) or purify
(tessel, distributed), from the measured cost ratio and the cores the Context's ranks have.

Measured on the 2-core machine (docs/pyscf.md, bench/pyscf_density_step.py): on one rank
tessel's density step (canonical purification, 22-29 steps, plus the basis changes) takes
6-9x the time of PySCF's step (x^T F x, scipy eigh, back-transform) for n = 192-768 — about
the flop ratio, ~100 n^3 against ~10 n^3. Purification can only win where its products run on
more cores than that ratio, and n is large enough for the distributed products to scale: the
rule below. It is a flops model anchored on one measured ratio; no crossover was measured here
(the machine has 2 cores).
"""
import os

from mpi4py import MPI

#: tessel step / PySCF step time on one rank, the largest measured (n = 768, docs/pyscf.md)
MEASURED_RATIO = 9.0
#: below this n the distributed products do not scale (n = 192-416 on 4 ranks: slower than 1)
MIN_N = 1000


def usable_cores(comm):
    """Collective. Cores the ranks of `comm` can use: per node (shared-memory group), the
    smaller of its ranks and its CPUs (this process' affinity), summed over nodes."""
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        mine = min(node.size, cpus or 1) if node.rank == 0 else 0
    finally:
        node.Free()
    return comm.allreduce(mine)


def choose(n, cores):
    """Pure. ("diagonalize" | "purify", reason) for an n x n density step on `cores` cores."""
    if n < MIN_N:
        return "diagonalize", (f"n = {n} < {MIN_N}: the distributed products do not scale at "
                               "this size (measured)")
    if cores <= MEASURED_RATIO:
        return "diagonalize", (f"{cores} cores <= {MEASURED_RATIO:g}, purification's measured "
                               "cost over the eigensolver's on one core")
    return "purify", (f"n = {n} >= {MIN_N} and {cores} cores > {MEASURED_RATIO:g} (flops model, "
                      "not measured here)")

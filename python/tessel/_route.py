"""method="auto" of tessel.pyscf: diagonalize (PySCF's own eigh, replicated on every rank) or
purify (tessel, distributed), by the library's rule (tessel.choose_density_method, the cost
model of `tessel density --method auto`, docs/density.md "Choosing the method") with the
products on the cores the Context's ranks can use and the eigensolver on one (PySCF's eigh
runs whole on every rank, so more ranks do not make it faster).

The model's one-rank ratio (diagonalization about 0.1 of a 50-product purification, dense) is
what tessel.pyscf's step measured on the 2-core machine (docs/pyscf.md: 6-9x PySCF's step at
n = 192-768), and below n = 1000 the distributed products are counted on one rank (they were
slower on 4 ranks than on 1 at n = 192-416). The crossover it gives (about 15 cores from
n = 1000 up) is a flops model: no run here could measure it (2 cores).
"""
import os

from mpi4py import MPI

from ._tessel import choose_density_method


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
    """Pure. ("diagonalize" | "purify", reason) for a dense n x n density step whose products
    run on `cores` cores and whose eigensolver is PySCF's replicated one."""
    method, reason = choose_density_method(n, 1.0, max(1, cores), sparse=False, diag_ranks=1,
                                           diag_built=True)
    return ("diagonalize" if method == "diag" else "purify"), reason

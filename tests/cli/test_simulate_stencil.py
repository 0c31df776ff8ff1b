#!/usr/bin/env python3
"""bench/simulate.py's reading of `tessel stencil --json` (no MPI, no simulation): the time per
call (the median apply of the run's order under --apply-only, the solve time otherwise), the
overlap columns copied from the command's own fractions and medians, and the Markdown row, on a
hand-written result whose medians are known."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import simulate  # noqa: E402


def result(overlap="on", apply_only=True):
    stat = lambda lo, mean, hi: {"min": lo, "mean": mean, "max": hi}  # noqa: E731
    return {"command": "stencil", "points": 1000000, "overlap": overlap,
            "apply_only": apply_only, "solve_seconds": 7.0,
            "partition": {"points_per_rank": stat(15000, 15625, 16000)},
            "exchange": {"batch": 4,
                         "plain_seconds": [0.004, 0.002, 0.003],
                         "overlapped_exposed_seconds": [0.001, 0.0015, 0.0005, 0.0009],
                         "apply_plain_seconds": [0.010, 0.030, 0.020],
                         "apply_overlapped_seconds": [0.008, 0.009, 0.007, 0.050],
                         "plain_wait_seconds": [0.002, 0.001, 0.004],
                         "overlapped_test_wait_seconds": [0.0005, 0.0004, 0.0001, 0.9],
                         "hidden_fraction": 0.7, "hideable_fraction": 1.0, "saved_fraction": 0.6,
                         "neighbors_per_rank": stat(2, 5.5, 9),
                         "halo_bytes_per_rank_per_apply": stat(1e5, 2e5, 3e5)}}


fails, checked = [], []


def check(what, got, want):
    checked.append(what)
    if got != want and not (isinstance(want, float) and abs(got - want) <= 1e-12 * abs(want)):
        fails.append(f"{what}: got {got!r}, expected {want!r}")


check("median odd", simulate.median([3, 1, 2]), 2)
check("median even", simulate.median([4, 1, 3, 2]), 2.5)
check("median empty", simulate.median([]), None)
check("per call, overlapped order", simulate.call_seconds(result()), 0.0085)
check("per call, plain order", simulate.call_seconds(result(overlap="off")), 0.020)
check("per call, with the solver", simulate.call_seconds(result(apply_only=False)), 7.0)
c = simulate.stencil_columns(result())
check("exchange plain", c["exchange_plain_s"], 0.003)
check("exchange exposed", c["exchange_exposed_s"], 0.00095)
check("hidden (the command's)", c["hidden"], 0.7)
check("saved", c["saved"], 0.6)
check("transfer hidden, packing excluded", c["transfer_hidden"], 1 - 0.00045 / 0.002)
e = result()["exchange"]
e["overlapped_test_wait_seconds"] = [0.01]
check("transfer hidden never below 0", simulate.transfer_hidden(e), 0.0)
del e["plain_wait_seconds"]
check("transfer hidden unknown without the parts", simulate.transfer_hidden(e), None)
check("neighbours", (c["neighbors_mean"], c["neighbors_max"]), (5.5, 9))
check("ledger", simulate.ledger_numbers(result())[:2], (2e5, 3e5))
row = {"nodes": 64, "recv_mean": 2e5, "stencil": c}
lines = simulate.stencil_table([row, {"nodes": 128}], "p.xml")
check("one table row per stencil row", len([x for x in lines if x.startswith("| 64 ")]), 1)
check("the row", lines[-1], "| 64 | 1,000,000 | 15,625 | 4 | 5.5 / 9 | 200 kB | 20.000 | "
      "8.500 | 3.000 | 0.950 | 70% | 78% | 100% | 60% |")
check("SIMULATED label", "SIMULATED on `p.xml`" in lines[1], True)
check("no table without stencil rows", simulate.stencil_table([{"nodes": 1}], "p.xml"), [])
for f in fails:
    print("FAIL", f)
print(f"test_simulate_stencil: {len(checked) - len(fails)} of {len(checked)} checks passed")
assert len(checked) == 19, f"{len(checked)} checks ran, 19 expected"
assert not fails, "; ".join(fails)

#!/usr/bin/env python3
"""smpi_run.py — run a program of the SMPI build (build-smpi/) under smpirun on a platform file.

    scripts/smpi_run.py --platform bench/simulate/platforms/netcluster.xml --np 4 \\
        [--ppn 1] [--host-speed F] [--cfg KEY:VALUE ...] [--timeout S] -- PROGRAM ARGS...

Writes the hostfile smpirun needs (the platform's hosts in the order they are declared, each
repeated --ppn times: consecutive ranks share a node; on a platform whose hosts are process
slots, tessel-slots-per-node in its comment, consecutive ranks take the slots of a node), passes tessel's SMPI settings
(SMPI_CFG below, each explained there) and prints the program's output. The last line is one
JSON object: {"smpi": {"simulated_s": ..., "wall_s": ..., "exit": ..., "maxrss_bytes": ...}},
the simulated time and the simulator's wall time as smpirun reports them
(smpi/display-timing), and the simulator's peak resident memory (all ranks are in its one
process). Exit status:
the program's (smpirun's).

Also importable: run(...) returns (exit status, output, simulated seconds, wall seconds).
The platform files and what their numbers come from: bench/simulate/platforms/, and
docs/simulation.md.
"""
import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

# tessel's settings of every simulated run (docs/simulation.md, "Settings"):
SMPI_CFG = [
    # Simulated time and the simulator's wall time at the end (parsed below).
    "smpi/display-timing:yes",
    # tessel checks for a peer's failure notice (MPI_Iprobe) once at the start of each wait;
    # SMPI would charge 0.1 ms of simulated time per probe. The SMPI build's waits block in
    # MPI_Waitsome, so no loop of probes or tests depends on these injected times.
    "smpi/iprobe:0",
    # The MPI_Test passes between local products (Cannon's and rma25d's progress polls, the
    # stencil's test-every) would likewise be charged 0.1 ms each, growing with every test
    # that finds nothing: 1 us each, not growing, keeps them from distorting the time.
    "smpi/test:1e-6",
    "smpi/grow-injected-times:no",
]
# Added when the program runs with `--simulate-compute skip` (tessel's SMPI build only): the
# local GEMMs are then charged by the program itself (smpi_execute_flops, at the node speed of
# the platform), and nothing else is charged as computation. Otherwise the measured CPU time of
# the rest would be, which here is mostly the simulator's own work on shared memory (mapping
# and faulting in SMPI_SHARED_MALLOC's pages: a 128-rank 16384^3 gemm on daint-xc40.xml took
# 7.85 simulated seconds with it, 2.48 without, of which the charged flops are 2.29) and
# depends on the load of the machine that runs the simulation. So under skip
# the simulated time is the network's and the charged flops', a lower bound on the local work
# (the reduction's sums and the copies are free).
SKIP_CFG = ["smpi/simulate-computation:no"]


def skips_compute(argv):
    """True when argv runs a dense tessel command (gemm, ssc) with --simulate-compute skip: there
    every local kernel is charged by its flops, so SMPI's measurement of the rest is turned off
    (SKIP_CFG). spgemm's skip samples the block products and charges the rest at their measured
    speed; its filtering, merging and packing are real work, measured as in a run: no SKIP_CFG."""
    argv = list(argv)
    if "spgemm" in argv:
        return False
    return any(a == "--simulate-compute=skip" or
               (a == "--simulate-compute" and argv[i + 1:i + 2] == ["skip"])
               for i, a in enumerate(argv))


LOG = ["--log=xbt_cfg.thres:warning", "--log=smpi_config.thres:error",
       # SMPI warns once per run that MPI_Win_sync is not implemented; there it is not needed
       # (all ranks share one address space), see docs/simulation.md.
       "--log=smpi_mpi.thres:error"]


def platform_hosts(path):
    """The host names of a SimGrid platform file, in declaration order (host and cluster)."""
    hosts = []
    for el in ET.parse(path).getroot().iter():
        if el.tag == "host":
            hosts.append(el.get("id"))
        elif el.tag == "cluster":
            prefix, suffix = el.get("prefix", ""), el.get("suffix", "")
            for part in el.get("radical", "").split(","):
                lo, _, hi = part.partition("-")
                for i in range(int(lo), int(hi or lo) + 1):
                    hosts.append(f"{prefix}{i}{suffix}")
    return hosts


def platform_host_speed(path):
    """The reference flop rate the platform file records for smpi/host-speed (the speed of the
    machine that runs the simulation, docs/simulation.md), or None."""
    with open(path) as f:
        m = re.search(r"tessel-host-speed:\s*([0-9.eE+-]+\s*[GMk]?f)", f.read())
    return m.group(1).replace(" ", "") if m else None


def platform_slots(path):
    """Hosts per node when the platform's hosts are process slots (tessel-slots-per-node in its
    comment, e.g. omnipath-64.xml), else None (a host is a node)."""
    with open(path) as f:
        m = re.search(r"tessel-slots-per-node:\s*([0-9]+)", f.read())
    return int(m.group(1)) if m else None


def rank_hosts(platform, np, ppn):
    """The host of each rank: ppn consecutive ranks per node; a node is one host, or
    slots-per-node consecutive hosts (one rank per slot)."""
    hosts = platform_hosts(platform)
    slots = platform_slots(platform)
    if slots is not None and ppn > slots:
        raise SystemExit(f"smpi_run: ppn {ppn} > the {slots} process slots per node of {platform}")
    out = [hosts[(r // ppn) * slots + r % ppn] if slots else hosts[r // ppn]
           if r // ppn < len(hosts) else None for r in range(np)]
    if slots is not None and ((np - 1) // ppn + 1) * slots > len(hosts):
        out = [None]
    if None in out:
        raise SystemExit(f"smpi_run: {np} ranks at ppn {ppn} need more nodes than {platform} has")
    return out


def with_node_speed(platform, speed, tmp):
    """A copy of the platform file in tmp whose cluster hosts compute at `speed` (e.g.
    "360Gf"), or the file itself when speed is None. For a rank that stands for several cores
    of a node (seed 000: one process per node with 48 threads, PPN processes sharing them)."""
    if not speed:
        return platform
    with open(platform) as f:
        text = f.read()
    text, n = re.subn(r'(<cluster\b[^>]*\bspeed=")[^"]*(")', rf"\g<1>{speed}\g<2>", text)
    if n != 1:
        raise SystemExit(f"smpi_run: --node-speed needs one <cluster speed=...> in {platform}")
    out = os.path.join(tmp, os.path.basename(platform))
    with open(out, "w") as f:
        f.write(text)
    return out


def kill_group_on_signals(pgid):
    """While the simulator runs in its own session (pgid): SIGTERM, SIGINT or SIGHUP to this
    script kill the simulator too, then exit 128 + the signal. (Without it, `timeout 900
    smpi_run.py ...` or killing a bench that runs it left smpimain computing for half an hour.)
    Only in the main thread, where Python allows handlers; returns the handlers replaced."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum, _frame):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        raise SystemExit(128 + signum)
    return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}


def run(platform, np, argv, ppn=1, host_speed=None, cfg=(), timeout=None, privatize=True,
        node_speed=None):
    """Runs argv under smpirun; returns (status, output, simulated_s, wall_s). privatize=False:
    smpirun -no-privatize (every rank shares the program's globals; tessel has none of its
    own. smpirun otherwise copies the program once per rank into /tmp: 4.5 MB each).
    node_speed: the hosts' speed instead of the platform's (with_node_speed)."""
    hosts = rank_hosts(platform, np, ppn)
    speed = host_speed or platform_host_speed(platform)
    with tempfile.TemporaryDirectory() as tmp:
        platform = with_node_speed(platform, node_speed, tmp)
        hostfile = os.path.join(tmp, "hosts")
        with open(hostfile, "w") as f:
            for h in hosts:
                f.write(h + "\n")
        cmd = ["smpirun", "-np", str(np), "-platform", platform, "-hostfile", hostfile]
        if not privatize:
            cmd.append("-no-privatize")
        skip = SKIP_CFG if skips_compute(argv) else []
        for c in SMPI_CFG + skip + list(cfg) + ([f"smpi/host-speed:{speed}"] if speed else []):
            cmd.append(f"--cfg={c}")
        cmd += LOG + list(argv)
        # One BLAS thread, as under mpirun (scripts/mpi-env.sh): SMPI charges the CPU time of
        # each rank's own thread, so the work of extra BLAS threads would go uncharged.
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        t0 = time.monotonic()
        # In a session of its own: on a timeout the whole group goes (smpirun is a shell
        # script; killing it alone left the simulator, smpimain, running).
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        saved = kill_group_on_signals(p.pid)
        try:
            out, _ = p.communicate(timeout=timeout)
            status = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            out = (out or "") + f"\nsmpi_run: timeout after {timeout} s\n"
            status = 124
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
        wall = time.monotonic() - t0
    sim = None
    m = re.search(r"Simulated time: ([0-9.eE+-]+) seconds", out)
    if m:
        sim = float(m.group(1))
    m = re.search(r"The simulation took ([0-9.eE+-]+) seconds", out)
    if m:
        wall = float(m.group(1))
    return status, out, sim, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--platform", required=True, help="SimGrid platform file (XML)")
    ap.add_argument("--np", type=int, required=True, help="ranks")
    ap.add_argument("--ppn", type=int, default=1, help="ranks per node (default 1)")
    ap.add_argument("--host-speed", help="smpi/host-speed (default: the platform's record)")
    ap.add_argument("--cfg", action="append", default=[], help="extra --cfg KEY:VALUE")
    ap.add_argument("--timeout", type=float, help="seconds")
    ap.add_argument("--node-speed", help="the platform's host speed replaced by this (e.g. 360Gf)")
    ap.add_argument("--no-privatize", action="store_true",
                    help="smpirun -no-privatize (large rank counts: no copy of the program per rank)")
    ap.add_argument("argv", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    a = ap.parse_args()
    argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    if not argv:
        ap.error("no program (give it after --)")
    status, out, sim, wall = run(a.platform, a.np, argv, a.ppn, a.host_speed, a.cfg, a.timeout,
                                  not a.no_privatize, a.node_speed)
    sys.stdout.write(out)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(json.dumps({"smpi": {"simulated_s": sim, "wall_s": wall, "exit": status,
                               "maxrss_bytes": rss}}))
    sys.exit(status)


if __name__ == "__main__":
    main()

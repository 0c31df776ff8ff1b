"""What the launching benchmarks share (ssc_bench, spgemm_bench, stencil_bench, density_bench,
density_peer_bench): where a run goes (local:NP on this machine, oversubscribed, or
nc:NODESxPPN on the emulated cluster ../shared/tools/netcluster), the launch command, one
measured run with the cluster's wire bytes, and the Markdown table + JSON rows a benchmark ends
with. Not a benchmark by itself."""
import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MPI_ENV = ROOT / "scripts" / "mpi-env.sh"
NC = ROOT.parent / "shared" / "tools" / "netcluster" / "netcluster.sh"


def nc_link_bytes():
    """Bytes per emulated node so far, from one `netcluster.sh stats`: (sent, received), each
    {node: bytes} (its columns tbf_tx_bytes and tbf_rx_bytes, found by the header)."""
    out = subprocess.run([str(NC), "stats"], capture_output=True, text=True).stdout
    sent, received, tx, rx = {}, {}, 5, 7  # the columns of netcluster.sh's current header
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "#" and "tbf_tx_bytes" in f and "tbf_rx_bytes" in f:
            tx, rx = f.index("tbf_tx_bytes") - 1, f.index("tbf_rx_bytes") - 1  # "#" is a field here
            continue
        if not f or f[0].startswith("#"):
            continue
        try:
            sent[f[0]], received[f[0]] = int(f[tx]), int(f[rx])
        except (IndexError, ValueError):
            pass
    return sent, received


class Config:
    """One `local:NP` or `nc:NODESxPPN` place; bring_up() starts the emulated cluster, down() stops it.
    mpi: "openmpi" (mpirun / netcluster.sh run) or "mpich" (mpirun.mpich / netcluster.sh runmpich,
    which is reliable across the emulated nodes with one rank per node only: a warning is printed
    for an nc: config with more)."""

    def __init__(self, cfg, who, mpi="openmpi"):
        self.cfg = cfg
        if mpi not in ("openmpi", "mpich"):
            raise SystemExit(f"{who}: mpi '{mpi}': expected openmpi or mpich")
        self.mpi = mpi
        self.kind, _, spec = cfg.partition(":")
        if self.kind == "local":
            self.np, self.ppn, self.nodes = int(spec), None, 1
        elif self.kind == "nc":
            self.nodes, self.ppn = (int(x) for x in spec.split("x"))
            self.np = self.nodes * self.ppn
        else:
            raise SystemExit(f"{who}: config '{cfg}': expected local:NP or nc:NODESxPPN")
        if mpi == "mpich" and self.kind == "nc" and self.ppn != 1:
            print(f"{who}: warning: {cfg}: MPICH across the emulated nodes is reliable with one "
                  f"rank per node only (netcluster README)", flush=True)

    def bring_up(self, rate, delay):
        if self.kind == "nc":
            subprocess.run([str(NC), "up", str(self.nodes), "--rate", rate, "--delay", delay,
                            "--slots", str(self.ppn)], check=True, capture_output=True)

    def down(self):
        if self.kind == "nc":
            subprocess.run([str(NC), "down"], capture_output=True)

    def command(self, prog, env=()):
        """The launch command of `prog` on this place; `env` are mpirun `-x NAME=VALUE` flags
        (given to MPICH as `-genv NAME VALUE`)."""
        env = list(env)
        if self.mpi == "mpich":
            genv = []
            for i, x in enumerate(env):
                if x != "-x" and i > 0 and env[i - 1] == "-x":
                    name, _, value = x.partition("=")
                    genv += ["-genv", name, value]
            if self.kind == "local":
                return ["mpirun.mpich", "-np", str(self.np)] + genv + prog
            return [str(NC), "runmpich", "--", "-np", str(self.np), "-ppn", str(self.ppn)] + genv + prog
        if self.kind == "local":
            return ["bash", "-c", f"source {shlex.quote(str(MPI_ENV))}; exec mpirun -np {self.np} "
                    f"--oversubscribe " + " ".join(shlex.quote(x) for x in env + prog)]
        # --bind-to none: every emulated node is this machine, so Open MPI's default binding
        # (each node's first rank to core 0) put all ranks of all nodes on one core.
        return [str(NC), "run", "--", "-np", str(self.np), "--map-by", f"ppr:{self.ppn}:node",
                "--bind-to", "none"] + env + prog

    def run(self, cmd, timeout, log, done=None):
        """Runs `cmd`, writes its command line and output to `log`; returns (process, wall
        seconds, bytes sent on the emulated wire or None locally). The process has `.returncode`,
        `.stdout`, `.stderr`, `.note`: "" or why it was ended, and `.wire_rx`: {node: bytes it
        received on its emulated link during the run} (None locally). A run past `timeout` is killed
        (returncode None, note "timeout"). `done`: the path of the run's result file (written
        last, atomically, before MPI_Finalize): once it holds valid JSON, a run that has not
        exited within FINALIZE_GRACE seconds is killed and counted as finished (note "hung in
        MPI_Finalize") — MPICH 4.0.2 over UCX 1.13's TCP transport hangs there after traffic
        (docs/mpich.md); wall seconds then end when the file appeared."""
        if done is not None:
            Path(done).unlink(missing_ok=True)  # a stale result must not end this run
        s0, r0 = nc_link_bytes() if self.kind == "nc" else (None, None)
        t0 = time.time()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        note, t_done, hung = "", None, False
        while True:
            try:
                out, err = p.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.time()
            if done is not None and t_done is None and _valid_json(done):
                t_done = now
            hung = t_done is not None and now - t_done > FINALIZE_GRACE
            if not hung and now - t0 <= timeout:
                continue
            note = "hung in MPI_Finalize" if hung else "timeout"
            end_group(p)
            out, err = p.communicate()
            break
        rc = 0 if hung else (None if note else p.returncode)
        wall = (t_done if hung else time.time()) - t0
        Path(log).write_text(" ".join(cmd) + "\n" + out + err + (f"\n[benchlib: {note}]\n" if note else ""))
        wire, wire_rx = None, None
        if s0 is not None:
            s1, r1 = nc_link_bytes()
            wire = sum(s1[k] - s0.get(k, 0) for k in s1)
            wire_rx = {k: r1[k] - r0.get(k, 0) for k in r1}
        res = subprocess.CompletedProcess(cmd, rc, out, err)
        res.note = note
        res.wire_rx = wire_rx  # bytes each emulated node received on its link during the run
        if note:
            print(f"  note: {note}: {' '.join(cmd[-6:])}", flush=True)
        return res, wall, wire


FINALIZE_GRACE = 20.0


def _valid_json(path):
    try:
        json.loads(Path(path).read_text())
        return True
    except (OSError, ValueError):
        return False


def end_group(p, grace=5.0):
    """Ends process `p`, started with start_new_session=True, and its whole process group (mpirun
    and the ranks or launch agents it started, nothing else): SIGTERM, then SIGKILL after `grace`
    seconds. Shared by the benchmarks (gemm_bench's timeouts too)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            pass


def commcount_recv(path, repeat):
    """Received bytes per rank per call from a commcount JSON (p2p received + one-sided get +
    collective payload, the rule gemm_bench.py uses), divided by `repeat`: {"max", "mean"}, and
    the messages per rank (max)."""
    import json
    per = json.loads(Path(path).read_text()).get("per_rank", [])
    if not per:
        raise ValueError(f"{path}: no per_rank entries")
    rep = max(1, int(repeat))
    recv = [r["p2p_recv_bytes"] + r["rma_get_bytes"] + r["coll_bytes"] for r in per]
    msgs = [r["p2p_recv_msgs"] + r["p2p_sent_msgs"] + r["rma_ops"] for r in per]
    return {"max": max(recv) / rep, "mean": sum(recv) / len(recv) / rep, "msgs_max": max(msgs) / rep}
def markdown_table(header, cells):
    """Lines of a Markdown table: `header` (column titles), the separator, then one line per
    entry of `cells` (each a list of already formatted cells)."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(str(c) for c in row) + " |" for row in cells]


def emit_table(lines, rows, markdown=None, out=None):
    """Prints `lines` (a table and any notes after it); writes the same text to `markdown` and
    `rows` as JSON to `out`, each when given."""
    table = "\n".join(lines) + "\n"
    print(table, end="")
    if markdown:
        Path(markdown).write_text(table)
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)

#!/usr/bin/env python3
"""Checkpoint and restart of `tessel purify` (docs/purify.md), end to end under mpirun.

Parts (--part, repeatable):
  restart  an uninterrupted run against runs stopped with --stop-after and continued with
           --restart (canonical and TRS4; early, late and chained stops): the final --out
           files must be byte-for-byte identical (cmp), and so must the printed iteration
           lines after the restart point, the band energy and the errors.
  errors   --restart with other options (method, model, N_DUP, rank count), a truncated, torn
           or corrupted checkpoint, a file that is not a checkpoint, a missing one, bad
           --checkpoint-every: exit status 2, one 'tessel: error:' naming the option and both
           values, no --out file left.
  kill     a run on --np ranks checkpointing every step; when the checkpoint exists, one rank
           (--kill-rank; default: rank 1, then in a second run rank 0) is killed with SIGKILL: mpirun must exit within 10 s with a non-zero status, and the
           last checkpoint must still load and validate (a restart from it runs one more step).

Standard library only. Every run is bounded by a timeout (the process group is killed), so
the test can never hang CI. Prints one line per check; exits 1 on any failure.
"""
import argparse
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

FAILS = []


def check(ok, what, detail=""):
    print(("PASS " if ok else "FAIL ") + what + (f"\n     {detail}" if (detail and not ok) else ""),
          flush=True)
    if not ok:
        FAILS.append(what)
    return ok


class Runner:
    def __init__(self, args):
        self.a = args

    def cmd(self, np_, tessel_args):
        return ([self.a.mpiexec, f"{self.a.numproc_flag}", str(np_)] + self.a.mpiexec_flag +
                [self.a.tessel] + tessel_args)

    def run(self, np_, tessel_args, cwd, timeout=None):
        """(returncode, stdout + stderr); returncode None on timeout (the group is killed)."""
        p = subprocess.Popen(self.cmd(np_, tessel_args), cwd=cwd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout or self.a.timeout)
            return p.returncode, out
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            return None, out


def step_lines(out):
    """The per-iteration lines as (iteration, residual, trace, energy) strings, without seconds."""
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 5 and f[0].isdigit():
            rows[int(f[0])] = tuple(f[:4])
    return rows


def final_lines(out):
    """The lines that must agree bitwise: iterations, trace and idempotency errors, energy."""
    keep = []
    for line in out.splitlines():
        if line.startswith("converged:"):
            keep.append(line.split(" in ")[0])
        elif line.startswith(("trace error", "idempotency error", "band energy 2 tr", "exact (analytic")):
            keep.append(line)
    return keep


def record(path):
    """The text record of a checkpoint (between the data and the 24-byte tail)."""
    with open(path, "rb") as f:
        data = f.read()
    n = int(data[-24:-8], 16)
    return data[-24 - n:-24].decode()


def npy_shape(path):
    with open(path, "rb") as f:
        head = f.read(10)
        hlen = struct.unpack("<H", head[8:10])[0]
        d = f.read(hlen).decode("latin1")
    m = re.search(r"'shape': \((\d+), (\d+)\)", d)
    return (int(m.group(1)), int(m.group(2))) if m else None


def files_equal(a, b):
    return subprocess.run(["cmp", "-s", a, b]).returncode == 0


# ---------------------------------------------------------------- restart: bitwise
def part_restart(r, np_, work):
    n = r.a.n
    # "floor": tol below the rounding floor, so the run ends by the floor rule and returns the
    # best iterate, which a late checkpoint must then carry (state.has_best 1).
    for method, extra, tag_ in (("canonical", [], "canonical"), ("trs4", [], "trs4"),
                                ("canonical", ["--tol", "1e-30"], "canonical floor")):
        base = ["purify", "--n", str(n), "--nb", "16", "--method", method] + extra
        tag = f"np{np_} {tag_}"
        rc, full = r.run(np_, base + ["--out", "full.npy"], work)
        if not check(rc == 0, f"{tag}: uninterrupted run", full[-2000:]):
            continue
        steps_full = step_lines(full)
        total = max(steps_full)
        check(total >= 6, f"{tag}: {total} iterations (>= 6 needed to stop early and late)")

        def stop_and_restart(stop, every, label, chain=None):
            ck = f"ck_{label}.bin"
            for f in (ck, "part.npy", "restarted.npy"):
                if os.path.exists(os.path.join(work, f)):
                    os.remove(os.path.join(work, f))
            rc, out = r.run(np_, base + ["--checkpoint", ck, "--checkpoint-every", str(every),
                                         "--stop-after", str(stop), "--out", "part.npy"], work)
            ok = check(rc == 3 and f"stopped after {stop} steps" in out,
                       f"{tag} {label}: --stop-after {stop} exits 3", out[-1500:])
            check(not os.path.exists(os.path.join(work, "part.npy")),
                  f"{tag} {label}: a stopped run writes no --out")
            check(os.path.exists(os.path.join(work, ck)) and
                  not os.path.exists(os.path.join(work, ck + ".tmp")),
                  f"{tag} {label}: checkpoint renamed into place, no .tmp left")
            if not ok:
                return None
            rec = record(os.path.join(work, ck))
            if chain:  # restart, checkpoint into the same file, stop again, restart again
                rc, out = r.run(np_, base + ["--restart", ck, "--checkpoint", ck, "--checkpoint-every",
                                             str(every), "--stop-after", str(chain)], work)
                check(rc == 3 and f"restart: from {ck} at step {stop}" in out,
                      f"{tag} {label}: chained restart from step {stop} stops at {chain}", out[-1500:])
                stop = chain
            rc, out = r.run(np_, base + ["--restart", ck, "--out", "restarted.npy"], work)
            if not check(rc == 0 and f"restart: from {ck} at step {stop}" in out,
                         f"{tag} {label}: restart from step {stop}", out[-1500:]):
                return rec
            check(files_equal(os.path.join(work, "full.npy"), os.path.join(work, "restarted.npy")),
                  f"{tag} {label}: restarted D == uninterrupted D, byte for byte (cmp)")
            steps_r = step_lines(out)
            same = all(steps_r.get(k) == steps_full.get(k) for k in range(stop, total + 1))
            check(same and min(steps_r) == stop,
                  f"{tag} {label}: iteration lines {stop}..{total} identical",
                  f"{steps_r} vs {steps_full}")
            check(final_lines(out) == final_lines(full) and final_lines(full),
                  f"{tag} {label}: iterations, errors, band energy identical",
                  f"{final_lines(out)} vs {final_lines(full)}")
            return rec

        rec = stop_and_restart(4, 2, "early")
        if rec:
            check("state.has_best 0" in rec and "option.--method " + method in rec,
                  f"{tag} early: record holds the method and no best iterate")
            check(npy_shape(os.path.join(work, "ck_early.bin")) == (n, n),
                  f"{tag} early: the checkpoint is a .npy of shape ({n}, {n})")
        # Before the last step (the restart runs only that one).
        rec = stop_and_restart(total, 1, "late")
        if rec:
            best = "state.has_best 1" in rec
            check(npy_shape(os.path.join(work, "ck_late.bin")) == (n, 2 * n if best else n),
                  f"{tag} late: the checkpoint holds X{' and the best iterate' if best else ''}")
            if extra:
                check(best, f"{tag} late: at the rounding floor the best iterate is stored beside X", rec)
        if not extra and method == "canonical":
            stop_and_restart(2, 2, "chained", chain=5)


# ---------------------------------------------------------------- errors
def part_errors(r, np_, work):
    n = r.a.n
    base = ["purify", "--n", str(n), "--nb", "16"]
    rc, out = r.run(np_, base + ["--checkpoint", "ck.bin", "--checkpoint-every", "2", "--stop-after", "2"], work)
    if not check(rc == 3, f"np{np_}: checkpoint for the error cases", out[-1500:]):
        return
    with open(os.path.join(work, "ck.bin"), "rb") as f:
        good = f.read()
    hdr = 128  # the .npy header of an n x n float64 array (format 1.0)

    def write(name, data):
        with open(os.path.join(work, name), "wb") as f:
            f.write(data)

    write("trunc_half.bin", good[:len(good) // 2])
    write("trunc_tail.bin", good[:-3])
    write("trunc_head.bin", good[:40])
    corrupt = bytearray(good)
    corrupt[hdr + 8 * (n + 1)] ^= 0x01  # one bit of X's element (1, 1)
    write("corrupt.bin", bytes(corrupt))
    torn = good[:hdr + 800] + good[hdr + 1600:]  # data missing in the middle, tail intact
    write("torn.bin", torn)
    shutil.copy(os.path.join(work, "ck.bin"), os.path.join(work, "ck_copy.bin"))

    cases = [
        ("other --method", np_, base + ["--restart", "ck.bin", "--method", "trs4"],
         ["--method", "'canonical'", "'trs4'", "ck.bin"]),
        ("other model (--gap)", np_, base + ["--restart", "ck.bin", "--gap", "0.3"],
         ["F-hash", "ck.bin"]),
        ("other --n-dup", np_, base + ["--restart", "ck.bin", "--n-dup", "2"],
         ["--n-dup", "'auto'", "'2'"]),
        ("other --tol", np_, base + ["--restart", "ck.bin", "--tol", "1e-9"], ["--tol", "1e-09"]),
        ("other rank count", np_ + 1, base + ["--restart", "ck.bin"],
         ["ranks", f"'{np_}'", f"'{np_ + 1}'"]),
        ("truncated to half", np_, base + ["--restart", "trunc_half.bin"], ["trunc_half.bin", "truncated"]),
        ("last 3 bytes cut", np_, base + ["--restart", "trunc_tail.bin"], ["trunc_tail.bin", "truncated"]),
        ("only 40 bytes", np_, base + ["--restart", "trunc_head.bin"], ["trunc_head.bin", "truncated"]),
        ("torn (800 bytes of data missing)", np_, base + ["--restart", "torn.bin"], ["torn.bin", "truncated or torn"]),
        ("one bit flipped", np_, base + ["--restart", "corrupt.bin"], ["corrupt.bin", "corrupted"]),
        ("a plain .npy", np_, base + ["--restart", "plain.npy"], ["plain.npy", "not a tessel checkpoint"]),
        ("missing file", np_, base + ["--restart", "nothere.bin"], ["nothere.bin", "cannot read checkpoint"]),
        ("--checkpoint-every 0", np_, base + ["--checkpoint", "x.bin", "--checkpoint-every", "0"],
         ["--checkpoint-every", "0"]),
        ("--checkpoint-every without --checkpoint", np_, base + ["--checkpoint-every", "3"],
         ["--checkpoint-every", "needs --checkpoint"]),
    ]
    rc, out = r.run(1, ["purify", "--n", "8", "--out", "plain.npy"], work)
    check(rc == 0, "a plain .npy for the not-a-checkpoint case", out[-800:])
    for label, nranks, args, must in cases:
        before = set(os.listdir(work))
        rc, out = r.run(nranks, args + ["--out", "D.npy", "--json", "D.json"], work)
        count = out.count("tessel: error:")
        missing = [m for m in must if m not in out]
        check(rc == 2 and count == 1 and not missing,
              f"np{nranks} error: {label}: exit 2, one message naming {must}",
              f"rc={rc} count={count} missing={missing}\n{out[-1500:]}")
        left = set(os.listdir(work)) - before
        check(not left, f"np{nranks} error: {label}: no file left", f"{left}")
    check(open(os.path.join(work, "ck.bin"), "rb").read() == good,
          f"np{np_}: refused restarts leave the checkpoint untouched")


# ---------------------------------------------------------------- kill -9
def descendants(pid):
    kids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid:
            kids.append(int(p))
    out = list(kids)
    for k in kids:
        out += descendants(k)
    return out


def rank_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return None
    for e in env:
        for key in (b"OMPI_COMM_WORLD_RANK=", b"PMI_RANK="):
            if e.startswith(key):
                return int(e[len(key):])
    return None


def part_kill(r, np_, work):
    # Rank 0 is always active (at 4 ranks the only one: it computes, writes and renames the
    # checkpoint); rank 1 waits for it (inactive at 4 ranks).
    for victim_rank in r.a.kill_rank or [1, 0]:
        kill_one(r, np_, work, victim_rank)


def kill_one(r, np_, work, victim_rank):
    exe = os.path.realpath(r.a.tessel)
    ck = os.path.join(work, f"kill{victim_rank}.bin")
    args = ["purify", "--n", str(r.a.kill_n), "--nb", "64", "--checkpoint", ck, "--checkpoint-every", "1",
            "--tol", "1e-30", "--max-iter", "100000"]
    p = subprocess.Popen(r.cmd(np_, args), cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        t0 = time.time()
        while not os.path.exists(ck) and p.poll() is None and time.time() - t0 < r.a.timeout:
            time.sleep(0.2)
        if not check(os.path.exists(ck) and p.poll() is None,
                     f"np{np_} kill rank {victim_rank}: the first checkpoint exists while the run goes on"):
            return
        # Into a later step: wait until the checkpoint was rewritten once (the run is going on),
        # then kill at once (a fixed sleep outlived the whole run on a faster machine).
        m0 = os.stat(ck).st_mtime_ns
        t1 = time.time()
        while p.poll() is None and time.time() - t1 < 30:
            try:
                if os.stat(ck).st_mtime_ns != m0:
                    break
            except OSError:  # between the rename's unlink and link: try again
                pass
            time.sleep(0.01)
        ranks = {}
        for pid in descendants(p.pid):
            try:
                if os.path.realpath(f"/proc/{pid}/exe") == exe:
                    ranks[pid] = rank_of(pid)
            except OSError:
                pass
        if not check(len(ranks) == np_, f"np{np_} kill rank {victim_rank}: found the {np_} rank processes", f"{ranks}"):
            return
        victim = next((pid for pid, rk in ranks.items() if rk == victim_rank), None)
        if not check(victim is not None, f"np{np_} kill rank {victim_rank}: rank {victim_rank} found", f"{ranks}"):
            return
        t_kill = time.time()
        os.kill(victim, signal.SIGKILL)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        took = time.time() - t_kill
        rc = p.poll()
        check(rc is not None and rc != 0,
              f"np{np_} kill rank {victim_rank}: mpirun exited within 10 s with a non-zero status after kill -9 of rank "
              f"{ranks[victim]} (status {rc}, {took:.1f} s)")
        time.sleep(0.5)
        alive = [pid for pid in ranks if os.path.exists(f"/proc/{pid}") and
                 open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]
        check(not alive, f"np{np_} kill rank {victim_rank}: no rank process left behind", f"{alive}")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        out = p.communicate()[0]
    steps = re.findall(r"checkpoint: \S+ written, resumes at step (\d+)", out)
    last = int(steps[-1]) if steps else None
    rec = record(ck)
    it = int(re.search(r"state.iteration (\d+)", rec).group(1))
    check(last is None or it >= last,
          f"np{np_} kill rank {victim_rank}: the checkpoint holds step {it} (last reported {last}): whole, not torn")
    rc, out2 = r.run(np_, args[:-4] + ["--restart", ck, "--tol", "1e-30", "--max-iter", "100000",
                                       "--stop-after", str(it + 1)], work)
    # It stops after one more step (exit 3) or, when the kill came late and the checkpoint is
    # already at the rounding floor, ends there (exit 0, "converged: K iterations" with K the
    # best step, which may be before the checkpoint's).
    went_on = (rc == 3 and f"stopped after {it + 1} steps" in out2) or \
        (rc == 0 and re.search(r"converged: \d+ iterations", out2) is not None)
    check(went_on and f"restart: from {ck} at step {it}" in out2,
          f"np{np_} kill rank {victim_rank}: the last checkpoint loads, validates and continues (step {it} -> {it + 1})",
          out2[-1500:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--numproc-flag", default="-n")
    ap.add_argument("--mpiexec-flag", action="append", default=[])
    ap.add_argument("--tessel", required=True)
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--part", action="append", choices=["restart", "errors", "kill"])
    ap.add_argument("--n", type=int, default=64, help="ring model size of the restart/error parts")
    ap.add_argument("--kill-n", type=int, default=2048,
                    help="ring model size of the kill part (~0.1-0.3 s per step at 4 ranks)")
    ap.add_argument("--kill-rank", type=int, action="append", help="rank(s) to kill (default 1, then 0)")
    ap.add_argument("--timeout", type=float, default=180)
    a = ap.parse_args()
    a.tessel = os.path.abspath(a.tessel)
    r = Runner(a)
    work = tempfile.mkdtemp(prefix="tessel_ckpt_")
    try:
        for part in a.part or ["restart", "errors"]:
            {"restart": part_restart, "errors": part_errors, "kill": part_kill}[part](r, a.np, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(FAILS)} failed" + (": " + "; ".join(FAILS) if FAILS else ""))
    assert not FAILS, f"{len(FAILS)} check(s) failed: " + "; ".join(FAILS)
    return 0


if __name__ == "__main__":
    sys.exit(main())

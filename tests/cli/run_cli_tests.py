#!/usr/bin/env python3
"""End-to-end tests of the `tessel` command under mpirun (Python 3 standard library only).

For every rank count given, runs the built `tessel` binary on bad inputs and checks the
collective-error contract of docs/DESIGN.md:

  * the exit code is non-zero and the run neither hangs (per-run timeout) nor aborts
    (no MPI_ABORT / signal / "internal error" text);
  * the error message is printed exactly ONCE on stderr, by rank 0 (checked with the rank
    tags of `--tag-output` / `-prepend-rank` when the MPI flavour is known), and it names
    the parameter and the value;
  * no output file (--out / --json, or a temporary file beside them) is left behind.

and on good inputs that the results are right: `--verify` PASSES, a round trip through .npy
files matches A @ B (real and complex, transposed, Fortran and C order, alpha/beta with C),
`--explain` prints the plan without running, `tessel info` names the MPI library.

NumPy is optional: when the interpreter has it, the inputs of the round trips are written by
numpy.save and the reference is numpy's A @ B; without it the script first re-executes
itself with /usr/bin/python3 if that one has NumPy, and otherwise writes the .npy bytes by
hand (format 1.0) and computes the reference in pure Python.

Usage:
  run_cli_tests.py --mpiexec /usr/bin/mpirun --flavour openmpi \
      --mpiexec-flag=--oversubscribe --tessel build/apps/tessel/tessel --np 1,2,3,5,8

Prints one line per check and a closing line "N passed, M failed"; exits 1 on any failure.
"""
import argparse
import ast
import cmath
import math
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

# ---------------------------------------------------------------- NumPy (optional)
_SYSTEM_PYTHON = "/usr/bin/python3"
try:
    import numpy as np  # noqa: F401
except ImportError:  # pragma: no cover - depends on the machine
    np = None
    if (os.environ.get("TESSEL_CLI_TESTS_REEXEC") != "1" and os.path.realpath(sys.executable)
            != os.path.realpath(_SYSTEM_PYTHON) and os.access(_SYSTEM_PYTHON, os.X_OK)):
        probe = subprocess.run([_SYSTEM_PYTHON, "-c", "import numpy"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        if probe.returncode == 0:
            os.environ["TESSEL_CLI_TESTS_REEXEC"] = "1"
            sys.stdout.flush()
            os.execv(_SYSTEM_PYTHON, [_SYSTEM_PYTHON] + sys.argv)


# ---------------------------------------------------------------- .npy by hand (format 1.0)
def npy_bytes(descr, shape, payload, fortran_order=False):
    """The bytes of a .npy file, format 1.0, header padded to 64 bytes as numpy.save does."""
    shp = repr(tuple(int(x) for x in shape))  # "(6, 5)", "(4,)", as numpy writes it
    d = f"{{'descr': '{descr}', 'fortran_order': {fortran_order}, 'shape': {shp}, }}"
    total = 10 + len(d) + 1
    d += " " * ((64 - total % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode("latin1") + payload


def write_npy_matrix(path, rows, cols, values, dtype="f8", fortran_order=False):
    """values[i][j]; dtype 'f8' (float64), 'c16' (complex128) or 'i4' (int32)."""
    order = [(i, j) for j in range(cols) for i in range(rows)] if fortran_order else \
        [(i, j) for i in range(rows) for j in range(cols)]
    if dtype == "f8":
        payload = b"".join(struct.pack("<d", values[i][j]) for i, j in order)
    elif dtype == "c16":
        payload = b"".join(struct.pack("<dd", values[i][j].real, values[i][j].imag) for i, j in order)
    elif dtype == "i4":
        payload = b"".join(struct.pack("<i", int(values[i][j])) for i, j in order)
    else:
        raise ValueError(dtype)
    with open(path, "wb") as f:
        f.write(npy_bytes("<" + dtype, (rows, cols), payload, fortran_order))


def read_npy_matrix(path):
    """A 2-D float64/complex128 .npy file (format 1.0-3.0) as a list of rows."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = data[6]
    if major == 1:
        hlen, start = struct.unpack("<H", data[8:10])[0], 10
    else:
        hlen, start = struct.unpack("<I", data[8:12])[0], 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    rows, cols = header["shape"]
    body = data[start + hlen:]
    if header["descr"] == "<f8":
        flat = list(struct.unpack(f"<{rows * cols}d", body[:8 * rows * cols]))
    elif header["descr"] == "<c16":
        raw = struct.unpack(f"<{2 * rows * cols}d", body[:16 * rows * cols])
        flat = [complex(raw[2 * t], raw[2 * t + 1]) for t in range(rows * cols)]
    else:
        raise ValueError(f"{path}: dtype {header['descr']}")
    if header["fortran_order"]:
        return [[flat[j * rows + i] for j in range(cols)] for i in range(rows)]
    return [[flat[i * cols + j] for j in range(cols)] for i in range(rows)]


def random_matrix(rng, rows, cols, complex_=False):
    if complex_:
        return [[complex(rng.uniform(-1, 1), rng.uniform(-1, 1)) for _ in range(cols)]
                for _ in range(rows)]
    return [[rng.uniform(-1, 1) for _ in range(cols)] for _ in range(rows)]


def save_matrix(path, mat, complex_=False, fortran_order=False):
    """Writes mat with numpy.save when NumPy is there (C or Fortran order), else by hand."""
    if np is not None:
        a = np.array(mat, dtype=np.complex128 if complex_ else np.float64)
        np.save(path, np.asfortranarray(a) if fortran_order else np.ascontiguousarray(a))
    else:
        write_npy_matrix(path, len(mat), len(mat[0]), mat, "c16" if complex_ else "f8",
                         fortran_order)


def op(mat, trans):
    if trans == "N":
        return mat
    t = [list(r) for r in zip(*mat)]
    if trans == "C":
        t = [[v.conjugate() for v in r] for r in t]
    return t


def reference(a, b, transa, transb, alpha=1.0, beta=0.0, c=None):
    """alpha op(A) op(B) + beta C: numpy's A @ B when available, else pure Python."""
    oa, ob = op(a, transa), op(b, transb)
    if np is not None:
        r = alpha * (np.array(oa) @ np.array(ob))
        if beta != 0:
            r = r + beta * np.array(c)
        return r.tolist()
    m, k, n = len(oa), len(ob), len(ob[0])
    out = [[alpha * sum(oa[i][l] * ob[l][j] for l in range(k)) for j in range(n)] for i in range(m)]
    if beta != 0:
        out = [[out[i][j] + beta * c[i][j] for j in range(n)] for i in range(m)]
    return out


def load_result(path):
    if np is not None:
        return np.load(path).tolist()
    return read_npy_matrix(path)


# ---------------------------------------------------------------- running tessel
class Run:
    def __init__(self, rc, out, err, timed_out, seconds):
        self.rc, self.out, self.err, self.timed_out, self.seconds = rc, out, err, timed_out, seconds
        # stderr lines as (rank or None when untagged, text)
        self.err_lines = []
        self.out_lines = []


TAG_OMPI = re.compile(r"^\[(\d+),(\d+)\]<(stdout|stderr)>:\s?(.*)$")
TAG_MPICH = re.compile(r"^\[(\d+)\]\s?(.*)$")


class Runner:
    def __init__(self, mpiexec, numproc_flag, flags, tessel, timeout, flavour, option_errors=True):
        self.mpiexec, self.numproc_flag, self.flags, self.tessel = mpiexec, numproc_flag, flags, tessel
        self.timeout, self.flavour = timeout, flavour
        # False: the option-only error cases (see check_error_case) are left out of this run.
        self.option_errors = option_errors

    def tag_flags(self):
        if self.flavour == "openmpi":
            return ["--tag-output"]
        if self.flavour == "mpich":
            return ["-prepend-rank"]
        return []

    def untag(self, text):
        lines = []
        for line in text.splitlines():
            if self.flavour == "openmpi":
                mt = TAG_OMPI.match(line)
                lines.append((int(mt.group(2)), mt.group(4)) if mt else (None, line))
            elif self.flavour == "mpich":
                # Hydra's -prepend-rank tags every write chunk, not every line: a line written
                # in pieces carries the rank's tag inside too ("[0] verify: [0] PASSED").
                mt = TAG_MPICH.match(line)
                if mt:
                    rest = re.sub(r"\[" + mt.group(1) + r"\] ?", "", mt.group(2))
                    lines.append((int(mt.group(1)), rest))
                else:
                    lines.append((None, line))
            else:
                lines.append((0, line))
        return lines

    def run(self, nranks, args, cwd):
        cmd = [self.mpiexec, self.numproc_flag, str(nranks)] + self.flags + self.tag_flags() + [self.tessel] + args
        t0 = time.monotonic()
        # A session of its own, so a hang can be ended with its whole process group.
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    out, err = proc.communicate(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue
            else:
                out, err = b"", b""
        r = Run(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                timed_out, time.monotonic() - t0)
        r.cmd = cmd
        r.err_lines = self.untag(r.err)
        r.out_lines = self.untag(r.out)
        return r


ABORT_SIGNS = ["MPI_ABORT", "MPI_Abort", "internal error", "terminate called", "Segmentation",
               "signal", "core dumped", "exited on signal", "mpirun noticed", "prterun noticed",
               "KILLED BY SIGNAL", "Assertion", "what():"]


# ---------------------------------------------------------------- the checks
class Tally:
    def __init__(self):
        self.passed, self.failed, self.xfailed, self.xpassed, self.skipped = 0, 0, 0, 0, 0
        self.failures = []

    def report(self, name, problems, run=None, xfail=None):
        if not problems and xfail is None:
            self.passed += 1
            print(f"PASS  {name}" + (f"  ({run.seconds:.1f} s)" if run else ""), flush=True)
            return
        if not problems and xfail is not None:
            # An expected failure that now passes: the known defect is fixed; count it as a
            # failure so that the expectation is removed.
            self.failed += 1
            self.failures.append(name)
            print(f"XPASS {name}: marked expected-failure ({xfail}) but it passed; remove the mark",
                  flush=True)
            return
        if xfail is not None:
            self.xfailed += 1
            print(f"XFAIL {name} (known defect: {xfail})", flush=True)
            for p in problems:
                print(f"      - {p}")
            return
        self.failed += 1
        self.failures.append(name)
        print(f"FAIL  {name}", flush=True)
        for p in problems:
            print(f"      - {p}")
        if run is not None:
            print("      command: " + " ".join(run.cmd))
            print(f"      exit code {run.rc}{' (timed out)' if run.timed_out else ''}")
            for label, text in (("stdout", run.out), ("stderr", run.err)):
                tail = text.strip().splitlines()[-15:]
                if tail:
                    print(f"      {label} (last {len(tail)} lines):")
                    for line in tail:
                        print("        | " + line)
        sys.stdout.flush()


def snapshot(d):
    return sorted(os.listdir(d))


def check_no_abort(run, problems):
    if run.timed_out:
        problems.append(f"timed out (hang) after {run.seconds:.0f} s")
    for sign in ABORT_SIGNS:
        if sign in run.err or sign in run.out:
            problems.append(f"output contains '{sign}' (abort/crash instead of a collective error)")
            break


HELP_HINT = "Run with --help for more information."


def check_error_case(runner, tally, nranks, name, args, casedir, must, xfail=None,
                     extra_paths=(), parse_error=False, option_only=False):
    """Runs a bad input; checks exit code, one error line from rank 0 naming `must`, no files.

    parse_error: the option parser (CLI11) rejects the command line; its message has no
    "error" word and is followed by HELP_HINT, so the error line is the one rank line that
    is not the hint.
    option_only: the error comes from the command line alone (a parse error, a value out of
    range, an unwritable output path), detected the same way on every rank whatever their
    number; such cases run only where runner.option_errors is set (one rank count of each
    ctest family, see tests/cli/CMakeLists.txt), the cases that depend on the data or on the
    rank count run at every rank count.
    """
    if option_only and not runner.option_errors:
        tally.skipped += 1
        return
    before = snapshot(casedir)
    run = runner.run(nranks, args, casedir)
    problems = []
    check_no_abort(run, problems)
    if run.rc == 0:
        problems.append("exit code 0 for a bad input")
    tagged = [(r, t) for r, t in run.err_lines
              if t.strip() and (r is not None or not runner.flavour)]
    if parse_error:
        errs = [(r, t) for r, t in tagged if t.strip() != HELP_HINT]
        hints = [(r, t) for r, t in tagged if t.strip() == HELP_HINT]
        if len(hints) > 1:
            problems.append(f"the hint {HELP_HINT!r} is printed {len(hints)} times")
    else:
        errs = [(r, t) for r, t in run.err_lines if "error" in t.lower()]
    if len(errs) != 1:
        problems.append(f"{len(errs)} error lines on stderr, expected exactly 1: "
                        + "; ".join(repr(t) for _, t in errs[:8]))
    if errs:
        rank, text = errs[0]
        if runner.flavour in ("openmpi", "mpich") and rank != 0:
            problems.append(f"the error line comes from rank {rank}, expected rank 0 "
                            f"(untagged = printed by mpirun)" if rank is None else
                            f"the error line comes from rank {rank}, expected rank 0")
        for token in must:
            if token not in text:
                problems.append(f"the error message does not name {token!r}: {text!r}")
    if errs and not problems:
        print(f"      message: {errs[0][1]}")
    # Untagged lines come from mpirun itself (its notice that a rank exited non-zero): only
    # the abort/crash signs above are looked for there. Lines of the ranks must be the error.
    others = [] if parse_error else [t for r, t in tagged if "error" not in t.lower()]
    if others:
        problems.append("other text on stderr: " + "; ".join(repr(t) for t in others[:5]))
    after = snapshot(casedir)
    new = sorted(set(after) - set(before))
    if new:
        problems.append(f"files left behind in {casedir}: {new}")
    for p in extra_paths:
        if os.path.exists(p):
            problems.append(f"{p} exists after a failed run")
    tally.report(name, problems, run, xfail)


def error_cases(runner, tally, nranks, work):
    """All bad-input cases at one rank count. Every case writes into a fresh folder of its own."""
    rng = random.Random(1234)
    counter = [0]

    def case(label):
        counter[0] += 1
        d = os.path.join(work, f"np{nranks}_err{counter[0]:02d}")
        os.makedirs(d)
        return d

    def outs(d):
        # every error case also asks for both output files, which must not appear
        return ["--out", os.path.join(d, "C.npy"), "--json", os.path.join(d, "out.json")]

    tag = f"np{nranks}"

    # Mismatched inner dimensions from two .npy files: A is 6 x 5, B is 7 x 4.
    d = case("inner")
    write_npy_matrix(os.path.join(d, "A.npy"), 6, 5, random_matrix(rng, 6, 5))
    write_npy_matrix(os.path.join(d, "B.npy"), 7, 4, random_matrix(rng, 7, 4))
    check_error_case(runner, tally, nranks, f"{tag} error: inner dimensions differ (A 6x5, B 7x4)",
                     ["gemm", "--a", "A.npy", "--b", "B.npy", "--nb", "2"] + outs(d), d,
                     must=["--b B.npy", "7 x 4", "5 x 4", "k = 5 from --a A.npy"])
    # ... and a --c whose shape disagrees with op(A) op(B).
    d = case("cshape")
    write_npy_matrix(os.path.join(d, "A.npy"), 6, 5, random_matrix(rng, 6, 5))
    write_npy_matrix(os.path.join(d, "B.npy"), 5, 4, random_matrix(rng, 5, 4))
    write_npy_matrix(os.path.join(d, "C0.npy"), 4, 6, random_matrix(rng, 4, 6))
    check_error_case(runner, tally, nranks, f"{tag} error: --c 4x6 for C 6x4",
                     ["gemm", "--a", "A.npy", "--b", "B.npy", "--c", "C0.npy", "--beta", "1",
                      "--nb", "2"] + outs(d), d, must=["--c C0.npy", "4 x 6", "6 x 4"])

    # Negative and sentinel sizes.
    for opt, val in (("--m", "-5"), ("--n", "-3"), ("--k", "-7"), ("--m", "-1")):
        d = case("neg")
        check_error_case(runner, tally, nranks, f"{tag} error: {opt} {val}",
                         ["gemm", opt, val, "--nb", "4"] + outs(d), d, must=[opt, val], option_only=True)

    # Block size 0 and negative.
    for val in ("0", "-2"):
        d = case("nb")
        check_error_case(runner, tally, nranks, f"{tag} error: --nb {val}",
                         ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", val] + outs(d), d,
                         must=["--nb", val], option_only=True)

    # A process grid that needs more ranks than the run has, and a malformed one.
    d = case("grid")
    check_error_case(runner, tally, nranks, f"{tag} error: --grid 4x4 on {nranks} ranks",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4", "--grid", "4x4"]
                     + outs(d), d, must=["--grid", "4x4", "16", str(nranks)])
    d = case("grid2")
    check_error_case(runner, tally, nranks, f"{tag} error: --grid 0x1",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4", "--grid", "0x1"]
                     + outs(d), d, must=["--grid 0x1", ">= 1"], option_only=True)
    d = case("grid3")
    check_error_case(runner, tally, nranks, f"{tag} error: --grid two",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4", "--grid", "two"]
                     + outs(d), d, must=["--grid", "two"], option_only=True)

    # A memory budget too small for any plan: the message says how much is needed.
    d = case("mem")
    check_error_case(runner, tally, nranks, f"{tag} error: --memory 0.001 (too small)",
                     ["gemm", "--m", "300", "--n", "300", "--k", "300", "--nb", "16",
                      "--memory", "0.001"] + outs(d), d,
                     must=["--memory 0.001", "needed", "MiB"])
    d = case("mem2")
    check_error_case(runner, tally, nranks, f"{tag} error: --memory -1",
                     ["gemm", "--m", "30", "--n", "30", "--k", "30", "--nb", "4", "--memory", "-1"]
                     + outs(d), d, must=["--memory", "-1"], option_only=True)

    # NaN / Inf in an input file with --verify.
    d = case("nan")
    a = random_matrix(rng, 9, 7)
    a[4][3] = float("nan")
    write_npy_matrix(os.path.join(d, "A.npy"), 9, 7, a)
    write_npy_matrix(os.path.join(d, "B.npy"), 7, 5, random_matrix(rng, 7, 5))
    check_error_case(runner, tally, nranks, f"{tag} error: NaN in --a with --verify",
                     ["gemm", "--a", "A.npy", "--b", "B.npy", "--nb", "2", "--verify"] + outs(d), d,
                     must=["NaN", "A", "(4, 3)"])
    d = case("inf")
    b = random_matrix(rng, 7, 5)
    b[6][0] = float("-inf")
    write_npy_matrix(os.path.join(d, "A.npy"), 9, 7, random_matrix(rng, 9, 7))
    write_npy_matrix(os.path.join(d, "B.npy"), 7, 5, b)
    check_error_case(runner, tally, nranks, f"{tag} error: -Inf in --b with --verify",
                     ["gemm", "--a", "A.npy", "--b", "B.npy", "--nb", "3", "--verify"] + outs(d), d,
                     must=["Inf", "B", "(6, 0)"])

    # A truncated .npy file (the data stop early), and one cut inside the header.
    d = case("trunc")
    write_npy_matrix(os.path.join(d, "A.npy"), 8, 6, random_matrix(rng, 8, 6))
    write_npy_matrix(os.path.join(d, "B.npy"), 6, 4, random_matrix(rng, 6, 4))
    with open(os.path.join(d, "A.npy"), "r+b") as f:
        f.truncate(128 + 8 * 8 * 6 - 20)
    check_error_case(runner, tally, nranks, f"{tag} error: truncated --a (data cut)",
                     ["gemm", "--a", "A.npy", "--b", "B.npy", "--nb", "2"] + outs(d), d,
                     must=["A.npy", "truncated"])
    d = case("trunc2")
    write_npy_matrix(os.path.join(d, "B.npy"), 6, 4, random_matrix(rng, 6, 4))
    with open(os.path.join(d, "B.npy"), "r+b") as f:
        f.truncate(40)
    check_error_case(runner, tally, nranks, f"{tag} error: truncated --b (header cut)",
                     ["gemm", "--m", "5", "--k", "6", "--b", "B.npy", "--nb", "2"] + outs(d), d,
                     must=["B.npy", "truncated"])

    # Not a .npy file at all; a missing file; an empty file.
    d = case("notnpy")
    with open(os.path.join(d, "A.npy"), "w") as f:
        f.write("1.0 2.0 3.0\n4.0 5.0 6.0\n")
    check_error_case(runner, tally, nranks, f"{tag} error: --a is a text file",
                     ["gemm", "--a", "A.npy", "--n", "4", "--nb", "2"] + outs(d), d,
                     must=["A.npy", "not a .npy"])
    d = case("missing")
    check_error_case(runner, tally, nranks, f"{tag} error: --a file missing",
                     ["gemm", "--a", "nothere.npy", "--n", "4", "--nb", "2"] + outs(d), d,
                     must=["nothere.npy"])
    d = case("empty")
    open(os.path.join(d, "A.npy"), "w").close()
    check_error_case(runner, tally, nranks, f"{tag} error: --a is empty",
                     ["gemm", "--a", "A.npy", "--n", "4", "--nb", "2"] + outs(d), d,
                     must=["A.npy"])

    # Wrong dtype (int32), and float64 given for --dtype complex.
    d = case("int32")
    write_npy_matrix(os.path.join(d, "A.npy"), 5, 4, [[i + j for j in range(4)] for i in range(5)],
                     dtype="i4")
    check_error_case(runner, tally, nranks, f"{tag} error: --a of dtype int32",
                     ["gemm", "--a", "A.npy", "--n", "3", "--nb", "2"] + outs(d), d,
                     must=["A.npy", "<i4", "<f8"])
    d = case("f8c")
    write_npy_matrix(os.path.join(d, "A.npy"), 5, 4, random_matrix(rng, 5, 4))
    check_error_case(runner, tally, nranks, f"{tag} error: float64 --a with --dtype complex",
                     ["gemm", "--a", "A.npy", "--n", "3", "--nb", "2", "--dtype", "complex"] + outs(d),
                     d, must=["A.npy", "<f8", "<c16"])

    # Wrong shape: a 3-D array, and a 2-D array that disagrees with --m.
    d = case("3d")
    with open(os.path.join(d, "A.npy"), "wb") as f:
        f.write(npy_bytes("<f8", (2, 3, 4), struct.pack("<24d", *range(24))))
    check_error_case(runner, tally, nranks, f"{tag} error: --a is 3-D",
                     ["gemm", "--a", "A.npy", "--n", "3", "--nb", "2"] + outs(d), d,
                     must=["A.npy", "3-D", "(2, 3, 4)"])
    d = case("shape")
    write_npy_matrix(os.path.join(d, "A.npy"), 6, 5, random_matrix(rng, 6, 5))
    check_error_case(runner, tally, nranks, f"{tag} error: --m 7 disagrees with --a (6 x 5)",
                     ["gemm", "--a", "A.npy", "--m", "7", "--n", "3", "--nb", "2"] + outs(d), d,
                     must=["--m 7", "A.npy", "6"])
    d = case("shapek")
    write_npy_matrix(os.path.join(d, "B.npy"), 6, 5, random_matrix(rng, 6, 5))
    check_error_case(runner, tally, nranks, f"{tag} error: --k 4 disagrees with --b (6 x 5)",
                     ["gemm", "--b", "B.npy", "--m", "3", "--k", "4", "--nb", "2"] + outs(d), d,
                     must=["--k 4", "B.npy", "6"])

    # Unwritable output paths: nothing may be created.
    d = case("unwritable")
    check_error_case(runner, tally, nranks, f"{tag} error: --out /nonexistent/dir/c.npy",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4",
                      "--out", "/nonexistent/dir/c.npy", "--json", os.path.join(d, "out.json")], d,
                     must=["--out", "/nonexistent/dir/c.npy"],
                     extra_paths=["/nonexistent/dir/c.npy", "/nonexistent"], option_only=True)
    d = case("unwritable2")
    check_error_case(runner, tally, nranks, f"{tag} error: --json /nonexistent/dir/r.json",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4",
                      "--out", os.path.join(d, "C.npy"), "--json", "/nonexistent/dir/r.json"], d,
                     must=["--json", "/nonexistent/dir/r.json"],
                     extra_paths=["/nonexistent/dir/r.json", "/nonexistent"], option_only=True)
    d = case("unwritable_trace")
    check_error_case(runner, tally, nranks, f"{tag} error: --trace /nonexistent/dir/t.json",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4",
                      "--trace", "/nonexistent/dir/t.json"] + outs(d), d,
                     must=["--trace", "/nonexistent/dir/t.json"],
                     extra_paths=["/nonexistent/dir/t.json", "/nonexistent"], option_only=True)
    d = case("outdir")
    os.makedirs(os.path.join(d, "adir"))
    check_error_case(runner, tally, nranks, f"{tag} error: --out names a directory",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4",
                      "--out", os.path.join(d, "adir"), "--json", os.path.join(d, "out.json")], d,
                     must=["--out", "adir", "directory"], option_only=True)
    d = case("jsondir")
    os.makedirs(os.path.join(d, "jdir"))
    check_error_case(runner, tally, nranks, f"{tag} error: --json names a directory (--out fine)",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4",
                      "--out", os.path.join(d, "C.npy"), "--json", os.path.join(d, "jdir")], d,
                     must=["--json", "jdir", "directory"], option_only=True)

    # Unknown option values.
    d = case("algo")
    check_error_case(runner, tally, nranks, f"{tag} error: --algorithm cannon",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4",
                      "--algorithm", "cannon"] + outs(d), d, must=["--algorithm", "cannon"], option_only=True)
    # --simulate-compute skip exists only in the SMPI build (docs/simulation.md).
    d = case("simskip")
    check_error_case(runner, tally, nranks, f"{tag} error: --simulate-compute skip (not SMPI)",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--simulate-compute", "skip"]
                     + outs(d), d, must=["--simulate-compute skip", "SMPI", "expected run"],
                     option_only=True)
    d = case("transa")
    check_error_case(runner, tally, nranks, f"{tag} error: --transa X",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4", "--transa", "X"]
                     + outs(d), d, must=["--transa", "X"], option_only=True)
    d = case("transb")
    check_error_case(runner, tally, nranks, f"{tag} error: --transb Q",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4", "--transb", "Q"]
                     + outs(d), d, must=["--transb", "Q"], option_only=True)
    # Other numeric options out of range.
    for opt_args in (["--delta", "1.5"], ["--rounds", "-2"], ["--repeat", "0"], ["--alpha", "nan"],
                     ["--beta", "inf"], ["--plan-choice", "5"], ["--shared-planning-from", "0"]):
        d = case("range")
        check_error_case(runner, tally, nranks, f"{tag} error: {' '.join(opt_args)}",
                         ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4"] + opt_args
                         + outs(d), d, must=opt_args, option_only=True)

    # Values the option parser rejects: printed once by rank 0 (CLI11's format + help hint).
    for opt_args, must in ((["--nb", "1.5"], ["--nb", "1.5"]), (["--m", "abc"], ["--m", "abc"]),
                           (["--bogus", "3"], ["--bogus"])):
        d = case("parse")
        check_error_case(runner, tally, nranks, f"{tag} parse error: {' '.join(opt_args)}",
                         ["gemm", "--n", "20", "--k", "20"] + opt_args + outs(d), d, must=must,
                         parse_error=True, option_only=True)
    # --plan-choice: a runner-up the planner did not price (one rank: one candidate)
    if nranks == 1:
        d = case("choice")
        check_error_case(runner, tally, nranks, f"{tag} error: --plan-choice 3 on one rank",
                         ["gemm", "--m", "20", "--n", "20", "--k", "20", "--plan-choice", "3"]
                         + outs(d), d, must=["plan choice 3", "candidate"])
    d = case("dtype")
    check_error_case(runner, tally, nranks, f"{tag} error: --dtype float32",
                     ["gemm", "--m", "20", "--n", "20", "--k", "20", "--nb", "4", "--dtype",
                      "float32"] + outs(d), d, must=["--dtype", "float32"], option_only=True)


# ---------------------------------------------------------------- positive checks
def run_ok(runner, nranks, args, cwd, problems):
    run = runner.run(nranks, args, cwd)
    check_no_abort(run, problems)
    if run.rc != 0:
        problems.append(f"exit code {run.rc}, expected 0")
    errs = [t for _, t in run.err_lines if t.strip()]
    if errs:
        problems.append("unexpected text on stderr: " + "; ".join(repr(t) for t in errs[:5]))
    return run


def rank0_stdout(run):
    return [t for r, t in run.out_lines if r in (0, None)]


def max_abs_diff(x, y):
    if len(x) != len(y) or any(len(a) != len(b) for a, b in zip(x, y)):
        return math.inf
    return max((abs(complex(a) - complex(b)) for ra, rb in zip(x, y) for a, b in zip(ra, rb)),
               default=0.0)


def positive_cases(runner, tally, nranks, work):
    tag = f"np{nranks}"
    rng = random.Random(99 + nranks)

    # --verify on generated matrices.
    d = os.path.join(work, f"np{nranks}_verify")
    os.makedirs(d)
    problems = []
    run = run_ok(runner, nranks, ["gemm", "--verify", "--m", "37", "--n", "23", "--k", "41",
                                  "--nb", "5"], d, problems)
    if not any("PASSED" in t for t in rank0_stdout(run)):
        problems.append("no 'PASSED' on stdout")
    n_verify = sum(1 for _, t in run.out_lines if t.startswith("verify:"))
    if n_verify != 1:
        problems.append(f"{n_verify} 'verify:' lines on stdout, expected 1 (rank 0 only)")
    tally.report(f"{tag} gemm --verify 37x23x41 nb 5 PASSED", problems, run)

    # The planner split over the ranks (every rank count here, not only from 256 ranks).
    problems = []
    run = run_ok(runner, nranks, ["gemm", "--verify", "--m", "53", "--n", "44", "--k", "61",
                                  "--nb", "4", "--shared-planning-from", "1"], d, problems)
    if not any("PASSED" in t for t in rank0_stdout(run)):
        problems.append("no 'PASSED' on stdout")
    tally.report(f"{tag} gemm --verify --shared-planning-from 1 PASSED", problems, run)

    for algo in ("optimal", "summa2d"):
        problems = []
        run = run_ok(runner, nranks, ["gemm", "--verify", "--m", "29", "--n", "31", "--k", "19",
                                      "--nb", "3", "--algorithm", algo, "--dtype", "complex",
                                      "--transa", "C", "--transb", "T", "--beta", "0.5",
                                      "--alpha", "-2"], d, problems)
        if not any("PASSED" in t for t in rank0_stdout(run)):
            problems.append("no 'PASSED' on stdout")
        tally.report(f"{tag} gemm --verify complex C/T beta {algo} PASSED", problems, run)

    # --verify must FAIL (exit non-zero, no PASSED) when the result is not finite: finite
    # inputs whose product overflows to Inf.
    d = os.path.join(work, f"np{nranks}_overflow")
    os.makedirs(d)
    write_npy_matrix(os.path.join(d, "A.npy"), 6, 5, [[1e200] * 5 for _ in range(6)])
    write_npy_matrix(os.path.join(d, "B.npy"), 5, 4, [[1e200] * 4 for _ in range(5)])
    problems = []
    run = runner.run(nranks, ["gemm", "--a", "A.npy", "--b", "B.npy", "--nb", "2", "--verify"], d)
    check_no_abort(run, problems)
    if run.rc == 0:
        problems.append("exit code 0 although the result overflowed to Inf")
    verdicts = [t for _, t in run.out_lines if t.startswith("verify:")]
    if len(verdicts) != 1 or "FAILED" not in verdicts[0]:
        problems.append(f"expected one 'verify: FAILED' line, got {verdicts}")
    tally.report(f"{tag} gemm --verify FAILS on an overflowed (Inf) result", problems, run)

    # Round trips through .npy files against the reference A @ B.
    trips = [
        # (label, m, n, k, transa, transb, complex, fortran_order, nb, alpha, beta, extra)
        ("real N N C-order", 13, 11, 17, "N", "N", False, False, 4, 1.0, 0.0, []),
        ("real T N Fortran-order", 13, 11, 17, "T", "N", False, True, 3, 1.0, 0.0, []),
        ("real T T summa2d", 10, 9, 14, "T", "T", False, False, 2, 1.0, 0.0,
         ["--algorithm", "summa2d"]),
        ("real N T optimal alpha beta C", 12, 8, 15, "N", "T", False, False, 5, 1.5, -0.5,
         ["--algorithm", "optimal"]),
        ("complex N N", 9, 12, 10, "N", "N", True, False, 3, 1.0, 0.0, []),
        ("complex T N", 11, 7, 13, "T", "N", True, True, 4, 1.0, 0.0, []),
        ("complex C C optimal", 8, 10, 6, "C", "C", True, False, 2, 1.0, 0.0,
         ["--algorithm", "optimal"]),
        ("real N N grid 1xP", 16, 12, 20, "N", "N", False, False, 4, 1.0, 0.0,
         ["--grid", f"1x{nranks}"]),
    ]
    for (label, m, n, k, ta, tb, cplx, fort, nb, alpha, beta, extra) in trips:
        d = os.path.join(work, f"np{nranks}_trip_{re.sub(r'[^A-Za-z0-9]+', '_', label)}")
        os.makedirs(d)
        a = random_matrix(rng, m if ta == "N" else k, k if ta == "N" else m, cplx)
        b = random_matrix(rng, k if tb == "N" else n, n if tb == "N" else k, cplx)
        save_matrix(os.path.join(d, "A.npy"), a, cplx, fort)
        save_matrix(os.path.join(d, "B.npy"), b, cplx, fort)
        args = ["gemm", "--a", "A.npy", "--b", "B.npy", "--transa", ta, "--transb", tb,
                "--nb", str(nb), "--out", "C.npy", "--json", "r.json", "--repeat", "2",
                "--alpha", repr(alpha), "--beta", repr(beta)] + extra
        c0 = None
        if beta != 0:
            c0 = random_matrix(rng, m, n, cplx)
            save_matrix(os.path.join(d, "C0.npy"), c0, cplx, fort)
            args += ["--c", "C0.npy"]
        if cplx:
            args += ["--dtype", "complex"]
        problems = []
        run = run_ok(runner, nranks, args, d, problems)
        if os.path.exists(os.path.join(d, "C.npy")):
            try:
                got = load_result(os.path.join(d, "C.npy"))
                want = reference(a, b, ta, tb, alpha, beta, c0)
                diff = max_abs_diff(got, want)
                if not diff < 1e-12:
                    problems.append(f"max |C - reference| = {diff:.3e}, expected < 1e-12 "
                                    f"(C is {len(got)} x {len(got[0]) if got else 0}, "
                                    f"expected {m} x {n})")
            except Exception as e:  # a malformed output file is a failure
                problems.append(f"cannot read C.npy: {e}")
        else:
            problems.append("C.npy was not written")
        if not os.path.exists(os.path.join(d, "r.json")):
            problems.append("r.json was not written")
        leftovers = [f for f in os.listdir(d) if ".tmp" in f]
        if leftovers:
            problems.append(f"temporary files left: {leftovers}")
        ref = "numpy A@B" if np is not None else "pure-Python reference"
        tally.report(f"{tag} round trip {label} ({m}x{n}x{k}) vs {ref}", problems, run)

    # --explain: the plan, no multiply.
    d = os.path.join(work, f"np{nranks}_explain")
    os.makedirs(d)
    problems = []
    run = run_ok(runner, nranks, ["gemm", "--explain", "--m", "200", "--n", "100", "--k", "300",
                                  "--nb", "16"], d, problems)
    text = "\n".join(t for _, t in run.out_lines)
    if "multiply plan:" not in text or "grid pm x pn x pk" not in text:
        problems.append("no plan on stdout")
    if any(t.startswith("time:") for _, t in run.out_lines):
        problems.append("a 'time:' line although --explain must not multiply")
    if any(t.startswith("ran:") for _, t in run.out_lines):
        problems.append("a 'ran:' line although --explain must not multiply")
    if sum(1 for _, t in run.out_lines if "multiply plan:" in t) != 1:
        problems.append("the plan is not printed exactly once")
    for what in ("A -> plan layout", "B -> plan layout", "plan layout -> C"):
        if f"redistribution {what}" not in text:
            problems.append(f"no redistribution plan for {what}")
    # each printed rank's plan: the elements it sends are the sum of its per-peer counts
    for t in (t for _, t in run.out_lines if t.strip().startswith("rank ") and "keeps" in t):
        m_send = re.search(r"sends (\d+) messages, (\d+) elements(?: \(([^)]*)\))?", t)
        if not m_send:
            problems.append(f"unreadable redistribution line: {t}")
            continue
        peers = [int(x.split(":")[1]) for x in m_send.group(3).split(",")] if m_send.group(3) else []
        if len(peers) != int(m_send.group(1)) or sum(peers) != int(m_send.group(2)):
            problems.append(f"redistribution line disagrees with itself: {t}")
    tally.report(f"{tag} gemm --explain prints the plan and does not run", problems, run)

    # tessel info.
    problems = []
    run = run_ok(runner, nranks, ["info"], d, problems)
    text = "\n".join(t for _, t in run.out_lines)
    if not re.search(r"Open MPI|MPICH|Intel\(R\) MPI|MVAPICH", text):
        problems.append("the MPI library is not named")
    if f"ranks in this run: {nranks}" not in text:
        problems.append(f"'ranks in this run: {nranks}' missing")
    if sum(1 for _, t in run.out_lines if t.startswith("tessel ")) != 1:
        problems.append("the version line is not printed exactly once")
    tally.report(f"{tag} tessel info names the MPI library", problems, run)

    # --trace: one valid Chrome trace file with one lane per rank (gemm, spgemm, density, info).
    for cmd in (["gemm", "--m", "30", "--n", "20", "--k", "25", "--nb", "4", "--repeat", "1"],
                ["spgemm", "--generate", "water:12", "--repeat", "1"],
                ["density", "--generate", "water:12"],
                ["info"]):
        d = os.path.join(work, f"np{nranks}_trace_{cmd[0]}")
        os.makedirs(d)
        problems = []
        run = run_ok(runner, nranks, cmd + ["--trace", "t.json"], d, problems)
        j = load_json(os.path.join(d, "t.json"), problems)
        if j is not None:
            ev = j.get("traceEvents", [])
            lanes = sorted({e.get("pid") for e in ev})
            if lanes != list(range(nranks)):
                problems.append(f"lanes {lanes}, expected 0 .. {nranks - 1}")
            if cmd[0] == "gemm" and not any(e.get("cat") == "compute" for e in ev):
                problems.append("no local GEMM span")
            if cmd[0] in ("spgemm", "density") and not any(
                    str(e.get("name", "")).startswith("spgemm/") for e in ev):
                problems.append("no spgemm phase")
        if sorted(os.listdir(d)) != ["t.json"]:
            problems.append(f"files left: {sorted(os.listdir(d))}")
        tally.report(f"{tag} tessel {cmd[0]} --trace writes one lane per rank", problems, run)


# ---------------------------------------------------------------- purify and ssc
def ring_analytic(n, g, t, nocc):
    """Band energy 2 sum of the nocc lowest E and the HOMO-LUMO gap of the ring model, from
    E = +-sqrt(g^2/4 + 4 t^2 cos^2(kappa/2)), kappa = 2 pi m/(n/2) (pure Python)."""
    cells = n // 2
    e = []
    for m in range(cells):
        c = math.cos(math.pi * m / cells)
        v = math.sqrt(g * g / 4 + 4 * t * t * c * c)
        e += [-v, v]
    e.sort()
    return 2 * math.fsum(e[:nocc]), e[nocc] - e[nocc - 1]


def load_json(path, problems):
    import json
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:  # a missing or malformed file is a failure
        problems.append(f"cannot read {os.path.basename(path)}: {e}")
        return None


def gapped_symmetric(rng, n, nocc):
    """A random symmetric n x n F with eigenvalues in [-2, -0.5] (nocc of them) and
    [0.5, 2] (NumPy), and numpy's eigh projector onto the nocc lowest states."""
    q, _ = np.linalg.qr(np.array([[rng.gauss(0, 1) for _ in range(n)] for _ in range(n)]))
    ev = [rng.uniform(-2, -0.5) for _ in range(nocc)] + [rng.uniform(0.5, 2) for _ in range(n - nocc)]
    f = q @ np.diag(ev) @ q.T
    f = 0.5 * (f + f.T)
    w, v = np.linalg.eigh(f)
    c = v[:, :nocc]
    return f, c @ c.T


def purify_error_cases(runner, tally, nranks, work):
    """Bad inputs of `tessel purify` and `tessel ssc`: exit 2, one message from rank 0 naming
    the option and the value, no output file."""
    rng = random.Random(4321)
    counter = [0]
    tag = f"np{nranks}"

    def case():
        counter[0] += 1
        d = os.path.join(work, f"np{nranks}_perr{counter[0]:02d}")
        os.makedirs(d)
        return d

    def outs(d):
        return ["--out", os.path.join(d, "D.npy"), "--json", os.path.join(d, "out.json")]

    simple = [
        (["--n", "7"], ["--n 7", "even"]),
        (["--n", "8", "--gap", "0"], ["--gap 0"]),
        (["--n", "8", "--gap", "-0.5"], ["--gap -0.5"]),
        (["--n", "8", "--nocc", "0"], ["--nocc 0", "1 .. n-1 = 7"]),
        (["--n", "8", "--nocc", "8"], ["--nocc 8", "1 .. n-1 = 7"]),
        (["--n", "8", "--nocc", "2"], ["--nocc 2", "degenerate"]),
        (["--n", "8", "--n-dup", "0"], ["--n-dup '0'", "auto"]),
        (["--n", "8", "--n-dup", "-3"], ["--n-dup '-3'", "auto"]),
        (["--n", "8", "--n-dup", "many"], ["--n-dup 'many'", "auto"]),
        (["--n", "8", "--active-ranks", str(nranks + 1)],
         [f"--active-ranks {nranks + 1}", f"the run has {nranks} ranks"]),
        (["--n", "8", "--active-ranks", "-1"], ["--active-ranks -1"]),
        (["--n", "8", "--method", "newton"], ["--method 'newton'", "canonical"]),
        (["--n", "8", "--algorithm", "7"], ["--algorithm '7'", "2.5d"]),
        (["--n", "8", "--tol", "0"], ["--tol 0"]),
        (["--n", "8", "--max-iter", "0"], ["--max-iter 0"]),
        (["--n", "8", "--n-t", "0"], ["--n-t 0"]),
        (["--n", "8", "--replication", "2"], ["--replication 2", "2.5d"]),
        (["--n", "8", "--mu", "nan"], ["--mu", "nan"]),
        (["--n", "8", "--overlap", "S.npy"], ["--overlap S.npy", "--fock"]),
    ]
    for args, must in simple:
        d = case()
        # Only --active-ranks depends on the rank count; the others are option checks.
        check_error_case(runner, tally, nranks, f"{tag} purify error: {' '.join(args)}",
                         ["purify"] + args + outs(d), d, must=must,
                         option_only="--active-ranks" not in args)

    # Files: missing, not .npy, truncated, not square, F/S shapes differ, no --nocc, --nocc
    # too large, a model option beside --fock, non-symmetric F, NaN in F.
    d = case()
    check_error_case(runner, tally, nranks, f"{tag} purify error: --fock missing file",
                     ["purify", "--fock", "nothere.npy", "--nocc", "2"] + outs(d), d,
                     must=["--fock nothere.npy"])
    d = case()
    with open(os.path.join(d, "F.npy"), "w") as f:
        f.write("1 2\n3 4\n")
    check_error_case(runner, tally, nranks, f"{tag} purify error: --fock is a text file",
                     ["purify", "--fock", "F.npy", "--nocc", "1"] + outs(d), d,
                     must=["--fock F.npy", "not a .npy"])
    d = case()
    write_npy_matrix(os.path.join(d, "F.npy"), 6, 6, random_matrix(rng, 6, 6))
    with open(os.path.join(d, "F.npy"), "r+b") as f:
        f.truncate(128 + 8 * 30)
    check_error_case(runner, tally, nranks, f"{tag} purify error: --fock truncated",
                     ["purify", "--fock", "F.npy", "--nocc", "3"] + outs(d), d,
                     must=["--fock F.npy", "truncated"])
    d = case()
    write_npy_matrix(os.path.join(d, "F.npy"), 4, 5, random_matrix(rng, 4, 5))
    check_error_case(runner, tally, nranks, f"{tag} purify error: --fock 4 x 5",
                     ["purify", "--fock", "F.npy", "--nocc", "2"] + outs(d), d,
                     must=["--fock F.npy", "4 x 5", "square"])
    sym6 = [[(i + 1) * (j + 1) * 0.01 + (1.0 if i == j else 0.0) * (i - 2.5) for j in range(6)]
            for i in range(6)]
    d = case()
    write_npy_matrix(os.path.join(d, "F.npy"), 6, 6, sym6)
    write_npy_matrix(os.path.join(d, "S.npy"), 5, 5, [[1.0 if i == j else 0.0 for j in range(5)]
                                                      for i in range(5)])
    check_error_case(runner, tally, nranks, f"{tag} purify error: --overlap 5x5 for --fock 6x6",
                     ["purify", "--fock", "F.npy", "--overlap", "S.npy", "--nocc", "3"] + outs(d), d,
                     must=["--overlap S.npy", "5 x 5", "--fock F.npy", "6 x 6"])
    d = case()
    write_npy_matrix(os.path.join(d, "F.npy"), 6, 6, sym6)
    check_error_case(runner, tally, nranks, f"{tag} purify error: --fock without --nocc",
                     ["purify", "--fock", "F.npy"] + outs(d), d, must=["--nocc", "required", "F.npy"])
    d = case()
    write_npy_matrix(os.path.join(d, "F.npy"), 6, 6, sym6)
    check_error_case(runner, tally, nranks, f"{tag} purify error: --nocc 6 for a 6 x 6 --fock",
                     ["purify", "--fock", "F.npy", "--nocc", "6"] + outs(d), d,
                     must=["--nocc 6", "1 .. n-1 = 5", "--fock F.npy"])
    d = case()
    write_npy_matrix(os.path.join(d, "F.npy"), 6, 6, sym6)
    check_error_case(runner, tally, nranks, f"{tag} purify error: --gap beside --fock",
                     ["purify", "--fock", "F.npy", "--nocc", "3", "--gap", "0.3"] + outs(d), d,
                     must=["--gap 0.3", "--fock F.npy"])
    d = case()
    nonsym = [row[:] for row in sym6]
    nonsym[0][4] += 0.5
    write_npy_matrix(os.path.join(d, "F.npy"), 6, 6, nonsym)
    check_error_case(runner, tally, nranks, f"{tag} purify error: non-symmetric --fock",
                     ["purify", "--fock", "F.npy", "--nocc", "3"] + outs(d), d,
                     must=["--fock F.npy", "symmetric"])
    d = case()
    withnan = [row[:] for row in sym6]
    withnan[3][3] = float("nan")
    write_npy_matrix(os.path.join(d, "F.npy"), 6, 6, withnan)
    check_error_case(runner, tally, nranks, f"{tag} purify error: NaN in --fock",
                     ["purify", "--fock", "F.npy", "--nocc", "3"] + outs(d), d,
                     must=["--fock F.npy", "NaN"])
    # Unwritable outputs.
    d = case()
    check_error_case(runner, tally, nranks, f"{tag} purify error: --out /nonexistent/dir/D.npy",
                     ["purify", "--n", "8", "--out", "/nonexistent/dir/D.npy", "--json",
                      os.path.join(d, "out.json")], d, must=["--out", "/nonexistent/dir/D.npy"],
                     extra_paths=["/nonexistent"], option_only=True)
    d = case()
    check_error_case(runner, tally, nranks, f"{tag} purify error: --json /nonexistent/dir/r.json",
                     ["purify", "--n", "8", "--out", os.path.join(d, "D.npy"), "--json",
                      "/nonexistent/dir/r.json"], d, must=["--json", "/nonexistent/dir/r.json"],
                     extra_paths=["/nonexistent"], option_only=True)
    d = case()
    os.makedirs(os.path.join(d, "adir"))
    check_error_case(runner, tally, nranks, f"{tag} purify error: --out names a directory",
                     ["purify", "--n", "8", "--out", os.path.join(d, "adir")], d,
                     must=["--out", "adir", "directory"], option_only=True)
    # Parse errors.
    d = case()
    check_error_case(runner, tally, nranks, f"{tag} purify parse error: --nocc two",
                     ["purify", "--n", "8", "--nocc", "two"] + outs(d), d, must=["--nocc", "two"],
                     parse_error=True, option_only=True)

    # tessel ssc.
    ssc_cases = [
        (["--n", "0"], ["--n 0"]),
        (["--n", "8", "--repeat", "0"], ["--repeat 0"]),
        (["--n", "8", "--matrix", "dense"], ["--matrix 'dense'"]),
        (["--n", "7", "--matrix", "ring"], ["--n 7", "even"]),
        (["--n", "8", "--n-dup", "0"], ["--n-dup '0'"]),
        (["--n", "8", "--active-ranks", str(nranks + 1)], [f"--active-ranks {nranks + 1}"]),
        (["--n", "8", "--algorithm", "six"], ["--algorithm 'six'"]),
        (["--in", "nothere.npy"], ["--in nothere.npy"]),
        (["--n", "8", "--json", "/nonexistent/dir/r.json"], ["--json", "/nonexistent/dir/r.json"]),
        # Only the SMPI build skips the local products (docs/simulation.md).
        (["--n", "8", "--simulate-compute", "skip"], ["--simulate-compute skip", "SMPI"]),
        (["--n", "8", "--simulate-compute", "later"], ["--simulate-compute 'later'", "run or skip"]),
    ]
    for args, must in ssc_cases:
        d = case()
        a = args if "--json" in args else args + ["--json", os.path.join(d, "out.json")]
        check_error_case(runner, tally, nranks, f"{tag} ssc error: {' '.join(args)}", ["ssc"] + a, d,
                         must=must, option_only="--active-ranks" not in args and "--in" not in args)
    d = case()
    write_npy_matrix(os.path.join(d, "D.npy"), 6, 6, nonsym)
    check_error_case(runner, tally, nranks, f"{tag} ssc error: non-symmetric --in",
                     ["ssc", "--in", "D.npy", "--json", os.path.join(d, "out.json")], d,
                     must=["--in D.npy", "symmetric"])


def purify_positive_cases(runner, tally, nranks, work):
    tag = f"np{nranks}"
    rng = random.Random(77 + nranks)

    def folder(label):
        d = os.path.join(work, f"np{nranks}_{label}")
        os.makedirs(d)
        return d

    # The built-in ring model: converges, band energy = the analytic value (pure-Python
    # formula here, independent of the C++ one) to 1e-8 relative; JSON with the steps.
    for label, n, g, t, nocc, extra in (
            ("default", 64, 0.2, 1.0, None, []),
            ("gap0.5 t0.7 nocc 11", 20, 0.5, 0.7, 11, ["--nocc", "11"]),
            ("active-ranks 1, n-dup 2, algorithm 4", 32, 0.3, 1.0, None,
             ["--active-ranks", "1", "--n-dup", "2", "--algorithm", "4"])):
        d = folder("ring_" + re.sub(r"[^A-Za-z0-9]+", "_", label))
        problems = []
        args = ["purify", "--n", str(n), "--gap", repr(g), "--hopping", repr(t), "--json", "r.json"] + extra
        run = run_ok(runner, nranks, args, d, problems)
        exact, gap = ring_analytic(n, g, t, nocc or n // 2)
        j = load_json(os.path.join(d, "r.json"), problems) if run.rc == 0 else None
        if j is not None:
            rel = abs(j["band_energy"] - exact) / abs(exact)
            if not rel <= 1e-8:
                problems.append(f"band energy {j['band_energy']!r}, analytic {exact!r}: relative "
                                f"difference {rel:.2e} > 1e-8")
            if abs(j["analytic"]["band_energy"] - exact) > 1e-9 * abs(exact):
                problems.append(f"the printed analytic band energy {j['analytic']['band_energy']!r} "
                                f"differs from the formula's {exact!r}")
            if abs(j["analytic"]["homo_lumo_gap"] - gap) > 1e-12:
                problems.append(f"HOMO-LUMO gap {j['analytic']['homo_lumo_gap']!r}, expected {gap!r}")
            if not j["idempotency_error"] < 1e-9 or not j["trace_error"] < 1e-9:
                problems.append(f"idempotency error {j['idempotency_error']}, trace error "
                                f"{j['trace_error']}")
            if j["iterations"] < 1:
                problems.append(f"{j['iterations']} iterations")
        text = "\n".join(rank0_stdout(run))
        for want in ("exact (analytic ring model)", "TFLOP/s", "mesh:", "band energy"):
            if want not in text:
                problems.append(f"{want!r} missing on stdout")
        if sum(1 for _, t2 in run.out_lines if t2.startswith("tessel purify:")) != 1:
            problems.append("the header is not printed exactly once")
        tally.report(f"{tag} purify ring model {label} (n {n}) vs analytic band energy", problems, run)

    # A random symmetric F with a gap, written by numpy: D against numpy's eigh projector;
    # --out round trip (D.npy read back by numpy).
    if np is None:
        print(f"SKIP  {tag} purify --fock vs numpy eigh (no NumPy)")
    else:
        for label, n, nocc, extra in (("n 13 nocc 5", 13, 5, []),
                                      ("n 16 nocc 9 n-dup 1", 16, 9, ["--n-dup", "1", "--nb", "3"])):
            d = folder("fock_" + re.sub(r"[^A-Za-z0-9]+", "_", label))
            f, proj = gapped_symmetric(rng, n, nocc)
            np.save(os.path.join(d, "F.npy"), f)
            problems = []
            run = run_ok(runner, nranks, ["purify", "--fock", "F.npy", "--nocc", str(nocc), "--out",
                                          "D.npy", "--json", "r.json"] + extra, d, problems)
            if os.path.exists(os.path.join(d, "D.npy")):
                got = np.load(os.path.join(d, "D.npy"))
                diff = float(np.max(np.abs(got - proj))) if got.shape == proj.shape else math.inf
                if not diff <= 1e-10:
                    problems.append(f"max |D - eigh projector| = {diff:.3e} > 1e-10 (D {got.shape})")
                j = load_json(os.path.join(d, "r.json"), problems)
                if j is not None:
                    want = 2 * float(np.trace(proj @ f))
                    if abs(j["band_energy"] - want) > 1e-9 * max(1.0, abs(want)):
                        problems.append(f"band energy {j['band_energy']!r}, numpy {want!r}")
            else:
                problems.append("D.npy was not written")
            leftovers = [x for x in os.listdir(d) if ".tmp" in x]
            if leftovers:
                problems.append(f"temporary files left: {leftovers}")
            tally.report(f"{tag} purify --fock ({label}) --out vs numpy eigh projector", problems, run)

    # tessel ssc --verify: generated random, ring model, a file, and N_DUP given.
    for label, args in (("random n 23", ["--n", "23", "--nb", "4"]),
                        ("ring n 30 n-dup 3", ["--n", "30", "--matrix", "ring", "--n-dup", "3"]),
                        ("algorithm 4 active-ranks 1", ["--n", "17", "--algorithm", "4",
                                                        "--active-ranks", "1"])):
        d = folder("ssc_" + re.sub(r"[^A-Za-z0-9]+", "_", label))
        problems = []
        run = run_ok(runner, nranks, ["ssc", "--verify", "--repeat", "2", "--json", "r.json"] + args,
                     d, problems)
        verdicts = [t2 for t2 in rank0_stdout(run) if t2.startswith("verify:")]
        if len(verdicts) != 1 or "PASSED" not in verdicts[0]:
            problems.append(f"expected one 'verify: PASSED' line, got {verdicts}")
        j = load_json(os.path.join(d, "r.json"), problems) if run.rc == 0 else None
        if j is not None and len(j.get("times_s", [])) != 2:
            problems.append(f"times_s {j.get('times_s')} (expected 2 repetitions)")
        tally.report(f"{tag} ssc --verify {label} PASSED", problems, run)
    if np is not None:
        d = folder("ssc_file")
        a = np.array([[rng.uniform(-1, 1) for _ in range(11)] for _ in range(11)])
        np.save(os.path.join(d, "D.npy"), np.asfortranarray(a + a.T))
        problems = []
        run = run_ok(runner, nranks, ["ssc", "--in", "D.npy", "--verify", "--repeat", "1"], d, problems)
        if not any("verify: PASSED" in t2 for t2 in rank0_stdout(run)):
            problems.append("no 'verify: PASSED' on stdout")
        tally.report(f"{tag} ssc --in D.npy (Fortran order, 11 x 11) --verify PASSED", problems, run)

    # Every method and SymmSquareCube algorithm, and the (F, S) path.
    n, g, t = 24, 0.4, 1.0
    exact, gap = ring_analytic(n, g, t, n // 2)
    variants = [
        (f"method mcweeny --mu 0", ["purify", "--n", str(n), "--gap", repr(g), "--method", "mcweeny",
                                    "--mu", "0"]),
        ("method trs2", ["purify", "--n", str(n), "--gap", repr(g), "--method", "trs2"]),
        ("method trs4", ["purify", "--n", str(n), "--gap", repr(g), "--method", "trs4"]),
        ("algorithm 3", ["purify", "--n", str(n), "--gap", repr(g), "--algorithm", "3"]),
        ("algorithm 2.5d", ["purify", "--n", str(n), "--gap", repr(g), "--algorithm", "2.5d"]),
    ]
    for label, args in variants:
        d = folder("all_" + re.sub(r"[^A-Za-z0-9]+", "_", label))
        name = f"{tag} purify {label} (ring n {n}) vs analytic band energy"
        problems = []
        run = run_ok(runner, nranks, args + ["--json", "r.json"], d, problems)
        j = load_json(os.path.join(d, "r.json"), problems) if run.rc == 0 else None
        if j is not None and not abs(j["band_energy"] - exact) <= 1e-8 * abs(exact):
            problems.append(f"band energy {j['band_energy']!r}, analytic {exact!r}")
        tally.report(name, problems, run)
    for alg in ("3", "2.5d"):
        d = folder(f"all_ssc_{alg.replace('.', '_')}")
        args = ["ssc", "--n", "19", "--algorithm", alg, "--verify", "--repeat", "1"]
        name = f"{tag} ssc --algorithm {alg} --verify PASSED"
        problems = []
        run = run_ok(runner, nranks, args, d, problems)
        if not any("verify: PASSED" in t2 for t2 in rank0_stdout(run)):
            problems.append("no 'verify: PASSED' on stdout")
        tally.report(name, problems, run)
    if np is not None:
        # Non-orthogonal basis: D against numpy's generalized eigenvectors (F C = S C e,
        # C^T S C = I): D = C_occ C_occ^T.
        d = folder("all_overlap")
        nn, nocc = 10, 4
        f, _ = gapped_symmetric(rng, nn, nocc)
        b = np.array([[rng.uniform(-0.1, 0.1) for _ in range(nn)] for _ in range(nn)])
        s_mat = np.eye(nn) + 0.5 * (b + b.T)
        np.save(os.path.join(d, "F.npy"), f)
        np.save(os.path.join(d, "S.npy"), s_mat)
        args = ["purify", "--fock", "F.npy", "--overlap", "S.npy", "--nocc", str(nocc)]
        name = f"{tag} purify --fock --overlap (n {nn}) vs numpy generalized eigh"
        problems = []
        run = run_ok(runner, nranks, args + ["--out", "D.npy"], d, problems)
        if os.path.exists(os.path.join(d, "D.npy")):
            sl = np.linalg.cholesky(s_mat)
            w, v = np.linalg.eigh(np.linalg.solve(sl, np.linalg.solve(sl, f).T).T)
            c = np.linalg.solve(sl.T, v[:, :nocc])
            want = c @ c.T
            diff = float(np.max(np.abs(np.load(os.path.join(d, "D.npy")) - want)))
            if not diff <= 1e-9:
                problems.append(f"max |D - reference| = {diff:.3e} > 1e-9")
        else:
            problems.append("D.npy was not written")
        tally.report(name, problems, run)

    # --help documents every option with its default.
    if nranks == 1:
        for cmd, opts in (("purify", ["--fock", "--overlap", "--nocc", "--method", "--mu", "--algorithm",
                                      "--n-dup", "--n-t", "--active-ranks", "--replication", "--tol",
                                      "--max-iter", "--out", "--json", "--n", "--gap", "--hopping"]),
                          ("ssc", ["--n", "--in", "--algorithm", "--n-dup", "--n-t", "--active-ranks",
                                   "--replication", "--repeat", "--verify", "--json", "--matrix",
                                   "--simulate-compute"])):
            problems = []
            run = run_ok(runner, 1, [cmd, "--help"], work, problems)
            text = "\n".join(t2 for _, t2 in run.out_lines)
            for o in opts:
                if o + " " not in text and o + "\n" not in text:
                    problems.append(f"{o} not in --help")
            if "sqrt(g^2/4 + 4 t^2 cos^2(kappa/2))" not in text:
                problems.append("the ring model's spectrum is not in --help")
            tally.report(f"{tag} {cmd} --help documents its options", problems, run)


# ---------------------------------------------------------------- main
def spgemm_error_cases(runner, tally, nranks, work):
    """Bad inputs of `tessel spgemm`: exit 2, one message from rank 0 naming the option and the
    value, no output file."""
    counter = [0]

    def case():
        counter[0] += 1
        d = os.path.join(work, f"np{nranks}_sperr{counter[0]:02d}")
        os.makedirs(d)
        return d

    bad_grid = f"{nranks + 1}x1"
    simple = [
        (["--algorithm", "summa"], ["--algorithm 'summa'", "cannon or rma25d"]),
        (["--algorithm", "rma25d", "--layers", "3"], ["L = 3", "valid: 1"]),
        (["--algorithm", "cannon", "--layers", "2"], ["layers = 2", "cannon"]),
        (["--layers", "0"], ["--layers '0'", "auto"]),
        (["--grid", bad_grid], [f"--grid {bad_grid}", f"the run has {nranks}"]),
        (["--grid", "two"], ["--grid 'two'", "PRxPC"]),
        (["--eps", "-1"], ["--eps -1"]),
        (["--transa", "X"], ["--transa 'X'", "N or T"]),
        (["--generate", "foo:3"], ["--generate 'foo:3'", "band:N"]),
        (["--generate", "band:0"], ["--generate 'band:0'"]),
        (["--comm-only", "--verify"], ["--comm-only", "--verify"]),
        (["--repeat", "0"], ["--repeat 0"]),
        (["--simulate-compute", "skip"], ["--simulate-compute skip", "SMPI", "expected run"]),
        (["--simulate-compute", "later"], ["--simulate-compute 'later'", "run or skip"]),
        (["--generate", "water-ss-dzvp:0"], ["--generate 'water-ss-dzvp:0'"]),
        (["--generate", "water-hs-dzvp:x"], ["--generate 'water-hs-dzvp:x'", "water-hs-dzvp:N"]),
        (["--cannon-pieces", "65"], ["--cannon-pieces 65", "1 .. 64"]),
        (["--row-panels", "0"], ["--row-panels 0", "1 .. 64"]),
        (["--row-panels", "2", "--retain", "c"], ["--row-panels 2", "--retain"]),
        (["--retain", "b"], ["--retain 'b'", "none, a or c"]),
        (["--a", "A.csr"], ["--a/--b/--blocks", "all three"]),
        (["--a", "nothere.csr", "--b", "nothere.csr", "--blocks", "nothere.txt"], ["nothere.txt"]),
        # the table of product times prices skipped products only (docs/simulation.md)
        (["--product-times", "t.txt"], ["--product-times t.txt", "--simulate-compute skip"]),
        (["--comm-only", "--measure-product-times", "t.txt"],
         ["--comm-only", "--measure-product-times"]),
        (["--measure-product-times", "/nonexistent/dir/t.txt"],
         ["--measure-product-times", "/nonexistent/dir/t.txt"]),
    ]
    for args, must in simple:
        d = case()
        base = ["spgemm"] if ("--generate" in args or "--a" in args) else ["spgemm", "--generate", "band:4"]
        # The grid, the layers of rma25d and the files depend on the rank count / the data.
        rank_dependent = args[:2] in (["--grid", bad_grid], ["--algorithm", "rma25d"]) or "--a" in args
        check_error_case(runner, tally, nranks, f"np{nranks} spgemm error: {' '.join(args)}",
                         base + args + ["--json", os.path.join(d, "out.json")], d, must=must,
                         option_only=not rank_dependent)
    d = case()
    check_error_case(runner, tally, nranks, f"np{nranks} spgemm error: unwritable --json",
                     ["spgemm", "--generate", "band:4", "--json", "/nonexistent/dir/r.json"], d,
                     must=["--json", "/nonexistent/dir/r.json"], option_only=True)


def spgemm_positive_cases(runner, tally, nranks, work):
    """`tessel spgemm` runs: both algorithms verified against the dense multiply (exact and
    filtered, N and T), --explain, --comm-only, --json."""
    d = os.path.join(work, f"np{nranks}_spok")
    os.makedirs(d)
    runs = [
        ("cannon exact", ["--algorithm", "cannon", "--verify"]),
        ("cannon eps T", ["--algorithm", "cannon", "--eps", "1e-6", "--transb", "T", "--verify"]),
        ("cannon 7 pieces", ["--algorithm", "cannon", "--cannon-pieces", "7", "--verify"]),
        ("cannon 3 row panels eps", ["--algorithm", "cannon", "--row-panels", "3", "--eps", "1e-6",
                                     "--verify"]),
        ("rma25d auto eps T", ["--algorithm", "rma25d", "--layers", "auto", "--eps", "1e-6", "--transa", "T",
                               "--verify"]),
        ("rma25d L=1", ["--algorithm", "rma25d", "--layers", "1", "--verify"]),
        # retain: the last call uses the cached pattern; verify masks the dense reference
        ("rma25d auto retain a eps", ["--algorithm", "rma25d", "--layers", "auto", "--retain", "a", "--eps",
                                      "1e-6", "--repeat", "2", "--verify"]),
        ("cannon retain c", ["--algorithm", "cannon", "--retain", "c", "--verify"]),
    ]
    for label, args in runs:
        problems = []
        rep = [] if "--repeat" in args else ["--repeat", "1"]
        run = run_ok(runner, nranks, ["spgemm", "--generate", "band:40"] + rep + args, d, problems)
        out = "\n".join(rank0_stdout(run))
        if "verify: PASSED" not in out:
            problems.append("no 'verify: PASSED' in the output")
        tally.report(f"np{nranks} spgemm {label}", problems, run)
    cp2k = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "data", "cp2k",
                        "h2o-32-szv")
    if os.path.isdir(cp2k):  # CP2K's 32-water H and S (CSR text): H S verified, C written as CSR
        problems = []
        out = os.path.join(d, "C.csr")
        run = run_ok(runner, nranks, ["spgemm", "--a", os.path.join(cp2k, "KS.csr"), "--b", os.path.join(cp2k, "S.csr"),
                                      "--blocks", os.path.join(cp2k, "blocksizes.txt"), "--algorithm", "rma25d",
                                      "--repeat", "1", "--verify", "--out", out], d, problems)
        if "verify: PASSED" not in "\n".join(rank0_stdout(run)):
            problems.append("no 'verify: PASSED' in the output")
        if not os.path.exists(out) or os.path.getsize(out) == 0 or os.path.getsize(out) % 40 != 0:
            problems.append(f"{out}: missing, empty or not 40-byte lines")
        tally.report(f"np{nranks} spgemm CP2K 32-water H S --out", problems, run)
    problems = []
    run = run_ok(runner, nranks, ["spgemm", "--generate", "band:40", "--algorithm", "rma25d", "--explain"], d, problems)
    out = "\n".join(rank0_stdout(run))
    if "spgemm plan: rma25d" not in out or "reads of rank 0" not in out or "times (s)" in out:
        problems.append("--explain does not print the plan alone")
    tally.report(f"np{nranks} spgemm --explain", problems, run)
    # --predict: eq. 7's per-rank form beside a run with a given L; its A and B bytes are what
    # the ledger counts (mean per rank, exactly: the images' real sizes), its C term bounds the
    # partials sent; also at an L > 1 where the default grid has one (2x2: 4, 2x4: 2, 3x3: 9)
    for layers in ("1", "auto") + ({4: ("4",), 8: ("2",), 9: ("9",)}.get(nranks, ())):
        problems = []
        js = os.path.join(d, f"eq7_{layers}.json")
        run = run_ok(runner, nranks, ["spgemm", "--generate", "water-ss:40", "--eps", "1e-6", "--algorithm",
                                      "rma25d", "--layers", layers, "--predict", "--repeat", "1", "--json", js],
                     d, problems)
        j = load_json(js, problems)
        if j is not None:
            led = j["ledger_one_call"]
            mine = [x for x in j.get("eq7_prediction", []) if x["layers"] == j["layers"]]
            got = [led[f"spgemm/{x} panels"]["recv_bytes"]["mean"] for x in "AB"]
            sent_c = led["spgemm/C panels"]["sent_bytes"]["mean"]
            if len(mine) != 1 or [mine[0]["a_bytes"], mine[0]["b_bytes"]] != got or sent_c > mine[0]["c_bytes"]:
                problems.append(f"eq. 7 at L={j['layers']}: {mine} against the ledger's A, B {got}, C {sent_c}")
        tally.report(f"np{nranks} spgemm --predict --layers {layers}", problems, run)
    # water-ss-dzvp (water-hs-dzvp): S's (H's) SZV pattern and norms on DZVP block sizes (13, 5,
    # 5 per molecule): the product is right (--verify against the dense one) and the filter makes
    # the same decisions as on the SZV matrices (the same products done and skipped, the same
    # blocks of C before the final filter), since it reads only the norms
    for szv_kind, dz_kind in (("water-ss", "water-ss-dzvp"), ("water", "water-hs-dzvp")):
        problems, got = [], {}
        for kind in (szv_kind, dz_kind):
            js = os.path.join(d, f"{kind}.json")
            run = run_ok(runner, nranks, ["spgemm", "--generate", f"{kind}:12", "--eps", "1e-4",
                                          "--algorithm", "cannon", "--repeat", "1", "--verify",
                                          "--json", js], d, problems)
            if "verify: PASSED" not in "\n".join(rank0_stdout(run)):
                problems.append(f"{kind}: no 'verify: PASSED' in the output")
            j = load_json(js, problems)
            if j is not None:
                got[kind] = j
        if len(got) == 2:
            szv, dz = got[szv_kind], got[dz_kind]
            if (szv["n"], dz["n"], dz["blocks"]) != (72, 276, 36):
                problems.append(f"sizes: SZV n {szv['n']}, DZVP n {dz['n']} ({dz['blocks']} blocks)")
            for k in ("blocks_multiplied", "blocks_skipped", "product_blocks"):
                if szv[k] != dz[k] or szv[k] == 0 and k != "blocks_skipped":
                    problems.append(f"{k}: SZV {szv[k]}, DZVP {dz[k]}")
        tally.report(f"np{nranks} spgemm {dz_kind} against {szv_kind}", problems, run)
    problems = []
    js = os.path.join(d, "r.json")
    run = run_ok(runner, nranks, ["spgemm", "--generate", "band:40", "--comm-only", "--repeat", "2", "--json", js], d,
                 problems)
    j = load_json(js, problems)
    if j is not None:
        if j.get("comm_only") is not True or j.get("flops") != 0 or "ledger_one_call" not in j:
            problems.append(f"unexpected JSON: comm_only={j.get('comm_only')} flops={j.get('flops')}")
        # the accounted peak holds at least the product before the final filter (every rank's
        # accumulator at the end of the multiply, 8 bytes a value), and is a part of the process
        pk, mean, rss = (j.get(k, -1) for k in ("memory_peak_bytes_max", "memory_peak_bytes_mean",
                                                 "maxrss_bytes_max"))
        if not (8 * j.get("product_values", 0) / nranks <= mean <= pk <= rss):
            problems.append(f"memory: mean peak {mean}, max {pk}, ru_maxrss {rss}, product "
                            f"{j.get('product_values')} values over {nranks} ranks")
    tally.report(f"np{nranks} spgemm --comm-only --json", problems, run)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mpiexec", required=True, help="mpirun / mpiexec")
    ap.add_argument("--numproc-flag", default="-n", help="mpiexec's flag for the number of ranks "
                    "(use --numproc-flag=-n)")
    ap.add_argument("--mpiexec-flag", action="append", default=[],
                    help="extra flag for mpiexec (repeatable; use --mpiexec-flag=--oversubscribe)")
    ap.add_argument("--flavour", default="", help="openmpi or mpich: enables rank tags on output")
    ap.add_argument("--tessel", required=True, help="the tessel binary")
    ap.add_argument("--np", required=True, help="rank counts, comma or semicolon separated")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per mpirun (a hang fails)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--no-option-errors", action="store_true",
                    help="leave out the error cases that come from the command line alone (parse "
                    "errors, values out of range, unwritable outputs): the ctest families run them "
                    "at one rank count, the data- and rank-dependent error cases at every count")
    ap.add_argument("--only", choices=["errors", "positive", "purify", "gemm", "spgemm"],
                    help="run one half only, only the purify/ssc cases, or only the gemm/info cases")
    a = ap.parse_args()

    ranks = [int(x) for x in re.split(r"[,; ]+", a.np.strip()) if x]
    runner = Runner(a.mpiexec, a.numproc_flag, a.mpiexec_flag, os.path.abspath(a.tessel), a.timeout,
                    a.flavour, option_errors=not a.no_option_errors)
    tally = Tally()
    work = tempfile.mkdtemp(prefix="tessel_cli_")
    print(f"tessel CLI tests: {a.tessel}, ranks {ranks}, timeout {a.timeout:.0f} s per run, "
          f"work folder {work}, reference: {'NumPy ' + np.__version__ if np is not None else 'pure Python'}"
          f" ({sys.executable})", flush=True)
    try:
        for n in ranks:
            if a.only in (None, "errors", "gemm"):
                error_cases(runner, tally, n, work)
            if a.only in (None, "errors", "purify"):
                purify_error_cases(runner, tally, n, work)
            if a.only in (None, "positive", "gemm"):
                positive_cases(runner, tally, n, work)
            if a.only in (None, "positive", "purify"):
                purify_positive_cases(runner, tally, n, work)
            if a.only in (None, "errors", "spgemm"):
                spgemm_error_cases(runner, tally, n, work)
            if a.only in (None, "positive", "spgemm"):
                spgemm_positive_cases(runner, tally, n, work)
    finally:
        if a.keep or tally.failed:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if tally.failures:
        print("failed: " + "; ".join(tally.failures))
    xf = f" ({tally.xfailed} expected failures)" if tally.xfailed else ""
    if tally.skipped:
        xf += f" ({tally.skipped} option-only error cases left to the run without --no-option-errors)"
    print(f"{tally.passed} passed, {tally.failed} failed{xf}", flush=True)
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())

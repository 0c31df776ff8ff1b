#!/usr/bin/python3
"""Every command README.md shows, and the example at the end of every `tessel` --help, parses.

    check_readme_commands.py --tessel build/apps/tessel/tessel --root .

README.md's ```bash blocks: a line (continuations joined, comments dropped) that starts with
`mpirun` and runs `.../tessel SUB ...` is parsed by `tessel --parse-only SUB ...` (CLI11 checks
every option, value type and choice, then nothing runs); one that starts with `bash scripts/`
is run with `--help` appended (an unknown option fails; the values are not checked).
Other lines (a ScaLAPACK driver, python, pip) are skipped and listed. The examples of
`tessel --help` and of each `tessel SUB --help` (the lines after "Example:"/"Examples") are
parsed the same way, and each subcommand must have one. Fails (an assertion, exit
status 1) when any does not parse or nothing was checked.
"""
import argparse
import re
import shlex
import subprocess
from pathlib import Path


def bash_lines(readme):
    """The command lines of README.md's ```bash blocks, continuations joined."""
    lines, in_block, pending = [], False, ""
    for raw in readme.read_text(encoding="utf-8").splitlines():
        if raw.startswith("```"):
            in_block = raw.strip() == "```bash"
            continue
        if not in_block:
            continue
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def words(line):
    """shlex words of a line up to a comment or a shell operator."""
    out = []
    for w in shlex.split(line, comments=True):
        if w in ("|", "&&", ";", "||", ">", "2>&1"):
            break
        out.append(w)
    return out


def tessel_args(ws):
    """The arguments after the tessel binary in `mpirun ... tessel SUB ...`, or None."""
    for i, w in enumerate(ws):
        if w == "tessel" or w.endswith("/tessel"):
            return ws[i + 1:]
    return None


def run(cmd, cwd, timeout=120):
    p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.returncode, p.stdout


def check_tessel(tessel, args, root, origin, failures):
    rc, out = run([tessel, "--parse-only"] + args, root)
    status = "ok" if rc == 0 else f"FAILED (exit {rc})"
    print(f"{status}: {origin}: tessel {' '.join(args)}")
    if rc != 0:
        failures.append(f"{origin}: tessel {' '.join(args)}\n{out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessel", required=True)
    ap.add_argument("--root", required=True, help="the repository (README.md, scripts/)")
    a = ap.parse_args()
    root = Path(a.root).resolve()
    failures, skipped, checked = [], [], 0
    readme_kinds = set()  # "tessel", "scripts": the kinds of README command checked

    for line in bash_lines(root / "README.md"):
        ws = words(line)
        if not ws:
            continue
        if ws[0] == "mpirun" and tessel_args(ws) is not None:
            check_tessel(a.tessel, tessel_args(ws), root, "README.md", failures)
            readme_kinds.add("tessel")
            checked += 1
        elif ws[0] == "bash" and len(ws) > 1 and ws[1].startswith("scripts/"):
            rc, out = run(["bash"] + ws[1:] + ["--help"], root)
            print(f"{'ok' if rc == 0 else f'FAILED (exit {rc})'}: README.md: {' '.join(ws)} --help")
            if rc != 0:
                failures.append(f"README.md: {' '.join(ws)} --help\n{out}")
            readme_kinds.add("scripts")
            checked += 1
        else:
            skipped.append(line)

    rc, top = run([a.tessel, "--help"], root)
    subs = re.findall(r"^  (\w+) {2,}", top.split("Subcommands:")[1], re.M) if rc == 0 else []
    if not subs:
        failures.append(f"tessel --help lists no subcommands (exit {rc})\n{top}")
    examples = [l.strip() for l in top.split("Examples")[-1].splitlines()[1:] if l.strip()]
    for sub in subs:
        if not any(tessel_args(words(e))[:1] == [sub] for e in examples):
            failures.append(f"tessel --help: no example for '{sub}'")
        rc, text = run([a.tessel, sub, "--help"], root)
        ex = text.split("Example:")[-1].strip().splitlines() if "Example:" in text else []
        if rc != 0 or not ex:
            failures.append(f"tessel {sub} --help: exit {rc}, no 'Example:' at its end")
            continue
        ws = words(ex[0])
        if tessel_args(ws) is None or tessel_args(ws)[:1] != [sub]:
            failures.append(f"tessel {sub} --help: example '{ex[0]}' does not run tessel {sub}")
            continue
        check_tessel(a.tessel, tessel_args(ws), root, f"tessel {sub} --help", failures)
        checked += 1
    for e in examples:
        check_tessel(a.tessel, tessel_args(words(e)) or [], root, "tessel --help", failures)
        checked += 1

    # Not vacuous: README.md's two commands (bash scripts/...) and its tour (mpirun ... tessel)
    # were found and checked.
    for kind in ("tessel", "scripts"):
        if kind not in readme_kinds:
            failures.append(f"README.md: no {kind} command found in its ```bash blocks")
    for line in skipped:
        print(f"skipped (not tessel, not scripts/): {line}")
    print(f"{checked} commands checked, {len(failures)} failed, {len(skipped)} skipped")
    for f in failures:
        print(f"\n{f}")
    assert checked > 0, "no README.md or --help command was checked"
    assert not failures, f"{len(failures)} commands do not parse (listed above)"


if __name__ == "__main__":
    main()

#!/bin/bash
# check_layers.sh — every #include of tessel's sources against the layer order of
# docs/architecture.md (ctest `check_layers`, and so CI). Each file belongs to the layer of its
# folder: include/tessel/<layer>/, src/<layer>/, apps/ (apps), python/src/ (python). The layers,
# bottom first; a file may include its own layer and the layers below it, never one above:
#   core        core/* except context (error, ledger, trace, timer, memory, ...)
#   comm        the only place that calls MPI (issue 11: it must not include core/context.hpp)
#   context     core/context.hpp, core/context.cpp (a Context owns a comm::Comm)
#   layout, dense, sparse, stencil, io, solvers, scalapack
#   apps, python  (the command and the bindings: neither includes the other)
# A quoted include without a folder ("sparse_text.hpp") must name a file of the including file's
# own folder. Besides the order, the check fails on any cycle among the headers of the tree (a
# header that reaches itself through its includes). Every folder of src/, include/tessel/,
# apps/ and python/src must have a layer: a new folder fails until it is added below.
# Prints every violation; exit 1 if any.
#   scripts/check_layers.sh [ROOT]
set -euo pipefail
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
exec python3 - "$ROOT" <<'EOF'
import os, re, sys

root = sys.argv[1]
ORDER = ["core", "comm", "context", "layout", "dense", "sparse", "stencil", "io", "solvers",
         "scalapack", "apps", "python"]
RANK = {name: i for i, name in enumerate(ORDER)}
RANK["python"] = RANK["apps"]  # side by side at the top
TOP = {"apps", "python"}
CONTEXT_FILES = {"include/tessel/core/context.hpp", "src/core/context.cpp"}
TREES = ["include/tessel", "src", "apps", "python/src"]
SOURCE = re.compile(r"\.(c|cc|cpp|cxx|h|hh|hpp|hxx|inl)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# Generated into the build folder (cmake/version.hpp.in): core.
GENERATED = {"tessel/version.hpp": "core"}

bad = []

def layer_of_file(rel):
    if rel in CONTEXT_FILES:
        return "context"
    parts = rel.split("/")
    if parts[0] == "apps":
        return "apps"
    if parts[:2] == ["python", "src"]:
        return "python"
    if parts[:2] == ["include", "tessel"]:
        folder = parts[2] if len(parts) > 3 else None
    elif parts[0] == "src":
        folder = parts[1] if len(parts) > 2 else None
    else:
        folder = None
    if folder is None:
        return None
    return folder if folder in RANK else None

def layer_of_header(inc):
    """The layer of "tessel/<layer>/x.hpp" (None when not such a path)."""
    if inc in GENERATED:
        return GENERATED[inc]
    parts = inc.split("/")
    if len(parts) >= 3 and parts[0] == "tessel":
        if inc == "tessel/core/context.hpp":
            return "context"
        return parts[1] if parts[1] in RANK else "?"
    return None

files = []
for tree in TREES:
    base = os.path.join(root, tree)
    for d, _, names in os.walk(base):
        for n in names:
            if SOURCE.search(n):
                files.append(os.path.relpath(os.path.join(d, n), root))
files.sort()

graph = {}  # header or source -> the tree files it includes
for rel in files:
    me = layer_of_file(rel)
    if me is None:
        bad.append(f"{rel}: its folder has no layer (add it to ORDER in scripts/check_layers.sh)")
        continue
    here = os.path.dirname(rel)
    edges = []
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            where = f"{rel}:{no}: #include \"{inc}\""
            target = layer_of_header(inc)
            if target is None:
                path = os.path.normpath(os.path.join(here, inc))
                if "/" in inc or not os.path.isfile(os.path.join(root, path)):
                    bad.append(f"{where}: not a header of this folder (use \"tessel/<layer>/...\")")
                    continue
                edges.append(path)
                continue
            if target == "?":
                bad.append(f"{where}: no such layer")
                continue
            if inc not in GENERATED:
                edges.append(os.path.join("include", inc))
            if target == me:
                continue
            if me in TOP and target in TOP:
                bad.append(f"{where}: {me} must not include {target}")
            elif RANK[target] > RANK[me]:
                bad.append(f"{where}: layer {me} includes layer {target}, which is above it "
                           f"({' < '.join(ORDER[:-1])}, python beside apps)")
    graph[rel] = edges

# Cycles among the files (Tarjan's strongly connected components, iterative).
index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
for start in graph:
    if start in index:
        continue
    work = [(start, iter(graph.get(start, [])))]
    index[start] = low[start] = counter[0]; counter[0] += 1
    stack.append(start); on.add(start)
    while work:
        v, it = work[-1]
        advanced = False
        for w in it:
            if w not in graph:
                continue
            if w not in index:
                index[w] = low[w] = counter[0]; counter[0] += 1
                stack.append(w); on.add(w)
                work.append((w, iter(graph.get(w, []))))
                advanced = True
                break
            if w in on:
                low[v] = min(low[v], index[w])
        if advanced:
            continue
        work.pop()
        if work:
            low[work[-1][0]] = min(low[work[-1][0]], low[v])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, []):
                comps.append(sorted(comp))
for comp in comps:
    bad.append("include cycle: " + " <-> ".join(comp))

for b in bad:
    print("check_layers:", b)
if bad:
    sys.exit(1)
print(f"check_layers: ok ({len(files)} files of {', '.join(TREES)}; "
      f"{' < '.join(ORDER[:-1])}, python beside apps; no include cycle)")
EOF

#!/usr/bin/env python3
"""The core's layering, read from the object files' symbols and the sources
(docs/ARCHITECTURE.md).

    tools/check_layering.py            after a build (make; with nvcc, the cuda/ objects too)

Fails (exit 1, each violation on a line) when
  - two files of the core or cuda/ call each other, directly or round a
    longer circle (a file calls another when it uses a symbol the other
    defines: nm's undefined against defined, per object file);
  - a file calls up: into a folder of a higher layer, or sideways into
    another folder of its own layer (LAYERS below);
  - a cuda/ file calls into a core folder other than runtime/ and raster/
    (the helpers below the kernels), or a core file outside BACKEND_CALLERS
    calls into cuda/ (the backend interface, dispatch/dispatch.h, says who may);
  - src/pg/ calls a core function tg_core.h does not declare, or includes a
    core header other than tg_core.h;
  - a file includes a header of another folder other than that folder's own
    header (named after it), or of a folder of a higher layer;
  - a C or CUDA source or header (tests and benchmarks included) is longer
    than 1,200 lines, or a function outside kernels longer than 150.
"""

import os
import re
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CORE = "src/core"

# Folders of the core from the bottom up: a file may call into its own folder
# and into folders of lower layers only.  Folders of one layer do not call
# each other.
LAYERS = [
    ["runtime"],
    ["raster"],
    ["terrain", "viewshed", "bmmq"],
    ["hydro"],
    ["hydro/fill"],
    ["hydro/flats"],
    ["hydro/route"],
    ["hydro/accum"],
    ["hydro/catchment"],
    ["dispatch"],
    ["hydro/drainage"],
    ["ops"],
    ["scale/seams"],
    ["scale/strips", "scale/parts"],
    ["run"],
]
RANK = {folder: rank for rank, layer in enumerate(LAYERS) for folder in layer}
# what the kernels' host code may call: the helpers below every domain
CUDA_CALLS = {"runtime", "raster"}
# the core folders whose files call the CUDA backend (each through the dispatcher's policy)
BACKEND_CALLERS = {"dispatch", "hydro/drainage", "scale/seams", "scale/strips", "scale/parts"}
MAX_FILE_LINES = 1200
MAX_FUNCTION_LINES = 150

problems = []


def problem(text):
    problems.append(text)


def folder_of(path):
    """The folder a file belongs to: a core folder, 'cuda', 'pg', or None."""
    if path.startswith("cuda/"):
        return "cuda"
    if path.startswith("src/pg/"):
        return "pg"
    if path.startswith(CORE + "/test/") or not path.startswith(CORE + "/"):
        return None
    d = os.path.dirname(path)[len(CORE) + 1:]
    return d if d else ""


def objects():
    """The object files of the core, of cuda/ and of the glue, as built: the
    kernels' objects where the CUDA archive is newer than the stub's."""
    found = []
    for top in (CORE, "cuda", "src/pg"):
        for root, _, names in os.walk(os.path.join(REPO, top)):
            if "/test" in root[len(REPO):]:
                continue
            found += [os.path.relpath(os.path.join(root, n), REPO) for n in names if n.endswith(".o")]
    archive, stub = os.path.join(REPO, "cuda/libterra_gpu_cuda.a"), os.path.join(REPO, "cuda/tg_cuda_stub.o")
    with_cuda = os.path.exists(archive) and (not os.path.exists(stub) or
                                             os.path.getmtime(archive) > os.path.getmtime(stub))
    found = [o for o in found if not o.startswith("cuda/") or
             (o != "cuda/tg_cuda_stub.o") == with_cuda]
    return sorted(found)


def symbols(obj):
    """(defined, undefined) global symbols of an object file."""
    out = subprocess.run(["nm", "-P", obj], cwd=REPO, capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRCVW" and kind.isupper():
            defined.add(name)
    return defined, undefined


def source_of(obj):
    base = obj[:-2]
    for ext in (".c", ".cu"):
        if os.path.exists(os.path.join(REPO, base + ext)):
            return base + ext
    return obj


def check_calls():
    objs = objects()
    if not any(o.startswith(CORE) for o in objs):
        problem("no object files under %s: build first (make)" % CORE)
        return
    defs, uses = {}, {}
    owner = {}
    for o in objs:
        src = source_of(o)
        d, u = symbols(o)
        defs[src], uses[src] = d, u
        for s in d:
            owner.setdefault(s, src)
    calls = {f: {} for f in defs}
    for f, used in uses.items():
        for s in used:
            g = owner.get(s)
            if g is not None and g != f:
                calls[f].setdefault(g, []).append(s)
    core_api = declared_in_core_api()
    for f in sorted(calls):
        ff = folder_of(f)
        for g, syms in sorted(calls[f].items()):
            fg = folder_of(g)
            what = "%s calls %s (%s)" % (f, g, ", ".join(sorted(syms)[:4]))
            if ff == "pg":
                if fg not in ("pg", "cuda"):
                    hidden = sorted(s for s in syms if s not in core_api)
                    if hidden:
                        problem("%s: not in tg_core.h: %s" % (what, ", ".join(hidden)))
                continue
            if ff == "cuda":
                if fg != "cuda" and fg not in CUDA_CALLS:
                    problem("%s: cuda/ calls only runtime/ and raster/" % what)
                continue
            if fg == "cuda":
                if ff not in BACKEND_CALLERS:
                    problem("%s: only %s call the CUDA backend" % (what, ", ".join(sorted(BACKEND_CALLERS))))
                continue
            if fg == "pg":
                problem("%s: the core calls no glue" % what)
                continue
            if ff == fg:
                continue
            if ff not in RANK or fg not in RANK:
                problem("%s: a folder missing from tools/check_layering.py's LAYERS" % what)
            elif RANK[fg] > RANK[ff]:
                problem("%s: calls up (%s is above %s)" % (what, fg, ff))
            elif RANK[fg] == RANK[ff]:
                problem("%s: calls sideways (%s and %s are one layer)" % (what, fg, ff))
    core_calls = {f: {g: v for g, v in gs.items() if folder_of(g) != "pg"}
                  for f, gs in calls.items() if folder_of(f) != "pg"}
    for files in circles(core_calls):
        problem("circle of calls among: %s" % ", ".join(files))


def circles(calls):
    """Strongly connected components of more than one file (Tarjan), each as a list."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(calls.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(calls):
        if v not in index:
            visit(v)
    return out


def declared_in_core_api():
    text = open(os.path.join(REPO, CORE, "tg_core.h")).read()
    return set(re.findall(r"\b(tg_\w+)\s*\(", text)) | set(re.findall(r"^extern\s+[\w\s\*]+\b(tg_\w+)\s*;", text, re.M))


def sources():
    found = []
    for top in ("src", "cuda", "bench"):
        for root, _, names in os.walk(os.path.join(REPO, top)):
            found += [os.path.relpath(os.path.join(root, n), REPO)
                      for n in names if n.endswith((".c", ".h", ".cu", ".cuh"))]
    return sorted(found)


def main_header(folder):
    return "%s/%s/%s.h" % (CORE, folder, os.path.basename(folder))


def check_includes(path, text):
    f = folder_of(path)
    if f is None and not path.startswith(CORE + "/test/"):
        f = "outside"
    for inc in re.findall(r'^#include "([^"]+)"', text, re.M):
        target = os.path.normpath(os.path.join(CORE, inc))
        if not os.path.exists(os.path.join(REPO, target)):
            continue            # the glue's own, cuda/'s own, PostgreSQL's
        g = folder_of(target)
        if inc == "tg_core.h" or f is None or f == "outside":
            continue
        if f == "pg":
            problem("%s includes %s: the glue includes tg_core.h alone" % (path, inc))
            continue
        if g == f:
            continue
        if target != main_header(g):
            problem("%s includes %s, a header private to %s/ (include %s)"
                    % (path, inc, g, os.path.relpath(main_header(g), CORE)))
        elif f != "cuda" and f in RANK and g in RANK and RANK[g] >= RANK[f] and not f.startswith(g + "/"):
            problem("%s includes %s, of a folder %s" % (path, inc, "above it" if RANK[g] > RANK[f] else
                                                        "of its own layer"))


def check_lengths(path, lines):
    if len(lines) > MAX_FILE_LINES:
        problem("%s: %d lines, more than %d" % (path, len(lines), MAX_FILE_LINES))
    # PostgreSQL's layout: a function's body opens with '{' alone in column 0
    # and closes with '}' alone in column 0
    i = 0
    while i < len(lines):
        if lines[i] == "{":
            j = i - 1
            while j >= 0 and lines[j].strip() == "":
                j -= 1
            head = j
            while head >= 0 and not re.match(r"^\w[\w\s\*]*\(|^\w+\s*\(", lines[head]):
                head -= 1
            is_function = j >= 0 and lines[j].rstrip().endswith((")", "const"))
            k = i + 1
            while k < len(lines) and lines[k] != "}":
                k += 1
            if is_function and head >= 0:
                decl = " ".join(lines[max(0, head - 2):j + 1])
                name = re.search(r"(\w+)\s*\(", lines[head]).group(1)
                if "__global__" not in decl and k - head + 1 > MAX_FUNCTION_LINES:
                    problem("%s:%d: %s is %d lines, more than %d" % (path, head + 1, name, k - head + 1,
                                                                      MAX_FUNCTION_LINES))
            i = k
        i += 1


def check_folders():
    for root, dirs, names in os.walk(os.path.join(REPO, CORE)):
        rel = os.path.relpath(root, os.path.join(REPO, CORE))
        if rel == "." or rel.startswith("test") or not any(n.endswith((".c", ".h")) for n in names):
            continue
        if rel not in RANK:
            problem("%s/%s: a folder missing from tools/check_layering.py's LAYERS" % (CORE, rel))


def main():
    os.chdir(REPO)
    check_folders()
    for path in sources():
        text = open(path, errors="replace").read()
        check_includes(path, text)
        check_lengths(path, text.split("\n"))
    check_calls()
    for p in problems:
        print(p)
    n_obj = len(objects())
    if problems:
        print("layering: %d problem%s (%d object files read)" % (len(problems), "" if len(problems) == 1 else "s",
                                                                  n_obj))
        return 1
    print("layering: no circles, nothing calling up, files and functions within bounds (%d object files read)"
          % n_obj)
    return 0


if __name__ == "__main__":
    sys.exit(main())

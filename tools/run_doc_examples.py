#!/usr/bin/env python3
"""Run every ```sql block of the README in a fresh database, in order, and fail
on the first error: the documentation's examples must work as written, on real
data.

The examples use the demo's table `alps_dem` (and tables they create
themselves): it is loaded here as tools/demo.sh loads it, by tools/demo_dem.sh
(the SRTM tile of tools/data with its voids filled, in 256 x 256 tiles).  The
calls the README's table of the demo's products prints must be the demo's own:
each is looked for in tools/demo.sh (`…` standing for an argument).
Connection: PG* variables; the database is created and dropped here.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

DB = "terra_gpu_doc_examples"
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def psql(args, script=None):
    p = subprocess.run(["psql", "-X", "-v", "ON_ERROR_STOP=1"] + args, input=script,
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def demo_calls_missing(readme):
    """The calls of the README's table of demo products that tools/demo.sh does not make."""
    table = re.search(r"^\| table \| call \|\n((?:\|.*\n)+)", readme, re.M)
    if not table:
        return ["the README has no table of the demo's products"]
    demo = " ".join(open(os.path.join(REPO, "tools", "demo.sh")).read().split())
    missing = []
    for row in table.group(1).splitlines()[1:]:
        for call in re.findall(r"`(tg_\w+\(.*?\))`", row.split("|")[2]):
            pattern = r"\s*".join(".*?" if part == "…" else re.escape(part)
                                  for part in re.findall(r"…|\w+|\S", call))
            if not re.search(pattern, demo):
                missing.append(call)
    return missing


def main():
    readme = open(os.path.join(REPO, "README.md")).read()
    missing = demo_calls_missing(readme)
    if missing:
        print("the README's table of the demo's products prints calls tools/demo.sh does not make:\n  "
              + "\n  ".join(missing))
        return 1
    blocks = re.findall(r"^```sql\n(.*?)^```", readme, re.M | re.S)
    psql(["-d", "postgres", "-qc", "DROP DATABASE IF EXISTS %s" % DB])
    rc, out = psql(["-d", "postgres", "-qc", "CREATE DATABASE %s" % DB])
    if rc:
        print(out)
        return 1
    try:
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.run([os.path.join(REPO, "tools", "demo_dem.sh"), tmp], capture_output=True, text=True)
            if p.returncode:
                print("tools/demo_dem.sh failed:\n" + p.stdout + p.stderr)
                return 1
            rc, out = psql(["-d", DB, "-q", "-o", os.devnull],
                           "SET client_min_messages = warning;\nCREATE EXTENSION terra_gpu CASCADE;\n"
                           + open(os.path.join(tmp, "alps_dem.sql")).read())
        if rc:
            print(out)
            return 1
        start = time.time()
        for i, block in enumerate(blocks, 1):
            sql = block.replace("CREATE EXTENSION terra_gpu", "CREATE EXTENSION IF NOT EXISTS terra_gpu")
            t = time.time()
            rc, out = psql(["-d", DB, "-q"], sql)
            if rc:
                print("README example %d failed:\n%s\n%s" % (i, block, out))
                return 1
            if os.environ.get("TG_DOC_VERBOSE"):
                print("-- block %d (%.1f s)\n%s" % (i, time.time() - t, out))
        print("README examples: %d blocks ran on the demo's DEM in %.0f s; the demo makes the %s"
              % (len(blocks), time.time() - start, "calls its table prints"))
        return 0
    finally:
        psql(["-d", "postgres", "-qc", "DROP DATABASE IF EXISTS %s" % DB])


if __name__ == "__main__":
    sys.exit(main())

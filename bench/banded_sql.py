#!/usr/bin/env python3
"""Coverages larger than terra_gpu.max_memory_mb: the fill -> accumulation
pipeline as one coverage call (tg_flow_accumulation fills the DEM itself),
or the directions, run in strips of rows under a memory budget, timed, with
the backend's peak resident memory and each phase's time (tg_last_run():
"flats across strips" is the seams' walk over the flats that cross strip
boundaries, whose cells a NOTICE counts); optionally the same call in
memory and a tile-by-tile comparison (D8 counts and directions are equal bit
for bit; multiple-flow sums are added in another order, so their cells are
compared to rounding as well).

    bench/banded_sql.py TABLE --budget-mb 4096 [--compare] [--keep]
    bench/banded_sql.py DEM.tif --budget-mb 512 --compare [--memory-backend gpu]
                                              (loads DEM.tif at 256 x 256)
    bench/banded_sql.py DEM.tif --routing mfd-md --budget-mb 360 --compare
    bench/banded_sql.py BIG.vrt --op directions --budget-mb 4096
                                              (any GDAL source: a VRT that
                                              enlarges a DEM bilinearly makes
                                              large integer plateaus)

The peak is the backend's VmHWM (/proc/PID/status, read through
pg_read_file, so the role must be a superuser) in a fresh session that runs
only this statement.  The NOTICEs give the time of each phase.
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import Dem, load_dem, machine_description, psql  # noqa: E402


def run_statement(sql, budget_mb, db):
    """Run sql in a fresh session under the budget; wall s, peak MB, NOTICEs."""
    script = ("SET terra_gpu.max_memory_mb = %d;\n"
              "SET default_toast_compression = lz4;\n"
              "%s;\n"
              "SELECT method, note, phases FROM tg_last_run();\n"
              "SELECT pg_read_file('/proc/' || pg_backend_pid() || '/status');\n" % (budget_mb, sql))
    cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"] + (["-d", db] if db else [])
    t0 = time.perf_counter()
    p = subprocess.run(cmd, input=script, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError("psql failed:\n" + p.stderr)
    peak = re.search(r"VmHWM:\s+(\d+) kB", p.stdout)
    method, note, phases = (p.stdout.strip().splitlines()[0].split("|") + ["", ""])[:3]
    method = "%s|%s; phases: %s" % (method, note, phases)
    notices = [l for l in p.stderr.splitlines() if l.startswith("NOTICE")]
    return wall, int(peak.group(1)) / 1024 if peak else float("nan"), method, notices


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source", help="a tiled raster table, or a DEM file to load at 256 x 256")
    ap.add_argument("--budget-mb", type=int, required=True)
    ap.add_argument("--compare", action="store_true",
                    help="also run in memory (budget 1 TB) and compare the tiles")
    ap.add_argument("--memory-backend", default="cpu", help="backend of the in-memory run (cpu, gpu)")
    ap.add_argument("--routing", default="d8", help="d8, fd8, mfd-md, dinf or anisotropic")
    ap.add_argument("--op", default="accumulation", choices=["accumulation", "directions"],
                    help="tg_flow_accumulation (filling the DEM) or tg_flow_direction")
    ap.add_argument("--keep", action="store_true", help="keep the result tables")
    ap.add_argument("--db")
    a = ap.parse_args()

    table = a.source
    if os.path.exists(a.source):
        dem = Dem(a.source)
        table = re.sub(r"\W", "_", dem.name) + "_tiles"
        t0 = time.perf_counter()
        load_dem(dem, table, a.db, tile=256)
        print("loaded %s (%d x %d) as %s in %.1f s" % (dem.name, dem.width, dem.height, table,
                                                       time.perf_counter() - t0))
    size = psql("SELECT count(*), max(ST_UpperLeftX(rast)) IS NOT NULL FROM %s" % table, a.db)
    print("# %s" % machine_description())
    print("# %s: %s tiles" % (table, size.split("|")[0]))

    def pipeline(result, backend="cpu"):
        function = "tg_flow_accumulation" if a.op == "accumulation" else "tg_flow_direction"
        return ("CREATE TABLE %s AS SELECT * FROM %s(coverage => '%s', routing => '%s', "
                "backend => '%s')" % (result, function, table, a.routing, backend))

    psql("DROP TABLE IF EXISTS banded_acc, memory_acc", a.db)
    wall, peak, method, notices = run_statement(pipeline("banded_acc"), a.budget_mb, a.db)
    for n in notices:
        print("  " + n)
    print("in bands (budget %d MB): %.1f s, peak backend memory %.0f MB, %s"
          % (a.budget_mb, wall, peak, method.replace("|", ": ")))
    if a.compare:
        wall, peak, method, _ = run_statement(pipeline("memory_acc", a.memory_backend), 1 << 20, a.db)
        print("in memory: %.1f s, peak backend memory %.0f MB, %s" % (wall, peak, method.replace("|", ": ")))
        same = psql("SELECT count(*), count(*) FILTER (WHERE ST_AsBinary(m.rast) = ST_AsBinary(b.rast)) "
                    "FROM memory_acc m JOIN banded_acc b USING (rid)", a.db)
        print("tiles compared, identical: %s" % same.replace("|", ", "))
        if a.routing != "d8" and a.op == "accumulation":
            # every cell: the largest relative difference, and how many differ at all
            cells = ("SELECT rid, c.i, c.v FROM %s, unnest(ST_DumpValues(rast, 1)) WITH ORDINALITY c(v, i)")
            apart = psql("SELECT count(*) FILTER (WHERE m.v IS DISTINCT FROM b.v), count(*), "
                         "max(abs(m.v - b.v) / greatest(abs(m.v), 1e-300)) "
                         "FROM (%s) m JOIN (%s) b USING (rid, i) WHERE m.v IS NOT NULL OR b.v IS NOT NULL"
                         % (cells % "memory_acc", cells % "banded_acc"), a.db)
            differ, cells, rel = apart.split("|")
            print("cells compared: %s, differing %s, largest relative difference %s" % (cells, differ, rel))
    if not a.keep:
        psql("DROP TABLE IF EXISTS banded_acc, memory_acc", a.db)


if __name__ == "__main__":
    main()

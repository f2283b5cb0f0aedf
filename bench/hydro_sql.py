#!/usr/bin/env python3
"""End-to-end SQL time of the hydrology functions on a real DEM (one raster
value), CPU and GPU paths, with what tg_last_run() reports: time in the
library, device kernel and preparation time, transfers.  Median of --reps
after a warm-up.  Connection: PG* variables.

    bench/hydro_sql.py DEM.tif [--backends cpu,gpu] [--reps 3]
"""

import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from run_bench import timed_statements  # noqa: E402
from tg_tools import Dem, dem_bench_arguments, load_dem_table, machine_description, psql  # noqa: E402

CALLS = [
    ("tg_fill (priority-flood)", "tg_fill(rast, backend => '%s')"),
    ("tg_fill (planchon-darboux)", "tg_fill(rast, method => 'planchon-darboux', backend => '%s')"),
    ("tg_flow_direction (d8)", "tg_flow_direction(rast, backend => '%s')"),
    ("tg_flow_accumulation (d8)", "tg_flow_accumulation(rast, backend => '%s')"),
    ("tg_flow_accumulation (mfd-md)", "tg_flow_accumulation(rast, routing => 'mfd-md', backend => '%s')"),
]


def main():
    ap = dem_bench_arguments(__doc__, reps=3)
    ap.add_argument("--backends", default="cpu,gpu")
    ap.add_argument("--db")
    args = ap.parse_args()
    dem = Dem(args.dem)
    table = load_dem_table(dem, "hydro_", args.db)
    gpu = psql("SELECT available FROM tg_gpu_info()", args.db) == "t"
    backends = [b for b in args.backends.split(",") if b == "cpu" or gpu]

    print("### Hydrology in SQL on %s (%d cells), %s" % (dem.name, dem.cells, datetime.date.today().isoformat()))
    print("")
    print("- Host: %s" % machine_description())
    print("")
    print("| call | path | SQL ms | library ms | device ms (of which preparation) | transfers ms | method |")
    print("|---|---|---:|---:|---:|---:|---|")
    for label, call in CALLS:
        for b in backends:
            sql = "SELECT ST_Width(%s) FROM %s" % (call % b, table)
            r = timed_statements([sql], args.reps, args.db)[0]
            method = r["method"]
            device = "%.1f (%.1f)" % (r["kernel_ms"], r["prep_ms"]) if b == "gpu" else "–"
            print("| %s | %s | %.0f | %.0f | %s | %s | %s |" % (
                label, b.upper(), r["sql_ms"], r["core_ms"], device,
                "%.1f" % r["transfer_ms"] if b == "gpu" else "–", method), flush=True)
    psql("DROP TABLE %s" % table, args.db)


if __name__ == "__main__":
    main()

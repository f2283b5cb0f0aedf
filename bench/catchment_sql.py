#!/usr/bin/env python3
"""End-to-end SQL time of RUSLE, travel time, watershed and isochrones on a
real DEM (one raster value), CPU and GPU paths, with what tg_last_run()
reports (library, device and transfer time).  The outlet is the cell with
the largest D8 accumulation on land (elevation >= 1); the isochrone interval an eighth of the longest
travel time.  Median of --reps after a warm-up.  Connection: PG* variables.

    bench/catchment_sql.py DEM.tif [--backends cpu,gpu] [--reps 3] [--outlet EWKT]

--outlet gives the pour point instead (the search runs ST_MapAlgebra over the
whole DEM: minutes on tens of millions of cells).
"""

import datetime
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from run_bench import timed_statements  # noqa: E402
from tg_tools import Dem, dem_bench_arguments, load_dem_table, machine_description, psql  # noqa: E402

CALLS = [
    ("tg_ls_factor (mfd-md)", "SELECT ST_Width(tg_ls_factor(rast, backend => '{b}')) FROM {t}"),
    ("tg_rusle (mfd-md, constants)",
     "SELECT ST_Width(tg_rusle(rast, 300, 0.03, 0.2, 1, backend => '{b}')) FROM {t}"),
    ("tg_rusle (mfd-md, K raster)",
     "SELECT ST_Width(tg_rusle(rast, 300, k, 0.2, 1, backend => '{b}')) FROM {t}, {t}_k"),
    ("tg_rusle (d8, fill)",
     "SELECT ST_Width(tg_rusle(rast, 300, 0.03, 0.2, 1, routing => 'd8', fill => true, backend => '{b}')) FROM {t}"),
    ("tg_travel_time (to every edge outlet)",
     "SELECT ST_Width(tg_travel_time(rast, n => 0.05, k => 2, backend => '{b}')) FROM {t}"),
    ("tg_watershed", "SELECT ST_Width(tg_watershed(rast, {o}, backend => '{b}')) FROM {t}"),
    ("tg_isochrones (8 bands, polygons)",
     "SELECT count(*) FROM {t}, tg_isochrones(rast, {o}, {i}, n => 0.05, k => 2, backend => '{b}')"),
]


def main():
    ap = dem_bench_arguments(__doc__, reps=3)
    ap.add_argument("--backends", default="cpu,gpu")
    ap.add_argument("--only", help="regular expression: time only the calls whose label matches")
    ap.add_argument("--outlet", help="pour point as EWKT (default: the search described above)")
    ap.add_argument("--db")
    args = ap.parse_args()
    db = args.db
    dem = Dem(args.dem)
    table = load_dem_table(dem, "catchment_", db)
    psql("DROP TABLE IF EXISTS {t}_k; CREATE TABLE {t}_k AS "
         "SELECT ST_MapAlgebra(rast, '32BF', '0.02 + 0.01 * (floor([rast])::int % 3)') AS k FROM {t}".format(t=table), db)
    gpu = psql("SELECT available FROM tg_gpu_info()", db) == "t"
    backends = [b for b in args.backends.split(",") if b == "cpu" or gpu]
    # the outlet: the largest D8 accumulation; the interval: 1/8 of the longest time to it
    # (on land: the sea of SRTM tiles is a flat of zeros whose edge collects everything)
    outlet = args.outlet or psql("WITH a AS (SELECT ST_MapAlgebra(tg_flow_accumulation(rast, backend => '{b}'), 1, rast, 1, "
                  "'CASE WHEN [rast2] >= 1 THEN [rast1] END', '64BF') AS acc FROM {t}), "
                  "p AS (SELECT (ST_PixelOfValue(acc, ARRAY[(ST_SummaryStats(acc)).max])).* FROM a LIMIT 1) "
                  "SELECT ST_AsEWKT(ST_PixelAsCentroid(acc, p.x, p.y)) FROM a, p".format(t=table, b=backends[-1]), db)
    point = "'%s'::geometry" % outlet
    longest = float(psql("SELECT (ST_SummaryStats(tg_travel_time(rast, {o}, n => 0.05, k => 2, backend => '{b}'))).max "
                         "FROM {t}".format(t=table, o=point, b=backends[-1]), db))
    interval = longest / 8

    print("### RUSLE, travel time and isochrones in SQL on %s (%d cells), %s"
          % (dem.name, dem.cells, datetime.date.today().isoformat()))
    print("")
    print("- Host: %s" % machine_description())
    print("- Outlet %s (%s); longest travel time to it %.0f s; interval %.0f s"
          % (outlet, "given" if args.outlet else "largest D8 accumulation on land", longest, interval))
    print("")
    print("| call | path | SQL ms | library ms | device ms (of which routing) | transfers ms | method |")
    print("|---|---|---:|---:|---:|---:|---|")
    for label, call in CALLS:
        if args.only and not re.search(args.only, label):
            continue
        for b in backends:
            sql = call.format(b=b, t=table, o=point, i=interval)
            r = timed_statements([sql], args.reps, db)[0]
            device = "%.1f (%.1f)" % (r["kernel_ms"], r["prep_ms"]) if b == "gpu" else "–"
            print("| %s | %s | %.0f | %.0f | %s | %s | %s |" % (
                label, b.upper(), r["sql_ms"], r["core_ms"], device,
                "%.1f" % r["transfer_ms"] if b == "gpu" else "–", r["method"]), flush=True)
    psql("DROP TABLE %s; DROP TABLE %s_k" % (table, table), db)


if __name__ == "__main__":
    main()

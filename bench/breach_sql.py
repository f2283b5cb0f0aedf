#!/usr/bin/env python3
"""Depression breaching (tg_fill, method breach; Lindsay 2016) against filling
on real DEMs, through SQL: time of a call (median of --reps, CPU backend) and
how much of the DEM each changes (cells, mean and largest change, volume in
cell units times metres).

    bench/breach_sql.py [DEM.tif ...] [--reps 3] [--db DB]

Each DEM is loaded as one raster value.  Connection: PG* variables.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import Dem, load_dem, machine_description, psql  # noqa: E402

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "dem")
DEFAULT = ["tiny_luxembourg_30s", "small_bigtujunga_srtm30_utm11", "medium_alps_n46e008_srtm3",
           "medium_srilanka_srtm3_3x3"]


def timed(sql, db, reps):
    walls = []
    for _ in range(reps):
        t0 = time.perf_counter()
        psql(sql, db)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def change(expr, db):
    """Cells changed, mean and largest |change| (m), summed |change| (cell x m) of expr against the DEM."""
    row = psql("SELECT count(*), coalesce(avg(abs(v)), 0), coalesce(max(abs(v)), 0), coalesce(sum(abs(v)), 0) "
               "FROM (SELECT (ST_PixelAsPoints(ST_MapAlgebra(%s, 1, rast, 1, '[rast1] - [rast2]'))).val AS v "
               "FROM breach_dem) d WHERE v <> 0" % expr, db)
    n, mean, top, total = row.split("|")
    return int(n), float(mean), float(top), float(total)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dems", nargs="*")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--db")
    args = ap.parse_args()
    paths = args.dems or [os.path.join(SHARED, d + ".tif") for d in DEFAULT
                          if os.path.exists(os.path.join(SHARED, d + ".tif"))]
    print("# host: %s; %s; CPU backend, every core\n" % (machine_description(), time.strftime("%Y-%m-%d")))
    print("| DEM | cells | fill, s | breach, s | cells raised by filling: mean / max m, volume | "
          "cells lowered by breaching: mean / max m, volume |")
    print("|---|---:|---:|---:|---|---|")
    for path in paths:
        dem = Dem(path)
        load_dem(dem, "breach_dem", args.db)
        cells = int(psql("SELECT ST_Width(rast)::bigint * ST_Height(rast) FROM breach_dem", args.db))
        base = "SET terra_gpu.backend = 'cpu'; SELECT ST_Width(%s) FROM breach_dem"
        fill_s = timed(base % "tg_fill(rast)", args.db, args.reps)
        breach_s = timed(base % "tg_fill(rast, method => 'breach')", args.db, args.reps)
        f = change("tg_fill(rast)", args.db)
        b = change("tg_fill(rast, method => 'breach')", args.db)
        print("| %s | %d | %.2f | %.2f | %d: %.2f / %.1f, %.0f | %d: %.2f / %.1f, %.0f |"
              % (dem.name, cells, fill_s, breach_s, f[0], f[1], f[2], f[3], b[0], b[1], b[2], b[3]), flush=True)
        psql("DROP TABLE breach_dem", args.db)


if __name__ == "__main__":
    main()

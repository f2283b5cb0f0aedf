#!/usr/bin/env python3
"""BMMQ-tree end to end in SQL on a real DEM: build time (GPU and CPU paths,
with the device kernel time), node table size against the raster table, and
region-of-interest queries through the index against the naive PostGIS ways
(ST_PixelAsPolygons with a value filter; ST_Reclass + ST_DumpAsPolygons),
checking that they find the same cells.  Prints a Markdown table.
Connection: PG* variables.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import Dem, load_dem, machine_description, psql, psql_script  # noqa: E402


def timed(sql, db, reps=1):
    """Best server-side time (ms, psql's \\timing) of reps runs in one session, and the result."""
    out = psql_script("\\timing on\n" + (sql.rstrip(";") + ";\n") * reps, db)
    times = [float(t) for t in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]
    rows = [line for line in out.splitlines() if line and not line.startswith("Time:")]
    return min(times), rows[-1]


def mb(nbytes):
    return "%.1f MB" % (int(nbytes) / 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dem")
    ap.add_argument("--db")
    ap.add_argument("--tile", type=int, default=256)
    ap.add_argument("--nbins", type=int, default=8)
    ap.add_argument("--backends", default="gpu,cpu")
    ap.add_argument("--naive", default="pixel,dump", help="naive baselines to time (pixel, dump, none)")
    args = ap.parse_args()
    db = args.db
    dem = Dem(args.dem)
    table = "bmmq_bench"
    load_dem(dem, table, db, tile=args.tile)
    ntiles = int(psql("SELECT count(*) FROM %s" % table, db))
    raster_bytes = psql("SELECT pg_total_relation_size('%s')" % table, db)
    print("# %s: %d x %d = %d cells, %d tiles of %d x %d; %s" % (
        dem.name, dem.width, dem.height, dem.cells, ntiles, args.tile, args.tile, machine_description()))
    print()
    ms_bins, _ = timed("SELECT (ST_SummaryStatsAgg(rast, 1, true)).min FROM %s" % table, db)
    print("| step | backend | SQL ms | device kernel ms | core ms | nodes |")
    print("|---|---|---|---|---|---|")
    print("| equal-interval bins (ST_SummaryStatsAgg over the table) | - | %.0f | - | - | - |" % ms_bins)
    for backend in args.backends.split(","):
        psql("SELECT tg_bmmq_drop('bench', true)", db)
        ms, _ = timed("SELECT tg_bmmq_build('bench', '%s', nbins => %d, backend => '%s')"
                      % (table, args.nbins, backend), db)
        nodes = psql("SELECT node_count FROM terra_gpu.bmmq_index WHERE name = 'bench'", db)
        bounds = psql("SELECT bounds FROM terra_gpu.bmmq_index WHERE name = 'bench'", db)
        # the nodes alone (tiles read, built, rows produced but not stored), with what ran
        out = psql_script("\\timing on\nSELECT count(*) FROM terra_gpu._bmmq_build_nodes('%s', 'rast', 'rid', 1, '%s', '%s');\n"
                          "SELECT backend, round(kernel_ms::numeric, 3), round(core_ms::numeric, 1) FROM tg_last_run();\n"
                          % (table, bounds, backend), db)
        ms_srf = float(re.findall(r"^Time: ([0-9.]+) ms", out, re.M)[0])
        run = [line for line in out.splitlines() if line.count("|") == 2][-1].split("|")
        print("| whole build (tg_bmmq_build, %d bins: bins, checks, nodes, INSERT with indexes) | %s | %.0f | %s | %s | %s |"
              % (args.nbins, run[0], ms, run[1] or "-", run[2], nodes))
        print("| nodes only (tiles read via SPI, built, rows produced) | %s | %.0f | %s | %s | %s |"
              % (run[0], ms_srf, run[1] or "-", run[2], nodes))

    psql("VACUUM FULL terra_gpu.bmmq_node", db)
    node_bytes = psql("SELECT pg_total_relation_size('terra_gpu.bmmq_node')", db)
    print()
    print("Node table %s (with its indexes) for a raster table of %s (%.2f x); %s nodes for %d cells."
          % (mb(node_bytes), mb(raster_bytes), int(node_bytes) / int(raster_bytes), nodes, dem.cells))
    print()

    bounds = [float(v) for v in bounds.strip("{}").split(",")]
    ranges = [(bounds[-1], "Infinity", "top bin (selective)"), (bounds[-3], bounds[-2], "one middle-high bin")]
    print("| ROI query | rows | cells | index ms | ST_PixelAsPolygons ms | ST_Reclass+ST_DumpAsPolygons ms | speed-up | same cells |")
    print("|---|---|---|---|---|---|---|---|")
    for i, (lo, hi, what) in enumerate(ranges):
        hi_sql = "'Infinity'" if hi == "Infinity" else repr(hi)
        ms_ix, out = timed("SELECT count(*), sum(4::bigint ^ (t.levels - r.level)) FROM tg_bmmq_roi('bench', %r, %s) r "
                           "JOIN terra_gpu.bmmq_tile t ON t.index_id = (SELECT id FROM terra_gpu.bmmq_index "
                           "WHERE name = 'bench') AND t.tile_id = r.tile_id" % (lo, hi_sql), db, reps=3)
        rows, cells = out.split("|")
        cells = int(float(cells))
        cols = ["-", "-"]
        same = True
        slowest_fast = None
        if "pixel" in args.naive and i == 0:    # minutes on large coverages: once
            ms_px, n_px = timed("SELECT count(*) FROM (SELECT (ST_PixelAsPolygons(rast, 1)).val FROM %s) p "
                                "WHERE val >= %r AND val < %s" % (table, lo, hi_sql), db)
            cols[0] = "%.0f" % ms_px
            same &= int(n_px) == cells
            slowest_fast = ms_px
        if "dump" in args.naive:
            top = "32767" if hi == "Infinity" else repr(hi)
            ms_dp, n_dp = timed("SELECT round(coalesce(sum(ST_Area(geom)), 0) / %r) FROM (SELECT (ST_DumpAsPolygons("
                                "ST_Reclass(rast, 1, '[%r-%s):1', '8BUI', 0))).* FROM %s) p WHERE val = 1"
                                % (dem.pixel_width * dem.pixel_height, lo, top, table), db)
            cols[1] = "%.0f" % ms_dp
            same &= int(float(n_dp)) == cells
            slowest_fast = ms_dp if slowest_fast is None else min(slowest_fast, ms_dp)
        speed = "%.0f x" % (slowest_fast / ms_ix) if slowest_fast else "-"
        print("| %s [%g, %s) | %s | %d | %.1f | %s | %s | %s (vs the faster) | %s |"
              % (what, lo, hi, rows, cells, ms_ix, cols[0], cols[1], speed, "yes" if same else "NO"))
    psql("SELECT tg_bmmq_drop('bench'); DROP TABLE %s" % table, db)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The coverage pipeline end to end in SQL: a DEM loaded with
`raster2pgsql -t 256x256`, filled and D8-accumulated through the coverage
forms, timed and checked against the value form.

Steps (wall time of each statement, and what terra_gpu itself took):
  1. CREATE TABLE filled AS SELECT * FROM tg_fill(coverage => tiles)
  2. CREATE TABLE acc AS SELECT * FROM tg_flow_accumulation(coverage => filled, fill => false)
  3. the chained call: CREATE TABLE hydro AS SELECT * FROM tg_hydrology(coverage => tiles)
  and, to show what storing costs, step 2 without storing (count(*)) and
  stored with each TOAST choice: pglz (PostgreSQL's default), lz4, external.
Checks: the accumulation tiles, read back with gdal_translate "PG:..."
(PostGISRaster driver, mode=2), equal the value form on the DEM as one
raster value, byte for byte; so does the chained call's accumulation.
--peers also times SAGA (Wang & Liu fill, then D8 accumulation) and GRASS
(r.watershed -s) on the same DEM, file to file.

    bench/coverage_sql.py DEM.tif [--backend cpu|gpu] [--peers]
"""

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tg_tools import Dem, load_dem, machine_description, psql, run  # noqa: E402


LAST_RUN = ("SELECT backend, round(core_ms::numeric, 1), round(coalesce(kernel_ms, 0)::numeric, 1), "
            "round(coalesce(transfer_ms, 0)::numeric, 1) FROM tg_last_run()")


def timed_sql(sql, db):
    """Wall ms of a statement, and what tg_last_run() says of it (same session)."""
    t0 = time.perf_counter()
    out = psql(sql + "; " + LAST_RUN, db)
    return (time.perf_counter() - t0) * 1e3, out.splitlines()[-1].split("|")


def table_digest(table, db, tmp):
    """sha256 of a raster table read through GDAL's PostGISRaster driver as one mosaic."""
    out = os.path.join(tmp, table + ".bil")
    conn = "PG:dbname=%s table=%s mode=2" % (db or os.environ.get("PGDATABASE", ""), table)
    run(["gdal_translate", "-q", "-of", "ENVI", conn, out])
    h = hashlib.sha256()
    with open(out, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    os.remove(out)
    return h.hexdigest()


def peers(dem, tmp):
    """SAGA fill + D8 accumulation and GRASS r.watershed -s, file to file (s)."""
    res = {}
    filled = os.path.join(tmp, "wl.sdat")
    t0 = time.perf_counter()
    run(["saga_cmd", "ta_preprocessor", "4", "-ELEV", dem.path, "-FILLED", filled, "-MINSLOPE", "0"])
    t1 = time.perf_counter()
    run(["saga_cmd", "ta_hydrology", "0", "-ELEVATION", filled, "-FLOW", os.path.join(tmp, "acc.sdat"),
         "-METHOD", "0", "-FLOW_UNIT", "0"])
    t2 = time.perf_counter()
    res["SAGA Wang & Liu fill"] = t1 - t0
    res["SAGA D8 accumulation"] = t2 - t1
    res["SAGA pipeline"] = t2 - t0
    loc = os.path.join(tmp, "grass")
    run(["grass", "-c", dem.path, "-e", loc])
    script = os.path.join(tmp, "rw.sh")
    with open(script, "w") as f:
        f.write("r.in.gdal -o input=%s output=dem --quiet --overwrite\n"
                "g.region raster=dem\n"
                "r.watershed -s elevation=dem accumulation=acc --quiet --overwrite\n"
                "r.out.gdal input=acc output=%s/rw.tif type=Float64 --quiet --overwrite\n" % (dem.path, tmp))
    t0 = time.perf_counter()
    run(["grass", os.path.join(loc, "PERMANENT"), "--exec", "bash", script])
    res["GRASS r.watershed -s (import, route, export)"] = time.perf_counter() - t0
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dem")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--tile", type=int, default=256)
    ap.add_argument("--peers", action="store_true")
    ap.add_argument("--db")
    args = ap.parse_args()
    db = args.db
    os.environ["PGOPTIONS"] = "-c terra_gpu.backend=%s -c client_min_messages=warning" % args.backend
    dem = Dem(args.dem)
    print("# %s, %d x %d = %.1f M cells, %s path, %s" % (dem.name, dem.width, dem.height, dem.cells / 1e6,
                                                        args.backend, machine_description()))
    load_dem(dem, "cov_tiles", db, tile=args.tile)
    load_dem(dem, "cov_whole", db)
    ntiles = psql("SELECT count(*) FROM cov_tiles", db)
    print("%s tiles of %d x %d\n" % (ntiles, args.tile, args.tile))
    psql("DROP TABLE IF EXISTS cov_filled, cov_acc, cov_hydro, cov_value, cov_lz4, cov_ext", db)
    if args.backend == "gpu":   # start CUDA outside the timings
        psql("SELECT tg_slope(rast) IS NOT NULL FROM cov_tiles LIMIT 1", db)

    rows = []

    def step(name, sql):
        ms, st = timed_sql(sql, db)
        rows.append((name, ms, st))
        print("| %s | %.0f | %s | %s | %s | %s |" % (name, ms, *st), flush=True)

    print("| step | SQL ms | ran on | library ms | device ms | transfers ms |")
    print("|---|---:|---|---:|---:|---:|")
    step("tg_fill coverage, stored (pglz)",
         "CREATE TABLE cov_filled AS SELECT * FROM tg_fill(coverage => 'cov_tiles')")
    step("tg_flow_accumulation d8 coverage on the filled tiles, not stored",
         "SELECT count(*) FROM tg_flow_accumulation(coverage => 'cov_filled', fill => false)")
    step("tg_flow_accumulation d8 coverage on the filled tiles, stored (pglz)",
         "CREATE TABLE cov_acc AS SELECT * FROM tg_flow_accumulation(coverage => 'cov_filled', fill => false)")
    step("the same, stored with lz4",
         "SET default_toast_compression = lz4; "
         "CREATE TABLE cov_lz4 AS SELECT * FROM tg_flow_accumulation(coverage => 'cov_filled', fill => false)")
    step("the same, stored external (no compression)",
         "CREATE TABLE cov_ext (rid bigint, rast raster); ALTER TABLE cov_ext ALTER COLUMN rast SET STORAGE EXTERNAL; "
         "INSERT INTO cov_ext SELECT * FROM tg_flow_accumulation(coverage => 'cov_filled', fill => false)")
    step("tg_hydrology coverage (fill, D8, accumulation in one call), not stored",
         "SELECT count(*) FROM tg_hydrology(coverage => 'cov_tiles')")
    step("tg_hydrology coverage, three columns stored with lz4",
         "SET default_toast_compression = lz4; "
         "CREATE TABLE cov_hydro AS SELECT * FROM tg_hydrology(coverage => 'cov_tiles')")
    step("value form tg_flow_accumulation on the DEM as one raster, stored (external)",
         "CREATE TABLE cov_value (rid int, rast raster); ALTER TABLE cov_value ALTER COLUMN rast SET STORAGE EXTERNAL; "
         "INSERT INTO cov_value SELECT 1, tg_flow_accumulation(rast) FROM cov_whole")
    print()
    sizes = psql("SELECT string_agg(t || ' ' || pg_size_pretty(pg_total_relation_size(t)), ', ' ORDER BY t) FROM "
                 "unnest(ARRAY['cov_tiles', 'cov_filled', 'cov_acc', 'cov_lz4', 'cov_ext', 'cov_hydro']) AS t", db)
    print("table sizes: %s\n" % sizes)

    with tempfile.TemporaryDirectory() as tmp:
        value = table_digest("cov_value", db, tmp)
        psql("DROP TABLE IF EXISTS cov_hydro_acc; CREATE TABLE cov_hydro_acc AS SELECT rid, accumulation AS rast "
             "FROM cov_hydro; SELECT AddRasterConstraints('cov_hydro_acc'::name, 'rast'::name); "
             "SELECT AddRasterConstraints('cov_acc'::name, 'rast'::name)", db)
        for t in ["cov_acc", "cov_lz4", "cov_ext", "cov_hydro_acc"]:
            same = table_digest(t, db, tmp) == value
            print("%s read back with gdal_translate equals the value form: %s" % (t, "yes" if same else "NO"))
        if args.peers:
            print()
            for k, v in peers(dem, tmp).items():
                print("| %s | %.1f s |" % (k, v))
    psql("DROP TABLE IF EXISTS cov_filled, cov_acc, cov_hydro, cov_hydro_acc, cov_value, cov_lz4, cov_ext, "
         "cov_tiles, cov_whole", db)


if __name__ == "__main__":
    main()

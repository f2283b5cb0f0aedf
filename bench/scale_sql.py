#!/usr/bin/env python3
"""Coverage operations at scale against PostgreSQL's own floor for the same bytes.

For each size, the DEM is enlarged bilinearly (gdal_translate -of VRT -outsize
W H -r bilinear, in the DEM's own pixel type) and loaded as tiles of 256 x 256
without ever writing one huge file: strips of whole tile rows of the VRT are
written as GeoTIFF and loaded by --jobs processes at once, each strip deleted
as soon as it is in the table (raster2pgsql, or where it is missing the
server's own read).  Then, at that size:

- PostgreSQL's floors: reading every tile (detoasting them), and writing the
  same result rows again (CREATE TABLE AS SELECT * FROM the stored result,
  lz4 like the product);
- each operation of --ops not stored (its rows counted) and, where it makes a
  product table, stored (tg_create_result, lz4), with the path it took, its
  phases, what tg_last_run() reports (every field there is: peak memory where
  the server reports it) and the backend's peak resident memory;
- the time per cell beside the floor's: not stored against reading every
  tile, stored against reading plus writing.

--check (the test suite's small run) also asserts that the strips' tiles
cover the grid exactly once each and equal a whole-file load, and that each
product has a row per tile.  Otherwise it measures and reports; nothing
passes or fails on time.  Connection: PG* variables.

    bench/scale_sql.py [DEM] [--sizes 57.6e6,5.1e8,2.06e9 | 17920x28672,...] [--ops hydrology,accumulation_mfd]
                       [--backend auto|gpu|cpu] [--max-memory-mb N] [--threads N] [--jobs N] [--json FILE]
"""

import argparse
import concurrent.futures
import datetime
import json
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_sql import timed  # noqa: E402
from tg_tools import Dem, append_tiles, load_dem, machine_description, psql, run  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TILE = 256
TABLE = "scale_dem"
STORED = "scale_product"
COPY = "scale_copy"

# name: (the coverage call on TABLE, whether it is also measured stored)
OPS = {
    "hydrology": ("tg_hydrology(coverage => '%s')" % TABLE, True),
    "accumulation_mfd": ("tg_flow_accumulation(coverage => '%s', routing => 'mfd-md')" % TABLE, False),
    "accumulation_d8": ("tg_flow_accumulation(coverage => '%s')" % TABLE, False),
    "fill": ("tg_fill(coverage => '%s')" % TABLE, True),
}

# after a timed statement: everything tg_last_run() says, and the backend's
# peak resident memory (its own /proc status: the session is a superuser's)
REPORT = ("SELECT json_build_object('last_run', (SELECT row_to_json(r) FROM tg_last_run() r), "
          "'peak_rss_kb', substring(pg_read_file('/proc/self/status') FROM 'VmHWM:\\s*(\\d+) kB')::bigint)")


def grid_sizes(spec, dem):
    """The grids a --sizes list names: WxH as given, or a number of cells as
    the DEM's shape with sides rounded to whole tiles (the DEM itself where it
    is within 1 % of that many cells)."""
    sizes = []
    for item in (s.strip() for s in spec.split(",") if s.strip()):
        if "x" in item:
            w, h = (int(v) for v in item.split("x"))
        else:
            cells = float(item)
            if abs(cells - dem.cells) <= 0.01 * dem.cells:
                w, h = dem.width, dem.height
            else:
                w = max(1, round(math.sqrt(cells * dem.width / dem.height) / TILE)) * TILE
                h = max(1, round(w * dem.height / dem.width / TILE)) * TILE
        if w < 1 or h < 1:
            raise SystemExit("size %s: not a grid" % item)
        sizes.append((w, h))
    return sizes


def enlarged(dem, width, height, tmp):
    """The DEM resampled bilinearly to width x height, as a VRT (the DEM's own
    file where the size is its own)."""
    if (width, height) == (dem.width, dem.height):
        return dem.path
    vrt = os.path.join(tmp, "dem_%dx%d.vrt" % (width, height))
    run(["gdal_translate", "-q", "-of", "VRT", "-outsize", str(width), str(height), "-r", "bilinear",
         os.path.abspath(dem.path), vrt])
    return vrt


def strip_rows(width, pixel_bytes, strip_mb):
    """Rows of one strip: whole tile rows (so every strip's tiles lie on the
    grid's), about strip_mb of pixels."""
    return max(1, (strip_mb << 20) // (width * pixel_bytes * TILE)) * TILE


def load_in_strips(source, srid, width, height, rows, jobs, tmp, db):
    """TABLE from `source` in strips of `rows` rows, `jobs` at once, each
    strip's GeoTIFF removed once loaded; the seconds it took."""
    t0 = time.perf_counter()
    psql("DROP TABLE IF EXISTS %s; CREATE TABLE %s (rid serial PRIMARY KEY, rast raster)" % (TABLE, TABLE), db)

    def load_strip(y0):
        path = os.path.join(tmp, "strip_%d.tif" % y0)
        try:
            run(["gdal_translate", "-q", "-of", "GTiff", "-srcwin", "0", str(y0), str(width),
                 str(min(rows, height - y0)), source, path])
            os.chmod(path, 0o644)   # the server reads it where raster2pgsql is missing
            append_tiles(path, srid, TABLE, TILE, db)
        finally:
            if os.path.exists(path):
                os.remove(path)

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        list(pool.map(load_strip, range(0, height, rows)))    # raises the first strip's failure
    psql("VACUUM ANALYZE %s" % TABLE, db)
    return time.perf_counter() - t0


def grid_cover(table, width, height, dem_origin, db):
    """How the tiles of `table` lie on the grid of width x height whose upper
    left corner and pixel size are dem_origin (x0, y0, sx, sy): (tiles, tiles
    in distinct places, tiles off the grid or of the wrong size, cells)."""
    x0, y0, sx, sy = dem_origin
    return psql("""
SELECT count(*), count(DISTINCT (c, r)),
       count(*) FILTER (WHERE abs(cf - c) > 1e-6 OR abs(rf - r) > 1e-6 OR c < 0 OR r < 0
                         OR w <> least(%(t)d, %(W)d - c * %(t)d) OR h <> least(%(t)d, %(H)d - r * %(t)d)),
       sum(w::bigint * h)
FROM (SELECT cf, rf, round(cf)::bigint AS c, round(rf)::bigint AS r, w, h
      FROM (SELECT (ST_UpperLeftX(rast) - %(x0).17g) / (%(sx).17g * %(t)d) AS cf,
                   (ST_UpperLeftY(rast) - %(y0).17g) / (%(sy).17g * %(t)d) AS rf,
                   ST_Width(rast) AS w, ST_Height(rast) AS h FROM %(table)s) p) q""" % dict(
        t=TILE, W=width, H=height, x0=x0, y0=y0, sx=sx, sy=sy, table=table), db).split("|")


def check_load(source, dem, width, height, tiles_expected, db, failures):
    """The strips' tiles cover the grid once each, and hold what a whole-file
    load of the same source holds, tile by tile."""
    gt = json.loads(run(["gdalinfo", "-json", source]))["geoTransform"]
    origin = (gt[0], gt[3], gt[1], gt[5])
    n, distinct, off, cells = (int(v) for v in grid_cover(TABLE, width, height, origin, db))
    ok = n == distinct == tiles_expected and off == 0 and cells == width * height
    print("- check: %d tiles (%d expected), %d distinct places, %d off the grid or of the wrong size, "
          "%d cells (%d): %s" % (n, tiles_expected, distinct, off, cells, width * height, "ok" if ok else "FAIL"))
    failures += [] if ok else ["grid cover"]
    whole = Dem(source)
    load_dem(whole, "scale_whole", db, tile=TILE)
    x0, y0, sx, sy = origin
    place = ("round((ST_UpperLeftX(rast) - %.17g) / %.17g)::bigint AS c, "
             "round((ST_UpperLeftY(rast) - %.17g) / %.17g)::bigint AS r, ST_DumpValues(rast, 1) AS v"
             % (x0, sx * TILE, y0, sy * TILE))
    # raster2pgsql's whole-file load leaves out the tiles of nodata only
    differ = int(psql("SELECT count(*) FROM (SELECT %s FROM scale_whole) b LEFT JOIN (SELECT %s FROM %s) a "
                      "USING (c, r) WHERE a.v IS DISTINCT FROM b.v" % (place, place, TABLE), db))
    psql("DROP TABLE scale_whole", db)
    print("- check: tiles of a whole-file load of the same grid that the strips lack or hold otherwise: %d: %s" %
          (differ, "ok" if differ == 0 else "FAIL"))
    failures += [] if differ == 0 else ["strips equal the whole-file load"]


def path_of(last_run):
    """Where the call ran, from tg_last_run(): backend and whether in strips
    (its method says so, e.g. "d8 in strips")."""
    strips = "in strips" in (last_run.get("method") or "")
    return "%s, %s" % (last_run.get("backend") or "?", "strips" if strips else "one grid")


def measure(statements, db, settings):
    ms, line = timed(statements, db, settings, REPORT)
    report = json.loads(line)
    return {"sql_s": ms / 1e3, "last_run": report["last_run"] or {}, "peak_rss_mb": (report["peak_rss_kb"] or 0) / 1024}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dem", nargs="?", default=os.path.join(REPO, "..", "shared", "data", "dem",
                                                           "large_southindia_srilanka_srtm3.tif"))
    ap.add_argument("--sizes", default="57.6e6", help="cells (the DEM's shape) or WxH, comma-separated")
    ap.add_argument("--ops", default="hydrology,accumulation_mfd", help=", ".join(OPS))
    ap.add_argument("--backend", help="terra_gpu.backend (default: the server's, auto)")
    ap.add_argument("--max-memory-mb", type=int, help="terra_gpu.max_memory_mb (low values force strips)")
    ap.add_argument("--threads", type=int, help="terra_gpu.threads")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="strips loaded at once")
    ap.add_argument("--strip-mb", type=int, default=192, help="pixels of one strip file")
    ap.add_argument("--tmp", help="folder for the strip files (default: the system's)")
    ap.add_argument("--check", action="store_true",
                    help="also assert the tiling and the products' row counts (the test suite's run)")
    ap.add_argument("--not-stored", action="store_true",
                    help="measure each operation not stored only (no product table, no write floor)")
    ap.add_argument("--keep", action="store_true", help="keep the last size's tiles (table %s)" % TABLE)
    ap.add_argument("--json", help="write every figure to this file")
    ap.add_argument("--db")
    args = ap.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    unknown = [o for o in ops if o not in OPS]
    if unknown:
        ap.error("unknown operation(s) %s: choose from %s" % (", ".join(unknown), ", ".join(OPS)))
    db = args.db
    os.environ["PGOPTIONS"] = (os.environ.get("PGOPTIONS", "") +
                               " -c client_min_messages=warning -c default_toast_compression=lz4")
    dem = Dem(args.dem)
    pixel_bytes = {"Byte": 1, "Int16": 2, "UInt16": 2, "Float64": 8}.get(dem.gdal_type, 4)
    gpu = psql("SELECT available FROM tg_gpu_info()", db) == "t"
    settings = "".join("SET terra_gpu.%s = %s;\n" % (k, v) for k, v in (
        ("backend", args.backend), ("max_memory_mb", args.max_memory_mb), ("threads", args.threads))
        if v is not None)
    session = settings
    if gpu and args.backend != "cpu":   # CUDA starts in the session, outside the timings
        session += "SELECT tg_slope(rast, backend => 'gpu') IS NOT NULL FROM %s LIMIT 1;\n" % TABLE

    print("### Coverage operations at scale: %s enlarged bilinearly, %s" % (dem.name, datetime.date.today()))
    print()
    print("- Host: %s, %s; settings: %s; strips of %d MB loaded %d at once" % (
        machine_description(), psql("SELECT name FROM tg_gpu_info()", db) if gpu else "no GPU",
        settings.replace("\n", " ").strip() or "defaults", args.strip_mb, args.jobs))
    print()
    results = []
    failures = []
    rows = []
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        os.chmod(tmp, 0o755)
        grids = grid_sizes(args.sizes, dem)
        for k, (width, height) in enumerate(grids):
            cells = width * height
            tiles_expected = -(-width // TILE) * -(-height // TILE)
            source = enlarged(dem, width, height, tmp)
            load_s = load_in_strips(source, dem.srid, width, height, strip_rows(width, pixel_bytes, args.strip_mb),
                                    args.jobs, tmp, db)
            tiles = int(psql("SELECT count(*) FROM %s" % TABLE, db))
            table_mb = float(psql("SELECT pg_total_relation_size('%s') / 1048576.0" % TABLE, db))
            if args.check:
                check_load(source, dem, width, height, tiles_expected, db, failures)
            if source != dem.path:
                os.remove(source)
            size = {"width": width, "height": height, "cells": cells, "tiles": tiles, "table_mb": table_mb,
                    "load_s": load_s, "runs": []}
            size["read_floor_s"] = measure(["SELECT sum(length(rast::bytea)) FROM %s" % TABLE], db, "")["sql_s"]
            size["write_floor_s"] = None
            for op in ops:
                call, storable = OPS[op]
                runs = [("not stored", ["SELECT count(*) FROM %s" % call])]
                if storable and not args.not_stored:
                    runs.append(("stored, lz4", ["SELECT tg_create_result('%s', $q$SELECT * FROM %s$q$, "
                                                 "replace => true, compression => 'lz4')" % (STORED, call)]))
                for result, statements in runs:
                    m = measure(statements, db, session)
                    m.update(op=op, result=result, path=path_of(m["last_run"]))
                    if result != "not stored":
                        product_rows = int(psql("SELECT count(*) FROM %s" % STORED, db))
                        m["product_rows"] = product_rows
                        if args.check:
                            ok = product_rows == tiles_expected
                            print("- check: %s stored has %d rows, %d tiles: %s" %
                                  (op, product_rows, tiles_expected, "ok" if ok else "FAIL"))
                            failures += [] if ok else ["%s rows" % op]
                        if size["write_floor_s"] is None:
                            size["write_floor_s"] = measure(
                                ["DROP TABLE IF EXISTS %s" % COPY,
                                 "CREATE TABLE %s AS SELECT * FROM %s" % (COPY, STORED)], db, "")["sql_s"]
                            psql("DROP TABLE %s" % COPY, db)
                        psql("DROP TABLE %s" % STORED, db)
                        floor = size["read_floor_s"] + size["write_floor_s"]
                    else:
                        floor = size["read_floor_s"]
                    m["ns_per_cell"] = m["sql_s"] / cells * 1e9
                    m["times_floor"] = m["sql_s"] / floor
                    size["runs"].append(m)
                    rows.append((size, m))
                    print("  %.0f M cells: %s %s %.1f s (%s)" % (cells / 1e6, op, result, m["sql_s"], m["path"]),
                          file=sys.stderr, flush=True)
            results.append(size)
            if not (args.keep and k == len(grids) - 1):
                psql("DROP TABLE %s" % TABLE, db)

    print("| cells | grid | tiles | load s | read floor s | write floor s | operation | result | SQL s "
          "| ns/cell | × floor | path | threads | peak RSS MB |")
    print("|---:|---|---:|---:|---:|---:|---|---|---:|---:|---:|---|---:|---:|")
    for size, m in rows:
        print("| %.3g | %d × %d | %d | %.1f | %.2f | %s | %s | %s | %.2f | %.1f | %.2f× | %s | %s | %.0f |" % (
            size["cells"], size["width"], size["height"], size["tiles"], size["load_s"], size["read_floor_s"],
            "%.2f" % size["write_floor_s"] if size["write_floor_s"] is not None else "–", m["op"], m["result"],
            m["sql_s"], m["ns_per_cell"], m["times_floor"], m["path"], m["last_run"].get("threads"),
            m["peak_rss_mb"]))
    print()
    print("× floor: not stored against reading every tile; stored against reading plus writing the same rows.")
    print()
    for size, m in rows:
        extra = {k: v for k, v in m["last_run"].items() if k not in ("phases", "function") and v is not None}
        print("- %.3g cells, %s %s: %s; %s" % (
            size["cells"], m["op"], m["result"], m["last_run"].get("phases"),
            ", ".join("%s %s" % (k, "%.4g" % v if isinstance(v, float) else v) for k, v in extra.items())))
    print("- loading: %s" % "; ".join("%.3g cells %.1f s (%.1f s per 10⁸ cells)" % (
        s["cells"], s["load_s"], s["load_s"] / s["cells"] * 1e8) for s in results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"dem": dem.path, "date": datetime.date.today().isoformat(), "host": machine_description(),
                       "gpu": gpu, "settings": settings, "sizes": results}, f, indent=1)
    if failures:
        print("%d check(s) failed: %s" % (len(failures), ", ".join(failures)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

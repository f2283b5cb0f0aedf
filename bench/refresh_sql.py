#!/usr/bin/env python3
"""tg_refresh against the full call on a real DEM: one tile (or a block of
tiles) raised by a few metres, then the product refreshed (slope: the
tiles within its halo; a tg_hydrology product: in bands of one row of
tiles, those whose tiles or messages changed computed, or in full where it
runs on the GPU, only changed tiles rewritten; a BMMQ index: the trees of
the changed tiles), timed against tg_create_result of the same query run
a second time in its session, warm as the refreshes are (tg_bmmq_build,
once, for the index), with the tiles rewritten and a check
against the full recompute (byte for byte; row for row for the index).
The DEM is loaded as raster2pgsql -k does (all-nodata tiles kept).
Prints a Markdown table; never passes or fails on time.  Connection: PG*
variables.
"""

import argparse
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import Dem, load_dem, machine_description, psql, psql_script  # noqa: E402

PRODUCTS = [
    ("slope", "SELECT * FROM tg_slope(coverage => '%s')"),
    ("tg_hydrology", "SELECT * FROM tg_hydrology(coverage => '%s')"),
]


def timed(sql, db, warm=False):
    """Server-side time (ms, psql's \\timing) of one statement, and its last
    row; warm: of its second run in one session (the first pays for loading
    libraries and, on the GPU, starting the device, which warm refreshes do
    not)."""
    sql = sql.rstrip(";")
    out = psql_script("SET terra_gpu.backend = '%s';\n%s\\timing on\n%s;\n"
                      % (BACKEND, sql + ";\n" if warm else "", sql), db)
    ms = float(re.findall(r"^Time: ([0-9.]+) ms", out, re.M)[-1])
    rows = [line for line in out.splitlines() if line and not line.startswith("Time:")]
    return ms, rows[-1] if rows else ""


def timed_cold_and_warm(refresh, update, db, repeat=1):
    """A refresh as the first call of a session (cold: libraries loaded,
    functions compiled), then `repeat` times again after the same change in
    that session (warm): the cold time (ms), the warm times (ms) and the
    last row."""
    script = "SET terra_gpu.backend = '%s';\n\\timing on\n%s;\n" % (BACKEND, refresh)
    script += ("%s;\n%s;\n" % (update, refresh)) * repeat
    out = psql_script(script, db)
    times = [float(t) for t in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]
    rows = [line for line in out.splitlines() if line and not line.startswith("Time:")]
    # the refreshes' times: the first, then every other one (an update before each)
    refreshes = times[-(2 * repeat + 1):][0::2]
    return refreshes[0], refreshes[1:], rows[-1]


def differing(a, b, db):
    cols = psql("SELECT string_agg(format('x.%%1$I::bytea IS DISTINCT FROM y.%%1$I::bytea', attname), ' OR ') "
                "FROM pg_attribute WHERE attrelid = '%s'::regclass AND atttypid = 'raster'::regtype "
                "AND NOT attisdropped" % a, db)
    return int(psql("SELECT count(*) FROM %s x FULL JOIN %s y USING (rid) "
                    "WHERE x.rid IS NULL OR y.rid IS NULL OR %s" % (a, b, cols), db))


def bmmq_differing(a, b, db):
    """Tile and node rows of index a that index b lacks, and the other way round."""
    n = 0
    for table, cols in (("bmmq_tile", "tile_id, levels, width, height, upperleft_x, upperleft_y, scale_x, scale_y"),
                        ("bmmq_node", "tile_id, pos, level, morton, min_bin, max_bin, fc_pos, parent_min, parent_max")):
        rows = ("(SELECT %s FROM terra_gpu.%s WHERE index_id = (SELECT id FROM terra_gpu.bmmq_index WHERE name = '%%s'))"
                % (cols, table))
        for x, y in ((a, b), (b, a)):
            n += int(psql("SELECT count(*) FROM (%s EXCEPT ALL %s) d" % (rows % x, rows % y), db))
    return n


def main():
    global BACKEND
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dem", help="a DEM file, or with --table the name it is reported by")
    ap.add_argument("--table", help="refresh products of this tiled table as it is (its tile id column rid, "
                    "raster column rast: scale_sql.py --keep leaves one) instead of loading the DEM; the "
                    "table keeps the raised tile")
    ap.add_argument("--db")
    ap.add_argument("--tile", type=int, default=256)
    ap.add_argument("--raise-m", type=float, default=5.0)
    ap.add_argument("--block", type=int, default=1,
                    help="raise a block of BLOCK x BLOCK tiles around the middle tile instead of that tile alone")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--repeat", type=int, default=1,
                    help="warm refreshes timed (each after the same change again): their median is reported")
    ap.add_argument("--products", default="slope,tg_hydrology,bmmq",
                    help="of slope, tg_hydrology, bmmq (a BMMQ index of 16 equal bins)")
    args = ap.parse_args()
    BACKEND = args.backend
    db = args.db
    if args.table:
        table = args.table
        dem_name = args.dem
        width, height, tile_w, tile_h = (int(v) for v in psql(
            "SELECT round((max(ST_UpperLeftX(rast) + ST_Width(rast) * ST_ScaleX(rast)) - min(ST_UpperLeftX(rast))) "
            "/ min(ST_ScaleX(rast))), round((min(ST_UpperLeftY(rast) + ST_Height(rast) * ST_ScaleY(rast)) "
            "- max(ST_UpperLeftY(rast))) / min(ST_ScaleY(rast))), max(ST_Width(rast)), max(ST_Height(rast)) "
            "FROM %s" % table, db).split("|"))
    else:
        dem = Dem(args.dem)
        table = "refresh_bench"
        load_dem(dem, table, db, tile=args.tile, keep_empty=True)
        dem_name, width, height = dem.name, dem.width, dem.height
        tile_w = tile_h = args.tile
    ntiles = int(psql("SELECT count(*) FROM %s" % table, db))
    # the tile nearest the middle of the coverage, and the block of tiles
    # whose corners lie within block / 2 tiles of its corner (it and its
    # neighbours, block x block of them where the tiles are of one size)
    tile = psql("WITH c AS (SELECT avg(ST_UpperLeftX(rast)) AS x, avg(ST_UpperLeftY(rast)) AS y FROM %s) "
                "SELECT rid FROM %s, c ORDER BY (ST_UpperLeftX(rast) - c.x) ^ 2 + (ST_UpperLeftY(rast) - c.y) ^ 2, rid "
                "LIMIT 1" % (table, table), db)
    lo, hi = -((args.block - 1) // 2), args.block // 2
    tiles = psql("WITH m AS (SELECT ST_UpperLeftX(rast) AS x, ST_UpperLeftY(rast) AS y, ST_Width(rast) * ST_ScaleX(rast) AS w, "
                 "ST_Height(rast) * ST_ScaleY(rast) AS h FROM %s WHERE rid = %s) "
                 "SELECT string_agg(rid::text, ',' ORDER BY rid) FROM %s, m "
                 "WHERE round((ST_UpperLeftX(rast) - m.x) / m.w) BETWEEN %d AND %d "
                 "AND round((ST_UpperLeftY(rast) - m.y) / m.h) BETWEEN %d AND %d"
                 % (table, tile, table, lo, hi, lo, hi), db)
    raised = "tile %s" % tile if args.block == 1 else "%d tiles around tile %s" % (len(tiles.split(",")), tile)
    print("# %s: %d x %d = %d cells, %d tiles of %d x %d, %s raised %g m; backend %s; %s" % (
        dem_name, width, height, width * height, ntiles, tile_w, tile_h, raised, args.raise_m,
        args.backend, machine_description()))
    print()
    print("| product | full (tg_create_result, warm) ms | refresh ms, cold session | refresh ms, warm (median) | warm / full "
          "| mode | tiles computed | tiles rewritten | differing from full |")
    print("|---|---|---|---|---|---|---|---|---|")
    wanted = args.products.split(",")
    made = []
    for name, query in PRODUCTS:
        if name not in wanted:
            continue
        product = "refresh_bench_" + re.sub(r"\W", "_", name)
        full_ms, _ = timed("SELECT tg_create_result('%s', $q$%s$q$, replace => true)" % (product, query % table), db,
                           warm=True)
        made.append((name, query, product, full_ms))
    if "bmmq" in wanted:
        bmmq_ms, _ = timed("SELECT tg_bmmq_build('refresh_bench_ix', '%s', nbins => 16)" % table, db)
    update = ("UPDATE %s SET rast = ST_MapAlgebra(rast, 1, NULL, '[rast] + %g') WHERE rid IN (%s)"
              % (table, args.raise_m, tiles))
    psql(update, db)
    seams = []
    spreads = []
    for name, query, product, full_ms in made:
        cold, warm, row = timed_cold_and_warm("SELECT mode, tiles_computed, tiles_rewritten FROM tg_refresh('%s')" % product,
                                              update, db, args.repeat)
        ms = statistics.median(warm)
        if len(warm) > 1:
            spreads.append("%s: %d warm refreshes, %.0f to %.0f ms (%.1f to %.1f %% of the full call)"
                           % (name, len(warm), min(warm), max(warm), 100.0 * min(warm) / full_ms,
                              100.0 * max(warm) / full_ms))
        mode, computed, rewritten = row.split("|")
        seam = psql("SELECT count(DISTINCT band), coalesce(sum(pg_column_size(x.*)), 0), "
                    "pg_total_relation_size('%s') FROM terra_gpu.product_seam x WHERE x.product = '%s'::regclass"
                    % (product, product), db).split("|")
        if int(seam[0]) > 0:
            seams.append("%s: %s bands, seams %.2f MB (rows as stored), product %.1f MB: %.2f %%"
                         % (name, seam[0], int(seam[1]) / 1e6, int(seam[2]) / 1e6, 100.0 * int(seam[1]) / int(seam[2])))
        timed("SELECT tg_create_result('%s_full', $q$%s$q$, replace => true)" % (product, query % table), db)
        diff = differing(product, product + "_full", db)
        print("| %s | %.0f | %.0f | %.0f | %.1f %% | %s | %s | %s | %d |"
              % (name, full_ms, cold, ms, 100.0 * ms / full_ms, mode, computed, rewritten, diff))
        psql("DROP TABLE %s, %s_full" % (product, product), db)
    if "bmmq" in wanted:
        cold, warm, _ = timed_cold_and_warm("SELECT tg_bmmq_refresh('refresh_bench_ix')", update, db, args.repeat)
        ms = statistics.median(warm)
        changed = int(psql("SELECT count(*) FROM terra_gpu.bmmq_tile t JOIN terra_gpu.bmmq_index i ON i.id = t.index_id "
                           "WHERE i.name = 'refresh_bench_ix' AND t.xmin = (SELECT xmin FROM terra_gpu.bmmq_index "
                           "WHERE name = 'refresh_bench_ix')", db))
        psql("SELECT tg_bmmq_build('refresh_bench_ix_full', '%s', bins => (SELECT bounds FROM terra_gpu.bmmq_index "
             "WHERE name = 'refresh_bench_ix'))" % table, db)
        diff = bmmq_differing("refresh_bench_ix", "refresh_bench_ix_full", db)
        print("| BMMQ index (16 bins) | %.0f | %.0f | %.0f | %.1f %% | incremental | %d | %d | %d |"
              % (bmmq_ms, cold, ms, 100.0 * ms / bmmq_ms, changed, changed, diff))
        psql("SELECT tg_bmmq_drop('refresh_bench_ix'), tg_bmmq_drop('refresh_bench_ix_full')", db)
    if seams or spreads:
        print()
        for line in seams + spreads:
            print("- " + line)
    if not args.table:
        psql("DROP TABLE %s" % table, db)


if __name__ == "__main__":
    main()

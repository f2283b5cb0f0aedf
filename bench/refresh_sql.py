#!/usr/bin/env python3
"""tg_refresh against the full call on a real DEM: one tile raised by a few
metres, then the product refreshed (slope: the tiles within its halo; a
tg_hydrology product: recomputed in full, only changed tiles rewritten),
timed against tg_create_result of the same query, with the tiles rewritten
and a byte-for-byte check against the full recompute.  Prints a Markdown
table; never passes or fails on time.  Connection: PG* variables.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import Dem, load_dem, machine_description, psql, psql_script  # noqa: E402

PRODUCTS = [
    ("slope", "SELECT * FROM tg_slope(coverage => '%s')"),
    ("tg_hydrology", "SELECT * FROM tg_hydrology(coverage => '%s')"),
]


def timed(sql, db):
    """Server-side time (ms, psql's \\timing) of one statement, and its last row."""
    out = psql_script("SET terra_gpu.backend = '%s';\n\\timing on\n%s;\n" % (BACKEND, sql.rstrip(";")), db)
    ms = float(re.findall(r"^Time: ([0-9.]+) ms", out, re.M)[-1])
    rows = [line for line in out.splitlines() if line and not line.startswith("Time:")]
    return ms, rows[-1] if rows else ""


def differing(a, b, db):
    cols = psql("SELECT string_agg(format('x.%%1$I::bytea IS DISTINCT FROM y.%%1$I::bytea', attname), ' OR ') "
                "FROM pg_attribute WHERE attrelid = '%s'::regclass AND atttypid = 'raster'::regtype "
                "AND NOT attisdropped" % a, db)
    return int(psql("SELECT count(*) FROM %s x FULL JOIN %s y USING (rid) "
                    "WHERE x.rid IS NULL OR y.rid IS NULL OR %s" % (a, b, cols), db))


def main():
    global BACKEND
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dem")
    ap.add_argument("--db")
    ap.add_argument("--tile", type=int, default=256)
    ap.add_argument("--raise-m", type=float, default=5.0)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--products", default="slope,tg_hydrology")
    args = ap.parse_args()
    BACKEND = args.backend
    db = args.db
    dem = Dem(args.dem)
    table = "refresh_bench"
    load_dem(dem, table, db, tile=args.tile)
    ntiles = int(psql("SELECT count(*) FROM %s" % table, db))
    # the tile in the middle of the coverage
    tile = psql("SELECT rid FROM %s ORDER BY ST_UpperLeftY(rast), ST_UpperLeftX(rast) OFFSET %d LIMIT 1"
                % (table, ntiles // 2), db)
    print("# %s: %d x %d = %d cells, %d tiles of %d x %d, tile %s raised %g m; backend %s; %s" % (
        dem.name, dem.width, dem.height, dem.cells, ntiles, args.tile, args.tile, tile, args.raise_m,
        args.backend, machine_description()))
    print()
    print("| product | full (tg_create_result) ms | tg_refresh ms | refresh / full | mode | tiles computed | tiles rewritten | differing from full |")
    print("|---|---|---|---|---|---|---|---|")
    wanted = args.products.split(",")
    made = []
    for name, query in PRODUCTS:
        if name not in wanted:
            continue
        product = "refresh_bench_" + re.sub(r"\W", "_", name)
        full_ms, _ = timed("SELECT tg_create_result('%s', $q$%s$q$, replace => true)" % (product, query % table), db)
        made.append((name, query, product, full_ms))
    psql("UPDATE %s SET rast = ST_MapAlgebra(rast, 1, NULL, '[rast] + %g') WHERE rid = %s"
         % (table, args.raise_m, tile), db)
    for name, query, product, full_ms in made:
        ms, row = timed("SELECT mode, tiles_computed, tiles_rewritten FROM tg_refresh('%s')" % product, db)
        mode, computed, rewritten = row.split("|")
        timed("SELECT tg_create_result('%s_full', $q$%s$q$, replace => true)" % (product, query % table), db)
        diff = differing(product, product + "_full", db)
        print("| %s | %.0f | %.0f | %.1f %% | %s | %s | %s | %d |"
              % (name, full_ms, ms, 100.0 * ms / full_ms, mode, computed, rewritten, diff))
        psql("DROP TABLE %s, %s_full" % (product, product), db)
    psql("DROP TABLE %s" % table, db)


if __name__ == "__main__":
    main()

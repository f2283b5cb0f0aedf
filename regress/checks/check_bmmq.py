#!/usr/bin/env python3
"""BMMQ-tree queries against brute force on real DEMs, through SQL.

For each DEM, loaded tiled (256 x 256 by default) with raster2pgsql, and a
second co-registered raster (its per-tile slope), build BMMQ-tree indexes
with terra_gpu and check:
  - range (window) queries: the cells covered by the returned quadrants are
    exactly the cells whose extent meets the window, each once, and every
    quadrant's bins are those of its cells;
  - region-of-interest queries: for bin-aligned ranges the quadrants cover
    exactly the cells with a value in the range (no boundary rows); for any
    range, refine => true gives exactly those cells, and without it the
    inside quadrants are a subset and inside + boundary a superset;
  - compound AND/OR queries over both indexes, refined, equal brute force.
Fails (exit 1) when one does not hold.  Connection: PG* variables.
"""

import bisect
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import check, failures, Dem, dem_checks_arguments, load_dem, psql  # noqa: E402

def tiles_of(table, db):
    """{rid: (ulx, uly, sx, sy, w, h, values)} with values row-major, None = nodata."""
    out = {}
    rows = psql("SELECT rid, ST_UpperLeftX(rast), ST_UpperLeftY(rast), ST_ScaleX(rast), "
                "ST_ScaleY(rast), ST_Width(rast), ST_Height(rast), "
                "array_to_string(ST_DumpValues(rast, 1, true), ',', 'N') FROM %s" % table, db)
    for line in rows.splitlines():
        f = line.split("|")
        vals = [None if v == "N" else float(v) for v in f[7].split(",")]
        out[int(f[0])] = (float(f[1]), float(f[2]), float(f[3]), float(f[4]), int(f[5]), int(f[6]), vals)
    return out


def deinterleave(k):
    x = y = 0
    for b in range(32):
        x |= ((k >> (2 * b)) & 1) << b
        y |= ((k >> (2 * b + 1)) & 1) << b
    return x, y


def quadrant_cells(levels, level, morton):
    side = 1 << (levels - level)
    qx, qy = deinterleave(morton)
    return [(qx * side + dx, qy * side + dy) for dy in range(side) for dx in range(side)]


def expand(rows, levels_of):
    """Quadrant rows (tile, level, morton, ...) -> list of (tile, col, row)."""
    cells = []
    for r in rows:
        t, level, morton = int(r[0]), int(r[1]), int(r[2])
        cells += [(t, c, rr) for c, rr in quadrant_cells(levels_of[t], level, morton)]
    return cells


def query(sql, db):
    return [line.split("|") for line in psql(sql, db).splitlines() if line]


def run_dem(dem, args):
    db = args.db
    rng = random.Random(args.seed)
    base = "bmmq_" + dem.name
    load_dem(dem, base, db, tile=args.tile)
    psql("DROP TABLE IF EXISTS %s_slope; CREATE TABLE %s_slope AS SELECT rid, "
         "tg_slope(rast, scale => %r) AS rast FROM %s" % (base, base, dem.scale, base), db)
    psql("SELECT tg_bmmq_drop(n, true) FROM unnest(ARRAY['%s', '%s_slope']) n" % (base, base), db)
    t0 = time.time()
    psql("SELECT tg_bmmq_build('%s', '%s', nbins => 8, backend => %s)" % (base, base, args.backend), db)
    build_s = time.time() - t0
    psql("SELECT tg_bmmq_build('%s_slope', '%s_slope', bins => ARRAY[5, 10, 20, 30, 45], backend => %s)"
         % (base, base, args.backend), db)
    info = query("SELECT node_count, cell_count, build_backend, bounds FROM terra_gpu.bmmq_index "
                 "WHERE name = '%s'" % base, db)[0]
    bounds = [float(v) for v in info[3].strip("{}").split(",")]
    print("%s: %d tiles of %d, %s nodes for %s cells (%.3f per cell), built in %.2f s on %s"
          % (dem.name, int(psql("SELECT count(*) FROM %s" % base, db)), args.tile, info[0], info[1],
             int(info[0]) / int(info[1]), build_s, info[2]))

    tiles = tiles_of(base, db)
    slope = tiles_of(base + "_slope", db)
    levels_of = {int(r[0]): int(r[1]) for r in query(
        "SELECT tile_id, levels FROM terra_gpu.bmmq_tile t JOIN terra_gpu.bmmq_index i "
        "ON i.id = t.index_id WHERE i.name = '%s'" % base, db)}
    nb = len(bounds)

    def code(v):
        return nb + 1 if v is None else bisect.bisect_right(bounds, v)

    def value(tiles_, t, c, r):
        ulx, uly, sx, sy, w, h, vals = tiles_[t]
        return vals[r * w + c]

    # ---- range queries
    x0 = min(t[0] for t in tiles.values())
    y1 = max(t[1] for t in tiles.values())
    x1 = max(t[0] + t[4] * t[2] for t in tiles.values())
    y0 = min(t[1] + t[5] * t[3] for t in tiles.values())
    ok_cells = ok_bins = True
    total = 0
    for _ in range(args.windows):
        wx = sorted(rng.uniform(x0 - (x1 - x0) * 0.05, x1) for _ in range(2))
        wy = sorted(rng.uniform(y0, y1 + (y1 - y0) * 0.05) for _ in range(2))
        # keep windows moderate: at most a fifth of the extent on a side
        wx[1] = min(wx[1], wx[0] + (x1 - x0) / 5)
        wy[1] = min(wy[1], wy[0] + (y1 - y0) / 5)
        rows = query("SELECT tile_id, level, morton, min_bin, max_bin FROM tg_bmmq_range('%s', "
                     "ST_MakeEnvelope(%r, %r, %r, %r, %d))" % (base, wx[0], wy[0], wx[1], wy[1], dem.srid), db)
        got = expand(rows, levels_of)
        want = set()
        for t, (ulx, uly, sx, sy, w, h, vals) in tiles.items():
            cols = [c for c in range(w) if ulx + c * sx <= wx[1] and ulx + (c + 1) * sx >= wx[0]]
            rws = [r for r in range(h) if uly + (r + 1) * sy <= wy[1] and uly + r * sy >= wy[0]]
            want.update((t, c, r) for c in cols for r in rws)
        ok_cells &= len(got) == len(set(got)) and set(got) == want
        total += len(want)
        for r in rows:
            t, level, morton, mn, mx = (int(v) for v in r)
            for c, rr in quadrant_cells(levels_of[t], level, morton):
                k = code(value(tiles, t, c, rr))
                ok_bins &= mn <= k <= mx
    check(ok_cells, "range: %d windows, %d cells: quadrants cover exactly the window's cells"
          % (args.windows, total))
    check(ok_bins, "range: every quadrant's bins hold its cells' codes")

    # ---- region of interest, one index
    all_cells = [(t, c, r) for t, v in tiles.items() for r in range(v[5]) for c in range(v[4])]

    def truth(lo, hi, tiles_=tiles):
        return {(t, c, r) for (t, c, r) in all_cells
                if value(tiles_, t, c, r) is not None and lo <= value(tiles_, t, c, r) < hi}

    edges = ["'-Infinity'"] + [repr(b) for b in bounds] + ["'Infinity'"]
    ok_aligned = True
    for _ in range(args.ranges):
        i, j = sorted(rng.sample(range(len(edges)), 2))
        lo, hi = float(edges[i].strip("'")), float(edges[j].strip("'"))
        rows = query("SELECT tile_id, level, morton, boundary FROM tg_bmmq_roi('%s', %s, %s)"
                     % (base, edges[i], edges[j]), db)
        got = expand([r for r in rows if r[3] == "f"], levels_of)
        ok_aligned &= not any(r[3] == "t" for r in rows) and len(got) == len(set(got)) \
            and set(got) == truth(lo, hi)
    check(ok_aligned, "roi: %d bin-aligned ranges: inside quadrants = brute force, no boundary rows"
          % args.ranges)

    vmin = min(v for t in tiles.values() for v in t[6] if v is not None)
    vmax = max(v for t in tiles.values() for v in t[6] if v is not None)
    ok_refined = ok_bracket = True
    for _ in range(args.ranges):
        lo, hi = sorted(rng.uniform(vmin, vmax) for _ in range(2))
        want = truth(lo, hi)
        rows = query("SELECT tile_id, level, morton, boundary FROM tg_bmmq_roi('%s', %r, %r, refine => true)"
                     % (base, lo, hi), db)
        got = expand(rows, levels_of)
        ok_refined &= len(got) == len(set(got)) and set(got) == want
        rows = query("SELECT tile_id, level, morton, boundary FROM tg_bmmq_roi('%s', %r, %r)"
                     % (base, lo, hi), db)
        inside = set(expand([r for r in rows if r[3] == "f"], levels_of))
        maybe = set(expand(rows, levels_of))
        ok_bracket &= inside <= want <= maybe
    check(ok_refined, "roi: %d arbitrary ranges, refined = brute force" % args.ranges)
    check(ok_bracket, "roi: unrefined inside <= brute force <= inside + boundary")

    # ---- compound
    for combine in ("and", "or"):
        ok = True
        for _ in range(max(2, args.ranges // 2)):
            lo, hi = sorted(rng.uniform(vmin, vmax) for _ in range(2))
            slo, shi = sorted(rng.uniform(0, 40) for _ in range(2))
            a, b = truth(lo, hi), truth(slo, shi, slope)
            want = a & b if combine == "and" else a | b
            rows = query("SELECT tile_id, level, morton, boundary FROM tg_bmmq_roi(ARRAY['%s', '%s_slope'], "
                         "ARRAY[%r, %r], ARRAY[%r, %r], '%s', refine => true)"
                         % (base, base, lo, slo, hi, shi, combine), db)
            got = expand(rows, levels_of)
            ok &= len(got) == len(set(got)) and set(got) == want and not any(r[3] == "t" for r in rows)
        check(ok, "compound %s over elevation and slope, refined = brute force" % combine)

    if not args.keep:
        psql("SELECT tg_bmmq_drop(n) FROM unnest(ARRAY['%s', '%s_slope']) n; DROP TABLE %s, %s_slope"
             % (base, base, base, base), db)


def main():
    ap = dem_checks_arguments(__doc__)
    ap.add_argument("--tile", type=int, default=256)
    ap.add_argument("--windows", type=int, default=12)
    ap.add_argument("--ranges", type=int, default=8)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--backend", default="NULL", help="SQL literal for the build's backend argument")
    ap.add_argument("--keep", action="store_true", help="keep the tables and indexes")
    args = ap.parse_args()
    for path in args.dems:
        run_dem(Dem(path), args)
    print("bmmq checks: %s" % ("all ok" if failures() == 0 else "%d FAILED" % failures()))
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())

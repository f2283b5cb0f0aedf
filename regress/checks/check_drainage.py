#!/usr/bin/env python3
"""Stream order, flow length, HAND and the wetness index on real DEMs, against
an independent reference written here from the definitions and computed from
terra_gpu's own D8 codes and accumulation (so both walk the same network):

  - Strahler and Shreve order of the stream cells (accumulation >= threshold),
    cell for cell;
  - HAND: the filled surface's height above the first stream cell downstream;
  - on projected DEMs, the flow length downstream (to the end of the D8 path)
    and upstream (the longest path from the divide), within float rounding;
  - the wetness index: ln(a / max(tan b, min_slope)) from tg_flow_accumulation
    in specific catchment area and the Horn slope of the filled surface;
  - stream links (tg_stream_links): one per source or confluence, with the
    orders, upstream cells and cell count of the link walked here;
  - sub-basins per link and basins of every outlet label for label; the basin
    of one gauge is its watershed, and a second gauge nests inside it;
  - the coverage form on 256 x 256 tiles equals the value form;
  - on a GPU machine, the GPU backend gives the CPU's values.

The reference visits cells in order of accumulation: on a D8 tree a receiver
always drains more cells than each of its donors.

    regress/checks/check_drainage.py DEM.tif [DEM.tif ...] [--db DB]
Exit status 1 on any mismatch.
"""

import math
import os
import sys
from array import array

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import (RASTER_BYTES_FUNCTION, Dem, check, checks_exit_status,  # noqa: E402
                      dem_checks_arguments, load_dem, psql, psql_script, sql_raster_band)

THRESHOLD = 500         # cells
DX = (1, 1, 0, -1, -1, -1, 0, 1)    # ESRI codes 1, 2, 4 ... 128: E, SE, S, SW, W, NW, N, NE
DY = (0, 1, 1, 1, 0, -1, -1, -1)


def receivers(codes, w):
    """The receiver of every cell (-1: none), and which cells are nodata."""
    n = len(codes)
    rec = array("q", [-1]) * n
    for i, c in enumerate(codes):
        if c not in (0, 255):
            k = c.bit_length() - 1
            rec[i] = i + DY[k] * w + DX[k]
    return rec


def reference(codes, rec, acc, z, w, h, spacing):
    """Strahler, Shreve, HAND and (with a spacing) both flow lengths, from the definitions."""
    n = w * h
    valid = [c != 255 for c in codes]
    stream = [valid[i] and acc[i] >= THRESHOLD for i in range(n)]
    up_order = sorted((i for i in range(n) if valid[i]), key=lambda i: acc[i])

    def step(i):
        k = codes[i].bit_length() - 1
        dx, dy = spacing
        return math.hypot(dx * abs(DX[k]), dy * abs(DY[k]))

    # donors before receivers
    strahler, shreve = [0] * n, [0] * n
    top, at_top, total = [0] * n, [0] * n, [0] * n
    longest = [0.0] * n
    for i in up_order:
        if stream[i]:
            strahler[i] = 1 if top[i] == 0 else top[i] + 1 if at_top[i] >= 2 else top[i]
            shreve[i] = total[i] or 1
        r = rec[i]
        if r < 0:
            continue
        if stream[i] and stream[r]:
            if strahler[i] > top[r]:
                top[r], at_top[r] = strahler[i], 1
            elif strahler[i] == top[r]:
                at_top[r] += 1
            total[r] += shreve[i]
        if spacing:
            longest[r] = max(longest[r], longest[i] + step(i))
    # receivers before donors
    down = [0.0] * n
    base = [math.nan] * n
    for i in reversed(up_order):
        r = rec[i]
        if spacing and r >= 0:
            down[i] = down[r] + step(i)
        base[i] = z[i] if stream[i] else (base[r] if r >= 0 else math.nan)
    hand = [z[i] - base[i] if valid[i] else math.nan for i in range(n)]
    for i in range(n):
        if not valid[i]:
            down[i] = longest[i] = math.nan
    return strahler, shreve, hand, (down if spacing else None), (longest if spacing else None), valid


def walk_links(rec, strahler):
    """Each link as the list of its own cells, top down: a link starts at a stream cell with no or
    several stream donors and runs down to the cell above the next such cell or the stream's end."""
    n = len(rec)
    stream = [s > 0 for s in strahler]
    donors = [0] * n
    for i in range(n):
        if stream[i] and rec[i] >= 0 and stream[rec[i]]:
            donors[rec[i]] += 1
    links = []
    for h in range(n):
        if stream[h] and donors[h] != 1:
            cells = [h]
            while rec[cells[-1]] >= 0 and stream[rec[cells[-1]]] and donors[rec[cells[-1]]] == 1:
                cells.append(rec[cells[-1]])
            links.append(cells)
    return links


def reference_links(links, rec, acc, strahler, shreve):
    """Each link as (Strahler, Shreve, upstream cells at its last cell, flows into another link, cells)."""
    return [(strahler[c[0]], shreve[c[0]], acc[c[-1]], rec[c[-1]] >= 0 and strahler[rec[c[-1]]] > 0, len(c))
            for c in links]


def reference_basins(links, codes, rec, acc):
    """Sub-basin labels (the link whose cells a path meets first; links numbered by their first
    cell in row-major order) and outlet-basin labels (path ends numbered in row-major order)."""
    n = len(codes)
    link = [0] * n
    for k, cells in enumerate(links):
        for c in cells:
            link[c] = k + 1
    ends = {}
    for i in range(n):
        if codes[i] == 0:
            ends[i] = len(ends) + 1
    sub, outlet = [0] * n, [0] * n
    for i in sorted((i for i in range(n) if codes[i] != 255), key=lambda i: -acc[i]):
        r = rec[i]
        sub[i] = link[i] if link[i] else (sub[r] if r >= 0 else 0)
        outlet[i] = ends[i] if r < 0 else outlet[r]
    return sub, outlet


def wetness(acc_sca, z, valid, w, h, spacing, min_slope):
    dx, dy = spacing
    out = [math.nan] * (w * h)
    for y in range(h):
        for x in range(w):
            i = y * w + x
            if not valid[i]:
                continue

            def at(xx, yy):
                if 0 <= xx < w and 0 <= yy < h and valid[yy * w + xx]:
                    return z[yy * w + xx]
                return z[i]
            a, b, c = at(x - 1, y - 1), at(x, y - 1), at(x + 1, y - 1)
            d, f = at(x - 1, y), at(x + 1, y)
            g, hh, k = at(x - 1, y + 1), at(x, y + 1), at(x + 1, y + 1)
            gy = ((g + hh + hh + k) - (a + b + b + c)) / (8 * dy)
            gx = ((c + f + f + k) - (a + d + d + g)) / (8 * dx)
            out[i] = math.log(acc_sca[i] / max(math.hypot(gx, gy), min_slope))
    return out


def close(a, b, rel):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= rel * max(1.0, abs(b))


def agree(name, got, want, rel=None):
    n = len(want)
    bad = [i for i in range(n) if not (close(got[i], want[i], rel) if rel is not None else got[i] == want[i])]
    check(not bad, "%s: %d of %d cells equal the reference%s%s"
          % (name, n - len(bad), n, " within %g relative" % rel if rel else "",
             "" if not bad else " (first difference at cell %d: %r, reference %r)" % (bad[0], got[bad[0]], want[bad[0]])))


def nodata_nan(band, marker=-9999.0):
    return [math.nan if v == marker else v for v in band.pixels]


def one_dem(path, db):
    dem = Dem(path)
    print("%s: %d x %d cells%s" % (dem.name, dem.width, dem.height, ", geographic" if dem.geographic else ""))
    load_dem(dem, "drn_whole", db)
    load_dem(dem, "drn_tiles", db, tile=256)
    w, h = dem.width, dem.height
    codes = sql_raster_band("(SELECT tg_flow_direction(rast, backend => 'cpu') FROM drn_whole)", "B", db).pixels
    acc = sql_raster_band("(SELECT tg_flow_accumulation(rast, backend => 'cpu') FROM drn_whole)", "d", db).pixels
    filled = sql_raster_band("(SELECT ST_MapAlgebra(tg_fill(rast, backend => 'cpu'), 1, '64BF', '[rast]') "
                             "FROM drn_whole)", "d", db).pixels
    spacing = None if dem.geographic else (dem.pixel_width, dem.pixel_height)
    rec = receivers(codes, w)
    strahler, shreve, hand, down, longest, valid = reference(codes, rec, acc, filled, w, h, spacing)
    print("  %d stream cells (%d cells or more), highest Strahler order %d"
          % (sum(1 for s in strahler if s), THRESHOLD, max(strahler)))

    def ours(fn, typecode="f"):
        band = sql_raster_band("(SELECT %s FROM drn_whole)" % fn, typecode, db)
        return list(band.pixels) if typecode == "I" else nodata_nan(band)

    agree("Strahler order", ours("tg_stream_order(rast, threshold => %d)" % THRESHOLD, "I"), strahler)
    agree("Shreve order", ours("tg_stream_order(rast, threshold => %d, ordering => 'shreve')" % THRESHOLD, "I"),
          shreve)
    agree("HAND", ours("tg_hand(rast, threshold => %d)" % THRESHOLD), hand, 1e-6)
    if spacing:
        agree("flow length downstream", ours("tg_flow_length(rast)"), down, 1e-6)
        agree("flow length upstream", ours("tg_flow_length(rast, direction => 'upstream')"), longest, 1e-6)
        sca = sql_raster_band("(SELECT tg_flow_accumulation(rast, routing => 'mfd-md', units => 'sca', "
                              "backend => 'cpu') FROM drn_whole)", "d", db).pixels
        agree("wetness index", ours("tg_wetness_index(rast)"), wetness(sca, filled, valid, w, h, spacing, 0.001),
              1e-5)

    links = walk_links(rec, strahler)
    want = sorted(reference_links(links, rec, acc, strahler, shreve))
    rows = psql("SELECT strahler, shreve, upstream_cells, downstream_id IS NOT NULL, "
                "ST_NPoints(geom) - (downstream_id IS NOT NULL)::int - (length = 0 AND downstream_id IS NULL)::int "
                "FROM drn_whole, tg_stream_links(rast, threshold => %d)" % THRESHOLD, db).splitlines()
    got = sorted((int(a), int(b), float(c), d == "t", int(e)) for a, b, c, d, e in (r.split("|") for r in rows))
    check(got == want, "stream links: %d links, each with the reference's orders, upstream cells, confluence "
          "and cells (reference: %d links)" % (len(got), len(want)))

    sub, outlet = reference_basins(links, codes, rec, acc)
    agree("sub-basins", ours("tg_subbasins(rast, threshold => %d)" % THRESHOLD, "I"), sub)
    agree("basins of every outlet", ours("tg_basins(rast)", "I"), outlet)
    # a gauge at the cell of highest accumulation in the middle third of the raster: its basin is
    # its watershed; a second gauge upstream of it, where about half of that drains, takes its own
    # watershed out of the first one's basin (nested gauges)
    g1 = max((i for i in range(w * h) if w // 3 <= i % w < 2 * w // 3 and h // 3 <= i // w < 2 * h // 3
              and codes[i] != 255), key=lambda i: (acc[i], -i))
    inside = [False] * (w * h)
    for i in sorted((i for i in range(w * h) if codes[i] != 255), key=lambda i: -acc[i]):
        inside[i] = i == g1 or (rec[i] >= 0 and inside[rec[i]])
    g2 = min((i for i in range(w * h) if inside[i] and i != g1), key=lambda i: (abs(acc[i] - acc[g1] / 2), i))
    inside2 = [False] * (w * h)
    for i in sorted((i for i in range(w * h) if inside[i]), key=lambda i: -acc[i]):
        inside2[i] = i == g2 or (rec[i] >= 0 and inside2[rec[i]])
    n1, n2 = sum(inside), sum(inside2)
    points = "ARRAY[ST_PixelAsCentroid(rast, %d, %d), ST_PixelAsCentroid(rast, %d, %d)]" % (
        g1 % w + 1, g1 // w + 1, g2 % w + 1, g2 // w + 1)
    same = psql("SELECT ST_DumpValues(tg_basins(rast, ARRAY[ST_PixelAsCentroid(rast, %d, %d)])) = "
                "ST_DumpValues(ST_MapAlgebra(tg_watershed(rast, ST_PixelAsCentroid(rast, %d, %d)), 1, '32BUI', "
                "'[rast]', 0)) FROM drn_whole" % (g1 % w + 1, g1 // w + 1, g1 % w + 1, g1 // w + 1), db)
    check(same == "t", "the basin of one gauge (%d cells) equals its watershed" % n1)
    counts = psql("SELECT array_agg(c ORDER BY v) FROM (SELECT v, count(*) AS c FROM drn_whole, "
                  "unnest(ST_DumpValues(tg_basins(rast, %s), 1)) v WHERE v > 0 GROUP BY v) s" % points, db)
    want = "{%d,%d}" % (n1 - n2, n2)
    check(counts == want, "a gauge upstream takes its watershed out of the first one's basin: %s cells (want %s)"
          % (counts, want))

    calls = ["tg_stream_order(%s, threshold => %d)" % ("%s", THRESHOLD),
             "tg_flow_length(%s, direction => 'upstream')", "tg_hand(%s, threshold => %d)" % ("%s", THRESHOLD),
             "tg_wetness_index(%s)", "tg_subbasins(%s, threshold => %d)" % ("%s", THRESHOLD), "tg_basins(%s)"]
    same = psql("SELECT (SELECT array_agg(l ORDER BY link_id) FROM tg_stream_links(coverage => 'drn_tiles', "
                "threshold => %d) l) = (SELECT array_agg(l ORDER BY link_id) FROM (SELECT ST_Union(rast) AS rast "
                "FROM drn_tiles) u, tg_stream_links(rast, threshold => %d) l)" % (THRESHOLD, THRESHOLD), db)
    check(same == "t", "coverage form on 256 x 256 tiles equals the value form: tg_stream_links")
    for call in calls:
        # the value form on the tiles' grid (the last row and column of tiles may be padded)
        same = psql("SELECT (SELECT ST_DumpValues(ST_Union(rast)) FROM %s) = "
                    "(SELECT ST_DumpValues(%s) FROM (SELECT ST_Union(rast) AS rast FROM drn_tiles) u)"
                    % (call % "coverage => 'drn_tiles'", call % "rast"), db)
        check(same == "t", "coverage form on 256 x 256 tiles equals the value form: %s" % (call % "..."))
    if psql("SELECT available FROM tg_gpu_info()", db) == "t":
        for call in calls:
            same = psql("SELECT ST_DumpValues(%s) = ST_DumpValues(%s) FROM drn_whole"
                        % ((call % "rast")[:-1] + ", backend => 'gpu')", (call % "rast")[:-1] + ", backend => 'cpu')"),
                        db)
            check(same == "t", "GPU equals CPU: %s" % (call % "..."))
        same = psql("SELECT (SELECT array_agg(l ORDER BY link_id) FROM drn_whole, tg_stream_links(rast, threshold => %d, "
                    "backend => 'gpu') l) = (SELECT array_agg(l ORDER BY link_id) FROM drn_whole, "
                    "tg_stream_links(rast, threshold => %d, backend => 'cpu') l)" % (THRESHOLD, THRESHOLD), db)
        check(same == "t", "GPU equals CPU: tg_stream_links")
    else:
        print("  skipped: GPU against CPU (no GPU)")
    psql("DROP TABLE drn_whole; DROP TABLE drn_tiles", db)


def main():
    args = dem_checks_arguments(__doc__).parse_args()
    psql_script(RASTER_BYTES_FUNCTION, args.db)
    for path in args.dems:
        one_dem(path, args.db)
    return checks_exit_status("drainage")


if __name__ == "__main__":
    sys.exit(main())

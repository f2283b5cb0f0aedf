#!/usr/bin/env python3
"""terra_gpu against pysheds (Bartos, pysheds 0.5) on real DEMs: D-infinity and
D8 routing, snapped gauges and their catchments, and the time of each call.

Both tools route the same surface: terra_gpu's epsilon fill (priority-flood,
epsilon 1e-3), read back and given to pysheds as its DEM (nodata -9999), and
routed by terra_gpu with fill => false, so neither tool's filling or flat
handling enters the comparison (the filled surface has no flat).

1. D-infinity (Tarboton 1997): the flow angle (terra_gpu's output 'angle',
   pysheds' dinf flowdir, both radians counter-clockwise from east in
   [0, 2 pi)) and the accumulation in cells (tg_flow_accumulation against
   grid.accumulation(routing='dinf')), on interior cells (not on the
   raster's outer rows and columns: pysheds gives those no direction).
   pysheds leaves the raster's edge cells unrouted, where terra_gpu routes
   them like any cell, so part of terra_gpu's water comes from the edge; that
   part is measured with terra_gpu itself (the accumulation of a weight of 1
   on the edge cells, 0 elsewhere); cells downstream of an angle that differs
   are found with pysheds' weighted accumulation on either tool's angles, and
   differing angles are checked for ties between facets (Tarboton's facet
   slopes).  pysheds is run once more on the DEM with a border of nodata
   cells, so that it routes the raster's outer rows and columns too.
   Classifications of differing cells look at 5000 of them at most.
2. D8: pysheds' own flowdir (dirmap 64, 128, 1, 2, 4, 8, 16, 32 for N, NE,
   E, SE, S, SW, W, NW: the ESRI codes terra_gpu writes) against
   tg_flow_direction's codes, differing cells classified (equal slopes that
   the two tie rules settle differently, or not; whether terra_gpu's code is
   a steepest drop with its own spacing: metres per row on geographic
   rasters, where pysheds takes the degrees as square cells); the accumulation from
   pysheds' directions and from terra_gpu's codes against
   tg_flow_accumulation.
3. Gauges: --gauges stream cells (terra_gpu D8 accumulation >= --threshold
   cells, evenly spread in row-major order, off the raster's edge), each
   moved 1.2 cells east and 0.7 cells south (into the diagonal neighbour),
   snapped by each tool its own way -- terra_gpu: tg_snap_pour_point /
   tg_watershed(snap => d), the cell of highest D8 accumulation within d =
   --snap cells (in metres on geographic rasters); pysheds:
   grid.snap_to_mask(stream mask, xy), the nearest stream cell (it measures to
   cell corners and has no distance limit) -- then delineated:
   tg_watershed(rast, point, fill => false, snap => d) against
   grid.catchment(x, y, fdir, xytype='coordinate') on terra_gpu's D8 codes
   (the same directions in both, so differences come from snapping and
   delineation). Also pysheds' catchment of terra_gpu's snapped cell, which
   separates delineation from snapping.
4. Times: terra_gpu as the SQL wall time of each call (a fresh session: the
   raster's decoding and the routing included, the transfer of the result
   not), pysheds as the Python wall time of each method (its numba kernels
   are compiled, and cached, when pysheds is imported).

Only measures and reports.  Needs numpy, affine and pysheds 0.5 (its scipy
for snap_to_mask); psql connection from the PG* variables, terra_gpu
installed in the database.

    bench/pysheds_peers.py [DEM.tif ...] [--db DB] [--gauges N] [--threshold CELLS] [--snap CELLS]

Without DEMs: tiny_vinschgau_250m_utm32, small_bigtujunga_srtm30_utm11 and
medium_srilanka_srtm3_3x3 from ../shared/data/dem.  --threshold defaults to a
thousandth of the DEM's valid cells (at least 100).
"""

import argparse
import importlib.metadata
import math
import os
import sys
import time

import numpy as np
from affine import Affine
from pysheds.sgrid import sGrid
from pysheds.sview import Raster, ViewFinder

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import (RASTER_BYTES_FUNCTION, Dem, load_dem, machine_description, psql,  # noqa: E402
                      psql_script, sql_raster_band)

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "dem")
DEFAULT = ["tiny_vinschgau_250m_utm32", "small_bigtujunga_srtm30_utm11", "medium_srilanka_srtm3_3x3"]
ESRI = (64, 128, 1, 2, 4, 8, 16, 32)                      # N, NE, E, SE, S, SW, W, NW (pysheds' dirmap order)
STEP = {64: (-1, 0), 128: (-1, 1), 1: (0, 1), 2: (1, 1), 4: (1, 0), 8: (1, -1), 16: (0, -1), 32: (-1, -1)}
TG_ORDER = (1, 2, 4, 8, 16, 32, 64, 128)                  # terra_gpu's tie order: code order (E first)
ND = -9999.0
# numpy 2.4 removed np.in1d, which pysheds 0.5's D8 accumulation calls on a raveled array;
# np.isin gives the same answer there
IN1D_SHIM = not hasattr(np, "in1d")
if IN1D_SHIM:
    np.in1d = np.isin


def timed_sql(sql, db):
    t0 = time.perf_counter()
    psql(sql, db)
    return time.perf_counter() - t0


def timed(fn, *a, **kw):
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t0


def band(expr, typecode, shape, db, b=1):
    return np.array(sql_raster_band(expr, typecode, db, band=b).pixels, dtype=np.float64).reshape(shape)


def pct(part, whole):
    return "%.3f %%" % (100.0 * part / whole) if whole else "-"


def table(rows, head=("", "value")):
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print()


def percentiles(v, qs=(50, 99, 99.9, 100)):
    return " / ".join("%.3g" % x for x in np.percentile(v, qs)) if v.size else "-"


# neighbours counter-clockwise from east (E, NE, N, NW, W, SW, S, SE) as (row, column) steps
CCW = [(0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1), (1, 0), (1, 1)]


def facet_slope(z, y, x, angle, dx, dy):
    """Tarboton's steepest slope on the facets (side neighbour, diagonal neighbour) whose
    45-degree sector holds `angle` (both where it lies on a sector boundary)."""
    best = -np.inf
    for f in range(8):
        lo = f * math.pi / 4
        if not (lo - 1e-5 <= angle <= lo + math.pi / 4 + 1e-5 or (f == 0 and angle >= 2 * math.pi - 1e-5)):
            continue
        side, diag = (f, f + 1) if f % 2 == 0 else ((f + 1) % 8, f)
        ys, xs = y + CCW[side][0], x + CCW[side][1]
        yd, xd = y + CCW[diag % 8][0], x + CCW[diag % 8][1]
        d1, d2 = (dx, dy) if side in (0, 4) else (dy, dx)
        s1 = (z[y, x] - z[ys, xs]) / d1
        s2 = (z[ys, xs] - z[yd, xd]) / d2
        if s2 <= 0:
            s = s1
        elif math.atan2(s2, s1) > math.atan2(d2, d1) or s1 <= 0:
            s = (z[y, x] - z[yd, xd]) / math.hypot(d1, d2)
        else:
            s = math.hypot(s1, s2)
        best = max(best, s)
    return best


def row_spacing(fb, row, geographic):
    """East-west and north-south spacing of a row's cells: map units, or metres on the WGS84
    ellipsoid (radii of curvature at the row's latitude) for geographic rasters."""
    if not geographic:
        return abs(fb.scale_x), abs(fb.scale_y)
    a, e2 = 6378137.0, 0.00669437999014
    phi = math.radians(fb.uly + (row + 0.5) * fb.scale_y)
    w = 1 - e2 * math.sin(phi) ** 2
    m, n = a * (1 - e2) / w ** 1.5, a / math.sqrt(w)
    return n * math.cos(phi) * math.radians(abs(fb.scale_x)), m * math.radians(abs(fb.scale_y))


def sample(yx, most=5000):
    """At most `most` of the cells (rows, columns), evenly spread in row-major order."""
    ys, xs = yx
    if ys.size <= most:
        return ys, xs
    k = np.linspace(0, ys.size - 1, most).astype(int)
    return ys[k], xs[k]


def one(path, args, db):
    dem = Dem(path)
    H, W = dem.height, dem.width
    shape = (H, W)
    load_dem(dem, "peer_dem", db)
    t_fill = timed_sql("DROP TABLE IF EXISTS peer_filled; CREATE TABLE peer_filled AS "
                       "SELECT tg_fill(rast, epsilon => 1e-3) AS rast FROM peer_dem", db)
    pt = psql("SELECT ST_BandPixelType(rast) FROM peer_filled", db)
    fb = sql_raster_band("(SELECT rast FROM peer_filled)", {"32BF": "f", "64BF": "d"}[pt], db)
    z = np.array(fb.pixels, dtype=np.float64).reshape(shape)
    nodata = float(psql("SELECT ST_BandNoDataValue(rast) FROM peer_filled", db) or "nan")
    valid = ~np.isnan(z) & (z != nodata)
    edge = np.zeros(shape, dtype=bool)
    edge[0, :] = edge[-1, :] = edge[:, 0] = edge[:, -1] = True
    inner = valid & ~edge
    nvalid = int(valid.sum())
    threshold = args.threshold or max(100, nvalid // 1000)
    note = ("\npysheds takes the cell size from the affine transform, in degrees here, as square cells; "
            "terra_gpu measures each row's spacing in metres on WGS84 (east-west about cos(latitude) "
            "times north-south): the routings differ wherever that changes a choice.\n"
            if dem.geographic else "")
    print("## %s\n\n%d x %d = %.2f M cells (%d valid), %s, cells %g x %g%s; filled surface %s\n"
          % (dem.name, W, H, dem.cells / 1e6, nvalid, "EPSG:%d" % dem.srid,
             fb.scale_x, abs(fb.scale_y), " degrees (geographic)" if dem.geographic else " m", pt) + note)

    # ---- terra_gpu ----
    q = "SELECT count(%s) FROM peer_filled"
    dinf_angle = "tg_flow_direction(rast, routing => 'dinf', output => 'angle', fill => false)"
    dinf_acc = "tg_flow_accumulation(rast, routing => 'dinf', fill => false)"
    d8_codes = "tg_flow_direction(rast, fill => false)"
    d8_acc = "tg_flow_accumulation(rast, fill => false)"
    # weight 1 on the raster's outer rows and columns, 0 inside
    edge_weight = ("ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(rast), '8BUI'::text, 1, NULL), 1, 2, 2, "
                   "ST_Width(rast) - 2, ST_Height(rast) - 2, 0::float8)")
    edge_acc = "tg_flow_accumulation(rast, routing => 'dinf', fill => false, weight => %s)" % edge_weight
    times = {}
    for name, call in [("dinf angle", dinf_angle), ("dinf acc", dinf_acc), ("d8 codes", d8_codes),
                       ("d8 acc", d8_acc)]:
        times[name] = timed_sql(q % call, db)
    tang = band("(SELECT %s FROM peer_filled)" % dinf_angle, "f", shape, db)
    tacc = band("(SELECT %s FROM peer_filled)" % dinf_acc, "d", shape, db)
    tedge = band("(SELECT %s FROM peer_filled)" % edge_acc, "d", shape, db)
    codes = band("(SELECT %s FROM peer_filled)" % d8_codes, "B", shape, db).astype(np.int64)
    tacc8 = band("(SELECT %s FROM peer_filled)" % d8_acc, "d", shape, db)

    # ---- pysheds on the same surface ----
    vf = ViewFinder(affine=Affine(fb.scale_x, 0.0, fb.ulx, 0.0, fb.scale_y, fb.uly), shape=shape, nodata=ND)
    grid = sGrid(viewfinder=vf)
    pdem = Raster(np.where(valid, z, ND), viewfinder=vf)
    pfd, times["p dinf dir"] = timed(grid.flowdir, pdem, routing="dinf")
    pacc, times["p dinf acc"] = timed(grid.accumulation, pfd, routing="dinf")
    pfd8, times["p d8 dir"] = timed(grid.flowdir, pdem, routing="d8", dirmap=ESRI)
    pfd8_r = pfd8
    pacc8, times["p d8 acc"] = timed(grid.accumulation, pfd8, routing="d8", dirmap=ESRI)
    tcodes = Raster(codes.copy(), viewfinder=ViewFinder(affine=vf.affine, shape=shape, nodata=255))
    pacc8t, times["p d8 acc tg"] = timed(grid.accumulation, tcodes, routing="d8", dirmap=ESRI)
    pfd, pacc, pfd8, pacc8, pacc8t = (np.asarray(a) for a in (pfd, pacc, pfd8, pacc8, pacc8t))
    # the same with a border of nodata cells around the raster: pysheds then routes (and its
    # catchment keeps) the raster's outer rows and columns like any other cell
    vfb = ViewFinder(affine=Affine(fb.scale_x, 0.0, fb.ulx - fb.scale_x, 0.0, fb.scale_y, fb.uly - fb.scale_y),
                     shape=(H + 2, W + 2), nodata=ND)
    gridb = sGrid(viewfinder=vfb)
    bdem = Raster(np.pad(np.where(valid, z, ND), 1, constant_values=ND), viewfinder=vfb)
    bfd = np.asarray(gridb.flowdir(bdem, routing="dinf"))
    # pysheds' dinf flowdir gives nodata cells (walls at the highest elevation + 1) an angle too,
    # and its accumulation then counts and routes them: here they get none
    b_nodata_angles = int(np.sum(~np.isnan(bfd[1:-1, 1:-1][~valid])))
    bfd[1:-1, 1:-1][~valid] = np.nan
    bacc = np.asarray(gridb.accumulation(
        Raster(bfd, viewfinder=ViewFinder(affine=vfb.affine, shape=(H + 2, W + 2), nodata=np.nan)),
        routing="dinf"))[1:-1, 1:-1]
    bfd = bfd[1:-1, 1:-1]
    bcodes = Raster(np.pad(codes, 1, constant_values=255),
                    viewfinder=ViewFinder(affine=vfb.affine, shape=(H + 2, W + 2), nodata=255))

    # ---- 1. D-infinity ----
    ta = np.where(tang < 0, np.nan, tang)            # terra_gpu: -1 where no lower neighbour
    pa = np.where(pfd < 0, np.nan, pfd)              # pysheds: -1 flat, -2 pit, NaN nodata and edge
    both = inner & ~np.isnan(ta) & ~np.isnan(pa)
    d = np.abs(((ta - pa + math.pi) % (2 * math.pi)) - math.pi)[both]
    rel = np.abs(tacc - pacc)[inner] / np.maximum(pacc[inner], 1)
    reached = inner & (tedge > 0)
    dall = np.abs(((ta - pa + math.pi) % (2 * math.pi)) - math.pi)
    turned = inner & (dall > 1e-6)
    dx, dy = abs(fb.scale_x), abs(fb.scale_y)
    angle_ties = 0
    ty, tx = sample(np.nonzero(turned))
    for y, x in zip(ty, tx):
        st, sp = facet_slope(z, y, x, ta[y, x], dx, dy), facet_slope(z, y, x, pa[y, x], dx, dy)
        angle_ties += abs(st - sp) <= 1e-9 * abs(sp)
    # cells downstream of a differing angle, in either tool's network (pysheds' weighted accumulation,
    # once on its own angles, once on terra_gpu's)
    wturned = Raster(turned.astype(np.float64), viewfinder=vf)
    vfn = ViewFinder(affine=vf.affine, shape=shape, nodata=np.nan)
    below_turn = ((np.asarray(grid.accumulation(Raster(np.where(valid, pfd, np.nan), viewfinder=vfn),
                                                weights=wturned, routing="dinf")) > 0)
                  | (np.asarray(grid.accumulation(Raster(np.where(tang < 0, np.nan, tang), viewfinder=vfn),
                                                  weights=wturned, routing="dinf")) > 0))
    clean = inner & ~reached & ~below_turn
    rel_clean2 = (np.abs(tacc - pacc) / np.maximum(pacc, 1))[clean]
    ba = np.where(bfd < 0, np.nan, bfd)
    bboth = valid & ~np.isnan(ta) & ~np.isnan(ba)
    bd = np.abs(((ta - ba + math.pi) % (2 * math.pi)) - math.pi)[bboth]
    brel = np.abs(tacc - bacc)[valid] / np.maximum(bacc[valid], 1)
    rel_clean = rel[~reached[inner]]
    ni = int(inner.sum())
    print("### 1. D-infinity on the same epsilon-filled surface (%d interior valid cells)\n" % ni)
    table([
        ("angle in both / only terra_gpu / only pysheds",
         "%d / %d / %d" % (both.sum(), (inner & ~np.isnan(ta) & np.isnan(pa)).sum(),
                           (inner & np.isnan(ta) & ~np.isnan(pa)).sum())),
        ("pysheds interior flats (-1) / pits (-2); terra_gpu interior cells without angle",
         "%d / %d; %d" % ((pfd[inner] == -1).sum(), (pfd[inner] == -2).sum(), np.isnan(ta[inner]).sum())),
        ("angle equal within 1e-6 rad", "%s (max difference %.3g rad)"
         % (pct((d <= 1e-6).sum(), d.size), d.max() if d.size else 0)),
        ("angle within 1e-3 rad", pct((d <= 1e-3).sum(), d.size)),
        ("angles differing by more than 1e-6 rad: facets equally steep (a tie) by Tarboton's facet slopes",
         "%d of %d%s" % (angle_ties, ty.size, " sampled of %d" % turned.sum() if ty.size < turned.sum() else "")),
        ("accumulation equal within 1e-6 relative", pct((rel <= 1e-6).sum(), ni)),
        ("relative difference p50 / p99 / p99.9 / max", percentiles(rel)),
        ("interior cells terra_gpu gives water from the raster's edge cells (pysheds routes no edge cell)",
         "%d (%s)" % (reached.sum(), pct(reached.sum(), ni))),
        ("cells without edge water: equal within 1e-6 relative", "%s (max %.3g)"
         % (pct((rel_clean <= 1e-6).sum(), rel_clean.size), rel_clean.max() if rel_clean.size else 0)),
        ("cells reached neither by edge water nor from a differing angle (either network): equal within 1e-6",
         "%s of %d (max %.3g)" % (pct((rel_clean2 <= 1e-6).sum(), clean.sum()), clean.sum(),
                                  rel_clean2.max() if rel_clean2.size else 0)),
        ("nodata cells to which pysheds gives an angle (walls at the highest elevation + 1, "
         "routed and counted by its accumulation): as is / with a nodata border",
         "%d / %d" % (np.sum(~valid & ~np.isnan(pfd)), b_nodata_angles)),
        ("pysheds with a nodata border (its edge cells routed): angle in both / equal within 1e-6 rad",
         "%d of %d valid / %s" % (bboth.sum(), nvalid, pct((bd <= 1e-6).sum(), bd.size))),
        ("pysheds with a nodata border, its nodata cells' angles removed: accumulation equal within 1e-6 relative (all valid cells)",
         "%s (max %.3g)" % (pct((brel <= 1e-6).sum(), nvalid), brel.max())),
        ("largest accumulation terra_gpu / pysheds", "%.6g / %.6g" % (tacc[valid].max(), pacc[valid].max())),
    ])

    # ---- 2. D8 ----
    dist = {c: math.hypot(dx * STEP[c][1], dy * STEP[c][0]) for c in ESRI}
    dirs_all = valid & np.isin(codes, ESRI) & np.isin(pfd8, ESRI)
    dirs = dirs_all & inner
    diff = dirs_all & (codes != pfd8)
    ties = tie_ok = steepest_own = 0
    dy_, dx_ = sample(np.nonzero(diff))
    for y, x in zip(dy_, dx_):
        # terra_gpu's choice with its own spacing (metres per row on WGS84 for geographic rasters)
        mx, my = row_spacing(fb, y, dem.geographic)
        own = {}
        for c in ESRI:
            ry, rx = y + STEP[c][0], x + STEP[c][1]
            if 0 <= ry < H and 0 <= rx < W and valid[ry, rx]:
                own[c] = (z[y, x] - z[ry, rx]) / math.hypot(mx * STEP[c][1], my * STEP[c][0])
        steepest_own += own[codes[y, x]] >= max(own.values()) * (1 - 1e-6)
        slopes = {}
        for c in ESRI:
            ry, rx = y + STEP[c][0], x + STEP[c][1]
            if 0 <= ry < H and 0 <= rx < W and valid[ry, rx]:
                slopes[c] = (z[y, x] - z[ry, rx]) / dist[c]
        st, sp = slopes[codes[y, x]], slopes[pfd8[y, x]]
        if st == sp:
            ties += 1
            best = [c for c in ESRI if slopes.get(c) == st]
            if pfd8[y, x] == best[0] and codes[y, x] == min(best, key=TG_ORDER.index):
                tie_ok += 1
    eq8 = (tacc8 == pacc8)[inner]
    # cells downstream of a direction that differs, in either network (pysheds' weighted accumulation)
    moved = valid & np.isin(codes, ESRI) & np.isin(pfd8, ESRI) & (codes != pfd8)
    wmoved = Raster(moved.astype(np.float64), viewfinder=vf)
    below = ((np.asarray(grid.accumulation(tcodes, weights=wmoved, routing="d8", dirmap=ESRI)) > 0)
             | (np.asarray(grid.accumulation(pfd8_r, weights=wmoved, routing="d8", dirmap=ESRI)) > 0))
    untouched = inner & ~below
    sinks = valid & edge & (codes != pfd8) & (codes == 0) & (pfd8 < 0)
    eq8t = (tacc8 == pacc8t)[valid]
    edge_valid = valid & edge
    print("### 2. D8 on the same surface (%d interior valid cells)\n" % ni)
    table([
        ("interior cells with a direction in both", "%d" % dirs.sum()),
        ("codes equal", pct((dirs & (codes == pfd8)).sum(), dirs.sum())),
        ("cells (edge included) where both give a direction and they differ: equal slopes (a tie); "
         "settled as each tool's tie order says (pysheds: first of N, NE, E...; terra_gpu: first of E, SE, S...)",
         "%d of %d%s; %d" % (ties, dy_.size, " sampled of %d" % diff.sum() if dy_.size < diff.sum() else "",
                             tie_ok)),
        ("of those differing cells: terra_gpu's code a steepest drop with its own spacing "
         "(metres per row on WGS84 where geographic)", "%d of %d" % (steepest_own, dy_.size)),
        ("interior cells outlet in terra_gpu (code 0) / pit or flat in pysheds",
         "%d / %d" % ((codes[inner] == 0).sum(), (pfd8[inner] < 0).sum())),
        ("edge cells: codes equal; of the others, terra_gpu outlets (code 0) that pysheds marks pit or flat "
         "(the rest are in the row above)",
         "%s of %d; %d of %d" % (pct((codes == pfd8)[edge_valid].sum(), edge_valid.sum()), edge_valid.sum(),
                                 sinks.sum(), (edge_valid & (codes != pfd8)).sum())),
        ("accumulation from pysheds' own directions equal (interior)", pct(eq8.sum(), ni)),
        ("... on interior cells downstream of no differing direction (in either network)", "%s of %d"
         % (pct((tacc8 == pacc8)[untouched].sum(), untouched.sum()), untouched.sum())),
        ("accumulation of terra_gpu's codes by pysheds equal (all valid cells)", pct(eq8t.sum(), nvalid)),
    ])

    # ---- 3. gauges ----
    stream = inner & (tacc8 >= threshold)
    cells = np.flatnonzero(stream.ravel())
    n = min(args.gauges, cells.size)
    picks = cells[np.linspace(0, cells.size - 1, n).astype(int)]
    gy, gx = np.divmod(picks, W)
    px = np.clip(gx + 0.5 + 1.2, 0.01, W - 0.01) * fb.scale_x + fb.ulx
    py = np.clip(gy + 0.5 + 0.7, 0.01, H - 0.01) * fb.scale_y + fb.uly
    snap_m = args.snap * (dy * 111320.0 if dem.geographic else dy)
    srid = dem.srid
    geoms = ["'SRID=%d;POINT(%.12g %.12g)'::geometry" % (srid, x, y) for x, y in zip(px, py)]
    arr = "ARRAY[%s]" % ", ".join(geoms)
    t0 = time.perf_counter()
    snapped = psql("SELECT ST_X(s), ST_Y(s) FROM (SELECT tg_snap_pour_point(rast, g, %r, fill => false) AS s, o "
                   "FROM peer_filled, unnest(%s) WITH ORDINALITY AS u(g, o)) t ORDER BY o" % (snap_m, arr), db)
    times["snap"] = time.perf_counter() - t0
    tsnap = np.array([[float(v) for v in line.split("|")] for line in snapped.splitlines()])
    tcol = np.floor((tsnap[:, 0] - fb.ulx) / fb.scale_x).astype(int)
    trow = np.floor((tsnap[:, 1] - fb.uly) / fb.scale_y).astype(int)
    times["watersheds"] = timed_sql("SELECT count(tg_watershed(rast, g, fill => false, snap => %r)) "
                                    "FROM peer_filled, unnest(%s) AS g" % (snap_m, arr), db)

    mask = Raster(stream.copy(), viewfinder=ViewFinder(affine=vf.affine, shape=shape, nodata=False))
    psnap, times["p snap"] = timed(grid.snap_to_mask, mask, np.column_stack([px, py]))
    pcol = np.round((psnap[:, 0] - fb.ulx) / fb.scale_x).astype(int)       # pysheds: top-left corners
    prow = np.round((psnap[:, 1] - fb.uly) / fb.scale_y).astype(int)
    same_cell = (pcol == tcol) & (prow == trow)
    sy_, sx_ = np.nonzero(stream)
    near = [np.argmin(np.hypot((sx_ + 0.5) * fb.scale_x + fb.ulx - x, (sy_ + 0.5) * fb.scale_y + fb.uly - y))
            for x, y in zip(px, py)]
    by_centre = int(np.sum((sx_[near] == pcol) & (sy_[near] == prow)))
    identical_border = 0
    times["p catchment"] = 0.0
    iou, rel_area, iou_same, identical_same = [], [], [], 0
    corner_shift = 0
    on_tg_path = upstream_of_tg = 0
    for i in range(n):
        tw = band("(SELECT tg_watershed(rast, %s, fill => false, snap => %r) FROM peer_filled)"
                  % (geoms[i], snap_m), "B", shape, db) == 1
        pc, t = timed(grid.catchment, psnap[i, 0], psnap[i, 1], tcodes, dirmap=ESRI, xytype="coordinate")
        times["p catchment"] += t
        pc = np.asarray(pc).astype(bool)
        union = (tw | pc).sum()
        iou.append((tw & pc).sum() / union)
        rel_area.append(abs(int(pc.sum()) - int(tw.sum())) / tw.sum())
        # pysheds' catchment of terra_gpu's snapped cell (a cell centre: snap='center')
        ps = np.asarray(grid.catchment(tsnap[i, 0], tsnap[i, 1], tcodes, dirmap=ESRI, xytype="coordinate",
                                       snap="center")).astype(bool)
        iou_same.append((tw & ps).sum() / (tw | ps).sum())
        identical_same += bool(np.array_equal(tw, ps))
        psb = np.asarray(gridb.catchment(tsnap[i, 0], tsnap[i, 1], bcodes, dirmap=ESRI, xytype="coordinate",
                                         snap="center")).astype(bool)[1:-1, 1:-1]
        identical_border += bool(np.array_equal(tw, psb))
        # the same centre read as pysheds' default 'corner' snap does
        cc, cr = grid.nearest_cell(tsnap[i, 0], tsnap[i, 1], snap="corner")
        corner_shift += (cc, cr) != (tcol[i], trow[i])
        if not same_cell[i]:
            upstream_of_tg += bool(tw[prow[i], pcol[i]])
            on_tg_path += bool(pc[trow[i], tcol[i]])
    iou, rel_area, iou_same = np.array(iou), np.array(rel_area), np.array(iou_same)
    ndiff = int(n - same_cell.sum())
    sep = np.hypot(pcol - tcol, prow - trow)[~same_cell]
    print("### 3. %d gauges, stream cells with >= %d cells of D8 accumulation, each moved 1.2 cells east and "
          "0.7 south; terra_gpu snaps within %d cells (%.6g %s)\n"
          % (n, threshold, args.snap, snap_m, "m" if dem.geographic else "map units"))
    table([
        ("snapped to the same cell", "%d of %d" % (same_cell.sum(), n)),
        ("pysheds' cell (nearest by distance to cell corners) is the nearest stream cell by centre",
         "%d of %d" % (by_centre, n)),
        ("where they differ: pysheds' cell inside terra_gpu's catchment (upstream of it) / "
         "terra_gpu's inside pysheds' (downstream)", "%d / %d of %d" % (upstream_of_tg, on_tg_path, ndiff)),
        ("where they differ: distance between the two cells (cells) p50 / max",
         "%.3g / %.3g" % (np.median(sep), sep.max()) if ndiff else "-"),
        ("catchment agreement, cells both assign / union: mean / min",
         "%.4f / %.4f" % (iou.mean(), iou.min())),
        ("catchment agreement where snapped alike: mean / min",
         "%.4f / %.4f" % (iou[same_cell].mean(), iou[same_cell].min()) if same_cell.any() else "-"),
        ("area relative difference |pysheds - terra_gpu| / terra_gpu: p50 / max",
         "%.3g / %.3g" % (np.median(rel_area), rel_area.max())),
        ("pysheds' catchment of terra_gpu's snapped cell: identical", "%d of %d (agreement min %.4f)"
         % (identical_same, n, iou_same.min())),
        ("... with a nodata border around the codes (pysheds' catchment drops the outer rows and columns)",
         "%d of %d identical" % (identical_border, n)),
        ("terra_gpu's snapped cell centre read with pysheds' default snap='corner': another cell",
         "%d of %d" % (corner_shift, n)),
    ])

    # ---- 4. times ----
    print("### 4. Wall time (s)\n")
    table([
        ("epsilon fill (tg_fill)", "%.3f" % t_fill, "- (routes terra_gpu's surface)"),
        ("D-inf directions (angle)", "%.3f" % times["dinf angle"], "%.3f" % times["p dinf dir"]),
        ("D-inf accumulation (terra_gpu: from the DEM, routing included; pysheds: from flowdir)",
         "%.3f" % times["dinf acc"], "%.3f" % times["p dinf acc"]),
        ("D8 directions (codes)", "%.3f" % times["d8 codes"], "%.3f" % times["p d8 dir"]),
        ("D8 accumulation (same split; pysheds of terra_gpu's codes)", "%.3f" % times["d8 acc"],
         "%.3f (%.3f)" % (times["p d8 acc"], times["p d8 acc tg"])),
        ("snap %d gauges (one statement / snap_to_mask)" % n, "%.3f" % times["snap"], "%.3f" % times["p snap"]),
        ("%d catchments (one statement / %d catchment calls)" % (n, n), "%.3f" % times["watersheds"],
         "%.3f" % times["p catchment"]),
    ], head=("call", "terra_gpu (SQL)", "pysheds (Python)"))
    psql("DROP TABLE peer_dem; DROP TABLE peer_filled", db)
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dems", nargs="*")
    ap.add_argument("--db")
    ap.add_argument("--gauges", type=int, default=50)
    ap.add_argument("--threshold", type=int, default=0, help="stream cells (default: valid cells / 1000, >= 100)")
    ap.add_argument("--snap", type=float, default=3, help="terra_gpu's snapping distance, in cells")
    args = ap.parse_args()
    dems = args.dems or [os.path.join(SHARED, d + ".tif") for d in DEFAULT]
    print("# terra_gpu against pysheds\n")
    print("host: %s; date: %s; pysheds %s, numpy %s; terra_gpu %s\n"
          % (machine_description(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
             importlib.metadata.version("pysheds"), np.__version__, psql("SELECT tg_version()", args.db)))
    if IN1D_SHIM:
        print("(numpy %s has no np.in1d, which pysheds 0.5 calls in its D8 accumulation: np.isin stands in)\n"
              % np.__version__)
    psql_script(RASTER_BYTES_FUNCTION, args.db)
    for d in dems:
        one(d, args, args.db)


if __name__ == "__main__":
    main()

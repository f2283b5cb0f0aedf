#!/usr/bin/env python3
"""D-infinity agreement with RichDEM on real DEMs.

Both tools route the same surface: terra_gpu's epsilon fill (priority-flood,
epsilon 1e-3), which leaves no flat, so neither tool's flat handling enters
the comparison.  Compared: the flow angle (terra_gpu's output 'angle';
RichDEM's derived from the shares of its one or two receivers: the side's
direction turned towards the corner by the corner's share of 45 degrees), the
shares themselves and the D-infinity accumulation in cells.

RichDEM's FlowProportions (method 'Dinf') gives the side neighbour the share
that Tarboton's rule gives the corner and vice versa (on a plane descending
10 degrees north of east it sends 0.778 to NE and 0.222 to E; the angle rule
gives E 1 - 10/45 = 0.778): its figures are printed as they are, and again
with the two shares of each two-receiver cell swapped back ("corrected"),
with an accumulation of the corrected proportions computed here (cells in
descending order of the epsilon-filled surface, every receiver lower).  Needs numpy and
richdem; psql connection from the PG* variables.

    python3 bench/routing_peers.py DEM.tif [DEM.tif ...]
"""
import math
import os
import sys

import numpy as np
import richdem as rd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import tg_tools as tt  # noqa: E402

# terra_gpu's neighbour k (E, SE, S, SW, W, NW, N, NE) in RichDEM's proportions
# (index 0 the cell's own flag, then W, NW, N, NE, E, SE, S, SW)
RD_INDEX = [5, 6, 7, 8, 1, 2, 3, 4]
DIR = [(-k * math.pi / 4) % (2 * math.pi) for k in range(8)]   # radians ccw from east


def angles(shares):
    """Flow angle of each cell from its shares (H, W, 8): the receiver's
    direction, or for two receivers the side's direction turned towards the
    corner by the corner's share times 45 degrees; NaN where none."""
    H, W, _ = shares.shape
    out = np.full((H, W), np.nan)
    for y in range(H):
        for x in range(W):
            s = shares[y, x]
            ks = [k for k in range(8) if s[k] > 0]
            if len(ks) == 1:
                out[y, x] = DIR[ks[0]]
            elif len(ks) == 2:
                side = ks[0] if ks[0] % 2 == 0 else ks[1]
                corner = ks[1] if side == ks[0] else ks[0]
                turn = ((DIR[corner] - DIR[side] + math.pi) % (2 * math.pi)) - math.pi
                out[y, x] = (DIR[side] + s[corner] * turn) % (2 * math.pi)
    return out


def compare(path):
    dem = tt.Dem(path)
    tt.load_dem(dem, "peer_dem")
    tt.psql(tt.RASTER_BYTES_FUNCTION)
    tt.psql("DROP TABLE IF EXISTS peer_filled; CREATE TABLE peer_filled AS "
            "SELECT tg_fill(rast, epsilon => 1e-3) AS rast FROM peer_dem")
    W, H = dem.width, dem.height
    pt = tt.psql("SELECT ST_BandPixelType(rast) FROM peer_filled")
    fb = tt.sql_raster_band("(SELECT rast FROM peer_filled)", {"32BF": "f", "64BF": "d"}[pt])
    z = np.array(fb.pixels, dtype=np.float64).reshape(H, W)
    nodata = float(tt.psql("SELECT ST_BandNoDataValue(rast) FROM peer_filled") or "nan")
    valid = ~np.isnan(z) & (z != nodata)
    tshares = np.zeros((H, W, 8))
    for b in range(8):
        sb = tt.sql_raster_band("(SELECT tg_flow_direction(rast, routing => 'dinf', output => 'shares', "
                                "fill => false) FROM peer_filled)", "f", band=b + 1)
        tshares[:, :, b] = np.array(sb.pixels, dtype=np.float64).reshape(H, W)
    ang = tt.sql_raster_band("(SELECT tg_flow_direction(rast, routing => 'dinf', output => 'angle', "
                             "fill => false) FROM peer_filled)", "f")
    tangle = np.array(ang.pixels, dtype=np.float64).reshape(H, W)
    tangle[tangle < 0] = np.nan
    ab = tt.sql_raster_band("(SELECT tg_flow_accumulation(rast, routing => 'dinf', fill => false) "
                            "FROM peer_filled)", "d")
    tacc = np.array(ab.pixels, dtype=np.float64).reshape(H, W)

    zr = np.where(valid, z, -9999.0)
    r = rd.rdarray(zr, no_data=-9999.0)
    r.geotransform = [0, fb.scale_x, 0, 0, 0, fb.scale_y]
    props = np.array(rd.FlowProportions(r, method="Dinf"))
    rshares = np.zeros((H, W, 8))
    for k in range(8):
        rshares[:, :, k] = np.clip(props[:, :, RD_INDEX[k]], 0, None)
    racc = np.array(rd.FlowAccumulation(r, method="Dinf"), dtype=np.float64)
    cshares = rshares.copy()
    two = (rshares > 0).sum(axis=2) == 2
    for y, x in zip(*np.nonzero(two)):
        ks = np.nonzero(rshares[y, x] > 0)[0]
        cshares[y, x, ks[0]], cshares[y, x, ks[1]] = rshares[y, x, ks[1]], rshares[y, x, ks[0]]
    cacc = np.where(valid, 1.0, 0.0)
    order = np.argsort(-np.where(valid, z, -np.inf), axis=None, kind="stable")
    DX = [1, 1, 0, -1, -1, -1, 0, 1]
    DY = [0, 1, 1, 1, 0, -1, -1, -1]
    for i in order:
        y, x = divmod(int(i), W)
        if not valid[y, x]:
            continue
        for k in range(8):
            if cshares[y, x, k] > 0:
                cacc[y + DY[k], x + DX[k]] += cshares[y, x, k] * cacc[y, x]

    # interior cells: both tools treat the raster's edge differently
    inner = valid.copy()
    inner[0, :] = inner[-1, :] = inner[:, 0] = inner[:, -1] = False
    ta, ra, ca = tangle, angles(rshares), angles(cshares)
    both = inner & ~np.isnan(ta) & ~np.isnan(ra)
    d = np.abs(((ta - ra + math.pi) % (2 * math.pi)) - math.pi)[both]
    sd = np.abs(tshares - rshares).max(axis=2)[both]
    rel = (np.abs(tacc - racc) / np.maximum(racc, 1))[inner & (racc > 0)]
    print("%s (%d x %d, %s cells %g x %g)" % (dem.name, W, H, "geographic" if dem.geographic else "projected",
                                              fb.scale_x, abs(fb.scale_y)))
    print("  cells with an angle in both: %d of %d interior valid; angle only in terra_gpu %d, only in RichDEM %d"
          % (both.sum(), inner.sum(), (inner & ~np.isnan(ta) & np.isnan(ra)).sum(),
             (inner & np.isnan(ta) & ~np.isnan(ra)).sum()))
    print("  angle |difference|: equal within 1e-6 rad on %.3f %%, within 0.01 rad on %.3f %%, max %.4g rad"
          % (100 * (d <= 1e-6).mean(), 100 * (d <= 0.01).mean(), d.max()))
    print("  shares max |difference| per cell: p50 %.3g, p99 %.3g, max %.3g"
          % tuple(np.percentile(sd, [50, 99, 100])))
    print("  accumulation relative difference: p50 %.3g, p90 %.3g, p99 %.3g, p99.9 %.3g, max %.3g"
          % tuple(np.percentile(rel, [50, 90, 99, 99.9, 100])))
    da = np.abs(((tangle - angles(tshares) + math.pi) % (2 * math.pi)) - math.pi)
    print("  terra_gpu's output 'angle' vs its shares read as RichDEM's: max %.3g rad "
          "(equal where cells are square)" % np.nanmax(da[inner]))
    dc = np.abs(((ta - ca + math.pi) % (2 * math.pi)) - math.pi)[both]
    sc = np.abs(tshares - cshares).max(axis=2)[both]
    relc = (np.abs(tacc - cacc) / np.maximum(cacc, 1))[inner]
    print("  corrected RichDEM: angle equal within 1e-6 rad on %.3f %%, within 1e-4 rad on %.3f %%, max %.4g rad"
          % (100 * (dc <= 1e-6).mean(), 100 * (dc <= 1e-4).mean(), dc.max()))
    print("  corrected RichDEM: shares max |difference| p50 %.3g, p99 %.3g, max %.3g"
          % tuple(np.percentile(sc, [50, 99, 100])))
    print("  corrected RichDEM: accumulation relative difference p50 %.3g, p99 %.3g, p99.9 %.3g, max %.3g"
          % tuple(np.percentile(relc, [50, 99, 99.9, 100])))
    print("  accumulation: terra_gpu max %.6g, RichDEM max %.6g" % (tacc[valid].max(), racc[valid].max()))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        compare(p)

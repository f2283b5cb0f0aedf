#!/usr/bin/env python3
"""The local terrain derivatives against gdaldem, PostGIS and references on real DEMs.

For each DEM (one raster value) it fails (exit 1) unless:
  - gdaldem hillshade (standard, -multidirectional, -combined), aspect, TRI
    (-alg Riley and Wilson), TPI and roughness agree with tg_* within
    --tolerance (1e-4, degrees or output units) on every interior cell
    (all 9 cells of the window valid; gdaldem leaves the others nodata).
    Hillshades are gdaldem's bytes: tg_hillshade(pixeltype => '8BUI') must
    equal them, except where the exact value lies within --tolerance of a
    rounding boundary (gdaldem's single-precision arithmetic can round it
    either way; counted and reported), and the 32BF hillshade scaled to
    1 + 254 x must lie within 0.5 + tolerance of gdaldem's byte;
  - on the first DEM, ST_Aspect, ST_TPI, ST_TRI and ST_Roughness agree on
    every cell (same edge rule), and ST_HillShade on the cells it computes
    (it leaves the raster's edge and nodata neighbours NULL);
  - curvatures agree with a reference written here from the definitions
    (a least-squares quadratic fitted to each window, then the normal
    curvatures, fundamental forms and shape operator of differential
    geometry), and geomorphons with lines of sight traced here, on a window
    of the DEM;
  - the coverage form of tg_terrain (256 x 256 tiles) equals the value form.

Connection: PG* variables; the database needs terra_gpu and a superuser (a
byteasend-based helper reads result pixels without a client library).
"""

import argparse
import math
import os
import sys
import tempfile
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import (RASTER_BYTES_FUNCTION, Dem, check, checks_exit_status, load_dem, psql,  # noqa: E402
                      psql_script, raw_pixels, run, sql_raster_band)

CURVATURES = ["profile", "plan", "tangential", "mean", "gaussian", "minimal", "maximal", "total"]


def tg_band(expr, table, typecode="f"):
    return sql_raster_band("(SELECT %s FROM %s)" % (expr, table), typecode).pixels


def gdaldem(args, dem, tmp, name):
    out = os.path.join(tmp, name + ".tif")
    run(["gdaldem"] + args + ["-q", dem.path, out])
    return raw_pixels(out, "d")


def interior(dem, z):
    """Cells whose whole 3 x 3 window is valid and inside the raster."""
    W, H, nd = dem.width, dem.height, dem.nodata
    bad = [v != v or (nd is not None and v == nd) for v in z]
    keep = []
    for y in range(1, H - 1):
        for x in range(1, W - 1):
            i = y * W + x
            if not any(bad[i + dy * W + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1)):
                keep.append(i)
    return keep, bad


def compare(name, a, b, cells, tolerance, angle=False):
    worst = 0.0
    for i in cells:
        d = abs(a[i] - b[i])
        if angle:
            d = min(d, 360 - d)
        worst = max(worst, d)
    check(worst <= tolerance, "%s: %d cells, max |diff| %.3g" % (name, len(cells), worst))
    return worst


def hillshade_vs_gdaldem(label, byte, flt, gd, cells, tolerance):
    """gdaldem's byte is 1 + round(254 x): ours must be it, but where x sits on a rounding boundary."""
    boundary = mismatch = worst = 0
    for i in cells:
        v = 1 + 254 * flt[i] / 255.0
        worst = max(worst, abs(v - gd[i]))
        near = abs((v - 1) % 1 - 0.5) < tolerance
        boundary += near
        if byte[i] != gd[i] and not near:
            mismatch += 1
    check(mismatch == 0 and worst <= 0.5 + tolerance,
          "hillshade %s vs gdaldem: %d cells, bytes equal but on %d within %g of a rounding boundary "
          "(%d unexplained), 1 + 254 x within %.6f of gdaldem's byte" % (label, len(cells), boundary, tolerance,
                                                                        mismatch, worst))


def quadratic_fit(w, dx, dy):
    """z = a x^2 + b y^2 + c x y + d x + e y + f by least squares over the 3 x 3 window (y north)."""
    rows = []
    for r in range(3):
        for q in range(3):
            x, y = (q - 1) * dx, (1 - r) * dy
            rows.append(([x * x, y * y, x * y, x, y, 1.0], w[3 * r + q]))
    n = 6
    A = [[sum(rw[0][i] * rw[0][j] for rw in rows) for j in range(n)] + [sum(rw[0][i] * rw[1] for rw in rows)]
         for i in range(n)]
    for col in range(n):
        piv = max(range(col, n), key=lambda k: abs(A[k][col]))
        A[col], A[piv] = A[piv], A[col]
        for k in range(n):
            if k != col:
                f = A[k][col] / A[col][col]
                A[k] = [a - f * b for a, b in zip(A[k], A[col])]
    a, b, c, d, e, _ = (A[i][n] / A[i][i] for i in range(n))
    return d, e, 2 * a, c, 2 * b    # p, q, r, s, t


def curvatures(p, q, r, s, t):
    """Each curvature type from differential geometry (convex positive)."""
    g2 = p * p + q * q
    root = math.sqrt(1 + g2)
    out = {"total": r * r + 2 * s * s + t * t}

    def hess(u, v):
        return u[0] * (r * v[0] + s * v[1]) + u[1] * (s * v[0] + t * v[1])
    if g2 == 0:
        out.update(profile=0.0, plan=0.0, tangential=0.0)
    else:
        along = (p / math.sqrt(g2), q / math.sqrt(g2))
        across = (-along[1], along[0])
        # normal curvature of the vertical section along a horizontal direction u
        out["profile"] = -hess(along, along) / (root * (1 + g2))
        out["tangential"] = -hess(across, across) / root
        out["plan"] = out["tangential"] * root / math.sqrt(g2)
    E, F, G = 1 + p * p, p * q, 1 + q * q
    L, M, N = r / root, s / root, t / root
    K = (L * N - M * M) / (E * G - F * F)
    Hm = -(E * N - 2 * F * M + G * L) / (2 * (E * G - F * F))
    out.update(mean=Hm, gaussian=K, minimal=Hm - math.sqrt(max(0.0, Hm * Hm - K)),
               maximal=Hm + math.sqrt(max(0.0, Hm * Hm - K)))
    return out


# The landforms (1 flat, 2 peak, 3 ridge, 4 shoulder, 5 spur, 6 slope, 7 hollow, 8 footslope,
# 9 valley, 10 pit) by the number of lower (rows) and higher (columns) directions, after
# Jasiewicz and Stepinski (2013), fig. 4
FORMS = [[1, 1, 1, 8, 8, 9, 9, 9, 10], [1, 1, 8, 8, 8, 9, 9, 9], [1, 4, 6, 6, 7, 7, 9], [4, 4, 6, 6, 6, 7],
         [4, 4, 5, 6, 6], [3, 3, 5, 5], [3, 3, 3], [3, 3], [2]]


def form(lower, higher):
    return FORMS[lower][higher]


def geomorphon(z, W, H, x, y, dx, dy, radius, skip, flat):
    """Lines of sight in 8 directions; slopes compared exactly (fractions: equal angles stay equal)."""
    lower = higher = 0
    for ddx, ddy in ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)):
        cells = math.sqrt(2) if ddx and ddy else 1.0
        step = math.sqrt((ddx * dx) ** 2 + (ddy * dy) ** 2)
        slopes = []     # tangent of the elevation angle, in units of 1 / step
        n = 1
        while n * cells <= radius + 1e-9:
            xx, yy = x + n * ddx, y + n * ddy
            if not (0 <= xx < W and 0 <= yy < H):
                break
            v = z[yy * W + xx]
            if n * cells > skip and v == v:
                slopes.append(Fraction(v - z[y * W + x]) / n)
            n += 1
        if not slopes:
            continue
        rise, drop = max(slopes), -min(slopes)
        threshold = Fraction(math.tan(math.radians(flat)) * step)
        if rise > threshold and rise > drop:
            higher += 1
        elif drop > threshold and drop > rise:
            lower += 1
    return form(lower, higher)


def check_dem(dem, postgis, tolerance, window):
    print("%s (%d x %d, %s)" % (dem.name, dem.width, dem.height, dem.gdal_type), flush=True)
    table = "terrain_dem"
    load_dem(dem, table)
    s = repr(dem.scale)
    z = raw_pixels(dem.path, "d")
    zn = [float("nan") if (dem.nodata is not None and v == dem.nodata) else v for v in z]
    cells, _ = interior(dem, z)

    with tempfile.TemporaryDirectory() as tmp:
        for method, flag in (("standard", []), ("multidirectional", ["-multidirectional"]),
                             ("combined", ["-combined"])):
            gd = gdaldem(["hillshade", "-s", s] + flag, dem, tmp, method)
            byte = tg_band("tg_hillshade(rast, scale => %s, method => '%s', pixeltype => '8BUI')" % (s, method),
                           table, "B")
            flt = tg_band("tg_hillshade(rast, scale => %s, method => '%s')" % (s, method), table)
            hillshade_vs_gdaldem(method, byte, flt, gd, cells, tolerance)
        aspect = tg_band("tg_aspect(rast)", table)
        gd = gdaldem(["aspect"], dem, tmp, "aspect")
        flat = [i for i in cells if gd[i] == -9999]
        check(all(aspect[i] == -1 for i in flat), "aspect: the %d flat interior cells are -1 (gdaldem: nodata)"
              % len(flat))
        compare("aspect vs gdaldem", aspect, gd, [i for i in cells if gd[i] != -9999], tolerance, angle=True)
        for alg in ("Riley", "Wilson"):
            compare("tri (%s) vs gdaldem" % alg.lower(), tg_band("tg_tri(rast, algorithm => '%s')" % alg, table),
                    gdaldem(["TRI", "-alg", alg], dem, tmp, "tri" + alg), cells, tolerance)
        tpi = tg_band("tg_tpi(rast)", table)
        compare("tpi vs gdaldem", tpi, gdaldem(["TPI"], dem, tmp, "tpi"), cells, tolerance)
        rough = tg_band("tg_roughness(rast)", table)
        compare("roughness vs gdaldem", rough, gdaldem(["roughness"], dem, tmp, "rough"), cells, tolerance)

    if postgis:
        valid = [i for i in range(dem.cells) if zn[i] == zn[i]]
        st = tg_band("ST_Aspect(rast)", table)
        compare("aspect vs ST_Aspect (every valid cell)", aspect, st, valid, tolerance, angle=True)
        compare("tpi vs ST_TPI (every valid cell)", tpi, tg_band("ST_TPI(rast)", table), valid, tolerance)
        compare("tri vs ST_TRI (every valid cell)", tg_band("tg_tri(rast)", table), tg_band("ST_TRI(rast)", table),
                valid, tolerance)
        compare("roughness vs ST_Roughness (every valid cell)", rough, tg_band("ST_Roughness(rast)", table), valid,
                tolerance)
        st = tg_band("ST_HillShade(rast, 1, '32BF', 315, 45, 255, %s)" % s, table)
        st_nodata = float(psql("SELECT ST_BandNoDataValue(ST_HillShade(rast, 1, '32BF', 315, 45, 255, %s)) FROM %s"
                               % (s, table)))
        shaded = [i for i in cells if st[i] == st[i] and st[i] != st_nodata]
        compare("hillshade vs ST_HillShade (its %d cells)" % len(shaded),
                tg_band("tg_hillshade(rast, scale => %s)" % s, table), st, shaded, tolerance)

    # curvatures and geomorphons on a window of the DEM, against the references above
    W = dem.width
    x0, y0 = (dem.width - window) // 2, (dem.height - window) // 2
    dx, dy = dem.pixel_width * dem.scale, dem.pixel_height * dem.scale
    got = {kind: tg_band("tg_curvature(rast, type => '%s', scale => %s, pixeltype => '64BF')" % (kind, s), table, "d")
           for kind in CURVATURES}
    worst = dict.fromkeys(CURVATURES, 0.0)
    n = 0
    for y in range(y0, y0 + window):
        for x in range(x0, x0 + window):
            i = y * W + x
            w = [zn[i + (r - 1) * W + (q - 1)] for r in range(3) for q in range(3)]
            if w[4] != w[4]:
                continue
            ref = curvatures(*quadratic_fit([v if v == v else w[4] for v in w], dx, dy))
            for kind in CURVATURES:
                worst[kind] = max(worst[kind], abs(got[kind][i] - ref[kind]) / max(abs(ref[kind]), 1e-6))
            n += 1
    for kind in CURVATURES:
        check(worst[kind] < 1e-6, "curvature %s vs the differential-geometry reference: %d cells, max rel. diff %.2g"
              % (kind, n, worst[kind]))
    radius, skip, flat = 6, 1, 1.0
    got = tg_band("tg_geomorphons(rast, search_radius => %d, skip => %d, flat_threshold => %g, scale => %s)"
                  % (radius, skip, flat, s), table, "B")
    same = n = 0
    for y in range(y0, y0 + window):
        for x in range(x0, x0 + window):
            i = y * W + x
            if zn[i] != zn[i]:
                continue
            n += 1
            same += got[i] == geomorphon(zn, W, dem.height, x, y, dx, dy, radius, skip, flat)
    check(same == n, "geomorphons vs lines of sight traced here: %d of %d cells equal" % (same, n))

    # the coverage form over tiles equals the value form (no seams)
    tiles = "terrain_tiles"
    load_dem(dem, tiles, tile=256)
    same = psql("SELECT (SELECT (SELECT ST_DumpValues(ST_Union(hillshade))) = (SELECT ST_DumpValues(h)) "
                "AND (SELECT ST_DumpValues(ST_Union(geomorphons))) = (SELECT ST_DumpValues(g)) "
                "FROM tg_terrain(coverage => '%s', products => ARRAY['hillshade', 'geomorphons'], scale => %s)) "
                "FROM (SELECT tg_hillshade(rast, scale => %s) AS h, tg_geomorphons(rast, scale => %s) AS g FROM %s) v"
                % (tiles, s, s, s, table))
    check(same == "t", "coverage form (256 x 256 tiles) equals the value form: hillshade and geomorphons")
    psql("DROP TABLE %s; DROP TABLE %s" % (table, tiles))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dems", nargs="+")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--window", type=int, default=120, help="side of the window the references cover")
    args = ap.parse_args()
    psql_script(RASTER_BYTES_FUNCTION)
    for k, path in enumerate(args.dems):
        check_dem(Dem(path), k == 0, args.tolerance, args.window)
    sys.exit(checks_exit_status("terrain"))


if __name__ == "__main__":
    main()

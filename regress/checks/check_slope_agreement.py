#!/usr/bin/env python3
"""tg_slope against PostGIS ST_Slope and gdaldem slope on real DEMs.

For each DEM (loaded as one raster value) it computes the slope in degrees
on the same pixels with tg_slope, ST_Slope, gdaldem slope and Horn's formula
evaluated here in double precision, and fails (exit 1) unless:
  - tg_slope and ST_Slope agree within --tolerance (1e-4 degrees) on every
    cell where both are valid (same edge and nodata-neighbour rule: missing
    neighbours take the centre value) and have the same nodata cells;
  - tg_slope matches the double-precision formula within 1e-5 degrees on
    interior cells (all 9 cells of the window valid);
  - tg_slope and gdaldem agree within --tolerance on interior cells (gdaldem
    leaves the others nodata), except where gdaldem's single-precision window
    arithmetic is what differs: on such a cell tg_slope must be the one
    closer to the double-precision value (counted and reported).

Connection: PG* variables; the database needs terra_gpu and a superuser (a
byteasend-based helper reads result pixels without a client library).
"""

import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import (RASTER_BYTES_FUNCTION, Dem, dem_checks_arguments, load_dem, psql,  # noqa: E402
                      raw_pixels, run, sql_raster_band)


def compare(dem, db, backend, tolerance):
    table = "agree_dem"
    load_dem(dem, table, db)
    s = repr(dem.scale)
    tg = sql_raster_band("(SELECT tg_slope(rast, scale => %s, backend => '%s') FROM %s)" % (s, backend, table),
                         "f", db).pixels
    st = sql_raster_band("(SELECT ST_Slope(rast, 1, '32BF', 'DEGREES', %s) FROM %s)" % (s, table), "f", db).pixels
    tg_nodata = float(psql("SELECT ST_BandNoDataValue(tg_slope(rast, scale => %s)) FROM %s" % (s, table), db))
    st_nodata = float(psql("SELECT ST_BandNoDataValue(ST_Slope(rast, 1, '32BF', 'DEGREES', %s)) FROM %s"
                           % (s, table), db))
    psql("DROP TABLE %s" % table, db)

    z = raw_pixels(dem.path, "d")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "slope.tif")
        run(["gdaldem", "slope", "-q", "-s", s, dem.path, out])
        gd = raw_pixels(out, "f")
        gd_nodata = -9999.0

    W, H = dem.width, dem.height
    nd = dem.nodata
    valid = [not (v != v or (nd is not None and v == nd)) for v in z]

    st_max = 0.0
    nodata_mismatch = 0
    for i in range(W * H):
        a_nd = tg[i] == tg_nodata
        b_nd = st[i] == st_nodata or st[i] != st[i]
        if a_nd != b_nd:
            nodata_mismatch += 1
        elif not a_nd:
            st_max = max(st_max, abs(tg[i] - st[i]))

    pw, ph, scale8 = dem.pixel_width, dem.pixel_height, 8 * dem.scale
    gd_max = ref_max = 0.0
    interior = gdal_float_cells = gdal_worse = 0
    for y in range(1, H - 1):
        row = y * W
        for x in range(1, W - 1):
            i = row + x
            if not (valid[i - W - 1] and valid[i - W] and valid[i - W + 1] and valid[i - 1] and valid[i]
                    and valid[i + 1] and valid[i + W - 1] and valid[i + W] and valid[i + W + 1]):
                continue
            a, b, c = z[i - W - 1], z[i - W], z[i - W + 1]
            d, f = z[i - 1], z[i + 1]
            g, h, k = z[i + W - 1], z[i + W], z[i + W + 1]
            gx = ((c + f + f + k) - (a + d + d + g)) / pw
            gy = ((g + h + h + k) - (a + b + b + c)) / ph
            ref = math.degrees(math.atan(math.sqrt(gx * gx + gy * gy) / scale8))
            ref_max = max(ref_max, abs(tg[i] - ref))
            if gd[i] == gd_nodata:
                continue
            interior += 1
            diff = abs(tg[i] - gd[i])
            if diff > tolerance:
                gdal_float_cells += 1
                if abs(gd[i] - ref) <= abs(tg[i] - ref):
                    gdal_worse += 1
            else:
                gd_max = max(gd_max, diff)
    return {"st_max": st_max, "gd_max": gd_max, "ref_max": ref_max, "interior": interior,
            "nodata_mismatch": nodata_mismatch, "valid": sum(valid),
            "gdal_float_cells": gdal_float_cells, "tg_not_closer": gdal_worse,
            "gd_max_all": max(gd_max, max((abs(tg[i] - gd[i]) for i in range(W * H)
                                           if gd[i] != gd_nodata and tg[i] != tg_nodata), default=0))}


def main():
    ap = dem_checks_arguments(__doc__)
    ap.add_argument("--tolerance", type=float, default=1e-4, help="degrees")
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    psql(RASTER_BYTES_FUNCTION, args.db)

    failed = False
    print("| DEM | type | cells | valid | vs ST_Slope: max abs diff (deg) | nodata mismatches "
          "| interior cells | vs double-precision Horn | vs gdaldem: max abs diff | cells > tolerance "
          "(gdaldem float32 rounding) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for path in args.dems:
        dem = Dem(path)
        r = compare(dem, args.db, args.backend, args.tolerance)
        ok = (r["st_max"] <= args.tolerance and r["nodata_mismatch"] == 0 and r["interior"] > 0
              and r["ref_max"] <= 1e-5 and r["tg_not_closer"] == 0)
        failed |= not ok
        print("| %s | %s | %d | %d | %.3g | %d | %d | %.3g | %.3g | %d |%s" % (
            dem.name, dem.gdal_type, dem.cells, r["valid"], r["st_max"], r["nodata_mismatch"], r["interior"],
            r["ref_max"], r["gd_max_all"], r["gdal_float_cells"], "" if ok else "  <-- FAIL"), flush=True)
    print("slope agreement: %s" % ("FAILED" if failed else "ok (tolerance %g degrees)" % args.tolerance))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

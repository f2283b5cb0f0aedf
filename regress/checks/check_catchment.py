#!/usr/bin/env python3
"""RUSLE, travel time, watersheds and isochrones on a real DEM, against
references computed here from the DEM file and terra_gpu's accumulation and
directions (standard library only):

  - LS = (m+1) (A s / a0)^m (sin b / b0)^n with A = tg_flow_accumulation,
    b the Horn slope written out here (per-row metric spacing on geographic
    DEMs, WGS84), and tg_rusle = R K LS C P, within 1e-5 relative;
  - tg_watershed of the largest-accumulation cell = the cells whose D8 path
    (tg_flow_direction's codes) reaches it;
  - tg_travel_time = the steps n L / (K max(S, min_slope)^b) summed along
    each D8 path over the filled DEM, within 1e-6 relative;
  - tg_isochrones tile the watershed: band areas add up to the watershed's
    and their union has the same area (no overlaps);
  - on a GPU machine, the GPU path equals the CPU path (LS and times within
    1e-6, watersheds exactly).

    regress/checks/check_catchment.py DEM.tif [--db DB]
Exit status 1 on any mismatch.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import (RASTER_BYTES_FUNCTION, Dem, load_dem_table, psql, psql_script,  # noqa: E402
                      raw_pixels, row_spacing, sql_raster_band)

N, K, B, MIN_SLOPE = 0.05, 2.0, 0.5, 0.001
DX = (1, 1, 0, -1, -1, -1, 0, 1)
DY = (0, 1, 1, 1, 0, -1, -1, -1)


def rel(a, b):
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def band_values(expr, typecode, nodata, db):
    band = sql_raster_band(expr, typecode, db)
    return [math.nan if v == nodata else v for v in band.pixels], band


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dem")
    ap.add_argument("--db")
    args = ap.parse_args()
    db = args.db
    dem = Dem(args.dem)
    table = load_dem_table(dem, "catchment_", db)
    psql_script(RASTER_BYTES_FUNCTION, db)
    W, H, n = dem.width, dem.height, dem.cells
    geo = [float(v) for v in psql("SELECT concat_ws(',', ST_UpperLeftX(rast), ST_ScaleX(rast), 0, "
                                  "ST_UpperLeftY(rast), 0, ST_ScaleY(rast)) FROM %s" % table, db).split(",")]
    z = raw_pixels(dem.path)
    z = [math.nan if (dem.nodata is not None and v == dem.nodata) else v for v in z]
    failures = []
    gpu = psql("SELECT available FROM tg_gpu_info()", db) == "t"
    print("%s: %d x %d cells%s" % (dem.name, W, H, ", GPU present" if gpu else ""))

    # ---- LS and soil loss (mfd-md, no fill: the defaults) -------------------
    acc, _ = band_values("(SELECT tg_flow_accumulation(rast, routing => 'mfd-md', fill => false, "
                         "backend => 'cpu') FROM %s)" % table, "d", -9999, db)
    ls, _ = band_values("(SELECT tg_ls_factor(rast, backend => 'cpu') FROM %s)" % table, "f", -9999, db)
    soil, _ = band_values("(SELECT tg_rusle(rast, 300, 0.03, 0.2, 0.9, backend => 'cpu') FROM %s)" % table,
                          "f", -9999, db)
    worst_ls = worst_soil = 0.0
    for y in range(H):
        dx, dy = row_spacing(dem, geo, y)
        width = math.sqrt(dx * dy)
        for x in range(W):
            i = y * W + x
            e = z[i]
            if math.isnan(e):
                ref = math.nan
            else:
                def at(xx, yy):
                    if 0 <= xx < W and 0 <= yy < H and not math.isnan(z[yy * W + xx]):
                        return z[yy * W + xx]
                    return e
                a, b_, c = at(x - 1, y - 1), at(x, y - 1), at(x + 1, y - 1)
                d, f = at(x - 1, y), at(x + 1, y)
                g, h, k = at(x - 1, y + 1), at(x, y + 1), at(x + 1, y + 1)
                gx = ((c + 2 * f + k) - (a + 2 * d + g)) / (8 * dx)
                gy = ((g + 2 * h + k) - (a + 2 * b_ + c)) / (8 * dy)
                beta = math.atan(math.hypot(gx, gy))
                ref = 1.4 * (acc[i] * width / 22.1) ** 0.4 * (math.sin(beta) / 0.0896) ** 1.3
            worst_ls = max(worst_ls, rel(ls[i], ref))
            worst_soil = max(worst_soil, rel(soil[i], ref * 300 * 0.03 * 0.2 * 0.9))
    print("LS: largest relative difference from the formula %.2e; soil loss from R K LS C P %.2e"
          % (worst_ls, worst_soil))
    if worst_ls > 1e-5 or worst_soil > 1e-5:
        failures.append("LS or soil loss differ from the reference by more than 1e-5")

    # ---- watershed of the largest-accumulation cell -------------------------
    codes = sql_raster_band("(SELECT tg_flow_direction(rast, backend => 'cpu') FROM %s)" % table, "B", db).pixels
    d8acc, _ = band_values("(SELECT tg_flow_accumulation(rast, backend => 'cpu') FROM %s)" % table, "d", -9999, db)
    outlet = max((v, i) for i, v in enumerate(d8acc) if not math.isnan(v))[1]
    ox, oy = outlet % W, outlet // W
    point = ("ST_SetSRID(ST_MakePoint(%r + %r * %d.5, %r + %r * %d.5), %d)"
             % (geo[0], geo[1], ox, geo[3], geo[5], oy, dem.srid))
    reaches = bytearray(n)      # 0 unknown, 1 no, 2 yes
    reaches[outlet] = 2
    for start in range(n):
        if codes[start] == 255 or reaches[start]:
            continue
        path, i = [], start
        while not reaches[i] and codes[i] not in (0, 255):
            path.append(i)
            kk = codes[i].bit_length() - 1
            i = (i // W + DY[kk]) * W + i % W + DX[kk]
        end = reaches[i] or 1
        for c in path:
            reaches[c] = end
        if not reaches[i]:
            reaches[i] = 1
    shed = sql_raster_band("(SELECT tg_watershed(rast, %s, backend => 'cpu') FROM %s)" % (point, table), "B", db).pixels
    wrong = sum(1 for i in range(n) if (shed[i] == 1) != (reaches[i] == 2))
    members = sum(1 for v in shed if v == 1)
    print("watershed of cell (%d, %d): %d cells; %d cells differ from the path walk" % (ox, oy, members, wrong))
    if wrong:
        failures.append("the watershed differs from the brute-force path walk")

    # ---- travel time over the filled DEM ------------------------------------
    w_fill, _ = band_values("(SELECT tg_fill(rast, nodata => -9999, backend => 'cpu') FROM %s)" % table,
                            "f" if dem.gdal_type in ("Int16", "UInt16", "Byte", "Float32") else "d", -9999, db)
    t, _ = band_values("(SELECT tg_travel_time(rast, %s, n => %r, k => %r, backend => 'cpu') FROM %s)"
                       % (point, N, K, table), "f", -9999, db)
    dist = []
    for y in range(H):
        dx, dy = row_spacing(dem, geo, y)
        dg = math.hypot(dx, dy)
        dist.append((dx, dg, dy, dg, dx, dg, dy, dg))
    ref_t = [math.nan] * n
    ref_t[outlet] = 0.0
    for start in range(n):
        if reaches[start] != 2 or not math.isnan(ref_t[start]):
            continue
        path, i = [], start
        while math.isnan(ref_t[i]):
            path.append(i)
            kk = codes[i].bit_length() - 1
            i = (i // W + DY[kk]) * W + i % W + DX[kk]
        for c in reversed(path):
            kk = codes[c].bit_length() - 1
            j = (c // W + DY[kk]) * W + c % W + DX[kk]
            length = dist[c // W][kk]
            s = max((w_fill[c] - w_fill[j]) / length, MIN_SLOPE)
            ref_t[c] = N * length / (K * s ** B) + ref_t[j]
    worst_t = max(rel(a, b) for a, b in zip(t, ref_t))
    print("travel time to (%d, %d): largest relative difference from the path walk %.2e (max time %.4g)"
          % (ox, oy, worst_t, max(v for v in ref_t if not math.isnan(v))))
    if worst_t > 1e-6:
        failures.append("travel times differ from the path walk by more than 1e-6")

    # ---- isochrones tile the watershed --------------------------------------
    interval = max(v for v in ref_t if not math.isnan(v)) / 8
    bands, total, union, shed_area = psql(
        "SELECT count(*), sum(ST_Area(geom)), ST_Area(ST_Union(geom)), "
        "(SELECT ST_Area(tg_watershed_polygon(rast, %s)) FROM %s) "
        "FROM %s, tg_isochrones(rast, %s, %r, n => %r, k => %r, backend => 'cpu')"
        % (point, table, table, point, interval, N, K), db).split("|")
    total, union, shed_area = float(total), float(union), float(shed_area)
    print("isochrones: %s bands; areas add up to %.6g, their union %.6g, the watershed %.6g"
          % (bands, total, union, shed_area))
    if rel(total, shed_area) > 1e-9 or rel(union, shed_area) > 1e-9:
        failures.append("isochrone polygons do not tile the watershed")

    # ---- GPU = CPU -----------------------------------------------------------
    if gpu:
        ls_g, _ = band_values("(SELECT tg_ls_factor(rast, backend => 'gpu') FROM %s)" % table, "f", -9999, db)
        t_g, _ = band_values("(SELECT tg_travel_time(rast, %s, n => %r, k => %r, backend => 'gpu') FROM %s)"
                             % (point, N, K, table), "f", -9999, db)
        shed_g = sql_raster_band("(SELECT tg_watershed(rast, %s, backend => 'gpu') FROM %s)" % (point, table),
                                 "B", db).pixels
        d_ls = max(rel(a, b) for a, b in zip(ls, ls_g))
        d_t = max(rel(a, b) for a, b in zip(t, t_g))
        same = shed == shed_g
        print("GPU against CPU: LS %.2e, travel time %.2e, watershed %s" % (d_ls, d_t, "identical" if same else "DIFFERENT"))
        if d_ls > 1e-6 or d_t > 1e-6 or not same:
            failures.append("the GPU path differs from the CPU path")

    psql("DROP TABLE %s" % table, db)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

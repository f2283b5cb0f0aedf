#!/usr/bin/env python3
"""The coverage forms against the value forms, on real DEMs, through SQL.

Each DEM is loaded twice with raster2pgsql: as one raster value and as a
coverage of small tiles.  For every coverage function (tg_slope, tg_fill,
tg_flow_direction, tg_flow_accumulation, tg_hydrology):
  - one output row per input tile, each with the input tile's extent;
  - its pixels, put back on the grid, equal the value form run on the whole
    DEM, bit for bit (the same core runs on the same grid);
a coverage with a tile removed equals the value form on ST_Union of what is
left (the hole is nodata); and a result table with AddRasterConstraints reads
back through GDAL's PostGISRaster driver (gdal_translate "PG:...") equal to
the value form; a table written by tg_create_result opens in GDAL with no
warning, and its watershed polygons read in OGR as Multi Polygon in the
DEM's SRID.  Fails (exit 1) when one does not hold.  Connection: PG*
variables; needs a superuser (results are read through a byteasend helper).
"""

import argparse
import os
import subprocess
import sys
import tempfile
from array import array

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import (check, failures, RASTER_BYTES_FUNCTION, Dem, load_dem, psql, raster_band, raw_pixels, run,  # noqa: E402
                      sql_raster_band)

def coverage_grid(query, column, typecode, db, whole):
    """Tiles of a coverage query, pasted onto the grid of `whole` (a RasterBand)."""
    W, H, ulx, uly, sx, sy = whole.width, whole.height, whole.ulx, whole.uly, whole.scale_x, whole.scale_y
    out = array(typecode, bytes(W * H * array(typecode).itemsize))
    covered = bytearray(W * H)
    rows = psql("SELECT rid, encode(terra_gpu_test_raster_bytes(%s), 'hex') FROM %s" % (column, query), db)
    ntiles = 0
    for line in rows.splitlines():
        _, hexdata = line.split("|")
        t = raster_band(bytes.fromhex(hexdata), typecode)
        w, h = t.width, t.height
        c0 = round((t.ulx - ulx) / sx)
        r0 = round((t.uly - uly) / sy)
        for y in range(h):
            out[(r0 + y) * W + c0:(r0 + y) * W + c0 + w] = t.pixels[y * w:(y + 1) * w]
            covered[(r0 + y) * W + c0:(r0 + y) * W + c0 + w] = b"\x01" * w
        ntiles += 1
    return out, ntiles, covered


def same(a, b):
    return a.tobytes() == b.tobytes()


def run_dem(dem, tile, db):
    print("%s (%d x %d, tiles of %d)" % (dem.name, dem.width, dem.height, tile))
    load_dem(dem, "cov_whole", db)
    load_dem(dem, "cov_dem", db, tile=tile)
    ntiles = int(psql("SELECT count(*) FROM cov_dem", db))
    fill_t = "d" if dem.pixtype in ("64BF", "32BSI", "32BUI") else "f"
    s = dem.scale
    cases = [
        ("slope", "tg_slope(coverage => 'cov_dem', scale => %g)" % s, "tg_slope(rast, scale => %g)" % s, "f"),
        ("fill", "tg_fill(coverage => 'cov_dem')", "tg_fill(rast)", fill_t),
        ("fill epsilon 0.01", "tg_fill(coverage => 'cov_dem', epsilon => 0.01)", "tg_fill(rast, epsilon => 0.01)", fill_t),
        ("breach", "tg_fill(coverage => 'cov_dem', method => 'breach')", "tg_fill(rast, method => 'breach')", fill_t),
        ("d8 directions", "tg_flow_direction(coverage => 'cov_dem')", "tg_flow_direction(rast)", "B"),
        ("mfd-md receivers", "tg_flow_direction(coverage => 'cov_dem', routing => 'mfd-md', output => 'mask')",
         "tg_flow_direction(rast, routing => 'mfd-md', output => 'mask')", "H"),
        ("d8 accumulation", "tg_flow_accumulation(coverage => 'cov_dem')", "tg_flow_accumulation(rast)", "d"),
        ("mfd-md accumulation", "tg_flow_accumulation(coverage => 'cov_dem', routing => 'mfd-md')",
         "tg_flow_accumulation(rast, routing => 'mfd-md')", "d"),
    ]
    # viewsheds: sight lines cross the tiles; observers on valid cells near the middle
    points = []
    for fx, fy in [(0.5, 0.5), (0.3, 0.3), (0.7, 0.6), (0.45, 0.55), (0.6, 0.4)]:
        x, y = int(dem.width * fx), int(dem.height * fy)
        p = psql("SELECT ST_AsEWKT(ST_PixelAsCentroid(rast, %d, %d)) FROM cov_whole "
                 "WHERE ST_Value(rast, %d, %d) IS NOT NULL" % (x + 1, y + 1, x + 1, y + 1), db)
        if p:
            points.append("'%s'::geometry" % p)
    if len(points) >= 3:
        o, many = points[0], "ARRAY[%s]" % ", ".join(points[:3])
        cases += [
            ("viewshed visible", "tg_viewshed(coverage => 'cov_dem', observer => %s, observer_height => 10)" % o,
             "tg_viewshed(rast, %s, observer_height => 10)" % o, "B"),
            ("viewshed angle", "tg_viewshed(coverage => 'cov_dem', observer => %s, output => 'angle')" % o,
             "tg_viewshed(rast, %s, output => 'angle')" % o, "f"),
            ("viewshed count of 3 observers", "tg_viewshed_count(coverage => 'cov_dem', observers => %s)" % many,
             "tg_viewshed_count(rast, %s)" % many, "I"),
        ]
    else:
        check(False, "viewshed: no valid observer cells found near the middle")
    for name, cov, val, tc in cases:
        v = sql_raster_band("(SELECT %s FROM cov_whole)" % val, tc, db)
        g, n, full = coverage_grid("%s AS o" % cov, "o.rast", tc, db, v)
        check(n == ntiles and all(full) and same(g, v.pixels),
              "%s: %d of %d tiles, grid covered, equal to the value form" % (name, n, ntiles))

    # the chained call: each of its three results equals the single call
    for col, val, tc in [("filled", "tg_fill(rast)", fill_t), ("direction", "tg_flow_direction(rast)", "B"),
                         ("accumulation", "tg_flow_accumulation(rast)", "d")]:
        v = sql_raster_band("(SELECT %s FROM cov_whole)" % val, tc, db)
        g, n, full = coverage_grid("tg_hydrology(coverage => 'cov_dem') AS o", "o." + col, tc, db, v)
        check(n == ntiles and all(full) and same(g, v.pixels), "tg_hydrology coverage %s equals %s" % (col, val))
        h = sql_raster_band("(SELECT (tg_hydrology(rast)).%s FROM cov_whole)" % col, tc, db)
        check(same(h.pixels, v.pixels), "tg_hydrology value form %s equals %s" % (col, val))

    # every output tile has its input tile's extent and grid
    bad = psql("SELECT count(*) FROM cov_dem d JOIN tg_flow_accumulation(coverage => 'cov_dem') o USING (rid) "
               "WHERE ST_UpperLeftX(d.rast) <> ST_UpperLeftX(o.rast) OR ST_UpperLeftY(d.rast) <> ST_UpperLeftY(o.rast) "
               "OR ST_Width(d.rast) <> ST_Width(o.rast) OR ST_Height(d.rast) <> ST_Height(o.rast) "
               "OR ST_SRID(d.rast) <> ST_SRID(o.rast) OR ST_ScaleX(d.rast) <> ST_ScaleX(o.rast)", db)
    check(bad == "0", "every output tile has its input tile's extent, pixel size and SRID")

    # a missing tile is nodata: the same as the value form on what is left
    psql("DELETE FROM cov_dem WHERE rid = (SELECT rid FROM cov_dem ORDER BY "
         "abs(ST_UpperLeftX(rast) - (SELECT ST_UpperLeftX(rast) + ST_Width(rast) * ST_ScaleX(rast) / 2 FROM cov_whole)) + "
         "abs(ST_UpperLeftY(rast) - (SELECT ST_UpperLeftY(rast) + ST_Height(rast) * ST_ScaleY(rast) / 2 FROM cov_whole)) LIMIT 1)", db)
    v = sql_raster_band("(SELECT tg_flow_accumulation(ST_Union(rast)) FROM cov_dem)", "d", db)
    g, n, covered = coverage_grid("tg_flow_accumulation(coverage => 'cov_dem') AS o", "o.rast", "d", db, v)
    hole = [i for i, c in enumerate(covered) if not c]
    equal = all(g[i] == v.pixels[i] for i, c in enumerate(covered) if c)
    check(n == ntiles - 1 and len(hole) == tile * tile and equal and all(v.pixels[i] == -9999.0 for i in hole),
          "a tile removed: the other %d tiles equal the value form on ST_Union of the rest, "
          "whose %d cells in the hole are nodata" % (n, len(hole)))

    # a result table with constraints reads back through GDAL as one mosaic
    load_dem(dem, "cov_dem", db, tile=tile)
    psql("DROP TABLE IF EXISTS cov_acc; CREATE TABLE cov_acc AS SELECT * FROM tg_flow_accumulation(coverage => 'cov_dem');"
         "SELECT AddRasterConstraints('cov_acc'::name, 'rast'::name);", db)
    aligned = psql("SELECT same_alignment AND blocksize_x = %d AND blocksize_y = %d FROM raster_columns "
                   "WHERE r_table_name = 'cov_acc'" % (tile, tile), db)
    v = sql_raster_band("(SELECT tg_flow_accumulation(rast) FROM cov_whole)", "d", db)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "acc.tif")
        conn = "PG:dbname=%s table=cov_acc mode=2" % (db or os.environ.get("PGDATABASE", ""))
        run(["gdal_translate", "-q", conn, out])
        back = raw_pixels(out, "d")
    check(aligned == "t" and same(back, v.pixels),
          "AddRasterConstraints: same alignment and block size; gdal_translate of the table equals the value form")

    # tg_create_result writes the table ready for GDAL: no warning from the
    # PostGISRaster driver, the same mosaic; polygons typed for OGR
    conn_db = "PG:dbname=%s" % (db or os.environ.get("PGDATABASE", ""))
    psql("DROP TABLE IF EXISTS cov_ready, cov_basin; SELECT tg_create_result('cov_ready', "
         "$$SELECT * FROM tg_flow_accumulation(coverage => 'cov_dem')$$)", db)
    info = subprocess.run(["gdalinfo", conn_db + " table=cov_ready mode=2"], capture_output=True, text=True)
    text = info.stdout + info.stderr
    check(info.returncode == 0 and "warning" not in text.lower() and "Size is %d, %d" % (v.width, v.height) in text,
          "tg_create_result: gdalinfo reads the table as one %d x %d mosaic without a warning" % (v.width, v.height))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ready.tif")
        run(["gdal_translate", "-q", conn_db + " table=cov_ready mode=2", out])
        ready = raw_pixels(out, "d")
    check(same(ready, v.pixels), "tg_create_result: gdal_translate of the written table equals the value form")
    psql("SELECT tg_create_result('cov_basin', $$SELECT tg_watershed_polygon(coverage => 'cov_dem', outlet => "
         "(SELECT geom FROM cov_ready, ST_PixelAsCentroids(rast) ORDER BY val DESC LIMIT 1)) AS geom$$)", db)
    ogr = subprocess.run(["ogrinfo", "-so", conn_db, "cov_basin"], capture_output=True, text=True)
    text = ogr.stdout + ogr.stderr
    check(ogr.returncode == 0 and "warning" not in text.lower() and "Geometry: Multi Polygon" in text
          and ('ID["EPSG",%d]]' % dem.srid) in text.replace("\n", "").replace(" ", ""),
          "tg_create_result: ogrinfo reads the watershed as Multi Polygon in EPSG:%d" % dem.srid)
    psql("DROP TABLE cov_acc, cov_ready, cov_basin, cov_dem, cov_whole", db)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dems", nargs="+")
    ap.add_argument("--tile", type=int, default=64)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--db", default=None)
    args = ap.parse_args()
    os.environ["PGOPTIONS"] = "-c terra_gpu.backend=%s -c client_min_messages=warning" % args.backend
    psql(RASTER_BYTES_FUNCTION, args.db)
    for path in args.dems:
        run_dem(Dem(path), args.tile, args.db)
    print("coverage checks: %s" % ("all ok" if failures() == 0 else "%d FAILED" % failures()))
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())

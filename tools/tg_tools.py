"""Helpers shared by the benchmark and the real-DEM checks (standard library only,
so they run wherever psql and the GDAL command-line tools are on PATH)."""

import argparse
import collections
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from array import array


def run(cmd, **kw):
    """Run a command, raise with its stderr on failure, return stdout."""
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stderr))
    return p.stdout


def sql_literal(text):
    return "'" + text.replace("'", "''") + "'"


def psql_command(db=None):
    """psql's command line: unaligned rows, stop at the first error (connection from PG* variables)."""
    return ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"] + (["-d", db] if db else [])


def psql(sql, db=None):
    """Run SQL in psql, return unaligned rows."""
    return run(psql_command(db) + ["-c", sql]).strip()


def psql_script(script, db=None):
    return run(psql_command(db), input=script)


def dem_checks_arguments(doc):
    """The command line of a check over real DEMs, for the script to add its
    own options to: the DEM files and --db, with the script's docstring as help."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dems", nargs="+")
    ap.add_argument("--db")
    return ap


def dem_bench_arguments(doc, reps):
    """The command line of a benchmark on one DEM, for the script to add its
    own options to: the DEM file and --reps (default reps), with the script's
    docstring as help."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dem")
    ap.add_argument("--reps", type=int, default=reps, help="timed runs per figure, the median reported")
    return ap


class Dem:
    """What gdalinfo says about a single-band DEM file."""

    def __init__(self, path):
        info = json.loads(run(["gdalinfo", "-json", path]))
        band = info["bands"][0]
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.width, self.height = info["size"]
        self.cells = self.width * self.height
        self.gdal_type = band["type"]
        self.nodata = band.get("noDataValue")
        if self.nodata is not None and self.gdal_type == "Float32":
            # as the pixels hold it: GDAL's -3.4e+38 is -3.3999999521443642e+38 in single precision
            self.nodata = array("f", [self.nodata])[0]
        gt = info["geoTransform"]
        self.pixel_width, self.pixel_height = abs(gt[1]), abs(gt[5])
        wkt = info.get("coordinateSystem", {}).get("wkt", "")
        self.geographic = wkt.startswith("GEOGCRS") or wkt.startswith("GEOGCS")
        m = re.search(r'ID\["EPSG",(\d+)\]\]\s*$', wkt)
        self.srid = int(m.group(1)) if m else 0
        if self.srid == 0 and self.geographic:
            self.srid = 4326    # a GDAL without its PROJ database drops the EPSG code
        # vertical metres per horizontal unit, as ST_Slope / gdaldem -s expect
        self.scale = 111120.0 if self.geographic else 1.0

    @property
    def pixtype(self):
        return {"Int16": "16BSI", "UInt16": "16BUI", "Int32": "32BSI", "UInt32": "32BUI",
                "Float32": "32BF", "Float64": "64BF", "Byte": "8BUI"}[self.gdal_type]


def server_read_sql(path, srid, table, tile=None, append=False):
    """SQL creating `table` from a GDAL file the server reads itself
    (ST_FromGDALRaster: a superuser on the same machine, files under 1 GB),
    one raster value or tiles of tile x tile numbered in raster2pgsql's
    order: the load where raster2pgsql is missing.  With append, the tiles
    are added to an existing table(rid serial, rast) instead."""
    src = ("ST_SetSRID(ST_FromGDALRaster(pg_read_binary_file(%s)), %d)"
           % (sql_literal(os.path.abspath(path)), int(srid)))
    tiles = "FROM (SELECT %s AS r) s, ST_Tile(s.r, %d, %d) AS t" % (src, tile, tile) if tile else None
    if append:
        statement = "INSERT INTO %s (rast) SELECT t %s" % (table, tiles)
    elif tiles:
        statement = "CREATE TABLE %s AS SELECT (row_number() OVER ())::int AS rid, t AS rast %s" % (table, tiles)
    else:
        statement = "CREATE TABLE %s AS SELECT 1 AS rid, %s AS rast" % (table, src)
    return "SET postgis.gdal_enabled_drivers = 'ENABLE_ALL';\n%s;\n" % statement


def tiles_sql(path, srid, table, tile):
    """SQL loading a GDAL file into `table` in tiles of tile x tile, numbered
    in raster2pgsql's order: raster2pgsql's own, or where it is missing the
    server's read (server_read_sql)."""
    if shutil.which("raster2pgsql") is None:
        return server_read_sql(path, srid, table, tile)
    return run(["raster2pgsql", "-q", "-s", str(srid), "-Y", "-t", "%dx%d" % (tile, tile), path, table])


def append_tiles(path, srid, table, tile, db=None):
    """Add a GDAL file's tiles of tile x tile to `table` (rid serial, rast),
    every one of them (-k: tiles of nodata only too, as the server's read
    keeps them), raster2pgsql's output streamed into psql (never held in
    memory); where raster2pgsql is missing, the server reads the file
    (server_read_sql)."""
    if shutil.which("raster2pgsql") is None:
        psql_script(server_read_sql(path, srid, table, tile, append=True), db)
        return
    tiles = subprocess.Popen(["raster2pgsql", "-a", "-k", "-q", "-s", str(srid), "-Y", "-t", "%dx%d" % (tile, tile),
                              path, table], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    load = subprocess.run(psql_command(db), stdin=tiles.stdout, capture_output=True, text=True)
    tiles.stdout.close()
    made = tiles.wait()
    if made != 0 or load.returncode != 0:
        raise RuntimeError("loading %s into %s failed:\n%s%s" % (path, table, tiles.stderr.read().decode(),
                                                               load.stderr))


def load_dem(dem, table, db=None, tile=None, keep_empty=False):
    """Load a DEM with raster2pgsql (one raster value, or tiles of tile x tile;
    keep_empty: all-nodata tiles too, raster2pgsql -k); where raster2pgsql is
    missing, the server reads the file itself (ST_FromGDALRaster: a superuser
    on the same machine, files under 1 GB)."""
    if shutil.which("raster2pgsql") is None:
        psql_script("DROP TABLE IF EXISTS %s;\n%sANALYZE %s;\n"
                    % (table, server_read_sql(dem.path, dem.srid, table, tile), table), db)
        return
    cmd = ["raster2pgsql", "-q", "-s", str(dem.srid), "-Y"]
    if tile:
        cmd += ["-t", "%dx%d" % (tile, tile), "-I", "-C"] + (["-k"] if keep_empty else [])
    sql = run(cmd + [dem.path, table])
    psql_script("DROP TABLE IF EXISTS %s;\n%s\nANALYZE %s;\n" % (table, sql, table), db)


def load_dem_table(dem, prefix, db=None, tile=None):
    """Load a DEM as load_dem does into the table named prefix and the DEM's
    name (other characters than letters, digits and _ as _); return that name."""
    table = prefix + re.sub(r"\W", "_", dem.name)
    load_dem(dem, table, db, tile)
    return table


WGS84_A = 6378137.0
WGS84_F = 1 / 298.257223563


def row_spacing(dem, geo, row):
    """Metric cell spacing (dx, dy) of a row, as terra_gpu measures it: the pixel
    size, or on a geographic DEM the WGS84 radii at the row's latitude.  geo is
    GDAL's geotransform (upper left x, scale x, 0, upper left y, 0, scale y)."""
    if not dem.geographic:
        return dem.pixel_width, dem.pixel_height
    e2 = WGS84_F * (2 - WGS84_F)
    phi = math.radians(geo[3] + (row + 0.5) * geo[5])
    s = math.sin(phi)
    w = math.sqrt(1 - e2 * s * s)
    dx = WGS84_A / w * math.cos(phi) * math.radians(abs(geo[1]))
    dy = WGS84_A * (1 - e2) / (w * w * w) * math.radians(abs(geo[5]))
    return dx, dy


def raw_pixels(path, typecode="d"):
    """Read a raster file as an array of doubles ('d') or floats ('f') via ENVI."""
    gdal_type = {"d": "Float64", "f": "Float32"}[typecode]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.bil")
        run(["gdal_translate", "-q", "-of", "ENVI", "-ot", gdal_type, path, out])
        a = array(typecode)
        with open(out, "rb") as f:
            a.frombytes(f.read())
    return a


RasterBand = collections.namedtuple("RasterBand", "width height ulx uly scale_x scale_y pixels")


def raster_band(data, typecode, band=1):
    """Band `band` of a serialized raster as byteasend sends it (without the
    4-byte length word).  Every band up to `band` must have typecode's pixel
    size: each band is a type byte and its nodata value (padded to the pixel
    size), then the pixels, 8-aligned counting the length word."""
    a = array(typecode)
    size = a.itemsize
    scale_x, scale_y, ulx, uly = array("d", data[4:36])
    width = int.from_bytes(data[56:58], "little")
    height = int.from_bytes(data[58:60], "little")
    n = width * height
    at = 60
    for _ in range(band - 1):
        at += 2 * size + n * size
        at = (at + 4 + 7) // 8 * 8 - 4
    a.frombytes(data[at + 2 * size:at + 2 * size + n * size])
    return RasterBand(width, height, ulx, uly, scale_x, scale_y, a)


def sql_raster_band(expr, typecode, db=None, band=1):
    """Band `band` of a raster expression, read from its serialized bytes."""
    hexdata = psql("SELECT encode(terra_gpu_test_raster_bytes(%s), 'hex')" % expr, db)
    return raster_band(bytes.fromhex(hexdata), typecode, band)


# A superuser-only helper: the serialized bytes of a raster value (byteasend copies
# its varlena), used to read results without a client library.
RASTER_BYTES_FUNCTION = """
CREATE OR REPLACE FUNCTION terra_gpu_test_raster_bytes(raster) RETURNS bytea
    LANGUAGE internal IMMUTABLE STRICT AS 'byteasend';
"""


def file_sha256(path):
    """The SHA-256 of a file's bytes, in hex, read a block at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def machine_description():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gb = 0
    try:
        with open("/proc/meminfo") as f:
            mem_gb = int(f.readline().split()[1]) / 1024 / 1024
    except OSError:
        pass
    return "%s, %d cores, %.0f GB RAM" % (cpu, os.cpu_count() or 0, mem_gb)


def print_report(lines, out=None):
    """Print a benchmark's Markdown report and, where out names a file, write it there too."""
    report = "\n".join(lines)
    print(report)
    if out:
        with open(out, "w") as f:
            f.write(report + "\n")


_failures = 0


def check(ok, what):
    """Print one check's outcome ("ok" or "FAIL" and what it checked); count failures."""
    global _failures
    if not ok:
        _failures += 1
    print("  %s %s" % ("ok  " if ok else "FAIL", what), flush=True)
    return ok


def failures():
    """How many checks failed so far."""
    return _failures


def checks_exit_status(what):
    """Print how the checks went ("N check(s) failed" or "all <what> checks
    passed") and return the exit status that says it: 1 if any failed, else 0."""
    if _failures:
        print("%d check(s) failed" % _failures)
        return 1
    print("all %s checks passed" % what)
    return 0

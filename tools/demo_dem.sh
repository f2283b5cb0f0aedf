#!/usr/bin/env bash
# The demo's DEM, as tools/demo.sh loads it and the README's examples use it:
# the SRTM 3" tile of tools/data (Central Swiss Alps) with its radar voids
# filled, written to DIR/alps_dem.tif, and raster2pgsql's SQL that loads it as
# the table alps_dem in 256 x 256 tiles (key, spatial index, constraints),
# written to DIR/alps_dem.sql.
#
#   tools/demo_dem.sh DIR
#
# SRTM leaves radar voids (7.2 % of this tile, on steep slopes and peaks) as
# nodata.  Nodata cells are outlets for the hydrology functions, so voids would
# cut the streams short: they are interpolated first (GDAL's inverse-distance
# fill).  Needs GDAL's Python bindings (python3-gdal) for gdal_fillnodata.py.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
src="$(cd "$(dirname "$0")" && pwd)/data/medium_alps_n46e008_srtm3.tif"
# Debian's interpreter, which has the bindings (a python3 earlier on PATH may not)
py=/usr/bin/python3
[ -x "$py" ] || py=python3
fillnodata=$(command -v gdal_fillnodata.py || echo /usr/bin/gdal_fillnodata.py)

rm -f "$dir/alps_dem.tif"
"$py" "$fillnodata" -q -md 200 -si 0 "$src" "$dir/alps_dem.tif" -co COMPRESS=DEFLATE
raster2pgsql -s 4326 -t 256x256 -I -C -M -Y "$dir/alps_dem.tif" public.alps_dem 2>/dev/null > "$dir/alps_dem.sql"

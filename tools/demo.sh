#!/usr/bin/env bash
# The demo, on a fresh Debian 12 machine: install and build (setup.sh), start
# a throwaway cluster, load a real DEM (SRTM, Central Swiss Alps) in
# 256 x 256 tiles with raster2pgsql, compute its slope with tg_slope, and export
# the result as a GeoTIFF and a coloured PNG into demo-output/.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$REPO"

"$REPO/tools/setup.sh"
"$REPO/tools/localpg.sh" start

dem="$REPO/tools/data/medium_alps_n46e008_srtm3.tif"
out="$REPO/demo-output"
mkdir -p "$out"

echo "== loading $(basename "$dem") as 256 x 256 tiles"
raster2pgsql -s 4326 -t 256x256 -I -C -M -Y "$dem" public.alps_dem 2>/dev/null > "$out/load.sql"
PGOPTIONS="-c client_min_messages=warning" \
	psql -X -q -v ON_ERROR_STOP=1 -o /dev/null -c "DROP TABLE IF EXISTS alps_dem, alps_slope" -f "$out/load.sql"
psql -X -At -c "SELECT count(*) || ' tiles, ' || sum(ST_Width(rast) * ST_Height(rast)) || ' cells' FROM alps_dem"

echo "== slope in degrees (geographic DEM: scale => 111120 metres per degree)"
# tg_slope works on one raster value: the tiles are merged first, so slopes at
# tile edges see their true neighbours.
PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
\timing on
CREATE TABLE alps_slope AS
SELECT 1 AS rid, tg_slope(ST_Union(rast), scale => 111120) AS rast FROM alps_dem;
\timing off
SELECT AddRasterConstraints('alps_slope'::name, 'rast'::name) \gset
SELECT backend, cells, round(core_ms::numeric, 1) AS library_ms FROM tg_last_run();
SELECT round((s).min::numeric, 2) AS min_deg, round((s).max::numeric, 2) AS max_deg,
       round((s).mean::numeric, 2) AS mean_deg, (s).count AS valid_cells
FROM (SELECT ST_SummaryStats(rast) AS s FROM alps_slope) t;
SQL

echo "== exporting demo-output/alps_slope.tif and demo-output/alps_slope.png"
gdal_translate -q "PG:host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE table=alps_slope mode=2" \
	"$out/alps_slope.tif"
gdaldem color-relief -q -alpha -of PNG "$out/alps_slope.tif" "$REPO/tools/slope_colors.txt" "$out/alps_slope.png"
ls -l "$out/alps_slope.tif" "$out/alps_slope.png"
echo "== done; the cluster keeps running (tools/localpg.sh stop to stop it)"

#!/usr/bin/env bash
# The demo, on a fresh Debian 12 machine: install and build (setup.sh), start
# a throwaway cluster, load a real DEM (SRTM 3", Central Swiss Alps) in
# 256 x 256 tiles with raster2pgsql, and compute on the whole tiled table with
# the coverage forms: the filled DEM, flow accumulation, the watershed and
# travel-time isochrones of a pour point on the Reuss, slope, a viewshed from
# the highest peak and a BMMQ-tree region-of-interest query.  Each product
# stays in the database as a table (open them in QGIS: see the README) and is
# exported to demo-output/ as a GeoTIFF or GeoJSON and a map (PNG).
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$REPO"
start=$(date +%s)

"$REPO/tools/setup.sh"
# the maps: GDAL's Python bindings and matplotlib
missing=()
for p in python3-gdal python3-matplotlib python3-numpy python3-pil; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "== installing: ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
"$REPO/tools/localpg.sh" start
t_ready=$(date +%s)

dem="$REPO/tools/data/medium_alps_n46e008_srtm3.tif"
out="$REPO/demo-output"
mkdir -p "$out"
pg="PG:host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE"
# Debian's interpreter, which has the packages above (a python3 earlier on PATH may not)
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# SRTM leaves radar voids as nodata, which would cut the streams short (nodata
# cells are outlets): tools/demo_dem.sh interpolates them first
echo "== filling the SRTM voids of $(basename "$dem") (gdal_fillnodata.py)"
"$REPO/tools/demo_dem.sh" "$out"

echo "== loading it as 256 x 256 tiles (raster2pgsql)"
PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -o /dev/null \
	-c "SELECT tg_bmmq_drop(n, if_exists => true) FROM unnest(ARRAY['alps_elevation', 'alps_steepness']) n" \
	-c "DROP TABLE IF EXISTS alps_dem, alps_filled, alps_accumulation, alps_streams, alps_slope, alps_watershed,
	    alps_isochrones, alps_travel_time, alps_viewshed, alps_roi" \
	-f "$out/alps_dem.sql"
psql -X -At -c "SELECT count(*) || ' tiles, ' || sum(ST_Width(rast) * ST_Height(rast)) || ' cells' FROM alps_dem"

echo "== the products, one coverage-form call each (whole table as one grid: no tile-edge effects)"
PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -v OUT_JSON="$out/demo.json" <<'SQL'
\timing on
\echo filled DEM
SELECT tg_create_result('alps_filled', $$SELECT * FROM tg_fill(coverage => 'alps_dem')$$) AS written \gset
\echo flow accumulation (D8, upslope area in m2)
SELECT tg_create_result('alps_accumulation', $$SELECT * FROM tg_flow_accumulation(coverage => 'alps_dem', units => 'area')$$) AS written \gset
\echo stream network (one row per link, Strahler order; streams drain 5 km2 or more)
SELECT tg_create_result('alps_streams', $$SELECT * FROM tg_stream_links(coverage => 'alps_dem', threshold => 5e6, units => 'area')$$) AS written \gset
\echo slope (degrees; geographic DEM: scale => 111120 metres per degree)
SELECT tg_create_result('alps_slope', $$SELECT * FROM tg_slope(coverage => 'alps_dem', scale => 111120)$$) AS written \gset
\timing off
-- the pour point: the cell of highest accumulation within 1 km of Amsteg,
-- where the Reuss leaves the Gotthard massif (a point on a real stream)
SELECT ST_AsEWKT(c.geom) AS outlet, ST_X(c.geom) AS outlet_x, ST_Y(c.geom) AS outlet_y
FROM alps_accumulation a, ST_PixelAsCentroids(a.rast) AS c
WHERE ST_DWithin(a.rast::geometry, 'SRID=4326;POINT(8.67 46.77)'::geometry, 0.02)
  AND ST_DWithin(c.geom::geography, 'SRID=4326;POINT(8.67 46.77)'::geography, 1000)
ORDER BY c.val DESC LIMIT 1 \gset
\echo pour point :outlet
\timing on
-- (the polygons snapped to 1e-9 degrees and merged again: the tiles' corners,
-- stored as floats, leave slivers along the seams between the per-tile polygons)
\echo watershed
SELECT tg_create_result('alps_watershed',
       format($$SELECT 'Reuss at Amsteg' AS name,
                       ST_Multi(ST_UnaryUnion(ST_SnapToGrid(
                         tg_watershed_polygon(coverage => 'alps_dem', outlet => %L), 1e-9))) AS geom$$,
              :'outlet')) AS written \gset
\echo travel time (Manning-like n 0.05, K 2 m/s; seconds)
SELECT tg_create_result('alps_travel_time',
       format($$SELECT * FROM tg_travel_time(coverage => 'alps_dem', outlet => %L, n => 0.05, k => 2)$$, :'outlet')) AS written \gset
\echo 30-minute isochrones
SELECT tg_create_result('alps_isochrones',
       format($$SELECT time_from, time_to, ST_Multi(ST_UnaryUnion(ST_SnapToGrid(geom, 1e-9))) AS geom
                FROM tg_isochrones(coverage => 'alps_dem', outlet => %L, "interval" => 1800, n => 0.05, k => 2)$$,
              :'outlet')) AS written \gset
\timing off
-- the highest cell of the DEM: the Finsteraarhorn
SELECT ST_AsEWKT(c.geom) AS peak, ST_X(c.geom) AS peak_x, ST_Y(c.geom) AS peak_y, c.val AS peak_m
FROM alps_dem, ST_PixelAsCentroids(rast) AS c ORDER BY c.val DESC LIMIT 1 \gset
\timing on
\echo viewshed from the highest peak (:peak_m m)
SELECT tg_create_result('alps_viewshed',
       format($$SELECT * FROM tg_viewshed(coverage => 'alps_dem', observer => %L, observer_height => 2)$$, :'peak')) AS written \gset
\echo BMMQ-tree indexes on elevation and slope
SELECT tg_bmmq_build('alps_elevation', 'alps_dem', bins => ARRAY[1000, 1500, 2000, 2500, 3000, 3500]) AS elevation_index;
SELECT tg_bmmq_build('alps_steepness', 'alps_slope', bins => ARRAY[10, 20, 30, 40]) AS steepness_index;
\timing off
-- statistics on the fresh index rows, or the planner may scan them badly
ANALYZE terra_gpu.bmmq_index, terra_gpu.bmmq_tile, terra_gpu.bmmq_node;
\echo region of interest: above 2,000 m and flatter than 10 degrees
-- (exact without refine: 2,000 and 10 are bin boundaries); one multipolygon per quadrant
SELECT clock_timestamp() AS roi_start \gset
\timing on
SELECT tg_create_result('alps_roi',
       $$SELECT level, ST_Multi(geom) AS geom
         FROM tg_bmmq_roi(ARRAY['alps_elevation', 'alps_steepness'], '{2000, -Infinity}', '{Infinity, 10}', 'and')$$)
       AS written \gset
\timing off
SELECT round(extract(epoch FROM clock_timestamp() - :'roi_start'::timestamptz) * 1000) AS roi_ms \gset
-- (tg_create_result gave every table a key and a spatial index, registered the
-- rasters in raster_columns and typed the polygons geometry(MultiPolygon, 4326),
-- for GDAL and QGIS)
\echo
\echo what came out:
SELECT 'filled DEM' AS product, count(*) || ' cells raised, up to ' || round(max(filled - dem)) || ' m' AS result
FROM alps_filled f JOIN alps_dem d USING (rid), unnest(ST_DumpValues(f.rast, 1), ST_DumpValues(d.rast, 1)) AS u(filled, dem)
WHERE filled > dem
UNION ALL SELECT 'largest upslope area', round(max((ST_SummaryStats(rast)).max) / 1e6) || ' km2' FROM alps_accumulation
UNION ALL SELECT 'stream network', count(*) || ' links, ' || round(sum(length) / 1000) || ' km, Strahler order up to ' || max(strahler) FROM alps_streams
UNION ALL SELECT 'watershed', round(ST_Area(geom::geography) / 1e6) || ' km2' FROM alps_watershed
UNION ALL SELECT 'isochrones', count(*) || ' bands of 30 min, longest ' || round(max(time_to) / 60) || ' min' FROM alps_isochrones
UNION ALL SELECT 'slope', 'mean ' || round(avg((ST_SummaryStats(rast)).mean)::numeric, 1) || ' degrees' FROM alps_slope
UNION ALL SELECT 'viewshed', round((100.0 * sum((ST_SummaryStats(rast)).sum) / 1442401)::numeric, 1) || ' % of the cells visible' FROM alps_viewshed
UNION ALL SELECT 'region of interest', count(*) || ' quadrants and cells, ' || round(sum(ST_Area(geom::geography)) / 1e6) || ' km2' FROM alps_roi;
-- figures for the map captions
\pset tuples_only on
\pset format unaligned
\o :OUT_JSON
SELECT json_build_object(
  'outlet', json_build_array(:outlet_x, :outlet_y), 'peak', json_build_array(:peak_x, :peak_y), 'peak_m', :peak_m,
  'interval_s', 1800, 'roi_min_m', 2000, 'roi_max_deg', 10, 'roi_ms', :roi_ms,
  'raised_cells', (SELECT count(*) FROM alps_filled f JOIN alps_dem d USING (rid),
                          unnest(ST_DumpValues(f.rast, 1), ST_DumpValues(d.rast, 1)) AS u(filled, dem)
                   WHERE filled > dem),
  'watershed_km2', (SELECT ST_Area(geom::geography) / 1e6 FROM alps_watershed),
  'visible_pct', (SELECT 100.0 * sum((ST_SummaryStats(rast)).sum) / 1442401 FROM alps_viewshed),
  'roi_km2', (SELECT sum(ST_Area(geom::geography)) / 1e6 FROM alps_roi));
\o
SQL
t_sql=$(date +%s)

echo "== exporting GeoTIFFs and GeoJSON into demo-output/"
for t in alps_filled alps_accumulation alps_slope alps_travel_time alps_viewshed; do
	gdal_translate -q "$pg table=$t mode=2" "$out/$t.tif"
done
psql -X -At -c "SELECT ST_AsGeoJSON(geom) FROM alps_watershed" > "$out/alps_watershed.geojson"
psql -X -At -c "SELECT json_agg(json_build_array(strahler, ST_AsGeoJSON(geom)::json)) FROM alps_streams" \
	> "$out/alps_streams.json"
# on the DEM's grid: 1201 x 1201 cells of 3", corners at the cell centres 8/46 E/N and 9/47 E/N
gdal_rasterize -q -burn 1 -init 0 -ot Byte -te 7.99958333 45.99958333 9.00041667 47.00041667 -ts 1201 1201 \
	-sql "SELECT geom FROM alps_roi" "$pg" "$out/alps_roi.tif"
# the maps' relief: tg_hillshade of the coverage (gdaldem's multidirectional bytes)
psql -X -q -At -c "SELECT tg_create_result('alps_hillshade', \$\$SELECT * FROM tg_hillshade(coverage => 'alps_dem',
	scale => 111120, z_factor => 1.5, method => 'multidirectional', pixeltype => '8BUI')\$\$, replace => true)" > /dev/null
gdal_translate -q "$pg table=alps_hillshade mode=2" "$out/hillshade.tif"

echo "== maps (title, legend, scale bar) into demo-output/"
"$py" "$REPO/tools/demo_maps.py" "$out"
end=$(date +%s)
echo "== done in $((end - start)) s (setup and cluster $((t_ready - start)) s, SQL $((t_sql - t_ready)) s, export and maps $((end - t_sql)) s)"
echo "   the cluster keeps running: eval \"\$(tools/localpg.sh env)\"; psql   (tools/localpg.sh stop to stop it)"

-- RUSLE soil loss, travel time, isochrones and watersheds (value and coverage forms)
SET terra_gpu.backend = 'cpu';
SET extra_float_digits = 0;

\i regress/include/try.sql

-- A V-shaped catchment of 5 m cells: hillsides fall 0.3 towards the channel in
-- column 11, which falls 0.02 towards the bottom edge; all water leaves through
-- the channel's foot (column 11, row 30).  The travel time of cell (x, y) is
--   |x - 11| n d / (K sqrt(0.3)) + (30 - y) n d / (K sqrt(0.02))
CREATE TEMP TABLE v AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(21, 30, 500000, 4000000, 5, -5, 0, 0, 32633), '32BF'::text, 0, -9999),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                 (SELECT y, array_agg((100 + 1.5 * abs(x - 11) + 0.1 * (30 - y))::float8 ORDER BY x) AS r
                  FROM generate_series(1, 30) y, generate_series(1, 21) x GROUP BY y) s)) AS rast,
       ST_SetSRID(ST_MakePoint(500052.5, 3999852.5), 32633) AS foot;
CREATE TEMP TABLE v_tiles AS SELECT (row_number() OVER ())::int AS rid, t AS rast FROM v, ST_Tile(rast, 8, 8) AS t;

SELECT x, y, round(ST_Value(t, 1, x, y)::numeric, 4) AS travel_time,
       round((abs(x - 11) * 0.05 * 5 / (2 * sqrt(0.3)) + (30 - y) * 0.05 * 5 / (2 * sqrt(0.02)))::numeric, 4) AS closed_form
FROM (SELECT tg_travel_time(rast, n => 0.05, k => 2) AS t FROM v) s,
     (VALUES (1, 1), (11, 1), (21, 15), (11, 30), (5, 29)) AS c(x, y) ORDER BY x, y;
-- below min_slope the channel counts as min_slope
SELECT round(ST_Value(tg_travel_time(rast, n => 0.05, k => 2, min_slope => 0.05), 1, 11, 1)::numeric, 4) AS floored,
       round((29 * 0.05 * 5 / (2 * sqrt(0.05)))::numeric, 4) AS closed_form FROM v;
-- factors may be rasters: n doubled everywhere doubles every time
SELECT max(abs(a.val * 2 - b.val)) < 1e-4 AS n_raster_doubles
FROM v, ST_PixelAsPoints(tg_travel_time(rast, n => 0.05, k => 2)) a
JOIN ST_PixelAsPoints((SELECT tg_travel_time(rast, n => ST_MapAlgebra(rast, '32BF', '0.1'), k => 2) FROM v)) b USING (x, y);

-- the watershed of the foot is everything; of a hillside cell, its path upstream
SELECT (ST_SummaryStats(tg_watershed(rast, foot))).count AS foot_cells,
       (ST_SummaryStats(tg_watershed(rast, ST_SetSRID(ST_MakePoint(500052.5, 3999902.5), 32633)))).count AS channel_row_11_cells,
       ST_Area(tg_watershed_polygon(rast, foot)) AS foot_area
FROM v;

-- isochrones: bands of 20 time units; the polygons tile the watershed
SELECT time_from, time_to, ST_Area(geom) AS area, ST_GeometryType(geom) AS type
FROM v, tg_isochrones(rast, foot, 20, n => 0.05, k => 2);
SELECT sum(ST_Area(geom)) AS band_area, ST_Area(ST_Union(geom)) AS union_area,
       (SELECT ST_Area(tg_watershed_polygon(rast, foot)) FROM v) AS watershed_area
FROM v, tg_isochrones(rast, foot, 20, n => 0.05, k => 2);
SELECT ST_BandPixelType(b) AS type, ST_BandNoDataValue(b) AS nodata, ST_Value(b, 1, 1) AS band_of_corner,
       ST_Value(b, 11, 30) AS band_of_foot
FROM (SELECT tg_isochrone_bands(rast, foot, 20, n => 0.05, k => 2) AS b FROM v) s;

-- LS: (m + 1) (A d / a0)^m (sin b / b0)^n over the accumulation and ST_Slope
SELECT max(abs(ls.val - ref.val) / ref.val) < 1e-5 AS ls_matches_formula,
       count(*) AS cells
FROM v,
     ST_PixelAsPoints(tg_ls_factor(rast)) AS ls
JOIN ST_PixelAsPoints((SELECT ST_MapAlgebra(tg_flow_accumulation(rast, routing => 'mfd-md', fill => false), 1,
                                            ST_Slope(rast, 1, '64BF', 'DEGREES'), 1,
                                            '1.4 * power([rast1] * 5 / 22.1, 0.4) * power(sin(radians([rast2])) / 0.0896, 1.3)',
                                            '64BF') FROM v)) AS ref USING (x, y);
-- RUSLE with a K raster equals R K LS C P
SELECT max(abs(a.val - ls.val * 300 * 0.025 * 0.2) / (ls.val * 300 * 0.025 * 0.2)) < 1e-5 AS rusle_matches
FROM v,
     ST_PixelAsPoints(tg_rusle(rast, r => 300, k => ST_MapAlgebra(rast, '32BF', '0.025'), c => 0.2)) a
JOIN ST_PixelAsPoints((SELECT tg_ls_factor(rast) FROM v)) ls USING (x, y);
-- a nodata K cell gives nodata soil loss
SELECT ST_Value(tg_rusle(rast, 300, ST_SetValue(ST_SetBandNoDataValue(ST_MapAlgebra(rast, '32BF', '0.025'), -1), 3, 3, -1)), 3, 3) AS nodata_k,
       ST_BandPixelType(tg_rusle(rast, 300, 0.025)) AS type FROM v;

-- coverage forms equal the value forms on the whole raster
SELECT (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_travel_time(coverage => 'v_tiles', outlet => (SELECT foot FROM v), n => 0.05, k => 2))
     = (SELECT ST_DumpValues(tg_travel_time(rast, foot, n => 0.05, k => 2)) FROM v) AS travel_time,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_ls_factor(coverage => 'v_tiles'))
     = (SELECT ST_DumpValues(tg_ls_factor(rast)) FROM v) AS ls,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_watershed(coverage => 'v_tiles', outlet => (SELECT foot FROM v)))
     = (SELECT ST_DumpValues(tg_watershed(rast, foot)) FROM v) AS watershed,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_isochrone_bands(coverage => 'v_tiles', outlet => (SELECT foot FROM v), "interval" => 20))
     = (SELECT ST_DumpValues(tg_isochrone_bands(rast, foot, 20)) FROM v) AS bands;
CREATE TEMP TABLE k_tiles AS SELECT rid, ST_MapAlgebra(rast, '32BF', '0.025') AS rast FROM v_tiles;
SELECT (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_rusle(coverage => 'v_tiles', r => 300, k => 'k_tiles'::regclass, c => 0.2))
     = (SELECT ST_DumpValues(tg_rusle(rast, 300, ST_MapAlgebra(rast, '32BF', '0.025'), 0.2)) FROM v) AS rusle_coverage_factor;
SELECT count(*) AS bands, sum(ST_Area(geom)) AS area
FROM tg_isochrones(coverage => 'v_tiles', outlet => (SELECT foot FROM v), "interval" => 20, n => 0.05, k => 2);
SELECT ST_Area(tg_watershed_polygon(coverage => 'v_tiles', outlet => (SELECT foot FROM v))) AS coverage_watershed_area;
-- in degrees each tile's corner is its own sum, a few units in the last place off its
-- neighbour's: the polygons are put on the grid's vertices, and merge as the value form's
CREATE TEMP TABLE v_deg AS
SELECT ST_SetSRID(ST_SetGeoReference(rast, 8.0, 47.0, 1.0 / 1200, -1.0 / 1200, 0, 0), 4326) AS rast,
       ST_SetSRID(ST_MakePoint(8.0 + 10.5 / 1200, 47.0 - 29.5 / 1200), 4326) AS foot FROM v;
CREATE TEMP TABLE v_deg_tiles AS SELECT (row_number() OVER ())::int AS rid, t AS rast FROM v_deg, ST_Tile(rast, 8, 8) AS t;
SELECT ST_NumGeometries(ST_Union(ST_Polygon(rast))) AS tiles_polygons_unmerged
FROM tg_watershed(coverage => 'v_deg_tiles', outlet => (SELECT foot FROM v_deg));
SELECT ST_NumGeometries(tg_watershed_polygon(coverage => 'v_deg_tiles', outlet => (SELECT foot FROM v_deg))) AS coverage_parts,
       (SELECT ST_NumGeometries(tg_watershed_polygon(rast, foot)) FROM v_deg) AS value_parts;
SELECT count(*) AS bands, count(*) FILTER (WHERE c.parts = w.parts) AS same_parts
FROM (SELECT time_from, ST_NumGeometries(geom) AS parts
      FROM tg_isochrones(coverage => 'v_deg_tiles', outlet => (SELECT foot FROM v_deg), "interval" => 20, n => 0.05, k => 2)) c
JOIN (SELECT time_from, ST_NumGeometries(geom) AS parts FROM v_deg, tg_isochrones(rast, foot, 20, n => 0.05, k => 2)) w
USING (time_from);

-- pour point snapping: from (8, 10) on the hillside (1-based; D8 accumulation 8 cells)
-- the channel cell (11, 10) lies 15 m away and drains rows 1 to 10 (210 cells); within
-- 14 m the best is column 10 (10 cells each in rows 9 to 11): the nearest, (10, 10)
CREATE TEMP TABLE hill AS SELECT ST_SetSRID(ST_MakePoint(500037.5, 3999952.5), 32633) AS p;
SELECT d, ST_AsText(tg_snap_pour_point(rast, p, d)) AS snapped
FROM v, hill, unnest(ARRAY[0, 4.9, 14, 15, 1000]::float8[]) AS d ORDER BY d;
-- a tie in accumulation and distance: the first in row-major order, (10, 9) before (10, 10)
SELECT ST_AsText(tg_snap_pour_point(rast, ST_SetSRID(ST_MakePoint(500047.5, 3999955), 32633), 2.5)) AS first_of_tie FROM v;
-- the coverage form snaps on the whole table
SELECT ST_AsText(tg_snap_pour_point(coverage => 'v_tiles', point => p, distance => 15)) AS coverage_snapped,
       ST_SRID(tg_snap_pour_point(coverage => 'v_tiles', point => p, distance => 15)) AS srid FROM hill;
-- snap on every function taking an outlet: the hillside point's own catchment, then the channel's
SELECT (ST_SummaryStats(tg_watershed(rast, p))).count AS unsnapped_cells,
       (ST_SummaryStats(tg_watershed(rast, p, snap => 15))).count AS snapped_cells,
       ST_Area(tg_watershed_polygon(rast, p, snap => 15)) AS snapped_area,
       (SELECT sum((ST_SummaryStats(rast)).count) FROM tg_watershed(coverage => 'v_tiles', outlet => p, snap => 15)) AS coverage_cells,
       ST_Area(tg_watershed_polygon(coverage => 'v_tiles', outlet => p, snap => 15)) AS coverage_area
FROM v, hill;
SELECT ST_DumpValues(tg_travel_time(rast, p, n => 0.05, k => 2, snap => 15))
     = ST_DumpValues(tg_travel_time(rast, ST_SetSRID(ST_MakePoint(500052.5, 3999952.5), 32633), n => 0.05, k => 2)) AS travel_time,
       ST_DumpValues(tg_isochrone_bands(rast, p, 20, snap => 15))
     = ST_DumpValues(tg_isochrone_bands(rast, ST_SetSRID(ST_MakePoint(500052.5, 3999952.5), 32633), 20)) AS bands,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_travel_time(coverage => 'v_tiles', outlet => p, n => 0.05, k => 2, snap => 15))
     = ST_DumpValues(tg_travel_time(rast, p, n => 0.05, k => 2, snap => 15)) AS coverage_travel_time,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_isochrone_bands(coverage => 'v_tiles', outlet => p, "interval" => 20, snap => 15))
     = ST_DumpValues(tg_isochrone_bands(rast, p, 20, snap => 15)) AS coverage_bands
FROM v, hill;
SELECT count(*) AS bands, sum(ST_Area(geom)) AS area FROM v, hill, tg_isochrones(rast, p, 20, n => 0.05, k => 2, snap => 15);
SELECT count(*) AS bands, sum(ST_Area(geom)) AS area
FROM hill, tg_isochrones(coverage => 'v_tiles', outlet => p, "interval" => 20, n => 0.05, k => 2, snap => 15);
-- snap on the raw DEM (fill => false): here the same cell
SELECT ST_AsText(tg_snap_pour_point(rast, p, 15, fill => false)) AS unfilled FROM v, hill;

-- bad input
SELECT state, message FROM pg_temp.try($$SELECT tg_watershed(rast, ST_SetSRID(ST_MakePoint(0, 0), 32633)) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_watershed(rast, ST_SetSRID(ST_MakePoint(500052.5, 3999852.5), 4326)) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_watershed(rast, ST_Buffer(foot, 1)) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_watershed(rast, NULL) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_travel_time(rast, foot, n => 0) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_travel_time(rast, foot, k => -2) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_travel_time(rast, foot, n => ST_MapAlgebra(rast, '32BF', '-1')) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_travel_time(rast, foot, n => now()) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_isochrones(rast, foot, 0) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_rusle(rast, 300, ST_Tile(rast, 8, 8)) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_rusle(rast, 300, NULL::float8) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_ls_factor(rast, b0 => 0) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_ls_factor(rast, routing => 'd16') FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT * FROM tg_rusle(coverage => 'v_tiles', r => 300, k => 'v_tiles'::regclass, c => now())$$);
-- a nodata outlet
UPDATE v SET rast = ST_SetValue(rast, 11, 30, -9999);
SELECT state, message FROM pg_temp.try($$SELECT tg_watershed(rast, foot) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_watershed(rast, foot, snap => 4) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_snap_pour_point(rast, foot, 4) FROM v$$);
-- 5 m reach the neighbours: the channel cell above the foot drains most
SELECT ST_AsText(tg_snap_pour_point(rast, foot, 5)) AS off_nodata,
       (ST_SummaryStats(tg_watershed(rast, foot, snap => 5))).count AS cells FROM v;
-- bad snapping distances and points
SELECT state, message FROM pg_temp.try($$SELECT tg_watershed(rast, foot, snap => -1) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_watershed_polygon(rast, foot, snap => 'NaN') FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_travel_time(rast, foot, snap => 'Infinity') FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_isochrone_bands(rast, foot, 20, snap => -0.5) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT * FROM tg_isochrones(coverage => 'v_tiles', outlet => (SELECT foot FROM v), "interval" => 20, snap => -1)$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_watershed(rast, foot, snap => NULL) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_snap_pour_point(rast, foot, -1) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_snap_pour_point(rast, foot, NULL) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_snap_pour_point(rast, ST_SetSRID(ST_MakePoint(500052.5, 3999852.5), 4326), 10) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_snap_pour_point(rast, ST_SetSRID(ST_MakePoint(0, 0), 32633), 10) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_snap_pour_point(coverage => 'v_tiles', point => ST_MakePoint(500052.5, 3999852.5), distance => 10)$$);
SELECT tg_snap_pour_point(NULL::raster, ST_MakePoint(0, 0), 1) IS NULL AS null_raster_gives_null;

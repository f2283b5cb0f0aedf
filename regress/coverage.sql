-- Coverage forms: a tiled raster table processed as one grid, tiles back
SET terra_gpu.backend = 'cpu';
SET extra_float_digits = 0;

-- a 10 x 7 DEM whose depressions straddle the 4 x 3 tiles cut from it
CREATE TEMP TABLE dem AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(10, 7, 500000, 4000070, 10, -10, 0, 0, 32632), '16BSI'::text, 0, -9999),
       1, 1, 1, ARRAY[[11, 8, 5, 13, 10, 7, 15, 12, 20, 17], [3, 11, 8, 16, 13, 10, 18, 15, 12, 20],
                      [6, 14, 11, 8, 16, 13, 10, 18, 15, 23], [9, 6, 14, 11, 19, 16, 13, 21, 18, 15],
                      [12, 9, 17, 14, 11, 19, 16, 13, 21, 18], [15, 12, 9, 17, 14, 22, 19, 16, 24, 21],
                      [18, 15, 12, 20, 17, 14, 22, 19, 16, 24]]::float8[]) AS rast;
CREATE TEMP TABLE tiles AS SELECT (row_number() OVER ())::int AS rid, t AS rast FROM dem, ST_Tile(rast, 4, 3) AS t;

-- one row per input tile, each with the tile's extent
SELECT o.rid, ST_Width(o.rast) AS width, ST_Height(o.rast) AS height,
       ST_UpperLeftX(o.rast) = ST_UpperLeftX(t.rast) AND ST_UpperLeftY(o.rast) = ST_UpperLeftY(t.rast) AS same_corner
FROM tg_fill(coverage => 'tiles') AS o JOIN tiles AS t USING (rid) ORDER BY o.rid;

-- the tiles, put together, are the value form on the whole DEM
SELECT (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_fill(coverage => 'tiles'))
     = (SELECT ST_DumpValues(tg_fill(rast)) FROM dem) AS fill,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_slope(coverage => 'tiles'))
     = (SELECT ST_DumpValues(tg_slope(rast)) FROM dem) AS slope,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_flow_direction(coverage => 'tiles'))
     = (SELECT ST_DumpValues(tg_flow_direction(rast)) FROM dem) AS d8,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_flow_accumulation(coverage => 'tiles', routing => 'mfd-md'))
     = (SELECT ST_DumpValues(tg_flow_accumulation(rast, routing => 'mfd-md')) FROM dem) AS mfd_accumulation;
SELECT ST_DumpValues(ST_Union(rast)) AS accumulation FROM tg_flow_accumulation(coverage => 'tiles');
-- tile by tile the answer would be wrong: flow stops at every tile edge
SELECT sum(ST_Value(tg_flow_accumulation(rast), 1, 1)) AS per_tile_corners,
       (SELECT sum(ST_Value(o.rast, 1, 1)) FROM tg_flow_accumulation(coverage => 'tiles') o) AS coverage_corners
FROM tiles;

-- the chained call: fill, directions and accumulation at once
SELECT rid, ST_BandPixelType(filled) AS filled, ST_BandPixelType(direction) AS direction,
       ST_BandPixelType(accumulation) AS accumulation
FROM tg_hydrology(coverage => 'tiles') WHERE rid = 1;
SELECT (SELECT ST_DumpValues(ST_Union(accumulation)) FROM tg_hydrology(coverage => 'tiles'))
     = (SELECT ST_DumpValues(tg_flow_accumulation(rast)) FROM dem) AS accumulation,
       (SELECT ST_DumpValues(ST_Union(direction)) FROM tg_hydrology(coverage => 'tiles', routing => 'mfd-md'))
     = (SELECT ST_DumpValues(tg_flow_direction(rast, routing => 'mfd-md', output => 'mask')) FROM dem) AS mfd_mask,
       (SELECT ST_DumpValues((tg_hydrology(rast)).filled) FROM dem)
     = (SELECT ST_DumpValues(tg_fill(rast)) FROM dem) AS value_form_filled;

-- a weight coverage on the same grid
CREATE TEMP TABLE rain AS SELECT rid, ST_MapAlgebra(rast, '8BUI', '2') AS rast FROM tiles;
SELECT (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_flow_accumulation(coverage => 'tiles', weight => 'rain'))
     = (SELECT ST_DumpValues(tg_flow_accumulation(rast, weight => ST_MapAlgebra(rast, '8BUI', '2'))) FROM dem) AS weighted;

-- other column names, and a missing tile (its cells are nodata for the rest)
CREATE TEMP TABLE renamed AS SELECT rid * 10 AS tile_id, rast AS dem FROM tiles WHERE rid <> 5;
SELECT array_agg(tile_id ORDER BY tile_id) AS ids
FROM tg_fill(coverage => 'renamed', rast_column => 'dem', id_column => 'tile_id') AS o(tile_id, rast);
SELECT (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_flow_accumulation(coverage => 'renamed', rast_column => 'dem', id_column => 'tile_id'))
     = (SELECT ST_DumpValues(ST_MapAlgebra(tg_flow_accumulation(ST_Union(dem)), 1, ST_Union(dem), 1, '[rast1]', NULL,
                                           'FIRST', NULL, NULL)) FROM renamed) AS hole_is_nodata;

-- a CREATE TABLE AS gives a coverage that AddRasterConstraints accepts as aligned
CREATE TEMP TABLE dem_acc AS SELECT * FROM tg_flow_accumulation(coverage => 'tiles');
SELECT ST_SameAlignment(rast) AS same_alignment, count(*) AS tiles FROM dem_acc;

-- bad coverages: each a clear error naming the offending tile
\set VERBOSITY terse
CREATE TEMP TABLE bad AS SELECT * FROM tiles;
UPDATE bad SET rast = ST_SetUpperLeft(rast, ST_UpperLeftX(rast) + 5, ST_UpperLeftY(rast)) WHERE rid = 4;
SELECT count(*) FROM tg_fill(coverage => 'bad');
UPDATE bad SET rast = t.rast FROM tiles t WHERE bad.rid = t.rid AND t.rid = 4;
UPDATE bad SET rast = ST_SetSRID(rast, 32633) WHERE rid = 4;
SELECT count(*) FROM tg_fill(coverage => 'bad');
UPDATE bad SET rast = ST_SetScale(ST_SetSRID(rast, 32632), 20, -20) WHERE rid = 4;
SELECT count(*) FROM tg_fill(coverage => 'bad');
UPDATE bad SET rast = t.rast FROM tiles t WHERE bad.rid = t.rid AND t.rid = 4;
INSERT INTO bad SELECT 99, rast FROM tiles WHERE rid = 2;
SELECT count(*) FROM tg_fill(coverage => 'bad');
DELETE FROM bad WHERE rid = 99;
UPDATE bad SET rast = ST_MapAlgebra(rast, '32BF', '[rast]') WHERE rid = 4;
SELECT count(*) FROM tg_fill(coverage => 'bad');
SELECT count(*) FROM tg_fill(coverage => 'tiles', band => 2);
SELECT count(*) FROM tg_fill(coverage => 'tiles', rast_column => 'nope');
SELECT count(*) FROM tg_fill(coverage => 'no_such_table');
SELECT count(*) FROM tg_fill(coverage => NULL);
CREATE TEMP TABLE empty (rid int, rast raster);
SELECT count(*) FROM tg_fill(coverage => 'empty');
CREATE TEMP TABLE shifted AS SELECT rid, ST_SetUpperLeft(rast, ST_UpperLeftX(rast) + 1, ST_UpperLeftY(rast)) AS rast FROM tiles;
SELECT count(*) FROM tg_flow_accumulation(coverage => 'tiles', weight => 'shifted');
CREATE TEMP TABLE big AS SELECT 1 AS rid, ST_AddBand(ST_MakeEmptyRaster(2000, 2000, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, 0, NULL) AS rast;
SET terra_gpu.max_memory_mb = 1;
SELECT count(*) FROM tg_flow_accumulation(coverage => 'big');
RESET terra_gpu.max_memory_mb;

-- beyond terra_gpu.max_memory_mb, priority-flood fills in strips of rows: a 300 x 200 DEM of
-- pits, plateaus and holes in 20 x 20 tiles (one missing) needs about 2.4 MB as one grid
CREATE TEMP TABLE pits AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(300, 200, 0, 200, 1, -1, 0, 0, 0), '16BSI'::text, 0, -9999),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                  (SELECT y, array_agg(CASE WHEN (x * 7 + y * 13) % 97 = 0 THEN -9999
                                            ELSE (100 + 40 * sin(x / 23.0) * cos(y / 17.0) + (x * 31 + y * 17) % 13)::int / 4 END
                                       ORDER BY x) AS r
                   FROM generate_series(0, 299) x, generate_series(0, 199) y GROUP BY y) rows)) AS rast;
CREATE TEMP TABLE pit_tiles AS SELECT (row_number() OVER ())::int AS rid, t AS rast FROM pits, ST_Tile(rast, 20, 20) AS t;
DELETE FROM pit_tiles WHERE rid = 77;
CREATE TEMP TABLE pit_whole AS SELECT * FROM tg_fill(coverage => 'pit_tiles');
SET client_min_messages = warning;		-- the run in strips says so
SET terra_gpu.max_memory_mb = 1;
CREATE TEMP TABLE pit_strips AS SELECT * FROM tg_fill(coverage => 'pit_tiles');
SELECT method, note FROM tg_last_run();
SELECT count(*) AS tiles, count(*) FILTER (WHERE ST_AsBinary(w.rast) = ST_AsBinary(b.rast)) AS identical,
       sum((ST_SummaryStats(b.rast)).sum - (ST_SummaryStats(t.rast)).sum) > 0 AS raised
FROM pit_whole w JOIN pit_strips b USING (rid) JOIN pit_tiles t USING (rid);
-- what cannot run in strips says so
SELECT count(*) FROM tg_fill(coverage => 'pit_tiles', epsilon => 0.01);
SELECT count(*) FROM tg_fill(coverage => 'pit_tiles', method => 'planchon-darboux');
-- directions and D8 accumulation run in strips too: flats that cross strip boundaries are resolved
-- on their own cells and the flow between strips is stitched (Barnes 2017): the same tiles
RESET terra_gpu.max_memory_mb;
CREATE TEMP TABLE pit_acc_whole AS SELECT * FROM tg_flow_accumulation(coverage => 'pit_tiles');
CREATE TEMP TABLE pit_mask_whole AS
SELECT * FROM tg_flow_direction(coverage => 'pit_tiles', routing => 'mfd-md', output => 'mask');
SET terra_gpu.max_memory_mb = 1;
CREATE TEMP TABLE pit_acc_strips AS SELECT * FROM tg_flow_accumulation(coverage => 'pit_tiles');
SELECT method, note FROM tg_last_run();
SET terra_gpu.max_memory_mb = 2;
CREATE TEMP TABLE pit_mask_strips AS
SELECT * FROM tg_flow_direction(coverage => 'pit_tiles', routing => 'mfd-md', output => 'mask');
SELECT method, note FROM tg_last_run();
SELECT 'accumulation' AS output, count(*) AS tiles,
       count(*) FILTER (WHERE ST_AsBinary(w.rast) = ST_AsBinary(b.rast)) AS identical,
       max((ST_SummaryStats(b.rast)).max) AS largest
FROM pit_acc_whole w JOIN pit_acc_strips b USING (rid)
UNION ALL
SELECT 'mfd-md mask', count(*), count(*) FILTER (WHERE ST_AsBinary(w.rast) = ST_AsBinary(b.rast)), NULL
FROM pit_mask_whole w JOIN pit_mask_strips b USING (rid);
-- dinf and anisotropic directions in strips equal the whole DEM's
RESET terra_gpu.max_memory_mb;
CREATE TEMP TABLE pit_an_whole AS
SELECT * FROM tg_flow_direction(coverage => 'pit_tiles', routing => 'anisotropic', output => 'shares');
CREATE TEMP TABLE pit_angle_whole AS
SELECT * FROM tg_flow_direction(coverage => 'pit_tiles', routing => 'dinf', output => 'angle');
SET terra_gpu.max_memory_mb = 2;
CREATE TEMP TABLE pit_an_strips AS
SELECT * FROM tg_flow_direction(coverage => 'pit_tiles', routing => 'anisotropic', output => 'shares');
SELECT method, note FROM tg_last_run();
CREATE TEMP TABLE pit_angle_strips AS
SELECT * FROM tg_flow_direction(coverage => 'pit_tiles', routing => 'dinf', output => 'angle');
SELECT 'anisotropic shares' AS output, count(*) AS tiles,
       count(*) FILTER (WHERE ST_AsBinary(w.rast) = ST_AsBinary(b.rast)) AS identical
FROM pit_an_whole w JOIN pit_an_strips b USING (rid)
UNION ALL
SELECT 'dinf angle', count(*), count(*) FILTER (WHERE ST_AsBinary(w.rast) = ST_AsBinary(b.rast))
FROM pit_angle_whole w JOIN pit_angle_strips b USING (rid);
-- a weight coverage (one tile missing) is read strip by strip as well
CREATE TEMP TABLE pit_weights AS
SELECT rid, ST_MapAlgebra(rast, '32BF', '[rast] / 7.0') AS rast FROM pit_tiles WHERE rid <> 5;
RESET terra_gpu.max_memory_mb;
CREATE TEMP TABLE pit_wacc_whole AS
SELECT * FROM tg_flow_accumulation(coverage => 'pit_tiles', weight => 'pit_weights', units => 'area');
SET terra_gpu.max_memory_mb = 1;
CREATE TEMP TABLE pit_wacc_strips AS
SELECT * FROM tg_flow_accumulation(coverage => 'pit_tiles', weight => 'pit_weights', units => 'area');
SELECT count(*) AS tiles,
       count(*) FILTER (WHERE abs((ST_SummaryStats(w.rast)).sum / (ST_SummaryStats(b.rast)).sum - 1) < 1e-12) AS equal
FROM pit_wacc_whole w JOIN pit_wacc_strips b USING (rid);
-- multiple-flow accumulation in strips: each strip accumulated alone, then the water leaving it
-- carried on in windows of strips until none is left; the sums come in another order, so the
-- cells equal the whole DEM's to rounding
RESET terra_gpu.max_memory_mb;
CREATE TEMP TABLE pit_mfd_whole AS
SELECT * FROM tg_flow_accumulation(coverage => 'pit_tiles', routing => 'mfd-md');
CREATE TEMP TABLE pit_dinf_whole AS
SELECT * FROM tg_flow_accumulation(coverage => 'pit_tiles', routing => 'dinf', weight => 'pit_weights', units => 'sca');
SET terra_gpu.max_memory_mb = 2;
CREATE TEMP TABLE pit_mfd_strips AS
SELECT * FROM tg_flow_accumulation(coverage => 'pit_tiles', routing => 'mfd-md');
SELECT method, note FROM tg_last_run();
CREATE TEMP TABLE pit_dinf_strips AS
SELECT * FROM tg_flow_accumulation(coverage => 'pit_tiles', routing => 'dinf', weight => 'pit_weights', units => 'sca');
SELECT method, note FROM tg_last_run();
SELECT output, count(*) AS cells, count(w.v) AS valid,
       bool_and(w.v IS NULL AND b.v IS NULL OR abs(w.v - b.v) <= 1e-12 * abs(w.v)) AS to_rounding,
       round(max(w.v)::numeric, 3) AS largest
FROM (SELECT 'mfd-md' AS output, rid, c.i, c.v FROM pit_mfd_whole, unnest(ST_DumpValues(rast, 1)) WITH ORDINALITY c(v, i)
      UNION ALL
      SELECT 'dinf sca weighted', rid, c.i, c.v FROM pit_dinf_whole, unnest(ST_DumpValues(rast, 1)) WITH ORDINALITY c(v, i)) w
JOIN (SELECT 'mfd-md' AS output, rid, c.i, c.v FROM pit_mfd_strips, unnest(ST_DumpValues(rast, 1)) WITH ORDINALITY c(v, i)
      UNION ALL
      SELECT 'dinf sca weighted', rid, c.i, c.v FROM pit_dinf_strips, unnest(ST_DumpValues(rast, 1)) WITH ORDINALITY c(v, i)) b
USING (output, rid, i)
GROUP BY output ORDER BY output;
-- tg_hydrology runs in strips as well: the filled DEM and the receivers as in memory, the
-- accumulation (D8 cells exactly, multiple flow to rounding)
RESET terra_gpu.max_memory_mb;
CREATE TEMP TABLE pit_hyd_whole AS
SELECT 'd8' AS routing, * FROM tg_hydrology(coverage => 'pit_tiles')
UNION ALL SELECT 'mfd-md', * FROM tg_hydrology(coverage => 'pit_tiles', routing => 'mfd-md');
SET terra_gpu.max_memory_mb = 2;
CREATE TEMP TABLE pit_hyd_strips AS
SELECT 'd8' AS routing, * FROM tg_hydrology(coverage => 'pit_tiles')
UNION ALL SELECT 'mfd-md', * FROM tg_hydrology(coverage => 'pit_tiles', routing => 'mfd-md');
SELECT method, note FROM tg_last_run();
SELECT routing, count(*) AS tiles,
       count(*) FILTER (WHERE ST_AsBinary(w.filled) = ST_AsBinary(b.filled)) AS filled_identical,
       count(*) FILTER (WHERE ST_AsBinary(w.direction) = ST_AsBinary(b.direction)) AS direction_identical,
       count(*) FILTER (WHERE abs((ST_SummaryStats(w.accumulation)).sum / (ST_SummaryStats(b.accumulation)).sum - 1)
                              < 1e-12) AS accumulation_equal
FROM pit_hyd_whole w JOIN pit_hyd_strips b USING (routing, rid)
GROUP BY routing ORDER BY routing;
-- fdd8's shares depend on the accumulation itself: it does not run in strips
SELECT count(*) FROM tg_flow_accumulation(coverage => 'pit_tiles', routing => 'fdd8');
-- slope needs only its 3 x 3 window: strips with a row of halo give the same tiles
CREATE TEMP TABLE hills_tiles AS
SELECT (row_number() OVER ())::int AS rid, t AS rast
FROM (SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(400, 300, 0, 300, 10, -10, 0, 0, 0), '32BF'::text, 0, -9999),
             1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                        (SELECT y, array_agg(CASE WHEN (x + 3 * y) % 89 = 0 THEN -9999
                                                  ELSE 300 + 80 * sin(x / 31.0) * cos(y / 19.0) END ORDER BY x) AS r
                         FROM generate_series(0, 399) x, generate_series(0, 299) y GROUP BY y) rows)) AS rast) AS d,
     ST_Tile(d.rast, 25, 25) AS t;
RESET terra_gpu.max_memory_mb;
CREATE TEMP TABLE hills_whole AS SELECT * FROM tg_slope(coverage => 'hills_tiles', units => 'percent');
SET terra_gpu.max_memory_mb = 1;
CREATE TEMP TABLE hills_strips AS SELECT * FROM tg_slope(coverage => 'hills_tiles', units => 'percent');
SELECT count(*) AS tiles, count(*) FILTER (WHERE ST_AsBinary(w.rast) = ST_AsBinary(b.rast)) AS identical
FROM hills_whole w JOIN hills_strips b USING (rid);
-- one tile taller than the budget's strip cannot be cut
SELECT count(*) FROM tg_slope(coverage => 'big');
RESET terra_gpu.max_memory_mb;
-- result tables written by tg_create_result: key, spatial index, raster
-- constraints (raster_columns), typed geometry (geometry_columns)
CREATE FUNCTION pg_temp.try(statement text, OUT state text, OUT message text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE statement;
	state := '00000';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
END $$;
CREATE SCHEMA "Results";
SELECT tg_create_result('"Results"."filled tiles"', $$SELECT * FROM tg_fill(coverage => 'tiles');$$);
SELECT srid, scale_x, scale_y, blocksize_x, blocksize_y, same_alignment, num_bands, pixel_types, nodata_values
FROM raster_columns WHERE r_table_schema = 'Results' AND r_table_name = 'filled tiles';
SELECT count(*) AS tiles, count(*) FILTER (WHERE ST_AsBinary(r.rast) = ST_AsBinary(o.rast)) AS identical
FROM "Results"."filled tiles" r JOIN tg_fill(coverage => 'tiles') o USING (rid);
SELECT indexdef FROM pg_indexes WHERE schemaname = 'Results' AND tablename = 'filled tiles' ORDER BY 1;
SELECT attname, attcompression, attstorage FROM pg_attribute
WHERE attrelid = '"Results"."filled tiles"'::regclass AND attname = 'rast';
SELECT tg_create_result('"Results".flat', $$SELECT * FROM tg_fill(coverage => 'tiles')$$, compression => 'none');
SELECT attstorage, count(*) FILTER (WHERE pg_column_compression(rast) IS NULL) AS uncompressed
FROM "Results".flat, pg_attribute WHERE attrelid = '"Results".flat'::regclass AND attname = 'rast' GROUP BY 1;
SELECT tg_create_result('"Results".basin',
       $$SELECT tg_watershed_polygon(coverage => 'tiles', outlet => 'SRID=32632;POINT(500005 4000055)') AS geom$$);
SELECT tg_create_result('"Results".iso',
       $$SELECT * FROM tg_isochrones(coverage => 'tiles', outlet => 'SRID=32632;POINT(500005 4000055)', "interval" => 5)$$);
SELECT f_table_name, f_geometry_column, coord_dimension, srid, type FROM geometry_columns
WHERE f_table_schema = 'Results' ORDER BY 1;
SELECT (SELECT ST_Area(geom) FROM "Results".basin) AS basin_area,
       (SELECT sum(ST_Area(geom)) FROM "Results".iso) AS iso_area, (SELECT count(*) FROM "Results".iso) AS bands;
SELECT indexdef FROM pg_indexes WHERE schemaname = 'Results' AND tablename = 'iso' ORDER BY 1;
-- an existing table needs replace => true; bad names and options
SELECT * FROM pg_temp.try($$SELECT tg_create_result('"Results"."filled tiles"', 'SELECT * FROM tg_fill(coverage => ''tiles'')')$$);
SELECT tg_create_result('"Results"."filled tiles"', $$SELECT * FROM tg_flow_direction(coverage => 'tiles')$$, replace => true);
SELECT pixel_types FROM raster_columns WHERE r_table_schema = 'Results' AND r_table_name = 'filled tiles';
-- the raster constraints are PostGIS's own (AddRasterConstraints on a copy):
-- the same raster_columns rows and constraint definitions (a single tile
-- size written = ANY (ARRAY[n]), PostGIS's = n), and they hold for later rows
SELECT tg_create_result('"Results".chain', $$SELECT * FROM tg_hydrology(coverage => 'tiles')$$);
CREATE TABLE "Results".chain_copy AS SELECT * FROM "Results".chain;
SET client_min_messages = warning;
SELECT AddRasterConstraints('Results', 'chain_copy', c) FROM unnest('{filled,direction,accumulation}'::name[]) c;
RESET client_min_messages;
SELECT r_table_name, r_raster_column, srid, scale_x, blocksize_x, blocksize_y, same_alignment, num_bands,
       pixel_types, nodata_values, out_db, ST_AsText(extent) AS extent
FROM raster_columns WHERE r_table_schema = 'Results' AND r_table_name IN ('chain', 'chain_copy')
ORDER BY 2, 1;
SELECT count(*) AS constraints, count(*) FILTER (WHERE a.def = b.def) AS same
FROM (SELECT conname, regexp_replace(regexp_replace(pg_get_constraintdef(oid), ' NOT VALID$', ''), 'ANY \(ARRAY\[(\d+)\]\)', '\1') AS def
      FROM pg_constraint WHERE conrelid = '"Results".chain'::regclass AND contype = 'c') a
FULL JOIN (SELECT conname, regexp_replace(regexp_replace(pg_get_constraintdef(oid), ' NOT VALID$', ''), 'ANY \(ARRAY\[(\d+)\]\)', '\1') AS def
           FROM pg_constraint WHERE conrelid = '"Results".chain_copy'::regclass AND contype = 'c') b USING (conname);
-- any query's rasters (read from the rows as written): several bands, rows
-- whose bands differ, a NULL tile, values not compressed
SELECT tg_create_result('"Results".mixed', $$SELECT rid, ST_AddBand(rast, '16BSI'::text, 3, -1) AS two,
       CASE WHEN rid % 2 = 0 THEN ST_AddBand(ST_MakeEmptyRaster(rast), '8BUI'::text, 1, NULL)
            ELSE ST_AddBand(ST_MakeEmptyRaster(rast), '32BF'::text, 1, 0) END AS mixed,
       CASE WHEN rid <> 1 THEN rast END AS holes FROM tiles$$, compression => 'none');
CREATE TABLE "Results".mixed_copy AS SELECT * FROM "Results".mixed;
SET client_min_messages = warning;
SELECT AddRasterConstraints('Results', 'mixed_copy', c) FROM unnest('{two,mixed,holes}'::name[]) c;
RESET client_min_messages;
SELECT r_raster_column, num_bands, pixel_types, nodata_values, out_db, ST_AsText(extent) AS extent
FROM raster_columns WHERE r_table_schema = 'Results' AND r_table_name = 'mixed' ORDER BY 1;
SELECT count(*) AS constraints, count(*) FILTER (WHERE a.def = b.def) AS same
FROM (SELECT conname, regexp_replace(regexp_replace(pg_get_constraintdef(oid), ' NOT VALID$', ''), 'ANY \(ARRAY\[(\d+)\]\)', '\1') AS def
      FROM pg_constraint WHERE conrelid = '"Results".mixed'::regclass AND contype = 'c') a
FULL JOIN (SELECT conname, regexp_replace(regexp_replace(pg_get_constraintdef(oid), ' NOT VALID$', ''), 'ANY \(ARRAY\[(\d+)\]\)', '\1') AS def
           FROM pg_constraint WHERE conrelid = '"Results".mixed_copy'::regclass AND contype = 'c') b USING (conname);
SELECT terra_gpu._raster_bands(two) AS two, terra_gpu._raster_bands(mixed) AS mixed,
       ST_AsBinary(terra_gpu._raster_header(two)) = ST_AsBinary(ST_MakeEmptyRaster(two)) AS header_as_postgis
FROM "Results".mixed WHERE rid = 1;
SELECT * FROM pg_temp.try($$UPDATE "Results".chain SET accumulation = ST_SetBandNoDataValue(accumulation, 7) WHERE rid = 1$$);
SELECT * FROM pg_temp.try($$UPDATE "Results".chain SET direction = ST_Reclass(direction, 1, '0-255:0-255', '16BUI') WHERE rid = 1$$);
SELECT * FROM pg_temp.try($$SELECT tg_create_result('a.b.c', 'SELECT 1')$$);
SELECT * FROM pg_temp.try($$SELECT tg_create_result('"unclosed', 'SELECT 1')$$);
SELECT * FROM pg_temp.try($$SELECT tg_create_result('no_schema.t', 'SELECT 1')$$);
SELECT * FROM pg_temp.try($$SELECT tg_create_result('t', NULL)$$);
SELECT * FROM pg_temp.try($$SELECT tg_create_result('t', 'SELECT 1', compression => 'zstd')$$);
-- a failing query leaves no table behind
SELECT * FROM pg_temp.try($$SELECT tg_create_result('"Results".broken', 'SELECT * FROM tg_fill(coverage => ''tiles'', method => ''nope'')')$$);
SELECT to_regclass('"Results".broken') AS broken;
DROP SCHEMA "Results" CASCADE;
RESET client_min_messages;

-- the watershed polygon of the coverage form polygonizes only the tiles that hold
-- basin cells (4 of 9 here): no PostGIS notice about empty tiles, the value form's polygon
CREATE TEMP TABLE basin_outlet AS SELECT ST_SetSRID(ST_MakePoint(500035, 4000045), 32632) AS geom;
SELECT count(*) FILTER (WHERE (ST_SummaryStats(w.rast)).count > 0) AS basin_tiles, count(*) AS tiles
FROM basin_outlet o, tg_watershed(coverage => 'tiles', outlet => o.geom) AS w;
SELECT ST_Equals(tg_watershed_polygon(coverage => 'tiles', outlet => o.geom), (SELECT tg_watershed_polygon(rast, o.geom) FROM dem))
       AS same_polygon
FROM basin_outlet o;

-- every coverage form takes its value form's arguments, in the same order and
-- with the same defaults (its table and the table's columns aside; a weight is
-- a table there, a raster in the value form)
WITH forms AS (
  SELECT p.proname, 'coverage' = ANY (p.proargnames) AS coverage,
         replace(regexp_replace(regexp_replace(regexp_replace(pg_get_function_arguments(p.oid), ', OUT .*$', ''),
                                               '^[^,]*(, |$)', ''),
                                ', (rast|id|weight)_column name DEFAULT ''[a-z]+''::name', '', 'g'),
                 'weight regclass DEFAULT NULL::regclass', 'weight raster DEFAULT NULL::raster') AS args
  FROM pg_proc p
  WHERE p.proname LIKE 'tg\_%' AND p.pronamespace = (SELECT extnamespace FROM pg_extension WHERE extname = 'terra_gpu')
    AND (p.proargtypes[0] = 'raster'::regtype OR 'coverage' = ANY (p.proargnames)))
SELECT c.proname, v.args IS NOT NULL AS has_value_form, c.args = v.args AS same_arguments
FROM forms c LEFT JOIN forms v ON v.proname = c.proname AND NOT v.coverage
WHERE c.coverage ORDER BY 1;

-- tg_last_run reports the most host memory the call's buffers held (a
-- coverage of 600 x 600 cells: planes of a megabyte or more count), within
-- the memory check's estimate for tg_hydrology on the CPU (112 bytes a cell)
CREATE TEMP TABLE big_tiles AS
SELECT row_number() OVER () AS rid, t.rast
FROM (SELECT ST_Tile(ST_MapAlgebra(ST_AddBand(ST_MakeEmptyRaster(600, 600, 0, 600, 30, -30, 0, 0, 3857), '32BF', 0::double precision, -9999::double precision),
                                   '32BF', '[rast.x] * 0.5 + [rast.y] * 0.25'), 200, 200) AS rast) AS t;
SELECT count(*) FROM tg_hydrology(coverage => 'big_tiles');
SELECT backend, cells, peak_host_bytes BETWEEN 14 * cells AND 112 * cells AS host_peak_sane,
       peak_device_bytes IS NULL AS no_device_bytes_on_cpu
FROM tg_last_run();

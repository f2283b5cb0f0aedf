-- Every SQLSTATE terra_gpu raises, with its message, detail and hint.
SET terra_gpu.backend = 'cpu';

-- run a statement, report how it failed
CREATE FUNCTION pg_temp.try(statement text,
	OUT state text, OUT message text, OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE statement;
	state := '00000';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
		detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END $$;

CREATE TEMP TABLE dem AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, 0, -9999),
                    1, 1, 1, ARRAY[[1, 2, 3], [4, 5, 6], [7, 8, 9]]::float8[]) AS rast;

-- raster_from_bytes() wraps arbitrary bytes as a raster value, as a corrupted
-- or hand-made value would arrive (byteasend just copies its varlena).
CREATE FUNCTION pg_temp.raster_from_bytes(bytea) RETURNS raster
	LANGUAGE internal IMMUTABLE STRICT AS 'byteasend';
CREATE FUNCTION pg_temp.raster_bytes(raster) RETURNS bytea
	LANGUAGE internal IMMUTABLE STRICT AS 'byteasend';

\x on
-- 22023 invalid_parameter_value
SELECT * FROM pg_temp.try('SELECT tg_slope(rast, band => 2) FROM dem');
SELECT * FROM pg_temp.try('SELECT tg_slope(rast, band => 0) FROM dem');
SELECT * FROM pg_temp.try('SELECT tg_slope(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 0))');
SELECT * FROM pg_temp.try($$SELECT tg_slope(rast, units => 'gradians') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_slope(rast, units => 'de') FROM dem$$);
SELECT * FROM pg_temp.try('SELECT tg_slope(rast, scale => 0) FROM dem');
SELECT * FROM pg_temp.try($$SELECT tg_slope(rast, scale => 'NaN') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_slope(rast, backend => 'fpga') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_slope(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 0, 0, 0, 0, 0), '16BSI'::text, 1, NULL))$$);

-- hydrology arguments
SELECT * FROM pg_temp.try($$SELECT tg_fill(rast, method => 'breach') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_fill(rast, epsilon => -1) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_direction(rast, routing => 'd16') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_direction(rast, routing => 'mfd-md', output => 'codes') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_direction(rast, output => 'arrows') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, method => 'recursive') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, units => 'hectares') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, pixeltype => '16BUI') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, routing => 'fd8', exponent => 0) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, routing => 'fdd8', threshold => -1) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, routing => 'fdd8', method => 'flow-transfer') FROM dem$$);
-- a weight raster must lie on the DEM's grid
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, weight => ST_AddBand(ST_MakeEmptyRaster(4, 3, 0, 0, 1, -1, 0, 0, 0), '8BUI'::text, 1, NULL)) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, weight => ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 4326), '8BUI'::text, 1, NULL)) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, weight => ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 2, -2, 0, 0, 0), '8BUI'::text, 1, NULL)) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, weight => ST_AddBand(ST_MakeEmptyRaster(3, 3, 0.5, 0, 1, -1, 0, 0, 0), '8BUI'::text, 1, NULL)) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, weight => rast, weight_band => 2) FROM dem$$);

-- 22004 null_value_not_allowed
SELECT * FROM pg_temp.try('SELECT tg_slope(rast, band => NULL) FROM dem');
SELECT * FROM pg_temp.try('SELECT tg_slope(rast, units => NULL) FROM dem');
SELECT * FROM pg_temp.try('SELECT tg_slope(rast, scale => NULL) FROM dem');
SELECT * FROM pg_temp.try('SELECT tg_flow_accumulation(rast, routing => NULL) FROM dem');

-- 22000 data_exception: malformed or truncated raster values
-- pixels cut short
SELECT * FROM pg_temp.try('SELECT tg_slope(pg_temp.raster_from_bytes(substring(pg_temp.raster_bytes(rast) from 1 for 70))) FROM dem');
-- header cut short
SELECT * FROM pg_temp.try('SELECT tg_slope(pg_temp.raster_from_bytes(substring(pg_temp.raster_bytes(rast) from 1 for 30))) FROM dem');
-- an unknown serialization version
SELECT * FROM pg_temp.try($$SELECT tg_slope(pg_temp.raster_from_bytes(overlay(pg_temp.raster_bytes(rast) placing '\x0700'::bytea from 1))) FROM dem$$);
-- an invalid pixel type code (12)
SELECT * FROM pg_temp.try($$SELECT tg_slope(pg_temp.raster_from_bytes(overlay(pg_temp.raster_bytes(rast) placing '\x4c'::bytea from 61))) FROM dem$$);
-- a 1000 x 1000 header over 9 pixels
SELECT * FROM pg_temp.try($$SELECT tg_slope(pg_temp.raster_from_bytes(overlay(pg_temp.raster_bytes(rast) placing '\xe803e803'::bytea from 57))) FROM dem$$);

-- 54000 program_limit_exceeded: a 65535 x 65535 header would need a 16 GB result
-- (refused from the header alone, before the value is read)
SELECT * FROM pg_temp.try($$SELECT tg_slope(pg_temp.raster_from_bytes(overlay(pg_temp.raster_bytes(rast) placing '\xffffffff'::bytea from 57))) FROM dem$$);

-- 0A000 feature_not_supported: an out-db band (as raster2pgsql -R stores them)
SELECT * FROM pg_temp.try($$SELECT tg_slope(pg_temp.raster_from_bytes(
  '\x00000100000000000000f03f000000000000f0bf00000000000000000000000000000000000000000000000000000000000000000000000003000300c5000080002f646174612f64656d2f74696c652e74696600000000'::bytea))$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_fill(pg_temp.raster_from_bytes(
  '\x00000100000000000000f03f000000000000f0bf00000000000000000000000000000000000000000000000000000000000000000000000003000300c5000080002f646174612f64656d2f74696c652e74696600000000'::bytea))$$);
-- 0A000: a skewed raster in a geographic SRID
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(ST_AddBand(ST_MakeEmptyRaster(3, 3, 8, 46, 0.001, -0.001, 0.0001, 0, 4326), '16BSI'::text, 1, NULL))$$);

-- 0A000 feature_not_supported: backend gpu with no usable device (device 63 never
-- exists; the detail differs between machines with and without a GPU)
SET terra_gpu.device = 63;
SELECT state, message LIKE '%CUDA device%' AS says_why, hint
FROM pg_temp.try($$SELECT tg_slope(rast, backend => 'gpu') FROM dem$$);
-- under auto the same call quietly runs on the CPU
SET terra_gpu.min_cells_for_gpu = 0;
SELECT ST_Value(tg_slope(rast, backend => 'auto'), 2, 2) IS NOT NULL AS ran, (tg_last_run()).backend FROM dem;
RESET terra_gpu.device;
RESET terra_gpu.min_cells_for_gpu;
\x off

-- 57014 query_canceled: a long CPU run stops at a cancel (here statement_timeout)
CREATE TEMP TABLE big AS
SELECT ST_AddBand(ST_MakeEmptyRaster(8000, 8000, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, 1, NULL) AS rast;
\set VERBOSITY sqlstate
SET statement_timeout = '100ms';
SELECT ST_Width(tg_slope(rast)) FROM big;
RESET statement_timeout;
\set VERBOSITY default

-- BMMQ-tree indexes
CREATE TABLE bmmq_err (rid integer, rast raster, note text);
INSERT INTO bmmq_err VALUES
  (1, ST_AddBand(ST_MakeEmptyRaster(2, 2, 0, 2, 1, -1, 0, 0, 4326), '16BSI'::text, 5, -9999), 'ok');
SELECT tg_bmmq_build('err', 'bmmq_err', bins => ARRAY[1, 10]) > 0 AS built;
\x on
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('err', 'bmmq_err')$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('e2', 'bmmq_err', rast_column => 'nope')$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('e2', 'bmmq_err', rast_column => 'note')$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('e2', 'bmmq_err', id_column => 'note')$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('e2', 'bmmq_err', bins => ARRAY[3, 3])$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('e2', 'bmmq_err', bins => '{}')$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('e2', 'bmmq_err', nbins => 1)$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('e2', 'bmmq_err', bin_method => 'jenks')$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('e2', 'bmmq_err', band => 2, bins => ARRAY[1])$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_roi('nope', 1, 2)$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_roi('err', 2, 1)$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_range('err', ST_MakeEnvelope(0, 0, 1, 1, 32632))$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_roi(ARRAY['err', 'err'], ARRAY[1, 1], ARRAY[2, 2], 'xor')$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_drop('nope')$$);
SELECT * FROM pg_temp.try($$SELECT * FROM tg_bmmq(ST_AddBand(ST_MakeEmptyRaster(2, 2, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, -9999, -9999))$$);
-- tiles that do not fit together, each named
CREATE TABLE bmmq_err2 AS SELECT * FROM bmmq_err;
SELECT tg_bmmq_build('err2', 'bmmq_err2', bins => ARRAY[1]) > 0 AS built;
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_roi(ARRAY['err', 'err2'], ARRAY[1, 1], ARRAY[2, 2])$$);
INSERT INTO bmmq_err2 VALUES
  (2, ST_AddBand(ST_MakeEmptyRaster(2, 2, 2, 2, 1, -1, 0, 0, 4326), '16BSI'::text, 5, -9999), 'ok');
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_roi(ARRAY['err', 'err2'], ARRAY[1, 1], ARRAY[2, 2])$$);
SELECT tg_bmmq_refresh('err2') > 0 AS refreshed;
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_roi(ARRAY['err', 'err2'], ARRAY[1, 1], ARRAY[2, 2])$$);
INSERT INTO bmmq_err VALUES
  (7, ST_AddBand(ST_MakeEmptyRaster(2, 2, 2, 2, 1, -1, 0, 0, 32632), '16BSI'::text, 5, -9999), 'srid');
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_refresh('err')$$);
UPDATE bmmq_err SET rast = ST_AddBand(ST_MakeEmptyRaster(2, 2, 2, 2, 1, -1, 0.5, 0, 4326), '16BSI'::text, 5, -9999) WHERE rid = 7;
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_refresh('err')$$);
DELETE FROM bmmq_err;
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('e3', 'bmmq_err')$$);
INSERT INTO bmmq_err VALUES
  (1, ST_AddBand(ST_MakeEmptyRaster(2, 2, 0, 2, 1, -1, 0, 0, 4326), '16BSI'::text, -9999, -9999), 'nodata');
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('e3', 'bmmq_err')$$);
\x off
SELECT tg_bmmq_drop('err'), tg_bmmq_drop('err2');
DROP TABLE bmmq_err, bmmq_err2;

-- viewshed
CREATE TEMP TABLE vdem AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 3, 1, -1, 0, 0, 4326), '16BSI'::text, 0, -9999),
                    1, 1, 1, ARRAY[[1, 2, 3], [4, -9999, 6], [7, 8, 9]]::float8[]) AS rast;
\x on
SELECT * FROM pg_temp.try($$SELECT tg_viewshed(rast, ST_SetSRID(ST_MakePoint(5, 5), 4326)) FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed(rast, ST_SetSRID(ST_MakePoint(1.5, 1.5), 4326)) FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed(rast, ST_MakePoint(0.5, 0.5)) FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed(rast, ST_SetSRID(ST_MakeLine(ST_MakePoint(0, 0), ST_MakePoint(1, 1)), 4326)) FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed(rast, ST_SetSRID(ST_MakePoint(0.5, 0.5), 4326), observer_height => -1) FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed(rast, ST_SetSRID(ST_MakePoint(0.5, 0.5), 4326), max_distance => 0) FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed(rast, ST_SetSRID(ST_MakePoint(0.5, 0.5), 4326), refraction => 1) FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed(rast, ST_SetSRID(ST_MakePoint(0.5, 0.5), 4326), output => 'fresnel') FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed(rast, ST_SetSRID(ST_MakePoint(0.5, 0.5), 4326), algorithm => 'r1') FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed(rast, NULL::geometry) FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed_count(rast, ARRAY[ST_SetSRID(ST_MakePoint(0.5, 0.5), 4326), ST_SetSRID(ST_MakePoint(9, 9), 4326)]) FROM vdem$$);
SELECT * FROM pg_temp.try($$SELECT tg_viewshed_count(rast, '{}'::geometry[]) FROM vdem$$);
\x off
SELECT * FROM pg_temp.try($$SELECT tg_flow_direction(rast, routing => 'mfd-md', output => 'angle') FROM dem$$);

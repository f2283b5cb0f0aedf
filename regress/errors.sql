-- Every SQLSTATE terra_gpu raises, with its message, detail and hint.
SET terra_gpu.backend = 'cpu';

\i regress/include/try.sql

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

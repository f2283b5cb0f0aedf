-- terra_gpu install script (copied to terra_gpu--<version>.sql at build time)
\echo Use "CREATE EXTENSION terra_gpu CASCADE" to load this file. \quit

-------------------------------------------------------------------------------
-- Information
-------------------------------------------------------------------------------
CREATE FUNCTION tg_version() RETURNS text
	AS 'MODULE_PATHNAME', 'tgpg_version'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tg_version() IS 'terra_gpu library version';

CREATE FUNCTION tg_gpu_info(
	OUT available boolean,
	OUT device integer,
	OUT name text,
	OUT compute_capability text,
	OUT total_memory_mb bigint,
	OUT free_memory_mb bigint,
	OUT multiprocessors integer,
	OUT driver_version text,
	OUT runtime_version text,
	OUT reason text)
	AS 'MODULE_PATHNAME', 'tgpg_gpu_info'
	LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION tg_gpu_info() IS
'The GPU this backend would use (terra_gpu.device), or in "reason" why none is usable; starts CUDA in this backend';

CREATE FUNCTION tg_last_run(
	OUT function text,
	OUT backend text,
	OUT cells bigint,
	OUT kernel_ms double precision,
	OUT transfer_ms double precision,
	OUT core_ms double precision,
	OUT chunks integer,
	OUT note text,
	OUT method text,
	OUT iterations integer,
	OUT prep_ms double precision)
	AS 'MODULE_PATHNAME', 'tgpg_last_run'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION tg_last_run() IS
'What the last terra_gpu call of this backend ran on (cpu or gpu), its device kernel and transfer times and its time in the library';

-------------------------------------------------------------------------------
-- Terrain
-------------------------------------------------------------------------------
CREATE FUNCTION tg_slope(
	rast raster,
	band integer DEFAULT 1,
	units text DEFAULT 'DEGREES',
	scale double precision DEFAULT 1.0,
	nodata double precision DEFAULT NULL,
	backend text DEFAULT NULL)
	RETURNS raster
	AS 'MODULE_PATHNAME', 'tgpg_slope'
	LANGUAGE C IMMUTABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION tg_slope(raster, integer, text, double precision, double precision, text) IS
'Horn slope of a DEM band as a 32BF raster (DEGREES, RADIANS or PERCENT), same conventions as ST_Slope; scale = vertical/horizontal unit ratio (111120 for degrees and metres)';

-------------------------------------------------------------------------------
-- Hydrology
-------------------------------------------------------------------------------
CREATE FUNCTION tg_fill(
	rast raster,
	band integer DEFAULT 1,
	method text DEFAULT 'priority-flood',
	epsilon double precision DEFAULT 0,
	nodata double precision DEFAULT NULL,
	backend text DEFAULT NULL)
	RETURNS raster
	AS 'MODULE_PATHNAME', 'tgpg_fill'
	LANGUAGE C IMMUTABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION tg_fill(raster, integer, text, double precision, double precision, text) IS
'Depression-filled DEM (priority-flood or planchon-darboux; the same surface): every cell drains to the raster edge or nodata; epsilon > 0 makes it strictly drainable';

CREATE FUNCTION tg_flow_direction(
	rast raster,
	band integer DEFAULT 1,
	routing text DEFAULT 'd8',
	fill boolean DEFAULT true,
	exponent double precision DEFAULT 1.1,
	threshold double precision DEFAULT 1000,
	output text DEFAULT 'auto',
	backend text DEFAULT NULL)
	RETURNS raster
	AS 'MODULE_PATHNAME', 'tgpg_flow_direction'
	LANGUAGE C IMMUTABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION tg_flow_direction(raster, integer, text, boolean, double precision, double precision, text, text) IS
'Flow directions of a DEM (d8, fd8, mfd-md, fdd8): D8 ESRI codes (8BUI), a receiver bit mask (16BUI) or 8 bands of flow shares (32BF, E SE S SW W NW N NE); flats resolved (Barnes 2014)';

CREATE FUNCTION tg_flow_accumulation(
	rast raster,
	band integer DEFAULT 1,
	routing text DEFAULT 'd8',
	method text DEFAULT 'auto',
	weight raster DEFAULT NULL,
	units text DEFAULT 'cells',
	fill boolean DEFAULT true,
	exponent double precision DEFAULT 1.1,
	threshold double precision DEFAULT 1000,
	weight_band integer DEFAULT 1,
	pixeltype text DEFAULT '64BF',
	nodata double precision DEFAULT NULL,
	backend text DEFAULT NULL)
	RETURNS raster
	AS 'MODULE_PATHNAME', 'tgpg_flow_accumulation'
	LANGUAGE C IMMUTABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION tg_flow_accumulation(raster, integer, text, text, raster, text, boolean, double precision, double precision, integer, text, double precision, text) IS
'Flow accumulation of a DEM (cells, area or sca), every cell counting itself; routings d8, fd8, mfd-md, fdd8; methods flow-transfer, dependency-transfer, indegree, topological (all give the same result)';

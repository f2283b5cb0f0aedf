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
	OUT note text)
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

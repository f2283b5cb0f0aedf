-- terra_gpu 0.1.0 -> 0.2.0, written by tools/gen_upgrade.py: do not edit; change
-- sql/terra_gpu.sql or sql/upgrade/terra_gpu--0.1.0--0.2.0.{pre,post}.sql and run it again.
\echo Use "ALTER EXTENSION terra_gpu UPDATE TO '0.2.0'" to load this file. \quit

-- terra_gpu 0.1.0 -> 0.2.0, catalog changes: run before the functions are
-- replaced (tools/gen_upgrade.py puts this file first in the upgrade script).

-- BMMQ indexes have owners; those built before 0.2.0 belong to the role that
-- upgrades (only superusers could use them: terra_gpu had no USAGE for PUBLIC).
ALTER TABLE terra_gpu.bmmq_index ADD COLUMN owner regrole NOT NULL DEFAULT quote_ident(current_user)::regrole;
-- Their changes were not recorded: the first tg_bmmq_refresh rebuilds them
-- whole, the next ones only the tiles written.
ALTER TABLE terra_gpu.bmmq_index ADD COLUMN changes_recorded boolean NOT NULL DEFAULT false;
COMMENT ON TABLE terra_gpu.bmmq_index IS
'One row per BMMQ-tree index (tg_bmmq_build): its source coverage, bin boundaries, state (stale once the source changed), owner (the role that built it) and whether terra_gpu.bmmq_change holds every tile written since it was built (tg_bmmq_refresh then rebuilds only those)';
CREATE TABLE terra_gpu.bmmq_change (
	index_id bigint NOT NULL REFERENCES terra_gpu.bmmq_index (id) ON DELETE CASCADE,
	tile_id bigint NOT NULL,
	PRIMARY KEY (index_id, tile_id));
COMMENT ON TABLE terra_gpu.bmmq_change IS
'The source tiles written (inserted, updated, deleted) since an index was last built or refreshed, recorded by the source''s statement triggers';
SELECT pg_catalog.pg_extension_config_dump('terra_gpu.bmmq_change', '');

-- The role that may run the protocol between servers (granted on the
-- functions below).
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'terra_gpu_parts') THEN
		CREATE ROLE terra_gpu_parts NOLOGIN;
	END IF;
END $$;

-- Products that know their recipe (tg_refresh): its catalog.
CREATE TABLE terra_gpu.product (
	product regclass PRIMARY KEY,
	source regclass NOT NULL,
	rast_column name NOT NULL,
	id_column name NOT NULL,
	function text NOT NULL,
	halo integer CHECK (halo >= 0),
	reach bigint[],
	query text NOT NULL,
	search_path text NOT NULL,
	compression text NOT NULL,
	source_name text NOT NULL,
	captured boolean NOT NULL,
	retiled boolean NOT NULL DEFAULT false,
	refreshed_at timestamptz NOT NULL DEFAULT pg_catalog.now());
COMMENT ON TABLE terra_gpu.product IS
'One row per product of tg_create_result that tg_refresh can bring up to date: its source table and columns, the coverage function and its halo in cells (NULL: a global operation), the source tiles a change must touch to change the product where it reads only some (reach: a viewshed within max_distance, the tiles its observers'' windows cross; NULL: any tile), the query and search_path it was written with and the source''s name in it, its storage; captured: the source''s triggers record its changed tiles (its creator owned it); retiled: the source was truncated since';

CREATE TABLE terra_gpu.product_tile (
	product regclass NOT NULL,
	tile_id bigint NOT NULL,
	upperleft_x double precision NOT NULL,
	upperleft_y double precision NOT NULL,
	width integer NOT NULL,
	height integer NOT NULL,
	scale_x double precision NOT NULL,
	scale_y double precision NOT NULL,
	skew_x double precision NOT NULL,
	skew_y double precision NOT NULL,
	srid integer NOT NULL,
	digest bytea,
	PRIMARY KEY (product, tile_id));
COMMENT ON TABLE terra_gpu.product_tile IS
'The georeference of each source tile a product was computed from (a changed one makes its refresh a full recompute), and the digest of the product''s row for it (terra_gpu._row_digest; NULL: not known), which a refresh compares instead of the stored row';

CREATE TABLE terra_gpu.product_change (
	product regclass NOT NULL,
	tile_id bigint NOT NULL,
	PRIMARY KEY (product, tile_id));
COMMENT ON TABLE terra_gpu.product_change IS
'The source tiles written (inserted, updated, deleted) since a product''s last refresh, recorded by the source''s statement triggers';

CREATE TABLE terra_gpu.product_seam (
	product regclass NOT NULL,
	band integer NOT NULL,
	step integer NOT NULL,
	phase text NOT NULL,
	round integer NOT NULL,
	digest bytea NOT NULL,
	reply bytea NOT NULL,
	PRIMARY KEY (product, band, step));
COMMENT ON TABLE terra_gpu.product_seam IS
'What a global product''s refresh in bands kept of each band (a row of source tiles, numbered from the top) at each step of the coordinator: the digest of every message the band received up to that step (SHA-256 chained) and its reply, packed.  A refresh hands the coordinator the kept reply of a band whose tiles did not change and whose messages are the same';

SELECT pg_catalog.pg_extension_config_dump('terra_gpu.product', '');
SELECT pg_catalog.pg_extension_config_dump('terra_gpu.product_tile', '');
SELECT pg_catalog.pg_extension_config_dump('terra_gpu.product_change', '');
SELECT pg_catalog.pg_extension_config_dump('terra_gpu.product_seam', '');

-- functions gone, or whose arguments or result changed
DROP FUNCTION @extschema@.tg_watershed_polygon(regclass,name,name,geometry,boolean,integer,text);
DROP FUNCTION @extschema@.tg_watershed_polygon(raster,geometry,boolean,integer,text);
DROP FUNCTION @extschema@.tg_watershed(regclass,name,name,geometry,boolean,integer,text);
DROP FUNCTION @extschema@.tg_watershed(raster,geometry,boolean,integer,text);
DROP FUNCTION @extschema@.tg_isochrones(regclass,name,name,geometry,double precision,"any","any",double precision,double precision,boolean,integer,text);
DROP FUNCTION @extschema@.tg_isochrones(raster,geometry,double precision,"any","any",double precision,double precision,boolean,integer,text);
DROP FUNCTION @extschema@.tg_isochrone_bands(regclass,name,name,geometry,double precision,"any","any",double precision,double precision,boolean,integer,text);
DROP FUNCTION @extschema@.tg_isochrone_bands(raster,geometry,double precision,"any","any",double precision,double precision,boolean,integer,text);
DROP FUNCTION @extschema@.tg_travel_time(regclass,name,name,geometry,"any","any",double precision,double precision,boolean,integer,double precision,text);
DROP FUNCTION @extschema@.tg_travel_time(raster,geometry,"any","any",double precision,double precision,boolean,integer,double precision,text);
DROP FUNCTION @extschema@.tg_rusle(regclass,name,name,"any","any","any","any",text,double precision,double precision,double precision,double precision,boolean,integer,text,double precision,double precision,double precision,text);
DROP FUNCTION @extschema@.tg_ls_factor(regclass,name,name,text,double precision,double precision,double precision,double precision,boolean,integer,text,double precision,double precision,double precision,text);
DROP FUNCTION @extschema@.tg_viewshed_count(regclass,name,name,geometry[],double precision,double precision,double precision,double precision,double precision,integer,text);
DROP FUNCTION @extschema@.tg_viewshed(regclass,name,name,geometry,double precision,double precision,double precision,double precision,double precision,text,integer,text,text);
DROP FUNCTION terra_gpu._observer_cell(record,geometry,text);
DROP FUNCTION terra_gpu._viewshed_count(raster,integer,integer[],integer[],double precision,double precision,double precision,double precision,double precision,text);
DROP FUNCTION terra_gpu._viewshed(raster,integer,integer,integer,double precision,double precision,double precision,double precision,double precision,text,text,text);
DROP FUNCTION terra_gpu._bmmq_fill(terra_gpu.bmmq_index,text);
DROP FUNCTION terra_gpu._bmmq_build_nodes(regclass,name,name,integer,double precision[],text);
DROP FUNCTION @extschema@.tg_hydrology(regclass,name,name,integer,text,text,regclass,text,double precision,double precision,integer,double precision,text,name);
DROP FUNCTION @extschema@.tg_flow_accumulation(regclass,name,name,integer,text,text,regclass,text,boolean,double precision,double precision,integer,text,double precision,text,name);
DROP FUNCTION @extschema@.tg_flow_direction(regclass,name,name,integer,text,boolean,double precision,double precision,text,text);
DROP FUNCTION @extschema@.tg_fill(regclass,name,name,integer,text,double precision,double precision,text);
DROP FUNCTION @extschema@.tg_slope(regclass,name,name,integer,text,double precision,double precision,text);
DROP FUNCTION @extschema@.tg_last_run();

-- functions new or changed
CREATE OR REPLACE FUNCTION @extschema@.tg_version()
 RETURNS text
 LANGUAGE c
 IMMUTABLE PARALLEL SAFE STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_version$function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_gpu_info(OUT available boolean, OUT device integer, OUT name text, OUT compute_capability text, OUT total_memory_mb bigint, OUT free_memory_mb bigint, OUT multiprocessors integer, OUT driver_version text, OUT runtime_version text, OUT reason text)
 RETURNS record
 LANGUAGE c
 PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_gpu_info$function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_last_run(OUT function text, OUT backend text, OUT cells bigint, OUT kernel_ms double precision, OUT transfer_ms double precision, OUT core_ms double precision, OUT chunks integer, OUT note text, OUT method text, OUT iterations integer, OUT prep_ms double precision, OUT threads integer, OUT phases text, OUT peak_host_bytes bigint, OUT peak_device_bytes bigint)
 RETURNS record
 LANGUAGE c
 PARALLEL RESTRICTED STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_last_run$function$;
COMMENT ON FUNCTION @extschema@.tg_last_run() IS 'What the last terra_gpu call of this backend ran on (cpu or gpu), its device kernel and transfer times, its time in the library, the threads it used, the time of each phase, and the most host and device memory its buffers held at once';
CREATE OR REPLACE FUNCTION @extschema@.tg_slope(rast raster, band integer DEFAULT 1, units text DEFAULT 'DEGREES'::text, scale double precision DEFAULT 1.0, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_slope$function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_slope(coverage regclass, band integer DEFAULT 1, units text DEFAULT 'DEGREES'::text, scale double precision DEFAULT 1.0, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_slope$function$;
COMMENT ON FUNCTION @extschema@.tg_slope(regclass,integer,text,double precision,double precision,text,name,name) IS 'Coverage form: the slope of a whole tiled raster table, computed as one grid (no tile-edge effects), one row per input tile with its extent';
CREATE OR REPLACE FUNCTION @extschema@.tg_aspect(rast raster, band integer DEFAULT 1, units text DEFAULT 'DEGREES'::text, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_aspect$function$;
COMMENT ON FUNCTION @extschema@.tg_aspect(raster,integer,text,text,double precision,text) IS 'Horn aspect of a DEM band (32BF or 64BF): clockwise from north in DEGREES or RADIANS, -1 where flat, as ST_Aspect';
CREATE OR REPLACE FUNCTION @extschema@.tg_aspect(coverage regclass, band integer DEFAULT 1, units text DEFAULT 'DEGREES'::text, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_aspect$function$;
COMMENT ON FUNCTION @extschema@.tg_aspect(regclass,integer,text,text,double precision,text,name,name) IS 'Coverage form: the aspect of a whole tiled raster table as one grid (no tile-edge effects), one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_hillshade(rast raster, band integer DEFAULT 1, azimuth double precision DEFAULT 315, altitude double precision DEFAULT 45, max_bright double precision DEFAULT 255, scale double precision DEFAULT 1.0, z_factor double precision DEFAULT 1.0, method text DEFAULT 'standard'::text, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_hillshade$function$;
COMMENT ON FUNCTION @extschema@.tg_hillshade(raster,integer,double precision,double precision,double precision,double precision,double precision,text,text,double precision,text) IS 'Hillshade of a DEM band as ST_HillShade (32BF/64BF, 0 to max_bright) or as gdaldem hillshade (8BUI: 1 to 255, 0 nodata); method standard, multidirectional or combined (gdaldem''s); scale as tg_slope''s, z_factor an exaggeration';
CREATE OR REPLACE FUNCTION @extschema@.tg_hillshade(coverage regclass, band integer DEFAULT 1, azimuth double precision DEFAULT 315, altitude double precision DEFAULT 45, max_bright double precision DEFAULT 255, scale double precision DEFAULT 1.0, z_factor double precision DEFAULT 1.0, method text DEFAULT 'standard'::text, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_hillshade$function$;
COMMENT ON FUNCTION @extschema@.tg_hillshade(regclass,integer,double precision,double precision,double precision,double precision,double precision,text,text,double precision,text,name,name) IS 'Coverage form: the hillshade of a whole tiled raster table as one grid (no tile-edge effects), one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_tpi(rast raster, band integer DEFAULT 1, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_tpi$function$;
COMMENT ON FUNCTION @extschema@.tg_tpi(raster,integer,text,double precision,text) IS 'Topographic position index of a DEM band: the centre minus the mean of its 8 neighbours, as ST_TPI and gdaldem TPI';
CREATE OR REPLACE FUNCTION @extschema@.tg_tpi(coverage regclass, band integer DEFAULT 1, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_tpi$function$;
COMMENT ON FUNCTION @extschema@.tg_tpi(regclass,integer,text,double precision,text,name,name) IS 'Coverage form: the TPI of a whole tiled raster table as one grid (no tile-edge effects), one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_tri(rast raster, band integer DEFAULT 1, algorithm text DEFAULT 'wilson'::text, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_tri$function$;
COMMENT ON FUNCTION @extschema@.tg_tri(raster,integer,text,text,double precision,text) IS 'Terrain ruggedness index of a DEM band: wilson (Wilson et al. 2007, the mean absolute difference to the 8 neighbours, as ST_TRI) or riley (Riley et al. 1999, the root of the summed squared differences, gdaldem''s default)';
CREATE OR REPLACE FUNCTION @extschema@.tg_tri(coverage regclass, band integer DEFAULT 1, algorithm text DEFAULT 'wilson'::text, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_tri$function$;
COMMENT ON FUNCTION @extschema@.tg_tri(regclass,integer,text,text,double precision,text,name,name) IS 'Coverage form: the TRI of a whole tiled raster table as one grid (no tile-edge effects), one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_roughness(rast raster, band integer DEFAULT 1, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_roughness$function$;
COMMENT ON FUNCTION @extschema@.tg_roughness(raster,integer,text,double precision,text) IS 'Roughness of a DEM band: the largest minus the smallest of the 3 x 3 window, as ST_Roughness and gdaldem roughness';
CREATE OR REPLACE FUNCTION @extschema@.tg_roughness(coverage regclass, band integer DEFAULT 1, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_roughness$function$;
COMMENT ON FUNCTION @extschema@.tg_roughness(regclass,integer,text,double precision,text,name,name) IS 'Coverage form: the roughness of a whole tiled raster table as one grid (no tile-edge effects), one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_curvature(rast raster, band integer DEFAULT 1, type text DEFAULT 'profile'::text, scale double precision DEFAULT 1.0, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_curvature$function$;
COMMENT ON FUNCTION @extschema@.tg_curvature(raster,integer,text,double precision,text,double precision,text) IS 'Curvature of a DEM band from Evans-Young derivatives (Florinsky 2016 definitions, convex positive, 1/vertical unit): profile, plan, tangential, mean, gaussian, minimal, maximal or total';
CREATE OR REPLACE FUNCTION @extschema@.tg_curvature(coverage regclass, band integer DEFAULT 1, type text DEFAULT 'profile'::text, scale double precision DEFAULT 1.0, pixeltype text DEFAULT '32BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_curvature$function$;
COMMENT ON FUNCTION @extschema@.tg_curvature(regclass,integer,text,double precision,text,double precision,text,name,name) IS 'Coverage form: the curvature of a whole tiled raster table as one grid (no tile-edge effects), one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_geomorphons(rast raster, band integer DEFAULT 1, search_radius integer DEFAULT 3, skip integer DEFAULT 0, flat_threshold double precision DEFAULT 1.0, scale double precision DEFAULT 1.0, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_geomorphons$function$;
COMMENT ON FUNCTION @extschema@.tg_geomorphons(raster,integer,integer,integer,double precision,double precision,text) IS 'Geomorphons (Jasiewicz and Stepinski 2013) of a DEM band as 8BUI landforms: 1 flat, 2 peak, 3 ridge, 4 shoulder, 5 spur, 6 slope, 7 hollow, 8 footslope, 9 valley, 10 pit (0 nodata), from lines of sight of search_radius cells in 8 directions, the first skip cells left out, flat_threshold in degrees';
CREATE OR REPLACE FUNCTION @extschema@.tg_geomorphons(coverage regclass, band integer DEFAULT 1, search_radius integer DEFAULT 3, skip integer DEFAULT 0, flat_threshold double precision DEFAULT 1.0, scale double precision DEFAULT 1.0, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_geomorphons$function$;
COMMENT ON FUNCTION @extschema@.tg_geomorphons(regclass,integer,integer,integer,double precision,double precision,text,name,name) IS 'Coverage form: the geomorphons of a whole tiled raster table as one grid (lines of sight cross tile edges), one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_terrain(rast raster, products text[] DEFAULT ARRAY['slope'::text, 'aspect'::text, 'hillshade'::text], band integer DEFAULT 1, scale double precision DEFAULT 1.0, units text DEFAULT 'DEGREES'::text, aspect_units text DEFAULT 'DEGREES'::text, azimuth double precision DEFAULT 315, altitude double precision DEFAULT 45, max_bright double precision DEFAULT 255, z_factor double precision DEFAULT 1.0, hillshade_method text DEFAULT 'standard'::text, tri_algorithm text DEFAULT 'wilson'::text, curvature_type text DEFAULT 'profile'::text, search_radius integer DEFAULT 3, skip integer DEFAULT 0, flat_threshold double precision DEFAULT 1.0, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, OUT slope raster, OUT aspect raster, OUT hillshade raster, OUT tpi raster, OUT tri raster, OUT roughness raster, OUT curvature raster, OUT geomorphons raster)
 RETURNS record
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_terrain$function$;
COMMENT ON FUNCTION @extschema@.tg_terrain(raster,text[],integer,double precision,text,text,double precision,double precision,double precision,double precision,text,text,text,integer,integer,double precision,double precision,text) IS 'Several local derivatives of a DEM band from one pass over it: one raster per product named in products (slope, aspect, hillshade, tpi, tri, roughness, curvature, geomorphons; the others NULL), with the options of tg_slope, tg_aspect (aspect_units), tg_hillshade (hillshade_method), tg_tri (tri_algorithm), tg_curvature (curvature_type) and tg_geomorphons';
CREATE OR REPLACE FUNCTION @extschema@.tg_terrain(coverage regclass, products text[] DEFAULT ARRAY['slope'::text, 'aspect'::text, 'hillshade'::text], band integer DEFAULT 1, scale double precision DEFAULT 1.0, units text DEFAULT 'DEGREES'::text, aspect_units text DEFAULT 'DEGREES'::text, azimuth double precision DEFAULT 315, altitude double precision DEFAULT 45, max_bright double precision DEFAULT 255, z_factor double precision DEFAULT 1.0, hillshade_method text DEFAULT 'standard'::text, tri_algorithm text DEFAULT 'wilson'::text, curvature_type text DEFAULT 'profile'::text, search_radius integer DEFAULT 3, skip integer DEFAULT 0, flat_threshold double precision DEFAULT 1.0, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, slope raster, aspect raster, hillshade raster, tpi raster, tri raster, roughness raster, curvature raster, geomorphons raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_terrain$function$;
COMMENT ON FUNCTION @extschema@.tg_terrain(regclass,text[],integer,double precision,text,text,double precision,double precision,double precision,double precision,text,text,text,integer,integer,double precision,double precision,text,name,name) IS 'Coverage form: several local derivatives of a whole tiled raster table read once as one grid, one row per input tile with a raster column per product (NULL for those not asked for; tg_create_result leaves such columns out)';
CREATE OR REPLACE FUNCTION @extschema@.tg_fill(rast raster, band integer DEFAULT 1, method text DEFAULT 'priority-flood'::text, epsilon double precision DEFAULT 0, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_fill$function$;
COMMENT ON FUNCTION @extschema@.tg_fill(raster,integer,text,double precision,double precision,text) IS 'Depression-filled DEM (priority-flood or planchon-darboux; the same surface), or with method breach the DEM breached instead (Lindsay 2016: cells lowered along least-cost paths from the pits, none raised): every cell drains to the raster edge or nodata; epsilon > 0 makes it strictly drainable';
CREATE OR REPLACE FUNCTION @extschema@.tg_fill(coverage regclass, band integer DEFAULT 1, method text DEFAULT 'priority-flood'::text, epsilon double precision DEFAULT 0, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_fill$function$;
COMMENT ON FUNCTION @extschema@.tg_fill(regclass,integer,text,double precision,double precision,text,name,name) IS 'Coverage form: depression filling of a whole tiled raster table as one grid, one row per input tile with its extent (equal to the raster form on the mosaic)';
CREATE OR REPLACE FUNCTION @extschema@.tg_flow_direction(rast raster, band integer DEFAULT 1, routing text DEFAULT 'd8'::text, fill boolean DEFAULT true, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, output text DEFAULT 'auto'::text, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_flow_direction$function$;
COMMENT ON FUNCTION @extschema@.tg_flow_direction(raster,integer,text,boolean,double precision,double precision,text,text) IS 'Flow directions of a DEM (d8, fd8, mfd-md, fdd8, dinf, anisotropic): D8 ESRI codes (8BUI), a receiver bit mask (16BUI) or 8 bands of flow shares (32BF, E SE S SW W NW N NE); flats resolved (Barnes 2014)';
CREATE OR REPLACE FUNCTION @extschema@.tg_flow_direction(coverage regclass, band integer DEFAULT 1, routing text DEFAULT 'd8'::text, fill boolean DEFAULT true, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, output text DEFAULT 'auto'::text, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_flow_direction$function$;
COMMENT ON FUNCTION @extschema@.tg_flow_direction(regclass,integer,text,boolean,double precision,double precision,text,text,name,name) IS 'Coverage form: flow directions of a whole tiled raster table as one grid, one row per input tile with its extent';
CREATE OR REPLACE FUNCTION @extschema@.tg_flow_accumulation(rast raster, band integer DEFAULT 1, routing text DEFAULT 'd8'::text, method text DEFAULT 'auto'::text, weight raster DEFAULT NULL::raster, units text DEFAULT 'cells'::text, fill boolean DEFAULT true, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, weight_band integer DEFAULT 1, pixeltype text DEFAULT '64BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_flow_accumulation$function$;
COMMENT ON FUNCTION @extschema@.tg_flow_accumulation(raster,integer,text,text,raster,text,boolean,double precision,double precision,integer,text,double precision,text) IS 'Flow accumulation of a DEM (cells, area or sca), every cell counting itself; routings d8, fd8, mfd-md, fdd8, dinf, anisotropic; methods flow-transfer, dependency-transfer, indegree, topological (all give the same result)';
CREATE OR REPLACE FUNCTION @extschema@.tg_flow_accumulation(coverage regclass, band integer DEFAULT 1, routing text DEFAULT 'd8'::text, method text DEFAULT 'auto'::text, weight regclass DEFAULT NULL::regclass, units text DEFAULT 'cells'::text, fill boolean DEFAULT true, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, weight_band integer DEFAULT 1, pixeltype text DEFAULT '64BF'::text, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name, weight_column name DEFAULT 'rast'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_flow_accumulation$function$;
COMMENT ON FUNCTION @extschema@.tg_flow_accumulation(regclass,integer,text,text,regclass,text,boolean,double precision,double precision,integer,text,double precision,text,name,name,name) IS 'Coverage form: flow accumulation over a whole tiled raster table as one grid (flow crosses tile edges), one row per input tile with its extent; weight is another coverage on the same grid';
CREATE OR REPLACE FUNCTION @extschema@.tg_hydrology(rast raster, band integer DEFAULT 1, routing text DEFAULT 'd8'::text, method text DEFAULT 'auto'::text, weight raster DEFAULT NULL::raster, units text DEFAULT 'cells'::text, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, weight_band integer DEFAULT 1, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, OUT filled raster, OUT direction raster, OUT accumulation raster)
 RETURNS record
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_hydrology$function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_hydrology(coverage regclass, band integer DEFAULT 1, routing text DEFAULT 'd8'::text, method text DEFAULT 'auto'::text, weight regclass DEFAULT NULL::regclass, units text DEFAULT 'cells'::text, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, weight_band integer DEFAULT 1, nodata double precision DEFAULT NULL::double precision, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name, weight_column name DEFAULT 'rast'::name)
 RETURNS TABLE(rid bigint, filled raster, direction raster, accumulation raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_hydrology$function$;
COMMENT ON FUNCTION @extschema@.tg_hydrology(regclass,integer,text,text,regclass,text,double precision,double precision,integer,double precision,text,name,name,name) IS 'Coverage form of the chained call: filled DEM, directions and accumulation of a whole tiled raster table as one grid, one row per input tile';
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_readable(source regclass, rast_column name, id_column name)
 RETURNS boolean
 LANGUAGE c
 STABLE PARALLEL SAFE STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_bmmq_readable$function$;
COMMENT ON FUNCTION terra_gpu._bmmq_readable(regclass,name,name) IS 'Internal (row security of terra_gpu.bmmq_index): may the caller SELECT both columns of the source; NULL when the table or a column is gone';
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_tile_visible(index_id bigint, tile_id bigint)
 RETURNS boolean
 LANGUAGE c
 STABLE PARALLEL RESTRICTED STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_bmmq_tile_visible$function$;
COMMENT ON FUNCTION terra_gpu._bmmq_tile_visible(bigint,bigint) IS 'Internal (row security of terra_gpu.bmmq_tile and bmmq_node): does the caller see the index and the source row of the tile, under the source''s row security policies';
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_cells_in_range(rast raster, band integer, levels integer, quad_level integer[], quad_morton bigint[], lo double precision, hi double precision, OUT level integer, OUT morton bigint)
 RETURNS SETOF record
 LANGUAGE c
 IMMUTABLE PARALLEL SAFE STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_bmmq_cells_in_range$function$;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_build_nodes(coverage regclass, rast_column name, id_column name, band integer, bounds double precision[], backend text, tiles bigint[] DEFAULT NULL::bigint[], OUT tile_id bigint, OUT pos integer, OUT level smallint, OUT morton bigint, OUT min_bin smallint, OUT max_bin smallint, OUT fc_pos integer, OUT parent_min smallint, OUT parent_max smallint)
 RETURNS SETOF record
 LANGUAGE c
 PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_bmmq_build_nodes$function$;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_equal_bounds(lo double precision, hi double precision, nbins integer)
 RETURNS double precision[]
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
RETURN CASE WHEN (hi > lo) THEN ARRAY(SELECT (_bmmq_equal_bounds.lo + (((_bmmq_equal_bounds.hi - _bmmq_equal_bounds.lo) * (k.k)::double precision) / (_bmmq_equal_bounds.nbins)::double precision)) FROM generate_series(1, (_bmmq_equal_bounds.nbins - 1)) k(k)) ELSE ARRAY[lo] END;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_check_bounds(bins double precision[])
 RETURNS double precision[]
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
BEGIN
	IF cardinality(bins) IS NULL OR cardinality(bins) < 1 THEN
		RAISE EXCEPTION 'bins must hold at least one boundary' USING ERRCODE = '22023';
	END IF;
	IF cardinality(bins) > 32764 THEN
		RAISE EXCEPTION 'at most 32764 bin boundaries are supported, got %', cardinality(bins)
			USING ERRCODE = '22023';
	END IF;
	IF EXISTS (SELECT 1 FROM unnest(bins) WITH ORDINALITY b(v, i)
			   WHERE v IS NULL OR v = 'NaN' OR v IN ('Infinity', '-Infinity')
				  OR v <= bins[i - 1]) THEN
		RAISE EXCEPTION 'bin boundaries must be finite and strictly increasing: %', bins
			USING ERRCODE = '22023';
	END IF;
	RETURN bins;
END $function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_bmmq(rast raster, band integer DEFAULT 1, bins double precision[] DEFAULT NULL::double precision[], nbins integer DEFAULT 8, backend text DEFAULT NULL::text, OUT pos integer, OUT level integer, OUT morton bigint, OUT min_bin integer, OUT max_bin integer, OUT fc_pos integer)
 RETURNS SETOF record
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	s record;
BEGIN
	IF rast IS NULL THEN
		RETURN;
	END IF;
	IF bins IS NULL THEN
		IF nbins IS NULL OR nbins < 2 OR nbins > 32765 THEN
			RAISE EXCEPTION 'nbins must be between 2 and 32765, got %', nbins USING ERRCODE = '22023';
		END IF;
		s := ST_SummaryStats(rast, band, true);
		IF s.count = 0 THEN
			RAISE EXCEPTION 'band % has no valid cells to compute bins from', band
				USING ERRCODE = '22000', HINT = 'Give the bin boundaries with bins => ARRAY[...].';
		END IF;
		bins := terra_gpu._bmmq_equal_bounds(s.min, s.max, nbins);
	END IF;
	RETURN QUERY SELECT * FROM terra_gpu._bmmq_value(rast, band, terra_gpu._bmmq_check_bounds(bins), backend);
END $function$;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_value(rast raster, band integer, bounds double precision[], backend text, OUT pos integer, OUT level integer, OUT morton bigint, OUT min_bin integer, OUT max_bin integer, OUT fc_pos integer)
 RETURNS SETOF record
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_bmmq_value$function$;
CREATE OR REPLACE FUNCTION terra_gpu.bmmq_mark_stale()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
DECLARE
	tables oid[];
	id_column name;
BEGIN
	-- (nested: a TRUNCATE trigger has no transition table to name)
	IF TG_OP <> 'TRUNCATE' THEN
		IF NOT EXISTS (SELECT 1 FROM changed) THEN
			RETURN NULL;
		END IF;
	END IF;
	-- this table and its ancestors (partitioned and inheritance parents)
	WITH RECURSIVE a(oid) AS (
		SELECT TG_RELID UNION SELECT i.inhparent FROM pg_inherits i JOIN a ON i.inhrelid = a.oid)
	SELECT array_agg(oid) INTO tables FROM a;
	UPDATE terra_gpu.bmmq_index SET stale = true WHERE source::oid = ANY (tables) AND NOT stale;
	IF TG_OP = 'TRUNCATE' THEN
		UPDATE terra_gpu.product SET retiled = true WHERE source::oid = ANY (tables) AND NOT retiled;
		UPDATE terra_gpu.bmmq_index SET changes_recorded = false WHERE source::oid = ANY (tables) AND changes_recorded;
	ELSE
		-- the ids of the rows written, read once per id column, for the
		-- indexes and the products that name that column
		FOR id_column IN SELECT i.id_column FROM terra_gpu.bmmq_index i
						 WHERE i.source::oid = ANY (tables) AND i.changes_recorded
						 UNION SELECT p.id_column FROM terra_gpu.product p
						 WHERE p.source::oid = ANY (tables) AND p.captured LOOP
			EXECUTE format('WITH ids AS MATERIALIZED (SELECT DISTINCT c.%1$I::bigint AS id FROM changed c WHERE c.%1$I IS NOT NULL), '
						   'ix AS (INSERT INTO terra_gpu.bmmq_change (index_id, tile_id) '
						   '       SELECT i.id, ids.id FROM ids, terra_gpu.bmmq_index i '
						   '       WHERE i.source::oid = ANY ($1) AND i.changes_recorded AND i.id_column = $2 '
						   '       ON CONFLICT DO NOTHING) '
						   'INSERT INTO terra_gpu.product_change (product, tile_id) '
						   'SELECT p.product, ids.id FROM ids, terra_gpu.product p '
						   'WHERE p.source::oid = ANY ($1) AND p.captured AND p.id_column = $2 '
						   'ON CONFLICT DO NOTHING', id_column)
				USING tables, id_column;
		END LOOP;
	END IF;
	RETURN NULL;
END $function$;
REVOKE ALL ON FUNCTION terra_gpu.bmmq_mark_stale() FROM PUBLIC;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_watch(source regclass, watch boolean)
 RETURNS void
 LANGUAGE c
 STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_bmmq_watch$function$;
CREATE OR REPLACE FUNCTION terra_gpu.bmmq_source_dropped()
 RETURNS event_trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
BEGIN
	DELETE FROM terra_gpu.bmmq_node n USING terra_gpu.bmmq_index i, pg_event_trigger_dropped_objects() d
	WHERE n.index_id = i.id AND i.source::oid = d.objid
	  AND d.classid = 'pg_class'::regclass AND d.objsubid = 0;
	DELETE FROM terra_gpu.bmmq_index i USING pg_event_trigger_dropped_objects() d
	WHERE i.source::oid = d.objid AND d.classid = 'pg_class'::regclass AND d.objsubid = 0;
END $function$;
REVOKE ALL ON FUNCTION terra_gpu.bmmq_source_dropped() FROM PUBLIC;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_check_source(ix terra_gpu.bmmq_index)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = ix.source) THEN
		RAISE EXCEPTION 'the source table of BMMQ index "%" no longer exists', ix.name
			USING ERRCODE = '42P01', DETAIL = format('It was the table with OID %s.', ix.source::oid),
				  HINT = format('Drop the index: SELECT tg_bmmq_drop(%L);', ix.name);
	END IF;
END $function$;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_fill(ix terra_gpu.bmmq_index, backend text, tiles bigint[])
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	bad record;
	srid integer;
	built_with text := ix.build_backend;
	gone record;
	added record;
	nodes bigint;
BEGIN
	EXECUTE format($q$
		SELECT %1$I::bigint AS tile_id, (ST_MetaData(%2$I)).*, ST_NumBands(%2$I) AS nbands
		FROM %3$s
		WHERE %2$I IS NOT NULL AND ($3 IS NULL OR %1$I = ANY ($3))
		  AND (%1$I IS NULL OR ST_SkewX(%2$I) <> 0 OR ST_SkewY(%2$I) <> 0 OR ST_ScaleX(%2$I) <= 0
			   OR ST_ScaleY(%2$I) >= 0 OR ST_NumBands(%2$I) < $1 OR ST_SRID(%2$I) <> $2)
		LIMIT 1 $q$, ix.id_column, ix.rast_column, ix.source)
		INTO bad USING ix.band, ix.srid, tiles;
	IF bad.tile_id IS NULL AND bad.width IS NOT NULL THEN
		RAISE EXCEPTION 'a tile of % has a NULL %', ix.source, ix.id_column USING ERRCODE = '22004';
	ELSIF bad.srid <> ix.srid THEN
		RAISE EXCEPTION 'tile % of % has SRID %, the first tile %', bad.tile_id, ix.source, bad.srid, ix.srid
			USING ERRCODE = '22023', HINT = 'All tiles of an indexed coverage share one SRID.';
	ELSIF bad.nbands < ix.band THEN
		RAISE EXCEPTION 'band % does not exist in tile % of % (it has % band(s))', ix.band,
			bad.tile_id, ix.source, bad.nbands USING ERRCODE = '22023';
	ELSIF bad.tile_id IS NOT NULL THEN
		RAISE EXCEPTION 'tile % of % is not north-up (scale % x %, skew % x %)', bad.tile_id,
			ix.source, bad.scalex, bad.scaley, bad.skewx, bad.skewy USING ERRCODE = '22023',
			HINT = 'BMMQ-tree indexes need unrotated rasters with scale_x > 0 and scale_y < 0; ST_Transform or gdalwarp them first.';
	END IF;

	-- what goes: the counts follow the rows removed and added, so that an
	-- incremental refresh reads no other tile's rows
	DELETE FROM terra_gpu.bmmq_node n WHERE n.index_id = ix.id AND (tiles IS NULL OR n.tile_id = ANY (tiles));
	GET DIAGNOSTICS nodes = ROW_COUNT;
	WITH d AS (DELETE FROM terra_gpu.bmmq_tile t WHERE t.index_id = ix.id AND (tiles IS NULL OR t.tile_id = ANY (tiles))
			   RETURNING t.width::bigint * t.height AS cells)
	SELECT count(*) AS n, coalesce(sum(d.cells), 0) AS cells INTO gone FROM d;
	IF tiles IS NULL THEN
		ix.tile_count := 0;
		ix.node_count := 0;
		ix.cell_count := 0;
	ELSE
		ix.tile_count := ix.tile_count - gone.n;
		ix.node_count := ix.node_count - nodes;
		ix.cell_count := ix.cell_count - gone.cells;
	END IF;

	EXECUTE format($q$
		WITH i AS (
			INSERT INTO terra_gpu.bmmq_tile
			SELECT $1, %1$I::bigint,
				   (SELECT min(l) FROM generate_series(0, 16) l WHERE 1 << l >= greatest(m.width, m.height))::smallint,
				   m.width, m.height,
				   m.upperleftx, m.upperlefty, m.scalex, m.scaley
			FROM %3$s, ST_MetaData(%2$I) m
			WHERE %2$I IS NOT NULL AND ($2 IS NULL OR %1$I = ANY ($2))
			RETURNING width::bigint * height AS cells)
		SELECT count(*) AS n, coalesce(sum(i.cells), 0) AS cells FROM i $q$,
		ix.id_column, ix.rast_column, ix.source) INTO added USING ix.id, tiles;

	IF tiles IS NULL OR cardinality(tiles) > 0 THEN
		INSERT INTO terra_gpu.bmmq_node
		SELECT ix.id, n.*
		FROM terra_gpu._bmmq_build_nodes(ix.source, ix.rast_column, ix.id_column, ix.band, ix.bounds, backend, tiles) n;
		GET DIAGNOSTICS nodes = ROW_COUNT;
		built_with := (@extschema@.tg_last_run()).backend;
	ELSE
		nodes := 0;
	END IF;

	-- plans for the queries that follow: the bins index (autovacuum's job when
	-- the caller does not own the table: ANALYZE would only warn); a few
	-- tiles rebuilt leave the statistics as they were
	IF tiles IS NULL AND pg_has_role((SELECT relowner FROM pg_class WHERE oid = 'terra_gpu.bmmq_node'::regclass), 'USAGE') THEN
		ANALYZE terra_gpu.bmmq_node;
	END IF;
	UPDATE terra_gpu.bmmq_index SET
		tile_count = ix.tile_count + added.n,
		node_count = ix.node_count + nodes,
		cell_count = ix.cell_count + added.cells,
		built_at = now(), build_backend = built_with, stale = false,
		changes_recorded = true
	WHERE id = ix.id;
END $function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_bmmq_build(name text, coverage regclass, rast_column name DEFAULT 'rast'::name, band integer DEFAULT 1, bins double precision[] DEFAULT NULL::double precision[], nbins integer DEFAULT 8, bin_method text DEFAULT 'equal'::text, id_column name DEFAULT 'rid'::name, backend text DEFAULT NULL::text)
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	ix terra_gpu.bmmq_index;
	s record;
	srid integer;
	typ text;
BEGIN
	IF name IS NULL OR coverage IS NULL THEN
		RAISE EXCEPTION 'name and coverage must not be NULL' USING ERRCODE = '22004';
	END IF;
	IF EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.name = tg_bmmq_build.name) THEN
		RAISE EXCEPTION 'BMMQ index "%" already exists', name USING ERRCODE = '42710',
			HINT = 'Drop it with tg_bmmq_drop() or rebuild it with tg_bmmq_refresh().';
	END IF;
	IF NOT has_table_privilege(coverage, 'SELECT') THEN
		RAISE EXCEPTION 'permission denied for table %', coverage USING ERRCODE = '42501',
			HINT = 'A BMMQ index can be built only by a role that may SELECT its source table.';
	END IF;
	SELECT format_type(a.atttypid, NULL) INTO typ FROM pg_attribute a
	WHERE a.attrelid = coverage AND a.attname = rast_column AND NOT a.attisdropped;
	IF typ IS NULL THEN
		RAISE EXCEPTION 'column "%" of % does not exist', rast_column, coverage USING ERRCODE = '42703';
	ELSIF typ <> 'raster' THEN
		RAISE EXCEPTION 'column "%" of % is %, not raster', rast_column, coverage, typ USING ERRCODE = '42804';
	END IF;
	SELECT format_type(a.atttypid, NULL) INTO typ FROM pg_attribute a
	WHERE a.attrelid = coverage AND a.attname = id_column AND NOT a.attisdropped;
	IF typ IS NULL THEN
		RAISE EXCEPTION 'tile id column "%" of % does not exist', id_column, coverage USING ERRCODE = '42703',
			HINT = 'Name an integer column that identifies the tiles with id_column => (raster2pgsql creates "rid").';
	ELSIF typ NOT IN ('smallint', 'integer', 'bigint') THEN
		RAISE EXCEPTION 'tile id column "%" of % is %, not an integer type', id_column, coverage, typ
			USING ERRCODE = '42804';
	END IF;
	IF band IS NULL OR band < 1 THEN
		RAISE EXCEPTION 'band must be a positive number, got %', band USING ERRCODE = '22023';
	END IF;

	EXECUTE format('SELECT ST_SRID(%1$I) FROM %2$s WHERE %1$I IS NOT NULL LIMIT 1', rast_column, coverage)
		INTO srid;
	IF srid IS NULL THEN
		RAISE EXCEPTION '% has no tiles in column "%"', coverage, rast_column USING ERRCODE = '22000';
	END IF;

	IF bins IS NOT NULL THEN
		bin_method := 'explicit';
	ELSE
		IF nbins IS NULL OR nbins < 2 OR nbins > 32765 THEN
			RAISE EXCEPTION 'nbins must be between 2 and 32765, got %', nbins USING ERRCODE = '22023';
		END IF;
		IF bin_method = 'equal' THEN
			EXECUTE format('SELECT (ST_SummaryStatsAgg(%1$I, $1, true)).* FROM %2$s', rast_column, coverage)
				INTO s USING band;
			IF s.count IS NULL OR s.count = 0 THEN
				RAISE EXCEPTION 'band % of % has no valid cells to compute bins from', band, coverage
					USING ERRCODE = '22000', HINT = 'Give the bin boundaries with bins => ARRAY[...].';
			END IF;
			bins := terra_gpu._bmmq_equal_bounds(s.min, s.max, nbins);
		ELSIF bin_method = 'quantile' THEN
			-- exact quantiles of every valid value (PostGIS 3 has no table form of ST_Quantile)
			EXECUTE format('SELECT array_agg(DISTINCT q ORDER BY q) FROM unnest((
								SELECT percentile_disc($2) WITHIN GROUP (ORDER BY x)
								FROM %2$s t, unnest(ST_DumpValues(t.%1$I, $1, true)) x WHERE x IS NOT NULL)) q',
						   rast_column, coverage)
				INTO bins USING band, ARRAY(SELECT k::double precision / nbins FROM generate_series(1, nbins - 1) k);
			IF bins IS NULL THEN
				RAISE EXCEPTION 'band % of % has no valid cells to compute bins from', band, coverage
					USING ERRCODE = '22000';
			END IF;
		ELSE
			RAISE EXCEPTION 'invalid bin_method "%"', bin_method USING ERRCODE = '22023',
				DETAIL = 'Valid bin methods are equal and quantile (or give bins => ARRAY[...]).';
		END IF;
	END IF;

	BEGIN
		INSERT INTO terra_gpu.bmmq_index (name, source, rast_column, id_column, band, bounds, bin_method, srid)
		VALUES (name, coverage, rast_column, id_column, band, terra_gpu._bmmq_check_bounds(bins), bin_method, srid)
		RETURNING * INTO ix;
	EXCEPTION WHEN unique_violation THEN
		-- an index of another role, on a table this one may not read
		RAISE EXCEPTION 'BMMQ index "%" already exists', name USING ERRCODE = '42710',
			HINT = 'Index names are unique in the database; choose another one.';
	END;
	PERFORM terra_gpu._bmmq_check_source(ix);
	-- no writes to the source until this transaction ends; its stale triggers
	PERFORM terra_gpu._bmmq_watch(ix.source, true);
	PERFORM terra_gpu._bmmq_fill(ix, backend, NULL);
	RETURN ix.id;
END $function$;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_index(name text)
 RETURNS terra_gpu.bmmq_index
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	ix terra_gpu.bmmq_index;
BEGIN
	SELECT * INTO ix FROM terra_gpu.bmmq_index i WHERE i.name = _bmmq_index.name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'BMMQ index "%" does not exist', name USING ERRCODE = '42704';
	END IF;
	PERFORM terra_gpu._bmmq_check_source(ix);
	IF ix.stale THEN
		RAISE EXCEPTION 'BMMQ index "%" is stale: % changed after it was built', name, ix.source
			USING ERRCODE = '55000', HINT = format('Rebuild it: SELECT tg_bmmq_refresh(%L);', name);
	END IF;
	RETURN ix;
END $function$;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_own(name text, if_exists boolean)
 RETURNS terra_gpu.bmmq_index
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	ix terra_gpu.bmmq_index;
BEGIN
	SELECT * INTO ix FROM terra_gpu.bmmq_index i WHERE i.name = _bmmq_own.name;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	IF NOT pg_has_role(ix.owner, 'MEMBER') THEN
		RAISE EXCEPTION 'must be owner of BMMQ index "%"', name USING ERRCODE = '42501',
			DETAIL = format('It is owned by %s.', ix.owner);
	END IF;
	SELECT * INTO ix FROM terra_gpu.bmmq_index i WHERE i.id = ix.id FOR UPDATE;
	RETURN ix;
END $function$;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_refresh(ix terra_gpu.bmmq_index, OUT mode text, OUT tiles_changed integer, OUT tiles_rebuilt integer)
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	tiles bigint[];
BEGIN
	PERFORM terra_gpu._bmmq_check_source(ix);
	-- no writes to the source until this transaction ends: the changes read
	-- next are all there are
	PERFORM terra_gpu._bmmq_watch(ix.source, true);
	WITH d AS (DELETE FROM terra_gpu.bmmq_change c WHERE c.index_id = ix.id RETURNING c.tile_id)
	SELECT coalesce(array_agg(d.tile_id), '{}') INTO tiles FROM d;
	tiles_changed := cardinality(tiles);
	IF ix.changes_recorded THEN
		-- the tiles written since the last build, and those whose id came or
		-- went otherwise (an UPDATE of the id records only the new one)
		EXECUTE format($q$
			SELECT coalesce(array_agg(DISTINCT id ORDER BY id), '{}') FROM (
				SELECT unnest($2) AS id
				UNION ALL
				(SELECT t.tile_id FROM terra_gpu.bmmq_tile t WHERE t.index_id = $1
				 EXCEPT ALL
				 SELECT %1$I::bigint FROM %3$s WHERE %2$I IS NOT NULL)
				UNION ALL
				(SELECT %1$I::bigint FROM %3$s WHERE %2$I IS NOT NULL
				 EXCEPT ALL
				 SELECT t.tile_id FROM terra_gpu.bmmq_tile t WHERE t.index_id = $1)) c $q$,
			ix.id_column, ix.rast_column, ix.source) INTO tiles USING ix.id, tiles;
		mode := CASE WHEN cardinality(tiles) = 0 THEN 'unchanged' ELSE 'incremental' END;
		tiles_rebuilt := cardinality(tiles);
	ELSE
		tiles := NULL;
		mode := 'full';
	END IF;
	PERFORM terra_gpu._bmmq_fill(ix, NULL, tiles);
	IF tiles IS NULL THEN
		SELECT i.tile_count INTO tiles_rebuilt FROM terra_gpu.bmmq_index i WHERE i.id = ix.id;
	END IF;
END $function$;
COMMENT ON FUNCTION terra_gpu._bmmq_refresh(terra_gpu.bmmq_index) IS 'Internal (tg_bmmq_refresh, tg_refresh_all): bring an index the caller owns and has locked up to date; how (incremental, full, unchanged), the source tiles written since and the tiles whose trees were rebuilt';
CREATE OR REPLACE FUNCTION @extschema@.tg_bmmq_refresh(name text)
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	ix terra_gpu.bmmq_index := terra_gpu._bmmq_own(name, false);
BEGIN
	IF ix.id IS NULL THEN
		RAISE EXCEPTION 'BMMQ index "%" does not exist', name USING ERRCODE = '42704';
	END IF;
	PERFORM terra_gpu._bmmq_refresh(ix);
	RETURN ix.id;
END $function$;
COMMENT ON FUNCTION @extschema@.tg_bmmq_refresh(text) IS 'Bring a BMMQ-tree index up to date with its source table, with the same bins: the trees of the tiles written since it was built or refreshed (recorded by the source''s triggers), or of every tile after a TRUNCATE or where the changes were not recorded';
CREATE OR REPLACE FUNCTION @extschema@.tg_bmmq_drop(name text, if_exists boolean DEFAULT false)
 RETURNS boolean
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	ix terra_gpu.bmmq_index := terra_gpu._bmmq_own(name, if_exists);
BEGIN
	IF ix.id IS NULL THEN
		IF if_exists THEN
			RETURN false;
		END IF;
		RAISE EXCEPTION 'BMMQ index "%" does not exist', name USING ERRCODE = '42704';
	END IF;
	DELETE FROM terra_gpu.bmmq_node WHERE index_id = ix.id;
	DELETE FROM terra_gpu.bmmq_index WHERE id = ix.id;
	PERFORM terra_gpu._bmmq_watch(ix.source, false);
	RETURN true;
END $function$;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_code_from(bounds double precision[], c integer)
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
RETURN CASE WHEN (c = 0) THEN '-Infinity'::double precision WHEN (c <= cardinality(bounds)) THEN (bounds)[c] ELSE NULL::double precision END;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_code_to(bounds double precision[], c integer)
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
RETURN CASE WHEN (c < cardinality(bounds)) THEN (bounds)[(c + 1)] WHEN (c = cardinality(bounds)) THEN 'Infinity'::double precision ELSE NULL::double precision END;
CREATE OR REPLACE FUNCTION terra_gpu._bmmq_quadrant_geom(t terra_gpu.bmmq_tile, level integer, morton bigint, srid integer)
 RETURNS geometry
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
RETURN st_makeenvelope(((t).upperleft_x + (((terra_gpu.morton_col(morton) * (1 << ((t).levels - level))))::double precision * (t).scale_x)), ((t).upperleft_y + ((((terra_gpu.morton_row(morton) + 1) * (1 << ((t).levels - level))))::double precision * (t).scale_y)), ((t).upperleft_x + ((((terra_gpu.morton_col(morton) + 1) * (1 << ((t).levels - level))))::double precision * (t).scale_x)), ((t).upperleft_y + (((terra_gpu.morton_row(morton) * (1 << ((t).levels - level))))::double precision * (t).scale_y)), srid);
CREATE OR REPLACE FUNCTION @extschema@.tg_bmmq_range(name text, "window" geometry)
 RETURNS TABLE(tile_id bigint, level integer, morton bigint, min_bin integer, max_bin integer, value_from double precision, value_to double precision, geom geometry)
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	ix terra_gpu.bmmq_index := terra_gpu._bmmq_index(name);
BEGIN
	IF "window" IS NULL OR ST_IsEmpty("window") THEN
		RAISE EXCEPTION 'window must be a non-empty geometry' USING ERRCODE = '22023';
	END IF;
	IF ST_SRID("window") <> ix.srid THEN
		RAISE EXCEPTION 'window has SRID %, index "%" is in SRID %', ST_SRID("window"), name, ix.srid
			USING ERRCODE = '22023', HINT = 'ST_Transform the window to the raster''s SRID.';
	END IF;
	RETURN QUERY
	WITH w AS (
		SELECT ST_XMin("window") x0, ST_XMax("window") x1, ST_YMin("window") y0, ST_YMax("window") y1),
	t AS (
		-- cells whose closed extent meets the window's bounding box
		SELECT tt, greatest(0, ceil((w.x0 - tt.upperleft_x) / tt.scale_x - 1))::int c0,
			   least(tt.width, floor((w.x1 - tt.upperleft_x) / tt.scale_x) + 1)::int c1,
			   greatest(0, ceil((tt.upperleft_y - w.y1) / -tt.scale_y - 1))::int r0,
			   least(tt.height, floor((tt.upperleft_y - w.y0) / -tt.scale_y) + 1)::int r1
		FROM terra_gpu.bmmq_tile tt, w
		WHERE tt.index_id = ix.id
		  AND tt.upperleft_x <= w.x1 AND tt.upperleft_x + tt.width * tt.scale_x >= w.x0
		  AND tt.upperleft_y >= w.y0 AND tt.upperleft_y + tt.height * tt.scale_y <= w.y1),
	leaf AS (
		SELECT t.*, n.level AS nlevel, n.morton AS nmorton, n.min_bin AS nmin, n.max_bin AS nmax
		FROM t JOIN terra_gpu.bmmq_node n
		  ON n.index_id = ix.id AND n.tile_id = (t.tt).tile_id AND n.fc_pos = -1
		WHERE t.c0 < t.c1 AND t.r0 < t.r1
		  AND terra_gpu.morton_col(n.morton) * (1 << ((t.tt).levels - n.level)) < t.c1
		  AND (terra_gpu.morton_col(n.morton) + 1) * (1 << ((t.tt).levels - n.level)) > t.c0
		  AND terra_gpu.morton_row(n.morton) * (1 << ((t.tt).levels - n.level)) < t.r1
		  AND (terra_gpu.morton_row(n.morton) + 1) * (1 << ((t.tt).levels - n.level)) > t.r0)
	SELECT (leaf.tt).tile_id, q.level, q.morton, leaf.nmin::int, leaf.nmax::int,
		   terra_gpu._bmmq_code_from(ix.bounds, leaf.nmin), terra_gpu._bmmq_code_to(ix.bounds, leaf.nmax),
		   terra_gpu._bmmq_quadrant_geom(leaf.tt, q.level, q.morton, ix.srid)
	FROM leaf, terra_gpu._bmmq_rect_quadrants((leaf.tt).levels, leaf.nlevel, leaf.nmorton,
											  leaf.c0, leaf.r0, leaf.c1, leaf.r1) q;
END $function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_bmmq_roi(name text, lo double precision, hi double precision, refine boolean DEFAULT false)
 RETURNS TABLE(tile_id bigint, level integer, morton bigint, min_bin integer, max_bin integer, value_from double precision, value_to double precision, boundary boolean, geom geometry)
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	ix terra_gpu.bmmq_index := terra_gpu._bmmq_index(name);
	n integer := cardinality(ix.bounds);
	a integer; b integer;		-- codes wholly inside [lo, hi)
	a2 integer; b2 integer;		-- codes that may hold values in [lo, hi)
BEGIN
	IF lo IS NULL OR hi IS NULL OR lo = 'NaN' OR hi = 'NaN' OR NOT lo < hi THEN
		RAISE EXCEPTION 'the value range [%, %) is empty or invalid', lo, hi USING ERRCODE = '22023';
	END IF;
	SELECT min(c), max(c) INTO a, b FROM generate_series(0, n) c
	WHERE terra_gpu._bmmq_code_from(ix.bounds, c) >= lo AND terra_gpu._bmmq_code_to(ix.bounds, c) <= hi;
	SELECT min(c), max(c) INTO a2, b2 FROM generate_series(0, n) c
	WHERE terra_gpu._bmmq_code_from(ix.bounds, c) < hi AND terra_gpu._bmmq_code_to(ix.bounds, c) > lo;

	-- the highest quadrants wholly inside: their parent is not
	RETURN QUERY
	SELECT nd.tile_id, nd.level::int, nd.morton, nd.min_bin::int, nd.max_bin::int,
		   terra_gpu._bmmq_code_from(ix.bounds, nd.min_bin), terra_gpu._bmmq_code_to(ix.bounds, nd.max_bin),
		   false, terra_gpu._bmmq_quadrant_geom(t, nd.level, nd.morton, ix.srid)
	FROM terra_gpu.bmmq_node nd
	JOIN terra_gpu.bmmq_tile t ON t.index_id = ix.id AND t.tile_id = nd.tile_id
	WHERE a IS NOT NULL AND nd.index_id = ix.id AND nd.min_bin BETWEEN a AND b AND nd.max_bin <= b
	  AND NOT (nd.parent_min >= a AND nd.parent_max <= b);

	IF a2 IS NULL OR (a2 = a AND b2 = b) THEN
		RETURN;
	END IF;
	IF NOT refine THEN
		-- leaves of a straddling code: some of their cells may be in the range
		RETURN QUERY
		SELECT nd.tile_id, nd.level::int, nd.morton, nd.min_bin::int, nd.max_bin::int,
			   terra_gpu._bmmq_code_from(ix.bounds, nd.min_bin), terra_gpu._bmmq_code_to(ix.bounds, nd.max_bin),
			   true, terra_gpu._bmmq_quadrant_geom(t, nd.level, nd.morton, ix.srid)
		FROM terra_gpu.bmmq_node nd
		JOIN terra_gpu.bmmq_tile t ON t.index_id = ix.id AND t.tile_id = nd.tile_id
		WHERE nd.index_id = ix.id AND nd.fc_pos = -1
		  AND nd.min_bin IN (a2, b2) AND nd.min_bin NOT BETWEEN coalesce(a, -1) AND coalesce(b, -2);
		RETURN;
	END IF;
	-- refined: the cells of those leaves whose value is in [lo, hi), from the source tiles
	RETURN QUERY EXECUTE format($q$
		WITH leaf AS (
			SELECT nd.tile_id, nd.min_bin, array_agg(nd.level::int) lv, array_agg(nd.morton) mk
			FROM terra_gpu.bmmq_node nd
			WHERE nd.index_id = $1 AND nd.fc_pos = -1
			  AND nd.min_bin IN ($2, $3) AND nd.min_bin NOT BETWEEN coalesce($4, -1) AND coalesce($5, -2)
			GROUP BY nd.tile_id, nd.min_bin)
		SELECT leaf.tile_id, c.level, c.morton, leaf.min_bin::int, leaf.min_bin::int,
			   terra_gpu._bmmq_code_from($6, leaf.min_bin), terra_gpu._bmmq_code_to($6, leaf.min_bin),
			   false, terra_gpu._bmmq_quadrant_geom(t, c.level, c.morton, $7)
		FROM leaf
		JOIN terra_gpu.bmmq_tile t ON t.index_id = $1 AND t.tile_id = leaf.tile_id
		JOIN %1$s src ON src.%2$I = leaf.tile_id,
		LATERAL terra_gpu._bmmq_cells_in_range(src.%3$I, $8, t.levels, leaf.lv, leaf.mk, $9, $10) c $q$,
		ix.source, ix.id_column, ix.rast_column)
	USING ix.id, a2, b2, a, b, ix.bounds, ix.srid, ix.band, lo, hi;
END $function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_bmmq_roi(names text[], lo double precision[], hi double precision[], combine text DEFAULT 'and'::text, refine boolean DEFAULT false)
 RETURNS TABLE(tile_id bigint, level integer, morton bigint, boundary boolean, geom geometry)
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	k integer := cardinality(names);
	first terra_gpu.bmmq_index;
	other terra_gpu.bmmq_index;
	bad record;
BEGIN
	IF k IS NULL OR k < 1 OR cardinality(lo) IS DISTINCT FROM k OR cardinality(hi) IS DISTINCT FROM k THEN
		RAISE EXCEPTION 'names, lo and hi must be arrays of the same non-zero length' USING ERRCODE = '22023';
	END IF;
	IF lower(combine) NOT IN ('and', 'or') THEN
		RAISE EXCEPTION 'invalid combine "%"', combine USING ERRCODE = '22023',
			DETAIL = 'Valid values are and, or.';
	END IF;
	first := terra_gpu._bmmq_index(names[1]);
	FOR i IN 2 .. k LOOP
		other := terra_gpu._bmmq_index(names[i]);
		SELECT t1.tile_id AS t1, t2.tile_id AS t2 INTO bad
		FROM (SELECT * FROM terra_gpu.bmmq_tile WHERE index_id = first.id) t1
		FULL JOIN (SELECT * FROM terra_gpu.bmmq_tile WHERE index_id = other.id) t2
		  ON t1.upperleft_x = t2.upperleft_x AND t1.upperleft_y = t2.upperleft_y
		 AND t1.width = t2.width AND t1.height = t2.height
		 AND t1.scale_x = t2.scale_x AND t1.scale_y = t2.scale_y
		WHERE t1.tile_id IS NULL OR t2.tile_id IS NULL
		LIMIT 1;
		IF FOUND OR other.srid <> first.srid THEN
			RAISE EXCEPTION 'BMMQ indexes "%" and "%" are not co-registered', names[1], names[i]
				USING ERRCODE = '22023',
				DETAIL = CASE WHEN other.srid <> first.srid THEN format('SRID %s and %s.', first.srid, other.srid)
							  WHEN bad.t1 IS NULL THEN format('Tile %s of "%s" has no tile at the same place in "%s".', bad.t2, names[i], names[1])
							  ELSE format('Tile %s of "%s" has no tile at the same place in "%s".', bad.t1, names[1], names[i]) END;
		END IF;
	END LOOP;

	-- each index's answer as Z-order cell intervals per tile of the first index
	RETURN QUERY
	WITH piece AS (
		SELECT q.i, t1.tile_id, t1.levels,
			   int8range(r.morton << (2 * (t1.levels - r.level)), (r.morton + 1) << (2 * (t1.levels - r.level))) z,
			   r.boundary
		FROM generate_series(1, k) q(i)
		CROSS JOIN LATERAL @extschema@.tg_bmmq_roi(names[q.i], coalesce(lo[q.i], '-Infinity'),
												   coalesce(hi[q.i], 'Infinity'), refine) r
		JOIN terra_gpu.bmmq_tile ti ON ti.index_id = (SELECT id FROM terra_gpu.bmmq_index WHERE bmmq_index.name = names[q.i])
								  AND ti.tile_id = r.tile_id
		JOIN terra_gpu.bmmq_tile t1 ON t1.index_id = first.id
								  AND t1.upperleft_x = ti.upperleft_x AND t1.upperleft_y = ti.upperleft_y),
	per_index AS (
		SELECT p.i, p.tile_id, p.levels,
			   coalesce(range_agg(p.z) FILTER (WHERE NOT p.boundary), '{}'::int8multirange) inside,
			   range_agg(p.z) maybe
		FROM piece p GROUP BY p.i, p.tile_id, p.levels),
	per_tile AS (
		SELECT pi.tile_id, pi.levels,
			   CASE WHEN lower(combine) = 'and' THEN range_intersect_agg(pi.inside) ELSE range_agg(pi.inside) END inside,
			   CASE WHEN lower(combine) = 'and' THEN range_intersect_agg(pi.maybe) ELSE range_agg(pi.maybe) END maybe
		FROM per_index pi GROUP BY pi.tile_id, pi.levels
		HAVING lower(combine) = 'or' OR count(*) = k),
	answer AS (
		SELECT pt.tile_id, pt.levels, u.z, false AS boundary FROM per_tile pt, unnest(pt.inside) u(z)
		UNION ALL
		SELECT pt.tile_id, pt.levels, u.z, true FROM per_tile pt, unnest(pt.maybe - pt.inside) u(z))
	SELECT an.tile_id, zq.level, zq.morton, an.boundary,
		   terra_gpu._bmmq_quadrant_geom(t, zq.level, zq.morton, first.srid)
	FROM answer an
	JOIN terra_gpu.bmmq_tile t ON t.index_id = first.id AND t.tile_id = an.tile_id,
	LATERAL terra_gpu._bmmq_z_quadrants(an.levels, lower(an.z), upper(an.z)) zq;
END $function$;
COMMENT ON FUNCTION @extschema@.tg_bmmq_roi(text[],double precision[],double precision[],text,boolean) IS 'Compound region-of-interest query over co-registered BMMQ indexes: names[i] in [lo[i], hi[i]) combined with and/or (a NULL bound is open); quadrants (tile ids of the first index), boundary = may hold matching cells; refine => exact cells';
CREATE OR REPLACE FUNCTION @extschema@.tg_viewshed(rast raster, observer geometry, observer_height double precision DEFAULT 1.75, target_height double precision DEFAULT 0, max_distance double precision DEFAULT NULL::double precision, earth_radius double precision DEFAULT 6370997, refraction double precision DEFAULT 0.14286, output text DEFAULT 'visible'::text, band integer DEFAULT 1, backend text DEFAULT NULL::text, algorithm text DEFAULT 'r2'::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_viewshed$function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_viewshed(coverage regclass, observer geometry, observer_height double precision DEFAULT 1.75, target_height double precision DEFAULT 0, max_distance double precision DEFAULT NULL::double precision, earth_radius double precision DEFAULT 6370997, refraction double precision DEFAULT 0.14286, output text DEFAULT 'visible'::text, band integer DEFAULT 1, backend text DEFAULT NULL::text, algorithm text DEFAULT 'r2'::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_viewshed$function$;
COMMENT ON FUNCTION @extschema@.tg_viewshed(regclass,geometry,double precision,double precision,double precision,double precision,double precision,text,integer,text,text,name,name) IS 'Coverage form of tg_viewshed: the whole tiled raster table as one grid (sight lines cross tiles), one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_viewshed_count(rast raster, observers geometry[], observer_height double precision DEFAULT 1.75, target_height double precision DEFAULT 0, max_distance double precision DEFAULT NULL::double precision, earth_radius double precision DEFAULT 6370997, refraction double precision DEFAULT 0.14286, band integer DEFAULT 1, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_viewshed_count$function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_viewshed_count(coverage regclass, observers geometry[], observer_height double precision DEFAULT 1.75, target_height double precision DEFAULT 0, max_distance double precision DEFAULT NULL::double precision, earth_radius double precision DEFAULT 6370997, refraction double precision DEFAULT 0.14286, band integer DEFAULT 1, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_viewshed_count$function$;
COMMENT ON FUNCTION @extschema@.tg_viewshed_count(regclass,geometry[],double precision,double precision,double precision,double precision,double precision,integer,text,name,name) IS 'Coverage form of tg_viewshed_count, one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_ls_factor(dem raster, routing text DEFAULT 'mfd-md'::text, m double precision DEFAULT 0.4, n double precision DEFAULT 1.3, a0 double precision DEFAULT 22.1, b0 double precision DEFAULT 0.0896, fill boolean DEFAULT false, band integer DEFAULT 1, method text DEFAULT 'auto'::text, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_ls_factor$function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_ls_factor(coverage regclass, routing text DEFAULT 'mfd-md'::text, m double precision DEFAULT 0.4, n double precision DEFAULT 1.3, a0 double precision DEFAULT 22.1, b0 double precision DEFAULT 0.0896, fill boolean DEFAULT false, band integer DEFAULT 1, method text DEFAULT 'auto'::text, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_ls_factor$function$;
COMMENT ON FUNCTION @extschema@.tg_ls_factor(regclass,text,double precision,double precision,double precision,double precision,boolean,integer,text,double precision,double precision,double precision,text,name,name) IS 'Coverage form of tg_ls_factor: a whole tiled raster table as one grid, one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_rusle(dem raster, r "any", k "any", c "any" DEFAULT (1)::double precision, p "any" DEFAULT (1)::double precision, routing text DEFAULT 'mfd-md'::text, m double precision DEFAULT 0.4, n double precision DEFAULT 1.3, a0 double precision DEFAULT 22.1, b0 double precision DEFAULT 0.0896, fill boolean DEFAULT false, band integer DEFAULT 1, method text DEFAULT 'auto'::text, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_rusle$function$;
CREATE OR REPLACE FUNCTION @extschema@.tg_rusle(coverage regclass, r "any", k "any", c "any" DEFAULT (1)::double precision, p "any" DEFAULT (1)::double precision, routing text DEFAULT 'mfd-md'::text, m double precision DEFAULT 0.4, n double precision DEFAULT 1.3, a0 double precision DEFAULT 22.1, b0 double precision DEFAULT 0.0896, fill boolean DEFAULT false, band integer DEFAULT 1, method text DEFAULT 'auto'::text, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_rusle$function$;
COMMENT ON FUNCTION @extschema@.tg_rusle(regclass,"any","any","any","any",text,double precision,double precision,double precision,double precision,boolean,integer,text,double precision,double precision,double precision,text,name,name) IS 'Coverage form of tg_rusle: each factor a number or a table of tiles on the same grid; one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_travel_time(dem raster, outlet geometry DEFAULT NULL::geometry, n "any" DEFAULT (1)::double precision, k "any" DEFAULT (1)::double precision, b double precision DEFAULT 0.5, min_slope double precision DEFAULT 0.001, fill boolean DEFAULT true, band integer DEFAULT 1, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text, snap double precision DEFAULT 0)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_travel_time$function$;
COMMENT ON FUNCTION @extschema@.tg_travel_time(raster,geometry,"any","any",double precision,double precision,boolean,integer,double precision,text,double precision) IS 'Travel time along D8 paths (Zhao et al. 2010): each step n L / (K max(S, min_slope)^b), summed to the outlet point (cells outside its watershed are nodata) or, without one, to each path''s end (32BF; seconds when L is in metres and K in m/s)';
CREATE OR REPLACE FUNCTION @extschema@.tg_travel_time(coverage regclass, outlet geometry DEFAULT NULL::geometry, n "any" DEFAULT (1)::double precision, k "any" DEFAULT (1)::double precision, b double precision DEFAULT 0.5, min_slope double precision DEFAULT 0.001, fill boolean DEFAULT true, band integer DEFAULT 1, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text, snap double precision DEFAULT 0, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_travel_time$function$;
COMMENT ON FUNCTION @extschema@.tg_travel_time(regclass,geometry,"any","any",double precision,double precision,boolean,integer,double precision,text,double precision,name,name) IS 'Coverage form of tg_travel_time: a whole tiled raster table as one grid (paths cross tiles), one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_isochrone_bands(dem raster, outlet geometry, "interval" double precision, n "any" DEFAULT (1)::double precision, k "any" DEFAULT (1)::double precision, b double precision DEFAULT 0.5, min_slope double precision DEFAULT 0.001, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, snap double precision DEFAULT 0)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_isochrone_bands$function$;
COMMENT ON FUNCTION @extschema@.tg_isochrone_bands(raster,geometry,double precision,"any","any",double precision,double precision,boolean,integer,text,double precision) IS 'Isochrone band of each cell of the outlet''s watershed (32BUI): band k holds travel times in [(k-1) interval, k interval); 0 (nodata) outside';
CREATE OR REPLACE FUNCTION @extschema@.tg_isochrone_bands(coverage regclass, outlet geometry, "interval" double precision, n "any" DEFAULT (1)::double precision, k "any" DEFAULT (1)::double precision, b double precision DEFAULT 0.5, min_slope double precision DEFAULT 0.001, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, snap double precision DEFAULT 0, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_isochrone_bands$function$;
COMMENT ON FUNCTION @extschema@.tg_isochrone_bands(regclass,geometry,double precision,"any","any",double precision,double precision,boolean,integer,text,double precision,name,name) IS 'Coverage form of tg_isochrone_bands, one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_isochrones(dem raster, outlet geometry, "interval" double precision, n "any" DEFAULT (1)::double precision, k "any" DEFAULT (1)::double precision, b double precision DEFAULT 0.5, min_slope double precision DEFAULT 0.001, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, snap double precision DEFAULT 0)
 RETURNS TABLE(time_from double precision, time_to double precision, geom geometry)
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED ROWS 20
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_isochrones$function$;
COMMENT ON FUNCTION @extschema@.tg_isochrones(raster,geometry,double precision,"any","any",double precision,double precision,boolean,integer,text,double precision) IS 'Isochrone polygons of the outlet''s watershed: one multipolygon per travel-time band [time_from, time_to); together they tile the watershed';
CREATE OR REPLACE FUNCTION @extschema@.tg_isochrones(coverage regclass, outlet geometry, "interval" double precision, n "any" DEFAULT (1)::double precision, k "any" DEFAULT (1)::double precision, b double precision DEFAULT 0.5, min_slope double precision DEFAULT 0.001, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, snap double precision DEFAULT 0, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(time_from double precision, time_to double precision, geom geometry)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED ROWS 20
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_isochrones$function$;
COMMENT ON FUNCTION @extschema@.tg_isochrones(regclass,geometry,double precision,"any","any",double precision,double precision,boolean,integer,text,double precision,name,name) IS 'Coverage form of tg_isochrones: polygons merged across tiles';
CREATE OR REPLACE FUNCTION @extschema@.tg_watershed(dem raster, outlet geometry, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, snap double precision DEFAULT 0)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_watershed$function$;
COMMENT ON FUNCTION @extschema@.tg_watershed(raster,geometry,boolean,integer,text,double precision) IS 'Catchment of a pour point: 1 for every cell whose D8 path passes through the outlet''s cell, nodata (0) elsewhere (8BUI)';
CREATE OR REPLACE FUNCTION @extschema@.tg_watershed(coverage regclass, outlet geometry, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, snap double precision DEFAULT 0, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_watershed$function$;
COMMENT ON FUNCTION @extschema@.tg_watershed(regclass,geometry,boolean,integer,text,double precision,name,name) IS 'Coverage form of tg_watershed, one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_watershed_polygon(dem raster, outlet geometry, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, snap double precision DEFAULT 0)
 RETURNS geometry
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_watershed_polygon$function$;
COMMENT ON FUNCTION @extschema@.tg_watershed_polygon(raster,geometry,boolean,integer,text,double precision) IS 'Catchment of a pour point as a multipolygon (the cells of tg_watershed)';
CREATE OR REPLACE FUNCTION @extschema@.tg_watershed_polygon(coverage regclass, outlet geometry, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, snap double precision DEFAULT 0, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS geometry
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_watershed_polygon$function$;
COMMENT ON FUNCTION @extschema@.tg_watershed_polygon(regclass,geometry,boolean,integer,text,double precision,name,name) IS 'Coverage form of tg_watershed_polygon: the catchment across all tiles as one multipolygon';
CREATE OR REPLACE FUNCTION @extschema@.tg_snap_pour_point(dem raster, point geometry, distance double precision, band integer DEFAULT 1, fill boolean DEFAULT true, backend text DEFAULT NULL::text)
 RETURNS geometry
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_snap_pour_point$function$;
COMMENT ON FUNCTION @extschema@.tg_snap_pour_point(raster,geometry,double precision,integer,boolean,text) IS 'Pour point snapping: the centre of the cell of highest D8 accumulation (ties: nearest, then first in row-major order) among the cell under the point and those whose centre lies within distance of it (map units; metres on geographic rasters)';
CREATE OR REPLACE FUNCTION @extschema@.tg_snap_pour_point(coverage regclass, point geometry, distance double precision, band integer DEFAULT 1, fill boolean DEFAULT true, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS geometry
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_snap_pour_point$function$;
COMMENT ON FUNCTION @extschema@.tg_snap_pour_point(regclass,geometry,double precision,integer,boolean,text,name,name) IS 'Coverage form of tg_snap_pour_point: the whole tiled raster table as one grid';
CREATE OR REPLACE FUNCTION @extschema@.tg_stream_order(dem raster, threshold double precision DEFAULT 1000, units text DEFAULT 'cells'::text, ordering text DEFAULT 'strahler'::text, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_stream_order$function$;
COMMENT ON FUNCTION @extschema@.tg_stream_order(raster,double precision,text,text,boolean,integer,text) IS 'Stream order (32BUI) of the stream cells, those whose D8 accumulation is at least threshold (units: cells, or area in map units squared, square metres on geographic rasters); ordering strahler (Strahler 1957) or shreve (Shreve 1966); 0 (nodata) off the streams';
CREATE OR REPLACE FUNCTION @extschema@.tg_stream_order(coverage regclass, threshold double precision DEFAULT 1000, units text DEFAULT 'cells'::text, ordering text DEFAULT 'strahler'::text, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_stream_order$function$;
COMMENT ON FUNCTION @extschema@.tg_stream_order(regclass,double precision,text,text,boolean,integer,text,name,name) IS 'Coverage form of tg_stream_order: a whole tiled raster table as one grid, one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_stream_links(dem raster, threshold double precision DEFAULT 1000, units text DEFAULT 'cells'::text, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text)
 RETURNS TABLE(link_id bigint, downstream_id bigint, strahler integer, shreve bigint, length double precision, upstream_cells double precision, upstream_area double precision, geom geometry)
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_stream_links$function$;
COMMENT ON FUNCTION @extschema@.tg_stream_links(raster,double precision,text,boolean,integer,text) IS 'The stream network as one row per link (TauDEM StreamNet): from a source or confluence to the next confluence (its last vertex) or the end of the stream; the link it flows into (NULL at an outlet), Strahler and Shreve order, length along the cells (map units; metres on geographic rasters), upstream cells and area at its last cell, LineString through the cell centres';
CREATE OR REPLACE FUNCTION @extschema@.tg_stream_links(coverage regclass, threshold double precision DEFAULT 1000, units text DEFAULT 'cells'::text, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(link_id bigint, downstream_id bigint, strahler integer, shreve bigint, length double precision, upstream_cells double precision, upstream_area double precision, geom geometry)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_stream_links$function$;
COMMENT ON FUNCTION @extschema@.tg_stream_links(regclass,double precision,text,boolean,integer,text,name,name) IS 'Coverage form of tg_stream_links: the whole tiled raster table as one grid, links continuous across tiles';
CREATE OR REPLACE FUNCTION @extschema@.tg_basins(dem raster, pour_points geometry[] DEFAULT NULL::geometry[], snap double precision DEFAULT 0, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_basins$function$;
COMMENT ON FUNCTION @extschema@.tg_basins(raster,geometry[],double precision,boolean,integer,text) IS 'D8 basins (32BUI labels, 0 = nodata): of pour_points, each cell labelled by the nearest point downstream (its place in the array; nested gauges), each point snapped within snap as by tg_snap_pour_point; without points, of every path end (outlet, pit, raster edge), numbered in row-major order';
CREATE OR REPLACE FUNCTION @extschema@.tg_basins(coverage regclass, pour_points geometry[] DEFAULT NULL::geometry[], snap double precision DEFAULT 0, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_basins$function$;
COMMENT ON FUNCTION @extschema@.tg_basins(regclass,geometry[],double precision,boolean,integer,text,name,name) IS 'Coverage form of tg_basins: a whole tiled raster table as one grid, one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_subbasins(dem raster, threshold double precision DEFAULT 1000, units text DEFAULT 'cells'::text, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_subbasins$function$;
COMMENT ON FUNCTION @extschema@.tg_subbasins(raster,double precision,text,boolean,integer,text) IS 'Sub-basins per stream link (32BUI, 0 = nodata): each cell labelled by the link_id of tg_stream_links whose cells its D8 path meets first';
CREATE OR REPLACE FUNCTION @extschema@.tg_subbasins(coverage regclass, threshold double precision DEFAULT 1000, units text DEFAULT 'cells'::text, fill boolean DEFAULT true, band integer DEFAULT 1, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_subbasins$function$;
COMMENT ON FUNCTION @extschema@.tg_subbasins(regclass,double precision,text,boolean,integer,text,name,name) IS 'Coverage form of tg_subbasins: a whole tiled raster table as one grid, one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_flow_length(dem raster, direction text DEFAULT 'downstream'::text, fill boolean DEFAULT true, band integer DEFAULT 1, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_flow_length$function$;
COMMENT ON FUNCTION @extschema@.tg_flow_length(raster,text,boolean,integer,double precision,text) IS 'D8 flow length (32BF, map units; metres on geographic rasters): downstream, along the path to its end (outlet, pit or raster edge); upstream, the longest path from the divide to the cell';
CREATE OR REPLACE FUNCTION @extschema@.tg_flow_length(coverage regclass, direction text DEFAULT 'downstream'::text, fill boolean DEFAULT true, band integer DEFAULT 1, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_flow_length$function$;
COMMENT ON FUNCTION @extschema@.tg_flow_length(regclass,text,boolean,integer,double precision,text,name,name) IS 'Coverage form of tg_flow_length: a whole tiled raster table as one grid, one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_hand(dem raster, threshold double precision DEFAULT 1000, units text DEFAULT 'cells'::text, fill boolean DEFAULT true, band integer DEFAULT 1, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_hand$function$;
COMMENT ON FUNCTION @extschema@.tg_hand(raster,double precision,text,boolean,integer,double precision,text) IS 'Height above the nearest drainage (32BF, Renno et al. 2008): a cell''s height above the first stream cell (D8 accumulation at least threshold) on its D8 path, on the routing surface; nodata where the path meets no stream';
CREATE OR REPLACE FUNCTION @extschema@.tg_hand(coverage regclass, threshold double precision DEFAULT 1000, units text DEFAULT 'cells'::text, fill boolean DEFAULT true, band integer DEFAULT 1, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_hand$function$;
COMMENT ON FUNCTION @extschema@.tg_hand(regclass,double precision,text,boolean,integer,double precision,text,name,name) IS 'Coverage form of tg_hand: a whole tiled raster table as one grid, one row per input tile';
CREATE OR REPLACE FUNCTION @extschema@.tg_wetness_index(dem raster, routing text DEFAULT 'mfd-md'::text, min_slope double precision DEFAULT 0.001, fill boolean DEFAULT true, band integer DEFAULT 1, method text DEFAULT 'auto'::text, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_wetness_index$function$;
COMMENT ON FUNCTION @extschema@.tg_wetness_index(raster,text,double precision,boolean,integer,text,double precision,double precision,double precision,text) IS 'Topographic wetness index ln(a / tan b) (32BF, Beven and Kirkby 1979): a the specific catchment area of the routing, b the Horn slope of the routing surface, tan b at least min_slope';
CREATE OR REPLACE FUNCTION @extschema@.tg_wetness_index(coverage regclass, routing text DEFAULT 'mfd-md'::text, min_slope double precision DEFAULT 0.001, fill boolean DEFAULT true, band integer DEFAULT 1, method text DEFAULT 'auto'::text, exponent double precision DEFAULT 1.1, threshold double precision DEFAULT 1000, nodata double precision DEFAULT '-9999'::integer, backend text DEFAULT NULL::text, rast_column name DEFAULT 'rast'::name, id_column name DEFAULT 'rid'::name)
 RETURNS TABLE(rid bigint, rast raster)
 LANGUAGE c
 STABLE PARALLEL RESTRICTED
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_wetness_index$function$;
COMMENT ON FUNCTION @extschema@.tg_wetness_index(regclass,text,double precision,boolean,integer,text,double precision,double precision,double precision,text,name,name) IS 'Coverage form of tg_wetness_index: a whole tiled raster table as one grid, one row per input tile';
CREATE OR REPLACE FUNCTION terra_gpu._table_name(name text)
 RETURNS name[]
 LANGUAGE plpgsql
 IMMUTABLE STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	parts text[];
BEGIN
	BEGIN
		parts := parse_ident(name);
	EXCEPTION WHEN invalid_parameter_value OR syntax_error THEN
		RAISE EXCEPTION 'invalid table name "%"', name USING ERRCODE = '42602';
	END;
	IF cardinality(parts) > 2 THEN
		RAISE EXCEPTION 'invalid table name "%"', name USING ERRCODE = '42602',
			HINT = 'Give table or schema.table.';
	END IF;
	RETURN ARRAY[CASE WHEN cardinality(parts) = 2 THEN parts[1] END, parts[cardinality(parts)]]::name[];
END
$function$;
COMMENT ON FUNCTION terra_gpu._table_name(text) IS 'Internal (tg_create_result, tg_create_partitioned_result): a table name as {schema, table}, the schema NULL where not given; 42602 if it is not one';
CREATE OR REPLACE FUNCTION terra_gpu._creation_schema(search_path text)
 RETURNS name
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	pinned text := pg_catalog.current_setting('search_path');
	sch name;
BEGIN
	PERFORM pg_catalog.set_config('search_path', coalesce(search_path, ''), true);
	sch := pg_catalog.current_schema();
	PERFORM pg_catalog.set_config('search_path', pinned, true);
	RETURN sch;
END
$function$;
COMMENT ON FUNCTION terra_gpu._creation_schema(text) IS 'Internal (tg_create_result, tg_create_partitioned_result): the schema an unqualified table name is created in on the given search_path';
CREATE OR REPLACE FUNCTION terra_gpu._add_raster_constraints(rel regclass, col name, headers raster[] DEFAULT NULL::raster[], bands text[] DEFAULT NULL::text[])
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	v record;
	c text := pg_catalog.quote_ident(col);
	adds text[] := '{}';
	first raster;				-- where the reference values are taken from
BEGIN
	IF headers IS NULL THEN
		EXECUTE pg_catalog.format('SELECT pg_catalog.array_agg(terra_gpu._raster_header(%1$s)), '
								  'pg_catalog.array_agg(terra_gpu._raster_bands(%1$s)) FROM %2$s WHERE %1$s IS NOT NULL',
								  c, rel) INTO headers, bands;
	END IF;
	WITH tiles AS MATERIALIZED (
		SELECT ST_MetaData(t.h) AS m, ST_Envelope(t.h) AS envelope, pg_catalog.split_part(t.b, '|', 1) AS types,
			   pg_catalog.split_part(t.b, '|', 2) AS nodata, pg_catalog.split_part(t.b, '|', 3) AS storage,
			   pg_catalog.cardinality(pg_catalog.string_to_array(pg_catalog.split_part(t.b, '|', 1), ',')) AS numbands
		FROM unnest(headers, bands) t(h, b) WHERE t.h IS NOT NULL)
	SELECT count(DISTINCT (m).srid) = 1 AS one_srid, min((m).srid) AS srid,
		   count(DISTINCT (m).scalex) = 1 AS one_scalex, min((m).scalex) AS scalex,
		   count(DISTINCT (m).scaley) = 1 AS one_scaley, min((m).scaley) AS scaley,
		   count(DISTINCT tiles.numbands) = 1 AS one_numbands, min(tiles.numbands) AS numbands,
		   count(DISTINCT types) = 1 AS one_types, count(DISTINCT nodata) = 1 AS one_nodata,
		   count(DISTINCT storage) = 1 AS one_storage,
		   ST_SameAlignment(ST_MakeEmptyRaster(1, 1, (m).upperleftx, (m).upperlefty, (m).scalex, (m).scaley,
											   (m).skewx, (m).skewy, (m).srid)) AS aligned,
		   ST_AsHEXEWKB(ST_SetSRID(ST_Extent(envelope)::geometry, min((m).srid))) AS extent,
		   (SELECT pg_catalog.array_to_string(pg_catalog.array_agg(w ORDER BY n DESC, w), ',')
			FROM (SELECT (m).width AS w, count(*) AS n FROM tiles GROUP BY 1) g) AS widths,
		   (SELECT pg_catalog.array_to_string(pg_catalog.array_agg(h ORDER BY n DESC, h), ',')
			FROM (SELECT (m).height AS h, count(*) AS n FROM tiles GROUP BY 1) g) AS heights
	INTO v FROM tiles;
	IF v.srid IS NULL THEN
		RETURN;					-- no raster in the column
	END IF;
	EXECUTE pg_catalog.format('SELECT %1$s FROM %2$s WHERE %1$s IS NOT NULL LIMIT 1', c, rel) INTO first;
	IF v.one_srid THEN
		adds := adds || pg_catalog.format('ADD CONSTRAINT %I CHECK (st_srid(%s) = %s)', 'enforce_srid_' || col, c, v.srid);
	END IF;
	IF v.one_scalex THEN
		adds := adds || pg_catalog.format('ADD CONSTRAINT %I CHECK (round(st_scalex(%s)::numeric, 10) = round(%s::numeric, 10))',
										  'enforce_scalex_' || col, c, v.scalex);
	END IF;
	IF v.one_scaley THEN
		adds := adds || pg_catalog.format('ADD CONSTRAINT %I CHECK (round(st_scaley(%s)::numeric, 10) = round(%s::numeric, 10))',
										  'enforce_scaley_' || col, c, v.scaley);
	END IF;
	-- ANY (ARRAY[...]) even for one size: raster_columns reads a list's first
	-- value up to its bracket, so these may be NOT VALID like those below
	adds := adds || pg_catalog.format('ADD CONSTRAINT %I CHECK (st_width(%s) = ANY (ARRAY[%s])) NOT VALID',
									  'enforce_width_' || col, c, v.widths)
		|| pg_catalog.format('ADD CONSTRAINT %I CHECK (st_height(%s) = ANY (ARRAY[%s])) NOT VALID',
							 'enforce_height_' || col, c, v.heights);
	IF v.aligned THEN
		adds := adds || pg_catalog.format(
			'ADD CONSTRAINT %I CHECK (st_samealignment(%s, %L::raster)) NOT VALID', 'enforce_same_alignment_' || col, c,
			(SELECT ST_MakeEmptyRaster(1, 1, m.upperleftx, m.upperlefty, m.scalex, m.scaley, m.skewx, m.skewy, m.srid)::text
			 FROM ST_MetaData(first) m));
	END IF;
	IF v.one_numbands THEN
		adds := adds || pg_catalog.format('ADD CONSTRAINT %I CHECK (st_numbands(%s) = %s)', 'enforce_num_bands_' || col, c, v.numbands);
	END IF;
	IF v.one_types THEN
		adds := adds || pg_catalog.format('ADD CONSTRAINT %I CHECK (_raster_constraint_pixel_types(%s) = %L::text[]) NOT VALID',
										  'enforce_pixel_types_' || col, c, _raster_constraint_pixel_types(first));
	END IF;
	IF v.one_nodata THEN
		adds := adds || pg_catalog.format('ADD CONSTRAINT %I CHECK (_raster_constraint_nodata_values(%s) = %L::numeric[]) NOT VALID',
										  'enforce_nodata_values_' || col, c, _raster_constraint_nodata_values(first));
	END IF;
	IF v.one_storage THEN
		adds := adds || pg_catalog.format('ADD CONSTRAINT %I CHECK (_raster_constraint_out_db(%s) = %L::boolean[]) NOT VALID',
										  'enforce_out_db_' || col, c, _raster_constraint_out_db(first));
	END IF;
	adds := adds || pg_catalog.format('ADD CONSTRAINT %I CHECK (st_envelope(%s) @ %L::geometry) NOT VALID',
									  'enforce_max_extent_' || col, c, v.extent);
	EXECUTE pg_catalog.format('ALTER TABLE %s %s', rel, pg_catalog.array_to_string(adds, ', '));
END
$function$;
COMMENT ON FUNCTION terra_gpu._add_raster_constraints(regclass,name,raster[],text[]) IS 'Internal (tg_create_result, tg_refresh): the raster constraints AddRasterConstraints adds by default, from the tiles'' headers and band headers (terra_gpu._raster_header, _raster_bands) as written, or else from one pass over the column';
CREATE OR REPLACE FUNCTION terra_gpu._raster_header(raster)
 RETURNS raster
 LANGUAGE c
 IMMUTABLE PARALLEL SAFE STRICT
AS 'MODULE_PATHNAME', $function$tgpg_raster_header$function$;
COMMENT ON FUNCTION terra_gpu._raster_header(raster) IS 'Internal (tg_create_result): the tile with its bands left out (size, georeference, SRID), read from its first bytes only';
CREATE OR REPLACE FUNCTION terra_gpu._raster_bands(raster)
 RETURNS text
 LANGUAGE c
 IMMUTABLE PARALLEL SAFE STRICT
AS 'MODULE_PATHNAME', $function$tgpg_raster_bands$function$;
COMMENT ON FUNCTION terra_gpu._raster_bands(raster) IS 'Internal (tg_create_result): the bands'' pixel type codes, nodata values and storage, '','' between bands, ''|'' between the three (a one-band tile read as far as its band header): equal parts, bands alike in that';
CREATE OR REPLACE FUNCTION @extschema@.tg_create_result(name text, query text, replace boolean DEFAULT false, compression text DEFAULT 'lz4'::text, search_path text DEFAULT current_setting('search_path'::text))
 RETURNS regclass
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	-- this function's own (pinned) path, and the caller's (the default is
	-- evaluated where the call is written): only the caller's query and the
	-- schema of an unqualified name are resolved on the caller's path
	pinned text := pg_catalog.current_setting('search_path');
	statement text;
	parts name[];
	qname text;
	sch name;
	tab name;
	rel regclass;
	col record;
	has_rid boolean;
	srid integer;
	gtype text;
	ntypes integer;
	tilecomp text;
	rcols name[] := '{}';		-- the raster columns, in order
	header_exprs text;			-- what the insert returns of them
	digest_ids bigint[];		-- the rows' tile ids and digests, as written
	digests bytea[];
	headers raster[];			-- the tiles' headers and band headers, as written:
	bands text[];				-- a row a tile, a column a raster column
BEGIN
	IF name IS NULL OR query IS NULL THEN
		RAISE EXCEPTION 'name and query must not be NULL' USING ERRCODE = '22004';
	END IF;
	compression := lower(coalesce(compression, 'lz4'));
	query := regexp_replace(query, '[\s;]+$', '');
	IF compression NOT IN ('lz4', 'pglz', 'none') THEN
		RAISE EXCEPTION 'unknown compression "%"', compression USING ERRCODE = '22023',
			HINT = 'Use lz4, pglz or none (uncompressed, stored out of line).';
	END IF;
	parts := terra_gpu._table_name(name);
	sch := coalesce(parts[1], terra_gpu._creation_schema(search_path));
	tab := parts[2];
	IF sch IS NULL THEN
		RAISE EXCEPTION 'no schema to create "%" in', name USING ERRCODE = '3F000';
	END IF;
	qname := format('%I.%I', sch, tab);
	IF to_regclass(qname) IS NOT NULL THEN
		IF NOT replace THEN
			RAISE EXCEPTION 'relation % already exists', qname USING ERRCODE = '42P07',
				HINT = 'Pass replace => true to overwrite it.';
		END IF;
		EXECUTE format('DROP TABLE %s', qname);
	END IF;

	statement := format('CREATE TABLE %s AS %s WITH NO DATA', qname, query);
	PERFORM set_config('search_path', search_path, true);
	EXECUTE statement;
	PERFORM set_config('search_path', pinned, true);
	rel := qname::regclass;
	-- GDAL's PostGISRaster driver reads no tile through a bigint key: tile ids
	-- are integers (raster2pgsql's serial)
	IF EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = rel AND a.attname = 'rid'
			   AND NOT a.attisdropped AND a.atttypid = 'int8'::regtype) THEN
		EXECUTE format('ALTER TABLE %s ALTER COLUMN rid TYPE integer', rel);
	END IF;
	-- the raster columns get their spatial indexes before the rows, which
	-- index each tile as it is written rather than reading it back
	FOR col IN SELECT a.attname FROM pg_attribute a
			   WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped
				 AND a.atttypid = 'raster'::regtype ORDER BY a.attnum LOOP
		rcols := rcols || col.attname;
		EXECUTE format('CREATE INDEX ON %s USING gist (ST_ConvexHull(%I))', rel, col.attname);
		IF compression = 'none' THEN
			EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STORAGE EXTERNAL', rel, col.attname);
		ELSE
			BEGIN
				EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET COMPRESSION %s', rel, col.attname, compression);
			EXCEPTION WHEN feature_not_supported THEN
				RAISE NOTICE 'this server has no % compression; % keeps the default', compression, col.attname;
			END;
		END IF;
	END LOOP;
	-- the coverage forms hand back tiles already lz4-compressed on their
	-- threads (terra_gpu.tile_compression), which a table stores as they
	-- are: for pglz or none they must come uncompressed
	PERFORM @extschema@.tg_version();	-- loads the library, which defines the setting
	tilecomp := current_setting('terra_gpu.tile_compression');
	IF compression <> 'lz4' THEN
		PERFORM set_config('terra_gpu.tile_compression', 'none', true);
	END IF;
	PERFORM count(*) FROM terra_gpu._coverage_reads(true);	-- what the query reads, for its recipe
	-- the tile ids of raster results (the key, below): rows with them may
	-- make a product that tg_refresh keeps fresh.  The digest of each row
	-- (which a refresh compares with the new row's) and each tile's headers
	-- (which the raster constraints are computed from) are taken as the
	-- rows are written, rather than read back after.
	has_rid := EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = rel AND a.attname = 'rid'
					   AND NOT a.attisdropped AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype));
	-- one row of headers a tile, stacked (array_agg cannot stack empty rows)
	SELECT format(', ARRAY[%s] AS headers, ARRAY[%s] AS bands',
				  string_agg(format('terra_gpu._raster_header(i.%I)', r), ', '),
				  string_agg(format('terra_gpu._raster_bands(i.%I)', r), ', '))
	INTO header_exprs FROM unnest(rcols) r HAVING count(*) > 0;
	PERFORM set_config('search_path', search_path, true);
	EXECUTE format('WITH w AS (INSERT INTO %s AS i %s RETURNING %s AS rid, %s AS digest%s) '
				   'SELECT array_agg(w.rid), array_agg(w.digest), %s FROM w',
				   rel, query,
				   CASE WHEN has_rid THEN 'i.rid::bigint' ELSE 'NULL::bigint' END,
				   CASE WHEN has_rid THEN (terra_gpu._product_columns(rel, 'i')).digest ELSE 'NULL::bytea' END,
				   coalesce(header_exprs, ''),
				   CASE WHEN header_exprs IS NULL THEN 'NULL::raster[], NULL::text[]'
						ELSE 'array_agg(w.headers), array_agg(w.bands)' END)
	INTO digest_ids, digests, headers, bands;
	PERFORM set_config('search_path', pinned, true);
	PERFORM set_config('terra_gpu.tile_compression', tilecomp, true);
	-- a raster column no row fills (the products tg_terrain was not asked
	-- for) is left out: GIS clients would list it as an empty layer (and the
	-- digests taken with it are not those of the rows left); the others get
	-- their raster constraints
	FOR k IN 1 .. coalesce(cardinality(rcols), 0) LOOP
		IF headers IS NOT NULL AND NOT EXISTS (SELECT FROM unnest(headers[:][k:k]) h WHERE h IS NOT NULL) THEN
			EXECUTE format('ALTER TABLE %s DROP COLUMN %I', rel, rcols[k]);
			digests := NULL;
		ELSE
			PERFORM terra_gpu._add_raster_constraints(rel, rcols[k], ARRAY(SELECT unnest(headers[:][k:k])),
													  ARRAY(SELECT unnest(bands[:][k:k])));
		END IF;
	END LOOP;

	-- key: the tile id of raster results, else a generated one
	IF has_rid THEN
		EXECUTE format('ALTER TABLE %s ADD PRIMARY KEY (rid)', rel);
	ELSE
		EXECUTE format('ALTER TABLE %s ADD COLUMN id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY', rel);
	END IF;

	-- typed geometry columns: one geometry type and SRID, so that
	-- geometry_columns and GDAL see them (multi types kept multi)
	FOR col IN SELECT a.attname FROM pg_attribute a
			   WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped
				 AND a.atttypid = 'geometry'::regtype ORDER BY a.attnum LOOP
		EXECUTE format('SELECT min(ST_SRID(%1$I)), count(DISTINCT ST_SRID(%1$I)), '
					   'CASE WHEN count(DISTINCT GeometryType(%1$I)) = 1 THEN min(GeometryType(%1$I)) END '
					   'FROM %2$s WHERE %1$I IS NOT NULL', col.attname, rel)
		INTO srid, ntypes, gtype;
		IF ntypes = 1 AND gtype IS NOT NULL THEN
			EXECUTE format('ALTER TABLE %1$s ALTER COLUMN %2$I TYPE geometry(%3$s, %4$s) USING %2$I',
						   rel, col.attname, gtype, srid);
		END IF;
		EXECUTE format('CREATE INDEX ON %s USING gist (%I)', rel, col.attname);
	END LOOP;
	IF has_rid THEN
		PERFORM terra_gpu._record_product(rel, query, search_path, compression, digest_ids, digests);
	END IF;
	EXECUTE format('ANALYZE %s', rel);
	RETURN rel;
END
$function$;
COMMENT ON FUNCTION @extschema@.tg_create_result(text,text,boolean,text,text) IS 'Writes a query''s result (e.g. SELECT * FROM tg_...(coverage => ...)) to a new table ready for GIS clients: primary key, GiST index, raster constraints (raster_columns) or a typed geometry column (geometry_columns), lz4/pglz/none storage of rasters; 42P07 if it exists unless replace; the query and an unqualified name are resolved on search_path (the caller''s)';
CREATE OR REPLACE FUNCTION terra_gpu._product_owned(product regclass)
 RETURNS boolean
 LANGUAGE sql
 STABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
RETURN COALESCE((SELECT pg_has_role(c.relowner, 'MEMBER'::text) AS pg_has_role FROM pg_class c WHERE (c.oid = (_product_owned.product)::oid)), false);
COMMENT ON FUNCTION terra_gpu._product_owned(regclass) IS 'Internal (row security of terra_gpu.product*): is the caller a member of the role that owns the product table';
CREATE OR REPLACE FUNCTION terra_gpu._product_readable(product regclass)
 RETURNS boolean
 LANGUAGE sql
 STABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
RETURN COALESCE((SELECT has_table_privilege(c.oid, 'SELECT'::text) AS has_table_privilege FROM pg_class c WHERE (c.oid = (_product_readable.product)::oid)), false);
COMMENT ON FUNCTION terra_gpu._product_readable(regclass) IS 'Internal (row security of terra_gpu.product*): may the caller read the product table';
CREATE OR REPLACE FUNCTION terra_gpu._row_digest(VARIADIC "any")
 RETURNS bytea
 LANGUAGE c
 STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', $function$tgpg_row_digest$function$;
COMMENT ON FUNCTION terra_gpu._row_digest("any") IS 'Internal (tg_create_result, tg_refresh): SHA-256 of the values as they are held (a compressed one by its compressed bytes); equal digests, equal values';
CREATE OR REPLACE FUNCTION terra_gpu._product_columns(product regclass, alias text, OUT cols text, OUT digest text)
 RETURNS record
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
BEGIN ATOMIC
 SELECT string_agg(format('%I'::text, a.attname), ', '::text ORDER BY a.attnum) AS string_agg,
     format('terra_gpu._row_digest(%s)'::text, string_agg(format('%I.%I'::text, _product_columns.alias, a.attname), ', '::text ORDER BY a.attnum)) AS format
    FROM pg_attribute a
   WHERE ((a.attrelid = (_product_columns.product)::oid) AND (a.attnum > 0) AND (NOT a.attisdropped) AND (a.attname <> 'rid'::name));
END;
COMMENT ON FUNCTION terra_gpu._product_columns(regclass,text) IS 'Internal (tg_create_result, tg_refresh): a product''s columns but rid, and the digest expression of a row of them';
CREATE OR REPLACE FUNCTION terra_gpu._product_digests(p terra_gpu.product)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
BEGIN
	EXECUTE format('UPDATE terra_gpu.product_tile t SET digest = %s FROM %s x WHERE t.product = $1 AND t.tile_id = x.rid',
				   (terra_gpu._product_columns(p.product, 'x')).digest, p.product) USING p.product;
END $function$;
CREATE OR REPLACE FUNCTION terra_gpu._coverage_reads(reset boolean, OUT source regclass, OUT rast_column name, OUT id_column name, OUT function text, OUT halo integer, OUT reach bigint[])
 RETURNS SETOF record
 LANGUAGE c
 PARALLEL RESTRICTED STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_coverage_reads$function$;
COMMENT ON FUNCTION terra_gpu._coverage_reads(boolean) IS 'Internal (tg_create_result): the tables the coverage calls of this backend read since the last reset, with the call''s function, halo (NULL: global) and, where the result reads only some tiles, their ids (reach); reset forgets them';
CREATE OR REPLACE FUNCTION terra_gpu._product_tiles(p terra_gpu.product, tiles bigint[])
 RETURNS SETOF terra_gpu.product_tile
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT $1, s.%1$I::bigint, m.upperleftx, m.upperlefty, m.width, m.height, m.scalex, m.scaley, '
		'       m.skewx, m.skewy, m.srid, NULL::bytea '
		'FROM %2$s s, ST_MetaData(s.%3$I) m '
		'WHERE s.%3$I IS NOT NULL AND ($2 IS NULL OR s.%1$I = ANY ($2))',
		p.id_column, p.source, p.rast_column) USING p.product, tiles;
END $function$;
CREATE OR REPLACE FUNCTION terra_gpu._record_product(rel regclass, query text, search_path text, compression text, digest_ids bigint[], digests bytea[])
 RETURNS boolean
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	r record;
	p terra_gpu.product;
	captured boolean := true;
BEGIN
	SELECT count(*) AS n, min(c.source::oid)::regclass AS source, min(c.rast_column::text) AS rast_column,
		   min(c.id_column::text) AS id_column, min(c.function) AS function, min(c.halo) AS halo,
		   min(c.reach) AS reach
	INTO r FROM terra_gpu._coverage_reads(true) c;
	IF r.n <> 1 OR r.id_column IS NULL THEN
		RETURN false;
	END IF;
	-- a foreign table (or partition) has no triggers to record its changes
	captured := NOT EXISTS (
		WITH RECURSIVE d(oid) AS (SELECT r.source::oid UNION SELECT i.inhrelid FROM pg_inherits i JOIN d ON i.inhparent = d.oid)
		SELECT FROM d JOIN pg_class c ON c.oid = d.oid WHERE c.relkind NOT IN ('r', 'p'));
	IF captured THEN
		BEGIN
			PERFORM terra_gpu._bmmq_watch(r.source, true);
		EXCEPTION WHEN insufficient_privilege THEN
			captured := false;
		END;
	END IF;
	INSERT INTO terra_gpu.product (product, source, rast_column, id_column, function, halo, reach, query,
								   search_path, compression, source_name, captured)
	VALUES (rel, r.source, r.rast_column, r.id_column, r.function, r.halo, r.reach, query, search_path,
			compression, terra_gpu._name_on_path(r.source, search_path), captured)
	RETURNING * INTO p;
	INSERT INTO terra_gpu.product_tile SELECT * FROM terra_gpu._product_tiles(p, NULL);
	IF digests IS NULL THEN
		PERFORM terra_gpu._product_digests(p);
	ELSE
		UPDATE terra_gpu.product_tile t SET digest = d.digest
		FROM unnest(digest_ids, digests) d(tile_id, digest) WHERE t.product = p.product AND t.tile_id = d.tile_id;
	END IF;
	RETURN true;
END $function$;
COMMENT ON FUNCTION terra_gpu._record_product(regclass,text,text,text,bigint[],bytea[]) IS 'Internal (tg_create_result): record the recipe of a product keyed by tile ids (rid) when its query ran one coverage form over one table, with the digests of its rows as written (by tile id; NULL: read back from the product); false when it did not';
CREATE OR REPLACE FUNCTION terra_gpu._name_on_path(rel regclass, search_path text)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	pinned text := pg_catalog.current_setting('search_path');
	name text;
BEGIN
	PERFORM pg_catalog.set_config('search_path', coalesce(search_path, ''), true);
	name := rel::text;
	PERFORM pg_catalog.set_config('search_path', pinned, true);
	RETURN name;
END $function$;
COMMENT ON FUNCTION terra_gpu._name_on_path(regclass,text) IS 'Internal (tg_create_result, tg_refresh): a table''s name as it is written on a search_path';
CREATE OR REPLACE FUNCTION terra_gpu._gpu_chosen(cells bigint)
 RETURNS boolean
 LANGUAGE c
 PARALLEL RESTRICTED STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_gpu_chosen$function$;
COMMENT ON FUNCTION terra_gpu._gpu_chosen(bigint) IS 'Internal (tg_refresh): whether a call of so many cells runs on the GPU under this session''s settings (terra_gpu.backend, min_cells_for_gpu, device): the dispatcher''s own policy';
CREATE OR REPLACE FUNCTION terra_gpu._product_cells(product regclass)
 RETURNS TABLE(tile_id bigint, r0 bigint, c0 bigint, width integer, height integer)
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
BEGIN ATOMIC
 SELECT t.tile_id,
     (round(((t.upperleft_y - o.upperleft_y) / t.scale_y)))::bigint AS round,
     (round(((t.upperleft_x - o.upperleft_x) / t.scale_x)))::bigint AS round,
     t.width,
     t.height
    FROM terra_gpu.product_tile t,
     ( SELECT x.upperleft_x,
             x.upperleft_y
            FROM terra_gpu.product_tile x
           WHERE ((x.product)::oid = (_product_cells.product)::oid)
           ORDER BY x.tile_id
          LIMIT 1) o
   WHERE ((t.product)::oid = (_product_cells.product)::oid);
END;
COMMENT ON FUNCTION terra_gpu._product_cells(regclass) IS 'Internal (tg_refresh): each of a product''s tiles as its top row and left column of cells on the grid (from its first tile''s corner) and its size';
CREATE OR REPLACE FUNCTION terra_gpu._product_halo(rel regclass, changed bigint[], halo integer, OUT outputs bigint[], OUT reads bigint[])
 RETURNS record
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
BEGIN ATOMIC
 WITH g AS MATERIALIZED (
          SELECT _product_cells.tile_id,
             _product_cells.r0,
             _product_cells.c0,
             _product_cells.width,
             _product_cells.height
            FROM terra_gpu._product_cells(_product_halo.rel) _product_cells(tile_id, r0, c0, width, height)
         ), c AS MATERIALIZED (
          SELECT (g.c0 - _product_halo.halo) AS c0,
             ((g.c0 + g.width) + _product_halo.halo) AS c1,
             (g.r0 - _product_halo.halo) AS r0,
             ((g.r0 + g.height) + _product_halo.halo) AS r1
            FROM g
           WHERE (g.tile_id = ANY (_product_halo.changed))
         ), o AS MATERIALIZED (
          SELECT g.tile_id,
             g.r0,
             g.c0,
             g.width,
             g.height
            FROM g,
             ( SELECT min(c.c0) AS c0,
                     max(c.c1) AS c1,
                     min(c.r0) AS r0,
                     max(c.r1) AS r1
                    FROM c) b
           WHERE ((g.c0 < b.c1) AND (b.c0 < (g.c0 + g.width)) AND (g.r0 < b.r1) AND (b.r0 < (g.r0 + g.height)) AND (EXISTS ( SELECT
                    FROM c
                   WHERE ((g.c0 < c.c1) AND (c.c0 < (g.c0 + g.width)) AND (g.r0 < c.r1) AND (c.r0 < (g.r0 + g.height))))))
         ), r AS MATERIALIZED (
          SELECT (o.c0 - _product_halo.halo) AS c0,
             ((o.c0 + o.width) + _product_halo.halo) AS c1,
             (o.r0 - _product_halo.halo) AS r0,
             ((o.r0 + o.height) + _product_halo.halo) AS r1
            FROM o
         )
  SELECT ARRAY( SELECT o.tile_id
            FROM o
           ORDER BY o.tile_id) AS "array",
     ARRAY( SELECT g.tile_id
            FROM g,
             ( SELECT min(r.c0) AS c0,
                     max(r.c1) AS c1,
                     min(r.r0) AS r0,
                     max(r.r1) AS r1
                    FROM r) b
           WHERE ((g.c0 < b.c1) AND (b.c0 < (g.c0 + g.width)) AND (g.r0 < b.r1) AND (b.r0 < (g.r0 + g.height)) AND (EXISTS ( SELECT
                    FROM r
                   WHERE ((g.c0 < r.c1) AND (r.c0 < (g.c0 + g.width)) AND (g.r0 < r.r1) AND (r.r0 < (g.r0 + g.height))))))
           ORDER BY g.tile_id) AS "array";
END;
COMMENT ON FUNCTION terra_gpu._product_halo(regclass,bigint[],integer) IS 'Internal (tg_refresh): the ids of a product''s tiles within halo cells of the changed ones (those included), and of its tiles within halo cells of those';
CREATE OR REPLACE FUNCTION terra_gpu._product_write(p terra_gpu.product, reads bigint[], keep bigint[], retile boolean, OUT computed integer, OUT written integer)
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	cols text;
	qcols text;
	digest text;
	statement text;
BEGIN
	SELECT c.cols, c.digest INTO cols, digest FROM terra_gpu._product_columns(p.product, 'q') c;
	SELECT string_agg(format('q.%I', a.attname), ', ' ORDER BY a.attnum) INTO qcols
	FROM pg_attribute a WHERE a.attrelid = p.product AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> 'rid';
	-- a row is rewritten where its digest differs from the catalog's: the
	-- stored rows are not read.  The rows kept are named to the product's
	-- key and the catalog's, so that each is found by its index whatever the
	-- statistics of a product just written say.
	statement := format(
		'WITH q AS MATERIALIZED (SELECT q.*, %5$s AS tg_refresh_digest FROM (%1$s) q WHERE $1 IS NULL OR q.rid = ANY ($1)), '
		'c AS MATERIALIZED (SELECT q.* FROM q WHERE q.tg_refresh_digest IS DISTINCT FROM '
		'      (SELECT t.digest FROM terra_gpu.product_tile t WHERE t.product = $2 AND t.tile_id = q.rid)), '
		'u AS (UPDATE %2$s p SET (%3$s) = ROW(%4$s) FROM c q '
		'      WHERE p.rid = q.rid AND ($1 IS NULL OR p.rid = ANY ($1)) RETURNING p.rid, q.tg_refresh_digest), '
		'ud AS (UPDATE terra_gpu.product_tile t SET digest = u.tg_refresh_digest FROM u '
		'       WHERE t.product = $2 AND t.tile_id = u.rid AND ($1 IS NULL OR t.tile_id = ANY ($1)))',
		p.query, p.product, cols, qcols, digest);
	IF retile THEN
		statement := statement || format(
			', d AS (DELETE FROM %1$s p WHERE NOT EXISTS (SELECT FROM q WHERE q.rid = p.rid) RETURNING 1), '
			'i AS (INSERT INTO %1$s (rid, %2$s) SELECT q.rid, %3$s FROM q '
			'      WHERE NOT EXISTS (SELECT FROM %1$s p WHERE p.rid = q.rid) RETURNING 1) '
			'SELECT (SELECT count(*) FROM q), (SELECT count(*) FROM u) + (SELECT count(*) FROM d) + (SELECT count(*) FROM i)',
			p.product, cols, qcols);
	ELSE
		statement := statement || ' SELECT (SELECT count(*) FROM q), (SELECT count(*) FROM u)';
	END IF;
	SELECT * INTO computed, written FROM terra_gpu._product_exec(p, reads, keep, statement);
END $function$;
COMMENT ON FUNCTION terra_gpu._product_write(terra_gpu.product,bigint[],bigint[],boolean) IS 'Internal (tg_refresh): run a product''s query (over some source tiles, or all) and rewrite the rows whose values changed';
CREATE OR REPLACE FUNCTION terra_gpu._product_exec(p terra_gpu.product, reads bigint[], keep bigint[], statement text, OUT computed integer, OUT written integer)
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	pinned text := pg_catalog.current_setting('search_path');
	tilecomp text;
BEGIN
	-- the coverage forms hand back lz4-compressed tiles only for lz4 columns (as tg_create_result)
	tilecomp := current_setting('terra_gpu.tile_compression');
	IF p.compression <> 'lz4' THEN
		PERFORM set_config('terra_gpu.tile_compression', 'none', true);
	END IF;
	-- the coverage form reads the tiles `reads` and encodes the results of those kept only
	IF reads IS NOT NULL THEN
		PERFORM set_config('terra_gpu.coverage_tiles', format('%s:%s%s', p.source::oid, array_to_string(reads, ','),
															  '/' || nullif(array_to_string(keep, ','), '')), true);
	END IF;
	PERFORM set_config('search_path', p.search_path, true);
	EXECUTE statement INTO computed, written USING keep, p.product;
	PERFORM set_config('search_path', pinned, true);
	PERFORM set_config('terra_gpu.coverage_tiles', '', true);
	PERFORM set_config('terra_gpu.tile_compression', tilecomp, true);
END $function$;
COMMENT ON FUNCTION terra_gpu._product_exec(terra_gpu.product,bigint[],bigint[],text) IS 'Internal (tg_refresh): a statement over a product''s query, run with its recipe''s settings over some source tiles';
CREATE OR REPLACE FUNCTION terra_gpu._bands_step(operation text, bands text[], replies bytea[], state bytea, OUT phase text, OUT round integer, OUT messages bytea[], OUT next_state bytea)
 RETURNS record
 LANGUAGE c
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_bands_step$function$;
COMMENT ON FUNCTION terra_gpu._bands_step(text,text[],bytea[],bytea) IS 'Internal (tg_refresh): the coordinator''s step over a product''s bands, as terra_gpu._parts_step but its messages not compressed and its state kept in this backend until the run ends or the transaction does (state: NULL to begin, then the token each step returns); every reply is read with its lengths checked';
CREATE OR REPLACE FUNCTION terra_gpu._product_band(product regclass, band integer, tiles bigint[], message bytea)
 RETURNS bytea
 LANGUAGE c
 STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_product_band$function$;
COMMENT ON FUNCTION terra_gpu._product_band(regclass,integer,bigint[],bytea) IS 'Internal (tg_refresh): one band''s phase of a product the caller owns (its recipe over the band''s source tiles, terra_gpu._product_band_run), as the coordinator''s message says; the band''s reply.  What the band keeps between phases stays in this transaction';
CREATE OR REPLACE FUNCTION terra_gpu._product_band_run(product regclass, tiles bigint[], finish boolean)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	p terra_gpu.product;
BEGIN
	IF NOT terra_gpu._product_owned(product) THEN
		RAISE EXCEPTION 'must be owner of table %', product USING ERRCODE = '42501';
	END IF;
	SELECT * INTO STRICT p FROM terra_gpu.product x WHERE x.product = _product_band_run.product;
	IF finish THEN
		PERFORM terra_gpu._product_write(p, tiles, tiles, false);
	ELSE
		PERFORM terra_gpu._product_exec(p, tiles, tiles,
			format('SELECT count(*)::integer, 0 FROM (%s) q', p.query));
	END IF;
END $function$;
COMMENT ON FUNCTION terra_gpu._product_band_run(regclass,bigint[],boolean) IS 'Internal (terra_gpu._product_band): a product''s recipe over some of its source tiles; in the finish phase its rows rewritten where their values changed';
CREATE OR REPLACE FUNCTION terra_gpu._product_bands_meet(product regclass)
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
RETURN (NOT (EXISTS (SELECT FROM (SELECT b.r0, b.h, b.even, lead(b.r0) OVER (ORDER BY b.r0) AS next FROM (SELECT g.r0, max(g.height) AS h, (min(g.height) = max(g.height)) AS even FROM terra_gpu._product_cells(_product_bands_meet.product) g(tile_id, r0, c0, width, height) GROUP BY g.r0) b) x WHERE ((NOT x.even) OR (x.next <> (x.r0 + x.h))))));
COMMENT ON FUNCTION terra_gpu._product_bands_meet(regclass) IS 'Internal (tg_refresh): whether each row of a product''s tiles is of one height and begins where the one above ends';
CREATE OR REPLACE FUNCTION terra_gpu._product_bands(p terra_gpu.product, changed bigint[], OUT bands integer, OUT bands_computed integer, OUT tiles_computed integer, OUT tiles_rewritten integer)
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	band_tiles text[];			-- each band's tile ids, 'id,id,...'
	dirty boolean[];
	names text[];
	chain bytea[];
	ran integer[];				-- steps each band's kept state has been through in this refresh
	computed boolean[];
	sent bytea[] := '{}';		-- every step's messages, step by step
	msgs bytea[];
	replies bytea[];
	state bytea;
	kept_digest bytea[] := '{}';	-- what the last refresh kept, by step and band (step * n + band + 1)
	kept_reply bytea[] := '{}';
	step record;
	r record;
	n integer;
	s integer := 0;
	tiles bigint[];
	before bytea[];
	after bytea[];
BEGIN
	SELECT array_agg(b.ids ORDER BY b.y), array_agg(b.dirty ORDER BY b.y)
	INTO band_tiles, dirty
	FROM (SELECT g.r0 AS y, string_agg(g.tile_id::text, ',' ORDER BY g.tile_id) AS ids,
				 bool_or(g.tile_id = ANY (changed)) AS dirty
		  FROM terra_gpu._product_cells(p.product) g GROUP BY 1) b;
	n := cardinality(band_tiles);
	bands := n;
	SELECT array_agg(format('band %s', g) ORDER BY g) INTO names FROM generate_series(0, n - 1) g;
	FOR r IN SELECT x.step, x.band, x.digest, x.reply FROM terra_gpu.product_seam x
			 WHERE x.product = p.product AND x.band < n LOOP
		kept_digest[r.step * n + r.band + 1] := r.digest;
		kept_reply[r.step * n + r.band + 1] := r.reply;
	END LOOP;
	chain := array_fill(''::bytea, ARRAY[n]);
	ran := array_fill(0, ARRAY[n]);
	computed := array_fill(false, ARRAY[n]);
	tiles_computed := 0;
	tiles_rewritten := 0;
	LOOP
		SELECT * INTO step FROM terra_gpu._bands_step(p.function, names, replies, state);
		EXIT WHEN step.phase = 'done';
		state := step.next_state;
		msgs := step.messages;
		replies := array_fill(''::bytea, ARRAY[n]);
		FOR b IN 1..n LOOP
			sent[s * n + b] := msgs[b];
			-- no message: the band sits this step out (an empty reply)
			CONTINUE WHEN octet_length(msgs[b]) = 0;
			chain[b] := sha256(chain[b] || msgs[b]);
			IF NOT dirty[b] AND kept_digest[s * n + b] = chain[b] THEN
				replies[b] := kept_reply[s * n + b];
				CONTINUE;
			END IF;
			tiles := string_to_array(band_tiles[b], ',')::bigint[];
			-- the steps this band skipped, replayed with this refresh's messages
			FOR t IN ran[b]..s - 1 LOOP
				IF octet_length(sent[t * n + b]) > 0 THEN
					PERFORM terra_gpu._product_band(p.product, b - 1, tiles, sent[t * n + b]);
				END IF;
			END LOOP;
			IF step.phase = 'finish' THEN
				SELECT array_agg(t.digest ORDER BY t.tile_id) INTO before FROM terra_gpu.product_tile t
				WHERE t.product = p.product AND t.tile_id = ANY (tiles);
			END IF;
			replies[b] := terra_gpu._product_band(p.product, b - 1, tiles, msgs[b]);
			IF step.phase = 'finish' THEN
				SELECT array_agg(t.digest ORDER BY t.tile_id) INTO after FROM terra_gpu.product_tile t
				WHERE t.product = p.product AND t.tile_id = ANY (tiles);
				tiles_rewritten := tiles_rewritten + (SELECT count(*) FROM unnest(before, after) d(x, y) WHERE x IS DISTINCT FROM y);
			END IF;
			ran[b] := s + 1;
			IF NOT computed[b] THEN
				computed[b] := true;
				tiles_computed := tiles_computed + cardinality(tiles);
			END IF;
			INSERT INTO terra_gpu.product_seam (product, band, step, phase, round, digest, reply)
			VALUES (p.product, b - 1, s, step.phase, step.round, chain[b], replies[b])
			ON CONFLICT ON CONSTRAINT product_seam_pkey DO UPDATE
			SET phase = excluded.phase, round = excluded.round, digest = excluded.digest, reply = excluded.reply;
		END LOOP;
		s := s + 1;
	END LOOP;
	-- a reply kept from before is of the band's tiles then: a changed band's
	-- from a step it sat out this time must go too (were its messages there
	-- the same again, it would be taken)
	DELETE FROM terra_gpu.product_seam x
	WHERE x.product = p.product
	  AND (x.step >= s OR x.band >= n OR (dirty[x.band + 1] AND octet_length(sent[x.step * n + x.band + 1]) = 0));
	bands_computed := (SELECT count(*) FROM unnest(computed) c WHERE c);
END $function$;
COMMENT ON FUNCTION terra_gpu._product_bands(terra_gpu.product,bigint[]) IS 'Internal (tg_refresh): a global product refreshed in bands, each band computed only where its tiles or the messages it received changed; its bands, those computed, their tiles and the rows rewritten';
CREATE OR REPLACE FUNCTION @extschema@.tg_refresh(product regclass, OUT mode text, OUT tiles_changed integer, OUT tiles_computed integer, OUT tiles_rewritten integer)
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	p terra_gpu.product;
	changed bigint[];
	outputs bigint[];
	reads bigint[];
	why text;
	retile boolean := false;
	col name;
	msgs text;
BEGIN
	IF product IS NULL THEN
		RAISE EXCEPTION 'product must not be NULL' USING ERRCODE = '22004';
	END IF;
	IF NOT terra_gpu._product_owned(product) THEN
		RAISE EXCEPTION 'must be owner of table %', product USING ERRCODE = '42501',
			HINT = 'A product is refreshed by its owner (or a member of the owning role).';
	END IF;
	-- two refreshes of one product take turns; readers go on reading the old rows
	EXECUTE format('LOCK TABLE %s IN EXCLUSIVE MODE', product);
	SELECT * INTO p FROM terra_gpu.product x WHERE x.product = tg_refresh.product FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION '% has no recipe to refresh it from', product USING ERRCODE = '55000',
			HINT = 'tg_create_result records one when its query runs one coverage form over one table and keeps the tile ids (rid).';
	END IF;
	IF NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = p.source) THEN
		RAISE EXCEPTION 'the source table of % no longer exists', product USING ERRCODE = '42P01';
	END IF;
	-- a renamed source: the query names it by its new name from now on
	IF terra_gpu._name_on_path(p.source, p.search_path) <> p.source_name THEN
		IF strpos(p.query, quote_literal(p.source_name)) = 0 THEN
			RAISE EXCEPTION 'the source of % was renamed and its query does not name it as %', product,
				quote_literal(p.source_name) USING ERRCODE = '55000',
				HINT = 'Create the product again with tg_create_result(..., replace => true).';
		END IF;
		UPDATE terra_gpu.product x
		SET query = replace(x.query, quote_literal(x.source_name), quote_literal(terra_gpu._name_on_path(x.source, x.search_path))),
			source_name = terra_gpu._name_on_path(x.source, x.search_path)
		WHERE x.product = p.product RETURNING * INTO p;
	END IF;
	IF p.captured THEN
		-- no writes to the source until this transaction ends: the changes
		-- read next are all there are
		PERFORM terra_gpu._bmmq_watch(p.source, true);
	END IF;
	WITH d AS (DELETE FROM terra_gpu.product_change x WHERE x.product = p.product RETURNING x.tile_id)
	SELECT coalesce(array_agg(d.tile_id ORDER BY d.tile_id), '{}') INTO changed FROM d;
	tiles_changed := cardinality(changed);

	IF NOT p.captured THEN
		why := 'the changes of its source are not recorded (its creator did not own the source, or it has foreign partitions)';
	ELSIF p.retiled THEN
		why := 'its source was truncated';
		retile := true;
	ELSIF tiles_changed = 0 THEN
		mode := 'unchanged';
		tiles_computed := 0;
		tiles_rewritten := 0;
		RETURN;
	ELSIF EXISTS (SELECT FROM unnest(changed) c(id)
				  LEFT JOIN terra_gpu._product_tiles(p, changed) now ON now.tile_id = c.id
				  LEFT JOIN terra_gpu.product_tile t ON t.product = p.product AND t.tile_id = c.id
				  WHERE (now.upperleft_x, now.upperleft_y, now.width, now.height, now.scale_x, now.scale_y,
						 now.skew_x, now.skew_y, now.srid)
						IS DISTINCT FROM (t.upperleft_x, t.upperleft_y, t.width, t.height, t.scale_x, t.scale_y,
										  t.skew_x, t.skew_y, t.srid)) THEN
		why := 'tiles of its source were added, removed or moved';
		retile := true;
	ELSIF p.reach IS NOT NULL AND NOT (changed && p.reach) THEN
		-- no changed tile lies where the product reads (a viewshed's windows)
		mode := 'incremental';
		tiles_computed := 0;
		tiles_rewritten := 0;
	ELSIF p.reach IS NOT NULL THEN
		why := format('a changed tile lies within max_distance of an observer of %s (any cell within reach may change)',
					  p.function);
	ELSIF p.halo IS NULL AND p.function NOT IN ('tg_fill', 'tg_flow_direction', 'tg_flow_accumulation', 'tg_hydrology') THEN
		why := format('%s is a global operation that does not run in bands (a change may reach any tile)', p.function);
	ELSIF p.halo IS NULL AND NOT terra_gpu._product_bands_meet(p.product) THEN
		why := 'its rows of tiles leave rows of the grid between them empty, or are uneven (it cannot run in bands)';
	ELSIF p.halo IS NULL AND terra_gpu._gpu_chosen((SELECT sum(t.width::bigint * t.height)::bigint
												   FROM terra_gpu.product_tile t WHERE t.product = p.product)) THEN
		-- every band a refresh computes runs each of the coordinator's steps
		-- in this backend, and the steps grow with the bands: where the
		-- dispatcher sends the whole product to the GPU, it costs less
		why := 'it runs on the GPU, and there the whole product costs less than its bands';
	END IF;

	IF mode IS NOT NULL THEN
		NULL;					-- nothing the product reads changed
	ELSIF why IS NULL AND p.halo IS NULL THEN
		-- a global operation: in bands, those whose tiles or messages changed computed
		BEGIN
			SELECT b.tiles_computed, b.tiles_rewritten INTO tiles_computed, tiles_rewritten
			FROM terra_gpu._product_bands(p, changed) b;
			mode := 'bands';
		EXCEPTION WHEN feature_not_supported THEN
			-- options of the recipe that the parts do not compute (nothing was written)
			GET STACKED DIAGNOSTICS why = MESSAGE_TEXT;
			why := format('it cannot run in bands (%s)', why);
		END;
	ELSIF why IS NULL THEN
		-- a local operation: the tiles within its halo of a changed one,
		-- computed from the tiles within its halo of those
		mode := 'incremental';
		SELECT * INTO outputs, reads FROM terra_gpu._product_halo(p.product, changed, p.halo);
		SELECT * INTO tiles_computed, tiles_rewritten FROM terra_gpu._product_write(p, reads, outputs, false);
	END IF;
	IF mode IS NULL THEN
		mode := 'full';
		RAISE NOTICE '% is recomputed in full: %', product, why
			USING DETAIL = 'Only the tiles whose values changed are rewritten.';
		-- what the bands kept is of the source before: the next refresh computes every band
		DELETE FROM terra_gpu.product_seam x WHERE x.product = p.product;
		IF retile THEN
			msgs := current_setting('client_min_messages');
			PERFORM set_config('client_min_messages', 'warning', true);
			FOR col IN SELECT a.attname FROM pg_attribute a WHERE a.attrelid = p.product AND a.attnum > 0
					   AND NOT a.attisdropped AND a.atttypid = 'raster'::regtype LOOP
				PERFORM DropRasterConstraints(n.nspname, c.relname, col)
				FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = p.product;
			END LOOP;
			PERFORM set_config('client_min_messages', msgs, true);
		END IF;
		SELECT * INTO tiles_computed, tiles_rewritten FROM terra_gpu._product_write(p, NULL, NULL, retile);
		IF retile THEN
			FOR col IN SELECT a.attname FROM pg_attribute a WHERE a.attrelid = p.product AND a.attnum > 0
					   AND NOT a.attisdropped AND a.atttypid = 'raster'::regtype LOOP
				PERFORM terra_gpu._add_raster_constraints(p.product, col);
			END LOOP;
			DELETE FROM terra_gpu.product_tile t WHERE t.product = p.product;
			INSERT INTO terra_gpu.product_tile SELECT * FROM terra_gpu._product_tiles(p, NULL);
			PERFORM terra_gpu._product_digests(p);
		END IF;
	END IF;
	-- the tiles a viewshed reads are known by id: after a change of tiling, any tile may be
	UPDATE terra_gpu.product x SET retiled = false, refreshed_at = now(), reach = CASE WHEN retile THEN NULL ELSE x.reach END
	WHERE x.product = p.product;
END $function$;
COMMENT ON FUNCTION @extschema@.tg_refresh(regclass) IS 'Bring a product of tg_create_result up to date with its source, in the caller''s transaction: a local operation (slope, the terrain derivatives) recomputes only the tiles within its halo of the changed ones; fill, directions, accumulation and tg_hydrology run in bands (rows of tiles), recomputing the bands whose tiles or seams with the others changed (mode bands), or in full where the dispatcher would run the whole product on the GPU (terra_gpu.backend, min_cells_for_gpu); a viewshed within max_distance computes nothing where no changed tile lies within its observers'' windows; the drainage products, or a change of tiling, recompute in full (said in a NOTICE); either way only the tiles whose values changed are rewritten';
CREATE OR REPLACE FUNCTION @extschema@.tg_refresh_all(source regclass, OUT product regclass, OUT bmmq_index text, OUT mode text, OUT tiles_changed integer, OUT tiles_computed integer, OUT tiles_rewritten integer)
 RETURNS SETOF record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	p regclass;
	ix_name text;
BEGIN
	IF source IS NULL THEN
		RAISE EXCEPTION 'source must not be NULL' USING ERRCODE = '22004';
	END IF;
	FOR p IN SELECT x.product FROM terra_gpu.product x
			 WHERE x.source = tg_refresh_all.source AND terra_gpu._product_owned(x.product)
			 ORDER BY x.product::oid LOOP
		product := p;
		SELECT * INTO mode, tiles_changed, tiles_computed, tiles_rewritten FROM @extschema@.tg_refresh(p);
		RETURN NEXT;
	END LOOP;
	product := NULL;
	-- the source's BMMQ indexes: a rebuilt tile's tree is computed and rewritten
	FOR ix_name IN SELECT i.name FROM terra_gpu.bmmq_index i
				   WHERE i.source = tg_refresh_all.source AND pg_catalog.pg_has_role(i.owner, 'MEMBER')
				   ORDER BY i.name LOOP
		bmmq_index := ix_name;
		SELECT r.mode, r.tiles_changed, r.tiles_rebuilt, r.tiles_rebuilt
		INTO mode, tiles_changed, tiles_computed, tiles_rewritten
		FROM terra_gpu._bmmq_refresh(terra_gpu._bmmq_own(ix_name, false)) r;
		RETURN NEXT;
	END LOOP;
END $function$;
COMMENT ON FUNCTION @extschema@.tg_refresh_all(regclass) IS 'tg_refresh every product of a source table that the caller owns, then tg_bmmq_refresh every BMMQ-tree index of it the caller owns: one row each (product, or bmmq_index, with how it was refreshed and the tiles changed, computed and rewritten)';
CREATE OR REPLACE FUNCTION terra_gpu.product_dropped()
 RETURNS event_trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
DECLARE
	sources oid[];
BEGIN
	WITH gone AS (
		DELETE FROM terra_gpu.product x USING pg_event_trigger_dropped_objects() d
		WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0 AND d.objid IN (x.product::oid, x.source::oid)
		RETURNING x.product::oid AS oid, x.source::oid AS source),
	tiles AS (DELETE FROM terra_gpu.product_tile t USING gone WHERE t.product::oid = gone.oid),
	changes AS (DELETE FROM terra_gpu.product_change c USING gone WHERE c.product::oid = gone.oid),
	seams AS (DELETE FROM terra_gpu.product_seam x USING gone WHERE x.product::oid = gone.oid)
	SELECT array_agg(DISTINCT gone.source) INTO sources FROM gone;
	PERFORM terra_gpu._bmmq_watch(s::regclass, false)
	FROM unnest(sources) s WHERE EXISTS (SELECT FROM pg_class c WHERE c.oid = s);
END $function$;
REVOKE ALL ON FUNCTION terra_gpu.product_dropped() FROM PUBLIC;
CREATE OR REPLACE FUNCTION terra_gpu._part_exec(query text, message bytea)
 RETURNS bytea
 LANGUAGE c
 STRICT
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_part_exec$function$;
COMMENT ON FUNCTION terra_gpu._part_exec(text,bytea) IS 'Internal (tg_create_partitioned_result, on a worker): runs a query that calls one coverage function, as one part''s phase given by the coordinator''s message; returns the part''s reply';
REVOKE ALL ON FUNCTION terra_gpu._part_exec(text,bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION terra_gpu._part_exec(text,bytea) TO terra_gpu_parts;
CREATE OR REPLACE FUNCTION terra_gpu._parts_step(operation text, servers text[], replies bytea[], state bytea, OUT phase text, OUT round integer, OUT messages bytea[], OUT next_state bytea)
 RETURNS record
 LANGUAGE c
 IMMUTABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS 'MODULE_PATHNAME', $function$tgpg_parts_step$function$;
COMMENT ON FUNCTION terra_gpu._parts_step(text,text[],bytea[],bytea) IS 'Internal (tg_create_partitioned_result, on the coordinator): from the replies of the phase just run and its state, the next phase (done at the end) and its message for every part; checks that the parts stack into one grid';
REVOKE ALL ON FUNCTION terra_gpu._parts_step(text,text[],bytea[],bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION terra_gpu._parts_step(text,text[],bytea[],bytea) TO terra_gpu_parts;
CREATE OR REPLACE FUNCTION terra_gpu._part_run(operation text, coverage regclass, options jsonb, message bytea, result text DEFAULT NULL::text, part integer DEFAULT NULL::integer, replace boolean DEFAULT false)
 RETURNS bytea
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	args text;
	opt record;
	call text;
BEGIN
	IF operation IS NULL OR coverage IS NULL OR message IS NULL THEN
		RAISE EXCEPTION 'operation, coverage and message must not be NULL' USING ERRCODE = '22004';
	END IF;
	IF operation NOT IN ('tg_fill', 'tg_slope', 'tg_flow_direction', 'tg_flow_accumulation', 'tg_hydrology') THEN
		RAISE EXCEPTION '% cannot run over a partitioned coverage', operation USING ERRCODE = '0A000',
			HINT = 'tg_fill, tg_slope, tg_flow_direction, tg_flow_accumulation and tg_hydrology can.';
	END IF;
	args := format('coverage => %L::regclass', coverage::text);
	FOR opt IN SELECT key, value FROM jsonb_each_text(coalesce(options, '{}')) LOOP
		IF opt.key !~ '^[a-z_][a-z0-9_]*$' OR opt.key = 'coverage' THEN
			RAISE EXCEPTION '"%" is not an argument of %', opt.key, operation USING ERRCODE = '22023';
		END IF;
		args := args || format(', %I => %L', opt.key, opt.value);
	END LOOP;
	call := format('@extschema@.%I(%s)', operation, args);
	IF result IS NULL THEN
		RETURN terra_gpu._part_exec(format('SELECT count(*) FROM %s', call), message);
	END IF;
	RETURN terra_gpu._part_exec(
		format('SELECT @extschema@.tg_create_result(%L, %L, replace => %L)', result,
			   format('SELECT rid, %s AS part, %s FROM %s', part,
					  CASE operation WHEN 'tg_hydrology' THEN 'filled, direction, accumulation' ELSE 'rast' END, call),
			   replace),
		message);
END
$function$;
COMMENT ON FUNCTION terra_gpu._part_run(text,regclass,jsonb,bytea,text,integer,boolean) IS 'Internal (tg_create_partitioned_result, on a worker): one phase of a coverage function over the worker''s own table; with result, its tiles written with tg_create_result';
REVOKE ALL ON FUNCTION terra_gpu._part_run(text,regclass,jsonb,bytea,text,integer,boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION terra_gpu._part_run(text,regclass,jsonb,bytea,text,integer,boolean) TO terra_gpu_parts;
CREATE OR REPLACE FUNCTION terra_gpu._parts_round(dblink name, connections text[], servers text[], queries text[], OUT replies text[], OUT seconds double precision[])
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	n integer := cardinality(connections);
	done boolean[] := array_fill(false, ARRAY[n]);
	t0 timestamptz := clock_timestamp();
	waiting integer := n;
	busy integer;
	reply text;
	state text;
	msg text;
	detail text;
BEGIN
	replies := array_fill(NULL::text, ARRAY[n]);
	seconds := array_fill(NULL::double precision, ARRAY[n]);
	FOR k IN 1..n LOOP
		-- a NULL query: that worker has nothing to do this time, and replies nothing
		IF queries[k] IS NULL THEN
			replies[k] := '';
			seconds[k] := 0;
			done[k] := true;
			waiting := waiting - 1;
			CONTINUE;
		END IF;
		EXECUTE format('SELECT %I.dblink_send_query($1, $2)', dblink) INTO busy USING connections[k], queries[k];
		IF busy <> 1 THEN
			EXECUTE format('SELECT %I.dblink_error_message($1)', dblink) INTO msg USING connections[k];
			RAISE EXCEPTION 'worker "%" could not be sent its query: %', servers[k], msg USING ERRCODE = '08006';
		END IF;
	END LOOP;
	-- poll: a wait here can be canceled, and every worker runs meanwhile
	WHILE waiting > 0 LOOP
		FOR k IN 1..n LOOP
			CONTINUE WHEN done[k];
			EXECUTE format('SELECT %I.dblink_is_busy($1)', dblink) INTO busy USING connections[k];
			CONTINUE WHEN busy = 1;
			BEGIN
				EXECUTE format('SELECT r FROM %I.dblink_get_result($1) AS t(r text)', dblink) INTO reply
					USING connections[k];
				-- the empty result that ends a query
				EXECUTE format('SELECT count(*) FROM %I.dblink_get_result($1) AS t(r text)', dblink) INTO busy
					USING connections[k];
			EXCEPTION WHEN OTHERS THEN
				GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
				RAISE EXCEPTION 'worker "%" failed: %', servers[k], msg USING ERRCODE = state,
					DETAIL = coalesce(detail, '');
			END;
			IF reply IS NULL THEN
				RAISE EXCEPTION 'worker "%" returned no reply', servers[k] USING ERRCODE = '08006';
			END IF;
			replies[k] := reply;
			seconds[k] := extract(epoch FROM clock_timestamp() - t0);
			done[k] := true;
			waiting := waiting - 1;
		END LOOP;
		IF waiting > 0 THEN
			PERFORM pg_sleep(0.002);
		END IF;
	END LOOP;
END
$function$;
COMMENT ON FUNCTION terra_gpu._parts_round(name,text[],text[],text[]) IS 'Internal (tg_create_partitioned_result): one query per dblink connection (none where NULL: an empty reply), all running at once; their one-column replies and the seconds each took; an error names the worker';
REVOKE ALL ON FUNCTION terra_gpu._parts_round(name,text[],text[],text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION terra_gpu._parts_round(name,text[],text[],text[]) TO terra_gpu_parts;
CREATE OR REPLACE FUNCTION terra_gpu._parts_close(dblink name, connections text[], servers text[], prepared text[])
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	open_ text[];
BEGIN
	EXECUTE format('SELECT %I.dblink_get_connections()', dblink) INTO open_;
	FOR k IN 1..coalesce(cardinality(connections), 0) LOOP
		CONTINUE WHEN connections[k] IS NULL OR NOT connections[k] = ANY (coalesce(open_, '{}'));
		BEGIN
			EXECUTE format('SELECT %I.dblink_cancel_query($1)', dblink) USING connections[k];
			IF prepared[k] IS NOT NULL THEN
				EXECUTE format('SELECT %I.dblink_exec($1, $2)', dblink)
					USING connections[k], format('ROLLBACK PREPARED %L', prepared[k]);
			END IF;
		EXCEPTION WHEN OTHERS THEN
			IF prepared[k] IS NOT NULL THEN
				RAISE WARNING 'worker "%" keeps the prepared transaction %: roll it back there', servers[k], prepared[k]
					USING HINT = format('ROLLBACK PREPARED %L', prepared[k]);
			END IF;
		END;
		BEGIN
			-- closing the connection rolls back what the worker had not prepared
			EXECUTE format('SELECT %I.dblink_disconnect($1)', dblink) USING connections[k];
		EXCEPTION WHEN OTHERS THEN
			NULL;
		END;
	END LOOP;
END
$function$;
COMMENT ON FUNCTION terra_gpu._parts_close(name,text[],text[],text[]) IS 'Internal (tg_create_partitioned_result): cancels, rolls back and closes its dblink connections';
REVOKE ALL ON FUNCTION terra_gpu._parts_close(name,text[],text[],text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION terra_gpu._parts_close(name,text[],text[],text[]) TO terra_gpu_parts;
CREATE OR REPLACE FUNCTION @extschema@.tg_create_partitioned_result(name text, coverage regclass, operation text, options jsonb DEFAULT '{}'::jsonb, replace boolean DEFAULT false, search_path text DEFAULT current_setting('search_path'::text))
 RETURNS TABLE(part integer, server name, partition_table text, tiles bigint, seconds double precision, device_seconds double precision, bytes_sent bigint, bytes_received bigint)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'tg_upgrade_postgis', 'pg_temp'
AS $function$
DECLARE
	dbl name;
	gis name;
	version text;
	names name[];
	sch name;
	tab name;
	qname text;
	n integer;
	rel record;
	info record;
	srv text[] := '{}';
	remote text[] := '{}';
	results text[] := '{}';
	conns text[];
	ext text[];
	gids text[];
	prepared text[];
	sent bigint[];
	received bigint[];
	busy double precision[];
	device double precision[];
	counts bigint[];
	count bigint;
	replies bytea[];
	step record;
	coordinated bytea;			-- the coordinator's state between its steps
	rounds_of text;
	rounds integer := 0;
	rounds_seconds double precision := 0;
	rounds_bytes bigint := 0;
	moved bigint;
	queries text[];
	prepare_sql text;
	pass record;
	sql text;
	t0 timestamptz := clock_timestamp();
BEGIN
	IF name IS NULL OR coverage IS NULL OR operation IS NULL THEN
		RAISE EXCEPTION 'name, coverage and operation must not be NULL' USING ERRCODE = '22004';
	END IF;
	operation := lower(operation);
	IF operation NOT IN ('tg_fill', 'tg_slope', 'tg_flow_direction', 'tg_flow_accumulation', 'tg_hydrology') THEN
		RAISE EXCEPTION '% cannot run over a partitioned coverage', operation USING ERRCODE = '0A000',
			HINT = 'tg_fill (priority-flood, epsilon 0), tg_slope, tg_flow_direction (d8), tg_flow_accumulation and tg_hydrology (no weight) can.';
	END IF;
	options := coalesce(options, '{}');
	IF jsonb_typeof(options) <> 'object' THEN
		RAISE EXCEPTION 'options must be a JSON object of argument names and values' USING ERRCODE = '22023';
	END IF;
	IF options ? 'weight' THEN
		RAISE EXCEPTION 'a weight cannot be given to % over a partitioned coverage', operation USING ERRCODE = '0A000',
			HINT = 'Accumulate without a weight, or compute the weighted accumulation on one server.';
	END IF;
	SELECT e.extversion INTO version FROM pg_catalog.pg_extension e WHERE e.extname = 'terra_gpu';
	SELECT s.nspname INTO gis FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace s ON s.oid = e.extnamespace
	WHERE e.extname = 'postgis';
	SELECT s.nspname INTO dbl FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace s ON s.oid = e.extnamespace
	WHERE e.extname = 'dblink';
	IF dbl IS NULL THEN
		RAISE EXCEPTION 'tg_create_partitioned_result needs the dblink extension' USING ERRCODE = '55000',
			HINT = 'CREATE EXTENSION dblink;';
	END IF;
	IF (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = coverage) <> 'p' THEN
		RAISE EXCEPTION '% is not a partitioned table', coverage USING ERRCODE = '22023',
			HINT = 'On one server, write the coverage form''s result with tg_create_result.';
	END IF;
	-- the result: name or schema.name on this server, tables name_part1.. on the workers
	names := terra_gpu._table_name(name);
	sch := coalesce(names[1], terra_gpu._creation_schema(search_path));
	tab := names[2];
	qname := format('%I.%I', sch, tab);
	IF to_regclass(qname) IS NOT NULL AND NOT replace THEN
		RAISE EXCEPTION 'relation % already exists', qname USING ERRCODE = '42P07',
			HINT = 'Pass replace => true to overwrite it.';
	END IF;
	-- the partitions: each a foreign table on a worker; its part of the
	-- result goes beside its input there
	FOR rel IN SELECT c.oid::regclass AS part, c.relkind, s.srvname, c.relname, cn.nspname,
					  (SELECT substr(o, 13) FROM unnest(ft.ftoptions) o WHERE o LIKE 'schema_name=%') AS rschema,
					  (SELECT substr(o, 12) FROM unnest(ft.ftoptions) o WHERE o LIKE 'table_name=%') AS rtable
			   FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
			   JOIN pg_catalog.pg_namespace cn ON cn.oid = c.relnamespace
			   LEFT JOIN pg_catalog.pg_foreign_table ft ON ft.ftrelid = c.oid
			   LEFT JOIN pg_catalog.pg_foreign_server s ON s.oid = ft.ftserver
			   WHERE i.inhparent = coverage ORDER BY c.relname LOOP
		IF rel.relkind <> 'f' THEN
			RAISE EXCEPTION 'partition % of % is not a foreign table', rel.part, coverage USING ERRCODE = '0A000',
				HINT = 'Every partition must be a postgres_fdw foreign table on a worker server.';
		END IF;
		srv := srv || rel.srvname::text;
		remote := remote || format('%I.%I', coalesce(rel.rschema, rel.nspname), coalesce(rel.rtable, rel.relname));
		results := results || format('%I.%I', coalesce(rel.rschema, rel.nspname), format('%s_part%s', tab, cardinality(srv)));
	END LOOP;
	n := cardinality(srv);
	IF n = 0 THEN
		RAISE EXCEPTION '% has no partitions', coverage USING ERRCODE = '22023';
	END IF;
	conns := array_fill(NULL::text, ARRAY[n]);
	prepared := array_fill(NULL::text, ARRAY[n]);
	ext := array_fill(NULL::text, ARRAY[n]);
	gids := array_fill(NULL::text, ARRAY[n]);
	sent := array_fill(0::bigint, ARRAY[n]);
	received := array_fill(0::bigint, ARRAY[n]);
	busy := array_fill(0::double precision, ARRAY[n]);
	device := array_fill(0::double precision, ARRAY[n]);
	counts := array_fill(NULL::bigint, ARRAY[n]);
	BEGIN
		FOR k IN 1..n LOOP
			gids[k] := left(format('terra_gpu %s %s %s', pg_backend_pid(), k, qname), 199);
			EXECUTE format('SELECT %I.dblink_connect($1, $2)', dbl) USING format('terra_gpu_%s_%s', pg_backend_pid(), k), srv[k];
			conns[k] := format('terra_gpu_%s_%s', pg_backend_pid(), k);
			-- one snapshot for every phase: each phase reads the same tiles (and a part keeps its
			-- table's layout from the first)
			sql := 'BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT n.nspname, e.extversion, current_setting(''max_prepared_transactions'')::integer '
				   'FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace '
				   'WHERE e.extname = ''terra_gpu''';
			EXECUTE format('SELECT * FROM %I.dblink($1, $2) AS t(nsp name, version text, prepared integer)', dbl)
				INTO info USING conns[k], sql;
			sent[k] := sent[k] + octet_length(sql);
			IF info.nsp IS NULL OR info.version IS DISTINCT FROM version THEN
				RAISE EXCEPTION 'worker "%" has terra_gpu %, this server %', srv[k], coalesce(info.version, 'not installed'),
					version USING ERRCODE = '55000', HINT = 'Install the same terra_gpu on every server.';
			END IF;
			IF info.prepared < 1 THEN
				RAISE EXCEPTION 'worker "%" cannot prepare transactions (max_prepared_transactions = 0)', srv[k]
					USING ERRCODE = '55000',
					HINT = 'Set max_prepared_transactions on every worker and restart it: results are published with two-phase commit.';
			END IF;
			ext[k] := info.nsp;
			-- each phase calls one of these statements with its message (base64), so only the message
			-- crosses; the finish also writes the result.  The reply is the part's bytes (base64) and the
			-- device time of the phase (tg_last_run() read after the phase's call).
			prepare_sql := 'PREPARE %6$s(text) AS SELECT translate(encode(r, ''base64''), E''\n'', '''') || '' '' || '
						   '(SELECT coalesce(l.kernel_ms, 0) + coalesce(l.transfer_ms, 0) FROM %1$I.tg_last_run() l '
						   'WHERE r IS NOT NULL) FROM (SELECT terra_gpu._part_run(%2$L, %3$L, %4$L, decode($1, ''base64'')%5$s) '
						   'AS r OFFSET 0) s';
			sql := format(prepare_sql, ext[k], operation, remote[k], options::text, '', 'tg_part') || '; ' ||
				   format(prepare_sql, ext[k], operation, remote[k], options::text,
						  format(', %L, %s, %L', results[k], k, replace), 'tg_part_finish');
			EXECUTE format('SELECT %I.dblink_exec($1, $2)', dbl) USING conns[k], sql;
			sent[k] := sent[k] + octet_length(sql);
		END LOOP;

		-- the phases, as the coordinator's steps say, all workers at once in each
		LOOP
			SELECT * INTO step FROM terra_gpu._parts_step(operation, srv, replies, coordinated);
			EXIT WHEN step.phase = 'done';
			coordinated := step.next_state;
			queries := array_fill(NULL::text, ARRAY[n]);
			FOR k IN 1..n LOOP
				IF octet_length(step.messages[k]) > 0 THEN
					queries[k] := format('EXECUTE %s(%L)', CASE WHEN step.phase = 'finish' THEN 'tg_part_finish' ELSE 'tg_part' END,
										 translate(encode(step.messages[k], 'base64'), E'\n', ''));
				END IF;
				-- no message: the worker sits this round out (NULL query, empty reply)
				sent[k] := sent[k] + coalesce(octet_length(queries[k]), 0);
			END LOOP;
			pass := terra_gpu._parts_round(dbl, conns, srv, queries);
			moved := 0;
			FOR k IN 1..n LOOP
				received[k] := received[k] + octet_length(pass.replies[k]);
				busy[k] := busy[k] + pass.seconds[k];
				device[k] := device[k] + coalesce(nullif(split_part(pass.replies[k], ' ', 2), ''), '0')::double precision / 1000;
				moved := moved + coalesce(octet_length(queries[k]), 0) + octet_length(pass.replies[k]);
			END LOOP;
			SELECT array_agg(decode(split_part(r, ' ', 1), 'base64') ORDER BY i) INTO replies
			FROM unnest(pass.replies) WITH ORDINALITY u(r, i);
			-- phases in rounds (flats, flow) are told once they settle (and every 10 rounds till then)
			IF step.phase IN ('flats', 'flow') THEN
				rounds_of := step.phase;
				rounds := step.round + 1;
				rounds_seconds := rounds_seconds + (SELECT max(x) FROM unnest(pass.seconds) x);
				rounds_bytes := rounds_bytes + moved;
				IF rounds % 10 = 0 THEN
					RAISE NOTICE 'tg_create_partitioned_result: % of % on % workers: % rounds so far', rounds_of,
						operation, n, rounds;
				END IF;
			ELSE
				IF rounds_of IS NOT NULL THEN
					RAISE NOTICE 'tg_create_partitioned_result: % of % on % workers in % s, % kB (% rounds)', rounds_of,
						operation, n, round(rounds_seconds::numeric, 2), round(rounds_bytes / 1024.0, 1), rounds;
					rounds_of := NULL;
					rounds_seconds := 0;
					rounds_bytes := 0;
				END IF;
				RAISE NOTICE 'tg_create_partitioned_result: % of % on % workers in % s, % kB', step.phase, operation, n,
					round((SELECT max(x) FROM unnest(pass.seconds) x)::numeric, 2), round(moved / 1024.0, 1);
			END IF;
		END LOOP;

		-- publish: every worker prepared, then this server's table, then every worker committed
		FOR k IN 1..n LOOP
			sql := format('SELECT count(*) FROM %s', results[k]);
			EXECUTE format('SELECT * FROM %I.dblink($1, $2) AS t(c bigint)', dbl) INTO count USING conns[k], sql;
			counts[k] := count;
			sent[k] := sent[k] + octet_length(sql);
			sql := format('PREPARE TRANSACTION %L', gids[k]);
			EXECUTE format('SELECT %I.dblink_exec($1, $2)', dbl) USING conns[k], sql;
			prepared[k] := gids[k];
			sent[k] := sent[k] + octet_length(sql);
		END LOOP;
		IF to_regclass(qname) IS NOT NULL THEN
			EXECUTE format('DROP TABLE %s', qname);
		END IF;
		EXECUTE format('CREATE TABLE %s (rid integer NOT NULL, part integer NOT NULL, %s) PARTITION BY LIST (part)',
					   qname, CASE operation
							  WHEN 'tg_hydrology' THEN format('filled %1$I.raster, direction %1$I.raster, accumulation %1$I.raster', gis)
							  ELSE format('rast %I.raster', gis) END);
		FOR k IN 1..n LOOP
			EXECUTE format('CREATE FOREIGN TABLE %I.%I PARTITION OF %s FOR VALUES IN (%s) SERVER %I OPTIONS (schema_name %L, table_name %L)',
						   sch, format('%s_part%s', tab, k), qname, k, srv[k], (parse_ident(results[k]))[1],
						   (parse_ident(results[k]))[2]);
		END LOOP;
		FOR k IN 1..n LOOP
			sql := format('COMMIT PREPARED %L', gids[k]);
			EXECUTE format('SELECT %I.dblink_exec($1, $2)', dbl) USING conns[k], sql;
			prepared[k] := NULL;
			sent[k] := sent[k] + octet_length(sql);
		END LOOP;
		PERFORM terra_gpu._parts_close(dbl, conns, srv, prepared);
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		PERFORM terra_gpu._parts_close(dbl, conns, srv, prepared);
		RAISE;
	END;
	RAISE NOTICE 'tg_create_partitioned_result: % written on % workers in % s, % kB exchanged', qname, n,
		round(extract(epoch FROM clock_timestamp() - t0)::numeric, 2),
		round((SELECT sum(x) FROM unnest(sent || received) x) / 1024.0, 1);
	RETURN QUERY SELECT k::integer, srv[k]::name, results[k], counts[k], round(busy[k]::numeric, 3)::double precision,
						round(device[k]::numeric, 3)::double precision, sent[k], received[k]
				 FROM generate_series(1, n) k;
END
$function$;
COMMENT ON FUNCTION @extschema@.tg_create_partitioned_result(text,regclass,text,jsonb,boolean,text) IS 'Runs tg_fill, tg_slope, tg_flow_direction (D8), tg_flow_accumulation or tg_hydrology (any routing, no weight; options: their named arguments as JSON) over a table partitioned over worker servers (postgres_fdw foreign partitions, each a band of whole rows of tiles): every worker computes its own part and writes it beside its input as NAME_partK (tg_create_result), only part-boundary data crosses the network, and the result appears on every server at once (two-phase commit) as the partitioned table NAME here; one row per worker with its tiles, busy seconds, device seconds (GPU kernels and copies) and bytes exchanged';

-- terra_gpu 0.1.0 -> 0.2.0, after the functions: what needs them.

CREATE EVENT TRIGGER tg_bmmq_source_dropped ON sql_drop
	WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED', 'DROP MATERIALIZED VIEW', 'DROP FOREIGN TABLE')
	EXECUTE FUNCTION terra_gpu.bmmq_source_dropped();

-- The sources of existing indexes get the 0.2.0 stale triggers (one per
-- event, transition tables) in place of 0.1.0's single tg_bmmq_stale.
SELECT terra_gpu._bmmq_watch(s.source, true)
FROM (SELECT DISTINCT source FROM terra_gpu.bmmq_index) s
WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.source AND c.relkind IN ('r', 'p', 'f'));

-- Row security of the index tables (its functions are created above): a
-- role sees an index if it may read both its columns, and of its tiles and
-- nodes those of source rows it may read.
ALTER TABLE terra_gpu.bmmq_index ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.bmmq_tile ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.bmmq_node ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.bmmq_change ENABLE ROW LEVEL SECURITY;
CREATE POLICY bmmq_index_read ON terra_gpu.bmmq_index FOR SELECT
	USING (coalesce(terra_gpu._bmmq_readable(source, rast_column, id_column), pg_catalog.pg_has_role(owner, 'MEMBER')));
CREATE POLICY bmmq_index_insert ON terra_gpu.bmmq_index FOR INSERT
	WITH CHECK (pg_catalog.pg_has_role(owner, 'MEMBER') AND terra_gpu._bmmq_readable(source, rast_column, id_column));
CREATE POLICY bmmq_index_update ON terra_gpu.bmmq_index FOR UPDATE
	USING (pg_catalog.pg_has_role(owner, 'MEMBER')) WITH CHECK (pg_catalog.pg_has_role(owner, 'MEMBER'));
CREATE POLICY bmmq_index_delete ON terra_gpu.bmmq_index FOR DELETE
	USING (pg_catalog.pg_has_role(owner, 'MEMBER'));
CREATE POLICY bmmq_tile_read ON terra_gpu.bmmq_tile FOR SELECT
	USING (terra_gpu._bmmq_tile_visible(index_id, tile_id));
CREATE POLICY bmmq_tile_write ON terra_gpu.bmmq_tile FOR ALL
	USING (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')))
	WITH CHECK (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')));
CREATE POLICY bmmq_node_read ON terra_gpu.bmmq_node FOR SELECT
	USING (terra_gpu._bmmq_tile_visible(index_id, tile_id));
CREATE POLICY bmmq_node_write ON terra_gpu.bmmq_node FOR ALL
	USING (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')))
	WITH CHECK (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')));
GRANT USAGE ON SCHEMA terra_gpu TO PUBLIC;
CREATE POLICY bmmq_change_owner ON terra_gpu.bmmq_change FOR ALL
	USING (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')))
	WITH CHECK (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')));
GRANT SELECT, INSERT, UPDATE, DELETE ON terra_gpu.bmmq_index, terra_gpu.bmmq_tile, terra_gpu.bmmq_node,
	terra_gpu.bmmq_change TO PUBLIC;
GRANT USAGE ON SEQUENCE terra_gpu.bmmq_index_id_seq TO PUBLIC;

-- Products' recipes: row security (its functions are created above) and
-- the event trigger that forgets a dropped product's.
ALTER TABLE terra_gpu.product ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.product_tile ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.product_change ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.product_seam ENABLE ROW LEVEL SECURITY;
CREATE POLICY product_read ON terra_gpu.product FOR SELECT
	USING (terra_gpu._product_readable(product) OR terra_gpu._product_owned(product));
CREATE POLICY product_write ON terra_gpu.product FOR ALL
	USING (terra_gpu._product_owned(product)) WITH CHECK (terra_gpu._product_owned(product));
CREATE POLICY product_tile_read ON terra_gpu.product_tile FOR SELECT
	USING (terra_gpu._product_readable(product) OR terra_gpu._product_owned(product));
CREATE POLICY product_tile_write ON terra_gpu.product_tile FOR ALL
	USING (terra_gpu._product_owned(product)) WITH CHECK (terra_gpu._product_owned(product));
CREATE POLICY product_change_read ON terra_gpu.product_change FOR SELECT
	USING (terra_gpu._product_readable(product) OR terra_gpu._product_owned(product));
CREATE POLICY product_change_write ON terra_gpu.product_change FOR ALL
	USING (terra_gpu._product_owned(product)) WITH CHECK (terra_gpu._product_owned(product));
CREATE POLICY product_seam_read ON terra_gpu.product_seam FOR SELECT
	USING (terra_gpu._product_readable(product) OR terra_gpu._product_owned(product));
CREATE POLICY product_seam_write ON terra_gpu.product_seam FOR ALL
	USING (terra_gpu._product_owned(product)) WITH CHECK (terra_gpu._product_owned(product));
GRANT SELECT, INSERT, UPDATE, DELETE ON terra_gpu.product, terra_gpu.product_tile,
	terra_gpu.product_change, terra_gpu.product_seam TO PUBLIC;
CREATE EVENT TRIGGER tg_product_dropped ON sql_drop
	WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED', 'DROP MATERIALIZED VIEW', 'DROP FOREIGN TABLE')
	EXECUTE FUNCTION terra_gpu.product_dropped();

-------------------------------------------------------------------------------
-- A fixed search_path for every function that resolves a name while it runs
-- (the SQL and PL/pgSQL bodies, and the C functions' own queries):
-- pg_catalog, PostGIS' schema, then pg_temp, so that no object of the
-- caller's search_path can stand in for one they call; this extension's own
-- objects are written schema-qualified.  The caller's path reaches only what
-- the caller wrote: tg_create_result's query and an unqualified result name
-- (its search_path argument).  Left out: the trigger functions (SECURITY
-- DEFINER, pinned where they are created to pg_catalog, pg_temp) and the C
-- helpers a query calls once per row, which run no query and look up no
-- name (a SET clause would cost each call a path change).  Keep this block
-- last: it covers every function created above, and an upgrade script ends
-- with it too.
-------------------------------------------------------------------------------
DO $$
DECLARE
	path text := (SELECT format('pg_catalog, %I, pg_temp', g.nspname)
				  FROM pg_catalog.pg_extension p JOIN pg_catalog.pg_namespace g ON g.oid = p.extnamespace
				  WHERE p.extname = 'postgis_raster');
	f regprocedure;
BEGIN
	FOR f IN SELECT p.oid FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_proc p ON p.oid = d.objid
			 WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.deptype = 'e'
			   AND d.refclassid = 'pg_catalog.pg_extension'::regclass
			   AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'terra_gpu')
			   AND NOT p.prosecdef
			   AND p.oid NOT IN ('terra_gpu.morton_col(bigint)'::pg_catalog.regprocedure,
								 'terra_gpu.morton_row(bigint)'::pg_catalog.regprocedure,
								 'terra_gpu._bmmq_rect_quadrants(integer, integer, bigint, integer, integer, integer, integer)'::pg_catalog.regprocedure,
								 'terra_gpu._bmmq_z_quadrants(integer, bigint, bigint)'::pg_catalog.regprocedure,
								 'terra_gpu._row_digest("any")'::pg_catalog.regprocedure,
								 'terra_gpu._raster_header(raster)'::pg_catalog.regprocedure,
								 'terra_gpu._raster_bands(raster)'::pg_catalog.regprocedure)
			 ORDER BY p.oid LOOP
		EXECUTE format('ALTER FUNCTION %s SET search_path = %s', f, path);
	END LOOP;
END $$;

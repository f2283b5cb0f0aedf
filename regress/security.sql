-- Safe in a shared database: every reproduction of a way a role could crash
-- the server, run code as another role, lock what it may not, read past row
-- security or run without bounds, each now a clean error (or no effect).
SET terra_gpu.backend = 'cpu';
SET extra_float_digits = 0;

\i regress/include/try.sql

SET client_min_messages = warning;
DROP ROLE IF EXISTS tg_sec_analyst;
DROP ROLE IF EXISTS tg_sec_viewer;
RESET client_min_messages;
CREATE ROLE tg_sec_analyst;
CREATE ROLE tg_sec_viewer;

-- a coverage of sixteen 8 x 8 tiles (32 x 32 cells, 10 m, EPSG:32632):
-- a valley falling south, tile ids 1..16 in rows
CREATE TABLE sec_dem (rid integer PRIMARY KEY, rast raster);
INSERT INTO sec_dem
SELECT 1 + tx + 4 * ty, ST_SetValues(
         ST_AddBand(ST_MakeEmptyRaster(8, 8, 600000 + 80 * tx, 5000320 - 80 * ty, 10, -10, 0, 0, 32632), '32BF'::text, 0, -9999),
         1, 1, 1, ARRAY(SELECT ARRAY(SELECT 100 + (31 - 8 * ty - r) + abs(8 * tx + c - 16)
                                     FROM generate_series(0, 7) c) FROM generate_series(0, 7) r)::float8[])
FROM generate_series(0, 3) tx, generate_series(0, 3) ty;
GRANT SELECT ON sec_dem TO tg_sec_analyst, tg_sec_viewer;

\x on
-------------------------------------------------------------------------------
-- 1. A column of another type than its argument names is refused (42804)
--    before a byte of it is read: a fixed-length column read as a raster
--    crashed the server.
-------------------------------------------------------------------------------
CREATE TABLE sec_y AS SELECT 1 AS rid, 2 AS v, 'x'::text AS t, 1.5::float8 AS f, rast FROM sec_dem WHERE rid = 1;
GRANT SELECT ON sec_y TO tg_sec_analyst;
SET ROLE tg_sec_analyst;
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_slope(coverage => 'sec_y', rast_column => 'v')$$);
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_fill(coverage => 'sec_y', rast_column => 'v')$$);
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_hydrology(coverage => 'sec_y', rast_column => 'v')$$);
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_stream_links(coverage => 'sec_y', rast_column => 'v')$$);
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_flow_accumulation(coverage => 'sec_y', rast_column => 'v')$$);
SELECT * FROM pg_temp.try($$SELECT tg_snap_pour_point(coverage => 'sec_y', rast_column => 'v', distance => 50,
                                                      point => ST_SetSRID(ST_MakePoint(600005, 5000315), 32632))$$);
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_slope(coverage => 'sec_y', rast_column => 't')$$);
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_slope(coverage => 'sec_y', rast_column => 'tableoid')$$);
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_slope(coverage => 'pg_catalog.pg_class', rast_column => 'relpages', id_column => 'oid')$$);
-- the tile id column: an integer type
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_slope(coverage => 'sec_y', id_column => 'f')$$);
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_slope(coverage => 'sec_y', id_column => 'ctid')$$);
-- an auxiliary coverage's column: the weight's
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_flow_accumulation(coverage => 'sec_dem', weight => 'sec_y'::regclass,
                                                                      weight_column => 'v')$$);
-- the BMMQ build's node reader, called directly
SELECT * FROM pg_temp.try($$SELECT terra_gpu._bmmq_build_nodes('sec_y'::regclass, 'v', 'rid', 1, ARRAY[1,2]::float8[], 'cpu')$$);
SELECT * FROM pg_temp.try($$SELECT terra_gpu._bmmq_build_nodes('sec_y'::regclass, 'rast', 't', 1, ARRAY[1,2]::float8[], 'cpu')$$);
SELECT * FROM pg_temp.try($$SELECT terra_gpu._bmmq_build_nodes(NULL, 'rast', 'rid', 1, ARRAY[1,2]::float8[], 'cpu')$$);
RESET ROLE;
\x off

-------------------------------------------------------------------------------
-- 2. No function runs on its caller's search_path: an analyst's
--    pg_catalog look-alike earlier on a superuser's path is never called.
-------------------------------------------------------------------------------
CREATE SCHEMA sec_analysis;
GRANT USAGE, CREATE ON SCHEMA sec_analysis TO tg_sec_analyst;
SET ROLE tg_sec_analyst;
CREATE FUNCTION sec_analysis.format(text, name, name) RETURNS text LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'the analyst''s format() ran as %', current_user; END $$;
CREATE FUNCTION sec_analysis.format(text, text) RETURNS text LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'the analyst''s format() ran as %', current_user; END $$;
CREATE FUNCTION sec_analysis.lower(text) RETURNS text LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'the analyst''s lower() ran as %', current_user; END $$;
CREATE FUNCTION sec_analysis.geometrytype(geometry) RETURNS text LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'the analyst''s geometrytype() ran as %', current_user; END $$;
CREATE FUNCTION sec_analysis.addrasterconstraints(name, name, name) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'the analyst''s addrasterconstraints() ran as %', current_user; END $$;
CREATE TABLE sec_analysis.spatial_ref_sys AS SELECT 32632 AS srid, '+proj=longlat' AS proj4text;
CREATE TABLE sec_analysis.sec_only_here AS SELECT 42 AS answer;
RESET ROLE;
SET search_path = sec_analysis, public;
SELECT tg_create_result('sec_slope', $$SELECT * FROM tg_slope(coverage => 'sec_dem')$$) AS written;
SELECT n.nspname AS created_in, count(*) AS tiles
FROM sec_analysis.sec_slope s, pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = 'sec_analysis.sec_slope'::regclass GROUP BY 1;
SELECT tg_create_result('public.sec_watershed', $$SELECT tg_watershed_polygon(coverage => 'sec_dem',
                        outlet => ST_SetSRID(ST_MakePoint(600165, 5000005), 32632)) AS geom$$) AS written;
SELECT ST_Area(geom) AS watershed_m2 FROM public.sec_watershed;
-- the caller's query, and only it, runs on the caller's path: its names resolve as written there
SELECT tg_create_result('sec_answer', 'SELECT answer FROM sec_only_here') AS written;
SELECT answer FROM sec_analysis.sec_answer;
RESET search_path;
DROP TABLE sec_analysis.sec_slope, public.sec_watershed, sec_analysis.sec_answer;

-- every function of the extension that resolves a name while it runs pins
-- its path to pg_catalog, PostGIS' schema, pg_temp; these per-row C helpers
-- resolve none and are left out (a SET clause costs each call)
SELECT p.oid::regprocedure AS unpinned, l.lanname
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
JOIN pg_language l ON l.oid = p.prolang
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu')
  AND NOT EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')
ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT DISTINCT c AS pinned_path
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e',
     unnest(p.proconfig) c
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu') AND c LIKE 'search_path=%'
ORDER BY 1;

-------------------------------------------------------------------------------
-- 3. Internal functions: none is executable by PUBLIC but the helpers the
--    documented functions call with their caller's rights (each checks its
--    input); the protocol between servers only by terra_gpu_parts.
-------------------------------------------------------------------------------
SELECT p.oid::regprocedure AS internal_for_public
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu')
  AND p.pronamespace = 'terra_gpu'::regnamespace AND has_function_privilege('public', p.oid, 'EXECUTE')
ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT p.oid::regprocedure AS not_for_public,
       has_function_privilege('terra_gpu_parts', p.oid, 'EXECUTE') AS parts_role
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu')
  AND NOT has_function_privilege('public', p.oid, 'EXECUTE')
ORDER BY p.oid::regprocedure::text COLLATE "C";
-- every function outside the internal schema is documented API (tg_*)
SELECT count(*) AS api_functions, bool_and(p.proname LIKE 'tg\_%') AS all_tg
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu')
  AND p.pronamespace <> 'terra_gpu'::regnamespace;
SET ROLE tg_sec_analyst;
\x on
SELECT * FROM pg_temp.try($$SELECT * FROM terra_gpu._parts_step('tg_fill', ARRAY['w1'], ARRAY['\x00'::bytea], NULL)$$);
SELECT * FROM pg_temp.try($$SELECT terra_gpu._part_exec('SELECT 1', '\x00'::bytea)$$);
SELECT * FROM pg_temp.try($$SELECT terra_gpu._part_run('tg_fill', 'sec_dem', '{}', '\x00'::bytea)$$);
\x off
RESET ROLE;
-- a packed reply that claims 512 MB from one byte of zlib stream is refused before any allocation
SELECT * FROM pg_temp.try($$SELECT * FROM terra_gpu._parts_step('tg_fill', ARRAY['w1'], ARRAY['\x018080808002ab'::bytea], NULL)$$);
-- the coordinator of a product's bands keeps its state in the backend, the
-- driver a token: only the token of the transaction's latest run is taken
BEGIN;
SELECT s.next_state AS first_run FROM terra_gpu._bands_step('tg_fill', ARRAY['band 0', 'band 1'], NULL, NULL) s \gset
SELECT s.phase, s.round, cardinality(s.messages) AS messages, octet_length(s.next_state) AS token_bytes,
	   s.next_state AS second_run
FROM terra_gpu._bands_step('tg_fill', ARRAY['band 0', 'band 1'], NULL, NULL) s \gset
SELECT :'phase' AS phase, :round AS round, :messages AS messages, :token_bytes AS token_bytes;
SELECT * FROM pg_temp.try(format('SELECT * FROM terra_gpu._bands_step(%L, ARRAY[%L, %L], NULL, %L::bytea)',
								 'tg_fill', 'band 0', 'band 1', :'first_run'));
-- the latest run's token is taken (then its replies are wanted)
SELECT * FROM pg_temp.try(format('SELECT * FROM terra_gpu._bands_step(%L, ARRAY[%L, %L], NULL, %L::bytea)',
								 'tg_fill', 'band 0', 'band 1', :'second_run'));
SELECT * FROM pg_temp.try($$SELECT * FROM terra_gpu._bands_step('tg_fill', ARRAY['band 0', 'band 1'], NULL, '\x00'::bytea)$$);
COMMIT;

-------------------------------------------------------------------------------
-- 4. The stale triggers of BMMQ indexes: only on tables the caller owns; a
--    view or a system catalog is refused before anything is locked.
-------------------------------------------------------------------------------
SET ROLE tg_sec_analyst;
\x on
SELECT * FROM pg_temp.try($$SELECT terra_gpu._bmmq_watch('pg_catalog.pg_tables'::regclass, true)$$);
SELECT * FROM pg_temp.try($$SELECT terra_gpu._bmmq_watch('pg_catalog.pg_class'::regclass, true)$$);
SELECT * FROM pg_temp.try($$SELECT terra_gpu._bmmq_watch('sec_dem'::regclass, true)$$);
SELECT * FROM pg_temp.try($$SELECT tg_bmmq_build('sec_theirs', 'sec_dem', bins => ARRAY[110])$$);
\x off
-- unwatching a table the caller does not own does nothing (no lock, no trigger dropped)
SELECT terra_gpu._bmmq_watch('pg_catalog.pg_class'::regclass, false);
RESET ROLE;
SELECT count(*) AS triggers_on_sec_dem FROM pg_trigger WHERE tgrelid = 'sec_dem'::regclass;

-------------------------------------------------------------------------------
-- 5. A BMMQ index honours the row security and the column privileges of its
--    source: a role sees quadrants, tiles and nodes of the rows it may read.
-------------------------------------------------------------------------------
SELECT tg_bmmq_build('sec_ix', 'sec_dem', bins => ARRAY[110, 120, 130]) > 0 AS built;
ALTER TABLE sec_dem ENABLE ROW LEVEL SECURITY;
CREATE POLICY sec_even ON sec_dem FOR SELECT TO tg_sec_viewer USING (rid % 2 = 0);
-- the owner (not bound by the policy) sees every tile
SELECT count(DISTINCT tile_id) AS owner_roi_tiles FROM tg_bmmq_roi('sec_ix', 100, 120);
SET ROLE tg_sec_viewer;
SELECT count(*) AS viewer_rows FROM sec_dem;
SELECT count(DISTINCT tile_id) AS roi_tiles, bool_and(tile_id % 2 = 0) AS only_even
FROM tg_bmmq_roi('sec_ix', 100, 120);
SELECT count(DISTINCT tile_id) AS refined_tiles, bool_and(tile_id % 2 = 0) AS only_even
FROM tg_bmmq_roi('sec_ix', 105, 125, refine => true);
SELECT count(DISTINCT tile_id) AS compound_tiles, bool_and(tile_id % 2 = 0) AS only_even
FROM tg_bmmq_roi(ARRAY['sec_ix', 'sec_ix'], ARRAY[100, 100], ARRAY[120, 130]);
SELECT count(DISTINCT tile_id) AS range_tiles, bool_and(tile_id % 2 = 0) AS only_even
FROM tg_bmmq_range('sec_ix', ST_MakeEnvelope(600000, 5000000, 600320, 5000320, 32632));
SELECT count(DISTINCT tile_id) AS node_tiles, bool_and(tile_id % 2 = 0) AS only_even FROM terra_gpu.bmmq_node;
SELECT count(*) AS tiles, bool_and(tile_id % 2 = 0) AS only_even FROM terra_gpu.bmmq_tile;
RESET ROLE;
DROP POLICY sec_even ON sec_dem;
ALTER TABLE sec_dem DISABLE ROW LEVEL SECURITY;
-- column privileges: SELECT on the id column alone shows no index, both columns do
REVOKE SELECT ON sec_dem FROM tg_sec_analyst;
GRANT SELECT (rid) ON sec_dem TO tg_sec_analyst;
SET ROLE tg_sec_analyst;
SELECT (pg_temp.try($$SELECT count(*) FROM tg_bmmq_roi('sec_ix', 100, 120)$$)).message AS roi_without_the_raster_column;
SELECT (SELECT count(*) FROM terra_gpu.bmmq_index) AS indexes, (SELECT count(*) FROM terra_gpu.bmmq_node) AS nodes;
RESET ROLE;
GRANT SELECT (rast) ON sec_dem TO tg_sec_analyst;
SET ROLE tg_sec_analyst;
SELECT count(DISTINCT tile_id) AS roi_tiles_with_both_columns FROM tg_bmmq_roi('sec_ix', 100, 120);
RESET ROLE;
SELECT tg_bmmq_drop('sec_ix');
REVOKE SELECT ON sec_dem FROM tg_sec_analyst;
GRANT SELECT ON sec_dem TO tg_sec_analyst;

-------------------------------------------------------------------------------
-- 6. One check of the georeference: geographic rows beyond the poles, and
--    numbers that are not finite, are refused before any work (22023).
-------------------------------------------------------------------------------
CREATE TABLE sec_polar AS
SELECT 1 AS rid, ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(6, 6, 8, 90.005, 0.01, -0.01, 0, 0, 4326), '32BF'::text, 0, NULL),
                    1, 1, 1, ARRAY[[9, 8, 7, 6, 5, 4], [8, 7, 6, 5, 4, 3], [7, 6, 5, 4, 3, 2],
                                   [6, 5, 4, 3, 2, 1], [5, 4, 3, 2, 1, 0], [4, 3, 2, 1, 0, 0]]::float8[]) AS rast;
\x on
SELECT * FROM pg_temp.try($$SELECT tg_basins(rast) FROM sec_polar$$);
SELECT * FROM pg_temp.try($$SELECT tg_subbasins(rast, threshold => 2) FROM sec_polar$$);
SELECT * FROM pg_temp.try($$SELECT tg_hand(rast, threshold => 2) FROM sec_polar$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_length(rast) FROM sec_polar$$);
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_flow_length(coverage => 'sec_polar')$$);
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_basins(coverage => 'sec_polar')$$);
SELECT * FROM pg_temp.try($$SELECT tg_slope(ST_SetGeoReference(rast, 8, -90.001, 0.01, 0.01, 0, 0)) FROM sec_polar$$);
SELECT * FROM pg_temp.try($$SELECT tg_fill(ST_AddBand(ST_MakeEmptyRaster(6, 6, 8, 'NaN', 0.01, -0.01, 0, 0, 4326), '32BF'::text, 1, NULL))$$);
SELECT * FROM pg_temp.try($$SELECT tg_fill(ST_AddBand(ST_MakeEmptyRaster(6, 6, 8, 50, 'Infinity', -0.01, 0, 0, 0), '32BF'::text, 1, NULL))$$);
\x off
-- within the poles, at the pole itself: fine
SELECT ST_Width(tg_flow_length(ST_SetGeoReference(rast, 8, 90, 0.01, -0.01, 0, 0))) AS at_the_pole FROM sec_polar;
DROP TABLE sec_polar;

-------------------------------------------------------------------------------
-- 7. Long loops listen to cancel: 100,000 pour points snapped over 1000 m
--    of a 300 x 300 grid (about half a minute) stop at the statement timeout.
-------------------------------------------------------------------------------
CREATE TEMP TABLE sec_wide AS
SELECT ST_MapAlgebra(ST_AddBand(ST_MakeEmptyRaster(300, 300, 500000, 4000000, 10, -10, 0, 0, 32632), '32BF'::text, 0, NULL),
                     1, '32BF', '[rast.y] * 0.5 + abs([rast.x] - 150) * 0.2') AS rast;
CREATE TEMP TABLE sec_points AS
SELECT array_agg(ST_SetSRID(ST_MakePoint(500005 + (i % 300) * 10, 3999995 - ((i / 300) % 300) * 10), 32632)) AS p
FROM generate_series(0, 99999) i;
SET statement_timeout = '3s';
\set VERBOSITY terse
SELECT ST_Width(tg_basins(w.rast, p.p, snap => 1000)) FROM sec_wide w, sec_points p;
\set VERBOSITY default
RESET statement_timeout;

-------------------------------------------------------------------------------
-- 8. The value forms obey terra_gpu.max_memory_mb too (54000 with the figure).
-------------------------------------------------------------------------------
SET terra_gpu.max_memory_mb = 10;
\x on
SELECT * FROM pg_temp.try($$SELECT tg_hydrology(ST_AddBand(ST_MakeEmptyRaster(2000, 2000, 0, 0, 1, -1, 0, 0, 0), '32BF'::text, 1, NULL))$$);
SELECT * FROM pg_temp.try($$SELECT tg_fill(ST_AddBand(ST_MakeEmptyRaster(2000, 2000, 0, 0, 1, -1, 0, 0, 0), '32BF'::text, 1, NULL))$$);
\x off
SELECT ST_Width(tg_fill(ST_AddBand(ST_MakeEmptyRaster(200, 200, 0, 0, 1, -1, 0, 0, 0), '32BF'::text, 1, NULL))) AS small_fits;
RESET terra_gpu.max_memory_mb;

-------------------------------------------------------------------------------
-- 9. Every function of the extension called by an unprivileged role with
--    every argument NULL: an answer or an error, never a crash.
-------------------------------------------------------------------------------
CREATE FUNCTION pg_temp.null_calls() RETURNS TABLE(calls bigint, answered bigint, refused bigint)
LANGUAGE plpgsql AS $$
DECLARE
	f record;
	ok bigint := 0;
	failed bigint := 0;
BEGIN
	FOR f IN SELECT p.oid, p.pronargs, p.proretset, n.nspname, p.proname,
					(SELECT string_agg(format('NULL::%s', format_type(t, NULL)), ', ' ORDER BY k)
					 FROM unnest(p.proargtypes) WITH ORDINALITY a(t, k)) AS args
			 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			 JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
			 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu')
			   AND p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype)
			 ORDER BY p.oid LOOP
		BEGIN
			EXECUTE format('SELECT count(*) FROM (SELECT %s%I.%I(%s)) s', CASE WHEN f.proretset THEN '* FROM ' ELSE '' END,
						   f.nspname, f.proname, coalesce(replace(f.args, 'NULL::"any"', 'NULL::float8'), ''));
			ok := ok + 1;
		EXCEPTION WHEN OTHERS THEN
			failed := failed + 1;
		END;
	END LOOP;
	RETURN QUERY SELECT ok + failed, ok, failed;
END $$;
SET ROLE tg_sec_analyst;
SELECT calls = (SELECT count(*) FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
				WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
				  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu')
				  AND p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype)) AS every_function,
       answered + refused = calls AS all_returned, answered > 40 AS many_answered FROM pg_temp.null_calls();
RESET ROLE;
SELECT 'the server is up' AS after_the_calls;

DROP TABLE sec_y, sec_dem;
DROP FUNCTION sec_analysis.format(text, name, name), sec_analysis.format(text, text), sec_analysis.lower(text),
	sec_analysis.geometrytype(geometry), sec_analysis.addrasterconstraints(name, name, name);
DROP TABLE sec_analysis.spatial_ref_sys, sec_analysis.sec_only_here;
DROP SCHEMA sec_analysis;
DROP ROLE tg_sec_analyst, tg_sec_viewer;

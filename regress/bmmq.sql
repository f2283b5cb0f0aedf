-- BMMQ-tree: node arrays, an indexed coverage, range and region-of-interest queries
SET terra_gpu.backend = 'cpu';
SET extra_float_digits = 0;

-- the hand-worked 4 x 4 tile: bins [2,3) [3,4) [4,5) and the codes below 2 (0) and >= 5 (4)
CREATE TEMP TABLE t4 AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(4, 4, 0, 4, 1, -1, 0, 0, 0), '16BSI'::text, 0, -9999),
       1, 1, 1, ARRAY[[1, 1, 2, 2],
                      [1, 1, 2, 2],
                      [3, 3, 4, 5],
                      [3, 3, 4, 4]]::float8[]) AS rast;
SELECT * FROM tg_bmmq((SELECT rast FROM t4), bins => ARRAY[2, 3, 4, 5]);
-- 3 x 3 with a nodata cell, padded to 4 x 4: nodata is code 2, padding code 3 (one boundary)
SELECT * FROM tg_bmmq(ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 3, 1, -1, 0, 0, 0), '16BSI'::text, 0, -9),
                      1, 1, 1, ARRAY[[1, 1, 7], [1, -9, 7], [7, 7, 7]]::float8[]), bins => ARRAY[5]) WHERE level <= 1;
-- computed bins: nbins equal intervals over the band's values (here boundaries 2, 3, 4)
SELECT count(*) AS nodes, max(max_bin) AS top_code FROM tg_bmmq((SELECT rast FROM t4), nbins => 4);

-- a coverage of four 3 x 2 tiles (6 x 4 cells, 10 m, EPSG:32632): value = 10 * row + col
CREATE TABLE bmmq_dem (rid integer PRIMARY KEY, rast raster);
INSERT INTO bmmq_dem
SELECT tx + 2 * ty + 1, ST_SetValues(
         ST_AddBand(ST_MakeEmptyRaster(3, 2, 600000 + 30 * tx, 5000020 - 20 * ty, 10, -10, 0, 0, 32632), '16BSI'::text, 0, -9999),
         1, 1, 1, ARRAY(SELECT ARRAY(SELECT 10 * (2 * ty + r) + 3 * tx + c FROM generate_series(0, 2) c)
                        FROM generate_series(0, 1) r)::float8[])
FROM generate_series(0, 1) tx, generate_series(0, 1) ty;
SELECT tg_bmmq_build('demo', 'bmmq_dem', bins => ARRAY[10, 20, 30]) AS id;
SELECT name, source, band, bounds, bin_method, srid, tile_count, node_count, cell_count, build_backend, stale
FROM terra_gpu.bmmq_index;
SELECT tile_id, levels, width, height FROM terra_gpu.bmmq_tile ORDER BY tile_id;
-- computed bins: quartiles of the 24 values 0..5, 10..15, 20..25, 30..35; equal intervals over 0..35
SELECT tg_bmmq_build('quartiles', 'bmmq_dem', nbins => 4, bin_method => 'quantile') > 0 AS built;
SELECT tg_bmmq_build('equal', 'bmmq_dem', nbins => 5) > 0 AS built;
SELECT name, bounds, bin_method FROM terra_gpu.bmmq_index WHERE name IN ('quartiles', 'equal') ORDER BY name;
SELECT tg_bmmq_drop('quartiles'), tg_bmmq_drop('equal');

-- range: the window's bounding box meets cells (1..3, 0..1) of the whole grid
SELECT tile_id, level, morton, min_bin, max_bin, value_from, value_to, ST_AsText(geom)
FROM tg_bmmq_range('demo', ST_MakeEnvelope(600015, 5000005, 600035, 5000015, 32632))
ORDER BY tile_id, level, morton;

-- ROI [10, 30): rows 1 and 2; bin-aligned, so no boundary quadrants
SELECT tile_id, level, morton, min_bin, max_bin, boundary, ST_AsText(geom)
FROM tg_bmmq_roi('demo', 10, 30) ORDER BY tile_id, level, morton;
-- [15, 25): partly inside codes 1 and 2: boundary leaves, or the exact cells with refine
SELECT count(*) FILTER (WHERE boundary) AS boundary_quadrants, count(*) FILTER (WHERE NOT boundary) AS inside
FROM tg_bmmq_roi('demo', 15, 25);
SELECT tile_id, ST_AsText(geom) FROM tg_bmmq_roi('demo', 15, 25, refine => true) ORDER BY 1, 2;

-- compound: a second, co-registered coverage (value = col) and the two combined
CREATE TABLE bmmq_col AS SELECT rid, ST_MapAlgebra(rast, '16BSI', '[rast]::integer % 10') AS rast FROM bmmq_dem;
SELECT tg_bmmq_build('cols', 'bmmq_col', bins => ARRAY[2, 4]) > 0 AS built;
-- rows 1..2 (value 10..29) and columns 2..3 (value 2..3)
SELECT tile_id, level, morton, boundary, ST_AsText(geom)
FROM tg_bmmq_roi(ARRAY['demo', 'cols'], ARRAY[10, 2], ARRAY[30, 4]) ORDER BY 1, 2, 3;
SELECT count(*) AS quadrants, sum(ST_Area(geom)) / 100 AS cells
FROM tg_bmmq_roi(ARRAY['demo', 'cols'], ARRAY[10, 2], ARRAY[30, 4], 'or');
-- the bounds as written without casts: integer or decimal arrays, and open ends as
-- ±Infinity in an array literal or a cast element, or NULL: rows 1..2, and columns 2..3 or, with
-- the open end, 2..5
SELECT f.form, count(*) AS quadrants, sum(ST_Area(r.geom)) / 100 AS cells
FROM (VALUES ('integers'), ('decimals'), ('literal with infinities'), ('cast infinities'),
             ('NULL for an open end')) AS f(form),
     LATERAL (SELECT * FROM tg_bmmq_roi(ARRAY['demo', 'cols'], ARRAY[10, 2], ARRAY[30, 4]) WHERE f.form = 'integers'
              UNION ALL
              SELECT * FROM tg_bmmq_roi(ARRAY['demo', 'cols'], ARRAY[10.0, 2], ARRAY[29.5, 3.5], refine => true)
              WHERE f.form = 'decimals'
              UNION ALL
              SELECT * FROM tg_bmmq_roi(ARRAY['demo', 'cols'], '{10, 2}', '{30, Infinity}')
              WHERE f.form = 'literal with infinities'
              UNION ALL
              SELECT * FROM tg_bmmq_roi(ARRAY['demo', 'cols'], ARRAY[10, 2], ARRAY[30, 'Infinity'::float8])
              WHERE f.form = 'cast infinities'
              UNION ALL
              SELECT * FROM tg_bmmq_roi(ARRAY['demo', 'cols'], ARRAY[10, 2], ARRAY[30, NULL])
              WHERE f.form = 'NULL for an open end') AS r
GROUP BY f.form ORDER BY f.form;

-- changing the source marks the index stale; queries refuse until refreshed
UPDATE bmmq_dem SET rast = ST_SetValue(rast, 1, 1, 1, 99) WHERE rid = 1;
SELECT name, stale FROM terra_gpu.bmmq_index ORDER BY name;
DO $$
BEGIN
  PERFORM * FROM tg_bmmq_roi('demo', 10, 30);
EXCEPTION WHEN object_not_in_prerequisite_state THEN
  RAISE NOTICE 'SQLSTATE %: %', SQLSTATE, SQLERRM;
END $$;
SELECT tg_bmmq_refresh('demo') = (SELECT id FROM terra_gpu.bmmq_index WHERE name = 'demo') AS same_id;
SELECT tile_id, level, morton, min_bin FROM tg_bmmq_roi('demo', 30, 'Infinity') ORDER BY 1, 2, 3;

-- statements that change no row leave the index fresh; one that does marks it stale
SELECT tgname FROM pg_trigger WHERE tgrelid = 'bmmq_dem'::regclass ORDER BY 1;
UPDATE bmmq_dem SET rid = rid WHERE false;
DELETE FROM bmmq_dem WHERE rid < 0;
INSERT INTO bmmq_dem SELECT * FROM bmmq_dem WHERE false;
SELECT name, stale FROM terra_gpu.bmmq_index WHERE name = 'demo';
UPDATE bmmq_dem SET rid = rid WHERE rid = 4;
SELECT name, stale FROM terra_gpu.bmmq_index WHERE name = 'demo';
SELECT tg_bmmq_refresh('demo') > 0 AS refreshed;

-- a renamed source keeps working (the catalog holds its OID), refresh included
ALTER TABLE bmmq_dem RENAME TO bmmq_dem_renamed;
SELECT name, source FROM terra_gpu.bmmq_index WHERE name = 'demo';
SELECT count(*) AS quadrants FROM tg_bmmq_roi('demo', 10, 30);
SELECT tg_bmmq_refresh('demo') > 0 AS refreshed;
ALTER TABLE bmmq_dem_renamed RENAME TO bmmq_dem;

-- a partitioned source: a write to a partition marks the parent's indexes stale
CREATE TABLE bmmq_part (rid integer, rast raster) PARTITION BY RANGE (rid);
CREATE TABLE bmmq_part_1 PARTITION OF bmmq_part FOR VALUES FROM (1) TO (3);
CREATE TABLE bmmq_part_2 PARTITION OF bmmq_part FOR VALUES FROM (3) TO (5);
INSERT INTO bmmq_part SELECT * FROM bmmq_dem;
SELECT tg_bmmq_build('part', 'bmmq_part', bins => ARRAY[10, 20, 30]) > 0 AS built;
SELECT count(*) AS quadrants FROM tg_bmmq_roi('part', 10, 30);
SELECT tgrelid::regclass AS "table", count(*) AS triggers FROM pg_trigger
WHERE tgname LIKE 'tg_bmmq_stale%' AND tgrelid::regclass::text LIKE 'bmmq_part%' GROUP BY 1 ORDER BY 1;
UPDATE bmmq_part_2 SET rid = rid WHERE false;
SELECT stale FROM terra_gpu.bmmq_index WHERE name = 'part';
UPDATE bmmq_part_2 SET rid = rid WHERE rid = 3;
SELECT stale FROM terra_gpu.bmmq_index WHERE name = 'part';
SELECT tg_bmmq_drop('part');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgname LIKE 'tg_bmmq_stale%' AND tgrelid::regclass::text LIKE 'bmmq_part%';
DROP TABLE bmmq_part;

-- errors as SQLSTATE and message, whoever runs them
CREATE FUNCTION bmmq_try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
  h text;
BEGIN
  EXECUTE q;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN format('ok, %s rows', n);
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
  RETURN SQLSTATE || ': ' || SQLERRM || coalesce(nullif(' (' || h || ')', ' ()'), '');
END $$;

-- roles: alice and carol may read bmmq_dem, bob may not
SET client_min_messages = warning;
DROP ROLE IF EXISTS tg_bmmq_alice;
DROP ROLE IF EXISTS tg_bmmq_bob;
DROP ROLE IF EXISTS tg_bmmq_carol;
RESET client_min_messages;
CREATE ROLE tg_bmmq_alice;
CREATE ROLE tg_bmmq_bob;
CREATE ROLE tg_bmmq_carol;
GRANT SELECT ON bmmq_dem TO tg_bmmq_alice, tg_bmmq_carol;
-- alice owns a copy, which carol may read too
CREATE TABLE bmmq_alice AS SELECT * FROM bmmq_dem;
ALTER TABLE bmmq_alice OWNER TO tg_bmmq_alice;
GRANT SELECT ON bmmq_alice TO tg_bmmq_carol;
-- alice queries the superuser's index, builds her own on her table, and may
-- not build one on a table she only reads (as CREATE INDEX)
SET ROLE tg_bmmq_alice;
SELECT count(*) AS quadrants FROM tg_bmmq_roi('demo', 10, 30);
SELECT count(*) AS quadrants FROM tg_bmmq_range('demo', ST_MakeEnvelope(600015, 5000005, 600035, 5000015, 32632));
SELECT tg_bmmq_build('alice_ix', 'bmmq_alice', bins => ARRAY[10, 20, 30]) > 0 AS built;
SELECT bmmq_try($$SELECT tg_bmmq_build('alice_dem', 'bmmq_dem', bins => ARRAY[10, 20, 30])$$);
SELECT name, owner FROM terra_gpu.bmmq_index ORDER BY name;
SELECT bmmq_try($$SELECT tg_bmmq_drop('demo')$$);
SELECT bmmq_try($$SELECT tg_bmmq_refresh('demo')$$);
SELECT bmmq_try($$SELECT tg_bmmq_build('cols2', 'bmmq_col', bins => ARRAY[2])$$);
RESET ROLE;
-- bob sees no index of a table he cannot read, and cannot index it
SET ROLE tg_bmmq_bob;
SELECT bmmq_try($$SELECT * FROM tg_bmmq_roi('demo', 10, 30)$$);
SELECT bmmq_try($$SELECT * FROM tg_bmmq_roi(ARRAY['alice_ix', 'demo'], ARRAY[10, 10], ARRAY[30, 30])$$);
SELECT bmmq_try($$SELECT tg_bmmq_build('bob_ix', 'bmmq_dem', bins => ARRAY[10])$$);
SELECT bmmq_try($$SELECT tg_bmmq_build('alice_ix', 'bmmq_alice', bins => ARRAY[10])$$);
SELECT (SELECT count(*) FROM terra_gpu.bmmq_index) AS indexes, (SELECT count(*) FROM terra_gpu.bmmq_tile) AS tiles,
       (SELECT count(*) FROM terra_gpu.bmmq_node) AS nodes;
RESET ROLE;
-- carol reads alice's index but cannot change or drop it, nor its rows
SET ROLE tg_bmmq_carol;
SELECT count(*) AS quadrants FROM tg_bmmq_roi('alice_ix', 10, 30);
SELECT bmmq_try($$SELECT tg_bmmq_drop('alice_ix')$$);
SELECT bmmq_try($$SELECT tg_bmmq_refresh('alice_ix')$$);
SELECT bmmq_try($$DELETE FROM terra_gpu.bmmq_node WHERE index_id = (SELECT id FROM terra_gpu.bmmq_index WHERE name = 'alice_ix')$$);
SELECT bmmq_try($$UPDATE terra_gpu.bmmq_index SET stale = true$$);
SELECT bmmq_try($$INSERT INTO terra_gpu.bmmq_node SELECT index_id, tile_id, 99, 0, 0, 0, 0, -1, -1, -1 FROM terra_gpu.bmmq_tile LIMIT 1$$);
SELECT bmmq_try($$INSERT INTO terra_gpu.bmmq_index (name, source, rast_column, id_column, band, bounds, bin_method, srid, owner)
                  VALUES ('fake', 'bmmq_dem', 'rast', 'rid', 1, '{1}', 'explicit', 32632, 'tg_bmmq_alice')$$);
SELECT name, stale, (SELECT count(*) FROM terra_gpu.bmmq_node n WHERE n.index_id = i.id) AS nodes
FROM terra_gpu.bmmq_index i ORDER BY name;
RESET ROLE;
-- a write by anyone marks every index of the table stale; alice refreshes and drops hers
UPDATE bmmq_dem SET rast = rast WHERE rid = 1;
UPDATE bmmq_alice SET rast = rast WHERE rid = 1;
SELECT name, stale FROM terra_gpu.bmmq_index ORDER BY name;
SET ROLE tg_bmmq_alice;
SELECT tg_bmmq_refresh('alice_ix') > 0 AS refreshed;
SELECT count(*) AS quadrants FROM tg_bmmq_roi('alice_ix', 10, 30);
SELECT tg_bmmq_drop('alice_ix');
RESET ROLE;
SELECT tg_bmmq_refresh('demo') > 0 AS refreshed;
-- without SELECT on the table alice no longer sees its index
REVOKE SELECT ON bmmq_dem FROM tg_bmmq_alice;
SET ROLE tg_bmmq_alice;
SELECT bmmq_try($$SELECT * FROM tg_bmmq_roi('demo', 10, 30)$$);
RESET ROLE;
DROP TABLE bmmq_alice;
DROP ROLE tg_bmmq_alice, tg_bmmq_bob;
REVOKE SELECT ON bmmq_dem FROM tg_bmmq_carol;
DROP ROLE tg_bmmq_carol;

-- a dropped source table takes its indexes along (event trigger) ...
CREATE TABLE bmmq_gone AS SELECT * FROM bmmq_dem;
SELECT tg_bmmq_build('gone', 'bmmq_gone', bins => ARRAY[10]) > 0 AS built;
DROP TABLE bmmq_gone;
SELECT count(*) AS indexes FROM terra_gpu.bmmq_index WHERE name = 'gone';
SELECT bmmq_try($$SELECT * FROM tg_bmmq_roi('gone', 10, 30)$$);
-- ... and where that trigger did not run, queries and refresh say so clearly
CREATE TABLE bmmq_gone AS SELECT * FROM bmmq_dem;
SELECT tg_bmmq_build('gone', 'bmmq_gone', bins => ARRAY[10]) > 0 AS built;
ALTER EVENT TRIGGER tg_bmmq_source_dropped DISABLE;
DROP TABLE bmmq_gone;
ALTER EVENT TRIGGER tg_bmmq_source_dropped ENABLE;
SELECT bmmq_try($$SELECT * FROM tg_bmmq_roi('gone', 10, 30)$$);
SELECT bmmq_try($$SELECT * FROM tg_bmmq_range('gone', ST_MakeEnvelope(0, 0, 1, 1, 32632))$$);
SELECT bmmq_try($$SELECT tg_bmmq_refresh('gone')$$);
SELECT tg_bmmq_drop('gone');

-- drop: the catalog, tiles and nodes go, and the triggers once no index uses the table
SELECT tg_bmmq_drop('cols'), tg_bmmq_drop('cols', if_exists => true);
SELECT tg_bmmq_drop('demo');
SELECT count(*) AS indexes, (SELECT count(*) FROM terra_gpu.bmmq_node) AS nodes,
       (SELECT count(*) FROM terra_gpu.bmmq_tile) AS tiles,
       (SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'tg_bmmq_stale%') AS triggers
FROM terra_gpu.bmmq_index;
DROP TABLE bmmq_col;

-- the extension in a schema outside the search_path: every internal call is qualified
DROP EXTENSION terra_gpu;
CREATE SCHEMA tg_elsewhere;
CREATE EXTENSION terra_gpu SCHEMA tg_elsewhere;
SHOW search_path;
SELECT tg_elsewhere.tg_bmmq_build('demo', 'bmmq_dem', bins => ARRAY[10, 20, 30]) > 0 AS built;
SELECT tg_elsewhere.tg_bmmq_build('again', 'bmmq_dem', nbins => 4, bin_method => 'quantile') > 0 AS built;
SELECT count(*) AS quadrants FROM tg_elsewhere.tg_bmmq_roi('demo', 15, 25, refine => true);
SELECT count(*) AS quadrants FROM tg_elsewhere.tg_bmmq_roi(ARRAY['demo', 'again'], ARRAY[10, 10], ARRAY[30, 30]);
UPDATE bmmq_dem SET rast = rast WHERE rid = 1;
SELECT tg_elsewhere.tg_bmmq_refresh('demo') > 0 AS refreshed;
SELECT count(*) AS quadrants FROM tg_elsewhere.tg_bmmq_range('demo', ST_MakeEnvelope(600015, 5000005, 600035, 5000015, 32632));
SELECT tg_elsewhere.tg_bmmq_drop('demo'), tg_elsewhere.tg_bmmq_drop('again');
-- result tables too: created where the caller's path points
SELECT tg_elsewhere.tg_create_result('slope_elsewhere', $$SELECT * FROM tg_elsewhere.tg_slope(coverage => 'bmmq_dem')$$) AS written;
SELECT srid, blocksize_x, blocksize_y FROM raster_columns WHERE r_table_name = 'slope_elsewhere';
DROP TABLE slope_elsewhere;
DROP EXTENSION terra_gpu;
DROP SCHEMA tg_elsewhere;
CREATE EXTENSION terra_gpu;
DROP TABLE bmmq_dem;
DROP FUNCTION bmmq_try(text);

\i regress/include/try.sql
-- errors
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

-- tg_bmmq_refresh rebuilds the trees of the tiles written since the last
-- build or refresh only (each tile has its own tree), and the result equals
-- a fresh build row for row: rounds of random edits (raise, lower, nodata
-- holes, tiles deleted, added, renumbered, emptied), then a TRUNCATE (a
-- full rebuild).  A 6 x 5 coverage of 5 x 4 tiles, random values 0..99.
CREATE TABLE bmmq_inc (rid integer PRIMARY KEY, rast raster);
SELECT setseed(0.46);
INSERT INTO bmmq_inc
SELECT tx + 6 * ty + 1, ST_SetValues(
         ST_AddBand(ST_MakeEmptyRaster(5, 4, 1000 + 5 * tx, 2000 - 4 * ty, 1, -1, 0, 0, 32632), '32BF'::text, 0, -9999),
         1, 1, 1, ARRAY(SELECT ARRAY(SELECT floor(random() * 100) + 0 * (r + tx + ty) FROM generate_series(1, 5) c)
                        FROM generate_series(1, 4) r)::float8[])
FROM generate_series(0, 5) tx, generate_series(0, 4) ty;
SELECT tg_bmmq_build('inc', 'bmmq_inc', bins => ARRAY[20, 40, 60, 80]) > 0 AS built;

-- one round of edits of tiles picked at random; returns the ids it wrote
CREATE FUNCTION pg_temp.bmmq_edit(seed float8, structural boolean) RETURNS integer[]
	LANGUAGE plpgsql AS $$
DECLARE
	ids integer[];
	fresh integer;
BEGIN
	PERFORM setseed(seed);
	SELECT array_agg(rid ORDER BY o) INTO ids
	FROM (SELECT rid, random() AS o FROM bmmq_inc WHERE rast IS NOT NULL ORDER BY rid) r;
	ids := ids[1:5];
	UPDATE bmmq_inc SET rast = ST_MapAlgebra(rast, 1, NULL, '[rast] + 25') WHERE rid = ids[1];
	UPDATE bmmq_inc SET rast = ST_MapAlgebra(rast, 1, NULL, '[rast] - 30') WHERE rid = ids[2];
	UPDATE bmmq_inc SET rast = ST_SetValues(rast, 1, 2, 2, ARRAY[[-9999, -9999], [-9999, -9999]]::float8[])
	WHERE rid = ids[3];
	IF NOT structural THEN
		RETURN ids[1:3];
	END IF;
	DELETE FROM bmmq_inc WHERE rid = ids[4];
	UPDATE bmmq_inc SET rid = rid + 100 WHERE rid = ids[5];
	fresh := (SELECT max(rid) + 1 FROM bmmq_inc);
	INSERT INTO bmmq_inc
	SELECT fresh, ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(5, 4, 1000 + 5 * (fresh % 9), 1980, 1, -1, 0, 0, 32632),
										  '32BF'::text, 0, -9999), 1, 1, 1, ARRAY[[10, 90], [50, 70]]::float8[]);
	RETURN ids || (ids[5] + 100) || fresh;
END $$;

-- the index against a fresh build with its bins: rows and counts
CREATE FUNCTION pg_temp.bmmq_same_as_fresh() RETURNS boolean
	LANGUAGE plpgsql AS $$
DECLARE
	ix terra_gpu.bmmq_index;
	f terra_gpu.bmmq_index;
	differing bigint;
BEGIN
	SELECT * INTO ix FROM terra_gpu.bmmq_index WHERE name = 'inc';
	PERFORM tg_bmmq_build('inc_fresh', 'bmmq_inc', bins => ix.bounds);
	SELECT * INTO f FROM terra_gpu.bmmq_index WHERE name = 'inc_fresh';
	WITH a AS (SELECT tile_id, levels, width, height, upperleft_x, upperleft_y, scale_x, scale_y
			   FROM terra_gpu.bmmq_tile WHERE index_id = ix.id),
		 b AS (SELECT tile_id, levels, width, height, upperleft_x, upperleft_y, scale_x, scale_y
			   FROM terra_gpu.bmmq_tile WHERE index_id = f.id),
		 an AS (SELECT tile_id, pos, level, morton, min_bin, max_bin, fc_pos, parent_min, parent_max
				FROM terra_gpu.bmmq_node WHERE index_id = ix.id),
		 bn AS (SELECT tile_id, pos, level, morton, min_bin, max_bin, fc_pos, parent_min, parent_max
				FROM terra_gpu.bmmq_node WHERE index_id = f.id)
	SELECT (SELECT count(*) FROM (TABLE a EXCEPT ALL TABLE b) x) + (SELECT count(*) FROM (TABLE b EXCEPT ALL TABLE a) x)
		 + (SELECT count(*) FROM (TABLE an EXCEPT ALL TABLE bn) x) + (SELECT count(*) FROM (TABLE bn EXCEPT ALL TABLE an) x)
	INTO differing;
	PERFORM tg_bmmq_drop('inc_fresh');
	RETURN differing = 0 AND f.node_count > 0 AND NOT ix.stale
		AND (ix.tile_count, ix.node_count, ix.cell_count) = (f.tile_count, f.node_count, f.cell_count);
END $$;

CREATE TEMP TABLE bmmq_round (round integer, wrote integer[]);
INSERT INTO bmmq_round SELECT 1, pg_temp.bmmq_edit(0.1, false);
BEGIN;
SELECT tg_bmmq_refresh('inc') > 0 AS refreshed;
-- the trees rebuilt are those of the tiles written (rows of this transaction)
SELECT (SELECT count(*) FROM terra_gpu.bmmq_tile t JOIN terra_gpu.bmmq_index i ON i.id = t.index_id
		WHERE i.name = 'inc' AND t.xmin = pg_current_xact_id()::xid) AS tiles_rebuilt,
	   (SELECT cardinality(ARRAY(SELECT DISTINCT unnest(wrote))) FROM bmmq_round WHERE round = 1) AS tiles_written;
COMMIT;
SELECT pg_temp.bmmq_same_as_fresh() AS same_as_fresh;

-- two rounds (one with deleted, renumbered and new tiles) before one refresh
INSERT INTO bmmq_round SELECT 2, pg_temp.bmmq_edit(0.2, true);
INSERT INTO bmmq_round SELECT 3, pg_temp.bmmq_edit(0.3, false);
BEGIN;
SELECT tg_bmmq_refresh('inc') > 0 AS refreshed;
-- rebuilt: the written tiles that still exist (a deleted one is only removed)
SELECT (SELECT count(*) FROM terra_gpu.bmmq_tile t JOIN terra_gpu.bmmq_index i ON i.id = t.index_id
		WHERE i.name = 'inc' AND t.xmin = pg_current_xact_id()::xid) AS tiles_rebuilt,
	   (SELECT count(*) FROM bmmq_inc WHERE rid IN (SELECT unnest(wrote) FROM bmmq_round WHERE round IN (2, 3)))
		 AS tiles_written_that_exist,
	   (SELECT count(*) FROM bmmq_inc) AS tiles;
COMMIT;
SELECT pg_temp.bmmq_same_as_fresh() AS same_as_fresh;
-- nothing written: nothing rebuilt
SELECT tg_bmmq_refresh('inc') > 0 AS refreshed, pg_temp.bmmq_same_as_fresh() AS same_as_fresh;
-- a tile emptied (rast NULL) leaves the index
UPDATE bmmq_inc SET rast = NULL WHERE rid = (SELECT min(rid) FROM bmmq_inc);
SELECT tg_bmmq_refresh('inc') > 0 AS refreshed, pg_temp.bmmq_same_as_fresh() AS same_as_fresh;
SELECT tile_count, (SELECT count(*) FROM bmmq_inc WHERE rast IS NOT NULL) AS tiles
FROM terra_gpu.bmmq_index WHERE name = 'inc';
-- after a TRUNCATE the changes are not all known: every tree is rebuilt
BEGIN;
CREATE TEMP TABLE bmmq_keep ON COMMIT DROP AS SELECT * FROM bmmq_inc;
TRUNCATE bmmq_inc;
INSERT INTO bmmq_inc SELECT * FROM bmmq_keep WHERE rid % 2 = 0;
COMMIT;
SELECT changes_recorded FROM terra_gpu.bmmq_index WHERE name = 'inc';
BEGIN;
SELECT tg_bmmq_refresh('inc') > 0 AS refreshed;
SELECT (SELECT count(*) FROM terra_gpu.bmmq_tile t JOIN terra_gpu.bmmq_index i ON i.id = t.index_id
		WHERE i.name = 'inc' AND t.xmin = pg_current_xact_id()::xid) AS tiles_rebuilt,
	   (SELECT count(*) FROM bmmq_inc WHERE rast IS NOT NULL) AS tiles;
COMMIT;
SELECT pg_temp.bmmq_same_as_fresh() AS same_as_fresh;
SELECT tg_bmmq_drop('inc');
DROP TABLE bmmq_inc;

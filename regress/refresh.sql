-- Products that know their recipe: tg_refresh after tile edits equals a full recompute
SET terra_gpu.backend = 'cpu';
SET client_min_messages = notice;
CREATE SCHEMA rf;

-- a 60 x 48 DEM (rolling hills, a pit) cut into 12 x 12 tiles: 5 x 4 tiles
CREATE TABLE rf.dem AS
SELECT (row_number() OVER ())::int AS rid, t AS rast
FROM (SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(60, 48, 500000, 4000480, 10, -10, 0, 0, 32632),
                                     '32BF'::text, 0, -9999), 1, 1, 1,
                          (SELECT array_agg(r ORDER BY y) FROM (
                             SELECT y, array_agg(100 + 20 * sin(x / 7.0) + 15 * cos(y / 5.0) + ((x * 37 + y * 11) % 13) / 4.0
                                                 ORDER BY x)::float8[] AS r
                             FROM generate_series(1, 60) x, generate_series(1, 48) y GROUP BY y) rows)) AS rast) d,
     ST_Tile(d.rast, 12, 12) AS t;
ALTER TABLE rf.dem ADD PRIMARY KEY (rid);
\i regress/include/try.sql

-- the rows of two products with the same tiles that differ in any raster
CREATE FUNCTION pg_temp.differing(a regclass, b regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	cond text;
	n bigint;
BEGIN
	SELECT string_agg(format('x.%1$I::bytea IS DISTINCT FROM y.%1$I::bytea', attname), ' OR ')
	INTO cond FROM pg_attribute WHERE attrelid = a AND atttypid = 'raster'::regtype AND NOT attisdropped;
	EXECUTE format('SELECT count(*) FROM %s x FULL JOIN %s y USING (rid) WHERE x.rid IS NULL OR y.rid IS NULL OR %s',
				   a, b, cond) INTO n;
	RETURN n;
END $$;
-- a product recomputed in full beside it
CREATE FUNCTION pg_temp.full_of(product regclass) RETURNS regclass LANGUAGE plpgsql AS $$
BEGIN
	RETURN tg_create_result(product::text || '_full', (SELECT query FROM terra_gpu.product p WHERE p.product = full_of.product),
							replace => true);
END $$;

SELECT tg_create_result('rf.slope', 'SELECT * FROM tg_slope(coverage => ''rf.dem'')');
SELECT tg_create_result('rf.terrain', 'SELECT rid, aspect, curvature FROM tg_terrain(coverage => ''rf.dem'', products => ARRAY[''aspect'', ''curvature''])');
SELECT tg_create_result('rf.geomorphons', 'SELECT * FROM tg_geomorphons(coverage => ''rf.dem'', search_radius => 14)');
SELECT tg_create_result('rf.hydro', 'SELECT * FROM tg_hydrology(coverage => ''rf.dem'')');
-- the recipes: source, function, halo in cells (NULL: global), change capture
SELECT product, source, function, halo, captured, retiled FROM terra_gpu.product ORDER BY product::text;
SELECT product::text, count(*) AS tiles FROM terra_gpu.product_tile GROUP BY 1 ORDER BY 1;
-- a query over no coverage, or without tile ids, has no recipe
SELECT tg_create_result('rf.no_ids', 'SELECT rast FROM tg_slope(coverage => ''rf.dem'')');
SELECT count(*) AS no_recipe FROM terra_gpu.product WHERE product = 'rf.no_ids'::regclass;
-- a rid that is no tile id (not an integer) is kept as a column like any other
SELECT tg_create_result('rf.text_ids', 'SELECT rid::text AS rid, rast FROM tg_slope(coverage => ''rf.dem'')');
SELECT count(*) AS rows, (SELECT count(*) FROM terra_gpu.product WHERE product = 'rf.text_ids'::regclass) AS no_recipe
FROM rf.text_ids;

-- nothing changed: nothing computed
SELECT * FROM tg_refresh('rf.slope');

-- edits: tile 7 raised 5 m, tile 14 lowered 3 m, a nodata hole in tile 20 (a corner)
UPDATE rf.dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 5') WHERE rid = 7;
UPDATE rf.dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] - 3') WHERE rid = 14;
UPDATE rf.dem SET rast = ST_SetValues(rast, 1, 3, 4, 5, 3, -9999) WHERE rid = 20;
SELECT product::text, array_agg(tile_id ORDER BY tile_id) AS changed FROM terra_gpu.product_change GROUP BY 1 ORDER BY 1;

SELECT * FROM tg_refresh('rf.slope');
SELECT pg_temp.differing('rf.slope', pg_temp.full_of('rf.slope')) AS slope_differing;
SELECT * FROM tg_refresh('rf.terrain');
SELECT pg_temp.differing('rf.terrain', pg_temp.full_of('rf.terrain')) AS terrain_differing;
SELECT * FROM tg_refresh('rf.geomorphons');
SELECT pg_temp.differing('rf.geomorphons', pg_temp.full_of('rf.geomorphons')) AS geomorphons_differing;
SELECT * FROM tg_refresh('rf.hydro');
SELECT pg_temp.differing('rf.hydro', pg_temp.full_of('rf.hydro')) AS hydrology_differing;
SELECT count(*) AS changes_left FROM terra_gpu.product_change;

-- a BMMQ-tree index of the source, which tg_refresh_all refreshes too
SELECT tg_bmmq_build('rf_ix', 'rf.dem', bins => ARRAY[90, 100, 110, 120]) > 0 AS built;

-- two batches of changes (a dam across tile 9, then tile 2 raised), then one
-- refresh; the source renamed between them
UPDATE rf.dem SET rast = ST_SetValues(rast, 1, 1, 6, 12, 1, 400) WHERE rid = 9;
ALTER TABLE rf.dem RENAME TO dem_v2;
UPDATE rf.dem_v2 SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 5') WHERE rid = 2;
SELECT source FROM terra_gpu.product WHERE product = 'rf.slope'::regclass;
SELECT * FROM tg_refresh_all('rf.dem_v2') ORDER BY product::text, bmmq_index;
-- the index refreshed equals a fresh build, node for node
SELECT tg_bmmq_build('rf_ix_fresh', 'rf.dem_v2', bins => ARRAY[90, 100, 110, 120]) > 0 AS built;
SELECT count(*) AS bmmq_nodes_differing
FROM (SELECT tile_id, pos, level, morton, min_bin, max_bin, fc_pos, parent_min, parent_max
	  FROM terra_gpu.bmmq_node n JOIN terra_gpu.bmmq_index i ON i.id = n.index_id WHERE i.name = 'rf_ix') a
FULL JOIN (SELECT tile_id, pos, level, morton, min_bin, max_bin, fc_pos, parent_min, parent_max
		   FROM terra_gpu.bmmq_node n JOIN terra_gpu.bmmq_index i ON i.id = n.index_id WHERE i.name = 'rf_ix_fresh') b
	USING (tile_id, pos, level, morton, min_bin, max_bin, fc_pos, parent_min, parent_max)
WHERE a.tile_id IS NULL OR b.tile_id IS NULL;
SELECT tg_bmmq_drop('rf_ix_fresh');
SELECT pg_temp.differing('rf.slope', pg_temp.full_of('rf.slope')) AS slope_differing,
       pg_temp.differing('rf.terrain', pg_temp.full_of('rf.terrain')) AS terrain_differing,
       pg_temp.differing('rf.hydro', pg_temp.full_of('rf.hydro')) AS hydrology_differing;
ALTER TABLE rf.dem_v2 RENAME TO dem;

-- the catalog's digest of each row (a refresh compares it with the new
-- row's instead of reading the stored one) is that of the stored row
CREATE FUNCTION pg_temp.digests_off(product regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM %s x FULL JOIN (SELECT * FROM terra_gpu.product_tile WHERE product = $1) t '
				   'ON t.tile_id = x.rid WHERE x.rid IS NULL OR t.tile_id IS NULL OR t.digest IS DISTINCT FROM %s',
				   product, (terra_gpu._product_columns(product, 'x')).digest) INTO n USING product;
	RETURN n;
END $$;
SELECT pg_temp.digests_off('rf.slope') AS slope, pg_temp.digests_off('rf.terrain') AS terrain,
       pg_temp.digests_off('rf.hydro') AS hydrology;
-- a product stored with pglz (the heap compresses the coverage form's plain
-- tiles): its digests describe the rows as the coverage form gives them, as
-- a refresh's do
SELECT tg_create_result('rf.slope_pglz', 'SELECT * FROM tg_slope(coverage => ''rf.dem'')', compression => 'pglz');
UPDATE rf.dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 1') WHERE rid = 15;
SELECT * FROM tg_refresh('rf.slope_pglz');
SELECT pg_temp.differing('rf.slope_pglz', pg_temp.full_of('rf.slope_pglz')) AS slope_pglz_differing;
UPDATE rf.dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 0') WHERE rid = 15;
SELECT * FROM tg_refresh('rf.slope_pglz');
SELECT pg_temp.differing('rf.slope_pglz', pg_temp.full_of('rf.slope_pglz')) AS slope_pglz_differing;
SELECT * FROM tg_refresh_all('rf.dem') ORDER BY product::text, bmmq_index;
-- tiles the heap does compress (two of 40 x 40 cells): a change that leaves
-- the values as they were rewrites none
CREATE TABLE rf.flat AS
SELECT (row_number() OVER ())::int AS rid, t AS rast
FROM ST_Tile(ST_AddBand(ST_MakeEmptyRaster(80, 40, 500000, 4000400, 10, -10, 0, 0, 32632), '32BF'::text, 100, -9999),
			 40, 40) AS t;
ALTER TABLE rf.flat ADD PRIMARY KEY (rid);
SELECT tg_create_result('rf.flat_pglz', 'SELECT * FROM tg_slope(coverage => ''rf.flat'')', compression => 'pglz');
SELECT array_agg(DISTINCT pg_column_compression(rast)) AS stored_as FROM rf.flat_pglz;
UPDATE rf.flat SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 0') WHERE rid = 1;
SELECT * FROM tg_refresh('rf.flat_pglz');

-- a failed refresh leaves the product and its pending changes as they were
UPDATE rf.dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 50') WHERE rid = 11;
CREATE FUNCTION pg_temp.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'no writes to % now', TG_TABLE_NAME;
END $$;
CREATE TRIGGER refuse BEFORE UPDATE ON rf.hydro FOR EACH ROW EXECUTE FUNCTION pg_temp.refuse();
CREATE TABLE rf.hydro_before AS SELECT * FROM rf.hydro;
SELECT * FROM pg_temp.try($$SELECT tg_refresh('rf.hydro')$$);
DROP TRIGGER refuse ON rf.hydro;
SELECT pg_temp.differing('rf.hydro', 'rf.hydro_before') AS hydrology_changed;
SELECT array_agg(tile_id) AS still_pending FROM terra_gpu.product_change WHERE product = 'rf.hydro'::regclass;
SELECT * FROM tg_refresh('rf.hydro');
SELECT pg_temp.differing('rf.hydro', pg_temp.full_of('rf.hydro')) AS hydrology_differing;

-- a tile removed: the tiling changed, a full recompute that drops its row
DELETE FROM rf.dem WHERE rid = 20;
SELECT * FROM tg_refresh('rf.slope');
SELECT pg_temp.differing('rf.slope', pg_temp.full_of('rf.slope')) AS slope_differing,
       (SELECT count(*) FROM rf.slope) AS tiles;

-- Global products refreshed in bands (a row of source tiles each): a 96 x 96
-- DEM that falls to the south, cut into 12 x 12 tiles (8 bands of 8 tiles),
-- and rounds of random tile edits; after each, every product equals a fresh
-- full recompute row for row
CREATE TABLE rf.slope_dem AS
SELECT (row_number() OVER ())::int AS rid, t AS rast
FROM (SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(96, 96, 500000, 4000960, 10, -10, 0, 0, 32632),
                                     '32BF'::text, 0, -9999), 1, 1, 1,
                          (SELECT array_agg(r ORDER BY y) FROM (
                             SELECT y, array_agg(300 - 2.0 * y + 6 * sin(x / 5.0) + 4 * cos(y / 6.0) + ((x * 37 + y * 11) % 13) / 4.0
                                                 ORDER BY x)::float8[] AS r
                             FROM generate_series(1, 96) x, generate_series(1, 96) y GROUP BY y) rows)) AS rast) d,
     ST_Tile(d.rast, 12, 12) AS t;
ALTER TABLE rf.slope_dem ADD PRIMARY KEY (rid);
SELECT tg_create_result('rf.b_hydro', 'SELECT * FROM tg_hydrology(coverage => ''rf.slope_dem'')');
SELECT tg_create_result('rf.b_hydro_mfd', 'SELECT * FROM tg_hydrology(coverage => ''rf.slope_dem'', routing => ''mfd-md'')');
SELECT tg_create_result('rf.b_fill', 'SELECT * FROM tg_fill(coverage => ''rf.slope_dem'')');
SELECT tg_create_result('rf.b_acc', 'SELECT * FROM tg_flow_accumulation(coverage => ''rf.slope_dem'')');
SELECT tg_create_result('rf.b_acc_mfd', 'SELECT * FROM tg_flow_accumulation(coverage => ''rf.slope_dem'', routing => ''mfd-md'')');
-- every product refreshed, with the rows of it that differ from the full recompute
CREATE FUNCTION pg_temp.refresh_bands() RETURNS TABLE (product text, mode text, tiles_changed integer,
	tiles_computed integer, tiles_rewritten integer, differing bigint) LANGUAGE plpgsql AS $$
DECLARE
	p regclass;
BEGIN
	FOR p IN SELECT x.product FROM terra_gpu.product x WHERE x.source = 'rf.slope_dem'::regclass
			 AND x.product::text NOT LIKE '%\_full' ORDER BY x.product::text LOOP
		product := p::text;
		SELECT r.mode, r.tiles_changed, r.tiles_computed, r.tiles_rewritten
		INTO mode, tiles_changed, tiles_computed, tiles_rewritten FROM tg_refresh(p) r;
		differing := pg_temp.differing(p, pg_temp.full_of(p));
		RETURN NEXT;
	END LOOP;
END $$;
-- the first refresh computes every band and keeps its seams; it rewrites
-- nothing but the tile raised (the bands compute what the single grid did)
UPDATE rf.slope_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 5') WHERE rid = 60;
SELECT * FROM pg_temp.refresh_bands();
SELECT product::text, count(DISTINCT band) AS bands, count(*) > 0 AS kept FROM terra_gpu.product_seam
WHERE product::text LIKE 'rf.b\_%' AND product::text NOT LIKE '%\_full' GROUP BY 1 ORDER BY 1;
-- one tile of the last band raised: the water goes south, off the grid; the
-- band above it receives the last band's changed first row, the six above
-- those receive the messages they did and are not computed (16 tiles of 64)
UPDATE rf.slope_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 5') WHERE rid = 61;
SELECT * FROM pg_temp.refresh_bands();
-- a fill with epsilon does not run in parts: recomputed in full, said why
SELECT tg_create_result('rf.fill_eps', 'SELECT * FROM tg_fill(coverage => ''rf.slope_dem'', epsilon => 0.001)');
UPDATE rf.slope_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 1') WHERE rid = 20;
SELECT * FROM tg_refresh('rf.fill_eps');
SELECT pg_temp.differing('rf.fill_eps', pg_temp.full_of('rf.fill_eps')) AS fill_eps_differing;
DROP TABLE rf.fill_eps, rf.fill_eps_full;
SELECT product, mode, differing FROM pg_temp.refresh_bands();
-- rounds of random edits: tiles raised, lowered, holes of nodata
SELECT setseed(0.46);
CREATE FUNCTION pg_temp.edit_round() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	t integer;
BEGIN
	FOR k IN 1..3 LOOP
		t := 1 + floor(random() * 64)::integer;
		CASE floor(random() * 3)::integer
			WHEN 0 THEN UPDATE rf.slope_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', format('[rast] + %s', 1 + floor(random() * 9))) WHERE rid = t;
			WHEN 1 THEN UPDATE rf.slope_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', format('[rast] - %s', 1 + floor(random() * 9))) WHERE rid = t;
			ELSE UPDATE rf.slope_dem SET rast = ST_SetValues(rast, 1, 1 + floor(random() * 8)::integer, 1 + floor(random() * 8)::integer,
															 4, 4, -9999) WHERE rid = t;
		END CASE;
	END LOOP;
END $$;
SELECT pg_temp.edit_round();
SELECT product, mode, differing FROM pg_temp.refresh_bands();
SELECT pg_temp.edit_round();
SELECT product, mode, differing FROM pg_temp.refresh_bands();
-- a dam: a wall across the whole grid in the fourth band, so that the bands
-- above drain off the grid's other edges instead of to the south; then a
-- trench in its place
UPDATE rf.slope_dem SET rast = ST_SetValues(rast, 1, 1, 6, 12, 1, 400) WHERE rid BETWEEN 25 AND 32;
SELECT * FROM pg_temp.refresh_bands();
UPDATE rf.slope_dem SET rast = ST_SetValues(rast, 1, 1, 6, 12, 1, 200) WHERE rid BETWEEN 25 AND 32;
SELECT * FROM pg_temp.refresh_bands();
-- two batches of changes, one refresh
SELECT pg_temp.edit_round();
SELECT pg_temp.edit_round();
SELECT product, mode, differing FROM pg_temp.refresh_bands();
-- a truncated source: a full recompute, its seams gone; the next refresh
-- computes every band again
TRUNCATE rf.slope_dem;
INSERT INTO rf.slope_dem SELECT * FROM rf.b_fill;
SELECT * FROM pg_temp.refresh_bands();
SELECT count(*) AS seams_left FROM terra_gpu.product_seam WHERE product::text LIKE 'rf.b\_%';
UPDATE rf.slope_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 2') WHERE rid = 5;
SELECT * FROM pg_temp.refresh_bands();
-- a tile missing inside a band (removed: a full recompute), then an edit
DELETE FROM rf.slope_dem WHERE rid = 36;
SELECT product, mode, differing FROM pg_temp.refresh_bands();
UPDATE rf.slope_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] - 4') WHERE rid = 35;
SELECT * FROM pg_temp.refresh_bands();
-- a whole row of tiles missing: the bands would not meet, a full recompute
DELETE FROM rf.slope_dem WHERE rid BETWEEN 41 AND 48;
UPDATE rf.slope_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 3') WHERE rid = 10;
SELECT product, mode, differing FROM pg_temp.refresh_bands();
UPDATE rf.slope_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 3') WHERE rid = 10;
SELECT product, mode, differing FROM pg_temp.refresh_bands();
-- a dropped product takes its seams with it
DROP TABLE rf.b_acc;
SELECT count(*) AS orphan_seams FROM terra_gpu.product_seam
WHERE product::oid NOT IN (SELECT product FROM terra_gpu.product);

-- only the product's owner refreshes it
CREATE ROLE tg_refresh_other;
GRANT USAGE ON SCHEMA rf TO tg_refresh_other;
GRANT SELECT ON rf.slope TO tg_refresh_other;
SET ROLE tg_refresh_other;
SELECT * FROM pg_temp.try($$SELECT tg_refresh('rf.slope')$$);
SELECT * FROM pg_temp.try($$SELECT tg_refresh('rf.hydro')$$);
SELECT * FROM pg_temp.try($$SELECT terra_gpu._product_band('rf.hydro', 0, '{1,2,3,4,5}', '\x00'::bytea)$$);
SELECT * FROM pg_temp.try($$SELECT terra_gpu._product_band_run('rf.hydro', '{1,2,3,4,5}', true)$$);
-- it sees the recipe of what it may read, and changes none
SELECT product FROM terra_gpu.product ORDER BY 1;
SELECT * FROM pg_temp.try($$DELETE FROM terra_gpu.product WHERE product = 'rf.slope'::regclass$$);
SELECT count(*) AS still_there FROM terra_gpu.product WHERE product = 'rf.slope'::regclass;
RESET ROLE;
SELECT * FROM pg_temp.try($$SELECT tg_refresh('rf.no_ids')$$);
-- a band's message is read as untrusted bytes: cut short, or of a band out of range
SELECT * FROM pg_temp.try($$SELECT terra_gpu._product_band('rf.hydro', 0, '{1,2,3,4,5}', '\x0054470001ff'::bytea)$$);
SELECT * FROM pg_temp.try($$SELECT terra_gpu._product_band('rf.hydro', -1, '{1,2,3,4,5}', '\x00'::bytea)$$);
SELECT set_config('terra_gpu.coverage_tiles', 'rf.dem'::regclass::oid || ':1,x', false) IS NOT NULL AS set;
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_slope(coverage => 'rf.dem')$$);
SELECT set_config('terra_gpu.coverage_tiles', 'rf.dem'::regclass::oid || ':1,2/', false) IS NOT NULL AS set;
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_slope(coverage => 'rf.dem')$$);
SELECT set_config('terra_gpu.coverage_tiles', 'rf.dem'::regclass::oid || ':1,2/1/2', false) IS NOT NULL AS set;
SELECT * FROM pg_temp.try($$SELECT count(*) FROM tg_slope(coverage => 'rf.dem')$$);
-- tiles read and, after the slash, the tiles whose results are given: those
-- equal the results of a call that reads every tile
SELECT set_config('terra_gpu.coverage_tiles', 'rf.dem'::regclass::oid || ':1,2,3,6,7,8,11,12,13/7,99', false) IS NOT NULL AS set;
CREATE TEMP TABLE some_tiles AS SELECT * FROM tg_slope(coverage => 'rf.dem');
RESET terra_gpu.coverage_tiles;
SELECT array_agg(s.rid) AS tiles_given, count(*) FILTER (WHERE s.rast::bytea = a.rast::bytea) AS equal_to_all_read
FROM some_tiles s JOIN tg_slope(coverage => 'rf.dem') a USING (rid);

-- A viewshed within max_distance reads only the tiles its observer's window
-- crosses (7 cells around cell 30, 30: 3 x 3 tiles): a change elsewhere
-- computes nothing, one within recomputes it; both equal a full recompute.
-- After a change of tiling any tile may matter again.
CREATE TABLE rf.view_dem AS SELECT * FROM rf.slope_dem;
ALTER TABLE rf.view_dem ADD PRIMARY KEY (rid);
SELECT tg_create_result('rf.view', $$SELECT * FROM tg_viewshed(coverage => 'rf.view_dem',
       observer => ST_SetSRID(ST_MakePoint(500305, 4000655), 32632), max_distance => 70)$$);
SELECT function, halo, reach FROM terra_gpu.product WHERE product = 'rf.view'::regclass;
UPDATE rf.view_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 50') WHERE rid IN (1, 9, 64);
SELECT * FROM tg_refresh('rf.view');
SELECT pg_temp.differing('rf.view', pg_temp.full_of('rf.view')) AS view_differing;
UPDATE rf.view_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 50') WHERE rid IN (1, 20);
SELECT * FROM tg_refresh('rf.view');
SELECT pg_temp.differing('rf.view', pg_temp.full_of('rf.view')) AS view_differing;
DELETE FROM rf.view_dem WHERE rid = 64;
SELECT * FROM tg_refresh('rf.view');
SELECT reach IS NULL AS any_tile_now FROM terra_gpu.product WHERE product = 'rf.view'::regclass;
UPDATE rf.view_dem SET rast = ST_MapAlgebra(rast, 1, '32BF', '[rast] + 50') WHERE rid = 1;
SELECT * FROM tg_refresh('rf.view');

-- rows of tiles on half a pixel (an SRTM grid's corners, rows of 13): the
-- rows meet, so a refresh runs in bands
CREATE TABLE rf.srtm AS
SELECT (row_number() OVER ())::int AS rid, t AS rast
FROM ST_Tile(ST_MapAlgebra(ST_AddBand(ST_MakeEmptyRaster(20, 65, 7.9995833333333334, 47.000416666666666,
                                                         0.00083333333333333333, -0.00083333333333333333, 0, 0, 4326),
                                      '16BSI'::text, 0, -9999),
                           1, '16BSI', '500 + ([rast.x] * 7 + [rast.y] * 13) % 23'), 20, 13) AS t;
ALTER TABLE rf.srtm ADD PRIMARY KEY (rid);
SELECT tg_create_result('rf.srtm_fill', 'SELECT * FROM tg_fill(coverage => ''rf.srtm'')');
UPDATE rf.srtm SET rast = ST_MapAlgebra(rast, 1, NULL, '[rast] + 5') WHERE rid = 3;
SELECT mode, tiles_changed FROM tg_refresh('rf.srtm_fill');
SELECT pg_temp.differing('rf.srtm_fill', pg_temp.full_of('rf.srtm_fill')) AS srtm_differing;

-- a dropped product takes its recipe, tiles and changes with it
DROP TABLE rf.slope;
SELECT count(*) AS recipes, (SELECT count(*) FROM terra_gpu.product_tile WHERE product::oid NOT IN (SELECT product FROM terra_gpu.product)) AS orphan_tiles
FROM terra_gpu.product;
DROP SCHEMA rf CASCADE;
SELECT count(*) AS recipes_left FROM terra_gpu.product;
DROP ROLE tg_refresh_other;

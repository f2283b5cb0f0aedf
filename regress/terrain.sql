-- tg_aspect, tg_hillshade, tg_tpi, tg_tri, tg_roughness, tg_curvature,
-- tg_geomorphons and tg_terrain: the local derivatives
SET terra_gpu.backend = 'cpu';
SET extra_float_digits = 0;

-- a 4x3 DEM with a nodata hole, 10 m cells
CREATE TEMP TABLE dem AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(4, 3, 0, 30, 10, -10, 0, 0, 32632), '16BSI'::text, 0, -9999),
                    1, 1, 1, ARRAY[[10, 12, 15, 19], [11, -9999, 18, 20], [13, 17, 22, 26]]::float8[]) AS rast;

-- aspect: clockwise from north, the hole stays nodata, its neighbours read the centre in its place
SELECT ST_DumpValues(tg_aspect(rast)) FROM dem;
-- ST_Aspect, ST_TPI, ST_TRI and ST_Roughness: the same values on every cell, edges included
-- (radians: PostGIS 3.3's ST_Aspect returns degrees when asked for them)
SELECT (SELECT ST_DumpValues(tg_aspect(rast))) = (SELECT ST_DumpValues(ST_Aspect(rast))) AS aspect,
       abs(ST_Value(tg_aspect(rast, units => 'RADIANS'), 1, 1) - radians(ST_Value(ST_Aspect(rast), 1, 1))) < 1e-6 AS aspect_radians,
       (SELECT ST_DumpValues(tg_tpi(rast))) = (SELECT ST_DumpValues(ST_TPI(rast))) AS tpi,
       (SELECT ST_DumpValues(tg_tri(rast))) = (SELECT ST_DumpValues(ST_TRI(rast))) AS tri,
       (SELECT ST_DumpValues(tg_roughness(rast))) = (SELECT ST_DumpValues(ST_Roughness(rast))) AS roughness
FROM dem;
-- a flat is -1; 3 x 3 windows worked by hand: TPI 14 - 118/8, TRI 26/8 (wilson), sqrt 120 (riley), roughness 12
CREATE TEMP TABLE win AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 30, 10, -10, 0, 0, 32632), '32BF'::text, 0, NULL),
                    1, 1, 1, ARRAY[[10, 12, 15], [11, 14, 18], [13, 17, 22]]::float8[]) AS rast;
SELECT ST_Value(tg_aspect(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 0), '8BUI'::text, 7, NULL)), 2, 2) AS flat_aspect,
       ST_Value(tg_aspect(rast), 2, 2) AS aspect, ST_Value(tg_tpi(rast), 2, 2) AS tpi,
       ST_Value(tg_tri(rast), 2, 2) AS wilson, round(ST_Value(tg_tri(rast, algorithm => 'riley'), 2, 2)::numeric, 5) AS riley,
       ST_Value(tg_roughness(rast), 2, 2) AS roughness
FROM win;

-- hillshade: ST_HillShade's value inside (it leaves the raster's edges NULL), gdaldem's bytes as 8BUI
SELECT ST_Value(tg_hillshade(rast), 2, 2) AS shade, ST_Value(ST_HillShade(rast), 2, 2) AS st_hillshade,
       ST_Value(tg_hillshade(rast, pixeltype => '8BUI'), 2, 2) AS gdaldem_byte,
       ST_BandNoDataValue(tg_hillshade(rast, pixeltype => '8BUI')) AS byte_nodata,
       round(ST_Value(tg_hillshade(rast, method => 'multidirectional'), 2, 2)::numeric, 3) AS multidirectional,
       round(ST_Value(tg_hillshade(rast, method => 'combined'), 2, 2)::numeric, 3) AS combined,
       round(ST_Value(tg_hillshade(rast, azimuth => 135, altitude => 30, max_bright => 1), 2, 2)::numeric, 4) AS from_south_east,
       round(ST_Value(tg_hillshade(rast, z_factor => 2), 2, 2)::numeric, 3) AS exaggerated
FROM win;
SELECT ST_DumpValues(tg_hillshade(rast, pixeltype => '8BUI')) FROM dem;

-- curvature (Evans-Young; convex positive, 1/m): a dome of radius 200 m has mean curvature 1/200 at its top
CREATE TEMP TABLE dome AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(5, 5, 0, 50, 10, -10, 0, 0, 32632), '64BF'::text, 0, NULL),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                  (SELECT y, array_agg(500 - ((10 * (x - 2)) ^ 2 + (10 * (y - 2)) ^ 2) / 400.0 ORDER BY x) AS r
                   FROM generate_series(0, 4) x, generate_series(0, 4) y GROUP BY y) rows)) AS rast;
SELECT t, round(ST_Value(tg_curvature(rast, type => t, pixeltype => '64BF'), 3, 3)::numeric, 8) AS top
FROM dome, unnest(ARRAY['mean', 'gaussian', 'minimal', 'maximal', 'total', 'profile', 'plan', 'tangential']) AS t;
SELECT round(ST_Value(tg_curvature(rast, type => 'profile'), 2, 2)::numeric, 5) AS profile,
       round(ST_Value(tg_curvature(rast, type => 'plan'), 2, 2)::numeric, 5) AS plan,
       round(ST_Value(tg_curvature(rast, type => 'tangential'), 2, 2)::numeric, 5) AS tangential
FROM win;

-- geomorphons: 1 flat ... 10 pit, 8BUI with nodata 0; the dome's top is a peak, a bowl's bottom a pit
SELECT ST_DumpValues(tg_geomorphons(rast, search_radius => 2)) FROM dome;
SELECT ST_Value(tg_geomorphons(ST_MapAlgebra(rast, '64BF', '1000 - [rast]'), search_radius => 2), 3, 3) AS bowl,
       ST_BandPixelType(tg_geomorphons(rast)), ST_BandNoDataValue(tg_geomorphons(rast))
FROM dome;

-- tg_terrain: the products asked for, from one pass, equal to the single functions; the others NULL
SELECT (SELECT ST_DumpValues(t.slope)) = (SELECT ST_DumpValues(tg_slope(rast))) AS slope,
       (SELECT ST_DumpValues(t.aspect)) = (SELECT ST_DumpValues(tg_aspect(rast))) AS aspect,
       (SELECT ST_DumpValues(t.hillshade)) = (SELECT ST_DumpValues(tg_hillshade(rast))) AS hillshade,
       t.tpi IS NULL AS no_tpi, t.geomorphons IS NULL AS no_geomorphons
FROM dem, tg_terrain(rast) AS t;
SELECT (SELECT ST_DumpValues(t.tri)) = (SELECT ST_DumpValues(tg_tri(rast, algorithm => 'riley'))) AS tri,
       (SELECT ST_DumpValues(t.curvature)) = (SELECT ST_DumpValues(tg_curvature(rast, type => 'mean'))) AS curvature,
       (SELECT ST_DumpValues(t.geomorphons)) = (SELECT ST_DumpValues(tg_geomorphons(rast, search_radius => 2))) AS geomorphons,
       t.slope IS NULL AS no_slope
FROM dome, tg_terrain(rast, products => ARRAY['geomorphons', 'tri', 'curvature'], tri_algorithm => 'riley',
                      curvature_type => 'mean', search_radius => 2) AS t;

-- coverage form: a 9 x 7 DEM in tiles of 4 x 3 equals the value form on the whole (no seams)
CREATE TEMP TABLE whole AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(9, 7, 0, 70, 10, -10, 0, 0, 32632), '16BSI'::text, 0, -9999),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                  (SELECT y, array_agg(CASE WHEN x = 4 AND y = 3 THEN -9999 ELSE (x * 7 + y * 13) % 23 + x * y END ORDER BY x) AS r
                   FROM generate_series(0, 8) x, generate_series(0, 6) y GROUP BY y) rows)) AS rast;
CREATE TEMP TABLE tiles AS SELECT (row_number() OVER ())::int AS rid, t AS rast FROM whole, ST_Tile(rast, 4, 3) AS t;
SELECT p, (SELECT ST_DumpValues(ST_Union(c.rast)) FROM tg_terrain(coverage => 'tiles', products => ARRAY[p], search_radius => 3) AS t,
              LATERAL (SELECT CASE p WHEN 'slope' THEN t.slope WHEN 'aspect' THEN t.aspect WHEN 'hillshade' THEN t.hillshade
                                     WHEN 'tpi' THEN t.tpi WHEN 'tri' THEN t.tri WHEN 'roughness' THEN t.roughness
                                     WHEN 'curvature' THEN t.curvature ELSE t.geomorphons END AS rast) AS c)
        = (SELECT ST_DumpValues(CASE p WHEN 'slope' THEN t.slope WHEN 'aspect' THEN t.aspect WHEN 'hillshade' THEN t.hillshade
                                     WHEN 'tpi' THEN t.tpi WHEN 'tri' THEN t.tri WHEN 'roughness' THEN t.roughness
                                     WHEN 'curvature' THEN t.curvature ELSE t.geomorphons END)
           FROM whole, tg_terrain(rast, products => ARRAY[p], search_radius => 3) AS t) AS seamless
FROM unnest(ARRAY['slope', 'aspect', 'hillshade', 'tpi', 'tri', 'roughness', 'curvature', 'geomorphons']) AS p;
SELECT count(*) AS tiles, bool_and(ST_MetaData(h.rast) = ST_MetaData(t.rast)) AS same_extents
FROM tg_hillshade(coverage => 'tiles') h JOIN tiles t USING (rid);
-- beyond terra_gpu.max_memory_mb the coverage runs in strips of tile rows with the halo its window needs:
-- a 300 x 200 DEM in 20 x 20 tiles needs about 4 MB for every product; 1 MB here: the same tiles
CREATE TEMP TABLE wide AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(300, 200, 0, 200, 10, -10, 0, 0, 32632), '16BSI'::text, 0, -9999),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                  (SELECT y, array_agg(CASE WHEN (x * 7 + y * 13) % 97 = 0 THEN -9999
                                            ELSE (100 + 40 * sin(x / 23.0) * cos(y / 17.0) + (x * 31 + y * 17) % 13)::int END
                                       ORDER BY x) AS r
                   FROM generate_series(0, 299) x, generate_series(0, 199) y GROUP BY y) rows)) AS rast;
CREATE TEMP TABLE wide_tiles AS SELECT (row_number() OVER ())::int AS rid, t AS rast FROM wide, ST_Tile(rast, 20, 20) AS t;
CREATE TEMP TABLE in_memory AS
SELECT * FROM tg_terrain(coverage => 'wide_tiles', products => ARRAY['slope', 'aspect', 'hillshade', 'tpi', 'tri', 'roughness', 'curvature', 'geomorphons'], search_radius => 6);
SET client_min_messages = warning;		-- the run in strips says so
SET terra_gpu.max_memory_mb = 1;
CREATE TEMP TABLE in_strips AS
SELECT * FROM tg_terrain(coverage => 'wide_tiles', products => ARRAY['slope', 'aspect', 'hillshade', 'tpi', 'tri', 'roughness', 'curvature', 'geomorphons'], search_radius => 6);
SELECT method, note FROM tg_last_run();
RESET terra_gpu.max_memory_mb;
RESET client_min_messages;
SELECT count(*) AS tiles,
       count(*) FILTER (WHERE ST_AsBinary(s.slope) = ST_AsBinary(m.slope) AND ST_AsBinary(s.aspect) = ST_AsBinary(m.aspect)
                          AND ST_AsBinary(s.hillshade) = ST_AsBinary(m.hillshade) AND ST_AsBinary(s.tpi) = ST_AsBinary(m.tpi)
                          AND ST_AsBinary(s.tri) = ST_AsBinary(m.tri) AND ST_AsBinary(s.roughness) = ST_AsBinary(m.roughness)
                          AND ST_AsBinary(s.curvature) = ST_AsBinary(m.curvature)
                          AND ST_AsBinary(s.geomorphons) = ST_AsBinary(m.geomorphons)) AS identical
FROM in_strips s JOIN in_memory m USING (rid);
-- tg_create_result keeps the columns of the products asked for
SELECT tg_create_result('terrain_result', $$SELECT * FROM tg_terrain(coverage => 'tiles', products => ARRAY['slope', 'hillshade'])$$);
SELECT r_raster_column, pixel_types FROM raster_columns WHERE r_table_name = 'terrain_result' ORDER BY 1;
DROP TABLE terrain_result;

-- errors
\i regress/include/try.sql
SELECT * FROM pg_temp.try($$SELECT tg_aspect(rast, units => 'PERCENT') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_tpi(rast, pixeltype => '8BUI') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_hillshade(rast, altitude => 91) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_hillshade(rast, method => 'igor') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_hillshade(rast, z_factor => 0) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_tri(rast, algorithm => NULL) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_curvature(rast, type => 'twisted') FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_geomorphons(rast, search_radius => 0) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_geomorphons(rast, search_radius => 3, skip => 3) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_geomorphons(rast, search_radius => 5000) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_geomorphons(rast, flat_threshold => -1) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_terrain(rast, products => ARRAY[]::text[]) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_terrain(rast, products => ARRAY['slope', 'Slope']) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_terrain(rast, products => ARRAY['slope', NULL]) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_terrain(rast, products => ARRAY['openness']) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT tg_terrain(rast, products => NULL) FROM dem$$);
SELECT * FROM pg_temp.try($$SELECT * FROM tg_terrain(coverage => 'no_such_table')$$);
-- 54000: a 65535 x 65535 header would need a 16 GB result, refused before the value is read
CREATE FUNCTION pg_temp.raster_from_bytes(bytea) RETURNS raster LANGUAGE internal IMMUTABLE STRICT AS 'byteasend';
CREATE FUNCTION pg_temp.raster_bytes(raster) RETURNS bytea LANGUAGE internal IMMUTABLE STRICT AS 'byteasend';
SELECT * FROM pg_temp.try($$SELECT tg_terrain(pg_temp.raster_from_bytes(overlay(pg_temp.raster_bytes(rast) placing '\xffffffff'::bytea from 57))) FROM dem$$);
SELECT tg_aspect(NULL::raster) IS NULL AS null_gives_null;

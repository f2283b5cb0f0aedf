-- Viewshed (value form) and the cumulative viewshed
SET terra_gpu.backend = 'cpu';
SET extra_float_digits = 0;

-- one row of 1 m cells: the observer at x = 0 (eye 2 m above 0), a 10 m wall at x = 5
CREATE TEMP TABLE wall AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(12, 1, 0, 1, 1, -1, 0, 0, 0), '32BF'::text, 0, -9999),
       1, 1, 1, ARRAY[[0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0]]::float8[]) AS rast;
-- visible: 1 up to the wall's top, 0 in its shadow (flat Earth)
SELECT ST_DumpValues(tg_viewshed(rast, ST_MakePoint(0.5, 0.5), observer_height => 2, earth_radius => 0)) FROM wall;
-- height: how much higher a target must be, (8 / 5) x - 2 behind the wall
SELECT ST_DumpValues(tg_viewshed(rast, ST_MakePoint(0.5, 0.5), observer_height => 2, earth_radius => 0,
                                 output => 'height')) FROM wall;
-- angle (degrees) of each cell seen from the eye; the observer's own cell has none
SELECT (ST_DumpValues(tg_viewshed(rast, ST_MakePoint(0.5, 0.5), observer_height => 2, earth_radius => 0,
                                  output => 'angle'))).valarray[1][1:6] FROM wall;
-- an 18 m target 10 m out is just visible; max_distance leaves the rest nodata
SELECT ST_DumpValues(tg_viewshed(rast, ST_MakePoint(0.5, 0.5), observer_height => 2, target_height => 18,
                                 max_distance => 10.5, earth_radius => 0)) FROM wall;
SELECT ST_BandPixelType(v), ST_BandNoDataValue(v), ST_MetaData(v) = ST_MetaData(rast) AS same_georeference
FROM wall, tg_viewshed(rast, ST_MakePoint(0.5, 0.5)) v;

-- a calm sea of 100 m cells seen from 10 m: the horizon lies near sqrt(2 R h / (1 - k)) = 12.2 km
CREATE TEMP TABLE sea AS
SELECT ST_AddBand(ST_MakeEmptyRaster(300, 1, 500000, 5000100, 100, -100, 0, 0, 32632), '16BSI'::text, 0, NULL) AS rast;
SELECT (min(x) - 1) * 100 AS first_hidden_m
FROM sea, generate_series(1, 300) x
WHERE ST_Value(tg_viewshed(rast, ST_SetSRID(ST_MakePoint(500050, 5000050), 32632), observer_height => 10), x, 1) = 0;

-- R2 and the exact R3 on a small hill
CREATE TEMP TABLE hill AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(41, 31, 0, 310, 10, -10, 0, 0, 0), '32BF'::text, 0, NULL),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                  (SELECT y, array_agg(100 + 30 * sin(x / 6.0) * cos(y / 5.0) ORDER BY x) AS r
                   FROM generate_series(0, 40) x, generate_series(0, 30) y GROUP BY y) rows)) AS rast;
SELECT count(*) AS cells, count(*) FILTER (WHERE a = b) AS agree
FROM hill,
     unnest((ST_DumpValues(tg_viewshed(rast, ST_MakePoint(105, 155)), 1)),
            (ST_DumpValues(tg_viewshed(rast, ST_MakePoint(105, 155), algorithm => 'r3'), 1))) AS u(a, b);

-- cumulative: from both ends of the wall row, the wall is seen twice
SELECT ST_DumpValues(tg_viewshed_count(rast, ARRAY[ST_MakePoint(0.5, 0.5), ST_MakePoint(11.5, 0.5)],
                                       observer_height => 2, earth_radius => 0)) FROM wall;
SELECT ST_BandPixelType(tg_viewshed_count(rast, ARRAY[ST_MakePoint(0.5, 0.5)])) FROM wall;

-- coverage form: the hill cut into 16 x 16 tiles (one missing) gives the value form's
-- result on the whole grid, tile by tile; sight lines cross the tile edges
CREATE TEMP TABLE hill_tiles AS
SELECT row_number() OVER () AS rid, t AS rast FROM hill, ST_Tile(rast, 16, 16) t;
DELETE FROM hill_tiles WHERE rid = 5;
CREATE TEMP TABLE hill_holed AS
SELECT ST_MapAlgebra(ST_Union(h.rast), 1, NULL, '[rast]') AS rast FROM hill_tiles h;
SELECT count(*) AS tiles,
       bool_and(ST_MetaData(v.rast) = ST_MetaData(h.rast)) AS same_extents,
       bool_and(ST_BandPixelType(v.rast) = '8BUI') AS byte_tiles
FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_MakePoint(105, 155)) v JOIN hill_tiles h USING (rid);
SELECT o AS output, count(*) AS cells, count(*) FILTER (WHERE a IS NOT DISTINCT FROM b) AS equal
FROM unnest(ARRAY['visible', 'angle', 'height']) o,
     LATERAL (SELECT ST_Union(v.rast) AS r
              FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_MakePoint(105, 155), output => o) v) c,
     LATERAL (SELECT tg_viewshed(rast, ST_MakePoint(105, 155), output => o) AS r FROM hill_holed) w,
     unnest((ST_DumpValues(c.r, 1)), (ST_DumpValues(w.r, 1))) AS u(a, b)
GROUP BY o ORDER BY o;
SELECT count(*) AS cells, count(*) FILTER (WHERE a IS NOT DISTINCT FROM b) AS equal
FROM (SELECT ST_Union(v.rast) AS r FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_MakePoint(105, 155),
                                                    algorithm => 'r3', max_distance => 150) v) c,
     (SELECT tg_viewshed(rast, ST_MakePoint(105, 155), algorithm => 'r3', max_distance => 150) AS r FROM hill_holed) w,
     unnest((ST_DumpValues(c.r, 1)), (ST_DumpValues(w.r, 1))) AS u(a, b);
SELECT count(*) AS cells, count(*) FILTER (WHERE a IS NOT DISTINCT FROM b) AS equal, max(a) AS most
FROM (SELECT ST_Union(v.rast) AS r
      FROM tg_viewshed_count(coverage => 'hill_tiles', observers => ARRAY[ST_MakePoint(105, 155), ST_MakePoint(305, 255)]) v) c,
     (SELECT tg_viewshed_count(rast, ARRAY[ST_MakePoint(105, 155), ST_MakePoint(305, 255)]) AS r FROM hill_holed) w,
     unnest((ST_DumpValues(c.r, 1)), (ST_DumpValues(w.r, 1))) AS u(a, b);
-- bad input (the observer at 250, 100 stands in the missing tile)
SELECT count(*) FROM tg_viewshed(coverage => 'hill_tiles', observer => NULL);
SELECT count(*) FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_MakePoint(1000, 155));
SELECT count(*) FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_SetSRID(ST_MakePoint(105, 155), 4326));
SELECT count(*) FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_MakeLine(ST_MakePoint(105, 155), ST_MakePoint(115, 155)));
SELECT count(*) FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_MakePoint(105, 155), output => 'colour');
SELECT count(*) FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_MakePoint(105, 155), algorithm => 'r5');
SELECT count(*) FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_MakePoint(105, 155), observer_height => -1);
SELECT count(*) FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_MakePoint(105, 155), band => 2);
SELECT count(*) FROM tg_viewshed(coverage => 'hill_tiles', observer => ST_MakePoint(250, 100));
SELECT count(*) FROM tg_viewshed_count(coverage => 'hill_tiles', observers => ARRAY[]::geometry[]);
SELECT count(*) FROM tg_viewshed_count(coverage => 'hill_tiles', observers => ARRAY[ST_MakePoint(105, 155), ST_MakePoint(1000, 0)]);

\i regress/include/try.sql
-- errors
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

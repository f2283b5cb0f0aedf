-- Depression filling, flow directions and flow accumulation (value form)
SET terra_gpu.backend = 'cpu';
SET extra_float_digits = 0;

-- a pit whose only way out is the 8 on the east edge; 1 m cells, no SRID
CREATE TEMP TABLE pit AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(5, 5, 0, 5, 1, -1, 0, 0, 0), '16BSI'::text, 0, -9999),
       1, 1, 1, ARRAY[[9, 9, 9, 9, 9],
                      [9, 5, 5, 5, 9],
                      [9, 5, 1, 5, 8],
                      [9, 5, 5, 5, 9],
                      [9, 9, 9, 9, 9]]::float8[]) AS rast;

-- fill: the pit rises to its spill level; both methods give the same surface
SELECT ST_DumpValues(tg_fill(rast)) FROM pit;
SELECT (SELECT ST_DumpValues(tg_fill(rast, method => 'planchon-darboux')))
     = (SELECT ST_DumpValues(tg_fill(rast, method => 'priority-flood'))) AS same_surface
FROM pit;
-- epsilon: each cell rises epsilon above its way out (a 64BF DEM keeps 64BF)
SELECT ST_DumpValues(tg_fill(ST_MapAlgebra(rast, '64BF', '[rast]'), epsilon => 0.5)) FROM pit;
SELECT ST_BandPixelType(tg_fill(rast)) AS from_int16, ST_BandPixelType(tg_fill(ST_MapAlgebra(rast, '64BF', '[rast]'))) AS from_64bf,
       ST_BandNoDataValue(tg_fill(rast)) AS nodata, ST_MetaData(tg_fill(rast)) = ST_MetaData(rast) AS same_georeference
FROM pit;

-- nodata stays nodata, and a cell next to nodata is an outlet (never raised)
SELECT ST_DumpValues(tg_fill(ST_SetValue(rast, 3, 1, -9999))) FROM pit;

-- breaching instead (Lindsay 2016): the pit keeps its 1 and its way out is cut
-- down to it, through the 5 the flood came from and the 8 on the edge; with
-- epsilon the cut falls 0.5 per cell; nothing is left to fill
SELECT ST_DumpValues(tg_fill(rast, method => 'breach')) FROM pit;
SELECT ST_DumpValues(tg_fill(ST_MapAlgebra(rast, '64BF', '[rast]'), method => 'breach', epsilon => 0.5)) FROM pit;
SELECT ST_DumpValues(tg_fill(tg_fill(rast, method => 'breach'))) = ST_DumpValues(tg_fill(rast, method => 'breach'))
       AS nothing_to_fill,
       ST_DumpValues(tg_flow_accumulation(tg_fill(rast, method => 'breach'), fill => false)) AS accumulation
FROM pit;

-- D8 directions: ESRI codes 1 (E) 2 (SE) 4 (S) 8 (SW) 16 (W) 32 (NW) 64 (N) 128 (NE), 0 = outlet
SELECT ST_DumpValues(tg_flow_direction(rast)) FROM pit;
-- without filling, the pit has no direction
SELECT ST_Value(tg_flow_direction(rast, fill => false), 3, 3) AS pit_code FROM pit;
-- the receivers as a bit mask (16BUI), and multiple-flow shares as 8 bands
SELECT ST_DumpValues(tg_flow_direction(rast, routing => 'mfd-md', output => 'mask')) FROM pit;
SELECT ST_NumBands(s) AS bands, ST_BandPixelType(s, 1) AS pixeltype,
       round((ST_Value(s, 1, 2, 3) + ST_Value(s, 2, 2, 3) + ST_Value(s, 3, 2, 3) + ST_Value(s, 4, 2, 3) +
              ST_Value(s, 5, 2, 3) + ST_Value(s, 6, 2, 3) + ST_Value(s, 7, 2, 3) + ST_Value(s, 8, 2, 3))::numeric, 6) AS shares_sum
FROM pit, tg_flow_direction(rast, routing => 'fd8') AS s;
-- D8 as shares: all of a cell's flow to its one receiver (the pit's centre drains east)
SELECT ST_Value(s, 1, 3, 3) AS east, ST_Value(s, 2, 3, 3) AS southeast FROM pit, tg_flow_direction(rast, output => 'shares') AS s;

-- accumulation: everything reaches the spill point, every cell counting itself
SELECT ST_DumpValues(tg_flow_accumulation(rast)) FROM pit;
-- every method gives the same D8 result
SELECT m, (SELECT ST_DumpValues(tg_flow_accumulation(rast, method => m)))
        = (SELECT ST_DumpValues(tg_flow_accumulation(rast))) AS same
FROM pit, unnest(ARRAY['flow-transfer', 'dependency-transfer', 'indegree', 'topological']) AS m ORDER BY m;
-- tg_hydrology: the three results of one call, equal to the separate calls
SELECT ST_DumpValues(h.filled) = ST_DumpValues(tg_fill(rast)) AS filled,
       ST_DumpValues(h.direction) = ST_DumpValues(tg_flow_direction(rast)) AS direction,
       ST_DumpValues(h.accumulation) = ST_DumpValues(tg_flow_accumulation(rast)) AS accumulation,
       ST_DumpValues((tg_hydrology(rast, routing => 'mfd-md')).accumulation)
         = ST_DumpValues(tg_flow_accumulation(rast, routing => 'mfd-md')) AS mfd_accumulation
FROM pit, tg_hydrology(rast) AS h;
-- multiple-flow routings conserve water: the outlet receives all 25 cells
SELECT r, round(ST_Value(tg_flow_accumulation(rast, routing => r), 5, 3)::numeric, 4) AS at_outlet
FROM pit, unnest(ARRAY['d8', 'fd8', 'mfd-md', 'fdd8', 'dinf', 'anisotropic']) AS r ORDER BY r;

-- weights (a second raster on the same grid), units and output type, on 10 m cells
CREATE TEMP TABLE valley AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 500000, 4000030, 10, -10, 0, 0, 32632), '32BF'::text, 0, NULL),
       1, 1, 1, ARRAY[[9, 8, 9], [8, 7, 8], [9, 6, 9]]::float8[]) AS rast;
SELECT ST_DumpValues(tg_flow_accumulation(rast)) AS cells,
       ST_DumpValues(tg_flow_accumulation(rast, units => 'area')) AS square_metres,
       ST_Value(tg_flow_accumulation(rast, units => 'sca'), 2, 3) AS sca_at_outlet
FROM valley;
SELECT ST_DumpValues(tg_flow_accumulation(rast, weight => ST_AddBand(ST_MakeEmptyRaster(rast), '8BUI'::text, 2, NULL))) AS weighted,
       ST_BandPixelType(tg_flow_accumulation(rast, pixeltype => '32BF')) AS pixeltype
FROM valley;

-- a geographic DEM (3 arc-seconds at 46 N): areas in square metres on the WGS84 ellipsoid
SELECT round(ST_Value(tg_flow_accumulation(ST_SetSRID(ST_AddBand(ST_MakeEmptyRaster(2, 2, 8.0, 46.0, 1.0/1200, -1.0/1200, 0, 0, 4326),
                                                                 '16BSI'::text, 100, NULL), 4326),
                                           units => 'area'), 1, 1)::numeric, 0) AS one_cell_m2;

-- a larger synthetic terrain with plateaus and holes: D8 outlets receive every valid cell,
-- and every method and routing agrees
CREATE TEMP TABLE terrain AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(60, 40, 0, 40, 1, -1, 0, 0, 0), '16BSI'::text, 0, -9999),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                  (SELECT y, array_agg(CASE WHEN (x * 7 + y * 11) % 41 = 0 THEN -9999
                                            ELSE (20 + 10 * sin(x / 7.0) + 8 * cos(y / 5.0) + (x * y) % 3)::int / 3 END
                                       ORDER BY x) AS r
                   FROM generate_series(0, 59) x, generate_series(0, 39) y GROUP BY y) rows)) AS rast;
SELECT sum(a) AS at_outlets, (SELECT ST_Count(rast) FROM terrain) AS valid_cells
FROM terrain,
     unnest((ST_DumpValues(tg_flow_direction(rast), 1)), (ST_DumpValues(tg_flow_accumulation(rast), 1))) AS u(d, a)
WHERE d = 0;
SELECT r, m, (SELECT max(abs(a - b) / greatest(1, b))
              FROM unnest((ST_DumpValues(tg_flow_accumulation(rast, routing => r, method => m), 1)),
                          (ST_DumpValues(tg_flow_accumulation(rast, routing => r, method => 'indegree'), 1))) AS u(a, b)) < 1e-9 AS agrees
FROM terrain, unnest(ARRAY['d8', 'fd8', 'mfd-md', 'fdd8', 'dinf', 'anisotropic']) AS r,
     unnest(ARRAY['flow-transfer', 'dependency-transfer', 'topological']) AS m
WHERE NOT (r = 'fdd8' AND m = 'flow-transfer')
ORDER BY r, m;
SELECT function, backend, cells, method FROM tg_last_run();

-- 1x1, 1xN and all-nodata rasters
SELECT ST_DumpValues(tg_fill(ST_AddBand(ST_MakeEmptyRaster(1, 1, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, 7, NULL))) AS fill_1x1,
       ST_DumpValues(tg_flow_accumulation(ST_AddBand(ST_MakeEmptyRaster(1, 1, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, 7, NULL))) AS acc_1x1;
SELECT ST_DumpValues(tg_flow_accumulation(ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(5, 1, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, 0, NULL),
                                                       1, 1, 1, ARRAY[[5, 4, 3, 2, 1]]::float8[]))) AS strip;
SELECT ST_Count(tg_flow_accumulation(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, -9999, -9999))) AS valid_cells;

-- D-infinity flow angle (radians counter-clockwise from east) on planes descending at
-- 0, 30, 100 and 250 degrees; -1 (nodata) where no flow
SELECT a, round(ST_Value(tg_flow_direction(r, routing => 'dinf', output => 'angle', fill => false), 2, 2)::numeric, 6) AS angle,
       round(radians(a)::numeric, 6) AS expected,
       ST_BandNoDataValue(tg_flow_direction(r, routing => 'dinf', output => 'angle', fill => false)) AS nodata
FROM unnest(ARRAY[0, 30, 100, 250]) AS a,
     LATERAL (SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 3, 1, -1, 0, 0, 0), '64BF'::text, 0, NULL), 1, 1, 1,
              (SELECT array_agg(row ORDER BY y) FROM
                 (SELECT y, array_agg(100 - ((x - 1) * cos(radians(a)) + (1 - y) * sin(radians(a))) ORDER BY x) AS row
                  FROM generate_series(0, 2) x, generate_series(0, 2) y GROUP BY y) t)) AS r) p
ORDER BY a;
-- ... and on a geographic raster, whose cells are not square (0.001 degrees at 60 N: about
-- 56 m x 111 m): the angle is the one of the shares' facet, whose diagonal lies at
-- atan2(dy, dx) from the east-west axis (TauDEM's definition), also where all the water goes
-- to the corner; dx and dy here are the geodesic distances to the east and north neighbours
SELECT c.name, round(a.angle::numeric, 4) AS angle,
       round((CASE c.name WHEN 'all to NE' THEN f.diagonal WHEN 'all to SW' THEN pi() + f.diagonal
                          ELSE s.ne * f.diagonal END)::numeric, 4) AS from_shares_facet,
       round(s.e::numeric, 4) AS share_e, round(s.ne::numeric, 4) AS share_ne, round(s.sw::numeric, 4) AS share_sw
FROM (VALUES ('all to NE', ARRAY[[100, 100, 90], [100, 100, 100], [100, 100, 100]]),
             ('all to SW', ARRAY[[100, 100, 100], [100, 100, 100], [90, 100, 100]]),
             ('E and NE', ARRAY[[100, 100, 98], [100, 100, 99], [100, 100, 100]])) AS c(name, z),
     LATERAL (SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 10, 60.0015, 0.001, -0.001, 0, 0, 4326),
                                             '64BF'::text, 0, NULL), 1, 1, 1, c.z::float8[]) AS rast) r,
     LATERAL (SELECT atan2(ST_Distance(ST_PixelAsCentroid(r.rast, 2, 2)::geography, ST_PixelAsCentroid(r.rast, 2, 1)::geography),
                           ST_Distance(ST_PixelAsCentroid(r.rast, 2, 2)::geography, ST_PixelAsCentroid(r.rast, 3, 2)::geography))
                     AS diagonal) f,
     LATERAL (SELECT ST_Value(tg_flow_direction(r.rast, routing => 'dinf', output => 'angle', fill => false), 2, 2) AS angle) a,
     LATERAL (SELECT ST_Value(d, 1, 2, 2) AS e, ST_Value(d, 8, 2, 2) AS ne, ST_Value(d, 4, 2, 2) AS sw
              FROM tg_flow_direction(r.rast, routing => 'dinf', fill => false) AS d) s
ORDER BY c.name;

\i regress/include/try.sql
CREATE TEMP TABLE dem3 AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, 0, -9999),
                    1, 1, 1, ARRAY[[1, 2, 3], [4, 5, 6], [7, 8, 9]]::float8[]) AS rast;
\x on
-- errors: bad arguments, a weight raster off the DEM's grid
SELECT * FROM pg_temp.try($$SELECT tg_fill(rast, method => 'carve') FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_fill(rast, epsilon => -1) FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_direction(rast, routing => 'd16') FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_direction(rast, routing => 'mfd-md', output => 'codes') FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_direction(rast, output => 'arrows') FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_direction(rast, routing => 'mfd-md', output => 'angle') FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, method => 'recursive') FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, units => 'hectares') FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, pixeltype => '16BUI') FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, routing => 'fd8', exponent => 0) FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, routing => 'fdd8', threshold => -1) FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, routing => 'fdd8', method => 'flow-transfer') FROM dem3$$);
-- a weight raster must lie on the DEM's grid
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, weight => ST_AddBand(ST_MakeEmptyRaster(4, 3, 0, 0, 1, -1, 0, 0, 0), '8BUI'::text, 1, NULL)) FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, weight => ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 4326), '8BUI'::text, 1, NULL)) FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, weight => ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 2, -2, 0, 0, 0), '8BUI'::text, 1, NULL)) FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, weight => ST_AddBand(ST_MakeEmptyRaster(3, 3, 0.5, 0, 1, -1, 0, 0, 0), '8BUI'::text, 1, NULL)) FROM dem3$$);
SELECT * FROM pg_temp.try($$SELECT tg_flow_accumulation(rast, weight => rast, weight_band => 2) FROM dem3$$);
\x off

-- GPU against the CPU reference.  Without a usable GPU this file stops after
-- the check below (expected/gpu_parity_1.out); on a GPU machine it runs whole
-- (expected/gpu_parity.out).  pg_regress can only say "ok", so the first
-- result says which happened, and tools/test.sh reports a skip.
SELECT CASE WHEN available THEN 'running on the GPU' ELSE 'skipped: no GPU' END AS gpu_parity FROM tg_gpu_info();
SELECT NOT available AS skip_test FROM tg_gpu_info() \gset
\if :skip_test
\quit
\endif

SET extra_float_digits = 0;

-- the largest relative difference between two single-band rasters (NULL = nodata),
-- and whether they agree on which cells are nodata
CREATE FUNCTION pg_temp.compare(a raster, b raster, OUT max_rel_diff float8, OUT same_nodata boolean)
LANGUAGE sql AS $$
  SELECT coalesce(max(abs(x - y) / greatest(1.0, abs(y))), 0), bool_and((x IS NULL) = (y IS NULL))
  FROM unnest((ST_DumpValues(a, 1)), (ST_DumpValues(b, 1))) AS u(x, y)
$$;

-- synthetic terrain of several sizes and pixel types, with nodata holes
CREATE TEMP TABLE dems AS
SELECT w, h, pt, ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(w, h, 0, 0, 30, -30, 0, 0, 32611), pt, 0, -9999),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                  (SELECT y, array_agg(CASE WHEN (x * 7 + y * 13) % 53 = 0 THEN -9999
                                            ELSE 500 + 300 * sin(x / 17.0) * cos(y / 23.0) + (x * y) % 11 END
                                       ORDER BY x) AS r
                   FROM generate_series(0, w - 1) x, generate_series(0, h - 1) y GROUP BY y) rows)) AS rast
FROM (VALUES (1, 1, '16BSI'), (1, 300, '16BSI'), (300, 1, '32BF'), (257, 129, '16BSI'),
             (700, 600, '16BSI'), (700, 600, '32BF'), (700, 600, '64BF')) AS t(w, h, pt);

SELECT w, h, pt, c.max_rel_diff <= 1e-5 AS within_1e5, c.same_nodata
FROM dems, pg_temp.compare(tg_slope(rast, backend => 'gpu'), tg_slope(rast, backend => 'cpu')) AS c
ORDER BY w, h, pt;

SELECT tg_slope(rast, units => 'PERCENT', backend => 'gpu') IS NOT NULL FROM dems WHERE w = 700 AND pt = '32BF';
SELECT function, backend, cells, kernel_ms > 0 AS kernel_timed, transfer_ms > 0 AS transfer_timed, chunks FROM tg_last_run();

-- hydrology: the filled surface bit for bit, D8 exactly, multiple-flow routings within 1e-6
SELECT w, h, pt, m,
       (SELECT ST_DumpValues(tg_fill(rast, method => m, backend => 'gpu')))
     = (SELECT ST_DumpValues(tg_fill(rast, method => m, backend => 'cpu'))) AS fill_same,
       (SELECT ST_DumpValues(tg_fill(rast, method => m, epsilon => 0.01, backend => 'gpu')))
     = (SELECT ST_DumpValues(tg_fill(rast, method => m, epsilon => 0.01, backend => 'cpu'))) AS fill_eps_same
FROM dems, unnest(ARRAY['priority-flood', 'planchon-darboux']) AS m
WHERE w * h > 300 ORDER BY w, h, pt, m;
SELECT (SELECT ST_DumpValues(tg_flow_direction(rast, backend => 'gpu')))
     = (SELECT ST_DumpValues(tg_flow_direction(rast, backend => 'cpu'))) AS d8_codes_same
FROM dems WHERE w = 700 AND pt = '16BSI';
SELECT r, m, c.max_rel_diff = 0 AS exact, c.max_rel_diff <= 1e-6 AS within_1e6, c.same_nodata
FROM dems, unnest(ARRAY['d8', 'mfd-md', 'fdd8']) AS r,
     unnest(ARRAY['flow-transfer', 'dependency-transfer', 'indegree', 'topological']) AS m,
     pg_temp.compare(tg_flow_accumulation(rast, routing => r, method => m, backend => 'gpu'),
                     tg_flow_accumulation(rast, routing => r, method => 'indegree', backend => 'cpu')) AS c
WHERE w = 700 AND pt = '16BSI' AND NOT (r = 'fdd8' AND m = 'flow-transfer')
ORDER BY r, m;
SELECT r, (SELECT array_agg(valarray ORDER BY nband) FROM ST_DumpValues(tg_flow_direction(rast, routing => r, output => 'shares', backend => 'gpu')))
     = (SELECT array_agg(valarray ORDER BY nband) FROM ST_DumpValues(tg_flow_direction(rast, routing => r, output => 'shares', backend => 'cpu'))) AS shares_same,
       (pg_temp.compare(tg_flow_accumulation(rast, routing => r, backend => 'gpu'),
                        tg_flow_accumulation(rast, routing => r, backend => 'cpu'))).max_rel_diff <= 1e-6 AS within_1e6
FROM dems, unnest(ARRAY['anisotropic', 'dinf']) AS r
WHERE w = 700 AND pt = '16BSI' ORDER BY r;
SELECT (SELECT ST_DumpValues(tg_flow_direction(rast, routing => 'dinf', output => 'angle', backend => 'gpu')))
     = (SELECT ST_DumpValues(tg_flow_direction(rast, routing => 'dinf', output => 'angle', backend => 'cpu'))) AS dinf_angle_same
FROM dems WHERE w = 700 AND pt = '16BSI';
-- and on a geographic grid, whose cells are oblong and differ from row to row
SELECT (SELECT array_agg(valarray ORDER BY nband) FROM ST_DumpValues(tg_flow_direction(g, routing => 'dinf', backend => 'gpu')))
     = (SELECT array_agg(valarray ORDER BY nband) FROM ST_DumpValues(tg_flow_direction(g, routing => 'dinf', backend => 'cpu'))) AS dinf_shares_same,
       (SELECT ST_DumpValues(tg_flow_direction(g, routing => 'dinf', output => 'angle', backend => 'gpu')))
     = (SELECT ST_DumpValues(tg_flow_direction(g, routing => 'dinf', output => 'angle', backend => 'cpu'))) AS dinf_angle_same
FROM (SELECT ST_SetGeoReference(ST_SetSRID(rast, 4326), 8, 47, 0.0005, -0.0003, 0, 0) AS g
      FROM dems WHERE w = 700 AND pt = '16BSI') AS geographic;
SELECT tg_flow_accumulation(rast, backend => 'gpu') IS NOT NULL FROM dems WHERE w = 700 AND pt = '32BF';
SELECT function, backend, method, kernel_ms > 0 AS kernel_timed, prep_ms > 0 AS prep_timed, iterations > 0 AS rounds FROM tg_last_run();

-- coverage form and chained call on the GPU: the tiles equal the CPU's
CREATE TEMP TABLE cov AS SELECT (row_number() OVER ())::int AS rid, t AS rast
FROM dems, ST_Tile(rast, 128, 128) AS t WHERE w = 700 AND pt = '16BSI';
SELECT count(*) AS tiles,
       bool_and(ST_DumpValues(g.filled, 1) = ST_DumpValues(c.filled, 1)) AS filled_same,
       bool_and(ST_DumpValues(g.direction, 1) = ST_DumpValues(c.direction, 1)) AS direction_same,
       bool_and(ST_DumpValues(g.accumulation, 1) = ST_DumpValues(c.accumulation, 1)) AS accumulation_same
FROM tg_hydrology(coverage => 'cov', backend => 'gpu') g JOIN tg_hydrology(coverage => 'cov', backend => 'cpu') c USING (rid);
SELECT count(*) AS tiles FROM tg_hydrology(coverage => 'cov', backend => 'gpu');
SELECT function, backend FROM tg_last_run();
SELECT r, bool_and(ST_DumpValues(g.direction, 1) = ST_DumpValues(c.direction, 1)) AS receivers_same,
       max((pg_temp.compare(g.accumulation, c.accumulation)).max_rel_diff) <= 1e-6 AS within_1e6
FROM unnest(ARRAY['mfd-md', 'fdd8']) AS r,
     LATERAL tg_hydrology(coverage => 'cov', routing => r, backend => 'gpu') g
     JOIN LATERAL tg_hydrology(coverage => 'cov', routing => r, backend => 'cpu') c USING (rid)
GROUP BY r ORDER BY r;
SELECT (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_flow_accumulation(coverage => 'cov', backend => 'gpu'))
     = (SELECT ST_DumpValues(tg_flow_accumulation(rast, backend => 'gpu')) FROM dems WHERE w = 700 AND pt = '16BSI')
       AS coverage_equals_value_form;

-- beyond terra_gpu.max_memory_mb, D8 with backend gpu runs in strips of rows, each
-- strip routed and accumulated on the GPU: every tile equals the CPU's one grid
CREATE TEMP TABLE cov_rows AS SELECT (row_number() OVER ())::int AS rid, t AS rast
FROM dems, ST_Tile(rast, 100, 40) AS t WHERE w = 700 AND pt = '16BSI';
SET terra_gpu.max_memory_mb = 3;
SET client_min_messages = warning;
CREATE TEMP TABLE gpu_strips AS SELECT * FROM tg_hydrology(coverage => 'cov_rows', backend => 'gpu');
RESET client_min_messages;
SELECT function, backend, method, note FROM tg_last_run();
RESET terra_gpu.max_memory_mb;
SELECT count(*) AS tiles,
       count(*) FILTER (WHERE ST_AsBinary(g.filled) = ST_AsBinary(c.filled)
                        AND ST_AsBinary(g.direction) = ST_AsBinary(c.direction)
                        AND ST_AsBinary(g.accumulation) = ST_AsBinary(c.accumulation)) AS identical
FROM gpu_strips g JOIN tg_hydrology(coverage => 'cov_rows', backend => 'cpu') c USING (rid);

-- a device memory cap cuts the work into strips: same result
SET terra_gpu.max_device_memory_mb = 1;
CREATE TEMP TABLE strips AS
SELECT tg_slope(rast, backend => 'gpu') AS gpu, tg_slope(rast, backend => 'cpu') AS cpu
FROM dems WHERE w = 700 AND pt = '64BF';
SELECT tg_slope(rast, backend => 'gpu') IS NOT NULL FROM dems WHERE w = 700 AND pt = '64BF';
SELECT chunks > 1 AS in_strips FROM tg_last_run();
SELECT c.max_rel_diff <= 1e-5 AS within_1e5, c.same_nodata FROM strips, pg_temp.compare(gpu, cpu) AS c;

-- 53200 out_of_memory when not even one strip fits (a 40000-pixel-wide 64BF row needs > 1 MB) ...
CREATE TEMP TABLE wide AS
SELECT ST_AddBand(ST_MakeEmptyRaster(40000, 1, 0, 0, 1, -1, 0, 0, 0), '64BF'::text, 1, NULL) AS rast;
DO $$
BEGIN
  PERFORM tg_slope(rast, backend => 'gpu') FROM wide;
EXCEPTION WHEN out_of_memory THEN
  RAISE NOTICE 'SQLSTATE %: %', SQLSTATE, SQLERRM;
END $$;
-- ... while auto falls back to the CPU and says why
SET terra_gpu.min_cells_for_gpu = 0;
SELECT tg_slope(rast, backend => 'auto') IS NOT NULL FROM wide;
SELECT backend, note LIKE 'GPU out of memory, ran on the CPU%' AS fell_back FROM tg_last_run();

-- BMMQ-tree: a tiled coverage (tiles of several sizes and types) built on both
-- backends gives the same node rows
RESET terra_gpu.max_device_memory_mb;
CREATE TABLE bmmq_parity AS
SELECT row_number() OVER () AS rid, t.rast
FROM dems, ST_Tile(dems.rast, 256, 256) AS t(rast) WHERE dems.w >= 257;
SELECT tg_bmmq_build('parity_gpu', 'bmmq_parity', nbins => 12, backend => 'gpu') > 0 AS built,
       (tg_last_run()).backend;
SELECT tg_bmmq_build('parity_cpu', 'bmmq_parity', nbins => 12, backend => 'cpu') > 0 AS built,
       (tg_last_run()).backend;
SELECT count(*) AS gpu_nodes,
       count(*) = (SELECT count(*) FROM terra_gpu.bmmq_node n JOIN terra_gpu.bmmq_index i ON i.id = n.index_id
                   WHERE i.name = 'parity_cpu') AS same_count,
       NOT EXISTS (SELECT tile_id, pos, level, morton, min_bin, max_bin, fc_pos, parent_min, parent_max
                   FROM terra_gpu.bmmq_node WHERE index_id = (SELECT id FROM terra_gpu.bmmq_index WHERE name = 'parity_gpu')
                   EXCEPT
                   SELECT tile_id, pos, level, morton, min_bin, max_bin, fc_pos, parent_min, parent_max
                   FROM terra_gpu.bmmq_node WHERE index_id = (SELECT id FROM terra_gpu.bmmq_index WHERE name = 'parity_cpu'))
         AS same_nodes
FROM terra_gpu.bmmq_node n JOIN terra_gpu.bmmq_index i ON i.id = n.index_id WHERE i.name = 'parity_gpu';
SELECT tg_bmmq_drop('parity_gpu'), tg_bmmq_drop('parity_cpu');
DROP TABLE bmmq_parity;

-- Viewshed: R2 on the GPU equals the CPU (every output), and the cumulative count
SELECT d.w, d.h, d.pt, o.output,
       (SELECT bool_and(a IS NOT DISTINCT FROM b) FROM unnest(
          (ST_DumpValues(tg_viewshed(d.rast, ST_SetSRID(ST_MakePoint(30 * d.w / 3 + 15, -30 * d.h / 2 - 15), 32611),
                                     observer_height => 5, output => o.output, backend => 'gpu'), 1)),
          (ST_DumpValues(tg_viewshed(d.rast, ST_SetSRID(ST_MakePoint(30 * d.w / 3 + 15, -30 * d.h / 2 - 15), 32611),
                                     observer_height => 5, output => o.output, backend => 'cpu'), 1))) AS u(a, b)) AS identical
FROM dems d, (VALUES ('visible'), ('angle'), ('height')) AS o(output)
WHERE d.w = 700 AND ST_Value(d.rast, d.w / 3 + 1, d.h / 2 + 1) IS NOT NULL
ORDER BY 1, 2, 3, 4;
SELECT d.pt, (SELECT bool_and(a = b) FROM unnest(
          (ST_DumpValues(tg_viewshed_count(d.rast, ARRAY(SELECT ST_SetSRID(ST_MakePoint(30 * x + 15, -30 * y - 15), 32611)
                                                          FROM generate_series(100, 600, 100) x, generate_series(100, 500, 200) y
                                                          WHERE ST_Value(d.rast, x + 1, y + 1) IS NOT NULL),
                                            max_distance => 5000, backend => 'gpu'), 1)),
          (ST_DumpValues(tg_viewshed_count(d.rast, ARRAY(SELECT ST_SetSRID(ST_MakePoint(30 * x + 15, -30 * y - 15), 32611)
                                                          FROM generate_series(100, 600, 100) x, generate_series(100, 500, 200) y
                                                          WHERE ST_Value(d.rast, x + 1, y + 1) IS NOT NULL),
                                            max_distance => 5000, backend => 'cpu'), 1))) AS u(a, b)) AS identical_counts
FROM dems d WHERE d.w = 700 ORDER BY 1;
-- beyond the device budget: bands of rows streamed through the GPU, same output
SET terra_gpu.max_device_memory_mb = 4;
SELECT d.pt,
       (SELECT bool_and(a IS NOT DISTINCT FROM b) FROM unnest(
          (ST_DumpValues(tg_viewshed(d.rast, ST_SetSRID(ST_MakePoint(30 * d.w / 3 + 15, -30 * d.h / 2 - 15), 32611),
                                     observer_height => 5, output => 'height', backend => 'gpu'), 1)),
          (ST_DumpValues(tg_viewshed(d.rast, ST_SetSRID(ST_MakePoint(30 * d.w / 3 + 15, -30 * d.h / 2 - 15), 32611),
                                     observer_height => 5, output => 'height', backend => 'cpu'), 1))) AS u(a, b)) AS identical
FROM dems d WHERE d.w = 700 AND d.pt = '64BF' AND ST_Value(d.rast, d.w / 3 + 1, d.h / 2 + 1) IS NOT NULL;
SELECT ST_Width(tg_viewshed(d.rast, ST_SetSRID(ST_MakePoint(30 * d.w / 3 + 15, -30 * d.h / 2 - 15), 32611),
                            backend => 'gpu')) AS width
FROM dems d WHERE d.w = 700 AND d.pt = '64BF';
SELECT backend, chunks > 1 AS in_segments FROM tg_last_run();
RESET terra_gpu.max_device_memory_mb;

-- RUSLE and travel time: GPU = CPU (floats within 1e-6, watersheds and bands exactly)
SELECT d.pt, r,
       (pg_temp.compare(tg_ls_factor(d.rast, routing => r, backend => 'gpu'),
                        tg_ls_factor(d.rast, routing => r, backend => 'cpu'))).max_rel_diff <= 1e-6 AS ls_within_1e6,
       (pg_temp.compare(tg_rusle(d.rast, 300, ST_MapAlgebra(d.rast, '32BF', '0.02 + [rast] / 1e5'), 0.2, routing => r, fill => true, backend => 'gpu'),
                        tg_rusle(d.rast, 300, ST_MapAlgebra(d.rast, '32BF', '0.02 + [rast] / 1e5'), 0.2, routing => r, fill => true, backend => 'cpu'))).*
FROM dems d, unnest(ARRAY['d8', 'mfd-md']) AS r WHERE d.w = 700 ORDER BY 1, 2;
SELECT tg_rusle(rast, 300, 0.03, backend => 'gpu') IS NOT NULL AS ran FROM dems WHERE w = 700 AND pt = '16BSI';
SELECT function, backend, kernel_ms > 0 AS kernel_timed, prep_ms > 0 AS routing_timed FROM tg_last_run();
SELECT d.pt,
       (pg_temp.compare(tg_travel_time(d.rast, n => 0.05, k => ST_MapAlgebra(d.rast, '32BF', '1 + [rast] / 1000'), backend => 'gpu'),
                        tg_travel_time(d.rast, n => 0.05, k => ST_MapAlgebra(d.rast, '32BF', '1 + [rast] / 1000'), backend => 'cpu'))).*,
       (SELECT ST_DumpValues(tg_watershed(d.rast, o, backend => 'gpu')) = ST_DumpValues(tg_watershed(d.rast, o, backend => 'cpu'))) AS watershed_same,
       (SELECT ST_DumpValues(tg_isochrone_bands(d.rast, o, 500, backend => 'gpu')) = ST_DumpValues(tg_isochrone_bands(d.rast, o, 500, backend => 'cpu'))) AS bands_same,
       (SELECT count(*) FROM tg_isochrones(d.rast, o, 500, backend => 'gpu')) AS isochrones
FROM dems d, LATERAL (SELECT ST_SetSRID(ST_MakePoint(30 * 80 + 15, -15), 32611) AS o) p
WHERE d.w = 700 ORDER BY 1;
SELECT function, backend, method, iterations > 0 AS jumped FROM tg_last_run();
SELECT (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_watershed(coverage => 'cov', outlet => ST_SetSRID(ST_MakePoint(30 * 80 + 15, -15), 32611), backend => 'gpu'))
     = (SELECT ST_DumpValues(tg_watershed(rast, ST_SetSRID(ST_MakePoint(30 * 80 + 15, -15), 32611), backend => 'cpu')) FROM dems WHERE w = 700 AND pt = '16BSI')
       AS coverage_watershed_same;
-- pour point snapping: the GPU's accumulation snaps to the CPU's cell, filled or not
SELECT d.pt, s,
       ST_Equals(tg_snap_pour_point(d.rast, o, s, backend => 'gpu'), tg_snap_pour_point(d.rast, o, s, backend => 'cpu')) AS snapped_same,
       ST_Equals(tg_snap_pour_point(d.rast, o, s, fill => false, backend => 'gpu'),
                 tg_snap_pour_point(d.rast, o, s, fill => false, backend => 'cpu')) AS unfilled_same,
       (SELECT ST_DumpValues(tg_watershed(d.rast, o, backend => 'gpu', snap => s))
             = ST_DumpValues(tg_watershed(d.rast, o, backend => 'cpu', snap => s))) AS watershed_same
FROM dems d, LATERAL (SELECT ST_SetSRID(ST_MakePoint(30 * 200 + 7, -30 * 300 - 11), 32611) AS o) p,
     unnest(ARRAY[100, 1000]::float8[]) AS s
WHERE d.w = 700 ORDER BY 1, 2;
SELECT ST_Equals((SELECT tg_snap_pour_point(coverage => 'cov', point => ST_SetSRID(ST_MakePoint(30 * 200 + 7, -30 * 300 - 11), 32611),
                                            distance => 1000, backend => 'gpu')),
                 (SELECT tg_snap_pour_point(rast, ST_SetSRID(ST_MakePoint(30 * 200 + 7, -30 * 300 - 11), 32611), 1000, backend => 'cpu')
                  FROM dems WHERE w = 700 AND pt = '16BSI')) AS coverage_snapped_same;

-- Terrain derivatives: every product of tg_terrain at once, on every DEM and option set.  The
-- GPU equals the CPU bit for bit where the arithmetic is sums, products, quotients and square
-- roots (TPI, TRI, roughness, curvatures, standard and multidirectional hillshade, percent
-- slope, geomorphons: cuda/terrain.cu has no fused multiply-adds); within 1e-6 (relative, 1 at
-- least) where atan or acos enter (slope in degrees or radians, aspect, combined hillshade:
-- CUDA's and glibc's differ by an ulp or two).
CREATE FUNCTION pg_temp.agree(g raster, c raster, exact boolean) RETURNS boolean
LANGUAGE sql AS $$
  SELECT CASE WHEN exact THEN (SELECT ST_DumpValues(g, 1) = ST_DumpValues(c, 1))
              ELSE (SELECT max_rel_diff <= 1e-6 AND same_nodata FROM pg_temp.compare(g, c)) END
$$;
CREATE TEMP TABLE terrain_options AS
SELECT * FROM (VALUES (1, 'DEGREES', 'DEGREES', 'standard', 'wilson', 'profile', 3, 0),
                      (2, 'PERCENT', 'RADIANS', 'multidirectional', 'riley', 'plan', 10, 1),
                      (3, 'RADIANS', 'DEGREES', 'combined', 'wilson', 'tangential', 5, 2),
                      (4, 'DEGREES', 'DEGREES', 'standard', 'riley', 'mean', 3, 0),
                      (5, 'PERCENT', 'DEGREES', 'multidirectional', 'wilson', 'gaussian', 3, 0),
                      (6, 'DEGREES', 'DEGREES', 'standard', 'wilson', 'minimal', 3, 0),
                      (7, 'DEGREES', 'DEGREES', 'standard', 'wilson', 'maximal', 3, 0),
                      (8, 'DEGREES', 'DEGREES', 'standard', 'wilson', 'total', 3, 0))
  AS o(k, units, aspect_units, hillshade_method, tri_algorithm, curvature_type, search_radius, skip);
CREATE FUNCTION pg_temp.terrain(r raster, o terrain_options, b text, OUT slope raster, OUT aspect raster,
                                 OUT hillshade raster, OUT tpi raster, OUT tri raster, OUT roughness raster,
                                 OUT curvature raster, OUT geomorphons raster)
LANGUAGE sql AS $$
  SELECT * FROM tg_terrain(r, ARRAY['slope', 'aspect', 'hillshade', 'tpi', 'tri', 'roughness', 'curvature', 'geomorphons'],
                           scale => 1.5, units => o.units, aspect_units => o.aspect_units,
                           hillshade_method => o.hillshade_method, tri_algorithm => o.tri_algorithm,
                           curvature_type => o.curvature_type, search_radius => o.search_radius, skip => o.skip,
                           backend => b)
$$;
SELECT d.w, d.h, d.pt, o.k,
       pg_temp.agree(g.slope, c.slope, o.units = 'PERCENT') AS slope,
       pg_temp.agree(g.aspect, c.aspect, false) AS aspect,
       pg_temp.agree(g.hillshade, c.hillshade, o.hillshade_method <> 'combined') AS hillshade,
       pg_temp.agree(g.tpi, c.tpi, true) AS tpi,
       pg_temp.agree(g.tri, c.tri, true) AS tri,
       pg_temp.agree(g.roughness, c.roughness, true) AS roughness,
       pg_temp.agree(g.curvature, c.curvature, true) AS curvature,
       pg_temp.agree(g.geomorphons, c.geomorphons, true) AS geomorphons
FROM dems d, terrain_options o, LATERAL pg_temp.terrain(d.rast, o, 'gpu') AS g, LATERAL pg_temp.terrain(d.rast, o, 'cpu') AS c
ORDER BY 1, 2, 3, 4;
SELECT (tg_terrain(rast, backend => 'gpu')).hillshade IS NOT NULL AS ran FROM dems WHERE w = 700 AND pt = '16BSI';
SELECT function, backend, kernel_ms > 0 AS kernel_timed, chunks FROM tg_last_run();
-- gdaldem's bytes and the single-product functions
SELECT d.pt,
       pg_temp.agree(tg_hillshade(d.rast, pixeltype => '8BUI', backend => 'gpu'),
                     tg_hillshade(d.rast, pixeltype => '8BUI', backend => 'cpu'), true) AS hillshade_bytes,
       pg_temp.agree(tg_tpi(d.rast, pixeltype => '64BF', backend => 'gpu'),
                     tg_tpi(d.rast, pixeltype => '64BF', backend => 'cpu'), true) AS tpi_64bf,
       pg_temp.agree(tg_curvature(d.rast, type => 'mean', pixeltype => '64BF', backend => 'gpu'),
                     tg_curvature(d.rast, type => 'mean', pixeltype => '64BF', backend => 'cpu'), true) AS curvature_64bf,
       pg_temp.agree(tg_geomorphons(d.rast, search_radius => 20, skip => 3, flat_threshold => 0.5, backend => 'gpu'),
                     tg_geomorphons(d.rast, search_radius => 20, skip => 3, flat_threshold => 0.5, backend => 'cpu'), true)
         AS geomorphons_20
FROM dems d WHERE d.w = 700 ORDER BY 1;
-- the coverage form: every tile of the GPU's equals the CPU's
SELECT count(*) AS tiles,
       bool_and(pg_temp.agree(g.slope, c.slope, false)) AS slope,
       bool_and(pg_temp.agree(g.aspect, c.aspect, false)) AS aspect,
       bool_and(pg_temp.agree(g.hillshade, c.hillshade, true)) AS hillshade,
       bool_and(pg_temp.agree(g.tpi, c.tpi, true)) AS tpi,
       bool_and(pg_temp.agree(g.curvature, c.curvature, true)) AS curvature,
       bool_and(pg_temp.agree(g.geomorphons, c.geomorphons, true)) AS geomorphons
FROM tg_terrain(coverage => 'cov', products => ARRAY['slope', 'aspect', 'hillshade', 'tpi', 'curvature', 'geomorphons'],
                search_radius => 10, backend => 'gpu') g
JOIN tg_terrain(coverage => 'cov', products => ARRAY['slope', 'aspect', 'hillshade', 'tpi', 'curvature', 'geomorphons'],
                search_radius => 10, backend => 'cpu') c USING (rid);
-- a device memory cap cuts the raster into strips of rows with the geomorphons' halo: same result
SET terra_gpu.max_device_memory_mb = 1;
CREATE TEMP TABLE terrain_strips AS
SELECT tg_geomorphons(rast, search_radius => 10, backend => 'gpu') AS gpu,
       tg_geomorphons(rast, search_radius => 10, backend => 'cpu') AS cpu
FROM dems WHERE w = 700 AND pt = '64BF';
SELECT tg_geomorphons(rast, search_radius => 10, backend => 'gpu') IS NOT NULL AS ran FROM dems WHERE w = 700 AND pt = '64BF';
SELECT backend, chunks > 1 AS in_strips FROM tg_last_run();
SELECT pg_temp.agree(gpu, cpu, true) AS geomorphons_same FROM terrain_strips;
RESET terra_gpu.max_device_memory_mb;

-- a global product refreshed where a GPU is ready: recomputed in full (its
-- bands would cost more), only the changed tiles rewritten, equal to a recompute
CREATE TABLE gp_dem AS
SELECT (row_number() OVER ())::integer AS rid, t AS rast
FROM dems d, ST_Tile(d.rast, 64, 64) t WHERE d.w = 700 AND d.pt = '16BSI';
ALTER TABLE gp_dem ADD PRIMARY KEY (rid);
-- the refreshed product against a recompute of its query: its tiles, and
-- those that differ
CREATE FUNCTION pg_temp.gp_against_recompute(OUT tiles bigint, OUT differing bigint)
	LANGUAGE plpgsql SET client_min_messages = warning AS $$
BEGIN
	PERFORM tg_create_result('gp_recomputed', 'SELECT * FROM tg_hydrology(coverage => ''gp_dem'')', replace => true);
	SELECT count(*), count(*) FILTER (WHERE x.filled::bytea IS DISTINCT FROM y.filled::bytea
										OR x.direction::bytea IS DISTINCT FROM y.direction::bytea
										OR x.accumulation::bytea IS DISTINCT FROM y.accumulation::bytea)
	INTO tiles, differing FROM gp_hydrology x FULL JOIN gp_recomputed y USING (rid);
END $$;
SET client_min_messages = warning;
SELECT tg_create_result('gp_hydrology', 'SELECT * FROM tg_hydrology(coverage => ''gp_dem'')') IS NOT NULL AS created;
UPDATE gp_dem SET rast = ST_MapAlgebra(rast, 1, NULL, '[rast] + 50') WHERE rid = 40;
RESET client_min_messages;
SELECT mode, tiles_changed, tiles_computed, tiles_rewritten > 0 AS rewrote FROM tg_refresh('gp_hydrology');
SELECT * FROM pg_temp.gp_against_recompute();
-- below terra_gpu.min_cells_for_gpu the dispatcher keeps the product on the
-- CPU: the refresh runs in bands (the first after a full one computes them all)
SET terra_gpu.min_cells_for_gpu = 1000000;
UPDATE gp_dem SET rast = ST_MapAlgebra(rast, 1, NULL, '[rast] - 50') WHERE rid = 40;
SELECT mode, tiles_changed, tiles_computed, tiles_rewritten > 0 AS rewrote FROM tg_refresh('gp_hydrology');
SET terra_gpu.min_cells_for_gpu = 0;
SELECT * FROM pg_temp.gp_against_recompute();
DROP TABLE gp_hydrology, gp_recomputed, gp_dem;

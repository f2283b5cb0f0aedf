-- Where water leaves the raster (README, "Hydrology: conventions"), value and
-- coverage forms: a valid cell with a lower valid neighbour drains to it, on
-- the raster's edge and beside nodata too; water leaves only at edge cells and
-- cells beside nodata that have no lower neighbour (D8 code 0, shares all 0).
SET terra_gpu.backend = 'cpu';
SET extra_float_digits = 0;

-- 6 x 5 cells, a nodata hole at column 3, row 3.  No pit: filling changes
-- nothing.  Water leaves at the 4 on the west edge, the 3 beside the hole and
-- the 2 on the east edge; every 9 on the edge drains inward, and so do the
-- cells around the hole that have a lower neighbour.
CREATE TEMP TABLE basin AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(6, 5, 0, 5, 1, -1, 0, 0, 0), '16BSI'::text, 0, -9999),
                    1, 1, 1, ARRAY[[9, 9, 9, 9, 9, 9],
                                   [9, 8, 3, 6, 5, 9],
                                   [4, 7, -9999, 5, 4, 9],
                                   [9, 6, 5, 4, 3, 2],
                                   [9, 9, 9, 9, 9, 9]]::float8[]) AS rast;
CREATE TEMP TABLE basin_tiles AS
SELECT (row_number() OVER ())::int AS rid, t AS rast FROM basin, ST_Tile(rast, 3, 3) AS t;

SELECT ST_DumpValues(tg_flow_direction(rast), 1) AS d8 FROM basin;
SELECT ST_DumpValues(tg_fill(rast), 1) = ST_DumpValues(rast, 1) AS fill_changes_nothing FROM basin;

-- every valid cell: on the edge or beside nodata, whether a neighbour is lower,
-- its D8 code, accumulation and multiple-flow shares
CREATE TEMP TABLE cells AS
WITH g AS (SELECT ST_DumpValues(rast, 1) AS z, ST_DumpValues(tg_flow_direction(rast), 1) AS d8,
                  ST_DumpValues(tg_flow_accumulation(rast), 1) AS acc,
                  ST_DumpValues(tg_flow_direction(rast, routing => 'mfd-md', output => 'mask'), 1) AS mfd
           FROM basin)
SELECT x, y, g.z[y][x] AS z, g.d8[y][x] AS d8, g.acc[y][x] AS acc, g.mfd[y][x] AS mfd_mask,
       x IN (1, 6) OR y IN (1, 5) AS edge,
       EXISTS (SELECT FROM generate_series(-1, 1) dx, generate_series(-1, 1) dy
               WHERE x + dx BETWEEN 1 AND 6 AND y + dy BETWEEN 1 AND 5 AND g.z[y + dy][x + dx] IS NULL) AS beside_nodata,
       EXISTS (SELECT FROM generate_series(-1, 1) dx, generate_series(-1, 1) dy
               WHERE g.z[y + dy][x + dx] < g.z[y][x]) AS lower_neighbour
FROM g, generate_series(1, 6) x, generate_series(1, 5) y
WHERE g.z[y][x] IS NOT NULL;

-- the cells where water leaves, and what reaches them: every valid cell
SELECT x, y, z, edge, beside_nodata, d8, mfd_mask, acc FROM cells WHERE d8 = 0 ORDER BY y, x;
SELECT sum(acc) FILTER (WHERE d8 = 0) AS leaves, count(*) AS valid_cells FROM cells;
-- the rule, cell by cell: code 0 (and no multiple-flow receiver) exactly where
-- an edge cell or a cell beside nodata has no lower neighbour
SELECT edge OR beside_nodata AS edge_or_beside_nodata, lower_neighbour, count(*) AS cells,
       count(*) FILTER (WHERE d8 = 0) AS code_0, count(*) FILTER (WHERE mfd_mask = 0) AS no_receiver
FROM cells GROUP BY 1, 2 ORDER BY 1, 2;

-- the coverage form (tiles of 3 x 3) drains the same way
SELECT count(*) AS tiles,
       bool_and(ST_AsBinary(c.rast) = ST_AsBinary(ST_Clip(v.rast, ST_Envelope(c.rast)))) AS codes_equal_value_form
FROM tg_flow_direction(coverage => 'basin_tiles') c, (SELECT tg_flow_direction(rast) AS rast FROM basin) v;
SELECT sum(a) AS leaves
FROM tg_hydrology(coverage => 'basin_tiles') h,
     unnest(ST_DumpValues(h.direction, 1), ST_DumpValues(h.accumulation, 1)) AS u(d, a)
WHERE d = 0;

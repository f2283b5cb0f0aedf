-- After the accumulation: stream order, flow length, height above the nearest
-- drainage and the wetness index, worked by hand on a V-shaped valley, then
-- their forms, thread counts and errors.
SET client_min_messages = warning;
SET extra_float_digits = 0;
\i regress/include/try.sql

-- 7 x 6 cells of 10 m: the sides rise 5 m per column from the channel (column
-- 4), which falls 1 m per row towards the north edge, where it leaves at the
-- outlet (column 4, row 1).  D8: the sides drain east or west into the
-- channel, the channel north.
CREATE TEMP TABLE v AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(7, 6, 500000, 4000000, 10, -10, 0, 0, 32611), '32BF'::text, 0, -9999),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                  (SELECT y, array_agg((abs(x - 3) * 5 + y)::float8 ORDER BY x) AS r
                   FROM generate_series(0, 5) y, generate_series(0, 6) x GROUP BY y) rows)) AS rast;
SELECT ST_DumpValues(rast, 1) AS dem FROM v;
SELECT ST_DumpValues(tg_flow_accumulation(rast), 1) AS accumulation FROM v;

-- streams at 2 cells or more: the side cells next to the channel and one
-- further start as order 1; the channel is order 2 from its head, where two
-- order-1 streams meet, to the outlet.  Shreve adds the two sources that join
-- the channel in each row.
SELECT ST_DumpValues(tg_stream_order(rast, threshold => 2), 1) AS strahler FROM v;
SELECT ST_DumpValues(tg_stream_order(rast, threshold => 2, ordering => 'shreve'), 1) AS shreve FROM v;
-- a threshold in area: 2 cells of 100 m²
SELECT ST_DumpValues(tg_stream_order(rast, threshold => 200, units => 'area'), 1)
     = ST_DumpValues(tg_stream_order(rast, threshold => 2), 1) AS area_equals_cells FROM v;
SELECT ST_BandPixelType(tg_stream_order(rast), 1), ST_BandNoDataValue(tg_stream_order(rast), 1) FROM v;

-- downstream: across to the channel (10 m a column), then north (10 m a row)
SELECT ST_DumpValues(tg_flow_length(rast), 1) AS downstream FROM v;
-- upstream: the longest path from the divide; the channel's runs from the
-- valley's far edge at its head (3 columns), then down the channel
SELECT ST_DumpValues(tg_flow_length(rast, direction => 'upstream'), 1) AS upstream FROM v;

-- streams at 5 cells: the channel only; each cell's height above the channel
-- cell it drains into, in its own row
SELECT ST_DumpValues(tg_hand(rast, threshold => 5), 1) AS hand FROM v;
-- no cell drains 100 cells: no path meets a stream
SELECT ST_Count(tg_hand(rast, threshold => 100)) AS cells_with_a_height FROM v;

-- the channel cell of row 3, by hand with D8: a = 28 cells x 100 m² / 10 m =
-- 280 m; the Horn slope falls 1 m per row: tan b = 0.1; ln(280 / 0.1)
SELECT round(ST_Value(tg_wetness_index(rast, routing => 'd8'), 4, 3)::numeric, 5) AS twi,
       round(ln(2800)::numeric, 5) AS by_hand FROM v;
-- on flat terrain tan b counts as min_slope
SELECT round(ST_Value(tg_wetness_index(flat, routing => 'd8', min_slope => 0.01), 4, 6)::numeric, 5) AS flat_twi,
       round(ln(ST_Value(tg_flow_accumulation(flat, routing => 'd8', units => 'sca'), 4, 6) / 0.01)::numeric, 5) AS by_hand
FROM (SELECT ST_MapAlgebra(rast, 1, NULL, '0') AS flat FROM v) s;

-- a nodata cell stays nodata and its donors route around it
SELECT ST_Value(tg_stream_order(r, threshold => 2), 4, 4) IS NULL AS order_nodata,
       ST_Value(tg_flow_length(r), 4, 4) IS NULL AS length_nodata,
       ST_Value(tg_hand(r, threshold => 5), 4, 4) IS NULL AS hand_nodata,
       ST_Value(tg_wetness_index(r), 4, 4) IS NULL AS twi_nodata
FROM (SELECT ST_SetValue(rast, 4, 4, -9999) AS r FROM v) s;

-- the coverage form on tiles of 3 x 2 cells equals the value form
CREATE TEMP TABLE vt AS SELECT row_number() OVER () AS rid, t AS rast FROM v, ST_Tile(v.rast, 3, 2) AS t;
SELECT (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_stream_order(coverage => 'vt', threshold => 2))
     = (SELECT ST_DumpValues(tg_stream_order(rast, threshold => 2)) FROM v) AS order_coverage,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_flow_length(coverage => 'vt', direction => 'upstream'))
     = (SELECT ST_DumpValues(tg_flow_length(rast, direction => 'upstream')) FROM v) AS length_coverage,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_hand(coverage => 'vt', threshold => 5))
     = (SELECT ST_DumpValues(tg_hand(rast, threshold => 5)) FROM v) AS hand_coverage,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_wetness_index(coverage => 'vt'))
     = (SELECT ST_DumpValues(tg_wetness_index(rast)) FROM v) AS twi_coverage,
       (SELECT count(*) FROM tg_hand(coverage => 'vt')) AS tiles;

-- synthetic terrain of 300 x 280 cells: one thread gives what every core does
CREATE TEMP TABLE big AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(300, 280, 0, 0, 30, -30, 0, 0, 32611), '32BF'::text, 0, -9999),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                  (SELECT y, array_agg(500 + 300 * sin(x / 17.0) * cos(y / 23.0) + (x * y) % 11 ORDER BY x) AS r
                   FROM generate_series(0, 299) x, generate_series(0, 279) y GROUP BY y) rows)) AS rast;
CREATE TEMP TABLE one_thread AS
SELECT tg_stream_order(rast, threshold => 50) AS strahler, tg_stream_order(rast, threshold => 50, ordering => 'shreve') AS shreve,
       tg_flow_length(rast) AS down, tg_flow_length(rast, direction => 'upstream') AS up,
       tg_hand(rast, threshold => 50) AS hand, tg_wetness_index(rast) AS twi
FROM big, (SELECT set_config('terra_gpu.threads', '1', false)) s;
RESET terra_gpu.threads;
SELECT ST_DumpValues(o.strahler) = ST_DumpValues(tg_stream_order(rast, threshold => 50)) AS strahler_same,
       ST_DumpValues(o.shreve) = ST_DumpValues(tg_stream_order(rast, threshold => 50, ordering => 'shreve')) AS shreve_same,
       ST_DumpValues(o.down) = ST_DumpValues(tg_flow_length(rast)) AS down_same,
       ST_DumpValues(o.up) = ST_DumpValues(tg_flow_length(rast, direction => 'upstream')) AS up_same,
       ST_DumpValues(o.hand) = ST_DumpValues(tg_hand(rast, threshold => 50)) AS hand_same,
       ST_DumpValues(o.twi) = ST_DumpValues(tg_wetness_index(rast)) AS twi_same,
       (SELECT max(v) FROM unnest(ST_DumpValues(o.strahler, 1)) v) AS highest_order
FROM big, one_thread o;

-- stream links (threshold 2): each row's side streams (2 cells) end at the
-- channel cell of their row, a confluence that starts a channel link of one
-- step; the outlet's link is that one cell.  Links are numbered in row-major
-- order of their first cell: 18 of them, 6 rows of 3.
SELECT count(*) AS links, count(*) FILTER (WHERE downstream_id IS NULL) AS outlets,
       sum(length) AS total_length
FROM v, tg_stream_links(rast, threshold => 2);
SELECT l.link_id, l.downstream_id, l.strahler, l.shreve, l.length, l.upstream_cells, l.upstream_area,
       ST_AsText(l.geom) AS geom, ST_SRID(l.geom) AS srid
FROM v, tg_stream_links(rast, threshold => 2) AS l WHERE l.link_id <= 6 OR l.link_id >= 17 ORDER BY l.link_id;
-- the coverage form gives the same rows
SELECT (SELECT array_agg(l ORDER BY l.link_id) FROM v, tg_stream_links(rast, threshold => 2) l)
     = (SELECT array_agg(l ORDER BY l.link_id) FROM tg_stream_links(coverage => 'vt', threshold => 2) l)
       AS links_coverage;
-- on the synthetic terrain: each link's first cell carries its order, and
-- flows into a link that starts where it ends
WITH links AS MATERIALIZED (SELECT l.* FROM big, tg_stream_links(big.rast, threshold => 50) l)
SELECT count(*) AS links,
       bool_and(l.strahler = ST_Value(o.strahler, ST_StartPoint(l.geom))) AS order_at_start,
       bool_and(d.link_id IS NULL OR ST_Equals(ST_EndPoint(l.geom), ST_StartPoint(d.geom))) AS joined,
       bool_and(l.strahler <= coalesce(d.strahler, l.strahler)) AS order_never_falls,
       max(l.strahler) AS highest_order
FROM one_thread o, links l LEFT JOIN links d ON d.link_id = l.downstream_id;

-- basins of every outlet: the one outlet drains the valley
SELECT ST_DumpValues(tg_basins(rast), 1) AS outlet_basins FROM v;
-- nested gauges: gauge 1 on the channel in row 3, gauge 2 on the west side
-- stream in row 5; each cell goes to its nearest gauge downstream, cells
-- below gauge 1 to none (nodata)
SELECT ST_DumpValues(tg_basins(rast, ARRAY[ST_SetSRID(ST_MakePoint(500035, 3999975), 32611),
                                          ST_SetSRID(ST_MakePoint(500015, 3999955), 32611)]), 1) AS gauges FROM v;
-- snapping: a point on the east slope of row 3 moves within 15 m to the
-- channel cell of most accumulation, that of row 2
SELECT ST_DumpValues(tg_basins(rast, ARRAY[ST_SetSRID(ST_MakePoint(500045, 3999975), 32611)], snap => 15), 1)
       AS snapped FROM v;
-- sub-basins: each cell labelled by the link (tg_stream_links' link_id) it meets first
SELECT ST_DumpValues(tg_subbasins(rast, threshold => 2), 1) AS subbasins FROM v;
SELECT (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_subbasins(coverage => 'vt', threshold => 2))
     = (SELECT ST_DumpValues(tg_subbasins(rast, threshold => 2)) FROM v) AS subbasins_coverage,
       (SELECT ST_DumpValues(ST_Union(rast)) FROM tg_basins(coverage => 'vt',
               pour_points => ARRAY[ST_SetSRID(ST_MakePoint(500035, 3999975), 32611)]))
     = (SELECT ST_DumpValues(tg_basins(rast, ARRAY[ST_SetSRID(ST_MakePoint(500035, 3999975), 32611)])) FROM v)
       AS basins_coverage;

-- errors
SELECT state, message FROM pg_temp.try($$SELECT tg_stream_order(rast, threshold => 0) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_stream_order(rast, units => 'sca') FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_stream_order(rast, ordering => 'horton') FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_flow_length(rast, direction => 'sideways') FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_hand(rast, band => 2) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_wetness_index(rast, min_slope => 0) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_wetness_index(rast, routing => 'd16') FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT * FROM tg_stream_links((SELECT rast FROM v), threshold => -1)$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_basins(rast, ARRAY[]::geometry[]) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_basins(rast, ARRAY[ST_SetSRID(ST_MakePoint(0, 0), 32611)]) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_basins(rast, ARRAY[ST_MakePoint(500035, 3999975)]) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_basins(rast, ARRAY[NULL::geometry]) FROM v$$);
SELECT state, message FROM pg_temp.try($$SELECT tg_basins(rast, ARRAY[ST_SetSRID(ST_MakePoint(500035, 3999975), 32611)], snap => -1) FROM v$$);
SELECT tg_stream_order(NULL::raster) IS NULL AS null_gives_null;

-- tg_slope: Horn slope, same conventions as PostGIS ST_Slope
SET terra_gpu.backend = 'cpu';
SET extra_float_digits = 0;

-- a 4x3 DEM with a nodata hole, 1 m cells
CREATE TEMP TABLE dem AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(4, 3, 0, 3, 1, -1, 0, 0, 0), '16BSI'::text, 0, -9999),
                    1, 1, 1, ARRAY[[1, 2, 4, 7], [2, -9999, 5, 9], [3, 5, 8, 12]]::float8[]) AS rast;

-- values: the hole stays nodata, its neighbours use the centre value in its place
SELECT ST_DumpValues(tg_slope(rast)) FROM dem;
-- identical to ST_Slope, cell for cell
SELECT (SELECT ST_DumpValues(tg_slope(rast))) = (SELECT ST_DumpValues(ST_Slope(rast, 1, '32BF', 'DEGREES', 1.0))) AS same_as_st_slope
FROM dem;

-- output: one 32BF band, the input's georeference; nodata is the input's (negative) marker
SELECT ST_NumBands(s), ST_BandPixelType(s), ST_BandNoDataValue(s),
       ST_MetaData(s) = ST_MetaData(rast) AS same_georeference
FROM dem, tg_slope(rast) AS s;

-- units: percent is 100 tan(slope); radians is the angle (ST_Slope 3.3 returns degrees here)
SELECT ST_Value(tg_slope(rast, units => 'PERCENT'), 1, 1) AS percent,
       ST_Value(tg_slope(rast, units => 'radians'), 1, 1) AS radians,
       ST_Value(tg_slope(rast, units => 'Deg'), 1, 1) AS degrees,
       ST_Value(tg_slope(rast, units => 'PERCENT'), 1, 1) = ST_Value(ST_Slope(rast, 1, '32BF', 'PERCENT'), 1, 1) AS percent_as_st_slope
FROM dem;

-- an analytic plane z = 0.6x + 0.8y on 5 m cells: tan(slope) = 1 everywhere inside
CREATE TEMP TABLE plane AS
SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(5, 4, 1000, 2000, 5, -5, 0, 0, 32632), '64BF'::text, 0, NULL),
       1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                  (SELECT y, array_agg(0.6 * 5 * x + 0.8 * 5 * y ORDER BY x) AS r
                   FROM generate_series(0, 4) x, generate_series(0, 3) y GROUP BY y) rows)) AS rast;
SELECT round(ST_Value(tg_slope(rast), 2, 2)::numeric, 4) AS degrees,
       round(ST_Value(tg_slope(rast, units => 'PERCENT'), 3, 3)::numeric, 3) AS percent,
       round(ST_Value(tg_slope(rast, scale => sqrt(3)), 2, 3)::numeric, 4) AS degrees_scale_sqrt3
FROM plane;
-- no input nodata: output nodata is -9999, and every cell is valid
SELECT ST_BandNoDataValue(tg_slope(rast)), ST_Count(tg_slope(rast)) FROM plane;

-- a caller-chosen nodata marker
SELECT ST_BandNoDataValue(tg_slope(rast, nodata => -1)), ST_Value(tg_slope(rast, nodata => -1), 2, 2, false) FROM dem;

-- an input nodata of 0 is not reused: 0 is a valid slope
SELECT ST_BandNoDataValue(tg_slope(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 0), '8BUI'::text, 5, 0)));

-- flat ground, 1x1 and 1xN rasters
SELECT ST_DumpValues(tg_slope(ST_AddBand(ST_MakeEmptyRaster(3, 2, 0, 0, 10, -10, 0, 0, 0), '16BSI'::text, 42, NULL)));
SELECT ST_DumpValues(tg_slope(ST_AddBand(ST_MakeEmptyRaster(1, 1, 0, 0, 10, -10, 0, 0, 0), '16BSI'::text, 42, NULL)));
SELECT ST_DumpValues(tg_slope(ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(4, 1, 0, 0, 1, -1, 0, 0, 0), '32BF'::text, 0, NULL),
                                           1, 1, 1, ARRAY[[0, 1, 3, 6]]::float8[])));

-- NaN cells are nodata (ST_Slope would propagate NaN)
SELECT ST_DumpValues(tg_slope(ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 0), '32BF'::text, 0, NULL),
                                           1, 1, 1, ARRAY[[1, 2, 4], [2, 'NaN', 5], [3, 5, 8]]::float8[])));

-- a band flagged all-nodata gives nodata everywhere
SELECT ST_Count(tg_slope(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, -9999, -9999)));

-- NULL raster in, NULL out
SELECT tg_slope(NULL::raster) IS NULL AS null_in_null_out;

-- skewed georeference: the pixel size is the length of the pixel's side, as ST_PixelWidth
SELECT (SELECT ST_DumpValues(tg_slope(r))) = (SELECT ST_DumpValues(ST_Slope(r, 1))) AS skewed_same_as_st_slope
FROM (SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 3, -4, 0.5, 0.25, 0), '32BF'::text, 0, NULL),
                          1, 1, 1, ARRAY[[10, 11, 13], [12, 15, 19], [13, 17, 25]]::float8[]) AS r) s;

-- the backend argument overrides terra_gpu.backend for one call
SELECT ST_Value(tg_slope(rast, backend => 'cpu'), 1, 1) = ST_Value(tg_slope(rast), 1, 1) AS same FROM dem;
SELECT backend, cells FROM tg_last_run();

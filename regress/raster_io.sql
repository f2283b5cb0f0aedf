-- Reading and writing PostGIS' serialized rasters: every pixel type, any band,
-- nodata flags and georeference survive the trip through terra_gpu's codec.
SET terra_gpu.backend = 'cpu';
SET extra_float_digits = 0;

-- the same small ramp stored in every pixel type that can hold it
CREATE TEMP TABLE ramp AS
SELECT pt, ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(4, 3, 500000, 4000000, 2, -2, 0, 0, 32611), pt, 0, nd),
                        1, 1, 1, ARRAY[[0, 1, 1, 0], [1, 0, 0, 1], [1, 1, 0, 0]]::float8[]) AS rast
FROM (VALUES ('1BB', NULL::float8), ('2BUI', 3), ('4BUI', 15), ('8BSI', -128), ('8BUI', 255),
             ('16BSI', -32768), ('16BUI', 65535), ('32BSI', -1), ('32BUI', 4294967295),
             ('32BF', -3.4e38), ('64BF', -1e300)) AS t(pt, nd);

-- every type decodes to the same values, so every slope is identical, and equal to ST_Slope's
SELECT pt,
       ST_DumpValues(tg_slope(rast)) = (SELECT ST_DumpValues(tg_slope(rast)) FROM ramp WHERE pt = '64BF') AS same_slope,
       (SELECT ST_DumpValues(tg_slope(rast))) = (SELECT ST_DumpValues(ST_Slope(rast, 1))) AS same_as_st_slope
FROM ramp ORDER BY pt;
SELECT ST_DumpValues(tg_slope(rast)) FROM ramp WHERE pt = '8BUI';

-- georeference and SRID are carried to the output
SELECT pt, (ST_MetaData(tg_slope(rast))).* FROM ramp WHERE pt IN ('1BB', '64BF') ORDER BY pt;

-- nodata is honoured per pixel type (the top-left cell set to each type's marker)
SELECT pt, ST_Value(tg_slope(ST_SetValue(rast, 1, 1, ST_BandNoDataValue(rast))), 1, 1, false) AS topleft,
       ST_BandNoDataValue(tg_slope(rast)) AS out_nodata
FROM ramp WHERE ST_BandNoDataValue(rast) IS NOT NULL ORDER BY pt;

-- any band of a multi-band raster; a band without nodata flag treats 0 as a value
CREATE TEMP TABLE multi AS
SELECT ST_AddBand(ST_AddBand(ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(3, 3, 0, 0, 1, -1, 0, 0, 4326),
                                                     '8BUI'::text, 0, NULL),
                                          1, 1, 1, ARRAY[[0, 0, 0], [0, 9, 0], [0, 0, 0]]::float8[]),
                             '64BF'::text, 2.5, -1),
                  '16BSI'::text, 7, -9999) AS rast;
SELECT ST_Value(tg_slope(rast, band => 1), 1, 1) > 0 AS band1_corner_valid,
       ST_Value(tg_slope(rast, band => 2), 2, 2) AS band2_flat,
       ST_Value(tg_slope(rast, 3), 2, 2) AS band3_flat
FROM multi;

-- the same DEM loaded as tiles (as raster2pgsql -t does) decodes tile by tile
CREATE TEMP TABLE tiles AS
SELECT t.rast FROM ramp, ST_Tile(rast, 2, 2) AS t(rast) WHERE pt = '16BSI';
SELECT count(*), sum(ST_Count(tg_slope(rast))) AS valid_cells FROM tiles;

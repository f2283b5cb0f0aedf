/*
 * tgpg_slope.c — tg_slope(rast, band, units, scale, nodata, backend), value
 * and coverage form (see tgpg_hydro.c for the plan/compute split).
 */
#include "tgpg.h"

#include <ctype.h>
#include <math.h>

/* Default marker for "no slope here" when the input's own cannot serve. */
#define TG_SLOPE_DEFAULT_NODATA (-9999.0f)

/*
 * DEGREES, RADIANS or PERCENT, any case, or a prefix of at least three
 * letters (PostGIS' ST_Slope looks at the first three).
 */
static tg_slope_units
parse_units(const char *s)
{
	static const struct
	{
		const char *name;
		tg_slope_units units;
	}			names[] = {
		{"DEGREES", TG_SLOPE_DEGREES},
		{"RADIANS", TG_SLOPE_RADIANS},
		{"PERCENT", TG_SLOPE_PERCENT},
	};
	size_t		n;
	int			i;

	while (isspace((unsigned char) *s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char) s[n - 1]))
		n--;
	for (i = 0; i < lengthof(names); i++)
		if (n >= 3 && n <= strlen(names[i].name) &&
			pg_strncasecmp(s, names[i].name, n) == 0)
			return names[i].units;

	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid units \"%s\"", s),
			 errdetail("Valid units are DEGREES, RADIANS and PERCENT.")));
	pg_unreachable();
}

/*
 * The output's nodata value: the caller's, else the input band's when it is
 * negative (a slope never is), else -9999.  A non-negative marker such as 0
 * would turn every flat cell into nodata.
 */
static float
output_nodata(FunctionCallInfo fcinfo, int argno, const tg_band *dem)
{
	if (!PG_ARGISNULL(argno))
		return (float) PG_GETARG_FLOAT8(argno);
	if (dem->has_nodata && (float) dem->nodata < 0)
		return (float) dem->nodata;
	return TG_SLOPE_DEFAULT_NODATA;
}

static void
slope_plan(FunctionCallInfo fcinfo, int a, const tg_band *dem, const tg_georef *geo,
		   tg_slope_params *params, tgpg_grid_raster *out)
{
	params->units = parse_units(tgpg_arg_cstring(fcinfo, a + 2, "units"));
	params->scale = tgpg_arg_float8(fcinfo, a + 3, "scale");
	if (!(params->scale > 0) || isinf(params->scale))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("scale must be a positive number, got %g", params->scale),
				 errhint("For a DEM in degrees with elevations in metres use scale => 111120.")));
	params->pixel_width = tg_georef_pixel_width(geo);
	params->pixel_height = tg_georef_pixel_height(geo);
	params->out_nodata = output_nodata(fcinfo, a + 4, dem);
	out->nbands = 1;
	out->specs[0].pixtype = TG_PT_32BF;
	out->specs[0].has_nodata = true;
	out->specs[0].nodata = params->out_nodata;
}

static void
slope_compute(FunctionCallInfo fcinfo, int a, const tg_band *dem, const tg_slope_params *params,
			  tgpg_grid_raster *out)
{
	tg_ctx		ctx;
	tg_error	err;

	tgpg_ctx_init(&ctx, "tg_slope", fcinfo, a + 5);
	tg_error_clear(&err);
	tgpg_check(tg_slope(&ctx, dem, params, (float *) out->data[0], &err), &err);
}

PG_FUNCTION_INFO_V1(tgpg_slope);
Datum
tgpg_slope(PG_FUNCTION_ARGS)
{
	Datum		rast_datum;
	tg_slope_params params;
	tg_raster_info info;
	tg_band_spec spec = {TG_PT_32BF, true, TG_SLOPE_DEFAULT_NODATA};
	tgpg_grid_raster out;
	tgpg_raster rast;
	tg_band		dem;
	struct varlena *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	rast_datum = PG_GETARG_DATUM(0);

	/* refuse an impossible result before detoasting a large input */
	tgpg_raster_header(rast_datum, &info);
	info.num_bands = 1;
	tgpg_check_result_size(&info, &spec);

	tgpg_raster_open(rast_datum, &rast);
	tgpg_raster_band(&rast, tgpg_arg_int32(fcinfo, 1, "band"), &dem);
	slope_plan(fcinfo, 0, &dem, &rast.info.geo, &params, &out);
	result = tgpg_raster_result(&rast.info, &out);
	slope_compute(fcinfo, 0, &dem, &params, &out);
	tgpg_raster_close(&rast, rast_datum);
	PG_RETURN_POINTER(result);
}

#define SLOPE_BYTES_PER_CELL 16

/*
 * A coverage beyond terra_gpu.max_memory_mb, in bands of whole tile rows:
 * slope needs only the 3 x 3 window, so each band read with a row of halo
 * above and below gives exactly the whole grid's slopes for its rows.
 */
static void
slope_coverage_in_bands(FunctionCallInfo fcinfo, tgpg_mosaic *m)
{
	const int	W = m->width;
	int		   *row0s,
			   *nrows,
				nb;
	int64		written = 0;
	tg_slope_params params;
	tgpg_grid_raster out;
	tg_ctx		ctx;
	tg_error	err;

	nb = tgpg_mosaic_bands(m, SLOPE_BYTES_PER_CELL, &row0s, &nrows, NULL);
	ereport(NOTICE,
			(errmsg("tg_slope: %s spans %d x %d cells, more than terra_gpu.max_memory_mb holds: "
					"computing it in %d bands of rows", m->relname, W, m->height, nb)));
	tgpg_ctx_init(&ctx, "tg_slope", fcinfo, 7);
	tg_error_clear(&err);
	for (int k = 0; k < nb; k++)
	{
		int			first,
					count;
		double	   *z = tgpg_mosaic_read_halo(m, row0s[k], nrows[k], &first, &count);
		float	   *slope = palloc_extended(sizeof(float) * (size_t) W * count + 1, MCXT_ALLOC_HUGE);
		tg_band		band;

		if (k == 0)
			slope_plan(fcinfo, 2, &m->dem, &m->geo, &params, &out);
		/* the rows as doubles, NaN for nodata, with the band's halo */
		memset(&band, 0, sizeof band);
		band.pixtype = TG_PT_64BF;
		band.width = W;
		band.height = count;
		band.data = z;
		tgpg_check(tg_slope(&ctx, &band, &params, slope, &err), &err);
		for (size_t i = 0; i < (size_t) W * nrows[k]; i++)
			z[i] = slope[(size_t) (row0s[k] - first) * W + i];
		tgpg_mosaic_emit_rows(m, fcinfo, out.specs, 1, row0s[k], nrows[k], (const double *const *) &z,
							  &written);
		pfree(z);
		pfree(slope);
	}
}

PG_FUNCTION_INFO_V1(tgpg_slope_coverage);
Datum
tgpg_slope_coverage(PG_FUNCTION_ARGS)
{
	tgpg_mosaic m;
	tgpg_grid	grid;
	tg_slope_params params;
	tgpg_grid_raster out;

	tgpg_mosaic_layout(&m, fcinfo, "tg_slope", 3);
	if (!tgpg_mosaic_fits(&m, SLOPE_BYTES_PER_CELL))
	{
		slope_coverage_in_bands(fcinfo, &m);
		return (Datum) 0;
	}
	tgpg_mosaic_read(&m, SLOPE_BYTES_PER_CELL);
	grid = tgpg_mosaic_grid(&m);
	slope_plan(fcinfo, 2, &m.dem, &m.geo, &params, &out);
	tgpg_grid_raster_alloc(&grid, &out);
	tgpg_phase(&m, "computing slopes of");
	slope_compute(fcinfo, 2, &m.dem, &params, &out);
	tgpg_mosaic_emit(&m, fcinfo, &out, 1);
	return (Datum) 0;
}

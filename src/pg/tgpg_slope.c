/*
 * tgpg_slope.c — tg_slope(rast, band, units, scale, nodata, backend).
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

PG_FUNCTION_INFO_V1(tgpg_slope);
Datum
tgpg_slope(PG_FUNCTION_ARGS)
{
	Datum		rast_datum;
	int32		band;
	tg_slope_params params;
	tg_raster_info out_info;
	tg_band_spec spec;
	tgpg_raster rast;
	tg_band		dem;
	tg_ctx		ctx;
	tg_error	err;
	struct varlena *result;
	void	   *pixels;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	rast_datum = PG_GETARG_DATUM(0);
	band = tgpg_arg_int32(fcinfo, 1, "band");
	params.units = parse_units(tgpg_arg_cstring(fcinfo, 2, "units"));
	params.scale = tgpg_arg_float8(fcinfo, 3, "scale");
	if (!(params.scale > 0) || isinf(params.scale))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("scale must be a positive number, got %g", params.scale),
				 errhint("For a DEM in degrees with elevations in metres use scale => 111120.")));

	/* refuse an impossible result before detoasting a large input */
	tgpg_raster_header(rast_datum, &out_info);
	out_info.num_bands = 1;
	spec.pixtype = TG_PT_32BF;
	spec.has_nodata = true;
	spec.nodata = TG_SLOPE_DEFAULT_NODATA;
	tgpg_check_result_size(&out_info, &spec);

	tgpg_raster_open(rast_datum, &rast);
	tgpg_raster_band(&rast, band, &dem);
	params.pixel_width = tg_georef_pixel_width(&rast.info.geo);
	params.pixel_height = tg_georef_pixel_height(&rast.info.geo);
	params.out_nodata = output_nodata(fcinfo, 4, &dem);
	spec.nodata = params.out_nodata;

	result = tgpg_raster_create(&out_info, &spec, &pixels);

	tgpg_ctx_init(&ctx, "tg_slope", fcinfo, 5);
	tg_error_clear(&err);
	tgpg_check(tg_slope(&ctx, &dem, &params, (float *) pixels, &err), &err);

	tgpg_raster_close(&rast, rast_datum);
	PG_RETURN_POINTER(result);
}

/*
 * tgpg_viewshed.c — the viewshed's fmgr glue: terra_gpu._viewshed and
 * terra_gpu._viewshed_count, called by the SQL functions tg_viewshed and
 * tg_viewshed_count once they have checked the observer geometry and turned
 * it into a cell.
 */
#include "tgpg.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#define VIEW_FLOAT_NODATA (-9999.0f)
#define VIEW_BYTE_NODATA 255
#define VIEW_COUNT_NODATA 4294967295.0

static tg_view_output
parse_output(const char *s)
{
	if (pg_strcasecmp(s, "visible") == 0)
		return TG_VIEW_VISIBLE;
	if (pg_strcasecmp(s, "angle") == 0)
		return TG_VIEW_ANGLE;
	if (pg_strcasecmp(s, "height") == 0)
		return TG_VIEW_HEIGHT;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid output \"%s\"", s),
			 errdetail("Valid outputs are visible, angle and height.")));
	pg_unreachable();
}

/* Heights, range and Earth model from arguments first_arg .. first_arg + 4. */
static void
view_params(FunctionCallInfo fcinfo, int first_arg, const tg_raster_info *info,
			tg_viewshed_params *p)
{
	tgpg_grid	grid;

	memset(p, 0, sizeof *p);
	p->observer_height = tgpg_arg_float8(fcinfo, first_arg, "observer_height");
	p->target_height = tgpg_arg_float8(fcinfo, first_arg + 1, "target_height");
	p->max_distance = PG_ARGISNULL(first_arg + 2) ? 0 : PG_GETARG_FLOAT8(first_arg + 2);
	if (!PG_ARGISNULL(first_arg + 2) && !(p->max_distance > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_distance must be positive, got %g", p->max_distance),
				 errhint("Pass NULL (the default) for an unlimited range.")));
	p->earth_radius = tgpg_arg_float8(fcinfo, first_arg + 3, "earth_radius");
	p->refraction = tgpg_arg_float8(fcinfo, first_arg + 4, "refraction");
	grid = tgpg_raster_grid(info);
	p->geom = tgpg_grid_geometry(&grid);
	p->cell_x = p->geom.cell_x;
	p->cell_y = p->geom.cell_y;
	if (info->geo.skew_x != 0 || info->geo.skew_y != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("viewsheds of skewed rasters are not supported"),
				 errhint("Warp the raster to a north-up grid first.")));
}

PG_FUNCTION_INFO_V1(tgpg_viewshed);
Datum
tgpg_viewshed(PG_FUNCTION_ARGS)
{
	Datum		rast_datum = PG_GETARG_DATUM(0);
	tgpg_raster rast;
	tg_band		dem;
	tg_viewshed_params p;
	tg_raster_info out_info;
	tg_band_spec spec;
	tg_ctx		ctx;
	tg_error	err;
	struct varlena *result;
	void	   *pixels;
	float	   *values;
	size_t		n;

	tgpg_raster_header(rast_datum, &out_info);
	out_info.num_bands = 1;
	tgpg_raster_open(rast_datum, &rast);
	tgpg_raster_band(&rast, tgpg_arg_int32(fcinfo, 1, "band"), &dem);
	view_params(fcinfo, 4, &rast.info, &p);
	p.observer_col = tgpg_arg_int32(fcinfo, 2, "column");
	p.observer_row = tgpg_arg_int32(fcinfo, 3, "row");
	p.output = parse_output(tgpg_arg_cstring(fcinfo, 9, "output"));
	p.algorithm = TG_VIEW_R2;
	if (!PG_ARGISNULL(11) && PG_GETARG_BOOL(11))
		p.algorithm = TG_VIEW_R3;

	spec.pixtype = p.output == TG_VIEW_VISIBLE ? TG_PT_8BUI : TG_PT_32BF;
	spec.has_nodata = true;
	spec.nodata = p.output == TG_VIEW_VISIBLE ? VIEW_BYTE_NODATA : VIEW_FLOAT_NODATA;
	result = tgpg_raster_create(&out_info, &spec, &pixels);
	n = (size_t) out_info.width * out_info.height;
	values = p.output == TG_VIEW_VISIBLE ? palloc_extended(n * sizeof(float), MCXT_ALLOC_HUGE)
		: (float *) pixels;

	tgpg_ctx_init(&ctx, "tg_viewshed", fcinfo, 10);
	tg_error_clear(&err);
	tgpg_check(tg_viewshed(&ctx, &dem, &p, values, &err), &err);

	if (p.output == TG_VIEW_VISIBLE)
	{
		uint8	   *bytes = pixels;

		for (size_t i = 0; i < n; i++)
			bytes[i] = isnan(values[i]) ? VIEW_BYTE_NODATA : (uint8) values[i];
		pfree(values);
	}
	else
		for (size_t i = 0; i < n; i++)
			if (isnan(values[i]))
				values[i] = VIEW_FLOAT_NODATA;
	tgpg_raster_close(&rast, rast_datum);
	PG_RETURN_POINTER(result);
}

PG_FUNCTION_INFO_V1(tgpg_viewshed_count);
Datum
tgpg_viewshed_count(PG_FUNCTION_ARGS)
{
	Datum		rast_datum = PG_GETARG_DATUM(0);
	tgpg_raster rast;
	tg_band		dem;
	tg_viewshed_params p;
	tg_raster_info out_info;
	tg_band_spec spec;
	tg_ctx		ctx;
	tg_error	err;
	struct varlena *result;
	void	   *pixels;
	Datum	   *cd,
			   *rd;
	bool	   *cn,
			   *rn;
	int			nc,
				nr;
	int		   *cols,
			   *rows;

	tgpg_raster_header(rast_datum, &out_info);
	out_info.num_bands = 1;
	tgpg_raster_open(rast_datum, &rast);
	tgpg_raster_band(&rast, tgpg_arg_int32(fcinfo, 1, "band"), &dem);
	view_params(fcinfo, 4, &rast.info, &p);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), INT4OID, 4, true, TYPALIGN_INT, &cd, &cn, &nc);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(3), INT4OID, 4, true, TYPALIGN_INT, &rd, &rn, &nr);
	if (nc != nr)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%d observer columns but %d rows", nc, nr)));
	cols = palloc(sizeof(int) * Max(nc, 1));
	rows = palloc(sizeof(int) * Max(nc, 1));
	for (int k = 0; k < nc; k++)
	{
		if (cn[k] || rn[k])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("observer %d is NULL", k + 1)));
		cols[k] = DatumGetInt32(cd[k]);
		rows[k] = DatumGetInt32(rd[k]);
	}

	spec.pixtype = TG_PT_32BUI;
	spec.has_nodata = dem.has_nodata;
	spec.nodata = VIEW_COUNT_NODATA;
	result = tgpg_raster_create(&out_info, &spec, &pixels);

	tgpg_ctx_init(&ctx, "tg_viewshed_count", fcinfo, 9);
	tg_error_clear(&err);
	tgpg_check(tg_viewshed_count(&ctx, &dem, &p, cols, rows, nc, (uint32_t *) pixels, &err), &err);

	if (dem.has_nodata)
	{
		uint32	   *count = pixels;

		for (size_t i = 0; i < (size_t) out_info.width * out_info.height; i++)
			if (tg_band_value_is_nodata(&dem, tg_band_get(&dem, i)))
				count[i] = (uint32) VIEW_COUNT_NODATA;
	}
	tgpg_raster_close(&rast, rast_datum);
	PG_RETURN_POINTER(result);
}

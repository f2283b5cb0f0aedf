/*
 * tgpg_viewshed.c — the viewshed's fmgr glue.  Value forms: terra_gpu._viewshed
 * and terra_gpu._viewshed_count, called by the SQL functions tg_viewshed and
 * tg_viewshed_count once they have checked the observer geometry and turned
 * it into a cell.  Coverage forms: tg_viewshed and tg_viewshed_count over a
 * tiled raster table read as one grid, observers checked here.
 */
#include "tgpg.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#define VIEW_FLOAT_NODATA (-9999.0f)
#define VIEW_BYTE_NODATA 255
#define VIEW_COUNT_NODATA 4294967295.0
/* bytes per cell a coverage form holds besides the DEM: values and output */
#define VIEW_BYTES_PER_CELL 8

static const tgpg_name view_outputs[] = {
	{"visible", TG_VIEW_VISIBLE},
	{"angle", TG_VIEW_ANGLE},
	{"height", TG_VIEW_HEIGHT},
};

/* r2: ray casting, GPU or CPU; r3: exact, CPU */
static const tgpg_name view_algorithms[] = {
	{"r2", TG_VIEW_R2},
	{"r3", TG_VIEW_R3},
};

/* Heights, range and Earth model from arguments first_arg .. first_arg + 4. */
static void
view_params(FunctionCallInfo fcinfo, int first_arg, const tgpg_grid *grid, tg_viewshed_params *p)
{
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
	p->geom = tgpg_grid_geometry(grid);
	p->cell_x = p->geom.cell_x;
	p->cell_y = p->geom.cell_y;
	if (grid->geo.skew_x != 0 || grid->geo.skew_y != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("viewsheds of skewed rasters are not supported"),
				 errhint("Warp the raster to a north-up grid first.")));
}

static tg_band_spec
view_spec(tg_view_output output)
{
	tg_band_spec spec;

	memset(&spec, 0, sizeof spec);
	spec.pixtype = output == TG_VIEW_VISIBLE ? TG_PT_8BUI : TG_PT_32BF;
	spec.has_nodata = true;
	spec.nodata = output == TG_VIEW_VISIBLE ? VIEW_BYTE_NODATA : VIEW_FLOAT_NODATA;
	return spec;
}

/*
 * The core's values (NaN: out of range or nodata) into the output band: bytes
 * for visible (values then freed), else the float band they already are.
 */
static void
view_store(tg_view_output output, float *values, void *pixels, size_t n)
{
	if (output == TG_VIEW_VISIBLE)
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
}

/* 32BUI counts: nodata where the DEM is nodata. */
static void
count_nodata(const tg_band *dem, uint32 *count)
{
	if (!dem->has_nodata)
		return;
	for (size_t i = 0; i < (size_t) dem->width * dem->height; i++)
		if (tg_band_value_is_nodata(dem, tg_band_get(dem, i)))
			count[i] = (uint32) VIEW_COUNT_NODATA;
}

PG_FUNCTION_INFO_V1(tgpg_viewshed);
Datum
tgpg_viewshed(PG_FUNCTION_ARGS)
{
	Datum		rast_datum = PG_GETARG_DATUM(0);
	tgpg_raster rast;
	tg_band		dem;
	tgpg_grid	grid;
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
	grid = tgpg_raster_grid(&rast.info);
	view_params(fcinfo, 4, &grid, &p);
	p.observer_col = tgpg_arg_int32(fcinfo, 2, "column");
	p.observer_row = tgpg_arg_int32(fcinfo, 3, "row");
	p.output = (tg_view_output) TGPG_ARG_LOOKUP("output", fcinfo, 9, view_outputs);
	p.algorithm = (tg_view_algorithm) TGPG_ARG_LOOKUP("algorithm", fcinfo, 11, view_algorithms);

	spec = view_spec(p.output);
	result = tgpg_raster_create(&out_info, &spec, &pixels);
	n = (size_t) out_info.width * out_info.height;
	values = p.output == TG_VIEW_VISIBLE ? palloc_extended(n * sizeof(float), MCXT_ALLOC_HUGE)
		: (float *) pixels;

	tgpg_ctx_init(&ctx, "tg_viewshed", fcinfo, 10);
	tg_error_clear(&err);
	tgpg_check(tg_viewshed(&ctx, &dem, &p, values, &err), &err);
	view_store(p.output, values, pixels, n);
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
	tgpg_grid	grid;
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
	grid = tgpg_raster_grid(&rast.info);
	view_params(fcinfo, 4, &grid, &p);
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
	count_nodata(&dem, pixels);
	tgpg_raster_close(&rast, rast_datum);
	PG_RETURN_POINTER(result);
}

/* ------------------------------------------------------------------------
 * Coverage forms
 *   tg_viewshed(coverage, rast_column, id_column, observer, observer_height,
 *               target_height, max_distance, earth_radius, refraction,
 *               output, band, backend, algorithm)
 *   tg_viewshed_count(coverage, rast_column, id_column, observers,
 *               observer_height, target_height, max_distance, earth_radius,
 *               refraction, band, backend)
 * ------------------------------------------------------------------------ */
PG_FUNCTION_INFO_V1(tgpg_viewshed_coverage);
Datum
tgpg_viewshed_coverage(PG_FUNCTION_ARGS)
{
	tgpg_mosaic m;
	tgpg_grid	grid;
	tgpg_grid_raster out;
	tg_viewshed_params p;
	tg_ctx		ctx;
	tg_error	err;
	float	   *values;
	size_t		n;

	tgpg_mosaic_open(&m, fcinfo, "tg_viewshed", 10, VIEW_BYTES_PER_CELL);
	grid = tgpg_mosaic_grid(&m);
	view_params(fcinfo, 4, &grid, &p);
	if (PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("observer must not be NULL")));
	tgpg_point_cell(PG_GETARG_DATUM(3), get_fn_expr_argtype(fcinfo->flinfo, 3), &grid, "observer",
					&p.observer_col, &p.observer_row);
	p.output = (tg_view_output) TGPG_ARG_LOOKUP("output", fcinfo, 9, view_outputs);
	p.algorithm = (tg_view_algorithm) TGPG_ARG_LOOKUP("algorithm", fcinfo, 12, view_algorithms);

	memset(&out, 0, sizeof out);
	out.nbands = 1;
	out.specs[0] = view_spec(p.output);
	tgpg_grid_raster_alloc(&grid, &out);
	n = (size_t) grid.width * grid.height;
	values = p.output == TG_VIEW_VISIBLE ? palloc_extended(n * sizeof(float), MCXT_ALLOC_HUGE)
		: (float *) out.data[0];

	tgpg_ctx_init(&ctx, "tg_viewshed", fcinfo, 11);
	tgpg_phase(&m, "computing");
	tg_error_clear(&err);
	tgpg_check(tg_viewshed(&ctx, &m.dem, &p, values, &err), &err);
	view_store(p.output, values, out.data[0], n);
	tgpg_mosaic_emit(&m, fcinfo, &out, 1);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(tgpg_viewshed_count_coverage);
Datum
tgpg_viewshed_count_coverage(PG_FUNCTION_ARGS)
{
	tgpg_mosaic m;
	tgpg_grid	grid;
	tgpg_grid_raster out;
	tg_viewshed_params p;
	tg_ctx		ctx;
	tg_error	err;
	ArrayType  *observers;
	Oid			elem_type;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *od;
	bool	   *on;
	int			nobs;
	int		   *cols,
			   *rows;

	tgpg_mosaic_open(&m, fcinfo, "tg_viewshed_count", 9, VIEW_BYTES_PER_CELL);
	grid = tgpg_mosaic_grid(&m);
	view_params(fcinfo, 4, &grid, &p);
	if (PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("observers must hold at least one point")));
	observers = PG_GETARG_ARRAYTYPE_P(3);
	elem_type = ARR_ELEMTYPE(observers);
	get_typlenbyvalalign(elem_type, &typlen, &typbyval, &typalign);
	deconstruct_array(observers, elem_type, typlen, typbyval, typalign, &od, &on, &nobs);
	if (nobs == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("observers must hold at least one point")));
	cols = palloc(sizeof(int) * nobs);
	rows = palloc(sizeof(int) * nobs);
	for (int k = 0; k < nobs; k++)
	{
		char	   *what = psprintf("observer %d", k + 1);

		if (on[k])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s is NULL", what)));
		tgpg_point_cell(od[k], elem_type, &grid, what, &cols[k], &rows[k]);
	}

	memset(&out, 0, sizeof out);
	out.nbands = 1;
	out.specs[0].pixtype = TG_PT_32BUI;
	out.specs[0].has_nodata = m.dem.has_nodata;
	out.specs[0].nodata = VIEW_COUNT_NODATA;
	tgpg_grid_raster_alloc(&grid, &out);

	tgpg_ctx_init(&ctx, "tg_viewshed_count", fcinfo, 10);
	tgpg_phase(&m, "computing");
	tg_error_clear(&err);
	tgpg_check(tg_viewshed_count(&ctx, &m.dem, &p, cols, rows, nobs, (uint32_t *) out.data[0], &err),
			   &err);
	count_nodata(&m.dem, out.data[0]);
	tgpg_mosaic_emit(&m, fcinfo, &out, 1);
	return (Datum) 0;
}

/*
 * tgpg_catchment.c — tg_ls_factor, tg_rusle, tg_travel_time,
 * tg_isochrone_bands, tg_isochrones and tg_watershed, each in a value form
 * (one raster) and a coverage form (a tiled raster table read as one grid).
 *
 * As in tgpg_hydro.c, argument i >= 1 of a value form is argument i + 2 of
 * its coverage form, which puts (coverage, rast_column, id_column) where the
 * raster was.  Factors (R, K, C, P, n, K) are "any": a number, or a raster
 * on the DEM's grid (value form) or a coverage on the same grid (coverage
 * form).
 */
#include "tgpg.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/datum.h"
#include "utils/builtins.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

/* bytes per cell either chain holds at its peak, input and outputs included */
#define RUSLE_BYTES_PER_CELL 160
#define TRAVEL_BYTES_PER_CELL 96

/* ------------------------------------------------------------------------
 * The DEM of either form, and arguments placed relative to the value form
 * ------------------------------------------------------------------------ */
typedef struct catchment_call
{
	FunctionCallInfo fcinfo;
	const char *function;
	bool		coverage;
	int			shift;			/* 0 (value form) or 2 (coverage form) */
	tgpg_raster rast;			/* value form */
	tgpg_mosaic m;				/* coverage form */
	tg_band		dem;
	tgpg_grid	grid;
	/* factor bands; the rasters a value form opened for them, closed at the end */
	int			nfactors;
	tg_band		factor_bands[4];
	int			nopen;
	tgpg_raster opened[4];
	int			opened_arg[4];
} catchment_call;

/* The argument that is argument `i` of the value form. */
static inline int
arg(const catchment_call *c, int i)
{
	return i == 0 ? 0 : i + c->shift;
}

/* Open the DEM (false: a NULL raster, the value form returns NULL). */
static bool
call_open(catchment_call *c, FunctionCallInfo fcinfo, const char *function, bool coverage,
		  int band_arg, size_t bytes_per_cell)
{
	memset(c, 0, sizeof *c);
	c->fcinfo = fcinfo;
	c->function = function;
	c->coverage = coverage;
	c->shift = coverage ? 2 : 0;
	if (coverage)
	{
		tgpg_mosaic_open(&c->m, fcinfo, function, arg(c, band_arg), bytes_per_cell);
		c->dem = c->m.dem;
		c->grid = tgpg_mosaic_grid(&c->m);
		return true;
	}
	if (PG_ARGISNULL(0))
		return false;
	tgpg_raster_open(PG_GETARG_DATUM(0), &c->rast);
	tgpg_raster_band(&c->rast, tgpg_arg_int32(fcinfo, band_arg, "band"), &c->dem);
	c->grid = tgpg_raster_grid(&c->rast.info);
	return true;
}

static void
call_close(catchment_call *c)
{
	FunctionCallInfo fcinfo = c->fcinfo;

	for (int k = 0; k < c->nopen; k++)
		tgpg_raster_close(&c->opened[k], PG_GETARG_DATUM(c->opened_arg[k]));
	if (!c->coverage)
		tgpg_raster_close(&c->rast, PG_GETARG_DATUM(0));
}

/* Output bands: in the result value (value form) or whole-grid buffers. */
static struct varlena *
call_outputs(catchment_call *c, tgpg_grid_raster *out)
{
	if (c->coverage)
	{
		tgpg_grid_raster_alloc(&c->grid, out);
		return NULL;
	}
	return tgpg_raster_result(&c->rast.info, out);
}

static tg_ctx
call_ctx(catchment_call *c, int backend_arg)
{
	tg_ctx		ctx;

	tgpg_ctx_init(&ctx, c->function, c->fcinfo, arg(c, backend_arg));
	if (c->coverage)
		tgpg_phase(&c->m, "computing");
	return ctx;
}

/*
 * A factor argument: a number (any numeric type, or text holding one), a
 * raster on the DEM's grid (value form, band 1) or a coverage on the same
 * grid (coverage form, column rast, band 1).
 */
static void
factor_arg(catchment_call *c, int value_arg, const char *name, tg_factor *f)
{
	FunctionCallInfo fcinfo = c->fcinfo;
	const int	a = arg(c, value_arg);
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, a);
	Datum		d = PG_GETARG_DATUM(a);

	memset(f, 0, sizeof *f);
	if (PG_ARGISNULL(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("factor %s must not be NULL", name)));
	switch (type)
	{
		case INT2OID:
			f->value = DatumGetInt16(d);
			return;
		case INT4OID:
			f->value = DatumGetInt32(d);
			return;
		case INT8OID:
			f->value = (double) DatumGetInt64(d);
			return;
		case FLOAT4OID:
			f->value = DatumGetFloat4(d);
			return;
		case FLOAT8OID:
			f->value = DatumGetFloat8(d);
			return;
		case NUMERICOID:
			f->value = DatumGetFloat8(DirectFunctionCall1(numeric_float8, d));
			return;
		case TEXTOID:
			f->value = DatumGetFloat8(DirectFunctionCall1(float8in,
														  CStringGetDatum(TextDatumGetCString(d))));
			return;
		case UNKNOWNOID:
			f->value = DatumGetFloat8(DirectFunctionCall1(float8in, d));
			return;
		default:
			break;
	}
	if (c->coverage && (type == REGCLASSOID || type == OIDOID))
	{
		Oid			relid = DatumGetObjectId(d);

		tgpg_mosaic_read_aligned(&c->m, relid, "rast",
								 get_attnum(relid, "rid") != InvalidAttrNumber ? "rid" : NULL, 1,
								 psprintf("the %s coverage", name), name,
								 &c->factor_bands[c->nfactors]);
		f->band = &c->factor_bands[c->nfactors++];
		return;
	}
	if (!c->coverage && type == get_fn_expr_argtype(fcinfo->flinfo, 0))
	{
		const int	k = c->nopen++;

		tgpg_raster_open(d, &c->opened[k]);
		c->opened_arg[k] = a;
		tgpg_check_aligned(&c->rast.info, &c->opened[k].info, psprintf("the %s raster", name));
		tgpg_raster_band(&c->opened[k], 1, &c->factor_bands[c->nfactors]);
		f->band = &c->factor_bands[c->nfactors++];
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("factor %s must be a number or %s, got %s", name,
					c->coverage ? "a coverage table on the DEM's grid" : "a raster aligned with the DEM",
					format_type_be(type))));
}

/* The cell of a point argument; false when it is NULL and not required. */
static bool
point_cell(catchment_call *c, int value_arg, const char *what, bool required, int *col, int *row)
{
	FunctionCallInfo fcinfo = c->fcinfo;
	const int	a = arg(c, value_arg);

	if (PG_ARGISNULL(a))
	{
		if (required)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not be NULL", what)));
		return false;
	}
	tgpg_point_cell(PG_GETARG_DATUM(a), get_fn_expr_argtype(fcinfo->flinfo, a), &c->grid, what,
					col, row);
	return true;
}

static double
positive_arg(catchment_call *c, int value_arg, const char *name)
{
	double		v = tgpg_arg_float8(c->fcinfo, arg(c, value_arg), name);

	if (!(v > 0) || isinf(v))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a positive number, got %g", name, v)));
	return v;
}

static double
nodata_arg(catchment_call *c, int value_arg)
{
	FunctionCallInfo fcinfo = c->fcinfo;
	const int	a = arg(c, value_arg);

	return PG_ARGISNULL(a) ? -9999 : PG_GETARG_FLOAT8(a);
}

/* NaN -> nodata over a float band */
static void
float_nodata(float *v, size_t n, double nodata)
{
	for (size_t i = 0; i < n; i++)
		if (isnan(v[i]))
			v[i] = (float) nodata;
}

/* The value form's result, or the coverage form's tiles. */
static Datum
call_finish(catchment_call *c, struct varlena *result, const tgpg_grid_raster *out)
{
	call_close(c);
	if (c->coverage)
	{
		tgpg_mosaic_emit(&c->m, c->fcinfo, out, 1);
		return (Datum) 0;
	}
	return PointerGetDatum(result);
}

static void
one_band(tgpg_grid_raster *out, tg_pixtype type, double nodata)
{
	memset(out, 0, sizeof *out);
	out->nbands = 1;
	out->specs[0].pixtype = type;
	out->specs[0].has_nodata = true;
	out->specs[0].nodata = nodata;
}

/* ------------------------------------------------------------------------
 * tg_ls_factor(dem, routing, m, n, a0, b0, fill, band, method, exponent,
 *              threshold, nodata, backend)
 * tg_rusle(dem, r, k, c, p, routing, m, n, a0, b0, fill, band, method,
 *          exponent, threshold, nodata, backend)
 * The LS block (routing ... backend) starts at argument L: 1 and 5.
 * ------------------------------------------------------------------------ */
static void
ls_params(catchment_call *c, int L, tg_rusle_params *rp)
{
	FunctionCallInfo fcinfo = c->fcinfo;

	memset(rp, 0, sizeof *rp);
	tgpg_flow_params(fcinfo, arg(c, L), arg(c, L + 5), arg(c, L + 8), arg(c, L + 9), &c->grid,
					 &rp->flow);
	rp->method = tgpg_accum_method_arg(fcinfo, arg(c, L + 7));
	rp->m = tgpg_arg_float8(fcinfo, arg(c, L + 1), "m");
	rp->n = tgpg_arg_float8(fcinfo, arg(c, L + 2), "n");
	if (!(rp->m >= 0) || !(rp->n >= 0) || isinf(rp->m) || isinf(rp->n))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the LS exponents m and n must be non-negative numbers, got %g and %g",
						rp->m, rp->n)));
	rp->a0 = positive_arg(c, L + 3, "a0");
	rp->b0 = positive_arg(c, L + 4, "b0");
	rp->r.value = rp->k.value = rp->c.value = rp->p.value = 1;
}

static Datum
ls_factor(FunctionCallInfo fcinfo, bool coverage)
{
	catchment_call c;
	tg_rusle_params rp;
	tgpg_grid_raster out;
	struct varlena *result;
	tg_ctx		ctx;
	tg_error	err;

	if (!call_open(&c, fcinfo, "tg_ls_factor", coverage, 7, RUSLE_BYTES_PER_CELL))
		PG_RETURN_NULL();
	ls_params(&c, 1, &rp);
	one_band(&out, TG_PT_32BF, nodata_arg(&c, 11));
	result = call_outputs(&c, &out);
	ctx = call_ctx(&c, 12);
	tg_error_clear(&err);
	tgpg_check(tg_rusle(&ctx, &c.dem, &rp, out.data[0], NULL, &err), &err);
	float_nodata(out.data[0], (size_t) c.grid.width * c.grid.height, out.specs[0].nodata);
	return call_finish(&c, result, &out);
}

static Datum
rusle(FunctionCallInfo fcinfo, bool coverage)
{
	catchment_call c;
	tg_rusle_params rp;
	tgpg_grid_raster out;
	struct varlena *result;
	tg_ctx		ctx;
	tg_error	err;

	if (!call_open(&c, fcinfo, "tg_rusle", coverage, 11, RUSLE_BYTES_PER_CELL))
		PG_RETURN_NULL();
	ls_params(&c, 5, &rp);
	factor_arg(&c, 1, "R", &rp.r);
	factor_arg(&c, 2, "K", &rp.k);
	factor_arg(&c, 3, "C", &rp.c);
	factor_arg(&c, 4, "P", &rp.p);
	one_band(&out, TG_PT_32BF, nodata_arg(&c, 15));
	result = call_outputs(&c, &out);
	ctx = call_ctx(&c, 16);
	tg_error_clear(&err);
	tgpg_check(tg_rusle(&ctx, &c.dem, &rp, NULL, out.data[0], &err), &err);
	float_nodata(out.data[0], (size_t) c.grid.width * c.grid.height, out.specs[0].nodata);
	return call_finish(&c, result, &out);
}

PG_FUNCTION_INFO_V1(tgpg_ls_factor);
Datum
tgpg_ls_factor(PG_FUNCTION_ARGS)
{
	return ls_factor(fcinfo, false);
}

PG_FUNCTION_INFO_V1(tgpg_ls_factor_coverage);
Datum
tgpg_ls_factor_coverage(PG_FUNCTION_ARGS)
{
	return ls_factor(fcinfo, true);
}

PG_FUNCTION_INFO_V1(tgpg_rusle);
Datum
tgpg_rusle(PG_FUNCTION_ARGS)
{
	return rusle(fcinfo, false);
}

PG_FUNCTION_INFO_V1(tgpg_rusle_coverage);
Datum
tgpg_rusle_coverage(PG_FUNCTION_ARGS)
{
	return rusle(fcinfo, true);
}

/* ------------------------------------------------------------------------
 * tg_travel_time(dem, outlet, n, k, b, min_slope, fill, band, nodata, backend)
 * tg_isochrone_bands(dem, outlet, interval, n, k, b, min_slope, fill, band, backend)
 * tg_isochrones(the same arguments)
 * The travel block (n, k, b, min_slope, fill, band) starts at argument T: 2 and 3.
 * ------------------------------------------------------------------------ */
static void
travel_params(catchment_call *c, int T, bool outlet_required, tg_travel_params *tp)
{
	FunctionCallInfo fcinfo = c->fcinfo;

	memset(tp, 0, sizeof *tp);
	tgpg_flow_params(fcinfo, -1, arg(c, T + 4), -1, -1, &c->grid, &tp->flow);
	tp->has_outlet = point_cell(c, 1, "outlet", outlet_required, &tp->outlet_col, &tp->outlet_row);
	factor_arg(c, T, "n", &tp->roughness);
	factor_arg(c, T + 1, "K", &tp->velocity);
	tp->b = tgpg_arg_float8(fcinfo, arg(c, T + 2), "b");
	if (!(tp->b >= 0) || isinf(tp->b))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the slope exponent b must be a non-negative number, got %g", tp->b)));
	tp->min_slope = positive_arg(c, T + 3, "min_slope");
	if (tp->roughness.band == NULL && !(tp->roughness.value > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n must be a positive number, got %g", tp->roughness.value)));
	if (tp->velocity.band == NULL && !(tp->velocity.value > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("K must be a positive number, got %g", tp->velocity.value)));
}

static Datum
travel_time(FunctionCallInfo fcinfo, bool coverage)
{
	catchment_call c;
	tg_travel_params tp;
	tgpg_grid_raster out;
	struct varlena *result;
	tg_ctx		ctx;
	tg_error	err;

	if (!call_open(&c, fcinfo, "tg_travel_time", coverage, 7, TRAVEL_BYTES_PER_CELL))
		PG_RETURN_NULL();
	travel_params(&c, 2, false, &tp);
	one_band(&out, TG_PT_32BF, nodata_arg(&c, 8));
	result = call_outputs(&c, &out);
	ctx = call_ctx(&c, 9);
	tg_error_clear(&err);
	tgpg_check(tg_travel_time(&ctx, &c.dem, &tp, out.data[0], NULL, &err), &err);
	float_nodata(out.data[0], (size_t) c.grid.width * c.grid.height, out.specs[0].nodata);
	return call_finish(&c, result, &out);
}

/*
 * Band numbers of travel times: band k (1, 2, ...) holds times in
 * [(k - 1) interval, k interval); 0 (nodata) outside the watershed.
 */
static double
isochrone_bands(catchment_call *c, tgpg_grid_raster *out, struct varlena **result)
{
	const size_t n = (size_t) c->grid.width * c->grid.height;
	tg_travel_params tp;
	double		interval;
	float	   *time;
	uint32	   *bands;
	tg_ctx		ctx;
	tg_error	err;

	interval = positive_arg(c, 2, "interval");
	travel_params(c, 3, true, &tp);
	one_band(out, TG_PT_32BUI, 0);
	*result = call_outputs(c, out);
	bands = out->data[0];
	time = palloc_extended(n * sizeof(float) + 1, MCXT_ALLOC_HUGE);
	ctx = call_ctx(c, 9);
	tg_error_clear(&err);
	tgpg_check(tg_travel_time(&ctx, &c->dem, &tp, time, NULL, &err), &err);
	for (size_t i = 0; i < n; i++)
	{
		double		k = isnan(time[i]) ? 0 : floor((double) time[i] / interval) + 1;

		if (k > (double) PG_UINT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("interval %g makes more than %u bands", interval, PG_UINT32_MAX)));
		bands[i] = (uint32) k;
	}
	pfree(time);
	return interval;
}

static Datum
isochrone_bands_fn(FunctionCallInfo fcinfo, bool coverage)
{
	catchment_call c;
	tgpg_grid_raster out;
	struct varlena *result;

	if (!call_open(&c, fcinfo, "tg_isochrone_bands", coverage, 8, TRAVEL_BYTES_PER_CELL))
		PG_RETURN_NULL();
	isochrone_bands(&c, &out, &result);
	return call_finish(&c, result, &out);
}

/*
 * Polygons of the bands: each tile's band raster through ST_DumpAsPolygons,
 * then the pieces of each band (across tiles) merged with ST_Union.
 */
static Datum
isochrones(FunctionCallInfo fcinfo, bool coverage)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	catchment_call c;
	tgpg_grid_raster out;
	struct varlena *result;
	double		interval;
	Oid			geom_type,
				raster_type;
	int			ntiles,
				npieces = 0,
				cap = 64;
	Datum	   *pieces,
			   *piece_band;
	MemoryContext keep = CurrentMemoryContext;

	InitMaterializedSRF(fcinfo, 0);
	if (!call_open(&c, fcinfo, "tg_isochrones", coverage, 8, TRAVEL_BYTES_PER_CELL))
		return (Datum) 0;
	interval = isochrone_bands(&c, &out, &result);
	geom_type = get_fn_expr_argtype(fcinfo->flinfo, arg(&c, 1));
	ntiles = coverage ? c.m.ntiles : 1;
	pieces = palloc(cap * sizeof(Datum));
	piece_band = palloc(cap * sizeof(Datum));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	/* the raster type: the DEM argument's, or the coverage column's */
	if (!coverage)
		raster_type = get_fn_expr_argtype(fcinfo->flinfo, 0);
	else
		raster_type = get_atttype(PG_GETARG_OID(0), get_attnum(PG_GETARG_OID(0), c.m.rast_column));
	for (int t = 0; t < ntiles; t++)
	{
		Datum		tile;
		MemoryContext old = MemoryContextSwitchTo(keep);

		tile = coverage ? tgpg_mosaic_tile(&c.m, t, &out) : PointerGetDatum(result);
		MemoryContextSwitchTo(old);
		CHECK_FOR_INTERRUPTS();
		if (SPI_execute_with_args("SELECT val::int8, geom FROM ST_DumpAsPolygons($1, 1, true)",
								  1, &raster_type, &tile, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not polygonize isochrone bands");
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			bool		isnull;
			Datum		band = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull);
			Datum		geom = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull);

			old = MemoryContextSwitchTo(keep);
			if (npieces == cap)
			{
				cap *= 2;
				pieces = repalloc(pieces, cap * sizeof(Datum));
				piece_band = repalloc(piece_band, cap * sizeof(Datum));
			}
			pieces[npieces] = datumCopy(geom, false, -1);
			piece_band[npieces++] = Int64GetDatum(DatumGetInt64(band));
			MemoryContextSwitchTo(old);
		}
		if (coverage)
			pfree(DatumGetPointer(tile));
	}
	if (npieces > 0)
	{
		Oid			types[2] = {INT8ARRAYOID, get_array_type(geom_type)};
		Datum		args[2];
		int16		typlen;
		bool		typbyval;
		char		typalign;

		get_typlenbyvalalign(geom_type, &typlen, &typbyval, &typalign);
		args[0] = PointerGetDatum(construct_array(piece_band, npieces, INT8OID, 8, true, TYPALIGN_DOUBLE));
		args[1] = PointerGetDatum(construct_array(pieces, npieces, geom_type, typlen, typbyval, typalign));
		if (SPI_execute_with_args("SELECT b, ST_Multi(ST_Union(g)) FROM unnest($1, $2) AS u(b, g) "
								  "GROUP BY b ORDER BY b", 2, types, args, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not merge isochrone polygons");
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			bool		isnull;
			int64		band = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
			Datum		geom = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull);
			Datum		values[3];
			bool		nulls[3] = {false, false, false};

			values[0] = Float8GetDatum((double) (band - 1) * interval);
			values[1] = Float8GetDatum((double) band * interval);
			values[2] = geom;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	SPI_finish();
	call_close(&c);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(tgpg_travel_time);
Datum
tgpg_travel_time(PG_FUNCTION_ARGS)
{
	return travel_time(fcinfo, false);
}

PG_FUNCTION_INFO_V1(tgpg_travel_time_coverage);
Datum
tgpg_travel_time_coverage(PG_FUNCTION_ARGS)
{
	return travel_time(fcinfo, true);
}

PG_FUNCTION_INFO_V1(tgpg_isochrone_bands);
Datum
tgpg_isochrone_bands(PG_FUNCTION_ARGS)
{
	return isochrone_bands_fn(fcinfo, false);
}

PG_FUNCTION_INFO_V1(tgpg_isochrone_bands_coverage);
Datum
tgpg_isochrone_bands_coverage(PG_FUNCTION_ARGS)
{
	return isochrone_bands_fn(fcinfo, true);
}

PG_FUNCTION_INFO_V1(tgpg_isochrones);
Datum
tgpg_isochrones(PG_FUNCTION_ARGS)
{
	return isochrones(fcinfo, false);
}

PG_FUNCTION_INFO_V1(tgpg_isochrones_coverage);
Datum
tgpg_isochrones_coverage(PG_FUNCTION_ARGS)
{
	return isochrones(fcinfo, true);
}

/* ------------------------------------------------------------------------
 * tg_watershed(dem, outlet, fill, band, backend): 8BUI, 1 inside, 0 (nodata) outside
 * ------------------------------------------------------------------------ */
static Datum
watershed(FunctionCallInfo fcinfo, bool coverage)
{
	catchment_call c;
	tg_travel_params tp;
	tgpg_grid_raster out;
	struct varlena *result;
	const char *fn = "tg_watershed";
	uint8_t    *mask;
	size_t		n;
	tg_ctx		ctx;
	tg_error	err;

	if (!call_open(&c, fcinfo, fn, coverage, 3, TRAVEL_BYTES_PER_CELL))
		PG_RETURN_NULL();
	memset(&tp, 0, sizeof tp);
	tgpg_flow_params(fcinfo, -1, arg(&c, 2), -1, -1, &c.grid, &tp.flow);
	tp.has_outlet = point_cell(&c, 1, "outlet", true, &tp.outlet_col, &tp.outlet_row);
	one_band(&out, TG_PT_8BUI, 0);
	result = call_outputs(&c, &out);
	ctx = call_ctx(&c, 4);
	tg_error_clear(&err);
	mask = out.data[0];
	tgpg_check(tg_travel_time(&ctx, &c.dem, &tp, NULL, mask, &err), &err);
	n = (size_t) c.grid.width * c.grid.height;
	for (size_t i = 0; i < n; i++)
		mask[i] = mask[i] == 1 ? 1 : 0;
	return call_finish(&c, result, &out);
}

PG_FUNCTION_INFO_V1(tgpg_watershed);
Datum
tgpg_watershed(PG_FUNCTION_ARGS)
{
	return watershed(fcinfo, false);
}

PG_FUNCTION_INFO_V1(tgpg_watershed_coverage);
Datum
tgpg_watershed_coverage(PG_FUNCTION_ARGS)
{
	return watershed(fcinfo, true);
}

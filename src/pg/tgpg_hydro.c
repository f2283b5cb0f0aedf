/*
 * tgpg_hydro.c — tg_fill, tg_flow_direction, tg_flow_accumulation.
 */
#include "tgpg.h"

#include <math.h>

#include "executor/spi.h"
#include "utils/builtins.h"
#include "catalog/pg_type.h"

/* ------------------------------------------------------------------------
 * Argument vocabularies
 * ------------------------------------------------------------------------ */
typedef struct name_value
{
	const char *name;
	int			value;
} name_value;

/* Look a name up (case-insensitively) or raise 22023 listing the valid ones. */
static int
lookup(const char *what, const char *given, const name_value *names, int count)
{
	StringInfoData valid;
	int			i;

	for (i = 0; i < count; i++)
		if (pg_strcasecmp(given, names[i].name) == 0)
			return names[i].value;
	initStringInfo(&valid);
	for (i = 0; i < count; i++)
		appendStringInfo(&valid, "%s%s", i == 0 ? "" : i == count - 1 ? " and " : ", ", names[i].name);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid %s \"%s\"", what, given),
			 errdetail("Valid values are %s.", valid.data)));
	pg_unreachable();
}

static const name_value fill_methods[] = {
	{"priority-flood", TG_FILL_PRIORITY_FLOOD},
	{"planchon-darboux", TG_FILL_PLANCHON_DARBOUX},
};

static const name_value routings[] = {
	{"d8", TG_ROUTE_D8},
	{"fd8", TG_ROUTE_FD8},
	{"mfd-md", TG_ROUTE_MFD_MD},
	{"fdd8", TG_ROUTE_FDD8},
};

static const name_value accum_methods[] = {
	{"auto", TG_ACC_AUTO},
	{"flow-transfer", TG_ACC_FLOW_TRANSFER},
	{"dependency-transfer", TG_ACC_DEPENDENCY_TRANSFER},
	{"indegree", TG_ACC_INDEGREE},
	{"topological", TG_ACC_TOPOLOGICAL},
};

static const name_value units_names[] = {
	{"cells", TG_UNITS_CELLS},
	{"area", TG_UNITS_AREA},
	{"sca", TG_UNITS_SCA},
};

enum direction_output
{
	OUT_AUTO, OUT_CODES, OUT_MASK, OUT_SHARES
};

static const name_value direction_outputs[] = {
	{"auto", OUT_AUTO},
	{"codes", OUT_CODES},
	{"mask", OUT_MASK},
	{"shares", OUT_SHARES},
};

#define LOOKUP(what, fcinfo, argno, table) \
	lookup(what, tgpg_arg_cstring(fcinfo, argno, what), table, lengthof(table))

/* ------------------------------------------------------------------------
 * Geometry
 * ------------------------------------------------------------------------ */

/* Is this SRID a geographic (longitude/latitude) one?  Asks spatial_ref_sys. */
static bool
srid_is_geographic(int32 srid)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(srid)};
	bool		geographic = false;

	if (srid <= 0)
		return false;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "could not connect to SPI");
	if (SPI_execute_with_args("SELECT proj4text FROM spatial_ref_sys WHERE srid = $1",
							  1, argtypes, args, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		char	   *proj4 = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		geographic = proj4 != NULL && strstr(proj4, "+proj=longlat") != NULL;
	}
	SPI_finish();
	return geographic;
}

/*
 * The grid geometry of a raster: metric spacing per row for geographic
 * SRIDs (WGS84 ellipsoid), the pixel size otherwise.
 */
tg_grid_geometry
tgpg_grid_geometry(const tg_raster_info *info)
{
	tg_grid_geometry g;

	memset(&g, 0, sizeof g);
	g.width = info->width;
	g.height = info->height;
	g.cell_x = tg_georef_pixel_width(&info->geo);
	g.cell_y = tg_georef_pixel_height(&info->geo);
	if (srid_is_geographic(info->geo.srid))
	{
		if (info->geo.skew_x != 0 || info->geo.skew_y != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("skewed rasters in a geographic SRID are not supported"),
					 errhint("Warp the raster to a north-up grid (ST_Transform) or to a projected SRID.")));
		g.geographic = true;
		g.lat_top = info->geo.upperleft_y + 0.5 * info->geo.scale_y;
		g.lat_step = info->geo.scale_y;
		g.lon_step = fabs(info->geo.scale_x);
	}
	return g;
}

/* Refuse a weight raster that is not on the DEM's grid, saying how. */
static void
check_aligned(const tg_raster_info *dem, const tg_raster_info *w)
{
	const tg_georef *a = &dem->geo,
			   *b = &w->geo;
	double		tol = 1e-9 * fmax(fabs(a->scale_x), fabs(a->scale_y));

	if (w->width != dem->width || w->height != dem->height)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("weight raster is not aligned with the DEM"),
				 errdetail("The weight raster is %u x %u pixels, the DEM %u x %u.",
						   w->width, w->height, dem->width, dem->height)));
	if (b->srid != a->srid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("weight raster is not aligned with the DEM"),
				 errdetail("The weight raster has SRID %d, the DEM %d.", b->srid, a->srid)));
	if (fabs(b->scale_x - a->scale_x) > tol || fabs(b->scale_y - a->scale_y) > tol ||
		fabs(b->skew_x - a->skew_x) > tol || fabs(b->skew_y - a->skew_y) > tol)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("weight raster is not aligned with the DEM"),
				 errdetail("The weight raster's pixels are %g x %g (skew %g, %g), the DEM's %g x %g (skew %g, %g).",
						   b->scale_x, b->scale_y, b->skew_x, b->skew_y,
						   a->scale_x, a->scale_y, a->skew_x, a->skew_y)));
	if (fabs(b->upperleft_x - a->upperleft_x) > tol || fabs(b->upperleft_y - a->upperleft_y) > tol)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("weight raster is not aligned with the DEM"),
				 errdetail("The weight raster's upper-left corner is (%.10g, %.10g), the DEM's (%.10g, %.10g).",
						   b->upperleft_x, b->upperleft_y, a->upperleft_x, a->upperleft_y)));
}

/* Pixel size must be usable: zero scale raises 22023 before any work. */
static void
check_pixel_size(const tg_grid_geometry *g)
{
	if (!(g->cell_x > 0) || !(g->cell_y > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pixel size must be positive, got %g x %g", g->cell_x, g->cell_y)));
}

/* ------------------------------------------------------------------------
 * tg_fill(rast, band, method, epsilon, nodata, backend)
 * ------------------------------------------------------------------------ */
PG_FUNCTION_INFO_V1(tgpg_fill);
Datum
tgpg_fill(PG_FUNCTION_ARGS)
{
	Datum		rast_datum;
	tgpg_raster rast;
	tg_raster_info out_info;
	tg_band		dem;
	tg_band_spec spec;
	tg_fill_params params;
	struct varlena *result;
	void	   *pixels;
	tg_ctx		ctx;
	tg_error	err;
	int32		band;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	rast_datum = PG_GETARG_DATUM(0);
	band = tgpg_arg_int32(fcinfo, 1, "band");
	params.method = (tg_fill_method) LOOKUP("method", fcinfo, 2, fill_methods);
	params.epsilon = tgpg_arg_float8(fcinfo, 3, "epsilon");
	if (!(params.epsilon >= 0) || isinf(params.epsilon))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("epsilon must be zero or a positive number, got %g", params.epsilon)));

	tgpg_raster_open(rast_datum, &rast);
	tgpg_raster_band(&rast, band, &dem);

	/* values exact in float stay 32BF; 32-bit integers and 64BF need 64BF */
	params.out_type = dem.pixtype == TG_PT_64BF || dem.pixtype == TG_PT_32BSI ||
		dem.pixtype == TG_PT_32BUI ? TG_PT_64BF : TG_PT_32BF;
	out_info = rast.info;
	out_info.num_bands = 1;
	spec.pixtype = params.out_type;
	spec.has_nodata = true;
	spec.nodata = !PG_ARGISNULL(4) ? PG_GETARG_FLOAT8(4) :
		dem.has_nodata ? dem.nodata : tg_pixtype_min_value(params.out_type);
	result = tgpg_raster_create(&out_info, &spec, &pixels);

	tgpg_ctx_init(&ctx, "tg_fill", fcinfo, 5);
	tg_error_clear(&err);
	tgpg_check(tg_fill(&ctx, &dem, &params, spec.nodata, pixels, &err), &err);

	tgpg_raster_close(&rast, rast_datum);
	PG_RETURN_POINTER(result);
}

/* ------------------------------------------------------------------------
 * tg_flow_direction(rast, band, routing, fill, exponent, threshold, output, backend)
 * ------------------------------------------------------------------------ */
static void
flow_params_from_args(FunctionCallInfo fcinfo, int routing_arg, int fill_arg, int exponent_arg,
					  int threshold_arg, const tg_raster_info *info, tg_flow_params *p)
{
	memset(p, 0, sizeof *p);
	p->routing = (tg_routing) LOOKUP("routing", fcinfo, routing_arg, routings);
	p->fill = PG_ARGISNULL(fill_arg) ? true : PG_GETARG_BOOL(fill_arg);
	p->exponent = tgpg_arg_float8(fcinfo, exponent_arg, "exponent");
	p->threshold = tgpg_arg_float8(fcinfo, threshold_arg, "threshold");
	if (!(p->exponent > 0) || isinf(p->exponent))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("exponent must be a positive number, got %g", p->exponent)));
	if (!(p->threshold >= 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("threshold must be zero or positive, got %g", p->threshold)));
	p->geom = tgpg_grid_geometry(info);
	check_pixel_size(&p->geom);
}

PG_FUNCTION_INFO_V1(tgpg_flow_direction);
Datum
tgpg_flow_direction(PG_FUNCTION_ARGS)
{
	Datum		rast_datum;
	tgpg_raster rast;
	tg_raster_info out_info;
	tg_band		dem;
	tg_band_spec specs[8];
	tg_flow_params p;
	struct varlena *result;
	void	   *pixels[8];
	tg_ctx		ctx;
	tg_error	err;
	int32		band;
	int			output;
	size_t		n;
	int			k;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	rast_datum = PG_GETARG_DATUM(0);
	band = tgpg_arg_int32(fcinfo, 1, "band");
	output = LOOKUP("output", fcinfo, 6, direction_outputs);
	tgpg_raster_open(rast_datum, &rast);
	tgpg_raster_band(&rast, band, &dem);
	flow_params_from_args(fcinfo, 2, 3, 4, 5, &rast.info, &p);
	if (output == OUT_AUTO)
		output = p.routing == TG_ROUTE_D8 ? OUT_CODES : OUT_SHARES;
	if (output == OUT_CODES && p.routing != TG_ROUTE_D8)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("output 'codes' needs routing 'd8'"),
				 errhint("A multiple-flow routing has several receivers: use output => 'mask' or 'shares'.")));

	n = (size_t) rast.info.width * rast.info.height;
	out_info = rast.info;
	tgpg_ctx_init(&ctx, "tg_flow_direction", fcinfo, 7);
	tg_error_clear(&err);

	if (output == OUT_SHARES)
	{
		out_info.num_bands = 8;
		for (k = 0; k < 8; k++)
		{
			specs[k].pixtype = TG_PT_32BF;
			specs[k].has_nodata = true;
			specs[k].nodata = -1;
		}
		result = tgpg_raster_create(&out_info, specs, pixels);
		{
			float	   *frac = palloc_extended(8 * n * sizeof(float) + 1, MCXT_ALLOC_HUGE);
			size_t		i;

			tgpg_check(tg_flow_direction(&ctx, &dem, &p, NULL, frac, &err), &err);
			for (k = 0; k < 8; k++)
				for (i = 0; i < n; i++)
				{
					float		v = frac[(size_t) k * n + i];

					((float *) pixels[k])[i] = isnan(v) ? -1.0f : v;
				}
			pfree(frac);
		}
	}
	else
	{
		uint8_t    *codes = palloc_extended(n + 1, MCXT_ALLOC_HUGE);
		float	   *frac = NULL;
		size_t		i;

		out_info.num_bands = 1;
		specs[0].pixtype = output == OUT_CODES ? TG_PT_8BUI : TG_PT_16BUI;
		specs[0].has_nodata = true;
		specs[0].nodata = output == OUT_CODES ? 255 : 65535;
		result = tgpg_raster_create(&out_info, specs, pixels);
		if (output == OUT_CODES)
			tgpg_check(tg_flow_direction(&ctx, &dem, &p, codes, NULL, &err), &err);
		else
		{
			/* mask: the receivers' ESRI codes or-ed together */
			if (p.routing == TG_ROUTE_D8)
				tgpg_check(tg_flow_direction(&ctx, &dem, &p, codes, NULL, &err), &err);
			else
			{
				frac = palloc_extended(8 * n * sizeof(float) + 1, MCXT_ALLOC_HUGE);
				tgpg_check(tg_flow_direction(&ctx, &dem, &p, NULL, frac, &err), &err);
			}
		}
		for (i = 0; i < n; i++)
		{
			if (output == OUT_CODES)
				((uint8_t *) pixels[0])[i] = codes[i];
			else if (frac == NULL)
				((uint16_t *) pixels[0])[i] = codes[i] == 255 ? 65535 : codes[i];
			else
			{
				uint16_t	mask = 0;

				if (isnan(frac[i]))
					mask = 65535;
				else
					for (k = 0; k < 8; k++)
						if (frac[(size_t) k * n + i] > 0)
							mask |= (uint16_t) (1u << k);
				((uint16_t *) pixels[0])[i] = mask;
			}
		}
		pfree(codes);
		if (frac)
			pfree(frac);
	}

	tgpg_raster_close(&rast, rast_datum);
	PG_RETURN_POINTER(result);
}

/* ------------------------------------------------------------------------
 * tg_flow_accumulation(rast, band, routing, method, weight, units, fill,
 *                      exponent, threshold, weight_band, pixeltype, nodata, backend)
 * ------------------------------------------------------------------------ */
PG_FUNCTION_INFO_V1(tgpg_flow_accumulation);
Datum
tgpg_flow_accumulation(PG_FUNCTION_ARGS)
{
	Datum		rast_datum;
	tgpg_raster rast,
				wrast;
	tg_raster_info out_info;
	tg_band		dem,
				weight;
	tg_band_spec spec;
	tg_flow_params p;
	tg_accum_method method;
	tg_accum_units units;
	struct varlena *result;
	void	   *pixels;
	double	   *acc;
	tg_ctx		ctx;
	tg_error	err;
	int32		band;
	bool		has_weight = !PG_ARGISNULL(4);
	char	   *pixeltype;
	size_t		n,
				i;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	rast_datum = PG_GETARG_DATUM(0);
	band = tgpg_arg_int32(fcinfo, 1, "band");
	method = (tg_accum_method) LOOKUP("method", fcinfo, 3, accum_methods);
	units = (tg_accum_units) LOOKUP("units", fcinfo, 5, units_names);
	pixeltype = tgpg_arg_cstring(fcinfo, 10, "pixeltype");
	if (pg_strcasecmp(pixeltype, "64BF") != 0 && pg_strcasecmp(pixeltype, "32BF") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid pixeltype \"%s\"", pixeltype),
				 errdetail("Valid values are 64BF and 32BF.")));

	tgpg_raster_open(rast_datum, &rast);
	tgpg_raster_band(&rast, band, &dem);
	flow_params_from_args(fcinfo, 2, 6, 7, 8, &rast.info, &p);
	if (has_weight)
	{
		tgpg_raster_open(PG_GETARG_DATUM(4), &wrast);
		check_aligned(&rast.info, &wrast.info);
		tgpg_raster_band(&wrast, tgpg_arg_int32(fcinfo, 9, "weight_band"), &weight);
	}

	n = (size_t) rast.info.width * rast.info.height;
	out_info = rast.info;
	out_info.num_bands = 1;
	spec.pixtype = pg_strcasecmp(pixeltype, "32BF") == 0 ? TG_PT_32BF : TG_PT_64BF;
	spec.has_nodata = true;
	spec.nodata = PG_ARGISNULL(11) ? -9999 : PG_GETARG_FLOAT8(11);
	result = tgpg_raster_create(&out_info, &spec, &pixels);

	/* 64BF results are written in place; 32BF go through a double buffer */
	acc = spec.pixtype == TG_PT_64BF ? (double *) pixels
		: palloc_extended(n * sizeof(double) + 1, MCXT_ALLOC_HUGE);
	tgpg_ctx_init(&ctx, "tg_flow_accumulation", fcinfo, 12);
	tg_error_clear(&err);
	tgpg_check(tg_flow_accumulation(&ctx, &dem, has_weight ? &weight : NULL, &p, method, units,
									acc, &err), &err);
	for (i = 0; i < n; i++)
	{
		double		v = isnan(acc[i]) ? spec.nodata : acc[i];

		if (spec.pixtype == TG_PT_64BF)
			acc[i] = v;
		else
			((float *) pixels)[i] = (float) v;
	}
	if (spec.pixtype != TG_PT_64BF)
		pfree(acc);

	if (has_weight)
		tgpg_raster_close(&wrast, PG_GETARG_DATUM(4));
	tgpg_raster_close(&rast, rast_datum);
	PG_RETURN_POINTER(result);
}

/*
 * tgpg_hydro.c — tg_fill, tg_flow_direction, tg_flow_accumulation and the
 * chained tg_hydrology, each in a value form (one raster) and a coverage form
 * (a tiled raster table read as one grid, rows of tiles back).
 *
 * Each operation is a plan (arguments to parameters and output band types)
 * and a compute (the core call into the output bands), shared by both forms.
 * Argument i of the value form is argument a + i of the coverage form, whose
 * extra leading arguments are (coverage, rast_column, id_column): a = 2.
 */
#include "tgpg.h"

#include "utils/timestamp.h"

#include <math.h>

#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "access/htup_details.h"

/* ------------------------------------------------------------------------
 * Argument vocabularies
 * ------------------------------------------------------------------------ */
static const tgpg_name fill_methods[] = {
	{"priority-flood", TG_FILL_PRIORITY_FLOOD},
	{"planchon-darboux", TG_FILL_PLANCHON_DARBOUX},
};

static const tgpg_name routings[] = {
	{"d8", TG_ROUTE_D8},
	{"fd8", TG_ROUTE_FD8},
	{"mfd-md", TG_ROUTE_MFD_MD},
	{"fdd8", TG_ROUTE_FDD8},
};

static const tgpg_name accum_methods[] = {
	{"auto", TG_ACC_AUTO},
	{"flow-transfer", TG_ACC_FLOW_TRANSFER},
	{"dependency-transfer", TG_ACC_DEPENDENCY_TRANSFER},
	{"indegree", TG_ACC_INDEGREE},
	{"topological", TG_ACC_TOPOLOGICAL},
};

tg_accum_method
tgpg_accum_method_arg(FunctionCallInfo fcinfo, int argno)
{
	return (tg_accum_method) TGPG_ARG_LOOKUP("method", fcinfo, argno, accum_methods);
}

static const tgpg_name units_names[] = {
	{"cells", TG_UNITS_CELLS},
	{"area", TG_UNITS_AREA},
	{"sca", TG_UNITS_SCA},
};

enum direction_output
{
	OUT_AUTO, OUT_CODES, OUT_MASK, OUT_SHARES
};

static const tgpg_name direction_outputs[] = {
	{"auto", OUT_AUTO},
	{"codes", OUT_CODES},
	{"mask", OUT_MASK},
	{"shares", OUT_SHARES},
};


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
tgpg_grid_geometry(const tgpg_grid *grid)
{
	const tg_georef *geo = &grid->geo;
	tg_grid_geometry g;

	memset(&g, 0, sizeof g);
	g.width = grid->width;
	g.height = grid->height;
	g.cell_x = tg_georef_pixel_width(geo);
	g.cell_y = tg_georef_pixel_height(geo);
	if (srid_is_geographic(geo->srid))
	{
		if (geo->skew_x != 0 || geo->skew_y != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("skewed rasters in a geographic SRID are not supported"),
					 errhint("Warp the raster to a north-up grid (ST_Transform) or to a projected SRID.")));
		g.geographic = true;
		g.lat_top = geo->upperleft_y + 0.5 * geo->scale_y;
		g.lat_step = geo->scale_y;
		g.lon_step = fabs(geo->scale_x);
	}
	return g;
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
 * Shared by the value forms
 * ------------------------------------------------------------------------ */

/* The DEM band of a value-form call: argument 0 (raster) and 1 (band). */
static void
value_dem(FunctionCallInfo fcinfo, tgpg_raster *rast, tg_band *dem, tgpg_grid *grid)
{
	tgpg_raster_open(PG_GETARG_DATUM(0), rast);
	tgpg_raster_band(rast, tgpg_arg_int32(fcinfo, 1, "band"), dem);
	*grid = tgpg_raster_grid(&rast->info);
}

/* ------------------------------------------------------------------------
 * tg_fill(rast, band, method, epsilon, nodata, backend)
 * ------------------------------------------------------------------------ */
#define FILL_BYTES_PER_CELL 40

/* values exact in float stay 32BF; 32-bit integers and 64BF need 64BF */
static tg_pixtype
fill_type(const tg_band *dem)
{
	return dem->pixtype == TG_PT_64BF || dem->pixtype == TG_PT_32BSI ||
		dem->pixtype == TG_PT_32BUI ? TG_PT_64BF : TG_PT_32BF;
}

static double
fill_nodata(FunctionCallInfo fcinfo, int argno, const tg_band *dem, tg_pixtype type)
{
	if (argno >= 0 && !PG_ARGISNULL(argno))
		return PG_GETARG_FLOAT8(argno);
	return dem->has_nodata ? dem->nodata : tg_pixtype_min_value(type);
}

static void
fill_plan(FunctionCallInfo fcinfo, int a, const tg_band *dem, tg_fill_params *params,
		  tgpg_grid_raster *out)
{
	params->method = (tg_fill_method) TGPG_ARG_LOOKUP("method", fcinfo, a + 2, fill_methods);
	params->epsilon = tgpg_arg_float8(fcinfo, a + 3, "epsilon");
	if (!(params->epsilon >= 0) || isinf(params->epsilon))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("epsilon must be zero or a positive number, got %g", params->epsilon)));
	params->out_type = fill_type(dem);
	out->nbands = 1;
	out->specs[0].pixtype = params->out_type;
	out->specs[0].has_nodata = true;
	out->specs[0].nodata = fill_nodata(fcinfo, a + 4, dem, params->out_type);
}

static void
fill_compute(FunctionCallInfo fcinfo, int a, const tg_band *dem, const tg_fill_params *params,
			 tgpg_grid_raster *out)
{
	tg_ctx		ctx;
	tg_error	err;

	tgpg_ctx_init(&ctx, "tg_fill", fcinfo, a + 5);
	tg_error_clear(&err);
	tgpg_check(tg_fill(&ctx, dem, params, out->specs[0].nodata, out->data[0], &err), &err);
}

PG_FUNCTION_INFO_V1(tgpg_fill);
Datum
tgpg_fill(PG_FUNCTION_ARGS)
{
	tgpg_raster rast;
	tg_band		dem;
	tgpg_grid	grid;
	tg_fill_params params;
	tgpg_grid_raster out;
	struct varlena *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	value_dem(fcinfo, &rast, &dem, &grid);
	fill_plan(fcinfo, 0, &dem, &params, &out);
	result = tgpg_raster_result(&rast.info, &out);
	fill_compute(fcinfo, 0, &dem, &params, &out);
	tgpg_raster_close(&rast, PG_GETARG_DATUM(0));
	PG_RETURN_POINTER(result);
}

static double
seconds_since(TimestampTz t0)
{
	return TimestampDifferenceMilliseconds(t0, GetCurrentTimestamp()) / 1000.0;
}

/* What receives each band's rows (width * nrows doubles, NaN = nodata). */
typedef void (*band_rows_fn) (tgpg_mosaic *m, int k, int row0, int nrows, double *rows, void *arg);

/*
 * The coverage's rows band by band, in order, to `done`: filled in bands
 * (fill_blocks.c: every band read twice, once to scan it and once to finish
 * it) or, without fill, as read.  NOTICEs name `function` and each band.
 */
static void
rows_in_bands(tgpg_mosaic *m, const tg_ctx *ctx, const char *function, bool fill, int nb,
			  const int *row0s, const int *nrows, TimestampTz t0, band_rows_fn done, void *arg)
{
	const int	W = m->width;
	tg_fill_blocks *fb = NULL;
	tg_error	err;

	tg_error_clear(&err);
	if (fill)
		tgpg_check(tg_fill_blocks_begin(ctx, W, m->height, &fb, &err), &err);
	for (int pass = fill ? 0 : 1; pass < 2; pass++)
	{
		for (int k = 0; k < nb; k++)
		{
			int			first,
						count;
			double	   *z = tgpg_mosaic_read_halo(m, row0s[k], nrows[k], &first, &count);

			if (pass == 0)
				tgpg_check(tg_fill_blocks_scan(ctx, fb, row0s[k], nrows[k], z, &err), &err);
			else if (fill)
			{
				double	   *w = palloc_extended(sizeof(double) * (size_t) W * nrows[k] + 1, MCXT_ALLOC_HUGE);

				tgpg_check(tg_fill_blocks_finish(ctx, fb, row0s[k], nrows[k], z, w, &err), &err);
				done(m, k, row0s[k], nrows[k], w, arg);
				pfree(w);
			}
			else
				done(m, k, row0s[k], nrows[k], z + (size_t) (row0s[k] - first) * W, arg);
			pfree(z);
			ereport(NOTICE,
					(errmsg("%s: %s band %d of %d (%.1f s)", function,
							pass == 0 ? "scanned for filling" : fill ? "filled" : "read",
							k + 1, nb, seconds_since(t0))));
		}
		if (pass == 0)
			tgpg_check(tg_fill_blocks_solve(ctx, fb, &err), &err);
	}
	if (fb)
		tg_fill_blocks_end(ctx, fb);
}

/* tg_fill in bands: each band's tiles are returned as soon as it is filled. */
typedef struct fill_output
{
	FunctionCallInfo fcinfo;
	tg_fill_params params;
	tgpg_grid_raster out;
	int64		written;
} fill_output;

static void
emit_filled_rows(tgpg_mosaic *m, int k, int row0, int nrows, double *rows, void *arg)
{
	fill_output *f = arg;

	if (k == 0)					/* the scan read every band: the pixel type is known */
		fill_plan(f->fcinfo, 2, &m->dem, &f->params, &f->out);
	tgpg_mosaic_emit_rows(m, f->fcinfo, f->out.specs, 1, row0, nrows, (const double *const *) &rows,
						  &f->written);
}

/* A coverage beyond terra_gpu.max_memory_mb, filled in bands of rows on the CPU. */
static void
fill_coverage_in_bands(FunctionCallInfo fcinfo, tgpg_mosaic *m)
{
	const size_t budget = tgpg_memory_budget();
	const int	W = m->width;
	int		   *row0s,
			   *nrows,
				nb,
				max_rows;
	fill_output f;
	tg_ctx		ctx;
	TimestampTz t0 = GetCurrentTimestamp();

	memset(&f, 0, sizeof f);
	f.fcinfo = fcinfo;
	f.params.method = (tg_fill_method) TGPG_ARG_LOOKUP("method", fcinfo, 4, fill_methods);
	f.params.epsilon = tgpg_arg_float8(fcinfo, 5, "epsilon");
	tgpg_ctx_init(&ctx, "tg_fill", fcinfo, 7);
	if (f.params.method != TG_FILL_PRIORITY_FLOOD || f.params.epsilon != 0 || ctx.backend == TG_BACKEND_GPU)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("tg_fill over %s needs about %zu MB as one grid, more than the %zu MB a coverage job may use",
						m->relname, ((size_t) W * m->height * FILL_BYTES_PER_CELL) >> 20, budget >> 20),
				 errdetail("Beyond terra_gpu.max_memory_mb only method priority-flood with epsilon 0 "
						   "runs, in bands of rows on the CPU."),
				 errhint("Raise terra_gpu.max_memory_mb for epsilon > 0, planchon-darboux or backend gpu.")));
	/* per cell of a band: the blocked fill's own, the rows read and the rows filled */
	nb = tgpg_mosaic_bands(m, tg_fill_blocks_bytes_per_cell() + 2 * sizeof(double), &row0s, &nrows,
						   &max_rows);
	ereport(NOTICE,
			(errmsg("tg_fill: %s spans %d x %d cells, more than terra_gpu.max_memory_mb holds: "
					"filling it in %d bands of rows", m->relname, W, m->height, nb)));
	rows_in_bands(m, &ctx, "tg_fill", true, nb, row0s, nrows, t0, emit_filled_rows, &f);
	if (ctx.stats)
	{
		ctx.stats->backend = TG_BACKEND_CPU;
		ctx.stats->cells = (int64) W * m->height;
		ctx.stats->core_ms = TimestampDifferenceMilliseconds(t0, GetCurrentTimestamp());
		ctx.stats->chunks = nb;
		snprintf(ctx.stats->method, sizeof ctx.stats->method, "priority-flood in bands");
		snprintf(ctx.stats->note, sizeof ctx.stats->note,
				 "%d bands of at most %d rows within terra_gpu.max_memory_mb", nb, max_rows);
	}
}

/*
 * Routing coverages beyond terra_gpu.max_memory_mb, on the CPU in bands of
 * rows (route_blocks.c).  The routing surface is made band by band (filled
 * in bands as above unless fill => false) into a temporary file (floats
 * where the DEM's values are exact in them), which each later pass reads
 * back with two rows of halo.
 */
typedef struct banded_surface
{
	const char *function;
	int			nb;
	int		   *row0s;
	int		   *nrows;
	int			max_rows;
	tgpg_rows_file file;
	TimestampTz t0;
} banded_surface;

/* Is every value of this pixel type (and NaN) exact as a float? */
static bool
exact_in_float(tg_pixtype t)
{
	return t != TG_PT_32BSI && t != TG_PT_32BUI && t != TG_PT_64BF;
}

/* Per cell of a band: the surface read back and the scan's flat flags, labels and queue. */
#define FLAT_SCAN_BYTES_PER_CELL 17

/* rows_in_bands' receiver: the surface file, opened once the pixel type is known. */
static void
write_surface_rows(tgpg_mosaic *m, int k, int row0, int nrows, double *rows, void *arg)
{
	banded_surface *s = arg;

	/* the first tile read gave the pixel type: fill only moves its values */
	if (k == 0)
		tgpg_rows_file_open(&s->file, m->width, m->height, exact_in_float(m->dem.pixtype));
	tgpg_rows_file_write(&s->file, row0, nrows, rows);
}

/*
 * The surface into the temporary file, in bands sized for filling (or
 * reading), the flats' scan and bytes_per_cell of the passes that follow.
 */
static void
surface_in_bands(tgpg_mosaic *m, const tg_ctx *ctx, const char *function, bool fill,
				 size_t bytes_per_cell, banded_surface *s)
{
	const size_t fill_bytes = tg_fill_blocks_bytes_per_cell() + 2 * sizeof(double);

	s->function = function;
	s->t0 = GetCurrentTimestamp();
	s->nb = tgpg_mosaic_bands(m, Max(Max(FLAT_SCAN_BYTES_PER_CELL, bytes_per_cell), fill ? fill_bytes : 0),
							  &s->row0s, &s->nrows, &s->max_rows);
	ereport(NOTICE,
			(errmsg("%s: %s spans %d x %d cells, more than terra_gpu.max_memory_mb holds: "
					"routing it in %d bands of rows", function, m->relname, m->width, m->height, s->nb)));
	rows_in_bands(m, ctx, function, fill, s->nb, s->row0s, s->nrows, s->t0, write_surface_rows, s);
}

/* A band of the surface with two rows of halo, as route_blocks.c takes it. */
static double *
surface_band(banded_surface *s, int k)
{
	int			first,
				count;

	return tgpg_rows_file_read(&s->file, s->row0s[k], s->nrows[k], 2, &first, &count);
}

/*
 * Scan every band for flats that cross band boundaries and solve them.  The
 * passes that follow keep to the same bands: the flats found are those that
 * cross their boundaries.
 */
static tg_route_blocks *
flats_in_bands(tgpg_mosaic *m, banded_surface *s, const tg_ctx *ctx, const tg_flow_params *p,
			   tg_accum_units units)
{
	tg_route_blocks *rb;
	tg_error	err;
	size_t		need;

	tg_error_clear(&err);
	tgpg_check(tg_route_blocks_begin(ctx, p, units, &rb, &err), &err);
	for (int k = 0; k < s->nb; k++)
	{
		double	   *z = surface_band(s, k);

		tgpg_check(tg_route_blocks_scan(ctx, rb, s->row0s[k], s->nrows[k], z, &err), &err);
		pfree(z);
	}
	need = tg_route_blocks_flat_bytes(rb, true);
	if (need > tgpg_memory_budget())
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s over %s: %zu cells of flats cross band boundaries, and resolving them "
						"needs %zu MB, more than terra_gpu.max_memory_mb (%zu MB)", m->function,
						m->relname, tg_route_blocks_flat_cells(rb), need >> 20,
						tgpg_memory_budget() >> 20),
				 errdetail("A flat that crosses bands is drained as a whole: a sea or lake held at one "
						   "elevation across the grid is such a flat."),
				 errhint("Raise terra_gpu.max_memory_mb, or set the sea to nodata.")));
	tgpg_check(tg_route_blocks_solve_flats(ctx, rb, &err), &err);
	ereport(NOTICE,
			(errmsg("%s: flats across bands resolved (%zu cells) (%.1f s)",
					s->function, tg_route_blocks_flat_cells(rb), seconds_since(s->t0))));
	return rb;
}

static void
banded_stats(const tg_ctx *ctx, const tgpg_mosaic *m, const banded_surface *s, const char *method)
{
	if (ctx->stats == NULL)
		return;
	ctx->stats->backend = TG_BACKEND_CPU;
	ctx->stats->cells = (int64) m->width * m->height;
	ctx->stats->core_ms = TimestampDifferenceMilliseconds(s->t0, GetCurrentTimestamp());
	ctx->stats->chunks = s->nb;
	snprintf(ctx->stats->method, sizeof ctx->stats->method, "%s", method);
	snprintf(ctx->stats->note, sizeof ctx->stats->note,
			 "%d bands of at most %d rows within terra_gpu.max_memory_mb", s->nb, s->max_rows);
}

/* 54000 for what the banded routing cannot do */
static void
beyond_budget_error(const tgpg_mosaic *m, size_t bytes_per_cell, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("%s over %s needs about %zu MB as one grid, more than the %zu MB a coverage job may use",
					m->function, m->relname, ((size_t) m->width * m->height * bytes_per_cell) >> 20,
					tgpg_memory_budget() >> 20),
			 errdetail("Beyond terra_gpu.max_memory_mb %s runs in bands of rows on the CPU only with %s.",
					   m->function, what),
			 errhint("Raise terra_gpu.max_memory_mb, or call it as the detail says.")));
}

PG_FUNCTION_INFO_V1(tgpg_fill_coverage);
Datum
tgpg_fill_coverage(PG_FUNCTION_ARGS)
{
	tgpg_mosaic m;
	tgpg_grid	grid;
	tg_fill_params params;
	tgpg_grid_raster out;

	tgpg_mosaic_layout(&m, fcinfo, "tg_fill", 3);
	if (!tgpg_mosaic_fits(&m, FILL_BYTES_PER_CELL))
	{
		fill_coverage_in_bands(fcinfo, &m);
		return (Datum) 0;
	}
	tgpg_mosaic_read(&m, FILL_BYTES_PER_CELL);
	grid = tgpg_mosaic_grid(&m);
	fill_plan(fcinfo, 2, &m.dem, &params, &out);
	tgpg_grid_raster_alloc(&grid, &out);
	tgpg_phase(&m, "filling");
	fill_compute(fcinfo, 2, &m.dem, &params, &out);
	tgpg_mosaic_emit(&m, fcinfo, &out, 1);
	return (Datum) 0;
}

/* ------------------------------------------------------------------------
 * tg_flow_direction(rast, band, routing, fill, exponent, threshold, output, backend)
 * ------------------------------------------------------------------------ */
#define DIRECTION_BYTES_PER_CELL 96

void
tgpg_flow_params(FunctionCallInfo fcinfo, int routing_arg, int fill_arg, int exponent_arg,
				 int threshold_arg, const tgpg_grid *grid, tg_flow_params *p)
{
	memset(p, 0, sizeof *p);
	p->routing = routing_arg < 0 ? TG_ROUTE_D8 :
		(tg_routing) TGPG_ARG_LOOKUP("routing", fcinfo, routing_arg, routings);
	p->fill = fill_arg < 0 || PG_ARGISNULL(fill_arg) ? true : PG_GETARG_BOOL(fill_arg);
	p->exponent = exponent_arg < 0 ? 1.1 : tgpg_arg_float8(fcinfo, exponent_arg, "exponent");
	p->threshold = threshold_arg < 0 ? 0 : tgpg_arg_float8(fcinfo, threshold_arg, "threshold");
	if (!(p->exponent > 0) || isinf(p->exponent))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("exponent must be a positive number, got %g", p->exponent)));
	if (!(p->threshold >= 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("threshold must be zero or positive, got %g", p->threshold)));
	p->geom = tgpg_grid_geometry(grid);
	check_pixel_size(&p->geom);
}

typedef struct direction_plan
{
	tg_flow_params p;
	int			output;
} direction_plan;

static void
direction_plan_args(FunctionCallInfo fcinfo, int a, const tgpg_grid *grid, direction_plan *d,
					tgpg_grid_raster *out)
{
	int			k;

	d->output = TGPG_ARG_LOOKUP("output", fcinfo, a + 6, direction_outputs);
	tgpg_flow_params(fcinfo, a + 2, a + 3, a + 4, a + 5, grid, &d->p);
	if (d->output == OUT_AUTO)
		d->output = d->p.routing == TG_ROUTE_D8 ? OUT_CODES : OUT_SHARES;
	if (d->output == OUT_CODES && d->p.routing != TG_ROUTE_D8)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("output 'codes' needs routing 'd8'"),
				 errhint("A multiple-flow routing has several receivers: use output => 'mask' or 'shares'.")));
	if (d->output == OUT_SHARES)
	{
		out->nbands = 8;
		for (k = 0; k < 8; k++)
		{
			out->specs[k].pixtype = TG_PT_32BF;
			out->specs[k].has_nodata = true;
			out->specs[k].nodata = -1;
		}
	}
	else
	{
		out->nbands = 1;
		out->specs[0].pixtype = d->output == OUT_CODES ? TG_PT_8BUI : TG_PT_16BUI;
		out->specs[0].has_nodata = true;
		out->specs[0].nodata = d->output == OUT_CODES ? 255 : 65535;
	}
}

/*
 * Output band b of cell i from the routing's codes (D8) or shares (8 planes
 * of n cells): NaN for nodata.
 */
static double
direction_value(const direction_plan *d, const uint8_t *codes, const float *frac, size_t n,
				int b, size_t i)
{
	uint16_t	mask = 0;

	if (codes)					/* codes and the D8 mask are the same bits */
		return codes[i] == 255 ? NAN : codes[i];
	if (isnan(frac[i]))
		return NAN;
	if (d->output == OUT_SHARES)
		return frac[(size_t) b * n + i];
	for (int k = 0; k < 8; k++)	/* mask: the receivers' ESRI codes or-ed together */
		if (frac[(size_t) k * n + i] > 0)
			mask |= (uint16_t) (1u << k);
	return mask;
}

/* Routing computed as codes (D8) or shares? */
static bool
direction_as_codes(const direction_plan *d)
{
	return d->output == OUT_CODES || (d->output == OUT_MASK && d->p.routing == TG_ROUTE_D8);
}

static void
direction_compute(FunctionCallInfo fcinfo, int a, const tg_band *dem, const direction_plan *d,
				  tgpg_grid_raster *out)
{
	const size_t n = (size_t) dem->width * dem->height;
	uint8_t    *codes = NULL;
	float	   *frac = NULL;
	tg_ctx		ctx;
	tg_error	err;

	tgpg_ctx_init(&ctx, "tg_flow_direction", fcinfo, a + 7);
	tg_error_clear(&err);
	if (direction_as_codes(d))
		codes = palloc_extended(n + 1, MCXT_ALLOC_HUGE);
	else
		frac = palloc_extended(8 * n * sizeof(float) + 1, MCXT_ALLOC_HUGE);
	tgpg_check(tg_flow_direction(&ctx, dem, &d->p, codes, frac, &err), &err);
	for (int b = 0; b < out->nbands; b++)
		for (size_t i = 0; i < n; i++)
		{
			double		v = direction_value(d, codes, frac, n, b, i);

			tg_pixel_store(out->specs[b].pixtype, out->data[b], i, isnan(v) ? out->specs[b].nodata : v);
		}
	if (codes)
		pfree(codes);
	if (frac)
		pfree(frac);
}

PG_FUNCTION_INFO_V1(tgpg_flow_direction);
Datum
tgpg_flow_direction(PG_FUNCTION_ARGS)
{
	tgpg_raster rast;
	tg_band		dem;
	tgpg_grid	grid;
	direction_plan d;
	tgpg_grid_raster out;
	struct varlena *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	value_dem(fcinfo, &rast, &dem, &grid);
	direction_plan_args(fcinfo, 0, &grid, &d, &out);
	result = tgpg_raster_result(&rast.info, &out);
	direction_compute(fcinfo, 0, &dem, &d, &out);
	tgpg_raster_close(&rast, PG_GETARG_DATUM(0));
	PG_RETURN_POINTER(result);
}

/* A coverage beyond the budget: directions band by band (fdd8 excluded). */
static void
direction_coverage_in_bands(FunctionCallInfo fcinfo, tgpg_mosaic *m, const direction_plan *d,
							const tgpg_grid_raster *out)
{
	const int	W = m->width;
	const bool	codes = direction_as_codes(d);
	const size_t bytes = tg_route_blocks_bytes_per_cell(d->p.routing, false) + sizeof(double) +
		(codes ? 1 : 8 * sizeof(float)) + (size_t) out->nbands * sizeof(double);
	banded_surface s;
	tg_route_blocks *rb;
	int64		written = 0;
	tg_ctx		ctx;
	tg_error	err;

	tgpg_ctx_init(&ctx, "tg_flow_direction", fcinfo, 9);
	if (ctx.backend == TG_BACKEND_GPU || d->p.routing == TG_ROUTE_FDD8)
		beyond_budget_error(m, DIRECTION_BYTES_PER_CELL, "routing d8, fd8 or mfd-md and backend auto or cpu");
	surface_in_bands(m, &ctx, "tg_flow_direction", d->p.fill, bytes, &s);
	rb = flats_in_bands(m, &s, &ctx, &d->p, TG_UNITS_CELLS);
	tg_error_clear(&err);
	for (int k = 0; k < s.nb; k++)
	{
		const size_t n = (size_t) W * s.nrows[k];
		double	   *z = surface_band(&s, k);
		uint8_t    *d8 = codes ? palloc_extended(n + 1, MCXT_ALLOC_HUGE) : NULL;
		float	   *frac = codes ? NULL : palloc_extended(8 * n * sizeof(float) + 1, MCXT_ALLOC_HUGE);
		double	   *planes[TGPG_MAX_BANDS];

		tgpg_check(tg_route_blocks_directions(&ctx, rb, s.row0s[k], s.nrows[k], z, d8, frac, &err),
				   &err);
		pfree(z);
		for (int b = 0; b < out->nbands; b++)
		{
			planes[b] = palloc_extended(n * sizeof(double) + 1, MCXT_ALLOC_HUGE);
			for (size_t i = 0; i < n; i++)
				planes[b][i] = direction_value(d, d8, frac, n, b, i);
		}
		if (d8)
			pfree(d8);
		if (frac)
			pfree(frac);
		tgpg_mosaic_emit_rows(m, fcinfo, out->specs, out->nbands, s.row0s[k], s.nrows[k],
							  (const double *const *) planes, &written);
		for (int b = 0; b < out->nbands; b++)
			pfree(planes[b]);
		ereport(NOTICE,
				(errmsg("tg_flow_direction: routed and wrote band %d of %d (%.1f s)", k + 1, s.nb,
						seconds_since(s.t0))));
	}
	tg_route_blocks_end(&ctx, rb);
	tgpg_rows_file_close(&s.file);
	banded_stats(&ctx, m, &s, "directions in bands");
}

PG_FUNCTION_INFO_V1(tgpg_flow_direction_coverage);
Datum
tgpg_flow_direction_coverage(PG_FUNCTION_ARGS)
{
	tgpg_mosaic m;
	tgpg_grid	grid;
	direction_plan d;
	tgpg_grid_raster out;

	tgpg_mosaic_layout(&m, fcinfo, "tg_flow_direction", 3);
	grid = tgpg_mosaic_grid(&m);
	direction_plan_args(fcinfo, 2, &grid, &d, &out);
	if (!tgpg_mosaic_fits(&m, DIRECTION_BYTES_PER_CELL))
	{
		direction_coverage_in_bands(fcinfo, &m, &d, &out);
		return (Datum) 0;
	}
	tgpg_mosaic_read(&m, DIRECTION_BYTES_PER_CELL);
	tgpg_grid_raster_alloc(&grid, &out);
	tgpg_phase(&m, "routing");
	direction_compute(fcinfo, 2, &m.dem, &d, &out);
	tgpg_mosaic_emit(&m, fcinfo, &out, 1);
	return (Datum) 0;
}

/* ------------------------------------------------------------------------
 * tg_flow_accumulation(rast, band, routing, method, weight, units, fill,
 *                      exponent, threshold, weight_band, pixeltype, nodata, backend)
 * and the chained
 * tg_hydrology(rast, band, routing, method, weight, units,
 *              exponent, threshold, weight_band, nodata, backend)
 * ------------------------------------------------------------------------ */
#define ACCUMULATION_BYTES_PER_CELL 96
#define HYDROLOGY_BYTES_PER_CELL 112

typedef struct accum_plan
{
	tg_flow_params p;
	tg_accum_method method;
	tg_accum_units units;
	int			backend_arg;
} accum_plan;

/* Method and units at a+3 and a+5: the same places in both functions. */
static void
accum_plan_common(FunctionCallInfo fcinfo, int a, accum_plan *plan)
{
	plan->method = tgpg_accum_method_arg(fcinfo, a + 3);
	plan->units = (tg_accum_units) TGPG_ARG_LOOKUP("units", fcinfo, a + 5, units_names);
}

static void
accumulation_spec(FunctionCallInfo fcinfo, int pixeltype_arg, int nodata_arg, tg_band_spec *spec)
{
	static const tgpg_name pixeltypes[] = {{"64BF", TG_PT_64BF}, {"32BF", TG_PT_32BF}};

	spec->pixtype = pixeltype_arg < 0 ? TG_PT_64BF :
		(tg_pixtype) TGPG_ARG_LOOKUP("pixeltype", fcinfo, pixeltype_arg, pixeltypes);
	spec->has_nodata = true;
	spec->nodata = PG_ARGISNULL(nodata_arg) ? -9999 : PG_GETARG_FLOAT8(nodata_arg);
}

/*
 * Run the chain; acc_spec/acc_data receive the accumulation (64BF in place,
 * 32BF through a double buffer), products the other outputs.
 */
static void
accum_compute(FunctionCallInfo fcinfo, const char *function, const tg_band *dem,
			  const tg_band *weight, const accum_plan *plan, const tg_band_spec *acc_spec,
			  void *acc_data, tg_flow_products *products)
{
	const size_t n = (size_t) dem->width * dem->height;
	double	   *acc;
	tg_ctx		ctx;
	tg_error	err;
	size_t		i;

	acc = acc_spec->pixtype == TG_PT_64BF ? (double *) acc_data
		: palloc_extended(n * sizeof(double) + 1, MCXT_ALLOC_HUGE);
	products->acc = acc;
	tgpg_ctx_init(&ctx, function, fcinfo, plan->backend_arg);
	tg_error_clear(&err);
	tgpg_check(tg_hydrology(&ctx, dem, weight, &plan->p, plan->method, plan->units, products,
							&err), &err);
	for (i = 0; i < n; i++)
	{
		double		v = isnan(acc[i]) ? acc_spec->nodata : acc[i];

		if (acc_spec->pixtype == TG_PT_64BF)
			acc[i] = v;
		else
			((float *) acc_data)[i] = (float) v;
	}
	if (acc_spec->pixtype != TG_PT_64BF)
		pfree(acc);
}

/* The weight of a value-form call: a raster on the DEM's grid, or NULL. */
static bool
value_weight(FunctionCallInfo fcinfo, int arg, int band_arg, const tgpg_raster *rast,
			 tgpg_raster *wrast, tg_band *weight)
{
	if (PG_ARGISNULL(arg))
		return false;
	tgpg_raster_open(PG_GETARG_DATUM(arg), wrast);
	tgpg_check_aligned(&rast->info, &wrast->info, "weight raster");
	tgpg_raster_band(wrast, tgpg_arg_int32(fcinfo, band_arg, "weight_band"), weight);
	return true;
}

/* The weight of a coverage-form call: another coverage, read onto the grid. */
static bool
coverage_weight(FunctionCallInfo fcinfo, int arg, int band_arg, int column_arg,
				tgpg_mosaic *m, tg_band *weight)
{
	Oid			relid;

	if (PG_ARGISNULL(arg))
		return false;
	relid = PG_GETARG_OID(arg);
	/* its tiles are named by rid in errors where it has one */
	tgpg_mosaic_read_aligned(m, relid,
							 PG_ARGISNULL(column_arg) ? "rast" : NameStr(*PG_GETARG_NAME(column_arg)),
							 get_attnum(relid, "rid") != InvalidAttrNumber ? "rid" : NULL,
							 tgpg_arg_int32(fcinfo, band_arg, "weight_band"),
							 "the weight coverage", "weight_column", weight);
	return true;
}

PG_FUNCTION_INFO_V1(tgpg_flow_accumulation);
Datum
tgpg_flow_accumulation(PG_FUNCTION_ARGS)
{
	tgpg_raster rast,
				wrast;
	tg_band		dem,
				weight;
	tgpg_grid	grid;
	accum_plan	plan;
	tgpg_grid_raster out;
	tg_flow_products products = {0};
	struct varlena *result;
	bool		has_weight;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	value_dem(fcinfo, &rast, &dem, &grid);
	accum_plan_common(fcinfo, 0, &plan);
	accumulation_spec(fcinfo, 10, 11, &out.specs[0]);
	tgpg_flow_params(fcinfo, 2, 6, 7, 8, &grid, &plan.p);
	plan.backend_arg = 12;
	has_weight = value_weight(fcinfo, 4, 9, &rast, &wrast, &weight);
	out.nbands = 1;
	result = tgpg_raster_result(&rast.info, &out);
	accum_compute(fcinfo, "tg_flow_accumulation", &dem, has_weight ? &weight : NULL, &plan,
				  &out.specs[0], out.data[0], &products);
	if (has_weight)
		tgpg_raster_close(&wrast, PG_GETARG_DATUM(4));
	tgpg_raster_close(&rast, PG_GETARG_DATUM(0));
	PG_RETURN_POINTER(result);
}

/*
 * A coverage beyond the budget: D8 accumulation band by band (Barnes 2017);
 * a weight coverage (arg 6, column arg 15) is read band by band as well.
 */
static void
accumulation_coverage_in_bands(FunctionCallInfo fcinfo, tgpg_mosaic *m, const accum_plan *plan,
							   const tg_band_spec *spec)
{
	const int	W = m->width;
	const bool	has_weight = !PG_ARGISNULL(6);
	const size_t bytes = tg_route_blocks_bytes_per_cell(TG_ROUTE_D8, true) +
		(has_weight ? 4 : 2) * sizeof(double);
	banded_surface s;
	tgpg_mosaic wm;
	tg_route_blocks *rb;
	int64		written = 0;
	tg_ctx		ctx;
	tg_error	err;

	tgpg_ctx_init(&ctx, "tg_flow_accumulation", fcinfo, plan->backend_arg);
	if (ctx.backend == TG_BACKEND_GPU || plan->p.routing != TG_ROUTE_D8)
		beyond_budget_error(m, ACCUMULATION_BYTES_PER_CELL, "routing d8 and backend auto or cpu");
	if (has_weight)
	{
		Oid			relid = PG_GETARG_OID(6);

		if (get_attnum(relid, "rid") == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the weight coverage %s has no rid column to read it in bands by",
							get_rel_name(relid)),
					 errhint("Add one (raster2pgsql makes it), or raise terra_gpu.max_memory_mb.")));
		tgpg_mosaic_layout_aligned(m, relid, PG_ARGISNULL(15) ? "rast" : NameStr(*PG_GETARG_NAME(15)),
								   "rid", tgpg_arg_int32(fcinfo, 11, "weight_band"), "weight_column", &wm);
	}
	surface_in_bands(m, &ctx, "tg_flow_accumulation", plan->p.fill, bytes, &s);
	rb = flats_in_bands(m, &s, &ctx, &plan->p, plan->units);
	tg_error_clear(&err);
	for (int pass = 0; pass < 2; pass++)
	{
		for (int k = 0; k < s.nb; k++)
		{
			const int	row0 = s.row0s[k],
						nrows = s.nrows[k];
			double	   *z = surface_band(&s, k);
			double	   *wrows = NULL;
			tg_band		weight;

			if (has_weight)
			{
				int			first,
							count;

				/* the band's rows of the weights as doubles, nodata NaN */
				wrows = tgpg_mosaic_read_halo(&wm, row0, nrows, &first, &count);
				memset(&weight, 0, sizeof weight);
				weight.pixtype = TG_PT_64BF;
				weight.width = W;
				weight.height = nrows;
				weight.data = wrows + (size_t) (row0 - first) * W;
			}
			if (pass == 0)
				tgpg_check(tg_route_blocks_link(&ctx, rb, row0, nrows, z, has_weight ? &weight : NULL,
												&err), &err);
			else
			{
				double	   *acc = palloc_extended(sizeof(double) * (size_t) W * nrows + 1, MCXT_ALLOC_HUGE);

				tgpg_check(tg_route_blocks_accumulate(&ctx, rb, row0, nrows, z, has_weight ? &weight : NULL,
													  acc, &err), &err);
				tgpg_mosaic_emit_rows(m, fcinfo, spec, 1, row0, nrows, (const double *const *) &acc,
									  &written);
				pfree(acc);
				ereport(NOTICE,
						(errmsg("tg_flow_accumulation: accumulated and wrote band %d of %d (%.1f s)", k + 1,
								s.nb, seconds_since(s.t0))));
			}
			pfree(z);
			if (wrows)
				pfree(wrows);
		}
		if (pass == 0)
		{
			tgpg_check(tg_route_blocks_solve_flow(&ctx, rb, &err), &err);
			ereport(NOTICE,
					(errmsg("tg_flow_accumulation: linked the flow between bands (%.1f s)",
							seconds_since(s.t0))));
		}
	}
	tg_route_blocks_end(&ctx, rb);
	tgpg_rows_file_close(&s.file);
	banded_stats(&ctx, m, &s, "d8 in bands");
}

/* Coverage form: the weight is a coverage (arg 6) with its column last (arg 15). */
PG_FUNCTION_INFO_V1(tgpg_flow_accumulation_coverage);
Datum
tgpg_flow_accumulation_coverage(PG_FUNCTION_ARGS)
{
	tgpg_mosaic m;
	tgpg_grid	grid;
	tg_band		weight;
	accum_plan	plan;
	tgpg_grid_raster out;
	tg_flow_products products = {0};
	bool		has_weight;

	tgpg_mosaic_layout(&m, fcinfo, "tg_flow_accumulation", 3);
	grid = tgpg_mosaic_grid(&m);
	accum_plan_common(fcinfo, 2, &plan);
	accumulation_spec(fcinfo, 12, 13, &out.specs[0]);
	tgpg_flow_params(fcinfo, 4, 8, 9, 10, &grid, &plan.p);
	plan.backend_arg = 14;
	if (!tgpg_mosaic_fits(&m, ACCUMULATION_BYTES_PER_CELL))
	{
		accumulation_coverage_in_bands(fcinfo, &m, &plan, &out.specs[0]);
		return (Datum) 0;
	}
	tgpg_mosaic_read(&m, ACCUMULATION_BYTES_PER_CELL);
	has_weight = coverage_weight(fcinfo, 6, 11, 15, &m, &weight);
	out.nbands = 1;
	tgpg_grid_raster_alloc(&grid, &out);
	tgpg_phase(&m, "accumulating");
	accum_compute(fcinfo, "tg_flow_accumulation", &m.dem, has_weight ? &weight : NULL, &plan,
				  &out.specs[0], out.data[0], &products);
	tgpg_mosaic_emit(&m, fcinfo, &out, 1);
	return (Datum) 0;
}

/*
 * The chain's three results: the filled DEM (as tg_fill), the receivers (D8:
 * ESRI codes as 8BUI; multiple-flow: the 16BUI mask) and the accumulation.
 */
static void
hydrology_plan(FunctionCallInfo fcinfo, int a, const tg_band *dem, const tgpg_grid *grid,
			   accum_plan *plan, tgpg_grid_raster outs[3])
{
	accum_plan_common(fcinfo, a, plan);
	tgpg_flow_params(fcinfo, a + 2, -1, a + 6, a + 7, grid, &plan->p);
	plan->backend_arg = a + 10;
	memset(outs, 0, sizeof(tgpg_grid_raster) * 3);
	outs[0].nbands = outs[1].nbands = outs[2].nbands = 1;
	outs[0].specs[0].pixtype = fill_type(dem);
	outs[0].specs[0].has_nodata = true;
	outs[0].specs[0].nodata = fill_nodata(fcinfo, -1, dem, fill_type(dem));
	outs[1].specs[0].pixtype = plan->p.routing == TG_ROUTE_D8 ? TG_PT_8BUI : TG_PT_16BUI;
	outs[1].specs[0].has_nodata = true;
	outs[1].specs[0].nodata = plan->p.routing == TG_ROUTE_D8 ? 255 : 65535;
	accumulation_spec(fcinfo, -1, a + 9, &outs[2].specs[0]);
}

static void
hydrology_compute(FunctionCallInfo fcinfo, const tg_band *dem, const tg_band *weight,
				  const accum_plan *plan, tgpg_grid_raster outs[3])
{
	const size_t n = (size_t) dem->width * dem->height;
	tg_flow_products products;
	uint16_t   *receivers = (uint16_t *) outs[1].data[0];
	size_t		i;

	memset(&products, 0, sizeof products);
	products.surface = outs[0].data[0];
	products.surface_type = outs[0].specs[0].pixtype;
	products.surface_nodata = outs[0].specs[0].nodata;
	if (plan->p.routing == TG_ROUTE_D8)
		receivers = palloc_extended(n * sizeof(uint16_t) + 1, MCXT_ALLOC_HUGE);
	products.receivers = receivers;
	accum_compute(fcinfo, "tg_hydrology", dem, weight, plan, &outs[2].specs[0], outs[2].data[0],
				  &products);
	if (plan->p.routing == TG_ROUTE_D8)
	{
		for (i = 0; i < n; i++)
			((uint8_t *) outs[1].data[0])[i] =
				receivers[i] == TG_NODATA_RECEIVERS ? 255 : (uint8_t) receivers[i];
		pfree(receivers);
	}
}

PG_FUNCTION_INFO_V1(tgpg_hydrology);
Datum
tgpg_hydrology(PG_FUNCTION_ARGS)
{
	tgpg_raster rast,
				wrast;
	tg_band		dem,
				weight;
	tgpg_grid	grid;
	accum_plan	plan;
	tgpg_grid_raster outs[3];
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	TupleDesc	tupdesc;
	bool		has_weight;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	value_dem(fcinfo, &rast, &dem, &grid);
	hydrology_plan(fcinfo, 0, &dem, &grid, &plan, outs);
	has_weight = value_weight(fcinfo, 4, 8, &rast, &wrast, &weight);
	for (int k = 0; k < 3; k++)
		values[k] = PointerGetDatum(tgpg_raster_result(&rast.info, &outs[k]));
	hydrology_compute(fcinfo, &dem, has_weight ? &weight : NULL, &plan, outs);
	if (has_weight)
		tgpg_raster_close(&wrast, PG_GETARG_DATUM(4));
	tgpg_raster_close(&rast, PG_GETARG_DATUM(0));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* Coverage form: the weight coverage at arg 6, its column last (arg 13). */
PG_FUNCTION_INFO_V1(tgpg_hydrology_coverage);
Datum
tgpg_hydrology_coverage(PG_FUNCTION_ARGS)
{
	tgpg_mosaic m;
	tgpg_grid	grid;
	tg_band		weight;
	accum_plan	plan;
	tgpg_grid_raster outs[3];
	bool		has_weight;

	tgpg_mosaic_open(&m, fcinfo, "tg_hydrology", 3, HYDROLOGY_BYTES_PER_CELL);
	grid = tgpg_mosaic_grid(&m);
	hydrology_plan(fcinfo, 2, &m.dem, &grid, &plan, outs);
	has_weight = coverage_weight(fcinfo, 6, 10, 13, &m, &weight);
	for (int k = 0; k < 3; k++)
		tgpg_grid_raster_alloc(&grid, &outs[k]);
	tgpg_phase(&m, "filling, routing and accumulating");
	hydrology_compute(fcinfo, &m.dem, has_weight ? &weight : NULL, &plan, outs);
	tgpg_mosaic_emit(&m, fcinfo, outs, 3);
	return (Datum) 0;
}

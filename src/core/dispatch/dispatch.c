/*
 * dispatch.c — backend selection and the operations on one grid
 * (dispatch.h), each calling the CPU side in its domain's folder or the
 * CUDA backend.
 *
 * One policy for every operation:
 *   cpu   always the CPU;
 *   gpu   the GPU, or TG_ENODEVICE with the reason;
 *   auto  the GPU when one is ready and the input has at least
 *         min_cells_for_gpu cells, else the CPU; a GPU that runs out of
 *         device memory falls back to the CPU.
 * What ran, and how long it took, goes to ctx->stats.
 */
#include "dispatch/dispatch.h"
#include "runtime/runtime.h"
#include "terrain/terrain.h"
#include "viewshed/viewshed.h"
#include "bmmq/bmmq.h"
#include "hydro/fill/fill.h"
#include "hydro/accum/accum.h"
#include "hydro/catchment/catchment.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void
note(const tg_ctx *ctx, const char *fmt, const char *arg)
{
	if (ctx->stats)
		snprintf(ctx->stats->note, sizeof ctx->stats->note, fmt, arg);
}

static tg_status
choose_backend(const tg_ctx *ctx, int64_t cells, tg_backend *use, tg_error *err)
{
	tg_error	probe_err;

	switch (ctx->backend)
	{
		case TG_BACKEND_CPU:
			*use = TG_BACKEND_CPU;
			return TG_OK;
		case TG_BACKEND_GPU:
			if (tg_cuda_probe(ctx->device, NULL, err) != TG_OK)
			{
				tg_error_hint(err, "Set terra_gpu.backend to 'auto' or 'cpu' to run on the CPU.");
				return err->code;
			}
			*use = TG_BACKEND_GPU;
			return TG_OK;
		case TG_BACKEND_AUTO:
			break;
	}

	*use = TG_BACKEND_CPU;
	if (cells < ctx->min_cells_for_gpu)
	{
		note(ctx, "%s", "input smaller than terra_gpu.min_cells_for_gpu");
		return TG_OK;
	}
	tg_error_clear(&probe_err);
	if (tg_cuda_probe(ctx->device, NULL, &probe_err) != TG_OK)
	{
		note(ctx, "no GPU: %s", probe_err.message);
		return TG_OK;
	}
	*use = TG_BACKEND_GPU;
	return TG_OK;
}

/*
 * args on the backend chosen (use), in the call scope `call`; the GPU's
 * running out of device memory under auto sends it to the CPU.  *use: where
 * it ran.
 */
static tg_status
run_on(const tg_ctx *ctx, const tg_ctx *call, tg_backend *use, tg_step_fn cpu, tg_step_fn gpu, const void *args,
	   bool phases, tg_error *err)
{
	tg_status	st = TG_OK;

	if (*use == TG_BACKEND_GPU)
	{
		tg_error	gpu_err;

		if (phases)
			tg_phase(call, "on the GPU");
		tg_error_clear(&gpu_err);
		tg_cuda_peak_restart();
		st = gpu(call, args, &gpu_err);
		if (ctx->stats && tg_cuda_peak_bytes() > ctx->stats->peak_device_bytes)
			ctx->stats->peak_device_bytes = tg_cuda_peak_bytes();
		tg_cuda_release();
		if (st == TG_ENOMEM && gpu_err.on_device && ctx->backend == TG_BACKEND_AUTO)
		{
			note(ctx, "GPU out of memory, ran on the CPU: %s", gpu_err.message);
			if (ctx->stats)
				ctx->stats->gpu_fallbacks++;
			*use = TG_BACKEND_CPU;
		}
		else if (st != TG_OK)
			*err = gpu_err;
	}
	if (*use == TG_BACKEND_CPU && phases)
		tg_phase(call, "on the CPU");
	if (*use == TG_BACKEND_CPU)
		st = cpu(call, args, err);
	return st;
}

/*
 * Run an operation on the backend chosen, inside a call scope: the worker
 * threads either backend uses are joined before this returns.
 */
static tg_status
run(const tg_ctx *ctx, int64_t cells, tg_step_fn cpu, tg_step_fn gpu, const void *args,
	tg_error *err)
{
	const double t0 = tg_stats_begin(ctx, cells);
	tg_backend	use;
	tg_status	st;
	tg_ctx		call;

	/* the first probe in a backend starts CUDA: a phase of its own */
	if (ctx->backend == TG_BACKEND_GPU ||
		(ctx->backend == TG_BACKEND_AUTO && cells >= ctx->min_cells_for_gpu))
		tg_phase(ctx, "GPU start");
	st = choose_backend(ctx, cells, &use, err);
	if (st != TG_OK)
		return st;

	tg_call_open(ctx, &call);
	st = run_on(ctx, &call, &use, cpu, gpu, args, true, err);
	tg_call_close(&call);

	if (ctx->stats)
		ctx->stats->backend = use;
	tg_stats_end(ctx, t0);
	return st;
}

tg_status
tg_run_step(const tg_ctx *ctx, int64_t cells, tg_step_fn cpu, tg_step_fn gpu, const void *args, tg_error *err)
{
	tg_backend	use;
	tg_status	st = choose_backend(ctx, cells, &use, err);

	return st == TG_OK ? run_on(ctx, ctx, &use, cpu, gpu, args, false, err) : st;
}

typedef struct crossing_args
{
	const tg_band *z;
	int			y0,
				nrows;
	tg_crossing_list *list;
} crossing_args;

/* The threads list them from doubles: floats decoded first. */
static tg_status
crossing_cpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const crossing_args *a = arg;
	double	   *wide = NULL;
	tg_status	st = a->z->pixtype == TG_PT_64BF ? TG_OK : tg_band_decode(ctx, a->z, &wide, err);

	if (st == TG_OK)
		st = tg_cpu_crossing_flats(ctx, wide ? wide : a->z->data, a->z->width, a->z->height, a->y0, a->nrows,
								   a->list, err);
	tg_free(ctx, wide);
	return st;
}

static tg_status
crossing_gpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const crossing_args *a = arg;
	tg_status	st = tg_cuda_crossing_flats(ctx, a->z, a->y0, a->nrows, a->list, err);

	if (st != TG_OK)
		tg_crossing_list_free(ctx, a->list);
	return st;
}

tg_status
tg_crossing_flats(const tg_ctx *ctx, const tg_band *z, int y0, int nrows, tg_crossing_list *list, tg_error *err)
{
	crossing_args a = {z, y0, nrows, list};

	if (z->pixtype != TG_PT_32BF && z->pixtype != TG_PT_64BF)
		return tg_error_set(err, TG_EINVAL, "crossing flats are listed from floats or doubles");
	return tg_run_step(ctx, (int64_t) z->width * nrows, crossing_cpu, crossing_gpu, &a, err);
}

tg_status
tg_backend_ready(const tg_ctx *ctx, tg_error *err)
{
	tg_backend	use;

	return ctx->backend == TG_BACKEND_GPU ? choose_backend(ctx, 0, &use, err) : TG_OK;
}

bool
tg_gpu_chosen(const tg_ctx *ctx, int64_t cells)
{
	tg_ctx		quiet = *ctx;
	tg_backend	use = TG_BACKEND_CPU;
	tg_error	err;

	quiet.stats = NULL;			/* the choice's note is the call's to make */
	tg_error_clear(&err);
	return ctx->backend == TG_BACKEND_GPU ||
		(choose_backend(&quiet, cells, &use, &err) == TG_OK && use == TG_BACKEND_GPU);
}

void
tg_device_query(int device, tg_device_info *info)
{
	tg_error	err;

	tg_error_clear(&err);
	memset(info, 0, sizeof *info);
	if (tg_cuda_probe(device, info, &err) != TG_OK)
	{
		info->available = false;
		snprintf(info->reason, sizeof info->reason, "%s%s%s", err.message,
				 err.detail[0] ? ": " : "", err.detail);
	}
}

/* ------------------------------------------------------------------------
 * Local terrain derivatives (slope among them)
 * ------------------------------------------------------------------------ */
typedef struct terrain_args
{
	const tg_band *dem;
	const tg_terrain_params *params;
	void	   *const *out;
} terrain_args;

static tg_status
terrain_cpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const terrain_args *t = a;

	return tg_cpu_terrain(ctx, t->dem, t->params, t->out, err);
}

static tg_status
terrain_gpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const terrain_args *t = a;

	return tg_cuda_terrain(ctx, t->dem, t->params, t->out, err);
}

static bool
terrain_type_ok(tg_terrain_product product, tg_pixtype type)
{
	if (product == TG_TERRAIN_GEOMORPHONS)
		return type == TG_PT_8BUI;
	return type == TG_PT_32BF || type == TG_PT_64BF ||
		(product == TG_TERRAIN_HILLSHADE && type == TG_PT_8BUI);
}

tg_status
tg_terrain(const tg_ctx *ctx, const tg_band *dem, const tg_terrain_params *params, void *const *out,
		   tg_error *err)
{
	terrain_args args = {dem, params, out};
	const tg_terrain_params *p = params;

	if (dem->data == NULL)
		return tg_error_set(err, TG_EUNSUPPORTED, "terrain derivatives need an in-db band");
	if (!(p->pixel_width > 0) || !(p->pixel_height > 0) || isinf(p->pixel_width) || isinf(p->pixel_height))
		return tg_error_set(err, TG_EINVAL, "pixel size must be positive, got %g x %g",
							p->pixel_width, p->pixel_height);
	if (!(p->scale > 0) || isinf(p->scale))
		return tg_error_set(err, TG_EINVAL, "scale must be positive, got %g", p->scale);
	if (p->nproducts < 1 || p->nproducts > TG_TERRAIN_PRODUCTS)
		return tg_error_set(err, TG_EINVAL, "ask for 1 to %d products, got %d", TG_TERRAIN_PRODUCTS,
							p->nproducts);
	for (int k = 0; k < p->nproducts; k++)
	{
		if ((int) p->products[k] < 0 || (int) p->products[k] >= TG_TERRAIN_PRODUCTS)
			return tg_error_set(err, TG_EINVAL, "unknown terrain product %d", (int) p->products[k]);
		if (!terrain_type_ok(p->products[k], p->types[k]))
			return tg_error_set(err, TG_EINVAL, "terrain product %d cannot be written as %s",
								(int) p->products[k], tg_pixtype_name(p->types[k]));
		for (int q = 0; q < k; q++)
			if (p->products[q] == p->products[k])
				return tg_error_set(err, TG_EINVAL, "terrain product %d asked for twice", (int) p->products[k]);
		if (p->products[k] == TG_TERRAIN_HILLSHADE &&
			(!(p->altitude >= 0 && p->altitude <= 90) || !isfinite(p->azimuth) ||
			 !(p->max_bright >= 0) || !isfinite(p->max_bright) || !(p->z_factor > 0) || isinf(p->z_factor)))
			return tg_error_set(err, TG_EINVAL,
								"hillshade needs an altitude in [0, 90], a finite azimuth, max_bright >= 0 and z_factor > 0");
		if (p->products[k] == TG_TERRAIN_GEOMORPHONS &&
			(p->search_radius < 1 || p->search_radius > TG_GEOMORPHON_MAX_RADIUS || p->skip < 0 ||
			 p->skip >= p->search_radius || !(p->flat_threshold >= 0 && p->flat_threshold < 90)))
			return tg_error_set(err, TG_EINVAL,
								"geomorphons need 1 <= search_radius <= %d, 0 <= skip < search_radius and a flat threshold in [0, 90), got %d, %d and %g",
								TG_GEOMORPHON_MAX_RADIUS, p->search_radius, p->skip, p->flat_threshold);
	}
	return run(ctx, (int64_t) dem->width * dem->height, terrain_cpu, terrain_gpu, &args, err);
}

/* Horn slope: the slope product alone */
tg_status
tg_slope(const tg_ctx *ctx, const tg_band *dem, const tg_slope_params *params,
		 float *out, tg_error *err)
{
	tg_terrain_params p;
	void	   *planes[1] = {out};

	tg_terrain_defaults(&p);
	p.pixel_width = params->pixel_width;
	p.pixel_height = params->pixel_height;
	p.scale = params->scale;
	p.slope_units = params->units;
	p.nproducts = 1;
	p.products[0] = TG_TERRAIN_SLOPE;
	p.types[0] = TG_PT_32BF;
	p.nodata[0] = params->out_nodata;
	return tg_terrain(ctx, dem, &p, planes, err);
}

/* ------------------------------------------------------------------------
 * Depression filling
 * ------------------------------------------------------------------------ */
typedef struct fill_args
{
	const tg_band *dem;
	const tg_fill_params *params;
	double		out_nodata;
	void	   *out;
} fill_args;

static tg_status
fill_cpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const fill_args *f = a;

	return tg_cpu_fill(ctx, f->dem, f->params, f->out_nodata, f->out, err);
}

static tg_status
fill_gpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const fill_args *f = a;

	return tg_cuda_fill(ctx, f->dem, f->params, f->out_nodata, f->out, err);
}

static const char *
fill_method_name(tg_fill_method m)
{
	return m == TG_FILL_PLANCHON_DARBOUX ? "planchon-darboux" : m == TG_FILL_BREACH ? "breach" : "priority-flood";
}

tg_status
tg_fill(const tg_ctx *ctx, const tg_band *dem, const tg_fill_params *params,
		double out_nodata, void *out, tg_error *err)
{
	fill_args	args = {dem, params, out_nodata, out};
	tg_status	st;

	if (dem->data == NULL)
		return tg_error_set(err, TG_EUNSUPPORTED, "fill needs an in-db band");
	if (!(params->epsilon >= 0) || isinf(params->epsilon))
		return tg_error_set(err, TG_EINVAL, "epsilon must be zero or a positive number, got %g",
							params->epsilon);
	if (params->out_type != TG_PT_32BF && params->out_type != TG_PT_64BF)
		return tg_error_set(err, TG_EINVAL, "fill output must be 32BF or 64BF");
	if (params->method == TG_FILL_BREACH)
	{
		/* the breaching follows one flood's order: the CPU's */
		tg_ctx		cpu = *ctx;

		cpu.backend = TG_BACKEND_CPU;
		st = run(&cpu, (int64_t) dem->width * dem->height, fill_cpu, fill_gpu, &args, err);
	}
	else
		st = run(ctx, (int64_t) dem->width * dem->height, fill_cpu, fill_gpu, &args, err);
	if (ctx->stats)
		snprintf(ctx->stats->method, sizeof ctx->stats->method, "%s",
				 fill_method_name(params->method));
	return st;
}

/* ------------------------------------------------------------------------
 * Flow direction and accumulation
 * ------------------------------------------------------------------------ */
static tg_status
check_flow_params(const tg_band *dem, const tg_flow_params *p, tg_error *err)
{
	if (dem->data == NULL)
		return tg_error_set(err, TG_EUNSUPPORTED, "flow routing needs an in-db band");
	if (p->geom.width != dem->width || p->geom.height != dem->height)
		return tg_error_set(err, TG_EINVAL, "grid geometry does not match the DEM");
	if ((p->routing == TG_ROUTE_FD8 || p->routing == TG_ROUTE_FDD8) &&
		(!(p->exponent > 0) || isinf(p->exponent)))
		return tg_error_set(err, TG_EINVAL, "exponent must be a positive number, got %g",
							p->exponent);
	if (p->routing == TG_ROUTE_FDD8 && !(p->threshold >= 0))
		return tg_error_set(err, TG_EINVAL, "threshold must be zero or positive, got %g",
							p->threshold);
	if (!p->geom.geographic && (!(p->geom.cell_x > 0) || !(p->geom.cell_y > 0)))
		return tg_error_set(err, TG_EINVAL, "pixel size must be positive, got %g x %g",
							p->geom.cell_x, p->geom.cell_y);
	return TG_OK;
}

/*
 * `auto`, decided here and nowhere else: the CPU runs indegree; the GPU runs
 * D8 with integer weights (w NULL: every cell 1) through the two-level tiled
 * scheme, whose sums are exact in any order while every weight stays below
 * 2^53 / ncells, and anything else through indegree (w: nw weights, per cell or
 * per row).  A method asked for by name
 * runs as asked.
 */
static tg_accum_method
resolve_method(tg_backend backend, tg_accum_method m, tg_routing routing, const double *w, size_t nw,
			   size_t ncells)
{
	const double exact = 9007199254740992.0 / (double) (ncells ? ncells : 1);

	if (m != TG_ACC_AUTO)
		return m;
	if (backend != TG_BACKEND_GPU || routing != TG_ROUTE_D8)
		return TG_ACC_INDEGREE;
	for (size_t i = 0; w && i < nw; i++)
		if (!isnan(w[i]) && (w[i] != rint(w[i]) || fabs(w[i]) > exact))
			return TG_ACC_INDEGREE;
	return TG_ACC_TILED;
}

typedef struct accum_args
{
	const tg_band *dem;
	const tg_band *weight;
	const tg_flow_params *params;
	tg_accum_method method;
	tg_accum_units units;
	const tg_flow_products *out;
} accum_args;

static tg_status
accum_cpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const accum_args *f = a;
	tg_flow_products planes;
	tg_status	st = tg_flow_planes(ctx, f->out, &planes, err);

	if (st != TG_OK)
		return st;
	return tg_cpu_hydrology(ctx, f->dem, f->weight, f->params,
							resolve_method(TG_BACKEND_CPU, f->method, f->params->routing, NULL, 0, 0),
							f->units, &planes, err);
}

static tg_status
accum_gpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const accum_args *f = a;
	double	   *w = NULL,
			   *row_w = NULL,
			   *widths = NULL;
	tg_status	st;

	/* without a weight raster the weights are one per row: the device spreads them */
	if (f->weight)
		st = tg_cell_weights(ctx, f->weight, &f->params->geom, f->units, &w, err);
	else
		st = tg_row_weights(ctx, &f->params->geom, f->units, &row_w, err);
	/* specific catchment area: divided on the device, before the products come back */
	if (st == TG_OK && f->units == TG_UNITS_SCA)
		st = tg_row_contour_widths(ctx, &f->params->geom, &widths, err);
	if (st == TG_OK)
		st = tg_cuda_flow_accumulation(ctx, f->dem, w, row_w, widths, f->params,
									   resolve_method(TG_BACKEND_GPU, f->method, f->params->routing,
													  w ? w : row_w,
													  w ? (size_t) f->dem->width * f->dem->height
													  : (size_t) f->dem->height,
													  (size_t) f->dem->width * f->dem->height),
									   f->out, err);
	tg_free(ctx, w);
	tg_free(ctx, row_w);
	tg_free(ctx, widths);
	return st;
}

tg_status
tg_hydrology(const tg_ctx *ctx, const tg_band *dem, const tg_band *weight,
			 const tg_flow_params *params, tg_accum_method method,
			 tg_accum_units units, const tg_flow_products *out, tg_error *err)
{
	accum_args	args = {dem, weight, params, method, units, out};
	tg_status	st = check_flow_params(dem, params, err);

	if (st != TG_OK)
		return st;
	if (!tg_flow_wants(out, 2))
		return tg_error_set(err, TG_EINVAL, "the flow chain needs an accumulation buffer");
	if (tg_flow_wants(out, 0) && out->surface_type != TG_PT_32BF && out->surface_type != TG_PT_64BF)
		return tg_error_set(err, TG_EINVAL, "the routing surface must be 32BF or 64BF");
	if (weight && (weight->width != dem->width || weight->height != dem->height))
		return tg_error_set(err, TG_EINVAL, "weight raster is %d x %d, the DEM %d x %d",
							weight->width, weight->height, dem->width, dem->height);
	if (weight && weight->data == NULL)
		return tg_error_set(err, TG_EUNSUPPORTED, "weight needs an in-db band");
	if (method == TG_ACC_FLOW_TRANSFER && params->routing == TG_ROUTE_FDD8)
	{
		tg_error_set(err, TG_EINVAL, "flow-transfer cannot route fdd8");
		tg_error_detail(err, "fdd8 switches a cell to D8 once its own accumulation reaches the threshold, which flow transfer only knows at the end.");
		tg_error_hint(err, "Use method => 'indegree', 'dependency-transfer' or 'topological'.");
		return TG_EINVAL;
	}
	return run(ctx, (int64_t) dem->width * dem->height, accum_cpu, accum_gpu, &args, err);
}

tg_status
tg_flow_accumulation(const tg_ctx *ctx, const tg_band *dem, const tg_band *weight,
					 const tg_flow_params *params, tg_accum_method method,
					 tg_accum_units units, double *out, tg_error *err)
{
	tg_flow_products products = {out, NULL, TG_PT_64BF, 0, NULL, NULL};

	return tg_hydrology(ctx, dem, weight, params, method, units, &products, err);
}

typedef struct direction_args
{
	const tg_band *dem;
	const tg_flow_params *params;
	uint8_t    *d8;
	float	   *frac;
} direction_args;

static tg_status
direction_cpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const direction_args *f = a;

	return tg_cpu_flow_direction(ctx, f->dem, f->params, f->d8, f->frac, err);
}

static tg_status
direction_gpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const direction_args *f = a;

	return tg_cuda_flow_direction(ctx, f->dem, f->params, f->d8, f->frac, err);
}

tg_status
tg_flow_direction(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *params,
				  uint8_t *d8, float *frac, tg_error *err)
{
	direction_args args = {dem, params, d8, frac};
	tg_status	st;

	st = check_flow_params(dem, params, err);
	if (st != TG_OK)
		return st;
	return run(ctx, (int64_t) dem->width * dem->height, direction_cpu, direction_gpu, &args, err);
}

/* ------------------------------------------------------------------------
 * BMMQ-tree
 * ------------------------------------------------------------------------ */
typedef struct bmmq_args
{
	const tg_band *tiles;
	int			ntiles;
	const double *bounds;
	int			nbounds;
	tg_bmmq_tree *trees;
} bmmq_args;

/* A failed build leaves no tree behind (the CPU may take over from the GPU). */
static tg_status
trees_or_none(const tg_ctx *ctx, const bmmq_args *b, tg_status st)
{
	if (st != TG_OK)
		for (int i = 0; i < b->ntiles; i++)
			tg_bmmq_tree_free(ctx, &b->trees[i]);
	return st;
}

static tg_status
bmmq_cpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const bmmq_args *b = a;

	return trees_or_none(ctx, b, tg_cpu_bmmq_build(ctx, b->tiles, b->ntiles, b->bounds, b->nbounds, b->trees,
												   err));
}

static tg_status
bmmq_gpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const bmmq_args *b = a;

	return trees_or_none(ctx, b, tg_cuda_bmmq_build(ctx, b->tiles, b->ntiles, b->bounds, b->nbounds, b->trees,
													err));
}

tg_status
tg_bmmq_build(const tg_ctx *ctx, const tg_band *tiles, int ntiles, const double *bounds,
			  int nbounds, tg_bmmq_tree *trees, tg_error *err)
{
	bmmq_args	args = {tiles, ntiles, bounds, nbounds, trees};
	int64_t		cells = 0;

	if (nbounds < 1 || nbounds > TG_BMMQ_MAX_BOUNDS)
		return tg_error_set(err, TG_EINVAL, "a quadtree needs 1 to %d bin boundaries, got %d",
							TG_BMMQ_MAX_BOUNDS, nbounds);
	for (int i = 0; i < nbounds; i++)
		if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
			return tg_error_set(err, TG_EINVAL,
								"bin boundaries must be finite and strictly increasing (boundary %d is %g)",
								i + 1, bounds[i]);
	for (int i = 0; i < ntiles; i++)
	{
		if (tiles[i].data == NULL && tiles[i].width > 0 && tiles[i].height > 0)
			return tg_error_set(err, TG_EUNSUPPORTED, "a quadtree needs in-db bands");
		if (tiles[i].width < 1 || tiles[i].height < 1)
			return tg_error_set(err, TG_EINVAL, "tile %d is empty (%d x %d)", i + 1,
								tiles[i].width, tiles[i].height);
		trees[i].nodes = NULL;
		trees[i].count = 0;
		cells += (int64_t) tiles[i].width * tiles[i].height;
	}
	return run(ctx, cells, bmmq_cpu, bmmq_gpu, &args, err);
}

/* ------------------------------------------------------------------------
 * Viewshed
 * ------------------------------------------------------------------------ */
typedef struct viewshed_args
{
	const tg_band *dem;
	const tg_viewshed_params *params;
	float	   *out;
} viewshed_args;

static tg_status
viewshed_cpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const viewshed_args *v = a;

	return tg_cpu_viewshed(ctx, v->dem, v->params, v->out, err);
}

static tg_status
viewshed_gpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const viewshed_args *v = a;

	return tg_cuda_viewshed(ctx, v->dem, v->params, v->out, err);
}

tg_status
tg_viewshed(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
			float *out, tg_error *err)
{
	viewshed_args args = {dem, params, out};
	int64_t		cells = (int64_t) dem->width * dem->height;

	if (dem->data == NULL)
		return tg_error_set(err, TG_EUNSUPPORTED, "a viewshed needs an in-db band");
	if (params->algorithm == TG_VIEW_R3)
	{
		/* the exact reference exists on the CPU only */
		tg_ctx		cpu = *ctx;

		cpu.backend = TG_BACKEND_CPU;
		return run(&cpu, cells, viewshed_cpu, viewshed_gpu, &args, err);
	}
	return run(ctx, cells, viewshed_cpu, viewshed_gpu, &args, err);
}

typedef struct viewshed_count_args
{
	const tg_band *dem;
	const tg_viewshed_params *params;
	const int  *cols;
	const int  *rows;
	int			n;
	uint32_t   *count;
} viewshed_count_args;

static tg_status
viewshed_count_cpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const viewshed_count_args *v = a;

	return tg_cpu_viewshed_count(ctx, v->dem, v->params, v->cols, v->rows, v->n, v->count, err);
}

static tg_status
viewshed_count_gpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	const viewshed_count_args *v = a;

	return tg_cuda_viewshed_count(ctx, v->dem, v->params, v->cols, v->rows, v->n, v->count, err);
}

tg_status
tg_viewshed_count(const tg_ctx *ctx, const tg_band *dem, const tg_viewshed_params *params,
				  const int *cols, const int *rows, int n, uint32_t *count, tg_error *err)
{
	viewshed_count_args args = {dem, params, cols, rows, n, count};

	if (dem->data == NULL)
		return tg_error_set(err, TG_EUNSUPPORTED, "a viewshed needs an in-db band");
	if (n < 1)
		return tg_error_set(err, TG_EINVAL, "a cumulative viewshed needs at least one observer");
	return run(ctx, (int64_t) dem->width * dem->height * n, viewshed_count_cpu, viewshed_count_gpu,
			   &args, err);
}

/* ------------------------------------------------------------------------
 * Soil loss and travel time
 * ------------------------------------------------------------------------ */

/*
 * RUSLE and travel time take per-cell factors; they are decoded inside the
 * call's scope (on its threads) by whichever backend runs, and freed by the
 * entry point.
 */
typedef struct rusle_args
{
	const tg_band *dem;
	const tg_rusle_params *params;
	tg_cell_factor factors[4];	/* R, K, C, P */
	float	   *ls;
	float	   *soil_loss;
} rusle_args;

static tg_status
rusle_factors(const tg_ctx *ctx, rusle_args *r, tg_error *err)
{
	const tg_rusle_params *p = r->params;
	const tg_factor *given[4] = {&p->r, &p->k, &p->c, &p->p};
	static const char *const names[4] = {"R", "K", "C", "P"};
	tg_status	st = TG_OK;

	for (int f = 0; f < 4 && st == TG_OK && r->soil_loss; f++)
		st = tg_factor_decode(ctx, r->dem, given[f], names[f], false, &r->factors[f], err);
	return st;
}

static tg_status
rusle_cpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	rusle_args *r = (rusle_args *) a;
	tg_rusle_params p = *r->params;
	tg_status	st = rusle_factors(ctx, r, err);

	p.method = resolve_method(TG_BACKEND_CPU, p.method, p.flow.routing, NULL, 0, 0);
	return st != TG_OK ? st : tg_cpu_rusle(ctx, r->dem, &p, r->factors, r->ls, r->soil_loss, err);
}

static tg_status
rusle_gpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	rusle_args *r = (rusle_args *) a;
	tg_rusle_params p = *r->params;
	tg_status	st = rusle_factors(ctx, r, err);

	/* the contributing area counts cells */
	p.method = resolve_method(TG_BACKEND_GPU, p.method, p.flow.routing, NULL, 0, 0);
	return st != TG_OK ? st : tg_cuda_rusle(ctx, r->dem, &p, r->factors, r->ls, r->soil_loss, err);
}

tg_status
tg_rusle(const tg_ctx *ctx, const tg_band *dem, const tg_rusle_params *params, float *ls,
		 float *soil_loss, tg_error *err)
{
	rusle_args	args = {dem, params, {{NULL, 1}, {NULL, 1}, {NULL, 1}, {NULL, 1}}, ls, soil_loss};
	tg_status	st;

	st = check_flow_params(dem, &params->flow, err);
	if (st != TG_OK)
		return st;
	if (params->method == TG_ACC_FLOW_TRANSFER && params->flow.routing == TG_ROUTE_FDD8)
		return tg_error_set(err, TG_EINVAL, "flow-transfer cannot route fdd8");
	if (!(params->m >= 0) || !(params->n >= 0) || !isfinite(params->m) || !isfinite(params->n))
		return tg_error_set(err, TG_EINVAL, "the LS exponents m and n must be non-negative numbers, got %g and %g",
							params->m, params->n);
	if (!(params->a0 > 0) || !(params->b0 > 0) || !isfinite(params->a0) || !isfinite(params->b0))
		return tg_error_set(err, TG_EINVAL, "a0 and b0 must be positive numbers, got %g and %g",
							params->a0, params->b0);
	st = run(ctx, (int64_t) dem->width * dem->height, rusle_cpu, rusle_gpu, &args, err);
	for (int f = 0; f < 4; f++)
		tg_free(ctx, (void *) args.factors[f].values);
	return st;
}

typedef struct travel_args
{
	const tg_band *dem;
	const tg_travel_params *params;
	tg_cell_factor roughness;
	tg_cell_factor velocity;
	float	   *time;
	uint8_t    *watershed;
} travel_args;

static tg_status
travel_factors(const tg_ctx *ctx, travel_args *t, tg_error *err)
{
	tg_status	st = TG_OK;

	if (t->time)
	{
		st = tg_factor_decode(ctx, t->dem, &t->params->roughness, "n", true, &t->roughness, err);
		if (st == TG_OK)
			st = tg_factor_decode(ctx, t->dem, &t->params->velocity, "K", true, &t->velocity, err);
	}
	return st;
}

static tg_status
travel_cpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	travel_args *t = (travel_args *) a;
	tg_status	st = travel_factors(ctx, t, err);

	return st != TG_OK ? st : tg_cpu_travel_time(ctx, t->dem, t->params, &t->roughness, &t->velocity,
												 t->time, t->watershed, err);
}

static tg_status
travel_gpu(const tg_ctx *ctx, const void *a, tg_error *err)
{
	travel_args *t = (travel_args *) a;
	tg_status	st = travel_factors(ctx, t, err);

	return st != TG_OK ? st : tg_cuda_travel_time(ctx, t->dem, t->params, &t->roughness, &t->velocity,
												  t->time, t->watershed, err);
}

tg_status
tg_travel_time(const tg_ctx *ctx, const tg_band *dem, const tg_travel_params *params,
			   float *time, uint8_t *watershed, tg_error *err)
{
	tg_travel_params snapped;
	travel_args args = {dem, params, {NULL, 1}, {NULL, 1}, time, watershed};
	tg_status	st;

	st = check_flow_params(dem, &params->flow, err);
	if (st != TG_OK)
		return st;
	if (params->flow.routing != TG_ROUTE_D8)
		return tg_error_set(err, TG_EINVAL, "travel times follow D8 paths");
	if (params->has_outlet && (!(params->snap >= 0) || !isfinite(params->snap)))
		return tg_error_set(err, TG_EINVAL, "snap must be a non-negative distance, got %g", params->snap);
	if (params->has_outlet && params->snap > 0)
	{
		tg_snap_params sp = {params->flow, params->outlet_x, params->outlet_y, params->snap};

		snapped = *params;
		st = tg_snap_pour_point(ctx, dem, &sp, &snapped.outlet_col, &snapped.outlet_row, err);
		if (st != TG_OK)
			return st;
		snapped.snap = 0;
		params = &snapped;
		args.params = params;
	}
	if (params->has_outlet &&
		(params->outlet_col < 0 || params->outlet_row < 0 ||
		 params->outlet_col >= dem->width || params->outlet_row >= dem->height))
		return tg_error_set(err, TG_EINVAL, "the outlet (column %d, row %d) is outside the %d x %d raster",
							params->outlet_col + 1, params->outlet_row + 1, dem->width, dem->height);
	if (params->has_outlet &&
		tg_band_value_is_nodata(dem, tg_band_get(dem, (size_t) params->outlet_row * dem->width +
												 params->outlet_col)))
		return tg_error_set(err, TG_EDATA, "the outlet (column %d, row %d) is on a nodata cell",
							params->outlet_col + 1, params->outlet_row + 1);
	if (watershed && !params->has_outlet)
		return tg_error_set(err, TG_EINVAL, "a watershed needs an outlet");
	if (time)
	{
		if (!(params->b >= 0) || !isfinite(params->b))
			return tg_error_set(err, TG_EINVAL, "the slope exponent b must be a non-negative number, got %g",
								params->b);
		if (!(params->min_slope > 0) || !isfinite(params->min_slope))
			return tg_error_set(err, TG_EINVAL, "min_slope must be a positive number, got %g",
								params->min_slope);
	}
	st = run(ctx, (int64_t) dem->width * dem->height, travel_cpu, travel_gpu, &args, err);
	tg_free(ctx, (void *) args.roughness.values);
	tg_free(ctx, (void *) args.velocity.values);
	return st;
}

/* ------------------------------------------------------------------------
 * Pour point snapping
 * ------------------------------------------------------------------------ */
tg_status
tg_snap_pour_point(const tg_ctx *ctx, const tg_band *dem, const tg_snap_params *p,
				   int *col, int *row, tg_error *err)
{
	const int	W = dem->width,
				H = dem->height;
	double	   *acc;
	tg_status	st;

	st = check_flow_params(dem, &p->flow, err);
	if (st != TG_OK)
		return st;
	if (p->flow.routing != TG_ROUTE_D8)
		return tg_error_set(err, TG_EINVAL, "pour points snap on the D8 accumulation");
	/* refused, or the cell under the point: no accumulation needed */
	if (!(p->distance > 0 && isfinite(p->distance)) || !(p->x >= 0 && p->x < W && p->y >= 0 && p->y < H))
		return tg_snap_choose(dem, p, NULL, col, row, err);
	acc = tg_alloc(ctx, ((size_t) W * H > 0 ? (size_t) W * H : 1) * sizeof(double));
	if (acc == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the accumulation");
	st = tg_flow_accumulation(ctx, dem, NULL, &p->flow, TG_ACC_AUTO, TG_UNITS_CELLS, acc, err);
	if (st == TG_OK)
		st = tg_snap_choose(dem, p, acc, col, row, err);
	tg_free(ctx, acc);
	return st;
}

tg_status
tg_snap_choose(const tg_band *dem, const tg_snap_params *p, const double *acc, int *col, int *row,
			   tg_error *err)
{
	const int	W = dem->width,
				H = dem->height;
	const double d = p->distance;
	double		cx,
				cy,
				best_d2 = INFINITY,
				best_acc = -INFINITY;
	int			c0,
				r0,
				x0,
				x1,
				y0,
				y1;
	bool		found = false;

	if (!(d >= 0) || !isfinite(d))
		return tg_error_set(err, TG_EINVAL, "the snapping distance must be a non-negative number, got %g", d);
	if (!(p->x >= 0 && p->x < W && p->y >= 0 && p->y < H))
		return tg_error_set(err, TG_EINVAL, "the pour point (column %g, row %g) is outside the %d x %d raster",
							p->x, p->y, W, H);
	c0 = (int) floor(p->x);
	r0 = (int) floor(p->y);
	if (d == 0)
	{
		if (tg_band_value_is_nodata(dem, tg_band_get(dem, (size_t) r0 * W + c0)))
			return tg_error_set(err, TG_EDATA, "the pour point (column %d, row %d) is on a nodata cell",
								c0 + 1, r0 + 1);
		*col = c0;
		*row = r0;
		return TG_OK;
	}
	tg_row_spacing(&p->flow.geom, r0, &cx, &cy);
	if (!(cx > 0) || !(cy > 0) || !isfinite(cx) || !isfinite(cy))
		return tg_error_set(err, TG_EINVAL, "cell size must be positive, got %g x %g", cx, cy);
	/* the columns and rows whose centres can lie within d (clamped before the int conversion) */
	x0 = (int) fmax(0, floor(p->x - 0.5 - d / cx));
	x1 = (int) fmin(W - 1, ceil(p->x - 0.5 + d / cx));
	y0 = (int) fmax(0, floor(p->y - 0.5 - d / cy));
	y1 = (int) fmin(H - 1, ceil(p->y - 0.5 + d / cy));

	/* row-major with strict comparisons: the first of equal cells wins */
	for (int y = y0; y <= y1; y++)
		for (int x = x0; x <= x1; x++)
		{
			const size_t i = (size_t) y * W + x;
			const double ex = (x + 0.5 - p->x) * cx,
						ey = (y + 0.5 - p->y) * cy,
						d2 = ex * ex + ey * ey;

			if (!(d2 <= d * d) && !(x == c0 && y == r0))
				continue;
			if (isnan(acc[i]) || tg_band_value_is_nodata(dem, tg_band_get(dem, i)))
				continue;
			if (!found || acc[i] > best_acc || (acc[i] == best_acc && d2 < best_d2))
			{
				found = true;
				best_acc = acc[i];
				best_d2 = d2;
				*col = x;
				*row = y;
			}
		}
	if (!found)
		return tg_error_set(err, TG_EDATA, "no valid cell within %g of the pour point (column %d, row %d)",
							d, c0 + 1, r0 + 1);
	return TG_OK;
}

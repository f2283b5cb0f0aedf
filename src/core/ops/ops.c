/*
 * ops.c — what each operation of tg_run writes (its output rasters and
 * their bands), what it holds and where it may run (one table), and how it
 * computes them on a grid in memory, through the dispatcher's entry points
 * (so each runs on the backend chosen for it).
 */
#include "ops/ops.h"
#include "terrain/terrain.h"
#include "hydro/drainage/drainage.h"
#include "viewshed/viewshed.h"

#include <math.h>
#include <string.h>

/* Output nodata markers where the caller gives none */
#define FLOAT_NODATA (-9999.0)
#define SHARES_NODATA (-1.0)
#define CODES_NODATA 255
#define MASK_NODATA 65535
#define COUNT_NODATA 4294967295.0

/*
 * Every operation's traits, one row each: the result rasters it writes, the
 * bytes per cell it holds as one grid on each path (the memory check reads
 * them: tg_op_bytes_per_cell), and how it meets the rows beyond its own
 * (what decides whether it runs in strips or over parts).
 *
 * CPU one grid: the DEM as doubles where a routing needs them, the call's
 * scratch and every product plane.  GPU one grid, host: the DEM in its own
 * pixel type (8 bytes at most) and the product planes the device's results
 * come back into, but for the flow chain, whose products are streamed into
 * the tiles (gpu_planes: what the value form holds besides); the device
 * holds the rest (its column: what the CUDA side checks against the
 * device's memory before it starts, the routing's worst case).  0 on the GPU
 * columns: no GPU path of its own, the CPU figure holds.
 */
typedef struct op_traits
{
	int			outputs;
	tg_op_memory memory;
	tg_op_seams seams;
} op_traits;

#define CPU_ONLY(cpu) {cpu, 0, 0, 0}

static const op_traits traits[] = {
	/* host: DEM 8 + the product (4 or 8) */
	[TG_OP_SLOPE] = {1, {16, 12, 0, 20}, TG_SEAMS_WINDOW},
	[TG_OP_FILL] = {1, {40, 16, 0, 32}, TG_SEAMS_FILL},
	/*
	 * Device: the routing keeps 11 (surface 8, kinds, receivers, flat flags)
	 * beside the larger of its flats' scratch (20) and what follows.
	 */
	/* host: DEM 8 + shares, 8 planes of 32BF; device: the routing (31) and the codes */
	[TG_OP_DIRECTIONS] = {1, {96, 40, 0, 32}, TG_SEAMS_ROUTE},
	/* host: DEM 8, the accumulation streamed (8); device: 11 + the scratch (20; the indegree's is 18) */
	[TG_OP_ACCUMULATION] = {1, {96, 8, 8, 31}, TG_SEAMS_FLOW},
	/* host: DEM 8, surface 8 + receivers 2 + accumulation 8 streamed; device: 11 + 20 (the products 18) */
	[TG_OP_HYDROLOGY] = {3, {112, 8, 18, 31}, TG_SEAMS_FLOW},
	[TG_OP_LS_FACTOR] = {1, CPU_ONLY(160), TG_SEAMS_NONE},
	[TG_OP_RUSLE] = {1, CPU_ONLY(160), TG_SEAMS_NONE},
	[TG_OP_TRAVEL_TIME] = {1, CPU_ONLY(96), TG_SEAMS_NONE},
	[TG_OP_ISOCHRONE_BANDS] = {1, CPU_ONLY(96), TG_SEAMS_NONE},
	[TG_OP_WATERSHED] = {1, CPU_ONLY(96), TG_SEAMS_NONE},
	[TG_OP_SNAP_POUR_POINT] = {1, CPU_ONLY(96), TG_SEAMS_NONE},
	[TG_OP_VIEWSHED] = {1, CPU_ONLY(16), TG_SEAMS_NONE},
	[TG_OP_VIEWSHED_COUNT] = {1, CPU_ONLY(16), TG_SEAMS_NONE},
	[TG_OP_STREAM_ORDER] = {1, CPU_ONLY(160), TG_SEAMS_NONE},
	[TG_OP_STREAM_LINKS] = {1, CPU_ONLY(160), TG_SEAMS_NONE},
	[TG_OP_BASINS] = {1, CPU_ONLY(160), TG_SEAMS_NONE},
	[TG_OP_FLOW_LENGTH] = {1, CPU_ONLY(160), TG_SEAMS_NONE},
	[TG_OP_HAND] = {1, CPU_ONLY(160), TG_SEAMS_NONE},
	[TG_OP_WETNESS_INDEX] = {1, CPU_ONLY(160), TG_SEAMS_NONE},
	[TG_OP_TERRAIN] = {0, CPU_ONLY(8), TG_SEAMS_WINDOW},	/* outputs and planes: one per product */
};

static op_traits
traits_of(tg_op_kind kind)
{
	const op_traits unknown = {1, CPU_ONLY(160), TG_SEAMS_NONE};

	return (unsigned) kind < sizeof traits / sizeof traits[0] ? traits[kind] : unknown;
}

int
tg_op_outputs(const tg_op *op)
{
	return op->kind == TG_OP_TERRAIN ? op->terrain.nproducts : traits_of(op->kind).outputs;
}

int
tg_op_halo(const tg_op *op)
{
	if (tg_op_seams_of(op->kind) != TG_SEAMS_WINDOW)
		return -1;
	return op->kind == TG_OP_TERRAIN ? tg_terrain_halo(&op->terrain) : 1;
}

bool
tg_op_reach(const tg_op *op, const tg_layout *l, bool *in_reach)
{
	const int	n = op->kind == TG_OP_VIEWSHED ? 1 : op->kind == TG_OP_VIEWSHED_COUNT ? op->nobservers : 0;

	if (n == 0 || !(op->view.max_distance > 0 && isfinite(op->view.max_distance)))
		return false;
	memset(in_reach, 0, sizeof(bool) * (size_t) l->ntiles);
	for (int k = 0; k < n; k++)
	{
		tg_viewshed_params p = op->view;
		double		cx,
					cy;
		int			x0,
					y0,
					x1,
					y1;

		if (op->kind == TG_OP_VIEWSHED_COUNT)
		{
			p.observer_col = op->observer_cols[k];
			p.observer_row = op->observer_rows[k];
		}
		if (p.observer_col < 0 || p.observer_col >= l->width || p.observer_row < 0 || p.observer_row >= l->height)
			return false;
		tg_view_spacing(&p, &cx, &cy);
		tg_view_window(&p, l->width, l->height, cx, cy, &x0, &y0, &x1, &y1);
		for (int t = 0; t < l->ntiles; t++)
			in_reach[t] |= l->tiles[t].col0 <= x1 && x0 < l->tiles[t].col0 + l->tiles[t].width &&
				l->tiles[t].row0 <= y1 && y0 < l->tiles[t].row0 + l->tiles[t].height;
	}
	return true;
}

tg_op_memory
tg_op_memory_of(const tg_op *op)
{
	tg_op_memory m = traits_of(op->kind).memory;

	/* tg_terrain: the DEM, then a plane per product */
	if (op->kind == TG_OP_TERRAIN)
		m.cpu += 8 * (size_t) op->terrain.nproducts;
	/*
	 * Beyond D8, the device holds 8 shares a cell in the routing, and as
	 * many gathered per receiving cell in the accumulation (or exported as
	 * directions) where it has room for them (else the pulls read the
	 * routing's: the same sums, slower).
	 */
	if (op->kind == TG_OP_HYDROLOGY || op->kind == TG_OP_ACCUMULATION || op->kind == TG_OP_DIRECTIONS)
		m.gpu_device += op->flow.routing != TG_ROUTE_D8 ? 64 : 0;
	/* a weight raster: its band (8 at most) and the weights as doubles */
	if ((op->kind == TG_OP_HYDROLOGY || op->kind == TG_OP_ACCUMULATION) && op->weight_input > 0 && m.gpu_host)
		m.gpu_host += 16;
	if (m.gpu_host == 0)
		m.gpu_host = m.cpu;
	return m;
}

size_t
tg_op_bytes_per_cell(const tg_op *op, bool on_gpu)
{
	const tg_op_memory m = tg_op_memory_of(op);

	return on_gpu ? m.gpu_host : m.cpu;
}

size_t
tg_op_gpu_host_bytes(const tg_op *op, const tg_job *job)
{
	const tg_layout *l = job->layout;
	const tg_op_memory m = tg_op_memory_of(op);

	if (job->whole)
		return (size_t) l->width * l->height * (m.gpu_host + m.gpu_planes);
	return (size_t) l->width * l->height * m.gpu_host + 2 * (size_t) tg_layout_tallest(l) * l->width * m.gpu_planes;
}

tg_op_seams
tg_op_seams_of(tg_op_kind kind)
{
	return traits_of(kind).seams;
}

static bool
fills_in_pieces(const tg_op *op)
{
	return op->fill_method == TG_FILL_PRIORITY_FLOOD && op->epsilon == 0;
}

bool
tg_op_in_strips(const tg_op *op, const tg_ctx *ctx, const char **why_not)
{
	const tg_op_seams seams = tg_op_seams_of(op->kind);

	*why_not = NULL;
	/* with backend gpu, only what has a GPU step in strips: each strip's D8 routing and accumulation */
	if (ctx->backend == TG_BACKEND_GPU && !(seams == TG_SEAMS_FLOW && op->flow.routing == TG_ROUTE_D8))
		*why_not = "backend auto or cpu (with backend gpu, only tg_flow_accumulation and tg_hydrology with "
			"routing d8 do: each strip routed and accumulated on the GPU)";
	else if (seams == TG_SEAMS_FILL && !fills_in_pieces(op))
		*why_not = "method priority-flood with epsilon 0";
	else if (seams >= TG_SEAMS_ROUTE && op->flow.routing == TG_ROUTE_FDD8)
		*why_not = "routing d8, fd8, mfd-md, dinf or anisotropic";
	else
		return seams != TG_SEAMS_NONE;
	return false;
}

bool
tg_op_in_parts(const tg_op *op, const char **why_not)
{
	const tg_op_seams seams = tg_op_seams_of(op->kind);

	*why_not = NULL;
	if (seams == TG_SEAMS_NONE)
		*why_not = "tg_fill, tg_slope, tg_flow_direction, tg_flow_accumulation and tg_hydrology";
	else if (seams == TG_SEAMS_FILL && !fills_in_pieces(op))
		*why_not = "tg_fill with method priority-flood and epsilon 0";
	else if (seams == TG_SEAMS_ROUTE && (op->flow.routing != TG_ROUTE_D8 || op->directions != TG_DIRECTIONS_CODES))
		*why_not = "tg_flow_direction with routing d8 and output codes";
	else if (seams == TG_SEAMS_FLOW && op->weight_input > 0)
		*why_not = "tg_flow_accumulation and tg_hydrology with no weight";
	return *why_not == NULL;
}

/* Values exact in float stay 32BF; 32-bit integers and 64BF need 64BF. */
static tg_pixtype
fill_type(const tg_band *dem)
{
	return dem->pixtype == TG_PT_64BF || dem->pixtype == TG_PT_32BSI ||
		dem->pixtype == TG_PT_32BUI ? TG_PT_64BF : TG_PT_32BF;
}

static double
fill_nodata(const tg_op *op, const tg_band *dem)
{
	if (op->has_nodata && op->kind == TG_OP_FILL)
		return op->nodata;
	return dem->has_nodata ? dem->nodata : tg_pixtype_min_value(fill_type(dem));
}

/*
 * A slope's nodata: the caller's, else the input band's when negative (a
 * slope never is), else -9999: a marker such as 0 would turn flats into
 * nodata.
 */
static double
slope_nodata(const tg_op *op, const tg_band *dem)
{
	if (op->has_nodata)
		return (float) op->nodata;
	if (dem->has_nodata && (float) dem->nodata < 0)
		return (float) dem->nodata;
	return FLOAT_NODATA;
}

/*
 * A terrain product's nodata: 0 for bytes, else the slope's rule (aspect
 * never takes -1 from the DEM: it is its flat).
 */
static double
terrain_nodata(const tg_op *op, const tg_band *dem, int k)
{
	const double v = slope_nodata(op, dem);

	if (op->terrain.types[k] == TG_PT_8BUI)
		return 0;
	if (op->terrain.products[k] == TG_TERRAIN_ASPECT && v == -1 && !op->has_nodata)
		return FLOAT_NODATA;
	return op->terrain.types[k] == TG_PT_32BF ? (float) v : v;
}

static void
one_band(tg_output *o, tg_pixtype type, bool has_nodata, double nodata)
{
	memset(o, 0, sizeof *o);
	o->nbands = 1;
	o->specs[0].pixtype = type;
	o->specs[0].has_nodata = has_nodata;
	o->specs[0].nodata = nodata;
}

static double
op_nodata(const tg_op *op, double otherwise)
{
	return op->has_nodata ? op->nodata : otherwise;
}

tg_status
tg_op_plan(const tg_op *op, const tg_band *dem, tg_output *outs, tg_error *err)
{
	switch (op->kind)
	{
		case TG_OP_SLOPE:
			one_band(&outs[0], TG_PT_32BF, true, slope_nodata(op, dem));
			break;
		case TG_OP_FILL:
			one_band(&outs[0], fill_type(dem), true, fill_nodata(op, dem));
			break;
		case TG_OP_DIRECTIONS:
			if (op->directions == TG_DIRECTIONS_ANGLE)
				one_band(&outs[0], TG_PT_32BF, true, SHARES_NODATA);
			else if (op->directions == TG_DIRECTIONS_SHARES)
			{
				one_band(&outs[0], TG_PT_32BF, true, SHARES_NODATA);
				outs[0].nbands = 8;
				for (int k = 1; k < 8; k++)
					outs[0].specs[k] = outs[0].specs[0];
			}
			else if (op->directions == TG_DIRECTIONS_CODES)
				one_band(&outs[0], TG_PT_8BUI, true, CODES_NODATA);
			else
				one_band(&outs[0], TG_PT_16BUI, true, MASK_NODATA);
			break;
		case TG_OP_ACCUMULATION:
			one_band(&outs[0], op->accumulation_type, true, op_nodata(op, FLOAT_NODATA));
			break;
		case TG_OP_HYDROLOGY:
			one_band(&outs[0], fill_type(dem), true, fill_nodata(op, dem));
			if (op->flow.routing == TG_ROUTE_D8)
				one_band(&outs[1], TG_PT_8BUI, true, CODES_NODATA);
			else
				one_band(&outs[1], TG_PT_16BUI, true, MASK_NODATA);
			one_band(&outs[2], TG_PT_64BF, true, op_nodata(op, FLOAT_NODATA));
			break;
		case TG_OP_LS_FACTOR:
		case TG_OP_RUSLE:
		case TG_OP_TRAVEL_TIME:
		case TG_OP_FLOW_LENGTH:
		case TG_OP_HAND:
		case TG_OP_WETNESS_INDEX:
			one_band(&outs[0], TG_PT_32BF, true, op_nodata(op, FLOAT_NODATA));
			break;
		case TG_OP_STREAM_ORDER:
		case TG_OP_STREAM_LINKS:
		case TG_OP_BASINS:
			one_band(&outs[0], TG_PT_32BUI, true, 0);
			break;
		case TG_OP_ISOCHRONE_BANDS:
			one_band(&outs[0], TG_PT_32BUI, true, 0);
			break;
		case TG_OP_WATERSHED:
		case TG_OP_SNAP_POUR_POINT:
			one_band(&outs[0], TG_PT_8BUI, true, 0);
			break;
		case TG_OP_VIEWSHED:
			if (op->view.output == TG_VIEW_VISIBLE)
				one_band(&outs[0], TG_PT_8BUI, true, CODES_NODATA);
			else
				one_band(&outs[0], TG_PT_32BF, true, FLOAT_NODATA);
			break;
		case TG_OP_VIEWSHED_COUNT:
			one_band(&outs[0], TG_PT_32BUI, dem->has_nodata, COUNT_NODATA);
			break;
		case TG_OP_TERRAIN:
			for (int k = 0; k < op->terrain.nproducts && k < TG_MAX_OUTPUTS; k++)
				one_band(&outs[k], op->terrain.types[k], true, terrain_nodata(op, dem, k));
			break;
		default:
			return tg_error_set(err, TG_EINVAL, "unknown operation %d", (int) op->kind);
	}
	return TG_OK;
}

/* ------------------------------------------------------------------------
 * In memory
 * ------------------------------------------------------------------------ */

/* A plane of n cells for output o, band b, freed with the result. */
static void *
new_plane(const tg_ctx *ctx, tg_op_result *r, int o, int b, tg_pixtype type, size_t n)
{
	void	   *p = tg_alloc(ctx, (n ? n : 1) * tg_pixtype_size(type));

	if (p == NULL)
		return NULL;
	r->buffers[r->nbuffers++] = p;
	r->outs[o].planes[b].data = p;
	r->outs[o].planes[b].type = type;
	return p;
}

static tg_factor
factor_of(const tg_op_factor *f, const tg_grid_band *grids)
{
	tg_factor	out = {f->input > 0 ? &grids[f->input].band : NULL, f->value};

	return out;
}

static tg_rusle_params
rusle_params(const tg_op *op, const tg_grid_band *grids)
{
	tg_rusle_params rp;

	memset(&rp, 0, sizeof rp);
	rp.flow = op->flow;
	rp.method = op->method;
	rp.m = op->m;
	rp.n = op->n;
	rp.a0 = op->a0;
	rp.b0 = op->b0;
	rp.r = factor_of(&op->rusle[0], grids);
	rp.k = factor_of(&op->rusle[1], grids);
	rp.c = factor_of(&op->rusle[2], grids);
	rp.p = factor_of(&op->rusle[3], grids);
	return rp;
}

static tg_travel_params
travel_params(const tg_op *op, const tg_grid_band *grids)
{
	tg_travel_params tp;

	memset(&tp, 0, sizeof tp);
	tp.flow = op->flow;
	tp.has_outlet = op->has_outlet;
	tp.outlet_col = op->outlet_col;
	tp.outlet_row = op->outlet_row;
	tp.roughness = factor_of(&op->roughness, grids);
	tp.velocity = factor_of(&op->velocity, grids);
	tp.b = op->b;
	tp.min_slope = op->min_slope;
	tp.snap = op->snap;
	tp.outlet_x = op->outlet_x;
	tp.outlet_y = op->outlet_y;
	return tp;
}

static tg_drainage_params
drainage_params(const tg_op *op)
{
	tg_drainage_params dp;

	memset(&dp, 0, sizeof dp);
	dp.flow = op->flow;
	dp.method = op->method;
	dp.units = op->units;
	dp.threshold = op->stream_threshold;
	dp.ordering = op->ordering;
	dp.upstream = op->upstream;
	dp.min_slope = op->min_slope;
	return dp;
}

/* Per-cell passes that turn a computed plane into the output's */
typedef struct derive_job
{
	const tg_op *op;
	const tg_band *dem;
	size_t		n;
	int			width;
	const float *frac;			/* directions: 8 planes of shares */
	uint16_t   *mask;
	float	   *angle;			/* dinf angles */
	const float *time;			/* isochrone bands */
	uint32_t   *bands;
	uint8_t    *watershed;
	uint32_t   *count;			/* cumulative viewshed */
	bool		overflow;		/* a band number beyond 32 bits (written by any task) */
} derive_job;

/* The receivers' codes or-ed (D8 codes are that already) */
static tg_status
mask_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const derive_job *j = arg;

	for (size_t i = (size_t) y0 * j->width; i < (size_t) y1 * j->width; i++)
	{
		uint16_t	m = 0;

		if (isnan(j->frac[i]))
			m = MASK_NODATA;
		else
			for (int k = 0; k < 8; k++)
				if (j->frac[(size_t) k * j->n + i] > 0)
					m |= (uint16_t) (1u << k);
		j->mask[i] = m;
	}
	return TG_OK;
}

/* D-infinity angles from the shares, in each row's cell geometry */
static tg_status
angle_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const derive_job *j = arg;

	for (int y = y0; y < y1; y++)
	{
		double		dx,
					dy,
					dist[8];

		tg_row_spacing(&j->op->flow.geom, y, &dx, &dy);
		tg_nbr_distances(dx, dy, dist);
		for (size_t i = (size_t) y * j->width; i < (size_t) (y + 1) * j->width; i++)
		{
			float		s[8];

			for (int k = 0; k < 8; k++)
				s[k] = j->frac[(size_t) k * j->n + i];
			j->angle[i] = isnan(s[0]) ? (float) SHARES_NODATA : (float) tg_dinf_angle(s, dist);
		}
	}
	return TG_OK;
}

/* band k holds times in [(k - 1) interval, k interval); 0 outside the watershed */
static tg_status
isochrone_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	derive_job *j = arg;

	for (size_t i = (size_t) y0 * j->width; i < (size_t) y1 * j->width; i++)
	{
		const double k = isnan(j->time[i]) ? 0 : floor((double) j->time[i] / j->op->interval) + 1;

		if (k > (double) UINT32_MAX)
			j->overflow = true;
		else
			j->bands[i] = (uint32_t) k;
	}
	return TG_OK;
}

/* 1 inside, 0 (the output's nodata) outside and on nodata */
static tg_status
watershed_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const derive_job *j = arg;

	for (size_t i = (size_t) y0 * j->width; i < (size_t) y1 * j->width; i++)
		j->watershed[i] = j->watershed[i] == 1 ? 1 : 0;
	return TG_OK;
}

/* counts are nodata where the DEM is */
static tg_status
count_nodata_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const derive_job *j = arg;

	for (size_t i = (size_t) y0 * j->width; i < (size_t) y1 * j->width; i++)
		if (tg_band_value_is_nodata(j->dem, tg_band_get(j->dem, i)))
			j->count[i] = UINT32_MAX;
	return TG_OK;
}

static tg_status
compute_directions(const tg_ctx *ctx, const tg_op *op, const tg_band *dem, tg_op_result *r,
				   tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	tg_output  *o = &r->outs[0];
	derive_job	j = {.op = op, .dem = dem, .n = n, .width = dem->width};
	tg_status	st;

	/* D8 codes serve as its mask as well: the same bits */
	if (op->flow.routing == TG_ROUTE_D8 && op->directions != TG_DIRECTIONS_SHARES)
	{
		uint8_t    *codes = new_plane(ctx, r, 0, 0, TG_PT_8BUI, n);

		if (codes == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate flow directions");
		o->planes[0].has_marker = true;
		o->planes[0].marker = CODES_NODATA;
		return tg_flow_direction(ctx, dem, &op->flow, codes, NULL, err);
	}
	j.frac = tg_alloc(ctx, (n ? 8 * n : 1) * sizeof(float));
	if (j.frac == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate flow shares");
	r->buffers[r->nbuffers++] = (void *) j.frac;
	st = tg_flow_direction(ctx, dem, &op->flow, NULL, (float *) j.frac, err);
	if (st != TG_OK || op->directions == TG_DIRECTIONS_SHARES)
	{
		for (int k = 0; k < 8; k++)
		{
			o->planes[k].data = j.frac + (size_t) k * n;
			o->planes[k].type = TG_PT_32BF;
		}
		return st;
	}
	if (op->directions == TG_DIRECTIONS_ANGLE)
	{
		j.angle = new_plane(ctx, r, 0, 0, TG_PT_32BF, n);
		if (j.angle == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate flow angles");
		return tg_parallel_rows(ctx, dem->width, dem->height, angle_rows, &j, err);
	}
	j.mask = new_plane(ctx, r, 0, 0, TG_PT_16BUI, n);
	if (j.mask == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate receiver masks");
	o->planes[0].has_marker = true;
	o->planes[0].marker = MASK_NODATA;
	return tg_parallel_rows(ctx, dem->width, dem->height, mask_rows, &j, err);
}

/*
 * Tiles written as the flow products come back from the device, slice by
 * slice (tg_rows_sink); the product planes only where they come back whole.
 */
typedef struct tile_sink
{
	const tg_job *job;
	tg_op_result *r;
	size_t		cells;
	int			out_of[TG_SINK_PLANES];	/* the output each product is, or -1 */
} tile_sink;

static tg_status
write_slice(const tg_ctx *ctx, void *arg, int row0, int nrows, void *const planes[TG_SINK_PLANES], tg_error *err)
{
	const tile_sink *t = arg;
	tg_output	outs[TG_MAX_OUTPUTS];
	char		resume[64];
	tg_status	st;

	memcpy(outs, t->r->outs, sizeof outs);
	for (int k = 0; k < TG_SINK_PLANES; k++)
		if (t->out_of[k] >= 0)
			outs[t->out_of[k]].planes[0].data = planes[k];
	tg_phase_running(ctx, resume, sizeof resume);
	tg_phase(ctx, "encode");
	st = tg_write_tiles(ctx, t->job, outs, t->r->nout, row0, nrows, err);
	if (resume[0])
		tg_phase(ctx, resume);
	else
		tg_phase_end(ctx);
	return st;
}

/* The planes of the products the sink would have written, each allocated once. */
static tg_status
product_planes(const tg_ctx *ctx, void *arg, tg_flow_products *out, tg_error *err)
{
	const tile_sink *t = arg;
	void	   *planes[TG_SINK_PLANES];

	for (int k = 0; k < TG_SINK_PLANES; k++)
	{
		const int	o = t->out_of[k];

		planes[k] = NULL;
		if (o < 0)
			continue;
		planes[k] = t->r->outs[o].planes[0].data ? (void *) t->r->outs[o].planes[0].data
			: new_plane(ctx, t->r, o, 0, t->r->outs[o].planes[0].type, t->cells);
		if (planes[k] == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate the flow products");
	}
	out->surface = planes[0];
	out->receivers = planes[1];
	out->acc = planes[2];
	return TG_OK;
}

/* The rows that no tile of the layout straddles, 0 and its height among them. */
static int *
tile_cuts(const tg_ctx *ctx, const tg_layout *l, int *ncuts)
{
	uint8_t    *inside = tg_alloc(ctx, (size_t) l->height + 1);
	int		   *cuts = tg_alloc(ctx, ((size_t) l->height + 1) * sizeof(int));

	*ncuts = 0;
	if (inside == NULL || cuts == NULL)
	{
		tg_free(ctx, inside);
		tg_free(ctx, cuts);
		return NULL;
	}
	memset(inside, 0, (size_t) l->height + 1);
	for (int t = 0; t < l->ntiles; t++)
		for (int y = l->tiles[t].row0 + 1; y < l->tiles[t].row0 + l->tiles[t].height && y < l->height; y++)
			inside[y] = 1;
	for (int y = 0; y <= l->height; y++)
		if (!inside[y])
			cuts[(*ncuts)++] = y;
	tg_free(ctx, inside);
	return cuts;
}

/*
 * Flow accumulation (output 0) or tg_hydrology (routing surface, receivers,
 * accumulation).  With `writing` set on a coverage, the GPU path writes the
 * job's tiles band by band while the products come back, and sets
 * r->written; the product planes are then never allocated.  The value form
 * (one result raster) takes its planes whole.
 */
static tg_status
compute_flow(const tg_ctx *ctx, const tg_op *op, const tg_layout *layout, const tg_grid_band *grids,
			 const tg_job *writing, tg_op_result *r, tg_error *err)
{
	const tg_band *dem = &grids[0].band;
	const size_t n = (size_t) dem->width * dem->height;
	const tg_band *weight = op->weight_input > 0 ? &grids[op->weight_input].band : NULL;
	const bool	chain = op->kind == TG_OP_HYDROLOGY;
	tile_sink	to_tiles = {writing, r, n, {chain ? 0 : -1, chain ? 1 : -1, chain ? 2 : 0}};
	tg_rows_sink sink = {.rows = write_slice, .arg = &to_tiles, .planes = product_planes,
	.deferred = {chain, chain, true}};
	tg_flow_products pr;
	tg_status	st;

	memset(&pr, 0, sizeof pr);
	pr.sink = &sink;
	if (chain)
	{
		pr.surface_type = r->outs[0].specs[0].pixtype;
		pr.surface_nodata = r->outs[0].specs[0].nodata;
		r->outs[0].planes[0].has_marker = true;
		r->outs[0].planes[0].marker = pr.surface_nodata;
		r->outs[1].planes[0].has_marker = true;
		r->outs[1].planes[0].marker = TG_NODATA_RECEIVERS;
		r->outs[1].planes[0].type = TG_PT_16BUI;
		r->outs[0].planes[0].type = pr.surface_type;
	}
	/* the planes' types now: streamed products never get a plane that would set them */
	r->outs[chain ? 2 : 0].planes[0].type = TG_PT_64BF;
	if (writing && !writing->whole)
	{
		sink.cuts = tile_cuts(ctx, layout, &sink.ncuts);
		if (sink.cuts == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate the rows of %s", layout->name);
	}
	else
	{
		/* no slices: the planes now, and no sink */
		st = tg_flow_planes(ctx, &pr, &pr, err);
		pr.sink = NULL;
		if (st != TG_OK)
			return st;
	}
	st = tg_hydrology(ctx, dem, weight, &op->flow, op->method, op->units, &pr, err);
	r->written = sink.used;
	tg_free(ctx, (void *) sink.cuts);
	return st;
}

/* The products after the accumulation (drainage.c) */
static tg_status
compute_drainage(const tg_ctx *ctx, const tg_op *op, const tg_band *dem, tg_op_result *r, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	tg_drainage_params dp = drainage_params(op);
	float	   *out;

	if (op->kind == TG_OP_STREAM_ORDER || op->kind == TG_OP_STREAM_LINKS || op->kind == TG_OP_BASINS)
	{
		uint32_t   *labels = new_plane(ctx, r, 0, 0, TG_PT_32BUI, n);
		tg_basin_params bp = {dp, op->basin_outlets, op->npoints, op->point_xs, op->point_ys, op->snap};

		if (labels == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate the output");
		return op->kind == TG_OP_STREAM_ORDER ? tg_stream_order(ctx, dem, &dp, labels, err)
			: op->kind == TG_OP_STREAM_LINKS ? tg_stream_network_build(ctx, dem, &dp, labels, op->network, err)
			: tg_basins(ctx, dem, &bp, labels, err);
	}
	out = new_plane(ctx, r, 0, 0, TG_PT_32BF, n);
	if (out == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the output");
	return op->kind == TG_OP_FLOW_LENGTH ? tg_flow_length(ctx, dem, &dp, out, err)
		: op->kind == TG_OP_HAND ? tg_hand(ctx, dem, &dp, out, err)
		: tg_wetness_index(ctx, dem, &dp, out, err);
}

/* The local derivatives (tg_slope is the slope alone), each product in a plane of its own */
static tg_status
compute_local(const tg_ctx *ctx, const tg_op *op, const tg_layout *layout, const tg_band *dem, tg_op_result *r,
			  tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	tg_terrain_params p;
	void	   *planes[TG_TERRAIN_PRODUCTS];

	if (op->kind == TG_OP_SLOPE)
	{
		memset(&p, 0, sizeof p);
		p.scale = op->slope_scale;
		p.slope_units = op->slope_units;
		p.nproducts = 1;
		p.products[0] = TG_TERRAIN_SLOPE;
		p.types[0] = TG_PT_32BF;
	}
	else
		p = op->terrain;
	p.pixel_width = tg_georef_pixel_width(&layout->geo);
	p.pixel_height = tg_georef_pixel_height(&layout->geo);
	for (int k = 0; k < p.nproducts; k++)
	{
		p.nodata[k] = r->outs[k].specs[0].nodata;
		planes[k] = new_plane(ctx, r, k, 0, p.types[k], n);
		if (planes[k] == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate the terrain derivatives");
	}
	return tg_terrain(ctx, dem, &p, planes, err);
}

tg_status
tg_op_compute(const tg_ctx *ctx, const tg_op *op, const tg_layout *layout, const tg_grid_band *grids,
			  const tg_job *writing, tg_op_result *r, tg_error *err)
{
	const tg_band *dem = &grids[0].band;
	const size_t n = (size_t) dem->width * dem->height;
	tg_status	st;

	memset(r, 0, sizeof *r);
	r->nout = tg_op_outputs(op);
	st = tg_op_plan(op, dem, r->outs, err);
	if (st != TG_OK)
		return st;
	switch (op->kind)
	{
		case TG_OP_SLOPE:
		case TG_OP_TERRAIN:
			return compute_local(ctx, op, layout, dem, r, err);
		case TG_OP_FILL:
			{
				tg_fill_params p = {op->fill_method, op->epsilon, r->outs[0].specs[0].pixtype};
				void	   *out = new_plane(ctx, r, 0, 0, p.out_type, n);

				if (out == NULL)
					return tg_error_set(err, TG_ENOMEM, "could not allocate the filled DEM");
				r->outs[0].planes[0].has_marker = true;
				r->outs[0].planes[0].marker = r->outs[0].specs[0].nodata;
				return tg_fill(ctx, dem, &p, r->outs[0].specs[0].nodata, out, err);
			}
		case TG_OP_DIRECTIONS:
			return compute_directions(ctx, op, dem, r, err);
		case TG_OP_ACCUMULATION:
		case TG_OP_HYDROLOGY:
			return compute_flow(ctx, op, layout, grids, writing, r, err);
		case TG_OP_LS_FACTOR:
		case TG_OP_RUSLE:
			{
				tg_rusle_params rp = rusle_params(op, grids);
				float	   *out = new_plane(ctx, r, 0, 0, TG_PT_32BF, n);

				if (out == NULL)
					return tg_error_set(err, TG_ENOMEM, "could not allocate the LS factor");
				return op->kind == TG_OP_RUSLE ? tg_rusle(ctx, dem, &rp, NULL, out, err)
					: tg_rusle(ctx, dem, &rp, out, NULL, err);
			}
		case TG_OP_TRAVEL_TIME:
			{
				tg_travel_params tp = travel_params(op, grids);
				float	   *time = new_plane(ctx, r, 0, 0, TG_PT_32BF, n);

				return time ? tg_travel_time(ctx, dem, &tp, time, NULL, err)
					: tg_error_set(err, TG_ENOMEM, "could not allocate travel times");
			}
		case TG_OP_ISOCHRONE_BANDS:
			{
				tg_travel_params tp = travel_params(op, grids);
				derive_job	j = {.op = op, .dem = dem, .n = n, .width = dem->width};

				j.time = tg_alloc(ctx, (n ? n : 1) * sizeof(float));
				j.bands = new_plane(ctx, r, 0, 0, TG_PT_32BUI, n);
				if (j.time == NULL || j.bands == NULL)
					st = tg_error_set(err, TG_ENOMEM, "could not allocate travel times");
				else
					st = tg_travel_time(ctx, dem, &tp, (float *) j.time, NULL, err);
				if (st == TG_OK)
					st = tg_parallel_rows(ctx, dem->width, dem->height, isochrone_rows, &j, err);
				if (st == TG_OK && j.overflow)
					st = tg_error_set(err, TG_ELIMIT, "interval %g makes more than %u bands",
									  op->interval, UINT32_MAX);
				tg_free(ctx, (void *) j.time);
				return st;
			}
		case TG_OP_WATERSHED:
			{
				tg_travel_params tp = travel_params(op, grids);
				derive_job	j = {.op = op, .dem = dem, .n = n, .width = dem->width};

				j.watershed = new_plane(ctx, r, 0, 0, TG_PT_8BUI, n);
				if (j.watershed == NULL)
					return tg_error_set(err, TG_ENOMEM, "could not allocate the watershed");
				st = tg_travel_time(ctx, dem, &tp, NULL, j.watershed, err);
				return st != TG_OK ? st : tg_parallel_rows(ctx, dem->width, dem->height, watershed_rows, &j, err);
			}
		case TG_OP_SNAP_POUR_POINT:
			{
				tg_snap_params sp = {op->flow, op->outlet_x, op->outlet_y, op->snap};
				uint8_t    *mark = new_plane(ctx, r, 0, 0, TG_PT_8BUI, n);
				int			col,
							row;

				if (mark == NULL)
					return tg_error_set(err, TG_ENOMEM, "could not allocate the pour point");
				st = tg_snap_pour_point(ctx, dem, &sp, &col, &row, err);
				if (st != TG_OK)
					return st;
				memset(mark, 0, n);
				mark[(size_t) row * dem->width + col] = 1;
				if (op->snapped)
				{
					op->snapped[0] = col;
					op->snapped[1] = row;
				}
				return TG_OK;
			}
		case TG_OP_VIEWSHED:
			{
				float	   *out = new_plane(ctx, r, 0, 0, TG_PT_32BF, n);

				return out ? tg_viewshed(ctx, dem, &op->view, out, err)
					: tg_error_set(err, TG_ENOMEM, "could not allocate the viewshed");
			}
		case TG_OP_VIEWSHED_COUNT:
			{
				derive_job	j = {.op = op, .dem = dem, .n = n, .width = dem->width};

				j.count = new_plane(ctx, r, 0, 0, TG_PT_32BUI, n);
				if (j.count == NULL)
					return tg_error_set(err, TG_ENOMEM, "could not allocate the counts");
				r->outs[0].planes[0].has_marker = dem->has_nodata;
				r->outs[0].planes[0].marker = UINT32_MAX;
				st = tg_viewshed_count(ctx, dem, &op->view, op->observer_cols, op->observer_rows,
									   op->nobservers, j.count, err);
				if (st == TG_OK && dem->has_nodata)
					st = tg_parallel_rows(ctx, dem->width, dem->height, count_nodata_rows, &j, err);
				return st;
			}
		case TG_OP_STREAM_ORDER:
		case TG_OP_STREAM_LINKS:
		case TG_OP_BASINS:
		case TG_OP_FLOW_LENGTH:
		case TG_OP_HAND:
		case TG_OP_WETNESS_INDEX:
			return compute_drainage(ctx, op, dem, r, err);
	}
	return tg_error_set(err, TG_EINVAL, "unknown operation %d", (int) op->kind);
}

void
tg_op_free(const tg_ctx *ctx, tg_op_result *r)
{
	for (int k = 0; k < r->nbuffers; k++)
		tg_free(ctx, r->buffers[k]);
	r->nbuffers = 0;
}

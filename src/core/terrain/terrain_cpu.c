/*
 * terrain_cpu.c — the local terrain derivatives on the CPU (tg_terrain).
 *
 * Each task of rows decodes its rows, with `halo` more above and below, into
 * a block of doubles (NaN for nodata and beyond the raster, `halo` columns
 * of it on either side), so that every product reads its neighbours without
 * bounds checks and for every pixel type alike.  Then, row by row, it runs
 * terrain.h's per-cell formulas as one loop per product along the row: the
 * choice of product and options is made once a row, and the loops are
 * straight-line arithmetic the compiler vectorises (the Makefile builds this
 * file so), the calls to atan, atan2 and acos left in loops of their own.
 * Horn's differences are formed once a row for the products that share them.
 * Tasks are fixed by the grid and the halo, never by the thread count.
 */
#include "runtime/runtime.h"
#include "terrain/terrain.h"

/* Cells of a row whose lines of sight are followed together (their state stays in the L1 cache). */
#define SIGHT_CELLS 256

typedef struct terrain_job
{
	const tg_band *dem;
	tg_terrain_consts consts;
	bool		horn;			/* some product reads Horn's differences */
	int			halo;
	int			rows_per_task;
	void	   *const *out;
} terrain_job;

/* A task's rows and its working rows. */
typedef struct terrain_rows
{
	double	   *block;			/* the decoded rows, halo included */
	size_t		stride;
	double	   *dzx,			/* Horn's differences along the row */
			   *dzy,
			   *value;			/* a product along the row */
	/* the lines of sight of SIGHT_CELLS cells (tg_geomorphon_step's state) */
	double	   *rise,
			   *rise_n,
			   *drop,
			   *drop_n;
	int		   *lower,
			   *higher;
} terrain_rows;

/* (Both backends' callers use it; it lives here beside the reference path.) */
void
tg_terrain_defaults(tg_terrain_params *p)
{
	memset(p, 0, sizeof *p);
	p->scale = 1;
	p->slope_units = TG_SLOPE_DEGREES;
	p->aspect_units = TG_SLOPE_DEGREES;
	p->hillshade = TG_HILLSHADE_STANDARD;
	p->azimuth = 315;
	p->altitude = 45;
	p->max_bright = 255;
	p->z_factor = 1;
	p->tri = TG_TRI_WILSON;
	p->curvature = TG_CURVATURE_PROFILE;
	p->search_radius = 3;
	p->skip = 0;
	p->flat_threshold = 1;
}

/* Rows y0 - halo .. y1 + halo of the DEM into the block (NaN beyond it and in the side columns). */
static void
decode_rows(const terrain_job *j, int y0, int y1, terrain_rows *t)
{
	const int	R = j->halo;
	const size_t stride = t->stride;

	for (int y = y0 - R; y < y1 + R; y++)
	{
		double	   *row = t->block + (size_t) (y - y0 + R) * stride;

		if (y >= 0 && y < j->dem->height)
		{
			for (int x = 0; x < R; x++)
				row[x] = row[stride - 1 - x] = NAN;
			tg_band_row_to_f64(j->dem, y, row + R);
		}
		else
			for (size_t x = 0; x < stride; x++)
				row[x] = NAN;
	}
}

/* Horn's differences of every cell of the row at mid. */
static void
horn_row(const double *restrict mid, ptrdiff_t stride, int W, double *restrict dzx, double *restrict dzy)
{
	for (int x = 0; x < W; x++)
	{
		const tg_window w = tg_window_at(mid + x, stride);

		tg_horn_sums(&w, &dzx[x], &dzy[x]);
	}
}

/*
 * The geomorphons of the row at mid: SIGHT_CELLS cells at a time, each
 * direction's lines of sight followed step by step across the cells.
 */
static void
geomorphon_row(const tg_terrain_consts *c, const double *mid, ptrdiff_t stride, int W, terrain_rows *t)
{
	double	   *restrict rise = t->rise,
			   *restrict rise_n = t->rise_n,
			   *restrict drop = t->drop,
			   *restrict drop_n = t->drop_n;
	int		   *restrict lower = t->lower,
			   *restrict higher = t->higher;

	for (int x0 = 0; x0 < W; x0 += SIGHT_CELLS)
	{
		const int	n_cells = W - x0 < SIGHT_CELLS ? W - x0 : SIGHT_CELLS;
		const double *restrict centre = mid + x0;

		for (int x = 0; x < n_cells; x++)
			lower[x] = higher[x] = 0;
		for (int k = 0; k < 8; k++)
		{
			const ptrdiff_t step = tg_nbr_dy(k) * stride + tg_nbr_dx(k);
			const double flat_rise = c->flat_rise[k];

			for (int x = 0; x < n_cells; x++)
				rise[x] = rise_n[x] = drop[x] = drop_n[x] = 0;
			for (int n = c->first_step[k]; n <= c->last_step[k]; n++)
			{
				const double *restrict seen = centre + n * step;

				for (int x = 0; x < n_cells; x++)
					tg_geomorphon_step(seen[x] - centre[x], n, &rise[x], &rise_n[x], &drop[x], &drop_n[x]);
			}
			for (int x = 0; x < n_cells; x++)
			{
				const int	vote = tg_geomorphon_vote(rise[x], rise_n[x], drop[x], drop_n[x], flat_rise);

				higher[x] += vote > 0;
				lower[x] += vote < 0;
			}
		}
		for (int x = 0; x < n_cells; x++)
			t->value[x0 + x] = tg_geomorphon_form(lower[x], higher[x]);
	}
}

/* v[x] = expr for every cell x of the row at mid, the cell's window w at hand */
#define EACH_WINDOW(expr) \
	for (int x = 0; x < W; x++) \
	{ \
		const tg_window w = tg_window_at(mid + x, stride); \
		\
		v[x] = (expr); \
	}

/* v[x] = tg_terrain_light(method) for every cell x of the row */
#define EACH_LIGHT(method) \
	for (int x = 0; x < W; x++) \
		v[x] = tg_terrain_light(c, (method), dzx[x], dzy[x])

/* v[x] = tg_terrain_curvature(type) for every cell x of the row, the case of that type */
#define CURVATURE_CASE(type) \
	case type: \
		EACH_WINDOW(tg_terrain_curvature(c, type, &w)); \
		break

/*
 * Product k of every cell of the row at mid into t->value (whatever it is
 * where the centre is nodata).  Each option that picks a formula is a
 * constant in its loop, so that the loop has no branch.
 */
static void
product_row(const tg_terrain_consts *c, int k, const double *restrict mid, ptrdiff_t stride, int W,
			terrain_rows *t)
{
	const double *restrict dzx = t->dzx,
			   *restrict dzy = t->dzy;
	double	   *restrict v = t->value;

	switch (c->products[k])
	{
		case TG_TERRAIN_SLOPE:
			for (int x = 0; x < W; x++)
				v[x] = tg_terrain_slope_tan(c, dzx[x], dzy[x]);
			if (c->slope_units == TG_SLOPE_PERCENT)
				for (int x = 0; x < W; x++)
					v[x] = tg_slope_in_units(v[x], TG_SLOPE_PERCENT);
			else
				for (int x = 0; x < W; x++)
					v[x] = tg_slope_in_units(v[x], c->slope_units);
			break;
		case TG_TERRAIN_ASPECT:
			for (int x = 0; x < W; x++)
				v[x] = tg_terrain_aspect(c, dzx[x], dzy[x]);
			break;
		case TG_TERRAIN_HILLSHADE:
			if (c->hillshade == TG_HILLSHADE_MULTIDIRECTIONAL)
				EACH_LIGHT(TG_HILLSHADE_MULTIDIRECTIONAL);
			else if (c->hillshade == TG_HILLSHADE_COMBINED)
				EACH_LIGHT(TG_HILLSHADE_COMBINED);
			else
				EACH_LIGHT(TG_HILLSHADE_STANDARD);
			if (c->types[k] == TG_PT_8BUI)
				for (int x = 0; x < W; x++)
					v[x] = tg_terrain_shade(c, v[x], true);
			else
				for (int x = 0; x < W; x++)
					v[x] = tg_terrain_shade(c, v[x], false);
			break;
		case TG_TERRAIN_TPI:
			EACH_WINDOW(tg_terrain_tpi(&w));
			break;
		case TG_TERRAIN_TRI:
			if (c->tri == TG_TRI_RILEY)
				EACH_WINDOW(tg_terrain_tri(TG_TRI_RILEY, &w))
			else
				EACH_WINDOW(tg_terrain_tri(TG_TRI_WILSON, &w))
			break;
		case TG_TERRAIN_ROUGHNESS:
			EACH_WINDOW(tg_terrain_roughness(&w));
			break;
		case TG_TERRAIN_CURVATURE:
			switch (c->curvature)
			{
					CURVATURE_CASE(TG_CURVATURE_PROFILE);
					CURVATURE_CASE(TG_CURVATURE_PLAN);
					CURVATURE_CASE(TG_CURVATURE_TANGENTIAL);
					CURVATURE_CASE(TG_CURVATURE_MEAN);
					CURVATURE_CASE(TG_CURVATURE_GAUSSIAN);
					CURVATURE_CASE(TG_CURVATURE_MINIMAL);
					CURVATURE_CASE(TG_CURVATURE_MAXIMAL);
					CURVATURE_CASE(TG_CURVATURE_TOTAL);
			}
			break;
		case TG_TERRAIN_GEOMORPHONS:
			geomorphon_row(c, mid, stride, W, t);
			break;
	}
}

/* The row's values into its plane (type t), nodata where the centre is. */
static void
store_row(const double *restrict v, const double *restrict mid, int W, tg_pixtype t, double nodata,
		  void *plane)
{
	switch (t)
	{
		case TG_PT_64BF:
			for (int x = 0; x < W; x++)
			{
				const double value = v[x];

				((double *) plane)[x] = isnan(mid[x]) ? nodata : value;
			}
			break;
		case TG_PT_8BUI:
			for (int x = 0; x < W; x++)
			{
				const double value = v[x];

				((uint8_t *) plane)[x] = (uint8_t) (isnan(mid[x]) ? nodata : value);
			}
			break;
		default:
			for (int x = 0; x < W; x++)
			{
				const double value = v[x];

				((float *) plane)[x] = (float) (isnan(mid[x]) ? nodata : value);
			}
			break;
	}
}

static tg_status
terrain_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const terrain_job *j = arg;
	const tg_terrain_consts *c = &j->consts;
	const int	W = j->dem->width,
				H = j->dem->height,
				R = j->halo,
				y0 = (int) task * j->rows_per_task,
				y1 = y0 + j->rows_per_task < H ? y0 + j->rows_per_task : H;
	const size_t stride = (size_t) W + 2 * (size_t) R,
				block = stride * ((size_t) (y1 - y0) + 2 * (size_t) R),
				sight = SIGHT_CELLS * (4 * sizeof(double) + 2 * sizeof(int)),
				bytes = (block + 3 * (size_t) W) * sizeof(double) + sight;
	terrain_rows t;

	t.block = tg_alloc(ctx, bytes);
	if (t.block == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes of rows for the terrain derivatives",
							bytes);
	t.stride = stride;
	t.dzx = t.block + block;
	t.dzy = t.dzx + W;
	t.value = t.dzy + W;
	t.rise = t.value + W;
	t.rise_n = t.rise + SIGHT_CELLS;
	t.drop = t.rise_n + SIGHT_CELLS;
	t.drop_n = t.drop + SIGHT_CELLS;
	t.lower = (int *) (t.drop_n + SIGHT_CELLS);
	t.higher = t.lower + SIGHT_CELLS;

	decode_rows(j, y0, y1, &t);
	for (int y = y0; y < y1; y++)
	{
		const double *mid = t.block + (size_t) (y - y0 + R) * stride + R;

		if (j->horn)
			horn_row(mid, (ptrdiff_t) stride, W, t.dzx, t.dzy);
		for (int k = 0; k < c->nproducts; k++)
		{
			const size_t size = (size_t) tg_pixtype_size(c->types[k]);

			product_row(c, k, mid, (ptrdiff_t) stride, W, &t);
			store_row(t.value, mid, W, c->types[k], c->nodata[k], (uint8_t *) j->out[k] + (size_t) y * W * size);
		}
	}
	tg_free(ctx, t.block);
	return TG_OK;
}

tg_status
tg_cpu_terrain(const tg_ctx *ctx, const tg_band *dem, const tg_terrain_params *params,
			   void *const *out, tg_error *err)
{
	terrain_job j;
	int64_t		tasks;

	if (dem->width == 0 || dem->height == 0)
		return TG_OK;
	j.dem = dem;
	tg_terrain_prepare(params, &j.consts);
	j.horn = tg_terrain_reads_horn(&j.consts);
	j.halo = tg_terrain_halo(params);
	/* about TG_TASK_CELLS cells a task, and no fewer rows than the halo adds */
	j.rows_per_task = dem->width < TG_TASK_CELLS ? TG_TASK_CELLS / dem->width : 1;
	if (j.rows_per_task < 2 * j.halo)
		j.rows_per_task = 2 * j.halo;
	j.out = out;
	tasks = (dem->height + j.rows_per_task - 1) / j.rows_per_task;
	return tg_parallel(ctx, tasks, terrain_task, &j, err);
}

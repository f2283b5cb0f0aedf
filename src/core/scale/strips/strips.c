/*
 * strips.c — operations on grids larger than the memory budget, in strips
 * of whole tile rows (a strip boundary never cuts a tile), on the CPU but
 * for each strip's D8 routing and accumulation, which runs where the call's
 * policy sends it (the GPU where one is ready: route_strips.c).
 *
 *   slope and    each strip read with the rows of halo above and below its
 *   terrain      window reads: one for the 3 x 3 window, the search radius
 *                for the geomorphons.
 *   fill         priority-flood without epsilon after Barnes (2016)
 *                (scale/seams/): every strip is read twice, once to scan
 *                it and once to finish it, with a row of halo.
 *   directions   the routing surface (filled as above, or read as it is) is
 *   and          written to the spill, from which later passes read strips
 *   accumulation with two rows of halo: flats that cross strip boundaries
 *                are collected and drained over their own cells
 *                (route_strips.c), then each strip gets its directions, or
 *                is accumulated: D8 after Barnes (2017), alone, the water
 *                leaving it carried along the flow paths of the next, then
 *                again with its inflows; multiple flow alone, its shares and
 *                accumulation spilled, then the water leaving it carried on
 *                in windows of strips read back from the spill.
 *   tg_hydrology as the accumulation, each strip written with its routing
 *                surface and receivers.
 * Results equal the in-memory runs (the fill and D8 counts bit for bit,
 * weighted and multiple-flow sums to rounding).
 */
#include "scale/strips/strips.h"
#include "terrain/terrain.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Per cell of a strip: the surface read back, and the scan's flat flags, labels and queue. */
#define FLAT_SCAN_BYTES_PER_CELL 17

typedef struct strips
{
	const tg_job *job;
	int			width;
	int			height;
	int			n;				/* strips */
	int		   *row0;
	int		   *nrows;
	int			max_rows;		/* the most rows a strip could have had */
	bool		device_sized;	/* max_rows is what the GPU's step takes, less than the budget's */
	bool		gpu_steps;		/* the GPU takes the strips' steps (D8 routing and accumulation) */
	tg_grid_band dem;			/* the DEM's type (typed by the first tile read) */
	int			col0;			/* a local operation's columns written (a refresh's window), */
	int			ncols;			/* 0 for every column */
	bool		spill_single;	/* the spill holds floats: every value is exact in one */
	size_t		strip_cells;	/* the tallest strip's, its halo rows included */
	size_t		strip_bytes;	/* what it holds where the CPU takes its steps (the plan's bytes a cell) */
	size_t		device_strip_bytes; /* what it holds on the host where the GPU takes them */
	void	   *surface;		/* the spilled surface, in memory where it fits beside a strip, else NULL */
	bool		device_terms;	/* it fits beside the tallest strip only while the GPU takes the steps */
	const char *surface_moved;	/* why it went to the spill after all (it came back where kept), or NULL */
	bool		flats_parked;	/* the solved crossing flats waited in the spill */
} strips;

static void
strips_free(const tg_ctx *ctx, strips *s)
{
	tg_free(ctx, s->row0);
	tg_free(ctx, s->nrows);
	tg_free(ctx, s->surface);
}

/*
 * Strips of whole tile rows, each holding bytes_per_cell per cell with two
 * rows of halo within the budget, and at most device_rows rows: a boundary
 * may fall at row r only where no tile covers both r - 1 and r.
 */
static tg_status
plan_strips(const tg_ctx *ctx, const tg_job *job, size_t bytes_per_cell, int device_rows, strips *s,
			tg_error *err)
{
	const tg_layout *l = job->layout;
	const size_t by_budget = job->memory_budget / ((size_t) l->width * bytes_per_cell),
				by_cells = TG_MAX_GRID_CELLS / l->width,
				fit = by_budget < by_cells ? by_budget : by_cells;
	const int	by_host = (int) (fit > 2 ? (fit - 2 < INT32_MAX ? fit - 2 : INT32_MAX) : 0),
				most = device_rows < by_host ? device_rows : by_host;
	uint8_t    *cut;
	int			r0 = 0;

	memset(s, 0, sizeof *s);
	s->job = job;
	s->width = l->width;
	s->height = l->height;
	s->max_rows = most;
	s->device_sized = most < by_host;
	if (most < 1)
		return tg_error_set(err, TG_ELIMIT, "%s over %s: not even 3 rows of %d cells fit in %zu MB",
							job->function, l->name, l->width, job->memory_budget >> 20);
	cut = tg_alloc(ctx, (size_t) l->height + 1);
	s->row0 = tg_alloc(ctx, ((size_t) l->height + 1) * sizeof(int));
	s->nrows = tg_alloc(ctx, ((size_t) l->height + 1) * sizeof(int));
	if (cut == NULL || s->row0 == NULL || s->nrows == NULL)
	{
		tg_free(ctx, cut);
		return tg_error_set(err, TG_ENOMEM, "could not allocate the strips of %d rows", l->height);
	}
	memset(cut, 1, (size_t) l->height + 1);
	for (int i = 0; i < l->ntiles; i++)
		for (int64_t r = l->tiles[i].row0 + 1; r < l->tiles[i].row0 + l->tiles[i].height; r++)
			cut[r] = 0;
	while (r0 < l->height)
	{
		int			best = -1;
		size_t		cells;

		for (int r = r0 + 1; r <= l->height && r - r0 <= most; r++)
			if (cut[r])
				best = r;
		if (best < 0)
		{
			int			next = r0 + 1;
			size_t		need_mb;

			while (next < l->height && !cut[next])
				next++;
			need_mb = (((size_t) (next - r0 + 2) * l->width * bytes_per_cell) >> 20) + 1;
			tg_free(ctx, cut);
			tg_error_set(err, TG_ELIMIT, "%s: a strip of %s must hold whole rows of tiles, and rows %d to %d of %d cells need %zu MB",
						 job->function, l->name, r0, next - 1, l->width, need_mb);
			tg_error_hint(err, "Raise %s to at least %zu.", job->budget_name, need_mb);
			return TG_ELIMIT;
		}
		/* the strip's rows and one of halo on each side */
		cells = ((size_t) (best - r0) + 2) * l->width;
		s->row0[s->n] = r0;
		s->nrows[s->n++] = best - r0;
		r0 = best;
		if (cells > s->strip_cells)
			s->strip_cells = cells;
	}
	tg_free(ctx, cut);
	s->strip_bytes = s->strip_cells * bytes_per_cell;
	return TG_OK;
}

/*
 * Rows [row0 - halo, row0 + nrows + halo) of the DEM, clipped, as doubles
 * (NaN = nodata): every column, or (ncols > 0) columns [col0, col0 + ncols).
 */
static tg_status
read_window(const tg_ctx *ctx, strips *s, const tg_input *in, tg_grid_band *g, int row0, int nrows,
			int halo, int col0, int ncols, double **rows, int *first, int *count, tg_error *err)
{
	tg_status	st;

	*first = row0 - halo > 0 ? row0 - halo : 0;
	*count = (row0 + nrows + halo < s->height ? row0 + nrows + halo : s->height) - *first;
	*rows = tg_alloc(ctx, sizeof(double) * (size_t) (ncols > 0 ? ncols : s->width) * *count + 1);
	if (*rows == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a strip of %d rows", *count);
	g->as_rows = true;
	g->rows = *rows;
	g->row0 = *first;
	g->nrows = *count;
	g->col0 = col0;
	g->ncols = ncols;
	st = tg_read_input(ctx, s->job->layout, in, g, *first, *count, err);
	if (st != TG_OK)
	{
		tg_free(ctx, *rows);
		*rows = NULL;
	}
	return st;
}

/* The same over every column. */
static tg_status
read_rows(const tg_ctx *ctx, strips *s, const tg_input *in, tg_grid_band *g, int row0, int nrows,
		  int halo, double **rows, int *first, int *count, tg_error *err)
{
	return read_window(ctx, s, in, g, row0, nrows, halo, 0, 0, rows, first, count, err);
}

/* Write the tiles of strip k from nouts outputs, each a plane over its rows. */
static tg_status
write_strip(const tg_ctx *ctx, strips *s, const tg_output *outs, int nouts, int k, tg_error *err)
{
	return tg_write_tiles(ctx, s->job, outs, nouts, s->row0[k], s->nrows[k], err);
}

/* The steps of each strip an operation runs on the device where the call's policy sends them (the note's words). */
static const char *
device_steps(const tg_op *op)
{
	const tg_op_seams seams = tg_op_seams_of(op->kind);

	if (seams == TG_SEAMS_WINDOW)
		return op->kind == TG_OP_SLOPE ? "slope" : "terrain derivatives";
	if (seams == TG_SEAMS_FILL)
		return "fill";
	if (seams != TG_SEAMS_ROUTE && op->flow.routing == TG_ROUTE_D8)
		return op->flow.fill ? "fill, crossing flats, D8 routing and accumulation"
			: "crossing flats, D8 routing and accumulation";
	return op->flow.fill ? "fill and crossing flats" : "crossing flats";
}

static void
strip_stats(const tg_ctx *ctx, const strips *s, const tg_op *op, const char *method)
{
	bool		device;
	char		fallbacks[80] = "";

	if (ctx->stats == NULL)
		return;
	/* the strips' steps on the device time what they ran there */
	device = ctx->stats->kernel_ms > 0 || ctx->stats->transfer_ms > 0;
	ctx->stats->backend = device ? TG_BACKEND_GPU : TG_BACKEND_CPU;
	ctx->stats->chunks = s->n;
	snprintf(ctx->stats->method, sizeof ctx->stats->method, "%s", method);
	if (device && ctx->stats->gpu_fallbacks > 0)
		snprintf(fallbacks, sizeof fallbacks, " but %d step%s the device could not hold, on the CPU",
				 ctx->stats->gpu_fallbacks, ctx->stats->gpu_fallbacks == 1 ? "" : "s");
	snprintf(ctx->stats->note, sizeof ctx->stats->note, "%d strips of at most %d rows within %s%s%s%s%s%s%s%s",
			 s->n, s->max_rows, s->device_sized ? "the GPU's memory" : s->job->budget_name,
			 device ? "; each strip's " : "", device ? device_steps(op) : "", device ? " on the GPU" : "", fallbacks,
			 s->surface ? "; the surface between passes kept in memory"
			 : s->surface_moved ? "; the surface between passes moved to the temporary file " : "",
			 s->surface && s->surface_moved ? ", in the temporary file while the crossing flats were solved"
			 : s->surface ? "" : s->surface_moved ? s->surface_moved : "",
			 s->flats_parked ? "; the crossing flats between strips in the temporary file" : "");
}

/* A phase run strip by strip begins: the phases each strip runs are told as part of it. */
static void
strips_phase(const tg_ctx *ctx, const char *phase, int total)
{
	tg_phase(ctx, phase);
	tg_phase_within(ctx, phase, 0, total);
}

/* done strips of the phase's total are through: the next one's phases are told as part of it. */
static void
progress(const tg_ctx *ctx, const char *phase, int done, int total)
{
	tg_phase_within(ctx, done < total ? phase : NULL, done, total);
	if (ctx->progress)
		ctx->progress(ctx->progress_arg, phase, (double) done / total);
}

/* ------------------------------------------------------------------------
 * Slope and the other local derivatives: each strip with the rows of halo
 * its window reads
 * ------------------------------------------------------------------------ */
static tg_status
local_in_strips(const tg_ctx *ctx, const tg_op *op, strips *s, const char *phase, tg_error *err)
{
	const int	halo = op->kind == TG_OP_TERRAIN ? tg_terrain_halo(&op->terrain) : 1;
	/* the columns computed: those written and their halo, within the grid */
	const int	c0 = s->ncols > 0 && s->col0 - halo > 0 ? s->col0 - halo : 0,
				c1 = s->ncols > 0 && s->col0 + s->ncols + halo < s->width ? s->col0 + s->ncols + halo : s->width,
				cw = c1 - c0;
	tg_status	st = TG_OK;

	strips_phase(ctx, phase, s->n);
	for (int k = 0; k < s->n && st == TG_OK; k++)
	{
		tg_grid_band rows;
		tg_op_result r;
		double	   *z;
		int			first,
					count;

		/* the computed columns only (all of them where they are the grid's) */
		st = read_window(ctx, s, &s->job->inputs[0], &s->dem, s->row0[k], s->nrows[k], halo, c0,
						 cw < s->width ? cw : 0, &z, &first, &count, err);
		if (st != TG_OK)
			break;
		/* the rows as a 64BF band (nodata NaN) with the DEM's nodata, which plans the outputs alike */
		memset(&rows, 0, sizeof rows);
		rows.band = s->dem.band;
		rows.band.pixtype = TG_PT_64BF;
		rows.band.width = cw;
		rows.band.height = count;
		rows.band.data = z;
		st = tg_op_compute(ctx, op, s->job->layout, &rows, NULL, &r, err);
		for (int o = 0; st == TG_OK && o < r.nout; o++)
			for (int b = 0; b < r.outs[o].nbands; b++)
				r.outs[o].planes[b].data = (const uint8_t *) r.outs[o].planes[b].data +
					(size_t) (s->row0[k] - first) * cw * tg_pixtype_size(r.outs[o].planes[b].type);
		if (st == TG_OK)
			st = tg_write_window(ctx, s->job, r.outs, r.nout, s->row0[k], s->nrows[k], c0, cw, err);
		tg_op_free(ctx, &r);
		tg_free(ctx, z);
		progress(ctx, phase, k + 1, s->n);
	}
	return st;
}

tg_status
tg_run_local_window(const tg_ctx *ctx, const tg_op *op, const tg_job *job, const tg_grid_window *w, tg_error *err)
{
	strips		s;
	int			row0 = w->row0,
				nrows = w->nrows;
	tg_status	st;

	memset(&s, 0, sizeof s);
	s.job = job;
	s.width = job->layout->width;
	s.height = job->layout->height;
	s.n = 1;
	s.max_rows = nrows;
	s.row0 = &row0;				/* one strip: nothing to allocate or free */
	s.nrows = &nrows;
	s.col0 = w->col0;
	s.ncols = w->ncols;
	st = local_in_strips(ctx, op, &s, "tiles asked for", err);
	if (ctx->stats)
		snprintf(ctx->stats->note, sizeof ctx->stats->note,
				 "rows %d to %d, columns %d to %d of %d x %d: those of the tiles asked for",
				 w->row0, w->row0 + w->nrows - 1, w->col0, w->col0 + w->ncols - 1, s.width, s.height);
	return st;
}

/* ------------------------------------------------------------------------
 * The routing surface between passes: in memory where it fits, else spilled
 * ------------------------------------------------------------------------ */
static size_t
spill_bytes(const strips *s)
{
	return s->spill_single ? sizeof(float) : sizeof(double);
}

/* A strip's doubles go to the spill's floats a chunk at a time. */
#define SPILL_CHUNK_CELLS ((size_t) 1 << 22)

/* The whole routing surface, in memory or in the spill. */
static size_t
surface_bytes(const strips *s)
{
	return (size_t) s->width * s->height * spill_bytes(s);
}

/*
 * Where things lie in the spill, in this order: the routing surface where it
 * is not in memory (from 0, as in memory), multiple flow's shares spread
 * between strips (for accumulation, not directions), the crossing flats
 * where they are parked.
 */
typedef enum spill_part
{
	SPILL_SURFACE,
	SPILL_SPREAD,
	SPILL_FLATS
} spill_part;

static size_t
spill_at(const strips *s, const tg_op *op, const tg_route_strips *rb, spill_part part)
{
	const bool	spreads = op->kind != TG_OP_DIRECTIONS && op->flow.routing != TG_ROUTE_D8;
	size_t		at = 0;

	if (part > SPILL_SURFACE)
		at += surface_bytes(s);
	if (part > SPILL_SPREAD && spreads)
		at += tg_route_strips_spill_bytes(rb);
	return at;
}

/* A strip holding `strip` bytes, a and b bytes more fit in the budget together. */
static bool
fits_in_budget(const strips *s, size_t strip, size_t a, size_t b)
{
	const size_t budget = s->job->memory_budget;

	return strip <= budget && a <= budget - strip && b <= budget - strip - a;
}

/* What the tallest strip holds on the host as the steps run now. */
static size_t
strip_held(const strips *s)
{
	return s->device_terms ? s->device_strip_bytes : s->strip_bytes;
}

/*
 * The spilled surface kept in memory instead of the spill where it fits in
 * the budget beside the tallest strip and `beside` bytes more (strips sized
 * to the device, or rounded down to whole rows of tiles, leave room): the
 * passes after the fill read it on the threads, not through the file.
 */
static bool
surface_fits(const strips *s, size_t beside)
{
	return fits_in_budget(s, strip_held(s), beside, surface_bytes(s));
}

/*
 * Where the GPU takes the steps the host holds a fraction of what the CPU's
 * steps hold: the surface may then fit beside a strip on those terms alone,
 * which hold while every step runs on the device (step_ctx).
 */
static void
keep_surface(const tg_ctx *ctx, strips *s, size_t beside)
{
	if (s->surface != NULL)
		return;
	s->device_terms = false;
	if (!surface_fits(s, beside))
		s->device_terms = s->gpu_steps && fits_in_budget(s, s->device_strip_bytes, beside, surface_bytes(s));
	if (surface_fits(s, beside))
		s->surface = tg_alloc(ctx, surface_bytes(s));
	if (s->surface == NULL)
		s->device_terms = false;
}

/* The surface kept in memory goes to the spill (laid out there as in memory), for `why`. */
static tg_status
surface_to_spill(const tg_ctx *ctx, strips *s, const char *why, tg_error *err)
{
	const tg_spill *sp = &s->job->spill;
	tg_status	st = sp->write(sp->arg, 0, s->surface, surface_bytes(s), err);

	tg_free(ctx, s->surface);
	s->surface = NULL;
	s->device_terms = false;
	s->surface_moved = why;
	return st;
}

static const char moved_for_flats[] = "for the crossing flats";

/*
 * The flats that cross strips (flat_bytes: what they hold as the strips are
 * scanned, then while they are solved) grow: where they no longer fit beside
 * the surface and a strip, the surface goes to the spill.
 */
static tg_status
surface_room(const tg_ctx *ctx, strips *s, size_t flat_bytes, tg_error *err)
{
	if (s->surface == NULL || surface_fits(s, flat_bytes))
		return TG_OK;
	return surface_to_spill(ctx, s, moved_for_flats, err);
}

/*
 * Once the crossing flats are solved the surface moved out for them comes
 * back where it fits beside what they keep (flat_bytes): the passes after
 * read it in memory, not each through the file.
 */
static tg_status
surface_back(const tg_ctx *ctx, strips *s, size_t flat_bytes, tg_error *err)
{
	const tg_spill *sp = &s->job->spill;

	if (s->surface_moved != moved_for_flats)
		return TG_OK;
	keep_surface(ctx, s, flat_bytes);
	if (s->surface == NULL)
		return TG_OK;
	return sp->read(sp->arg, 0, s->surface, surface_bytes(s), err);
}

/*
 * The solved crossing flats (kept bytes) fit beside the tallest strip and the
 * surface where that is in memory; else they wait in the spill between strips.
 */
static bool
flats_fit(const strips *s, size_t kept)
{
	return fits_in_budget(s, strip_held(s), s->surface ? surface_bytes(s) : 0, kept);
}

/*
 * Strip k of the spilled surface with two rows of halo, as route_strips.c
 * takes it, in the spill's type (floats where they hold it exactly): where
 * the surface is kept in memory a view of it, else read into *owned (to be
 * freed).
 */
static tg_status
surface_strip(const tg_ctx *ctx, strips *s, int k, tg_band *z, void **owned, tg_error *err)
{
	const tg_spill *sp = &s->job->spill;
	const int	first = s->row0[k] - 2 > 0 ? s->row0[k] - 2 : 0;
	const int	end = s->row0[k] + s->nrows[k] + 2 < s->height ? s->row0[k] + s->nrows[k] + 2 : s->height;
	const size_t size = spill_bytes(s),
				at = (size_t) s->width * first * size,
				bytes = (size_t) s->width * (end - first) * size;
	tg_status	st;

	*owned = NULL;
	*z = (tg_band) {s->spill_single ? TG_PT_32BF : TG_PT_64BF, false, false, false, 0, s->width, end - first, NULL};
	if (s->surface)
	{
		z->data = (const uint8_t *) s->surface + at;
		return TG_OK;
	}
	*owned = tg_alloc(ctx, bytes + 1);
	if (*owned == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a strip of the surface");
	st = sp->read(sp->arg, at, *owned, bytes, err);
	if (st != TG_OK)
	{
		tg_free(ctx, *owned);
		*owned = NULL;
	}
	z->data = *owned;
	return st;
}

/*
 * The context a strip's step runs in: while the surface is kept on the
 * device's terms the step may not move to the CPU within them (the CPU's
 * step would not fit beside the surface), so it runs on the device alone.
 */
static const tg_ctx *
step_ctx(const tg_ctx *ctx, const strips *s, tg_ctx *device_only)
{
	if (!s->device_terms)
		return ctx;
	*device_only = *ctx;
	device_only->backend = TG_BACKEND_GPU;
	return device_only;
}

/*
 * After a step of strip k run in step_ctx: where the device could not hold
 * it and the call's policy lets the CPU take it, the surface goes to the
 * spill to make the room (a step that read it, z: its view of the strip
 * read back into *owned), and the step is to run again (true) as the policy
 * chooses.
 */
static bool
step_again(const tg_ctx *ctx, strips *s, int k, tg_band *z, void **owned, tg_status *st, tg_error *err)
{
	if (*st != TG_ENOMEM || !err->on_device || !s->device_terms || ctx->backend != TG_BACKEND_AUTO)
		return false;
	tg_error_clear(err);
	*st = surface_to_spill(ctx, s, "for a step the device could not hold", err);
	if (*st == TG_OK && z)
		*st = surface_strip(ctx, s, k, z, owned, err);
	return *st == TG_OK;
}

/* ------------------------------------------------------------------------
 * The filled surface, strip by strip
 * ------------------------------------------------------------------------ */

/* What receives each strip's rows (width * nrows doubles, NaN = nodata). */
typedef tg_status (*strip_rows_fn) (const tg_ctx *ctx, strips *s, int k, double *rows, void *arg,
									tg_error *err);

/*
 * The DEM's rows strip by strip, in order, to `done`: filled (every strip
 * read twice, once to scan it and once to finish it) or, without fill, as
 * read.
 */
static tg_status
surface_strips(const tg_ctx *ctx, strips *s, bool fill, strip_rows_fn done, void *arg, tg_error *err)
{
	const int	W = s->width;
	tg_fill_strips *fb = NULL;
	tg_status	st = TG_OK;

	if (fill)
		st = tg_fill_strips_begin(ctx, W, s->height, &fb, err);
	for (int pass = fill ? 0 : 1; pass < 2 && st == TG_OK; pass++)
	{
		const char *phase = pass == 0 ? "fill scan in strips" : fill ? "fill in strips" : "read in strips";

		strips_phase(ctx, phase, s->n);
		for (int k = 0; k < s->n && st == TG_OK; k++)
		{
			double	   *z,
					   *w = NULL;
			int			first,
						count;
			tg_ctx		device_only;

			st = read_rows(ctx, s, &s->job->inputs[0], &s->dem, s->row0[k], s->nrows[k], 1, &z, &first,
						   &count, err);
			if (st != TG_OK)
				break;
			if (pass == 0)
				st = tg_fill_strips_scan(ctx, fb, s->row0[k], s->nrows[k], z, err);
			else if (fill)
			{
				w = tg_alloc(ctx, sizeof(double) * (size_t) W * s->nrows[k] + 1);
				st = w ? tg_fill_strips_finish(step_ctx(ctx, s, &device_only), fb, s->row0[k], s->nrows[k], z, w,
											   err)
					: tg_error_set(err, TG_ENOMEM, "could not allocate a filled strip");
				/* raising the strip's edges again raises nothing more */
				if (step_again(ctx, s, k, NULL, NULL, &st, err))
					st = tg_fill_strips_finish(ctx, fb, s->row0[k], s->nrows[k], z, w, err);
				if (st == TG_OK)
					st = done(ctx, s, k, w, arg, err);
			}
			else
				st = done(ctx, s, k, z + (size_t) (s->row0[k] - first) * W, arg, err);
			tg_free(ctx, w);
			tg_free(ctx, z);
			progress(ctx, phase, k + 1, s->n);
		}
		if (pass == 0 && st == TG_OK)
			st = tg_fill_strips_solve(ctx, fb, err);
	}
	tg_fill_strips_end(ctx, fb);
	return st;
}

/* tg_fill in strips: each strip's tiles are written as soon as it is filled. */
static tg_status
write_filled(const tg_ctx *ctx, strips *s, int k, double *rows, void *arg, tg_error *err)
{
	const tg_op *op = arg;
	tg_output	out;
	tg_status	st;

	/* the scan read every strip: the first tile read gave the output's type */
	st = tg_op_plan(op, &s->dem.band, &out, err);
	out.planes[0].data = rows;
	out.planes[0].type = TG_PT_64BF;
	out.planes[0].has_marker = false;
	return st != TG_OK ? st : write_strip(ctx, s, &out, 1, k, err);
}

static tg_status
fill_in_strips(const tg_ctx *ctx, const tg_op *op, strips *s, tg_error *err)
{
	tg_status	st;

	tg_job_notice(s->job, "%s spans %d x %d cells, more than %s holds: filling it in %d strips of rows",
				  s->job->layout->name, s->width, s->height, s->job->budget_name, s->n);
	st = surface_strips(ctx, s, true, write_filled, (void *) op, err);
	strip_stats(ctx, s, op, "priority-flood in strips");
	return st;
}

/* ------------------------------------------------------------------------
 * Directions and D8 accumulation: the surface spilled once, read in strips
 * ------------------------------------------------------------------------ */
/* n cells of the surface from cell `first` of the grid on, into memory where it is kept, else the spill. */
static tg_status
spill_cells(const tg_ctx *ctx, const strips *s, size_t first, const double *cells, size_t n, tg_error *err)
{
	const tg_spill *sp = &s->job->spill;
	float	   *chunk;
	tg_status	st = TG_OK;

	if (s->surface && !s->spill_single)
	{
		tg_parallel_memcpy(ctx, (double *) s->surface + first, cells, n * sizeof(double));
		return TG_OK;
	}
	if (s->surface)
	{
		tg_parallel_narrow(ctx, (float *) s->surface + first, cells, n);
		return TG_OK;
	}
	if (!s->spill_single)
		return sp->write(sp->arg, first * sizeof(double), cells, n * sizeof(double), err);
	chunk = tg_alloc(ctx, sizeof(float) * (n < SPILL_CHUNK_CELLS ? n : SPILL_CHUNK_CELLS) + 1);
	if (chunk == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a spill buffer");
	for (size_t i = 0; i < n && st == TG_OK; i += SPILL_CHUNK_CELLS)
	{
		const size_t m = n - i < SPILL_CHUNK_CELLS ? n - i : SPILL_CHUNK_CELLS;

		tg_parallel_narrow(ctx, chunk, cells + i, m);
		st = sp->write(sp->arg, (first + i) * sizeof(float), chunk, m * sizeof(float), err);
	}
	tg_free(ctx, chunk);
	return st;
}

static tg_status
spill_rows(const tg_ctx *ctx, strips *s, int k, double *rows, void *arg, tg_error *err)
{
	if (k == 0)					/* the first tile read gave the pixel type */
	{
		s->spill_single = tg_pixtype_exact_in_f32(s->dem.band.pixtype);
		keep_surface(ctx, s, 0);
	}
	return spill_cells(ctx, s, (size_t) s->width * s->row0[k], rows, (size_t) s->width * s->nrows[k], err);
}

/*
 * The surface into the spill, then every strip scanned for flats that
 * cross strip boundaries, and those solved.
 */
static tg_status
route_strips(const tg_ctx *ctx, const tg_op *op, strips *s, tg_accum_units units,
			 tg_route_strips **rb, tg_error *err)
{
	const tg_job *job = s->job;
	tg_status	st;
	size_t		need;

	*rb = NULL;
	tg_job_notice(job, "%s spans %d x %d cells, more than %s holds: routing it in %d strips of rows",
				  job->layout->name, s->width, s->height, job->budget_name, s->n);
	st = surface_strips(ctx, s, op->flow.fill, spill_rows, NULL, err);
	if (st == TG_OK)
		st = tg_route_strips_begin(ctx, &op->flow, units, rb, err);
	strips_phase(ctx, "flats in strips", s->n);
	for (int k = 0; k < s->n && st == TG_OK; k++)
	{
		tg_band		z;
		void	   *owned = NULL;
		tg_ctx		device_only;

		st = surface_room(ctx, s, tg_route_strips_flat_bytes(*rb, false), err);
		if (st == TG_OK)
			st = surface_strip(ctx, s, k, &z, &owned, err);
		if (st == TG_OK)
			st = tg_route_strips_scan(step_ctx(ctx, s, &device_only), *rb, s->row0[k], s->nrows[k], &z, err);
		if (step_again(ctx, s, k, &z, &owned, &st, err))
			st = tg_route_strips_scan(ctx, *rb, s->row0[k], s->nrows[k], &z, err);
		tg_free(ctx, owned);
		progress(ctx, "flats in strips", k + 1, s->n);
	}
	if (st != TG_OK)
		return st;
	need = tg_route_strips_flat_bytes(*rb, true);
	st = surface_room(ctx, s, need, err);
	if (st != TG_OK)
		return st;
	if (need > job->memory_budget)
	{
		tg_error_set(err, TG_ELIMIT, "%s over %s: %zu cells of flats cross strip boundaries, and resolving them "
					 "needs %zu MB, more than %s (%zu MB)", job->function, job->layout->name,
					 tg_route_strips_flat_cells(*rb), need >> 20, job->budget_name, job->memory_budget >> 20);
		tg_error_detail(err, "A flat that crosses strips is drained as a whole: a sea or lake held at one "
						"elevation across the grid is such a flat.");
		tg_error_hint(err, "Raise %s, or set the sea to nodata.", job->budget_name);
		return TG_ELIMIT;
	}
	st = tg_route_strips_solve_flats(ctx, *rb, err);
	if (st == TG_OK)
		tg_job_notice(job, "flats across strips resolved (%zu cells)", tg_route_strips_flat_cells(*rb));
	if (st == TG_OK && !flats_fit(s, tg_route_strips_flat_bytes(*rb, false)))
	{
		st = tg_route_strips_park_flats(ctx, *rb, &job->spill, spill_at(s, op, *rb, SPILL_FLATS), err);
		s->flats_parked = st == TG_OK;
	}
	return st == TG_OK ? surface_back(ctx, s, tg_route_strips_flat_bytes(*rb, false), err) : st;
}

static tg_status
directions_in_strips(const tg_ctx *ctx, const tg_op *op, strips *s, tg_error *err)
{
	const int	W = s->width;
	const bool	codes = op->flow.routing == TG_ROUTE_D8 && op->directions != TG_DIRECTIONS_SHARES;
	tg_route_strips *rb;
	tg_status	st = route_strips(ctx, op, s, TG_UNITS_CELLS, &rb, err);

	strips_phase(ctx, "directions in strips", s->n);
	for (int k = 0; k < s->n && st == TG_OK; k++)
	{
		const size_t n = (size_t) W * s->nrows[k];
		tg_band		z;
		void	   *owned = NULL;
		uint8_t    *d8 = NULL;
		float	   *frac = NULL;
		uint16_t   *mask = NULL;
		tg_output	out;

		st = surface_strip(ctx, s, k, &z, &owned, err);
		if (st == TG_OK)
		{
			d8 = codes ? tg_alloc(ctx, n + 1) : NULL;
			frac = codes ? NULL : tg_alloc(ctx, 8 * n * sizeof(float) + 1);
			mask = !codes && op->directions == TG_DIRECTIONS_MASK ? tg_alloc(ctx, n * sizeof(uint16_t) + 1) : NULL;
			if ((codes && !d8) || (!codes && !frac) || (op->directions == TG_DIRECTIONS_MASK && !codes && !mask))
				st = tg_error_set(err, TG_ENOMEM, "could not allocate a strip of directions");
		}
		if (st == TG_OK)
			st = tg_route_strips_directions(ctx, rb, s->row0[k], s->nrows[k], &z, d8, frac, err);
		if (st == TG_OK)
			st = tg_op_plan(op, &s->dem.band, &out, err);
		if (st == TG_OK)
		{
			if (codes)
			{
				out.planes[0].data = d8;
				out.planes[0].type = TG_PT_8BUI;
				out.planes[0].has_marker = true;
				out.planes[0].marker = 255;
			}
			else if (op->directions == TG_DIRECTIONS_ANGLE)
			{
				/* in place into the first plane: cell i reads its own shares first */
				for (int y = 0; y < s->nrows[k]; y++)
				{
					double		dx,
								dy,
								dist[8];

					tg_row_spacing(&op->flow.geom, s->row0[k] + y, &dx, &dy);
					tg_nbr_distances(dx, dy, dist);
					for (size_t i = (size_t) y * W; i < (size_t) (y + 1) * W; i++)
					{
						float		sh[8];

						for (int b = 0; b < 8; b++)
							sh[b] = frac[(size_t) b * n + i];
						frac[i] = isnan(sh[0]) ? -1.0f : (float) tg_dinf_angle(sh, dist);
					}
				}
				out.planes[0].data = frac;
				out.planes[0].type = TG_PT_32BF;
				out.planes[0].has_marker = false;
			}
			else if (mask)
			{
				for (size_t i = 0; i < n; i++)
				{
					uint16_t	m = 0;

					if (isnan(frac[i]))
						m = 65535;
					else
						for (int b = 0; b < 8; b++)
							if (frac[(size_t) b * n + i] > 0)
								m |= (uint16_t) (1u << b);
					mask[i] = m;
				}
				out.planes[0].data = mask;
				out.planes[0].type = TG_PT_16BUI;
				out.planes[0].has_marker = true;
				out.planes[0].marker = 65535;
			}
			else
				for (int b = 0; b < 8; b++)
				{
					out.planes[b].data = frac + (size_t) b * n;
					out.planes[b].type = TG_PT_32BF;
					out.planes[b].has_marker = false;
				}
			st = write_strip(ctx, s, &out, 1, k, err);
		}
		tg_free(ctx, owned);
		tg_free(ctx, d8);
		tg_free(ctx, frac);
		tg_free(ctx, mask);
		progress(ctx, "directions in strips", k + 1, s->n);
	}
	tg_route_strips_end(ctx, rb);
	strip_stats(ctx, s, op, "directions in strips");
	return st;
}

/* A strip's weights as a 64BF band over its own rows (nodata NaN). */
static tg_status
weight_strip(const tg_ctx *ctx, strips *s, const tg_op *op, int k, tg_grid_band *wg, double **rows,
			 tg_band *weight, tg_error *err)
{
	int			first,
				count;
	tg_status	st = read_rows(ctx, s, &s->job->inputs[op->weight_input], wg, s->row0[k], s->nrows[k], 0,
							   rows, &first, &count, err);

	memset(weight, 0, sizeof *weight);
	weight->pixtype = TG_PT_64BF;
	weight->width = s->width;
	weight->height = s->nrows[k];
	weight->data = *rows;
	return st;
}

/*
 * Accumulation and tg_hydrology: every strip routed and accumulated alone
 * (D8: linked; multiple flow: spread into the spill after the surface), the
 * flow between strips solved or settled, then every strip's result written
 * (tg_hydrology: its routing surface and receivers too).
 */
static tg_status
accumulation_in_strips(const tg_ctx *ctx, const tg_op *op, strips *s, tg_error *err)
{
	const int	W = s->width;
	const bool	d8 = op->flow.routing == TG_ROUTE_D8,
				hydrology = op->kind == TG_OP_HYDROLOGY;
	const tg_spill *spill = &s->job->spill;
	tg_route_strips *rb;
	tg_grid_band wg;
	tg_status	st = route_strips(ctx, op, s, op->units, &rb, err);
	const size_t base = st == TG_OK ? spill_at(s, op, rb, SPILL_SPREAD) : 0;

	memset(&wg, 0, sizeof wg);
	for (int pass = 0; pass < 2 && st == TG_OK; pass++)
	{
		const char *phase = pass == 1 ? "accumulation in strips" : d8 ? "linking strips" : "spreading strips";

		strips_phase(ctx, phase, s->n);
		for (int k = 0; k < s->n && st == TG_OK; k++)
		{
			double	   *wrows = NULL,
					   *acc = NULL;
			void	   *owned = NULL;
			uint16_t   *receivers = NULL;
			tg_band		z,
						weight;
			tg_output	out[3];
			tg_ctx		device_only;

			if (d8 || pass == 0 || hydrology)
				st = surface_strip(ctx, s, k, &z, &owned, err);
			if (st == TG_OK && op->weight_input > 0 && (d8 || pass == 0))
				st = weight_strip(ctx, s, op, k, &wg, &wrows, &weight, err);
			if (st == TG_OK && pass == 0 && d8)
			{
				st = tg_route_strips_link(step_ctx(ctx, s, &device_only), rb, s->row0[k], s->nrows[k], &z,
										  op->weight_input > 0 ? &weight : NULL, err);
				if (step_again(ctx, s, k, &z, &owned, &st, err))
					st = tg_route_strips_link(ctx, rb, s->row0[k], s->nrows[k], &z,
											  op->weight_input > 0 ? &weight : NULL, err);
			}
			else if (st == TG_OK && pass == 0)
				st = tg_route_strips_spread(ctx, rb, s->row0[k], s->nrows[k], &z,
											op->weight_input > 0 ? &weight : NULL, spill, base, err);
			else if (st == TG_OK)
			{
				const size_t n = (size_t) W * s->nrows[k];

				acc = tg_alloc(ctx, sizeof(double) * n + 1);
				receivers = hydrology ? tg_alloc(ctx, sizeof(uint16_t) * n + 1) : NULL;
				if (acc == NULL || (hydrology && receivers == NULL))
					st = tg_error_set(err, TG_ENOMEM, "could not allocate a strip of the accumulation");
				else if (d8)
				{
					st = tg_route_strips_accumulate(step_ctx(ctx, s, &device_only), rb, s->row0[k], s->nrows[k],
													&z, op->weight_input > 0 ? &weight : NULL, acc, receivers,
													err);
					if (step_again(ctx, s, k, &z, &owned, &st, err))
						st = tg_route_strips_accumulate(ctx, rb, s->row0[k], s->nrows[k], &z,
														op->weight_input > 0 ? &weight : NULL, acc, receivers,
														err);
				}
				else
					st = tg_route_strips_flow_result(ctx, rb, s->row0[k], s->nrows[k], spill, base, acc,
													 receivers, err);
				if (st == TG_OK)
					st = tg_op_plan(op, &s->dem.band, out, err);
				if (st == TG_OK && hydrology)
				{
					/* the surface's own rows, after its rows of halo above (two, none on the first strip) */
					const size_t above = (size_t) (s->row0[k] >= 2 ? 2 : s->row0[k]) * W;

					out[0].planes[0] = (tg_plane) {(const uint8_t *) z.data + above * tg_pixtype_size(z.pixtype),
						z.pixtype, false, 0};
					out[1].planes[0] = (tg_plane) {receivers, TG_PT_16BUI, true, TG_NODATA_RECEIVERS};
					out[2].planes[0] = (tg_plane) {acc, TG_PT_64BF, false, 0};
					st = write_strip(ctx, s, out, 3, k, err);
				}
				else if (st == TG_OK)
				{
					out[0].planes[0] = (tg_plane) {acc, TG_PT_64BF, false, 0};
					st = write_strip(ctx, s, out, 1, k, err);
				}
			}
			tg_free(ctx, owned);
			tg_free(ctx, wrows);
			tg_free(ctx, acc);
			tg_free(ctx, receivers);
			progress(ctx, phase, k + 1, s->n);
		}
		if (pass == 0 && st == TG_OK && d8)
			st = tg_route_strips_solve_flow(ctx, rb, err);
		else if (pass == 0 && st == TG_OK)
		{
			int			sweeps;
			int64_t		windows;

			st = tg_route_strips_settle(ctx, rb, spill, base, err);
			tg_route_strips_settled(rb, &sweeps, &windows);
			if (st == TG_OK)
				tg_job_notice(s->job, "water crossing strip boundaries carried on in %lld window%s (%d sweep%s)",
							  (long long) windows, windows == 1 ? "" : "s", sweeps, sweeps == 1 ? "" : "s");
		}
	}
	tg_route_strips_end(ctx, rb);
	strip_stats(ctx, s, op, d8 ? "d8 in strips" : "multiple flow in strips");
	return st;
}

/* ------------------------------------------------------------------------ */

/* Bytes per cell of a strip, every pass counted: the most any pass holds. */
static size_t
strip_bytes_per_cell(const tg_op *op)
{
	const size_t fill = tg_fill_strips_bytes_per_cell() + 2 * sizeof(double);
	size_t		most = 0;

	switch (tg_op_seams_of(op->kind))
	{
		case TG_SEAMS_WINDOW:
			return tg_op_bytes_per_cell(op, false);
		case TG_SEAMS_FILL:
			return fill;
		case TG_SEAMS_ROUTE:
			most = tg_route_strips_bytes_per_cell(op->flow.routing, false) + sizeof(double) +
				(op->flow.routing == TG_ROUTE_D8 ? 1 : 8 * sizeof(float) + sizeof(uint16_t));
			break;
		default:
			/* accumulation; tg_hydrology also holds the strip's receivers when it writes it */
			most = tg_route_strips_bytes_per_cell(op->flow.routing, true) +
				(op->weight_input > 0 ? 4 : 2) * sizeof(double) +
				(op->kind == TG_OP_HYDROLOGY ? sizeof(uint16_t) : 0);
			break;
	}
	most = most > FLAT_SCAN_BYTES_PER_CELL ? most : FLAT_SCAN_BYTES_PER_CELL;
	return op->flow.fill && fill > most ? fill : most;
}

/*
 * Bytes per cell of a strip on the host where the GPU takes its D8 steps,
 * the surface being a view of the one kept in memory: the DEM's rows read
 * and filled as doubles (16); then the crossing flats' cells (8 at most),
 * the accumulation (8), tg_hydrology's receivers (2) and a weight raster's
 * rows read and spread (16).
 */
static size_t
strip_bytes_on_device(const tg_op *op)
{
	const size_t fill = 2 * sizeof(double),
				route = sizeof(size_t) + sizeof(double) + (op->kind == TG_OP_HYDROLOGY ? sizeof(uint16_t) : 0) +
		(op->weight_input > 0 ? 2 * sizeof(double) : 0);

	return fill > route ? fill : route;
}

/*
 * The most rows a strip may have for its D8 step (route_strips.c) to fit the
 * device where the GPU takes it: strips sized by the host budget alone would
 * send the step to the CPU under auto (or fail under gpu) on a device
 * smaller than them.  INT_MAX where the GPU takes no step (*steps false:
 * where not even the tallest tile's rows would fit, the CPU takes them), or
 * where the device sets no bound.
 */
static int
rows_on_device(const tg_ctx *ctx, const tg_op *op, const tg_layout *l, bool *steps)
{
	tg_flow_params p = op->flow;
	int64_t		rows = 0;
	tg_error	ignored;

	*steps = false;
	if (tg_op_seams_of(op->kind) != TG_SEAMS_FLOW || p.routing != TG_ROUTE_D8 ||
		ctx->backend == TG_BACKEND_CPU || !tg_gpu_chosen(ctx, (int64_t) l->width * l->height))
		return INT_MAX;
	p.fill = false;				/* the step routes the routing surface, filled already */
	tg_error_clear(&ignored);
	if (tg_cuda_part_d8_rows(ctx, l->width, &p, &rows, &ignored) != TG_OK || rows < tg_layout_tallest(l))
		return INT_MAX;
	*steps = true;
	return rows < INT_MAX ? (int) rows : INT_MAX;
}

tg_status
tg_run_strips(const tg_ctx *ctx, const tg_op *op, const tg_job *job, tg_error *err)
{
	strips		s;
	int			device_rows;
	bool		gpu_steps;
	tg_status	st;

	if (tg_op_seams_of(op->kind) >= TG_SEAMS_ROUTE && job->spill.write == NULL)
		return tg_error_set(err, TG_EUNSUPPORTED, "%s in strips needs somewhere to spill its surface",
							job->function);
	/* a GPU the call insists on must be there before the first strip is read */
	st = tg_backend_ready(ctx, err);
	if (st != TG_OK)
		return st;
	/* the strips fill the budget with what they hold: what is freed stays only within it */
	tg_blocks_keep_within(ctx, job->memory_budget);
	device_rows = rows_on_device(ctx, op, job->layout, &gpu_steps);
	st = plan_strips(ctx, job, strip_bytes_per_cell(op), device_rows, &s, err);
	s.gpu_steps = gpu_steps;
	s.device_strip_bytes = s.strip_cells * strip_bytes_on_device(op);
	if (st == TG_OK)
		switch (tg_op_seams_of(op->kind))
		{
			case TG_SEAMS_WINDOW:
				{
					const char *phase = op->kind == TG_OP_SLOPE ? "slope in strips" : "terrain in strips";

					tg_job_notice(job, "%s spans %d x %d cells, more than %s holds: computing it in %d strips of rows",
								  job->layout->name, s.width, s.height, job->budget_name, s.n);
					st = local_in_strips(ctx, op, &s, phase, err);
					strip_stats(ctx, &s, op, phase);
					break;
				}
			case TG_SEAMS_FILL:
				st = fill_in_strips(ctx, op, &s, err);
				break;
			case TG_SEAMS_ROUTE:
				st = directions_in_strips(ctx, op, &s, err);
				break;
			default:
				st = accumulation_in_strips(ctx, op, &s, err);
				break;
		}
	strips_free(ctx, &s);
	return st;
}

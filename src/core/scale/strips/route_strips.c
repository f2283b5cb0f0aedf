/*
 * route_strips.c — flow directions and accumulation of a grid too large for
 * memory, strip by strip, with the same values as hydro/route/ and
 * hydro/accum/ on the whole grid.
 *
 * Directions.  A cell's direction depends on its 3 x 3 window, except on
 * flats, which hydro/flats/ drains down a mask built from breadth-first
 * distances over the whole flat (Barnes et al. 2014).  A strip is routed on
 * its own rows plus two rows of halo on each side (the outer one decides
 * whether the inner one is flat); flats that lie inside the strip get the same
 * mask there as on the whole grid.  Flats that cross a strip boundary are
 * collected while scanning the strips (their cells only, with the seeds each
 * cell is), their distances solved over those cells, and their mask values
 * handed to every strip that touches them.
 *
 * D8 accumulation, after Barnes (2017), "Parallel non-divergent flow
 * accumulation for trillion cell digital elevation models".  Each strip is
 * accumulated on its own; a cell whose receiver lies in another strip is an
 * exit, and each cell of a strip's first and last row knows the exit its own
 * flow path leaves by (or none).  Water leaving by an exit enters the other
 * strip at the receiver and follows that cell's path to its exit: over the
 * exits this is a small acyclic graph, whose totals give every entry cell
 * the water arriving from outside.  A second accumulation of each strip with
 * those inflows added is the final result.  In cells (integers below 2^53)
 * this is exact; weighted and area sums are added in another order, so they
 * agree to rounding.
 *
 * Multiple-flow accumulation: each strip accumulated alone, then the water
 * leaving it carried on in windows of strips until none is left (below,
 * before tg_route_strips_spread).
 *
 * Use: begin; scan every strip top to bottom; solve_flats; then route any
 * strip (directions), or link every strip, solve_flow and accumulate any strip
 * (D8), or spread every strip, settle and read any strip's result (multiple
 * flow).
 * z is always the routing surface of rows [row0 - 2, row0 + nrows + 2)
 * clipped to the grid, as floats (exact) or doubles.
 */
#include "scale/strips/strips.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Water bound for a cell of another strip; seq orders the sums of one cell's arrivals. */
typedef struct waiting
{
	int64_t		cell;
	double		amount;
	uint64_t	seq;
} waiting;

struct tg_route_strips
{
	tg_flow_params p;			/* of the whole grid */
	tg_accum_units units;
	int			W;
	int			H;
	int			next_row;		/* scan order check */
	bool		flats_solved;

	/* cells of flats that cross a strip boundary (scale/seams/) */
	tg_seam_flats flats;
	int32_t    *flat_mask;		/* per cell, after solve_flats */
	/* parked: their columns and masks in the spill from flats_at, a strip's window of them read back */
	const tg_spill *flats_spill;
	size_t		flats_at;
	int32_t    *window_col;		/* the strip's cells from window_first on */
	int32_t    *window_mask;
	size_t		window_first;

	/* accumulation */
	tg_strip_ends *strips;
	int			nstrips;
	size_t		strip_cap;
	tg_strip_exit *exits;
	size_t		nexits;
	size_t		exit_cap;
	tg_strip_inflow *inflows;	/* after solve_flow, by cell */
	size_t		ninflows;
	bool		flow_solved;

	/* multiple-flow accumulation: water waiting to enter cells, by cell */
	waiting    *waits;
	size_t		nwaits;
	size_t		wait_cap;
	uint64_t	next_seq;
	int			sweeps;
	int64_t		windows;
	double		progress;		/* windows done / (done + strips whose window has water waiting) */
	bool		settled;
};

#define CHECK_CANCELED(ctx, what) \
	do { \
		if (tg_canceled(ctx)) \
		{ \
			st = tg_error_set(err, TG_ECANCELED, "%s canceled", what); \
			goto done; \
		} \
	} while (0)

size_t
tg_route_strips_bytes_per_cell(tg_routing routing, bool accumulate)
{
	/*
	 * Routing a strip: the surface in and its copy (16), flat flags, mask and
	 * the flat resolution's distances, labels and queue (21), codes (2),
	 * shares of multiple-flow routings (64, twice for the strip's copy).
	 * Accumulating: weights, two accumulations, donor counts, a stack and the
	 * exits' memo (29).  Carrying multiple flow between strips holds a window
	 * of up to twice a strip's rows at 57 bytes per cell, less than routing.
	 */
	size_t		n = 16 + 21 + 2;

	if (routing != TG_ROUTE_D8)
		n += 64;
	if (accumulate)
		n += 29;
	return n;
}

tg_status
tg_route_strips_begin(const tg_ctx *ctx, const tg_flow_params *p, tg_accum_units units,
					  tg_route_strips **out, tg_error *err)
{
	tg_route_strips *rb = tg_alloc(ctx, sizeof *rb);

	*out = NULL;
	if (p->routing == TG_ROUTE_FDD8)
	{
		tg_free(ctx, rb);
		return tg_error_set(err, TG_EUNSUPPORTED, "fdd8 cannot be routed in strips");
	}
	if (rb == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the strip routing");
	memset(rb, 0, sizeof *rb);
	rb->p = *p;
	rb->units = units;
	rb->W = p->geom.width;
	rb->H = p->geom.height;
	tg_seam_flats_init(&rb->flats, &ctx->allocator, rb->W);
	*out = rb;
	return TG_OK;
}

void
tg_route_strips_end(const tg_ctx *ctx, tg_route_strips *rb)
{
	if (rb == NULL)
		return;
	tg_seam_flats_free(&rb->flats);
	tg_free(ctx, rb->flat_mask);
	tg_free(ctx, rb->window_col);
	tg_free(ctx, rb->window_mask);
	for (int b = 0; b < rb->nstrips; b++)
		tg_free(ctx, rb->strips[b].dest);
	tg_free(ctx, rb->strips);
	tg_free(ctx, rb->exits);
	tg_free(ctx, rb->inflows);
	tg_free(ctx, rb->waits);
	tg_free(ctx, rb);
}

/* The rows given with a strip: [*first, *first + *count). */
static void
halo_rows(const tg_route_strips *rb, int row0, int nrows, int *first, int *count)
{
	*first = row0 >= 2 ? row0 - 2 : 0;
	*count = (row0 + nrows + 2 <= rb->H ? row0 + nrows + 2 : rb->H) - *first;
}

/* Is z the routing surface of a strip's rows with their halo? */
static bool
surface_of_rows(const tg_route_strips *rb, const tg_band *z, int row0, int nrows)
{
	int			first,
				count;

	halo_rows(rb, row0, nrows, &first, &count);
	return z->width == rb->W && z->height == count && (z->pixtype == TG_PT_32BF || z->pixtype == TG_PT_64BF);
}

/* A strip linked or spread: its rows and (D8) the exits its edge rows drain by, taken over. */
static tg_status
keep_strip(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows, int64_t *dest, tg_error *err)
{
	if (!tg_grow(ctx, (void **) &rb->strips, &rb->strip_cap, (size_t) rb->nstrips + 1, sizeof(tg_strip_ends)))
		return tg_error_set(err, TG_ENOMEM, "could not keep the strips");
	rb->strips[rb->nstrips].row0 = row0;
	rb->strips[rb->nstrips].nrows = nrows;
	rb->strips[rb->nstrips].dest = dest;
	rb->nstrips++;
	return TG_OK;
}

/* ------------------------------------------------------------------------
 * Flats across strips: their cells kept as the strips are scanned, their
 * distances walked once over all of them (scale/seams/)
 * ------------------------------------------------------------------------ */

tg_status
tg_route_strips_scan(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows,
					 const tg_band *z, tg_error *err)
{
	int			first,
				count;
	tg_crossing_list list;
	tg_status	st;

	if (row0 != rb->next_row || nrows < 1 || row0 + nrows > rb->H || rb->flats_solved ||
		!surface_of_rows(rb, z, row0, nrows))
		return tg_error_set(err, TG_EINVAL, "strips must be scanned top to bottom, each with its halo (row %d, "
							"expected %d)", row0, rb->next_row);
	halo_rows(rb, row0, nrows, &first, &count);
	st = tg_crossing_flats(ctx, z, row0 - first, nrows, &list, err);
	if (st == TG_OK)
	{
		st = tg_seam_flats_append(ctx, &rb->flats, row0, &list, err);
		tg_crossing_list_free(ctx, &list);
	}
	if (st == TG_OK && row0 > 0)
		st = tg_seam_flats_seam(ctx, &rb->flats, row0, err);
	if (st == TG_OK)
		rb->next_row = row0 + nrows;
	return st;
}

tg_status
tg_route_strips_solve_flats(const tg_ctx *ctx, tg_route_strips *rb, tg_error *err)
{
	const size_t n = rb->flats.n;
	tg_status	st;

	if (rb->next_row != rb->H || rb->flats_solved)
		return tg_error_set(err, TG_EINVAL, "solve the flats once, after scanning every strip");
	tg_phase(ctx, "flats across strips");
	st = tg_seam_flats_link(ctx, &rb->flats, rb->H, err);
	if (st == TG_OK)
		st = tg_seam_flats_walk(ctx, &rb->flats, NULL, err);
	if (st == TG_OK && (rb->flat_mask = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t))) == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the masks of %zu cells of flats across strips", n);
	if (st == TG_OK)
		st = tg_seam_flats_masks(ctx, &rb->flats, rb->flat_mask, err);
	/* routing needs each cell's place and mask only */
	tg_seam_flats_forget_walk(&rb->flats);
	rb->flats_solved = st == TG_OK;
	return st;
}

size_t
tg_route_strips_flat_cells(const tg_route_strips *rb)
{
	return rb->flats.n;
}

size_t
tg_route_strips_flat_bytes(const tg_route_strips *rb, bool solving)
{
	/*
	 * Kept while scanning: row, column, seeds, flat (13); solving: column,
	 * flat, the neighbour bits and links, two distances and the walk's two
	 * fronts, or the masks (33 at most); afterwards column and mask, unless
	 * parked.
	 */
	const size_t per_cell = solving ? 33 : !rb->flats_solved ? 13 : rb->flats_spill ? 0 : 8;

	return rb->flats.n * per_cell + ((size_t) rb->H + 1) * sizeof(uint32_t);
}

tg_status
tg_route_strips_park_flats(const tg_ctx *ctx, tg_route_strips *rb, const tg_spill *spill, size_t at,
						   tg_error *err)
{
	const size_t n = rb->flats.n;
	tg_status	st;

	if (!rb->flats_solved || rb->flats_spill != NULL)
		return tg_error_set(err, TG_EINVAL, "park the flats once, after solving them");
	st = spill->write(spill->arg, at, rb->flats.col, n * sizeof(int32_t), err);
	if (st == TG_OK)
		st = spill->write(spill->arg, at + n * sizeof(int32_t), rb->flat_mask, n * sizeof(int32_t), err);
	if (st != TG_OK)
		return st;
	tg_seam_flats_forget_columns(&rb->flats);
	tg_free(ctx, rb->flat_mask);
	rb->flat_mask = NULL;
	rb->flats_spill = spill;
	rb->flats_at = at;
	return TG_OK;
}

/* ------------------------------------------------------------------------
 * Routing a strip
 * ------------------------------------------------------------------------ */

/* The geometry of rows [row0, row0 + nrows) of the grid. */
static tg_grid_geometry
strip_geometry(const tg_route_strips *rb, int row0, int nrows)
{
	tg_grid_geometry g = rb->p.geom;

	g.height = nrows;
	g.row0 += row0;
	return g;
}

static bool
strip_in_grid(const tg_route_strips *rb, int row0, int nrows)
{
	return rb->flats_solved && nrows >= 1 && row0 >= 0 && row0 + nrows <= rb->H;
}

/* The rows of a strip's crossing cells its routing reads: its own and one of halo each side, given. */
static void
mask_rows(const tg_route_strips *rb, int row0, int nrows, int *lo, int *hi)
{
	int			first,
				count;

	halo_rows(rb, row0, nrows, &first, &count);
	*lo = row0 - 1 > first ? row0 - 1 : first;
	*hi = row0 + nrows + 1 < first + count ? row0 + nrows + 1 : first + count;
}

/* Parked flats: the strip's window of them read back (on the calling thread: the spill is the caller's). */
static tg_status
flats_window(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows, tg_error *err)
{
	const tg_spill *sp = rb->flats_spill;
	int			lo,
				hi;
	size_t		a,
				m;
	tg_status	st;

	if (sp == NULL || !strip_in_grid(rb, row0, nrows))
		return TG_OK;			/* routing the strip says what is wrong with it */
	mask_rows(rb, row0, nrows, &lo, &hi);
	a = rb->flats.row_start[lo];
	m = rb->flats.row_start[hi] - a;
	tg_free(ctx, rb->window_col);
	tg_free(ctx, rb->window_mask);
	rb->window_col = tg_alloc(ctx, (m ? m : 1) * sizeof(int32_t));
	rb->window_mask = tg_alloc(ctx, (m ? m : 1) * sizeof(int32_t));
	rb->window_first = a;
	if (rb->window_col == NULL || rb->window_mask == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a strip's %zu cells of flats across strips", m);
	st = sp->read(sp->arg, rb->flats_at + a * sizeof(int32_t), rb->window_col, m * sizeof(int32_t), err);
	if (st == TG_OK)
		st = sp->read(sp->arg, rb->flats_at + (rb->flats.n + a) * sizeof(int32_t), rb->window_mask,
					  m * sizeof(int32_t), err);
	return st;
}

/* The crossing flats' cells of rows [lo, hi) as indices into a strip's rows from `first` on. */
typedef struct mask_cells_job
{
	const tg_route_strips *rb;
	const int32_t *col;			/* the cells' columns, from cell `shift` on */
	size_t		shift;
	int			lo,
				first;
	size_t	   *cells;
} mask_cells_job;

static tg_status
mask_cells_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const mask_cells_job *j = arg;
	const uint32_t *row_start = j->rb->flats.row_start;
	const size_t W = (size_t) j->rb->W;

	for (int y = j->lo + y0; y < j->lo + y1; y++)
		for (uint32_t c = row_start[y]; c < row_start[y + 1]; c++)
			j->cells[c - row_start[j->lo]] = (size_t) (y - j->first) * W + (size_t) j->col[c - j->shift];
	return TG_OK;
}

/*
 * The routing of rows [first, first + count) around a strip's own ones:
 * *p the grid's parameters with these rows' geometry, *given the masks of
 * the crossing flats' cells in the strip and its inner halo rows (given->cell
 * allocated; free it).  Parked flats: flats_window read them for this strip.
 */
static tg_status
strip_masks(const tg_ctx *ctx, const tg_route_strips *rb, int row0, int nrows, int first, int count,
			tg_flow_params *p, tg_flat_masks *given, tg_error *err)
{
	const bool	parked = rb->flats_spill != NULL;
	const size_t shift = parked ? rb->window_first : 0;
	const int32_t *col = parked ? rb->window_col : rb->flats.col,
			   *mask = parked ? rb->window_mask : rb->flat_mask;
	int			lo,
				hi;
	mask_cells_job j;
	tg_status	st;

	mask_rows(rb, row0, nrows, &lo, &hi);
	*p = rb->p;
	p->geom = strip_geometry(rb, first, count);
	given->count = (size_t) (rb->flats.row_start[hi] - rb->flats.row_start[lo]);
	given->mask = mask + (rb->flats.row_start[lo] - shift);
	given->cell = NULL;
	if (given->count == 0)
		return TG_OK;
	j = (mask_cells_job) {rb, col, shift, lo, first, tg_alloc(ctx, given->count * sizeof(size_t))};
	if (j.cells == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a strip's flat cells");
	st = tg_parallel_rows(ctx, rb->W, hi - lo, mask_cells_rows, &j, err);
	if (st != TG_OK)
	{
		tg_free(ctx, j.cells);
		return st;
	}
	given->cell = j.cells;
	return TG_OK;
}

/* The routing of the strip's own rows (strip->z, d8, frac: nrows * W). */
static tg_status
route_strip(const tg_ctx *ctx, const tg_route_strips *rb, int row0, int nrows, const tg_band *z,
		   tg_route *strip, tg_error *err)
{
	const int	W = rb->W;
	int			first,
				count;
	size_t		n,
				nb = (size_t) W * nrows,
				off;
	double	   *sub_z = NULL;
	tg_flow_params p;
	tg_flat_masks given;
	tg_route	sub;
	tg_status	st;

	memset(strip, 0, sizeof *strip);
	if (!strip_in_grid(rb, row0, nrows) || !surface_of_rows(rb, z, row0, nrows))
		return tg_error_set(err, TG_EINVAL, "route a strip of the grid, with its halo, after solving the flats");
	halo_rows(rb, row0, nrows, &first, &count);
	n = (size_t) W * count;
	off = (size_t) (row0 - first) * W;
	/* the routing fills and resolves flats in place: a copy of the surface, in doubles */
	st = tg_band_decode(ctx, z, &sub_z, err);
	if (st == TG_OK)
		st = strip_masks(ctx, rb, row0, nrows, first, count, &p, &given, err);
	if (st != TG_OK)
	{
		tg_free(ctx, sub_z);
		return st;
	}
	st = tg_cpu_route_surface(ctx, sub_z, W, count, &p, &given, &sub, err);
	tg_free(ctx, (void *) given.cell);
	if (st != TG_OK)
		return st;

	/* keep the strip's own rows */
	strip->width = W;
	strip->height = nrows;
	strip->routing = sub.routing;
	strip->z = tg_alloc(ctx, (nb ? nb : 1) * sizeof(double));
	strip->d8 = tg_alloc(ctx, nb ? nb : 1);
	if (sub.frac)
		strip->frac = tg_alloc(ctx, (nb ? 8 * nb : 1) * sizeof(float));
	if (strip->z == NULL || strip->d8 == NULL || (sub.frac && strip->frac == NULL))
	{
		tg_route_free(ctx, &sub);
		tg_route_free(ctx, strip);
		return tg_error_set(err, TG_ENOMEM, "could not allocate a strip's routing (%zu cells)", nb);
	}
	memcpy(strip->z, sub.z + off, nb * sizeof(double));
	memcpy(strip->d8, sub.d8 + off, nb);
	if (sub.frac)
		for (int k = 0; k < 8; k++)
			memcpy(strip->frac + (size_t) k * nb, sub.frac + (size_t) k * n + off, nb * sizeof(float));
	tg_route_free(ctx, &sub);
	return TG_OK;
}

tg_status
tg_route_strips_directions(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows,
						   const tg_band *z, uint8_t *d8, float *frac, tg_error *err)
{
	tg_route	strip;
	tg_status	st;

	st = flats_window(ctx, rb, row0, nrows, err);
	if (st == TG_OK)
		st = route_strip(ctx, rb, row0, nrows, z, &strip, err);
	if (st != TG_OK)
		return st;
	st = tg_cpu_export_directions(ctx, &strip, &rb->p, NULL, d8, frac, err);
	tg_route_free(ctx, &strip);
	return st;
}

/* ------------------------------------------------------------------------
 * D8 accumulation across strips
 * ------------------------------------------------------------------------ */

/*
 * A strip's routing and the accumulation over its own rows of what each
 * cell puts in (the weight raster's rows or 1 each, times the area where
 * asked; the inflows added where with_inflows), and what of them is asked
 * for: strip the own rows' routing (multiple flow's spread), acc their
 * accumulation, receivers their receiver masks, edges the paths out of
 * them.  D8 runs on the backend the call's policy chooses (as a part's
 * link: the same directions and the same sums either way), other routings
 * on the threads.
 */
typedef struct strip_step
{
	const tg_route_strips *rb;
	int			row0;
	int			nrows;
	const tg_band *z;
	const tg_band *weight;		/* the weight raster's own rows, or NULL */
	bool		with_inflows;
	tg_route   *strip;
	double	   *acc;
	uint16_t   *receivers;
	const tg_edge_paths *edges;
} strip_step;

/* The inflows into the strip's own rows: rb->inflows[*j0, *j0 + *n). */
static void
strip_inflows(const strip_step *a, size_t *j0, size_t *n)
{
	const tg_route_strips *rb = a->rb;
	const int64_t begin = (int64_t) a->row0 * rb->W,
				end = (int64_t) (a->row0 + a->nrows) * rb->W;
	size_t		j = a->with_inflows ? tg_first_cell_at(rb->inflows, rb->ninflows, sizeof(tg_strip_inflow), begin)
		: rb->ninflows;

	*j0 = j;
	while (j < rb->ninflows && rb->inflows[j].cell < end)
		j++;
	*n = j - *j0;
}

static tg_status
strip_route_cpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const strip_step *a = arg;
	const tg_grid_geometry g = strip_geometry(a->rb, a->row0, a->nrows);
	const int64_t begin = (int64_t) a->row0 * a->rb->W;
	const size_t nb = (size_t) a->rb->W * a->nrows;
	double	   *w = NULL,
			   *acc = a->acc ? a->acc : tg_alloc(ctx, (nb ? nb : 1) * sizeof(double));
	tg_route	own,
			   *strip = a->strip ? a->strip : &own;
	size_t		j0,
				n;
	tg_status	st = acc ? tg_cell_weights(ctx, a->weight, &g, a->rb->units, &w, err)
		: tg_error_set(err, TG_ENOMEM, "could not allocate a strip's accumulation (%zu cells)", nb);

	memset(strip, 0, sizeof *strip);
	strip_inflows(a, &j0, &n);
	for (size_t j = j0; st == TG_OK && j < j0 + n; j++)
		w[a->rb->inflows[j].cell - begin] += a->rb->inflows[j].amount;
	if (st == TG_OK)
		st = route_strip(ctx, a->rb, a->row0, a->nrows, a->z, strip, err);
	if (st == TG_OK)
	{
		const tg_route_view v = tg_cpu_route_view(strip, 0);

		st = tg_cpu_accumulate(ctx, strip, &a->rb->p, w, TG_ACC_INDEGREE, acc, err);
		if (st == TG_OK && a->receivers)
			st = tg_route_receivers_rows(ctx, &v, acc, 0, a->nrows, a->receivers, err);
		if (st == TG_OK && a->edges)
			st = tg_edge_paths_of(ctx, strip, acc, a->edges, err);
		if (st != TG_OK || strip == &own)
			tg_route_free(ctx, strip);
	}
	if (acc != a->acc)
		tg_free(ctx, acc);
	tg_free(ctx, w);
	return st;
}

static tg_status
strip_d8_gpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	const strip_step *a = arg;
	const tg_route_strips *rb = a->rb;
	const int	W = rb->W;
	const tg_grid_geometry g = strip_geometry(rb, a->row0, a->nrows);
	const tg_part_d8_out out = {NULL, a->acc, a->receivers, a->edges ? *a->edges : (tg_edge_paths) {0}};
	int			first,
				count;
	double	   *cell_w = NULL,
			   *row_w = NULL;
	size_t		j0,
				n;
	tg_part_weights w;
	tg_flow_params p;
	tg_flat_masks given = {0};
	tg_status	st;

	if (!strip_in_grid(rb, a->row0, a->nrows) || !surface_of_rows(rb, a->z, a->row0, a->nrows) || a->strip)
		return tg_error_set(err, TG_EINVAL, "route a strip of the grid, with its halo, after solving the flats, "
							"for its D8 products");
	/* without a weight raster a cell puts in its row's weight: the device spreads them */
	st = a->weight ? tg_cell_weights(ctx, a->weight, &g, rb->units, &cell_w, err)
		: tg_row_weights(ctx, &g, rb->units, &row_w, err);
	strip_inflows(a, &j0, &n);
	w = (tg_part_weights) {cell_w, row_w, n > 0 ? rb->inflows + j0 : NULL, n, (int64_t) a->row0 * W};
	halo_rows(rb, a->row0, a->nrows, &first, &count);
	if (st == TG_OK)
		st = strip_masks(ctx, rb, a->row0, a->nrows, first, count, &p, &given, err);
	p.fill = false;				/* the surface is the routing surface, filled already where asked */
	if (st == TG_OK)
		st = tg_cuda_part_d8(ctx, a->z, a->row0 - first, a->nrows, &p, &given, &w, &out, err);
	tg_free(ctx, (void *) given.cell);
	tg_free(ctx, cell_w);
	tg_free(ctx, row_w);
	return st;
}

/* The strip's step (its crossing flats' window read back first where parked). */
static tg_status
accumulate_strip(const tg_ctx *ctx, tg_route_strips *rb, const strip_step *a, tg_error *err)
{
	tg_status	st = flats_window(ctx, rb, a->row0, a->nrows, err);

	if (st == TG_OK && rb->p.routing == TG_ROUTE_D8 && a->strip == NULL)
		st = tg_run_step(ctx, (int64_t) rb->W * a->nrows, strip_route_cpu, strip_d8_gpu, a, err);
	else if (st == TG_OK)
		st = strip_route_cpu(ctx, a, err);
	return st;
}

tg_status
tg_route_strips_link(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows,
					 const tg_band *z, const tg_band *weight, tg_error *err)
{
	int64_t    *dest = tg_alloc(ctx, 2 * (size_t) rb->W * sizeof(int64_t));
	tg_edge_paths edges = {0};
	strip_step	a = {rb, row0, nrows, z, weight, false, NULL, NULL, NULL, &edges};
	tg_status	st = TG_OK;

	if (dest == NULL || !tg_edge_paths_alloc(ctx, rb->W, &edges))
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate a strip's links (%d cells a row)", rb->W);
		goto done;
	}
	if (rb->flow_solved || rb->p.routing != TG_ROUTE_D8)
	{
		st = tg_error_set(err, TG_EINVAL, "link the strips of a D8 routing before solving the flow");
		goto done;
	}
	st = accumulate_strip(ctx, rb, &a, err);
	if (st == TG_OK)
		st = tg_strip_link(ctx, rb->W, nrows, row0, &edges, &rb->exits, &rb->nexits, &rb->exit_cap, dest, err);
	if (st == TG_OK)
		st = keep_strip(ctx, rb, row0, nrows, dest, err);
	if (st == TG_OK)
		dest = NULL;

done:
	tg_edge_paths_free(ctx, &edges);
	tg_free(ctx, dest);
	return st;
}

tg_status
tg_route_strips_solve_flow(const tg_ctx *ctx, tg_route_strips *rb, tg_error *err)
{
	size_t		rows = 0;
	tg_status	st;

	for (int b = 0; b < rb->nstrips; b++)
		rows += (size_t) rb->strips[b].nrows;
	if (rb->flow_solved || rows != (size_t) rb->H)
		return tg_error_set(err, TG_EINVAL, "solve the flow once, after linking every strip");
	st = tg_strips_flow(ctx, rb->W, rb->exits, rb->nexits, rb->strips, rb->nstrips, &rb->inflows,
						&rb->ninflows, err);
	rb->flow_solved = st == TG_OK;
	return st;
}

tg_status
tg_route_strips_accumulate(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows,
						   const tg_band *z, const tg_band *weight, double *acc, uint16_t *receivers,
						   tg_error *err)
{
	const strip_step a = {rb, row0, nrows, z, weight, true, NULL, acc, receivers, NULL};
	tg_status	st;

	if (!rb->flow_solved || rb->p.routing != TG_ROUTE_D8)
		return tg_error_set(err, TG_EINVAL, "accumulate a strip of a D8 routing after solving the flow");
	st = accumulate_strip(ctx, rb, &a, err);
	if (st == TG_OK && rb->units == TG_UNITS_SCA)
	{
		tg_grid_geometry g = strip_geometry(rb, row0, nrows);

		st = tg_to_sca(ctx, &g, acc, err);
	}
	return st;
}

/* ------------------------------------------------------------------------
 * Multiple-flow accumulation across strips
 *
 * A path may cross a strip boundary many times (along a valley that follows
 * it, or over a flat), so the water leaving a strip cannot be solved at once
 * as D8's exits are.  Accumulation is linear in the water put in, though:
 * each strip is accumulated alone (spread), which leaves some water bound for
 * cells of its neighbours; that water is then carried on (settle) in windows
 * of a strip and half of each neighbour, read back from the spill in blocks
 * of rows as the water reaches them: from the cells it waits at, down every
 * cell it reaches within the window (in an order where a cell's donors come
 * first), adding to their accumulation, until it leaves the window, where it
 * waits again.  Every path is finite, so no water is left after finitely
 * many windows; back-and-forth crossings near a boundary stay within one
 * window.  The sums are the in-memory ones
 * in another order: equal to rounding.  Windows run one at a time in a fixed
 * order, so the result does not depend on the number of threads.
 *
 * The spill from `base`: each strip's 8 planes of shares over its rows, at
 * 32 * W * row0 (its own layout: plane k after k * 4 * W * nrows bytes); then
 * the accumulation, 8 bytes per cell in raster order.
 * ------------------------------------------------------------------------ */

/* The share planes and the accumulation of the grid in the spill. */
static size_t
shares_at(const tg_route_strips *rb, size_t base, int row0, int nrows, int k, int row)
{
	return base + (size_t) 32 * rb->W * row0 + (size_t) k * 4 * rb->W * nrows +
		(size_t) 4 * rb->W * (row - row0);
}

static size_t
acc_at(const tg_route_strips *rb, size_t base, int row)
{
	return base + (size_t) 32 * rb->W * rb->H + (size_t) 8 * rb->W * row;
}

size_t
tg_route_strips_spill_bytes(const tg_route_strips *rb)
{
	return (size_t) 40 * rb->W * rb->H;
}

static bool
wait_for(const tg_ctx *ctx, tg_route_strips *rb, int64_t cell, double amount)
{
	if (!tg_grow(ctx, (void **) &rb->waits, &rb->wait_cap, rb->nwaits + 1, sizeof(waiting)))
		return false;
	rb->waits[rb->nwaits].cell = cell;
	rb->waits[rb->nwaits].amount = amount;
	rb->waits[rb->nwaits].seq = rb->next_seq++;
	rb->nwaits++;
	return true;
}

static int
cmp_waiting(const void *a, const void *b)
{
	const waiting *x = a,
			   *y = b;

	if (x->cell != y->cell)
		return x->cell < y->cell ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The waiting water by cell, one entry per cell, each cell's arrivals summed in the order they came. */
static void
merge_waits(tg_route_strips *rb)
{
	size_t		n = 0;

	if (rb->nwaits == 0)
		return;
	qsort(rb->waits, rb->nwaits, sizeof(waiting), cmp_waiting);
	for (size_t i = 0; i < rb->nwaits; i++)
		if (n > 0 && rb->waits[n - 1].cell == rb->waits[i].cell)
			rb->waits[n - 1].amount += rb->waits[i].amount;
		else
			rb->waits[n++] = rb->waits[i];
	rb->nwaits = n;
}

tg_status
tg_route_strips_spread(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows, const tg_band *z,
					   const tg_band *weight, const tg_spill *spill, size_t base, tg_error *err)
{
	const int	W = rb->W;
	const size_t nb = (size_t) W * nrows;
	double	   *acc = NULL;
	tg_route	strip;
	strip_step	a = {rb, row0, nrows, z, weight, false, &strip, NULL, NULL, NULL};
	tg_route_view v;
	bool		routed = false;
	tg_status	st = TG_OK;

	if (rb->p.routing == TG_ROUTE_D8 || rb->settled)
		return tg_error_set(err, TG_EINVAL, "spread the strips of a multiple-flow routing before settling");
	acc = tg_alloc(ctx, (nb ? nb : 1) * sizeof(double));
	if (acc == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a strip's accumulation (%zu cells)", nb);
	a.acc = acc;
	st = accumulate_strip(ctx, rb, &a, err);
	if (st != TG_OK)
		goto done;
	routed = true;
	for (int k = 0; k < 8 && st == TG_OK; k++)
		st = spill->write(spill->arg, shares_at(rb, base, row0, nrows, k, row0), strip.frac + (size_t) k * nb,
						  nb * sizeof(float), err);
	if (st == TG_OK)
		st = spill->write(spill->arg, acc_at(rb, base, row0), acc, nb * sizeof(double), err);

	/* the water leaving by the strip's first and last rows */
	v = tg_cpu_route_view(&strip, 0);
	for (int y = 0; y < nrows && st == TG_OK; y += (nrows > 1 ? nrows - 1 : 1))
		for (int x = 0; x < W && st == TG_OK; x++)
		{
			const size_t i = (size_t) y * W + x;

			if (isnan(acc[i]))
				continue;
			for (int k = 0; k < 8; k++)
			{
				const int	ny = y + tg_nbr_dy(k),
							nx = x + tg_nbr_dx(k),
							gy = row0 + ny;
				double		share;

				if ((ny >= 0 && ny < nrows) || gy < 0 || gy >= rb->H || nx < 0 || nx >= W)
					continue;
				share = tg_route_share(&v, i, k, acc[i]);
				if (share > 0 && !wait_for(ctx, rb, (int64_t) gy * W + nx, acc[i] * share))
				{
					st = tg_error_set(err, TG_ENOMEM, "could not keep the water leaving a strip");
					break;
				}
			}
		}
	if (st == TG_OK)
		st = keep_strip(ctx, rb, row0, nrows, NULL, err);

done:
	if (routed)
		tg_route_free(ctx, &strip);
	tg_free(ctx, acc);
	return st;
}

/* What carrying the waiting water through one window [a, b) of rows holds. */
typedef struct flow_window
{
	int			a;
	int			b;
	size_t		m;				/* cells */
	float	   *frac;			/* 8 planes of m, read in blocks of rows as the water reaches them */
	uint8_t    *loaded;			/* per block of rows */
	uint8_t    *state;			/* UNREACHED, else donors not yet carried */
	double	   *delta;			/* water passing each reached cell */
	uint32_t   *reached;		/* in the order reached */
	uint32_t   *ready;			/* donors first */
	double	   *acc;			/* rows of the reached cells */
} flow_window;

#define UNREACHED 0xFF
#define BLOCK_ROWS 16

/* The shares of the block of window rows holding row y (of the window), unless read. */
static tg_status
load_block(const tg_route_strips *rb, const tg_spill *spill, size_t base, flow_window *w, int y,
		   tg_error *err)
{
	const int	block = y / BLOCK_ROWS,
				y0 = w->a + block * BLOCK_ROWS,
				y1 = y0 + BLOCK_ROWS < w->b ? y0 + BLOCK_ROWS : w->b;
	tg_status	st = TG_OK;

	if (w->loaded[block])
		return TG_OK;
	for (int j = 0; j < rb->nstrips && st == TG_OK; j++)
	{
		const tg_strip_ends *sj = &rb->strips[j];
		const int	lo = sj->row0 > y0 ? sj->row0 : y0,
					hi = sj->row0 + sj->nrows < y1 ? sj->row0 + sj->nrows : y1;

		for (int k = 0; k < 8 && lo < hi && st == TG_OK; k++)
			st = spill->read(spill->arg, shares_at(rb, base, sj->row0, sj->nrows, k, lo),
							 w->frac + (size_t) k * w->m + (size_t) (lo - w->a) * rb->W,
							 (size_t) (hi - lo) * rb->W * sizeof(float), err);
	}
	w->loaded[block] = st == TG_OK;
	return st;
}

/*
 * Carry the water waiting at waits[lo, hi) (cells of rows [w->a, w->b))
 * down everything it reaches in the window; what leaves the window waits
 * again at the cell it enters.
 */
static tg_status
settle_window(const tg_ctx *ctx, tg_route_strips *rb, const tg_spill *spill, size_t base, flow_window *w,
			  size_t lo, size_t hi, tg_error *err)
{
	const int	W = rb->W,
				rows = w->b - w->a;
	const int64_t first = (int64_t) w->a * W;
	size_t		nreached = 0,
				nready = 0,
				done = 0;
	int			ymin = rows,
				ymax = -1;
	tg_status	st = TG_OK;

	memset(w->loaded, 0, (size_t) (rows + BLOCK_ROWS - 1) / BLOCK_ROWS);
	memset(w->state, UNREACHED, w->m);

	/* what the water reaches, and how many of a reached cell's donors it reaches */
	for (size_t j = lo; j < hi && st == TG_OK; j++)
	{
		const uint32_t c = (uint32_t) (rb->waits[j].cell - first);

		w->state[c] = 0;
		w->delta[c] = rb->waits[j].amount;
		w->reached[nreached++] = c;
		st = load_block(rb, spill, base, w, (int) (c / W), err);
	}
	for (size_t h = 0; h < nreached && st == TG_OK; h++)
	{
		const uint32_t c = w->reached[h];
		const int	x = (int) (c % W),
					y = (int) (c / W);

		ymin = y < ymin ? y : ymin;
		ymax = y > ymax ? y : ymax;
		for (int k = 0; k < 8; k++)
		{
			const int	nx = x + tg_nbr_dx(k),
						ny = y + tg_nbr_dy(k);
			uint32_t	r;

			if (!(w->frac[(size_t) k * w->m + c] > 0) || nx < 0 || nx >= W || ny < 0 || ny >= rows)
				continue;
			r = (uint32_t) ((size_t) ny * W + nx);
			if (w->state[r] == UNREACHED)
			{
				w->state[r] = 0;
				w->delta[r] = 0;
				w->reached[nreached++] = r;
				st = load_block(rb, spill, base, w, ny, err);
				if (st != TG_OK)
					return st;
			}
			w->state[r]++;
		}
		if ((h & (TG_CANCEL_EVERY - 1)) == 0 && tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "accumulation in strips canceled");
		if ((h & (TG_CANCEL_EVERY - 1)) == 0)
			tg_phase_progress(ctx, rb->progress);
	}

	if (st != TG_OK)
		return st;

	/* carried down in an order where every cell's reached donors come first */
	for (size_t h = 0; h < nreached; h++)
		if (w->state[w->reached[h]] == 0)
			w->ready[nready++] = w->reached[h];
	for (; done < nready; done++)
	{
		const uint32_t c = w->ready[done];
		const int	x = (int) (c % W),
					y = (int) (c / W);
		const double d = w->delta[c];

		for (int k = 0; k < 8; k++)
		{
			const float share = w->frac[(size_t) k * w->m + c];
			const int	nx = x + tg_nbr_dx(k),
						ny = y + tg_nbr_dy(k);

			if (!(share > 0) || nx < 0 || nx >= W)
				continue;
			if (ny >= 0 && ny < rows)
			{
				const uint32_t r = (uint32_t) ((size_t) ny * W + nx);

				w->delta[r] += d * share;
				if (--w->state[r] == 0)
					w->ready[nready++] = r;
			}
			else if (w->a + ny >= 0 && w->a + ny < rb->H &&
					 !wait_for(ctx, rb, first + (int64_t) ny * W + nx, d * share))
				return tg_error_set(err, TG_ENOMEM, "could not keep the water leaving a window of strips");
		}
		if ((done & (TG_CANCEL_EVERY - 1)) == 0 && tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "accumulation in strips canceled");
		if ((done & (TG_CANCEL_EVERY - 1)) == 0)
			tg_phase_progress(ctx, rb->progress);
	}
	if (done != nreached)
		return tg_error_set(err, TG_EDATA, "the flow between strips has a cycle");

	/* added to the accumulation of the rows it passed */
	if (nreached > 0)
	{
		const size_t off = (size_t) ymin * W,
					n = (size_t) (ymax - ymin + 1) * W;

		st = spill->read(spill->arg, acc_at(rb, base, w->a + ymin), w->acc, n * sizeof(double), err);
		if (st == TG_OK)
		{
			for (size_t h = 0; h < nreached; h++)
				w->acc[w->reached[h] - off] += w->delta[w->reached[h]];
			st = spill->write(spill->arg, acc_at(rb, base, w->a + ymin), w->acc, n * sizeof(double), err);
		}
	}
	return st;
}

/* The window of strip j: its rows and half of each neighbour's, clipped. */
static void strip_window(const tg_route_strips *rb, int j, int *a, int *b);

/* The strips whose window has water waiting in it. */
static int
windows_waiting(const tg_route_strips *rb)
{
	int			n = 0;

	for (int j = 0; j < rb->nstrips; j++)
	{
		int			a,
					b;

		strip_window(rb, j, &a, &b);
		n += tg_first_cell_at(rb->waits, rb->nwaits, sizeof(waiting), (int64_t) a * rb->W) <
			tg_first_cell_at(rb->waits, rb->nwaits, sizeof(waiting), (int64_t) b * rb->W);
	}
	return n;
}

/* The window of strip j: its rows and half of each neighbour's, clipped. */
static void
strip_window(const tg_route_strips *rb, int j, int *a, int *b)
{
	const tg_strip_ends *sj = &rb->strips[j];
	const int	reach = sj->nrows / 2;

	*a = sj->row0 - reach > 0 ? sj->row0 - reach : 0;
	*b = sj->row0 + sj->nrows + reach < rb->H ? sj->row0 + sj->nrows + reach : rb->H;
}

tg_status
tg_route_strips_settle(const tg_ctx *ctx, tg_route_strips *rb, const tg_spill *spill, size_t base,
					   tg_error *err)
{
	const int	W = rb->W;
	size_t		rows = 0,
				most = 1;
	flow_window w;
	tg_status	st = TG_OK;

	for (int j = 0; j < rb->nstrips; j++)
		rows += (size_t) rb->strips[j].nrows;
	if (rb->p.routing == TG_ROUTE_D8 || rb->settled || rows != (size_t) rb->H)
		return tg_error_set(err, TG_EINVAL, "settle a multiple-flow routing once, after spreading every strip");
	qsort(rb->strips, (size_t) rb->nstrips, sizeof(tg_strip_ends), tg_cmp_strip_rows);
	for (int j = 0; j < rb->nstrips; j++)
	{
		int			a,
					b;

		strip_window(rb, j, &a, &b);
		if ((size_t) (b - a) * W > most)
			most = (size_t) (b - a) * W;
	}
	if (most >= UINT32_MAX)
		return tg_error_set(err, TG_ELIMIT, "a window of %zu cells is too large to carry the water between strips",
							most);
	memset(&w, 0, sizeof w);
	w.frac = tg_alloc(ctx, 8 * most * sizeof(float));
	w.loaded = tg_alloc(ctx, most / W / BLOCK_ROWS + 1);
	w.state = tg_alloc(ctx, most);
	w.delta = tg_alloc(ctx, most * sizeof(double));
	w.reached = tg_alloc(ctx, most * sizeof(uint32_t));
	w.ready = tg_alloc(ctx, most * sizeof(uint32_t));
	w.acc = tg_alloc(ctx, most * sizeof(double));
	if (!w.frac || !w.loaded || !w.state || !w.delta || !w.reached || !w.ready || !w.acc)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate a window of strips (%zu cells)", most);
		goto done;
	}
	tg_phase(ctx, "flow between strips");
	merge_waits(rb);
	for (int sweep = 0; rb->nwaits > 0; sweep++)
	{
		for (int t = 0; t < rb->nstrips && st == TG_OK; t++)
		{
			const int	j = sweep % 2 == 0 ? t : rb->nstrips - 1 - t;
			size_t		lo,
						hi;

			strip_window(rb, j, &w.a, &w.b);
			w.m = (size_t) (w.b - w.a) * W;
			lo = tg_first_cell_at(rb->waits, rb->nwaits, sizeof(waiting), (int64_t) w.a * W);
			hi = tg_first_cell_at(rb->waits, rb->nwaits, sizeof(waiting), (int64_t) w.b * W);
			if (lo == hi)
				continue;
			CHECK_CANCELED(ctx, "accumulation in strips");
			st = settle_window(ctx, rb, spill, base, &w, lo, hi, err);
			if (st != TG_OK)
				goto done;
			/* the water carried is gone; what left the window waits */
			memmove(rb->waits + lo, rb->waits + hi, (rb->nwaits - hi) * sizeof(waiting));
			rb->nwaits -= hi - lo;
			merge_waits(rb);
			rb->windows++;
			rb->progress = (double) rb->windows / (rb->windows + windows_waiting(rb));
			tg_phase_progress(ctx, rb->progress);
		}
		rb->sweeps = sweep + 1;
	}
	rb->settled = true;

done:
	tg_free(ctx, w.frac);
	tg_free(ctx, w.loaded);
	tg_free(ctx, w.state);
	tg_free(ctx, w.delta);
	tg_free(ctx, w.reached);
	tg_free(ctx, w.ready);
	tg_free(ctx, w.acc);
	return st;
}

void
tg_route_strips_settled(const tg_route_strips *rb, int *sweeps, int64_t *windows)
{
	*sweeps = rb->sweeps;
	*windows = rb->windows;
}

tg_status
tg_route_strips_flow_result(const tg_ctx *ctx, tg_route_strips *rb, int row0, int nrows, const tg_spill *spill,
							size_t base, double *acc, uint16_t *receivers, tg_error *err)
{
	const size_t nb = (size_t) rb->W * nrows;
	bool		spread = false;
	tg_status	st;

	/* the shares are laid out per strip spread: only such a strip can be read back */
	for (int j = 0; j < rb->nstrips; j++)
		spread |= rb->strips[j].row0 == row0 && rb->strips[j].nrows == nrows;
	if (!rb->settled || !spread)
		return tg_error_set(err, TG_EINVAL, "read the accumulation of a strip spread, after settling the flow");
	st = spill->read(spill->arg, acc_at(rb, base, row0), acc, nb * sizeof(double), err);
	if (st == TG_OK && receivers)
	{
		/* the strip's shares as spread spilled them */
		float	   *frac = tg_alloc(ctx, 8 * nb * sizeof(float));
		const tg_route_view v = {rb->W, nrows, rb->p.routing, 0, NULL, frac};

		if (frac == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not allocate a strip's shares (%zu cells)", nb);
		st = spill->read(spill->arg, shares_at(rb, base, row0, nrows, 0, row0), frac, 8 * nb * sizeof(float), err);
		if (st == TG_OK)
			st = tg_route_receivers_rows(ctx, &v, acc, 0, nrows, receivers, err);
		tg_free(ctx, frac);
	}
	if (st == TG_OK && rb->units == TG_UNITS_SCA)
	{
		tg_grid_geometry g = strip_geometry(rb, row0, nrows);

		st = tg_to_sca(ctx, &g, acc, err);
	}
	return st;
}

/*
 * route_cpu.c — the routing of every cell: where its water goes.
 *
 * 1. The routing surface: the DEM, depression-filled (priority-flood,
 *    epsilon 0) unless the caller routes on the raw DEM.
 * 2. Cells with a lower neighbour drain by the routing's formula on the
 *    surface's gradients (tg_hydro.h).  Outlets with no lower neighbour pass
 *    their water off the raster.
 * 3. Flat cells (no lower neighbour, not outlets) are drained over the flat
 *    by Barnes, Lehman & Mulla (2014): a breadth-first gradient towards the
 *    flat's draining edge T, and one away from higher terrain A, combined as
 *    M = 2 T + (H - A) with H the largest A of the flat; water on a flat moves
 *    down M, which strictly decreases to the draining edge, so every flat that
 *    touches a draining cell drains.  Flats with no draining edge (only in an
 *    unfilled DEM) keep no direction.
 */
#include "dispatch/dispatch.h"
#include "runtime/cell_fifo.h"
#include "runtime/cell_list.h"
#include "hydro/hydro.h"
#include "runtime/runtime.h"
#include "runtime/wavefront.h"

#include <math.h>
#include <string.h>

void
tg_route_free(const tg_ctx *ctx, tg_route *r)
{
	tg_free(ctx, r->z);
	tg_free(ctx, r->d8);
	tg_free(ctx, r->frac);
	memset(r, 0, sizeof *r);
}

/* Neighbour k of cell (x, y), or -1 outside the raster. */
static inline int64_t
neighbour(int W, int H, int x, int y, int k)
{
	int			nx = x + tg_nbr_dx(k),
				ny = y + tg_nbr_dy(k);

	return (nx < 0 || ny < 0 || nx >= W || ny >= H) ? -1 : (int64_t) ny * W + nx;
}

/* ------------------------------------------------------------------------
 * Flats, on the call's threads, one flat at a time.  A flat (the flat cells
 * of one elevation, 8-connected) is resolved on its own: its two
 * breadth-first distances never leave it, so flats are independent tasks,
 * each a plain FIFO on one thread, with the locality of its own cells.  A
 * breadth-first distance does not depend on the order cells are visited in,
 * so neither do the results on the threads.  Flats are found by a
 * union-find in strips of rows that links the larger root under the
 * smaller (a cell's parent always comes before it), then joined across the
 * strips' edges.
 * ------------------------------------------------------------------------ */

/* Strips of rows of the union-find (their number changes no result). */
#define FLAT_STRIP_ROWS 256

typedef struct flat_job
{
	const double *z;
	const uint8_t *flat;
	int			W,
				H;
	int			above,
				below;			/* rows of z and flat beyond [0, H) that the seeds see (a band's) */
	int32_t    *parent;			/* union-find, then each flat cell's flat number */
	int64_t    *first;			/* per flat: where its cells start in cells[] (nflats + 1) */
	uint32_t   *cells;			/* the flats' cells, flat by flat, each in row-major order */
	uint8_t    *seed;			/* TG_SEED_DRAINS: a seed of T, TG_SEED_HIGHER: of A */
	struct flat_task *tasks;
	int32_t    *mask;			/* out: M, and T on the way */
	int32_t    *away;			/* A (before: each flat cell's root, while the flats are listed) */
	uint8_t    *queued[2];		/* in a large flat's FIFO, per distance (set on its cells only) */
} flat_job;

static inline int32_t
find_root(int32_t *parent, int32_t i)
{
	while (parent[i] != i)
	{
		parent[i] = parent[parent[i]];	/* path halving */
		i = parent[i];
	}
	return i;
}

static void
unite(int32_t *parent, int32_t a, int32_t b)
{
	int32_t		ra = find_root(parent, a),
				rb = find_root(parent, b);

	if (ra < rb)
		parent[rb] = ra;
	else if (rb < ra)
		parent[ra] = rb;
}

static inline bool
same_flat(const flat_job *j, size_t i, int64_t ni)
{
	return ni >= 0 && j->flat[ni] && j->z[ni] == j->z[i];
}

/* Union of the flat cells of a strip with their later neighbours in the strip. */
static tg_status
label_strip(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	flat_job   *j = arg;
	const int	y0 = (int) (task * FLAT_STRIP_ROWS),
				y1 = y0 + FLAT_STRIP_ROWS < j->H ? y0 + FLAT_STRIP_ROWS : j->H;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < j->W; x++)
		{
			const size_t i = (size_t) y * j->W + x;

			if (!j->flat[i])
				continue;
			for (int k = 0; k < 4; k++)		/* east, south-east, south, south-west */
			{
				const int64_t ni = neighbour(j->W, j->H, x, y, k);

				if (ni >= 0 && ni < (int64_t) y1 * j->W && same_flat(j, i, ni))
					unite(j->parent, (int32_t) i, (int32_t) ni);
			}
		}
	return TG_OK;
}

int64_t		tg_flat_strip_cells = 65536;
int			tg_flat_strip_rows = 64;

/* M = 2 T + (H - A), H the flat's largest A; undrained flat cells (T = 0) keep 0. */
static void
combine_flat(const flat_job *j, int64_t f)
{
	const uint32_t *cells = j->cells + j->first[f];
	const int64_t ncells = j->first[f + 1] - j->first[f];
	int32_t		height = 0;

	for (int64_t c = 0; c < ncells; c++)
		if (j->away[cells[c]] > height)
			height = j->away[cells[c]];
	for (int64_t c = 0; c < ncells; c++)
	{
		const uint32_t i = cells[c];

		j->mask[i] = tg_flat_mask_value(j->mask[i], j->away[i], height);
	}
}

/* ------------------------------------------------------------------------
 * Flat distances in strips of rows, on the call's threads (tg_flat_steps:
 * a large flat here, the flats that cross parts in parts.c).  Each distance
 * is the greatest fixed point of d = min(d, d(neighbour) + 1) under its
 * starting values, which any order of lowering reaches: Vincent's hybrid, as
 * in the fill.  A forward and a backward raster scan over the region (the
 * scans one thread would make, wavefront.h), then a FIFO of what the scans
 * left in strips of rows: each strip lowers its own rows, reading its
 * neighbours' facing rows from a copy taken between rounds, and strips whose
 * facing rows fell run again from their edges, until none fell.  The result
 * depends neither on the strips nor on the threads.
 * ------------------------------------------------------------------------ */
#define FAR TG_FLAT_FAR

typedef struct flat_strips
{
	const tg_flat_grid *g;
	int32_t		only;			/* the one flat taken, or -1: every flat */
	const tg_flat_lowered *lowered; /* NULL: every cell may lower a neighbour */
	int			x0,
				x1,
				y0,
				y1;				/* the region, inclusive */
	int			nstrips;
	int32_t    *facing;			/* per distance and strip: the row above it and the row below */
	bool	   *fell;			/* per distance and strip: its facing rows fell since the last copy */
	int64_t    *todo;			/* this round's tasks: distance * nstrips + strip */
	bool		first;			/* the first round: every cell may lower a neighbour */
} flat_strips;

/* The flat of cell i if the region takes it, else -1. */
static inline int32_t
taken(const flat_strips *s, size_t i)
{
	const int32_t id = s->g->id[i];

	return (s->only >= 0 ? id == s->only : id >= 0) ? id : -1;
}

static inline bool
in_flat(const tg_flat_grid *g, int x, int y, int32_t id)
{
	return x >= 0 && y >= 0 && x < g->W && y < g->H && g->id[(size_t) y * g->W + x] == id;
}

static void
flat_strip_rows(const flat_strips *s, int k, int *r0, int *r1)
{
	const int64_t rows = s->y1 - s->y0 + 1;

	*r0 = s->y0 + (int) (rows * k / s->nstrips);
	*r1 = s->y0 + (int) (rows * (k + 1) / s->nstrips);
}

/* d at (x, y) of flat id as the strip of rows [r0, r1) sees it: FAR off the flat, facing rows as copied. */
static inline int32_t
seen(const flat_strips *s, const int32_t *d, const int32_t *above, const int32_t *below, int r0, int r1,
	 int x, int y, int32_t id)
{
	if (!in_flat(s->g, x, y, id))
		return FAR;
	if (y < r0)
		return above[x - s->x0];
	if (y >= r1)
		return below[x - s->x0];
	return d[(size_t) y * s->g->W + x];
}

/*
 * Both distances over block b of chunk c of a raster scan (the cells before
 * a cell in the scan: left, up-left, up, up-right forward).
 */
static void
flat_scan_block(void *arg, const tg_wave *wave, int b, int c)
{
	static const int fwd[4][2] = {{-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
	const flat_strips *s = arg;
	const tg_flat_grid *g = s->g;
	int32_t    *towards = g->d[0],
			   *away = g->d[1];
	const int	dir = wave->backward ? -1 : 1;
	const size_t W = (size_t) g->W;
	int			r0,
				r1;

	tg_wave_rows(wave, c, &r0, &r1);
	for (int y = dir > 0 ? r0 : r1 - 1; dir > 0 ? y < r1 : y >= r0; y += dir)
	{
		int			c0,
					c1;

		tg_wave_cols(wave, b, r0, r1, y, &c0, &c1);
		for (int x = dir > 0 ? c0 : c1 - 1; dir > 0 ? x < c1 : x >= c0; x += dir)
		{
			const size_t i = (size_t) y * W + x;
			const int32_t id = taken(s, i);
			int32_t		t,
						a;

			if (id < 0)
				continue;
			t = towards[i];
			a = away[i];
			for (int k = 0; k < 4; k++)
			{
				const int	nx = x + dir * fwd[k][0],
							ny = y + dir * fwd[k][1];

				if (in_flat(g, nx, ny, id))
				{
					const size_t ni = (size_t) ny * W + nx;

					t = towards[ni] != FAR && towards[ni] + 1 < t ? towards[ni] + 1 : t;
					a = away[ni] != FAR && away[ni] + 1 < a ? away[ni] + 1 : a;
				}
			}
			towards[i] = t;
			away[i] = a;
		}
	}
}

static tg_status
flat_strip_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const flat_strips *s = arg;
	const tg_flat_grid *g = s->g;
	const int64_t t = s->todo[task];
	const int	pass = (int) (t / s->nstrips);
	const size_t W = (size_t) g->W,
				BW = (size_t) (s->x1 - s->x0 + 1);
	const int32_t *above = s->facing + 2 * (size_t) t * BW,
			   *below = above + BW;
	int32_t    *d = g->d[pass];
	uint8_t    *queued = g->queued[pass];
	cell_fifo	q = {NULL, 0, 0, 0};
	bool		ok = true;
	int			r0,
				r1;

	flat_strip_rows(s, (int) (t % s->nstrips), &r0, &r1);
	/* what may still fall: in the first round, what was lowered or else any cell; later, the edge rows the
	 * facing rows lower */
	for (size_t k = 0; s->first && s->lowered && k < s->lowered->n[pass] && ok; k++)
	{
		const uint32_t i = s->lowered->cells[pass][k];

		if (i >= (size_t) r0 * W && i < (size_t) r1 * W && !queued[i])
		{
			ok = fifo_push(ctx, &q, i);
			queued[i] = ok;
		}
	}
	for (int y = r0; y < r1 && !(s->first && s->lowered); y++)
	{
		if (!s->first && y != r0 && y != r1 - 1)
			continue;
		for (int x = s->x0; x <= s->x1; x++)
		{
			const size_t i = (size_t) y * W + x;
			const int32_t id = taken(s, i);
			bool		push = false;

			if (id < 0)
				continue;
			for (int k = 0; k < 8; k++)
			{
				const int	nx = x + tg_nbr_dx(k),
							ny = y + tg_nbr_dy(k);
				const int32_t dn = seen(s, d, above, below, r0, r1, nx, ny, id);

				if (ny < r0 || ny >= r1)
				{
					if (dn != FAR && dn + 1 < d[i])
					{
						d[i] = dn + 1;
						push = true;
					}
				}
				else if (s->first && d[i] != FAR && in_flat(g, nx, ny, id) && (dn == FAR || dn > d[i] + 1))
					push = true;
			}
			if (push && !queued[i] && ok)
			{
				ok = fifo_push(ctx, &q, (uint32_t) i);
				queued[i] = ok;
			}
		}
	}
	for (size_t steps = 1; ok && q.len > 0; steps++)
	{
		const uint32_t c = fifo_pop(&q);
		const int	x = (int) (c % W),
					y = (int) (c / W);
		const int32_t id = g->id[c];

		queued[c] = 0;
		if (steps % 65536 == 0 && tg_canceled(ctx))
			break;
		for (int k = 0; k < 8; k++)
		{
			const int	nx = x + tg_nbr_dx(k),
						ny = y + tg_nbr_dy(k);
			const size_t ni = (size_t) ny * W + nx;

			if (ny < r0 || ny >= r1 || !in_flat(g, nx, ny, id) || d[ni] <= d[c] + 1)
				continue;
			d[ni] = d[c] + 1;
			if (!queued[ni] && ok)
			{
				ok = fifo_push(ctx, &q, (uint32_t) ni);
				queued[ni] = ok;
			}
		}
	}
	while (q.len > 0)			/* left by a cancel or a failed push */
		queued[fifo_pop(&q)] = 0;
	fifo_free(ctx, &q);
	if (!ok)
		return tg_error_set(err, TG_ENOMEM, "could not grow a flat's queue");
	return tg_canceled(ctx) ? tg_error_set(err, TG_ECANCELED, "flow routing canceled") : TG_OK;
}

/* Task t's copy of its facing rows brought up to date; fell[t]: whether they fell. */
static tg_status
flat_facing_task(const tg_ctx *ctx, void *arg, int64_t t, tg_error *err)
{
	const flat_strips *s = arg;
	const size_t W = (size_t) s->g->W,
				BW = (size_t) (s->x1 - s->x0 + 1);
	const int32_t *d = s->g->d[t < s->nstrips ? 0 : 1];
	int32_t    *above = s->facing + 2 * (size_t) t * BW;
	int			r0,
				r1;
	bool		fell;

	flat_strip_rows(s, (int) (t % s->nstrips), &r0, &r1);
	fell = facing_row_refresh(above, r0 > s->y0 ? d + (r0 - 1) * W + s->x0 : NULL, BW * sizeof(int32_t));
	fell |= facing_row_refresh(above + BW, r1 <= s->y1 ? d + r1 * W + s->x0 : NULL, BW * sizeof(int32_t));
	s->fell[t] = fell;
	return TG_OK;
}

/* Copy every strip's facing rows; list the strips whose facing rows fell (in order). */
static tg_status
flat_strips_facing(const tg_ctx *ctx, flat_strips *s, int64_t *n, tg_error *err)
{
	tg_status	st = tg_parallel(ctx, 2 * (int64_t) s->nstrips, flat_facing_task, s, err);

	*n = 0;
	for (int64_t t = 0; st == TG_OK && t < 2 * s->nstrips; t++)
		if (s->fell[t])
			s->todo[(*n)++] = t;
	return st;
}

tg_status
tg_flat_steps(const tg_ctx *ctx, const tg_flat_grid *g, int32_t only, int x0, int x1, int y0, int y1,
			  const tg_flat_lowered *lowered, tg_error *err)
{
	flat_strips s = {.g = g, .only = only, .lowered = lowered, .x0 = x0, .x1 = x1, .y0 = y0, .y1 = y1};
	int			strips = tg_threads_wanted(ctx) * 4;
	const size_t BW = (size_t) (x1 - x0 + 1);
	tg_wave		wave;
	int64_t		n;
	tg_status	st;

	if (x1 < x0 || y1 < y0)
		return TG_OK;
	if (strips > (y1 - y0 + 1) / tg_flat_strip_rows)
		strips = (y1 - y0 + 1) / tg_flat_strip_rows;
	s.nstrips = strips > 1 ? strips : 1;
	s.facing = tg_alloc(ctx, 4 * (size_t) s.nstrips * BW * sizeof(int32_t));
	s.fell = tg_alloc(ctx, 2 * (size_t) s.nstrips * sizeof(bool));
	s.todo = tg_alloc(ctx, 2 * (size_t) s.nstrips * sizeof(int64_t));
	if (s.facing == NULL || s.fell == NULL || s.todo == NULL)
	{
		tg_free(ctx, s.facing);
		tg_free(ctx, s.fell);
		tg_free(ctx, s.todo);
		return tg_error_set(err, TG_ENOMEM, "could not allocate the strips of flats over %zu x %d cells",
							BW, y1 - y0 + 1);
	}
	/* both distances' raster scans, as one thread would make them; not for a few cells lowered */
	tg_wave_plan(ctx, &wave, x0, x1 + 1, y0, y1 + 1);
	st = lowered ? TG_OK : tg_wavefront(ctx, &wave, flat_scan_block, &s, err);
	wave.backward = true;
	if (st == TG_OK && !lowered)
		st = tg_wavefront(ctx, &wave, flat_scan_block, &s, err);
	/* the first round: every strip, from the scans' distances or the cells lowered */
	if (st == TG_OK)
		st = flat_strips_facing(ctx, &s, &n, err);
	for (n = 0; n < 2 * s.nstrips; n++)
		s.todo[n] = n;
	s.first = true;
	while (st == TG_OK && n > 0)
	{
		st = tg_parallel(ctx, n, flat_strip_task, &s, err);
		s.first = false;
		if (st == TG_OK)
			st = flat_strips_facing(ctx, &s, &n, err);
	}
	tg_free(ctx, s.facing);
	tg_free(ctx, s.fell);
	tg_free(ctx, s.todo);
	return st;
}

/*
 * Passes over a large flat's cells in tasks of TG_LIST_TASK cells: the start
 * (distances at their seeds or FAR, FIFO marks clear, the columns spanned),
 * the end (unreached cells to 0, the greatest distance away), and M.
 */
typedef enum { FLAT_START, FLAT_END, FLAT_MASK } flat_cells_pass;

typedef struct flat_cells_job
{
	const flat_job *j;
	const uint32_t *cells;
	int64_t		ncells;
	flat_cells_pass pass;
	int		   *x0;				/* per task: the least column, the greatest; */
	int		   *x1;
	int32_t    *height;			/* the greatest distance away */
	int32_t		flat_height;	/* FLAT_MASK: of the whole flat */
} flat_cells_job;

static tg_status
flat_cells_task(const tg_ctx *ctx, void *arg, int64_t t, tg_error *err)
{
	const flat_cells_job *fc = arg;
	const flat_job *j = fc->j;
	size_t		lo,
				hi;
	int			x0 = j->W,
				x1 = -1;
	int32_t		height = 0;

	tg_list_range((size_t) fc->ncells, t, &lo, &hi);
	for (size_t c = lo; c < hi; c++)
	{
		const uint32_t i = fc->cells[c];

		if (fc->pass == FLAT_START)
		{
			const int	x = (int) (i % j->W);

			x0 = x < x0 ? x : x0;
			x1 = x > x1 ? x : x1;
			j->mask[i] = (j->seed[i] & 1) ? 1 : FAR;
			j->away[i] = (j->seed[i] & 2) ? 1 : FAR;
			j->queued[0][i] = j->queued[1][i] = 0;
		}
		else if (fc->pass == FLAT_END)
		{
			j->mask[i] = j->mask[i] == FAR ? 0 : j->mask[i];	/* unreached */
			j->away[i] = j->away[i] == FAR ? 0 : j->away[i];
			height = j->away[i] > height ? j->away[i] : height;
		}
		else
			j->mask[i] = tg_flat_mask_value(j->mask[i], j->away[i], fc->flat_height);
	}
	fc->x0[t] = x0;
	fc->x1[t] = x1;
	fc->height[t] = height;
	return TG_OK;
}

/* Both distances of large flat f (its seeds marked in j->seed), then M. */
static tg_status
large_flat(const tg_ctx *ctx, const flat_job *j, int64_t f, tg_error *err)
{
	const uint32_t *cells = j->cells + j->first[f];
	const int64_t ncells = j->first[f + 1] - j->first[f];
	const int64_t ntasks = tg_list_tasks((size_t) ncells);
	const tg_flat_grid g = {j->W, j->H, j->parent, {j->mask, j->away}, {j->queued[0], j->queued[1]}};
	flat_cells_job fc = {j, cells, ncells, FLAT_START, tg_alloc(ctx, ntasks * sizeof(int)),
		tg_alloc(ctx, ntasks * sizeof(int)), tg_alloc(ctx, ntasks * sizeof(int32_t)), 0};
	int			x0 = j->W,
				x1 = -1;
	tg_status	st = TG_OK;

	if (fc.x0 == NULL || fc.x1 == NULL || fc.height == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the tasks of a flat of %lld cells",
						  (long long) ncells);
	if (st == TG_OK)
		st = tg_parallel(ctx, ntasks, flat_cells_task, &fc, err);
	for (int64_t t = 0; st == TG_OK && t < ntasks; t++)
	{
		x0 = fc.x0[t] < x0 ? fc.x0[t] : x0;
		x1 = fc.x1[t] > x1 ? fc.x1[t] : x1;
	}
	if (st == TG_OK)
		st = tg_flat_steps(ctx, &g, (int32_t) f, x0, x1, (int) (cells[0] / j->W),
							   (int) (cells[ncells - 1] / j->W), NULL, err);
	if (st == TG_OK)
	{
		fc.pass = FLAT_END;
		st = tg_parallel(ctx, ntasks, flat_cells_task, &fc, err);
	}
	for (int64_t t = 0; st == TG_OK && t < ntasks; t++)
		fc.flat_height = fc.height[t] > fc.flat_height ? fc.height[t] : fc.flat_height;
	if (st == TG_OK)
	{
		fc.pass = FLAT_MASK;
		st = tg_parallel(ctx, ntasks, flat_cells_task, &fc, err);
	}
	tg_free(ctx, fc.x0);
	tg_free(ctx, fc.x1);
	tg_free(ctx, fc.height);
	return st;
}

/* Breadth-first distances of a small flat from the seeds queued (d: 1 on them, 0 elsewhere). */
static void
walk_distances(const flat_job *j, int64_t f, int32_t *d, uint32_t *queue, int64_t tail)
{
	ptrdiff_t	off[8];
	int64_t		head = 0;

	for (int k = 0; k < 8; k++)
		off[k] = (ptrdiff_t) tg_nbr_dy(k) * j->W + tg_nbr_dx(k);
	while (head < tail)
	{
		const uint32_t c = queue[head++];
		const int	cx = (int) (c % j->W),
					cy = (int) (c / j->W);
		const int32_t next = d[c] + 1;
		const bool	inside = cx > 0 && cy > 0 && cx < j->W - 1 && cy < j->H - 1;

		for (int k = 0; k < 8; k++)
		{
			/* inside the raster, neighbours by offset; the same flat number is the same flat */
			const int64_t ni = inside ? (int64_t) (c + off[k]) : neighbour(j->W, j->H, cx, cy, k);

			if (ni >= 0 && j->parent[ni] == (int32_t) f && d[ni] == 0)
			{
				d[ni] = next;
				queue[tail++] = (uint32_t) ni;
			}
		}
	}
}

/* One distance of a small flat: pass 0 towards lower ground T, pass 1 away from higher A. */
static void
flat_distance(const flat_job *j, int64_t f, int pass, uint32_t *queue)
{
	const uint32_t *cells = j->cells + j->first[f];
	const int64_t ncells = j->first[f + 1] - j->first[f];
	int32_t    *d = pass == 0 ? j->mask : j->away;
	int64_t		nseeds = 0;

	for (int64_t c = 0; c < ncells; c++)
	{
		const uint32_t i = cells[c];

		d[i] = (j->seed[i] & (1 << pass)) ? 1 : 0;
		if (d[i])
			queue[nseeds++] = i;
	}
	walk_distances(j, f, d, queue, nseeds);
}

/* A task: consecutive small flats [f0, f1). */
typedef struct flat_task
{
	int64_t		f0,
				f1;
} flat_task;

static tg_status
flat_task_run(const tg_ctx *ctx, void *arg, int64_t t, tg_error *err)
{
	const flat_job *j = arg;
	const flat_task *task = &j->tasks[t];
	int64_t		largest = 1;
	uint32_t   *queue;

	for (int64_t f = task->f0; f < task->f1; f++)
		if (j->first[f + 1] - j->first[f] > largest)
			largest = j->first[f + 1] - j->first[f];
	queue = tg_alloc(ctx, (size_t) largest * sizeof(uint32_t));
	if (queue == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a flat's queue (%lld cells)",
							(long long) largest);
	for (int64_t f = task->f0; f < task->f1 && !tg_canceled(ctx); f++)
	{
		flat_distance(j, f, 0, queue);
		flat_distance(j, f, 1, queue);
		combine_flat(j, f);
	}
	tg_free(ctx, queue);
	return tg_canceled(ctx) ? tg_error_set(err, TG_ECANCELED, "flow routing canceled") : TG_OK;
}

/*
 * T and M start at 0; each flat cell its own set, -1 off flats; the seeds of
 * T (bit 0: beside a draining cell of equal elevation) and of A (bit 1:
 * beside a higher cell).
 */
static tg_status
start_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	flat_job   *j = arg;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < j->W; x++)
		{
			const size_t i = (size_t) y * j->W + x;
			uint8_t		seed = 0;

			if (j->mask)
				j->mask[i] = 0;
			j->parent[i] = j->flat[i] ? (int32_t) i : -1;
			for (int k = 0; k < 8 && j->flat[i]; k++)
			{
				const int	nx = x + tg_nbr_dx(k),
							ny = y + tg_nbr_dy(k);
				ptrdiff_t	ni;

				if (nx < 0 || nx >= j->W || ny < -j->above || ny >= j->H + j->below)
					continue;
				ni = (ptrdiff_t) ny * j->W + nx;
				if (!j->flat[ni] && j->z[ni] == j->z[i])
					seed |= TG_SEED_DRAINS;
				if (j->z[ni] > j->z[i])
					seed |= TG_SEED_HIGHER;
			}
			j->seed[i] = seed;
		}
	return TG_OK;
}

/*
 * Number the flats in the order of their first cells (their union-find
 * roots, the smallest index of each) and list their cells, flat by flat, each
 * in row-major order — in chunks of rows on the threads:
 *   roots:  each flat cell's root (into away[], free until the distances),
 *           from its parent's within the chunk, then across chunks; the
 *           roots of each chunk counted;
 *   number: the roots numbered chunk after chunk (a prefix over the chunks);
 *   label:  each cell takes its root's number, the flats' cells counted;
 *   list:   a flat within one chunk is written by that chunk's task alone;
 *           a flat over several chunks (the sea) gets each chunk's share
 *           counted first, so every chunk writes its cells at their place.
 * The numbering and the lists are those of one row-major pass.
 */
#define LIST_CHUNK_ROWS 64

typedef enum { LIST_ROOTS, LIST_RESOLVE, LIST_NUMBER, LIST_LABEL, LIST_COUNT_SPREAD, LIST_WRITE } list_pass;

typedef struct list_job
{
	flat_job   *j;
	int64_t		nchunks;
	int64_t    *chunk_flats;	/* roots per chunk, then the first flat number of each */
	int32_t    *first_chunk;	/* per flat: the chunk of its root, the first that holds its cells */
	int32_t    *last_chunk;		/* per flat: the last chunk that holds its cells */
	int64_t    *spread;			/* per flat over several chunks: its first chunk's entry in spread_at; -1 */
	int64_t    *spread_at;		/* per such flat, an entry per chunk it spans: count, then where the
								 * chunk's cells go */
	int64_t    *next;			/* per flat within one chunk: where its next cell goes */
	list_pass	pass;			/* what the chunk tasks do now */
} list_job;

/* The spread_at entry of flat f (over several chunks) in chunk c */
static inline int64_t *
spread_entry(const list_job *l, int32_t f, int64_t c)
{
	return &l->spread_at[l->spread[f] + c - l->first_chunk[f]];
}

static void
chunk_cells(const list_job *l, int64_t c, size_t *lo, size_t *hi)
{
	const int	H = l->j->H;
	const int64_t y0 = c * LIST_CHUNK_ROWS,
				y1 = y0 + LIST_CHUNK_ROWS < H ? y0 + LIST_CHUNK_ROWS : H;

	*lo = (size_t) y0 * l->j->W;
	*hi = (size_t) y1 * l->j->W;
}

/*
 * A cell's parent comes before it: within a chunk, the row-major pass finds
 * each cell's root or first ancestor in an earlier chunk from its parent's.
 */
static void
list_roots(const list_job *l, int64_t c, size_t lo, size_t hi)
{
	const flat_job *j = l->j;
	int64_t		roots = 0;

	for (size_t i = lo; i < hi; i++)
		if (j->flat[i])
		{
			const int32_t p = j->parent[i];

			j->away[i] = p == (int32_t) i ? p : (size_t) p >= lo ? j->away[p] : p;
			roots += p == (int32_t) i;
		}
	l->chunk_flats[c] = roots;
}

/*
 * The ancestors in earlier chunks followed to their roots.  Another chunk's
 * task may be rewriting the same entries, from an ancestor to the root: both
 * lead to the root, so each read is atomic and either value will do.
 */
static void
list_resolve(const list_job *l, int64_t c, size_t lo, size_t hi)
{
	const flat_job *j = l->j;

	for (size_t i = lo; i < hi; i++)
		if (j->flat[i] && (size_t) j->away[i] < lo)
		{
			int32_t		r = j->away[i],
						up;

			while ((up = __atomic_load_n(&j->away[r], __ATOMIC_RELAXED)) != r)
				r = up;
			__atomic_store_n(&j->away[i], r, __ATOMIC_RELAXED);
		}
}

static void
list_number(const list_job *l, int64_t c, size_t lo, size_t hi)
{
	const flat_job *j = l->j;
	int64_t		f = l->chunk_flats[c];

	for (size_t i = lo; i < hi; i++)
		if (j->flat[i] && j->away[i] == (int32_t) i)
		{
			l->first_chunk[f] = (int32_t) c;
			j->parent[i] = (int32_t) f++;
		}
}

/* Flat f has `cells` more cells, some in chunk c. */
static void
count_run(const list_job *l, int32_t f, int64_t cells, int64_t c)
{
	__atomic_add_fetch(&l->j->first[f + 1], cells, __ATOMIC_RELAXED);
	for (int32_t last = __atomic_load_n(&l->last_chunk[f], __ATOMIC_RELAXED); last < (int32_t) c;)
		if (__atomic_compare_exchange_n(&l->last_chunk[f], &last, (int32_t) c, true,
										__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
}

static void
list_label(const list_job *l, int64_t c, size_t lo, size_t hi)
{
	const flat_job *j = l->j;
	int32_t		run_flat = -1;	/* the counts go out a run of one flat at a time */
	int64_t		run = 0;

	for (size_t i = lo; i < hi; i++)
		if (j->flat[i])
		{
			const int32_t f = j->parent[j->away[i]];	/* roots hold their numbers now */

			if (j->away[i] != (int32_t) i)
				j->parent[i] = f;
			if (f != run_flat)
			{
				if (run > 0)
					count_run(l, run_flat, run, c);
				run_flat = f;
				run = 0;
			}
			run++;
		}
	if (run > 0)
		count_run(l, run_flat, run, c);
}

static void
list_count_spread(const list_job *l, int64_t c, size_t lo, size_t hi)
{
	const flat_job *j = l->j;

	for (size_t i = lo; i < hi; i++)
		if (j->flat[i] && l->spread[j->parent[i]] >= 0)
			(*spread_entry(l, j->parent[i], c))++;
}

static void
list_write(const list_job *l, int64_t c, size_t lo, size_t hi)
{
	const flat_job *j = l->j;

	for (size_t i = lo; i < hi; i++)
		if (j->flat[i])
		{
			const int32_t f = j->parent[i];
			int64_t    *at = l->spread[f] >= 0 ? spread_entry(l, f, c) : &l->next[f];

			j->cells[(*at)++] = (uint32_t) i;
		}
}

static tg_status
list_task(const tg_ctx *ctx, void *arg, int64_t c, tg_error *err)
{
	const list_job *l = arg;
	size_t		lo,
				hi;

	chunk_cells(l, c, &lo, &hi);
	switch (l->pass)
	{
		case LIST_ROOTS:
			list_roots(l, c, lo, hi);
			break;
		case LIST_RESOLVE:
			list_resolve(l, c, lo, hi);
			break;
		case LIST_NUMBER:
			list_number(l, c, lo, hi);
			break;
		case LIST_LABEL:
			list_label(l, c, lo, hi);
			break;
		case LIST_COUNT_SPREAD:
			list_count_spread(l, c, lo, hi);
			break;
		case LIST_WRITE:
			list_write(l, c, lo, hi);
			break;
	}
	return TG_OK;
}

/* One pass of the listing over every chunk, on the threads. */
static tg_status
list_pass_run(const tg_ctx *ctx, list_job *l, list_pass pass, tg_error *err)
{
	l->pass = pass;
	return tg_parallel(ctx, l->nchunks, list_task, l, err);
}

static tg_status
list_flats(const tg_ctx *ctx, flat_job *j, int64_t *nflats_out, tg_error *err)
{
	list_job	l = {.j = j, .nchunks = (j->H + LIST_CHUNK_ROWS - 1) / LIST_CHUNK_ROWS};
	int64_t		nflats = 0,
				nentries = 0;
	tg_status	st;

	l.chunk_flats = tg_alloc(ctx, (size_t) l.nchunks * sizeof(int64_t));
	if (l.chunk_flats == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not list the flats");
	st = list_pass_run(ctx, &l, LIST_ROOTS, err);
	if (st == TG_OK)
		st = list_pass_run(ctx, &l, LIST_RESOLVE, err);
	for (int64_t c = 0; st == TG_OK && c < l.nchunks; c++)
	{
		const int64_t roots = l.chunk_flats[c];

		l.chunk_flats[c] = nflats;
		nflats += roots;
	}
	if (st == TG_OK)
	{
		const size_t per_flat = (size_t) (nflats ? nflats : 1);

		j->first = tg_alloc(ctx, (size_t) (nflats + 1) * sizeof(int64_t));
		l.first_chunk = tg_alloc(ctx, per_flat * sizeof(int32_t));
		l.last_chunk = tg_alloc(ctx, per_flat * sizeof(int32_t));
		l.spread = tg_alloc(ctx, per_flat * sizeof(int64_t));
		l.next = tg_alloc(ctx, per_flat * sizeof(int64_t));
		if (j->first == NULL || l.first_chunk == NULL || l.last_chunk == NULL || l.spread == NULL ||
			l.next == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not list the flats (%lld flats)", (long long) nflats);
	}
	if (st == TG_OK)
		st = list_pass_run(ctx, &l, LIST_NUMBER, err);
	if (st == TG_OK)
	{
		memset(j->first, 0, (size_t) (nflats + 1) * sizeof(int64_t));
		memset(l.last_chunk, 0, (size_t) (nflats ? nflats : 1) * sizeof(int32_t));
		st = list_pass_run(ctx, &l, LIST_LABEL, err);
	}
	if (st == TG_OK)
	{
		/* where each flat starts; the flats whose cells are in more than one chunk */
		for (int64_t f = 0; f < nflats; f++)
		{
			const int64_t spans = l.last_chunk[f] - l.first_chunk[f] + 1;

			j->first[f + 1] += j->first[f];
			l.next[f] = j->first[f];
			l.spread[f] = spans > 1 ? nentries : -1;
			nentries += spans > 1 ? spans : 0;
		}
		j->cells = tg_alloc(ctx, (size_t) (j->first[nflats] ? j->first[nflats] : 1) * sizeof(uint32_t));
		l.spread_at = tg_alloc(ctx, (size_t) (nentries ? nentries : 1) * sizeof(int64_t));
		if (j->cells == NULL || l.spread_at == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not list the flats (%lld cells)",
							  (long long) j->first[nflats]);
	}
	if (st == TG_OK && nentries > 0)
	{
		memset(l.spread_at, 0, (size_t) nentries * sizeof(int64_t));
		st = list_pass_run(ctx, &l, LIST_COUNT_SPREAD, err);
		for (int64_t f = 0; st == TG_OK && f < nflats; f++)
		{
			int64_t		at = j->first[f];

			if (l.spread[f] < 0)
				continue;
			for (int64_t c = l.first_chunk[f]; c <= l.last_chunk[f]; c++)
			{
				int64_t    *count = spread_entry(&l, (int32_t) f, c);
				const int64_t here = *count;

				*count = at;
				at += here;
			}
		}
	}
	if (st == TG_OK)
		st = list_pass_run(ctx, &l, LIST_WRITE, err);
	tg_free(ctx, l.chunk_flats);
	tg_free(ctx, l.first_chunk);
	tg_free(ctx, l.last_chunk);
	tg_free(ctx, l.spread);
	tg_free(ctx, l.spread_at);
	tg_free(ctx, l.next);
	*nflats_out = nflats;
	return st;
}

/* Tasks of consecutive small flats of about equal cells; large flats come after, in strips. */
static int64_t
plan_flat_tasks(const tg_ctx *ctx, flat_job *j, int64_t nflats)
{
	const int64_t want = (int64_t) tg_threads_wanted(ctx) * 8;
	const int64_t per = j->first[nflats] / want > 4096 ? j->first[nflats] / want : 4096;
	int64_t		ntasks = 0,
				f0 = 0,
				cells = 0;

	for (int64_t f = 0; f < nflats; f++)
	{
		const int64_t size = j->first[f + 1] - j->first[f];

		if (size >= tg_flat_strip_cells)
		{
			if (f0 < f)
				j->tasks[ntasks++] = (flat_task) {f0, f};
			f0 = f + 1;
			cells = 0;
		}
		else if ((cells += size) >= per)
		{
			j->tasks[ntasks++] = (flat_task) {f0, f + 1};
			f0 = f + 1;
			cells = 0;
		}
	}
	if (f0 < nflats)
		j->tasks[ntasks++] = (flat_task) {f0, nflats};
	return ntasks;
}

/* What a flat_job allocated (z, flat and mask are its caller's). */
static void
flat_job_free(const tg_ctx *ctx, flat_job *j)
{
	tg_free(ctx, j->away);
	tg_free(ctx, j->parent);
	tg_free(ctx, j->first);
	tg_free(ctx, j->cells);
	tg_free(ctx, j->seed);
	tg_free(ctx, j->tasks);
	tg_free(ctx, j->queued[0]);
	tg_free(ctx, j->queued[1]);
}

/*
 * Number and list the flats of j (z, flat, W, H, the rows beyond; parent,
 * away and seed allocated, mask NULL or to be zeroed): each flat cell's
 * seeds and its flat's number in parent[], the flats' cells in first[] and
 * cells[].
 */
static tg_status
label_flats(const tg_ctx *ctx, flat_job *j, int64_t *nflats, tg_error *err)
{
	tg_status	st = tg_parallel_rows(ctx, j->W, j->H, start_rows, j, err);

	if (st == TG_OK)
		st = tg_parallel(ctx, (j->H + FLAT_STRIP_ROWS - 1) / FLAT_STRIP_ROWS, label_strip, j, err);
	/* join across the strips' edges: each strip's last row with the next one's first */
	for (int y = FLAT_STRIP_ROWS - 1; st == TG_OK && y + 1 < j->H; y += FLAT_STRIP_ROWS)
		for (int x = 0; x < j->W; x++)
		{
			const size_t i = (size_t) y * j->W + x;

			if (!j->flat[i])
				continue;
			for (int k = 1; k < 4; k++)		/* south-east, south, south-west */
			{
				const int64_t ni = neighbour(j->W, j->H, x, y, k);

				if (same_flat(j, i, ni))
					unite(j->parent, (int32_t) i, (int32_t) ni);
			}
		}
	return st == TG_OK ? list_flats(ctx, j, nflats, err) : st;
}

/*
 * The flat mask M (0 off flats).  flat[i]: i is a flat cell; a cell next to a
 * flat cell of equal elevation that is not flat itself drains.
 */
static tg_status
flat_mask(const tg_ctx *ctx, const double *z, const uint8_t *flat, int W, int H,
		  int32_t *mask, tg_error *err)
{
	const size_t n = (size_t) W * H;
	flat_job	j;
	int64_t		nflats = 0;
	tg_status	st = TG_OK;

	memset(&j, 0, sizeof j);
	j.z = z;
	j.flat = flat;
	j.W = W;
	j.H = H;
	j.mask = mask;
	if (n > INT32_MAX)
		return tg_error_set(err, TG_ELIMIT, "flat resolution handles at most %d cells", INT32_MAX);
	j.away = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t));
	j.parent = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t));
	j.seed = tg_alloc(ctx, n ? n : 1);
	if (!j.away || !j.parent || !j.seed)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate flat-resolution buffers (%zu cells)", n);
	tg_phase(ctx, "flats: labels");
	if (st == TG_OK)
		st = label_flats(ctx, &j, &nflats, err);
	tg_phase(ctx, "flats: distances");
	if (st == TG_OK && nflats > 0)
	{
		/* at most a task per flat; the large flats' FIFO marks, one per distance */
		j.tasks = tg_alloc(ctx, (size_t) nflats * sizeof(flat_task));
		j.queued[0] = tg_alloc(ctx, n);
		j.queued[1] = tg_alloc(ctx, n);
		if (j.tasks == NULL || j.queued[0] == NULL || j.queued[1] == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not plan the flats' resolution (%lld flats)",
							  (long long) nflats);
	}
	if (st == TG_OK && nflats > 0)
	{
		const int64_t ntasks = plan_flat_tasks(ctx, &j, nflats);

		st = tg_parallel(ctx, ntasks, flat_task_run, &j, err);
		for (int64_t f = 0; st == TG_OK && f < nflats; f++)
			if (j.first[f + 1] - j.first[f] >= tg_flat_strip_cells)
				st = large_flat(ctx, &j, f, err);
	}
	flat_job_free(ctx, &j);
	return st;
}

/*
 * Flat cells: valid, no valid neighbour strictly lower, not an outlet (the
 * edge or next to nodata), in rows [y0, y1).  tg_cpu_route_surface finds them
 * in its gradient pass by the same rule; the routing in strips' tests hold
 * the two together.
 */
static void
flat_cells_rows(const double *z, int W, int H, int y0, int y1, uint8_t *flat)
{
	int			x,
				y,
				k;

	for (y = y0; y < y1; y++)
		for (x = 0; x < W; x++)
		{
			size_t		i = (size_t) y * W + x;
			bool		lower = false;

			flat[i] = 0;
			if (isnan(z[i]))
				continue;
			for (k = 0; k < 8 && !lower; k++)
			{
				int64_t		ni = neighbour(W, H, x, y, k);

				lower = ni >= 0 && z[ni] < z[i];
			}
			flat[i] = !lower && !tg_cpu_is_outlet(z, W, H, x, y);
		}
}

typedef struct flat_flags_job
{
	const double *z;
	int			W,
				H;
	uint8_t    *flat;
} flat_flags_job;

static tg_status
flat_flags_task(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const flat_flags_job *f = arg;

	flat_cells_rows(f->z, f->W, f->H, y0, y1, f->flat);
	return TG_OK;
}

/*
 * The flats of rows [y0, y0 + nrows) as those rows alone join them, labelled
 * and listed on the threads as the whole grid's (label_flats, its seeds
 * seeing the rows beyond); a flat crosses when a cell of it in the first or
 * last row has a flat neighbour of equal elevation beyond.
 */
tg_status
tg_crossing_flats(const tg_ctx *ctx, const double *z, int W, int count, int y0, int nrows,
				  tg_crossing_flat_fn keep, void *arg, tg_error *err)
{
	const size_t n = (size_t) W * count,
				own = (size_t) W * nrows,
				off = (size_t) W * y0;
	uint8_t    *flat = tg_alloc(ctx, n ? n : 1);
	flat_job	j = {.z = z + off, .W = W, .H = nrows, .above = y0, .below = count - y0 - nrows};
	flat_flags_job fc = {z, W, count, flat};
	int64_t		nflats = 0,
				ncrossing = 0,
			   *number = NULL;	/* per flat: its number among the crossing flats, or -1 */
	tg_status	st = TG_OK;

	j.flat = flat ? flat + off : NULL;
	j.parent = tg_alloc(ctx, (own ? own : 1) * sizeof(int32_t));
	j.away = tg_alloc(ctx, (own ? own : 1) * sizeof(int32_t));
	j.seed = tg_alloc(ctx, own ? own : 1);
	if (flat == NULL || j.parent == NULL || j.away == NULL || j.seed == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the flats of %zu cells", own);
	else if (own > INT32_MAX)
		st = tg_error_set(err, TG_ELIMIT, "flat resolution handles at most %d cells", INT32_MAX);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, W, count, flat_flags_task, &fc, err);
	if (st == TG_OK)
		st = label_flats(ctx, &j, &nflats, err);
	if (st == TG_OK && (number = tg_alloc(ctx, (size_t) (nflats ? nflats : 1) * sizeof(int64_t))) == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate %lld flats", (long long) nflats);
	if (st == TG_OK)
	{
		for (int64_t f = 0; f < nflats; f++)
			number[f] = -1;
		/* the first and last rows' flat neighbours beyond */
		for (int y = 0; y < nrows; y += (nrows > 1 ? nrows - 1 : 1))
			for (int x = 0; x < W; x++)
			{
				const size_t i = (size_t) y * W + x;

				if (!j.flat[i])
					continue;
				for (int k = 0; k < 8; k++)
				{
					const int	nx = x + tg_nbr_dx(k),
								ny = y0 + y + tg_nbr_dy(k);
					size_t		ni;

					if (nx < 0 || nx >= W || ny < 0 || ny >= count || (ny >= y0 && ny < y0 + nrows))
						continue;
					ni = (size_t) ny * W + nx;
					if (flat[ni] && z[ni] == j.z[i])
						number[j.parent[i]] = INT64_MAX;	/* it crosses: numbered below */
				}
			}
		for (int64_t f = 0; f < nflats; f++)
			if (number[f] == INT64_MAX)
				number[f] = ncrossing++;
	}
	/* their cells in raster order */
	for (size_t i = 0; st == TG_OK && i < own; i++)
	{
		if (j.flat[i] && number[j.parent[i]] >= 0)
			st = keep(arg, off + i, j.seed[i], number[j.parent[i]], err);
		if (i % ((size_t) 1 << 22) == 0 && st == TG_OK && tg_canceled(ctx))
			st = tg_error_set(err, TG_ECANCELED, "flow routing canceled");
	}
	tg_free(ctx, flat);
	flat_job_free(ctx, &j);
	tg_free(ctx, number);
	return st;
}

tg_status
tg_cpu_route_build(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
				   tg_route *r, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	double	   *z;
	tg_status	st;

	if (p->fill)
	{
		const tg_fill_params fp = {TG_FILL_PRIORITY_FLOOD, 0, TG_PT_64BF};

		tg_phase(ctx, "fill");
		z = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
		st = z ? tg_cpu_fill(ctx, dem, &fp, NAN, z, err)
			: tg_error_set(err, TG_ENOMEM, "could not allocate %zu bytes for the filled DEM",
						   n * sizeof(double));
	}
	else
	{
		tg_phase(ctx, "decode");
		st = tg_cpu_decode(ctx, dem, &z, err);
	}
	if (st != TG_OK)
	{
		tg_free(ctx, z);
		return st;
	}
	tg_phase(ctx, "directions");
	return tg_cpu_route_surface(ctx, z, dem->width, dem->height, p, NULL, r, err);
}

/* The two per-cell passes of tg_cpu_route_surface, on row tasks. */
typedef struct surface_job
{
	const tg_flow_params *p;
	tg_route   *r;
	uint8_t    *flat;
	const int32_t *mask;
} surface_job;

tg_cell_kind
tg_cpu_route_cell(const double *z, int W, int H, int x, int y, const tg_flow_params *p, const double dist[8],
				  uint8_t *d8, float share[8])
{
	const size_t i = (size_t) y * W + x;
	double		drop[8],
				g[8];
	int			lower = 0;

	*d8 = TG_NO_DIRECTION;
	if (isnan(z[i]))
		return TG_CELL_NODATA;
	for (int k = 0; k < 8; k++)
	{
		int64_t		ni = neighbour(W, H, x, y, k);

		drop[k] = (ni < 0 || isnan(z[ni])) ? 0.0 : z[i] - z[ni];
		g[k] = drop[k] / dist[k];
		lower |= g[k] > 0;
	}
	/* outlets pass their water off the raster */
	if (!lower)
		return tg_cpu_is_outlet(z, W, H, x, y) ? TG_CELL_OUTLET : TG_CELL_FLAT;
	*d8 = (uint8_t) tg_d8_choose(g);
	if (share)
		tg_flow_shares(p->routing, p->exponent, false, drop, dist, share);
	return TG_CELL_SLOPE;
}

/* Slopes on the surface; flat cells as flat_cells_rows finds them. */
static tg_status
gradient_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const surface_job *j = arg;
	tg_route   *r = j->r;
	const int	W = r->width,
				H = r->height;
	const size_t n = (size_t) W * H;

	/* the rows' shares start at 0, on the thread that writes them (not one memset of 8 planes) */
	if (r->frac)
		for (int k = 0; k < 8; k++)
			memset(r->frac + (size_t) k * n + (size_t) y0 * W, 0, (size_t) (y1 - y0) * W * sizeof(float));
	for (int y = y0; y < y1; y++)
	{
		double		dx,
					dy,
					dist[8];

		tg_row_spacing(&j->p->geom, y, &dx, &dy);
		tg_nbr_distances(dx, dy, dist);
		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;
			float		share[8];
			const tg_cell_kind kind = tg_cpu_route_cell(r->z, W, H, x, y, j->p, dist, &r->d8[i],
													   r->frac ? share : NULL);

			j->flat[i] = kind == TG_CELL_FLAT;
			if (kind == TG_CELL_SLOPE && r->frac)
				for (int k = 0; k < 8; k++)
					r->frac[(size_t) k * n + i] = share[k];
		}
	}
	return TG_OK;
}

void
tg_cpu_flat_route_cell(const double *z, const uint8_t *flat, const int32_t *mask, int W, int H, int x, int y,
					   const tg_flow_params *p, uint8_t *d8, float share[8])
{
	const size_t i = (size_t) y * W + x;
	double		dist[8],
				drop[8],
				g[8];

	tg_flat_distances(dist);
	for (int k = 0; k < 8; k++)
	{
		int64_t		ni = neighbour(W, H, x, y, k);
		int32_t		m;

		drop[k] = 0;
		g[k] = 0;
		if (ni < 0 || z[ni] != z[i])
			continue;
		m = flat[ni] ? mask[ni] : 0;
		if (flat[ni] && m == 0)
			continue;			/* an undrained flat cannot receive */
		drop[k] = (double) (mask[i] - m);
		g[k] = drop[k] / dist[k];
	}
	*d8 = (uint8_t) tg_d8_choose(g);
	if (share)
		tg_flow_shares(p->routing, p->exponent, true, drop, dist, share);
}

/* Flat cells drain down the mask, in cell units. */
static tg_status
flat_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const surface_job *j = arg;
	tg_route   *r = j->r;
	const int	W = r->width,
				H = r->height;
	const size_t n = (size_t) W * H;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;
			float		share[8];

			if (!j->flat[i] || j->mask[i] == 0)
				continue;
			tg_cpu_flat_route_cell(r->z, j->flat, j->mask, W, H, x, y, j->p, &r->d8[i], r->frac ? share : NULL);
			if (r->frac)
				for (int k = 0; k < 8; k++)
					r->frac[(size_t) k * n + i] = share[k];
		}
	return TG_OK;
}

tg_status
tg_cpu_route_surface(const tg_ctx *ctx, double *z, int W, int H, const tg_flow_params *p,
					 const tg_flat_masks *given, tg_route *r, tg_error *err)
{
	const size_t n = (size_t) W * H;
	const bool	multiple = p->routing != TG_ROUTE_D8;
	uint8_t    *flat = NULL;
	int32_t    *mask = NULL;
	surface_job j;
	tg_status	st;

	memset(r, 0, sizeof *r);
	r->width = W;
	r->height = H;
	r->routing = p->routing;
	r->z = z;

	r->d8 = tg_alloc(ctx, n ? n : 1);
	flat = tg_alloc(ctx, n ? n : 1);
	mask = tg_alloc(ctx, (n ? n : 1) * sizeof(int32_t));
	if (multiple)
		r->frac = tg_alloc(ctx, (n ? 8 * n : 1) * sizeof(float));
	if (r->d8 == NULL || flat == NULL || mask == NULL || (multiple && r->frac == NULL))
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate flow-routing buffers (%zu cells)", n);
		goto fail;
	}
	j.p = p;
	j.r = r;
	j.flat = flat;
	j.mask = mask;
	st = tg_parallel_rows(ctx, W, H, gradient_rows, &j, err);
	if (st == TG_OK)
		st = flat_mask(ctx, r->z, flat, W, H, mask, err);
	if (st != TG_OK)
		goto fail;
	if (given)
		for (size_t g = 0; g < given->count; g++)
			mask[given->cell[g]] = given->mask[g];
	tg_phase(ctx, "flats: flow");
	st = tg_parallel_rows(ctx, W, H, flat_rows, &j, err);
	if (st != TG_OK)
		goto fail;
	tg_free(ctx, flat);
	tg_free(ctx, mask);
	return TG_OK;

fail:
	tg_free(ctx, flat);
	tg_free(ctx, mask);
	tg_route_free(ctx, r);
	return st;
}

/* ------------------------------------------------------------------------
 * Codes and shares out of a routing
 * ------------------------------------------------------------------------ */
typedef struct directions_job
{
	const tg_route *r;
	const tg_flow_params *p;
	const double *acc;
	uint8_t    *d8;
	float	   *frac;
} directions_job;

static tg_status
direction_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	const directions_job *j = arg;
	const tg_route *r = j->r;
	const size_t n = (size_t) r->width * r->height;
	const tg_route_view v = tg_cpu_route_view(r, j->p->threshold);

	for (size_t i = (size_t) y0 * r->width; i < (size_t) y1 * r->width; i++)
	{
		const bool	valid = !isnan(r->z[i]);

		if (j->d8)
			j->d8[i] = !valid ? 255 : r->d8[i] == TG_NO_DIRECTION ? 0 : (uint8_t) (1u << r->d8[i]);
		if (j->frac)
			for (int k = 0; k < 8; k++)
				j->frac[(size_t) k * n + i] = !valid ? NAN :
					(float) tg_route_share(&v, i, k, j->acc ? j->acc[i] : 0.0);
	}
	return TG_OK;
}

/*
 * Codes and shares out of a routing, through the same share formula as the
 * accumulation (fdd8 resolved with its accumulation; acc may be NULL for the
 * other routings).
 */
tg_status
tg_cpu_export_directions(const tg_ctx *ctx, const tg_route *r, const tg_flow_params *p,
						 const double *acc, uint8_t *d8, float *frac, tg_error *err)
{
	directions_job j = {r, p, acc, d8, frac};

	return tg_parallel_rows(ctx, r->width, r->height, direction_rows, &j, err);
}

tg_status
tg_cpu_flow_direction(const tg_ctx *ctx, const tg_band *dem, const tg_flow_params *p,
					  uint8_t *d8, float *frac, tg_error *err)
{
	const size_t n = (size_t) dem->width * dem->height;
	double	   *acc = NULL;
	tg_route	route;
	bool		kept;
	tg_status	st;

	st = tg_cpu_route_get(ctx, dem, p, &route, &kept, err);
	if (st != TG_OK)
		return st;
	/* fdd8 turns to d8 where its accumulation (in cells) reaches the threshold */
	if (p->routing == TG_ROUTE_FDD8)
	{
		acc = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
		st = acc ? tg_cpu_accumulate(ctx, &route, p, NULL, TG_ACC_INDEGREE, acc, err)
			: tg_error_set(err, TG_ENOMEM, "could not allocate the accumulation");
	}
	if (st == TG_OK)
		st = tg_cpu_export_directions(ctx, &route, p, acc, d8, frac, err);
	tg_free(ctx, acc);
	tg_cpu_route_put(ctx, &route, kept);
	return st;
}

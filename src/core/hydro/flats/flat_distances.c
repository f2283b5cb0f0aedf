/*
 * flat_distances.c — the two breadth-first distances over each flat
 * (towards its draining edge T, away from higher ground A; Barnes, Lehman &
 * Mulla 2014) and the mask M = 2 T + (H - A) they make, on the call's
 * threads: small flats each a plain FIFO walk on one thread, many to a task;
 * large flats one at a time in blocks of rows (tg_flat_steps, also the
 * flats that cross parts).  A breadth-first distance does not depend on the
 * order cells are visited in, so neither do the results on the threads.
 */
#include "hydro/flats/flat_job.h"

#include <string.h>

int64_t		tg_flat_large_cells = 65536;
int			tg_flat_block_rows = 64;

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
 * Flat distances in blocks of rows, on the call's threads (tg_flat_steps:
 * a flat too large for one thread).  Each distance
 * is the greatest fixed point of d = min(d, d(neighbour) + 1) under its
 * starting values, which any order of lowering reaches: Vincent's hybrid, as
 * in the fill.  A forward and a backward raster scan over the region (the
 * scans one thread would make, tg_wavefront), then a FIFO of what the scans
 * left in blocks of rows: each block lowers its own rows, reading its
 * neighbours' facing rows from a copy taken between rounds, and blocks whose
 * facing rows fell run again from their edges, until none fell.  The result
 * depends neither on the blocks nor on the threads.
 * ------------------------------------------------------------------------ */

typedef struct flat_blocks
{
	const tg_flat_grid *g;
	int32_t		only;			/* the one flat taken, or -1: every flat */
	int			x0,
				x1,
				y0,
				y1;				/* the region, inclusive */
	int			nblocks;
	int32_t    *facing;			/* per distance and block: the row above it and the row below */
	bool	   *fell;			/* per distance and block: its facing rows fell since the last copy */
	int64_t    *todo;			/* this round's tasks: distance * nblocks + block */
	bool		first;			/* the first round: every cell may lower a neighbour */
} flat_blocks;

/* The flat of cell i if the region takes it, else -1. */
static inline int32_t
taken(const flat_blocks *s, size_t i)
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
flat_block_rows(const flat_blocks *s, int k, int *r0, int *r1)
{
	const int64_t rows = s->y1 - s->y0 + 1;

	*r0 = s->y0 + (int) (rows * k / s->nblocks);
	*r1 = s->y0 + (int) (rows * (k + 1) / s->nblocks);
}

/* d at (x, y) of flat id as the block of rows [r0, r1) sees it: FAR off the flat, facing rows as copied. */
static inline int32_t
seen(const flat_blocks *s, const int32_t *d, const int32_t *above, const int32_t *below, int r0, int r1,
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
	const flat_blocks *s = arg;
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
flat_block_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const flat_blocks *s = arg;
	const tg_flat_grid *g = s->g;
	const int64_t t = s->todo[task];
	const int	pass = (int) (t / s->nblocks);
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

	flat_block_rows(s, (int) (t % s->nblocks), &r0, &r1);
	/* what may still fall: in the first round any cell; later, the edge rows the facing rows lower */
	for (int y = r0; y < r1; y++)
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
	const flat_blocks *s = arg;
	const size_t W = (size_t) s->g->W,
				BW = (size_t) (s->x1 - s->x0 + 1);
	const int32_t *d = s->g->d[t < s->nblocks ? 0 : 1];
	int32_t    *above = s->facing + 2 * (size_t) t * BW;
	int			r0,
				r1;
	bool		fell;

	flat_block_rows(s, (int) (t % s->nblocks), &r0, &r1);
	fell = facing_row_refresh(above, r0 > s->y0 ? d + (r0 - 1) * W + s->x0 : NULL, BW * sizeof(int32_t));
	fell |= facing_row_refresh(above + BW, r1 <= s->y1 ? d + r1 * W + s->x0 : NULL, BW * sizeof(int32_t));
	s->fell[t] = fell;
	return TG_OK;
}

/* Copy every block's facing rows; list the blocks whose facing rows fell (in order). */
static tg_status
flat_blocks_facing(const tg_ctx *ctx, flat_blocks *s, int64_t *n, tg_error *err)
{
	tg_status	st = tg_parallel(ctx, 2 * (int64_t) s->nblocks, flat_facing_task, s, err);

	*n = 0;
	for (int64_t t = 0; st == TG_OK && t < 2 * s->nblocks; t++)
		if (s->fell[t])
			s->todo[(*n)++] = t;
	return st;
}

tg_status
tg_flat_steps(const tg_ctx *ctx, const tg_flat_grid *g, int32_t only, int x0, int x1, int y0, int y1,
			  tg_error *err)
{
	flat_blocks s = {.g = g, .only = only, .x0 = x0, .x1 = x1, .y0 = y0, .y1 = y1};
	int			blocks = tg_threads_wanted(ctx) * 4;
	const size_t BW = (size_t) (x1 - x0 + 1);
	tg_wave		wave;
	int64_t		n;
	tg_status	st;

	if (x1 < x0 || y1 < y0)
		return TG_OK;
	if (blocks > (y1 - y0 + 1) / tg_flat_block_rows)
		blocks = (y1 - y0 + 1) / tg_flat_block_rows;
	s.nblocks = blocks > 1 ? blocks : 1;
	s.facing = tg_alloc(ctx, 4 * (size_t) s.nblocks * BW * sizeof(int32_t));
	s.fell = tg_alloc(ctx, 2 * (size_t) s.nblocks * sizeof(bool));
	s.todo = tg_alloc(ctx, 2 * (size_t) s.nblocks * sizeof(int64_t));
	if (s.facing == NULL || s.fell == NULL || s.todo == NULL)
	{
		tg_free(ctx, s.facing);
		tg_free(ctx, s.fell);
		tg_free(ctx, s.todo);
		return tg_error_set(err, TG_ENOMEM, "could not allocate the blocks of flats over %zu x %d cells",
							BW, y1 - y0 + 1);
	}
	/* both distances' raster scans, as one thread would make them */
	tg_wave_plan(ctx, &wave, x0, x1 + 1, y0, y1 + 1);
	st = tg_wavefront(ctx, &wave, flat_scan_block, &s, err);
	wave.backward = true;
	if (st == TG_OK)
		st = tg_wavefront(ctx, &wave, flat_scan_block, &s, err);
	/* the first round: every block, from the scans' distances */
	if (st == TG_OK)
		st = flat_blocks_facing(ctx, &s, &n, err);
	for (n = 0; n < 2 * s.nblocks; n++)
		s.todo[n] = n;
	s.first = true;
	while (st == TG_OK && n > 0)
	{
		st = tg_parallel(ctx, n, flat_block_task, &s, err);
		s.first = false;
		if (st == TG_OK)
			st = flat_blocks_facing(ctx, &s, &n, err);
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
tg_status
tg_flat_resolve_large(const tg_ctx *ctx, const flat_job *j, int64_t f, tg_error *err)
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
							   (int) (cells[ncells - 1] / j->W), err);
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
			const int64_t ni = inside ? (int64_t) (c + off[k]) : tg_nbr_cell(j->W, j->H, cx, cy, k);

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

tg_status
tg_flat_task_run(const tg_ctx *ctx, void *arg, int64_t t, tg_error *err)
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

/* Tasks of consecutive small flats of about equal cells; large flats come after, in blocks. */
int64_t
tg_flat_plan_tasks(const tg_ctx *ctx, flat_job *j, int64_t nflats)
{
	const int64_t want = (int64_t) tg_threads_wanted(ctx) * 8;
	const int64_t per = j->first[nflats] / want > 4096 ? j->first[nflats] / want : 4096;
	int64_t		ntasks = 0,
				f0 = 0,
				cells = 0;

	for (int64_t f = 0; f < nflats; f++)
	{
		const int64_t size = j->first[f + 1] - j->first[f];

		if (size >= tg_flat_large_cells)
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

/*
 * flat_masks.c — the flat mask of a routing surface (tg_flat_mask: the
 * flats labelled, their distances walked, M made), and the flats that reach
 * over the edges of a strip or a part's rows (tg_cpu_crossing_flats), whose
 * distances the seams solve over the whole grid.
 */
#include "hydro/fill/fill.h"
#include "hydro/flats/flat_job.h"

#include <math.h>
#include <string.h>

/*
 * The flat mask M (0 off flats).  flat[i]: i is a flat cell; a cell next to a
 * flat cell of equal elevation that is not flat itself drains.
 */
tg_status
tg_flat_mask(const tg_ctx *ctx, const double *z, const uint8_t *flat, int W, int H,
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
		st = tg_flat_label(ctx, &j, &nflats, err);
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
		const int64_t ntasks = tg_flat_plan_tasks(ctx, &j, nflats);

		st = tg_parallel(ctx, ntasks, tg_flat_task_run, &j, err);
		for (int64_t f = 0; st == TG_OK && f < nflats; f++)
			if (j.first[f + 1] - j.first[f] >= tg_flat_large_cells)
				st = tg_flat_resolve_large(ctx, &j, f, err);
	}
	tg_flat_job_free(ctx, &j);
	return st;
}

/*
 * Flat cells: valid, no valid neighbour strictly lower, not an outlet (the
 * edge or next to nodata), in rows [y0, y1).  tg_cpu_route_surface finds them
 * in its gradient pass by the same rule; the routing in strips' tests hold
 * the two together.  Off the edge, the three tests are one: every neighbour
 * at least as high (a comparison with NaN is false).
 */
static void
flat_cells_rows(const double *z, int W, int H, int y0, int y1, uint8_t *flat)
{
	for (int y = y0; y < y1; y++)
	{
		const size_t row = (size_t) y * W;

		if (y == 0 || y == H - 1)
		{
			memset(flat + row, 0, (size_t) W);
			continue;
		}
		flat[row] = 0;
		flat[row + W - 1] = 0;
		for (int x = 1; x < W - 1; x++)
		{
			const double *c = z + row + x,
					   *up = c - W,
					   *down = c + W;
			const double v = *c;

			flat[row + x] = (up[-1] >= v) & (up[0] >= v) & (up[1] >= v) & (c[-1] >= v) & (c[1] >= v) &
				(down[-1] >= v) & (down[0] >= v) & (down[1] >= v);
		}
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

/* Crossing cells listed in blocks of rows: each block's count, then each block writes at its place. */
#define LIST_BLOCK_CELLS 65536

typedef struct crossing_job
{
	const flat_job *j;
	const int64_t *number;		/* per flat: its number among the crossing flats, or -1 */
	size_t	   *at;				/* per block: its count, then where its cells start */
	int			rows;			/* per block */
	tg_crossing_list *list;
} crossing_job;

static inline bool
crossing(const crossing_job *c, size_t i)
{
	return c->j->flat[i] && c->number[c->j->parent[i]] >= 0;
}

static tg_status
count_crossing(const tg_ctx *ctx, void *arg, int64_t b, tg_error *err)
{
	const crossing_job *c = arg;
	const int	y0 = (int) b * c->rows,
				y1 = y0 + c->rows < c->j->H ? y0 + c->rows : c->j->H;
	size_t		count = 0;

	for (size_t i = (size_t) y0 * c->j->W; i < (size_t) y1 * c->j->W; i++)
		count += crossing(c, i);
	c->at[b] = count;
	return TG_OK;
}

static tg_status
list_crossing(const tg_ctx *ctx, void *arg, int64_t b, tg_error *err)
{
	const crossing_job *c = arg;
	const flat_job *j = c->j;
	const int	y0 = (int) b * c->rows,
				y1 = y0 + c->rows < j->H ? y0 + c->rows : j->H;
	size_t		k = c->at[b];

	for (size_t i = (size_t) y0 * j->W; i < (size_t) y1 * j->W; i++)
		if (crossing(c, i))
		{
			c->list->cell[k] = (uint32_t) i;
			c->list->seed[k] = j->seed[i];
			c->list->flat[k++] = (int32_t) c->number[j->parent[i]];
		}
	return TG_OK;
}

/* The crossing flats' cells of j into list, in raster order, on the threads. */
static tg_status
list_crossing_cells(const tg_ctx *ctx, const flat_job *j, const int64_t *number, tg_crossing_list *list,
					tg_error *err)
{
	const int	rows = (int) (LIST_BLOCK_CELLS / j->W > 0 ? LIST_BLOCK_CELLS / j->W : 1);
	const int64_t nblocks = (j->H + rows - 1) / rows;
	crossing_job c = {j, number, tg_alloc(ctx, (size_t) (nblocks ? nblocks : 1) * sizeof(size_t)), rows, list};
	size_t		total = 0;
	tg_status	st;

	if (c.at == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not list the crossing flats of %d rows", j->H);
	st = tg_parallel(ctx, nblocks, count_crossing, &c, err);
	for (int64_t b = 0; st == TG_OK && b < nblocks; b++)
	{
		const size_t count = c.at[b];

		c.at[b] = total;
		total += count;
	}
	if (st == TG_OK)
	{
		list->cell = tg_alloc(ctx, (total ? total : 1) * sizeof(uint32_t));
		list->seed = tg_alloc(ctx, total ? total : 1);
		list->flat = tg_alloc(ctx, (total ? total : 1) * sizeof(int32_t));
		if (list->cell == NULL || list->seed == NULL || list->flat == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not list %zu cells of crossing flats", total);
	}
	if (st == TG_OK)
		st = tg_parallel(ctx, nblocks, list_crossing, &c, err);
	if (st == TG_OK)
		list->n = total;
	tg_free(ctx, c.at);
	return st;
}

void
tg_crossing_list_free(const tg_ctx *ctx, tg_crossing_list *list)
{
	tg_free(ctx, list->cell);
	tg_free(ctx, list->seed);
	tg_free(ctx, list->flat);
	memset(list, 0, sizeof *list);
}

/*
 * The flats of rows [y0, y0 + nrows) as those rows alone join them, labelled
 * and listed on the threads as the whole grid's (label_flats, its seeds
 * seeing the rows beyond); a flat crosses when a cell of it in the first or
 * last row has a flat neighbour of equal elevation beyond.
 */
tg_status
tg_cpu_crossing_flats(const tg_ctx *ctx, const double *z, int W, int count, int y0, int nrows,
					  tg_crossing_list *list, tg_error *err)
{
	const size_t n = (size_t) W * count,
				own = (size_t) W * nrows,
				off = (size_t) W * y0;
	uint8_t    *flat = tg_alloc(ctx, n ? n : 1);
	flat_job	j = {.z = z + off, .W = W, .H = nrows, .above = y0, .below = count - y0 - nrows,
	.numbers_only = true};
	flat_flags_job fc = {z, W, count, flat};
	int64_t		nflats = 0,
				ncrossing = 0,
			   *number = NULL;	/* per flat: its number among the crossing flats, or -1 */
	tg_status	st = TG_OK;

	memset(list, 0, sizeof *list);
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
		st = tg_flat_label(ctx, &j, &nflats, err);
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
		list->nflats = ncrossing;
	}
	if (st == TG_OK)
		st = list_crossing_cells(ctx, &j, number, list, err);
	if (st != TG_OK)
		tg_crossing_list_free(ctx, list);
	tg_free(ctx, flat);
	tg_flat_job_free(ctx, &j);
	tg_free(ctx, number);
	return st;
}

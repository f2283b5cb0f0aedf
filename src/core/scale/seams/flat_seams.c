/*
 * flat_seams.c — flats that cross seams, one algorithm for strips and parts.
 *
 * A flat (Barnes, Lehman & Mulla 2014) drains down its mask, which needs two
 * breadth-first distances over the whole flat: towards its draining edge and
 * away from higher ground.  A flat that crosses a seam has its cells in
 * several strips or parts, so its distances are taken over its cells alone,
 * kept compact: each strip's (or part's) crossing cells as
 * tg_crossing_flats gives them, in raster order, with their columns, seeds
 * and flat numbers; each row's first cell; and, per cell, which of its eight
 * neighbours are crossing cells too and where the first of those above and
 * below it lie.  Two flat cells side by side are of one elevation (neither
 * has a lower neighbour), so of one flat: a cell's neighbours on its flat
 * are found without a search or a comparison, and the memory and the work
 * are bounded by the crossing cells, never by the grid.
 *
 * The flats joined across the seams are independent: a first walk (from
 * the seeds, every one at distance 1) takes each joined flat as a plain
 * breadth-first search on one thread, many flats at once, so its cost is
 * the crossing cells, whatever the flats' widths.  A joined flat of at
 * least tg_seam_flat_bulk_cells cells (the sea, a wide plain), and every
 * later walk (from the cells a seam lowered: a part's rounds, what its
 * neighbours hand over across the boundary, at any distances), goes level by
 * level on the call's threads instead (Dial's buckets of unit steps): each
 * level's cells lower their neighbours of the same flat to the next level
 * with one compare-and-swap, a small level on the calling thread alone.
 * Either way a cell ends at exactly its distance, whatever the threads.
 * Where the call's policy sends a step to the GPU, the first walk runs
 * there instead (cuda/seam_flats.cu), level by level over every flat at
 * once: the same distances.
 *
 * The strips of one server hold every crossing cell, so one walk gives the
 * whole flats' distances; a part holds its own, and walks again from what
 * each round lowers until no boundary value changes (scale/parts/).
 */
#include "scale/seams/seams.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define SEARCH_TASK_CELLS 65536	/* cells of joined flats per task of searches */
#define INLINE_FRONT 4096		/* a level this small is walked on the calling thread */

size_t		tg_seam_flat_bulk_cells = (size_t) 1 << 21;

static void *
keep(const tg_seam_flats *f, size_t bytes)
{
	return f->mem.alloc(bytes ? bytes : 1, f->mem.arg);
}

static void
let_go(const tg_seam_flats *f, void *p)
{
	if (p != NULL)
		f->mem.free(p, f->mem.arg);
}

/*
 * Room for `need` cells in every per-cell array (doubled as needed, the cells
 * kept: copied on the call's threads, which also fault the fresh pages in).
 */
static bool
room(const tg_ctx *ctx, tg_seam_flats *f, size_t need)
{
	size_t		cap = f->cap ? f->cap : 4096;
	int32_t    *row,
			   *col,
			   *flat;
	uint8_t    *seed;

	if (need <= f->cap)
		return true;
	while (cap < need)
		cap *= 2;
	row = keep(f, cap * sizeof(int32_t));
	col = keep(f, cap * sizeof(int32_t));
	flat = keep(f, cap * sizeof(int32_t));
	seed = keep(f, cap);
	if (row == NULL || col == NULL || flat == NULL || seed == NULL)
	{
		let_go(f, row);
		let_go(f, col);
		let_go(f, flat);
		let_go(f, seed);
		return false;
	}
	if (f->n)
	{
		tg_parallel_memcpy(ctx, row, f->row, f->n * sizeof(int32_t));
		tg_parallel_memcpy(ctx, col, f->col, f->n * sizeof(int32_t));
		tg_parallel_memcpy(ctx, flat, f->flat, f->n * sizeof(int32_t));
		tg_parallel_memcpy(ctx, seed, f->seed, f->n);
	}
	let_go(f, f->row);
	let_go(f, f->col);
	let_go(f, f->flat);
	let_go(f, f->seed);
	f->row = row;
	f->col = col;
	f->flat = flat;
	f->seed = seed;
	f->cap = cap;
	return true;
}

void
tg_seam_flats_init(tg_seam_flats *f, const tg_allocator *mem, int W)
{
	memset(f, 0, sizeof *f);
	f->mem = *mem;
	f->W = W;
}

typedef struct append_job
{
	tg_seam_flats *f;
	const tg_crossing_list *list;
	int			row0;
	int32_t		flat0;
} append_job;

static tg_status
append_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const append_job *a = arg;
	tg_seam_flats *f = a->f;
	const size_t W = (size_t) f->W;
	size_t		lo,
				hi;

	tg_list_range(a->list->n, task, &lo, &hi);
	for (size_t k = lo; k < hi; k++)
	{
		f->row[f->n + k] = a->row0 + (int32_t) (a->list->cell[k] / W);
		f->col[f->n + k] = (int32_t) (a->list->cell[k] % W);
		f->seed[f->n + k] = a->list->seed[k];
		f->flat[f->n + k] = a->flat0 + a->list->flat[k];
	}
	return TG_OK;
}

tg_status
tg_seam_flats_append(const tg_ctx *ctx, tg_seam_flats *f, int row0, const tg_crossing_list *list, tg_error *err)
{
	append_job	a = {f, list, row0, (int32_t) f->nflats};
	tg_status	st;

	if (list->n == 0)
		return TG_OK;
	if (list->n >= NONE - 1 - f->n || list->nflats >= INT32_MAX - (int64_t) f->nflats)
		return tg_error_set(err, TG_ELIMIT, "%zu cells of flats cross seams, more than one walk takes",
							f->n + list->n);
	/* the walk links neighbours by position: cells in raster order, each once */
	if (row0 < 0 || (f->n > 0 && row0 + (int64_t) (list->cell[0] / f->W) <= f->row[f->n - 1]))
		return tg_error_set(err, TG_EDATA, "cells of flats across seams out of raster order (row %d)", row0);
	if (!room(ctx, f, f->n + list->n))
		return tg_error_set(err, TG_ENOMEM, "could not keep the %zu cells of flats across seams", f->n + list->n);
	st = tg_parallel(ctx, tg_list_tasks(list->n), append_task, &a, err);
	if (st == TG_OK)
	{
		f->n += list->n;
		f->nflats += (size_t) list->nflats;
	}
	return st;
}

tg_status
tg_seam_flats_seam(const tg_ctx *ctx, tg_seam_flats *f, int row, tg_error *err)
{
	if (f->nseams == f->seam_cap)
	{
		const size_t cap = f->seam_cap ? 2 * f->seam_cap : 64;
		int32_t    *seams = keep(f, cap * sizeof(int32_t));

		if (seams == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not keep the seams of flats");
		if (f->nseams)
			memcpy(seams, f->seams, f->nseams * sizeof(int32_t));
		let_go(f, f->seams);
		f->seams = seams;
		f->seam_cap = cap;
	}
	f->seams[f->nseams++] = row;
	return TG_OK;
}

/* ------------------------------------------------------------------------
 * Links: each row's first cell, and each cell's first neighbour above and below
 * ------------------------------------------------------------------------ */

typedef struct link_job
{
	tg_seam_flats *f;
} link_job;

/* In row y, the first cell at or after column x (the row's end where none). */
static uint32_t
row_cell_at(const tg_seam_flats *f, int y, int x, uint32_t from)
{
	uint32_t	j = from;

	while (j < f->row_start[y + 1] && f->col[j] < x)
		j++;
	return j;
}

/* Bits of the neighbours (ESRI k) that are cells too, around column x, from row y's cell j on. */
static uint8_t
present(const tg_seam_flats *f, int y, int x, uint32_t j, const int k[3])
{
	uint8_t		bits = 0;

	for (; j < f->row_start[y + 1] && f->col[j] <= x + 1; j++)
		bits |= (uint8_t) (1u << k[f->col[j] - x + 1]);
	return bits;
}

static tg_status
link_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	static const int above_k[3] = {5, 6, 7},
				below_k[3] = {3, 2, 1};
	tg_seam_flats *f = ((const link_job *) arg)->f;

	for (int y = y0; y < y1; y++)
	{
		uint32_t	above = y > 0 ? f->row_start[y - 1] : 0,
					below = y + 1 < f->H ? f->row_start[y + 1] : 0;

		/* columns rise along a row: each pointer only moves on */
		for (uint32_t c = f->row_start[y]; c < f->row_start[y + 1]; c++)
		{
			const int	x = f->col[c];
			uint8_t		bits = 0;

			if (c > f->row_start[y] && f->col[c - 1] == x - 1)
				bits |= 1u << 4;
			if (c + 1 < f->row_start[y + 1] && f->col[c + 1] == x + 1)
				bits |= 1u << 0;
			if (y > 0)
			{
				above = row_cell_at(f, y - 1, x - 1, above);
				bits |= present(f, y - 1, x, above, above_k);
			}
			if (y + 1 < f->H)
			{
				below = row_cell_at(f, y + 1, x - 1, below);
				bits |= present(f, y + 1, x, below, below_k);
			}
			f->up[c] = y > 0 ? above : NONE;
			f->down[c] = y + 1 < f->H ? below : NONE;
			f->nbr[c] = bits;
		}
	}
	return TG_OK;
}

/* In the ascending v[a .. b), the first index whose value is key or more (b: none), by bisection. */
static uint32_t
first_not_below(const int32_t *v, uint32_t a, uint32_t b, int32_t key)
{
	while (a < b)
	{
		const uint32_t m = a + (b - a) / 2;

		if (v[m] < key)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/* Each row's first cell (the cells come in raster order). */
static tg_status
row_start_rows(const tg_ctx *ctx, void *arg, int y0, int y1, tg_error *err)
{
	tg_seam_flats *f = ((const link_job *) arg)->f;

	for (int y = y0; y < y1; y++)
		f->row_start[y] = first_not_below(f->row, 0, (uint32_t) f->n, y);
	return TG_OK;
}

/* The distances at the seeds: 1, TG_FLAT_FAR elsewhere. */
static tg_status
seed_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	tg_seam_flats *f = ((const link_job *) arg)->f;
	size_t		lo,
				hi;

	tg_list_range(f->n, task, &lo, &hi);
	for (size_t c = lo; c < hi; c++)
	{
		f->d[0][c] = f->seed[c] & TG_SEED_DRAINS ? 1 : TG_FLAT_FAR;
		f->d[1][c] = f->seed[c] & TG_SEED_HIGHER ? 1 : TG_FLAT_FAR;
	}
	return TG_OK;
}

static uint32_t
root_of(uint32_t *parent, uint32_t v)
{
	while (parent[v] != v)
	{
		parent[v] = parent[parent[v]];
		v = parent[v];
	}
	return v;
}

/* Each flat number's joined flat (the smallest number joined to it): a seam's facing cells join theirs. */
static void
join_flats(tg_seam_flats *f)
{
	uint32_t   *parent = f->joined;

	for (size_t k = 0; k < f->nflats; k++)
		parent[k] = (uint32_t) k;
	for (size_t sm = 0; sm < f->nseams; sm++)
	{
		const int	y = f->seams[sm];

		for (uint32_t c = f->row_start[y]; y > 0 && y < f->H && c < f->row_start[y + 1]; c++)
		{
			uint32_t	j = f->up[c];

			for (int k = 5; k <= 7; k++)
				if (f->nbr[c] & (1u << k))
				{
					const uint32_t a = root_of(parent, (uint32_t) f->flat[c]),
								b = root_of(parent, (uint32_t) f->flat[j++]);

					parent[a > b ? a : b] = a < b ? a : b;
				}
		}
	}
	for (size_t k = 0; k < f->nflats; k++)
		parent[k] = root_of(parent, (uint32_t) k);
}

tg_status
tg_seam_flats_link(const tg_ctx *ctx, tg_seam_flats *f, int H, tg_error *err)
{
	const size_t n = f->n;
	link_job	j = {f};
	tg_status	st;

	if (n > 0 && f->row[n - 1] >= H)
		return tg_error_set(err, TG_EDATA, "a cell of flats across seams beyond the last row (%d of %d)",
							f->row[n - 1], H);
	f->H = H;
	f->row_start = keep(f, ((size_t) H + 1) * sizeof(uint32_t));
	f->up = keep(f, n * sizeof(uint32_t));
	f->down = keep(f, n * sizeof(uint32_t));
	f->nbr = keep(f, n);
	f->d[0] = keep(f, n * sizeof(int32_t));
	f->d[1] = keep(f, n * sizeof(int32_t));
	f->joined = keep(f, f->nflats * sizeof(uint32_t));
	if (!f->row_start || !f->up || !f->down || !f->nbr || !f->d[0] || !f->d[1] || !f->joined)
		return tg_error_set(err, TG_ENOMEM, "could not link %zu cells of flats across seams", n);
	f->row_start[H] = (uint32_t) n;
	st = tg_parallel_rows(ctx, f->W, H, row_start_rows, &j, err);
	if (st == TG_OK)
		st = tg_parallel_rows(ctx, f->W, H, link_rows, &j, err);
	if (st == TG_OK)
		join_flats(f);
	if (st == TG_OK)
		st = tg_parallel(ctx, tg_list_tasks(n), seed_task, &j, err);
	/* the walks need neither: a seed starts at 1, and a neighbour is found by its bit */
	let_go(f, f->row);
	let_go(f, f->seed);
	f->row = NULL;
	f->seed = NULL;
	return st;
}

/* The neighbours of cell c on its flat into nb (at most 8): the cells its bits name. */
static int
neighbours(const tg_seam_flats *f, uint32_t c, uint32_t nb[8])
{
	return tg_crossing_neighbours(f->nbr, f->up, f->down, c, nb);
}

/* ------------------------------------------------------------------------
 * The walk, level by level
 * ------------------------------------------------------------------------ */

typedef struct walk_job
{
	const tg_seam_flats *f;
	int32_t    *d;
	int32_t		level;			/* of the cells in front */
	const uint32_t *front;
	size_t		nfront;
	uint32_t   *next;			/* the cells lowered to level + 1 */
	size_t		nnext;
} walk_job;

/* d[j] = min(d[j], v) once, whatever the threads; true when this call lowered it. */
static inline bool
lower_to(int32_t *d, uint32_t j, int32_t v)
{
	int32_t		cur = __atomic_load_n(&d[j], __ATOMIC_RELAXED);

	while (cur > v)
		if (__atomic_compare_exchange_n(&d[j], &cur, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return true;
	return false;
}

static tg_status
walk_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	walk_job   *w = arg;
	tg_cell_batch b;
	size_t		lo,
				hi;

	tg_batch_init(&b, w->next, &w->nnext);
	tg_list_range(w->nfront, task, &lo, &hi);
	for (size_t k = lo; k < hi; k++)
	{
		const uint32_t c = w->front[k];
		uint32_t	nb[8];
		int			count;

		if (w->d[c] != w->level)
			continue;			/* lowered further since it was listed: walked from there */
		count = neighbours(w->f, c, nb);
		for (int q = 0; q < count; q++)
			if (lower_to(w->d, nb[q], w->level + 1))
				tg_batch_add(&b, nb[q]);
	}
	tg_batch_flush(&b);
	return TG_OK;
}

static int
cmp_key(const void *a, const void *b)
{
	const uint64_t x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/* Seeds by (distance, cell), where their distances span more values than there are seeds. */
static tg_status
sort_seeds_wide(const tg_ctx *ctx, const int32_t *d, uint32_t *seeds, size_t n, tg_error *err)
{
	uint64_t   *key = tg_alloc(ctx, n * sizeof(uint64_t));

	if (key == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not sort %zu cells of flats", n);
	for (size_t i = 0; i < n; i++)
		key[i] = (uint64_t) (uint32_t) d[seeds[i]] << 32 | seeds[i];
	qsort(key, n, sizeof *key, cmp_key);
	for (size_t i = 0; i < n; i++)
		seeds[i] = (uint32_t) key[i];
	tg_free(ctx, key);
	return TG_OK;
}

/*
 * Seeds in the order of their distances, by counting where the distances
 * span at most as many values as there are seeds: the walk takes them a
 * distance at a time, and the distances it leaves do not depend on the
 * order within one (a level's front lowers the same cells in any order).
 */
static tg_status
sort_seeds(const tg_ctx *ctx, const int32_t *d, uint32_t *seeds, size_t n, tg_error *err)
{
	int32_t		lo = d[seeds[0]],
				hi = lo;
	size_t	   *start;
	uint32_t   *sorted;
	size_t		range;

	for (size_t i = 1; i < n; i++)
	{
		lo = d[seeds[i]] < lo ? d[seeds[i]] : lo;
		hi = d[seeds[i]] > hi ? d[seeds[i]] : hi;
	}
	if (lo == hi)
		return TG_OK;
	range = (size_t) ((int64_t) hi - lo) + 1;
	if (range > n)
		return sort_seeds_wide(ctx, d, seeds, n, err);
	start = tg_alloc(ctx, (range + 1) * sizeof(size_t));
	sorted = tg_alloc(ctx, n * sizeof(uint32_t));
	if (start == NULL || sorted == NULL)
	{
		tg_free(ctx, start);
		tg_free(ctx, sorted);
		return tg_error_set(err, TG_ENOMEM, "could not sort %zu cells of flats over %zu distances", n, range);
	}
	memset(start, 0, (range + 1) * sizeof(size_t));
	for (size_t i = 0; i < n; i++)
		start[d[seeds[i]] - lo + 1]++;
	for (size_t v = 1; v <= range; v++)
		start[v] += start[v - 1];
	for (size_t i = 0; i < n; i++)
		sorted[start[d[seeds[i]] - lo]++] = seeds[i];
	memcpy(seeds, sorted, n * sizeof(uint32_t));
	tg_free(ctx, start);
	tg_free(ctx, sorted);
	return TG_OK;
}

typedef struct seeds_job
{
	const int32_t *d;
	uint32_t   *list;
	size_t		n;
	size_t		cells;
	const tg_seam_flats *left;	/* NULL, or only the cells with a neighbour farther than one step on */
} seeds_job;

/*
 * The cells a distance has reached (every seed, before the first walk), or
 * those of them that the scans left with a neighbour too far (where the walk
 * goes on from).
 */
static tg_status
seeds_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	seeds_job  *s = arg;
	tg_cell_batch b;
	size_t		lo,
				hi;

	tg_batch_init(&b, s->list, &s->n);
	tg_list_range(s->cells, task, &lo, &hi);
	for (size_t c = lo; c < hi; c++)
		if (s->d[c] != TG_FLAT_FAR)
		{
			uint32_t	nb[8];
			const int	count = s->left ? neighbours(s->left, (uint32_t) c, nb) : 0;
			int			q = 0;

			while (q < count && s->d[nb[q]] <= s->d[c] + 1)
				q++;
			if (s->left == NULL || q < count)
				tg_batch_add(&b, (uint32_t) c);
		}
	tg_batch_flush(&b);
	return TG_OK;
}

/*
 * Distance p walked from `seeds` (their distances set, any order; sorted
 * here) to every cell it lowers; front: room for every cell and every seed,
 * next: for every cell.
 */
static tg_status
walk(const tg_ctx *ctx, tg_seam_flats *f, int p, uint32_t *seeds, size_t nseeds, uint32_t *front, uint32_t *next,
	 tg_error *err)
{
	walk_job	w = {f, f->d[p], 0, front, 0, next, 0};
	size_t		taken = 0;
	tg_status	st = TG_OK;

	if (nseeds == 0)
		return TG_OK;
	st = sort_seeds(ctx, f->d[p], seeds, nseeds, err);
	w.level = f->d[p][seeds[0]];
	while (st == TG_OK && (taken < nseeds || w.nfront > 0))
	{
		/* the seeds at this level join the cells the level before lowered */
		while (taken < nseeds && f->d[p][seeds[taken]] <= w.level)
			if (f->d[p][seeds[taken++]] == w.level)
				front[w.nfront++] = seeds[taken - 1];
		if (w.nfront == 0)
		{
			w.level = f->d[p][seeds[taken]];
			continue;
		}
		w.nnext = 0;
		if (w.nfront <= INLINE_FRONT)
			st = walk_task(ctx, &w, 0, err);	/* one task holds it: no hand-over to the threads */
		else
			st = tg_parallel(ctx, tg_list_tasks(w.nfront), walk_task, &w, err);
		if (st == TG_OK && tg_canceled(ctx))
			st = tg_error_set(err, TG_ECANCELED, "flow routing canceled");
		/* the cells lowered become the next front */
		memcpy(front, next, w.nnext * sizeof(uint32_t));
		w.nfront = w.nnext;
		w.level++;
		if ((w.level & 63) == 0)
			tg_phase_progress(ctx, (p + (double) w.level / (w.level + 64)) / 2);
	}
	return st;
}

/* ------------------------------------------------------------------------
 * The first walk, joined flat by joined flat
 * ------------------------------------------------------------------------ */

typedef struct search_job
{
	const tg_seam_flats *f;
	int32_t    *d;
	uint32_t   *room;			/* per joined flat (its smallest flat number): its cells' place in queue */
	const uint32_t *seed_end;	/* per joined flat: where its seeds end in seeds (they start at the last's end) */
	const uint32_t *seeds;
	uint32_t   *queue;
} search_job;

static inline uint32_t
members(const search_job *s, size_t r)
{
	return s->room[r + 1] - s->room[r];
}

/* The cells of each joined flat counted (into room[r + 1]), a run of one flat at a time. */
static tg_status
count_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const search_job *s = arg;
	const tg_seam_flats *f = s->f;
	size_t		lo,
				hi;

	tg_list_range(f->n, task, &lo, &hi);
	for (size_t c = lo; c < hi;)
	{
		const int32_t flat = f->flat[c];
		const size_t run0 = c;

		while (c < hi && f->flat[c] == flat)
			c++;
		__atomic_fetch_add(&s->room[f->joined[flat] + 1], (uint32_t) (c - run0), __ATOMIC_RELAXED);
	}
	return TG_OK;
}

/*
 * A breadth-first search over one joined flat from its seeds, all at one
 * distance and every other cell of it TG_FLAT_FAR: each cell joins the queue
 * once, so its room is the flat's cells.
 */
static void
search(const tg_seam_flats *f, int32_t *d, const uint32_t *seeds, size_t nseeds, uint32_t *queue)
{
	size_t		head = 0,
				tail = 0;

	for (size_t k = 0; k < nseeds || head < tail; k++)
	{
		const uint32_t c = k < nseeds ? seeds[k] : queue[head++];
		const int32_t next = d[c] + 1;
		uint32_t	nb[8];
		const int	count = neighbours(f, c, nb);

		for (int q = 0; q < count; q++)
			if (d[nb[q]] == TG_FLAT_FAR)
			{
				d[nb[q]] = next;
				queue[tail++] = nb[q];
			}
	}
}

/* The joined flats whose room begins in this task's share of the cells, each searched on its own. */
static tg_status
search_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const search_job *s = arg;
	const size_t nf = s->f->nflats,
				lo = (size_t) task * SEARCH_TASK_CELLS;
	size_t		r,
				a = 0,
				b = nf;

	/* the first joined flat whose room begins at lo or after */
	while (a < b)
	{
		const size_t m = a + (b - a) / 2;

		if (s->room[m] < lo)
			a = m + 1;
		else
			b = m;
	}
	for (r = a; r < nf && s->room[r] < lo + SEARCH_TASK_CELLS; r++)
	{
		const uint32_t first = r > 0 ? s->seed_end[r - 1] : 0;

		if (members(s, r) > 0 && members(s, r) < tg_seam_flat_bulk_cells && s->seed_end[r] > first)
			search(s->f, s->d, s->seeds + first, s->seed_end[r] - first, s->queue + s->room[r]);
	}
	return TG_OK;
}

/*
 * The bulk flats' distances lowered by a forward and a backward raster scan
 * (Vincent's hybrid, as the one-grid flats do) on the threads (tg_wavefront:
 * the one-thread scan's result), so that the walk after them has little
 * left.  The flats searched already are at their distances and do not change.
 */
static inline void
lower_from(int32_t *d, uint32_t c, uint32_t from)
{
	if (d[from] != TG_FLAT_FAR && d[from] + 1 < d[c])
		d[c] = d[from] + 1;
}

/* In row y, the first cell at or after column x. */
static uint32_t
row_cell_from(const tg_seam_flats *f, int y, int x)
{
	return first_not_below(f->col, f->row_start[y], f->row_start[y + 1], x);
}

static void
scan_block(void *arg, const tg_wave *w, int b, int chunk)
{
	const search_job *s = arg;
	const tg_seam_flats *f = s->f;
	int32_t    *d = s->d;
	int			r0,
				r1;

	tg_wave_rows(w, chunk, &r0, &r1);
	for (int y = w->backward ? r1 - 1 : r0; w->backward ? y >= r0 : y < r1; y += w->backward ? -1 : 1)
	{
		int			c0,
					c1;
		uint32_t	lo,
					hi;

		tg_wave_cols(w, b, r0, r1, y, &c0, &c1);
		lo = row_cell_from(f, y, c0);
		hi = row_cell_from(f, y, c1);
		if (!w->backward)		/* west, then north-west, north, north-east (in column order from the link) */
			for (uint32_t c = lo; c < hi; c++)
			{
				uint32_t	j = f->up[c];

				if (f->nbr[c] & (1u << 4))
					lower_from(d, c, c - 1);
				for (int k = 5; k <= 7; k++)
					if (f->nbr[c] & (1u << k))
						lower_from(d, c, j++);
			}
		else					/* east, then south-west, south, south-east */
			for (uint32_t c = hi; c-- > lo;)
			{
				uint32_t	j = f->down[c];

				if (f->nbr[c] & 1u)
					lower_from(d, c, c + 1);
				for (int k = 3; k >= 1; k--)
					if (f->nbr[c] & (1u << k))
						lower_from(d, c, j++);
			}
	}
}

/*
 * The first walk of distance p, all its seeds at one distance: the seeds
 * grouped by joined flat, the smaller flats searched on the threads, the
 * bulk ones scanned, then walked level by level together.
 */
static tg_status
first_walk(const tg_ctx *ctx, tg_seam_flats *f, int p, uint32_t *room, uint32_t *seed_end, uint32_t *seeds,
		   size_t nseeds, uint32_t *front, uint32_t *next, tg_error *err)
{
	const size_t nf = f->nflats;
	search_job	s = {f, f->d[p], room, seed_end, next, front};
	bool		bulk = false;
	tg_status	st;

	memset(seed_end, 0, nf * sizeof(uint32_t));
	for (size_t k = 0; k < nseeds; k++)
		seed_end[f->joined[f->flat[seeds[k]]]]++;
	for (size_t r = 1; r < nf; r++)
		seed_end[r] += seed_end[r - 1];
	/* backwards, so that each joined flat's slot count ends where the one before begins */
	for (size_t k = nseeds; k-- > 0;)
	{
		const uint32_t r = f->joined[f->flat[seeds[k]]];

		next[--seed_end[r]] = seeds[k];
	}
	for (size_t r = 0; r + 1 < nf; r++)
		seed_end[r] = seed_end[r + 1];
	if (nf > 0)
		seed_end[nf - 1] = (uint32_t) nseeds;
	for (size_t r = 0; r < nf && !bulk; r++)
		bulk = members(&s, r) >= tg_seam_flat_bulk_cells;
	st = tg_parallel(ctx, (int64_t) ((f->n + SEARCH_TASK_CELLS - 1) / SEARCH_TASK_CELLS), search_task, &s, err);
	if (st == TG_OK && tg_canceled(ctx))
		st = tg_error_set(err, TG_ECANCELED, "flow routing canceled");
	if (st == TG_OK && bulk)
	{
		/* the bulk flats scanned, then walked on from the cells whose neighbours the scans left too far */
		seeds_job	left = {f->d[p], seeds, 0, f->n, f};
		tg_wave		wave;

		tg_wave_plan(ctx, &wave, 0, f->W, 0, f->H);
		st = tg_wavefront(ctx, &wave, scan_block, &s, err);
		wave.backward = true;
		if (st == TG_OK)
			st = tg_wavefront(ctx, &wave, scan_block, &s, err);
		if (st == TG_OK)
			st = tg_parallel(ctx, tg_list_tasks(f->n), seeds_task, &left, err);
		if (st == TG_OK)
			st = walk(ctx, f, p, seeds, left.n, front, next, err);
	}
	return st;
}

static tg_status
walk_on_threads(const tg_ctx *ctx, tg_seam_flats *f, const tg_flat_lowered *lowered, tg_error *err)
{
	const size_t n = f->n,
				nf = f->nflats;
	uint32_t   *seeds = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t)),
			   *front = tg_alloc(ctx, (2 * n + 1) * sizeof(uint32_t)),
			   *next = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t)),
			   *room = NULL,
			   *seed_end = NULL;
	tg_status	st = TG_OK;

	if (seeds == NULL || front == NULL || next == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the walk over %zu cells of flats", n);
	if (st == TG_OK && lowered == NULL)
	{
		search_job	plan = {f, NULL, NULL, NULL, NULL, NULL};

		room = tg_alloc(ctx, (nf + 1) * sizeof(uint32_t));
		seed_end = tg_alloc(ctx, (nf ? nf : 1) * sizeof(uint32_t));
		if (room == NULL || seed_end == NULL)
			st = tg_error_set(err, TG_ENOMEM, "could not plan the walk over %zu flats", nf);
		else
		{
			memset(room, 0, (nf + 1) * sizeof(uint32_t));
			plan.room = room;
			st = tg_parallel(ctx, tg_list_tasks(n), count_task, &plan, err);
			for (size_t r = 0; r < nf; r++)
				room[r + 1] += room[r];
		}
	}
	for (int p = 0; p < 2 && st == TG_OK; p++)
	{
		seeds_job	s = {f->d[p], seeds, 0, n, NULL};
		bool		one_distance = true;

		if (lowered == NULL)
			st = tg_parallel(ctx, tg_list_tasks(n), seeds_task, &s, err);
		else
		{
			memcpy(seeds, lowered->cells[p], lowered->n[p] * sizeof(uint32_t));
			s.n = lowered->n[p];
		}
		for (size_t k = 1; k < s.n && one_distance; k++)
			one_distance = f->d[p][seeds[k]] == f->d[p][seeds[0]];
		if (st != TG_OK)
			break;
		if (lowered == NULL && one_distance)
			st = first_walk(ctx, f, p, room, seed_end, seeds, s.n, front, next, err);
		else
			st = walk(ctx, f, p, seeds, s.n, front, next, err);
	}
	tg_free(ctx, seeds);
	tg_free(ctx, front);
	tg_free(ctx, next);
	tg_free(ctx, room);
	tg_free(ctx, seed_end);
	return st;
}

static tg_status
first_walk_cpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	return walk_on_threads(ctx, (tg_seam_flats *) arg, NULL, err);
}

static tg_status
first_walk_gpu(const tg_ctx *ctx, const void *arg, tg_error *err)
{
	tg_seam_flats *f = (tg_seam_flats *) arg;

	return tg_cuda_seam_flats_walk(ctx, f->n, f->nbr, f->up, f->down, f->d[0], f->d[1], err);
}

/* The first walk (from the link's seeds) where the call's policy sends a step; later ones on the threads. */
tg_status
tg_seam_flats_walk(const tg_ctx *ctx, tg_seam_flats *f, const tg_flat_lowered *lowered, tg_error *err)
{
	if (lowered != NULL)
		return walk_on_threads(ctx, f, lowered, err);
	return tg_run_step(ctx, (int64_t) f->n, first_walk_cpu, first_walk_gpu, f, err);
}

/* ------------------------------------------------------------------------
 * Masks (one server): the joined flats' heights
 * ------------------------------------------------------------------------ */

typedef struct mask_job
{
	const tg_seam_flats *f;
	const uint32_t *root;		/* per flat number: its joined flat */
	int32_t    *height;			/* per joined flat: its greatest distance away */
	int32_t    *mask;
} mask_job;

static tg_status
height_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const mask_job *m = arg;
	size_t		lo,
				hi;

	tg_list_range(m->f->n, task, &lo, &hi);
	/* a run of one joined flat's cells makes its greatest first, then one exchange (the sea spans them all) */
	for (size_t c = lo; c < hi;)
	{
		const uint32_t r = m->root[m->f->flat[c]];
		int32_t		a = 0,
					cur;
		int32_t    *h = &m->height[r];

		for (; c < hi && m->root[m->f->flat[c]] == r; c++)
			a = tg_seam_flats_dist(m->f, 1, c) > a ? tg_seam_flats_dist(m->f, 1, c) : a;
		cur = __atomic_load_n(h, __ATOMIC_RELAXED);
		while (a > cur && !__atomic_compare_exchange_n(h, &cur, a, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
	}
	return TG_OK;
}

static tg_status
mask_task(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	const mask_job *m = arg;
	size_t		lo,
				hi;

	tg_list_range(m->f->n, task, &lo, &hi);
	for (size_t c = lo; c < hi; c++)
		m->mask[c] = tg_flat_mask_value(tg_seam_flats_dist(m->f, 0, c), tg_seam_flats_dist(m->f, 1, c),
										m->height[m->root[m->f->flat[c]]]);
	return TG_OK;
}

tg_status
tg_seam_flats_masks(const tg_ctx *ctx, const tg_seam_flats *f, int32_t *mask, tg_error *err)
{
	const size_t nf = f->nflats;
	int32_t    *height = tg_alloc(ctx, (nf ? nf : 1) * sizeof(int32_t));
	mask_job	m = {f, f->joined, height, mask};
	tg_status	st = TG_OK;

	if (height == NULL)
		st = tg_error_set(err, TG_ENOMEM, "could not allocate %zu flats across seams", nf);
	for (size_t k = 0; st == TG_OK && k < nf; k++)
		height[k] = 0;
	if (st == TG_OK)
		st = tg_parallel(ctx, tg_list_tasks(f->n), height_task, &m, err);
	if (st == TG_OK)
		st = tg_parallel(ctx, tg_list_tasks(f->n), mask_task, &m, err);
	tg_free(ctx, height);
	return st;
}

/* The distances and links, once the masks are known; the cells' places (rows, columns) stay. */
void
tg_seam_flats_forget_walk(tg_seam_flats *f)
{
	let_go(f, f->up);
	let_go(f, f->down);
	let_go(f, f->nbr);
	let_go(f, f->d[0]);
	let_go(f, f->d[1]);
	let_go(f, f->seed);
	let_go(f, f->flat);
	let_go(f, f->joined);
	f->joined = NULL;
	f->up = f->down = NULL;
	f->nbr = NULL;
	f->d[0] = f->d[1] = NULL;
	f->seed = NULL;
	f->flat = NULL;
}

void
tg_seam_flats_forget_columns(tg_seam_flats *f)
{
	let_go(f, f->col);
	f->col = NULL;
}

void
tg_seam_flats_free(tg_seam_flats *f)
{
	tg_seam_flats_forget_walk(f);
	let_go(f, f->row);
	let_go(f, f->col);
	let_go(f, f->row_start);
	let_go(f, f->seams);
	f->row = NULL;
	f->col = NULL;
	f->row_start = NULL;
	f->seams = NULL;
	f->n = f->cap = f->nseams = f->seam_cap = 0;
}

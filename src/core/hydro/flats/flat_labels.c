/*
 * flat_labels.c — the flats of a grid, found and listed on the call's
 * threads: each flat cell's seeds (next to a draining cell of equal
 * elevation, next to a higher one), a union-find in blocks of rows that
 * links the larger root under the smaller (a cell's parent always comes
 * before it), joined across the blocks' edges, then the flats numbered in
 * the order of their first cells and their cells listed flat by flat.
 */
#include "hydro/flats/flat_job.h"

#include <string.h>

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

/*
 * Rows of the union-find's blocks: about LABEL_BLOCK_CELLS cells, so that a
 * strip of a few hundred rows still gives every thread blocks (their number
 * changes no result).
 */
static int
label_block_rows(int W)
{
	const int64_t rows = LABEL_BLOCK_CELLS / (W > 0 ? W : 1);

	return rows < 4 ? 4 : rows > 256 ? 256 : (int) rows;
}

/* Union of the flat cells of a block with their later neighbours in the block. */
static tg_status
label_block(const tg_ctx *ctx, void *arg, int64_t task, tg_error *err)
{
	flat_job   *j = arg;
	const int	rows = label_block_rows(j->W),
				y0 = (int) (task * rows),
				y1 = y0 + rows < j->H ? y0 + rows : j->H;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < j->W; x++)
		{
			const size_t i = (size_t) y * j->W + x;

			if (!j->flat[i])
				continue;
			for (int k = 0; k < 4; k++)		/* east, south-east, south, south-west */
			{
				const int64_t ni = tg_nbr_cell(j->W, j->H, x, y, k);

				if (ni >= 0 && ni < (int64_t) y1 * j->W && same_flat(j, i, ni))
					unite(j->parent, (int32_t) i, (int32_t) ni);
			}
		}
	return TG_OK;
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
	if (st == TG_OK && !j->numbers_only)
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
	if (st == TG_OK && !j->numbers_only && nentries > 0)
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
	if (st == TG_OK && !j->numbers_only)
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

/* What a flat_job allocated (z, flat and mask are its caller's). */
void
tg_flat_job_free(const tg_ctx *ctx, flat_job *j)
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
tg_status
tg_flat_label(const tg_ctx *ctx, flat_job *j, int64_t *nflats, tg_error *err)
{
	const int	rows = label_block_rows(j->W);
	tg_status	st = tg_parallel_rows(ctx, j->W, j->H, start_rows, j, err);

	if (st == TG_OK)
		st = tg_parallel(ctx, (j->H + rows - 1) / rows, label_block, j, err);
	/* join across the blocks' edges: each block's last row with the next one's first */
	for (int y = rows - 1; st == TG_OK && y + 1 < j->H; y += rows)
		for (int x = 0; x < j->W; x++)
		{
			const size_t i = (size_t) y * j->W + x;

			if (!j->flat[i])
				continue;
			for (int k = 1; k < 4; k++)		/* south-east, south, south-west */
			{
				const int64_t ni = tg_nbr_cell(j->W, j->H, x, y, k);

				if (same_flat(j, i, ni))
					unite(j->parent, (int32_t) i, (int32_t) ni);
			}
		}
	return st == TG_OK ? list_flats(ctx, j, nflats, err) : st;
}

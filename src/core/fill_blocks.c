/*
 * fill_blocks.c — depression filling (epsilon 0) of a grid too large for
 * memory, band by band, after Barnes (2016), "Parallel priority-flood
 * depression filling for trillion cell digital elevation models".
 *
 * The filled surface without epsilon is W(c) = the lowest possible highest
 * elevation on a path from c to an outlet (an edge cell or one next to
 * nodata).  A band of rows is flooded on its own from two kinds of seeds:
 * its true outlets (label 0) and the cells of its top and bottom rows, each
 * its own label.  The flood gives every cell a local level lf (the same
 * minimax, to the nearest seed) and the label of that seed, and where two
 * labels meet, the height max(lf(a), lf(b)) at which water crosses between
 * them.  Rows facing each other across a band boundary join their labels at
 * max(z, z').  Over that graph of labels, the level of each label is its
 * minimax distance to label 0 (a Dijkstra with max for +); then
 *     W(c) = max(lf(c), level(label(c)))
 * which a second flood of each band (identical, as the flood is
 * deterministic) turns into the output.  Memory: one band's cells, plus two
 * labels per column per band and the edges between labels.
 *
 * Use: begin; scan every band top to bottom; solve; finish every band (any
 * order); end.  A band is given with the row above and below it where they
 * exist, so that cells next to nodata across the boundary are outlets, as in
 * the in-memory fill.
 */
#include "tg_backends.h"
#include "tg_heap.h"
#include "tg_hydro.h"

#include <math.h>
#include <string.h>

#define CANCEL_EVERY 65536

/* label -> label edge heights, open addressing on the ordered pair */
typedef struct edge_slot
{
	uint64_t	key;			/* (low label << 32 | high label) + 1; 0 = empty */
	double		height;
} edge_slot;

struct tg_fill_blocks
{
	int			width;
	int			height;
	int			nbands;
	int			band_cap;
	int		   *band_row0;
	int		   *band_rows;
	uint32_t   *prev_bottom;	/* labels of the last scanned band's bottom row */
	edge_slot  *edges;
	size_t		nedges;
	size_t		edge_cap;		/* a power of two */
	double	   *level;			/* after solve: level of every label */
	size_t		nlabels;
	int			next_row;		/* the row the next scanned band must start at */
	bool		solved;
};

/* One band's working arrays. */
typedef struct band_work
{
	double	   *lf;
	uint32_t   *label;
	uint8_t    *closed;
	uint32_t   *pit;
	tg_heap		heap;
} band_work;

/* ------------------------------------------------------------------------ */

static tg_status
edge_add(const tg_ctx *ctx, tg_fill_blocks *fb, uint32_t a, uint32_t b, double h, tg_error *err)
{
	uint64_t	key;
	size_t		j;

	if (a == b)
		return TG_OK;
	key = ((uint64_t) (a < b ? a : b) << 32 | (a < b ? b : a)) + 1;
	if (2 * (fb->nedges + 1) > fb->edge_cap)
	{
		size_t		cap = fb->edge_cap ? 2 * fb->edge_cap : 1024;
		edge_slot  *slots = tg_alloc(ctx, cap * sizeof(edge_slot));

		if (slots == NULL)
			return tg_error_set(err, TG_ENOMEM, "could not grow the fill's label graph to %zu edges", cap / 2);
		memset(slots, 0, cap * sizeof(edge_slot));
		for (size_t i = 0; i < fb->edge_cap; i++)
			if (fb->edges[i].key)
			{
				for (j = (fb->edges[i].key * 0x9E3779B97F4A7C15ull) & (cap - 1); slots[j].key;
					 j = (j + 1) & (cap - 1))
					;
				slots[j] = fb->edges[i];
			}
		tg_free(ctx, fb->edges);
		fb->edges = slots;
		fb->edge_cap = cap;
	}
	for (j = (key * 0x9E3779B97F4A7C15ull) & (fb->edge_cap - 1);; j = (j + 1) & (fb->edge_cap - 1))
	{
		if (fb->edges[j].key == key)
		{
			if (h < fb->edges[j].height)
				fb->edges[j].height = h;
			return TG_OK;
		}
		if (fb->edges[j].key == 0)
		{
			fb->edges[j].key = key;
			fb->edges[j].height = h;
			fb->nedges++;
			return TG_OK;
		}
	}
}

static void
band_free(const tg_ctx *ctx, band_work *b)
{
	tg_free(ctx, b->lf);
	tg_free(ctx, b->label);
	tg_free(ctx, b->closed);
	tg_free(ctx, b->pit);
	tg_free(ctx, b->heap.a);
	memset(b, 0, sizeof *b);
}

static int
band_index(const tg_fill_blocks *fb, int row0, int nrows)
{
	for (int k = 0; k < fb->nbands; k++)
		if (fb->band_row0[k] == row0 && fb->band_rows[k] == nrows)
			return k;
	return -1;
}

/*
 * Flood band `k` (rows row0 .. row0 + nrows - 1; z starts at the row above
 * when there is one).  With fb != NULL and record set, the label edges are
 * recorded.  Fills b->lf and b->label for the band's cells.
 */
static tg_status
band_flood(const tg_ctx *ctx, tg_fill_blocks *fb, int k, int row0, int nrows, const double *z,
		   bool record, band_work *b, tg_error *err)
{
	const int	W = fb->width,
				H = fb->height;
	const size_t n = (size_t) W * nrows;
	const double *zb = z + (row0 > 0 ? W : 0);	/* the band's first row */
	const uint32_t top_base = 1 + (uint32_t) (2 * k) * (uint32_t) W;
	const uint32_t bottom_base = top_base + (uint32_t) W;
	size_t		pit_head = 0,
				pit_tail = 0,
				processed = 0;
	tg_status	st = TG_OK;

	memset(b, 0, sizeof *b);
	b->lf = tg_alloc(ctx, (n ? n : 1) * sizeof(double));
	b->label = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	b->closed = tg_alloc(ctx, n ? n : 1);
	b->pit = tg_alloc(ctx, (n ? n : 1) * sizeof(uint32_t));
	b->heap.a = tg_alloc(ctx, (n ? n : 1) * sizeof(tg_heap_item));
	if (!b->lf || !b->label || !b->closed || !b->pit || !b->heap.a)
		return tg_error_set(err, TG_ENOMEM, "could not allocate a fill band of %d x %d cells", W, nrows);
	memset(b->closed, 0, n);

	/* seeds: true outlets (label 0), then the band's top and bottom rows */
	for (int y = 0; y < nrows; y++)
	{
		const int	gy = row0 + y;
		const bool	top = gy > 0 && y == 0,
					bottom = gy < H - 1 && y == nrows - 1;

		for (int x = 0; x < W; x++)
		{
			const size_t i = (size_t) y * W + x;
			bool		outlet = x == 0 || x == W - 1 || gy == 0 || gy == H - 1;

			b->lf[i] = zb[i];
			b->label[i] = 0;
			if (isnan(zb[i]))
				continue;
			for (int d = 0; d < 8 && !outlet; d++)
				outlet = isnan(zb[(ptrdiff_t) i + (ptrdiff_t) tg_nbr_dy(d) * W + tg_nbr_dx(d)]);
			if (!outlet && !top && !bottom)
				continue;
			b->label[i] = outlet ? 0 : top ? top_base + (uint32_t) x : bottom_base + (uint32_t) x;
			b->closed[i] = 1;
			tg_heap_push(&b->heap, zb[i], (uint32_t) i);
		}
	}

	/* rows facing the band above: join their labels at the higher cell */
	if (record && row0 > 0 && k > 0)
	{
		const double *above = z;

		for (int x = 0; x < W && st == TG_OK; x++)
		{
			if (isnan(zb[x]))
				continue;
			for (int dx = -1; dx <= 1 && st == TG_OK; dx++)
			{
				const int	ax = x + dx;

				if (ax < 0 || ax >= W || isnan(above[ax]))
					continue;
				st = edge_add(ctx, fb, b->label[x], fb->prev_bottom[ax],
							  fmax(zb[x], above[ax]), err);
			}
		}
	}

	while (st == TG_OK && (pit_head < pit_tail || b->heap.len > 0))
	{
		const uint32_t c = pit_head < pit_tail ? b->pit[pit_head++] : tg_heap_pop(&b->heap).i;
		const int	cx = (int) (c % W),
					cy = (int) (c / W);
		const double level = b->lf[c];

		if (++processed % CANCEL_EVERY == 0 && tg_canceled(ctx))
			return tg_error_set(err, TG_ECANCELED, "fill canceled");
		for (int d = 0; d < 8; d++)
		{
			const int	nx = cx + tg_nbr_dx(d),
						ny = cy + tg_nbr_dy(d);
			size_t		ni;

			if (nx < 0 || ny < 0 || nx >= W || ny >= nrows)
				continue;
			ni = (size_t) ny * W + nx;
			if (isnan(zb[ni]))
				continue;
			if (b->closed[ni])
			{
				if (record && b->label[ni] != b->label[c])
					st = edge_add(ctx, fb, b->label[c], b->label[ni], fmax(level, b->lf[ni]), err);
				continue;
			}
			b->closed[ni] = 1;
			b->label[ni] = b->label[c];
			if (zb[ni] <= level)
			{
				b->lf[ni] = level;
				b->pit[pit_tail++] = (uint32_t) ni;
			}
			else
			{
				b->lf[ni] = zb[ni];
				tg_heap_push(&b->heap, zb[ni], (uint32_t) ni);
			}
		}
	}
	return st;
}

/* ------------------------------------------------------------------------ */

size_t
tg_fill_blocks_bytes_per_cell(void)
{
	/* input doubles, local level, label, closed flag, pit queue, heap item */
	return sizeof(double) * 2 + sizeof(uint32_t) * 2 + 1 + 16;
}

tg_status
tg_fill_blocks_begin(const tg_ctx *ctx, int width, int height, tg_fill_blocks **out, tg_error *err)
{
	tg_fill_blocks *fb = tg_alloc(ctx, sizeof *fb);

	*out = NULL;
	if (fb == NULL)
		return tg_error_set(err, TG_ENOMEM, "could not allocate the blocked fill");
	memset(fb, 0, sizeof *fb);
	fb->width = width;
	fb->height = height;
	fb->prev_bottom = tg_alloc(ctx, (width ? width : 1) * sizeof(uint32_t));
	if (fb->prev_bottom == NULL)
	{
		tg_free(ctx, fb);
		return tg_error_set(err, TG_ENOMEM, "could not allocate the blocked fill");
	}
	*out = fb;
	return TG_OK;
}

tg_status
tg_fill_blocks_scan(const tg_ctx *ctx, tg_fill_blocks *fb, int row0, int nrows, const double *z,
					tg_error *err)
{
	const int	W = fb->width;
	band_work	b;
	tg_status	st;

	if (fb->solved || row0 != fb->next_row || nrows < 1 || row0 + nrows > fb->height)
		return tg_error_set(err, TG_EINVAL, "blocked fill: band at row %d of %d rows out of order",
							row0, nrows);
	if ((uint64_t) (2 * (fb->nbands + 1)) * (uint64_t) W + 1 > UINT32_MAX)
		return tg_error_set(err, TG_ELIMIT, "blocked fill: too many bands of %d columns", W);
	if (fb->nbands == fb->band_cap)
	{
		int			cap = fb->band_cap ? 2 * fb->band_cap : 64;
		int		   *r0 = tg_alloc(ctx, cap * sizeof(int)),
				   *rs = tg_alloc(ctx, cap * sizeof(int));

		if (r0 == NULL || rs == NULL)
		{
			tg_free(ctx, r0);
			tg_free(ctx, rs);
			return tg_error_set(err, TG_ENOMEM, "could not allocate the blocked fill's bands");
		}
		if (fb->nbands)
		{
			memcpy(r0, fb->band_row0, fb->nbands * sizeof(int));
			memcpy(rs, fb->band_rows, fb->nbands * sizeof(int));
		}
		tg_free(ctx, fb->band_row0);
		tg_free(ctx, fb->band_rows);
		fb->band_row0 = r0;
		fb->band_rows = rs;
		fb->band_cap = cap;
	}
	st = band_flood(ctx, fb, fb->nbands, row0, nrows, z, true, &b, err);
	if (st == TG_OK)
	{
		memcpy(fb->prev_bottom, b.label + (size_t) (nrows - 1) * W, W * sizeof(uint32_t));
		fb->band_row0[fb->nbands] = row0;
		fb->band_rows[fb->nbands] = nrows;
		fb->nbands++;
		fb->next_row = row0 + nrows;
	}
	band_free(ctx, &b);
	return st;
}

/* Levels of all labels: minimax distance to label 0 over the edges. */
tg_status
tg_fill_blocks_solve(const tg_ctx *ctx, tg_fill_blocks *fb, tg_error *err)
{
	const size_t L = 1 + (size_t) 2 * fb->nbands * fb->width;
	size_t	   *start = NULL;
	uint32_t   *to = NULL;
	double	   *height = NULL;
	tg_heap		q = {NULL, 0};
	tg_status	st = TG_OK;

	if (fb->next_row != fb->height)
		return tg_error_set(err, TG_EINVAL, "blocked fill: bands cover %d of %d rows",
							fb->next_row, fb->height);
	fb->level = tg_alloc(ctx, L * sizeof(double));
	start = tg_alloc(ctx, (L + 1) * sizeof(size_t));
	to = tg_alloc(ctx, (2 * fb->nedges + 1) * sizeof(uint32_t));
	height = tg_alloc(ctx, (2 * fb->nedges + 1) * sizeof(double));
	q.a = tg_alloc(ctx, (2 * fb->nedges + 1) * sizeof(tg_heap_item));
	if (!fb->level || !start || !to || !height || !q.a)
	{
		st = tg_error_set(err, TG_ENOMEM, "could not allocate the label graph (%zu labels, %zu edges)",
						  L, fb->nedges);
		goto done;
	}
	/* adjacency lists from the edge table */
	memset(start, 0, (L + 1) * sizeof(size_t));
	for (size_t i = 0; i < fb->edge_cap; i++)
		if (fb->edges[i].key)
		{
			uint64_t	key = fb->edges[i].key - 1;

			start[(key >> 32) + 1]++;
			start[(uint32_t) key + 1]++;
		}
	for (size_t l = 0; l < L; l++)
		start[l + 1] += start[l];
	{
		size_t	   *fillpos = (size_t *) tg_alloc(ctx, (L ? L : 1) * sizeof(size_t));

		if (fillpos == NULL)
		{
			st = tg_error_set(err, TG_ENOMEM, "could not allocate the label graph");
			goto done;
		}
		memcpy(fillpos, start, L * sizeof(size_t));
		for (size_t i = 0; i < fb->edge_cap; i++)
			if (fb->edges[i].key)
			{
				uint64_t	key = fb->edges[i].key - 1;
				uint32_t	a = (uint32_t) (key >> 32),
							b = (uint32_t) key;

				to[fillpos[a]] = b;
				height[fillpos[a]++] = fb->edges[i].height;
				to[fillpos[b]] = a;
				height[fillpos[b]++] = fb->edges[i].height;
			}
		tg_free(ctx, fillpos);
	}

	/* Dijkstra with max: level(v) = min over edges (u, v) of max(level(u), h) */
	for (size_t l = 0; l < L; l++)
		fb->level[l] = INFINITY;
	fb->level[0] = -INFINITY;
	tg_heap_push(&q, -INFINITY, 0);
	while (q.len > 0)
	{
		const tg_heap_item top = tg_heap_pop(&q);
		const double lu = top.w;
		const uint32_t u = top.i;

		if (lu > fb->level[u])
			continue;			/* a stale entry */
		for (size_t e = start[u]; e < start[u + 1]; e++)
		{
			const double cand = fmax(lu, height[e]);

			if (cand < fb->level[to[e]])
			{
				fb->level[to[e]] = cand;
				tg_heap_push(&q, cand, to[e]);
			}
		}
	}
	fb->nlabels = L;
	fb->solved = true;

done:
	tg_free(ctx, start);
	tg_free(ctx, to);
	tg_free(ctx, height);
	tg_free(ctx, q.a);
	return st;
}

tg_status
tg_fill_blocks_finish(const tg_ctx *ctx, tg_fill_blocks *fb, int row0, int nrows, const double *z,
					  double *w, tg_error *err)
{
	const size_t n = (size_t) fb->width * nrows;
	const double *zb = z + (row0 > 0 ? fb->width : 0);
	const int	k = band_index(fb, row0, nrows);
	band_work	b;
	tg_status	st;

	if (!fb->solved || k < 0)
		return tg_error_set(err, TG_EINVAL, "blocked fill: band at row %d of %d rows was not scanned",
							row0, nrows);
	st = band_flood(ctx, fb, k, row0, nrows, z, false, &b, err);
	if (st == TG_OK)
		for (size_t i = 0; i < n; i++)
			w[i] = isnan(zb[i]) ? NAN : fmax(b.lf[i], fb->level[b.label[i]]);
	band_free(ctx, &b);
	return st;
}

void
tg_fill_blocks_end(const tg_ctx *ctx, tg_fill_blocks *fb)
{
	if (fb == NULL)
		return;
	tg_free(ctx, fb->band_row0);
	tg_free(ctx, fb->band_rows);
	tg_free(ctx, fb->prev_bottom);
	tg_free(ctx, fb->edges);
	tg_free(ctx, fb->level);
	tg_free(ctx, fb);
}
